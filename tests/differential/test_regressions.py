"""Every mismatch a differential campaign found, kept: the seeds (re-run against the oracle) and the
rule each one taught, pinned as a pure test with the arithmetic written out.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from scheduler.config import upstream_config
from scheduler.features import features_at
from scheduler.testing import make_node, make_pod
from tests.differential.generator import FEATURES, NODE_POD_FEATURES, scenario
from tests.differential.runner import (
    informer_order,
    oracle_binary,
    python_side,
    run_batch,
    upstream_default_profile,
)

# seed -> what it uncovered
REGRESSION_SEEDS = {
    1000000: "NodeResourcesFit's scorer ignores pod-level requests (v1.35.4 builds it without feature flags)",
    1000013: "the same, under RequestedToCapacityRatio",
    11000298: "opportunistic batching: a replica takes the previous one's runner-up, not a fresh best (issue #17)",
    12003340: "batching after a partial search (over 100 nodes): each side ranks the nodes it found; verdicts compare",
    15000532: "a failed nominated node's rejector joins the absent nodes' text ([NodeAffinity TaintToleration])",
    15001915: "a nominated pod that failed stays nominated and counts for a later pod of no higher priority "
    "(PostFilter's answer decides on both sides; DefaultPreemption clears it only when it finds no candidate)",
    15002147: "the oracle's every-node view keeps a failed nominated node's own verdict (self-check)",
    1000053: "issue #18: an rbd volume's pool left to the API server's default 'rbd' is spelled out by the "
    "generator (the oracle decodes without defaulting)",
    1000063: "issue #18: isCSIMigrationOn is on for EBS, GCE PD, Azure Disk and Cinder without the CSINode's "
    "migrated-plugins annotation (only Portworx reads it): an inline EBS volume counts against the EBS limit",
    1000243: "issue #18: DynamicResources' PostFilter error after a PreFilter refusal (a missing claim) stops "
    "DefaultPreemption, so a nominee keeps its nomination and counts for the next pod",
    1000003: "issue #18: the same refusal's message ends with upstream's internal 'not found'; ours without it",
}

# Preemption (issue #19), clusters from ``crowded(seed)``: seed -> what it uncovered
CROWDED_REGRESSION_SEEDS = {
    1000820: "with fewer candidates wanted than potential nodes, upstream lists them in a map's order: the "
    "oracle's view takes the snapshot's order from our offset (as we do)",
    20002023: "the snapshot's node order is the informer's (nodes listed by name: node-10 before node-2); our "
    "side met the nodes in file order, so the offset indexed another node (campaign of 20,000: 20 such)",
    20016558: "the same, where the node we missed wins on its unstarted victims' start time",
}


# Every seed above was found before the generator's features "wffc", "dra" and issue #47's node and pod changes
# existed; where a seed draws one now, it would change the cluster that uncovered the rule, so the
# clusters are made as found.
AS_FOUND = FEATURES - {"wffc", "dra"} - NODE_POD_FEATURES


def _as_found(seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return scenario(seed, AS_FOUND)


def _crowded_as_found(seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return scenario(seed, AS_FOUND, full=True)


def test_seeds_that_once_differed_agree_with_upstream() -> None:
    mismatches = run_batch(sorted(REGRESSION_SEEDS), oracle_binary(), make=_as_found)
    assert not {seed: found for seed, found in mismatches.items() if seed in REGRESSION_SEEDS}


def test_crowded_seeds_that_once_differed_agree_with_upstream() -> None:
    mismatches = run_batch(sorted(CROWDED_REGRESSION_SEEDS), oracle_binary(), make=_crowded_as_found)
    assert not mismatches


# Issue #47, feature "draextended" (DeviceClasses backing extended resources), as kube-scheduler 1.36.3:
# seed -> what it uncovered
DRA_EXTENDED_REGRESSION_SEEDS = {
    6000006: "a pod asking for a DeviceClass-backed resource holds a claim for upstream's PostFilter: 'still "
    "not schedulable' at 1.36, not 'no new claims to deallocate'",
    6000232: "several 'Insufficient <extended>' reasons on one node: upstream's order is Go map order",
    6000622: "'cannot fit resource': an extended resource no class backs and the node does not list (Fit ignores "
    "it) when the pod also asks for a backed one",
    6000643: "upstream's ExtendedResourceCache: an older class arriving after a newer one holding its "
    "extendedResourceName is not recorded, not even under its implicit name",
}


def test_dra_extended_seeds_that_once_differed_agree_with_upstream() -> None:
    """Made as found: without issue #47's node and pod changes, which came later."""
    features = features_at("1.36")
    make = functools.partial(scenario, features=FEATURES - NODE_POD_FEATURES - {"dra"}, kube_version="1.36")
    mismatches = run_batch(sorted(DRA_EXTENDED_REGRESSION_SEEDS), oracle_binary(features), make, features=features)
    assert not mismatches


# Issue #49, feature "dra" in every cluster (``runner --all-with dra``), with the allocator's gated
# parts: (minor, seed) -> what it uncovered
DRA_REGRESSION_SEEDS = {
    ("1.36", 30000052): "harness: pods without a UID (the generator gave one only to pods with claims) "
    "shared the claim created for another's DeviceClass-backed extended resource (owned by UID ''), which "
    "ours then took for this pod's from an earlier cycle ('cannot schedule extended resource claim'); the "
    "API server gives every pod a UID, and so does the generator now where classes back extended resources",
    ("1.36", 30000085): "NodeResourcesBalancedAllocation (and Fit) score a DRA-backed extended resource the node "
    "offers none of in devices: those the backing class selects on the node, and those allocated",
    ("1.36", 31000100): "harness: a binding cycle that fails after the scheduling cycle (a pod with a claim and a "
    "DRA-backed resource its node's device plugin serves: upstream's PreBind fails on empty request mappings, "
    "as ours) is compared as 'bindingError', the pod left unbound on both sides (the oracle errored)",
    ("1.37", 31000460): "the same at 1.37",
    ("1.37", 34000593): "harness: claims without a UID (the generator gave none) were one claim to our PreBind's "
    "bookkeeping (the cycle's claims and those in flight are told apart by UID), so after a failed binding "
    "Unreserve patched one of the pod's two claims; the API server gives every claim a UID, and so does the "
    "generator now",
    ("1.37", 400542): "harness: after such a binding failure ours listed the claim's devices as allocated, the "
    "oracle none (Unreserve took the allocation back on both sides); not compared now",
    ("1.36", 420412): "harness: VolumeBinding's PreBind wrote a PV binding before DynamicResources' PreBind failed; "
    "the oracle reported that write with no pod (now with the failed one, as ours)",
    ("1.35", 440640): "NodeInfo's used host ports are a set, as upstream's HostPortInfo: two pods bound with one "
    "hostPort hold it once, so preemption's dry run removing the lower-priority one freed the port (the "
    "preemptor then failed NodeResourcesFit there); ours counted holders and still failed NodePorts",
    ("1.36", 440640): "the same at 1.36",
    ("1.37", 440640): "the same at 1.37",
    ("1.36", 478739): "harness: the oracle's fake API kept a claim's resourceVersion on a patch, and upstream's "
    "claim assume cache drops an update whose version is not newer, so after a failed binding it went on seeing "
    "the reservation Unreserve had patched away and its PostFilter deallocated nothing ('still not "
    "schedulable'); ours, seeing the patch as an API server answers it, deallocated the shared claim",
}


@pytest.mark.parametrize("minor", ["1.35", "1.36", "1.37"])
def test_dra_seeds_that_once_differed_agree_with_upstream(minor: str) -> None:
    seeds = sorted(seed for at, seed in DRA_REGRESSION_SEEDS if at == minor)
    if not seeds:
        pytest.skip(f"no DRA regression seed at {minor}")
    features = features_at(minor)
    make = functools.partial(scenario, kube_version=minor, always=frozenset({"dra"}))
    assert not run_batch(seeds, oracle_binary(features), make, features=features)


def test_a_lagging_claim_informer_is_settled_before_the_next_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 635789 at 1.37, which differed once in a 10,000-cluster campaign on a loaded machine:
    team-b/pending-0's binding fails after PreBind wrote its claim (gpu-0 and a share of gpu-shared
    on node-18). Upstream had assumed that write, so its assume cache skipped the same version from
    the informer and kept the copy from before it; Unreserve's AssumedClaimRestore rolled the claim
    back to that copy, unallocated, until the informer brought Unreserve's own patch. A next cycle
    that started first (team-b/contender-1) took gpu-0, which the API still gave to the claim; ours,
    and upstream once settled, give contender-1 a share of gpu-shared. The oracle now waits for the
    claim cache to hold the API's claims before each cycle. Red without that wait: with every claim
    event held back 20 ms, upstream takes gpu-0 on each run.
    """
    monkeypatch.setenv("ORACLE_CLAIM_WATCH_DELAY", "20ms")
    features = features_at("1.37")
    make = functools.partial(scenario, kube_version="1.37", always=frozenset({"dra"}))
    assert not run_batch([635789], oracle_binary(features), make, features=features)


def test_unstarted_victims_of_equal_priority_follow_the_informers_pod_order() -> None:
    """Seed 1000966 (before the generator set startTimes): upstream's sort of victims reads the clock
    for each pod without status.startTime, so of two such pods of equal priority the later one in the
    node's pod order is tried first; that order is the informer's (namespace, name) list, not the file's.

    Node cpu 4; team-a/big (2) and default/small (1.5), priority 0, unstarted; the preemptor (1, priority
    100). Upstream's node order: default/small, team-a/big -> sorted team-a/big, default/small: big is
    reprieved (2 + 1 <= 4), small is not (2 + 1.5 + 1 > 4): the victim is default/small. Taken in file
    order (big first) the victim would be team-a/big.
    """
    node = make_node("n").capacity(cpu="4", memory="4Gi", pods="110").dict()
    big = make_pod("big", "team-a").node("n").requests(cpu="2").phase("Running").dict()
    small = make_pod("small").node("n").requests(cpu="1500m").phase("Running").dict()
    preemptor = make_pod("p").requests(cpu="1").priority(100).dict()
    config = upstream_default_profile(upstream_config())
    (result,) = python_side([node, big, small, preemptor], config, seed=0)
    assert (result["nominatedNode"], result["victims"]) == ("n", ["default/small"])
    assert informer_order([node, big, small, preemptor]) == [node, preemptor, small, big]
    nodes = [make_node(name).dict() for name in ("node-2", "node-10", "node-1")]
    assert [o["metadata"]["name"] for o in informer_order([preemptor, *nodes])] == ["node-1", "node-10", "node-2", "p"]


def fit_score(pending: dict[str, Any]) -> int:
    # Two nodes: with one feasible node nothing is scored.
    objects = [make_node(name).capacity(cpu="4", memory="4Gi", pods="110").dict() for name in ("n", "m")]
    objects.append(pending)
    (result,) = python_side(objects, {}, seed=0)
    score: int = result["nodes"]["n"]["scores"]["NodeResourcesFit"]["raw"]
    return score


def test_fit_scores_container_requests_not_pod_level_requests() -> None:
    """Seed 1000000: pod-level requests filter (3Gi would not fit 2Gi) but do not score.

    Container requests cpu 1, memory 0 (set, so no 200Mi default): cpu (4000-1000)*100//4000 = 75,
    memory (4Gi-0)*100//4Gi = 100, LeastAllocated (75+100)//2 = 87. Counting the pod-level 3Gi would
    give memory 25 and 50.
    """
    pod = make_pod("p").requests(cpu="1", memory="0").set("spec.resources", {"requests": {"cpu": "1", "memory": "3Gi"}})
    assert fit_score(pod.dict()) == 87


def node_affinity_scores(pending: dict[str, Any], config: dict[str, Any] | None = None) -> dict[str, Any]:
    objects = [make_node(name).capacity(cpu="4", memory="4Gi", pods="110").dict() for name in ("n", "m")]
    objects.append(pending)
    (result,) = python_side(objects, config or {}, seed=0)
    return {name: node["scores"].get("NodeAffinity") for name, node in result["nodes"].items()}


def test_node_affinity_scores_a_pod_whose_preferred_terms_are_all_empty() -> None:
    """Seed 9000009: a preferred list whose only term is empty (``preference: {}``) matches no node,
    but the list is there, so upstream's PreScore does not skip (getPodPreferredNodeAffinity is
    non-nil): NodeAffinity shows raw 0, normalized 0 on every node."""
    pod = make_pod("p").preferred_term(24, {})
    assert node_affinity_scores(pod.dict()) == {"n": {"raw": 0, "normalized": 0}, "m": {"raw": 0, "normalized": 0}}


def test_node_affinity_scores_every_pod_when_args_add_preferred_terms() -> None:
    """addedAffinity with a preferred term that is empty: the list is not empty, so upstream keeps
    addedPrefSchedTerms (non-nil) and scores every pod, 0 on every node here."""
    args = {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": {}}]}}
    config = upstream_config([{"name": "NodeAffinity", "args": args}])
    assert node_affinity_scores(make_pod("p").dict(), config) == {
        "n": {"raw": 0, "normalized": 0},
        "m": {"raw": 0, "normalized": 0},
    }


def test_node_affinity_skips_a_pod_without_preferred_terms() -> None:
    """Neither the pod nor the args list preferred terms: PreScore skips, no NodeAffinity score."""
    assert node_affinity_scores(make_pod("p").dict()) == {"n": None, "m": None}


def test_a_batched_replica_keeps_upstreams_hint() -> None:
    """Seed 11000298: replicas batch-0..3 with a hostPort under List defaulting without default
    constraints, so they sign alike and go one per node. batch-2's hint is node-22, the runner-up
    batch-0 stored; a fresh scoring would pick node-21, whose NodeAffinity normalized score rose
    once the higher nodes became infeasible (normalization divides by the best feasible node).
    Upstream takes the hint, so do we (``scheduler.framework.batch``)."""
    objects, config = _as_found(11000298)
    results = {r["pod"]: r for r in python_side(objects, upstream_default_profile(config), 11000298)}
    batch_2 = results["team-a/batch-2"]
    assert (batch_2["node"], batch_2["batched"]) == ("node-22", True)
    assert [results[f"team-a/batch-{i}"]["batched"] for i in range(4)] == [False, True, True, True]


def test_a_failed_nominated_nodes_rejector_is_listed_for_the_absent_nodes() -> None:
    """Seed 15000532: evaluateNominatedNode filters status.nominatedNodeName before the search and adds
    its rejector to the very set PreFilter returned, which then names the absent nodes' plugins.
    n1 (tainted, nominated) fails TaintToleration, n2 (the only node NodeAffinity allows) is
    cordoned, n3 is absent: [NodeAffinity TaintToleration], not PreFilter's [NodeAffinity]."""
    objects = [
        make_node("n1").taint("k", "v").dict(),
        make_node("n2").unschedulable().dict(),
        make_node("n3").dict(),
    ]
    only_n2 = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
    objects.append(make_pod("p").required_terms(only_n2).set("status.nominatedNodeName", "n1").dict())
    (result,) = python_side(objects, {}, seed=0)
    assert (
        result["nodes"]["n3"]["filter"]["reason"] == "node(s) didn't satisfy plugin(s) [NodeAffinity TaintToleration]"
    )
    assert result["nodes"]["n1"]["filter"]["plugin"] == "TaintToleration"
