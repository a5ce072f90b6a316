"""DynamicResources, as a refusing stand-in: this scheduler does not allocate resource claims.

Upstream: ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``, in the default
profile because DynamicResourceAllocation is GA and locked on in 1.35. Its PreFilter skips a pod
only when no entry of ``spec.resourceClaims`` names a claim (``foreachPodResourceClaim`` with
``resourceclaim.Name``): an entry whose template the controller deliberately generated no claim for
(a ``status.resourceClaimStatuses`` entry without ``resourceClaimName``) is ignored; every other
entry (a claim, a template without status yet, an entry naming neither) makes it act.

Upstream's Score (weight 2 in the default profile; no PreScore, so it always runs) gives 0 on
every node to a pod without claims, and a pod with claims never reaches scoring here: the stand-in
scores 0 too, so score tables and totals read as upstream's.

With DRAExtendedResource (beta on from 1.36, GA in 1.37) a pod's extended resource that a
DeviceClass backs is allocated by this plugin on a node that does not offer the resource itself
(NodeResourcesFit then leaves it out): the stand-in refuses such nodes, naming the resource and
the DeviceClass, where upstream would allocate devices; a node offering the resource (a device
plugin) is NodeResourcesFit's, as upstream.

Upstream holds a pod whose generated claim does not exist yet in PreEnqueue, without an event; the
stand-in refuses in PreFilter, so that pod too gets PodScheduled=False and a FailedScheduling event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.objects import NodeName, Pod
from scheduler.api.resources import is_extended_resource_name
from scheduler.api.storage import DEVICE_CLASS_PREFIX
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
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
from scheduler.framework.interface import Handle, NominatingInfo
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.helper import not_run

__all__ = ["CONSEQUENCE", "DynamicResources", "DynamicResourcesWithExtendedResources", "claim_field"]

CONSEQUENCE = "spread-scheduler does not allocate resource claims"
STATE_KEY = "PreFilter" + names.DYNAMIC_RESOURCES
EXTENDED_STATE_KEY = "PreFilter" + names.DYNAMIC_RESOURCES + "/extended"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
# Upstream's last answer for a pod with claims when none was allocated before (through 1.36): the
# pod's DRA-backed extended resources count as one claim, which this cycle created and never allocated.
STILL_NOT_SCHEDULABLE = "still not schedulable"
EXTENDED_CONSEQUENCE = "spread-scheduler does not allocate devices"
UNBACKED_STATE_KEY = "PreFilter" + names.DYNAMIC_RESOURCES + "/unbacked"
CANNOT_FIT_RESOURCE = "cannot fit resource"  # upstream's filterExtendedResources


def is_dra_extended_resource_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: an extended resource name, or a class's implicit one."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def claim_field(pod: Pod) -> str | None:
    """``spec.resourceClaims[i] (claim "<name>")`` of the first entry upstream's PreFilter would act on."""
    for i, claim in enumerate(pod.resource_claims):
        if claim.resource_claim_name is None and claim.resource_claim_template_name is not None:
            status = next((s for s in pod.resource_claim_statuses if s.name == claim.name), None)
            if status is not None and status.resource_claim_name is None:
                continue  # resourceclaim.Name: nil name, no error — "the PodResourceClaim can be ignored"
        return f'spec.resourceClaims[{i}] (claim "{claim.name}")'
    return None


class DynamicResources:
    NAME = names.DYNAMIC_RESOURCES

    def __init__(self, args: Mapping[str, Any], handle: Handle, features: Features = DEFAULT_FEATURES) -> None:
        # DynamicResourcesArgs (filterTimeout, bindingTimeout) are accepted and unused.
        self.handle = handle
        self.dra_extended_resource = features.enable_dra_extended_resource
        self.post_filter_silent = features.dra_post_filter_silent
        self.features = features

    def extended_resources(self, pod: Pod) -> tuple[tuple[str, str], ...]:
        """(resource, DeviceClass) of each extended resource the pod requests that a class backs."""
        if not self.dra_extended_resource or self.handle.snapshot is None:
            return ()
        storage = self.handle.snapshot.storage
        out: list[tuple[str, str]] = []
        for name in sorted(pod.resources.requests.scalar):
            device_class = storage.device_class_for(name) if pod.resources.requests.scalar[name] else None
            if device_class is not None:
                out.append((name, device_class.name))
        return tuple(out)

    def sign_fragments(self, pod: Pod) -> tuple[Sequence[signers.SignFragment], Status | None]:
        """Upstream's ``SignPod`` (batching: ``scheduler.framework.signers``)."""
        if signers.has_items(signers.spec_field(pod, "resourceClaims")):
            return (), Status(Code.UNSCHEDULABLE, ("pods with dra resource claims are not signable",))
        return (), None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # spec.resourceClaims is immutable; the one thing that can lift the refusal is the pod's own
        # status.resourceClaimStatuses saying no claim was generated (upstream registers this event too).
        events = [
            ClusterEventWithHint(
                ClusterEvent(target_pod_resource(self.features), ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            )
        ]
        if self.dra_extended_resource:
            # A class added or changed may be the one a pod's extended resource waits for: upstream
            # registers these two, without a hint (a deleted class is not among them).
            events.append(
                ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE))
            )
        return events

    def is_schedulable_after_pod_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        pods = as_objects(Pod, old, new)
        if pods is None or pods[1] is None:
            return QueueingHint.QUEUE  # not a pod update: upstream's conversion error means Queue
        updated = pods[1]
        if another_pods_update(self.features, pod, updated):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if claim_field(updated) is None else QueueingHint.QUEUE_SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        field = claim_field(pod)
        extended = self.extended_resources(pod) if field is None else ()
        # Upstream writes its state before anything else, even for a pod it then skips: PostFilter reads it.
        state.write(STATE_KEY, field is not None or bool(extended))
        if field is not None:
            return None, not_run.refusal(field, self.NAME, CONSEQUENCE)
        if not extended:
            return None, not_run.SKIP
        state.write(EXTENDED_STATE_KEY, extended)
        backed = {resource for resource, _ in extended}
        requests = pod.resources.requests.scalar
        unbacked = tuple(
            sorted(n for n, want in requests.items() if want and n not in backed and is_dra_extended_resource_name(n))
        )
        state.write(UNBACKED_STATE_KEY, unbacked)
        return None, None

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[NodeName, Status]
    ) -> tuple[NominatingInfo | None, Status]:
        """Upstream's answer for a pod without claims, whose message every unschedulable pod's ends with.

        A pod with claims was refused in PreFilter: there is no allocation to undo. When an earlier
        PreFilter ended the cycle, no state was written and upstream's PostFilter fails: its Error
        ends the PostFilter run (DefaultPreemption does not run, the pod's nomination stays as it
        is) and its internal "not found" ends the pod's message. We fail the same way, with no text
        (docs/differences.md): a nomination other pods count on must not be cleared where upstream
        keeps it. From 1.37 a pod without claims gets a bare Unschedulable too (only logged upstream).
        A pod whose DRA-backed extended resources this cycle left unallocated has, for upstream, a
        claim with nothing to deallocate: "still not schedulable" through 1.36, bare from 1.37.
        """
        stored = state.get(STATE_KEY)
        if stored is None:
            return None, Status(Code.ERROR, (), "", "")
        if self.post_filter_silent:
            return None, Status(Code.UNSCHEDULABLE)
        if stored is False:
            return None, Status(Code.UNSCHEDULABLE, (NO_CLAIMS_TO_DEALLOCATE,))
        if state.get(EXTENDED_STATE_KEY) is not None:
            return None, Status(Code.UNSCHEDULABLE, (STILL_NOT_SCHEDULABLE,))
        return None, Status(Code.UNSCHEDULABLE)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        # Upstream: "If there are no claims, no need to do anything" (0), and DefaultNormalizeScore
        # leaves all zeros as they are.
        return 0

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        return [0] * len(nodes)


class DynamicResourcesWithExtendedResources(DynamicResources):
    """With DRAExtendedResource on (1.36+), the stand-in also has a Filter: the class the minor's
    registry hands out (``scheduler.plugins.registry.registry``), so 1.35 profiles list no Filter."""

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """A node that does not offer a DeviceClass-backed resource itself would need devices allocated.

        Before that, as upstream's ``filterExtendedResources``: an extended resource no class backs
        and the node does not list at all cannot fit (only reached when NodeResourcesFit ignores it).
        """
        extended = state.get(EXTENDED_STATE_KEY)
        if not isinstance(extended, tuple):
            return None
        offered = node_info.node.allocatable.scalar
        unbacked = state.get(UNBACKED_STATE_KEY)
        if isinstance(unbacked, tuple) and any(resource not in offered for resource in unbacked):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (CANNOT_FIT_RESOURCE,))
        for resource, device_class in extended:
            if offered.get(resource, 0) <= 0:
                field = f'extended resource "{resource}" (DeviceClass "{device_class}")'
                return not_run.refusal(field, self.NAME, EXTENDED_CONSEQUENCE)
        return None
