use super::*;
use serde_json::json;

fn pod(spec: Value) -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": spec})
}

/// Each patch against its pod, with what `strategicpatch.StrategicMergePatch(pod, patch,
/// &corev1.Pod{})` gives for it (the order of a patched list's entries included: the
/// Kubernetes documentation's "kubectl patch" task shows an added container first).
#[test]
fn patches_merge_as_strategicpatch_merges_them() {
    let c = |name: &str, image: &str| json!({"name": name, "image": image});
    let cases = [
        (
            "maps merge; a null deletes",
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"b": null, "c": "3"}}}),
            json!({"metadata": {"labels": {"a": "1", "c": "3"}}}),
        ),
        (
            "a container merges by name",
            pod(json!({"containers": [c("app", "x")]})),
            json!({"spec": {"containers": [{"name": "app", "image": "y"}]}}),
            pod(json!({"containers": [c("app", "y")]})),
        ),
        (
            "an added container comes first",
            pod(json!({"containers": [c("a", "x")]})),
            json!({"spec": {"containers": [c("b", "y")]}}),
            pod(json!({"containers": [c("b", "y"), c("a", "x")]})),
        ),
        (
            "the server's entries keep their place before the patched ones they preceded",
            pod(json!({"containers": [c("a", "1"), c("b", "1"), c("c", "1")]})),
            json!({"spec": {"containers": [{"name": "b", "image": "2"}, c("d", "2")]}}),
            pod(json!({"containers": [c("a", "1"), c("b", "2"), c("d", "2"), c("c", "1")]})),
        ),
        (
            "$patch: delete removes an entry",
            pod(json!({"containers": [c("a", "x"), c("b", "y")]})),
            json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}),
            pod(json!({"containers": [c("b", "y")]})),
        ),
        (
            "$patch: replace in a list replaces it",
            pod(json!({"containers": [c("a", "x"), c("b", "y")]})),
            json!({"spec": {"containers": [{"$patch": "replace"}, c("c", "z")]}}),
            pod(json!({"containers": [c("c", "z")]})),
        ),
        (
            "$patch: replace in a map replaces it",
            pod(json!({"affinity": {"nodeAffinity": {"x": 1}, "podAffinity": {"y": 2}}})),
            json!({"spec": {"affinity": {"$patch": "replace", "podAntiAffinity": {"z": 3}}}}),
            pod(json!({"affinity": {"podAntiAffinity": {"z": 3}}})),
        ),
        (
            "$patch: delete in a map empties it",
            pod(json!({"affinity": {"nodeAffinity": {"x": 1}}})),
            json!({"spec": {"affinity": {"$patch": "delete"}}}),
            pod(json!({"affinity": {}})),
        ),
        (
            "ports merge by containerPort, env by name, mounts by mountPath",
            pod(json!({"containers": [{"name": "a",
                "ports": [{"containerPort": 80, "name": "http"}],
                "env": [{"name": "X", "value": "1"}],
                "volumeMounts": [{"name": "v", "mountPath": "/data"}]}]})),
            json!({"spec": {"containers": [{"name": "a",
                "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 9090, "name": "metrics"}],
                "env": [{"name": "X", "value": "2"}],
                "volumeMounts": [{"name": "w", "mountPath": "/data"}]}]}}),
            pod(json!({"containers": [{"name": "a",
                "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 9090, "name": "metrics"}],
                "env": [{"name": "X", "value": "2"}],
                "volumeMounts": [{"name": "w", "mountPath": "/data"}]}]})),
        ),
        (
            "tolerations and a term's expressions have no merge key: replaced",
            pod(json!({"tolerations": [{"key": "a"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}]}}}})),
            json!({"spec": {"tolerations": [{"key": "b"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "Exists"}]}]}}}}}),
            pod(json!({"tolerations": [{"key": "b"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "Exists"}]}]}}}})),
        ),
        (
            "topology spread constraints merge by topologyKey",
            pod(json!({"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 1}]})),
            json!({"spec": {"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}]}}),
            pod(json!({"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}]})),
        ),
        (
            "finalizers merge as a set, the patch's first",
            json!({"metadata": {"finalizers": ["x"]}}),
            json!({"metadata": {"finalizers": ["y", "x"]}}),
            json!({"metadata": {"finalizers": ["y", "x"]}}),
        ),
        (
            "$deleteFromPrimitiveList removes scalars",
            json!({"metadata": {"finalizers": ["x", "y"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
            json!({"metadata": {"finalizers": ["y"]}}),
        ),
        (
            "$retainKeys keeps only the keys it lists",
            pod(json!({"volumes": [{"name": "v", "emptyDir": {}}]})),
            json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}}),
            pod(json!({"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]})),
        ),
        (
            "$setElementOrder orders the merged list",
            pod(json!({"containers": [c("a", "x"), c("b", "y")]})),
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "a", "image": "z"}]}}),
            pod(json!({"containers": [c("b", "y"), c("a", "z")]})),
        ),
        (
            "a value the pod lacks is taken without its nulls",
            pod(json!({})),
            json!({"spec": {"nodeSelector": {"a": "x", "b": null}}}),
            pod(json!({"nodeSelector": {"a": "x"}})),
        ),
    ];
    for (what, pod, patch, want) in cases {
        assert_eq!(apply(&pod, &patch), Ok(want), "{what}");
    }
}

/// What makes `StrategicMergePatch` fail is an error, in its words.
#[test]
fn patches_it_refuses_are_errors() {
    let cases = [
        (
            pod(json!({"containers": [{"name": "a"}]})),
            json!({"spec": {"containers": [{"image": "x"}]}}),
            "{\"image\":\"x\"} does not contain declared merge key: name",
        ),
        (
            pod(json!({"containers": [{"image": "x"}]})),
            json!({"spec": {"containers": [{"name": "a"}]}}),
            "{\"image\":\"x\"} does not contain declared merge key: name",
        ),
        (
            pod(json!({"containers": [{"name": "a"}]})),
            json!({"spec": {"containers": [{"$patch": "delete"}]}}),
            "{\"$patch\":\"delete\"} does not contain declared merge key: name",
        ),
        (
            pod(json!({"affinity": {}})),
            json!({"spec": {"affinity": {"$patch": "remove"}}}),
            "unknown $patch value \"remove\": replace or delete (merge is not allowed in a list)",
        ),
        (
            pod(json!({"containers": [{"name": "a"}]})),
            json!({"spec": {"containers": [{"$patch": "merge"}]}}),
            "merging lists cannot yet be specified in the patch",
        ),
        (
            pod(json!({"volumes": [{"name": "v", "emptyDir": {}}]})),
            json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "hostPath": {"path": "/x"}}]}}),
            "\"hostPath\" is patched but not in $retainKeys",
        ),
        (
            pod(json!({})),
            json!(["not", "an", "object"]),
            "the patch is not a JSON object",
        ),
    ];
    for (pod, patch, want) in cases {
        assert_eq!(apply(&pod, &patch), Err(PatchError(want.into())), "{patch}");
    }
}
