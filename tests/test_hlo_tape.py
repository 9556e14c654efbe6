"""Instruction lines in two stages (issue 26, ``src/hlo/tape.rs``): a projected read decodes only
the columns it is asked for, and gives exactly the full read's columns, rows and errors — on the
test dumps and on lines built to sit at the edges of what the field tape decides (bad metadata,
out-of-range numbers, escapes, comments, continuations), where the full parse decides instead."""

from __future__ import annotations

import os

import pytest

import hlodump
from hlodump import reference
from hlodump.schema import SCHEMAS

DATA = os.path.join(os.path.dirname(__file__), "data")
SOURCES = ["corpus", "seeds", "xla_inputs", "passes"]

# one pick per stage-2 decoder (and the spans alone)
PICKS = [
    ["name", "opcode"],
    ["operands"],
    ["called_computations", "is_root"],
    ["op_name", "op_type"],
    ["source_file", "source_line", "stack_frame_id"],
    ["custom_call_target", "backend_config"],
    ["fusion_kind", "sharding", "shape", "attributes", "operand_text"],
]

EDGES = b"""HloModule edges, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0), metadata={op_name="a" stack_frame_id=2}
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b), metadata={op_name="jit(f)/add" source_file="/x.py" source_line=7}
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %c = f32[2]{0} constant({1, 2})
  %m = f32[8]{0} multiply(%p, %p), metadata={op_name="m" source_line=99999999999999999999}
  %q = f32[8]{0} negate(%p), metadata={op_name="q" !}
  %e = f32[8]{0} custom-call(%p), custom_call_target="my\\"t", backend_config="a\\" b, c=d\\\\"
  %k = f32[8]{0} custom-call(%p), custom_call_target="x", backend_config={"a": "}, b=", "c": [1]}
  %t = (f32[8], /*index=1*/f32[8]) tuple(%p, /*index=1*/%k), sharding={{replicated}, /*index=1*/{maximal device=0}}
  %r = f32[] reduce(%p, %c), dimensions={0}, to_apply=%add, metadata={op_type="r" op_name=bare.word}
  %w = f32[8]{0} negate(%p), metadata={op_name="w" source_line=-2147483648 stack_frame_id=2147483647}
  %w2 = f32[8]{0} negate(%p), metadata={op_name="w2" source_line=2147483648}
  %w3 = f32[8]{0} negate(%p), metadata={op_name="w3" stack_frame_id=-9223372036854775808}
  %x = f32[8]{0} add(%p, %p),
    metadata={op_name="continued"}
  %y = f32[8]{0} add(%p, /*a "quoted" comment*/%p)
  %z = f32[8]{0} add(%p, %p), metadata={op_name="two  spaces"  source_line=3}
  ROOT %v = f32[8]{0} add(%p, %p)
  ROOT %v2 = f32[8]{0} add(%p, %p)
}

%last (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %u = f32[8]{0} negate(%p
}
"""


def _read(path: str, **kw) -> hlodump.Dump:
    return hlodump.read_arrow(path, on_error="collect", string_view=True, **kw)


@pytest.mark.parametrize("src", SOURCES)
def test_projected_columns_are_the_full_read(src: str) -> None:
    path = os.path.join(DATA, src)
    full = _read(path)
    assert full.instructions.num_rows > 0
    for pick in PICKS:
        d = _read(path, columns={"instructions": pick})
        want = full.instructions.select([c for c in SCHEMAS["instructions"].names if c in pick])
        assert d.instructions.equals(want), pick
        assert d.errors.equals(full.errors), pick


def test_edge_lines(tmp_path) -> None:
    """Each line here either takes the tape or is decided by the full parse; projected or not,
    the rows and errors are those of the full read, and the full read is the reference's."""
    p = tmp_path / "edges.txt"
    p.write_bytes(EDGES)
    full = _read(str(p))
    ref = reference.read_arrow(str(p), on_error="collect")
    cols = ["name", "opcode", "operands", "called_computations", "op_name", "op_type", "source_line", "stack_frame_id",
            "custom_call_target", "backend_config", "sharding", "line"]
    assert full.instructions.select(cols).to_pylist() == ref.instructions.select(cols).to_pylist()
    errs = ["line", "column", "message"]
    assert full.errors.select(errs).to_pylist() == ref.errors.select(errs).to_pylist()
    names = full.instructions.column("name").to_pylist()
    # the out-of-range numbers (int32 columns), the bad metadata item and the unclosed operands
    # are errors, no rows
    assert not {"m", "q", "u", "w2", "w3"} & set(names)
    rows = full.instructions.select(["name", "source_line", "stack_frame_id"]).to_pylist()
    assert [(r["source_line"], r["stack_frame_id"]) for r in rows if r["name"] == "w"] == [(-2**31, 2**31 - 1)]
    assert {"e", "k", "t", "r", "w", "x", "y", "z", "v", "v2"} <= set(names)
    assert full.errors.num_rows >= 6
    for pick in PICKS:
        d = _read(str(p), columns={"instructions": pick})
        want = full.instructions.select([c for c in SCHEMAS["instructions"].names if c in pick])
        assert d.instructions.equals(want), pick
        assert d.errors.equals(full.errors), pick


def test_projected_scan_in_many_batches() -> None:
    """A streamed table set is flushed and projected again every batch: the decoders a parse
    chose at its start stay the ones the columns need."""
    import glob
    import warnings

    import pyarrow as pa

    path = sorted(glob.glob(os.path.join(DATA, "corpus", "jax-0.10.2", "transformer", "*after_optimizations.txt")))[0]
    full = _read(path)
    for pick in PICKS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hlodump.ScanWarning)
            batches = list(hlodump.scan(path, "instructions", columns=pick, batch_size=100, on_error="collect"))
        assert len(batches) > 3
        got = pa.Table.from_batches(batches)
        want = full.instructions.select(got.schema.names)
        assert got.num_rows == want.num_rows and got.to_pylist() == want.to_pylist(), pick
