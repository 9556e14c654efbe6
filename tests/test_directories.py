"""Dump directories in bulk: every file classified, directory reads == sum of file reads, threads,
DuckDB joins checked against numbers computed from the raw files, Parquet round trip, lists and
globs, a 70,000-file directory (maps / fds), big files among small ones, FIFOs and symlink loops.

Tests that need the HLO tables (``modules``/``instructions``) ``xfail`` for the Rust reader while
its HLO parser is a placeholder (no rows); they run for real as soon as it produces rows.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import stat
import threading
import time
from collections import Counter
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import hlodump

from conftest import DATA

CORPUS = os.path.join(DATA, "corpus")
DIRS = sorted(os.path.relpath(p, CORPUS) for p in glob.glob(os.path.join(CORPUS, "jax-*", "*")) if os.path.isdir(p))
PARSED = {"hlo_module", "buffer_assignment", "buffer_assignment_values", "live_range", "memory_usage_report",
          "debug_options", "compile_options", "proto_text"}
CF10 = os.path.join(CORPUS, "jax-0.10.2", "control_flow")


def _impl(name: str) -> Any:
    if name == "reference":
        from hlodump.reference import read_arrow

        return read_arrow
    pytest.importorskip("hlodump._core")
    import hlodump

    return hlodump.read_arrow


@functools.lru_cache(maxsize=None)
def read(impl: str, path: str, **kw: Any) -> Any:
    """Cached read (large_string text, so that pyarrow can filter and sort)."""
    return _impl(impl)(path, string_view=False, **kw)


def need_hlo(impl: str, d: Any) -> None:
    """xfail for the Rust reader while its HLO tables are empty (parser not landed)."""
    if impl == "rust" and d.modules.num_rows == 0 and "hlo_module" in d.files["kind"].to_pylist():
        pytest.xfail("Rust HLO parser not landed yet: modules/instructions empty")


@pytest.fixture(params=["reference", "rust"])
def impl(request: pytest.FixtureRequest) -> str:
    _impl(request.param)
    return request.param


# ------------------------------------------------------------------ classification of every file

_STAGE = re.compile(
    r"^module_(\d{4})\.([A-Za-z0-9_]+)\.(before_optimizations|cpu_after_optimizations)"
    r"(-buffer-assignment-values|-buffer-assignment|-live-range|-memory-usage-report)?\.txt$")
_PASS1 = re.compile(r"^module_(\d{4})\.([A-Za-z0-9_]+)\.(\d{4})\.([A-Za-z0-9_-]+)\.after_(.+?)\.before_(.+)\.txt$")
_PASS2 = re.compile(r"^module_(\d{4})\.([A-Za-z0-9_]+)\.(\d{4})\.([A-Za-z0-9_-]+)\.(after_[A-Za-z0-9_-]+)\.txt$")
_DEBUG = re.compile(r"^module_(\d{4})\.([A-Za-z0-9_]+)\.debug_options$")
_SUB = re.compile(r"^module_(\d{4})\.([A-Za-z0-9_]+)/(module\.mlir|compile_options\.textproto|topology\.textproto)$")
# jax 0.7.2-0.9.2: a folder per compile named <jit name>_<unique id>/, no module number
_SUB_OLD = re.compile(r"^([A-Za-z0-9_]+)_(\d{10,})/(module\.mlir|compile_options\.pb|topology\.pb)$")
# per-kernel MLIR (jax 0.6.2-0.9.2)
_KERNEL = re.compile(r"^module_(\d{4})\.([A-Za-z0-9_]+)\.([A-Za-z0-9_.-]+)-(pre-optimization|post-optimization|"
                     r"post-lowering)\.mlir$")
_SUFFIX_KIND = {None: "hlo_module", "-buffer-assignment-values": "buffer_assignment_values",
                "-buffer-assignment": "buffer_assignment", "-live-range": "live_range",
                "-memory-usage-report": "memory_usage_report"}
NAME_COLS = ("kind", "module_id", "module_name", "stage", "backend", "pass_index", "pipeline",
             "after_pass", "before_pass", "substep")


def expected_from_name(path: str) -> dict[str, Any]:
    """What the corpus file names say, written independently of the classifiers (regexes for the
    forms jax writes)."""
    none = dict.fromkeys(NAME_COLS)
    if m := _STAGE.match(path):
        after = m[3] != "before_optimizations"
        return {**none, "kind": _SUFFIX_KIND[m[4]], "module_id": int(m[1]), "module_name": m[2],
                "stage": "after_optimizations" if after else "before_optimizations",
                "backend": "cpu" if after else None}
    if m := _PASS1.match(path):
        return {**none, "kind": "hlo_module", "module_id": int(m[1]), "module_name": m[2], "stage": "pass",
                "pass_index": int(m[3]), "pipeline": m[4], "after_pass": m[5], "before_pass": m[6]}
    if m := _PASS2.match(path):
        return {**none, "kind": "hlo_module", "module_id": int(m[1]), "module_name": m[2], "stage": "pass",
                "pass_index": int(m[3]), "after_pass": m[4], "substep": m[5]}
    if m := _DEBUG.match(path):
        return {**none, "kind": "debug_options", "module_id": int(m[1]), "module_name": m[2]}
    if m := _SUB.match(path):  # per-module folder: the module comes from the folder (schema.py)
        return {**none, "kind": "other", "module_id": int(m[1]), "module_name": m[2]}
    if _SUB_OLD.match(path):  # the folder names no module number: no module
        return {**none, "kind": "other"}
    if m := _KERNEL.match(path):
        return {**none, "kind": "other", "module_id": int(m[1]), "module_name": m[2]}
    raise AssertionError(f"unexpected corpus file name: {path}")


# A handful of exact rows per directory (all name columns, plus content_kind and parsed).
EXACT = {
    "jax-0.4.26/transformer": {
        "module_0000.jit_train_step.0045.copy-insertion.after_adding_copies_to_resolve_interference.txt":
            ("hlo_module", 0, "jit_train_step", "pass", None, 45, None, "copy-insertion", None,
             "after_adding_copies_to_resolve_interference", "hlo_module", True),
        "module_0001.jit_forward.0039.HLO_passes_after_layout_assignment.after_copy-insertion.before_dce.txt":
            ("hlo_module", 1, "jit_forward", "pass", None, 39, "HLO_passes_after_layout_assignment",
             "copy-insertion", "dce", None, "hlo_module", True),
        "module_0001.jit_forward.cpu_after_optimizations-buffer-assignment.txt":
            ("buffer_assignment", 1, "jit_forward", "after_optimizations", "cpu", None, None, None, None,
             None, "buffer_assignment", True),
    },
    "jax-0.10.2/transformer": {
        "module_0000.jit_train_step.0056.HLO_passes_after_scheduling.after_pipeline-start.before_apply-xla-transforms.txt":
            ("hlo_module", 0, "jit_train_step", "pass", None, 56, "HLO_passes_after_scheduling",
             "pipeline-start", "apply-xla-transforms", None, "hlo_module", True),
        "module_0002.jit_forward/module.mlir":
            ("other", 2, "jit_forward", None, None, None, None, None, None, None, "unknown", False),
        "module_0002.jit_forward.debug_options":
            ("debug_options", 2, "jit_forward", None, None, None, None, None, None, None, "debug_options", True),
    },
    "jax-0.10.2/control_flow": {
        "module_0022.jit_branches.cpu_after_optimizations-buffer-assignment-values.txt":
            ("buffer_assignment_values", 22, "jit_branches", "after_optimizations", "cpu", None, None, None,
             None, None, "buffer_assignment_values", True),
        "module_0022.jit_branches.cpu_after_optimizations-live-range.txt":
            ("live_range", 22, "jit_branches", "after_optimizations", "cpu", None, None, None, None, None,
             "live_range", True),
        "module_0030.jit__lambda.before_optimizations.txt":
            ("hlo_module", 30, "jit__lambda", "before_optimizations", None, None, None, None, None, None,
             "hlo_module", True),
        "module_0032.jit__lambda/topology.textproto":
            ("proto_text", 32, "jit__lambda", None, None, None, None, None, None, None, "proto_text", True),
    },
    "jax-0.4.26/control_flow": {
        "module_0001.jit_rnn_loss.cpu_after_optimizations-buffer-assignment.txt":
            ("buffer_assignment", 1, "jit_rnn_loss", "after_optimizations", "cpu", None, None, None, None,
             None, "buffer_assignment", True),
    },
    "jax-0.10.2/spmd": {
        "module_0012.jit_ring.cpu_after_optimizations-memory-usage-report.txt":
            ("memory_usage_report", 12, "jit_ring", "after_optimizations", "cpu", None, None, None, None,
             None, "memory_usage_report", True),
    },
    "jax-0.4.26/misc": {
        "module_0000.jit__lambda_.cpu_after_optimizations.txt":
            ("hlo_module", 0, "jit__lambda_", "after_optimizations", "cpu", None, None, None, None, None,
             "hlo_module", True),
    },
}


def walked(root: str) -> list[str]:
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/") for n in names]
    return sorted(out)


@pytest.mark.parametrize("sub", DIRS)
def test_every_file_classified_by_its_name(impl: str, sub: str) -> None:
    root = os.path.join(CORPUS, sub)
    files = read(impl, root).files.to_pylist()
    assert [f["path"] for f in files] == walked(root)  # every file, sorted, relative, POSIX
    assert [f["file_id"] for f in files] == list(range(len(files)))
    for f in files:
        got, want = {c: f[c] for c in NAME_COLS}, expected_from_name(f["path"])
        if f["path"].endswith("/compile_options.textproto"):  # its content says what it is
            want["kind"] = "compile_options"
        if f["path"].endswith("/topology.textproto"):  # protobuf text, read into options
            want["kind"] = "proto_text"
        if _KERNEL.match(f["path"]):  # its module_name is wrong: test_corpus_releases.py, xfail
            got.pop("module_name"), want.pop("module_name")
        assert got == want, f["path"]
        assert f["error"] is None
        assert f["size_bytes"] == os.path.getsize(os.path.join(root, f["path"]))
        assert f["parsed"] == (f["kind"] in PARSED)
        # the content agrees with the name for everything jax writes, except per-module folders
        assert f["content_kind"] == (f["kind"] if f["kind"] != "other" else "unknown"), f["path"]
    for path, want in EXACT.get(sub, {}).items():
        (row,) = [f for f in files if f["path"] == path]
        assert tuple(row[c] for c in NAME_COLS + ("content_kind", "parsed")) == want, path
    # every per-module folder belongs to a module that has files of its own
    ids = {f["module_id"] for f in files if "/" not in f["path"]}
    names = {f["module_name"] for f in files if "/" not in f["path"]}
    for f in files:
        if m := _SUB.match(f["path"]):
            assert int(m[1]) in ids
        elif m := _SUB_OLD.match(f["path"]):
            assert m[1] in names
    # per-pass dumps exist exactly in the transformer dumps
    assert any(f["stage"] == "pass" for f in files) == sub.endswith("transformer")


# ------------------------------------------------------- directory read == sum of per-file reads


def _table_sums(d: Any) -> dict[str, Any]:
    return {name: t.num_rows for name, t in d.items() if name != "files"} | {
        "allocation_bytes": pc.sum(d.allocations["size"]).as_py() or 0,
        "assignment_bytes": pc.sum(d.assignments["size"]).as_py() or 0,
    }


@pytest.mark.parametrize("sub", DIRS)
def test_directory_equals_sum_of_files(impl: str, sub: str) -> None:
    root = os.path.join(CORPUS, sub)
    whole = read(impl, root)
    files = whole.files.to_pylist()
    total: Counter = Counter()
    for f in files:
        if f["content_kind"] == "unknown":
            from hlodump.reference import files as names

            path = os.path.join(root, f["path"])
            if names.is_side_output(path, names.classify_path(path)):
                # what XLA writes beside its text (.mlir, .ll, .o …): an other row, named or not
                (row,) = _impl(impl)(path).files.to_pylist()
                assert row["kind"] == "other" and not row["parsed"]
                continue
            # named alone, a file that is none of our formats is an error, never zero rows
            with pytest.raises(hlodump.ParseError, match="not an XLA dump file"):
                _impl(impl)(path, string_view=False)
            continue
        one = _impl(impl)(os.path.join(root, f["path"]), string_view=False)
        total.update(_table_sums(one))
        # the same rows, file for file (file_id is 0 in a single-file read; a file named alone is
        # a dump of its own)
        (row,) = one.files.to_pylist()
        assert row["dump"] == os.path.join(root, f["path"]) and f["dump"] == root
        assert {k: v for k, v in row.items() if k not in ("path", "file_id", "dump")} == \
            {k: v for k, v in f.items() if k not in ("path", "file_id", "dump")}
        for name, t in one.items():
            if name == "files":
                continue
            part = whole[name].filter(pc.equal(whole[name]["file_id"], f["file_id"]))
            assert part.drop_columns(["file_id"]).equals(t.drop_columns(["file_id"])), (name, f["path"])
    want = _table_sums(whole)
    assert {k: total[k] for k in want} == want
    assert want["allocations"] > 0 and want["allocation_bytes"] > 0


@pytest.mark.parametrize("sub", DIRS)
def test_threads_and_mmap_do_not_change_tables(sub: str) -> None:
    root = os.path.join(CORPUS, sub)
    base = read("rust", root)
    for kw in ({"threads": 1}, {"threads": 3}, {"mmap": True}, {"mmap": False}):
        other = _impl("rust")(root, string_view=False, **kw)
        assert list(other) == list(base)
        for name in base:
            assert other[name].equals(base[name]), (kw, name)


def test_rust_directory_equals_reference_buffer_tables() -> None:
    """The buffer-assignment family tables of whole directories, Rust vs reference."""
    for sub in DIRS:
        r, ref = read("rust", os.path.join(CORPUS, sub)), read("reference", os.path.join(CORPUS, sub))
        for name in ("files", "allocations", "assignments", "values", "schedule", "live_ranges", "peak",
                     "peak_breakdown", "memory_report", "totals"):
            assert r[name].equals(ref[name]), (sub, name)


# ---------------------------------------------------------------- DuckDB joins vs the raw files

_VALUE_LINE = re.compile(r"^ value: <(\d+) (\S+?)(\{[\d,]*\})?( \(phi\))?( @\d+)?> \(size=(\d+),offset=(\d+)\)")
_ALLOC_LINE = re.compile(r"^allocation (\d+): size (\d+)")
_VALUE_HEADER = re.compile(r"<(\d+) [^<>\n]*>\n positions:")
_LIVE = re.compile(r"^    (\S+?)(\{[\d,]*\}):(\d+)-(\d+)$")
_INSTR = re.compile(r"^  (?:ROOT )?%?(\S+) = ")

JOIN_SQL = """
select fa.module_id,
       count(distinct s.allocation)                                 as n_alloc,
       count(*)                                                     as n_assign,
       sum(s.size)                                                  as assigned_bytes,
       count(v.value_id)                                            as with_value,
       count(lr.buffer)                                             as with_live_range,
       count(i.name)                                                as with_instruction,
       count(*) filter (where i.opcode = 'parameter')               as n_param,
       count(*) filter (where v.defining_opcode = i.opcode)         as opcode_agrees
from assignments s
join files fa using (file_id)
left join (values v join files fv on fv.file_id = v.file_id)
       on fv.module_id = fa.module_id and v.value_id = s.value_id
left join (live_ranges lr join files fl on fl.file_id = lr.file_id)
       on fl.module_id = fa.module_id and lr.instruction = s.instruction
      and lr.shape_index = if(s.shape_index = '', '{}', s.shape_index)
left join (instructions i join files fi on fi.file_id = i.file_id
           and fi.kind = 'hlo_module' and fi.stage = 'after_optimizations')
       on fi.module_id = fa.module_id and i.name = s.instruction
group by all order by 1
"""


def _raw_join(root: str) -> dict[int, tuple]:
    """JOIN_SQL's numbers computed from the raw text files (regexes), per module."""
    texts: dict[int, dict[str, str]] = {}
    for p in sorted(os.listdir(root)):
        m = re.match(r"module_(\d{4})\..*cpu_after_optimizations(-[a-z-]+)?\.txt$", p)
        if m:
            with open(os.path.join(root, p), encoding="utf-8") as fh:
                texts.setdefault(int(m[1]), {})[m[2] or "hlo"] = fh.read()
    out = {}
    for mid, t in texts.items():
        everything = "\n".join(t.values())
        ba = t["-buffer-assignment"]
        value_ids = {int(x) for x in _VALUE_HEADER.findall(everything)}
        live = {(m[1], m[2]) for line in everything.splitlines() if (m := _LIVE.match(line))}
        instrs = {}
        for line in t["hlo"].splitlines():
            if m := _INSTR.match(line):
                instrs[m[1]] = "parameter" if " parameter(" in line else "?"
        allocs, n, nbytes, with_v, with_lr, with_i, n_param = set(), 0, 0, 0, 0, 0, 0
        current = None
        for line in ba.splitlines():
            if m := _ALLOC_LINE.match(line):
                current = int(m[1])
            elif m := _VALUE_LINE.match(line):
                allocs.add(current)
                n += 1
                nbytes += int(m[6])
                with_v += int(m[1]) in value_ids
                with_lr += (m[2], m[3] or "{}") in live
                with_i += m[2] in instrs
                n_param += instrs.get(m[2]) == "parameter"
        out[mid] = (len(allocs), n, nbytes, with_v, with_lr, with_i, n_param)
    return out


@pytest.mark.parametrize("version", ["jax-0.4.26", "jax-0.10.2"])
def test_duckdb_join_allocations_values_live_ranges_instructions(impl: str, version: str) -> None:
    root = os.path.join(CORPUS, version, "control_flow")
    d = read(impl, root)
    rows = d.to_duckdb().sql(JOIN_SQL).fetchall()
    raw = _raw_join(root)
    assert sorted(raw) == [r[0] for r in rows]
    # without the HLO tables: allocation / assignment / value / live-range numbers
    assert {r[0]: r[1:6] for r in rows} == {k: v[:5] for k, v in raw.items()}
    # known numbers (jax 0.10.2 jit_rnn_loss, 0.4.26 jit_branches), checked by hand in the files
    if version == "jax-0.10.2":
        assert raw[2][:5] == (29, 103, 32818, 103, 91)
        assert raw[22][:5] == (6, 6, 84, 6, 6)
    need_hlo(impl, d)
    assert {r[0]: (r[6], r[7]) for r in rows} == {k: v[5:7] for k, v in raw.items()}
    for r in rows:  # every assigned value is an instruction of the optimized module
        assert r[6] == r[2], r
        # the opcode parsed from "from instruction:" is the instruction's opcode
        assert r[8] == r[4], r


def test_duckdb_biggest_allocations_with_defining_instruction(impl: str) -> None:
    d = read(impl, CF10)
    rows = d.to_duckdb().sql("""
        select f.module_name, a.allocation, a.size, s.instruction, i.opcode, i.op_name, i.source_line
        from allocations a
        join files f using (file_id)
        join assignments s on s.file_id = a.file_id and s.allocation = a.allocation
        left join (instructions i join files fi on fi.file_id = i.file_id and fi.stage = 'after_optimizations'
                   and fi.kind = 'hlo_module') on fi.module_id = f.module_id and i.name = s.instruction
        where f.module_id = 2
        order by a.size desc, s.offset, s.value_id limit 3
    """).fetchall()
    # allocation 28 (size 6032, preallocated-temp) is the biggest of module_0002; its value at
    # offset 0 with the lowest id is bitcast_dynamic-update-slice_fusion.2 (grep the files)
    assert [r[:4] for r in rows] == [("jit_rnn_loss", 28, 6032, "bitcast_dynamic-update-slice_fusion.2"),
                                     ("jit_rnn_loss", 28, 6032, "wrapped_broadcast.1"),
                                     ("jit_rnn_loss", 28, 6032, "arg_tuple.3")]
    need_hlo(impl, d)
    # its op_name from metadata, its source line from the stack-frame tables (stack_frame_id=26)
    assert rows[0][4:] == ("fusion", "jit(rnn_loss)/jvp()/while/body/jit(dynamic_update_index_in_dim)/"
                           "dynamic_update_slice", 28)
    assert [r[4] for r in rows[1:]] == ["fusion", "parameter"]


# instruction count after a few passes: `grep -c '^  ' FILE` (instruction lines are the only
# lines indented by two spaces in these dumps; the test recomputes it for every pass file too)
@pytest.mark.parametrize("version,module,checks", [
    ("jax-0.4.26", 0, {0: 1011, 35: 863, 40: 2167, 48: 2158}),
    ("jax-0.10.2", 0, {0: 1108, 40: 1002, 45: 2427, 56: 2414}),
    ("jax-0.10.2", 2, {0: 349, 40: 493, 45: 493}),
])
def test_per_pass_instruction_counts_in_pass_order(impl: str, version: str, module: int, checks: dict) -> None:
    root = os.path.join(CORPUS, version, "transformer")
    d = read(impl, root)
    rows = d.to_duckdb().sql(f"""
        select f.pass_index, f.pipeline, f.after_pass, f.path, count(i.file_id) as n
        from files f left join instructions i using (file_id)
        where f.module_id = {module} and f.stage = 'pass'
        group by all order by f.pass_index
    """).fetchall()
    paths = sorted(p for p in os.listdir(root) if re.match(rf"module_{module:04d}\.[^.]+\.\d{{4}}\.", p))
    assert [r[3] for r in rows] == paths  # pass order == name order for 4-digit indices
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    assert set(checks) <= {r[0] for r in rows}
    need_hlo(impl, d)
    assert {r[0]: r[4] for r in rows if r[0] in checks} == checks
    for r in rows:
        with open(os.path.join(root, r[3]), encoding="utf-8") as fh:
            indented = sum(1 for line in fh if line.startswith("  "))  # grep -c '^  '
        assert r[4] == indented > 0, r[3]


def test_fusion_kinds_per_module(impl: str) -> None:
    d = read(impl, CF10)
    need_hlo(impl, d)
    rows = d.to_duckdb().sql("""
        select f.module_id, i.fusion_kind, count(*) from instructions i join files f using (file_id)
        where f.stage = 'after_optimizations' and i.opcode = 'fusion' group by all order by all
    """).fetchall()
    raw: Counter = Counter()
    for p in os.listdir(CF10):
        if p.endswith(".cpu_after_optimizations.txt"):
            with open(os.path.join(CF10, p), encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("  ") and " fusion(" in line:
                        raw[(int(p[7:11]), re.search(r"kind=(k\w+)", line)[1])] += 1
    assert {(a, b): c for a, b, c in rows} == raw


# ------------------------------------------------------------- Parquet, lists, globs, tables=


def test_parquet_round_trip(tmp_path: Any) -> None:
    import hlodump

    for sub in ("jax-0.4.26/control_flow", "jax-0.10.2/transformer"):
        d = hlodump.read_arrow(os.path.join(CORPUS, sub))
        out = tmp_path / sub.replace("/", "_")
        paths = d.write_parquet(out)
        assert sorted(os.path.basename(p) for p in paths) == sorted(f"{n}.parquet" for n in d)
        for name, t in d.items():
            back = pq.read_table(out / f"{name}.parquet")
            assert back.num_rows == t.num_rows
            # string_view is written as string; compare as large_string
            from hlodump.schema import schema

            assert back.cast(schema(name, False)).equals(t.cast(schema(name, False))), name
            assert pq.ParquetFile(out / f"{name}.parquet").metadata.row_group(0).column(0).compression == "ZSTD" \
                if t.num_rows else True


def test_list_and_glob(impl: str) -> None:
    a = os.path.join(CORPUS, "jax-0.4.26", "control_flow")
    b = CF10
    both = _impl(impl)([a, b], string_view=False)
    ra, rb = read(impl, a), read(impl, b)
    assert both.files.num_rows == ra.files.num_rows + rb.files.num_rows
    paths = both.files["path"].to_pylist()
    assert len(set(paths)) == len(paths)  # same relative names in both: shown with their directory
    assert paths[0].startswith(a.replace(os.sep, "/") + "/")
    for name in ra:
        if name != "files":
            assert both[name].num_rows == ra[name].num_rows + rb[name].num_rows, name
    # file_ids continue over the list; b's rows are shifted by len(a)
    n = ra.files.num_rows
    assert both.allocations.filter(pc.greater_equal(both.allocations["file_id"], n)).drop_columns(
        ["file_id"]).equals(rb.allocations.drop_columns(["file_id"]))
    # a glob over files
    g = _impl(impl)(os.path.join(b, "*-buffer-assignment.txt"), string_view=False)
    assert g.files.num_rows == 12 and set(g.files["kind"].to_pylist()) == {"buffer_assignment"}
    assert g.allocations.num_rows == rb.allocations.num_rows
    # a glob over directories walks them, in sorted order of the matches (0.10.2 before 0.4.13)
    g2 = _impl(impl)(os.path.join(CORPUS, "jax-*", "control_flow"), string_view=False)
    matched = sorted(glob.glob(os.path.join(CORPUS, "jax-*", "control_flow")))
    assert len(matched) >= 12 and matched[0] == b
    assert g2.files["path"].to_pylist() == [
        f"{m.replace(os.sep, '/')}/{p}" for m in matched for p in walked(m)]
    assert g2.files["path"].to_pylist()[:len(paths) - n] == paths[n:]
    # a recursive glob
    g3 = _impl(impl)(os.path.join(b, "**", "*.mlir"), string_view=False)
    assert g3.files.num_rows == 12 and set(g3.files["kind"].to_pylist()) == {"other"}


def test_tables_subset_is_consistent() -> None:
    import hlodump

    full = read("rust", CF10)
    part = hlodump.read_arrow(CF10, tables=["allocations"], string_view=False)
    assert list(part) == ["files", "allocations", "errors", "notes"]
    # files: as in the full read, except that formats without allocations (HLO text, the
    # memory-usage report) were not parsed
    assert part.allocations.equals(full.allocations)
    assert part.files.drop_columns(["parsed"]).equals(full.files.drop_columns(["parsed"]))
    assert part.files["parsed"].to_pylist() == [
        f["parsed"] and f["content_kind"] not in ("hlo_module", "memory_usage_report", "debug_options",
                                                  "compile_options", "proto_text")
        for f in full.files.to_pylist()]


# ------------------------------------------------------------ FIFOs, symlink loops, bad files


def test_fifo_symlink_loops_and_unreadable_never_block(impl: str, tmp_path: Any) -> None:
    src = os.path.join(CF10, "module_0022.jit_branches.cpu_after_optimizations-buffer-assignment.txt")
    d = tmp_path / "dump"
    (d / "sub").mkdir(parents=True)
    shutil.copy(src, d / "a-buffer-assignment.txt")
    os.mkfifo(d / "b.fifo")
    os.symlink("c.loop", d / "c.loop")  # a link to itself
    os.symlink("..", d / "sub" / "up")  # a directory loop
    os.symlink(str(d / "a-buffer-assignment.txt"), d / "sub" / "d-link.txt")  # a good file link
    os.symlink("missing", d / "e.broken")
    (d / "f.bin").write_bytes(b"\xff\xfe\x00binary")
    (d / "g.txt").write_bytes(b"")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(src, elsewhere / "h-buffer-assignment.txt")
    os.symlink(str(elsewhere), d / "sub" / "linked_dir")  # a directory link out of the dump

    result: dict = {}
    th = threading.Thread(target=lambda: result.update(d=_impl(impl)(str(d), string_view=False)), daemon=True)
    th.start()
    th.join(60)
    assert not th.is_alive(), "reading a directory with a FIFO / symlink loop blocked"
    rows = {f["path"]: f for f in result["d"].files.to_pylist()}
    assert list(rows) == sorted(rows)
    assert set(rows) == {"a-buffer-assignment.txt", "b.fifo", "c.loop", "e.broken", "f.bin", "g.txt",
                         "sub/d-link.txt", "sub/linked_dir", "sub/up"}
    assert rows["b.fifo"]["error"] == "OSError: not a regular file"
    # links are followed only inside the directory read, and each (device, inode) is read once
    assert rows["sub/up"]["error"] == "OSError: same directory as ."  # sub/.. is the dump itself
    assert rows["sub/linked_dir"]["error"].startswith(f"OSError: symlink to {elsewhere} leaves the directory read")
    assert rows["sub/d-link.txt"]["error"] == "OSError: same file as a-buffer-assignment.txt"
    assert rows["c.loop"]["error"] == "OSError: Too many levels of symbolic links"
    assert rows["e.broken"]["error"] == "FileNotFoundError: No such file or directory"
    for p in ("b.fifo", "c.loop", "e.broken", "sub/up", "sub/d-link.txt", "sub/linked_dir"):
        assert rows[p]["parsed"] is False and rows[p]["size_bytes"] == 0 and rows[p]["content_kind"] is None
    assert rows["a-buffer-assignment.txt"]["error"] is None and rows["a-buffer-assignment.txt"]["parsed"]
    assert (rows["f.bin"]["content_kind"], rows["f.bin"]["parsed"]) == ("unknown", False)
    assert (rows["g.txt"]["content_kind"], rows["g.txt"]["size_bytes"]) == ("empty", 0)
    assert result["d"].allocations.num_rows == 6
    # follow_links=True: the link out of the dump is read (the one to ".." still meets "." again)
    rows = {f["path"]: f for f in _impl(impl)(str(d), string_view=False, follow_links=True).files.to_pylist()}
    assert "sub/linked_dir/h-buffer-assignment.txt" in rows and "sub/linked_dir" not in rows
    assert rows["sub/linked_dir/h-buffer-assignment.txt"]["kind"] == "buffer_assignment"
    assert rows["sub/linked_dir/h-buffer-assignment.txt"]["parsed"]
    # named explicitly, a FIFO is an error, not a hang
    with pytest.raises(OSError):
        _impl(impl)(str(d / "b.fifo"))
    with pytest.raises(FileNotFoundError):
        _impl(impl)(str(d / "nope.txt"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable files")
def test_unreadable_file_is_an_error_row(impl: str, tmp_path: Any) -> None:  # pragma: no cover
    (tmp_path / "x.txt").write_text("HloModule m\n")
    os.chmod(tmp_path / "x.txt", 0)
    try:
        (row,) = _impl(impl)(str(tmp_path)).files.to_pylist()
        assert row["error"] == "PermissionError: Permission denied"
    finally:
        os.chmod(tmp_path / "x.txt", stat.S_IRUSR | stat.S_IWUSR)


# -------------------------------------------------------------------------------- scale


def _count_maps() -> int:
    with open("/proc/self/maps", encoding="ascii", errors="replace") as fh:
        return sum(1 for _ in fh)


def _count_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
def test_70k_small_files_no_map_or_fd_exhaustion(tmp_path: Any) -> None:
    import hlodump

    pytest.importorskip("hlodump._core")
    n = 70_000
    seeds = sorted(p for p in glob.glob(os.path.join(CF10, "module_00[23]*-*.txt")) if os.path.getsize(p) < 2600)
    assert len(seeds) >= 8
    seed_dir, d = tmp_path / "seed", tmp_path / "d"
    seed_dir.mkdir()
    d.mkdir()
    names = []
    for s in seeds:
        shutil.copy(s, seed_dir)
        names.append(os.path.basename(s))
    t0 = time.monotonic()
    for i in range(n):  # hard links: 70,000 directory entries, no disk space
        base = names[i % len(names)]
        os.link(seed_dir / base, d / f"module_{i:06d}{base[11:]}")
    gen = time.monotonic() - t0

    maps0, fds0 = _count_maps(), _count_fds()
    peak = {"maps": maps0, "fds": fds0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak["maps"] = max(peak["maps"], _count_maps())
            peak["fds"] = max(peak["fds"], _count_fds())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.monotonic()
    dump = hlodump.read_arrow(str(d), progress=False)
    took = time.monotonic() - t0
    stop.set()
    sampler.join()
    after_maps = _count_maps()
    print(f"\n70k files: generated in {gen:.1f}s, read in {took:.2f}s; maps {maps0} -> peak {peak['maps']} "
          f"-> {after_maps}; fds {fds0} -> peak {peak['fds']} -> {_count_fds()}")

    assert dump.files.num_rows == n
    assert dump.files["file_id"].to_pylist() == list(range(n))
    assert pc.all(pc.is_null(dump.files["error"])).as_py()
    assert pc.all(dump.files["parsed"]).as_py()
    assert dump.files["module_id"].to_pylist()[:3] == [0, 1, 2]
    # per-seed rows times the number of copies of each seed
    per_seed = {b: hlodump.read_arrow(str(seed_dir / b)) for b in names}
    for table in ("allocations", "live_ranges", "memory_report"):
        want = sum(per_seed[names[i % len(names)]][table].num_rows for i in range(len(names))) * (n // len(names)) \
            + sum(per_seed[names[i % len(names)]][table].num_rows for i in range(n % len(names)))
        assert dump[table].num_rows == want, table
    # arenas, not one chunk per file
    assert dump.allocations["size"].num_chunks < 200
    assert peak["maps"] < maps0 + 1_000 < 65_530
    assert after_maps < maps0 + 1_000
    assert peak["fds"] < fds0 + 64
    assert _count_fds() == fds0
    del dump
    assert took < 30


def test_big_file_among_small_ones_keeps_file_order(tmp_path: Any) -> None:
    """A file larger than an arena (64 MiB, mapped on its own) between small files."""
    import hlodump

    pytest.importorskip("hlodump._core")
    n_alloc = 800_000
    lines = ["BufferAssignment:"]
    for i in range(n_alloc):
        lines.append(f"allocation {i}: size {i % 97 + 1}, maybe-live-out:")
        lines.append(f" value: <{i} fusion.{i} @0> (size={i % 97 + 1},offset=0): f32[{i % 97 + 1}]{{0}}")
    big = ("\n".join(lines) + "\n").encode()
    assert len(big) > (64 << 20)
    small = os.path.join(CF10, "module_0022.jit_branches.cpu_after_optimizations-buffer-assignment.txt")
    for i in range(5):
        shutil.copy(small, tmp_path / f"m{i}-buffer-assignment.txt")
    (tmp_path / "m2-buffer-assignment.txt").write_bytes(big)  # in the middle
    for mmap in (None, False):
        d = hlodump.read_arrow(str(tmp_path), mmap=mmap, tables=["allocations"], string_view=False)
        assert d.files["size_bytes"].to_pylist() == [738, 738, len(big), 738, 738]
        ids = d.allocations["file_id"].to_pylist()
        assert ids == sorted(ids)  # rows in file order
        assert Counter(ids) == {0: 6, 1: 6, 2: n_alloc, 3: 6, 4: 6}
        first_big = ids.index(2)
        assert d.allocations["allocation"][first_big].as_py() == 0
        assert d.allocations["size"][first_big + n_alloc - 1].as_py() == (n_alloc - 1) % 97 + 1
        assert pc.sum(d.allocations["size"]).as_py() == 4 * 84 + sum(i % 97 + 1 for i in range(n_alloc))
