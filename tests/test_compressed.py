"""Compressed dump files read transparently (issue 31): `.gz`, `.bz2`, `.xz` (and `.zst` when
the `zstandard` package is installed) are decompressed into one buffer each and read like the
file they hold; the name is classified without the suffix. XLA's own `….pb.gz` stay as they
are (binary protobufs: `other` rows). A tar of a dump directory (`.tar`, `.tar.gz`/`.tgz`,
`.tar.bz2`, `.tar.xz`) reads like the directory, its members shown as ARCHIVE/member."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import shutil
import tarfile
from pathlib import Path
from typing import Callable

import pytest

from conftest import DATA

CF = os.path.join(DATA, "corpus/jax-0.10.2/control_flow")
COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


def _same_except_path(a, b) -> None:
    for name in a:
        ra, rb = a[name].to_pylist(), b[name].to_pylist()
        if name == "files":
            for r in ra + rb:
                r.pop("path"), r.pop("dump")
        assert ra == rb, name


@pytest.mark.parametrize("suffix", sorted(COMPRESS))
def test_a_compressed_directory_reads_like_the_plain_one(reader, tmp_path: Path, suffix: str) -> None:
    for f in sorted(os.listdir(CF)):
        full = os.path.join(CF, f)
        if os.path.isfile(full) and f.startswith(("module_0002", "module_0004")):
            (tmp_path / (f + suffix)).write_bytes(COMPRESS[suffix](Path(full).read_bytes()))
    plain = tmp_path / "plain"
    plain.mkdir()
    for f in sorted(os.listdir(CF)):
        if os.path.isfile(os.path.join(CF, f)) and f.startswith(("module_0002", "module_0004")):
            shutil.copy(os.path.join(CF, f), plain / f)
    packed = reader(str(tmp_path / ("*" + suffix)))
    want = reader(str(plain / "*"))
    assert packed.instructions.num_rows > 0 and packed.allocations.num_rows > 0
    _same_except_path(packed, want)
    # one file named explicitly
    (name,) = [f for f in os.listdir(plain) if f.endswith("-buffer-assignment.txt") and f.startswith("module_0002")]
    one = reader(str(tmp_path / (name + suffix)))
    assert one.files.to_pylist()[0]["path"].endswith(name + suffix)
    assert one.files.to_pylist()[0]["kind"] == "buffer_assignment"
    _same_except_path(one, reader(str(plain / name)))


def test_a_corrupt_file_is_an_error_naming_it(reader, tmp_path: Path) -> None:
    bad = tmp_path / "module_0001.jit_f.before_optimizations.txt.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    with pytest.raises(OSError, match="cannot read gzip data"):
        reader(str(bad))
    (tmp_path / "module_0001.jit_f.cpu_after_optimizations.txt").write_text("HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")
    d = reader(str(tmp_path))
    errs = {os.path.basename(r["path"]): r["error"] for r in d.files.to_pylist()}
    assert errs[bad.name].startswith("OSError: cannot read gzip data") and d.instructions.num_rows == 1


def test_xla_compressed_protobufs_are_not_decompressed(reader, tmp_path: Path) -> None:
    p = tmp_path / "module_0001.jit_f.execution_0001.hlo_snapshot.pb.gz"
    p.write_bytes(gzip.compress(b"\x0a\x05jit_f"))
    (row,) = reader(str(p)).files.to_pylist()
    assert row["kind"] == "other" and row["size_bytes"] == p.stat().st_size


def test_compressed_hlo_protos_are_read(reader, tmp_path: Path) -> None:
    """``.hlo.pb.gz`` and ``-memory-usage-report.pb.gz`` are ours (docs/protos.md): read."""
    src = Path(__file__).parent / "data" / "proto_twins" / "jax-0.12.0.1" / "mlp"
    for f in sorted(src.glob("*.pb")):
        (tmp_path / (f.name + ".gz")).write_bytes(gzip.compress(f.read_bytes()))
    d = reader(str(tmp_path))
    kinds = sorted(r["kind"] for r in d.files.to_pylist())
    assert kinds == ["hlo_proto", "hlo_proto", "memory_usage_report_proto"]
    assert d.instructions.num_rows > 0 and d.heap_trace.num_rows > 0 and d.memory_report.num_rows > 0


# ------------------------------------------------------------------ a tar of a dump directory

TAR_MODES = {".tar": "w", ".tar.gz": "w:gz", ".tgz": "w:gz", ".tar.bz2": "w:bz2", ".tar.xz": "w:xz"}


def _tar(path: Path, mode: str, add: Callable[[tarfile.TarFile], None]) -> Path:
    with tarfile.open(path, mode) as t:
        add(t)
    return path


@pytest.mark.parametrize("suffix", [".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz"])
def test_a_tar_of_a_dump_directory_reads_like_the_directory(reader, tmp_path: Path, suffix: str) -> None:
    archive = _tar(tmp_path / ("cf" + suffix), TAR_MODES[suffix], lambda t: t.add(CF, arcname="control_flow"))
    packed, want = reader(str(archive)), reader(CF)
    assert packed.files.num_rows == want.files.num_rows > 100
    assert packed.instructions.num_rows == want.instructions.num_rows > 1000
    _same_except_path(packed, want)
    paths = [r["path"] for r in packed.files.to_pylist()]
    rel = [r["path"] for r in want.files.to_pylist()]
    assert paths == [f"{archive}/control_flow/{p}" for p in rel]  # ARCHIVE/member, walk order
    assert {r["dump"] for r in packed.files.to_pylist()} == {f"{archive}/control_flow"}
    # found by walking a directory that holds it: the same members, under the walked path
    walked = reader(str(tmp_path))
    assert walked.files.num_rows == want.files.num_rows
    assert walked.instructions.equals(packed.instructions)


def test_tar_members_that_are_not_regular_files_are_rows_with_a_note(reader, tmp_path: Path) -> None:
    src = os.path.join(CF, "module_0002.jit_rnn_loss.before_optimizations.txt")
    data = Path(src).read_bytes()

    def add(t: tarfile.TarFile) -> None:
        t.add(src, arcname="d/module_0002.jit_rnn_loss.before_optimizations.txt")
        link = tarfile.TarInfo("d/module_0003.jit_f.before_optimizations.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
        fifo = tarfile.TarInfo("d/pipe")
        fifo.type = tarfile.FIFOTYPE
        t.addfile(fifo)
        evil = tarfile.TarInfo("../../module_0009.jit_g.before_optimizations.txt")
        evil.size = len(data)
        t.addfile(evil, io.BytesIO(data))
        gz = gzip.compress(data)
        inner = tarfile.TarInfo("d/module_0004.jit_h.before_optimizations.txt.gz")
        inner.size = len(gz)
        t.addfile(inner, io.BytesIO(gz))

    archive = _tar(tmp_path / "a.tar", "w", add)
    before = sorted(os.listdir(tmp_path))
    d = reader(str(archive))
    assert sorted(os.listdir(tmp_path)) == before and not os.path.exists(tmp_path.parent.parent / "module_0009.jit_g.before_optimizations.txt")
    rows = {r["path"][len(str(archive)) + 1:]: r for r in d.files.to_pylist()}
    assert rows["d/module_0003.jit_f.before_optimizations.txt"]["error"] == \
        "OSError: not a regular file (tar member: symlink to /etc/passwd); not read"
    assert rows["d/pipe"]["error"] == "OSError: not a regular file (tar member: FIFO); not read"
    # the `..` member is read from memory under its own name, classified by it
    up = rows["../../module_0009.jit_g.before_optimizations.txt"]
    assert (up["error"], up["parsed"], up["module_name"]) == (None, True, "jit_g")
    inner = rows["d/module_0004.jit_h.before_optimizations.txt.gz"]
    assert (inner["error"], inner["size_bytes"], inner["module_name"]) == (None, len(data), "jit_h")
    by_file = [r["file_id"] for r in d.computations.to_pylist()]
    assert len(set(by_file)) == 3  # the regular member, the `..` one and the gzipped one


def test_a_corrupt_archive_is_an_error_naming_it(reader, tmp_path: Path) -> None:
    archive = _tar(tmp_path / "cf.tar.gz", "w:gz", lambda t: t.add(CF, arcname="control_flow"))
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(OSError, match="cannot read tar archive") as e:
        reader(str(cut))
    assert str(cut) in str(e.value)
    junk = tmp_path / "sub" / "junk.tar"
    junk.parent.mkdir()
    junk.write_bytes(b"this is not a tar archive at all" * 40)
    (tmp_path / "sub" / "module_0001.jit_f.cpu_after_optimizations.txt").write_text(
        "HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")
    d = reader(str(tmp_path / "sub"))
    errs = {os.path.basename(r["path"]): r["error"] for r in d.files.to_pylist()}
    assert errs["junk.tar"].startswith("OSError: cannot read tar archive") and d.instructions.num_rows == 1


def test_scan_reads_a_tar_and_a_compressed_file_like_read_arrow(tmp_path: Path) -> None:
    import hlodump

    archive = _tar(tmp_path / "cf.tgz", "w:gz", lambda t: t.add(CF, arcname="control_flow"))
    got = hlodump.scan(str(archive), "instructions").to_table()
    assert got.num_rows > 1000 and got.to_pylist() == hlodump.read_arrow(CF).instructions.to_pylist()
    name = "module_0002.jit_rnn_loss.before_optimizations.txt"
    (tmp_path / (name + ".gz")).write_bytes(gzip.compress(Path(CF, name).read_bytes()))
    one = hlodump.scan(str(tmp_path / (name + ".gz")), "instructions").to_table()
    assert one.num_rows > 0 and one.to_pylist() == hlodump.read_arrow(os.path.join(CF, name)).instructions.to_pylist()


def test_an_archive_with_more_members_than_max_files_stops_clearly(reader, tmp_path: Path) -> None:
    """A tar is read into memory member by member: it counts against ``max_files`` like a
    directory walk, and stops with the walk's error (never a partial read)."""
    import tarfile

    from hlodump.io.paths import WalkLimitError

    arc = tmp_path / "dump.tar"
    with tarfile.open(arc, "w") as tar:
        tar.add(CF, arcname="control_flow")
    n = sum(1 for _ in tarfile.open(arc))
    assert reader(str(arc), max_files=n)["files"].num_rows > 0
    with pytest.raises(WalkLimitError, match="more than 5 archive members"):
        reader(str(arc), max_files=5)


def _member_offsets(archive: Path) -> tuple[list[int], int]:
    """Where each member's header starts, and how many members are regular files."""
    with tarfile.open(archive) as t:
        members = t.getmembers()
        return [m.offset for m in members], sum(m.isreg() for m in members)


@pytest.mark.parametrize("compress", ["", ".gz", ".bz2", ".xz"])
def test_a_tar_cut_at_or_inside_a_member_header_is_an_error(reader, tmp_path: Path, compress: str) -> None:
    """Issue 50: ``tarfile`` takes a header that is missing (the data ends where it should be),
    cut short or damaged after the first member for the end of the archive, so a tar cut there
    read as a shorter archive (60 of 120 files, no error; also gzip/bzip2/xz'd). Each is an error
    now, as is data after the end-of-archive block; a whole archive still reads."""
    whole = _tar(tmp_path / "cf.tar", "w", lambda t: t.add(CF, arcname="control_flow"))
    data = whole.read_bytes()
    offsets, files = _member_offsets(whole)
    half = offsets[len(offsets) // 2]
    end = max(offsets)  # the last member's header; its data and the end blocks follow
    damaged = bytearray(data)
    damaged[half + 10] ^= 0x55  # inside the member name: the header's checksum fails
    variants = {
        "cut at a header": data[:half],
        "cut inside a header": data[:half + 100],
        "cut after the last member's data": data[:end + 512 + ((len(data) - end - 512) // 512 - 20) * 512],
        "a damaged header": bytes(damaged),
        "another archive appended": data + data,
    }
    pack = {"": lambda b: b, **{k: v for k, v in COMPRESS.items()}}[compress]
    assert reader(str(whole)).files.num_rows == files > 100
    for what, body in variants.items():
        path = tmp_path / f"x{compress}" / f"cf.tar{compress}"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(pack(body))
        with pytest.raises(OSError, match="cannot read tar archive") as e:
            reader(str(path))
        assert str(path) in str(e.value), what
        # found in a directory: its files row says so (the rest of the directory is read)
        d = reader(str(path.parent), on_error="collect")
        assert d.files.num_rows == 1 and d.files.to_pylist()[0]["error"].startswith("OSError: cannot read tar archive"), what
    # padding of NUL bytes after the end-of-archive blocks is no error
    padded = tmp_path / "padded.tar"
    padded.write_bytes(data + bytes(8192))
    assert reader(str(padded)).files.num_rows == files


@pytest.mark.parametrize("suffix", [".xz", ".bz2", ".gz"])
def test_every_stream_of_a_multi_stream_file_is_read_or_an_error(reader, tmp_path: Path, suffix: str) -> None:
    """Issue 50: ``lzma.open``/``bz2.open`` drop what follows a stream when it does not decode
    ("trailing garbage"), so an ``.xz``/``.bz2`` of two streams whose second stream's first byte
    was damaged lost that stream (25 allocations read of 29, no error). Every stream is decoded,
    or the file is an error; a whole multi-stream file reads as its text."""
    name = "module_0002.jit_rnn_loss.cpu_after_optimizations-buffer-assignment.txt"
    text = Path(CF, name).read_bytes()
    starts = [i + 1 for i in range(len(text)) if text.startswith(b"\nallocation ", i)]
    cut = starts[len(starts) // 2]  # the second stream starts with an allocation line
    first, second = COMPRESS[suffix](text[:cut]), COMPRESS[suffix](text[cut:])
    want = reader(os.path.join(CF, name))
    path = tmp_path / (name + suffix)
    path.write_bytes(first + second)
    got = reader(str(path))
    assert got.allocations.num_rows == want.allocations.num_rows > 10
    damaged = bytearray(first + second)
    damaged[len(first)] ^= 0xFF
    for body in (bytes(damaged), first + b"x", first + second[: len(second) // 2]):
        path.write_bytes(body)
        with pytest.raises(OSError, match="cannot read") as e:
            reader(str(path))
        assert str(path) in str(e.value)
        d = reader(str(tmp_path), on_error="collect")
        assert d.files.to_pylist()[0]["error"].startswith("OSError: cannot read"), d.files.to_pylist()
    if suffix == ".xz":  # xz's stream padding: NUL bytes, a multiple of 4, between and after streams
        path.write_bytes(first + bytes(8) + second + bytes(4))
        assert reader(str(path)).allocations.num_rows == want.allocations.num_rows
        path.write_bytes(first + bytes(3) + second)
        with pytest.raises(OSError, match="cannot read"):
            reader(str(path))
