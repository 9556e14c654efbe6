"""HLO module text → modules / computations / instructions / stack_frames / custom_calls.

Every test takes the ``reader`` fixture (tests/conftest.py), so it runs against the reference
parser and, when the native module is built, against the Rust core. Expected values are counted
independently from the raw bytes (trivial regular expressions) or written down by hand from the
files; they are never produced by the parser under test.
"""

from __future__ import annotations

import base64
import os
import random
import re
import time

import pytest

from hlodump.reference import hlo

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
SEED_002 = os.path.join(DATA, "seeds", "002_257473ac4bd6642c.txt")
SEED_003 = os.path.join(DATA, "seeds", "003_edd6dfbd09ed8e41.txt")
CORPUS = os.path.join(DATA, "corpus")
PASSES = os.path.join(DATA, "passes")  # per-pass dumps of tests/test_passes.py

NON_HLO_SUFFIXES = ("-buffer-assignment.txt", "-buffer-assignment-values.txt", "-live-range.txt",
                    "-memory-usage-report.txt")


def hlo_text_files() -> list[str]:
    """Seed 002 plus every HLO module text of the corpus and of the per-pass samples, chosen by
    file name (FORMATS.md §1)."""
    out = [SEED_002]
    for root, _dirs, names in [w for top in (CORPUS, PASSES) for w in os.walk(top)]:
        for n in names:
            if not n.endswith(".txt") or n.endswith(NON_HLO_SUFFIXES):
                continue
            if n.endswith(("before_optimizations.txt", "_after_optimizations.txt")) or re.match(
                    r"module_\d+\..+\.\d{4}\..+\.txt$", n):
                out.append(os.path.join(root, n))
    return sorted(out)


HLO_FILES = hlo_text_files()


def _id(path: str) -> str:
    return os.path.relpath(path, DATA)


def test_file_selection_matches_content():
    """The name-based selection is exactly the set of files whose content is HLO module text."""
    by_content = set()
    for root, _dirs, names in os.walk(DATA):
        if os.path.relpath(root, DATA).split(os.sep)[0] == "cost":
            continue  # the cost-analysis fixtures: test_cost.py has XLA parse and analyse each one
        if os.path.relpath(root, DATA).split(os.sep)[0] in ("producers", "proto", "proto_twins", "diff", "accel",
                                                            "advice", "flat"):
            # (advice/, flat/: the advice programs and the flattened file names of issue 51, tests/test_see_it.py)
            continue  # TensorFlow / PyTorch/XLA dumps, text+proto twins, diff pairs (issues 36, 38, 41): elsewhere;
            # tests/test_corpus_tools.py checks their xla_parse.json oracles
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                head = f.read(64)
            if head.lstrip(b"\n").startswith(b"HloModule "):
                by_content.add(p)
    assert by_content == set(HLO_FILES)
    # 238 (seed 002, jax 0.4.26, 0.10.2) + 10 releases x 22 (control_flow 12, spmd 10) + 2 (0.6.2
    # indexing) + 6 (0.8.3 transformer: before/after + 4 per-pass dumps) + 46 (tests/data/passes:
    # jax 0.5.3 19 per-pass + after-optimizations, jax 0.10.2 25 + after-optimizations)
    # + 2 x 52 (jax 0.11.2 and 0.12.0.1: 24 modules before/after + 4 per-pass dumps)
    assert len(HLO_FILES) == 616


# ------------------------------------------------------------------------------ every file

_COMP_LINE = re.compile(rb"^(?:%|ENTRY |[A-Za-z_][A-Za-z0-9_.\-]* [{(])", re.M)
_INSTR_LINE = re.compile(rb"^  ", re.M)
_ROOT_LINE = re.compile(rb"^  ROOT ", re.M)
_STACK_ROW = re.compile(rb"^\d+ \{file_location_id=", re.M)


@pytest.mark.parametrize("path", HLO_FILES, ids=_id)
def test_every_hlo_file(reader, path):
    with open(path, "rb") as f:
        raw = f.read()
    d = reader(path)
    assert d.errors.num_rows == 0
    assert d.files.column("parsed").to_pylist() == [True]

    modules = d.modules.to_pylist()
    comps = d.computations.to_pylist()
    instrs = d.instructions.to_pylist()

    # One module; its name is the header's first token (and the file name's module part).
    assert len(modules) == 1
    assert raw.startswith(b"HloModule " + modules[0]["name"].encode() + b"")
    assert modules[0]["line"] == 1
    base = os.path.basename(path)
    if base.startswith("module_"):
        assert modules[0]["name"] == base.split(".")[1]
    assert modules[0]["is_scheduled"] == (b"is_scheduled=true" in raw.split(b"\n", 1)[0])

    # Counts from the raw bytes.
    assert len(instrs) == len(_INSTR_LINE.findall(raw))
    assert len(comps) == len(_COMP_LINE.findall(raw))
    assert d.stack_frames.num_rows == len(_STACK_ROW.findall(raw))
    assert sum(r["is_root"] for r in instrs) == len(_ROOT_LINE.findall(raw))

    # Ids are file order; every computation has exactly one ROOT; one ENTRY per module.
    assert [c["computation_id"] for c in comps] == list(range(len(comps)))
    assert [r["instruction_id"] for r in instrs] == list(range(len(instrs)))
    assert sum(c["is_entry"] for c in comps) == 1
    roots: dict[int, int] = {}
    for r in instrs:
        roots[r["computation_id"]] = roots.get(r["computation_id"], 0) + r["is_root"]
    assert roots == {c["computation_id"]: 1 for c in comps}
    assert [r["computation_id"] for r in instrs] == sorted(r["computation_id"] for r in instrs)

    # Lines and offsets point at the instruction's line in the raw file.
    starts = [0] + [m.end() for m in re.finditer(rb"\n", raw)]
    for r in instrs:
        assert starts[r["line"] - 1] == r["offset"]
        assert raw.startswith(b"  ", r["offset"])
        line = raw[r["offset"]:raw.index(b"\n", r["offset"])]
        assert (b"%" + r["name"].encode() + b" = " in line) or (
            re.match(rb"  (ROOT )?" + re.escape(r["name"].encode()) + rb" = ", line))
        assert line.startswith(b"  ROOT ") == r["is_root"]
        assert (b" " + r["opcode"].encode() + b"(") in line
        assert line.endswith(r["attributes"].encode())
    for c in comps:
        line = raw[starts[c["line"] - 1]:raw.index(b"\n", starts[c["line"] - 1])]
        assert line.startswith(b"ENTRY ") == c["is_entry"]
        assert c["name"].encode() in line and line.endswith(b"{")

    # Cross references stay inside the file / the computation.
    comp_names = {c["name"] for c in comps}
    assert len(comp_names) == len(comps)
    names_by_comp: dict[int, set[str]] = {}
    for r in instrs:
        names_by_comp.setdefault(r["computation_id"], set()).add(r["name"])
    assert len({r["name"] for r in instrs}) == len(instrs)  # names unique in a module
    for r in instrs:
        assert set(r["called_computations"]) <= comp_names, r["name"]
        assert set(r["operands"]) <= names_by_comp[r["computation_id"]], r["name"]
        if r["opcode"] in ("parameter", "constant"):
            assert r["operands"] == []
        if r["opcode"] == "fusion":
            assert r["fusion_kind"] in ("kLoop", "kInput", "kOutput", "kCustom")
            assert len(r["called_computations"]) == 1
        if r["stack_frame_id"] is not None:
            assert r["source_file"] is not None and r["source_line"] is not None
            assert r["source_function"] is not None

    # custom_calls: one row per custom-call instruction.
    cc = d.custom_calls.to_pylist()
    assert [c["instruction_id"] for c in cc] == [
        r["instruction_id"] for r in instrs if r["opcode"] == "custom-call"]

    # Stack frames: corrected parents point backwards; at least one root. (FORMATS.md §3.4 says
    # "exactly one root per table"; the 0.10.2 corpus has tables with several, e.g.
    # control_flow/module_0000.jit_rnn.before_optimizations.txt frames 1-6 all print parent 1.)
    frames = d.stack_frames.to_pylist()
    if frames:
        assert [f["frame_id"] for f in frames] == list(range(1, len(frames) + 1))
        assert sum(f["parent_frame_id"] is None for f in frames) >= 1
        for f in frames:
            assert f["parent_frame_id"] is None or f["parent_frame_id"] < f["frame_id"]
            assert f["file_name"] is not None and f["function_name"] is not None


# ------------------------------------------------------------------------------ known values


def _by_name(d) -> dict:
    return {r["name"]: r for r in d.instructions.to_pylist()}


def test_seed_002(reader):
    d = reader(SEED_002)
    m = d.modules.to_pylist()[0]
    assert m["name"] == "jit_reference_attention"
    assert m["is_scheduled"] is True
    assert m["entry_computation_layout"] == (
        "(bf16[8,2048,128]{2,1,0:T(8,128)(2,1)}, bf16[8,2048,128]{2,1,0:T(8,128)(2,1)}, "
        "bf16[8,2048,128]{2,1,0:T(8,128)(2,1)})->f32[8,2048,128]{2,1,0:T(8,128)}")
    assert m["attributes"].startswith("is_scheduled=true, entry_computation_layout={(bf16")
    assert m["attributes"].endswith(
        "allow_spmd_sharding_propagation_to_parameters={true,true,true}, "
        "allow_spmd_sharding_propagation_to_output={true}")

    comps = d.computations.to_pylist()
    assert [c["name"] for c in comps] == [
        "copy_fusion.2", "fused_computation.1", "bitcast_fusion.1", "fused_computation",
        "region_1.36", "copy_fusion.1", "fused_computation.3", "region_0.25", "bitcast_fusion",
        "bitcast_fusion.2", "copy_fusion", "fused_computation.7", "main.47"]
    assert comps[0] == {
        "file_id": 0, "computation_id": 0, "name": "copy_fusion.2", "is_entry": False,
        "signature": "(input.2: pred[8,2048,2048])", "result_shape": "pred[8,2048,2048]",
        "execution_thread": None, "line": 3, "module_index": 0}
    entry = comps[-1]
    assert entry["is_entry"] and entry["line"] == 103
    assert entry["signature"] == (
        "(Arg_0.1: bf16[8,2048,128], Arg_1.2: bf16[8,2048,128], Arg_2.3: bf16[8,2048,128])")
    assert entry["result_shape"] == "f32[8,2048,128]"
    assert comps[11]["result_shape"] == "(f32[8,2048], f32[8,2048,2048])"

    ins = _by_name(d)
    assert len(ins) == 79
    r = ins["input.2"]
    assert (r["instruction_id"], r["line"], r["offset"]) == (0, 4, sum(len(x) for x in open(SEED_002, "rb").readlines()[:3]))
    r = ins["fusion.12"]
    assert r["opcode"] == "fusion" and r["fusion_kind"] == "kLoop"
    assert r["shape"] == "pred[8,2048,2048]{1,2,0:T(8,128)(4,1)}"
    assert r["operands"] == ["param_2.14"] and r["operand_text"] == "%param_2.14"
    assert r["called_computations"] == ["copy_fusion.2"]
    assert r["attributes"] == "kind=kLoop, output_to_operand_aliasing={{}: (0, {})}, calls=%copy_fusion.2"
    assert r["op_name"] is None and r["backend_config"] is None

    r = ins["copy-start"]
    assert r["shape"] == ("(bf16[8,2048,128]{2,1,0:T(8,128)(2,1)S(1)}, "
                          "bf16[8,2048,128]{2,1,0:T(8,128)(2,1)}, u32[]{:S(2)})")
    assert r["attributes"] == "cross_program_prefetch_index=0"
    r = ins["constant.4"]
    assert r["operand_text"] == "{...}" and r["operands"] == []
    assert ins["constant.21"]["operand_text"] == "-2.38197633e+38"
    assert ins["constant.21"]["shape"] == "f32[]{:T(128)}"

    r = ins["broadcast.21"]
    assert r["op_name"] == ("jit(reference_attention)/jit(main)/reference_attention/"
                            "reference_attention_h8_s2048/jit(_wrapped)/vmap(jit(_where))/broadcast_in_dim")
    assert r["source_file"] == ("/home/ptoulme/miniconda3/envs/vllm/lib/python3.12/site-packages/jax/"
                                "experimental/pallas/ops/tpu/splash_attention/splash_attention_kernel.py")
    assert r["source_line"] == 195 and r["source_function"] is None and r["stack_frame_id"] is None
    assert r["backend_config"] == ('{"flag_configs":[],"scoped_memory_configs":[],'
                                   '"used_scoped_memory_configs":[],"output_chunk_bound_config":'
                                   '{"output_chunk_bound":[]}}')

    r = ins["convolution-base-dilated.2"]
    assert r["is_root"] and r["opcode"] == "convolution"
    assert r["operands"] == ["fusion.1", "fusion.8"]
    assert r["source_line"] == 201
    assert r["attributes"].startswith("window={size=8 stride=7 lhs_dilate=8}, dim_labels=0bf_0io->0bf, metadata={")
    r = ins["fusion"]
    assert r["is_root"] and r["operands"] == [
        "copy-done.2", "fusion.2", "get-tuple-element", "copy-done.1", "get-tuple-element.1"]
    assert r["fusion_kind"] == "kOutput" and r["called_computations"] == ["fused_computation"]
    assert ins["reduce.2"]["called_computations"] == ["region_1.36"]
    assert ins["get-tuple-element.1"]["attributes"].startswith("index=1, metadata=")
    assert d.custom_calls.num_rows == 0  # seed 002 has no custom call
    assert d.stack_frames.num_rows == 0


def test_seed_003_custom_call_body_from_buffer_assignment():
    """Seed 003's Mosaic kernel (a buffer-assignment ``from instruction:`` line)."""
    text = None
    with open(SEED_003, encoding="utf-8") as f:
        for line in f:
            if line.startswith(" from instruction: ") and " custom-call(" in line:
                text = line.rstrip("\n")[len(" from instruction: "):]
                break
    r = hlo.parse_instruction(text)
    assert r["name"] == "splash_mha_fwd_e9701070.1" and r["opcode"] == "custom-call"
    assert r["custom_call_target"] == "tpu_custom_call"
    assert r["operands"] == ["constant.4", "constant.5", "Arg_0.1", "Arg_1.2", "Arg_2.3", "iota.1"]
    assert r["backend_config"].startswith('{"custom_call_config": {"body": "TUzvUgFNTElS')
    body = re.search(r'"body": "([^"]*)"', r["backend_config"]).group(1)
    info = hlo.custom_call_info(r["backend_config"])
    assert info == {"body_length": len(body), "decoded_length": len(base64.b64decode(body)),
                    "format": "mlir_bytecode", "kernel_name": None}
    assert hlo.decode_body(r["backend_config"]).startswith(b"ML\xefR")


def test_jax_0_4_26_old_syntax(reader):
    path = os.path.join(CORPUS, "jax-0.4.26", "control_flow",
                        "module_0000.jit_rnn.cpu_after_optimizations.txt")
    d = reader(path)
    comps = d.computations.to_pylist()
    assert comps[0] == {"file_id": 0, "computation_id": 0, "name": "region_1.10", "is_entry": False,
                        "signature": "", "result_shape": "", "execution_thread": None, "line": 3, "module_index": 0}
    assert comps[1]["name"] == "fused_computation"  # closed by "} // fused_computation"
    assert comps[-1]["name"] == "main.69" and comps[-1]["is_entry"] and comps[-1]["line"] == 74
    ins = _by_name(d)
    r = ins["add.13"]
    assert r["is_root"] and r["opcode"] == "add" and r["shape"] == "f32[]"
    assert r["operands"] == ["Arg_0.11", "Arg_1.12"]
    assert r["op_name"] == "jit(rnn)/jit(main)/while/body/reduce_sum[axes=(0, 1)]"
    assert r["source_file"] == "/src/models_gen/gen_control_flow.py" and r["source_line"] == 26
    assert r["stack_frame_id"] is None and r["source_function"] is None
    r = ins["reduce.0"]
    assert r["called_computations"] == ["region_1.10"]
    assert r["attributes"].startswith("dimensions={0,1}, to_apply=region_1.10, metadata={")
    r = ins["arg_tuple.15"]
    assert r["shape"] == ("(s32[], f32[3,12]{1,0}, f32[9]{0}, f32[9,3,12]{2,1,0}, f32[12,12]{1,0}, "
                          "/*index=5*/f32[12,12]{1,0}, f32[12]{0})")
    assert r["opcode"] == "parameter" and r["operand_text"] == "0"
    r = ins["dot.32"]
    assert r["source_line"] == 25
    assert r["attributes"].startswith("lhs_contracting_dims={1}, rhs_contracting_dims={0}, ")


def test_jax_0_4_26_quoted_backend_config_and_tuple_sharding(reader):
    path = os.path.join(CORPUS, "jax-0.4.26", "misc", "module_0019.jit__lambda_.cpu_after_optimizations.txt")
    d = reader(path)
    [r] = [r for r in d.instructions.to_pylist() if r["opcode"] == "custom-call"]
    assert r["name"] == "custom-call.5" and r["custom_call_target"] == "xla_python_cpu_callback"
    assert r["backend_config"] == "94513504257936"  # quoted in the file, quotes removed
    assert r["sharding"] == "{{maximal device=0}}"
    assert r["operands"] == ["constant.4", "Arg_0.1"]
    [c] = d.custom_calls.to_pylist()
    assert c == {"file_id": 0, "instruction_id": r["instruction_id"], "name": "custom-call.5",
                 "target": "xla_python_cpu_callback", "body_length": 14, "decoded_length": None,
                 "format": "text", "kernel_name": None}


def test_jax_0_10_2_stack_frames_by_hand(reader):
    """Follow ``%cos.1``'s stack_frame_id=4 through the four tables of module_0020 by hand."""
    path = os.path.join(CORPUS, "jax-0.10.2", "control_flow", "module_0020.jit_branches.before_optimizations.txt")
    text = open(path, encoding="utf-8").read()
    line = next(l for l in text.split("\n") if l.startswith("  %cos.1 = "))
    frame_id = int(re.search(r"stack_frame_id=(\d+)", line).group(1))
    assert frame_id == 4

    def table(name):
        block = text.split("\n" + name + "\n", 1)[1].split("\n\n", 1)[0]
        return {int(l.split(" ", 1)[0]): l.split(" ", 1)[1] for l in block.split("\n")}

    frame = table("StackFrames")[frame_id]               # {file_location_id=4 parent_frame_id=4}
    loc_id = int(re.search(r"file_location_id=(\d+)", frame).group(1))
    loc = table("FileLocations")[loc_id]
    fields = dict(kv.split("=") for kv in loc.strip("{}").split(" "))
    file_name = table("FileNames")[int(fields["file_name_id"])].strip('"')
    function_name = table("FunctionNames")[int(fields["function_name_id"])].strip('"')
    assert (file_name, function_name, int(fields["line"])) == (
        "/src/models_gen/gen_control_flow.py", "branches.<locals>.<lambda>", 59)

    d = reader(path)
    r = _by_name(d)["cos.1"]
    assert r["opcode"] == "cosine" and r["stack_frame_id"] == 4
    assert (r["source_file"], r["source_line"], r["source_function"]) == (file_name, 59, function_name)
    assert r["op_name"] == "jit(branches)/cond/branch_0_fun/cos"

    frames = {f["frame_id"]: f for f in d.stack_frames.to_pylist()}
    assert len(frames) == 11
    f4 = frames[4]
    assert f4 == {"file_id": 0, "frame_id": 4, "parent_frame_id": 3, "file_location_id": 4,
                  "file_name": file_name, "function_name": function_name, "source_line": 59,
                  "end_line": 59, "column": 61, "end_column": 71, "line": 29}
    assert frames[1]["parent_frame_id"] is None
    assert frames[5]["parent_frame_id"] == 3 and frames[8]["parent_frame_id"] == 6

    ins = _by_name(d)
    assert ins["cond.11"]["called_computations"] == ["region_2.3", "region_3.4", "region_4.5", "region_5.6"]
    assert ins["cond.11"]["operands"] == ["clamp.1", "cond.10", "cond.10", "cond.10", "cond.10"]
    assert ins["x.2"]["op_name"] == "x" and ins["x.2"]["stack_frame_id"] is None
    assert ins["x.2"]["source_file"] is None
    assert ins["tuple.1"]["is_root"] and ins["tuple.1"]["shape"] == "(f32[24]{0}, f32[24]{0})"


def test_jax_0_10_2_spmd_attributes(reader):
    path = os.path.join(CORPUS, "jax-0.10.2", "spmd", "module_0006.jit_sm_collectives.before_optimizations.txt")
    d = reader(path)
    ins = _by_name(d)
    r = ins["shard_map.13"]
    assert r["custom_call_target"] == "xla.sdy.GlobalToLocalShape"
    assert r["operands"] == ["a.1"]
    assert '{\\"data\\"}' in r["attributes"]  # frontend attribute text is kept as printed
    [c] = [c for c in d.custom_calls.to_pylist() if c["name"] == "shard_map.13"]
    assert c["format"] == "empty" and c["body_length"] == 0 and c["decoded_length"] is None
    m = d.modules.to_pylist()[0]
    assert "num_partitions=8" in m["attributes"]


def test_python_callback_raw_dict_backend_config(reader):
    path = os.path.join(CORPUS, "jax-0.10.2", "misc", "module_0103.jit__lambda.cpu_after_optimizations.txt")
    d = reader(path)
    [r] = [r for r in d.instructions.to_pylist() if r["opcode"] == "custom-call"]
    assert r["name"] == "pure_callback.1"
    assert r["backend_config"] == "{index = 0 : ui64}"
    assert r["sharding"] == "{maximal device=0}"
    assert r["op_type"] == "pure_callback" and r["op_name"] == "jit(<lambda>)/pure_callback"
    [c] = d.custom_calls.to_pylist()
    assert (c["target"], c["format"], c["decoded_length"], c["body_length"]) == (
        "xla_ffi_python_cpu_callback", "text", None, len("{index = 0 : ui64}"))


# ------------------------------------------------------------------------------ hand-made


def _write(tmp_path, text: str, name: str = "module_0001.test.before_optimizations.txt") -> str:
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(p)


ESCAPES = r'''HloModule escapes, entry_computation_layout={(f32[])->f32[]}

ENTRY %main.3 (p.1: f32[]) -> f32[] {
  %p.1 = f32[] parameter(0), metadata={op_type="my op" op_name="scope/\"quoted\"/it\'s\n" source_file="C:\\src\\m\303\251.py" source_line=7}
  ROOT %c.2 = f32[] custom-call(%p.1), custom_call_target="my\"target", backend_config="a\" b, c=d\\"
}
'''


def test_escaped_strings(reader, tmp_path):
    d = reader(_write(tmp_path, ESCAPES))
    ins = _by_name(d)
    p = ins["p.1"]
    assert p["op_type"] == "my op"
    assert p["op_name"] == "scope/\"quoted\"/it's\n"
    assert p["source_file"] == "C:\\src\\mé.py"
    assert p["source_line"] == 7
    c = ins["c.2"]
    assert c["custom_call_target"] == 'my"target'
    assert c["backend_config"] == 'a" b, c=d\\'
    assert c["attributes"] == r'custom_call_target="my\"target", backend_config="a\" b, c=d\\"'
    [cc] = d.custom_calls.to_pylist()
    assert cc["target"] == 'my"target' and cc["format"] == "text"
    assert cc["body_length"] == len('a" b, c=d\\')


INDEX_COMMENTS = '''HloModule idx, entry_computation_layout={(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])->(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])}

ENTRY %main (a0: f32[], a1: f32[], a2: f32[], a3: f32[], a4: f32[], /*index=5*/a5: f32[]) -> (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) {
  %a0 = f32[] parameter(0)
  %a1 = f32[] parameter(1)
  %a2 = f32[] parameter(2)
  %a3 = f32[] parameter(3)
  %a4 = f32[] parameter(4)
  %a5 = f32[] parameter(5)
  ROOT %t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple(%a0, %a1, %a2, %a3, %a4, /*index=5*/%a5), sharding={{replicated}, {replicated}, {maximal device=0}, {replicated}, {replicated}, /*index=5*/{devices=[2]0,1}}
}
'''


def test_index_comments(reader, tmp_path):
    d = reader(_write(tmp_path, INDEX_COMMENTS))
    t = _by_name(d)["t"]
    assert t["shape"] == "(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])"
    assert t["operands"] == ["a0", "a1", "a2", "a3", "a4", "a5"]
    assert t["operand_text"] == "%a0, %a1, %a2, %a3, %a4, /*index=5*/%a5"
    assert t["sharding"] == ("{{replicated}, {replicated}, {maximal device=0}, {replicated}, "
                             "{replicated}, /*index=5*/{devices=[2]0,1}}")
    m = d.modules.to_pylist()[0]
    assert m["entry_computation_layout"].endswith("/*index=5*/f32[])")
    [c] = d.computations.to_pylist()
    assert c["signature"].endswith("/*index=5*/a5: f32[])")
    assert c["result_shape"] == "(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])"


VARIANTS = '''HloModule my.module.v2, is_scheduled=true, num_partitions=8

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add = f32[] add(%x, %y)
}

%async_wrapped (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p)
}, execution_thread="host"

ENTRY %main.9 (a: f32[8], d: s32[<=16,?], p2: f32[2,4]) -> f32[8] {
  %a = f32[8]{0} parameter(0)
  %d = s32[<=16,?]{1,0} parameter(1)
  %p2 = f32[2,4]{1,0} parameter(2)
  %ar = f32[8]{0} all-reduce(%a), channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%sum
  %ar2 = f32[8]{0} all-reduce(%ar), replica_groups=[4,2]<=[2,4]T(1,0), to_apply=%sum
  %zero = f32[] constant(0)
  %pad = f32[17]{0} pad(%ar2, %zero), padding=0_1_1
  %pad2 = f32[3,6]{1,0} pad(%p2, %zero), padding=0_1_0x2_-3_1
  %cs4 = s4[8]{0:E(4)} convert(%a)
  %cf8 = f8e4m3fn[8]{0} convert(%a)
  %cf4 = f4e2m1fn[8]{0} convert(%a)
  %cu2 = u2[] constant(3)
  %ce8 = f8e8m0fnu[2,2]{1,0} constant({ { 1, 2 }, { 4, 8 } })
  %as = ((f32[8]{0}), f32[8]{0}, u32[]) async-start(%a), async_execution_thread="host", calls=%async_wrapped
  %ad = f32[8]{0} async-done(%as), async_execution_thread="host", calls=%async_wrapped
  %multi = f32[8]{0} call(%a, %ad), calls=%sum, %async_wrapped, control-predecessors={%ar, %ad}
  ROOT %r = f32[8]{0} add(%ar, %ad), frontend_attributes={a.b="x, y=1",c={d = e}}
}
'''


def test_variants(reader, tmp_path):
    d = reader(_write(tmp_path, VARIANTS, "variants.txt"))
    assert d.errors.num_rows == 0
    m = d.modules.to_pylist()[0]
    assert m["name"] == "my.module.v2" and m["is_scheduled"] is True
    assert m["entry_computation_layout"] is None
    assert m["attributes"] == "is_scheduled=true, num_partitions=8"
    comps = d.computations.to_pylist()
    assert [(c["name"], c["execution_thread"]) for c in comps] == [
        ("sum", None), ("async_wrapped", "host"), ("main.9", None)]
    ins = _by_name(d)
    assert ins["d"]["shape"] == "s32[<=16,?]{1,0}"
    assert ins["ar"]["attributes"] == ("channel_id=1, replica_groups=[2,4]<=[8], "
                                       "use_global_device_ids=true, to_apply=%sum")
    assert ins["ar"]["called_computations"] == ["sum"]
    assert ins["ar2"]["attributes"] == "replica_groups=[4,2]<=[2,4]T(1,0), to_apply=%sum"
    assert ins["pad"]["attributes"] == "padding=0_1_1"
    assert ins["pad2"]["attributes"] == "padding=0_1_0x2_-3_1"
    assert ins["cs4"]["shape"] == "s4[8]{0:E(4)}"
    assert ins["cf8"]["shape"] == "f8e4m3fn[8]{0}"
    assert ins["cf4"]["shape"] == "f4e2m1fn[8]{0}"
    assert (ins["cu2"]["shape"], ins["cu2"]["operand_text"]) == ("u2[]", "3")
    assert ins["ce8"]["operand_text"] == "{ { 1, 2 }, { 4, 8 } }"
    assert ins["as"]["shape"] == "((f32[8]{0}), f32[8]{0}, u32[])"
    assert ins["as"]["called_computations"] == ["async_wrapped"]
    assert ins["multi"]["called_computations"] == ["sum", "async_wrapped"]
    assert ins["multi"]["attributes"] == "calls=%sum, %async_wrapped, control-predecessors={%ar, %ad}"
    assert ins["r"]["attributes"] == 'frontend_attributes={a.b="x, y=1",c={d = e}}'
    assert hlo.split_attributes(ins["multi"]["attributes"]) == [
        ("calls", "%sum, %async_wrapped"), ("control-predecessors", "{%ar, %ad}")]


SHORT_PARSABLE = '''HloModule short.parsable

add.1 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT add = f32[] add(x, y)
}

ENTRY main.4 {
  p = f32[4]{0} parameter(0)
  c = f32[] constant(0)
  ROOT r = f32[] reduce(p, c), dimensions={0}, to_apply=add.1
}
'''


def test_short_parsable(reader, tmp_path):
    d = reader(_write(tmp_path, SHORT_PARSABLE))
    comps = d.computations.to_pylist()
    assert [(c["name"], c["is_entry"], c["signature"], c["result_shape"]) for c in comps] == [
        ("add.1", False, "", ""), ("main.4", True, "", "")]
    ins = _by_name(d)
    assert ins["r"]["operands"] == ["p", "c"] and ins["r"]["called_computations"] == ["add.1"]
    assert ins["add"]["is_root"] and ins["add"]["computation_id"] == 0
    assert d.modules.to_pylist()[0]["attributes"] == ""


MULTILINE_CONSTANT = '''HloModule multi

ENTRY %main (p: f32[2,3]) -> f32[2,3] {
  %p = f32[2,3]{1,0} parameter(0)
  %c = f32[2,3]{1,0} constant({
    { 1, 2, 3 },
    { 4, 5, 6 }
  })
  ROOT %a = f32[2,3]{1,0} add(%p, %c)
}
'''


def test_multiline_constant(reader, tmp_path):
    path = _write(tmp_path, MULTILINE_CONSTANT)
    d = reader(path)
    assert d.errors.num_rows == 0
    ins = d.instructions.to_pylist()
    assert [r["name"] for r in ins] == ["p", "c", "a"]
    c = ins[1]
    assert c["operand_text"] == "{\n    { 1, 2, 3 },\n    { 4, 5, 6 }\n  }"
    assert c["line"] == 5 and ins[2]["line"] == 9
    assert c["offset"] == MULTILINE_CONSTANT.index("  %c =")


def test_multiline_constant_unterminated(reader, tmp_path):
    text = MULTILINE_CONSTANT.replace("  })\n", "  }\n")
    path = _write(tmp_path, text)
    d = reader(path, on_error="collect")
    errs = d.errors.to_pylist()
    assert len(errs) >= 1 and errs[0]["line"] == 5
    assert [r["name"] for r in d.instructions.to_pylist()] == ["p"]
    from hlodump.exceptions import ParseError

    with pytest.raises(ParseError):
        reader(path)


def test_big_custom_call_body(reader, tmp_path):
    rnd = random.Random(1)
    payload = b"ML\xefR" + bytes(rnd.getrandbits(8) for _ in range(750_000))
    body = base64.b64encode(payload).decode()
    assert len(body) > 1_000_000
    cfg = '{"custom_call_config": {"body": "%s", "serialization_format": 1}, "kernel_name": "splash"}' % body
    text = ("HloModule big\n\nENTRY %main (p: f32[8]) -> f32[8] {\n"
            "  %p = f32[8]{0} parameter(0)\n"
            '  ROOT %k = f32[8]{0} custom-call(%p), custom_call_target="tpu_custom_call", '
            "backend_config=" + cfg + "\n}\n")
    path = _write(tmp_path, text)
    t0 = time.perf_counter()
    d = reader(path)
    assert time.perf_counter() - t0 < 10
    k = _by_name(d)["k"]
    assert k["backend_config"] == cfg
    [c] = d.custom_calls.to_pylist()
    assert c == {"file_id": 0, "instruction_id": 1, "name": "k", "target": "tpu_custom_call",
                 "body_length": len(body), "decoded_length": len(payload),
                 "format": "mlir_bytecode", "kernel_name": "splash"}
    assert hlo.decode_body(cfg) == payload


def test_custom_call_formats():
    assert hlo.custom_call_info(None) == {"body_length": 0, "decoded_length": None, "format": "empty",
                                          "kernel_name": None}
    assert hlo.custom_call_info('{"a": 1, "name": "kern"}')["format"] == "json"
    assert hlo.custom_call_info('{"a": 1, "name": "kern"}')["kernel_name"] == "kern"
    info = hlo.custom_call_info('{"body": "aGVsbG8="}')
    assert (info["body_length"], info["decoded_length"], info["format"]) == (8, 5, "text")
    assert hlo.custom_call_info("not base64!")["decoded_length"] is None


def test_crlf_file(reader, tmp_path):
    lf = _write(tmp_path, SHORT_PARSABLE, "lf.txt")
    crlf = _write(tmp_path, SHORT_PARSABLE.replace("\n", "\r\n"), "crlf.txt")
    a = reader(lf).instructions.drop_columns(["offset"]).to_pylist()
    b = reader(crlf).instructions.drop_columns(["offset"]).to_pylist()
    assert a == b


def test_crlf_offsets_exact_with_raw_bytes():
    """With the raw bytes, ``parse_module`` gives exact offsets also for CRLF files."""
    from hlodump.reference.reader import FileContext, Sink, split_lines

    data = SHORT_PARSABLE.replace("\n", "\r\n").encode()
    sink = Sink()
    ctx = FileContext(0, "x", sink)
    hlo.parse_module(split_lines(data, ctx), ctx, data)
    for r in sink.rows["instructions"]:
        assert data.startswith(b"  ", r["offset"])
        assert data[:r["offset"]].count(b"\n") == r["line"] - 1


def test_errors_are_collected(reader, tmp_path):
    text = SHORT_PARSABLE.replace("  y = f32[] parameter(1)\n", "  y = f32[] parameter(1)\n  this is not HLO\n")
    text += "garbage at column 0\n"
    d = reader(_write(tmp_path, text), on_error="collect")
    errs = d.errors.to_pylist()
    assert [e["line"] for e in errs] == [6, 15]
    assert errs[0]["text"] == "  this is not HLO"
    assert d.instructions.num_rows == 6


# ------------------------------------------------------------------------------ parse_instruction


def test_parse_instruction_forms():
    old = hlo.parse_instruction(
        "%multiply.8 = f32[] multiply(f32[] %Arg_.6, f32[] %constant.7), metadata={op_name=\"m\" "
        "source_file=\"/a.py\" source_line=67}")
    assert old["operands"] == ["Arg_.6", "constant.7"]
    assert old["operand_text"] == "f32[] %Arg_.6, f32[] %constant.7"
    assert (old["op_name"], old["source_file"], old["source_line"]) == ("m", "/a.py", 67)
    t = hlo.parse_instruction("%tuple.15 = (f32[], s32[]) tuple((f32[], s32[]) %t.1, f32[] %multiply.8)")
    assert t["operands"] == ["t.1", "multiply.8"] and t["shape"] == "(f32[], s32[])"
    root = hlo.parse_instruction("  ROOT %x = f32[] negate(%y)")
    assert root["is_root"] and root["name"] == "x" and root["operands"] == ["y"]
    iota = hlo.parse_instruction("%iota.1 = s32[8]{0} iota(), iota_dimension=0")
    assert iota["operands"] == [] and iota["attributes"] == "iota_dimension=0"
    assert hlo.parse_instruction("allocation 0: size 4, parameter 0") is None
    assert hlo.parse_instruction("%x = f32[] negate(%y") is None
    assert hlo.parse_instruction("") is None
    keys = {"name", "opcode", "shape", "operands", "operand_text", "called_computations",
            "attributes", "op_name", "op_type", "source_file", "source_line", "stack_frame_id",
            "custom_call_target", "backend_config", "fusion_kind", "sharding", "is_root"}
    assert keys <= set(root)


def test_split_attributes_generic_rule():
    s = ('window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, '
         'metadata={op_name="a, b=c" source_line=1}, slice={[0:1], [0:8:2]}, '
         'backend_config={"x": "}, y=", "z": [1, {"w": 2}]}')
    assert hlo.split_attributes(s) == [
        ("window", "{size=3x3 pad=1_1x1_1}"), ("dim_labels", "b01f_01io->b01f"),
        ("metadata", '{op_name="a, b=c" source_line=1}'), ("slice", "{[0:1], [0:8:2]}"),
        ("backend_config", '{"x": "}, y=", "z": [1, {"w": 2}]}')]


def test_reference_needs_no_native_module():
    """``hlodump.reference`` parses HLO text with ``hlodump._core`` made unimportable."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['hlodump._core'] = None\n"
            "from hlodump.reference import read_arrow\n"
            "d = read_arrow(sys.argv[1])\n"
            "assert d.instructions.num_rows == 79, d\n")
    python_dir = os.path.join(os.path.dirname(DATA), "..", "python")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(python_dir))
    subprocess.run([sys.executable, "-c", code, SEED_002], check=True, env=env)
