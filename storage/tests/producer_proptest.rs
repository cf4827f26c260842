//! Property test: random interleavings of idempotent and transactional produces, retries,
//! sequence gaps, zombie epochs, epoch bumps, COMMIT/ABORT markers, flushes, crashes and clean
//! restarts against a model of Kafka's rules. Checked after every step:
//! - each append is accepted, answered as a duplicate with the original offsets, or refused
//!   with the error the model expects, and a refused or duplicate append writes nothing;
//! - the last stable offset is the first offset of the oldest open transaction (or the end);
//! - the aborted transactions a read_committed fetch would get are exactly the model's;
//! - all of the above survive crashes and restarts (snapshots plus the replayed tail).
//!
//! Cases: 64 by default; set `SAMSA_PROPTEST_CASES` for a heavier run.

use std::collections::VecDeque;
use std::path::Path;

use proptest::prelude::*;
use samsa_storage::test_support::{open_log, wall_clock_ms, BatchBuilder};
use samsa_storage::{AbortedTxn, EndTxnMarker, Log, LogConfig, LogDir, LogError, TopicPartition};

const PRODUCERS: usize = 3;

#[derive(Clone, Debug)]
enum Op {
    Next {
        pid: usize,
        records: usize,
        txn: bool,
    },
    Retry {
        pid: usize,
        which: usize,
    },
    Gap {
        pid: usize,
        by: i32,
    },
    Stale {
        pid: usize,
    },
    Bump {
        pid: usize,
    },
    Marker {
        pid: usize,
        commit: bool,
    },
    Flush,
    Crash,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    let pid = 0..PRODUCERS;
    prop_oneof![
        6 => (pid.clone(), 1..4usize, any::<bool>()).prop_map(|(pid, records, txn)| Op::Next { pid, records, txn }),
        3 => (pid.clone(), 0..5usize).prop_map(|(pid, which)| Op::Retry { pid, which }),
        1 => (pid.clone(), 1..3i32).prop_map(|(pid, by)| Op::Gap { pid, by }),
        1 => pid.clone().prop_map(|pid| Op::Stale { pid }),
        1 => pid.clone().prop_map(|pid| Op::Bump { pid }),
        3 => (pid, any::<bool>()).prop_map(|(pid, commit)| Op::Marker { pid, commit }),
        1 => Just(Op::Flush),
        1 => Just(Op::Crash),
        1 => Just(Op::Restart),
    ]
}

#[derive(Clone, Copy, Debug)]
struct Sent {
    first_seq: i32,
    records: usize,
    first_offset: i64,
    last_offset: i64,
    txn: bool,
}

#[derive(Default, Clone, Debug)]
struct Producer {
    /// Known to the log (it wrote data or got a marker).
    epoch: Option<i16>,
    next_seq: i32,
    cached: VecDeque<Sent>,
    open_txn: Option<i64>,
}

#[derive(Default, Debug)]
struct Model {
    producers: [Producer; PRODUCERS],
    log_end: i64,
    aborted: Vec<AbortedTxn>,
}

impl Model {
    fn lso(&self) -> i64 {
        self.producers
            .iter()
            .filter_map(|p| p.open_txn)
            .min()
            .unwrap_or(self.log_end)
    }
}

fn tp() -> TopicPartition {
    TopicPartition::new("eos", 0)
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 500,
        tail_cache_bytes: 0,
        ..LogConfig::default()
    }
}

fn open(dir: &Path) -> (LogDir, Log) {
    open_log(dir, &tp(), config())
}

fn pid_of(i: usize) -> i64 {
    1000 + i as i64
}

fn batch(pid: usize, epoch: i16, seq: i32, records: usize, txn: bool) -> bytes::Bytes {
    BatchBuilder::new()
        .timestamps(wall_clock_ms())
        .producer(pid_of(pid), epoch, seq)
        .transactional(txn)
        .records(records, 8)
        .build()
}

fn check(log: &mut Log, model: &Model) {
    assert_eq!(log.log_end_offset(), model.log_end);
    assert_eq!(log.last_stable_offset(model.log_end), model.lso());
    assert_eq!(
        log.aborted_transactions(0, model.log_end).unwrap(),
        model.aborted
    );
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let mut opened = Some(open(dir.path()));
    let mut model = Model::default();
    for op in ops {
        let (_, log) = opened.as_mut().unwrap();
        match op {
            Op::Next { pid, records, txn } => {
                let p = &mut model.producers[pid];
                let epoch = p.epoch.unwrap_or(0);
                let r = log.append(batch(pid, epoch, p.next_seq, records, txn), 0, 0);
                if p.open_txn.is_some() && !txn {
                    assert!(matches!(r, Err(LogError::InvalidTxnState(_))), "{r:?}");
                } else {
                    let info = r.unwrap();
                    assert!(!info.duplicate);
                    assert_eq!(info.base_offset, model.log_end);
                    let sent = Sent {
                        first_seq: p.next_seq,
                        records,
                        first_offset: info.base_offset,
                        last_offset: info.last_offset,
                        txn,
                    };
                    p.epoch = Some(epoch);
                    p.next_seq += records as i32;
                    p.cached.push_back(sent);
                    if p.cached.len() > 5 {
                        p.cached.pop_front();
                    }
                    if txn && p.open_txn.is_none() {
                        p.open_txn = Some(info.base_offset);
                    }
                    model.log_end = info.last_offset + 1;
                }
            }
            Op::Retry { pid, which } => {
                let p = &model.producers[pid];
                if p.cached.is_empty() {
                    continue;
                }
                let s = p.cached[which % p.cached.len()];
                let r = log
                    .append(
                        batch(pid, p.epoch.unwrap(), s.first_seq, s.records, s.txn),
                        0,
                        0,
                    )
                    .unwrap();
                assert!(r.duplicate);
                assert_eq!(
                    (r.base_offset, r.last_offset),
                    (s.first_offset, s.last_offset)
                );
            }
            Op::Gap { pid, by } => {
                let p = &model.producers[pid];
                let Some(epoch) = p.epoch else { continue };
                let r = log.append(
                    batch(pid, epoch, p.next_seq + by, 1, p.open_txn.is_some()),
                    0,
                    0,
                );
                assert!(matches!(r, Err(LogError::OutOfOrderSequence(_))), "{r:?}");
            }
            Op::Stale { pid } => {
                let p = &model.producers[pid];
                let Some(epoch) = p.epoch.filter(|&e| e > 0) else {
                    continue;
                };
                let r = log.append(batch(pid, epoch - 1, 0, 1, false), 0, 0);
                assert!(matches!(r, Err(LogError::InvalidProducerEpoch(_))), "{r:?}");
            }
            Op::Bump { pid } => {
                let p = &mut model.producers[pid];
                if p.open_txn.is_some() {
                    continue;
                }
                let epoch = p.epoch.map_or(0, |e| e + 1);
                let info = log.append(batch(pid, epoch, 0, 1, false), 0, 0).unwrap();
                assert_eq!(info.base_offset, model.log_end);
                p.epoch = Some(epoch);
                p.next_seq = 1;
                p.cached = VecDeque::from([Sent {
                    first_seq: 0,
                    records: 1,
                    first_offset: info.base_offset,
                    last_offset: info.last_offset,
                    txn: false,
                }]);
                model.log_end = info.last_offset + 1;
            }
            Op::Marker { pid, commit } => {
                let p = &mut model.producers[pid];
                let epoch = p.epoch.unwrap_or(0);
                let m = EndTxnMarker {
                    commit,
                    coordinator_epoch: 0,
                };
                let offset = log
                    .append_control(pid_of(pid), epoch, m, 0, wall_clock_ms())
                    .unwrap()
                    .base_offset;
                assert_eq!(offset, model.log_end);
                model.log_end += 1;
                if let Some(first) = p.open_txn.take() {
                    if !commit {
                        let lso = model
                            .producers
                            .iter()
                            .filter_map(|q| q.open_txn)
                            .min()
                            .unwrap_or(offset + 1);
                        model.aborted.push(AbortedTxn {
                            producer_id: pid_of(pid),
                            first_offset: first,
                            last_offset: offset,
                            last_stable_offset: lso,
                        });
                    }
                }
                model.producers[pid].epoch = Some(epoch);
            }
            Op::Flush => log.flush_now().unwrap(),
            Op::Crash => {
                // No close, no snapshot at the end: the state comes back from the last
                // snapshot (a roll or a flush) plus the replayed tail.
                drop(opened.take());
                opened = Some(open(dir.path()));
            }
            Op::Restart => {
                let (d, log) = opened.take().unwrap();
                log.close().unwrap();
                drop(d);
                opened = Some(open(dir.path()));
            }
        }
        check(&mut opened.as_mut().unwrap().1, &model);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: samsa_storage::test_support::proptest_cases(64), ..ProptestConfig::default() })]

    #[test]
    fn producer_state_matches_model_under_random_operations(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops);
    }
}
