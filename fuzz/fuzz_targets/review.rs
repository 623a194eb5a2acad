//! The AdmissionReview reader and every rule behind it, on arbitrary bodies (seeded with the
//! recorded reviews): an answer or a 400/500 reason, never a panic or a hang. Both endpoints, with
//! the defaults and with every rule switched on.
//!
//! And the on-demand reader against serde_json reading the whole body (the reference): where the
//! reference answers, the answer is the same; where only the on-demand reader answers (it checks
//! skipped values for structure alone), the body with every skipped value blanked (`{}`, `[]` or
//! `null`) gets the same answer from the reference; a refused body gets the reference's reason.
#![no_main]

use libfuzzer_sys::fuzz_target;
use placement_guard::admission::{
    blank_skipped, review, review_reference, skipped_values, Endpoint,
};
use placement_guard::rules::RuleSet;

fuzz_target!(|body: &[u8]| {
    let mut all = RuleSet::default();
    all.spec.workload_spread.enabled = true;
    for rules in [RuleSet::default(), all] {
        for endpoint in [Endpoint::Validate, Endpoint::Mutate] {
            let fast = review(body, endpoint, &rules);
            if let Ok(r) = &fast {
                // The answer is always a JSON AdmissionReview.
                let v: serde_json::Value =
                    serde_json::from_slice(&r.body).expect("answer is JSON");
                assert_eq!(v["kind"], "AdmissionReview");
                let _ = placement_guard::admission::patched_object(body, r);
            }
            match (fast, review_reference(body, endpoint, &rules)) {
                (Ok(f), Ok(r)) => assert_eq!(f.body, r.body),
                (Err(f), Err(r)) => assert_eq!(f, r),
                (Err(f), Ok(_)) => panic!("on-demand refused what the reference answers: {f}"),
                (Ok(f), Err(_)) => {
                    let skipped = skipped_values(body, endpoint, &rules)
                        .expect("the on-demand reader answered, so it read the body");
                    let r = review_reference(&blank_skipped(body, &skipped), endpoint, &rules)
                        .expect("with skipped values blanked, the reference answers");
                    assert_eq!(f.body, r.body);
                }
            }
        }
    }
});
