//! Layout compatibility with a real client: record batches captured from librdkafka 2.16
//! (`tests/fixtures/capture_librdkafka.py`, one file per compression codec) are validated,
//! decoded, appended, and read back through the offset index and the time index.

use std::fs;
use std::path::Path;

use bytes::Bytes;
use samsa_storage::batch::{batches, Compression, RecordBatch};
use samsa_storage::compression::decompress;
use samsa_storage::records::{read_varint, records};
use samsa_storage::test_support::open_log;
use samsa_storage::{Log, LogConfig, LogDir, TopicPartition};

const BASE_TS: i64 = 1_700_000_000_000;
const RECORDS: i64 = 40;

fn fixture(codec: &str) -> Vec<u8> {
    fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(format!("librdkafka-{codec}.bin")),
    )
    .unwrap()
}

fn expected(i: i64) -> (Option<Vec<u8>>, Option<Vec<u8>>, Option<String>) {
    let key = (i % 10 != 9).then(|| format!("key-{}", i % 7).into_bytes());
    let value = (i % 13 != 12).then(|| {
        format!("value-{i}-")
            .repeat(1 + (i % 5) as usize)
            .into_bytes()
    });
    let header = (i % 3 == 0).then(|| i.to_string());
    (key, value, header)
}

const CODECS: [(&str, Compression); 5] = [
    ("none", Compression::None),
    ("gzip", Compression::Gzip),
    ("snappy", Compression::Snappy),
    ("lz4", Compression::Lz4),
    ("zstd", Compression::Zstd),
];

#[test]
fn librdkafka_batches_validate_and_decode_with_every_codec() {
    for (name, codec) in CODECS {
        let bytes = fixture(name);
        let mut i = 0i64;
        for b in batches(&bytes) {
            let b = b.unwrap();
            b.validate(1 << 20)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let h = *b.header();
            assert_eq!(h.compression(), Some(codec), "{name}");
            assert_eq!(h.magic, 2);
            let payload = decompress(codec, b.records_bytes(), 1 << 20).unwrap();
            for r in records(&payload, h.record_count) {
                let r = r.unwrap();
                let (key, value, header) = expected(i);
                assert_eq!(r.key.map(<[u8]>::to_vec), key, "{name} record {i}");
                assert_eq!(r.value.map(<[u8]>::to_vec), value, "{name} record {i}");
                assert_eq!(h.base_timestamp + r.timestamp_delta, BASE_TS + i * 10);
                let mut p = 0;
                let count = read_varint(r.headers, &mut p).unwrap();
                assert_eq!(count, header.is_some() as i32, "{name} record {i}");
                if let Some(v) = header {
                    assert!(r.headers.ends_with(v.as_bytes()));
                }
                i += 1;
            }
        }
        assert_eq!(i, RECORDS, "{name}");
    }
}

fn open(dir: &Path, config: LogConfig) -> (LogDir, Log) {
    open_log(dir, &TopicPartition::new("fixture", 0), config)
}

#[test]
fn librdkafka_batches_read_back_through_the_index_and_time_index() {
    for (name, _) in CODECS {
        let dir = tempfile::tempdir().unwrap();
        // A small index interval so that the index has entries even for these few batches.
        let config = LogConfig {
            index_interval_bytes: 64,
            tail_cache_bytes: 0,
            ..LogConfig::default()
        };
        let bytes = fixture(name);
        let mut sent: Vec<Vec<u8>> = Vec::new();
        {
            let (d, mut log) = open(dir.path(), config.clone());
            for b in batches(&bytes) {
                let b = b.unwrap();
                sent.push(b.as_bytes().to_vec());
                log.append(Bytes::copy_from_slice(b.as_bytes()), 4, BASE_TS)
                    .unwrap();
            }
            assert_eq!(log.log_end_offset(), RECORDS);
            let cp = log.close().unwrap();
            d.write_checkpoints(&[(TopicPartition::new("fixture", 0), cp)])
                .unwrap();
            d.mark_clean_shutdown().unwrap();
        }
        let part = dir.path().join("fixture-0");
        let index = fs::read(part.join("00000000000000000000.index")).unwrap();
        let log_bytes = fs::read(part.join("00000000000000000000.log")).unwrap();
        assert!(
            !index.is_empty() && index.chunks_exact(8).remainder().is_empty(),
            "{name}: index of {} bytes",
            index.len()
        );
        // Every offset-index entry maps a batch's last offset to that batch's position.
        for e in index.chunks(8) {
            let rel = u32::from_be_bytes(e[0..4].try_into().unwrap()) as i64;
            let pos = u32::from_be_bytes(e[4..8].try_into().unwrap()) as usize;
            let b = RecordBatch::parse(&log_bytes[pos..]).unwrap();
            assert_eq!(b.header().last_offset(), rel, "{name}");
        }
        let timeindex = fs::read(part.join("00000000000000000000.timeindex")).unwrap();
        assert!(
            !timeindex.is_empty() && timeindex.chunks_exact(12).remainder().is_empty(),
            "{name}"
        );
        let last_ts =
            i64::from_be_bytes(timeindex[timeindex.len() - 12..][..8].try_into().unwrap());
        assert_eq!(
            last_ts,
            BASE_TS + (RECORDS - 1) * 10,
            "{name}: the last time entry holds the max timestamp"
        );

        let (_d, mut log) = open(dir.path(), config);
        for offset in 0..RECORDS {
            let got = log
                .read(offset, 1 << 20, i64::MAX, true)
                .unwrap()
                .load()
                .unwrap();
            let first = RecordBatch::parse(&got).unwrap();
            let h = first.header();
            assert!(
                h.base_offset <= offset && offset <= h.last_offset(),
                "{name} offset {offset}"
            );
            let original = sent
                .iter()
                .find(|s| s.len() == first.size_bytes() && s[16..] == got[16..first.size_bytes()]);
            assert!(
                original.is_some(),
                "{name}: batch at {offset} differs from what librdkafka sent"
            );
            assert_eq!(h.partition_leader_epoch, 4);
            let ts = BASE_TS + offset * 10;
            assert_eq!(
                log.offset_for_timestamp(ts).unwrap(),
                Some((offset, ts)),
                "{name}"
            );
            assert_eq!(
                log.offset_for_timestamp(ts - 5).unwrap(),
                Some((offset, ts)),
                "{name}"
            );
        }
        assert_eq!(
            log.max_timestamp().map(|(_, ts)| ts),
            Some(BASE_TS + (RECORDS - 1) * 10)
        );
    }
}
