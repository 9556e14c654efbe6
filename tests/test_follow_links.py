"""``--follow-links`` / ``follow_links=True`` on a folder of symlinks (issue 40, item 4): without
it the links out of the folder are files not read and every message that says "nothing to
analyse" says so (which files, why, and the option that reads them); with it they are read,
each file once, cycles included, within ``max_files``. Real files and links in tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA

import hlodump
from hlodump.io.paths import WalkLimitError

SRC = Path(DATA) / "memory_analysis" / "jax-0.10.2"
COMMANDS = ["tables", "query", "convert", "summary", "plot", "diff", "cost", "comms", "passes", "report"]


def _hlodump(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlodump", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture()
def links(tmp_path: Path) -> Path:
    """links/: a symlink to every file of SRC, a link to itself, and out/ -> a folder outside
    whose back/ leads into links/ again (a cycle through the outside)."""
    d = tmp_path / "links"
    d.mkdir()
    for f in sorted(SRC.iterdir()):
        os.symlink(f, d / f.name)
    os.symlink(d, d / "self")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(d, outside / "back")
    os.symlink(outside, d / "out")
    return d


def test_without_the_option_the_reason_is_said(links: Path) -> None:
    n = len(list(SRC.iterdir()))
    p = _hlodump("summary", str(links))
    assert p.returncode == 1, p.stderr
    assert "leaves the directory read" in p.stderr
    assert f"({n + 1} of them are symlinks out of the directory read: --follow-links reads them)" in p.stderr
    for cmd in ("summary", "cost", "passes", "report"):
        extra = ["-o", str(links.parent / "r.html")] if cmd == "report" else []
        p = _hlodump(cmd, "--keep-going", str(links), *extra)
        assert p.returncode == 2, (cmd, p.stderr)
        assert "could not be read" in p.stderr and "--follow-links reads them" in p.stderr, (cmd, p.stderr)
        assert "Traceback" not in p.stderr
    # the API says it too
    d = hlodump.read_arrow(links, on_error="collect")
    with pytest.raises(ValueError, match="could not be read"):
        from hlodump.outputs import html_report

        html_report.report(d, str(links.parent / "r.html"))


def test_follow_links_reads_each_file_once_through_cycles(links: Path) -> None:
    want = hlodump.read_arrow(SRC)
    got = hlodump.read_arrow(links, follow_links=True)
    assert got["allocations"].num_rows == want["allocations"].num_rows
    errs = {p: e for p, e in zip(got["files"].column("path").to_pylist(), got["files"].column("error").to_pylist()) if e}
    # the link to itself and the way back from outside meet the folder again: notes, not failures
    assert errs == {"self": "OSError: same directory as .", "out/back": "OSError: same directory as ."}
    p = _hlodump("summary", "--follow-links", str(links))
    assert p.returncode == 0, p.stderr
    assert "modules" in p.stdout
    # scan takes it too
    n = sum(b.num_rows for b in hlodump.scan(links, "allocations", follow_links=True))
    assert n == want["allocations"].num_rows


def test_follow_links_is_bounded(links: Path) -> None:
    with pytest.raises(WalkLimitError):
        hlodump.read_arrow(links, follow_links=True, max_files=5)


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_reading_command_takes_the_option(cmd: str) -> None:
    p = _hlodump(cmd, "--help")
    assert p.returncode == 0 and "--follow-links" in p.stdout, p.stdout
