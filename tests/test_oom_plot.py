"""``hlodump plot`` and ``hlodump report`` on pasted out-of-memory reports (issue 29): a log with
reports and no dump gets pictures of its reports, not "nothing to analyse". The figures drawn
are the report's own: checked against the log's text (sizes and names read here by regular
expressions), and the HTML page is loaded in Chromium (no console error, no request out, one
chart per report, every buffer of the report in its table, text from the log kept as text)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA

import hlodump
from hlodump import analysis as A
from hlodump.outputs import oom_plot

OOM = Path(DATA) / "oom"


def _hlodump(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlodump", *args], capture_output=True, text=True, timeout=300)


def test_figure_data_is_the_reports_own_text() -> None:
    d = hlodump.read_arrow(OOM / "tpu_jax.log")
    (r,) = A.oom_summary(d, top=50)
    f = oom_plot.oom_figure_data(r)
    text = (OOM / "tpu_jax.log").read_text()
    labels = re.findall(r"XLA label: ([\w.\-]+) = ", text)
    assert [b["label"] for b in f["buffers"]] == labels
    assert [b["size"] for b in f["buffers"]] == re.findall(r"Size: ([0-9.]+[KMGT]?)\n", text)
    assert set(f["in_use"]) == {"arguments", "program", "reserved"}
    assert f["capacity"] == r["failed"]["capacity"]["bytes"]
    assert "used 30.21GiB of 15.48GiB HBM" in f["lines"][0]


def test_plot_png_per_report(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "oom.png"
    p = _hlodump("plot", str(OOM / "gpu_five_buffers.log"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(out) and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image as mpimg

    img = mpimg.imread(out)
    assert img.shape[:2] == (600, 1100) and img.std() > 0.05  # drawn, not blank
    # a log with the report printed twice: one report, one picture
    p = _hlodump("plot", str(OOM / "gpu_glog_twice.log"), "-o", str(tmp_path / "twice.png"))
    assert p.returncode == 0 and p.stdout.strip() == str(tmp_path / "twice.png"), p.stderr


def test_report_page_of_every_oom_report(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    out = tmp_path / "oom.html"
    p = _hlodump("report", str(OOM), "-o", str(out), "--keep-going", "--errors-ok")
    assert p.returncode == 0, p.stderr
    d = hlodump.read_arrow(OOM, on_error="collect")
    reports = A.oom_summary(d, top=50)
    page = out.read_text()
    assert page.count("<section>") == len(reports) > 5
    for r in reports:
        for b in r["buffers"]:
            if b["op_name"]:
                assert b["op_name"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
                    .replace('"', "&quot;").replace("'", "&#x27;") in page
    cdp = pytest.importorskip("cdp")
    pytest.importorskip("websocket")
    if cdp.chromium() is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    with cdp.Browser.launch() as b:
        b.open(out.as_uri())
        b.wait_until(f"document.querySelectorAll('.js-plotly-plot').length === {len(reports)}")
        bars = b.eval("[...document.querySelectorAll('.js-plotly-plot')].map(p => p.data[0].x.length)")
        assert bars == [len([x for x in r["buffers"] if x["size_bytes"] is not None]) for r in reports]
        assert b.console_errors == [] and cdp.outside_requests(b.requests) == []


def test_log_text_stays_text_in_the_page(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    text = (OOM / "gpu_five_buffers.log").read_text()
    evil = text.replace("gemma.py:175", "</script><img src=x onerror=window.__xss=1>.py:175", 1)
    log = tmp_path / "evil.log"
    log.write_text(evil)
    out = tmp_path / "evil.html"
    oom_plot.oom_html(hlodump.read_arrow(log), str(out))
    page = out.read_text()
    assert "<img src=x" not in page and "</script><img" not in page


def test_oom_page_temporary_is_unpredictable_and_never_follows_links(tmp_path: Path) -> None:
    """Issue 50, item 5: the OOM page was written to ``<out>.tmp<pid>``, opened following
    symlinks (a link planted there had its target overwritten) and left behind on failure. Now
    the temporary has an unpredictable name (``mkstemp``: ``O_EXCL|O_NOFOLLOW``)."""
    import os

    pytest.importorskip("plotly")
    d = hlodump.read_arrow(OOM, on_error="collect")
    out = tmp_path / "oom.html"
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    os.symlink(victim, f"{out}.tmp{os.getpid()}")  # where the old code wrote
    oom_plot.oom_html(d, str(out), top=5)
    assert victim.read_text() == "not yours\n" and "<section>" in out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, victim.name, f"{out.name}.tmp{os.getpid()}"])
    # a write that fails (a full disk): tests/test_cli.py::test_outputs_are_replaced_atomically[oom]
