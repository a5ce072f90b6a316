"""The checked expression's structure, read from cel-cpp's serialized ``cel.expr.CheckedExpr``:
a worst-case cost for the runtime cost limit, and ``device``'s fields checked by name.

cel-cpp tracks no evaluation cost (cel-go's ``CostLimit``): a program whose worst case, counted
here, passes upstream's limit is refused before it runs, with upstream's runtime message. The
count follows cel-go's units where they are simple (1 an operation, 10 a list literal, the loop
body once per element: a literal list's length, 64 for a value read from the device, the most a
DRA attribute or capacity map holds), so that nested comprehensions such as upstream's
``expensive`` case are refused at once instead of running for minutes.

The wire schema (``cel/expr/syntax.proto``, ``checked.proto``) is declared here by hand, only the
fields read. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory

__all__ = [
    "DEVICE_FIELDS",
    "attribute_range",
    "attribute_ranges",
    "decode",
    "dyn_call_result",
    "located",
    "regex_literals",
    "undefined_device_field",
    "worst_case",
]

DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})
UNKNOWN_RANGE = 64  # max(DeviceAttributeMaxValueLength, ResourceSliceMaxAttributeValuesPerDevice...)
_MAX_COST = 2**63

_F = descriptor_pb2.FieldDescriptorProto
_SCHEMA: dict[str, list[tuple[str, int, int, str, bool]]] = {
    # message: (field, number, type, message type, repeated)
    "Expr": [
        ("id", 2, _F.TYPE_INT64, "", False),
        ("const_expr", 3, _F.TYPE_MESSAGE, "Constant", False),
        ("ident_expr", 4, _F.TYPE_MESSAGE, "Ident", False),
        ("select_expr", 5, _F.TYPE_MESSAGE, "Select", False),
        ("call_expr", 6, _F.TYPE_MESSAGE, "Call", False),
        ("list_expr", 7, _F.TYPE_MESSAGE, "CreateList", False),
        ("struct_expr", 8, _F.TYPE_MESSAGE, "CreateStruct", False),
        ("comprehension_expr", 9, _F.TYPE_MESSAGE, "Comprehension", False),
    ],
    "Constant": [("string_value", 6, _F.TYPE_STRING, "", False)],  # a oneof upstream; only this member read
    "Ident": [("name", 1, _F.TYPE_STRING, "", False)],
    "Select": [
        ("operand", 1, _F.TYPE_MESSAGE, "Expr", False),
        ("field", 2, _F.TYPE_STRING, "", False),
        ("test_only", 3, _F.TYPE_BOOL, "", False),
    ],
    "Call": [
        ("target", 1, _F.TYPE_MESSAGE, "Expr", False),
        ("function", 2, _F.TYPE_STRING, "", False),
        ("args", 3, _F.TYPE_MESSAGE, "Expr", True),
    ],
    "CreateList": [("elements", 1, _F.TYPE_MESSAGE, "Expr", True)],
    "CreateStruct": [("entries", 2, _F.TYPE_MESSAGE, "Entry", True)],
    "Entry": [("map_key", 3, _F.TYPE_MESSAGE, "Expr", False), ("value", 4, _F.TYPE_MESSAGE, "Expr", False)],
    "Comprehension": [
        ("iter_range", 2, _F.TYPE_MESSAGE, "Expr", False),
        ("accu_init", 4, _F.TYPE_MESSAGE, "Expr", False),
        ("loop_condition", 5, _F.TYPE_MESSAGE, "Expr", False),
        ("loop_step", 6, _F.TYPE_MESSAGE, "Expr", False),
        ("result", 7, _F.TYPE_MESSAGE, "Expr", False),
    ],
    "PositionsEntry": [("key", 1, _F.TYPE_INT64, "", False), ("value", 2, _F.TYPE_INT32, "", False)],
    "SourceInfo": [("positions", 4, _F.TYPE_MESSAGE, "PositionsEntry", True)],
    "CheckedExpr": [
        ("expr", 4, _F.TYPE_MESSAGE, "Expr", False),
        ("source_info", 5, _F.TYPE_MESSAGE, "SourceInfo", False),
    ],
}


def _build() -> Any:
    proto = descriptor_pb2.FileDescriptorProto(name="spread_scheduler/cel_expr_read.proto", package="cel.expr")
    proto.syntax = "proto3"
    for name, fields in _SCHEMA.items():
        message = proto.message_type.add(name=name)
        for field, number, kind, type_name, repeated in fields:
            label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            f = message.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                f.type_name = ".cel.expr." + type_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("cel.expr.CheckedExpr"))


_CheckedExpr = _build()


@dataclass(frozen=True, slots=True)
class Structure:
    expr: Any
    positions: dict[int, int]


def decode(serialized: bytes) -> Structure:
    """cel-expr-python's ``Expression.serialize()``: an ``Any`` holding the ``CheckedExpr``."""
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(serialized)
    checked = _CheckedExpr()
    checked.ParseFromString(wrapper.value)
    return Structure(checked.expr, {p.key: p.value for p in checked.source_info.positions})


def _children(e: Any) -> list[Any]:
    out: list[Any] = []
    if e.HasField("select_expr"):
        out.append(e.select_expr.operand)
    if e.HasField("call_expr"):
        if e.call_expr.HasField("target"):
            out.append(e.call_expr.target)
        out.extend(e.call_expr.args)
    if e.HasField("list_expr"):
        out.extend(e.list_expr.elements)
    if e.HasField("struct_expr"):
        for entry in e.struct_expr.entries:
            out.extend([entry.map_key, entry.value])
    if e.HasField("comprehension_expr"):
        c = e.comprehension_expr
        out.extend([c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result])
    return out


def worst_case(structure: Structure) -> int:
    """The most the program can cost in cel-go's units, bounded device values assumed (see above)."""

    def cost(e: Any, depth: int) -> int:
        if depth > 512:  # the parser refuses deeper nesting long before
            return _MAX_COST
        if e.HasField("comprehension_expr"):
            c = e.comprehension_expr
            r = c.iter_range
            n = len(r.list_expr.elements) if r.HasField("list_expr") else UNKNOWN_RANGE
            body = cost(c.loop_condition, depth + 1) + cost(c.loop_step, depth + 1)
            total = cost(r, depth + 1) + cost(c.accu_init, depth + 1) + cost(c.result, depth + 1) + n * body
            return min(total, _MAX_COST)
        own = 10 if e.HasField("list_expr") or e.HasField("struct_expr") else 1
        if e.HasField("const_expr"):
            own = 0
        return min(own + sum(cost(child, depth + 1) for child in _children(e)), _MAX_COST)

    return cost(structure.expr, 0)


def undefined_device_field(structure: Structure, expression: str) -> str | None:
    """cel-go's checker error for ``device.<field>`` naming no field of ``kubernetes.DRADevice``
    (our ``device`` is a map for cel-cpp, which would only fail at runtime)."""
    stack = [structure.expr]
    while stack:
        e = stack.pop()
        if (
            e.HasField("select_expr")
            and e.select_expr.operand.HasField("ident_expr")
            and e.select_expr.operand.ident_expr.name == "device"
            and e.select_expr.field not in DEVICE_FIELDS
        ):
            offset = structure.positions.get(e.id, 0)
            return located(expression, offset, f"undefined field '{e.select_expr.field}'")
        stack.extend(_children(e))
    return None


def located(expression: str, offset: int, message: str) -> str:
    """cel-go's ``ERROR: <input>:L:C: msg`` with the source line and a caret under the column."""
    line_start = expression.rfind("\n", 0, offset) + 1
    line_end = expression.find("\n", offset)
    line = expression[line_start : line_end if line_end >= 0 else len(expression)]
    line_no = expression.count("\n", 0, offset) + 1
    column = offset - line_start
    return f"ERROR: <input>:{line_no}:{column + 1}: {message}\n | {line}\n | {'.' * column}^"


def _is_device_attributes(e: Any) -> bool:
    return bool(
        e.HasField("select_expr")
        and e.select_expr.field == "attributes"
        and e.select_expr.operand.HasField("ident_expr")
        and e.select_expr.operand.ident_expr.name == "device"
    )


def _is_attribute_value(e: Any) -> bool:
    """``device.attributes[d].id`` or ``device.attributes[d][id]``: a value of upstream's attribute type."""
    if e.HasField("select_expr") and not e.select_expr.test_only:
        domain = e.select_expr.operand
    elif e.HasField("call_expr") and e.call_expr.function == "_[_]" and len(e.call_expr.args) == 2:
        domain = e.call_expr.args[0]
    else:
        return False
    return bool(
        domain.HasField("call_expr")
        and domain.call_expr.function == "_[_]"
        and len(domain.call_expr.args) == 2
        and _is_device_attributes(domain.call_expr.args[0])
    )


def attribute_range(structure: Structure, expression: str) -> str | None:
    """Through 1.36 an attribute is of type ``any``, which cel-go's checker refuses as a
    comprehension's range (1.37 declares it ``dyn``); our attributes are ``dyn`` in every minor."""
    stack = [structure.expr]
    while stack:
        e = stack.pop()
        if e.HasField("comprehension_expr") and _is_attribute_value(e.comprehension_expr.iter_range):
            r = e.comprehension_expr.iter_range
            return located(
                expression,
                structure.positions.get(r.id, 0),
                "expression of type 'any' cannot be range of a comprehension (must be list, map, or dynamic)",
            )
        stack.extend(_children(e))
    return None


def attribute_ranges(structure: Structure) -> tuple[tuple[str, str], ...]:
    """(domain, id) of each comprehension ranging over one attribute named by literals: when
    cel-cpp finds such a value not iterable, cel-go names its type, which the device tells."""
    out: list[tuple[str, str]] = []
    stack = [structure.expr]
    while stack:
        e = stack.pop()
        if e.HasField("comprehension_expr") and _is_attribute_value(r := e.comprehension_expr.iter_range):
            if r.HasField("select_expr"):
                ident: str | None = r.select_expr.field
                domain = r.select_expr.operand.call_expr.args[1]
            else:
                key = r.call_expr.args[1]
                ident = key.const_expr.string_value if key.HasField("const_expr") else None
                domain = r.call_expr.args[0].call_expr.args[1]
            if ident is not None and domain.HasField("const_expr"):
                out.append((domain.const_expr.string_value, ident))
        stack.extend(_children(e))
    return tuple(out)


def regex_literals(structure: Structure) -> list[tuple[str, str, int]]:
    """(function, pattern, offset) of each ``matches``/``find``/``findAll`` given a literal pattern:
    cel-go checks these when it compiles (``ValidateRegexLiterals``, the regex library's program)."""
    out: list[tuple[str, str, int]] = []
    stack = [structure.expr]
    while stack:
        e = stack.pop()
        if e.HasField("call_expr") and e.call_expr.function in ("matches", "find", "findAll"):
            call = e.call_expr
            args = list(call.args)
            pattern = args[0] if call.HasField("target") and args else (args[1] if len(args) > 1 else None)
            if pattern is not None and pattern.HasField("const_expr") and pattern.const_expr.string_value:
                offset = structure.positions.get(pattern.id, 0)
                out.append((call.function, pattern.const_expr.string_value, offset))
        stack.extend(_children(e))
    return out


def dyn_call_result(structure: Structure) -> bool:
    """Whether the whole expression is ``dyn(…)``: of type dyn, which cel-go refuses as a selector's
    result while attributes are of type any (through 1.36)."""
    e = structure.expr
    return bool(e.HasField("call_expr") and e.call_expr.function == "dyn" and not e.call_expr.HasField("target"))
