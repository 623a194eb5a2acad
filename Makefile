# The two set-up commands of the README: `make run` and `make test`.
CARGO ?= cargo

.PHONY: run test lint unit build

## Start the admission server with the built-in rules and a generated dev certificate.
run:
	$(CARGO) run --release -- serve

## Everything CI checks: formatting, clippy, and the whole test suite.
test: lint unit

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

unit:
	$(CARGO) test --all-targets --locked

build:
	$(CARGO) build --release --locked
