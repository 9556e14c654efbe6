"""Will it fit? (issue 48): per module (the program every device of an SPMD compile runs), its
peak against the device's memory, and what makes the peak, by source line.

``fit(d)`` answers for any dump that names its device (a TPU dump's ``topology.textproto`` or
``target_arguments.txt``, a GPU dump's ``gpu_target_config.pbtxt``: ``device_capacity``), made by
``hlodump.capture(fn, *args, target="tpu:v5e:2x4")`` or by jax anywhere else:

* the figure: jax's ``peak_memory_in_bytes`` as the buffer assignment gives it (``buffers``:
  the main memory's parameters, outputs and constants plus the largest heap of temporaries, as
  XLA's heap simulator counts it — the figure jax's ``memory_analysis()`` reports on TPU and GPU,
  equal to it on every compile of tests/data/accel); a dump without live ranges falls back to
  the bytes it allocates in the main memory (``figure`` says which);
* the verdict against ``capacity_bytes``: ``fits: 13.62GiB of 15.75GiB HBM (86%)`` or
  ``does not fit by 8.25GiB (24.00GiB of 15.75GiB HBM, 152%)``;
* every memory space's peak in use (HBM, VMEM, SMEM, pinned host …; the capacity is known for
  the main memory only);
* the top source lines at the peak in use of the main memory (``peak_buffers``), each with its
  bytes, its share of the peak and its largest buffers.

A compile that failed with jax's compile-time out-of-memory error (E1000) still wrote its buffer
assignment: ``hlodump.capture(..., target=...)`` raises ``CaptureError`` whose ``.dump`` answers
here with "does not fit by …". A ``Dump`` from ``capture`` carries jax's own ``memory_analysis()``
(``jax_memory_analysis``): ``jax_peak_memory_in_bytes`` is that figure, to compare.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Optional

from .capacity import device_capacity
from .modules import ModuleSel, scope_of

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["fit", "fit_text"]


def _fb(n: Optional[int]) -> str:
    from ..units import format_bytes

    return format_bytes(n)


def _pct(part: int, whole: int) -> str:
    p = 100 * part / whole
    return f"{p:.0f}%" if p >= 1 else f"{p:.2f}%"


def verdict(peak: Optional[int], capacity: Optional[int], space: str) -> tuple[Optional[bool], str]:
    """(fits, the sentence) for a peak against a capacity."""
    if peak is None:
        return None, "no peak: the dump has no buffer assignment for this module"
    if not capacity:
        return None, f"peak {_fb(peak)}; the device's memory is unknown (the dump does not name its device)"
    if peak <= capacity:
        return True, f"fits: {_fb(peak)} of {_fb(capacity)} {space} ({_pct(peak, capacity)})"
    return False, (f"does not fit by {_fb(peak - capacity)} ({_fb(peak)} of {_fb(capacity)} {space}, "
                   f"{_pct(peak, capacity)})")


_UNIT = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# libtpu's compile-time OOM, two wordings (sizes binary: FORMATS.md §2.9.3)
_REQUIRED = re.compile(r"required for [^(]*\(([0-9.]+)([BKMGT])\) exceeds available \w+ \(([0-9.]+)([BKMGT])\)")
_USED = re.compile(r"Used ([0-9.]+)([BKMGT]) of ([0-9.]+)([BKMGT]) (\w+)")


def compiler_oom(text: Optional[str]) -> Optional[tuple[int, int]]:
    """(required, available) bytes of a compile-time out-of-memory message, or None."""
    if not text or ("RESOURCE_EXHAUSTED" not in text and "Ran out of memory" not in text):
        return None
    m = _REQUIRED.search(text) or _USED.search(text)
    if m is None:
        return None
    return (round(float(m.group(1)) * _UNIT[m.group(2)]), round(float(m.group(3)) * _UNIT[m.group(4)]))


def _top_lines(rows: list[dict[str, Any]], peak_in_use: int, top: int) -> list[dict[str, Any]]:
    """The buffers of the main memory's peak in use grouped by source line (a slice shared by
    several values counted once, with its largest value's line)."""
    seen: set[tuple[Any, Any, Any]] = set()
    lines: dict[str, dict[str, Any]] = {}
    for r in rows:  # largest first
        key = (r["allocation"], r["offset"], r["bytes"])
        if key in seen:
            continue
        seen.add(key)
        src = r.get("source") or (f"({r['category']}: {r.get('op_name') or r['instruction']})"
                                  if r.get("category") in ("parameter", "output", "constant")
                                  else f"(no source line: {r.get('op_name') or r['instruction']})")
        g = lines.setdefault(src, {"source": src, "bytes": 0, "buffers": 0, "share": 0.0, "largest": []})
        g["bytes"] += int(r["bytes"])
        g["buffers"] += 1
        if len(g["largest"]) < 3:
            g["largest"].append({"buffer": r["buffer"], "bytes": int(r["bytes"]), "shape": r.get("shape"),
                                 "category": r.get("category"), "op_name": r.get("op_name")})
    out = sorted(lines.values(), key=lambda g: (-g["bytes"], g["source"]))[:top]
    for g in out:
        g["share"] = round(g["bytes"] / peak_in_use, 6) if peak_in_use else 0.0
    return out


def fit(dump: "Dump", module: ModuleSel = None, top: int = 10) -> list[dict[str, Any]]:
    """Per module: does its peak fit the device's memory? (plain data, JSON-ready)

    Keys: ``module``, ``module_name``, ``platform`` (tpu, gpu, cpu, unknown), ``device_kind``,
    ``memory_space`` (``HBM`` on TPU, ``device memory`` on GPU), ``capacity_bytes`` (None when
    the dump does not name its device) and ``capacity_source``; ``peak_bytes`` and ``figure``
    (``"jax's peak_memory_in_bytes"``, from the buffer assignment, or ``"allocated"`` where the
    dump has no live ranges); ``jax_peak_memory_in_bytes`` (jax's own figure, from a ``Dump`` of
    ``hlodump.capture``; None otherwise); ``fits`` (True, False, None: unknown), ``over_bytes``
    (how much it does not fit by; 0 when it fits), ``free_bytes``, ``verdict`` (the sentence);
    ``peak_in_use`` (the most bytes live at one step in the main memory) at ``peak_in_use_step``;
    ``spaces``: per memory space ``memory_space``, ``color``, ``peak_bytes`` (its peak in use),
    ``allocated_bytes``, ``capacity_bytes`` (the main memory's only); ``top_lines``: the ``top``
    source lines holding the most bytes at the peak in use (``source``, ``bytes``, ``buffers``,
    ``share`` of the peak in use, ``largest``: up to 3 buffers); ``devices`` (the target's device
    count, from ``capture(..., target=)``; None otherwise) and ``compile_error`` (the compiler's
    message when the compile failed: ``CaptureError.dump``)."""
    from .summary import summary
    from .peak import peak_buffers

    sc = scope_of(dump, module)
    sums = summary(dump, sc.keys, top=0, cost=False)
    caps = {r["module"]: r for r in device_capacity(dump).to_pylist()}
    try:
        buf_rows = peak_buffers(dump, sc.keys).to_pylist()
    except Exception:  # a dump without live ranges: no buffers at a peak
        buf_rows = []
    by_mod: dict[str, list[dict[str, Any]]] = {}
    for r in buf_rows:
        by_mod.setdefault(r["module"], []).append(r)
    jax_ma = getattr(dump, "jax_memory_analysis", None)
    tgt = getattr(dump, "target", None)
    error = getattr(dump, "compile_error", None)
    out = []
    for s in sums:
        key = s["module"]
        ma = s.get("memory_analysis") or {}
        tl = s.get("timeline") or {}
        cap = caps.get(key)
        plat = s.get("platform") or "unknown"
        space = "HBM" if plat == "tpu" else "device memory" if plat == "gpu" else "memory"
        peak: Optional[int]
        if ma.get("peak_memory_in_bytes") is not None and plat in ("tpu", "gpu"):
            from ..units import jax_peak_name

            peak, figure = int(ma["peak_memory_in_bytes"]), jax_peak_name(s.get("framework"))
        else:
            main = [sp for sp in (s.get("memory_spaces") or []) if sp.get("color") == 0]
            fallback = tl.get("max_allocated_bytes") or s.get("total_bytes")
            peak = int(main[0]["allocated_bytes"]) if main else (int(fallback) if fallback is not None else None)
            figure = "allocated"
        capacity = int(cap["capacity_bytes"]) if cap else None
        fits, text = verdict(peak, capacity, space)
        oom = compiler_oom(error) if isinstance(error, str) else None
        if oom is not None and fits is not False:
            # the compiler refused it (its figure counts what the buffer assignment does not
            # show: fragmentation, its own reserves): its word is the verdict
            need, have = oom
            fits = False
            text = (f"does not fit by {_fb(max(need - have, 0))}: the compiler needs {_fb(need)} of the {_fb(have)} "
                    f"{space} it has (its out-of-memory error); the buffer assignment's peak is {_fb(peak)}")
        in_use = tl.get("max_allocated_bytes")
        spaces = []
        for sp in tl.get("memory_spaces") or []:
            spaces.append({"memory_space": sp["memory_space"], "color": sp["color"],
                           "peak_bytes": sp["max_live_bytes"], "allocated_bytes": sp["allocated_bytes"],
                           "capacity_bytes": capacity if sp["color"] == 0 else None})
        out.append({
            "module": key, "module_name": s["module_name"], "platform": plat,
            "device_kind": cap["device_kind"] if cap else None, "memory_space": space,
            "capacity_bytes": capacity, "capacity_source": cap["source"] if cap else None,
            "peak_bytes": peak, "figure": figure,
            "jax_peak_memory_in_bytes": (jax_ma or {}).get("peak_memory_in_bytes") if len(sums) == 1 else None,
            "fits": fits, "over_bytes": (max(oom[0] - oom[1], 0) if oom is not None and peak is not None and capacity
                                         and peak <= capacity else
                                         max(peak - capacity, 0) if peak is not None and capacity else None),
            "free_bytes": (max(capacity - peak, 0) if peak is not None and capacity else None),
            "verdict": text, "peak_in_use": in_use, "peak_in_use_step": tl.get("max_allocated_step"),
            "spaces": spaces, "top_lines": _top_lines(by_mod.get(key, []), int(in_use or 0), top),
            "devices": tgt.spec.devices if tgt is not None else None,
            "target": tgt.name if tgt is not None else None,
            "compile_error": error.strip().splitlines()[0] if isinstance(error, str) and error.strip() else None,
        })
    return out


def _shown(source: str) -> str:
    """A source path under the working directory, relative to it (as the user named the file)."""
    import os

    path, colon, line = source.rpartition(":")
    if not colon or not os.path.isabs(path):
        return source
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return source
    return source if rel.startswith("..") else f"{rel}:{line}"


def fit_text(rows: list[dict[str, Any]]) -> str:
    """``fit``'s answer as the terminal shows it (``hlodump fit``)."""
    lines: list[str] = []
    for r in rows:
        head = f"{r['module']}"
        if r.get("target"):
            head += f" on {r['target']}" + (f" ({r['devices']} devices, per device)" if r.get("devices") else "")
        if r.get("device_kind"):
            head += f" — {r['device_kind']}"
        lines.append(head)
        if r.get("compile_error"):
            lines.append(f"  the compile failed: {r['compile_error']}")
        lines.append(f"  {r['verdict']}")
        fig = r["figure"]
        lines.append(f"  peak: {r['peak_bytes']:,} bytes ({fig}, from the buffer assignment)"
                     if r["peak_bytes"] is not None else "  peak: unknown")
        if r.get("jax_peak_memory_in_bytes") is not None:
            j = int(r["jax_peak_memory_in_bytes"])
            same = "equal" if j == r["peak_bytes"] else f"differs by {r['peak_bytes'] - j:+,} bytes"
            lines.append(f"  jax's memory_analysis().peak_memory_in_bytes: {j:,} bytes ({same})")
        if r["spaces"]:
            lines.append("  peak in use per memory space:")
            for sp in r["spaces"]:
                cap = f" of {_fb(sp['capacity_bytes'])}" if sp.get("capacity_bytes") else ""
                lines.append(f"    {sp['memory_space']:<16} {_fb(sp['peak_bytes']):>10}{cap}")
        if r["top_lines"]:
            lines.append(f"  at the peak in use ({_fb(r['peak_in_use'])}, step {r['peak_in_use_step']}), by source line:")
            for g in r["top_lines"]:
                big = ", ".join(f"{b['buffer']} {b['shape'] or ''}".rstrip() for b in g["largest"][:2])
                lines.append(f"    {_fb(g['bytes']):>10} {100 * g['share']:5.1f}%  {g['source']}  "
                             f"({g['buffers']} buffer{'s' if g['buffers'] != 1 else ''}: {big})")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
