"""InterPodAffinity: PreFilter → Filter, AddPod/RemovePod, PreScore → Score → Normalize, hints.

Cases ported from upstream ``interpodaffinity/{filtering,scoring,plugin}_test.go`` keep their names
as ids. Upstream's default namespace ``""`` is ``default`` here; existing pods get distinct names
(upstream's snapshot keys pods by UID, our cache by namespace/name).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Namespace, Node, Pod
from scheduler.backend.cache.cache import Cache
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.interface import Handle, SignPlugin
from scheduler.framework.status import Code, Status
from scheduler.plugins.interpodaffinity.filtering import PreFilterState, cal_pre_filter_state
from scheduler.plugins.interpodaffinity.plugin import InterPodAffinity, parse_args
from scheduler.testing import HOSTNAME, NodeBuilder, PodBuilder, make_node, make_pod
from tests.helpers import (
    EXISTING_ANTI_AFFINITY,
    IPA,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    code_of,
    framework,
    make_cache,
    message_of,
    schedule,
    score_nodes,
)

S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
OK: tuple[Code, str] = (S, "")
AFF: tuple[Code, str] = (UU, POD_AFFINITY)
ANTI: tuple[Code, str] = (U, POD_ANTI_AFFINITY)
EXISTING: tuple[Code, str] = (U, EXISTING_ANTI_AFFINITY)
PRE_FILTER_KEY = "PreFilterInterPodAffinity"

# upstream's scoring_test.go ``namespaces``
NAMESPACES = [
    Namespace("subteam1.team1", {"team": "team1"}),
    Namespace("subteam2.team1", {"team": "team1"}),
    Namespace("subteam1.team2", {"team": "team2"}),
    Namespace("subteam2.team2", {"team": "team2"}),
]


def sel(*exprs: tuple[str, str, tuple[str, ...]]) -> dict[str, Any]:
    """A labelSelector of matchExpressions ``(key, operator, values)``."""
    out: list[dict[str, Any]] = []
    for key, op, values in exprs:
        e: dict[str, Any] = {"key": key, "operator": op}
        if values:
            e["values"] = list(values)
        out.append(e)
    return {"matchExpressions": out}


def in_(key: str, *values: str) -> dict[str, Any]:
    return sel((key, "In", values))


def not_in(key: str, *values: str) -> dict[str, Any]:
    return sel((key, "NotIn", values))


def exists(key: str) -> dict[str, Any]:
    return sel((key, "Exists", ()))


def pod(name: str = "", ns: str = "default", node: str = "", **labels: str) -> PodBuilder:
    p = make_pod(name or "pod", ns).labels(dict(labels))
    return p.node(node) if node else p


def nd(name: str, **labels: str) -> NodeBuilder:
    n = make_node(name).unlabel(HOSTNAME)
    for k, v in labels.items():
        n = n.label(k, v)
    return n


def cache_of(nodes: list[NodeBuilder], pods: list[PodBuilder], namespaces: list[Namespace] = NAMESPACES) -> Cache:
    built = [p.build() for p in pods]
    renamed = []
    for i, p in enumerate(pods):
        d = p.dict()
        if built[i].name == "pod":
            d["metadata"]["name"] = f"existing-{i}"
        renamed.append(Pod.from_dict(d))
    cache = make_cache(nodes, renamed)
    for ns in namespaces:
        cache.upsert_namespace(ns)
    return cache


def plugin(cache: Cache, **args: Any) -> InterPodAffinity:
    return InterPodAffinity(args, Handle(snapshot=cache))


def run_filter(
    nodes: list[NodeBuilder], pods: list[PodBuilder], incoming: PodBuilder, namespaces: list[Namespace] = NAMESPACES
) -> tuple[Status | None, list[tuple[Code, str]]]:
    cache = cache_of(nodes, pods, namespaces)
    pl = plugin(cache)
    state = CycleState()
    p = incoming.build()
    _, status = pl.pre_filter(state, p, cache.node_infos())
    if status is not None:
        return status, []
    out = []
    for n in nodes:
        info = cache.get(n.build().name)
        assert info is not None
        s = pl.filter(state, p, info)
        out.append((code_of(s), message_of(s)))
    return None, out


# -- TestRequiredAffinitySingleNode ------------------------------------------------------------

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
EXISTING_POD = pod("existing", node="node1", **POD_LABEL)
NODE1 = nd("node1", region="r1", zone="z11")


def in_term(key: str, *values: str) -> tuple[str, str, tuple[str, ...]]:
    return (key, "In", values)


SINGLE_NODE = [
    pytest.param(
        pod("in"),
        [],
        "skip",
        id="A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
    ),
    pytest.param(
        pod("in", **POD_LABEL2).pod_affinity("region", in_("service", "securityscan", "value2")),
        [EXISTING_POD],
        OK,
        id="satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL2).pod_affinity("region", not_in("service", "securityscan3", "value3")),
        [EXISTING_POD],
        OK,
        id="satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL2).pod_affinity(
            "", in_("service", "securityscan", "value2"), namespaces=["DiffNameSpace"]
        ),
        [pod("x", "ns", "node1", service="securityscan")],
        AFF,
        id="Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
    ),
    pytest.param(
        pod("in", **POD_LABEL).pod_affinity("", in_("service", "antivirusscan", "value2")),
        [EXISTING_POD],
        AFF,
        id="Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
    ),
    pytest.param(
        pod("in", **POD_LABEL2)
        .pod_affinity("region", sel(("service", "Exists", ()), ("wrongkey", "DoesNotExist", ())))
        .pod_affinity("region", sel(in_term("service", "securityscan"), ("service", "NotIn", ("WrongValue",)))),
        [EXISTING_POD],
        OK,
        id="satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL2)
        .pod_affinity("region", sel(("service", "Exists", ()), ("wrongkey", "DoesNotExist", ())))
        .pod_affinity("region", sel(in_term("service", "securityscan2"), ("service", "NotIn", ("WrongValue",)))),
        [EXISTING_POD],
        AFF,
        id="The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL2)
        .pod_affinity("region", in_("service", "securityscan", "value2"))
        .pod_affinity("node", in_("service", "antivirusscan", "value2"), anti=True),
        [EXISTING_POD],
        OK,
        id="satisfies the PodAffinity and PodAntiAffinity with the existing pod",
    ),
    pytest.param(
        pod("in", **POD_LABEL2)
        .pod_affinity("region", in_("service", "securityscan", "value2"))
        .pod_affinity("node", in_("service", "antivirusscan", "value2"), anti=True),
        [
            pod("e", node="node1", **POD_LABEL).pod_affinity(
                "node", in_("service", "antivirusscan", "value2"), anti=True
            )
        ],
        OK,
        id="satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
    ),
    pytest.param(
        pod("in", **POD_LABEL2)
        .pod_affinity("region", in_("service", "securityscan", "value2"))
        .pod_affinity("zone", in_("service", "securityscan", "value2"), anti=True),
        [EXISTING_POD],
        ANTI,
        id="satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
    ),
    pytest.param(
        pod("in", **POD_LABEL)
        .pod_affinity("region", in_("service", "securityscan", "value2"))
        .pod_affinity("node", in_("service", "antivirusscan", "value2"), anti=True),
        [pod("e", node="node1", **POD_LABEL).pod_affinity("zone", in_("service", "securityscan", "value2"), anti=True)],
        EXISTING,
        id="satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL).pod_affinity("region", not_in("service", "securityscan", "value2")),
        [pod("e", node="node2", service="securityscan")],
        AFF,
        id="pod matches its own Label in PodAffinity and that matches the existing pod Labels",
    ),
    pytest.param(
        pod("in", **POD_LABEL),
        [pod("e", node="node1", **POD_LABEL).pod_affinity("zone", in_("service", "securityscan", "value2"), anti=True)],
        EXISTING,
        id="verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL),
        [
            pod("e", node="node1", **POD_LABEL).pod_affinity(
                "zone", not_in("service", "securityscan", "value2"), anti=True
            )
        ],
        "skip",
        id="verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL)
        .pod_affinity("region", exists("service"), anti=True)
        .pod_affinity("region", exists("security"), anti=True),
        [pod("e", node="node1", **POD_LABEL2).pod_affinity("zone", exists("security"), anti=True)],
        ANTI,
        id="satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL)
        .pod_affinity("zone", exists("service"), anti=True)
        .pod_affinity("zone", exists("security"), anti=True),
        [pod("e", node="node1", **POD_LABEL2).pod_affinity("zone", exists("security"), anti=True)],
        ANTI,
        id="PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL2).pod_affinity("zone", exists("security"), anti=True),
        [
            pod("e", node="node1", **POD_LABEL)
            .pod_affinity("zone", exists("service"), anti=True)
            .pod_affinity("zone", exists("security"), anti=True)
        ],
        EXISTING,
        id="PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", abc="", xyz="")
        .pod_affinity("zone", exists("abc"), anti=True)
        .pod_affinity("zone", exists("def"), anti=True),
        [
            pod("e", node="node1", **{"def": "", "xyz": ""})
            .pod_affinity("zone", exists("abc"), anti=True)
            .pod_affinity("zone", exists("def"), anti=True)
        ],
        ANTI,
        id="PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **{"def": "", "xyz": ""})
        .pod_affinity("zone", exists("abc"), anti=True)
        .pod_affinity("zone", exists("def"), anti=True),
        [
            pod("e", node="node1", abc="", xyz="")
            .pod_affinity("zone", exists("abc"), anti=True)
            .pod_affinity("zone", exists("def"), anti=True)
        ],
        ANTI,
        id="PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **POD_LABEL2).pod_affinity(
            "region", in_("service", "securityscan", "value2"), namespaceSelector=in_("team", "team1")
        ),
        [pod("e", "subteam1.team1", "node1", **POD_LABEL)],
        OK,
        id="affinity with NamespaceSelector",
    ),
    pytest.param(
        pod("in", **POD_LABEL2).pod_affinity(
            "region", in_("service", "securityscan", "value2"), namespaceSelector=in_("team", "team1")
        ),
        [pod("e", "subteam1.team2", "node1", **POD_LABEL)],
        AFF,
        id="affinity with non-matching NamespaceSelector",
    ),
    pytest.param(
        pod("in", "subteam1.team1", **POD_LABEL2).pod_affinity(
            "zone", in_("service", "securityscan", "value2"), anti=True, namespaceSelector=in_("team", "team1")
        ),
        [pod("e", "subteam2.team1", "node1", **POD_LABEL)],
        ANTI,
        id="anti-affinity with matching NamespaceSelector",
    ),
    pytest.param(
        pod("in", "subteam1.team1", **POD_LABEL2).pod_affinity(
            "zone", in_("service", "securityscan", "value2"), anti=True, namespaceSelector={}
        ),
        [pod("e", "subteam2.team1", "node1", **POD_LABEL)],
        ANTI,
        id="anti-affinity with matching all NamespaceSelector",
    ),
    pytest.param(
        pod("in", "subteam1.team1", **POD_LABEL2).pod_affinity(
            "zone", in_("service", "securityscan", "value2"), anti=True, namespaceSelector=in_("team", "team1")
        ),
        [pod("e", "subteam1.team2", "node1", **POD_LABEL)],
        OK,
        id="anti-affinity with non-matching NamespaceSelector",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "want"), SINGLE_NODE)
def test_required_affinity_single_node(incoming: PodBuilder, pods: list[PodBuilder], want: Any) -> None:
    pre, got = run_filter([NODE1], pods, incoming)
    if want == "skip":
        assert pre is not None and pre.code is Code.SKIP
        return
    assert pre is None
    assert got == [want]


def test_invalid_affinity_label_is_refused_before_the_plugin() -> None:
    """Upstream's "PodAffinity fails PreFilter with an invalid affinity label syntax": the plugin says
    ``parsing pod: ...``; here the scheduler refuses the invalid pod before any plugin (documented)."""
    incoming = pod("in", **POD_LABEL).pod_affinity("region", in_("service", "{{.bad-value.}}"))
    run = schedule([NODE1], [], incoming)
    assert run.code is UU
    assert run.message.startswith(
        "invalid pod: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
    )
    assert '"{{.bad-value.}}"' in run.message


# -- TestRequiredAffinityMultipleNodes ---------------------------------------------------------

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}
R1Z1A = {"region": "r1", "zone": "z1", "hostname": "nodeA"}
R1Z1B = {"region": "r1", "zone": "z1", "hostname": "nodeB"}
R1Z2B = {"region": "r1", "zone": "z2", "hostname": "nodeB"}
R1Z3C = {"region": "r1", "zone": "z3", "hostname": "nodeC"}


def three_china_india(a: str = "node1", b: str = "node2", c: str = "node3") -> list[NodeBuilder]:
    return [nd(a, **RG_CHINA), nd(b, **RG_CHINA_AZ1), nd(c, **RG_INDIA)]


MULTIPLE_NODES = [
    pytest.param(
        pod("in").pod_affinity("region", in_("foo", "bar")),
        [pod("p1", node="node1", foo="bar")],
        three_china_india(),
        [OK, OK, AFF],
        id="A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", foo="bar", service="securityscan")
        .pod_affinity("zone", in_("foo", "bar"))
        .pod_affinity("zone", in_("service", "securityscan")),
        [pod("p1", node="nodeA", foo="bar")],
        [nd("nodeA", zone="az1", hostname="h1"), nd("nodeB", zone="az2", hostname="h2")],
        [OK, OK],
        id="The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", foo="bar", service="securityscan")
        .pod_affinity("zone", in_("foo", "bar"))
        .pod_affinity("zone", in_("service", "securityscan")),
        [pod("p1", node="nodeA", foo="bar")],
        [nd("nodeA", zoneLabel="az1", hostname="h1"), nd("nodeB", zoneLabel="az2", hostname="h2")],
        [AFF, AFF],
        id="The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
    ),
    pytest.param(
        pod("in").pod_affinity("region", in_("foo", "abc"), anti=True),
        [pod("e", node="nodeA", foo="abc")],
        [nd("nodeA", region="r1", hostname="nodeA"), nd("nodeB", region="r1", hostname="nodeB")],
        [ANTI, ANTI],
        id="NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in")
        .pod_affinity("region", in_("foo", "abc"), anti=True)
        .pod_affinity("zone", in_("service", "securityscan"), anti=True),
        [pod("e", node="nodeA", foo="abc", service="securityscan")],
        [nd("nodeA", region="r1", zone="z1", hostname="nodeA"), nd("nodeB", **R1Z2B)],
        [ANTI, ANTI],
        id="This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
    ),
    pytest.param(
        pod("in").pod_affinity("region", in_("foo", "abc"), anti=True),
        [pod("e", node="nodeA", foo="abc")],
        three_china_india("nodeA", "nodeB", "nodeC"),
        [ANTI, ANTI, OK],
        id="NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", "NS1", foo="123").pod_affinity("region", in_("foo", "bar"), anti=True),
        [
            pod("a", "NS1", "nodeA", foo="bar"),
            pod("c", "NS2", "nodeC").pod_affinity("region", in_("foo", "123"), anti=True),
        ],
        three_china_india("nodeA", "nodeB", "nodeC"),
        [ANTI, ANTI, OK],
        id="NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", foo=""),
        [pod("e", node="nodeA").pod_affinity("invalid-node-label", exists("foo"), anti=True)],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z1B)],
        "skip",
        id="Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", node="nodeA").pod_affinity("invalid-node-label", exists("foo"), anti=True),
        [pod("e", node="nodeA", foo="")],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z1B)],
        [OK, OK],
        id="Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
    ),
    pytest.param(
        pod("in", foo="", bar=""),
        [
            pod("e1", node="nodeA").pod_affinity("zone", exists("foo"), anti=True),
            pod("e2", node="nodeA").pod_affinity("region", exists("bar"), anti=True),
        ],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z2B)],
        [EXISTING, EXISTING],
        id="Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in").pod_affinity("zone", exists("foo"), anti=True).pod_affinity("region", exists("bar"), anti=True),
        [pod("e1", node="nodeA", foo=""), pod("e2", node="nodeB", bar="")],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z2B)],
        [ANTI, ANTI],
        id="Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", foo="", bar=""),
        [
            pod("e", node="nodeA")
            .pod_affinity("invalid-node-label", exists("foo"), anti=True)
            .pod_affinity("zone", exists("bar"), anti=True)
        ],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z2B)],
        [EXISTING, OK],
        id="Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in")
        .pod_affinity("invalid-node-label", exists("foo"), anti=True)
        .pod_affinity("zone", exists("bar"), anti=True),
        [pod("podA", node="nodeA", foo="", bar="")],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z2B)],
        [ANTI, OK],
        id="Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", foo="", bar=""),
        [
            pod("e", node="nodeA")
            .pod_affinity("region", exists("foo"), anti=True)
            .pod_affinity("zone", exists("bar"), anti=True)
        ],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z2B)],
        [EXISTING, EXISTING],
        id="Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in").pod_affinity("region", exists("foo"), anti=True).pod_affinity("zone", exists("bar"), anti=True),
        [pod("e", node="nodeA", foo="", bar="")],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z2B)],
        [ANTI, ANTI],
        id="Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", foo="", bar=""),
        [
            pod("e1", node="nodeA")
            .pod_affinity("zone", exists("foo"), anti=True)
            .pod_affinity("zone", exists("labelA"), anti=True),
            pod("e2", node="nodeB")
            .pod_affinity("zone", exists("bar"), anti=True)
            .pod_affinity("zone", exists("labelB"), anti=True),
        ],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z2B), nd("nodeC", **R1Z3C)],
        [EXISTING, EXISTING, OK],
        id="Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in").pod_affinity("region", exists("foo")).pod_affinity("zone", exists("bar")),
        [pod("pod1", node="nodeA", foo="", bar="")],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z1B)],
        [OK, OK],
        id="Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in").pod_affinity("region", exists("foo")).pod_affinity("zone", exists("bar")),
        [pod("pod1", node="nodeA", foo=""), pod("pod2", node="nodeB", bar="")],
        [nd("nodeA", **R1Z1A), nd("nodeB", **R1Z2B)],
        [AFF, AFF],
        id="Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match, and the match logic should be satisfied on the same pod",  # noqa: E501 (upstream case name)
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), MULTIPLE_NODES)
def test_required_affinity_multiple_nodes(
    incoming: PodBuilder, pods: list[PodBuilder], nodes: list[NodeBuilder], want: Any
) -> None:
    pre, got = run_filter(nodes, pods, incoming, [Namespace("NS1", {})])
    if want == "skip":
        assert pre is not None and pre.code is Code.SKIP
        return
    assert pre is None
    assert got == want


def test_pre_filter_disabled() -> None:
    """Filter without PreFilter's state is an Error naming the key, as upstream."""
    cache = cache_of([nd("n")], [])
    info = cache.get("n")
    assert info is not None
    status = plugin(cache).filter(CycleState(), pod("in").build(), info)
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'error reading "PreFilterInterPodAffinity" from cycleState: not found'


def test_filter_reasons_and_codes() -> None:
    """The three reasons byte for byte, with upstream's codes (only affinity is unresolvable)."""
    assert AFF == (UU, "node(s) didn't match pod affinity rules")
    assert ANTI == (U, "node(s) didn't match pod anti-affinity rules")
    assert EXISTING == (U, "node(s) didn't satisfy existing pods anti-affinity rules")


# -- TestPreFilterStateAddRemovePod ------------------------------------------------------------

LABEL1 = {"region": "r1", "zone": "z11"}
LABEL2 = {"region": "r1", "zone": "z12"}
LABEL3 = {"region": "r2", "zone": "z21"}


def anti_foo_bar(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity("region", in_("foo", "bar"), anti=True)


def complex_terms(b: PodBuilder, *, anti: bool) -> PodBuilder:
    return b.pod_affinity("region", in_("foo", "bar", "buzz"), anti=anti).pod_affinity(
        "zone", not_in("service", "bar", "security", "test"), anti=anti
    )


ADD_REMOVE = [
    pytest.param(
        anti_foo_bar(pod("pending", foo="bar")),
        [pod("p1", node="nodeA", foo="bar"), anti_foo_bar(pod("p2", node="nodeC"))],
        anti_foo_bar(pod("addedPod", node="nodeB", foo="bar")),
        {("region", "r1"): 2},
        {},
        id="preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
    ),
    pytest.param(
        complex_terms(pod("pending", foo="bar"), anti=True),
        [pod("p1", node="nodeA", foo="bar"), anti_foo_bar(pod("p2", node="nodeC"))],
        complex_terms(pod("addedPod", node="nodeA", foo="bar"), anti=True),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
        id="preFilterState anti-affinity terms are updated correctly after adding and removing a pod (complex)",
    ),
    pytest.param(
        complex_terms(pod("pending", foo="bar"), anti=False),
        [pod("p1", node="nodeA", foo="bar"), complex_terms(anti_foo_bar(pod("p2", node="nodeC")), anti=False)],
        complex_terms(pod("addedPod", node="nodeA", foo="bar"), anti=True),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
        id="preFilterState matching pod affinity and anti-affinity are updated correctly after adding and removing a pod",  # noqa: E501 (upstream case name)
    ),
]


@pytest.mark.parametrize(("pending", "existing", "added", "want_anti", "want_affinity"), ADD_REMOVE)
def test_pre_filter_state_add_remove_pod(
    pending: PodBuilder,
    existing: list[PodBuilder],
    added: PodBuilder,
    want_anti: dict[tuple[str, str], int],
    want_affinity: dict[tuple[str, str], int],
) -> None:
    """AddPod gives the state PreFilter computes with the pod present; RemovePod undoes it exactly."""
    nodes = [nd("nodeA", **LABEL1), nd("nodeB", **LABEL2), nd("nodeC", **LABEL3)]
    incoming = pending.build()

    def state_of(pods: list[PodBuilder]) -> tuple[InterPodAffinity, CycleState, PreFilterState, Cache]:
        cache = cache_of(nodes, pods)
        pl = plugin(cache)
        state = CycleState()
        _, status = pl.pre_filter(state, incoming, cache.node_infos())
        assert status is None
        return pl, state, state.read(PRE_FILTER_KEY, PreFilterState), cache

    _, _, all_pods_state, _ = state_of([*existing, added])
    pl, state, stored, cache = state_of(existing)
    original = stored.clone()
    added_pod = added.build()
    info = cache.get(added_pod.node_name)
    assert info is not None
    assert pl.add_pod(state, incoming, added_pod, info) is None
    assert stored.anti_affinity_counts == want_anti
    assert stored.affinity_counts == want_affinity
    assert stored == all_pods_state
    assert pl.remove_pod(state, incoming, added_pod, info) is None
    assert stored == original


def test_pre_filter_state_clone() -> None:
    """The clone is another object with equal, independent counts."""
    p = pod("p").build()
    source = PreFilterState(
        {("name", "node1"): 1, ("name", "node2"): 1},
        {("name", "nodeA"): 1, ("name", "nodeC"): 2},
        {("name", "nodeN"): 3, ("name", "nodeM"): 1},
        p,
        (),
        (),
        None,
    )
    clone = source.clone()
    assert clone is not source and clone == source
    clone.affinity_counts[("name", "nodeA")] += 1
    assert source.affinity_counts[("name", "nodeA")] == 1


# -- TestGetTPMapMatchingIncomingAffinityAntiAffinity -----------------------------------------


def normal(*labels: str) -> PodBuilder:
    return pod("normal", node="nodeA", **dict.fromkeys(labels, ""))


INCOMING_COUNTS = [
    pytest.param([], pod("aaa-normal"), {}, {}, id="nil test"),
    pytest.param(
        [normal("aaa")], pod("aaa-normal"), {}, {}, id="incoming pod without affinity/anti-affinity causes a no-op"
    ),
    pytest.param(
        [normal("bbb")],
        pod("aaa-anti").pod_affinity("hostname", exists("aaa")).pod_affinity("hostname", exists("aaa"), anti=True),
        {},
        {},
        id="no pod has label that violates incoming pod's affinity and anti-affinity",
    ),
    pytest.param(
        [normal("aaa")],
        pod("affi-antiaffi").pod_affinity("hostname", exists("aaa")).pod_affinity("hostname", exists("aaa"), anti=True),
        {("hostname", "nodeA"): 1},
        {("hostname", "nodeA"): 1},
        id="existing pod matches incoming pod's affinity and anti-affinity - single term case",
    ),
    pytest.param(
        [normal("aaa", "bbb")],
        pod("affi-antiaffi")
        .pod_affinity("hostname", exists("aaa"))
        .pod_affinity("hostname", exists("bbb"))
        .pod_affinity("hostname", exists("aaa"), anti=True),
        {("hostname", "nodeA"): 2},  # one for each term
        {("hostname", "nodeA"): 1},
        id="existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
    ),
    pytest.param(
        [normal("aaa")],
        pod("affi-antiaffi")
        .pod_affinity("hostname", exists("aaa"))
        .pod_affinity("hostname", exists("bbb"))
        .pod_affinity("hostname", exists("aaa"), anti=True)
        .pod_affinity("hostname", exists("bbb"), anti=True),
        {},
        {("hostname", "nodeA"): 1},
        id="existing pod not match incoming pod's affinity but matches anti-affinity",
    ),
    pytest.param(
        [normal("aaa", "bbb")],
        pod("anaffi-antiaffiti")
        .pod_affinity("hostname", exists("aaa"))
        .pod_affinity("hostname", exists("ccc"))
        .pod_affinity("hostname", exists("aaa"), anti=True)
        .pod_affinity("hostname", exists("ccc"), anti=True),
        {},
        {("hostname", "nodeA"): 1},
        id="incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1",
    ),
    pytest.param(
        [normal("bbb")],
        pod("affi-antiaffi")
        .pod_affinity("hostname", exists("aaa"))
        .pod_affinity("hostname", exists("bbb"))
        .pod_affinity("hostname", exists("aaa"), anti=True)
        .pod_affinity("hostname", exists("bbb"), anti=True),
        {},
        {("hostname", "nodeA"): 1},
        id="incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2",
    ),
]


@pytest.mark.parametrize(("existing", "incoming", "want_affinity", "want_anti"), INCOMING_COUNTS)
def test_incoming_affinity_anti_affinity_counts(
    existing: list[PodBuilder],
    incoming: PodBuilder,
    want_affinity: dict[tuple[str, str], int],
    want_anti: dict[tuple[str, str], int],
) -> None:
    cache = cache_of([nd("nodeA", hostname="nodeA")], existing)
    stored = cal_pre_filter_state(incoming.build(), cache)
    assert stored.affinity_counts == want_affinity
    assert stored.anti_affinity_counts == want_anti


# -- queueing hints (plugin_test.go) -----------------------------------------------------------

AFF_SERVICE = pod("p").pod_affinity("region", in_("service", "securityscan", "value2"))
ANTI_SERVICE = pod("p").pod_affinity("region", in_("service", "securityscan", "value2"), anti=True)
AFF_AAA_BBB = pod("p").pod_affinity("hostname", exists("aaa")).pod_affinity("hostname", exists("bbb"))
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def other(node: str = "fake-node", **labels: str) -> Pod:
    return pod("other", node=node, **labels).build()


POD_HINTS = [
    pytest.param(AFF_SERVICE, None, other(service="securityscan"), Q, id="add a pod which matches the pod affinity"),
    pytest.param(AFF_SERVICE, None, other("", service="securityscan"), SKIP, id="add an un-scheduled pod"),
    pytest.param(AFF_SERVICE, None, other(aaa="a"), SKIP, id="add a pod which doesn't match the pod affinity"),
    pytest.param(
        AFF_SERVICE,
        other(aaa="a"),
        other(service="securityscan"),
        Q,
        id="update a pod from non-match to match pod affinity",
    ),
    pytest.param(
        AFF_SERVICE,
        other(service="value2"),
        other(service="securityscan"),
        SKIP,
        id="the updating pod matches target pod's affinity both before and after label changes",
    ),
    pytest.param(
        AFF_SERVICE,
        other("", service="securityscan"),
        other("", service="securityscan"),
        SKIP,
        id="update an un-scheduled pod",
    ),
    pytest.param(
        AFF_SERVICE,
        other(service="securityscan"),
        other(aaa="a"),
        SKIP,
        id="update a pod from match to non-match the pod affinity",
    ),
    pytest.param(
        AFF_AAA_BBB,
        other(aaa="a"),
        other(service="securityscan"),
        SKIP,
        id="update a pod from match to non-match pod's affinity - multiple terms case",
    ),
    pytest.param(
        AFF_AAA_BBB,
        other(aaa="a"),
        other(aaa="", bbb=""),
        Q,
        id="update a pod from non-match to match pod's affinity - multiple terms case",
    ),
    pytest.param(
        ANTI_SERVICE,
        other(service="securityscan"),
        other(service="aaaa"),
        Q,
        id="modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
    ),
    pytest.param(
        ANTI_SERVICE,
        other(service="bbb"),
        other(service="securityscan"),
        SKIP,
        id="modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
    ),
    pytest.param(ANTI_SERVICE, other(aaa="a"), None, SKIP, id="delete a pod which doesn't match pod's anti-affinity"),
    pytest.param(
        ANTI_SERVICE, other(service="securityscan"), None, Q, id="delete a pod which matches pod's anti-affinity"
    ),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), POD_HINTS)
def test_is_schedulable_after_pod_change(
    target: PodBuilder, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    assert plugin(Cache()).is_schedulable_after_pod_change(target.build(), old, new) is want


def node_of(**labels: str) -> Node:
    return nd("node-a", **labels).build()


AFF_ZONE = pod("p").pod_affinity("zone", in_("service", "securityscan", "value2"))
AFF_REGION = pod("p").pod_affinity("region", in_("service", "securityscan", "value2"))
ANTI_ZONE = pod("p").pod_affinity("zone", {"matchLabels": {"another": "label"}}, anti=True)

NODE_HINTS = [
    pytest.param(AFF_ZONE, None, node_of(zone="zone1"), Q, id="add a new node with matched pod affinity topologyKey"),
    pytest.param(AFF_REGION, None, node_of(zone="zone1"), SKIP, id="add a new node without matched topologyKey"),
    pytest.param(AFF_ZONE, node_of(aaa="a"), node_of(aaa="b"), SKIP, id="update node label but not topologyKey"),
    pytest.param(
        AFF_ZONE,
        node_of(zone="zone1"),
        node_of(zone="zone1", **{"unrelated-label": "unrelated"}),
        SKIP,
        id="update node label that isn't related to the pod affinity",
    ),
    pytest.param(
        AFF_ZONE,
        node_of(zone="zone1"),
        node_of(zone="zone2"),
        Q,
        id="update node with different affinity topologyKey value",
    ),
    pytest.param(
        AFF_ZONE, node_of(aaa="a"), node_of(zone="zone1"), Q, id="update node to have the affinity topology label"
    ),
    pytest.param(
        ANTI_ZONE, None, node_of(zone="zone1"), Q, id="add a new node with matched pod anti-affinity topologyKey"
    ),
    pytest.param(ANTI_ZONE, None, node_of(), Q, id="add a new node without matched pod anti-affinity topologyKey"),
    pytest.param(
        ANTI_ZONE,
        node_of(zone="zone1"),
        node_of(zone="zone1", **{"unrelated-label": "unrelated"}),
        SKIP,
        id="update node label that isn't related to the pod anti-affinity",
    ),
    pytest.param(
        ANTI_ZONE,
        node_of(zone="zone1"),
        node_of(zone="zone2"),
        Q,
        id="update node with different anti-affinity topologyKey value",
    ),
    pytest.param(
        ANTI_ZONE,
        node_of(aaa="a"),
        node_of(zone="zone1"),
        SKIP,
        id="update node to have the anti-affinity topology label",
    ),
    pytest.param(
        ANTI_ZONE,
        node_of(zone="zone1"),
        node_of(aaa="a"),
        Q,
        id="update node label not to have anti-affinity topology label",
    ),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), NODE_HINTS)
def test_is_schedulable_after_node_change(target: PodBuilder, old: Node | None, new: Node, want: QueueingHint) -> None:
    assert plugin(Cache()).is_schedulable_after_node_change(target.build(), old, new) is want


def test_hints_queue_on_objects_of_another_kind() -> None:
    """Upstream's conversion error returns Queue, so an unexpected object never strands a pod."""
    pl = plugin(Cache())
    target = AFF_ZONE.build()
    assert pl.is_schedulable_after_pod_change(target, None, node_of()) is Q
    assert pl.is_schedulable_after_node_change(target, None, other()) is Q


def test_events_to_register() -> None:
    """Pod Add|UpdatePodLabel|Delete and Node Add|UpdateNodeLabel (queueing hints on: no UpdateNodeTaint)."""
    events = [e.event for e in plugin(Cache()).events_to_register()]
    assert [(e.resource, e.action) for e in events] == [
        (EventResource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]


def test_not_signed_so_never_reused_per_node() -> None:
    """Filter depends on pods on other nodes: the plugin must not offer per-node result reuse."""
    fwk = framework()
    assert not isinstance(plugin(Cache()), SignPlugin)
    assert IPA in [p.NAME for p in fwk.filter]
    assert IPA not in {p.NAME for p in fwk._signers}


# -- args --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param({}, (1, False), id="defaults"),
        pytest.param({"hardPodAffinityWeight": 0}, (0, False), id="zero-allowed"),
        pytest.param({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}, (100, True), id="max"),
    ],
)
def test_args(args: dict[str, Any], want: tuple[int, bool]) -> None:
    assert parse_args(args) == want


@pytest.mark.parametrize("weight", [-1, 101])
def test_hard_pod_affinity_weight_out_of_range(weight: int) -> None:
    with pytest.raises(
        ValueError, match=rf"^hardPodAffinityWeight: Invalid value: {weight}: not in valid range \[0, 100\]$"
    ):
        parse_args({"hardPodAffinityWeight": weight})


# -- TestPreferredAffinity (scoring_test.go) ---------------------------------------------------

CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
NS_SELECTOR: dict[str, Any] = {"namespaces": ["subteam2.team2"], "namespaceSelector": in_("team", "team1")}


def stay_with_s1_in_region(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity("region", in_("security", "S1"), weight=5)


def stay_with_s2_in_region(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity("region", in_("security", "S2"), weight=6)


def affinity3(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity(
        "region", sel(("security", "NotIn", ("S1",)), in_term("security", "S2")), weight=8
    ).pod_affinity("region", sel(("security", "Exists", ()), ("wrongkey", "DoesNotExist", ())), weight=2)


def hard_affinity(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity("region", in_("security", "S1", "value2")).pod_affinity(
        "region", sel(("security", "Exists", ()), ("wrongkey", "DoesNotExist", ()))
    )


def away_from_s1_in_az(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity("az", in_("security", "S1"), anti=True, weight=5)


def away_from_s2_in_az(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity("az", in_("security", "S2"), anti=True, weight=5)


def stay_s1_away_s2(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity("region", in_("security", "S1"), weight=8).pod_affinity(
        "az", in_("security", "S2"), anti=True, weight=5
    )


def affinity_ns_selector(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity("region", in_("security", "S1"), weight=5, **NS_SELECTOR)


def anti_affinity_ns_selector(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity("region", in_("security", "S1"), anti=True, weight=5, **NS_SELECTOR)


def nodes_of(*labels: dict[str, str]) -> list[NodeBuilder]:
    return [nd(f"node{i}", **lab) for i, lab in enumerate(labels, 1)]


def on(node: str, labels: dict[str, str] | None = None, ns: str = "default") -> PodBuilder:
    return pod("", ns, node, **(labels or {}))


M = 100
PREFERRED = [
    pytest.param(
        pod("in", **S1), [], nodes_of(CHINA, INDIA, AZ1), None, {}, id="all nodes are same priority as Affinity is nil"
    ),
    pytest.param(
        stay_with_s1_in_region(pod("in", **S1)),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        nodes_of(CHINA, INDIA, AZ1),
        [M, 0, 0],
        {},
        id="Affinity: pod that matches topology key & pods in nodes will get high score comparing to otherswhich doesn't match either pods in nodes or in topology key",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        stay_with_s1_in_region(pod("in")),
        [on("node1", S1)],
        nodes_of(CHINA, CHINA_AZ1, INDIA),
        [M, M, 0],
        {},
        id="All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        stay_with_s2_in_region(pod("in", **S1)),
        [on("node1", S2), on("node1", S2), on("node2", S2), on("node3", S2), on("node4", S2), on("node5", S2)],
        nodes_of(CHINA, INDIA, CHINA, CHINA, INDIA),
        [M, 0, M, M, 0],
        {},
        id="Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        affinity3(pod("in", **S1)),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        nodes_of(CHINA, INDIA, AZ1),
        [20, M, 0],
        {},
        id="Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **S2),
        [stay_with_s1_in_region(on("node1", S1)), stay_with_s2_in_region(on("node2", S2))],
        nodes_of(CHINA, INDIA, AZ1),
        [0, M, 0],
        {},
        id="Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", "subteam1.team1", **S1),
        [affinity_ns_selector(on("node1", S1)), stay_with_s2_in_region(on("node2", S2))],
        nodes_of(CHINA, INDIA, AZ1),
        [M, 0, 0],
        {},
        id="Affinity symmetry with namespace selector",
    ),
    pytest.param(
        pod("in", "subteam1.team1", **S1),
        [anti_affinity_ns_selector(on("node1", S1)), stay_with_s2_in_region(on("node2", S2))],
        nodes_of(CHINA, INDIA, AZ1),
        [0, M, M],
        {},
        id="AntiAffinity symmetry with namespace selector",
    ),
    pytest.param(
        pod("in", **S1),
        [hard_affinity(on("node1", S1)), hard_affinity(on("node2", S2))],
        nodes_of(CHINA, INDIA, AZ1),
        [M, M, 0],
        {},
        id="Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
    ),
    pytest.param(
        away_from_s1_in_az(pod("in", **S1)),
        [on("node1", S1), on("node2", S2)],
        nodes_of(AZ1, CHINA),
        [0, M],
        {},
        id="Anti Affinity: pod that does not match existing pods in node will get high score ",
    ),
    pytest.param(
        away_from_s1_in_az(pod("in", **S1)),
        [on("node1", S1), on("node2", S1)],
        nodes_of(AZ1, CHINA),
        [0, M],
        {},
        id="Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others ",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        away_from_s1_in_az(pod("in", **S1)),
        [on("node1", S1), on("node1", S1), on("node2", S2)],
        nodes_of(AZ1, INDIA),
        [0, M],
        {},
        id="Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **S2),
        [away_from_s2_in_az(on("node1", S1)), away_from_s1_in_az(on("node2", S2))],
        nodes_of(AZ1, AZ2),
        [0, M],
        {},
        id="Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
    ),
    pytest.param(
        stay_s1_away_s2(pod("in", **S1)),
        [on("node1", S1), on("node2", S1)],
        nodes_of(CHINA, AZ1),
        [M, 0],
        {},
        id="Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        stay_s1_away_s2(pod("in", **S1)),
        [
            on("node1", S1),
            on("node1", S1),
            on("node2", S1),
            on("node3", S1),
            on("node3", S1),
            on("node4", S1),
            on("node5", S1),
        ],
        nodes_of(CHINA_AZ1, INDIA, CHINA, CHINA, INDIA),
        [M, 0, M, M, 0],
        {},
        id="Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        stay_s1_away_s2(pod("in", **S1)),
        [on("node1", S1), on("node2", S2), stay_s1_away_s2(on("node3")), away_from_s1_in_az(on("node4"))],
        nodes_of(CHINA, AZ1, INDIA, AZ2),
        [M, 0, M, 0],
        {},
        id="Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",  # noqa: E501 (upstream case name)
    ),
    pytest.param(
        pod("in", **S1),
        [on("node1", S1), stay_s1_away_s2(on("node2"))],
        nodes_of(CHINA, CHINA),
        [0, 0],
        {},
        id="Avoid panic when partial nodes in a topology don't have pods with affinity",
    ),
    pytest.param(
        affinity_ns_selector(pod("in", "subteam1.team1", **S1)),
        [
            on("node1", S1, "subteam1.team1"),
            on("node1", S1, "subteam1.team1"),
            on("node1", S1, "subteam1.team2"),
            on("node2", S1, "subteam2.team1"),
        ],
        nodes_of(CHINA, INDIA),
        [M, 0],
        {},
        id="Affinity with pods matching NamespaceSelector",
    ),
    pytest.param(
        affinity_ns_selector(pod("in", "subteam1.team1", **S1)),
        [
            on("node1", S1, "subteam1.team1"),
            on("node1", S1, "subteam1.team1"),
            on("node1", S1, "subteam2.team2"),
            on("node2", S1, "subteam2.team1"),
        ],
        nodes_of(CHINA, INDIA),
        [M, 0],
        {},
        id="Affinity with pods matching both NamespaceSelector and Namespaces fields",
    ),
    pytest.param(
        anti_affinity_ns_selector(pod("in", "subteam1.team1", **S1)),
        [
            on("node1", S1, "subteam1.team1"),
            on("node1", S1, "subteam1.team1"),
            on("node1", S1, "subteam1.team2"),
            on("node2", S1, "subteam2.team1"),
        ],
        nodes_of(CHINA, INDIA),
        [0, M],
        {},
        id="Anti-affinity with pods matching NamespaceSelector",  # upstream reuses the affinity case's name
    ),
    pytest.param(
        anti_affinity_ns_selector(pod("in", "subteam1.team1", **S1)),
        [
            on("node1", S1, "subteam1.team1"),
            on("node1", S1, "subteam1.team1"),
            on("node1", S1, "subteam2.team2"),
            on("node2", S1, "subteam2.team1"),
        ],
        nodes_of(CHINA, INDIA),
        [0, M],
        {},
        id="Anti-affinity with pods matching both NamespaceSelector and Namespaces fields",  # ditto
    ),
    pytest.param(
        pod("in", **S2),
        [stay_s1_away_s2(on("node1", S1)), stay_with_s2_in_region(on("node2", S2))],
        nodes_of(CHINA, INDIA),
        None,
        {"ignorePreferredTermsOfExistingPods": True},
        id="Ignore preferred terms of existing pods",
    ),
    pytest.param(
        pod("in", **S2),
        [stay_s1_away_s2(on("node1", S1)), stay_with_s2_in_region(on("node2", S2))],
        nodes_of(CHINA, INDIA),
        [0, M],
        {"ignorePreferredTermsOfExistingPods": False},
        id="Do not ignore preferred terms of existing pods",
    ),
    pytest.param(pod("in", **S2), [], [], None, {}, id="No nodes to score"),
]


def run_score(
    nodes: list[NodeBuilder], pods: list[PodBuilder], incoming: PodBuilder, args: dict[str, Any]
) -> tuple[list[int], list[int]] | None:
    """PreScore → Score → NormalizeScore over all nodes; None when PreScore says Skip."""
    cache = cache_of(nodes, pods)
    pl = plugin(cache, **args)
    p = incoming.build()
    status = pl.pre_score(CycleState(), p, cache.node_infos())
    if status is not None and status.code is Code.SKIP:
        return None
    return score_nodes(pl, cache, p, [n.build().name for n in nodes])


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want", "args"), PREFERRED)
def test_preferred_affinity(
    incoming: PodBuilder, pods: list[PodBuilder], nodes: list[NodeBuilder], want: list[int] | None, args: dict[str, Any]
) -> None:
    got = run_score(nodes, pods, incoming, {"hardPodAffinityWeight": 1, **args})
    assert (None if got is None else got[1]) == want


def hard_pod_affinity(b: PodBuilder) -> PodBuilder:
    return b.pod_affinity(
        "region",
        in_("service", "S1"),
        namespaces=["default", "subteam2.team2"],
        namespaceSelector=in_("team", "team1"),
    )


HARD_WEIGHT = [
    pytest.param("default", 1, [M, M, 0], id="with default weight"),
    pytest.param("default", 0, None, id="with zero weight"),
    pytest.param("subteam1.team2", 1, None, id="with no matching namespace"),
    pytest.param("subteam1.team1", 1, [M, M, 0], id="with matching NamespaceSelector"),
    pytest.param("subteam2.team2", 1, [M, M, 0], id="with matching Namespaces"),
]


@pytest.mark.parametrize(("namespace", "weight", "want"), HARD_WEIGHT)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    namespace: str, weight: int, want: list[int] | None
) -> None:
    got = run_score(
        nodes_of(CHINA, INDIA, AZ1),
        [hard_pod_affinity(on("node1")), hard_pod_affinity(on("node2"))],
        pod("in", namespace, service="S1"),
        {"hardPodAffinityWeight": weight},
    )
    assert (None if got is None else got[1]) == want


def test_raw_scores_are_summed_weights() -> None:
    """Raw Score is the signed weight sum of the node's domains (affinity 8, anti-affinity -5)."""
    got = run_score(
        nodes_of(CHINA_AZ1, {"region": "China", "az": "az2"}, INDIA),
        [on("node1", S1), on("node1", S2)],
        stay_s1_away_s2(pod("in", **S1)),
        {},
    )
    assert got == ([3, 8, 0], [37, M, 0])


def test_touched_domain_summing_to_zero_still_scores() -> None:
    """A domain whose weights cancel keeps the plugin from Skip (upstream's non-empty scoreMap): all 0."""
    incoming = (
        pod("in")
        .pod_affinity("region", in_("security", "S1"), weight=5)
        .pod_affinity("region", in_("security", "S1"), anti=True, weight=5)
    )
    assert run_score(nodes_of(CHINA, INDIA), [on("node1", S1)], incoming, {}) == ([0, 0], [0, 0])


# -- counts from the cache's indexes (issue #22): the same answers as a visit to every pod -------------


def test_a_terminating_pod_still_counts_for_the_incoming_pods_terms() -> None:
    """Upstream's NodeInfo.Pods holds terminating pods and InterPodAffinity does not skip them (unlike
    PodTopologySpread): red if the index behind it left them out."""
    nodes = [nd("node1", hostname="node1"), nd("node2", hostname="node2")]
    existing = [pod("old", node="node1", app="db").terminating()]
    incoming = pod("in").pod_affinity("hostname", in_("app", "db"), anti=True)
    assert run_filter(nodes, existing, incoming) == (None, [ANTI, OK])
    wanted = pod("in").pod_affinity("hostname", in_("app", "db"))
    assert run_filter(nodes, existing, wanted) == (None, [OK, AFF])


def test_counts_follow_pods_as_they_come_and_go_and_skip_nodes_not_in_the_cache() -> None:
    cache = cache_of([nd("node1", zone="z1"), nd("node2", zone="z1"), nd("node3", zone="z2")], [])
    incoming = pod("in").pod_affinity("zone", in_("app", "db"), anti=True).build()

    def anti_counts() -> dict[tuple[str, str], int]:
        return cal_pre_filter_state(incoming, cache).anti_affinity_counts

    assert anti_counts() == {}
    first, second = pod("a", node="node1", app="db").build(), pod("b", node="node2", app="db").build()
    cache.add_pod(first)
    cache.add_pod(second)
    cache.add_pod(pod("c", node="node-not-yet-seen", app="db").build())  # upstream's snapshot lists no such node
    assert anti_counts() == {("zone", "z1"): 2}
    cache.remove_pod(first)
    cache.add_pod(pod("b", node="node3", app="db").build())  # moved (a rebinding seen by the watch)
    assert anti_counts() == {("zone", "z2"): 1}


def test_terms_over_every_namespace_and_several_affinity_terms_are_counted_pod_by_pod() -> None:
    """A namespaceSelector that matches an empty label set selects every namespace; a pod must match
    all of several affinity terms: neither is a per-selector count, both still give upstream's counts."""
    nodes = [nd("node1", hostname="node1", zone="z1"), nd("node2", hostname="node2", zone="z1")]
    existing = [pod("a", "subteam1.team1", node="node1", app="db", tier="x"), pod("b", node="node2", app="db")]
    every = {"labelSelector": in_("app", "db"), "topologyKey": "zone", "namespaceSelector": {}}
    incoming = pod("in").set("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution", [every])
    cache = cache_of(nodes, existing)
    assert cal_pre_filter_state(incoming.build(), cache).anti_affinity_counts == {("zone", "z1"): 2}
    both = pod("in", "subteam1.team1").pod_affinity("hostname", in_("app", "db")).pod_affinity("zone", exists("tier"))
    state = cal_pre_filter_state(both.build(), cache)
    assert state.affinity_counts == {("hostname", "node1"): 1, ("zone", "z1"): 1}


def test_pods_of_one_template_share_their_affinity_terms() -> None:
    """What lets PreFilter and PreScore decide once per template whether existing pods' terms match."""
    template = pod("x", node="node1", app="web").pod_affinity("zone", in_("app", "db"), anti=True)
    one, two = Pod.from_dict(template.dict()), Pod.from_dict({**template.dict(), "metadata": {"name": "y"}})
    assert one.pod_affinity is two.pod_affinity
    other = pod("z", "subteam1.team1", node="node1").pod_affinity("zone", in_("app", "db"), anti=True).build()
    assert other.pod_affinity != one.pod_affinity  # its own namespace is part of its terms
