"""An ``HloModuleProto`` printed the way XLA's ``HloModule::ToString`` prints a dump (the reference
of ``src/hlo_proto/render/``): the header and stack-frame tables, the computations in XLA's post
order, each instruction with its operands by name, its attributes, metadata and backend config,
within a budget of text (``TooLong``). The values inside (shapes, literals, escaped strings)
come from ``hlo_proto_values``. Apart from ``hlo_proto``, which decodes the proto, makes the
buffer-assignment rows and reads the printed text as rows (``parse``)."""

from __future__ import annotations

from .hlo_proto_values import _C_ESCAPES, PRIMITIVE, _cescape, _index_comment, literal_str, shape_str

# ---- attributes ------------------------------------------------------------------------------


def _ints(v: list[int]) -> str:
    return "{" + ",".join(map(str, v)) + "}"


#: OpMetadata's fields in the order XLA prints them, and whether each is a (quoted) string.
_METADATA_FIELDS = (("op_type", True), ("op_name", True), ("source_file", True), ("source_line", False),
                    ("source_end_line", False), ("source_column", False), ("source_end_column", False),
                    ("deduplicated_name", True), ("scheduling_name", True), ("stack_frame_id", False))


def metadata_str(m: dict) -> str:
    """``OpMetadataToString``: every field that is set, in XLA's order (strings C-escaped)."""
    return " ".join(f'{k}="{_cescape(m[k])}"' if text else f"{k}={m[k]}" for k, text in _METADATA_FIELDS if m.get(k))


def _window(w: dict) -> str:
    dims = w.get("dimensions", [])
    out = ["size=" + "x".join(str(d.get("size", 0)) for d in dims)]
    if any(d.get("stride", 1) != 1 for d in dims):
        out.append("stride=" + "x".join(str(d.get("stride", 1)) for d in dims))
    if any(d.get("padding_low", 0) or d.get("padding_high", 0) for d in dims):
        out.append("pad=" + "x".join(f"{d.get('padding_low', 0)}_{d.get('padding_high', 0)}" for d in dims))
    if any(d.get("base_dilation", 1) != 1 for d in dims):
        out.append("lhs_dilate=" + "x".join(str(d.get("base_dilation", 1)) for d in dims))
    if any(d.get("window_dilation", 1) != 1 for d in dims):
        out.append("rhs_dilate=" + "x".join(str(d.get("window_dilation", 1)) for d in dims))
    if any(d.get("window_reversal", False) for d in dims):
        out.append("rhs_reversal=" + "x".join("1" if d.get("window_reversal") else "0" for d in dims))
    return " ".join(out)


def _dim_labels(c: dict) -> str:
    def labels(batch: int, feature: int, spatial: list[int], b: str, f: str) -> str:
        rank = 2 + len(spatial)
        out = ["?"] * rank
        if 0 <= batch < rank:
            out[batch] = b
        if 0 <= feature < rank:
            out[feature] = f
        for k, d in enumerate(spatial):
            if 0 <= d < rank:
                out[d] = str(k)
        return "".join(out)
    lhs = labels(c.get("input_batch_dimension", 0), c.get("input_feature_dimension", 0),
                 c.get("input_spatial_dimensions", []), "b", "f")
    rhs = labels(c.get("kernel_input_feature_dimension", 0), c.get("kernel_output_feature_dimension", 0),
                 c.get("kernel_spatial_dimensions", []), "i", "o")
    out = labels(c.get("output_batch_dimension", 0), c.get("output_feature_dimension", 0),
                 c.get("output_spatial_dimensions", []), "b", "f")
    return f"{lhs}_{rhs}->{out}"


_ACCURACY = {1: "highest"}
_FFT_TYPES = {0: "FFT", 1: "IFFT", 2: "RFFT", 3: "IRFFT"}
_SCHEDULES = {1: "SCHEDULE_LATEST", 2: "SCHEDULE_EARLIEST"}
_API_VERSIONS = {2: "API_VERSION_STATUS_RETURNING", 3: "API_VERSION_STATUS_RETURNING_UNIFIED",
                 4: "API_VERSION_TYPED_FFI"}


def _aliasing(ins: dict, out: list[str]) -> None:
    """``output_to_operand_aliasing={{0}: (0, {})}``."""
    al = ins.get("output_operand_aliasing", [])
    if al:
        out.append("output_to_operand_aliasing={" + ", ".join(
            _ints(a.get("output_shape_index", [])).replace(",", ",") + f": ({a.get('operand_index', 0)}, "
            + _ints(a.get("operand_shape_index", [])) + ")" for a in al) + "}")


_RNG_ALGORITHMS = {0: "rng_default", 1: "rng_three_fry", 2: "rng_philox"}
_PRECISION = {0: "default", 1: "high", 2: "highest", 3: "packed_nibble"}
_DEFAULT_CMP = {1: "UNSIGNED"}


def _default_comparison(et: int) -> str:
    name = PRIMITIVE.get(et, "")
    if name.startswith(("f", "bf", "c")):
        return "FLOAT"
    if name.startswith("s"):
        return "SIGNED"
    return "UNSIGNED"


def _dimension_numbers(out: list[str], d: dict, always: tuple[str, ...], if_set: tuple[str, ...]) -> None:
    """Gather's or scatter's dimension numbers as XLA prints them: ``always`` (even empty),
    then ``if_set`` (the batching dims, printed only when there are some), then
    ``index_vector_dim``."""
    out.extend(f"{k}=" + _ints(d.get(k, [])) for k in always)
    out.extend(f"{k}=" + _ints(d[k]) for k in if_set if d.get(k))
    out.append(f"index_vector_dim={d.get('index_vector_dim', 0)}")


def _index_flags(out: list[str], ins: dict) -> None:
    """Gather's and scatter's flags, printed only when true."""
    out.extend(f"{k}=true" for k in ("indices_are_sorted", "unique_indices") if ins.get(k))


def _extra_attributes(ins: dict, comps: dict[int, dict], operands: list[dict]) -> list[str]:
    """The opcode's own attributes (``PrintExtraAttributesImpl``), then the called computations."""
    op = ins.get("opcode", "")
    out: list[str] = []
    dims = ins.get("dimensions", [])
    if op in ("broadcast", "transpose", "reduce", "reverse", "concatenate", "sort", "map",
              "reduce-precision") and op != "reduce-precision":
        out.append("dimensions=" + _ints(dims))
    if op == "sort" and ins.get("is_stable"):
        out.append("is_stable=true")
    if op == "iota":
        out.append(f"iota_dimension={dims[0] if dims else 0}")
    if op == "get-tuple-element":
        out.append(f"index={ins.get('tuple_index', 0)}")
    if op == "slice":
        sl = ins.get("slice_dimensions", [])
        strided = any(s.get("stride", 1) != 1 for s in sl)
        out.append("slice={" + ", ".join(
            f"[{s.get('start', 0)}:{s.get('limit', 0)}" + (f":{s.get('stride', 1)}" if strided else "") + "]"
            for s in sl) + "}")
    if op == "pad":
        pc = ins.get("padding_config", {}).get("dimensions", [])
        out.append("padding=" + "x".join(
            f"{d.get('edge_padding_low', 0)}_{d.get('edge_padding_high', 0)}"
            + (f"_{d.get('interior_padding', 0)}" if d.get("interior_padding", 0) else "") for d in pc))
    if op == "dynamic-slice":
        out.append("dynamic_slice_sizes=" + _ints(ins.get("dynamic_slice_sizes", [])))
    if op == "compare":
        out.append(f"direction={ins.get('comparison_direction', '')}")
        ct = ins.get("comparison_type", "")
        et = operands[0].get("shape", {}).get("element_type", 0) if operands else 0
        # Comparison::ToString: the order is printed when it is not the element type's default
        # (XLA since jax 0.11 writes the order (field 102) and prints `order=TOTAL`; before, the
        # type TOTALORDER was printed `type=TOTALORDER`)
        order = ins.get("comparison_order", "")
        if _default_comparison(et) == "FLOAT":
            if order == "TOTAL":
                out.append("order=TOTAL")
            elif not order and ct == "TOTALORDER":
                out.append("type=TOTALORDER")
    if op == "dot":
        d = ins.get("dot_dimension_numbers", {})
        for key, label in (("lhs_batch_dimensions", "lhs_batch_dims"), ("lhs_contracting_dimensions", "lhs_contracting_dims"),
                           ("rhs_batch_dimensions", "rhs_batch_dims"), ("rhs_contracting_dimensions", "rhs_contracting_dims")):
            if d.get(key):
                out.append(f"{label}=" + _ints(d[key]))
    if op == "convolution":
        if "window" in ins:
            out.append("window={" + _window(ins["window"]) + "}")
        out.append("dim_labels=" + _dim_labels(ins.get("convolution_dimension_numbers", {})))
        if ins.get("feature_group_count", 1) not in (0, 1):
            out.append(f"feature_group_count={ins['feature_group_count']}")
        if ins.get("batch_group_count", 1) not in (0, 1):
            out.append(f"batch_group_count={ins['batch_group_count']}")
    if op in ("dot", "convolution"):
        prec = ins.get("precision_config", {}).get("operand_precision", [])
        if any(p != 0 for p in prec):
            out.append("operand_precision={" + ",".join(_PRECISION.get(p, str(p)) for p in prec) + "}")
    if op in ("reduce-window", "select-and-scatter"):
        out.append("window={" + _window(ins.get("window", {})) + "}")
    if op == "gather":
        _dimension_numbers(out, ins.get("gather_dimension_numbers", {}),
                           ("offset_dims", "collapsed_slice_dims", "start_index_map"),
                           ("operand_batching_dims", "start_indices_batching_dims"))
        out.append("slice_sizes=" + _ints(ins.get("gather_slice_sizes", [])))
        _index_flags(out, ins)
    if op == "scatter":
        _dimension_numbers(out, ins.get("scatter_dimension_numbers", {}),
                           ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims"),
                           ("input_batching_dims", "scatter_indices_batching_dims"))
        _index_flags(out, ins)
    if op == "topk":
        out.append(f"k={ins.get('k', 0)}")
        out.append("largest=" + ("true" if ins.get("largest") else "false"))
        if ins.get("is_stable"):
            out.append("is_stable=true")
    if op == "rng-bit-generator":
        out.append("algorithm=" + _RNG_ALGORITHMS.get(ins.get("rng_algorithm", 0), str(ins.get("rng_algorithm", 0))))
    if op == "reduce-precision":
        out.append(f"exponent_bits={ins.get('exponent_bits', 0)}")
        out.append(f"mantissa_bits={ins.get('mantissa_bits', 0)}")
    if op == "fft":
        out.append("fft_type=" + _FFT_TYPES.get(ins.get("fft_type", 0), str(ins.get("fft_type", 0))))
        out.append("fft_length=" + _ints(ins.get("fft_length", [])))
    if op == "fusion":
        out.append(f"kind={ins.get('fusion_kind', '')}")
        _aliasing(ins, out)
    if op == "custom-call":
        out.append(f'custom_call_target="{_cescape(ins.get("custom_call_target", ""))}"')
        if ins.get("constrain_layout"):
            out.append("operand_layout_constraints={" + ", ".join(
                shape_str(x) for x in ins.get("operand_shapes_with_layout", [])) + "}")
        if ins.get("custom_call_has_side_effect"):
            out.append("custom_call_has_side_effect=true")
        _aliasing(ins, out)
        sched = ins.get("custom_call_schedule", 0)
        if sched:
            out.append("schedule=" + _SCHEDULES.get(sched, str(sched)))
        api = ins.get("custom_call_api_version", 0)
        if api not in (0, 1):
            out.append("api_version=" + _API_VERSIONS.get(api, str(api)))
    # called computations (HloInstruction::PrintExtraAttributes, kNameOnly)
    called = [comps.get(c, {}).get("name", f"computation.{c}") for c in ins.get("called_computation_ids", [])]
    if called:
        if op == "while" and len(called) == 2:
            # HloWhileInstruction calls {body, condition}
            out.append(f"condition=%{called[1]}")
            out.append(f"body=%{called[0]}")
        elif op == "select-and-scatter":
            out.append(f"select=%{called[0]}")
            if len(called) > 1:
                out.append(f"scatter=%{called[1]}")
        elif op == "conditional":
            pred_type = operands[0].get("shape", {}).get("element_type", 0) if operands else 0
            if pred_type == 1 and len(called) == 2:
                out.append(f"true_computation=%{called[0]}")
                out.append(f"false_computation=%{called[1]}")
            else:
                out.append("branch_computations={" + ", ".join("%" + c for c in called) + "}")
        elif op in ("call", "map", "reduce-window", "reduce", "all-reduce", "all-reduce-start", "scatter",
                    "sort", "topk", "reduce-scatter"):
            out.append(f"to_apply=%{called[0]}")
        elif op == "custom-call":
            out.append("called_computations={" + ", ".join("%" + c for c in called) + "}")
        else:
            out.append(f"calls=%{called[0]}" if len(called) == 1 else
                       "calls={" + ", ".join("%" + c for c in called) + "}")
    mode = ins.get("result_accuracy", {}).get("mode", 0)
    if mode:
        out.append("result_accuracy={mode=" + _ACCURACY.get(mode, str(mode)) + "}")
    return out


# ---- the module ------------------------------------------------------------------------------


class TooLong(Exception):
    """The printed module would exceed ``text_budget`` of its proto's size."""

    def __init__(self, budget: int):
        super().__init__(budget)
        self.budget = budget


def text_budget(n: int) -> int:
    """The most text a proto of ``n`` bytes may print (XLA's text is about as long as its proto;
    a proto can ask for far more: one long name used by a million operands)."""
    return n * 16 + (1 << 20)


def _blen(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def _join_within(parts, sep: str, budget: int) -> str:
    out: list[str] = []
    n = 0
    for k, p in enumerate(parts):
        n += (_blen(sep) if k else 0) + _blen(p)
        out.append(p)
        if n > budget:
            raise TooLong(budget)
    return sep.join(out)


def render_module(m: dict, budget: int | None = None) -> str:
    """The module as XLA's text dump prints it (``TooLong`` past ``budget`` bytes)."""
    if budget is None:
        budget = 1 << 62
    comps = {c.get("id", 0): c for c in m.get("computations", [])}
    schedule = {s.get("key", 0): s.get("value", {}).get("instruction_ids", [])
                for s in m.get("schedule", {}).get("sequences", [])}
    out: list[str] = []
    header = f"HloModule {m.get('name', '')}"
    if schedule:
        header += ", is_scheduled=true"
    aliases = m.get("input_output_alias", {}).get("entries", [])
    if aliases:
        kinds = {1: "may-alias", 2: "must-alias"}
        header += ", input_output_alias={ " + ", ".join(
            "{" + ",".join(map(str, a.get("output_shape_index", []))) + "}: ("
            + f"{a.get('parameter_number', 0)}, " + "{" + ",".join(map(str, a.get("parameter_shape_index", []))) + "}"
            + f", {kinds.get(a.get('kind', 0), 'may-alias')})" for a in aliases) + " }"
    hps = m.get("host_program_shape")
    if hps:
        header += (", entry_computation_layout={(" + ", ".join(_index_comment(k) + shape_str(p) for k, p in enumerate(hps.get("parameters", [])))
                   + ")->" + shape_str(hps.get("result", {})) + "}")
    out.append(header)
    out.append("")
    sfi = m.get("stack_frame_index")
    if sfi and (sfi.get("file_names") or sfi.get("stack_frames")):
        out.append("FileNames")
        for k, f in enumerate(sfi.get("file_names", []), 1):
            out.append(f'{k} "{_cescape(f)}"')
        out.append("")
        out.append("FunctionNames")
        for k, f in enumerate(sfi.get("function_names", []), 1):
            out.append(f'{k} "{_cescape(f)}"')
        out.append("")
        out.append("FileLocations")
        for k, loc in enumerate(sfi.get("file_locations", []), 1):
            out.append(f"{k} {{file_name_id={loc.get('file_name_id', 0)} function_name_id={loc.get('function_name_id', 0)} "
                       f"line={loc.get('line', 0)} end_line={loc.get('end_line', 0)} column={loc.get('column', 0)} "
                       f"end_column={loc.get('end_column', 0)}}}")
        out.append("")
        out.append("StackFrames")
        for k, fr in enumerate(sfi.get("stack_frames", []), 1):
            # XLA prints the parent's 1-based id plus one (its printer adds 1 to an id that is
            # 1-based already); printed as XLA prints it
            out.append(f"{k} {{file_location_id={fr.get('file_location_id', 0)} parent_frame_id={fr.get('parent_frame_id', 0) + 1}}}")
        out.append("")
        out.append("")
    entry_id = m.get("entry_computation_id")
    new_style = _prints_tuple_refs(m)
    used = sum(_blen(x) + 1 for x in out)
    if used > budget:
        raise TooLong(budget)
    longest = max((_blen(c.get("name", "")) + 3 for c in comps.values()), default=0)
    for c in _post_order(m):
        is_entry = c.get("id") == entry_id
        text = _computation(c, comps, schedule.get(c.get("id", 0)), is_entry, budget - used, longest, new_style)
        used += _blen(text) + 2
        if used > budget:
            raise TooLong(budget)
        out.append(text)
        out.append("")
    return "\n".join(out) + "\n"


def _prints_tuple_refs(m: dict) -> bool:
    """Whether the XLA that wrote ``m`` prints non-root get-tuple-elements as ``%tuple#index`` in
    their users (jax 0.11 and later) or as lines of their own (before). The proto does not say
    which XLA wrote it; the one field seen to tell them apart is the comparison order (field 102,
    written on every compare since jax 0.11): a module with a compare that has it is new; any
    other module is taken as old (every release before 0.11 prints so; a module of jax ≥ 0.11
    without any compare is printed the old way: its get-tuple-elements come as rows)."""
    for c in m.get("computations", []):
        for i in c.get("instructions", []):
            if i.get("opcode") == "compare" and i.get("comparison_order"):
                return True
    return False


def _post_order(m: dict) -> list[dict]:
    """``HloModule::MakeComputationPostOrder``: for each computation nobody calls (module order),
    its embedded computations depth first, each instruction's callees in order, then itself. XLA
    walks a computation's instructions in their order in memory, which the proto does not keep:
    it writes them in post order; a fusion computation is built from its root up, so its walk is
    taken in reverse (what XLA's dumps show)."""
    comps = m.get("computations", [])
    by_id = {c.get("id", 0): c for c in comps}
    called = {cc for c in comps for i in c.get("instructions", []) for cc in i.get("called_computation_ids", [])}
    added: set[int] = set()
    order: list[dict] = []

    schedule = {e.get("key", 0): e.get("value", {}).get("instruction_ids", [])
                for e in m.get("schedule", {}).get("sequences", [])}

    def walk(c: dict) -> list[int]:
        ins = c.get("instructions", [])
        seq = schedule.get(c.get("id", 0))
        if seq:
            by = {i.get("id"): i for i in ins}
            ins = [by[i] for i in seq if i in by]
        elif c.get("is_fusion_computation"):
            ins = ins[::-1]
        return [cc for i in ins for cc in i.get("called_computation_ids", [])]

    def embedded(root: dict) -> list[int]:
        # MakeEmbeddedComputationsList, with an explicit stack (no recursion on the input)
        visited: set[int] = set()
        post: list[int] = []
        for r in walk(root):
            # a computation already in the order has its callees there too: nothing to add
            if r not in by_id or r in added or r in visited:
                continue
            visited.add(r)
            stack = [[r, walk(by_id[r]), 0]]
            while stack:
                top = stack[-1]
                if top[2] < len(top[1]):
                    cc = top[1][top[2]]
                    top[2] += 1
                    if cc in by_id and cc not in added and cc not in visited:
                        visited.add(cc)
                        stack.append([cc, walk(by_id[cc]), 0])
                else:
                    post.append(top[0])
                    stack.pop()
        return post

    for c in comps:
        cid = c.get("id", 0)
        if cid in called:
            continue
        for e in embedded(c):
            if e not in added:
                added.add(e)
                order.append(by_id[e])
        if cid not in added:
            added.add(cid)
            order.append(c)
    return order


def _computation(c: dict, comps: dict[int, dict], sequence: list[int] | None, is_entry: bool, budget: int,
                 longest: int = 0, new_style: bool = True) -> str:
    instrs = c.get("instructions", [])
    by_id = {i.get("id", 0): i for i in instrs}
    root = c.get("root_id")
    ps = c.get("program_shape", {})
    params = sorted((i for i in instrs if i.get("opcode") == "parameter"), key=lambda i: i.get("parameter_number", 0))
    sig = "(" + _join_within((f"{p.get('name', '')}: {shape_str(p.get('shape', {}), layout=False)}" for p in params), ", ", budget) + ")"
    result = ps.get("result") or by_id.get(root, {}).get("shape", {})
    head = ("ENTRY " if is_entry else "") + f"%{c.get('name', '')} {sig} -> {shape_str(result, layout=False)}"
    if c.get("execution_thread") and c.get("execution_thread") != "main":
        head += f", execution_thread=\"{c['execution_thread']}\""
    lines = [head + " {"]
    order = [by_id[i] for i in sequence if i in by_id] if sequence else instrs
    # get-tuple-element instructions other than the root are printed as `%operand#index` where used
    elided = {i.get("id"): i for i in instrs if new_style and i.get("opcode") == "get-tuple-element"
              and i.get("id") != root}

    def ref(oid: int) -> str:
        # a chain of elided get-tuple-elements, bounded (a damaged proto may loop)
        suffix = ""
        i = oid
        for _ in range(len(instrs) + 1):
            ins = by_id.get(i)
            if ins is None:
                return f"%<unknown {i}>{suffix}"
            if i not in elided:
                return "%" + ins.get("name", "") + suffix
            suffix = f"#{ins.get('tuple_index', 0)}" + suffix
            ops = ins.get("operand_ids", [])
            i = ops[0] if ops else 0
        return f"%<cycle {oid}>"

    used = _blen(lines[0])
    for ins in order:
        if ins.get("id") in elided:
            continue
        line = "  " + instruction_str(ins, by_id, comps, ref, ins.get("id") == root, max(budget - used, 0), longest)
        used += _blen(line) + 1
        if used > budget:
            raise TooLong(budget)
        lines.append(line)
    lines.append("}")
    return "\n".join(lines)


def instruction_str(ins: dict, by_id: dict, comps: dict, ref, is_root: bool, budget: int = 1 << 62,
                    longest: int = 0) -> str:
    op = ins.get("opcode", "")
    shape = ins.get("shape", {})
    operand_ids = ins.get("operand_ids", [])
    if op == "constant":
        args = literal_str(ins.get("literal", {}), shape)
    elif op == "parameter":
        args = str(ins.get("parameter_number", 0))
    else:
        args = _join_within((_index_comment(k) + ref(o) for k, o in enumerate(operand_ids)), ", ", budget)
    text = ("ROOT " if is_root else "") + f"%{ins.get('name', '')} = {shape_str(shape)} {op}({args})"
    # longest: the longest computation name of the module + 3 (what one called computation can
    # print), computed once
    if len(ins.get("called_computation_ids", [])) * longest > budget:
        raise TooLong(budget)
    attrs = _extra_attributes(ins, comps, [by_id.get(o, {}) for o in operand_ids])
    ctrl = ins.get("control_predecessor_ids", [])
    if ctrl:
        attrs.append("control-predecessors={" + _join_within(("%" + by_id.get(c, {}).get("name", "") for c in ctrl), ", ", budget) + "}")
    fa = ins.get("frontend_attributes", {}).get("map", [])
    if fa:
        attrs.append("frontend_attributes={" + ",".join(f'{e.get("key", "")}="{_cescape(e.get("value", ""))}"' for e in sorted(fa, key=lambda e: e.get("key", ""))) + "}")
    md = metadata_str(ins.get("metadata", {}))
    if md:
        attrs.append("metadata={" + md + "}")
    bc = ins.get("backend_config", b"")
    if bc:
        attrs.append("backend_config=" + backend_config_str(bc))
    if attrs:
        text += ", " + ", ".join(attrs)
    return text



def _is_one_json_dict(b: bytes) -> bool:
    """XLA's ``LexesAsJsonDict``, for a line-based reader: ``{`` … its matching ``}`` at the very
    end (braces inside JSON strings not counted), UTF-8, and no control byte (a newline would
    end the line the text is read by)."""
    if not b.startswith(b"{") or any(c < 0x20 for c in b):
        return False
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    depth, k, in_string = 0, 0, False
    while k < len(b):
        c = b[k]
        if in_string:
            if c == 0x5C:  # backslash: the next byte is escaped
                k += 1
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c == 0x7B:
            depth += 1
        elif c == 0x7D:
            depth -= 1
            if depth == 0:
                return k == len(b) - 1
        k += 1
    return False


def backend_config_str(b: bytes) -> str:
    """``backend_config`` as XLA prints it: a JSON dict as it is, anything else quoted and
    CEscape'd (a string is a value, never syntax: a newline or ``}, metadata=…`` in it stays in
    it)."""
    if _is_one_json_dict(b):
        return b.decode("utf-8")
    out = []
    for ch in b:
        e = _C_ESCAPES.get(ch)
        out.append(e if e is not None else "\\%03o" % ch if ch < 0x20 or ch >= 0x7F else chr(ch))
    return '"' + "".join(out) + '"'
