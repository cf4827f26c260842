//! Kafka's batch compression codecs, used only by compaction and by the compacted-topic key
//! check (the ordinary append and fetch paths never decompress).
//!
//! - gzip: RFC 1952 (members may be concatenated).
//! - snappy: the Java client's xerial framing (`\x82SNAPPY\0`, version, then length-prefixed
//!   raw snappy blocks); raw snappy without the framing is also accepted, as xerial's
//!   `SnappyInputStream` does. Written with the framing, as the Java producer does.
//! - lz4: the LZ4 frame format with independent blocks (Kafka's `KafkaLZ4BlockOutputStream`).
//! - zstd: a standard zstd frame.
//!
//! Invariant: decompression output is bounded by the caller's limit, checked while reading,
//! so a decompression bomb fails instead of allocating.

use std::io::{self, Read, Write};

use crate::batch::Compression;

const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_BYTES: usize = 16;
const XERIAL_BLOCK_BYTES: usize = 32 * 1024;

fn too_large(limit: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("decompressed records exceed {limit} bytes"),
    )
}

fn read_bounded(mut r: impl Read, limit: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    r.by_ref().take(limit as u64 + 1).read_to_end(&mut out)?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(out)
}

/// Decompresses a batch's records payload, refusing output larger than `limit` bytes.
pub fn decompress(codec: Compression, input: &[u8], limit: usize) -> io::Result<Vec<u8>> {
    match codec {
        Compression::None => {
            if input.len() > limit {
                return Err(too_large(limit));
            }
            Ok(input.to_vec())
        }
        Compression::Gzip => read_bounded(flate2::read::MultiGzDecoder::new(input), limit),
        Compression::Snappy => snappy_decompress(input, limit),
        Compression::Lz4 => read_bounded(lz4_flex::frame::FrameDecoder::new(input), limit),
        Compression::Zstd => read_bounded(zstd::stream::read::Decoder::new(input)?, limit),
    }
}

fn snappy_raw(input: &[u8], out: &mut Vec<u8>, limit: usize) -> io::Result<()> {
    let len = snap::raw::decompress_len(input).map_err(io::Error::other)?;
    if len > limit.saturating_sub(out.len()) {
        return Err(too_large(limit));
    }
    let start = out.len();
    out.resize(start + len, 0);
    snap::raw::Decoder::new()
        .decompress(input, &mut out[start..])
        .map_err(io::Error::other)?;
    Ok(())
}

fn snappy_decompress(input: &[u8], limit: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    if input.len() < XERIAL_HEADER_BYTES || input[..8] != XERIAL_MAGIC {
        snappy_raw(input, &mut out, limit)?;
        return Ok(out);
    }
    let mut pos = XERIAL_HEADER_BYTES;
    while pos < input.len() {
        let Some(len_bytes) = input.get(pos..pos + 4) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "truncated snappy block length",
            ));
        };
        let len = i32::from_be_bytes(len_bytes.try_into().expect("4 bytes"));
        pos += 4;
        if len < 0 || len as usize > input.len() - pos {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "snappy block runs past the end",
            ));
        }
        snappy_raw(&input[pos..pos + len as usize], &mut out, limit)?;
        pos += len as usize;
    }
    Ok(out)
}

/// Compresses a records payload with `codec`.
pub fn compress(codec: Compression, input: &[u8]) -> io::Result<Vec<u8>> {
    match codec {
        Compression::None => Ok(input.to_vec()),
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(input)?;
            e.finish()
        }
        Compression::Snappy => {
            let mut out = Vec::with_capacity(input.len() / 2 + XERIAL_HEADER_BYTES);
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes()); // version
            out.extend_from_slice(&1i32.to_be_bytes()); // minimum compatible version
            let mut enc = snap::raw::Encoder::new();
            for chunk in input.chunks(XERIAL_BLOCK_BYTES) {
                let block = enc.compress_vec(chunk).map_err(io::Error::other)?;
                out.extend_from_slice(&(block.len() as i32).to_be_bytes());
                out.extend_from_slice(&block);
            }
            Ok(out)
        }
        Compression::Lz4 => {
            let mut info = lz4_flex::frame::FrameInfo::new();
            info.block_mode = lz4_flex::frame::BlockMode::Independent;
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(input)?;
            e.finish().map_err(io::Error::other)
        }
        Compression::Zstd => zstd::bulk::compress(input, 3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for codec in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let c = compress(codec, &data).unwrap();
            assert_eq!(
                decompress(codec, &c, data.len()).unwrap(),
                data,
                "{codec:?}"
            );
        }
    }

    #[test]
    fn decompression_is_bounded() {
        let data = vec![0u8; 1 << 20];
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let c = compress(codec, &data).unwrap();
            assert!(decompress(codec, &c, 1000).is_err(), "{codec:?}");
        }
    }

    #[test]
    fn raw_snappy_without_framing_is_accepted() {
        let raw = snap::raw::Encoder::new()
            .compress_vec(b"hello hello hello")
            .unwrap();
        assert_eq!(
            decompress(Compression::Snappy, &raw, 100).unwrap(),
            b"hello hello hello"
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let _ = decompress(
                codec,
                &[
                    0x82, b'S', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 255, 255, 255, 1,
                ],
                1 << 20,
            );
        }
    }
}
