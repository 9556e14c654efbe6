"""Compressed dump files read transparently (issue 31): `.gz`, `.bz2`, `.xz` (and `.zst` when
the `zstandard` package is installed) are decompressed into one buffer each and read like the
file they hold; the name is classified without the suffix. XLA's own `….pb.gz` stay as they
are (binary protobufs: `other` rows)."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
from pathlib import Path

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
    p = tmp_path / "module_0001.jit_f.cpu_after_optimizations.hlo.pb.gz"
    p.write_bytes(gzip.compress(b"\x0a\x05jit_f"))
    (row,) = reader(str(p)).files.to_pylist()
    assert row["kind"] == "other" and row["size_bytes"] == p.stat().st_size
