//! Manifests: multi-document YAML (JSON is YAML too) read into JSON values, with the line and
//! column of every field taken from the parser, so findings point at the offending key.

use std::collections::HashMap;

use std::borrow::Cow;

use saphyr::{MarkedYaml, Scalar, ScalarStyle, YamlData};
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
    /// What kubectl reads without a word but a reader should know (a key written twice).
    pub warnings: Vec<(Pos, String)>,
}

impl Object {
    /// An object that comes from no file (the API server): it has no positions, and every
    /// position is 0:0.
    pub fn from_value(value: Value) -> Object {
        Object {
            value,
            positions: HashMap::new(),
            warnings: Vec::new(),
        }
    }

    /// Where `path` is, or its nearest ancestor that exists in the file.
    pub fn position(&self, path: &FieldPath) -> Pos {
        let segs = path.json_segments();
        for n in (0..=segs.len()).rev() {
            if let Some(p) = self.positions.get(&pointer(&segs[..n])) {
                return *p;
            }
        }
        self.start()
    }

    pub fn start(&self) -> Pos {
        self.positions
            .get("")
            .copied()
            .unwrap_or(Pos { line: 0, column: 0 })
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

/// A file that is not valid YAML, or YAML with no JSON form to send to the API server.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{pos_line}:{pos_col}: {message}")]
pub struct SyntaxError {
    pub pos_line: usize,
    pub pos_col: usize,
    pub message: String,
    /// Valid YAML that JSON cannot carry (an infinite or NaN number).
    pub no_json: bool,
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
        Scalar::FloatingPoint(f) => {
            let f = f.into_inner();
            // kubectl takes YAML numbers through Go's float64 and json.Marshal, which writes an
            // integral value below 1e21 without a fraction: `1.0` and `1e3` reach the apiserver
            // as `1` and `1000`, which integer fields accept. Past i64 they stay floats here, as
            // the apiserver's decoder reads an integer that large as a float too.
            if f.fract() == 0.0 && (i64::MIN as f64..-(i64::MIN as f64)).contains(&f) {
                Value::from(f as i64)
            } else {
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .unwrap_or(Value::Null)
            }
        }
        Scalar::String(s) => Value::String(s.to_string()),
    }
}

/// A scalar as kubectl's YAML reader (go-yaml v2, through sigs.k8s.io/yaml) resolves it, which
/// is YAML 1.1's: a quoted or block scalar is a string; a plain scalar is a boolean also as
/// `yes`, `no`, `on`, `off`, `y` and `n` (any of their case forms), an integer also with `_`
/// between digits, a leading `0` (octal) or `0b` (binary), and a timestamp stays the string
/// written. A core tag (`!!int`, `!!float`, `!!bool`) resolves the text, quoted or not, and
/// must get its kind (`!!float` takes an integer as a float); `!!str` and any other tag leave
/// the text a string. The error is go-yaml's, for a tag the text does not fit.
fn resolve<'a>(node: &'a MarkedYaml) -> Result<Option<Cow<'a, Scalar<'a>>>, String> {
    let (text, style, tag) = match &node.data {
        YamlData::Value(s) => return Ok(Some(Cow::Borrowed(s))),
        YamlData::Representation(r, style, tag) => (r.as_ref(), *style, tag.as_deref()),
        _ => return Ok(None),
    };
    let string = || Scalar::String(Cow::Borrowed(text));
    let scalar = match tag {
        None if style == ScalarStyle::Plain => go_yaml_v2(text),
        Some(t)
            if t.is_yaml_core_schema() && matches!(t.suffix.as_str(), "int" | "float" | "bool") =>
        {
            match (t.suffix.as_str(), go_yaml_v2(text)) {
                ("int", s @ Scalar::Integer(_))
                | ("bool", s @ Scalar::Boolean(_))
                | ("float", s @ Scalar::FloatingPoint(_)) => s,
                ("float", Scalar::Integer(i)) => Scalar::FloatingPoint((i as f64).into()),
                (want, got) => {
                    let was = match got {
                        Scalar::Null => "!!null",
                        Scalar::Boolean(_) => "!!bool",
                        Scalar::Integer(_) => "!!int",
                        Scalar::FloatingPoint(_) => "!!float",
                        Scalar::String(_) => "!!str",
                    };
                    return Err(format!("cannot decode {was} `{text}` as a !!{want}"));
                }
            }
        }
        _ => string(),
    };
    Ok(Some(Cow::Owned(scalar)))
}

/// go-yaml v2's `resolve` of a plain, untagged scalar.
fn go_yaml_v2(s: &str) -> Scalar<'_> {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => {
            return Scalar::Boolean(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => {
            return Scalar::Boolean(false)
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::FloatingPoint(f64::INFINITY.into())
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::FloatingPoint(f64::NEG_INFINITY.into()),
        ".nan" | ".NaN" | ".NAN" => return Scalar::FloatingPoint(f64::NAN.into()),
        _ => {}
    }
    if !s.starts_with([
        '+', '-', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
    ]) {
        return Scalar::String(Cow::Borrowed(s));
    }
    let plain = s.replace('_', "");
    if let Some(i) = go_parse_int(&plain) {
        return Scalar::Integer(i);
    }
    // Beyond int64 (a uint64, or larger) and decimal floats: a float, as JSON carries it. A
    // float beyond float64's range fails ParseFloat and stays the string written.
    if is_yaml_style_float(&plain) {
        if let Ok(f) = plain.parse::<f64>() {
            if f.is_finite() {
                return Scalar::FloatingPoint(f.into());
            }
        }
    }
    Scalar::String(Cow::Borrowed(s))
}

/// Go's `strconv.ParseInt(s, 0, 64)`: a sign, then `0x`, `0o`, `0b` or a leading `0` (octal)
/// for the base.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(b) = lower.strip_prefix("0x") {
        (16, b)
    } else if let Some(b) = lower.strip_prefix("0o") {
        (8, b)
    } else if let Some(b) = lower.strip_prefix("0b") {
        (2, b)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let magnitude = i128::from(u64::from_str_radix(body, radix).ok()?);
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// go-yaml v2's `yamlStyleFloat`: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.strip_prefix(['+', '-']).unwrap_or(s).as_bytes();
    let digits = |b: &[u8]| b.iter().take_while(|c| c.is_ascii_digit()).count();
    let (mantissa, rest) = if b.first() == Some(&b'.') {
        let n = digits(&b[1..]);
        (n > 0, &b[1 + n..])
    } else {
        let n = digits(b);
        let mut rest = &b[n..];
        if n > 0 && rest.first() == Some(&b'.') {
            rest = &rest[1 + digits(&rest[1..])..];
        }
        (n > 0, rest)
    };
    if !mantissa {
        return false;
    }
    match rest {
        [] => true,
        [b'e' | b'E', exp @ ..] => {
            let exp = exp
                .strip_prefix(b"+")
                .or(exp.strip_prefix(b"-"))
                .unwrap_or(exp);
            !exp.is_empty() && digits(exp) == exp.len()
        }
        _ => false,
    }
}

fn key_string(node: &MarkedYaml) -> String {
    match (&node.data, resolve(node).ok().flatten()) {
        (_, Some(s)) => match s.as_ref() {
            Scalar::String(s) => s.to_string(),
            s => match scalar_to_json(s) {
                Value::String(s) => s,
                Value::Null => "null".to_string(),
                other => other.to_string(),
            },
        },
        (YamlData::Tagged(_, inner), None) => key_string(inner),
        _ => String::new(),
    }
}

/// The YAML 1.1 merge key, as kubectl's YAML reader (go-yaml v2) recognizes it.
fn is_merge_key(node: &MarkedYaml) -> bool {
    matches!(&node.data, YamlData::Representation(r, ScalarStyle::Plain, None) if r == "<<")
}

/// Whether a node is the plain or quoted string `s`.
fn is_string(node: &MarkedYaml, want: impl Fn(&str) -> bool) -> bool {
    matches!(resolve(node).ok().flatten().as_deref(), Some(Scalar::String(s)) if want(s))
}

fn syntax_error(node: &MarkedYaml, message: &str) -> SyntaxError {
    SyntaxError {
        pos_line: node.span.start.line(),
        pos_col: node.span.start.col() + 1,
        message: message.to_string(),
        no_json: false,
    }
}

fn convert(
    text: &str,
    node: &MarkedYaml,
    ptr: &str,
    positions: &mut HashMap<String, Pos>,
    warnings: &mut Vec<(Pos, String)>,
) -> Result<Value, SyntaxError> {
    Ok(match &node.data {
        // JSON has no infinity or NaN. kubectl's YAML reader (go-yaml v2) reads `.inf` and
        // `.nan` as such floats, which json.Marshal then refuses ("unsupported value"); a
        // number beyond float64's range (`1e400`) it keeps as the string written. Converted to
        // null, either would be judged as an unset field.
        YamlData::Value(_) | YamlData::Representation(..) => {
            let Some(scalar) = resolve(node).map_err(|e| syntax_error(node, &e))? else {
                return Ok(Value::Null);
            };
            let f = match scalar.as_ref() {
                Scalar::FloatingPoint(f) if !f.into_inner().is_finite() => *f,
                s => return Ok(scalar_to_json(s)),
            };
            let written = scalar_text(text, node);
            match written {
                Some(w) if !is_inf_or_nan(&w) => Value::String(w),
                _ => {
                    return Err(SyntaxError {
                        no_json: true,
                        ..syntax_error(
                            node,
                            &format!(
                                "{} is not a number JSON can carry: kubectl refuses it (json: unsupported value); write a finite number",
                                written.as_deref().unwrap_or(if f.into_inner().is_nan() { ".nan" } else { ".inf" })
                            ),
                        )
                    })
                }
            }
        }
        YamlData::Tagged(_, inner) => convert(text, inner, ptr, positions, warnings)?,
        YamlData::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let p = format!("{ptr}/{i}");
                positions.insert(p.clone(), pos(&item.span.start));
                out.push(convert(text, item, &p, positions, warnings)?);
            }
            Value::Array(out)
        }
        YamlData::Mapping(map) => {
            let mut out = Map::new();
            let mut written = std::collections::HashSet::new();
            for (k, v) in map {
                if is_merge_key(k) {
                    merge(text, v, ptr, positions, warnings, &mut out)?;
                    continue;
                }
                let key = key_string(k);
                // One key to kubectl, however written (`name`, `"name"`; `yes`, `true`): it
                // keeps the last value, as here.
                if !written.insert(key.clone()) {
                    warnings.push((pos(&k.span.start), duplicated(&key)));
                }
                let p = format!("{ptr}/{}", key.replace('~', "~0").replace('/', "~1"));
                positions.insert(p.clone(), pos(&k.span.start));
                let value = convert(text, v, &p, positions, warnings)?;
                out.insert(key, value);
            }
            Value::Object(out)
        }
        YamlData::Alias(_) | YamlData::BadValue => Value::Null,
    })
}

/// `<<: *base` or `<<: [*a, *b]`, as go-yaml v2 applies it: the merged keys are set where the
/// merge key stands (so later keys of the mapping override them), and of a list of mappings the
/// earlier ones take precedence.
fn merge(
    text: &str,
    node: &MarkedYaml,
    ptr: &str,
    positions: &mut HashMap<String, Pos>,
    warnings: &mut Vec<(Pos, String)>,
    out: &mut Map<String, Value>,
) -> Result<(), SyntaxError> {
    match &node.data {
        YamlData::Mapping(_) => {
            if let Value::Object(m) = convert(text, node, ptr, positions, warnings)? {
                out.extend(m);
            }
            Ok(())
        }
        YamlData::Sequence(items) => {
            for item in items.iter().rev() {
                if !matches!(item.data, YamlData::Mapping(_)) {
                    return Err(syntax_error(
                        item,
                        "map merge requires map or sequence of maps as the value",
                    ));
                }
                merge(text, item, ptr, positions, warnings, out)?;
            }
            Ok(())
        }
        _ => Err(syntax_error(
            node,
            "map merge requires map or sequence of maps as the value",
        )),
    }
}

/// A typed list's items' apiVersion and kind.
type ItemType = (String, String);

/// The items of a `kind: *List` document, which are read as objects of their own, and for a
/// typed list (`NamespaceList`) the apiVersion and kind of its items: the API server writes
/// them without (`kubectl get --raw`), and kubectl's decoder gives them the list's.
fn list_items<'a, 'y>(doc: &'a MarkedYaml<'y>) -> Option<(&'a [MarkedYaml<'y>], Option<ItemType>)> {
    let YamlData::Mapping(map) = &doc.data else {
        return None;
    };
    let field = |name: &str| {
        map.iter()
            .find(|(k, _)| is_string(k, |s| s == name))
            .map(|(_, v)| v)
    };
    let text = |name: &str| match resolve(field(name)?).ok().flatten().as_deref() {
        Some(Scalar::String(s)) => Some(s.to_string()),
        _ => None,
    };
    let kind = text("kind").filter(|k| k.ends_with("List"))?;
    let typed = match (kind.strip_suffix("List"), text("apiVersion")) {
        (Some(item), Some(api)) if !item.is_empty() => Some((api, item.to_string())),
        _ => None,
    };
    match field("items").map(|i| &i.data) {
        Some(YamlData::Sequence(items)) => Some((items, typed)),
        _ => None,
    }
}

/// A plain scalar's text as written (on one line), from its span.
fn scalar_text(text: &str, node: &MarkedYaml) -> Option<String> {
    let (start, end) = (&node.span.start, &node.span.end);
    if start.line() != end.line() {
        return None;
    }
    let written: String = chars_from(text, start.line(), start.col())?
        .take(end.col().checked_sub(start.col())?)
        .collect();
    (!written.is_empty()).then_some(written)
}

/// The YAML core schema's spellings of infinity and NaN, as go-yaml v2 resolves them.
fn is_inf_or_nan(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(s, ".nan" | ".NaN" | ".NAN")
}

/// The characters of the 1-based `line` from the 0-based character `col` on, as the parser's
/// markers count them.
fn chars_from(text: &str, line: usize, col: usize) -> Option<impl Iterator<Item = char> + '_> {
    Some(text.lines().nth(line.checked_sub(1)?)?.chars().skip(col))
}

/// The mapping key written at a 1-based line and column.
fn key_at(text: &str, line: usize, col: usize) -> Option<String> {
    let rest: String = chars_from(text, line, col.checked_sub(1)?)?.collect();
    let key = rest
        .split(':')
        .next()?
        .trim()
        .trim_matches(|c| c == '"' || c == '\'');
    (!key.is_empty()).then(|| key.to_string())
}

/// Where a YAML stream is cut into documents, a line at a time: before a `---` or `...` line.
/// YAML forbids those markers at the start of a line inside any scalar, so a cut never falls
/// inside a value; anchors do not cross documents either. Directives (`%YAML`) and comments
/// before `---` belong to the document it opens.
pub struct Cutter {
    lines: usize,
    prelude: bool,
}

impl Default for Cutter {
    fn default() -> Cutter {
        Cutter {
            lines: 0,
            prelude: true,
        }
    }
}

impl Cutter {
    /// Whether the document read so far ends before `line`.
    pub fn cut_before(&mut self, line: &str) -> bool {
        let bare = line.trim_end_matches(['\n', '\r']);
        let marker = |m: &str| {
            bare.strip_prefix(m)
                .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
        };
        let cut = self.lines > 0 && !self.prelude && (marker("---") || marker("..."));
        if cut {
            *self = Cutter::default();
        }
        self.prelude &= bare.trim().is_empty() || bare.starts_with(['%', '#']) || marker("...");
        self.lines += 1;
        cut
    }
}

/// Whether an object was read from the API server (`kubectl get -o yaml`, a dump, `audit`): it
/// has a `metadata.uid`, which only the API server assigns. Such an object is as stored, past
/// admission (a Pod's `matchLabelKeys` merged, a live binding).
pub fn from_api_server(v: &Value) -> bool {
    v["metadata"]["uid"].as_str().is_some_and(|u| !u.is_empty())
}

/// The documents of a text, each with the 0-based line it starts on.
pub fn documents(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut cutter = Cutter::default();
    let (mut start, mut start_line, mut at) = (0, 0, 0);
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if cutter.cut_before(l) {
            out.push((start_line, &text[start..at]));
            (start, start_line) = (at, n);
        }
        at += l.len();
    }
    if start < text.len() {
        out.push((start_line, &text[start..]));
    }
    out
}

/// Why a stream could not be read, and where (1-based; a read error is placed at the start of
/// the line it interrupted).
#[derive(Debug, PartialEq)]
pub struct ReadError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// The documents of a stream, read a line at a time: only one document's text is held. Input
/// that is not UTF-8 is an error at the first byte that is not.
pub fn read_documents(
    mut r: impl std::io::BufRead,
    mut each: impl FnMut(usize, &str),
) -> Result<(), ReadError> {
    let mut cutter = Cutter::default();
    let (mut doc, mut bytes) = (String::new(), Vec::new());
    let (mut start_line, mut n) = (0, 0);
    loop {
        bytes.clear();
        let read = r.read_until(b'\n', &mut bytes).map_err(|e| ReadError {
            line: n + 1,
            column: 1,
            message: format!("cannot read: {e}"),
        })?;
        if read == 0 {
            break;
        }
        let line = std::str::from_utf8(&bytes).map_err(|e| ReadError {
            line: n + 1,
            column: String::from_utf8_lossy(&bytes[..e.valid_up_to()])
                .chars()
                .count()
                + 1,
            message: "not UTF-8 text".to_string(),
        })?;
        if cutter.cut_before(line) {
            each(start_line, &doc);
            doc.clear();
            start_line = n;
        }
        doc.push_str(line);
        n += 1;
    }
    if !doc.is_empty() {
        each(start_line, &doc);
    }
    Ok(())
}

/// Reads every document of a file, one at a time (see [`parse_each`]); any syntax error fails
/// the whole file.
pub fn parse(text: &str) -> Result<Vec<Object>, SyntaxError> {
    let mut out = Vec::new();
    parse_each(text, |o| out.push(o))?;
    Ok(out)
}

/// Reads the documents of a file one after another and hands each object to `each`, so only
/// one document's tree is held at a time; positions are those in the whole file. A document
/// that is not valid YAML is skipped and the reading goes on; the first such error is returned.
pub fn parse_each(text: &str, mut each: impl FnMut(Object)) -> Result<(), SyntaxError> {
    let mut first_error = None;
    for (offset, doc) in documents(text) {
        if let Err(e) = parse_document_each(doc, offset, &mut each) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// One document that starts on 0-based line `offset` of its file, its objects handed to
/// `each` one at a time (positions are file lines). A document that starts with `{` is read as
/// kubectl's YAMLOrJSONDecoder (v1.33 and later) reads its input: JSON values one after
/// another (`jq -c '.items[]'`), each at its own line and column and only one held at a time,
/// where text that is not JSON after two or more values is an error; after a single value,
/// the rest is read as YAML from the next line.
pub fn parse_document_each(
    doc: &str,
    offset: usize,
    mut each: impl FnMut(Object),
) -> Result<(), SyntaxError> {
    if doc.trim_start().starts_with('{') {
        let mut stream =
            serde_json::Deserializer::from_str(doc).into_iter::<serde::de::IgnoredAny>();
        let first = match stream.next() {
            Some(Ok(_)) => stream.byte_offset(),
            _ => usize::MAX,
        };
        let second = first != usize::MAX && matches!(stream.next(), Some(Ok(_)));
        if second {
            return json_values(doc, offset, &mut each);
        }
        // One object and then more that is not JSON: kubectl (v1.33 and later) reads the
        // object as JSON and the rest, from the next line, as YAML.
        if first != usize::MAX && !doc[first..].trim().is_empty() {
            json_values(&doc[..first], offset, &mut each)?;
            let after = &doc[first..];
            let blank = after.len() - after.trim_start_matches([' ', '\t', '\r']).len();
            let rest = first + blank + usize::from(after[blank..].starts_with('\n'));
            let line = doc[..rest].matches('\n').count();
            let column = doc[..rest]
                .rsplit('\n')
                .next()
                .map_or(0, |l| l.chars().count());
            return parse_at(&doc[rest..], offset + line, column, &mut each);
        }
    }
    let objects = parse_document(doc).map_err(|mut e| {
        e.pos_line += offset;
        e
    })?;
    for mut o in objects {
        for p in o.positions.values_mut() {
            p.line += offset;
        }
        for (p, _) in &mut o.warnings {
            p.line += offset;
        }
        each(o);
    }
    Ok(())
}

/// A document of two or more JSON values ([`parse_document_each`]): each value read alone and
/// its positions moved to where it stands, the line and column carried forward from value to
/// value, so a stream is read in time linear in its size.
fn json_values(doc: &str, offset: usize, each: &mut impl FnMut(Object)) -> Result<(), SyntaxError> {
    let mut stream = serde_json::Deserializer::from_str(doc).into_iter::<serde::de::IgnoredAny>();
    // Where `at` is: its 0-based line in `doc` and its 0-based column in characters.
    let (mut at, mut line, mut column) = (0, 0, 0);
    let mut advance = |to: usize, at: &mut usize| {
        for c in doc[*at..to].chars() {
            if c == '\n' {
                line += 1;
                column = 0;
            } else {
                column += 1;
            }
        }
        *at = to;
        (line, column)
    };
    loop {
        let start = at + (doc[at..].len() - doc[at..].trim_start().len());
        let (l, c) = advance(start, &mut at);
        match stream.next() {
            None => return Ok(()),
            Some(Ok(_)) => {
                let end = stream.byte_offset();
                parse_at(&doc[start..end], offset + l, c, each)?;
                advance(end, &mut at);
            }
            Some(Err(e)) => {
                // At the start of the value that is not JSON; serde_json's message says where
                // in it.
                return Err(SyntaxError {
                    pos_line: offset + l + 1,
                    pos_col: c + 1,
                    message: format!(
                        "not valid JSON after the JSON object(s) before it (kubectl reads a file that starts with {{ as JSON values one after another): {e}"
                    ),
                    no_json: false,
                });
            }
        }
    }
}

/// The objects of `text`, which starts on 0-based line `line` of its file at 0-based column
/// `column`: its positions (and its error's) moved there.
fn parse_at(
    text: &str,
    line: usize,
    column: usize,
    each: &mut impl FnMut(Object),
) -> Result<(), SyntaxError> {
    let shift = |p: &mut Pos| {
        if p.line == 1 {
            p.column += column;
        }
        p.line += line;
    };
    let objects = parse_document(text).map_err(|e| {
        let mut at = Pos {
            line: e.pos_line,
            column: e.pos_col,
        };
        shift(&mut at);
        SyntaxError {
            pos_line: at.line,
            pos_col: at.column,
            ..e
        }
    })?;
    for mut o in objects {
        for p in o
            .positions
            .values_mut()
            .chain(o.warnings.iter_mut().map(|(p, _)| p))
        {
            shift(p);
        }
        each(o);
    }
    Ok(())
}

/// The YAML text's documents, their scalars as written ([`resolve`] reads them as kubectl does).
/// The loader refuses a key written twice the same way; [`convert`] compares them once resolved
/// too (`name` and `"name"`, or `yes` and `true`, are one key to kubectl).
fn load(text: &str, duplicates: bool) -> Result<Vec<MarkedYaml<'_>>, saphyr::ScanError> {
    let mut parser = saphyr_parser::Parser::new_from_str(text);
    let mut loader = saphyr::YamlLoader::<MarkedYaml>::default();
    loader.early_parse(false);
    loader.allow_duplicate_keys(duplicates);
    parser.load(&mut loader, true)?;
    if let Some(e) = loader.error() {
        return Err(e.clone());
    }
    Ok(loader.into_documents())
}

/// The warning for a key written twice in one mapping.
fn duplicated(key: &str) -> String {
    format!("duplicated key in mapping: {key:?}: kubectl keeps the last value, and the one before it is lost")
}

/// One document (or a file of several, as it is also used); `kind: List` documents are
/// expanded into their items, and lists among those into theirs. Empty documents (a lone `---`, comments only) are dropped. Each object's positions are
/// collected while it is read, so reading a List is linear in its size.
fn parse_document(text: &str) -> Result<Vec<Object>, SyntaxError> {
    let refused = |e: saphyr::ScanError| SyntaxError {
        pos_line: e.marker().line(),
        pos_col: e.marker().col() + 1,
        message: e.info().to_string(),
        no_json: false,
    };
    // A key written twice the same way: kubectl (go-yaml v2, not strict) keeps the last value,
    // so the document is read again that way, with a warning at the first such key (the loader
    // then says nothing of the others).
    let mut warnings = Vec::new();
    let docs = match load(text, false) {
        Err(e) if e.info().starts_with("duplicated key") => {
            let at = Pos {
                line: e.marker().line(),
                column: e.marker().col() + 1,
            };
            let key = key_at(text, at.line, at.column).unwrap_or_default();
            warnings.push((at, duplicated(&key)));
            load(text, true).map_err(refused)?
        }
        other => other.map_err(refused)?,
    };
    let mut out = Vec::new();
    let mut read =
        |node: &MarkedYaml, typed: Option<&(String, String)>| -> Result<(), SyntaxError> {
            let mut positions = HashMap::new();
            positions.insert(String::new(), pos(&node.span.start));
            let mut value = convert(text, node, "", &mut positions, &mut warnings)?;
            if let (Some((api, kind)), Some(o)) = (typed, value.as_object_mut()) {
                if !o.contains_key("kind") && !o.contains_key("apiVersion") {
                    o.insert("apiVersion".into(), Value::String(api.clone()));
                    o.insert("kind".into(), Value::String(kind.clone()));
                }
            }
            if !value.is_null() {
                let warnings = std::mem::take(&mut warnings);
                out.push(Object {
                    value,
                    positions,
                    warnings,
                });
            }
            Ok(())
        };
    // Lists inside lists are expanded too, in kubectl's FlattenListVisitor's order: a queue,
    // so a list's own objects come before those of the lists it holds.
    let mut queue = std::collections::VecDeque::new();
    for doc in &docs {
        queue.push_back((doc, None));
        while let Some((node, typed)) = queue.pop_front() {
            match list_items(node) {
                Some((items, of)) => queue.extend(items.iter().map(|i| (i, of.clone()))),
                None => read(node, typed.as_ref())?,
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A typed list's items without apiVersion and kind (`kubectl get --raw`) are of the list's
    /// kind, as kubectl's decoder makes them; a `kind: List`'s are not, nor is an item that
    /// says either.
    #[test]
    fn typed_list_items_take_the_lists_kind() {
        let text = r#"{"kind": "NamespaceList", "apiVersion": "v1", "metadata": {}, "items": [
            {"metadata": {"name": "a"}},
            {"kind": "Pod", "metadata": {"name": "b"}},
            {"kind": "List", "apiVersion": "v1", "items": [{"metadata": {"name": "c"}}]}]}"#;
        let kinds: Vec<(String, String)> = parse(text)
            .unwrap()
            .iter()
            .map(|o| {
                let s = |f: &str| o.value[f].as_str().unwrap_or("-").to_string();
                (s("apiVersion"), s("kind"))
            })
            .collect();
        let k = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(kinds, [k("v1", "Namespace"), k("-", "Pod"), k("-", "-")]);
    }

    /// A stream of JSON objects (`jq -c` output) is read as kubectl reads it, each object at
    /// its own line and column; where the stream stops being JSON, the error is there. One
    /// object alone, and a YAML flow mapping, are read as before.
    #[test]
    fn json_streams_are_read_value_by_value() {
        let text = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}\n  {\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\"}} {\"kind\":\"Pod\",\n\"metadata\":{\"name\":\"c\"}}\n";
        let objects = parse(text).unwrap();
        let names: Vec<&str> = objects
            .iter()
            .map(|o| o.value["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        let starts: Vec<(usize, usize)> = objects
            .iter()
            .map(|o| (o.start().line, o.start().column))
            .collect();
        assert_eq!(starts, [(1, 1), (2, 3), (2, 42)]);
        assert_eq!(
            objects[2].positions["/metadata"],
            Pos { line: 3, column: 1 }
        );
        // Broken after two objects: the error is where the third goes wrong, and the objects
        // before it are read.
        let mut read = 0;
        let err = parse_each(
            "{\"kind\":\"Pod\"}\n{\"kind\":\"Pod\"}\n{\"kind\": [}\n",
            |_| read += 1,
        )
        .unwrap_err();
        assert_eq!((read, err.pos_line, err.pos_col), (2, 3, 1));
        assert!(
            err.message
                .starts_with("not valid JSON after the JSON object(s) before it"),
            "{}",
            err.message
        );
        // After two JSON objects, YAML is not read either (kubectl does not switch back).
        let err = parse("{\"kind\":\"Pod\"}\n{\"kind\":\"Pod\"}\nfoo: bar\n").unwrap_err();
        assert_eq!((err.pos_line, err.pos_col), (3, 1));
        // One JSON object and then YAML: both read, as kubectl v1.33+ reads them (the object
        // as JSON, the rest as YAML); an error in the rest is where it stands.
        let objects = parse("{\"kind\":\"Pod\"}\nkind: Service\nmetadata: {name: s}\n").unwrap();
        let kinds: Vec<&str> = objects
            .iter()
            .map(|o| o.value["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["Pod", "Service"]);
        assert_eq!(
            objects[1].position(&FieldPath::parse("metadata.name")),
            Pos {
                line: 3,
                column: 12
            }
        );
        let mut read = 0;
        let err = parse_each("{\"kind\":\"Pod\"}\nfoo: [bar\n", |_| read += 1).unwrap_err();
        assert_eq!((read, err.pos_line), (1, 3), "{err:?}");
        // A long stream on one line is read value by value, each at its column.
        let line: String = (0..2000)
            .map(|i| format!("{{\"kind\":\"Pod\",\"n\":{i}}}"))
            .collect();
        let objects = parse(&line).unwrap();
        assert_eq!(objects.len(), 2000);
        let last = line.rfind('{').unwrap() + 1;
        assert_eq!(
            objects[1999].start(),
            Pos {
                line: 1,
                column: last
            }
        );
        // Not a stream: one object, a YAML flow mapping, with a second document after `---`.
        assert_eq!(parse("{\"kind\": \"Pod\"}\n").unwrap().len(), 1);
        assert_eq!(
            parse("{kind: Pod, metadata: {name: x}}\n---\n{kind: Pod}\n")
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn positions_point_at_keys() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector: {}\n        topologyKey: zone\n";
        // ("----" is not a marker; as YAML that line would be an error.)
        let objs = parse(&text.replace("----\n", "")).unwrap();
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
        // ("----" is not a marker; as YAML that line would be an error.)
        let objs = parse(&text.replace("----\n", "")).unwrap();
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
    fn lists_inside_lists_are_expanded() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - apiVersion: v1\n    kind: Pod\n    metadata: {name: inner}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: outer}\n";
        let objs = parse(text).unwrap();
        let names: Vec<_> = objs
            .iter()
            .map(|o| o.value["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["outer", "inner"], "kubectl's order");
        assert_eq!(
            objs[1].position(&FieldPath::new("metadata.name")).line,
            9,
            "positions stay those of the file"
        );
    }

    /// Scalars as kubectl reads them (go-yaml v2, YAML 1.1): `on`, `yes`, `n` are booleans, an
    /// integer may have `_` between digits, a leading `0` is octal and `0b` binary; quoted and
    /// block scalars, tagged `!!str` ones and timestamps are strings; so is a key, as
    /// sigs.k8s.io/yaml writes a boolean key (`y:` is `"true"`).
    #[test]
    fn scalars_are_read_as_kubectl_reads_them() {
        let v = &parse(concat!(
            "a: yes\nb: No\nc: 'on'\nd: n\ne: 1_000\nf: 017\ng: 0b101\nh: 08\ni: 0x1F\n",
            "j: -0o17\nk: 2001-12-14\nl: !!str 12\nm: |\n  yes\nn0: \"off\"\no: 9223372036854775808\n",
            "p: .5\nq: +3\nr: 1:20\ny: x\n~: z\n",
            "t1: !!int 017\nt2: !!bool yes\nt3: !!int \"12\"\nt4: !custom 12\nt5: ! 12\nt6: !!str 12\nt7: !!float 1\n"
        ))
        .unwrap()[0]
            .value;
        let want = serde_json::json!({
            "a": true, "b": false, "c": "on", "d": false, "e": 1000, "f": 15, "g": 5, "h": 8,
            "i": 31, "j": -15, "k": "2001-12-14", "l": "12", "m": "yes\n", "n0": "off",
            "o": 9223372036854775808.0_f64, "p": 0.5, "q": 3, "r": "1:20", "true": "x", "null": "z",
            "t1": 15, "t2": true, "t3": 12, "t4": "12", "t5": "12", "t6": "12", "t7": 1
        });
        assert_eq!(v, &want);
        // A tag the text does not fit is go-yaml's error, where it stands.
        let err = parse("a: 1\nb: !!int abc\n").unwrap_err();
        assert_eq!(err.message, "cannot decode !!str `abc` as a !!int");
        assert_eq!((err.pos_line, err.pos_col), (2, 4));
    }

    /// Integral floats as kubectl sends them, and the plain scalars both YAML versions agree on.
    #[test]
    fn integral_floats_and_plain_scalars() {
        let objs =
            parse("a: 1\nb: true\nc: '1'\nd: null\ne: 1.5\nf: on\ng: 1.0\nh: 1e3\ni: -2.0\n")
                .unwrap();
        let v = &objs[0].value;
        // Integral floats as kubectl sends them (Go's json.Marshal of a float64).
        assert_eq!(v["g"], serde_json::json!(1));
        assert_eq!(v["h"], serde_json::json!(1000));
        assert_eq!(v["i"], serde_json::json!(-2));
        assert_eq!(v["a"], 1);
        assert_eq!(v["b"], true);
        assert_eq!(v["c"], "1");
        assert!(v["d"].is_null());
        assert_eq!(v["e"], 1.5);
        assert_eq!(v["f"], true);
    }

    #[test]
    fn infinity_and_nan_are_errors_at_their_place() {
        for (text, shown) in [
            ("a:\n  b: .inf\n", ".inf"),
            ("a:\n  b: -.Inf\n", "-.Inf"),
            ("a:\n  b: +.INF\n", "+.INF"),
            ("a:\n  b: .nan\n", ".nan"),
            ("a: {x: 1,\n  b: .NaN}\n", ".NaN"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!((e.pos_line, e.pos_col, e.no_json), (2, 6, true), "{text}");
            assert!(
                e.message
                    .starts_with(&format!("{shown} is not a number JSON can carry")),
                "{text}: {}",
                e.message
            );
        }
    }

    /// A number beyond float64's range is the string written, as go-yaml v2 reads it (its
    /// float parse fails, so the scalar resolves as a string): kubectl sends it as such.
    #[test]
    fn numbers_beyond_float64_are_the_strings_written() {
        let v = &parse("a: 1e400\nb: [-2E+999]\nc: 1.7976931348623157e308\n").unwrap()[0].value;
        assert_eq!(v["a"], "1e400");
        assert_eq!(v["b"][0], "-2E+999");
        assert_eq!(
            v["c"], 1.7976931348623157e308,
            "the largest finite float is a number"
        );
    }

    /// `<<` as kubectl's YAML reader applies it: merged keys where the merge key stands, later
    /// keys override them, and of a list the earlier mappings win.
    #[test]
    fn merge_keys_are_applied() {
        let text = "base: &b\n  a: 1\n  b: 2\nextra: &e\n  a: 9\n  c: 4\nx:\n  <<: *b\n  b: 3\nw:\n  <<: [*b, *e]\nz:\n  b: 0\n  <<: *b\n";
        let v = &parse(text).unwrap()[0].value;
        assert_eq!(v["x"], serde_json::json!({"a": 1, "b": 3}));
        assert_eq!(v["w"], serde_json::json!({"a": 1, "b": 2, "c": 4}));
        assert_eq!(v["z"], serde_json::json!({"a": 1, "b": 2}));
        for bad in ["a: &s 1\nb:\n  <<: *s\n", "b:\n  <<: [1]\n"] {
            let err = parse(bad).unwrap_err();
            assert_eq!(
                err.message,
                "map merge requires map or sequence of maps as the value"
            );
        }
    }

    #[test]
    fn documents_are_cut_at_markers_only() {
        let text = "a: 1\n---\nb: |\n  ---not a marker\n   --- indented\n--- # c\nc: 3\n...\n---\nd: 4\n----\n...\n%YAML 1.2\n# x\n---\ne: 5\n";
        let docs = documents(text);
        assert_eq!(
            docs,
            vec![
                (0, "a: 1\n"),
                (1, "---\nb: |\n  ---not a marker\n   --- indented\n"),
                (5, "--- # c\nc: 3\n"),
                (7, "...\n---\nd: 4\n----\n"),
                (11, "...\n%YAML 1.2\n# x\n---\ne: 5\n"),
            ]
        );
        assert_eq!(docs.iter().map(|(_, d)| *d).collect::<String>(), text);
        // Read from a stream, line by line, the documents are the same.
        let mut streamed = Vec::new();
        read_documents(text.as_bytes(), |n, d| streamed.push((n, d.to_string()))).unwrap();
        let want: Vec<(usize, String)> = docs.iter().map(|(n, d)| (*n, d.to_string())).collect();
        assert_eq!(streamed, want);
        assert_eq!(
            read_documents(&b"a: 1\nb: \xc3\xa9\xff\n"[..], |_, _| {}).unwrap_err(),
            ReadError {
                line: 2,
                column: 5,
                message: "not UTF-8 text".into()
            }
        );
        // ("----" is not a marker; as YAML that line would be an error.)
        let objs = parse(&text.replace("----\n", "")).unwrap();
        assert_eq!(objs.len(), 5);
        assert_eq!(objs[3].value["d"], 4);
        assert_eq!(
            objs[2].position(&FieldPath::new("c")),
            Pos { line: 7, column: 1 }
        );
        // A broken document does not hide the ones after it; its error has the file's line.
        let mut seen = Vec::new();
        let err = parse_each("a: 1\n---\nb: [1\n---\nc: 3\n", |o| seen.push(o.value)).unwrap_err();
        assert_eq!(
            seen,
            vec![serde_json::json!({"a": 1}), serde_json::json!({"c": 3})]
        );
        assert!(err.pos_line >= 3, "{err:?}");
    }

    /// A key written twice is kubectl's last value, with a warning at the second: go-yaml v2
    /// (not strict) keeps the last value, and the apiserver stores the object. Written another
    /// way, it is the same key to kubectl.
    #[test]
    fn duplicate_keys_are_named() {
        let objects =
            parse("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nmetadata: {name: q}\n").unwrap();
        assert_eq!(objects[0].value["metadata"]["name"], "q");
        assert_eq!(
            objects[0].warnings,
            [(
                Pos { line: 4, column: 1 },
                "duplicated key in mapping: \"metadata\": kubectl keeps the last value, and the one before it is lost".to_string()
            )]
        );
        for (text, key, at, value) in [
            (
                "kind: Pod\nmetadata: {name: p}\n\"metadata\": {name: q}\n",
                "metadata",
                (3, 1),
                serde_json::json!({"name": "q"}),
            ),
            (
                "a: {yes: 1, true: 2}\n",
                "true",
                (1, 13),
                serde_json::json!(2),
            ),
            ("a: {1: u, 0x1: w}\n", "1", (1, 11), serde_json::json!("w")),
        ] {
            let objects = parse(text).unwrap();
            let (pos, message) = &objects[0].warnings[0];
            assert!(
                message.starts_with(&format!("duplicated key in mapping: {key:?}: ")),
                "{text}: {message}"
            );
            assert_eq!((pos.line, pos.column), at, "{text}");
            let first = objects[0]
                .value
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .clone();
            let got = if first == "a" {
                objects[0].value["a"][key].clone()
            } else {
                objects[0].value[key].clone()
            };
            assert_eq!(got, value, "{text}");
        }
    }

    #[test]
    fn syntax_errors_have_positions() {
        let err = parse("a: [1, 2\nb: c\n").unwrap_err();
        assert!(err.pos_line >= 1 && !err.message.is_empty(), "{err:?}");
        let err = parse("key: value\n  bad: indent\n").unwrap_err();
        assert_eq!(err.pos_line, 2, "{err:?}");
    }
}
