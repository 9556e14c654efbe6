//! Prints a digest of every table `hlodump::read` makes of FILE (cell values, nulls, types).
use std::hash::{Hash, Hasher};

use arrow_array::*;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_schema::DataType;

fn hash_array(a: &dyn Array, h: &mut impl Hasher) {
    a.data_type().to_string().hash(h);
    a.len().hash(h);
    for i in 0..a.len() {
        a.is_null(i).hash(h);
    }
    match a.data_type() {
        DataType::Utf8View => a.as_string_view().iter().for_each(|v| v.hash(h)),
        DataType::Utf8 => a.as_string::<i32>().iter().for_each(|v| v.hash(h)),
        DataType::Int32 => a.as_primitive::<Int32Type>().iter().for_each(|v| v.hash(h)),
        DataType::Int64 => a.as_primitive::<Int64Type>().iter().for_each(|v| v.hash(h)),
        DataType::Float64 => a.as_primitive::<Float64Type>().iter().for_each(|v| v.map(f64::to_bits).hash(h)),
        DataType::Boolean => a.as_boolean().iter().for_each(|v| v.hash(h)),
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            l.value_offsets().hash(h);
            hash_array(l.values().as_ref(), h);
        }
        DataType::Struct(_) => {
            for c in a.as_struct().columns() {
                hash_array(c.as_ref(), h);
            }
        }
        t => panic!("type {t}"),
    }
}

fn main() {
    let inputs: Vec<hlodump::Input> = std::env::args()
        .skip(1)
        .map(|p| hlodump::Input { path: p.clone().into(), shown: p.clone(), explicit: true, error: None, dump: p, data: None })
        .collect();
    let opts = hlodump::Options { threads: 1, collect: true, ..Default::default() };
    let out = hlodump::read(&inputs, &opts, &|_, _| {}).unwrap();
    for (name, batches) in out {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut rows = 0;
        for b in &batches {
            rows += b.num_rows();
            for c in b.columns() {
                hash_array(c.as_ref(), &mut h);
            }
        }
        println!("{name}: rows {rows} digest {:016x}", h.finish());
    }
}
