"""Outside YAML/JSON read within bounds: the one reader of a file of objects and of ``--config``.

PyYAML's own machinery (libyaml's parser when present, PyYAML's ``SafeConstructor``) with a composer
that counts as it builds: bytes read, documents, nesting depth and the nodes alias expansion would
produce. Every refusal is a ``ReadError``; every problem of the bytes (too large, not UTF-8, not
YAML, over a bound) comes out as one line naming its line and column, for the caller to prefix with
the file's name. A hostile file therefore costs at most ``MAX_BYTES`` of reading and parsing, never
a hang, unbounded memory or a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, TextIO, TypeVar

import yaml
from yaml.composer import Composer, ComposerError
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import Node

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_DOCUMENTS",
    "BoundedLoader",
    "PureBoundedLoader",
    "ReadError",
    "load_all",
    "load_single",
    "read_text",
]

# Far above a dump of any cluster simulate can replay in reasonable time, and small enough that
# reading and parsing the largest accepted file stays bounded in time and memory (docs/benchmarks.md).
MAX_BYTES = 64 * 1024 * 1024
# go-yaml and encoding/json stop at 10000 levels; the composer recurses in Python, whose default
# stack holds ~1000 frames, so ours is lower. A Kubernetes object nests about a dozen levels deep.
MAX_DEPTH = 200
# A dump is one List, or one document per object: far fewer than this even for a large cluster.
MAX_DOCUMENTS = 1_000_000

# go-yaml's alias bound (yaml.v2/v3 decode.go, allowedAliasRatio: the fix for CVE-2019-11253, which
# the API server's YAML decoding shares): up to 99% of decoded nodes may come from alias expansion in
# small documents, scaled down to 10% for large ones.
_ALIAS_RATIO_RANGE_LOW = 400_000
_ALIAS_RATIO_RANGE_HIGH = 4_000_000


_LIBYAML: bool = getattr(yaml, "__with_libyaml__", False)


def _allowed_alias_ratio(decode_count: int) -> float:
    if decode_count <= _ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decode_count >= _ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    span = _ALIAS_RATIO_RANGE_HIGH - _ALIAS_RATIO_RANGE_LOW
    return 0.99 - 0.89 * (decode_count - _ALIAS_RATIO_RANGE_LOW) / span


def _too_large() -> ReadError:
    mib, rest = divmod(MAX_BYTES, 1024 * 1024)
    return ReadError(f"larger than the limit of {f'{mib} MiB' if not rest else f'{MAX_BYTES} bytes'}")


class ReadError(ValueError):
    """The bytes are not a document within bounds (or not a document at all); the message is one line."""


def _one_line(exc: yaml.YAMLError, text: str, *, in_characters: bool) -> str:
    """A PyYAML error as one line, with where it happened (its own ``str`` spans several lines)."""
    if isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.character, int):
        # libyaml counts the position in UTF-8 bytes, PyYAML's reader in characters.
        before = text[: exc.position].encode() if in_characters else text.encode()[: exc.position]
        line = before.count(b"\n") + 1
        return f"line {line}: unacceptable character #x{exc.character:04x}: {exc.reason}"
    if not isinstance(exc, yaml.MarkedYAMLError):
        return " ".join(str(exc).split())
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
    if exc.context and exc.problem:
        context_mark = exc.context_mark
        at = f" at line {context_mark.line + 1}, column {context_mark.column + 1}" if context_mark is not None else ""
        problem += f" ({' '.join(exc.context.split())}{at})"
    return where + problem


class _BoundedComposer(Composer):
    """PyYAML's Composer, counting per document the nodes decoded (each alias as the nodes it stands
    for, as go-yaml's decoder counts them) and the nesting depth, and refusing past the bounds."""

    def __init__(self) -> None:
        Composer.__init__(self)
        self._depth = 0
        self._decoded = 0
        self._aliased = 0
        self._documents = 0
        # Each anchored node's size once alias expansion is counted in; a node still being composed
        # has none yet (an alias to it would make the value contain itself).
        self._sizes: dict[int, int] = {}

    def compose_document(self) -> Node | None:
        self._documents += 1
        if self._documents > MAX_DOCUMENTS:
            mark = self.peek_event().start_mark  # type: ignore[attr-defined]
            raise ComposerError(None, None, f"more than {MAX_DOCUMENTS} documents", mark)
        self._depth = self._decoded = self._aliased = 0
        self._sizes = {}
        node: Node | None = super().compose_document()
        self._sizes = {}
        return node

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(AliasEvent):  # type: ignore[attr-defined]
            event = self.peek_event()  # type: ignore[attr-defined]
            target = self.anchors.get(event.anchor)
            if target is not None:
                size = self._sizes.get(id(target))
                if size is None:  # go-yaml v3's words
                    raise ComposerError(None, None, f"anchor {event.anchor!r} value contains itself", event.start_mark)
                self._count(size, event.start_mark, aliased=True)
            return super().compose_node(parent, index)
        event = self.peek_event()  # type: ignore[attr-defined]
        nests = isinstance(event, MappingStartEvent | SequenceStartEvent)
        if nests:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise ComposerError(None, None, f"exceeded max depth of {MAX_DEPTH}", event.start_mark)
        before = self._decoded
        self._count(1, event.start_mark, aliased=False)
        node = super().compose_node(parent, index)
        if nests:
            self._depth -= 1
        if event.anchor is not None:  # only an anchored node can be counted again
            self._sizes[id(node)] = self._decoded - before
        return node

    def _count(self, nodes: int, mark: Any, *, aliased: bool) -> None:
        """go-yaml's check (decode.go, ``unmarshal``), made as each node or alias is composed."""
        self._decoded += nodes
        if aliased:
            self._aliased += nodes
        if (
            self._aliased > 100
            and self._decoded > 1000
            and self._aliased / self._decoded > _allowed_alias_ratio(self._decoded)
        ):
            raise ComposerError(None, None, "document contains excessive aliasing", mark)


class _SafeConstructor(yaml.constructor.SafeConstructor):
    """SafeConstructor whose every failure is a ConstructorError at the node: a scalar its type
    cannot hold (an int of more digits than Python converts, a date such as 2001-02-30, ``!!int
    12x``) raises ValueError from inside PyYAML, which would otherwise escape as a traceback."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(None, None, str(exc), node.start_mark) from exc


class PureBoundedLoader(
    _BoundedComposer,
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    _SafeConstructor,
    yaml.resolver.Resolver,
):
    """The bounded loader on PyYAML's pure-Python scanner and parser (PyYAML built without libyaml)."""

    def __init__(self, stream: str | bytes) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        _BoundedComposer.__init__(self)
        _SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)


if _LIBYAML:
    # libyaml scans and parses: several times faster than PyYAML's pure-Python scanner, which bounds
    # the time the largest accepted file takes; the events still reach our composer.
    from yaml._yaml import CParser as _Parser

    class BoundedLoader(_BoundedComposer, _Parser, _SafeConstructor, yaml.resolver.Resolver):
        """SafeLoader's documents, composed within bounds."""

        def __init__(self, stream: str | bytes) -> None:
            _Parser.__init__(self, stream)
            _BoundedComposer.__init__(self)
            _SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml

    class BoundedLoader(PureBoundedLoader):  # type: ignore[no-redef]
        """SafeLoader's documents, composed within bounds."""


def read_text(path: str | Path, stdin: TextIO | None = None) -> str:
    """The file's text (``-``: ``stdin``'s), at most ``MAX_BYTES`` of UTF-8; ``ReadError`` otherwise.

    Only ``MAX_BYTES`` + 1 bytes are ever read, so a larger file (or an endless pipe) costs no more.
    """
    try:
        if str(path) == "-" and stdin is not None:
            buffer: BinaryIO | None = getattr(stdin, "buffer", None)
            data: bytes | str = buffer.read(MAX_BYTES + 1) if buffer is not None else stdin.read(MAX_BYTES + 1)
        else:
            with open(path, "rb") as file:
                data = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ReadError(exc.strerror or str(exc)) from exc
    if len(data) > MAX_BYTES:
        raise _too_large()
    if isinstance(data, str):
        return data
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise ReadError(f"not UTF-8: {exc}") from exc


def _load(text: str, loader: type[BoundedLoader], read: Callable[[BoundedLoader], Any]) -> Any:
    """``read`` run on a ``loader`` of ``text``; every problem one ``ReadError`` line."""
    if len(text) > MAX_BYTES:  # text handed in by a caller, not read here
        raise _too_large()
    try:
        instance = loader(text)  # PyYAML's own reader checks the characters here already
        try:
            return read(instance)
        finally:
            instance.dispose()
    except yaml.YAMLError as exc:
        raise ReadError(_one_line(exc, text, in_characters=issubclass(loader, yaml.reader.Reader))) from exc


def load_all(text: str, loader: type[BoundedLoader] = BoundedLoader) -> list[Any]:
    """Every document of a multi-document YAML/JSON text, within bounds."""

    def read(instance: BoundedLoader) -> list[Any]:
        documents = []
        while instance.check_data():  # type: ignore[no-untyped-call]
            documents.append(instance.get_data())
        return documents

    result: list[Any] = _load(text, loader, read)
    return result


_Loader = TypeVar("_Loader", bound=BoundedLoader)


def load_single(text: str, loader: type[_Loader]) -> tuple[Any, _Loader]:
    """The one document of a YAML/JSON text (None if empty), within bounds, and the ``loader`` that
    read it (a subclass may have recorded what it saw)."""
    holder: list[_Loader] = []

    def read(instance: BoundedLoader) -> Any:
        assert isinstance(instance, loader)
        holder.append(instance)
        return instance.get_single_data()

    return _load(text, loader, read), holder[0]
