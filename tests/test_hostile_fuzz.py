"""Fuzz: generated hostile documents through ``simulate FILE`` and ``simulate --config FILE``, each in
its own process under a memory limit (``RLIMIT_AS``) and a time limit.

The documents: alias bombs of random width and depth, aliases to their own anchor or to no anchor,
nesting of random depth (flow and block), real objects and configurations with one field (at any
depth) replaced by a value of another type (YAML's own types included: timestamps, binary, sets,
NaN, huge integers), huge scalars, and bytes that are not YAML or not UTF-8. Whatever they hold,
the command ends with one of simulate's exit codes, never a traceback, and a refusal (exit 2) is
one stderr line naming the file.

A few dozen documents a run (a few seconds); ``SPREAD_HOSTILE_FUZZ_EXAMPLES=N`` runs N of each kind.
New documents in every run: ``SPREAD_FUZZ_SEED`` (printed in pytest's header) replays a run.
"""

from __future__ import annotations

import copy
import itertools
import os
import random
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from tests.fuzz_seed import FUZZ_SEED
from tests.test_hostile_input import EXAMPLE, ROOT, spread_scheduler

EXAMPLES = int(os.environ.get("SPREAD_HOSTILE_FUZZ_EXAMPLES", "10"))
DUMPS = [ROOT / "examples" / name for name in ("two-zones.yaml", "preemption.yaml", "selector-spread.yaml")]
CONFIG = ROOT / "examples" / "selector-spread-config.yaml"
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's: the huge scalars dump fast
# A configuration with every section the parser reads, for the mutations to reach each of them.
FULL_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 50,
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 10,
    "clientConnection": {"qps": 50, "burst": 100, "kubeconfig": "/tmp/kubeconfig"},
    "leaderElection": {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
        "resourceName": "spread-scheduler",
        "resourceNamespace": "kube-system",
    },
    "profiles": [
        {
            "schedulerName": "spread-scheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "SelectorSpread", "weight": 1}]},
                "filter": {"disabled": [{"name": "TaintToleration"}]},
            },
            "pluginConfig": [
                {
                    "name": "PodTopologySpread",
                    "args": {
                        "defaultingType": "List",
                        "defaultConstraints": [
                            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
                        ],
                    },
                },
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
            ],
        }
    ],
    "extenders": [
        {
            "urlPrefix": "http://127.0.0.1:1/",
            "filterVerb": "filter",
            "weight": 1,
            "httpTimeout": "1s",
            "ignorable": True,
            "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
        }
    ],
}

# Values of every YAML type, as text (so YAML's own tags reach the reader too).
JUNK = [
    "null",
    "true",
    '"false"',
    "-1",
    "0",
    "99999999999999999999999999999",
    "-9223372036854775809",
    "1.5",
    ".nan",
    "-.inf",
    '""',
    '"\\u0000\\t\\u202e"',
    '"1Gi"',
    '"-1"',
    '"In"',
    "[]",
    "[1, [2, [3]]]",
    "{}",
    "{1: 2, null: x, [a]: b}",
    "2001-12-14t21:59:43.10-05:00",
    "2002-12-14",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!omap [{a: 1}, {b: 2}]",
    "!!str 12",
    "!!float 1e400",
    "0x7fffffffffffffff",
    "0o777",
    "~",
    "2001-02-30",
    "!!int 12x",
    "1" * 5000,
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value``, the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, (*prefix, i))
    return found


class _Raw(str):
    """A YAML fragment written as is."""


_RAWS: list[str] = []


def _dump_with_raw(documents: list[Any]) -> str:
    """YAML of ``documents``, with each ``_Raw`` value replaced by its fragment, in flow style so a
    fragment is a valid value wherever it lands."""
    _RAWS.clear()

    def collect(value: Any) -> Any:
        if isinstance(value, _Raw):
            _RAWS.append(str(value))
            return f"@@RAW{len(_RAWS) - 1}@@"
        if isinstance(value, dict):
            return {k: collect(v) for k, v in value.items()}
        if isinstance(value, list):
            return [collect(v) for v in value]
        return value

    text = yaml.dump_all([collect(d) for d in documents], Dumper=DUMPER, default_flow_style=True, width=10**9)
    for i, fragment in enumerate(_RAWS):
        text = text.replace(f"'@@RAW{i}@@'", fragment).replace(f"@@RAW{i}@@", fragment)
    return text


def _set(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return document


def _mutated(rng: random.Random, documents: list[Any], mutations: int) -> str:
    """``documents`` with ``mutations`` fields (at any depth) replaced by junk, deleted or huge."""
    documents = copy.deepcopy(documents)
    for _ in range(mutations):
        i = rng.randrange(len(documents))
        path = rng.choice(_paths(documents[i]))
        choice = rng.random()
        if choice < 0.1 and path:
            parent = documents[i]
            for key in path[:-1]:
                parent = parent[key]
            del parent[path[-1]]
        elif choice < 0.2:
            documents[i] = _set(documents[i], path, "x" * rng.choice([1_000, 100_000, 2_000_000]))
        else:
            documents[i] = _set(documents[i], path, _Raw(rng.choice(JUNK)))
    return _dump_with_raw(documents)


def _laughs(rng: random.Random) -> str:
    width, levels = rng.randint(2, 12), rng.randint(2, 12)
    names = [f"l{i}" for i in range(levels)]
    body = [f"&{names[0]} [{', '.join(['lol'] * width)}]"]
    body += [f"&{name} [{', '.join(['*' + prev] * width)}]" for prev, name in itertools.pairwise(names)]
    return "kind: List\nitems: [" + ", ".join(body) + "]\n"


def _nesting(rng: random.Random) -> str:
    depth = rng.choice([50, 199, 201, 1_000, 10_000, 50_000])
    style = rng.choice(["flow-seq", "flow-map", "block-seq", "block-map"])
    if style == "flow-seq":
        return "[" * depth + "]" * depth
    if style == "flow-map":
        return "{a: " * depth + "1" + "}" * depth
    if style == "block-seq":
        return "- " * depth + "x\n"
    return "".join("  " * i + "a:\n" for i in range(min(depth, 2_000))) + "  " * min(depth, 2_000) + "b: 1\n"


def _aliases(rng: random.Random) -> str:
    return rng.choice(
        [
            "kind: List\nitems: &x [*x]\n",
            "kind: List\nitems: *nowhere\n",
            "a: &x {b: *x}\n",
            "kind: List\nitems: [&p {kind: Pod, metadata: {name: a}}, *p, *p]\n",
            "a: &x 1\nb: &x 2\n",
            "{<<: [*a]}\n",
            "kind: List\nitems: [&n {kind: Node, metadata: &m {name: n, labels: *m}}]\n",
        ]
    )


def _junk_bytes(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return rng.randbytes(rng.randint(1, 4096))
    if kind == 1:
        return "".join(chr(rng.randint(1, 0x2FFF)) for _ in range(rng.randint(1, 2000))).encode("utf-8", "replace")
    if kind == 2:
        return b"\xef\xbb\xbf" + b"\x00" * rng.randint(1, 100)
    if kind == 3:
        return b"\xff\xfe" + "kind: Pod\n".encode("utf-16-le")
    return b"---\n" * rng.randint(1, 100_000)


def _dump_case(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return _laughs(rng).encode()
    if kind == 1:
        return _nesting(rng).encode()
    if kind == 2:
        return _aliases(rng).encode()
    if kind == 3:
        return _junk_bytes(rng)
    objects = list(yaml.safe_load_all(rng.choice(DUMPS).read_text()))
    return _mutated(rng, [o for o in objects if o is not None], rng.randint(1, 6)).encode()


def _config_case(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return _laughs(rng).replace("kind: List\nitems:", "profiles:").encode()
    if kind == 1:
        return ("profiles: " + _nesting(rng)).encode() if rng.random() < 0.5 else _nesting(rng).encode()
    if kind == 2:
        return _aliases(rng).encode()
    if kind == 3:
        return _junk_bytes(rng)
    base = rng.choice([FULL_CONFIG, yaml.safe_load(CONFIG.read_text())])
    return _mutated(rng, [base], rng.randint(1, 4)).encode()


def _check(
    data: bytes, args: Callable[[Path], list[str]], prefix: Callable[[Path], str], tmp_path: Path, i: int
) -> str:
    """Run one case; an empty string if it passed, else what went wrong (with the file kept to replay)."""
    path = tmp_path / f"case-{i}.yaml"
    path.write_bytes(data)
    try:
        result = spread_scheduler(*args(path))
    except subprocess.TimeoutExpired:
        return f"{path} (timed out)"
    lines = result.stderr.splitlines()
    problems = []
    if "Traceback" in result.stderr or result.returncode not in (0, 1, 2):
        problems.append(f"exit {result.returncode}")
    if result.returncode == 2 and (len(lines) != 1 or not lines[0].startswith(prefix(path))):
        problems.append("a refusal that is not one line naming the file")
    if any(not line.startswith(("spread-scheduler: ", "warning: ")) for line in lines):
        problems.append("a stderr line that is neither a refusal nor a warning")
    if not problems:
        return ""
    return f"{path} ({', '.join(problems)}): {result.stderr[-1500:]}"


def _run_all(
    cases: list[bytes], args: Callable[[Path], list[str]], prefix: Callable[[Path], str], tmp_path: Path
) -> None:
    # Two at a time: each case is its own interpreter, mostly start-up.
    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(lambda ic: _check(ic[1], args, prefix, tmp_path, ic[0]), enumerate(cases)) if f]
    assert not failures, f"seed {FUZZ_SEED}:\n" + "\n".join(failures)


def test_simulate_survives_hostile_dumps(tmp_path: Path) -> None:
    rng = random.Random(FUZZ_SEED)
    cases = [_dump_case(rng) for _ in range(EXAMPLES)]
    _run_all(
        cases,
        lambda path: ["simulate", str(path), "-o", "json"],
        lambda path: f"spread-scheduler: cannot read {path}: ",
        tmp_path,
    )


def test_config_survives_hostile_documents(tmp_path: Path) -> None:
    rng = random.Random(FUZZ_SEED + 1)
    cases = [_config_case(rng) for _ in range(EXAMPLES)]
    _run_all(
        cases,
        lambda path: ["simulate", str(EXAMPLE), "--config", str(path)],
        lambda path: "spread-scheduler: invalid configuration: ",  # a field's error names the field
        tmp_path,
    )


def test_the_mutations_stay_yaml() -> None:
    """A fragment landing anywhere is still a value (the text parses, whatever its scalars construct
    to), so the fuzz reaches the object and config parsers, not only the reader."""
    rng = random.Random(FUZZ_SEED)
    objects = [o for o in yaml.safe_load_all(DUMPS[0].read_text()) if o is not None]
    for _ in range(10):
        text = _mutated(rng, objects, 3)
        assert list(yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
