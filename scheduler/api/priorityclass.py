"""PriorityClasses (``scheduling.k8s.io/v1``) and the Priority admission plugin's defaulting of a pod's
priority from them (upstream ``plugin/pkg/admission/priority``). Pure: ``simulate`` applies it to
pods of a file, as the API server did to every live pod when it was created.

Validation is the API server's (``pkg/apis/scheduling/validation``): a class it would refuse does
not exist, so a pod naming it is refused as admission refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.fields import FieldError, as_mapping, int32_errors, opt_int, opt_str, required_name

__all__ = [
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SYSTEM_PRIORITY_CLASSES",
    "PriorityClass",
    "PriorityClasses",
    "admit_pod",
]

# Values above it are for the system classes (upstream ``scheduling.HighestUserDefinablePriority``).
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
_POLICIES = ("PreemptLowerPriority", "Never")


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """What admission reads of a PriorityClass; ``errors`` name each field the API server would refuse."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str | None = None
    errors: tuple[FieldError, ...] = ()

    @classmethod
    def from_dict(cls, obj: object) -> PriorityClass:
        errors: list[FieldError] = []
        root = as_mapping(obj, "priorityClass", errors)
        meta = as_mapping(root.get("metadata"), "metadata", errors)
        name = required_name(meta, errors)
        raw_value = root.get("value")
        if raw_value is None:
            errors.append(FieldError("value", "Required value"))
        value = opt_int(raw_value, "value", errors)
        if value is not None:
            errors.extend(int32_errors(value, "value", "PriorityClass.value"))
        default = root.get("globalDefault", False)
        if not isinstance(default, bool):
            errors.append(FieldError("globalDefault", f"must be a boolean, got {type(default).__name__}"))
            default = False
        policy = opt_str(root.get("preemptionPolicy"), "preemptionPolicy", errors)
        if policy is not None and policy not in _POLICIES:
            supported = ", ".join(f'"{p}"' for p in _POLICIES)
            errors.append(
                FieldError("preemptionPolicy", f'Unsupported value: "{policy}": supported values: {supported}')
            )
        value = value if value is not None and not errors else 0
        if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
            error = _system_class_error(name, value, default)
            if error:
                message = (
                    f"Forbidden: priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved "
                    f"for system use only. error: {error}"
                )
                errors.append(FieldError("metadata.name", message))
        elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
            message = (
                f"Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            )
            errors.append(FieldError("value", message))
        return cls(name, value, default, policy, tuple(errors))


# The classes every cluster creates at bootstrap (upstream ``SystemPriorityClasses``).
SYSTEM_PRIORITY_CLASSES = (
    PriorityClass("system-node-critical", SYSTEM_CRITICAL_PRIORITY + 1000),
    PriorityClass("system-cluster-critical", SYSTEM_CRITICAL_PRIORITY),
)


def _system_class_error(name: str, value: int, global_default: bool) -> str:
    """``IsKnownSystemPriorityClass``'s error, or "" for an exact system class."""
    for known in SYSTEM_PRIORITY_CLASSES:
        if known.name == name:
            if known.value != value:
                return f"value of {name} PriorityClass must be {known.value}"
            if known.global_default != global_default:
                return f"globalDefault of {name} PriorityClass must be {str(known.global_default).lower()}"
            return ""
    return f"{name} is not a known system priority class"


class PriorityClasses:
    """The cluster's classes by name: the system ones, then those of the input (valid ones only)."""

    def __init__(self, classes: Iterable[PriorityClass] = ()) -> None:
        self._by_name = {c.name: c for c in SYSTEM_PRIORITY_CLASSES}
        for c in classes:
            if not c.errors:
                self._by_name[c.name] = c

    def get(self, name: str) -> PriorityClass | None:
        return self._by_name.get(name)

    def global_default(self) -> PriorityClass | None:
        """``getDefaultPriorityClass``: with several (a race upstream), the one of lowest value."""
        defaults = [c for c in self._by_name.values() if c.global_default]
        return min(defaults, key=lambda c: c.value) if defaults else None


def admit_pod(obj: Mapping[str, Any], classes: PriorityClasses) -> tuple[Mapping[str, Any], FieldError | None]:
    """The Priority admission plugin on a pod's creation: ``spec.priority`` (and ``preemptionPolicy``)
    from its ``priorityClassName``, or from the global default class (else 0) when it names none.

    A pod that already has ``spec.priority`` and names no class (or a class the input does not hold)
    keeps it: a dump's pods were admitted already, and a hand-written file may set the value alone
    (the API server would refuse that; ``simulate`` takes it as written). Returns the pod and the
    error admission would refuse it with, naming the field.
    """
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return obj, None
    class_name = spec.get("priorityClassName")
    if class_name is not None and not isinstance(class_name, str):
        return obj, FieldError("spec.priorityClassName", f"must be a string, got {type(class_name).__name__}")
    has_priority = spec.get("priority") is not None
    if class_name:
        pc = classes.get(class_name)
        if pc is None:
            if has_priority:
                return obj, None
            return obj, FieldError("spec.priorityClassName", f"no PriorityClass with name {class_name} was found")
    else:
        if has_priority:
            return obj, None
        pc = classes.global_default()
    value = pc.value if pc is not None else 0
    given = spec.get("priority")
    if has_priority and given != value:
        message = (
            f"the integer value of priority ({given}) must not be provided in pod spec; "
            f"priority admission controller computed {value} from the given PriorityClass name"
        )
        return obj, FieldError("spec.priority", message)
    new_spec = {**spec, "priority": value}
    if pc is not None:
        new_spec["priorityClassName"] = pc.name
    # Without a class (none named, no default) the pod's own policy stays: upstream would refuse
    # "Never" there, a file is taken as written.
    policy = pc.preemption_policy if pc is not None else None
    if policy is not None:
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            message = (
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod spec; "
                f"priority admission controller computed {policy} from the given PriorityClass name"
            )
            return obj, FieldError("spec.preemptionPolicy", message)
        new_spec["preemptionPolicy"] = policy
    return {**obj, "spec": new_spec}, None
