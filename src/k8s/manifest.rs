//! Manifests: multi-document YAML (JSON is YAML too) read into JSON values, with the line and
//! column of every field taken from the parser, so findings point at the offending key.

use std::collections::HashMap;

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};
use serde_json::{Map, Value};

use crate::k8s::fieldpath::{FieldPath, JsonSegment};

/// 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

/// One object of a manifest file.
#[derive(Clone, Debug)]
pub struct Object {
    pub value: Value,
    /// Position of every field, by JSON pointer relative to the object ("" is the object).
    positions: HashMap<String, Pos>,
}

impl Object {
    /// Where `path` is, or its nearest ancestor that exists in the file.
    pub fn position(&self, path: &FieldPath) -> Pos {
        let segs = path.json_segments();
        for n in (0..=segs.len()).rev() {
            if let Some(p) = self.positions.get(&pointer(&segs[..n])) {
                return *p;
            }
        }
        self.positions
            .get("")
            .copied()
            .unwrap_or(Pos { line: 1, column: 1 })
    }

    pub fn start(&self) -> Pos {
        self.positions
            .get("")
            .copied()
            .unwrap_or(Pos { line: 1, column: 1 })
    }
}

fn pointer(segs: &[JsonSegment]) -> String {
    let mut s = String::new();
    for seg in segs {
        s.push('/');
        match seg {
            JsonSegment::Key(k) => s.push_str(&k.replace('~', "~0").replace('/', "~1")),
            JsonSegment::Index(i) => s.push_str(&i.to_string()),
        }
    }
    s
}

/// A file that is not valid YAML.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{pos_line}:{pos_col}: {message}")]
pub struct SyntaxError {
    pub pos_line: usize,
    pub pos_col: usize,
    pub message: String,
}

fn pos(m: &saphyr::Marker) -> Pos {
    Pos {
        line: m.line(),
        column: m.col() + 1,
    }
}

fn scalar_to_json(s: &Scalar) -> Value {
    match s {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::from(*i),
        Scalar::FloatingPoint(f) => serde_json::Number::from_f64(f.into_inner())
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Scalar::String(s) => Value::String(s.to_string()),
    }
}

fn key_string(node: &MarkedYaml) -> String {
    match &node.data {
        YamlData::Value(Scalar::String(s)) => s.to_string(),
        YamlData::Value(s) => match scalar_to_json(s) {
            Value::String(s) => s,
            Value::Null => "null".to_string(),
            other => other.to_string(),
        },
        YamlData::Representation(r, _, _) => r.to_string(),
        YamlData::Tagged(_, inner) => key_string(inner),
        _ => String::new(),
    }
}

fn convert(node: &MarkedYaml, ptr: &str, positions: &mut HashMap<String, Pos>) -> Value {
    match &node.data {
        YamlData::Value(s) => scalar_to_json(s),
        YamlData::Representation(r, _, _) => Value::String(r.to_string()),
        YamlData::Tagged(_, inner) => convert(inner, ptr, positions),
        YamlData::Sequence(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let p = format!("{ptr}/{i}");
                    positions.insert(p.clone(), pos(&item.span.start));
                    convert(item, &p, positions)
                })
                .collect(),
        ),
        YamlData::Mapping(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let key = key_string(k);
                let p = format!("{ptr}/{}", key.replace('~', "~0").replace('/', "~1"));
                positions.insert(p.clone(), pos(&k.span.start));
                let value = convert(v, &p, positions);
                out.insert(key, value);
            }
            Value::Object(out)
        }
        YamlData::Alias(_) | YamlData::BadValue => Value::Null,
    }
}

/// Reads every document of a file; `kind: List` documents are expanded into their items.
/// Empty documents (a lone `---`, comments only) are dropped.
pub fn parse(text: &str) -> Result<Vec<Object>, SyntaxError> {
    let docs = MarkedYaml::load_from_str(text).map_err(|e| SyntaxError {
        pos_line: e.marker().line(),
        pos_col: e.marker().col() + 1,
        message: e.info().to_string(),
    })?;
    let mut out = Vec::new();
    for doc in &docs {
        let mut positions = HashMap::new();
        positions.insert(String::new(), pos(&doc.span.start));
        let value = convert(doc, "", &mut positions);
        if value.is_null() {
            continue;
        }
        let is_list = value
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k == "List" || k.ends_with("List"))
            && value.get("items").is_some_and(Value::is_array);
        if is_list {
            let items = value["items"].as_array().cloned().unwrap_or_default();
            for (i, item) in items.into_iter().enumerate() {
                let prefix = format!("/items/{i}");
                let positions = positions
                    .iter()
                    .filter_map(|(k, v)| {
                        k.strip_prefix(&prefix)
                            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
                            .map(|rest| (rest.to_string(), *v))
                    })
                    .collect();
                out.push(Object {
                    value: item,
                    positions,
                });
            }
        } else {
            out.push(Object { value, positions });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_point_at_keys() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector: {}\n        topologyKey: zone\n";
        let objs = parse(text).unwrap();
        assert_eq!(objs.len(), 1);
        let o = &objs[0];
        assert_eq!(
            o.value["spec"]["affinity"]["podAntiAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"],
            "zone"
        );
        let p = FieldPath::new(
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        )
        .index(0)
        .child("topologyKey");
        assert_eq!(
            o.position(&p),
            Pos {
                line: 10,
                column: 9
            }
        );
        // A missing field falls back to its nearest ancestor.
        let missing = FieldPath::new("spec.topologySpreadConstraints").index(0);
        assert_eq!(o.position(&missing), Pos { line: 5, column: 1 });
    }

    #[test]
    fn multi_document_lists_and_json() {
        let text = "---\n# only a comment\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: b\n---\n{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"spec\": {\"nodeName\": \"n\"}}\n";
        let objs = parse(text).unwrap();
        assert_eq!(objs.len(), 3);
        assert_eq!(objs[1].value["metadata"]["name"], "b");
        assert_eq!(
            objs[1].position(&FieldPath::new("metadata.name")),
            Pos {
                line: 13,
                column: 5
            }
        );
        assert_eq!(objs[2].value["spec"]["nodeName"], "n");
        assert_eq!(objs[2].position(&FieldPath::new("spec.nodeName")).line, 15);
    }

    #[test]
    fn scalars_follow_yaml_core_schema() {
        let objs = parse("a: 1\nb: true\nc: '1'\nd: null\ne: 1.5\nf: on\n").unwrap();
        let v = &objs[0].value;
        assert_eq!(v["a"], 1);
        assert_eq!(v["b"], true);
        assert_eq!(v["c"], "1");
        assert!(v["d"].is_null());
        assert_eq!(v["e"], 1.5);
        assert_eq!(v["f"], "on");
    }

    #[test]
    fn syntax_errors_have_positions() {
        let err = parse("a: [1, 2\nb: c\n").unwrap_err();
        assert!(err.pos_line >= 1 && !err.message.is_empty(), "{err:?}");
        let err = parse("key: value\n  bad: indent\n").unwrap_err();
        assert_eq!(err.pos_line, 2, "{err:?}");
    }
}
