//! The cluster-dump reader of `explain` (the JSON splitter and the streamed YAML), and the
//! evaluation of a pod of the same input against what it read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use placement_guard::ci::explain;
use placement_guard::k8s::manifest;

fuzz_target!(|bytes: &[u8]| {
    let Ok(cluster) = explain::cluster_from(bytes) else {
        return;
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(objects) = manifest::parse(text) else {
        return;
    };
    if let Ok((pod, ns)) = explain::pod_from(&objects) {
        let results = placement_guard::core::filter::evaluate(&cluster, &pod, &ns);
        let _ = explain::text(&results);
        let _ = placement_guard::core::filter::summary(&results);
    }
});
