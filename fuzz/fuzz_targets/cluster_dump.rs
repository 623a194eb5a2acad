//! The cluster-dump reader of `explain`, and the evaluation of its first pod against it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use placement_guard::ci::explain;
use placement_guard::k8s::manifest;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(objects) = manifest::parse(text) else {
        return;
    };
    let Ok(cluster) = explain::cluster_from(&objects) else {
        return;
    };
    if let Ok((pod, ns)) = explain::pod_from(&objects) {
        let results = placement_guard::core::filter::evaluate(&cluster, &pod, &ns);
        let _ = explain::text(&results);
        let _ = placement_guard::core::filter::summary(&results);
    }
});
