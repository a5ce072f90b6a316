"""Fluent builders of API objects (dict form), shared by unit tests, conformance tests and benchmarks.

``make_pod("p").label("foo", "bar").spread("topology.kubernetes.io/zone", 1, match={"foo": "bar"}).obj``
builds exactly the dict the API server would hand over, so tests exercise the real parsers.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Self

from scheduler.api.objects import Node, Pod

__all__ = [
    "NodeBuilder",
    "PodBuilder",
    "driver_device_class",
    "make_node",
    "make_pod",
    "node_resource_slice",
    "spread_constraint",
]

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"

# What a builder node reports unless told otherwise: a mid-size machine with kubelet's default pod cap, so
# tests about labels and taints are not also tests about capacity.
DEFAULT_ALLOCATABLE = {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi", "pods": "110"}


class PodBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self.obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}", "labels": {}},
            "spec": {"containers": [{"name": "c", "image": "pause"}], "schedulerName": "spread-scheduler"},
            "status": {"phase": "Pending"},
        }

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.obj["spec"]
        return spec

    @property
    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = self.obj["metadata"]
        return meta

    def label(self, key: str, value: str = "") -> Self:
        self.meta["labels"][key] = value
        return self

    def labels(self, labels: dict[str, str]) -> Self:
        self.meta["labels"].update(labels)
        return self

    def node(self, name: str) -> Self:
        self.spec["nodeName"] = name
        return self

    def scheduler(self, name: str) -> Self:
        self.spec["schedulerName"] = name
        return self

    def priority(self, value: int) -> Self:
        self.spec["priority"] = value
        return self

    def created(self, timestamp: str) -> Self:
        self.meta["creationTimestamp"] = timestamp
        return self

    def terminating(self) -> Self:
        self.meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return self

    def phase(self, phase: str) -> Self:
        self.obj["status"]["phase"] = phase
        return self

    def start_time(self, timestamp: str) -> Self:
        """``status.startTime`` (RFC 3339): preemption prefers to evict the pods that started last."""
        self.obj["status"]["startTime"] = timestamp
        return self

    def preemption_policy(self, policy: str) -> Self:
        self.spec["preemptionPolicy"] = policy
        return self

    def condition(self, type_: str, status: str, reason: str = "") -> Self:
        """A ``status.conditions`` entry (``DisruptionTarget`` / ``PreemptionByScheduler`` for a victim)."""
        self.obj["status"].setdefault("conditions", []).append({"type": type_, "status": status, "reason": reason})
        return self

    def node_selector(self, selector: dict[str, str]) -> Self:
        self.spec["nodeSelector"] = dict(selector)
        return self

    def _node_affinity(self) -> dict[str, Any]:
        aff: dict[str, Any] = self.spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        return aff

    def required_terms(self, *terms: dict[str, Any]) -> Self:
        """Each term is a NodeSelectorTerm dict (``{"matchExpressions": [...], "matchFields": [...]}``)."""
        self._node_affinity()["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": list(terms)}
        return self

    def preferred_term(self, weight: int, preference: dict[str, Any]) -> Self:
        prefs = self._node_affinity().setdefault("preferredDuringSchedulingIgnoredDuringExecution", [])
        prefs.append({"weight": weight, "preference": preference})
        return self

    def toleration(self, key: str = "", operator: str = "", value: str = "", effect: str = "", **extra: Any) -> Self:
        tol = {k: v for k, v in {"key": key, "operator": operator, "value": value, "effect": effect}.items() if v}
        tol.update(extra)
        self.spec.setdefault("tolerations", []).append(tol)
        return self

    def spread(
        self,
        topology_key: str,
        max_skew: int = 1,
        when: str = "DoNotSchedule",
        match: dict[str, str] | None = None,
        selector: dict[str, Any] | None = None,
        **extra: Any,
    ) -> Self:
        """A topology spread constraint; ``match`` is matchLabels, ``selector`` a whole labelSelector."""
        constraint: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when}
        if selector is not None:
            constraint["labelSelector"] = selector
        elif match is not None:
            constraint["labelSelector"] = {"matchLabels": dict(match)}
        constraint.update(extra)
        self.spec.setdefault("topologySpreadConstraints", []).append(constraint)
        return self

    def pod_affinity(
        self,
        topology_key: str,
        selector: dict[str, Any] | None,
        *,
        anti: bool = False,
        weight: int | None = None,
        **extra: Any,
    ) -> Self:
        """One inter-pod (anti-)affinity term (upstream's ``PodAffinity``/``PodAntiAffinity`` wrappers):
        required, or preferred with ``weight``; ``extra`` adds namespaces, namespaceSelector, ..."""
        term: dict[str, Any] = {"topologyKey": topology_key}
        if selector is not None:
            term["labelSelector"] = selector
        term.update(extra)
        kind = self.spec.setdefault("affinity", {}).setdefault("podAntiAffinity" if anti else "podAffinity", {})
        if weight is None:
            kind.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            kind.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term}
            )
        return self

    def owner(self, kind: str, name: str, api_version: str = "apps/v1", controller: bool = True) -> Self:
        self.meta.setdefault("ownerReferences", []).append(
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}", "controller": controller}
        )
        return self

    def requests(self, container: int = 0, **resources: str) -> Self:
        """Requests of app container ``container`` (``cpu="500m", memory="1Gi"``)."""
        self._resources(self.spec["containers"], container)["requests"] = _resource_list(resources)
        return self

    def limits(self, container: int = 0, **resources: str) -> Self:
        self._resources(self.spec["containers"], container)["limits"] = _resource_list(resources)
        return self

    def container(self, name: str, **requests: str) -> Self:
        """Another app container with these requests."""
        self.spec["containers"].append(_container(name, requests))
        return self

    def init_container(self, name: str, restart_always: bool = False, **requests: str) -> Self:
        """An init container; ``restart_always`` makes it a sidecar (restartPolicy: Always)."""
        init = _container(name, requests)
        if restart_always:
            init["restartPolicy"] = "Always"
        self.spec.setdefault("initContainers", []).append(init)
        return self

    def image(self, image: str, container: int = 0) -> Self:
        """The image of app container ``container`` (the builder's containers run ``pause``)."""
        self.spec["containers"][container]["image"] = image
        return self

    def overhead(self, **resources: str) -> Self:
        self.spec["overhead"] = _resource_list(resources)
        return self

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "", container: int = 0) -> Self:
        entry: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            entry["hostIP"] = host_ip
        self.spec["containers"][container].setdefault("ports", []).append(entry)
        return self

    @staticmethod
    def _resources(containers: list[dict[str, Any]], index: int) -> dict[str, Any]:
        res: dict[str, Any] = containers[index].setdefault("resources", {})
        return res

    def gate(self, name: str) -> Self:
        self.spec.setdefault("schedulingGates", []).append({"name": name})
        return self

    def volume(self, name: str, **source: Any) -> Self:
        """A volume with one source, as the API spells it: ``volume("data", emptyDir={})``."""
        self.spec.setdefault("volumes", []).append({"name": name, **source})
        return self

    def pvc(self, name: str, claim_name: str) -> Self:
        return self.volume(name, persistentVolumeClaim={"claimName": claim_name})

    def resource_claim(self, name: str, *, claim: str | None = None, template: str | None = None) -> Self:
        """A ``spec.resourceClaims`` entry naming a ResourceClaim (``claim``) or a ResourceClaimTemplate."""
        entry: dict[str, Any] = {"name": name}
        if claim is not None:
            entry["resourceClaimName"] = claim
        if template is not None:
            entry["resourceClaimTemplateName"] = template
        self.spec.setdefault("resourceClaims", []).append(entry)
        return self

    def resource_claim_status(self, name: str, claim_name: str | None) -> Self:
        """The claim generated for template entry ``name`` (None: the controller chose to generate none)."""
        entry: dict[str, Any] = {"name": name}
        if claim_name is not None:
            entry["resourceClaimName"] = claim_name
        self.obj["status"].setdefault("resourceClaimStatuses", []).append(entry)
        return self

    def set(self, path: str, value: Any) -> Self:
        """Set any field by a dotted path (``spec.priority``), for cases the builder has no verb for."""
        target = self.obj
        *parents, last = path.split(".")
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.obj)

    def build(self) -> Pod:
        return Pod.from_dict(self.dict())


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self.obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-node-{name}", "labels": {HOSTNAME: name}},
            "spec": {},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "capacity": dict(DEFAULT_ALLOCATABLE),
                "allocatable": dict(DEFAULT_ALLOCATABLE),
            },
        }

    def capacity(self, **resources: str) -> Self:
        """Replace capacity and allocatable (``cpu="4", memory="8Gi", pods="10"``)."""
        self.obj["status"]["capacity"] = _resource_list(resources)
        self.obj["status"]["allocatable"] = _resource_list(resources)
        return self

    def allocatable(self, **resources: str) -> Self:
        self.obj["status"]["allocatable"] = _resource_list(resources)
        return self

    def label(self, key: str, value: str = "") -> Self:
        self.obj["metadata"]["labels"][key] = value
        return self

    def zone(self, zone: str) -> Self:
        return self.label(ZONE, zone)

    def unlabel(self, key: str) -> Self:
        self.obj["metadata"]["labels"].pop(key, None)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        self.obj["spec"].setdefault("taints", []).append(taint)
        return self

    def unschedulable(self, value: bool = True) -> Self:
        self.obj["spec"]["unschedulable"] = value
        return self

    def image(self, size_bytes: int, *names: str) -> Self:
        """One more ``status.images`` entry: an image known by ``names``, ``size_bytes`` large."""
        self.obj["status"].setdefault("images", []).append({"names": list(names), "sizeBytes": size_bytes})
        return self

    def declared_features(self, *names: str) -> Self:
        """``status.declaredFeatures`` (upstream's ``st.MakeNode().DeclaredFeatures``)."""
        self.obj["status"]["declaredFeatures"] = list(names)
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.obj)

    def build(self) -> Node:
        return Node.from_dict(self.dict())


def _resource_list(resources: dict[str, str]) -> dict[str, str]:
    """Keyword spelling: ``ephemeral_storage`` is ``ephemeral-storage``; others as ``**{"example.com/gpu": "1"}``."""
    return {(name.replace("_", "-") if name.isidentifier() else name): str(value) for name, value in resources.items()}


def _container(name: str, requests: dict[str, str]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "pause"}
    if requests:
        container["resources"] = {"requests": _resource_list(requests)}
    return container


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def spread_constraint(match: Mapping[str, str], **fields: Any) -> dict[str, Any]:
    """A valid hard zone constraint (maxSkew 1) selecting ``match``; ``fields`` override it, and a
    field set to None is left out (the bad-input tables break one field at a time)."""
    base: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": dict(match)},
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def driver_device_class(name: str, driver: str) -> dict[str, Any]:
    """A DeviceClass selecting every device of ``driver`` (a CEL selector on ``device.driver``)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def node_resource_slice(name: str, driver: str, node: str, *devices: Mapping[str, Any]) -> dict[str, Any]:
    """A ResourceSlice a DRA driver publishes for ``node``: one pool named after the node, in one slice,
    with ``devices`` (default: one device ``gpu-0``)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [dict(d) for d in devices] or [{"name": "gpu-0"}],
        },
    }
