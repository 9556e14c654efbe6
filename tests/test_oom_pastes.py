"""Pastes as they come (issue 40, item 3), through the commands: a cut-off paste is answered with
what it holds and says what is missing (exit 0; ``--strict`` / ``strict=True`` still fail),
worker-prefixed and tail-only pastes are read, the failed request of the platform allocator
(ROCm) is shown, and entry-parameter buffers keep their shape and are drawn as parameters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA

import hlodump
import hlodump.reference
from hlodump import analysis as A
from hlodump.outputs import oom_plot
from hlodump.exceptions import ParseError

OOM = Path(DATA) / "oom"


def _hlodump(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlodump", *args], capture_output=True, text=True, timeout=300)


def test_cut_off_paste_answers_and_says_what_is_missing() -> None:
    p = _hlodump("summary", str(OOM / "gpu_elixir_cut.log"))
    assert p.returncode == 0, p.stderr
    assert "failed: an allocation of 117,964,800 bytes" in p.stdout
    assert "missing (line 20): out-of-memory report cut off by the end of the file" in p.stdout
    assert "hlodump: note: oom report cut off" in p.stderr and "--strict" in p.stderr
    p = _hlodump("summary", "--strict", str(OOM / "gpu_elixir_cut.log"))
    assert p.returncode == 1 and "out-of-memory report cut off" in p.stderr and "Traceback" not in p.stderr
    # the API: strict=True raises, the default answers
    with pytest.raises(ParseError):
        hlodump.read_arrow(OOM / "gpu_elixir_cut.log", strict=True)
    d = hlodump.read_arrow(OOM / "gpu_elixir_cut.log")
    (r,) = A.oom_summary(d)
    assert [m["what"] for m in r["missing"]] == ["cut off"] and r["n_buffers"] == 1
    assert d["errors"].num_rows == 0 and d["notes"].num_rows == 1


def test_every_paste_of_the_folder_is_answered() -> None:
    """Without --keep-going: every paste gives a report, the cut ones with what is missing."""
    p = _hlodump("summary", str(OOM))
    assert p.returncode == 0, p.stderr
    for f in sorted(OOM.glob("*.log")):
        assert f"{f.name}: out-of-memory report" in p.stdout, f.name


def test_tail_only_paste() -> None:
    p = _hlodump("summary", str(OOM / "gpu_tail_only.log"))
    assert p.returncode == 0, p.stderr
    assert "failed: not in the paste" in p.stdout
    assert "missing (line 2): the paste starts inside a buffer of the report" in p.stdout
    (r,) = A.oom_summary(hlodump.read_arrow(OOM / "tpu_tail_only.log"))
    assert (r["backend"], [b["rank"] for b in r["buffers"]]) == ("tpu", [3, 4])


def test_worker_prefixed_paste() -> None:
    (r,) = A.oom_summary(hlodump.read_arrow(OOM / "gpu_ray_worker_prefixes.log"))
    assert r["failed"]["requested"]["bytes"] == 4 << 30 and r["n_buffers"] == 3 and r["missing"] == []


def test_platform_allocator_request_is_shown_as_failed() -> None:
    p = _hlodump("summary", str(OOM / "gpu_rocm_platform_allocator.log"))
    assert p.returncode == 0, p.stderr
    assert "failed: an allocation of 165,420,646,400 bytes" in p.stdout
    (r,) = A.oom_summary(hlodump.read_arrow(OOM / "gpu_rocm_platform_allocator.log"))
    f = oom_plot.oom_figure_data(r)
    assert f["requested"] == 165420646400 and f["lines"][0].startswith("failed to allocate 165,420,646,400 bytes")


def test_entry_parameter_buffers_keep_shape_and_are_parameters() -> None:
    (r,) = A.oom_summary(hlodump.read_arrow(OOM / "gpu_five_buffers.log"))
    kinds = [(b["rank"], b["shape"], b["kind"]) for b in r["buffers"]]
    assert kinds == [(1, "f32[5104,257152]", "custom-call"), (2, "f32[2048,257152]", "fusion"),
                     (3, "f16[2048,257152]", "parameter"), (4, "f32[16,319,2048]", "parameter"),
                     (5, "f32[16,319,2048]", "fusion")]
    f = oom_plot.oom_figure_data(r)
    colors = {b["shape"] + ("*" if b["kind"] == "parameter" else ""): b["color"] for b in f["buffers"]}
    assert colors["f16[2048,257152]*"] == oom_plot._KIND_COLORS["parameters"]
    assert colors["f32[2048,257152]"] == oom_plot._KIND_COLORS["temporaries"]
    # a parameter's bar is named "entry parameter", its shape beside it once (issue 51)
    assert [(b["label"], b["shape"]) for b in f["buffers"]][2] == ("entry parameter", "f16[2048,257152]")


def test_pictures_of_a_cut_paste(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    out = tmp_path / "oom.html"
    p = _hlodump("plot", str(OOM / "gpu_tail_only.log"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    page = out.read_text()
    assert "missing (line 2): the paste starts inside a buffer" in page
    assert oom_plot._KIND_COLORS["parameters"] in page  # buffer 3 drawn as a parameter


def test_tpu_one_line_messages_are_answered() -> None:
    p = _hlodump("summary", str(OOM / "tpu_runtime_one_line.log"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("out-of-memory report") == 3
    assert "failed: an allocation of 8,388,608 bytes" in p.stdout
    assert "failed: required 3.84TiB, available 90.96GiB" in p.stdout


def test_whole_reader_notes_equal_the_reference() -> None:
    """The folder of pastes through both whole readers: the same rows and the same cut-off notes."""
    d = hlodump.read_arrow(OOM)
    ref = hlodump.reference.read_arrow(OOM)
    for name in ("oom_reports", "oom_buffers", "notes", "errors"):
        assert d[name].to_pylist() == ref[name].to_pylist(), name
    assert d["errors"].num_rows == 0
    assert sorted(d["notes"].column("kind").to_pylist()) == ["oom_report_cut_off"] * 3
