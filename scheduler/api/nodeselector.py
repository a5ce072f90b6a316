"""Node selector terms (``component-helpers/scheduling/corev1/nodeaffinity``), parsed once.

Two kinds of problem are kept apart, as upstream keeps them apart:

* what the API server rejects (an unknown operator, ``Gt`` without exactly one value) goes to the
  caller's ``errors`` and makes the pod invalid;
* what the API server accepts but the selector parser refuses (``Gt`` with ``"abc"``) only makes
  that one term match nothing (``parse_error``), which is what kube-scheduler does for
  "backwards compatibility".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api.fields import FieldError, as_list, as_mapping, opt_int, opt_str
from scheduler.api.labels import Requirement, Selector, make_selector, parse_requirement

__all__ = [
    "FieldRequirement",
    "NodeSelector",
    "NodeSelectorTerm",
    "PreferredTerm",
    "parse_node_selector",
    "parse_preferred_terms",
]

NODE_NAME_FIELD = "metadata.name"


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One ``matchFields`` entry: ``key In [value]`` or ``key NotIn [value]``."""

    key: str
    negated: bool
    value: str

    def matches(self, node_name: str) -> bool:
        actual = node_name if self.key == NODE_NAME_FIELD else ""
        return (actual != self.value) if self.negated else (actual == self.value)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed together; ``labels``/``fields`` are None when the term has none of that kind."""

    labels: Selector | None
    fields: tuple[FieldRequirement, ...] | None
    # What upstream's nodeaffinity parser refuses though the API server lets it in, as that parser words
    # it: the path relative to the term list ("[0].matchExpressions[1].values[0]: Invalid value: ...").
    parse_errors: tuple[str, ...] = ()

    @property
    def parse_error(self) -> str | None:
        return "; ".join(self.parse_errors) or None

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        if self.parse_error is not None:
            return False
        if self.labels is not None and not self.labels.matches(node_labels):
            return False
        # Quirk kept from upstream: with an empty node name matchFields are not checked.
        return not (self.fields is not None and node_name and not all(f.matches(node_name) for f in self.fields))

    def name_in_values(self) -> frozenset[str] | None:
        """Node names this term allows through ``metadata.name In``, or None when it has no such field.

        Several ``In`` fields in one term intersect (PreFilter narrowing, spec 2.2).
        """
        names: frozenset[str] | None = None
        for f in self.fields or ():
            if f.key == NODE_NAME_FIELD and not f.negated:
                names = frozenset((f.value,)) if names is None else names & {f.value}
        return names


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms ORed; terms with no requirement at all were dropped, so zero terms match no node."""

    terms: tuple[NodeSelectorTerm, ...]
    has_empty_term: bool = False

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        return any(term.matches(node_name, node_labels) for term in self.terms)

    @property
    def parse_errors(self) -> tuple[str, ...]:
        return tuple(t.parse_error for t in self.terms if t.parse_error is not None)


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm


def _parse_term(raw: object, path: str, errors: list[FieldError], rel: str) -> NodeSelectorTerm | None:
    """One NodeSelectorTerm, or None when it has neither matchExpressions nor matchFields.

    ``rel`` is the term's path as upstream's parser names it (``[i]`` in a preferred list).
    """
    obj = as_mapping(raw, path, errors)
    exprs = as_list(obj.get("matchExpressions"), f"{path}.matchExpressions", errors)
    fields = as_list(obj.get("matchFields"), f"{path}.matchFields", errors)
    if not exprs and not fields:
        return None
    parse_errs: list[FieldError] = []
    reqs: list[Requirement] = []
    for i, expr in enumerate(exprs):
        epath = f"{path}.matchExpressions[{i}]"
        e = as_mapping(expr, epath, errors)
        req = parse_requirement(
            e.get("key"),
            e.get("operator"),
            e.get("values"),
            epath,
            errors,
            numeric=True,
            value_errors=parse_errs,
        )
        if req is not None:
            reqs.append(req)
    field_reqs: list[FieldRequirement] = []
    for i, fld in enumerate(fields):
        fpath = f"{path}.matchFields[{i}]"
        f = as_mapping(fld, fpath, errors)
        key = opt_str(f.get("key"), f"{fpath}.key", errors)
        op = opt_str(f.get("operator"), f"{fpath}.operator", errors)
        values = as_list(f.get("values"), f"{fpath}.values", errors)
        if key != NODE_NAME_FIELD:
            errors.append(FieldError(f"{fpath}.key", f'Invalid value: "{key}": not a valid field selector key'))
            continue
        if op not in ("In", "NotIn"):
            errors.append(FieldError(f"{fpath}.operator", f'Invalid value: "{op}": not a valid selector operator'))
            continue
        if len(values) != 1 or not isinstance(values[0], str):
            errors.append(
                FieldError(
                    f"{fpath}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            )
            continue
        field_reqs.append(FieldRequirement(key, op == "NotIn", values[0]))
    problems = tuple(f"{rel}{e.path[len(path) :]}: {e.message}" for e in parse_errs)
    return NodeSelectorTerm(make_selector(reqs) if exprs else None, tuple(field_reqs) if fields else None, problems)


def parse_node_selector(raw: object, path: str, errors: list[FieldError]) -> NodeSelector | None:
    """``requiredDuringSchedulingIgnoredDuringExecution``: None when absent."""
    if raw is None:
        return None
    obj = as_mapping(raw, path, errors)
    raw_terms = as_list(obj.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms", errors)
    if not raw_terms:
        errors.append(
            FieldError(f"{path}.nodeSelectorTerms", "Required value: must have at least one node selector term")
        )
    terms = [
        _parse_term(t, f"{path}.nodeSelectorTerms[{i}]", errors, f"nodeSelectorTerms[{i}]")
        for i, t in enumerate(raw_terms)
    ]
    return NodeSelector(tuple(t for t in terms if t is not None), has_empty_term=None in terms)


def parse_preferred_terms(raw: object, path: str, errors: list[FieldError]) -> tuple[PreferredTerm, ...]:
    """``preferredDuringSchedulingIgnoredDuringExecution``; weight-0 and empty terms are dropped."""
    out: list[PreferredTerm] = []
    for i, item in enumerate(as_list(raw, path, errors)):
        ipath = f"{path}[{i}]"
        obj = as_mapping(item, ipath, errors)
        weight = opt_int(obj.get("weight"), f"{ipath}.weight", errors)
        if weight is None or not 1 <= weight <= 100:
            errors.append(FieldError(f"{ipath}.weight", "must be in the range 1-100"))
        term = _parse_term(obj.get("preference"), f"{ipath}.preference", errors, f"[{i}]")
        if weight and term is not None:
            out.append(PreferredTerm(weight, term))
    return tuple(out)
