//! CRC-32C (Castagnoli), the checksum of v2 record batches: every produced byte goes through
//! it once, so on a 1 KiB produce it is the broker's largest cost after the kernel's two copies.
//!
//! Three paths, picked at run time:
//!
//! - AVX-512 VPCLMULQDQ: `crc-fast`'s 512-bit carry-less-multiply folding (48 GiB/s for 1 MiB
//!   where it was measured, `storage/README.md`).
//! - AVX2 with VPCLMULQDQ and no AVX-512 (AMD Zen 3, Intel Alder Lake and later client cores):
//!   `crc-fast` has no 256-bit tier and falls back to 128-bit PCLMULQDQ, which on a Zen 3 was
//!   slower (15.5 GiB/s for 1 MiB) than even the `crc32` instruction loop (20 GiB/s). The
//!   256-bit fold below does four 32-byte lanes per step.
//! - Anything else: `crc-fast` (PCLMULQDQ, ARM PMULL or its tables).
//!
//! The fold keeps a 128-byte remainder of the message, congruent to it modulo the polynomial
//! after each step, then hands the last 16 bytes and the tail to the `crc32` instruction, which
//! completes the division.

/// CRC-32C of `bytes` (initial value and final XOR as in Kafka, iSCSI and ext4).
pub fn crc32c(bytes: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if bytes.len() >= fold256::MIN_LEN && fold256::usable() {
            // SAFETY: `usable` checked that the CPU has every feature the function enables.
            return unsafe { fold256::crc32c(bytes) };
        }
    }
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, bytes) as u32
}

/// `x^n mod P` for CRC-32C's polynomial, bit-reflected (bit `i` holds the coefficient of
/// `x^(31-i)`), as the carry-less multiplies of the reflected fold want their constants.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const fn x_pow_mod_p(n: u32) -> u32 {
    // P = x^32 + 0x1EDC6F41 in the usual (unreflected) order.
    let mut r: u64 = 1;
    let mut i = 0;
    while i < n {
        r <<= 1;
        if r & (1 << 32) != 0 {
            r ^= 0x1_1EDC_6F41;
        }
        i += 1;
    }
    (r as u32).reverse_bits()
}

/// The constants that move a 16-byte block `d` bits further along the message: the first
/// 8 bytes by `x^(d+31)`, the second by `x^(d-33)`. (A 64 x 32-bit carry-less product of
/// reflected operands lands 33 bits below where a 128-bit block would hold it, hence the
/// offsets: the first half sits 64 bits above the second.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const fn fold_constants(d: u32) -> (u64, u64) {
    (x_pow_mod_p(d + 31) as u64, x_pow_mod_p(d - 33) as u64)
}

#[cfg(target_arch = "x86_64")]
mod fold256 {
    use std::arch::x86_64::*;

    use super::fold_constants;

    /// Below this the setup does not pay: `crc-fast` (and its `crc32`-instruction paths for
    /// short inputs) does them.
    pub const MIN_LEN: usize = 256;

    const BY_1024: (u64, u64) = fold_constants(1024);
    const BY_256: (u64, u64) = fold_constants(256);
    const BY_128: (u64, u64) = fold_constants(128);

    pub fn usable() -> bool {
        // AVX-512 machines keep crc-fast's 512-bit fold, which was faster where measured.
        is_x86_feature_detected!("vpclmulqdq")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("pclmulqdq")
            && is_x86_feature_detected!("sse4.2")
            && !is_x86_feature_detected!("avx512vl")
    }

    #[inline(always)]
    unsafe fn k256(k: (u64, u64)) -> __m256i {
        _mm256_set_epi64x(k.1 as i64, k.0 as i64, k.1 as i64, k.0 as i64)
    }

    /// Each 16-byte lane of `x` moved forward by the distance `k` was made for.
    #[inline(always)]
    unsafe fn fold(x: __m256i, k: __m256i) -> __m256i {
        _mm256_xor_si256(
            _mm256_clmulepi64_epi128::<0x00>(x, k),
            _mm256_clmulepi64_epi128::<0x11>(x, k),
        )
    }

    #[inline(always)]
    unsafe fn load(p: *const u8) -> __m256i {
        _mm256_loadu_si256(p as *const __m256i)
    }

    /// # Safety
    /// The CPU must have AVX2, VPCLMULQDQ, PCLMULQDQ and SSE4.2; `bytes.len() >= MIN_LEN`.
    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.2")]
    pub unsafe fn crc32c(bytes: &[u8]) -> u32 {
        debug_assert!(bytes.len() >= MIN_LEN);
        let mut p = bytes.as_ptr();
        let end = p.add(bytes.len());
        // The initial value (all ones) enters as an XOR into the first four bytes.
        let mut x0 = _mm256_xor_si256(load(p), _mm256_set_epi64x(0, 0, 0, 0xFFFF_FFFF));
        let mut x1 = load(p.add(32));
        let mut x2 = load(p.add(64));
        let mut x3 = load(p.add(96));
        p = p.add(128);
        let k = k256(BY_1024);
        while end.offset_from(p) >= 128 {
            x0 = _mm256_xor_si256(fold(x0, k), load(p));
            x1 = _mm256_xor_si256(fold(x1, k), load(p.add(32)));
            x2 = _mm256_xor_si256(fold(x2, k), load(p.add(64)));
            x3 = _mm256_xor_si256(fold(x3, k), load(p.add(96)));
            p = p.add(128);
        }
        let k = k256(BY_256);
        x1 = _mm256_xor_si256(fold(x0, k), x1);
        x2 = _mm256_xor_si256(fold(x1, k), x2);
        x3 = _mm256_xor_si256(fold(x2, k), x3);
        while end.offset_from(p) >= 32 {
            x3 = _mm256_xor_si256(fold(x3, k), load(p));
            p = p.add(32);
        }
        let k = _mm_set_epi64x(BY_128.1 as i64, BY_128.0 as i64);
        let fold128 = |x: __m128i| {
            _mm_xor_si128(
                _mm_clmulepi64_si128::<0x00>(x, k),
                _mm_clmulepi64_si128::<0x11>(x, k),
            )
        };
        let mut x = _mm_xor_si128(
            fold128(_mm256_castsi256_si128(x3)),
            _mm256_extracti128_si256::<1>(x3),
        );
        if end.offset_from(p) >= 16 {
            x = _mm_xor_si128(fold128(x), _mm_loadu_si128(p as *const __m128i));
            p = p.add(16);
        }
        // The 16-byte remainder and the tail, through the crc32 instruction from zero.
        let mut crc = _mm_crc32_u64(0, _mm_cvtsi128_si64(x) as u64);
        crc = _mm_crc32_u64(crc, _mm_extract_epi64::<1>(x) as u64);
        while end.offset_from(p) >= 8 {
            crc = _mm_crc32_u64(crc, (p as *const u64).read_unaligned());
            p = p.add(8);
        }
        let mut crc = crc as u32;
        while p < end {
            crc = _mm_crc32_u8(crc, *p);
            p = p.add(1);
        }
        !crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bitwise CRC-32C, the definition.
    fn reference(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0x82F6_3B78
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn check_value() {
        // The catalogue's check value: CRC-32C of the ASCII digits 1 to 9.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn every_length_and_alignment_matches_the_definition() {
        let data: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        // Every length around each path's boundaries, from every alignment of a 32-byte load.
        for start in 0..33 {
            for len in (0..700).chain([1023, 1024, 1025, 4095, 4096, 4097, 4967 - start]) {
                let s = &data[start..start + len];
                assert_eq!(crc32c(s), reference(s), "start {start} len {len}");
                #[cfg(target_arch = "x86_64")]
                if len >= fold256::MIN_LEN && fold256::usable() {
                    // SAFETY: the features were checked.
                    let folded = unsafe { fold256::crc32c(s) };
                    assert_eq!(folded, reference(s), "fold, start {start} len {len}");
                }
            }
        }
        assert_eq!(crc32c(&[0u8; 4096]), reference(&[0u8; 4096]));
        assert_eq!(crc32c(&[0xFFu8; 4096]), reference(&[0xFFu8; 4096]));
    }

    #[test]
    fn the_constants_are_powers_of_x() {
        // x^0 .. x^31 are single bits, reflected; x^32 is P's low part, reflected.
        assert_eq!(x_pow_mod_p(0), 0x8000_0000);
        assert_eq!(x_pow_mod_p(31), 1);
        assert_eq!(x_pow_mod_p(32), 0x82F6_3B78);
    }
}
