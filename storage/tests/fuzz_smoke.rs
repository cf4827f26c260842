//! The fuzz targets' bodies driven by a seeded random generator, so that they run in every
//! `cargo test` (the real fuzzing is `cargo +nightly fuzz run <target>` in `storage/fuzz`).
//! Inputs are random bytes and valid logs with random bytes flipped, cut or spliced.
//! Iterations: 2000 by default (200 for the file-based target); `SAMSA_FUZZ_ITERATIONS` overrides.

use samsa_storage::batch::Compression;
use samsa_storage::fuzzing;
use samsa_storage::test_support::BatchBuilder;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn valid_log(rng: &mut XorShift) -> Vec<u8> {
    let codecs = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
    let mut out = Vec::new();
    let mut offset = 0;
    for _ in 0..1 + rng.below(5) {
        let n = 1 + rng.below(4);
        let b = BatchBuilder::new()
            .base_offset(offset)
            .compression(codecs[rng.below(codecs.len())])
            .records(n, rng.below(200))
            .build();
        out.extend_from_slice(&b);
        offset += n as i64;
    }
    out
}

fn input(rng: &mut XorShift) -> Vec<u8> {
    match rng.below(4) {
        0 => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
        _ => {
            let mut data = valid_log(rng);
            for _ in 0..rng.below(4) {
                match rng.below(3) {
                    0 if !data.is_empty() => {
                        let i = rng.below(data.len());
                        data[i] ^= 1 << rng.below(8);
                    }
                    1 => {
                        let cut = rng.below(data.len() + 1);
                        data.truncate(cut);
                    }
                    _ if !data.is_empty() => {
                        // Overwrite a length or count field with a hostile value.
                        let i = rng.below(data.len().saturating_sub(4).max(1));
                        let v = [i32::MAX, i32::MIN, -1, 0, 61, 1 << 20][rng.below(6)];
                        let end = (i + 4).min(data.len());
                        data[i..end].copy_from_slice(&v.to_be_bytes()[..end - i]);
                    }
                    _ => {}
                }
            }
            data
        }
    }
}

fn iterations(default: usize) -> usize {
    std::env::var("SAMSA_FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn recovery_scan_and_batch_validator_survive_random_bytes() {
    let mut rng = XorShift(0x5eed_1234_abcd_0001);
    for _ in 0..iterations(2000) {
        let data = input(&mut rng);
        fuzzing::recovery_scan(&data);
        fuzzing::batch_validator(&data);
    }
}

#[test]
fn log_recovery_survives_random_segment_contents() {
    let mut rng = XorShift(0x5eed_1234_abcd_0002);
    for _ in 0..iterations(2000) / 10 {
        fuzzing::log_recovery(&input(&mut rng));
    }
}
