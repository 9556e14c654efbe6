"""Every jax release in tests/data/corpus (``jax-<V>/<program>/``, one directory per program):

* read strictly (``on_error="raise"``) by both readers, every file classified by its name as the
  names say (regular expressions written here, independent of the classifiers): no dump file
  falls to ``other`` except the per-kernel MLIR and the per-module folders, which are not formats
  hlodump reads;
* each release's sample holds the file kinds and layouts that release writes, and none it does
  not (the table ``LAYOUTS``, from the releases' own dumps; docs/FORMATS.md §5.1);
* the facts the files state about themselves, per module, computed from the raw text with simple
  regular expressions and compared with the tables: ``Total bytes used`` is the sum of the
  allocation sizes (combined or split buffer assignment), the memory-usage report (allocation
  list or table form) agrees with the allocations and their values, every live range and every
  peak entry names a value, the schedule and every assigned value name instructions of the
  optimized HLO module, module headers name the module of the file name;
* Rust == reference cell for cell and our HLO parse == XLA's are checked by
  test_rust_vs_reference.py, test_rust_vs_reference_hlo.py and test_hlo_vs_xla.py, which glob
  every file of tests/data; ``test_every_release_is_in_the_cross_checks`` makes sure those globs see
  every release directory.
"""

from __future__ import annotations

import functools
import glob
import os
import re
from collections import Counter, defaultdict
from typing import Any

import pytest

from conftest import DATA

CORPUS = os.path.join(DATA, "corpus")
DIRS = sorted(os.path.relpath(p, CORPUS) for p in glob.glob(os.path.join(CORPUS, "jax-*", "*")) if os.path.isdir(p))


def _v(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.removeprefix("jax-").split("."))


RELEASES = sorted({d.split("/")[0] for d in DIRS}, key=_v)


def read(impl: str, sub: str) -> Any:
    """Strict read (on_error="raise", the default) of one program directory, large_string text;
    test_directories' cache, so that each directory is parsed once per reader and session."""
    import test_directories

    return test_directories.read(impl, os.path.join(CORPUS, sub))


def walked(root: str) -> list[str]:
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/") for n in names]
    return sorted(out)


# ------------------------------------------------------------------ names → kinds (independent)

_STAGE = re.compile(
    r"^module_(\d{4})\.([A-Za-z0-9_]+)\.(?:before_optimizations|cpu_after_optimizations)"
    r"(-buffer-assignment-values|-buffer-assignment|-live-range|-memory-usage-report)?\.txt$")
_PASS = re.compile(r"^module_(\d{4})\.([A-Za-z0-9_]+)\.\d{4}\.[A-Za-z0-9_.-]+\.txt$")
_DEBUG = re.compile(r"^module_(\d{4})\.([A-Za-z0-9_]+)\.debug_options$")
_KERNEL = re.compile(r"^module_(\d{4})\.([A-Za-z0-9_]+)\.([A-Za-z0-9_.-]+)"
                     r"-(?:pre-optimization|post-optimization|post-lowering)\.mlir$")
_FOLDER_NEW = re.compile(r"^module_(\d{4})\.([A-Za-z0-9_]+)/(?:module\.mlir|compile_options\.textproto|"
                         r"topology\.textproto)$")  # jax 0.10.2
_FOLDER_OLD = re.compile(r"^([A-Za-z0-9_]+)_(\d{10,})/(?:module\.mlir|compile_options\.pb|topology\.pb)$")  # 0.7.2-0.9.2
_KIND = {None: "hlo_module", "-buffer-assignment-values": "buffer_assignment_values",
         "-buffer-assignment": "buffer_assignment", "-live-range": "live_range",
         "-memory-usage-report": "memory_usage_report"}
PARSED = {"hlo_module", "buffer_assignment", "buffer_assignment_values", "live_range", "memory_usage_report",
          "debug_options", "compile_options", "proto_text"}


def expected(path: str) -> tuple[str, int | None, str | None]:
    """(kind, module_id, module_name) that a file's name states."""
    if m := _STAGE.match(path):
        return _KIND[m[3]], int(m[1]), m[2]
    if m := _PASS.match(path):
        return "hlo_module", int(m[1]), m[2]
    if m := _DEBUG.match(path):
        return "debug_options", int(m[1]), m[2]
    if m := _KERNEL.match(path):
        return "other", int(m[1]), m[2]
    # compile_options.textproto, topology.textproto: their content says what they are (`options` files)
    kind = ("compile_options" if path.endswith("/compile_options.textproto")
            else "proto_text" if path.endswith("/topology.textproto") else "other")
    if m := _FOLDER_NEW.match(path):
        return kind, int(m[1]), m[2]
    if _FOLDER_OLD.match(path):  # the folder name has no module number: no module
        return kind, None, None
    raise AssertionError(f"a file name no release writes: {path}")


@pytest.mark.parametrize("impl", ["rust", "reference"])
@pytest.mark.parametrize("sub", DIRS)
def test_strict_read_and_every_file_classified(impl: str, sub: str) -> None:
    d = read(impl, sub)  # on_error="raise": any line either parser does not accept raises
    assert d.errors.num_rows == 0
    files = d.files.to_pylist()
    assert [f["path"] for f in files] == walked(os.path.join(CORPUS, sub))
    for f in files:
        kind, mid, mname = expected(f["path"])
        assert f["error"] is None, f["path"]
        assert f["kind"] == kind, f["path"]
        assert f["module_id"] == mid, f["path"]
        assert f["module_name"] == mname, f["path"]
        assert f["parsed"] == (kind in PARSED), f["path"]
        # the content says the same, except for MLIR and protobuf files (not our formats)
        assert f["content_kind"] == (kind if kind != "other" else "unknown"), f["path"]
    # every file of a module goes with an HLO module file of the same module
    hlo = {(f["module_id"], f["module_name"]) for f in files if f["kind"] == "hlo_module"}
    for f in files:
        if f["module_id"] is not None:
            assert (f["module_id"], f["module_name"]) in hlo, f["path"]
        if m := _FOLDER_OLD.match(f["path"]):
            assert m[1] in {name for _, name in hlo}, f["path"]


KERNEL_DIRS = [s for s in DIRS if any(_KERNEL.match(p) for p in walked(os.path.join(CORPUS, s)))]


@pytest.mark.parametrize("sub", KERNEL_DIRS)
@pytest.mark.parametrize("impl", ["rust", "reference"])
def test_per_kernel_mlir_names_its_module(impl: str, sub: str) -> None:
    seen = 0
    for f in read(impl, sub).files.to_pylist():
        if m := _KERNEL.match(f["path"]):
            assert (f["module_id"], f["module_name"]) == (int(m[1]), m[2]), f["path"]
            seen += 1
    assert seen > 0


# ------------------------------------------------------------- what each release writes

# marker -> (file-name pattern, content pattern or None for "the file exists", first, last):
# present in every release from `first` to `last` (inclusive; None = open), absent elsewhere.
# Which release first printed what: docs/FORMATS.md §5.1.
MARKERS = {
    "hlo before_optimizations": (r"\.before_optimizations\.txt$", None, None, None),
    "hlo cpu_after_optimizations": (r"\.cpu_after_optimizations\.txt$", None, None, None),
    "hlo without % sigils": (r"_after_optimizations\.txt$", rb"\nENTRY [A-Za-z_]", None, "0.4.38"),
    "hlo % sigils and signatures": (r"_after_optimizations\.txt$", rb"\nENTRY %\S+ \(", "0.5.3", None),
    "hlo `} // name`": (r"optimizations\.txt$", rb"\n} // ", "0.4.20", "0.4.38"),
    "hlo is_scheduled=true after optimizations": (r"_after_optimizations\.txt$",
                                                  rb"^HloModule \S+, is_scheduled=true", "0.4.30", None),
    "hlo stack-frame tables": (r"optimizations\.txt$", rb"\nStackFrames\n", "0.8.3", None),
    "buffer assignment, combined": (r"-buffer-assignment\.txt$", rb"\nUsed values:\n", None, "0.9.2"),
    "buffer assignment, allocations only": (r"-buffer-assignment\.txt$", rb"^BufferAssignment:\n(?![\s\S]*Used values:)",
                                            "0.10.2", None),
    "-buffer-assignment-values.txt": (r"-buffer-assignment-values\.txt$", None, "0.10.2", None),
    "-live-range.txt": (r"-live-range\.txt$", None, "0.10.2", None),
    "`from instruction:%` (no space)": (r"-buffer-assignment(-values)?\.txt$", rb"from instruction:%", None, "0.4.20"),
    "`from instruction: %`": (r"-buffer-assignment(-values)?\.txt$", rb"from instruction: %", "0.4.26", None),
    "value header glued to the instruction": (r"-buffer-assignment\.txt$", rb"[^\n]<\d+ [^\n]*>\n positions:",
                                              "0.4.26", "0.4.35"),
    "`  (none)` uses": (r"-buffer-assignment(-values)?\.txt$", rb"\n  \(none\)\n", "0.10.2", None),
    "peak entries without cumulative": (r"(-buffer-assignment|-live-range)\.txt$", rb"\n    \S+: \d+ bytes\n",
                                        None, "0.5.3"),
    "peak entries with cumulative": (r"(-buffer-assignment|-live-range)\.txt$", rb" bytes \(cumulative: \d+ bytes\)\n",
                                     "0.6.2", None),
    "stack-trace breakdown": (r"(-buffer-assignment|-live-range)\.txt$", rb"\n  Stack trace breakdown for peak usage: ",
                              "0.7.2", None),
    "memory-usage report, allocation list": (r"-memory-usage-report\.txt$", rb"\nAllocations sorted by size:\n",
                                             "0.4.35", "0.8.3"),
    "memory-usage report, table form": (r"-memory-usage-report\.txt$", rb"^Memory Space: \S+ \(color=\d+\)\n",
                                        "0.9.2", None),
    ".debug_options": (r"\.debug_options$", None, "0.6.2", None),
    "per-kernel MLIR": (r"-(?:pre-optimization|post-optimization|post-lowering)\.mlir$", None, "0.6.2", "0.9.2"),
    "folder <name>_<id>/ with module.mlir, compile_options.pb": (r"_\d{10,}/compile_options\.pb$", None, "0.7.2", "0.9.2"),
    "folder <name>_<id>/topology.pb": (r"_\d{10,}/topology\.pb$", None, "0.8.3", "0.9.2"),
    "folder module_NNNN.<name>/ with .textproto": (r"^module_\d{4}\.[^/]+/compile_options\.textproto$", None,
                                                   "0.10.2", None),
}
# per-pass dumps are in the sample of these releases only (the generators write them on request)
PASSES = {"jax-0.4.26", "jax-0.8.3", "jax-0.10.2", "jax-0.11.2", "jax-0.12.0.1"}


@functools.lru_cache(maxsize=None)
def _release_files(release: str) -> list[tuple[str, str]]:
    root = os.path.join(CORPUS, release)
    # program files only: jax >= 0.11 keeps its oracle JSON files (jax_analysis.json, xla_parse.json) at the top
    return [(p.split("/", 1)[1], os.path.join(root, p)) for p in walked(root) if "/" in p]


@pytest.mark.parametrize("release", RELEASES)
def test_release_has_the_kinds_and_layouts_it_writes(release: str) -> None:
    have, lack = [], []
    for marker, (name, content, first, last) in MARKERS.items():
        writes = (first is None or _v(release) >= _v(first)) and (last is None or _v(release) <= _v(last))
        n = 0
        for rel, full in _release_files(release):
            if re.search(name, rel):
                if content is None:
                    n += 1
                else:
                    with open(full, "rb") as fh:
                        n += re.search(content, fh.read(), re.M) is not None
        if writes and n == 0:
            lack.append(marker)
        if not writes and n:
            have.append(marker)
    assert not lack, f"{release} writes these but its sample has none: {lack}"
    assert not have, f"{release} should not have: {have}"
    passes = any(_PASS.match(os.path.basename(rel)) for rel, _ in _release_files(release))
    assert passes == (release in PASSES)


# ------------------------------------------------------------- facts the files state


def _modules(d: Any) -> dict[tuple[int, str], dict[str, list[dict]]]:
    """module -> {kind/stage: [file rows]}"""
    out: dict = defaultdict(lambda: defaultdict(list))
    for f in d.files.to_pylist():
        if f["module_id"] is None or f["kind"] == "other":
            continue
        key = f["kind"] if f["kind"] != "hlo_module" else f"hlo_{f['stage']}"
        out[(f["module_id"], f["module_name"])][key].append(f)
    return out


def _by_file(d: Any, table: str) -> dict[int, list[dict]]:
    out: dict = defaultdict(list)
    for r in d[table].to_pylist():
        out[r["file_id"]].append(r)
    return out


def _text(sub: str, f: dict) -> str:
    with open(os.path.join(CORPUS, sub, f["path"]), encoding="utf-8") as fh:
        return fh.read()


def _human_tolerance(n: int) -> float:
    """How far HumanReadableNumBytes may round n (1 decimal for KiB, 2 for MiB and above)."""
    if n < 1024:
        return 0
    return 1024 * 0.05 if n < 1 << 20 else (1 << 20) * 0.005 * (n >> 20 or 1)


@pytest.mark.parametrize("sub", DIRS)
def test_facts_each_module_states(sub: str) -> None:
    d = read("rust", sub)
    allocs, assigns = _by_file(d, "allocations"), _by_file(d, "assignments")
    values, totals = _by_file(d, "values"), _by_file(d, "totals")
    ranges, peak, schedule = _by_file(d, "live_ranges"), _by_file(d, "peak"), _by_file(d, "schedule")
    report, instrs, modules = _by_file(d, "memory_report"), _by_file(d, "instructions"), _by_file(d, "modules")
    checked = Counter()
    for (mid, mname), kinds in _modules(d).items():
        # HLO: the header names the module of the file name; only optimized modules are scheduled
        # (printed `is_scheduled=true` from jax 0.4.30 on)
        for stage in ("hlo_before_optimizations", "hlo_after_optimizations", "hlo_pass"):
            for f in kinds.get(stage, []):
                (m,) = modules[f["file_id"]]
                assert m["name"] == mname, f["path"]
                raw = re.match(r"HloModule \S+, is_scheduled=true", _text(sub, f)) is not None
                assert m["is_scheduled"] == raw, f["path"]
                if stage == "hlo_before_optimizations":
                    assert not raw
        (ba,) = kinds["buffer_assignment"]
        (after,) = kinds["hlo_after_optimizations"]
        names = {i["name"] for i in instrs[after["file_id"]]}
        assert names
        ba_text = _text(sub, ba)
        split = kinds.get("buffer_assignment_values", [])
        values_file = split[0] if split else ba
        live_file = (kinds.get("live_range") or [ba])[0]

        # allocations: as many as the raw lines, sizes as printed; values assigned inside them
        raw_sizes = [int(s) for s in re.findall(r"^allocation \d+: size (\d+)", ba_text, re.M)]
        a = allocs[ba["file_id"]]
        assert [x["size"] for x in a] == raw_sizes and a
        by_index = {x["allocation"]: x for x in a}
        for v in assigns[ba["file_id"]]:
            assert v["offset"] + v["size"] <= by_index[v["allocation"]]["size"]
            assert v["instruction"] in names, (ba["path"], v["instruction"])  # a value of an instruction
        # Total bytes used = sum of the allocation sizes (the combined file or the -values file)
        (total,) = re.findall(r"^Total bytes used: (\d+) ", _text(sub, values_file), re.M)
        assert [t["value"] for t in totals[values_file["file_id"]]
                if t["key"] == "total_bytes_used"] == [int(total)] == [sum(raw_sizes)]
        # the value blocks are the values assigned to allocations
        vals = values[values_file["file_id"]]
        assert {v["value_id"] for v in vals} == {v["value_id"] for v in assigns[ba["file_id"]]}
        value_names = {(v["instruction"], v["shape_index"] or "{}") for v in vals}

        # live range: the schedule names instructions of the optimized module; every live range
        # names a value; every peak entry names a buffer with a live range
        sched = schedule[live_file["file_id"]]
        (maximum,) = [t["value"] for t in totals[live_file["file_id"]] if t["key"] == "max"]
        assert [s["position"] for s in sched] == list(range(maximum))
        # compact tuple operands (jax >= 0.11): the schedule also names the compiler's own
        # get-tuple-elements (`get-tuple-element.21`, `while.8`), which the HLO text no longer
        # prints: the values file's non-compact `from instruction:` lines still name them
        printed = set(re.findall(r"%([A-Za-z_][A-Za-z0-9_.\-]*)", "\n".join(
            re.findall(r"^ from instruction: (.*)$", _text(sub, values_file), re.M))))
        assert {s["instruction"] for s in sched} <= names | printed
        lr = ranges[live_file["file_id"]]
        assert lr and all((r["instruction"], r["shape_index"]) in value_names for r in lr), live_file["path"]
        assert all(0 <= r["start"] <= r["end"] <= maximum for r in lr)
        lr_instructions = {r["instruction"] for r in lr}
        assert {p["instruction"] for p in peak[live_file["file_id"]]} <= lr_instructions
        checked["modules"] += 1

        # the memory-usage report, either layout, against the allocations and their values
        for rep in kinds.get("memory_usage_report", []):
            rows = report[rep["file_id"]]
            t = {r["key"]: r for r in totals[rep["file_id"]]}
            rep_text = _text(sub, rep)
            assert rows
            per_offset = Counter((v["allocation"], v["offset"]) for v in assigns[ba["file_id"]])
            if "total_bytes_used" in t:  # allocation list (jax 0.4.35-0.8.3)
                assert t["total_bytes_used"]["value"] == sum(raw_sizes)
                listed = [r for r in rows if r["row_kind"] == "allocation"]
                assert len(listed) == len(re.findall(r"^ *\S+\( *\d+%\); +\S+; allocation \d+: ", rep_text, re.M))
                # every allocation once, largest first (size desc, index asc), up to the cut-off
                # line `The rest N allocations are less than P% of the total size and not shown.`
                rest = t["rest_allocations"]["value"] if "rest_allocations" in t else 0
                assert rest == sum(int(n) for n in re.findall(r"^The rest (\d+) allocations ", rep_text, re.M))
                ranked = sorted(a, key=lambda x: (-x["size"], x["allocation"]))
                assert [r["allocation"] for r in listed] == [x["allocation"] for x in ranked][:len(ranked) - rest]
                if rest:
                    shown = sum(x["size"] for x in ranked[:len(ranked) - rest])
                    assert sum(raw_sizes) - shown < sum(raw_sizes) * t["rest_percent"]["value"] / 100
                for r in listed:
                    exact = by_index[r["allocation"]]
                    assert abs(r["size"] - exact["size"]) <= _human_tolerance(exact["size"])
                    assert (r["flags"], r["color"]) == (exact["flags"], exact["color"])
                offsets = [r for r in rows if r["row_kind"] == "offsets"]
                for r in offsets:  # each row: an offset of its allocation holding that many values
                    assert per_offset[(r["allocation"], r["offset"])] == r["used_by_n_values"], (rep["path"], r)
                multi = {i for i, x in by_index.items() if sum(1 for k in per_offset if k[0] == i) > 1}
                assert multi <= {r["allocation"] for r in offsets}
            else:  # table form (jax 0.9.2+): table t of a color is its allocation of rank t
                raw_totals = {int(c): int(n) for c, n in re.findall(
                    r"^Memory Space: .* \(color=(\d+)\)\nTotal bytes: (\d+) ", rep_text, re.M)}
                for color, n in raw_totals.items():
                    assert n == sum(x["size"] for x in a if x["color"] == color)
                tables = defaultdict(list)
                for r in rows:
                    tables[(r["color"], r["table"])].append(r)
                assert len(tables) == rep_text.count("  cumulative_size;")
                for (color, k), trows in tables.items():
                    ranked = sorted((x for x in a if x["color"] == color), key=lambda x: (-x["size"], x["allocation"]))
                    index = ranked[k]["allocation"]
                    for r in trows:
                        assert per_offset[(index, r["offset"])] == r["used_by_n_values"], (rep["path"], r)
            checked["reports"] += 1
    assert checked["modules"] > 0


# ------------------------------------------------------------- the cross-checks see every release


def test_every_release_is_in_the_cross_checks() -> None:
    import test_hlo
    import test_rust_vs_reference as rvr

    rel = {os.path.relpath(str(p), CORPUS).replace(os.sep, "/") for p in rvr.DIRECTORIES}
    assert set(DIRS) <= rel  # directories read whole by both readers
    every_file = {os.path.relpath(str(p), CORPUS).replace(os.sep, "/") for p in rvr.ALL_FILES
                  if str(p).startswith(CORPUS + os.sep)}
    for sub in DIRS:
        assert {f"{sub}/{p}" for p in walked(os.path.join(CORPUS, sub))} <= every_file  # and file by file
    hlo_files = {os.path.relpath(p, CORPUS).replace(os.sep, "/") for p in test_hlo.HLO_FILES
                 if p.startswith(CORPUS + os.sep)}
    for sub in DIRS:  # every HLO module file goes to XLA's parser (test_hlo_vs_xla) and to both readers
        want = {f"{sub}/{p}" for p in walked(os.path.join(CORPUS, sub)) if expected(p)[0] == "hlo_module"}
        assert want and want <= hlo_files, sub
    assert {r.split("/")[0] for r in rel} == set(RELEASES)
    assert len(RELEASES) >= 12
