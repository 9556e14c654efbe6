"""docs/API.md against the core's schemas (``_core.table_schemas()``, the one definition).

Three checks: ``schemas.json`` (the reference's copy without a build) is the core's; the
generated column reference (API.md's last section) is exactly what
``hlodump.schema.markdown()`` makes of the core's schemas — every table and column, both ways;
and the hand-written "Tables" section names only tables and columns the core has, with the
types and nullability it states (``?``) agreeing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import pyarrow as pa
import pytest

from hlodump import _core
from hlodump.schema import DOCS, SCHEMAS, TABLE_NAMES, markdown

API = Path(__file__).resolve().parent.parent / "docs" / "API.md"
TEXT_TYPES = (pa.string_view(), pa.large_string(), pa.string(), pa.dictionary(pa.int32(), pa.large_string()))


def _section(title: str) -> str:
    text = API.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n") + len(f"\n## {title}\n")
    end = text.find("\n## ", start)
    return text[start:] if end < 0 else text[start:end]


def test_schema_module_is_the_cores() -> None:
    got = _core.table_schemas()
    assert [n for n, _, _ in got] == list(TABLE_NAMES)
    for name, s, doc in got:
        assert SCHEMAS[name] is not None and SCHEMAS[name].equals(s), name
        assert DOCS[name] == doc and doc.strip() and "\n" not in doc, name


def test_data_file_is_the_cores() -> None:
    """``schemas.json`` (what the reference uses without a build) is the core's definition."""
    from hlodump.schema import _data_file_tables

    got = _data_file_tables()
    want = _core.table_schemas()
    assert [(n, d) for n, _, d in got] == [(n, d) for n, _, d in want], "regenerate: hlodump.schema.write_data_file()"
    for (name, a, _), (_, b, _) in zip(got, want):
        assert a.equals(b), f"schemas.json is stale for {name}: hlodump.schema.write_data_file()"


def test_column_reference_is_generated_from_the_core() -> None:
    body = _section("Column reference (generated)")
    ref = body[body.index("**files**"):]
    assert ref == markdown(), "docs/API.md's column reference is stale: regenerate it (hlodump.schema.markdown())"


def _type_matches(claim: str, t: pa.DataType) -> Optional[bool]:
    """Whether API.md's type word(s) ``claim`` (``str``, ``int32``, ``list<struct<a: str>>`` …)
    describe ``t``; None when ``claim`` is not a type."""
    claim = claim.strip()
    m = re.fullmatch(r"list<(.*)>", claim)
    if m:
        if not pa.types.is_list(t):
            return False
        return _type_matches(m.group(1), t.value_type)
    m = re.fullmatch(r"struct<(.*)>", claim)
    if m:
        if not pa.types.is_struct(t):
            return False
        items = [p.split(":") for p in _split_top(m.group(1))]
        return [n.strip() for n, _ in items] == [f.name for f in t] and all(
            _type_matches(c, f.type) for (_, c), f in zip(items, t))
    simple = {"str": None, "int32": pa.int32(), "int64": pa.int64(), "bool": pa.bool_(), "float64": pa.float64()}
    if claim not in simple:
        return None
    return t in TEXT_TYPES if claim == "str" else t == simple[claim]


def _split_top(text: str) -> list[str]:
    """``text`` split at commas outside ``<…>``."""
    out, depth, cur = [], 0, ""
    for c in text:
        depth += c == "<"
        depth -= c == ">"
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    return out + [cur]


def _tables_section() -> dict[str, list[tuple[str, Optional[str], list[str]]]]:
    """API.md's "Tables" section: table → [(column, its parenthesised note or None, the
    columns a note ending "each" covers)] in order, the columns being the backticked names
    outside parentheses from the first ``file_id`` on."""
    out = {}
    for para in _section("Tables").split("\n\n"):
        m = re.match(r"\*\*(\w+)\*\*", para.strip())
        if not m:
            continue
        text = " ".join(para.split())
        text = text[text.index("`file_id`"):]
        cols: list[tuple[str, Optional[str], list[str]]] = []
        run: list[str] = []  # columns since the last note
        i = 0
        while i < len(text):
            if text[i] == "`":
                j = text.index("`", i + 1)
                cols.append((text[i + 1:j], None, []))
                run.append(text[i + 1:j])
                i = j + 1
            elif text[i] == "(":
                depth, j = 1, i + 1
                while depth:
                    depth += {"(": 1, ")": -1}.get(text[j], 0)
                    j += 1
                note = text[i + 1:j - 1]
                if cols:
                    name = cols[-1][0]
                    cols[-1] = (name, note, run[:-1] if note.rstrip().endswith("each") else [])
                run = []
                i = j
            else:
                i += 1
        out[m.group(1)] = cols
    return out


def test_tables_section_names_what_the_core_has() -> None:
    listed = _tables_section()
    assert len(listed) >= 10 and "instructions" in listed and "errors" in listed
    for table, cols in listed.items():
        assert table in SCHEMAS, f"API.md lists a table the core does not have: {table}"
        names = SCHEMAS[table].names
        assert cols, table
        for col, note, covered in cols:
            assert col in names, f"API.md: {table}.{col} is not a column of the core's {table}"
            if note is None:
                continue
            m = re.match(r"((?:list|struct)<.*>|\w+)(\?)?", note)
            claim, nullable = (m.group(1), m.group(2) == "?") if m else (note, False)
            for c in [col, *covered]:
                field = SCHEMAS[table].field(c)
                ok = _type_matches(claim, field.type)
                if ok is None:  # a note that is not a type ("no `%`", "the index" …)
                    continue
                assert ok, f"API.md: {table}.{c} is {claim}, the core says {field.type}"
                assert field.nullable == nullable, f"API.md: {table}.{c} nullable={nullable}, the core says {field.nullable}"


@pytest.mark.parametrize("claim,typ,ok", [
    ("str", pa.string_view(), True), ("str", pa.int32(), False), ("int32?", pa.int32(), None),
    ("list<str>", pa.list_(pa.string_view()), True),
    ("list<struct<a: str, b: int32>>", pa.list_(pa.struct([("a", pa.string_view()), ("b", pa.int32())])), True),
    ("list<struct<a: str, c: int32>>", pa.list_(pa.struct([("a", pa.string_view()), ("b", pa.int32())])), False),
])
def test_type_claims_are_read_as_meant(claim: str, typ: pa.DataType, ok: Optional[bool]) -> None:
    assert _type_matches(claim, typ) is ok
