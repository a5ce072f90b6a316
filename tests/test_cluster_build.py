"""e2e/build.py's releases: which Kubernetes versions the local control plane builds, and that each one's
go.mod in e2e/controlplane is that release's (k8s.io/kubernetes and every staging module at its tag)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from e2e.build import CONTROLPLANE_MODULE, RELEASES, _modfile_text, _required_version, cache_dir, release
from e2e.cluster import __main__ as cluster_cli


@pytest.mark.parametrize(
    ("asked", "version"),
    [("1.37", "v1.37.2"), ("v1.37.2", "v1.37.2"), ("1.37.2", "v1.37.2"), ("1.36", "v1.36.3"), ("v1.35", "v1.35.4")],
)
def test_release_by_minor_or_tag(asked: str, version: str) -> None:
    assert release(asked).version == version


@pytest.mark.parametrize("asked", ["1.34", "1.38", "v1.37.1", "1.37.20"])
def test_a_release_we_do_not_build_is_refused_naming_those_we_do(asked: str) -> None:
    with pytest.raises(ValueError, match=r"builds v1\.35\.4, v1\.36\.3, v1\.37\.2"):
        release(asked)


def test_each_release_is_cached_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPREAD_CACHE_DIR", str(tmp_path))
    assert cache_dir() == tmp_path / "k8s-v1.35.4"
    assert cache_dir("1.37") == tmp_path / "k8s-v1.37.2"


@pytest.mark.parametrize("minor", sorted(RELEASES))
def test_each_release_has_its_own_go_mod_at_its_tag(minor: str) -> None:
    rel = RELEASES[minor]
    go_mod = CONTROLPLANE_MODULE / rel.modfile
    assert _required_version(go_mod, "k8s.io/kubernetes") == rel.version
    staging_tag = "v0." + rel.version.split(".", 1)[1]
    replaces = re.findall(r"^\t(k8s\.io/\S+) => \1 (\S+)$", go_mod.read_text(), re.M)
    assert replaces, f"{go_mod.name}: no staging replaces"
    assert {tag for _, tag in replaces} == {staging_tag}
    assert (CONTROLPLANE_MODULE / rel.modfile.replace(".mod", ".sum")).is_file()


def test_generated_go_mod_replaces_every_staging_module_with_its_tag() -> None:
    upstream = (
        "module k8s.io/kubernetes\n\ngo 1.26.0\n\ngodebug default=go1.26\n\nreplace (\n"
        "\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/streaming => ./staging/src/k8s.io/streaming\n)\n"
    )
    text = _modfile_text(release("1.37"), upstream)
    assert "require k8s.io/kubernetes v1.37.2\n" in text
    assert "\tk8s.io/api => k8s.io/api v0.37.2\n\tk8s.io/streaming => k8s.io/streaming v0.37.2\n" in text
    assert "\ngo 1.26.0\n" in text and "\ngodebug default=go1.26\n" in text
    assert "module spreadscheduler/e2e/controlplane\n" in text


def test_build_command_takes_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    monkeypatch.setattr(cluster_cli, "ensure_built", lambda force, version: built.append(version) or Path("/bin"))
    monkeypatch.setattr(cluster_cli, "ensure_kwok", lambda force: Path("/kwok"))
    assert cluster_cli.main(["build", "--version", "1.37", "--no-oracle"]) == 0
    assert built == ["v1.37.2"]
    with pytest.raises(SystemExit):
        cluster_cli.main(["up", "--version", "1.34"])
