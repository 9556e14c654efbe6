"""Checks of a whole file that no single line can make (FORMATS.md §2.10 and §3): a file cut
short can be a valid prefix line by line and still contradict what a complete file has.

Run by both readers after parsing (``reader.read_plan``, ``reference.reader.read_arrow``), on
the finished tables, so a file parsed in chunks is checked like one parsed whole:

* a file whose name says it is a dump but that is empty (0 bytes);
* an HLO module with no computation, or — in a file XLA named (``module_NNNN.…``) — none
  marked ``ENTRY`` (XLA prints every module with its entry computation last: a dump file
  without one was cut short; XLA's parser takes hand-written modules without ``ENTRY``);
* a buffer assignment (``BufferAssignment:`` first) without a single allocation.

* a live-range section whose header states ``HloLiveRange (max N)`` with N > 0 and that has no
  ``InstructionSequence`` line at all (cut right after its header);
* a memory-usage report table whose last row does not reach 100% of the table (table form and
  the tables under ``Allocations sorted by size with their values:``) or an allocation list whose
  last row leaves bytes (``total_size - cumulative_size`` > 0), with no ``The rest …`` line after
  it: the rows after the cut are missing (XLA prints every row up to 100%, or says what it left
  out);
* a buffer assignment that lists an allocation twice (two buffer assignments concatenated into
  one file: every figure would count twice), or a value that lies past the end of its
  allocation (offset + size > the allocation's size).

(The live-range check — an ``InstructionSequence`` shorter than its ``HloLiveRange (max N)``
header — is made by the parsers, where the list ends.)

Each problem is an ``errors`` row (``on_error="collect"``) or a ``ParseError`` (strict).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import pyarrow as pa

__all__ = ["problems", "apply"]

#: (file_id, line, column, message, text)
Problem = tuple[int, int, int, str, str]


def _ids(t: Optional[pa.Table], where: Optional[str] = None) -> set[int]:
    if t is None or t.num_rows == 0:
        return set()
    if where is None:
        return set(t.column("file_id").to_pylist())
    ids, flags = t.column("file_id").to_pylist(), t.column(where).to_pylist()
    return {i for i, f in zip(ids, flags) if f}


def _module_keys(t: Optional[pa.Table], where: Optional[str] = None) -> set[tuple[int, int]]:
    """(file_id, module_index) of the rows (where ``where`` holds); a file holds several
    modules when concatenated or `// -----`-split (module_index 0 without the column)."""
    if t is None or t.num_rows == 0:
        return set()
    ids = t.column("file_id").to_pylist()
    mis = t.column("module_index").to_pylist() if "module_index" in t.schema.names else [0] * len(ids)
    flags = t.column(where).to_pylist() if where is not None else [True] * len(ids)
    return {(i, m) for i, m, f in zip(ids, mis, flags) if f}


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
    reported = set(tables["errors"].column("file_id").to_pylist())
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
    if read("allocations", "allocation", "size", "line") and read("assignments", "allocation", "value_id", "offset",
                                                                  "size", "line"):
        out += [p for p in _allocation_problems(tables) if p[0] not in skip]
    if read("totals", "section", "key", "value", "line") and read("schedule"):
        out += [p for p in _live_range_problems(tables) if p[0] not in skip]
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


def _allocation_problems(tables: Mapping[str, pa.Table]) -> list[Problem]:
    """Allocations listed twice in one file (two buffer assignments concatenated) and values
    that lie past the end of their allocation (FORMATS.md §2.10: offset + size <= size)."""
    import pyarrow.compute as pc

    out: list[Problem] = []
    alloc = tables["allocations"].select(["file_id", "allocation", "size", "line"])
    if alloc.num_rows:
        first = alloc.group_by(["file_id", "allocation"], use_threads=False).aggregate([("line", "min")])
        if first.num_rows < alloc.num_rows:  # some (file, allocation) twice
            j = alloc.join(first, ["file_id", "allocation"])
            again = j.filter(pc.greater(j.column("line"), j.column("line_min"))).sort_by([("file_id", "ascending"),
                                                                                          ("line", "ascending")])
            for r in again.to_pylist():
                out.append((r["file_id"], r["line"], 1, f"allocation {r['allocation']} again (first at line "
                                                        f"{r['line_min']}): two buffer assignments in one file?", ""))
    asg = tables["assignments"].select(["file_id", "allocation", "value_id", "offset", "size", "line"])
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


def _live_range_problems(tables: Mapping[str, pa.Table]) -> list[Problem]:
    """``HloLiveRange (max N)`` with N > 0 and not one schedule line in the file."""
    tot = tables["totals"].select(["file_id", "section", "key", "value", "line"]).to_pylist()
    scheduled = set(tables["schedule"].column("file_id").to_pylist())
    return [(r["file_id"], r["line"], 1, f"HloLiveRange (max {r['value']}) but no InstructionSequence follows: the "
                                         "file is cut short after its header", "")
            for r in tot if r["section"] == "live_range" and r["key"] == "max" and (r["value"] or 0) > 0
            and r["file_id"] not in scheduled]


def _memory_report_problems(tables: Mapping[str, pa.Table]) -> list[Problem]:
    """Tables of a memory-usage report that stop before their rows add up, with no cut-off line."""
    mr = tables["memory_report"].select(["file_id", "table", "row_kind", "percent", "remaining_bytes", "line"])
    if mr.num_rows == 0:
        return []
    # `The rest N values|allocations …` lines, by (file, line): the table above them was cut on purpose
    rest = {(r["file_id"], r["line"]) for r in tables["totals"].select(["file_id", "section", "key", "line"]).to_pylist()
            if r["section"] == "memory_report" and r["key"] in ("rest_values", "rest_allocations")}
    last: dict[tuple[int, str, int], dict[str, Any]] = {}
    for r in mr.to_pylist():
        # the allocation list is one table (table -1 of its kind); each offset table its own
        k = (r["file_id"], r["row_kind"], r["table"] if r["row_kind"] == "offsets" else -1)
        if k not in last or r["line"] > last[k]["line"]:
            last[k] = r
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
