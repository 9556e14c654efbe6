"""``explain``: why one compile needs more memory than another, module pair by module pair.

Both dumps are analysed set-wise: every module of each side at once on its own engine, then the
two sides' tables meet on the first dump's DuckDB connection, where a fixed number of queries
pair the modules, match the values and bucket the peak delta of every pair together (no query
and no loop per module pair).

1. **Module pairs** (``_pairs_sql``): by key within the dump, then by name and structure
   (fingerprint: entry parameter and output shapes without layouts) in module-id order, then by
   name alone, then by fingerprint (jax renamed the module), then by the name with punctuation
   and case dropped. A single module on each side is a pair whatever its name.
2. **Values** are matched across the pair by what survives a release, in levels, each on what
   the previous left: source file (its base name) and line, the primitive of the op_name (its
   last component without jax's ``jit(…)/``, ``transpose(jvp(…))`` wrappers, parameters and
   numbering), the shape without layout, the role (entry parameter number, or the defining
   opcode's class: compute, copy, constant, view, control, custom) and the shape index; the
   k-th value of a key on one side is matched with the k-th on the other (by live-range start,
   then value id); last, what is left is matched by instruction name and role (a while
   loop's ``arg_tuple`` whose shape changed). Instruction names decide nothing before that.
   Matched values whose instruction or op_name differ are ``renamed``.
3. **The peak** is the summary's ``peak_in_use`` (``analysis.summary.peaks``): the most bytes
   live at one step, each allocation slice counted once. At each side's peak step every live
   slice segment is owned by one live value (an entry parameter first, then the earliest
   defined), so the values' bytes at the peak add up to the peak exactly. The delta of a pair
   is the sum over matched values (b − a), values only in b (+) and values only in a (−); every
   such item goes to one bucket (first that applies):

   ``shape``      matched, shapes differ;
   ``aliasing``   matched, and the value's allocation is an entry parameter's on one side only,
                  or its parameter is aliased to an output (donation, ``input_output_alias``) on
                  one side only; unmatched, in a parameter/output allocation of a pair whose
                  aliased parameters differ;
   ``remat``      a rematerialized value (jax's ``checkpoint``/``rematted_computation``
                  op_names, XLA's ``.remat`` names) on one side only;
   ``copies``     a ``copy``/``copy-start``/``copy-done`` value on one side only;
   ``fusion``     matched with a different defining opcode or fusion kind;
   ``remat``      at a source line whose count of rematerialized values differs;
   ``fusion``     at a source line whose values are fused differently (fusion vs unfused
                  counts differ), or a fusion on one side only;
   ``new_buffer`` a value on one side only;
   ``unexplained`` the rest: a matched value live at one peak only, or of another size. Where
                  the pair has other changes, such a value's live range moved with them: it
                  takes the bucket with the most bytes moved in the pair (``dominant``).

   Then pair-wide rules: where the entry parameters' shapes differ (other inputs), ``fusion``,
   ``copies``, ``new_buffer`` and ``unexplained`` are ``shape``; where one side rematerializes and the other not at all (a
   ``jax.checkpoint`` added), ``fusion``, ``new_buffer`` and ``unexplained`` are ``remat``;
   where an option someone set differs (the debug options: ``XLA_FLAGS``,
   ``compiler_options``; or a build option that is not an XLA flag — the ``options`` table,
   when the dump has it), ``fusion``, ``copies``, ``new_buffer`` and ``unexplained`` are
   ``options``. ``options`` rows of 0 bytes name each option that differs (compared per
   source, where both sides have it; locations such as the dump directory aside); a flag that
   differs only in the whole configuration (``compile_options.textproto``: a release's
   defaults) is named, not blamed.
4. **Cost and collectives** per matched source line, from ``analysis.cost.costs`` and
   ``analysis.comms.collectives`` of each side (computed once for all modules).
"""

from __future__ import annotations

from .._typing import checked_analysis

import itertools
import re
from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa

from .engine import Engine, engine
from .modules import Module, ModuleSel, module_list, select

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["explain", "pair_keys", "CAUSE_KINDS", "PEAK"]

CAUSE_KINDS: tuple[str, ...] = ("aliasing", "fusion", "remat", "copies", "options", "shape", "new_buffer",
                                "unexplained")
PEAK = "peak_in_use"  # the summary's name of the peak explained (analysis.summary.peaks; was live_by_slice)

_IDS = itertools.count()

# the last component of an op_name, without [params] and numbering: what jax's wrappers
# (jit(f)/, transpose(jvp(f))/, checkpoint/) and releases leave alone
# jax's transformation wrappers around a primitive's name (``transpose(jvp(while))`` in jax
# 0.4's op_names, ``while`` later): unwrapped
_WRAPPER_RE = ("^(?:jit|pjit|jvp|transpose|vmap|checkpoint|remat|xla_computation|pmap|shard_map|named_call)"
               "\\((.*)\\)$")


def _prim_sql(col: str) -> str:
    """SQL for the primitive of an op_name: its last component without ``[params]``, jax's
    wrappers and numbering (``_1``, ``.3``)."""
    x = f"regexp_replace(regexp_extract(coalesce({col}, ''), '([^/]*)$', 1), '\\[.*$', '')"
    for _ in range(3):
        x = f"regexp_replace({x}, '{_WRAPPER_RE}', '\\1')"
    return f"nullif(trim(regexp_replace({x}, '[._]\\d+$', '')), '')"


_BASE_SQL = "nullif(regexp_extract(coalesce({c}, ''), '([^/\\\\]*)$', 1), '')"
_STRIP_LAYOUT = "regexp_replace(coalesce({c}, ''), '\\{{[^{{}}]*\\}}', '', 'g')"
_ROLE_SQL = """case when {op} = 'parameter' and {param} is not null then 'param:' || {param}::varchar
         when {op} = 'parameter' then 'param'
         when {op} in ('copy', 'copy-start', 'copy-done') then 'copy'
         when {op} in ('constant', 'iota') then 'const'
         when {op} in ('tuple', 'get-tuple-element', 'bitcast', 'reshape') then 'view'
         when {op} in ('while', 'call', 'conditional', 'async-start', 'async-done') then 'control'
         when {op} = 'custom-call' then 'custom'
         else 'compute' end"""
_REMAT_SQL = """(coalesce({on}, '') like '%rematted_computation%' or coalesce({on}, '') like '%/checkpoint/%'
         or coalesce({on}, '') like '%remat(%' or coalesce({on}, '') like '%checkpoint(%'
         or coalesce({ins}, '') like '%.remat%')"""
_COPY_OPS = "('copy', 'copy-start', 'copy-done')"
# options that say where things go (the dump, caches, tools), not how the program compiles:
# never a difference (``k``: the last component of the key)
_LOCATION_OPTION = """(k like '%dump%' or k like '%\\_dir' escape '\\' or k like '%\\_path' escape '\\'
    or k like '%\\_filename' escape '\\' or k like '%\\_file' escape '\\' or k like '%cache%'
    or k like '%profile%' or k like '%trace%' or k like '%logging%' or k like '%timeout%' or k like '%stuck%')"""


def _values_sql(side: str) -> str:
    """Every value of every module of one side, with what the matching and the buckets need."""
    return f"""
        with live as (
                 select b.module, b.value_id, b.allocation, coalesce(b."offset", 0)::bigint as off,
                        coalesce(b.size, 0)::bigint as sz, b.opcode, b.start
                 from @buffers b join @tl_max t using (module)
                 where b.start is not null and b."end" is not null and b.start <= t.step and t.step <= b."end"),
             cov as (
                 select l.module, l.allocation, c.k, any_value(c.hi - c.lo) as width,
                        arg_min(l.value_id, (case when l.opcode = 'parameter' then 0 else 1 end, l.start, l.value_id))
                            as owner
                 from live l join @tl_cover c on c.module = l.module and c.allocation is not distinct from l.allocation
                                             and c.off = l.off and c.sz = l.sz
                 group by l.module, l.allocation, c.k),
             own as (select module, owner as value_id, sum(width::hugeint)::bigint as peak_bytes
                     from cov group by module, owner),
             fk as (select module, instruction, any_value(fusion_kind) as fusion_kind from @info group by all)
        select '{side}' as side, b.module, b.value_id, b.instruction, b.shape_index,
               {_STRIP_LAYOUT.format(c='b.shape')} as shape, coalesce(b.size, 0)::bigint as size,
               b.opcode, b.op_name, {_prim_sql('b.op_name')} as prim,
               {_BASE_SQL.format(c='b.source_file')} as src, b.source_file, b.source_line,
               {_ROLE_SQL.format(op='b.opcode', param='al.parameter')} as role,
               b.category, al.parameter, (al.parameter is not null and al.is_maybe_live_out) as aliased,
               fk.fusion_kind, {_REMAT_SQL.format(on='b.op_name', ins='b.instruction')} as remat,
               coalesce(own.peak_bytes, 0)::bigint as peak_bytes, coalesce(b.start, -1) as start
        from @buffers b
        left join @alloc al on al.module = b.module and al.allocation = b.allocation
        left join own on own.module = b.module and own.value_id = b.value_id
        left join fk on fk.module = b.module and fk.instruction = b.instruction"""


def _modules_sql() -> str:
    """One row per module of a side: name, id, and a fingerprint (entry parameter shapes and
    live-out shapes without layouts)."""
    return f"""
        with p as (select module, string_agg(parameter::varchar || ':' || {_STRIP_LAYOUT.format(c='parameter_shape')}, ','
                                             order by parameter, parameter_shape_index) as params
                   from @alloc where parameter is not null group by module),
             o as (select module, string_agg({_STRIP_LAYOUT.format(c='output_shape')}, ',' order by
                                             {_STRIP_LAYOUT.format(c='output_shape')}) as outs
                   from @alloc where is_maybe_live_out and output_shape is not null group by module),
             m as (select distinct module, module_name from @modmap)
        select m.module, m.module_name as name, md5(coalesce(p.params, '') || '|' || coalesce(o.outs, '')) as fp,
               (p.params is not null or o.outs is not null) as has_fp, p.params
        from m left join p using (module) left join o using (module)"""


class _Run:
    """The tables of one ``explain`` call on the first dump's connection (dropped at the end)."""

    def __init__(self, eng: Engine) -> None:
        self.eng = eng
        self.sfx = f"__x{next(_IDS)}"
        self.registered: list[str] = []
        self.created: list[str] = []

    def name(self, base: str) -> str:
        return f"{base}{self.sfx}"

    def register(self, base: str, t: pa.Table) -> str:
        n = self.name(base)
        self.eng.con.register(n, t)
        self.registered.append(n)
        return n

    def create(self, base: str, query: str) -> str:
        n = self.name(base)
        self.eng.con.execute(f"create or replace temp table {n} as {self.q(query)}")
        self.created.append(n)
        return n

    def q(self, query: str) -> str:
        return re.sub(r"\$([a-z_0-9]+)", lambda m: self.name(m.group(1)), query)

    def arrow(self, query: str) -> pa.Table:
        from .engine import arrow

        return arrow(self.eng.con.sql(self.q(query)))

    def drop(self) -> None:
        for n in self.created:
            try:
                self.eng.con.execute(f"drop table if exists {n}")
            except Exception:  # pragma: no cover
                pass
        for n in self.registered:
            try:
                self.eng.con.unregister(n)
            except Exception:  # pragma: no cover
                pass


def _side_modules(d: "Dump", mods: list[Module]) -> pa.Table:
    return engine(d).scope(mods).arrow(_modules_sql())


def _side_values(d: "Dump", mods: list[Module], side: str) -> pa.Table:
    return engine(d).scope(mods).arrow(_values_sql(side))


def _register_pairs(run: _Run, a: "Dump", b: "Dump", ma: list[Module], mb: list[Module]) -> None:
    """``$pairs`` (module_a, module_b, matched_by, pair) of the modules ``ma`` and ``mb``."""
    empty_mod = pa.schema([("module", pa.string()), ("name", pa.string()), ("fp", pa.string()), ("has_fp", pa.bool_()),
                           ("params", pa.string())])
    for side, d, mods in (("a", a, ma), ("b", b, mb)):
        run.register(f"ids_{side}", pa.table({
            "module": pa.array([m.key for m in mods], pa.string()),
            "module_id": pa.array([m.module_id for m in mods], pa.int64()),
            "ord": pa.array(list(range(len(mods))), pa.int64())}))
        run.register(f"mods_{side}", _side_modules(d, mods) if mods else empty_mod.empty_table())
    _pair(run, {m.key: m for m in ma}, {m.key: m for m in mb})


def pair_keys(a: "Dump", b: "Dump", ma: Optional[list[Module]] = None,
              mb: Optional[list[Module]] = None) -> list[tuple[str, str, str]]:
    """(key in a, key in b, how they were paired) of every module pair, in a's module order
    (see ``_pair``): what ``diff.pair_modules`` and ``explain`` pair."""
    ma = module_list(a) if ma is None else ma
    mb = module_list(b) if mb is None else mb
    if not ma or not mb:
        return []
    eng = engine(a)
    run = _Run(eng)
    try:
        with eng.lock:
            _register_pairs(run, a, b, ma, mb)
            rows = run.arrow("select module_a, module_b, matched_by from $pairs order by pair").to_pylist()
    finally:
        with eng.lock:
            run.drop()
    return [(r["module_a"], r["module_b"], r["matched_by"]) for r in rows]


# `options.source` of the protobuf text a compile writes about what it did, not how it was
# asked to compile (FORMATS.md §1.3): left out of the options that differ.
_NOT_OPTIONS = ("basic_compiler_metadata", "transfer_stats", "sparse_core_specific_metadata", "host_transfers",
                "thunk_metadata", "priority_fusion_dump", "autotune_results", "module_metadata", "proto_text")


def _options_table(d: "Dump", mods: list[Module]) -> Optional[pa.Table]:
    """(module, kind, key, value) of the compile options of each module, from the dump's
    ``options`` table (``file_id``, ``module``, ``key``, ``value``, ``source``) when it has one;
    ``kind``: ``debug`` for what the debug-options file says (the flags set: ``XLA_FLAGS``,
    ``compiler_options``), ``compile`` for the rest (``compile_options.textproto``: the whole
    configuration, defaults included). A row is the module's by its file, else by its
    ``module`` column (the module key, its key within the dump, or its name)."""
    if "options" not in d:
        return None
    cols = d["options"].column_names
    if "key" not in cols or "value" not in cols:
        return None
    sc = engine(d).scope(mods)
    eng = sc.eng
    reg = f"options_tbl__x{next(_IDS)}"
    src = "coalesce(o.source::varchar, '')" if "source" in cols else "''"
    kind = f"case when {src} ilike '%debug%' then 'debug' else 'compile' end"
    # what a compile reports (thunks, transfers, autotuning, …) is no option of it
    inputs = f"{src} not in ({', '.join(repr(s) for s in _NOT_OPTIONS)})"
    by_file = (f"""select m.module, {kind} as kind, o.key::varchar as key, o.value::varchar as value
                   from {reg} o join @modmap m using (file_id) where {inputs}""" if "file_id" in cols else None)
    keys = pa.table({"module": [m.key for m in mods] * 3,
                     "alias": [m.key for m in mods] + [m.base for m in mods] + [m.name for m in mods]})
    reg_keys = f"options_keys__x{next(_IDS)}"
    by_mod = (f"""select k.module, {kind} as kind, o.key::varchar as key, o.value::varchar as value
                  from {reg} o join (select distinct module, alias from {reg_keys}) k on o.module::varchar = k.alias
                  where {inputs}
                  {'and (o.file_id is null or o.file_id not in (select file_id from @modmap))' if by_file else ''}"""
              if "module" in cols else None)
    parts = [q for q in (by_file, by_mod) if q]
    if not parts:
        return None
    with eng.lock:
        eng.con.register(reg, d["options"])
        eng.con.register(reg_keys, keys)
        try:
            return sc.arrow(f"""select module, kind, key, string_agg(distinct value, ',' order by value) as value
                                from ({' union all '.join(parts)}) group by all""")
        finally:
            eng.con.unregister(reg)
            eng.con.unregister(reg_keys)


_EMPTY_OPTS = pa.schema([("module", pa.string()), ("kind", pa.string()), ("key", pa.string()), ("value", pa.string())])


# the matching levels: (name, key columns); each on the values the previous left unmatched
_LEVELS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("source+op+shape+role", ("src", "source_line", "prim", "shape", "role", "shape_index"), "true"),
    ("source+op+shape", ("src", "source_line", "prim", "shape"), "true"),
    ("source+shape", ("src", "source_line", "shape"), "true"),
    ("op+shape+role", ("prim", "shape", "role"), "true"),
    ("parameter", ("role", "shape_index"), "role like 'param:%'"),
    ("source+op+role", ("src", "source_line", "prim", "role"), "true"),
    ("op+role", ("prim", "role", "shape_index"), "true"),
    ("role+shape", ("role", "shape"), "true"),
    ("source+role", ("src", "source_line", "role"), "true"),
    ("shape", ("shape",), "true"),
    ("name+role", ("instruction", "role", "shape_index"), "true"),
)


@checked_analysis
def explain(a: "Dump", b: "Dump", module: ModuleSel = None, *, cost: bool = True, top: int = 30,
            cost_pairs: Optional[int] = None) -> dict[str, Any]:
    """Why compile ``b`` needs more (or less) memory than compile ``a``, per module pair.

    Returns ``{"peak": "peak_in_use", "pairs": [...], "only_a": [...], "only_b": [...]}``;
    each pair (ranked by ``|peak_delta|``, largest first): ``module_a``, ``module_b``,
    ``matched_by`` (how the modules were paired), ``peak_a``, ``peak_b``, ``peak_step_a``,
    ``peak_step_b``, ``peak_delta`` (b − a, bytes; null when a side has no timeline),
    ``causes`` (``{kind, bytes, source_file, source_line, op_name, detail}`` ordered by
    ``|bytes|``, kinds in ``CAUSE_KINDS``; their bytes sum to ``peak_delta``), ``by_kind``
    (bytes per kind), ``renamed`` (matched values whose instruction or op_name differ, largest
    first, at most ``top``; ``n_renamed``), ``added`` / ``removed`` (values on one side only,
    largest first, at most ``top``; ``n_added``, ``n_removed``), ``options`` (the options that
    differ), and with ``cost``: ``cost`` (FLOPs and bytes accessed per matched source line,
    largest change first, at most ``top``) and ``collectives`` (added, removed, resized) —
    for the first ``cost_pairs`` pairs of the ranking (None: all; XLA's cost rules visit every
    instruction, the rest is a few queries).
    See the module docstring for the matching and the buckets."""
    ma_all, mb_all = module_list(a), module_list(b)
    ma, mb = ma_all, mb_all
    if module is not None:
        ma = _select_or_none(ma_all, module)
        mb = _select_or_none(mb_all, module)
    out: dict[str, Any] = {"peak": PEAK, "pairs": [], "only_a": [], "only_b": []}
    if not ma and not mb:
        return out
    eng = engine(a)
    run = _Run(eng)
    try:
        with eng.lock:
            _register_pairs(run, a, b, ma, mb)
            pairs = run.arrow("select * from $pairs order by pair").to_pylist()
            out["only_a"] = [r["module"] for r in run.arrow(
                "select a.module from $ids_a a where a.module not in (select module_a from $pairs) order by a.ord").to_pylist()]
            out["only_b"] = [r["module"] for r in run.arrow(
                "select b.module from $ids_b b where b.module not in (select module_b from $pairs) order by b.ord").to_pylist()]
            if not pairs:
                return out
            # the scopes of every selected module (those the pairing used): derived tables once
            va = _side_values(a, ma, "a")
            vb = _side_values(b, mb, "b")
            run.register("va_raw", va)
            run.register("vb_raw", vb.cast(va.schema) if vb.schema != va.schema else vb)
            _peaks(run, a, b, ma, mb)
            _match(run)
            _options(run, a, b, ma, mb)
            _items(run)
            res = _collect(run, pairs, top)
    finally:
        with eng.lock:
            run.drop()
    rank = sorted(pairs, key=lambda p: (res[p["pair"]]["peak_delta"] is None, -abs(res[p["pair"]]["peak_delta"] or 0),
                                        p["module_a"]))
    if cost:
        some = rank if cost_pairs is None else rank[:max(cost_pairs, 0)]
        ka, kb = {p["module_a"] for p in some}, {p["module_b"] for p in some}
        _cost_and_collectives(a, b, [m for m in ma if m.key in ka], [m for m in mb if m.key in kb], some, res, top)
    out["pairs"] = [res[p["pair"]] for p in rank]
    return out


def _select_or_none(mods: list[Module], module: ModuleSel) -> list[Module]:
    try:
        return select(mods, module)
    except KeyError:
        return []


def _pair(run: _Run, mods_a: dict[str, Module], mods_b: dict[str, Module]) -> None:
    """Module pairs, set-wise: each level pairs what the previous left, k-th with k-th in module
    id order within the level's key."""
    base_a = pa.table({"module": list(mods_a), "base": [m.base for m in mods_a.values()]})
    base_b = pa.table({"module": list(mods_b), "base": [m.base for m in mods_b.values()]})
    run.register("base_a", base_a)
    run.register("base_b", base_b)
    run.create("ma", """
        select m.module, m.name, m.fp, m.has_fp, m.params, i.module_id, i.ord, bs.base,
               lower(regexp_replace(m.name, '[_\\W]+', '', 'g')) as loose
        from $mods_a m join $ids_a i using (module) join $base_a bs using (module)""")
    run.create("mb", """
        select m.module, m.name, m.fp, m.has_fp, m.params, i.module_id, i.ord, bs.base,
               lower(regexp_replace(m.name, '[_\\W]+', '', 'g')) as loose
        from $mods_b m join $ids_b i using (module) join $base_b bs using (module)""")
    run.create("pairs", "select ''::varchar as module_a, ''::varchar as module_b, ''::varchar as matched_by, "
                        "0 as pair where false")
    n_a = run.arrow("select count(*) as n from $ma").column("n")[0].as_py()
    n_b = run.arrow("select count(*) as n from $mb").column("n")[0].as_py()
    levels: list[tuple[str, str, str]] = [
        ("key", "base, name", "true"),
        ("name+fingerprint", "name, fp", "has_fp"),
        ("name", "name", "true"),
        ("fingerprint", "fp", "has_fp"),
        ("similar name", "loose", "true"),
    ]
    if n_a == 1 and n_b == 1:
        levels.append(("single module", "1", "true"))
    for label, key, cond in levels:
        run.eng.con.execute(run.q(f"""
            insert into $pairs
            with la as (select *, row_number() over (partition by {key} order by module_id nulls last, ord) as rn
                        from $ma where {cond} and module not in (select module_a from $pairs)),
                 lb as (select *, row_number() over (partition by {key} order by module_id nulls last, ord) as rn
                        from $mb where {cond} and module not in (select module_b from $pairs))
            select la.module, lb.module, '{label}', 0
            from la join lb on {' and '.join(f'la.{k.strip()} = lb.{k.strip()}' for k in key.split(','))
                                if key != '1' else 'true'} and la.rn = lb.rn"""))
    run.eng.con.execute(run.q("""
        create or replace temp table $pairs as
        select p.module_a, p.module_b, p.matched_by, (row_number() over (order by a.ord, b.ord))::int as pair
        from $pairs p join $ma a on a.module = p.module_a join $mb b on b.module = p.module_b"""))


def _peaks(run: _Run, a: "Dump", b: "Dump", ma: list[Module], mb: list[Module]) -> None:
    """Each side's live-by-slice peak (``@tl_max``: the timeline's maximum and its first step)."""
    for side, d, mods in (("a", a, ma), ("b", b, mb)):
        t = engine(d).scope(mods).arrow("select module, step, bytes from @tl_max") if mods else \
            pa.table({"module": pa.array([], pa.string()), "step": pa.array([], pa.int64()),
                      "bytes": pa.array([], pa.int64())})
        run.register(f"pk_{side}", t)
        # rematerialized instructions of each module (fused ones too: every instruction of the HLO)
        r = engine(d).scope(mods).arrow(f"""
            select module, count(*) filter (where {_REMAT_SQL.format(on='op_name', ins='instruction')}) as n_remat
            from @info group by module""") if mods else \
            pa.table({"module": pa.array([], pa.string()), "n_remat": pa.array([], pa.int64())})
        run.register(f"rm_{side}", r)


def _match(run: _Run) -> None:
    """Values of each pair matched level by level (``_LEVELS``)."""
    run.create("va", """select p.pair, v.* from $va_raw v join $pairs p on p.module_a = v.module""")
    run.create("vb", """select p.pair, v.* from $vb_raw v join $pairs p on p.module_b = v.module""")
    run.create("vmatch", "select 0 as pair, 0::bigint as va, 0::bigint as vb, ''::varchar as level where false")
    # Within a level, values of the same name pair first (issue 51: a removed value is the one
    # whose name is gone, not one of a name both sides have that the level's order reached first)
    passes = [(label, tuple(dict.fromkeys(cols + ("instruction", "shape_index"))), cond) for label, cols, cond in _LEVELS]
    for label, cols, cond in (x for pair in zip(passes, _LEVELS) for x in pair):
        key = ", ".join(cols)
        notnull = " and ".join(f"{c} is not null" for c in cols) + f" and ({cond})"
        on = " and ".join(f"x.{c} = y.{c}" for c in cols)
        run.eng.con.execute(run.q(f"""
            insert into $vmatch
            with x as (select pair, value_id, {key},
                              row_number() over (partition by pair, {key} order by start, value_id) as rn
                       from $va v where {notnull}
                         and not exists (select 1 from $vmatch m where m.pair = v.pair and m.va = v.value_id)),
                 y as (select pair, value_id, {key},
                              row_number() over (partition by pair, {key} order by start, value_id) as rn
                       from $vb v where {notnull}
                         and not exists (select 1 from $vmatch m where m.pair = v.pair and m.vb = v.value_id))
            select x.pair, x.value_id, y.value_id, '{label}'
            from x join y on x.pair = y.pair and {on} and x.rn = y.rn"""))


def _options(run: _Run, a: "Dump", b: "Dump", ma: list[Module], mb: list[Module]) -> None:
    """Per pair, the options that differ (none when either dump has no ``options`` table)."""
    oa = _options_table(a, ma) if ma else None
    ob = _options_table(b, mb) if mb else None
    if oa is None or ob is None:
        oa = ob = _EMPTY_OPTS.empty_table()
    run.register("opt_a", oa.cast(_EMPTY_OPTS) if oa.schema != _EMPTY_OPTS else oa)
    run.register("opt_b", ob.cast(_EMPTY_OPTS) if ob.schema != _EMPTY_OPTS else ob)
    # compared per kind of source, where both modules have it: a key on one side only is a
    # flag set on one side only (a debug-options file lists the flags set); ``explicit``: a flag
    # someone set (debug options) or a build option that is not an XLA flag — those take the
    # bytes of the compiler's decisions; the rest (a release's new defaults) are named at 0 bytes
    run.create("optdiff", f"""
        with x0 as (select p.pair, o.kind, o.key, o.value, regexp_extract(o.key, '([^.]*)$', 1) as k
                    from $opt_a o join $pairs p on p.module_a = o.module),
             y0 as (select p.pair, o.kind, o.key, o.value, regexp_extract(o.key, '([^.]*)$', 1) as k
                    from $opt_b o join $pairs p on p.module_b = o.module),
             both_kinds as (select distinct x0.pair, x0.kind from x0 join y0 on x0.pair = y0.pair and x0.kind = y0.kind),
             x as (select * from x0 where not {_LOCATION_OPTION}
                   and exists (select 1 from both_kinds b where b.pair = x0.pair and b.kind = x0.kind)),
             y as (select * from y0 where not {_LOCATION_OPTION}
                   and exists (select 1 from both_kinds b where b.pair = y0.pair and b.kind = y0.kind))
        select coalesce(x.pair, y.pair) as pair, coalesce(x.kind, y.kind) as source, coalesce(x.key, y.key) as key,
               x.value as value_a, y.value as value_b,
               coalesce(x.kind, y.kind) = 'debug' or coalesce(x.k, y.k) not like 'xla\\_%' escape '\\' as explicit
        from x full outer join y on x.pair = y.pair and x.kind = y.kind and x.key = y.key
        where x.value is distinct from y.value""")


def _items(run: _Run) -> None:
    """The peak delta of every pair as items (matched values whose peak bytes differ, values
    of one side only at its peak), each in one bucket."""
    run.create("aliasdiff", """
        with x as (select pair, list_sort(list(distinct parameter) filter (where aliased)) as s from $va group by pair),
             y as (select pair, list_sort(list(distinct parameter) filter (where aliased)) as s from $vb group by pair)
        select p.pair, coalesce(x.s, []) as alias_a, coalesce(y.s, []) as alias_b,
               coalesce(x.s, []) <> coalesce(y.s, []) as differs
        from $pairs p left join x using (pair) left join y using (pair)""")
    # source lines where rematerialization or fusion differs between the sides
    run.create("lines", f"""
        with x as (select pair, src, source_line, count(*) filter (where remat) as nr,
                          count(*) filter (where opcode = 'fusion') as nf,
                          count(*) filter (where role = 'compute' and coalesce(opcode, '') <> 'fusion') as nu
                   from $va where src is not null group by all),
             y as (select pair, src, source_line, count(*) filter (where remat) as nr,
                          count(*) filter (where opcode = 'fusion') as nf,
                          count(*) filter (where role = 'compute' and coalesce(opcode, '') <> 'fusion') as nu
                   from $vb where src is not null group by all)
        select coalesce(x.pair, y.pair) as pair, coalesce(x.src, y.src) as src,
               coalesce(x.source_line, y.source_line) as source_line,
               coalesce(x.nr, 0) <> coalesce(y.nr, 0) as remat_line,
               (coalesce(x.nf, 0) <> coalesce(y.nf, 0) or coalesce(x.nu, 0) <> coalesce(y.nu, 0)) as fusion_line
        from x full outer join y on x.pair = y.pair and x.src = y.src
             and x.source_line is not distinct from y.source_line""")
    run.create("pkd", """
        select p.pair, pa.bytes as peak_a, pb.bytes as peak_b, pa.step as step_a, pb.step as step_b
        from $pairs p left join $pk_a pa on pa.module = p.module_a left join $pk_b pb on pb.module = p.module_b""")
    run.create("items", f"""
        with m as (
            select m.pair, m.level, x.value_id as va, y.value_id as vb,
                   x.peak_bytes as pa, y.peak_bytes as pb,
                   x.shape as shape_a, y.shape as shape_b, x.size as size_a, y.size as size_b,
                   x.opcode as op_a, y.opcode as op_b, x.fusion_kind as fk_a, y.fusion_kind as fk_b,
                   x.category as cat_a, y.category as cat_b, x.aliased as al_a, y.aliased as al_b,
                   x.remat as rm_a, y.remat as rm_b, x.instruction as ins_a, y.instruction as ins_b,
                   coalesce(y.src, x.src) as src, coalesce(y.source_file, x.source_file) as source_file,
                   coalesce(y.source_line, x.source_line) as source_line,
                   coalesce(y.op_name, x.op_name) as op_name, coalesce(y.prim, x.prim) as prim,
                   x.parameter as param_a, y.parameter as param_b
            from $vmatch m join $va x on x.pair = m.pair and x.value_id = m.va
                           join $vb y on y.pair = m.pair and y.value_id = m.vb
            where x.peak_bytes <> y.peak_bytes),
        ua as (select v.* from $va v where v.peak_bytes <> 0
               and not exists (select 1 from $vmatch m where m.pair = v.pair and m.va = v.value_id)),
        ub as (select v.* from $vb v where v.peak_bytes <> 0
               and not exists (select 1 from $vmatch m where m.pair = v.pair and m.vb = v.value_id)),
        raw as (
            select pair, 'matched' as how, (pb - pa)::bigint as bytes, src, source_file, source_line, op_name, prim,
                   shape_a, shape_b, op_a, op_b, fk_a, fk_b, cat_a, cat_b, al_a, al_b, rm_a, rm_b, ins_a, ins_b,
                   coalesce(param_b, param_a) as param, size_a, size_b, pa, pb
            from m
            union all
            select pair, 'only_a', -peak_bytes, src, source_file, source_line, op_name, prim,
                   shape, null, opcode, null, fusion_kind, null, category, null, aliased, null, remat, null,
                   instruction, null, parameter, size, null, peak_bytes, 0
            from ua
            union all
            select pair, 'only_b', peak_bytes, src, source_file, source_line, op_name, prim,
                   null, shape, null, opcode, null, fusion_kind, null, category, null, aliased, null, remat,
                   null, instruction, parameter, null, size, 0, peak_bytes
            from ub),
        k as (
            select r.*, coalesce(l.remat_line, false) as remat_line, coalesce(l.fusion_line, false) as fusion_line,
                   ad.differs as alias_differs,
                   case
                     when how = 'matched' and shape_a <> shape_b then 'shape'
                     when how = 'matched' and ((cat_a = 'parameter') <> (cat_b = 'parameter')
                                              or coalesce(al_a, false) <> coalesce(al_b, false)) then 'aliasing'
                     when how <> 'matched' and ad.differs and coalesce(cat_a, cat_b) in ('parameter', 'output')
                          then 'aliasing'
                     when (coalesce(rm_a, false) <> coalesce(rm_b, false) and how = 'matched')
                          or (how <> 'matched' and coalesce(rm_a, rm_b, false)) then 'remat'
                     when (how = 'matched' and ((op_a in {_COPY_OPS}) <> (op_b in {_COPY_OPS})))
                          or (how <> 'matched' and coalesce(op_a, op_b) in {_COPY_OPS}) then 'copies'
                     when how = 'matched' and (op_a is distinct from op_b or fk_a is distinct from fk_b) then 'fusion'
                     when coalesce(l.remat_line, false) then 'remat'
                     when (how <> 'matched' and coalesce(op_a, op_b) = 'fusion')
                          or coalesce(l.fusion_line, false) then 'fusion'
                     when how <> 'matched' then 'new_buffer'
                     else 'unexplained' end as kind0
            from raw r
            left join $lines l on l.pair = r.pair and l.src = r.src and l.source_line is not distinct from r.source_line
            left join $aliasdiff ad on ad.pair = r.pair)
        select k.*, case when kind1 in ('fusion', 'copies', 'new_buffer', 'unexplained')
                              and coalesce(sp.shape_pair, false) then 'shape'
                         when kind1 in ('fusion', 'copies', 'new_buffer', 'unexplained')
                              and exists (select 1 from $optdiff o where o.pair = k.pair and o.explicit) then 'options'
                         when kind1 in ('fusion', 'new_buffer', 'unexplained') and coalesce(rp.remat_pair, false)
                              then 'remat'
                         else kind1 end as kind
        from (select k.*, case when kind0 = 'unexplained' and dom.kind is not null then dom.kind else kind0 end as kind1,
                     dom.kind as dominant
              from k left join (select pair, arg_max(kind0, (w, -prio)) as kind
                                from (select pair, kind0, sum(abs(bytes)) as w,
                                             list_position(['shape', 'aliasing', 'remat', 'copies', 'fusion', 'new_buffer'],
                                                           kind0) as prio
                                      from k where kind0 <> 'unexplained' group by all)
                                group by pair) dom on dom.pair = k.pair) k
        -- one side rematerializes (jax.checkpoint, XLA's remat) and the other not at all: the
        -- compiler's other decisions in the pair follow from it
        left join (select p.pair, (coalesce(x.n_remat, 0) = 0) <> (coalesce(y.n_remat, 0) = 0) as remat_pair
                   from $pairs p left join $rm_a x on x.module = p.module_a
                   left join $rm_b y on y.module = p.module_b) rp on rp.pair = k.pair
        -- the entry parameters' shapes differ (other inputs): what the compiler did differently
        -- follows from them
        left join (select p.pair, x.params <> y.params as shape_pair
                   from $pairs p join $ma x on x.module = p.module_a join $mb y on y.module = p.module_b) sp
               on sp.pair = k.pair""")
    # what the items do not cover (none when the attribution is exact): unexplained
    run.create("residual", """
        select d.pair, (coalesce(d.peak_b, 0) - coalesce(d.peak_a, 0)
                        - coalesce((select sum(bytes) from $items i where i.pair = d.pair), 0))::bigint as bytes
        from $pkd d where d.peak_a is not null and d.peak_b is not null""")


def _detail_sql() -> str:
    # an item a pair-wide rule moved (to options, remat) says what it was: 'fusion: …'
    return """case when kind <> kind1 then kind1 || ': ' else '' end || case
        when how = 'only_b' then 'added ' || coalesce(ins_b, '?') || ' ' || coalesce(shape_b, '')
             || coalesce(' (' || op_b || coalesce(' ' || fk_b, '') || ')', '')
        when how = 'only_a' then 'removed ' || coalesce(ins_a, '?') || ' ' || coalesce(shape_a, '')
             || coalesce(' (' || op_a || coalesce(' ' || fk_a, '') || ')', '')
        when kind0 = 'shape' then shape_a || ' -> ' || shape_b
        when kind0 = 'aliasing' then coalesce('parameter ' || param::varchar || ': ', '')
             || ins_a || ' in a ' || cat_a || coalesce(' allocation' || case when al_a then ' (aliased to an output)' else '' end, '')
             || ', ' || ins_b || ' in b ' || cat_b || coalesce(' allocation' || case when al_b then ' (aliased to an output)' else '' end, '')
        when kind0 = 'fusion' and (op_a is distinct from op_b or fk_a is distinct from fk_b) then
             coalesce(ins_a, '?') || ' (' || coalesce(op_a, '?') || coalesce(' ' || fk_a, '') || ') -> '
             || coalesce(ins_b, '?') || ' (' || coalesce(op_b, '?') || coalesce(' ' || fk_b, '') || ')'
        when kind0 = 'unexplained' and dominant is not null and pa = 0 then
             coalesce(ins_b, '?') || ' live at the peak in b only (its live range moved with the '
             || dominant || ' changes)'
        when kind0 = 'unexplained' and dominant is not null and pb = 0 then
             coalesce(ins_a, '?') || ' live at the peak in a only (its live range moved with the '
             || dominant || ' changes)'
        when kind0 = 'unexplained' and pa = 0 then coalesce(ins_b, '?') || ' live at the peak in b only'
        when kind0 = 'unexplained' and pb = 0 then coalesce(ins_a, '?') || ' live at the peak in a only'
        else coalesce(ins_a, '?') || ' -> ' || coalesce(ins_b, '?') || ': ' || pa::varchar || ' -> ' || pb::varchar
             || ' bytes at the peak' end"""


def _collect(run: _Run, pairs: list[dict[str, Any]], top: int) -> dict[int, dict[str, Any]]:
    """Everything per pair as plain data: a handful of queries over all pairs."""
    res: dict[int, dict[str, Any]] = {}
    pk = {r["pair"]: r for r in run.arrow("select * from $pkd").to_pylist()}
    for p in pairs:
        d = pk.get(p["pair"], {})
        pa_, pb_ = d.get("peak_a"), d.get("peak_b")
        res[p["pair"]] = {
            "module_a": p["module_a"], "module_b": p["module_b"], "matched_by": p["matched_by"],
            "peak": PEAK, "peak_a": pa_, "peak_b": pb_, "peak_step_a": d.get("step_a"), "peak_step_b": d.get("step_b"),
            "peak_delta": (pb_ - pa_) if pa_ is not None and pb_ is not None else None,
            "causes": [], "by_kind": {k: 0 for k in CAUSE_KINDS}, "options": [], "renamed": [], "n_renamed": 0,
            "added": [], "n_added": 0, "removed": [], "n_removed": 0, "cost": None, "collectives": None,
            "note": None if pa_ is not None and pb_ is not None else
            "no timeline on " + " and ".join(s for s, v in (("a", pa_), ("b", pb_)) if v is None)
            + ": the peak in use (by slice) needs the buffer-assignment and live-range files",
        }
    causes = run.arrow(f"""
        with it as (select *, {_detail_sql()} as detail from $items i
                    where exists (select 1 from $pkd d where d.pair = i.pair and d.peak_a is not null
                                  and d.peak_b is not null)),
             g as (select pair, kind, source_file, source_line, coalesce(prim, '') as prim_k,
                          sum(bytes)::bigint as bytes, max_by(op_name, abs(bytes)) as op_name,
                          string_agg(detail, '; ' order by abs(bytes) desc, detail) as details,
                          count(*) as n
                   from it group by pair, kind, source_file, source_line, coalesce(prim, ''))
        select pair, kind, bytes, source_file, source_line, op_name,
               case when n > 3 then split_part(details, '; ', 1) || '; ' || split_part(details, '; ', 2) || '; '
                                    || split_part(details, '; ', 3) || ' … (' || n::varchar || ' values)'
                    else details end as detail, 0 as ord
        from g where bytes <> 0
        union all
        select pair, 'unexplained', bytes, null, null, null,
               'peak bytes no matched or unmatched value accounts for', 0 from $residual where bytes <> 0
        union all
        select pair, 'options', 0, null, null, key,
               key || ': ' || coalesce(value_a, '(not set)') || ' -> ' || coalesce(value_b, '(not set)')
               || case when explicit then '' else ' (' || source || ' options: a default of the release?)' end,
               case when explicit then 1 else 2 end
        from $optdiff
        order by pair, abs(bytes) desc, ord, kind, source_file, source_line, op_name""").to_pylist()
    for c in causes:
        r = res[c.pop("pair")]
        r["causes"].append(c)
        r["by_kind"][c["kind"]] += c["bytes"]
    for o in run.arrow("select * from $optdiff order by pair, not explicit, key").to_pylist():
        res[o.pop("pair")]["options"].append(o)
    # what differs about the whole pair, named at 0 bytes where no value at the peak shows it
    # (the donation, checkpoint or input change moved memory away from the peak, or not at all)
    facts = run.arrow("""
        select p.pair, ad.alias_a, ad.alias_b, ad.differs as alias_differs,
               (coalesce(x.n_remat, 0) = 0) <> (coalesce(y.n_remat, 0) = 0) as remat_pair,
               coalesce(x.n_remat, 0) as remat_a, coalesce(y.n_remat, 0) as remat_b,
               ma.params <> mb.params as shape_pair, ma.params as params_a, mb.params as params_b
        from $pairs p join $aliasdiff ad using (pair)
        left join $rm_a x on x.module = p.module_a left join $rm_b y on y.module = p.module_b
        join $ma ma on ma.module = p.module_a join $mb mb on mb.module = p.module_b""").to_pylist()
    for f in facts:
        r = res[f["pair"]]
        if r["peak_delta"] is None:
            continue
        have = {c["kind"] for c in r["causes"] if c["bytes"]}
        extra = []
        if f["alias_differs"] and "aliasing" not in have:
            extra.append(("aliasing", f"entry parameters aliased to an output (donated): a {f['alias_a']}, "
                                      f"b {f['alias_b']}"))
        if f["remat_pair"] and "remat" not in have:
            extra.append(("remat", f"rematerialized instructions: a {f['remat_a']}, b {f['remat_b']}"))
        if f["shape_pair"] and "shape" not in have:
            extra.append(("shape", f"entry parameters: a {f['params_a']}; b {f['params_b']}"))
        for kind, detail in extra:
            r["causes"].append({"kind": kind, "bytes": 0, "source_file": None, "source_line": None, "op_name": None,
                                "detail": detail, "ord": 1})
    for c in res.values():
        # by |bytes|; at equal bytes the bytes' causes, then options someone set, then defaults
        c["causes"].sort(key=lambda x: (-abs(x["bytes"]), x["ord"]))
        for x in c["causes"]:
            del x["ord"]
    ren = run.arrow(f"""
        with r as (
            select m.pair, m.level as matched_by, x.instruction as instruction_a, y.instruction as instruction_b,
                   x.op_name as op_name_a, y.op_name as op_name_b, coalesce(y.source_file, x.source_file) as source_file,
                   coalesce(y.source_line, x.source_line) as source_line, x.shape as shape_a, y.shape as shape_b,
                   x.size as size_a, y.size as size_b,
                   row_number() over (partition by m.pair order by greatest(x.size, y.size) desc, y.value_id) as rn,
                   count(*) over (partition by m.pair) as n
            from $vmatch m join $va x on x.pair = m.pair and x.value_id = m.va
                           join $vb y on y.pair = m.pair and y.value_id = m.vb
            where x.instruction is distinct from y.instruction or x.op_name is distinct from y.op_name)
        select * exclude (rn) from r where rn <= {int(top)} order by pair, rn""").to_pylist()
    for r in ren:
        p = res[r.pop("pair")]
        p["n_renamed"] = r.pop("n")
        p["renamed"].append(r)
    for side, other, col in (("a", "removed", "va"), ("b", "added", "vb")):
        rows = run.arrow(f"""
            with r as (
                select v.pair, v.instruction, v.shape_index, v.shape, v.size, v.opcode, v.op_name, v.source_file,
                       v.source_line, v.peak_bytes,
                       row_number() over (partition by v.pair order by v.size desc, v.value_id) as rn,
                       count(*) over (partition by v.pair) as n
                from $v{side} v
                where not exists (select 1 from $vmatch m where m.pair = v.pair and m.{col} = v.value_id))
            select * exclude (rn) from r where rn <= {int(top)} order by pair, rn""").to_pylist()
        for r in rows:
            p = res[r.pop("pair")]
            p[f"n_{other}"] = r.pop("n")
            p[other].append(r)
    return res


def _cost_and_collectives(a: "Dump", b: "Dump", ma: list[Module], mb: list[Module], pairs: list[dict[str, Any]],
                          res: dict[int, dict[str, Any]], top: int) -> None:
    """FLOPs and bytes accessed per matched source line, and collectives added, removed or
    resized, from each side's ``costs`` and ``collectives`` (computed once for all modules)."""
    from .comms import collectives
    from .cost import costs

    for p in pairs:
        res[p["pair"]]["cost"], res[p["pair"]]["collectives"] = [], []
    has_hlo_a = [m.key for m in ma if m.hlo_file_ids]
    has_hlo_b = [m.key for m in mb if m.hlo_file_ids]
    if not has_hlo_a or not has_hlo_b:
        return
    try:
        ca, cb = costs(a, has_hlo_a), costs(b, has_hlo_b)
        qa, qb = collectives(a, has_hlo_a), collectives(b, has_hlo_b)
    except Exception as e:  # a module the cost rules cannot follow: say so, keep the memory answer
        for p in pairs:
            res[p["pair"]]["cost_note"] = f"cost analysis failed: {e}"
        return
    eng = engine(a)
    run = _Run(eng)
    try:
        with eng.lock:
            pt = pa.table({"pair": [p["pair"] for p in pairs], "module_a": [p["module_a"] for p in pairs],
                           "module_b": [p["module_b"] for p in pairs]})
            run.register("cpairs", pt)
            keep = ["module", "in_total", "flops", "bytes_accessed", "source_file", "source_line"]
            run.register("ca", ca.select(keep))
            run.register("cb", cb.select(keep))
            kq = ["module", "kind", "shape", "bytes", "op_name", "source_file", "source_line", "instruction"]
            run.register("qa", qa.select(kq))
            run.register("qb", qb.select(kq))
            base = _BASE_SQL.format(c="source_file")
            rows = run.arrow(f"""
                with x as (select p.pair, {base} as src, source_line, any_value(source_file) as source_file,
                                  sum(flops) as flops, sum(bytes_accessed) as bytes
                           from $ca c join $cpairs p on p.module_a = c.module where in_total group by all),
                     y as (select p.pair, {base} as src, source_line, any_value(source_file) as source_file,
                                  sum(flops) as flops, sum(bytes_accessed) as bytes
                           from $cb c join $cpairs p on p.module_b = c.module where in_total group by all),
                     j as (select coalesce(x.pair, y.pair) as pair, coalesce(y.source_file, x.source_file) as source_file,
                                  coalesce(y.source_line, x.source_line) as source_line,
                                  coalesce(x.flops, 0) as flops_a, coalesce(y.flops, 0) as flops_b,
                                  coalesce(x.bytes, 0) as bytes_a, coalesce(y.bytes, 0) as bytes_b
                           from x full outer join y on x.pair = y.pair and x.src is not distinct from y.src
                                and x.source_line is not distinct from y.source_line),
                     r as (select *, flops_b - flops_a as flops_delta, bytes_b - bytes_a as bytes_delta,
                                  row_number() over (partition by pair order by abs(bytes_b - bytes_a) desc,
                                                     abs(flops_b - flops_a) desc, source_line) as rn
                           from j where flops_a <> flops_b or bytes_a <> bytes_b)
                select * exclude (rn) from r where rn <= {int(top)} order by pair, rn""").to_pylist()
            by_pair = {p["pair"]: res_p for p, res_p in zip(pairs, (res[p["pair"]] for p in pairs))}
            for r in rows:
                by_pair[r.pop("pair")]["cost"].append(r)
            rows = run.arrow(f"""
                with x as (select p.pair, kind, {base} as src, source_line, any_value(source_file) as source_file,
                                  count(*) as n, sum(bytes) as bytes, any_value(shape) as shape,
                                  any_value(op_name) as op_name
                           from $qa c join $cpairs p on p.module_a = c.module group by all),
                     y as (select p.pair, kind, {base} as src, source_line, any_value(source_file) as source_file,
                                  count(*) as n, sum(bytes) as bytes, any_value(shape) as shape,
                                  any_value(op_name) as op_name
                           from $qb c join $cpairs p on p.module_b = c.module group by all)
                select coalesce(x.pair, y.pair) as pair, coalesce(x.kind, y.kind) as kind,
                       case when x.n is null then 'added' when y.n is null then 'removed'
                            when x.bytes <> y.bytes then 'resized' else 'count' end as change,
                       coalesce(y.source_file, x.source_file) as source_file,
                       coalesce(y.source_line, x.source_line) as source_line, coalesce(y.op_name, x.op_name) as op_name,
                       coalesce(x.n, 0) as count_a, coalesce(y.n, 0) as count_b,
                       coalesce(x.bytes, 0)::bigint as bytes_a, coalesce(y.bytes, 0)::bigint as bytes_b,
                       x.shape as shape_a, y.shape as shape_b
                from x full outer join y on x.pair = y.pair and x.kind = y.kind and x.src is not distinct from y.src
                     and x.source_line is not distinct from y.source_line
                where x.n is distinct from y.n or x.bytes is distinct from y.bytes
                order by pair, abs(coalesce(y.bytes, 0) - coalesce(x.bytes, 0)) desc""").to_pylist()
            for r in rows:
                by_pair[r.pop("pair")]["collectives"].append(r)
    finally:
        with eng.lock:
            run.drop()
