"""Compile-time out-of-memory errors of the TPU compiler (issue 47, items 5 and 7): the texts of
tests/data/accel/<target>/oom.error.txt and the forms libtpu 0.0.50.1 prints for other programs,
read by both readers into the OOM tables, answered by ``hlodump summary``; the device capacity
each dump names (``devices``) against those texts' "available HBM"."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hlodump import read_arrow
from test_oom import both, figures

ACCEL = Path(__file__).parent / "data" / "accel"
ERRORS = sorted(ACCEL.glob("tpu_*/oom.error.txt"))
# "(354.34G)": TPU sizes are binary (FORMATS.md §2.9.3)
_G = re.compile(r"\(([0-9.]+)G\)")


def _g(text: str) -> list[int]:
    return [round(float(v) * (1 << 30)) for v in _G.findall(text)]


def _write(tmp_path: Path, text: str, name: str = "x.log") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("path", ERRORS, ids=[p.parent.name for p in ERRORS])
def test_every_tpu_oom_error_is_answered(path: Path) -> None:
    rows = both(path)
    rows_lax = both(path, strict=False)
    assert rows == rows_lax and not rows["errors"] and not rows["notes"]
    need, have = _g(path.read_text())
    f = figures(rows, "summary")
    assert f["required"] == need and f["available"] == have
    texts = {(r["section"], r["key"]): r["value"] for r in rows["oom_reports"]}
    assert texts[("summary", "required for")] == "HLO temporaries"
    assert texts[("error", "code")] == "E1000" and texts[("error", "name")] == "CompileTimeHbmOom"
    assert texts[("error", "module")] == "jit_step"
    assert {r["memory_space"] for r in rows["oom_reports"]} == {"HBM"}
    out = subprocess.run([sys.executable, "-m", "hlodump", "summary", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "HLO temporaries" in out.stdout and "E1000" in out.stdout


# Forms seen in logs and made with the TPU venv (tools/corpus/generators/gen_accel.py's programs and
# /tmp probes: an argument alone too big, an output too big, a Pallas block too big for VMEM)
JAX_TRACEBACK = """\
Traceback (most recent call last):
  File "/src/train.py", line 12, in <module>
    jax.jit(f).lower(x).compile()
jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM, the total memory required for HLO temporaries (256.00G) exceeds available HBM (15.75G). HLO module: jit__lambda.
See https://openxla.org/xla/errors/error_1000 for more details.
"""
OLD = "E0508 12:00:01.000000 1234 pjrt.cc:99] jaxlib._jax.XlaRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO temporaries (100.13G) exceeds available HBM (94.74G).\n"
WRAPPED = ("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO "
           "temporaries (161.94G) exceeds available HBM (94.74G).\nHLO module: jit__update_step.\n")
VMEM = ("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Allocation (size=1073741824) would exceed memory "
        "(size=134217728) :: #allocation3 [shape = 'u8[1073741824]{0}', space=vmem, size = 0x40000000, scoped, "
        "tag = 'input window allocation for operator input 0.'] :: f.1\n")
DETAILED = ("JaxRuntimeError: RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: XLA:TPU compile permanent error. Ran out "
            "of memory in memory space hbm. Used 126.45G of 94.75G hbm. Exceeded hbm capacity by 31.70G.\n")


def test_traceback_around_it(tmp_path: Path) -> None:
    rows = both(_write(tmp_path, JAX_TRACEBACK))
    f = figures(rows, "summary")
    assert f["required"] == 256 << 30 and f["available"] == round(15.75 * (1 << 30))
    assert {(r["key"], r["value"]) for r in rows["oom_reports"] if r["section"] == "error"} == {
        ("code", "E1000"), ("name", "CompileTimeHbmOom"), ("module", "jit__lambda")}


def test_older_form_with_log_prefix(tmp_path: Path) -> None:
    rows = both(_write(tmp_path, OLD))
    assert figures(rows, "summary") == {"required for": None, "required": round(100.13 * (1 << 30)),
                                        "available": round(94.74 * (1 << 30))}
    assert not [r for r in rows["oom_reports"] if r["section"] == "error"]


def test_module_sentence_on_its_own_line(tmp_path: Path) -> None:
    rows = both(_write(tmp_path, WRAPPED))
    assert [r["value"] for r in rows["oom_reports"] if r["key"] == "module"] == ["jit__update_step"]
    assert not rows["errors"]


def test_vmem_allocation(tmp_path: Path) -> None:
    rows = both(_write(tmp_path, VMEM))
    assert figures(rows, "summary") == {"requested": 1 << 30, "capacity": 128 << 20}
    assert {r["memory_space"] for r in rows["oom_reports"]} == {"vmem"}
    assert {(r["key"], r["value"]) for r in rows["oom_reports"] if r["section"] == "error"} == {
        ("allocation", "#allocation3"), ("instruction", "f.1")}


def test_detailed_form_gets_its_error_code(tmp_path: Path) -> None:
    rows = both(_write(tmp_path, DETAILED))
    assert figures(rows, "summary")["used"] == round(126.45 * (1 << 30))
    assert figures(rows, "error") == {"code": None, "name": None}


@pytest.mark.parametrize("cut", [
    "Ran out of memory on HBM",
    "Ran out of memory on HBM, the total memory",
    "Ran out of memory on HBM, the total memory required for HLO temporaries (354.3",
    "Ran out of memory on HBM, the total memory required for HLO temporaries (354.34G) exceeds available HBM",
    "Ran out of memory on HBM, the total memory required for HLO temporaries (354.34G) exceeds available HBM (15.7",
    "Ran out of memory on HBM, the total memory required for HLO temporaries (354.34G) exceeds available HBM (15.75G",
    "Allocation (size=1073741824) would exceed memory (size=",
    "Allocation (size=1073741824) would exceed memory (size=1342",
])
def test_line_cut_short(tmp_path: Path, cut: str) -> None:
    p = _write(tmp_path, "RESOURCE_EXHAUSTED: " + cut + "\n")
    lax = both(p, strict=False)
    assert [n["kind"] for n in lax["notes"]] == ["oom_report_cut_off"] and not lax["errors"]
    assert [r["key"] for r in lax["oom_reports"] if r["section"] == "missing"] == ["cut off"]
    strict = both(p, strict=True)
    assert len(strict["errors"]) == 1 and "cut off" in strict["errors"][0]["message"]


@pytest.mark.parametrize("bad", [
    "Ran out of memory on HBM, the total memory needed for HLO temporaries (354.34G) exceeds available HBM (15.75G).",
    "Ran out of memory on HBM, the total memory required for HLO temporaries (354.34Q) exceeds available HBM (15.75G).",
    "Ran out of memory on HBM, the total memory required for HLO temporaries (354.34G) exceeds available HBM [15.75G].",
    "Ran out of memory on HBM, the total memory required for HLO temporaries (354.34G) exceeds available HBM (15.75G). See.",
    "Allocation (size=1073741824) would exceed memory (size=abc)",
])
def test_not_the_grammar_is_an_error(tmp_path: Path, bad: str) -> None:
    rows = both(_write(tmp_path, bad + "\n"), strict=False)
    assert len(rows["errors"]) == 1


def test_other_programs_words_are_not_taken(tmp_path: Path) -> None:
    p = _write(tmp_path, "Ran out of memory on device 0 while loading\nAllocation (size=12) failed\n")
    rows = both(p)
    assert not rows["oom_reports"] and not rows["errors"]
