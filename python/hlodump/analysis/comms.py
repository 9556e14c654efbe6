"""Every collective of every after-optimizations HLO module: kind, groups, bytes, overlap.

One row per collective operation: a synchronous instruction (``all-reduce``, ``all-gather``,
``reduce-scatter``, ``all-to-all``, ``ragged-all-to-all``, ``collective-permute``,
``collective-broadcast``), an asynchronous ``-start``/``-done`` pair, or a collective wrapped in
an ``async-start``/``async-done`` pair (its ``instruction`` is the wrapped one; the pair is in
``start_instruction``/``done_instruction``) — each once.

``bytes`` is the data size S as NCCL's tests define it (nccl-tests ``doc/PERFORMANCE.md``):
all-gather its output (input × group size), reduce-scatter its input, all-reduce, all-to-all,
collective-permute, collective-broadcast and ragged-all-to-all the array sent (tuple operands
summed). ``bytes_per_device`` is what one device sends over a ring for that S (the "bus
bandwidth" factor of the same document), named in ``formula``:

========================  ===================  =========================
kind                      bytes_per_device     formula
========================  ===================  =========================
all-reduce                2(n−1)/n · S         ``2(n-1)/n*S``
all-gather                (n−1)/n · S          ``(n-1)/n*S``
reduce-scatter            (n−1)/n · S          ``(n-1)/n*S``
all-to-all, ragged        (n−1)/n · S          ``(n-1)/n*S``
collective-permute        S                    ``S``
collective-broadcast      S                    ``S``
========================  ===================  =========================

Replica groups: explicit ``{{0,1},{2,3}}``, XLA's iota form ``[G,N]<=[d0,d1,…]T(p…)`` (iota over
the reshape dims, transposed by p, read as G groups of N), and ``{}`` (one group of every device:
``num_partitions`` or ``replica_count`` of the module header).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import pyarrow as pa

from .cost import _safe_select
from .cost_graph import ModuleSel, _attr, _Ins, _load

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["collectives", "replica_groups", "COLLECTIVE_KINDS", "COLLECTIVE_COLUMNS"]

COLLECTIVE_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
                    "collective-permute", "collective-broadcast")
_FORMULA = {
    "all-reduce": ("2(n-1)/n*S", lambda n: 2 * (n - 1) / n),
    "all-gather": ("(n-1)/n*S", lambda n: (n - 1) / n),
    "reduce-scatter": ("(n-1)/n*S", lambda n: (n - 1) / n),
    "all-to-all": ("(n-1)/n*S", lambda n: (n - 1) / n),
    "ragged-all-to-all": ("(n-1)/n*S", lambda n: (n - 1) / n),
    "collective-permute": ("S", lambda n: 1.0),
    "collective-broadcast": ("S", lambda n: 1.0),
}
# Instructions that move data but compute nothing: not "overlapped compute".
_NOT_COMPUTE = frozenset({
    "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "add-dependency",
    "partition-id", "replica-id", "copy-start", "copy-done", "opt-barrier", "optimization-barrier",
})

COLLECTIVE_COLUMNS = (
    "module", "module_name", "computation", "kind", "instruction", "start_instruction",
    "done_instruction", "is_async", "start_step", "done_step", "steps_between",
    "overlapped_instructions", "exposed", "replica_groups", "group_size", "num_groups", "source_target_pairs",
    "channel_id", "use_global_device_ids", "dtype", "shape", "bytes", "bytes_per_device", "formula",
    "op_name", "source_file", "source_line", "file_id")


def _kind(opcode: str) -> Optional[str]:
    """``all-reduce`` for ``all-reduce``, ``all-reduce-start`` and ``all-reduce-done``."""
    base = opcode
    for suffix in ("-start", "-done"):
        if opcode.endswith(suffix):
            base = opcode[: -len(suffix)]
    base = _OLD_NAMES.get(base, base)
    return base if base in COLLECTIVE_KINDS else None


_OLD_NAMES = {"all-reduce-scatter": "reduce-scatter"}  # XLA's name for reduce-scatter in 2021


def replica_groups(text: Optional[str], all_devices: Optional[int] = None) -> Optional[list[list[int]]]:
    """``replica_groups=`` expanded to explicit groups.

    >>> replica_groups("{{0,1},{2,3}}")
    [[0, 1], [2, 3]]
    >>> replica_groups("[2,4]<=[8]")
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    >>> replica_groups("[4,2]<=[2,4]T(1,0)")
    [[0, 4], [1, 5], [2, 6], [3, 7]]
    >>> replica_groups("{0,1},{2,3}")  # the text inside replica_groups={…}
    [[0, 1], [2, 3]]
    >>> replica_groups("{}", 4)
    [[0, 1, 2, 3]]
    """
    if text is None:
        return None
    t = text.strip()
    m = re.fullmatch(r"\[([\d,\s]+)\]\s*<=\s*\[([\d,\s]+)\](?:\s*T\(([\d,\s]+)\))?", t)
    if m is not None:
        shape = [int(x) for x in m.group(1).split(",")]
        dims = [int(x) for x in m.group(2).split(",")]
        a = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(3):
            a = a.transpose([int(x) for x in m.group(3).split(",")])
        n_groups = shape[0] if len(shape) > 1 else 1
        return a.reshape(n_groups, -1).tolist()
    groups = [[int(x) for x in re.findall(r"\d+", g)] for g in re.findall(r"\{([^{}]*)\}", t)]
    groups = [g for g in groups if g]
    if not groups:
        return [list(range(all_devices))] if all_devices else None
    return groups


def _pairs(text: Optional[str]) -> Optional[list[list[int]]]:
    if not text:
        return None
    return [[int(x) for x in re.findall(r"\d+", p)] for p in re.findall(r"\{([^{}]*)\}", text)]


def _devices(header: str) -> Optional[int]:
    """Devices of a ``{}`` group: the module's partitions (SPMD) or replicas."""
    n = 1
    for key in ("num_partitions", "replica_count"):
        m = re.search(key + r"=(\d+)", header or "")
        if m:
            n = max(n, int(m.group(1)))
    return n if n > 1 else None


def _arrays_bytes(ins_list: list[_Ins]) -> int:
    return sum(s.bytes for o in ins_list for _, s in o.shape.leaves() if s.is_array)


def _size(kind: str, coll: _Ins, n: Optional[int]) -> int:
    """S of one collective (see the module docstring)."""
    ops = coll.operands
    if kind == "all-gather":
        return _arrays_bytes(ops) * (n or 1)
    if kind in ("collective-permute", "ragged-all-to-all"):
        return _arrays_bytes(ops[:1])
    return _arrays_bytes(ops)


def _dtype(coll: _Ins) -> Optional[str]:
    for o in coll.operands:
        for _, s in o.shape.leaves():
            if s.is_array:
                return s.etype
    return None


def _done_of(start: _Ins) -> Optional[_Ins]:
    """The ``-done`` / ``async-done`` that ends a start (through ``async-update``)."""
    node = start
    for _ in range(64):
        nxt = [u for u in node.users if u.opcode.endswith("-done") or u.opcode == "async-update"]
        if not nxt:
            return None
        node = nxt[0]
        if node.opcode.endswith("-done"):
            return node
    return None


def collectives(d: "Dump", module: ModuleSel = None) -> pa.Table:
    """One row per collective of every after-optimizations HLO module (``COLLECTIVE_COLUMNS``):
    ``kind`` (``all-reduce`` … without ``-start``), the instruction and, for asynchronous ones,
    the start and done instructions with their schedule steps (position in the computation of a
    scheduled module), ``steps_between`` and ``overlapped_instructions`` (compute instructions
    scheduled between start and done: what the transfer can hide behind), the groups expanded
    (``replica_groups`` as lists, ``group_size``, ``num_groups``; ``source_target_pairs`` for a
    permute), ``exposed`` (a synchronous collective, or a pair with no compute scheduled
    between start and done; None when the done is not found), ``channel_id``, ``bytes`` (S, NCCL's definition), ``bytes_per_device`` and the
    ``formula`` used, ``op_name`` and source line."""
    mods = _safe_select(d, module)
    loaded = _load(d, mods)
    headers = _headers(d, list(loaded.graphs))
    rows: list[dict[str, Any]] = []
    cols = loaded.cols
    for fid, comps in loaded.graphs.items():
        m = loaded.module_of[fid]
        ndev = _devices(headers.get(fid, ""))
        wrapped: dict[str, _Ins] = {}  # async computation -> its async-start
        for comp in comps.values():
            for ins in comp.instrs:
                if ins.opcode == "async-start" and ins.called:
                    wrapped[ins.called[0]] = ins
        for comp in comps.values():
            steps = {id(i): k for k, i in enumerate(comp.instrs)}
            for ins in comp.instrs:
                kind = _kind(ins.opcode)
                if kind is None or ins.opcode.endswith("-done"):
                    continue
                start = done = None
                where = comp
                if ins.opcode.endswith("-start"):
                    start, done = ins, _done_of(ins)
                elif comp.name in wrapped:
                    start = wrapped[comp.name]
                    done = _done_of(start)
                    where = start.comp
                rows.append(_row(m, fid, where, kind, ins, start, done, steps if where is comp else
                                 {id(i): k for k, i in enumerate(where.instrs)}, ndev, cols))
    rows.sort(key=lambda r: (r["file_id"], r["computation"] or "", r["start_step"] if r["start_step"] is not None else -1))
    return _table(rows)


def _headers(d: "Dump", fids: list[int]) -> dict[int, str]:
    from . import _views

    v = _views(d)
    if "modules" not in v or not fids:
        return {}
    import duckdb

    con = duckdb.connect()
    con.register("modules", v["modules"])
    con.register("wanted", pa.table({"file_id": pa.array(fids, pa.int32())}))
    rows = con.sql("SELECT file_id, attributes FROM modules SEMI JOIN wanted USING (file_id)").fetchall()
    con.close()
    return {f: a or "" for f, a in rows}


def _row(m: Any, fid: int, comp: Any, kind: str, coll: _Ins, start: Optional[_Ins], done: Optional[_Ins],
         steps: dict[int, int], ndev: Optional[int], cols: dict[str, list[Any]]) -> dict[str, Any]:
    pairs = _pairs(_attr(coll, "source_target_pairs")) if kind == "collective-permute" else None
    groups = None if pairs is not None else replica_groups(_attr(coll, "replica_groups"), ndev)
    if pairs is not None:
        group_size = len({x for p in pairs for x in p}) or None
        num_groups = None
    elif groups:
        group_size, num_groups = len(groups[0]), len(groups)
    else:
        group_size = ndev
        num_groups = 1 if ndev else None
    size = _size(kind, coll, group_size)
    formula, factor = _FORMULA[kind]
    per_device = size * factor(group_size) if group_size else None
    s_step = steps.get(id(start)) if start is not None else steps.get(id(coll))
    d_step = steps.get(id(done)) if done is not None else None
    between: Optional[list[str]] = None
    if start is not None and done is not None and s_step is not None and d_step is not None:
        between = [i.name for i in comp.instrs[s_step + 1:d_step] if i.opcode not in _NOT_COMPUTE
                   and not i.opcode.endswith("-done") and not i.opcode.endswith("-start")]
    chan = _attr(coll, "channel_id")
    row = coll.row if coll.row >= 0 else (start.row if start is not None else -1)
    return {
        "module": m.key, "module_name": m.name, "computation": comp.name, "kind": kind,
        "instruction": coll.name, "start_instruction": start.name if start is not None else None,
        "done_instruction": done.name if done is not None else None, "is_async": start is not None,
        "start_step": s_step, "done_step": d_step,
        "steps_between": (d_step - s_step - 1) if (s_step is not None and d_step is not None) else None,
        "overlapped_instructions": between,
        # nothing to hide behind: a synchronous collective, or a pair with no compute between
        "exposed": (not between) if start is not None and between is not None else (True if start is None else None),
        "replica_groups": groups, "group_size": group_size,
        "num_groups": num_groups, "source_target_pairs": pairs,
        "channel_id": int(chan) if chan and chan.isdigit() else None,
        "use_global_device_ids": "use_global_device_ids=true" in coll.attrs,
        "dtype": _dtype(coll), "shape": coll.shape.text, "bytes": size, "bytes_per_device": per_device,
        "formula": formula, "op_name": cols["op_name"][row] if row >= 0 else None,
        "source_file": cols["source_file"][row] if row >= 0 else None,
        "source_line": cols["source_line"][row] if row >= 0 else None, "file_id": fid,
    }


_TYPES = {
    "start_step": pa.int32(), "done_step": pa.int32(), "steps_between": pa.int32(),
    "overlapped_instructions": pa.list_(pa.string()), "exposed": pa.bool_(), "replica_groups": pa.list_(pa.list_(pa.int64())),
    "group_size": pa.int64(), "num_groups": pa.int64(), "source_target_pairs": pa.list_(pa.list_(pa.int64())),
    "channel_id": pa.int64(), "use_global_device_ids": pa.bool_(), "is_async": pa.bool_(),
    "bytes": pa.int64(), "bytes_per_device": pa.float64(), "source_line": pa.int64(), "file_id": pa.int32(),
}


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table({c: pa.array([r[c] for r in rows], _TYPES.get(c, pa.string())) for c in COLLECTIVE_COLUMNS})
