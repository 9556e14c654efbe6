"""The story of a compile, pass by pass: what each HLO pass of XLA added, removed and changed.

``--xla_dump_hlo_pass_re=.*`` (or ``hlodump.capture(..., passes=True)``) makes XLA write the
module once at the start of every pass pipeline and once after every pass that changed it
(``module_NNNN.<name>.<pass_index>.<pipeline>.after_<pass>.before_<next pass>.txt``; copy
insertion writes ``…copy-insertion.after_<substep>.txt``). ``hlodump.read_arrow`` reads them as
``files`` rows with ``stage='pass'`` and their instructions as ``instructions`` rows. Here:

* :func:`passes` — one row per per-pass file of every module, in pass order, with the number of
  instructions the file holds and how many were added, removed or changed since the module's
  previous per-pass file.
* :func:`history` — one instruction's story: every pass that added, changed or removed it, with
  its text before and after.
* :func:`pass_changes` — the instructions one pass added, removed or changed (the CLI's
  ``hlodump passes --diff PASS`` prints them as a unified diff).

Matching. Instructions of a file are matched to those of the module's previous per-pass file by
name (HLO names are unique within a module; should a name repeat, its k-th occurrence matches the
k-th). *Added*: the name is not in the previous file (every instruction of a module's first
per-pass file is added). *Removed*: the name was in the previous file and is not in this one.
*Changed*: the name is in both and its text differs, where the text is the instruction's line
without its name: ``ROOT`` marker, shape (layout included), opcode, operand text, and every
attribute after the operand list (``metadata``, ``backend_config`` and ``sharding`` included) —
compared as a 64-bit hash, and given in full by :func:`history` and :func:`pass_changes` as
``[ROOT ]%name = shape opcode(operands), attributes``. The computation an instruction sits in is
not part of its text: an instruction moved unchanged into another computation is not *changed*.

Gaps. XLA numbers a module's per-pass files 0, 1, 2, … in the order it writes them (one per
pipeline start and per pass that changed the module), so the numbers of a whole dump run without
a gap. A dump that keeps some passes only (people thin them) has gaps: every comparison is then
made against the previous file *dumped* (``prev_pass_index`` / ``before_pass_index``), and
``not_dumped`` says how many numbers are missing between the two — what the rows of such a file
say happened somewhere in between, not in that pass alone (:func:`gaps` lists them).

A pass's row: ``pass_name`` is the pass whose result the file shows (``after_<pass>`` of its
name; ``pipeline-start`` for the file written when a pipeline starts, whose differences to the
previous file come from code that ran between pipelines; for copy insertion's sub-steps the pass
``copy-insertion`` and the ``substep``). Everything is computed set-wise: one DuckDB query over
the instructions of all per-pass files of all modules.
"""

from __future__ import annotations

from .._typing import checked_analysis

import difflib
from typing import TYPE_CHECKING, Any, Optional, Union

import pyarrow as pa

from .engine import arrow as _arrow
from .engine import engine, views as _views
from .modules import ModuleSel, NoSuchModule, module_list as _module_list, scope_of, select as _select

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

    from ..dump import Dump

__all__ = ["passes", "history", "pass_changes", "pass_diff", "gaps", "between_passes", "NoSuchInstruction", "NoSuchPass", "PASSES_SCHEMA",
           "HISTORY_SCHEMA"]

#: Columns of :func:`passes`.
PASSES_SCHEMA = pa.schema([
    ("module", pa.string()), ("module_name", pa.string()), ("module_id", pa.int32()), ("dump", pa.string()),
    ("file_id", pa.int32()), ("path", pa.string()), ("pass_index", pa.int32()), ("pipeline", pa.string()),
    ("pass_name", pa.string()), ("before_pass", pa.string()), ("substep", pa.string()),
    ("instructions", pa.int64()), ("added", pa.int64()), ("removed", pa.int64()), ("changed", pa.int64()),
    ("prev_pass_index", pa.int32()), ("prev_pass_name", pa.string()), ("not_dumped", pa.int32()),
])

#: Columns of :func:`history` and :func:`pass_changes`.
HISTORY_SCHEMA = pa.schema([
    ("module", pa.string()), ("file_id", pa.int32()), ("path", pa.string()), ("pass_index", pa.int32()),
    ("pipeline", pa.string()), ("pass_name", pa.string()), ("substep", pa.string()),
    ("instruction", pa.string()), ("change", pa.string()), ("before", pa.string()), ("after", pa.string()),
    ("before_line", pa.int64()), ("after_line", pa.int64()),
    ("before_pass_index", pa.int32()), ("before_pass_name", pa.string()), ("not_dumped", pa.int32()),
])


class NoSuchInstruction(KeyError):
    """No per-pass file of the module holds an instruction of that name; ``close`` lists
    similar names that do occur."""

    def __init__(self, module: str, wanted: str, close: list[str]) -> None:
        self.module, self.wanted, self.close = module, wanted, close
        super().__init__(wanted)

    def __str__(self) -> str:
        hint = f"; similar: {', '.join(self.close)}" if self.close else ""
        return f"no instruction {self.wanted!r} in any per-pass file of {self.module}{hint}"


class NoSuchPass(KeyError):
    """``pass_changes`` was given a pass that no per-pass file of the module shows."""

    def __init__(self, module: str, wanted: Any, choices: list[str]) -> None:
        self.module, self.wanted, self.choices = module, wanted, choices
        super().__init__(wanted)

    def __str__(self) -> str:
        listed = ", ".join(self.choices[:40]) or "none"
        return f"no pass {self.wanted!r} in {self.module}; passes: {listed}"


# --------------------------------------------------------------------------------- SQL pieces

# The instruction's line without its name, as XLA prints it (whitespace normalised).
_BODY_SQL = """(i.shape || ' ' || i.opcode || '(' || coalesce(i.operand_text, '') || ')'
                || case when coalesce(i.attributes, '') = '' then '' else ', ' || i.attributes end)"""
_TEXT_SQL = f"""(case when i.is_root then 'ROOT ' else '' end) || '%' || i.name || ' = ' || {_BODY_SQL}"""
# The same text as a tuple: hashing the parts spares building a string a row (3x faster on 5.7M rows).
_HASH_SQL = "hash(i.is_root, i.shape, i.opcode, i.operand_text, i.attributes)"

# Per-pass files in pass order, each with the file of the same module just before it.
_PASS_FILES_SQL = """
    select f.file_id, coalesce(k.module, f.fallback_key) as module,
           coalesce(f.module_name, f.fallback_key) as module_name, f.module_id, f.dump, f.path,
           f.pass_index, f.pipeline, coalesce(f.after_pass, f.substep) as pass_name, f.before_pass, f.substep,
           lag(f.file_id) over w as prev_file_id, lag(f.pass_index) over w as prev_pass_index,
           lag(coalesce(f.after_pass, f.substep)) over w as prev_pass_name,
           -- pass numbers not dumped between the previous file and this one (XLA numbers them 0, 1, …)
           greatest(f.pass_index - coalesce(lag(f.pass_index) over w, -1) - 1, 0)::integer as not_dumped
    from (select file_id, path::varchar as path, module_id, module_name::varchar as module_name,
                 coalesce(dump::varchar, '') as dump, pass_index, pipeline::varchar as pipeline,
                 after_pass::varchar as after_pass, before_pass::varchar as before_pass,
                 substep::varchar as substep,
                 case when module_id is null then coalesce(module_name::varchar, path::varchar)
                      else printf('module_%04d', module_id) || coalesce('.' || module_name::varchar, '') end
                   as fallback_key
          from files where stage = 'pass' and kind = 'hlo_module') f
    left join keys k using (file_id)
    window w as (partition by f.dump, f.module_id, f.module_name order by f.pass_index, f.path)
"""


def _connect(d: "Dump") -> "duckdb.DuckDBPyConnection":
    """A cursor on the dump's engine for one analysis (its temp tables its own, gone with it):
    ``files``, ``instructions`` (the zero-copy views) and ``keys`` (file id → module key of
    ``hlodump.analysis``) registered; ``pf`` the per-pass files."""
    v = _views(d)
    con = engine(d).cursor()
    files = v["files"]
    if "substep" not in files.column_names:  # a Dump made by an older reader
        files = files.append_column("substep", pa.nulls(files.num_rows, pa.string()))
    con.register("files", files)
    if "instructions" in v:
        con.register("instructions", v["instructions"].select(
            ["file_id", "instruction_id", "name", "is_root", "shape", "opcode", "operand_text", "attributes", "line"]))
    else:
        raise ValueError("this Dump was read without the instructions table: read_arrow(path, "
                         "tables=['instructions']) (or no tables= at all) for the pass history")
    con.register("keys", _module_keys(d))
    con.execute(f"create temp table pf as {_PASS_FILES_SQL}")
    return con


def _module_keys(d: "Dump") -> pa.Table:
    """file id → module key, as ``hlodump.analysis`` names modules (the engine's module map)."""
    return scope_of(d, None).arrow("select file_id, module from @modmap")


def _cast(t: pa.Table, schema: pa.Schema) -> pa.Table:
    return t.select(schema.names).cast(schema)


def _pass_modules(con: "duckdb.DuckDBPyConnection") -> list[str]:
    return [r[0] for r in con.sql("select distinct module from pf order by module").fetchall()]


def _choose_modules(d: "Dump", con: "duckdb.DuckDBPyConnection", module: ModuleSel, one: bool) -> list[str]:
    """Module keys with per-pass files that ``module`` selects (``hlodump.analysis`` rules:
    key, name, id, substring); ``one``: exactly one, else ``NoSuchModule``."""
    have = _pass_modules(con)
    if module is None:
        if one and len(have) != 1:
            raise NoSuchModule(None, have, several=len(have) > 1)
        return have
    with_passes = set(have)
    mods = [m for m in _module_list(d) if m.key in with_passes]
    hit = [m.key for m in _select(mods, module)] if mods else []
    if not hit:
        raise NoSuchModule(module, have)
    if one and len(hit) > 1:
        raise NoSuchModule(module, hit, several=True)
    return hit


# --------------------------------------------------------------------------------- passes

@checked_analysis
def passes(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """One row per per-pass HLO file (``files.stage == 'pass'``) of every module, in pass order.

    Columns (``PASSES_SCHEMA``): ``module`` (the key of ``hlodump.analysis``), ``module_name``,
    ``module_id``, ``dump``, ``file_id``, ``path``, ``pass_index``, ``pipeline``, ``pass_name``
    (the pass whose result the file shows), ``before_pass``, ``substep``, ``instructions`` (how many
    the file holds, every computation counted), ``added``, ``removed``, ``changed`` (against the
    module's previous per-pass file: matched by name; *changed* = same name, different text — the
    line without its name: ``ROOT``, shape, opcode, operands, attributes; see the module doc).

    ``module=``: a module key, name, id or substring (all modules with per-pass files if None).
    A dump without per-pass files gives an empty table.
    """
    con = _connect(dump)
    keys = _choose_modules(dump, con, module, one=False) if module is not None else None
    if keys is not None:
        con.register("wanted", pa.table({"module": pa.array(keys, pa.string())}))
        con.execute("delete from pf where module not in (select module from wanted)")
    # Fast path: names matched by a 64-bit hash (integers join faster than text). XLA's verifier
    # keeps names unique within a module; a file where a name (or a name's hash) repeats shows in
    # the counts (the join then pairs more rows than the files hold) and is counted again below
    # by the names themselves, k-th occurrence to k-th.
    con.execute(f"""create temp table ins as
        select i.file_id, hash(i.name) as k, {_HASH_SQL} as h
        from instructions i where i.file_id in (select file_id from pf)""")
    con.execute(f"""create temp table counted as
        with n as (select file_id, count(*) as n from ins group by file_id),
        prev as (select pf.file_id, ins.k, ins.h from ins join pf on ins.file_id = pf.prev_file_id),
        j as (select coalesce(c.file_id, p.file_id) as file_id, c.h as ch, p.h as ph
              from ins c full outer join prev p on c.file_id = p.file_id and c.k = p.k),
        agg as (select file_id, count(ch) as paired_cur, count(ph) as paired_prev,
                       count(*) filter (where ph is null) as added,
                       count(*) filter (where ch is null) as removed,
                       count(*) filter (where ch <> ph) as changed
                from j group by file_id)
        select pf.file_id, coalesce(nc.n, 0) as instructions, coalesce(a.added, 0) as added,
               coalesce(a.removed, 0) as removed, coalesce(a.changed, 0) as changed,
               coalesce(a.paired_cur, 0) <> coalesce(nc.n, 0)
                 or coalesce(a.paired_prev, 0) <> coalesce(np.n, 0) as repeated
        from pf left join agg a using (file_id) left join n nc on nc.file_id = pf.file_id
        left join n np on np.file_id = pf.prev_file_id""")
    if con.sql("select count(*) from counted where repeated").fetchall()[0][0]:
        _recount_by_name(con)
    t = _arrow(con.sql("""
        select pf.*, c.instructions, c.added, c.removed, c.changed
        from pf join counted c using (file_id)
        order by pf.dump, pf.module, pf.pass_index, pf.path"""))
    return _cast(t, PASSES_SCHEMA)


def _recount_by_name(con: "duckdb.DuckDBPyConnection") -> None:
    """Counts of the files flagged ``repeated`` again, matching the names themselves (the k-th
    occurrence of a name to the k-th of the previous file)."""
    con.execute(f"""create temp table redo as
        with flagged as (select file_id from counted where repeated),
        want as (select file_id from flagged union select prev_file_id from pf where file_id in (select file_id from flagged)),
        ins2 as (
            select i.file_id, i.name, {_HASH_SQL} as h,
                   row_number() over (partition by i.file_id, i.name order by i.instruction_id) as occ
            from instructions i where i.file_id in (select file_id from want)),
        cur as (select * from ins2 where file_id in (select file_id from flagged)),
        prev as (select pf.file_id, ins2.name, ins2.occ, ins2.h from ins2 join pf on ins2.file_id = pf.prev_file_id
                 where pf.file_id in (select file_id from flagged)),
        j as (select coalesce(c.file_id, p.file_id) as file_id, c.h as ch, p.h as ph
              from cur c full outer join prev p on c.file_id = p.file_id and c.name = p.name and c.occ = p.occ)
        select file_id, count(ch) as instructions, count(*) filter (where ph is null) as added,
               count(*) filter (where ch is null) as removed, count(*) filter (where ch <> ph) as changed
        from j group by file_id""")
    con.execute("""update counted set instructions = r.instructions, added = r.added, removed = r.removed,
                   changed = r.changed, repeated = false from redo r where counted.file_id = r.file_id""")


# --------------------------------------------------------------------------------- history

_STORY_SQL = """
    with x as (
        select pf.module, pf.file_id, pf.path, pf.pass_index, pf.pipeline, pf.pass_name, pf.substep,
               pf.prev_pass_index, pf.prev_pass_name, pf.not_dumped, t.text, t.h, t.line
        from pf left join t using (file_id)),
    y as (
        select *, lag(text) over w as before, lag(h) over w as ph, lag(line) over w as before_line
        from x window w as (order by pass_index, path)),
    z as (
        select *, case when text is not null and before is null then 'added'
                       when text is null and before is not null then 'removed'
                       when h <> ph then 'changed' end as change
        from y)
    select module, file_id, path, pass_index, pipeline, pass_name, substep, ?::varchar as instruction, change,
           before, text as after, before_line, line as after_line, prev_pass_index as before_pass_index,
           prev_pass_name as before_pass_name, not_dumped
    from z where change is not null
    order by pass_index, path
"""


@checked_analysis
def history(dump: "Dump", module: ModuleSel, instruction: str) -> pa.Table:
    """One instruction's story: one row per per-pass file where it was ``added``, ``changed``
    or ``removed`` (column ``change``) against the module's previous per-pass file, in pass
    order, with ``pass_index``, ``pipeline``, ``pass_name``, ``substep``, its text ``before``
    and ``after`` (``[ROOT ]%name = shape opcode(operands), attributes``; null where it is not
    in that file) and the lines of those texts in their files (``HISTORY_SCHEMA``); the file it
    is compared with is the previous one dumped (``before_pass_index``, ``before_pass_name``), and
    ``not_dumped`` > 0 says that passes between the two were not dumped: the change happened in
    one of them or in this one (``between_passes`` words it).

    ``module``: one module with per-pass files (key, name, id or unique substring; None when the
    dump holds one). ``instruction``: its name, with or without ``%``. A name that no per-pass
    file holds raises ``NoSuchInstruction`` (with similar names); an unknown or ambiguous
    module ``hlodump.analysis.NoSuchModule``. Should a file hold the name twice, its first
    occurrence is the one followed.
    """
    name = str(instruction).strip().lstrip("%")
    con = _connect(dump)
    (key,) = _choose_modules(dump, con, module, one=True)
    con.execute("delete from pf where module <> ?", [key])
    con.execute(f"""create temp table t as
        select i.file_id, {_TEXT_SQL} as text, {_HASH_SQL} as h, i.line
        from instructions i where i.name = ? and i.file_id in (select file_id from pf)
        qualify row_number() over (partition by i.file_id order by i.instruction_id) = 1""", [name])
    if con.sql("select count(*) from t").fetchall()[0][0] == 0:
        raise NoSuchInstruction(key, name, _close_names(con, name))
    t = _arrow(con.sql(_STORY_SQL, params=[name]))
    return _cast(t, HISTORY_SCHEMA)


def _close_names(con: "duckdb.DuckDBPyConnection", name: str) -> list[str]:
    names = [r[0] for r in con.sql("""select distinct i.name::varchar from instructions i
                                      where i.file_id in (select file_id from pf)""").fetchall()]
    return difflib.get_close_matches(name, names, n=5, cutoff=0.6)


# --------------------------------------------------------------------------------- one pass

def pass_changes(dump: "Dump", module: ModuleSel, pass_: Union[int, str]) -> pa.Table:
    """The instructions that the per-pass file(s) of one pass added, removed or changed, each
    with its text before and after (``HISTORY_SCHEMA``), in file order of the instructions.

    ``pass_``: a ``pass_index`` (int, or a string of digits) or a pass name (``pass_name``,
    every file of that name; also ``pipeline/pass_name``). ``module`` as in :func:`history`.
    """
    con = _connect(dump)
    (key,) = _choose_modules(dump, con, module, one=True)
    con.execute("delete from pf where module <> ?", [key])
    sel = str(pass_).strip()
    arg: list[Any]
    if sel.isdigit():
        where, arg = "pass_index = ?", [int(sel)]
    elif "/" in sel:
        pipe, _, pname = sel.partition("/")
        where, arg = "pipeline = ? and pass_name = ?", [pipe, pname]
    else:
        where, arg = "pass_name = ? or substep = ?", [sel, sel]
    con.execute(f"create temp table chosen as select file_id, prev_file_id from pf where {where}", arg)
    if con.sql("select count(*) from chosen").fetchall()[0][0] == 0:
        have = [f"{i} {p + '/' if p else ''}{n}" for i, p, n in con.sql(
            "select pass_index, pipeline, pass_name from pf order by pass_index").fetchall()]
        raise NoSuchPass(key, pass_, have)
    t = _arrow(con.sql(f"""
        with ins as (
            select i.file_id, i.name, i.instruction_id, i.line,
                   row_number() over (partition by i.file_id, i.name order by i.instruction_id) as occ,
                   {_TEXT_SQL} as text, {_HASH_SQL} as h
            from instructions i
            where i.file_id in (select file_id from chosen union select prev_file_id from chosen)),
        cur as (select c.file_id, ins.name, ins.occ, ins.text, ins.h, ins.line, ins.instruction_id
                from chosen c join ins using (file_id)),
        prev as (select c.file_id, ins.name, ins.occ, ins.text, ins.h, ins.line, ins.instruction_id
                 from chosen c join ins on ins.file_id = c.prev_file_id),
        j as (select coalesce(a.file_id, b.file_id) as file_id, coalesce(a.name, b.name) as instruction,
                     b.text as before, a.text as after, b.line as before_line, a.line as after_line,
                     case when b.h is null then 'added' when a.h is null then 'removed'
                          when a.h <> b.h then 'changed' end as change,
                     coalesce(a.instruction_id, -1) as cur_order, coalesce(b.instruction_id, -1) as prev_order
              from cur a full outer join prev b on a.file_id = b.file_id and a.name = b.name and a.occ = b.occ)
        select pf.module, j.file_id, pf.path, pf.pass_index, pf.pipeline, pf.pass_name, pf.substep,
               j.instruction, j.change, j.before, j.after, j.before_line, j.after_line,
               pf.prev_pass_index as before_pass_index, pf.prev_pass_name as before_pass_name, pf.not_dumped
        from j join pf using (file_id) where j.change is not null
        order by pf.pass_index, pf.path, coalesce(j.after_line, j.before_line), j.prev_order"""))
    return _cast(t, HISTORY_SCHEMA)


def _diff_labels(r0: dict[str, Any]) -> tuple[str, str]:
    """The ``---`` / ``+++`` names of one per-pass file's diff (a :func:`pass_changes` row)."""
    label = f"{r0['pass_index']:04d} {r0['pipeline']}/{r0['pass_name']}"
    prev = r0.get("before_pass_index")
    # against the previous file dumped, named as such (with a gap, not the pass just before)
    fromfile = (f"after {prev:04d} {r0.get('before_pass_name')} (the previous pass dumped"
                + (f"; {r0['not_dumped']} not dumped in between" if r0.get("not_dumped") else "") + ")"
                if prev is not None else f"before {label} (the module's first file dumped)")
    return fromfile, f"after {label} ({r0['path']})"


def unified_diff(changes: pa.Table, context: int = 0) -> str:
    """A unified diff of what :func:`pass_changes` returned, one hunk set per file: the changed
    and removed instructions' old lines against the changed and added ones' new lines (the
    changed lines only: no context; :func:`pass_diff` diffs the whole files, with context)."""
    out: list[str] = []
    rows = changes.to_pylist()
    for fid in dict.fromkeys(r["file_id"] for r in rows):
        mine = [r for r in rows if r["file_id"] == fid]
        old = [r["before"] for r in sorted((r for r in mine if r["before"] is not None), key=lambda r: r["before_line"])]
        new = [r["after"] for r in sorted((r for r in mine if r["after"] is not None), key=lambda r: r["after_line"])]
        fromfile, tofile = _diff_labels(mine[0])
        out.extend(difflib.unified_diff(old, new, fromfile=fromfile, tofile=tofile, n=context, lineterm=""))
    return "\n".join(out)


def pass_diff(dump: "Dump", module: ModuleSel, pass_: Union[int, str], context: int = 3) -> str:
    """A unified diff (``diff -u``) of the per-pass file(s) of one pass against the module's
    previous dumped file: every instruction line of both files in file order (computation
    headers too where the dump has the ``computations`` table), so each change is shown in
    place with ``context`` unchanged lines around it; "" when the pass changed nothing.
    ``module`` and ``pass_`` as in :func:`pass_changes` (whose errors it raises)."""
    if isinstance(context, bool) or not isinstance(context, int):
        raise TypeError(f"hlodump.analysis.passes.pass_diff: context must be an int, not {type(context).__name__}")
    if context < 0:
        raise ValueError(f"hlodump.analysis.passes.pass_diff: context must be 0 or more, not {context}")
    changes = pass_changes(dump, module, pass_)
    if not changes.num_rows:
        return ""
    firsts = {r["file_id"]: r for r in reversed(changes.to_pylist())}  # the first row of each file
    con = _connect(dump)
    con.register("cf", pa.table({"file_id": pa.array(list(firsts), pa.int32())}))
    prev = dict(con.execute("select file_id, prev_file_id from pf where file_id in (select file_id from cf)").fetchall())
    wanted = sorted({*firsts, *(p for p in prev.values() if p is not None)})
    con.register("wf", pa.table({"file_id": pa.array(wanted, pa.int32())}))
    parts = [f"select i.file_id, i.line, 1 as k, {_TEXT_SQL} as text from instructions i "
             "where i.file_id in (select file_id from wf)"]
    v = _views(dump)
    if "computations" in v:
        con.register("computations", v["computations"].select(
            ["file_id", "name", "is_entry", "signature", "result_shape", "line"]))
        parts.append("select c.file_id, c.line, 0 as k, (case when c.is_entry then 'ENTRY ' else '' end) || '%' || "
                     "c.name || ' ' || coalesce(c.signature, '') || ' -> ' || coalesce(c.result_shape, '') || ' {' "
                     "from computations c where c.file_id in (select file_id from wf)")
    texts: dict[int, list[str]] = {f: [] for f in wanted}
    for fid, _line, _k, text in con.execute(" union all ".join(parts) + " order by 1, 2, 3").fetchall():
        texts[fid].append(text)
    out: list[str] = []
    for fid, r0 in firsts.items():
        p = prev.get(fid)
        fromfile, tofile = _diff_labels(r0)
        out.extend(difflib.unified_diff(texts[p] if p is not None else [], texts[fid], fromfile=fromfile,
                                        tofile=tofile, n=context, lineterm=""))
    return "\n".join(out)


def between_passes(row: dict[str, Any]) -> Optional[str]:
    """For a :func:`history` or :func:`pass_changes` row compared across a gap (``not_dumped``
    > 0): "between pass 27 (dce) and 54 (algsimp), not dumped" — where the change happened is
    known to that span only. None when the previous pass was dumped."""
    n, prev = row.get("not_dumped") or 0, row.get("before_pass_index")
    if not n:
        return None
    lo, hi = (0 if prev is None else prev + 1), row["pass_index"] - 1
    span = f"pass {lo}" if lo == hi else f"passes {lo}–{hi}"
    if prev is None:
        return f"at or before pass {row['pass_index']} ({row['pass_name']}), {span} not dumped"
    return (f"between pass {prev} ({row['before_pass_name']}) and {row['pass_index']} ({row['pass_name']}), "
            f"{span} not dumped")


def gaps(table: pa.Table) -> list[dict[str, Any]]:
    """The gaps of a :func:`passes` table: per module, each run of pass numbers not dumped, as
    ``{"module", "first", "last", "count", "after_pass_index", "after_pass_name", "before_pass_index",
    "before_pass_name"}`` (``after_*`` None for a gap at the start)."""
    out = []
    for r in table.to_pylist():
        n = r.get("not_dumped") or 0
        if n:
            out.append({"module": r["module"], "first": r["pass_index"] - n, "last": r["pass_index"] - 1, "count": n,
                        "after_pass_index": r["prev_pass_index"], "after_pass_name": r["prev_pass_name"],
                        "before_pass_index": r["pass_index"], "before_pass_name": r["pass_name"]})
    return out
