"""GPU thunks joined to their HLO instructions (issue 47, item 6) on the real jax 0.12 GPU dumps.

jax 0.12 prints no instruction on a thunk line, only the thunk's id (``thunks.printed_id``) and
kernel; ``*.thunk_metadata.txt`` names each id's instruction (the ``thunk_metadata`` table) and
``analysis.thunk_instructions`` joins them per module, with the HLO around each instruction."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import pytest

import hlodump
import hlodump.reference
from conftest import DATA
from hlodump.analysis import thunk_instructions

SAMPLES = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(DATA, "accel", "gpu_*", "*", "*.thunk_metadata.txt")))
TABLES = ["files", "thunks", "thunk_metadata", "options", "instructions", "computations"]


def _both(path: str | Path) -> tuple[hlodump.Dump, hlodump.Dump]:
    d = hlodump.read_arrow(path, tables=TABLES)
    r = hlodump.reference.read_arrow(path, tables=TABLES)
    for t in ("thunks", "thunk_metadata", "options"):
        assert d[t].to_pylist() == r[t].to_pylist(), t  # Rust = reference
    return d, r


def test_the_sample_has_gpu_thunks() -> None:
    assert len(SAMPLES) >= 10


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: os.path.relpath(p, DATA))
def test_every_thunk_of_the_sample_names_its_hlo_instruction(path: str) -> None:
    d, r = _both(path)
    rows = thunk_instructions(d).to_pylist()
    assert rows == thunk_instructions(r).to_pylist()
    assert len(rows) == sum(k is not None for k in d.thunks.column("kind").to_pylist())
    meta = {m["thunk_id"]: m for m in d.thunk_metadata.to_pylist() if m["thunk_id"] is not None}
    for row in rows:
        m = meta.get(row["printed_id"])
        if m is not None:
            # the metadata's instruction, of the same kind, found in the after-optimizations HLO
            assert (row["instruction"], row["instruction_from"], m["kind"]) == (m["instruction"], "metadata", row["kind"])
            assert row["computation"] is not None and row["opcode"] is not None, row
        elif row["printed_id"] == 0:
            # made by a thunk pass (after_thunk_passes): no id, no instruction of its own
            assert (row["kind"], row["instruction"]) == ("kCommandBuffer", None)
        else:
            # XLA wrote no metadata for a thunk nested in a dynamic-slice fusion: the fusion names it
            assert row["instruction"] is None and row["fusion"] is not None, row


def test_mlp_by_hand() -> None:
    """Read off module_0001.jit_f.thunk_metadata.txt and the after-optimizations HLO by hand."""
    d, _ = _both(os.path.join(DATA, "accel", "gpu_h100", "mlp"))
    got = [(r["printed_id"], r["kernel_name"], r["instruction"], r["computation"], r["opcode"], r["fusion_kind"], r["fusion"])
           for r in thunk_instructions(d).to_pylist()]
    assert got == [
        (1, "gemm_fusion_dot_2", "gemm_fusion_dot.2", "main.0_spmd", "fusion", "kCustom", "gemm_fusion_dot.2"),
        (2, "loop_reduce_fusion", "loop_reduce_fusion", "main.0_spmd", "fusion", "kLoop", "loop_reduce_fusion"),
        (3, "gemm_fusion_dot_3", "gemm_fusion_dot.3", "main.0_spmd", "fusion", "kCustom", "gemm_fusion_dot.3"),
        (4, "loop_reduce_fusion_1", "loop_reduce_fusion.1", "main.0_spmd", "fusion", "kLoop", "loop_reduce_fusion.1"),
        (5, None, "all-reduce.3", "main.0_spmd", "all-reduce", None, None),
    ]


def test_a_reused_kernel_is_named_by_the_metadata_not_the_kernel() -> None:
    # llama: thunks 009 and 011 launch one kernel, loop_dynamic_slice_fusion_17, for two fusions
    d = hlodump.read_arrow(os.path.join(DATA, "accel", "gpu_h100", "llama"), tables=TABLES)
    rows = {(r["printed_id"], r["instruction"]) for r in thunk_instructions(d).to_pylist()
            if r["kernel_name"] == "loop_dynamic_slice_fusion_17"}
    assert {(9, "loop_dynamic_slice_fusion.17"), (11, "loop_dynamic_slice_fusion.18")} <= rows


def test_without_metadata_the_kernel_name_is_the_fallback(tmp_path: Path) -> None:
    src = os.path.join(DATA, "accel", "gpu_h100", "mlp")
    for f in os.listdir(src):
        if not f.endswith(".thunk_metadata.txt"):
            shutil.copy(os.path.join(src, f), tmp_path)
    d, r = _both(tmp_path)
    assert d.thunk_metadata.num_rows == 0
    rows = thunk_instructions(d).to_pylist()
    assert rows == thunk_instructions(r).to_pylist()
    got = [(x["kernel_name"], x["instruction"], x["instruction_from"]) for x in rows]
    assert got == [("gemm_fusion_dot_2", "gemm_fusion_dot.2", "kernel_name"),
                   ("loop_reduce_fusion", "loop_reduce_fusion", "kernel_name"),
                   ("gemm_fusion_dot_3", "gemm_fusion_dot.3", "kernel_name"),
                   ("loop_reduce_fusion_1", "loop_reduce_fusion.1", "kernel_name"),
                   (None, None, None)]  # no metadata, no kernel: null, no error


def test_an_inline_annotation_is_kept(tmp_path: Path) -> None:
    # older XLA printed the profile annotation on the line (with a `%` in some): it wins over
    # metadata. (A module is analysed when it has something besides thunks: here its HLO.)
    (tmp_path / "module_0001.jit_f.gpu_after_optimizations.txt").write_text(
        "HloModule jit_f, is_scheduled=true\n\n"
        "%fused (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n  ROOT %n = f32[4]{0} negate(%p)\n}\n\n"
        "ENTRY %main (a: f32[4]) -> f32[4] {\n  %a = f32[4]{0} parameter(0)\n"
        "  %fusion.1 = f32[4]{0} fusion(%a), kind=kLoop, calls=%fused\n"
        "  ROOT %copy.5 = f32[4]{0} copy(%fusion.1)\n}\n")
    (tmp_path / "module_0001.jit_f.thunk_sequence.txt").write_text(
        "kKernel\tfusion.1, kernel = fusion_1, launch dimensions = blocks: {2, 1, 1}, threads/block: {256, 1, 1}, "
        "shared memory [B]: 0, cluster_dim = nullopt\nkCopy  \t%copy.5\nkCopy  \t\n")
    d, r = _both(tmp_path)
    rows = thunk_instructions(d).to_pylist()
    assert rows == thunk_instructions(r).to_pylist()
    assert [(x["printed_id"], x["instruction"], x["instruction_from"], x["computation"], x["fusion"]) for x in rows] == [
        (None, "fusion.1", "printed", "main", "fusion.1"), (None, "copy.5", "printed", "main", None),
        (None, None, None, None, None)]


def test_thunk_metadata_rows(tmp_path: Path) -> None:
    """A message per row: fields omitted at their default are null (protobuf prints no id 0, no
    empty annotation), other fields and top-level messages are only options rows, a message
    cut short is an error and no row, in both readers."""
    text = ('thunk_metadata {\n  thunk_info {\n    profile_annotation: "command_buffer_8"\n  }\n'
            '  thunk_kind: "kCommandBuffer"\n}\n'
            'thunk_metadata {\n  thunk_info {\n  }\n  thunk_kind: "kSequential"\n}\n'
            'other {\n  thunk_id: 3\n}\n'
            'thunk_metadata {\n  thunk_info {\n    thunk_id: 7\n    profile_annotation: "copy.2"\n'
            '    extra: 1\n  }\n  thunk_kind: "kCopy"\n}\n'
            'thunk_metadata {\n  thunk_info {\n    thunk_id: 99999999999999999999\n  }\n}\n'
            'thunk_metadata {\n  thunk_info {\n    thunk_id: 8\n')
    (tmp_path / "module_0001.jit_f.thunk_metadata.txt").write_text(text)
    d = hlodump.read_arrow(tmp_path, on_error="collect")
    r = hlodump.reference.read_arrow(tmp_path, on_error="collect")
    assert d.thunk_metadata.to_pylist() == r.thunk_metadata.to_pylist()
    assert d.errors.to_pylist() == r.errors.to_pylist()
    got = [(m["thunk_id"], m["instruction"], m["kind"], m["line"]) for m in d.thunk_metadata.to_pylist()]
    assert got == [(None, "command_buffer_8", "kCommandBuffer", 1), (None, None, "kSequential", 7),
                   (7, "copy.2", "kCopy", 15), (None, None, None, 23)]
    assert d.errors.num_rows == 1
