"""Dump identity: every file knows its dump; dumps read together give each one's figures.

And the timeline counts each byte once: on every module in ``tests/data`` the live bytes per
memory space never exceed what the module allocates there, and XLA's own peak list equals the
values live at its step by the dump's live ranges (or every difference is explained by rule).
"""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import DATA

from hlodump import analysis as A

CF10 = os.path.join(DATA, "corpus", "jax-0.10.2", "control_flow")
CF04 = os.path.join(DATA, "corpus", "jax-0.4.26", "control_flow")
MA53 = os.path.join(DATA, "memory_analysis", "jax-0.5.3")
MA83 = os.path.join(DATA, "memory_analysis", "jax-0.8.3")


@pytest.fixture(autouse=True)
def _native() -> None:
    pytest.importorskip("hlodump._core")


def _read(p, **kw):
    import hlodump

    return hlodump.read_arrow(p, on_error="collect", **kw)


def _figures(d) -> dict:
    """Every per-module figure of ``summary``, keyed by (dump, module id, name)."""
    out = {}
    for s in A.summary(d, top=50):
        key = (s["dump"], s["module_id"], s["module_name"])
        assert key not in out
        s = dict(s)
        s.pop("module")
        out[key] = s
    return out


def test_files_dump_column(tmp_path) -> None:
    import hlodump

    d = hlodump.read_arrow(CF10, tables=[])
    assert set(d.files.column("dump").to_pylist()) == {CF10.replace(os.sep, "/")}
    # per-module sub-folders (module_0002.jit_rnn_loss/compile_options.textproto) belong to it too
    assert any("/" in p for p in d.files.column("path").to_pylist())
    one = os.path.join(CF10, "module_0002.jit_rnn_loss.cpu_after_optimizations-buffer-assignment.txt")
    f = hlodump.read_arrow(one, tables=[]).files.to_pylist()
    assert f[0]["dump"] == one
    # rank0/rank1 and nested runs: one dump per folder that holds module files
    runs = tmp_path / "runs"
    for sub in ("a/rank0", "a/rank1", "b"):
        shutil.copytree(MA53, runs / sub)
    d = hlodump.read_arrow(str(runs), tables=[])
    dumps = sorted(set(d.files.column("dump").to_pylist()))
    assert dumps == [f"{runs}/a/rank0", f"{runs}/a/rank1", f"{runs}/b"]
    from hlodump.reference import read_arrow as ref

    assert ref(str(runs), tables=[]).files.column("dump").to_pylist() == d.files.column("dump").to_pylist()


@pytest.mark.parametrize("pair", [(CF10, CF04), (MA53, MA83)], ids=["control_flow", "memory"])
def test_two_dumps_together_and_apart(pair) -> None:
    a, b = pair
    fa, fb = _figures(_read(a)), _figures(_read(b))
    together = _figures(_read([a, b]))
    assert set(together) == set(fa) | set(fb) and not set(fa) & set(fb)
    for k, v in {**fa, **fb}.items():
        assert together[k] == v, k
    # the same module number and name in both dumps stays two modules
    names = [k[1:] for k in together]
    assert len(names) > len(set(names))


def test_parent_folder_of_runs(tmp_path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(MA53, runs / "run1")
    shutil.copytree(MA83, runs / "run2")
    apart = {**_figures(_read(str(runs / "run1"))), **_figures(_read(str(runs / "run2")))}
    parent = _figures(_read(str(runs)))
    assert parent == apart
    # a module selected by name in the parent folder is ambiguous: both runs have it
    with pytest.raises(A.NoSuchModule):
        A._select(A._module_list(_read(str(runs))), "jit_mem_scan_rnn", unique=True)


def test_readme_join_counts_each_peak_row_once() -> None:
    con = _read(CF10).to_duckdb()
    n_peak = con.sql("select count(*) from peak").fetchall()[0][0]
    n_join = con.sql("""select count(*) from peak p join files f using (file_id)
        join files fi on fi.dump = f.dump and fi.module_id = f.module_id and fi.kind = 'hlo_module'
             and fi.stage = 'after_optimizations'
        join instructions i on i.file_id = fi.file_id and i.name = p.instruction""").fetchall()[0][0]
    assert n_join == n_peak


def _dump_dirs() -> list[str]:
    out = [os.path.join(DATA, "seeds")]
    for top in ("corpus", "memory_analysis"):
        for v in sorted(os.listdir(os.path.join(DATA, top))):
            p = os.path.join(DATA, top, v)
            if os.path.isdir(p):
                progs = [x for x in sorted(os.listdir(p)) if os.path.isdir(os.path.join(p, x))
                         and not x.startswith("module_")]
                if top == "corpus" and "misc" not in progs:
                    # the releases sampled by tools/corpus (all but 0.4.26 and 0.10.2): control_flow
                    # only, to keep the suite's time (their formats: test_corpus_releases.py)
                    progs = [x for x in progs if x == "control_flow"]
                out.extend(os.path.join(p, x) for x in progs)
                if top == "memory_analysis":
                    out.append(p)
    return [p for p in out if any(f.endswith(".txt") for f in os.listdir(p))]


@pytest.mark.parametrize("path", _dump_dirs(), ids=lambda p: os.path.relpath(p, DATA))
def test_timeline_within_allocation_and_peak_set(path) -> None:
    d = _read(path, tables=["allocations", "assignments", "values", "live_ranges", "peak", "schedule", "totals",
                            "instructions"])
    from collections import defaultdict

    tl = A.memory_timeline(d).to_pylist()
    cap: dict = defaultdict(int)
    for r in A.allocations(d).to_pylist():
        if not r["is_thread_local"]:
            cap[(r["module"], r["color"])] += r["size"]
    by_color: dict = defaultdict(int)
    total: dict = defaultdict(int)
    logical: dict = defaultdict(int)
    for r in tl:
        by_color[(r["module"], r["color"], r["step"])] += r["bytes"]
        total[(r["module"], r["step"])] += r["bytes"]
        logical[(r["module"], r["step"])] += r["logical_bytes"]
    for (key, color, step), live in by_color.items():
        assert live <= cap[(key, color)], (key, color, step, live, cap[(key, color)])
    for mod in {k[0] for k in total}:
        assert max(v for k, v in logical.items() if k[0] == mod) <= max(v for k, v in total.items() if k[0] == mod)
    checked = len({k[0] for k in total})
    for s in A.summary(d, top=0):
        pc = s["peak_check"]
        if pc is None:
            continue
        # the set: equal, or every difference stated with the value and the reason
        assert pc["same_set"] or all(x["reason"] for x in pc["only_listed"] + pc["only_live"]), s["module"]
        for x in pc["only_listed"] + pc["only_live"]:
            assert any(x["buffer"] in e for e in pc["explanations"])
        # where XLA's step is not the by-slice maximum, the difference is stated with the figures
        if pc["max_step"] != pc["step"]:
            assert any(f"step {pc['max_step']}" in e for e in pc["explanations"])
        assert not any("XLA picks it with whole-instruction shape sizes" in n for n in s["notes"])
    assert checked or not tl


def test_rnn_loss_most_live_within_allocated() -> None:
    # jax 0.4.26 jit_rnn_loss: the old per-value count gave more than the module allocates
    (s,) = A.summary(_read(CF04), "jit_rnn_loss", top=0)
    assert s["timeline"]["max_allocated_bytes"] <= s["total_bytes"]
    for sp in s["timeline"]["memory_spaces"]:
        assert sp["max_live_bytes"] + sp["free_bytes"] == sp["allocated_bytes"]
        assert 0 <= sp["fragmentation"] <= 1 and sp["padding_bytes"] >= 0


def test_diff_matches_renumbered_and_renamed_modules() -> None:
    from hlodump.analysis.diff import norm_op_name, pair_modules

    a, b = _read(CF04), _read(CF10)
    pairs = pair_modules(a, b)
    assert all(x is not None and y is not None for x, y in pairs) and len(pairs) == 12
    names = {(x.name, y.name) for x, y in pairs}
    assert ("jit__lambda_", "jit__lambda") in names and ("jit_rnn_loss", "jit_rnn_loss") in names
    rows = A.diff(a, b, "rnn_loss").to_pylist()
    assert rows[0]["what"] == "peak"
    # op_name prefixes drift between releases (jit(main)/…): buffers still match
    assert norm_op_name("jit(main)/jit(rnn_loss)/while/body/tanh") == "while/body/tanh"
    buf = [r for r in rows if r["what"] == "buffer"]
    assert len(buf) < 40
    deltas = [abs(r["delta"] or 0) for r in rows if r["what"] not in ("module", "peak", "total", "category",
                                                                       "memory_space")]
    assert deltas == sorted(deltas, reverse=True)
