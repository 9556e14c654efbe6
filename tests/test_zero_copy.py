"""Text columns are views into the memory-mapped input: no string bytes are copied."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("hlodump._core")
import hlodump  # noqa: E402

DATA = Path(__file__).parent / "data"


def mappings_of(path: Path) -> list[tuple[int, int]]:
    """Address ranges where `path` is mapped into this process (from /proc/self/maps)."""
    target = str(path.resolve())
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].strip() == target:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


def data_buffer_addresses(column: pa.ChunkedArray) -> list[tuple[int, int]]:
    """(address, size) of the variadic data buffers of a string_view column."""
    out = []
    for chunk in column.chunks:
        assert chunk.type == pa.string_view()
        for buf in chunk.buffers()[2:]:
            if buf is not None and buf.size:
                out.append((buf.address, buf.size))
    return out


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_string_view_data_buffers_are_the_mapping() -> None:
    path = DATA / "seeds" / "003_edd6dfbd09ed8e41.txt"
    d = hlodump.read_arrow(path, mmap=True)
    maps = mappings_of(path)
    assert maps, "the file is mapped while its tables are alive"
    col = d["values"].column("defining_instruction")
    bufs = data_buffer_addresses(col)
    assert bufs, "long strings live in data buffers"
    for addr, size in bufs:
        assert any(lo <= addr and addr + size <= hi for lo, hi in maps), hex(addr)
    # And the 11 KB kernel body string really is read out of that memory.
    longest = max(col.to_pylist(), key=len)
    assert len(longest) > 11000 and "custom_call_target" in longest
    raw = path.read_bytes()
    assert longest.encode() in raw


def test_small_files_share_one_arena_buffer() -> None:
    d = hlodump.read_arrow(sorted((DATA / "corpus" / "jax-0.10.2" / "control_flow").glob("*-live-range.txt")))
    col = d["schedule"].column("instruction")
    # All files of the group point into one arena: one data buffer, whatever the file count.
    assert d["files"].num_rows > 5
    assert len({a for a, _ in data_buffer_addresses(col)}) == 1


def test_tables_outlive_the_dump_object() -> None:
    path = DATA / "seeds" / "000_d4ec204070c56195.txt"
    t = hlodump.read_arrow(path, mmap=True)["assignments"]
    import gc

    gc.collect()
    shapes = t.column("shape").to_pylist()
    assert shapes[0] == "f32[]{:T(128)}"
    raw = [ln.split("): ", 1)[1] for ln in path.read_text().splitlines() if ln.startswith(" value: ")]
    assert shapes == raw
