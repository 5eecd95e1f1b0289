//! The Kubernetes manifests under `deploy/kubernetes/` validate against the API's own schemas,
//! strictly (kubernetes-validate from PyPI, which `scripts/test` installs), and say what a
//! deployment that scales needs: replicas behind a Service and an Ingress, probes on /healthz, a
//! grace period longer than racelab's drain, a disruption budget, requests, a CPU autoscaler.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn validate(files: &[&Path]) -> (bool, String) {
    let output = Command::new("bash")
        .arg(root().join("scripts/validate-manifests.sh"))
        .args(files)
        .current_dir(root())
        .output()
        .expect("the validator runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}

#[test]
fn the_manifests_validate_and_describe_a_deployment_that_scales() {
    let (valid, said) = validate(&[]);
    assert!(valid, "{said}");
    for resource in [
        "deployment/racelab",
        "service/racelab",
        "ingress/racelab",
        "poddisruptionbudget/racelab",
        "horizontalpodautoscaler/racelab",
        "statefulset/postgres",
        "deployment/redis",
        "statefulset/kafka",
        "deployment/mariadb",
    ] {
        assert!(
            said.contains(&format!("passed for resource {resource} ")),
            "{resource}: {said}"
        );
    }
    let racelab = std::fs::read_to_string(root().join("deploy/kubernetes/racelab.yaml")).expect("racelab.yaml");
    for needed in [
        "readinessProbe:\n            httpGet: {path: /healthz",
        "livenessProbe:\n            httpGet: {path: /healthz",
        "requests: {cpu: 500m, memory: 256Mi}",
        "averageUtilization: 70",
        "minAvailable: 1",
        "proxy-read-timeout: \"3600\"",
    ] {
        assert!(racelab.contains(needed), "racelab.yaml lacks {needed:?}");
    }
    // Longer than racelab's drain: 8 s for runs in flight, then their cleanup, after the 5 s
    // preStop that takes the pod out of the Service first.
    let grace: u64 = racelab
        .lines()
        .find_map(|l| l.trim().strip_prefix("terminationGracePeriodSeconds: "))
        .and_then(|s| s.parse().ok())
        .expect("a grace period");
    assert!(grace >= 5 + 8 + 20, "{grace}");
}

#[test]
fn a_broken_manifest_is_refused() {
    let racelab = std::fs::read_to_string(root().join("deploy/kubernetes/racelab.yaml")).expect("racelab.yaml");
    let broken = racelab
        .replacen("replicas: 2", "replicas: two", 1)
        .replacen("minAvailable: 1", "minAvailible: 1", 1);
    let path = std::env::temp_dir().join(format!("racelab-broken-{}.yaml", std::process::id()));
    std::fs::write(&path, broken).expect("a broken manifest");
    let (valid, said) = validate(&[&path]);
    let _ = std::fs::remove_file(&path);
    assert!(!valid, "{said}");
    assert!(said.contains("replicas") && said.contains("minAvailible"), "{said}");
}
