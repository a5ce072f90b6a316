"""cel-expr-python's modules and google-re2, imported in one place: cel-expr-python ships stubs but no
``py.typed`` and google-re2 neither, so mypy reads them as untyped; the plugin goes through these names."""

from __future__ import annotations

from typing import Any

import re2 as _re2  # type: ignore[import-untyped]
from cel_expr_python import cel as _cel  # type: ignore[import-untyped]
from cel_expr_python.ext import (  # type: ignore[import-untyped]
    ext_bindings as _ext_bindings,
)
from cel_expr_python.ext import (
    ext_optional as _ext_optional,
)
from cel_expr_python.ext import (
    ext_strings as _ext_strings,
)

__all__ = ["cel", "ext_bindings", "ext_optional", "ext_strings", "re2"]

cel: Any = _cel
ext_bindings: Any = _ext_bindings
ext_optional: Any = _ext_optional
ext_strings: Any = _ext_strings
re2: Any = _re2
