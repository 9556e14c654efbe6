"""The memory-usage report in every layout, checked against the buffer assignment it was
printed from (the dump's own figures): totals, the allocations it lists, their rounded sizes."""

from __future__ import annotations

import glob
import os

import pytest

import hlodump
import hlodump.reference

DATA = os.path.join(os.path.dirname(__file__), "data", "memory_report")
DIRS = sorted(glob.glob(os.path.join(DATA, "jax-*")))
READERS = [hlodump.read_arrow, hlodump.reference.read_arrow]


def _human_tolerance(n: int) -> float:
    """How far HumanReadableNumBytes may round n: exact below 1 KiB, else half of the last
    printed digit (1 decimal for KiB, 2 for MiB and above)."""
    if n < 1024:
        return 0
    return 1024 * 0.05 if n < 1 << 20 else (1 << 20) * 0.005 * (n >> 20 or 1)


@pytest.mark.parametrize("d", DIRS, ids=os.path.basename)
@pytest.mark.parametrize("read", READERS, ids=["rust", "reference"])
def test_report_agrees_with_the_buffer_assignment(read, d: str) -> None:
    dump = read(d, on_error="raise", string_view=False)
    files = {f["file_id"]: f for f in dump.files.to_pylist()}
    assert {f["content_kind"] for f in files.values()} >= {"memory_usage_report"}
    for module in {f["module_id"] for f in files.values()}:
        ba = [i for i, f in files.items() if f["module_id"] == module and f["content_kind"] == "buffer_assignment"]
        rep = [i for i, f in files.items() if f["module_id"] == module and f["content_kind"] == "memory_usage_report"]
        assert len(ba) == len(rep) == 1
        allocs = {a["allocation"]: a for a in dump.allocations.to_pylist() if a["file_id"] == ba[0]}
        total = sum(a["size"] for a in allocs.values())
        rows = [r for r in dump.memory_report.to_pylist() if r["file_id"] == rep[0]]
        totals = {t["key"]: t["value"] for t in dump.totals.to_pylist() if t["file_id"] == rep[0]}
        assert rows, "a report with no rows"
        if "total_bytes_used" in totals:  # allocation list (jax 0.4.35-0.9.1)
            assert totals["total_bytes_used"] == total
            listed = [r for r in rows if r["row_kind"] == "allocation"]
            # every allocation listed once (no cut-off in these small modules), largest first
            assert sorted(r["allocation"] for r in listed) == sorted(allocs)
            assert [r["table"] for r in listed] == list(range(len(listed)))
            for r in listed:
                exact = allocs[r["allocation"]]
                assert abs(r["size"] - exact["size"]) <= _human_tolerance(exact["size"])
                # the flag says which sizes are approximate: those printed above 1 KiB
                assert r["size_is_rounded"] == (exact["size"] >= 1024)
                if not r["size_is_rounded"]:
                    assert r["size"] == exact["size"]
                assert r["flags"] == exact["flags"]  # the same flags text as the buffer assignment
                assert r["color"] == exact["color"]
            assert listed[-1]["remaining_bytes"] == 0 and listed[-1]["percent"] == 100
            # offset tables belong to allocations that exist, with offsets inside them
            for r in rows:
                if r["row_kind"] == "offsets":
                    a = allocs[r["allocation"]]
                    assert 0 <= r["offset"] < a["size"]
            for r in rows:
                if r["row_kind"] == "offsets":
                    assert r["size_is_rounded"] == (r["size"] >= 1024), r
        else:  # table form (jax 0.9.2+): per memory space
            assert sum(v for k, v in totals.items() if k == "total_bytes") == total
            assert all(r["row_kind"] == "offsets" and r["allocation"] is None for r in rows)


def test_rust_equals_reference_on_every_layout() -> None:
    for d in DIRS:
        a = hlodump.read_arrow(d, string_view=False)
        r = hlodump.reference.read_arrow(d, string_view=False)
        for t in a:
            assert a[t].equals(r[t]), (d, t)
