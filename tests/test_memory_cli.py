"""``hlodump summary | plot | diff`` end to end; plots checked as pictures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

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
    out = _run(capsys, "summary", SEED0, "--top", "3")
    assert "230,870,056" in out and "184,680,476" in out and "step 12" in out
    assert "fusion.5{1}" in out and "134,217,728" in out
    assert out.index("fusion.5{1}") < out.index("copy-start.1{0}")


def test_summary_json(capsys) -> None:
    s = json.loads(_run(capsys, "summary", SEED0, "--json", "--top", "2"))
    (m,) = s
    assert m["total_bytes"] == 230870056
    assert m["peak"]["bytes"] == 184680476 and m["peak"]["step"] == 12
    assert [b["buffer"] for b in m["top_buffers"]] == ["fusion.5{1}", "copy-start.1{0}"]
    assert sum(m["by_category"].values()) == m["total_bytes"]


def test_summary_directory_module(capsys) -> None:
    s = json.loads(_run(capsys, "summary", FORWARD, "--json", "--module", "jit_forward"))
    (m,) = s
    assert m["module"] == "module_0002.jit_forward"
    assert m["peak"]["bytes"] == m["peak"]["stack_trace_total"] == 218884
    assert any(b["source"] and ".py:" in b["source"] for b in m["top_buffers"])


def test_diff(capsys) -> None:
    rows = json.loads(_run(capsys, "diff", SEED0, SEED3, "--json"))
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


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def test_plot_html_in_chromium(capsys, tmp_path) -> None:
    out = str(tmp_path / "seed0.html")
    _run(capsys, "plot", SEED0, "-o", out)
    text = open(out, encoding="utf-8").read()
    assert "<svg" in text and "fusion.5{1}" in text and "splash_attention_kernel.py:184" in text
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    shot = str(tmp_path / "shot.png")
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--screenshot={shot}", "--window-size=1100,700", "file://" + os.path.abspath(out)]
    r = subprocess.run(cmd, capture_output=True, timeout=120)
    assert os.path.exists(shot), r.stderr.decode(errors="replace")[-2000:]
    w, h, var = _png_stats(shot)
    assert (w, h) == (1100, 700)
    assert var > 0.005, "the rendered page is not blank"
