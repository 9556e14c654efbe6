"""The Rust core and the pure-Python reference must agree on every table, cell for cell.

Both parsers are run on every file of tests/data (each file alone, and the corpus directories
as a whole) in collect mode; the tables are compared after casting text to large_string.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("hlodump._core")

import hlodump  # noqa: E402
import hlodump.reference  # noqa: E402
from hlodump.schema import TABLE_NAMES  # noqa: E402

DATA = Path(__file__).parent / "data"
ALL_FILES = sorted(p for p in DATA.rglob("*") if p.is_file())
DIRECTORIES = sorted(p for p in (DATA / "corpus").glob("jax-*/*") if p.is_dir())

# Error rows are compared by position only: the two parsers word their messages differently.
ERROR_KEYS = ("file_id", "line")


def _rows(t: pa.Table, name: str) -> list[dict[str, Any]]:
    rows = t.to_pylist()
    if name == "errors":
        rows = [{k: r[k] for k in ERROR_KEYS} for r in rows]
    return rows


def assert_same_tables(fast: hlodump.Dump, ref: hlodump.Dump, where: str) -> None:
    assert list(fast) == list(ref) == list(TABLE_NAMES)
    for name in TABLE_NAMES:
        a, b = fast[name], ref[name]
        assert a.schema == b.schema, f"{where}: schema of {name} differs"
        ra, rb = _rows(a, name), _rows(b, name)
        if ra == rb:
            continue
        for i, (x, y) in enumerate(zip(ra, rb)):
            if x != y:
                diff = {k: (x[k], y.get(k)) for k in x if x[k] != y.get(k)}
                pytest.fail(f"{where}: table {name} row {i} differs (rust, reference): {diff}")
        pytest.fail(f"{where}: table {name}: {len(ra)} rows (rust) vs {len(rb)} (reference)")


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(DATA)))
def test_every_file_agrees(path: Path) -> None:
    fast = hlodump.read_arrow(path, on_error="collect", string_view=False)
    ref = hlodump.reference.read_arrow(path, on_error="collect", string_view=False)
    assert_same_tables(fast, ref, str(path.relative_to(DATA)))


@pytest.mark.parametrize("path", DIRECTORIES, ids=lambda p: str(p.relative_to(DATA)))
def test_every_directory_agrees(path: Path) -> None:
    fast = hlodump.read_arrow(path, on_error="collect", string_view=False, threads=2)
    ref = hlodump.reference.read_arrow(path, on_error="collect", string_view=False)
    assert_same_tables(fast, ref, str(path.relative_to(DATA)))


def test_string_view_and_large_string_hold_the_same_values() -> None:
    p = DATA / "seeds" / "003_edd6dfbd09ed8e41.txt"
    views = hlodump.read_arrow(p, string_view=True)
    large = hlodump.read_arrow(p, string_view=False)
    assert views["values"].schema.field("defining_instruction").type == pa.string_view()
    assert large["values"].schema.field("defining_instruction").type == pa.large_string()
    for name in TABLE_NAMES:
        assert views[name].to_pylist() == large[name].to_pylist(), name


@pytest.mark.parametrize("tables", [["files"], ["allocations"], ["instructions", "peak"], ["stack_frames"],
                                    ["errors"], ["totals", "custom_calls"]], ids=lambda t: "+".join(t))
def test_tables_choices_agree(tables: list[str]) -> None:
    """read_arrow(tables=...) skips the same files and gives the same tables in both."""
    for path in (DATA / "corpus" / "jax-0.10.2" / "control_flow", DATA / "corpus" / "jax-0.4.26" / "transformer",
                 DATA / "seeds"):
        fast = hlodump.read_arrow(path, tables=tables, on_error="collect", string_view=False)
        ref = hlodump.reference.read_arrow(path, tables=tables, on_error="collect", string_view=False)
        assert list(fast) == list(ref)
        for name in fast:
            assert _rows(fast[name], name) == _rows(ref[name], name), (path, tables, name)
            assert fast[name].schema == ref[name].schema
