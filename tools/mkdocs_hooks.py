"""MkDocs hooks of the documentation site (mkdocs.yml: ``hooks``).

Pages hold markers that are replaced, at build time, by text generated from the package itself,
so nothing on the site is a hand-made copy that can go stale:

* ``<!-- hlodump:column-reference -->`` — ``hlodump.schema.markdown()``, every table and column
  as the Rust core defines them (the text docs/API.md ends with);
* ``<!-- hlodump:help COMMAND -->`` — ``hlodump COMMAND --help`` (``hlodump:help`` alone: the
  top-level help), from ``hlodump.cli.build_parser()``, 100 columns wide;
* ``<!-- hlodump:changelog -->`` — CHANGELOG.md of the repository root without its title, its
  links into ``docs/`` made relative to the site.

A marker the hook does not know is an error, so ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

MARKER = re.compile(r"<!-- hlodump:([a-z-]+)(?: ([a-z-]+))? -->")


def _subparsers(parser: Any) -> dict[str, Any]:
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(command: str | None) -> str:
    from hlodump.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal width: fix it for the site
    try:
        parser = build_parser()
        if command is not None:
            subs = _subparsers(parser)
            if command not in subs:
                raise ValueError(f"no hlodump command {command!r} (have: {', '.join(subs)})")
            parser = subs[command]
        text = parser.format_help()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "```text\n" + text.rstrip() + "\n```\n"


def _replace(m: re.Match[str]) -> str:
    what, arg = m.group(1), m.group(2)
    if what == "column-reference" and arg is None:
        from hlodump.schema import markdown

        return markdown()
    if what == "help":
        return _help(arg)
    if what == "changelog" and arg is None:
        text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
        text = text.split("\n", 1)[1] if text.startswith("# ") else text  # the page has its own title
        return text.replace("](docs/", "](")
    raise ValueError(f"unknown marker {m.group(0)}")


# A generated block checked in between its marker and an end marker (GitHub shows the text; the
# site's build replaces it with a fresh copy): docs/tables.md's column reference (issue 51).
BLOCK = re.compile(r"<!-- hlodump:column-reference -->\n.*?<!-- /hlodump:column-reference -->\n?", re.S)


def column_reference_block() -> str:
    from hlodump.schema import markdown

    return "<!-- hlodump:column-reference -->\n" + markdown().rstrip("\n") + "\n<!-- /hlodump:column-reference -->\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = BLOCK.sub(lambda m: _replace(MARKER.match(m.group(0))) + "\n", markdown)  # type: ignore[arg-type]
    return MARKER.sub(_replace, markdown)


def write_column_reference(path: Path = ROOT / "docs" / "tables.md") -> bool:
    """Refresh the checked-in column reference of ``path``; True if it changed."""
    text = path.read_text(encoding="utf-8")
    new = BLOCK.sub(lambda m: column_reference_block(), text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":  # python tools/mkdocs_hooks.py --write
    import sys

    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tools/mkdocs_hooks.py --write (refreshes docs/tables.md's column reference)")
    print("docs/tables.md: " + ("refreshed" if write_column_reference() else "up to date"))
