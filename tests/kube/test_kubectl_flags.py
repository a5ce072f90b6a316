"""``kubectl spread`` with kubectl's global flags (``--kubeconfig``, ``--context``, ``--cluster``,
``--user``, ``-n``, ``-A``) before or after the command, against a fake API server that answers as
RBAC would: ``admin`` may list everything, ``alice`` the nodes and namespace ``shop``, ``bob``
namespace ``shop`` only."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli import kubectl_main
from scheduler.kube.client import credentials
from scheduler.simulate import load_objects

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "rebalance.yaml")
# Where each kind the example holds is listed.
PATHS = {
    "Node": ("/api/v1", "nodes"),
    "Pod": ("/api/v1", "pods"),
    "ReplicaSet": ("/apis/apps/v1", "replicasets"),
}


class Api:
    """The example's objects behind RBAC; records (user, path, status) of every request."""

    def __init__(self) -> None:
        self.objects = load_objects(EXAMPLE)
        self.asked: list[tuple[str, str, int]] = []

    def allowed(self, user: str, path: str) -> bool:
        if user == "admin":
            return True
        if "/namespaces/shop/" in path:
            return user in ("alice", "bob")
        return user == "alice" and path == "/api/v1/nodes"

    def answer(self, user: str, path: str) -> tuple[int, dict[str, Any]]:
        if path == "/version":  # readable by every user (system:public-info-viewer), as upstream's
            return 200, {"major": "1", "minor": "37", "gitVersion": "v1.37.2"}
        if not self.allowed(user, path):
            resource = path.rsplit("/", 1)[-1]
            message = f'{resource} is forbidden: User "{user}" cannot list resource "{resource}"'
            return 403, {"kind": "Status", "status": "Failure", "message": message, "code": 403}
        items = []
        for obj in self.objects:
            prefix, plural = PATHS.get(str(obj["kind"]), ("", ""))
            namespace = obj["metadata"].get("namespace")
            if path in (f"{prefix}/{plural}", f"{prefix}/namespaces/{namespace}/{plural}"):
                items.append(obj)
        return 200, {"kind": "List", "metadata": {}, "items": items}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Api, str]]:
    fake = Api()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            user = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            path = self.path.partition("?")[0]
            status, body = fake.answer(user, path)
            fake.asked.append((user, path, status))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(credentials, "_loaded", {})
    monkeypatch.delenv("KUBECONFIG", raising=False)
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _kubeconfig(tmp_path: Path, server: str, current: str = "admin") -> str:
    """Two clusters (one unreachable), three users, a context per user; the current one admin's."""
    path = tmp_path / f"kubeconfig-{current}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "clusters": [
            {"name": "local", "cluster": {"server": server}},
            {"name": "gone", "cluster": {"server": "http://127.0.0.1:1"}},
        ],
        "users": [{"name": u, "user": {"token": u}} for u in ("admin", "alice", "bob")],
        "contexts": [
            {"name": "admin", "context": {"cluster": "gone", "user": "admin", "namespace": "other"}},
            {"name": "shop", "context": {"cluster": "local", "user": "alice", "namespace": "shop"}},
            {"name": "bob", "context": {"cluster": "local", "user": "bob", "namespace": "shop"}},
        ],
    }
    path.write_text(json.dumps(config))
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = kubectl_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _workloads(out: str) -> list[tuple[str, str, str]]:
    return [(w["namespace"], w["kind"], w["name"]) for w in json.loads(out)["workloads"]]


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--kubeconfig", "K", "--context", "shop", "skew", "-o", "json"], id="before"),
        pytest.param(["skew", "--kubeconfig=K", "--context=shop", "-o", "json"], id="after"),
        pytest.param(["--context", "shop", "skew", "-n=shop", "--kubeconfig", "K", "-o=json"], id="both"),
        pytest.param(
            ["-n", "shop", "--kubeconfig=K", "--cluster", "local", "--user", "alice", "skew", "-ojson"],
            id="cluster-user",
        ),
    ],
)
def test_a_namespace_user_reads_its_namespace_with_kubectls_flags_anywhere(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, api: tuple[Api, str], argv: list[str]
) -> None:
    fake, server = api
    kubeconfig = _kubeconfig(tmp_path, server)
    code, out, err = _run(capsys, *(a.replace("K", kubeconfig) if "K" in a else a for a in argv))
    assert code == 0, err
    assert ("shop", "Deployment", "web") in _workloads(out)
    users = {user for user, _, _ in fake.asked}
    assert users == {"alice"}  # --context's user, or --user's, on --cluster's server
    asked = {path: status for _, path, status in fake.asked}
    assert asked["/api/v1/namespaces/shop/pods"] == 200
    assert asked["/apis/apps/v1/namespaces/shop/replicasets"] == 200
    assert asked["/api/v1/nodes"] == 200
    # Namespaced kinds are never listed cluster-wide but the pods, tried and refused: only optional ones.
    assert "/apis/apps/v1/replicasets" not in asked and "/api/v1/services" not in asked
    refused = sorted(path for path, status in asked.items() if status == 403)
    assert "/api/v1/pods" in refused and "/api/v1/nodes" not in refused


def test_with_a_namespace_only_its_pods_are_required(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, api: tuple[Api, str]
) -> None:
    """The flags every version took: a user whose Role covers one namespace is not refused."""
    fake, server = api
    code, out, err = _run(
        capsys, "skew", "--kubeconfig", _kubeconfig(tmp_path, server, "shop"), "-n", "shop", "-o", "json"
    )
    assert code == 0, err
    assert _workloads(out) == [
        ("shop", "Deployment", "api"),
        ("shop", "Deployment", "cache"),
        ("shop", "Deployment", "web"),
    ]
    assert ("alice", "/api/v1/namespaces/shop/pods", 200) in fake.asked


def test_all_namespaces_ignores_the_namespace_and_lists_cluster_wide(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, api: tuple[Api, str]
) -> None:
    fake, server = api
    kubeconfig = _kubeconfig(tmp_path, server)
    code, out, err = _run(
        capsys, "-A", "--kubeconfig", kubeconfig, "skew", "-n", "other", "--cluster=local", "-o", "json"
    )
    assert code == 0, err
    assert ("shop", "Deployment", "web") in _workloads(out)
    assert {path for _, path, _ in fake.asked} >= {"/api/v1/pods", "/apis/apps/v1/replicasets"}
    assert {user for user, _, _ in fake.asked} == {"admin"}


def test_a_user_who_may_not_list_nodes_is_told_which_permission_is_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, api: tuple[Api, str]
) -> None:
    _, server = api
    admins = _kubeconfig(tmp_path, server)
    for argv in (
        ["rebalance", "--dry-run", "--kubeconfig", _kubeconfig(tmp_path, server, "bob")],
        ["--kubeconfig", admins, "--context", "bob", "rebalance", "--dry-run"],
        ["skew", "--context=bob", "--kubeconfig", admins],
    ):
        code, out, err = _run(capsys, *argv)
        assert (code, out) == (1, "")
        assert err.count("\n") == 1 and "Traceback" not in err
        assert '"list" on "nodes" at the cluster scope' in err and "ClusterRole" in err, err


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ("--context=nope", 'context "nope" does not exist'),
        ("--cluster=nope", 'cluster "nope" does not exist'),
        ("--user=nope", 'auth info "nope" does not exist'),
    ],
)
def test_a_context_cluster_or_user_that_is_not_there_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, api: tuple[Api, str], flag: str, words: str
) -> None:
    _, server = api
    code, _, err = _run(capsys, flag, "skew", "--kubeconfig", _kubeconfig(tmp_path, server))
    assert code == 1 and words in err and err.count("\n") == 1, err
