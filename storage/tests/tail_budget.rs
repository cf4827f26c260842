//! The process-wide tail-cache budget (`set_tail_cache_budget`, the broker's
//! `log.tail.cache.bytes`): its own test binary, because the budget is one per process and the
//! other tests' caches must not share it.

use bytes::Bytes;
use samsa_storage::test_support::{open_log, BatchBuilder};
use samsa_storage::{
    process_cached_bytes, set_tail_cache_budget, Log, LogConfig, LogDir, TopicPartition,
};

const NOW: i64 = 1_700_000_000_000;

fn batch(value_bytes: usize) -> Bytes {
    BatchBuilder::new()
        .timestamps(NOW)
        .records(1, value_bytes)
        .build()
}

fn cached_at_tail(log: &mut Log) -> bool {
    let at = log.log_end_offset() - 1;
    log.read(at, 1 << 20, i64::MAX, true)
        .unwrap()
        .is_in_memory()
}

#[test]
fn caches_share_the_process_budget_and_give_back_what_is_over_their_share() {
    set_tail_cache_budget(1 << 20);
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut logs: Vec<(LogDir, Log)> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            open_log(
                d.path(),
                &TopicPartition::new("t", i as i32),
                LogConfig::default(),
            )
        })
        .collect();
    let one = batch(100_000).len() as u64;

    // One log alone may use the whole budget (its own limit, 4 MiB, is larger).
    for _ in 0..20 {
        logs[0].1.append(batch(100_000), 0, NOW).unwrap();
    }
    let alone = process_cached_bytes();
    assert!(alone <= 1 << 20 && alone > (1 << 20) - one, "{alone}");
    assert!(cached_at_tail(&mut logs[0].1));
    let first = logs[0].1.read(0, 1 << 20, i64::MAX, true).unwrap();
    assert!(!first.is_in_memory(), "the oldest batches went");

    // Three more logs append: each is held to a quarter of the budget.
    for (_, log) in logs.iter_mut().skip(1) {
        for _ in 0..20 {
            log.append(batch(100_000), 0, NOW).unwrap();
        }
        assert!(cached_at_tail(log));
    }
    // The first logs filled their caches while fewer caches held anything; maintenance gives
    // back what is over each one's share now.
    assert!(process_cached_bytes() > 1 << 20);
    for (_, log) in logs.iter_mut() {
        log.maintenance(NOW).unwrap();
    }
    let shared = process_cached_bytes();
    assert!(shared <= 1 << 20, "{shared}");
    assert!(shared >= 4 * ((1 << 18) - one), "{shared}");

    // A log that goes gives its bytes back.
    let (d, log) = logs.pop().unwrap();
    drop(log);
    drop(d);
    assert!(process_cached_bytes() < shared);

    // A batch larger than a cache's share is not kept at all; a budget of 0 keeps nothing.
    set_tail_cache_budget(150_000);
    logs[1].1.append(batch(100_000), 0, NOW).unwrap();
    assert!(!cached_at_tail(&mut logs[1].1));
    set_tail_cache_budget(0);
    for (_, log) in logs.iter_mut() {
        log.maintenance(NOW).unwrap();
        log.append(batch(1_000), 0, NOW).unwrap();
        assert!(!cached_at_tail(log));
    }
    assert_eq!(process_cached_bytes(), 0);
}
