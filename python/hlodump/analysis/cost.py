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
  optimal seconds to −1 and sums them (jax reports those −1s: the ``note`` column says so),
  except the targets whose cost is known (``cost_custom``: a Pallas kernel's estimate, cuBLAS
  gemms, cuDNN convolutions, AllocateBuffer on TPU).

TPU dumps: TPU compilers run their own cost analysis. Shapes are sized by their tiles
(``ShapeUtil::ArraySize``: ``f32[3,100]{1,0:T(8,128)}`` holds 8 x 128 elements), and a gather or
scatter moves whole tiles of its tiled operand; with both, flops and transcendentals equal
libtpu's ``cost_analysis()`` and bytes accessed are within 0.01% on the Llama step and 0.2% on
every program measured, except TPU-only fusions (async collective fusions with aliased outputs,
host offload): docs/cost-and-comms.md.
"""

from __future__ import annotations

from .._typing import checked_analysis

from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa
import numpy as np


if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["costs", "cost_analysis", "format_cost", "COST_COLUMNS"]

from .cost_rules import BYTES, FLOPS, SECONDS, TRANS, UTIL, _NOTES, CostResult, run
from .engine import views
from .hlo_frame import Frame, frame
from .modules import ModuleSel

TupleResults = Optional[str]  # "leaves", "index_table" or None (told by the printer)


def cost_result(d: "Dump", module: ModuleSel = None, tuple_results: TupleResults = None) -> tuple[Any, Frame, CostResult]:
    """(scope, frame, cost result) of the modules ``module`` selects: the frame and the cost are
    computed once per scope and kept in its cache, so ``summary``, ``cost_analysis``, ``costs``,
    ``roofline``, ``cost_breakdown`` and ``report`` share them."""
    from .modules import scope_of

    sc = scope_of(d, module)
    fr = frame(sc)
    key = ("cost_result", tuple_results)
    res = sc.cache.get(key)
    if res is None:
        if tuple_results not in (None, "leaves", "index_table"):
            raise ValueError(f"tuple_results must be 'leaves', 'index_table' or None, not {tuple_results!r}")
        with sc.eng.lock:
            res = sc.cache.get(key)
            if res is None:
                res = sc.cache[key] = run(fr, tuple_results)
    return sc, fr, res


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


@checked_analysis
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
    sc, fr, res = cost_result(d, module, tuple_results)
    mods = sc.mods
    totals = res.totals
    out = []
    fid_of = {m.key: f for f, m in fr.module_of_file.items()}
    parts = _modules_per_file(d)
    whiles = _whiles_per_file(fr)
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
        if fid is not None and res.overflowed.get(fid):
            n = res.overflowed[fid]
            row["note"] = (f"{n} instruction{'s' if n != 1 else ''} left out of these figures: size overflows int64, "
                           "a shape not read or an unknown opcode (costs() notes which)")
        if fid is not None and whiles.get(fid):
            # said where the figures are shown, not only in docs/cost.md (issue 51)
            row["note"] = "; ".join(x for x in (row.get("note"), _while_note(whiles[fid])) if x)
        if any("tpu" in b for b in getattr(m, "backends", ())):
            row["note"] = "; ".join(x for x in (row.get("note"), "TPU compilers run their own cost analysis: flops and transcendentals match it, bytes "
                           "accessed are within 0.2% of it on the programs measured (more where async collective fusions or "
                           "host offload are) and optimal_seconds is its own") if x)
        out.append(row)
    return out


def _whiles_per_file(fr: Frame) -> dict[int, list[tuple[str, int]]]:
    """The while instructions of each chosen file, with their known trip count (-1: none)."""
    if "while" not in fr.opnames or not fr.n:
        return {}
    rows = np.nonzero(fr.op[:fr.n] == fr.opnames.index("while"))[0]
    names = fr.rows.column("name").take(pa.array(rows, pa.int64())).to_pylist()
    out: dict[int, list[tuple[str, int]]] = {}
    for i, name in zip(rows.tolist(), names):
        out.setdefault(int(fr.file[i]), []).append((str(name), int(fr.trip_count[i])))
    return out


def _while_note(ws: list[tuple[str, int]]) -> str:
    """"2 while loops counted for one iteration …" (XLA's rule, jax's cost_analysis() too)."""
    known = [f"{n} runs {t:,} times" for n, t in ws if t >= 0]
    n = len(ws)
    return (f"{n} while loop{'s' if n != 1 else ''} counted for one iteration (XLA's HloCostAnalysis and jax's "
            f"cost_analysis() count a while's body and condition once)"
            + (f"; {', '.join(known[:5])}{' …' if len(known) > 5 else ''}" if known else ""))


def _modules_per_file(d: "Dump") -> dict[int, list[str]]:
    """The module names of each HLO file (several in concatenated dumps and split test inputs)."""
    v = views(d)
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


@checked_analysis
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
    sc, fr, res = cost_result(d, module, tuple_results)
    key = ("cost_table", tuple_results)
    t = sc.cache.get(key)
    if t is None:
        t = sc.cache[key] = _cost_table(fr, res)
    return t


def _cost_table(fr: Frame, res: CostResult) -> pa.Table:
    """The ``costs`` table of a frame, column by column (no Python loop over rows but over the
    dots, convolutions and wrappers whose compute type is looked up inside)."""
    import numpy as np

    n = fr.n
    rows = fr.rows
    fid = fr.file[:n]
    comp = fr.comp[:n]
    files = sorted(fr.module_of_file)
    fpos = np.searchsorted(np.array(files, np.int64), fid) if n else np.zeros(0, np.int64)
    keys = pa.array([fr.module_of_file[f].key for f in files], pa.string())
    names = pa.array([fr.module_of_file[f].name for f in files], pa.string())
    idx = pa.array(fpos, pa.int64())
    entry = np.full(len(fr.c_name), False)
    entry[list(fr.entry_of_file.values())] = True
    pub = res.published[:n]
    mask = ~pub

    def fig(x: "np.ndarray") -> pa.Array:
        return pa.array(x[:n], pa.float64(), mask=mask)

    opb = res.opb[:int(fr.op_ptr[n])]
    opb_list = pa.ListArray.from_arrays(pa.array(fr.op_ptr[:n + 1].astype(np.int32)), pa.array(opb, pa.float64()),
                                        mask=pa.array(mask))
    # notes: a problem, else the opcode's note (a while's known trip count told)
    opnote = np.array([_NOTES.get(o) for o in fr.opnames], dtype=object)
    notes = opnote[fr.op[:n]] if n else np.zeros(0, object)
    trip = fr.trip_count
    w = np.nonzero((trip >= 0) & (notes == _NOTES["while"]))[0]
    for i in w.tolist():
        notes[i] = notes[i] + f" (its known trip count is {int(trip[i])})"
    _custom_call_notes(fr, res, notes)
    for i, why in res.problems.items():
        notes[i] = why
    dtype, matrix = _compute_types(fr)
    trip_arr = pa.array(trip, pa.int64(), mask=trip < 0)
    return pa.table({
        "module": keys.take(idx),
        "module_name": names.take(idx),
        "computation": pa.array(fr.c_name, pa.string()).take(pa.array(comp, pa.int64())),
        "instruction": rows.column("name").cast(pa.string()),
        "opcode": pa.array(fr.opnames, pa.string()).take(pa.array(fr.op[:n], pa.int64())),
        "in_total": pa.array(entry[comp] if n else np.zeros(0, bool), pa.bool_()),
        "flops": fig(res.flops),
        "transcendentals": fig(res.trans),
        "bytes_accessed": fig(res.bytes),
        "operand_bytes": opb_list,
        "output_bytes": fig(res.out),
        "note": pa.array(notes.tolist(), pa.string()),
        "trip_count": trip_arr,
        "op_name": rows.column("op_name").cast(pa.string()),
        "source_file": rows.column("source_file").cast(pa.string()),
        "source_line": rows.column("source_line").cast(pa.int64()),
        "shape": rows.column("shape").cast(pa.string()),
        "dtype": pa.array(dtype, pa.string()),
        "is_matrix": pa.array(matrix, pa.bool_()),
        "fusion_kind": rows.column("fusion_kind").cast(pa.string()),
        "custom_call_target": rows.column("custom_call_target").cast(pa.string()),
        "file_id": rows.column("file_id").cast(pa.int32()),
    })


_CUSTOM_NOTES = {
    "pallas": "custom call: the Pallas kernel's own cost estimate (backend_config), as the TPU compiler counts it",
    "gemm": "custom call: a cuBLAS gemm, 2 x M x N x K as XLA's GPU cost analysis counts it",
    "conv": "custom call: a cuDNN convolution, costed as XLA's GPU cost analysis does",
    "free": "custom call: AllocateBuffer, which the TPU compiler counts as nothing",
}


def _custom_call_notes(fr: Frame, res: CostResult, notes: Any) -> None:
    """The custom calls with a cost of their own (cost_custom) say which rule gave it, instead of
    the note of the unknown ones."""
    import numpy as np

    from .cost_custom import rule_of

    code = fr.opcode_code("custom-call")
    if code < 0:
        return
    rows = np.nonzero((fr.op[:fr.n] == code) & (np.nan_to_num(res.flops[:fr.n], nan=-1.0) >= 0))[0]
    if not len(rows):
        return
    targets = fr.rows.column("custom_call_target").take(pa.array(rows)).to_pylist()
    for i, tg in zip(rows.tolist(), targets):
        notes[i] = _CUSTOM_NOTES[rule_of(tg)]


_MATRIX = frozenset({"dot", "convolution"})


def _compute_types(fr: Frame) -> tuple[list[Optional[str]], list[bool]]:
    """(data type, runs on the matrix unit) of every row for the roofline: a dot or convolution
    (also inside a fusion or an async/call wrapper) by its lhs operand's type, any other row by
    its first array result's type."""
    import numpy as np

    n = fr.n
    first = np.array(fr.shapes.facts().first_etype + [None], dtype=object)
    dtype = first[fr.shape[:n]] if n else np.zeros(0, object)
    matrix = np.zeros(n, bool)
    look = np.array([o in _MATRIX or o in ("fusion", "call", "async-start") for o in fr.opnames], bool)
    for i in np.nonzero(look[fr.op[:n]])[0].tolist() if n else []:
        dt, mx = _compute_type(fr.node(i), fr)
        if mx:
            dtype[i], matrix[i] = dt, True
    return dtype.tolist(), matrix.tolist()


def _compute_type(ins: Any, fr: Frame, depth: int = 0) -> tuple[Optional[str], bool]:
    if ins.opcode in _MATRIX and ins.operands:
        return ins.operands[0].shape.arrays[0].etype if ins.operands[0].shape.arrays else None, True
    if ins.opcode in ("fusion", "call", "async-start") and ins.called and depth < 4:
        sub = fr.comp_by_name(int(fr.file[ins.i]), ins.called[0])
        if sub is not None:
            rows = sorted(sub.rows_of("dot") + sub.rows_of("convolution") + sub.rows_of("fusion"))
            for r in rows:
                dt, mx = _compute_type(fr.node(r), fr, depth + 1)
                if mx:
                    return dt, True
    arrays = ins.shape.arrays
    return (arrays[0].etype if arrays else None), False
