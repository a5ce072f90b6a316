"""The Helm chart on the real API server: every rendered object is accepted, and the scheduler runs as
the chart's pod would (its ServiceAccount's token, its ConfigMap, POD_NAMESPACE) and binds a pod.

The release goes into a namespace other than the chart's default, so the Lease's namespace must
follow the pod's own for leader election to work under the chart's RBAC.

Two logins: a kubeconfig holding the ServiceAccount token, and the in-cluster path with no kubeconfig
at all: KUBERNETES_SERVICE_HOST/PORT and the token, ca.crt and namespace files at
/var/run/secrets/kubernetes.io/serviceaccount, which both kopf and the kubernetes client read from
that fixed path. The files are put there in a private mount namespace (``unshare --mount``, a tmpfs
over /run, as root) so the real code paths run and the host's /run is untouched.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from kubernetes import client

from e2e.build import ensure_helm
from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import (
    create_object,
    node_of,
    pod_body,
    service_account_token,
    token_kubeconfig,
    wait_for,
)
from e2e.test_manifests import RBAC_DENIED

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "spread-scheduler"
RELEASE, NS = "e2e", "platform-scheduling"
FULLNAME = "e2e-spread-scheduler"
SA_DIR = "/run/secrets/kubernetes.io/serviceaccount"  # /var/run is a symlink to /run
# A tmpfs over /run in a private mount namespace, the ServiceAccount files bind-mounted read-only
# at the standard path (as the kubelet's projected volume), then the scheduler.
IN_POD = f'mount -t tmpfs tmpfs /run && mkdir -p {SA_DIR} && mount --bind -o ro "$0" {SA_DIR} && exec "$@"'


def _render() -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(ensure_helm()), "template", RELEASE, str(CHART), "--namespace", NS],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


@pytest.fixture(scope="module")
def installed(api: client.ApiClient, core: client.CoreV1Api) -> Iterator[dict[tuple[str, str], dict[str, Any]]]:
    """``helm template | kubectl create``: every object of the default render, into NS."""
    docs = _render()
    core.create_namespace({"metadata": {"name": NS}})
    try:
        for doc in docs:
            create_object(api, doc)
        yield {(d["kind"], d["metadata"]["name"]): d for d in docs}
    finally:
        rbac = client.RbacAuthorizationV1Api(api)
        for doc in docs:
            if doc["kind"] == "ClusterRole":
                rbac.delete_cluster_role(doc["metadata"]["name"])
            elif doc["kind"] == "ClusterRoleBinding":
                rbac.delete_cluster_role_binding(doc["metadata"]["name"])
        core.delete_namespace(NS, grace_period_seconds=0)


def _config_file(objects: dict[tuple[str, str], dict[str, Any]], tmp: Path) -> str:
    """The ConfigMap's config.yaml, as the pod mounts it; only the lease timings are shortened."""
    config = yaml.safe_load(objects[("ConfigMap", f"{FULLNAME}-config")]["data"]["config.yaml"])
    assert "resourceNamespace" not in config["leaderElection"]  # the pod's own namespace
    config["leaderElection"].update(leaseDuration="4s", renewDeadline="3s", retryPeriod="1s")
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _pod_env(objects: dict[tuple[str, str], dict[str, Any]]) -> dict[str, str]:
    """The container's env as the kubelet resolves it (POD_NAMESPACE from the downward API)."""
    container = objects[("Deployment", FULLNAME)]["spec"]["template"]["spec"]["containers"][0]
    env: dict[str, str] = {}
    for var in container["env"]:
        assert var["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace", var
        env[var["name"]] = NS
    return env


def _lease_holder(api: client.ApiClient) -> str | None:
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease("spread-scheduler", NS)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return lease.spec.holder_identity


def _opted_in_pod_is_bound(
    proc: SchedulerProcess, core: client.CoreV1Api, namespace: str, node: str, name: str
) -> None:
    core.create_namespaced_pod(namespace, pod_body(name))  # spec.schedulerName: spread-scheduler
    wait_for(lambda: node_of(core, namespace, name) == node, 30, f"{name} bound by the chart's scheduler")
    log = proc.log()
    assert not RBAC_DENIED.search(log), log[-2000:]  # other 403s (a terminating namespace) are not RBAC's


def test_every_rendered_object_is_accepted(
    installed: dict[tuple[str, str], dict[str, Any]], api: client.ApiClient
) -> None:
    kinds = {kind for kind, _ in installed}
    assert kinds >= {"Deployment", "Service", "ConfigMap", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy"}
    apps = client.AppsV1Api(api)
    deployment = apps.read_namespaced_deployment(FULLNAME, NS)
    assert deployment.spec.template.spec.service_account_name == FULLNAME
    pdb = client.PolicyV1Api(api).read_namespaced_pod_disruption_budget(FULLNAME, NS)
    assert pdb.spec.min_available == 1


def test_scheduler_with_the_charts_service_account_and_configmap(
    installed: dict[tuple[str, str], dict[str, Any]],
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    kubeconfig: str,
    namespace: str,
    nodes: Callable[..., str],
    tmp_path: Path,
) -> None:
    scheduler.stop()  # the session's admin-credentialed scheduler must not compete here
    token = service_account_token(core, NS, FULLNAME)
    sa_kubeconfig = tmp_path / "kubeconfig"
    sa_kubeconfig.write_text(json.dumps(token_kubeconfig(kubeconfig, token)))
    proc = SchedulerProcess(
        str(sa_kubeconfig), _config_file(installed, tmp_path), name="helm-sa", env=_pod_env(installed)
    )
    try:
        node = nodes("n1")
        proc.start(wait_for_line=b"Successfully acquired lease")
        assert f"{NS}/spread-scheduler" in proc.log()  # the Lease in the release namespace
        assert _lease_holder(api)
        _opted_in_pod_is_bound(proc, core, namespace, node, "via-token")
        assert proc.stop() == 0
        assert _lease_holder(api) is None  # released on a graceful stop: the chart's Role allows update
    finally:
        if proc.proc is not None:
            proc.stop(signal.SIGKILL)
        scheduler.start()


def test_in_cluster_login_with_no_kubeconfig(
    installed: dict[tuple[str, str], dict[str, Any]],
    api: client.ApiClient,
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    namespace: str,
    nodes: Callable[..., str],
    tmp_path: Path,
) -> None:
    unshare = shutil.which("unshare")
    assert unshare, "util-linux's unshare is needed to place the token at the standard path"
    server = urlsplit(api.configuration.host)
    # What the kubelet projects: a bound token, the cluster CA (kube-root-ca.crt), the namespace.
    files = tmp_path / "serviceaccount"
    files.mkdir()
    ca = wait_for(
        lambda: (core.read_namespaced_config_map("kube-root-ca.crt", NS).data or {}).get("ca.crt"),
        30,
        "kube-root-ca.crt published in the release namespace",
    )
    (files / "ca.crt").write_text(ca)
    (files / "token").write_text(service_account_token(core, NS, FULLNAME))
    (files / "namespace").write_text(NS)
    env = {
        **_pod_env(installed),
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
        "KUBECONFIG": "",  # no kubeconfig anywhere: ours, nor ~/.kube/config under this HOME
        "HOME": str(tmp_path),
    }
    scheduler.stop()
    proc = SchedulerProcess(
        None,
        _config_file(installed, tmp_path),
        name="helm-in-cluster",
        env=env,
        prefix=[unshare, "--mount", "--propagation", "private", "sh", "-c", IN_POD, str(files)],
    )
    try:
        node = nodes("n1")
        proc.start(wait_for_line=b"Successfully acquired lease")
        _opted_in_pod_is_bound(proc, core, namespace, node, "via-in-cluster")
        assert proc.stop() == 0
        assert not Path(SA_DIR).exists()  # the host's /run was never touched
    finally:
        if proc.proc is not None:
            proc.stop(signal.SIGKILL)
        scheduler.start()


def test_without_the_files_in_cluster_login_fails(
    installed: dict[tuple[str, str], dict[str, Any]], api: client.ApiClient, tmp_path: Path
) -> None:
    """The control for the test above: the same environment minus the mounted files gets nowhere."""
    server = urlsplit(api.configuration.host)
    env = {
        **_pod_env(installed),
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
        "KUBECONFIG": "",
        "HOME": str(tmp_path),
    }
    proc = SchedulerProcess(None, _config_file(installed, tmp_path), name="helm-no-files", env=env)
    with pytest.raises(AssertionError):  # start() asserts the process is still running
        proc.start(wait_for_line=b"Successfully acquired lease")
    assert proc.proc is not None and proc.proc.wait(timeout=30) != 0
    assert "token" in proc.log().lower() or "serviceaccount" in proc.log().lower(), proc.log()[-2000:]
