//! The apiserver's `ValidatePodSpec`, which Kruise runs on a WorkloadSpread subset's patched
//! pod template (here, not in `k8s`, because it compares quantities with the core's parser),
//! for the parts a pod template's author gets wrong: volumes, containers (names, images, ports,
//! environment variables' names and sources, volume mounts, pull and termination message
//! policies, requests against limits), restart and DNS policies, the node selector, node
//! affinity's required terms, tolerations and the DNS-label and subdomain fields. It reads the
//! spec as JSON with Go's zero values for what is missing, as the apiserver sees a spec after
//! defaulting (absent policies are the defaults and pass), and reports with the apiserver's
//! field paths and messages under `path`. Not covered: security contexts, probes, resource
//! claims, DNS config, readiness gates, topology spread constraints and pod (anti-)affinity.

use std::collections::{BTreeMap, HashSet};

use serde_json::{json, Value};

use crate::core::resources::scaled;
use crate::k8s::fieldpath::{FieldError, FieldPath};
use crate::k8s::validation::{
    dns1123_subdomain_errors, is_dns1123_label, qualified_name_errors, validate_labels,
    validate_term, validate_toleration, DNS1123_LABEL_FMT,
};

const ENV_VAR_NAME_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `ValidateDNS1123Label`.
pub fn dns1123_label(value: &str, path: &FieldPath) -> Vec<FieldError> {
    let mut out = Vec::new();
    if value.len() > 63 {
        out.push(FieldError::invalid(
            path.clone(),
            json!(value),
            "must be no more than 63 characters",
        ));
    }
    if !is_dns1123_label(value) {
        out.push(FieldError::invalid(path.clone(), json!(value), format!("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{DNS1123_LABEL_FMT}')")));
    }
    out
}

/// `ValidateDNS1123Subdomain` (service account and priority class names).
fn dns1123_subdomain(value: &str, path: &FieldPath) -> Vec<FieldError> {
    dns1123_subdomain_errors(value)
        .into_iter()
        .map(|m| FieldError::invalid(path.clone(), json!(value), m))
        .collect()
}

/// `ValidatePodSpec` as described in the module's documentation.
pub fn validate_pod_spec(spec: &Value, path: &FieldPath) -> Vec<FieldError> {
    let mut out = Vec::new();
    let volumes = validate_volumes(list(spec, "volumes"), &path.child("volumes"), &mut out);
    let containers = list(spec, "containers");
    let cpath = path.child("containers");
    if containers.is_empty() {
        out.push(FieldError::required(cpath.clone(), ""));
    }
    let mut names = HashSet::new();
    for (i, c) in containers.iter().enumerate() {
        validate_container(c, &volumes, &cpath.index(i), &mut names, &mut out);
    }
    let ipath = path.child("initContainers");
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        let p = ipath.index(i);
        validate_container(c, &volumes, &p, &mut names, &mut out);
        if let Some(r) = c.get("restartPolicy").and_then(Value::as_str) {
            if r != "Always" {
                out.push(FieldError::not_supported(
                    p.child("restartPolicy"),
                    json!(r),
                    &["Always"],
                ));
            }
        }
    }
    one_of(
        spec,
        "restartPolicy",
        &["Always", "OnFailure", "Never"],
        path,
        &mut out,
    );
    one_of(
        spec,
        "dnsPolicy",
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        path,
        &mut out,
    );
    if let Ok(sel) =
        serde_json::from_value::<BTreeMap<String, String>>(spec["nodeSelector"].clone())
    {
        out.extend(validate_labels(&sel, &path.child("nodeSelector")));
    }
    let terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array();
    let tpath = path
        .child("affinity")
        .child("nodeAffinity")
        .child("requiredDuringSchedulingIgnoredDuringExecution")
        .child("nodeSelectorTerms");
    for (i, t) in terms.map(Vec::as_slice).unwrap_or(&[]).iter().enumerate() {
        if let Ok(term) = serde_json::from_value(t.clone()) {
            // Required node affinity's values are label values to Kruise's pod validation too.
            out.extend(validate_term(&term, &tpath.index(i), true));
        }
    }
    let sa = str_of(spec, "serviceAccountName");
    if !sa.is_empty() {
        out.extend(dns1123_subdomain(sa, &path.child("serviceAccountName")));
    }
    if let Some(d) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        if !(1..=i64::from(i32::MAX)).contains(&d) {
            out.push(FieldError::invalid(
                path.child("activeDeadlineSeconds"),
                json!(d),
                "must be between 1 and 2147483647, inclusive",
            ));
        }
    }
    for field in ["hostname", "subdomain"] {
        let v = str_of(spec, field);
        if !v.is_empty() {
            out.extend(dns1123_label(v, &path.child(field)));
        }
    }
    let tolpath = path.child("tolerations");
    for (i, t) in list(spec, "tolerations").iter().enumerate() {
        if let Ok(t) = serde_json::from_value(t.clone()) {
            out.extend(validate_toleration(&t, &tolpath.index(i)));
        }
    }
    let pc = str_of(spec, "priorityClassName");
    if !pc.is_empty() {
        out.extend(dns1123_subdomain(pc, &path.child("priorityClassName")));
    }
    out
}

/// A defaulted enum field: absent or empty is the default; anything else must be supported.
fn one_of(
    v: &Value,
    key: &'static str,
    supported: &[&str],
    path: &FieldPath,
    out: &mut Vec<FieldError>,
) {
    let value = str_of(v, key);
    if !value.is_empty() && !supported.contains(&value) {
        out.push(FieldError::not_supported(
            path.child(key),
            json!(value),
            supported,
        ));
    }
}

/// `ValidateVolumes`: the names the containers may mount.
fn validate_volumes(
    volumes: &[Value],
    path: &FieldPath,
    out: &mut Vec<FieldError>,
) -> HashSet<String> {
    let mut names = HashSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let p = path.index(i);
        let name = str_of(v, "name");
        let sources: Vec<&String> = v
            .as_object()
            .map(|m| m.keys().filter(|k| *k != "name").collect())
            .unwrap_or_default();
        if sources.is_empty() {
            out.push(FieldError::required(
                p.clone(),
                "must specify a volume type",
            ));
        }
        if let Some(second) = sources.get(1) {
            out.push(FieldError::forbidden(
                FieldPath::parse(&format!("{p}.{second}")),
                "may not specify more than 1 volume type",
            ));
        }
        let np = p.child("name");
        if name.is_empty() {
            out.push(FieldError::required(np.clone(), ""));
        } else {
            out.extend(dns1123_label(name, &np));
        }
        if !names.insert(name.to_string()) {
            out.push(FieldError::duplicate(np, json!(name)));
        }
    }
    names
}

/// `validateContainerCommon` and the name's uniqueness among all containers of the pod.
fn validate_container(
    c: &Value,
    volumes: &HashSet<String>,
    p: &FieldPath,
    names: &mut HashSet<String>,
    out: &mut Vec<FieldError>,
) {
    let name = str_of(c, "name");
    let np = p.child("name");
    if name.is_empty() {
        out.push(FieldError::required(np.clone(), ""));
    } else {
        out.extend(dns1123_label(name, &np));
    }
    if str_of(c, "image").is_empty() {
        out.push(FieldError::required(p.child("image"), ""));
    }
    validate_ports(list(c, "ports"), &p.child("ports"), out);
    validate_env(list(c, "env"), &p.child("env"), out);
    validate_mounts(
        list(c, "volumeMounts"),
        volumes,
        &p.child("volumeMounts"),
        out,
    );
    one_of(
        c,
        "imagePullPolicy",
        &["Always", "IfNotPresent", "Never"],
        p,
        out,
    );
    one_of(
        c,
        "terminationMessagePolicy",
        &["File", "FallbackToLogsOnError"],
        p,
        out,
    );
    validate_requests(&c["resources"], &p.child("resources"), out);
    if !names.insert(name.to_string()) {
        out.push(FieldError::duplicate(np, json!(name)));
    }
}

/// `IsValidPortName` (IANA_SVC_NAME).
fn port_name_errors(name: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen");
    }
    errs
}

fn validate_ports(ports: &[Value], path: &FieldPath, out: &mut Vec<FieldError>) {
    const RANGE: &str = "must be between 1 and 65535, inclusive";
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        let name = str_of(port, "name");
        if !name.is_empty() {
            let errs = port_name_errors(name);
            if !errs.is_empty() {
                for e in errs {
                    out.push(FieldError::invalid(p.child("name"), json!(name), e));
                }
            } else if !names.insert(name) {
                out.push(FieldError::duplicate(p.child("name"), json!(name)));
            }
        }
        match port
            .get("containerPort")
            .and_then(Value::as_i64)
            .unwrap_or(0)
        {
            0 => out.push(FieldError::required(p.child("containerPort"), "")),
            n if !(1..=65535).contains(&n) => out.push(FieldError::invalid(
                p.child("containerPort"),
                json!(n),
                RANGE,
            )),
            _ => {}
        }
        let host = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
        if host != 0 && !(1..=65535).contains(&host) {
            out.push(FieldError::invalid(p.child("hostPort"), json!(host), RANGE));
        }
        one_of(port, "protocol", &["SCTP", "TCP", "UDP"], &p, out);
    }
}

/// `validateEnv` with `IsEnvVarName`, as Kruise's pod validation options leave it.
fn validate_env(env: &[Value], path: &FieldPath, out: &mut Vec<FieldError>) {
    for (i, e) in env.iter().enumerate() {
        let np = path.index(i).child("name");
        let name = str_of(e, "name");
        if name.is_empty() {
            out.push(FieldError::required(np.clone(), ""));
        }
        let mut chars = name.chars();
        let well_formed = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '-' | '.' | '_'))
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
        if !well_formed {
            out.push(FieldError::invalid(np.clone(), json!(name), format!("a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '{ENV_VAR_NAME_FMT}')")));
        }
        if let Some(m) = chdir_prefix(name) {
            out.push(FieldError::invalid(np, json!(name), m));
        }
        if let Some(from) = e.get("valueFrom").filter(|v| !v.is_null()) {
            validate_value_from(
                from,
                str_of(e, "value"),
                &path.index(i).child("valueFrom"),
                out,
            );
        }
    }
}

/// `validateEnvVarValueFrom`: exactly one source, and no `value` beside it.
fn validate_value_from(from: &Value, value: &str, path: &FieldPath, out: &mut Vec<FieldError>) {
    let source = |key: &str| from.get(key).filter(|v| !v.is_null());
    let mut sources = 0;
    if let Some(f) = source("fieldRef") {
        sources += 1;
        validate_field_ref(f, &path.child("fieldRef"), out);
    }
    if let Some(r) = source("resourceFieldRef") {
        sources += 1;
        validate_resource_field_ref(r, &path.child("resourceFieldRef"), out);
    }
    if let Some(k) = source("configMapKeyRef") {
        sources += 1;
        validate_key_selector(k, &path.child("configMapKeyRef"), out);
    }
    if let Some(k) = source("secretKeyRef") {
        sources += 1;
        validate_key_selector(k, &path.child("secretKeyRef"), out);
    }
    let problem = match sources {
        0 => Some("must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"),
        _ if !value.is_empty() => Some("may not be specified when `value` is not empty"),
        1 => None,
        _ => Some("may not have more than one field specified at a time"),
    };
    if let Some(p) = problem {
        out.push(FieldError::invalid(path.clone(), json!(""), p));
    }
}

/// The pod fields an environment variable may read (`validEnvDownwardAPIFieldPathExpressions`),
/// sorted as the apiserver lists them.
const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// `validateObjectFieldSelector` for an environment variable. A missing `apiVersion` is `v1`,
/// as defaulting (which Kruise runs before validating) makes it.
fn validate_field_ref(f: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    let field_path = str_of(f, "fieldPath");
    if field_path.is_empty() {
        out.push(FieldError::required(path.child("fieldPath"), ""));
        return;
    }
    let version = match str_of(f, "apiVersion") {
        "" => "v1",
        v => v,
    };
    // `ConvertDownwardAPIFieldLabel`, then the subscript's or the path's own check.
    let subscripted = field_path
        .strip_suffix("']")
        .and_then(|s| s.split_once("['"))
        .filter(|(p, _)| !p.is_empty());
    let converted = if version != "v1" {
        Err(format!("unsupported pod version: {version}"))
    } else {
        match subscripted {
            Some(("metadata.annotations" | "metadata.labels", _)) => Ok(field_path),
            Some(_) => Err(format!(
                "field label does not support subscript: {field_path}"
            )),
            None => match field_path {
                "spec.host" => Ok("spec.nodeName"),
                "metadata.annotations"
                | "metadata.labels"
                | "spec.restartPolicy"
                | "spec.schedulerName"
                | "status.phase" => Ok(field_path),
                p if ENV_FIELD_PATHS.contains(&p) => Ok(p),
                _ => Err(format!("field label not supported: {field_path}")),
            },
        }
    };
    let converted = match converted {
        Ok(c) => c,
        Err(e) => {
            out.push(FieldError::invalid(
                path.child("fieldPath"),
                json!(field_path),
                format!("error converting fieldPath: {e}"),
            ));
            return;
        }
    };
    match subscripted {
        Some((p, key)) => {
            let key = if p == "metadata.annotations" {
                key.to_lowercase()
            } else {
                key.to_string()
            };
            for m in qualified_name_errors(&key) {
                out.push(FieldError::invalid(path.clone(), json!(key), m));
            }
        }
        None if !ENV_FIELD_PATHS.contains(&converted) => out.push(FieldError::not_supported(
            path.child("fieldPath"),
            json!(converted),
            &ENV_FIELD_PATHS,
        )),
        None => {}
    }
}

/// The container resources an environment variable may read, sorted as the apiserver lists
/// them; `requests.hugepages-*` and `limits.hugepages-*` may be read too.
const ENV_RESOURCES: [&str; 6] = [
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `validateContainerResourceFieldSelector` with its divisor check, for an environment
/// variable (which needs no `containerName`).
fn validate_resource_field_ref(r: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    let resource = str_of(r, "resource");
    let hugepages =
        resource.starts_with("requests.hugepages-") || resource.starts_with("limits.hugepages-");
    if resource.is_empty() {
        out.push(FieldError::required(path.child("resource"), ""));
    } else if !ENV_RESOURCES.contains(&resource) && !hugepages {
        out.push(FieldError::not_supported(
            path.child("resource"),
            json!(resource),
            &ENV_RESOURCES,
        ));
    }
    let divisor = match r.get("divisor") {
        Some(Value::String(d)) => d.as_str(),
        _ => return,
    };
    // An unset (zero) divisor is not checked.
    if crate::core::resources::scaled(divisor, 3).is_none_or(|v| v == 0) {
        return;
    }
    let unit = crate::core::resources::unit_form(divisor);
    const SIZES: &str = "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the";
    let sized = unit.is_some_and(|u| u != "1m");
    let problem = match resource {
        "limits.cpu" | "requests.cpu" if !matches!(unit, Some("1m" | "1")) => {
            Some("only divisor's values 1m and 1 are supported with the cpu resource".to_string())
        }
        "limits.memory" | "requests.memory" if !sized => Some(format!("{SIZES} memory resource")),
        "limits.ephemeral-storage" | "requests.ephemeral-storage" if !sized => {
            Some(format!("{SIZES} local ephemeral storage resource"))
        }
        _ => None,
    };
    if let Some(p) = problem {
        out.push(FieldError::invalid(
            path.child("divisor"),
            json!(resource),
            p,
        ));
    }
    if hugepages && !sized {
        out.push(FieldError::invalid(
            path.child("divisor"),
            json!(resource),
            format!("{SIZES} hugepages resource"),
        ));
    }
}

/// `validateConfigMapKeySelector` and `validateSecretKeySelector`: a DNS subdomain name and a
/// config key (`IsConfigMapKey`).
fn validate_key_selector(k: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    out.extend(dns1123_subdomain(str_of(k, "name"), &path.child("name")));
    let key = str_of(k, "key");
    let kp = path.child("key");
    if key.is_empty() {
        out.push(FieldError::required(kp, ""));
        return;
    }
    if key.len() > 253 {
        out.push(FieldError::invalid(
            kp.clone(),
            json!(key),
            "must be no more than 253 characters",
        ));
    }
    if !key
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        out.push(FieldError::invalid(kp.clone(), json!(key), "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"));
    }
    if let Some(m) = chdir_prefix(key) {
        out.push(FieldError::invalid(kp, json!(key), m));
    }
}

/// `hasChDirPrefix`: environment variable names and config keys become file or variable names
/// that must not lead out of their directory.
fn chdir_prefix(value: &str) -> Option<&'static str> {
    match value {
        "." => Some("must not be '.'"),
        ".." => Some("must not be '..'"),
        v if v.starts_with("..") => Some("must not start with '..'"),
        _ => None,
    }
}

/// `ValidateVolumeMounts`: a mount names a volume of the pod. As the apiserver, a `subPath`
/// error is reported at `volumeMounts.subPath`, without the mount's index.
fn validate_mounts(
    mounts: &[Value],
    volumes: &HashSet<String>,
    path: &FieldPath,
    out: &mut Vec<FieldError>,
) {
    let mut points = HashSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let p = path.index(i);
        let name = str_of(m, "name");
        if name.is_empty() {
            out.push(FieldError::required(p.child("name"), ""));
        }
        if !volumes.contains(name) {
            out.push(FieldError::not_found(p.child("name"), json!(name)));
        }
        let at = str_of(m, "mountPath");
        if at.is_empty() {
            out.push(FieldError::required(p.child("mountPath"), ""));
        }
        if !points.insert(at) {
            out.push(FieldError::invalid(
                p.child("mountPath"),
                json!(at),
                "must be unique",
            ));
        }
        let sub = str_of(m, "subPath");
        if !sub.is_empty() {
            let sp = path.child("subPath");
            if sub.starts_with('/') {
                out.push(FieldError::invalid(
                    sp.clone(),
                    json!(sub),
                    "must be a relative path",
                ));
            }
            if sub.split('/').any(|part| part == "..") {
                out.push(FieldError::invalid(sp, json!(sub), "must not contain '..'"));
            }
        }
    }
}

/// A request may not exceed its limit (`ValidateContainerResourceRequirements`).
fn validate_requests(resources: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    let (Some(req), Some(lim)) = (
        resources["requests"].as_object(),
        resources["limits"].as_object(),
    ) else {
        return;
    };
    for (name, q) in req {
        let (Some(q), Some(l)) = (q.as_str(), lim.get(name).and_then(Value::as_str)) else {
            continue;
        };
        if let (Some(a), Some(b)) = (scaled(q, 3), scaled(l, 3)) {
            if a > b {
                out.push(FieldError::invalid(
                    path.child("requests").key(name),
                    json!(q),
                    format!("must be less than or equal to {name} limit of {l}"),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests;
