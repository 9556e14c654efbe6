"""The ``hlodump`` command line, run as a child process (``python -m hlodump.cli``)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pyarrow.parquet as pq
import pytest

from conftest import DATA, ROOT

CF10 = os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow")
SQL = "select kind, count(*) as n, sum(size_bytes) as bytes from files group by kind order by n desc, kind"


@pytest.fixture(autouse=True)
def _native() -> None:
    pytest.importorskip("hlodump._core")


def run(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "hlodump.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def expected_kinds() -> list[tuple[str, int, int]]:
    import hlodump

    f = hlodump.read_arrow(CF10, tables=[]).files.to_pylist()
    agg: dict[str, list[int]] = {}
    for r in f:
        a = agg.setdefault(r["kind"], [0, 0])
        a[0] += 1
        a[1] += r["size_bytes"]
    return sorted(((k, n, b) for k, (n, b) in agg.items()), key=lambda x: (-x[1], x[0]))


def test_tables() -> None:
    import hlodump

    p = run("tables", CF10)
    assert p.returncode == 0, p.stderr
    got = {line.split()[0]: int(line.split()[1].replace(",", "")) for line in p.stdout.splitlines()}
    d = hlodump.read_arrow(CF10)
    assert got == {name: t.num_rows for name, t in d.items()}
    assert got["files"] == 120 and got["allocations"] == 157
    assert p.stderr == ""  # no progress bar on a pipe


def test_query_table_format() -> None:
    p = run("query", CF10, SQL)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["kind", "n", "bytes"]
    assert set(lines[1]) <= {"-", " "}
    want = expected_kinds()
    assert [tuple(line.split()) for line in lines[2:-1]] == [(k, str(n), str(b)) for k, n, b in want]
    assert lines[-1] == f"({len(want)} rows)"
    # 24 HLO texts, 12 module.mlir (other) beside the 12 compile_options.textproto and the 12
    # topology.textproto (protobuf text, issue 47) that are read (options)
    assert want[0] == ("hlo_module", 24, want[0][2])
    kinds = {k: n for k, n, _ in want}
    assert kinds["compile_options"] == 12 and kinds["proto_text"] == 12 and kinds["other"] == 12


def test_query_csv_json_parquet(tmp_path: Any) -> None:
    want = expected_kinds()
    p = run("query", CF10, SQL, "--format", "csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    assert rows[0] == ["kind", "n", "bytes"]
    assert [(k, int(n), int(b)) for k, n, b in rows[1:]] == want

    out = tmp_path / "q.json"
    p = run("query", CF10, SQL, "--format", "json", "-o", str(out))
    assert p.returncode == 0 and p.stdout == "", p.stderr
    assert [(r["kind"], r["n"], r["bytes"]) for r in json.loads(out.read_text())] == want

    out = tmp_path / "q.parquet"
    p = run("query", CF10, SQL, "--format", "parquet", "-o", str(out))
    assert p.returncode == 0, p.stderr
    t = pq.read_table(out)
    assert list(zip(*(t[c].to_pylist() for c in ("kind", "n", "bytes")))) == want
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == "ZSTD"

    # lists as JSON inside CSV cells
    p = run("query", CF10, "select operands from instructions where opcode = 'dynamic-slice' "
                           "and len(operands) = 3 limit 1", "--format", "csv")
    assert p.returncode == 0, p.stderr
    (cell,) = list(csv.reader(io.StringIO(p.stdout)))[1]
    assert len(json.loads(cell)) == 3

    # table format to a file
    out = tmp_path / "q.txt"
    p = run("query", CF10, SQL, "-o", str(out))
    assert p.returncode == 0 and out.read_text().splitlines()[-1] == f"({len(want)} rows)"


def test_query_join_on_directory() -> None:
    """A join over files/allocations/assignments: biggest allocation of each module."""
    p = run("query", CF10, """
        select f.module_id, max(a.size) as biggest from allocations a join files f using (file_id)
        group by all order by 1""", "--format", "json")
    assert p.returncode == 0, p.stderr
    got = {r["module_id"]: r["biggest"] for r in json.loads(p.stdout)}
    raw = {}
    for name in os.listdir(CF10):
        if name.endswith("-buffer-assignment.txt"):
            with open(os.path.join(CF10, name)) as fh:
                raw[int(name[7:11])] = max(int(line.split()[3].rstrip(",:")) for line in fh
                                           if line.startswith("allocation "))
    assert got == raw and len(got) == 12


def test_convert_round_trip(tmp_path: Any) -> None:
    import hlodump
    from hlodump.schema import schema

    p = run("convert", CF10, str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    d = hlodump.read_arrow(CF10)
    written = p.stdout.split()
    assert [os.path.basename(w) for w in written] == [f"{n}.parquet" for n in d]
    for name, t in d.items():
        back = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        assert back.cast(schema(name, False)).equals(t.cast(schema(name, False))), name
        if t.num_rows:
            assert pq.ParquetFile(tmp_path / "out" / f"{name}.parquet").metadata.row_group(0).column(0) \
                .compression == "ZSTD"


def test_missing_path() -> None:
    p = run("tables", "/no/such/dump/dir")
    assert p.returncode == 2  # a user mistake: a message and status 2
    assert p.stdout == ""
    assert p.stderr.startswith("hlodump: ") and "No such file or directory" in p.stderr
    assert "/no/such/dump/dir" in p.stderr and "Traceback" not in p.stderr
    p = run("query", "/no/such/glob*/x", "select 1")  # a glob that matches nothing: an error (issue 29)
    assert p.returncode == 2 and "No file matches this glob" in p.stderr, p.stderr


def test_parse_error_and_keep_going(tmp_path: Any) -> None:
    bad = tmp_path / "m-buffer-assignment.txt"
    bad.write_text("BufferAssignment:\nallocation x: size 5:\n")
    p = run("tables", str(tmp_path))
    assert p.returncode == 1
    assert p.stderr.startswith(f"hlodump: m-buffer-assignment.txt:2:") and "Traceback" not in p.stderr
    assert "allocation x: size 5:" in p.stderr
    assert "--keep-going" in p.stderr  # how to keep going
    p = run("query", str(tmp_path), "select line, message from errors", "--keep-going", "--format", "json")
    assert p.returncode == 1  # errors were reported: one line at the end
    assert p.stderr.startswith("hlodump: 1 error in 1 file: m-buffer-assignment.txt:2:")
    p = run("query", str(tmp_path), "select line, message from errors", "--keep-going", "--errors-ok",
            "--format", "json")
    assert p.returncode == 0, p.stderr
    (err,) = json.loads(p.stdout)
    assert err["line"] == 2


def test_sql_error_and_usage_errors(tmp_path: Any) -> None:
    p = run("query", CF10, "select * from no_such_table")
    assert p.returncode == 2  # a user mistake (issue 30)
    assert p.stderr.startswith("hlodump: SQL error:") and "Traceback" not in p.stderr
    p = run("query", CF10, "select 1", "--format", "parquet")  # parquet needs -o
    assert p.returncode == 2 and "-o FILE" in p.stderr
    p = run("query", CF10, "select 1", "--format", "xml")
    assert p.returncode == 2 and "invalid choice" in p.stderr
    p = run()
    assert p.returncode == 2


def test_threads_option() -> None:
    a = run("query", CF10, "select count(*), sum(size) from allocations", "--threads", "1", "--format", "csv")
    b = run("query", CF10, "select count(*), sum(size) from allocations", "--format", "csv")
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout


def test_console_script() -> None:
    # the script installed with this interpreter (a `hlodump` elsewhere on PATH, e.g. a pyenv
    # shim of another Python, is not this package; tests/test_wheel.py checks a fresh install)
    exe = shutil.which("hlodump", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("hlodump console script not installed next to this Python (pip install -e .)")
    p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("hlodump ")
    p = subprocess.run([exe, "tables", CF10], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "allocations" in p.stdout


def test_readme_directory_queries_run() -> None:
    """Every ``hlodump query`` of the docs page "Directories and SQL" (docs/sql.md, moved there
    from README.md) runs as written."""
    import re
    import shlex

    with open(os.path.join(ROOT, "docs", "sql.md"), encoding="utf-8") as fh:
        page = fh.read()
    section = page.split("# Directories and SQL", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    commands = [c for c in re.split(r"\n(?=hlodump )", block.strip()) if c.startswith("hlodump ")]
    commands = [shlex.split(c, comments=True) for c in commands]
    assert len(commands) == 4
    outputs = []
    for argv in commands:
        assert argv[0] == "hlodump"
        p = run(*argv[1:], "--format", "json", cwd=ROOT)
        assert p.returncode == 0, (argv, p.stderr)
        outputs.append(json.loads(p.stdout))
    biggest, peak, fusions, passes = outputs
    # the numbers the page states
    assert biggest[0]["module_id"] == 2 and biggest[0]["size"] == 1296 and biggest[0]["source_line"] == 28
    assert biggest[0]["op_name"].endswith("/dynamic_update_slice")
    assert peak[0]["bytes"] == 1296 and peak[0]["buffer"] == "arg_tuple.3{3}"
    assert {(r["fusion_kind"], r["fusions"]) for r in fusions if r["module_id"] == 2} == {("kLoop", 22), ("kCustom", 3)}
    assert (passes[0]["pass_index"], passes[0]["instructions"]) == (0, 1108)
    assert (passes[-1]["pass_index"], passes[-1]["instructions"]) == (56, 2414)


# ------------------------------------------------------------------------------ issue 50, items 4 and 5


def test_duckdb_out_of_memory_and_ctrl_c_in_a_query_are_one_line() -> None:
    """DuckDB's out of memory is "hlodump: out of memory", exit 3 (it was an SQL error, or in
    the analyses a ``_duckdb.OutOfMemoryException`` traceback); Ctrl-C while DuckDB runs a
    query is "hlodump: interrupted", 130 (it was ``RuntimeError: Query interrupted``)."""
    import signal
    import time

    p = run("query", CF10, "select a.range % 50000000 as k, count(*) from range(100000000) a, range(10) b "
                           "group by k order by 2", "--memory-limit", "20MB")
    assert p.returncode == 3, p.stderr
    assert p.stderr.startswith("hlodump: out of memory: DuckDB: Out of Memory Error") and "Traceback" not in p.stderr
    # Ctrl-C during a query that would run for hours
    q = subprocess.Popen([sys.executable, "-m", "hlodump", "query", CF10,
                          "select sum(a.range * b.range) from range(1000000000) a, range(1000000000) b"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # past Python's start-up (a Ctrl-C while Python imports pyarrow is Python's own traceback):
    # DuckDB is loaded, then the dump read and the query started
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and q.poll() is None:
        with open(f"/proc/{q.pid}/maps") as maps:
            if "duckdb" in maps.read():
                break
        time.sleep(0.2)
    time.sleep(4)
    assert q.poll() is None
    q.send_signal(signal.SIGINT)
    out, err = q.communicate(timeout=60)
    assert q.returncode == 130 and err == "hlodump: interrupted\n", err


@pytest.mark.parametrize("cmd", ["report", "oom", "plot-html", "plot-png", "cost", "comms", "query"])
def test_outputs_are_replaced_atomically(tmp_path, cmd: str) -> None:
    """A write that fails (here the file-size limit, as a full disk) leaves the old output as it
    was and no temporary beside it: every output goes to a temporary in its folder, renamed
    over it at the end (``report -o``, ``plot``, ``cost -o`` and ``comms -o`` wrote in place)."""
    import resource
    import signal

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / ("page.png" if cmd == "plot-png" else "page.html" if cmd in ("report", "oom", "plot-html")
                        else "out.csv")
    target.write_text("OLD CONTENT\n")
    args = {"report": ["report", CF10, "-o", str(target)],
            "oom": ["report", os.path.join(DATA, "oom"), "-o", str(target), "--keep-going", "--errors-ok"],
            "plot-html": ["plot", CF10, "--module", "jit_rnn_loss", "-o", str(target)],
            "plot-png": ["plot", CF10, "--module", "jit_rnn_loss", "-o", str(target)],
            "cost": ["cost", CF10, "--format", "csv", "-o", str(target)],
            "comms": ["comms", os.path.join(DATA, "corpus", "jax-0.10.2", "spmd"), "--format", "csv", "-o", str(target)],
            "query": ["query", CF10, "select * from instructions", "--format", "csv", "-o", str(target)]}[cmd]
    if cmd == "plot-png":
        pytest.importorskip("matplotlib")

    def limit() -> None:  # writes past 4 KiB fail with EFBIG (SIGXFSZ ignored): a disk that fills up
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    p = subprocess.run([sys.executable, "-m", "hlodump", *args], capture_output=True, text=True, cwd=ROOT,
                       preexec_fn=limit, timeout=600)
    assert p.returncode == 3, (p.returncode, p.stderr[-1500:])
    assert p.stderr.startswith("hlodump: ") and "Traceback" not in p.stderr and "File too large" in p.stderr
    assert target.read_bytes() == b"OLD CONTENT\n"
    assert sorted(os.listdir(out_dir)) == [target.name]
    # without the limit the output is written, whole, and nothing else is left
    ok = subprocess.run([sys.executable, "-m", "hlodump", *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert ok.returncode == 0, ok.stderr[-1500:]
    assert target.stat().st_size > 4096 and sorted(os.listdir(out_dir)) == [target.name]
