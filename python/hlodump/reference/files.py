"""File-name classification (FORMATS.md §1) and content sniffing — placeholder, being written."""
from __future__ import annotations


def classify(basename: str) -> dict:
    return {"kind": "other", "module_id": None, "module_name": None, "stage": None, "backend": None,
            "pass_index": None, "pipeline": None, "after_pass": None, "before_pass": None, "substep": None}


def sniff(data: bytes) -> str:
    for raw in data.split(b"\n"):
        s = raw.strip()
        if not s:
            continue
        if raw.startswith(b"HloModule "):
            return "hlo_module"
        if raw.startswith(b"BufferAssignment:"):
            return "buffer_assignment"
        if raw.startswith(b"Total bytes used: "):
            return "buffer_assignment_values"
        if raw.startswith(b"HloLiveRange"):
            return "live_range"
        if raw.startswith(b"Memory Space: ") or raw.startswith(b"memory_space_allocation_entries"):
            return "memory_usage_report"
        return "unknown"
    return "empty"
