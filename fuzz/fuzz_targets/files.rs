#![no_main]
use libfuzzer_sys::fuzz_target;

// File-name classification (any UTF-8 name) and content sniffing (any bytes).
fuzz_target!(|data: &[u8]| {
    let _ = hlodump::formats::sniff(data);
    let name = String::from_utf8_lossy(data);
    let n = hlodump::files::classify(&name);
    let _ = n.kind.as_str();
});
