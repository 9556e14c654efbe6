"""The analysis engine: one DuckDB connection per ``Dump``, derived tables computed once per
module selection, every analysis one query over all selected modules.

Why this shape
--------------
Every answer (the peak, the timeline, the summary …) is a join of a few dump tables grouped by
module. Asking DuckDB once for all modules costs about what one module costs; asking once per
module costs a connection and a dozen queries per module (what the first analysis layer did:
0.2 s of CPU per module, whatever its size). So:

* ``engine(d)`` is the ``Engine`` of a dump, made on first use and kept on the dump (its views
  ``Dump``): one connection, each dump table registered once (zero-copy Arrow scans).
* ``Engine.scope(mods)`` is a ``Scope``: the selected modules, their ``modmap`` (file_id →
  module key) registered as a table of its own. ``module=`` filters select the scope, so
  asking for one module of 2,000 joins one module's files only (pushed down).
* Derived tables (``buffers``, ``timeline`` …) are functions of a scope registered with
  ``@derived(name)``; SQL names them ``@name`` and the scope computes and registers each the
  first time a query needs it (``@modmap`` is the scope's module map; dump tables are named as
  they are). Results are cached per scope, so ``summary`` after ``peak_buffers`` reuses the
  buffers already built.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

import pyarrow as pa

from ..exceptions import HlodumpError

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

    from ..dump import Dump

__all__ = ["Engine", "Module", "Scope", "engine", "views", "derived", "arrow", "SizeOverflow"]


class SizeOverflow(HlodumpError, OverflowError):
    """A figure (a sum of sizes) does not fit the int64 it is reported in. Sums are taken as
    128-bit integers; only a total beyond 2**63 − 1 bytes (a corrupt or synthetic dump) gets
    here."""


# name -> function(scope) -> pa.Table; filled by the analysis modules at import
_DERIVED: dict[str, Callable[["Scope"], pa.Table]] = {}

_SCOPE_IDS = itertools.count()
_REF = re.compile(r"@([a-z_][a-z0-9_]*)")


def derived(name: str) -> Callable[[Callable[["Scope"], pa.Table]], Callable[["Scope"], pa.Table]]:
    """Register ``fn(scope) -> pa.Table`` as the derived table ``@name``."""

    def deco(fn: Callable[["Scope"], pa.Table]) -> Callable[["Scope"], pa.Table]:
        _DERIVED[name] = fn
        return fn

    return deco


def views(d: Any) -> Any:
    """The tables of ``d`` as read (zero-copy ``string_view``): the analysis runs in DuckDB and
    never needs the ``large_string`` copies that ``d.<table>`` makes for pyarrow's kernels."""
    return getattr(d, "views", d)


def arrow(rel: Any) -> pa.Table:
    """A DuckDB relation as a ``pa.Table``."""
    t = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
    return t if isinstance(t, pa.Table) else t.read_all()


def interruptible(con: Any, fn: Callable[[], Any]) -> Any:
    """``fn()`` — a DuckDB query on ``con``, run to its result — on a helper thread while the
    calling (main) thread waits in 50 ms steps: Ctrl-C there interrupts the query
    (``con.interrupt()``) and raises ``KeyboardInterrupt`` at once. DuckDB checks Python's
    signals only in some of its loops, so a Ctrl-C that lands while it materialises a result was
    seen only when the query ended (hours for a big join) or came back as ``RuntimeError("Query
    interrupted")``. Off the main thread (no signals there) ``fn`` just runs."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    t = threading.Thread(target=run, name="hlodump-query", daemon=True)
    t.start()
    try:
        while t.is_alive():
            t.join(0.05)
    except KeyboardInterrupt:
        con.interrupt()
        t.join(5.0)  # the query stops at its next check; never wait longer than that
        raise
    if "error" in box:
        raise box["error"]
    return box.get("value")


def engine(d: "Dump") -> "Engine":
    """The ``Engine`` of a dump, made on first use and kept on the dump's views."""
    v = views(d)
    eng = v.__dict__.get("_analysis_engine")
    if eng is None:
        eng = Engine(v)
        v.__dict__["_analysis_engine"] = eng
    return eng


@dataclass
class Module:
    """One module of a dump (the grouping is ``modules.py``'s). ``key``: ``module_NNNN.name`` (or the file stem), qualified as
    ``<dump>:…`` when the ``Dump`` holds several dumps; ``base``: the key within its dump."""

    key: str
    name: str
    module_id: Optional[int]
    dump: str = ""
    base: str = ""
    file_ids: list[int] = field(default_factory=list)
    hlo_file_ids: list[int] = field(default_factory=list)  # after-optimizations HLO text
    kinds: set[str] = field(default_factory=set)
    backends: set[str] = field(default_factory=set)

    @property
    def is_cpu(self) -> bool:
        return bool(self.backends) and all(b == "cpu" for b in self.backends)


class Engine:
    """One dump's DuckDB connection, module list and scopes (see the module docstring)."""

    def __init__(self, d: Any) -> None:
        import duckdb

        self.d = d
        self.con: "duckdb.DuckDBPyConnection" = duckdb.connect()
        self.lock = threading.RLock()  # a DuckDB connection serves one query at a time
        self._registered: set[str] = set()
        self.modules: Optional[list["Module"]] = None  # set by modules.module_list (once)
        self._scopes: dict[tuple[str, ...], Scope] = {}
        self.results: dict[Any, Any] = {}  # per-call caches of the public functions
        self.shape_bytes: dict[str, Optional[int]] = {}  # logical_bytes per distinct shape text

    def has(self, table: str) -> bool:
        return table in self.d

    def table(self, name: str) -> str:
        """Register the dump table ``name`` (or an empty table of its schema when the read left
        it out) once; return the name to use in SQL."""
        if name not in self._registered:
            if name in self.d:
                self.con.register(name, self.d[name])
            else:
                from ..schema import schema

                self.con.register(name, schema(name, False).empty_table())
            self._registered.add(name)
        return name

    def scope(self, mods: list["Module"]) -> "Scope":
        """The scope of ``mods`` (made once per distinct selection)."""
        key = tuple(m.key for m in mods)
        sc = self._scopes.get(key)
        if sc is None:
            if len(self._scopes) > 64:  # many one-off selections: forget the oldest
                old = next(iter(self._scopes))
                self._scopes.pop(old).drop()
            sc = self._scopes[key] = Scope(self, mods, next(_SCOPE_IDS))
        return sc

    def sql(self, query: str) -> Any:
        with self.lock, _sizes_fit():
            return self.con.sql(query)

    def cursor(self) -> "duckdb.DuckDBPyConnection":
        """A new cursor on this engine's database (see ``session``; the caller closes it, or
        dropping it does)."""
        with self.lock:
            return self.con.cursor()

    @contextlib.contextmanager
    def session(self, **tables: pa.Table) -> Any:
        """A cursor on this engine's database for an analysis that builds temp tables of its own
        (``passes``) or asks about a table it was handed (``tables``: name → Arrow table,
        registered zero-copy on the cursor): its temp tables and registrations are its own and
        go when it closes; the database (memory, threads) is the engine's. No private
        ``duckdb.connect()`` anywhere else in the analysis."""
        cur = self.cursor()
        try:
            for name, t in tables.items():
                cur.register(name, t)
            with _sizes_fit():
                yield cur
        finally:
            cur.close()

    def query(self, query: str, params: Optional[list[Any]] = None, **tables: pa.Table) -> pa.Table:
        """``query`` over the Arrow ``tables`` given (a ``session``), as a ``pa.Table``."""
        with self.session(**tables) as cur:
            return interruptible(cur, lambda: arrow(cur.sql(query, params=params) if params is not None
                                                    else cur.sql(query)))


class Scope:
    """Some modules of a dump: their module map and the derived tables computed for them."""

    def __init__(self, eng: Engine, mods: list["Module"], sid: int) -> None:
        self.eng = eng
        self.mods = mods
        self.keys = [m.key for m in mods]
        self.sid = sid
        self._tables: dict[str, pa.Table] = {}
        self._names: dict[str, str] = {}
        self.cache: dict[Any, Any] = {}
        self._register("modmap", _modmap(mods))

    def _register(self, name: str, t: pa.Table) -> str:
        reg = f"{name}__{self.sid}"
        with self.eng.lock:
            self.eng.con.register(reg, t)
        self._tables[name] = t
        self._names[name] = reg
        return reg

    def drop(self) -> None:
        with self.eng.lock:
            for reg in self._names.values():
                try:
                    self.eng.con.unregister(reg)
                except Exception:  # pragma: no cover - already gone
                    pass

    def get(self, name: str) -> pa.Table:
        """The derived table ``name`` of this scope (computed on first use)."""
        if name not in self._tables:
            with self.eng.lock:
                if name not in self._tables:
                    fn = _DERIVED[name]
                    self._register(name, fn(self))
        return self._tables[name]

    def resolve(self, query: str) -> str:
        """``query`` with ``@name`` replaced by the registered name of that derived table (and
        every dump table it names registered)."""

        def sub(m: "re.Match[str]") -> str:
            name = m.group(1)
            if name in self._names:
                return self._names[name]
            if name in _DERIVED:
                self.get(name)
                return self._names[name]
            raise KeyError(f"no derived table @{name}")

        out = _REF.sub(sub, query)
        for t in _DUMP_TABLES:
            if re.search(rf'\b{t}\b|"{t}"', out):
                self.eng.table(t)
        return out

    def arrow(self, query: str) -> pa.Table:
        q = self.resolve(query)
        with self.eng.lock, _sizes_fit():
            return interruptible(self.eng.con, lambda: arrow(self.eng.con.sql(q)))

    def rows(self, query: str) -> list[tuple[Any, ...]]:
        q = self.resolve(query)
        with self.eng.lock, _sizes_fit():
            return interruptible(self.eng.con, lambda: self.eng.con.sql(q).fetchall())


class _sizes_fit:
    """Turns DuckDB's out-of-range conversions (a 128-bit sum cast back to int64) into a
    ``SizeOverflow`` that says which figure could not be given."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, et: Any, e: Any, tb: Any) -> bool:
        if e is None:
            return False
        from ..exceptions import engine_error

        plain = engine_error(e)  # out of memory, Ctrl-C: Python's own exceptions
        if plain is not None:
            raise plain from None
        import duckdb

        # the analysis casts nothing but sizes and steps: a failed conversion is a figure too big
        if isinstance(e, (duckdb.ConversionException, duckdb.OutOfRangeException)):
            raise SizeOverflow("a sum of sizes in this dump overflows int64 (more than 2**63 - 1 bytes): "
                            f"the figure cannot be given ({str(e).splitlines()[0]})") from None
        return False




# dump tables a query may name (registered on first mention)
_DUMP_TABLES = ("files", "allocations", "assignments", "values", "schedule", "live_ranges", "peak",
                "totals", "instructions", "memory_report", "errors", "computations", "oom_reports",
                "oom_buffers", "peak_breakdown", "thunks", "thunk_metadata")


def _modmap(mods: list["Module"]) -> pa.Table:
    """file_id → module key, name, and whether the file is the module's after-optimizations HLO
    text (one row per file of the selected modules)."""
    fids: list[int] = []
    keys: list[str] = []
    names: list[str] = []
    hlo: list[bool] = []
    for m in mods:
        h = set(m.hlo_file_ids)
        for f in m.file_ids:
            fids.append(f)
            keys.append(m.key)
            names.append(m.name)
            hlo.append(f in h)
    return pa.table({
        "file_id": pa.array(fids, pa.int32()),
        "module": pa.array(keys, pa.string()),
        "module_name": pa.array(names, pa.string()),
        "is_hlo": pa.array(hlo, pa.bool_()),
    })
