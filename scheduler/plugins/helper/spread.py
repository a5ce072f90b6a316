"""``helper.DefaultSelector`` (upstream ``plugins/helper/spread.go``): what default spreading selects on."""

from __future__ import annotations

from scheduler.api.labels import Operator, Requirement, Selector, make_selector
from scheduler.api.objects import Pod
from scheduler.framework.interface import Snapshot

__all__ = ["default_selector"]


def default_selector(pod: Pod, snapshot: Snapshot) -> Selector:
    """``helper.DefaultSelector``: selectors of the Services and the controller that select the pod."""
    label_set: dict[str, str] = {}
    for svc in snapshot.selecting_objects("Service", pod.namespace):
        if svc.selector.matches(pod.labels):
            for req in svc.selector.requirements:
                label_set[req.key] = next(iter(req.values))
    extra: tuple[Requirement, ...] = ()
    owner = pod.controller
    if owner is not None:
        kind = {
            ("v1", "ReplicationController"): "ReplicationController",
            ("apps/v1", "ReplicaSet"): "ReplicaSet",
            ("apps/v1", "StatefulSet"): "StatefulSet",
        }.get((owner.api_version, owner.kind))
        obj = snapshot.get_selecting_object(kind, pod.namespace, owner.name) if kind else None
        if obj is not None and kind == "ReplicationController":
            for req in obj.selector.requirements:
                label_set[req.key] = next(iter(req.values))
        elif obj is not None and not obj.selector.nothing:
            extra = obj.selector.requirements
    selector = make_selector([Requirement(k, Operator.IN, frozenset((v,))) for k, v in label_set.items()])
    return selector.and_requirements(extra) if extra else selector
