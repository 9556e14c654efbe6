#![no_main]
use libfuzzer_sys::fuzz_target;

// The whole pipeline on a real file: files row, sniff, dispatch, parse, Arrow batches. The
// first byte picks the file name (and so the name-based kind), the rest is the content.
const NAMES: [&str; 4] = [
    "module_0000.f.cpu_after_optimizations-buffer-assignment.txt",
    "module_0000.f.before_optimizations.txt",
    "module_0000.f.cpu_after_optimizations-memory-usage-report.txt",
    "other.txt",
];

fuzz_target!(|data: &[u8]| {
    let Some((&k, content)) = data.split_first() else { return };
    let dir = std::env::temp_dir().join(format!("hlodump-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(NAMES[k as usize % NAMES.len()]);
    std::fs::write(&path, content).unwrap();
    let input = hlodump::Input { path: path.clone(), shown: "f".into(), explicit: true, error: None, dump: "f".into(), data: None };
    for collect in [true, false] {
        let map = if k & 0x80 != 0 { hlodump::MapPolicy::Always } else { hlodump::MapPolicy::Auto };
        let opts = hlodump::Options { collect, threads: 0, map, ..Default::default() };
        match hlodump::read(std::slice::from_ref(&input), &opts, &|_, _| {}) {
            Ok(_) => {}
            Err(hlodump::Error::Parse(_)) if !collect => {}
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
});
