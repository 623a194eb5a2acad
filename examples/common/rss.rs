//! Resident memory from /proc, for the examples that report what a structure costs.

/// This process's resident set size (VmRSS), in KiB; 0 where /proc does not say.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}
