"""``hlodump.capture`` and ``hlodump record`` against jax's own figures of the same compile.

Every program of ``capture_programs.py`` (a plain function, donated and static arguments of a
``jax.jit`` function, a ``Lowered``, a ``Traced``, keyword arguments, SPMD over 8 host devices)
is compiled once; ``hlodump.analysis.summary`` of its dump must give exactly the
``Compiled.memory_analysis()`` figures of that compile. The installed jax runs ``hlodump.capture``
itself (in a subprocess: 8 host devices need ``XLA_FLAGS`` before jax starts); two more releases
run capture's jax half (``compile_into``) in the project's cached venvs and we read their dumps.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap

import pytest

import hlodump
from hlodump import analysis as A
from hlodump.capture import CaptureError

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "capture_programs.py")
CAPTURE_PY = os.path.join(os.path.dirname(hlodump.__file__), "capture.py")
PYPATH = os.path.dirname(os.path.dirname(hlodump.__file__))
WANTED = {"plain", "donated", "static", "lowered", "kwargs", "spmd"}


def _run_programs(python: str, out: str, full: bool) -> list[dict]:
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=8")
    if full:
        env["PYTHONPATH"] = PYPATH
    else:
        env.pop("PYTHONPATH", None)
    p = subprocess.run([python, PROGRAMS, CAPTURE_PY, out] + (["--capture"] if full else []), env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def _compare(ours: dict, jax_figures: dict, program: str) -> None:
    common = [k for k in jax_figures if k in ours]
    assert len(common) >= 8, (program, sorted(ours), sorted(jax_figures))
    assert {k: ours[k] for k in common} == {k: jax_figures[k] for k in common}, program


def test_capture_installed_jax(tmp_path) -> None:
    pytest.importorskip("jax")
    recs = _run_programs(sys.executable, str(tmp_path), full=True)
    assert WANTED <= {r["program"] for r in recs}
    for r in recs:
        _compare(r["ours"], r["figures"], r["program"])
    donated = next(r for r in recs if r["program"] == "donated")
    assert donated["ours"]["alias_size_in_bytes"] > 0  # donation was honoured
    spmd = next(r for r in recs if r["program"] == "spmd")
    assert spmd["devices"] == 8


@pytest.mark.parametrize("version", ["0.5.3", "0.8.3"])
def test_capture_other_release(version: str, tmp_path) -> None:
    from test_memory_analysis import _venv_python

    recs = _run_programs(_venv_python(version), str(tmp_path), full=False)
    assert WANTED <= {r["program"] for r in recs}
    for r in recs:
        assert r["jax"] == version
        d = hlodump.read_arrow(r["dir"])
        (s,) = A.summary(d, top=0)
        _compare(s["memory_analysis"], r["figures"], r["program"])


# --------------------------------------------------------------------------------- in process

@pytest.fixture(scope="module")
def jax():
    return pytest.importorskip("jax")


def test_capture_in_process(jax, tmp_path) -> None:
    import jax.numpy as jnp

    x = jnp.ones((16, 32))
    before = os.environ.get("XLA_FLAGS")
    d = hlodump.capture(lambda a: jnp.tanh(a @ a.T).sum(), x, passes=True)
    assert os.environ.get("XLA_FLAGS") == before
    (s,) = A.summary(d, top=0)
    ma = d.compiled.memory_analysis()
    for k, v in s["memory_analysis"].items():
        if hasattr(ma, k):
            assert getattr(ma, k) == v, k
    t = A.passes(d)
    assert t.num_rows >= 5 and set(t.column("module").to_pylist()) == {s["module"]}
    # the temporary directory lives as long as the Dump; tables taken from it outlive it
    where, instructions = d.dump_dir, d.instructions
    assert os.path.isdir(where)
    del d, s
    gc.collect()
    assert not os.path.exists(where)
    assert instructions.num_rows > 0 and all(isinstance(n, str) for n in instructions.column("name").to_pylist())


def test_capture_dump_to(jax, tmp_path) -> None:
    import jax.numpy as jnp

    out = tmp_path / "dump"
    f = jax.jit(lambda a: a * 2 + 1)
    x = jnp.ones((8,))
    d1 = hlodump.capture(f, x, dump_to=out)
    d2 = hlodump.capture(jax.jit(lambda a: a - 1), x, dump_to=out)
    (m1,), (m2,) = A._module_list(d1), A._module_list(d2)
    assert m1.module_id != m2.module_id  # each Dump holds its own compile only
    listing = sorted(os.listdir(out))
    # ordinary compiles of the process do not dump
    jax.jit(lambda a: a / 3)(x).block_until_ready()
    assert sorted(os.listdir(out)) == listing
    with pytest.raises(CaptureError, match="compilation cache"):
        hlodump.capture(f, x, dump_to=out)  # the same compile again: jax's cache, XLA writes nothing
    del d1, d2
    gc.collect()
    assert sorted(os.listdir(out)) == listing  # dump_to is kept


def test_capture_bad_input(jax) -> None:
    import jax.numpy as jnp

    x = jnp.ones((4,))
    compiled = jax.jit(lambda a: a + 1).lower(x).compile()
    with pytest.raises(TypeError, match="Compiled"):
        hlodump.capture(compiled)
    with pytest.raises(TypeError, match="arguments"):
        hlodump.capture(jax.jit(lambda a: a + 1).lower(x), x)
    with pytest.raises(TypeError, match="not int"):
        hlodump.capture(3)


def test_import_without_jax() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["jax"] = None          # as if jax were not installed
        import hlodump
        assert "jaxlib" not in sys.modules
        try:
            hlodump.capture(lambda x: x, 1)
        except ImportError as e:
            print(e)
        else:
            raise SystemExit("no error")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=PYPATH))
    assert p.returncode == 0, p.stderr
    assert 'pip install "hlodump[jax]"' in p.stdout
    p = subprocess.run([sys.executable, "-c", "import hlodump, sys; print('jax' in sys.modules)"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=PYPATH))
    assert p.stdout.strip() == "False", p.stderr


# --------------------------------------------------------------------------------- record

def _record(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlodump.cli", "record", *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_record(jax, tmp_path) -> None:
    script = tmp_path / "tiny.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        import jax, jax.numpy as jnp
        print("FLAGS", os.environ["XLA_FLAGS"])
        print("DEVICES", jax.device_count())
        x = jnp.ones((128, 128))
        jax.jit(lambda a: jnp.tanh(a @ a).sum())(x).block_until_ready()
        jax.jit(lambda a: a + 1)(jnp.ones((4,))).block_until_ready()
        sys.exit(int(sys.argv[1]))
    """))
    env = dict(os.environ, PYTHONPATH=PYPATH, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2 --xla_dump_to=/nonexistent/elsewhere")
    out = tmp_path / "rec"
    p = _record("-o", str(out), "--", sys.executable, str(script), "0", env=env)
    assert p.returncode == 0, p.stderr
    assert "DEVICES 2" in p.stdout  # the user's flags were kept …
    assert f"--xla_dump_to={out}" in p.stdout and "/nonexistent" not in p.stdout  # … and ours replace theirs
    assert f"dump kept in {out}" in p.stdout
    d = hlodump.read_arrow(str(out))
    s = {m["module"]: m for m in A.summary(d, top=0)}
    assert any("lambda" in k for k in s)
    listed = [ln.split()[0] for ln in p.stdout.splitlines() if ln.startswith("module_")]
    assert sorted(listed) == sorted(s)
    sizes = [s[k]["total_bytes"] or 0 for k in listed]
    assert sizes == sorted(sizes, reverse=True)  # largest first
    # --json, a temporary directory, the program's exit status
    p = _record("--json", "--", sys.executable, str(script), "3", env=env)
    assert p.returncode == 3
    rec = json.loads(p.stdout[p.stdout.index("{\n"):])
    assert os.path.isdir(rec["dump"]) and rec["status"] == 3 and rec["modules"]
    assert {m["module"] for m in rec["modules"]} == set(s)  # same programs, same module names
    p = _record("--", "no-such-command-xyz", env=env)
    assert p.returncode == 2 and "no such command" in p.stderr and "Traceback" not in p.stderr
    p = _record(env=env)
    assert p.returncode == 2 and "no command" in p.stderr


_RUN_SCRIPT = textwrap.dedent("""
    import os, subprocess, sys, time
    import jax, jax.numpy as jnp

    def compile_named(name):
        f = lambda a: jnp.tanh(a * 2.0).sum()
        f.__name__ = name
        jax.jit(f).lower(jnp.ones((64,))).compile()

    what = sys.argv[1]
    if what == "first":
        for n in ("first_a", "first_b", "first_c"):
            compile_named(n)
    elif what == "second":
        compile_named("second_x")
    elif what == "parent":  # a worker process that compiles too, with the same XLA_FLAGS
        subprocess.run([sys.executable, __file__, "child"], check=True)
        compile_named("shared")
    elif what == "child":
        compile_named("shared")
    elif what == "sleep":
        compile_named("sleeper")
        print("READY", os.getpid(), flush=True)
        time.sleep(300)
""")


def test_record_reports_this_run_only_and_passes_signals_on(jax, tmp_path) -> None:
    """Issue 50, item 6: ``record -o`` into an earlier run's folder reads only what this run
    wrote (it listed the earlier run's modules as this program's); two processes dumping the
    same file names are said (the parent's files overwrote the child's without a word);
    SIGTERM / SIGINT to ``hlodump record`` are passed on to the program and it is waited for
    (hlodump died with 143, no message, the program ran on, orphaned)."""
    import signal
    import time

    script = tmp_path / "run.py"
    script.write_text(_RUN_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYPATH, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    out = tmp_path / "rec"
    first = _record("-o", str(out), "--json", "--", sys.executable, str(script), "first", env=env)
    assert first.returncode == 0, first.stderr
    mods = [m["module"] for m in json.loads(first.stdout[first.stdout.index("{\n"):])["modules"]]
    assert sum("first_" in m for m in mods) == 3
    assert "written more than once" not in first.stderr and "could not be checked" not in first.stderr, first.stderr
    second = _record("-o", str(out), "--json", "--", sys.executable, str(script), "second", env=env)
    assert second.returncode == 0, second.stderr
    rec = json.loads(second.stdout[second.stdout.index("{\n"):])
    mods = [m["module"] for m in rec["modules"]]
    assert any("second_x" in m for m in mods) and not any("first_" in m for m in mods), mods
    assert rec["earlier_files_left_out"] > 0 and "of an earlier run in" in second.stderr
    # a child process dumping the same module names into the same folder: said
    both = _record("-o", str(tmp_path / "both"), "--json", "--", sys.executable, str(script), "parent", env=env)
    assert both.returncode == 0, both.stderr
    assert "written more than once during the run" in both.stderr, both.stderr
    twice = json.loads(both.stdout[both.stdout.index("{\n"):])["written_twice"]
    assert any(".jit_shared." in f for f in twice), twice
    # SIGTERM, then SIGINT (sent by kill, as a job control or a supervisor sends it)
    for sig, status, said in ((signal.SIGTERM, 143, "stopped by SIGTERM (passed on to"),
                              (signal.SIGINT, 130, "hlodump: interrupted")):
        p = subprocess.Popen([sys.executable, "-m", "hlodump.cli", "record", "-o", str(tmp_path / sig.name), "--",
                              sys.executable, str(script), "sleep"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
        child = None
        try:
            line = p.stdout.readline()
            assert line.startswith("READY"), (line, p.stderr.read() if p.poll() is not None else "")
            child = int(line.split()[1])
            p.send_signal(sig)
            _, err = p.communicate(timeout=60)
            # (the program's own KeyboardInterrupt traceback is the program's; none of hlodump's)
            assert p.returncode == status and said in err and "hlodump/" not in err, (p.returncode, err)
            time.sleep(0.2)
            with pytest.raises(ProcessLookupError):  # ended and reaped: not left running
                os.kill(child, 0)
        finally:
            if p.poll() is None:
                p.kill()
            if child is not None:
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def test_merge_xla_flags() -> None:
    from hlodump.cli.passes import merge_xla_flags

    assert merge_xla_flags(None, "/d", False) == "--xla_dump_to=/d"
    assert merge_xla_flags("--a=1 --xla_dump_to=/x  --b", "/d", True) == \
        "--a=1 --b --xla_dump_to=/d --xla_dump_hlo_pass_re=.*"
    assert merge_xla_flags("--xla_dump_hlo_pass_re=foo", "/d", False) == "--xla_dump_hlo_pass_re=foo --xla_dump_to=/d"
