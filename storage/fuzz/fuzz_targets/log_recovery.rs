#![no_main]
//! See `samsa_storage::fuzzing::log_recovery`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    samsa_storage::fuzzing::log_recovery(data);
});
