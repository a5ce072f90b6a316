"""The Go builds behind the local cluster (e2e/cluster/): the control plane and etcd from
e2e/controlplane and e2e/etcd, our own Go mains (``ensure_tool``: the differential oracle, schedbench), and
helm, kwok and the descheduler from their own modules under e2e/tools. Each is cached by what it was built
from (a JSON stamp, or a digest in the file name) under ``$SPREAD_CACHE_DIR`` (default
``~/.cache/spread-scheduler``), and builds are serialized between processes by a lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Release:
    """One Kubernetes release the local control plane builds: its own go.mod in e2e/controlplane (one Go
    module requires one version of k8s.io/kubernetes), and the Go build tag our mains' per-release files use."""

    version: str  # vMAJOR.MINOR.PATCH, the tag of k8s.io/kubernetes
    build_date: str  # the tag's time, from the Go proxy's k8s.io/kubernetes@VERSION.info
    modfile: str  # under e2e/controlplane: go.mod for the default release, go.1.N.mod for the others

    @property
    def minor(self) -> str:
        """``1.N``, as the scheduler's ``--kube-version`` names it."""
        return ".".join(self.version.lstrip("v").split(".")[:2])

    @property
    def go_tag(self) -> str:
        """The build tag for files of ours that differ by release (``k8s1_37``): ``//go:build k8s1_37``."""
        return "k8s" + self.minor.replace(".", "_")


RELEASES = {
    r.minor: r
    for r in (
        Release("v1.35.4", "2026-04-15T18:01:22Z", "go.mod"),
        Release("v1.36.3", "2026-07-22T18:07:38Z", "go.1.36.mod"),
        Release("v1.37.2", "2026-10-27T12:01:04Z", "go.1.37.mod"),
    )
}
K8S_VERSION = "v1.35.4"  # the default release (make test, e2e); the others by --version / SPREAD_E2E_KUBE_VERSION
NEWEST = max(RELEASES.values(), key=lambda r: tuple(int(p) for p in r.version[1:].split("."))).version  # make demo
# One etcd for every release: 3.6 is the minor 1.35 and 1.36 are released with (3.6.6, 3.6.8) and one 1.37
# supports (its build/dependencies.yaml names 3.7.0, and its apiserver keeps working with 3.6 servers).
ETCD_VERSION = "v3.6.16"
HERE = Path(__file__).resolve().parent
CONTROLPLANE_MODULE = HERE / "controlplane"
ETCD_MODULE = HERE / "etcd"
HELM_MODULE = HERE / "tools" / "helm"  # its own module: helm's k8s.io/* versions never touch the control plane's
KWOK_MODULE = HERE / "tools" / "kwok"  # the same for kwok (client-go v0.36)
DESCHEDULER_MODULE = HERE / "tools" / "descheduler"  # the same for the descheduler (bench/rebalance_compare.py)
KARPENTER_MODULE = HERE / "tools" / "karpenter"  # the same for Karpenter's kwok provider (e2e/karpenter.py)
K8S_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
COMPONENTS = ("etcd", *K8S_COMMANDS)
BUILD_FREE_BYTES = 6 * 2**30  # measured cold: 0.8 GiB of modules, 2.9 GiB of GOCACHE, 0.4 GiB of binaries


def _cache_base() -> Path:
    return Path(os.environ.get("SPREAD_CACHE_DIR", Path.home() / ".cache" / "spread-scheduler"))


def release(version: str = K8S_VERSION) -> Release:
    """The release for ``1.N``, ``1.N.P`` or ``v1.N.P``; a patch must be the one we build."""
    text = version.lstrip("v")
    minor = ".".join(text.split(".")[:2])
    found = RELEASES.get(minor)
    if found is None or (text.count(".") == 2 and found.version != f"v{text}"):
        supported = ", ".join(r.version for r in RELEASES.values())
        raise ValueError(f"Kubernetes {version}: the local control plane builds {supported}")
    return found


def cache_dir(version: str = K8S_VERSION) -> Path:
    """Where the binaries and their stamp live, per Kubernetes version."""
    return _cache_base() / f"k8s-{release(version).version}"


def bin_dir(version: str = K8S_VERSION) -> Path:
    """The directory holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler."""
    return cache_dir(version) / "bin"


def log(message: str) -> None:
    """One line on stderr, as every step of the local cluster reports (``[cluster] ...``)."""
    print(f"[cluster] {message}", file=sys.stderr, flush=True)


def _go_env(rel: Release | None = None) -> dict[str, str]:
    """Go's environment for our builds; with ``rel``, its go.mod (``-modfile``) and build tag."""
    env = dict(os.environ)
    env.update({"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly", "GOWORK": "off"})
    if rel is not None:
        env["GOFLAGS"] += f" -modfile={rel.modfile} -tags={rel.go_tag}"
    return env


def _sum_file(modfile: str) -> str:
    """go.sum beside go.mod, go.1.37.sum beside go.1.37.mod (as ``go -modfile`` reads them)."""
    return modfile.removesuffix(".mod") + ".sum"


def _modules_digest(rel: Release) -> str:
    digest = hashlib.sha256()
    for module, modfile in ((CONTROLPLANE_MODULE, rel.modfile), (ETCD_MODULE, "go.mod")):
        for name in (modfile, _sum_file(modfile)):
            path = module / name
            digest.update(f"{path.relative_to(HERE)}\0".encode())
            digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def _version_ldflags(rel: Release) -> str:
    major, minor = rel.version.lstrip("v").split(".")[:2]
    values = {
        "gitVersion": rel.version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "gitCommit": "0" * 40,  # the proxy's zip carries no commit id; /version shows gitVersion
        "buildDate": rel.build_date,
    }
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.{key}={value}" for key, value in values.items()]
    return " ".join(flags)


def build_inputs(version: str = K8S_VERSION) -> dict[str, str]:
    """Everything the cached binaries depend on; the stamp file holds this as JSON."""
    rel = release(version)
    go_version = subprocess.run(
        ["go", "version"], capture_output=True, text=True, check=True, env=_go_env()
    ).stdout.strip()
    return {
        "k8s": rel.version,
        "etcd": ETCD_VERSION,
        "go": go_version,
        "modules_sha256": _modules_digest(rel),
        "ldflags_sha256": hashlib.sha256(_version_ldflags(rel).encode()).hexdigest(),
    }


def _inputs_digest(version: str) -> str:
    return hashlib.sha256(json.dumps(build_inputs(version), sort_keys=True).encode()).hexdigest()


def _read_stamp(stamp: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextlib.contextmanager
def _build_lock(where: Path) -> Iterator[None]:
    """Serialize builds between processes (two pytest sessions, a benchmark and a test...)."""
    where.mkdir(parents=True, exist_ok=True)
    with (where / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _check_free_disk(cache: Path, need: int = BUILD_FREE_BYTES) -> None:
    go_env = subprocess.run(["go", "env", "GOCACHE"], check=False, capture_output=True, text=True, env=_go_env())
    go_cache = go_env.stdout.strip()
    for where in {cache, Path(go_cache or Path.home())}:
        probe = where
        while not probe.exists():
            probe = probe.parent
        free = shutil.disk_usage(probe).free
        if free < need:
            raise SystemExit(
                f"[cluster] need about {need / 2**30:.0f} GiB free under {where} to build the control plane,"
                f" have {free / 2**30:.1f} GiB"
            )


def _go_build(args: Sequence[str], cwd: Path, what: str, rel: Release | None = None) -> float:
    started = time.monotonic()
    log(f"go build {what} (in {cwd.relative_to(HERE.parent)}{f', {rel.modfile}' if rel else ''})")
    subprocess.run(["go", "build", "-trimpath", *args], cwd=cwd, env=_go_env(rel), check=True)
    took = time.monotonic() - started
    log(f"built {what} in {took:.0f}s")
    return took


@contextlib.contextmanager
def _staging_dir(where: Path) -> Iterator[Path]:
    """A fresh directory next to bin/ for ``go build -o``, removed afterwards."""
    tmp = where / f"bin.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _install(tmp: Path, names: Iterable[str], out: Path) -> None:
    """Rename the new binaries into bin/: a running cluster keeps its old files (no "text file busy")."""
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        os.replace(tmp / name, out / name)


def ensure_built(force: bool = False, version: str = K8S_VERSION) -> Path:
    """Build etcd, kube-apiserver, kube-controller-manager and kube-scheduler unless the cached ones match.

    The stamp (``cache_dir()/stamp``, JSON) records the Kubernetes and etcd versions, ``go version``,
    and a hash of both modules' go.mod/go.sum and the ldflags; a build happens when it differs or a
    binary is missing. Returns the bin directory.
    """
    rel = release(version)
    out = bin_dir(version)
    where = cache_dir(version)
    stamp = where / "stamp"
    with _build_lock(where):
        inputs = build_inputs(version)
        if not force and _read_stamp(stamp) == inputs and all((out / c).is_file() for c in COMPONENTS):
            return out
        _check_free_disk(where)
        stamp.unlink(missing_ok=True)
        started = time.monotonic()
        log(f"building the control plane {rel.version} + etcd {ETCD_VERSION} (2 cores: ~6 min cold, ~1 min warm)")
        with _staging_dir(where) as tmp:
            _go_build(
                [
                    "-ldflags",
                    _version_ldflags(rel),
                    "-o",
                    f"{tmp}/",
                    *(f"k8s.io/kubernetes/cmd/{c}" for c in K8S_COMMANDS),
                ],
                CONTROLPLANE_MODULE,
                ", ".join(K8S_COMMANDS),
                rel,
            )
            _go_build(["-ldflags", "-s -w", "-o", str(tmp / "etcd"), "go.etcd.io/etcd/server/v3"], ETCD_MODULE, "etcd")
            _install(tmp, COMPONENTS, out)
        stamp.write_text(json.dumps(inputs, indent=2) + "\n")
        log(f"control plane built in {time.monotonic() - started:.0f}s into {out}")
        return out


def _modfile_text(rel: Release, upstream_go_mod: str) -> str:
    """Our go.mod for ``rel``: its k8s.io/kubernetes, and each staging module it replaces with
    ``./staging/src/...`` replaced here with that module's published tag (a dependency's replaces are ignored)."""
    staging_tag = "v0" + rel.version.lstrip("v").removeprefix("1")  # v1.37.2 -> v0.37.2
    staging = sorted(
        line.split("=>")[0].strip() for line in upstream_go_mod.splitlines() if "=> ./staging/src/" in line
    )
    go_line = next(line for line in upstream_go_mod.splitlines() if line.startswith("go "))
    godebug = [line for line in upstream_go_mod.splitlines() if line.startswith("godebug ")]
    replaces = "\n".join(f"\t{module} => {module} {staging_tag}" for module in staging)
    return (
        f"// Generated by `python -m e2e.cluster modfile --version {rel.version}` (e2e/build.py), then"
        " `go mod tidy`:\n"
        f"// the control plane's module (see go.mod) at k8s.io/kubernetes {rel.version}, with every staging\n"
        f"// module at its published {staging_tag} tag. Builds use it with `go build -modfile={rel.modfile}`.\n"
        "module spreadscheduler/e2e/controlplane\n\n"
        f"{go_line}\n\n" + "".join(f"{line}\n\n" for line in godebug) + f"require k8s.io/kubernetes {rel.version}\n\n"
        f"// Every staging module of k8s.io/kubernetes@{rel.version}, at its published tag.\n"
        f"replace (\n{replaces}\n)\n"
    )


def write_modfile(version: str) -> Path:
    """(Re)write e2e/controlplane/go.1.N.mod and its go.1.N.sum for a release other than the default.

    A maintainer's step when a release is added or moved to a new patch (it reaches the Go module proxy);
    builds only read the checked-in files (``-mod=readonly``), so every build of a release is the same.
    """
    rel = release(version)
    if rel.modfile == "go.mod":
        raise ValueError(f"{rel.version} is the default release: edit e2e/controlplane/go.mod by hand")
    env = _go_env()
    env["GOFLAGS"] = ""
    upstream = subprocess.run(
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{rel.version}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    go_mod = Path(json.loads(upstream.stdout)["GoMod"]).read_text()
    modfile = CONTROLPLANE_MODULE / rel.modfile
    modfile.write_text(_modfile_text(rel, go_mod))
    (CONTROLPLANE_MODULE / _sum_file(rel.modfile)).unlink(missing_ok=True)
    subprocess.run(["go", "mod", "tidy", f"-modfile={rel.modfile}"], cwd=CONTROLPLANE_MODULE, env=env, check=True)
    return modfile


TOOL_BUILDS_KEPT = 6  # per tool: enough for the worktrees of a working day, about 70 MB each


def ensure_oracle(version: str = K8S_VERSION) -> Path:
    """The differential-test oracle (upstream's scheduler framework as a library), built on demand."""
    return ensure_tool("oracle", version)


def ensure_tool(name: str, version: str = K8S_VERSION) -> Path:
    """A Go main of ours under e2e/controlplane/cmd/NAME (oracle, schedbench), built once per version of its source.

    Each build is kept under its own digest (``tools/NAME-<digest>``), so checkouts at different revisions
    (worktrees, a long campaign beside a branch) never replace each other's binary; the oldest builds
    beyond ``TOOL_BUILDS_KEPT`` are removed.
    """
    rel = release(version)
    source_dir = CONTROLPLANE_MODULE / "cmd" / name
    digest = hashlib.sha256(_inputs_digest(version).encode())
    for source in sorted(source_dir.rglob("*")):
        if source.is_file():
            digest.update(f"{source.relative_to(source_dir)}\0".encode() + source.read_bytes())
    where = cache_dir(version)
    tools = where / "tools"
    out = tools / f"{name}-{digest.hexdigest()[:16]}"
    with _build_lock(where):
        if not out.is_file():
            with _staging_dir(where) as tmp:
                _go_build(["-ldflags", "-s -w", "-o", str(tmp / name), f"./cmd/{name}"], CONTROLPLANE_MODULE, name, rel)
                tools.mkdir(parents=True, exist_ok=True)
                shutil.move(str(tmp / name), out)
        out.touch()  # most recently used: kept by the pruning below
        builds = sorted(tools.glob(f"{name}-*"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in builds[TOOL_BUILDS_KEPT:]:
            old.unlink(missing_ok=True)
    return out


def _required_version(go_mod: Path, module: str) -> str:
    """The version ``go_mod`` requires of ``module`` (direct or ``// indirect``)."""
    for line in go_mod.read_text().splitlines():
        fields = line.split()
        if fields[:1] == ["require"]:
            fields = fields[1:]
        if len(fields) >= 2 and fields[0] == module:
            return fields[1]
    raise RuntimeError(f"{go_mod}: no requirement on {module}")


def helm_version() -> str:
    """The helm release e2e/tools/helm/go.mod pins (v3.x)."""
    return _required_version(HELM_MODULE / "go.mod", "helm.sh/helm/v3")


def _helm_ldflags() -> str:
    """As helm's Makefile: its version, and the Kubernetes version its client-go is (chart capabilities, lint)."""
    client_go = _required_version(HELM_MODULE / "go.mod", "k8s.io/client-go")  # v0.N.x is Kubernetes 1.N
    minor = client_go.lstrip("v").split(".")[1]
    flags = ["-s", "-w", f"-X helm.sh/helm/v3/internal/version.version={helm_version()}"]
    for pkg in ("helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"):
        flags += [f"-X {pkg}.k8sVersionMajor=1", f"-X {pkg}.k8sVersionMinor={minor}"]
    return " ".join(flags)


def ensure_helm(force: bool = False) -> Path:
    """The helm CLI built from e2e/tools/helm's go.mod; cached in ``$SPREAD_CACHE_DIR/helm-VERSION/bin``.

    A build (~2 min on 2 cores with a warm module cache) happens when the stamp differs or the binary
    is missing (see ``_ensure_module_tool``). Raises (never skips) when Go or the module proxy fails.
    """
    return _ensure_module_tool(
        "helm", helm_version(), HELM_MODULE, "helm.sh/helm/v3/cmd/helm", _helm_ldflags(), force=force
    )


def kwok_version() -> str:
    """The kwok release e2e/tools/kwok/go.mod pins."""
    return _required_version(KWOK_MODULE / "go.mod", "sigs.k8s.io/kwok")


def ensure_kwok(force: bool = False) -> Path:
    """kwok's controller built from e2e/tools/kwok's go.mod; cached in ``$SPREAD_CACHE_DIR/kwok-VERSION/bin``
    (127 s on 2 cores with an empty build cache, its modules already downloaded)."""
    return _ensure_module_tool("kwok", kwok_version(), KWOK_MODULE, "sigs.k8s.io/kwok/cmd/kwok", "-s -w", force=force)


def descheduler_version() -> str:
    """The descheduler release e2e/tools/descheduler/go.mod pins."""
    return _required_version(DESCHEDULER_MODULE / "go.mod", "sigs.k8s.io/descheduler")


def ensure_descheduler(force: bool = False) -> Path:
    """The descheduler built from e2e/tools/descheduler's go.mod; cached in
    ``$SPREAD_CACHE_DIR/descheduler-VERSION/bin`` (see ``_ensure_module_tool``)."""
    return _ensure_module_tool(
        "descheduler",
        descheduler_version(),
        DESCHEDULER_MODULE,
        "sigs.k8s.io/descheduler/cmd/descheduler",
        "-s -w",
        force=force,
    )


def karpenter_version() -> str:
    """The Karpenter release e2e/tools/karpenter/go.mod pins."""
    return _required_version(KARPENTER_MODULE / "go.mod", "sigs.k8s.io/karpenter")


def ensure_karpenter(force: bool = False) -> Path:
    """Karpenter's kwok provider built from e2e/tools/karpenter's go.mod; cached in
    ``$SPREAD_CACHE_DIR/karpenter-VERSION/bin`` (see ``_ensure_module_tool``)."""
    return _ensure_module_tool(
        "karpenter", karpenter_version(), KARPENTER_MODULE, "sigs.k8s.io/karpenter/kwok", "-s -w", force=force
    )


def _ensure_module_tool(name: str, version: str, module: Path, package: str, ldflags: str, *, force: bool) -> Path:
    """``go build`` of ``package`` in ``module``, cached in ``$SPREAD_CACHE_DIR/NAME-VERSION/bin/NAME``.

    Its stamp (``NAME-VERSION/stamp``, JSON) holds ``go version`` and a SHA-256 of the module's
    go.mod/go.sum and of the ldflags; the binary is rebuilt when it differs or the binary is missing.
    """
    where = _cache_base() / f"{name}-{version}"
    out = where / "bin" / name
    digest = hashlib.sha256(ldflags.encode())
    for file in ("go.mod", "go.sum"):
        digest.update(f"{file}\0".encode() + (module / file).read_bytes())
    go_version = subprocess.run(["go", "version"], capture_output=True, text=True, check=True, env=_go_env())
    inputs = {name: version, "go": go_version.stdout.strip(), "sha256": digest.hexdigest()}
    stamp = where / "stamp"
    with _build_lock(where):
        if not force and out.is_file() and _read_stamp(stamp) == inputs:
            return out
        stamp.unlink(missing_ok=True)
        with _staging_dir(where) as tmp:
            _go_build(["-ldflags", ldflags, "-o", str(tmp / name), package], module, f"{name} {version}")
            out.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / name, out)
        stamp.write_text(json.dumps(inputs, indent=2) + "\n")
    return out
