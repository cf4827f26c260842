//! Bytes from the network as the connection reads them: frames cut by the size prefix (with
//! the broker's limit), each decoded as a request (header, then the body of its API and
//! version). Nothing may panic; every outcome is a frame, an error, or "need more bytes".
//!
//! The broker's allocator, as in `samsa`'s main.rs: kafka-protocol reserves an array's
//! declared length before decoding it (`Vec::with_capacity` of up to 2^32 elements from a
//! 20-byte frame); mimalloc reserves that address space without touching it and the decode
//! fails at the end of the frame, where the system allocator under the fuzzer reports an
//! out-of-memory. `compat-tests/tests/bad_input.rs` sends such frames to the real binary.
#![no_main]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use samsa_protocol::FrameDecoder;

fuzz_target!(|data: &[u8]| {
    // The limit an unauthenticated SASL connection reads with, and the default request limit.
    for limit in [512 * 1024, 100 * 1024 * 1024] {
        let decoder = FrameDecoder::new(limit);
        let mut buf = BytesMut::from(data);
        while let Ok(Some(frame)) = decoder.decode(&mut buf) {
            let _ = samsa_protocol::header::peek_prefix(&frame);
            let _ = samsa_protocol::decode_request(frame);
        }
    }
});
