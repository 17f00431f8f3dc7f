//! Any bytes as an input, an RPC either way, or a snapshot: no panic, ever.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    aggro_arena::fuzzing::payloads(data);
});
