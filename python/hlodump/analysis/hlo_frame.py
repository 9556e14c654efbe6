"""The HLO frame: the instructions of every selected module's after-optimizations HLO text as
numpy arrays, computed once per engine scope (``frame(scope)``, cached in ``scope.cache`` as the
``@derived`` tables are) and shared by the cost rules (``cost_rules``), ``costs``,
``cost_analysis``, ``roofline`` and ``collectives``.

What it holds (one entry per *node*: the rows of the ``instructions`` table of the chosen files,
then the nodes XLA's parser makes that the text does not print):

* ``file``, ``comp`` (a global computation index), ``op`` (an index into ``opnames``), ``shape``
  (an index into ``shapes``: the distinct shape texts, each parsed once — one ``ByteSizeOf``,
  ``hlo_shapes.Shape.bytes``), ``param`` (``parameter(N)``'s N, else −1);
* operands as a CSR (``op_ptr``/``op_src``): each operand resolved to its defining node. A compact
  tuple operand ``%x#k`` (``operand_index``) resolves to a get-tuple-element node of its own,
  one per (tuple, index) of a computation, as XLA's parser makes (issue 36); an operand whose
  name is not in the computation to a zero-sized stand-in node (opcode ``""``);
* users as a CSR (``us_ptr``/``us_dst``), in the order the parser would add them;
* called computations as a CSR of computation indices (``cl_ptr``/``cl_comp``);
* per computation: file, name, entry flag, root node, its real rows' range;
* per file: XLA's conventions (tuple results by leaves since jax 0.8, tuple index tables of 4
  bytes since XLA 2026), the entry computation, the module it is analysed for.

Nothing here builds a Python object per instruction: the few rules that need one (fusion
boundaries, called computations) build ``Node`` views of the nodes they touch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .hlo_shapes import Shape, parse_shape

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Scope

__all__ = ["Frame", "frame", "attr", "Node"]

#: Counts frame builds (a test checks one build per scope, whatever the module count).
BUILDS = [0]


def attr(attrs: str, name: str) -> Optional[str]:
    """The raw value of ``name=`` in an instruction's attribute text (one pair of enclosing braces
    taken off), or None: split by the core's HLO attribute splitter (``_core.attribute_value``,
    the one the parser uses: a ``", "`` inside a string, comment or brackets never ends a value).
    Called only for the instructions whose rule needs an attribute (not per row)."""
    from .._core import attribute_value

    try:
        return attribute_value(attrs, name)
    except ValueError:  # a text only the general grammar reads: the plain scan below
        return _attr_scan(attrs, name)


def _attr_scan(attrs: str, name: str) -> Optional[str]:
    """``attr`` for attribute text the core's splitter leaves to the general grammar (blanks
    before a comma, comments): the first ``name=`` and its value up to a depth-0 ``,`` or blank."""
    m = _attr_re(name).search(attrs)
    if m is None:
        return None
    i = m.end()
    s = attrs
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


@lru_cache(maxsize=256)
def _attr_re(name: str) -> "re.Pattern[str]":
    return re.compile(r"(?:^|[\s,])" + re.escape(name) + r"=")


class Shapes:
    """The distinct shapes of a frame, each parsed once, and their facts as arrays."""

    def __init__(self, shapes: list[Shape]) -> None:
        self.list = shapes
        self._index: dict[int, int] = {id(s): i for i, s in enumerate(shapes)}
        self._refresh()

    def add(self, s: Shape) -> int:
        i = self._index.get(id(s))
        if i is None:
            i = self._index[id(s)] = len(self.list)
            self.list.append(s)
            self._stale = True
        return i

    def _refresh(self) -> None:
        L = self.list
        self.bytes = np.array([s.bytes if not s.unusable else 0 for s in L], dtype=np.int64)
        self.tpu = np.array([s.tpu_layout for s in L], dtype=bool)
        self.elements = np.array([s.elements if not s.unusable else 0 for s in L], dtype=np.int64)
        self.is_tuple = np.array([s.is_tuple for s in L], dtype=bool)
        self.is_array = np.array([s.is_array for s in L], dtype=bool)
        self.nparts = np.array([len(s.parts) if s.parts is not None else 0 for s in L], dtype=np.int64)
        self.unusable = np.array([s.unusable is not None for s in L], dtype=bool)
        # a tuple result counted by its array leaves (jax >= 0.8)
        self.leaf_bytes = np.array([sum(x.bytes for _, x in s.leaves() if x.is_array) if s.is_tuple and not s.unusable
                                    else 0 for s in L], dtype=np.int64)
        # all-reduce: elements and bytes of every array subshape
        self.arr_elems = np.array([float(sum(x.elements for _, x in s.subshapes() if x.is_array)) if not s.unusable
                                   else 0.0 for s in L], dtype=np.float64)
        self.arr_bytes = np.array([sum(x.bytes for _, x in s.subshapes() if x.is_array) if not s.unusable else 0
                                   for s in L], dtype=np.int64)
        self.elements_recursive = np.array([s.elements_recursive if not s.unusable else 0 for s in L], dtype=np.float64)
        # flat tuples of arrays: their parts' bytes (a CSR over shapes)
        self.flat = np.array([s.is_tuple and not s.unusable and len(s.parts) > 0 and all(x.is_array for x in s.parts)
                              for s in L], dtype=bool)
        pb = [[x.bytes for x in s.parts] if f else [] for s, f in zip(L, self.flat.tolist())]
        self.part_ptr = np.zeros(len(L) + 1, np.int64)
        np.cumsum([len(x) for x in pb], out=self.part_ptr[1:])
        self.part_bytes = np.array([b for x in pb for b in x], dtype=np.int64)
        self.first_etype = [(s.arrays[0].etype if s.arrays else None) if not s.unusable else None for s in L]
        self._stale = False

    def facts(self) -> "Shapes":
        if self._stale:
            self._refresh()
        return self


@dataclass
class Frame:
    n: int  # rows of the instructions table (nodes 0..n-1); synthesized nodes follow
    rows: pa.Table  # the rows' columns (for output tables)
    file: np.ndarray
    comp: np.ndarray
    op: np.ndarray
    opnames: list[str]
    shape: np.ndarray
    shapes: Shapes
    param: np.ndarray
    op_ptr: np.ndarray
    op_src: np.ndarray
    us_ptr: np.ndarray
    us_dst: np.ndarray
    cl_ptr: np.ndarray  # over real rows
    cl_comp: np.ndarray  # -1: a name not in the file
    cl_names: list[Optional[list[str]]]  # lazily: called computation names per row
    extra_name: dict[int, Any]  # synthesized node (not columnar) -> its name's parts
    c_file: np.ndarray
    c_name: list[str]
    c_entry: np.ndarray
    c_root: np.ndarray
    c_start: np.ndarray
    c_end: np.ndarray
    comp_index: dict[tuple[int, str], int]  # (file, name) -> computation
    files: np.ndarray  # the chosen files
    module_of_file: dict[int, Any]  # file -> module (the last selected module naming it)
    file_of_module: dict[str, int]
    entry_of_file: dict[int, int]
    tuple_leaves: dict[int, bool]
    xla_2026: set[int]
    tpu_files: set[int]  # files printed by a TPU compiler (tiled layouts): its custom-call rules
    trip_count: np.ndarray  # per real row (-1: none)
    attrs_col: Any  # the attributes column (read per row on demand)
    _nodes: dict[int, "Node"] = field(default_factory=dict)
    _comps: dict[int, "CompView"] = field(default_factory=dict)
    _attrs: dict[int, str] = field(default_factory=dict)

    @property
    def t(self) -> int:
        return len(self.op)

    def opcode_code(self, name: str) -> int:
        try:
            return self.opnames.index(name)
        except ValueError:
            return -2

    def attrs(self, node: int) -> str:
        if node >= self.n:
            j = node - self.n
            if j < len(self.v_idx):  # type: ignore[attr-defined]
                return f"index={int(self.v_idx[j])}"  # type: ignore[attr-defined]
            return self.extra_attrs.get(node, "")  # type: ignore[attr-defined]
        s = self._attrs.get(node)
        if s is None:
            s = self._attrs[node] = self.attrs_col[node].as_py() or ""
        return s

    def name(self, node: int) -> str:
        if node >= self.n:
            j = node - self.n
            if j < len(self.v_src):  # type: ignore[attr-defined]
                return f"{self.name(int(self.v_src[j]))}#{int(self.v_idx[j])}"  # type: ignore[attr-defined]
            v = self.extra_name[node]
            if v[0] == "slot":
                return str(self.flat_names[v[1]].as_py())  # type: ignore[attr-defined]
            return f"{self.name(v[0])}#{v[1]}"
        return self.rows.column("name")[node].as_py()

    def operands(self, node: int) -> np.ndarray:
        return self.op_src[self.op_ptr[node]:self.op_ptr[node + 1]]

    def users(self, node: int) -> np.ndarray:
        return self.us_dst[self.us_ptr[node]:self.us_ptr[node + 1]]

    def called_names(self, node: int) -> list[str]:
        if node >= self.n:
            return []
        v = self.cl_names[node]
        if v is None:
            v = self.cl_names[node] = list(self.rows.column("called_computations")[node].as_py() or [])
        return v

    def comp_rows(self, c: int) -> np.ndarray:
        return np.arange(self.c_start[c], self.c_end[c])

    def node(self, i: int) -> "Node":
        v = self._nodes.get(i)
        if v is None:
            v = self._nodes[i] = Node(self, int(i))
        return v

    def comp_view(self, c: int) -> "CompView":
        v = self._comps.get(c)
        if v is None:
            v = self._comps[c] = CompView(self, int(c))
        return v

    def comp_by_name(self, fid: int, name: str) -> Optional["CompView"]:
        c = self.comp_index.get((fid, name))
        return self.comp_view(c) if c is not None else None

    def visit_order(self, c: int) -> list[int]:
        """``HloComputation::Accept``'s order: a post-order DFS over operands from each
        instruction without users (not the root), in order, then from the root."""
        rows = range(int(self.c_start[c]), int(self.c_end[c]))
        root = int(self.c_root[c])
        us_ptr, op_ptr, op_src = self.us_ptr, self.op_ptr, self.op_src
        starts = [r for r in rows if us_ptr[r] == us_ptr[r + 1] and r != root]
        if root >= 0:
            starts.append(root)
        out: list[int] = []
        seen: set[int] = set()
        for start in starts:
            if start in seen:
                continue
            stack: list[tuple[int, bool]] = [(start, False)]
            while stack:
                node, expanded = stack.pop()
                if node in seen:
                    continue
                if expanded:
                    seen.add(node)
                    out.append(node)
                    continue
                stack.append((node, True))
                for o in op_src[op_ptr[node]:op_ptr[node + 1]][::-1]:
                    o = int(o)
                    if o not in seen:
                        stack.append((o, False))
        return out


class CompView:
    """A computation as the fallback rules see it (made on demand)."""

    def __init__(self, f: Frame, c: int) -> None:
        self.f, self.c = f, c
        self.name = f.c_name[c]
        self.is_entry = bool(f.c_entry[c])

    @property
    def root(self) -> Optional["Node"]:
        r = int(self.f.c_root[self.c])
        return self.f.node(r) if r >= 0 else None

    @property
    def instrs(self) -> list["Node"]:
        return [self.f.node(i) for i in range(int(self.f.c_start[self.c]), int(self.f.c_end[self.c]))]

    def rows_of(self, opcode: str) -> list[int]:
        code = self.f.opcode_code(opcode)
        s, e = int(self.f.c_start[self.c]), int(self.f.c_end[self.c])
        return [int(i) + s for i in np.nonzero(self.f.op[s:e] == code)[0]]

    def parameters(self) -> dict[int, "Node"]:
        out: dict[int, Node] = {}
        for r in self.rows_of("parameter"):
            p = int(self.f.param[r])
            if p >= 0:
                out[p] = self.f.node(r)
        return out


class Node:
    """One node as the fallback rules see it: the attributes of the first cost analysis' objects,
    read from the frame's arrays on demand."""

    __slots__ = ("f", "i", "_ops", "_users")

    def __init__(self, f: Frame, i: int) -> None:
        self.f, self.i = f, i
        self._ops: Optional[list[Node]] = None
        self._users: Optional[list[Node]] = None

    @property
    def row(self) -> int:
        return self.i if self.i < self.f.n else -1

    @property
    def name(self) -> str:
        return self.f.name(self.i)

    @property
    def opcode(self) -> str:
        return self.f.opnames[self.f.op[self.i]]

    @property
    def shape(self) -> Shape:
        return self.f.shapes.list[self.f.shape[self.i]]

    @property
    def operands(self) -> list["Node"]:
        if self._ops is None:
            self._ops = [self.f.node(int(o)) for o in self.f.operands(self.i)]
        return self._ops

    @property
    def users(self) -> list["Node"]:
        if self._users is None:
            self._users = [self.f.node(int(u)) for u in self.f.users(self.i)]
        return self._users

    @property
    def called(self) -> list[str]:
        return self.f.called_names(self.i)

    @property
    def attrs(self) -> str:
        return self.f.attrs(self.i)

    @property
    def fusion_kind(self) -> Optional[str]:
        return self.f.rows.column("fusion_kind")[self.i].as_py() if self.i < self.f.n else None

    @property
    def custom_call_target(self) -> Optional[str]:
        return self.f.rows.column("custom_call_target")[self.i].as_py() if self.i < self.f.n else None

    @property
    def backend_config(self) -> Optional[str]:
        """A custom call's backend_config (None for every other opcode: the frame keeps no other)."""
        return self.f.rows.column("custom_backend_config")[self.i].as_py() if self.i < self.f.n else None

    @property
    def comp(self) -> CompView:
        return self.f.comp_view(int(self.f.comp[self.i]))

    @property
    def param_number(self) -> Optional[int]:
        p = int(self.f.param[self.i])
        return p if p >= 0 else None


# --------------------------------------------------------------------------------- building

_ROW_COLUMNS = ("file_id", "computation_id", "name", "opcode", "shape", "operands", "operand_index",
                "called_computations", "attributes", "fusion_kind", "custom_call_target", "op_name",
                "source_file", "source_line", "is_root", "stack_frame_id")


def frame(sc: "Scope") -> Frame:
    """The frame of a scope's modules (built on first use, then cached in ``sc.cache``)."""
    hit = sc.cache.get("hlo_frame")
    if hit is None:
        with sc.eng.lock:
            hit = sc.cache.get("hlo_frame")
            if hit is None:
                hit = sc.cache["hlo_frame"] = _build(sc)
    return hit


def _chosen(sc: "Scope") -> pa.Table:
    """Per selected module, its HLO text to analyse: the after-optimizations text (the last
    printed, if several), else an HLO module file named alone (no stage in its name)."""
    return sc.arrow("""
        SELECT m.module, coalesce(max(m.file_id) FILTER (WHERE m.is_hlo),
                                  max(m.file_id) FILTER (WHERE f.kind = 'hlo_module' AND f.stage IS NULL)) AS file_id
        FROM @modmap m LEFT JOIN files f USING (file_id)
        GROUP BY m.module""")


def _build(sc: "Scope") -> Frame:
    BUILDS[0] += 1
    eng = sc.eng
    chosen = _chosen(sc)
    file_of_module = {k: f for k, f in zip(chosen.column("module").to_pylist(), chosen.column("file_id").to_pylist())
                      if f is not None}
    by_key = {m.key: m for m in sc.mods}
    module_of_file: dict[int, Any] = {}
    for m in sc.mods:  # the last selected module naming a file (as the first analysis did)
        f = file_of_module.get(m.key)
        if f is not None:
            module_of_file[f] = by_key[m.key]
    files = np.array(sorted(module_of_file), dtype=np.int32)
    wanted = f"wanted_files__{sc.sid}"
    have = set(eng.d["instructions"].column_names) if eng.has("instructions") else set()
    with eng.lock:
        eng.con.register(wanted, pa.table({"file_id": pa.array(files, pa.int32())}))
    try:
        eng.table("instructions")
        eng.table("computations")
        eng.table("files")
        sel = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in _ROW_COLUMNS)
        # a custom call's backend_config may say what it costs (cost_custom); no other row's is read
        cc_cfg = ("CASE WHEN opcode = 'custom-call' THEN backend_config END"
                  if "backend_config" in have else "NULL::VARCHAR")
        trip = ("TRY_CAST(regexp_extract(backend_config, '\"known_trip_count\":\\{\"n\":\"(\\d+)\"', 1) AS BIGINT)"
                if "backend_config" in have else "NULL")
        pnum = ("CASE WHEN opcode = 'parameter' AND regexp_full_match(trim(operand_text), '[0-9]+') "
                "THEN TRY_CAST(trim(operand_text) AS INTEGER) END" if "operand_text" in have else "NULL")
        with eng.lock:
            rows = _arrow(eng.con.sql(
                f"SELECT {sel}, CASE WHEN opcode = 'while' THEN {trip} END AS trip_count, {pnum} AS param_number, "
                f"{cc_cfg} AS custom_backend_config "
                f"FROM instructions SEMI JOIN {wanted} USING (file_id) "
                "ORDER BY file_id, computation_id, instruction_id"))
            comps = _arrow(eng.con.sql(
                f"SELECT file_id, computation_id, name, is_entry FROM computations SEMI JOIN {wanted} USING (file_id) "
                "ORDER BY file_id, computation_id"))
            dumps = _arrow(eng.con.sql(f"SELECT file_id, dump FROM files SEMI JOIN {wanted} USING (file_id)"))
            # dumps whose compile options list a DebugOptions field only XLA 2026 has (jax writes
            # every field of the compile options, defaults included, beside the module)
            eng.table("options")
            new_xla_dumps = {r[0] for r in eng.con.sql(
                "SELECT DISTINCT f.dump FROM options o JOIN files f USING (file_id) "
                f"WHERE o.key LIKE '%debug_options.{XLA_2026_OPTION}'").fetchall()}
    finally:
        with eng.lock:
            eng.con.unregister(wanted)
    n = rows.num_rows
    fid = _np(rows.column("file_id"), np.int32)
    cid = _np(rows.column("computation_id"), np.int32)
    # computations: a global index
    c_file = _np(comps.column("file_id"), np.int32)
    c_cid = _np(comps.column("computation_id"), np.int32)
    c_name = [str(x) for x in comps.column("name").to_pylist()]
    c_entry = np.array(comps.column("is_entry").to_pylist(), dtype=bool) if comps.num_rows else np.zeros(0, bool)
    nc = len(c_name)
    ckey_sorted = c_file.astype(np.int64) << 32 | c_cid.astype(np.int64)
    rkey = fid.astype(np.int64) << 32 | cid.astype(np.int64)
    pos = np.searchsorted(ckey_sorted, rkey)
    pos_ok = (pos < nc) & (ckey_sorted[np.minimum(pos, max(nc - 1, 0))] == rkey) if nc else np.zeros(n, bool)
    if not pos_ok.all():  # rows of no known computation: left out, as the first analysis did
        keep = np.nonzero(pos_ok)[0]
        rows = rows.take(pa.array(keep))
        fid, cid, pos = fid[keep], cid[keep], pos[keep]
        n = rows.num_rows
    comp = pos.astype(np.int32)
    c_start = np.searchsorted(comp, np.arange(nc), side="left").astype(np.int64)
    c_end = np.searchsorted(comp, np.arange(nc), side="right").astype(np.int64)
    # opcodes and shapes: dictionary codes, each distinct shape parsed once
    op_codes, opnames = _codes(rows.column("opcode"))
    sh_codes, sh_texts = _codes(rows.column("shape"))
    shapes = Shapes([parse_shape(s) for s in sh_texts])
    standin_shape = shapes.add(parse_shape(None))
    is_root = np.array(rows.column("is_root").to_pylist(), dtype=bool) if n else np.zeros(0, bool)
    # the root: the is_root row (the last, if several), else the last row
    c_root = np.where(c_end > c_start, c_end - 1, -1).astype(np.int64)
    rr = np.nonzero(is_root)[0]
    if len(rr):
        c_root[comp[rr]] = rr  # later rows win
    param = _np(rows.column("param_number"), np.int64, fill=-1)
    trip = _np(rows.column("trip_count"), np.int64, fill=-1)
    # operands: resolved by name within their computation
    ops = rows.column("operands")
    ops = ops.combine_chunks() if isinstance(ops, pa.ChunkedArray) else ops
    counts = _np(pc.list_value_length(ops), np.int64) if n else np.zeros(0, np.int64)
    op_ptr_real = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=op_ptr_real[1:])
    m = int(op_ptr_real[-1])
    slot_owner = np.repeat(np.arange(n, dtype=np.int64), counts)
    flat_names = pc.list_flatten(ops).cast(pa.large_string()) if m else pa.array([], pa.large_string())
    names_col = rows.column("name").cast(pa.large_string())
    # (computation, name) -> row: the last row of that name wins
    key_rows = pa.table({"c": pa.array(comp, pa.int32()), "name": names_col, "r": pa.array(np.arange(n), pa.int64())})
    key_slots = pa.table({"c": pa.array(comp[slot_owner] if m else np.zeros(0, np.int32), pa.int32()),
                          "name": flat_names, "s": pa.array(np.arange(m), pa.int64())})
    with eng.lock:
        ka, kb = f"frame_rows__{sc.sid}", f"frame_slots__{sc.sid}"
        eng.con.register(ka, key_rows)
        eng.con.register(kb, key_slots)
        try:
            res = _arrow(eng.con.sql(f"SELECT s.s, r.r FROM {kb} s LEFT JOIN (SELECT c, name, max(r) AS r FROM {ka} "
                                     f"GROUP BY c, name) r USING (c, name)"))
        finally:
            eng.con.unregister(ka)
            eng.con.unregister(kb)
    slot_def = np.full(m, -1, dtype=np.int64)
    if m:
        slot_def[_np(res.column("s"), np.int64)] = _np(res.column("r"), np.int64, fill=-1)
    # compact tuple operands: slots with a non-empty path
    oi = rows.column("operand_index")
    oi = oi.combine_chunks() if isinstance(oi, pa.ChunkedArray) else oi
    paths: dict[int, list[int]] = {}  # slot -> path, the ones the loop below resolves
    path_files: set[int] = set()
    one_slot = np.zeros(0, np.int64)  # slots of a resolved operand read at one tuple index
    one_idx = np.zeros(0, np.int64)
    if n and "operand_index" in have:
        per_row = oi.value_lengths().fill_null(0) if hasattr(oi, "value_lengths") else pc.list_value_length(oi)
        inner = pc.list_flatten(oi)
        inner_len = _np(pc.list_value_length(inner), np.int64, fill=0)
        nz = np.nonzero(inner_len > 0)[0]
        if len(nz):
            pr = _np(per_row, np.int64, fill=0)
            inner_owner = np.repeat(np.arange(n, dtype=np.int64), pr)
            inner_k = np.arange(len(inner_owner)) - np.repeat(np.cumsum(pr) - pr, pr)
            path_files.update(np.unique(fid[inner_owner[nz]]).tolist())
            nz = nz[inner_k[nz] < counts[inner_owner[nz]]]
            slots = op_ptr_real[inner_owner[nz]] + inner_k[nz]
            flat = _np(pc.list_flatten(inner), np.int64)
            offs = np.asarray(inner.offsets.to_numpy(zero_copy_only=False), np.int64)[nz] if len(nz) else np.zeros(0, np.int64)
            single = (inner_len[nz] == 1) & (slot_def[slots] >= 0)
            one_slot, one_idx = slots[single], flat[offs[single]]
            for j in np.nonzero(~single)[0].tolist():
                paths[int(slots[j])] = flat[offs[j]:offs[j] + inner_len[nz[j]]].tolist()
    # synthesized nodes: element get-tuple-elements and stand-ins for unknown operands
    gte = _code_of(opnames, "get-tuple-element")
    blank = _code_of(opnames, "")
    slot_src = slot_def.copy()
    # the common case as columns: one get-tuple-element per (tuple, index), made at its first read
    v_src = slot_def[one_slot]
    if len(one_slot):
        pair = v_src * (1 << 24) + one_idx
        uniq, first, inv = np.unique(pair, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(uniq), np.int64)
        rank[order] = np.arange(len(uniq))
        slot_src[one_slot] = n + rank[inv.reshape(-1)]
        first_slot = one_slot[first[order]]
        vt = v_src[first[order]]
        vi = one_idx[first[order]]
        tsh = sh_codes[vt].astype(np.int64)
        sp = tsh * (1 << 24) + vi
        su, sinv = np.unique(sp, return_inverse=True)
        es_ids = []
        for x_ in su.tolist():
            tshape = shapes.list[x_ >> 24]
            k_ = x_ & ((1 << 24) - 1)
            parts = tshape.parts
            es = parts[k_] if parts is not None and 0 <= k_ < len(parts) else parse_shape(None)
            es_ids.append(shapes.add(es))
        v_shape = np.array(es_ids, np.int64)[sinv.reshape(-1)]
        v_file = fid[slot_owner[first_slot]]
        v_comp = comp[slot_owner[first_slot]]
    else:
        first_slot = vt = vi = v_shape = np.zeros(0, np.int64)
        v_file = v_comp = np.zeros(0, np.int32)
    V = len(vt)
    ex_file: list[int] = v_file.tolist()
    ex_comp: list[int] = v_comp.tolist()
    ex_op: list[int] = [gte] * V
    ex_shape: list[int] = v_shape.tolist()
    ex_src: list[int] = vt.tolist()  # the tuple of an element node (-1 for a stand-in)
    ex_at_slot: list[int] = first_slot.tolist()  # the slot whose resolution made it (users' order)
    ex_name: dict[int, Any] = {}  # node -> its name, or (tuple node, index), or ("slot", s)
    ex_attrs: dict[int, str] = {}
    made: dict[tuple[int, int], int] = {}
    odd = np.nonzero(slot_def < 0)[0]
    todo = sorted(set(odd.tolist()) | set(paths))
    if todo and V:
        made = {(int(a_), int(b_)): n + j for j, (a_, b_) in enumerate(zip(vt.tolist(), vi.tolist()))}
    for s in todo:
        r = int(slot_owner[s])
        c = int(comp[r])
        node = int(slot_def[s])
        if node < 0:
            node = n + len(ex_op)
            ex_file.append(int(fid[r])); ex_comp.append(c); ex_op.append(blank); ex_shape.append(standin_shape)
            ex_src.append(-1); ex_at_slot.append(s)
            ex_name[node] = ("slot", s)
        for index in paths.get(s) or ():
            key = (node, int(index))
            g = made.get(key)
            if g is None:
                tshape = shapes.list[sh_codes[node] if node < n else ex_shape[node - n]]
                parts = tshape.parts
                es = parts[index] if parts is not None and 0 <= index < len(parts) else parse_shape(None)
                g = n + len(ex_op)
                ex_file.append(int(fid[r])); ex_comp.append(c); ex_op.append(gte); ex_shape.append(shapes.add(es))
                ex_src.append(node); ex_at_slot.append(s)
                ex_name[g] = (node, int(index))
                ex_attrs[g] = f"index={index}"
                made[key] = g
            node = g
        slot_src[s] = node
    x = len(ex_op)
    t = n + x
    file_all = np.concatenate([fid, np.array(ex_file, np.int32)])
    comp_all = np.concatenate([comp, np.array(ex_comp, np.int32)])
    op_all = np.concatenate([op_codes, np.array(ex_op, np.int32)])
    shape_all = np.concatenate([sh_codes, np.array(ex_shape, np.int32)])
    param_all = np.concatenate([param, np.full(x, -1, np.int64)])
    # operand CSR over all nodes (an element node's operand: its tuple)
    ex_src_a = np.array(ex_src, np.int64)
    ex_has = (ex_src_a >= 0).astype(np.int64)
    op_ptr = np.concatenate([op_ptr_real, op_ptr_real[-1] + np.cumsum(ex_has)]) if x else op_ptr_real
    op_src = np.concatenate([slot_src, ex_src_a[ex_src_a >= 0]])
    # users: (operand node, user, order) — each user once per operand node, in the parser's order;
    # an element node is a user of its tuple from the slot that made it; stand-ins have no users
    u_src = slot_src
    u_dst = slot_owner
    u_ord = np.arange(m, dtype=np.int64) * 2 + 1
    if x:
        ex_idx = np.nonzero(np.array(ex_src) >= 0)[0]
        u_src = np.concatenate([u_src, np.array(ex_src, np.int64)[ex_idx]])
        u_dst = np.concatenate([u_dst, n + ex_idx])
        u_ord = np.concatenate([u_ord, np.array(ex_at_slot, np.int64)[ex_idx] * 2])
    keep = (u_src < n) | (op_all[np.minimum(u_src, t - 1)] == gte) if t else np.zeros(0, bool)
    keep[m:] = True  # an element node is always a user of its tuple
    u_src, u_dst, u_ord = u_src[keep], u_dst[keep], u_ord[keep]
    o = np.lexsort((u_ord, u_src))
    u_src, u_dst = u_src[o], u_dst[o]
    if len(u_src):
        first = np.ones(len(u_src), bool)
        pair = u_src * (t + 1) + u_dst
        # drop repeats of a (operand, user) pair, keeping the first
        so = np.lexsort((np.arange(len(pair)), pair))
        dup = np.zeros(len(pair), bool)
        dup[so[1:]] = pair[so[1:]] == pair[so[:-1]]
        first &= ~dup
        u_src, u_dst = u_src[first], u_dst[first]
    us_ptr = np.zeros(t + 1, np.int64)
    np.cumsum(np.bincount(u_src, minlength=t), out=us_ptr[1:])
    # called computations (names resolved in the file)
    cc = rows.column("called_computations")
    cc = cc.combine_chunks() if isinstance(cc, pa.ChunkedArray) else cc
    ccount = _np(pc.list_value_length(cc), np.int64, fill=0) if n else np.zeros(0, np.int64)
    cl_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(ccount, out=cl_ptr[1:])
    comp_index = {(int(f), nm): i for i, (f, nm) in enumerate(zip(c_file.tolist(), c_name))}
    cl_comp = np.full(int(cl_ptr[-1]), -1, np.int64)
    if len(cl_comp):
        cnames = pc.list_flatten(cc).cast(pa.large_string()).to_pylist()
        cowner = np.repeat(np.arange(n), ccount)
        ff = fid[cowner].tolist()
        cl_comp = np.array([comp_index.get((f, nm), -1) for f, nm in zip(ff, cnames)], np.int64)
    entry_of_file = {int(c_file[i]): i for i in np.nonzero(c_entry)[0]}
    # conventions of the XLA that printed each file
    dump_of = dict(zip(dumps.column("file_id").to_pylist(), dumps.column("dump").to_pylist()))
    tuple_leaves = _conventions(rows, fid)
    xla_2026 = _printed_by_xla_2026(rows, fid, path_files, opnames, op_codes, dump_of, new_xla_dumps)
    tpu_files = _tpu_files(rows, fid, module_of_file)
    fr = Frame(n=n, rows=rows, file=file_all, comp=comp_all, op=op_all, opnames=opnames, shape=shape_all,
               shapes=shapes, param=param_all, op_ptr=op_ptr, op_src=op_src, us_ptr=us_ptr, us_dst=u_dst,
               cl_ptr=cl_ptr, cl_comp=cl_comp, cl_names=[None] * n, extra_name=ex_name, c_file=c_file,
               c_name=c_name, c_entry=c_entry, c_root=c_root, c_start=c_start, c_end=c_end,
               comp_index=comp_index, files=files, module_of_file=module_of_file,
               file_of_module=file_of_module, entry_of_file=entry_of_file, tuple_leaves=tuple_leaves,
               xla_2026=xla_2026, tpu_files=tpu_files, trip_count=trip, attrs_col=_attrs_array(rows))
    fr.extra_attrs = ex_attrs  # type: ignore[attr-defined]
    fr.v_src, fr.v_idx = vt, vi  # type: ignore[attr-defined]  # the columnar element nodes n..n+V-1
    fr.flat_names = flat_names  # type: ignore[attr-defined]
    shapes.facts()
    return fr


def _attrs_array(rows: pa.Table) -> Any:
    col = rows.column("attributes")
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if col.type == pa.string_view():
        col = col.cast(pa.large_string())
    return col


def _code_of(opnames: list[str], name: str) -> int:
    if name not in opnames:
        opnames.append(name)
    return opnames.index(name)


def _arrow(rel: Any) -> pa.Table:
    from .engine import arrow

    return arrow(rel)


def _np(col: Any, dtype: Any, fill: Any = None) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_null(col.type):  # a column the read did not make (``NULL AS c``): all fill
        return np.full(len(col), 0 if fill is None else fill, dtype=dtype)
    if fill is not None:
        col = col.fill_null(fill)
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=dtype)


def _codes(col: Any) -> tuple[np.ndarray, list[str]]:
    """Dictionary codes and distinct values of a string column (nulls as ``""``)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_null(col.type):  # a column of nulls only (no value to encode): all ""
        return np.zeros(len(col), np.int32), [""]
    if not pa.types.is_dictionary(col.type):
        if col.type == pa.string_view():
            col = col.cast(pa.large_string())
        col = pc.dictionary_encode(col.fill_null(""))
    else:
        col = col.unify_dictionaries() if hasattr(col, "unify_dictionaries") else col
    values = [v if v is not None else "" for v in col.dictionary.to_pylist()]
    idx = col.indices
    if idx.null_count:
        if "" not in values:
            values.append("")
        idx = idx.fill_null(values.index(""))
    return np.asarray(idx.to_numpy(zero_copy_only=False), dtype=np.int32), values


def _conventions(rows: pa.Table, fid: np.ndarray) -> dict[int, bool]:
    """Per HLO file, whether XLA counted a tuple result by its leaves (jax >= 0.8). The printer
    of those releases writes stack-frame tables (``stack_frame_id=`` in metadata) where older
    ones wrote ``source_file=``; a file with neither gets the newest convention."""
    if not len(fid):
        return {}
    frame_ = np.asarray(rows.column("stack_frame_id").is_valid().to_numpy(zero_copy_only=False), bool)
    src = np.asarray(rows.column("source_file").is_valid().to_numpy(zero_copy_only=False), bool)
    out: dict[int, bool] = {}
    for f in np.unique(fid[src]).tolist():
        out[int(f)] = False
    for f in np.unique(fid[frame_]).tolist():
        out[int(f)] = True
    return out


# A DebugOptions field XLA 2026 added (jax 0.11.2 and 0.12's compile_options.textproto list
# it; jax 0.10.2's do not): the flag of the compact tuple operands themselves.
XLA_2026_OPTION = "xla_dump_compact_gte"


def _printed_by_xla_2026(rows: pa.Table, fid: np.ndarray, path_files: set[int],
                         opnames: list[str], op_codes: np.ndarray, dump_of: dict[int, str],
                         new_xla_dumps: set[str] = frozenset()) -> set[int]:  # type: ignore[assignment]
    """HLO files printed by XLA 2026 (jax >= 0.11), whose cost analysis counts a tuple's index
    table 4 bytes an element (8 before). Only it prints compact tuple operands (``%x#k``) and a
    compare's ``order=``, and its compile options (``compile_options.textproto``, beside the
    module) have ``XLA_2026_OPTION``. A dump is written by one XLA: a file without such a sign
    (no tuple read, no compare: the transformer's training step) is of XLA 2026 when another
    file of its dump has one; otherwise older."""
    seen: set[int] = set(path_files) | {f for f, dump in dump_of.items() if dump in new_xla_dumps}
    if "compare" in opnames and len(fid):
        cmp_rows = np.nonzero(op_codes == opnames.index("compare"))[0]
        if len(cmp_rows):
            a = rows.column("attributes").take(pa.array(cmp_rows)).cast(pa.large_string())
            has = np.asarray(pc.fill_null(pc.match_substring(a, "order="), False).to_numpy(zero_copy_only=False), bool)
            seen |= set(np.unique(fid[cmp_rows[has]]).tolist())
    dumps = {dump_of.get(f) for f in seen}
    return {int(f) for f in np.unique(fid).tolist() if f in seen or dump_of.get(f) in dumps}


def _tpu_files(rows: pa.Table, fid: np.ndarray, module_of_file: dict[int, Any]) -> set[int]:
    """Files of TPU modules: the module's backend says so, or a shape has a tiled layout
    (``{1,0:T(8,128)}``), which only TPU compilers print (a TPU dump's file names carry no
    backend)."""
    out = {f for f, m in module_of_file.items() if any("tpu" in str(b).lower() for b in getattr(m, "backends", ()))}
    if not len(fid):
        return out
    sh = rows.column("shape")
    sh = sh.combine_chunks() if isinstance(sh, pa.ChunkedArray) else sh
    if pa.types.is_dictionary(sh.type):
        hit_code = np.asarray(pc.fill_null(pc.match_substring(sh.dictionary.cast(pa.large_string()), ":T("), False)
                              .to_numpy(zero_copy_only=False), bool)
        idx = _np(sh.indices, np.int64, fill=0)
        hit = hit_code[idx] if len(hit_code) else np.zeros(len(idx), bool)
    else:
        hit = np.asarray(pc.fill_null(pc.match_substring(sh.cast(pa.large_string()), ":T("), False)
                         .to_numpy(zero_copy_only=False), bool)
    return out | {int(f) for f in np.unique(fid[hit]).tolist()}


def with_hlo_text(d: Any) -> set[str]:
    """Keys of the modules with HLO to analyse (cost, collectives), by the frame's own choice of
    file (``_chosen``): their after-optimizations text, else an HLO module file named alone.
    One query over every module."""
    from .modules import scope_of

    t = _chosen(scope_of(d, None))
    return {k for k, f in zip(t.column("module").to_pylist(), t.column("file_id").to_pylist()) if f is not None}
