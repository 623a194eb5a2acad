//! The AdmissionReview reader and every rule behind it, on arbitrary bodies (seeded with the
//! recorded reviews): an answer or a 400/500 reason, never a panic or a hang. Both endpoints, with
//! the defaults and with every rule switched on.
#![no_main]

use libfuzzer_sys::fuzz_target;
use placement_guard::admission::{review, Endpoint};
use placement_guard::rules::RuleSet;

fuzz_target!(|body: &[u8]| {
    let mut all = RuleSet::default();
    all.spec.workload_spread.enabled = true;
    for rules in [RuleSet::default(), all] {
        for endpoint in [Endpoint::Validate, Endpoint::Mutate] {
            if let Ok(r) = review(body, endpoint, &rules) {
                // The answer is always a JSON AdmissionReview.
                let v: serde_json::Value =
                    serde_json::from_slice(&r.body).expect("answer is JSON");
                assert_eq!(v["kind"], "AdmissionReview");
                let _ = placement_guard::admission::patched_object(body, &r);
            }
        }
    }
});
