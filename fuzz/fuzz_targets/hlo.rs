#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    hlodump_fuzz::check_mutations(hlodump::hlo::parse, data); // also cut at a line end, and twice
    // the SIMD levels against the portable one, the indexed scans against the byte loops
    hlodump_fuzz::check_walks(data);
    // the field tape and its decoders against the full parse; projected reads against full ones
    hlodump_fuzz::check_tape(data);
});
