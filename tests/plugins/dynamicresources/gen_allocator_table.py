"""Regenerates one release's allocator table (``allocator_table_v0_35_4.py``...) from upstream's
``allocatortesting/allocator_testing.go`` of that ``dynamic-resource-allocation`` release.

    python -m tests.plugins.dynamicresources.gen_allocator_table v0.35.4 [path/to/allocator_testing.go]
    ruff format tests/plugins/dynamicresources && ruff check --fix tests/plugins/dynamicresources

The path defaults to the release's copy in the Go module cache. Each case of ``TestAllocator`` whose
required features are among those the port implements at that release is translated expression by expression:
upstream's builder calls become the same-named (snake_case) builders of allocator_builders.py,
composite literals become ``obj(...)`` (JSON through Go field names), lists and maps stay lists and
dicts, and ``func() T { ...; return x }()`` becomes ``last(step, ..., x)``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scheduler.plugins.dynamicresources.structured.features import RELEASES, supported

# Per release: the features (Go names) a case may enable to be ported; the incubating variant's
# that the port implements there.
PORTED_FEATURES = {
    release: {name.title().replace("_", "") for name in supported("incubating", release)} for release in RELEASES
}
_CASE_KEYS = {
    "features": "features",
    "claimsToAllocate": "claims",
    "allocatedDevices": "allocated",
    "classes": "classes",
    "slices": "slices",
    "node": "node",
    "expectResults": "expect",
    "expectError": "error",
    "expectNumAllocateOneInvocations": "steps",
    "expectNumAllocateOneInvocationsByChannel": "steps_by_channel",
    "allocatedSharedDeviceIDs": "allocated_shares",
    "allocatedCapacityDevices": "allocated_capacity",
}
_QUALIFIED = {
    "resourceapi.DeviceAllocationModeAll": '"All"',
    "resourceapi.DeviceAllocationModeExactCount": '"ExactCount"',
    "resourceapi.AllocationResultsMaxSize": "ALLOCATION_RESULTS_MAX_SIZE",
    "resourceapi.AllocationConfigSourceClass": '"FromClass"',
    "resourceapi.AllocationConfigSourceClaim": '"FromClaim"',
    "v1.NodeSelectorOpIn": '"In"',
    "math.MaxInt": "MAX_INT",
    "resourceapi.DeviceTaintEffectNoSchedule": '"NoSchedule"',
    "resourceapi.DeviceTaintEffectNoExecute": '"NoExecute"',
    "resourceapi.DeviceTaintEffectNone": '"None"',
    "resource.BinarySI": '"BinarySI"',
    "resource.DecimalSI": '"DecimalSI"',
}
# Named Go types that are maps (their composite literals are dicts, an elided value too).
_MAP_TYPES = {"ConsumedCapacityCollection", "ConsumedCapacity"}
# What our API types do not hold yet (DRAOptionalNodeOperations' skipNodeOperations, the counter
# consumptions' compatibility groups).
_NOT_HELD = re.compile(
    r"\b(with_skip_node_operations|node_with_draoptional_node_operations|device_counter_consumption_with_groups)\b"
)
_IDENTITY_CALLS = {"ptr.To", "int64", "int", "string", "resource.MustParse", "resourceapi.DeviceAllocationMode", "new"}
_IDENTITY_CALLS |= {"gomega.MatchError", "gomega.ContainSubstring"}
_HEADER = '''"""Upstream's allocator test table (``k8s.io/dynamic-resource-allocation@{release}``,
``structured/internal/allocatortesting/allocator_testing.go``, ``TestAllocator``) as data, names kept,
inputs and expected answers as upstream wrote them (an expected error is a substring of the error,
as upstream matches it).

Which cases: every one whose features are among those the port implements at this release:
{features}.
Left out ({left_out}): the cases enabling any other feature (docs/dra-allocator.md).

Generated from the Go source by ``gen_allocator_table.py`` (then ``ruff check --fix`` and
``ruff format``); do not edit by hand.
"""

from __future__ import annotations

from tests.plugins.dynamicresources.allocator_builders import (
'''

Node = tuple[Any, ...]


def upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _string_end(text: str, i: int) -> int:
    """Index after the Go string literal starting at ``i``."""
    if text[i] == "`":
        return text.index("`", i + 1) + 1
    j = i + 1
    while text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1


def strip_comments(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] in '"`':
            j = _string_end(text, i)
            out.append(text[i:j])
            i = j
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = len(text) if j < 0 else j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def tokens(text: str) -> Iterator[tuple[str, str]]:
    i = 0
    while i < len(text):
        c = text[i]
        if c in '"`':
            j = _string_end(text, i)
            yield ("str", text[i:j] if c == '"' else repr(text[i + 1 : j - 1]))
            i = j
        elif c.isalnum() or c == "_":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            yield ("num" if c.isdigit() else "id", text[i:j])
            i = j
        elif c.isspace():
            i += 1
        elif text[i : i + 2] in (":=", "++", "+=", "&&", "||", "=="):
            yield ("op", text[i : i + 2])
            i += 2
        else:
            yield ("op", c)
            i += 1


class Parser:
    """Just enough of Go's expression grammar for the table: calls, selectors, indexing, composite
    literals (typed and elided), slices and maps, and immediately called closures."""

    def __init__(self, text: str) -> None:
        self.toks = list(tokens(strip_comments(text)))
        self.i = 0

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j][1] if j < len(self.toks) else ""

    def take(self, expected: str | None = None) -> tuple[str, str]:
        tok = self.toks[self.i]
        self.i += 1
        if expected is not None and tok[1] != expected:
            raise SyntaxError(f"expected {expected!r}, got {tok[1]!r} near {self.near()}")
        return tok

    def near(self) -> str:
        return " ".join(t[1] for t in self.toks[max(0, self.i - 12) : self.i + 4])

    def elements(self) -> list[tuple[str | Node | None, Node]]:
        """Up to the closing brace: ``key: value`` or bare values (an elided ``{...}`` included); a
        map's key may be an expression (``MakeDeviceID(...): {...}``)."""
        out: list[tuple[str | Node | None, Node]] = []
        while self.peek() != "}":
            key: str | Node | None = None
            if self.toks[self.i][0] in ("id", "str") and self.peek(1) == ":":
                key = self.take()[1]
                self.take(":")
            elif self.peek() != "{":
                start = self.i
                candidate = self.expr()
                if self.peek() == ":":
                    self.take(":")
                    key = candidate
                else:
                    self.i = start
            if self.peek() == "{":
                self.take("{")
                value: Node = ("elided", self.elements())
            else:
                value = self.expr()
            out.append((key, value))
            if self.peek() == ",":
                self.take()
        self.take("}")
        return out

    def type_(self) -> Node:
        tok = self.take()[1]
        if tok == "[":
            self.take("]")
            return ("slice", self.type_())
        if tok == "map":
            self.take("[")
            self.type_()
            self.take("]")
            return ("map", self.type_())
        if tok == "*":
            return self.type_()
        if self.peek() == ".":
            self.take()
            tok += "." + self.take()[1]
        return ("named", tok)

    def expr(self) -> Node:
        left = self.unary()
        while self.peek() in ("+", "-", "*", "/", "==", "&&", "||"):
            op = self.take()[1]
            left = ("bin", op, left, self.unary())
        return left

    def unary(self) -> Node:
        if self.peek() in ("&", "*"):  # taking an address, or dereferencing: the same value here
            self.take()
            return self.unary()
        if self.peek() == "-":
            self.take()
            return ("neg", self.unary())
        return self.primary()

    def operand(self) -> Node:
        kind, tok = self.toks[self.i]
        if tok in ("[", "map"):
            typ = self.type_()
            self.take("{")
            return ("composite", typ, self.elements())
        if tok == "func":
            self.take()
            self.take("(")
            self.take(")")
            self.type_()
            self.take("{")
            steps = self.block()
            self.take("(")
            self.take(")")
            return ("closure", steps)
        if tok == "(":
            self.take()
            inner = self.expr()
            self.take(")")
            return ("paren", inner)
        if kind in ("str", "num", "id"):
            self.take()
            return ("lit" if kind != "id" else "id", tok)
        raise SyntaxError(f"unexpected {tok!r} near {self.near()}")

    def primary(self) -> Node:
        node = self.operand()
        while True:
            nxt = self.peek()
            if nxt == "." and self.peek(1) == ".":  # a variadic argument's "..."
                return node
            if nxt == ".":
                self.take()
                node = ("sel", node, self.take()[1])
            elif nxt == "(":
                self.take()
                args: list[Node] = []
                while self.peek() != ")":
                    arg = self.expr()
                    if self.peek() == ".":
                        for _ in range(3):
                            self.take(".")
                        arg = ("spread", arg)
                    args.append(arg)
                    if self.peek() == ",":
                        self.take()
                self.take(")")
                node = ("call", node, args)
            elif nxt == "[":
                self.take()
                index = self.expr()
                self.take("]")
                if node != ("sel", ("id", "ptr"), "To"):  # ptr.To[int64]: a type argument
                    node = ("index", node, index)
            elif nxt == "{" and node[0] in ("id", "sel"):
                self.take()
                node = ("composite", ("named", dotted(node)), self.elements())
            else:
                return node

    def block(self) -> list[Node]:
        steps: list[Node] = []
        while self.peek() != "}":
            if self.peek() == "return":
                self.take()
                steps.append(("return", self.expr()))
                continue
            target = self.expr()
            op = self.take()[1]
            if op == ":=":
                steps.append(("define", target, self.expr()))
            elif op == "=":
                steps.append(("set", target, self.expr()))
            elif op == "++":
                steps.append(("set", target, ("bin", "+", target, ("lit", "1"))))
            elif op == "+=":
                steps.append(("set", target, ("bin", "+", target, self.expr())))
            else:
                raise SyntaxError(f"unexpected {op!r} near {self.near()}")
        self.take("}")
        return steps


def dotted(node: Node) -> str:
    if node[0] == "id":
        return str(node[1])
    if node[0] == "sel":
        return dotted(node[1]) + "." + node[2]
    return "?"


class Emitter:
    def __init__(self, constants: set[str], functions: set[str]) -> None:
        self.constants = constants
        self.functions = functions

    def emit(self, node: Node, local: frozenset[str] = frozenset()) -> str:
        kind = node[0]
        if kind == "lit":
            return self.literal(node[1])
        if kind == "id":
            return self.name(node[1], local)
        if kind == "paren":
            return "(" + self.emit(node[1], local) + ")"
        if kind == "neg":
            return "-" + self.emit(node[1], local)
        if kind == "spread":
            return "*" + self.emit(node[1], local)
        if kind == "bin":
            op = {"&&": "and", "||": "or", "/": "//"}.get(node[1], node[1])
            return f"{self.emit(node[2], local)} {op} {self.emit(node[3], local)}"
        if kind == "sel":
            if dotted(node) in _QUALIFIED:
                return _QUALIFIED[dotted(node)]
            field = node[2] if node[2][0].isupper() else snake(node[2])
            return self.emit(node[1], local) + "." + field
        if kind == "index":
            return f"{self.emit(node[1], local)}[{self.emit(node[2], local)}]"
        if kind == "call":
            return self.call(node[1], [self.emit(a, local) for a in node[2]], local)
        if kind == "composite":
            return self.composite(node[1], node[2], local)
        if kind == "elided":
            return self.struct(node[1], local)
        if kind == "closure":
            return self.closure(node[1], local)
        raise ValueError(node)

    @staticmethod
    def literal(text: str) -> str:
        # Go's raw strings (CEL expressions, single-quoted here) sit deeper in the cases than messages.
        if text[:1] in ("'", '"') and len(text) > (80 if text[0] == "'" else 90) and "\\" not in text:
            cut = text.rfind(" ", 0, 70) + 1
            quote = text[0]
            return f"({text[:cut]}{quote} {quote}{text[cut:]})"
        return text

    def name(self, name: str, local: frozenset[str]) -> str:
        if name in local:
            return "v_" + snake(name)
        if name in ("nil", "true", "false"):
            return {"nil": "None", "true": "True", "false": "False"}[name]
        if name in self.constants:
            return upper_snake(name)
        if name in self.functions:
            return "device_class" if name == "class" else snake(name)
        return name

    def call(self, func: Node, args: list[str], local: frozenset[str]) -> str:
        name = dotted(func)
        if name in _IDENTITY_CALLS:
            return args[0]
        special = {
            "fmt.Sprintf": "sprintf",
            "slices.Concat": "concat",
            "MakeDeviceID": "DeviceID",
            "gomega.And": "all_of",
            "resource.NewQuantity": "new_quantity",
            "resource.NewMilliQuantity": "new_milli_quantity",
            "internal.MakeSharedDeviceID": "shared_device_id",
            "sets.New": "objects",
        }
        if name in special:
            return f"{special[name]}({', '.join(args)})"
        if func[0] == "sel" and func[2] in ("DeepCopy", "obj"):
            return f"copy_obj({self.emit(func[1], local)})"
        if func[0] == "sel" and func[2].startswith("with"):  # a wrapper's method: a builder here
            return f"{snake(func[2])}({', '.join([self.emit(func[1], local), *args])})"
        if func[0] == "id" and func[1] in self.functions:  # Go's `claim := claim(...)`
            return f"{self.name(func[1], frozenset())}({', '.join(args)})"
        return f"{self.emit(func, local)}({', '.join(args)})"

    def composite(self, typ: Node, elements: list[tuple[str | Node | None, Node]], local: frozenset[str]) -> str:
        if typ[0] == "slice":
            return "[" + ", ".join(self.emit(v, local) for _, v in elements) + "]"
        if typ[0] == "map":
            value_type = typ[1]
            return self.mapping(elements, local, value_type[0] == "map" or value_type[1] in _MAP_TYPES)
        if typ[1] in _MAP_TYPES:  # ConsumedCapacityCollection: device -> ConsumedCapacity
            return self.mapping(elements, local, typ[1] == "ConsumedCapacityCollection")
        if typ[1] == "Features":
            flags = ", ".join(f"{snake(str(k))}={self.emit(v, local)}" for k, v in elements)
            return f"Features({flags})"
        return self.struct(elements, local)

    def mapping(
        self, elements: list[tuple[str | Node | None, Node]], local: frozenset[str], of_maps: bool = False
    ) -> str:
        """A map literal: keys are strings, names or expressions; with ``of_maps`` an elided value is
        a map too (the tables' maps of maps)."""
        parts = []
        for key, value in elements:
            if isinstance(key, tuple):
                k = self.emit(key, local)
            else:
                k = self.literal(str(key)) if str(key)[:1] in "\"'" else self.name(str(key), local)
            v = self.mapping(value[1], local) if of_maps and value[0] == "elided" else self.emit(value, local)
            parts.append(f"{k}: {v}")
        return "{" + ", ".join(parts) + "}"

    def struct(self, elements: list[tuple[str | Node | None, Node]], local: frozenset[str]) -> str:
        return "obj(" + ", ".join((f"{k}=" if k else "") + self.emit(v, local) for k, v in elements) + ")"

    def closure(self, steps: list[Node], local: frozenset[str]) -> str:
        local = local | {step[1][1] for step in steps if step[0] == "define"}
        parts = []
        for step in steps:
            if step[0] == "define":
                parts.append(f"(v_{snake(step[1][1])} := {self.emit(step[2], local)})")
            elif step[0] == "set":
                target = step[1]
                parts.append(f"assign({self.emit(target[1], local)}, {target[2]!r}, {self.emit(step[2], local)})")
            else:
                parts.append(self.emit(step[1], local))
        return "last(" + ", ".join(parts) + ")"


def translate(source: str, ported: set[str]) -> tuple[list[str], list[str]]:
    """The table's cases as Python lines, and the names of those left out."""
    # v0.35 declares the table's type inline and loops over it; v0.36 on name the type and hand the
    # table to RunTestAllocator.
    start = source.index("testcases := map[string]")
    end = source.find("RunTestAllocator(t, ", start)
    table = source[start : end if end >= 0 else source.index("for name, tc := range testcases")]
    for channel in ("Stable", "Incubating", "Experimental"):
        table = table.replace(f"internal.{channel}:", f'"{channel.lower()}":')
    parts = re.split(r'\n\t\t"([^"]+)": \{\n?', table)
    consts_block = source[source.index("const (") : source.index("var (")]
    constants = set(re.findall(r"^\t(\w+)\s+= ", consts_block, re.M))
    constants |= set(re.findall(r"^\t(\w+)\s*:?= ", source[source.index("func TestAllocator(") : start], re.M))
    constants |= {"fieldNameKey", "regionKey", "planetKey", "planetValueEarth", "nodeSelectionAll"}
    constants |= {"nodeSelectionPerDevice", "zero", "one", "two", "three", "four", "fromCounters", "fixedShareID"}
    constants |= {"pointOne", "pointTwo", "pointTwoFive", "pointThree"}
    functions = set(re.findall(r"^func (\w+)", source, re.M))
    emitter = Emitter(constants, functions)
    lines: list[str] = []
    left_out: list[str] = []
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        features = re.search(r"features: Features\{(.*?)\}", body, re.S)
        required = set(re.findall(r"(\w+):\s+true", features.group(1))) if features else set()
        if not required <= ported:
            left_out.append(name)
            continue
        text = strip_comments(body).rstrip()
        text = text[: text.rstrip(",").rfind("}")]
        parser = Parser(text + "\n}")
        try:
            fields = [f"{_CASE_KEYS[str(k)]}={emitter.emit(v)}" for k, v in parser.elements()]
        except (SyntaxError, KeyError, ValueError):
            left_out.append(name)  # beyond this translator
            continue
        line = f"    {name!r}: Case({', '.join(fields)}),"
        if _NOT_HELD.search(line):
            left_out.append(name)
            continue
        lines.append(line)
    return lines, left_out


def output(release: str) -> Path:
    return Path(__file__).with_name(f"allocator_table_{release.replace('.', '_')}.py")


def main(argv: list[str]) -> None:
    release = argv[1]
    if len(argv) > 2:
        path = Path(argv[2])
    else:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
        path = Path(cache) / f"k8s.io/dynamic-resource-allocation@{release}/structured/internal/allocatortesting"
        path /= "allocator_testing.go"
    ported = PORTED_FEATURES[release]
    lines, left_out = translate(path.read_text(), ported)
    body = "CASES = {\n" + "\n".join(lines) + "\n}\n"
    builders = Path(__file__).with_name("allocator_builders.py").read_text()
    defined = set(re.findall(r"^def (\w+)", builders, re.M)) | set(re.findall(r"^(\w+) = ", builders, re.M))
    defined |= {"Case", "DeviceID", "Features", "ALLOCATION_RESULTS_MAX_SIZE"}
    code = re.sub(r"'[^']*'|\"[^\"]*\"", "", body)
    used = sorted(n for n in set(re.findall(r"\b\w+\b", code)) if n in defined)
    header = _HEADER.format(release=release, features=",\n".join(sorted(ported)), left_out=len(left_out))
    out = output(release)
    out.write_text(header + "".join(f"    {n},\n" for n in used) + ")\n\n" + body)
    print(f"{len(lines)} cases written to {out}; left out: {', '.join(left_out)}")


if __name__ == "__main__":
    main(sys.argv)
