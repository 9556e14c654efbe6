"""``hlodump cost`` and ``comms`` rank across every module by default (issue 40 item 5); the
roofline only on a device given or named by the dump."""

from __future__ import annotations

import json
import os
import re

import pytest

from conftest import DATA

from hlodump.analysis import devices as V
from hlodump.cli import main

CPU = os.path.join(DATA, "cost", "jax-0.10.2")  # 31 CPU modules
GPU = os.path.join(DATA, "cost", "gpu")  # one sm_9.0_gpu module
SPMD = os.path.join(DATA, "corpus", "jax-0.10.2", "spmd")  # collectives in 9 CPU modules


def _run(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _json(capsys, *argv: str) -> dict:
    return json.loads(_run(capsys, *argv, "--json"))


def test_cost_without_a_device_has_no_time(capsys) -> None:
    out = _run(capsys, "cost", CPU, "--top", "4")
    first, *rest = out.splitlines()
    assert first.startswith("note: no roofline time: the dump names no device preset (backend cpu); give --device")
    assert "roofline" not in "\n".join(rest) and not re.search(r"\d(ns|us|ms)\b", out)
    j = _json(capsys, "cost", CPU, "--top", "4")
    assert j["device"] is None and "no device preset" in j["device_note"] and j["sort"] == "flops"
    assert all("seconds" not in r for r in j["top_instructions"] + j["by_source"] + j["modules"])


def test_cost_ranked_across_modules(capsys) -> None:
    j = _json(capsys, "cost", CPU, "--top", "5")
    top = j["top_instructions"]
    flops = [r["flops"] for r in top]
    assert len(top) == 5 and flops == sorted(flops, reverse=True) and len({r["module"] for r in top}) > 1
    mods = [(m["cost_analysis"] or {}).get("flops", 0) for m in j["modules"]]
    assert mods == sorted(mods, reverse=True) and len(mods) == 31
    assert "modules" in j["by_source"][0]  # the breakdown summed over modules
    out = _run(capsys, "cost", CPU, "--top", "5")
    assert "31 modules by flops:" in out and "… and 26 more modules" in out
    assert "top 5 instructions by flops across 31 modules:" in out
    assert "[module_0000.jit_cost_matmul]" in out  # each ranked instruction says its module
    b = _json(capsys, "cost", CPU, "--top", "2", "--sort", "bytes")
    nb = [r["bytes_accessed"] for r in b["top_instructions"]]
    assert nb == sorted(nb, reverse=True)


def test_cost_by_module(capsys) -> None:
    out = _run(capsys, "cost", CPU, "--top", "1", "--by-module")
    heads = re.findall(r"^module_\d{4}\.\S+: flops", out, re.M)
    assert len(heads) == 31 and out.count("  top instructions by flops:") > 20
    j = _json(capsys, "cost", CPU, "--top", "1", "--by-module")
    per = {}
    for r in j["top_instructions"]:
        per[r["module"]] = per.get(r["module"], 0) + 1
    assert j["by_module"] and len(per) > 20 and set(per.values()) == {1}


def test_cost_device_named_by_the_dump(capsys) -> None:
    out = _run(capsys, "cost", GPU, "--top", "2")
    assert out.startswith("roofline on H100 (named by the dump: backend sm_9.0_gpu: CUDA compute capability 9.0")
    j = _json(capsys, "cost", GPU)
    assert j["device"]["name"] == "H100" and "sm_9.0_gpu" in j["device"]["chosen"] and j["sort"] == "time"
    assert j["modules"][0]["seconds"] > 0


def test_cost_device_given(capsys) -> None:
    out = _run(capsys, "cost", CPU, "--device", "A100", "--top", "3")
    assert out.startswith("roofline on A100 (--device)") and "top 3 instructions by roofline time (A100)" in out
    j = _json(capsys, "cost", CPU, "--device", "A100", "--top", "3")
    secs = [r["seconds"] for r in j["top_instructions"]]
    assert j["device"]["name"] == "A100" and secs == sorted(secs, reverse=True)


def test_cost_sort_time_needs_a_device(capsys) -> None:
    assert main(["cost", CPU, "--sort", "time"]) == 2
    assert "--sort time needs a roofline" in capsys.readouterr().err


def test_comms_ranked_across_modules(capsys) -> None:
    out = _run(capsys, "comms", SPMD, "--top", "5")
    assert "by kind across 9 modules:" in out and "top 5 collectives by bytes (S) across 9 modules:" in out
    assert "… and 14 more: --top N, --by-module, --json" in out
    rows = re.findall(r"^(module_\S+) \S+ +\S+: S=", out, re.M)
    assert len(rows) == 5 and len(set(rows)) > 1
    j = _json(capsys, "comms", SPMD)
    s = [r["bytes"] for r in j["collectives"]]
    assert j["n_collectives"] == len(s) == 19 and s == sorted(s, reverse=True)
    k = [g["bytes"] for g in j["by_kind"]]
    assert k == sorted(k, reverse=True) and "module" not in j["by_kind"][0] and j["by_kind"][0]["modules"] == 4
    p = _json(capsys, "comms", SPMD, "--sort", "per-device", "--top", "3")
    pd = [r["bytes_per_device"] for r in p["collectives"]]
    assert len(pd) == 3 and pd == sorted(pd, reverse=True)


def test_comms_by_module(capsys) -> None:
    out = _run(capsys, "comms", SPMD, "--by-module")
    kinds = re.findall(r"^(module_\S+): \S+ x\d+ over", out, re.M)
    assert kinds == sorted(kinds) and len(set(kinds)) == 9  # grouped by module, each module's kinds together
    j = _json(capsys, "comms", SPMD, "--by-module")
    assert all("module" in g for g in j["by_kind"]) and len(j["collectives"]) == 19


@pytest.mark.parametrize("backend, name", [
    ("sm_9.0_gpu", "H100"), ("sm_8.0_gpu", "A100"), ("gfx942_gpu", "MI300X"), ("tpu_v5e", "TPU v5e"),
    ("cpu", None), ("sm_7.5_gpu", None), ("tpu", None), (None, None)])
def test_device_named_by_backend(backend, name) -> None:
    got = V.named_by_backend(backend)
    assert (got[0] if got else None) == name
    preset, how = V.named_by([backend, "cpu"])
    assert preset == name and (backend or "no backend") in how or preset is None


# ------------------------------------------------------------------ the page says the device

def _page_device(path: str) -> tuple[str, list[str]]:
    """The page's device line and its detail headings, read in Chromium."""
    cdp = pytest.importorskip("cdp")
    pytest.importorskip("websocket")
    if cdp.chromium() is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    with cdp.Browser.launch() as b:
        b.open("file://" + os.path.abspath(path))
        b.wait_until("document.querySelector('#timeline, #detail h3') !== null")
        line = b.eval("document.getElementById('device').textContent")
        heads = b.eval("[...document.querySelectorAll('#detail h3')].map(h => h.textContent)")
        assert b.console_errors == []
    return line, heads


def test_report_page_names_the_device(tmp_path, capsys) -> None:
    pytest.importorskip("plotly")
    out = str(tmp_path / "gpu.html")
    assert main(["report", GPU, "-o", out]) == 0
    line, heads = _page_device(out)
    assert line.startswith("device: H100 (named by the dump: backend sm_9.0_gpu: CUDA compute capability 9.0")
    assert "top instructions by estimated time (roofline on H100)" in heads
    out = str(tmp_path / "cpu.html")
    assert main(["report", SPMD, "-o", out]) == 0
    line, heads = _page_device(out)
    assert line.startswith("no roofline: the dump names no device preset (backend cpu)")
    assert not any(h.startswith("top instructions by estimated time") for h in heads)
    assert main(["report", SPMD, "-o", str(tmp_path / "a100.html"), "--device", "A100"]) == 0
    line, heads = _page_device(str(tmp_path / "a100.html"))
    assert line == "device: A100 (given)" and "top instructions by estimated time (roofline on A100)" in heads
    capsys.readouterr()
    assert main(["report", SPMD, "-o", str(tmp_path / "x.html"), "--device", "B200"]) == 2
    assert "unknown device" in capsys.readouterr().err
