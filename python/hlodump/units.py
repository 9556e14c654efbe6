"""One way to print a number, for every command, page and picture (issue 40).

* **Bytes** in IEC units (powers of 1024), as XLA prints them: ``576B``, ``51.1KiB``,
  ``220.17MiB``, ``1.50GiB``. Never kB/MB: one value is one text everywhere.
* **FLOPs** and **rates** in SI units (powers of 1000): ``1.23 GFLOP``, ``989.40 TFLOP/s``,
  ``3.35 TB/s`` (device data sheets quote bandwidth in SI; a byte *count* stays IEC).
* **Times** with their unit: ``1.50 s``, ``12.30 ms``, ``4.56 µs``, ``102.6 ns``.
* **Counts**: ``1,234,567``.

``binary_step`` / ``binary_ticks`` put axis ticks on round binary values (``0, 256MiB,
512MiB…``, never ``95.37MiB``); the report page's script mirrors these functions (``fmtBytes``,
``fmtSI``, ``fmtSecs``, ``binaryTicks`` in ``_report_page``), so a figure reads the same in the
terminal, the page and the PNG.

The memory figures have one name each (``docs/peaks.md``): ``PEAK_IN_USE``,
``XLA_LISTED_PEAK``, ``JAX_PEAK`` are the words every command and page uses for them.
"""

from __future__ import annotations

import math
from typing import Any, Optional

__all__ = ["format_bytes", "format_si", "format_flops", "format_rate", "format_seconds", "format_count",
           "format_number", "binary_step", "binary_ticks", "format_bytes_tick",
           "PEAK_IN_USE", "XLA_LISTED_PEAK", "JAX_PEAK", "XLA_PEAK_MEMORY", "jax_peak_name",
           "XLA_PEAK_ABOVE_ALLOCATED"]

#: The most bytes live at one step, each allocation slice counted once (the timeline's maximum).
PEAK_IN_USE = "peak in use"
#: The sum of XLA's ``Live ranges at T (peak)`` list (buffer assignment's peak buffers).
XLA_LISTED_PEAK = "XLA's listed peak"
#: jax's ``memory_analysis().peak_memory_in_bytes``.
JAX_PEAK = "jax's peak_memory_in_bytes"
#: The same figure for a module another framework compiled (TensorFlow, PyTorch/XLA): XLA's
#: ``CompiledMemoryStats``, which jax's ``memory_analysis()`` reports and the others do not name.
XLA_PEAK_MEMORY = "XLA's peak_memory_in_bytes"


def jax_peak_name(framework: Optional[str]) -> str:
    """The name of the peak_memory_in_bytes figure of a module ``framework`` compiled (as
    ``analysis.summary`` tells it: ``"jax"``, ``"tensorflow"``, ``"pytorch/xla"`` or None):
    jax's own word for jax and unknown modules, XLA's for the other frameworks (issue 51)."""
    if framework in ("tensorflow", "pytorch/xla"):
        return f"{XLA_PEAK_MEMORY} (CompiledMemoryStats; a {'TensorFlow' if framework == 'tensorflow' else 'PyTorch/XLA'} module)"
    return JAX_PEAK


#: Why XLA's listed peak may be more than the module allocates (printed wherever it is).
XLA_PEAK_ABOVE_ALLOCATED = ("XLA's listed peak adds up each live value's shape size: values that share one "
                            "allocation slice (aliases, in-place updates, tuple elements) are each counted, so it "
                            "can be more than the module allocates; the peak in use counts each slice once")

_IEC = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_SI = (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _not_finite(v: Any) -> bool:
    return isinstance(v, float) and not math.isfinite(v)


def _special(v: Any, missing: str) -> Optional[str]:
    """What every formatter shows for no figure (``missing``) and for an infinite one
    (``unknown``); None for a number to format."""
    if _is_missing(v):
        return missing
    if _not_finite(v):
        return "unknown"
    return None


def format_bytes(n: Optional[float], missing: str = "-") -> str:
    """Bytes in IEC units as XLA prints them: ``12B``, ``51.1KiB``, ``220.17MiB``; ``missing``
    (``-``) for None."""
    special = _special(n, missing)
    if special is not None:
        return special
    assert n is not None
    sign = "-" if n < 0 else ""
    v = float(abs(n))
    if v < 1024:
        return f"{sign}{int(round(v))}B"
    for i, unit in enumerate(_IEC):
        v /= 1024.0
        if v < 1024 or unit == "EiB":
            return f"{sign}{v:.1f}{unit}" if i == 0 else f"{sign}{v:.2f}{unit}"
    return f"{sign}{n}B"  # pragma: no cover


def format_bytes_tick(n: float) -> str:
    """An axis tick's bytes: ``0``, ``512KiB``, ``1.5GiB`` (no trailing zeros: ticks are round)."""
    if n == 0:
        return "0"
    v, unit = float(abs(n)), "B"
    for u in _IEC:
        if v < 1024:
            break
        v /= 1024.0
        unit = u
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return ("-" if n < 0 else "") + text + unit


def format_si(v: Optional[float], unit: str = "", missing: str = "-") -> str:
    """A count in SI units: ``1.23 G`` + ``unit`` (``format_si(2.5e9, "FLOP")`` → ``2.50 GFLOP``);
    below 1000 the number as it is (``12 FLOP``, ``0.5 FLOP``)."""
    special = _special(v, missing)
    if special is not None:
        return special
    assert v is not None
    a = abs(v)
    for prefix, scale in _SI:
        if a >= scale:
            return f"{v / scale:.2f} {prefix}{unit}".rstrip()
    text = f"{v:,.0f}" if float(v).is_integer() else f"{v:.3g}"
    return f"{text} {unit}".rstrip()


def format_flops(v: Optional[float], missing: str = "-") -> str:
    """FLOPs in SI: ``1.23 GFLOP``."""
    return format_si(v, "FLOP", missing)


def format_rate(v: Optional[float], unit: str = "FLOP", missing: str = "-") -> str:
    """A rate per second in SI: ``989.40 TFLOP/s``, ``3.35 TB/s`` (``unit="B"``)."""
    if _is_missing(v):
        return missing
    return format_si(v, unit) + "/s"


def format_seconds(v: Optional[float], missing: str = "-") -> str:
    """A time with its unit: ``1.50 s``, ``12.30 ms``, ``4.56 µs``, ``102.6 ns``, ``0 s``."""
    special = _special(v, missing)
    if special is not None:
        return special
    assert v is not None
    a = abs(v)
    if a == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if a >= scale:
            return f"{v / scale:.2f} {unit}"
    if a >= 1e-10:
        return f"{v / 1e-9:.1f} ns"
    return f"{v / 1e-9:.2g} ns"


def format_count(n: Optional[float], missing: str = "-") -> str:
    """A count with thousands separators: ``1,234,567``."""
    if _is_missing(n):
        return missing
    assert n is not None
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.4g}"


def format_number(v: Optional[float], missing: str = "-") -> str:
    """Any other figure (a ratio, an intensity): four significant digits, never a raw float
    (``12.35``, ``0.0001026``, ``1.234e+07``)."""
    if _is_missing(v):
        return missing
    assert v is not None
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:.4g}"


def binary_step(vmax: float, max_ticks: int = 8) -> float:
    """The distance between axis ticks for bytes up to ``vmax``: 1, 2 or 5 (… 500) times a power
    of 1024, the smallest with at most ``max_ticks`` intervals: ticks fall on round KiB/MiB/GiB
    (the report page's ``binaryTicks`` picks the same steps)."""
    vmax = max(float(vmax), 1.0)
    unit = 1.0
    while vmax / unit >= 1024 and unit < 1024.0 ** 6:
        unit *= 1024
    span = vmax / unit
    for s in (1, 2, 5, 10, 20, 50, 100, 200, 500):
        if span / s <= max_ticks:
            return s * unit
    return 1024 * unit


def binary_ticks(vmax: float, max_ticks: int = 8) -> list[float]:
    """Tick values from 0 to at least ``vmax`` on round binary values (``binary_step``)."""
    step = binary_step(vmax, max_ticks)
    n = int(math.ceil(max(float(vmax), 1.0) / step - 1e-9))
    return [i * step for i in range(n + 1)]
