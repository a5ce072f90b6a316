"""Command line: ``spread-scheduler simulate | run | version``."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys
from collections.abc import Sequence

import yaml

from scheduler import __version__
from scheduler.config import ConfigError, load_config
from scheduler.simulate import Simulation, load_objects, render_table, to_json

__all__ = ["main"]

UPSTREAM_VERSION = "v1.35.4"


def _simulate(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"spread-scheduler: invalid configuration: {exc}", file=sys.stderr)
        return 2
    try:
        objects = load_objects(args.file)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        print(f"spread-scheduler: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    if config.extenders:
        from scheduler.kube.extender import simulate_with_extenders  # noqa: PLC0415 - aiohttp only when needed

        attempts, sim = asyncio.run(simulate_with_extenders(config, objects, args.seed))
    else:
        sim = Simulation(config, seed=args.seed)
        sim.add_objects(objects)
        attempts = sim.run()
    for problem in sim.problems:
        print(f"warning: skipped {problem.what}: {problem.message}", file=sys.stderr)
    if args.output == "json":
        print(to_json(attempts, sim.cache))
    else:
        print(render_table(attempts, sim.cache), end="")
    return 0


def _run(args: argparse.Namespace) -> int:
    from scheduler.kube.app import SecureServing, configure_logging, run_scheduler  # noqa: PLC0415
    from scheduler.kube.delegated_auth import PathAuthorizer  # noqa: PLC0415

    configure_logging()
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"spread-scheduler: invalid configuration: {exc}", file=sys.stderr)
        return 2
    if args.health_address is not None:
        print(
            "spread-scheduler: --health-address was removed: /healthz, /livez, /readyz and /metrics are served "
            "over HTTPS on --bind-address and --secure-port (default 0.0.0.0:10259), as kube-scheduler serves them",
            file=sys.stderr,
        )
        return 2
    if not 0 <= args.secure_port <= 65535:
        print(
            f"spread-scheduler: --secure-port {args.secure_port} must be between 0 and 65535, inclusive. "
            "0 for turning off secure port",
            file=sys.stderr,
        )
        return 2
    paths = tuple(p.strip() for p in args.authorization_always_allow_paths.split(",") if p.strip())
    try:
        PathAuthorizer(paths)
    except ValueError as exc:
        print(f"spread-scheduler: --authorization-always-allow-paths: {exc}", file=sys.stderr)
        return 2
    serving = SecureServing(
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        always_allow_paths=paths,
    )
    return asyncio.run(run_scheduler(config, args.kubeconfig, serving=serving))


def _explain(args: argparse.Namespace) -> int:
    from scheduler.kube.explain import explain  # noqa: PLC0415

    try:
        config = load_config(args.config)
        target = args.pod if "/" in args.pod else f"{args.namespace}/{args.pod}"
        print(asyncio.run(explain(config, target, args.kubeconfig, args.output, args.seed)), end="")
    except ConfigError as exc:
        print(f"spread-scheduler: invalid configuration: {exc}", file=sys.stderr)
        return 2
    except LookupError as exc:
        print(f"spread-scheduler: {exc}", file=sys.stderr)
        return 1
    return 0


def _ip(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"failed to parse IP: {value!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spread-scheduler", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="schedule the pending pods of a file of objects and explain each decision")
    sim.add_argument("file", help="Nodes, Pods, Services, ReplicaSets, ... as YAML/JSON (kubectl get -o yaml works)")
    sim.add_argument("--config", help="a KubeSchedulerConfiguration file (default: the built-in profile)")
    sim.add_argument("--output", "-o", choices=("table", "json"), default="table")
    sim.add_argument("--seed", type=int, default=None, help="seed for the random choice among tied nodes")
    sim.set_defaults(func=_simulate)

    run = sub.add_parser("run", help="watch the cluster and schedule pods whose schedulerName matches a profile")
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
    run.add_argument("--health-address", default=None, help=argparse.SUPPRESS)  # removed: refused with a pointer
    run.set_defaults(func=_run)

    exp = sub.add_parser("explain", help="replay one pod's scheduling on the live cluster and explain each node")
    exp.add_argument("pod", help="NAME or NAMESPACE/NAME (a pending or a bound pod)")
    exp.add_argument("-n", "--namespace", default="default", help="the pod's namespace when POD has none")
    exp.add_argument("--config", help="a KubeSchedulerConfiguration file (default: the built-in profile)")
    exp.add_argument("--kubeconfig", help="kubeconfig path (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
    exp.add_argument("--output", "-o", choices=("table", "json"), default="table")
    exp.add_argument("--seed", type=int, default=None)
    exp.set_defaults(func=_explain)

    ver = sub.add_parser("version", help="print the version and the upstream version whose decisions we match")
    ver.set_defaults(func=lambda _a: print(f"spread-scheduler {__version__} (kube-scheduler {UPSTREAM_VERSION})") or 0)

    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
