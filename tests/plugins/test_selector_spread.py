"""SelectorSpread (opt-in): PreScore → Score → NormalizeScore, and through the whole pipeline.

Cases ported from upstream v1.27.16 ``selectorspread/selector_spread_test.go`` keep their names as
ids. Upstream's test pods without a namespace (``""``) list Services of every namespace through the
lister; our pods always have one (``default``), so the one case that relies on that,
"five pods, one service pod in no namespace", is ported with explicit namespaces instead.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli import main
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import StatusError
from scheduler.plugins.selectorspread.selector_spread import (
    PRE_SCORE_STATE_KEY,
    PreScoreState,
    SelectorSpread,
    selector_spread_scores,
)
from scheduler.testing import PodBuilder, make_node, make_pod
from tests.helpers import ZONE, config_with, make_cache, plugin_handle, schedule, score_nodes

LABELS1 = {"foo": "bar", "baz": "blah"}
LABELS2 = {"bar": "foo", "baz": "blah"}
RC, RS, SS = ("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")
MAX = 100


def service(selector: dict[str, str], name: str = "s1", namespace: str = "default") -> dict[str, Any]:
    return {"kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": {"selector": selector}}


def controller(
    kind: tuple[str, str], name: str, selector: dict[str, str], namespace: str = "default"
) -> dict[str, Any]:
    api_version, k = kind
    spec_selector: dict[str, Any] = selector if k == "ReplicationController" else {"matchLabels": selector}
    return {
        "apiVersion": api_version,
        "kind": k,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": spec_selector},
    }


_names = itertools.count(1)


def pod(node: str = "", labels: dict[str, str] | None = None, namespace: str = "default") -> PodBuilder:
    builder = make_pod(f"p{next(_names)}", namespace).labels(dict(labels or {}))
    return builder.node(node) if node else builder


def owned(builder: PodBuilder, kind: tuple[str, str], name: str) -> PodBuilder:
    return builder.owner(kind[1], name, api_version=kind[0])


def run_plugin(
    incoming: PodBuilder, existing: list[PodBuilder], nodes: list[Any], objects: list[dict[str, Any]]
) -> dict[str, int]:
    cache = make_cache(nodes, existing, objects)
    plugin = SelectorSpread({}, plugin_handle(cache))
    names = [info.name for info in cache.node_infos()]
    _raw, normalized = score_nodes(plugin, cache, incoming.build(), names)
    return dict(zip(names, normalized, strict=True))


TWO_NODES = ["node1", "node2"]

SCORE_CASES = [
    pytest.param(pod(), [], [], {"node1": MAX, "node2": MAX}, id="nothing scheduled"),
    pytest.param(pod(labels=LABELS1), [pod("node1")], [], {"node1": MAX, "node2": MAX}, id="no services"),
    pytest.param(
        pod(labels=LABELS1),
        [pod("node1", LABELS2)],
        [service({"key": "value"})],
        {"node1": MAX, "node2": MAX},
        id="different services",
    ),
    pytest.param(
        pod(labels=LABELS1),
        [pod("node1", LABELS2), pod("node2", LABELS1)],
        [service(LABELS1)],
        {"node1": MAX, "node2": 0},
        id="two pods, one service pod",
    ),
    pytest.param(
        pod(labels=LABELS1, namespace="none"),
        [
            pod("node1", LABELS2, "none"),
            pod("node1", LABELS1, "default"),
            pod("node1", LABELS1, "ns1"),
            pod("node2", LABELS1, "none"),
            pod("node2", LABELS2, "none"),
        ],
        [service(LABELS1, namespace="none")],
        {"node1": MAX, "node2": 0},
        id="five pods, one service pod in no namespace",
    ),
    pytest.param(
        pod(labels=LABELS1),
        [pod("node1", LABELS1, "none"), pod("node1", LABELS1, "ns1"), pod("node2", LABELS1), pod("node2", LABELS2)],
        [service(LABELS1)],
        {"node1": MAX, "node2": 0},
        id="four pods, one service pod in default namespace",
    ),
    pytest.param(
        pod(labels=LABELS1, namespace="ns1"),
        [
            pod("node1", LABELS2),
            pod("node1", LABELS1),
            pod("node1", LABELS1, "ns2"),
            pod("node2", LABELS1, "ns1"),
            pod("node2", LABELS2),
        ],
        [service(LABELS1, namespace="ns1")],
        {"node1": MAX, "node2": 0},
        id="five pods, one service pod in specific namespace",
    ),
    pytest.param(
        pod(labels=LABELS1),
        [pod("node1", LABELS2), pod("node1", LABELS1), pod("node2", LABELS1)],
        [service(LABELS1)],
        {"node1": 0, "node2": 0},
        id="three pods, two service pods on different nodes",
    ),
    pytest.param(
        pod(labels=LABELS1),
        [pod("node1", LABELS2), pod("node1", LABELS1), pod("node2", LABELS1), pod("node2", LABELS1)],
        [service(LABELS1)],
        {"node1": 50, "node2": 0},
        id="four pods, three service pods",
    ),
    pytest.param(
        pod(labels=LABELS1),
        [pod("node1", LABELS2), pod("node1", LABELS1), pod("node2", LABELS1)],
        [service({"baz": "blah"})],
        {"node1": 0, "node2": 50},
        id="service with partial pod label matches",
    ),
    *[
        pytest.param(
            owned(pod(labels=LABELS1), kind, "c1"),
            [pod("node1", LABELS2), pod("node1", LABELS1), pod("node2", LABELS1)],
            [service({"baz": "blah"}), controller(kind, "c1", {"foo": "bar"}), controller(kind, "c2", {"bar": "foo"})],
            # "baz=blah" matches both label sets, "foo=bar" only LABELS1: spread the LABELS1 pods.
            {"node1": 0, "node2": 0},
            id=f"service with partial pod label matches with service and {label}",
        )
        for kind, label in ((RC, "replication controller"), (RS, "replica set"), (SS, "statefulset"))
    ],
    *[
        pytest.param(
            owned(pod(labels={"foo": "bar", "bar": "foo"}), kind, "c3"),
            [
                owned(pod("node1", LABELS2), kind, "c2"),
                owned(pod("node1", LABELS1), kind, "c1"),
                owned(pod("node2", LABELS1), kind, "c1"),
            ],
            [controller(kind, "c3", {"foo": "bar"}), service({"bar": "foo"})],
            # Taken together, the Service and the controller select no existing pod.
            {"node1": MAX, "node2": MAX},
            id=f"disjoined service and {label} matches no pods",
        )
        for kind, label in ((RC, "replication controller"), (RS, "replica set"), (SS, "stateful set"))
    ],
    *[
        pytest.param(
            owned(pod(labels=LABELS1), kind, "c1"),
            [pod("node1", LABELS2), pod("node1", LABELS1), pod("node2", LABELS1)],
            [controller(kind, "c1", {"foo": "bar"}), controller(kind, "c2", {"bar": "foo"})],
            {"node1": 0, "node2": 0},
            id=f"{label} with partial pod label matches",
        )
        for kind, label in ((RC, "Replication controller"), (RS, "Replica set"), (SS, "StatefulSet"))
    ],
    *[
        pytest.param(
            owned(pod(labels=LABELS1), kind, "c3"),
            [
                owned(pod("node1", LABELS2), kind, "c2"),
                owned(pod("node1", LABELS1), kind, "c1"),
                owned(pod("node2", LABELS1), kind, "c1"),
            ],
            [controller(kind, "c3", {"baz": "blah"})],
            {"node1": 0, "node2": 50},
            id=f"Another {label} with partial pod label matches",
        )
        for kind, label in ((RC, "replication controller"), (RS, "replication set"), (SS, "stateful set"))
    ],
    pytest.param(
        owned(pod(labels=LABELS1), SS, "ss1").spread(1, "foo", "DoNotSchedule"),
        [
            owned(pod("node1", LABELS2), SS, "ss2"),
            owned(pod("node1", LABELS1), SS, "ss1"),
            owned(pod("node2", LABELS1), SS, "ss1"),
        ],
        [controller(SS, "ss1", {"baz": "blah"})],
        {"node1": 0, "node2": 0},
        id="Another statefulset with TopologySpreadConstraints set in pod",
    ),
]


@pytest.mark.parametrize(("incoming", "existing", "objects", "want"), SCORE_CASES)
def test_selector_spread_score(
    incoming: PodBuilder, existing: list[PodBuilder], objects: list[dict[str, Any]], want: dict[str, int]
) -> None:
    """Upstream's TestSelectorSpreadScore: two nodes without zones, node spreading only."""
    assert run_plugin(incoming, existing, [make_node(n) for n in TWO_NODES], objects) == want


Z = {
    "node1.zone1": "zone1",
    "node1.zone2": "zone2",
    "node2.zone2": "zone2",
    "node1.zone3": "zone3",
    "node2.zone3": "zone3",
    "node3.zone3": "zone3",
}
L1 = {"label1": "l1", "baz": "blah"}
L2 = {"label2": "l2", "baz": "blah"}
ALL_MAX = dict.fromkeys(Z, MAX)


def zpods(*placements: tuple[str, dict[str, str] | None]) -> list[PodBuilder]:
    return [pod(node, labels) for node, labels in placements]


ZONE_CASES = [
    pytest.param(pod(), [], [], ALL_MAX, id="nothing scheduled"),
    pytest.param(pod(labels=L1), zpods(("node1.zone1", None)), [], ALL_MAX, id="no services"),
    pytest.param(
        pod(labels=L1), zpods(("node1.zone1", L2)), [service({"key": "value"})], ALL_MAX, id="different services"
    ),
    pytest.param(
        pod(labels=L1),
        zpods(("node1.zone1", L2), ("node1.zone2", L2)),
        [service(L1)],
        ALL_MAX,
        id="two pods, 0 matching",
    ),
    pytest.param(
        pod(labels=L1),
        zpods(("node1.zone1", L2), ("node1.zone2", L1)),
        [service(L1)],
        {**ALL_MAX, "node1.zone2": 0, "node2.zone2": 33},
        id="two pods, 1 matching (in z2)",
    ),
    pytest.param(
        pod(labels=L1),
        zpods(("node1.zone1", L2), ("node1.zone2", L1), ("node2.zone2", L1), ("node1.zone3", L2), ("node2.zone3", L1)),
        [service(L1)],
        {
            "node1.zone1": MAX,
            "node1.zone2": 0,
            "node2.zone2": 0,
            "node1.zone3": 66,
            "node2.zone3": 33,
            "node3.zone3": 66,
        },
        id="five pods, 3 matching (z2=2, z3=1)",
    ),
    pytest.param(
        pod(labels=L1),
        zpods(("node1.zone1", L1), ("node1.zone2", L1), ("node2.zone2", L2), ("node1.zone3", L1)),
        [service(L1)],
        {"node1.zone1": 0, "node1.zone2": 0, "node2.zone2": 33, "node1.zone3": 0, "node2.zone3": 33, "node3.zone3": 33},
        id="four pods, 3 matching (z1=1, z2=1, z3=1)",
    ),
    pytest.param(
        pod(labels=L1),
        zpods(("node1.zone1", L1), ("node1.zone2", L1), ("node2.zone2", L1), ("node2.zone2", L2), ("node1.zone3", L1)),
        [service(L1)],
        {
            "node1.zone1": 33,
            "node1.zone2": 0,
            "node2.zone2": 0,
            "node1.zone3": 33,
            "node2.zone3": 66,
            "node3.zone3": 66,
        },
        id="five pods, 4 matching (z1=1, z2=2, z3=1)",
    ),
    pytest.param(
        owned(pod(labels=L1), RC, "rc1"),
        zpods(("node1.zone3", L1), ("node1.zone2", L1), ("node1.zone3", L1)),
        [controller(RC, "rc1", L1)],
        {
            "node1.zone1": MAX,
            "node1.zone2": 50,
            "node2.zone2": 66,
            "node1.zone3": 0,
            "node2.zone3": 33,
            "node3.zone3": 33,
        },
        id="Replication controller spreading (z1=0, z2=1, z3=2)",
    ),
]


@pytest.mark.parametrize(("incoming", "existing", "objects", "want"), ZONE_CASES)
def test_zone_selector_spread_priority(
    incoming: PodBuilder, existing: list[PodBuilder], objects: list[dict[str, Any]], want: dict[str, int]
) -> None:
    """Upstream's TestZoneSelectorSpreadPriority: six nodes over three zones, 2/3 zone weighting."""
    nodes = [make_node(name).zone(zone) for name, zone in Z.items()]
    assert run_plugin(incoming, existing, nodes, objects) == want


@pytest.mark.parametrize(
    ("counts", "zones", "want"),
    [
        pytest.param([0, 0], ["", ""], [100, 100], id="no-matching-pods-all-max"),
        pytest.param([3, 1, 0], ["", "", ""], [0, 66, 100], id="node-only-truncates-toward-zero"),
        # zone a: 2, zone b: 0 -> node 0: 1/3*0 + 2/3*0; node 1: 1/3*100 + 2/3*0; node 2: 100.
        pytest.param([2, 0, 0], ["a", "a", "b"], [0, 33, 100], id="zone-weighting-two-thirds"),
        # A node without a zone keeps its node score even when other nodes have zones.
        pytest.param([1, 0, 1], ["a", "b", ""], [0, 100, 0], id="zoneless-node-keeps-node-score"),
        pytest.param([0, 0, 0], ["a", "b", ""], [100, 100, 100], id="zones-with-zero-counts"),
    ],
)
def test_normalize_formula(counts: list[int], zones: list[str], want: list[int]) -> None:
    """MaxNodeScore*(maxNode-count)/maxNode, blended 1/3 node : 2/3 zone, truncated like Go's int64()."""
    assert selector_spread_scores(counts, zones) == want


def test_terminating_pods_do_not_count() -> None:
    """Pods being deleted are ignored for spreading, as upstream's countMatchingPods."""
    existing = [pod("node1", LABELS1).terminating(), pod("node2", LABELS1)]
    got = run_plugin(pod(labels=LABELS1), existing, [make_node(n) for n in TWO_NODES], [service(LABELS1)])
    assert got == {"node1": MAX, "node2": 0}


def test_score_without_pre_score_is_an_error() -> None:
    """Score reads the PreScore state; a missing state is an Error naming the key."""
    cache = make_cache([make_node("node1")], [pod("node1", LABELS1)])
    plugin = SelectorSpread({}, plugin_handle(cache))
    info = cache.get("node1")
    assert info is not None
    with pytest.raises(StatusError, match=f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found'):
        plugin.score(CycleState(), pod(labels=LABELS1).build(), info)


def test_pre_score_state_is_read_only() -> None:
    cache = make_cache([make_node("node1")], [], [service(LABELS1)])
    plugin = SelectorSpread({}, plugin_handle(cache))
    state = CycleState()
    plugin.pre_score(state, pod(labels=LABELS1).build(), cache.node_infos())
    stored = state.read(PRE_SCORE_STATE_KEY, PreScoreState)
    assert stored.clone() is stored


def test_not_in_default_profile() -> None:
    """Opt-in only: the default profile never runs it."""
    nodes = [make_node(n) for n in TWO_NODES]
    run = schedule(nodes, [pod("node1", LABELS1)], pod(labels=LABELS1), objects=[service(LABELS1)])
    assert "SelectorSpread" not in run.scored_plugins


def test_enabled_through_multipoint_decides_placement() -> None:
    """Enabled with a weight, it adds weight*normalized to the totals and steers the pod away."""
    cfg = config_with(
        plugins={"multiPoint": {"enabled": [{"name": "SelectorSpread", "weight": 1}]}},
        pluginConfig=[{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
    )
    nodes = [make_node(n) for n in TWO_NODES]
    run = schedule(nodes, [pod("node1", LABELS1)], pod(labels=LABELS1), cfg, objects=[service(LABELS1)])
    assert run.raw("SelectorSpread") == {"node1": 1, "node2": 0}
    assert run.normalized("SelectorSpread") == {"node1": 0, "node2": 100}
    assert run.host == "node2"


def test_zone_label_keys() -> None:
    """GetZoneKey reads failure-domain.beta first, then topology.kubernetes.io; region counts too."""
    beta = "failure-domain.beta.kubernetes.io/zone"
    nodes = [
        make_node("a").label(beta, "z1").label(ZONE, "other"),
        make_node("b").label(ZONE, "z1"),
        make_node("c").label("topology.kubernetes.io/region", "r1"),
    ]
    # a's key comes from the beta label and equals b's (":\0:z1"): one zone, so b shares a's zone count;
    # c's region alone makes a zone of its own ("r1:\0:").
    got = run_plugin(pod(labels=LABELS1), [pod("a", LABELS1)], nodes, [service(LABELS1)])
    assert got == {"a": 0, "b": 33, "c": 100}


def test_shipped_example(capsys: pytest.CaptureFixture[str]) -> None:
    """``examples/selector-spread.yaml`` with its config, through ``simulate -o json``.

    Three zones (A: node1, node2; B: node3, node4; C: node5), web pods on node1..node3. web-4:
    max per node 1, per zone 2 (A). node5: 1/3*100 + 2/3*100 = 100; node4: 1/3*100 + 2/3*50 = 66;
    node3: 0 + 2/3*50 = 33; node1/2: 0. web-5 (web-4 on node5; zones A 2, B 1, C 1): node4 66,
    node3/node5 33. pinned has explicit constraints: SelectorSpread scores 0 everywhere.
    """
    examples = Path(__file__).resolve().parents[2] / "examples"
    args = [str(examples / "selector-spread.yaml"), "--config", str(examples / "selector-spread-config.yaml")]
    assert main(["simulate", *args, "--output", "json", "--seed", "1"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]

    def selector_spread(result: dict[str, Any]) -> dict[str, int]:
        return {n: v["scores"]["SelectorSpread"]["normalized"] for n, v in result["nodes"].items()}

    web4, web5, pinned = results
    assert web4["node"] == "node5"
    assert selector_spread(web4) == {"node1": 0, "node2": 0, "node3": 33, "node4": 66, "node5": 100}
    assert web5["node"] == "node4"
    assert selector_spread(web5) == {"node1": 0, "node2": 0, "node3": 33, "node4": 66, "node5": 33}
    assert selector_spread(pinned) == dict.fromkeys(("node1", "node2", "node3", "node4", "node5"), 0)
