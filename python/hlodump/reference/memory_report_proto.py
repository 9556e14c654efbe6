"""The memory-usage report as a proto (``*-memory-usage-report.pb``, written with
``--xla_dump_hlo_as_proto``; the reference of ``src/hlo_proto/memory_report.rs``).

Each allocation entry carries the offset table XLA prints for it, so the report is printed back
as its text twin (``Memory Space: …`` / ``Total bytes: …`` / the tables) and read by the
memory-report parser: the same ``memory_report`` and ``totals`` rows as the text.
"""

from __future__ import annotations

from typing import Any

from .lines import split_lines
from .protowire import ProtoError, decode_listing, unknown_note, varint_at

__all__ = ["is_memory_report_proto", "render", "parse", "human_bytes"]


def is_memory_report_proto(data: bytes) -> bool:
    """Content rule: ``0a <len> 08 <total_bytes> (10|1a)`` (a memory space's total, then its
    color or its first entry) and, within the first 64 KiB, an entry's printed table header."""
    if not data.startswith(b"\x0a"):
        return False
    r = varint_at(data, 1)
    if r is None or r[0] == 0 or r[1] >= len(data) or data[r[1]] != 0x08:
        return False
    t = varint_at(data, r[1] + 1)
    if t is None or t[1] >= len(data) or data[t[1]] not in (0x10, 0x1A):
        return False
    return b"cumulative_size;" in data[:1 << 16]


def human_bytes(n: int) -> str:
    """``tsl::strings::HumanReadableNumBytes``: ``512B``, ``61.0KiB``, ``1.14MiB``."""
    if n < 0:
        return "-" + human_bytes(-n) if n != -(1 << 63) else "-8.00EiB"
    if n < 1024:
        return f"{n}B"
    units = "KMGTPE"
    u = 0
    v = float(n)
    while v >= 1024.0 * 1024.0 and u < len(units) - 1:
        v /= 1024.0
        u += 1
    return ("%.1f%siB" if units[u] == "K" else "%.2f%siB") % (v / 1024.0, units[u])


def render(m: dict) -> str:
    out = []
    for sp in m.get("memory_space_allocation_entries", []):
        color = sp.get("memory_space_color", 0)
        # XLA names color 0 "default"; other colors are printed by number (no sample names them)
        name = "default" if color == 0 else str(color)
        total = sp.get("total_bytes", 0)
        out.append(f"Memory Space: {name} (color={color})\n")
        out.append(f"Total bytes: {total} ({human_bytes(total)})\n")
        for e in sp.get("allocation_entries", []):
            out.append(e.get("table", "") + "\n")
        out.append("\n")
    return "".join(out)


def parse(data: bytes, ctx: Any) -> None:
    from . import memory_report

    try:
        m, listing = decode_listing(data, "MemoryUsageReport")
    except ProtoError as e:
        ctx.error(1, e.offset + 1, f"not a valid memory-usage report proto: {e}", "")
        return
    # the text is at most a few dozen bytes per byte of proto (each line printed is paid for by
    # the entry or space it comes from): no budget needed
    raw = render(m).encode("utf-8", "surrogatepass")
    memory_report.parse(split_lines(raw, ctx), ctx)
    unknown_note(listing, ctx)
