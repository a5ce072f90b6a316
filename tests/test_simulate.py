"""``spread-scheduler simulate`` end to end: the shipped examples, input formats, output, exit codes.

Expected values are derived by hand from the rules of the spec (sections 1.5, 3.3, 4.5, 4.7, 6.2)
in the comments next to them, never read back from the code. Our default profile scores with
TaintToleration (x3), NodeAffinity (x2), NodeResourcesFit (x1), PodTopologySpread (x2),
InterPodAffinity (x2), DynamicResources (x2, always 0 for a pod without resource claims, as upstream's),
NodeResourcesBalancedAllocation (x1) and ImageLocality (x1) and has no PostFilter plugin, so a FitError
message ends after the filter histogram. The examples' pods request nothing, so BalancedAllocation
skips them at PreScore (upstream #129138); their nodes list no images, so ImageLocality scores 0
everywhere (the sum 0 is clamped up to the 23 MB floor, which maps to 0).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cli import main
from scheduler.testing import make_node, make_pod
from tests.helpers import NO_CLAIMS, preemption_not_helpful

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SPREAD = "node(s) didn't match pod topology spread constraints"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PTS_SKEW = {"plugin": "PodTopologySpread", "reason": SPREAD, "code": "Unschedulable"}
UNRESOLVABLE = "UnschedulableAndUnresolvable"
FOO = {"foo": "bar"}
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


# The tables and scores below are kube-scheduler 1.35's (simulate's default is the newest minor).
AS_1_35 = ("--kube-version", "1.35")


def simulate_json(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    assert main(["simulate", *args, *AS_1_35, "--output", "json"]) == 0
    results: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["results"]
    return results


def node(
    verdict: dict[str, str] | None = None, scores: dict[str, Any] | None = None, total: int | None = None
) -> dict[str, Any]:
    """One entry of ``nodes`` in the JSON output."""
    return {"filter": verdict, "scores": scores or {}, "total": total}


def success(pod: str, host: str, nodes: dict[str, Any]) -> dict[str, Any]:
    """A result that placed ``pod`` on ``host``: no rejecting plugins."""
    message = f"Successfully assigned {pod} to {host}"
    return {"pod": pod, "node": host, "code": "Success", "message": message, **NO_PLUGINS, **UNBATCHED, "nodes": nodes}


def failure(
    pod: str, message: str, nodes: dict[str, Any], *, code: str = "Unschedulable", plugins: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A result that placed nothing: the status code, the message and the plugins that rejected the pod;
    with a FitError (Unschedulable), DefaultPreemption ran and found no node (null, no victims)."""
    preempted = {"nominatedNode": None, "victims": []} if code == "Unschedulable" else {}
    return {
        "pod": pod,
        "node": None,
        "code": code,
        "message": message,
        "unschedulablePlugins": sorted(plugins),
        "pendingPlugins": [],
        **UNBATCHED,
        "nodes": nodes,
        **preempted,
    }


NO_PLUGINS: dict[str, list[str]] = {"unschedulablePlugins": [], "pendingPlugins": []}
UNBATCHED = {"batched": False}  # System defaulting (our default) never batches
GI = 1024**3
NON_ZERO_CPU, NON_ZERO_MEMORY = 100, 200 * 1024**2  # scoring defaults for pods without requests


def least_allocated(pods: int, cpu_milli: int = 4000, memory: int = 16 * GI) -> int:
    """NodeResourcesFit's LeastAllocated score for ``pods`` request-less pods (incoming one included).

    Per resource (capacity - requested) * 100 // capacity, then the weight-1 average, floored.
    """
    cpu = (cpu_milli - pods * NON_ZERO_CPU) * 100 // cpu_milli
    mem = (memory - pods * NON_ZERO_MEMORY) * 100 // memory
    return (cpu + mem) // 2


def scored(tt: int, pts: tuple[int, int] | None = None, fit: int | None = None) -> dict[str, Any]:
    """A feasible node's entry: normalized TaintToleration (raw 0), NodeResourcesFit, (raw, normalized) PTS,
    and ImageLocality's 0 (no node holds an image)."""
    scores: dict[str, Any] = {
        "TaintToleration": {"raw": 0, "normalized": tt},
        "ImageLocality": {"raw": 0, "normalized": 0},
    }
    total = tt * 3
    if fit is not None:
        scores["NodeResourcesFit"] = {"raw": fit, "normalized": fit}
        total += fit
    if pts is not None:
        scores["PodTopologySpread"] = {"raw": pts[0], "normalized": pts[1]}
        total += pts[1] * 2
    scores["DynamicResources"] = {"raw": 0, "normalized": 0}
    return node(None, scores, total)


class TestTwoZonesExample:
    """``examples/two-zones.yaml``: cluster A of the spec (TV-1) plus a softly spread second pod."""

    def test_hard_zone_spread_then_soft_spread(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Every field of both results."""
        incoming, soft = simulate_json(capsys, str(EXAMPLES / "two-zones.yaml"), "--seed", "1")
        # incoming (TV-1): zoneA holds p1, p2 -> 2; zoneB holds p3 -> 1; min 1. zoneA nodes: 2+1-1 = 2 > 1
        # fail; zoneB nodes 1+1-1 = 1 pass. PodTopologySpread has no soft constraint -> PreScore Skip,
        # NodeAffinity has no preferred term -> Skip; TaintToleration: no taints -> 100 (x3 = 300) each.
        # NodeResourcesFit (4 CPU, 16Gi, request-less pods count 100m/200Mi): node3 holds p3 -> 2 pods
        # -> (95 + 97) // 2 = 96; node4 empty -> 1 pod -> (97 + 98) // 2 = 97: node4 breaks the tie.
        assert least_allocated(2) == 96 and least_allocated(1) == 97
        assert incoming == success(
            "default/incoming",
            "node4",
            {
                "node1": node(PTS_SKEW),
                "node2": node(PTS_SKEW),
                "node3": scored(100, fit=96),
                "node4": scored(100, fit=97),
            },
        )
        # soft: zone (maxSkew 1) + hostname (maxSkew 1), both ScheduleAnyway, all 4 nodes feasible.
        # Zone weight ln(2+2) = 1.3863 (2 zones), hostname weight ln(4+2) = 1.7918 (4 feasible nodes);
        # raw = round(zoneCount*1.3863 + 0 + nodeCount*1.7918 + 0), maxSkew-1 = 0. Every node holds one
        # pod and both zones two -> raw 5 everywhere -> 100 each; NodeResourcesFit 96 each (2 pods):
        # a four-way tie.
        expected = {n: scored(100, (5, 100), fit=96) for n in ("node1", "node2", "node3", "node4")}
        assert soft["node"] in expected
        assert soft == success("default/soft", soft["node"], expected)

    def test_seed_makes_tie_breaking_repeatable(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The same seed gives the same output; over seeds every tied node comes up for the soft pod."""
        path = str(EXAMPLES / "two-zones.yaml")
        first = {seed: simulate_json(capsys, path, "--seed", str(seed)) for seed in range(24)}
        again = {seed: simulate_json(capsys, path, "--seed", str(seed)) for seed in range(24)}
        assert first == again
        assert {results[1]["node"] for results in first.values()} == {"node1", "node2", "node3", "node4"}

    def test_table(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The table names the decision, every node, its verdict, and the weighted score columns."""
        assert main(["simulate", str(EXAMPLES / "two-zones.yaml"), "--seed", "1", *AS_1_35]) == 0
        table = capsys.readouterr().out
        lines = table.splitlines()
        assert lines[0] == "pod default/incoming: -> node4"
        assert lines[1].split() == [
            *("NODE", "FILTER", "TaintToleration", "(x3)", "NodeResourcesFit", "(x1)"),
            *("DynamicResources", "(x2)", "ImageLocality", "(x1)", "TOTAL"),
        ]
        rows = {line.split()[0]: line for line in lines[2:6]}
        assert set(rows) == {"node1", "node2", "node3", "node4"}
        assert f"PodTopologySpread: {SPREAD}" in rows["node1"] and f"PodTopologySpread: {SPREAD}" in rows["node2"]
        zero = ("0", "(raw", "0)")  # DynamicResources, ImageLocality
        assert rows["node3"].split()[1:] == ["ok", "100", "(raw", "0)", "96", "(raw", "96)", *zero, *zero, "396"]
        assert rows["node4"].split()[1:] == ["*", "ok", "100", "(raw", "0)", "97", "(raw", "97)", *zero, *zero, "397"]
        assert "PodTopologySpread (x2)" in table and "pod default/soft: -> " in table


class TestMinDomainsExample:
    """``examples/min-domains.yaml`` (TV-10): three domains, ``minDomains: 5``."""

    def test_json(self, capsys: pytest.CaptureFixture[str]) -> None:
        """3 domains < 5, so the minimum counts as 0: every node 1+1-0 = 2 > 1."""
        (result,) = simulate_json(capsys, str(EXAMPLES / "min-domains.yaml"))
        assert result == failure(
            "default/db-4",
            f"0/3 nodes are available: 3 {SPREAD}. {NO_CLAIMS}, {preemption_not_helpful(3, no_victims=3)}",
            {"n1": node(PTS_SKEW), "n2": node(PTS_SKEW), "n3": node(PTS_SKEW)},
            plugins=("PodTopologySpread",),
        )

    def test_table_shows_the_message_and_each_node(self, capsys: pytest.CaptureFixture[str]) -> None:
        """UNSCHEDULABLE with the message, then one row per node with its reason."""
        assert main(["simulate", str(EXAMPLES / "min-domains.yaml"), *AS_1_35]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == (
            f"pod default/db-4: UNSCHEDULABLE: 0/3 nodes are available: 3 {SPREAD}. "
            f"{NO_CLAIMS}, {preemption_not_helpful(3, no_victims=3)}"
        )
        assert lines[1] == "  preemption: no node (preemption would not help)"
        assert lines[2].split() == ["NODE", "FILTER", "TOTAL"]
        assert [line.split(maxsplit=1) for line in lines[3:6]] == [
            ["n1", f"PodTopologySpread: {SPREAD}"],
            ["n2", f"PodTopologySpread: {SPREAD}"],
            ["n3", f"PodTopologySpread: {SPREAD}"],
        ]

    def test_the_variants_its_header_suggests(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """minDomains 3: the minimum is 1 again, every node fits. A fourth node: n4 takes the pod."""
        items = yaml.safe_load((EXAMPLES / "min-domains.yaml").read_text())["items"]
        pending = items[-1]
        pending["spec"]["topologySpreadConstraints"][0]["minDomains"] = 3
        path = tmp_path / "three.yaml"
        path.write_text(yaml.safe_dump({"kind": "List", "items": items}))
        (result,) = simulate_json(capsys, str(path), "--seed", "0")
        # 3 domains >= 3: min 1, each node 1 + 1 - 1 = 1 <= 1; TaintToleration 100 each, PTS skips
        # (no soft constraint), NodeResourcesFit 96 each (one pod there + this one): a three-way tie.
        assert result["node"] in ("n1", "n2", "n3")
        assert all(entry == scored(100, fit=least_allocated(2)) for entry in result["nodes"].values())

        pending["spec"]["topologySpreadConstraints"][0]["minDomains"] = 5
        items.insert(0, make_node("n4").capacity(cpu="4", memory="16Gi", pods="110").dict())
        path.write_text(yaml.safe_dump({"kind": "List", "items": items}))
        (result,) = simulate_json(capsys, str(path))
        # 4 domains < 5: min 0; n1..n3 1 + 1 - 0 = 2 > 1, n4 0 + 1 - 0 = 1: the only feasible node.
        assert result["node"] == "n4"
        assert result["nodes"]["n4"] == node()
        assert [result["nodes"][n] for n in ("n1", "n2", "n3")] == [node(PTS_SKEW)] * 3

    def test_console_script(self) -> None:
        """The installed ``spread-scheduler`` entry point prints the same JSON."""
        exe = Path(sys.executable).parent / "spread-scheduler"
        done = subprocess.run(
            [str(exe), "simulate", str(EXAMPLES / "min-domains.yaml"), "-o", "json"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        (result,) = json.loads(done.stdout)["results"]
        assert result["node"] is None
        assert (
            result["message"]
            == f"0/3 nodes are available: 3 {SPREAD}. {preemption_not_helpful(3, no_victims=3)}"  # as 1.37
        )

    def test_console_script_runs(self) -> None:
        """The entry point's default table output carries the message too."""
        exe = Path(sys.executable).parent / "spread-scheduler"
        out = subprocess.run(
            [str(exe), "simulate", str(EXAMPLES / "min-domains.yaml")],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert "0/3 nodes are available" in out.stdout


class TestNodeAffinitySkewExample:
    """``examples/node-affinity-skew.yaml`` (TV-11, issue #106971)."""

    def test_json(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Honor leaves kind-worker2's pods out; Ignore counts them and flips the answer."""
        honor, ignore = simulate_json(capsys, str(EXAMPLES / "node-affinity-skew.yaml"))
        # honor: kind-worker2 fails NodeAffinity first (filter order). nodeAffinityPolicy Honor: only
        # kind-worker (zoneA, 0 pods) and kind-worker3 (zoneB, 1 pod) count; min 0.
        # kind-worker 0+1-0 = 1 ok; kind-worker3 1+1-0 = 2 > 1. One feasible node: no scoring.
        assert honor == success(
            "default/honor",
            "kind-worker",
            {
                "kind-worker": node(),
                "kind-worker2": node({"plugin": "NodeAffinity", "reason": AFFINITY, "code": UNRESOLVABLE}),
                "kind-worker3": node(PTS_SKEW),
            },
        )
        # ignore: every node counts. zoneA = 2 (kind-worker2) + 1 (honor, now on kind-worker) = 3,
        # zoneB = 1; min 1. kind-worker 3+1-1 = 3 > 1; kind-worker3 1+1-1 = 1 ok.
        assert ignore == success(
            "default/ignore",
            "kind-worker3",
            {
                "kind-worker": node(PTS_SKEW),
                "kind-worker2": node({"plugin": "NodeAffinity", "reason": AFFINITY, "code": UNRESOLVABLE}),
                "kind-worker3": node(),
            },
        )


def kubectl_items() -> list[dict[str, Any]]:
    """TV-7 as ``kubectl get -o yaml`` would print it: owner references, status, managedFields, extras.

    Cluster A (node1, node2 in zoneA; node3, node4 in zoneB), p1..p3 (foo=bar) owned by ReplicaSet
    rs1 (selector foo=bar) on node1..node3, and a pending pod of rs1 without constraints. Plus objects
    that must not change anything: a Succeeded foo=bar pod on node4 (terminal pods are invisible), a
    pending pod of another scheduler (not ours, not counted), and a foo=bar pod in another namespace.
    """
    meta_extra = {
        "resourceVersion": "4711",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:metadata": {}}}],
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
    }
    items: list[dict[str, Any]] = []
    for name, zone in (("node1", "zoneA"), ("node2", "zoneA"), ("node3", "zoneB"), ("node4", "zoneB")):
        obj = make_node(name).zone(zone).dict()
        obj["metadata"].update(meta_extra)
        obj["status"] = {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "nodeInfo": {"kubeletVersion": "v1.35.4"},
        }
        items.append(obj)
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs1", "namespace": "default", **meta_extra},
        "spec": {"replicas": 4, "selector": {"matchLabels": FOO}, "template": {"metadata": {"labels": FOO}}},
        "status": {"replicas": 3, "readyReplicas": 3},
    }
    items.append(rs)
    for i, host in enumerate(("node1", "node2", "node3"), 1):
        pod = make_pod(f"p{i}").labels(FOO).node(host).owner("ReplicaSet", "rs1").dict()
        pod["metadata"].update(meta_extra)
        pod["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
        items.append(pod)
    done = make_pod("finished").labels(FOO).node("node4").owner("ReplicaSet", "rs1").dict()
    done["status"] = {"phase": "Succeeded"}
    items.append(done)
    items.append(make_pod("theirs").labels(FOO).scheduler("default-scheduler").dict())
    items.append(make_pod("elsewhere", "other").labels(FOO).node("node4").dict())
    pending = make_pod("incoming").labels(FOO).owner("ReplicaSet", "rs1").dict()
    pending["metadata"].update(meta_extra)
    pending["metadata"]["generateName"] = "rs1-"
    pending["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    items.append(pending)
    return items


# TV-7: no explicit constraints, System defaulting, selector foo=bar from the owning ReplicaSet:
# hostname maxSkew 3 and zone maxSkew 5, both soft. Weights: hostname ln(4+2) = 1.7918, zone
# ln(2+2) = 1.3863. raw = count*weight + (maxSkew-1) per constraint:
#   node1: (1*1.7918+2) + (2*1.3863+4) = 10.56 -> 11     node3: (1.7918+2) + (1.3863+4) = 9.18 -> 9
#   node4: (0+2) + (1.3863+4) = 7.39 -> 7
# normalize 100*(max+min-raw)/max with max 11, min 7: node1/node2 63, node3 81, node4 100.
# TaintToleration 100 everywhere (x3 = 300). NodeResourcesFit (4 CPU, 8Gi): every node holds one
# counted pod (node4 the one in namespace "other"; the Succeeded pod does not count) plus the incoming
# one -> (95 + 95) // 2 = 95. Totals 300 + 95 + 2*PTS = 521, 521, 557, 595 -> node4.
TV7_FIT = least_allocated(2, memory=8 * GI)
TV7_NODES = {
    "node1": scored(100, (11, 63), TV7_FIT),
    "node2": scored(100, (11, 63), TV7_FIT),
    "node3": scored(100, (9, 81), TV7_FIT),
    "node4": scored(100, (7, 100), TV7_FIT),
}
TV7_RESULT = success("default/incoming", "node4", TV7_NODES)


class TestInputFormats:
    """A ``List`` (any ``*List``), multi-document YAML and kubectl output all read the same."""

    @pytest.mark.parametrize("kind", ["List", "PodList"])
    def test_list(self, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """``kind: List`` with ``items``, extra fields everywhere."""
        path = tmp_path / "list.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": kind, "items": kubectl_items(), "metadata": {}}))
        assert simulate_json(capsys, str(path)) == [TV7_RESULT]

    def test_multi_document(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """``---``-separated documents, empty documents and a nested List included."""
        items = kubectl_items()
        docs: list[Any] = [None, *items[:3], {"apiVersion": "v1", "kind": "List", "items": items[3:6]}, *items[6:]]
        path = tmp_path / "multi.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        assert simulate_json(capsys, str(path)) == [TV7_RESULT]

    def test_kubectl_style_input_multi_doc_and_table(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """min-domains.yaml with kubectl's extras, as a PodList and as documents: same JSON, and a table."""
        items = yaml.safe_load((EXAMPLES / "min-domains.yaml").read_text())["items"]
        for item in items:  # what kubectl get -o yaml adds
            item["metadata"]["managedFields"] = [{"manager": "kubectl"}]
            if item["kind"] == "Pod":
                item["status"] = {"phase": "Running"} if "nodeName" in item["spec"] else {}
        (tmp_path / "list.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "PodList", "items": items}))
        (tmp_path / "multi.yaml").write_text(yaml.safe_dump_all(items))
        docs = []
        for name in ("list.yaml", "multi.yaml"):
            assert main(["simulate", str(tmp_path / name), *AS_1_35, "--output", "json"]) == 0
            docs.append(json.loads(capsys.readouterr().out))
        a, b = docs
        assert a == b and a["results"][0]["node"] is None
        assert main(["simulate", str(tmp_path / "multi.yaml"), *AS_1_35]) == 0
        table = capsys.readouterr().out
        assert "UNSCHEDULABLE" in table and "n1" in table and "PodTopologySpread" in table

    def test_json_input(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """``kubectl get -o json`` output is YAML too."""
        path = tmp_path / "cluster.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": kubectl_items()}, indent=1))
        assert simulate_json(capsys, str(path)) == [TV7_RESULT]

    def test_unquoted_timestamps(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """YAML reads an unquoted creationTimestamp as a datetime; the queue order still follows it."""
        path = tmp_path / "pods.yaml"
        path.write_text(
            "kind: Node\nmetadata: {name: n1}\n---\n"
            "kind: Pod\nmetadata: {name: newer, creationTimestamp: 2026-01-01T00:00:09Z}\n"
            "spec: {schedulerName: spread-scheduler}\n---\n"
            "kind: Pod\nmetadata: {name: older, creationTimestamp: 2026-01-01T00:00:01Z}\n"
            "spec: {schedulerName: spread-scheduler}\n"
        )
        assert [r["pod"] for r in simulate_json(capsys, str(path))] == ["default/older", "default/newer"]

    def test_file_without_pending_pods(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Nothing to schedule is said on stderr and exits 1, never a silent empty result (issue #20);
        scalar documents are no objects."""
        path = tmp_path / "nodes.yaml"
        path.write_text(yaml.safe_dump_all([make_node("n1").dict(), "just text", 42]))
        assert main(["simulate", str(path), "-o", "json"]) == 1
        out = capsys.readouterr()
        assert out.out == ""
        assert out.err == f"spread-scheduler: no pending pod in {path} names a profile (spread-scheduler)\n"

    def test_queue_order_is_priority_then_creation_then_file_order(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """PrioritySort: higher priority first, then the older pod, then the order in the file."""
        pods = [
            make_pod("late").created("2026-01-01T00:00:09Z").dict(),
            make_pod("early").created("2026-01-01T00:00:01Z").dict(),
            make_pod("same-time-b").created("2026-01-01T00:00:05Z").dict(),
            make_pod("same-time-a").created("2026-01-01T00:00:05Z").dict(),
            make_pod("urgent").priority(1000).created("2026-01-01T00:00:10Z").dict(),
        ]
        path = tmp_path / "pods.yaml"
        path.write_text(yaml.safe_dump_all([make_node("n1").dict(), *pods]))
        order = [r["pod"] for r in simulate_json(capsys, str(path))]
        assert order == [
            "default/urgent",
            "default/early",
            "default/same-time-b",
            "default/same-time-a",
            "default/late",
        ]


class TestOtherOutputs:
    """Outputs beyond the examples: invalid pods, nominated nodes, narrowed candidates."""

    def write(self, tmp_path: Path, *objects: dict[str, Any]) -> str:
        path = tmp_path / "in.yaml"
        path.write_text(yaml.safe_dump_all(list(objects)))
        return str(path)

    def test_invalid_pod_is_reported_and_the_next_one_scheduled(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The invalid pod's message names the field; no node was evaluated for it."""
        path = self.write(
            tmp_path,
            make_node("n1").dict(),
            make_pod("bad").created("2026-01-01T00:00:00Z").spread(ZONE, 0).dict(),
            make_pod("good").created("2026-01-01T00:00:01Z").dict(),
        )
        bad, good = simulate_json(capsys, path)
        assert bad == failure(
            "default/bad",
            "invalid pod: spec.topologySpreadConstraints[0].maxSkew: must be greater than zero",
            {"n1": {"filter": None, "scores": {}, "total": None, "evaluated": False}},
            code=UNRESOLVABLE,
        )
        assert good["node"] == "n1" and good["nodes"]["n1"] == node()

    def test_bad_pod_affinity_is_named_and_the_other_pods_scheduled(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Pod affinity the API server would refuse, in a file: each bad pod's message names the field,
        and the pods between them (one with 3000 valid terms) are still scheduled."""
        req = "requiredDuringSchedulingIgnoredDuringExecution"
        pref = "preferredDuringSchedulingIgnoredDuringExecution"

        def term(i: int = 0, **fields: Any) -> dict[str, Any]:
            return {"labelSelector": {"matchLabels": {"app": f"nobody-{i}"}}, "topologyKey": HOSTNAME, **fields}

        bad = {
            "empty-topology-key": (
                {"podAffinity": {req: [term(topologyKey="")]}},
                f"spec.affinity.podAffinity.{req}[0].topologyKey: Required value: can not be empty",
            ),
            "namespace-selector-not-an-object": (
                {"podAntiAffinity": {pref: [{"weight": 5, "podAffinityTerm": term(namespaceSelector="team=a")}]}},
                f"spec.affinity.podAntiAffinity.{pref}[0].podAffinityTerm.namespaceSelector: ",
            ),
            "namespace-selector-in-without-values": (
                {
                    "podAffinity": {
                        req: [term(namespaceSelector={"matchExpressions": [{"key": "t", "operator": "In"}]})]
                    }
                },
                f"spec.affinity.podAffinity.{req}[0].namespaceSelector.matchExpressions[0].values: must be specified",
            ),
            "selector-operator-unknown": (
                {
                    "podAntiAffinity": {
                        req: [
                            term(
                                labelSelector={"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}
                            )
                        ]
                    }
                },
                f"spec.affinity.podAntiAffinity.{req}[0].labelSelector.matchExpressions[0].operator: "
                'Unsupported value: "Near"',
            ),
            # 3000 terms, the last one bad: named by its index.
            "bad-term-2999-of-3000": (
                {"podAntiAffinity": {req: [term(i) for i in range(2999)] + [term(topologyKey="")]}},
                f"spec.affinity.podAntiAffinity.{req}[2999].topologyKey: Required value: can not be empty",
            ),
        }
        pods = []
        for i, (name, (affinity, _)) in enumerate(bad.items()):
            pods.append(make_pod(name).created(f"2026-01-01T00:00:{2 * i:02d}Z").set("spec.affinity", affinity).dict())
            pods.append(make_pod(f"good-{i}").created(f"2026-01-01T00:00:{2 * i + 1:02d}Z").dict())
        many = {"podAntiAffinity": {req: [term(i) for i in range(3000)]}}
        pods.append(make_pod("good-3000-terms").created("2026-01-01T00:01:00Z").set("spec.affinity", many).dict())
        results = {
            r["pod"].removeprefix("default/"): r
            for r in simulate_json(capsys, self.write(tmp_path, make_node("n1").dict(), *pods))
        }
        for name, (_, field) in bad.items():
            assert results[name]["node"] is None, name
            assert results[name]["message"].startswith(f"invalid pod: {field}"), results[name]["message"]
        assert {name: r["node"] for name, r in results.items() if name.startswith("good")} == {
            **{f"good-{i}": "n1" for i in range(len(bad))},
            "good-3000-terms": "n1",
        }

    def test_pending_pod_being_deleted_is_skipped(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Upstream pops a deleting pod and skips it (``skipPodSchedule``): no cycle, no node for it."""
        path = self.write(
            tmp_path,
            make_node("n1").dict(),
            make_pod("leaving").created("2026-01-01T00:00:00Z").labels(FOO).terminating().dict(),
            make_pod("next").created("2026-01-01T00:00:01Z").labels(FOO).spread(HOSTNAME, 1, match=FOO).dict(),
        )
        leaving, following = simulate_json(capsys, path)
        assert leaving == failure(
            "default/leaving",
            "skip schedule deleting pod: default/leaving",
            {"n1": {"filter": None, "scores": {}, "total": None, "evaluated": False}},
            code="Skip",
        )
        # The skipped pod holds no place: n1 counts 0, so 0 + 1 - 0 = 1 <= 1.
        assert following["node"] == "n1"

    def test_nominated_node_is_tried_alone(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """status.nominatedNodeName fits: it is the only node evaluated, the others are marked."""
        pod = make_pod("p").set("status.nominatedNodeName", "n2").dict()
        path = self.write(tmp_path, make_node("n1").dict(), make_node("n2").dict(), pod)
        (result,) = simulate_json(capsys, path)
        assert result["node"] == "n2"
        assert result["nodes"] == {
            "n1": {"filter": None, "scores": {}, "total": None, "evaluated": False},
            "n2": node(),
        }

    def test_prefilter_narrowing(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """TV-21: matchFields names node2, which is tainted; the others share the absent-node status."""
        pod = make_pod("p").required_terms(
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node2"]}]}
        )
        path = self.write(
            tmp_path,
            make_node("node1").dict(),
            make_node("node2").taint("k", "v").dict(),
            make_node("node3").dict(),
            pod.dict(),
        )
        (result,) = simulate_json(capsys, path)
        absent = {"plugin": "", "reason": "node(s) didn't satisfy plugin(s) [NodeAffinity]", "code": UNRESOLVABLE}
        taint = {"plugin": "TaintToleration", "reason": "node(s) had untolerated taint(s)", "code": UNRESOLVABLE}
        # The PreFilter narrowing counts NodeAffinity among the rejecting plugins, as upstream does.
        assert result == failure(
            "default/p",
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
            f"2 node(s) didn't satisfy plugin(s) [NodeAffinity]. {NO_CLAIMS}, {preemption_not_helpful(3)}",
            {"node1": node(absent), "node2": node(taint), "node3": node(absent)},
            plugins=("NodeAffinity", "TaintToleration"),
        )

    def test_pre_score_error(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A preferred ``Gt`` without an integer fails NodeAffinity's PreScore: a SchedulerError message."""
        pod = make_pod("p").preferred_term(3, {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["x"]}]})
        path = self.write(tmp_path, make_node("n1").dict(), make_node("n2").dict(), pod.dict())
        (result,) = simulate_json(capsys, path)
        assert result["node"] is None
        assert result["message"].startswith('running PreScore plugin "NodeAffinity": ')
        assert result["nodes"] == {"n1": node(), "n2": node()}

    def test_no_nodes(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """An empty cluster: upstream's ErrNoNodesAvailable text."""
        (result,) = simulate_json(capsys, self.write(tmp_path, make_pod("p").dict()))
        assert result == failure("default/p", "no nodes available to schedule pods", {}, code=UNRESOLVABLE)

    def test_config_changes_the_decision(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """``--config`` with TaintToleration disabled at Filter lets the pod onto the tainted node."""
        config = tmp_path / "config.yaml"
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            "profiles:\n- schedulerName: spread-scheduler\n  plugins:\n"
            "    filter:\n      disabled: [{name: TaintToleration}]\n"
        )
        path = self.write(tmp_path, make_node("tainted").taint("k", "v").dict(), make_pod("p").dict())
        (result,) = simulate_json(capsys, path, "--config", str(config))
        assert result["node"] == "tainted"
        (default,) = simulate_json(capsys, path)
        assert default["message"] == (
            f"0/1 nodes are available: 1 node(s) had untolerated taint(s). {NO_CLAIMS}, {preemption_not_helpful(1)}"
        )


class TestErrors:
    """Unreadable input or configuration: exit 2 with a message naming the problem, no traceback."""

    def test_missing_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The message names the file."""
        missing = tmp_path / "missing.yaml"
        assert main(["simulate", str(missing)]) == 2
        out = capsys.readouterr()
        assert out.out == ""
        assert out.err.startswith(f"spread-scheduler: cannot read {missing}: ")
        assert "No such file or directory" in out.err

    def test_bad_yaml(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A YAML syntax error."""
        path = tmp_path / "bad.yaml"
        path.write_text("items: [\n")
        assert main(["simulate", str(path)]) == 2
        assert capsys.readouterr().err.startswith(f"spread-scheduler: cannot read {path}: ")

    def test_binary_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Bytes that are no UTF-8 exit 2 instead of raising UnicodeDecodeError."""
        path = tmp_path / "bin.yaml"
        path.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
        assert main(["simulate", str(path)]) == 2
        assert capsys.readouterr().err.startswith(f"spread-scheduler: cannot read {path}: ")

    @pytest.mark.parametrize(
        "newline", [pytest.param("\n", id="newline-terminated"), pytest.param("", id="no-newline")]
    )
    def test_bad_config(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], newline: str) -> None:
        """The message names the config field."""
        config = tmp_path / "config.yaml"
        config.write_text("profiles: [{plugins: {filter: {enabled: [{name: Nope}]}}}]" + newline)
        assert main(["simulate", str(EXAMPLES / "two-zones.yaml"), "--config", str(config)]) == 2
        out = capsys.readouterr()
        assert out.out == ""
        assert out.err.startswith(
            'spread-scheduler: invalid configuration: profiles[0].plugins.filter.enabled[0].name: Invalid value: "Nope"'
        )

    def test_missing_config(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A config path that does not exist is an invalid configuration naming the path."""
        config = tmp_path / "nope.yaml"
        assert main(["simulate", str(EXAMPLES / "two-zones.yaml"), "--config", str(config)]) == 2
        assert capsys.readouterr().err.startswith(
            f"spread-scheduler: invalid configuration: {config}: cannot read configuration"
        )

    def test_bad_plugin_args(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Plugin args are checked before any pod is read."""
        config = tmp_path / "config.yaml"
        config.write_text(
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n"
            "      defaultingType: System\n"
            "      defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]\n"
        )
        assert main(["simulate", str(EXAMPLES / "two-zones.yaml"), "--config", str(config)]) == 2
        assert capsys.readouterr().err.startswith(
            "spread-scheduler: invalid configuration: profiles[0].pluginConfig[PodTopologySpread].args: "
            'defaultingType: Invalid value: "System"'
        )

    def test_usage_errors_exit_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """argparse refuses an unknown output format with its own exit code 2."""
        with pytest.raises(SystemExit) as info:
            main(["simulate", str(EXAMPLES / "two-zones.yaml"), "--output", "xml"])
        assert info.value.code == 2
        assert "invalid choice: 'xml'" in capsys.readouterr().err

    def test_warning_for_a_node_without_a_name(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Unusable objects are skipped with a warning on stderr; the run still succeeds."""
        path = tmp_path / "in.yaml"
        path.write_text(
            yaml.safe_dump_all([{"kind": "Node", "metadata": {}}, make_node("n1").dict(), make_pod("p").dict()])
        )
        assert main(["simulate", str(path), "-o", "json"]) == 0
        out = capsys.readouterr()
        assert out.err == "warning: skipped Node: metadata.name: Required value\n"
        assert json.loads(out.out)["results"][0]["node"] == "n1"


class TestInterPodAffinity:
    """Issue #17: required pod affinity next to an existing pod's required anti-affinity, end to end."""

    def write(self, tmp_path: Path, *objects: dict[str, Any]) -> str:
        path = tmp_path / "in.yaml"
        path.write_text(yaml.safe_dump_all(list(objects)))
        return str(path)

    def test_affinity_to_a_database_refused_by_a_neighbours_anti_affinity(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """n1 holds the database (so n2 fails the affinity, unresolvable) and a pod whose required
        anti-affinity forbids web pods on its host (so n1 fails it); the web pod stays Pending with
        upstream's histogram, sorted as strings, while the pod after it binds."""
        db_match = {"matchLabels": {"app": "db"}}
        web_match = {"matchLabels": {"app": "web"}}
        path = self.write(
            tmp_path,
            make_node("n1").dict(),
            make_node("n2").dict(),
            make_pod("db").label("app", "db").node("n1").dict(),
            make_pod("guard").label("app", "guard").node("n1").pod_affinity(HOSTNAME, web_match, anti=True).dict(),
            make_pod("web").label("app", "web").created("2026-01-01T00:00:00Z").pod_affinity(HOSTNAME, db_match).dict(),
            make_pod("other").created("2026-01-01T00:00:01Z").dict(),
        )
        web, other = simulate_json(capsys, path)
        assert web["node"] is None
        assert web["message"] == (
            "0/2 nodes are available: 1 node(s) didn't match pod affinity rules, "
            f"1 node(s) didn't satisfy existing pods anti-affinity rules. {NO_CLAIMS}, "
            + preemption_not_helpful(2, no_victims=1)
        )
        assert web["nodes"]["n1"]["filter"] == {
            "plugin": "InterPodAffinity",
            "reason": "node(s) didn't satisfy existing pods anti-affinity rules",
            "code": "Unschedulable",
        }
        assert web["nodes"]["n2"]["filter"] == {
            "plugin": "InterPodAffinity",
            "reason": "node(s) didn't match pod affinity rules",
            "code": "UnschedulableAndUnresolvable",
        }
        assert other["node"] in ("n1", "n2")

    def test_namespace_objects_resolve_a_namespace_selector(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A Namespace in the input file is cached: its labels select the database pod's namespace."""
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "data", "labels": {"tier": "db"}}}
        path = self.write(
            tmp_path,
            namespace,
            make_node("n1").dict(),
            make_node("n2").dict(),
            make_pod("db", "data").label("app", "db").node("n2").dict(),
            make_pod("web")
            .pod_affinity(HOSTNAME, {"matchLabels": {"app": "db"}}, namespaceSelector={"matchLabels": {"tier": "db"}})
            .dict(),
        )
        (web,) = simulate_json(capsys, path)
        assert web["node"] == "n2"
        assert web["nodes"]["n1"]["filter"] == {
            "plugin": "InterPodAffinity",
            "reason": "node(s) didn't match pod affinity rules",
            "code": "UnschedulableAndUnresolvable",
        }


@pytest.mark.parametrize("minor", ["1.35", "1.36", "1.37"])
def test_the_gpu_inference_dump_places_3_3_3_each_claim_on_its_node(
    capsys: pytest.CaptureFixture[str], minor: str
) -> None:
    """``examples/gpu-inference-dump.yaml`` (README, "GPUs through DRA"): 9 pods, a template claim each,
    six nodes of two devices in three zones: 3/3/3, each claim a device of its pod's node, none twice."""
    assert main(["simulate", str(EXAMPLES / "gpu-inference-dump.yaml"), "--kube-version", minor, "-o", "json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert len(results) == 9 and all(r["node"] for r in results), results
    zones = sorted(r["node"][len("gpu-") :][0] for r in results)
    assert zones == ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    devices = [(c["pool"], c["device"]) for r in results for c in r["claims"]]
    assert [pool for pool, _ in devices] == [r["node"] for r in results]
    assert len(set(devices)) == 9
