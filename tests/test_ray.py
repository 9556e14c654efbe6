"""``hlodump.ray``: ``read_dumps`` (a Ray Data datasource, one task per dump) and
``hlodump convert --engine ray`` give what the local read and the local convert give."""

from __future__ import annotations

import os
import subprocess
import sys
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import hlodump

from conftest import DATA, S3_BUCKET

pytest.importorskip("hlodump._core")
ray = pytest.importorskip("ray")
hray = pytest.importorskip("hlodump.ray")

CORPUS = os.path.join(DATA, "corpus")
CF = os.path.join(CORPUS, "jax-0.10.2", "control_flow")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def collect(ds) -> pa.Table:
    """The dataset's rows in read order (blocks hold whole files: a stable sort on file_id)."""
    t = pa.concat_tables([ray.get(r) for r in ds.to_arrow_refs()])
    return t.take(pc.sort_indices(t, [("file_id", "ascending")]))


def with_dump(local: hlodump.Dump, name: str) -> pa.Table:
    """The local table as read_dumps gives it: ``dump`` first (from ``files``)."""
    t = local[name]
    if name == "files":
        return t
    dumps = local["files"].column("dump")
    return t.add_column(0, pa.field("dump", pa.large_string(), nullable=False),
                        pc.take(dumps, t.column("file_id")).cast(pa.large_string()))


@pytest.mark.parametrize("table", ["files", "instructions", "allocations", "values", "memory_report", "modules"])
def test_read_dumps_equals_read_arrow(cluster, table):
    local = hlodump.read_arrow(CORPUS, string_view=False)
    ds = hray.read_dumps(CORPUS, table)
    got = collect(ds)
    want = with_dump(local, table)
    assert got.schema == want.schema == hray.table_schema(table)
    assert got.num_rows == want.num_rows > 0
    assert got.to_pylist() == want.to_pylist()
    # one task per dump
    assert len({d for d in local["files"].column("dump").to_pylist()}) == len(hray.plan_tasks(CORPUS))


def test_read_dumps_cuts_big_dumps_between_modules_and_projects(cluster):
    tasks = hray.plan_tasks(CF, target_bytes=100_000)
    assert len(tasks) > 3
    for t in tasks:  # every module's files in one task
        mods = {inp.shown.split(".")[0] for inp in t.plan.inputs}
        for other in tasks:
            if other is not t:
                assert not mods & {inp.shown.split(".")[0] for inp in other.plan.inputs}
    cols = ["dump", "file_id", "name", "opcode"]
    got = collect(hray.read_dumps(CF, "instructions", columns=cols, target_bytes=100_000))
    want = with_dump(hlodump.read_arrow(CF, string_view=False), "instructions").select(cols)
    assert got.schema.names == cols
    assert got.to_pylist() == want.to_pylist()
    with pytest.raises(ValueError, match="unknown columns"):
        hray.read_dumps(CF, "instructions", columns=["nope"])
    with pytest.raises(ValueError, match="unknown table"):
        hray.read_dumps(CF, "nope")


def test_tables_of_different_reads_join_on_file_id(cluster):
    files = collect(hray.read_dumps(CORPUS, "files", columns=["file_id", "dump", "module_name", "stage"]))  # noqa: F841 - read by DuckDB by name
    inst = collect(hray.read_dumps(CORPUS, "instructions", columns=["dump", "file_id", "opcode"]))  # noqa: F841
    import duckdb

    n = duckdb.sql("""select count(*) from inst i join files f using (file_id)
                      where f.dump = i.dump and f.stage = 'after_optimizations' and i.opcode = 'fusion'""").fetchall()[0][0]
    local = hlodump.read_arrow(CORPUS).to_duckdb()
    want = local.sql("""select count(*) from instructions i join files f using (file_id)
                        where f.stage = 'after_optimizations' and i.opcode = 'fusion'""").fetchall()[0][0]
    assert n == want > 0


def test_read_dumps_from_s3(cluster, moto_s3):
    opts = {"aws_endpoint": moto_s3, "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
            "aws_region": "us-east-1"}
    url = f"s3://{S3_BUCKET}/runs"
    got = collect(hray.read_dumps(url, "allocations", storage_options=opts))
    local = hlodump.read_arrow(url, storage_options=opts, string_view=False)
    assert got.to_pylist() == with_dump(local, "allocations").to_pylist()
    assert set(got.column("dump").to_pylist()) == {f"{url}/control_flow", f"{url}/spmd"}


def plain(t: pa.Table) -> pa.Table:
    """string_view → large_string, also inside lists and structs (pyarrow cannot take views)."""
    def ty(x: pa.DataType) -> pa.DataType:
        if x == pa.string_view():
            return pa.large_string()
        if pa.types.is_list(x):
            return pa.list_(x.value_field.with_type(ty(x.value_type)))
        if pa.types.is_struct(x):
            return pa.struct([x.field(i).with_type(ty(x.field(i).type)) for i in range(x.num_fields)])
        return x
    return t.cast(pa.schema([f.with_type(ty(f.type)) for f in t.schema]))


def read_partitioned(root: str, table: str) -> pa.Table:
    """A table written by convert --engine ray, in read order, ``dump`` from the directory."""
    parts = []
    for d, _, files in os.walk(os.path.join(root, table)):
        for f in sorted(files):
            t = plain(pq.read_table(os.path.join(d, f)))
            dump = unquote(os.path.basename(d).split("=", 1)[1])
            parts.append(t.append_column("dump", pa.array([dump] * t.num_rows, pa.large_string())))
    t = pa.concat_tables(parts)
    return t.take(pc.sort_indices(t, [("file_id", "ascending")]))


def test_convert_engine_ray_equals_local_convert(cluster, tmp_path):
    from hlodump.cli import main

    local_out, ray_out = tmp_path / "local", tmp_path / "ray"
    assert main(["convert", CORPUS, str(local_out)]) == 0
    assert main(["convert", CORPUS, str(ray_out), "--engine", "ray"]) == 0
    local = hlodump.read_arrow(CORPUS)
    for name in hlodump.SCHEMAS:
        want = plain(pq.read_table(local_out / f"{name}.parquet"))
        got = read_partitioned(str(ray_out), name)
        if name != "files":
            want = want.append_column("dump", pc.take(local["files"].column("dump"), want.column("file_id"))
                                      .cast(pa.large_string()))
        got = got.select(want.schema.names)
        assert got.num_rows == want.num_rows, name
        assert got.to_pylist() == want.to_pylist(), name
    # one partition directory per dump
    dumps = set(local["files"].column("dump").to_pylist())
    assert {unquote(p.split("=", 1)[1]) for p in os.listdir(ray_out / "files")} == dumps


def test_convert_engine_ray_command_line(cluster, tmp_path, moto_s3):
    """The command as a user runs it: a child process joining the running cluster, writing to S3."""
    env = dict(os.environ, AWS_ENDPOINT_URL=moto_s3, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
    url = f"s3://{S3_BUCKET}/runs/control_flow"
    out = f"s3://{S3_BUCKET}/ray-out"
    opts = ["--storage-option", f"aws_endpoint={moto_s3}", "--storage-option", "aws_access_key_id=testing",
            "--storage-option", "aws_secret_access_key=testing"]
    r = subprocess.run([sys.executable, "-m", "hlodump.cli", "convert", url, out, "--engine", "ray",
                        "--ray-address", cluster, *opts], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{out}/instructions/" in r.stdout
    local = hlodump.read_arrow(CF)
    import obstore
    from hlodump.io import stores

    store = stores.backend_for(out, {"aws_endpoint": moto_s3, "aws_access_key_id": "testing",
                                     "aws_secret_access_key": "testing"})[0].store
    keys = [m["path"] for b in obstore.list(store, "ray-out/instructions") for m in b]
    assert keys and all("/dump=s3%3A%2F%2Fhlodump-test%2Fruns%2Fcontrol_flow/" in k for k in keys)
    n = sum(pq.read_table(pa.BufferReader(bytes(obstore.get(store, k).bytes()))).num_rows for k in keys)
    assert n == local["instructions"].num_rows
    # a user mistake: one line, no traceback
    r = subprocess.run([sys.executable, "-m", "hlodump.cli", "convert", f"s3://{S3_BUCKET}/nothing", out,
                        "--engine", "ray", "--ray-address", cluster, *opts],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr and f"s3://{S3_BUCKET}/nothing" in r.stderr
