"""Pod signatures for opportunistic batching (``k8s.io/kube-scheduler/framework/signers.go``).

A plugin that can say which parts of a pod its PreFilter, Filter, PreScore and Score read returns
them as ``SignFragment``s (``PodSigner.sign_fragments``); the framework joins every plugin's
fragments, keyed by the signer names below, into one JSON object (``Framework.sign_pod``). Two pods
with byte-identical signatures get the same filter and score results on an unchanged cluster, which
is what lets ``scheduler.framework.batch`` hand the second pod the first pod's runner-up.

The values mirror upstream's JSON field for field where equality depends on it: two pods sign
alike here exactly when they sign alike upstream. They are read from the pod as the API sent it
(``Pod.raw``), as upstream reads ``v1.Pod``, with one normalization: a field left empty and a field
left out are the same (the API server's protobuf storage does not keep the difference either).

This is a different promise from ``SignPlugin.sign_pod`` (``scheduler.framework.node_results``),
which keys per-node results of one plugin and must cover everything that plugin reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler.api.objects import Pod

__all__ = [
    "DYNAMIC_RESOURCES_SIGNER_NAME",
    "FEATURES_SIGNER_NAME",
    "HOST_PORTS_SIGNER_NAME",
    "IMAGE_NAMES_SIGNER_NAME",
    "LABELS_SIGNER_NAME",
    "NODE_AFFINITY_SIGNER_NAME",
    "NODE_NAME_SIGNER_NAME",
    "NODE_SELECTOR_SIGNER_NAME",
    "RESOURCES_SIGNER_NAME",
    "SCHEDULER_NAME_SIGNER_NAME",
    "TOLERATIONS_SIGNER_NAME",
    "VOLUMES_SIGNER_NAME",
    "SignFragment",
    "has_items",
    "host_ports_signer",
    "image_names_signer",
    "labels_signer",
    "node_affinity_signer",
    "node_selector_signer",
    "resources_signer",
    "sign",
    "spec_field",
    "tolerations_signer",
    "volumes_signer",
]

SignFragment = tuple[str, Any]
"""``(key, value)``: the value must be JSON-serializable; equal keys carry equal values."""

DYNAMIC_RESOURCES_SIGNER_NAME = "v1.Pod.Spec.DynamicResources"
IMAGE_NAMES_SIGNER_NAME = "v1.Pod.Spec.CanonicalImageNames()"
LABELS_SIGNER_NAME = "v1.Pod.Labels"
NODE_NAME_SIGNER_NAME = "v1.Pod.Spec.NodeName"
NODE_AFFINITY_SIGNER_NAME = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR_SIGNER_NAME = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS_SIGNER_NAME = "v1.Pod.Spec.HostPorts()"
RESOURCES_SIGNER_NAME = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME_SIGNER_NAME = "v1.Pod.Spec.SchedulerName"
TOLERATIONS_SIGNER_NAME = "v1.Pod.Spec.Tolerations"
VOLUMES_SIGNER_NAME = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES_SIGNER_NAME = "v1.Pod.Spec.RequiredFeatures()"


def _spec(pod: Pod) -> Mapping[str, Any]:
    spec = pod.raw.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _canonical(value: object) -> str:
    """One JSON text per value (keys sorted): equal texts for equal values, as Go's Marshal of a struct."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _containers(pod: Pod) -> list[Mapping[str, Any]]:
    """App containers then init containers, as upstream's signers walk them (no ephemeral ones)."""
    spec = _spec(pod)
    return [_map(c) for c in (*_list(spec.get("containers")), *_list(spec.get("initContainers")))]


def host_ports_signer(pod: Pod) -> list[int]:
    """``HostPortsSigner``: the distinct non-zero host ports, sorted; protocol and hostIP are not part of it."""
    ports = {
        port["hostPort"]
        for container in _containers(pod)
        for port in map(_map, _list(container.get("ports")))
        if isinstance(port.get("hostPort"), int) and port["hostPort"] != 0
    }
    return sorted(ports)


def image_names_signer(pod: Pod, normalize: Callable[[str], str]) -> list[str]:
    """ImageLocality's ``SignPod``: the distinct normalized image names, sorted."""
    return sorted({normalize(str(c.get("image") or "")) for c in _containers(pod)})


def _requirements_signer(reqs: object) -> list[str]:
    """``NodeSelectorRequirementsSigner``: each requirement with its values sorted, as JSON, sorted."""
    out = []
    for req in map(_map, _list(reqs)):
        entry: dict[str, Any] = {"key": req.get("key") or "", "operator": req.get("operator") or ""}
        values = sorted(str(v) for v in _list(req.get("values")))
        if values:
            entry["values"] = values
        out.append(_canonical(entry))
    return sorted(out)


def _term_signer(term: object) -> dict[str, list[str]]:
    """``NodeSelectorTermSigner``."""
    term = _map(term)
    return {
        "MatchExpressions": _requirements_signer(term.get("matchExpressions")),
        "MatchFields": _requirements_signer(term.get("matchFields")),
    }


def node_affinity_signer(pod: Pod) -> dict[str, list[str]] | None:
    """``NodeAffinitySigner``: None without ``affinity.nodeAffinity``; else the required terms and the
    preferred terms (with their weights), each canonicalized and sorted."""
    affinity = _spec(pod).get("affinity")
    node_affinity = _map(affinity).get("nodeAffinity")
    if not isinstance(node_affinity, Mapping):
        return None
    preferred = sorted(
        _canonical({"Weight": term.get("weight") or 0, "Preference": _term_signer(term.get("preference"))})
        for term in map(_map, _list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")))
    )
    required_selector = _map(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    required = sorted(_canonical(_term_signer(t)) for t in _list(required_selector.get("nodeSelectorTerms")))
    return {"Required": required, "Preferred": preferred}


def node_selector_signer(pod: Pod) -> Mapping[str, str] | None:
    """``pod.Spec.NodeSelector`` (None when there is none)."""
    selector = _spec(pod).get("nodeSelector")
    return dict(selector) if isinstance(selector, Mapping) and selector else None


_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")


def tolerations_signer(pod: Pod) -> list[dict[str, Any]]:
    """``TolerationsSigner``: the tolerations sorted by (key, value), stably (Go's sort.Slice is an
    insertion sort up to 12 elements, so equal keys keep their order)."""
    tolerations = []
    for toleration in map(_map, _list(_spec(pod).get("tolerations"))):
        tolerations.append({f: toleration[f] for f in _TOLERATION_FIELDS if toleration.get(f) not in (None, "")})
    return sorted(tolerations, key=lambda t: (t.get("key", ""), t.get("value", "")))


def volumes_signer(pod: Pod) -> list[str]:
    """``VolumesSigner``: every volume's source except configMap and secret ones (they do not affect
    scheduling and differ per pod), as JSON, sorted; the volume's name is not part of it."""
    out = []
    for volume in map(_map, _list(_spec(pod).get("volumes"))):
        if volume.get("configMap") is not None or volume.get("secret") is not None:
            continue
        out.append(_canonical({k: v for k, v in volume.items() if k != "name"}))
    return sorted(out)


def labels_signer(pod: Pod) -> Mapping[str, str] | None:
    """``pod.Labels`` (None when there are none)."""
    return dict(pod.labels) if pod.labels else None


def has_items(value: object) -> bool:
    """A non-empty list in the raw pod (``len(pod.Spec.X) > 0``)."""
    return bool(_list(value))


def spec_field(pod: Pod, name: str) -> object:
    return _spec(pod).get(name)


def sign(fragments: Sequence[SignFragment], scheduler_name: str) -> bytes:
    """``SignPod``'s join: the scheduler name, then each fragment by key (a later equal key wins), as JSON."""
    signature: dict[str, Any] = {SCHEDULER_NAME_SIGNER_NAME: scheduler_name}
    for key, value in fragments:
        signature[key] = value
    return _canonical(signature).encode()


def resources_signer(pod: Pod) -> dict[str, Any]:
    """``computePodResourceRequest`` as JSON (the requests NodeResourcesFit filters on: containers,
    init containers, pod-level resources and overhead)."""
    r = pod.resources.requests
    return {
        "MilliCPU": r.milli_cpu,
        "Memory": r.memory,
        "EphemeralStorage": r.ephemeral_storage,
        "AllowedPodNumber": r.allowed_pod_number,
        "ScalarResources": dict(r.scalar) or None,
    }
