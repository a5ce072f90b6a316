"""The differential generator's clusters are objects the API server accepts (issue #17).

Each object of a sample of seeds goes through a real kube-apiserver v1.35.4 as a server-side dry-run
create (``tests.differential.apiserver``), every optional feature on: any refusal is a generator bug.
SPREAD_GEN_VALID_COUNT sets the sample (default 100 seeds, about 40 s).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.build import K8S_VERSION, release
from scheduler.features import supported_minor
from tests.differential import generator
from tests.differential.apiserver import ControlPlane, RoundTrip

COUNT = int(os.environ.get("SPREAD_GEN_VALID_COUNT", "100"))
START = 9_500_000


@pytest.fixture(scope="module")
def trip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RoundTrip]:
    directory = os.environ.get("SPREAD_DIFF_APISERVER_DIR")
    plane = ControlPlane(Path(directory) if directory else tmp_path_factory.mktemp("apiserver"))
    round_trip = plane.up()
    yield round_trip
    round_trip.close()
    plane.down()


def test_generated_clusters_are_accepted_by_the_api_server(trip: RoundTrip) -> None:
    for seed in range(START, START + COUNT):
        objects, _ = generator.scenario(seed, generator.FEATURES)
        returned = trip.send(seed, objects)
        assert len(returned) + sum(r.seed == seed for r in trip.refusals) == len(objects)
    assert not trip.refusals, trip.report()


def test_replicated_clusters_are_accepted_by_the_api_server(trip: RoundTrip) -> None:
    for seed in range(START, START + COUNT // 4):
        trip.send(seed, generator.replicated(seed)[0])
    assert not trip.refusals, trip.report()


def test_crowded_clusters_are_accepted_by_the_api_server(trip: RoundTrip) -> None:
    """Feature "preemption" in every cluster: fillers, preemptors, Never classes, PodDisruptionBudgets."""
    kinds: set[str] = set()
    for seed in range(START, START + COUNT // 4):
        objects, _ = generator.crowded(seed)
        kinds |= {o["kind"] for o in trip.send(seed, objects)}
    assert not trip.refusals, trip.report()
    assert "PodDisruptionBudget" in kinds


def test_the_api_server_merges_match_label_keys_into_the_spread_selector(trip: RoundTrip) -> None:
    """What a round trip changes, on one pod: matchLabelKeys become a selector requirement, and the
    DefaultTolerationSeconds admission plugin adds its two tolerations."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "a", "team": "x"}},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": generator.ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "a"}},
                    "matchLabelKeys": ["team"],
                }
            ],
        },
    }
    (returned,) = trip.send(0, [pod])
    (constraint,) = returned["spec"]["topologySpreadConstraints"]
    assert constraint["labelSelector"]["matchExpressions"] == [{"key": "team", "operator": "In", "values": ["x"]}]
    assert {t["key"] for t in returned["spec"]["tolerations"]} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }
    assert "uid" not in returned["metadata"]


@pytest.mark.every_release
def test_node_pod_changes_are_accepted_by_the_api_server_of_their_minor(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Issue #47's features at the minor that has them: nodes declaring features, pods with a
    RestartAllContainers rule (kept, not dropped: the gate is on), image volumes, resized pods.

    At the run's release (``SPREAD_E2E_KUBE_VERSION``): ``make e2e``'s 1.36.3 and 1.37.2 runs, side by
    side, rather than two more control planes started one after the other in the 1.35.4 run."""
    version = release(os.environ.get("SPREAD_E2E_KUBE_VERSION") or K8S_VERSION).version
    minor = supported_minor(version)
    if minor == "1.35":
        pytest.skip("1.35 has none of these features")
    plane = ControlPlane(tmp_path_factory.mktemp(f"apiserver-{minor}"), version=version)
    trip = plane.up()
    try:
        seeds = [s for s in range(START, START + 10 * COUNT) if generator.drawn(s, "declaredfeatures")]
        kept = 0
        for seed in seeds[: max(COUNT // 4, 1)]:
            objects, _ = generator.scenario(seed, generator.FEATURES, kube_version=minor)
            for returned in (o for o in trip.send(seed, objects) if o["kind"] == "Pod"):
                containers = [*returned["spec"].get("containers", []), *returned["spec"].get("initContainers", [])]
                kept += sum(bool(c.get("restartPolicyRules")) for c in containers)
        assert not trip.refusals, trip.report()
        assert kept, "the API server dropped every restart rule"
    finally:
        trip.close()
        plane.down()


# What feature "dra" emits at each minor (its gates on by default there), as a path through the
# objects the API server hands back: a gate left off would drop the field, not refuse it.
DRA_FIELDS = {
    "adminAccess": ("1.35", "1.36", "1.37"),
    "firstAvailable": ("1.35", "1.36", "1.37"),
    "tolerations": ("1.36", "1.37"),
    "taints": ("1.36", "1.37"),
    "allowMultipleAllocations": ("1.36", "1.37"),
    "consumesCounters": ("1.36", "1.37"),
    "capacity.requests": ("1.36", "1.37"),
    "extendedResourceName": ("1.36", "1.37"),
    "DeviceTaintRule": ("1.37",),
}


def _dra_fields(obj: object, found: set[str]) -> None:
    if isinstance(obj, dict):
        if obj.get("kind") == "DeviceTaintRule":
            found.add("DeviceTaintRule")
        if isinstance(obj.get("capacity"), dict) and "requests" in obj["capacity"]:
            found.add("capacity.requests")
        if obj.get("adminAccess") is True:
            found.add("adminAccess")
        found.update(k for k in DRA_FIELDS if obj.get(k))
        for value in obj.values():
            _dra_fields(value, found)
    elif isinstance(obj, list):
        for value in obj:
            _dra_fields(value, found)


@pytest.mark.every_release
def test_dra_clusters_are_accepted_by_the_api_server_of_their_minor(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Feature "dra" in every cluster (``always``), at the run's release (``SPREAD_E2E_KUBE_VERSION``):
    nothing refused, and each field of a gate on by default at that minor kept (``DRA_FIELDS``)."""
    version = release(os.environ.get("SPREAD_E2E_KUBE_VERSION") or K8S_VERSION).version
    minor = supported_minor(version)
    plane = ControlPlane(tmp_path_factory.mktemp(f"apiserver-dra-{minor}"), version=version)
    trip = plane.up()
    try:
        found: set[str] = set()
        for seed in range(START, START + max(COUNT // 2, 1)):
            objects, _ = generator.scenario(
                seed, generator.FEATURES, kube_version=minor, always=frozenset({"dra", "draextended"})
            )
            returned = trip.send(seed, objects)
            _dra_fields([o for o in returned if o["apiVersion"].startswith("resource.k8s.io/")], found)
        assert not trip.refusals, trip.report()
        assert found == {field for field, minors in DRA_FIELDS.items() if minor in minors}
    finally:
        trip.close()
        plane.down()
