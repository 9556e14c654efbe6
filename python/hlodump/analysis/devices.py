"""Accelerator presets for the roofline: published peak FLOP/s per data type and memory bandwidth.

Figures are the vendors' dense (no structured sparsity) peaks per chip, as published on the
pages cited in ``source``. ``matrix`` is the matrix unit (tensor cores, MXU, matrix cores: dots
and convolutions); ``vector`` is everything else where the vendor publishes it. TPU pages
publish only the MXU peaks (bf16, int8); for other data types and for non-matrix work the roofline
falls back as ``Device.peak`` says and reports what it used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Union

__all__ = ["Device", "DEVICES", "device", "named_by", "named_by_backend"]

T = 1e12


@dataclass(frozen=True)
class Device:
    """One accelerator: peaks in FLOP/s (per data type), bandwidth in bytes/s."""

    name: str
    memory_bandwidth: float
    matrix: dict[str, float] = field(default_factory=dict)
    vector: dict[str, float] = field(default_factory=dict)
    source: str = ""
    uniform: Optional[float] = None  # one peak for every type and unit (given explicitly)

    def peak(self, dtype: Optional[str], matrix: bool) -> tuple[Optional[float], str]:
        """(peak FLOP/s, which figure) for work of ``dtype`` on the matrix unit or not.

        Falls back: the unit's figure for the type; f32 on a matrix unit without an f32 figure
        takes tf32 if published; a missing vector figure takes the matrix one; an unknown type
        takes bf16 (the most common published figure)."""
        if self.uniform is not None:
            return self.uniform, "given"
        dt = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "s8": "int8", "u8": "int8",
              "f8e4m3fn": "fp8", "f8e5m2": "fp8", "f8e4m3": "fp8", "f8e5m2fnuz": "fp8", "f8e4m3fnuz": "fp8",
              "c64": "f32", "c128": "f64"}.get(dtype or "", dtype or "bf16")
        units = (("matrix", self.matrix), ("vector", self.vector)) if matrix else (("vector", self.vector), ("matrix", self.matrix))
        for unit_name, unit in units:
            if dt in unit:
                return unit[dt], f"{unit_name} {dt}"
            if dt == "f32" and unit_name == "matrix" and "tf32" in unit:
                return unit["tf32"], "matrix tf32"
        for unit_name, unit in units:
            if "bf16" in unit:
                return unit["bf16"], f"{unit_name} bf16 (no {dt} figure)"
        return None, f"no figure for {dt}"


DEVICES: dict[str, Device] = {d.name: d for d in (
    Device("TPU v4", 1200e9, matrix={"bf16": 275 * T, "int8": 275 * T},
           source="https://cloud.google.com/tpu/docs/v4 (275 TFLOP/s bf16/int8, 1200 GB/s HBM2)"),
    Device("TPU v5e", 819e9, matrix={"bf16": 197 * T, "int8": 394 * T},
           source="https://cloud.google.com/tpu/docs/v5e (197 TFLOP/s bf16, 394 TOPS int8, 819 GB/s HBM2)"),
    Device("TPU v5p", 2765e9, matrix={"bf16": 459 * T, "int8": 918 * T},
           source="https://cloud.google.com/tpu/docs/v5p (459 TFLOP/s bf16, 918 TOPS int8, 2765 GB/s HBM2e)"),
    Device("TPU v6e", 1640e9, matrix={"bf16": 918 * T, "int8": 1836 * T},
           source="https://cloud.google.com/tpu/docs/v6e (918 TFLOP/s bf16, 1836 TOPS int8, 1640 GB/s HBM)"),
    Device("H100", 3.35e12,
           matrix={"f64": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T, "f16": 989.5 * T, "fp8": 1979 * T,
                   "int8": 1979 * T},
           vector={"f64": 34 * T, "f32": 67 * T},
           source="https://www.nvidia.com/en-us/data-center/h100/ (H100 SXM datasheet, dense: tf32 494.5, "
                  "bf16/fp16 989.5, fp8/int8 1979 TFLOP/s; fp32 67, fp64 34; 3.35 TB/s HBM3)"),
    Device("H200", 4.8e12,
           matrix={"f64": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T, "f16": 989.5 * T, "fp8": 1979 * T,
                   "int8": 1979 * T},
           vector={"f64": 34 * T, "f32": 67 * T},
           source="https://www.nvidia.com/en-us/data-center/h200/ (H200 SXM: H100 SXM compute, 4.8 TB/s HBM3e)"),
    Device("A100", 2.039e12,
           matrix={"f64": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "f16": 312 * T, "int8": 624 * T},
           vector={"f64": 9.7 * T, "f32": 19.5 * T},
           source="https://www.nvidia.com/en-us/data-center/a100/ (A100 SXM 80GB datasheet, dense: tf32 156, "
                  "bf16/fp16 312, int8 624 TFLOP/s; fp32 19.5, fp64 9.7; 2039 GB/s HBM2e)"),
    Device("MI300X", 5.3e12,
           matrix={"f64": 163.4 * T, "f32": 163.4 * T, "tf32": 653.7 * T, "bf16": 1307.4 * T, "f16": 1307.4 * T,
                   "fp8": 2614.9 * T, "int8": 2614.9 * T},
           vector={"f64": 81.7 * T, "f32": 163.4 * T},
           source="https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html (dense: fp64 matrix "
                  "163.4, vector 81.7; fp32 163.4; tf32 653.7; bf16/fp16 1307.4; fp8/int8 2614.9 TFLOP/s; "
                  "5.3 TB/s HBM3)"),
)}

_ALIASES = {k.lower().replace(" ", "").replace("-", ""): k for k in DEVICES}


def device(spec: Union[str, Device, None] = None, *, peak_flops: Optional[float] = None,
           memory_bandwidth: Optional[float] = None) -> Device:
    """A preset by name (``"H100"``, ``"tpu v5e"``, ``"v5e"``, case and spaces ignored), a
    ``Device``, or explicit numbers: ``peak_flops`` (FLOP/s, every type and unit) and
    ``memory_bandwidth`` (bytes/s), which also override a preset's figures."""
    if isinstance(spec, Device):
        base = spec
    elif spec is None:
        if peak_flops is None or memory_bandwidth is None:
            raise ValueError("give a device name (one of: " + ", ".join(DEVICES) + ") or both peak_flops and "
                             "memory_bandwidth")
        base = Device("custom", memory_bandwidth)
    else:
        key = str(spec).lower().replace(" ", "").replace("-", "")
        name = _ALIASES.get(key) or _ALIASES.get("tpu" + key)
        if name is None:
            raise ValueError(f"unknown device {spec!r}; presets: {', '.join(DEVICES)} (or give peak_flops and "
                             "memory_bandwidth)")
        base = DEVICES[name]
    if peak_flops is None and memory_bandwidth is None:
        return base
    if peak_flops is not None and (peak_flops <= 0):
        raise ValueError(f"peak_flops must be positive, not {peak_flops}")
    if memory_bandwidth is not None and memory_bandwidth <= 0:
        raise ValueError(f"memory_bandwidth must be positive, not {memory_bandwidth}")
    return Device(base.name if peak_flops is None else f"{base.name} (peak {peak_flops:g} FLOP/s)",
                  memory_bandwidth or base.memory_bandwidth, matrix=base.matrix, vector=base.vector,
                  source=base.source + ("; figures given explicitly" if base.source else "figures given explicitly"),
                  uniform=peak_flops if peak_flops is not None else base.uniform)


# ------------------------------------------------------------------- the device a dump names

# CUDA compute capability (``sm_9.0_gpu`` backends) → the preset of that architecture, and the
# other presets that share it (the dump cannot tell those apart)
_COMPUTE_CAPABILITY = {"9.0": ("H100", ("H200",)), "8.0": ("A100", ())}
# ROCm architecture (``gfx942`` in the backend name) → preset
_GFX = {"gfx942": "MI300X"}


def named_by_backend(backend: Optional[str]) -> Optional[tuple[str, str]]:
    """(preset name, how the backend names it) for a backend name of a dump's files
    (``sm_9.0_gpu``, a ROCm ``gfx942…``, a name holding a preset's own name such as a TPU
    generation ``v5e``), else None (``cpu``, a GPU of no preset, a TPU of no stated generation)."""
    import re

    if not backend:
        return None
    b = backend.lower()
    m = re.search(r"sm_?(\d+)\.?(\d)", b)
    if m:
        cc = f"{m.group(1)}.{m.group(2)}"
        hit = _COMPUTE_CAPABILITY.get(cc)
        if hit is None:
            return None
        same = f"; {', '.join(hit[1])} {'has' if len(hit[1]) == 1 else 'have'} the same: --device to choose" if hit[1] else ""
        return hit[0], f"backend {backend}: CUDA compute capability {cc}{same}"
    for arch, name in _GFX.items():
        if arch in b:
            return name, f"backend {backend}: ROCm {arch}"
    flat = b.replace(" ", "").replace("-", "").replace("_", "")
    for key, name in sorted(_ALIASES.items(), key=lambda kv: -len(kv[0])):
        bare = key[3:] if key.startswith("tpu") else key
        if key in flat or (bare and ("tpu" in flat and bare in flat)):
            return name, f"backend {backend}"
    return None


def named_by(backends: Iterable[Optional[str]]) -> tuple[Optional[str], str]:
    """The preset the backends of a dump (or of the modules asked about) name, and a note: (name,
    how it is named) when they name exactly one; (None, why not) otherwise — no backend names a
    device (a CPU dump: the roofline of a CPU is not an accelerator's), or several do."""
    seen = sorted({b for b in backends if b})
    named = {b: named_by_backend(b) for b in seen}
    presets = sorted({v[0] for v in named.values() if v is not None})
    if len(presets) == 1:
        how = next(v[1] for v in named.values() if v is not None and v[0] == presets[0])
        return presets[0], how
    if presets:
        return None, f"the dump names several devices ({', '.join(presets)}): --device to choose one"
    what = f"backend {', '.join(seen)}" if seen else "no backend in the file names"
    return None, f"the dump names no device preset ({what})"
