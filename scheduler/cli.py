"""Command line: ``spread-scheduler simulate | run | explain | skew | rebalance | version``, and the
read-only ones as the kubectl plugin ``kubectl-spread`` (``kubectl spread skew|explain|rebalance``)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import ipaddress
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from scheduler import __version__, logs
from scheduler.boundedyaml import ReadError
from scheduler.config import ConfigError, SchedulerConfig, load_config
from scheduler.features import (
    NEWEST,
    RELEASES,
    SUPPORTED,
    FeatureGateError,
    Features,
    features_at,
    parse_feature_gates,
    supported_minor,
)
from scheduler.simulate import (
    Simulation,
    load_objects,
    rename_scheduler,
    render_table,
    replay_objects,
    to_json,
)

__all__ = ["kubectl_main", "main"]

log = structlog.get_logger("spread-scheduler")

UPSTREAM_VERSION = "v1.35.4"


def _version() -> str:
    """What ``version`` and ``--version`` print."""
    return f"spread-scheduler {__version__} (kube-scheduler {UPSTREAM_VERSION})"


# simulate's exit codes (docs/simulate.md): 2 is also argparse's for a bad command line.
EXIT_NOTHING_TO_SCHEDULE = 1
EXIT_BAD_INPUT = 2
EXIT_UNSCHEDULABLE = 3


def _offline_config(args: argparse.Namespace) -> SchedulerConfig | int:
    """``--config`` decided as ``--kube-version`` with ``--feature-gates``; exit 2 after saying why not.

    A gate error reads as kube-scheduler's flag error: ``invalid argument ... for "--feature-gates" flag``.
    """
    try:
        minor = supported_minor(args.kube_version or NEWEST)
    except ValueError as exc:
        print(f"spread-scheduler: --kube-version: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        features = features_at(minor, parse_feature_gates(args.feature_gates))
    except ValueError as exc:
        print(_gates_error(args.feature_gates, exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    return _load(args.config, features)


def _gates_error(value: str, exc: ValueError) -> str:
    return f'spread-scheduler: invalid argument "{value}" for "--feature-gates" flag: {exc}'


def _load(path: str | None, features: Features) -> SchedulerConfig | int:
    try:
        return load_config(path, features)
    except ConfigError as exc:
        print(f"spread-scheduler: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _provisional_config(path: str | None) -> SchedulerConfig:
    """The file read at the first minor that accepts it, before the API server says which minor is
    ours: only its ``clientConnection`` is used. Raises the oldest minor's ``ConfigError`` when none does."""
    first: ConfigError | None = None
    for minor in SUPPORTED:
        try:
            return load_config(path, features_at(minor))
        except ConfigError as exc:
            first = first or exc
    assert first is not None
    raise first


def _live_config(args: argparse.Namespace) -> SchedulerConfig | int:
    """``--config`` for a command reading the live cluster: at ``--kube-version`` when given, else at the
    API server's minor (``scheduler.kube.kube_version``); an exit code after printing why not."""
    if args.kube_version is not None:
        return _offline_config(args)
    from scheduler.kube.client.version import VersionError  # noqa: PLC0415
    from scheduler.kube.kube_version import KubeVersion, decide_live  # noqa: PLC0415

    try:
        gates = parse_feature_gates(args.feature_gates)
    except FeatureGateError as exc:
        print(_gates_error(args.feature_gates, exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        provisional = _provisional_config(args.config)
    except ConfigError as exc:
        print(f"spread-scheduler: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        asked = KubeVersion(None, gates)
        decided = asyncio.run(decide_live(args.kubeconfig or provisional.kubeconfig, asked, _overrides(args)))
    except VersionError as exc:
        print(f"spread-scheduler: {exc}", file=sys.stderr)
        return 1
    except FeatureGateError as exc:
        print(_gates_error(args.feature_gates, exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as exc:
        print(f"spread-scheduler: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if decided.warning:
        print(f"spread-scheduler: warning: {decided.warning}", file=sys.stderr)
    return _load(args.config, decided.features)


def _simulate(args: argparse.Namespace) -> int:
    """Only the result goes to stdout; warnings and errors go to stderr, so ``-o json`` stays parseable."""
    loaded = _offline_config(args)
    if isinstance(loaded, int):
        return loaded
    config = loaded
    source = "stdin" if args.file == "-" else args.file
    try:
        objects = load_objects(args.file, sys.stdin)
    except ReadError as exc:
        print(f"spread-scheduler: cannot read {source}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not objects:
        print(f"spread-scheduler: no objects in {source}: nothing to simulate", file=sys.stderr)
        return EXIT_NOTHING_TO_SCHEDULE
    profile = config.profiles[0].scheduler_name
    if args.scheduler_name:
        objects = rename_scheduler(objects, args.scheduler_name, profile)
    if args.pod:
        namespace, _, name = args.pod.rpartition("/")
        try:
            objects = replay_objects(objects, namespace or "default", name, config)
        except LookupError as exc:
            print(f"spread-scheduler: {exc} in {source}", file=sys.stderr)
            return EXIT_NOTHING_TO_SCHEDULE
    if config.extenders:
        from scheduler.kube.extender import simulate_with_extenders  # noqa: PLC0415 - aiohttp only when needed

        attempts, sim = asyncio.run(simulate_with_extenders(config, objects, args.seed, apply_preemption=True))
    else:
        sim = Simulation(config, seed=args.seed, apply_preemption=True)
        sim.add_objects(objects)
        attempts = sim.run()
    _warn_skipped(sim, [p.scheduler_name for p in config.profiles])
    if not attempts:
        names = ", ".join(p.scheduler_name for p in config.profiles)
        print(f"spread-scheduler: no pending pod in {source} names a profile ({names})", file=sys.stderr)
        return EXIT_NOTHING_TO_SCHEDULE
    if args.output == "json":
        print(to_json(attempts, sim.cache, args.top, sim.history))
    else:
        print(render_table(attempts, sim.cache, args.top, sim.history), end="")
    # A pod another pod preempted is no longer placed either.
    placed = [a.host is not None and a.pod.key not in sim.history.preempted_by for a in attempts]
    if args.fail_on_unschedulable and not all(placed):
        return EXIT_UNSCHEDULABLE
    return 0


def _warn_skipped(sim: Simulation, profiles: list[str]) -> None:
    """One stderr line per object the simulation left out, and per kind it does not read."""
    for problem in sim.problems:
        print(f"warning: {'skipped ' if problem.skipped else ''}{problem.what}: {problem.message}", file=sys.stderr)
    for kind, count in sorted(sim.unused_kinds.items()):
        print(f"warning: skipped {count} {kind} object(s): a kind simulate does not read", file=sys.stderr)
    seen: set[str] = set()
    for pod in sim.unmatched:
        if pod.key in seen:
            continue
        seen.add(pod.key)
        print(
            f'warning: skipped pending pod {pod.key}: schedulerName "{pod.scheduler_name}" names no profile '
            f"({', '.join(profiles)}); --scheduler-name {pod.scheduler_name} schedules it with ours",
            file=sys.stderr,
        )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _bool(text: str) -> bool:
    """A boolean flag's value as Go's ``strconv.ParseBool`` reads it (kube-scheduler's flags do)."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise argparse.ArgumentTypeError(f'invalid boolean value "{text}" (want true or false)')


def _refuse(err: str) -> int:
    """``run``'s way out before it starts: one "command failed" line, as kube-scheduler's, and exit 2."""
    log.error("command failed", err=err)
    return 2


def _run(args: argparse.Namespace) -> int:
    # The cyclic collector is paused while `run` imports: what imports make lives as long as the process,
    # so passes over a heap that only grows free nothing. Frozen after (gc.freeze's documented use), so
    # that no later pass walks them either (docs/benchmarks.md, "Why the I/O layer is shaped as it is").
    gc.disable()
    try:
        from scheduler.kube.app import Rebalancing, SecureServing, run_scheduler  # noqa: PLC0415
        from scheduler.kube.serving.delegated_auth import PathAuthorizer  # noqa: PLC0415
        from scheduler.kube.teardown import Teardown, dump_stacks_on  # noqa: PLC0415
    finally:
        gc.freeze()
        gc.enable()

    from scheduler.kube.kube_version import KubeVersion  # noqa: PLC0415

    try:
        gates = parse_feature_gates(args.feature_gates)
        pinned = None if args.kube_version is None else supported_minor(args.kube_version)
    except FeatureGateError as exc:
        return _refuse(f'invalid argument "{args.feature_gates}" for "--feature-gates" flag: {exc}')
    except ValueError as exc:
        return _refuse(f"--kube-version: {exc}")
    try:
        if pinned is not None:
            config = load_config(args.config, features_at(pinned, gates))
        else:
            config = _provisional_config(args.config)  # the minor is the API server's: read at start
    except FeatureGateError as exc:
        return _refuse(f'invalid argument "{args.feature_gates}" for "--feature-gates" flag: {exc}')
    except ConfigError as exc:
        return _refuse(str(exc))
    if args.health_address is not None:
        return _refuse(
            "--health-address was removed: /healthz, /livez, /readyz and /metrics are served over HTTPS on "
            "--bind-address and --secure-port (default 0.0.0.0:10259), as kube-scheduler serves them"
        )
    if not 0 <= args.secure_port <= 65535:
        return _refuse(
            f"--secure-port {args.secure_port} must be between 0 and 65535, inclusive. 0 for turning off secure port"
        )
    paths = tuple(p.strip() for p in args.authorization_always_allow_paths.split(",") if p.strip())
    try:
        PathAuthorizer(paths)
    except ValueError as exc:
        return _refuse(f"--authorization-always-allow-paths: {exc}")
    serving = SecureServing(
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        always_allow_paths=paths,
    )
    dump_stacks_on(signal.SIGUSR1)  # every thread's stack to the log, on demand: a hang looked into in place
    teardown = Teardown()

    async def run_then_tidy() -> int:
        code = await run_scheduler(
            config,
            args.kubeconfig,
            serving=serving,
            scale_down_spread=args.scale_down_spread,
            rebalance=Rebalancing(args.rebalance, args.rebalance_default),
            kube_version=KubeVersion(pinned, gates),
            compose=lambda features: load_config(args.config, features),
            teardown=teardown,
        )
        await teardown.remaining_tasks()  # bounded and named: asyncio.run's own wait is neither
        return code

    return asyncio.run(run_then_tidy())


def _explain(args: argparse.Namespace) -> int:
    from scheduler.kube.client.dump import ListingError  # noqa: PLC0415
    from scheduler.kube.explain import explain  # noqa: PLC0415

    config = _live_config(args)
    if isinstance(config, int):
        return config
    try:
        target = args.pod if "/" in args.pod else f"{args.namespace}/{args.pod}"
        result = explain(
            config,
            target,
            args.kubeconfig,
            args.output,
            args.seed,
            default_rebalance=args.rebalance_default,
            overrides=_overrides(args),
        )
        print(asyncio.run(result), end="")
    except (LookupError, ListingError) as exc:
        print(f"spread-scheduler: {exc}", file=sys.stderr)
        return 1
    return 0


def _inputs(args: argparse.Namespace) -> tuple[SchedulerConfig, list[Mapping[str, Any]]] | int:
    """``--config`` and the objects of ``-f FILE`` or of the live cluster (PodDisruptionBudgets too,
    where allowed: a plan stops at one); an exit code after printing why there are none."""
    config = _offline_config(args) if args.file is not None else _live_config(args)
    if isinstance(config, int):
        return config
    if args.file is not None:
        try:
            return config, list(load_objects(args.file))
        except ReadError as exc:
            print(f"spread-scheduler: cannot read {args.file}: {exc}", file=sys.stderr)
            return 2
    from scheduler.kube.client.dump import ListingError, cluster_objects  # noqa: PLC0415

    listing = cluster_objects(
        config, args.kubeconfig, preemption=True, namespace=args.namespace, overrides=_overrides(args)
    )
    try:
        return config, list(asyncio.run(listing))
    except ListingError as exc:
        print(f"spread-scheduler: {exc}", file=sys.stderr)
        return 1


def _skew(args: argparse.Namespace) -> int:
    """``skew``: the spread report of a file of objects (``-f``) or of the live cluster, with the
    deletion costs in force and the rebalancing plans."""
    from scheduler.skew import render_table, skew_report, to_json  # noqa: PLC0415
    from scheduler.skew.plot import PlotUnavailableError, plot  # noqa: PLC0415
    from scheduler.spread.dry_run import dry_run  # noqa: PLC0415

    inputs = _inputs(args)
    if isinstance(inputs, int):
        return inputs
    config, objects = inputs
    sim = Simulation(config)
    sim.add_objects(objects)
    workloads = skew_report(objects, config, args.namespace, sim=sim)
    dry = dry_run(objects, config, default=args.rebalance_default, namespace=args.namespace, sim=sim)
    print(
        to_json(workloads, dry) if args.output == "json" else render_table(workloads, dry),
        end="\n" if args.output == "json" else "",
    )
    if args.plot:
        try:
            if not plot(workloads, args.plot):
                print("spread-scheduler: nothing to plot: no workload with spread constraints", file=sys.stderr)
        except PlotUnavailableError as exc:
            print(f"spread-scheduler: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"spread-scheduler: cannot write {args.plot}: {exc}", file=sys.stderr)
            return 2
    return 0


def _rebalance(args: argparse.Namespace) -> int:
    """``rebalance --dry-run``: the plan per workload; without --dry-run, a refusal (the controller
    inside ``run`` carries plans out, one eviction at a time)."""
    from scheduler.spread.dry_run import dry_run  # noqa: PLC0415
    from scheduler.spread.render import plans_to_json, render_plans  # noqa: PLC0415

    if not args.dry_run:
        print(
            "spread-scheduler: rebalance only prints plans (--dry-run): the rebalancing controller inside "
            "'spread-scheduler run' evicts, one pod at a time",
            file=sys.stderr,
        )
        return 2
    inputs = _inputs(args)
    if isinstance(inputs, int):
        return inputs
    config, objects = inputs
    dry = dry_run(objects, config, default=args.rebalance_default, namespace=args.namespace)
    if args.output == "json":
        print(plans_to_json(dry.plans, dry.deployments))
    else:
        print(render_plans(dry.plans, dry.deployments), end="")
    return 0


def _ip(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"failed to parse IP: {value!r}") from None


def _verbosity(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _logging_flags() -> argparse.ArgumentParser:
    """kube-scheduler's logging flags, on every subcommand; logs always go to stderr."""
    flags = argparse.ArgumentParser(add_help=False)
    group = flags.add_argument_group("logging (as kube-scheduler's)")
    group.add_argument(
        "--logging-format",
        choices=logs.FORMATS,
        default="text",
        help='Sets the log format. Permitted formats: "json", "text". (default "text")',
    )
    group.add_argument(
        "-v", "--v", dest="v", type=_verbosity, default=0, metavar="LEVEL", help="number for the log level verbosity"
    )
    return flags


KUBECONFIG_HELP = "kubeconfig path (default: $KUBECONFIG, ~/.kube/config, in-cluster)"


def _overrides(args: argparse.Namespace) -> Any:
    """kubectl's --context, --cluster and --user as the kubeconfig reader takes them."""
    from scheduler.kube.client.kubeconfig import Overrides  # noqa: PLC0415

    return Overrides(getattr(args, "context", None), getattr(args, "cluster", None), getattr(args, "user", None))


def _kubeconfig_flags(parser: argparse.ArgumentParser | Any, default: Any = None) -> None:
    """``--kubeconfig``, ``--context``, ``--cluster`` and ``--user``: which kubeconfig, context,
    cluster and user to read the cluster with, as kubectl's global flags choose them."""
    parser.add_argument("--kubeconfig", default=default, help=KUBECONFIG_HELP)
    parser.add_argument("--context", default=default, help="the kubeconfig context to use (default: current-context)")
    parser.add_argument("--cluster", default=default, help="the kubeconfig cluster to use instead of the context's")
    parser.add_argument("--user", default=default, help="the kubeconfig user to use instead of the context's")


def _kubectl_flags(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """kubectl's global flags that choose what is read, as every kubectl command takes them: on the
    plugin (``kubectl spread --context x skew``) and on each subcommand (``kubectl spread skew
    --context=x``). A subcommand's are absent unless typed, so they never mask the plugin's."""
    default = None if top else argparse.SUPPRESS
    group = parser.add_argument_group("kubectl's flags (before or after the command)")
    _kubeconfig_flags(group, default)
    group.add_argument(
        "-n", "--namespace", default=default, help="the namespace to read (default: the context's, else default)"
    )
    group.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="read every namespace (-n is then ignored; explain always reads its pod's)",
    )


def _add_read_only(sub: Any, common: list[argparse.ArgumentParser], *, kubectl: bool) -> None:
    """``explain``, ``skew`` and ``rebalance``: for ``spread-scheduler`` and ``kubectl-spread``. As a
    kubectl plugin, kubectl's global flags (``_kubectl_flags``): no -n means the context's namespace,
    and -A every namespace."""

    def namespaces(parser: argparse.ArgumentParser, help_all: str) -> None:
        if kubectl:
            _kubectl_flags(parser, top=False)
        else:
            _kubeconfig_flags(parser)
            parser.add_argument("-n", "--namespace", default=None, help=help_all)

    exp = sub.add_parser(
        "explain", parents=common, help="replay one pod's scheduling on the live cluster and explain each node"
    )
    exp.add_argument("pod", help="NAME or NAMESPACE/NAME (a pending or a bound pod)")
    if kubectl:
        _kubectl_flags(exp, top=False)
    else:
        exp.add_argument("-n", "--namespace", default="default", help="the pod's namespace when POD has none")
        _kubeconfig_flags(exp)
    exp.add_argument("--config", help="a KubeSchedulerConfiguration file (default: the built-in profile)")
    exp.add_argument("--output", "-o", choices=("table", "json"), default="table")
    exp.add_argument("--seed", type=int, default=None)
    _default_rebalance(exp)
    _version_flags(exp, live="the API server's")
    exp.set_defaults(func=_explain)

    skew = sub.add_parser(
        "skew",
        parents=common,
        help="per workload: pods per topology domain, skew against maxSkew, the pods now in violation, the "
        "deletion costs in force and the rebalancing plan",
    )
    skew.add_argument("-f", "--file", help="read objects from this file (kubectl get -o yaml) instead of the cluster")
    skew.add_argument("--config", help="a KubeSchedulerConfiguration file (its PodTopologySpread default constraints)")
    namespaces(skew, "only this namespace's workloads, and its objects only (default: all)")
    skew.add_argument("--output", "-o", choices=("table", "json"), default="table")
    skew.add_argument("--plot", metavar="FILE.png", help="also draw pods per domain (needs spread-scheduler[plot])")
    _default_rebalance(skew)
    _version_flags(skew, live=LIVE_OR_FILE)
    skew.set_defaults(func=_skew)

    reb = sub.add_parser(
        "rebalance",
        parents=common,
        help="with --dry-run: per workload, the evictions that would bring its spread back within maxSkew",
    )
    reb.add_argument("--dry-run", action="store_true", help="print the plan (required: nothing is ever evicted here)")
    reb.add_argument("-f", "--file", help="read objects from this file (kubectl get -o yaml) instead of the cluster")
    reb.add_argument("--config", help="a KubeSchedulerConfiguration file (default: the built-in profile)")
    namespaces(reb, "only this namespace's workloads, and its objects only (default: all)")
    reb.add_argument("--output", "-o", choices=("table", "json"), default="table")
    _default_rebalance(reb)
    _version_flags(reb, live=LIVE_OR_FILE)
    reb.set_defaults(func=_rebalance)


LIVE_OR_FILE = f"the API server's for the live cluster; {NEWEST}, the newest, for -f (a dump does not say)"


def _version_flags(parser: argparse.ArgumentParser, *, live: str | None = None) -> None:
    """``--kube-version`` and ``--feature-gates``: whose decisions are made. ``live``: what the default is
    when the command reads the live cluster (its API server's minor); else the newest, as for a file."""
    default = live or f"{NEWEST}, the newest: a dump does not say which version its cluster runs"
    parser.add_argument(
        "--kube-version",
        default=None,
        metavar="|".join(RELEASES),
        help=f"decide as this minor's kube-scheduler ({', '.join(RELEASES.values())}); default {default}",
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        metavar="Gate=true,...",
        help="kube-scheduler's --feature-gates, checked at --kube-version; a gate the scheduler reads is "
        "accepted away from its default only where spread-scheduler implements that state",
    )


def _default_rebalance(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rebalance-default",
        type=_bool,
        nargs="?",
        const=True,
        default=False,
        metavar="true|false",
        help='whether a workload whose pods lack the annotation spread-scheduler.io/rebalance ("true" or '
        '"false") is rebalanced: the controller\'s cluster-wide default (default false: only those that opt in)',
    )


def _context_namespace(kubeconfig: str | None, overrides: Any = None) -> str:
    """The context's namespace (the current one, or ``--context``'s), as kubectl defaults -n
    ("default" without one)."""
    from scheduler.kube.client.kubeconfig import NO_OVERRIDES, KubeconfigError, read, source  # noqa: PLC0415

    try:
        where = source(kubeconfig)
        if where is None:
            return "default"
        return read(where, overrides or NO_OVERRIDES).namespace or "default"
    except KubeconfigError:
        return "default"  # the listing reports the kubeconfig's problem itself


# pflag's spellings that argparse reads otherwise: ``-n=ns`` (argparse: the value "=ns") and a
# boolean's ``=true``/``=false``.
_KUBECTL_BOOLEANS = ("-A", "--all-namespaces")


def _pflag_spelling(argv: Sequence[str]) -> list[str]:
    """``argv`` with pflag's ``-x=VALUE`` as ``-xVALUE`` and ``-A=BOOL`` as ``-A`` or nothing, up to ``--``."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + list(argv[i:])
        flag, equals, value = arg.partition("=")
        if equals and flag in _KUBECTL_BOOLEANS:
            try:
                out += [flag] if _bool(value) else []
            except argparse.ArgumentTypeError:
                out.append(arg)  # argparse refuses it by name
        elif equals and len(flag) == 2 and flag[0] == "-" and flag[1] != "-":
            out.append(flag + value)
        else:
            out.append(arg)
    return out


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """``kubectl spread skew|explain|rebalance --dry-run``: the read-only commands as a kubectl plugin.
    kubectl hands a plugin the user's flags as typed, so kubectl's global flags are read here, before
    the command or after it (the later wins, as in pflag), and resolved as kubectl resolves them."""
    parser = argparse.ArgumentParser(
        prog="kubectl spread",
        description="spread-scheduler's read-only commands, as a kubectl plugin",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    _kubectl_flags(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_read_only(sub, [_logging_flags()], kubectl=True)
    args = parser.parse_args(_pflag_spelling(sys.argv[1:] if argv is None else argv))
    if args.all_namespaces and args.command != "explain":
        args.namespace = None  # kubectl: -A ignores -n
    elif args.namespace is None and getattr(args, "file", None) is None:
        args.namespace = _context_namespace(args.kubeconfig, _overrides(args))
    logs.configure(args.logging_format, args.v)
    result: int = args.func(args)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spread-scheduler", description=__doc__)
    parser.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    common = [_logging_flags()]

    sim = sub.add_parser(
        "simulate", parents=common, help="schedule the pending pods of a file of objects and explain each decision"
    )
    sim.add_argument(
        "file", help="Nodes, Pods, Services, ReplicaSets, ... as YAML/JSON (kubectl get -o yaml works); - for stdin"
    )
    sim.add_argument("--config", help="a KubeSchedulerConfiguration file (default: the built-in profile)")
    sim.add_argument("--output", "-o", choices=("table", "json"), default="table")
    sim.add_argument("--seed", type=int, default=None, help="seed for the random choice among tied nodes")
    sim.add_argument(
        "--pod",
        metavar="NS/NAME",
        help="decide only this pod (a bound one as if pending), on the bound pods, as explain does",
    )
    sim.add_argument("--top", type=_positive, metavar="N", help="show only the N best nodes per pod")
    sim.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="schedule pending pods naming NAME as if they named the first profile (repeatable)",
    )
    sim.add_argument(
        "--fail-on-unschedulable",
        action="store_true",
        help=f"exit {EXIT_UNSCHEDULABLE} when a reported pod is not placed",
    )
    _version_flags(sim)
    sim.set_defaults(func=_simulate)

    run = sub.add_parser(
        "run", parents=common, help="watch the cluster and schedule pods whose schedulerName matches a profile"
    )
    run.add_argument("--config", help="a KubeSchedulerConfiguration file (default: the built-in profile)")
    run.add_argument("--kubeconfig", help="kubeconfig path (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
    serving = run.add_argument_group("secure serving (as kube-scheduler: HTTPS, delegated authentication)")
    serving.add_argument(
        "--secure-port",
        type=int,
        default=10259,
        help="The port on which to serve HTTPS with authentication and authorization. If 0, don't serve HTTPS at all.",
    )
    serving.add_argument(
        "--bind-address",
        type=_ip,
        default="0.0.0.0",
        help="The IP address on which to listen for the --secure-port port (0.0.0.0 or ::: all interfaces).",
    )
    serving.add_argument(
        "--tls-cert-file",
        help="File containing the default x509 Certificate for HTTPS (CA cert, if any, concatenated after server "
        "cert). Without it and --tls-private-key-file, a self-signed certificate is generated in memory.",
    )
    serving.add_argument(
        "--tls-private-key-file", help="File containing the default x509 private key matching --tls-cert-file."
    )
    serving.add_argument(
        "--authorization-always-allow-paths",
        default="/healthz,/readyz,/livez",
        metavar="PATHS",
        help="A list of HTTP paths to skip during authorization, i.e. these are authorized without contacting "
        "the 'core' kubernetes server. (default: /healthz,/readyz,/livez)",
    )
    run.add_argument(
        "--scale-down-spread",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="true|false",
        help="keep controller.kubernetes.io/pod-deletion-cost on the pods of our ReplicaSets so that a scale-down "
        "keeps their topology spread (default true; --scale-down-spread=false turns it off)",
    )
    run.add_argument(
        "--rebalance",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="true|false",
        help="evict, one at a time, pods of opted-in workloads whose skew is above maxSkew when our scheduling "
        "cycle places the replacement where it lowers the skew (default true; --rebalance=false turns it off)",
    )
    _default_rebalance(run)
    _version_flags(run, live="the API server's (/version; one minor newer than ours: our newest, with a warning)")
    run.add_argument("--health-address", default=None, help=argparse.SUPPRESS)  # removed: refused with a pointer
    run.set_defaults(func=_run)

    _add_read_only(sub, common, kubectl=False)

    ver = sub.add_parser(
        "version", parents=common, help="print the version and the upstream version whose decisions we match"
    )
    ver.set_defaults(func=lambda _a: print(_version()) or 0)

    args = parser.parse_args(argv)
    logs.configure(args.logging_format, args.v)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
