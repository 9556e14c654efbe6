"""What one run of the cost rules holds (``cost_rules.run`` makes it): the frame, the keys
interned, the computations' sums as arrays (``_Sums``), the per-instruction results and problems,
and the view the Python handlers get of it (``_Ctx``: a file's computations by name, the sums of
the computations they call). Apart so that the column rules (``cost_vector``), the handlers
(``cost_handlers``) and the driver share it without importing one another."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .cost_keys import _Keys
from .hlo_frame import CompView, Frame

#: Counts computations summed in visiting order (the float32 fallback, ``_Run.position``): a
#: test checks that it does not grow with the number of modules (read as ``cost_rules.ORDERED``).
ORDERED = [0]


class _Ctx:
    """What the Python handlers see of the analysis: a file's computations by name, the sums
    of the computations already summed, and which computations they asked for."""

    def __init__(self, run: "_Run", fid: int) -> None:
        self.run = run
        self.fid = fid
        self.tuple_leaves = run.leaves_of(fid)
        self.tuple_pointer_bytes = 4 if fid in run.fr.xla_2026 else 8
        self.tpu = fid in run.fr.tpu_files  # which compiler's custom-call rules apply
        self.current = -1

    @property
    def comps(self) -> "_CompsByName":
        return _CompsByName(self.run.fr, self.fid)

    def computation(self, name: str) -> dict[str, float]:
        c = self.run.fr.comp_index.get((self.fid, name))
        if c is None:
            return {}
        self.run.asked.append((self.current, c))
        s = self.run.sums.get(c)
        return dict(s) if s is not None else {}


class _CompsByName:
    def __init__(self, fr: Frame, fid: int) -> None:
        self.fr, self.fid = fr, fid

    def get(self, name: str) -> Optional[CompView]:
        return self.fr.comp_by_name(self.fid, name)


class _Sums:
    """The computations' sums as arrays (per computation a range of (key, value), keys sorted),
    with a dict of one computation made when a Python rule asks for it."""

    def __init__(self, nc: int, keys: _Keys) -> None:
        self.keys = keys
        self.start = np.zeros(nc, np.int64)
        self.end = np.zeros(nc, np.int64)
        self.done = np.zeros(nc, bool)
        self._k: list[np.ndarray] = []
        self._v: list[np.ndarray] = []
        self.size = 0
        self._cat: Optional[tuple[np.ndarray, np.ndarray]] = None
        self._dicts: dict[int, dict[str, float]] = {}

    def add(self, comps: np.ndarray, seg_comp: np.ndarray, seg_key: np.ndarray, seg_val: np.ndarray) -> None:
        self.done[comps] = True
        if len(seg_comp):
            u, first, cnt = np.unique(seg_comp, return_index=True, return_counts=True)
            self.start[u] = self.size + first
            self.end[u] = self.size + first + cnt
            self._k.append(seg_key)
            self._v.append(seg_val)
            self.size += len(seg_comp)
            self._cat = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._cat is None:
            self._cat = ((np.concatenate(self._k), np.concatenate(self._v)) if self._k
                         else (np.zeros(0, np.int64), np.zeros(0)))
        return self._cat

    def get(self, c: int, default: Any = None) -> Optional[dict[str, float]]:
        if c is None or not self.done[c]:
            return default
        d = self._dicts.get(c)
        if d is None:
            k, v = self.arrays()
            a, b = int(self.start[c]), int(self.end[c])
            names = self.keys.names
            d = self._dicts[c] = {names[x]: y for x, y in zip(k[a:b].tolist(), v[a:b].tolist())}
        return d


class _Run:
    def __init__(self, fr: Frame, tuple_results: Optional[str]) -> None:
        self.fr = fr
        self.tuple_results = tuple_results
        self.keys = _Keys()
        self.sums = _Sums(len(fr.c_name), self.keys)
        self.fus: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # vectorised fusions' entries
        self.asked: list[tuple[int, int]] = []
        self.ctx: dict[int, _Ctx] = {}
        self.py_props: dict[int, Optional[dict[str, float]]] = {}
        self.problems: dict[int, str] = {}  # node -> why
        self.orders: dict[int, dict[int, int]] = {}

    def leaves_of(self, fid: int) -> bool:
        if self.tuple_results is None:
            return self.fr.tuple_leaves.get(fid, True)
        return self.tuple_results == "leaves"

    def ctx_of(self, fid: int) -> _Ctx:
        c = self.ctx.get(fid)
        if c is None:
            c = self.ctx[fid] = _Ctx(self, fid)
        return c

    def position(self, c: int) -> dict[int, int]:
        p = self.orders.get(c)
        if p is None:
            ORDERED[0] += 1
            p = self.orders[c] = {n: k for k, n in enumerate(self.fr.visit_order(c))}
        return p
