"""What each module's device has (issue 47, item 7): ``device_capacity(d)``, the table ``devices`` — one row per module
whose dump names its device — with the memory a program may use there, so a peak can be read
against it ("13.62GiB of 15.75GiB HBM, 86%").

Where a dump names its device:

* TPU (libtpu): the module folder's ``topology.textproto`` (``platform_version: "TFRT TPU v5
  lite\\n…"``: after ``TFRT``, jax's ``device_kind``) or, failing that, ``*.target_arguments.txt``
  (``tpu_topology_args { version: TPU_VERSION_VIPERFISH variant: "lite" }``). Neither states the
  memory: the capacity is ``TPU_HBM`` below, less ``reserved_hbm_usage_bytes`` of either file.
* GPU (XLA GPU): ``*.gpu_target_config.pbtxt`` (``device_description { device_memory_size: N
  name: "NVIDIA H100 80GB HBM3" }``): the device's memory as the compiler was told it.

The files are read from the local paths the ``files`` table lists (they are small; the core
does not parse them): a dump read from a store or a buffer gets no row. Nothing here changes a
peak figure: the capacity is a lookup, shown next to the peaks the summary computes.
"""

from __future__ import annotations

from .._typing import checked_analysis

import os
import re
from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa

from .modules import module_list

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["device_capacity", "TPU_HBM", "capacity_line"]

_LIBTPU = "libtpu 0.0.50.1 (jax 0.12.0.1)"
_MEASURED = ("measured: the largest argument a one-instruction program compiles with on one device "
             f"({_LIBTPU}, ahead of time, bisected to 4 KiB: one more 4 KiB page fails with "
             "'Ran out of memory in memory space hbm'); the compile-time OOM text prints it as ")

#: HBM a TPU program may use per device kind (jax's ``device_kind``): (bytes, source). Each is the
#: figure libtpu's compile-time OOM error calls "available HBM", made exact by compiling on
#: either side of it (tools/corpus/generators/gen_accel.py's venv; tests/test_accel_oom.py
#: checks each against the texts in tests/data/accel/<target>/oom.error.txt); the bisection is
#: tools/corpus/generators/tpu_hbm_capacity.py.
TPU_HBM: dict[str, tuple[int, str]] = {
    "TPU v4": (16_372_948_992, _MEASURED + "'available HBM (15.25G)' (tpu:v4:2x2x1)"),
    "TPU v5 lite": (16_909_291_520, _MEASURED + "'available HBM (15.75G)' (tpu:v5e:2x4)"),
    "TPU v5": (102_786_596_864, _MEASURED + "'available HBM (95.73G)' (tpu:v5p:2x2x2)"),
    "TPU v6 lite": (33_545_986_048, _MEASURED + "'available HBM (31.24G)' (tpu:v6e:2x4)"),
    "TPU7x": (101_724_389_376, _MEASURED + "'available HBM (94.74G)' (tpu:TPU7x:2x2x1)"),
}

#: ``tpu_topology_args`` (target_arguments.txt) → device kind, for dumps without topology.textproto
#: (pairs seen in the dumps of tests/data/accel, next to their topology.textproto).
_TPU_VERSIONS = {
    ("TPU_VERSION_PUFFERFISH", ""): "TPU v4",
    ("TPU_VERSION_VIPERFISH", "lite"): "TPU v5 lite",
    ("TPU_VERSION_VIPERFISH", ""): "TPU v5",
    ("TPU_VERSION_GHOSTLITE", ""): "TPU v6 lite",
    ("TPU_VERSION_6acc60406", ""): "TPU7x",
}

SCHEMA = pa.schema([("module", pa.string()), ("module_name", pa.string()), ("platform", pa.string()),
                    ("device_kind", pa.string()), ("memory_space", pa.string()),
                    ("capacity_bytes", pa.int64()), ("source", pa.string())])

_PLATFORM_VERSION = re.compile(r'^platform_version: "(?:TFRT )?([^"\\]*)', re.M)
_RESERVED = re.compile(r"^\s*reserved_hbm_usage_bytes: ([0-9]+)", re.M)
_TPU_VERSION = re.compile(r"^\s*version: (TPU_VERSION_[A-Za-z0-9_]+)", re.M)
_VARIANT = re.compile(r'^\s*variant: "([^"]*)"', re.M)
_GPU_MEMORY = re.compile(r"^\s*device_memory_size: ([0-9]+)", re.M)
_GPU_NAME = re.compile(r'^\s*name: "([^"]*)"', re.M)


def _device_file(path: str) -> Optional[str]:
    """Which device file a dump file is, by its name (None: not one)."""
    base = path.rsplit("/", 1)[-1]
    if base == "topology.textproto":
        return "topology"
    if base.endswith(".target_arguments.txt"):
        return "target_arguments"
    if base.endswith(".gpu_target_config.pbtxt"):
        return "gpu_target_config"
    return None


def _text(dump_dir: str, path: str) -> Optional[str]:
    for p in (os.path.join(dump_dir, path) if dump_dir else path, path):
        try:
            with open(p, encoding="utf-8", errors="replace") as f:
                return f.read(1 << 20)  # these files are a few KB; a bound for a stray big one
        except OSError:
            continue
    return None


def _tpu_row(texts: dict[str, str]) -> Optional[tuple[str, str, int, str]]:
    """(platform, device kind, capacity, source) from a TPU module's files."""
    kind, said = None, ""
    if "topology" in texts and (m := _PLATFORM_VERSION.search(texts["topology"])):
        kind, said = m.group(1), "device kind from topology.textproto platform_version"
    elif "target_arguments" in texts and (m := _TPU_VERSION.search(texts["target_arguments"])):
        v = _VARIANT.search(texts["target_arguments"])
        kind = _TPU_VERSIONS.get((m.group(1), v.group(1) if v else ""))
        said = f"device kind from target_arguments.txt {m.group(1)}" + (f" {v.group(1)}" if v else "")
    if kind is None or kind not in TPU_HBM:
        return None
    hbm, source = TPU_HBM[kind]
    reserved = max((int(r) for t in texts.values() for r in _RESERVED.findall(t)), default=0)
    if reserved:  # the runtime keeps these bytes back from programs (target_arguments.txt says so)
        hbm -= reserved
        source += f"; less reserved_hbm_usage_bytes {reserved}"
    return "tpu", kind, hbm, f"{said}; {source}"


def _gpu_row(text: str) -> Optional[tuple[str, str, int, str]]:
    m = _GPU_MEMORY.search(text)
    if m is None:
        return None
    name = _GPU_NAME.search(text)
    return ("gpu", name.group(1) if name else "GPU", int(m.group(1)),
            "gpu_target_config.pbtxt device_description.device_memory_size (the device memory XLA compiled for)")


@checked_analysis
def device_capacity(dump: "Dump") -> pa.Table:
    """One row per module whose dump names its device: ``module`` (key), ``module_name``,
    ``platform`` (``tpu`` | ``gpu``), ``device_kind`` (jax's ``device_kind`` on TPU, the CUDA
    device name on GPU), ``memory_space`` (``hbm`` on TPU, ``device`` on GPU), ``capacity_bytes``
    (what a program may use there) and ``source`` (where each part of the row comes from)."""
    files = dump.views["files"] if hasattr(dump, "views") else dump["files"]
    cols = files.select([c for c in ("path", "dump", "module_id") if c in files.column_names]).to_pylist()
    by_module: dict[tuple[str, Any], dict[str, str]] = {}
    for f in cols:
        which = _device_file(str(f["path"]))
        if which is None or f.get("module_id") is None:
            continue
        text = _text(str(f.get("dump") or ""), str(f["path"]))
        if text is not None:
            by_module.setdefault((str(f.get("dump") or ""), f["module_id"]), {}).setdefault(which, text)
    rows = []
    for m in module_list(dump):
        texts = by_module.get((m.dump, m.module_id))
        if not texts:
            continue
        got = _gpu_row(texts["gpu_target_config"]) if "gpu_target_config" in texts else _tpu_row(texts)
        if got is None:
            continue
        platform, kind, capacity, source = got
        rows.append({"module": m.key, "module_name": m.name, "platform": platform, "device_kind": kind,
                     "memory_space": "hbm" if platform == "tpu" else "device", "capacity_bytes": capacity,
                     "source": source})
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def capacity_line(peak: Optional[int], dev: dict[str, Any], fmt: Any) -> str:
    """``device: TPU v5 lite, 15.75GiB HBM; peak in use 13.62GiB of 15.75GiB HBM, 86%``."""
    space = "HBM" if dev["memory_space"] == "hbm" else "device memory"
    cap = dev["capacity_bytes"]
    # TPU: what libtpu lets a program use; GPU: the device's memory (jax's allocator takes a share)
    line = f"device: {dev['device_kind']}, {fmt(cap)} {space}" + (" available to a program" if space == "HBM" else "")
    if peak is not None and cap:
        pct = 100 * peak / cap
        line += f"; peak in use {fmt(peak)} of {fmt(cap)} {space}, " + (f"{pct:.0f}%" if pct >= 1 else f"{pct:.2f}%")
        if peak > cap:
            line += f" (over by {fmt(peak - cap)})"
    return line
