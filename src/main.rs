// Under load glibc's allocator took about a tenth of the server's CPU (many small, short-lived
// allocations on each worker thread). A/B at 64 connections: mimalloc ~13% more requests/s, at
// the price of a larger resident set (about 35 MiB instead of 22); README "Performance".
#[global_allocator]
static GLOBAL: placement_guard::alloc::MiMalloc = placement_guard::alloc::MiMalloc;

fn main() -> std::process::ExitCode {
    placement_guard::cli::run()
}
