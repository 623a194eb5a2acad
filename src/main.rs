// Under load glibc's allocator took about a tenth of the server's CPU (many small, short-lived
// allocations on each worker thread); see README "Performance" for the A/B figures.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    placement_guard::cli::run()
}
