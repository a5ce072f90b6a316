"""PodDisruptionBudgets as preemption reads them (``policy/v1``), parsed once. No I/O.

The scheduler never evaluates ``minAvailable``/``maxUnavailable``: the disruption controller turns
them into ``status.disruptionsAllowed``, and upstream's ``filterPodsWithPDBViolation`` reads that
and ``status.disruptedPods`` only (with the selector and namespace to match victims).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api.fields import FieldError, as_mapping, opt_int, opt_str, required_name
from scheduler.api.labels import NOTHING, Selector, parse_label_selector

__all__ = ["PodDisruptionBudget"]


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """What preemption reads of a PDB; ``errors`` name each field the API server would refuse."""

    namespace: str
    name: str
    selector: Selector
    disruptions_allowed: int = 0
    # Pods whose eviction the API server has processed but the controller has not seen go yet.
    disrupted_pods: frozenset[str] = frozenset()
    errors: tuple[FieldError, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """The PDB covers a pod: same namespace, and a selector that is neither nil, empty nor invalid
        (upstream: "A PDB with a nil or empty selector matches nothing"; an invalid one neither)."""
        if namespace != self.namespace or self.selector.empty:
            return False
        return self.selector.matches(labels)

    @classmethod
    def from_dict(cls, obj: object) -> PodDisruptionBudget:
        errors: list[FieldError] = []
        root = as_mapping(obj, "podDisruptionBudget", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        spec = as_mapping(root.get("spec"), "spec", errors)
        status = as_mapping(root.get("status"), "status", errors)
        name = required_name(meta, errors)
        selector_errors: list[FieldError] = []
        selector = parse_label_selector(spec.get("selector"), "spec.selector", selector_errors)
        errors.extend(selector_errors)
        allowed = opt_int(status.get("disruptionsAllowed"), "status.disruptionsAllowed", errors) or 0
        disrupted = as_mapping(status.get("disruptedPods"), "status.disruptedPods", errors)
        return cls(
            namespace=opt_str(meta.get("namespace"), "metadata.namespace", errors) or "default",
            name=name,
            selector=NOTHING if selector_errors else selector,
            disruptions_allowed=allowed,
            disrupted_pods=frozenset(str(k) for k in disrupted),
            errors=tuple(errors),
        )
