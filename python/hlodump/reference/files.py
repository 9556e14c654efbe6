"""File-name classification (FORMATS.md §1.2–§1.5) and content sniffing (§1.5).

Reference implementation: plain string code, written to be read. The Rust core (src/files/name.rs)
implements the same rules independently; tests/test_files.py checks that the two agree.

Rules (the same, word for word, as the module docstring of src/files/name.rs)
------------------------------------------------------------------------
A file name is ``[prefix "."] "module_" ID ["." NAME] [".cl_" N] "." SUFFIX`` (§1.2). It is split
from the right: first the suffix is recognised, then the *stage* in front of it, and what is left
(the "head") is ``[prefix "."] module_ID [.NAME] [.cl_N]``.

* module token: the first ``module_`` that starts the head or follows a ``.``, followed by at least
  4 ASCII digits that fit an int32, followed by ``.`` or the end. module_id = those digits.
  module_name = everything after ``module_ID.`` in the head, minus a trailing ``.cl_<digits>``
  (a head ending ``module_ID.cl_<digits>`` has no module name); null when empty.
* suffix families, tried in this order:
  1. execution files ``….execution_<4+ digits><ext>`` with ext one of ``.hlo_snapshot.pb``,
     ``.hlo_unoptimized_snapshot.pb``, ``.hlo_unoptimized_snapshot.txt``, ``.pb``, ``.txt`` (first
     that fits): kind other, head before ``.execution_``; if the head has no module token but
     starts with ``module_`` (``module_<name>.execution_0000.hlo_snapshot.pb``), module_name is
     the rest of the head.
  2. head suffixes (no stage): ``.debug_options`` (kind debug_options), ``.config.pbtxt``,
     ``.metadata.textproto``, ``.thunk_sequence_after_thunk_passes.txt``,
     ``.thunk_sequence.txt``, ``._fusion.html``, ``._fusion.pyz``, ``.mlir`` (kind other); a per-kernel
     MLIR head ``module_ID.NAME.KERNEL-STAGE`` has module name NAME (KERNEL may contain dots).
  2b. a compile's side files (``options.NAMED_FILES``: ``.execution_options.txt``, ``.flagfile``,
     ``.autotune_results.pbtxt``, …): kind other, module id and name, no stage.
  3. stage suffixes: ``-buffer-assignment-values.txt``, ``-buffer-assignment.txt``,
     ``-live-range.txt``, ``-memory-usage-report.txt`` (their kinds), ``-memory-usage-report.pb.gz``,
     ``-memory-usage-report.pb``, ``.hlo.pb.gz``, ``.hlo.pb``, ``.top_level.html``, ``.html``,
     ``.dot``, ``.url``, ``.riegeli``, ``.fdo_profile`` (kind other), ``.txt`` (kind hlo_module).
     The text in front of the suffix (the "core") must end in a stage (below); if it does not,
     ``.txt`` files become kind other, the others keep their kind, and only module_id is filled
     (from the first module token anywhere in the name).
  4. anything else: kind other, module_id only.
* stage of a core, tried in this order:
  a. per-pass form 1: a ``.``-separated segment of 4+ ASCII digits (fitting int32) after the
     module token, followed by ``.REM`` where REM = ``PIPELINE.after_AFTER.before_BEFORE``
     (PIPELINE ends at the first ``.after_`` that allows a match, BEFORE starts after the last
     possible ``.before_``; all three non-empty). Candidates are tried from the right, so a module
     name with its own 4-digit segment (``foo.1234``) stays whole. stage "pass".
  b. core ends with ``.before_optimizations``: stage before_optimizations; or with ``.STAGE``
     for a STAGE of ``_NAMED_STAGES`` (``after_codegen``, ``after_spmd_partitioner``, …): stage
     STAGE.
  c. core ends with ``.after_optimizations`` (old XLA; backend null) or with
     ``<BACKEND>_after_optimizations``: BACKEND is the last ``.`` segment, joined with the one
     before it when that one is ``sm_<digits>`` and BACKEND starts with a digit (``sm_8.0_gpu``).
     An empty BACKEND is null. stage after_optimizations.
  d. per-pass form 2: as (a) but REM = ``PASS.SUBSTEP`` (PASS = up to the first ``.``, both
     non-empty): after_pass = PASS, substep = SUBSTEP. stage "pass".
* paths (``classify_path``, used for ``files``): the base name is classified as above; when it
  names no module (module_id and module_name both null), module_id and module_name come from
  the nearest parent folder whose name is exactly ``module_<4+ digits>`` or
  ``module_<4+ digits>.<NAME>`` (digits fitting int32, NAME non-empty; module_name = NAME minus
  a trailing ``.cl_<digits>``, as in a head). jax >= 0.10 writes such a folder per module
  (``module_0024.jit_model/module.mlir``, ``compile_options.textproto``,
  ``topology.textproto``). Kind, stage and the other parts come from the base name alone.
"""
from __future__ import annotations

import re

import os

__all__ = ["classify", "classify_path", "sniff", "KINDS", "CONTENT_KINDS"]

KINDS = ("hlo_module", "buffer_assignment", "buffer_assignment_values", "live_range",
         "memory_usage_report", "debug_options", "other")
CONTENT_KINDS = KINDS[:-1] + ("compile_options", "proto_text", "flagfile", "hlo_proto", "memory_usage_report_proto", "stdout_capture",
                               "unknown", "empty")

_INT32_MAX = 2**31 - 1
_DIGITS = frozenset("0123456789")

_EXEC_EXTS = (".hlo_snapshot.pb", ".hlo_unoptimized_snapshot.pb", ".hlo_unoptimized_snapshot.txt",
              ".pb", ".txt")

_HEAD_SUFFIXES = (
    (".debug_options", "debug_options"),
    (".config.pbtxt", "other"),
    (".metadata.textproto", "other"),
    (".thunk_sequence_after_thunk_passes.txt", "other"),
    (".thunk_sequence.txt", "other"),
    ("._fusion.html", "other"),
    ("._fusion.pyz", "other"),
    (".mlir", "other"),
)

# HLO module text stages besides before/after optimizations (FORMATS.md §1.3; Rust:
# NAMED_STAGES): libtpu's around buffer assignment and after code generation, the GPU
# compiler's before config assignment and after SPMD partitioning, libtpu's module printed on
# running out of memory. Only ``after_optimizations`` is what the analyses read.
_NAMED_STAGES = ("after_optimizations_before_buffer_assignment", "after_optimizations_after_buffer_assignment",
                 "after_codegen", "before_config_assignment", "after_spmd_partitioner", "oom_intermediate_module")


def _side_file_suffix(name: str) -> str | None:
    """The suffix of a compile's side file (protobuf text, flags: ``options.NAMED_FILES``):
    module id and name, no stage (else its ``.txt`` would be taken for a stage)."""
    from .options import NAMED_FILES

    return next((s for s, _ in NAMED_FILES if s.startswith(".") and name.endswith(s)), None)


_STAGE_SUFFIXES = (
    ("-buffer-assignment-values.txt", "buffer_assignment_values"),
    ("-buffer-assignment.txt", "buffer_assignment"),
    ("-live-range.txt", "live_range"),
    ("-memory-usage-report.txt", "memory_usage_report"),
    ("-memory-usage-report.pb.gz", "other"),
    ("-memory-usage-report.pb", "other"),
    (".hlo.pb.gz", "other"),
    (".hlo.pb", "other"),
    (".top_level.html", "other"),
    (".html", "other"),
    (".dot", "other"),
    (".url", "other"),
    (".riegeli", "other"),
    (".fdo_profile", "other"),
    (".txt", "hlo_module"),
)


def _is_digits(s: str) -> bool:
    return bool(s) and all(c in _DIGITS for c in s)


def _int32(s: str) -> int | None:
    """int(s) for an ASCII digit string that fits an int32, else None."""
    if not _is_digits(s):
        return None
    v = int(s)
    return v if v <= _INT32_MAX else None


def _module_token(s: str) -> tuple[int, int, int] | None:
    """(start, end, id) of the first ``module_<4+ digits>`` that starts s or follows '.', and is
    followed by '.' or the end of s."""
    i = s.find("module_")
    while i >= 0:
        if i == 0 or s[i - 1] == ".":
            j = i + 7
            k = j
            while k < len(s) and s[k] in _DIGITS:
                k += 1
            if k - j >= 4 and (k == len(s) or s[k] == "."):
                v = _int32(s[j:k])
                if v is not None:
                    return i, k, v
        i = s.find("module_", i + 1)
    return None


def _strip_cl(rest: str) -> str:
    """Remove a trailing ``.cl_<digits>`` (or the whole of ``cl_<digits>``)."""
    if rest.startswith("cl_") and _is_digits(rest[3:]):
        return ""
    d = rest.rfind(".cl_")
    if d >= 0 and _is_digits(rest[d + 4:]):
        return rest[:d]
    return rest


def _parse_head(head: str) -> tuple[int | None, str | None]:
    tok = _module_token(head)
    if tok is None:
        return None, None
    _, end, mid = tok
    rest = _strip_cl(head[end + 1:]) if end < len(head) else ""
    return mid, (rest or None)


def _form1(rem: str) -> tuple[str, str, str] | None:
    """``PIPELINE.after_AFTER.before_BEFORE`` like the regex ^(.+?)\\.after_(.+)\\.before_(.+)$."""
    i = rem.find(".after_")
    while i >= 0:
        if i >= 1:
            rest = rem[i + 7:]
            j = rest.rfind(".before_")
            while j >= 0:
                if j >= 1 and j + 8 < len(rest):
                    return rem[:i], rest[:j], rest[j + 8:]
                j = rest.rfind(".before_", 0, j) if j > 0 else -1
        i = rem.find(".after_", i + 1)
    return None


def _form2(rem: str) -> tuple[str, str] | None:
    i = rem.find(".")
    if i >= 1 and i + 1 < len(rem):
        return rem[:i], rem[i + 1:]
    return None


def _step_candidates(core: str, token_end: int) -> list[tuple[int, int, int]]:
    """(segment start, segment end, step) for every '.'-separated all-digit segment of 4+ digits
    after the module token that is followed by '.', rightmost first."""
    out = []
    p = token_end
    while p < len(core):
        # core[p] == '.'; the segment runs from p + 1 to the next '.'
        q = core.find(".", p + 1)
        if q < 0:
            break
        seg = core[p + 1:q]
        v = _int32(seg)
        if v is not None and len(seg) >= 4:
            out.append((p + 1, q, v))
        p = q
    out.reverse()
    return out


def _empty(kind: str) -> dict:
    return {"kind": kind, "module_id": None, "module_name": None, "stage": None, "backend": None,
            "pass_index": None, "pipeline": None, "after_pass": None, "before_pass": None,
            "substep": None}


def _parse_stage(core: str, out: dict) -> bool:
    """Fill stage/backend/pass fields and module parts from a core; False if it has no stage."""
    tok = _module_token(core)
    cands = _step_candidates(core, tok[1]) if tok is not None else []
    for start, end, step in cands:  # (a) per-pass form 1
        f = _form1(core[end + 1:])
        if f is not None:
            out.update(stage="pass", pass_index=step, pipeline=f[0], after_pass=f[1],
                       before_pass=f[2])
            out["module_id"], out["module_name"] = _parse_head(core[:start - 1])
            return True
    if core.endswith(".before_optimizations"):  # (b)
        out["stage"] = "before_optimizations"
        out["module_id"], out["module_name"] = _parse_head(core[:-len(".before_optimizations")])
        return True
    for stage in _NAMED_STAGES:  # (b) the other named stages
        if core.endswith("." + stage):
            out["stage"] = stage
            out["module_id"], out["module_name"] = _parse_head(core[:-len(stage) - 1])
            return True
    if core.endswith("after_optimizations"):  # (c)
        pre = core[:-len("after_optimizations")]
        head = None
        backend = None
        if pre.endswith("."):
            head = pre[:-1]
        elif pre.endswith("_"):
            b = pre[:-1]
            d = b.rfind(".")
            if d < 0:
                backend, head = b, ""
            else:
                backend, head = b[d + 1:], b[:d]
                if backend[:1] in _DIGITS and backend:
                    e = head.rfind(".")
                    last = head[e + 1:]
                    if last.startswith("sm_") and _is_digits(last[3:]):
                        backend = last + "." + backend
                        head = head[:e] if e >= 0 else ""
        if head is not None:
            out["stage"] = "after_optimizations"
            out["backend"] = backend or None
            out["module_id"], out["module_name"] = _parse_head(head)
            return True
    for start, end, step in cands:  # (d) per-pass form 2
        f2 = _form2(core[end + 1:])
        if f2 is not None:
            out.update(stage="pass", pass_index=step, after_pass=f2[0], substep=f2[1])
            out["module_id"], out["module_name"] = _parse_head(core[:start - 1])
            return True
    return False


# XLA:CPU per-kernel MLIR dumps, `module_ID.NAME.KERNEL-STAGE.mlir` (jax 0.6-0.9): the module
# name is the dot-free NAME after the module token; KERNEL may hold dots and hyphens.
_KERNEL_MLIR_STAGE = re.compile(r"-(?:pre-optimization|post-optimization|post-lowering)$")


def _kernel_mlir_module(head: str) -> str | None:
    """NAME of a per-kernel MLIR head ``module_ID.NAME.KERNEL-STAGE``, else None."""
    m = _KERNEL_MLIR_STAGE.search(head)
    tok = _module_token(head[:m.start()]) if m else None
    if tok is None:
        return None
    name, dot, kernel = head[:m.start()][tok[1] + 1:].partition(".")
    return name if name and dot and kernel else None


def classify(basename: str) -> dict:
    """Split an XLA dump file name into kind and name parts (FORMATS.md §1; rules above).

    Keys: kind, module_id, module_name, stage, backend, pass_index, pipeline, after_pass,
    before_pass, substep. Never raises; an unrecognised name is kind "other" with nulls.
    A compressed file is the file it holds (``….txt.gz``; XLA's ``….pb.gz`` keep the suffix).
    """
    name = without_compression(basename)
    # 1. per-execution files (snapshots)
    for ext in _EXEC_EXTS:
        if name.endswith(ext):
            core = name[:-len(ext)]
            d = core.rfind(".")
            seg = core[d + 1:]
            if seg.startswith("execution_") and len(seg) >= 14 and _is_digits(seg[10:]):
                out = _empty("other")
                head = core[:d] if d >= 0 else ""
                out["module_id"], out["module_name"] = _parse_head(head)
                if out["module_id"] is None and head.startswith("module_") and len(head) > 7:
                    out["module_name"] = head[7:]
                return out
    # 2. suffixes with no stage in front
    for suffix, kind in _HEAD_SUFFIXES:
        if name.endswith(suffix):
            out = _empty(kind)
            out["module_id"], out["module_name"] = _parse_head(name[:-len(suffix)])
            if suffix == ".mlir" and (module := _kernel_mlir_module(name[:-len(suffix)])):
                out["module_name"] = module
            return out
    # 2b. a compile's side files (protobuf text, flags): module id and name only
    side = _side_file_suffix(name)
    if side is not None:
        out = _empty("other")
        out["module_id"], out["module_name"] = _parse_head(name[:-len(side)])
        return out
    # 3. suffixes with a stage in front
    for suffix, kind in _STAGE_SUFFIXES:
        if name.endswith(suffix):
            out = _empty(kind)
            if _parse_stage(name[:-len(suffix)], out):
                return out
            out = _empty("other" if suffix == ".txt" else kind)
            tok = _module_token(name)
            out["module_id"] = tok[2] if tok is not None else None
            return out
    # 4. anything else
    out = _empty("other")
    tok = _module_token(name)
    out["module_id"] = tok[2] if tok is not None else None
    return out


def _folder_module(folder: str) -> tuple[int, str | None] | None:
    """(module_id, module_name) of a folder named exactly ``module_NNNN[.NAME]``, else None."""
    tok = _module_token(folder)
    if tok is None or tok[0] != 0:
        return None
    end = tok[1]
    if end < len(folder) and end + 1 == len(folder):  # "module_0024." : no name after the dot
        return None
    mid, name = _parse_head(folder)
    return (mid, name) if mid is not None else None


# What XLA writes beside its text dumps (object code, LLVM IR, MLIR, protobufs, PTX/cubin,
# graphs …): none is a format of ours. Same list as src/files/name.rs SIDE_OUTPUT_SUFFIXES.
SIDE_OUTPUT_SUFFIXES = (".o", ".ll", ".mlir", ".pb", ".pb.gz", ".ptx", ".cubin", ".hsaco", ".html", ".dot", ".url",
                        ".pyz", ".riegeli", ".pbtxt", ".textproto", ".fdo_profile", ".json",
                        ".ttir", ".ttgir", ".llir")


COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")


def without_compression(name: str) -> str:
    """A base name without its compression suffix (``module_0001.x.txt.gz`` is classified as
    ``module_0001.x.txt``), except XLA's own compressed protobufs (``….pb.gz``)."""
    for s in COMPRESSION_SUFFIXES:
        if name.endswith(s):
            rest = name[:-len(s)]
            if rest and not rest.endswith(".pb"):
                return rest
    return name


def is_side_output(path: str, name: dict) -> bool:
    """A file XLA wrote beside its text dumps, by its name (a module token and a suffix of
    ``SIDE_OUTPUT_SUFFIXES``): an ``other`` row, named explicitly or not."""
    return name["kind"] == "other" and name["module_id"] is not None and path.endswith(SIDE_OUTPUT_SUFFIXES)


def classify_path(path: str) -> dict:
    """``classify`` of the base name of ``path`` (a shown path, ``/``-separated; on Windows also
    ``\\``), plus the module of the nearest per-module parent folder when the base name names
    none (rules above). A bare base name gives exactly ``classify(name)``."""
    parts = path.replace(os.sep, "/").split("/")
    out = classify(parts[-1])
    if out["module_id"] is None and out["module_name"] is None:
        for folder in reversed(parts[:-1]):
            m = _folder_module(folder)
            if m is not None:
                out["module_id"], out["module_name"] = m
                break
    return out


# ------------------------------------------------------------------------------ content sniffing

_BLANK = b" \t\r\v\f"
BOM = b"\xef\xbb\xbf"


def text_start(data: bytes) -> int:
    """Where the text starts: after a UTF-8 byte-order mark (XLA never writes one)."""
    return len(BOM) if data.startswith(BOM) else 0


def _sniff_line(line: bytes) -> str:
    """The kind of a first deciding line by the registry's rules (``formats.Sniff``)."""
    from .formats import sniff_rules

    for rules in sniff_rules():
        for prefix, kind in rules.prefixes:
            if line.startswith(prefix):
                return kind
    for rules in sniff_rules():
        if rules.line is not None and rules.line[0](line):
            return rules.line[1]
    return "unknown"


def _deciding_lines(data: bytes) -> list[tuple[bytes, bool]]:
    """Up to two lines that decide the content kind: the first non-blank line that is not an
    HLO comment (``//`` lines and ``/* … */`` blocks may come before ``HloModule``), and the next
    non-blank line. Each with whether it is complete (ends with a newline)."""
    out: list[tuple[bytes, bool]] = []
    n = len(data)
    pos = text_start(data)
    in_block = False
    while pos < n and len(out) < 2:
        nl = data.find(b"\n", pos)
        end, complete = (n, False) if nl < 0 else (nl, True)
        line = bytes(data[pos:end])
        pos = end + 1
        trimmed = line.lstrip(b" \t")
        if not out and in_block:
            i = line.find(b"*/")
            if i >= 0:
                in_block = False
                if line[i + 2:].strip(_BLANK):
                    return out
            continue
        if not line.strip(_BLANK):
            continue
        if not out and trimmed.startswith(b"//"):
            continue
        if not out and trimmed.startswith(b"/*"):
            i = trimmed.find(b"*/", 2)
            if i < 0:
                in_block = True
                continue
            if not trimmed[i + 2:].strip(_BLANK):
                continue
        if line.endswith(b"\r"):
            line = line[:-1]
        out.append((line, complete))
    return out


def sniff(data: bytes) -> str:
    """Content kind of a file (FORMATS.md §1.5).

    From its first deciding line (after a byte-order mark, blank lines — only spaces, tabs, CR,
    VT or FF — and leading HLO comments); the line after it where needed (``Total bytes used:``
    starts both the values file and the memory-usage report of jax 0.4.35–0.9, whose next line
    is ``Allocations sorted by size:``); and, for text that is none of our formats, an
    out-of-memory report anywhere in the data ("oom_report"). Also "stdout_capture",
    "debug_options", "unknown" and "empty". The rules are the registry's (``formats.Sniff``).
    """
    from .formats import FORMATS, sniff_rules

    for rules in sniff_rules():  # a binary format's rule first (its first bytes decide)
        if rules.binary is not None and rules.binary[0](data):
            return rules.binary[1]
    lines = _deciding_lines(data)
    marked = next((f.contents[0] for f in FORMATS if any(m in data for m in f.sniff.markers)), None)
    if not lines:
        return marked or "empty"
    first = lines[0][0]
    if len(lines) > 1:
        for rules in sniff_rules():
            for prefix, second, kind in rules.second_line:
                if first.startswith(prefix) and lines[1][0] == second:
                    return kind
    kind = _sniff_line(first)
    if kind == "unknown":
        second_line = lines[1][0] if len(lines) > 1 else None
        for rules in sniff_rules():
            if rules.fallback is not None and rules.fallback[0](first, second_line):
                return rules.fallback[1]
    if kind == "unknown" and marked:
        return marked
    return kind

