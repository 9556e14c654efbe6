"""Memory readings of this process from /proc/self/status (Linux), shared by the benches."""

from __future__ import annotations


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
