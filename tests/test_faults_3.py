"""Hardening, round three (issue 39): silent file losses, duplicates, bombs, bad URLs, exit codes.

One test per item, named by its number (items 1-6, 9, 11, 17, 18 here; sub-cases of 17 as
``test_17a`` …). Every test first reproduces the problem on real files, real processes and real
archives; anything that could hang or eat memory runs in a subprocess with a timeout.
"""

from __future__ import annotations

import bz2
import fcntl
import gzip
import io
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPATH = str(ROOT / "python")
DATA = ROOT / "tests" / "data"
CF10 = DATA / "corpus" / "jax-0.10.2" / "control_flow"
T10 = DATA / "corpus" / "jax-0.10.2" / "transformer"
BA = "module_0000.jit_rnn.cpu_after_optimizations-buffer-assignment.txt"
HLO = "module_0000.jit_rnn.cpu_after_optimizations.txt"

pytest.importorskip("hlodump._core")

import hlodump  # noqa: E402
from hlodump import analysis as A  # noqa: E402
from hlodump.exceptions import (DecompressionLimitError, DuplicateFileError, InputFileError,  # noqa: E402
                                UnsupportedURLError)


def _cli(*args: str, timeout: float = 300, cwd: Any = None, env: Any = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=PYPATH)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "hlodump.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or str(ROOT), env=e)


def _run(code: str, timeout: float = 300, env: Any = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=PYPATH)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT), env=e)


def _one_module(dst: Path, module: str = "module_0000") -> Path:
    """A dump folder with the files of one module of CF10."""
    dst.mkdir(parents=True, exist_ok=True)
    for f in CF10.iterdir():
        if f.name.startswith(module + ".") and f.is_file():
            shutil.copy(f, dst / f.name)
    return dst


def _errors(d: Any) -> dict[str, str]:
    f = d["files"]
    return {p: e for p, e in zip(f.column("path").to_pylist(), f.column("error").to_pylist()) if e}


def _figures(d: Any) -> list[tuple[str, Any, Any]]:
    return sorted((m["module"], m["total_bytes"], m["allocations"]) for m in A.summary(d, top=0))


# ------------------------------------------------------------------ 1. whole-file failures


def test_01_whole_file_failure_is_reported(tmp_path: Path) -> None:
    dump = _one_module(tmp_path / "dump")
    good = _one_module(tmp_path / "other", "module_0002")
    # a truncated .gz, a FIFO: each fails as a whole
    data = gzip.compress((CF10 / "module_0002.jit_rnn_loss.cpu_after_optimizations.txt").read_bytes())
    (dump / "module_0002.jit_rnn_loss.cpu_after_optimizations.txt.gz").write_bytes(data[: len(data) // 2])
    os.mkfifo(dump / "module_0009.jit_x.cpu_after_optimizations.txt")
    p = _cli("summary", dump)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "2 files could not be read" in p.stderr, p.stderr
    assert "module_0002.jit_rnn_loss.cpu_after_optimizations.txt.gz: OSError: cannot read gzip data" in p.stderr
    assert "module_0009.jit_x.cpu_after_optimizations.txt:" in p.stderr and "--keep-going" in p.stderr
    assert "Traceback" not in p.stderr and "[Errno" not in p.stderr
    # --keep-going: the rest is analysed, and the failures are the final line's errors
    p = _cli("summary", "--keep-going", dump)
    assert p.returncode == 1 and "jit_rnn" in p.stdout, p.stderr
    assert "2 errors in 2 files" in p.stderr and "cannot read gzip data" in p.stderr
    # every file of a module failed: "nothing to analyse" says which files failed and why
    only = tmp_path / "only"
    only.mkdir()
    (only / "module_0002.jit_rnn_loss.cpu_after_optimizations.txt.gz").write_bytes(data[: len(data) // 2])
    p = _cli("summary", "--keep-going", only)
    assert p.returncode == 2 and "nothing to analyse" in p.stderr, p.stderr
    assert "1 file could not be read" in p.stderr and "cannot read gzip data" in p.stderr, p.stderr
    p = _cli("cost", "--keep-going", only)
    assert "nothing to analyse" in p.stderr and "cannot read gzip data" in p.stderr, p.stderr
    # a dump without failures is unchanged
    p = _cli("summary", good)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    # a symlink out of the directory is a file not read: said so; --follow-links reads it
    os.symlink(CF10 / HLO.replace("0000.jit_rnn", "0002.jit_rnn_loss"),
               good / "module_0002.jit_rnn_loss.linked.cpu_after_optimizations.txt")
    p = _cli("tables", good)
    assert p.returncode == 1 and "leaves the directory read" in p.stderr, p.stderr
    assert _cli("tables", "--follow-links", good).returncode == 0


# ------------------------------------------------------------------ 2. the same module twice


def test_02_same_module_twice(tmp_path: Path) -> None:
    single = hlodump.read_arrow(str(CF10 / BA))
    want = _figures(single)
    n = single["allocations"].num_rows
    # a tar holding one member twice (identical)
    tar = tmp_path / "twice.tar"
    with tarfile.open(tar, "w") as t:
        t.add(CF10 / BA, arcname=BA)
        t.add(CF10 / BA, arcname=BA)
    d = hlodump.read_arrow(str(tar))
    assert d["allocations"].num_rows == n and _figures(d) == want
    assert _errors(d) == {f"{tar}/{BA}": f"OSError: same content as {tar}/{BA} (the same file twice); read once"}
    # a folder holding X.txt and X.txt.gz (identical)
    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(CF10 / BA, both / BA)
    (both / (BA + ".gz")).write_bytes(gzip.compress((CF10 / BA).read_bytes()))
    d = hlodump.read_arrow(str(both))
    assert d["allocations"].num_rows == n and _figures(d) == want
    assert _errors(d) == {f"{BA}.gz": f"OSError: same content as {BA} (the same file twice); read once"}
    p = _cli("summary", "--json", both)
    assert p.returncode == 0, p.stderr
    assert f"hlodump: note: {BA}.gz: OSError: same content as {BA}" in p.stderr
    assert [(m["total_bytes"], m["allocations"]) for m in json.loads(p.stdout)] == [(w[1], w[2]) for w in want]
    # a folder holding run.tar and run.tar.gz of the same dump
    packs = tmp_path / "packs"
    packs.mkdir()
    with tarfile.open(packs / "run.tar", "w") as t:
        t.add(CF10 / BA, arcname=BA)
    (packs / "run.tar.gz").write_bytes(gzip.compress((packs / "run.tar").read_bytes()))
    d = hlodump.read_arrow(str(packs))
    assert d["allocations"].num_rows == n and _figures(d) == want
    assert _errors(d) == {f"run.tar.gz/{BA}": f"OSError: same content as run.tar/{BA} (the same file twice); read once"}
    # different content: an error naming both, never a sum of the two
    other = (CF10 / BA).read_text().replace("allocation 0:", "allocation 0:", 1).splitlines(keepends=True)
    (both / (BA + ".gz")).write_bytes(gzip.compress("".join(other[:-5]).encode()))
    with pytest.raises(DuplicateFileError) as e:
        hlodump.read_arrow(str(both))
    assert str(e.value).startswith(f"{BA}.gz: differs from {BA}: the same file twice")
    assert (e.value.first, e.value.second) == (BA, BA + ".gz")
    d = hlodump.read_arrow(str(both), on_error="collect")
    assert d["allocations"].num_rows == n and "differs from" in _errors(d)[f"{BA}.gz"]
    p = _cli("summary", both)
    assert p.returncode == 1 and f"{BA}.gz: differs from" in p.stderr and "Traceback" not in p.stderr, p.stderr


# ------------------------------------------------------------------ 3. capture into a used folder

CAPTURE = """
import json, sys
import numpy as np
import jax
import hlodump, hlodump.analysis
scale, passes = float(sys.argv[1]), sys.argv[2] == "passes"
def f(x):
    return x * scale + 1
d = hlodump.capture(f, np.ones((8,), np.float32), dump_to=sys.argv[3], passes=passes)
files = d["files"]
print(json.dumps({"paths": files.column("path").to_pylist(), "stages": files.column("stage").to_pylist(),
                  "modules": sorted({m["module"] for m in hlodump.analysis.summary(d, top=0)})}))
"""


def test_03_capture_into_a_folder_with_an_earlier_compile(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    out = tmp_path / "dump"

    def run(scale: str, passes: str) -> dict:
        p = subprocess.run([sys.executable, "-c", CAPTURE, scale, passes, str(out)], capture_output=True, text=True,
                           timeout=600, env=dict(os.environ, PYTHONPATH=PYPATH, JAX_PLATFORMS="cpu"))
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    first = run("2", "passes")  # an earlier process: the same module id, per-pass files too
    assert "pass" in first["stages"]
    before = set(os.listdir(out))
    second = run("3", "no")  # the same function name and module id: XLA rewrites the same names
    assert "pass" not in second["stages"], second  # the earlier run's per-pass files are not this compile's
    assert len(second["modules"]) == 1
    assert len(second["paths"]) < len(first["paths"])
    names = {os.path.basename(p) for p in second["paths"]}
    assert names and names <= before  # every file it read was rewritten by it …
    left = before - names
    assert left and all(".0" in n or n.endswith(".txt") for n in left)  # … the rest is the old run's


# ------------------------------------------------------------------ 4. numbers past int32, nested tars


def test_04_pass_number_too_large_and_tar_in_tar(tmp_path: Path) -> None:
    src = next(f for f in sorted(T10.iterdir()) if ".after_" in f.name and ".before_" in f.name)
    step = src.name.split(".")[2]
    assert step.isdigit()
    d0 = hlodump.read_arrow(str(src))
    assert d0["files"].column("stage").to_pylist() == ["pass"]
    big = tmp_path / "big"
    big.mkdir()
    name = src.name.replace(f".{step}.", ".2147483648.", 1)
    shutil.copy(src, big / name)
    shutil.copy(src, big / src.name.replace(f".{step}.", ".2147483647.", 1))  # the largest that fits
    d = hlodump.read_arrow(str(big))
    rows = {r["path"]: r for r in d["files"].to_pylist()}
    assert rows[name]["error"] == ("OSError: per-pass number 2,147,483,648 is larger than 2^31−1 = 2,147,483,647 "
                                   "(an int32 column); not read")
    ok = rows[src.name.replace(f".{step}.", ".2147483647.", 1)]
    assert ok["error"] is None and ok["stage"] == "pass" and ok["pass_index"] == 2**31 - 1
    with pytest.raises(InputFileError, match="per-pass number 2,147,483,648 is larger"):
        hlodump.read_arrow(str(big / name))
    # module ids too
    (big / name).unlink()
    shutil.copy(CF10 / HLO, big / HLO.replace("module_0000", "module_99999999999"))
    d = hlodump.read_arrow(str(big), on_error="collect")
    assert "module id 99,999,999,999 is larger" in _errors(d)[HLO.replace("module_0000", "module_99999999999")]
    # a tar inside a tar: read like the folder it holds (bounded depth), never a silent 'other'
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w") as t:
        t.add(CF10 / HLO, arcname="d/" + HLO)
    outer = tmp_path / "outer.tar"
    with tarfile.open(outer, "w") as t:
        info = tarfile.TarInfo("inner.tar.gz")
        packed = gzip.compress(inner.getvalue())
        info.size = len(packed)
        t.addfile(info, io.BytesIO(packed))
    d = hlodump.read_arrow(str(outer))
    f = d["files"].to_pylist()
    assert [(r["path"], r["kind"], r["error"]) for r in f] == [(f"{outer}/inner.tar.gz/d/{HLO}", "hlo_module", None)]
    assert d["instructions"].num_rows == hlodump.read_arrow(str(CF10 / HLO))["instructions"].num_rows
    # deeper than MAX_ARCHIVE_DEPTH: a row with an error
    from hlodump.io.archives import MAX_ARCHIVE_DEPTH

    blob = inner.getvalue()
    for k in range(MAX_ARCHIVE_DEPTH):
        b = io.BytesIO()
        with tarfile.open(fileobj=b, mode="w") as t:
            info = tarfile.TarInfo(f"n{k}.tar")
            info.size = len(blob)
            t.addfile(info, io.BytesIO(blob))
        blob = b.getvalue()
    deep = tmp_path / "deep.tar"
    deep.write_bytes(blob)
    d = hlodump.read_arrow(str(deep))
    (row,) = d["files"].to_pylist()
    assert row["path"].endswith("/n0.tar") and "a tar archive inside 3 archives; not read" in row["error"], row


# ------------------------------------------------------------------ 5. convert: all or nothing, one writer


def _tables(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def test_05_convert_is_all_or_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _cli("convert", CF10, out).returncode == 0
    old = _tables(out)
    # one table's path cannot be replaced (a directory): nothing of the new set lands
    names = list(old)
    blocker = out / names[len(names) // 2]
    blocker.unlink()
    blocker.mkdir()
    (blocker / "keep").write_text("mine")
    p = _cli("convert", "--overwrite", T10, out)
    assert p.returncode != 0 and "is a directory" in p.stderr and "nothing written" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert _tables(out) == {k: v for k, v in old.items() if k != blocker.name}
    assert (blocker / "keep").read_text() == "mine"
    assert not [n for n in os.listdir(out) if n.startswith(".hlodump-")]
    blocker.joinpath("keep").unlink()
    blocker.rmdir()
    # a successful --overwrite replaces the whole set
    assert _cli("convert", "--overwrite", T10, out).returncode == 0
    new = _tables(out)
    assert set(new) == set(old) and all(new[k] != old[k] for k in ("files.parquet", "instructions.parquet"))
    # a second writer while one holds the directory: fails at once, clearly
    busy = tmp_path / "busy"
    busy.mkdir()
    fd = os.open(busy, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        p = _cli("convert", CF10, busy)
        assert p.returncode == 3 and "another hlodump convert" in p.stderr and "nothing written" in p.stderr, p.stderr
        assert os.listdir(busy) == []
    finally:
        os.close(fd)
    # two converts into one new output at once: exactly one succeeds, the other says why
    both = tmp_path / "both"
    env = dict(os.environ, PYTHONPATH=PYPATH)
    procs = [subprocess.Popen([sys.executable, "-m", "hlodump.cli", "convert", str(src), str(both)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for src in (CF10, T10)]
    res = [(q.wait(timeout=300), q.stderr.read()) for q in procs]
    assert sorted(r for r, _ in res) in ([0, 2], [0, 3]), res
    loser = next(err for r, err in res if r != 0)
    assert "another hlodump convert" in loser or "exist already" in loser, loser
    # staging folders a killed convert left are removed (and said so) by the next one
    stale = tmp_path / "stale"
    (stale / ".hlodump-k1ll3d").mkdir(parents=True)
    (stale / ".hlodump-k1ll3d" / "files.parquet").write_bytes(b"PAR1 half")
    p = _cli("convert", CF10, stale)
    assert p.returncode == 0, p.stderr
    assert "removed 1 staging folder" in p.stderr and ".hlodump-k1ll3d" in p.stderr
    assert not [n for n in os.listdir(stale) if n.startswith(".hlodump-")]
    # a convert killed in the middle of its swap: the next one puts the old set back first
    before = _tables(out)
    tables = len(before)
    kill = f"""
        import os, signal, hlodump
        d = hlodump.read_arrow({str(CF10)!r})
        real, n = os.rename, [0]
        def rename(a, b):
            n[0] += 1
            if n[0] == {tables} + 3:  # every old file moved aside, two new ones placed
                os.kill(os.getpid(), signal.SIGKILL)
            return real(a, b)
        os.rename = rename
        d.write_parquet({str(out)!r}, overwrite=True)
    """
    p = _run(kill)
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert _tables(out) != before and [n for n in os.listdir(out) if n.startswith(".hlodump-")]  # mixed
    p = _cli("convert", CF10, out)  # no --overwrite: puts the old set back, then refuses
    assert p.returncode == 2 and "exist already" in p.stderr, p.stderr
    assert f"put back {tables} table file(s)" in p.stderr, p.stderr
    assert _tables(out) == before and not [n for n in os.listdir(out) if n.startswith(".hlodump-")]


# ------------------------------------------------------------------ 6. query -o FILE


def test_06_query_output_replaced_only_after_success(tmp_path: Path) -> None:
    out = tmp_path / "result.csv"
    out.write_text("precious\n")
    os.chmod(out, 0o640)
    failing = "select cast(path as integer) as n from files"  # fails while rows are fetched
    for fmt in ("csv", "table", "json", "parquet"):
        p = _cli("query", CF10, failing, "--format", fmt, "-o", out)
        assert p.returncode == 2 and "SQL error" in p.stderr and "Traceback" not in p.stderr, (fmt, p.stderr)
        assert out.read_text() == "precious\n", fmt
        assert os.listdir(tmp_path) == ["result.csv"], fmt  # no temporary file left
    p = _cli("query", CF10, "select count(*) as n from files", "--format", "csv", "-o", out)
    assert p.returncode == 0, p.stderr
    assert out.read_text().splitlines()[0] == "n" and os.stat(out).st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["result.csv"]
    fresh = tmp_path / "new.json"
    p = _cli("query", CF10, "select 1 as one", "--format", "json", "-o", fresh)
    assert p.returncode == 0 and json.loads(fresh.read_text()) == [{"one": 1}]


# ------------------------------------------------------------------ 9. URLs that are not stores


@pytest.mark.parametrize("url", ["reference://", "jlab://x", "tar://x::file:///etc/passwd",
                                 "simplecache::memory://x", "nosuchscheme://x/y"])
def test_09_bad_urls_are_one_line(url: str) -> None:
    p = _cli("tables", url)
    assert p.returncode == 2, (url, p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.startswith(f"hlodump: {url}: "), p.stderr
    with pytest.raises(UnsupportedURLError):
        hlodump.read_arrow(url)


# ------------------------------------------------------------------ 11. decompression bombs


def _bomb(path: Path, total: int, module: Any = bz2) -> Path:
    """A file of ``module``'s format (bz2, gzip, lzma: each reads concatenated streams) that
    expands to ``total`` bytes of zeros: one 8 MiB stream repeated, so it is made in no time."""
    piece = module.compress(b"\0" * (8 << 20))
    path.write_bytes(piece * (total // (8 << 20)))
    return path


def test_11_decompression_is_bounded(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "module_0001.jit_f.before_optimizations.txt.bz2", 1 << 30)  # 1 GiB of zeros
    assert bomb.stat().st_size < 100_000
    # named: the read stops at the bound, in little memory, with an error naming the file and bound
    code = f"""
        import resource, hlodump
        from hlodump.exceptions import DecompressionLimitError
        try:
            hlodump.read_arrow({str(bomb)!r})
        except DecompressionLimitError as e:
            print(e)
        # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's peak across exec
        # on Linux: a big pytest process would be measured instead)
        print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) // 1024)
    """
    p = _run(code, timeout=120)
    assert p.returncode == 0, p.stderr
    msg, rss_mb = p.stdout.strip().splitlines()
    assert msg.startswith(f"{bomb}: decompresses to more than 8,388,608 bytes (100 × its"), msg
    assert "--max-decompressed" in msg and "[Errno" not in msg
    assert int(rss_mb) < 400, rss_mb  # 1 GiB never buffered
    print(f"bomb {bomb.stat().st_size:,} B → 1 GiB: stopped at 8 MiB, max RSS {rss_mb} MB")
    # in a directory: a row naming the bound; the CLI says so and exits 1 (with --keep-going too)
    dump = _one_module(tmp_path / "dump")
    shutil.copy(bomb, dump / bomb.name)
    d = hlodump.read_arrow(str(dump))
    assert _errors(d)[bomb.name].startswith("DecompressionLimitError: decompresses to more than")
    p = _cli("summary", dump)
    assert p.returncode == 1 and bomb.name in p.stderr and "decompresses to more than" in p.stderr, p.stderr
    # both bounds settable, in Python and on the command line
    with pytest.raises(DecompressionLimitError, match=r"more than 2,000,000 bytes \(at most 2,000,000 bytes\)"):
        hlodump.read_arrow(str(bomb), max_decompressed_bytes=2_000_000)
    with pytest.raises(DecompressionLimitError, match="more than 16,777,216 bytes"):
        hlodump.read_arrow(str(bomb), max_decompressed_ratio=1e9, max_decompressed_bytes=16 << 20)
    with pytest.raises(DecompressionLimitError, match="more than 1,048,576 bytes"):
        list(hlodump.scan(str(bomb), "instructions", max_decompressed_bytes=1 << 20).batches())
    p = _cli("tables", "--max-decompressed", "4M", bomb)
    assert p.returncode == 1 and f"{bomb}: decompresses to more than 4,194,304 bytes" in p.stderr, p.stderr
    p = _cli("tables", "--max-decompressed-ratio", "0", bomb)
    assert p.returncode == 2 and "positive" in p.stderr
    # the bound holds for the files of a read together: many small bombs cannot add up
    many = tmp_path / "many"
    many.mkdir()
    for k in range(4):
        _bomb(many / f"module_000{k}.jit_f{k}.before_optimizations.txt.gz", 8 << 20, gzip)
    d = hlodump.read_arrow(str(many), on_error="collect", max_decompressed_bytes=20 << 20)
    errs = _errors(d)
    over = [p for p, e in errs.items() if e.startswith("DecompressionLimitError")]
    assert len(over) == 2 and "may expand to 20,971,520 bytes together" in errs[over[0]], errs
    # gzip, xz and a compressed tar archive stop at their bound too
    for module, suffix in ((gzip, ".gz"), (lzma, ".xz")):
        b = _bomb(tmp_path / ("module_0002.jit_g.before_optimizations.txt" + suffix), 64 << 20, module)
        with pytest.raises(DecompressionLimitError, match="more than 8,388,608 bytes"):
            hlodump.read_arrow(str(b))
    tb = io.BytesIO()
    with tarfile.open(fileobj=tb, mode="w") as t:
        info = tarfile.TarInfo(HLO)
        info.size = 64 << 20
        t.addfile(info, io.BytesIO(b"\0" * (64 << 20)))
    tarbomb = tmp_path / "dump.tar.bz2"
    tarbomb.write_bytes(bz2.compress(tb.getvalue()))
    with pytest.raises(DecompressionLimitError, match=f"{tarbomb}: decompresses to more than 8,388,608"):
        hlodump.read_arrow(str(tarbomb))
    # real dumps are far below the default bound (they compress 5-20×)
    for module, suffix in ((gzip, ".gz"), (bz2, ".bz2"), (lzma, ".xz")):
        c = tmp_path / (HLO + suffix)
        c.write_bytes(module.compress((CF10 / HLO).read_bytes()))
        assert hlodump.read_arrow(str(c))["instructions"].num_rows == \
            hlodump.read_arrow(str(CF10 / HLO))["instructions"].num_rows


# ------------------------------------------------------------------ 17. clear messages


def test_17a_no_errno_prefixes(tmp_path: Path) -> None:
    bad = tmp_path / (HLO + ".gz")
    bad.write_bytes(gzip.compress((CF10 / HLO).read_bytes())[:200])
    with pytest.raises(InputFileError) as e:
        hlodump.read_arrow(str(bad))
    assert str(e.value).startswith(f"{bad}: cannot read gzip data (") and "[Errno" not in str(e.value)
    junk = tmp_path / "junk.tar.xz"
    junk.write_bytes(b"not xz at all")
    with pytest.raises(InputFileError) as e:
        hlodump.read_arrow(str(junk))
    assert str(e.value).startswith(f"{junk}: cannot read tar archive (") and "Errno" not in str(e.value)
    for path in (bad, junk):
        p = _cli("tables", path)
        assert p.returncode == 1 and "[Errno" not in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert p.stderr.startswith(f"hlodump: {path}: cannot read"), p.stderr


def test_17b_zst_without_zstandard_says_how_to_install(tmp_path: Path) -> None:
    z = tmp_path / "d" / (HLO + ".zst")
    z.parent.mkdir()
    z.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 32)  # a zstd frame header
    code = f"""
        import sys
        sys.modules["zstandard"] = None  # as if it were not installed
        import hlodump
        d = hlodump.read_arrow({str(z.parent)!r})
        print(d["files"].column("error").to_pylist()[0])
        try:
            hlodump.read_arrow({str(z)!r})
        except OSError as e:
            print(e)
    """
    p = _run(code)
    assert p.returncode == 0, p.stderr
    row, raised = p.stdout.strip().splitlines()
    assert row == "OSError: reading zstandard files needs the zstandard package: pip install zstandard", row
    assert raised == f"{z}: reading zstandard files needs the zstandard package: pip install zstandard", raised


def test_17c_capture_of_a_string_is_a_type_error() -> None:
    pytest.importorskip("jax")
    with pytest.raises(TypeError, match=r"not str 'x'; to read a dump that exists, use hlodump.read_arrow"):
        hlodump.capture("x")
    with pytest.raises(TypeError, match="not bytes"):
        hlodump.capture(b"x")


def test_17d_record_of_a_program_killed_by_a_signal(tmp_path: Path) -> None:
    p = _cli("record", "-o", tmp_path / "rec", "--", "sh", "-c", "kill -9 $$")
    assert p.returncode == 128 + signal.SIGKILL, (p.returncode, p.stderr)
    assert "was killed by SIGKILL" in p.stderr and "status -9" not in p.stderr, p.stderr
    p = _cli("record", "-o", tmp_path / "rec2", "--", "sh", "-c", "exit 5")
    assert p.returncode == 5 and "exited with status 5" in p.stderr


# ------------------------------------------------------------------ 18. one exit code per kind


def test_18_exit_codes_are_one_per_kind(tmp_path: Path) -> None:
    from hlodump.cli import common

    assert (common.EXIT_OK, common.EXIT_INPUT, common.EXIT_USAGE, common.EXIT_ENVIRONMENT) == (0, 1, 2, 3)
    missing = _cli("tables", tmp_path / "nope")
    null = _cli("tables", "/dev/null")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    named_fifo = _cli("tables", fifo, timeout=60)
    for p in (missing, null, named_fifo):  # an input path that is no dump file: usage (2)
        assert p.returncode == 2, (p.args, p.returncode, p.stderr)
        assert "Traceback" not in p.stderr and "[Errno" not in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr
    assert null.stderr.startswith("hlodump: /dev/null: ") and missing.stderr.endswith("No such file or directory\n")
    bad = tmp_path / HLO
    bad.write_text("HloModule m\n\nENTRY e {\n  this is not HLO\n}\n")
    assert _cli("tables", bad).returncode == 1  # malformed input
    assert _cli("tables", "--keep-going", bad).returncode == 1
    assert _cli("tables", "--keep-going", "--errors-ok", bad).returncode == 0
    assert _cli("summary", "--module", "nosuch", CF10).returncode == 2  # a usage mistake
    assert _cli("tables", "--threads", "0", CF10).returncode == 2
    assert _cli("tables", CF10).returncode == 0
    # documented: in --help and in docs/bad-input.md
    h = _cli("--help")
    assert h.returncode == 0 and "exit status:" in h.stdout
    for code in ("0 ", "1 ", "2 ", "3 ", "128+N"):
        assert f"  {code}" in h.stdout, code
    doc = (ROOT / "docs" / "bad-input.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 128+N |"):
        assert code in doc, code
