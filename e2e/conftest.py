"""e2e fixtures: a real control plane (built from Go modules), the scheduler as a real process.

The cluster comes from ``e2e/cluster/`` unless ``SPREAD_E2E_KUBECONFIG`` names one to use instead
(kind, or any cluster with no other scheduler named ``spread-scheduler``). ``SPREAD_E2E_KUBE_VERSION``
(``1.36.3``, ``1.37.2``; default e2e/build.py's ``K8S_VERSION``) picks the local control plane's release,
and so the kube-scheduler the parity tests run beside ours; ours follows the API server's /version.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from e2e.build import K8S_VERSION, release
from e2e.cluster import Cluster
from e2e.kube_helpers import ZONE, create_namespace, create_node, pod_body, wait_for
from e2e.ledger import Ledger, lease_terms, summary, writes_after_losing, writes_without_lease

ROOT = Path(__file__).resolve().parent.parent
LOGS = (
    Path(os.environ["SPREAD_E2E_DIR"]) / "e2e-logs"
    if os.environ.get("SPREAD_E2E_DIR")
    else ROOT / ".cluster" / "e2e-logs"
)

# Half a kubelet's node Lease (40 s) and the node lifecycle controller's grace period (50 s -> 20 s),
# the ratio kept (kwok renews every 5 s, four renewals per grace period): a zone lost in a test turns
# Unknown in 20 s. The suite's nodes are few, so the renewals stay cheap.
NODE_LEASE_SECONDS, NODE_MONITOR_GRACE_SECONDS = 20, 20


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[Cluster | None]:
    """Our control plane (None when ``SPREAD_E2E_KUBECONFIG`` names another cluster)."""
    if os.environ.get("SPREAD_E2E_KUBECONFIG"):
        yield None
        return
    # SPREAD_E2E_DIR lets two runs (say, the suite and a full-size fault run) keep separate clusters;
    # SPREAD_E2E_KUBE_VERSION (1.36.3, 1.37.2) another release of the control plane and of the
    # kube-scheduler beside ours, in a directory of its own.
    version = release(os.environ.get("SPREAD_E2E_KUBE_VERSION") or K8S_VERSION).version
    default = ROOT / ".cluster" / ("e2e" if version == K8S_VERSION else f"e2e-{version}")
    cluster = Cluster(
        os.environ.get("SPREAD_E2E_DIR") or default,
        version=version,
        node_lease_seconds=NODE_LEASE_SECONDS,
        node_monitor_grace_seconds=NODE_MONITOR_GRACE_SECONDS,
    )
    cluster.up()
    _LOCAL.append(cluster)
    try:
        yield cluster
    finally:
        _LOCAL.clear()
        cluster.down()


@pytest.fixture
def ledger(local_cluster: Cluster | None) -> Ledger:
    """The API server's audit log (needs our control plane: it is started with the audit policy)."""
    if local_cluster is None:
        pytest.skip("reads the API server's audit log: needs the local control plane")
    return local_cluster.ledger


@pytest.fixture(scope="session")
def kubeconfig(local_cluster: Cluster | None) -> str:
    return os.environ.get("SPREAD_E2E_KUBECONFIG") or str(local_cluster.kubeconfig if local_cluster else "")


@pytest.fixture
def control_plane(local_cluster: Cluster | None) -> Cluster:
    """Tests that break the control plane on purpose need ours."""
    if local_cluster is None:
        pytest.skip("breaks the control plane on purpose: needs the local one, not SPREAD_E2E_KUBECONFIG's")
    return local_cluster


@pytest.fixture(scope="session")
def api(kubeconfig: str) -> client.ApiClient:
    return config.new_client_from_config(config_file=kubeconfig)


@pytest.fixture(scope="session")
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def free_port() -> int:
    """A port nobody listens on right now (``--secure-port=0`` means "do not serve", as upstream)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def insecure_tls() -> ssl.SSLContext:
    """Like ``curl -k``: the scheduler's certificate is self-signed unless a test gives one."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@functools.cache
def scraper_token(kubeconfig: str) -> str:
    """A ServiceAccount token bound to the shipped ``spread-scheduler-metrics-reader`` ClusterRole.

    ``kubeconfig`` must be allowed to create RBAC objects (the admin one). Cached: one per session.
    """
    api = config.new_client_from_config(config_file=kubeconfig)
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    docs = yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text())
    reader = next(d for d in docs if d and d["metadata"]["name"] == "spread-scheduler-metrics-reader")
    binding = {
        "metadata": {"name": "e2e-metrics-scraper"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": reader["metadata"]["name"]},
        "subjects": [{"kind": "ServiceAccount", "name": "e2e-metrics-scraper", "namespace": "default"}],
    }
    for create in (
        lambda: rbac.create_cluster_role(reader),
        lambda: core.create_namespaced_service_account("default", {"metadata": {"name": "e2e-metrics-scraper"}}),
        lambda: rbac.create_cluster_role_binding(binding),
    ):
        try:
            create()
        except client.ApiException as exc:
            if exc.status != 409:
                raise
    request = {"spec": {"expirationSeconds": 86400}}
    token: str = core.create_namespaced_service_account_token("e2e-metrics-scraper", "default", request).status.token
    return token


# JSON lines, so tests read fields; -v 3 has every pod's cycle and Binding in upstream's words.
LOG_FLAGS = ("--logging-format", "json", "-v", "3")


# The session scheduler's Lease (e2e/ledger.py judges who held it when from the server's record).
# Short (6/5/1 s) so a SIGKILLed scheduler's successor waits seconds; SPREAD_E2E_LEASE=shipped gives
# the shipped 15/10/2 s (``make reliability`` runs the 10,000-pod load so: on this 2-core machine that
# load slows the API server's answers to lease requests past a short renewDeadline). 4/3/1 s lost the
# Lease in the 1,000-pod load while two other releases' control planes started beside it (docs/testing.md).
SESSION_LEASE = {"short": (6, 5, 1), "shipped": (15, 10, 2)}[os.environ.get("SPREAD_E2E_LEASE", "short")]
LEASE_NAMESPACE, LEASE_NAME, LEASE_DURATION = "kube-system", "spread-scheduler", timedelta(seconds=SESSION_LEASE[0])
_LOCAL: list[Cluster] = []  # the session's local control plane, once up


def session_counts(ledger: Ledger, mark: int, namespace: str, users: list[str]) -> dict[str, int]:
    """What the session scheduler's processes (``users``) attempted since ``mark`` in ``namespace``,
    from the server's record, and their writes at a moment they did not hold the session's Lease
    (its story read from the start of the log: the first incarnation took it before any test)."""
    writes = ledger.writes(mark)
    terms = lease_terms(ledger.writes(), LEASE_NAMESPACE, LEASE_NAME, LEASE_DURATION)
    mine = [w for w in writes if w.user in users]
    return {
        **summary(writes, namespace, users),
        "writes_without_lease": len(writes_without_lease(writes, terms, users)),
        "writes_after_losing_lease": len(writes_after_losing(mine, terms)),
    }


_SERIAL = itertools.count(1)


class SchedulerProcess:
    """``spread-scheduler run`` as a child process, with its log in ``.cluster/e2e-logs``.

    It serves HTTPS on 127.0.0.1 and a free port (``address``); ``metrics()`` scrapes with a token of
    the metrics-reader ClusterRole, or anonymously when ``/metrics`` is among ``extra_args``'
    always-allowed paths (a scrape during an API outage cannot have its token reviewed).
    """

    def __init__(
        self,
        kubeconfig: str | None,
        config: str | None = None,
        name: str = "scheduler",
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        prefix: list[str] | None = None,
    ) -> None:
        """``kubeconfig`` None: in-cluster login; ``env`` is added to ours; ``prefix`` wraps the command."""
        self.kubeconfig = kubeconfig
        self.config = config
        self.name = name
        self.extra_args = extra_args
        self.env = env or {}
        self.prefix = prefix or []
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0
        self.log_path = LOGS / f"{name}-0.log"
        self.address = ""
        # The user each incarnation logged in as, when it used the local cluster's admin kubeconfig:
        # a client certificate of its own, so the ledger (e2e/ledger.py) attributes every write.
        self.users: list[str] = []

    def start(self, wait_for_line: bytes = b"cache synced") -> None:
        LOGS.mkdir(parents=True, exist_ok=True)
        self.runs += 1
        self.log_path = LOGS / f"{self.name}-{self.runs}.log"
        extra = ["--config", self.config] if self.config else []
        login = ["--kubeconfig", self._login_kubeconfig()] if self.kubeconfig else []
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    *self.prefix,
                    str(Path(sys.executable).parent / "spread-scheduler"),
                    "run",
                    *login,
                    "--bind-address",
                    "127.0.0.1",
                    "--secure-port",
                    str(port),
                    *LOG_FLAGS,
                    *extra,
                    *self.extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
            )
        wait_for(lambda: wait_for_line in self.log_path.read_bytes() or self._died(), 60, "scheduler start")
        assert self.proc.poll() is None, self.log_path.read_text()[-3000:]

    def _login_kubeconfig(self) -> str:
        assert self.kubeconfig
        local = _LOCAL[0] if _LOCAL else None
        if local is None or Path(self.kubeconfig) != local.kubeconfig:
            return self.kubeconfig
        user = f"{self.name}-{self.runs}-{next(_SERIAL)}"
        self.users.append(user)
        return str(local.user_kubeconfig(user))

    def _died(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        self.proc = None
        return code

    def log(self) -> str:
        return self.log_path.read_text()

    def metrics(self) -> dict[str, float]:
        """``/metrics`` of the running process, as ``{'name{labels}': value}``."""
        request = urllib.request.Request(f"https://{self.address}/metrics")
        if not any("/metrics" in arg for arg in self.extra_args):
            request.add_header("Authorization", f"Bearer {scraper_token(self.kubeconfig)}")
        with urllib.request.urlopen(request, timeout=10, context=insecure_tls()) as response:
            text = response.read().decode()
        values: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        return values


@pytest.fixture(scope="session")
def scheduler(kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchedulerProcess]:
    # Leader election on, with a short lease so a SIGKILL'd scheduler's successor waits seconds, not 15.
    config = tmp_path_factory.mktemp("config") / "scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"leaderElection: {{leaderElect: true, leaseDuration: {SESSION_LEASE[0]}s, renewDeadline: {SESSION_LEASE[1]}s,"
        f" retryPeriod: {SESSION_LEASE[2]}s, resourceNamespace: {LEASE_NAMESPACE}, resourceName: {LEASE_NAME}}}\n"
    )
    proc = SchedulerProcess(kubeconfig, str(config))
    proc.start()
    yield proc
    if proc.proc is not None:
        assert proc.stop() == 0, "the scheduler must exit 0 on SIGTERM"


@pytest.fixture
def kube_scheduler(
    kubeconfig: str, local_cluster: Cluster | None, tmp_path: Path
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start upstream kube-scheduler (the local control plane's release) with one profile (``schedulerName``
    and plugins as given).

    Runs on our local control plane only: an external cluster already has its own default-scheduler.
    """
    if local_cluster is None:
        pytest.skip("needs the local control plane: an external cluster has its own default-scheduler")
    from e2e.cluster import start_kube_scheduler  # noqa: PLC0415 - only with the local control plane

    started: list[subprocess.Popen[bytes]] = []

    def start(profile: dict[str, Any], extra: dict[str, Any] | None = None) -> subprocess.Popen[bytes]:
        """``extra``: more top-level fields of the configuration (``extenders``...)."""
        config = tmp_path / f"kube-scheduler-{len(started)}.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"kubeconfig": kubeconfig, "qps": 50, "burst": 100},
                    "leaderElection": {"leaderElect": False},
                    "profiles": [profile],
                    **(extra or {}),
                }
            )
        )
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / f"kube-scheduler-{profile['schedulerName']}.log"
        log.unlink(missing_ok=True)
        proc = start_kube_scheduler(local_cluster, config, log)
        started.append(proc)
        wait_for(lambda: b"Starting Kubernetes Scheduler" in log.read_bytes(), 60, "kube-scheduler started")
        return proc

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=30)


ORPHAN_TEST = "test_the_pods_of_a_deleted_node_are_collected"


@pytest.fixture(scope="session", autouse=True)
def orphaned(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """For ``test_running_pods``' last test, when it is selected: a pod we bound, Running, whose node
    is then deleted, made at the session's start so that the pod garbage collector's fixed quarantine
    (40 s, and its 20 s period) runs during the tests before that one, not as a wait of its own. Its
    own namespace; the node is gone before any test looks at nodes. None without kwok (bound pods
    stay Pending) or when that test is not selected."""
    if not any(item.name == ORPHAN_TEST for item in request.session.items):
        yield None
        return
    cluster: Cluster | None = request.getfixturevalue("local_cluster")
    if cluster is not None and not cluster.kwok:
        yield None
        return
    core: client.CoreV1Api = request.getfixturevalue("core")
    request.getfixturevalue("scheduler")
    name = f"e2e-orphan-{uuid.uuid4().hex[:6]}"
    create_namespace(core, name)
    node = f"gone-{uuid.uuid4().hex[:4]}"
    create_node(core, node, labels={ZONE: "a"})
    try:
        core.create_namespaced_pod(name, pod_body("orphan"))
        wait_for(lambda: core.read_namespaced_pod("orphan", name).status.phase == "Running", 30, "orphan Running")
    finally:
        core.delete_node(node)
    wait_for(lambda: node not in {n.metadata.name for n in core.list_node().items}, 30, "the orphan's node deleted")
    yield name
    core.delete_namespace(name, grace_period_seconds=0)


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    create_namespace(core, name)
    yield name
    core.delete_namespace(name, grace_period_seconds=0)


@pytest.fixture
def resources(api: client.ApiClient) -> Iterator[client.CustomObjectsApi]:
    """The CustomObjectsApi, for the DRA objects a test makes as a driver would; the DeviceClasses and
    ResourceSlices named ``live-...`` are deleted afterwards (they are cluster-wide)."""
    objects = client.CustomObjectsApi(api)
    yield objects
    for plural in ("resourceslices", "deviceclasses"):
        for item in objects.list_cluster_custom_object("resource.k8s.io", "v1", plural)["items"]:
            if item["metadata"]["name"].startswith("live-"):
                objects.delete_cluster_custom_object("resource.k8s.io", "v1", plural, item["metadata"]["name"])


@pytest.fixture
def nodes(core: client.CoreV1Api) -> Iterator[Callable[..., str]]:
    """Create fake nodes for one test; all of them are deleted afterwards (nodes are cluster-wide)."""
    created: list[str] = []
    prefix = uuid.uuid4().hex[:5]

    def make(name: str, **kwargs: Any) -> str:
        full = f"{prefix}-{name}"
        create_node(core, full, **kwargs)
        created.append(full)
        return full

    yield make
    for name in created:
        try:
            core.delete_node(name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
    wait_for(lambda: not {n.metadata.name for n in core.list_node().items} & set(created), 30, "node cleanup")


@pytest.fixture(autouse=True)
def _session_scheduler_survives(request: pytest.FixtureRequest) -> Iterator[None]:
    """The session's scheduler exiting during a test, unasked (a lease lost, a stall), fails that test
    with the exit code and the log's end, and is started again for the next: otherwise the test fails
    on what the exit left undone (pods never bound), and a later test that restarts it hides the exit."""
    if "scheduler" not in request.fixturenames:
        yield
        return
    session: SchedulerProcess = request.getfixturevalue("scheduler")
    running = session.proc
    yield
    if running is not None and session.proc is running and running.poll() is not None:
        tail = session.log()[-3000:]
        session.proc = None
        session.start()
        pytest.fail(
            f"the session's scheduler exited ({running.returncode}) during the test, unasked; its log ends: {tail}"
        )


@pytest.fixture(autouse=True)
def _no_foreign_nodes(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests assume they see only their own nodes; give a clear message if a previous test leaked some."""
    if "core" not in request.fixturenames:
        yield
        return
    core: client.CoreV1Api = request.getfixturevalue("core")
    leftover = [n.metadata.name for n in core.list_node().items]
    assert not leftover, f"nodes left over from an earlier test: {leftover}"
    yield


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: e2e tests that take more than a few seconds")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
