"""Measure Python CEL libraries for DRA's device selectors (docs/dra-cel.md has the table and the choice).

For each library: the cases of tests/plugins/data/dra_cel_*.json against upstream's 1.37 answers
(an *outcome* passes when it is the same match, or an error of the same kind where upstream errs;
*exact* when the message is upstream's too), then the time to compile a typical selector and to
evaluate it on 8,000 devices (each device's values converted for the library every time, as an
allocator must). python-cel and common-expression-language both install a module named ``cel``:
run this once per virtualenv, each with one library (and this checkout on PYTHONPATH):

    nice -n 15 python -m bench.dra_cel_libraries LIBRARY

LIBRARY: ours (scheduler/plugins/dynamicresources/cel.py on cel-expr-python), cel-expr-python
(the library bare), cel-python, common-expression-language, python-cel.
"""

# ruff: noqa: PLC0415  -- each library is imported only where measured: no venv holds all four

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "tests" / "plugins" / "data"
TYPICAL = (
    'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100"'
    ' && device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
)
DEVICES = 8000

# An adapter: compile(expression) -> (program, compile error or None);
# run(program, case) -> ("match", bool) or ("error", message).
Outcome = tuple[str, Any]


def _fraction(text: str) -> Fraction:
    from scheduler.api.quantity import parse_quantity

    return parse_quantity(text)


def _plain_attributes(case: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, raw in case.get("attributes", {}).items():
        domain, _, ident = name.rpartition("/")
        ((_kind, value),) = raw.items()
        out.setdefault(domain or case.get("driver", ""), {})[ident] = value
    return out


def _capacity(case: dict[str, Any], wrap: Callable[[Fraction], Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, text in case.get("capacity", {}).items():
        domain, _, ident = name.rpartition("/")
        out.setdefault(domain or case.get("driver", ""), {})[ident] = wrap(_fraction(text))
    return out


def ours() -> tuple[Callable[[str], Any], Callable[[Any, dict[str, Any]], Outcome]]:
    from scheduler.plugins.dynamicresources import cel

    sys.path.insert(0, str(DATA.parent))
    from test_dra_cel import _device

    compiler = cel.compiler_for(37)

    def compile_(expression: str) -> Any:
        c = compiler.compile(expression)
        return c, (c.error.detail if c.error else None)

    def run(program: Any, case: dict[str, Any]) -> Outcome:
        r = program.device_matches(_device(case))
        return ("error", r.error) if r.error is not None else ("match", r.matches)

    return compile_, run


def cel_expr_python() -> tuple[Callable[[str], Any], Callable[[Any, dict[str, Any]], Outcome]]:
    """The library as it comes: no Kubernetes functions (no opaque types), no default domains."""
    from cel_expr_python import cel  # type: ignore[import-untyped]
    from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings  # type: ignore[import-untyped]

    env = cel.NewEnv(
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings(), ext_optional.ExtOptional()],
    )

    def compile_(expression: str) -> Any:
        try:
            return env.compile(expression), None
        except RuntimeError as err:
            return None, str(err)

    def run(program: Any, case: dict[str, Any]) -> Outcome:
        data = {
            "device": {
                "driver": case.get("driver", ""),
                "allowMultipleAllocations": bool(case.get("allowMultipleAllocations")),
                "attributes": _plain_attributes(case),
                "capacity": _capacity(case, float),
            }
        }
        try:
            v = program.eval(data=data)
        except (RuntimeError, ValueError) as err:
            return ("error", str(err))
        if v.type().name() == "BOOL":
            return ("match", bool(v.value()))
        return ("error", str(v.value()))

    return compile_, run


def cel_python() -> tuple[Callable[[str], Any], Callable[[Any, dict[str, Any]], Outcome]]:
    """celpy: pure Python; quantities as a string subclass holding the exact value."""
    import celpy  # type: ignore[import-untyped]
    from celpy import celtypes  # type: ignore[import-untyped]

    class Quantity(celtypes.StringType):  # type: ignore[misc]
        value: Fraction

    def quantity(text: Any) -> Any:
        q = Quantity(str(text))
        q.value = _fraction(str(text))
        return q

    def cmp(a: Any, b: Any) -> Any:
        return celtypes.IntType((a.value > b.value) - (a.value < b.value))

    functions = {
        "quantity": quantity,
        "compareTo": cmp,
        "isGreaterThan": lambda a, b: celtypes.BoolType(a.value > b.value),
        "isLessThan": lambda a, b: celtypes.BoolType(a.value < b.value),
    }

    class DefaultMap(celtypes.MapType):  # type: ignore[misc]
        def __getitem__(self, key: Any) -> Any:
            return super().get(key, celtypes.MapType({}))

    env = celpy.Environment()

    def compile_(expression: str) -> Any:
        try:
            return env.program(env.compile(expression), functions=functions), None
        except Exception as err:  # whatever the library raises is its compile error
            return None, str(err)

    def run(program: Any, case: dict[str, Any]) -> Outcome:
        def q(f: Fraction) -> Any:
            out = Quantity(str(f))
            out.value = f
            return out

        attrs = celpy.json_to_cel(_plain_attributes(case))
        caps = _capacity(case, q)
        device = celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(case.get("driver", "")),
                celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(
                    bool(case.get("allowMultipleAllocations"))
                ),
                celtypes.StringType("attributes"): DefaultMap(attrs),
                celtypes.StringType("capacity"): DefaultMap(
                    {celtypes.StringType(k): celtypes.MapType(v) for k, v in caps.items()}
                ),
            }
        )
        try:
            v = program.evaluate({"device": device})
        except Exception as err:
            return ("error", str(err))
        if isinstance(v, celtypes.BoolType):
            return ("match", bool(v))
        return ("error", f"{type(v).__name__}: {v}")

    return compile_, run


def rust_cel(name: str) -> tuple[Callable[[str], Any], Callable[[Any, dict[str, Any]], Outcome]]:
    """The two cel-rust bindings: no custom types; a quantity is a tagged map."""
    import cel  # type: ignore[import-not-found]

    def quantity(text: str) -> dict[str, Any]:
        f = _fraction(text)
        return {"@q": [f.numerator, f.denominator]}

    def value(q: dict[str, Any]) -> Fraction:
        return Fraction(*q["@q"])

    functions = {
        "quantity": quantity,
        "compareTo": lambda a, b: (value(a) > value(b)) - (value(a) < value(b)),
        "isGreaterThan": lambda a, b: value(a) > value(b),
        "isLessThan": lambda a, b: value(a) < value(b),
    }

    def compile_(expression: str) -> Any:
        try:
            return (cel.compile(expression) if hasattr(cel, "compile") else cel.Program(expression)), None
        except BaseException as err:  # pyo3 panics are BaseException
            return None, str(err)

    def run(program: Any, case: dict[str, Any]) -> Outcome:
        device = {
            "driver": case.get("driver", ""),
            "allowMultipleAllocations": bool(case.get("allowMultipleAllocations")),
            "attributes": _plain_attributes(case),
            "capacity": _capacity(case, lambda f: {"@q": [f.numerator, f.denominator]}),
        }
        try:
            v = program.execute(cel.Context({"device": device}, functions))
        except BaseException as err:
            return ("error", str(err).splitlines()[0] if str(err) else type(err).__name__)
        return ("match", v) if isinstance(v, bool) else ("error", f"not bool: {v!r}")

    return compile_, run


ADAPTERS = {
    "ours": ours,
    "cel-expr-python": cel_expr_python,
    "cel-python": cel_python,
    "common-expression-language": lambda: rust_cel("common-expression-language"),
    "python-cel": lambda: rust_cel("python-cel"),
}


def correctness(
    compile_: Callable[[str], Any], run: Callable[[Any, dict[str, Any]], Outcome], file: str, *, limits_cost: bool
) -> str:
    cases = json.loads((DATA / file).read_text())["cases"]
    outcome = exact = 0
    for case in cases:
        if len(case["expression"]) > 20_000:  # the code-point limit case: a check of ours, not of a library
            continue
        want = case["want"]["1.37"]
        want_kind, want_text = next(iter(want.items()))
        if want_text == "operation cancelled: actual cost limit exceeded" and not limits_cost:
            continue  # no cost limit: it would run its 10^7 iterations (or exhaust memory); counted as failed
        program, error = compile_(case["expression"])
        got: Outcome = ("compileError", error) if error is not None else run(program, case)
        same_kind = got[0] == want_kind or (want_kind == "compileError" and got[0] == "error")
        if got[0] == "match":
            same_kind = want_kind == "match" and got[1] == want_text
        outcome += same_kind
        exact += got == (want_kind, want_text)
    total = sum(1 for c in cases if len(c["expression"]) <= 20_000)
    return f"{file}: outcome {outcome}/{total}, exact {exact}/{total}"


def speed(compile_: Callable[[str], Any], run: Callable[[Any, dict[str, Any]], Outcome]) -> str:
    timings = []
    for _ in range(50):
        started = time.perf_counter()
        program, error = compile_(TYPICAL)
        timings.append(time.perf_counter() - started)
    if error is not None:
        return f"compile: {error[:120]}"
    compile_us = statistics.median(timings) * 1e6
    devices = [
        {
            "driver": "gpu.example.com",
            "attributes": {
                "model": {"string": "a100" if i % 3 else "h100"},
                "cores": {"int": 108},
                "fw": {"version": f"1.{i % 7}.0"},
                "uuid": {"string": f"GPU-{i:08d}"},
            },
            "capacity": {"memory": "80Gi" if i % 2 else "24Gi", "cores": "108"},
        }
        for i in range(DEVICES)
    ]
    rounds = []
    matched = 0
    for _ in range(3):
        started = time.perf_counter()
        matched = sum(1 for d in devices if run(program, d) == ("match", True))
        rounds.append(time.perf_counter() - started)
    eval_us = statistics.median(rounds) / DEVICES * 1e6
    line = f"compile {compile_us:.0f} µs; evaluate {eval_us:.1f} µs/device ({matched} of {DEVICES} matched)"
    if hasattr(program, "device_matches"):  # ours: also from Device objects parsed once, as the allocator holds them
        from test_dra_cel import _device

        parsed = [_device(d) for d in devices]
        rounds = []
        for _ in range(3):
            started = time.perf_counter()
            for d in parsed:
                program.device_matches(d)
            rounds.append(time.perf_counter() - started)
        line += f"; {statistics.median(rounds) / DEVICES * 1e6:.1f} µs/device from parsed Devices"
    return line


def main() -> None:
    name = sys.argv[1]
    compile_, run = ADAPTERS[name]()
    print(name)
    for file in ("dra_cel_upstream.json", "dra_cel_more.json"):
        print("  " + correctness(compile_, run, file, limits_cost=name == "ours"))
    print("  " + speed(compile_, run))


if __name__ == "__main__":
    main()
