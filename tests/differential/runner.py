"""Run one batch of generated scenarios through spread-scheduler and through kube-scheduler itself
(the oracle: upstream's scheduler.New and ScheduleOne, e2e/controlplane/cmd/oracle), and list every
difference.

    .venv/bin/python -m tests.differential.runner --count 100000 --start 0   # a long campaign
    .venv/bin/python -m tests.differential.runner --kube-version 1.37 ...     # as kube-scheduler v1.37.2
    SPREAD_ORACLE=/path/to/oracle ...                                          # a locally built oracle

``--kube-version`` (default 1.35, ``SPREAD_DIFF_KUBE_VERSION``) and ``--feature-gates`` reach both
sides: ours decides with ``scheduler.features.features_at`` of them (that minor's default profile
too), and the oracle is the one built against that release's own go.mod (e2e/build.py's
``RELEASES``), given the same ``-feature-gates``.

The profile sent to both sides is upstream's default profile minus ``UPSTREAM_ONLY_PLUGINS`` (the one
list to shrink as our plugins land; empty now), DefaultPreemption included, spelled out for both.

Preemption (DefaultPreemption's PostFilter, issue #19): upstream draws a random offset into the
potential nodes, dry-runs them in parallel and breaks ties between equal candidates in map order.
Our side records the offset its seeded DefaultPreemption drew for each pod ("offsets" in the oracle's
input); the oracle hands the same offset to upstream's real PostFilter (its getOffsetRand replaced)
and to a second, sequential DryRunPreemption from that offset, which lists every candidate with its
victims and pickOneNodeForPreemption's criteria ("preemption" in its result, described in
e2e/controlplane/cmd/oracle/preemption.go). Compared: no nomination where upstream's view has no
candidate; else our node among its best-ranked candidates (a tie is upstream's randomness), with the
same victims in the same order; and the full message, ``preemption: ...`` part included. Our
nomination is then the one upstream's nominator gets ("nominations"), so later pods see the same
nominated pods; the victims stay on both sides (the runner does not apply preemption, the oracle
does not evict). Nodes (by name) and bound pods (by namespace and name) reach our side in the order
the oracle's fake API lists them (``informer_order``). Before each cycle the oracle waits until
upstream's claim assume cache holds every claim at the version its fake API stores (``settleClaims``
in claims.go), as simulate's world is settled between pods: a claim informer that lags behind the
previous binding cycle's writes is the machine's load, not a decision (seed 635789 at 1.37).

What is compared, pod by pod (the oracle's output is described at the top of its main.go):
- the order pods were popped (pods a PreEnqueue plugin held back are compared apart, by name);
- the status code, the full message, and on a FitError the unschedulable and pending plugin sets;
- per node: the filter verdict (plugin, reason, code), raw and normalized scores and the total, and
  that our node is in upstream's best set (the top total). Which view of upstream's is used:
  - a full search (the real cycle filtered every node PreFilter allowed): the real cycle's;
  - a batched decision (opportunistic batching reused the previous pod's scores and filtered only
    the hint): both sides batched, onto the same node, with the same real-cycle view (the hint's
    verdict, every other node unevaluated); a fresh scoring may well prefer another node, and that
    is upstream's decision all the same. Our ranking of each scored pod's other nodes is sent with
    the placements ("rankings"), so upstream's heap breaks ties among them as we do and is laid out
    as ours (``scheduler.framework.sorted_nodes``; 1.37's rescored nodes tie at Randomizer 0);
  - the hint batching offered (used or not: it also fails Filter, or loses to a nominated node) is
    compared for every pod, so each engagement condition is checked, not only the ones that place;
  - a partial search (more than 100 nodes and percentageOfNodesToScore: upstream stops after
    numFeasibleNodesToFind feasible nodes, and which ones its parallel search finds varies): both
    sides found as many feasible nodes; every node we call feasible is feasible in upstream's full
    view; every node we rejected has the full view's verdict; and when both found the same nodes,
    scores and best set are the real cycle's;
  - batching after a partial search (the ranking batching reuses was stored by a partial search on
    either side, until both sides score one pod again): each side ranked different nodes, so hints
    and batched decisions may differ; whatever either side did, only the verdicts compare, as in a
    partial search (seed 12003340).
  - upstream's batch expired (batch.go's maxBatchAge: 500 ms of wall clock; the oracle reports when
    that much may have passed since the batch was stored, as on a loaded machine) where ours, on
    simulate's still clock, offered a hint: our hint's verdicts only, and the states compare as after
    a partial search until both sides score a pod again (seed 10001607 at 1.37 under load).
  - VolumeBinding's PreBind writes of a pod placed on the same node, in order: each PV bound to a
    claim and each claim given the selected node (the oracle's stand-in PV controller and
    provisioner complete them, as simulate does, so later pods meet the claims bound). The
    generator makes no two static PVs the same size: of equal ones upstream takes whichever its PV
    cache lists first, in map order, which can even decide whether a pod with two claims fits.
  - DynamicResources' allocation of a pod placed on the same node: per device, the claim, the request
    (``<request>/<subrequest>`` for a ``firstAvailable`` alternative), driver, pool and device, in the
    pod's claim order, as upstream's PreBind wrote the claims into the oracle's fake API ("claims"),
    then the claim PreBind created for the pod's DeviceClass-backed extended resources (named as
    simulate's writer names it: the ``generateName`` and a five-digit count of such creates).
  - a binding cycle that failed after the scheduling cycle chose the node (PreBind, Bind): its
    status message ("bindingError"), the pod then left unbound on both sides.
Documented exceptions (docs/differences.md), each accepted exactly and nowhere else:
  - a cycle that ended at a Filter error on several nodes (a selector's runtime error on some
    device): upstream's parallel Filter reports whichever node failed first; ours must be the error
    of some node in the oracle's every-node view (which keeps each node's error);
  - DynamicResources' internal " not found" ending the message after a PreFilter ended the cycle;
  - 1.37's preemption placement tail when only the node differs (judged by the deterministic view);
  - a DeviceClass-backed extended resource on a node that does not offer it (1.36+): where upstream's
    allocator fails with "cannot allocate all claims" (these clusters have no ResourceSlices), our
    stand-in refuses the same node with the same plugin and code in its own words, naming the
    resource and the class; node verdicts compare with that reason in upstream's words, and the
    message's histograms with ours counted as upstream's one reason;
  - several "Insufficient <extended resource>" reasons on one node: upstream's order is Go map order.
After a pod whose placement differed (the oracle then moves it to ours: "worldFixed"), later
mismatches of the scenario are marked as such: they may follow from the first.

``--only-with FEATURE`` compares only the seeds that draw it; ``--all-with dra`` gives every seed's
cluster feature "dra" (``scenario``'s ``always``), so a DRA campaign of N clusters takes N seeds
(reproduce a seed with the same flag). The summary's "dra part: ..." lines count, per part of the
allocator (admin access, tolerations, tainted devices, capacity requests, shared devices, binding
conditions, counters, firstAvailable, matchAttribute, All, claims with a DRA-backed extended
resource), the clusters and evaluated pending pods that exercised it and the devices of the part
upstream allocated.

The generator builds each cluster at the campaign's minor (``scenario(seed, kube_version=...)``: node
``declaredFeatures`` from 1.36). The summary counts what upstream did, and whether issue #47's node
and pod changes decided something (``tally_node_pod_changes``): NodeDeclaredFeatures' rejections,
ImageLocality scores from an image volume's image alone, assigned pods counted otherwise than their
spec under the minor's resize rule.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scheduler.api.objects import Pod
from scheduler.config import parse_config, upstream_config
from scheduler.config.default_plugins import default_multi_point
from scheduler.features import DEFAULT_FEATURES, Features, features_at, parse_feature_gates, supported_minor
from scheduler.plugins.defaultpreemption.default_preemption import DefaultPreemption
from scheduler.plugins.names import DEFAULT_PREEMPTION
from scheduler.schedule_one import Attempt
from scheduler.simulate import Simulation, attempt_to_json
from tests.differential import apiserver
from tests.differential.generator import (
    ALWAYS_FEATURES,
    DEVICE_CLASS_PREFIX,
    DRAWN_FEATURES,
    crowded,
    drawn,
    scenario,
)

# Upstream's default multiPoint plugins (default_plugins.go, DynamicResources by its GA gate) that
# spread-scheduler does not run yet: remove a name when its plugin lands on our side.
UPSTREAM_ONLY_PLUGINS: tuple[str, ...] = ()  # every one runs here now (volumes and claims as refusing stand-ins)


# Scenarios the oracle decides at once: more than its default (2 per CPU), because a pod whose claims
# upstream's VolumeBinding binds waits in PreBind's one-second poll, not on a CPU.
ORACLE_WORKERS = 8 * (os.cpu_count() or 1)


def kube_features() -> Features:
    """The features the differential tests decide with: ``$SPREAD_DIFF_KUBE_VERSION`` (default 1.35)
    and ``$SPREAD_DIFF_FEATURE_GATES``."""
    minor = supported_minor(os.environ.get("SPREAD_DIFF_KUBE_VERSION") or DEFAULT_FEATURES.minor)
    return features_at(minor, parse_feature_gates(os.environ.get("SPREAD_DIFF_FEATURE_GATES", "")))


def oracle_binary(features: Features = DEFAULT_FEATURES) -> Path:
    """``$SPREAD_ORACLE`` if set, else the cached build of e2e/controlplane/cmd/oracle at ``features``'s release."""
    if path := os.environ.get("SPREAD_ORACLE"):
        return Path(path)
    from e2e.build import ensure_oracle  # noqa: PLC0415 - the build helper lives with the control plane

    return ensure_oracle(features.release)


def oracle_gates(features: Features) -> str:
    """``-feature-gates`` for the oracle: the gates set away from the minor's defaults."""
    defaults = features_at(features.minor).gates
    return ",".join(f"{name}={str(on).lower()}" for name, on in sorted(features.gates.items()) if defaults[name] != on)


def upstream_default_profile(config: dict[str, Any], features: Features = DEFAULT_FEATURES) -> dict[str, Any]:
    """``config`` with each profile that spells out our plugins (``upstream_config``'s form, as the
    generator writes it) turned into upstream's default profile at ``features``'s minor minus
    ``UPSTREAM_ONLY_PLUGINS``, spelled out for both sides: our default multiPoint, DefaultPreemption
    included. Other plugin sets are left as written."""
    ours = upstream_config()["profiles"][0]["plugins"]
    enabled = []
    for name, weight in default_multi_point(features):
        if name not in UPSTREAM_ONLY_PLUGINS:
            enabled.append({"name": name, "weight": weight} if weight else {"name": name})
    default = {"multiPoint": {"disabled": [{"name": "*"}], "enabled": enabled}}
    profiles = [
        {**profile, "plugins": default} if profile.get("plugins") == ours else profile
        for profile in config.get("profiles", [])
    ]
    return {**config, "profiles": profiles}


def informer_order(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objects`` with the Nodes first, by name, then the rest as they are, the DeviceClasses by
    name, and the bound pods last, by (namespace, name).

    The oracle's fake API lists objects sorted by namespace and name, as a real informer's initial
    list from etcd does, so that is the order upstream's cache meets nodes, bound pods and
    DeviceClasses in (of two classes backing one name, the order decides whether the older one's
    implicit name is known: ``scheduler.backend.cache.storage_objects.ExtendedResourceNames``). Our
    side gets them in the same order: the node order is the snapshot's (preemption's random offset
    indexes into it), and the order pods join a node decides which of two victims of equal priority
    without ``status.startTime`` goes first (upstream's sort reads the clock for each, so its result
    follows the node's pod order).
    """

    def bound(o: dict[str, Any]) -> bool:
        return o.get("kind") == "Pod" and bool((o.get("spec") or {}).get("nodeName"))

    def by_name(kind: str) -> list[dict[str, Any]]:
        return sorted((o for o in objects if o.get("kind") == kind), key=lambda o: str(o["metadata"]["name"]))

    pods = sorted(
        (o for o in objects if bound(o)),
        key=lambda o: (o["metadata"].get("namespace", "default"), o["metadata"]["name"]),
    )
    rest = [o for o in objects if o.get("kind") not in ("Node", "DeviceClass") and not bound(o)]
    return [*by_name("Node"), *rest, *by_name("DeviceClass"), *pods]


def python_side(
    objects: list[dict[str, Any]],
    config: dict[str, Any],
    seed: int,
    *,
    reuse: bool = True,
    features: Features = DEFAULT_FEATURES,
) -> list[dict[str, Any]]:
    """Every attempt as JSON; ``reuse=False`` turns off results reused across pods of one signature."""
    sim = Simulation(parse_config(config, features=features), seed=seed)
    for fwk in sim.frameworks.values():
        fwk.reuse_node_results = reuse
    sim.add_objects(informer_order(objects))
    # DefaultPreemption's random offsets, as drawn (the oracle gives each pod's to upstream's PostFilter).
    drawn: list[int] = []
    for fwk in sim.frameworks.values():
        plugin = fwk.plugins.get(DEFAULT_PREEMPTION)
        if isinstance(plugin, DefaultPreemption):
            plugin.offset_rand = _recording(plugin.offset_rand, drawn)
    offsets: dict[str, int] = {}
    # Pods whose Filter counted a nominated pod on some node (the campaign's summary says how many).
    counted: set[str] = set()
    passes = [0]

    def count_nominated(attempt: Attempt, _seconds: float) -> None:
        if drawn:
            offsets[attempt.pod.key] = drawn.pop()
        now = sum(fwk.nominated_pod_passes for fwk in sim.frameworks.values())
        if now != passes[0]:
            counted.add(attempt.pod.key)
        passes[0] = now

    sim.scheduler.attempt_observers.append(count_nominated)
    # Binding cycles that failed after their scheduling cycle chose a node (PreBind, Bind).
    binding_errors: dict[str, str] = {}
    sim.scheduler.binding_failure_observers.append(
        lambda pod, _node, message: binding_errors.setdefault(pod.key, message)
    )
    results = []
    for attempt in sim.run():
        result = attempt_to_json(attempt, sim.cache)
        if attempt.pod.key in binding_errors:
            result["bindingError"] = binding_errors[attempt.pod.key]  # not part of simulate's JSON
            # Unreserve took the allocation back, as upstream's did (the oracle reports no claims
            # then); later pods' decisions show whether both sides freed the same devices.
            result.pop("claims", None)
        if attempt.pod.key in counted:
            result["nominatedCounted"] = True  # not part of simulate's JSON
        if attempt.hint is not None:
            result["hint"] = attempt.hint  # offered, used or not (not part of simulate's JSON)
        if attempt.pod.key in offsets:
            result["offset"] = offsets[attempt.pod.key]  # not part of simulate's JSON
        if attempt.host is not None:
            # VolumeBinding's PreBind writes, in order (not part of simulate's JSON).
            result["volumeWrites"] = sim.volume_binder.by_pod.get(attempt.pod.key, [])
        if attempt.host is not None and attempt.other_nodes:
            # The order batching would offer the rest in; the oracle breaks upstream's ties by it.
            result["ranking"] = [attempt.host, *attempt.other_nodes]
        results.append(result)
    return results


def _recording(draw: Callable[[int], int], drawn: list[int]) -> Callable[[int], int]:
    def record(n: int) -> int:
        drawn.append(draw(n))
        return drawn[-1]

    return record


def _feasible(result: dict[str, Any]) -> list[str]:
    """Our feasible nodes: the scored ones, or the one chosen without scoring."""
    scored = sorted(name for name, entry in result["nodes"].items() if entry["total"] is not None)
    return scored or ([result["node"]] if result["node"] else [])


UPSTREAM_ALLOCATION_FAILED = "cannot allocate all claims"


def _extended_reasons_in_any_order(ours: dict[str, Any], upstream: dict[str, Any]) -> bool:
    """docs/differences.md, "order of several Insufficient <extended resource> reasons on one node":
    upstream walks a Go map (its order varies run to run), we sort by name."""
    mine, theirs = (str(f.get("reason")).split(", ") for f in (ours, upstream))
    same_rest = {**ours, "reason": ""} == {**upstream, "reason": ""}
    return same_rest and sorted(mine) == sorted(theirs) and _only_extended_moved(mine, theirs)


def _only_extended_moved(mine: list[str], theirs: list[str]) -> bool:
    """The same reason at each place that is not an extended resource's ``Insufficient``."""

    def fixed(reasons: list[str]) -> list[str]:
        return ["" if r.startswith("Insufficient ") and "/" in r else r for r in reasons]

    return fixed(mine) == fixed(theirs)


def _same_view(real: dict[str, Any], second: dict[str, Any]) -> bool:
    """The oracle's self-check: its real cycle and its second view agree, but for the order of
    several extended resources' reasons on one node, which is Go map order within upstream too."""
    if real["best"] != second["best"] or real["nodes"].keys() != second["nodes"].keys():
        return False
    for node, entry in real["nodes"].items():
        other = second["nodes"][node]
        if {**entry, "filter": None} != {**other, "filter": None}:
            return False
        a, b = entry["filter"], other["filter"]
        if a != b and not (a is not None and b is not None and _extended_reasons_in_any_order(a, b)):
            return False
    return True


def _same_verdict(ours: dict[str, Any] | None, upstream: dict[str, Any] | None) -> bool:
    if ours == upstream:
        return True
    if ours is None or upstream is None:
        return False
    return ours.get("plugin") == upstream.get("plugin") == "NodeResourcesFit" and _extended_reasons_in_any_order(
        ours, upstream
    )


def claim_devices(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Our placed pod's allocation, device per request, in the oracle's form (simulate's "claims"
    entries without the slice)."""
    return [{k: v for k, v in entry.items() if k != "slice"} for entry in result.get("claims") or ()]


def _compare_nodes(pod: str, ours: dict[str, Any], theirs: dict[str, Any], *, scores: bool = True) -> list[str]:
    problems = []
    for node, gn in theirs.items():
        pn = ours.get(node)
        if pn is None:
            problems.append(f"{pod}/{node}: missing on our side")
            continue
        if not _same_verdict(pn["filter"], gn["filter"]) or pn.get("evaluated", True) != gn.get("evaluated", True):
            problems.append(f"{pod}/{node}: filter {pn['filter']} vs {gn['filter']}")
        if scores and (pn["scores"] != gn["scores"] or pn["total"] != gn["total"]):
            problems.append(
                f"{pod}/{node}: scores {pn['scores']} total {pn['total']} vs {gn['scores']} total {gn['total']}"
            )
    return problems


def _partial(result: dict[str, Any]) -> bool:
    return any(entry.get("evaluated") is False for entry in result["nodes"].values())


def compare_preemption(pod: str, p: dict[str, Any], g: dict[str, Any]) -> list[str]:
    """Our DefaultPreemption's decision against upstream's deterministic view (the oracle's
    "preemption": every candidate from our offset, dry-run in order, and the best-ranked ones): no
    nomination where upstream finds no candidate; else our node among upstream's best, with the same
    victims in the same order."""
    view = g.get("preemption")
    ours = p.get("nominatedNode")
    if view is None:
        return [f"{pod}: we nominated {ours}, upstream ran no DefaultPreemption"] if ours else []
    if "nominatedNode" not in p:
        if g["message"].endswith(" not found") and _prefilter_ended_cycle(p["message"], g["message"]):
            return []  # DynamicResources' PostFilter stopped both before DefaultPreemption (the view is the oracle's)
        if (
            not view["candidates"]
            and _PREEMPTION_ERROR.search(g["message"])
            and _dry_run_errors_in_any_order(p["message"], g["message"])
        ):
            return []  # the dry run failed alike on both sides (a Filter error on some node): nothing nominated
        return [f"{pod}: our DefaultPreemption decided nothing, upstream's view: {view['best']}"]
    if not view["candidates"]:
        return [f"{pod}: nominated to {ours}, upstream found no candidate"] if ours else []
    if ours is None:
        return [f"{pod}: no nomination, upstream's best: {view['best']}"]
    problems = []
    if ours not in view["best"]:
        ranks = {c["node"]: c["criteria"] for c in view["candidates"]}
        problems.append(f"{pod}: nominated to {ours} {ranks.get(ours)}, upstream's best: {view['best']} {ranks}")
    victims = {c["node"]: c["victims"] for c in view["candidates"]}.get(ours)
    if victims is not None and p["victims"] != victims:
        problems.append(f"{pod}: victims on {ours} {p['victims']}, upstream's {victims}")
    return problems


def _verdicts(pod: str, p: dict[str, Any], full: dict[str, Any]) -> list[str]:
    """A partial search's nodes against upstream's every-node view: what we found feasible passes
    upstream's filters, and every node we rejected has upstream's verdict. An every-node view that
    ended at a Filter error (DynamicResources' on a node the partial search never reached) has no
    verdict past it: our nodes are then held to the verdicts the view has."""
    problems = []
    if full["code"] == "Error":
        for node, entry in p["nodes"].items():
            theirs = full["nodes"].get(node)
            if (
                entry.get("evaluated") is not False
                and theirs is not None
                and not _same_verdict(entry["filter"], theirs["filter"])
            ):
                problems.append(f"{pod}/{node}: filter {entry['filter']} vs {theirs['filter']}")
        return problems
    if wrong := sorted(set(_feasible(p)) - set(full["feasible"])):
        problems.append(f"{pod}: {wrong} feasible for us, not for upstream's filters")
    for node, entry in p["nodes"].items():
        if entry["filter"] is not None and not _same_verdict(entry["filter"], full["nodes"][node]["filter"]):
            problems.append(f"{pod}/{node}: filter {entry['filter']} vs {full['nodes'][node]['filter']}")
    return problems


def _first_error_of_parallel_filter(p: dict[str, Any], g: dict[str, Any]) -> bool:
    """Several nodes' Filter failed with an error (DynamicResources: a selector's runtime error on a
    device, a constraint an "All" request cannot keep): upstream's parallel Filter reports the one
    that finished first, ours the first in its walk from the rotating start node. The oracle's
    every-node view keeps each node's error: ours must be one of them (from 1.36 the text names the
    device, so its pool: the node)."""
    full = g.get("full") or {}
    if not p["code"] == g["code"] == full.get("code") == "Error":
        return False
    filters = [entry.get("filter") or {} for entry in (full.get("nodes") or {}).values()]
    return any(f.get("code") == "Error" and f.get("reason") == p["message"] for f in filters)


def _dry_run_errors_in_any_order(ours: str, upstream: str) -> bool:
    """DefaultPreemption's dry run failed with Filter errors on several nodes (from 1.37
    DynamicResources names the device, so each node's text differs): upstream's parallel dry run
    aggregates them in the order they finished, ours in node order. The same texts, in any order."""
    if ours == upstream:
        return True
    head, sep, mine = ours.partition("preemption: [")
    head2, sep2, theirs = upstream.partition("preemption: [")
    if not (sep and sep2 and head == head2 and mine.endswith("]") and theirs.endswith("]")):
        return False
    split = re.compile(r', (?=running ")')
    return sorted(split.split(mine[:-1])) == sorted(split.split(theirs[:-1]))


def _prefilter_ended_cycle(ours: str, upstream: str) -> bool:
    """docs/differences.md, "a PreFilter before DynamicResources' ends the cycle": upstream's
    DynamicResources PostFilter fails on the state its PreFilter never wrote, so the message ends with
    its internal " not found"; ours fails the same way (DefaultPreemption does not run, the
    nomination stays) without that text. Only the tail differs."""
    return upstream == ours + " not found"


_PREEMPTION_ERROR = re.compile(r'preemption: \[?running "[^"]+" filter plugin: ')
_PLACEMENT = re.compile(r"preemption: found a potential placement for pod on node \S+, preempting \d+ victims$")


def _placement_differs_only(ours: str, upstream: str, g: dict[str, Any]) -> bool:
    """1.37's message names the node preemption chose and how many victims ("found a potential
    placement for pod on node N, preempting K victims"). Upstream's real PostFilter dry-runs the
    candidates in parallel and, when it wants fewer candidates than there are nodes, which ones it
    finds first varies: its node is its randomness, as the nomination's is. When only that tail
    differs, ``compare_preemption`` judges our node and victims against the deterministic view."""
    a, b = _PLACEMENT.search(ours), _PLACEMENT.search(upstream)
    return a is not None and b is not None and ours[: a.start()] == upstream[: b.start()] and bool(g.get("preemption"))


def compare_pod(p: dict[str, Any], g: dict[str, Any], *, partial_batch: bool = False) -> list[str]:
    """Differences between our result and upstream's for one pod (the rules in the module docstring).

    ``partial_batch``: the batching states of the two sides may differ (stored after a partial
    search, or upstream's expired on the oracle's wall clock).
    """
    pod = p["pod"]
    problems = [f"{pod}: oracle self-check: {x}" for x in g.get("problems") or []]
    batching = p.get("batched") or g["batched"] or (p.get("hint") or "") != (g.get("hint") or "")
    if partial_batch and batching and p["code"] == g["code"] == "Success":
        # Each side ranks the nodes its own partial search found: hints may differ, and whichever
        # node is taken must pass upstream's filters.
        return problems + _verdicts(pod, p, full=g["full"])
    if _expired_upstream(p, g):
        # Our hint must pass upstream's filters (its every-node view); the placement is ours.
        return problems + _verdicts(pod, p, full=g["full"])
    if (p.get("hint") or "") != (g.get("hint") or ""):
        problems.append(f"{pod}: batching hint {p.get('hint')} vs upstream's {g.get('hint')}")
    if p["code"] != g["code"]:
        return [*problems, f"{pod}: outcome {p['code']} ({p['message']}) vs upstream {g['code']} ({g['message']})"]
    if p["code"] != "Success":
        ours_message = p["message"]
        if (
            ours_message != g["message"]
            and not _first_error_of_parallel_filter(p, g)
            and not _dry_run_errors_in_any_order(ours_message, g["message"])
            and not _prefilter_ended_cycle(ours_message, g["message"])
            and not _placement_differs_only(ours_message, g["message"], g)
        ):
            problems.append(f"{pod}: message\n  ours:     {p['message']}\n  upstream: {g['message']}")
        problems += compare_preemption(pod, p, g)
        for key in ("unschedulablePlugins", "pendingPlugins"):
            if p[key] != g[key]:
                problems.append(f"{pod}: {key} {p[key]} vs {g[key]}")
        if p["code"] == "Unschedulable":
            problems += _compare_nodes(pod, p["nodes"], g["nodes"])
        return problems
    if p["node"] == g["node"] and p.get("bindingError") != g.get("bindingError"):
        problems.append(f"{pod}: binding failed with {p.get('bindingError')!r} vs upstream's {g.get('bindingError')!r}")
    if p["node"] == g["node"] and p.get("volumeWrites", []) != g.get("volumeWrites", []):
        problems.append(f"{pod}: volume writes {p.get('volumeWrites')} vs upstream's {g.get('volumeWrites')}")
    if p["node"] == g["node"] and claim_devices(p) != (g.get("claims") or []):
        problems.append(f"{pod}: allocated {claim_devices(p)} vs upstream's {g.get('claims')}")
    full = g["full"]
    if p.get("batched", False) != g["batched"]:
        side = "we" if p.get("batched") else "upstream"
        return [*problems, f"{pod}: only {side} batched: ours {p['node']}, upstream's {g['node']}"]
    if g["batched"]:
        if p["node"] != g["node"]:
            problems.append(f"{pod}: batched onto {p['node']}, upstream's hint {g['node']}")
        return problems + _compare_nodes(pod, p["nodes"], g["nodes"])
    if _partial(g) or _partial(p):
        ours_feasible = _feasible(p)
        if len(ours_feasible) != len(g["feasible"]):
            problems.append(f"{pod}: found {len(ours_feasible)} feasible nodes, upstream {len(g['feasible'])}")
        problems += _verdicts(pod, p, full)
        if ours_feasible == g["feasible"]:
            if p["node"] not in g["best"]:
                problems.append(f"{pod}: chose {p['node']}, upstream's best: {g['best']}")
            for node in ours_feasible:
                problems += _compare_nodes(pod, {node: p["nodes"][node]}, {node: g["nodes"][node]})
        return problems
    if p["node"] not in g["best"]:
        problems.append(f"{pod}: chose {p['node']}, upstream's best: {g['best']}")
    problems += _compare_nodes(pod, p["nodes"], g["nodes"])
    if not _same_view(g, full):
        problems.append(f"{pod}: oracle self-check: the real cycle and the second view differ")
    return problems


def compare(py: list[dict[str, Any]], go: list[dict[str, Any]]) -> list[str]:
    """Differences that matter, pod by pod, in the order upstream's queue popped them."""
    gated = {g["pod"]: g for g in go if g.get("gated")}
    popped = [g for g in go if not g.get("gated")]
    ours = [p for p in py if p["pod"] not in gated]
    if [r["pod"] for r in ours] != [r["pod"] for r in popped]:
        return [f"pod order differs: {[r['pod'] for r in ours]} vs {[r['pod'] for r in popped]}"]
    problems: list[str] = []
    by_pod = {p["pod"]: p for p in py}
    for name, g in gated.items():
        p = by_pod.get(name)
        if p is None or (p["code"], p["message"]) != (g["code"], g["message"]):
            problems.append(f"{name}: held back by PreEnqueue upstream ({g['code']}: {g['message']}), ours: {p}")
    fixed = partial_batch = False
    for p, g in zip(ours, popped, strict=True):
        found = compare_pod(p, g, partial_batch=partial_batch)
        problems += [f"{x} (after a world fix)" for x in found] if fixed else found
        fixed = fixed or bool(g.get("worldFixed"))
        partial_batch = _partial_batch_after(partial_batch, p, g)
    return problems


def _expired_upstream(p: dict[str, Any], g: dict[str, Any]) -> bool:
    """Upstream offered no hint where we did, and its stored batch may have outlived maxBatchAge
    (500 ms) on the oracle's wall clock (a loaded machine runs a scenario's cycles that far apart;
    simulate's clock stands still, as a live scheduler's 500 ms would not pass between two pods of a
    burst either)."""
    return bool(g.get("batchMayHaveExpired") and p.get("hint") and not g.get("hint") and p["code"] == "Success")


def _partial_batch_after(before: bool, p: dict[str, Any], g: dict[str, Any]) -> bool:
    """Whether the two sides' batching states may differ after this pod: a pod both sides scored
    stores (or clears) a ranking on both, from a partial search or not; a batched pod on either side
    keeps what was stored; a pod neither batched nor scored clears it on both; a pod we batched where
    upstream's batch had expired leaves each side with another state."""
    if _expired_upstream(p, g):
        return True
    if p.get("batched") or g["batched"]:
        return before
    if p.get("ranking"):
        return _partial(p) or _partial(g)
    return False


VOLUME_PLUGINS = frozenset({"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"})


def tally(results: list[dict[str, Any]], stats: Counter[str]) -> None:
    """What the oracle saw upstream do (for the campaign summary)."""
    for g in results:
        stats["pods"] += 1
        stats["batched"] += bool(g.get("batched"))
        stats["hint offered, not used"] += bool(g.get("hint")) and not g.get("batched")
        stats["partial search"] += not g.get("gated") and _partial(g) and not g.get("batched")
        stats["nominated by PostFilter"] += bool(g.get("nominatedNode"))
        view = g.get("preemption") or {}
        stats["preemption: candidates"] += len(view.get("candidates") or ())
        stats["preemption: ties at the top"] += len(view.get("best") or ()) > 1
        stats["preemption: fewer candidates wanted than nodes"] += view.get("numCandidates", 0) < view.get(
            "potentialNodes", 0
        )
        stats["gated"] += bool(g.get("gated"))
        stats["no hint upstream, 500 ms after its batch (wall clock)"] += bool(
            g.get("batchMayHaveExpired")
        ) and not g.get("hint")
        stats["world fixed"] += bool(g.get("worldFixed"))
        for write in g.get("volumeWrites") or ():
            stats["claims bound to a static PV" if write.startswith("bind PV") else "claims provisioned"] += 1
        for plugin in sorted(set(g.get("unschedulablePlugins") or ()) & VOLUME_PLUGINS):
            stats[f"rejected by {plugin}"] += 1
        filters = [entry.get("filter") or {} for entry in (g.get("nodes") or {}).values()]
        stats["DRA-backed: pods DynamicResources failed on some node"] += any(
            f.get("reason") == UPSTREAM_ALLOCATION_FAILED for f in filters
        )
        stats["DRA-backed: pods 'cannot fit resource' on some node"] += any(
            f.get("reason") == "cannot fit resource" for f in filters
        )


def _dra_backed_requests(objects: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Per pod (namespace/name), the extended resources it asks for that a DeviceClass of ``objects`` backs."""
    classes = [o for o in objects if o.get("kind") == "DeviceClass"]
    backed = {DEVICE_CLASS_PREFIX + c["metadata"]["name"] for c in classes}
    backed |= {str(c["spec"]["extendedResourceName"]) for c in classes if c["spec"].get("extendedResourceName")}
    out: dict[str, set[str]] = {}
    for pod in (o for o in objects if o.get("kind") == "Pod"):
        asked = {
            name
            for container in pod["spec"].get("containers", []) + pod["spec"].get("initContainers", [])
            for part in ("requests", "limits")
            for name in (container.get("resources") or {}).get(part, {})
        }
        if asked & backed:
            out[f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"] = asked & backed
    return out


def tally_dra_backed(objects: list[dict[str, Any]], results: list[dict[str, Any]], stats: Counter[str]) -> None:
    """Pods asking for a DeviceClass-backed extended resource, and what became of them upstream."""
    backed = _dra_backed_requests(objects)
    for g in results:
        if g["pod"] in backed and not g.get("gated"):
            stats["DRA-backed: pods asking for one"] += 1
            stats["DRA-backed: of those, placed (a device plugin's allocatable)"] += g["code"] == "Success"


def tally_dra(objects: list[dict[str, Any]], results: list[dict[str, Any]], stats: Counter[str]) -> None:
    """Feature "dra" (claims, slices, templates): clusters, pods with claims, and what upstream did with them."""
    kinds = Counter(str(o.get("kind")) for o in objects)
    if not kinds["ResourceSlice"] and not kinds["ResourceClaim"]:
        return
    stats["dra: clusters"] += 1
    with_claims = {
        f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}"
        for o in objects
        if o.get("kind") == "Pod" and not o["spec"].get("nodeName") and o["spec"].get("resourceClaims")
    }
    for g in results:
        if g["pod"] not in with_claims:
            continue
        stats["dra: pending pods with claims"] += 1
        stats["dra: ... held back by PreEnqueue"] += bool(g.get("gated"))
        stats["dra: ... placed"] += g["code"] == "Success"
        stats["dra: ... devices allocated"] += len(g.get("claims") or ())
        stats["dra: ... Error"] += g["code"] == "Error"


def _pod_claim_objects(pod: dict[str, Any], claims: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """The ResourceClaims ``pod`` names (directly or through its template's claim) that exist."""
    ns = pod["metadata"].get("namespace", "default")
    made = {s["name"]: s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses", ())}
    out = []
    for ref in pod["spec"].get("resourceClaims", ()):
        name = ref.get("resourceClaimName") or made.get(ref["name"])
        if name and (ns, name) in claims:
            out.append(claims[ns, name])
    return out


def _claim_features(claim: dict[str, Any]) -> set[str]:
    """Which of the allocator's gated parts a claim asks for (``tally_dra``'s names)."""
    found = set()
    devices = claim["spec"]["devices"]
    found |= {"matchAttribute"} if any("matchAttribute" in c for c in devices.get("constraints", ())) else set()
    for request in devices["requests"]:
        found |= {"firstAvailable"} if "firstAvailable" in request else set()
        for exact in [request.get("exactly") or {}, *request.get("firstAvailable", ())]:
            found |= {"All"} if exact.get("allocationMode") == "All" else set()
            found |= {"admin access"} if exact.get("adminAccess") else set()
            found |= {"tolerations"} if exact.get("tolerations") else set()
            found |= {"capacity requests"} if exact.get("capacity") else set()
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", ())
    found |= {"binding conditions"} if any(r.get("bindingConditions") for r in results) else set()
    return found


def _devices(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], set[str]]:
    """Per device (driver, pool, name), its gated parts: taints (its own or a DeviceTaintRule's),
    shared (allowMultipleAllocations), counters (consumesCounters)."""
    rules = [o["spec"]["deviceSelector"] for o in objects if o.get("kind") == "DeviceTaintRule"]
    out: dict[tuple[str, str, str], set[str]] = {}
    for sl in (o for o in objects if o.get("kind") == "ResourceSlice"):
        driver, pool = sl["spec"]["driver"], sl["spec"]["pool"]["name"]
        for device in sl["spec"].get("devices", ()):
            parts = set()
            where = {"driver": driver, "pool": pool, "device": device["name"]}
            if device.get("taints") or any(all(where[k] == v for k, v in rule.items()) for rule in rules):
                parts.add("tainted devices")
            parts |= {"shared devices"} if device.get("allowMultipleAllocations") else set()
            parts |= {"counters"} if device.get("consumesCounters") else set()
            out[driver, pool, device["name"]] = parts
    return out


# The allocator's parts whose coverage the summary counts, each as clusters and pods exercising it.
DRA_PARTS = (
    "admin access",
    "tolerations",
    "tainted devices",
    "capacity requests",
    "shared devices",
    "binding conditions",
    "counters",
    "firstAvailable",
    "matchAttribute",
    "All",
    "claims + DRA-backed extended resource",
)


def tally_dra_parts(objects: list[dict[str, Any]], results: list[dict[str, Any]], stats: Counter[str]) -> None:
    """Per part of the allocator (``DRA_PARTS``): the pending pods whose claims ask for it and that a
    cycle evaluated ("pods", and of them "pods placed"), the clusters with one such pod; for device
    parts (taints, shared devices, counters) the pods evaluated while such devices were offered, and
    the devices of the part that upstream allocated."""
    claims = {
        (o["metadata"].get("namespace", "default"), o["metadata"]["name"]): o
        for o in objects
        if o.get("kind") == "ResourceClaim"
    }
    pods = {
        f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"
    }
    devices = _devices(objects)
    offered = set().union(*devices.values()) if devices else set()
    backed = _dra_backed_requests(objects)
    seen: set[str] = set()
    for g in results:
        pod = pods.get(g["pod"])
        if pod is None or g.get("gated") or pod["spec"].get("nodeName"):
            continue
        parts: set[str] = set()
        has_claims = bool(pod["spec"].get("resourceClaims"))
        for claim in _pod_claim_objects(pod, claims):
            parts |= _claim_features(claim)
        if has_claims:
            parts |= offered
        if has_claims and g["pod"] in backed:
            parts.add("claims + DRA-backed extended resource")
        placed = g["code"] == "Success" and not g.get("bindingError")
        for part in parts:
            stats[f"dra part: {part}: pods"] += 1
            stats[f"dra part: {part}: pods placed"] += placed
        seen |= parts
        for entry in g.get("claims") or ():
            for part in devices.get((entry["driver"], entry["pool"], entry["device"]), ()):
                stats[f"dra part: {part}: devices allocated"] += 1
    for part in seen:
        stats[f"dra part: {part}: clusters"] += 1


def _image_name(name: str) -> str:
    """ImageLocality's ``normalizedImageName``: ``:latest`` when the name has no tag."""
    return name if name.rfind(":") > name.rfind("/") else name + ":latest"


def _needs_declared_feature(spec: dict[str, Any]) -> bool:
    """A RestartAllContainers restart rule: what the generator gives a pod that needs a node feature."""
    containers = [*spec.get("containers", ()), *spec.get("initContainers", ())]
    return any(r.get("action") == "RestartAllContainers" for c in containers for r in c.get("restartPolicyRules", ()))


def tally_node_pod_changes(
    objects: list[dict[str, Any]], results: list[dict[str, Any]], stats: Counter[str], features: Features
) -> None:
    """Whether issue #47's node and pod changes decided something upstream (the campaign summary):
    NodeDeclaredFeatures' verdicts, ImageLocality scores on nodes holding an image volume's image,
    and assigned pods whose resize status makes this minor count them otherwise than their spec, on
    nodes a pending pod was evaluated on."""
    pods = {
        f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"
    }
    held = {
        o["metadata"]["name"]: {_image_name(n) for image in o["status"].get("images", ()) for n in image["names"]}
        for o in objects
        if o["kind"] == "Node"
    }
    rule = features.pod_requests_rule
    resized_on: Counter[str] = Counter()
    for obj in pods.values():
        node = obj["spec"].get("nodeName")
        if not node or not any(k in obj["status"] for k in ("containerStatuses", "resources", "allocatedResources")):
            continue
        stats["resized: assigned pods with resize status"] += 1
        resources = Pod.from_dict(obj).resources
        if resources.under(rule).usage != resources.requests:
            stats["resized: counted otherwise than their spec at this minor"] += 1
            resized_on[node] += 1
    evaluated: set[str] = set()
    for g in results:
        spec = pods[g["pod"]]["spec"] if g["pod"] in pods else {}
        nodes = g.get("nodes") or {}
        evaluated |= {n for n, e in nodes.items() if e.get("filter") is not None or e.get("total") is not None}
        rejected = sum((e.get("filter") or {}).get("plugin") == "NodeDeclaredFeatures" for e in nodes.values())
        stats["declared features: nodes rejected by NodeDeclaredFeatures"] += rejected
        if _needs_declared_feature(spec):
            stats["declared features: pending pods needing one"] += 1
            stats["declared features: ... placed"] += g["code"] == "Success"
            stats["declared features: ... with a node rejected"] += bool(rejected)
        stats["rejected by NodeDeclaredFeatures"] += "NodeDeclaredFeatures" in (g.get("unschedulablePlugins") or ())
        volume_images = {_image_name(v["image"]["reference"]) for v in spec.get("volumes", ()) if "image" in v}
        if volume_images:
            stats["image volumes: pending pods using them"] += 1
            scored = [n for n, e in nodes.items() if "ImageLocality" in (e.get("scores") or {})]
            on_holders = [n for n in scored if volume_images & held.get(n, set())]
            stats["image volumes: ... scored on a node holding one"] += bool(on_holders)
            stats["image volumes: ImageLocality scores on such nodes"] += len(on_holders)
            containers = [*spec.get("containers", ()), *spec.get("initContainers", ())]
            images = {_image_name(c["image"]) for c in containers}
            stats["image volumes: ... of them > 0 from a volume's image alone"] += sum(
                nodes[n]["scores"]["ImageLocality"]["raw"] > 0 for n in on_holders if not images & held.get(n, set())
            )
    stats["resized: ... on nodes a pending pod was evaluated on"] += sum(resized_on[n] for n in evaluated)


def run_batch(
    seeds: Sequence[int],
    oracle: Path,
    make: Callable[[int], tuple[list[dict[str, Any]], dict[str, Any]]] | None = None,
    stats: Counter[str] | None = None,
    features: Features = DEFAULT_FEATURES,
) -> dict[int, list[str]]:
    """Mismatches per seed (empty lists are dropped); ``stats`` counts what upstream did. ``features``:
    the minor and gates both sides decide with (``oracle`` must be built for that release); ``make``
    defaults to ``scenario`` at that minor."""
    make = make or functools.partial(scenario, kube_version=features.minor)
    lines, ours, objects_of = [], {}, {}
    for seed in seeds:
        objects, config = make(seed)
        objects_of[seed] = objects
        config = upstream_default_profile(config, features)
        py = python_side(objects, config, seed, features=features)
        ours[seed] = py
        placements = {r["pod"]: None if r.get("bindingError") else r["node"] for r in py}
        rankings = {r["pod"]: r["ranking"] for r in py if r.get("ranking")}
        offsets = {r["pod"]: r["offset"] for r in py if "offset" in r}
        nominations = {r["pod"]: r["nominatedNode"] for r in py if r.get("nominatedNode")}
        scenario_line = {"id": str(seed), "objects": objects, "config": config, "placements": placements}
        extra = {"rankings": rankings, "offsets": offsets, "nominations": nominations}
        lines.append(json.dumps({**scenario_line, **extra}))
    gates = oracle_gates(features)
    done = subprocess.run(
        [str(oracle), f"-workers={ORACLE_WORKERS}", *([f"-feature-gates={gates}"] if gates else [])],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    mismatches: dict[int, list[str]] = {}
    answered = set()
    for line in done.stdout.splitlines():
        result = json.loads(line)
        seed = int(result["id"])
        answered.add(seed)
        if result.get("error"):
            mismatches[seed] = [f"oracle error: {result['error']}"]
            continue
        if stats is not None:
            tally(result["results"] or [], stats)
            tally_dra_backed(objects_of[seed], result["results"] or [], stats)
            tally_dra(objects_of[seed], result["results"] or [], stats)
            tally_dra_parts(objects_of[seed], result["results"] or [], stats)
            stats["nominated pod counted in Filter (ours)"] += sum(bool(p.get("nominatedCounted")) for p in ours[seed])
            tally_node_pod_changes(objects_of[seed], result["results"] or [], stats, features)
        found = compare(ours[seed], result["results"] or [])
        if found:
            mismatches[seed] = found
    for seed in set(seeds) - answered:
        mismatches[seed] = ["no answer from the oracle"]
    return mismatches


def revision() -> str:
    """The code under test: ``git rev-parse --short HEAD``, "-dirty" with uncommitted changes."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument(
        "--crowded",
        action="store_true",
        help="every cluster with nodes filled by low-priority pods and later higher-priority pods (preemption-heavy)",
    )
    parser.add_argument(
        "--through-apiserver",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of clusters sent through a real kube-apiserver first",
    )
    parser.add_argument(
        "--only-with",
        choices=sorted(DRAWN_FEATURES),
        help="compare only the seeds whose cluster has this feature (the others are skipped, not counted)",
    )
    parser.add_argument(
        "--all-with",
        choices=sorted(ALWAYS_FEATURES),
        action="append",
        default=[],
        help="give every cluster this feature whatever its seed's draw (repeatable): a campaign on it compares"
        " every seed; a seed's cluster is then reproduced only with the same flag",
    )
    parser.add_argument(
        "--kube-version",
        default=os.environ.get("SPREAD_DIFF_KUBE_VERSION") or DEFAULT_FEATURES.minor,
        help="decide as this minor's kube-scheduler on both sides (1.35, 1.36, 1.37; default 1.35)",
    )
    parser.add_argument("--feature-gates", default="", help="kube-scheduler's --feature-gates, for both sides")
    args = parser.parse_args()
    try:
        features = features_at(supported_minor(args.kube_version), parse_feature_gates(args.feature_gates))
    except ValueError as exc:
        parser.error(str(exc))
    oracle = oracle_binary(features)
    trip = apiserver.start(args.through_apiserver, features.release)
    always = frozenset(args.all_with)
    if always and args.crowded:
        parser.error("--all-with makes scenario()'s clusters, not crowded()'s")
    if always:
        base = functools.partial(scenario, kube_version=features.minor, always=always)
    else:
        base = functools.partial(crowded if args.crowded else scenario, kube_version=features.minor)
    make = trip.wrap(base, args.through_apiserver) if trip else base
    last = args.start + args.count - 1
    only = f", only those with {args.only_with}" if args.only_with else ""
    only += f", every one with {', '.join(sorted(always))}" if always else ""
    header = (
        f"seeds {args.start}..{last} ({args.count} clusters{only}) as {features.release} at revision {revision()},"
        f" oracle {oracle}"
    )
    print(header, flush=True)
    started, total, bad = time.monotonic(), 0, 0
    stats: Counter[str] = Counter()
    for first in range(args.start, args.start + args.count, args.batch):
        seeds: Sequence[int] = range(first, min(first + args.batch, args.start + args.count))
        if args.only_with:
            seeds = [seed for seed in seeds if args.only_with in always or drawn(seed, args.only_with)]
        mismatches = run_batch(seeds, oracle, make, stats=stats, features=features)
        total += len(seeds)
        bad += len(mismatches)
        for seed, problems in sorted(mismatches.items())[:5]:
            print(f"seed {seed}:\n  " + "\n  ".join(problems[:6]), flush=True)
        print(f"{total} clusters compared, {bad} with mismatches ({time.monotonic() - started:.0f}s)", flush=True)
    print(f"{header}: {bad} of {total} clusters with mismatches; upstream: {dict(sorted(stats.items()))}")
    refused = apiserver.finish(trip)  # any refusal is a generator bug
    return 1 if bad or refused else 0


if __name__ == "__main__":
    sys.exit(main())
