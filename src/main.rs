fn main() -> std::process::ExitCode {
    placement_guard::cli::run()
}
