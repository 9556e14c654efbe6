#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    hlodump_fuzz::check(hlodump::buffer_assignment::parse, data);
});
