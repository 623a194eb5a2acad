//! Field paths and field errors rendered exactly like Kubernetes' `field.Path` and
//! `field.Error` (k8s.io/apimachinery/pkg/util/validation/field), so a user reading our
//! messages sees the same shape the apiserver prints.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Segment {
    // Field names are almost always literals; borrowing them keeps paths that are built but
    // never reported (the common case in rules) from allocating per segment.
    Field(Cow<'static, str>),
    Index(usize),
    Key(String),
}

/// A path to a field, e.g. `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]`.
/// Validators take their root from the caller, so the same code serves `spec` of a Pod and
/// `spec.template.spec` of a Deployment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldPath(Vec<Segment>);

impl FieldPath {
    pub fn root() -> Self {
        FieldPath(Vec::new())
    }

    /// Parses a dotted path such as `spec.template.spec` (no indices).
    pub fn new(dotted: &str) -> Self {
        FieldPath(
            dotted
                .split('.')
                .filter(|s| !s.is_empty())
                .map(|s| Segment::Field(Cow::Owned(s.to_string())))
                .collect(),
        )
    }

    /// A path of literal field names (`["spec", "template"]`), borrowed: paths derived from it
    /// copy no strings.
    pub fn fields(names: &[&'static str]) -> Self {
        FieldPath::root().children(names)
    }

    /// Parses a path as serde and Kubernetes print it: `spec.containers[0].ports[1].name`.
    /// A key in brackets may hold dots (`annotations[prometheus.io/port]`).
    pub fn parse(shown: &str) -> Self {
        let mut segs = Vec::new();
        let mut rest = shown;
        while !rest.is_empty() {
            if let Some(inner) = rest.strip_prefix('[') {
                let (key, after) = inner.split_once(']').unwrap_or((inner, ""));
                match key.parse() {
                    Ok(i) => segs.push(Segment::Index(i)),
                    Err(_) => segs.push(Segment::Key(key.to_string())),
                }
                rest = after;
            } else if let Some(after) = rest.strip_prefix('.') {
                rest = after;
            } else {
                let end = rest.find(['.', '[']).unwrap_or(rest.len());
                segs.push(Segment::Field(Cow::Owned(rest[..end].to_string())));
                rest = &rest[end..];
            }
        }
        FieldPath(segs)
    }

    pub fn child(&self, name: &'static str) -> Self {
        self.with(Segment::Field(Cow::Borrowed(name)))
    }

    /// `self` with several literal field names appended, in one allocation.
    pub fn children(&self, names: &[&'static str]) -> Self {
        let mut v = Vec::with_capacity(self.0.len() + names.len());
        v.extend_from_slice(&self.0);
        v.extend(names.iter().map(|&n| Segment::Field(Cow::Borrowed(n))));
        FieldPath(v)
    }

    pub fn index(&self, i: usize) -> Self {
        self.with(Segment::Index(i))
    }

    pub fn key(&self, k: &str) -> Self {
        self.with(Segment::Key(k.to_string()))
    }

    fn with(&self, last: Segment) -> Self {
        let mut v = Vec::with_capacity(self.0.len() + 1);
        v.extend_from_slice(&self.0);
        v.push(last);
        FieldPath(v)
    }

    /// The last field name before the first list index: the key a YAML reader can point at
    /// for errors inside a list (`allowedUsers` of `spec.x.allowedUsers[0]`).
    pub fn anchor_field(&self) -> Option<&str> {
        self.0
            .iter()
            .take_while(|s| !matches!(s, Segment::Index(_)))
            .filter_map(|s| match s {
                Segment::Field(f) => Some(f.as_ref()),
                _ => None,
            })
            .last()
    }

    /// The path as a list of JSON object keys and array indices, for locating the field in a
    /// parsed document (keys of maps are plain keys there).
    pub fn json_segments(&self) -> Vec<JsonSegment<'_>> {
        self.0
            .iter()
            .map(|s| match s {
                Segment::Field(f) => JsonSegment::Key(f),
                Segment::Key(f) => JsonSegment::Key(f.as_str()),
                Segment::Index(i) => JsonSegment::Index(*i),
            })
            .collect()
    }

    /// RFC 6901 JSON pointer of the field, for JSON patches.
    pub fn json_pointer(&self) -> json_patch::jsonptr::PointerBuf {
        use json_patch::jsonptr::{PointerBuf, Token};
        PointerBuf::from_tokens(self.json_segments().into_iter().map(|s| match s {
            JsonSegment::Key(k) => Token::new(k),
            JsonSegment::Index(i) => Token::from(i),
        }))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonSegment<'a> {
    Key(&'a str),
    Index(usize),
}

impl fmt::Display for FieldPath {
    /// Rendered whole, then written at once: the response writer escapes what it is given call
    /// by call, and a segment a call cost a denial a tenth of its instructions.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("<nil>");
        }
        let mut out = String::with_capacity(128);
        for (k, s) in self.0.iter().enumerate() {
            match s {
                Segment::Field(name) => {
                    if k > 0 {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Segment::Index(i) => {
                    out.push('[');
                    out.push_str(itoa::Buffer::new().format(*i));
                    out.push(']');
                }
                Segment::Key(key) => {
                    out.push('[');
                    out.push_str(key);
                    out.push(']');
                }
            }
        }
        f.write_str(&out)
    }
}

/// The kinds of field error Kubernetes reports, with their `Reason` strings in
/// `Status.details.causes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum ErrorType {
    Required,
    Invalid,
    Duplicate,
    NotSupported,
    Forbidden,
    NotFound,
    /// Not an error of the object: advice about it, in the apiserver's own warning form
    /// (`path: message`, no kind), such as "no node can run this pod now".
    Advice,
}

impl ErrorType {
    pub fn label(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::NotFound => "Not found",
            ErrorType::Advice => "",
        }
    }

    /// `metav1.CauseType` of this error type.
    pub fn cause(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::NotFound => "FieldValueNotFound",
            // Advice is a warning, never a denial's cause; should a rule deny with it, this
            // is the nearest cause.
            ErrorType::Advice => "FieldValueInvalid",
        }
    }
}

/// One problem with one field.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub kind: ErrorType,
    pub path: FieldPath,
    pub value: Option<Value>,
    pub detail: String,
}

impl FieldError {
    pub fn required(path: FieldPath, detail: impl Into<String>) -> Self {
        Self {
            kind: ErrorType::Required,
            path,
            value: None,
            detail: detail.into(),
        }
    }

    pub fn invalid(path: FieldPath, value: Value, detail: impl Into<String>) -> Self {
        Self {
            kind: ErrorType::Invalid,
            path,
            value: Some(value),
            detail: detail.into(),
        }
    }

    pub fn duplicate(path: FieldPath, value: Value) -> Self {
        Self {
            kind: ErrorType::Duplicate,
            path,
            value: Some(value),
            detail: String::new(),
        }
    }

    pub fn not_supported(path: FieldPath, value: Value, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Self {
            kind: ErrorType::NotSupported,
            path,
            value: Some(value),
            detail: format!("supported values: {}", list.join(", ")),
        }
    }

    /// A reference to something that does not exist (a volume mount's volume).
    pub fn not_found(path: FieldPath, value: Value) -> Self {
        Self {
            kind: ErrorType::NotFound,
            path,
            value: Some(value),
            detail: String::new(),
        }
    }

    pub fn forbidden(path: FieldPath, detail: impl Into<String>) -> Self {
        Self {
            kind: ErrorType::Forbidden,
            path,
            value: None,
            detail: detail.into(),
        }
    }

    /// Everything after `path: `, as `field.Error.ErrorBody` renders it.
    pub fn body(&self) -> String {
        let mut s = String::new();
        let _ = self.write_body(&mut s);
        s
    }

    /// [`FieldError::body`], written into `w`.
    pub fn write_body<W: fmt::Write + ?Sized>(&self, w: &mut W) -> fmt::Result {
        w.write_str(self.kind.label())?;
        if let (
            Some(v),
            ErrorType::Invalid
            | ErrorType::Duplicate
            | ErrorType::NotSupported
            | ErrorType::NotFound,
        ) = (&self.value, self.kind)
        {
            w.write_str(": ")?;
            w.write_str(&render_value(v))?;
        }
        if !self.detail.is_empty() {
            if self.kind != ErrorType::Advice {
                w.write_str(": ")?;
            }
            w.write_str(&self.detail)?;
        }
        Ok(())
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path)?;
        self.write_body(f)
    }
}

/// Renders a bad value like apimachinery: strings quoted, scalars bare, the rest as JSON.
pub fn render_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_what_it_prints() {
        for p in [
            "spec.topologySpreadConstraints[0].maxSkew",
            "spec.containers[1].ports[2]",
            "spec",
            "items[3]",
            "metadata.annotations[prometheus.io/port]",
            "spec.nodeSelector[a.b/c].x",
        ] {
            assert_eq!(FieldPath::parse(p).to_string(), p);
        }
        assert_eq!(
            FieldPath::parse("metadata.annotations[prometheus.io/port]")
                .json_pointer()
                .as_str(),
            "/metadata/annotations/prometheus.io~1port"
        );
        assert_eq!(
            FieldPath::parse("spec.template.spec.tolerations[1].key")
                .json_pointer()
                .as_str(),
            "/spec/template/spec/tolerations/1/key"
        );
    }

    #[test]
    fn renders_paths_like_kubernetes() {
        let p = FieldPath::new("spec.template.spec")
            .child("affinity")
            .child("podAntiAffinity")
            .child("requiredDuringSchedulingIgnoredDuringExecution")
            .index(1)
            .child("topologyKey");
        assert_eq!(
            p.to_string(),
            "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey"
        );
        assert_eq!(
            FieldPath::new("spec")
                .child("nodeSelector")
                .key("disktype")
                .to_string(),
            "spec.nodeSelector[disktype]"
        );
        assert_eq!(FieldPath::root().to_string(), "<nil>");
        // Parsed and built paths are the same path, whichever way their names are stored.
        assert_eq!(
            FieldPath::new("spec.affinity"),
            FieldPath::root().child("spec").child("affinity")
        );
        assert_eq!(
            FieldPath::fields(&["spec", "template"])
                .children(&["spec", "affinity"])
                .index(0),
            FieldPath::parse("spec.template.spec.affinity[0]")
        );
    }

    #[test]
    fn json_pointer_escapes() {
        let p = FieldPath::new("metadata.annotations").key("a/b~c");
        assert_eq!(p.json_pointer().as_str(), "/metadata/annotations/a~1b~0c");
        assert_eq!(
            FieldPath::new("spec").index(3).json_pointer().as_str(),
            "/spec/3"
        );
    }

    #[test]
    fn renders_errors_like_kubernetes() {
        let cases = [
            (
                FieldError::invalid(
                    FieldPath::new("spec.nodeSelector"),
                    json!({"topology.kubernetes.io/zone": "zone-a"}),
                    "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                ),
                r#"spec.nodeSelector: Invalid value: {"topology.kubernetes.io/zone":"zone-a"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"#,
            ),
            (
                FieldError::forbidden(
                    FieldPath::new("spec.schedulingGates").index(1).child("name"),
                    "only deletion is allowed, but found new scheduling gate 'example.com/second'",
                ),
                "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/second'",
            ),
            (
                FieldError::required(FieldPath::new("spec.x.topologyKey"), "can not be empty"),
                "spec.x.topologyKey: Required value: can not be empty",
            ),
            (
                FieldError::not_supported(
                    FieldPath::new("spec.x.whenUnsatisfiable"),
                    json!("Never"),
                    &["DoNotSchedule", "ScheduleAnyway"],
                ),
                r#"spec.x.whenUnsatisfiable: Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway""#,
            ),
            (
                FieldError::duplicate(FieldPath::new("spec.x[0]"), json!({"key": "zone"})),
                r#"spec.x[0]: Duplicate value: {"key":"zone"}"#,
            ),
            (
                FieldError::invalid(FieldPath::new("spec.maxSkew"), json!(0), "must be greater than zero"),
                "spec.maxSkew: Invalid value: 0: must be greater than zero",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }
}
