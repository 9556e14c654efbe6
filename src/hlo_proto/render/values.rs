//! The values inside an `HloModuleProto`'s text (part of `render`): primitive types, shapes
//! with their layouts, literals (printf `%g` and XLA's float forms), C-escaped strings. The
//! reference is `python/hlodump/reference/hlo_proto_values.py`.

use std::fmt::Write;

use crate::hlo_proto::wire::{Msg, Value};

pub(super) const TUPLE: i64 = 13;
pub(super) const OPAQUE: i64 = 14;
pub(super) const TOKEN: i64 = 17;

/// xla_data.proto `PrimitiveType` → the name XLA prints.
pub fn primitive(t: i64) -> Option<&'static str> {
    Some(match t {
        1 => "pred",
        30 => "s1",
        26 => "s2",
        21 => "s4",
        2 => "s8",
        3 => "s16",
        4 => "s32",
        5 => "s64",
        31 => "u1",
        27 => "u2",
        22 => "u4",
        6 => "u8",
        7 => "u16",
        8 => "u32",
        9 => "u64",
        10 => "f16",
        11 => "f32",
        16 => "bf16",
        12 => "f64",
        19 => "f8e5m2",
        28 => "f8e4m3",
        20 => "f8e4m3fn",
        23 => "f8e4m3b11fnuz",
        29 => "f8e3m4",
        24 => "f8e5m2fnuz",
        25 => "f8e4m3fnuz",
        32 => "f4e2m1fn",
        33 => "f8e8m0fnu",
        15 => "c64",
        18 => "c128",
        13 => "tuple",
        14 => "opaque",
        17 => "token",
        34 => "buffer",
        _ => return None,
    })
}

pub(super) fn join_ints(v: &[i64], sep: &str) -> String {
    let mut s = String::new();
    for (k, x) in v.iter().enumerate() {
        if k > 0 {
            s.push_str(sep);
        }
        let _ = write!(s, "{x}");
    }
    s
}

pub(super) fn braces(v: &[i64]) -> String {
    format!("{{{}}}", join_ints(v, ","))
}

// ---- shapes ----------------------------------------------------------------------------------

pub(super) fn layout(lay: &Msg, rank: usize) -> String {
    let mut parts = String::new();
    let tiles: Vec<&Msg> = lay.msgs("tiles").collect();
    if !tiles.is_empty() {
        parts.push('T');
        for t in tiles {
            let dims: Vec<String> = t.ints("dimensions").iter().map(|&d| if d == i64::MIN { "*".to_string() } else { d.to_string() }).collect();
            let _ = write!(parts, "({})", dims.join(","));
        }
    }
    let tpa = match lay.int_or("tail_padding_alignment_in_elements", 1) {
        0 => 1,
        v => v,
    };
    if tpa != 1 {
        let _ = write!(parts, "L({tpa})");
    }
    if lay.int("index_primitive_type") != 0 {
        let _ = write!(parts, "#({})", primitive(lay.int("index_primitive_type")).unwrap_or("?"));
    }
    if lay.int("pointer_primitive_type") != 0 {
        let _ = write!(parts, "*({})", primitive(lay.int("pointer_primitive_type")).unwrap_or("?"));
    }
    if lay.int("element_size_in_bits") != 0 {
        let _ = write!(parts, "E({})", lay.int("element_size_in_bits"));
    }
    if lay.int("memory_space") != 0 {
        let _ = write!(parts, "S({})", lay.int("memory_space"));
    }
    let scs: Vec<&Msg> = lay.msgs("split_configs").collect();
    if !scs.is_empty() {
        parts.push_str("SC");
        for sc in scs {
            let _ = write!(parts, "({}:{})", sc.int("dimension"), join_ints(&sc.ints("split_indices"), ","));
        }
    }
    if lay.int("dynamic_shape_metadata_prefix_bytes") != 0 {
        let _ = write!(parts, "M({})", lay.int("dynamic_shape_metadata_prefix_bytes"));
    }
    if rank == 0 && parts.is_empty() {
        return String::new();
    }
    let m2m = join_ints(&lay.ints("minor_to_major"), ",");
    if parts.is_empty() {
        format!("{{{m2m}}}")
    } else {
        format!("{{{m2m}:{parts}}}")
    }
}

/// XLA marks every fifth element of a long list (tuple shapes, operands): `/*index=5*/`.
pub(super) fn index_comment(k: usize) -> String {
    if k > 0 && k % 5 == 0 {
        format!("/*index={k}*/")
    } else {
        String::new()
    }
}

/// `ShapeUtil::HumanStringWithLayout` (`HumanString` without `with_layout`).
pub fn shape_str(s: &Msg, with_layout: bool) -> String {
    let et = s.int("element_type");
    if et == TUPLE {
        let parts: Vec<String> = s.msgs("tuple_shapes").enumerate().map(|(k, t)| format!("{}{}", index_comment(k), shape_str(t, with_layout))).collect();
        return format!("({})", parts.join(", "));
    }
    let name = primitive(et).unwrap_or("invalid");
    if et == OPAQUE || et == TOKEN {
        return format!("{name}[]");
    }
    let dims = s.ints("dimensions");
    let dyn_ = s.bools("is_dynamic_dimension");
    let mut text = format!("{name}[");
    for (k, d) in dims.iter().enumerate() {
        if k > 0 {
            text.push(',');
        }
        if dyn_.get(k).copied().unwrap_or(false) {
            text.push_str("<=");
        }
        let _ = write!(text, "{d}");
    }
    text.push(']');
    if with_layout {
        if let Some(l) = s.msg("layout") {
            text.push_str(&layout(l, dims.len()));
        }
    }
    text
}

// ---- literals --------------------------------------------------------------------------------

/// C's `%.{p}g` of a double.
pub fn fmt_g(v: f64, p: usize) -> String {
    let p = p.max(1);
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{:.*e}", p - 1, v);
    let (mant, exp) = sci.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    if exp < -4 || exp >= p as i32 {
        let mant = strip_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

pub(super) fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `RoundTripFpToString`: `%.{digits}g`, or `%.{maxdigits}g` when that does not round-trip.
pub(super) fn fp(v: f64, digits: usize, maxdigits: usize, single: bool) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    // XLA prints with denormals flushed to zero (its threads run with FTZ/DAZ set)
    let v = if v.abs() < if single { 1.1754943508222875e-38 } else { 2.2250738585072014e-308 } { 0.0f64.copysign(v) } else { v };
    let s = fmt_g(v, digits);
    let back: f64 = s.parse().unwrap_or(f64::NAN);
    let same = if single { (back as f32) as f64 == v } else { back == v };
    if same {
        s
    } else {
        fmt_g(v, maxdigits)
    }
}

pub(super) fn literal_values(lit: &Msg, et: i64) -> Option<Vec<String>> {
    let floats = |name: &str| -> Vec<f64> {
        lit.list(name)
            .iter()
            .map(|v| match v {
                Value::F32(x) => f64::from(*x),
                Value::F64(x) => *x,
                _ => 0.0,
            })
            .collect()
    };
    Some(match et {
        1 => lit.bools("preds").iter().map(|&b| if b { "true" } else { "false" }.to_string()).collect(),
        11 => floats("f32s").into_iter().map(|v| fp(v, 6, 9, true)).collect(),
        12 => floats("f64s").into_iter().map(|v| fp(v, 15, 17, false)).collect(),
        10 | 16 => {
            let raw = lit.bytes(if et == 16 { "bf16s" } else { "f16s" });
            raw.chunks_exact(2)
                .map(|c| {
                    let h = u16::from_le_bytes([c[0], c[1]]);
                    let v = if et == 16 { f64::from(f32::from_bits(u32::from(h) << 16)) } else { f16_to_f64(h) };
                    fp(v, if et == 10 { 3 } else { 2 }, if et == 10 { 5 } else { 4 }, true)
                })
                .collect()
        }
        4 | 5 => lit.ints(if et == 4 { "s32s" } else { "s64s" }).iter().map(|v| v.to_string()).collect(),
        8 | 9 => lit
            .list(if et == 8 { "u32s" } else { "u64s" })
            .iter()
            .map(|v| match v {
                Value::UInt(u) => u.to_string(),
                Value::Int(i) => i.to_string(),
                _ => "0".into(),
            })
            .collect(),
        15 | 18 => {
            let v = floats(if et == 15 { "c64s" } else { "c128s" });
            let f = |x: f64| if et == 15 { fp(x, 6, 9, true) } else { fp(x, 15, 17, false) };
            v.chunks_exact(2).map(|c| format!("({}, {})", f(c[0]), f(c[1]))).collect()
        }
        2 => lit.bytes("s8s").iter().map(|&b| (b as i8).to_string()).collect(),
        6 => lit.bytes("u8s").iter().map(|&b| b.to_string()).collect(),
        3 => lit.bytes("s16s").chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]).to_string()).collect(),
        7 => lit.bytes("u16s").chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]).to_string()).collect(),
        _ => return None,
    })
}

pub(super) fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// The operand text of a constant (`Literal::ToStringWithoutShape`).
pub fn literal_str(lit: &Msg, shape: &Msg) -> String {
    let et = shape.int("element_type");
    if et == TUPLE {
        let parts: Vec<String> = lit.msgs("tuple_literals").zip(shape.msgs("tuple_shapes")).map(|(p, s)| literal_str(p, s)).collect();
        return format!("({})", parts.join(", "));
    }
    let dims = shape.ints("dimensions");
    let n: i128 = dims.iter().fold(1i128, |a, &d| a.saturating_mul(i128::from(d)));
    // the dump's print options print an array of more than 10 elements as {...}
    if n > 10 {
        return "{...}".into();
    }
    let Some(vals) = literal_values(lit, et) else { return "{...}".into() };
    if vals.len() as i128 != n {
        return "{...}".into();
    }
    if dims.is_empty() {
        return vals[0].clone();
    }
    if dims.len() == 1 {
        return format!("{{{}}}", vals.join(", "));
    }
    fn rec(dims: &[i64], k: usize, start: &mut usize, vals: &[String]) -> String {
        if k == dims.len() - 1 {
            let n = dims[k] as usize;
            let s = format!("{{{}}}", vals[*start..*start + n].join(", "));
            *start += n;
            return s;
        }
        let parts: Vec<String> = (0..dims[k]).map(|_| rec(dims, k + 1, start, vals)).collect();
        format!("{{ {} }}", parts.join(", "))
    }
    let mut start = 0;
    rec(&dims, 0, &mut start, &vals)
}

// ---- attributes ------------------------------------------------------------------------------

/// `absl::CEscape`.
pub fn cescape(s: &str) -> String {
    cescape_bytes(s.as_bytes())
}

/// `absl::CEscape` of bytes (a `backend_config` need not be UTF-8).
pub fn cescape_bytes(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0..=0x1f | 0x7f..=0xff => {
                let _ = write!(out, "\\{b:03o}");
            }
            _ => out.push(b as char),
        }
    }
    out
}
