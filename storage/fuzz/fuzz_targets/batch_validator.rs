#![no_main]
//! See `samsa_storage::fuzzing::batch_validator`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    samsa_storage::fuzzing::batch_validator(data);
});
