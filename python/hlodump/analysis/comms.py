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
the reshape dims, transposed by p, read as G groups of N), the named-mesh form of 2026
(``mesh['data'=2,'model'=4] {'model'}``, sub-axes ``{'model':(2)2}``, ``device_ids=(…)``;
expanded as XLA's ``MeshAxesReplicaGroupList::flattened_replica_groups`` does) and ``{}`` (one group
of every device: ``num_partitions`` or ``replica_count`` of the module header) — in
``groups_form``. ``group_size`` and ``num_groups`` come from the dims, whatever their size;
``replica_groups`` lists the groups up to ``MAX_LISTED_DEVICES`` devices (65,536; and at most
``MAX_LISTED_TOTAL`` device ids in one table), and ``note``
says why it is null beyond. ``note`` also marks a ``-done`` no ``-start`` ends (listed with null
bytes, so nothing is counted twice), and a figure too large for an int64.
"""

from __future__ import annotations

from .._typing import checked_analysis

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import pyarrow as pa

from .hlo_frame import Frame, Node, attr, frame
from .modules import ModuleSel

_Ins = Node  # an instruction as the rules below read it (a view of the HLO frame)


def _attr(ins: Node, name: str) -> Optional[str]:
    return attr(ins.attrs, name)

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["collectives", "replica_groups", "parse_replica_groups", "Groups", "MAX_LISTED_DEVICES",
           "COLLECTIVE_KINDS", "COLLECTIVE_COLUMNS"]

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
    "op_name", "source_file", "source_line", "file_id", "groups_form", "note")


def _kind(opcode: str) -> Optional[str]:
    """``all-reduce`` for ``all-reduce``, ``all-reduce-start`` and ``all-reduce-done``."""
    base = opcode
    for suffix in ("-start", "-done"):
        if opcode.endswith(suffix):
            base = opcode[: -len(suffix)]
    base = _OLD_NAMES.get(base, base)
    return base if base in COLLECTIVE_KINDS else None


_OLD_NAMES = {"all-reduce-scatter": "reduce-scatter"}  # XLA's name for reduce-scatter in 2021


#: The most devices whose groups are listed (``replica_groups``): a larger iota or mesh form keeps
#: its group size and count (from the dims, never expanded) and says so in ``note``.
MAX_LISTED_DEVICES = 1 << 16
#: The most device ids one ``collectives`` table lists in all (128 MB): rows past it keep their
#: group size and count and say so in ``note``.
MAX_LISTED_TOTAL = 1 << 24
_INT64_MAX = (1 << 63) - 1


@dataclass
class Groups:
    """``replica_groups=`` read: ``group_size`` and ``num_groups`` (from the dims, for every form
    whatever its size), ``groups`` (the explicit device groups, None when there are more than
    ``max_devices`` devices or the text is not understood), ``form`` (``explicit``, ``iota``,
    ``mesh``, ``all`` for ``{}``) and ``note`` (why ``groups`` is missing, or what was assumed)."""

    group_size: Optional[int] = None
    num_groups: Optional[int] = None
    groups: Optional[list[list[int]]] = None
    form: Optional[str] = None
    note: Optional[str] = None


def _prod(xs: "list[int]") -> int:
    n = 1
    for x in xs:
        n *= x
    return n


_IOTA = re.compile(r"\[([\d,\s]+)\]\s*<=\s*\[([\d,\s]+)\](?:\s*T\(([\d,\s]+)\))?")


def _iota_array(dims: "list[int]", reshape: "list[int]", perm: "Optional[list[int]]") -> "np.ndarray":
    """XLA's ``IotaTileAssignment``: iota over ``reshape``, transposed by ``perm``, read as ``dims``
    (``TileAssignment::MaybeMaterializeFullArray``, xla/hlo/ir/tile_assignment.cc)."""
    a = np.arange(_prod(reshape), dtype=np.int64).reshape(reshape)
    if perm:
        a = a.transpose(perm)
    return a.reshape(dims)


def _iota_groups(m: "re.Match[str]", max_devices: int) -> Groups:
    shape = [int(x) for x in m.group(1).split(",") if x.strip()]
    dims = [int(x) for x in m.group(2).split(",") if x.strip()]
    perm = [int(x) for x in m.group(3).split(",") if x.strip()] if m.group(3) else None
    total = _prod(dims)
    n_groups = shape[0] if len(shape) > 1 else 1
    if not shape or not dims or _prod(shape) != total or (perm is not None and sorted(perm) != list(range(len(dims)))):
        return Groups(form="iota", note=f"replica groups {m.group(0)!r} not understood (dims do not agree)")
    size = total // n_groups if n_groups else 0
    g = Groups(size if size <= _INT64_MAX else None, n_groups if n_groups <= _INT64_MAX else None, form="iota")
    if total > max_devices:
        g.note = (f"{n_groups} groups of {size} devices: too many devices ({total}) to list them "
                  f"(at most {max_devices}); group size and count from the iota dims")
        return g
    g.groups = _iota_array([n_groups, size], dims, perm).tolist() if total else []
    return g


# ``mesh['data'=2,'model'=4] {'model'}``, ``mesh[a=2,b=4], device_ids=([4,16]T(1,0)) {a,b:(1)2}``,
# ``mesh[ooo=10], device_ids=(8,3,7,5,4,2,6,0,1,9) {ooo:(5)2}``, ``maximal_mesh[device_id=3] {}``:
# MeshAxesReplicaGroupList::ToString, Mesh::ToString, AxisRef::ToString (xla/hlo/ir/replica_group.cc,
# xla/hlo/ir/mesh_and_axis.cc); axis names are quoted by the printers of 2026 (jax 0.10.2 on).
_NAME = r"(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s=,:{}()\[\]']+)"
_MESH = re.compile(r"(maximal_)?mesh\[(?P<axes>[^\]]*)\]\s*(?:,\s*device_ids=\((?P<ids>[^()]*(?:\([^()]*\))?[^()]*)\))?"
                   r"\s*\{(?P<group>[^{}]*)\}")
_MESH_AXIS = re.compile(r"\s*(" + _NAME + r")\s*=\s*(\d+)\s*")
_GROUP_AXIS = re.compile(r"\s*(" + _NAME + r")\s*(?::\s*\(\s*(\d+)\s*\)\s*(\d+))?\s*")


def _unquote(name: str) -> str:
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"" else name


def _split_top(text: str) -> list[str]:
    """``text`` split at commas outside quotes."""
    out, cur, q = [], [], ""
    for c in text:
        if q:
            cur.append(c)
            if c == q:
                q = ""
        elif c in "'\"":
            q = c
            cur.append(c)
        elif c == ",":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip() or out:
        out.append("".join(cur))
    return out


def _mesh_groups(m: "re.Match[str]", max_devices: int) -> Groups:
    """XLA's ``MeshAxesReplicaGroupList::flattened_replica_groups`` (xla/hlo/ir/replica_group.cc):
    the mesh's device array (iota, or ``device_ids``) reshaped so that every sub-axis ``a:(p)s``
    is a dimension of its own (``GetDimToReshapeAndAggregateAxes``: ``[p, s, full/(p*s)]`` for one
    sub-axis of a mesh axis; sorted by ``p`` with padding dims between for several,
    ``HandleMultiAxisRefPerDimension``), transposed so the grouped dimensions come last in the
    order the group names them (``get_replica_groups_for_full_axes``), then cut into groups of
    the product of the grouped sizes."""
    text = m.group(0)
    bad = Groups(form="mesh", note=f"replica groups {text!r} not understood")
    if m.group(1):  # maximal_mesh[device_id=N]: one device
        dm = re.fullmatch(r"\s*device_id\s*=\s*(\d+)\s*", m.group("axes"))
        if dm is None:
            return bad
        return Groups(1, 1, [[int(dm.group(1))]], "mesh")
    names: list[str] = []
    sizes: list[int] = []
    for part in _split_top(m.group("axes")):
        a = _MESH_AXIS.fullmatch(part)
        if a is None:
            return bad
        names.append(_unquote(a.group(1)))
        sizes.append(int(a.group(2)))
    if not names or len(set(names)) != len(names) or any(s < 1 for s in sizes):
        return bad
    axes: list[tuple[int, Optional[tuple[int, int]]]] = []  # (mesh axis, (pre_size, size) of a sub-axis)
    for part in _split_top(m.group("group")):
        a = _GROUP_AXIS.fullmatch(part)
        if a is None or _unquote(a.group(1)) not in names:
            return bad
        dim = names.index(_unquote(a.group(1)))
        sub = (int(a.group(2)), int(a.group(3))) if a.group(2) is not None else None
        if sub is not None and (sub[0] < 1 or sub[1] < 1 or sizes[dim] % (sub[0] * sub[1]) != 0):
            return bad
        axes.append((dim, sub))
    total = _prod(sizes)
    size = _prod([s[1] if s is not None else sizes[d] for d, s in axes])
    if size == 0 or total % size:
        return bad
    g = Groups(size if size <= _INT64_MAX else None, total // size if total // size <= _INT64_MAX else None,
               form="mesh")
    # the device array of the mesh (Mesh::ToString prints device_ids unless it is a plain iota)
    ids_text = (m.group("ids") or "").strip()
    ids_iota = re.fullmatch(r"\[([\d,\s]+)\]\s*(?:T\(([\d,\s]+)\))?", ids_text) if ids_text else None
    explicit: Optional[list[int]] = None
    if ids_text and ids_iota is None:
        try:
            explicit = [int(x) for x in ids_text.split(",")]
        except ValueError:
            return bad
        if len(explicit) != total:
            return bad
    if ids_iota is not None:
        reshape = [int(x) for x in ids_iota.group(1).split(",") if x.strip()]
        perm = [int(x) for x in ids_iota.group(2).split(",") if x.strip()] if ids_iota.group(2) else None
        if _prod(reshape) != total or (perm is not None and sorted(perm) != list(range(len(reshape)))):
            return bad
    if total > max_devices:
        g.note = (f"{g.num_groups} groups of {size} devices: too many devices ({total}) to list them "
                  f"(at most {max_devices}); group size and count from the mesh")
        return g
    if explicit is not None:
        devices = np.array(explicit, dtype=np.int64).reshape(sizes)
    elif ids_iota is not None:
        devices = _iota_array(sizes, reshape, perm)
    else:
        devices = np.arange(total, dtype=np.int64).reshape(sizes)
    # GetDimToReshapeAndAggregateAxes
    by_dim: dict[int, list[Optional[tuple[int, int]]]] = {}
    for d, s in axes:
        by_dim.setdefault(d, []).append(s)
    dim_map: dict[int, tuple[list[int], list[int]]] = {}
    for d, subs in by_dim.items():
        full = sizes[d]
        if len(subs) == 1:
            s = subs[0]
            dim_map[d] = ([s[0], s[1], full // (s[0] * s[1])], [1]) if s is not None else ([full], [0])
            continue
        if any(s is None for s in subs):  # a whole axis named twice or with a sub-axis of itself
            return bad
        order = sorted(range(len(subs)), key=lambda i: subs[i][0])  # type: ignore[index]
        reshape_dims: list[int] = []
        agg: list[int] = []
        prefix, idx = 1, 0
        for i in order:
            pre, sz = subs[i]  # type: ignore[misc]
            if pre != prefix:
                if pre % prefix:
                    return bad
                reshape_dims.append(pre // prefix)
                idx += 1
                prefix *= pre // prefix
            reshape_dims.append(sz)
            agg.append(idx)
            idx += 1
            prefix *= sz
        if prefix != full:
            if full % prefix:
                return bad
            reshape_dims.append(full // prefix)
        permuted = [0] * len(order)
        for i, o in enumerate(order):
            permuted[o] = agg[i]
        dim_map[d] = (reshape_dims, permuted)
    # ComputeReindexedAxes
    reindex_sizes: list[int] = []
    offsets: list[int] = []
    for d, full in enumerate(sizes):
        offsets.append(len(reindex_sizes))
        reindex_sizes.extend(dim_map[d][0] if d in dim_map else [full])
    consumed: dict[int, int] = {}
    grouped: list[int] = []
    for d, _ in axes:
        k = consumed.get(d, 0)
        consumed[d] = k + 1
        grouped.append(dim_map[d][1][k] + offsets[d])
    if len(set(grouped)) != len(grouped) or _prod(reindex_sizes) != total:
        return bad
    # get_replica_groups_for_full_axes
    transpose = [i for i in range(len(reindex_sizes)) if i not in grouped] + grouped
    g.groups = devices.reshape(reindex_sizes).transpose(transpose).reshape(-1, size).tolist()
    return g


def parse_replica_groups(text: Optional[str], all_devices: Optional[int] = None,
                         max_devices: int = MAX_LISTED_DEVICES) -> Groups:
    """``replica_groups=`` read without expanding more than ``max_devices`` devices (see ``Groups``).

    >>> g = parse_replica_groups("[1,10000000]<=[10000000]")
    >>> (g.group_size, g.num_groups, g.groups is None)
    (10000000, 1, True)
    >>> parse_replica_groups("mesh['data'=2,'model'=4] {'model'}").groups
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    """
    if text is None:
        return Groups()
    t = text.strip()
    m = _IOTA.fullmatch(t)
    if m is not None:
        return _iota_groups(m, max_devices)
    m = _MESH.fullmatch(t)
    if m is not None:
        return _mesh_groups(m, max_devices)
    if "mesh[" in t:
        return Groups(form="mesh", note=f"replica groups {t!r} not understood")
    groups = [[int(x) for x in re.findall(r"\d+", g)] for g in re.findall(r"\{([^{}]*)\}", t)]
    groups = [g for g in groups if g]
    if groups:
        size = len(groups[0]) if all(len(g) == len(groups[0]) for g in groups) else max(len(g) for g in groups)
        return Groups(size, len(groups), groups, "explicit")
    if not all_devices:
        return Groups(form="all", note="replica_groups={} (every device) and the module header gives no device count")
    g = Groups(all_devices, 1, None, "all")
    if all_devices <= max_devices:
        g.groups = [list(range(all_devices))]
    else:
        g.note = f"one group of every device: too many devices ({all_devices}) to list them (at most {max_devices})"
    return g


def replica_groups(text: Optional[str], all_devices: Optional[int] = None) -> Optional[list[list[int]]]:
    """``replica_groups=`` expanded to explicit groups (None when not understood, or when there are
    more than ``MAX_LISTED_DEVICES`` devices: ``parse_replica_groups`` has their size and count).

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
    return parse_replica_groups(text, all_devices).groups


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
    return sum(s.unpadded_bytes for o in ins_list for _, s in o.shape.leaves() if s.is_array)


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


@checked_analysis
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
    from .modules import scope_of

    sc = scope_of(d, module)
    fr = frame(sc)
    hit = sc.cache.get("collectives")
    if hit is None:
        hit = sc.cache["collectives"] = _collectives(d, fr)
    return hit


def _collectives(d: "Dump", fr: Frame) -> pa.Table:
    """The collectives table from the frame: only the collective instructions (and the async
    wrappers around them) are looked at, all modules at once."""
    n = fr.n
    headers = _headers(d, fr.files.tolist())
    rows: list[dict[str, Any]] = []
    budget = [0]  # device ids listed so far (MAX_LISTED_TOTAL)
    kind_of = [_kind(o) for o in fr.opnames]
    is_coll = np.array([k is not None for k in kind_of], bool)
    coll = np.nonzero(is_coll[fr.op[:n]])[0] if n else np.zeros(0, np.int64)
    if not len(coll):
        return _table(rows)
    # async computations -> their async-start (the last one naming it, as a dict would keep)
    wrapped: dict[int, Node] = {}
    if "async-start" in fr.opnames:
        for i in np.nonzero(fr.op[:n] == fr.opnames.index("async-start"))[0].tolist():
            called = fr.called_names(i)
            if called:
                c = fr.comp_index.get((int(fr.file[i]), called[0]))
                if c is not None:
                    wrapped[c] = fr.node(i)
    not_compute = np.array([o in _NOT_COMPUTE or o.endswith("-done") or o.endswith("-start") for o in fr.opnames], bool)
    ndev_of: dict[int, Optional[int]] = {}
    for c in np.unique(fr.comp[coll]).tolist():
        fid = int(fr.c_file[c])
        m = fr.module_of_file[fid]
        if fid not in ndev_of:
            ndev_of[fid] = _devices(headers.get(fid, ""))
        ndev = ndev_of[fid]
        comp = fr.comp_view(c)
        here = coll[fr.comp[coll] == c]
        matched: dict[int, Node] = {}  # id(done) -> its start
        dones: list[Node] = []
        for i in here.tolist():
            ins = fr.node(i)
            kind = kind_of[fr.op[i]]
            if ins.opcode.endswith("-done"):
                dones.append(ins)
                continue
            start = done = None
            where = comp
            if ins.opcode.endswith("-start"):
                start, done = ins, _done_of(ins)
                if done is not None:
                    matched[id(done)] = ins
            elif c in wrapped:
                start = wrapped[c]
                done = _done_of(start)
                where = start.comp
            rows.append(_row(m, fid, where, kind, ins, start, done, fr, not_compute, ndev, budget=budget))
        for ins in dones:  # a -done no -start ends: listed, not silently left out
            if id(ins) in matched:
                continue
            kind = _kind(ins.opcode) or ""
            op = ins.operands[0] if ins.operands else None
            if op is not None and op.opcode.endswith("-start") and _kind(op.opcode) == kind:
                first = _done_of(op)
                note = (f"a second -done of {op.name} (its first is {first.name}); not counted twice"
                        if first is not None and first is not ins else f"-done of {op.name}, not found from it")
            else:
                note = "a -done without its -start" + (f" ({op.name} is {op.opcode or 'not in this computation'})"
                                                        if op is not None else "")
            rows.append(_row(m, fid, comp, kind, ins, None, ins, fr, not_compute, ndev, note=note))
    rows.sort(key=lambda r: (r["file_id"], r["computation"] or "", r["start_step"] if r["start_step"] is not None else -1))
    return _table(rows)


def _headers(d: "Dump", fids: list[int]) -> dict[int, str]:
    from .engine import views

    v = views(d)
    if "modules" not in v or not fids:
        return {}
    import pyarrow.compute as pc

    t = v["modules"].select(["file_id", "attributes"])
    keep = np.nonzero(np.asarray(pc.is_in(t.column("file_id"), pa.array(fids, t.schema.field("file_id").type))
                                 .to_numpy(zero_copy_only=False), bool))[0]
    f = t.column("file_id").to_numpy()[keep].tolist()
    attrs = t.column("attributes")
    return {x: (attrs[int(i)].as_py() or "") for x, i in zip(f, keep)}


def _groups_text(coll: _Ins) -> Optional[str]:
    """The text of ``replica_groups=``: a mesh form runs past its first space and comma
    (``mesh['a'=2,'b'=4], device_ids=(…) {'b'}``), the others are one attribute value."""
    m = re.search(r"(?:^|[\s,])replica_groups=", coll.attrs)
    if m is not None:
        mm = _MESH.match(coll.attrs, m.end())
        if mm is not None:
            return mm.group(0)
    return _attr(coll, "replica_groups")


def _cap(v: Optional[int]) -> tuple[Optional[int], Optional[str]]:
    """``v`` if an int64 holds it, else (None, a note)."""
    if v is not None and v > _INT64_MAX:
        return None, "size overflows int64"
    return v, None


def _row(m: Any, fid: int, comp: Any, kind: str, coll: _Ins, start: Optional[_Ins], done: Optional[_Ins],
         fr: Frame, not_compute: np.ndarray, ndev: Optional[int],
         note: Optional[str] = None, budget: Optional[list[int]] = None) -> dict[str, Any]:
    c0, c1 = int(fr.c_start[comp.c]), int(fr.c_end[comp.c])

    def step(x: Optional[_Ins]) -> Optional[int]:  # position in the computation's text
        return x.i - c0 if x is not None and c0 <= x.i < c1 else None

    notes = [note] if note else []
    pairs = _pairs(_attr(coll, "source_target_pairs")) if kind == "collective-permute" else None
    g = Groups() if pairs is not None else parse_replica_groups(_groups_text(coll), ndev)
    if g.groups is not None and budget is not None:
        n = sum(len(x) for x in g.groups)
        if budget[0] + n > MAX_LISTED_TOTAL:
            g.groups = None
            g.note = f"groups not listed: this table already lists {budget[0]:,} device ids (at most {MAX_LISTED_TOTAL:,})"
        else:
            budget[0] += n
    if g.note:
        notes.append(g.note)
    if pairs is not None:
        group_size = len({x for p in pairs for x in p}) or None
        num_groups = None
    else:
        group_size, num_groups = g.group_size, g.num_groups
    size: Optional[int] = None
    per_device: Optional[float] = None
    formula, factor = _FORMULA[kind]
    if note is None or not coll.opcode.endswith("-done"):  # an unmatched -done: its bytes are its start's
        size, over = _cap(_size(kind, coll, group_size))
        if over:
            notes.append(f"bytes: {over}")
        per_device = size * factor(group_size) if group_size and size is not None else None
    s_step = step(start) if start is not None else step(coll)
    d_step = step(done) if done is not None else None
    between: Optional[list[str]] = None
    if start is not None and done is not None and s_step is not None and d_step is not None:
        span = np.arange(c0 + s_step + 1, c0 + d_step)
        span = span[~not_compute[fr.op[span]]]
        between = [fr.name(int(i)) for i in span]
    chan = _attr(coll, "channel_id")
    row = coll.row if coll.row >= 0 else (start.row if start is not None else -1)
    return {
        "module": m.key, "module_name": m.name, "computation": comp.name, "kind": kind,
        "instruction": coll.name, "start_instruction": start.name if start is not None else None,
        "done_instruction": done.name if done is not None else None, "is_async": start is not None or done is not None,
        "start_step": s_step, "done_step": d_step,
        # only a pair has steps between its ends (a lone -done: its own step twice gave -1)
        "steps_between": (d_step - s_step - 1) if (start is not None and done is not None and s_step is not None
                                                   and d_step is not None) else None,
        "overlapped_instructions": between,
        # nothing to hide behind: a synchronous collective, or a pair with no compute between
        "exposed": (not between) if start is not None and between is not None else (True if start is None and done is None else None),
        "replica_groups": g.groups, "group_size": group_size,
        "num_groups": num_groups, "groups_form": "pairs" if pairs is not None else g.form,
        "source_target_pairs": pairs,
        "channel_id": int(chan) if chan and chan.isdigit() and int(chan) <= _INT64_MAX else None,
        "use_global_device_ids": "use_global_device_ids=true" in coll.attrs,
        "dtype": _dtype(coll), "shape": coll.shape.text, "bytes": size, "bytes_per_device": per_device,
        "formula": formula, "op_name": fr.rows.column("op_name")[row].as_py() if row >= 0 else None,
        "source_file": fr.rows.column("source_file")[row].as_py() if row >= 0 else None,
        "source_line": fr.rows.column("source_line")[row].as_py() if row >= 0 else None, "file_id": fid,
        "note": "; ".join(notes) if notes else None,
    }


_TYPES = {
    "start_step": pa.int32(), "done_step": pa.int32(), "steps_between": pa.int32(),
    "overlapped_instructions": pa.list_(pa.string()), "exposed": pa.bool_(), "replica_groups": pa.list_(pa.list_(pa.int64())),
    "group_size": pa.int64(), "num_groups": pa.int64(), "source_target_pairs": pa.list_(pa.list_(pa.int64())),
    "channel_id": pa.int64(), "use_global_device_ids": pa.bool_(), "is_async": pa.bool_(),
    "bytes": pa.int64(), "bytes_per_device": pa.float64(), "source_line": pa.int64(), "file_id": pa.int32(),
    "groups_form": pa.string(), "note": pa.string(),
}


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table({c: pa.array([r[c] for r in rows], _TYPES.get(c, pa.string())) for c in COLLECTIVE_COLUMNS})
