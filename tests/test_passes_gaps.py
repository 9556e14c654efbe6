"""Per-pass dumps that keep some passes only (issue 40, item 6): ``passes`` lists the gaps,
``--instruction`` says "between pass A and B, not dumped" instead of naming B, ``--diff`` says
which dumped pass it compares with. The thinned dump is the committed jax-0.5.3 sample with
passes 5–13 deleted; the oracle is the file names themselves."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA

import hlodump
from hlodump import analysis as A
from hlodump.analysis.passes import gaps, history, pass_changes

SAMPLE = Path(DATA) / "passes" / "jax-0.5.3"
GONE = range(5, 14)  # the pass numbers deleted


def _run(*a: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlodump", *a], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def thinned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("thinned") / "dump"
    shutil.copytree(SAMPLE, d)
    for f in list(d.iterdir()):
        parts = f.name.split(".")
        if len(parts) > 3 and parts[2].isdigit() and int(parts[2]) in GONE:
            f.unlink()
    assert len(list(d.iterdir())) == len(list(SAMPLE.iterdir())) - len(GONE)
    return d


def test_passes_table_knows_the_gap(thinned: Path) -> None:
    t = A.passes(hlodump.read_arrow(thinned)).to_pylist()
    by = {r["pass_index"]: r for r in t}
    assert by[14]["prev_pass_index"] == 4 and by[14]["not_dumped"] == 9
    assert by[14]["prev_pass_name"] == "call-inliner"
    assert [r["pass_index"] for r in t if r["not_dumped"]] == [14]
    (g,) = gaps(A.passes(hlodump.read_arrow(thinned)))
    assert (g["first"], g["last"], g["count"], g["after_pass_index"], g["before_pass_index"]) == (5, 13, 9, 4, 14)
    # the whole dump has none
    whole = A.passes(hlodump.read_arrow(SAMPLE))
    assert gaps(whole) == [] and set(whole.column("not_dumped").to_pylist()) == {0}


def test_cli_lists_the_gap(thinned: Path) -> None:
    p = _run("passes", str(thinned))
    assert p.returncode == 0, p.stderr
    assert "9 passes not dumped" in p.stdout
    assert "not dumped: passes 5–13, between 4 (call-inliner) and 14 (pipeline-start)" in p.stdout
    p = _run("passes", str(SAMPLE))
    assert p.returncode == 0 and "not dumped" not in p.stdout


def test_history_across_a_gap_says_between(thinned: Path) -> None:
    # multiply.36 is removed by pass 13 (fusion), which the thinned dump lacks
    whole = history(hlodump.read_arrow(SAMPLE), None, "multiply.36").to_pylist()
    assert [(r["pass_index"], r["change"]) for r in whole] == [(0, "added"), (13, "removed")]
    rows = history(hlodump.read_arrow(thinned), None, "multiply.36").to_pylist()
    assert [(r["pass_index"], r["change"], r["before_pass_index"], r["not_dumped"]) for r in rows] == [
        (0, "added", None, 0), (14, "removed", 4, 9)]
    p = _run("passes", str(thinned), "--instruction", "multiply.36")
    assert p.returncode == 0, p.stderr
    assert "removed between pass 4 (call-inliner) and 14 (pipeline-start), passes 5–13 not dumped" in p.stdout
    assert "0014" not in p.stdout  # not "removed at pass 14"
    p = _run("passes", str(SAMPLE), "--instruction", "multiply.36")
    assert "0013 HLO_passes_after_layout_assignment/fusion: removed" in p.stdout and "not dumped" not in p.stdout


def test_diff_is_against_the_previous_dumped_pass_and_says_so(thinned: Path) -> None:
    d = hlodump.read_arrow(thinned)
    rows = pass_changes(d, None, 14).to_pylist()
    assert {(r["before_pass_index"], r["before_pass_name"], r["not_dumped"]) for r in rows} == {(4, "call-inliner", 9)}
    p = _run("passes", str(thinned), "--diff", "14")
    assert p.returncode == 0, p.stderr
    head = p.stdout.splitlines()[0]
    assert head.startswith("pass 14 (pipeline-start) against pass 4 (call-inliner), the previous pass dumped")
    assert "passes 5–13 not dumped" in head
    assert "\n--- after 0004 call-inliner (the previous pass dumped; 9 not dumped in between)" in p.stdout
    # the JSON carries the same
    p = _run("passes", str(thinned), "--diff", "14", "--json")
    assert {r["before_pass_index"] for r in json.loads(p.stdout)} == {4}
