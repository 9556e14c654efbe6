"""Every file libtpu and the CUDA plugin write (jax 0.12.0.1, tests/data/accel) is classified and
read or named: a strict read has no error, each compile is one module named as jax names it (no
phantom ``module_NNNN`` beside ``module_NNNN.jit_f`` from libtpu's ``.cl_<build>`` infix), and
the Rust core and the reference give the same tables. Issue 47, item 1."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

import pyarrow.compute as pc

import hlodump
import hlodump.reference
from test_rust_vs_reference import assert_same_tables

module_list = importlib.import_module("hlodump.analysis.modules").module_list

ACCEL = Path(__file__).parent / "data" / "accel"
FOLDERS = sorted(p for p in ACCEL.glob("*/*") if p.is_dir())
IDS = [f"{p.parent.name}/{p.name}" for p in FOLDERS]


def compiled_names(folder: Path) -> list[str]:
    """The module name of every compile of the program: jax's ``module_name``, or for a failed
    compile the module its error names (``HLO module: jit_step.``)."""
    out = []
    for line in (folder.parent / f"{folder.name}.compiles.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("module_name"):
            out.append(rec["module_name"])
        elif m := re.search(r"HLO module: ([^\s]+?)\.?(?:\s|$)", rec.get("error") or ""):
            out.append(m[1])
    return out


def test_the_sample_is_here() -> None:
    assert len(FOLDERS) >= 20


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_strict_read_one_module_per_compile(folder: Path) -> None:
    d = hlodump.read_arrow(folder, string_view=False)  # on_error="raise": any problem raises
    assert d.errors.num_rows == 0
    files = d.files.to_pylist()
    assert all(f["error"] is None for f in files)
    # every file belongs to a module by its name (or its module's folder)
    assert all(f["module_id"] is not None and f["module_name"] for f in files), folder
    modules = {(f["module_id"], f["module_name"]) for f in files}
    assert sorted(name for _, name in modules) == sorted(compiled_names(folder))
    # what is none of our formats is named by its suffix: MLIR and binary protos only
    for f in files:
        if f["content_kind"] == "unknown":
            assert f["path"].endswith((".mlir", ".pb")), f["path"]
    # the summary's modules are the compiles too
    keys = [m.key for m in module_list(d)]
    assert [k.split(".", 1)[1] for k in keys] == sorted(compiled_names(folder))


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_rust_and_reference_agree(folder: Path) -> None:
    fast = hlodump.read_arrow(folder, on_error="collect", string_view=False)
    ref = hlodump.reference.read_arrow(folder, on_error="collect", string_view=False)
    assert_same_tables(fast, ref, str(folder))


def test_tpu_names_and_stages() -> None:
    # the proto program: .hlo.pb twins of every stage; the mlp program: the text per-module folder
    d = hlodump.read_arrow([ACCEL / "tpu_v5e_2x4" / "proto", ACCEL / "tpu_v5e_2x4" / "mlp"], string_view=False)
    by_end = {f["path"].split(".cl_1004524046", 1)[1]: f for f in d.files.to_pylist()}
    for stage in ("before_optimizations", "after_optimizations", "after_optimizations_before_buffer_assignment",
                  "after_optimizations_after_buffer_assignment", "after_codegen"):
        f = by_end[f".{stage}.txt"]
        assert (f["kind"], f["stage"], f["module_name"], f["parsed"]) == ("hlo_module", stage, "jit_f", True)
        assert by_end[f".{stage}.hlo.pb"]["stage"] == stage
    for name, kind in (("execution_options.txt", "proto_text"), ("hlo_module_config.txt", "proto_text"),
                       ("target_arguments.txt", "proto_text"), ("transfer_stats.txt", "proto_text"),
                       ("basic_compiler_metadata.txt", "proto_text"), ("tpu_comp_env.txt", "debug_options"),
                       ("flagfile", "flagfile"), ("/compile_options.textproto", "compile_options"),
                       ("/topology.textproto", "proto_text")):
        f = by_end[("" if name.startswith("/") else ".") + name]
        assert (f["kind"], f["module_name"], f["stage"], f["parsed"]) == (kind, "jit_f", None, True), name
    # options.source names the file (transfer_stats.txt holds empty messages only: no rows)
    sources = set(d.options["source"].to_pylist())
    assert {"execution_options", "hlo_module_config", "target_arguments", "tpu_comp_env", "flagfile",
            "compile_options", "topology", "basic_compiler_metadata", "debug_options"} <= sources
    # a field printed by number keeps its number as its key
    keys = set(d.options.filter(pc.equal(d.options["source"], "compile_options"))["key"].to_pylist())
    assert "executable_build_options.debug_options.555" in keys


def test_gpu_names_and_stages() -> None:
    d = hlodump.read_arrow(ACCEL / "gpu_h100" / "proto", string_view=False)
    by_end = {f["path"].split(".jit_f", 1)[1]: f for f in d.files.to_pylist()}
    assert {f["module_id"] for f in by_end.values()} == {142457}  # 6 digits
    for stage in ("before_config_assignment", "after_spmd_partitioner"):
        assert (by_end[f".{stage}.txt"]["kind"], by_end[f".{stage}.txt"]["stage"]) == ("hlo_module", stage)
    for name, source in (("autotune_results.pbtxt", "autotune_results"),
                         ("gpu_target_config.pbtxt", "gpu_target_config"), ("config.pbtxt", "hlo_module_config"),
                         ("thunk_metadata.txt", "thunk_metadata")):
        f = by_end["." + name]
        assert (f["kind"], f["module_name"], f["parsed"]) == ("proto_text", "jit_f", True), name
        assert source in d.options.filter(pc.equal(d.options["file_id"], f["file_id"]))["source"].to_pylist()
    assert by_end[".thunk_sequence.txt"]["kind"] == "thunk_sequence"


NAMES = [  # (name, kind, module_id, module_name, stage) of names seen in the issue, not in the sample
    ("module_0008.jit_step.cl_1004524046.sparse_core_specific_metadata.txt", "other", 8, "jit_step", None),
    ("module_0005.jit_step.cl_1004524046.host_transfers.txt", "other", 5, "jit_step", None),
    ("module_0171.jit_step.cl_1004524046.oom_intermediate_module.txt", "hlo_module", 171, "jit_step",
     "oom_intermediate_module"),
    ("module_66918.jit_f.thunk_sequence_after_thunk_passes.txt", "other", 66918, "jit_f", None),
    ("module_66918.jit_f.priority_fusion_dump.txt", "other", 66918, "jit_f", None),
    ("module_66918.jit_f.before_config_assignment.txt", "hlo_module", 66918, "jit_f", "before_config_assignment"),
    ("module_0001.jit_f.after_codegen.hlo.pb", "other", 1, "jit_f", "after_codegen"),
    ("module_0001.jit_f.ptx", "other", 1, None, None),
    ("triton_gemm_fusion.ttir", "other", None, None, None),
]


@pytest.mark.parametrize("name,kind,mid,mname,stage", NAMES)
def test_names_of_both_readers(name: str, kind: str, mid, mname, stage) -> None:
    from hlodump._core import classify_name
    from hlodump.reference.files import classify

    want = {"kind": kind, "module_id": mid, "module_name": mname, "stage": stage}
    assert {k: classify(name)[k] for k in want} == want
    assert {k: dict(classify_name(name))[k] for k in want} == want


# a compile_options.textproto with what protobuf's text format allows beyond what XLA prints
TEXTPROTO = (b"executable_build_options {\n  # a comment\n  debug_options {\n    xla_x: 1\n    555: 0  # by number\n"
             b"  }\n  v: [1, \"a,b\", 'c']\n  m <\n    s: \"q\\\"# r\"\n  >\n  [ext.y] {\n    z: E\n  }\n}\n")


@pytest.mark.parametrize("impl", ["rust", "reference"])
def test_numbered_fields_and_the_rest_of_text_format(impl: str, tmp_path: Path) -> None:
    folder = tmp_path / "module_0000.jit_f.cl_1"
    folder.mkdir()
    (folder / "compile_options.textproto").write_bytes(TEXTPROTO)
    read = hlodump.read_arrow if impl == "rust" else hlodump.reference.read_arrow
    d = read(folder / "compile_options.textproto", string_view=False)
    rows = [(r["source"], r["key"], r["value"], r["line"]) for r in d.options.to_pylist()]
    b = "executable_build_options."
    assert rows == [
        ("compile_options", b + "debug_options.xla_x", "1", 4),
        ("compile_options", b + "debug_options.555", "0", 5),
        ("compile_options", b + "v", "1", 7), ("compile_options", b + "v", "a,b", 7),
        ("compile_options", b + "v", "c", 7),
        ("compile_options", b + "m.s", 'q\\"# r', 9),
        ("compile_options", b + "[ext.y].z", "E", 12),
    ]
    (f,) = d.files.to_pylist()
    assert (f["kind"], f["module_id"], f["module_name"]) == ("compile_options", 0, "jit_f")


@pytest.mark.parametrize("impl", ["rust", "reference"])
def test_a_wrong_closer_is_an_error(impl: str, tmp_path: Path) -> None:
    p = tmp_path / "x.execution_options.txt"
    p.write_bytes(b"a: 1\nm <\n  b: 2\n}\n")
    read = hlodump.read_arrow if impl == "rust" else hlodump.reference.read_arrow
    d = read(p, on_error="collect", string_view=False)
    assert [e["message"] for e in d.errors.to_pylist()] == [
        "'}' where '>' closes the open message", "the file ends inside message 'm' (a '>' is missing: cut short?)"]
    assert set(d.options["source"].to_pylist()) == {"execution_options"}
