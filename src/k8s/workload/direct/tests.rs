use super::*;
use crate::k8s::workload::{PodObject, TemplateSeed, TemplateView, WorkloadSpec};
use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodAffinity,
    PodAffinityTerm, PodAntiAffinity, PodSchedulingGate, PreferredSchedulingTerm, Toleration,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde::de::{DeserializeSeed, Visitor};

/// Field names of the views, as read here (tests compare them with the derived ones).
const OBJECT_FIELDS: &[&str] = &["kind", "metadata", "spec"];
const POD_TEMPLATE_FIELDS: &[&str] = &["kind", "metadata", "template"];
const WORKLOAD_SPEC_FIELDS: &[&str] = &["selector", "manualSelector", "suspend", "template"];
const TEMPLATE_FIELDS: &[&str] = &["metadata", "spec"];
const CRON_JOB_SPEC_FIELDS: &[&str] = &["jobTemplate"];
const JOB_TEMPLATE_FIELDS: &[&str] = &["metadata", "spec"];
const META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "ownerReferences",
];
const POD_SPEC_FIELDS: &[&str] = &[
    "nodeName",
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulingGates",
    "topologySpreadConstraints",
    "containers",
    "initContainers",
    "overhead",
    "resources",
    "hostNetwork",
    "runtimeClassName",
];
#[test]
fn pod_spec_fields_are_numbered_in_order() {
    for (i, name) in POD_SPEC_FIELDS.iter().enumerate() {
        assert_eq!(pod_spec_field(name), Some(i), "{name}");
    }
    assert_eq!(pod_spec_field("volumes"), None);
}

const CONTAINER_FIELDS: &[&str] = &["name", "resources", "ports", "restartPolicy"];
const TOLERATION_FIELDS: &[&str] = &["effect", "key", "operator", "tolerationSeconds", "value"];
const GATE_FIELDS: &[&str] = &["name"];

/// The field names a derived `Deserialize` asks for.
fn derived_fields<'de, T: Deserialize<'de>>() -> Vec<&'static str> {
    struct Fields(Vec<&'static str>);
    impl<'de> serde::Deserializer<'de> for &mut Fields {
        type Error = serde::de::value::Error;
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields.to_vec();
            Err(serde::de::Error::custom("fields taken"))
        }
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("not a struct"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut f = Fields(Vec::new());
    let _ = T::deserialize(&mut f);
    f.0
}

/// A view given a field the hand reader does not know fails here, before it is silently left
/// empty on the admission path.
#[test]
fn the_hand_reader_knows_every_field_of_the_derived_views() {
    let sorted = |mut v: Vec<&'static str>| {
        v.sort_unstable();
        v
    };
    let cases: [(&str, Vec<&str>, &[&str]); 8] = [
        ("PodObject", derived_fields::<PodObject>(), OBJECT_FIELDS),
        (
            "PodTemplateObject",
            derived_fields::<super::super::PodTemplateObject>(),
            POD_TEMPLATE_FIELDS,
        ),
        (
            "WorkloadSpec",
            derived_fields::<WorkloadSpec>(),
            WORKLOAD_SPEC_FIELDS,
        ),
        (
            "TemplateView",
            derived_fields::<TemplateView>(),
            TEMPLATE_FIELDS,
        ),
        (
            "CronJobSpec",
            derived_fields::<super::super::CronJobSpec>(),
            CRON_JOB_SPEC_FIELDS,
        ),
        (
            "JobTemplate",
            derived_fields::<super::super::JobTemplate>(),
            JOB_TEMPLATE_FIELDS,
        ),
        ("ObjectMeta", derived_fields::<ObjectMeta>(), META_FIELDS),
        ("PodSpec", derived_fields::<PodSpec>(), POD_SPEC_FIELDS),
    ];
    for (name, derived, hand) in cases {
        assert_eq!(sorted(derived), sorted(hand.to_vec()), "{name}");
    }
    assert_eq!(
        sorted(derived_fields::<Container>()),
        sorted(CONTAINER_FIELDS.to_vec())
    );
    // k8s-openapi's types read by hand: an upgrade that adds a field fails here.
    assert_eq!(
        sorted(derived_fields::<Toleration>()),
        sorted(TOLERATION_FIELDS.to_vec())
    );
    assert_eq!(
        sorted(derived_fields::<PodSchedulingGate>()),
        sorted(GATE_FIELDS.to_vec())
    );
    let terms = [
        "preferredDuringSchedulingIgnoredDuringExecution",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ];
    let requirement = ["key", "operator", "values"];
    let api: [(&str, Vec<&str>, &[&str]); 13] = [
        (
            "Affinity",
            derived_fields::<Affinity>(),
            &["nodeAffinity", "podAffinity", "podAntiAffinity"],
        ),
        ("NodeAffinity", derived_fields::<NodeAffinity>(), &terms),
        (
            "NodeSelector",
            derived_fields::<NodeSelector>(),
            &["nodeSelectorTerms"],
        ),
        (
            "PreferredSchedulingTerm",
            derived_fields::<PreferredSchedulingTerm>(),
            &["preference", "weight"],
        ),
        (
            "NodeSelectorTerm",
            derived_fields::<NodeSelectorTerm>(),
            &["matchExpressions", "matchFields"],
        ),
        (
            "NodeSelectorRequirement",
            derived_fields::<NodeSelectorRequirement>(),
            &requirement,
        ),
        (
            "LabelSelectorRequirement",
            derived_fields::<LabelSelectorRequirement>(),
            &requirement,
        ),
        ("PodAffinity", derived_fields::<PodAffinity>(), &terms),
        (
            "PodAntiAffinity",
            derived_fields::<PodAntiAffinity>(),
            &terms,
        ),
        (
            "WeightedPodAffinityTerm",
            derived_fields::<WeightedPodAffinityTerm>(),
            &["podAffinityTerm", "weight"],
        ),
        (
            "PodAffinityTerm",
            derived_fields::<PodAffinityTerm>(),
            &[
                "labelSelector",
                "matchLabelKeys",
                "mismatchLabelKeys",
                "namespaceSelector",
                "namespaces",
                "topologyKey",
            ],
        ),
        (
            "LabelSelector",
            derived_fields::<LabelSelector>(),
            &["matchExpressions", "matchLabels"],
        ),
        (
            "TopologySpreadConstraint",
            derived_fields::<TopologySpreadConstraint>(),
            &[
                "labelSelector",
                "matchLabelKeys",
                "maxSkew",
                "minDomains",
                "nodeAffinityPolicy",
                "nodeTaintsPolicy",
                "topologyKey",
                "whenUnsatisfiable",
            ],
        ),
    ];
    for (name, derived, hand) in api {
        assert_eq!(sorted(derived), sorted(hand.to_vec()), "{name}");
    }
    assert_eq!(
        sorted(derived_fields::<super::super::WorkloadObject>()),
        sorted(OBJECT_FIELDS.to_vec())
    );
    assert_eq!(
        sorted(derived_fields::<super::super::CronJobObject>()),
        sorted(OBJECT_FIELDS.to_vec())
    );
}

/// serde's result where serde reads the object (on the same reader); where the hand reader
/// answers, serde answers the same.
fn agree(text: &str, kind: Kind) -> bool {
    let mut de = Deserializer::new(text);
    let hand = template(kind, Part::WHOLE, &mut de).and_then(|t| de.end().map(|()| t));
    let mut de = Deserializer::new(text);
    let derived = TemplateSeed(kind)
        .deserialize(&mut de)
        .and_then(|t| de.end().map(|()| t));
    match (hand, derived) {
        (Ok(h), Ok(d)) => {
            assert_eq!(h, d, "{text}");
            true
        }
        (Ok(h), Err(e)) => panic!("the hand reader read what serde refuses ({e}): {h:?}\n{text}"),
        (Err(_), _) => false,
    }
}

const KINDS: [Kind; 6] = [
    Kind::Pod,
    Kind::Deployment,
    Kind::CronJob,
    Kind::PodTemplate,
    Kind::ReplicationController,
    Kind::StatefulSet,
];

fn recorded_objects() -> Vec<(Kind, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/admission-reviews");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let k = &v["request"]["kind"];
        let Some(kind) = Kind::from_group_kind(
            k["group"].as_str().unwrap_or(""),
            k["kind"].as_str().unwrap_or(""),
        ) else {
            continue;
        };
        for field in ["object", "oldObject"] {
            if v["request"][field].is_object() {
                out.push((kind, serde_json::to_string(&v["request"][field]).unwrap()));
            }
        }
    }
    out
}

#[test]
fn recorded_objects_read_by_hand_as_serde_reads_them() {
    let objects = recorded_objects();
    for (kind, text) in &objects {
        assert!(
            agree(text, *kind),
            "the hand reader refused a recorded {kind:?}:\n{text}"
        );
    }
    assert!(objects.len() > 20);
    for (kind, text) in &full_field_objects() {
        assert!(agree(text, *kind), "{text}");
    }
    // The Job's manualSelector and suspend are read (both readers could agree in leaving
    // them out).
    let (_, job) = full_field_objects()
        .into_iter()
        .find(|(k, _)| *k == Kind::Job)
        .unwrap();
    let mut de = Deserializer::new(&job);
    let t = template(Kind::Job, Part::WHOLE, &mut de).unwrap();
    assert!(t.manual_selector && t.suspended);
    // And a CronJob's Jobs' suspend and queue label.
    let (_, cron) = full_field_objects()
        .into_iter()
        .find(|(k, _)| *k == Kind::CronJob)
        .unwrap();
    let mut de = Deserializer::new(&cron);
    let t = template(Kind::CronJob, Part::WHOLE, &mut de).unwrap();
    assert!(t.suspended && t.queued_jobs);
}

/// Shapes the hand reader leaves to serde, which reads them as before: a Deployment's selector
/// written as a map of labels, a weight out of `i32`'s range, a repeated field (which k8s-openapi
/// lets overwrite), an escaped key.
#[test]
fn odd_scheduling_shapes_go_to_serde() {
    let pod = |spec: &str| format!(r#"{{"kind":"Pod","spec":{spec}}}"#);
    let cases = [
        (
            Kind::Deployment,
            r#"{"spec":{"selector":{"app":"web"},"template":{}}}"#.to_string(),
        ),
        (
            Kind::Deployment,
            r#"{"spec":{"selector":{"matchLabels":{"app":"web"},"x":1},"template":{}}}"#
                .to_string(),
        ),
        (
            Kind::Pod,
            pod(
                r#"{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":2147483648}]}}}"#,
            ),
        ),
        (
            Kind::Pod,
            pod(
                r#"{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"a","topologyKey":"b"}]}}}"#,
            ),
        ),
        (
            Kind::Pod,
            pod(r#"{"topologySpreadConstraints":[{"maxSkew":1.5}]}"#),
        ),
        (
            Kind::Pod,
            pod(
                r#"{"affinity":{"nodeAffinity":{"required\u0044uringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}}"#,
            ),
        ),
    ];
    for (kind, text) in &cases {
        assert!(!agree(text, *kind), "the hand reader read {text}");
    }
    // What serde makes of the first two: the selector, as a map of labels or without the
    // unknown key.
    for (kind, text) in &cases[..2] {
        let mut de = Deserializer::new(text);
        let t = TemplateSeed(*kind).deserialize(&mut de).unwrap();
        let labels = t.selector.unwrap().match_labels.unwrap();
        assert_eq!(labels.get("app").map(String::as_str), Some("web"), "{text}");
    }
}

/// Every kind's wrapper, with every field the hand reader reads.
fn full_field_objects() -> Vec<(Kind, String)> {
    let spec = r#"{"nodeName":"n","nodeSelector":{"a":"b","a":"c"},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b\u0041"]}],"matchFields":[{"key":"metadata.name","operator":"NotIn","values":null}]},{},{"matchExpressions":null,"x":1}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":5,"preference":{"matchExpressions":[{"key":"k","operator":"Exists"}]}},{"weight":null},{"preference":null,"weight":-3}]},"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"kubernetes.io/hostname","namespaces":["a"],"matchLabelKeys":["pod-template-hash"],"mismatchLabelKeys":["tenant"]},{"topologyKey":null}],"preferredDuringSchedulingIgnoredDuringExecution":null},"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"labelSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["web"]}]},"namespaceSelector":{},"topologyKey":"topology.kubernetes.io/zone"}},{"podAffinityTerm":null}],"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":null,"namespaceSelector":{"matchLabels":null,"matchExpressions":[]},"topologyKey":"topology.kubernetes.io/region","unknown":{"a":[1,2]}}]}},"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule","value":"v","tolerationSeconds":-5,"x":[1]}],"schedulingGates":[{"name":"g"},{},{"name":null}],"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"z","whenUnsatisfiable":"DoNotSchedule"},{"maxSkew":2,"minDomains":3,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"app":"web"}},"matchLabelKeys":["pod-template-hash"],"nodeAffinityPolicy":"Honor","nodeTaintsPolicy":"Ignore"},{"minDomains":null,"labelSelector":null}],"containers":[{"resources":{"requests":{"cpu":"1"}},"ports":[{"hostPort":80}],"restartPolicy":"Always","image":"i"}],"initContainers":null,"overhead":{"cpu":"10m"},"resources":null,"hostNetwork":true,"runtimeClassName":"kata","volumes":[]}"#;
    let meta = r#"{"name":"n","generateName":"g-","namespace":"ns","labels":{"app":"web"},"annotations":{"placement-guard.io/ignore":"x","other":{"a":1}},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","controller":true}],"uid":"u"}"#;
    vec![
        (
            Kind::Pod,
            format!(r#"{{"kind":"Pod","metadata":{meta},"spec":{spec}}}"#),
        ),
        (
            Kind::Deployment,
            format!(
                r#"{{"kind":"Deployment","metadata":{meta},"spec":{{"selector":{{"matchLabels":{{"app":"web"}},"matchExpressions":[{{"key":"tier","operator":"NotIn","values":["db"]}}]}},"template":{{"metadata":{meta},"spec":{spec}}}}}}}"#
            ),
        ),
        (
            Kind::ReplicationController,
            format!(
                r#"{{"metadata":{meta},"spec":{{"selector":{{"app":"web"}},"template":{{"metadata":{meta},"spec":{spec}}}}}}}"#
            ),
        ),
        (
            Kind::CronJob,
            format!(
                r#"{{"metadata":{meta},"spec":{{"jobTemplate":{{"metadata":{{"labels":{{"kueue.x-k8s.io/queue-name":"q"}}}},"spec":{{"manualSelector":null,"suspend":true,"template":{{"spec":{spec}}}}}}}}}}}"#
            ),
        ),
        (
            Kind::Job,
            format!(
                r#"{{"kind":"Job","metadata":{meta},"spec":{{"manualSelector":true,"suspend":true,"selector":{{"matchLabels":{{"app":"web"}}}},"template":{{"metadata":{meta},"spec":{spec}}}}}}}"#
            ),
        ),
        (
            Kind::PodTemplate,
            format!(r#"{{"metadata":{meta},"template":{{"metadata":{meta},"spec":{spec}}}}}"#),
        ),
    ]
}

/// A part of an object is the whole read less what the part leaves out: metadata and the
/// selector for an UPDATE's old object, resources and tolerations when no rule reads them.
#[test]
fn a_part_is_the_whole_less_what_it_leaves_out() {
    let read = |text: &str, kind, part| {
        let mut de = Deserializer::new(text);
        template(kind, part, &mut de).and_then(|t| de.end().map(|()| t))
    };
    let mut objects = recorded_objects();
    objects.extend(full_field_objects());
    let no_resources = Part {
        identity: true,
        resources: false,
        tolerations: true,
    };
    let no_tolerations = Part {
        tolerations: false,
        ..Part::SCHEDULING
    };
    for part in [Part::SCHEDULING, no_resources, no_tolerations] {
        for (kind, text) in &objects {
            let mut want = read(text, *kind, Part::WHOLE).unwrap();
            if !part.identity {
                want.meta = ObjectMeta::default();
                want.template_meta = want.template_meta.map(|_| ObjectMeta::default());
                want.selector = None;
                want.manual_selector = false;
                want.suspended = false;
                want.queued_jobs = false;
            }
            if !part.resources {
                want.spec.containers.clear();
                want.spec.init_containers.clear();
                want.spec.overhead = None;
                want.spec.resources = None;
                want.spec.runtime_class_name = None;
            }
            if !part.tolerations {
                want.spec.tolerations = None;
            }
            // It gives a DaemonSet's pods one more toleration.
            if !part.resources && !part.tolerations {
                want.spec.host_network = None;
            }
            let got = read(text, *kind, part).unwrap();
            assert_eq!(got, want, "{part:?} {text}");
        }
    }
}

/// Damaged recorded objects (a fixed pseudo-random sequence of byte replacements): never a
/// result serde would not give.
#[test]
fn damaged_objects_read_by_hand_as_serde_reads_them_or_go_to_serde() {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut read, mut bailed) = (0, 0);
    for (kind, text) in recorded_objects() {
        for _ in 0..60 {
            let mut b = text.clone().into_bytes();
            for _ in 0..1 + next() % 2 {
                let at = (next() % b.len() as u64) as usize;
                b[at] = b"{}[]\",:\\0n -1"[(next() % 13) as usize];
            }
            let Ok(t) = String::from_utf8(b) else {
                continue;
            };
            for k in [kind, KINDS[(next() % 6) as usize]] {
                if agree(&t, k) {
                    read += 1;
                } else {
                    bailed += 1;
                }
            }
        }
    }
    assert!(read > 100 && bailed > 100, "{read} {bailed}");
}

/// An UPDATE's old object read after its new one, in one body: values with the new object's
/// text are taken from the new object's reading (`tamper` marks that reading, to show which
/// were taken), the others are read.
fn read_after(kind: Kind, new: &str, old: &str, tamper: fn(&mut PodTemplate)) -> PodTemplate {
    try_read_after(kind, new, old, tamper).unwrap()
}

fn try_read_after(
    kind: Kind,
    new: &str,
    old: &str,
    tamper: fn(&mut PodTemplate),
) -> Result<PodTemplate, Error> {
    let text = format!("[{new},{old}]");
    let mut de = Deserializer::new(&text);
    let mut noted = Noted::default();
    let mut read: Vec<PodTemplate> = Vec::new();
    de.read_array(|de| {
        let t = match read.first() {
            None => template_echo(kind, Part::WHOLE, de, &mut Echo::Note(&mut noted))?,
            Some(new) => {
                let mut new = new.clone();
                tamper(&mut new);
                let mut echo = Echo::Reuse {
                    noted: &noted,
                    new: &new,
                    top: 0,
                    spec: 0,
                    tolerations_taken: false,
                };
                template_echo(kind, Part::SCHEDULING, de, &mut echo)?
            }
        };
        read.push(t);
        Ok(())
    })?;
    de.end()?;
    Ok(read.pop().unwrap())
}

/// After a value taken from the new object, the entries that follow are taken with it while
/// their text is the new object's: scalars and empty values too, up to the first difference,
/// never past a number that only begins as the new one's, and never hiding a repeated field.
#[test]
fn an_old_pod_spec_takes_runs_of_unchanged_entries() {
    let pod =
        |spec: &str| format!(r#"{{"kind":"Pod","metadata":{{"name":"p"}},"spec":{{{spec}}}}}"#);
    let spec = r#""volumes":[{"name":"v"}],"nodeName":"n1","priority":30,"tolerations":[],"schedulingGates":[{"name":"g"}],"nodeSelector":{"a":"b"}"#;
    let new = pod(spec);
    let marked = |t: &mut PodTemplate| {
        t.spec.node_name = Some("taken".into());
        t.spec.tolerations = Some(vec![Toleration {
            key: Some("taken".into()),
            ..Toleration::default()
        }]);
        t.spec.scheduling_gates = Some(vec![PodSchedulingGate {
            name: "taken".into(),
        }]);
        t.spec.node_selector = Some(BTreeMap::from([("taken".into(), "yes".into())]));
    };
    let alone = |text: &str| {
        let mut de = Deserializer::new(text);
        template(Kind::Pod, Part::SCHEDULING, &mut de).unwrap()
    };
    let mut mark = alone(&new);
    marked(&mut mark);
    // (old spec, which fields are taken: nodeName, tolerations, gates, nodeSelector)
    let cases = [
        // The last entry changed: everything before it comes in one run after `volumes`.
        (
            spec.replace(r#"{"a":"b"}"#, r#"{"a":"c"}"#),
            [true, true, true, false],
        ),
        // A number that begins as the new one's ends the run; the next value starts another.
        (spec.replace(":30,", ":300,"), [true, true, true, true]),
        // The first value changed: the run starts at the first value that did not.
        (
            spec.replace(r#"[{"name":"v"}]"#, r#"[{"name":"w"}]"#),
            [true, true, true, true],
        ),
        // Unchanged from the start, changed in the middle.
        (
            spec.replace(r#""nodeName":"n1""#, r#""nodeName":"n2""#),
            [false, true, true, true],
        ),
    ];
    for (old_spec, taken) in cases {
        let old = pod(&old_spec);
        let want = alone(&old);
        assert_eq!(read_after(Kind::Pod, &new, &old, |_| {}), want, "{old}");
        let mut expected = want.clone();
        if taken[0] {
            expected.spec.node_name = mark.spec.node_name.clone();
        }
        if taken[1] {
            expected.spec.tolerations = mark.spec.tolerations.clone();
        }
        if taken[2] {
            expected.spec.scheduling_gates = mark.spec.scheduling_gates.clone();
        }
        if taken[3] {
            expected.spec.node_selector = mark.spec.node_selector.clone();
        }
        assert_eq!(read_after(Kind::Pod, &new, &old, marked), expected, "{old}");
    }
    // A field repeated after a run that took it is refused, as when read alone.
    let repeated = pod(&format!(r#"{spec},"nodeName":"n2""#));
    assert!(try_read_after(Kind::Pod, &new, &repeated, |_| {}).is_err());
}

#[test]
fn an_old_object_takes_its_unchanged_values_from_the_new_one() {
    let alone = |text: &str, kind| {
        let mut de = Deserializer::new(text);
        template(kind, Part::SCHEDULING, &mut de).unwrap()
    };
    let marked = |t: &mut PodTemplate| {
        t.spec.tolerations = Some(vec![Toleration {
            key: Some("taken from the new object".into()),
            ..Toleration::default()
        }]);
        t.spec.node_selector = Some(BTreeMap::from([("taken".into(), "yes".into())]));
    };
    let mut objects = recorded_objects();
    objects.extend(full_field_objects());
    let (mut taken, mut read) = (0, 0);
    for (kind, new) in &objects {
        let changed = new.replacen(
            "\"tolerations\":[",
            "\"tolerations\":[{\"key\":\"added\"},",
            1,
        );
        for old in [new.clone(), changed] {
            let want = alone(&old, *kind);
            // Unmarked, a reading after the new object is the old object read alone.
            assert_eq!(read_after(*kind, new, &old, |_| {}), want, "{old}");
            // Marked: what was taken is the new object's (non-empty containers with the same
            // text), the rest is read.
            let got = read_after(*kind, new, &old, marked);
            let mut expected = want.clone();
            let mut mark = expected.clone();
            marked(&mut mark);
            if *new == old
                && want
                    .spec
                    .tolerations
                    .as_ref()
                    .is_some_and(|t| !t.is_empty())
            {
                expected.spec.tolerations = mark.spec.tolerations.clone();
                taken += 1;
            } else if want.spec.tolerations.is_some() {
                read += 1;
            }
            // The node selector is the same text in both.
            if want
                .spec
                .node_selector
                .as_ref()
                .is_some_and(|m| !m.is_empty())
            {
                expected.spec.node_selector = mark.spec.node_selector;
            }
            assert_eq!(got, expected, "{old}");
        }
    }
    assert!(taken > 5 && read > 5, "taken {taken}, read {read}");
}
