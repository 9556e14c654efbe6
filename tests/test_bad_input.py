"""Bad input, one test per class: the exact exception and place, or the exact ``errors`` rows.

Every test runs for both readers (``reader`` fixture: reference and rust). The defined
behaviour (README "Bad input"):

* strict mode (default) raises ``ParseError(path, line, column, message, text)`` at the first
  problem; collect mode returns everything parseable plus one ``errors`` row per problem;
* no crash, no stack overflow, no hang, memory bounded by the input size;
* invalid UTF-8 is a ParseError at the first bad byte; unreadable directory entries (dangling
  symlinks, symlink loops, sockets, FIFOs, permission denied) are ``files.error`` rows.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conftest import big_buffer_assignment
from hlodump import ParseError

DATA = Path(__file__).parent / "data"


def _write(tmp_path: Path, data: bytes | str, name: str = "x-buffer-assignment.txt") -> str:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(p)


def _errors(dump: Any) -> list[tuple[int, int]]:
    return [(e["line"], e["column"]) for e in dump["errors"].to_pylist()]


def _raises_at(reader: Any, path: str) -> tuple[int, int]:
    with pytest.raises(ParseError) as info:
        reader(path)
    assert info.value.path.endswith(os.path.basename(path))
    assert info.value.message
    return info.value.line, info.value.column


ALLOC = "BufferAssignment:\nallocation 0: size 8, maybe-live-out:\n value: <1 a @0> (size=8,offset=0): f32[2]\n"


def test_strict_raises_parse_error_with_path_line_column_message_text(reader: Any, tmp_path: Path) -> None:
    # a lower-case word would be a flag of a newer XLA (a note, tests/test_today_xla.py): "Bogus" is not one
    p = _write(tmp_path, ALLOC + "allocation 1: size 8, Bogus:\n")
    with pytest.raises(ParseError) as info:
        reader(p)
    e = info.value
    assert isinstance(e, ValueError)
    assert (e.line, e.column, e.text) == (4, 23, "allocation 1: size 8, Bogus:")
    assert e.path == p and "allocation flag" in e.message


def test_collect_keeps_every_readable_row(reader: Any, tmp_path: Path) -> None:
    p = _write(tmp_path, ALLOC + "allocation 1: size 8, Bogus:\n value: <2 b @0> (size=8,offset=0): f32[2]\n"
               "allocation 2: size 4:\n value: <3 c @0> (size=4,offset=0): f32[]\n")
    d = reader(p, on_error="collect")
    assert _errors(d) == [(4, 23)]
    assert d["allocations"]["allocation"].to_pylist() == [0, 2]
    assert d["assignments"]["value_id"].to_pylist() == [1, 3]  # 2 sits under the bad line


def test_truncated_mid_line(reader: Any, tmp_path: Path) -> None:
    p = _write(tmp_path, ALLOC[:-20])  # " value: <1 a @0> (size=" and nothing more
    assert _raises_at(reader, p) == (3, 24)  # where the size should be
    assert _errors(reader(p, on_error="collect")) == [(3, 24)]


def test_truncated_inside_a_value_block(reader: Any, tmp_path: Path) -> None:
    p = _write(tmp_path, "Total bytes used: 0 (0B)\n\nUsed values:\n<1 a>\n positions:\n  a\n uses:\n",
               "x-buffer-assignment-values.txt")
    assert _raises_at(reader, p) == (7, 1)  # reported at the last line, the block is dropped
    d = reader(p, on_error="collect")
    assert _errors(d) == [(7, 1)] and d["values"].num_rows == 0


def test_invalid_utf8_at_the_first_bad_byte(reader: Any, tmp_path: Path) -> None:
    data = ALLOC.encode().replace(b"f32[2]", b"f32[\xff2]") + b"allocation 1: size 4:\n"
    p = _write(tmp_path, data)
    assert _raises_at(reader, p) == (3, 41)
    d = reader(p, on_error="collect")
    assert _errors(d) == [(3, 41)]
    assert d["allocations"]["allocation"].to_pylist() == [0, 1]


def test_invalid_utf8_is_reported_before_parse_errors(reader: Any, tmp_path: Path) -> None:
    """Like the reference reader, the whole file is decoded before it is parsed."""
    p = _write(tmp_path, b"BufferAssignment:\nbogus\nok \xc3(\n")
    assert _raises_at(reader, p) == (3, 4)
    assert _errors(reader(p, on_error="collect")) == [(3, 4), (2, 1)]


def test_nul_and_tab_are_ordinary_bad_characters(reader: Any, tmp_path: Path) -> None:
    p = _write(tmp_path, ALLOC.replace("size 8,", "size\x008,", 1))
    assert _raises_at(reader, p) == (2, 13)  # ": size " expected, ": size\0" found
    p = _write(tmp_path, ALLOC.replace(" value:", "\tvalue:"))
    assert _raises_at(reader, p) == (3, 1)


def test_crlf_parses_like_lf(reader: Any, tmp_path: Path) -> None:
    lf = reader(_write(tmp_path, ALLOC, "lf-buffer-assignment.txt"))
    crlf = reader(_write(tmp_path, ALLOC.replace("\n", "\r\n"), "crlf-buffer-assignment.txt"))
    assert lf["assignments"].to_pylist() == crlf["assignments"].to_pylist()


def test_numbers_out_of_range(reader: Any, tmp_path: Path) -> None:
    cases = [
        ("BufferAssignment:\nallocation 9223372036854775808: size 1:\n", (2, 12)),
        ("BufferAssignment:\nallocation 0: size 1, color 2147483648:\n", (2, 29)),
        ("HloLiveRange (max 1):\n  InstructionSequence:\n    2147483648:a\n", (3, 5)),
        ("Memory Space: d (color=0)\nTotal bytes: 1 (99999999999999999999EiB)\n", (2, 17)),
        ("memory_space_allocation_entries {\n  memory_space_color: 2147483648\n}\n", (2, 23)),
        ("HloLiveRange (max 1):\n  Live ranges at 0 (peak):\n    a: 9223372036854775807 bytes\n"
         "    b: 1 bytes\n", (4, 8)),  # the running total of the old form overflows
        ("BufferAssignment:\nallocation 0: size " + "9" * 5000 + ":\n", (2, 20)),
    ]
    for text, where in cases:
        p = _write(tmp_path, text)
        assert _raises_at(reader, p) == where, text[:80]


def test_empty_file(reader: Any, tmp_path: Path) -> None:
    # a 0-byte file named like a dump is an error (issue 30, item 6), not silence
    d = reader(_write(tmp_path, b""), on_error="collect")
    f = d["files"].to_pylist()[0]
    assert (f["content_kind"], f["parsed"], f["size_bytes"], f["error"]) == ("empty", False, 0, None)
    assert [(e["line"], e["column"]) for e in d["errors"].to_pylist()] == [(1, 1)]
    assert "empty file (0 bytes)" in d["errors"].column("message")[0].as_py()


def test_protobuf_text_report_errors(reader: Any, tmp_path: Path) -> None:
    head = "memory_space_allocation_entries {\n"
    p = _write(tmp_path, head + "  allocation_entries { size: x }\n}\n" + head + "  total_bytes: 3\n}\n",
               "x-memory-usage-report.txt")
    assert _raises_at(reader, p) == (2, 30)  # at "x"
    d = reader(p, on_error="collect")
    # the broken message is dropped, the next one is kept
    assert _errors(d) == [(2, 30)]
    assert d["totals"]["value"].to_pylist() == [3]
    # a bad line *between* messages is reported and does not swallow the next message
    p = _write(tmp_path, head + "  total_bytes: 1\n}\njunk ;\n" + head + "  total_bytes: 3\n}\n",
               "y-memory-usage-report.txt")
    d = reader(p, on_error="collect")
    assert _errors(d) == [(4, 6)]
    assert d["totals"]["value"].to_pylist() == [1, 3]


def test_deep_nesting_is_linear_not_recursive(reader: Any, tmp_path: Path) -> None:
    deep = 200_000
    text = ALLOC.replace("f32[2]\n", "(" * deep + "f32[]" + ")" * deep + "\n")
    d = reader(_write(tmp_path, text))
    assert len(d["assignments"]["shape"][0].as_py()) == 2 * deep + 5


def test_no_hang_on_quadratic_bait(reader: Any, tmp_path: Path) -> None:
    """Lines that make naive searches quadratic: many ' (' before a broken tree tail."""
    import time

    line = "    a" + " (1.0%, total: 1" * 20_000 + "\n"
    text = "HloLiveRange (max 1):\n  Stack trace breakdown for peak usage: 1 bytes\n" + line
    p = _write(tmp_path, text)
    start = time.perf_counter()
    assert _raises_at(reader, p)[0] == 3
    assert time.perf_counter() - start < 20


# --------------------------------------------------------------------------- directories


def _dir_with_bad_entries(tmp_path: Path) -> Path:
    d = tmp_path / "dump"
    d.mkdir()
    shutil.copy(DATA / "seeds" / "000_d4ec204070c56195.txt", d / "a-buffer-assignment.txt")
    os.symlink(d / "missing.txt", d / "dangling.txt")
    os.symlink(d / "loop2.txt", d / "loop1.txt")
    os.symlink(d / "loop1.txt", d / "loop2.txt")
    os.mkfifo(d / "fifo.txt")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "sock.txt"))
    s.close()
    return d


def test_directory_entries_that_cannot_be_read(reader: Any, tmp_path: Path) -> None:
    d = _dir_with_bad_entries(tmp_path)
    dump = reader(str(d))  # strict mode: entries found by walking never raise
    rows = {r["path"]: r for r in dump["files"].to_pylist()}
    assert rows["a-buffer-assignment.txt"]["parsed"] and rows["a-buffer-assignment.txt"]["error"] is None
    errors = {p: r["error"] for p, r in rows.items() if r["error"]}
    assert set(errors) >= {"dangling.txt", "fifo.txt", "sock.txt"}
    assert errors["dangling.txt"].startswith("FileNotFoundError")
    assert errors["fifo.txt"] == errors["sock.txt"] == "OSError: not a regular file"
    for loop in ("loop1.txt", "loop2.txt"):  # listed with an error, or skipped by the walk
        if loop in rows:
            assert rows[loop]["error"].startswith("OSError")
    assert all(not r["parsed"] for p, r in rows.items() if r["error"])


def test_named_fifo_is_an_error_not_a_hang(reader: Any, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f.txt")
    with pytest.raises(OSError):
        reader(str(tmp_path / "f.txt"))


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv (to drop the capabilities that ignore modes)")
@pytest.mark.parametrize("impl", ["reference", "rust"])
def test_permission_denied_as_an_unprivileged_user(impl: str, tmp_path: Path) -> None:
    d = tmp_path / "dump"
    d.mkdir()
    shutil.copy(DATA / "seeds" / "000_d4ec204070c56195.txt", d / "a-buffer-assignment.txt")
    shutil.copy(DATA / "seeds" / "000_d4ec204070c56195.txt", d / "secret-buffer-assignment.txt")
    os.chmod(d / "secret-buffer-assignment.txt", 0)
    read = "hlodump.reference.read_arrow" if impl == "reference" else "hlodump.read_arrow"
    code = textwrap.dedent(f"""
        import hlodump, hlodump.reference
        rows = {read}({str(d)!r})["files"].to_pylist()
        print(sorted((r["path"], r["error"]) for r in rows))
        try:
            {read}({str(d / "secret-buffer-assignment.txt")!r})
        except PermissionError as e:
            print("PermissionError")
    """)
    # Root reads mode-000 files; without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH it cannot.
    r = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                        sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout.splitlines()
    assert eval(out[0]) == [("a-buffer-assignment.txt", None),
                            ("secret-buffer-assignment.txt", "PermissionError: Permission denied")]
    assert out[1] == "PermissionError"


# --------------------------------------------------------------------------- files that change


TRUNCATE = """
import os, sys, hlodump
path, mmap = sys.argv[1], {mmap}
d = hlodump.read_arrow(path, mmap=mmap)
col = d.views["values"].column("defining_instruction")  # views into the mapped file (d["values"] is a copy)
before = col.to_pylist()
with open(path, "r+b") as f:   # another writer truncates the file (e.g. XLA re-dumping)
    f.truncate(0)
after = col.to_pylist()
print("same" if after == before else "changed")
"""


@pytest.mark.parametrize("mmap", [None, False, True])
def test_file_truncated_while_its_tables_are_alive(mmap: Any, tmp_path: Path) -> None:
    pytest.importorskip("hlodump._core")
    # bigger than the 4 MiB below which files were always read, never mapped
    seed = (DATA / "seeds" / "003_edd6dfbd09ed8e41.txt").read_bytes()
    p = tmp_path / "v-buffer-assignment.txt"
    p.write_bytes(big_buffer_assignment(seed, 5 * 2**20))
    assert p.stat().st_size > 5 * 2**20
    r = subprocess.run([sys.executable, "-c", TRUNCATE.format(mmap=mmap), str(p)],
                       capture_output=True, text=True, timeout=120)
    # Never SIGBUS: a mapped file (the default for big files, and mmap=True) that shrinks reads
    # as zeros past its new end, with one warning on stderr; mmap=False tables hold a copy.
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    if mmap is False:
        assert r.stdout.strip() == "same"
        assert "shrank" not in r.stderr
    else:
        assert r.stdout.strip() == "changed"
        assert "hlodump: warning: a memory-mapped dump file shrank" in r.stderr
