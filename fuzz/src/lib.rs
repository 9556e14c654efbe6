//! Shared checks of the fuzz targets: parse in collect mode and in strict mode, finish the
//! tables (the builders check their column lengths), and compare the two modes.

use hlodump::error::{Error, FileCtx};
use hlodump::source::SourceRef;
use hlodump::Tables;

pub type Parser = for<'c> fn(&'c [u8], FileCtx<'c>, &mut Tables) -> hlodump::error::Result<()>;

/// Run `parse` on `data` both ways; panic if the modes disagree: strict mode must fail exactly
/// when collect mode records an error, at the first recorded error's line and column.
pub fn check(parse: Parser, data: &[u8]) {
    let ctx = |collect| FileCtx { file_id: 0, path: "fuzz", collect, src: SourceRef::none(), proj: None, presized: false, strict: false, xla_named: true };
    let mut collected = Tables::default();
    parse(data, ctx(true), &mut collected).expect("collect mode never fails");
    let first = collected.errors.line.0.first().copied().zip(collected.errors.column.0.first().copied());
    let mut strict = Tables::default();
    let r = parse(data, ctx(false), &mut strict);
    match (r, first) {
        (Ok(()), None) => {}
        (Err(Error::Parse(e)), Some((line, column))) => {
            assert_eq!((e.line as i32, e.column as i32), (line, column), "strict error differs from the first collected error")
        }
        (Ok(()), Some(p)) => panic!("collect mode has an error at {p:?}, strict mode none"),
        (Err(e), None) => panic!("strict mode failed ({e}), collect mode recorded nothing"),
        (Err(e), Some(_)) => panic!("unexpected error kind: {e}"),
    }
    for (_, batch) in collected.finish() {
        assert!(batch.num_rows() <= data.len() + 1);
    }
}

/// `check` on `data` and on the two mutations that hid broken promises (issue 30): `data`
/// cut at a line end (a file cut short: chosen from the data, so the fuzzer steers it) and
/// `data` twice in a row (two dumps concatenated in one file).
pub fn check_mutations(parse: Parser, data: &[u8]) {
    check(parse, data);
    let ends: Vec<usize> = data.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect();
    if !ends.is_empty() {
        let pick = data.iter().fold(0usize, |h, &b| h.wrapping_mul(31).wrapping_add(b as usize));
        check(parse, &data[..ends[pick % ends.len()]]);
    }
    if data.len() <= 1 << 15 {
        let twice = [data, data].concat();
        check(parse, &twice);
    }
}

/// The classifier (`lex::classify`) at every level this CPU runs gives the portable level's
/// masks and counts on `data`, and the HLO scans give the same results walked a byte at a time
/// and through the index built at every level (every line of `data`, from the places the
/// parser starts them).
pub fn check_walks(data: &[u8]) {
    use hlodump::hlo::attributes::assert_walks_agree;
    use hlodump::hlo::scan::*;
    use hlodump::lex::classify::{count_indented_lines, Level};
    let levels: Vec<Level> = Level::ALL.into_iter().filter(|l| l.supported()).collect();
    let masks = |level: Level, d: &[u8]| {
        let mut out = vec![];
        HLO.blocks(level, d, |_, m| {
            out.push(m);
            true
        });
        out
    };
    let want = masks(Level::Portable, data);
    let count = count_indented_lines(Level::Portable, data);
    for &level in &levels {
        assert_eq!(masks(level, data), want, "{level:?} masks");
        assert_eq!(count_indented_lines(level, data), count, "{level:?} count");
    }
    for line in data.split(|&b| b == b'\n').filter(|l| l.len() <= 4096) {
        let p = plain(line);
        for &level in &levels {
            let mut ix = HloIndex::new(level);
            let t = ix.build(&HLO, line);
            let mut starts = 0;
            for i in 0..line.len() {
                // shapes and attribute lists start after a space or ", "
                let shapes = (i == 0 || line[i - 1] == b' ') && starts < 64;
                starts += shapes as usize;
                assert_walks_agree(&p, &t, i, shapes);
            }
        }
    }
}

/// Instruction lines in two stages (`hlo::tape`, issue 26): on every line of `data` the tape
/// agrees with the full parse (stage 1, and stage 2 for every column and for none); and `data`
/// read with only some `instructions` columns (one pick per stage-2 decoder) gives exactly those
/// columns of the full read, and the same errors.
pub fn check_tape(data: &[u8]) {
    use hlodump::hlo::tape::{assert_tape_agrees, Tape};
    use hlodump::hlo::Scratch;
    let (mut tp, mut commas, mut sc, mut sc2) = (Tape::default(), vec![], Scratch::default(), Scratch::default());
    for line in data.split(|&b| b == b'\n').filter(|l| l.len() <= 4096) {
        assert_tape_agrees(line, &mut tp, &mut commas, &mut sc, &mut sc2);
    }
    let ctx = || FileCtx { file_id: 0, path: "fuzz", collect: true, src: SourceRef::none(), proj: None, presized: false, strict: false, xla_named: true };
    let read = |masks: Option<&[Option<u64>]>| {
        let mut t = Tables::default();
        if let Some(m) = masks {
            t.project(m);
        }
        hlodump::hlo::parse(data, ctx(), &mut t).expect("collect mode never fails");
        t.finish()
    };
    fn batch<B: Clone>(b: &[(&str, B)], name: &str) -> B {
        b.iter().find(|(n, _)| *n == name).expect("table").1.clone()
    }
    let full = read(None);
    let names = Tables::columns_of("instructions").expect("instructions");
    let table = hlodump::TABLE_NAMES.iter().position(|n| *n == "instructions").expect("instructions");
    let picks: [&[&str]; 5] = [&["name", "opcode"], &["operands"], &["called_computations"], &["op_name", "source_line", "stack_frame_id"], &["custom_call_target", "backend_config"]];
    for pick in picks {
        let mask = pick.iter().map(|c| 1u64 << names.iter().position(|n| n == c).expect("column")).fold(0, |a, b| a | b);
        let mut masks = vec![None; hlodump::TABLE_NAMES.len()];
        masks[table] = Some(mask);
        let got = read(Some(&masks));
        let (want, have) = (batch(&full, "instructions"), batch(&got, "instructions"));
        assert_eq!(want.num_rows(), have.num_rows(), "{pick:?}");
        for c in pick {
            let (a, b) = (want.column_by_name(c).expect("full column"), have.column_by_name(c).expect("projected column"));
            assert!(a.as_ref() == b.as_ref(), "{c}");
        }
        assert_eq!(batch(&full, "errors"), batch(&got, "errors"), "{pick:?}");
    }
}
