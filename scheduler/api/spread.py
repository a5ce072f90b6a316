"""Topology spread constraints as the pod carries them, validated like ``validateTopologySpreadConstraints``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api.fields import FieldError, as_list, as_mapping, opt_int, opt_str
from scheduler.api.labels import NOTHING, Selector, parse_label_selector
from scheduler.api.names import label_key_errors

__all__ = [
    "DO_NOT_SCHEDULE",
    "HONOR",
    "IGNORE",
    "SCHEDULE_ANYWAY",
    "SpreadConstraint",
    "parse_spread_constraints",
]

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A ``v1.TopologySpreadConstraint`` with its defaults left unresolved (None = not set).

    A nil ``labelSelector`` is ``NOTHING`` (selects no pod), ``{}`` is ``EVERYTHING``.
    """

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: Selector
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


_WHEN = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
_POLICIES = (HONOR, IGNORE)


def _expressions(raw_sel: Mapping[str, object]) -> list[Mapping[str, object]]:
    exprs = raw_sel.get("matchExpressions")
    return [e for e in exprs if isinstance(e, Mapping)] if isinstance(exprs, list) else []


def _merged_by_api(raw_sel: Mapping[str, object], key: str, pod_labels: Mapping[str, str]) -> bool:
    """True when the selector holds ``key In [<pod's value>]``, the expression the API server merges."""
    return any(
        e.get("key") == key and e.get("operator") == "In" and e.get("values") == [pod_labels.get(key)]
        for e in _expressions(raw_sel)
    )


def _keys_in_both(
    raw_sel: Mapping[str, object], match_label_keys: list[str], pod_labels: Mapping[str, str]
) -> set[str]:
    """matchLabelKeys that ``ValidateMatchLabelKeysAndMismatchLabelKeys`` (1.34+ merge gate) rejects.

    That check runs on the selector after the API server appended ``key In [value]`` for every key
    the pod carries (a stored pod already has it, a file may not): a matchExpression whose key is
    in matchLabelKeys is an error when matchLabels or an earlier expression already used that key.
    A key the pod does not carry is never merged, so it alone never clashes.
    """
    labels = raw_sel.get("matchLabels")
    seen = {k for k in labels if isinstance(k, str)} if isinstance(labels, Mapping) else set()
    keys = [e.get("key") for e in _expressions(raw_sel)]
    keys += [k for k in match_label_keys if k in pod_labels and not _merged_by_api(raw_sel, k, pod_labels)]
    clashes: set[str] = set()
    for key in keys:
        if isinstance(key, str):
            if key in match_label_keys and key in seen:
                clashes.add(key)
            seen.add(key)
    return clashes


def parse_spread_constraints(
    raw: object, path: str, pod_labels: Mapping[str, str], errors: list[FieldError]
) -> tuple[SpreadConstraint, ...]:
    out: list[SpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(as_list(raw, path, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        max_skew = opt_int(obj.get("maxSkew"), f"{ipath}.maxSkew", errors)
        if max_skew is None or max_skew <= 0:
            errors.append(FieldError(f"{ipath}.maxSkew", "must be greater than zero"))
        key = opt_str(obj.get("topologyKey"), f"{ipath}.topologyKey", errors) or ""
        if not key:
            errors.append(FieldError(f"{ipath}.topologyKey", "can not be empty"))
        when = opt_str(obj.get("whenUnsatisfiable"), f"{ipath}.whenUnsatisfiable", errors) or ""
        if when not in _WHEN:
            errors.append(
                FieldError(
                    f"{ipath}.whenUnsatisfiable",
                    f'Unsupported value: "{when}": supported values: "DoNotSchedule", "ScheduleAnyway"',
                )
            )
        if (key, when) in seen:
            errors.append(
                FieldError(f"{ipath}.{{topologyKey, whenUnsatisfiable}}", f'Duplicate value: "{{{key}, {when}}}"')
            )
        seen.add((key, when))
        min_domains = opt_int(obj.get("minDomains"), f"{ipath}.minDomains", errors)
        if min_domains is not None:
            if min_domains <= 0:
                errors.append(FieldError(f"{ipath}.minDomains", "must be greater than zero"))
            if when != DO_NOT_SCHEDULE:  # checked on its own, as validateMinDomains does
                errors.append(
                    FieldError(
                        f"{ipath}.minDomains",
                        f"Invalid value: {min_domains}: can only use "
                        f"minDomains if whenUnsatisfiable=DoNotSchedule, not {when}",
                    )
                )
        policies: list[str | None] = []
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            value = opt_str(obj.get(field), f"{ipath}.{field}", errors)
            if value is not None and value not in _POLICIES:
                errors.append(
                    FieldError(
                        f"{ipath}.{field}",
                        f'Unsupported value: "{value}": supported values: "Honor", "Ignore"',
                    )
                )
            policies.append(value)
        raw_sel = obj.get("labelSelector")
        selector = parse_label_selector(raw_sel, f"{ipath}.labelSelector", errors)
        raw_keys = as_list(obj.get("matchLabelKeys"), f"{ipath}.matchLabelKeys", errors)
        keys = [k for k in raw_keys if isinstance(k, str)]
        clashes = _keys_in_both(raw_sel, keys, pod_labels) if isinstance(raw_sel, Mapping) else set()
        for j, k in enumerate(raw_keys):
            kpath = f"{ipath}.matchLabelKeys[{j}]"
            if not isinstance(k, str):
                errors.append(FieldError(kpath, "must be a string"))
                continue
            errors.extend(label_key_errors(k, kpath))
            if raw_sel is None:
                errors.append(FieldError(kpath, "Forbidden: must not be specified when labelSelector is not set"))
            elif k in clashes:
                errors.append(
                    FieldError(kpath, f'Invalid value: "{k}": exists in both matchLabelKeys and labelSelector')
                )
        out.append(
            SpreadConstraint(
                max_skew=max_skew or 0,
                topology_key=key,
                when_unsatisfiable=when,
                selector=selector if raw_sel is not None else NOTHING,
                min_domains=min_domains,
                node_affinity_policy=policies[0],
                node_taints_policy=policies[1],
                match_label_keys=tuple(keys),
            )
        )
    return tuple(out)
