//! Attribute lists: the generic `KEY=VALUE, …` splitter of FORMATS.md §3.8.1 and the
//! space-separated `metadata={…}` items of §3.9.

use super::scan::*;

/// One `KEY=VALUE` item: byte ranges into the text that was split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    pub key: (usize, usize),
    pub value: (usize, usize),
}

/// Split `text[from..]` into `out` (cleared first; ranges are positions in `text`). A value
/// ends right before a ", " at depth 0 (outside strings and comments) that is followed by
/// `KEY=`, or at the end of the text — so `calls=%a, %b` keeps `%a, %b` as one value.
/// `ScanError::Irregular` for what only the general grammar reads (`irregular_comma`, a `//`
/// comment, an empty value or one that starts with a blank).
pub fn split_attributes<W: Walk>(t: &W, from: usize, out: &mut Vec<Attr>) -> ScanResult<()> {
    out.clear();
    let text: &[u8] = t;
    let n = text.len();
    if from >= n {
        return Ok(());
    }
    let mut pos = from;
    // the '=' of the next key, when the comma that ended the value before has found it
    let mut next_eq = None;
    loop {
        let eq = match next_eq.take() {
            Some(eq) => eq,
            None => key_eq_at(text, pos).ok_or(ScanError::ExpectedKey(pos - from))?,
        };
        let vstart = eq + 1;
        if matches!(text.get(vstart), None | Some(b' ' | b'\t' | b',')) {
            return Err(ScanError::Irregular);
        }
        let mut i = vstart;
        let mut depth: i64 = 0;
        let mut end = n;
        while let Some(s) = step(t, &mut i) {
            let (p, what) = s?;
            match what {
                Step::Open => depth += 1,
                Step::Close => depth -= 1,
                Step::Other if text[p] == b'/' && text[p + 1..].starts_with(b"/") => return Err(ScanError::Irregular),
                Step::Comma if depth == 0 => {
                    if p > 0 && matches!(text[p - 1], b' ' | b'\t') {
                        return Err(ScanError::Irregular);
                    }
                    if text[p + 1..].starts_with(b" ") {
                        if let Some(eq) = key_eq_at(text, p + 2) {
                            (end, next_eq) = (p, Some(eq));
                            break;
                        }
                    }
                    if irregular_comma(text, p) {
                        return Err(ScanError::Irregular);
                    }
                }
                _ => {}
            }
        }
        if depth != 0 {
            return Err(ScanError::UnbalancedAttribute);
        }
        out.push(Attr { key: (pos, eq), value: (vstart, end) });
        if end >= n {
            return Ok(());
        }
        pos = end + 2;
    }
}

/// `split_attributes` of a text that no caller indexed.
pub fn split_attributes_in(text: &[u8], from: usize, out: &mut Vec<Attr>) -> ScanResult<()> {
    split_attributes(&plain(text), from, out)
}

/// The value of attribute `key` in an instruction's attribute text (`index=2, window={size=3}` →
/// `2`, `size=3`: one pair of enclosing braces taken off), by the splitter the parser uses (so a
/// `", "` inside a string, a comment or brackets never ends a value). `Ok(None)`: no such key;
/// `Err`: text only the general grammar reads (the caller falls back).
pub fn attribute_value<'a>(text: &'a [u8], key: &[u8]) -> ScanResult<Option<&'a [u8]>> {
    let mut items = Vec::new();
    split_attributes_in(text, 0, &mut items)?;
    Ok(items.iter().find(|a| &text[a.key.0..a.key.1] == key).map(|a| {
        let v = &text[a.value.0..a.value.1];
        match (v.first(), v.last()) {
            (Some(b'{'), Some(b'}')) if v.len() >= 2 => &v[1..v.len() - 1],
            _ => v,
        }
    }))
}

/// A depth-0 ',' at `i` that is not the printer's ", KEY=" but that the general grammar takes
/// as an attribute separator: blanks before it, or other blanks than one space before `KEY=`.
#[cold]
pub fn irregular_comma(text: &[u8], i: usize) -> bool {
    if i > 0 && matches!(text[i - 1], b' ' | b'\t') {
        return true;
    }
    let mut k = i + 1;
    while k < text.len() && matches!(text[k], b' ' | b'\t') {
        k += 1;
    }
    key_eq_at(text, k).is_some()
}

/// The first value printed for `key`.
#[inline]
pub fn get<'a>(text: &'a [u8], attrs: &[Attr], key: &[u8]) -> Option<&'a [u8]> {
    attrs.iter().find(|a| &text[a.key.0..a.key.1] == key).map(|a| &text[a.value.0..a.value.1])
}

/// The metadata items the tables use (raw values, first occurrence of each key).
#[derive(Default, Debug, Clone)]
pub struct Metadata<'a> {
    pub op_name: Option<&'a [u8]>,
    pub op_type: Option<&'a [u8]>,
    pub source_file: Option<&'a [u8]>,
    pub source_line: Option<&'a [u8]>,
    pub stack_frame_id: Option<&'a [u8]>,
    /// For op_name, op_type, source_file: the value is one quoted string without a backslash
    /// (so its unescaped text is the text between the quotes).
    pub plain: [bool; 3],
    /// Items whose key XLA's parser does not allow (`rules::known_metadata_key`): (key start,
    /// key end, value end) in the value given to `parse_metadata` (each gives a `notes` row).
    pub unknown: Vec<(usize, usize, usize)>,
}

/// `{op_name="…" source_line=3 …}` (§3.9). Every item is checked even if unused, because a bad
/// item makes the whole instruction unreadable in the reference.
pub fn parse_metadata(value: &[u8]) -> ScanResult<Metadata<'_>> {
    metadata_items(value, &plain(value))
}

/// `parse_metadata` of `value`, indexed as `t`.
fn metadata_items<'a, W: Walk>(value: &'a [u8], t: &W) -> ScanResult<Metadata<'a>> {
    let mut md = Metadata::default();
    let (mut a, mut b) = py_strip(value);
    if b - a >= 2 && value[a] == b'{' && value[b - 1] == b'}' {
        a += 1;
        b -= 1;
    }
    let (v, vt) = (&value[a..b], t.sub(a, b));
    let n = v.len();
    let mut pos = 0;
    while pos < n {
        let k = skip_ws(v, pos);
        let Some(eq) = key_eq_at(v, k) else {
            if skip_ws(v, pos) == n {
                break;
            }
            return Err(ScanError::BadMetadata);
        };
        let key = &v[k..eq];
        let i = eq + 1;
        let mut plain = false;
        let j = if i < n && v[i] == b'"' {
            let (j, escaped) = skip_string_esc(&vt, i)?;
            plain = !escaped;
            j
        } else if i < n && is_open(v[i]) {
            match_close(&vt, i)?
        } else {
            v[i..].iter().position(|&b| b == b' ').map_or(n, |p| p + i)
        };
        let val = Some(&v[i..j]);
        let (slot, k) = match key {
            b"op_name" => (&mut md.op_name, 0),
            b"op_type" => (&mut md.op_type, 1),
            b"source_file" => (&mut md.source_file, 2),
            b"source_line" => (&mut md.source_line, 3),
            b"stack_frame_id" => (&mut md.stack_frame_id, 4),
            _ => {
                if !super::rules::known_metadata_key(key) {
                    md.unknown.push((a + k, a + eq, a + j));
                }
                pos = j;
                continue;
            }
        };
        if slot.is_none() {
            *slot = val;
            if k < 3 {
                md.plain[k] = plain;
            }
        }
        pos = j;
    }
    Ok(md)
}

/// Every instruction attribute key XLA's HLO text printer and parser use (`hlo_parser.cc`
/// @ 02f6793e `ParseInstructionRhs`/`CreateInstruction`, the keys newer jaxlib 0.12 prints:
/// `order`, `convolution_kind`, `debug_attributes` …; older ones: `async_group_id`,
/// `custom_call_schedule`; and `device_ids`, which is not a key but the tail of a
/// `replica_groups=mesh[…], device_ids=(…) {…}` value that the generic rule splits at its
/// comma). Another key is a newer XLA's: its instruction keeps its row and the key gives a
/// `notes` row. Mirrored by `reference/hlo/attributes.py` `KNOWN_ATTRIBUTES`.
pub fn known_attribute(key: &[u8]) -> bool {
    matches!(
        key,
        b"algorithm"
            | b"api_version"
            | b"async_execution_thread"
            | b"async_group_id"
            | b"async_wrapped_opcode"
            | b"backend_config"
            | b"batch_group_count"
            | b"block_scaling_config"
            | b"body"
            | b"branch_computations"
            | b"called_computations"
            | b"calls"
            | b"channel_id"
            | b"collapsed_slice_dims"
            | b"condition"
            | b"constrain_layout"
            | b"control-predecessors"
            | b"conv_kind"
            | b"convolution_kind"
            | b"cross_program_prefetch_index"
            | b"custom_call_has_side_effect"
            | b"custom_call_schedule"
            | b"custom_call_target"
            | b"debug_attributes"
            | b"delta"
            | b"device_ids"
            | b"dim_labels"
            | b"dimensions"
            | b"direction"
            | b"distribution"
            | b"domain"
            | b"dynamic_slice_sizes"
            | b"epsilon"
            | b"exponent_bits"
            | b"false_computation"
            | b"feature_group_count"
            | b"feature_index"
            | b"fft_length"
            | b"fft_type"
            | b"frontend_attributes"
            | b"has_dynamic_root"
            | b"index"
            | b"index_vector_dim"
            | b"indices_are_sorted"
            | b"infeed_config"
            | b"inferred_dimension"
            | b"input_batching_dims"
            | b"inserted_window_dims"
            | b"iota_dimension"
            | b"is_associative"
            | b"is_composite"
            | b"is_host_transfer"
            | b"is_reverse"
            | b"is_stable"
            | b"k"
            | b"kind"
            | b"largest"
            | b"left_side"
            | b"lhs_batch_dims"
            | b"lhs_contracting_dims"
            | b"lhs_ragged_dims"
            | b"literal"
            | b"lower"
            | b"mantissa_bits"
            | b"metadata"
            | b"mode"
            | b"num_carries"
            | b"offset_dims"
            | b"operand_batching_dims"
            | b"operand_layout_constraints"
            | b"operand_precision"
            | b"order"
            | b"origin"
            | b"outfeed_config"
            | b"outfeed_shape"
            | b"output_to_operand_aliasing"
            | b"padding"
            | b"padding_type"
            | b"parameter_replication"
            | b"replica_groups"
            | b"result_accuracy"
            | b"rhs_batch_dims"
            | b"rhs_contracting_dims"
            | b"rhs_group_dims"
            | b"scatter"
            | b"scatter_dims_to_operand_dims"
            | b"scatter_indices_batching_dims"
            | b"schedule"
            | b"select"
            | b"sharding"
            | b"shifts"
            | b"shuffle_mode"
            | b"slice"
            | b"slice_sizes"
            | b"source_target_pairs"
            | b"sparsity_config"
            | b"start_index_map"
            | b"start_indices_batching_dims"
            | b"statistics"
            | b"to_apply"
            | b"transpose_a"
            | b"true_computation"
            | b"type"
            | b"unique_indices"
            | b"unit_diagonal"
            | b"update_window_dims"
            | b"use_global_device_ids"
            | b"window"
    )
}

/// Test support (the unit tests here and `fuzz/`): every scan started at `i`, and the
/// attribute list when `shapes` (the parser starts those after a blank only), gives the same
/// result, errors included, walked through `a` and through `b` (a byte loop and an index).
#[doc(hidden)]
pub fn assert_walks_agree<A: Walk, B: Walk>(a: &A, b: &B, i: usize, shapes: bool) {
    assert_scans_agree(a, b, i, shapes);
    if shapes {
        let (mut a1, mut a2) = (vec![], vec![]);
        let r1 = split_attributes(a, i, &mut a1);
        let r2 = split_attributes(b, i, &mut a2);
        assert_eq!((r1, &a1), (r2, &a2), "split_attributes at {i}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attribute lists split alike walked a byte at a time and through the index built at
    /// every classifier level: random instruction-like texts, every start.
    #[test]
    fn walks_agree() {
        use crate::lex::classify::Level;
        let (texts, _) = super::super::scan::tests::random_texts();
        for text in texts {
            let p = plain(&text);
            for level in Level::ALL.into_iter().filter(|l| l.supported()) {
                let mut ix = HloIndex::new(level);
                let t = ix.build(&HLO, &text);
                for i in 0..text.len() {
                    assert_walks_agree(&p, &t, i, true);
                }
            }
        }
    }

    fn split(s: &str) -> Vec<(String, String)> {
        let mut out = vec![];
        split_attributes_in(s.as_bytes(), 0, &mut out).unwrap();
        out.iter().map(|a| (s[a.key.0..a.key.1].to_string(), s[a.value.0..a.value.1].to_string())).collect()
    }

    #[test]
    fn generic_rule() {
        let s = r#"window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, metadata={op_name="a, b=c" source_line=1}, slice={[0:1], [0:8:2]}, backend_config={"x": "}, y=", "z": [1, {"w": 2}]}"#;
        let got = split(s);
        assert_eq!(got.len(), 5);
        assert_eq!(got[1], ("dim_labels".into(), "b01f_01io->b01f".into()));
        assert_eq!(got[4].1, r#"{"x": "}, y=", "z": [1, {"w": 2}]}"#);
        assert_eq!(split("calls=%a, %b, control-predecessors={%x}"), vec![
            ("calls".into(), "%a, %b".into()),
            ("control-predecessors".into(), "{%x}".into())
        ]);
        // what only the general grammar reads (general.rs): empty values, odd blanks, `//`
        for t in ["a=, b=1", "a=1, b=", "a= 1", "a=1 , b=2", "a=1,b=2", "a=1,  b=2", "a=1 // c"] {
            let mut out = vec![];
            assert_eq!(split_attributes_in(t.as_bytes(), 0, &mut out), Err(ScanError::Irregular), "{t}");
        }
        assert_eq!(split("frontend_attributes={a.b=\"x, y=1\",c={d = e}}").len(), 1);
        let mut out = vec![];
        assert_eq!(split_attributes_in(b"a=1, %b", 0, &mut out).map(|_| out.len()), Ok(1));
        assert_eq!(split_attributes_in(b"=1", 0, &mut out), Err(ScanError::ExpectedKey(0)));
        assert_eq!(split_attributes_in(b"a={", 0, &mut out), Err(ScanError::UnbalancedAttribute));
        assert_eq!(split_attributes_in(b"a=\"", 0, &mut out), Err(ScanError::UnterminatedString));
    }

    #[test]
    fn metadata() {
        let md = parse_metadata(br#"{op_type="my op" op_name="a b" source_file="f.py" source_line=7 x={1 2} op_name="second"}"#).unwrap();
        assert_eq!(md.op_name, Some(&br#""a b""#[..]));
        assert_eq!(md.op_type, Some(&br#""my op""#[..]));
        assert_eq!(md.source_line, Some(&b"7"[..]));
        assert!(parse_metadata(b"{op_name=\"x}").is_err());
        assert!(parse_metadata(b"{op_name=\"x\" !}").is_err());
        assert!(parse_metadata(b"{ }").unwrap().op_name.is_none());
    }
}

#[cfg(test)]
mod attribute_value_tests {
    use super::attribute_value;

    #[test]
    fn values_by_key() {
        let t = b"index=2, window={size=3x3 stride=2x2}, calls=%a, %b, custom_call_target=\"a, b=c\"";
        assert_eq!(attribute_value(t, b"index").unwrap(), Some(&b"2"[..]));
        assert_eq!(attribute_value(t, b"window").unwrap(), Some(&b"size=3x3 stride=2x2"[..]));
        assert_eq!(attribute_value(t, b"calls").unwrap(), Some(&b"%a, %b"[..]));
        assert_eq!(attribute_value(t, b"custom_call_target").unwrap(), Some(&b"\"a, b=c\""[..]));
        assert_eq!(attribute_value(t, b"size").unwrap(), None);
        assert_eq!(attribute_value(b"", b"index").unwrap(), None);
    }
}
