//! Property test for compaction: after any interleaving of puts, deletes (tombstones), rolls
//! and compaction passes, (1) replaying the log from the start gives the same key -> value
//! state as replaying everything that was ever appended, (2) every surviving record sits at
//! the offset it was appended at with the value it was appended with, and (3) offsets strictly
//! increase. Cases: 32 by default (each compaction pass fsyncs its swaps); `SAMSA_PROPTEST_CASES` overrides.

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use samsa_storage::batch::Compression;
use samsa_storage::test_support::{open_log, read_keyed_records, BatchBuilder, KeyedRecord};
use samsa_storage::{CleanupPolicy, Log, LogConfig, TopicPartition};

const NOW: i64 = 1_700_000_000_000;

#[derive(Clone, Debug)]
enum Op {
    Put {
        key: u8,
        value_bytes: usize,
        codec: u8,
    },
    Delete {
        key: u8,
    },
    Roll,
    Compact {
        later_ms: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..8, 0usize..120, 0u8..5).prop_map(|(key, value_bytes, codec)| Op::Put { key, value_bytes, codec }),
        2 => (0u8..8).prop_map(|key| Op::Delete { key }),
        2 => Just(Op::Roll),
        1 => (0i64..3000).prop_map(|later_ms| Op::Compact { later_ms }),
    ]
}

type Record = KeyedRecord;
type Records = Vec<Record>;

fn log_records(log: &mut Log) -> Vec<KeyedRecord> {
    read_keyed_records(log)
}

fn replay<'a>(
    records: impl Iterator<Item = &'a (i64, Vec<u8>, Option<Vec<u8>>)>,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut state = BTreeMap::new();
    for (_, k, v) in records {
        match v {
            Some(v) => state.insert(k.clone(), v.clone()),
            None => state.remove(k),
        };
    }
    state
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy::Compact,
        segment_bytes: 1500,
        segment_ms: 1000,
        delete_retention_ms: 1000,
        tail_cache_bytes: 1000,
        ..LogConfig::default()
    };
    let (_d, mut log) = open_log(dir.path(), &TopicPartition::new("compacted", 0), config);
    let codecs = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
    let mut appended: Records = Vec::new();
    let mut clock = NOW;
    for op in ops {
        clock += 1;
        match op {
            Op::Put {
                key,
                value_bytes,
                codec,
            } => {
                let value = vec![key.wrapping_add(appended.len() as u8); value_bytes];
                let b = BatchBuilder::new()
                    .timestamps(clock)
                    .compression(codecs[codec as usize])
                    .record(Some(&[key]), Some(&value))
                    .build();
                let info = log.append(b, 0, clock).unwrap();
                appended.push((info.base_offset, vec![key], Some(value)));
            }
            Op::Delete { key } => {
                let b = BatchBuilder::new()
                    .timestamps(clock)
                    .record(Some(&[key]), None)
                    .build();
                let info = log.append(b, 0, clock).unwrap();
                appended.push((info.base_offset, vec![key], None));
            }
            Op::Roll => {
                // Past segment.ms in record time: the next append rolls the segment.
                clock += 1001;
                log.maintenance(clock).unwrap();
            }
            Op::Compact { later_ms } => {
                clock += later_ms;
                log.compact(clock).unwrap();
            }
        }
        let now = log_records(&mut log);
        assert!(
            now.windows(2).all(|w| w[0].0 < w[1].0),
            "offsets strictly increase"
        );
        let by_offset: HashMap<i64, &Record> = appended.iter().map(|r| (r.0, r)).collect();
        for r in &now {
            assert_eq!(
                by_offset.get(&r.0),
                Some(&r),
                "a surviving record is unchanged at its offset"
            );
        }
        assert_eq!(
            replay(now.iter()),
            replay(appended.iter()),
            "replaying the log gives the same state"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: samsa_storage::test_support::proptest_cases(32), ..ProptestConfig::default() })]

    #[test]
    fn compaction_preserves_the_latest_state_and_offsets(ops in proptest::collection::vec(op(), 1..50)) {
        run(ops);
    }
}
