"""hlodump.analysis on real dumps: numbers the dumps state, checked for both readers."""

from __future__ import annotations

import os

import pytest

from conftest import DATA

from hlodump import analysis as A

SEED0 = os.path.join(DATA, "seeds", "000_d4ec204070c56195.txt")
SEED3 = os.path.join(DATA, "seeds", "003_edd6dfbd09ed8e41.txt")
TRANSFORMER = os.path.join(DATA, "corpus", "jax-0.10.2", "transformer")
TRAIN_STEP = [os.path.join(TRANSFORMER, f"module_0000.jit_train_step.cpu_after_optimizations{s}.txt")
              for s in ("", "-buffer-assignment", "-buffer-assignment-values", "-live-range",
                        "-memory-usage-report")]
OLD = os.path.join(DATA, "corpus", "jax-0.4.26", "control_flow")


def test_logical_bytes() -> None:
    assert A.logical_bytes("f32[8,2048,2048]{1,2,0:T(8,128)}") == 134217728
    assert A.logical_bytes("f32[]{:T(128)}") == 4
    assert A.logical_bytes("(bf16[8]{0}, bf16[8]{0:S(1)}, u32[]{:S(2)})") == 24
    assert A.logical_bytes("(f32[], /*index=1*/s32[3]{0})") == 16
    assert A.logical_bytes("token[]") == 0
    assert A.logical_bytes("s4[10]{0:E(4)}") == 5
    assert A.logical_bytes("pred[8,2048,2048]{1,2,0:T(32,128)(4,1)}") == 33554432


def test_seed0_peak(reader) -> None:
    d = A.load(SEED0, reader)
    pb = A.listed_peak_buffers(d).to_pylist()
    assert len(pb) == 10
    first = pb[0]
    assert first["buffer"] == "fusion.5{1}" and first["bytes"] == 134217728
    assert first["time"] == 12 and first["instruction_at_peak"] == "fusion.2"
    assert first["allocation"] == 12 and first["category"] == "temporary" and first["opcode"] == "fusion"
    assert first["source"].endswith("splash_attention_kernel.py:184")
    assert first["op_name"].endswith("vmap(sd,td->st)/dot_general")
    assert sum(r["bytes"] for r in pb) == 184680476 == pb[-1]["cumulative_bytes"]
    args = {r["buffer"]: r for r in pb if r["category"] == "parameter"}
    assert {r["op_name"] for r in args.values()} == {"q", "k", "v"}
    assert all(r["value_id"] is not None for r in pb)


def test_seed0_summary(reader) -> None:
    d = A.load(SEED0, reader)
    (s,) = A.summary(d, top=3)
    assert s["total_bytes"] == 230870056 == s["total_bytes_stated"]
    assert sum(s["by_category"].values()) == 230870056
    assert s["by_category"]["constant"] == 33554432 and s["by_category"]["parameter"] == 3 * 4194304
    assert sum(sp["allocated_bytes"] for sp in s["memory_spaces"]) == 230870056
    assert [sp["color"] for sp in s["memory_spaces"]] == [0, 1, 2]
    pk = s["peak"]
    assert pk["bytes"] == 184680476 and pk["step"] == 12 and pk["instruction"] == "fusion.2"
    assert sum(pk["by_category"].values()) == 184680476
    assert sum(pk["by_color"].values()) == 184680476
    assert s["top_buffers"][0]["buffer"] == "fusion.5{1}"
    # the timeline (each allocation slice once) agrees with XLA's list at XLA's step — but for
    # copy-start.2, listed with its 24-byte shape and holding a 32-byte slice — and shows a larger
    # moment in HBM (color 0, the peak in use: never a sum across memory spaces) at step 7; the
    # peak check says so with the values
    tl = A.memory_timeline(d).to_pylist()
    assert sum(r["logical_bytes"] for r in tl if r["step"] == 12) == 184680476
    assert sum(r["bytes"] for r in tl if r["step"] == 12) == 184680476 - 24 + 32
    assert s["timeline"]["max_allocated_step"] == 7 and s["timeline"]["max_allocated_bytes"] == 180355136
    pc = s["peak_check"]
    assert pc["same_set"] and pc["max_step"] == 7
    assert any("copy-start.2{} listed with 24 bytes" in e for e in pc["explanations"])
    assert any(e.startswith("the most live bytes by allocation slice are at step 7") for e in pc["explanations"])
    for sp in s["timeline"]["memory_spaces"]:
        assert sp["max_live_bytes"] <= sp["allocated_bytes"]
    # padding: TPU tiling makes the six f32[] thread-local scalars take 512 bytes each
    pad = A.padding(d).to_pylist()
    scal = [r for r in pad if r["category"] == "thread_local"]
    assert len(scal) == 6 and all(r["allocated_bytes"] == 512 and r["logical_bytes"] == 4 for r in scal)
    assert s["padding"]["padding_bytes"] == sum(r["padding_bytes"] for r in pad)


def test_timeline_categories(reader) -> None:
    d = A.load(SEED0, reader)
    tl = A.memory_timeline(d).to_pylist()
    steps = {r["step"] for r in tl}
    assert steps == set(range(16))
    # parameters live 0..15 in color 0: 3 × 4 MiB at every step
    for st in range(16):
        assert sum(r["bytes"] for r in tl if r["step"] == st and r["category"] == "parameter") == 3 * 4194304
    # the constant pred[8,2048,2048] lives 2..11
    const = {r["step"]: r["bytes"] for r in tl if r["category"] == "constant"}
    assert const[2] == const[11] == 33554432 and const[1] == const[12] == 0
    assert {r["instruction"] for r in tl if r["step"] == 7} == {"fusion.5"}
    assert {r["color"] for r in tl} == {0, 1, 2}


def test_breakdown(reader) -> None:
    d = A.load(SEED0, reader)
    by_src = A.breakdown(d, "source").to_pylist()
    assert by_src[0]["key"].endswith("splash_attention_kernel.py:184") and by_src[0]["bytes"] == 134217728 + 65536
    assert sum(r["bytes"] for r in by_src) == 184680476
    by_op = A.breakdown(d, "opcode").to_pylist()
    assert {r["key"] for r in by_op} == {"fusion", "copy-start", "parameter"}
    with pytest.raises(ValueError):
        A.breakdown(d, "nope")


def test_diff_seed0_seed3(reader) -> None:
    a, b = A.load(SEED0, reader), A.load(SEED3, reader)
    rows = A.diff(a, b).to_pylist()
    # two peak rows, each under its name (issue 40): the peak in use (by slice), XLA's listed peak
    assert [r["key"] for r in rows if r["what"] == "peak"] == ["peak_in_use", "xla_listed_peak"]
    in_use = next(r for r in rows if r["key"] == "peak_in_use")
    sa, sb = A.summary(a)[0], A.summary(b)[0]
    assert (in_use["a"], in_use["b"]) == (sa["peaks"]["peak_in_use"], sb["peaks"]["peak_in_use"])
    peak = [r for r in rows if r["what"] == "peak" and r["key"] == "xla_listed_peak"]
    assert len(peak) == 1 and peak[0]["a"] == 184680476 and peak[0]["b"] == 18612288
    assert peak[0]["delta"] == 18612288 - 184680476
    cc = [r for r in rows if r["what"] == "custom_call"]
    assert [(r["change"], r["key"], r["a"], r["b"]) for r in cc] == [("added", "tpu_custom_call", 0, 1)]
    tot = [r for r in rows if r["what"] == "total"]
    assert tot[0]["a"] == 230870056
    assert any(r["what"] == "buffer" and r["change"] == "removed" and r["a"] == 134217728 for r in rows)
    assert any(r["what"] == "fusion_kind" and r["key"] == "kOutput" and r["a"] == 2 and r["b"] == 0 for r in rows)
    # a dump against itself: nothing changed
    assert A.diff(a, A.load(SEED0, reader)).num_rows == 0


def _totals(d, module, key):
    con = d.to_duckdb()
    fids = [f for m in A.modules(d).to_pylist() if m["module"] == module for f in m["file_ids"]]
    rows = con.sql(f"select value from totals where key = '{key}' and file_id in ({','.join(map(str, fids))})").fetchall()
    return rows[0][0]


@pytest.mark.parametrize("source", ["files", "directory"])
def test_jax_0_10_2_module(reader, source) -> None:
    if source == "directory" and reader.__module__.startswith("hlodump.reference"):
        pytest.skip("the reference reader is slow on the per-pass files; files cover it")
    d = A.load(TRAIN_STEP if source == "files" else TRANSFORMER, reader)
    key = "module_0000.jit_train_step"
    assert key in A.modules(d).column("module").to_pylist()
    (s,) = A.summary(d, "jit_train_step", top=5)
    assert s["module"] == key
    stated_total = _totals(d, key, "total_bytes_used")
    assert s["total_bytes"] == stated_total == 813988
    assert sum(s["by_category"].values()) == stated_total
    pk = s["peak"]
    assert pk["step"] == _totals(d, key, "peak_time") == 151
    assert pk["bytes"] == pk["stack_trace_total"] == _totals(d, key, "total") == 660312
    assert sum(pk["by_category"].values()) == 660312
    pb = A.listed_peak_buffers(d, key).to_pylist()
    assert all(r["allocation"] is not None for r in pb)
    with_src = [r for r in pb if r["source"]]
    assert with_src, "source lines resolved from the after-optimizations HLO"
    assert all(r["source"].startswith("/src/models_gen/gen_transformer.py:") for r in with_src)
    assert all(r["source_line"] > 0 for r in with_src)
    # the memory-usage report's totals equal the allocations of each color
    assert sum(sp["allocated_bytes"] for sp in s["memory_spaces"]) == _totals(d, key, "total_bytes")
    tl = A.memory_timeline(d, key).to_pylist()
    # by allocation slice: values that share a slice at step 151 count once
    at = sum(r["bytes"] for r in tl if r["step"] == 151)
    assert at == s["peak_check"]["slice_bytes_at_step"] <= 660312 and s["peak_check"]["same_set"]
    assert max(sum(r["bytes"] for r in tl if r["step"] == st) for st in range(238)) <= s["total_bytes"]
    assert max(r["step"] for r in tl) == _totals(d, key, "max") == 237


def test_module_selection_and_old_format(reader) -> None:
    d = A.load(OLD, reader)
    mods = A.modules(d).to_pylist()
    assert "module_0000.jit_rnn" in [m["module"] for m in mods]
    s = A.summary(d, "module_0000.jit_rnn")
    assert len(s) == 1 and s[0]["module_name"] == "jit_rnn"
    pb = A.listed_peak_buffers(d, 0).to_pylist()
    assert pb and {r["module"] for r in pb} == {"module_0000.jit_rnn"}
    # old form: bytes without cumulative; sorted by bytes here
    assert [r["bytes"] for r in pb] == sorted((r["bytes"] for r in pb), reverse=True)
    # XLA's listed peak is the sum as printed (by name: each tuple row at the whole tuple's size);
    # bytes are the values' own (test_peak_by_name.py)
    assert sum(r["listed_bytes"] for r in pb) == s[0]["peak"]["bytes"]
    assert all(r["listed_by_name"] for r in pb)
    with pytest.raises(KeyError):
        A.summary(d, "no_such_module")


def test_no_live_ranges(reader, tmp_path) -> None:
    # only the allocations file: totals and allocations, and a note that explains what is missing
    src = TRAIN_STEP[1]
    d = A.load(src, reader)
    (s,) = A.summary(d)
    assert s["allocations"] > 0 and s["total_bytes"] == 813988
    assert s["peak"] is None and s["timeline"] is None
    assert any("no live ranges" in n for n in s["notes"])
    assert A.listed_peak_buffers(d).num_rows == 0
    assert A.memory_timeline(d).num_rows == 0
