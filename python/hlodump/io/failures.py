"""What a read could not read, in words: the files that failed and why, the files read once
though reached twice, and why a read holds nothing to analyse — for the messages of the
command line and of the report ("nothing to analyse … (files read: …; 2 files could not be
read: …)"). Below both: the report must not import the command line."""

from __future__ import annotations

from typing import Any, Protocol

from ..cli_safety import escape_controls
from .plan import is_note


class Dump(Protocol):
    """What is read here of a ``hlodump.Dump`` (named so, not imported: the read path is below
    the table face): its tables by name, ``files`` among them."""

    def __getitem__(self, name: str) -> Any: ...

__all__ = ["failures", "notes", "listed", "symlinks_hint", "failed_files_note", "nothing_why"]


def failures(d: "Dump") -> list[tuple[str, str]]:
    """(path, why) of every file of ``d`` that could not be read as a whole (notes left out:
    a file read once though reached twice loses nothing)."""
    f = d["files"]
    return [(p, e) for p, e in zip(f.column("path").to_pylist(), f.column("error").to_pylist())
            if e is not None and not is_note(e)]


def notes(d: "Dump") -> list[tuple[str, str]]:
    """(path, why) of every file of ``d`` not read because the same file is read elsewhere."""
    f = d["files"]
    return [(p, e) for p, e in zip(f.column("path").to_pylist(), f.column("error").to_pylist()) if is_note(e)]


def listed(rows: list[tuple[str, str]], most: int = 10) -> str:
    """(path, why) rows, one indented line each, control characters escaped; the first
    ``most`` and how many more."""
    text = "\n".join(f"  {escape_controls(p, keep_newlines=False)}: {escape_controls(e, keep_newlines=False)}"
                     for p, e in rows[:most])
    return text + (f"\n  … {len(rows) - most:,} more" if len(rows) > most else "")


def symlinks_hint(bad: list[tuple[str, str]]) -> str:
    """A last line when some of ``bad`` are symlinks that leave the directory read."""
    n = sum(1 for _, e in bad if "leaves the directory read" in e)
    if not n:
        return ""
    return (f"\n  ({n:,} of them {'are symlinks' if n != 1 else 'is a symlink'} out of the directory read: "
            "--follow-links reads them)")


def failed_files_note(d: "Dump") -> str:
    """For "nothing to analyse": the files that could not be read, and why ("" if none)."""
    bad = failures(d)
    if not bad:
        return ""
    return f"; {len(bad):,} file{'s' if len(bad) != 1 else ''} could not be read:\n" + listed(bad) + symlinks_hint(bad)


def nothing_why(d: "Dump") -> str:
    """Why a read holds nothing to analyse, for the end of that message: the kinds of the files
    that were read (those that failed left out) and every file that failed, with its reason."""
    f = d["files"]
    kinds = sorted({k for k, e in zip(f.column("kind").to_pylist(), f.column("error").to_pylist())
                    if e is None or is_note(e)} - {None})
    read_ = f"files read: {', '.join(kinds)}" if kinds else "no file read"
    return f" ({read_})" + failed_files_note(d)
