"""Modules of a dump: which files make one module, how ``module=`` selects them, and a table of
what each module holds.

Files are grouped into modules by ``files.module_id``/``files.module_name`` (the
``module_NNNN.<name>`` prefix of XLA's file names), so the four split buffer-assignment files of
a jax 0.10.2 dump and the after-optimizations HLO text join into one module. A file without that
prefix (the TPU seeds, a single copied file) is a module of its own, keyed by its file name
without ``.txt`` — unless its content pairs it with such an HLO module file (a dump copied as
``000_….txt``, ``001_….txt``: every instruction its buffer assignment, values or live ranges
name is in that one HLO file; ``_content_pairs_sql``): then it joins that file's module. Files of different dumps (``files.dump``) never join. The HLO proto of a
stage (``*.hlo.pb``, ``kind = 'hlo_proto'``) and the memory-usage report's proto
(``memory_usage_report_proto``) join their text twins' module and are left out where that text
exists (the text is preferred; a proto-only dump is analysed from its protos).
"""

from __future__ import annotations

from .._typing import checked_analysis

import re

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import pyarrow as pa

from .engine import Engine, Module, Scope, engine

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["Module", "NoSuchModule", "ModuleSel", "ModuleIndex", "module_list", "match_modules", "select", "scope_of",
           "modules"]

ModuleSel = Union[None, str, int, Sequence[Union[str, int]]]

# tables whose rows make a module worth analysing
ANALYSABLE = ("allocations", "values", "live_ranges", "peak", "instructions", "totals", "memory_report")


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


# The module key of a file, in SQL: ``module_NNNN[.name]`` (at least four digits, as XLA names
# its files), else the module name, else the file name without ``.txt``.
_BASE_SQL = """
    case when module_id is not null then
              'module_' || (case when module_id < 10000 and module_id >= 0
                                 then lpad(module_id::varchar, 4, '0') else module_id::varchar end)
              || coalesce('.' || nullif(module_name, ''), '')
         when module_name is not null and module_name <> '' then module_name
         else regexp_replace(regexp_replace(path, '^.*/', ''), '\\.txt$', '') end
"""


def _content_pairs_sql(eng: Engine) -> str:
    """SQL of (file_id, hlo_file_id): files without a module in their name (a dump copied as
    ``000_….txt``, ``001_….txt``: FORMATS.md §1) whose content says they are one compile with an
    HLO module file of the same dump, also nameless: every instruction a buffer-assignment,
    values or live-range file names is an instruction of that HLO file, and of one such file
    only (a scheduled module — after optimizations — is preferred to one that is not). One
    query for the whole dump (issue 51)."""
    fams = [f'select file_id, instruction as name from "{t}"' for t in ("assignments", "values", "live_ranges")
            if eng.has(t)]
    if not eng.has("instructions") or not fams:
        return "select null::int as file_id, null::int as hlo_file_id where false"
    for t in ("instructions", "assignments", "values", "live_ranges", "modules"):
        if eng.has(t):
            eng.table(t)
    sched = ("(select file_id, bool_or(is_scheduled) as s from modules group by file_id)" if eng.has("modules")
             else "(select null::int as file_id, false as s where false)")
    dump_col = "coalesce(dump, '')" if "dump" in eng.d["files"].column_names else "''"
    return f"""
        with nameless as (select file_id, kind, {dump_col} as dump from files
                          where module_id is null and coalesce(module_name, '') = ''),
             h as (select file_id, dump from nameless where kind = 'hlo_module'),
             hn as (select distinct file_id, name::varchar as name from instructions
                    where file_id in (select file_id from h)),
             fam as (select distinct x.file_id, x.name::varchar as name
                     from ({" union all ".join(fams)}) x
                     where x.file_id in (select file_id from nameless where kind <> 'hlo_module')),
             tot as (select file_id, count(*) as n from fam group by file_id),
             cov as (select f.file_id, h.file_id as hlo, count(*) as n
                     from fam f join nameless nf on nf.file_id = f.file_id
                     join h on h.dump = nf.dump join hn on hn.file_id = h.file_id and hn.name = f.name
                     group by all),
             full_ as (select c.file_id, c.hlo, coalesce(s.s, false) as scheduled
                       from cov c join tot t on t.file_id = c.file_id and c.n = t.n
                       left join {sched} s on s.file_id = c.hlo),
             best as (select * from full_ where scheduled or file_id not in (select file_id from full_ where scheduled))
        select file_id, any_value(hlo) as hlo_file_id from best group by file_id having count(*) = 1"""


def module_list_of(eng: Engine) -> list[Module]:
    """The modules of the engine's dump that hold something to analyse, in file order."""
    has_dump = "dump" in eng.d["files"].column_names
    used = " union ".join(f'select distinct file_id from "{t}"' for t in ANALYSABLE if eng.has(t))
    eng.table("files")
    for t in ANALYSABLE:
        if eng.has(t):
            eng.table(t)
    dump_col = "coalesce(dump, '')" if has_dump else "''"
    rows = eng.sql(f"""
        with fb as (
            select file_id, kind, backend, stage, module_id, module_name,
                   {dump_col} as dump, {_BASE_SQL} as base,
                   coalesce(nullif(module_name, ''), {_BASE_SQL}) as name
            from files),
        -- nameless files their content pairs with a nameless HLO file: that file's module
        pairs as ({_content_pairs_sql(eng)}),
        f0 as (
            select fb.file_id, fb.kind, fb.backend, fb.stage, fb.module_id, fb.module_name, fb.dump,
                   coalesce(h.base, fb.base) as base, coalesce(h.name, fb.name) as name,
                   fb.file_id in (select hlo_file_id from pairs) as paired_hlo
            from fb left join pairs p on p.file_id = fb.file_id left join fb h on h.file_id = p.hlo_file_id),
        -- text and proto of the same compile are one module; where the module has the text of a
        -- stage, that stage's proto (`kind = 'hlo_proto'`) is left out: the text is preferred
        f1 as (
            select *, bool_or(kind = 'hlo_module') over (partition by dump, base, stage) as has_text,
                   bool_or(kind = 'memory_usage_report') over (partition by dump, base, stage) as has_report
            from f0),
        f as (select * from f1 where not (kind = 'hlo_proto' and has_text)
                                 and not (kind = 'memory_usage_report_proto' and has_report)),
        used as ({used if used else 'select null::int as file_id where false'})
        select dump, base, any_value(name order by file_id) as name,
               any_value(module_id order by file_id) as module_id,
               list(file_id order by file_id) as file_ids,
               list(file_id order by file_id) filter (where kind in ('hlo_module', 'hlo_proto')
                                                        and (stage = 'after_optimizations' or paired_hlo))
                   as hlo_file_ids,
               list(distinct kind) as kinds,
               list(distinct backend) filter (where backend is not null) as backends
        from f
        group by dump, base
        having bool_or(file_id in (select file_id from used))
        order by min(file_id)
    """).fetchall()
    mods = [Module(base, name, mid, dump, base, list(fids), list(hfids or []), set(kinds or []),
                   set(backends or []))
            for dump, base, name, mid, fids, hfids, kinds, backends in rows]
    if len({m.dump for m in mods}) > 1:
        for m in mods:
            m.key = f"{m.dump}:{m.base}"
    return mods


def module_list(d: "Dump") -> list[Module]:
    """The modules of a dump (see the module docstring), computed once per dump."""
    return _modules_of(engine(d))


def _modules_of(eng: Engine) -> list[Module]:
    if eng.modules is None:
        eng.modules = module_list_of(eng)
    return eng.modules


class ModuleIndex:
    """The lookups ``module=`` needs over one module list, built in one pass: by key, by key
    within its dump, by name, by id. ``select`` of k selectors over n modules costs O(n + k)
    (a substring, the last rule, scans the keys once per selector that no exact rule matched),
    never O(n × k): ``summary(d, [every key])`` of 100,000 modules is one pass, not 10^10
    comparisons."""

    def __init__(self, mods: list[Module]) -> None:
        self.mods = mods
        self.key: dict[str, list[int]] = {}
        self.base: dict[str, list[int]] = {}
        self.name: dict[str, list[int]] = {}
        self.ident: dict[int, list[int]] = {}
        for i, m in enumerate(mods):
            self.key.setdefault(m.key, []).append(i)
            self.base.setdefault(m.base, []).append(i)
            self.name.setdefault(m.name, []).append(i)
            if m.module_id is not None:
                self.ident.setdefault(m.module_id, []).append(i)
        self._lower: Optional[list[str]] = None

    def positions(self, wanted: Union[str, int]) -> list[int]:
        """Positions of the modules one selector matches, best rule first (see ``match_modules``)."""
        ws = str(wanted).strip()
        hit = self.key.get(ws) or self.base.get(ws) or self.name.get(ws)
        if hit:
            return hit
        if ws.isdigit():
            hit = self.ident.get(int(ws))
            if hit:
                return hit
        if self._lower is None:
            self._lower = [m.key.lower() for m in self.mods]
        low = ws.lower()
        return [j for j, k in enumerate(self._lower) if low in k]

    def select(self, module: ModuleSel, unique: bool = False) -> list[Module]:
        if module is None:
            return self.mods
        wanted = [module] if isinstance(module, (str, int)) else list(module)
        out: list[int] = []
        seen: set[int] = set()
        for w in wanted:
            hit = self.positions(w)
            if not hit:
                raise NoSuchModule(w, [m.key for m in self.mods])
            if unique and len(hit) > 1:
                raise NoSuchModule(w, [self.mods[j].key for j in hit], several=True)
            for j in hit:
                if j not in seen:
                    seen.add(j)
                    out.append(j)
        if len(out) == len(self.mods) and out == list(range(len(self.mods))):
            return self.mods  # every module in order: the same list (and the same scope)
        return [self.mods[j] for j in out]


def match_modules(mods: list[Module], wanted: Union[str, int]) -> list[Module]:
    """Modules matching one selector, best rule first: the key (``module_0002.jit_f``, or
    ``<dump>:module_0002.jit_f``), the key within its dump, the module name, the module id
    (``2`` / ``"2"`` / ``"0002"``), then a substring of the key (case-insensitive)."""
    return [mods[j] for j in ModuleIndex(mods).positions(wanted)]


def select(mods: list[Module], module: ModuleSel, unique: bool = False) -> list[Module]:
    """The modules ``module=`` selects (all for None); ``NoSuchModule`` when a selector matches
    none (or, with ``unique``, several). One pass over ``mods`` whatever the selectors."""
    if module is None:
        return mods
    return _index_of(mods).select(module, unique)


def _index_of(mods: list[Module], eng: Optional[Engine] = None) -> ModuleIndex:
    """The index of ``mods``; the engine's whole module list keeps its index (built once)."""
    if eng is not None and mods is eng.modules:
        ix = eng.results.get("module_index")
        if ix is None or ix.mods is not mods:
            ix = eng.results["module_index"] = ModuleIndex(mods)
        return ix
    return ModuleIndex(mods)


def scope_of(d: "Dump", module: ModuleSel) -> Scope:
    """The engine scope of the modules ``module=`` selects."""
    eng = engine(d)
    mods = _modules_of(eng)
    return eng.scope(mods if module is None else _index_of(mods, eng).select(module))


@checked_analysis
def modules(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """One row per module: key, name, id, dump, its file ids and how many rows of each kind
    the dump has for it (``n_instructions`` counts its after-optimizations HLO text)."""
    sc = scope_of(dump, module)
    counts = {t: dict(sc.rows(f'select m.module, count(*) from "{t}" x join @modmap m using (file_id) '
                              + ("where m.is_hlo " if t == "instructions" else "") + "group by all"))
              for t in ("allocations", "values", "live_ranges", "peak", "instructions")}
    cols: dict[str, list[Any]] = {k: [] for k in ("module", "module_name", "module_id", "dump", "file_ids")}
    for t in counts:
        cols[f"n_{t}"] = []
    for m in sc.mods:
        cols["module"].append(m.key)
        cols["module_name"].append(m.name)
        cols["module_id"].append(m.module_id)
        cols["dump"].append(m.dump)
        cols["file_ids"].append(m.file_ids)
        for t, c in counts.items():
            cols[f"n_{t}"].append(c.get(m.key, 0))
    schema = pa.schema([("module", pa.string()), ("module_name", pa.string()), ("module_id", pa.int32()),
                        ("dump", pa.string()), ("file_ids", pa.list_(pa.int32())), ("n_allocations", pa.int64()),
                        ("n_values", pa.int64()), ("n_live_ranges", pa.int64()), ("n_peak", pa.int64()),
                        ("n_instructions", pa.int64())])
    return pa.table(cols, schema=schema)


_TF_NAME = re.compile(r"^a_inference_(?P<fn>.+?)__XlaMustCompile_true_config_proto_\d+_executor_type_\d+_(?P<rest>.*)$")


def short_module_key(key: str, width: int = 60) -> str:
    """A module key as a person reads it, for tables and headings (never for ``--module``, which
    takes the whole key): TensorFlow's ``a_inference_<fn>_<id>__XlaMustCompile_true_config_proto_
    <n>_executor_type_<n>_`` names become ``tf:<fn>_<id>``; any other key longer than ``width``
    keeps its start and end around "…"."""
    head, dot, name = key.partition(".") if key.startswith("module_") else ("", "", key)
    m = _TF_NAME.match(name)
    if m:
        name = f"tf:{m['fn']}{m['rest']}"
    short = f"{head}{dot}{name}"
    if len(short) > width:
        keep = width - 1
        short = short[:keep - keep // 3] + "…" + short[len(short) - keep // 3:]
    return short

