"""FLOPs and bytes of every instruction, following XLA's ``HloCostAnalysis``.

``costs(d)`` is one row per instruction of every after-optimizations HLO module in the dump;
``cost_analysis(d)`` gives each module's totals under the key names of jax's
``Compiled.cost_analysis()`` (``flops``, ``transcendentals``, ``bytes accessed``,
``bytes accessed0{}``, ``bytes accessedout{}``, ``utilization0{}`` …), computed as XLA computes
them on CPU and GPU (``xla/service/hlo_cost_analysis.cc``; the PJRT CPU and GPU clients run that
base class with ``ShapeUtil::ByteSizeOf(shape, 8)`` as the shape size):

* every instruction starts from XLA's ``Preprocess``: ``bytes accessed`` = output bytes + the
  bytes of every operand; then its opcode's handler overrides what it knows better (see
  ``_HANDLERS`` and docs/FORMATS.md "Cost analysis" for each formula);
* a computation's properties are the sum over its instructions in XLA's visiting order
  (post-order DFS from the root, unreachable roots first), **in float32** as XLA sums them, so
  totals above 2^24 round as jax's do;
* ``while`` is its body + condition counted **once** (XLA does not multiply by the trip count);
  ``conditional`` the maximum over its branches; ``call``/``async-start`` their computation;
  ``fusion`` its fused computation's FLOPs with bytes only at the boundary
  (``FusionParameterReadBytes``); ``custom-call`` is unknown: XLA sets flops, bytes and
  optimal seconds to −1 and sums them (jax reports those −1s: the ``note`` column says so).

TPU dumps: TPU compilers run their own cost analysis (tiled shape sizes), so the figures here
are the CPU/GPU convention for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import pyarrow as pa


if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["costs", "cost_analysis", "format_cost", "COST_COLUMNS"]

ModuleSel = Union[None, str, int, Sequence[Union[str, int]]]


from .cost_graph import (
    BYTES,
    FLOPS,
    OUT,
    SECONDS,
    TRANS,
    UTIL,
    _Comp,
    _Ins,
    _Loaded,
    _load,
    operand_bytes_key,
)
from .cost_rules import (
    _Analysis,
    _NOTES,
)



TupleResults = Optional[str]  # "leaves", "index_table" or None (told by the printer)


def _run(loaded: _Loaded, tuple_results: TupleResults = None) -> tuple[dict[int, dict[str, float]], dict[int, dict[str, float]]]:
    """(per row properties, per file module totals) of every loaded module."""
    if tuple_results not in (None, "leaves", "index_table"):
        raise ValueError(f"tuple_results must be 'leaves', 'index_table' or None, not {tuple_results!r}")
    per_row: dict[int, dict[str, float]] = {}
    totals: dict[int, dict[str, float]] = {}
    for fid, comps in loaded.graphs.items():
        leaves = loaded.tuple_leaves.get(fid, True) if tuple_results is None else tuple_results == "leaves"
        a = _Analysis(comps, leaves, 4 if fid in loaded.xla_2026 else 8)
        name = loaded.entry.get(fid)
        totals[fid] = a.computation(name) if name else {}
        per_row.update(a.props)
        loaded.problems.update(a.problems)
        if a.overflowed:
            loaded.overflowed[fid] = a.overflowed
    return per_row, totals


def _safe_select(d: "Dump", module: ModuleSel) -> list[Any]:
    from . import _module_list, _select

    return _select(_module_list(d), module)


def _jax_dict(props: dict[str, float]) -> dict[str, float]:
    """The properties as jax's ``Compiled.cost_analysis()`` shows them: XLA's
    ``Properties::ForEach`` passes only non-zero values, and no per-instruction ``utilization``."""
    out = {}
    for k in (FLOPS, TRANS, BYTES, SECONDS):
        if props.get(k):
            out[k] = props[k]
    for k in sorted(props, key=_key_order):
        if k in out or k in (FLOPS, TRANS, BYTES, SECONDS, UTIL) or not props[k]:
            continue
        out[k] = props[k]
    return out


def _key_order(k: str) -> tuple[int, str]:
    return (0 if k.startswith(UTIL) else 1 if not k.startswith(BYTES + "out") else 2, k)


def cost_analysis(d: "Dump", module: ModuleSel = None, tuple_results: TupleResults = None) -> list[dict[str, Any]]:
    """Per module of ``d`` with after-optimizations HLO text: ``{"module", "module_name",
    "cost_analysis"}``, the last a dict with the keys and values of jax's
    ``Compiled.cost_analysis()`` for that compile (``flops``, ``transcendentals``,
    ``bytes accessed``, ``bytes accessed{i}{}``, ``bytes accessedout{}``, ``utilization{i}{}``,
    ``optimal_seconds`` when a custom call makes it −1; zero values left out as XLA does).
    Modules without HLO text are listed with ``cost_analysis`` None; a TPU module also gets a
    ``note`` (TPU compilers run their own analysis).

    ``tuple_results``: how XLA counted the output bytes of a tuple-shaped instruction — its array
    leaves (``"leaves"``, jax >= 0.8) or its index table (``"index_table"``, older); None tells
    the release from the module's printer (stack-frame tables came with the same releases)."""
    mods = _safe_select(d, module)
    loaded = _load(d, mods)
    _, totals = _run(loaded, tuple_results)
    out = []
    fid_of = {m.key: f for f, m in loaded.module_of.items()}
    parts = _modules_per_file(d)
    for m in mods:
        fid = fid_of.get(m.key)
        props = totals.get(fid) if fid is not None else None
        row = {"module": m.key, "module_name": m.name,
               "cost_analysis": _jax_dict(props) if props is not None else None}
        if fid is not None and len(parts.get(fid, ())) > 1:
            # The analyses take one module per file: a sum over several modules' entry
            # computations would be no compile's figure, so none is given.
            names = parts[fid]
            row["cost_analysis"] = None
            row["note"] = (f"its HLO file holds {len(names)} modules ({', '.join(names[:6])}"
                           f"{' …' if len(names) > 6 else ''}): no cost figure (the analyses take one module per "
                           "file; the tables have each module apart, by modules.module_index)")
        if fid is not None and loaded.overflowed.get(fid):
            n = loaded.overflowed[fid]
            row["note"] = (f"{n} instruction{'s' if n != 1 else ''} left out of these figures: size overflows int64 "
                           "or a shape not read (costs() notes which)")
        if any("tpu" in b for b in getattr(m, "backends", ())):
            row["note"] = ("TPU compilers run their own cost analysis (tiled sizes): these are the CPU/GPU "
                           "rules applied to this text, not what jax reports on TPU")
        out.append(row)
    return out


def _modules_per_file(d: "Dump") -> dict[int, list[str]]:
    """The module names of each HLO file (several in concatenated dumps and split test inputs)."""
    from . import _views

    v = _views(d)
    if "modules" not in v:
        return {}
    out: dict[int, list[str]] = {}
    cols = v["modules"].select(["file_id", "name"]).to_pydict()
    for f, n in zip(cols["file_id"], cols["name"]):
        out.setdefault(f, []).append(str(n))
    return out


def format_cost(ca: Optional[dict[str, float]]) -> str:
    """One line for a module's ``cost_analysis`` (the ``summary`` text):
    ``flops 8.31 kFLOP, transcendentals 128, bytes accessed 4.0KiB`` (−1 of a custom call as
    "unknown" parts)."""
    if ca is None:
        return "no after-optimizations HLO text"

    from ..units import format_bytes, format_si

    # FLOPs in SI, bytes in IEC (hlodump.units: one formatter for every command)
    parts = [f"{FLOPS} {format_si(ca.get(FLOPS, 0.0), 'FLOP')}", f"{TRANS} {format_si(ca.get(TRANS, 0.0))}",
             f"{BYTES} {format_bytes(ca.get(BYTES, 0.0))}"]
    if ca.get(SECONDS, 0.0) < 0:
        parts.append(f"{int(-ca[SECONDS])} custom call(s) XLA counts as -1 (unknown) in each figure")
    return ", ".join(parts)


COST_COLUMNS = ("module", "module_name", "computation", "instruction", "opcode", "in_total", "flops",
                "transcendentals", "bytes_accessed", "operand_bytes", "output_bytes", "note", "trip_count", "op_name",
                "source_file", "source_line", "shape", "dtype", "is_matrix", "fusion_kind", "custom_call_target",
                "file_id")


def costs(d: "Dump", module: ModuleSel = None, tuple_results: TupleResults = None) -> pa.Table:
    """One row per instruction of every after-optimizations HLO module: XLA's ``HloCostAnalysis``
    properties of that instruction (``flops``, ``transcendentals``, ``bytes_accessed``, the bytes
    of each operand ``operand_bytes`` and of the output ``output_bytes``), where it is
    (``module``, ``computation``, ``instruction``, ``op_name``, ``source_file``/``source_line``)
    and ``in_total``: whether the row is one of the entry computation's, whose figures add up to
    the module's ``cost_analysis`` (a ``while``, ``call``, ``conditional`` or ``fusion`` row holds
    its computations' cost; their instructions have rows of their own with ``in_total`` false).
    ``note`` says where XLA's convention surprises (while counted once, custom calls unknown).
    Instructions XLA never visits (computations no instruction calls) have null figures."""
    mods = _safe_select(d, module)
    loaded = _load(d, mods)
    per_row, _ = _run(loaded, tuple_results)
    return _cost_table(loaded, per_row)


def _cost_table(loaded: _Loaded, per_row: dict[int, dict[str, float]]) -> pa.Table:
    cols = loaded.cols
    n = len(cols["name"])
    comp_name: list[Optional[str]] = [None] * n
    in_total = [False] * n
    for fid, comps in loaded.graphs.items():
        entry = loaded.entry.get(fid)
        for c in comps.values():
            for ins in c.instrs:
                comp_name[ins.row] = c.name
                in_total[ins.row] = c.name == entry
    mod_key = [loaded.module_of[f].key if f in loaded.module_of else None for f in cols["file_id"]]
    mod_name = [loaded.module_of[f].name if f in loaded.module_of else None for f in cols["file_id"]]
    dtype: list[Optional[str]] = [None] * n
    matrix = [False] * n
    for comps in loaded.graphs.values():
        for c in comps.values():
            for ins in c.instrs:
                dtype[ins.row], matrix[ins.row] = _compute_type(ins, comps)
    flops: list[Optional[float]] = []
    trans: list[Optional[float]] = []
    byts: list[Optional[float]] = []
    outb: list[Optional[float]] = []
    opb: list[Optional[list[float]]] = []
    notes: list[Optional[str]] = []
    for row in range(n):
        p = per_row.get(row)
        if p is None:
            flops.append(None); trans.append(None); byts.append(None); outb.append(None); opb.append(None)
        else:
            flops.append(p.get(FLOPS, 0.0)); trans.append(p.get(TRANS, 0.0)); byts.append(p.get(BYTES, 0.0))
            outb.append(p.get(OUT, 0.0))
            opb.append([p.get(operand_bytes_key(i), 0.0) for i in range(len(cols["operands"][row] or []))])
        note = loaded.problems.get(row) or _NOTES.get(cols["opcode"][row] or "")
        if cols["trip_count"][row] is not None and note == _NOTES["while"]:
            note += f" (its known trip count is {cols['trip_count'][row]})"
        notes.append(note)
    return pa.table({
        "module": pa.array(mod_key, pa.string()),
        "module_name": pa.array(mod_name, pa.string()),
        "computation": pa.array(comp_name, pa.string()),
        "instruction": pa.array(cols["name"], pa.string()),
        "opcode": pa.array(cols["opcode"], pa.string()),
        "in_total": pa.array(in_total, pa.bool_()),
        "flops": pa.array(flops, pa.float64()),
        "transcendentals": pa.array(trans, pa.float64()),
        "bytes_accessed": pa.array(byts, pa.float64()),
        "operand_bytes": pa.array(opb, pa.list_(pa.float64())),
        "output_bytes": pa.array(outb, pa.float64()),
        "note": pa.array(notes, pa.string()),
        "trip_count": pa.array(cols["trip_count"], pa.int64()),
        "op_name": pa.array(cols["op_name"], pa.string()),
        "source_file": pa.array(cols["source_file"], pa.string()),
        "source_line": pa.array(cols["source_line"], pa.int64()),
        "shape": pa.array(cols["shape"], pa.string()),
        "dtype": pa.array(dtype, pa.string()),
        "is_matrix": pa.array(matrix, pa.bool_()),
        "fusion_kind": pa.array(cols["fusion_kind"], pa.string()),
        "custom_call_target": pa.array(cols["custom_call_target"], pa.string()),
        "file_id": pa.array(cols["file_id"], pa.int32()),
    })


_MATRIX = frozenset({"dot", "convolution"})


def _compute_type(ins: _Ins, comps: dict[str, _Comp], depth: int = 0) -> tuple[Optional[str], bool]:
    """(data type, runs on the matrix unit) of an instruction for the roofline: a dot or
    convolution (also inside a fusion or an async/call wrapper) by its lhs operand's type, any
    other instruction by its first array result's type."""
    if ins.opcode in _MATRIX and ins.operands:
        return ins.operands[0].shape.arrays[0].etype if ins.operands[0].shape.arrays else None, True
    if ins.opcode in ("fusion", "call", "async-start") and ins.called and depth < 4:
        sub = comps.get(ins.called[0])
        if sub is not None:
            for h in sub.instrs:
                if h.opcode in _MATRIX or h.opcode == "fusion":
                    dt, mx = _compute_type(h, comps, depth + 1)
                    if mx:
                        return dt, True
    arrays = ins.shape.arrays
    return (arrays[0].etype if arrays else None), False

