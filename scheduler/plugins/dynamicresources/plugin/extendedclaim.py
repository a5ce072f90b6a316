"""The claim upstream's DynamicResources allocates for a pod's extended resources that a DeviceClass
backs (DRAExtendedResource; ``extendeddynamicresources.go``): one request per container and
resource, mapped back to the containers, built per node from what that node does not offer itself,
and PreBind's two writes as data (the claim created with ``generateName``, the pod's
``status.extendedResourceClaimStatus``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.resourceclaim import ALLOCATION_MODE_EXACT_COUNT, DeviceRequest, DeviceSubRequest, ResourceClaim
from scheduler.api.resources import ContainerRequests

__all__ = [
    "CANNOT_SCHEDULE",
    "EXTENDED_RESOURCE_CLAIM_ANNOTATION",
    "SPECIAL_CLAIM_NAME",
    "ContainerRequestMapping",
    "ExtendedClaimCreation",
    "find_extended_resource_claim",
    "node_extended_resources",
    "pod_status_patch",
    "requests_and_mappings",
]

SPECIAL_CLAIM_NAME = "<extended-resources>"  # specialClaimInMemName: the claim before PreBind creates it
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
CANNOT_SCHEDULE = "cannot schedule extended resource claim"
ClassFor = Callable[[str], str | None]  # resource -> the name of the DeviceClass backing it


@dataclass(frozen=True, slots=True)
class ContainerRequestMapping:
    """``v1.ContainerExtendedResourceRequest``."""

    container_name: str
    resource_name: str
    request_name: str

    def to_dict(self) -> dict[str, str]:
        return {
            "containerName": self.container_name,
            "resourceName": self.resource_name,
            "requestName": self.request_name,
        }


def _as_int64(q: Fraction | None) -> int:
    """``Quantity.AsInt64`` of a container's request, 0 where it has none or it is not whole."""
    if q is None or q.denominator != 1:
        return 0
    return int(q)


def _request_for(
    index: int,
    container: ContainerRequests,
    resource: str,
    class_name: str,
    reusable: Sequence[DeviceRequest | None],
) -> tuple[DeviceRequest | None, list[ContainerRequestMapping]]:
    """``createResourceRequestAndMappings``: the container's request for ``resource``, or none when the
    long-lived containers' requests after it (``reusable``, an init container's) already cover it."""
    wanted = _as_int64(container.requests.get(resource))
    if not wanted:
        return None, []
    mappings: list[ContainerRequestMapping] = []
    covered = 0
    for request in reusable:
        if request is None or request.exactly is None:
            continue
        covered += request.exactly.count
        mappings.append(ContainerRequestMapping(container.name, resource, request.name))
        if covered >= wanted:
            return None, mappings
    # Named by the container's index and the resource's place among its requests' names, sorted.
    name = f"container-{index}-request-{sorted(container.requests).index(resource)}"
    request = DeviceRequest(
        name,
        exactly=DeviceSubRequest(name, class_name, allocation_mode=ALLOCATION_MODE_EXACT_COUNT, count=wanted - covered),
    )
    mappings.append(ContainerRequestMapping(container.name, resource, name))
    return request, mappings


def requests_and_mappings(
    containers: Sequence[ContainerRequests], extended: Iterable[str], class_for: ClassFor
) -> tuple[tuple[DeviceRequest, ...], tuple[ContainerRequestMapping, ...]]:
    """``createRequestsAndMappings``: for each resource of ``extended`` a class backs, one request per
    long-lived container (app containers and sidecars) and one for the init containers that run
    alone (the largest of theirs, the others mapped to it); requests sorted by name.

    ``containers`` are the init containers, then the app containers (their indices name requests)."""
    long_lived = [i for i, c in enumerate(containers) if not c.init or c.restartable]
    short_lived = [i for i, c in enumerate(containers) if c.init and not c.restartable]
    requests: list[DeviceRequest] = []
    mappings: list[ContainerRequestMapping] = []
    for resource in sorted(extended):
        class_name = class_for(resource)
        if class_name is None:
            continue
        long_requests: list[DeviceRequest | None] = [None] * len(containers)
        long_mappings: list[ContainerRequestMapping] = []
        for i in long_lived:
            request, found = _request_for(i, containers[i], resource, class_name, ())
            long_requests[i] = request
            long_mappings.extend(found)
        largest: DeviceRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[ContainerRequestMapping] = []
        for i in short_lived:
            request, found = _request_for(i, containers[i], resource, class_name, long_requests[i:])
            if request is not None and request.exactly is not None:
                short_names.add(request.name)
                if largest is None or (largest.exactly is not None and largest.exactly.count < request.exactly.count):
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest.name)
            short_mappings = [
                ContainerRequestMapping(m.container_name, m.resource_name, largest.name)
                if m.request_name in short_names
                else m
                for m in short_mappings
            ]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: r.name)
    return tuple(requests), tuple(mappings)


def node_extended_resources(
    requested: Mapping[str, int], allocatable: Mapping[str, int], backed: Callable[[str], bool]
) -> dict[str, int] | None:
    """Filter's split (``filterExtendedResources``): the class-backed resources this node does not
    offer itself (devices to allocate), or None when a resource no class backs is not listed at all
    (upstream's "cannot fit resource"). ``requested`` holds the pod's DRA extended resource names."""
    out: dict[str, int] = {}
    for name, want in requested.items():
        if not want:
            continue
        offered = allocatable.get(name)
        if backed(name) and not offered:
            out[name] = want
        elif offered is None:
            return None
    return out


def find_extended_resource_claim(pod: Pod, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """``findExtendedResourceClaim``: a claim an earlier cycle created for this pod's extended resources."""
    for claim in claims:
        if claim.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true" and claim.controller_uid == pod.uid:
            return claim
    return None


@dataclass(frozen=True, slots=True)
class ExtendedClaimCreation:
    """PreBind's create of the pod's extended resource claim (``createExtendedResourceClaimInAPI``):
    no name (``generateName``), no allocation (written next, as for any claim), owned by the pod."""

    pod: Pod
    requests: tuple[DeviceRequest, ...]
    mappings: tuple[ContainerRequestMapping, ...]

    def body(self) -> dict[str, Any]:
        """The ResourceClaim as created, in the API's form."""
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "namespace": self.pod.namespace,
                "generateName": f"{self.pod.name}-extended-resources-",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": self.pod.name, "uid": self.pod.uid, "controller": True}
                ],
                "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            },
            "spec": {"devices": {"requests": [_request_dict(r) for r in self.requests]}},
        }


def _request_dict(request: DeviceRequest) -> dict[str, Any]:
    exactly = request.exactly
    assert exactly is not None  # every request built here is an exact one
    return {
        "name": request.name,
        "exactly": {
            "deviceClassName": exactly.device_class_name,
            "allocationMode": exactly.allocation_mode,
            "count": exactly.count,
        },
    }


def pod_status_patch(pod: Pod, claim_name: str, mappings: Sequence[ContainerRequestMapping]) -> dict[str, Any]:
    """``patchPodExtendedResourceClaimStatus``'s change to the pod's status (a merge patch body);
    raises ``ValueError`` with upstream's text when there is nothing to map."""
    if not mappings:
        raise ValueError(
            f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus"
        )
    return {
        "status": {
            "extendedResourceClaimStatus": {
                "requestMappings": [m.to_dict() for m in mappings],
                "resourceClaimName": claim_name,
            }
        }
    }
