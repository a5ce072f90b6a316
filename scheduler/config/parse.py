"""Reading a KubeSchedulerConfiguration: every field checked, errors naming the field's path.

A bad config stops the scheduler at start-up with a ``ConfigError`` naming the field, as
kube-scheduler does; it never reaches a scheduling cycle. Reads the file and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scheduler.api.durations import nonnegative_seconds
from scheduler.boundedyaml import ReadError, read_text
from scheduler.config.default_plugins import default_multi_point
from scheduler.config.extenders import ExtenderConfigError, check_tls, parse_extenders
from scheduler.config.scheme import ArgsKindError, load_yaml_strict, strict_errors
from scheduler.config.types import (
    API_VERSION,
    SPREAD_SCHEDULER_NAME,
    ConfigError,
    LeaderElection,
    PluginRef,
    ProfileConfig,
    SchedulerConfig,
)
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework.interface import Handle
from scheduler.framework.runtime import EXTENSION_POINTS
from scheduler.plugins.registry import REGISTRY, registry

__all__ = ["check_same_queue_sort", "load_config", "parse_config", "upstream_config"]


def _mapping(value: object, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: must be an object")
    return value


def _list(value: object, path: str) -> Sequence[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{path}: must be a list")
    return value


def _int(value: object, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{path}: Invalid value: {value!r}: must be an integer in [{low}, {high}]")
    return value


def _plugin_refs(value: object, path: str, *, disabled: bool = False) -> list[PluginRef]:
    """An enabled or disabled list. Upstream never looks a disabled name up: ``*`` and plugins we do
    not ship (``VolumeBinding``...) may be disabled; only enabled names must exist."""
    refs: list[PluginRef] = []
    for i, item in enumerate(_list(value, path)):
        obj = _mapping(item, f"{path}[{i}]")
        name = obj.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{path}[{i}].name: Required value")
        if not disabled and name not in REGISTRY:
            raise ConfigError(
                f'{path}[{i}].name: Invalid value: "{name}": plugin does not exist '
                f"(known: {', '.join(sorted(REGISTRY))})"
            )
        weight = obj.get("weight", 0)
        refs.append(PluginRef(name, _int(weight, f"{path}[{i}].weight", 0, 2**31 - 1)))
    return refs


def _resolve_profile(raw: Mapping[str, Any], path: str, features: Features) -> ProfileConfig:
    name = raw.get("schedulerName", SPREAD_SCHEDULER_NAME)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}.schedulerName: Required value")
    pct = raw.get("percentageOfNodesToScore")
    if pct is not None:
        pct = _int(pct, f"{path}.percentageOfNodesToScore", 0, 100)
    plugins = _mapping(raw.get("plugins"), f"{path}.plugins")  # unknown points: refused by strict decoding

    # multiPoint: upstream defaults, minus what the user disables, plus what the user enables.
    plugin_classes = registry(features)
    multi_cfg = _mapping(plugins.get("multiPoint"), f"{path}.plugins.multiPoint")
    disabled = {
        r.name for r in _plugin_refs(multi_cfg.get("disabled"), f"{path}.plugins.multiPoint.disabled", disabled=True)
    }
    multi = [PluginRef(n, w) for n, w in default_multi_point(features) if "*" not in disabled and n not in disabled]
    seen_multi: set[str] = set()
    for i, ref in enumerate(_plugin_refs(multi_cfg.get("enabled"), f"{path}.plugins.multiPoint.enabled")):
        if ref.name in seen_multi:  # upstream: plugin "<name>" already registered
            raise ConfigError(f'{path}.plugins.multiPoint.enabled[{i}].name: Duplicate value: "{ref.name}"')
        seen_multi.add(ref.name)
        idx = next((pos for pos, m in enumerate(multi) if m.name == ref.name), None)
        if idx is None:
            multi.append(ref)
        else:
            # mergePluginSet replaces the default entry as a whole: no weight given means weight 1.
            multi[idx] = ref

    points: dict[str, list[str]] = {}
    weights: dict[str, int] = {m.name: m.weight for m in multi}
    for point in EXTENSION_POINTS:
        cfg = _mapping(plugins.get(point), f"{path}.plugins.{point}")
        specific = _plugin_refs(cfg.get("enabled"), f"{path}.plugins.{point}.enabled")
        off = {r.name for r in _plugin_refs(cfg.get("disabled"), f"{path}.plugins.{point}.disabled", disabled=True)}
        specific_names = [r.name for r in specific]
        multi_here = [
            m.name
            for m in multi
            if "*" not in off and m.name not in off and _class_implements(plugin_classes[m.name], point)
        ]
        ordered = [n for n in specific_names if n in multi_here]
        ordered += [n for n in multi_here if n not in specific_names]
        ordered += [n for n in specific_names if n not in multi_here]
        for i, ref in enumerate(specific):
            if not _class_implements(plugin_classes[ref.name], point):
                raise ConfigError(
                    f'{path}.plugins.{point}.enabled[{i}].name: Invalid value: "{ref.name}": '
                    f"plugin does not extend {point}"
                )
            if point == "score":
                # getScoreWeights reads score.enabled before multiPoint: its weight wins, 0 means 1.
                weights[ref.name] = ref.weight
        if len(set(ordered)) != len(ordered):
            raise ConfigError(f"{path}.plugins.{point}.enabled: Duplicate value: a plugin is listed twice")
        points[point] = ordered
    if len(points["queueSort"]) != 1:
        raise ConfigError(
            f"{path}.plugins.queueSort: Invalid value: exactly one queue sort plugin must be enabled, "
            f"got {points['queueSort']}"
        )
    if not points["bind"]:
        raise ConfigError(f"{path}.plugins.bind: Invalid value: at least one bind plugin is needed")

    args: dict[str, Mapping[str, Any]] = {}
    for i, item in enumerate(_list(raw.get("pluginConfig"), f"{path}.pluginConfig")):
        obj = _mapping(item, f"{path}.pluginConfig[{i}]")
        pname = _string(obj.get("name"), f"{path}.pluginConfig[{i}].name")
        if pname not in REGISTRY:
            raise ConfigError(f'{path}.pluginConfig[{i}].name: Invalid value: "{pname}": plugin does not exist')
        if pname in args:
            raise ConfigError(f'{path}.pluginConfig[{i}].name: Duplicate value: "{pname}"')
        args[pname] = _mapping(obj.get("args"), f"{path}.pluginConfig[{i}].args")
    return ProfileConfig(name, pct, points, weights, args)


_POINT_METHODS = {
    "queueSort": ("less",),
    "preEnqueue": ("pre_enqueue",),
    "preFilter": ("pre_filter",),
    "filter": ("filter",),
    "postFilter": ("post_filter",),
    "preScore": ("pre_score",),
    "score": ("score",),
    "reserve": ("reserve", "unreserve"),
    "permit": ("permit",),
    "preBind": ("pre_bind",),
    "bind": ("bind",),
    "postBind": ("post_bind",),
}


def _class_implements(cls: object, point: str) -> bool:
    """Whether a plugin class has the methods of ``point`` (checked on the class, before any instance)."""
    return all(callable(getattr(cls, m, None)) for m in _POINT_METHODS[point])


def parse_config(
    doc: object, source: str = "config", *, duplicates: Sequence[str] = (), features: Features = DEFAULT_FEATURES
) -> SchedulerConfig:
    """The typed configuration of a decoded document, after upstream's strict decoding and validation.

    ``features`` (``scheduler.features``) choose the default profile and reach every plugin.

    ``duplicates`` are the repeated-key errors the YAML reader found (``load_config``); they are
    reported together with the unknown fields, in one ``strict decoding error``, as upstream does.
    """
    root = _mapping(doc, source)
    try:
        strict = [*duplicates, *strict_errors(root)]
    except ArgsKindError as exc:
        raise ConfigError(str(exc)) from exc
    if strict:
        raise ConfigError("strict decoding error: " + ", ".join(strict))
    api_version = root.get("apiVersion", API_VERSION)
    if api_version != API_VERSION:
        raise ConfigError(f'apiVersion: Unsupported value: "{api_version}": supported values: "{API_VERSION}"')
    kind = root.get("kind", "KubeSchedulerConfiguration")
    if kind != "KubeSchedulerConfiguration":
        raise ConfigError(f'kind: Unsupported value: "{kind}": supported values: "KubeSchedulerConfiguration"')
    raw_profiles = _list(root.get("profiles"), "profiles") or [{}]
    profiles = [
        _resolve_profile(_mapping(p, f"profiles[{i}]"), f"profiles[{i}]", features) for i, p in enumerate(raw_profiles)
    ]
    seen: set[str] = set()
    for i, prof in enumerate(profiles):
        if prof.scheduler_name in seen:
            raise ConfigError(f'profiles[{i}].schedulerName: Duplicate value: "{prof.scheduler_name}"')
        seen.add(prof.scheduler_name)
    pct = root.get("percentageOfNodesToScore")
    conn = _mapping(root.get("clientConnection"), "clientConnection")
    le = _mapping(root.get("leaderElection"), "leaderElection")
    for key in ("acceptContentTypes", "contentType"):  # read by nobody, typed as upstream types them
        _string(conn.get(key), f"clientConnection.{key}")
    for key in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"):
        _bool(root.get(key), key, default=False)
    if root.get("parallelism") is not None:
        _int(root["parallelism"], "parallelism", 1, 2**31 - 1)
    initial = root.get("podInitialBackoffSeconds", 1)
    maximum = root.get("podMaxBackoffSeconds", 10)
    _int(initial, "podInitialBackoffSeconds", 1, 2**31 - 1)
    _int(maximum, "podMaxBackoffSeconds", 0, 2**31 - 1)
    if maximum and maximum < initial:
        raise ConfigError(
            f"podMaxBackoffSeconds: Invalid value: {maximum}: must be greater than or equal to PodInitialBackoffSeconds"
        )
    config = SchedulerConfig(
        profiles=profiles,
        percentage_of_nodes_to_score=None if pct is None else _int(pct, "percentageOfNodesToScore", 0, 100),
        pod_initial_backoff_seconds=float(initial),
        pod_max_backoff_seconds=float(maximum),
        qps=_number(conn.get("qps", 50), "clientConnection.qps"),
        burst=_int(conn.get("burst", 100), "clientConnection.burst", 0, 2**31 - 1),
        kubeconfig=_string(conn.get("kubeconfig"), "clientConnection.kubeconfig") or None,
        leader_election=_leader_election(le, profiles[0].scheduler_name),
        features=features,
    )
    try:
        config.extenders = parse_extenders(root.get("extenders"))
        for i, ext in enumerate(config.extenders):
            check_tls(ext, f"extenders[{i}]")
    except ExtenderConfigError as exc:
        raise ConfigError(str(exc)) from exc
    check_same_queue_sort(config.profiles)
    _validate_plugin_args(config.profiles, features)
    return config


def _validate_plugin_args(profiles: Sequence[ProfileConfig], features: Features) -> None:
    """Instantiate every used plugin once, so bad args stop the start-up naming the field, not the first pod.

    Our plugins validate their args in ``__init__`` (upstream: ``validation_pluginargs.go``).
    """
    plugin_classes = registry(features)
    for i, prof in enumerate(profiles):
        handle = Handle()
        for name in sorted({name for names in prof.points.values() for name in names}):
            try:
                plugin_classes[name](prof.plugin_args.get(name, {}), handle, features)
            except ValueError as exc:
                raise ConfigError(f"profiles[{i}].pluginConfig[{name}].args: {exc}") from exc


def _number(value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{path}: Invalid value: {value!r}: must be a number")
    return float(value)


def _string(value: object, path: str) -> str:
    """A string field; unset is empty. (A number or a bool is refused, as strict decoding does.)"""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"{path}: Invalid value: {value!r}: must be a string")
    return value


def _bool(value: object, path: str, *, default: bool) -> bool:
    """A bool field: ``"false"`` is a string, not false (``bool("false")`` is True)."""
    if value is None:
        return default
    if not isinstance(value, bool):
        shown = f'"{value}"' if isinstance(value, str) else repr(value)
        raise ConfigError(f"{path}: Invalid value: {shown}: must be a boolean")
    return value


LEASES_LOCK = "leases"  # client-go resourcelock.LeasesResourceLock: the only lock left upstream
JITTER_FACTOR = 1.2  # client-go leaderelection.JitterFactor


def _leader_election(le: Mapping[str, Any], default_name: str) -> LeaderElection:
    """The ``leaderElection`` block, typed strictly, defaulted as kube-scheduler's v1 defaults, validated."""
    raw = {key: le.get(key) for key in ("leaseDuration", "renewDeadline", "retryPeriod")}
    lock = _string(le.get("resourceLock"), "leaderElection.resourceLock") or LEASES_LOCK  # upstream's default
    settings = LeaderElection(
        leader_elect=_bool(le.get("leaderElect"), "leaderElection.leaderElect", default=True),
        lease_duration=_duration(raw["leaseDuration"], "leaderElection.leaseDuration", 15.0),
        renew_deadline=_duration(raw["renewDeadline"], "leaderElection.renewDeadline", 10.0),
        retry_period=_duration(raw["retryPeriod"], "leaderElection.retryPeriod", 2.0),
        resource_namespace=_string(le.get("resourceNamespace"), "leaderElection.resourceNamespace"),
        resource_name=_string(le.get("resourceName"), "leaderElection.resourceName") or default_name,
    )
    _validate_leader_election(settings, lock)
    _check_elector_timings(settings, raw["renewDeadline"])
    return settings


def _validate_leader_election(le: LeaderElection, lock: str) -> None:
    """component-base ``ValidateLeaderElectionConfiguration``, checked only with leaderElect on.

    An empty resourceNamespace is resolved at start-up (the pod's namespace), so it is not required
    here; resourceName is defaulted above, as upstream defaults it before validating.
    """
    if not le.leader_elect:
        return
    for name, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= 0:
            raise ConfigError(f"leaderElection.{name}: Invalid value: {value}s: must be greater than zero")
    if le.lease_duration <= le.renew_deadline:
        raise ConfigError(
            f"leaderElection.leaseDuration: Invalid value: {le.renew_deadline}s: must be greater than `RenewDeadline`"
        )
    if not lock:
        raise ConfigError("leaderElection.resourceLock: Required value")
    if not le.resource_name:
        raise ConfigError("leaderElection.resourceName: Required value")
    if lock != LEASES_LOCK:  # client-go resourcelock.New: "<lock> lock is removed, migrate to leases"
        raise ConfigError(
            f'leaderElection.resourceLock: Unsupported value: "{lock}": supported values: "{LEASES_LOCK}"'
        )


def _check_elector_timings(le: LeaderElection, renew_text: object) -> None:
    """client-go ``NewLeaderElector``'s check, which kube-scheduler meets only when it starts electing.

    Renewals come every retryPeriod jittered by up to 1.2 x; a renewDeadline no longer than that
    lets the leader miss its own deadline between two renewals and drop a lease it holds. Compared
    in whole nanoseconds, as Go's ``time.Duration(JitterFactor*float64(RetryPeriod))`` truncates.
    """
    if not le.leader_elect:
        return
    renew_ns, retry_ns = round(le.renew_deadline * 1e9), round(le.retry_period * 1e9)
    if renew_ns <= int(JITTER_FACTOR * retry_ns):
        raise ConfigError(
            f'leaderElection.renewDeadline: Invalid value: "{renew_text if renew_text is not None else "10s"}": '
            "renewDeadline must be greater than retryPeriod*JitterFactor"
        )


def _duration(value: object, path: str, default: float) -> float:
    """A ``metav1.Duration``: Go's ``time.ParseDuration`` (``15s``, ``1m30s``, ``500ms``), in seconds.

    A negative one is refused here with the rest, before ``must be greater than zero`` would be.
    """
    if value is None:
        return default
    if not isinstance(value, str):  # metav1.Duration decodes from a JSON string only
        raise ConfigError(f"{path}: must be a duration such as 15s")
    seconds = nonnegative_seconds(value)
    if seconds is None:
        raise ConfigError(f'{path}: Invalid value: "{value}": must be a duration such as 15s')
    return seconds


def load_config(path: str | Path | None, features: Features = DEFAULT_FEATURES) -> SchedulerConfig:
    """The file's configuration, or the default profile when ``path`` is None, decided with ``features``."""
    if path is None:
        return parse_config({"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration"}, features=features)
    try:
        doc, duplicates = load_yaml_strict(read_text(path))
    except ReadError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc}") from exc
    return parse_config(doc, str(path), duplicates=duplicates, features=features)


def upstream_config(
    plugin_config: list[dict[str, Any]] | None = None,
    *,
    post_filter: bool = True,
    features: Features = DEFAULT_FEATURES,
    **fields: Any,
) -> dict[str, Any]:
    """Our default profile spelled out as a KubeSchedulerConfiguration that kube-scheduler reads too.

    ``multiPoint`` disables upstream's defaults and enables exactly our plugins with our weights, so
    the oracle, the benchmarks and a side-by-side kube-scheduler run the same profile as we do. Our
    list leaves DefaultPreemption out, so PostFilter is DynamicResources' alone on both sides;
    ``post_filter=False`` turns it off on both, for a caller that compares without it. ``features``
    pick the minor whose default profile is spelled out.
    """
    enabled = [
        {"name": name, "weight": weight} if weight else {"name": name} for name, weight in default_multi_point(features)
    ]
    profile: dict[str, Any] = {
        "schedulerName": SPREAD_SCHEDULER_NAME,
        "plugins": {
            "multiPoint": {"disabled": [{"name": "*"}], "enabled": enabled},
        },
    }
    if not post_filter:
        profile["plugins"]["postFilter"] = {"disabled": [{"name": "*"}]}
    if plugin_config:
        profile["pluginConfig"] = plugin_config
    return {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration", **fields, "profiles": [profile]}


def check_same_queue_sort(profiles: Sequence[ProfileConfig]) -> None:
    """One queue serves every profile, so all must order it alike (upstream ``cfgValidator``)."""
    if not profiles:
        return
    first = profiles[0]
    first_sort = first.points["queueSort"][0]
    for prof in profiles[1:]:
        name, queue_sort = prof.scheduler_name, prof.points["queueSort"][0]
        if queue_sort != first_sort:
            message = f'"{queue_sort}", first: "{first_sort}"'
            raise ConfigError(f'different queue sort plugins for profile "{name}": {message}')
        if prof.plugin_args.get(queue_sort, {}) != first.plugin_args.get(first_sort, {}):
            raise ConfigError(f'different queue sort plugin args for profile "{name}"')
