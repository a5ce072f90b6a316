"""DRAExtendedResource (beta on from 1.36, GA in 1.37): an extended resource a DeviceClass backs is
DynamicResources' on a node that does not offer it itself; NodeResourcesFit leaves it out there, and
our DynamicResources refuses such a node naming the resource and the class (it does not allocate
devices for them yet), never "Insufficient X".

Scenarios from upstream v1.36.3 ``noderesources/fit_test.go`` (the DRA cases of TestEnoughRequests,
same ids) and ``dynamic-resource-allocation/deviceclass/extendedresourcecache`` (which class a name
resolves to).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.api.storage import DeviceClass
from scheduler.backend.cache.storage_objects import StorageObjects
from scheduler.cli import main
from scheduler.features import features_at
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.interface import Handle
from scheduler.framework.status import Code
from scheduler.plugins import names
from scheduler.plugins.dynamicresources.plugin.plugin import StructuredDynamicResources
from scheduler.plugins.noderesources.fit import Fit
from scheduler.plugins.registry import registry
from scheduler.testing import make_node, make_pod
from tests.helpers import make_cache

DRA_RESOURCE = "extended.resource.dra.io/something"
PLAIN_RESOURCE = "example.com/bbb"


def device_class(name: str, resource: str | None = None, created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    spec = {"extendedResourceName": resource} if resource else {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("minor", "resource", "allocatable", "want"),
    [
        pytest.param("1.36", DRA_RESOURCE, None, None, id="extended resource backed by DRA"),
        pytest.param(
            "1.35",
            DRA_RESOURCE,
            None,
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"Insufficient {DRA_RESOURCE}"),
            id="extended resource backed by DRA not enabled",
        ),
        pytest.param(
            "1.36",
            PLAIN_RESOURCE,
            None,
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"Insufficient {PLAIN_RESOURCE}"),
            id="extended resource NOT backed by DRA",
        ),
        pytest.param(
            "1.36", DRA_RESOURCE, "0", None, id="extended resource was backed by Device Plugin (Allocatable: 0)"
        ),
        pytest.param(
            "1.37",
            DRA_RESOURCE,
            "1",
            (Code.UNSCHEDULABLE, f"Insufficient {DRA_RESOURCE}"),
            id="a device plugin offers it: Fit counts it (1 offered, 1 used)",
        ),
    ],
)
def test_fit_leaves_a_dra_backed_resource_to_dynamic_resources(
    minor: str, resource: str, allocatable: str | None, want: tuple[Code, str] | None
) -> None:
    node = make_node("n").capacity(cpu="1", memory="1Gi", pods="10", **({resource: allocatable} if allocatable else {}))
    used = [make_pod("used").node("n").requests(**{resource: "1"})] if allocatable == "1" else []
    cache = make_cache([node], used)
    cache.storage.upsert(DeviceClass.from_dict(device_class("device-class-name", DRA_RESOURCE)))
    pod = make_pod("p").requests(cpu="1m", memory="1", **{resource: "1"}).build()
    fit = Fit({}, Handle(cache), features_at(minor))
    state = CycleState()
    fit.pre_filter(state, pod, [])
    info = cache.get("n")
    assert info is not None
    status = fit.filter(state, pod, info)
    assert (None if status is None else (status.code, status.message())) == want


def test_the_signature_is_disabled_for_a_pod_using_one() -> None:
    cache = make_cache([make_node("n")])
    cache.storage.upsert(DeviceClass.from_dict(device_class("device-class-name", DRA_RESOURCE)))
    pod = make_pod("p").requests(**{DRA_RESOURCE: "1"}).build()
    _, status = Fit({}, Handle(cache), features_at("1.36")).sign_fragments(pod)
    assert status is not None
    assert status.message() == "signature disabled when dra extended resources are used in the cluster"
    assert Fit({}, Handle(cache), features_at("1.35")).sign_fragments(pod)[1] is None


class TestResolution:
    def test_explicit_and_implicit_names(self) -> None:
        store = StorageObjects()
        store.upsert(DeviceClass.from_dict(device_class("gpu", DRA_RESOURCE)))
        found = store.device_class_for(DRA_RESOURCE)
        implicit = store.device_class_for("deviceclass.resource.kubernetes.io/gpu")
        assert (found and found.name, implicit and implicit.name) == ("gpu", "gpu")
        assert store.device_class_for("deviceclass.resource.kubernetes.io/other") is None
        assert store.device_class_for(PLAIN_RESOURCE) is None

    def test_the_newest_class_wins_a_shared_name_then_the_first_name(self) -> None:
        store = StorageObjects()
        store.upsert(DeviceClass.from_dict(device_class("old", DRA_RESOURCE, "2026-01-01T00:00:00Z")))
        store.upsert(DeviceClass.from_dict(device_class("new", DRA_RESOURCE, "2026-02-01T00:00:00Z")))
        store.upsert(DeviceClass.from_dict(device_class("b-same", "x.io/y", "2026-01-01T00:00:00Z")))
        store.upsert(DeviceClass.from_dict(device_class("a-same", "x.io/y", "2026-01-01T00:00:00Z")))
        assert [store.device_class_for(r).name for r in (DRA_RESOURCE, "x.io/y")] == ["new", "a-same"]  # type: ignore[union-attr]


class TestSimulate:
    def decide(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[Any], version: str) -> Any:
        path = tmp_path / "in.yaml"
        path.write_text(yaml.safe_dump_all(objects))
        assert main(["simulate", str(path), "-o", "json", "--kube-version", version]) == 0
        (result,) = json.loads(capsys.readouterr().out)["results"]
        return result

    def test_the_stand_in_names_the_resource_and_the_class(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        objects = [
            make_node("plain").capacity(cpu="1", memory="1Gi", pods="10").dict(),
            device_class("gpu.example.com", DRA_RESOURCE),
            make_pod("p").requests(**{DRA_RESOURCE: "1"}).dict(),
        ]
        old = self.decide(tmp_path, capsys, objects, "1.35")
        assert old["nodes"]["plain"]["filter"]["reason"] == f"Insufficient {DRA_RESOURCE}"
        for version in ("1.36", "1.37"):
            new = self.decide(tmp_path, capsys, objects, version)
            assert new["node"] is None
            assert new["nodes"]["plain"]["filter"] == {
                **new["nodes"]["plain"]["filter"],
                "plugin": "DynamicResources",
                "reason": f'extended resource "{DRA_RESOURCE}" (DeviceClass "gpu.example.com") needs the '
                "DynamicResources plugin: spread-scheduler does not allocate devices",
            }

    def test_a_node_whose_device_plugin_offers_it_takes_the_pod(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        objects = [
            make_node("plain").capacity(cpu="1", memory="1Gi", pods="10").dict(),
            make_node("plugin").capacity(cpu="1", memory="1Gi", pods="10", **{DRA_RESOURCE: "2"}).dict(),
            device_class("gpu.example.com", DRA_RESOURCE),
            make_pod("p").requests(**{DRA_RESOURCE: "1"}).dict(),
        ]
        assert self.decide(tmp_path, capsys, objects, "1.36")["node"] == "plugin"


class TestPostFilter:
    """Upstream's PostFilter counts a pod's DRA-backed extended resources as one claim (created in
    PreFilter, never allocated): nothing to deallocate, "still not schedulable" through 1.36 (not "no
    new claims to deallocate"), a bare Unschedulable from 1.37. Found by the differential test."""

    @pytest.mark.parametrize(("minor", "want"), [("1.36", ("still not schedulable",)), ("1.37", ())])
    def test_a_pod_whose_resource_a_class_backs(self, minor: str, want: tuple[str, ...]) -> None:
        cache = make_cache([make_node("n").capacity(cpu="1", memory="1Gi", pods="10")])
        cache.storage.upsert(DeviceClass.from_dict(device_class("gpu", DRA_RESOURCE)))
        plugin = registry(features_at(minor))[names.DYNAMIC_RESOURCES]({}, Handle(cache), features_at(minor))
        state = CycleState()
        plugin.pre_filter(state, make_pod("p").requests(**{DRA_RESOURCE: "1"}).build(), [])
        _, status = plugin.post_filter(state, make_pod("p").build(), {})
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, want)

    def test_a_pod_without_one_still_has_no_claims_to_deallocate(self) -> None:
        cache = make_cache([make_node("n")])
        cache.storage.upsert(DeviceClass.from_dict(device_class("gpu", DRA_RESOURCE)))
        plugin = StructuredDynamicResources({}, Handle(cache), features_at("1.36"))
        state = CycleState()
        plugin.pre_filter(state, make_pod("p").requests(**{PLAIN_RESOURCE: "1"}).build(), [])
        assert plugin.post_filter(state, make_pod("p").build(), {})[1].reasons == ("no new claims to deallocate",)


class TestDeviceClassEvents:
    """Upstream v1.37.2: DynamicResources registers DeviceClass Add|Update without a hint (no Delete);
    NodeResourcesFit registers the same with ``isSchedulableAfterDeviceClassEvent`` while
    DRAExtendedResource is on, so a pod refused "Insufficient X" before a class backed X is retried."""

    def events(self, plugin: Any) -> list[Any]:
        return [e for e in plugin.events_to_register() if e.event.resource is EventResource.DEVICE_CLASS]

    def test_registered_add_and_update_where_the_gate_is_on(self) -> None:
        for minor in ("1.36", "1.37"):
            for plugin in (
                StructuredDynamicResources({}, Handle(), features_at(minor)),
                Fit({}, Handle(), features_at(minor)),
            ):
                assert [e.event.action for e in self.events(plugin)] == [ActionType.ADD | ActionType.UPDATE]
        assert self.events(Fit({}, Handle(), features_at("1.35"))) == []

    @pytest.mark.parametrize(
        ("old", "new", "want"),
        [
            pytest.param(None, ("gpu", DRA_RESOURCE), QueueingHint.QUEUE, id="added, backing the name asked for"),
            pytest.param(None, ("gpu", "x.io/other"), QueueingHint.QUEUE_SKIP, id="added, backing another name"),
            pytest.param(None, ("plain", None), QueueingHint.QUEUE, id="added, its implicit name asked for"),
            pytest.param(("gpu", None), ("gpu", DRA_RESOURCE), QueueingHint.QUEUE, id="updated to back it"),
            pytest.param(("gpu", DRA_RESOURCE), ("gpu", DRA_RESOURCE), QueueingHint.QUEUE_SKIP, id="name unchanged"),
            pytest.param(("plain", None), ("plain", "x.io/y"), QueueingHint.QUEUE_SKIP, id="implicit name on update"),
        ],
    )
    def test_fit_hint(
        self, old: tuple[str, str | None] | None, new: tuple[str, str | None], want: QueueingHint
    ) -> None:
        pod = make_pod("p").requests(**{DRA_RESOURCE: "1", "deviceclass.resource.kubernetes.io/plain": "1"}).build()
        fit = Fit({}, Handle(), features_at("1.37"))
        before = DeviceClass.from_dict(device_class(*old)) if old else None
        assert (
            fit.is_schedulable_after_device_class_event(pod, before, DeviceClass.from_dict(device_class(*new))) == want
        )


def test_an_unbacked_resource_the_node_does_not_list_cannot_fit() -> None:
    """Upstream's filterExtendedResources, for a pod with a DRA-backed resource: another extended
    resource that no class backs and that the node does not list at all (NodeResourcesFit ignored
    it: ``ignoredResources``) is "cannot fit resource" (seed 6000622 of the differential test);
    listed with 0, it is NodeResourcesFit's to judge."""
    cache = make_cache(
        [
            make_node("absent").capacity(cpu="1", memory="1Gi", pods="10"),
            make_node("zero").capacity(cpu="1", memory="1Gi", pods="10", **{PLAIN_RESOURCE: "0"}),
        ]
    )
    cache.storage.upsert(DeviceClass.from_dict(device_class("gpu", DRA_RESOURCE)))
    plugin = registry(features_at("1.37"))[names.DYNAMIC_RESOURCES]({}, Handle(cache), features_at("1.37"))
    pod = make_pod("p").requests(**{DRA_RESOURCE: "1", PLAIN_RESOURCE: "1"}).build()
    state = CycleState()
    plugin.pre_filter(state, pod, [])
    absent, zero = (plugin.filter(state, pod, cache.get(name)) for name in ("absent", "zero"))  # type: ignore[arg-type]
    assert (absent.code, absent.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("cannot fit resource",))
    assert zero.reasons[0].startswith(f'extended resource "{DRA_RESOURCE}" (DeviceClass "gpu")')
