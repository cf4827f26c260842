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
    assert!(p.enough_replicas(1), "min.insync.replicas=1 takes it");
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
fn a_refused_isr_change_goes_back_to_the_committed_isr_and_is_asked_again() {
    let mut p = three(10, 10);
    p.on_append(11, 11);
    p.on_follower_fetch(2, 11, 2_000 + LAG_MS).unwrap();
    let shrink = p.tick(2_000 + LAG_MS).unwrap();
    p.on_alter_isr_failed(&shrink, AlterIsrFailure::Refused);
    assert_eq!(p.isr(), &IsrState::Committed(vec![1, 2, 3]));
    assert!(p.tick(2_001 + LAG_MS).is_some());
}

#[test]
fn an_isr_change_of_unknown_fate_stays_in_flight_and_is_sent_again() {
    // Follower 3 catches up; the controller takes the expansion but its answer times out.
    let mut p = LeaderPartition::new(1, config(), vec![1, 2, 3], vec![1, 2], 5, 7, 10, 10, 0);
    p.on_append(20, 20);
    p.on_follower_fetch(2, 20, 100).unwrap();
    let expand = p.on_follower_fetch(3, 20, 100).unwrap().1.unwrap();
    assert_eq!(p.tick(200), None, "in flight: nothing new to ask");
    p.on_alter_isr_failed(&expand, AlterIsrFailure::Unknown);
    assert!(p.isr().is_pending(), "the controller may have made it");
    // Follower 3 stops fetching: the high watermark must not pass it, it may be in the ISR.
    p.on_append(30, 30);
    assert_eq!(p.on_follower_fetch(2, 30, 300).unwrap().0, None);
    assert_eq!(p.high_watermark(), 20);
    assert_eq!(p.tick(400), Some(expand.clone()), "sent again");
    assert_eq!(p.tick(500), None, "once per unknown answer");
    // The retry meets the committed first attempt; the new partition state settles it.
    p.on_alter_isr_failed(&expand, AlterIsrFailure::from_error_code(95));
    p.on_partition_change(vec![1, 2, 3], vec![1, 2, 3], 5, 8);
    assert_eq!(p.isr(), &IsrState::Committed(vec![1, 2, 3]));
    assert_eq!(p.tick(600), None);
}

#[test]
fn an_answer_about_an_older_isr_change_leaves_the_one_in_flight() {
    let mut p = three(10, 10);
    p.on_append(11, 11);
    p.on_follower_fetch(2, 11, 2_000 + LAG_MS).unwrap();
    let first = p.tick(2_000 + LAG_MS).unwrap();
    p.on_alter_isr_failed(&first, AlterIsrFailure::Refused);
    let second = p.tick(2_001 + LAG_MS).unwrap();
    assert_eq!(first, second);
    // A late answer about a change of another partition state is not about this one.
    let stale = AlterIsr {
        partition_epoch: 6,
        ..first
    };
    p.on_alter_isr_failed(&stale, AlterIsrFailure::Refused);
    assert!(p.isr().is_pending());
}

#[test]
fn only_operation_not_attempted_and_ineligible_replica_say_an_isr_change_was_not_made() {
    assert_eq!(
        AlterIsrFailure::from_error_code(55),
        AlterIsrFailure::Refused
    );
    assert_eq!(
        AlterIsrFailure::from_error_code(107),
        AlterIsrFailure::Refused
    );
    for code in [-1, 41, 74, 77, 95, 7] {
        assert_eq!(
            AlterIsrFailure::from_error_code(code),
            AlterIsrFailure::Unknown
        );
    }
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
fn the_same_partition_state_published_again_keeps_the_isr_change_in_flight() {
    // Follower 3 catches up and the leader asks to add it to the ISR [1, 2].
    let mut p = LeaderPartition::new(1, config(), vec![1, 2, 3], vec![1, 2], 5, 7, 10, 10, 0);
    p.on_append(20, 20);
    assert_eq!(p.on_follower_fetch(2, 20, 100).unwrap(), (Some(20), None));
    let expand = p.on_follower_fetch(3, 20, 100).unwrap().1.unwrap();
    assert_eq!(expand.new_isr, vec![1, 2, 3]);
    // Another partition of the topic changed: the broker applies this one's state again.
    assert_eq!(p.on_partition_change(vec![1, 2, 3], vec![1, 2], 5, 7), None);
    assert!(
        p.isr().is_pending(),
        "the controller may still commit the expansion"
    );
    // So the high watermark still waits for 3.
    p.on_append(30, 30);
    assert_eq!(p.on_follower_fetch(2, 30, 200).unwrap().0, None);
    assert_eq!(p.high_watermark(), 20);
    // The controller commits it.
    assert_eq!(
        p.on_partition_change(vec![1, 2, 3], vec![1, 2, 3], 5, 8),
        None
    );
    assert_eq!(p.on_follower_fetch(3, 30, 300).unwrap().0, Some(30));
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
    /// The controller takes the oldest request in flight: commits it at the current partition
    /// epoch (the leader hears nothing until it publishes), else answers INVALID_UPDATE_VERSION.
    Deliver,
    /// The controller refuses the oldest request (INELIGIBLE_REPLICA) if its epoch is current.
    Refuse,
    /// The leader stops waiting for the oldest request, which the controller may still take.
    Timeout,
    /// The oldest request is lost for good; the leader stops waiting for it.
    Lose,
    /// The leader's image catches up with the controller.
    Publish,
    /// The leader's image is published again, unchanged.
    Republish,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u8..20).prop_map(Op::Append),
        Just(Op::Flush),
        (0u8..2, 0u8..30).prop_map(|(follower, ahead)| Op::Fetch { follower, ahead }),
        (0u16..40_000).prop_map(Op::Tick),
        Just(Op::Deliver),
        Just(Op::Refuse),
        Just(Op::Timeout),
        Just(Op::Lose),
        Just(Op::Publish),
        Just(Op::Republish),
    ]
}

/// The controller's side of the random walk: its ISR and partition epoch, the requests it has
/// not taken yet (with whether the leader still waits for each) and the state the leader last
/// published.
struct ModelController {
    isr: Vec<i32>,
    partition_epoch: i32,
    in_flight: std::collections::VecDeque<(AlterIsr, bool)>,
    published: (Vec<i32>, i32),
}

impl ModelController {
    fn sent(&mut self, alter: Option<AlterIsr>) {
        if let Some(a) = alter {
            self.in_flight.push_back((a, true));
        }
    }
}

#[test]
fn consumers_are_offered_only_in_sync_followers_that_hold_the_fetch_offset() {
    let mut p = LeaderPartition::new(
        1,
        config(),
        vec![1, 2, 3, 4],
        vec![1, 2, 3],
        5,
        7,
        10,
        10,
        1_000,
    );
    let ids = |p: &LeaderPartition, offset: i64, now: u64| {
        p.read_replica_candidates(offset, now)
            .map(|(r, _, since)| (r, since))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&p, 0, 1_000),
        vec![],
        "no follower has fetched in this epoch yet"
    );
    p.on_follower_fetch_of(2, 10, 0, 1_100, FetchedBy::eligible(-1))
        .unwrap();
    p.on_follower_fetch_of(3, 8, 5, 1_100, FetchedBy::eligible(-1))
        .unwrap();
    // Follower 4 holds everything but is not in the ISR.
    p.on_follower_fetch_of(
        4,
        10,
        0,
        1_100,
        FetchedBy {
            broker_epoch: -1,
            isr_eligible: false,
        },
    )
    .unwrap();
    assert_eq!(ids(&p, 8, 1_300), vec![(2, 200), (3, 300)]);
    assert_eq!(
        ids(&p, 9, 1_300),
        vec![(2, 200)],
        "3 does not hold offset 9 yet"
    );
    assert_eq!(
        ids(&p, 4, 1_300),
        vec![(2, 200)],
        "3 deleted offset 4 (its log starts at 5)"
    );
}

proptest! {
    /// Whatever the fetches, appends, fsyncs, clock and controller do (requests taken late,
    /// after the leader stopped waiting, refused, lost; states published late or twice): the
    /// high watermark never moves back, never passes what the leader counts of its own log, and
    /// never passes the log end offset of a member of the controller's ISR or the leader's
    /// committed one; a follower joins only holding everything below the high watermark.
    #[test]
    fn the_high_watermark_never_passes_an_in_sync_replica(ops in proptest::collection::vec(op(), 1..300)) {
        let mut p = three(0, 0);
        let mut now = 0u64;
        // Follower log end offsets: only grow within one leader epoch.
        let mut fetched = [0i64, 0];
        let mut c = ModelController {
            isr: vec![1, 2, 3],
            partition_epoch: 7,
            in_flight: Default::default(),
            published: (vec![1, 2, 3], 7),
        };
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
                    if let Some(e) = &expand {
                        let joining = *e.new_isr.last().unwrap();
                        prop_assert!(fetched[(joining - 2) as usize] >= p.high_watermark());
                    }
                    c.sent(expand);
                }
                Op::Tick(ms) => {
                    now += ms as u64;
                    let alter = p.tick(now);
                    c.sent(alter);
                }
                Op::Deliver => {
                    if let Some((a, waiting)) = c.in_flight.pop_front() {
                        if a.partition_epoch == c.partition_epoch {
                            c.isr = a.new_isr.clone();
                            c.partition_epoch += 1;
                        } else if waiting {
                            p.on_alter_isr_failed(&a, AlterIsrFailure::from_error_code(95));
                        }
                    }
                }
                Op::Refuse => {
                    if let Some((a, waiting)) = c.in_flight.pop_front() {
                        let code = if a.partition_epoch == c.partition_epoch { 107 } else { 95 };
                        if waiting {
                            p.on_alter_isr_failed(&a, AlterIsrFailure::from_error_code(code));
                        }
                    }
                }
                Op::Timeout => {
                    if let Some((a, waiting)) = c.in_flight.front_mut() {
                        if std::mem::take(waiting) {
                            p.on_alter_isr_failed(a, AlterIsrFailure::Unknown);
                        }
                    }
                }
                Op::Lose => {
                    if let Some((a, waiting)) = c.in_flight.pop_front() {
                        if waiting {
                            p.on_alter_isr_failed(&a, AlterIsrFailure::Unknown);
                        }
                    }
                }
                Op::Publish => {
                    c.published = (c.isr.clone(), c.partition_epoch);
                    p.on_partition_change(vec![1, 2, 3], c.isr.clone(), 5, c.partition_epoch);
                }
                Op::Republish => {
                    let (isr, epoch) = c.published.clone();
                    p.on_partition_change(vec![1, 2, 3], isr, 5, epoch);
                }
            }
            prop_assert!(p.high_watermark() >= hw_before);
            prop_assert!(p.high_watermark() <= p.log_end_offset());
            prop_assert!(p.high_watermark() <= local_end.max(hw_before));
            for &r in c.isr.iter().chain(p.isr().committed()) {
                if r != 1 {
                    prop_assert!(
                        p.high_watermark() <= fetched[(r - 2) as usize],
                        "hw {} past {r}'s {} with the controller's ISR {:?}, the leader's {:?}",
                        p.high_watermark(), fetched[(r - 2) as usize], c.isr, p.isr()
                    );
                }
            }
        }
    }
}

#[test]
fn an_ineligible_follower_is_not_proposed_for_the_isr() {
    // Broker 3 caught up, but the leader's metadata says it is fenced or shutting down.
    let mut p = LeaderPartition::new(1, config(), vec![1, 2, 3], vec![1, 2], 5, 7, 20, 20, 0);
    p.on_follower_fetch(2, 20, 100).unwrap();
    let ineligible = FetchedBy {
        broker_epoch: 30,
        isr_eligible: false,
    };
    let (_, expand) = p.on_follower_fetch_of(3, 20, -1, 100, ineligible).unwrap();
    assert_eq!(expand, None);
    assert!(!p.isr().is_pending());
    assert_eq!(p.follower(3).unwrap().broker_epoch, 30);
    // Once eligible, the next fetch proposes it, and the epoch it named is kept for the change.
    let (_, expand) = p
        .on_follower_fetch_of(3, 20, -1, 200, FetchedBy::eligible(31))
        .unwrap();
    assert_eq!(expand.unwrap().new_isr, vec![1, 2, 3]);
    assert_eq!(p.follower(3).unwrap().broker_epoch, 31);
}

#[test]
fn the_accessors_report_what_the_leader_was_made_with_and_what_it_appended() {
    // The broker reads these for Fetch answers, AlterPartition and metrics.
    let mut p = three(10, 8);
    assert_eq!(p.leader_epoch(), 5);
    assert_eq!(p.partition_epoch(), 7);
    assert_eq!(p.replicas(), &[1, 2, 3]);
    assert_eq!((p.log_end_offset(), p.local_end()), (10, 10));
    // Durable mode: appended to 15, on disk to 12; only what is on disk counts as its own.
    p.on_append(15, 12);
    assert_eq!((p.log_end_offset(), p.local_end()), (15, 12));
}

#[test]
fn a_partition_change_adds_followers_for_new_replicas_and_drops_removed_ones() {
    // A reassignment adds replica 4 and removes 3: the leader tracks 2 and 4, never itself.
    let mut p = three(10, 10);
    assert!(p.follower(3).is_some());
    p.on_partition_change(vec![1, 2, 4], vec![1, 2], 5, 8);
    assert!(p.follower(4).is_some(), "the new replica is followed");
    assert!(p.follower(2).is_some());
    assert!(p.follower(3).is_none(), "the removed replica is forgotten");
    assert!(
        p.follower(1).is_none(),
        "the leader is not its own follower"
    );
    assert_eq!(p.replicas(), &[1, 2, 4]);
    assert_eq!(p.partition_epoch(), 8);
    // An older or equal partition epoch is a state already seen.
    assert_eq!(
        p.on_partition_change(vec![1, 2, 3], vec![1, 2, 3], 5, 8),
        None
    );
    assert_eq!(p.replicas(), &[1, 2, 4]);
}

#[test]
fn an_isr_member_the_leader_has_no_follower_state_for_holds_the_high_watermark() {
    // The controller keeps the ISR within the replicas; should a record ever name a member
    // outside them, nothing is known of its log, and the high watermark does not move for it.
    let mut p = LeaderPartition::new(1, config(), vec![1, 2], vec![1, 2, 9], 0, 0, 0, 0, 0);
    assert_eq!(p.on_append(5, 5), None);
    assert_eq!(p.on_follower_fetch(2, 5, 10).unwrap().0, None);
    assert_eq!(p.high_watermark(), 0);
}
