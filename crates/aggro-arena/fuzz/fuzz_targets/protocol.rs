//! Any datagram at a server with a live session, and at a connected client: no panic, ever.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    aggro_arena::fuzzing::protocol(data);
});
