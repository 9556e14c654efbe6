"""Memory analysis over a ``Dump``: what is live at the peak, where it came from, and what changed.

Every function takes a ``Dump`` (from ``hlodump.read_arrow`` or ``hlodump.reference.read_arrow``)
and returns a ``pyarrow.Table`` (hand it to Polars with ``polars.from_arrow``). A dump may hold
many modules (a dump directory): every result carries a ``module`` key (and ``module_name``);
``module=`` selects modules by key (``module_0000.jit_rnn``), by name (``jit_rnn``) or by id
(``0`` / ``"0"``).

Module grouping
---------------
Files are grouped into modules by ``files.module_id``/``files.module_name`` (the
``module_NNNN.<name>`` prefix of XLA's file names), so the four split buffer-assignment files of
a jax 0.10.2 dump (allocations, used values, live range, memory report) and the
after-optimizations HLO text join into one module. A file without that prefix (the TPU seeds, a
single copied file) is a module of its own, keyed by its file name without ``.txt``.

Sizes
-----
* *allocated* bytes: what buffer assignment gives a value (``assignments.size``, tiling and
  padding included; on TPU an ``f32[]`` takes 512 bytes).
* *logical* bytes: ``ShapeUtil::ByteSizeOf(shape, 8)`` recomputed from the shape text: element
  size × element count (sub-byte types take a byte unless the layout says ``E(bits)``), 8 bytes
  per element of a tuple's index table, 0 for ``token[]``. This is what XLA prints in the
  ``Live ranges at T (peak)`` list, so the peak figures here are logical bytes.

Categories (one per allocation, from its flags, first match wins): ``parameter``
(``parameter N``), ``output`` (``maybe-live-out`` / ``output shape is``), ``constant``,
``thread_local``, ``temporary`` (everything else: preallocated temps and plain temporaries).
Each allocation has exactly one category, so category sums equal the total.

The peak
--------
``peak_buffers`` is the dump's own ``Live ranges at T (peak)`` list, joined to buffer assignment
and to the source. XLA picks the moment T with whole-instruction shape sizes (a tuple-shaped
fusion counts 8 bytes per element there, not the elements' sizes), so T need not be the moment
with the most live bytes; ``memory_timeline`` shows every step and ``summary`` reports both.
Live ranges are inclusive: a value with ``start-end`` is live at steps start … end.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

import pyarrow as pa

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

    from .dump import Dump

__all__ = [
    "CATEGORIES",
    "load",
    "modules",
    "allocations",
    "buffers",
    "peak_buffers",
    "memory_timeline",
    "breakdown",
    "padding",
    "summary",
    "diff",
    "logical_bytes",
    "format_bytes",
]

ModuleSel = Union[None, str, int, Sequence[Union[str, int]]]

CATEGORIES: tuple[str, ...] = ("parameter", "output", "constant", "thread_local", "temporary")

# --------------------------------------------------------------------------------- shape sizes

_ELEMENT_BITS: dict[str, int] = {
    "pred": 8, "s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8,
    "s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64, "u64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128,
    "f4e2m1fn": 4, "f8e8m0fnu": 8, "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3fnuz": 8,
    "f8e4m3b11fnuz": 8, "f8e5m2": 8, "f8e5m2fnuz": 8, "tf32": 32,
    "token": 0, "opaque": 0,
}
_ARRAY_RE = re.compile(r"\s*([a-z][a-z0-9]*)\[([^\]]*)\]")
_E_RE = re.compile(r"E\((\d+)\)")


def _split_tuple(inner: str) -> list[str]:
    out, depth, start = [], 0, 0
    i = 0
    while i < len(inner):
        ch = inner[i]
        if ch == "/" and inner.startswith("/*", i):  # /*index=5*/ comments
            j = inner.find("*/", i)
            i = len(inner) if j < 0 else j + 2
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(inner[start:i])
            start = i + 1
        i += 1
    tail = inner[start:]
    if tail.strip() or out:
        out.append(tail)
    return [s for s in out if s.strip()]


def logical_bytes(shape: Optional[str]) -> Optional[int]:
    """``ShapeUtil::ByteSizeOf(shape, pointer_size=8)`` from the shape text (None if unreadable).

    Arrays: element count × element size (dynamic dims ``<=N`` at their bound; sub-byte types
    one byte per element unless the layout has ``E(bits)``, then packed). Tuples: 8 bytes per
    top-level element (the index table). ``token[]``: 0.

    >>> logical_bytes("f32[8,2048,2048]{1,2,0:T(8,128)}"), logical_bytes("f32[]{:T(128)}")
    (134217728, 4)
    >>> logical_bytes("(f32[8]{0}, u32[]{:S(2)})")
    16
    """
    if shape is None:
        return None
    s = shape.strip()
    if s.startswith("b(") and s.endswith(")"):
        return logical_bytes(s[2:-1])
    if s.startswith("("):
        end = s.rfind(")")
        return 8 * len(_split_tuple(s[1:end]))
    m = _ARRAY_RE.match(s)
    if m is None:
        return None
    etype, dims = m.group(1), m.group(2)
    bits = _ELEMENT_BITS.get(etype)
    if bits is None:
        digits = re.search(r"(\d+)", etype)
        bits = int(digits.group(1)) if digits else 8
    if bits == 0:
        return 0
    n = 1
    for d in dims.split(","):
        d = d.strip()
        if not d:
            continue
        d = d[2:] if d.startswith("<=") else d
        if d == "?":
            return None
        n *= int(d)
    layout = s[m.end():]
    e = _E_RE.search(layout.split("P(")[0]) if layout.startswith("{") else None
    if e is not None:
        return (n * int(e.group(1)) + 7) // 8
    return n * max(1, bits // 8) if bits < 8 else n * (bits // 8)


def format_bytes(n: Optional[float]) -> str:
    """Human-readable bytes as XLA prints them (``12B``, ``51.1KiB``, ``220.17MiB``)."""
    if n is None:
        return "-"
    sign = "-" if n < 0 else ""
    v = float(abs(n))
    if v < 1024:
        return f"{sign}{int(v)}B"
    for i, unit in enumerate(("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")):
        v /= 1024.0
        if v < 1024 or unit == "EiB":
            return f"{sign}{v:.1f}{unit}" if i == 0 else f"{sign}{v:.2f}{unit}"
    return f"{sign}{n}B"  # pragma: no cover


# --------------------------------------------------------------------------------- loading

def load(path: Any, reader: Optional[Any] = None) -> "Dump":
    """Read ``path`` for memory analysis with ``reader`` (default ``hlodump.read_arrow``)."""
    if reader is None:
        from . import read_arrow as reader
    return reader(path)


# --------------------------------------------------------------------------------- modules

@dataclass
class _Module:
    key: str
    name: str
    module_id: Optional[int]
    file_ids: list[int] = field(default_factory=list)
    hlo_file_ids: list[int] = field(default_factory=list)  # after-optimizations HLO text


def _stem(path: str) -> str:
    base = os.path.basename(path)
    return base[:-4] if base.endswith(".txt") else base


def _module_list(d: "Dump") -> list[_Module]:
    files = d["files"].select(["file_id", "path", "kind", "module_id", "module_name", "stage"]).to_pylist()
    by_key: dict[str, _Module] = {}
    for f in files:
        mid, mname = f["module_id"], f["module_name"]
        if mid is not None:
            key = f"module_{mid:04d}" + (f".{mname}" if mname else "")
            name = mname or key
        elif mname:
            key = name = mname
        else:
            key = name = _stem(f["path"])
        m = by_key.get(key)
        if m is None:
            m = by_key[key] = _Module(key, name, mid)
        m.file_ids.append(f["file_id"])
        if f["kind"] == "hlo_module" and f["stage"] == "after_optimizations":
            m.hlo_file_ids.append(f["file_id"])
    # keep modules that hold something to analyse
    used: set[int] = set()
    for t in ("allocations", "values", "live_ranges", "peak", "instructions", "totals"):
        if t in d and d[t].num_rows:
            used.update(d[t].column("file_id").unique().to_pylist())
    return [m for m in by_key.values() if used.intersection(m.file_ids)]


def _select(mods: list[_Module], module: ModuleSel) -> list[_Module]:
    if module is None:
        return mods
    wanted = [module] if isinstance(module, (str, int)) else list(module)
    out = []
    for m in mods:
        for w in wanted:
            ws = str(w)
            if ws in (m.key, m.name) or (m.module_id is not None and ws.isdigit() and int(ws) == m.module_id):
                out.append(m)
                break
    if not out:
        known = ", ".join(m.key for m in mods) or "none"
        raise KeyError(f"no module matches {module!r} (modules: {known})")
    return out


def _modmap(mods: list[_Module]) -> pa.Table:
    rows = [(fid, m.key, m.name, fid in m.hlo_file_ids) for m in mods for fid in m.file_ids]
    return pa.table({
        "file_id": pa.array([r[0] for r in rows], pa.int32()),
        "module": pa.array([r[1] for r in rows], pa.string()),
        "module_name": pa.array([r[2] for r in rows], pa.string()),
        "is_hlo": pa.array([r[3] for r in rows], pa.bool_()),
    })


def _con(d: "Dump", mods: list[_Module], tables: Iterable[str]) -> "duckdb.DuckDBPyConnection":
    import duckdb

    con = duckdb.connect()
    con.register("modmap", _modmap(mods))
    for t in tables:
        con.register(t, d[t])
    return con


def _arrow(rel: Any) -> pa.Table:
    t = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
    return t if isinstance(t, pa.Table) else t.read_all()


def modules(dump: "Dump") -> pa.Table:
    """One row per module: key, name, id, its file ids and which parts the dump has."""
    mods = _module_list(dump)
    counts = {}
    for t in ("allocations", "values", "live_ranges", "peak", "instructions"):
        fids = dump[t].column("file_id").to_pylist() if t in dump else []
        c: dict[int, int] = {}
        for f in fids:
            c[f] = c.get(f, 0) + 1
        counts[t] = c
    rows = []
    for m in mods:
        def n(t: str, fids: list[int]) -> int:
            return sum(counts[t].get(f, 0) for f in fids)
        rows.append({
            "module": m.key, "module_name": m.name, "module_id": m.module_id,
            "file_ids": m.file_ids,
            "n_allocations": n("allocations", m.file_ids), "n_values": n("values", m.file_ids),
            "n_live_ranges": n("live_ranges", m.file_ids), "n_peak": n("peak", m.file_ids),
            "n_instructions": n("instructions", m.hlo_file_ids),
        })
    schema = pa.schema([("module", pa.string()), ("module_name", pa.string()), ("module_id", pa.int32()),
                        ("file_ids", pa.list_(pa.int32())), ("n_allocations", pa.int64()),
                        ("n_values", pa.int64()), ("n_live_ranges", pa.int64()), ("n_peak", pa.int64()),
                        ("n_instructions", pa.int64())])
    return pa.Table.from_pylist(rows, schema=schema)


# --------------------------------------------------------------------------------- core joins

_CATEGORY_SQL = """
    case when a.parameter is not null then 'parameter'
         when a.is_maybe_live_out or a.is_output then 'output'
         when a.is_constant then 'constant'
         when a.is_thread_local then 'thread_local'
         else 'temporary' end
"""


def allocations(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """The ``allocations`` table with ``module``/``module_name``, ``category`` and, per
    allocation, how many values it holds and their summed allocated / logical bytes."""
    mods = _select(_module_list(dump), module)
    con = _con(dump, mods, ["allocations"])
    con.register("vals", _value_sizes(dump, mods))
    return _arrow(con.sql(f"""
        select a.file_id, m.module, m.module_name, a.allocation, a.size, a.color,
               {_CATEGORY_SQL} as category,
               a.is_thread_local, a.is_constant, a.is_maybe_live_out, a.is_preallocated_temp,
               a.is_output, a.parameter, a.parameter_shape, a.parameter_shape_index,
               a.output_shape, a.flags,
               coalesce(v.n_values, 0)::bigint as n_values,
               coalesce(v.value_bytes, 0)::bigint as value_bytes,
               coalesce(v.logical_bytes, 0)::bigint as logical_bytes,
               a.line
        from allocations a join modmap m using (file_id)
        left join (select module, allocation, count(*) as n_values, sum(size) as value_bytes,
                          sum(logical_bytes) as logical_bytes
                   from vals group by all) v
               on v.module = m.module and v.allocation = a.allocation
        order by m.module, a.allocation
    """))


def _value_sizes(dump: "Dump", mods: list[_Module]) -> pa.Table:
    con = _con(dump, mods, ["assignments"])
    t = _arrow(con.sql("""
        select m.module, s.allocation, s.value_id, s.instruction, s.shape_index, s.size, s.shape
        from assignments s join modmap m using (file_id)"""))
    lb = [logical_bytes(s) for s in t.column("shape").to_pylist()]
    return t.append_column("logical_bytes", pa.array(lb, pa.int64()))


_INFO_KEYS = ("opcode", "shape", "op_name", "source_file", "source_line", "fusion_kind", "custom_call_target")
_SOURCE_CACHE: dict[str, dict[str, Any]] = {}


def _parse_defining(text: str) -> dict[str, Any]:
    """opcode, shape, op_name, source_file/line, fusion kind, custom-call target of a
    ``from instruction:`` text (parsed with the reference HLO instruction parser; the
    ``values.defining_*`` columns are not relied on)."""
    hit = _SOURCE_CACHE.get(text)
    if hit is not None:
        return hit
    from .reference.hlo import parse_instruction

    try:
        p = parse_instruction(text) or {}
    except ValueError:
        p = {}
    r = {k: p.get(k) for k in _INFO_KEYS}
    if len(_SOURCE_CACHE) < 100_000:
        _SOURCE_CACHE[text] = r
    return r


def _instr_info(dump: "Dump", mods: list[_Module]) -> pa.Table:
    """Per module and instruction name: opcode, shape, op_name, source, fusion kind, custom-call
    target. From the after-optimizations HLO text when the dump has it for that module, else from
    the ``values.defining_instruction`` text (only instructions that define a value)."""
    con = _con(dump, mods, ["instructions", "values"])
    hlo = _arrow(con.sql("""
        select m.module, i.name as instruction, i.opcode, i.shape, i.op_name, i.source_file,
               i.source_line, i.fusion_kind, i.custom_call_target, 'hlo' as source_of_info
        from instructions i join modmap m using (file_id) where m.is_hlo"""))
    have = set(hlo.column("module").unique().to_pylist())
    vals = _arrow(con.sql("""
        select m.module, v.instruction, any_value(v.defining_instruction) as text
        from "values" v join modmap m using (file_id) group by all order by all"""))
    rows: dict[str, list[Any]] = {k: [] for k in hlo.column_names}
    for r in vals.to_pylist():
        if r["module"] in have:
            continue
        info = _parse_defining(r["text"])
        rows["module"].append(r["module"])
        rows["instruction"].append(r["instruction"])
        for k in _INFO_KEYS:
            rows[k].append(info[k])
        rows["source_of_info"].append("values")
    extra = pa.table(rows, schema=hlo.schema)
    return pa.concat_tables([hlo, extra])


def buffers(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """Every value of buffer assignment, one row each, with everything known about it:
    module, value_id, instruction, shape_index, allocation, color, category, offset, allocated
    ``size``, ``logical_bytes``, shape, live range ``start``/``end`` (null if the dump has no live
    range for it), defining opcode, op_name, source_file, source_line, ``source`` (file:line)."""
    mods = _select(_module_list(dump), module)
    return _buffers(dump, mods)


def _buffers(dump: "Dump", mods: list[_Module]) -> pa.Table:
    con = _con(dump, mods, ["assignments", "allocations", "live_ranges", "values"])
    con.register("info", _instr_info(dump, mods))
    con.register("lsz", _value_sizes(dump, mods).select(["module", "value_id", "logical_bytes"]))
    return _arrow(con.sql(f"""
        with lr as (
            select m.module, l.instruction, l.shape_index, min(l.start) as start, max(l."end") as "end"
            from live_ranges l join modmap m using (file_id) group by all),
        al as (select m.module, a.*, {_CATEGORY_SQL} as category
               from allocations a join modmap m using (file_id))
        select s.file_id, m.module, m.module_name, s.value_id, s.instruction,
               case when s.shape_index = '' then '{{}}' else s.shape_index end as shape_index,
               s.is_phi, s.allocation, al.color, al.category, al.size as allocation_size,
               s.offset, s.size, z.logical_bytes, s.shape,
               lr.start, lr."end",
               i.opcode, i.op_name,
               i.source_file, i.source_line,
               case when i.source_file is not null then
                    i.source_file || coalesce(':' || i.source_line::varchar, '') end as source
        from assignments s join modmap m using (file_id)
        left join al on al.module = m.module and al.allocation = s.allocation
        left join lr on lr.module = m.module and lr.instruction = s.instruction
             and lr.shape_index = (case when s.shape_index = '' then '{{}}' else s.shape_index end)
        left join lsz z on z.module = m.module and z.value_id = s.value_id
        left join (select module, instruction, any_value(opcode) as opcode, any_value(op_name) as op_name,
                          any_value(source_file) as source_file, any_value(source_line) as source_line
                   from info group by all) i on i.module = m.module and i.instruction = s.instruction
        order by m.module, s.value_id
    """))


# --------------------------------------------------------------------------------- the peak

def peak_buffers(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """The buffers live at the peak, as the dump lists them (``Live ranges at T (peak)``), by
    bytes descending then printed order (= printed order in newer XLA), joined to buffer assignment and the source.

    Columns: file_id, module, module_name, rank (0 = first printed), time (the peak step),
    instruction_at_peak (scheduled at that step), buffer, instruction, shape_index, bytes
    (logical, as printed), cumulative_bytes, value_id, allocation, color, category,
    allocated_bytes (the value's slice), allocation_size, offset, shape, opcode, op_name,
    source_file, source_line, source ("file:line").

    When the dump has live ranges but no peak list, the list is computed from the timeline at
    its maximum (logical bytes, sorted by bytes then name like XLA). No live ranges: no rows.
    """
    mods = _select(_module_list(dump), module)
    out = []
    for m in mods:
        out.append(_peak_one(dump, m))
    return pa.concat_tables(out) if out else _peak_one(dump, None)


def _peak_one(dump: "Dump", m: Optional[_Module]) -> pa.Table:
    mods = [m] if m is not None else []
    b = _buffers(dump, mods)
    con = _con(dump, mods, ["peak", "schedule"])
    con.register("b", b)
    n_peak = con.sql("select count(*) from peak join modmap using (file_id)").fetchall()[0][0]
    if n_peak:
        src = """select p.file_id, m.module, m.module_name, p.time, p.buffer, p.instruction,
                        case when p.shape_index = '' then '{}' else p.shape_index end as shape_index,
                        p.bytes, p.cumulative_bytes, p.line as ord
                 from peak p join modmap m using (file_id)"""
    else:
        tl = _timeline_arrays(dump, mods)
        if m is None or m.key not in tl:
            src = """select null::int as file_id, null::varchar as module, null::varchar as module_name,
                            null::int as time, null::varchar as buffer, null::varchar as instruction,
                            null::varchar as shape_index, null::bigint as bytes,
                            null::bigint as cumulative_bytes, null::bigint as ord where false"""
        else:
            t = int(tl[m.key]["logical"].argmax())
            src = f"""select file_id, module, module_name, {t} as time,
                             instruction || shape_index as buffer, instruction, shape_index,
                             logical_bytes as bytes,
                             sum(logical_bytes) over (order by logical_bytes desc, instruction, shape_index
                                                      rows unbounded preceding) as cumulative_bytes,
                             row_number() over (order by logical_bytes desc, instruction, shape_index) as ord
                      from b where start <= {t} and {t} <= "end" """
    return _arrow(con.sql(f"""
        with p as ({src}),
        sched as (select m.module, s.position, any_value(s.instruction) as instruction
                  from schedule s join modmap m using (file_id) group by all),
        bb as (select *, row_number() over (partition by module, instruction, shape_index order by value_id) as k
               from b)
        select p.file_id, p.module, p.module_name,
               (row_number() over (partition by p.module order by p.bytes desc, p.ord) - 1)::int as rank,
               p.time, sched.instruction as instruction_at_peak,
               p.buffer, p.instruction, p.shape_index, p.bytes, p.cumulative_bytes,
               bb.value_id, bb.allocation, bb.color, coalesce(bb.category, 'unknown') as category,
               bb.size as allocated_bytes, bb.allocation_size, bb.offset, bb.shape,
               bb.opcode, bb.op_name, bb.source_file, bb.source_line, bb.source
        from p
        left join bb on bb.module = p.module and bb.instruction = p.instruction
                    and bb.shape_index = p.shape_index and bb.k = 1
        left join sched on sched.module = p.module and sched.position = p.time
        order by p.module, p.bytes desc, p.ord
    """))


# --------------------------------------------------------------------------------- timeline

def _timeline_arrays(dump: "Dump", mods: list[_Module]) -> dict[str, dict[str, Any]]:
    """Per module key: numpy arrays of live bytes per step (allocated, logical) and per
    (color, category)."""
    import numpy as np

    b = _buffers(dump, mods)
    con = _con(dump, mods, ["totals", "schedule"])
    mx = dict(con.sql("""select m.module, max(t.value) from totals t join modmap m using (file_id)
                         where t.section = 'live_range' and t.key = 'max' group by all""").fetchall())
    npos = dict(con.sql("""select m.module, max(s.position) + 1 from schedule s join modmap m using (file_id)
                           group by all""").fetchall())
    cols = b.select(["module", "color", "category", "size", "logical_bytes", "start", "end"]).to_pydict()
    out: dict[str, dict[str, Any]] = {}
    for i in range(b.num_rows):
        s, e = cols["start"][i], cols["end"][i]
        if s is None or e is None:
            continue
        key = cols["module"][i]
        ent = out.get(key)
        if ent is None:
            n = int(max(mx.get(key) or 0, npos.get(key) or 0, 0))
            ent = out[key] = {"n": n, "groups": {}}
        n = ent["n"]
        if e > n:
            ent["n"] = n = int(e)
        g = ent["groups"].setdefault((cols["color"][i] or 0, cols["category"][i] or "unknown"), [])
        g.append((int(s), int(e), int(cols["size"][i] or 0), int(cols["logical_bytes"][i] or 0)))
    for key, ent in out.items():
        n = ent["n"]
        total_a = np.zeros(n + 1, np.int64)
        total_l = np.zeros(n + 1, np.int64)
        per = {}
        for gk, items in ent["groups"].items():
            da = np.zeros(n + 2, np.int64)
            dl = np.zeros(n + 2, np.int64)
            for s, e, a, lg in items:
                da[s] += a
                da[e + 1] -= a
                dl[s] += lg
                dl[e + 1] -= lg
            ca, cl = np.cumsum(da)[: n + 1], np.cumsum(dl)[: n + 1]
            per[gk] = (ca, cl)
            total_a += ca
            total_l += cl
        ent["per"] = per
        ent["allocated"] = total_a
        ent["logical"] = total_l
    return out


def memory_timeline(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """Live bytes at every schedule step (0 … max), per module, memory space (color) and
    category, from ``live_ranges`` × value sizes (``assignments``) × allocation flags.

    Columns: module, module_name, step, instruction (scheduled at that step; null at ``max``),
    color, category, bytes (allocated sizes of the live values), logical_bytes (their shapes'
    sizes — the measure of XLA's peak list). Live ranges are inclusive. Modules without live
    ranges give no rows. Values of thread-local allocations (in called computations) have no
    live range in the dump and so never appear.
    """
    mods = _select(_module_list(dump), module)
    arrs = _timeline_arrays(dump, mods)
    con = _con(dump, mods, ["schedule"])
    sched: dict[tuple[str, int], str] = {}
    for mod, pos, ins in con.sql("""select m.module, s.position, any_value(s.instruction)
                                    from schedule s join modmap m using (file_id) group by all""").fetchall():
        sched[(mod, pos)] = ins
    name_of = {m.key: m.name for m in mods}
    cols: dict[str, list[Any]] = {k: [] for k in
                                  ("module", "module_name", "step", "instruction", "color", "category",
                                   "bytes", "logical_bytes")}
    order = {c: i for i, c in enumerate(CATEGORIES)}
    for m in mods:
        ent = arrs.get(m.key)
        if ent is None:
            continue
        for (color, cat), (ca, cl) in sorted(ent["per"].items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99))):
            for step in range(ent["n"] + 1):
                cols["module"].append(m.key)
                cols["module_name"].append(name_of[m.key])
                cols["step"].append(step)
                cols["instruction"].append(sched.get((m.key, step)))
                cols["color"].append(color)
                cols["category"].append(cat)
                cols["bytes"].append(int(ca[step]))
                cols["logical_bytes"].append(int(cl[step]))
    schema = pa.schema([("module", pa.string()), ("module_name", pa.string()), ("step", pa.int32()),
                        ("instruction", pa.string()), ("color", pa.int32()), ("category", pa.string()),
                        ("bytes", pa.int64()), ("logical_bytes", pa.int64())])
    t = pa.table(cols, schema=schema)
    import duckdb

    c2 = duckdb.connect()
    c2.register("t", t)
    return _arrow(c2.sql("select * from t order by module, color, step, category"))


# --------------------------------------------------------------------------------- breakdown, padding

def breakdown(dump: "Dump", by: str = "op_name", module: ModuleSel = None) -> pa.Table:
    """Peak bytes grouped by ``op_name``, ``source`` (file:line), ``opcode``, ``category`` or
    ``instruction``: module, key, bytes (logical, at the peak), allocated_bytes, buffers (count),
    share (of the module's peak), sorted by bytes descending. Buffers without the attribute are
    grouped under key null."""
    cols = {"op_name": "op_name", "source": "source", "opcode": "opcode", "category": "category",
            "instruction": "instruction"}
    if by not in cols:
        raise ValueError(f"by must be one of {sorted(cols)}")
    pb = peak_buffers(dump, module)
    import duckdb

    con = duckdb.connect()
    con.register("pb", pb)
    return _arrow(con.sql(f"""
        select module, module_name, {cols[by]} as key, sum(bytes)::bigint as bytes,
               sum(allocated_bytes)::bigint as allocated_bytes, count(*)::bigint as buffers,
               sum(bytes) / sum(sum(bytes)) over (partition by module) as share
        from pb group by module, module_name, {cols[by]} order by module, bytes desc, key nulls last
    """))


def padding(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """Allocated vs logical bytes of every value: module, value_id, instruction, shape_index,
    allocation, color, category, shape, allocated_bytes (the value's slice in its allocation),
    logical_bytes (from the shape), padding_bytes (allocated − logical), ratio (allocated /
    logical). On TPU, tiling ``T(8,128)`` makes an ``f32[]`` take 512 bytes. Sorted by padding
    descending."""
    b = buffers(dump, module)
    import duckdb

    con = duckdb.connect()
    con.register("b", b)
    return _arrow(con.sql("""
        select module, module_name, value_id, instruction, shape_index, allocation, color, category, shape,
               size as allocated_bytes, logical_bytes, (size - logical_bytes)::bigint as padding_bytes,
               case when logical_bytes > 0 then size / logical_bytes end as ratio, op_name, source
        from b order by module, padding_bytes desc, value_id
    """))


# --------------------------------------------------------------------------------- summary

def summary(dump: "Dump", module: ModuleSel = None, top: int = 10) -> list[dict[str, Any]]:
    """A plain-data (JSON-ready) summary per module: totals by memory space and category, the
    peak (as the dump states it and as the timeline shows it), the top buffers at the peak with
    their source, padding overhead, and notes on what the dump lacks."""
    mods = _select(_module_list(dump), module)
    allocs = allocations(dump, [m.key for m in mods]) if mods else None
    pb = peak_buffers(dump, [m.key for m in mods]) if mods else None
    arrs = _timeline_arrays(dump, mods)
    con = _con(dump, mods, ["totals", "errors", "schedule"])
    totals: dict[str, dict[tuple[str, str, Any], int]] = {}
    for mod, sec, key, color, value in con.sql("""select m.module, t.section, t.key, t.color, t.value
                                                  from totals t join modmap m using (file_id)""").fetchall():
        totals.setdefault(mod, {})[(sec, key, color)] = value
    sched: dict[tuple[str, int], str] = {}
    for mod, pos, ins in con.sql("""select m.module, s.position, any_value(s.instruction)
                                    from schedule s join modmap m using (file_id) group by all""").fetchall():
        sched[(mod, pos)] = ins
    out = []
    alloc_rows = allocs.to_pylist() if allocs is not None else []
    peak_rows = pb.to_pylist() if pb is not None else []
    pad = padding(dump, [m.key for m in mods]).to_pylist() if mods else []
    for m in mods:
        tot = totals.get(m.key, {})
        ar = [r for r in alloc_rows if r["module"] == m.key]
        pr = [r for r in peak_rows if r["module"] == m.key]
        notes: list[str] = []
        spaces: dict[int, dict[str, Any]] = {}
        for r in ar:
            sp = spaces.setdefault(r["color"], {"color": r["color"], "allocated_bytes": 0, "allocations": 0,
                                                "by_category": {c: 0 for c in CATEGORIES}})
            sp["allocated_bytes"] += r["size"]
            sp["allocations"] += 1
            sp["by_category"][r["category"]] += r["size"]
        total_alloc = sum(r["size"] for r in ar)
        stated_total = tot.get(("buffer_assignment", "total_bytes_used", None))
        if not ar:
            notes.append("no buffer assignment (allocations) in the dump for this module")
        elif stated_total is not None and stated_total != total_alloc:
            notes.append(f"sum of allocation sizes {total_alloc} != 'Total bytes used' {stated_total}")
        peak: dict[str, Any] = {}
        if pr:
            t = pr[0]["time"]
            pk_bytes = sum(r["bytes"] for r in pr)
            by_cat: dict[str, int] = {}
            by_space: dict[Any, int] = {}
            for r in pr:
                by_cat[r["category"]] = by_cat.get(r["category"], 0) + r["bytes"]
                by_space[r["color"]] = by_space.get(r["color"], 0) + r["bytes"]
            peak = {
                "step": t, "instruction": sched.get((m.key, t)), "bytes": pk_bytes,
                "stated": bool(tot.get(("live_range", "peak_time", None)) is not None),
                "by_category": by_cat,
                "by_color": {str(k): v for k, v in by_space.items()},
                "stack_trace_total": tot.get(("peak_breakdown", "total", None)),
            }
        ent = arrs.get(m.key)
        timeline: dict[str, Any] = {}
        if ent is not None:
            i = int(ent["logical"].argmax())
            j = int(ent["allocated"].argmax())
            timeline = {"steps": ent["n"] + 1,
                        "max_logical_bytes": int(ent["logical"][i]), "max_logical_step": i,
                        "max_logical_instruction": sched.get((m.key, i)),
                        "max_allocated_bytes": int(ent["allocated"][j]), "max_allocated_step": j,
                        "max_allocated_instruction": sched.get((m.key, j))}
            if peak and i != peak["step"]:
                notes.append(
                    f"XLA's peak step {peak['step']} is not the step with the most live bytes "
                    f"(step {i}: {int(ent['logical'][i])} logical bytes); XLA picks it with whole-"
                    "instruction shape sizes")
        if (("live_range", "not_available", None)) in tot:
            notes.append("HloLiveRange not available in this dump: no timeline, no peak list")
        elif ent is None:
            notes.append("no live ranges in the dump: totals and allocations only (no timeline, no peak)")
        if (("live_range", "peak_unbounded", None)) in tot:
            notes.append("XLA could not determine the peak (unbounded dynamic shape)")
        pm = [r for r in pad if r["module"] == m.key]
        alloc_b = sum(r["allocated_bytes"] or 0 for r in pm)
        logical_b = sum(r["logical_bytes"] or 0 for r in pm)
        top_rows = [{k: r[k] for k in ("rank", "buffer", "bytes", "allocated_bytes", "shape", "category",
                                        "allocation", "color", "opcode", "op_name", "source")}
                    for r in pr[:top]]
        out.append({
            "module": m.key, "module_name": m.name, "module_id": m.module_id,
            "total_bytes": total_alloc if ar else stated_total,
            "total_bytes_stated": stated_total,
            "allocations": len(ar),
            "by_category": {c: sum(s["by_category"][c] for s in spaces.values()) for c in CATEGORIES},
            "memory_spaces": [spaces[k] for k in sorted(spaces)],
            "peak": peak or None,
            "timeline": timeline or None,
            "top_buffers": top_rows,
            "padding": {"allocated_bytes": alloc_b, "logical_bytes": logical_b,
                        "padding_bytes": alloc_b - logical_b,
                        "values": len(pm)},
            "notes": notes,
        })
    return out


# --------------------------------------------------------------------------------- diff

def _pair_modules(a: "Dump", b: "Dump") -> list[tuple[Optional[_Module], Optional[_Module]]]:
    ma, mb = _module_list(a), _module_list(b)
    if len(ma) == 1 and len(mb) == 1:
        return [(ma[0], mb[0])]
    pairs: list[tuple[Optional[_Module], Optional[_Module]]] = []
    left = list(mb)
    for x in ma:
        hit = next((y for y in left if y.key == x.key), None) or next((y for y in left if y.name == x.name), None)
        if hit is not None:
            left.remove(hit)
        pairs.append((x, hit))
    pairs.extend((None, y) for y in left)
    return pairs


def diff(a: "Dump", b: "Dump", module: ModuleSel = None) -> pa.Table:
    """What changed from compile ``a`` to compile ``b``, one row per change.

    Modules are matched by key, then by name (a single module on each side is matched whatever
    its name). Columns: module (b's key, else a's), module_a, module_b, what (``module``,
    ``total``, ``peak``, ``category``, ``allocation``, ``buffer``, ``instruction``, ``fusion_kind``,
    ``custom_call``), change (``added``, ``removed``, ``resized``, ``changed``), key, a, b (numbers
    as int64, null when absent), delta (b − a), detail (text).

    Buffers (values) are matched by (op_name or instruction name, shape without layout) counting
    duplicates; allocations by (category, parameter number, size-rank); instructions by name.
    """
    rows: list[dict[str, Any]] = []

    def add(mod: str, ka: Optional[str], kb: Optional[str], what: str, change: str, key: str,
            va: Optional[int], vb: Optional[int], detail: str = "") -> None:
        rows.append({"module": mod, "module_a": ka, "module_b": kb, "what": what, "change": change,
                     "key": key, "a": va, "b": vb,
                     "delta": (vb or 0) - (va or 0) if (va is not None or vb is not None) else None,
                     "detail": detail})

    pairs = _pair_modules(a, b)
    if module is not None:
        sel_a = {m.key for m in _select(_module_list(a), module)} if _module_list(a) else set()
        try:
            sel_b = {m.key for m in _select(_module_list(b), module)}
        except KeyError:
            sel_b = set()
        pairs = [(x, y) for x, y in pairs if (x and x.key in sel_a) or (y and y.key in sel_b)]
    for x, y in pairs:
        mod = (y or x).key  # type: ignore[union-attr]
        ka, kb = (x.key if x else None), (y.key if y else None)
        if x is None or y is None:
            add(mod, ka, kb, "module", "added" if x is None else "removed", mod, None, None)
            continue
        sa, sb = summary(a, x.key, top=0)[0], summary(b, y.key, top=0)[0]
        for key, va, vb in (("total_bytes", sa["total_bytes"], sb["total_bytes"]),):
            if va != vb:
                add(mod, ka, kb, "total", "changed", key, va, vb)
        pa_, pb_ = sa["peak"] or {}, sb["peak"] or {}
        if pa_.get("bytes") != pb_.get("bytes") or pa_.get("step") != pb_.get("step"):
            add(mod, ka, kb, "peak", "changed", "peak_bytes", pa_.get("bytes"), pb_.get("bytes"),
                f"step {pa_.get('step')} ({pa_.get('instruction')}) -> step {pb_.get('step')} ({pb_.get('instruction')})")
        for c in CATEGORIES:
            va, vb = sa["by_category"][c], sb["by_category"][c]
            if va != vb:
                add(mod, ka, kb, "category", "changed", c, va, vb, "allocated bytes")
            qa, qb = (pa_.get("by_category") or {}).get(c), (pb_.get("by_category") or {}).get(c)
            if (qa or 0) != (qb or 0):
                add(mod, ka, kb, "category", "changed", f"peak:{c}", qa, qb, "logical bytes at the peak")
        _diff_allocations(a, b, x, y, lambda *r: add(mod, ka, kb, *r))
        _diff_buffers(a, b, x, y, lambda *r: add(mod, ka, kb, *r))
        _diff_instructions(a, b, x, y, lambda *r: add(mod, ka, kb, *r))
    schema = pa.schema([("module", pa.string()), ("module_a", pa.string()), ("module_b", pa.string()),
                        ("what", pa.string()), ("change", pa.string()), ("key", pa.string()),
                        ("a", pa.int64()), ("b", pa.int64()), ("delta", pa.int64()), ("detail", pa.string())])
    return pa.Table.from_pylist(rows, schema=schema)


_LAYOUT_RE = re.compile(r"\{[^{}]*\}")


def _strip_layout(shape: Optional[str]) -> str:
    if not shape:
        return ""
    prev = None
    s = shape
    while prev != s:  # nested braces (P(...) physical shapes) peel from the inside
        prev = s
        s = _LAYOUT_RE.sub("", s)
    return re.sub(r"/\*index=\d+\*/", "", s)


def _multiset_diff(ka: list[tuple[Any, ...]], kb: list[tuple[Any, ...]]) -> tuple[list[Any], list[Any]]:
    from collections import Counter

    ca, cb = Counter(ka), Counter(kb)
    return list((ca - cb).elements()), list((cb - ca).elements())


def _diff_buffers(a: "Dump", b: "Dump", x: _Module, y: _Module, add: Any) -> None:
    ba, bb = _buffers(a, [x]).to_pylist(), _buffers(b, [y]).to_pylist()

    def label(r: dict[str, Any]) -> str:
        return r["op_name"] or r["instruction"]

    # match by (label, logical shape); what is left over and shares a label is "resized"
    ka = [(label(r), _strip_layout(r["shape"]), r["size"]) for r in ba]
    kb = [(label(r), _strip_layout(r["shape"]), r["size"]) for r in bb]
    rem, new = _multiset_diff([k[:2] for k in ka], [k[:2] for k in kb])
    size_a = {}
    for k in ka:
        size_a.setdefault(k[:2], k[2])
    size_b = {}
    for k in kb:
        size_b.setdefault(k[:2], k[2])
    new_left = list(new)
    for k in rem:
        same = next((n for n in new_left if n[0] == k[0]), None)
        if same is not None:
            new_left.remove(same)
            add("buffer", "resized", k[0], size_a[k], size_b[same], f"{k[1]} -> {same[1]}")
        else:
            add("buffer", "removed", k[0], size_a[k], None, k[1])
    for k in new_left:
        add("buffer", "added", k[0], None, size_b[k], k[1])


def _diff_allocations(a: "Dump", b: "Dump", x: _Module, y: _Module, add: Any) -> None:
    aa = allocations(a, x.key).to_pylist()
    ab = allocations(b, y.key).to_pylist()

    def keys(rows: list[dict[str, Any]]) -> dict[str, int]:
        out: dict[str, int] = {}
        rank: dict[tuple[str, Any], int] = {}
        for r in sorted(rows, key=lambda r: (-r["size"], r["allocation"])):
            if r["parameter"] is not None:
                k = f"parameter {r['parameter']} {r['parameter_shape_index'] or ''}".strip()
            else:
                g = (r["category"], r["color"])
                rank[g] = rank.get(g, 0) + 1
                k = f"{r['category']}#{rank[g]} color {r['color']}"
            out[k] = r["size"]
        return out

    ka, kb = keys(aa), keys(ab)
    for k in ka:
        if k not in kb:
            add("allocation", "removed", k, ka[k], None)
        elif ka[k] != kb[k]:
            add("allocation", "resized", k, ka[k], kb[k])
    for k in kb:
        if k not in ka:
            add("allocation", "added", k, None, kb[k])
    if len(aa) != len(ab):
        add("allocation", "changed", "count", len(aa), len(ab))


def _diff_instructions(a: "Dump", b: "Dump", x: _Module, y: _Module, add: Any) -> None:
    ia, ib = _instr_info(a, [x]).to_pylist(), _instr_info(b, [y]).to_pylist()
    src_a = {r["source_of_info"] for r in ia}
    src_b = {r["source_of_info"] for r in ib}
    note = "" if src_a == src_b == {"hlo"} else "from buffer-assignment values (instructions that define a value)"
    na = {r["instruction"]: r for r in ia}
    nb = {r["instruction"]: r for r in ib}
    for n in sorted(set(na) - set(nb)):
        add("instruction", "removed", n, None, None, f"{na[n]['opcode']} {na[n]['shape'] or ''}".strip())
    for n in sorted(set(nb) - set(na)):
        add("instruction", "added", n, None, None, f"{nb[n]['opcode']} {nb[n]['shape'] or ''}".strip())
    for n in sorted(set(na) & set(nb)):
        sa_, sb_ = _strip_layout(na[n]["shape"]), _strip_layout(nb[n]["shape"])
        if na[n]["opcode"] != nb[n]["opcode"] or sa_ != sb_:
            add("instruction", "changed", n, None, None,
                f"{na[n]['opcode']} {sa_} -> {nb[n]['opcode']} {sb_}")

    def count(rows: list[dict[str, Any]], col: str, where: str) -> dict[str, int]:
        c: dict[str, int] = {}
        for r in rows:
            if r["opcode"] == where:
                k = r[col] or "(none)"
                c[k] = c.get(k, 0) + 1
        return c

    fa, fb = count(ia, "fusion_kind", "fusion"), count(ib, "fusion_kind", "fusion")
    for k in sorted(set(fa) | set(fb)):
        if fa.get(k, 0) != fb.get(k, 0):
            add("fusion_kind", "changed", k, fa.get(k, 0), fb.get(k, 0), note)
    ca, cb = count(ia, "custom_call_target", "custom-call"), count(ib, "custom_call_target", "custom-call")
    for k in sorted(set(ca) | set(cb)):
        va, vb = ca.get(k, 0), cb.get(k, 0)
        if va == vb:
            continue
        change = "added" if va == 0 else "removed" if vb == 0 else "changed"
        add("custom_call", change, k, va, vb, note)
