"""The HLO graph the cost rules walk (``analysis.cost``): instructions and computations of the
after-optimizations modules loaded from the ``instructions`` table in one pass, their attributes
and windows, and the property keys of jax's ``cost_analysis()`` dict."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

import numpy as np
import pyarrow as pa

from .hlo_shapes import Shape, parse_shape

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

ModuleSel = Union[None, str, int, Sequence[Union[str, int]]]

FLOPS = "flops"
TRANS = "transcendentals"
BYTES = "bytes accessed"
SECONDS = "optimal_seconds"
UTIL = "utilization"


def _ix(index: tuple[int, ...]) -> str:
    return "{" + ",".join(str(i) for i in index) + "}"


@lru_cache(maxsize=4096)
def operand_bytes_key(i: int, index: tuple[int, ...] = ()) -> str:
    """XLA's ``GetOperandBytesAccessedKey``: ``bytes accessed0{}``, ``bytes accessed1{0}``."""
    return f"{BYTES}{i}{_ix(index)}"


@lru_cache(maxsize=4096)
def operand_util_key(i: int, index: tuple[int, ...] = ()) -> str:
    return f"{UTIL}{i}{_ix(index)}"


@lru_cache(maxsize=4096)
def output_bytes_key(index: tuple[int, ...] = ()) -> str:
    """XLA's ``GetOutputBytesAccessedKey``: ``bytes accessedout{}``, ``bytes accessedout{1}``."""
    return f"{BYTES}out{_ix(index)}"


OUT = output_bytes_key()


def f32(x: float) -> float:
    """``x`` rounded to float32: XLA keeps every property as a C++ ``float``."""
    return float(np.float32(x))


def _add(a: float, b: float) -> float:
    return float(np.float32(a) + np.float32(b))


def _mul(a: float, b: float) -> float:
    return float(np.float32(a) * np.float32(b))


def _copyable(key: str) -> bool:
    """``KeyToCopyFromSubcomputation``: bytes and utilizations stay with the subcomputation."""
    return not key.startswith(BYTES) and not key.startswith(UTIL)


# --------------------------------------------------------------------------------- the graph

@dataclass(eq=False)
class _Ins:
    row: int  # index into the loaded columns
    name: str
    opcode: str
    shape: Shape
    operand_names: list[str]
    called: list[str]
    attrs: str
    fusion_kind: Optional[str]
    custom_call_target: Optional[str]
    comp: "_Comp"
    param_number: Optional[int] = None
    operands: list["_Ins"] = field(default_factory=list)
    users: list["_Ins"] = field(default_factory=list)


@dataclass(eq=False)
class _Comp:
    name: str
    is_entry: bool
    instrs: list[_Ins] = field(default_factory=list)
    root: Optional[_Ins] = None
    by_name: dict[str, _Ins] = field(default_factory=dict)


_ATTR_CACHE: dict[tuple[str, str], Optional[str]] = {}


def _attr(ins: _Ins, name: str) -> Optional[str]:
    """The raw value of ``name=`` in the attribute text (braces balanced), or None."""
    m = re.search(r"(?:^|[\s,])" + re.escape(name) + r"=", ins.attrs)
    if m is None:
        return None
    i = m.end()
    s = ins.attrs
    if i < len(s) and s[i] == "{":
        depth = 0
        for j in range(i, len(s)):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    return s[i + 1:j]
        return s[i + 1:]
    j, depth = i, 0
    while j < len(s) and (depth > 0 or s[j] not in ", "):
        if s[j] in "([{":
            depth += 1
        elif s[j] in ")]}":
            depth -= 1
        j += 1
    return s[i:j]


def _ints(text: Optional[str]) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text or "")]


@dataclass
class _WinDim:
    size: int = 1
    stride: int = 1
    pad_lo: int = 0
    pad_hi: int = 0
    base_dil: int = 1
    win_dil: int = 1


def _window(ins: _Ins) -> list[_WinDim]:
    """``window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x2 rhs_dilate=1x1}``."""
    text = _attr(ins, "window")
    if not text:
        return []
    fields = dict(kv.split("=", 1) for kv in text.split() if "=" in kv)
    sizes = [int(x) for x in fields.get("size", "").split("x") if x]
    dims = [_WinDim(size=s) for s in sizes]

    def each(key: str, setter: Callable[[_WinDim, str], None]) -> None:
        if key in fields:
            for wd, part in zip(dims, fields[key].split("x")):
                setter(wd, part)

    each("stride", lambda w, v: setattr(w, "stride", int(v)))
    each("lhs_dilate", lambda w, v: setattr(w, "base_dil", int(v)))
    each("rhs_dilate", lambda w, v: setattr(w, "win_dil", int(v)))

    def pad(w: _WinDim, v: str) -> None:
        lo, hi = v.split("_")
        w.pad_lo, w.pad_hi = int(lo), int(hi)

    each("pad", pad)
    return dims


def _tuple_index(ins: _Ins) -> int:
    v = _attr(ins, "index")
    return int(v) if v and v.lstrip("-").isdigit() else -1


def _called(ins: _Ins, attr: str) -> str:
    v = _attr(ins, attr)
    if v:
        return v.strip().lstrip("%")
    return ins.called[0] if ins.called else ""


def _branches(ins: _Ins) -> list[str]:
    v = _attr(ins, "branch_computations")
    if v:
        return [x.strip().lstrip("%") for x in v.split(",") if x.strip()]
    t, f = _attr(ins, "true_computation"), _attr(ins, "false_computation")
    if t and f:
        return [t.strip().lstrip("%"), f.strip().lstrip("%")]
    return list(ins.called)


# --------------------------------------------------------------------------------- loading

_COLUMNS = ["file_id", "computation_id", "name", "opcode", "shape", "operands", "operand_index", "operand_text",
            "called_computations", "attributes", "fusion_kind", "custom_call_target", "op_name",
            "source_file", "source_line", "is_root", "stack_frame_id"]


@dataclass
class _Loaded:
    """The instructions of the selected modules' HLO files as Python lists (one pass over the
    ``instructions`` table for all modules), and the modules' graphs."""

    cols: dict[str, list[Any]]
    graphs: dict[int, dict[str, _Comp]]  # file_id -> computation name -> computation
    entry: dict[int, str]  # file_id -> entry computation name
    module_of: dict[int, Any]  # file_id -> module
    tuple_leaves: dict[int, bool] = field(default_factory=dict)  # file_id -> XLA's convention
    problems: dict[int, str] = field(default_factory=dict)  # row -> why XLA's rule did not apply
    overflowed: dict[int, int] = field(default_factory=dict)  # file_id -> instructions with a size past int64
    xla_2026: set[int] = field(default_factory=set)  # file_ids printed by XLA 2026 (jax >= 0.11)


def _hlo_files(d: "Dump", mods: list[Any]) -> dict[Any, int]:
    """Each module's HLO text to analyse: its after-optimizations text (the last printed, if
    several), else an HLO module file named alone (no stage in its name: a copied file)."""
    from . import _views

    ft = _views(d)["files"]
    cols = ft.select(["file_id", "kind", "stage"]).to_pydict()
    plain = {f for f, k, st in zip(cols["file_id"], cols["kind"], cols["stage"]) if k == "hlo_module" and st is None}
    out = {}
    for m in mods:
        ids = list(m.hlo_file_ids) or [f for f in m.file_ids if f in plain]
        if ids:
            out[m.key] = max(ids)
    return out


def _load(d: "Dump", mods: list[Any]) -> _Loaded:
    from . import _views

    v = _views(d)
    chosen = _hlo_files(d, mods)
    module_of = {chosen[m.key]: m for m in mods if m.key in chosen}
    empty = _Loaded({c: [] for c in _COLUMNS + ["trip_count"]}, {}, {}, module_of)
    if not module_of or "instructions" not in v or "computations" not in v:
        return empty
    import duckdb

    con = duckdb.connect()
    con.register("instructions", v["instructions"])
    con.register("computations", v["computations"])
    con.register("wanted", pa.table({"file_id": pa.array(sorted(module_of), pa.int32())}))
    have = set(v["instructions"].column_names)
    sel = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in _COLUMNS)
    # a while loop's backend_config holds its known trip count; other configs (custom-call
    # bodies: megabytes) are not needed
    trip = ("TRY_CAST(regexp_extract(backend_config, '\"known_trip_count\":\\{\"n\":\"(\\d+)\"', 1) AS BIGINT)"
            if "backend_config" in have else "NULL")
    it = con.sql(f"SELECT {sel}, CASE WHEN opcode = 'while' THEN {trip} END AS trip_count "
                 "FROM instructions SEMI JOIN wanted USING (file_id) "
                 "ORDER BY file_id, computation_id, instruction_id").to_arrow_table()
    cols = {c: it.column(c).to_pylist() for c in _COLUMNS + ["trip_count"]}
    comp_rows = con.sql("SELECT file_id, computation_id, name, is_entry FROM computations "
                        "SEMI JOIN wanted USING (file_id)").to_arrow_table().to_pylist()
    con.close()
    graphs: dict[int, dict[str, _Comp]] = {}
    by_id: dict[tuple[int, int], _Comp] = {}
    entry: dict[int, str] = {}
    for r in comp_rows:
        c = _Comp(r["name"], bool(r["is_entry"]))
        graphs.setdefault(r["file_id"], {})[c.name] = c
        by_id[(r["file_id"], r["computation_id"])] = c
        if c.is_entry:
            entry[r["file_id"]] = c.name
    for row in range(len(cols["name"])):
        comp = by_id.get((cols["file_id"][row], cols["computation_id"][row]))
        if comp is None:
            continue
        opcode = cols["opcode"][row] or ""
        pnum = None
        if opcode == "parameter":
            t = (cols["operand_text"][row] or "").strip()
            pnum = int(t) if t.isdigit() else None
        ins = _Ins(row, cols["name"][row], opcode, parse_shape(cols["shape"][row]), cols["operands"][row] or [],
                   cols["called_computations"][row] or [], cols["attributes"][row] or "",
                   cols["fusion_kind"][row], cols["custom_call_target"][row], comp, pnum)
        comp.instrs.append(ins)
        comp.by_name[ins.name] = ins
        if cols["is_root"][row]:
            comp.root = ins
    paths_of = cols["operand_index"]
    for comps in graphs.values():
        for comp in comps.values():
            if comp.root is None and comp.instrs:
                comp.root = comp.instrs[-1]
            elements: dict[tuple[int, int], _Ins] = {}
            for ins in comp.instrs:
                paths = paths_of[ins.row] or []
                for k, name in enumerate(ins.operand_names):
                    op = comp.by_name.get(name)
                    if op is None:  # an operand we cannot see: a zero-sized stand-in
                        op = _Ins(-1, name, "", parse_shape(None), [], [], "", None, None, comp)
                    for index in (paths[k] if k < len(paths) else None) or ():
                        op = _element(op, index, comp, elements)
                    ins.operands.append(op)
                    if (op.row >= 0 or op.opcode == "get-tuple-element") and \
                            (not op.users or op.users[-1] is not ins) and ins not in op.users:
                        op.users.append(ins)
    ft = v["files"].select(["file_id", "dump"]).to_pydict()
    dump_of = dict(zip(ft["file_id"], ft["dump"]))
    return _Loaded(cols, graphs, entry, module_of, _conventions(cols), xla_2026=_printed_by_xla_2026(cols, dump_of))


def _element(tup: _Ins, index: int, comp: _Comp, made: dict[tuple[int, int], _Ins]) -> _Ins:
    """The get-tuple-element XLA's parser makes for a compact tuple operand ``%x#index`` (one per
    tuple and index in a computation, reused; issue 36): not in ``comp.instrs`` (it costs nothing,
    as ``HandleGetTupleElement`` says, and has no row), but the element's shape for its users and
    a user of the tuple, so fused-parameter reads find it as they find a printed one."""
    key = (id(tup), index)
    g = made.get(key)
    if g is None:
        parts = tup.shape.parts
        shape = parts[index] if parts is not None and 0 <= index < len(parts) else parse_shape(None)
        g = _Ins(-1, f"{tup.name}#{index}", "get-tuple-element", shape, [tup.name], [], f"index={index}",
                 None, None, comp)
        g.operands.append(tup)
        tup.users.append(g)
        made[key] = g
    return g


def _printed_by_xla_2026(cols: dict[str, list[Any]], dump_of: dict[int, str]) -> set[int]:
    """HLO files printed by XLA 2026 (jax >= 0.11), whose cost analysis counts a tuple's index
    table 4 bytes an element (8 before). Only it prints compact tuple operands (``%x#k``) and a
    compare's ``order=``. A dump is written by one XLA: a file without such a sign (no tuple
    read, no compare) is of XLA 2026 when another file of its dump has one; otherwise older."""
    seen: set[int] = set()
    for fid, paths, op, attrs in zip(cols["file_id"], cols["operand_index"], cols["opcode"], cols["attributes"]):
        if fid not in seen and ((paths and any(paths)) or (op == "compare" and attrs and "order=" in attrs)):
            seen.add(fid)
    dumps = {dump_of.get(f) for f in seen}
    return {f for f in set(cols["file_id"]) if f in seen or dump_of.get(f) in dumps}


def _conventions(cols: dict[str, list[Any]]) -> dict[int, bool]:
    """Per HLO file, whether XLA counted a tuple result by its leaves (jax >= 0.8). The printer
    of those releases writes stack-frame tables (``stack_frame_id=`` in metadata) where older
    ones wrote ``source_file=``; a module with neither gets the newest convention."""
    new: dict[int, bool] = {}
    for fid, frame, src in zip(cols["file_id"], cols["stack_frame_id"], cols["source_file"]):
        if frame is not None:
            new[fid] = True
        elif src is not None and fid not in new:
            new[fid] = False
    return new
