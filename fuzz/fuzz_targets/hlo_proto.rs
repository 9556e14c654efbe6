#![no_main]
use libfuzzer_sys::fuzz_target;

// The HLO proto reader (src/hlo_proto): the wire decoder on any bytes (truncated varints, wrong
// wire types, nested length bombs: errors with the byte offset, never a panic or an allocation
// the input does not pay for), the renderer and the text parser behind it, both error modes.
fuzz_target!(|data: &[u8]| {
    if let Err(e) = hlodump::hlo_proto::decode_hlo(data) {
        assert!(e.offset <= data.len(), "an error past the end: {e}");
    }
    hlodump_fuzz::check_mutations(hlodump::hlo_proto::parse, data);
});
