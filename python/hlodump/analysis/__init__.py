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

    from ..dump import Dump

__all__ = [
    "CATEGORIES",
    "NoSuchModule",
    "load",
    "match_modules",
    "memory_analysis",
    "peak_check",
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
        from .. import read_arrow as reader
    return reader(path)


# --------------------------------------------------------------------------------- modules

@dataclass
class _Module:
    key: str
    name: str
    module_id: Optional[int]
    dump: str = ""
    base: str = ""  # the key within its dump (module_0000.jit_f, or a file stem)
    file_ids: list[int] = field(default_factory=list)
    hlo_file_ids: list[int] = field(default_factory=list)  # after-optimizations HLO text
    kinds: set[str] = field(default_factory=set)
    backends: set[str] = field(default_factory=set)


class NoSuchModule(KeyError):
    """``module=`` matched no module, or (``unique=True``) several. ``choices``: the module keys
    to choose from (all modules when nothing matched, the matches when several did)."""

    def __init__(self, wanted: Any, choices: list[str], several: bool = False) -> None:
        self.wanted, self.choices, self.several = wanted, choices, several
        super().__init__(wanted)

    def __str__(self) -> str:
        what = "several modules match" if self.several else "no module matches"
        listed = ", ".join(self.choices[:40]) or "none"
        more = f" … ({len(self.choices) - 40} more)" if len(self.choices) > 40 else ""
        return f"{what} {self.wanted!r}; modules: {listed}{more}"


def _stem(path: str) -> str:
    base = os.path.basename(path)
    return base[:-4] if base.endswith(".txt") else base


_MODULE_CACHE: "dict[int, tuple[Any, list[_Module]]]" = {}


def _views(d: Any) -> Any:
    """The tables of ``d`` as read (zero-copy ``string_view``): the analysis runs in DuckDB and
    never needs the ``large_string`` copies that ``d.<table>`` makes for pyarrow's kernels."""
    return getattr(d, "views", d)


def _module_list(d: "Dump") -> list[_Module]:
    """The modules of a dump, identified by (dump, module id, module name): files of different
    dumps (``files.dump``) never join, whatever their module numbers and names. A module's
    ``key`` is ``module_NNNN.name`` (or the file stem of a file without that prefix); when the
    ``Dump`` holds several dumps it is qualified as ``<dump>:module_NNNN.name``."""
    d = _views(d)
    ft = d["files"]
    hit = _MODULE_CACHE.get(id(ft))
    if hit is not None and hit[0] is ft:
        return hit[1]
    cols = ["file_id", "path", "kind", "module_id", "module_name", "stage", "backend"]
    has_dump = "dump" in ft.column_names
    files = ft.select(cols + (["dump"] if has_dump else [])).to_pylist()
    by_key: dict[tuple[str, str], _Module] = {}
    for f in files:
        mid, mname = f["module_id"], f["module_name"]
        dump = (f.get("dump") if has_dump else None) or ""
        if mid is not None:
            base = f"module_{mid:04d}" + (f".{mname}" if mname else "")
            name = mname or base
        elif mname:
            base = name = mname
        else:
            base = name = _stem(f["path"])
        m = by_key.get((dump, base))
        if m is None:
            m = by_key[(dump, base)] = _Module(base, name, mid, dump, base)
        m.file_ids.append(f["file_id"])
        m.kinds.add(f["kind"])
        if f["backend"]:
            m.backends.add(f["backend"])
        if f["kind"] == "hlo_module" and f["stage"] == "after_optimizations":
            m.hlo_file_ids.append(f["file_id"])
    # keep modules that hold something to analyse
    used: set[int] = set()
    for t in ("allocations", "values", "live_ranges", "peak", "instructions", "totals", "memory_report"):
        if t in d and d[t].num_rows:
            used.update(d[t].column("file_id").unique().to_pylist())
    mods = [m for m in by_key.values() if used.intersection(m.file_ids)]
    if len({m.dump for m in mods}) > 1:
        for m in mods:
            m.key = f"{m.dump}:{m.base}"
    if len(_MODULE_CACHE) > 64:
        _MODULE_CACHE.clear()
    _MODULE_CACHE[id(ft)] = (ft, mods)
    return mods


def match_modules(mods: list[_Module], wanted: Union[str, int]) -> list[_Module]:
    """Modules matching one selector, best rule first: the key (``module_0002.jit_f``, or
    ``<dump>:module_0002.jit_f``), the key within its dump, the module name, the module id
    (``2`` / ``"2"`` / ``"0002"``), then a substring of the key (case-insensitive)."""
    ws = str(wanted).strip()
    rules = (
        lambda m: ws == m.key,
        lambda m: ws == m.base,
        lambda m: ws == m.name,
        lambda m: m.module_id is not None and ws.isdigit() and int(ws) == m.module_id,
        lambda m: ws.lower() in m.key.lower(),
    )
    for rule in rules:
        hit = [m for m in mods if rule(m)]
        if hit:
            return hit
    return []


def _select(mods: list[_Module], module: ModuleSel, unique: bool = False) -> list[_Module]:
    if module is None:
        return mods
    wanted = [module] if isinstance(module, (str, int)) else list(module)
    out: list[_Module] = []
    for w in wanted:
        hit = match_modules(mods, w)
        if not hit:
            raise NoSuchModule(w, [m.key for m in mods])
        if unique and len(hit) > 1:
            raise NoSuchModule(w, [m.key for m in hit], several=True)
        out.extend(m for m in hit if m not in out)
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
    d = _views(d)
    for t in tables:
        if t in d:
            con.register(t, d[t])
        else:  # read with tables=[…] that left it out: an empty table of its schema
            from ..schema import schema

            con.register(t, schema(t, False).empty_table())
    return con


def _arrow(rel: Any) -> pa.Table:
    t = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
    return t if isinstance(t, pa.Table) else t.read_all()


def modules(dump: "Dump") -> pa.Table:
    """One row per module: key, name, id, its file ids and which parts the dump has."""
    mods = _module_list(dump)
    counts = {}
    for t in ("allocations", "values", "live_ranges", "peak", "instructions"):
        fids = _views(dump)[t].column("file_id").to_pylist() if t in dump else []
        c: dict[int, int] = {}
        for f in fids:
            c[f] = c.get(f, 0) + 1
        counts[t] = c
    rows = []
    for m in mods:
        def n(t: str, fids: list[int]) -> int:
            return sum(counts[t].get(f, 0) for f in fids)
        rows.append({
            "module": m.key, "module_name": m.name, "module_id": m.module_id, "dump": m.dump,
            "file_ids": m.file_ids,
            "n_allocations": n("allocations", m.file_ids), "n_values": n("values", m.file_ids),
            "n_live_ranges": n("live_ranges", m.file_ids), "n_peak": n("peak", m.file_ids),
            "n_instructions": n("instructions", m.hlo_file_ids),
        })
    schema = pa.schema([("module", pa.string()), ("module_name", pa.string()), ("module_id", pa.int32()),
                        ("dump", pa.string()), ("file_ids", pa.list_(pa.int32())), ("n_allocations", pa.int64()),
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


_DEF_HEAD_RE = re.compile(r"\s*(?:ROOT\s+)?%?[^\s=]+\s*=\s*")
_DEF_OPCODE_RE = re.compile(r"\s*([a-z][a-z0-9\-]*)\(")
_ATTR_RES = {
    "op_name": re.compile(r'\bop_name="((?:[^"\\]|\\.)*)"'),
    "source_file": re.compile(r'\bsource_file="((?:[^"\\]|\\.)*)"'),
    "source_line": re.compile(r"\bsource_line=(\d+)"),
    "fusion_kind": re.compile(r"\bkind=(k[A-Za-z]+)"),
    "custom_call_target": re.compile(r'\bcustom_call_target="((?:[^"\\]|\\.)*)"'),
}


def _skip_shape(text: str, i: int) -> int:
    """The index after the shape that starts at ``text[i]`` (a tuple in parentheses, or an
    array ``f32[2,3]{1,0:T(8,128)}``)."""
    depth = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0 and ch == ")" and text.startswith("(", 0):
                pass
        elif ch == " " and depth == 0:
            return i
        i += 1
    return i


def _parse_defining(text: str) -> dict[str, Any]:
    """opcode, shape, op_name, source_file/line, fusion kind, custom-call target of a
    ``from instruction:`` text (``%name = SHAPE opcode(operands), attributes``), read with a
    few patterns: memory analysis needs only these keys."""
    hit = _SOURCE_CACHE.get(text)
    if hit is not None:
        return hit
    r: dict[str, Any] = {k: None for k in _INFO_KEYS}
    m = _DEF_HEAD_RE.match(text or "")
    if m is not None:
        i = m.end()
        j = _skip_shape(text, i)
        r["shape"] = text[i:j] or None
        om = _DEF_OPCODE_RE.match(text, j)
        if om is not None:
            r["opcode"] = om.group(1)
        for k, rx in _ATTR_RES.items():
            am = rx.search(text, j)
            if am is not None:
                v = am.group(1)
                r[k] = int(v) if k == "source_line" else v.replace('\\"', '"')
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
            t = int(tl[m.key]["allocated"].argmax())
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

def _merge(iv: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Inclusive step intervals merged (sorted, disjoint, not adjacent-merged needlessly)."""
    out: list[list[int]] = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1] + 1:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _timeline_arrays(dump: "Dump", mods: list[_Module]) -> dict[str, dict[str, Any]]:
    """Per module key: numpy arrays of live bytes per step, counted by allocation slice.

    A byte of an allocation is live at a step when some value assigned to a slice covering it
    (``assignments``: allocation, offset, size) is live then (``live_ranges``, inclusive). Values
    that share a slice (aliases: a while loop's state, a bitcast, a tuple element and the value it
    forwards) count once; partly overlapping slices count their union. So at every step the live
    bytes of an allocation are at most its size, and per memory space at most what it allocates.

    ``allocated``/``logical`` totals, ``per[(color, category)] = (bytes, logical)``,
    ``by_color[color]``, ``capacity[color]`` (allocated bytes of the color, thread-local
    allocations excluded), ``n`` (last step). Logical bytes of a slice: the largest logical size
    of the values sharing it (never more than the slice).
    """
    import numpy as np

    b = _buffers(dump, mods)
    con = _con(dump, mods, ["totals", "schedule", "allocations"])
    mx = dict(con.sql("""select m.module, max(t.value) from totals t join modmap m using (file_id)
                         where t.section = 'live_range' and t.key = 'max' group by all""").fetchall())
    npos = dict(con.sql("""select m.module, max(s.position) + 1 from schedule s join modmap m using (file_id)
                           group by all""").fetchall())
    cap: dict[str, dict[int, int]] = {}
    for mod, color, size in con.sql("""select m.module, a.color, sum(a.size) from allocations a
                                        join modmap m using (file_id) where not a.is_thread_local
                                        group by all""").fetchall():
        cap.setdefault(mod, {})[int(color or 0)] = int(size)
    cols = b.select(["module", "allocation", "offset", "size", "color", "category", "logical_bytes",
                     "start", "end"]).to_pydict()
    # module -> allocation -> slice (offset, size) -> [intervals, logical, color, category]
    per_mod: dict[str, dict[Any, dict[tuple[int, int], list[Any]]]] = {}
    last: dict[str, int] = {}
    for i in range(b.num_rows):
        s, e = cols["start"][i], cols["end"][i]
        if s is None or e is None:
            continue
        key = cols["module"][i]
        alloc = cols["allocation"][i]
        sl = (int(cols["offset"][i] or 0), int(cols["size"][i] or 0))
        ent = per_mod.setdefault(key, {}).setdefault(alloc, {}).setdefault(
            sl, [[], 0, int(cols["color"][i] or 0), cols["category"][i] or "unknown"])
        ent[0].append((int(s), int(e)))
        lg = cols["logical_bytes"][i]
        ent[1] = max(ent[1], min(int(lg), sl[1]) if lg is not None else sl[1])
        last[key] = max(last.get(key, 0), int(e))
    out: dict[str, dict[str, Any]] = {}
    for key, allocs in per_mod.items():
        n = int(max(mx.get(key) or 0, npos.get(key) or 0, last.get(key, 0), 0))
        diffs: dict[tuple[int, str], tuple[Any, Any]] = {}
        for alloc, slices in allocs.items():
            merged = {sl: _merge(v[0]) for sl, v in slices.items()}
            # elementary address segments of this allocation, each with the slices covering it
            bounds = sorted({x for off, size in slices for x in (off, off + size)})
            order = sorted(slices, key=lambda sl: sl[0])
            j = 0
            active: list[tuple[int, int]] = []
            for lo, hi in zip(bounds, bounds[1:]):
                while j < len(order) and order[j][0] <= lo:
                    active.append(order[j])
                    j += 1
                active = [sl for sl in active if sl[0] + sl[1] > lo]
                cover = [sl for sl in active if sl[0] <= lo and sl[0] + sl[1] >= hi]
                if not cover:
                    continue
                width = hi - lo
                ivs = merged[cover[0]] if len(cover) == 1 else _merge([x for sl in cover for x in merged[sl]])
                first = slices[cover[0]]
                ratio = max((slices[sl][1] / sl[1]) if sl[1] else 0.0 for sl in cover)
                gk = (first[2], first[3])
                d = diffs.get(gk)
                if d is None:
                    d = diffs[gk] = (np.zeros(n + 2, np.int64), np.zeros(n + 2, np.float64))
                lw = width * ratio
                for s, e in ivs:
                    s, e = max(s, 0), min(e, n)
                    if s > e:
                        continue
                    d[0][s] += width
                    d[0][e + 1] -= width
                    d[1][s] += lw
                    d[1][e + 1] -= lw
        total_a = np.zeros(n + 1, np.int64)
        total_l = np.zeros(n + 1, np.int64)
        per: dict[tuple[int, str], tuple[Any, Any]] = {}
        by_color: dict[int, Any] = {}
        for gk, (da, dl) in diffs.items():
            ca = np.cumsum(da)[: n + 1]
            cl = np.rint(np.cumsum(dl)[: n + 1]).astype(np.int64)
            cl = np.minimum(cl, ca)
            per[gk] = (ca, cl)
            total_a += ca
            total_l += cl
            by_color[gk[0]] = by_color.get(gk[0], np.zeros(n + 1, np.int64)) + ca
        out[key] = {"n": n, "per": per, "allocated": total_a, "logical": total_l, "by_color": by_color,
                    "capacity": cap.get(key, {})}
    return out


def memory_timeline(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """Live bytes at every schedule step (0 … max), per module, memory space (color) and
    category, from ``live_ranges`` × allocation slices (``assignments``) × allocation flags.

    Columns: module, module_name, step, instruction (scheduled at that step; null at ``max``),
    color, category, bytes (live bytes counted by allocation slice: values sharing a slice at
    a step count once, so per color this never exceeds what the module allocates in that
    color), logical_bytes (the unpadded size of those slices' contents: the largest logical
    shape size of the values in each slice). Live ranges are inclusive. Modules without live
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


# --------------------------------------------------------------------------------- jax's figures

HOST_MEMORY_SPACE = 5  # xla::Layout::kHostMemorySpace: allocations of this color count as host_*

MEMORY_ANALYSIS_FIELDS: tuple[str, ...] = (
    "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
    "host_argument_size_in_bytes", "host_output_size_in_bytes", "host_alias_size_in_bytes",
    "host_temp_size_in_bytes",
)


def _memory_analysis_of(rows: list[dict[str, Any]], cpu: bool = False) -> Optional[dict[str, int]]:
    """``CompiledMemoryStats`` figures from a module's allocations, as XLA computes them
    (``CompiledMemoryStats::PopulateBufferStatsFromAllocations``): every allocation counts by
    its flags — an entry parameter to ``argument``, and also to ``alias`` when it is live out
    (a donated parameter whose buffer the output reuses); ``maybe-live-out`` to ``output``; a
    preallocated temporary (neither parameter, nor live out, nor thread-local, nor constant)
    to ``temp``. Allocations in the host memory space (color 5) count as ``host_*``.

    On the CPU backend also ``peak_memory_in_bytes`` (jax >= 0.8 reports it): arguments +
    outputs − aliased + constants; the preallocated temporary is not part of it there."""
    if not rows:
        return None
    out = {k: 0 for k in MEMORY_ANALYSIS_FIELDS}
    for r in rows:
        pre = "host_" if r["color"] == HOST_MEMORY_SPACE else ""
        size = int(r["size"])
        param = r["parameter"] is not None
        live_out = bool(r["is_maybe_live_out"])
        if param:
            out[pre + "argument_size_in_bytes"] += size
            if live_out:
                out[pre + "alias_size_in_bytes"] += size
        if live_out:
            out[pre + "output_size_in_bytes"] += size
        if not param and not live_out and not r["is_thread_local"] and not r["is_constant"]:
            out[pre + "temp_size_in_bytes"] += size
    if cpu:
        const = sum(int(r["size"]) for r in rows if r["is_constant"] and not r["is_thread_local"]
                    and r["parameter"] is None and not r["is_maybe_live_out"])
        out["peak_memory_in_bytes"] = (out["argument_size_in_bytes"] + out["output_size_in_bytes"]
                                       - out["alias_size_in_bytes"] + const)
    return out


def _is_cpu(m: _Module) -> bool:
    return bool(m.backends) and all(b == "cpu" for b in m.backends)


def memory_analysis(dump: "Dump", module: ModuleSel = None) -> list[dict[str, Any]]:
    """Per module, jax's ``Compiled.memory_analysis()`` figures with jax's field names
    (``argument_size_in_bytes``, ``output_size_in_bytes``, ``alias_size_in_bytes``,
    ``temp_size_in_bytes`` and their ``host_*`` twins), derived from the buffer assignment
    alone; ``None`` for a module whose dump has no allocations. On the CPU backend also
    ``peak_memory_in_bytes``. ``generated_code_size_in_bytes`` is not in the dump and is not
    reported."""
    mods = _select(_module_list(dump), module)
    rows = allocations(dump, [m.key for m in mods]).to_pylist() if mods else []
    out = []
    for m in mods:
        ma = _memory_analysis_of([r for r in rows if r["module"] == m.key], _is_cpu(m))
        out.append({"module": m.key, "module_name": m.name, "module_id": m.module_id, "dump": m.dump,
                    "memory_analysis": ma})
    return out


# --------------------------------------------------------------------------------- peak check

def _fmt_slice(alloc: Any, off: Any, size: Any) -> str:
    return f"allocation {alloc} [{off}, {int(off) + int(size)})" if off is not None and size is not None else f"allocation {alloc}"


def _peak_check(m: _Module, ent: Optional[dict[str, Any]], listed: list[dict[str, Any]],
                lr_rows: list[dict[str, Any]], buf_rows: list[dict[str, Any]],
                instr_size: dict[str, Optional[int]], stated_t: Optional[int]) -> Optional[dict[str, Any]]:
    """XLA's ``Live ranges at T (peak)`` list against the live ranges and the slice timeline.
    Every difference is stated with the values involved."""
    if not listed or ent is None:
        return None
    t = int(listed[0]["time"]) if stated_t is None else int(stated_t)

    def norm(ix: Optional[str]) -> str:
        return "{}" if not ix else ix

    from collections import Counter

    ranges: dict[tuple[str, str], tuple[int, int]] = {}
    for r in lr_rows:
        k = (r["instruction"], norm(r["shape_index"]))
        s0, e0 = ranges.get(k, (r["start"], r["end"]))
        ranges[k] = (min(s0, r["start"]), max(e0, r["end"]))
    rset = {k for k, (s0, e0) in ranges.items() if s0 <= t <= e0}
    # Older XLA prints each value of the list by its instruction's name only (no shape index):
    # then the list and the live values are compared as counts per instruction.
    by_name = all(not r["shape_index"] for r in listed) and any(k[1] != "{}" for k in rset)
    if by_name:
        lcount = Counter(r["instruction"] for r in listed)
        rcount = Counter(k[0] for k in rset)
        lset = {(r["instruction"], norm(r["shape_index"])) for r in listed}
        diff_l = [(i, "{}") for i in sorted(lcount) if lcount[i] > rcount.get(i, 0)]
        diff_r = [(i, "{}") for i in sorted(rcount) if rcount[i] > lcount.get(i, 0)]
    else:
        lset = {(r["instruction"], norm(r["shape_index"])) for r in listed}
        lcount = rcount = Counter()
        diff_l = sorted(lset - rset)
        diff_r = sorted(rset - lset)
    explanations: list[str] = []
    only_listed = []
    for k in diff_l:
        if by_name:
            why = (f"listed {lcount[k[0]]} times, but {rcount.get(k[0], 0)} of its values have a BufferLiveRange "
                   f"covering step {t}")
        else:
            rng = ranges.get(k)
            why = (f"its BufferLiveRange is {rng[0]}-{rng[1]}, which does not cover step {t}" if rng
                   else "the dump has no BufferLiveRange for it")
        only_listed.append({"buffer": k[0] + (k[1] if k[1] != "{}" else ""), "reason": why})
    only_live = []
    for k in diff_r:
        if by_name:
            why = (f"{rcount[k[0]]} of its values are live at step {t} but XLA lists it {lcount.get(k[0], 0)} times")
        else:
            rng = ranges[k]
            why = f"live {rng[0]}-{rng[1]} but not printed in XLA's list"
        only_live.append({"buffer": k[0] + (k[1] if k[1] != "{}" else ""), "reason": why})
    for x in only_listed + only_live:
        explanations.append(f"{x['buffer']}: {x['reason']}")
    # XLA's measure: ByteSizeOf per live value — of the defining instruction's whole shape in
    # older XLA, of the value's own shape in newer XLA (the list's sizes tell which) — a value
    # that ended at step t-1 still counted at t (its end event sorts after the starts at t).
    listed_bytes = {(r["instruction"], norm(r["shape_index"])): int(r["bytes"]) for r in listed}
    value_size = {(r["instruction"], norm(r["shape_index"])): r["logical_bytes"] for r in buf_rows}
    per_value = instr = 0
    for k, v in listed_bytes.items():
        if k[1] != "{}":
            per_value += v == value_size.get(k) and v != instr_size.get(k[0])
            instr += v == instr_size.get(k[0]) and v != value_size.get(k)
    sizes_by_value = per_value > instr
    n = ent["n"]
    import numpy as np

    xla = np.zeros(n + 3, np.int64)
    plain = np.zeros(n + 3, np.int64)
    known = True
    for k, (s0, e0) in ranges.items():
        size = listed_bytes.get(k)
        if size is None:
            size = value_size.get(k) if sizes_by_value else instr_size.get(k[0])
        if size is None:
            known = False
            continue
        s0, e1 = max(int(s0), 0), min(int(e0) + 1, n + 1)
        xla[s0] += size
        xla[e1 + 1] -= size
        plain[s0] += size
        plain[min(int(e0), n + 1) + 1] -= size
    xla = np.cumsum(xla)[: n + 2]
    plain = np.cumsum(plain)[: n + 2]
    xla_t = int(np.argmax(xla)) if known and xla.size else None
    ours = ent["allocated"]
    s_max = int(ours.argmax())
    bytes_t = int(ours[t]) if t <= n else 0
    if bytes_t == int(ours[s_max]):
        s_max = t  # a tie: XLA's step is a moment with the most live bytes too
    # values listed at T that share one slice: XLA counts each, the timeline counts the slice once
    by_value = {(r["instruction"], norm(r["shape_index"])): r for r in buf_rows}
    shared: dict[tuple[Any, Any, Any], list[str]] = {}
    resized = []
    if by_name:  # each listed line is one value of that instruction: take the live values
        lbytes = {r["instruction"]: int(r["bytes"]) for r in listed}
        lvalues = [(k, lbytes[k[0]], k[0] + (k[1] if k[1] != "{}" else "")) for k in sorted(rset) if k[0] in lbytes]
    else:
        lvalues = [((r["instruction"], norm(r["shape_index"])), int(r["bytes"]), r["buffer"]) for r in listed]
    for k, nbytes, bname in lvalues:
        b = by_value.get(k)
        if b is None or b["allocation"] is None:
            continue
        shared.setdefault((b["allocation"], b["offset"], b["size"]), []).append(bname)
        if b["size"] is not None and nbytes != int(b["size"]):
            resized.append(f"{bname} listed with {nbytes:,} bytes (ByteSizeOf its "
                           f"{'shape' if sizes_by_value else 'instruction' + chr(39) + 's shape'}), "
                           f"its slice holds {int(b['size']):,}")
    dup = [(sl, names) for sl, names in shared.items() if len(names) > 1]
    dup_bytes = sum(int(sl[2]) * (len(names) - 1) for sl, names in dup)
    listed_total = sum(int(r["bytes"]) for r in listed)
    def names_of(names: list[str]) -> str:
        c = Counter(names)
        return ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in c.items())

    if dup:
        desc = "; ".join(f"{names_of(names)} share {_fmt_slice(*sl)}" for sl, names in dup[:8])
        more = f" … ({len(dup) - 8} more slices)" if len(dup) > 8 else ""
        explanations.append(f"at step {t} XLA lists {len(listed)} values, {sum(len(v) for _, v in dup)} of which share "
                            f"{len(dup)} allocation slices ({dup_bytes:,} bytes counted more than once): {desc}{more}")
    if resized:
        explanations.append(f"{len(resized)} listed sizes differ from the value's slice: " + "; ".join(resized[:8])
                            + (f" … ({len(resized) - 8} more)" if len(resized) > 8 else ""))
    if s_max != t:
        msg = (f"the most live bytes by allocation slice are at step {s_max} ({int(ours[s_max]):,} bytes), not at XLA's "
               f"step {t} ({bytes_t:,} bytes)")
        what = "its value's shape" if sizes_by_value else "its instruction's whole shape"
        if known:
            msg += (f"; XLA's sizes (ByteSizeOf {what}, every value counted even when values share a slice) sum to "
                    f"{int(plain[t]):,} at step {t} and {int(plain[s_max]):,} at step {s_max}")
        if xla_t is not None and xla_t == t:
            msg += (f"; XLA's step is reproduced by its rule: the most of those sums, counting a value that ended "
                    f"at the step before as still live ({int(xla[t]):,} at step {t})")
        explanations.append(msg)
    return {
        "step": t,
        "listed": len(listed),
        "listed_by_name_only": by_name,
        "listed_bytes": listed_total,
        "live_at_step": len(rset),
        "same_set": not only_listed and not only_live,
        "only_listed": only_listed,
        "only_live": only_live,
        "slice_bytes_at_step": bytes_t,
        "max_step": s_max,
        "max_bytes": int(ours[s_max]),
        "xla_rule_step": xla_t,
        "xla_rule_reproduced": (xla_t == t) if xla_t is not None else None,
        "xla_sizes": "value" if sizes_by_value else "instruction",
        "explanations": explanations,
    }


def peak_check(dump: "Dump", module: ModuleSel = None) -> list[dict[str, Any]]:
    """Per module with a ``Live ranges at T (peak)`` list: that list compared with the values
    live at T by the dump's live ranges, and XLA's peak with the slice timeline's peak; where
    they differ, ``explanations`` say why with the values involved (see ``summary``)."""
    return [{"module": s["module"], **(s["peak_check"] or {})} for s in summary(dump, module, top=0)]


# --------------------------------------------------------------------------------- summary

def _what_it_has(m: _Module, has: dict[str, int]) -> list[str]:
    """Notes on what a module's files can and cannot show."""
    notes = []
    if not has.get("allocations"):
        if has.get("live_ranges") or has.get("peak"):
            notes.append("live-range file only: XLA's peak list and live ranges are shown; allocation totals, "
                         "memory_analysis and the by-slice timeline need the module's *-buffer-assignment.txt")
        elif has.get("memory_report"):
            notes.append("memory-usage report only: its totals per memory space are shown; the peak and timeline "
                         "need the module's *-buffer-assignment.txt and live-range files")
        elif has.get("instructions"):
            notes.append(f"HLO text only ({has['instructions']:,} instructions): no memory figures; they need the "
                         "module's *-buffer-assignment.txt (and live-range file) from the same dump")
        else:
            notes.append("no buffer assignment (allocations) in the dump for this module")
    return notes


def summary(dump: "Dump", module: ModuleSel = None, top: int = 10) -> list[dict[str, Any]]:
    """A plain-data (JSON-ready) summary per module: totals by memory space and category, jax's
    ``memory_analysis`` figures, the peak (as the dump states it and as the by-slice timeline
    shows it, compared in ``peak_check``), fragmentation and padding at the peak per memory
    space, the top buffers at the peak with their source, and notes on what the dump lacks."""
    mods = _select(_module_list(dump), module)
    keys = [m.key for m in mods]
    allocs = allocations(dump, keys) if mods else None
    pb = peak_buffers(dump, keys) if mods else None
    arrs = _timeline_arrays(dump, mods)
    con = _con(dump, mods, ["totals", "errors", "schedule", "live_ranges", "peak", "instructions",
                            "memory_report"])
    totals: dict[str, dict[tuple[str, str, Any], int]] = {}
    for mod, sec, key, color, value in con.sql("""select m.module, t.section, t.key, t.color, t.value
                                                  from totals t join modmap m using (file_id)""").fetchall():
        totals.setdefault(mod, {})[(sec, key, color)] = value
    sched: dict[tuple[str, int], str] = {}
    for mod, pos, ins in con.sql("""select m.module, s.position, any_value(s.instruction)
                                    from schedule s join modmap m using (file_id) group by all""").fetchall():
        sched[(mod, pos)] = ins
    counts: dict[str, dict[str, int]] = {}
    for t in ("live_ranges", "peak", "memory_report"):
        for mod, c in con.sql(f"select m.module, count(*) from {t} x join modmap m using (file_id) group by all").fetchall():
            counts.setdefault(mod, {})[t] = c
    for mod, c in con.sql("select m.module, count(*) from instructions x join modmap m using (file_id) group by all").fetchall():
        counts.setdefault(mod, {})["instructions"] = c
    lr_all = _arrow(con.sql("""select m.module, l.instruction, l.shape_index, l.start, l."end"
                              from live_ranges l join modmap m using (file_id)""")).to_pylist() if mods else []
    peak_raw = _arrow(con.sql("""select m.module, p.time, p.buffer, p.instruction, p.shape_index, p.bytes
                                 from peak p join modmap m using (file_id) order by p.line""")).to_pylist() if mods else []
    bufs = _buffers(dump, mods).to_pylist() if mods else []
    info = _instr_info(dump, mods).to_pylist() if mods else []
    isize: dict[str, dict[str, Optional[int]]] = {}
    for r in info:
        isize.setdefault(r["module"], {}).setdefault(r["instruction"], logical_bytes(r["shape"]))
    out = []
    alloc_rows = allocs.to_pylist() if allocs is not None else []
    peak_rows = pb.to_pylist() if pb is not None else []
    pad = padding(dump, keys).to_pylist() if mods else []
    for m in mods:
        tot = totals.get(m.key, {})
        ar = [r for r in alloc_rows if r["module"] == m.key]
        pr = [r for r in peak_rows if r["module"] == m.key]
        has = dict(counts.get(m.key, {}), allocations=len(ar))
        notes: list[str] = _what_it_has(m, has)
        spaces: dict[int, dict[str, Any]] = {}
        for r in ar:
            sp = spaces.setdefault(r["color"], {"color": r["color"], "allocated_bytes": 0, "allocations": 0,
                                                "by_category": {c: 0 for c in CATEGORIES}})
            sp["allocated_bytes"] += r["size"]
            sp["allocations"] += 1
            sp["by_category"][r["category"]] += r["size"]
        total_alloc = sum(r["size"] for r in ar)
        stated_total = tot.get(("buffer_assignment", "total_bytes_used", None))
        if ar and stated_total is not None and stated_total != total_alloc:
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
            j = int(ent["allocated"].argmax())
            sp_rows = []
            for color in sorted(set(ent["by_color"]) | set(ent["capacity"])):
                series = ent["by_color"].get(color)
                cap = int(ent["capacity"].get(color, 0))
                if series is None:
                    sp_rows.append({"color": color, "allocated_bytes": cap, "max_live_bytes": 0, "step": None,
                                    "instruction": None, "free_bytes": cap, "fragmentation": 1.0 if cap else None,
                                    "logical_bytes": 0, "padding_bytes": 0})
                    continue
                k = int(series.argmax())
                live = int(series[k])
                lg = int(sum(cl[k] for (c, _), (_, cl) in ent["per"].items() if c == color))
                sp_rows.append({"color": color, "allocated_bytes": cap, "max_live_bytes": live, "step": k,
                                "instruction": sched.get((m.key, k)),
                                "free_bytes": cap - live if cap else None,
                                "fragmentation": round((cap - live) / cap, 6) if cap else None,
                                "logical_bytes": lg, "padding_bytes": live - lg})
            timeline = {"steps": ent["n"] + 1,
                        "max_allocated_bytes": int(ent["allocated"][j]), "max_allocated_step": j,
                        "max_allocated_instruction": sched.get((m.key, j)),
                        "max_logical_bytes": int(ent["logical"][j]),
                        "memory_spaces": sp_rows}
        check = _peak_check(m, ent, [r for r in peak_raw if r["module"] == m.key],
                            [r for r in lr_all if r["module"] == m.key],
                            [r for r in bufs if r["module"] == m.key], isize.get(m.key, {}),
                            tot.get(("live_range", "peak_time", None)))
        if check is not None:
            notes.extend(check["explanations"])
        if (("live_range", "not_available", None)) in tot:
            notes.append("HloLiveRange not available in this dump: no timeline, no peak list")
        elif ent is None and ar:
            notes.append("no live ranges in the dump: totals and allocations only (no timeline, no peak)")
        if (("live_range", "peak_unbounded", None)) in tot:
            notes.append("XLA could not determine the peak (unbounded dynamic shape)")
        pm = [r for r in pad if r["module"] == m.key]
        alloc_b = sum(r["allocated_bytes"] or 0 for r in pm)
        logical_b = sum(r["logical_bytes"] or 0 for r in pm)
        top_rows = [{k: r[k] for k in ("rank", "buffer", "bytes", "allocated_bytes", "shape", "category",
                                        "allocation", "color", "opcode", "op_name", "source")}
                    for r in pr[:top]]
        report_total = tot.get(("memory_report", "total_bytes", None))
        out.append({
            "module": m.key, "module_name": m.name, "module_id": m.module_id, "dump": m.dump,
            "total_bytes": total_alloc if ar else (stated_total if stated_total is not None else report_total),
            "total_bytes_stated": stated_total,
            "allocations": len(ar),
            "by_category": {c: sum(s["by_category"][c] for s in spaces.values()) for c in CATEGORIES},
            "memory_analysis": _memory_analysis_of(ar, _is_cpu(m)),
            "memory_spaces": [spaces[k] for k in sorted(spaces)],
            "peak": peak or None,
            "timeline": timeline or None,
            "peak_check": check,
            "top_buffers": top_rows,
            "padding": {"allocated_bytes": alloc_b, "logical_bytes": logical_b,
                        "padding_bytes": alloc_b - logical_b,
                        "values": len(pm)},
            "notes": notes,
        })
    return out


# --------------------------------------------------------------------------------- diff

def _norm_name(name: str) -> str:
    return re.sub(r"[_\W]+", "_", (name or "").lower()).strip("_")


def _module_signature(d: "Dump", m: _Module) -> tuple[Any, ...]:
    """Structure of a module for matching across compiles: entry parameter shapes (layouts
    stripped) and the count of allocations."""
    rows = allocations(d, m.key).to_pylist()
    params = tuple(sorted(_strip_layout(r["parameter_shape"]) for r in rows if r["parameter"] is not None))
    return params, len(rows)


def _pair_modules(a: "Dump", b: "Dump") -> list[tuple[Optional[_Module], Optional[_Module]]]:
    """Modules of ``a`` matched to modules of ``b``: one on each side are a pair; otherwise by
    key within the dump, then by name, then by similar names (``jit__lambda_`` /
    ``jit__lambda``, a renumbered module) — ties and near-ties broken by structure (parameter
    shapes, allocation count)."""
    import difflib

    ma, mb = _module_list(a), _module_list(b)
    if len(ma) == 1 and len(mb) == 1:
        return [(ma[0], mb[0])]
    sig_cache: dict[int, tuple[Any, ...]] = {}

    def sig(d: "Dump", m: _Module) -> tuple[Any, ...]:
        k = id(m)
        if k not in sig_cache:
            sig_cache[k] = _module_signature(d, m)
        return sig_cache[k]

    cands: list[tuple[float, int, int]] = []
    for i, x in enumerate(ma):
        for j, y in enumerate(mb):
            if x.base == y.base:
                score = 3.0
            elif x.name == y.name:
                score = 2.0
            else:
                r = difflib.SequenceMatcher(None, _norm_name(x.name), _norm_name(y.name)).ratio()
                if r < 0.75:
                    continue
                score = r
            if score < 3.0:
                same_sig = sig(a, x) == sig(b, y)
                score += 0.5 if same_sig else 0.0
                if x.module_id is not None and x.module_id == y.module_id:
                    score += 0.1
            cands.append((score, i, j))
    cands.sort(key=lambda c: (-c[0], c[1], c[2]))
    used_a: dict[int, int] = {}
    used_b: set[int] = set()
    for score, i, j in cands:
        if i in used_a or j in used_b:
            continue
        used_a[i] = j
        used_b.add(j)
    pairs: list[tuple[Optional[_Module], Optional[_Module]]] = []
    for i, x in enumerate(ma):
        pairs.append((x, mb[used_a[i]] if i in used_a else None))
    pairs.extend((None, y) for j, y in enumerate(mb) if j not in used_b)
    return pairs


def diff(a: "Dump", b: "Dump", module: ModuleSel = None) -> pa.Table:
    """What changed from compile ``a`` to compile ``b``, one row per change.

    Modules are matched by key, then by name, then by similar name and structure
    (``_pair_modules``; a single module on each side is matched whatever its name). Columns:
    module (b's key, else a's), module_a, module_b, what (``module``, ``total``, ``peak``,
    ``category``, ``memory_space``, ``allocation``, ``buffer``, ``instruction``, ``fusion_kind``,
    ``custom_call``), change (``added``, ``removed``, ``resized``, ``changed``), key, a, b
    (numbers as int64, null when absent), delta (b − a), detail (text).

    Rows: per module pair the summary rows first (module, total, peak, category,
    memory_space), then the others by bytes changed (``|delta|``) descending.

    Buffers (values) are matched by (op_name with ``jit(…)/`` prefixes dropped — or the
    instruction name —, shape without layout) counting duplicates; what is left is matched by
    the defining instruction's opcode and shape and its position among values of that shape
    (op_names drift between releases); allocations by (category, parameter number, size-rank);
    instructions as counts of (opcode, shape without layout).
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
        spa = {sp["color"]: sp["allocated_bytes"] for sp in sa["memory_spaces"]}
        spb = {sp["color"]: sp["allocated_bytes"] for sp in sb["memory_spaces"]}
        for c in sorted(set(spa) | set(spb)):
            if spa.get(c) != spb.get(c):
                add(mod, ka, kb, "memory_space", "changed", f"color {c}", spa.get(c), spb.get(c), "allocated bytes")
        for c in CATEGORIES:
            qa, qb = (pa_.get("by_category") or {}).get(c), (pb_.get("by_category") or {}).get(c)
            if (qa or 0) != (qb or 0):
                add(mod, ka, kb, "category", "changed", f"peak:{c}", qa, qb, "logical bytes at the peak")
        _diff_allocations(a, b, x, y, lambda *r: add(mod, ka, kb, *r))
        _diff_buffers(a, b, x, y, lambda *r: add(mod, ka, kb, *r))
        _diff_instructions(a, b, x, y, lambda *r: add(mod, ka, kb, *r))
    schema = pa.schema([("module", pa.string()), ("module_a", pa.string()), ("module_b", pa.string()),
                        ("what", pa.string()), ("change", pa.string()), ("key", pa.string()),
                        ("a", pa.int64()), ("b", pa.int64()), ("delta", pa.int64()), ("detail", pa.string())])
    first = {"module": 0, "peak": 1, "total": 2, "category": 3, "memory_space": 4}
    order = {m: i for i, m in enumerate(dict.fromkeys(r["module"] for r in rows))}
    rows.sort(key=lambda r: (order[r["module"]], first.get(r["what"], 9),
                             -abs(r["delta"] or 0) if r["what"] not in first else 0))
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


_JIT_PREFIX_RE = re.compile(r"(?:^|/)(?:p?jit|xla_computation|jvp|transpose|vmap|remat\d*|checkpoint)\([^()/]*\)(?=/|$)")


def _norm_op_name(op: Optional[str]) -> Optional[str]:
    """op_name without the ``jit(main)/``, ``pjit(f)/`` … wrappers that drift between releases."""
    if not op:
        return op
    prev = None
    s = op
    while prev != s:
        prev = s
        s = _JIT_PREFIX_RE.sub("", s).lstrip("/")
    return s or op


def _diff_buffers(a: "Dump", b: "Dump", x: _Module, y: _Module, add: Any) -> None:
    ba, bb = _buffers(a, [x]).to_pylist(), _buffers(b, [y]).to_pylist()

    def label(r: dict[str, Any]) -> str:
        return _norm_op_name(r["op_name"]) or r["instruction"]

    from collections import Counter

    # 1. by (label, logical shape), counting duplicates
    ka = Counter((label(r), _strip_layout(r["shape"])) for r in ba)
    kb = Counter((label(r), _strip_layout(r["shape"])) for r in bb)
    common = ka & kb
    left_a, left_b = [], []
    used_a: Counter = Counter()
    used_b: Counter = Counter()
    for r in sorted(ba, key=lambda r: r["value_id"]):
        k = (label(r), _strip_layout(r["shape"]))
        if used_a[k] < common[k]:
            used_a[k] += 1
        else:
            left_a.append(r)
    for r in sorted(bb, key=lambda r: r["value_id"]):
        k = (label(r), _strip_layout(r["shape"]))
        if used_b[k] < common[k]:
            used_b[k] += 1
        else:
            left_b.append(r)
    # 2. op_names drift: by the defining instruction's opcode and shape, in order of definition
    def pos_key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["opcode"], _strip_layout(r["shape"]))

    ga: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    gb: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in left_a:
        ga.setdefault(pos_key(r), []).append(r)
    for r in left_b:
        gb.setdefault(pos_key(r), []).append(r)
    rem, new = [], []
    for k in set(ga) | set(gb):
        xa, xb = ga.get(k, []), gb.get(k, [])
        n = min(len(xa), len(xb))
        for ra, rb in zip(xa[:n], xb[:n]):
            if ra["size"] != rb["size"]:
                add("buffer", "resized", label(rb), ra["size"], rb["size"],
                    f"{_strip_layout(ra['shape'])}; matched by {ra['opcode']} shape and position ({label(ra)})")
        rem.extend(xa[n:])
        new.extend(xb[n:])
    # 3. what is left and shares a label is "resized"
    new_left = list(new)
    for r in rem:
        same = next((n for n in new_left if label(n) == label(r)), None)
        if same is not None:
            new_left.remove(same)
            add("buffer", "resized", label(r), r["size"], same["size"],
                f"{_strip_layout(r['shape'])} -> {_strip_layout(same['shape'])}")
        else:
            add("buffer", "removed", label(r), r["size"], None, _strip_layout(r["shape"]))
    for r in new_left:
        add("buffer", "added", label(r), None, r["size"], _strip_layout(r["shape"]))


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
    from collections import Counter

    ca_ = Counter((r["opcode"], _strip_layout(r["shape"])) for r in ia)
    cb_ = Counter((r["opcode"], _strip_layout(r["shape"])) for r in ib)
    for k in sorted(set(ca_) | set(cb_), key=lambda k: (str(k[0]), str(k[1]))):
        va, vb = ca_.get(k, 0), cb_.get(k, 0)
        if va != vb:
            change = "added" if va == 0 else "removed" if vb == 0 else "changed"
            add("instruction", change, f"{k[0]} {k[1]}".strip(), va, vb, "instruction count" + (f"; {note}" if note else ""))

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

from .passes import history, passes  # noqa: E402  (pass history: hlodump.analysis.passes)
__all__ += ["passes", "history"]
