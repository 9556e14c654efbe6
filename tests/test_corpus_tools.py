"""The corpus tooling of tools/corpus and what it left in tests/data (issues 36 and 38).

* The oracle files next to the jax >= 0.11 samples (``jax_analysis.json``: jax's own
  ``memory_analysis()`` / ``cost_analysis()`` per sampled module; ``xla_parse.json``: XLA's own
  parse of every HLO text) cover exactly the files of the sample, and the sample's twin files
  agree with them where the text itself states a figure (module names, the ``Total bytes used``
  of the buffer assignment = argument + output + temp − alias + constants is not asserted: that
  is the parser's job; here only what needs no parser).
* No machine path is left in any new fixture (sample.py's same-length neutralisation).
* ``sample.py --producer``: the choice of files and the neutralisation of a dump directory that a
  file names without a trailing ``/`` (TensorFlow's and PyTorch/XLA's ``xla_dump_to: "DIR"``).
* ``generators/record_compiles`` (live, with the installed jax): one JSON line per compiled
  module, with jax's figures, and a dump byte-identical to a plain run's.
* ``tools/newest-xla`` on recorded dumps (live, with the installed jax's parser).
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import DATA, ROOT

TOOLS = os.path.join(ROOT, "tools", "corpus")
sys.path.insert(0, TOOLS)
import sample  # noqa: E402

ORACLE_RELEASES = sorted(os.path.basename(os.path.dirname(p))
                         for p in glob.glob(os.path.join(DATA, "corpus", "jax-*", "jax_analysis.json")))
# folders (relative to tests/data) with jax_analysis.json + xla_parse.json: the corpus of jax >= 0.11
# and the text+proto twins of tests/data/proto
ORACLE_FOLDERS = sorted(os.path.relpath(os.path.dirname(p), DATA)
                        for p in glob.glob(os.path.join(DATA, "*", "jax-*", "jax_analysis.json")))
_AFTER = re.compile(r"^module_(\d{4,})\.(.+)\.[a-z0-9_.]*after_optimizations\.txt$")


def _hlo_texts(root: str) -> set[str]:
    out = set()
    for d, _dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                if f.read(64).lstrip(b"\n").startswith(b"HloModule "):
                    out.add(os.path.relpath(p, root).replace(os.sep, "/"))
    return out


def test_oracle_releases() -> None:
    assert {"jax-0.11.2", "jax-0.12.0.1"} <= set(ORACLE_RELEASES)
    assert {"proto/jax-0.10.2", "proto/jax-0.11.2", "proto/jax-0.12.0.1"} <= set(ORACLE_FOLDERS)


@pytest.mark.parametrize("folder", ORACLE_FOLDERS)
def test_jax_analysis_covers_every_sampled_module(folder: str) -> None:
    root = os.path.join(DATA, folder)
    doc = json.load(open(os.path.join(root, "jax_analysis.json"), encoding="utf-8"))
    assert doc["jax"] == os.path.basename(folder).removeprefix("jax-")
    want = set()
    for program in sorted(os.listdir(root)):
        for _d, _dirs, names in os.walk(os.path.join(root, program)):
            for n in names:
                if m := _AFTER.match(n):
                    want.add(f"{program}/module_{m[1]}.{m[2]}")
    assert set(doc["modules"]) == want
    for key, rec in doc["modules"].items():
        assert rec["module_name"] == key.split(".", 1)[1], key
        ma, ca = rec["memory_analysis"], rec["cost_analysis"]
        for k in ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
                  "peak_memory_in_bytes"):
            assert isinstance(ma[k], int) and ma[k] >= 0, (key, k)
        assert ca.get("flops", 0.0) >= 0 and ca["bytes accessed"] > 0, key  # zero values are left out


@pytest.mark.parametrize("folder", ORACLE_FOLDERS + [os.path.join("producers", p) for p in ("tensorflow-2.21", "torch-xla-2.9")])
def test_xla_parse_covers_every_hlo_text(folder: str) -> None:
    root = os.path.join(DATA, folder)
    doc = json.load(open(os.path.join(root, "xla_parse.json"), encoding="utf-8"))
    assert set(doc["files"]) == _hlo_texts(root)
    compact = 0
    for path, x in doc["files"].items():
        assert "error" not in x, path
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        assert text.startswith(f"HloModule {x['module']}")
        printed = re.findall(r"^\s+(?:ROOT\s+)?%?([^\s=]+) = ", text, re.M)
        n = sum(c["n_instructions"] for c in x["computations"])
        synth = x.get("synthesized", [])
        # XLA's parse = the printed instructions + one get-tuple-element per distinct `%x#k`
        assert n == len(printed) + len(synth), path
        for name, opcode, operands, index, _comp in synth:
            # XLA names it <operand>_<k>, made unique in the module with .N
            assert opcode == "get-tuple-element" and re.fullmatch(rf"{re.escape(operands[0])}_{index}(\.\d+)?", name), (path, name)
            assert f"%{operands[0]}#{index}" in text, (path, name)
        for name, opcode, _comp in x.get("renamed", []):
            assert opcode != "get-tuple-element" and name not in printed, (path, name)
        compact += len(synth)
    if folder.startswith("producers") or folder.endswith("jax-0.10.2"):
        assert compact == 0  # TensorFlow 2.21, PyTorch/XLA 2.9 and jax 0.10.2 do not
    else:
        assert compact > 100  # jax >= 0.11 prints compact tuple operands by default


NEW_FIXTURES = ([os.path.join("corpus", r) for r in ORACLE_RELEASES]
                + ["producers", os.path.join("memory_analysis", "jax-0.11.2"), os.path.join("memory_analysis", "jax-0.12.0.1"),
                   os.path.join("cost", "jax-0.11.2"), os.path.join("cost", "jax-0.12.0.1")]
                + sorted(os.path.relpath(p, DATA) for p in glob.glob(os.path.join(DATA, "proto", "jax-*"))))


@pytest.mark.parametrize("folder", NEW_FIXTURES)
def test_no_machine_paths(folder: str) -> None:
    root = os.path.join(DATA, folder)
    assert os.path.isdir(root)
    n = 0
    for d, _dirs, names in os.walk(root):
        for name in names:
            with open(os.path.join(d, name), "rb") as f:
                data = f.read()
            for bad in sample.FORBIDDEN:
                assert bad not in data, (os.path.join(d, name), bad)
            n += 1
    assert n > 0


def test_producer_sample(tmp_path) -> None:
    """sample.py --producer on a real-looking flat dump: every module file, the first kernel of each
    name form (all three stages), no *.ll / *.o; the dump directory replaced with and without '/'."""
    src = tmp_path / "work" / "dumps" / "tf"
    src.mkdir(parents=True)
    mod = "module_0000.a_inference_f_16__XlaMustCompile_true_config_proto_1_executor_type_2_.3"
    files = {f"{mod}.before_optimizations.txt": "HloModule x\n",
             f"{mod}.cpu_after_optimizations.txt": "HloModule x\n",
             f"{mod}.debug_options": f'xla_dump_to: "{src}"\n',
             f"{mod}.ir-no-opt.ll": "", f"{mod}.obj-file.add_fusion_kernel_module.o": ""}
    for k in ("add_reduce_fusion_kernel_module", "broadcast_divide_fusion_kernel_module", "wrapped_reduce_kernel_module",
              "wrapped_reduce.1_kernel_module", "wrapped_scatter", "__compute_module_wrapped_log"):
        for st in ("pre-optimization", "post-optimization", "post-lowering"):
            files[f"{mod}.{k}-{st}.mlir"] = f"// {src}/x\n"
    for n, text in files.items():
        (src / n).write_text(text)
    out = tmp_path / "out"
    sample.main(["--producer", "tf", str(src), str(out)])
    got = sorted(os.listdir(out / "tf"))
    kept = {re.sub(r"-(pre-optimization|post-optimization|post-lowering)\.mlir$", "", n.split(".3.", 1)[1])
            for n in got if n.endswith(".mlir")}
    # file-name order: "wrapped_reduce.1_…" sorts before "wrapped_reduce_…"
    assert kept == {"add_reduce_fusion_kernel_module", "wrapped_reduce.1_kernel_module", "wrapped_scatter",
                    "__compute_module_wrapped_log"}
    assert len([n for n in got if n.endswith(".mlir")]) == 12
    assert not [n for n in got if n.endswith((".ll", ".o"))]
    opts = (out / "tf" / f"{mod}.debug_options").read_text()
    assert str(tmp_path) not in opts and opts.startswith('xla_dump_to: "/data/xla_dump/')
    assert len(opts) == len(files[f"{mod}.debug_options"])


def _jax_python() -> str:
    try:
        import jax  # noqa: F401
    except ImportError:
        pytest.skip("jax is not installed (pip install -e '.[test,xla]')")
    return sys.executable


_PROGRAM = """
import jax, jax.numpy as jnp
from jax import lax
f = jax.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c @ c.T), x).sum())
g = jax.jit(lambda a, b: (a * b, a + b))
x = jnp.ones((8, 8))
print(f(x), g(x, x)[0].sum(), f(x + 1))  # f again: a cache hit compiles nothing
"""


def _run_program(py: str, out: str, compiles: str | None) -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_dump_to={out}")
    env.pop("PYTHONPATH", None)
    if compiles:
        env.update(COMPILES=compiles, PYTHONPATH=os.path.join(TOOLS, "generators", "record_compiles"))
    os.makedirs(out, exist_ok=True)
    prog = os.path.join(os.path.dirname(out), "prog.py")
    with open(prog, "w") as f:
        f.write(_PROGRAM)
    p = subprocess.run([py, prog], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_record_compiles_live(tmp_path) -> None:
    py = _jax_python()
    plain, rec = str(tmp_path / "a" / "d"), str(tmp_path / "b" / "d")
    _run_program(py, plain, None)
    cj = str(tmp_path / "b" / "compiles.jsonl")
    _run_program(py, rec, cj)
    recs = [json.loads(x) for x in open(cj, encoding="utf-8")]
    mods = sorted((int(m[1]), m[2]) for n in os.listdir(rec) if (m := _AFTER.match(n)))
    assert [r["module_name"] for r in recs] == [name for _, name in mods]
    assert len(recs) >= 2 and [r["seq"] for r in recs] == list(range(len(recs)))
    for r in recs:
        assert r["memory_analysis"]["argument_size_in_bytes"] >= 0 and "bytes accessed" in r["cost_analysis"]
    # the matmul in the fori_loop's body (XLA counts a while body once): 8x8x8 multiply-adds
    assert max(r["cost_analysis"].get("flops", 0.0) for r in recs) >= 2 * 8 * 8 * 8
    # the dump is the same as without the recorder (dump paths aside)
    names = sorted(os.listdir(plain))
    assert names == sorted(os.listdir(rec))
    for n in names:
        a, b = os.path.join(plain, n), os.path.join(rec, n)
        if os.path.isfile(a) and n.endswith(".txt"):
            ta = open(a, encoding="utf-8").read().replace(str(tmp_path / "a"), "X")
            tb = open(b, encoding="utf-8").read().replace(str(tmp_path / "b"), "X")
            assert ta == tb, n


def test_newest_xla_on_recorded_dumps(tmp_path) -> None:
    """tools/newest-xla --dumps on a recorded dump of the installed jax: the table has a row per
    compiled module, and memory / flops agree (the installed jax is one the parser knows)."""
    py = _jax_python()
    pytest.importorskip("hlodump._core")
    root = tmp_path / "dumps"
    (root / "prog").mkdir(parents=True)
    _run_program(py, str(root / "prog"), str(root / "prog.compiles.jsonl"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python")]
                                                      + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "newest-xla"), "--dumps", str(root), "--jax-python", py,
                        "--work", str(tmp_path / "work"), "--programs", "control_flow"],
                       env=env, capture_output=True, text=True, timeout=600)
    # --programs filters the generator programs; a directory of another name is not looked at
    assert "0 modules" in p.stdout, p.stdout + p.stderr
    os.rename(root / "prog", root / "control_flow")
    os.rename(root / "prog.compiles.jsonl", root / "control_flow.compiles.jsonl")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "newest-xla"), "--dumps", str(root), "--jax-python", py,
                        "--work", str(tmp_path / "work"), "--programs", "control_flow"],
                       env=env, capture_output=True, text=True, timeout=600)
    out = p.stdout
    rows = [line.split() for line in out.splitlines() if line.startswith("control_flow ")]
    n = sum(1 for _ in open(root / "control_flow.compiles.jsonl"))
    assert len(rows) == n >= 2, out + p.stderr
    assert {r[1].split(".", 1)[1] for r in rows} >= {"jit__lambda"}
    # the installed jax is one the parser reads: every column agrees
    for r in rows:
        assert r[2:6] == ["ok", "ok", "ok", "ok"], out
    assert f"{n} modules; parse ok {n}, memory equal {n}, flops equal {n}, bytes equal {n}, bytes within 1% {n}" in out, out
    assert p.returncode == 0
