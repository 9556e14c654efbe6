#![no_main]
use libfuzzer_sys::fuzz_target;

// The HLO proto reader (src/hlo_proto): the wire decoder on any bytes (truncated varints, wrong
// wire types, nested length bombs: errors with the byte offset, never a panic or an allocation
// the input does not pay for), the renderer and the text parser behind it, both error modes.
// What decodes, encoded again by the schema, decodes to the same message (issue 49): the
// decoder keeps every field it reads, and reads nothing the bytes do not say.
fuzz_target!(|data: &[u8]| {
    if let Err(e) = hlodump::hlo_proto::decode_hlo(data) {
        assert!(e.offset <= data.len(), "an error past the end: {e}");
    }
    use hlodump::hlo_proto::{schema::HLOPROTO, wire};
    if let Ok((m, _)) = wire::decode(data, HLOPROTO) {
        let again = wire::decode(&wire::encode(&m, HLOPROTO), HLOPROTO).expect("a re-encoded message decodes");
        assert!(wire::same_message(&m, &again.0), "decode != decode of re-encode");
    }
    hlodump_fuzz::check_mutations(hlodump::hlo_proto::parse, data);
});
