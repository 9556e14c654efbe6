"""``hlodump summary | plot | diff`` end to end; plots checked as pictures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess  # noqa: F401  (kept for the tests of other commands)

import pytest

from conftest import DATA

from hlodump.cli import main

SEED0 = os.path.join(DATA, "seeds", "000_d4ec204070c56195.txt")
SEED3 = os.path.join(DATA, "seeds", "003_edd6dfbd09ed8e41.txt")
FORWARD = os.path.join(DATA, "corpus", "jax-0.10.2", "transformer")


def _run(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_summary_text(capsys) -> None:
    out = _run(capsys, "summary", SEED0, "--buffers", "3")
    assert "230,870,056" in out and "184,680,476" in out and "step 12" in out
    assert "fusion.5{1}" in out and "134,217,728" in out
    # the buffers at the peak in use of HBM (step 7; issue 47), copy-start.1{0} is VMEM's
    assert out.index("fusion.5{1}") < out.index("constant.4{}")
    assert "buffers at peak in use (HBM, step 7)" in out and "copy-start.1{0}" not in out


def test_summary_json(capsys) -> None:
    s = json.loads(_run(capsys, "summary", SEED0, "--json", "--buffers", "2"))
    (m,) = s
    assert m["total_bytes"] == 230870056
    assert m["peak"]["bytes"] == 184680476 and m["peak"]["step"] == 12
    assert [b["buffer"] for b in m["top_buffers"]] == ["fusion.5{1}", "constant.4{}"]
    assert {b["color"] for b in m["top_buffers"]} == {0} and m["timeline"]["memory_space"] == "HBM"
    assert sum(m["by_category"].values()) == m["total_bytes"]


def test_summary_directory_module(capsys) -> None:
    s = json.loads(_run(capsys, "summary", FORWARD, "--json", "--module", "jit_forward"))
    (m,) = s
    assert m["module"] == "module_0002.jit_forward"
    assert m["peak"]["bytes"] == m["peak"]["stack_trace_total"] == 218884
    assert any(b["source"] and ".py:" in b["source"] for b in m["top_buffers"])


def test_diff(capsys) -> None:
    rows = json.loads(_run(capsys, "diff", SEED0, SEED3, "--json"))["changes"]
    assert any(r["what"] == "peak" and r["a"] == 184680476 and r["b"] == 18612288 for r in rows)
    assert any(r["what"] == "custom_call" and r["change"] == "added" and r["key"] == "tpu_custom_call" for r in rows)
    out = _run(capsys, "diff", SEED0, SEED3)
    assert "tpu_custom_call" in out and "peak" in out


def _png_stats(path: str) -> tuple[int, int, float]:
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(path)
    return img.shape[1], img.shape[0], float(np.asarray(img[..., :3]).var())


def test_plot_png(capsys, tmp_path) -> None:
    out = str(tmp_path / "seed0.png")
    _run(capsys, "plot", SEED0, "-o", out)
    w, h, var = _png_stats(out)
    assert w >= 800 and h >= 400
    assert var > 0.01, "the picture is not blank"


def test_plot_directory_one_per_module(capsys, tmp_path) -> None:
    out = str(tmp_path / "tr.png")
    printed = _run(capsys, "plot", FORWARD, "-o", out).split()
    assert sorted(os.path.basename(p) for p in printed) == [
        "tr.module_0000.jit_train_step.png", "tr.module_0002.jit_forward.png"]
    for p in printed:
        assert _png_stats(p)[2] > 0.01


def test_plot_html_in_chromium(capsys, tmp_path) -> None:
    """`plot -o x.html` is the report page of that module: plotly.js inlined, the module's
    chart drawn on opening, hovering the peak step names its instruction and live buffers."""
    pytest.importorskip("plotly")
    out = str(tmp_path / "seed0.html")
    _run(capsys, "plot", SEED0, "-o", out)
    text = open(out, encoding="utf-8").read()
    assert "plotly.js v" in text and "fusion.5{1}" in text and "splash_attention_kernel.py:184" in text
    cdp = pytest.importorskip("cdp")
    if cdp.chromium() is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    pytest.importorskip("websocket")
    with cdp.Browser.launch(1100, 700) as b:
        b.open("file://" + os.path.abspath(out))
        b.wait_until("document.querySelector('#timeline .main-svg') !== null")
        assert b.eval("document.querySelectorAll('#modules tbody tr').length") == 1
        peak = b.eval("IDX.modules[0].peak")
        assert b.eval("document.querySelector('#detail .facts + .facts').textContent").startswith(
            "peak in use " + b.eval(f"fmtBytes({peak})"))
        b.eval("showHover(detailOf(IDX.modules[0].id), detailOf(IDX.modules[0].id).timeline.x.indexOf("
               "detailOf(IDX.modules[0].id).peak.step))")
        hover = b.eval("document.getElementById('hover').textContent")
        assert "fusion.5" in hover and "largest live buffers" in hover
        w, h, var = cdp.png_stats(b.screenshot())
        assert (w, h) == (1100, 700) and var > 0.005, "the rendered page is not blank"
        assert b.console_errors == [] and cdp.outside_requests(b.requests) == []


# ------------------------------------------------------------------ mistakes: a message, status 2

CF10 = os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow")
RNN_LOSS = os.path.join(CF10, "module_0002.jit_rnn_loss.cpu_after_optimizations")


def _fail(capsys, *argv: str, status: int = 2) -> str:
    assert main(list(argv)) == status
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "Traceback" not in out.out
    return out.err


@pytest.mark.parametrize("suffix, says", [
    (".txt", "HLO text only"),
    ("-live-range.txt", "live-range file only"),
    ("-buffer-assignment.txt", "memory_analysis"),
])
def test_summary_of_one_file_of_any_kind(capsys, suffix, says) -> None:
    out = _run(capsys, "summary", RNN_LOSS + suffix)
    assert says in out


def test_summary_of_memory_report_alone(capsys) -> None:
    assert main(["summary", RNN_LOSS + "-memory-usage-report.txt", "--keep-going", "--errors-ok"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err


def test_module_not_found_lists_choices(capsys) -> None:
    err = _fail(capsys, "summary", CF10, "--module", "nosuch")
    assert err.startswith("hlodump: no module matches 'nosuch'") and "module_0002.jit_rnn_loss" in err


def test_module_ambiguous_lists_matches(capsys) -> None:
    err = _fail(capsys, "summary", CF10, "--module", "jit_")
    assert "several modules match 'jit_'" in err and "module_0002.jit_rnn_loss" in err


def test_module_by_id_name_substring(capsys) -> None:
    for sel in ("2", "0002", "jit_rnn_loss", "rnn_loss", "module_0002.jit_rnn_loss"):
        (m,) = json.loads(_run(capsys, "summary", CF10, "--module", sel, "--json"))
        assert m["module_name"] == "jit_rnn_loss"


def test_missing_path(capsys) -> None:
    for cmd in (["summary"], ["plot", "-o", "x.png"], ["diff", SEED0]):
        err = _fail(capsys, *cmd, "/no/such/dump")
        assert "/no/such/dump" in err and "No such file or directory" in err


def test_plot_bad_suffix_and_nothing_to_plot(capsys, tmp_path) -> None:
    err = _fail(capsys, "plot", SEED0, "-o", str(tmp_path / "x.svg"))
    assert ".png or .html" in err
    err = _fail(capsys, "plot", RNN_LOSS + ".txt", "-o", str(tmp_path / "x.png"))
    assert "nothing to plot" in err and "HLO text only" in err


def test_diff_module_not_found(capsys) -> None:
    err = _fail(capsys, "diff", CF10, CF10, "--module", "nosuch")
    assert "no module matches 'nosuch'" in err


def test_keep_going_and_threads_on_every_command(capsys, tmp_path) -> None:
    bad = tmp_path / "dump"
    shutil.copytree(CF10, bad)
    with open(bad / "module_0002.jit_rnn_loss.cpu_after_optimizations-buffer-assignment.txt", "a") as fh:
        fh.write("allocation x: size 5:\n")
    # strict: the error, and how to keep going
    err = _fail(capsys, "summary", str(bad), status=1)
    assert "--keep-going" in err and 'on_error="collect"' in err
    for argv in (["summary", str(bad), "--module", "rnn_loss"],
                 ["plot", str(bad), "--module", "rnn_loss", "-o", str(tmp_path / "p.png")],
                 ["diff", str(bad), CF10, "--module", "rnn_loss"],
                 ["tables", str(bad)],
                 ["query", str(bad), "select count(*) from errors"],
                 ["convert", str(bad), str(tmp_path / "pq")]):
        err = _fail(capsys, *argv, "--keep-going", "--threads", "1", status=1)
        assert err.strip().splitlines()[-1].startswith("hlodump: 1 error in 1 file: ")
        assert "module_0002.jit_rnn_loss.cpu_after_optimizations-buffer-assignment.txt" in err
        again = [a + "2" if a == str(tmp_path / "pq") else a for a in argv]  # convert refuses to overwrite
        assert main([*again, "--keep-going", "--errors-ok", "--threads", "1"]) == 0
        capsys.readouterr()


def test_summary_is_within_allocated_and_has_jax_fields(capsys) -> None:
    (m,) = json.loads(_run(capsys, "summary", CF10, "--module", "rnn_loss", "--json"))
    assert m["timeline"]["max_allocated_bytes"] <= m["total_bytes"]
    assert set(m["memory_analysis"]) >= {"argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
                                          "temp_size_in_bytes"}
    out = _run(capsys, "summary", CF10, "--module", "rnn_loss")
    assert "whole-instruction shape sizes" not in out and "argument_size_in_bytes" in out


def test_diff_summary_first_sorted_by_bytes(capsys) -> None:
    rows = json.loads(_run(capsys, "diff", SEED0, SEED3, "--json"))["changes"]
    whats = [r["what"] for r in rows]
    first = {"module", "total", "peak", "category", "memory_space"}
    n = sum(1 for w in whats if w in first)
    assert set(whats[:n]) <= first and not set(whats[n:]) & first
    deltas = [abs(r["delta"] or 0) for r in rows[n:]]
    assert deltas == sorted(deltas, reverse=True)
    out = _run(capsys, "diff", SEED0, SEED3)
    assert out.splitlines()[0].startswith("000_d4ec204070c56195 -> 003_edd6dfbd09ed8e41: peak ")
