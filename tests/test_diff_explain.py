"""``analysis.explain`` / ``hlodump diff``: why the peak changed between two compiles.

Real pairs: the same corpus programs compiled by two jax releases (renames must be matched
pairs, checked against an independent match on source line + shape + size computed here from
the raw tables; the causes sum to the peak delta exactly). Programs that change one thing each
(tests/data/diff, made by tools/corpus/generators/gen_diff.py with jax 0.10.2): the diff names
that cause first.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections import Counter

import pyarrow as pa
import pytest

import hlodump
from hlodump import analysis as A
from hlodump.cli import main

DATA = os.path.join(os.path.dirname(__file__), "data")
CORPUS = os.path.join(DATA, "corpus")
DIFF = os.path.join(DATA, "diff")

RELEASE_PAIRS = [
    ("jax-0.9.2", "jax-0.10.2", "control_flow"),
    ("jax-0.9.2", "jax-0.10.2", "spmd"),
    ("jax-0.4.35", "jax-0.10.2", "control_flow"),
    ("jax-0.8.3", "jax-0.9.2", "spmd"),
    ("jax-0.4.26", "jax-0.10.2", "misc"),
]

_CACHE: dict[str, "hlodump.Dump"] = {}


def _read(path: str) -> "hlodump.Dump":
    if path not in _CACHE:
        _CACHE[path] = hlodump.read_arrow(path, progress=False)
    return _CACHE[path]


def _strip(shape: str) -> str:
    return re.sub(r"\{[^{}]*\}", "", shape or "")


def _raw_values(d: "hlodump.Dump") -> dict[tuple[str, str], tuple]:
    """(module key, instruction) -> (source base name, line, shape without layout, size) of
    every value, from the raw tables: ``assignments`` by file, the after-optimizations HLO
    ``instructions`` of the same module (name -> source), ``files`` for the module."""
    files = d["files"].to_pylist()
    key_of: dict[int, str] = {}
    for m in A.modules(d).to_pylist():
        for f in m["file_ids"]:
            key_of[f] = m["module"]
    src: dict[tuple[str, str], tuple] = {}
    hlo = {f["file_id"] for f in files if f["kind"] == "hlo_module" and f["stage"] == "after_optimizations"}
    ins = d["instructions"]
    for fid, name, sf, sl in zip(ins.column("file_id").to_pylist(), ins.column("name").to_pylist(),
                                 ins.column("source_file").to_pylist(), ins.column("source_line").to_pylist()):
        if fid in hlo:
            src[(key_of.get(fid), name)] = (os.path.basename(sf) if sf else None, sl)
    out: dict[tuple[str, str], tuple] = {}
    asg = d["assignments"]
    for fid, name, shape, size in zip(asg.column("file_id").to_pylist(), asg.column("instruction").to_pylist(),
                                      asg.column("shape").to_pylist(), asg.column("size").to_pylist()):
        k = (key_of.get(fid), name)
        s = src.get(k, (None, None))
        out.setdefault(k, (s[0], s[1], _strip(shape), size))
    return out


@pytest.mark.parametrize("old,new,prog", RELEASE_PAIRS)
def test_release_pairs(old: str, new: str, prog: str) -> None:
    a, b = _read(os.path.join(CORPUS, old, prog)), _read(os.path.join(CORPUS, new, prog))
    ex = A.explain(a, b, top=100000, cost=False)
    assert ex["peak"] == "peak_in_use"
    assert ex["pairs"], "no module paired"
    sa = {s["module"]: s for s in A.summary(a, top=0, cost=False)}
    sb = {s["module"]: s for s in A.summary(b, top=0, cost=False)}
    raw_a, raw_b = _raw_values(a), _raw_values(b)
    n_explained = n_renamed = 0
    for p in ex["pairs"]:
        # the peak is the summary's peak in use (by slice), on both sides
        assert p["peak_a"] == A.peaks(sa[p["module_a"]])["peak_in_use"] == A.peaks(sa[p["module_a"]])["live_by_slice"]
        assert p["peak_b"] == A.peaks(sb[p["module_b"]])["peak_in_use"]
        if p["peak_delta"] is not None:
            n_explained += 1
            assert sum(c["bytes"] for c in p["causes"]) == p["peak_delta"] == p["peak_b"] - p["peak_a"]
            assert sum(p["by_kind"].values()) == p["peak_delta"]
            assert {c["kind"] for c in p["causes"]} <= set(__import__("hlodump.analysis.explain", fromlist=["CAUSE_KINDS"]).CAUSE_KINDS)
            # nothing attributed to unexplained by the residual: the values account for the peak
            assert not any(c["detail"] == "peak bytes no matched or unmatched value accounts for" for c in p["causes"])
            byts = [abs(c["bytes"]) for c in p["causes"]]
            assert byts == sorted(byts, reverse=True)
        # independent match: a removed and an added value with the same source line, shape
        # and size would be a rename reported as add + remove
        assert len(p["removed"]) == p["n_removed"] and len(p["added"]) == p["n_added"]
        rem = Counter(raw_a[(p["module_a"], r["instruction"])] for r in p["removed"])
        add = Counter(raw_b[(p["module_b"], r["instruction"])] for r in p["added"])
        both = set(rem) & set(add)
        assert not both, f"{p['module_a']} -> {p['module_b']}: renamed values shown as removed + added: {both}"
        n_renamed += p["n_renamed"]
    assert n_explained > 0
    assert n_renamed > 0  # the releases renamed op_names / instructions, and those are matched pairs


def test_release_pair_modules() -> None:
    """Modules paired by name across releases; modules of one side only are reported; pairs
    ranked by |peak delta|."""
    a = _read(os.path.join(CORPUS, "jax-0.9.2", "control_flow"))
    b = _read(os.path.join(CORPUS, "jax-0.10.2", "control_flow"))
    ex = A.explain(a, b, cost=False)
    names_a = {m.key: m.name for m in A._module_list(a)}
    names_b = {m.key: m.name for m in A._module_list(b)}
    for p in ex["pairs"]:
        assert names_a[p["module_a"]] == names_b[p["module_b"]]
    only_b = {names_b[k] for k in ex["only_b"]}
    assert {n for n in names_b.values() if n not in names_a.values()} <= only_b
    assert "jit_power_iteration" in only_b
    paired_b = [p["module_b"] for p in ex["pairs"]]
    assert len(set(paired_b)) == len(paired_b)
    assert set(paired_b) | set(ex["only_b"]) == set(names_b)
    assert set(p["module_a"] for p in ex["pairs"]) | set(ex["only_a"]) == set(names_a)
    deltas = [abs(p["peak_delta"]) for p in ex["pairs"] if p["peak_delta"] is not None]
    assert deltas == sorted(deltas, reverse=True)
    # both jit_branches modules are paired, first with first
    br = [p for p in ex["pairs"] if names_a[p["module_a"]] == "jit_branches"]
    assert len(br) == 2
    assert sorted(int(p["module_a"][7:11]) for p in br) == [int(p["module_a"][7:11]) for p in br]


# ----------------------------------------------------------------- one cause at a time

def _case(name: str) -> tuple["hlodump.Dump", "hlodump.Dump"]:
    return _read(os.path.join(DIFF, name, "a")), _read(os.path.join(DIFF, name, "b"))


def _one_pair(name: str, **kw) -> dict:
    a, b = _case(name)
    ex = A.explain(a, b, **kw)
    assert not ex["only_a"] and not ex["only_b"]
    (p,) = ex["pairs"]
    assert p["peak_delta"] is not None and p["peak_delta"] != 0
    assert sum(c["bytes"] for c in p["causes"]) == p["peak_delta"]
    return p


def test_donation() -> None:
    """a donates x (aliased to the output), b does not: b's output gets a buffer of its own."""
    p = _one_pair("donate")
    assert p["matched_by"].startswith("name")  # module ids differ (two compiles of one process)
    top = p["causes"][0]
    assert top["kind"] == "aliasing"
    assert p["peak_delta"] == top["bytes"] == 256 * 256 * 4
    assert "aliased to an output" in top["detail"]
    assert p["by_kind"]["aliasing"] == p["peak_delta"]


def test_donation_reversed() -> None:
    a, b = _case("donate")
    (p,) = A.explain(b, a, cost=False)["pairs"]
    assert p["peak_delta"] == -256 * 256 * 4
    assert p["causes"][0]["kind"] == "aliasing"


def test_checkpoint() -> None:
    """b wraps each layer in jax.checkpoint: the residuals are recomputed, not kept."""
    p = _one_pair("checkpoint")
    assert p["causes"][0]["kind"] == "remat"
    assert abs(p["by_kind"]["remat"]) >= max(abs(v) for k, v in p["by_kind"].items() if k != "remat")


def test_shape() -> None:
    """b's input has twice the rows."""
    p = _one_pair("shape")
    top = p["causes"][0]
    assert top["kind"] == "shape"
    assert "f32[128,256]" in top["detail"] and "f32[256,256]" in top["detail"]
    assert p["by_kind"]["shape"] == p["peak_delta"]
    # no value is on one side only: every buffer was matched, resized
    assert p["n_added"] == p["n_removed"] == 0


def test_flag_without_options_table() -> None:
    """b compiled with xla_disable_hlo_passes=fusion. Without an options table the mechanism
    is named: the fusion decisions changed."""
    a, b = _case("flag")
    if "options" in a and "options" in b:
        pytest.skip("the dumps have an options table: test_flag_options checks the option is named")
    p = _one_pair("flag")
    assert p["causes"][0]["kind"] == "fusion"
    assert not any(c["kind"] == "options" for c in p["causes"])


def _options_from_debug_options(d: "hlodump.Dump", root: str, source: str = "debug_options") -> pa.Table:
    """Test helper only: an ``options`` table (file_id, module, key, value, source) parsed here
    from the dump's ``*.debug_options`` files, in the lead's schema, for dumps read without one."""
    rows: dict[str, list] = {"file_id": [], "module": [], "key": [], "value": [], "source": []}
    mods = A.modules(d).to_pylist()
    for path in glob.glob(os.path.join(root, "*.debug_options")):
        stem = os.path.basename(path)[: -len(".debug_options")]
        mod = next(m for m in mods if m["module"] == stem)
        for line in open(path, encoding="utf-8"):
            if ":" not in line:
                continue
            k, v = line.split(":", 1)
            rows["file_id"].append(mod["file_ids"][0])
            rows["module"].append(stem)
            rows["key"].append(k.strip())
            rows["value"].append(v.strip().strip('"'))
            rows["source"].append(source)
    return pa.table(rows, schema=pa.schema([("file_id", pa.int32()), ("module", pa.string()), ("key", pa.string()),
                                            ("value", pa.string()), ("source", pa.string())]))


def _with_options(name: str, side: str, source: str = "debug_options") -> "hlodump.Dump":
    root = os.path.join(DIFF, name, side)
    d = hlodump.read_arrow(root, progress=False)
    if "options" in d and source == "debug_options":
        return d
    tables = {k: d.views[k] for k in d if k != "options"}
    return hlodump.Dump({**tables, "options": _options_from_debug_options(d, root, source)})


def test_flag_options() -> None:
    """With an options table (the reader's, or one made here from debug_options when the reader
    has none yet), the option that differs is the first cause and named; the dump location
    (xla_dump_to differs too) is not an option of the compile."""
    a, b = _with_options("flag", "a"), _with_options("flag", "b")
    ex = A.explain(a, b, cost=False)
    (p,) = ex["pairs"]
    assert p["causes"][0]["kind"] == "options"
    assert sum(c["bytes"] for c in p["causes"]) == p["peak_delta"]
    named = [c for c in p["causes"] if c["kind"] == "options" and c["bytes"] == 0]
    assert [c["op_name"] for c in named] == ["xla_disable_hlo_passes"]
    assert "fusion" in named[0]["detail"]
    assert [(o["key"], o["explicit"], o["value_b"]) for o in p["options"]] == [("xla_disable_hlo_passes", True, "fusion")]
    moved = [c for c in p["causes"] if c["kind"] == "options" and c["bytes"]]
    assert moved and all(c["detail"].startswith("fusion: ") for c in moved)  # the mechanism stays named
    # the same options on both sides: no options cause
    a2 = _with_options("donate", "a")
    b2 = _with_options("donate", "b")
    (q,) = A.explain(a2, b2, cost=False)["pairs"]
    assert not any(c["kind"] == "options" for c in q["causes"]) and q["causes"][0]["kind"] == "aliasing"


def test_release_defaults_are_named_not_blamed() -> None:
    """An XLA flag that differs only in the whole configuration (compile_options.textproto lists
    every flag with its default, and a new release has new defaults) is named at 0 bytes; the
    bytes stay with the mechanism (fusion)."""
    a, b = _with_options("flag", "a", "compile_options.textproto"), _with_options("flag", "b", "compile_options.textproto")
    (p,) = A.explain(a, b, cost=False)["pairs"]
    assert p["causes"][0]["kind"] == "fusion"
    named = [c for c in p["causes"] if c["kind"] == "options"]
    assert [c["op_name"] for c in named] == ["xla_disable_hlo_passes"] and named[0]["bytes"] == 0
    assert p["by_kind"]["options"] == 0
    assert [o["explicit"] for o in p["options"]] == [False]
    assert "a default of the release?" in named[0]["detail"]
    assert sum(c["bytes"] for c in p["causes"]) == p["peak_delta"]


def test_same_dump_explains_nothing() -> None:
    a, _ = _case("checkpoint")
    (p,) = A.explain(a, a)["pairs"]
    assert p["peak_delta"] == 0 and p["causes"] == [] and p["n_added"] == p["n_removed"] == p["n_renamed"] == 0
    assert p["cost"] == [] and p["collectives"] == []


def test_cost_per_source_line() -> None:
    """FLOPs per matched source line: twice the rows, twice the FLOPs of the matmul line."""
    p = _one_pair("shape", cost=True)
    assert p["cost"]
    top = p["cost"][0]
    assert top["source_file"].endswith("gen_diff.py")
    dot = [c for c in p["cost"] if c["flops_a"] and c["flops_b"] == 2 * c["flops_a"]]
    assert dot, p["cost"]


def test_collectives_delta() -> None:
    a = _read(os.path.join(CORPUS, "jax-0.9.2", "spmd"))
    b = _read(os.path.join(CORPUS, "jax-0.10.2", "spmd"))
    ex = A.explain(a, b)
    assert all(isinstance(p["collectives"], list) for p in ex["pairs"])
    for p in ex["pairs"]:
        for c in p["collectives"]:
            assert c["change"] in ("added", "removed", "resized", "count")
            assert (c["count_a"], c["bytes_a"]) != (c["count_b"], c["bytes_b"])


# ----------------------------------------------------------------- the command line

def test_cli_json_and_text(capsys) -> None:
    a, b = os.path.join(DIFF, "donate", "a"), os.path.join(DIFF, "donate", "b")
    assert main(["diff", a, b, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["peak"] == "peak_in_use"
    (p,) = out["pairs"]
    assert set(p) >= {"peak_delta", "causes", "renamed", "module_a", "module_b"}
    assert p["causes"][0]["kind"] == "aliasing"
    assert set(p["causes"][0]) >= {"kind", "bytes", "source_file", "source_line", "op_name", "detail"}
    assert isinstance(out["changes"], list)
    assert main(["diff", a, b, "--no-changes"]) == 0
    text = capsys.readouterr().out
    first = text.splitlines()[0]
    assert first.startswith("module_0012.jit_scale_add -> module_0014.jit_scale_add: peak in use ")
    assert "+262,144 bytes" in first
    assert "aliasing" in text.splitlines()[2]


def test_cli_directories(capsys) -> None:
    """diff DIR_A DIR_B: every pair, one-side-only modules listed."""
    a = os.path.join(CORPUS, "jax-0.9.2", "control_flow")
    b = os.path.join(CORPUS, "jax-0.10.2", "control_flow")
    assert main(["diff", a, b, "--no-changes", "--no-cost"]) == 0
    text = capsys.readouterr().out
    assert "only in b (" in text and "jit_power_iteration" in text


# ----------------------------------------------------------------- the HTML report

def test_report_compare_has_the_causes(tmp_path) -> None:
    """report A --compare B: the A module's detail carries the explanation of its pair."""
    pytest.importorskip("plotly")
    a, b = os.path.join(DIFF, "donate", "a"), os.path.join(DIFF, "donate", "b")
    out = str(tmp_path / "cmp.html")
    assert main(["report", a, "--compare", b, "-o", out]) == 0
    page = open(out, encoding="utf-8").read()
    idx = json.loads(re.search(r'<script type="application/json" id="index">(.*?)</script>', page, re.S).group(1))
    ra = next(r for r in idx["modules"] if r["side"] == "a")
    det = json.loads(re.search(r'<script type="application/json" id="m-' + re.escape(ra["id"]) + r'">(.*?)</script>',
                               page, re.S).group(1))
    why = det["why"]
    assert why["peak"] == "peak_in_use" and why["peak_delta"] == 256 * 256 * 4
    assert why["columns"] == ["kind", "bytes", "source", "op_name", "detail"]
    assert why["rows"][0][0] == "aliasing" and why["rows"][0][1] == 256 * 256 * 4
    assert "changed: " in page  # the page's script draws the table ("why the peak in use changed: …")


def test_checkpoint_scan_with_policy() -> None:
    """b checkpoints the scanned layer (policy dots_saveable): the stacked residuals of the
    forward scan go. The while loop's stacked output is not itself a rematerialized value, but
    the pair differs by rematerialization alone, so its bytes are remat's."""
    p = _one_pair("checkpoint_scan")
    assert p["peak_delta"] < 0
    assert p["causes"][0]["kind"] == "remat"
    assert p["by_kind"]["remat"] == p["peak_delta"]


def test_donation_of_several_arguments() -> None:
    p = _one_pair("donate_many")
    assert p["by_kind"]["aliasing"] == p["peak_delta"] == 3 * 128 * 256 * 4
    assert [c["kind"] for c in p["causes"]] == ["aliasing"] * 3
    assert sorted(c["op_name"] for c in p["causes"]) == ["m", "p", "v"]


# ----------------------------------------------------------------- pairs at scale

def _copies(dst: str, plan: list[tuple[int, str]]) -> None:
    """A dump directory of many modules: module i is a copy of the one module of ``src``,
    renamed ``module_<i>.<name>_<i>``."""
    os.makedirs(dst)
    for i, src in plan:
        for f in os.listdir(src):
            m = re.match(r"module_\d+\.([^.]+)\.(.*)$", f)
            if m:
                with open(os.path.join(src, f), "rb") as fi, \
                        open(os.path.join(dst, f"module_{i:04d}.{m.group(1)}_{i}.{m.group(2)}"), "wb") as fo:
                    fo.write(fi.read())


def test_many_pairs_set_wise(tmp_path) -> None:
    """400 module pairs, every other one differing by a donation, plus modules on one side
    only: all paired by key, the 200 changed ones ranked first, each explained by aliasing;
    in seconds (one set of queries for all pairs, not one per pair)."""
    import time

    da, db = os.path.join(DIFF, "donate", "a"), os.path.join(DIFF, "donate", "b")
    n = 400
    other_a, other_b = os.path.join(DIFF, "shape", "a"), os.path.join(DIFF, "checkpoint", "a")
    _copies(str(tmp_path / "a"), [(i, da) for i in range(n)] + [(n + i, other_a) for i in range(3)])
    _copies(str(tmp_path / "b"), [(i, db if i % 2 == 0 else da) for i in range(n)]
            + [(n + 10 + i, other_b) for i in range(2)])
    a, b = hlodump.read_arrow(str(tmp_path / "a"), progress=False), hlodump.read_arrow(str(tmp_path / "b"), progress=False)
    t = time.perf_counter()
    ex = A.explain(a, b, cost=False)
    took = time.perf_counter() - t
    assert len(ex["pairs"]) == n and len(ex["only_a"]) == 3 and len(ex["only_b"]) == 2
    assert all(p["matched_by"] == "key" for p in ex["pairs"])
    changed = ex["pairs"][: n // 2]
    assert all(p["peak_delta"] == 256 * 256 * 4 and p["causes"][0]["kind"] == "aliasing" for p in changed)
    assert {int(p["module_a"][7:11]) % 2 for p in changed} == {0}
    assert all(p["peak_delta"] == 0 and p["causes"] == [] for p in ex["pairs"][n // 2:])
    assert took < 60, took  # about 2 s on the 2-core test machine


def test_cli_buffer_tables_on_request(capsys) -> None:
    """The tables of buffers and instruction counts matched by name (mostly renames between
    releases) are left out of the text unless asked for; --json always has their rows."""
    a = os.path.join(CORPUS, "jax-0.9.2", "control_flow")
    b = os.path.join(CORPUS, "jax-0.10.2", "control_flow")
    assert main(["diff", a, b, "--no-cost", "--module", "jit_rnn_loss"]) == 0
    plain = capsys.readouterr().out
    assert main(["diff", a, b, "--no-cost", "--module", "jit_rnn_loss", "--all-changes"]) == 0
    full = capsys.readouterr().out
    assert "instruction changes" not in plain and "instruction changes" in full
    assert plain.splitlines()[0] == full.splitlines()[0]
    assert plain.splitlines()[0].startswith("module_0003.jit_rnn_loss -> module_0002.jit_rnn_loss: peak in use ")


def test_dtype() -> None:
    """b's weights and input are bfloat16: the buffers change element type, and the converts the
    CPU adds around bf16 dots follow from the inputs (the entry parameters' shapes differ), so
    everything is shape."""
    p = _one_pair("dtype")
    assert p["by_kind"]["shape"] == p["peak_delta"]
    assert {c["kind"] for c in p["causes"]} == {"shape"}
    assert any("f32[" in c["detail"] and "bf16[" in c["detail"] for c in p["causes"])


def test_cause_named_when_the_peak_does_not_move() -> None:
    """b checkpoints a small function: the peak is the same, and the pair's difference is still
    named (at 0 bytes)."""
    a, b = _case("checkpoint_tiny")
    (p,) = A.explain(a, b, cost=False)["pairs"]
    assert p["peak_delta"] == 0
    assert [(c["kind"], c["bytes"]) for c in p["causes"]] == [("remat", 0)]
    assert "rematerialized instructions: a 0, b " in p["causes"][0]["detail"]


def test_op_name_primitive() -> None:
    """What the matching keeps of an op_name: the primitive, without jax's wrappers (jax 0.4's
    ``transpose(jvp(while))``), parameters and numbering."""
    import duckdb

    from hlodump.analysis.explain import _prim_sql

    names = ["jit(f)/jit(main)/transpose(jvp(while))", "jit(f)/jvp()/while/body/closed_call/add_1",
             "jit(f)/pjit[name=g jaxpr=...]", "x", None, "jit(f)/transpose(jvp())/dot_general.3"]
    con = duckdb.connect()
    con.register("t", pa.table({"i": list(range(len(names))), "x": pa.array(names, pa.string())}))
    got = [r[0] for r in con.sql(f"select {_prim_sql('x')} from t order by i").fetchall()]
    assert got == ["while", "add", "pjit", "x", None, "dot_general"]
