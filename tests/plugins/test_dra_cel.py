"""DRA's CEL selectors against upstream's own results.

The cases of ``data/dra_cel_upstream.json`` are upstream's ``cel/compile_test.go`` (TestCEL, v0.37.2),
those of ``data/dra_cel_more.json`` ours; each carries what upstream's code returns at 1.35, 1.36 and
1.37 as the scheduler compiles (stored expressions), messages in full. A case whose answer we cannot
give as upstream does is listed in ``KNOWN_GAPS`` with the reason (docs/dra-cel.md): it is expected
to fail, and passes the suite only while it still fails (a fix must move it out of the list).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from scheduler.api.quantity import parse_quantity
from scheduler.api.resourceslice import Device, DeviceAttribute
from scheduler.plugins.dynamicresources import cel

DATA = Path(__file__).parent / "data"
MINORS = ("1.35", "1.36", "1.37")

# (case, minor or "*") -> why we differ from upstream.
_SIGN = "sign() called as a member: cel-cpp says 'undeclared reference', cel-go 'found no matching overload'"
_DEVICE_TYPES = "device is a map of dyn for cel-cpp: a capacity's type is not known to the checker"
_NESTING = "cel-cpp's parser refuses nesting deeper than 32 (cel-go: 250)"
KNOWN_GAPS: dict[tuple[str, str], str] = {
    ("quantity-sign", "*"): _SIGN,
    ("quantity-invalid", "*"): _SIGN,
    ("quantity-result", "*"): _DEVICE_TYPES,
    ("two-var-comprehension", "*"): "cel-cpp's two-variable comprehensions are not in cel-expr-python",
    ("deep-nesting", "*"): _NESTING,
    ("deep-nesting-over-limit", "*"): _NESTING,
    ("sum-min-max", "*"): "lists' indexOf/lastIndexOf: cel-cpp's strings extension holds the names",
}

_FIELDS = {
    "int": "int_value",
    "bool": "bool_value",
    "string": "string_value",
    "version": "version_value",
    "ints": "int_values",
    "bools": "bool_values",
    "strings": "string_values",
    "versions": "version_values",
}


def _attribute(raw: dict[str, Any]) -> DeviceAttribute:
    ((kind, value),) = raw.items()
    return DeviceAttribute(**{_FIELDS[kind]: tuple(value) if isinstance(value, list) else value})


def _device(case: dict[str, Any]) -> Device:
    return Device(
        driver=case.get("driver", ""),
        attributes={k: _attribute(v) for k, v in case.get("attributes", {}).items()},
        capacity={k: parse_quantity(v) for k, v in case.get("capacity", {}).items()},
        allow_multiple_allocations=case.get("allowMultipleAllocations"),
    )


def outcome(minor: str, case: dict[str, Any]) -> dict[str, Any]:
    """What our module answers, in the data's shape."""
    compiled = cel.compiler_for(int(minor.split(".")[1])).compile(case["expression"])
    if compiled.error is not None:
        return {"compileError": compiled.error.detail}
    result = compiled.device_matches(_device(case))
    return {"error": result.error} if result.error is not None else {"match": result.matches}


def _params(name: str) -> list[Any]:
    out = []
    for case in json.loads((DATA / name).read_text())["cases"]:
        for minor in MINORS:
            gap = KNOWN_GAPS.get((case["name"], minor)) or KNOWN_GAPS.get((case["name"], "*"))
            marks = [pytest.mark.xfail(reason=gap, strict=True)] if gap else []
            out.append(pytest.param(minor, case, id=f"{case['name']}@{minor}", marks=marks))
    return out


@pytest.mark.parametrize(("minor", "case"), _params("dra_cel_upstream.json"))
def test_upstream_cases(minor: str, case: dict[str, Any]) -> None:
    assert outcome(minor, case) == case["want"][minor]


@pytest.mark.parametrize(("minor", "case"), _params("dra_cel_more.json"))
def test_more_cases(minor: str, case: dict[str, Any]) -> None:
    assert outcome(minor, case) == case["want"][minor]


def test_cache_is_bounded_and_keeps_the_most_recent() -> None:
    cache = cel.Cache(3, cel.compiler_for(37))
    first = cache.get_or_compile("true")
    for i in range(10):
        cache.get_or_compile(f"device.driver == 'd{i}'")
        assert len(cache) <= 3
    assert cache.get_or_compile("device.driver == 'd9'") is cache.get_or_compile("device.driver == 'd9'")
    assert cache.get_or_compile("true") is not first  # evicted, compiled again


def test_cache_keeps_no_failed_compilation() -> None:
    cache = cel.Cache(3, cel.compiler_for(37))
    assert cache.get_or_compile("1").error is not None
    assert len(cache) == 0


def test_prepared_devices_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each device's CEL input is kept for the next selector, at most PREPARED_DEVICES of them."""
    monkeypatch.setattr(cel, "PREPARED_DEVICES", 3)
    compiler = cel.Compiler(37)
    compiled = compiler.compile('device.attributes["d"].n > 0')
    devices = [Device(driver="d", attributes={"n": DeviceAttribute(int_value=i)}) for i in range(10)]
    assert [compiled.device_matches(d).matches for d in devices] == [False] + [True] * 9
    assert len(compiler._prepared) == 3
    assert [compiled.device_matches(d).matches for d in devices] == [False] + [True] * 9


def test_an_answer_is_kept_with_the_device() -> None:
    """Each node's Filter asks every device of a class again for each pod: the expression's answer for
    a device (a match, a miss, or a runtime error's text) is run once, then read."""
    compiler = cel.Compiler(37)
    matching = compiler.compile('device.attributes["d"].n > 0')
    failing = compiler.compile('device.attributes["d"].missing > 0')
    device = Device(driver="d", attributes={"n": DeviceAttribute(int_value=1)})
    first = [matching.device_matches(device), failing.device_matches(device)]
    runs: list[str] = []
    original = compiler._run
    compiler._run = lambda compiled, data: runs.append(compiled.expression) or original(compiled, data)  # type: ignore[method-assign,func-returns-value]
    assert [matching.device_matches(device), failing.device_matches(device)] == first
    assert first[0] == cel.Result(True) and first[1].error is not None
    assert runs == []
    other = Device(driver="d", attributes={"n": DeviceAttribute(int_value=0)})
    assert matching.device_matches(other) == cel.Result(False)
    assert runs == ['device.attributes["d"].n > 0']


def test_cost_limit_refused_without_running() -> None:
    """Upstream's ``expensive`` case: 10^7 loop iterations, refused with upstream's text at once."""
    ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    expression = "true"
    for var in ("z5", "z4", "z3", "z2", "z", "y", "x"):
        expression = f"{ten}.all({var}, {expression})"
    compiled = cel.compiler_for(37).compile(expression)
    assert compiled.error is None
    started = time.perf_counter()
    result = compiled.device_matches(Device(driver="dra.example.com"))
    assert time.perf_counter() - started < 0.5
    assert result == cel.Result(False, cel.COST_LIMIT_EXCEEDED)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param(
            "(" * 300 + "true" + ")" * 300,
            "compilation failed: Expression recursion limit exceeded. limit: 32",
            id="deep-nesting",
        ),
        pytest.param(
            '"' + "x" * 200_000 + '" == ""',
            "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: "
            "size: 200008, limit 100000",
            id="huge-string",
        ),
        pytest.param(
            "[" + ", ".join(["[" * 40 + "1" + "]" * 40] * 50) + "].size() > 0",
            "compilation failed: Expression recursion limit exceeded. limit: 32",
            id="deep-lists",
        ),
    ],
)
def test_hostile_expression_refused_fast(expression: str, message: str) -> None:
    started = time.perf_counter()
    compiled = cel.compiler_for(37).compile(expression)
    assert time.perf_counter() - started < 0.5
    assert compiled.error is not None
    assert compiled.error.detail == message


def test_backtracking_pattern_runs_in_linear_time() -> None:
    """find/findAll run on RE2, as upstream's Go regexp: a pattern that backtracks exponentially in
    Python's ``re`` answers at once on the longest string an attribute holds."""
    compiled = cel.compiler_for(37).compile('device.attributes["d"].s.find("(a+)+$") == ""')
    device = Device(driver="d", attributes={"s": DeviceAttribute(string_value="a" * 63 + "b")})
    started = time.perf_counter()
    assert compiled.device_matches(device) == cel.Result(True)
    assert time.perf_counter() - started < 0.1


def test_quantities_exact() -> None:
    """Capacities are exact fractions: 1Gi equals 1024Mi, and 1 byte more is greater."""
    compiled = cel.compiler_for(37).compile(
        'device.capacity["d"].m.compareTo(quantity("1024Mi")) == 0'
        ' && quantity("1073741825").isGreaterThan(device.capacity["d"].m)'
    )
    assert compiled.device_matches(Device(driver="d", capacity={"m": Fraction(2**30)})) == cel.Result(True)


_LOADS_LATE = """
import sys
from scheduler.config import upstream_config
from scheduler.config.parse import parse_config
from scheduler.features import features_at
from scheduler.plugins.dynamicresources import cel
from scheduler.simulate.simulation import Simulation
from scheduler.testing import make_node, make_pod

def heavy():
    return [m for m in sys.modules if m.split(".")[0] in ("cel_expr_python", "re2") or m.startswith("google.protobuf")]

sim = Simulation(parse_config(upstream_config(), features=features_at("1.37")), seed=0)
node = make_node("n").capacity(cpu="4", memory="4Gi", pods="110").dict()
sim.add_objects([node, make_pod("p").requests(cpu="1").dict()])
assert [a.pod.key for a in sim.run()] == ["default/p"]
print(len(heavy()))
assert cel.compiler_for(37).compile('device.driver == "x"').error is None
print(len(heavy()))
"""


def test_the_cel_stack_loads_with_the_first_selector() -> None:
    """Every profile holds a compiler, but cel-cpp, google-re2 and protobuf load only when a selector
    is compiled: a pod scheduled without one leaves them unloaded. Its own interpreter, as the rest
    of the suite has them loaded."""
    done = subprocess.run([sys.executable, "-c", _LOADS_LATE], capture_output=True, text=True, check=True, timeout=120)
    before, after = (int(n) for n in done.stdout.split())
    assert before == 0
    assert after > 0


def test_the_bool_conversion_texts_name_the_celtypes_messages() -> None:
    """``_NOT_BOOL`` spells the two message types out (so that cel.py imports no protobuf): they are celtypes'."""
    from scheduler.plugins.dynamicresources import celtypes  # noqa: PLC0415 - the test loads what cel.py defers

    assert {celtypes.SEMVER_TYPE, celtypes.QUANTITY_TYPE} <= set(cel._NOT_BOOL)
