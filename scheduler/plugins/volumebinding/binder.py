"""The volume binder's reading side (``volumebinding/binder.go`` and component-helpers' storage/volume).

Which of a pod's claims are bound, which wait for their first consumer and which cannot be bound by
the scheduler at all (``GetPodVolumeClaims``), and whether a node can take the bound ones: each
bound claim's PersistentVolume must exist and its node affinity must admit the node
(``checkBoundClaims``), after an in-tree PV is seen as its CSI volume where the node's CSINode lists
the plugin as migrated (``tryTranslatePVToCSI``: its zone requirements move to the CSI driver's
topology key). No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.fields import FieldError
from scheduler.api.nodeselector import parse_node_selector
from scheduler.api.objects import Pod
from scheduler.api.storage import (
    VOLUME_BINDING_WAIT,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    not_found,
)
from scheduler.framework.interface import StorageLister
from scheduler.plugins.helper.volumes import claim_name_of

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_SELECTED_NODE",
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ClaimError",
    "PodVolumeClaims",
    "check_bound_claims",
    "find_matching_volume",
    "node_affinity_admits",
    "pod_volume_claims",
]

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

# In-tree plugins whose PVs translate their zone topology to a CSI key (aws, gce, cinder call
# ``translateTopologyFromInTreeToCSI``; azure disk and portworx do not).
_TOPOLOGY_KEYS = {
    "awsElasticBlockStore": "topology.ebs.csi.aws.com/zone",
    "gcePersistentDisk": "topology.gke.io/zone",
    "cinder": "topology.cinder.csi.openstack.org/zone",
}
_PLUGINS = {
    "awsElasticBlockStore": "kubernetes.io/aws-ebs",
    "gcePersistentDisk": "kubernetes.io/gce-pd",
    "cinder": "kubernetes.io/cinder",
    "azureDisk": "kubernetes.io/azure-disk",
    "portworxVolume": "kubernetes.io/portworx-volume",
}
_TERM_INDEX = re.compile(r"\.nodeSelectorTerms\[(\d+)\]")
_ZONE, _BETA_ZONE = "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"
_REGION, _BETA_REGION = "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"


class ClaimError(Exception):
    """Why the pod's claims cannot be read (``podHasPVCs``/``GetPodVolumeClaims``): the text upstream
    puts in its status."""


@dataclass(slots=True)
class PodVolumeClaims:
    """``PodVolumeClaims``: the pod's claims by what the scheduler can do with them."""

    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)


def fully_bound(claim: PersistentVolumeClaim) -> bool:
    """``isPVCFullyBound``: a volume name and the PV controller's bind-completed annotation."""
    return bool(claim.volume_name) and ANN_BIND_COMPLETED in claim.annotations


def pod_volume_claims(storage: StorageLister, pod: Pod) -> PodVolumeClaims | None:
    """``podHasPVCs`` then ``GetPodVolumeClaims``: None when the pod uses no claim; raises
    ``ClaimError`` with upstream's text when one cannot be used."""
    claims: list[tuple[PersistentVolumeClaim, bool]] = []
    for volume in pod.volumes:
        ephemeral = "ephemeral" in volume.sources and "persistentVolumeClaim" not in volume.sources
        name = claim_name_of(pod, volume)
        if name is None:
            continue
        claim = storage.persistent_volume_claim(pod.namespace, name)
        if claim is None:
            if ephemeral:
                raise ClaimError(
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                )
            raise ClaimError(not_found("PersistentVolumeClaim", name))
        if claim.phase == "Lost":
            raise ClaimError(
                f'persistentvolumeclaim "{claim.name}" bound to non-existent persistentvolume "{claim.volume_name}"'
            )
        if claim.deleting:
            raise ClaimError(f'persistentvolumeclaim "{claim.name}" is being deleted')
        if ephemeral and claim.controller_uid != pod.uid:
            raise ClaimError(
                f"PVC {claim.namespace}/{claim.name} was not created for pod {pod.namespace}/{pod.name} "
                "(pod is not owner)"
            )
        claims.append((claim, ephemeral))
    if not claims:
        return None
    out = PodVolumeClaims()
    for claim, _ in claims:
        if fully_bound(claim):
            out.bound.append(claim)
        elif _delay_binding(storage, claim) and not claim.volume_name:
            out.unbound_delay_binding.append(claim)
        else:
            out.unbound_immediate.append(claim)
    return out


def _delay_binding(storage: StorageLister, claim: PersistentVolumeClaim) -> bool:
    """``IsDelayBindingMode``: the claim's class exists and waits for the first consumer."""
    class_name = claim.storage_class
    storage_class = storage.storage_class(class_name) if class_name else None
    return storage_class is not None and storage_class.volume_binding_mode == VOLUME_BINDING_WAIT


def check_bound_claims(
    storage: StorageLister,
    claims: Sequence[PersistentVolumeClaim],
    node_name: str,
    node_labels: Mapping[str, str],
) -> tuple[bool, bool]:
    """``checkBoundClaims``: (node affinity satisfied, every bound PV found). The first claim whose
    PV is missing, or does not admit the node, decides."""
    csi_node = storage.csi_node(node_name)
    for claim in claims:
        pv = storage.persistent_volume(claim.volume_name)
        if pv is None:
            return True, False
        if not node_affinity_admits(pv, csi_node, node_labels):
            return False, True
    return True, True


def node_affinity_admits(pv: PersistentVolume, csi_node: CSINode | None, node_labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity`` on the PV as the node sees it (``tryTranslatePVToCSI``): matched
    against the node's labels alone, so a ``metadata.name`` field requirement matches no node."""
    required = _translated_affinity(pv, csi_node)
    if required is None:
        return True
    errors: list[FieldError] = []
    selector = parse_node_selector(required, "", errors)
    if selector is None:
        return True
    if not errors:
        return selector.matches("", node_labels)
    # A term the API server would refuse (only possible from a file) matches no node, as upstream's
    # node selector skips a term it cannot parse; the other terms still count.
    broken = {int(m.group(1)) for e in errors if (m := _TERM_INDEX.match(e.path))}
    raw_terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(raw_terms, list):
        return False
    kept = [t for i, t in enumerate(raw_terms) if i not in broken]
    if not kept:
        return False
    rest = parse_node_selector({"nodeSelectorTerms": kept}, "", [])
    return rest is not None and rest.matches("", node_labels)


def _raw_required(pv: PersistentVolume) -> Mapping[str, Any] | None:
    spec = pv.raw.get("spec")
    affinity = spec.get("nodeAffinity") if isinstance(spec, Mapping) else None
    required = affinity.get("required") if isinstance(affinity, Mapping) else None
    return required if isinstance(required, Mapping) else None


def _translated_affinity(pv: PersistentVolume, csi_node: CSINode | None) -> Mapping[str, Any] | None:
    """The PV's required node selector, rewritten as csi-translation-lib's
    ``translateTopologyFromInTreeToCSI`` does for an in-tree source the node migrated."""
    required = _raw_required(pv)
    source = next((s for s in pv.sources if s in _PLUGINS), None)
    if source is None or csi_node is None or _PLUGINS[source] not in csi_node.migrated_plugins:
        return required
    key = _TOPOLOGY_KEYS.get(source)
    if key is None:
        return required
    terms: list[Mapping[str, Any]] = [dict(t) for t in _terms(required)]
    zone_label, region_label = _topology_labels(pv, terms)
    if _values(terms, zone_label):
        terms = _replace(terms, zone_label, key)
    elif zone_label in pv.labels:
        zones = sorted({z.strip() for z in pv.labels[zone_label].split("__") if z.strip()})
        if zones:
            terms = terms or [{}]
            requirement = {"key": key, "operator": "In", "values": zones}
            terms = [{**t, "matchExpressions": [*_exprs(t), requirement]} for t in terms]
    if region_label == _BETA_REGION and _values(terms, region_label):
        terms = _replace(terms, region_label, _REGION)
    if not terms:
        return required
    return {"nodeSelectorTerms": terms}


def _terms(required: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    raw = required.get("nodeSelectorTerms") if required is not None else None
    return [t for t in raw if isinstance(t, Mapping)] if isinstance(raw, list) else []


def _exprs(term: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = term.get("matchExpressions")
    return [e for e in raw if isinstance(e, Mapping)] if isinstance(raw, list) else []


def _values(terms: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    return [v for t in terms for e in _exprs(t) if e.get("key") == key for v in (e.get("values") or [])]


def _replace(terms: Sequence[Mapping[str, Any]], old: str, new: str) -> list[Mapping[str, Any]]:
    return [
        {**t, "matchExpressions": [{**e, "key": new} if e.get("key") == old else e for e in _exprs(t)]} for t in terms
    ]


def _topology_labels(pv: PersistentVolume, terms: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """``getTopologyLabel``: GA keys unless only the beta zone key is used (affinity first, labels next)."""
    keys = {e.get("key") for t in terms for e in _exprs(t)}
    if _ZONE in keys:
        return _ZONE, _REGION
    if _BETA_ZONE in keys:
        return _BETA_ZONE, _BETA_REGION
    if _ZONE in pv.labels:
        return _ZONE, _REGION
    if _BETA_ZONE in pv.labels:
        return _BETA_ZONE, _BETA_REGION
    return _ZONE, _REGION


def _bound_to(pv: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """``IsVolumeBoundToClaim``: the PV's claimRef names the claim (and its UID, when it has one)."""
    ref = pv.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
        return False
    return not ref.uid or ref.uid == claim.uid


def find_matching_volume(
    claim: PersistentVolumeClaim,
    volumes: Sequence[PersistentVolume],
    node_labels: Mapping[str, str],
    excluded: frozenset[str] | set[str] = frozenset(),
) -> PersistentVolume | None:
    """component-helpers' ``FindMatchingVolume`` for a node (delay binding, VolumeAttributesClass on,
    as in 1.35): a PV pre-bound to the claim if it admits the node (else none), otherwise the
    smallest Available PV of the claim's class that is large enough, of the same volume mode and
    attributes class, selected by the claim's selector, admits the node and offers every access mode
    the claim asks for; the first of equal size in ``volumes``' order."""
    smallest: PersistentVolume | None = None
    requested = claim.request or 0
    for pv in volumes:
        if pv.name in excluded:
            continue
        if pv.claim_ref is not None and not _bound_to(pv, claim):
            continue
        size = pv.capacity or 0
        if size < requested:
            continue
        if pv.volume_mode != claim.volume_mode:
            continue
        if pv.volume_attributes_class_name != claim.volume_attributes_class_name:
            continue
        if pv.deleting:
            continue
        admits = node_affinity_admits(pv, None, node_labels)  # untranslated, as upstream's
        if _bound_to(pv, claim):
            return pv if admits else None
        if pv.phase != "Available":
            continue
        if claim.selector is not None and not claim.selector.matches(pv.labels):
            continue
        if pv.storage_class != claim.storage_class or not admits:
            continue
        if not claim.access_modes <= pv.access_modes:
            continue
        if smallest is None or (smallest.capacity or 0) > size:
            smallest = pv
    return smallest


NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"


@dataclass(slots=True)
class PodVolumes:
    """``PodVolumes``: what binding the pod's claims on one node takes: PVs to bind to claims
    (static), claims to provision there (dynamic)."""

    static_bindings: list[tuple[PersistentVolumeClaim, PersistentVolume]] = field(default_factory=list)
    dynamic_provisions: list[PersistentVolumeClaim] = field(default_factory=list)
    # Per dynamic provision, the CSIStorageCapacity that had room for it (None: capacity not
    # tracked for its driver): ``DynamicProvision.NodeCapacity``, which capacity scoring reads.
    node_capacities: list[CSIStorageCapacity | None] = field(default_factory=list)


def unbound_volumes(
    storage: StorageLister, claims: Sequence[PersistentVolumeClaim]
) -> dict[str, list[PersistentVolume]]:
    """``unboundVolumesDelayBinding``: the PVs of each waiting claim's class, listed once per cycle."""
    classes = {c.storage_class for c in claims}
    out: dict[str, list[PersistentVolume]] = {name: [] for name in classes}
    for pv in storage.persistent_volumes():
        if pv.storage_class in out:
            out[pv.storage_class].append(pv)
    return out


def find_pod_volumes(
    storage: StorageLister,
    claims: PodVolumeClaims,
    volumes_by_class: Mapping[str, Sequence[PersistentVolume]],
    node_name: str,
    node_labels: Mapping[str, str],
) -> tuple[PodVolumes, list[str]]:
    """``FindPodVolumes``: how the node could take the pod's claims, or upstream's reasons why not
    (node affinity of a bound PV, no PV to bind, not enough storage, a bound PV missing)."""
    out = PodVolumes()
    bound_ok, unbound_ok, storage_ok, pvs_found = True, True, True, True
    if claims.bound:
        bound_ok, pvs_found = check_bound_claims(storage, claims.bound, node_name, node_labels)
    if claims.unbound_delay_binding:
        to_match: list[PersistentVolumeClaim] = []
        to_provision: list[PersistentVolumeClaim] = []
        for claim in claims.unbound_delay_binding:
            selected = claim.annotations.get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node_name:
                    unbound_ok = False
                    return out, _reasons(bound_ok, unbound_ok, storage_ok, pvs_found)
                to_provision.append(claim)
            else:
                to_match.append(claim)
        if to_match:
            unbound_ok, out.static_bindings, unmatched = _find_matching_volumes(to_match, volumes_by_class, node_labels)
            to_provision += unmatched
        if to_provision:
            unbound_ok, storage_ok, out.dynamic_provisions, out.node_capacities = _check_volume_provisions(
                storage, to_provision, node_labels
            )
    return out, _reasons(bound_ok, unbound_ok, storage_ok, pvs_found)


def _reasons(bound_ok: bool, unbound_ok: bool, storage_ok: bool, pvs_found: bool) -> list[str]:
    reasons = []
    if not bound_ok:
        reasons.append(ERR_REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(ERR_REASON_BIND_CONFLICT)
    if not storage_ok:
        reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
    if not pvs_found:
        reasons.append(ERR_REASON_PV_NOT_EXIST)
    return reasons


def _find_matching_volumes(
    claims: Sequence[PersistentVolumeClaim],
    volumes_by_class: Mapping[str, Sequence[PersistentVolume]],
    node_labels: Mapping[str, str],
) -> tuple[bool, list[tuple[PersistentVolumeClaim, PersistentVolume]], list[PersistentVolumeClaim]]:
    """``findMatchingVolumes``: the smallest claims first, each PV at most once."""
    chosen: set[str] = set()
    bindings: list[tuple[PersistentVolumeClaim, PersistentVolume]] = []
    unmatched: list[PersistentVolumeClaim] = []
    for claim in sorted(claims, key=lambda c: c.request or 0):
        pv = find_matching_volume(claim, volumes_by_class.get(claim.storage_class, ()), node_labels, chosen)
        if pv is None:
            unmatched.append(claim)
            continue
        chosen.add(pv.name)
        bindings.append((claim, pv))
    return not unmatched, bindings, unmatched


def _check_volume_provisions(
    storage: StorageLister, claims: Sequence[PersistentVolumeClaim], node_labels: Mapping[str, str]
) -> tuple[bool, bool, list[PersistentVolumeClaim], list[CSIStorageCapacity | None]]:
    """``checkVolumeProvisions``: (provisioning possible, enough storage, the claims to provision,
    the capacity each fits in). Raises ``ClaimError`` where upstream returns an error (no class, a
    missing class)."""
    provisions: list[PersistentVolumeClaim] = []
    capacities: list[CSIStorageCapacity | None] = []
    for claim in claims:
        class_name = claim.storage_class
        if not class_name:
            raise ClaimError(f'no class for claim "{claim.namespace}/{claim.name}"')
        storage_class = storage.storage_class(class_name)
        if storage_class is None:
            raise ClaimError(f'failed to find storage class "{class_name}"')
        provisioner = storage_class.provisioner
        if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
            return False, True, [], []
        if not _matches_topology(storage_class.allowed_topologies, node_labels):
            return False, True, [], []
        enough, capacity = _enough_capacity(storage, provisioner, claim, class_name, node_labels)
        if not enough:
            return True, False, [], []
        provisions.append(claim)
        capacities.append(capacity)
    return True, True, provisions, capacities


def _matches_topology(terms: Sequence[Mapping[str, frozenset[str]]] | None, labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms``: no term matches every node; else one term whose every
    expression holds."""
    if not terms:
        return True
    return any(all(labels.get(key) in values for key, values in term.items()) for term in terms)


def _enough_capacity(
    storage: StorageLister,
    provisioner: str,
    claim: PersistentVolumeClaim,
    class_name: str,
    node_labels: Mapping[str, str],
) -> tuple[bool, CSIStorageCapacity | None]:
    """``hasEnoughCapacity``: only a CSI driver that publishes capacity is checked; then the first
    CSIStorageCapacity of the class whose limit fits and whose topology selects the node."""
    if claim.request is None:
        return True, None
    driver = storage.csi_driver(provisioner)
    if driver is None or not driver.storage_capacity:
        return True, None
    for capacity in storage.csi_storage_capacities():
        limit = capacity.maximum_volume_size if capacity.maximum_volume_size is not None else capacity.capacity
        if capacity.storage_class_name != class_name or limit is None or limit < claim.request:
            continue
        if capacity.node_topology is not None and capacity.node_topology.matches(node_labels):
            return True, capacity
    return False, None


ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


def bind_volume_to_claim(pv: PersistentVolume, claim: PersistentVolumeClaim) -> PersistentVolume:
    """``GetBindVolumeToClaim``: the PV with its claimRef naming the claim (and the bound-by-controller
    annotation when it was not pre-bound to it); the same object when nothing changes."""
    raw = dict(pv.raw)
    meta = dict(raw.get("metadata") or {})
    spec = dict(raw.get("spec") or {})
    dirty = False
    ref = pv.claim_ref
    if ref is None or (ref.name, ref.namespace, ref.uid) != (claim.name, claim.namespace, claim.uid):
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": claim.namespace,
            "name": claim.name,
            "uid": claim.uid,
            "apiVersion": "v1",
            "resourceVersion": claim.resource_version,
        }
        dirty = True
    annotations = dict(meta.get("annotations") or {})
    if not _bound_to(pv, claim) and ANN_BOUND_BY_CONTROLLER not in annotations:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    if not dirty:
        return pv
    meta["annotations"] = annotations
    return PersistentVolume.from_dict({**raw, "metadata": meta, "spec": spec})


def with_selected_node(claim: PersistentVolumeClaim, node_name: str) -> PersistentVolumeClaim:
    """The claim annotated ``volume.kubernetes.io/selected-node: <node>`` (the provisioner's cue)."""
    raw = dict(claim.raw)
    meta = dict(raw.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANN_SELECTED_NODE: node_name}
    return PersistentVolumeClaim.from_dict({**raw, "metadata": meta})
