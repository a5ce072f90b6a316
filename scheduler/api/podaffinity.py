"""Inter-pod affinity as the pod carries it (``spec.affinity.podAffinity`` / ``podAntiAffinity``).

Parsed once into upstream's processed form (``fwk.AffinityTerm``: namespaces, selector, topology
key, namespace selector) and validated like ``validatePodAffinity``/``validatePodAntiAffinity``.
Bad input never raises: each problem is a ``FieldError`` naming its field.

``matchLabelKeys``/``mismatchLabelKeys`` are kept but not applied: the API server merges them into
``labelSelector`` when it creates the pod (``mutatePodAffinity`` in the pod registry strategy) and
upstream's scheduler reads the stored selector as it is, so this module does the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.fields import FieldError, as_list, as_mapping, opt_int, opt_str
from scheduler.api.labels import NOTHING, Selector, parse_label_selector
from scheduler.api.names import label_key_errors

__all__ = [
    "NO_POD_AFFINITY",
    "AffinityTerm",
    "PodAffinity",
    "WeightedAffinityTerm",
    "parse_pod_affinity",
]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """``fwk.AffinityTerm``: a ``PodAffinityTerm`` with its namespaces resolved for its own pod.

    ``namespaces`` is the term's list, or the pod's own namespace when the list is empty and no
    ``namespaceSelector`` is set (``getNamespacesFromPodAffinityTerm``). A nil ``labelSelector`` or
    ``namespaceSelector`` is ``NOTHING``, ``{}`` is ``EVERYTHING``.
    """

    selector: Selector
    namespaces: frozenset[str]
    namespace_selector: Selector
    topology_key: str
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()

    def matches(self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str] | None) -> bool:
        """``AffinityTerm.Matches``: the pod's namespace is selected (by name, or its labels by the
        namespace selector; ``None`` labels are an empty set) and its labels match the selector."""
        if namespace in self.namespaces or self.namespace_selector.matches(namespace_labels or {}):
            return self.selector.matches(labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    """``fwk.WeightedAffinityTerm``: a preferred term and its weight (1..100 when valid)."""

    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """The pod's inter-pod (anti-)affinity terms, as upstream's ``PodInfo`` keeps them.

    ``declared`` is upstream's ``podWithAffinity``: ``podAffinity`` or ``podAntiAffinity`` is set at
    all (even empty), which puts the pod on its node's ``pods_with_affinity`` list.
    """

    required_affinity_terms: tuple[AffinityTerm, ...] = ()
    required_anti_affinity_terms: tuple[AffinityTerm, ...] = ()
    preferred_affinity_terms: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity_terms: tuple[WeightedAffinityTerm, ...] = ()
    declared: bool = False

    @property
    def has_required_anti_affinity(self) -> bool:
        """Upstream's ``podWithRequiredAntiAffinity``."""
        return bool(self.required_anti_affinity_terms)


NO_POD_AFFINITY = PodAffinity()


def _namespace_name_errors(name: str, path: str) -> list[FieldError]:
    """``ValidateNamespaceName``: a DNS-1123 label, reported as ``Invalid value`` on ``path``."""
    msgs: list[str] = []
    if len(name) > 63:
        msgs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(name):
        msgs.append("must not contain dots" if _DNS1123_SUBDOMAIN.match(name) else _DNS1123_LABEL_MSG)
    return [FieldError(path, f'Invalid value: "{name}": {msg}') for msg in msgs]


def _label_keys(raw: object, path: str, has_selector: bool, errors: list[FieldError]) -> list[str]:
    """``validateLabelKeys``: label names, forbidden without a labelSelector."""
    items = as_list(raw, path, errors)
    keys: list[str] = []
    for i, key in enumerate(items):
        if not isinstance(key, str):
            errors.append(FieldError(f"{path}[{i}]", "must be a string"))
        else:
            keys.append(key)
    if items and not has_selector:
        errors.append(FieldError(path, "Forbidden: must not be specified when labelSelector is not set"))
    elif has_selector:
        for i, key in enumerate(keys):
            errors.extend(label_key_errors(key, f"{path}[{i}]"))
    return keys


def _merged_expressions(raw_sel: Mapping[str, Any], keys: list[str], op: str, labels: Mapping[str, str]) -> list[Any]:
    """The expressions after the API server's merge: a stored pod already has them, a file may not."""
    exprs = raw_sel.get("matchExpressions")
    out = list(exprs) if isinstance(exprs, list) else []
    for key in keys:
        if key not in labels:
            continue
        merged = {"key": key, "operator": op, "values": [labels[key]]}
        if not any(isinstance(e, Mapping) and dict(e) == merged for e in out):
            out.append(merged)
    return out


def _check_label_keys(
    path: str,
    match_keys: list[str],
    mismatch_keys: list[str],
    raw_sel: object,
    labels: Mapping[str, str],
    errors: list[FieldError],
) -> None:
    """``ValidateMatchLabelKeysAndMismatchLabelKeys``, run (as the API server does) on the selector
    with matchLabelKeys/mismatchLabelKeys already merged in.

    The "exists in both" error is indexed on the term's own path (``...[0][1]``), as upstream's
    ``fldPath.Index(i)`` does.
    """
    if isinstance(raw_sel, Mapping):
        exprs = _merged_expressions(raw_sel, match_keys, "In", labels)
        exprs = _merged_expressions({"matchExpressions": exprs}, mismatch_keys, "NotIn", labels)
        position = {key: i for i, key in enumerate(match_keys)}
        ml = raw_sel.get("matchLabels")
        seen = {k for k in ml if isinstance(k, str)} if isinstance(ml, Mapping) else set()
        for e in exprs:
            key = e.get("key") if isinstance(e, Mapping) else None
            if not isinstance(key, str):
                continue
            if key in position and key in seen:
                message = f'Invalid value: "{key}": exists in both matchLabelKeys and labelSelector'
                errors.append(FieldError(f"{path}[{position[key]}]", message))
            seen.add(key)
    mismatch = set(mismatch_keys)
    for i, key in enumerate(match_keys):
        if key in mismatch:
            errors.append(
                FieldError(
                    f"{path}.matchLabelKeys[{i}]",
                    f'Invalid value: "{key}": exists in both matchLabelKeys and mismatchLabelKeys',
                )
            )


def _parse_term(
    raw: object, path: str, namespace: str, labels: Mapping[str, str], errors: list[FieldError]
) -> AffinityTerm:
    """``validatePodAffinityTerm`` + ``newAffinityTerm``: a term is always returned, errors recorded."""
    obj = as_mapping(raw, path, errors)
    raw_sel = obj.get("labelSelector")
    selector = parse_label_selector(raw_sel, f"{path}.labelSelector", errors)
    raw_ns_sel = obj.get("namespaceSelector")
    ns_selector = parse_label_selector(raw_ns_sel, f"{path}.namespaceSelector", errors)
    names: list[str] = []
    for i, name in enumerate(as_list(obj.get("namespaces"), f"{path}.namespaces", errors)):
        if not isinstance(name, str):
            errors.append(FieldError(f"{path}.namespaces[{i}]", "must be a string"))
            continue
        names.append(name)
        errors.extend(_namespace_name_errors(name, f"{path}.namespace"))  # sic: upstream's path
    match_keys = _label_keys(obj.get("matchLabelKeys"), f"{path}.matchLabelKeys", raw_sel is not None, errors)
    mismatch_keys = _label_keys(obj.get("mismatchLabelKeys"), f"{path}.mismatchLabelKeys", raw_sel is not None, errors)
    _check_label_keys(path, match_keys, mismatch_keys, raw_sel, labels, errors)
    topology_key = opt_str(obj.get("topologyKey"), f"{path}.topologyKey", errors) or ""
    if not topology_key:
        errors.append(FieldError(f"{path}.topologyKey", "Required value: can not be empty"))
    errors.extend(label_key_errors(topology_key, f"{path}.topologyKey"))
    # No namespaces and no namespaceSelector: the term's own pod's namespace.
    namespaces = frozenset(names) if names or raw_ns_sel is not None else frozenset((namespace,))
    return AffinityTerm(
        selector=selector,
        namespaces=namespaces,
        namespace_selector=ns_selector if raw_ns_sel is not None else NOTHING,
        topology_key=topology_key,
        match_label_keys=tuple(match_keys),
        mismatch_label_keys=tuple(mismatch_keys),
    )


def _parse_required(
    raw: object, path: str, namespace: str, labels: Mapping[str, str], errors: list[FieldError]
) -> tuple[AffinityTerm, ...]:
    items = as_list(raw, path, errors)
    return tuple(_parse_term(item, f"{path}[{i}]", namespace, labels, errors) for i, item in enumerate(items))


def _parse_preferred(
    raw: object, path: str, namespace: str, labels: Mapping[str, str], errors: list[FieldError]
) -> tuple[WeightedAffinityTerm, ...]:
    out: list[WeightedAffinityTerm] = []
    for i, item in enumerate(as_list(raw, path, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        weight = opt_int(obj.get("weight"), f"{ipath}.weight", errors)
        if weight is None or weight <= 0 or weight > 100:
            errors.append(FieldError(f"{ipath}.weight", f"Invalid value: {weight or 0}: must be in the range 1-100"))
        term = _parse_term(obj.get("podAffinityTerm"), f"{ipath}.podAffinityTerm", namespace, labels, errors)
        out.append(WeightedAffinityTerm(term, weight or 0))
    return tuple(out)


def parse_pod_affinity(
    affinity: Mapping[str, Any], path: str, namespace: str, labels: Mapping[str, str], errors: list[FieldError]
) -> PodAffinity:
    """``spec.affinity`` (already a mapping) → the pod's inter-pod affinity terms."""
    raw_aff = affinity.get("podAffinity")
    raw_anti = affinity.get("podAntiAffinity")
    if raw_aff is None and raw_anti is None:
        return NO_POD_AFFINITY
    aff = as_mapping(raw_aff, f"{path}.podAffinity", errors)
    anti = as_mapping(raw_anti, f"{path}.podAntiAffinity", errors)
    req, pref = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
    parsed = PodAffinity(
        required_affinity_terms=_parse_required(aff.get(req), f"{path}.podAffinity.{req}", namespace, labels, errors),
        required_anti_affinity_terms=_parse_required(
            anti.get(req), f"{path}.podAntiAffinity.{req}", namespace, labels, errors
        ),
        preferred_affinity_terms=_parse_preferred(
            aff.get(pref), f"{path}.podAffinity.{pref}", namespace, labels, errors
        ),
        preferred_anti_affinity_terms=_parse_preferred(
            anti.get(pref), f"{path}.podAntiAffinity.{pref}", namespace, labels, errors
        ),
        declared=True,
    )
    return _interned(parsed)


# Pods of one template carry equal terms: one shared object for them lets InterPodAffinity decide
# once per cycle whether those terms match the incoming pod (keyed by identity) and keeps one copy.
# Bounded: past the bound the table starts over (equal objects stay equal, only sharing is lost).
_INTERNED: dict[PodAffinity, PodAffinity] = {}
_INTERNED_MAX = 4096


def _interned(affinity: PodAffinity) -> PodAffinity:
    hit = _INTERNED.get(affinity)
    if hit is not None:
        return hit
    if len(_INTERNED) >= _INTERNED_MAX:
        _INTERNED.clear()
    _INTERNED[affinity] = affinity
    return affinity
