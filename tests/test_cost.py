"""Cost analysis, roofline and collectives against XLA's and jax's own figures.

* ``cost_analysis`` against jax's ``Compiled.cost_analysis()``: the programs of
  ``tools/corpus/generators/gen_cost.py`` recorded under four jax releases (tests/data/cost/jax-V:
  the after-optimizations HLO text and jax's figures), compiled live with the installed jax and
  with two more releases in the cached venvs of test_memory_analysis.
* Per instruction: every entry instruction of the recorded jax 0.10.2 programs cut out into a
  module of its own (its operands become parameters) and analysed by jaxlib's
  ``hlo_module_cost_analysis``; plus hand-written modules of many opcodes (tests/data/cost/single).
* Collectives: the shard_map programs over 8 host devices (psum, all_gather, ppermute,
  all_to_all, psum_scatter of known sizes) and a GPU-style module with async pairs and iota groups.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import DATA

import hlodump
from hlodump import analysis as A
from hlodump.analysis import comms as K
from hlodump.analysis import devices as V
from hlodump.analysis import roofline_model as R

COST = os.path.join(DATA, "cost")
GEN = os.path.join(os.path.dirname(__file__), os.pardir, "tools", "corpus", "generators", "gen_cost.py")
VERSIONS = sorted(d for d in os.listdir(COST) if d.startswith("jax-"))
SINGLE = sorted(glob.glob(os.path.join(COST, "single", "*.hlo")))
GPU = os.path.join(COST, "gpu")


def _differences(ours: dict, theirs: dict) -> dict:
    keys = set(ours) | set(theirs)
    return {k: (ours.get(k, 0.0), theirs.get(k, 0.0)) for k in sorted(keys) if ours.get(k, 0.0) != theirs.get(k, 0.0)}


def _newer(directory: str) -> bool:
    """jax >= 0.11 (XLA 2026): the release directory's name says so."""
    m = re.search(r"jax-(\d+)\.(\d+)", directory)
    return m is not None and (int(m[1]), int(m[2])) >= (0, 11)


def compare(directory: str, reader=None) -> tuple[int, list[str]]:
    """(programs equal to jax in every key, problems) of one generator output directory."""
    recs = [json.loads(line) for line in open(os.path.join(directory, "cost_analysis.jsonl"), encoding="utf-8")]
    if reader is None:
        d = hlodump.read_arrow(directory, tables=["instructions", "computations", "modules"], on_error="collect")
    else:
        d = reader(directory)
    got: dict[str, list[dict]] = {}
    for m in A.cost_analysis(d):
        got.setdefault(m["module_name"], []).append(m)
    n, problems = 0, []
    for r in recs:
        if "cost_analysis" not in r:
            problems.append(f"{r['program']}: jax gave no cost_analysis ({r.get('compile_error') or r.get('cost_analysis_error')})")
            continue
        mods = got.get(r["module_name"], [])
        if len(mods) != 1:
            problems.append(f"{r['program']}: {len(mods)} modules named {r['module_name']}")
            continue
        diff = _differences(mods[0]["cost_analysis"] or {}, r["cost_analysis"])
        if diff:
            problems.append(f"{r['program']}: ours vs jax {diff}")
        else:
            n += 1
    return n, problems


def test_enough_programs_and_releases() -> None:
    assert len(VERSIONS) >= 3
    for v in VERSIONS:
        recs = [json.loads(x) for x in open(os.path.join(COST, v, "cost_analysis.jsonl"), encoding="utf-8")]
        assert sum(1 for r in recs if r["program"].startswith("cost_")) >= 15, v
        # what the programs cover
        assert {"cost_conv", "cost_scatter", "cost_sort", "cost_fft", "cost_while", "cost_cond",
                "cost_custom_call", "cost_bf16", "cost_int", "cost_spmd_mlp"} <= {r["program"] for r in recs}


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_equal_jax(version: str) -> None:
    n, problems = compare(os.path.join(COST, version))
    assert not problems, "\n".join(problems)
    assert n >= 25


def test_both_parsers_same_figures(reader) -> None:
    """The Rust reader and the pure-Python reference parser give the same tables: same figures."""
    n, problems = compare(os.path.join(COST, "jax-0.10.2"), reader)
    assert not problems and n >= 25


def test_custom_call_is_unknown_as_in_jax() -> None:
    d = hlodump.read_arrow(os.path.join(COST, "jax-0.10.2"), tables=["instructions", "computations"])
    t = A.costs(d, "cost_custom_call")
    cc = [r for r in t.to_pylist() if r["opcode"] == "custom-call"]
    assert cc and all(r["flops"] == -1 and r["bytes_accessed"] == -1 and "unknown" in r["note"] for r in cc)
    (m,) = A.cost_analysis(d, "cost_custom_call")
    assert m["cost_analysis"]["optimal_seconds"] == -float(len(cc))


def test_unknown_opcode_is_unknown_not_zero(tmp_path) -> None:
    """An opcode XLA does not know (a newer XLA's; the parser notes it, issue 50) has no cost
    rule: its row gets no figure and a note, and the module's figures say they leave it out —
    never a silent 0 FLOPs."""
    p = tmp_path / "module_0001.m.cpu_after_optimizations.txt"
    p.write_text("HloModule m, is_scheduled=true\n\nENTRY %e (p: f32[3]) -> f32[3] {\n  %p = f32[3]{0} parameter(0)\n"
                 "  %a = f32[3]{0} negate(%p)\n  ROOT %n = f32[3]{0} frobnicate(%a)\n}\n")
    d = hlodump.read_arrow(str(p))
    assert [n["kind"] for n in d.notes.to_pylist()] == ["unknown_opcode"]
    rows = {r["instruction"]: r for r in A.costs(d).to_pylist()}
    assert rows["a"]["flops"] == 3.0
    assert rows["n"]["flops"] is None and rows["n"]["bytes_accessed"] is None
    assert "unknown opcode 'frobnicate'" in rows["n"]["note"] and "left out of the totals" in rows["n"]["note"]
    ca = A.cost_analysis(d)[0]
    assert "1 instruction left out of these figures" in ca["note"] and "unknown opcode" in ca["note"]


def test_in_total_rows_add_up() -> None:
    d = hlodump.read_arrow(os.path.join(COST, "jax-0.10.2"), tables=["instructions", "computations"])
    t = A.costs(d)
    tot = {m["module"]: m["cost_analysis"] for m in A.cost_analysis(d)}
    sums: dict[str, float] = {}
    for r in t.to_pylist():
        if r["in_total"]:
            sums[r["module"]] = sums.get(r["module"], 0.0) + r["flops"]
    for mod, ca in tot.items():
        assert sums[mod] == pytest.approx(ca.get("flops", 0.0), rel=1e-6), mod
    w = [r for r in t.to_pylist() if r["opcode"] == "while" and r["in_total"]]
    assert w and all("once" in r["note"] for r in w)
    assert {r["module_name"]: r["trip_count"] for r in w}["jit_cost_while"] == 17  # fori_loop(0, 17, …)
    assert set(A.cost.COST_COLUMNS) == set(t.column_names)


# ------------------------------------------------------------------ XLA per instruction (jaxlib)

def _xla(text: str) -> dict:
    jax = pytest.importorskip("jax")
    _hlo = pytest.importorskip("jaxlib._hlo")
    from jax._src.lib import xla_client as xc

    fn = getattr(xc._xla, "hlo_module_cost_analysis", None)
    if fn is None:
        pytest.skip("this jaxlib has no hlo_module_cost_analysis")
    return {k: float(v) for k, v in fn(jax.devices("cpu")[0].client, _hlo.hlo_module_from_text(text)).items()}


@pytest.mark.parametrize("path", SINGLE, ids=lambda p: os.path.basename(p))
def test_single_modules_equal_xla(path: str) -> None:
    text = open(path, encoding="utf-8").read()
    theirs = _xla(text)
    d = hlodump.read_arrow({os.path.basename(path)[:-4] + ".txt": text.encode()})
    (m,) = A.cost_analysis(d)
    assert not _differences(m["cost_analysis"], theirs)


_ENTRY = re.compile(r"^ENTRY .*?^}\s*$", re.M | re.S)


def _one_instruction_module(text: str, row: dict, shapes: dict[str, str]) -> str:
    """The module with its entry replaced by one instruction whose operands are parameters."""
    params, names = [], []
    for i, op in enumerate(row["operands"]):
        params.append(f"  p.{i} = {shapes[op]} parameter({i})")
        names.append(f"p.{i}")
    attrs = (", " + row["attributes"]) if row["attributes"] else ""
    body = "\n".join(params + [f"  ROOT {row['name']} = {row['shape']} {row['opcode']}({', '.join(names)}){attrs}"])
    text = "HloModule cut\n" + text.split("\n", 1)[1]  # the header's entry layout would not match
    return _ENTRY.sub(lambda _: "ENTRY %cut {\n" + body + "\n}\n", text)


def test_every_instruction_equal_xla() -> None:
    """Every entry instruction of the jax 0.10.2 programs, alone in a module, against XLA."""
    pytest.importorskip("jaxlib._hlo")
    src = os.path.join(COST, "jax-0.10.2")
    d = hlodump.read_arrow(src, tables=["instructions", "computations", "files"])
    costs = {(r["module"], r["instruction"]): r for r in A.costs(d).to_pylist() if r["in_total"]}
    inst = d.instructions.to_pylist()
    files = {f["file_id"]: f["path"] for f in d.files.to_pylist()}
    comps = {(c["file_id"], c["computation_id"]): c["is_entry"] for c in d.computations.to_pylist()}
    by_file: dict[int, list[dict]] = {}
    for r in inst:
        by_file.setdefault(r["file_id"], []).append(r)
    checked, problems = 0, []
    mods = {m.hlo_file_ids[0]: m.key for m in A._module_list(d) if m.hlo_file_ids}
    for fid, rows in by_file.items():
        text = open(os.path.join(src, files[fid]), encoding="utf-8").read()
        for r in rows:
            if not comps[(r["file_id"], r["computation_id"])] or r["opcode"] in ("parameter", "constant"):
                continue
            shapes = {x["name"]: x["shape"] for x in rows if x["computation_id"] == r["computation_id"]}
            theirs = _xla(_one_instruction_module(text, r, shapes))
            ours = costs[(mods[fid], r["name"])]
            for key, col in (("flops", "flops"), ("transcendentals", "transcendentals"),
                             ("bytes accessed", "bytes_accessed")):
                if theirs.get(key, 0.0) != ours[col]:
                    problems.append(f"{files[fid]} {r['name']} ({r['opcode']}) {key}: ours {ours[col]} xla {theirs.get(key, 0.0)}")
            checked += 1
    assert not problems, "\n".join(problems[:30])
    print(f"{checked} instructions equal to XLA")
    assert checked >= 150


def test_tuple_results_conventions() -> None:
    text = open(glob.glob(os.path.join(GPU, "*.txt"))[0], encoding="utf-8").read()
    d = hlodump.read_arrow(GPU)
    (new,) = A.cost_analysis(d, tuple_results="leaves")
    assert not _differences(new["cost_analysis"], _xla(text))  # the installed XLA counts leaves
    (old,) = A.cost_analysis(d)  # source_file= metadata: the printer of jax < 0.8 → index tables
    assert old["cost_analysis"]["bytes accessed"] < new["cost_analysis"]["bytes accessed"]
    with pytest.raises(ValueError):
        A.cost_analysis(d, tuple_results="both")


CORPUS = os.path.join(DATA, "corpus")
# the installed jaxlib (0.10.2) cannot parse the compact tuple operands of jax >= 0.11: those
# releases are checked against their own recorded cost_analysis() (test_recorded_equal_jax)
CORPUS_VERSIONS = sorted(v for v in os.listdir(CORPUS) if v.startswith("jax-") and not _newer(v)) \
    if os.path.isdir(CORPUS) else []


@pytest.mark.parametrize("version", CORPUS_VERSIONS)
def test_corpus_modules_equal_xla(version: str) -> None:
    """Every after-optimizations module of the corpus (jax 0.4.13 … 0.10.2: transformer, SPMD,
    control flow …) against the installed jaxlib's analysis of the same text. That XLA counts
    tuple results by their leaves, whatever release printed the text: tuple_results="leaves"."""
    pytest.importorskip("jaxlib._hlo")
    root = os.path.join(CORPUS, version)
    d = hlodump.read_arrow(root, tables=["instructions", "computations", "files", "modules"], on_error="collect")
    files = {f["file_id"]: f["path"] for f in d.files.to_pylist()}
    mods = {m.key: m for m in A._module_list(d)}
    n, problems = 0, []
    for r in A.cost_analysis(d, tuple_results="leaves"):
        m = mods[r["module"]]
        if not m.hlo_file_ids or r["cost_analysis"] is None:
            continue
        theirs = _xla(open(os.path.join(root, files[max(m.hlo_file_ids)]), encoding="utf-8").read())
        diff = _differences(r["cost_analysis"], theirs)
        if diff:
            problems.append(f"{r['module']}: {diff}")
        n += 1
    assert not problems, "\n".join(problems)
    assert n >= 10


# ------------------------------------------------------------------ live compiles

def _run_generator(python: str, out: str) -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu", OUT=out, XLA_FLAGS="--xla_force_host_platform_device_count=8")
    env.pop("PYTHONPATH", None)
    p = subprocess.run([python, GEN], env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_live_installed_jax(tmp_path) -> None:
    pytest.importorskip("hlodump._core")
    try:
        import jax  # noqa: F401
    except ImportError:
        pytest.fail("jax is not installed: pip install -e '.[test,xla]' installs it")
    _run_generator(sys.executable, str(tmp_path))
    n, problems = compare(str(tmp_path))
    assert not problems, "\n".join(problems)
    assert n >= 25
    _check_collectives(str(tmp_path))


def _live_releases() -> list[str]:
    from test_memory_analysis import LIVE_RELEASES

    return sorted(LIVE_RELEASES)


@pytest.mark.parametrize("version", _live_releases())
def test_live_other_release(version: str, tmp_path) -> None:
    from test_memory_analysis import _venv_python

    pytest.importorskip("hlodump._core")
    _run_generator(_venv_python(version), str(tmp_path))
    n, problems = compare(str(tmp_path))
    assert not problems, "\n".join(problems)
    assert n >= 25
    _check_collectives(str(tmp_path))


# ------------------------------------------------------------------ collectives

def _check_collectives(directory: str) -> int:
    recs = [json.loads(x) for x in open(os.path.join(directory, "cost_analysis.jsonl"), encoding="utf-8")]
    d = hlodump.read_arrow(directory, tables=["instructions", "computations", "modules"])
    t = A.collectives(d).to_pylist()
    n = 0
    for r in recs:
        if "collectives" not in r:
            continue
        rows = [x for x in t if x["module_name"] == r["module_name"]]
        want = r["collectives"]
        assert len(rows) == len(want), (r["program"], rows)
        for got, exp in zip(rows, want):
            assert (got["kind"], got["group_size"], got["bytes"]) == (exp["kind"], exp["group_size"], exp["bytes"]), r["program"]
            n += 1
    assert n >= 5
    return n


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_collectives(version: str) -> None:
    assert _check_collectives(os.path.join(COST, version)) == 5


def test_collective_bytes_per_device() -> None:
    d = hlodump.read_arrow(os.path.join(COST, "jax-0.10.2"))
    rows = {r["kind"]: r for r in A.collectives(d).to_pylist() if r["module_name"].startswith("jit_comm_")}
    assert rows["all-reduce"]["bytes_per_device"] == 2 * 7 / 8 * 2048
    assert rows["all-gather"]["bytes_per_device"] == 7 / 8 * 16384
    assert rows["reduce-scatter"]["bytes_per_device"] == 7 / 8 * 2048
    assert rows["all-to-all"]["bytes_per_device"] == 7 / 8 * 2048
    assert rows["collective-permute"]["bytes_per_device"] == 2048
    assert rows["collective-permute"]["source_target_pairs"] == [[i, (i + 1) % 8] for i in range(8)]
    assert {r["formula"] for r in rows.values()} == {"2(n-1)/n*S", "(n-1)/n*S", "S"}


_COLLECTIVE_OP = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+) = .*? (all-reduce|all-gather|reduce-scatter|all-to-all|"
                            r"ragged-all-to-all|collective-permute|collective-broadcast)(-start)?\(", re.M)


def test_gpu_every_collective_once() -> None:
    path = glob.glob(os.path.join(GPU, "*.txt"))[0]
    text = open(path, encoding="utf-8").read()
    expected = {m.group(1) for m in _COLLECTIVE_OP.finditer(text)}
    t = A.collectives(hlodump.read_arrow(GPU)).to_pylist()
    assert sorted(r["instruction"] for r in t) == sorted(expected)
    by = {r["instruction"]: r for r in t}
    ag = by["all-gather-start"]
    assert (ag["done_instruction"], ag["group_size"], ag["bytes"], ag["steps_between"]) == ("all-gather-done", 8, 8388608, 3)
    assert ag["overlapped_instructions"] == ["fusion.1"] and ag["exposed"] is False
    assert by["all-reduce.2"]["exposed"] is True
    ar = by["all-reduce-start"]
    assert ar["replica_groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]] and ar["bytes"] == 512 * 256 * 4
    assert by["all-reduce.2"]["replica_groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert by["all-reduce.2"]["bytes"] == (64 + 8 * 128) * 4  # tuple operands summed
    rs = by["reduce-scatter.4"]  # wrapped in async-start/async-done
    assert (rs["start_instruction"], rs["done_instruction"], rs["kind"], rs["bytes"]) == (
        "reduce-scatter-start", "reduce-scatter-done", "reduce-scatter", 8 * 128 * 4)
    assert by["all-to-all.8"]["replica_groups"] == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert by["collective-permute-start"]["done_instruction"] == "collective-permute-done"
    assert all(r["source_line"] for r in t)


def test_single_collectives_module() -> None:
    path = os.path.join(COST, "single", "collectives_ops.hlo")
    text = open(path, encoding="utf-8").read()
    t = A.collectives(hlodump.read_arrow({"c.txt": text.encode()})).to_pylist()
    assert sorted(r["instruction"] for r in t) == sorted(m.group(1) for m in _COLLECTIVE_OP.finditer(text))
    by = {r["instruction"]: r for r in t}
    assert by["art"]["replica_groups"] == [[0, 2], [1, 3]] and by["art"]["num_groups"] == 2
    assert by["ag"]["bytes"] == 128 * 8 * 2 and by["rs"]["bytes"] == 32 * 8 * 2
    assert by["cps"]["group_size"] == 2


def test_replica_group_forms() -> None:
    import doctest

    assert doctest.testmod(K).failed == 0
    assert K.replica_groups("[4,2]<=[8]") == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert K.replica_groups("[2,4]<=[2,2,2]T(2,1,0)") == [[0, 4, 2, 6], [1, 5, 3, 7]]
    assert K.replica_groups("[8]<=[8]") == [list(range(8))]
    assert K.replica_groups(None) is None


# ------------------------------------------------------------------ roofline

def test_device_presets_cite_sources() -> None:
    assert set(V.DEVICES) == {"TPU v4", "TPU v5e", "TPU v5p", "TPU v6e", "H100", "H200", "A100", "MI300X"}
    for dev in V.DEVICES.values():
        assert dev.source.startswith("https://") and dev.memory_bandwidth > 0 and dev.matrix.get("bf16")
    assert V.device("v5e").name == "TPU v5e" and V.device("h100") is V.DEVICES["H100"]
    with pytest.raises(ValueError):
        V.device("B200")
    with pytest.raises(ValueError):
        V.device(None, peak_flops=1e12)


def test_roofline_figures() -> None:
    d = hlodump.read_arrow(os.path.join(COST, "jax-0.10.2"), tables=["instructions", "computations"])
    t = R.roofline(d, None, "cost_matmul", peak_flops=1e12, memory_bandwidth=1e9)
    (dot,) = [r for r in t.to_pylist() if r["flops"]]
    assert dot["flops"] == 2 * 64 * 128 * 32
    assert dot["intensity"] == pytest.approx(dot["flops"] / dot["bytes_accessed"])
    assert dot["seconds"] == pytest.approx(max(dot["flops"] / 1e12, dot["bytes_accessed"] / 1e9))
    assert dot["bound"] == "memory" and dot["peak_used"] == "given"
    h = R.roofline(d, "H100", "cost_bf16").to_pylist()
    mm = [r for r in h if r["is_matrix"]]
    # XLA:CPU computes this bf16 dot in f32 (the fused dot reads f32): tf32 tensor-core peak
    assert mm and mm[0]["dtype"] == "f32" and mm[0]["peak_flops"] == 494.5e12 and mm[0]["peak_used"] == "matrix tf32"
    g = R.roofline(hlodump.read_arrow(GPU), "H100").to_pylist()
    # the fixture's fused dot converts its bf16 operand to f32 first: an f32 (tf32) dot
    assert {r["dtype"] for r in g if r["is_matrix"]} == {"f32"} and {r["peak_flops"] for r in g if r["is_matrix"]} == {494.5e12}
    assert R.roofline(hlodump.read_arrow(GPU), "TPU v5e").column("peak_flops").to_pylist()[0] == 197e12
    cc = [r for r in R.roofline(d, "A100", "cost_custom_call").to_pylist() if r["opcode"] == "custom-call"]
    assert cc and all(r["seconds"] is None and "unknown" in r["note"] for r in cc)
    b = R.cost_breakdown(d, "opcode", "H100", "cost_custom_call").to_pylist()
    assert any(r["opcode"] == "custom-call" and r["unknown"] == 2 for r in b)
    with pytest.raises(ValueError):
        R.cost_breakdown(d, "line")


# ------------------------------------------------------------------ command line

def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), os.pardir, "python"))
    return subprocess.run([sys.executable, "-m", "hlodump.cli", *argv], capture_output=True, text=True, env=env)


def test_cli_cost_and_comms(tmp_path) -> None:
    p = _cli("cost", GPU, "--device", "H100", "--top", "3")
    assert p.returncode == 0, p.stderr
    assert "flops 538.05 MFLOP" in p.stdout and "bytes accessed 16.04MiB" in p.stdout and "all-gather-done" in p.stdout and "/app/train.py:80" in p.stdout
    p = _cli("cost", os.path.join(COST, "jax-0.10.2"), "--module", "cost_matmul", "--json")
    j = json.loads(p.stdout)
    assert j["modules"][0]["cost_analysis"]["flops"] == 524288.0
    out = tmp_path / "roof.csv"
    assert _cli("cost", GPU, "--format", "csv", "-o", str(out)).returncode == 0
    assert out.read_text().splitlines()[0].startswith("module,module_name,computation,instruction")
    p = _cli("comms", GPU)
    assert p.returncode == 0 and "all-gather x1 over groups of 8" in p.stdout and "reduce-scatter-start" in p.stdout
    j = json.loads(_cli("comms", GPU, "--json").stdout)
    assert len(j["collectives"]) == 6 and j["by_kind"]
    assert _cli("comms", GPU, "--format", "csv").stdout.count("\n") == 7
    bad = _cli("cost", GPU, "--device", "B200")
    assert bad.returncode == 2 and "unknown device" in bad.stderr and "Traceback" not in bad.stderr
    bad = _cli("comms", GPU, "--module", "nope")
    assert bad.returncode == 2 and "no module matches" in bad.stderr


def test_malformed_text_gives_notes_not_tracebacks() -> None:
    text = b"""HloModule bad

loop {
  p = f32[4,4]{1,0} parameter(0)
  ROOT c = f32[4,4]{1,0} call(p), to_apply=loop
}

ENTRY main {
  x = f32[4,4]{1,0} parameter(0)
  d = f32[4,4]{1,0} dot(x), lhs_contracting_dims={7}
  r = f32[4,4]{1,0} reduce-window(x), window={size=axb}
  cl = f32[4,4]{1,0} call(d), to_apply=loop
  q = f32[?,4]{1,0} add(cl, missing)
  ROOT w = f32[4,4]{1,0} all-reduce(q), replica_groups=[x]<=[y]
}
"""
    d = hlodump.read_arrow({"bad.txt": text}, on_error="collect")
    (m,) = A.cost_analysis(d)  # a call cycle, unknown operands, bad attributes: no exception
    assert m["cost_analysis"]["flops"] > 0
    rows = {r["instruction"]: r for r in A.costs(d).to_pylist()}
    assert "could not apply" in rows["r"]["note"]
    assert A.collectives(d).num_rows == 1 and A.roofline(d, "H100").num_rows >= 5


# the samples of jax >= 0.11 in tests/data/corpus, with jax's own figures beside them
ORACLE_CORPORA = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(CORPUS, "jax-*", "jax_analysis.json")))


@pytest.mark.parametrize("root", ORACLE_CORPORA, ids=os.path.basename)
def test_corpus_cost_equal_jax_to_the_byte(root: str) -> None:
    """Every sampled module of jax 0.11 / 0.12 (XLA 2026): flops, transcendentals and bytes
    accessed equal to jax's ``cost_analysis()``. The transformer's training step has no sign of
    its XLA in its HLO text (no compact tuple operand, no compare); its compile options say it
    (``xla_dump_compact_gte``), and its output tuple's index table is 4 bytes an element
    (176 bytes more, before)."""
    doc = json.load(open(os.path.join(root, "jax_analysis.json"), encoding="utf-8"))
    checked, problems = 0, []
    for program in sorted(p for p in os.listdir(root) if os.path.isdir(os.path.join(root, p))):
        d = hlodump.read_arrow(os.path.join(root, program), progress=False)
        got = {m["module"]: m["cost_analysis"] or {} for m in A.cost_analysis(d)}
        for key, rec in doc["modules"].items():
            if key.split("/", 1)[0] != program:
                continue
            ours, theirs = got.get(key.split("/", 1)[1], {}), rec["cost_analysis"]
            for k in ("flops", "transcendentals", "bytes accessed"):
                if ours.get(k, 0.0) != theirs.get(k, 0.0):
                    problems.append(f"{key} {k}: ours {ours.get(k)} jax {theirs.get(k)}")
            checked += 1
    assert not problems, "\n".join(problems)
    assert checked == len(doc["modules"]) >= 20


def test_xla_2026_known_by_its_compile_options() -> None:
    """A module whose HLO text shows nothing of its XLA (no compact tuple operand, no compare's
    ``order=``:
    jax 0.12's transformer training step, alone in its dump) is known as XLA 2026 by the
    compile options beside it; its output tuple's index table is 4 bytes an element, and every
    figure equals jax's (176 bytes accessed too many when it was taken for an older XLA)."""
    root = os.path.join(COST, "xla2026_train_step")
    want = json.load(open(os.path.join(root, "jax_cost.json"), encoding="utf-8"))
    text = open(glob.glob(os.path.join(root, "*.txt"))[0], encoding="utf-8").read()
    assert not re.search(r"%[\w.\-]+#\d", text) and "order=" not in text  # no sign in the text
    d = hlodump.read_arrow(root, progress=False)
    (m,) = A.cost_analysis(d)
    ours = m["cost_analysis"]
    for k, v in want["cost_analysis"].items():
        assert ours.get(k) == v, (k, ours.get(k), v)
