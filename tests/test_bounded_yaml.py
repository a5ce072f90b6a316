"""``scheduler.boundedyaml``: the same documents as PyYAML's SafeLoader, refused past each bound in one line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from scheduler import boundedyaml
from scheduler.boundedyaml import (
    MAX_BYTES,
    MAX_DEPTH,
    BoundedLoader,
    PureBoundedLoader,
    ReadError,
    load_all,
    load_single,
    read_text,
)
from tests.test_hostile_input import OVER_THE_SIZE_LIMIT

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# The loader the CLI uses (libyaml's parser where PyYAML has it, as in the image) and the pure-Python one.
LOADERS = pytest.mark.parametrize("loader", [BoundedLoader, PureBoundedLoader], ids=["default", "pure"])


def test_the_size_limit_the_cli_tests_cross_is_the_readers() -> None:
    assert OVER_THE_SIZE_LIMIT == MAX_BYTES + 1


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
@LOADERS
def test_reads_the_documents_safe_load_all_reads(path: Path, loader: type[BoundedLoader]) -> None:
    text = path.read_text()
    assert load_all(text, loader) == list(yaml.safe_load_all(text))


@LOADERS
def test_anchors_within_bounds_read_as_safe_load_reads_them(loader: type[BoundedLoader]) -> None:
    """A shared value aliased a hundred times, merge keys: what real files use anchors for."""
    text = "labels: &l {app: web, tier: front}\n" + "".join(f"p{i}: {{labels: *l}}\n" for i in range(100))
    text += "base: &b {x: 1}\nmerged: {<<: *b, y: 2}\n"
    assert load_all(text, loader) == list(yaml.safe_load_all(text))


@pytest.mark.parametrize(
    ("decoded", "ratio"),
    [(1000, 0.99), (400_000, 0.99), (2_200_000, 0.99 - 0.89 * 0.5), (4_000_000, 0.10), (10**9, 0.10)],
)
def test_the_alias_ratio_is_go_yamls(decoded: int, ratio: float) -> None:
    assert boundedyaml._allowed_alias_ratio(decoded) == pytest.approx(ratio)


@LOADERS
def test_excessive_aliasing_is_refused_before_it_is_expanded(loader: type[BoundedLoader]) -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcdefghi", "bcdefghij", strict=True)
    )
    with pytest.raises(ReadError, match=r"^line \d+, column \d+: document contains excessive aliasing$"):
        load_all(laughs, loader)


@LOADERS
def test_an_alias_inside_its_own_anchor_is_refused(loader: type[BoundedLoader]) -> None:
    with pytest.raises(ReadError, match=r"^line 1, column 16: anchor 'x' value contains itself$"):
        load_all("items: &x {a: [*x]}", loader)


@LOADERS
def test_nesting_up_to_the_limit_reads_one_more_is_refused(loader: type[BoundedLoader]) -> None:
    def nested(depth: int) -> str:
        return "".join("  " * i + "k:\n" for i in range(depth - 1)) + "  " * (depth - 1) + "k: v\n"

    assert load_all(nested(MAX_DEPTH), loader) == list(yaml.safe_load_all(nested(MAX_DEPTH)))
    with pytest.raises(ReadError, match=rf"^line {MAX_DEPTH + 1}, column \d+: exceeded max depth of {MAX_DEPTH}$"):
        load_all(nested(MAX_DEPTH + 1), loader)


@LOADERS
def test_documents_past_the_limit_are_refused(monkeypatch: pytest.MonkeyPatch, loader: type[BoundedLoader]) -> None:
    monkeypatch.setattr(boundedyaml, "MAX_DOCUMENTS", 3)
    assert load_all("a\n---\nb\n---\nc\n", loader) == ["a", "b", "c"]
    with pytest.raises(ReadError, match=r"^line 6, column 1: more than 3 documents$"):
        load_all("a\n---\nb\n---\nc\n---\nd\n", loader)


@LOADERS
def test_a_syntax_error_is_one_line_with_its_place_and_context(loader: type[BoundedLoader]) -> None:
    with pytest.raises(ReadError) as caught:
        load_all("a: [\n  b: c\n", loader)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("line ")
    assert "(while parsing a flow sequence at line 1, column 4)" in message


def test_load_single_refuses_a_second_document_in_one_line() -> None:
    with pytest.raises(ReadError, match=r"^line 2, column 1: but found another document \(expected a single"):
        load_single("a: 1\n---\nb: 2\n", BoundedLoader)
    assert load_single("", BoundedLoader)[0] is None


class TestReadText:
    def test_reads_utf8_up_to_the_limit(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(boundedyaml, "MAX_BYTES", 8)
        path = tmp_path / "f.yaml"
        path.write_bytes("a: é\n".encode() + b"#" * 2)
        assert read_text(path) == "a: é\n##"
        path.write_bytes(b"a: b\n" + b"#" * 4)
        with pytest.raises(ReadError, match=r"^larger than the limit of 8 bytes$"):
            read_text(path)

    def test_not_utf8(self, tmp_path: Path) -> None:
        path = tmp_path / "f.yaml"
        path.write_bytes(b"\x89PNG\r\n\x1a\n\xff")
        with pytest.raises(ReadError, match=r"^not UTF-8: 'utf-8' codec can't decode byte 0x89 in position 0"):
            read_text(path)

    def test_missing(self, tmp_path: Path) -> None:
        with pytest.raises(ReadError, match=r"^No such file or directory$"):
            read_text(tmp_path / "missing.yaml")

    def test_stdin_bytes_and_text(self, monkeypatch: pytest.MonkeyPatch) -> None:
        raw = io.TextIOWrapper(io.BytesIO(b"kind: Pod\n"))
        assert read_text("-", raw) == "kind: Pod\n"
        assert read_text("-", io.StringIO("kind: Node\n")) == "kind: Node\n"
        monkeypatch.setattr(boundedyaml, "MAX_BYTES", 4)
        with pytest.raises(ReadError, match="larger than the limit"):
            read_text("-", io.StringIO("kind: Node\n"))


@LOADERS
def test_a_control_character_is_one_line_with_its_line(loader: type[BoundedLoader]) -> None:
    with pytest.raises(
        ReadError, match=r"^line 2: unacceptable character #x0000: (control|special) characters are not allowed$"
    ):
        load_all("a: 1\nb: \x00\n", loader)
    with pytest.raises(ReadError, match=r"^line 51: unacceptable character"):
        load_all("- é\n" * 50 + "- \x00\n", loader)


@LOADERS
@pytest.mark.parametrize(
    ("text", "words"),
    [
        pytest.param("a: " + "1" * 5000, "Exceeds the limit (4300 digits)", id="int-past-pythons-digits"),
        pytest.param("a: 2001-02-30", "day is out of range for month", id="no-such-date"),
        pytest.param("a: !!int 12x", "invalid literal for int()", id="explicit-int"),
        pytest.param("a: !!float x", "could not convert string to float", id="explicit-float"),
    ],
)
def test_a_scalar_its_type_cannot_hold_is_one_line_at_its_node(
    text: str, words: str, loader: type[BoundedLoader]
) -> None:
    """PyYAML raises ValueError for these from inside its constructor; ours names the line."""
    with pytest.raises(ReadError) as caught:
        load_all("ok: 1\n" + text, loader)
    assert str(caught.value).startswith("line 2, column 4: ")
    assert words in str(caught.value)
