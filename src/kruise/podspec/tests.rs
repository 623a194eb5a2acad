use super::*;

fn errors(spec: Value) -> Vec<String> {
    validate_pod_spec(&spec, &FieldPath::new("spec.subsets[0].patch"))
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Each row: a pod spec and the apiserver's errors for it (from `ValidatePodSpec` and its
/// helpers in pkg/apis/core/validation/validation.go), in its order.
#[test]
fn pod_specs_are_judged_as_the_apiserver_judges_them() {
    let c = |extra: Value| {
        let mut c = json!({"name": "main", "image": "img:latest"});
        if let (Some(m), Some(x)) = (c.as_object_mut(), extra.as_object()) {
            m.extend(x.clone());
        }
        c
    };
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        ("a valid spec", json!({"containers": [c(json!({"volumeMounts": [{"name": "v", "mountPath": "/v"}]}))], "volumes": [{"name": "v", "emptyDir": {}}]}), vec![]),
        // Kruise's Test_validateWorkloadSpreadSubsets "bad cloneset": the mount's claim is gone.
        ("a mount of a missing volume", json!({"containers": [c(json!({"volumeMounts": [{"name": "vol-1--0", "mountPath": "/logs", "subPath": "logs"}]}))], "volumes": [{"name": "bad-boy", "persistentVolumeClaim": {"claimName": "bad-boy"}}]}),
         vec![r#"spec.subsets[0].patch.containers[0].volumeMounts[0].name: Not found: "vol-1--0""#]),
        ("no containers", json!({}), vec!["spec.subsets[0].patch.containers: Required value"]),
        ("container name and image", json!({"containers": [{"name": "Main"}, {"image": "x"}]}), vec![
            r#"spec.subsets[0].patch.containers[0].name: Invalid value: "Main": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#,
            "spec.subsets[0].patch.containers[0].image: Required value",
            "spec.subsets[0].patch.containers[1].name: Required value",
        ]),
        ("a name shared by an init container", json!({"containers": [c(json!({}))], "initContainers": [c(json!({"restartPolicy": "OnFailure"}))]}), vec![
            r#"spec.subsets[0].patch.initContainers[0].name: Duplicate value: "main""#,
            r#"spec.subsets[0].patch.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always""#,
        ]),
        ("volumes", json!({"containers": [c(json!({}))], "volumes": [{"name": "a"}, {"name": "a", "emptyDir": {}, "hostPath": {"path": "/"}}, {"name": "B_", "emptyDir": {}}]}), vec![
            "spec.subsets[0].patch.volumes[0]: Required value: must specify a volume type",
            "spec.subsets[0].patch.volumes[1].hostPath: Forbidden: may not specify more than 1 volume type",
            r#"spec.subsets[0].patch.volumes[1].name: Duplicate value: "a""#,
            r#"spec.subsets[0].patch.volumes[2].name: Invalid value: "B_": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#,
        ]),
        ("ports", json!({"containers": [c(json!({"ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 0, "name": "http"}, {"containerPort": 70000, "hostPort": -1, "name": "Web--", "protocol": "HTTP"}]}))]}), vec![
            r#"spec.subsets[0].patch.containers[0].ports[1].name: Duplicate value: "http""#,
            "spec.subsets[0].patch.containers[0].ports[1].containerPort: Required value",
            r#"spec.subsets[0].patch.containers[0].ports[2].name: Invalid value: "Web--": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"#,
            r#"spec.subsets[0].patch.containers[0].ports[2].name: Invalid value: "Web--": must not contain consecutive hyphens"#,
            r#"spec.subsets[0].patch.containers[0].ports[2].name: Invalid value: "Web--": must not begin or end with a hyphen"#,
            "spec.subsets[0].patch.containers[0].ports[2].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.subsets[0].patch.containers[0].ports[2].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
            r#"spec.subsets[0].patch.containers[0].ports[2].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP""#,
        ]),
        ("environment", json!({"containers": [c(json!({"env": [{"name": "OK_1"}, {"name": "1BAD"}, {"name": "..x"}]}))]}), vec![
            r#"spec.subsets[0].patch.containers[0].env[1].name: Invalid value: "1BAD": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"#,
            r#"spec.subsets[0].patch.containers[0].env[2].name: Invalid value: "..x": must not start with '..'"#,
        ]),
        ("environment sources", json!({"containers": [c(json!({"env": [
            {"name": "A", "valueFrom": {}},
            {"name": "B", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}},
            {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a/b/c']"}, "resourceFieldRef": {"resource": "limits.cpu", "divisor": "1Mi"}}},
            {"name": "D", "valueFrom": {"resourceFieldRef": {"resource": "requests.memory", "divisor": "1024"}}},
            {"name": "E", "valueFrom": {"secretKeyRef": {"name": "Bad_Name", "key": ".."}}},
            {"name": "F", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.host"}}},
            {"name": "G", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1024Ki"}}},
        ]}))]}), vec![
            r#"spec.subsets[0].patch.containers[0].env[0].valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"#,
            r#"spec.subsets[0].patch.containers[0].env[1].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs""#,
            r#"spec.subsets[0].patch.containers[0].env[1].valueFrom: Invalid value: "": may not be specified when `value` is not empty"#,
            r#"spec.subsets[0].patch.containers[0].env[2].valueFrom.fieldRef: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#,
            r#"spec.subsets[0].patch.containers[0].env[2].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource"#,
            r#"spec.subsets[0].patch.containers[0].env[2].valueFrom: Invalid value: "": may not have more than one field specified at a time"#,
            r#"spec.subsets[0].patch.containers[0].env[3].valueFrom.resourceFieldRef.divisor: Invalid value: "requests.memory": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"#,
            r#"spec.subsets[0].patch.containers[0].env[4].valueFrom.secretKeyRef.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
            r#"spec.subsets[0].patch.containers[0].env[4].valueFrom.secretKeyRef.key: Invalid value: "..": must not be '..'"#,
        ]),
        ("mounts", json!({"containers": [c(json!({"volumeMounts": [{"name": "v", "mountPath": "/a", "subPath": "/abs"}, {"name": "v", "mountPath": "/a", "subPath": "x/../y"}, {"name": "v"}]}))], "volumes": [{"name": "v", "emptyDir": {}}]}), vec![
            r#"spec.subsets[0].patch.containers[0].volumeMounts.subPath: Invalid value: "/abs": must be a relative path"#,
            r#"spec.subsets[0].patch.containers[0].volumeMounts[1].mountPath: Invalid value: "/a": must be unique"#,
            r#"spec.subsets[0].patch.containers[0].volumeMounts.subPath: Invalid value: "x/../y": must not contain '..'"#,
            "spec.subsets[0].patch.containers[0].volumeMounts[2].mountPath: Required value",
        ]),
        ("policies and requests", json!({"restartPolicy": "Sometimes", "dnsPolicy": "Google", "containers": [c(json!({"imagePullPolicy": "Maybe", "terminationMessagePolicy": "Log", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "1500m", "memory": "1Gi"}}}))]}), vec![
            r#"spec.subsets[0].patch.containers[0].imagePullPolicy: Unsupported value: "Maybe": supported values: "Always", "IfNotPresent", "Never""#,
            r#"spec.subsets[0].patch.containers[0].terminationMessagePolicy: Unsupported value: "Log": supported values: "File", "FallbackToLogsOnError""#,
            r#"spec.subsets[0].patch.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1500m"#,
            r#"spec.subsets[0].patch.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#,
            r#"spec.subsets[0].patch.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None""#,
        ]),
        ("scheduling and names", json!({"containers": [c(json!({}))], "nodeSelector": {"bad key!": "v"}, "serviceAccountName": "Robot", "activeDeadlineSeconds": 0, "hostname": "h_1", "priorityClassName": "high",
            "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}}), vec![
            "spec.subsets[0].patch.nodeSelector: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.subsets[0].patch.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "spec.subsets[0].patch.serviceAccountName: Invalid value: \"Robot\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec.subsets[0].patch.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
            "spec.subsets[0].patch.hostname: Invalid value: \"h_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.subsets[0].patch.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
        ]),
    ];
    for (name, spec, want) in cases {
        assert_eq!(errors(spec), want, "{name}");
    }
}
