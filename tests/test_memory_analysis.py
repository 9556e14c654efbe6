"""``memory_analysis`` against jax's own ``Compiled.memory_analysis()``.

Offline: the programs of ``tools/corpus/generators/gen_memory.py`` (donated arguments,
while/scan/cond/switch, sorting, gather/scatter, linear algebra, convolution, reductions, tuple
outputs, pass-through aliases, SPMD over 8 host devices) as recorded under six jax releases.
Live: the same programs compiled now with the installed jax, and with two more releases
installed into cached virtual environments (``~/.cache/hlodump/jax-venvs/jax-V``); a release
that cannot be installed fails the test with pip's message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv

import pytest

from conftest import DATA

from hlodump import analysis as A

MA = os.path.join(DATA, "memory_analysis")
GEN = os.path.join(os.path.dirname(__file__), os.pardir, "tools", "corpus", "generators", "gen_memory.py")
VERSIONS = sorted(d for d in os.listdir(MA) if d.startswith("jax-"))
FIELDS = A.MEMORY_ANALYSIS_FIELDS + ("peak_memory_in_bytes",)

# Releases compiled live besides the installed one, with the pins of the corpus generators
# (/work/shared/corpus/generators/README.md; numpy etc. as the corpus venvs had them).
LIVE_RELEASES = {
    "0.5.3": ["jax==0.5.3", "jaxlib==0.5.3", "ml_dtypes==0.6.0", "numpy==2.4.6", "scipy==1.17.1"],
    "0.8.3": ["jax==0.8.3", "jaxlib==0.8.3", "ml_dtypes==0.6.0", "numpy==2.4.6", "scipy==1.17.1"],
}


def compare(directory: str, reader=None) -> tuple[int, list[str]]:
    """(programs compared, differences) of one generator output directory."""
    recs = [json.loads(line) for line in open(os.path.join(directory, "memory_analysis.jsonl"), encoding="utf-8")]
    read = reader or __import__("hlodump").read_arrow
    d = read(directory, tables=["allocations"], on_error="collect")
    got: dict[str, list[dict]] = {}
    for m in A.memory_analysis(d):
        got.setdefault(m["module_name"], []).append(m)
    n, problems = 0, []
    for r in recs:
        if "argument_size_in_bytes" not in r:
            problems.append(f"{r['program']}: jax gave no memory_analysis ({r.get('memory_analysis_error') or r.get('compile_error')})")
            continue
        mods = got.get(r["module_name"], [])
        if len(mods) != 1:
            problems.append(f"{r['program']}: {len(mods)} modules named {r['module_name']} in the dump")
            continue
        ma = mods[0]["memory_analysis"]
        for k in FIELDS:
            if k in r and (ma or {}).get(k) != r[k]:
                problems.append(f"{r['program']} {k}: ours {(ma or {}).get(k)} != jax {r[k]}")
        n += 1
    return n, problems


def test_enough_releases_and_programs() -> None:
    assert len(VERSIONS) >= 3
    for v in VERSIONS:
        with open(os.path.join(MA, v, "memory_analysis.jsonl"), encoding="utf-8") as fh:
            assert sum(1 for _ in fh) >= 10, v


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded(version: str, reader) -> None:
    n, problems = compare(os.path.join(MA, version), reader)
    assert not problems, "\n".join(problems)
    assert n >= 10


def test_field_names_in_summary() -> None:
    import hlodump

    d = hlodump.read_arrow(os.path.join(MA, "jax-0.10.2"), tables=["allocations", "assignments", "totals"])
    (s,) = A.summary(d, "jit_mem_donated_update", top=0)
    ma = s["memory_analysis"]
    assert set(A.MEMORY_ANALYSIS_FIELDS) <= set(ma)
    assert ma["alias_size_in_bytes"] == 4096 and ma["argument_size_in_bytes"] == 8192


def _run_generator(python: str, out: str) -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu", OUT=out,
               XLA_FLAGS=f"--xla_dump_to={out} --xla_force_host_platform_device_count=8")
    env.pop("PYTHONPATH", None)
    p = subprocess.run([python, GEN], env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_live_installed_jax(tmp_path) -> None:
    """The programs compiled by the jax installed with the test extras (``.[test,xla]``)."""
    pytest.importorskip("hlodump._core")
    try:
        import jax  # noqa: F401
    except ImportError:
        pytest.fail("jax is not installed: pip install -e '.[test,xla]' installs it")
    _run_generator(sys.executable, str(tmp_path))
    n, problems = compare(str(tmp_path))
    assert not problems, "\n".join(problems)
    assert n >= 10


def _venv_python(version: str) -> str:
    """A cached virtual environment with jax ``version`` (created on first use)."""
    root = os.path.join(os.path.expanduser("~"), ".cache", "hlodump", "jax-venvs", f"jax-{version}")
    py = os.path.join(root, "bin", "python")
    check = [py, "-c", f"import jax, jaxlib; assert jax.__version__ == {version!r}"]
    if os.path.exists(py) and subprocess.run(check, capture_output=True).returncode == 0:
        return py
    if os.path.islink(root):
        pytest.fail(f"{root} is a symlink to a venv without jax {version}: remove it")
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    p = subprocess.run([py, "-m", "pip", "install", "-q", *LIVE_RELEASES[version]], capture_output=True, text=True,
                       timeout=900)
    if p.returncode != 0:
        pytest.fail(f"could not install jax {version} into {root}: {p.stderr[-3000:]}")
    if subprocess.run(check, capture_output=True).returncode != 0:
        pytest.fail(f"jax {version} installed into {root} but does not import")
    return py


@pytest.mark.parametrize("version", sorted(LIVE_RELEASES))
def test_live_other_release(version: str, tmp_path) -> None:
    """The programs compiled by other jax releases, each in its own cached venv."""
    pytest.importorskip("hlodump._core")
    _run_generator(_venv_python(version), str(tmp_path))
    n, problems = compare(str(tmp_path))
    assert not problems, "\n".join(problems)
    assert n >= 10
