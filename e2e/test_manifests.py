"""The shipped manifests on the real API server: the least-privilege RBAC is enough to schedule, and
leader election fails over between two replicas.

The scheduler runs with a ServiceAccount token (not the admin certificate) and the configuration
from manifests/config.yaml, exactly as the Deployment would run it.
"""

from __future__ import annotations

import asyncio
import collections
import json
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import (
    create_object,
    events_for,
    node_of,
    pod_body,
    scheduled_condition,
    server_minor,
    service_account_token,
    token_kubeconfig,
    wait_for,
    watch_bindings,
)
from e2e.test_resourceclaim_writes import bind_with_writer, claim_body
from scheduler.api.objects import Pod
from scheduler.api.resourceclaim import ResourceClaim
from scheduler.api.resources import container_requests
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.kube.client.apiclient import api_client
from scheduler.kube.flowcontrol import RateLimiter
from scheduler.kube.resourceclaims import ApiClaimWriter
from scheduler.kube.writes import ApiWriter, ApiWrites
from scheduler.plugins.dynamicresources.plugin.extendedclaim import (
    ExtendedClaimCreation,
    pod_status_patch,
    requests_and_mappings,
)

ROOT = Path(__file__).resolve().parent.parent
NS = "spread-scheduler"
# What the API server says when RBAC denies a request (other 403s, e.g. a terminating namespace, differ).
RBAC_DENIED = re.compile(r'forbidden: User \\?"system:serviceaccount:[^"\\]*\\?" cannot')


def _manifest_docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for name in yaml.safe_load((ROOT / "manifests" / "kustomization.yaml").read_text())["resources"]:
        docs += [d for d in yaml.safe_load_all((ROOT / "manifests" / name).read_text()) if d]
    return docs


def _apply(api: client.ApiClient, doc: dict[str, Any]) -> None:
    if doc["kind"] == "Deployment":
        return  # its pods need an image and a kubelet (e2e/test_helm_install.py applies the chart's, pods stay Pending)
    create_object(api, doc)


@pytest.fixture(scope="module")
def sa_kubeconfig(api: client.ApiClient, kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    docs = _manifest_docs()
    for doc in docs:
        _apply(api, doc)
    token = service_account_token(client.CoreV1Api(api), NS, "spread-scheduler")
    config = token_kubeconfig(kubeconfig, token)
    path = tmp_path_factory.mktemp("sa") / "kubeconfig"
    path.write_text(json.dumps(config))
    yield str(path)


def _config_file(tmp: Path, **lease: str) -> str:
    cm = next(d for d in _manifest_docs() if d["kind"] == "ConfigMap")
    cfg = yaml.safe_load(cm["data"]["config.yaml"])
    cfg["leaderElection"].update(lease)
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _holder(api: client.ApiClient) -> str | None:
    lease = client.CoordinationV1Api(api).read_namespaced_lease("spread-scheduler", NS)
    return lease.spec.holder_identity


def test_least_privilege_rbac_schedules_and_fails_over(
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    sa_kubeconfig: str,
    namespace: str,
    nodes: Callable[..., str],
    tmp_path: Path,
) -> None:
    scheduler.stop()  # the session's admin-credentialed scheduler must not compete here
    config = _config_file(tmp_path, leaseDuration="4s", renewDeadline="3s", retryPeriod="1s")
    pod_env = {"POD_NAMESPACE": NS}  # the Deployment's downward API: the Lease's namespace
    first = SchedulerProcess(sa_kubeconfig, config, name="rbac-a", env=pod_env)
    second = SchedulerProcess(sa_kubeconfig, config, name="rbac-b", env=pod_env)
    try:
        node = nodes("n1")
        first.start(wait_for_line=b"Successfully acquired lease")
        second.start()
        core.create_namespaced_pod(namespace, pod_body("one"))
        wait_for(lambda: node_of(core, namespace, "one") == node, 30, "bound by the leader")
        core.create_namespaced_pod(namespace, pod_body("nowhere", nodeSelector={"no": "such-node"}))
        cond = wait_for(lambda: scheduled_condition(core.read_namespaced_pod("nowhere", namespace)), 30, "condition")
        assert cond.status == "False" and cond.reason == "Unschedulable"  # pods/status patch is granted
        wait_for(
            lambda: [e for e in events_for(core, namespace, "nowhere") if e["reason"] == "FailedScheduling"],
            30,
            "FailedScheduling event",
        )
        wait_for(lambda: [e for e in events_for(core, namespace, "one") if e["reason"] == "Scheduled"], 30, "event")
        assert not RBAC_DENIED.search(first.log()), first.log()[-2000:]
        assert b"Successfully acquired lease" not in second.log_path.read_bytes()
        leader = wait_for(lambda: _holder(api), 10, "lease holder")
        assert first.proc is not None and f"_{first.proc.pid}_" in leader  # the identity carries the pid

        # Kill -9 the leader in the middle of a burst: the follower takes over within the lease
        # duration and every pod ends bound exactly once (the watch sees nodeName set once).
        seen: dict[str, list[str]] = {}
        watching = threading.Event()
        watcher = threading.Thread(target=watch_bindings, args=(core, namespace, watching, seen), daemon=True)
        watcher.start()
        for i in range(60):
            if i == 30:
                first.stop(signal.SIGKILL)  # a crash: no lease release, the follower waits for expiry
                killed_at = time.monotonic()
            core.create_namespaced_pod(namespace, pod_body(f"burst-{i:02d}"))
        # The follower saw the record change at most one jittered retry period (1 s x 2.2, client-go's
        # JitterFactor) after the leader's last renewal, waits a lease (4 s) from then, and notices at
        # its next poll (another 2.2 s at most); plus slack for a 2-core machine.
        budget = 2.2 + 4 + 2.2 + 3 - (time.monotonic() - killed_at)
        wait_for(
            lambda: b"Successfully acquired lease" in second.log_path.read_bytes(),
            budget,
            "follower takes over in time",
        )
        assert _holder(api) != leader
        burst = [f"burst-{i:02d}" for i in range(60)]
        wait_for(lambda: all(seen.get(n) for n in burst), 60, "every burst pod bound")
        watching.set()
        assert all(len(seen[n]) == 1 for n in burst), {n: seen[n] for n in burst if len(seen[n]) != 1}
        assert not RBAC_DENIED.search(second.log()), second.log()[-2000:]
        assert second.stop() == 0
        assert _holder(api) is None  # released on a graceful stop
    finally:
        for proc in (first, second):
            if proc.proc is not None:
                proc.stop(signal.SIGKILL)
        scheduler.start()


def test_writes_outside_the_grant_are_forbidden(sa_kubeconfig: str, core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("victim", scheduler="default-scheduler"))
    core.create_namespaced_secret(namespace, {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    as_sa = client.CoreV1Api(config.new_client_from_config(config_file=sa_kubeconfig))
    attempts: dict[str, Callable[[], Any]] = {
        "delete a secret": lambda: as_sa.delete_namespaced_secret("s", namespace),
        "read a secret": lambda: as_sa.read_namespaced_secret("s", namespace),
        # patch is granted (the pod-deletion-cost of spread-aware scale-down); create and update are not.
        "create a pod": lambda: as_sa.create_namespaced_pod(namespace, pod_body("intruder")),
        "update a pod": lambda: as_sa.replace_namespaced_pod(
            "victim", namespace, core.read_namespaced_pod("victim", namespace)
        ),
        "create a node": lambda: as_sa.create_node({"metadata": {"name": "intruder"}}),
        "touch another lease": lambda: client.CoordinationV1Api(as_sa.api_client).read_namespaced_lease(
            "kube-scheduler", "kube-system"
        ),
    }
    for what, attempt in attempts.items():
        with pytest.raises(client.ApiException) as denied:
            attempt()
        assert denied.value.status == 403, what
    assert as_sa.read_namespaced_pod("victim", namespace).metadata.name == "victim"  # reads are granted


@pytest.mark.every_release  # resourceclaims/binding is asked from 1.36
def test_the_grant_allows_dynamic_resources_claim_writes(
    sa_kubeconfig: str, api: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    """PreBind's claim writes as the ServiceAccount: the finalizer (update resourceclaims), then the
    allocation and reservation (update resourceclaims/status, and from 1.36 the synthetic
    resourceclaims/binding the API server authorizes such a change against)."""
    minor = f"1.{server_minor(api)}"
    made = core.create_namespaced_pod(
        namespace, pod_body("p", scheduler="nobody", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}])
    )
    objects = client.CustomObjectsApi(api)
    created = objects.create_namespaced_custom_object(
        "resource.k8s.io", "v1", namespace, "resourceclaims", claim_body("gpu")
    )
    created["metadata"].pop("managedFields", None)
    storage = StorageObjects()
    held = ResourceClaim.from_dict(created, minor=minor)
    storage.upsert(held, held.resource_version)
    pod = Pod.from_dict(api.sanitize_for_serialization(made))
    try:
        written = asyncio.run(bind_with_writer(sa_kubeconfig, storage, pod, held, minor))
        assert written.allocation is not None and [r.uid for r in written.reserved_for] == [made.metadata.uid]
    finally:
        objects.patch_namespaced_custom_object(
            "resource.k8s.io", "v1", namespace, "resourceclaims", "gpu", {"metadata": {"finalizers": None}}
        )


async def _extended_writes(kubeconfig: str, pod: Pod, minor: str) -> tuple[ResourceClaim, bool]:
    """As ``kubeconfig``: PreBind's create of the claim for ``pod``'s extended resources, its patch of the
    pod's status, and Unreserve's delete; the created claim, and whether the watchless cache assumed it."""
    api = await api_client(kubeconfig)
    sender = ApiWrites(api)
    try:
        storage = StorageObjects()
        writer = ApiClaimWriter(ApiWriter(sender, RateLimiter(qps=50, burst=100)), storage, minor, sleep=_no_wait)
        requests, mappings = requests_and_mappings(
            container_requests({"containers": [{"name": "c", "resources": {"requests": {"example.com/tpu": "1"}}}]}),
            ["example.com/tpu"],
            {"example.com/tpu": "live-tpu"}.get,
        )
        created = await writer.create_claim(pod.namespace, ExtendedClaimCreation(pod, requests, mappings).body())
        await writer.patch_pod_status(pod, pod_status_patch(pod, created.name, mappings))
        await writer.delete_claim(created)
        return created, storage.resource_claim(pod.namespace, created.name) is not None
    finally:
        await sender.close()
        await api.close()


async def _no_wait(_seconds: float) -> None:
    return None


def test_the_grant_allows_the_extended_resource_claim_writes(
    sa_kubeconfig: str, api: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    """DRAExtendedResource (1.36+) as the ServiceAccount: create a claim owned by the pod, patch the
    pod's ``status.extendedResourceClaimStatus``, delete the claim (upstream's create and delete)."""
    if server_minor(api) < 36:
        pytest.skip("no DRAExtendedResource before 1.36")
    minor = f"1.{server_minor(api)}"
    body = pod_body("p", scheduler="nobody")
    body["spec"]["containers"][0]["resources"] = {
        "requests": {"example.com/tpu": "1"},
        "limits": {"example.com/tpu": "1"},
    }
    made = core.create_namespaced_pod(namespace, body)
    pod = Pod.from_dict(api.sanitize_for_serialization(made))
    created, assumed = asyncio.run(_extended_writes(sa_kubeconfig, pod, minor))
    assert created.name.startswith("p-extended-resources-") and created.controller_uid == made.metadata.uid
    assert not assumed  # no watch here: never brought, never assumed
    status = core.read_namespaced_pod("p", namespace).status.extended_resource_claim_status
    assert status is not None and status.resource_claim_name == created.name
    gone = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "resource.k8s.io", "v1", namespace, "resourceclaims"
    )
    assert gone["items"] == []


def test_deployment_manifest_is_hardened() -> None:
    deployment = next(d for d in _manifest_docs() if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert deployment["spec"]["replicas"] == 2
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert container["ports"] == [{"name": "https", "containerPort": 10259}]
    assert "--secure-port=10259" in container["args"]
    service = next(d for d in _manifest_docs() if d["kind"] == "Service")
    assert service["spec"]["ports"] == [{"name": "https", "port": 10259, "targetPort": "https"}]
    policy = next(d for d in _manifest_docs() if d["kind"] == "NetworkPolicy")
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [
        {
            "ports": [{"protocol": "TCP", "port": "https"}],
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        }
    ]
    assert set(container["resources"]) == {"requests", "limits"}
    role = next(d for d in _manifest_docs() if d["kind"] == "ClusterRole")
    verbs: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for rule in role["rules"]:
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                verbs[(g, r)] |= set(rule["verbs"])
    # delete: preemption's victims; patch: the pod-deletion-cost annotation (spread-aware scale-down).
    assert verbs[("", "pods")] == {"get", "list", "watch", "delete", "patch"}
    assert verbs[("policy", "poddisruptionbudgets")] == {"list", "watch"}
    # VolumeBinding's PreBind writes a PV's claimRef and a claim's selected node (PUT), nothing else.
    assert verbs[("", "persistentvolumes")] == verbs[("", "persistentvolumeclaims")] == {"list", "watch", "update"}
    for group, resource in (
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csistoragecapacities"),
        ("storage.k8s.io", "volumeattachments"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "resourceslices"),
        ("resource.k8s.io", "resourceclaimtemplates"),
        ("resource.k8s.io", "devicetaintrules"),
    ):
        assert verbs[(group, resource)] == {"list", "watch"}, resource
    # DynamicResources' PreBind, PostFilter and Unreserve: a claim's finalizer (PUT), its status (PUT;
    # Unreserve's strategic-merge patch), the synthetic binding subresource 1.36+ authorizes them against.
    # create/delete: the claim for a pod's DeviceClass-backed extended resources (PreBind; Unreserve
    # deletes one it created), owned by the pod, hence update on pods/finalizers, as upstream grants them.
    assert verbs[("resource.k8s.io", "resourceclaims")] == {"get", "list", "watch", "update", "create", "delete"}
    assert verbs[("", "pods/finalizers")] == {"update"}
    assert verbs[("resource.k8s.io", "resourceclaims/status")] == {"update", "patch"}
    assert verbs[("resource.k8s.io", "resourceclaims/binding")] == {"update", "patch"}
    assert verbs[("", "pods/binding")] == {"create"}
    # Delegated authn/authz of /metrics: exactly create on the two reviews, nothing else in those groups.
    assert verbs[("authentication.k8s.io", "tokenreviews")] == {"create"}
    assert verbs[("authorization.k8s.io", "subjectaccessreviews")] == {"create"}
    review_groups = {"authentication.k8s.io", "authorization.k8s.io"}
    assert {(g, r) for g, r in verbs if g in review_groups} == {
        ("authentication.k8s.io", "tokenreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
    }
    reader = next(d for d in _manifest_docs() if d["metadata"]["name"] == "spread-scheduler-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert all("*" not in v for v in verbs.values())
    assert sorted(key for key, v in verbs.items() if "delete" in v) == [
        ("", "pods"),
        ("resource.k8s.io", "resourceclaims"),
    ]
    assert all(d.get("roleRef", {}).get("name") != "system:kube-scheduler" for d in _manifest_docs())
