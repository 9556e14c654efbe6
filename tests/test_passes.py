"""``hlodump.analysis.passes`` / ``history`` / ``pass_changes`` and ``hlodump passes`` against the
text of the per-pass files themselves.

The oracle reads each per-pass file with one regular expression (an indented ``[ROOT] [%]name =
text`` line is an instruction) and nothing of hlodump: instruction counts, the added / removed /
changed counts against the previous per-pass file, the first file that defines each instruction
of the final module, and the lines of every changed instruction. Samples: the committed per-pass
dumps of ``tests/data/passes/jax-V`` (made by ``gen_passes.py --trim``), and the same program
compiled now by the installed jax and by two more releases in the project's cached venvs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Optional

import pytest

from conftest import DATA

import hlodump
from hlodump import analysis as A
from hlodump.analysis.passes import NoSuchInstruction, NoSuchPass, pass_changes, unified_diff

PASSES = os.path.join(DATA, "passes")
GEN = os.path.join(PASSES, "gen_passes.py")
CAPTURE_PY = os.path.join(os.path.dirname(hlodump.__file__), "capture.py")
SAMPLES = sorted(d for d in os.listdir(PASSES) if d.startswith("jax-"))
PASS_FILE = re.compile(r"^module_(\d+)\.(.+?)\.(\d{4})\.(.*)\.txt$")
DEF = re.compile(r"^\s+(ROOT\s+)?%?([A-Za-z0-9_.\-]+)\s*=\s*(.*?)\s*$")


# --------------------------------------------------------------------------------- the oracle

def defs(path: str) -> list[tuple[str, str, int]]:
    """(name, text without the name with ROOT marker, line) of every instruction line of a file."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            m = DEF.match(line)
            if m:
                out.append((m.group(2), ("ROOT " if m.group(1) else "") + m.group(3), no))
    return out


def pass_files(directory: str) -> dict[str, list[tuple[int, str]]]:
    """module_NNNN.name -> [(pass index, path)] in pass order, from the file names."""
    out: dict[str, list[tuple[int, str]]] = {}
    for n in sorted(os.listdir(directory)):
        m = PASS_FILE.match(n)
        if m:
            out.setdefault(f"module_{m.group(1)}.{m.group(2)}", []).append((int(m.group(3)), os.path.join(directory, n)))
    return {k: sorted(v) for k, v in out.items()}


def oracle_rows(directory: str) -> dict[tuple[str, int], tuple[int, int, int, int]]:
    """(module, pass index) -> (instructions, added, removed, changed), from the text alone."""
    out = {}
    for module, files in pass_files(directory).items():
        prev: Optional[dict[str, str]] = None
        for idx, path in files:
            cur = {n: t for n, t, _ in defs(path)}
            before = prev or {}
            added = sum(1 for n in cur if n not in before)
            removed = sum(1 for n in before if n not in cur)
            changed = sum(1 for n in cur if n in before and before[n] != cur[n])
            out[(module, idx)] = (len(defs(path)), added, removed, changed)
            prev = cur
    return out


def norm(s: str) -> str:
    return " ".join(s.split())


def same_line(ours: str, line: "re.Match[str]") -> bool:
    """Our text of an instruction is its line: ROOT marker, name, the text after ``=``."""
    m = DEF.match("  " + ours)
    return m is not None and (bool(m.group(1)), m.group(2), norm(m.group(3))) == (
        bool(line.group(1)), line.group(2), norm(line.group(3)))


# --------------------------------------------------------------------------------- checks

def check_dump(directory: str) -> int:
    """Every check on one per-pass dump; the number of per-pass files checked."""
    d = hlodump.read_arrow(directory)
    t = A.passes(d)
    expected = oracle_rows(directory)
    got = {(r["module"], r["pass_index"]): (r["instructions"], r["added"], r["removed"], r["changed"])
           for r in t.to_pylist()}
    assert got == expected
    assert t.num_rows == len(expected) >= 10
    assert sum(r[3] for r in expected.values()) > 0, "no pass changed an instruction: a sample that proves little"
    # pass order and the file a row names
    for r in t.to_pylist():
        assert PASS_FILE.match(os.path.basename(r["path"])).group(3) == f"{r['pass_index']:04d}"
    for module, files in pass_files(directory).items():
        check_first_definitions(d, directory, module, files)
        check_changed_rows(d, module, files, t)
    return t.num_rows


def check_first_definitions(d, directory: str, module: str, files: list[tuple[int, str]]) -> None:
    """For every instruction of the final module (after optimizations), the first pass whose
    history says ``added`` is the first per-pass file whose text defines it."""
    final = [os.path.join(directory, n) for n in os.listdir(directory)
             if n.startswith(module + ".") and n.endswith("after_optimizations.txt")]
    assert len(final) == 1, final
    names = [n for n, _, _ in defs(final[0])]
    assert names
    text_of = {idx: {n for n, _, _ in defs(p)} for idx, p in files}
    for n in names:
        first = next((idx for idx, _ in files if n in text_of[idx]), None)
        if first is None:
            with pytest.raises(NoSuchInstruction):
                A.history(d, module, n)
            continue
        h = A.history(d, module, n).to_pylist()
        assert h[0]["change"] == "added" and h[0]["pass_index"] == first, (n, h[:2], first)
        # every row of the story is true of the text
        for r in h:
            inside = n in text_of[r["pass_index"]]
            assert inside == (r["change"] != "removed"), (n, r)


def check_changed_rows(d, module: str, files: list[tuple[int, str]], t) -> None:
    """Every ``changed`` row of every pass really differs in the files' lines, and our texts are
    those lines."""
    rows = [r for r in t.to_pylist() if r["module"] == module and r["changed"]]
    path_of = dict(files)
    prev_of = {idx: files[i - 1][0] for i, (idx, _) in enumerate(files) if i}
    for r in rows:
        ch = pass_changes(d, module, r["pass_index"]).to_pylist()
        assert sum(1 for c in ch if c["change"] == "changed") == r["changed"]
        assert sum(1 for c in ch if c["change"] == "added") == r["added"]
        assert sum(1 for c in ch if c["change"] == "removed") == r["removed"]
        cur_lines = open(path_of[r["pass_index"]], encoding="utf-8").read().split("\n")
        prev_lines = open(path_of[prev_of[r["pass_index"]]], encoding="utf-8").read().split("\n")
        for c in ch:
            if c["change"] != "changed":
                continue
            old, new = prev_lines[c["before_line"] - 1], cur_lines[c["after_line"] - 1]
            mo, mn = DEF.match(old), DEF.match(new)
            assert mo.group(2) == mn.group(2) == c["instruction"]
            assert (mo.group(1), mo.group(3)) != (mn.group(1), mn.group(3)), (old, new)
            assert same_line(c["before"], mo), (c["before"], old)
            assert same_line(c["after"], mn), (c["after"], new)


# --------------------------------------------------------------------------------- committed samples

def test_samples_present() -> None:
    assert len(SAMPLES) >= 2


@pytest.mark.parametrize("sample", SAMPLES)
def test_sample(sample: str) -> None:
    assert check_dump(os.path.join(PASSES, sample)) >= 10


def test_module_selection_and_errors() -> None:
    d = hlodump.read_arrow(os.path.join(PASSES, SAMPLES[-1]))
    t = A.passes(d)
    (module,) = set(t.column("module").to_pylist())
    assert A.passes(d, "jit_program").equals(t)
    with pytest.raises(A.NoSuchModule):
        A.passes(d, "no_such_module")
    with pytest.raises(NoSuchInstruction) as e:
        A.history(d, None, "no_such_instruction.0")
    assert module in str(e.value)
    with pytest.raises(NoSuchPass):
        pass_changes(d, None, "no-such-pass")
    # the name with % and without give one story
    name = t.filter(__import__("pyarrow").compute.greater(t.column("changed"), 0))
    assert name.num_rows
    ch = pass_changes(d, None, name.column("pass_index")[0].as_py())
    n = ch.column("instruction")[0].as_py()
    assert A.history(d, None, "%" + n).equals(A.history(d, None, n))
    diff = unified_diff(ch)
    assert diff.startswith("--- after ") and "(the previous pass dumped)" in diff.splitlines()[0] and any(line.startswith("+") for line in diff.splitlines()[2:])


def test_no_pass_files() -> None:
    d = hlodump.read_arrow(os.path.join(DATA, "memory_analysis", "jax-0.10.2"), tables=["instructions"])
    assert A.passes(d).num_rows == 0
    assert A.passes(d).schema.names[:3] == ["module", "module_name", "module_id"]


def test_cli(tmp_path) -> None:
    src = os.path.join(PASSES, SAMPLES[-1])
    run = lambda *a: subprocess.run([sys.executable, "-m", "hlodump.cli", *a], capture_output=True, text=True)  # noqa: E731
    p = run("passes", src, "--json")
    assert p.returncode == 0, p.stderr
    d = hlodump.read_arrow(src)
    assert json.loads(p.stdout) == json.loads(json.dumps(A.passes(d).to_pylist(), default=str))
    p = run("passes", src)
    assert p.returncode == 0 and "instructions" in p.stdout and "pipeline-start" in p.stdout
    t = A.passes(d)
    idx = next(r["pass_index"] for r in t.to_pylist() if r["changed"])
    p = run("passes", src, "--diff", str(idx))
    assert p.returncode == 0 and p.stdout.startswith(f"pass {idx} ("), p.stdout + p.stderr
    assert "the previous pass dumped" in p.stdout and "\n--- after " in p.stdout and "not dumped" not in p.stdout
    n = pass_changes(d, None, idx).column("instruction")[0].as_py()
    p = run("passes", src, "--instruction", n)
    assert p.returncode == 0 and (": added" in p.stdout), p.stdout + p.stderr
    p = run("passes", src, "--instruction", "nope.1")
    assert p.returncode == 2 and p.stderr.startswith("hlodump: passes: no instruction") and "Traceback" not in p.stderr
    p = run("passes", os.path.join(DATA, "memory_analysis", "jax-0.10.2"))
    assert p.returncode == 2 and "no per-pass HLO files" in p.stderr and "Traceback" not in p.stderr
    p = run("passes", src, "--diff", "no-such-pass")
    assert p.returncode == 2 and "no pass" in p.stderr


# --------------------------------------------------------------------------------- live releases

def _generate(python: str, out: str) -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("PYTHONPATH", None)
    env.pop("XLA_FLAGS", None)
    p = subprocess.run([python, GEN, CAPTURE_PY, out], env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_live_installed_jax(tmp_path) -> None:
    pytest.importorskip("jax")
    _generate(sys.executable, str(tmp_path / "d"))
    assert check_dump(str(tmp_path / "d")) >= 10


@pytest.mark.parametrize("version", ["0.5.3", "0.8.3"])
def test_live_other_release(version: str, tmp_path) -> None:
    from test_memory_analysis import _venv_python

    _generate(_venv_python(version), str(tmp_path / "d"))
    assert check_dump(str(tmp_path / "d")) >= 10


def _hlo(body: str) -> str:
    return "HloModule m, entry_computation_layout={()->f32[]}\n\nENTRY %main () -> f32[] {\n" + body + "}\n"


def test_repeated_names_match_kth_to_kth(tmp_path) -> None:
    """Not valid HLO (XLA's verifier keeps names unique in a module), but counted exactly: the
    k-th occurrence of a name matches the k-th of the previous file."""
    files = {
        "module_0001.m.0000.p.after_pipeline-start.before_x.txt":
            "  %a = f32[] constant(1)\n  %b = f32[] constant(2)\n  %b = f32[] constant(3)\n"
            "  ROOT %c = f32[] add(%a, %b)\n",
        "module_0001.m.0001.p.after_x.before_y.txt":
            "  %a = f32[] constant(5)\n  %b = f32[] constant(2)\n  ROOT %c = f32[] add(%a, %b)\n"
            "  %d = f32[] constant(7)\n",
        "module_0001.m.0002.p.after_y.before_pipeline-end.txt":
            "  %a = f32[] constant(5)\n  %b = f32[] constant(2)\n  ROOT %c = f32[] add(%a, %b)\n"
            "  %d = f32[] constant(7)\n  %e = f32[] constant(8)\n  %e = f32[] constant(9)\n",
    }
    for name, body in files.items():
        (tmp_path / name).write_text(_hlo(body))
    # a name defined twice in a computation is an error since issue 50 (XLA's parser refuses
    # it): strict reading says so; collected, the second definition has no row
    with pytest.raises(hlodump.ParseError, match="already defined in this computation"):
        hlodump.read_arrow(str(tmp_path))
    t = A.passes(hlodump.read_arrow(str(tmp_path), on_error="collect"))
    got = [(r["pass_index"], r["pass_name"], r["instructions"], r["added"], r["removed"], r["changed"]) for r in t.to_pylist()]
    assert got == [(0, "pipeline-start", 3, 3, 0, 0), (1, "x", 4, 1, 0, 1), (2, "y", 5, 1, 0, 0)]
