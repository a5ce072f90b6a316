"""requirements.lock is the image's whole runtime dependency set, pinned and hashed.

The Dockerfile installs it with ``--require-hashes --no-deps``, so a dependency missing here would be
missing from the image, and nothing here may be unpinned or unhashed. The closure is walked through
the installed distributions' metadata (the dev venv holds every runtime dependency), with the markers
evaluated for the image: Linux, CPython 3.11, no extras.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
IMAGE = {"python_version": "3.11", "python_full_version": "3.11.16", "sys_platform": "linux", "os_name": "posix"}
IMAGE |= {"platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython", "extra": ""}


def lock(path: Path) -> dict[str, tuple[Version, list[str]]]:
    """Each pin of a pip requirements file with hashes: name -> (version, hashes)."""
    entries: dict[str, tuple[Version, list[str]]] = {}
    text = path.read_text().replace("\\\n", " ")
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        pin = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})+)", line)
        assert pin, f"{path.name}: not an exact pin with hashes: {line!r}"
        name = canonicalize_name(pin.group(1))
        assert name not in entries, f"{path.name}: {name} pinned twice"
        entries[name] = (Version(pin.group(2)), re.findall(r"[0-9a-f]{64}", pin.group(3)))
    return entries


def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def dependencies() -> list[Requirement]:
    return [Requirement(r) for r in project()["project"]["dependencies"]]


def closure(roots: list[Requirement]) -> dict[str, set[str]]:
    """Every distribution the roots need in the image, each with who needs it."""
    needed: dict[str, set[str]] = {}
    todo = [(req, "pyproject.toml") for req in roots]
    while todo:
        req, by = todo.pop()
        if req.marker is not None and not req.marker.evaluate(IMAGE):
            continue
        name = canonicalize_name(req.name)
        first = name not in needed
        needed.setdefault(name, set()).add(by)
        if first:
            todo += [(Requirement(r), name) for r in metadata.requires(name) or []]
    return needed


def test_every_entry_is_an_exact_pin_with_hashes() -> None:
    assert lock(ROOT / "requirements.lock")
    assert set(lock(ROOT / "build-requirements.lock")) == {"setuptools"}


def test_pyprojects_dependencies_are_pinned_within_their_ranges() -> None:
    pins = lock(ROOT / "requirements.lock")
    for req in dependencies():
        version, _ = pins[canonicalize_name(req.name)]
        assert req.specifier.contains(version), (req, version)


def test_the_lock_holds_every_transitive_dependency_and_nothing_else() -> None:
    """kopf's jsonpatch and jsonpointer, python-dateutil's tzdata included."""
    pins = set(lock(ROOT / "requirements.lock"))
    needed = closure(dependencies())
    missing = {name: sorted(by) for name, by in needed.items() if name not in pins}
    assert not missing, f"needed but not in requirements.lock: {missing}"
    assert pins <= set(needed), f"in requirements.lock but needed by nothing: {sorted(pins - set(needed))}"
    assert {"jsonpatch", "jsonpointer", "tzdata"} <= pins


def test_the_build_backend_satisfies_build_system() -> None:
    (setuptools,) = [Requirement(r) for r in project()["build-system"]["requires"] if r.startswith("setuptools")]
    version, _ = lock(ROOT / "build-requirements.lock")["setuptools"]
    assert setuptools.specifier.contains(version)


def test_the_dockerfile_installs_from_the_locks_by_hash() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "--require-hashes --no-deps --prefix=/install -r requirements.lock" in dockerfile
    assert "--require-hashes --no-deps -r build-requirements.lock" in dockerfile
    assert "--no-deps --no-build-isolation --prefix=/install ." in dockerfile
    assert "constraint" not in dockerfile
