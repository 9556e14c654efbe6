//! HLO parsing speed: `cargo run --release --example hlo_speed -- FILE [RUNS] [THREADS]`.
//! Runs `hlodump::read` on FILE (THREADS threads, default 1) RUNS times and prints MB/s per run, and the row
//! counts of the HLO tables (to check that the input parses without errors).

use std::time::Instant;

use hlodump::read::{read, Input, Options};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: hlo_speed FILE [RUNS]");
    let runs: usize = args.get(2).map_or(3, |r| r.parse().unwrap());
    let size = std::fs::metadata(path).unwrap().len() as f64;
    let input = Input { path: path.into(), shown: path.clone(), explicit: true, error: None, dump: path.clone(), data: None };
    let threads: usize = args.get(3).map_or(1, |t| t.parse().unwrap());
    let opts = Options { threads, ..Default::default() };
    let mut best = f64::MAX;
    for run in 0..runs {
        let t0 = Instant::now();
        let out = read(std::slice::from_ref(&input), &opts, &|_, _| {}).unwrap();
        let dt = t0.elapsed().as_secs_f64();
        best = best.min(dt);
        let rows = |name: &str| -> usize {
            out.iter().find(|(n, _)| *n == name).map_or(0, |(_, b)| b.iter().map(|b| b.num_rows()).sum())
        };
        println!(
            "run {run}: {:.3} s  {:.1} MB/s  (instructions {}, computations {}, stack_frames {}, custom_calls {}, errors {})",
            dt,
            size / dt / 1e6,
            rows("instructions"),
            rows("computations"),
            rows("stack_frames"),
            rows("custom_calls"),
            rows("errors")
        );
        let t1 = Instant::now();
        drop(out);
        if run == 0 {
            println!("  drop: {:.3} s", t1.elapsed().as_secs_f64());
        }
    }
    println!("best: {:.1} MB/s over {} bytes", size / best / 1e6, size as u64);
}
