"""GPU thunk sequences (FORMATS.md §2.11) in each form XLA prints them, read by both readers
and checked row by row against values read off the text by hand.

Forms (from XLA's source):
* ``ThunkSequence::ToString(indent)`` of xla/service/gpu (jax 0.4.x): ``KIND PAD \\t`` then the
  thunk's ``ToStringExtra``: a kernel prints ``, kernel = NAME, launch dimensions = blocks: {…},
  threads/block: {…}, shared memory [B]: N, cluster_dim = nullopt``; a ``kSequential`` prints a
  newline, then its children one level deeper.
* The same with an annotation function (the profile annotation = the HLO instruction name)
  before the thunk's text: ``kKernel\\tfusion.1, kernel = fusion_1, …``.
* ``SequentialThunk::ToString(indent)`` of xla/backends/gpu (jax 0.8+): ``NNN: `` thunk ids, and
  a nested sequence appended right after its parent's tab, so its first child sits on the
  parent's line (``000: kSequential\\t  001: kCopy …``), the others on lines of their own;
  ``WhileThunk`` prints ``condition:`` at the start of a line and ``  body:`` indented.
"""

from __future__ import annotations

from pathlib import Path

import hlodump
import hlodump.reference

NAME = "module_0001.jit_f.thunk_sequence.txt"

def ld(blocks: str, threads: str, shmem: str) -> str:
    """``, launch dimensions = …`` as KernelThunk::ToString prints it (LaunchDimensions::ToString)."""
    return f"launch dimensions = blocks: {{{blocks}}}, threads/block: {{{threads}}}, shared memory [B]: {shmem}, cluster_dim = nullopt"

OLD = (
    "kKernel    \t, kernel = loop_add_fusion, " + ld("1, 1, 1", "128, 1, 1", "0") + "\n"
    "kSequential\t\n"
    "  kCopy  \t\n"
    "  kKernel\t, kernel = wrapped_transpose, " + ld("4, 1, 1", "32, 4, 1", "0") + "\n"
    "\n"
)

ANNOTATED = (
    "kKernel\tfusion.1, kernel = fusion_1, " + ld("2, 1, 1", "256, 1, 1", "0") + "\n"
    "kCopy  \tcopy.5\n"
)

NEW = (
    "000: kSequential\t  001: kCopy  \t\n"
    "  002: kKernel\t, kernel = loop_multiply_fusion, " + ld("8, 1, 1", "128, 1, 1", "0") + "\n"
    "\n"
    "003: kWhile     \t  \n"
    "condition:\n"
    "    004: kKernel\t, kernel = cond_fusion, " + ld("1, 1, 1", "1, 1, 1", "0") + "\n"
    "  body:\n"
    "    005: kKernel\t, kernel = body_fusion, " + ld("16, 1, 1", "1024, 1, 1", "0") + "\n"
    "    006: kCopy  \t\n"
    "\n"
    "007: kSequential\t  008: kSequential\t    009: kKernel\t, kernel = inner, "
    + ld("1, 1, 1", "64, 1, 1", "128") + "\n"
    "    010: kCopy  \t\n"
    "\n"
    "  011: kKernel    \t, kernel = after, " + ld("3, 2, 1", "32, 8, 1", "0") + "\n"
    "\n"
)

COLS = ["thunk_id", "parent_thunk_id", "depth", "kind", "section", "line", "instruction", "kernel_name",
        "blocks_x", "blocks_y", "blocks_z", "threads_x", "threads_y", "threads_z", "shared_memory_bytes"]
N = None


def _read(tmp_path: Path, text: str) -> tuple[list[tuple], hlodump.Dump]:
    (tmp_path / NAME).write_text(text)
    d = hlodump.read_arrow(tmp_path / NAME)
    ref = hlodump.reference.read_arrow(tmp_path / NAME)
    assert d.thunks.to_pylist() == ref.thunks.to_pylist()  # Rust = reference, every column
    assert d.errors.num_rows == 0
    return [tuple(r[c] for c in COLS) for r in d.thunks.to_pylist()], d


def test_old_form_kernel_launch_and_nested_sequence(tmp_path: Path) -> None:
    rows, _ = _read(tmp_path, OLD)
    assert rows == [
        (0, N, 0, "kKernel", N, 1, N, "loop_add_fusion", 1, 1, 1, 128, 1, 1, 0),
        (1, N, 0, "kSequential", N, 2, N, N, N, N, N, N, N, N, N),
        (2, 1, 1, "kCopy", N, 3, N, N, N, N, N, N, N, N, N),
        (3, 1, 1, "kKernel", N, 4, N, "wrapped_transpose", 4, 1, 1, 32, 4, 1, 0),
    ]


def test_annotated_form_names_the_instruction(tmp_path: Path) -> None:
    rows, d = _read(tmp_path, ANNOTATED)
    assert rows == [
        (0, N, 0, "kKernel", N, 1, "fusion.1", "fusion_1", 2, 1, 1, 256, 1, 1, 0),
        (1, N, 0, "kCopy", N, 2, "copy.5", N, N, N, N, N, N, N, N),
    ]
    assert d.thunks.column("annotation").to_pylist()[1] == "copy.5"


def test_children_printed_on_their_parents_line_are_rows_of_their_own(tmp_path: Path) -> None:
    rows, d = _read(tmp_path, NEW)
    assert rows == [
        (0, N, 0, "kSequential", N, 1, N, N, N, N, N, N, N, N, N),
        (1, 0, 1, "kCopy", N, 1, N, N, N, N, N, N, N, N, N),
        (2, 0, 1, "kKernel", N, 2, N, "loop_multiply_fusion", 8, 1, 1, 128, 1, 1, 0),
        (3, N, 0, "kWhile", N, 4, N, N, N, N, N, N, N, N, N),
        (4, 3, 2, "kKernel", "condition", 6, N, "cond_fusion", 1, 1, 1, 1, 1, 1, 0),
        (5, 3, 2, "kKernel", "body", 8, N, "body_fusion", 16, 1, 1, 1024, 1, 1, 0),
        (6, 3, 2, "kCopy", "body", 9, N, N, N, N, N, N, N, N, N),
        (7, N, 0, "kSequential", N, 11, N, N, N, N, N, N, N, N, N),
        (8, 7, 1, "kSequential", N, 11, N, N, N, N, N, N, N, N, N),
        (9, 8, 2, "kKernel", N, 11, N, "inner", 1, 1, 1, 64, 1, 1, 128),
        (10, 8, 2, "kCopy", N, 12, N, N, N, N, N, N, N, N, N),
        (11, 7, 1, "kKernel", N, 14, N, "after", 3, 2, 1, 32, 8, 1, 0),
    ]
    # the parent keeps what came before its child (nothing): no byte is in two rows
    assert d.thunks.column("annotation").to_pylist()[:2] == ["", ""]


def test_launch_dimensions_as_launch_dimensions_operator_prints_them(tmp_path: Path) -> None:
    # `operator<<(ostream, LaunchDimensions)`: `[block: {X, Y, Z}, thread: {X, Y, Z}]`
    rows, _ = _read(tmp_path, "kKernel\t, kernel = k0, launch dimensions = [block: {5, 6, 7}, thread: {8, 9, 10}]\n"
                              "kKernel\tnot a name, kernel=k1\n")
    assert rows == [(0, N, 0, "kKernel", N, 1, N, "k0", 5, 6, 7, 8, 9, 10, N),
                    (1, N, 0, "kKernel", N, 2, N, "k1", N, N, N, N, N, N, N)]


def test_mutated_thunk_text_reads_the_same_in_both_readers(tmp_path: Path) -> None:
    """Seeded random edits of the texts above (spaces, tabs, digits, braces, commas, kinds, form
    feeds, non-ASCII) — the Rust parser and the reference agree on every row and column."""
    import random

    rng = random.Random(31)
    pieces = [" ", "  ", "\t", "\x0c", "\x0b", "{", "}", ",", ", ", "0", "7", "99999999999999999999", "kCopy",
              "  003: kKernel\t", "blocks: ", "thread: ", "kernel = ", "kernel=", "é", "%x.1", "body:", "-"]
    base = [OLD, ANNOTATED, NEW]
    for i in range(400):
        text = list(rng.choice(base))
        for _ in range(rng.randint(1, 6)):
            tabs = [k + 1 for k, c in enumerate(text) if c == "\t"]
            # half of the edits right after a tab: where a thunk's own text starts
            at = rng.choice(tabs) if tabs and rng.random() < 0.5 else rng.randrange(len(text) + 1)
            if rng.random() < 0.3 and text:
                del text[min(at, len(text) - 1)]
            else:
                text.insert(at, rng.choice(pieces))
        (tmp_path / f"module_{i:04d}.jit_f.thunk_sequence.txt").write_text("".join(text))
    d = hlodump.read_arrow(tmp_path, on_error="collect")
    ref = hlodump.reference.read_arrow(tmp_path, on_error="collect")
    assert d.thunks.num_rows > 400 * 4
    assert d.thunks.to_pylist() == ref.thunks.to_pylist()
    assert d.errors.to_pylist() == ref.errors.to_pylist()


def test_a_while_loop_nested_in_a_sequence_owns_its_column_0_condition_label(tmp_path: Path) -> None:
    # WhileThunk::ToString(indent) writes `INDENT\ncondition:\n…INDENT body:\n…`: its `condition:`
    # starts a line at column 0 however deep the loop is.
    text = (
        "000: kSequential\t  001: kWhile\t    \n"
        "condition:\n"
        "      002: kKernel\t, kernel = c, " + ld("1, 1, 1", "1, 1, 1", "0") + "\n"
        "    body:\n"
        "      003: kCopy\t\n"
        "\n"
        "  004: kCopy \t\n"
        "\n"
        "005: kKernel    \t, kernel = last, " + ld("2, 1, 1", "64, 1, 1", "0") + "\n"
    )
    rows, _ = _read(tmp_path, text)
    assert [r[:6] for r in rows] == [
        (0, N, 0, "kSequential", N, 1),
        (1, 0, 1, "kWhile", N, 1),
        (2, 1, 3, "kKernel", "condition", 3),
        (3, 1, 3, "kCopy", "body", 5),
        (4, 0, 1, "kCopy", N, 7),
        (5, N, 0, "kKernel", N, 9),
    ]


def test_jax_0_12_kernel_text(reader) -> None:
    """jax 0.12 prints `[source | next=…] NAME grid: [X, Y, Z] threads: [X, Y, Z]  shared_memory: N
    bytes`: the kernel's name and launch dimensions; no profile annotation (instruction null)."""
    import os

    from conftest import DATA

    d = reader(os.path.join(DATA, "accel", "gpu_h100", "mlp"), tables=["thunks"], on_error="collect")
    rows = d.thunks.to_pylist()
    first = rows[0]
    assert (first["kind"], first["kernel_name"], first["instruction"]) == ("kCustomKernel", "gemm_fusion_dot_2", None)
    assert [r["printed_id"] for r in rows] == [1, 2, 3, 4, 5]  # the key of *.thunk_metadata.txt
    assert (first["blocks_x"], first["blocks_y"], first["threads_x"], first["shared_memory_bytes"]) == (8192, 1, 64, 768)
    last = rows[-1]
    assert (last["kind"], last["kernel_name"], last["blocks_x"]) == ("kAllReduce", None, None)
