//! The rule-file loader: a rule set or an error with file:line:col, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use placement_guard::rules::RuleSet;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(text) = std::str::from_utf8(bytes) {
        if let Err(e) = RuleSet::from_yaml("fuzz.yaml", text) {
            assert!(e.line >= 1 && e.column >= 1, "{e}");
        }
    }
});
