"""DRA's CEL device selectors, compiled and evaluated as upstream's ``k8s.io/dynamic-resource-allocation/cel``.

The scheduler's allocator compiles each selector of a DeviceClass or request through its cache
(``Cache.GetOrCompile``: the *stored expressions* environment, cost estimation off) and evaluates
it against one device at a time (``CompilationResult.DeviceMatches``). This module does the same
on cel-expr-python (cel-cpp; docs/dra-cel.md says why that library): the variable ``device``
(``driver``, ``allowMultipleAllocations``, ``attributes[domain][id]``, ``capacity[domain][id]``),
the Kubernetes quantity and semver functions, ``cel.bind``, the strings and optional extensions,
``includes`` from 1.36, and upstream's texts for compile errors, runtime errors, a non-bool result
and the runtime cost limit.

Differences from upstream that no library here can close are listed in docs/dra-cel.md.
Pure: no I/O.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import ModuleType
from typing import TYPE_CHECKING, Any

from scheduler.api.resourceslice import Device, DeviceAttribute
from scheduler.api.semver import SemverError


def _lazy(name: str) -> ModuleType:
    """``name``, executed on its first attribute read (see ``Compiler._env`` for why)."""
    if (loaded := sys.modules.get(name)) is not None:
        return loaded
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None, name
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from scheduler.plugins.dynamicresources import celcost, cellib, celtypes, celwrap
else:
    celcost = _lazy("scheduler.plugins.dynamicresources.celcost")
    cellib = _lazy("scheduler.plugins.dynamicresources.cellib")
    celtypes = _lazy("scheduler.plugins.dynamicresources.celtypes")
    celwrap = _lazy("scheduler.plugins.dynamicresources.celwrap")

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_COST",
    "CEL_SELECTOR_EXPRESSION_MAX_LENGTH",
    "COST_LIMIT_EXCEEDED",
    "Cache",
    "CelError",
    "Compiled",
    "Compiler",
    "Result",
    "compiler_for",
]

CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength (API validation)
# cel-go's parser limits (parser.MaxCodePointCount's default in the Kubernetes environment).
MAX_CODE_POINTS = 100_000
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"
NO_SUCH_KEY_HINT = (  # cel.EnhanceRuntimeError, from 1.37
    ". consider using CEL optional chaining (.? followed by orValue())"
    " or guarding the check with has() for optional fields"
)
UNSUPPORTED_ATTRIBUTE = "unsupported attribute value"
PREPARED_DEVICES = 65_536  # devices whose CEL input is kept: a large cluster's slices, bounded
RESULTS_PER_DEVICE = 64  # answers kept per device (the classes' and requests' selectors it met)

ErrorType = str  # apiservercel.ErrorType: "Invalid" or "Internal"


@dataclass(frozen=True, slots=True)
class CelError:
    """``apiservercel.Error``: its ``Error()`` is the detail alone."""

    type: ErrorType
    detail: str

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True, slots=True)
class Result:
    """``DeviceMatches``'s answer: a match, or the error text upstream's err.Error() reads."""

    matches: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Compiled:
    """``CompilationResult``: the program, or the error that stopped the compilation."""

    expression: str
    error: CelError | None
    program: Any = None
    worst_case_cost: int = 0  # our own estimate, used to refuse what would run past the cost limit
    attribute_ranges: tuple[tuple[str, str], ...] = ()  # (domain, id) a comprehension ranges over
    compiler: Compiler | None = None

    def device_matches(self, device: Device) -> Result:
        if self.error is not None or self.compiler is None:
            raise ValueError("expression did not compile")  # upstream would nil-dereference
        return self.compiler.evaluate(self, device)


def _status_text(text: str) -> str:
    """cel-cpp's ``absl::Status`` text without its code prefix and payload suffix."""
    text = re.sub(r"^[A-Z_]+: ", "", text, count=1)
    return re.sub(r" \[[A-Z_]+\]$", "", text)


_TYPE_ATOMS = {
    "BOOL": "bool",
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
    "NULL": "null_type",
    "DYN": "dyn",
    "TYPE": "type",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "DURATION": "google.protobuf.Duration",
    "LIST": "list",
    "MAP": "map",
}


def go_type_name(cpp_name: str) -> str:
    """cel-cpp's spelling of a type (``LIST<INT>``) as cel-go's ``Type.String()`` (``list(int)``)."""
    spelled = re.sub(r"[A-Za-z_][A-Za-z_0-9.]*", lambda m: _TYPE_ATOMS.get(m.group(0), m.group(0)), cpp_name)
    return spelled.replace("<", "(").replace(">", ")")


# What cel-go's ConvertToNative(bool) says of a result of each kind (read from upstream's runs).
_NOT_BOOL = {
    "string": "unsupported native conversion from string to 'bool'",
    "int": "unsupported type conversion from 'int' to bool",
    "uint": "unsupported type conversion from 'uint' to bool",
    "double": "type conversion error from Double to 'bool'",
    "list": "type conversion error from list to 'bool'",
    "map": "type conversion error from map to 'bool'",
    "null_type": "type conversion error from 'null_type' to 'bool'",
    "kubernetes.Semver": "type conversion error from 'Semver' to 'bool'",  # celtypes.SEMVER_TYPE
    "kubernetes.Quantity": "type conversion error from 'Quantity' to 'bool'",  # celtypes.QUANTITY_TYPE
}


def _runtime_message(raw: str) -> str:
    """A cel-cpp evaluation error in cel-go's words, where the two say the same thing differently."""
    text = _status_text(raw)
    if m := re.fullmatch(r'Key not found in map : "?(.*?)"?', text, re.DOTALL):
        return f"no such key: {m.group(1)}"
    if text == "No matching overloads found : <iter_range>":
        return _NOT_ITERABLE
    if text.startswith("No matching overloads found"):
        return "no such overload"
    if text.startswith("invalid regular expression: "):  # matches with a computed pattern
        return cellib.go_regexp_error(text.removeprefix("invalid regular expression: "))
    if text == "divide by zero":
        return "division by zero"
    if m := re.fullmatch(r"Index error: index=(-?\d+) size=\d+", text):
        return f"index out of bounds: {m.group(1)}"
    return text


class Compiler:
    """One minor's selector environment (upstream's compiler over the stored-expressions EnvSet)."""

    def __init__(self, minor: int) -> None:
        self.minor = minor
        self.includes = minor >= 36  # library.IncludesOption, declared from 1.36
        self.list_attributes = minor >= 37  # getAttributeValue reads the list kinds from 1.37
        self.enhance_errors = minor >= 37  # cel.EnhanceRuntimeError
        self.dyn_attributes = minor >= 37  # attributes typed dyn (any before): comprehensions over them
        self._built: Any = None
        self._build_lock = threading.Lock()
        self._lock = threading.Lock()  # cel-cpp's Env is not documented as thread-safe
        self._prepared: OrderedDict[int, tuple[weakref.ref[Device], _Prepared | str]] = OrderedDict()

    @property
    def _env(self) -> Any:
        """cel-cpp's environment, built for the first selector: every profile holds a compiler, and
        the CEL stack (cel-cpp, google-re2, protobuf) is memory a cluster without DRA selectors
        never needs (measured in docs/benchmarks.md, per Kubernetes minor)."""
        if self._built is None:
            with self._build_lock:
                if self._built is None:
                    cel = celwrap.cel
                    self._built = cel.NewEnv(
                        celtypes.POOL,
                        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
                        extensions=[
                            celwrap.ext_bindings.ExtBindings(),
                            celwrap.ext_strings.ExtStrings(),
                            celwrap.ext_optional.ExtOptional(),
                        ],
                        functions=cellib.function_decls(includes=self.includes),
                    )
        return self._built

    def compile(self, expression: str) -> Compiled:
        def failed(detail: str, kind: ErrorType = "Invalid") -> Compiled:
            return Compiled(expression, CelError(kind, detail))

        if len(expression) > MAX_CODE_POINTS:
            return failed(
                "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: "
                f"size: {len(expression)}, limit {MAX_CODE_POINTS}"
            )
        try:
            with self._lock:
                checked = self._env.compile(expression)
        except RuntimeError as err:
            return failed("compilation failed: " + _status_text(str(err)))
        output = go_type_name(checked.return_type().name())
        if output not in ("bool", "dyn"):
            return failed(f"must evaluate to bool or the unknown type, not {output}")
        structure = celcost.decode(checked.serialize())
        if not self.dyn_attributes and celcost.dyn_call_result(structure):
            return failed("must evaluate to bool or the unknown type, not dyn")
        bad = celcost.undefined_device_field(structure, expression)
        if bad is None and not self.dyn_attributes:
            bad = celcost.attribute_range(structure, expression)
        if bad is None:
            bad = self._regex_literals(structure, expression)
        if bad is not None and bad.startswith("program instantiation failed"):
            return failed(bad, "Internal")  # upstream's env.Program error is of type Internal
        if bad is not None:
            return failed("compilation failed: " + bad)
        return Compiled(
            expression, None, checked, celcost.worst_case(structure), celcost.attribute_ranges(structure), self
        )

    @staticmethod
    def _regex_literals(structure: celcost.Structure, expression: str) -> str | None:
        """A literal pattern RE2 refuses, in cel-go's words: ``matches`` is the checker's error,
        ``find``/``findAll`` the regex library's when the program is built (Go's regexp texts)."""
        for function, pattern, offset in celcost.regex_literals(structure):
            problem = cellib.re2_error(pattern)
            if problem is None:
                continue
            if function == "matches":
                return celcost.located(expression, offset, "invalid matches argument")
            return "program instantiation failed: " + problem
        return None

    def evaluate(self, compiled: Compiled, device: Device) -> Result:
        """``DeviceMatches``: the device's values as the program reads them, then its answer. The
        answer is a function of the expression and the device alone, so it is kept with the device's
        values (each node's Filter asks it again of every pod of the class)."""
        if compiled.worst_case_cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
            return Result(False, COST_LIMIT_EXCEEDED)
        prepared = self._prepare(device)
        if isinstance(prepared, str):
            return Result(False, prepared)
        known = prepared.results.get(compiled.expression)
        if known is not None:
            return known
        result = self._evaluate(compiled, prepared)
        if len(prepared.results) < RESULTS_PER_DEVICE:
            prepared.results[compiled.expression] = result
        return result

    def _evaluate(self, compiled: Compiled, prepared: _Prepared) -> Result:
        first = self._run(compiled, prepared.activation)
        if not isinstance(first, str):
            return _answer(first)
        # Upstream's outer maps answer a lookup of a domain the device lacks with an empty map
        # (newStringInterfaceMapWithDefault); cel-cpp's say "no such key". A lookup that failed on a
        # missing domain is run again with that domain present and empty, a bounded number of times.
        attributes = {domain: dict(ids) for domain, ids in prepared.attributes.items()}
        capacity = {domain: dict(ids) for domain, ids in prepared.capacity.items()}
        data = {"device": dict(prepared.data["device"], attributes=attributes, capacity=capacity)}
        message: bool | str | _NotBool = first
        for attempt in range(8):
            if attempt:
                message = self._run(compiled, data)
            if not isinstance(message, str):
                return _answer(message)
            missing = re.fullmatch(r"no such key: (.*)", message, re.DOTALL)
            key = missing.group(1) if missing else None
            added = False
            if key is not None and key not in attributes:
                attributes[key] = {}
                added = True
            if key is not None and key not in capacity:
                capacity[key] = {}
                added = True
            if not added:
                break
        assert isinstance(message, str)
        if message == _NOT_ITERABLE:
            message = _not_iterable(compiled, attributes)
        if self.enhance_errors and "no such key:" in message:
            message += NO_SUCH_KEY_HINT
        return Result(False, message)

    def _prepare(self, device: Device) -> _Prepared | str:
        """The device's values as cel-cpp reads them, kept while the device lives (a device is
        matched against many selectors and pods; cel-cpp's activation is most of an evaluation's
        cost), at most ``PREPARED_DEVICES``; or the error upstream reports for its attributes.
        A ``Device`` is never changed once built, as every API object here."""
        key = id(device)
        with self._lock:
            kept = self._prepared.get(key)
            if kept is not None and kept[0]() is device:
                self._prepared.move_to_end(key)
                return kept[1]
        try:
            attributes = self._attributes(device)
        except cellib.RefusedError as err:
            prepared: _Prepared | str = str(err)
        else:
            capacity = _by_domain(device.capacity, device.driver, celtypes.make_quantity)
            data = {
                "device": {
                    "driver": device.driver,
                    "allowMultipleAllocations": bool(device.allow_multiple_allocations),
                    "attributes": attributes,
                    "capacity": capacity,
                }
            }
            prepared = _Prepared(data, attributes, capacity, self._env.Activation(data))
        with self._lock:
            self._prepared[key] = (weakref.ref(device), prepared)
            while len(self._prepared) > PREPARED_DEVICES:
                self._prepared.popitem(last=False)
        return prepared

    def _run(self, compiled: Compiled, data: Mapping[str, Any] | Any) -> bool | str | _NotBool:
        """The program's bool, an error's text (cel-go's words), or the type of a result of another kind."""
        try:
            value = compiled.program.eval(data=data) if isinstance(data, Mapping) else compiled.program.eval(data)
        except (RuntimeError, ValueError) as err:
            return self._error_text(str(err))
        kind = value.type().name()
        if kind == "ERROR":
            return self._error_text(str(value.value()))
        if kind == "BOOL":
            return bool(value.value())
        return _NotBool(go_type_name(kind.split("<", 1)[0]))

    @staticmethod
    def _error_text(raw: str) -> str:
        if cellib.REFUSED_MARK in raw:
            return raw.split(cellib.REFUSED_MARK, 1)[1].removesuffix(" [OUT_OF_RANGE]").removesuffix(" [UNKNOWN]")
        return _runtime_message(raw)

    def _attributes(self, device: Device) -> dict[str, dict[str, Any]]:
        def value(name: str, attr: DeviceAttribute) -> Any:
            try:
                return self._attribute_value(attr)
            except cellib.RefusedError as err:
                raise cellib.RefusedError(f"attribute {name}: {err}") from None

        out: dict[str, dict[str, Any]] = {}
        for name, attr in device.attributes.items():
            domain, ident = _split(name, device.driver)
            out.setdefault(domain, {})[ident] = value(name, attr)
        return out

    def _attribute_value(self, attr: DeviceAttribute) -> Any:
        """``getAttributeValue``: the one value set, in upstream's order of fields."""
        if self.list_attributes:
            if attr.int_values is not None:
                return list(attr.int_values)
            if attr.bool_values is not None:
                return list(attr.bool_values)
            if attr.string_values is not None:
                return list(attr.string_values)
            if attr.version_values is not None:
                return [self._version(v) for v in attr.version_values]
        if attr.int_value is not None:
            return attr.int_value
        if attr.bool_value is not None:
            return attr.bool_value
        if attr.string_value is not None:
            return attr.string_value
        if attr.version_value is not None:
            return self._version(attr.version_value)
        raise cellib.RefusedError(UNSUPPORTED_ATTRIBUTE)

    @staticmethod
    def _version(text: str) -> Any:
        try:
            return celtypes.make_semver(celtypes.parse_semver(text))
        except SemverError as err:
            raise cellib.RefusedError(f"parse semantic version: {err}") from None


@dataclass(frozen=True, slots=True)
class _Prepared:
    data: dict[str, Any]
    attributes: dict[str, dict[str, Any]]
    capacity: dict[str, dict[str, Any]]
    activation: Any
    results: dict[str, Result] = field(default_factory=dict)  # expression -> its answer for the device


@dataclass(frozen=True, slots=True)
class _NotBool:
    type_name: str


def _answer(value: bool | _NotBool) -> Result:
    if isinstance(value, bool):
        return Result(value)
    kind = value.type_name
    reason = _NOT_BOOL.get(kind, f"type conversion error from {kind} to 'bool'")
    return Result(False, f"CEL result of type {kind} could not be converted to bool: {reason}")


_NOT_ITERABLE = "\x01not iterable"
# cel-go's Go type of a value a comprehension cannot range over (``got '%T', expected iterable type``).
_GO_TYPES = {bool: "types.Bool", int: "types.Int", str: "types.String"}


def _not_iterable(compiled: Compiled, attributes: Mapping[str, Mapping[str, Any]]) -> str:
    for domain, ident in compiled.attribute_ranges:
        value = attributes.get(domain, {}).get(ident)
        if value is None or isinstance(value, list):
            continue
        name = _GO_TYPES.get(type(value), "cel.Semver")
        return f"got '{name}', expected iterable type"
    return "no such overload"


def _split(name: str, default_domain: str) -> tuple[str, str]:
    """``parseQualifiedName``: ``domain/id``, or the driver's domain for a bare id."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (default_domain, name)


def _by_domain(
    values: Mapping[str, Fraction], driver: str, convert: Callable[[Fraction], Any]
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, v in values.items():
        domain, ident = _split(name, driver)
        out.setdefault(domain, {})[ident] = convert(v)
    return out


_COMPILERS: dict[int, Compiler] = {}
_COMPILERS_LOCK = threading.Lock()


def compiler_for(minor: int) -> Compiler:
    """``GetCompiler``: one environment per minor, built once."""
    with _COMPILERS_LOCK:
        if minor not in _COMPILERS:
            _COMPILERS[minor] = Compiler(minor)
        return _COMPILERS[minor]


class Cache:
    """``cel.Cache``: the last compiled expressions, most recently used kept, at most ``max_size``.

    Upstream keeps only successful compilations (an error is compiled again next time) and the
    scheduler sizes its cache at 10; the size is the caller's here.
    """

    def __init__(self, max_size: int, compiler: Compiler) -> None:
        if max_size < 1:
            raise ValueError("cache size must be positive")
        self.max_size = max_size
        self.compiler = compiler
        self._entries: OrderedDict[str, Compiled] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compile(self, expression: str) -> Compiled:
        with self._lock:
            hit = self._entries.get(expression)
            if hit is not None:
                self._entries.move_to_end(expression)
                return hit
        compiled = self.compiler.compile(expression)
        if compiled.error is None:
            with self._lock:
                self._entries[expression] = compiled
                self._entries.move_to_end(expression)
                while len(self._entries) > self.max_size:
                    self._entries.popitem(last=False)
        return compiled

    def __len__(self) -> int:
        return len(self._entries)
