//! The cluster-dump reader of `explain` (the JSON splitter and the YAML read in pieces on two
//! threads), the pieces against one parse of the whole text, and the evaluation of a pod of
//! the same input against what it read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use placement_guard::ci::explain;
use placement_guard::core::snapshot;
use placement_guard::k8s::manifest;

fuzz_target!(|bytes: &[u8]| {
    let cluster = explain::cluster_from(bytes);
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if !text.trim_start().starts_with(['{', '[']) {
        // Cut at every entry, and as the reader cuts: the same objects, or an error in both.
        let whole = snapshot::yaml_objects_whole(text);
        for piece in [1, 1 << 15] {
            let pieces = snapshot::yaml_objects_pieces(bytes, piece);
            assert_eq!(
                format!("{:?}", pieces.as_ref().ok()),
                format!("{:?}", whole.as_ref().ok()),
                "{pieces:?} / {whole:?}"
            );
        }
    }
    let Ok((cluster, _notes)) = cluster else {
        return;
    };
    let Ok(objects) = manifest::parse(text) else {
        return;
    };
    if let Ok((pod, ns)) = explain::pod_from(&objects, None, "default") {
        let results = placement_guard::core::filter::evaluate(&cluster, &pod, &ns);
        let _ = explain::text(&results);
        let _ = placement_guard::core::filter::summary(&results);
    }
});
