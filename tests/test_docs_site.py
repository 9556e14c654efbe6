"""The documentation site (mkdocs.yml, docs/) and the README that points to it (issue 40, item 8).

* ``mkdocs build --strict`` succeeds with no warning (a broken link, a page left out of the
  navigation, a docstring mkdocstrings cannot read, an unknown generation marker all fail it),
  and the generated parts are on the built pages: every command's ``--help``, the column
  reference of every table, the changelog, the API reference;
* every ``hlodump`` command has a page in the navigation, which shows its ``--help``;
* README.md stays short (< 250 lines), keeps its two top commands, the screenshot, and links
  that all lead to files of the repository; every command of its tour runs as written;
* CHANGELOG.md is at the root in keep-a-changelog form.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _commands() -> list[str]:
    from hlodump.cli import build_parser

    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    raise AssertionError("hlodump has no subcommands")


def _nav_pages() -> list[str]:
    """Every page path named in mkdocs.yml's nav (the file is YAML; the nav entries are
    ``- Title: path.md`` lines, read without a YAML library)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:\n", 1)[1]
    return re.findall(r":\s*([\w./-]+\.md)\s*$", nav, flags=re.M)


# ------------------------------------------------------------------------------ the site build

@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for mod in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(mod.split(".")[0]) is None or importlib.util.find_spec(mod) is None:
            if os.environ.get("CI"):  # CI installs the test extra, which has them: never skip there
                pytest.fail(f"{mod} not installed in CI (the test extra of pyproject.toml lists it)")
            pytest.skip(f"{mod} not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                        "--site-dir", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    log = p.stdout + p.stderr
    assert p.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not warnings, "\n".join(warnings)
    return out


def test_site_builds_strict(site: Path) -> None:
    assert (site / "index.html").is_file()
    for page in _nav_pages():
        stem = page[:-3]
        html = site / (stem[: -len("index")] if stem.endswith("index") else stem + "/") / "index.html"
        assert html.is_file(), f"{page} was not built"


def test_site_shows_each_commands_help(site: Path) -> None:
    for c in _commands():
        html = (site / "cli" / c / "index.html").read_text(encoding="utf-8")
        assert f"usage: hlodump {c}" in html, c
    top = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "exit status:" in top and "usage: hlodump" in top


def test_site_column_reference_is_generated(site: Path) -> None:
    from hlodump.schema import SCHEMAS

    html = (site / "tables" / "index.html").read_text(encoding="utf-8")
    for name, schema in SCHEMAS.items():
        assert f"<strong>{name}</strong>" in html, name
        for field in schema:
            assert f"<code>{field.name}</code>" in html, (name, field.name)


def test_site_changelog_and_api(site: Path) -> None:
    html = (site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "Unreleased" in html and "hlodump:changelog" not in html
    # a link CHANGELOG.md makes into docs/ leads to the page on the site
    assert 'href="../protos/"' in html
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for ident in ("hlodump.read_arrow", "hlodump.scan.scan", "hlodump.Dump", "hlodump.analysis.summary.summary",
                  "hlodump.analysis.peaks", "hlodump.analysis.collectives", "hlodump._core.read"):
        assert f'id="{ident}"' in api, ident
    # read_arrow's parameters come from its docstring
    assert "max_decompressed_bytes" in api and "on_error" in api


def test_unknown_marker_fails_the_build() -> None:
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "tools" / "mkdocs_hooks.py")
    assert spec and spec.loader
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    assert "usage: hlodump cost" in hooks.on_page_markdown("<!-- hlodump:help cost -->", None, None, None)
    with pytest.raises(ValueError, match="no hlodump command"):
        hooks.on_page_markdown("<!-- hlodump:help nosuch -->", None, None, None)
    with pytest.raises(ValueError, match="unknown marker"):
        hooks.on_page_markdown("<!-- hlodump:nosuch -->", None, None, None)


# ------------------------------------------------------------------------------ pages

def test_every_command_has_a_page() -> None:
    nav = _nav_pages()
    for c in _commands():
        page = DOCS / "cli" / f"{c}.md"
        assert page.is_file(), f"no page docs/cli/{c}.md for `hlodump {c}`"
        assert f"cli/{c}.md" in nav, f"docs/cli/{c}.md is not in mkdocs.yml's nav"
        text = page.read_text(encoding="utf-8")
        assert f"<!-- hlodump:help {c} -->" in text, f"docs/cli/{c}.md does not show `hlodump {c} --help`"
        assert text.startswith(f"# hlodump {c}\n")
    assert sorted(p[len("cli/"):-3] for p in nav if p.startswith("cli/") and p != "cli/index.md") == sorted(_commands())


def test_pages_the_issue_asks_for() -> None:
    nav = _nav_pages()
    for page in ("install.md", "peaks.md", "tables.md", "api.md", "performance.md", "changelog.md",
                 "cookbook/oom-gpu.md", "cookbook/oom-tpu.md", "cookbook-memory-after-upgrade.md",
                 "cookbook/spmd-collectives.md", "cookbook/per-pass.md", "protos.md"):
        assert page in nav, page
        assert (DOCS / page).is_file(), page
    peaks = (DOCS / "peaks.md").read_text(encoding="utf-8")
    for name in ("peak in use", "XLA's listed peak", "jax's peak_memory_in_bytes"):
        assert name in peaks, name
    assert "<!-- hlodump:column-reference -->" in (DOCS / "tables.md").read_text(encoding="utf-8")
    assert "<!-- hlodump:changelog -->" in (DOCS / "changelog.md").read_text(encoding="utf-8")


def test_performance_page_keeps_the_figures() -> None:
    """README's Performance part moved to docs/performance.md whole: its tables and targets."""
    perf = (DOCS / "performance.md").read_text(encoding="utf-8")
    for fact in ("python benches/analysis.py --copies 1 5", "| 1,045 | 76.0 | `summary(d)` (with cost) |",
                 "python benches/make_inputs.py --scale full && python benches/run.py",
                 "**4 GB in ≤ 4 s**", "Instructions per byte, exact (callgrind"):
        assert fact in perf, fact


# ------------------------------------------------------------------------------ README

def test_readme_is_short_and_keeps_its_parts() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) < 250, f"README.md has {len(lines)} lines (at most 249: the rest belongs on the site)"
    for marker in ("<!-- example-command -->", "<!-- test-command -->"):
        i = lines.index(marker)
        assert lines[i + 1] == "```sh" and lines[i + 3] == "```", marker
    assert lines[lines.index("<!-- example-command -->") + 2].startswith("python3 -m pip install")
    assert "![hlodump report" in text and "](docs/report.png)" in text and (DOCS / "report.png").is_file()
    assert "## Changelog" not in text and "## Performance" not in text
    assert "(CHANGELOG.md)" in text


def test_readme_links_lead_to_files() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [u for u in links if "://" not in u]
    assert len(local) >= 20
    for u in local:
        assert (ROOT / u).exists(), f"README links to {u}, which does not exist"
    for c in _commands():
        assert f"(docs/cli/{c}.md)" in text, f"README does not link the page of `hlodump {c}`"


def _tour() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## A tour\n", 1)[1].split("\n## ", 1)[0]


def _tour_commands() -> list[list[str]]:
    """README's tour commands that run on the repository's files (placeholders such as
    OLD_DUMP, and ``record`` of a program, left out)."""
    sh = _tour().split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [shlex.split(line, comments=True) for line in sh.splitlines() if line.startswith("hlodump ")]
    assert len(commands) >= 8
    return [argv[1:] for argv in commands if argv[1] != "record" and not any(re.fullmatch(r"[A-Z_]{3,}", a) for a in argv)]


def test_readme_tour_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """README's tour: its Python lines run as written from the repository root; its commands
    run in ``test_page_commands_run`` (with the pages' own, each once)."""
    assert {c[0] for c in _tour_commands()} >= {"summary", "report", "cost", "comms", "passes", "query"}
    monkeypatch.chdir(ROOT)
    py = _tour().split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(py, "README.md (tour)", "exec"), {})


def _page_commands() -> list[list[str]]:
    """Every one-line ``hlodump …`` command of a ```sh block of the pages, once each, that runs
    on the repository's own files: lines with a placeholder (DIR, OLD_DUMP, oom.log …), a
    program to run, /tmp or object-store paths are left out (the multi-line SQL of docs/sql.md
    is run by tests/test_cli.py; ``hlodump fit … --target`` lines by tests/test_fit.py)."""
    seen: dict[tuple[str, ...], None] = {}
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
            for line in block.replace("\\\n", " ").split("\n"):
                if not line.startswith("hlodump "):
                    continue
                try:
                    argv = shlex.split(line, comments=True)
                except ValueError:  # a quoted SQL text continued on the next lines
                    continue
                if any(re.fullmatch(r"[A-Z_]{3,}/?", a) or a.startswith(("/tmp", "s3:", "gs:", "run_")) or a.endswith(".py")
                       or a == "--" for a in argv):
                    continue
                if "oom.log" in argv:  # the recipe's name for "your log"
                    continue
                if "--target" in argv:  # a compile for a TPU/GPU: tests/test_fit.py runs these with libtpu
                    continue
                seen[tuple(argv[1:])] = None
    return [list(a) for a in seen]


def test_page_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The commands the pages and README's tour show run as written (exit status 0), so a
    renamed option or a moved file shows here, not to a reader."""
    pytest.importorskip("plotly")
    pytest.importorskip("matplotlib")
    from hlodump.cli import main

    commands = _page_commands()
    assert len(commands) >= 15
    commands += [c for c in _tour_commands() if c not in commands]
    assert {c[0] for c in commands} >= {"summary", "plot", "report", "diff", "cost", "comms", "passes", "tables", "query"}
    monkeypatch.chdir(ROOT)
    for argv in commands:
        argv = [str(tmp_path / Path(a).name) if a.endswith((".html", ".png", ".csv")) else a for a in argv]
        argv = [str(tmp_path / "export") if i and argv[i - 1] == "--model-explorer" else a for i, a in enumerate(argv)]
        assert main(argv) == 0, argv
        capsys.readouterr()


def test_python_page_memory_analysis_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/python.md says its memory-analysis lines run as they are from the repository root."""
    text = (DOCS / "python.md").read_text(encoding="utf-8")
    section = text.split("\n## Memory analysis\n", 1)[1].split("\n## ", 1)[0]
    assert "These run as they are from the repository root" in section
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    exec(compile("import hlodump\n" + code, "docs/python.md (memory analysis)", "exec"), {})


def test_sql_page_queries_are_checked() -> None:
    """The worked queries moved from README to docs/sql.md; tests/test_cli.py runs them."""
    src = (ROOT / "tests" / "test_cli.py").read_text(encoding="utf-8")
    assert '"docs", "sql.md"' in src


# ------------------------------------------------------------------------------ CHANGELOG

def test_changelog_is_keep_a_changelog() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    assert "keepachangelog.com" in text
    heads = re.findall(r"^## (.+)$", text, flags=re.M)
    assert heads[0] == "[Unreleased]" and "[0.1.0]" in heads
    subs = set(re.findall(r"^### (.+)$", text, flags=re.M))
    assert subs <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"} and subs
    assert "(issue 40" in text
