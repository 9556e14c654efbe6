"""``values.defining_*``: the columns the core parses from a value's ``from instruction:`` text.

Oracle 1: the after-optimizations HLO file of the same module, read into ``instructions`` by the
module parser — each value's defining_* must equal the instructions row of the same name.
Oracle 2: a few values of ``tests/data/seeds`` read by hand from the text (both parsers).
(Rust vs reference cell for cell: tests/test_rust_vs_reference*.py.)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import duckdb
import pytest

import hlodump

from conftest import DATA

# defining_X of values against X of instructions; source_* only where the instruction has no
# stack_frame_id (the module parser resolves it in the module's frame tables, which a value's
# text does not have).
COLUMNS = ["shape", "opcode", "op_name", "fusion_kind", "custom_call_target"]
SOURCE = ["source_file", "source_line"]

JOIN = """
with v as (
    select f.dump, f.module_id, f.module_name, v.*
    from "values" v join files f using (file_id)
), i as (
    select f.dump, f.module_id, f.module_name, i.*
    from instructions i join files f using (file_id)
    where f.kind = 'hlo_module' and f.stage = 'after_optimizations'
)
select v.dump, v.module_id, v.value_id, v.instruction,
       {pairs}, i.stack_frame_id is null as metadata_source
from v join i on v.dump = i.dump and v.module_id = i.module_id
             and v.module_name is not distinct from i.module_name and v.instruction = i.name
"""

VALUES_OF_MODULES_WITH_BOTH = """
with vm as (select distinct f.dump, f.module_id, f.module_name from "values" v join files f using (file_id)),
hm as (select distinct f.dump, f.module_id, f.module_name from files f
       where f.kind = 'hlo_module' and f.stage = 'after_optimizations'),
bm as (select * from vm intersect select * from hm)
select count(*) from "values" v join files f using (file_id)
join bm on bm.dump = f.dump and bm.module_id = f.module_id and bm.module_name is not distinct from f.module_name
"""


@pytest.fixture(scope="module")
def joined() -> list[dict[str, Any]]:
    pytest.importorskip("hlodump._core")
    d = hlodump.read_arrow(DATA, tables=["files", "values", "instructions"], on_error="collect", progress=False)
    con = duckdb.connect()
    d.to_duckdb(con)
    # One after-optimizations instruction per (module, name): else the join could pick any.
    dup = con.execute("""select count(*) from (
        select f.dump, f.module_id, f.module_name, i.name from instructions i join files f using (file_id)
        where f.kind = 'hlo_module' and f.stage = 'after_optimizations' group by all having count(*) > 1)""")
    assert dup.fetchone()[0] == 0
    pairs = ", ".join(f"v.defining_{c} as v_{c}, i.{c} as i_{c}" for c in COLUMNS + SOURCE)
    cur = con.execute(JOIN.format(pairs=pairs))
    names = [c[0] for c in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    # Every value of every module that has both files found its instruction.
    assert len(rows) == con.execute(VALUES_OF_MODULES_WITH_BOTH).fetchone()[0]
    con.close()
    return rows


def test_every_module_with_hlo_and_buffer_assignment_is_joined(joined: list[dict[str, Any]]) -> None:
    modules = {(r["dump"], r["module_id"]) for r in joined}
    assert len(modules) >= 100 and len(joined) >= 5000
    # The columns are not trivially null on either side.
    for c in COLUMNS + SOURCE:
        assert sum(r[f"v_{c}"] is not None for r in joined) > 0, c
    assert sum(r["metadata_source"] for r in joined) > 1000


@pytest.mark.parametrize("column", COLUMNS)
def test_defining_columns_equal_the_instruction_row(joined: list[dict[str, Any]], column: str) -> None:
    bad = [r for r in joined if r[f"v_{column}"] != r[f"i_{column}"] and not _async_sugar(r)]
    assert not bad, bad[:3]


def _async_sugar(r: dict[str, Any]) -> bool:
    """XLA prints one async op two ways: the buffer assignment's values file (printed before the
    GPU and TPU compilers' last passes) names it by what it wraps (`fusion-start … kind=kLoop`,
    `all-gather-start`, `slice-start`, `call-update`), the final module text as `async-start(…),
    calls=…` (TPU and GPU dumps of jax 0.12, tests/data/accel). The same instruction."""
    v, i = r["v_opcode"] or "", r["i_opcode"] or ""
    return i in ("async-start", "async-update", "async-done") and v.endswith("-" + i.split("-")[1])


@pytest.mark.parametrize("column", SOURCE)
def test_defining_source_equals_the_instruction_metadata(joined: list[dict[str, Any]], column: str) -> None:
    rows = [r for r in joined if r["metadata_source"]]
    assert any(r[f"v_{column}"] is not None for r in rows)
    bad = [r for r in rows if r[f"v_{column}"] != r[f"i_{column}"]]
    assert not bad, bad[:3]


# ------------------------------------------------------------------- seeds, read by hand

SPLASH = ("/home/ptoulme/miniconda3/envs/vllm/lib/python3.12/site-packages/jax/experimental/"
          "pallas/ops/tpu/splash_attention/splash_attention_kernel.py")
# (seed, value_id) -> (shape, opcode, source_file, source_line, fusion_kind, custom_call_target)
SEED_VALUES: dict[tuple[str, int], tuple[Any, ...]] = {
    # <71 fusion.5{} @0>, line 155: a tuple-shaped output fusion with metadata
    ("000_d4ec204070c56195.txt", 71): (
        "(f32[8,2048]{1,0:T(8,128)S(1)}, f32[8,2048,2048]{1,2,0:T(8,128)})", "fusion", SPLASH, 184,
        "kOutput", None),
    # <2 maximum.24 @0>, line 60
    ("000_d4ec204070c56195.txt", 2): ("f32[]{:T(128)}", "maximum", SPLASH, 196, None, None),
    # <70 Arg_1.2 @0>, line 148: metadata={op_name="k"} only
    ("000_d4ec204070c56195.txt", 70): ("bf16[8,2048,128]{2,1,0:T(8,128)(2,1)}", "parameter", None, None,
                                       None, None),
    # <6 splash_mha_fwd_e9701070.1{} @0>, line 66: a custom call, metadata after a long
    # backend_config
    ("003_edd6dfbd09ed8e41.txt", 6): (
        "(f32[512,128]{1,0:T(8,128)}, f32[512,128]{1,0:T(8,128)}, f32[512,128]{1,0:T(8,128)}, "
        "bf16[8,2048,128]{2,1,0:T(8,128)(2,1)})", "custom-call", SPLASH, 1100, None, "tpu_custom_call"),
}


@pytest.mark.parametrize("seed", sorted({s for s, _ in SEED_VALUES}))
def test_seed_values_read_by_hand(reader: Callable, seed: str) -> None:
    rows = {r["value_id"]: r for r in reader(os.path.join(DATA, "seeds", seed))["values"].to_pylist()}
    for (s, vid), want in SEED_VALUES.items():
        if s != seed:
            continue
        r = rows[vid]
        got = tuple(r[f"defining_{c}"] for c in
                    ["shape", "opcode", "source_file", "source_line", "fusion_kind", "custom_call_target"])
        assert got == want, (seed, vid)
    if seed.startswith("000"):
        assert rows[70]["defining_op_name"] == "k"


def test_unreadable_text_gives_nulls(reader: Callable) -> None:
    """A value whose instruction text does not parse: every defining_* null, the text kept."""
    text = (b"BufferAssignment:\n"
            b"allocation 0: size 4, parameter 0, shape |f32[]| at ShapeIndex {}:\n"
            b" value: <0 p @0> (size=4,offset=0): f32[]\n"
            b"\nUsed values:\n<0 p @0>\n positions:\n  p\n uses:\n from instruction: not an instruction\n"
            b"<1 q @0>\n positions:\n  q\n uses:\n from instruction: %q = f32[]{:T(128)} parameter(0),"
            b" metadata={source_file=\"a.py\" source_line=7}, custom_call_target=\"x\"\n")
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"hlodump-defining-{os.getpid()}-buffer-assignment.txt")
    with open(path, "wb") as fh:
        fh.write(text)
    try:
        rows = reader(path, on_error="collect")["values"].to_pylist()
    finally:
        os.unlink(path)
    defining = [c for c in rows[0] if c.startswith("defining_") and c != "defining_instruction"]
    assert len(defining) == 7
    assert rows[0]["defining_instruction"] == "not an instruction"
    assert all(rows[0][c] is None for c in defining)
    assert (rows[1]["defining_shape"], rows[1]["defining_source_file"], rows[1]["defining_source_line"],
            rows[1]["defining_custom_call_target"]) == ("f32[]{:T(128)}", "a.py", 7, "x")
