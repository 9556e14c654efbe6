"""What the benches read about this process (Linux): memory from /proc/self/status, the
mappings of the inputs from /proc/self/maps."""

from __future__ import annotations

import os


def status() -> dict:
    """VmHWM, VmRSS, RssAnon, RssFile in bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) * 1024
    return out


def rss_anon() -> int:
    """Anonymous resident memory (what the process allocated; mapped files are not in it)."""
    return status().get("RssAnon", 0)


def mapped_ranges(paths: list[str]) -> list[tuple[int, int]]:
    """Address ranges of the file-backed mappings of ``paths`` (Linux: /proc/self/maps)."""
    real = {os.path.realpath(p) for p in paths}
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].strip() in real:
                a, b = parts[0].split("-")
                out.append((int(a, 16), int(b, 16)))
    return out


def union_len(spans: list[tuple[int, int]]) -> int:
    """Bytes covered by (address, length) spans, overlaps counted once."""
    total, end = 0, 0
    for a, n in sorted(spans):
        lo, hi = max(a, end), a + n
        if hi > lo:
            total += hi - lo
        end = max(end, hi)
    return total
