"""The events DynamicResources registers and its queueing hints, per release (upstream's
``EventsToRegister``, ``isSchedulableAfterClaimChange``, ``isSchedulableAfterPodChange`` and, from
1.37, ``isSchedulableAfterTargetPodUpdate``)."""

from __future__ import annotations

from scheduler.api.objects import Pod
from scheduler.api.resourceclaim import ResourceClaim
from scheduler.features import Features
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    another_pods_update,
    as_objects,
    target_pod_resource,
)
from scheduler.plugins.dynamicresources.plugin.podclaims import ClaimLookup, ClaimNotUsableError, pod_claims

__all__ = ["ClaimHints"]


class ClaimHints:
    """The hints, reading claims through ``lookup`` as the plugin does."""

    def __init__(self, features: Features, lookup: ClaimLookup) -> None:
        self.features = features
        self.lookup = lookup

    def events_to_register(self) -> list[ClusterEventWithHint]:
        claim_actions = ActionType.ADD | ActionType.UPDATE
        if self.features.dra_claim_delete_events:
            claim_actions |= ActionType.DELETE
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_CLAIM, claim_actions), self.after_claim_change),
            ClusterEventWithHint(
                ClusterEvent(target_pod_resource(self.features), ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
        ]

    def _usable(self, pod: Pod) -> list[ResourceClaim] | None:
        try:
            return pod_claims(pod, self.lookup)
        except ClaimNotUsableError:
            return None

    def after_claim_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        claims = as_objects(ResourceClaim, old, new)
        if claims is None:
            return QueueingHint.QUEUE  # upstream's conversion error (a DeletedFinalStateUnknown too)
        original, modified = claims
        if modified is None and self.features.dra_claim_delete_events:
            # A delete (registered from 1.37): only an allocated claim frees devices.
            freed = original is not None and original.allocation is not None
            return QueueingHint.QUEUE if freed else QueueingHint.QUEUE_SKIP
        used = self._usable(pod)
        if used is None:
            return QueueingHint.QUEUE_SKIP
        if modified is None:
            # Before 1.37 deletes are not registered; upstream would dereference nil here.
            return QueueingHint.QUEUE
        if original is not None and original.allocation is not None and modified.allocation is None:
            return QueueingHint.QUEUE  # deallocated: its devices may serve this pod
        if not any(claim.uid == modified.uid for claim in used):
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        if _status(original) == _status(modified):
            return QueueingHint.QUEUE_SKIP  # e.g. the driver added its finalizer
        return QueueingHint.QUEUE

    def after_pod_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        pods = as_objects(Pod, None, new)
        if pods is None or pods[1] is None:
            return QueueingHint.QUEUE
        modified = pods[1]
        if another_pods_update(self.features, pod, modified):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE_SKIP if self._usable(modified) is None else QueueingHint.QUEUE


def _status(claim: ResourceClaim) -> tuple[object, ...]:
    """``claim.Status`` as ``apiequality.Semantic.DeepEqual`` compares it."""
    return (claim.allocation, claim.reserved_for, claim.device_statuses)
