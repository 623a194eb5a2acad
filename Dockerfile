# Multi-stage build: a release binary built against Debian's OpenSSL, run as non-root in a slim image.
FROM rust:1.89-slim-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends pkg-config libssl-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
RUN cargo build --release --locked --bin placement-guard

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libssl3 ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/placement-guard /usr/local/bin/placement-guard
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/placement-guard"]
CMD ["serve"]
