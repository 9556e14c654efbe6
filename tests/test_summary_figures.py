"""Summary figures that a new user reads first, each against what the file itself states."""

from __future__ import annotations

import glob
import json
import os
import re

import pytest

from conftest import DATA

from hlodump import analysis as A
from hlodump.cli import main

REPORTS = sorted(glob.glob(os.path.join(DATA, "memory_report", "jax-*", "*-memory-usage-report.txt")))


def _stated_total(path: str) -> int:
    """The report's own total, read with a regular expression: ``Total bytes used: N`` (older
    layout) or the sum of ``Total bytes: N`` per memory space."""
    text = open(path, encoding="utf-8").read()
    m = re.search(r"^Total bytes used: (\d+)", text, re.M)
    if m:
        return int(m.group(1))
    per_space = [int(x) for x in re.findall(r"^Total bytes: (\d+)", text, re.M)]
    assert per_space, path
    return sum(per_space)


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: os.path.relpath(p, DATA))
def test_memory_report_alone_shows_its_totals(path: str, capsys) -> None:
    (s,) = A.summary(A.load(path))
    assert s["total_bytes"] == _stated_total(path)
    assert s["allocations"] == 0 and s["memory_analysis"] is None
    spaces = s["memory_spaces"]
    if spaces:  # per memory space when the layout states it
        assert sum(sp["allocated_bytes"] for sp in spaces) == s["total_bytes"]
        assert all(v is None for sp in spaces for v in sp["by_category"].values())
    assert main(["summary", path]) == 0
    out = capsys.readouterr().out
    assert f"{_stated_total(path):,} bytes" in out and "as the dump states it" in out


def test_overview_sorted_by_peak(capsys) -> None:
    path = os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow")
    assert main(["summary", path, "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    peaks = [A.peak_bytes(m) for m in s]
    assert len(s) > 3 and peaks == sorted(peaks, reverse=True)
    assert main(["summary", path]) == 0
    out = capsys.readouterr().out
    # one line per module, then the details of the first three only
    for m in s:
        assert m["module"] in out
    assert out.count("memory spaces (allocated bytes by category)") == 3
    assert main(["summary", path, "--top", "1", "--sort", "name"]) == 0
    out = capsys.readouterr().out
    assert out.count("memory spaces (allocated bytes by category)") == 1
    first = sorted(m["module"] for m in s)[0]
    assert out.index(f"{first}: total allocated") > out.index("details of the first 1")


def test_peaks_side_by_side() -> None:
    path = os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow")
    for s in A.summary(A.load(path)):
        p = s["peaks"]
        if s["timeline"]:
            assert p["live_by_slice"] == s["timeline"]["max_allocated_bytes"] <= s["total_bytes"]
        if s["peak"]:
            assert p["xla_listed"] == s["peak"]["bytes"]
        story = A.peak_story(s)
        assert len(story) == sum(p[k] is not None for k in ("live_by_slice", "xla_listed", "jax_peak_memory_in_bytes"))


OOMS = sorted(glob.glob(os.path.join(DATA, "oom", "*.log")))


@pytest.mark.parametrize("path", OOMS, ids=os.path.basename)
def test_summary_of_an_oom_log(path: str, capsys) -> None:
    """``hlodump summary`` of a pasted OOM log prints each report: what failed, and its buffers
    — checked against the log's own text with regular expressions."""
    from hlodump.analysis.oom import oom_summary

    text = open(path, encoding="utf-8", errors="replace").read()
    assert main(["summary", "--keep-going", "--errors-ok", path]) == 0
    out = capsys.readouterr().out
    assert "out-of-memory report" in out
    d = A.load(path, lambda p: __import__("hlodump").read_arrow(p, on_error="collect"))
    reps = oom_summary(d)
    assert reps
    requested = re.findall(r"(?:allocate|Attempting to allocate) (\d+) bytes", text)
    for r in reps:
        if "requested" in r["failed"] and requested:
            assert str(r["failed"]["requested"]["bytes"]) in requested
        for b in r["buffers"]:
            if b["shape"]:
                assert b["shape"].split("{")[0] in text
    # a report printed twice is one report, printed twice
    if os.path.basename(path) == "gpu_glog_twice.log":
        assert [r["times_printed"] for r in reps] == [2] and "printed 2 times" in out


@pytest.mark.parametrize("path", [os.path.join(DATA, "seeds"), os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow"),
                                  os.path.join(DATA, "corpus", "jax-0.4.26", "control_flow")],
                         ids=lambda p: os.path.relpath(p, DATA))
def test_padding_says_how_it_counts(path: str) -> None:
    """The summary's padding is summed per value and says so; ``occupied_bytes`` counts each
    byte of the allocations that hold values once (the union of the slices, computed here by
    hand), so it never exceeds what the module allocates."""
    d = A.load(path)
    bufs = A.buffers(d).to_pylist()
    for s in A.summary(d, cost=False):
        pad = s["padding"]
        mine = [r for r in bufs if r["module"] == s["module"]]
        assert pad["counted"] == "per value" and pad["values"] == len(mine)
        assert pad["allocated_bytes"] == sum(r["size"] or 0 for r in mine)
        by_alloc: dict = {}
        for r in mine:
            if r["allocation"] is not None and r["size"]:
                by_alloc.setdefault(r["allocation"], []).append((r["offset"], r["offset"] + r["size"]))
        union = 0
        for iv in by_alloc.values():  # the union of intervals, by a sweep
            end = None
            for lo, hi in sorted(iv):
                if end is None or lo > end:
                    union += hi - lo
                    end = hi
                elif hi > end:
                    union += hi - end
                    end = hi
        assert pad["occupied_bytes"] == union <= (s["total_bytes"] or 0)


def test_hlo_text_alone_prints_no_empty_memory_table(capsys) -> None:
    """HLO text has no allocations: the summary says what is missing and draws no empty table."""
    path = os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow", "module_0000.jit_rnn.cpu_after_optimizations.txt")
    assert main(["summary", path]) == 0
    out = capsys.readouterr().out
    assert "HLO text only" in out and "memory spaces (allocated bytes by category)" not in out
