#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    hlodump_fuzz::check_mutations(hlodump::buffer_assignment::parse, data); // also cut at a line end, and twice
});
