#!/usr/bin/env python3
"""A local Kubernetes cluster built from Go modules: etcd, kube-apiserver, kube-controller-manager, and kwok
as the kubelet of the nodes ``add-node`` creates (heartbeats through Leases, pods that run and terminate).

    python -m e2e.cluster build [--version 1.37.2] # build (or reuse) the binaries, cached by version
    python -m e2e.cluster up [--dir DIR] [--version 1.37.2]  # start on 127.0.0.1, write DIR/admin.kubeconfig
    python -m e2e.cluster add-node NAME --label k=v --taint k=v:NoSchedule
    python -m e2e.cluster down [--dir DIR]        # stop everything, leave no process behind
    python -m e2e.cluster helm                    # build (or reuse) helm from e2e/tools/helm; print its path
    python -m e2e.cluster kwok                    # build (or reuse) kwok from e2e/tools/kwok; print its path
    python -m e2e.cluster descheduler             # the same for the descheduler (bench/rebalance_compare.py)
    python -m e2e.cluster karpenter               # the same for Karpenter's kwok provider (e2e/karpenter.py)
    python -m e2e.cluster modfile --version 1.37.2  # maintainers: regenerate e2e/controlplane/go.1.37.mod/.sum

Run from the repository root (``e2e`` is a package there, not installed with spread-scheduler).

DIR defaults to ``$SPREAD_CLUSTER_DIR`` or ``./.cluster``; the binaries live in
``$SPREAD_CACHE_DIR/k8s-VERSION/bin`` (default ``~/.cache/spread-scheduler``). ``--version`` is one of
e2e/build.py's ``RELEASES`` (v1.35.4, the default; v1.36.3; v1.37.2), each built from its own go.mod in
e2e/controlplane (go.mod, go.1.36.mod, go.1.37.mod).
The builds are e2e/build.py's, the certificates e2e/pki.py's, the cluster e2e/cluster/__init__.py's. See e2e/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from e2e.build import (
    CONTROLPLANE_MODULE,
    K8S_VERSION,
    RELEASES,
    ensure_built,
    ensure_descheduler,
    ensure_helm,
    ensure_karpenter,
    ensure_kwok,
    ensure_oracle,
    log,
    release,
    write_modfile,
)
from e2e.cluster import DEFAULT_DIR, Cluster


def parse_taint(text: str) -> tuple[str, str, str]:
    """``key=value:Effect`` or ``key:Effect`` -> (key, value, effect)."""
    kv, sep, effect = text.rpartition(":")
    if not sep or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        raise ValueError(f"taint {text!r}: want key[=value]:NoSchedule|PreferNoSchedule|NoExecute")
    key, _, value = kv.partition("=")
    return key, value, effect


def _version(text: str) -> str:
    """``--version``: a release we build, as its tag."""
    try:
        return release(text).version
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; see the module docstring."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--dir", default=argparse.SUPPRESS, help="state directory (default: $SPREAD_CLUSTER_DIR or ./.cluster)"
    )
    parser = argparse.ArgumentParser(
        prog="python -m e2e.cluster",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    versioned = argparse.ArgumentParser(add_help=False)
    versioned.add_argument(
        "--version",
        type=_version,
        default=K8S_VERSION,
        help=f"Kubernetes release: {', '.join(r.version for r in RELEASES.values())} (default {K8S_VERSION})",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the binaries unless cached", parents=[common, versioned])
    build.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    build.add_argument("--no-oracle", dest="oracle", action="store_false", help="skip e2e/controlplane/cmd/oracle")
    helm = sub.add_parser("helm", help="build helm (e2e/tools/helm) unless cached; print its path", parents=[common])
    helm.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    up = sub.add_parser("up", help="start the control plane", parents=[common, versioned])
    up.add_argument("--with-controller-manager", dest="controller_manager", action="store_true", default=True)
    up.add_argument("--no-controller-manager", dest="controller_manager", action="store_false")
    up.add_argument(
        "--no-kwok", dest="kwok", action="store_false", help="no kubelet stand-in: nodes are static, pods stay Pending"
    )
    sub.add_parser("down", help="stop everything it started, drop etcd data", parents=[common])
    sub.add_parser("status", help="exit 0 if up", parents=[common])
    kwok = sub.add_parser("kwok", help="build kwok (e2e/tools/kwok) unless cached; print its path", parents=[common])
    kwok.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    desched = sub.add_parser(
        "descheduler", help="build the descheduler (e2e/tools/descheduler) unless cached; its path", parents=[common]
    )
    desched.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    karpenter = sub.add_parser(
        "karpenter",
        help="build Karpenter's kwok provider (e2e/tools/karpenter) unless cached; its path",
        parents=[common],
    )
    karpenter.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    sub.add_parser(
        "modfile", help="regenerate e2e/controlplane/go.1.N.mod and .sum (reaches the Go proxy)", parents=[versioned]
    )
    node = sub.add_parser("add-node", help="create a Ready node that kwok runs", parents=[common])
    node.add_argument("name")
    node.add_argument("--label", action="append", default=[], metavar="K=V")
    node.add_argument("--taint", action="append", default=[], metavar="K[=V]:EFFECT")
    node.add_argument("--cpu", default="4")
    node.add_argument("--memory", default="32Gi")
    node.add_argument("--pods", default="110")
    node.add_argument("--unschedulable", action="store_true")
    node.add_argument("--static", action="store_true", help="a node object nothing heartbeats (no kwok)")
    args = parser.parse_args(argv)
    cluster = Cluster(
        getattr(args, "dir", DEFAULT_DIR),
        controller_manager=getattr(args, "controller_manager", True),
        kwok=getattr(args, "kwok", True),
        version=getattr(args, "version", K8S_VERSION),
    )
    if args.command == "build":
        started = time.monotonic()
        print(ensure_built(force=args.force, version=args.version))
        print(ensure_kwok(force=args.force))
        if args.oracle and (CONTROLPLANE_MODULE / "cmd" / "oracle").is_dir():
            print(ensure_oracle(args.version))
        log(f"build: {time.monotonic() - started:.1f}s")
    elif args.command == "modfile":
        print(write_modfile(args.version))
    elif args.command == "helm":
        print(ensure_helm(force=args.force))
    elif args.command == "kwok":
        print(ensure_kwok(force=args.force))
    elif args.command == "descheduler":
        print(ensure_descheduler(force=args.force))
    elif args.command == "karpenter":
        print(ensure_karpenter(force=args.force))
    elif args.command == "up":
        cluster.up()
        print(f"export KUBECONFIG={cluster.kubeconfig}")
    elif args.command == "down":
        cluster.down()
    elif args.command == "status":
        ready = cluster.is_ready()
        print(f"up at {cluster.server}" if ready else "down")
        return 0 if ready else 1
    elif args.command == "add-node":
        try:
            labels = dict(item.split("=", 1) for item in args.label)
            taints = [parse_taint(item) for item in args.taint]
        except ValueError as err:
            parser.error(str(err))
        cluster.add_node(
            args.name, labels, taints, args.cpu, args.memory, args.pods, args.unschedulable, kubelet=not args.static
        )
        print(f"node/{args.name} created")
    return 0


if __name__ == "__main__":
    sys.exit(main())
