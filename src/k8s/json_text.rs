//! JSON text written directly, byte for byte what serde_json writes: strings escaped as
//! serde_json escapes them, and the API values our patches carry with k8s-openapi's field order
//! (absent optional fields left out). Written this way because serde_json's serializer escapes
//! a byte at a time: writing a defaulted pod's patch value here instead of through it took 2k
//! instructions off the review. The tests hold every writer here to serde_json's output.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// A JSON string.
pub fn string(out: &mut String, s: &str) {
    out.push('"');
    escape(out, s);
    out.push('"');
}

/// The inside of a JSON string; runs that need no escape are found sixteen bytes at a time
/// and copied whole.
pub fn escape(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    let mut at = 0;
    while let Some(stop) = crate::k8s::ondemand::string_stop(b, at) {
        out.push_str(&s[at..stop]);
        let c = b[stop];
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(c >> 4)]));
                out.push(char::from(HEX[usize::from(c & 0xf)]));
            }
        }
        at = stop + 1;
    }
    out.push_str(&s[at..]);
}

/// `"key":`, the key needing no escape (a field name of the API).
fn field(out: &mut String, name: &str) {
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

fn integer(out: &mut String, n: i32) {
    out.push_str(itoa::Buffer::new().format(n));
}

fn strings(out: &mut String, list: &[String]) {
    out.push('[');
    for (i, s) in list.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, s);
    }
    out.push(']');
}

fn string_map(out: &mut String, map: &BTreeMap<String, String>) {
    out.push('{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, k);
        out.push(':');
        string(out, v);
    }
    out.push('}');
}

pub fn label_selector(out: &mut String, s: &LabelSelector) {
    out.push('{');
    if let Some(exprs) = &s.match_expressions {
        field(out, "matchExpressions");
        out.push('[');
        for (i, e) in exprs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('{');
            field(out, "key");
            string(out, &e.key);
            out.push(',');
            field(out, "operator");
            string(out, &e.operator);
            if let Some(values) = &e.values {
                out.push(',');
                field(out, "values");
                strings(out, values);
            }
            out.push('}');
        }
        out.push(']');
    }
    if let Some(labels) = &s.match_labels {
        if s.match_expressions.is_some() {
            out.push(',');
        }
        field(out, "matchLabels");
        string_map(out, labels);
    }
    out.push('}');
}

/// A `TopologySpreadConstraint`'s fields, borrowed, its selector already written as JSON (the
/// same selector goes into every constraint a rule adds: written once).
pub struct SpreadConstraint<'a> {
    pub label_selector: Option<&'a str>,
    pub match_label_keys: Option<&'a [String]>,
    pub max_skew: i32,
    pub min_domains: Option<i32>,
    pub node_affinity_policy: Option<&'a str>,
    pub node_taints_policy: Option<&'a str>,
    pub topology_key: &'a str,
    pub when_unsatisfiable: &'a str,
}

/// One constraint, its fields in k8s-openapi's order.
pub fn spread_constraint(out: &mut String, c: &SpreadConstraint) {
    out.push('{');
    // Every field before maxSkew (always written) is followed by a comma, every one after
    // it preceded by one.
    if let Some(s) = c.label_selector {
        field(out, "labelSelector");
        out.push_str(s);
        out.push(',');
    }
    if let Some(keys) = c.match_label_keys {
        field(out, "matchLabelKeys");
        strings(out, keys);
        out.push(',');
    }
    field(out, "maxSkew");
    integer(out, c.max_skew);
    if let Some(n) = c.min_domains {
        out.push(',');
        field(out, "minDomains");
        integer(out, n);
    }
    if let Some(p) = c.node_affinity_policy {
        out.push(',');
        field(out, "nodeAffinityPolicy");
        string(out, p);
    }
    if let Some(p) = c.node_taints_policy {
        out.push(',');
        field(out, "nodeTaintsPolicy");
        string(out, p);
    }
    out.push(',');
    field(out, "topologyKey");
    string(out, c.topology_key);
    out.push(',');
    field(out, "whenUnsatisfiable");
    string(out, c.when_unsatisfiable);
    out.push('}');
}

#[cfg(test)]
mod tests;
