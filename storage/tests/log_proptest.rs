//! Property test: random interleavings of appends, reads, truncations, rolls, retention,
//! DeleteRecords, flushes and simulated crashes (the active segment cut at a random byte past
//! the flushed data) against a model. Checked after every step:
//! - offsets are dense and increasing from the log start offset to the log end offset;
//! - every batch in the model reads back byte-identical (offset and epoch as assigned);
//! - after a crash, every acknowledged-and-flushed batch survives and nothing after the cut is
//!   served (what survives is exactly the model's prefix that lies before the cut).
//!
//! Cases: 64 by default; set `SAMSA_PROPTEST_CASES` for a heavier run.

use std::fs;
use std::path::Path;

use bytes::Bytes;
use proptest::prelude::*;
use samsa_storage::batch::{batches, BatchHeader};
use samsa_storage::test_support::{open_log, BatchBuilder};
use samsa_storage::{Log, LogConfig, LogDir, TopicPartition};

const NOW: i64 = 1_700_000_000_000;

#[derive(Clone, Debug)]
enum Op {
    Append {
        records: usize,
        value_bytes: usize,
        epoch: i32,
    },
    Read {
        at: f64,
        max_bytes: usize,
    },
    Truncate {
        at: f64,
    },
    DeleteRecords {
        at: f64,
    },
    Retention {
        keep_bytes: i64,
    },
    Roll,
    Flush,
    Crash {
        cut: f64,
    },
    CleanRestart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (1usize..6, 0usize..400, 0i32..3).prop_map(|(records, value_bytes, epoch)| Op::Append { records, value_bytes, epoch }),
        3 => (0.0f64..1.0, 1usize..3000).prop_map(|(at, max_bytes)| Op::Read { at, max_bytes }),
        1 => (0.0f64..1.0).prop_map(|at| Op::Truncate { at }),
        1 => (0.0f64..1.0).prop_map(|at| Op::DeleteRecords { at }),
        1 => (0i64..6000).prop_map(|keep_bytes| Op::Retention { keep_bytes }),
        1 => Just(Op::Roll),
        1 => Just(Op::Flush),
        2 => (0.0f64..1.0).prop_map(|cut| Op::Crash { cut }),
        1 => Just(Op::CleanRestart),
    ]
}

fn tp() -> TopicPartition {
    TopicPartition::new("prop", 0)
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 3000,
        index_interval_bytes: 256,
        segment_ms: 1000,
        retention_ms: -1,
        tail_cache_bytes: 2000,
        ..LogConfig::default()
    }
}

fn open(dir: &Path, config: &LogConfig) -> (LogDir, Log) {
    open_log(dir, &tp(), config.clone())
}

/// The model: the batches the log must hold, as they must read back.
struct Model {
    batches: Vec<Bytes>,
    log_start: i64,
    log_end: i64,
    flushed: i64,
}

impl Model {
    fn header(b: &Bytes) -> BatchHeader {
        BatchHeader::parse(b).unwrap()
    }
    fn visible(&self) -> Vec<Bytes> {
        self.batches
            .iter()
            .filter(|b| Self::header(b).last_offset() >= self.log_start)
            .cloned()
            .collect()
    }
}

fn check(log: &mut Log, model: &Model) {
    assert_eq!(log.log_end_offset(), model.log_end, "log end offset");
    assert_eq!(log.log_start_offset(), model.log_start, "log start offset");
    let mut got = Vec::new();
    let mut next = log.log_start_offset();
    while next < log.log_end_offset() {
        let bytes = log
            .read(next, 2500, i64::MAX, true)
            .unwrap()
            .load()
            .unwrap();
        assert!(!bytes.is_empty(), "no progress at {next}");
        for b in batches(&bytes) {
            let b = b.unwrap();
            b.validate_integrity().unwrap();
            next = b.header().next_offset();
            got.push(Bytes::copy_from_slice(b.as_bytes()));
        }
    }
    let want = model.visible();
    assert_eq!(got.len(), want.len(), "batch count");
    let mut expected_base = None;
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "batch bytes differ");
        let h = Model::header(g);
        if let Some(e) = expected_base {
            assert_eq!(h.base_offset, e, "offsets are dense");
        }
        expected_base = Some(h.next_offset());
    }
    if let Some(last) = want.last() {
        assert_eq!(Model::header(last).next_offset(), model.log_end);
    }
}

fn pick(lo: i64, hi: i64, at: f64) -> i64 {
    lo + ((hi - lo) as f64 * at) as i64
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config();
    let (mut d, mut log) = open(dir.path(), &cfg);
    let mut model = Model {
        batches: Vec::new(),
        log_start: 0,
        log_end: 0,
        flushed: 0,
    };
    let mut clock = NOW;
    for op in ops {
        clock += 10;
        match op {
            Op::Append {
                records,
                value_bytes,
                epoch,
            } => {
                let b = BatchBuilder::new()
                    .timestamps(clock)
                    .records(records, value_bytes)
                    .build();
                let info = log.append(b.clone(), epoch, clock).unwrap();
                assert_eq!(info.base_offset, model.log_end);
                let mut expect = b.to_vec();
                expect[0..8].copy_from_slice(&info.base_offset.to_be_bytes());
                expect[12..16].copy_from_slice(&epoch.to_be_bytes());
                model.batches.push(Bytes::from(expect));
                model.log_end = info.last_offset + 1;
            }
            Op::Read { at, max_bytes } => {
                let from = pick(model.log_start, model.log_end, at);
                let slice = log.read(from, max_bytes, i64::MAX, true).unwrap();
                let bytes = slice.load().unwrap();
                // Reads find batch boundaries, so a slice's length is exact before it is
                // loaded (what lets a connection send a segment range unread), and so are the
                // offsets it reports.
                assert_eq!(slice.len(), bytes.len());
                let hs: Vec<BatchHeader> = samsa_storage::batch::batches(&bytes)
                    .map(|b| *b.unwrap().header())
                    .collect();
                assert_eq!(
                    slice.offsets(),
                    hs.first()
                        .map(|f| (f.base_offset, hs.last().unwrap().next_offset()))
                );
                if from < model.log_end {
                    let first = BatchHeader::parse(&bytes).unwrap();
                    assert!(first.base_offset <= from && from <= first.last_offset());
                    let want = model
                        .batches
                        .iter()
                        .find(|b| Model::header(b).last_offset() >= from)
                        .unwrap();
                    assert_eq!(&bytes[..want.len()], &want[..]);
                    assert!(bytes.len() <= max_bytes.max(want.len()));
                } else {
                    assert!(bytes.is_empty());
                }
            }
            Op::Truncate { at } => {
                let to = pick(model.log_start, model.log_end, at);
                log.truncate_to(to).unwrap();
                // The batch holding `to` goes entirely (Kafka truncates at batch starts).
                let cut = model
                    .batches
                    .iter()
                    .find(|b| Model::header(b).last_offset() >= to)
                    .map(|b| Model::header(b).base_offset);
                model
                    .batches
                    .retain(|b| Model::header(b).last_offset() < to);
                model.log_end = cut.unwrap_or(model.log_end).min(model.log_end);
                model.log_start = model.log_start.min(model.log_end);
                model.flushed = model.flushed.min(model.log_end);
            }
            Op::DeleteRecords { at } => {
                let to = pick(model.log_start, model.log_end, at);
                let start = log.delete_records_before(to).unwrap();
                model.log_start = model.log_start.max(to);
                assert_eq!(start, model.log_start);
            }
            Op::Retention { keep_bytes } => {
                let mut c = cfg.clone();
                c.retention_bytes = keep_bytes;
                log.set_config(c);
                // Retention takes only what is below the high watermark (here, everything).
                log.set_high_watermark(model.log_end);
                log.retention(clock).unwrap();
                log.set_config(cfg.clone());
                model.log_start = log.log_start_offset();
            }
            Op::Roll => {
                // Past segment.ms in record time: the next append rolls the segment.
                clock += 2000;
                log.maintenance(clock).unwrap();
            }
            Op::Flush => {
                log.flush_now().unwrap();
                model.flushed = model.log_end;
                d.write_checkpoints(&[(tp(), log.checkpoint())]).unwrap();
            }
            Op::Crash { cut } => {
                let flushed = log.flushed_offset().max(model.flushed);
                let active = *log.segment_base_offsets().last().unwrap();
                drop(log);
                drop(d);
                let path = dir.path().join("prop-0").join(format!("{active:020}.log"));
                let bytes = fs::read(&path).unwrap();
                // Cut past the flushed data only: a crash never loses fsync'd bytes.
                let mut flushed_pos = 0usize;
                let mut pos = 0usize;
                for b in batches(&bytes) {
                    let b = b.unwrap();
                    pos += b.size_bytes();
                    if b.header().last_offset() < flushed {
                        flushed_pos = pos;
                    }
                }
                let cut_at = flushed_pos + ((bytes.len() - flushed_pos) as f64 * cut) as usize;
                fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_len(cut_at as u64)
                    .unwrap();
                // Batches wholly before the cut in the active segment survive, and everything before it.
                let mut end_in_active = 0usize;
                let mut survivors_end = active;
                for b in batches(&bytes[..cut_at]) {
                    let Ok(b) = b else { break };
                    end_in_active += b.size_bytes();
                    survivors_end = b.header().next_offset();
                }
                let _ = end_in_active;
                model
                    .batches
                    .retain(|b| Model::header(b).last_offset() < survivors_end);
                model.log_end = if model.log_end > active {
                    survivors_end.max(active)
                } else {
                    model.log_end
                };
                assert!(
                    model.log_end >= flushed.min(model.log_end),
                    "flushed data lost"
                );
                let (d2, log2) = open(dir.path(), &cfg);
                d = d2;
                log = log2;
                // The recovered log start comes from the checkpoint, which may be older.
                model.log_start = log.log_start_offset();
                model.flushed = model.log_end;
            }
            Op::CleanRestart => {
                let cp = log.close().unwrap();
                d.write_checkpoints(&[(tp(), cp)]).unwrap();
                d.mark_clean_shutdown().unwrap();
                drop(d);
                let (d2, log2) = open(dir.path(), &cfg);
                d = d2;
                log = log2;
                assert_eq!(log.log_start_offset(), model.log_start);
                model.flushed = model.log_end;
            }
        }
        check(&mut log, &model);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: samsa_storage::test_support::proptest_cases(64), ..ProptestConfig::default() })]

    #[test]
    fn log_matches_model_under_random_operations(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops);
    }
}
