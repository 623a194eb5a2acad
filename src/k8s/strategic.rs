//! Kubernetes' strategic merge patch of a pod, as `strategicpatch.StrategicMergePatch(pod,
//! patch, &corev1.Pod{})` applies it (OpenKruise applies a WorkloadSpread subset's patch so):
//! maps merge and a null deletes; the pod's lists that declare a merge key merge by it and a
//! patched list's entries come first, as there; finalizers merge as a set; every other list is
//! replaced. The directives `$patch` (`replace`, `delete`), `$retainKeys`,
//! `$deleteFromPrimitiveList/` and `$setElementOrder/` do what they do there, and what makes
//! that function fail (an entry without its merge key, an unknown `$patch`) is an error here.

use serde_json::{Map, Value};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM: &str = "$deleteFromPrimitiveList/";
const ELEMENT_ORDER: &str = "$setElementOrder/";

/// Why a patch cannot be applied, in the words of `strategicpatch`'s errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchError(pub String);

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where in a pod a map is: what its lists' patch tags are (k8s.io/api/core/v1, v1.36).
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    Pod,
    Meta,
    Spec,
    Container,
    Other,
}

/// How a list merges.
#[derive(Clone, Copy)]
enum Strategy {
    Replace,
    /// Entries merge by this key.
    Key(&'static str),
    /// Scalars merge as a set.
    Set,
}

impl At {
    fn field(self, k: &str) -> At {
        match (self, k) {
            (At::Pod, "metadata") => At::Meta,
            (At::Pod, "spec") => At::Spec,
            _ => At::Other,
        }
    }

    /// The list `k` of this map, and where its entries are.
    fn list(self, k: &str) -> (Strategy, At) {
        let s = match (self, k) {
            (At::Meta, "finalizers") => Strategy::Set,
            (At::Meta, "ownerReferences") => Strategy::Key("uid"),
            (At::Spec, "containers" | "initContainers" | "ephemeralContainers") => {
                return (Strategy::Key("name"), At::Container);
            }
            (At::Spec, "volumes" | "imagePullSecrets" | "schedulingGates" | "resourceClaims") => {
                Strategy::Key("name")
            }
            (At::Spec, "hostAliases") => Strategy::Key("ip"),
            (At::Spec, "topologySpreadConstraints") => Strategy::Key("topologyKey"),
            (At::Container, "ports") => Strategy::Key("containerPort"),
            (At::Container, "env") => Strategy::Key("name"),
            (At::Container, "volumeMounts") => Strategy::Key("mountPath"),
            (At::Container, "volumeDevices") => Strategy::Key("devicePath"),
            _ => Strategy::Replace,
        };
        (s, At::Other)
    }
}

/// `patch` applied to `pod` (a pod or pod template as JSON). A patch that is not an object is
/// an error, as there.
pub fn apply(pod: &Value, patch: &Value) -> Result<Value, PatchError> {
    let Value::Object(p) = patch else {
        return Err(PatchError("the patch is not a JSON object".into()));
    };
    let original = pod.as_object().cloned().unwrap_or_default();
    merge_map(original, p.clone(), At::Pod).map(Value::Object)
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    at: At,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(d) = patch.remove(DIRECTIVE) {
        return match d.as_str() {
            Some("replace") => Ok(patch),
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_directive(&d)),
        };
    }
    if let Some(keep) = patch.remove(RETAIN_KEYS) {
        let Some(keep) = keep.as_array() else {
            return Err(PatchError(format!(
                "{RETAIN_KEYS} must be a list of field names"
            )));
        };
        let kept = |k: &str| keep.iter().any(|x| x.as_str() == Some(k));
        if let Some((k, _)) = patch.iter().find(|(k, v)| {
            !v.is_null() && !k.starts_with(DELETE_FROM) && !k.starts_with(ELEMENT_ORDER) && !kept(k)
        }) {
            return Err(PatchError(format!(
                "{k:?} is patched but not in {RETAIN_KEYS}"
            )));
        }
        original.retain(|k, _| kept(k));
    }
    // The lists whose order is set, merged first.
    let ordered: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in ordered {
        let order = patch.remove(&key).unwrap_or(Value::Null);
        let field = &key[ELEMENT_ORDER.len()..];
        let Some(order) = order.as_array() else {
            return Err(PatchError(format!("{key} must be a list")));
        };
        let (strategy, inner) = at.list(field);
        let from_patch = patch.remove(field);
        let server = match original.get(field) {
            Some(Value::Array(a)) => Some(a.clone()),
            _ => None,
        };
        let merged = match (server.clone(), from_patch) {
            (None, None) => continue,
            (None, Some(p)) => as_list(p)?,
            (Some(s), None) => s,
            (Some(s), Some(p)) => merge_list(s, as_list(p)?, strategy, inner, false)?,
        };
        let key = merge_key(strategy);
        let (listed, server_only): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|v| position(order, v, key).is_some());
        let listed = sorted_by(listed, order, key)?;
        let server = server.unwrap_or_default();
        let server_only = sorted_by(server_only, &server, key)?;
        original.insert(
            field.to_string(),
            Value::Array(interleave(server_only, listed, &server, key)),
        );
    }
    for (k, pv) in patch {
        let (k, deleting) = match k.strip_prefix(DELETE_FROM) {
            Some(field) => (field.to_string(), true),
            None => (k, false),
        };
        if pv.is_null() {
            original.remove(&k);
            continue;
        }
        let merged = match (original.remove(&k), pv) {
            (None, _) if deleting => continue,
            (None, mut pv) => {
                discard_nulls(&mut pv);
                pv
            }
            (Some(Value::Object(o)), Value::Object(p)) => {
                Value::Object(merge_map(o, p, at.field(&k))?)
            }
            (Some(Value::Array(o)), Value::Array(p)) => {
                let (strategy, inner) = at.list(&k);
                Value::Array(merge_list(o, p, strategy, inner, deleting)?)
            }
            (Some(o), _) if deleting => o,
            (Some(_), mut pv) => {
                discard_nulls(&mut pv);
                pv
            }
        };
        original.insert(k, merged);
    }
    Ok(original)
}

fn as_list(v: Value) -> Result<Vec<Value>, PatchError> {
    match v {
        Value::Array(a) => Ok(a),
        other => Err(PatchError(format!("expected a list, got {other}"))),
    }
}

fn bad_directive(d: &Value) -> PatchError {
    PatchError(format!(
        "unknown {DIRECTIVE} value {d}: replace or delete (merge is not allowed in a list)"
    ))
}

fn merge_key(s: Strategy) -> Option<&'static str> {
    match s {
        Strategy::Key(k) => Some(k),
        _ => None,
    }
}

/// A list field merged as its strategy says: a list without one is the patch's; else entries
/// by their merge key (or scalars as a set), then the patched entries placed before the
/// server's where the server's order does not say otherwise.
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    strategy: Strategy,
    inner: At,
    deleting: bool,
) -> Result<Vec<Value>, PatchError> {
    if let Strategy::Replace = strategy {
        return Ok(patch);
    }
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let maps = original
        .iter()
        .chain(&patch)
        .next()
        .is_some_and(Value::is_object);
    if original
        .iter()
        .chain(&patch)
        .any(|v| v.is_object() != maps || v.is_array())
    {
        return Err(PatchError(
            "a list's entries are not all of one kind (objects, or scalars)".into(),
        ));
    }
    let key = merge_key(strategy);
    let (server, patch, merged) = if !maps {
        if deleting {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(&patch) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        (original, patch, merged)
    } else {
        let Some(key) = key else {
            return Err(PatchError("cannot merge lists without merge key".into()));
        };
        let mut server = original;
        let mut plain = Vec::with_capacity(patch.len());
        let mut replace = false;
        for item in patch {
            match item.get(DIRECTIVE) {
                None => plain.push(item),
                Some(d) => match d.as_str() {
                    Some("delete") => {
                        let Some(value) = item.get(key) else {
                            return Err(no_merge_key(&item, key));
                        };
                        server.retain(|e| e.get(key) != Some(value));
                    }
                    Some("replace") => replace = true,
                    Some("merge") => {
                        return Err(PatchError(
                            "merging lists cannot yet be specified in the patch".into(),
                        ));
                    }
                    _ => return Err(bad_directive(d)),
                },
            }
        }
        if replace {
            server = plain;
            plain = Vec::new();
        }
        let mut merged = server.clone();
        for item in &plain {
            let Some(value) = item.get(key) else {
                return Err(no_merge_key(item, key));
            };
            match merged.iter().position(|e| e.get(key) == Some(value)) {
                Some(i) => {
                    let (Value::Object(o), Value::Object(p)) =
                        (std::mem::take(&mut merged[i]), item.clone())
                    else {
                        return Err(PatchError("a list's entries are not all objects".into()));
                    };
                    merged[i] = Value::Object(merge_map(o, p, inner)?);
                }
                None => merged.push(item.clone()),
            }
        }
        (server, plain, merged)
    };
    let (patched, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| position(&patch, v, key).is_some());
    let patched = sorted_by(patched, &patch, key)?;
    let server_only = sorted_by(server_only, &server, key)?;
    Ok(interleave(server_only, patched, &server, key))
}

fn no_merge_key(item: &Value, key: &str) -> PatchError {
    PatchError(format!("{item} does not contain declared merge key: {key}"))
}

/// Where `v` is in `list`: by its merge key, or itself for scalars.
fn position(list: &[Value], v: &Value, key: Option<&str>) -> Option<usize> {
    match key {
        Some(k) => {
            let want = v.get(k)?;
            list.iter().position(|e| e.get(k) == Some(want))
        }
        None => list.iter().position(|e| e == v),
    }
}

/// `items` in the order of `order` (those not in it keep their place after), stable. Every
/// entry of a list merged by key must have the key, as `strategicpatch` requires.
fn sorted_by(
    mut items: Vec<Value>,
    order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    if let Some(k) = key {
        let keyless = items
            .iter()
            .chain(order.iter().filter(|e| e.get(DIRECTIVE).is_none()))
            .find(|e| e.is_object() && e.get(k).is_none());
        if let Some(e) = keyless {
            return Err(no_merge_key(e, k));
        }
    }
    items.sort_by_key(|v| position(order, v, key).unwrap_or(usize::MAX));
    Ok(items)
}

/// `strategicpatch`'s `mergeSortedSlice`: the server-only entries (`left`) go in among the
/// patched ones (`right`) where the server's order puts them before one; a patched entry the
/// server does not have goes first.
fn interleave(
    left: Vec<Value>,
    right: Vec<Value>,
    server: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut l, mut r) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        let take_left = match (l.peek(), r.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(a), Some(b)) => matches!(
                (position(server, a, key), position(server, b, key)),
                (Some(i), Some(j)) if i < j
            ),
        };
        let next = if take_left { l.next() } else { r.next() };
        out.extend(next);
    }
    out
}

/// A value taken whole from the patch has its nulls left out, as `strategicpatch` does.
fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
