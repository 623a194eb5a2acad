//! The manifest reader (YAML/JSON with positions) and `check` over it, on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use placement_guard::ci::check::Checker;
use placement_guard::ci::report;
use placement_guard::rules::RuleSet;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = placement_guard::cli::inputs::decode(bytes.to_vec()) else {
        return;
    };
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("fuzz.yaml", &text);
    let r = c.finish();
    let _ = report::text(&r, false);
    let _ = report::sarif(&r, Some("/src"));
});
