"""The progress bar: on stderr when it is a terminal (checked under a pseudo-terminal), absent
when stderr is a pipe or with ``progress=False``, forced with ``progress=True``."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest

from conftest import DATA, ROOT

CORPUS = os.path.join(DATA, "corpus")
BAR = re.compile(
    r"hlodump [█·]{30} (\d+)/(\d+) files ([\d,.]+)/([\d,.]+) MiB ([\d,]+) MiB/s ETA ([\d,]+)s")

CHILD = """
import sys, hlodump
kw = eval(sys.argv[2])
d = hlodump.read_arrow(sys.argv[1], **kw)
print("files", d.files.num_rows, flush=True)
"""


def _run_in_pty(path: str, kw: str) -> tuple[str, str]:
    """Run CHILD with stderr (only) on a pseudo-terminal; return (stdout, what the tty got)."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-c", CHILD, path, kw], stdout=subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    out = p.stdout.read().decode() if p.stdout else ""
    assert p.wait(60) == 0, b"".join(chunks).decode(errors="replace")
    return out, b"".join(chunks).decode("utf-8", errors="replace")


def _run_piped(path: str, kw: str) -> tuple[str, str]:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", CHILD, path, kw], capture_output=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode(), p.stderr.decode()  # bytes: text mode would turn "\r" into "\n"


@pytest.fixture(autouse=True)
def _native() -> None:
    pytest.importorskip("hlodump._core")


def test_bar_shown_on_a_terminal() -> None:
    path = os.path.join(CORPUS, "jax-0.10.2")
    out, tty = _run_in_pty(path, "{}")
    n = int(out.split()[1])
    assert n == 543
    bars = BAR.findall(tty)
    assert bars, repr(tty)
    done, total, mb_done, mb_total, rate, eta = bars[-1]
    assert (int(done), int(total)) == (n, n)  # the last drawing: everything done
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    assert mb_done == mb_total == f"{size / 2**20:,.1f}"  # IEC, as every figure
    assert int(eta) == 0 and int(rate.replace(",", "")) >= 0
    # redrawn in place and ended by a newline; a shorter last drawing (the rate fell from two
    # digits to one) is padded with spaces to cover the longer one before it
    assert tty.count("\r") >= 1 and tty.endswith("\n") and tty.rstrip("\r\n ").endswith("s")


def test_bar_absent_with_progress_false_on_a_terminal() -> None:
    out, tty = _run_in_pty(os.path.join(CORPUS, "jax-0.10.2", "control_flow"), "{'progress': False}")
    assert out.split() == ["files", "120"]
    assert "hlodump" not in tty and tty.strip() == ""


def test_bar_absent_for_a_single_file_on_a_terminal() -> None:
    f = os.path.join(CORPUS, "jax-0.10.2", "control_flow", "module_0022.jit_branches.cpu_after_optimizations.txt")
    _, tty = _run_in_pty(f, "{}")
    assert tty.strip() == ""


def test_bar_absent_when_stderr_is_a_pipe() -> None:
    out, err = _run_piped(os.path.join(CORPUS, "jax-0.10.2", "control_flow"), "{}")
    assert out.split() == ["files", "120"]
    assert err == ""


def test_bar_forced_on_a_pipe() -> None:
    _, err = _run_piped(os.path.join(CORPUS, "jax-0.10.2", "control_flow"), "{'progress': True}")
    (last,) = BAR.findall(err.split("\r")[-1])
    assert last[:2] == ("120", "120") and err.endswith("\n")


def test_progress_bar_unit() -> None:
    from hlodump.io.progress import ProgressBar

    s = io.StringIO()
    bar = ProgressBar(4, 4 << 20, force=True, stream=s)  # 4 MiB
    assert bar.enabled
    bar.update(2, 1 << 20)  # first update draws
    m = BAR.search(s.getvalue())
    assert m and m.groups()[:4] == ("2", "4", "1.0", "4.0")
    assert int(m[6].replace(",", "")) >= 0
    bar.update(2, 3 << 20)  # the last file always draws
    assert BAR.findall(s.getvalue())[-1][:4] == ("4", "4", "4.0", "4.0")
    bar.close()
    assert s.getvalue().endswith("\n")
    # not a terminal and not forced: disabled, draws nothing
    s2 = io.StringIO()
    assert not ProgressBar(1, 1, stream=s2).enabled
