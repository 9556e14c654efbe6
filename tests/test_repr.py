"""``repr(dump)`` and ``Dump._repr_html_()`` (Jupyter): the facts, escaped, for any dump."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("hlodump._core")
import hlodump  # noqa: E402
from hlodump import _repr  # noqa: E402
from hlodump.schema import TABLE_NAMES  # noqa: E402

DATA = Path(__file__).parent / "data"
CF10 = DATA / "corpus" / "jax-0.10.2" / "control_flow"

EVIL_DIR = "<script>alert(1)<"  # with the file name below: <script>alert(1)</script>…
EVIL_FILE = 'script>&amp;"x\x1b[31m\u202e-buffer-assignment.txt'


def _evil_dump(tmp_path: Path, n_more: int = 0) -> Path:
    root = tmp_path / "dump"
    (root / EVIL_DIR).mkdir(parents=True)
    (root / EVIL_DIR / EVIL_FILE).write_text('garbage & "quoted" <b>bold</b> \x1b[2J\n')
    (root / "module_0001.a<i>.cpu_after_optimizations-buffer-assignment.txt").write_text(
        "BufferAssignment:\nallocation 0: size 4, oops <img src=x onerror=alert(2)>\n")
    for i in range(n_more):
        (root / f"module_{i + 2:04d}.m.cpu_after_optimizations-buffer-assignment.txt").write_text(f"junk {i}\n")
    return root


def test_text_and_html_state_the_facts() -> None:
    d = hlodump.read_arrow(CF10, progress=False)
    text, page = repr(d), d._repr_html_()
    files = d.views.files.to_pylist()
    n_dumps = len({f["dump"] for f in files})
    assert text.startswith(f"<hlodump.Dump: {len(files):,} files in {n_dumps} dump, ")
    kinds: dict[str, int] = {}
    for f in files:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    for kind, n in kinds.items():
        assert f"{kind} {n:,}" in text
        assert f"<code>{kind}</code> {n:,}" in page
    for name in TABLE_NAMES:
        t = d.views[name]
        own = _repr.arrow_bytes(t)
        row = re.search(rf"^  {name} +([\d,]+) +(\d+) +(.+?) +d\.{name}$", text, re.M)
        assert row, name
        assert (int(row.group(1).replace(",", "")), int(row.group(2))) == (t.num_rows, t.num_columns)
        assert row.group(3) == _repr.fmt_bytes(own)
        assert (f"<td>{name}</td><td>{t.num_rows:,}</td><td>{t.num_columns}</td><td>{_repr.fmt_bytes(own)}</td>"
                in page), name
        assert f"<code>d.{name}</code>" in page
    assert str(CF10) in text and html.escape(str(CF10)) in page
    assert "errors" in text and "d.to_polars()" in text and "d.to_duckdb()" in page
    assert "text referenced in the input buffers" in text
    # showing a dump makes no large_string copy
    assert not d._cast


def test_arrow_bytes_count_the_table_not_the_files_it_points_into() -> None:
    d = hlodump.read_arrow(CF10, progress=False, mmap=True)
    t = d.views.instructions
    own = _repr.arrow_bytes(t)
    assert own < t.nbytes / 5  # nbytes counts a whole mapped file per string_view column chunk
    numbers = sum(t.column(i).nbytes for i, f in enumerate(t.schema) if not pa.types.is_string_view(f.type)
                  and not pa.types.is_list(f.type))
    assert numbers < own


def test_copies_made_on_access_are_shown() -> None:
    d = hlodump.read_arrow(CF10, progress=False)
    assert "copy" not in repr(d).split("get it")[1].split("text")[0]
    d.instructions
    line = next(ln for ln in repr(d).splitlines() if ln.startswith("  instructions"))
    assert "copy" in line
    assert re.search(r"<td>instructions</td>(<td>[^<]*</td>){3}<td>[\d.]+(?:B|[KMG]iB)</td>", d._repr_html_())  # IEC units (hlodump.units)


def test_everything_from_the_dump_is_escaped(tmp_path: Path) -> None:
    root = _evil_dump(tmp_path)
    d = hlodump.read_arrow(root, on_error="collect", progress=False)
    paths = d.views.files.column("path").to_pylist()
    assert any(p.startswith("<script>alert(1)</script>&amp;") for p in paths), paths
    page = d._repr_html_()
    assert "<script" not in page and "<img" not in page and "<b>bold" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;&quot;x\\x1b[31m\\u202e" in page
    assert "\x1b" not in page and "\u202e" not in page
    assert "module_0001.a&lt;i&gt;.cpu_after_optimizations-buffer-assignment.txt:2:" in page
    text = repr(d)
    assert "\x1b" not in text and "\u202e" not in text
    assert '<script>alert(1)</script>&amp;"x\\x1b[31m\\u202e-buffer-assignment.txt:1:1: ' in text
    assert "errors: 2" in text and "errors: 2" in page


def test_empty_dump(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    d = hlodump.read_arrow(tmp_path / "empty")
    text, page = repr(d), d._repr_html_()
    assert text.startswith("<hlodump.Dump: no files read>")
    assert all(re.search(rf"^  {n} +0 ", text, re.M) for n in TABLE_NAMES)
    assert "errors:" not in text and 'class="err"' not in page
    assert page.count('<tr class="empty">') == len(TABLE_NAMES)
    for bare in (hlodump.Dump({}), hlodump.Dump({}, None)):  # not even a files table
        assert repr(bare).startswith("<hlodump.Dump: no files read>")
        assert "<table>" in bare._repr_html_()
    few = hlodump.read_arrow(DATA / "seeds" / "000_d4ec204070c56195.txt", tables=["allocations"])
    assert "not read (read_arrow(tables=...)): assignments, values" in repr(few)


def test_many_errors_are_cut_after_the_first_few(tmp_path: Path) -> None:
    d = hlodump.read_arrow(_evil_dump(tmp_path, n_more=6), on_error="collect", progress=False)
    n = d.views.errors.num_rows
    assert n == 8
    text, page = repr(d), d._repr_html_()
    assert f"errors: {n}" in text and f"… {n - _repr.FIRST} more (d.errors)" in text
    listed = page.split(f"errors: {n}")[1]
    assert listed.count("<li><code>") == _repr.FIRST and f"… {n - _repr.FIRST} more" in listed


def test_unreadable_files_are_listed(tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    (root / "module_0000.f.cpu_after_optimizations.txt").write_text("HloModule f\n")
    os.symlink(root / "nowhere", root / "dangling<b>.txt")
    d = hlodump.read_arrow(root, on_error="collect", progress=False)
    text, page = repr(d), d._repr_html_()
    assert "unreadable files: 1" in text and "dangling<b>.txt: " in text
    assert "<code>dangling&lt;b&gt;.txt</code>: " in page


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def test_html_renders_in_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    d = hlodump.read_arrow(_evil_dump(tmp_path), on_error="collect", progress=False)
    page = tmp_path / "repr.html"
    page.write_text("<!doctype html><meta charset=utf-8><body>" + d._repr_html_() + "</body>", encoding="utf-8")
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    dom = r.stdout
    assert "hlodump.Dump" in dom, r.stderr[-2000:]
    # parsed by a browser: no element came from the dump's text, every table row is there
    assert "<script" not in dom and "<img" not in dom and "<b>bold" not in dom
    assert dom.count("<tr") == len(TABLE_NAMES) + 1
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
