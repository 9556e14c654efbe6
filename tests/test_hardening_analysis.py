"""Issue 30, item 4: sizes that fit int64 alone but not summed.

A buffer assignment whose every allocation and value is ``INT64_MAX`` bytes (each fits the
int64 columns) gave a DuckDB ``ConversionException`` traceback in ``summary``/``plot``/``diff``,
numpy overflow warnings and wrong numbers in ``memory_timeline``, ``OverflowError`` in ``diff``.

The rule these tests hold the analysis to: every figure is exact (Python ints in dicts; in
tables an integer type that holds the sum, e.g. ``decimal128(38, 0)``, or Python ints) or the
call raises a clear ``hlodump.HlodumpError`` that says a sum overflowed — never a DuckDB or
numpy exception, never a warning, never a wrapped number.

The oracle is linearity: the same file with every size 1 (and every offset 0, so each
allocation is one slice in both) gives counts; with every size ``INT64_MAX`` each figure must
be that count times ``INT64_MAX``, exactly.
"""

from __future__ import annotations

import re
import subprocess
import sys
import os
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "tests" / "data" / "seeds" / "003_edd6dfbd09ed8e41.txt"  # a TPU buffer assignment
MAX = 2**63 - 1


@pytest.fixture(autouse=True)
def _needs_core() -> None:
    pytest.importorskip("hlodump._core")


def _scaled(tmp_path: Path, size: int) -> str:
    """SEED with every allocation and value size ``size`` and every offset 0."""
    text = SEED.read_text()
    text = re.sub(r"size \d+", f"size {size}", text)
    text = re.sub(r"size=\d+", f"size={size}", text)
    text = re.sub(r"offset=\d+", "offset=0", text)
    p = tmp_path / f"module_0001.jit_f.tpu_after_optimizations-buffer-assignment.size{size}.txt"
    p.write_text(text)
    return str(p)


@pytest.fixture
def ones_and_max(tmp_path: Path) -> tuple[Any, Any]:
    import hlodump

    one = hlodump.read_arrow(_scaled(tmp_path, 1))
    big = hlodump.read_arrow(_scaled(tmp_path, MAX))
    assert big["allocations"].column("size").to_pylist() == [MAX] * one["allocations"].num_rows
    assert big["errors"].num_rows == 0
    return one, big


def _exact_or_clear(call: Callable[[], Any]) -> Optional[Any]:
    """``call()``'s result, or None if it raised a clear overflow error; fails on anything else
    (a DuckDB/numpy exception, a bare OverflowError, any warning)."""
    import hlodump

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered" is a failure
        try:
            return call()
        except hlodump.HlodumpError as e:
            msg = str(e).lower()
            assert "overflow" in msg or "int64" in msg or "too large" in msg, msg
            return None


def _int(v: Any) -> int:
    """An exact integer figure (int, or a Decimal with no fraction)."""
    if isinstance(v, Decimal):
        assert v == v.to_integral_value()
        return int(v)
    assert isinstance(v, int) and not isinstance(v, bool), type(v)
    return v


def test_summary_sums_are_exact_or_a_clear_error(ones_and_max: tuple[Any, Any]) -> None:
    from hlodump import analysis as A

    one, big = ones_and_max
    (s1,) = A.summary(one)
    got = _exact_or_clear(lambda: A.summary(big))
    if got is None:
        return
    (s,) = got
    n = one["allocations"].num_rows
    assert _int(s["total_bytes"]) == n * MAX
    for cat, k in s1["by_category"].items():
        assert _int(s["by_category"][cat]) == k * MAX, cat
    for key, k in s1["memory_analysis"].items():
        assert _int(s["memory_analysis"][key]) == k * MAX, key
    assert _int(s["peak"]["bytes"]) == s1["peak"]["bytes"] * MAX
    assert _int(s["timeline"]["max_allocated_bytes"]) == s1["timeline"]["max_allocated_bytes"] * MAX


def test_memory_timeline_is_exact_or_a_clear_error(ones_and_max: tuple[Any, Any]) -> None:
    from hlodump import analysis as A

    one, big = ones_and_max
    t1 = A.memory_timeline(one)
    t = _exact_or_clear(lambda: A.memory_timeline(big))
    if t is None:
        return
    key = ("step", "color", "category")
    want = {tuple(r[k] for k in key): r["bytes"] for r in t1.to_pylist()}
    got = {tuple(r[k] for k in key): _int(r["bytes"]) for r in t.to_pylist()}
    assert got == {k: v * MAX for k, v in want.items()}


def test_breakdown_is_exact_or_a_clear_error(ones_and_max: tuple[Any, Any]) -> None:
    from hlodump import analysis as A

    one, big = ones_and_max
    b1 = {r["key"]: r["allocated_bytes"] for r in A.breakdown(one, "opcode").to_pylist()}
    t = _exact_or_clear(lambda: A.breakdown(big, "opcode"))
    if t is None:
        return
    assert {r["key"]: _int(r["allocated_bytes"]) for r in t.to_pylist()} == {k: v * MAX for k, v in b1.items()}


def test_diff_is_exact_or_a_clear_error(ones_and_max: tuple[Any, Any]) -> None:
    from hlodump import analysis as A

    one, big = ones_and_max
    t = _exact_or_clear(lambda: A.diff(one, big))
    if t is None:
        return
    rows = t.to_pylist()
    assert rows, "every size changed: diff lists them"
    for r in rows:
        if r.get("a") is not None and r.get("b") is not None and r.get("delta") is not None:
            assert _int(r["delta"]) == _int(r["b"]) - _int(r["a"]), r


@pytest.mark.parametrize("command", [["summary"], ["summary", "--json"], ["plot", "-o", "{out}/mem.html"],
                                     ["diff", "{one}"]])
def test_cli_memory_commands_never_trace_back(tmp_path: Path, command: list[str]) -> None:
    big = _scaled(tmp_path, MAX)
    one = _scaled(tmp_path, 1)
    args = [a.format(out=tmp_path, one=one) for a in command]
    if args[0] == "diff":
        args = ["diff", one, big]
    else:
        args = [args[0], big, *args[1:]]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONWARNINGS="error::RuntimeWarning")
    r = subprocess.run([sys.executable, "-m", "hlodump.cli", *args], capture_output=True, text=True, env=env,
                       timeout=300)
    assert "Traceback" not in r.stderr and "ConversionException" not in r.stderr, r.stderr[-3000:]
    assert "RuntimeWarning" not in r.stderr and "overflow encountered" not in r.stderr
    assert r.returncode in (0, 1), r.stderr[-3000:]
    if r.returncode == 1:  # a clear error
        assert "overflow" in r.stderr.lower() or "int64" in r.stderr.lower(), r.stderr[-3000:]


def test_comms_lone_dones_say_what_is_wrong(tmp_path: Path) -> None:
    """Issue 50, item 7: a ``-done`` without its ``-start`` and a second ``-done`` of one start
    were printed "(-1 steps, overlaps 0 compute)": steps between the ends of a pair that is not
    there. Now their ``steps_between`` is null and the line says it is not a pair."""
    from test_faults_3_analysis import _collective_module, _comms

    text = _collective_module("lone", ", num_partitions=2", [
        "%s = f32[8]{0} all-reduce-start(f32[8]{0} %a), channel_id=2, replica_groups={{0,1}}, to_apply=%add",
        "%d1 = f32[8]{0} all-reduce-done(f32[8]{0} %s)",
        "%d2 = f32[8]{0} all-reduce-done(f32[8]{0} %s)",
        "ROOT %d3 = f32[8]{0} all-reduce-done(f32[8]{0} %d2)",
    ])
    p, rows = _comms(tmp_path, text)
    by = {r["instruction"]: r for r in rows}
    assert by["s"]["steps_between"] == 0 and by["s"]["done_instruction"] == "d1"  # the pair: its steps
    for lone in ("d2", "d3"):
        assert by[lone]["start_instruction"] is None and by[lone]["steps_between"] is None, by[lone]
        line = next(ln for ln in p.stdout.splitlines() if f" {lone}: " in ln)
        assert "-1 steps" not in line and "overlaps 0 compute" not in line, line
        assert "(not a pair: no steps between, no overlap counted)" in line and "[note: " in line, line
