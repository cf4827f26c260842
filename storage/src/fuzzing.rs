//! Bodies of the fuzz targets (`storage/fuzz/`), kept in the crate so that a plain `#[test]`
//! can also drive them with random inputs where no nightly toolchain is available. Each
//! function must never panic, whatever the bytes; the assertions inside are the properties.

use std::io::Write;

use crate::batch::{batches, BatchHeader, RecordBatch};
use crate::compression::decompress;
use crate::config::{LogConfig, TopicPartition};
use crate::log_dir::LogDir;
use crate::records::records;
use crate::recovery::{scan_bytes, ScanStop};

/// The recovery scan over arbitrary bytes: the valid prefix must rescan cleanly to its end,
/// and every batch in it must pass the integrity check.
pub fn recovery_scan(data: &[u8]) {
    let r = scan_bytes(data);
    assert!(r.valid_end as usize <= data.len());
    let prefix = &data[..r.valid_end as usize];
    let again = scan_bytes(prefix);
    assert_eq!(again.valid_end, r.valid_end);
    assert_eq!(again.batches, r.batches);
    assert_eq!(again.stop, ScanStop::End);
    for b in batches(prefix) {
        b.expect("whole batches")
            .validate_integrity()
            .expect("validated by the scan");
    }
}

/// Header parsing, validation and record decoding of arbitrary bytes (bounded decompression).
pub fn batch_validator(data: &[u8]) {
    let _ = BatchHeader::parse(data);
    for b in batches(data).take(64) {
        let Ok(b) = b else { break };
        let _ = b.validate(1 << 20);
        let h = b.header();
        let _ = h.last_sequence();
        if let Some(codec) = h.compression() {
            if let Ok(payload) = decompress(codec, b.records_bytes(), 1 << 22) {
                for r in records(&payload, h.record_count).take(100_000) {
                    if r.is_err() {
                        break;
                    }
                }
            }
        }
    }
    let _ = RecordBatch::parse(data).map(|b| b.compute_crc());
}

/// Opens a log whose only segment holds `data` (a crash left anything at all), then reads it:
/// recovery must succeed, and everything served must be whole, valid batches.
pub fn log_recovery(data: &[u8]) {
    let dir = tempfile_dir();
    let part = dir.join("fuzz-0");
    std::fs::create_dir_all(&part).expect("create dir");
    std::fs::File::create(part.join("00000000000000000000.log"))
        .and_then(|mut f| f.write_all(data))
        .expect("write segment");
    {
        let (_d, mut logs) = LogDir::open(&dir, |_| LogConfig {
            tail_cache_bytes: 0,
            ..LogConfig::default()
        })
        .expect("recovery never fails on bad bytes");
        let (tp, mut log) = logs.pop().expect("one partition");
        assert_eq!(tp, TopicPartition::new("fuzz", 0));
        let mut next = log.log_start_offset();
        while next < log.log_end_offset() {
            let bytes = log
                .read(next, 1 << 20, i64::MAX, true)
                .expect("read")
                .load()
                .expect("load");
            let mut last = None;
            for b in batches(&bytes) {
                let b = b.expect("whole batch");
                b.validate_integrity().expect("valid batch");
                last = Some(b.header().next_offset());
            }
            next = last.expect("progress");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("samsa-fuzz-{}-{n}", std::process::id()))
}

/// Producer snapshots and transaction indexes from arbitrary bytes: decoding either must
/// return an error or entries, never panic, and a decoded snapshot must re-encode to a
/// snapshot that decodes to the same entries.
pub fn producer_snapshot(data: &[u8]) {
    // Past the CRC too: the same bytes with a CRC that matches them.
    let mut resealed = data.to_vec();
    if resealed.len() >= 6 {
        let crc = crate::batch::crc32c(&resealed[6..]);
        resealed[2..6].copy_from_slice(&crc.to_be_bytes());
    }
    for bytes in [data, &resealed[..]] {
        producer_snapshot_once(bytes);
    }
    let dir = tempfile_dir();
    std::fs::create_dir_all(&dir).expect("create dir");
    let path = dir.join("00000000000000000000.txnindex");
    std::fs::write(&path, data).expect("write txnindex");
    let _ = crate::txn_index::read(&path);
    let _ = std::fs::remove_dir_all(&dir);
}

fn producer_snapshot_once(data: &[u8]) {
    if let Ok(entries) = crate::producer_state::decode_snapshot(data) {
        let mut state = crate::producer_state::ProducerStateManager::default();
        state.load(entries.clone(), 0, 0, i64::MAX);
        let again = crate::producer_state::decode_snapshot(&state.encode_snapshot())
            .expect("a re-encoded snapshot decodes");
        let mut expected = entries;
        expected.sort_by_key(|e| e.producer_id);
        expected.dedup_by_key(|e| e.producer_id);
        assert_eq!(again.len(), expected.len());
    }
}
