//! The leader's rules, one test each, and a random walk that holds the invariants.

use proptest::prelude::*;

use super::leader::*;

const LAG_MS: u64 = 30_000;

fn config() -> LeaderConfig {
    LeaderConfig {
        replica_lag_time_max_ms: LAG_MS,
    }
}

/// Leader 1 of replicas [1, 2, 3], all in sync, epoch 5, its log ending at `leo`.
fn three(leo: i64, hw: i64) -> LeaderPartition {
    LeaderPartition::new(
        1,
        config(),
        vec![1, 2, 3],
        vec![1, 2, 3],
        5,
        7,
        leo,
        hw,
        1_000,
    )
}

#[test]
fn the_high_watermark_is_the_smallest_log_end_offset_of_the_isr() {
    let mut p = three(10, 10);
    assert_eq!(p.on_append(15, 15), None, "followers have not fetched yet");
    assert_eq!(p.on_follower_fetch(2, 12, 1_100).unwrap().0, None);
    assert_eq!(p.on_follower_fetch(3, 14, 1_100).unwrap().0, Some(12));
    assert_eq!(p.on_follower_fetch(2, 15, 1_200).unwrap().0, Some(14));
    assert_eq!(p.on_follower_fetch(3, 15, 1_200).unwrap().0, Some(15));
    assert_eq!(p.high_watermark(), 15);
}

#[test]
fn a_leader_alone_in_its_isr_moves_the_high_watermark_with_its_log() {
    let mut p = LeaderPartition::new(1, config(), vec![1, 2], vec![1], 0, 0, 0, 0, 0);
    assert_eq!(p.on_append(3, 3), Some(3));
    assert_eq!(p.acks_all(3, 1), AcksAll::Done);
    assert!(
        !p.enough_replicas(2),
        "min.insync.replicas=2 refuses the write"
    );
}

#[test]
fn a_follower_that_stops_fetching_leaves_the_isr_after_the_lag_time() {
    let mut p = three(10, 10);
    p.on_append(20, 20);
    p.on_follower_fetch(2, 20, 2_000).unwrap();
    p.on_follower_fetch(3, 12, 2_000).unwrap();
    // Follower 3 was last caught up when the leader became leader (1_000).
    assert_eq!(
        p.tick(1_000 + LAG_MS),
        None,
        "exactly the lag time is still in sync"
    );
    let shrink = p.tick(1_001 + LAG_MS).expect("a shrink");
    assert_eq!(
        shrink,
        AlterIsr {
            leader_epoch: 5,
            partition_epoch: 7,
            new_isr: vec![1, 2]
        }
    );
    assert!(p.isr().is_pending());
    assert_eq!(
        p.tick(5_000 + LAG_MS),
        None,
        "one change in flight at a time"
    );
}

#[test]
fn a_follower_at_the_leaders_log_end_is_in_sync_however_long_ago_it_fetched() {
    let mut p = three(10, 10);
    p.on_follower_fetch(2, 10, 1_000).unwrap();
    p.on_follower_fetch(3, 10, 1_000).unwrap();
    assert_eq!(
        p.tick(1_000 + 10 * LAG_MS),
        None,
        "no writes: nothing to lag behind"
    );
}

#[test]
fn a_follower_that_reached_the_previous_fetch_end_was_caught_up_at_that_fetch() {
    let mut p = three(10, 10);
    p.on_append(20, 20);
    p.on_follower_fetch(2, 15, 5_000).unwrap(); // behind: leader at 20 then
    p.on_append(30, 30);
    p.on_follower_fetch(2, 20, 9_000).unwrap(); // reached what the leader had at 5_000
    assert_eq!(p.follower(2).unwrap().last_caught_up_ms, 5_000);
    p.on_follower_fetch(2, 30, 9_500).unwrap();
    assert_eq!(p.follower(2).unwrap().last_caught_up_ms, 9_500);
}

#[test]
fn while_a_shrink_is_in_flight_the_high_watermark_still_waits_for_the_leaving_follower() {
    let mut p = three(10, 10);
    p.on_append(20, 20);
    p.on_follower_fetch(2, 20, 1_000 + LAG_MS).unwrap();
    p.on_follower_fetch(3, 10, 1_000 + LAG_MS).unwrap();
    let shrink = p.tick(2_000 + LAG_MS).unwrap();
    assert_eq!(shrink.new_isr, vec![1, 2]);
    assert_eq!(p.high_watermark(), 10, "3 is still in the maximal ISR");
    assert_eq!(
        p.on_partition_change(vec![1, 2, 3], vec![1, 2], 5, 8),
        Some(20)
    );
    assert_eq!(p.isr(), &IsrState::Committed(vec![1, 2]));
}

#[test]
fn a_failed_isr_change_goes_back_to_the_committed_isr_and_is_asked_again() {
    let mut p = three(10, 10);
    p.on_append(11, 11);
    p.on_follower_fetch(2, 11, 2_000 + LAG_MS).unwrap();
    assert!(p.tick(2_000 + LAG_MS).is_some());
    p.on_alter_isr_failed();
    assert_eq!(p.isr(), &IsrState::Committed(vec![1, 2, 3]));
    assert!(p.tick(2_001 + LAG_MS).is_some());
}

#[test]
fn a_follower_joins_once_it_reaches_the_high_watermark_and_the_leader_epoch_start() {
    // Leader since offset 10; follower 3 out of sync.
    let mut p = LeaderPartition::new(1, config(), vec![1, 2, 3], vec![1, 2], 5, 7, 10, 8, 0);
    p.on_append(20, 20);
    assert_eq!(p.on_follower_fetch(2, 20, 100).unwrap(), (Some(20), None));
    assert_eq!(
        p.on_follower_fetch(3, 9, 100).unwrap().1,
        None,
        "below the epoch start"
    );
    assert_eq!(
        p.on_follower_fetch(3, 19, 200).unwrap().1,
        None,
        "below the high watermark"
    );
    let (hw, expand) = p.on_follower_fetch(3, 20, 300).unwrap();
    assert_eq!(hw, None);
    assert_eq!(expand.unwrap().new_isr, vec![1, 2, 3]);
    // While the expansion is in flight the high watermark already waits for 3.
    p.on_append(25, 25);
    p.on_follower_fetch(2, 25, 400).unwrap();
    assert_eq!(p.high_watermark(), 20);
    assert_eq!(p.on_follower_fetch(3, 25, 400).unwrap().0, Some(25));
}

#[test]
fn acks_all_waits_for_the_high_watermark_and_checks_the_isr_again_after() {
    let mut p = three(0, 0);
    p.on_append(5, 5);
    assert_eq!(p.acks_all(5, 2), AcksAll::Waiting);
    p.on_follower_fetch(2, 5, 10).unwrap();
    p.on_follower_fetch(3, 5, 10).unwrap();
    assert_eq!(p.acks_all(5, 2), AcksAll::Done);
    p.on_partition_change(vec![1, 2, 3], vec![1], 5, 8);
    assert_eq!(p.acks_all(5, 2), AcksAll::NotEnoughReplicasAfterAppend);
    assert_eq!(p.acks_all(5, 1), AcksAll::Done);
}

#[test]
fn a_broker_that_is_no_replica_cannot_fetch_as_a_follower() {
    let mut p = three(0, 0);
    assert_eq!(
        p.on_follower_fetch(9, 0, 0),
        Err(FollowerFetchError::NotAReplica)
    );
}

#[test]
fn an_older_partition_state_does_not_undo_a_newer_one() {
    let mut p = three(0, 0);
    p.on_partition_change(vec![1, 2, 3], vec![1, 2], 5, 9);
    p.on_partition_change(vec![1, 2, 3], vec![1, 2, 3], 5, 8);
    assert_eq!(p.isr(), &IsrState::Committed(vec![1, 2]));
}

#[test]
fn a_durable_leader_counts_its_followers_records_once_it_has_fsynced_its_own() {
    // Durable mode: the leader appended up to 15 and fsynced up to 10.
    let mut p = three(10, 10);
    assert_eq!(p.on_append(15, 10), None);
    // The followers have all of it (they fetch from the leader's log, not its disk) and say so.
    assert_eq!(p.on_follower_fetch(2, 15, 1_100).unwrap().0, None);
    assert_eq!(p.on_follower_fetch(3, 15, 1_100).unwrap().0, None);
    assert_eq!(
        p.acks_all(15, 2),
        AcksAll::Waiting,
        "the leader has not fsynced"
    );
    // The leader's fsync alone moves the high watermark: the followers' fetches counted.
    assert_eq!(p.on_append(15, 15), Some(15));
    assert_eq!(p.acks_all(15, 2), AcksAll::Done);
}

#[derive(Debug, Clone)]
enum Op {
    Append(u8),
    /// The leader fsyncs its whole log (durable mode).
    Flush,
    Fetch {
        follower: u8,
        ahead: u8,
    },
    Tick(u16),
    Commit,
    Fail,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u8..20).prop_map(Op::Append),
        Just(Op::Flush),
        (0u8..2, 0u8..30).prop_map(|(follower, ahead)| Op::Fetch { follower, ahead }),
        (0u16..40_000).prop_map(Op::Tick),
        Just(Op::Commit),
        Just(Op::Fail),
    ]
}

proptest! {
    /// Whatever the fetches, appends, fsyncs, clock and controller do: the high watermark never
    /// moves back, never passes what the leader counts of its own log, and never passes the log
    /// end offset of a member of the committed ISR; a follower joins only holding everything
    /// below the high watermark.
    #[test]
    fn the_high_watermark_never_passes_an_in_sync_replica(ops in proptest::collection::vec(op(), 1..200)) {
        let mut p = three(0, 0);
        let mut now = 0u64;
        // Follower log end offsets: only grow within one leader epoch.
        let mut fetched = [0i64, 0];
        let mut partition_epoch = 7;
        // What the leader has fsynced (appends are counted only once flushed).
        let mut local_end = 0i64;
        for op in ops {
            let hw_before = p.high_watermark();
            match op {
                Op::Append(n) => { p.on_append(p.log_end_offset() + n as i64, local_end); }
                Op::Flush => {
                    local_end = p.log_end_offset();
                    p.on_append(local_end, local_end);
                }
                Op::Fetch { follower, ahead } => {
                    let i = follower as usize;
                    fetched[i] = (fetched[i] + ahead as i64).min(p.log_end_offset());
                    let (_, expand) = p.on_follower_fetch(follower as i32 + 2, fetched[i], now).unwrap();
                    if let Some(e) = expand {
                        let joining = *e.new_isr.last().unwrap();
                        prop_assert!(fetched[(joining - 2) as usize] >= p.high_watermark());
                    }
                }
                Op::Tick(ms) => { now += ms as u64; p.tick(now); }
                Op::Commit => {
                    if let IsrState::Pending { proposed, .. } = p.isr().clone() {
                        partition_epoch += 1;
                        p.on_partition_change(vec![1, 2, 3], proposed, 5, partition_epoch);
                    }
                }
                Op::Fail => p.on_alter_isr_failed(),
            }
            prop_assert!(p.high_watermark() >= hw_before);
            prop_assert!(p.high_watermark() <= p.log_end_offset());
            prop_assert!(p.high_watermark() <= local_end.max(hw_before));
            for &r in p.isr().committed() {
                if r != 1 {
                    prop_assert!(p.high_watermark() <= fetched[(r - 2) as usize], "{:?}", p.isr());
                }
            }
        }
    }
}
