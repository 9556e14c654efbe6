"""File-name classification and content sniffing (FORMATS.md §1), reference and Rust.

* CASES: exact expected name parts for real corpus names and for hand-made names of the forms the
  corpus lacks (§1.3/§1.4). The same table is copied into the Rust unit tests of src/files/name.rs
  (between CASES-BEGIN / CASES-END; ``python tests/test_files.py --rust`` prints it).
* invariants over every corpus file name, and ``sniff`` over every corpus file and seed.
* agreement: ``hlodump._core.classify_name`` (Rust) against the reference, field by field, on
  every corpus name and every CASES name (skipped until the native function exists).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from hlodump.reference.files import CONTENT_KINDS, KINDS, classify, classify_path, sniff

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "corpus"
SEEDS = DATA / "seeds"

KEYS = ("kind", "module_id", "module_name", "stage", "backend", "pass_index", "pipeline",
        "after_pass", "before_pass", "substep")

H, BA, BAV, LR, MUR, DO, O = ("hlo_module", "buffer_assignment", "buffer_assignment_values",
                              "live_range", "memory_usage_report", "debug_options", "other")
BO, AO, P = "before_optimizations", "after_optimizations", "pass"
N = None

# (name, kind, module_id, module_name, stage, backend, pass_index, pipeline, after_pass,
#  before_pass, substep)
CASES = [
    # ---- real names (jax 0.10.2 / 0.4.26 CPU corpus)
    ("module_0000.jit_rnn.before_optimizations.txt", H, 0, "jit_rnn", BO, N, N, N, N, N, N),
    ("module_0000.jit_rnn.cpu_after_optimizations.txt", H, 0, "jit_rnn", AO, "cpu", N, N, N, N, N),
    ("module_0000.jit_rnn.cpu_after_optimizations-buffer-assignment.txt",
     BA, 0, "jit_rnn", AO, "cpu", N, N, N, N, N),
    ("module_0000.jit_rnn.cpu_after_optimizations-buffer-assignment-values.txt",
     BAV, 0, "jit_rnn", AO, "cpu", N, N, N, N, N),
    ("module_0000.jit_rnn.cpu_after_optimizations-live-range.txt",
     LR, 0, "jit_rnn", AO, "cpu", N, N, N, N, N),
    ("module_0000.jit_rnn.cpu_after_optimizations-memory-usage-report.txt",
     MUR, 0, "jit_rnn", AO, "cpu", N, N, N, N, N),
    ("module_0000.jit_rnn.debug_options", DO, 0, "jit_rnn", N, N, N, N, N, N, N),
    ("module_0032.jit__lambda.cpu_after_optimizations.txt", H, 32, "jit__lambda", AO, "cpu",
     N, N, N, N, N),
    ("module_0006.jit_sm_collectives.cpu_after_optimizations-live-range.txt",
     LR, 6, "jit_sm_collectives", AO, "cpu", N, N, N, N, N),
    ("module_0008.pmap__lambda_.before_optimizations.txt", H, 8, "pmap__lambda_", BO,
     N, N, N, N, N, N),
    ("module_0011.jit__lambda_.cpu_after_optimizations-buffer-assignment.txt",
     BA, 11, "jit__lambda_", AO, "cpu", N, N, N, N, N),
    ("module_0000.jit_train_step.0000.async-collective.after_pipeline-start"
     ".before_async-collective-replacer.txt",
     H, 0, "jit_train_step", P, N, 0, "async-collective", "pipeline-start",
     "async-collective-replacer", N),
    ("module_0000.jit_train_step.0005.HLO_passes_through_layout_assignment"
     ".after_batched_gather_scatter_normalizer.before_result_caster.txt",
     H, 0, "jit_train_step", P, N, 5, "HLO_passes_through_layout_assignment",
     "batched_gather_scatter_normalizer", "result_caster", N),
    ("module_0000.jit_train_step.0040.HLO_passes_after_layout_assignment.after_pipeline-start"
     ".before_after_layout_assignment.txt",
     H, 0, "jit_train_step", P, N, 40, "HLO_passes_after_layout_assignment", "pipeline-start",
     "after_layout_assignment", N),
    ("module_0000.jit_train_step.0045.simplification_after_layout_assignment.after_cse"
     ".before_pipeline-end.txt",
     H, 0, "jit_train_step", P, N, 45, "simplification_after_layout_assignment", "cse",
     "pipeline-end", N),
    ("module_0000.jit_train_step.0050.HLO_passes_after_layout_assignment"
     ".after_simplification_after_layout_assignment.before_cpu-parallel-task-assigner.txt",
     H, 0, "jit_train_step", P, N, 50, "HLO_passes_after_layout_assignment",
     "simplification_after_layout_assignment", "cpu-parallel-task-assigner", N),
    ("module_0002.jit_forward.0045.HLO_passes_after_scheduling.after_pipeline-start"
     ".before_apply-xla-transforms.txt",
     H, 2, "jit_forward", P, N, 45, "HLO_passes_after_scheduling", "pipeline-start",
     "apply-xla-transforms", N),
    ("module_0000.jit_train_step.0045.copy-insertion.after_adding_copies_to_resolve_interference"
     ".txt",
     H, 0, "jit_train_step", P, N, 45, N, "copy-insertion",
     N, "after_adding_copies_to_resolve_interference"),
    ("module_0001.jit_forward.0039.HLO_passes_after_layout_assignment.after_copy-insertion"
     ".before_dce.txt",
     H, 1, "jit_forward", P, N, 39, "HLO_passes_after_layout_assignment", "copy-insertion",
     "dce", N),
    ("module.mlir", O, N, N, N, N, N, N, N, N, N),
    ("compile_options.textproto", O, N, N, N, N, N, N, N, N, N),
    ("topology.textproto", O, N, N, N, N, N, N, N, N, N),
    ("000_d4ec204070c56195.txt", O, N, N, N, N, N, N, N, N, N),
    ("002_257473ac4bd6642c.txt", O, N, N, N, N, N, N, N, N, N),
    ("README.md", O, N, N, N, N, N, N, N, N, N),
    # ---- doc examples (§1.3, §1.4)
    ("module_0002.jit__threefry_seed.bitcast_concatenate_fusion_kernel_module.ir-no-opt.ll",
     O, 2, N, N, N, N, N, N, N, N),
    ("module_0002.jit__threefry_seed.obj-file.bitcast_concatenate_fusion_kernel_module.o",
     O, 2, N, N, N, N, N, N, N, N),
    ("module_0024.jit_model.__compute_module_add_bitcast_fusion.5.ir-with-opt.ll",
     O, 24, N, N, N, N, N, N, N, N),
    ("module_0000.jit_stage.0005.simplification.after_pipeline-start.before_algsimp.txt",
     H, 0, "jit_stage", P, N, 5, "simplification", "pipeline-start", "algsimp", N),
    ("module_0000.jit_stage.0007.HLO_passes_through_layout_assignment.after_layout-assignment"
     ".before_sub-byte-size-setter.txt",
     H, 0, "jit_stage", P, N, 7, "HLO_passes_through_layout_assignment", "layout-assignment",
     "sub-byte-size-setter", N),
    ("module_0000.jit_stage.0011.after_layout_assignment.after_pipeline-start"
     ".before_pipeline-end.txt",
     H, 0, "jit_stage", P, N, 11, "after_layout_assignment", "pipeline-start", "pipeline-end", N),
    ("module_0000.jit_stage.0013.copy-insertion.after_adding_copies_to_resolve_interference.txt",
     H, 0, "jit_stage", P, N, 13, N, "copy-insertion", N,
     "after_adding_copies_to_resolve_interference"),
    # ---- hand-made: backends, prefixes, cl numbers, ids, odd module names
    ("module_0001.jit_f.sm_8.0_gpu_after_optimizations.txt",
     H, 1, "jit_f", AO, "sm_8.0_gpu", N, N, N, N, N),
    ("module_0001.jit_f.sm_8.0_gpu_after_optimizations-buffer-assignment.txt",
     BA, 1, "jit_f", AO, "sm_8.0_gpu", N, N, N, N, N),
    ("module_0001.jit_f.sm_9.0a_gpu_after_optimizations-memory-usage-report.txt",
     MUR, 1, "jit_f", AO, "sm_9.0a_gpu", N, N, N, N, N),
    ("module_0001.sm_8.0_gpu_after_optimizations.txt", H, 1, N, AO, "sm_8.0_gpu", N, N, N, N, N),
    ("module_0001.jit_f.gpu_after_optimizations.txt", H, 1, "jit_f", AO, "gpu", N, N, N, N, N),
    ("module_0001.jit_f.gfx90a_gpu_after_optimizations.txt",
     H, 1, "jit_f", AO, "gfx90a_gpu", N, N, N, N, N),
    ("module_0001.jit_f.after_optimizations.txt", H, 1, "jit_f", AO, N, N, N, N, N, N),
    ("module_0001.jit_f.after_optimizations-buffer-assignment.txt",
     BA, 1, "jit_f", AO, N, N, N, N, N, N),
    ("module_0001.cpu_after_optimizations-buffer-assignment.txt",
     BA, 1, N, AO, "cpu", N, N, N, N, N),
    ("1712345678901234.module_0001.jit_f.before_optimizations.txt",
     H, 1, "jit_f", BO, N, N, N, N, N, N),
    ("1712345678901234.module_0001.jit_f.cpu_after_optimizations-live-range.txt",
     LR, 1, "jit_f", AO, "cpu", N, N, N, N, N),
    ("1712345678901234.module_0003.jit_f.0012.simplification.after_dce.before_cse.txt",
     H, 3, "jit_f", P, N, 12, "simplification", "dce", "cse", N),
    ("fused_computation.1.module_0001.jit_f._fusion.html", O, 1, "jit_f", N, N, N, N, N, N, N),
    ("main.5.module_0001.jit_f._fusion.pyz", O, 1, "jit_f", N, N, N, N, N, N, N),
    ("lmhlo.module_0001.jit_f.mlir", O, 1, "jit_f", N, N, N, N, N, N, N),
    # per-kernel MLIR (XLA:CPU emitters): the module is the first segment; kernels hold dots, hyphens
    ("module_0001.jit_rnn.add_tanh_fusion_kernel_module-pre-optimization.mlir", O, 1, "jit_rnn", N, N, N, N, N, N, N),
    ("module_0000.jit__f_scan.__compute_module_add_bitcast_fusion.265-post-lowering.mlir", O, 0, "jit__f_scan", N, N, N, N, N, N, N),
    ("module_0002.jit_scatter.wrapped_reduce-window_kernel_module-post-optimization.mlir", O, 2, "jit_scatter", N, N, N, N, N, N, N),
    ("module_0002.jit_f-pre-optimization.mlir", O, 2, "jit_f-pre-optimization", N, N, N, N, N, N, N),
    ("x.module_0003.jit_g.k-post-lowering.mlir", O, 3, "jit_g", N, N, N, N, N, N, N),
    ("module_0001.a.module_0002.b.k-pre-optimization.mlir", O, 1, "a", N, N, N, N, N, N, N),
    ("module_0001.jit_f.cl_123.before_optimizations.txt", H, 1, "jit_f", BO, N, N, N, N, N, N),
    ("module_0001.jit_f.cl_123.tpu_after_optimizations-buffer-assignment.txt",
     BA, 1, "jit_f", AO, "tpu", N, N, N, N, N),
    ("module_0001.cl_123.before_optimizations.txt", H, 1, N, BO, N, N, N, N, N, N),
    ("module_0001.jit_f.cl_123.debug_options", DO, 1, "jit_f", N, N, N, N, N, N, N),
    ("module_0001.jit_f.cl_123.0003.p.after_a.before_b.txt",
     H, 1, "jit_f", P, N, 3, "p", "a", "b", N),
    ("module_12345.jit_f.before_optimizations.txt", H, 12345, "jit_f", BO, N, N, N, N, N, N),
    ("module_12345.jit_f.0004.p.after_a.before_b.txt", H, 12345, "jit_f", P, N, 4, "p", "a", "b", N),
    ("module_0042.my.model.v2.before_optimizations.txt",
     H, 42, "my.model.v2", BO, N, N, N, N, N, N),
    ("module_0042.my.model.v2.cpu_after_optimizations.txt",
     H, 42, "my.model.v2", AO, "cpu", N, N, N, N, N),
    ("module_0042.my.model.v2.0007.simplification.after_algsimp.before_dce.txt",
     H, 42, "my.model.v2", P, N, 7, "simplification", "algsimp", "dce", N),
    ("module_0042.foo-bar_baz.cpu_after_optimizations-buffer-assignment-values.txt",
     BAV, 42, "foo-bar_baz", AO, "cpu", N, N, N, N, N),
    ("module_0042.jit(f)_(x,y)=z.before_optimizations.txt",
     H, 42, "jit(f)_(x,y)=z", BO, N, N, N, N, N, N),
    ("module_0042.foo.1.debug_options", DO, 42, "foo.1", N, N, N, N, N, N, N),
    ("module_0042.foo.1234.before_optimizations.txt", H, 42, "foo.1234", BO, N, N, N, N, N, N),
    ("module_0042.foo.1234.0005.p.after_a.before_b.txt",
     H, 42, "foo.1234", P, N, 5, "p", "a", "b", N),
    ("module_0042.foo.1234.0013.copy-insertion.after_removing_unnecessary_copies.txt",
     H, 42, "foo.1234", P, N, 13, N, "copy-insertion", N, "after_removing_unnecessary_copies"),
    ("module_0042.module_0007.before_optimizations.txt",
     H, 42, "module_0007", BO, N, N, N, N, N, N),
    ("module_0042.0005.p.after_a.before_b.txt", H, 42, N, P, N, 5, "p", "a", "b", N),
    ("module_0042.before_optimizations.txt", H, 42, N, BO, N, N, N, N, N, N),
    # pass and pipeline names with dots / after_ / before_ inside
    ("module_0001.f.0002.pipe.x.after_a.b.before_c.d.txt",
     H, 1, "f", P, N, 2, "pipe.x", "a.b", "c.d", N),
    ("module_0001.f.0002.p.after_x.before_y.before_z.txt",
     H, 1, "f", P, N, 2, "p", "x.before_y", "z", N),
    ("module_0001.f.0002.p.after_x.before_.txt", H, 1, "f", P, N, 2, N, "p", N, "after_x.before_"),
    # ---- hand-made: other suffixes of §1.3
    ("module_0001.jit_f.before_optimizations.hlo.pb", O, 1, "jit_f", BO, N, N, N, N, N, N),
    ("module_0001.jit_f.cpu_after_optimizations.hlo.pb.gz", O, 1, "jit_f", AO, "cpu",
     N, N, N, N, N),
    ("module_0001.jit_f.sm_8.0_gpu_after_optimizations-memory-usage-report.pb",
     O, 1, "jit_f", AO, "sm_8.0_gpu", N, N, N, N, N),
    ("module_0001.jit_f.cpu_after_optimizations-memory-usage-report.pb.gz",
     O, 1, "jit_f", AO, "cpu", N, N, N, N, N),
    ("module_0001.jit_f.before_optimizations.riegeli", O, 1, "jit_f", BO, N, N, N, N, N, N),
    ("module_0001.jit_f.before_optimizations.dot", O, 1, "jit_f", BO, N, N, N, N, N, N),
    ("module_0001.jit_f.cpu_after_optimizations.html", O, 1, "jit_f", AO, "cpu", N, N, N, N, N),
    ("module_0001.jit_f.cpu_after_optimizations.top_level.html",
     O, 1, "jit_f", AO, "cpu", N, N, N, N, N),
    ("module_0001.jit_f.before_optimizations.url", O, 1, "jit_f", BO, N, N, N, N, N, N),
    ("module_0001.jit_f.before_optimizations.fdo_profile", O, 1, "jit_f", BO, N, N, N, N, N, N),
    ("module_0001.jit_f.0003.p.after_a.before_b.dot", O, 1, "jit_f", P, N, 3, "p", "a", "b", N),
    ("module_0001.jit_f.config.pbtxt", O, 1, "jit_f", N, N, N, N, N, N, N),
    ("module_0001.metadata.textproto", O, 1, N, N, N, N, N, N, N, N),
    ("module_0001.jit_f.thunk_sequence.txt", O, 1, "jit_f", N, N, N, N, N, N, N),
    ("module_0001.jit_f.thunk_sequence_after_thunk_passes.txt",
     O, 1, "jit_f", N, N, N, N, N, N, N),
    ("module_0001.jit_f.ptx", O, 1, N, N, N, N, N, N, N, N),
    ("module_0001.jit_f.gpu_target_config.txt", O, 1, N, N, N, N, N, N, N, N),
    # a compressed file is classified as the file it holds (issue 31: read transparently)
    ("module_0001.jit_f.before_optimizations.txt.gz", H, 1, "jit_f", BO, N, N, N, N, N, N),
    ("module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt.xz", BA, 1, "jit_f", "after_optimizations", "cpu", N, N, N, N, N),
    ("1712345678901234.module_0001.jit_f.execution_0000.hlo_snapshot.pb",
     O, 1, "jit_f", N, N, N, N, N, N, N),
    ("module_jit_f.execution_0003.hlo_snapshot.pb", O, N, "jit_f", N, N, N, N, N, N, N),
    ("module_0001.jit_f.execution_0000.hlo_unoptimized_snapshot.pb",
     O, 1, "jit_f", N, N, N, N, N, N, N),
    ("module_0001.jit_f.execution_0000.hlo_unoptimized_snapshot.txt",
     O, 1, "jit_f", N, N, N, N, N, N, N),
    ("some_proto.module_0001.jit_f.execution_0002.txt", O, 1, "jit_f", N, N, N, N, N, N, N),
    # ---- names that are not XLA's
    ("before_optimizations.txt", O, N, N, N, N, N, N, N, N, N),
    ("x.before_optimizations.txt", H, N, N, BO, N, N, N, N, N, N),
    ("foo-buffer-assignment.txt", BA, N, N, N, N, N, N, N, N, N),
    ("module_001.jit_f.before_optimizations.txt", H, N, N, BO, N, N, N, N, N, N),
    ("module_99999999999.jit_f.before_optimizations.txt", H, N, N, BO, N, N, N, N, N, N),
    ("xmodule_0001.jit_f.before_optimizations.txt", H, N, N, BO, N, N, N, N, N, N),
    ("log.txt", O, N, N, N, N, N, N, N, N, N),
    ("", O, N, N, N, N, N, N, N, N, N),
    ("módulo_0001.ñ.before_optimizations.txt", H, N, N, BO, N, N, N, N, N, N),
    ("module_0001.ñame.before_optimizations.txt", H, 1, "ñame", BO, N, N, N, N, N, N),
]


def _as_dict(case) -> dict:
    return dict(zip(KEYS, case[1:]))


@pytest.mark.parametrize("case", CASES, ids=[c[0] or "<empty>" for c in CASES])
def test_classify_cases(case):
    assert classify(case[0]) == _as_dict(case)


# Paths: a file whose base name names no module takes the module of its nearest parent folder
# named exactly module_NNNN[.name] (jax >= 0.10 per-module folders); nothing else changes.
PATH_CASES = [
    ("module_0024.jit_model/module.mlir", O, 24, "jit_model", N, N, N, N, N, N, N),
    ("jax-0.10.2/misc/module_0024.jit_model/compile_options.textproto", O, 24, "jit_model", N, N, N, N, N, N, N),
    ("/abs/dump/module_0024.jit_model/topology.textproto", O, 24, "jit_model", N, N, N, N, N, N, N),
    ("module_0024/module.mlir", O, 24, N, N, N, N, N, N, N, N),
    ("module_0024.jit_f.cl_7/module.mlir", O, 24, "jit_f", N, N, N, N, N, N, N),
    ("module_0024.my.model/module.mlir", O, 24, "my.model", N, N, N, N, N, N, N),
    ("module_0001.a/module_0002.b/x/module.mlir", O, 2, "b", N, N, N, N, N, N, N),  # nearest wins
    ("module_0024.jit_model/sub/module.mlir", O, 24, "jit_model", N, N, N, N, N, N, N),
    # folders that are not exactly module_NNNN[.name]
    ("x.module_0024.jit_f/module.mlir", O, N, N, N, N, N, N, N, N, N),
    ("module_024.jit_f/module.mlir", O, N, N, N, N, N, N, N, N, N),
    ("module_0024./module.mlir", O, N, N, N, N, N, N, N, N, N),
    ("module_0024x/module.mlir", O, N, N, N, N, N, N, N, N, N),
    ("module_99999999999.f/module.mlir", O, N, N, N, N, N, N, N, N, N),
    ("module_jit_f/module.mlir", O, N, N, N, N, N, N, N, N, N),
    ("module_0024.jit_f", O, 24, N, N, N, N, N, N, N, N),  # a base name, not a folder
    # the base name's own module (or module name) wins; the other parts come from it alone
    ("module_0024.jit_model/module_0001.jit_f.before_optimizations.txt", H, 1, "jit_f", BO, N, N, N, N, N, N),
    ("module_0024.jit_model/module_0001.ptx", O, 1, N, N, N, N, N, N, N, N),
    ("module_0024.jit_model/module_jit_f.execution_0003.hlo_snapshot.pb", O, N, "jit_f", N, N, N, N, N, N, N),
    ("module_0024.jit_model/x.before_optimizations.txt", H, 24, "jit_model", BO, N, N, N, N, N, N),
    ("module_0024.jit_model/foo-buffer-assignment.txt", BA, 24, "jit_model", N, N, N, N, N, N, N),
]


@pytest.mark.parametrize("case", PATH_CASES, ids=[c[0] for c in PATH_CASES])
def test_classify_path_cases(case):
    assert classify_path(case[0]) == _as_dict(case)


@pytest.mark.parametrize("case", CASES, ids=[c[0] or "<empty>" for c in CASES])
def test_classify_path_of_a_bare_name_is_classify(case):
    assert classify_path(case[0]) == classify(case[0])


def _corpus_files() -> list[Path]:
    # dump files only: not the README, nor the oracles beside each release (jax_analysis.json,
    # xla_parse.json) or at the top (replica_groups_across_releases.txt)
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "README.md"
                  and len(p.relative_to(CORPUS).parts) > 2)


def _seed_files() -> list[Path]:
    return sorted(p for p in SEEDS.iterdir() if p.is_file())


def test_corpus_is_there():
    files = _corpus_files()
    assert len(files) >= 690
    names = {p.name for p in files}
    for c in CASES[:19]:  # the real names above exist
        assert c[0] in names, c[0]


_STAGE_KIND = {
    "-buffer-assignment-values.txt": BAV,
    "-buffer-assignment.txt": BA,
    "-live-range.txt": LR,
    "-memory-usage-report.txt": MUR,
}
_PASS1 = re.compile(r"^module_(\d{4})\.([A-Za-z_]+)\.(\d{4})\.(.+?)\.after_(.+)\.before_(.+)\.txt$")
_PASS2 = re.compile(r"^module_(\d{4})\.([A-Za-z_]+)\.(\d{4})\.([^.]+)\.(.+)\.txt$")


def test_corpus_invariants():
    seen = {k: 0 for k in KINDS}
    passes = 0
    for p in _corpus_files():
        name = p.name
        r = classify(name)
        assert set(r) == set(KEYS)
        assert r["kind"] in KINDS
        seen[r["kind"]] += 1
        if re.match(r"^[A-Za-z0-9_]+_\d{10,}$", p.parent.name):
            # jax 0.7.2-0.9.2 per-compile folder <jit name>_<unique id>/ (module.mlir, *.pb): the
            # folder names no module number, so neither the name nor the path gives a module
            assert r == _as_dict((name, O) + (N,) * 10), name
            assert classify_path(f"{p.parent.name}/{name}") == r, p
            continue
        if p.parent.name.startswith("module_"):  # per-module subfolder: module.mlir, *.textproto
            assert r == _as_dict((name, O) + (N,) * 10), name  # the base name alone: no module
            mf = re.match(r"^module_(\d{4})\.([A-Za-z0-9_]+)$", p.parent.name)
            assert mf, p
            want = _as_dict((name, O, int(mf[1]), mf[2]) + (N,) * 8)
            assert classify_path(f"{p.parent.name}/{name}") == want, p  # the folder's module
            assert classify_path(str(p)) == want, p
            continue
        m = re.match(r"^module_(\d+)\.([A-Za-z0-9_]+)\.", name)
        assert m, name  # all corpus dump names have this shape (jax names have no dots)
        assert r["module_id"] == int(m.group(1)), name
        if re.search(r"-(pre-optimization|post-optimization|post-lowering)\.mlir$", name):
            # per-kernel MLIR (jax 0.6.2-0.9.2): other, named after its module (the kernel is not)
            assert r["kind"] == O and r["stage"] is None and r["module_name"] == m.group(2), name
            continue
        assert r["module_name"] == m.group(2), name
        for suffix, kind in _STAGE_KIND.items():
            if name.endswith(suffix):
                assert r["kind"] == kind, name
                assert (r["stage"], r["backend"]) == (AO, "cpu"), name
                break
        else:
            if name.endswith(".debug_options"):
                assert r["kind"] == DO and r["stage"] is None and r["backend"] is None, name
            elif name.endswith(".before_optimizations.txt"):
                assert (r["kind"], r["stage"], r["backend"]) == (H, BO, None), name
            elif name.endswith(".cpu_after_optimizations.txt"):
                assert (r["kind"], r["stage"], r["backend"]) == (H, AO, "cpu"), name
            else:
                m1, m2 = _PASS1.match(name), _PASS2.match(name)
                assert m1 or m2, f"unexpected corpus name {name}"
                passes += 1
                assert r["kind"] == H and r["stage"] == P and r["backend"] is None, name
                assert r["pass_index"] == int((m1 or m2).group(3)), name
                if m1:
                    assert (r["pipeline"], r["after_pass"], r["before_pass"], r["substep"]) == (
                        m1.group(4), m1.group(5), m1.group(6), None), name
                else:
                    assert (r["pipeline"], r["after_pass"], r["before_pass"], r["substep"]) == (
                        None, m2.group(4), None, m2.group(5)), name
        if r["stage"] == P:
            assert r["pass_index"] is not None
        else:
            assert r["pass_index"] is None and r["pipeline"] is None
            assert r["after_pass"] is None and r["before_pass"] is None and r["substep"] is None
    assert passes == 55  # 20 (0.4.26) + 4 (0.8.3) + 23 (0.10.2) + 4 + 4 (0.11.2, 0.12.0.1) kept per-pass dumps
    for k in KINDS:
        assert seen[k] > 0, k


# the first jax release (of those in tests/data/corpus) whose dumps have a file of the kind
FIRST_RELEASE = {BAV: (0, 10, 2), LR: (0, 10, 2), MUR: (0, 4, 35), DO: (0, 6, 2)}


def test_corpus_kinds_from_their_first_release_on():
    seen = {k: set() for k in FIRST_RELEASE}
    releases = set()
    for p in _corpus_files():
        (rel,) = [x for x in p.parts if x.startswith("jax-")]
        v = tuple(int(x) for x in rel[4:].split("."))
        releases.add(v)
        kind = classify(p.name)["kind"]
        if kind in FIRST_RELEASE:
            assert v >= FIRST_RELEASE[kind], p
            seen[kind].add(v)
    for kind, first in FIRST_RELEASE.items():
        assert seen[kind] == {v for v in releases if v >= first}, kind


# ------------------------------------------------------------------------------------ sniff

def test_sniff_agrees_with_kind_on_corpus():
    for p in _corpus_files():
        data = p.read_bytes()
        content = sniff(data)
        assert content in CONTENT_KINDS
        kind = classify(p.name)["kind"]
        if kind == O:
            # module.mlir; compile_options.textproto and topology.textproto are read (options)
            want = {"compile_options.textproto": "compile_options",
                    "topology.textproto": "proto_text"}.get(p.name, "unknown")
            assert content == want, p
        else:
            assert content == kind, p


def test_sniff_seeds():
    want = {"000": BA, "001": BA, "002": H, "003": BA, "004": BA}
    seeds = _seed_files()
    assert len(seeds) == 5
    for p in seeds:
        assert classify(p.name)["kind"] == O
        assert sniff(p.read_bytes()) == want[p.name[:3]], p


SNIFF_CASES = [
    (b"", "empty"),
    (b"\n \n\t\r\n", "empty"),
    (b"HloModule jit_f, is_scheduled=true\n", H),
    (b"\r\n\nHloModule m", H),
    (b"HloModule", "unknown"),
    (b"BufferAssignment:\nallocation 0", BA),
    (b"\nTotal bytes used: 160 (160B)\n", BAV),
    (b"HloLiveRange (max 4):\n", LR),
    (b"HloLiveRange not available (finalized or constructed from proto)", LR),
    (b"Memory Space: default (color=0)\n", MUR),
    (b"memory_space_allocation_entries {\n", MUR),
    (b"*** Begin module_0000.jit_f.before_optimizations.txt ***\n", "stdout_capture"),
    (b"xla_cpu_enable_fast_min_max: false\n", DO),
    (b'xla_dump_to: "/tmp/x"\n', DO),
    (b"xla_gpu_foo: {\n  a: 1\n}\n", DO),
    (b'xla_dump_to:"x"\n', "unknown"),
    (b"xla-dump: 1\n", "unknown"),
    (b"platform_id: 179101572333\n", "proto_text"),
    (b"num_replicas: 1\ndevice_assignment {\n", "proto_text"),
    (b"555: 0\n556: 1\n", "proto_text"),  # fields printed by number
    (b"Note: see below\n", "unknown"),  # prose is not a value
    (b"fusion {\n", "unknown"),
    (b"--xla_foo=1\n", "flagfile"),
    (b"executable_build_options {\n", "compile_options"),
    (b'#loc1 = loc("a")\n', "unknown"),
    (b" HloModule m\n", H),  # XLA's lexer skips the blanks (issue 31)
    (b"\x00\x01\x02binary", "unknown"),
    (b"junk\nHloModule m\n", "unknown"),
]


@pytest.mark.parametrize("data,want", SNIFF_CASES)
def test_sniff_cases(data, want):
    assert sniff(data) == want


def test_sniff_long_first_line():
    assert sniff(b"HloModule m, " + b"x" * (5 << 20)) == H


# ------------------------------------------------------------------------- Rust agreement

def _rust_classify():
    core = pytest.importorskip("hlodump._core")
    fn = getattr(core, "classify_name", None)
    if fn is None:
        pytest.skip("hlodump._core.classify_name is not there yet")
    return fn


def test_rust_agrees_with_reference():
    fn = _rust_classify()
    names = sorted({p.name for p in _corpus_files()} | {p.name for p in _seed_files()}
                   | {c[0] for c in CASES})
    bad = []
    for name in names:
        want = classify(name)
        got = dict(fn(name))
        assert set(got) >= set(KEYS), (name, sorted(got))
        for k in KEYS:
            if got[k] != want[k]:
                bad.append((name, k, got[k], want[k]))
    assert not bad, "Rust/Python disagree (name, key, rust, python):\n" + "\n".join(map(repr, bad))


def test_rust_agrees_with_reference_on_paths():
    """classify_name of a path = the reference classify_path (per-module folders)."""
    fn = _rust_classify()
    paths = sorted({str(p.relative_to(CORPUS)) for p in _corpus_files()} | {str(p) for p in _corpus_files()}
                   | {c[0] for c in PATH_CASES})
    bad = []
    for path in paths:
        want = classify_path(path)
        got = dict(fn(path))
        for k in KEYS:
            if got[k] != want[k]:
                bad.append((path, k, got[k], want[k]))
    assert not bad, "Rust/Python disagree (path, key, rust, python):\n" + "\n".join(map(repr, bad))


def test_rust_sniff_agrees_with_reference():
    core = pytest.importorskip("hlodump._core")
    fn = getattr(core, "sniff", None)
    if fn is None:
        pytest.skip("hlodump._core.sniff is not there yet")
    datas = [d for d, _ in SNIFF_CASES] + [p.read_bytes() for p in _corpus_files() + _seed_files()]
    for d in datas:
        assert fn(d) == sniff(d), d[:80]


def test_registries_agree():
    """The core's format registry (``src/formats/mod.rs``) and the reference's
    (``reference/formats.py``) name the same formats, content kinds, tables and content rules,
    in the same order (the rules are tried in that order)."""
    from hlodump import _core
    from hlodump.reference.formats import FORMATS, UNPARSED

    def facts(name, contents, tables, s):
        return {"name": name, "contents": list(contents), "tables": list(tables),
                "prefixes": [(p, k) for p, k in s.prefixes],
                "second_line": [(p, l, k) for p, l, k in s.second_line],
                "line": s.line[1] if s.line else None,
                "fallback": s.fallback[1] if s.fallback else None, "markers": list(s.markers),
                "binary": s.binary[1] if s.binary else None}

    want = [facts(f.name, f.contents, f.tables, f.sniff) for f in FORMATS]
    want.append(facts("", (), (), UNPARSED))
    got = [{k: [tuple(x) if isinstance(x, (list, tuple)) else x for x in v] if isinstance(v, list) else v
            for k, v in d.items()} for d in _core._formats()]
    assert got == want


# ------------------------------------------------------------- Rust table (for src/files/name.rs)

def _rust_lit(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, int):
        return f"Some({v})"
    return "Some(" + _rust_str(v) + ")"


def _rust_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rust_cases() -> str:
    rows = []
    for c in CASES:
        rows.append("        (" + ", ".join([_rust_str(c[0]), _rust_str(c[1])]
                                            + [_rust_lit(v) for v in c[2:]]) + "),")
    return "    const CASES: &[Case] = &[\n" + "\n".join(rows) + "\n    ];"


def test_rust_unit_tests_use_the_same_cases():
    src = (Path(__file__).parent.parent / "src" / "files" / "name.rs").read_text(encoding="utf-8")
    m = re.search(r"// CASES-BEGIN[^\n]*\n(.*?)\n\s*// CASES-END", src, re.S)
    assert m, "CASES block missing in src/files/name.rs"
    assert m.group(1) == rust_cases(), "run: python tests/test_files.py --rust-update"


if __name__ == "__main__" and len(sys.argv) > 1:
    if sys.argv[1] == "--rust":
        print(rust_cases())
    elif sys.argv[1] == "--rust-update":
        path = Path(__file__).parent.parent / "src" / "files" / "name.rs"
        src = path.read_text(encoding="utf-8")
        new = re.sub(r"(// CASES-BEGIN[^\n]*\n)(.*?)(\n\s*// CASES-END)",
                     lambda m: m.group(1) + rust_cases() + m.group(3), src, count=1, flags=re.S)
        path.write_text(new, encoding="utf-8")
        print("updated", path)
