"""What a pod requests and what a node offers, computed once when the object is parsed.

Upstream: ``component-helpers/resource/helpers.go`` (``PodRequests``: containers summed, sidecars
added, each init container a maximum, pod-level requests override, overhead added) and
``pkg/scheduler/framework/types.go`` (``Resource``, ``PodInfo.CalculateResource`` with the non-zero
defaults for scoring). SidecarContainers, PodLevelResources and InPlacePodVerticalScaling are on in
every minor (assigned pods count what their status says was resized to); how the resize counts
differs by minor (``PodRequestsRule``): a parsed pod carries its counts under each rule that gives
another answer, and a NodeInfo picks its minor's (``PodResources.under``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from scheduler.api.fields import FieldError, as_list, as_mapping, opt_int, opt_str
from scheduler.api.names import label_key_errors
from scheduler.api.quantity import milli_value, parse_quantity, value
from scheduler.features import PER_CONTAINER_RULE, PodRequestsRule

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "ContainerRequests",
    "HostPort",
    "PodResources",
    "Resource",
    "ResourceList",
    "container_requests",
    "is_extended_resource_name",
    "is_scalar_resource_name",
    "parse_node_allocatable",
    "parse_pod_resources",
    "request_value",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGE_PAGES_PREFIX = "hugepages-"
# ``schedutil.DefaultMilliCPURequest`` / ``DefaultMemoryRequest``: what scoring assumes for a
# container that names no cpu/memory request, so best-effort pods still spread.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

ResourceList = dict[str, Fraction]

_NON_MISSING: ResourceList = {
    CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: outside ``kubernetes.io/``, and a qualified name."""
    if _is_native(name) or name.startswith("requests."):
        return False
    return not label_key_errors("requests." + name, "")


def is_scalar_resource_name(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, prefixed native or attachable volumes."""
    return (
        is_extended_resource_name(name)
        or name.startswith(HUGE_PAGES_PREFIX)
        or "kubernetes.io/" in name
        or name.startswith("attachable-volumes-")
    )


def request_value(name: str, quantity: Fraction) -> int:
    """How the scheduler counts a quantity: millicores for cpu, whole units for everything else."""
    return milli_value(quantity) if name == CPU else value(quantity)


@dataclass(frozen=True, slots=True)
class Resource:
    """``framework.Resource``: cpu in millicores, bytes, a pod count, and scalar resources."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, rl: Mapping[str, Fraction]) -> Resource:
        """``NewResource``: each total converted once; names the scheduler does not count are dropped."""
        scalar = {name: value(q) for name, q in rl.items() if is_scalar_resource_name(name)}
        return cls(
            milli_cpu=milli_value(rl[CPU]) if CPU in rl else 0,
            memory=value(rl[MEMORY]) if MEMORY in rl else 0,
            ephemeral_storage=value(rl[EPHEMERAL_STORAGE]) if EPHEMERAL_STORAGE in rl else 0,
            allowed_pod_number=value(rl[PODS]) if PODS in rl else 0,
            scalar=scalar,
        )

    def is_zero_request(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.scalar)


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port with a hostPort, normalized as ``HostPortInfo`` keys it (""→0.0.0.0, ""→TCP)."""

    ip: str
    protocol: str
    port: int


@dataclass(frozen=True, slots=True)
class PodResources:
    """Everything resource-related the plugins and the cache read of one pod.

    ``requests`` is what NodeResourcesFit's PreFilter computes for the incoming pod (spec only);
    ``usage`` is what a NodeInfo counts for an assigned pod (status resources of a resize included);
    ``non0_cpu``/``non0_mem`` are the NodeInfo's non-zero totals; ``score_requests`` are the incoming
    pod's requests with the per-container defaults that the Fit scorers use (container requests of the
    spec only: upstream's Fit scorer ignores pod-level resources and resize status, see below).
    """

    requests: Resource = Resource()
    usage: Resource = Resource()
    non0_cpu: int = 0
    non0_mem: int = 0
    score_requests: Mapping[str, Fraction] = field(default_factory=dict)
    effective_requests: Mapping[str, Fraction] = field(default_factory=dict)
    host_ports: tuple[HostPort, ...] = ()
    # The same pod counted under another minor's ``PodRequestsRule``, for each rule whose answer
    # differs from the default rule's (1.35's): empty for a pod without resize status.
    variants: Mapping[PodRequestsRule, PodResources] = field(default_factory=dict)

    def under(self, rule: PodRequestsRule) -> PodResources:
        """The pod as a NodeInfo deciding under ``rule`` counts it."""
        return self.variants.get(rule, self)


# -- parsing ---------------------------------------------------------------------------------------


def _resource_list(raw: object, path: str, errors: list[FieldError], *, validate: bool = True) -> ResourceList:
    out: ResourceList = {}
    for name, q in as_mapping(raw, path, errors).items():
        try:
            amount = parse_quantity(q)
        except ValueError as exc:
            errors.append(FieldError(f"{path}[{name}]", f'Invalid value: "{q}": {exc}'))
            continue
        if validate and amount < 0:
            errors.append(FieldError(f"{path}[{name}]", f'Invalid value: "{q}": must be greater than or equal to 0'))
            continue
        out[str(name)] = amount
    return out


def _add(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for name, q in other.items():
        into[name] = into.get(name, Fraction(0)) + q


def _max_into(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for name, q in other.items():
        if name not in into or q > into[name]:
            into[name] = q


def _max_of(first: Mapping[str, Fraction] | None, *rest: Mapping[str, Fraction] | None) -> ResourceList:
    out: ResourceList = dict(first or {})
    for other in rest:
        _max_into(out, other or {})
    return out


def _with_defaults(reqs: Mapping[str, Fraction], defaults: Mapping[str, Fraction]) -> ResourceList:
    """``applyNonMissing``: a default only for a name the container does not list at all."""
    out = dict(reqs)
    for name, q in defaults.items():
        if name not in reqs:
            out[name] = q
    return out


@dataclass(frozen=True, slots=True)
class _Container:
    name: str
    requests: ResourceList
    init: bool
    restartable: bool  # an init container with restartPolicy Always (a sidecar)


@dataclass(frozen=True, slots=True)
class _Status:
    """A container status's resized requests (``resources.requests``, ``allocatedResources``)."""

    actuated: ResourceList | None  # None when the status has no ``resources`` at all
    actuated_requests: ResourceList | None  # None when ``resources.requests`` is missing too
    allocated: ResourceList | None  # None when the status has no ``allocatedResources``


def _containers(spec: Mapping[str, Any], key: str, errors: list[FieldError]) -> list[_Container]:
    out = []
    for i, raw in enumerate(as_list(spec.get(key), f"spec.{key}", errors)):
        path = f"spec.{key}[{i}]"
        c = as_mapping(raw, path, errors)
        resources = as_mapping(c.get("resources"), f"{path}.resources", errors)
        requests = _resource_list(resources.get("requests"), f"{path}.resources.requests", errors)
        restart = opt_str(c.get("restartPolicy"), f"{path}.restartPolicy", errors)
        init = key == "initContainers"
        out.append(_Container(str(c.get("name") or ""), requests, init, init and restart == "Always"))
    return out


ContainerRequests = _Container


def container_requests(spec: Mapping[str, Any]) -> tuple[_Container, ...]:
    """The pod's init containers, then its app containers, each with its own requests (what
    DynamicResources maps a DeviceClass-backed extended resource to, container by container)."""
    errors: list[FieldError] = []
    return (*_containers(spec, "initContainers", errors), *_containers(spec, "containers", errors))


def _statuses(status: Mapping[str, Any], errors: list[FieldError]) -> dict[str, _Status]:
    out: dict[str, _Status] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for i, raw in enumerate(as_list(status.get(key), f"status.{key}", errors)):
            path = f"status.{key}[{i}]"
            cs = as_mapping(raw, path, errors)
            resources = cs.get("resources")
            actuated = actuated_requests = allocated = None
            if resources is not None:
                res = as_mapping(resources, f"{path}.resources", errors)
                actuated = _resource_list(res.get("requests"), f"{path}.resources.requests", errors, validate=False)
                if res.get("requests") is not None:
                    actuated_requests = actuated
            if cs.get("allocatedResources") is not None:
                allocated = _resource_list(
                    cs.get("allocatedResources"), f"{path}.allocatedResources", errors, validate=False
                )
            # The first status of a name counts (``findContainerStatus``; the API keeps names unique).
            out.setdefault(str(cs.get("name") or ""), _Status(actuated, actuated_requests, allocated))
    return out


def _resize_infeasible(status: Mapping[str, Any]) -> bool:
    """``IsPodResizeInfeasible``: the first PodResizePending condition says Infeasible."""
    conditions = status.get("conditions")
    for cond in conditions if isinstance(conditions, list) else ():
        if isinstance(cond, Mapping) and cond.get("type") == "PodResizePending":
            return cond.get("reason") == "Infeasible"
    return False


_POD_LEVEL = (CPU, MEMORY)


def _pod_level_supported(name: str) -> bool:
    return name in _POD_LEVEL or name.startswith(HUGE_PAGES_PREFIX)


class _Pod:
    """The parsed inputs of ``PodRequests`` for one pod."""

    def __init__(self, spec: Mapping[str, Any], status: Mapping[str, Any], errors: list[FieldError]) -> None:
        self.containers = _containers(spec, "containers", errors)
        self.init_containers = _containers(spec, "initContainers", errors)
        self.statuses = _statuses(status, errors)
        self.resize_infeasible = _resize_infeasible(status)
        pod_res = as_mapping(spec.get("resources"), "spec.resources", errors)
        self.pod_level = _resource_list(pod_res.get("requests"), "spec.resources.requests", errors)
        self.overhead = _resource_list(spec.get("overhead"), "spec.overhead", errors)
        # The pod-level resize status (``status.resources``, ``status.allocatedResources``).
        self.pod_actuated: ResourceList | None = None
        self.pod_actuated_requests_set = False
        if status.get("resources") is not None:
            res = as_mapping(status.get("resources"), "status.resources", errors)
            self.pod_actuated = _resource_list(res.get("requests"), "status.resources.requests", errors, validate=False)
            self.pod_actuated_requests_set = res.get("requests") is not None
        self.pod_allocated_set = status.get("allocatedResources") is not None
        self.pod_allocated = _resource_list(
            status.get("allocatedResources"), "status.allocatedResources", errors, validate=False
        )

    @property
    def resized(self) -> bool:
        """Whether any resize status is there for a rule to read (else every rule counts the spec)."""
        return bool(self.statuses or self.pod_actuated is not None or self.pod_allocated_set or self.resize_infeasible)

    @property
    def pod_level_set(self) -> bool:
        """``IsPodLevelRequestsSet`` (PodLevelResources is on by default in 1.35)."""
        return any(_pod_level_supported(name) for name in self.pod_level)

    def _effective(self, c: _Container, use_status: bool) -> ResourceList:
        """1.35/1.36: a container's (or a sidecar's) own max of spec, actuated and allocated, when
        its status has ``resources`` (``determineEffectiveRequests``; Infeasible: status only)."""
        if not use_status or (c.init and not c.restartable):
            return c.requests
        st = self.statuses.get(c.name)
        if st is None or st.actuated is None:
            return c.requests
        if self.resize_infeasible:
            return _max_of(st.actuated, st.allocated)
        return _max_of(c.requests, st.actuated, st.allocated)

    def _allocated(self, c: _Container) -> ResourceList | None:
        """1.37 ``containerAllocatedRequests`` (every container kind)."""
        st = self.statuses.get(c.name)
        if st is not None and st.allocated is not None:
            return st.allocated
        return None if self.resize_infeasible else c.requests

    def _actuated(self, c: _Container) -> ResourceList | None:
        """1.37 ``containerActuatedRequests``: the runtime's requests, else the allocated ones."""
        st = self.statuses.get(c.name)
        if st is not None and st.actuated_requests is not None:
            return st.actuated_requests
        if st is not None and st.allocated is not None:
            return st.allocated
        return None if self.resize_infeasible else c.requests

    def _aggregate(
        self, pick: Callable[[_Container], ResourceList | None], defaults: Mapping[str, Fraction] | None
    ) -> ResourceList:
        """Containers summed, sidecars added, each init container a maximum (with the sidecars
        before it), of what ``pick`` says each container requests (``aggregateContainerResourcesByFn``)."""
        reqs: ResourceList = {}
        for c in self.containers:
            creqs = pick(c) or {}
            _add(reqs, _with_defaults(creqs, defaults) if defaults else creqs)
        sidecars: ResourceList = {}
        init: ResourceList = {}
        for c in self.init_containers:
            creqs = pick(c) or {}
            if defaults:
                creqs = _with_defaults(creqs, defaults)
            if c.restartable:
                _add(reqs, creqs)
                _add(sidecars, creqs)
                step = dict(sidecars)
            else:
                step = dict(creqs)
                _add(step, sidecars)
            _max_into(init, step)
        _max_into(reqs, init)
        return reqs

    def _max_of_sums(self, defaults: Mapping[str, Fraction] | None, pod_level_status: bool) -> ResourceList:
        """1.37 ``AggregateContainerRequests`` with status: the max of the summed spec, actuated and
        allocated requests (Infeasible: the last two); the pod-level status stands for both sums
        when it has allocated and actuated requests and InPlacePodLevelResourcesVerticalScaling is on."""
        spec = self._aggregate(lambda c: c.requests, defaults)
        allocated: ResourceList
        actuated: ResourceList
        if pod_level_status and self.pod_allocated_set and self.pod_actuated_requests_set:
            allocated, actuated = self.pod_allocated, self.pod_actuated or {}
        else:
            allocated = self._aggregate(self._allocated, defaults)
            actuated = self._aggregate(self._actuated, defaults)
        if self.resize_infeasible:
            return _max_of(actuated, allocated)
        return _max_of(spec, actuated, allocated)

    def requests(
        self,
        *,
        use_status: bool,
        defaults: Mapping[str, Fraction] | None = None,
        pod_level: bool = True,
        rule: PodRequestsRule = PER_CONTAINER_RULE,
    ) -> ResourceList:
        """``resourcehelper.PodRequests``; ``pod_level=False`` is its ``SkipPodLevelResources``,
        ``rule.pod_level_status`` its ``InPlacePodLevelResourcesVerticalScalingEnabled``."""
        if rule.max_of_sums and use_status:
            reqs = self._max_of_sums(defaults, rule.pod_level_status)
        else:
            reqs = self._aggregate(lambda c: self._effective(c, use_status), defaults)
        if pod_level and self.pod_level_set:
            self._apply_pod_level(reqs, use_status=use_status, rule=rule)
        _add(reqs, self.overhead)
        return reqs

    def _apply_pod_level(self, reqs: ResourceList, *, use_status: bool, rule: PodRequestsRule) -> None:
        """Pod-level requests override the containers', resized by the pod-level status with
        ``rule.pod_level_status`` (max of spec, status and allocated; Infeasible: the last two)."""
        resized = rule.pod_level_status and use_status and self.pod_actuated is not None
        effective = self.pod_level
        if resized:
            spec = {} if self.resize_infeasible else self.pod_level
            effective = _max_of(spec, self.pod_actuated, self.pod_allocated)
        if rule.max_of_sums:
            # 1.37 ``applyPodLevelResources``: every supported name of the effective list.
            for name, q in effective.items():
                if _pod_level_supported(name):
                    reqs[name] = q
            return
        # 1.35/1.36: each supported name of the spec, at its effective value (a missing name is 0).
        for name, q in self.pod_level.items():
            if _pod_level_supported(name):
                reqs[name] = effective.get(name, Fraction(0)) if resized else q


MAX_PORT = 65535


def _host_ports(spec: Mapping[str, Any], errors: list[FieldError]) -> tuple[HostPort, ...]:
    """``schedutil.GetHostPorts``: sidecar init containers first, then containers; hostPort > 0.

    A non-zero hostPort outside 1-65535 is an error, as ``validateContainerPorts`` says. Duplicate
    hostPorts within a pod (which ``AccumulateUniqueHostPorts`` refuses) are kept as upstream's
    scheduler keeps them: the differential tests feed such pods to upstream and compare.
    """
    out: list[HostPort] = []
    for key in ("initContainers", "containers"):
        for i, raw in enumerate(as_list(spec.get(key), f"spec.{key}", errors)):
            c = as_mapping(raw, f"spec.{key}[{i}]", errors)
            counted = key == "containers" or c.get("restartPolicy") == "Always"
            for j, raw_port in enumerate(as_list(c.get("ports"), f"spec.{key}[{i}].ports", errors)):
                path = f"spec.{key}[{i}].ports[{j}]"
                p = as_mapping(raw_port, path, errors)
                host_port = opt_int(p.get("hostPort"), f"{path}.hostPort", errors) or 0
                if host_port == 0:
                    continue
                if not 1 <= host_port <= MAX_PORT:
                    message = f"Invalid value: {host_port}: must be between 1 and 65535, inclusive"
                    errors.append(FieldError(f"{path}.hostPort", message))
                    continue
                if not counted:
                    continue
                ip = opt_str(p.get("hostIP"), f"{path}.hostIP", errors) or "0.0.0.0"
                protocol = opt_str(p.get("protocol"), f"{path}.protocol", errors) or "TCP"
                out.append(HostPort(ip, protocol, host_port))
    return tuple(out)


def _counted(pod: _Pod, rule: PodRequestsRule) -> tuple[ResourceList, int, int]:
    """What a NodeInfo counts for the pod (``PodInfo.CalculateResource``): the requests with resize
    status, and the non-zero cpu and memory (``getNonMissingContainerRequests``: with pod-level
    requests, defaults only for what is missing)."""
    status_requests = pod.requests(use_status=True, rule=rule)
    if pod.pod_level_set:
        defaults = {name: q for name, q in _NON_MISSING.items() if name not in status_requests}
    else:
        defaults = _NON_MISSING
    non0 = pod.requests(use_status=True, defaults=defaults, rule=rule) if defaults else status_requests
    return status_requests, milli_value(non0.get(CPU, Fraction(0))), value(non0.get(MEMORY, Fraction(0)))


# The rules a minor may count an assigned pod by (``Features.pod_requests_rule``), the default first.
_RULES = tuple(PodRequestsRule(pod_level_status=p, max_of_sums=m) for m in (False, True) for p in (False, True))


def parse_pod_resources(spec: Mapping[str, Any], status: Mapping[str, Any], errors: list[FieldError]) -> PodResources:
    """The pod's requests in every form the scheduler needs (see ``PodResources``)."""
    pod = _Pod(spec, status, errors)
    host_ports = _host_ports(spec, errors)
    spec_requests = pod.requests(use_status=False)
    status_requests, non0_cpu, non0_mem = _counted(pod, _RULES[0])
    parsed = PodResources(
        requests=Resource.from_list({k: v for k, v in spec_requests.items() if k != PODS}),
        usage=Resource.from_list({k: v for k, v in status_requests.items() if k != PODS}),
        non0_cpu=non0_cpu,
        non0_mem=non0_mem,
        # NodeResourcesFit's scorer is built without the feature flags (v1.35.4 fit.go
        # nodeResourceStrategyTypeMap sets neither enablePodLevelResources nor
        # enableInPlacePodVerticalScaling): it scores spec container requests only.
        score_requests=pod.requests(use_status=False, defaults=_NON_MISSING, pod_level=False),
        effective_requests=status_requests,
        host_ports=host_ports,
    )
    if not pod.resized:
        return parsed
    variants: dict[PodRequestsRule, PodResources] = {}
    for rule in _RULES[1:]:
        resized, resized_cpu, resized_mem = _counted(pod, rule)
        if (resized, resized_cpu, resized_mem) == (status_requests, non0_cpu, non0_mem):
            continue
        variants[rule] = replace(
            parsed,
            usage=Resource.from_list({k: v for k, v in resized.items() if k != PODS}),
            non0_cpu=resized_cpu,
            non0_mem=resized_mem,
            effective_requests=resized,
        )
    return replace(parsed, variants=variants) if variants else parsed


def parse_node_allocatable(status: Mapping[str, Any], errors: list[FieldError]) -> Resource:
    """``NodeInfo.SetNode``: ``status.allocatable`` (absent means nothing, not even one pod)."""
    return Resource.from_list(_resource_list(status.get("allocatable"), "status.allocatable", errors, validate=False))
