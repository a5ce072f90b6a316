"""DeviceTaintRules (issue #49): where DRADeviceTaintRules is on (1.37, GA) a rule's taint is on the
devices it selects as if the driver had published it, so the allocator passes a tainted device over
unless the request tolerates the taint; at 1.35 and 1.36 (alpha; beta and off) no rule counts. A rule
that comes or goes after a pod failed is a ResourceSlice update, as upstream's slice tracker sends it.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.devicefields import DeviceTaint
from scheduler.api.devicetaintrule import DeviceTaintRule, tainted
from scheduler.api.resourceslice import ResourceSlice
from scheduler.features import features_at
from scheduler.framework import events as ev
from scheduler.testing import make_pod
from tests.plugins.dynamicresources import test_dra_profile as dra
from tests.plugins.dynamicresources.test_dra_profile import DRIVER, MINORS, claim, node, node_slice

RULES_MINOR = "1.37"
UNHEALTHY = {"key": "example.com/unhealthy", "effect": "NoSchedule"}


def rule(name: str, taint: dict[str, Any] | None = None, **selector: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name, "resourceVersion": "7"},
        "spec": {
            "deviceSelector": selector,
            "taint": taint or {"key": "example.com/unhealthy", "effect": "NoSchedule"},
        },
    }


def test_only_1_37_applies_them() -> None:
    assert [features_at(m).dra_device_taint_rules for m in MINORS] == [False, False, True]


def test_a_rule_taints_the_devices_it_selects_and_no_others() -> None:
    """``applyPatches``: driver, pool and device must each match where set; the slice's own taints stay
    first; a slice no rule selects is returned as it is."""
    devices = [{"name": "gpu-0", "taints": [{"key": "own", "effect": "NoExecute"}]}, {"name": "gpu-1"}]
    published = ResourceSlice.from_dict(node_slice("n1", *devices))
    rules = [
        DeviceTaintRule.from_dict(rule("all")),
        DeviceTaintRule.from_dict(
            rule("one", {"key": "k1", "effect": "None"}, driver=DRIVER, pool="n1", device="gpu-1")
        ),
        DeviceTaintRule.from_dict(rule("other-driver", driver="other.example.com")),
        DeviceTaintRule.from_dict(rule("other-pool", pool="n2")),
    ]
    patched = tainted(published, rules)
    assert [[t.key for t in d.taints] for d in patched.devices] == [
        ["own", "example.com/unhealthy"],
        ["example.com/unhealthy", "k1"],
    ]
    assert tainted(published, rules[2:]) is published
    assert published.devices[1].taints == ()


def test_a_rules_invalid_taint_names_the_field() -> None:
    parsed = DeviceTaintRule.from_dict(rule("bad", {"key": "k", "effect": "Sometimes"}))
    assert [str(e) for e in parsed.errors] == [
        'spec.taint.effect: Unsupported value: "Sometimes": supported values: "NoExecute", "NoSchedule", "None"'
    ]
    assert parsed.taint == DeviceTaint(key="k", effect="Sometimes")


@pytest.mark.parametrize("minor", MINORS)
def test_a_tainted_device_is_passed_over_where_rules_count(minor: str) -> None:
    """n1's device is tainted by a rule: at 1.37 the pod goes to n2, n1 "cannot allocate all claims";
    at 1.35 and 1.36 the rule is not the scheduler's to read and n1 is as good as n2."""
    objects = [node("n1"), node("n2"), dra.device_class(), node_slice("n1"), node_slice("n2"), claim("c0")]
    objects += [rule("n1-broken", pool="n1"), make_pod("p").resource_claim("gpu", claim="c0").dict()]
    sim = dra.simulate(minor, objects)
    (attempt,) = sim.run()
    assert attempt.succeeded, attempt.message
    if minor == RULES_MINOR:
        assert attempt.host == "n2"
        assert attempt.diagnosis.node_to_status["n1"].reasons == ("cannot allocate all claims",)
    else:
        assert "n1" not in attempt.diagnosis.node_to_status


def test_a_toleration_lets_the_request_take_the_tainted_device() -> None:
    tolerating = claim("c0", request={"tolerations": [{"key": "example.com/unhealthy", "operator": "Exists"}]})
    objects = [node("n1"), dra.device_class(), node_slice("n1"), tolerating, rule("n1-broken", pool="n1")]
    sim = dra.simulate(RULES_MINOR, [*objects, make_pod("p").resource_claim("gpu", claim="c0").dict()])
    (attempt,) = sim.run()
    assert attempt.host == "n1", attempt.message


def test_a_rule_coming_and_going_is_a_slice_update() -> None:
    """The tracker's events: each slice whose devices' taints changed, old and new; none for a relist
    of the same version, none for a slice the rule does not select."""
    sim = dra.simulate(RULES_MINOR, [node("n1"), node("n2"), dra.device_class(), node_slice("n1"), node_slice("n2")])
    handlers = sim.scheduler.handlers
    moved: list[tuple[ev.ClusterEvent, Any, Any]] = []
    handlers.queue.move_all_to_active_or_backoff = lambda event, old, new, *a, **k: moved.append((event, old, new))  # type: ignore[method-assign]
    handlers.on_object("ADDED", rule("n1-broken", pool="n1"))
    handlers.on_object("MODIFIED", rule("n1-broken", pool="n1"))  # the same resourceVersion
    handlers.on_object("DELETED", rule("n1-broken", pool="n1"))
    update = ev.object_event(ev.EventResource.RESOURCE_SLICE, ev.ActionType.UPDATE)
    assert [(e, old.name, [len(d.taints) for d in new.devices]) for e, old, new in moved] == [
        (update, "n1-gpus", [1]),
        (update, "n1-gpus", [0]),
    ]
    assert [len(d.taints) for s in sim.cache.storage.resource_slices() for d in s.devices] == [0, 0]
