use super::*;
use crate::k8s::workload::{Kind, PodTemplate, TemplateSeed};
use proptest::prelude::*;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;

fn fast<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    let mut de = Deserializer::new(text);
    let v = T::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// The text with every skipped value replaced by `null`, and what was read, when the on-demand
/// reader accepts it.
fn fast_template(text: &str, kind: Kind) -> Result<(PodTemplate, String), Error> {
    let mut de = Deserializer::new(text).record_skips();
    let t = TemplateSeed(kind).deserialize(&mut de)?;
    de.end()?;
    Ok((t, nulled(text, de.skipped())))
}

fn nulled(text: &str, skipped: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in skipped {
        out.push_str(&text[at..r.start]);
        out.push_str("null");
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

fn reference_template(text: &str, kind: Kind) -> Result<PodTemplate, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let t = TemplateSeed(kind).deserialize(&mut de)?;
    de.end()?;
    Ok(t)
}

/// Where serde_json reads a text, the on-demand reader reads the same; where only the on-demand
/// reader accepts it, the difference lies in skipped values alone.
fn agree_on_template(text: &str, kind: Kind) {
    let reference = reference_template(text, kind);
    match (fast_template(text, kind), reference) {
        (Ok((t, _)), Ok(r)) => assert_eq!(t, r, "{text}"),
        (Err(e), Ok(_)) => panic!("on-demand refused what serde_json reads: {e}\n{text}"),
        (Ok((t, nulled)), Err(_)) => {
            let r = reference_template(&nulled, kind)
                .unwrap_or_else(|e| panic!("{e}: with skipped values nulled\n{nulled}"));
            assert_eq!(t, r, "{text}");
        }
        (Err(_), Err(_)) => {}
    }
}

#[test]
fn string_scan_finds_the_first_stop() {
    for len in 0..40 {
        for at in 0..len {
            for stop in [b'"', b'\\', 0x1f, 0] {
                let mut b = vec![0xC3u8; len];
                b[at] = stop;
                if at + 3 < len {
                    b[at + 3] = b'"';
                }
                assert_eq!(string_stop(&b, 0), Some(at), "{len} {at} {stop}");
            }
            // Bytes just above the stops are not stops.
            let b: Vec<u8> = (0..len).map(|i| [b'#', b']', b' ', 0x7f][i % 4]).collect();
            assert_eq!(string_stop(&b, 0), None);
        }
    }
}

#[test]
fn values_read_whole_agree_with_serde_json() {
    let accepted = [
        r#"{"a":1,"b":[true,false,null],"c":{"d":"e\u00e9\n"},"f":-1.5e3,"g":""}"#,
        " { \"k\" : [ ] , \"l\" : { } } ",
        r#"["\"quoted\"","back\\slash","é",12345678901234567890,1e300]"#,
        r#"{"a\u0041b":"key with an escape"}"#,
        r#""just a string""#,
        "0",
        "null",
        r#"{"dup":1,"dup":2}"#,
    ];
    for text in accepted {
        let want: serde_json::Value = serde_json::from_str(text).unwrap();
        let got: serde_json::Value = fast(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(got, want, "{text}");
    }
    let refused = [
        "",
        "{",
        r#"{"a":1,}"#,
        "[1,]",
        "[1 2]",
        r#"{"a" 1}"#,
        r#"{"a":1 "b":2}"#,
        r#"{a:1}"#,
        "[tru]",
        "[nul]",
        "[01]",
        "[1.]",
        "[-]",
        "\"unterminated",
        "\"control \u{1} character\"",
        r#""bad \x escape""#,
        "[1]]",
        "{} {}",
        "[\"a\"\"b\"]",
        "{\"a\":}",
        "[,1]",
    ];
    for text in refused {
        assert!(
            serde_json::from_str::<serde_json::Value>(text).is_err(),
            "serde_json reads {text}"
        );
        assert!(
            fast::<serde_json::Value>(text).is_err(),
            "on-demand read {text}"
        );
    }
}

#[test]
fn recursion_limit_is_serde_json_s_for_read_values_and_none_for_skipped_ones() {
    for depth in [126, 127, 128, 129] {
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(
            fast::<serde_json::Value>(&text).is_ok(),
            serde_json::from_str::<serde_json::Value>(&text).is_ok(),
            "depth {depth}"
        );
    }
    let deep = format!("{}1{}", "[{\"a\":".repeat(5000), "}]".repeat(5000));
    fast::<IgnoredAny>(&deep).unwrap();
    serde_json::from_str::<IgnoredAny>(&deep).unwrap();
}

#[test]
fn skipped_values_are_checked_for_structure_only() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Kept {
        keep: String,
    }
    let cases = [
        // Valid JSON: both read it.
        (r#"{"skip":{"a":[1,{"b":"}]"}]},"keep":"x"}"#, true),
        (r#"{"skip":"a \"quoted\" } string","keep":"x"}"#, true),
        // Unbalanced brackets and open strings are refused; brackets are counted, not matched
        // by kind, as simdjson's On-Demand API skips.
        (r#"{"skip":{"a":[1}],"keep":"x"}"#, true),
        (r#"{"skip":[1,2,"keep":"x"}"#, false),
        (r#"{"skip":"open,"keep":"x"}"#, false),
        (r#"{"skip":},"keep":"x"}"#, false),
        (r#"{"skip":,"keep":"x"}"#, false),
        // Malformed scalars and escapes inside a skipped value are not looked at.
        (r#"{"skip":[tru, 01, "\q"],"keep":"x"}"#, true),
        (r#"{"skip":nul,"keep":"x"}"#, true),
    ];
    for (text, ok) in cases {
        let got = fast::<Kept>(text);
        assert_eq!(got.is_ok(), ok, "{text}: {got:?}");
        if let Ok(k) = got {
            assert_eq!(k.keep, "x");
        }
    }
}

#[test]
fn the_parts_read_are_validated_as_serde_json_does() {
    let cases = [
        r#"{"spec":{"nodeSelector":{"a":"b",}}}"#,
        r#"{"spec":{"nodeSelector":{"a":1}}}"#,
        r#"{"spec":{"nodeSelector":{"a":"b"}},"spec":{}}"#,
        r#"{"spec":{"tolerations":[{"key":"k","tolerationSeconds":1.5}]}}"#,
        r#"{"spec":{"tolerations":[{"key":"k","tolerationSeconds":300}]}}"#,
        r#"{"spec":{"tolerations":[{"key":"k\u0041","operator":"Exists"}]}}"#,
        r#"{"spec":{"schedulingGates":[{"name":"g"}],"containers":[{"resources":{"requests":{"cpu":"1"}}}]}}"#,
        r#"{"metadata":[],"spec":{}}"#,
        r#"{"metadata":{"labels":null,"annotations":{"placement-guard.io/x":"y","other":{"a":[1]}}}}"#,
        r#"{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"z","operator":"In","values":["a"]}]}]}}}}}"#,
        r#"{"spec":{"containers":[{"ports":[{"hostPort":80,"protocol":"TCP"}]}],"status":{"x":[}}}"#,
    ];
    for text in cases {
        agree_on_template(text, Kind::Pod);
    }
}

#[test]
fn recorded_objects_read_the_same() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/admission-reviews");
    let mut read = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let got: serde_json::Value = fast(&text).unwrap();
        assert_eq!(got, v, "{}", path.display());
        let Some(kind) = v["request"]["kind"]["kind"].as_str() else {
            continue;
        };
        let group = v["request"]["kind"]["group"].as_str().unwrap_or("");
        let Some(kind) = Kind::from_group_kind(group, kind) else {
            continue;
        };
        for field in ["object", "oldObject"] {
            if v["request"][field].is_object() {
                let object = serde_json::to_string(&v["request"][field]).unwrap();
                let (t, _) = fast_template(&object, kind).unwrap();
                assert_eq!(t, reference_template(&object, kind).unwrap());
                read += 1;
            }
        }
    }
    assert!(read > 20, "only {read} objects read");
}

/// JSON-like texts: tokens of every kind, balanced or not, with the keys the pod view reads so
/// that both reading and skipping are exercised.
fn json_text() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just(" ".to_string()),
        Just("null".to_string()),
        Just("nul".to_string()),
        Just("true".to_string()),
        Just("-12.5e1".to_string()),
        Just("01".to_string()),
        Just("7".to_string()),
        Just("\"\\u00e9\\\"x\"".to_string()),
        Just("\"\\q\"".to_string()),
        Just("\"\u{1}\"".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        "\"[a-z{}\\[\\], ]{0,12}\"",
        prop::sample::select(vec![
            "\"metadata\":",
            "\"labels\":",
            "\"annotations\":",
            "\"placement-guard.io/a\":",
            "\"spec\":",
            "\"nodeSelector\":",
            "\"tolerations\":",
            "\"key\":",
            "\"tolerationSeconds\":",
            "\"containers\":",
            "\"resources\":",
            "\"requests\":",
            "\"cpu\":",
            "\"ports\":",
            "\"hostPort\":",
            "\"schedulingGates\":",
            "\"name\":",
            "\"managedFields\":",
            "\"status\":",
        ])
        .prop_map(str::to_string),
    ];
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

/// Mutations of a valid pod: most stay JSON, some break it in read or skipped parts.
fn pod_text() -> impl Strategy<Value = String> {
    let pod = r#"{"metadata":{"name":"p","labels":{"app":"web"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"a\":[1,2]}\n","placement-guard.io/x":"y"},"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:x":{}}}}]},"spec":{"nodeSelector":{"zone":"a"},"tolerations":[{"key":"k","operator":"Exists","tolerationSeconds":300}],"schedulingGates":[{"name":"g"}],"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"100m"}},"ports":[{"hostPort":8080}]}]},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False"}]}}"#;
    let n = pod.len();
    prop::collection::vec(
        (
            0..n,
            prop::sample::select(vec![
                "", "{", "}", "[", "]", "\"", ",", ":", "\\", "1", "x", "null", " ",
            ]),
        ),
        0..4,
    )
    .prop_map(move |edits| {
        let mut s = pod.as_bytes().to_vec();
        for (at, with) in edits {
            let at = at.min(s.len());
            let end = (at + 1).min(s.len());
            s.splice(at..end, with.bytes());
        }
        String::from_utf8_lossy(&s).into_owned()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn any_text_read_whole_agrees_with_serde_json(text in json_text()) {
        let want = serde_json::from_str::<serde_json::Value>(&text);
        let got = fast::<serde_json::Value>(&text);
        match (got, want) {
            (Ok(g), Ok(w)) => prop_assert_eq!(g, w),
            (Err(_), Err(_)) => {}
            (g, w) => prop_assert!(false, "{text}: on-demand {g:?}, serde_json {w:?}"),
        }
    }

    #[test]
    fn any_text_read_as_a_pod_agrees_with_serde_json(text in json_text()) {
        agree_on_template(&text, Kind::Pod);
        agree_on_template(&text, Kind::Deployment);
    }

    #[test]
    fn mutated_pods_agree_with_serde_json(text in pod_text()) {
        agree_on_template(&text, Kind::Pod);
    }
}

/// The block scan's rules a byte at a time: an unescaped quote opens or closes a string, and
/// brackets outside strings count the depth.
fn bytewise_end(text: &str) -> Option<usize> {
    let (mut escaped, mut in_string, mut depth) = (false, false, 0u32);
    for (i, &c) in text.as_bytes().iter().enumerate() {
        let was_escaped = std::mem::take(&mut escaped);
        match c {
            b'\\' if !was_escaped => escaped = true,
            b'"' if !was_escaped => in_string = !in_string,
            b'{' | b'[' if !in_string => depth += 1,
            b'}' | b']' if !in_string => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Where a container (or, with `container` false, a string) that starts at `start` ends, by
/// each kind of lanes this CPU has: SSE2 always, AVX2 when present (the dispatch uses only the
/// widest, so the other is tested here alone).
fn lane_ends(b: &[u8], start: usize, container: bool) -> Vec<(&'static str, Option<usize>)> {
    let sse2 = if container {
        scan::container_end_with(scan::Sse2, b, start)
    } else {
        scan::string_end_with(scan::Sse2, b, start)
    };
    #[allow(unused_mut)] // Only x86-64 has a second kind.
    let mut ends = vec![("SSE2", sse2)];
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        let avx2 = scan::Avx2(simd);
        let end = simd.vectorize(|| {
            if container {
                scan::container_end_with(avx2, b, start)
            } else {
                scan::string_end_with(avx2, b, start)
            }
        });
        ends.push(("AVX2", end));
    }
    ends
}

/// Texts of brackets, quotes, runs of backslashes and filler, long enough to cross blocks.
fn scan_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            "\"",
            "\\",
            "\\\\",
            "\\\\\\",
            "a",
            "\\\"",
            "[]",
            "{}",
            "é",
            "Y_y{",
            "\"\"",
            ":",
            ",",
            "\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{}}}",
            "0123456789abcdef0123456789",
        ]),
        0..120,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn block_scan_agrees_with_bytes(body in scan_text(), lead in 0usize..70) {
        // Containers start anywhere in a block.
        let text = format!("{}[{}", " ".repeat(lead), body);
        let de = Deserializer::new(&text);
        let blocks = de.skip_container(lead).ok();
        let want_end = bytewise_end(&text[lead..]).map(|e| e + lead);
        prop_assert_eq!(blocks, want_end, "{}", text);
        // Both kinds of lanes, whichever the dispatch picked on this CPU.
        for (lanes, end) in lane_ends(text.as_bytes(), lead, true) {
            prop_assert_eq!(end, want_end, "{} lanes: {}", lanes, text);
        }
        let string = format!("{}\"{}", " ".repeat(lead), body);
        let want = {
            let mut escaped = false;
            string.as_bytes().iter().enumerate().skip(lead + 1).find_map(|(i, &c)| {
                if escaped {
                    escaped = false;
                    None
                } else if c == b'\\' {
                    escaped = true;
                    None
                } else {
                    (c == b'"').then_some(i + 1)
                }
            })
        };
        prop_assert_eq!(Deserializer::new(&string).skip_string(lead + 1).ok(), want, "{}", string);
        for (lanes, end) in lane_ends(string.as_bytes(), lead + 1, false) {
            prop_assert_eq!(end, want, "{} lanes: {}", lanes, string);
        }
    }
}

/// A value is consumed as a copy of one read earlier only when its text is the same whole
/// value; the skips recorded inside the original are recorded again, moved to the copy.
#[test]
fn a_copy_is_its_original_text_and_nothing_more() {
    let text = r#"[{"a":[1,{"b":"}"}],"x":tru},{"a":[1,{"b":"}"}],"x":tru},{"a":[2]},12,123]"#;
    let mut de = Deserializer::new(text).record_skips();
    let (mut original, mut twelve) = (0..0, 0..0);
    let mut i = 0;
    de.read_array(|de| {
        match i {
            // The original, read as an object whose values are skipped.
            0 => {
                assert!(de.worth_copying());
                let start = de.position();
                de.read_object(|de, _| de.skip_value())?;
                original = start..de.position();
            }
            // The same text: consumed.
            1 => assert!(de.skip_copy(original.clone(), false)),
            // Another object: not consumed.
            2 => {
                let at = de.position();
                assert!(!de.skip_copy(original.clone(), false));
                assert_eq!(de.position(), at);
                de.skip_value()?;
            }
            3 => {
                twelve = de.position()..de.position() + 2;
                de.skip_value()?;
            }
            // `123` starts with the text of `12` but is not a copy of it.
            _ => {
                let at = de.position();
                assert!(!de.skip_copy(twelve.clone(), true));
                assert_eq!(de.position(), at);
                de.skip_value()?;
            }
        }
        i += 1;
        Ok(())
    })
    .unwrap();
    de.end().unwrap();
    let shown: Vec<&str> = de.skipped().iter().map(|r| &text[r.clone()]).collect();
    let inner = [r#"[1,{"b":"}"}]"#, "tru"];
    assert_eq!(
        shown,
        [
            inner[0],
            inner[1],
            inner[0],
            inner[1],
            r#"{"a":[2]}"#,
            "12",
            "123"
        ]
    );
    // Whole: the copy is one skip.
    let mut de = Deserializer::new("[[1],[1]]").record_skips();
    let mut first = None;
    de.read_array(|de| {
        match first.clone() {
            None => {
                let start = de.position();
                de.skip_value()?;
                first = Some(start..de.position());
            }
            Some(of) => assert!(de.skip_copy(of, true)),
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(de.skipped(), [1..4, 5..8]);
    assert!(!Deserializer::new("{}").worth_copying());
    assert!(!Deserializer::new("[]").worth_copying());
    assert!(!Deserializer::new("\"long string\"").worth_copying());
    assert!(Deserializer::new(" [0]").worth_copying());
}
