//! `hlodump-bench count FILE...`      memchr `\n` count over a memory map (the floor), one thread
//! `hlodump-bench read THREADS FILE...` `hlodump::read` (mapped, on_error=raise), prints rows
//! `hlodump-bench read THREADS FILE... --repeat N` run N times (for profilers)
//! `... --columns TABLE:COL,COL` builds only those columns of TABLE and no other table (`Options::projection`)
//! Prints one JSON line: {"seconds": …, "bytes": …, …}.

use std::path::PathBuf;
use std::time::Instant;

use hlodump::{Input, MapPolicy, Options};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut repeat = 1usize;
    if let Some(i) = args.iter().position(|a| a == "--repeat") {
        repeat = args[i + 1].parse().expect("--repeat N");
        args.drain(i..i + 2);
    }
    let mut only: Option<(String, u64)> = None;
    if let Some(i) = args.iter().position(|a| a == "--columns") {
        let spec = args[i + 1].clone();
        args.drain(i..i + 2);
        let (table, cols) = spec.split_once(':').expect("--columns TABLE:COL,COL");
        let names = hlodump::Tables::columns_of(table).expect("known table");
        let mask = cols.split(',').map(|c| 1u64 << names.iter().position(|n| *n == c).expect("known column")).fold(0, |a, b| a | b);
        only = Some((table.to_string(), mask));
    }
    let mode = args.remove(0);
    match mode.as_str() {
        "count" => {
            let t = Instant::now();
            let (mut lines, mut bytes) = (0usize, 0usize);
            for p in &args {
                let f = std::fs::File::open(p).expect("open");
                if f.metadata().unwrap().len() == 0 {
                    continue;
                }
                let m = unsafe { memmap2::Mmap::map(&f).expect("mmap") };
                lines += memchr::memchr_iter(b'\n', &m).count();
                bytes += m.len();
            }
            let s = t.elapsed().as_secs_f64();
            println!("{{\"seconds\": {s}, \"bytes\": {bytes}, \"lines\": {lines}}}");
        }
        "read" => {
            let threads: usize = args.remove(0).parse().expect("THREADS");
            let inputs: Vec<Input> = args
                .iter()
                .map(|p| Input { path: PathBuf::from(p), shown: p.clone(), explicit: true, error: None, dump: p.clone(), data: None })
                .collect();
            let mut opts = Options { collect: false, threads, map: MapPolicy::Auto, ..Default::default() };
            if let Some((table, mask)) = &only {
                // as `read_arrow(tables=[TABLE], columns={TABLE: [...]})` does
                let mut columns = vec![None; hlodump::TABLE_NAMES.len()];
                columns[hlodump::TABLE_NAMES.iter().position(|n| n == table).expect("known table")] = Some(*mask);
                opts = opts.for_tables(Some(&[table.as_str()]), Some(columns), &["files", "errors"]);
            }
            let mut best = f64::MAX;
            let mut rows = 0usize;
            let (mut anon_kb, mut arrow) = (0u64, 0usize);
            for _ in 0..repeat {
                let t = Instant::now();
                let batches = hlodump::read(&inputs, &opts, &|_, _| {}).expect("read");
                let s = t.elapsed().as_secs_f64();
                best = best.min(s);
                rows = batches.iter().flat_map(|(_, b)| b.iter()).map(|b| b.num_rows()).sum();
                anon_kb = rss_anon_kb();
                arrow = batches.iter().flat_map(|(_, b)| b.iter()).map(|b| b.get_array_memory_size()).sum();
                drop(batches);
            }
            let bytes: u64 = inputs.iter().map(|i| std::fs::metadata(&i.path).map(|m| m.len()).unwrap_or(0)).sum();
            println!("{{\"seconds\": {best}, \"bytes\": {bytes}, \"rows\": {rows}, \"rss_anon_mb\": {}, \"arrow_capacity_mb\": {}}}", anon_kb >> 10, arrow >> 20);
        }
        _ => panic!("mode: count | read"),
    }
}

/// RssAnon of this process in kB (0 where /proc is not there).
fn rss_anon_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines().find_map(|l| l.strip_prefix("RssAnon:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
}
