"""The package as users get it: ``maturin build --release`` makes one abi3 wheel for Linux that
installs into a fresh virtual environment and runs there with no Rust toolchain anywhere on PATH.

The wheel is a full release build. It is built once per source state: the wheel goes to
``target/wheel-cache/<hash of every file that goes into it>/`` (``HLODUMP_WHEEL_CACHE``
overrides the directory) and cargo builds into the repository's ``target/``
(``CARGO_TARGET_DIR``), so a rebuild after a change is incremental and a rerun with nothing
changed only makes the venv (a few seconds). Skipped only when maturin is not installed (it is
in the ``test`` extra and is the build backend).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SAMPLE = DATA / "corpus" / "jax-0.10.2" / "control_flow"
BA_FILE = ROOT / "examples" / "reference_attention.tpu-buffer-assignment.txt"

pytestmark = pytest.mark.wheel
KEEP_WHEELS = 3


def _maturin() -> list[str] | None:
    if importlib.util.find_spec("maturin") is not None:
        return [sys.executable, "-m", "maturin"]
    exe = shutil.which("maturin")
    return [exe] if exe else None


def _sources() -> list[Path]:
    """Every file the wheel is made from (the Rust crate, the Python package, the metadata)."""
    out = [ROOT / n for n in ("Cargo.toml", "Cargo.lock", "pyproject.toml", "README.md") if (ROOT / n).exists()]
    out += sorted((ROOT / "src").rglob("*.rs"))
    pkg = ROOT / "python" / "hlodump"
    out += sorted(p for p in pkg.rglob("*") if p.is_file() and p.suffix in (".py", ".pyi", ".typed")
                  and "__pycache__" not in p.parts)
    return out


def source_hash() -> str:
    h = hashlib.sha256()
    for p in _sources():
        h.update(str(p.relative_to(ROOT)).encode() + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:20]


def _no_rust_env(extra_path: list[str]) -> dict[str, str]:
    """The environment with every directory holding cargo/rustc/rustup removed from PATH (and
    the cargo/rustup variables dropped): the installed package must not need them."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CARGO", "RUSTUP", "RUSTC", "RUSTFLAGS", "PYTHON", "VIRTUAL_ENV", "MATURIN"))}
    keep = []
    for d in env.get("PATH", "").split(os.pathsep):
        if not d or ".cargo" in Path(d).parts or any((Path(d) / t).exists() for t in ("cargo", "rustc", "rustup")):
            continue
        keep.append(d)
    env["PATH"] = os.pathsep.join(extra_path + keep)
    return env


def build_wheel() -> tuple[Path, float]:
    """The wheel of the current sources (built now or found in the cache); seconds spent."""
    cache = Path(os.environ.get("HLODUMP_WHEEL_CACHE", ROOT / "target" / "wheel-cache")) / source_hash()
    found = sorted(cache.glob("*.whl"))
    if found:
        return found[0], 0.0
    maturin = _maturin()
    assert maturin is not None
    tmp = cache.with_name(cache.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "target"))
    t0 = time.perf_counter()
    r = subprocess.run([*maturin, "build", "--release", "--out", str(tmp), "--manifest-path", str(ROOT / "Cargo.toml")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    spent = time.perf_counter() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    try:
        tmp.rename(cache)  # another run may have won the race: then use its wheel
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    # keep the wheels of the last few source states only
    old = sorted((p for p in cache.parent.iterdir() if p.is_dir() and ".tmp-" not in p.name),
                 key=lambda p: p.stat().st_mtime, reverse=True)
    for p in old[KEEP_WHEELS:]:
        if p != cache:
            shutil.rmtree(p, ignore_errors=True)
    return sorted(cache.glob("*.whl"))[0], spent


@pytest.fixture(scope="module")
def wheel() -> tuple[Path, float]:
    if _maturin() is None:
        pytest.skip("maturin is not installed (pip install maturin; it is in the test extra)")
    return build_wheel()


def test_one_abi3_wheel_for_linux(wheel: tuple[Path, float]) -> None:
    path, spent = wheel
    print(f"\nwheel {path.name} ({path.stat().st_size / 1e6:.1f} MB), built in {spent:.0f} s (0: cached)")
    assert re.fullmatch(r"hlodump-[0-9.]+-cp39-abi3-(manylinux|musllinux|linux)_[0-9a-z_.]+\.whl", path.name), path.name
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        exts = [n for n in names if n.endswith(".so")]
        assert exts == ["hlodump/_core.abi3.so"], exts  # one extension, the stable-ABI one
        for n in ("hlodump/__init__.py", "hlodump/py.typed", "hlodump/_core.pyi", "hlodump/cli/__init__.py",
                  "hlodump/reference/reader.py", "hlodump/_repr.py", "hlodump/io/plan.py", "hlodump/outputs/html_report.py",
                  "hlodump/schemas.json"):
            assert n in names, n
        dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL"))
        assert "Tag: cp39-abi3-" in z.read(f"{dist}/WHEEL").decode()
        assert re.search(r"^hlodump\s*=\s*hlodump\.cli:run$", z.read(f"{dist}/entry_points.txt").decode(), re.M)
        meta = z.read(f"{dist}/METADATA").decode()
        for dep in ("pyarrow", "numpy", "duckdb", "rich"):
            assert re.search(rf"^Requires-Dist: {dep}\b", meta, re.M), dep
        so = z.getinfo("hlodump/_core.abi3.so").file_size
    assert so < 40_000_000, f"the extension is {so / 1e6:.0f} MB: not stripped?"


def test_wheel_installs_and_runs_without_rust(wheel: tuple[Path, float], tmp_path: Path) -> None:
    t0 = time.perf_counter()
    path, _ = wheel
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    py, binp = venv / "bin" / "python", venv / "bin"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # The dependencies (pyarrow, numpy, duckdb, rich, tqdm) come from this test's environment, added
    # *after* the venv's own site-packages (a plain path: its .pth files, e.g. an editable
    # hlodump, are not run), so no download is needed and the wheel's hlodump is the one found.
    dep_dirs = []
    for mod in ("pyarrow", "numpy", "duckdb", "rich", "tqdm"):
        spec = importlib.util.find_spec(mod)
        assert spec is not None and spec.origin, mod
        dep_dirs.append(str(Path(spec.origin).parent.parent))
    (Path(site) / "_hlodump_test_deps.pth").write_text("\n".join(dict.fromkeys(dep_dirs)) + "\n")
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(path)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr

    env = _no_rust_env([str(binp)])
    assert shutil.which("cargo", path=env["PATH"]) is None and shutil.which("rustc", path=env["PATH"]) is None
    script = f"""
import json, os, hlodump, hlodump._core, pyarrow.compute as pc
assert hlodump.__file__.startswith({str(venv)!r}), hlodump.__file__
assert hlodump._core.__file__.endswith("_core.abi3.so") and hlodump._core.__file__.startswith({str(venv)!r})
d = hlodump.read_arrow({str(SAMPLE)!r})
fusions = d.instructions.filter(pc.field("opcode") == "fusion").num_rows
print(json.dumps({{"rows": {{k: d.views[k].num_rows for k in d}}, "fusions": fusions}}))
"""
    r = subprocess.run([str(py), "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])

    import pyarrow.compute as pc

    import hlodump

    here = hlodump.read_arrow(SAMPLE)
    assert got["rows"] == {k: here.views[k].num_rows for k in here}
    assert got["rows"]["instructions"] > 0 and got["rows"]["allocations"] > 0
    assert got["fusions"] == here.instructions.filter(pc.field("opcode") == "fusion").num_rows > 0

    exe = binp / "hlodump"

    def cli(*args: str) -> str:
        r = subprocess.run([str(exe), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout

    counts = dict(ln.split() for ln in cli("tables", str(SAMPLE)).splitlines() if ln.strip())
    assert {k: int(v.replace(",", "")) for k, v in counts.items()} == got["rows"]
    ba = hlodump.read_arrow(BA_FILE)
    assert json.loads(cli("tables", "--json", str(BA_FILE))) == {k: ba.views[k].num_rows for k in ba}
    assert "peak" in cli("summary", str(BA_FILE)).lower()
    print(f"\nvenv, install and runs: {time.perf_counter() - t0:.1f} s")
