"""Checks of a whole file that no single line can make (FORMATS.md §2.10 and §3): a file cut
short can be a valid prefix line by line and still contradict what a complete file has.

Run by both readers after parsing (``reader.read_plan``, ``reference.reader.read_arrow``), on
the finished tables, so a file parsed in chunks is checked like one parsed whole:

* a file whose name says it is a dump but that is empty (0 bytes);
* an HLO module with no computation, or — in a file XLA named (``module_NNNN.…``) — none
  marked ``ENTRY`` (XLA prints every module with its entry computation last: a dump file
  without one was cut short; XLA's parser takes hand-written modules without ``ENTRY``);
* a buffer assignment (``BufferAssignment:`` first) without a single allocation.

* a memory-usage report table whose last row does not reach 100% of the table (table form and
  the tables under ``Allocations sorted by size with their values:``) or an allocation list whose
  last row leaves bytes (``total_size - cumulative_size`` > 0), with no ``The rest …`` line after
  it: the rows after the cut are missing (XLA prints every row up to 100%, or says what it left
  out);
* an HloProto's buffer assignment that lists an allocation twice, or a value that lies past
  the end of its allocation (offset + size > the allocation's size).

The buffer-assignment text checks (an allocation listed twice, a value past its allocation, a
live-range section cut right after its ``HloLiveRange (max N)`` header, an
``InstructionSequence`` shorter than that header) are made by the parsers while they read, in
both readers (``reference/buffer_assignment.py`` ``whole_file_problems``, Rust
``buffer_assignment/checks.rs``), also across the chunks of a file read in parts.

Each problem is an ``errors`` row (``on_error="collect"``) or a ``ParseError`` (strict).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["problems", "apply"]

#: (file_id, line, column, message, text)
Problem = tuple[int, int, int, str, str]


# Every check works on whole columns (Arrow compute: distinct keys, group-bys, one join of
# aggregates), never a Python loop over rows: a buffer assignment of a gigabyte has millions of
# them. Python sees only the distinct keys and the problems found.


def _where(t: pa.Table, cols: list[str], where: Optional[str]) -> pa.Table:
    """Columns ``cols`` of the rows of ``t`` whose ``where`` column is true (all rows for None;
    selected first: pyarrow cannot filter every column type, `string_view` among them)."""
    if where is None:
        return t.select(cols)
    return t.select(cols).filter(pc.fill_null(t.column(where), False))


def _ids(t: Optional[pa.Table], where: Optional[str] = None) -> set[int]:
    if t is None or t.num_rows == 0:
        return set()
    return set(pc.unique(_where(t, ["file_id"], where).column("file_id")).to_pylist())


def _module_keys(t: Optional[pa.Table], where: Optional[str] = None) -> set[tuple[int, int]]:
    """(file_id, module_index) of the rows (where ``where`` holds); a file holds several
    modules when concatenated or `// -----`-split (module_index 0 without the column)."""
    if t is None or t.num_rows == 0:
        return set()
    if "module_index" not in t.schema.names:
        return {(i, 0) for i in pc.unique(_where(t, ["file_id"], where).column("file_id")).to_pylist()}
    t = _where(t, ["file_id", "module_index"], where)
    keys = t.group_by(["file_id", "module_index"], use_threads=False).aggregate([])
    return set(zip(keys.column("file_id").to_pylist(), keys.column("module_index").to_pylist()))


def problems(tables: Mapping[str, pa.Table], wanted: Optional[list[str]] = None) -> list[Problem]:
    """The problems of every file of ``tables`` (a read's tables; ``wanted``: the tables the
    read was asked for, None for all: a check runs only when its tables were read)."""
    def read(name: str, *cols: str) -> bool:  # read, with the columns a check needs (`columns=`)
        return ((wanted is None or name in wanted) and name in tables
                and all(c in tables[name].schema.names for c in ("file_id", *cols)))

    cols = ["file_id", "kind", "content_kind", "size_bytes", "parsed", "error"]
    if not read("files", *cols) or not read("errors"):
        return []
    files = tables["files"]
    out: list[Problem] = []
    if "module_id" in files.schema.names:
        cols = cols + ["module_id"]
    rows = files.select(cols).to_pylist()
    modules: dict[int, list[dict]] = {}
    if read("modules", "name", "line"):
        mt = tables["modules"]
        for r in mt.select([c for c in ("file_id", "name", "line", "module_index") if c in mt.schema.names]).to_pylist():
            modules.setdefault(r["file_id"], []).append(r)
    with_comp = _module_keys(tables.get("computations")) if read("computations") else None
    with_entry = _module_keys(tables.get("computations"), "is_entry") if read("computations", "is_entry") else None
    with_alloc = _ids(tables.get("allocations")) if read("allocations") else None
    # a file with errors already is known to be incomplete: no second report of the same cut
    reported = set(pc.unique(tables["errors"].column("file_id")).to_pylist())
    for r in rows:
        fid = r["file_id"]
        if r["error"] is not None or fid in reported:
            continue
        if r["size_bytes"] == 0 and r["kind"] not in ("other", None):
            out.append((fid, 1, 1, f"empty file (0 bytes), though its name says {r['kind']}: XLA writes no "
                                   "empty dump files (cut short, or still being written?)", ""))
            continue
        if not r["parsed"]:
            continue
        if r["content_kind"] == "hlo_module" and with_comp is not None and fid in modules:
            for m in modules[fid]:
                key = (fid, m.get("module_index", 0))
                if key not in with_comp:
                    out.append((fid, m["line"], 1, f"module {m['name']} has no computation (the file is cut short?)", ""))
                # Only for files XLA named (module_NNNN…): XLA's parser itself takes a module without
                # ENTRY (its last computation is the entry), as hand-written and test inputs have it.
                elif with_entry is not None and key not in with_entry and r.get("module_id") is not None:
                    out.append((fid, m["line"], 1, f"module {m['name']} has no ENTRY computation (XLA prints it last: "
                                                  "the file is cut short?)", ""))
        elif r["content_kind"] == "buffer_assignment" and with_alloc is not None and fid not in with_alloc:
            out.append((fid, 1, 1, "BufferAssignment without a single allocation (the file is cut short?)", ""))
    skip = reported | {r["file_id"] for r in rows if r["error"] is not None}
    # (the buffer-assignment text parsers check their own allocations and live ranges while
    # parsing, in both readers: `buffer_assignment.whole_file_problems`; here only those an
    # HloProto gives)
    protos = [r["file_id"] for r in rows if r["content_kind"] == "hlo_proto" and r["file_id"] not in skip]
    if protos and read("allocations", "allocation", "size", "line") and \
            read("assignments", "allocation", "value_id", "offset", "size", "line"):
        out += _allocation_problems(_of_files(tables, protos))
    if read("memory_report", "table", "row_kind", "percent", "remaining_bytes", "line") and \
            read("totals", "section", "key", "line"):
        out += [p for p in _memory_report_problems(tables) if p[0] not in skip]
    return out


def apply(tables: dict[str, pa.Table], on_error: str, wanted: Optional[list[str]] = None) -> None:
    """Check ``tables`` (a read's tables, changed in place): raise ``ParseError`` for the first
    problem in strict mode, else append the problems to ``errors``."""
    found = problems(tables, wanted)
    if not found:
        return
    if "path" not in tables["files"].schema.names or len(tables["errors"].schema) < 5:
        return  # a projection without the columns to report in
    paths = dict(zip(tables["files"].column("file_id").to_pylist(), tables["files"].column("path").to_pylist()))
    if on_error == "raise":
        from .exceptions import ParseError

        fid, line, col, msg, text = found[0]
        raise ParseError(paths[fid], line, col, msg, text)
    errors = tables["errors"]
    add = pa.table({"file_id": pa.array([p[0] for p in found], pa.int32()),
                    "line": pa.array([p[1] for p in found], pa.int32()),
                    "column": pa.array([p[2] for p in found], pa.int32()),
                    "message": pa.array([p[3] for p in found], errors.schema.field("message").type),
                    "text": pa.array([p[4] for p in found], errors.schema.field("text").type)})
    tables["errors"] = pa.concat_tables([errors, add.cast(errors.schema)])


def _of_files(tables: Mapping[str, pa.Table], file_ids: list[int]) -> dict[str, pa.Table]:
    """The allocations and assignments of the files ``file_ids``, in the columns the checks
    read (selected first: pyarrow cannot filter every column type, `string_view` among them)."""
    ids = pa.array(file_ids, pa.int32())
    cols = {"allocations": ["file_id", "allocation", "size", "line"],
            "assignments": ["file_id", "allocation", "value_id", "offset", "size", "line"]}
    return {name: tables[name].select(c).filter(pc.is_in(tables[name].column("file_id"), ids))
            for name, c in cols.items()}


def _allocation_problems(tables: Mapping[str, pa.Table]) -> list[Problem]:
    """Allocations listed twice in one file (two buffer assignments concatenated) and values
    that lie past the end of their allocation (FORMATS.md §2.10: offset + size <= size)."""
    out: list[Problem] = []
    alloc = tables["allocations"].select(["file_id", "allocation", "size", "line"])
    asg = tables["assignments"].select(["file_id", "allocation", "value_id", "offset", "size", "line"])
    if _allocations_plainly_fine(alloc, asg):
        return out
    if alloc.num_rows:
        first = alloc.group_by(["file_id", "allocation"], use_threads=False).aggregate([("line", "min")])
        if first.num_rows < alloc.num_rows:  # some (file, allocation) twice
            j = alloc.join(first, ["file_id", "allocation"])
            again = j.filter(pc.greater(j.column("line"), j.column("line_min"))).sort_by([("file_id", "ascending"),
                                                                                          ("line", "ascending")])
            for r in again.to_pylist():
                out.append((r["file_id"], r["line"], 1, f"allocation {r['allocation']} again (first at line "
                                                        f"{r['line_min']}): two buffer assignments in one file?", ""))
    if asg.num_rows and alloc.num_rows:
        sizes = alloc.select(["file_id", "allocation", "size"]).rename_columns(["file_id", "allocation", "allocation_size"])
        sizes = sizes.group_by(["file_id", "allocation"], use_threads=False).aggregate([("allocation_size", "max")])
        j = asg.join(sizes, ["file_id", "allocation"])
        end = pc.add_checked(pc.cast(j.column("offset"), pa.decimal128(20, 0)), pc.cast(j.column("size"), pa.decimal128(20, 0)))
        past = j.filter(pc.greater(end, pc.cast(j.column("allocation_size_max"), pa.decimal128(20, 0))))
        for r in past.sort_by([("file_id", "ascending"), ("line", "ascending")]).to_pylist():
            out.append((r["file_id"], r["line"], 1, f"value {r['value_id']} lies past the end of allocation "
                                                    f"{r['allocation']} (offset {r['offset']} + size {r['size']} > "
                                                    f"{r['allocation_size_max']} bytes)", ""))
    return out


def _allocations_plainly_fine(alloc: pa.Table, asg: pa.Table) -> bool:
    """True when, read as XLA prints them, no allocation is listed twice and no value lies past
    its allocation: (file, allocation) keys strictly increase down the allocations table (each
    file lists its allocations in ascending order, files one after the other), so each is
    unique, and every value's end is at most its allocation's size (found by binary search).
    False means "look closely" (the exact group-by and join below), not "a problem": keys out
    of order, a value whose allocation is not listed, numbers near the int64 limit."""
    import numpy as np

    if alloc.num_rows == 0:
        return asg.num_rows == 0
    for t in (alloc, asg):
        if any(t.column(c).null_count for c in ("file_id", "allocation", "size")) or \
                ("offset" in t.schema.names and t.column("offset").null_count):
            return False

    # allocations: (file, allocation) strictly increasing down the table
    fid, a = alloc.column("file_id").to_numpy(), alloc.column("allocation").to_numpy()
    if fid.size > 1:
        dfid = np.diff(fid)
        if not bool(np.all((dfid > 0) | ((dfid == 0) & (np.diff(a) > 0)))):
            return False
    if asg.num_rows == 0:
        return True
    off, size = asg.column("offset").to_numpy(), asg.column("size").to_numpy()
    if off.min() < 0 or size.min() < 0 or off.max() >= 1 << 62 or size.max() >= 1 << 62:
        return False
    # each value's allocation row: binary search over the (file, allocation) keys
    qf, qa = asg.column("file_id").to_numpy(), asg.column("allocation").to_numpy()
    if min(a.min(), qa.min()) < 0 or max(a.max(), qa.max()) >= 1 << 32:
        return False
    ak = fid.astype(np.int64) << 32 | a
    qk = qf.astype(np.int64) << 32 | qa
    at = np.searchsorted(ak, qk)
    if bool(np.any(at >= ak.size)) or not bool(np.all(ak[at] == qk)):
        return False
    return bool(np.all(off + size <= alloc.column("size").to_numpy()[at]))


def _memory_report_problems(tables: Mapping[str, pa.Table]) -> list[Problem]:
    """Tables of a memory-usage report that stop before their rows add up, with no cut-off line."""
    mr = tables["memory_report"].select(["file_id", "table", "row_kind", "percent", "remaining_bytes", "line"])
    if mr.num_rows == 0:
        return []
    # `The rest N values|allocations …` lines, by (file, line): the table above them was cut on purpose
    tot = tables["totals"].select(["file_id", "section", "key", "line"])
    tot = tot.filter(pc.and_(pc.equal(tot.column("section"), "memory_report"),
                             pc.is_in(tot.column("key"), pa.array(["rest_values", "rest_allocations"]))))
    rest = set(zip(tot.column("file_id").to_pylist(), tot.column("line").to_pylist()))
    # the last row of each table: the allocation list is one table (table -1 of its kind), each
    # offset table its own; a row is one line of its file, so (file, line) finds it again
    kind = pc.cast(mr.column("row_kind"), pa.string())
    tab = pc.if_else(pc.equal(kind, "offsets"), pc.cast(mr.column("table"), pa.int64()), pa.scalar(-1, pa.int64()))
    keyed = pa.table({"file_id": mr.column("file_id"), "kind": kind, "tab": tab, "line": mr.column("line")})
    ends = keyed.group_by(["file_id", "kind", "tab"], use_threads=False).aggregate([("line", "max")])
    ends = ends.rename_columns(["file_id", "kind", "tab", "line"])
    rows = ends.join(mr.select(["file_id", "line", "percent", "remaining_bytes"]), ["file_id", "line"]).to_pylist()
    last: dict[tuple[int, str, int], dict[str, Any]] = {(r["file_id"], r["kind"], r["tab"]): r for r in rows}
    out: list[Problem] = []
    for (fid, kind, _), r in sorted(last.items(), key=lambda kv: (kv[0][0], kv[1]["line"])):
        if (fid, r["line"] + 1) in rest:
            continue
        if kind == "offsets" and r["percent"] is not None and r["percent"] < 100:
            out.append((fid, r["line"], 1, f"this table's rows stop at {r['percent']}% of its total, with no 'The rest "
                                           "N values …' line: the file is cut short", ""))
        elif kind == "allocation" and r["remaining_bytes"] is not None and r["remaining_bytes"] > 0:
            out.append((fid, r["line"], 1, f"the allocation list stops with {r['remaining_bytes']:,} bytes not listed "
                                           "and no 'The rest N allocations …' line: the file is cut short", ""))
    return out
