//! An `HloModuleProto` printed the way XLA's text dump prints the module (`HloModule::ToString`
//! with the dump's options): the reference is `python/hlodump/reference/hlo_proto_render.py`
//! (`render_module`), line for line. docs/protos.md says what the proto cannot print.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use super::wire::{Msg, Value};

mod values;

pub use values::{cescape, cescape_bytes, fmt_g, literal_str, primitive, shape_str};
use values::*;


/// `OpMetadataToString`.
pub fn metadata_str(m: &Msg) -> String {
    let mut parts: Vec<String> = Vec::new();
    for k in ["op_type", "op_name", "source_file"] {
        if !m.str(k).is_empty() {
            parts.push(format!("{k}=\"{}\"", cescape(m.str(k))));
        }
    }
    for k in ["source_line", "source_end_line", "source_column", "source_end_column"] {
        if m.int(k) != 0 {
            parts.push(format!("{k}={}", m.int(k)));
        }
    }
    for k in ["deduplicated_name", "scheduling_name"] {
        if !m.str(k).is_empty() {
            parts.push(format!("{k}=\"{}\"", cescape(m.str(k))));
        }
    }
    if m.int("stack_frame_id") != 0 {
        parts.push(format!("stack_frame_id={}", m.int("stack_frame_id")));
    }
    parts.join(" ")
}

fn window(w: &Msg) -> String {
    let dims: Vec<&Msg> = w.msgs("dimensions").collect();
    let x = |f: &dyn Fn(&Msg) -> String| dims.iter().map(|d| f(d)).collect::<Vec<_>>().join("x");
    let mut out = vec![format!("size={}", x(&|d| d.int("size").to_string()))];
    if dims.iter().any(|d| d.int_or("stride", 1) != 1) {
        out.push(format!("stride={}", x(&|d| d.int_or("stride", 1).to_string())));
    }
    if dims.iter().any(|d| d.int("padding_low") != 0 || d.int("padding_high") != 0) {
        out.push(format!("pad={}", x(&|d| format!("{}_{}", d.int("padding_low"), d.int("padding_high")))));
    }
    if dims.iter().any(|d| d.int_or("base_dilation", 1) != 1) {
        out.push(format!("lhs_dilate={}", x(&|d| d.int_or("base_dilation", 1).to_string())));
    }
    if dims.iter().any(|d| d.int_or("window_dilation", 1) != 1) {
        out.push(format!("rhs_dilate={}", x(&|d| d.int_or("window_dilation", 1).to_string())));
    }
    if dims.iter().any(|d| d.flag("window_reversal")) {
        out.push(format!("rhs_reversal={}", x(&|d| if d.flag("window_reversal") { "1" } else { "0" }.to_string())));
    }
    out.join(" ")
}

fn dim_labels(c: &Msg) -> String {
    fn labels(batch: i64, feature: i64, spatial: &[i64], b: char, f: char) -> String {
        let rank = 2 + spatial.len() as i64;
        let mut out = vec!["?".to_string(); rank as usize];
        if (0..rank).contains(&batch) {
            out[batch as usize] = b.to_string();
        }
        if (0..rank).contains(&feature) {
            out[feature as usize] = f.to_string();
        }
        for (k, &d) in spatial.iter().enumerate() {
            if (0..rank).contains(&d) {
                out[d as usize] = k.to_string();
            }
        }
        out.concat()
    }
    let lhs = labels(c.int("input_batch_dimension"), c.int("input_feature_dimension"), &c.ints("input_spatial_dimensions"), 'b', 'f');
    let rhs = labels(c.int("kernel_input_feature_dimension"), c.int("kernel_output_feature_dimension"), &c.ints("kernel_spatial_dimensions"), 'i', 'o');
    let out = labels(c.int("output_batch_dimension"), c.int("output_feature_dimension"), &c.ints("output_spatial_dimensions"), 'b', 'f');
    format!("{lhs}_{rhs}->{out}")
}

fn default_comparison(et: i64) -> &'static str {
    let name = primitive(et).unwrap_or("");
    if name.starts_with('f') || name.starts_with("bf") || name.starts_with('c') {
        "FLOAT"
    } else if name.starts_with('s') {
        "SIGNED"
    } else {
        "UNSIGNED"
    }
}

fn precision(p: i64) -> String {
    match p {
        0 => "default".into(),
        1 => "high".into(),
        2 => "highest".into(),
        3 => "packed_nibble".into(),
        p => p.to_string(),
    }
}

static EMPTY: std::sync::OnceLock<Msg> = std::sync::OnceLock::new();

fn empty() -> &'static Msg {
    EMPTY.get_or_init(Msg::default)
}

fn extra_attributes(ins: &Msg, comps: &HashMap<i64, &Msg>, operands: &[&Msg]) -> Vec<String> {
    let op = ins.str("opcode");
    let mut out: Vec<String> = Vec::new();
    let dims = ins.ints("dimensions");
    if matches!(op, "broadcast" | "transpose" | "reduce" | "reverse" | "concatenate" | "sort" | "map") {
        out.push(format!("dimensions={}", braces(&dims)));
    }
    if op == "sort" && ins.flag("is_stable") {
        out.push("is_stable=true".into());
    }
    if op == "iota" {
        out.push(format!("iota_dimension={}", dims.first().copied().unwrap_or(0)));
    }
    if op == "get-tuple-element" {
        out.push(format!("index={}", ins.int("tuple_index")));
    }
    if op == "slice" {
        let sl: Vec<&Msg> = ins.msgs("slice_dimensions").collect();
        let strided = sl.iter().any(|s| s.int_or("stride", 1) != 1);
        let parts: Vec<String> = sl
            .iter()
            .map(|s| if strided { format!("[{}:{}:{}]", s.int("start"), s.int("limit"), s.int_or("stride", 1)) } else { format!("[{}:{}]", s.int("start"), s.int("limit")) })
            .collect();
        out.push(format!("slice={{{}}}", parts.join(", ")));
    }
    if op == "pad" {
        let pc = ins.msg("padding_config").unwrap_or(empty());
        let parts: Vec<String> = pc
            .msgs("dimensions")
            .map(|d| {
                let mut s = format!("{}_{}", d.int("edge_padding_low"), d.int("edge_padding_high"));
                if d.int("interior_padding") != 0 {
                    let _ = write!(s, "_{}", d.int("interior_padding"));
                }
                s
            })
            .collect();
        out.push(format!("padding={}", parts.join("x")));
    }
    if op == "dynamic-slice" {
        out.push(format!("dynamic_slice_sizes={}", braces(&ins.ints("dynamic_slice_sizes"))));
    }
    if op == "compare" {
        out.push(format!("direction={}", ins.str("comparison_direction")));
        let ct = ins.str("comparison_type");
        let et = operands.first().and_then(|o| o.msg("shape")).map_or(0, |s| s.int("element_type"));
        // Comparison::ToString: the order when it is not the element type's default
        // (XLA since jax 0.11 writes the order (field 102) and prints `order=TOTAL`; before,
        // the type TOTALORDER was printed `type=TOTALORDER`)
        let order = ins.str("comparison_order");
        if default_comparison(et) == "FLOAT" {
            if order == "TOTAL" {
                out.push("order=TOTAL".into());
            } else if order.is_empty() && ct == "TOTALORDER" {
                out.push("type=TOTALORDER".into());
            }
        }
    }
    if op == "dot" {
        let d = ins.msg("dot_dimension_numbers").unwrap_or(empty());
        for (key, label) in [
            ("lhs_batch_dimensions", "lhs_batch_dims"),
            ("lhs_contracting_dimensions", "lhs_contracting_dims"),
            ("rhs_batch_dimensions", "rhs_batch_dims"),
            ("rhs_contracting_dimensions", "rhs_contracting_dims"),
        ] {
            let v = d.ints(key);
            if !v.is_empty() {
                out.push(format!("{label}={}", braces(&v)));
            }
        }
    }
    if op == "convolution" {
        if let Some(w) = ins.msg("window") {
            out.push(format!("window={{{}}}", window(w)));
        }
        out.push(format!("dim_labels={}", dim_labels(ins.msg("convolution_dimension_numbers").unwrap_or(empty()))));
        for k in ["feature_group_count", "batch_group_count"] {
            let v = ins.int_or(k, 1);
            if v != 0 && v != 1 {
                out.push(format!("{k}={v}"));
            }
        }
    }
    if op == "dot" || op == "convolution" {
        let prec = ins.msg("precision_config").map(|p| p.ints("operand_precision")).unwrap_or_default();
        if prec.iter().any(|&p| p != 0) {
            out.push(format!("operand_precision={{{}}}", prec.iter().map(|&p| precision(p)).collect::<Vec<_>>().join(",")));
        }
    }
    if op == "reduce-window" || op == "select-and-scatter" {
        out.push(format!("window={{{}}}", window(ins.msg("window").unwrap_or(empty()))));
    }
    if op == "gather" {
        let g = ins.msg("gather_dimension_numbers").unwrap_or(empty());
        out.push(format!("offset_dims={}", braces(&g.ints("offset_dims"))));
        out.push(format!("collapsed_slice_dims={}", braces(&g.ints("collapsed_slice_dims"))));
        out.push(format!("start_index_map={}", braces(&g.ints("start_index_map"))));
        for k in ["operand_batching_dims", "start_indices_batching_dims"] {
            if !g.ints(k).is_empty() {
                out.push(format!("{k}={}", braces(&g.ints(k))));
            }
        }
        out.push(format!("index_vector_dim={}", g.int("index_vector_dim")));
        out.push(format!("slice_sizes={}", braces(&ins.ints("gather_slice_sizes"))));
        sorted_unique(ins, &mut out);
    }
    if op == "scatter" {
        let s = ins.msg("scatter_dimension_numbers").unwrap_or(empty());
        for k in ["update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims"] {
            out.push(format!("{k}={}", braces(&s.ints(k))));
        }
        for k in ["input_batching_dims", "scatter_indices_batching_dims"] {
            if !s.ints(k).is_empty() {
                out.push(format!("{k}={}", braces(&s.ints(k))));
            }
        }
        out.push(format!("index_vector_dim={}", s.int("index_vector_dim")));
        sorted_unique(ins, &mut out);
    }
    if op == "topk" {
        out.push(format!("k={}", ins.int("k")));
        out.push(format!("largest={}", ins.flag("largest")));
        if ins.flag("is_stable") {
            out.push("is_stable=true".into());
        }
    }
    if op == "rng-bit-generator" {
        let a = ins.int("rng_algorithm");
        out.push(format!("algorithm={}", match a { 0 => "rng_default".into(), 1 => "rng_three_fry".into(), 2 => "rng_philox".into(), a => a.to_string() }));
    }
    if op == "reduce-precision" {
        out.push(format!("exponent_bits={}", ins.int("exponent_bits")));
        out.push(format!("mantissa_bits={}", ins.int("mantissa_bits")));
    }
    if op == "fft" {
        let t = ins.int("fft_type");
        out.push(format!("fft_type={}", match t { 0 => "FFT".into(), 1 => "IFFT".into(), 2 => "RFFT".into(), 3 => "IRFFT".into(), t => t.to_string() }));
        out.push(format!("fft_length={}", braces(&ins.ints("fft_length"))));
    }
    if op == "fusion" {
        out.push(format!("kind={}", ins.str("fusion_kind")));
        aliasing(ins, &mut out);
    }
    if op == "custom-call" {
        out.push(format!("custom_call_target=\"{}\"", cescape(ins.str("custom_call_target"))));
        if ins.flag("constrain_layout") {
            let shapes: Vec<String> = ins.msgs("operand_shapes_with_layout").map(|x| shape_str(x, true)).collect();
            out.push(format!("operand_layout_constraints={{{}}}", shapes.join(", ")));
        }
        if ins.flag("custom_call_has_side_effect") {
            out.push("custom_call_has_side_effect=true".into());
        }
        aliasing(ins, &mut out);
        match ins.int("custom_call_schedule") {
            0 => {}
            1 => out.push("schedule=SCHEDULE_LATEST".into()),
            2 => out.push("schedule=SCHEDULE_EARLIEST".into()),
            v => out.push(format!("schedule={v}")),
        }
        match ins.int("custom_call_api_version") {
            0 | 1 => {}
            2 => out.push("api_version=API_VERSION_STATUS_RETURNING".into()),
            3 => out.push("api_version=API_VERSION_STATUS_RETURNING_UNIFIED".into()),
            4 => out.push("api_version=API_VERSION_TYPED_FFI".into()),
            v => out.push(format!("api_version={v}")),
        }
    }
    // called computations (HloInstruction::PrintExtraAttributes, names only)
    let called: Vec<String> = ins.ints("called_computation_ids").iter().map(|c| comps.get(c).map_or_else(|| format!("computation.{c}"), |m| m.str("name").to_string())).collect();
    if !called.is_empty() {
        let list = || format!("{{{}}}", called.iter().map(|c| format!("%{c}")).collect::<Vec<_>>().join(", "));
        match op {
            // HloWhileInstruction calls {body, condition}
            "while" if called.len() == 2 => {
                out.push(format!("condition=%{}", called[1]));
                out.push(format!("body=%{}", called[0]));
            }
            "select-and-scatter" => {
                out.push(format!("select=%{}", called[0]));
                if called.len() > 1 {
                    out.push(format!("scatter=%{}", called[1]));
                }
            }
            "conditional" => {
                let pred = operands.first().and_then(|o| o.msg("shape")).map_or(0, |s| s.int("element_type"));
                if pred == 1 && called.len() == 2 {
                    out.push(format!("true_computation=%{}", called[0]));
                    out.push(format!("false_computation=%{}", called[1]));
                } else {
                    out.push(format!("branch_computations={}", list()));
                }
            }
            "call" | "map" | "reduce-window" | "reduce" | "all-reduce" | "all-reduce-start" | "scatter" | "sort" | "topk" | "reduce-scatter" => {
                out.push(format!("to_apply=%{}", called[0]));
            }
            "custom-call" => out.push(format!("called_computations={}", list())),
            _ if called.len() == 1 => out.push(format!("calls=%{}", called[0])),
            _ => out.push(format!("calls={}", list())),
        }
    }
    match ins.msg("result_accuracy").map_or(0, |r| r.int("mode")) {
        0 => {}
        1 => out.push("result_accuracy={mode=highest}".into()),
        m => out.push(format!("result_accuracy={{mode={m}}}")),
    }
    out
}

/// `output_to_operand_aliasing={{0}: (0, {})}`.
fn aliasing(ins: &Msg, out: &mut Vec<String>) {
    let items: Vec<String> = ins
        .msgs("output_operand_aliasing")
        .map(|a| format!("{}: ({}, {})", braces(&a.ints("output_shape_index")), a.int("operand_index"), braces(&a.ints("operand_shape_index"))))
        .collect();
    if !items.is_empty() {
        out.push(format!("output_to_operand_aliasing={{{}}}", items.join(", ")));
    }
}

fn sorted_unique(ins: &Msg, out: &mut Vec<String>) {
    if ins.flag("indices_are_sorted") {
        out.push("indices_are_sorted=true".into());
    }
    if ins.flag("unique_indices") {
        out.push("unique_indices=true".into());
    }
}

// ---- the module ------------------------------------------------------------------------------

fn schedule_of(m: &Msg) -> HashMap<i64, Vec<i64>> {
    m.msg("schedule")
        .map(|s| s.msgs("sequences").map(|e| (e.int("key"), e.msg("value").map(|v| v.ints("instruction_ids")).unwrap_or_default())).collect())
        .unwrap_or_default()
}

/// The most text a proto of `n` bytes may print: XLA's text is about as long as its proto (the
/// samples: 0.9–1.3×); a proto can ask for far more (one long name used by a million operands),
/// and that is refused (`TooLong`) before it is built.
pub fn text_budget(n: usize) -> usize {
    n.saturating_mul(16).saturating_add(1 << 20)
}

/// The printed module would exceed `text_budget` of its proto's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong(pub usize);

/// Text pieces joined by `sep`, failing once the running length passes `budget`.
fn join_within(parts: impl Iterator<Item = String>, sep: &str, budget: usize) -> Result<String, TooLong> {
    let mut s = String::new();
    for (k, p) in parts.enumerate() {
        if k > 0 {
            s.push_str(sep);
        }
        s.push_str(&p);
        if s.len() > budget {
            return Err(TooLong(budget));
        }
    }
    Ok(s)
}

/// The module as XLA's text dump prints it, in at most `budget` bytes.
pub fn render_module(m: &Msg, budget: usize) -> Result<String, TooLong> {
    let comps: HashMap<i64, &Msg> = m.msgs("computations").map(|c| (c.int("id"), c)).collect();
    let schedule = schedule_of(m);
    let mut out: Vec<String> = Vec::new();
    let mut header = format!("HloModule {}", m.str("name"));
    if !schedule.is_empty() {
        header.push_str(", is_scheduled=true");
    }
    if let Some(io) = m.msg("input_output_alias") {
        let entries: Vec<String> = io
            .msgs("entries")
            .map(|a| {
                let kind = match a.int("kind") {
                    2 => "must-alias",
                    _ => "may-alias",
                };
                format!("{{{}}}: ({}, {{{}}}, {kind})", join_ints(&a.ints("output_shape_index"), ","), a.int("parameter_number"), join_ints(&a.ints("parameter_shape_index"), ","))
            })
            .collect();
        if !entries.is_empty() {
            let _ = write!(header, ", input_output_alias={{ {} }}", entries.join(", "));
        }
    }
    if let Some(hps) = m.msg("host_program_shape") {
        let params: Vec<String> = hps.msgs("parameters").enumerate().map(|(k, p)| format!("{}{}", index_comment(k), shape_str(p, true))).collect();
        let _ = write!(header, ", entry_computation_layout={{({})->{}}}", params.join(", "), shape_str(hps.msg("result").unwrap_or(empty()), true));
    }
    out.push(header);
    out.push(String::new());
    if let Some(sfi) = m.msg("stack_frame_index") {
        if !sfi.list("file_names").is_empty() || !sfi.list("stack_frames").is_empty() {
            out.push("FileNames".into());
            for (k, f) in sfi.list("file_names").iter().enumerate() {
                if let Value::Str(f) = f {
                    out.push(format!("{} \"{}\"", k + 1, cescape(f)));
                }
            }
            out.push(String::new());
            out.push("FunctionNames".into());
            for (k, f) in sfi.list("function_names").iter().enumerate() {
                if let Value::Str(f) = f {
                    out.push(format!("{} \"{}\"", k + 1, cescape(f)));
                }
            }
            out.push(String::new());
            out.push("FileLocations".into());
            for (k, l) in sfi.msgs("file_locations").enumerate() {
                out.push(format!(
                    "{} {{file_name_id={} function_name_id={} line={} end_line={} column={} end_column={}}}",
                    k + 1,
                    l.int("file_name_id"),
                    l.int("function_name_id"),
                    l.int("line"),
                    l.int("end_line"),
                    l.int("column"),
                    l.int("end_column")
                ));
            }
            out.push(String::new());
            out.push("StackFrames".into());
            for (k, fr) in sfi.msgs("stack_frames").enumerate() {
                // XLA prints the parent's id plus one; printed as XLA prints it
                out.push(format!("{} {{file_location_id={} parent_frame_id={}}}", k + 1, fr.int("file_location_id"), i128::from(fr.int("parent_frame_id")) + 1));
            }
            out.push(String::new());
            out.push(String::new());
        }
    }
    let entry = m.int("entry_computation_id");
    let mut used: usize = out.iter().map(|l| l.len() + 1).sum();
    if used > budget {
        return Err(TooLong(budget));
    }
    let longest = comps.values().map(|c| c.str("name").len() + 3).max().unwrap_or(0);
    let new_style = prints_tuple_refs(m);
    for c in post_order(m, &schedule) {
        let text = computation(c, &comps, schedule.get(&c.int("id")), c.int("id") == entry, budget - used, longest, new_style)?;
        used += text.len() + 2;
        if used > budget {
            return Err(TooLong(budget));
        }
        out.push(text);
        out.push(String::new());
    }
    let mut s = out.join("\n");
    s.push('\n');
    Ok(s)
}

/// Whether the XLA that wrote `m` prints non-root get-tuple-elements as `%tuple#index` in their
/// users (jax 0.11 and later) or as lines of their own (before): the comparison order (field
/// 102, written on every compare since jax 0.11) tells; any other module is taken as old (see
/// the reference's `_prints_tuple_refs`).
fn prints_tuple_refs(m: &Msg) -> bool {
    m.msgs("computations").flat_map(|c| c.msgs("instructions")).any(|i| i.str("opcode") == "compare" && !i.str("comparison_order").is_empty())
}

/// `HloModule::MakeComputationPostOrder` (see the reference's `_post_order`).
fn post_order<'m>(m: &'m Msg, schedule: &HashMap<i64, Vec<i64>>) -> Vec<&'m Msg> {
    let comps: Vec<&Msg> = m.msgs("computations").collect();
    let by_id: HashMap<i64, &Msg> = comps.iter().map(|c| (c.int("id"), *c)).collect();
    let called: HashSet<i64> = comps.iter().flat_map(|c| c.msgs("instructions").flat_map(|i| i.ints("called_computation_ids"))).collect();
    let walk = |c: &Msg| -> Vec<i64> {
        let ins: Vec<&Msg> = c.msgs("instructions").collect();
        let ins: Vec<&Msg> = match schedule.get(&c.int("id")) {
            Some(seq) if !seq.is_empty() => {
                let by: HashMap<i64, &Msg> = ins.iter().map(|i| (i.int("id"), *i)).collect();
                seq.iter().filter_map(|i| by.get(i).copied()).collect()
            }
            _ if c.flag("is_fusion_computation") => ins.into_iter().rev().collect(),
            _ => ins,
        };
        ins.iter().flat_map(|i| i.ints("called_computation_ids")).collect()
    };
    let mut added: HashSet<i64> = HashSet::new();
    let mut order: Vec<&Msg> = Vec::new();
    for c in &comps {
        let cid = c.int("id");
        if called.contains(&cid) {
            continue;
        }
        // MakeEmbeddedComputationsList, with an explicit stack (no recursion on the input)
        let mut visited: HashSet<i64> = HashSet::new();
        let mut post: Vec<i64> = Vec::new();
        let mut stack: Vec<(i64, Vec<i64>, usize)> = Vec::new();
        let roots = walk(c);
        for r in roots {
            // a computation already in the order has its callees there too: nothing to add
            if !by_id.contains_key(&r) || added.contains(&r) || !visited.insert(r) {
                continue;
            }
            stack.push((r, walk(by_id[&r]), 0));
            while let Some(top) = stack.last_mut() {
                if top.2 < top.1.len() {
                    let cc = top.1[top.2];
                    top.2 += 1;
                    if by_id.contains_key(&cc) && !added.contains(&cc) && visited.insert(cc) {
                        let w = walk(by_id[&cc]);
                        stack.push((cc, w, 0));
                    }
                } else {
                    post.push(top.0);
                    stack.pop();
                }
            }
        }
        for e in post {
            if added.insert(e) {
                order.push(by_id[&e]);
            }
        }
        if added.insert(cid) {
            order.push(c);
        }
    }
    order
}

fn computation(c: &Msg, comps: &HashMap<i64, &Msg>, sequence: Option<&Vec<i64>>, is_entry: bool, budget: usize, longest: usize, new_style: bool) -> Result<String, TooLong> {
    let instrs: Vec<&Msg> = c.msgs("instructions").collect();
    let by_id: HashMap<i64, &Msg> = instrs.iter().map(|i| (i.int("id"), *i)).collect();
    let root = c.int("root_id");
    let mut params: Vec<&Msg> = instrs.iter().filter(|i| i.str("opcode") == "parameter").copied().collect();
    params.sort_by_key(|p| p.int("parameter_number"));
    let sig = join_within(params.iter().map(|p| format!("{}: {}", p.str("name"), shape_str(p.msg("shape").unwrap_or(empty()), false))), ", ", budget)?;
    let result = c
        .msg("program_shape")
        .and_then(|ps| ps.msg("result"))
        .or_else(|| by_id.get(&root).and_then(|r| r.msg("shape")))
        .unwrap_or(empty());
    let mut head = format!("{}%{} ({sig}) -> {}", if is_entry { "ENTRY " } else { "" }, c.str("name"), shape_str(result, false));
    let thread = c.str("execution_thread");
    if !thread.is_empty() && thread != "main" {
        let _ = write!(head, ", execution_thread=\"{thread}\"");
    }
    let mut lines = vec![format!("{head} {{")];
    let order: Vec<&Msg> = match sequence {
        Some(seq) if !seq.is_empty() => seq.iter().filter_map(|i| by_id.get(i).copied()).collect(),
        _ => instrs.clone(),
    };
    // get-tuple-element instructions other than the root are printed as `%operand#index`
    let elided: HashSet<i64> = instrs.iter().filter(|i| new_style && i.str("opcode") == "get-tuple-element" && i.int("id") != root).map(|i| i.int("id")).collect();
    let reference = |oid: i64| -> String {
        let mut suffix = String::new();
        let mut id = oid;
        // a chain of elided get-tuple-elements (bounded by the instructions: each step moves to
        // an operand listed before it, but a damaged proto may loop)
        for _ in 0..=instrs.len() {
            let Some(i) = by_id.get(&id) else { return format!("%<unknown {id}>{suffix}") };
            if !elided.contains(&id) {
                return format!("%{}{suffix}", i.str("name"));
            }
            suffix = format!("#{}{suffix}", i.int("tuple_index"));
            id = i.ints("operand_ids").first().copied().unwrap_or(0);
        }
        format!("%<cycle {oid}>")
    };
    let mut used = lines[0].len();
    for ins in order {
        if elided.contains(&ins.int("id")) {
            continue;
        }
        let line = format!("  {}", instruction_str(ins, &by_id, comps, &reference, ins.int("id") == root, budget.saturating_sub(used), longest)?);
        used += line.len() + 1;
        if used > budget {
            return Err(TooLong(budget));
        }
        lines.push(line);
    }
    lines.push("}".into());
    Ok(lines.join("\n"))
}

fn instruction_str(ins: &Msg, by_id: &HashMap<i64, &Msg>, comps: &HashMap<i64, &Msg>, reference: &dyn Fn(i64) -> String, is_root: bool, budget: usize, longest: usize) -> Result<String, TooLong> {
    let op = ins.str("opcode");
    let shape = ins.msg("shape").unwrap_or(empty());
    let operand_ids = ins.ints("operand_ids");
    let args = match op {
        "constant" => literal_str(ins.msg("literal").unwrap_or(empty()), shape),
        "parameter" => ins.int("parameter_number").to_string(),
        _ => join_within(operand_ids.iter().enumerate().map(|(k, &o)| format!("{}{}", index_comment(k), reference(o))), ", ", budget)?,
    };
    let mut text = format!("{}%{} = {} {op}({args})", if is_root { "ROOT " } else { "" }, ins.str("name"), shape_str(shape, true));
    let operands: Vec<&Msg> = operand_ids.iter().map(|o| by_id.get(o).copied().unwrap_or(empty())).collect();
    // `longest`: the longest computation name of the module + 3 (what one called computation
    // can print), computed once
    if ins.list("called_computation_ids").len().saturating_mul(longest) > budget {
        return Err(TooLong(budget));
    }
    let mut attrs = extra_attributes(ins, comps, &operands);
    let ctrl = ins.ints("control_predecessor_ids");
    if !ctrl.is_empty() {
        let names = join_within(ctrl.iter().map(|c| format!("%{}", by_id.get(c).map_or("", |i| i.str("name")))), ", ", budget)?;
        attrs.push(format!("control-predecessors={{{names}}}"));
    }
    if let Some(fa) = ins.msg("frontend_attributes") {
        let mut entries: Vec<&Msg> = fa.msgs("map").collect();
        if !entries.is_empty() {
            entries.sort_by(|a, b| a.str("key").cmp(b.str("key")));
            let items: Vec<String> = entries.iter().map(|e| format!("{}=\"{}\"", e.str("key"), cescape(e.str("value")))).collect();
            attrs.push(format!("frontend_attributes={{{}}}", items.join(",")));
        }
    }
    if let Some(md) = ins.msg("metadata") {
        let md = metadata_str(md);
        if !md.is_empty() {
            attrs.push(format!("metadata={{{md}}}"));
        }
    }
    let bc = ins.bytes("backend_config");
    if !bc.is_empty() {
        attrs.push(format!("backend_config={}", backend_config_str(bc)));
    }
    if !attrs.is_empty() {
        text.push_str(", ");
        text.push_str(&attrs.join(", "));
    }
    Ok(text)
}

/// XLA's `LexesAsJsonDict`, for a line-based reader: `{` … its matching `}` at the very end
/// (braces inside JSON strings not counted), UTF-8, and no control byte (a newline would end
/// the line the text is read by).
fn is_one_json_dict(b: &[u8]) -> bool {
    if b.first() != Some(&b'{') || b.iter().any(|&c| c < 0x20) || std::str::from_utf8(b).is_err() {
        return false;
    }
    let (mut depth, mut k, mut in_string) = (0usize, 0usize, false);
    while k < b.len() {
        match (in_string, b[k]) {
            (true, b'\\') => k += 1, // the next byte is escaped
            (true, b'"') => in_string = false,
            (false, b'"') => in_string = true,
            (false, b'{') => depth += 1,
            (false, b'}') => {
                depth -= 1;
                if depth == 0 {
                    return k == b.len() - 1;
                }
            }
            _ => {}
        }
        k += 1;
    }
    false
}

/// `backend_config` as XLA prints it: a JSON dict as it is, anything else quoted and CEscape'd
/// (a string is a value, never syntax: a newline or `}, metadata=…` in it stays in it).
pub fn backend_config_str(b: &[u8]) -> String {
    if is_one_json_dict(b) {
        return String::from_utf8(b.to_vec()).unwrap_or_default(); // UTF-8: checked
    }
    format!("\"{}\"", cescape_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::values::fp;

    #[test]
    fn backend_config_is_a_value_never_syntax() {
        assert_eq!(backend_config_str(br#"{"a":"}","b":[1,{"c":2}]}"#), r#"{"a":"}","b":[1,{"c":2}]}"#);
        assert_eq!(backend_config_str(b"{\"a\":1}\n%x = f32[] add()"), r#""{\"a\":1}\n%x = f32[] add()""#);
        assert_eq!(backend_config_str(b"{} {}"), r#""{} {}""#);
        assert_eq!(backend_config_str(b"opaque\xff"), r#""opaque\377""#);
    }

    #[test]
    fn printf_g() {
        assert_eq!(fmt_g(0.0625, 6), "0.0625");
        assert_eq!(fmt_g(1.0, 6), "1");
        assert_eq!(fmt_g(-0.03125, 6), "-0.03125");
        assert_eq!(fmt_g(0.1, 6), "0.1");
        assert_eq!(fmt_g(1e-5, 6), "1e-05");
        assert_eq!(fmt_g(123456789.0, 6), "1.23457e+08");
        assert_eq!(fmt_g(2147483647.0, 9), "2.14748365e+09");
        assert_eq!(fp(f64::from(0.1f32), 6, 9, true), "0.1");
        assert_eq!(fp(f64::from(1.0f32 / 3.0), 6, 9, true), "0.333333343");
    }
}
