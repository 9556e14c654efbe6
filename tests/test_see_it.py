"""Issue 51 ("See it"), the parts of its Why outside the report page: figures that disagree,
messages, docs and API papercuts, and ``analysis.advice`` ("what to do about it") on programs
that have each cause (tests/data/advice: made by gen_advice.py with jax 0.10.2 on CPU, jax's own
``memory_analysis()`` of every compile in memory_analysis.json as the oracle)."""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

from conftest import DATA
from conftest import ROOT as _ROOT

ROOT = Path(_ROOT)

hlodump = pytest.importorskip("hlodump")
pytest.importorskip("hlodump._core")
import hlodump.reference  # noqa: E402
from hlodump import analysis as A  # noqa: E402
from hlodump import units as U  # noqa: E402

ADVICE = os.path.join(DATA, "advice")
ORACLE = json.loads(Path(ADVICE, "memory_analysis.json").read_text())["compiles"]


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "hlodump.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)


# --------------------------------------------------------------------------------- figures that disagree

RNN_LOSS = os.path.join(DATA, "corpus", "jax-0.4.35", "control_flow")


def test_listed_peak_by_category_adds_up_to_the_headline() -> None:
    """Old XLA lists a tuple by its instruction's whole size; the categories summed each value's
    own bytes (10,956 under a headline of 7,364): now both are the list's bytes."""
    (s,) = A.summary(hlodump.read_arrow(RNN_LOSS), "jit_rnn_loss", top=0, cost=False)
    pk = s["peak"]
    assert pk["bytes"] == 7364
    assert sum(pk["by_category"].values()) == pk["bytes"]
    assert sum(pk["by_color"].values()) == pk["bytes"]
    listed = A.listed_peak_buffers(hlodump.read_arrow(RNN_LOSS), "jit_rnn_loss")
    assert sum(listed.column("listed_bytes").to_pylist()) == pk["bytes"]  # the dump's own list
    out = run("summary", RNN_LOSS, "--module", "jit_rnn_loss").stdout
    lines = out.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(f"{U.XLA_LISTED_PEAK} by category"))
    hl = next(ln for ln in lines[i:] if ln.startswith("┃"))
    rl = next(ln for ln in lines[i:] if ln.startswith("│"))
    head = [c.strip() for c in hl.strip("┃").split("┃")]
    row = [c.strip() for c in rl.strip("│").split("│")]
    assert head[0] == "total" and row[0] == U.format_bytes(pk["bytes"])
    assert dict(zip(head[1:], row[1:])) == {k: U.format_bytes(v) for k, v in pk["by_category"].items()}


def test_diff_names_the_value_that_disappeared() -> None:
    """Without metadata, values match by shape alone: the removed one is the name that is gone
    (negate_exponential_fusion), not one both sides have (ynn_fusion.1)."""
    base = os.path.join(DATA, "diff", "no_metadata")
    a, b = (hlodump.read_arrow(os.path.join(base, s)) for s in "ab")
    names = lambda d: set(d["values"].column("instruction").to_pylist())  # noqa: E731
    gone = names(a) - names(b)
    assert gone == {"negate_exponential_fusion"}
    (p,) = A.explain(a, b, cost=False)["pairs"]
    assert [r["instruction"] for r in p["removed"]] == ["negate_exponential_fusion"]
    assert all(r["instruction_a"] == r["instruction_b"] for r in p["renamed"])


def _renamed_dump(tmp_path: Path, new_name: str) -> str:
    out = tmp_path / new_name.replace("/", "_")
    out.mkdir()
    for f in os.listdir(os.path.join(ADVICE, "donate_no")):
        shutil.copy(os.path.join(ADVICE, "donate_no", f), out / f.replace("jit_step", new_name))
    return str(out)


@pytest.mark.parametrize("name, framework, word", [
    ("a_inference_train_step_1234__XlaMustCompile_true", "tensorflow", "TensorFlow"),
    ("SyncTensorsGraph_52", "pytorch/xla", "PyTorch/XLA"),
    ("jit_step", "jax", None),
])
def test_peak_memory_is_named_by_the_framework(tmp_path: Path, name: str, framework: str, word: str | None) -> None:
    d = hlodump.read_arrow(_renamed_dump(tmp_path, name))
    (s,) = A.summary(d, top=0, cost=False)
    assert s["framework"] == framework
    story = "\n".join(A.peak_story(s))
    assert ORACLE["donate_no"]["peak_memory_in_bytes"] == A.peaks(s)["jax_peak_memory_in_bytes"]
    if word is None:
        assert f"{U.JAX_PEAK} (memory_analysis()): 3,145,752 bytes" in story
    else:
        assert U.JAX_PEAK not in story and "jax's" not in story.split("peak_memory_in_bytes")[0].splitlines()[-1]
        assert f"{U.XLA_PEAK_MEMORY} (CompiledMemoryStats; a {word} module): 3,145,752 bytes" in story
        assert A.peaks(s)["jax_peak_memory_in_bytes_name"].startswith(U.XLA_PEAK_MEMORY)
    assert A.framework("SyncTensorsGraph.52") == "pytorch/xla" and A.framework("main") is None


def test_collective_permute_is_counted_in_pairs() -> None:
    spmd = os.path.join(DATA, "corpus", "jax-0.10.2", "spmd")
    t = A.collectives(hlodump.read_arrow(spmd))
    perm = [r for r in t.to_pylist() if r["kind"].startswith("collective-permute")]
    assert perm and all(len(r["source_target_pairs"]) == 8 for r in perm)
    out = run("comms", spmd).stdout
    line = next(ln for ln in out.splitlines() if "collective-permute x" in ln)
    assert re.match(rf"  collective-permute x{len(perm)} over 8 source→target pairs among 8 devices: ", line), line
    assert "groups of" not in line


# --------------------------------------------------------------------------------- messages

BEFORE = os.path.join(DATA, "corpus", "jax-0.10.2", "misc", "module_0000.jit__lambda.before_optimizations.txt")


@pytest.mark.parametrize("cmd", ["cost", "comms"])
def test_cost_and_comms_say_what_summary_says(cmd: str) -> None:
    said = run("summary", BEFORE).stdout
    assert "no after-optimizations HLO text" in said
    r = run(cmd, BEFORE)
    assert r.returncode == 2
    assert r.stderr.startswith(f"hlodump: nothing to analyse: no after-optimizations HLO text in {BEFORE} "
                               "(files read: hlo_module); the HLO read is before optimizations only")
    assert "no HLO module text" not in r.stderr


def _glog_cut(tmp_path: Path, tail: str) -> str:
    lines = Path(DATA, "oom", "gpu_glog_twice.log").read_text().splitlines()[:20]
    assert lines[-1].strip() == "Size: 384.0KiB"
    p = tmp_path / "cut.log"
    p.write_text("\n".join(lines[:-1] + [lines[-1].replace("384.0KiB", "384")]) + "\n" + tail)
    return str(p)


def test_oom_paste_cut_inside_a_size_is_a_note(tmp_path: Path) -> None:
    path = _glog_cut(tmp_path, "")
    d = hlodump.read_arrow(path)
    notes = d["notes"].to_pylist()
    assert [n["kind"] for n in notes] == ["oom_report_cut_off"] and notes[0]["line"] == 20
    assert "inside the Size: of buffer 2" in notes[0]["message"]
    assert d["oom_buffers"].num_rows == 1  # the complete buffer; the cut one gives no row
    ref = hlodump.reference.read_arrow(path)
    for t in ("oom_reports", "oom_buffers", "notes"):
        assert ref[t].to_pylist() == d[t].to_pylist(), t
    r = run("summary", path)
    assert r.returncode == 0 and "hlodump: note: oom report cut off" in r.stderr
    with pytest.raises(hlodump.ParseError):  # strict, as every cut paste
        hlodump.read_arrow(path, strict=True)
    # the file goes on after it: the size is wrong, not cut
    bad = _glog_cut(tmp_path, "                Operator: op_name=\"x\"\n")
    with pytest.raises(hlodump.ParseError, match="expected the size"):
        hlodump.read_arrow(bad)
    with pytest.raises(hlodump.ParseError, match="expected the size"):
        hlodump.reference.read_arrow(bad)


def test_tpu_oom_paste_cut_inside_a_size_is_a_note(tmp_path: Path) -> None:
    lines = Path(DATA, "oom", "tpu_jax.log").read_text().splitlines()
    i = next(k for k, ln in enumerate(lines) if re.search(r"^\s*2\. Size: ", ln))
    p = tmp_path / "tpu_cut.log"
    p.write_text("\n".join(lines[:i] + [re.sub(r"(Size: \d+).*", r"\1", lines[i])]) + "\n")
    d = hlodump.read_arrow(str(p))
    assert [n["kind"] for n in d["notes"].to_pylist()] == ["oom_report_cut_off"]
    assert hlodump.reference.read_arrow(str(p))["notes"].to_pylist() == d["notes"].to_pylist()


TRANSFORMER = os.path.join(DATA, "corpus", "jax-0.10.2", "transformer")


def test_passes_diff_is_a_unified_diff_with_context() -> None:
    from hlodump.analysis.passes import pass_changes

    d = hlodump.read_arrow(TRANSFORMER)
    ch = pass_changes(d, "jit_train_step", 10).to_pylist()
    r = run("passes", TRANSFORMER, "--module", "jit_train_step", "--diff", "10")
    assert r.returncode == 0, r.stderr
    body = r.stdout.splitlines()
    start = next(k for k, ln in enumerate(body) if ln.startswith("--- "))
    diff = body[start:]
    assert diff[1].startswith("+++ ") and diff[2].startswith("@@ ")
    minus = [ln for ln in diff[2:] if ln.startswith("-")]
    plus = [ln for ln in diff[2:] if ln.startswith("+")]
    context = [ln for ln in diff[2:] if ln.startswith(" ")]
    # every changed or removed instruction once on the - side, every changed or added one on +
    # every instruction the pass changed, removed or added is on its side (a line that only
    # moved is there too, as diff -u shows a moved line)
    assert {c["before"] for c in ch if c["change"] in ("changed", "removed")} <= {ln[1:] for ln in minus}
    assert {c["after"] for c in ch if c["change"] in ("changed", "added")} <= {ln[1:] for ln in plus}
    assert context, "no context lines"
    # the hunks interleave: not every - line before every + line (the old output)
    signs = [ln[0] for ln in diff[2:] if ln[:1] in "-+"]
    assert signs != sorted(signs, key=lambda c: c != "-")
    # the hunks are a diff of the two files' instruction lines: applying them gives the new file
    from hlodump.analysis.passes import pass_diff

    assert pass_diff(d, "jit_train_step", 10) == "\n".join(diff)
    assert all(re.match(r"@@ -\d+,\d+ \+\d+,\d+ @@", ln) for ln in diff if ln.startswith("@@"))
    zero = run("passes", TRANSFORMER, "--module", "jit_train_step", "--diff", "10", "-U", "0").stdout
    assert not [ln for ln in zero.splitlines() if ln.startswith(" ")]


def test_while_counted_once_is_said_in_the_output() -> None:
    cf = os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow")
    (c,) = A.cost_analysis(hlodump.read_arrow(cf), "jit_rnn")
    assert "1 while loop counted for one iteration" in c["note"] and "while.6 runs 9 times" in c["note"]
    out = run("cost", cf, "--module", "jit_rnn").stdout
    assert ("  note: 1 while loop counted for one iteration (XLA's HloCostAnalysis and jax's cost_analysis() count "
            "a while's body and condition once); while.6 runs 9 times") in out.splitlines()


# --------------------------------------------------------------------------------- docs and API

def test_readme_lists_the_extras() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for name in extras:
        if name not in ("test", "docs", "xla"):
            assert f'"hlodump[{name}]"' in readme, name
    assert "HTML needs nothing" not in readme
    assert "inlines plotly's JavaScript, so it needs plotly" in " ".join(readme.split())


def test_tables_md_column_reference_is_checked_in() -> None:
    from hlodump.schema import markdown

    text = (ROOT / "docs" / "tables.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- hlodump:column-reference -->\n(.*)<!-- /hlodump:column-reference -->", text, re.S)
    assert m and m.group(1).strip() == markdown().strip(), "python tools/mkdocs_hooks.py --write"
    assert "**files**" in m.group(1) and "**instructions**" in m.group(1)
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import mkdocs_hooks
    finally:
        sys.path.pop(0)
    site = mkdocs_hooks.on_page_markdown(text, None, None, None)
    assert site.count("**files**") == 1 and "hlodump:column-reference" not in site


def test_values_is_the_table_without_a_warning() -> None:
    d = hlodump.read_arrow(os.path.join(ADVICE, "donate_no"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert d.values.num_rows == d["values"].num_rows == len(d.values) > 0
        assert list(d.values()) == [d[k] for k in d]
        import polars as pl

        assert pl.DataFrame(d.values).height == d["values"].num_rows
        assert "Mapping.values()" in repr(d.values)


def test_flags_and_annotation_never_start_with_a_comma(tmp_path: Path) -> None:
    d = hlodump.read_arrow(os.path.join(DATA, "corpus", "jax-0.10.2", "misc"), tables=["allocations"])
    flags = d["allocations"].column("flags").to_pylist()
    assert "parameter 0, shape |f32[600]| at ShapeIndex {}" in flags
    assert not [f for f in flags if f.startswith(",")]
    seed = hlodump.read_arrow(os.path.join(DATA, "seeds", "000_d4ec204070c56195.txt"), tables=["allocations"])
    assert seed["allocations"].column("flags").to_pylist()[0] == "thread-local"
    # jax <= 0.7 kernel thunks without a profile annotation: `, kernel = …`
    p = tmp_path / "module_0001.jit_f.thunk_sequence.txt"
    p.write_text("kKernel\t, kernel = loop_add_fusion, launch dimensions = blocks: 4, threads/block: 128\n"
                 "kCopy  \tcopy.5\n")
    for t in (hlodump.read_arrow(str(p)), hlodump.reference.read_arrow(str(p))):
        ann = t["thunks"].column("annotation").to_pylist()
        assert ann == ["kernel = loop_add_fusion, launch dimensions = blocks: 4, threads/block: 128", "copy.5"]
        assert t["thunks"].column("kernel_name").to_pylist()[0] == "loop_add_fusion"


def test_offset_and_end_need_no_quotes_in_query() -> None:
    from hlodump.cli_safety import quote_column_words as q

    assert q('select offset, end from t') == 'select "offset", "end" from t'
    assert q("select case when x then end else 0 end from t limit 2 offset 3") == \
        'select case when x then "end" else 0 end from t limit 2 offset 3'
    assert q("select * from t where offset > 0 order by offset offset 1") == \
        'select * from t where "offset" > 0 order by "offset" offset 1'
    misc = os.path.join(DATA, "corpus", "jax-0.10.2", "misc")
    r = run("query", misc, "select max(end) as e, max(offset) as o from live_ranges, assignments", "--format", "csv")
    assert r.returncode == 0, r.stderr
    want = run("query", misc, 'select max("end") as e, max("offset") as o from live_ranges, assignments',
               "--format", "csv")
    assert r.stdout == want.stdout and want.stderr == ""
    assert r.stderr == 'hlodump: note: end and offset read as column names ("end", "offset"): DuckDB\'s SQL needs them quoted\n'
    bad = run("query", misc, "select offset from")
    assert bad.returncode == 2 and 'syntax error at or near "from"' in bad.stderr  # the SQL's own error


def test_flattened_file_names_are_paired_by_content() -> None:
    flat = hlodump.read_arrow(os.path.join(DATA, "flat"))
    mods = A.modules(flat).to_pylist()
    assert len(mods) == 2  # 8 files, two compiles (each: HLO, buffer assignment, values, live ranges)
    got = {s["total_bytes"]: s for s in A.summary(flat, top=0)}
    for name in ("donate_no", "layout"):
        (want,) = A.summary(hlodump.read_arrow(os.path.join(ADVICE, name)), top=0)
        s = got[want["total_bytes"]]
        assert A.peaks(s)["peak_in_use"] == A.peaks(want)["peak_in_use"]
        # the jax fields the files give (the backend is in the file names only: without it, no
        # peak_memory_in_bytes, whose formula is the backend's)
        assert s["memory_analysis"] == {k: v for k, v in want["memory_analysis"].items() if k in s["memory_analysis"]}
        assert s["cost_analysis"] == want["cost_analysis"]
        for k in ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes"):
            assert s["memory_analysis"][k] == ORACLE[name][k], k


def test_the_seeds_000_and_002_are_one_compile() -> None:
    """The issue's example: seeds/000 is the buffer assignment of seeds/002's module
    (jit_reference_attention: every instruction it names is there, with the same shape)."""
    seeds = os.path.join(DATA, "seeds")
    d = hlodump.read_arrow(seeds)
    keys = [m.key for m in A._module_list(d)]
    # the pair takes the HLO file's key; the other three stay modules of their own
    assert keys == ["002_257473ac4bd6642c", "001_0cb419b3147a3cb6", "003_edd6dfbd09ed8e41", "004_58de9a4b501a9eb8"]
    (s,) = A.summary(d, "002_257473ac4bd6642c", top=0)
    (ba,) = A.summary(hlodump.read_arrow(os.path.join(seeds, "000_d4ec204070c56195.txt")), top=0, cost=False)
    (hlo,) = A.summary(hlodump.read_arrow(os.path.join(seeds, "002_257473ac4bd6642c.txt")), top=0)
    assert s["total_bytes"] == ba["total_bytes"] and A.peaks(s)["peak_in_use"] == A.peaks(ba)["peak_in_use"]
    assert s["memory_analysis"] == ba["memory_analysis"]
    assert s["cost_analysis"] == hlo["cost_analysis"] is not None


# --------------------------------------------------------------------------------- advice

def _advice(name: str) -> list[dict]:
    return A.advice(hlodump.read_arrow(os.path.join(ADVICE, name))).to_pylist()


def test_advice_donate_matches_jax_with_the_donation() -> None:
    rows = [r for r in _advice("donate_no") if r["kind"] == "donate"]
    assert len(rows) == 1  # the scalar lr -> sum(g) pair frees 4 bytes: under MIN_BYTES
    r = rows[0]
    no, yes = ORACLE["donate_no"], ORACLE["donate_yes"]
    assert r["parameter"] == 0 and r["instruction"] == "w.1" and r["shape"].startswith("f32[256,1024]")
    assert r["bytes"] == yes["alias_size_in_bytes"] == no["peak_memory_in_bytes"] - yes["peak_memory_in_bytes"]
    assert r["text"].startswith("donate argument w (parameter 0, f32[256,1024]): −1.00MiB")
    assert not [r for r in _advice("donate_yes") if r["kind"] == "donate"]  # donated: nothing left to say


def test_advice_layout_copy() -> None:
    rows = [r for r in _advice("layout") if r["kind"] == "layout_copy"]
    d = hlodump.read_arrow(os.path.join(ADVICE, "layout"))
    ins = {r["name"]: r for r in d["instructions"].to_pylist()}
    assert {r["instruction"] for r in rows} == {"wrapped_copy", "copy_sine_fusion"}
    for r in rows:
        assert r["bytes"] == 256 * 512 * 4 and r["live_at_peak"]
        assert ins[r["instruction"]]["shape"] == "f32[256,512]{1,0}"
    assert "f32[256,512]{0,1} rewritten as f32[256,512]{1,0}" in rows[0]["text"]


def test_advice_remat_of_activations_kept_across_the_peak() -> None:
    rows = [r for r in _advice("remat_no") if r["kind"] == "remat"]
    d = hlodump.read_arrow(os.path.join(ADVICE, "remat_no"))
    lr = {r["buffer"]: r for r in d["live_ranges"].to_pylist()}
    peak = A.summary(d, top=0, cost=False)[0]["timeline"]["max_allocated_step"]
    assert len(rows) == 3
    for r in rows:
        assert r["bytes"] == 2048 * 128 * 4 and "tanh" in r["op_name"] and r["peak_step"] == peak
        x = lr[r["instruction"] + "{}"]
        assert x["start"] == r["start"] < peak < r["end"] == x["end"]
        assert r["text"].startswith(f"rematerialize {r['instruction']} (f32[2048,128]")


def test_advice_collective_live_across_the_peak() -> None:
    coll = os.path.join(DATA, "accel", "tpu_v5p_2x2x2", "collectives")
    d = hlodump.read_arrow(coll)
    rows = [r for r in A.advice(d).to_pylist() if r["kind"] == "collective"]
    assert [r["instruction"] for r in rows] == ["all_to_all.9"]
    r = rows[0]
    (size,) = {a["size"] for a in d["assignments"].to_pylist() if a["instruction"] == "all_to_all.9"}
    assert r["bytes"] == size and r["start"] < r["peak_step"] < r["end"]
    (s,) = [s for s in A.summary(d, top=0, cost=False) if s["module"] == r["module"]]
    assert r["peak_step"] == s["timeline"]["max_allocated_step"]


def test_advice_is_one_table_for_every_module_cheapest_first() -> None:
    from hlodump.analysis.advice import ADVICE_KINDS

    d = hlodump.read_arrow(ADVICE)
    t = A.advice(d).to_pylist()
    mods = {r["module"] for r in t}
    assert len(mods) == 4  # donate_no, layout, remat_no, and collective's remat
    for m in mods:
        mine = [r for r in t if r["module"] == m]
        assert [r["rank"] for r in mine] == list(range(len(mine)))
        order = [ADVICE_KINDS.index(r["kind"]) for r in mine]
        assert order == sorted(order)
        assert mine == A.advice(d, m).to_pylist()  # the same rows as asked one module at a time
    js = json.loads(run("summary", os.path.join(ADVICE, "donate_no"), "--json").stdout)
    (m,) = js if isinstance(js, list) else js["modules"]
    assert m["advice"][0]["kind"] == "donate" and m["n_advice"] == 1
    out = run("summary", os.path.join(ADVICE, "donate_no")).stdout.splitlines()
    i = out.index("what to do, cheapest first:")
    assert out[i + 1].startswith("  1. donate argument w (parameter 0, f32[256,1024]): −1.00MiB")
