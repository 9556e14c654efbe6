"""Issue 40 items 1, 2 and the page's defects of item 4: one name per memory figure (the peak in
use, XLA's listed peak, jax's peak_memory_in_bytes) in every command, JSON and page; one number
formatter (bytes IEC, FLOPs SI, times with units) for text, HTML and PNG; the page without raw
floats, blank cells, cut columns or a label under the chart's toolbar."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import DATA, chromium_cdp

from hlodump import units as U

DONATE_A = os.path.join(DATA, "diff", "donate", "a")  # XLA's listed peak 768KiB > 512KiB allocated
DONATE_B = os.path.join(DATA, "diff", "donate", "b")
GPU = os.path.join(DATA, "cost", "gpu")  # HLO text only: costs, roofline, collectives
SEEDS = os.path.join(DATA, "seeds")  # real TPU buffer assignments: long names and shapes
SEED0 = os.path.join(SEEDS, "000_d4ec204070c56195.txt")
MISC = os.path.join(DATA, "corpus", "jax-0.10.2", "misc")
# a figure in decimal units: never printed by any command (bytes are IEC everywhere)
DECIMAL_BYTES = re.compile(r"\d(?:\.\d+)? ?(?:kB|MB|GB|TB)\b")


def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), os.pardir, "python"), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "hlodump.cli", *argv], capture_output=True, text=True, env=env)


@pytest.fixture(autouse=True)
def _native() -> None:
    pytest.importorskip("hlodump._core")


# ------------------------------------------------------------------ the formatter

def test_units() -> None:
    assert [U.format_bytes(v) for v in (None, 0, 576, 16384, 16 * 1024 + 400, 220.17 * 2**20, 1.5 * 2**30)] == \
        ["-", "0B", "576B", "16.0KiB", "16.4KiB", "220.17MiB", "1.50GiB"]
    assert U.format_bytes(float("inf")) == "unknown" and U.format_bytes(-2048) == "-2.0KiB"
    assert U.format_si(538052672, "FLOP") == "538.05 MFLOP" and U.format_flops(12) == "12 FLOP"
    assert U.format_rate(989.4e12) == "989.40 TFLOP/s" and U.format_rate(3.35e12, "B") == "3.35 TB/s"
    assert [U.format_seconds(v) for v in (1.5, 0.0123, 4.56e-6, 1.0263044776119403e-7, 0)] == \
        ["1.50 s", "12.30 ms", "4.56 µs", "102.6 ns", "0 s"]
    assert U.format_count(1234567) == "1,234,567" and U.format_number(0.00010263044776) == "0.0001026"
    # axis ticks on round binary values: 95.37MiB (1e8 bytes) never appears
    for vmax in (1e8, 1e9, 3.3e6, 184680476, 5000, 7.5 * 2**30):
        ticks = U.binary_ticks(vmax)
        assert ticks[0] == 0 and ticks[-1] >= vmax and 2 <= len(ticks) <= 9
        unit = 1024 ** max(0, int((len(f"{int(vmax):b}") - 1) // 10))
        assert all(t % unit == 0 for t in ticks), (vmax, ticks)
        assert all(not re.search(r"\.\d", U.format_bytes_tick(t)) or U.format_bytes_tick(t).endswith(".5GiB")
                   for t in ticks)
    assert U.format_bytes_tick(100 * 2**20) == "100MiB" and U.format_bytes_tick(0) == "0"


def test_cost_and_comms_print_bytes_as_summary_does() -> None:
    """16.39kB in comms and 16.00KiB in summary for one value: now one text, IEC."""
    cost = _cli("cost", GPU, "--top", "3")
    comms = _cli("comms", GPU)
    assert cost.returncode == 0 and comms.returncode == 0, cost.stderr + comms.stderr
    for out in (cost.stdout, comms.stdout):
        assert not DECIMAL_BYTES.search(out), DECIMAL_BYTES.search(out)
    assert "512.0KiB sent as S, 768.0KiB per device" in comms.stdout
    assert "flops 538.05 MFLOP" in cost.stdout and "bytes accessed 16.04MiB" in cost.stdout
    assert re.search(r"roofline on H100: \d+\.\d\d µs", cost.stdout)  # a time with its unit
    assert re.search(r"^\s+782\.5 ns\s+memory\s+268\.96 MFLOP\s+2\.50MiB\s+fusion", cost.stdout, re.M)
    summ = _cli("summary", DONATE_A)
    assert "16.39kB" not in summ.stdout and not DECIMAL_BYTES.search(summ.stdout)


# ------------------------------------------------------------------ one name per figure

def test_summary_names_the_three_peaks_text_and_json() -> None:
    p = _cli("summary", DONATE_A)
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())
    assert "peak in use: 524,288 bytes (512.0KiB) at step 0" in out
    assert "XLA's listed peak: 786,432 bytes (768.0KiB) at step 2" in out
    # a peak above the allocation never stands without the sentence that explains it
    assert "It is more than the 512.0KiB the module allocates: " + U.XLA_PEAK_ABOVE_ALLOCATED in out
    assert "jax's peak_memory_in_bytes (memory_analysis()): 524,288 bytes" in out
    assert "peak, live by slice" not in out and "as XLA lists it" not in out
    (m,) = json.loads(_cli("summary", DONATE_A, "--json").stdout)
    pk = m["peaks"]
    assert (pk["peak_in_use"], pk["xla_listed_peak"], pk["jax_peak_memory_in_bytes"], pk["total_bytes"]) == \
        (524288, 786432, 524288, 524288)
    assert pk["peak_in_use_step"] == 0 and pk["xla_listed_peak_step"] == 2 and pk["xla_listed_peak_above_allocated"]
    # the names before issue 40 stay, as documented aliases of the same figures
    assert (pk["live_by_slice"], pk["xla_listed"]) == (pk["peak_in_use"], pk["xla_listed_peak"])
    assert m["peak"]["bytes"] == pk["xla_listed_peak"] and m["timeline"]["max_allocated_bytes"] == pk["peak_in_use"]


def test_overview_columns_name_each_peak() -> None:
    p = _cli("summary", MISC, "--top", "0")
    assert p.returncode == 0, p.stderr
    head = next(ln for ln in p.stdout.splitlines() if "module" in ln and "allocated" in ln)
    assert "peak in use" in head and "XLA's listed peak" in head and "XLA peak step" not in head
    assert " peak " not in head.replace("peak in use", "").replace("listed peak", "")
    out = " ".join(p.stdout.split())
    assert "XLA's listed peak is more than the module allocates in" in out and "jit_update" in out


def test_record_names_its_columns(tmp_path) -> None:
    """record's peak column was jax's peak_memory_in_bytes under the name "peak"."""
    out = tmp_path / "rec"
    p = _cli("record", "-o", str(out), "--", "sh", "-c", f'cp "{DONATE_A}"/* "{out}/"')
    assert p.returncode == 0, p.stderr
    head = p.stdout.splitlines()[1]
    assert head.split()[:5] == ["module", "allocated", "peak", "in", "use"]
    assert head.rstrip().endswith("jax's peak_memory_in_bytes") and not re.search(r"\speak$", head)
    row = p.stdout.splitlines()[2].split()
    assert row[:3] == ["module_0012.jit_scale_add", "512.0KiB", "512.0KiB"]
    j = json.loads(_cli("record", "-o", str(tmp_path / "rec2"), "--json", "--", "sh", "-c",
                        f'cp "{DONATE_A}"/* "{tmp_path / "rec2"}/"').stdout)
    (m,) = j["modules"]
    assert (m["peak_in_use"], m["xla_listed_peak"], m["peak_memory_in_bytes"]) == (524288, 786432, 524288)


def test_diff_names_each_peak() -> None:
    p = _cli("diff", DONATE_A, DONATE_B, "--no-cost")
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith("module_0012.jit_scale_add -> module_0014.jit_scale_add: peak in use 512.0KiB -> 768.0KiB")
    j = json.loads(_cli("diff", DONATE_A, DONATE_B, "--json", "--no-cost").stdout)
    assert j["peak"] == "peak_in_use"
    keys = [r["key"] for r in j["changes"] if r["what"] == "peak"]
    assert "peak_in_use" in keys and "peak_bytes" not in keys
    r = next(r for r in j["changes"] if r["key"] == "peak_in_use")
    assert (r["a"], r["b"]) == (j["pairs"][0]["peak_a"], j["pairs"][0]["peak_b"])
    assert "peak in use" in p.stdout.split("\n", 1)[1]


# ------------------------------------------------------------------ PNG

def test_png_ticks_on_binary_values() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hlodump import analysis as A
    from hlodump.outputs import plot

    d = A.load(SEED0)
    key = A.summary(d, top=0)[0]["module"]
    fig = plot.figure(d, key)
    try:
        ax = fig.axes[0]
        lo, hi = ax.get_ylim()
        ticks = [t for t in ax.get_yticks() if lo <= t <= hi]
        assert len(ticks) >= 3 and all(t % 2**20 == 0 for t in ticks), ticks  # round MiB
        fig.canvas.draw()
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert "50MiB" in labels and not any("95.37" in x or "." in x for x in labels), labels
        text = "\n".join(t.get_text() for t in ax.texts)
        # the HBM (color 0) figure, as the chart draws HBM alone (issue 47: never HBM + VMEM + SMEM)
        assert "peak in use: 172.00MiB at step 7" in text and "XLA's listed peak: 176.13MiB at step 12" in text
    finally:
        plt.close(fig)


# ------------------------------------------------------------------ the page in Chromium

def _browser():
    pytest.importorskip("plotly")
    return chromium_cdp()


def _report(tmp_path, name: str, *paths: str) -> str:
    out = str(tmp_path / f"{name}.html")
    p = _cli("report", *paths, "-o", out)
    assert p.returncode == 0, p.stderr
    return out


RAW_FLOAT = re.compile(r"\d\.\d{6,}|\de-\d")


def test_page_has_no_raw_float_and_dashes_for_missing(tmp_path) -> None:
    cdp = _browser()
    out = _report(tmp_path, "gpu", GPU)
    with cdp.Browser.launch(1400, 1000) as b:
        b.open("file://" + out)
        b.wait_until("document.getElementById('detail').dataset.module !== undefined && "
                     "document.querySelectorAll('#detail table').length > 0")
        text = b.eval("document.body.innerText")
        assert "top instructions by estimated time" in text
        assert not RAW_FLOAT.search(text), RAW_FLOAT.search(text).group(0)
        assert not DECIMAL_BYTES.search(text)
        # the seconds column: times with their unit
        cells = b.eval("""(() => { const t = [...document.querySelectorAll('#detail h3')].find(h => h.textContent
                          .startsWith('top instructions by estimated time')).parentElement.querySelector('table');
                          const i = [...t.querySelectorAll('th')].findIndex(th => th.textContent === 'seconds');
                          return [...t.querySelectorAll('tbody tr')].map(tr => tr.children[i].textContent); })()""")
        assert cells and all(re.fullmatch(r"\d+\.\d+ (s|ms|µs|ns)", c) for c in cells), cells
        # missing op_name / source: a dash, never a blank cell
        blanks = b.eval("[...document.querySelectorAll('#detail td')].filter(td => td.textContent.trim() === '').length")
        assert blanks == 0
        assert b.eval("[...document.querySelectorAll('#detail td')].some(td => td.textContent === '\\u2014')")
        assert "538.05 MFLOP" in b.eval("document.querySelector('#detail .facts + .facts').textContent")
        assert b.console_errors == [] and cdp.outside_requests(b.requests) == []


def test_page_columns_fit_at_1400(tmp_path) -> None:
    """Real TPU dumps (long shapes, op_names, source paths): no table is wider than its box."""
    cdp = _browser()
    out = _report(tmp_path, "seeds", SEEDS)
    with cdp.Browser.launch(1400, 1000) as b:
        b.open("file://" + out)
        b.wait_until("document.getElementById('detail').dataset.module !== undefined")
        cut = []
        for mid in b.eval("IDX.modules.map(r => r.id)"):
            b.eval(f"openModule({json.dumps(mid)})")
            cut += b.eval("""[...document.querySelectorAll('#detail table')].filter(t =>
                t.parentElement.scrollWidth > t.parentElement.clientWidth + 1 ||
                t.getBoundingClientRect().right > window.innerWidth).map(t => t.parentElement.querySelector('h3').textContent)""")
        assert cut == []
        assert b.console_errors == []


def test_page_names_the_peaks_and_keeps_labels_off_the_toolbar(tmp_path) -> None:
    cdp = _browser()
    out = _report(tmp_path, "donate", DONATE_A)
    with cdp.Browser.launch(900, 1000) as b:  # a small module in a narrow window
        b.open("file://" + out)
        b.wait_until("document.querySelector('#timeline .main-svg') !== null && "
                     "document.querySelector('#timeline .modebar') !== null")
        heads = b.eval("[...document.querySelectorAll('#modules th')].map(th => th.textContent)")
        assert "peak in use" in heads and "XLA's listed peak" in heads and "peak" not in heads
        facts = b.eval("document.querySelector('#detail .facts + .facts').textContent")
        assert facts.startswith("peak in use 512.0KiB · XLA's listed peak 768.0KiB · allocated 512.0KiB")
        assert "jax's peak_memory_in_bytes 512.0KiB" in facts
        note = b.eval("document.getElementById('peak-note').textContent")
        assert note == ("XLA's listed peak (768.0KiB) is more than the module allocates (512.0KiB): "
                        + U.XLA_PEAK_ABOVE_ALLOCATED)
        boxes = b.eval("""[...document.querySelectorAll('#timeline .annotation')].map(a => {
                            const r = a.getBoundingClientRect(); return [a.textContent, r.left, r.top, r.right, r.bottom]; })""")
        assert {t.split(" @")[0] for t, *_ in boxes} == {"peak in use 512.0KiB", "XLA's listed peak 768.0KiB"}
        bar = b.eval("(r => [r.left, r.top, r.right, r.bottom])(document.querySelector('#timeline .modebar').getBoundingClientRect())")
        for t, l, tp, r, bt in boxes:
            apart = r <= bar[0] or l >= bar[2] or bt <= bar[1] or tp >= bar[3]
            assert apart, (t, (l, tp, r, bt), bar)
        (a, c) = sorted(boxes)[:2]
        assert a[3] <= c[1] or c[3] <= a[1] or a[4] <= c[2] or c[4] <= a[2]  # the two labels apart too
        ticks = b.eval("[...document.querySelectorAll('#timeline .ytick text')].map(t => t.textContent)")
        assert ticks and all(re.fullmatch(r"0|\d+(KiB|MiB|GiB)", t) for t in ticks), ticks
        assert b.console_errors == []


OOM = os.path.join(DATA, "oom")


def test_oom_views_tick_on_binary_values(tmp_path) -> None:
    """The OOM pictures (PNG and page): byte axes on round binary values, bytes printed IEC."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import hlodump
    from hlodump import analysis as A
    from hlodump.outputs import oom_plot

    d = hlodump.read_arrow(OOM, on_error="collect")
    reports = A.oom_summary(d, top=20)
    assert len(reports) > 5
    for r in reports:
        fig = oom_plot.oom_figure(r)
        try:
            fig.canvas.draw()
            for ax, axis in ((fig.axes[0], "x"), (fig.axes[1], "y")):
                if not ax.patches and not ax.lines:  # nothing drawn (no buffers listed): no byte axis
                    continue
                labels = [t.get_text() for t in getattr(ax, f"get_{axis}ticklabels")() if t.get_text()]
                assert all(re.fullmatch(r"-?(0|\d+(\.5)?(B|KiB|MiB|GiB|TiB))", x) for x in labels), (r["path"], labels)
        finally:
            plt.close(fig)
    cdp = _browser()
    out = tmp_path / "oom.html"
    p = _cli("report", OOM, "-o", str(out), "--keep-going", "--errors-ok")
    assert p.returncode == 0, p.stderr
    with cdp.Browser.launch() as b:
        b.open(out.as_uri())
        b.wait_until(f"document.querySelectorAll('.js-plotly-plot').length === {len(reports)}")
        ticks = b.eval("[...document.querySelectorAll('.js-plotly-plot .xtick text, .js-plotly-plot .y2tick text')]"
                       ".map(t => t.textContent)")
        assert ticks and all(re.fullmatch(r"0|\d+(\.5)?(B|KiB|MiB|GiB|TiB)", t) for t in ticks), ticks
        text = b.eval("document.body.innerText")
        assert not DECIMAL_BYTES.search(text)
        assert b.eval("[...document.querySelectorAll('td')].filter(td => td.textContent.trim() === '').length") == 0
        assert b.console_errors == []
