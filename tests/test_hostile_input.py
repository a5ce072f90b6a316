"""Hostile YAML in a file of objects (``simulate FILE``, ``simulate -``, ``skew -f``) and in ``--config``:
alias expansion ("billion laughs"), an alias to its own anchor, 10,000-deep nesting, a file past the
size limit. Each ends in one stderr line naming the file (and the line where there is one) and exit
2, within a time and a memory limit: never a hang, unbounded memory or a traceback.

Each case runs the command in a subprocess under ``RLIMIT_AS`` and a timeout, as a user's shell
would run it, so a regression shows as a failed assertion rather than a stuck or killed test run.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "two-zones.yaml"
MEMORY_LIMIT = 1024 * 1024 * 1024  # bytes of address space: the interpreter and its imports need a fraction
TIME_LIMIT = 30.0  # seconds: the refusals below take well under one
OVER_THE_SIZE_LIMIT = 64 * 1024 * 1024 + 1  # scheduler.boundedyaml.MAX_BYTES + 1 (test_bounded_yaml checks)

# Nine levels of nine aliases each: 9**9 strings once expanded, from a few hundred bytes.
LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n" for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def spread_scheduler(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh interpreter, bounded in memory and time (a timeout fails the test)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "scheduler.cli", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT,
        preexec_fn=_limit_memory,
        env=env,
        cwd=ROOT,
        check=False,
    )


def assert_refused(result: subprocess.CompletedProcess[str], prefix: str, *words: str) -> None:
    """Exit 2, nothing on stdout, one stderr line starting with ``prefix`` and holding ``words``."""
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith(prefix), lines[0]
    for word in words:
        assert word in lines[0], lines[0]


# Documents hostile to a reader, each with what its one line must say.
DUMPS = {
    # A List whose items expand to 9**9 entries: flattening them would never end.
    "billion-laughs": (LAUGHS + "kind: List\nitems: *i\n", ["line ", "excessive aliasing"]),
    # A List that contains itself: flattening it would recurse without end.
    "alias-to-itself": ("kind: List\nitems: &x [*x]\n", ["line 2", "contains itself"]),
    "nesting-10000-flow": ("[" * 10_000 + "]" * 10_000, ["line 1", "depth"]),
    "nesting-10000-block": ("- " * 10_000 + "x\n", ["line 1", "depth"]),
    # A plain scalar YAML resolves to a type that cannot hold it: PyYAML raises ValueError.
    "impossible-date": (
        "kind: List\nitems:\n- kind: Pod\n  metadata: {name: p, creationTimestamp: 2001-02-30}\n",
        ["line 4", "day is out of range for month"],
    ),
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", DUMPS)
def test_simulate_refuses_a_hostile_dump(tmp_path: Path, name: str) -> None:
    text, words = DUMPS[name]
    path = _write(tmp_path, text)
    assert_refused(spread_scheduler("simulate", str(path)), f"spread-scheduler: cannot read {path}: ", *words)


@pytest.mark.parametrize("name", DUMPS)
def test_simulate_refuses_a_hostile_dump_on_stdin(name: str) -> None:
    text, words = DUMPS[name]
    assert_refused(
        spread_scheduler("simulate", "-", stdin=text.encode()), "spread-scheduler: cannot read stdin: ", *words
    )


@pytest.mark.parametrize("name", DUMPS)
def test_skew_refuses_a_hostile_dump(tmp_path: Path, name: str) -> None:
    text, words = DUMPS[name]
    path = _write(tmp_path, text)
    assert_refused(spread_scheduler("skew", "-f", str(path)), f"spread-scheduler: cannot read {path}: ", *words)


# Nine levels of nine aliases as one flow value: a field's value, where a configuration has no room
# for anchors beside its known fields.
FLOW_LAUGHS = (
    "["
    + ", ".join(
        ['&a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        + [f"&{name} [{', '.join(['*' + prev] * 9)}]" for prev, name in zip("abcdefgh", "bcdefghi", strict=True)]
    )
    + "]"
)

# The same in a configuration.
CONFIGS = {
    # An invalid value is quoted in its error message: quoting this one would never end.
    "billion-laughs": (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"clientConnection:\n  qps: {FLOW_LAUGHS}\n",
        ["line 4", "excessive aliasing"],
    ),
    "alias-to-itself": ("profiles: &p [{pluginConfig: *p}]\n", ["line 1", "contains itself"]),
    "nesting-10000-flow": ("profiles: " + "[" * 10_000 + "]" * 10_000, ["line 1", "depth"]),
    "nesting-10000-block": ("profiles:\n" + "- " * 10_000 + "x\n", ["line 2", "depth"]),
    "int-past-pythons-digits": ("percentageOfNodesToScore: " + "1" * 5000 + "\n", ["line 1", "4300 digits"]),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_config_refuses_hostile_yaml(tmp_path: Path, name: str) -> None:
    text, words = CONFIGS[name]
    path = _write(tmp_path, text)
    assert_refused(
        spread_scheduler("simulate", str(EXAMPLE), "--config", str(path)),
        f"spread-scheduler: invalid configuration: {path}: cannot read configuration: ",
        *words,
    )


def _oversized(tmp_path: Path) -> Path:
    """Valid YAML one byte past the limit: a list of as many short strings as fit."""
    path = tmp_path / "huge.yaml"
    line = b"- aaaaaaa\n"
    count, rest = divmod(OVER_THE_SIZE_LIMIT, len(line))
    path.write_bytes(line * count + b"#" * rest)
    assert path.stat().st_size == OVER_THE_SIZE_LIMIT
    return path


def test_simulate_refuses_an_oversized_dump_before_parsing_it(tmp_path: Path) -> None:
    path = _oversized(tmp_path)
    assert_refused(spread_scheduler("simulate", str(path)), f"spread-scheduler: cannot read {path}: ", "MiB")
    assert_refused(spread_scheduler("skew", "-f", str(path)), f"spread-scheduler: cannot read {path}: ", "MiB")


def test_simulate_refuses_oversized_stdin(tmp_path: Path) -> None:
    data = _oversized(tmp_path).read_bytes()
    assert_refused(spread_scheduler("simulate", "-", stdin=data), "spread-scheduler: cannot read stdin: ", "MiB")


def test_config_refuses_an_oversized_file(tmp_path: Path) -> None:
    path = _oversized(tmp_path)
    assert_refused(
        spread_scheduler("simulate", str(EXAMPLE), "--config", str(path)),
        f"spread-scheduler: invalid configuration: {path}: cannot read configuration: ",
        "MiB",
    )


def test_a_syntax_error_is_one_line_naming_the_line(tmp_path: Path) -> None:
    """PyYAML's own message spans several lines (a snippet and a caret); ours is one."""
    path = _write(tmp_path, "kind: List\nitems: [\n  {a: 1\n")
    assert_refused(spread_scheduler("simulate", str(path)), f"spread-scheduler: cannot read {path}: line ")
    config = _write(tmp_path, "profiles: [\n")
    assert_refused(
        spread_scheduler("simulate", str(EXAMPLE), "--config", str(config)),
        f"spread-scheduler: invalid configuration: {config}: cannot read configuration: line ",
    )


def test_aliases_within_bounds_still_read(tmp_path: Path) -> None:
    """An anchor used a few times (a config's merge keys, a dump's shared labels) is not refused."""
    config = _write(
        tmp_path,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- &p {schedulerName: spread-scheduler}\n- {<<: *p, schedulerName: other}\n",
    )
    result = spread_scheduler("simulate", str(EXAMPLE), "--config", str(config), "-o", "json")
    assert (result.returncode, result.stderr) == (0, "")
