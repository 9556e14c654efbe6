"""Reference parser for XLA's out-of-memory reports (FORMATS.md §2.9): placeholder."""

from __future__ import annotations

from typing import Any

__all__ = ["parse"]


def parse(lines: list[str | None], ctx: Any) -> None:
    return None
