#!/usr/bin/env python3
"""Make large, realistic benchmark inputs from the real dumps in ``tests/data``.

Every big file is grown from one corpus file by repeating its repeatable part K times. Copy k
(k = 1..K) renames every identifier with a suffix ``.r{k}`` and renumbers every id (allocation
numbers, value ids, schedule times) as ``{k}{id:0W}`` — the decimal digits of k followed by the
original id zero-padded to the field's width W — so ids stay unique and increasing across copies
and the files stay valid for the parsers. The numbering is done by byte substitution of marker
bytes in a prepared template (``bytes.replace`` runs at memory speed), so a 4 GB file takes a
few seconds and Python never holds more than one copy (~300 KB) plus a write buffer.

Inputs (``--scale full``; ``small`` divides the sizes by 100):

  hlo_20m.txt, hlo_100m.txt, hlo_1g.txt, hlo_4g.txt  (20m/100m: slices for the reference/XLA)
      HLO text: the after-optimizations module of the jax-0.10.2 transformer; every computation
      (the entry too, as a plain computation) repeated with renamed names, the real ENTRY last.
  ba_combined_20m.txt, ba_combined_100m.txt, ba_combined_1g.txt, ba_combined_4g.txt
      old combined buffer-assignment layout (jax 0.4.26: allocations, Total bytes used, Used
      values, HloLiveRange), each section's records repeated.
  ba_split_20m/, ba_split_1g/
      the new split layout (jax 0.10.2): buffer-assignment, -values, -live-range and
      -memory-usage-report files, each grown with the same K (≈1 GB together).
  passes/
      5,000 per-pass HLO files (copies of the corpus per-pass files under new module ids).
  hlo_mixed_20m.txt, hlo_mixed_1g.txt, hlo_10g.txt (--scale huge only)
      several modules in one file, each grown from its own real source (CPU transformer and
      convnet, TPU Llama, GPU Llama: ``MIXED_SOURCES``) to an equal share of the size.
  hlo_customcall_100m.txt
      the transformer module with one extra instruction: a tpu_custom_call whose
      backend_config body is ~100 MB of base64 (one 100 MB line).

Usage: python benches/make_inputs.py [OUT_DIR] [--scale small|full] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "data" / "corpus"
T10 = CORPUS / "jax-0.10.2" / "transformer" / "module_0000.jit_train_step"
T04 = CORPUS / "jax-0.4.26" / "transformer" / "module_0000.jit_train_step"

NAME_MARK = b"\x00"  # replaced by b".r{k}" (after a name)
NUM_MARK = b"\x01"  # replaced by b"{k}" (before a zero-padded id)

MB = 1_000_000
SIZES = {  # bytes at --scale full
    "hlo_20m": 20 * MB,  # slices for the slow parsers (reference)
    "ba_combined_20m": 20 * MB,
    "ba_split_20m": 20 * MB,
    "hlo_100m": 100 * MB,  # slice for XLA's parser
    "hlo_1g": 1000 * MB,
    "hlo_4g": 4000 * MB,
    "ba_combined_100m": 100 * MB,
    "ba_combined_1g": 1000 * MB,
    "ba_combined_4g": 4000 * MB,
    "ba_split_1g": 1000 * MB,
    "hlo_customcall_100m": 100 * MB,
    "hlo_mixed_20m": 20 * MB,
    "hlo_mixed_1g": 1000 * MB,
    "hlo_10g": 10_000 * MB,  # --scale huge only: read under a 16 GB address-space limit
}
# Made only at --scale huge (10 GB of disk).
HUGE_ONLY = {"hlo_10g"}
PASS_FILES = 5000


# ------------------------------------------------------------------------------ templating


class Template:
    """Bytes with markers; ``copy(k)`` substitutes them."""

    def __init__(self, text: bytes):
        self.text = text

    def copy(self, k: int) -> bytes:
        return self.text.replace(NAME_MARK, b".r%d" % k).replace(NUM_MARK, b"%d" % k)


def _num(width: int):
    def sub(digits: bytes) -> bytes:
        return NUM_MARK + digits.zfill(width)

    return sub


PCT_NAME = re.compile(rb"%([A-Za-z0-9_.\-]+)")


def mark_pct_names(line: bytes) -> bytes:
    return PCT_NAME.sub(lambda m: m.group(0) + NAME_MARK, line)


# ------------------------------------------------------------------------------ writers


class Out:
    """Large buffered writes (16 MB), with a running byte count."""

    def __init__(self, path: Path):
        self.f = open(path, "wb", buffering=16 << 20)
        self.n = 0

    def write(self, b: bytes) -> None:
        self.f.write(b)
        self.n += len(b)

    def close(self) -> None:
        self.f.close()


def copies_for(target: int, fixed: int, per_copy: int) -> int:
    return max(1, round((target - fixed) / max(per_copy, 1)))


# ------------------------------------------------------------------------------ HLO text

HEADER_PARAM = re.compile(rb"([(]|, )([A-Za-z_][A-Za-z0-9_.\-]*)(: )")


def hlo_template(src: bytes) -> tuple[bytes, bytes, Template]:
    """(header, original body, template of the body as a non-entry computation)."""
    m = re.search(rb"\n\n(%|ENTRY )", src)
    assert m, "no computation found"
    header, body = src[: m.start() + 2], src[m.start() + 2 :]
    out = []
    for line in body.split(b"\n"):
        if line.startswith(b"ENTRY "):
            line = line[len(b"ENTRY ") :]
        if line.startswith(b"%"):  # computation header: rename its parameters too
            open_at = line.index(b" (")
            head, sig = line[:open_at], line[open_at:]
            sig = HEADER_PARAM.sub(lambda m: m.group(1) + m.group(2) + NAME_MARK + m.group(3), sig)
            line = mark_pct_names(head) + sig
        else:
            line = mark_pct_names(line)
        out.append(line)
    return header, body, Template(b"\n".join(out))


def make_hlo(path: Path, target: int, src: bytes | None = None) -> dict:
    src = src if src is not None else (T10.parent / (T10.name + ".cpu_after_optimizations.txt")).read_bytes()
    header, body, tpl = hlo_template(src)
    k_total = copies_for(target, len(header) + len(body), len(tpl.text) + 8)
    out = Out(path)
    out.write(header)
    for k in range(1, k_total + 1):
        c = tpl.copy(k)
        out.write(c if c.endswith(b"\n\n") else c.rstrip(b"\n") + b"\n\n")
    out.write(body)
    out.close()
    return {"copies": k_total, "bytes": out.n}


# Several real modules, of the three kinds of backend, for the mixed inputs (issue 53: grown
# from several dumps, not one template): a CPU transformer step (jax 0.10.2), a CPU convnet
# (jax 0.12), a TPU Llama step (libtpu: tiled layouts, memory spaces, async collectives) and a
# GPU Llama step (cuBLAS / Triton custom calls, backend_config JSON).
MIXED_SOURCES = [
    T10.parent / (T10.name + ".cpu_after_optimizations.txt"),
    CORPUS / "jax-0.12.0.1" / "convnet" / "module_0000.jit_loss.cpu_after_optimizations.txt",
    HERE.parent / "tests" / "data" / "accel" / "tpu_v5e_2x4" / "llama" / "module_0005.jit_step.cl_1004524046.after_optimizations.txt",
    HERE.parent / "tests" / "data" / "accel" / "gpu_h100" / "llama" / "module_3314.jit_step.sm_9.0a_gpu_after_optimizations.txt",
]


def make_hlo_mixed(path: Path, target: int) -> dict:
    """One file of several modules (each `HloModule` header starts one), each grown from its
    own real source to an equal share of the size, in turn: the parser meets every backend's
    printing all along the file."""
    sources = [p.read_bytes() for p in MIXED_SOURCES]
    parts = [hlo_template(src) for src in sources]
    share = target // len(parts)
    out = Out(path)
    copies = []
    for header, body, tpl in parts:
        k_total = copies_for(share, len(header) + len(body), len(tpl.text) + 8)
        copies.append(k_total)
        out.write(header)
        for k in range(1, k_total + 1):
            c = tpl.copy(k)
            out.write(c if c.endswith(b"\n\n") else c.rstrip(b"\n") + b"\n\n")
        out.write(body.rstrip(b"\n") + b"\n\n")
    out.close()
    return {"copies": copies, "bytes": out.n, "sources": [str(p.relative_to(HERE.parent)) for p in MIXED_SOURCES]}


def make_customcall(path: Path, target: int) -> dict:
    src = (T10.parent / (T10.name + ".cpu_after_optimizations.txt")).read_bytes()
    lines = src.split(b"\n")
    entry = next(i for i, l in enumerate(lines) if l.startswith(b"ENTRY "))
    root = next(i for i in range(entry, len(lines)) if lines[i].startswith(b"  ROOT "))
    first_param = lines[entry + 1]
    m = re.match(rb"  (%[^ ]+) = ([^ ]+) parameter", first_param)
    assert m, first_param
    name, shape = m.group(1), m.group(2)
    plain = shape.split(b"{")[0]
    body_len = max(0, target - len(src) - 400)
    raw = os.urandom(body_len * 3 // 4)
    b64 = base64.b64encode(raw)
    instr = (
        b"  %pallas_call.big = " + shape + b" custom-call(" + name + b"), custom_call_target=\"tpu_custom_call\", "
        b"operand_layout_constraints={" + shape + b"}, metadata={op_name=\"jit(train_step)/pallas_call\"}, "
        b"backend_config={\"custom_call_config\": {\"body\": \"" + b64 + b"\", \"serialization_format\": 1}}"
    )
    del raw
    lines.insert(root, instr)
    out = Out(path)
    for i, l in enumerate(lines):
        out.write(l)
        if i + 1 < len(lines):
            out.write(b"\n")
    out.close()
    return {"line_bytes": len(instr), "bytes": out.n, "operand_shape": plain.decode()}


# ------------------------------------------------------------------------------ buffer assignment

ALLOC = re.compile(rb"^allocation (\d+):")
VALUE_REF = re.compile(rb"<(\d+) ([^ {>\x00]+)")
ITEM = re.compile(rb"^  ([^ ,{]+)")
SEQ = re.compile(rb"^    (\d+):(\S+)$")
RANGE = re.compile(rb"^    ([^ {]+)(\{[^}]*\}):(\d+)-(\d+)$")
PEAK = re.compile(rb"^    ([^ :{]+)")
MAX = re.compile(rb"^HloLiveRange \(max (\d+)\):")
AT_PEAK = re.compile(rb"^  Live ranges at (\d+) \(peak\):")

ONCE_PREFIXES = (
    b"BufferAssignment:",
    b"Total bytes used:",
    b"Used values:",
    b"HloLiveRange",
    b"  InstructionSequence:",
    b"  BufferLiveRange:",
    b"  Live ranges at",
    b"Memory Space:",
    b"Total bytes:",
    b"  cumulative_size",
    b"  ---",
    b"  The rest",
)

# Widths of the zero-padded id fields (enough for the corpus files).
W_ALLOC, W_VALUE, W_TIME = 4, 5, 4


class BaTemplate:
    """A buffer-assignment-family file as chunks: ('once', bytes) or ('rep', Template)."""

    def __init__(self, src: bytes):
        self.chunks: list[tuple[str, object]] = []
        section = None
        rep: list[bytes] = []
        in_tree = False

        def flush():
            if rep:
                self.chunks.append(("rep", Template(b"\n".join(rep) + b"\n")))
                rep.clear()

        lines = src.split(b"\n")
        trailing_newline = src.endswith(b"\n")
        if trailing_newline:
            lines = lines[:-1]
        for line in lines:
            if line.startswith(b"  Stack trace breakdown"):
                in_tree = True
            once = in_tree or not line.strip() or line.startswith(ONCE_PREFIXES)
            if line.startswith(b"Used values:"):
                section = "values"
            elif line.startswith(b"BufferAssignment:"):
                section = "alloc"
            elif line.startswith(b"HloLiveRange"):
                section = "live"
            elif line.startswith(b"Memory Space:"):
                section = "report"
            if once:
                flush()
                self.chunks.append(("once", line + b"\n"))
                continue
            if section is None and line.startswith(b"<"):
                section = "values"  # the split values file starts with an empty line
            rep.append(self._mark(line, section))
        flush()

    @staticmethod
    def _mark(line: bytes, section) -> bytes:
        if section == "alloc":
            line = ALLOC.sub(lambda m: b"allocation " + _num(W_ALLOC)(m.group(1)) + b":", line)
            return VALUE_REF.sub(lambda m: b"<" + _num(W_VALUE)(m.group(1)) + b" " + m.group(2) + NAME_MARK, line)
        if section == "values":
            if line.startswith(b"  "):
                if line == b"  (none)":
                    return line
                return ITEM.sub(lambda m: b"  " + m.group(1) + NAME_MARK, line)
            line = mark_pct_names(line)
            return VALUE_REF.sub(lambda m: b"<" + _num(W_VALUE)(m.group(1)) + b" " + m.group(2) + NAME_MARK, line)
        if section == "live":
            m = SEQ.match(line)
            if m:
                return b"    " + _num(W_TIME)(m.group(1)) + b":" + m.group(2) + NAME_MARK
            m = RANGE.match(line)
            if m:
                return (b"    " + m.group(1) + NAME_MARK + m.group(2) + b":" + _num(W_TIME)(m.group(3)) + b"-"
                        + _num(W_TIME)(m.group(4)))
            return PEAK.sub(lambda m: b"    " + m.group(1) + NAME_MARK, line, count=1)
        return line  # memory-report rows: no names or ids

    def _scheduled_after(self, i: int, k_total: int) -> int:
        """How many `    N:NAME` lines the chunks after chunk ``i`` write, up to the next header."""
        sched = re.compile(rb"(?m)^    [0-9]+:[^ \n]+$")
        n = 0
        for kind, c in self.chunks[i + 1:]:
            text = c if kind == "once" else c.copy(1)  # every copy lists as many
            if kind == "once" and MAX.match(text):
                break
            n += len(sched.findall(text)) * (1 if kind == "once" else k_total)
        return n

    def fixed_bytes(self) -> int:
        return sum(len(c) for kind, c in self.chunks if kind == "once")

    def copy_bytes(self) -> int:
        return sum(len(c.text) + 8 for kind, c in self.chunks if kind == "rep")

    def write(self, out: Out, k_total: int) -> None:
        for i, (kind, c) in enumerate(self.chunks):
            if kind == "once":
                m = MAX.match(c)
                if m:
                    # max = the entries its InstructionSequence will list (readers check it)
                    c = b"HloLiveRange (max %d):\n" % self._scheduled_after(i, k_total) + c[m.end() + 1:]
                m = AT_PEAK.match(c)
                if m:
                    c = b"  Live ranges at 1%s (peak):\n" % m.group(1).zfill(W_TIME)
                out.write(c)
                continue
            for k in range(1, k_total + 1):
                out.write(c.copy(k))


def make_ba(path: Path, target: int, src_path: Path) -> dict:
    tpl = BaTemplate(src_path.read_bytes())
    k_total = copies_for(target, tpl.fixed_bytes(), tpl.copy_bytes())
    out = Out(path)
    tpl.write(out, k_total)
    out.close()
    return {"copies": k_total, "bytes": out.n, "source": str(src_path.relative_to(CORPUS))}


def make_ba_split(d: Path, target: int) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    suffixes = ["-buffer-assignment.txt", "-buffer-assignment-values.txt", "-live-range.txt",
                "-memory-usage-report.txt"]
    tpls = [(s, BaTemplate((T10.parent / (T10.name + ".cpu_after_optimizations" + s)).read_bytes())) for s in suffixes]
    fixed = sum(t.fixed_bytes() for _, t in tpls)
    per = sum(t.copy_bytes() for _, t in tpls)
    k_total = copies_for(target, fixed, per)
    total = 0
    for s, t in tpls:
        out = Out(d / ("module_0000.jit_train_step.cpu_after_optimizations" + s))
        t.write(out, k_total)
        out.close()
        total += out.n
    return {"copies": k_total, "bytes": total, "files": len(tpls)}


# ------------------------------------------------------------------------------ per-pass files

PASS_NAME = re.compile(r"^module_(\d{4})\.([^.]+)\.(\d{4})\.(.+\.txt)$")


def make_passes(d: Path, n: int, small: bool) -> dict:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    srcs = sorted(p for p in CORPUS.rglob("*.txt") if PASS_NAME.match(p.name))
    if small:  # the smallest sources, so a quick run stays quick
        srcs = sorted(srcs, key=lambda p: p.stat().st_size)[:20]
    datas = [(PASS_NAME.match(p.name), p.read_bytes()) for p in srcs]
    total = 0
    for i in range(n):
        m, data = datas[i % len(datas)]
        module = 1000 + i // len(datas)
        name = f"module_{module:04d}.{m.group(2)}.{m.group(3)}.{m.group(4)}"
        with open(d / name, "wb") as f:
            f.write(data)
        total += len(data)
    return {"files": n, "bytes": total, "distinct_sources": len(datas)}


# ------------------------------------------------------------------------------ main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=str(HERE / "out"))
    ap.add_argument("--scale", choices=["small", "full", "huge"], default="small",
                    help="small: sizes / 100; full: 20 MB to 4 GB; huge: full and the 10 GB file")
    ap.add_argument("--only", nargs="*", help="make only these inputs")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    div = 100 if a.scale == "small" else 1
    scale_name = "full" if a.scale == "huge" else a.scale
    manifest_path = out / "inputs.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    if manifest.get("scale") not in (None, scale_name):
        manifest = {}
    manifest["scale"] = scale_name
    ba_old = T04.parent / (T04.name + ".cpu_after_optimizations-buffer-assignment.txt")
    jobs = {
        "hlo_20m": lambda p, s: make_hlo(p, s),
        "ba_combined_20m": lambda p, s: make_ba(p, s, ba_old),
        "ba_split_20m": lambda p, s: make_ba_split(p, s),
        "hlo_100m": lambda p, s: make_hlo(p, s),
        "hlo_1g": lambda p, s: make_hlo(p, s),
        "hlo_4g": lambda p, s: make_hlo(p, s),
        "ba_combined_100m": lambda p, s: make_ba(p, s, ba_old),
        "ba_combined_1g": lambda p, s: make_ba(p, s, ba_old),
        "ba_combined_4g": lambda p, s: make_ba(p, s, ba_old),
        "ba_split_1g": lambda p, s: make_ba_split(p, s),
        "hlo_customcall_100m": lambda p, s: make_customcall(p, s),
        "hlo_mixed_20m": lambda p, s: make_hlo_mixed(p, s),
        "hlo_mixed_1g": lambda p, s: make_hlo_mixed(p, s),
        "hlo_10g": lambda p, s: make_hlo_mixed(p, s),
        "passes": lambda p, s: make_passes(p, PASS_FILES if a.scale == "full" else 500, a.scale == "small"),
    }
    entries = manifest.setdefault("inputs", {})
    for name, job in jobs.items():
        if a.only and name not in a.only:
            continue
        if name in HUGE_ONLY and a.scale != "huge":
            continue
        is_dir = name.startswith("ba_split") or name == "passes"
        path = out / (name if is_dir else name + ".txt")
        t0 = time.perf_counter()
        info = job(path, SIZES.get(name, 0) // div)  # noqa
        dt = time.perf_counter() - t0
        info.update(path=path.name, seconds=round(dt, 2))
        entries[name] = info
        print(f"{name:22s} {info['bytes'] / MB:10.1f} MB  {dt:6.1f} s  {path}", flush=True)
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
