"""Linear in modules (issue 37): selecting modules, the summary and the overview do work in
proportion to the modules, never to modules × selectors. Counted (attribute reads, DuckDB
queries), not timed."""

from __future__ import annotations

import importlib
import os
import re

import pytest

from conftest import DATA

import hlodump
from hlodump import analysis as A
from hlodump.cli import main

# (``hlodump.analysis.modules`` is also the name of a function there)
E = importlib.import_module("hlodump.analysis.engine")
M = importlib.import_module("hlodump.analysis.modules")

TINY = os.path.join(DATA, "corpus", "jax-0.10.2", "misc")
TINY_MODULE = "module_0103.jit__lambda"
SUFFIXES = (".cpu_after_optimizations.txt", ".cpu_after_optimizations-buffer-assignment.txt",
            ".cpu_after_optimizations-buffer-assignment-values.txt", ".cpu_after_optimizations-live-range.txt",
            ".cpu_after_optimizations-memory-usage-report.txt")


def tiny_dump(path: os.PathLike, n: int) -> str:
    """A dump directory of ``n`` copies of one tiny module (as ``benches/analysis.py --tiny``)."""
    os.makedirs(path, exist_ok=True)
    texts = {sfx: open(os.path.join(TINY, TINY_MODULE + sfx), "rb").read() for sfx in SUFFIXES}
    for i in range(n):
        for sfx, text in texts.items():
            with open(os.path.join(path, f"module_{i:04d}.jit__lambda{sfx}"), "wb") as fh:
                fh.write(text)
    return os.fspath(path)


class _Budget(AssertionError):
    pass


class _Counted(M.Module):
    """A module whose key, base, name and id reads are counted; past the budget a read fails
    (so a quadratic selection fails at once instead of running 10^8 comparisons)."""

    reads = 0
    budget = 10**12

    def __getattribute__(self, name: str):  # type: ignore[no-untyped-def]
        if name in ("key", "base", "name", "module_id"):
            cls = _Counted
            cls.reads += 1
            if cls.reads > cls.budget:
                raise _Budget(f"more than {cls.budget:,} reads of a module's key/base/name/id: not linear")
        return object.__getattribute__(self, name)


def _mods(n: int) -> list[M.Module]:
    return [_Counted(f"module_{i:04d}.jit_f{i % 7}", f"jit_f{i % 7}", i, "", f"module_{i:04d}.jit_f{i % 7}")
            for i in range(n)]


@pytest.mark.parametrize("how", ["keys", "ids", "names"])
def test_select_is_linear(how: str) -> None:
    n = 20_000
    mods = _mods(n)
    wanted = {"keys": [m.key for m in mods], "ids": list(range(n)),
              "names": [f"jit_f{i}" for i in range(7)]}[how]
    _Counted.reads, _Counted.budget = 0, 10 * n  # an index: a few reads per module, whatever the selectors
    got = M.select(mods, wanted)
    assert len(got) == n and _Counted.reads <= 10 * n
    if how == "keys":
        assert got is mods  # every module in order: the same list (so the same engine scope)
    _Counted.budget = 10**12


def test_select_rules_and_errors() -> None:
    _Counted.reads, _Counted.budget = 0, 10**12
    mods = _mods(30)
    assert [m.key for m in M.select(mods, "module_0003.jit_f3")] == ["module_0003.jit_f3"]
    assert [m.module_id for m in M.select(mods, "0003")] == [3]
    assert [m.module_id for m in M.select(mods, 3)] == [3]
    assert [m.module_id for m in M.select(mods, "jit_f6")] == [6, 13, 20, 27]
    assert [m.module_id for m in M.select(mods, ["jit_f6", 6, "0027", 1])] == [6, 13, 20, 27, 1]  # no repeats
    assert [m.module_id for m in M.select(mods, "0029.JIT")] == [29]  # substring, any case
    with pytest.raises(A.NoSuchModule) as e:
        M.select(mods, "jit_f6", unique=True)
    assert e.value.several and len(e.value.choices) == 4
    with pytest.raises(A.NoSuchModule):
        M.select(mods, ["module_0001.jit_f1", "nothing"])
    assert [m.module_id for m in A.match_modules(mods, "jit_f0")] == [0, 7, 14, 21, 28]


class _CountingConnection:
    """The engine's DuckDB connection, counting the queries made through it."""

    def __init__(self, con) -> None:  # type: ignore[no-untyped-def]
        self._con = con
        self.queries = 0

    def sql(self, *a, **k):  # type: ignore[no-untyped-def]
        self.queries += 1
        return self._con.sql(*a, **k)

    def execute(self, *a, **k):  # type: ignore[no-untyped-def]
        self.queries += 1
        return self._con.execute(*a, **k)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._con, name)


def _queries(path: str, fn) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    d = hlodump.read_arrow(path, progress=False)
    eng = E.engine(d)
    counting = eng.con = _CountingConnection(eng.con)
    n = len(A._module_list(d))
    fn(d)
    return n, counting.queries


@pytest.mark.parametrize("what", ["summary", "summary by keys", "summary with cost"])
def test_summary_queries_do_not_grow_with_modules(tmp_path, what: str) -> None:
    fn = {"summary": lambda d: A.summary(d, cost=False),
          "summary by keys": lambda d: A.summary(d, [m.key for m in A._module_list(d)], cost=False),
          "summary with cost": lambda d: A.summary(d)}[what]
    small = _queries(tiny_dump(tmp_path / "a", 6), fn)
    large = _queries(tiny_dump(tmp_path / "b", 30), fn)
    assert (small[0], large[0]) == (6, 30)
    assert large[1] == small[1], f"{small[1]} queries for 6 modules, {large[1]} for 30"


def _overview_rows(out: str) -> list[str]:
    # the table's rows: before the note naming modules whose XLA's listed peak is above their
    # allocation (it names up to five) and before the details
    table = out.split("details of the first")[0].split("XLA's listed peak is more than")[0]
    return re.findall(r"module_\d{4}\.jit__lambda", table)


def test_overview_obeys_top(tmp_path, capsys) -> None:
    path = tiny_dump(tmp_path / "d", 40)
    assert main(["summary", path]) == 0
    out = capsys.readouterr().out
    assert len(_overview_rows(out)) == 25 and "… and 15 more: --all" in out
    assert out.count("memory spaces (allocated bytes by category)") == 3
    assert main(["summary", path, "--top", "4"]) == 0
    out = capsys.readouterr().out
    assert len(_overview_rows(out)) == 4 and "… and 36 more: --all" in out
    assert out.count("memory spaces (allocated bytes by category)") == 4
    assert main(["summary", path, "--all"]) == 0
    out = capsys.readouterr().out
    assert "more: --all" not in out and out.count("memory spaces (allocated bytes by category)") == 40


def test_long_overview_is_plain_columns(tmp_path, capsys) -> None:
    """More rows than a rich table lays out quickly: aligned plain columns, every module."""
    path = tiny_dump(tmp_path / "d", 210)
    assert main(["summary", path, "--top", "210"]) == 0
    out = capsys.readouterr().out
    lines = re.findall(r"^module_\d{4}\.jit__lambda .*$", out, re.M)  # (a detail's head has a colon)
    assert len(lines) == 210 and "more: --all" not in out
    assert "┃" not in out.split(lines[-1])[0]  # no rich table
    assert len({len(ln) for ln in lines}) == 1  # aligned
