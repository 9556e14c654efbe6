"""Dictionary-encoded text columns (``hlodump.schema``, type ``D``): ``d.views`` holds them as
``dictionary<int32, large_string>``, ``d.<table>`` (the default) as ``large_string`` like every text
column, and every hand-over — Polars, DuckDB, Parquet, Arrow C streams, ``scan`` batches, Ray,
the CLI — takes them, with the values of the large_string form."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hlodump
import hlodump.reference
from hlodump.dump import to_large_strings
from hlodump.schema import SCHEMAS, schema

from conftest import DATA, ROOT

pytest.importorskip("hlodump._core")

CF10 = Path(DATA) / "corpus" / "jax-0.10.2" / "control_flow"
D = pa.dictionary(pa.int32(), pa.large_string())
INSTR_DICT = ["opcode", "shape", "op_name", "op_type", "source_file", "source_function", "custom_call_target",
              "fusion_kind", "sharding"]

THUNKS = """kKernel          \tfusion.1
kWhile           \twhile.2
  condition:
    kKernel      \tcond.3
  body:
    kKernel      \tfusion.4
    kCopy        \tcopy.5
kKernel          \tfusion.1
"""


def dict_columns(name: str) -> list[str]:
    return [f.name for f in SCHEMAS[name] if f.type == D]


def test_the_big_low_cardinality_columns_are_dictionaries() -> None:
    assert set(INSTR_DICT) <= set(dict_columns("instructions"))
    # backend_config stays a view although nearly every row is null: a TPU kernel body can be
    # megabytes, which a dictionary would copy (issue 26)
    for t, c in [("instructions", "name"), ("instructions", "attributes"), ("instructions", "backend_config"),
                 ("values", "defining_instruction"), ("assignments", "instruction")]:
        assert SCHEMAS[t].field(c).type == pa.string_view(), (t, c)  # mostly unique: views
    for t in ["assignments", "values", "live_ranges", "peak"]:
        assert SCHEMAS[t].field("shape_index").type == D, t
    for c in ["kind", "stage", "backend", "dump"]:
        assert SCHEMAS["files"].field(c).type == D
    for c in ["positions", "uses"]:  # inside list<struct<…>> items too
        assert SCHEMAS["values"].field(c).type.value_type.field("shape_index").type == D


@pytest.fixture(scope="module")
def dump() -> hlodump.Dump:
    return hlodump.read_arrow(CF10, progress=False)


def test_views_are_dictionaries_and_d_x_is_large_string(dump: hlodump.Dump) -> None:
    large = hlodump.read_arrow(CF10, string_view=False, progress=False)
    for name in dump:
        v = dump.views[name]
        assert v.schema == SCHEMAS[name], name
        assert dump[name].schema == schema(name, False) == large[name].schema, name
        for c in dict_columns(name):
            for chunk in v.column(c).chunks:  # one dictionary per batch: the distinct values once
                assert chunk.type == D
                vals = chunk.dictionary.to_pylist()
                assert len(vals) == len(set(vals)), (name, c)
                assert chunk.indices.null_count == chunk.null_count
            assert v.column(c).to_pylist() == dump[name].column(c).to_pylist() == large[name].column(c).to_pylist()
    uses = dump.views["values"].column("uses").chunk(0).values.field("shape_index")
    assert uses.type == D and uses.to_pylist() == [
        u["shape_index"] for us in dump["values"].column("uses").to_pylist() for u in us][:len(uses)]
    assert dump.views.instructions.num_rows > 1000
    op = dump.views.instructions.column("opcode")
    assert sum(len(c.dictionary) for c in op.chunks) < op.length() / 10


def test_polars(dump: hlodump.Dump) -> None:
    pl = pytest.importorskip("polars")
    frames = dump.to_polars()
    df = frames["instructions"]
    for c in INSTR_DICT:
        assert df.schema[c] == pl.Categorical, c
        assert df[c].cast(pl.String).to_list() == dump.instructions.column(c).to_pylist(), c
    assert df.filter(pl.col("opcode") == "fusion").height == \
        sum(1 for x in dump.instructions.column("opcode").to_pylist() if x == "fusion") > 0
    files = frames["files"]
    assert files["kind"].cast(pl.String).to_list() == dump.files.column("kind").to_pylist()
    # a projected scan as a LazyFrame
    lf = hlodump.scan(CF10, "instructions", columns=["opcode", "shape"]).to_polars()
    got = lf.select(pl.col("opcode").cast(pl.String), pl.col("shape").cast(pl.String)).collect()
    assert got["opcode"].to_list() == dump.instructions.column("opcode").to_pylist()
    assert got["shape"].to_list() == dump.instructions.column("shape").to_pylist()


def test_duckdb(dump: hlodump.Dump) -> None:
    pytest.importorskip("duckdb")
    con = dump.to_duckdb()
    assert con.sql("select typeof(opcode), typeof(shape_index) from instructions, values limit 1").fetchall() == \
        [("VARCHAR", "VARCHAR")]
    got = con.sql("select opcode, count(*) from instructions group by 1 order by 1").fetchall()
    want: dict[str, int] = {}
    for x in dump.instructions.column("opcode").to_pylist():
        want[x] = want.get(x, 0) + 1
    assert got == sorted(want.items())
    got = con.sql("select kind, count(*) from files where kind = 'hlo_module' group by 1").fetchall()
    assert got == [("hlo_module", dump.files.column("kind").to_pylist().count("hlo_module"))]


def test_parquet_and_pickle(dump: hlodump.Dump, tmp_path: Path) -> None:
    for p in dump.write_parquet(tmp_path):
        name = Path(p).stem
        back = pq.read_table(p)
        for c in dict_columns(name):
            assert pa.types.is_dictionary(back.schema.field(c).type), (name, c)  # stored encoded
        assert back.cast(schema(name, False)).equals(dump[name]), name
    back = pickle.loads(pickle.dumps(dump))
    for name in dump:
        assert to_large_strings(back.views[name]).equals(dump[name]), name


def test_arrow_c_stream(dump: hlodump.Dump) -> None:
    reader = pa.RecordBatchReader.from_stream(dump.views.instructions)
    assert reader.schema.field("opcode").type == D
    t = reader.read_all()
    assert to_large_strings(t).equals(dump.instructions)
    # requested as large_string by the consumer: pyarrow casts the stream
    t = pa.table(pa.RecordBatchReader.from_stream(dump.views.instructions, schema=schema("instructions", False)))
    assert t.equals(dump.instructions)


@pytest.mark.parametrize("batch_size", [7, 65536])
def test_scan_batches_carry_their_own_dictionaries(dump: hlodump.Dump, batch_size: int) -> None:
    s = hlodump.scan(CF10, "instructions", batch_size=batch_size)
    assert s.schema == SCHEMAS["instructions"]
    batches = list(s)
    for b in batches:
        assert b.schema == s.schema
        for c in INSTR_DICT:
            col = b.column(c)
            assert len(col.dictionary) <= b.num_rows
            assert col.indices.null_count == col.null_count
    got = pa.Table.from_batches(batches, s.schema)
    assert to_large_strings(got).equals(dump.instructions)
    large = pa.Table.from_batches(list(hlodump.scan(CF10, "instructions", batch_size=batch_size, string_view=False)))
    assert large.equals(dump.instructions)


def test_thunks_oom_and_memory_report_dictionaries(tmp_path: Path) -> None:
    (tmp_path / "module_0001.jit_f.thunk_sequence.txt").write_text(THUNKS)
    d = hlodump.read_arrow(tmp_path)
    v = d.views.thunks
    assert v.schema.field("kind").type == v.schema.field("section").type == D
    assert d.thunks.column("kind").to_pylist() == ["kKernel", "kWhile", "kKernel", "kKernel", "kCopy", "kKernel"]
    assert d.thunks.column("section").to_pylist() == [None, None, "condition", "body", "body", None]
    assert v.column("kind").chunk(0).dictionary.to_pylist() == ["kKernel", "kWhile", "kCopy"]
    ref = hlodump.reference.read_arrow(tmp_path)
    assert ref.views.thunks.schema == v.schema and ref.thunks.equals(d.thunks)
    oom = hlodump.read_arrow(Path(DATA) / "oom", on_error="collect")
    ref = hlodump.reference.read_arrow(Path(DATA) / "oom", on_error="collect")
    for name in ["oom_reports", "oom_buffers", "memory_report", "totals"]:
        assert oom[name].to_pylist() == ref[name].to_pylist(), name
    assert oom.views.oom_reports.schema.field("memory_space").type == D


def test_cli_sql_and_convert(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hlodump.cli", *args], capture_output=True, text=True, env=env,
                              timeout=300)

    d = hlodump.read_arrow(CF10, progress=False)
    p = run("query", str(CF10), "select opcode, shape, count(*) as n from instructions where fusion_kind = 'kLoop' "
            "group by all order by n desc, opcode, shape limit 3", "--format", "csv")
    assert p.returncode == 0, p.stderr
    rows = [ln.split(",", 2) for ln in p.stdout.strip().splitlines()[1:]]
    loops = [(o, s) for o, s, k in zip(*(d.instructions.column(c).to_pylist() for c in ("opcode", "shape", "fusion_kind")))
             if k == "kLoop"]
    assert rows and all(o == "fusion" for o, _, _ in rows)
    assert sum(int(n) for _, _, n in rows) <= len(loops)
    p = run("convert", str(CF10), str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    for name in ["instructions", "values", "files", "memory_report"]:
        back = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        assert back.schema.field(dict_columns(name)[0]).type.value_type in (pa.string(), pa.large_string())
        assert back.cast(schema(name, False)).equals(d[name]), name


def test_ray_datasource_and_convert(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    hray = pytest.importorskip("hlodump.ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ds = hray.read_dumps(str(CF10), "instructions", columns=["file_id", "opcode", "shape"])
        got = pa.concat_tables([ray.get(r) for r in ds.to_arrow_refs()])
        d = hlodump.read_arrow(CF10, progress=False)
        got = got.sort_by([("file_id", "ascending")])  # blocks hold whole files; stable per file
        assert got.column("opcode").to_pylist() == d.instructions.column("opcode").to_pylist()
        assert got.column("shape").to_pylist() == d.instructions.column("shape").to_pylist()
        out = tmp_path / "ray"
        assert hray.convert(str(CF10), str(out))
        parts = [pq.read_table(os.path.join(r, f)) for r, _, fs in os.walk(out / "instructions") for f in fs]
        t = pa.concat_tables(parts)
        assert sorted(t.column("opcode").to_pylist()) == sorted(d.instructions.column("opcode").to_pylist())
    finally:
        if started:
            ray.shutdown()
