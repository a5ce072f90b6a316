"""The Helm chart (charts/spread-scheduler): `helm lint`, and `helm template` against manifests/.

helm is built from Go modules (e2e/tools/helm, cached like the control plane): if it cannot be
built this fails, it never skips. With default values the chart renders the kustomize manifests
object for object, field for field; the only differences allowed are those docs/install.md lists.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config import parse_config

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "spread-scheduler"
NS = "spread-scheduler"
# Differences allowed by docs/install.md ("Helm and kustomize"):
HELM_LABELS = {
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
}
CHECKSUM = "checksum/config"  # the pod template's annotation: a changed ConfigMap rolls the pods
ONLY_KUSTOMIZE = {("Namespace", NS)}  # helm install --create-namespace makes it
# The secure-serving interface (HTTPS on 10259, delegated authn/authz): the rules it needs.
SERVING_RULES = [
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
]


@cache
def helm() -> str:
    from e2e.build import ensure_helm  # noqa: PLC0415 - the Go build helpers live with the control plane

    return str(ensure_helm())


def run_helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([helm(), *args], capture_output=True, text=True, check=False, timeout=120)


def render(*sets: str, namespace: str = NS, release: str = NS) -> dict[tuple[str, str], dict[str, Any]]:
    """``helm template`` with ``--set`` values: (kind, name) -> object."""
    args = [f"--set={s}" for s in sets]
    done = run_helm("template", release, str(CHART), "--namespace", namespace, *args)
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    objects = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    assert len(objects) == len(docs), "two objects with one kind and name"
    return objects


def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    for name in yaml.safe_load((ROOT / "manifests" / "kustomization.yaml").read_text())["resources"]:
        for doc in yaml.safe_load_all((ROOT / "manifests" / name).read_text()):
            if doc:
                objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def _config(configmap: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(configmap["data"]["config.yaml"])
    return config


def _normalize(obj: Any) -> Any:
    """Drop Helm's labels wherever labels or selectors appear; parse the ConfigMap's embedded YAML."""
    if isinstance(obj, dict):
        out = {k: _normalize(v) for k, v in obj.items() if k not in HELM_LABELS}
        if "config.yaml" in out and isinstance(out["config.yaml"], str):
            out["config.yaml"] = yaml.safe_load(out["config.yaml"])
        return out
    if isinstance(obj, list):
        return [_normalize(v) for v in obj]
    return obj


def _args(args: list[str]) -> list[str]:
    """``--flag value`` and ``--flag=value`` are the same command line."""
    out: list[str] = []
    for arg in args:
        if out and out[-1].startswith("--") and "=" not in out[-1] and not arg.startswith("-"):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _differences(a: Any, b: Any, path: str = "") -> Iterator[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                yield f"{path}.{key}: only in {'chart' if key in a else 'manifests'}"
            else:
                yield from _differences(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _differences(x, y, f"{path}[{i}]")
    elif a != b:
        yield f"{path}: chart {a!r} != manifests {b!r}"


def test_helm_lint_strict() -> None:
    done = run_helm("lint", "--strict", str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_default_values_render_the_kustomize_manifests() -> None:
    chart, kustomize = render(), manifests()
    assert set(chart) == set(kustomize) - ONLY_KUSTOMIZE
    differences: list[str] = []
    for key, ours in kustomize.items():
        if key in ONLY_KUSTOMIZE:
            continue
        theirs = chart[key]
        a, b = _normalize(theirs), _normalize(ours)
        if key[0] == "Deployment":
            assert set(a["spec"]["template"]["metadata"].pop("annotations")) == {CHECKSUM}
            for c in (_container(a), _container(b)):
                c["args"] = _args(c["args"])
        differences += [f"{key[0]}/{key[1]}{d}" for d in _differences(a, b)]
    assert not differences, "\n".join(differences)


# Who may reach 10259: the monitoring namespace (kubelet probes come from the node, which policy admits).
SCRAPERS = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]


def test_the_chart_serves_the_secure_interface() -> None:
    """What the chart renders for serving, as kube-scheduler serves: HTTPS on 10259, probes, policy, RBAC."""
    objects = render()
    container = _container(objects[("Deployment", NS)])
    assert "--secure-port=10259" in container["args"]
    assert container["ports"] == [{"name": "https", "containerPort": 10259}]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "https", "scheme": "HTTPS"}
    assert objects[("Service", f"{NS}-metrics")]["spec"]["ports"] == [
        {"name": "https", "port": 10259, "targetPort": "https"}
    ]
    policy = objects[("NetworkPolicy", NS)]["spec"]
    assert policy["policyTypes"] == ["Ingress"]
    assert policy["ingress"] == [{"ports": [{"port": "https", "protocol": "TCP"}], "from": SCRAPERS}]
    assert policy["podSelector"] == objects[("Deployment", NS)]["spec"]["selector"]
    role = objects[("ClusterRole", NS)]["rules"]
    assert all(rule in role for rule in SERVING_RULES)
    reader = objects[("ClusterRole", f"{NS}-metrics-reader")]["rules"]
    assert reader == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_rendered_configuration_is_one_the_scheduler_accepts() -> None:
    for sets in ((), ("leaderElect=false", "config.profiles[0].schedulerName=mine")):
        config = _config(render(*sets)[("ConfigMap", f"{NS}-config")])
        parsed = parse_config(config)
        assert parsed.leader_election.resource_namespace == ""  # the pod's own namespace
        assert parsed.leader_election.leader_elect is ("leaderElect=false" not in sets)
        assert parsed.profiles[0].scheduler_name == ("mine" if sets else "spread-scheduler")


def test_another_namespace_keeps_the_lease_grant_with_the_pod() -> None:
    objects = render(namespace="platform", release="sched")
    name = "sched-spread-scheduler"
    for (kind, _), obj in objects.items():
        if kind not in ("ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == "platform", kind
    env = _container(objects[("Deployment", name)])["env"]
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in env
    assert "resourceNamespace" not in _config(objects[("ConfigMap", f"{name}-config")])["leaderElection"]
    assert objects[("RoleBinding", f"{name}-lease")]["subjects"][0] == {
        "kind": "ServiceAccount",
        "name": name,
        "namespace": "platform",
    }
    assert objects[("ClusterRoleBinding", name)]["subjects"][0]["namespace"] == "platform"


def test_lease_name_and_namespace_follow_the_configuration() -> None:
    objects = render("config.profiles[0].schedulerName=mine")
    assert objects[("Role", f"{NS}-lease")]["rules"][1]["resourceNames"] == ["mine"]
    objects = render("config.leaderElection.resourceName=lock", "config.leaderElection.resourceNamespace=ops")
    role = objects[("Role", f"{NS}-lease")]
    assert role["metadata"]["namespace"] == "ops" and role["rules"][1]["resourceNames"] == ["lock"]
    assert objects[("RoleBinding", f"{NS}-lease")]["metadata"]["namespace"] == "ops"
    le = _config(objects[("ConfigMap", f"{NS}-config")])["leaderElection"]
    assert (le["resourceName"], le["resourceNamespace"]) == ("lock", "ops")


def test_disruption_budget_only_with_more_than_one_replica() -> None:
    assert render()[("PodDisruptionBudget", NS)]["spec"]["minAvailable"] == 1
    assert ("PodDisruptionBudget", NS) not in render("replicas=1")  # minAvailable 1 would block every drain
    pdb = render("replicas=3", "podDisruptionBudget.maxUnavailable=1")[("PodDisruptionBudget", NS)]["spec"]
    assert pdb == {"maxUnavailable": 1, "selector": pdb["selector"]}
    assert ("PodDisruptionBudget", NS) not in render("podDisruptionBudget.enabled=false")


def test_service_monitor_is_off_by_default_and_scrapes_https() -> None:
    assert not [k for k in render() if k[0] == "ServiceMonitor"]
    objects = render("metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prom")
    monitor = objects[("ServiceMonitor", NS)]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prom"
    endpoint = monitor["spec"]["endpoints"][0]
    assert (endpoint["port"], endpoint["scheme"], endpoint["path"]) == ("https", "https", "/metrics")
    assert monitor["spec"]["selector"]["matchLabels"] == objects[("Service", f"{NS}-metrics")]["spec"]["selector"]
    done = run_helm(
        "template", NS, str(CHART), "--set=metrics.serviceMonitor.enabled=true", "--set=metrics.service.enabled=false"
    )
    assert done.returncode != 0 and "needs metrics.service.enabled" in done.stderr


def test_image_logging_and_placement_values() -> None:
    digest = "sha256:" + "ab" * 32
    objects = render(
        "image.repository=registry.example/spread",
        "image.tag=1.2.3",
        f"image.digest={digest}",
        "image.pullPolicy=Always",
        "logging.format=text",
        "logging.verbosity=4",
        "priorityClassName=high",
        "nodeSelector.pool=system",
        "tolerations[0].key=dedicated",
        "tolerations[0].operator=Exists",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].key=pool",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator=Exists",
        "replicas=3",
        "resources.limits.memory=2Gi",
    )
    deployment = objects[("Deployment", NS)]
    pod, container = deployment["spec"]["template"]["spec"], _container(deployment)
    assert container["image"] == f"registry.example/spread:1.2.3@{digest}"
    assert container["imagePullPolicy"] == "Always"
    assert container["args"][-2:] == ["--logging-format=text", "--v=4"]
    assert container["resources"]["limits"]["memory"] == "2Gi"
    assert pod["priorityClassName"] == "high" and pod["nodeSelector"] == {"pool": "system"}
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]
    assert "nodeAffinity" in pod["affinity"] and deployment["spec"]["replicas"] == 3
    assert "--v=" not in " ".join(_container(render()[("Deployment", NS)])["args"])  # unset: the binary's default


def test_a_changed_configuration_rolls_the_pods() -> None:
    def checksum(*sets: str) -> str:
        return str(render(*sets)[("Deployment", NS)]["spec"]["template"]["metadata"]["annotations"][CHECKSUM])

    assert checksum() == checksum()
    assert checksum() != checksum("config.clientConnection.qps=100")


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("replica=3", "additional properties 'replica' not allowed"),
        ("logging.format=xml", "/logging/format"),
        ("image.digest=latest", "/image/digest"),
        ("metrics.serviceMonitor.enable=true", "additional properties 'enable' not allowed"),
    ],
)
def test_a_mistyped_value_is_refused_naming_it(value: str, named: str) -> None:
    done = run_helm("template", NS, str(CHART), f"--set={value}")
    assert done.returncode != 0 and named in done.stderr, done.stderr
