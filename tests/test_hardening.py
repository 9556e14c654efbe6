"""Hardening, round two (issue 30): one test per broken promise, by its number in the issue.

1 giant text values · 2 error text over 2 GiB · 3 globs over symlink loops · 4 (sums: see
test_hardening_analysis.py) · 5 files rewritten while read · 6 truncated files · 7 the same dump
twice · 8 atomic `convert` · 9 the query sandbox · 10 SQL errors while fetching · 11 object-store
options that panicked · 12 credentials in URLs · 13 `/dev/null`, FIFOs · 14 escaped exception
text · 15 the reference's grammar. Plus the newcomer edges of issue 29 item 5 at the end.

The 2 GiB cases are proved on small inputs with the limit lowered (`_core._set_max_line_len`,
the reference's `MAX_LINE_LEN`), and by unit tests of the rules in Rust (`cargo test`:
`lines::tests::reports_lines_longer_than_the_limit`,
`columns::tests::owned_text_rotates_side_buffers_and_made_text_is_large`,
`error::tests::error_text_is_bounded`). Nothing here allocates gigabytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CF10 = DATA / "corpus" / "jax-0.10.2" / "control_flow"
SEED = DATA / "seeds" / "003_edd6dfbd09ed8e41.txt"  # a buffer assignment
HLO = CF10 / "module_0000.jit_rnn.before_optimizations.txt"


def _run_cli(*args: str, cwd: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "hlodump", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


@pytest.fixture
def core() -> Any:
    return pytest.importorskip("hlodump._core")


@pytest.fixture
def line_limit(core: Any) -> Iterator[Callable[[int], None]]:
    """Lower the longest line a read accepts (2^31-1 bytes) for one test, in both readers."""
    from hlodump.reference import lines as ref  # (the line limits live with split_lines)

    old_rust, old_ref = None, ref.MAX_LINE_LEN

    def set_limit(n: int) -> None:
        nonlocal old_rust
        prev = core._set_max_line_len(n)
        old_rust = prev if old_rust is None else old_rust
        ref.MAX_LINE_LEN = n

    yield set_limit
    if old_rust is not None:
        core._set_max_line_len(old_rust)
    ref.MAX_LINE_LEN = old_ref


def _custom_call_module(body_len: int) -> bytes:
    """An HLO module whose custom call carries a ``backend_config`` of ``body_len`` bytes."""
    return (b"HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n\n"
            b"ENTRY %main (p: f32[4]) -> f32[4] {\n"
            b"  %p = f32[4]{0} parameter(0)\n"
            b"  %cc = f32[4]{0} custom-call(%p), custom_call_target=\"tpu_custom_call\", backend_config=\""
            + b"A" * body_len + b"\"\n"
            b"  ROOT %n = f32[4]{0} negate(%cc)\n"
            b"}\n")


# ------------------------------------------------------------------- 1. giant text values


def test_01_a_line_longer_than_arrows_largest_string_is_an_error_not_a_corrupt_array(
        reader: Any, line_limit: Callable[[int], None], tmp_path: Path) -> None:
    """A custom call's backend_config of >= 2 GiB made a string_view longer than Arrow allows
    (SIGSEGV in DuckDB/Parquet). Every value is a piece of one line, so a line over the limit
    is an error at its own line, and the arrays stay valid."""
    import hlodump

    p = tmp_path / "module_0001.m.before_optimizations.txt"
    p.write_bytes(_custom_call_module(5000))
    line_limit(4096)
    with pytest.raises(hlodump.ParseError) as e:
        reader(str(p))
    assert (e.value.line, e.value.column) == (5, 1)
    assert "longer than 2147483647 bytes" in e.value.message
    d = reader(str(p), on_error="collect")
    (err,) = d["errors"].to_pylist()
    assert (err["line"], err["column"]) == (5, 1) and "Arrow text value" in err["message"]
    assert err["text"] == _custom_call_module(5000).split(b"\n")[4].decode()  # under 64 KiB: whole
    # the other lines are read; nothing holds the long line
    assert "negate" in d["instructions"].column("opcode").to_pylist()
    for name in d:
        d[name].validate(full=True)
    line_limit(2**31 - 1)
    assert reader(str(p))["custom_calls"].num_rows == 1  # under the limit: read as before


def test_01_the_limit_is_arrows_and_views_stay_valid(core: Any) -> None:
    from hlodump.reference import lines as ref  # (the line limits live with split_lines)

    assert ref.MAX_LINE_LEN == 2**31 - 1
    prev = core._set_max_line_len(2**40)  # clamped: never above Arrow's limit
    assert core._set_max_line_len(prev) == 2**31 - 1


# ------------------------------------------------------------------ 2. error text over 2 GiB


def test_02_error_text_is_capped_and_error_columns_have_64_bit_offsets(reader: Any, tmp_path: Path) -> None:
    """25 bad lines of 100 MB made 2.5 GB of error text: a "byte array offset overflow" panic
    and no tables. Each error keeps at most 64 KiB of its line; text columns we make
    (files, errors) are large_string, so no number of errors overflows them."""
    from hlodump.reference.reader import MAX_ERROR_TEXT

    assert MAX_ERROR_TEXT == 65536
    p = tmp_path / "module_0001.m.cpu_after_optimizations-buffer-assignment.txt"
    bad = b"allocation 0: size 16, \xff" + b"x" * 200_000 + b"\n"
    p.write_bytes(SEED.read_bytes().split(b"\n", 1)[0] + b"\n" + bad * 5)
    d = reader(str(p), on_error="collect")
    errs = d["errors"].to_pylist()
    assert len(errs) == 5
    for e in errs:
        assert e["text"].endswith(f"… ({len(bad) - 1} bytes)"), e["text"][-40:]
        assert len(e["text"].encode()) < MAX_ERROR_TEXT + 40
    if reader.__module__.startswith("hlodump.reader"):
        import hlodump

        v = hlodump.read_arrow(str(p), on_error="collect", string_view=True)
        assert v["errors"].schema.field("text").type == pa.large_string()
        assert v["files"].schema.field("path").type == pa.large_string()
    from hlodump.schema import SCHEMAS

    assert SCHEMAS["errors"].field("message").type == pa.large_string()


# ------------------------------------------------------------- 3. globs over symlink loops


GLOB_LOOP = """
import sys, hlodump
from hlodump.io.paths import WalkLimitError
d = hlodump.read_arrow(sys.argv[1] + "/**/*.txt", on_error="collect")
print(d["files"].num_rows, sorted(d["files"].column("path").to_pylist()))
try:
    hlodump.read_arrow(sys.argv[1] + "/**/*.txt", max_files=3)
except WalkLimitError as e:
    print("limit:", e)
"""


def test_03_a_glob_over_looping_symlinks_ends_and_obeys_max_files(core: Any, tmp_path: Path) -> None:
    """Two `x -> .` links made `dir/**/*.txt` enumerate for ever (glob.glob follows every
    directory link). Globs now walk like directories: each directory once, `max_files`."""
    d = tmp_path / "dump"
    (d / "sub").mkdir(parents=True)
    (d / "module_0001.a.cpu_after_optimizations-buffer-assignment.txt").write_bytes(SEED.read_bytes())
    (d / "sub" / "notes.txt").write_text("hello\n")
    for name in ("x", "y", "sub/z"):
        os.symlink(".", d / name)
    r = subprocess.run([sys.executable, "-c", GLOB_LOOP, str(d)], capture_output=True, text=True, timeout=120,
                       cwd=str(ROOT))
    assert r.returncode == 0, r.stderr[-2000:]
    first, second = r.stdout.splitlines()
    n, paths = first.split(" ", 1)
    assert int(n) == 2 and "module_0001.a.cpu_after_optimizations-buffer-assignment.txt" in paths
    assert "notes.txt" in paths and "/x/" not in paths and "/y/" not in paths
    assert second.startswith("limit:") and "more than 3 entries" in second


def test_03_glob_matches_like_glob_glob_on_a_plain_tree(tmp_path: Path) -> None:
    import glob

    from hlodump.io.paths import _glob

    for rel in ("a.txt", "b.log", "s/c.txt", "s/t/d.txt", ".hidden/e.txt", "s/.f.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    for pat in ("**/*.txt", "*.txt", "s/*", "s/**", "*/t/*.txt", "?.log", "[ab].*", "**/.f.txt", ".hidden/*"):
        full = str(tmp_path / pat)
        want = sorted(p.rstrip("/") for p in glob.glob(full, recursive=True))
        got = [m for m, *_ in _glob(full, False, 1000)]
        # a directory matched stands for what is under it (the caller walks it)
        want = [w for w in want if not any(w.startswith(g + "/") for g in want if os.path.isdir(g))]
        assert got == want, pat


# ---------------------------------------------------------- 5. files rewritten while read


def test_05_a_mapped_file_rewritten_during_a_scan_is_an_error(core: Any, tmp_path: Path) -> None:
    """XLA re-dumping into the directory read: the rows of a mapped file could mix two versions
    (and invalid UTF-8 after the UTF-8 check). The file's size and times are compared after
    parsing; a scan, whose earlier rows are out already, raises."""
    import hlodump

    src = (CF10 / "module_0000.jit_rnn.cpu_after_optimizations-buffer-assignment.txt").read_bytes()
    p = tmp_path / "module_0001.m.cpu_after_optimizations-buffer-assignment.txt"
    p.write_bytes(src)
    s = hlodump.scan(str(p), "assignments", batch_size=1, mmap=True)
    it = iter(s.to_reader())
    next(it)
    # same size, other bytes (invalid UTF-8 in text the parser has not reached yet)
    data = bytearray(src)
    data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64
    with open(p, "r+b") as f:
        f.write(bytes(data))
    os.utime(p, ns=(time.time_ns(), time.time_ns() + 10**9))
    with pytest.raises(OSError, match="changed while it was read"):  # not the ParseError the new bytes give
        for _ in it:
            pass


def test_05_a_file_written_to_during_read_arrow_has_an_error_row_and_no_rows(core: Any, tmp_path: Path) -> None:
    import hlodump

    sys.path.insert(0, str(ROOT / "benches"))
    try:
        import make_inputs
    finally:
        sys.path.pop(0)
    p = tmp_path / "module_0001.m.before_optimizations.txt"
    make_inputs.make_hlo(p, 40_000_000)
    stop = threading.Event()

    def touch() -> None:  # a writer that keeps writing (its times change; the bytes do not)
        k = 0
        while not stop.is_set():
            k += 1
            os.utime(p, ns=(10**18 + k, 10**18 + k))
            time.sleep(0.001)

    w = threading.Thread(target=touch)
    w.start()
    try:
        d = hlodump.read_arrow(str(tmp_path), on_error="collect", mmap=True, threads=1)  # a walk: a row
        with pytest.raises(OSError, match="changed while it was read"):  # named: raised
            hlodump.read_arrow(str(p), mmap=True, threads=1)
    finally:
        stop.set()
        w.join()
    (f,) = d["files"].to_pylist()
    assert "the file changed while it was read" in f["error"]
    assert d["instructions"].num_rows == 0
    # left alone, it reads
    assert hlodump.read_arrow(str(p), mmap=True).instructions.num_rows > 0


@pytest.mark.parametrize("how", ["copied", "mapped", "gzip", "tar"])
def test_05_a_file_rewritten_in_place_at_the_same_size_is_never_read_as_a_mix(core: Any, tmp_path: Path,
                                                                              how: str) -> None:
    """Issue 50: a file rewritten in place at the same size while it is read gave a mix of both
    versions with no error (198 of 333 reads copied, 8 of 333 mapped): the kernel stamps writes
    with a coarse clock, so its size and times stayed as they were. Now every read gives one
    version whole, or the error "the file changed while it was read" — copied, mapped, and read
    through Python (a compressed file, a tar archive)."""
    import gzip
    import io
    import tarfile

    import hlodump
    from conftest import big_buffer_assignment

    seed = (CF10 / "module_0000.jit_rnn.cpu_after_optimizations-buffer-assignment.txt").read_bytes()
    a = big_buffer_assignment(seed, 600_000)
    b = a.replace(b"f32[", b"s32[")  # the same size, other shapes
    assert len(a) == len(b) and a != b
    name = "module_0001.m.cpu_after_optimizations-buffer-assignment.txt"

    def pack(text: bytes) -> bytes:
        if how == "gzip":
            return gzip.compress(text, compresslevel=0, mtime=0)  # stored: the same size
        if how == "tar":
            out = io.BytesIO()
            with tarfile.open(fileobj=out, mode="w") as t:
                info = tarfile.TarInfo("d/" + name)
                info.size = len(text)
                t.addfile(info, io.BytesIO(text))
            return out.getvalue()
        return text

    versions = [pack(a), pack(b)]
    assert len(versions[0]) == len(versions[1])
    p = tmp_path / (name + (".gz" if how == "gzip" else ".tar" if how == "tar" else ""))
    p.write_bytes(versions[0])
    read = {"copied": dict(mmap=False), "mapped": dict(mmap=True)}.get(how, {})
    want = [hlodump.read_arrow(str(p), threads=1, **read).assignments["shape"].to_pylist()]
    p.write_bytes(versions[1])
    want.append(hlodump.read_arrow(str(p), threads=1, **read).assignments["shape"].to_pylist())
    assert want[0] != want[1]
    stop = threading.Event()

    def rewrite() -> None:  # in place, the same size, in pieces: a read can meet half of each
        k = 0
        with open(p, "r+b") as f:
            while not stop.is_set():
                k += 1
                data = versions[k % 2]
                for at in range(0, len(data), 1 << 16):
                    f.seek(at)
                    f.write(data[at:at + (1 << 16)])
                    f.flush()
                time.sleep(0.0005 * (k % 3))

    w = threading.Thread(target=rewrite)
    w.start()
    results = {"whole": 0, "error": 0}
    try:
        deadline = time.monotonic() + 20
        for _ in range(120):
            if time.monotonic() > deadline:
                break
            try:
                got = hlodump.read_arrow(str(p), threads=1, on_error="collect", **read)
            except OSError as e:
                assert "changed while it was read" in str(e) or "cannot read" in str(e), e
                results["error"] += 1
                continue
            errors = [r["error"] for r in got.files.to_pylist() if r["error"]]
            if errors or got.errors.num_rows:
                results["error"] += 1
                continue
            shapes = got.assignments["shape"].to_pylist()
            assert shapes in want, "a mix of two versions of the file, read without an error"
            results["whole"] += 1
    finally:
        stop.set()
        w.join()
    assert sum(results.values()) > 10, results


# ------------------------------------------------------------------ 6. truncated files

LIVE = CF10 / "module_0000.jit_rnn.cpu_after_optimizations-live-range.txt"  # HloLiveRange (max 36)


def _cut_files(tmp_path: Path) -> dict[str, tuple[bytes, int, str]]:
    """name -> (content, line of the error, words of its message)."""
    live = LIVE.read_bytes().split(b"\n")
    hlo = HLO.read_bytes()
    entry = hlo.index(b"\nENTRY ")
    return {
        "module_0001.a.cpu_after_optimizations-live-range.txt": (b"\n".join(live[:12]) + b"\n", 1, "lists 10 instruction"),
        "module_0002.b.cpu_after_optimizations-live-range.txt": (
            b"HloLiveRange (max 3):\n  InstructionSequence:\n", 1, "lists 0 instruction"),
        # the sequence cut, then the next list: still at the header
        "module_0003.c.cpu_after_optimizations-live-range.txt": (
            b"\n".join(live[:12] + [b"  BufferLiveRange:"]) + b"\n", 1, "max 36"),
        "module_0004.d.before_optimizations.txt": (hlo[:entry + 1], 1, "no ENTRY computation"),
        "module_0005.e.before_optimizations.txt": (hlo[:hlo.index(b"\n") + 1], 1, "no computation"),
        "module_0006.f.cpu_after_optimizations-buffer-assignment.txt": (b"", 1, "empty file"),
        "module_0007.g.cpu_after_optimizations-buffer-assignment.txt": (b"BufferAssignment:\n", 1,
                                                                        "without a single allocation"),
    }


def test_06_files_cut_short_are_errors_with_a_position(reader: Any, tmp_path: Path) -> None:
    """A live-range file that says `max 36` but stops after 10 entries, an HLO module without
    ENTRY or without any computation, a 0-byte or header-only dump file were accepted."""
    import hlodump

    cut = _cut_files(tmp_path)
    for name, (data, _, _) in cut.items():
        (tmp_path / name).write_bytes(data)
    for name, (data, line, words) in cut.items():
        with pytest.raises(hlodump.ParseError) as e:
            reader(str(tmp_path / name))
        assert e.value.line == line and words in e.value.message, (name, e.value)
    d = reader(str(tmp_path), on_error="collect")
    paths = dict(zip(d["files"].column("file_id").to_pylist(), d["files"].column("path").to_pylist()))
    got = {paths[e["file_id"]]: (e["line"], e["message"]) for e in d["errors"].to_pylist()}
    assert set(got) == set(cut)
    for name, (_, line, words) in cut.items():
        assert got[name][0] == line and words in got[name][1], name
    # complete files stay clean
    for ok in (LIVE, HLO, SEED):
        assert reader(str(ok), on_error="collect")["errors"].num_rows == 0


def test_06_scan_gets_the_whole_file_checks(tmp_path: Path) -> None:
    """The whole-file checks are the parsers' own (not a pass over a read's tables): a stream
    of one table (``hlodump.scan``) reports the same problems at the same lines."""
    import warnings

    import hlodump

    cut = _cut_files(tmp_path)
    for name, (data, _, _) in cut.items():
        (tmp_path / name).write_bytes(data)
    table = {"live-range": "live_ranges", "optimizations.txt": "instructions", "buffer-assignment": "allocations"}
    for name, (_, line, words) in cut.items():
        t = next(v for k, v in table.items() if k in name)
        with pytest.raises(hlodump.ParseError) as e:
            hlodump.scan(str(tmp_path / name), t).to_table()
        assert e.value.line == line and words in e.value.message, (name, e.value)
        s = hlodump.scan(str(tmp_path / name), t, on_error="collect")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s.to_table()
        assert [(r["line"], words in r["message"]) for r in s.errors.to_pylist()] == [(line, True)], name


# --------------------------------------------------------------- 7. the same dump twice


def test_07_the_same_file_or_directory_named_twice_is_read_once(reader: Any) -> None:
    once = reader(str(CF10))
    n = once["allocations"].num_rows
    for twice in ([str(CF10), str(CF10)], [str(CF10), str(CF10) + "/../" + CF10.name],
                  [str(CF10), str(CF10 / "module_0000.jit_rnn.cpu_after_optimizations-buffer-assignment.txt")]):
        d = reader(twice)
        assert d["allocations"].num_rows == n, twice
        errs = [e for e in d["files"].column("error").to_pylist() if e]
        assert errs and all("read once" in e for e in errs), errs
        assert set(d["files"].column("dump").to_pylist()) <= set(once["files"].column("dump").to_pylist()) | {
            twice[1]}, twice
    f = str(SEED)
    d = reader([f, f])
    assert d["allocations"].num_rows == reader(f)["allocations"].num_rows
    assert d["files"].column("error").to_pylist() == [None, f"OSError: same file as {f} (named twice); read once"]


def test_07_dump_names_are_normalised() -> None:
    from hlodump.io.paths import dump_roots

    assert set(dump_roots(str(CF10) + "/../" + CF10.name + "/")) == {str(CF10)}


# ---------------------------------------------------------------------- 8. atomic convert


def test_08_convert_is_all_or_nothing_and_never_follows_or_overwrites(core: Any, tmp_path: Path) -> None:
    import hlodump

    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    os.symlink(victim, out / "files.parquet")
    r = _run_cli("convert", str(SEED), str(out))
    assert r.returncode == 2 and "exist already" in r.stderr and "--overwrite" in r.stderr, r.stderr
    assert victim.read_text() == "keep me" and sorted(os.listdir(out)) == ["files.parquet"]
    r = _run_cli("convert", str(SEED), str(out), "--overwrite")
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "keep me"  # the link was replaced, its target untouched
    assert not (out / "files.parquet").is_symlink()
    names = sorted(os.listdir(out))
    assert names == sorted(f"{t}.parquet" for t in hlodump.SCHEMAS)  # no staging directory left
    # a failure half way leaves nothing new that looks complete
    d = hlodump.read_arrow(str(SEED))
    fresh = tmp_path / "fresh"
    import pyarrow.parquet as pq

    calls = {"n": 0}
    real = pq.write_table

    def fail_third(*a: Any, **k: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        real(*a, **k)

    pq.write_table = fail_third
    try:
        with pytest.raises(OSError, match="No space left"):
            d.write_parquet(fresh)
    finally:
        pq.write_table = real
    assert os.listdir(fresh) == []


# ------------------------------------------------------------------- 9. the query sandbox


def test_09_query_writes_no_temporary_files_and_has_a_memory_limit(core: Any, tmp_path: Path) -> None:
    from hlodump.cli_safety import LOCKED_CONFIG, connect, default_memory_limit

    assert LOCKED_CONFIG["temp_directory"] == ""
    con = connect()
    assert con.sql("select current_setting('temp_directory')").fetchall() == [("",)]
    assert default_memory_limit().endswith("MB")
    # a query bigger than the limit fails with a message (it was OOM-killed), and nothing
    # appears under $CWD/.tmp
    r = _run_cli("query", str(SEED), "select len(list(x)) from range(100000000) t(x)", "--memory-limit", "200MB",
                 cwd=str(tmp_path))
    assert r.returncode == 3 and "out of memory" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert not (tmp_path / ".tmp").exists()
    r = _run_cli("query", str(SEED), "select 1", "--memory-limit", "lots")
    assert r.returncode == 2 and "--memory-limit" in r.stderr and "Traceback" not in r.stderr


# -------------------------------------------------------- 10. SQL errors while fetching


@pytest.mark.parametrize("sql", ["select error('boom' || chr(27) || '[2J')"])
def test_10_sql_errors_raised_while_fetching_are_messages(core: Any, sql: str) -> None:
    r = _run_cli("query", str(SEED), sql)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("hlodump: SQL error:") and "Traceback" not in r.stderr
    assert "\x1b" not in r.stderr


def test_10_secrets_are_never_listed(core: Any) -> None:
    """`duckdb_secrets()` once failed while fetching (an error, checked above); since the query
    connection has no local file system at all (issue 39, item 13), the persistent secrets
    directory cannot be read: no secret, and no traceback, either way."""
    r = _run_cli("query", str(SEED), "select * from duckdb_secrets()")
    assert "Traceback" not in r.stderr
    assert r.returncode == 2 or "(0 rows)" in r.stdout, (r.returncode, r.stdout, r.stderr)


# --------------------------------------------- 11. object-store options that panicked


@pytest.mark.parametrize("opts", [
    {"aws_allow_http": "true"},
    {"aws_endpoint": "not a url", "aws_access_key_id": "a", "aws_secret_access_key": "b"},
    {"aws_region": "us east", "aws_access_key_id": "a", "aws_secret_access_key": "b"},
])
def test_11_bad_storage_options_are_store_errors_not_panics(opts: dict[str, str]) -> None:
    pytest.importorskip("obstore")
    code = textwrap.dedent(f"""
        import hlodump
        from hlodump.io.stores import StoreError
        try:
            hlodump.read_arrow("s3://bucket/x/", storage_options={opts!r})
        except (StoreError, PermissionError) as e:  # a 403 (e.g. from a metadata endpoint) is PermissionError
            print("StoreError:", type(e).__name__, e)
        except BaseException as e:
            print("OTHER:", type(e).__name__, e)
    """)
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(ROOT),
                       env=env)
    assert r.stdout.startswith("StoreError:"), (r.stdout, r.stderr[-2000:])
    assert "panicked" not in r.stderr and "PanicException" not in r.stdout


def test_11_a_panic_from_the_store_becomes_a_store_error() -> None:
    from hlodump.io.stores import ObstoreBackend, StoreError

    class Panic(BaseException):  # what pyo3_runtime.PanicException is
        pass

    b = ObstoreBackend("s3", "bucket", {})

    class Store:
        pass

    b._store = Store()
    import obstore

    real = obstore.list

    def boom(*a: Any, **k: Any) -> Any:
        raise Panic("called `Result::unwrap()` on an `Err` value")

    obstore.list = boom
    try:
        with pytest.raises(StoreError, match="cannot list"):
            b.list("x/")
    finally:
        obstore.list = real


# ------------------------------------------------------------- 12. credentials in URLs


def test_12_credentials_in_a_url_are_never_kept_or_printed(s3_env: Any) -> None:
    import hlodump
    from conftest import S3_BUCKET

    url = f"s3://AKIDSECRETKEY:VerySecretValue@{S3_BUCKET}/runs/control_flow/"
    d = hlodump.read_arrow(url)
    text = " ".join(str(v) for t in ("files",) for col in d[t].columns for v in col.to_pylist())
    assert "VerySecretValue" not in text and "AKIDSECRETKEY" not in text
    assert d["files"].num_rows > 0
    with pytest.raises(FileNotFoundError) as e:
        hlodump.read_arrow(f"s3://AKIDSECRETKEY:VerySecretValue@{S3_BUCKET}/no/such/prefix/")
    assert "VerySecretValue" not in str(e.value) and "AKIDSECRETKEY" not in str(e.value)
    from hlodump.io.stores import redact

    assert redact("cannot read ftp://user:pw@host/a and s3://K:S@b/k") == "cannot read ftp://host/a and s3://b/k"


# ------------------------------------------------------------ 13. /dev/null and FIFOs


def test_13_special_files_named_explicitly_are_clear_errors(core: Any, tmp_path: Path) -> None:
    import hlodump

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for p in ("/dev/null", str(fifo)):
        with pytest.raises(OSError) as e:
            hlodump.read_arrow(p)
        assert "Errno None" not in str(e.value) and "None:" not in str(e.value), str(e.value)
        assert "not a regular file" in str(e.value) and str(e.value).startswith(p)


# ------------------------------------------------------------ 14. escaped exception text


def test_14_parse_error_text_has_no_raw_terminal_controls(reader: Any, tmp_path: Path) -> None:
    import hlodump

    p = tmp_path / "module_0001.m.cpu_after_optimizations-buffer-assignment.txt"
    p.write_bytes(b"BufferAssignment:\nallocation 0: \x1b]0;pwned\x07\x1b[2J size 16\n")
    with pytest.raises(hlodump.ParseError) as e:
        reader(str(p))
    s = str(e.value)
    assert "\x1b" not in s and "\x07" not in s and "\\x1b" in s
    assert "\x1b" in e.value.text  # the attribute keeps the text as it is


# --------------------------------------------------- issue 29, item 5: newcomer edges


def test_29_extras_are_named_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import hlodump

    d = hlodump.read_arrow(str(SEED))
    import builtins

    real_import = builtins.__import__

    def no(name: str, *a: Any, **k: Any) -> Any:
        if name.split(".")[0] in ("polars", "duckdb"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no)
    for mod in ("polars", "duckdb"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    with pytest.raises(ImportError, match=r'pip install "hlodump\[polars\]"'):
        d.to_polars()
    with pytest.raises(ImportError, match=r'pip install "hlodump\[duckdb\]"'):
        d.to_duckdb()


def test_29_python_dash_m_hlodump_runs_the_cli() -> None:
    r = _run_cli("tables", str(SEED))
    assert r.returncode == 0 and "allocations" in r.stdout, r.stderr
    r = _run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("hlodump ")


@pytest.mark.parametrize("empty", [{}, [], "", ()])
def test_29_empty_inputs_are_clear_errors(empty: Any) -> None:
    import hlodump
    from hlodump.io.paths import NothingToReadError

    with pytest.raises(NothingToReadError, match="nothing to read"):
        hlodump.read_arrow(empty)
    with pytest.raises(TypeError, match="path is None"):
        hlodump.read_arrow(None)


def test_29_a_glob_that_matches_nothing_is_an_error_or_a_warning(tmp_path: Path) -> None:
    import hlodump

    pat = str(tmp_path / "nothing_*.txt")
    with pytest.raises(FileNotFoundError, match="No file matches this glob"):
        hlodump.read_arrow(pat)
    r = _run_cli("tables", pat)
    assert r.returncode == 2 and "No file matches this glob" in r.stderr and "Traceback" not in r.stderr
    r = _run_cli("tables", pat, str(SEED), "--keep-going")
    assert r.returncode == 0 and "warning" in r.stderr and "no file matches" in r.stderr, r.stderr
    assert "allocations" in r.stdout
    r = _run_cli("tables", pat, "--keep-going")
    assert r.returncode == 2 and "nothing to read" in r.stderr


# -------------------------------------------------- 15. the reference's byte grammar


def test_15_reference_and_rust_agree_on_odd_oom_prefixes_and_huge_numbers(core: Any, tmp_path: Path) -> None:
    """The reference used Python's whitespace (\\x0b, U+2028 …) in log prefixes and Python's
    4,300-digit int limit; both readers follow the byte grammar now."""
    import hlodump
    from hlodump.reference import read_arrow as ref_read
    from test_rust_vs_reference import assert_same_tables

    base = (DATA / "oom" / "gpu_ray_tabs.log").read_text().splitlines(keepends=True)
    variants = {
        "vt_in_tag.log": "".join(("(Worker\x0bx pid=1) " + l) if l.strip() else l for l in base),
        "u2028_in_tag.log": "".join(("(Worker\u2028x pid=1) " + l) if l.strip() else l for l in base),
        "ff_in_tag.log": "".join(("(Worker\x0cx pid=1) " + l) if l.strip() else l for l in base),
        "digits.log": "".join(l.replace("Size: ", "Size: 1." + "4" * 5000, 1) if "Size:" in l else l for l in base),
    }
    for name, text in variants.items():
        p = tmp_path / name
        p.write_text(text)
        fast = hlodump.read_arrow(str(p), on_error="collect")
        ref = ref_read(str(p), on_error="collect")
        assert_same_tables(fast, ref, name)


def test_minor_scan_batch_size_without_limit(core: Any) -> None:
    import hlodump

    t = hlodump.scan(str(SEED), "allocations", batch_size=2**63).to_table()
    assert t.num_rows == hlodump.read_arrow(str(SEED)).allocations.num_rows


def test_minor_allocation_checks_find_concatenations_and_values_past_their_allocation(reader: Any,
                                                                                       tmp_path: Path) -> None:
    """The buffer-assignment parsers' whole-file checks, in both readers."""
    one = SEED.read_bytes()
    p = tmp_path / "module_0001.a.tpu_after_optimizations-buffer-assignment.txt"
    p.write_bytes(one + b"\n" + one)
    n_alloc = reader(str(SEED))["allocations"].num_rows
    d = reader(str(p), on_error="collect")
    again = [m for m in d["errors"].column("message").to_pylist() if "again (first at line" in m]
    assert len(again) == n_alloc
    p.write_bytes(one.replace(b"(size=512,offset=0)", b"(size=512,offset=8)", 1))
    (e,) = reader(str(p), on_error="collect")["errors"].to_pylist()
    assert "lies past the end of allocation 0 (offset 8 + size 512 > 512 bytes)" in e["message"] and e["line"] == 3
