use super::*;

const ACCEPT: i8 = 1;
const RELEASE: i8 = 2;
const REJECT: i8 = 3;
const RENEW: i8 = 4;

fn limits() -> ShareLimits {
    ShareLimits {
        lock_ms: 1_000,
        delivery_limit: 3,
        max_in_flight: 10,
        dead_letter: false,
    }
}

fn m(id: &str) -> MemberId {
    Arc::from(id)
}

fn data(first: i64, last: i64) -> BatchSpan {
    BatchSpan {
        first,
        last,
        skip: false,
    }
}

fn acq(first: i64, last: i64, delivery_count: i16) -> Acquired {
    Acquired {
        first,
        last,
        delivery_count,
    }
}

#[test]
fn acquires_new_records_once_and_accepts_them() {
    let mut sp = SharePartition::new(0, limits());
    assert_eq!(sp.next_fetch_offset(), Some(0));
    let a = sp.acquire(&m("a"), &[data(0, 2), data(3, 4)], 100, Limit::Records, 0);
    assert_eq!(a, vec![acq(0, 4, 1)]);
    // Nothing in flight is available: the next read starts at the end.
    assert_eq!(sp.next_fetch_offset(), Some(5));
    // Another member reading the same batches gets none of them.
    assert!(sp
        .acquire(&m("b"), &[data(0, 4)], 100, Limit::Records, 0)
        .is_empty());
    assert_eq!(sp.acknowledge("a", 0, 4, &[ACCEPT], 10), Ok(vec![]));
    assert_eq!(sp.start_offset(), 5);
    assert_eq!(sp.end(), 5);
}

#[test]
fn max_records_and_the_window_bound_acquisition() {
    let mut sp = SharePartition::new(0, limits());
    assert_eq!(
        sp.acquire(&m("a"), &[data(0, 99)], 4, Limit::Records, 0),
        vec![acq(0, 3, 1)]
    );
    assert_eq!(sp.next_fetch_offset(), Some(4));
    // The window is 10 records from the start: six more at most.
    assert_eq!(
        sp.acquire(&m("b"), &[data(4, 99)], 100, Limit::Records, 0),
        vec![acq(4, 9, 1)]
    );
    assert_eq!(sp.next_fetch_offset(), None);
    assert!(sp
        .acquire(&m("b"), &[data(10, 99)], 100, Limit::Records, 0)
        .is_empty());
    // Accepting the first records opens the window again.
    sp.acknowledge("a", 0, 3, &[ACCEPT], 0).unwrap();
    assert_eq!(sp.start_offset(), 4);
    assert_eq!(sp.next_fetch_offset(), Some(10));
    assert_eq!(
        sp.acquire(&m("a"), &[data(10, 99)], 100, Limit::Records, 0),
        vec![acq(10, 13, 1)]
    );
}

#[test]
fn a_finished_record_behind_an_open_one_does_not_move_the_start() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 0)], 100, Limit::Records, 0);
    sp.acquire(&m("b"), &[data(1, 1)], 100, Limit::Records, 0);
    sp.acknowledge("b", 1, 1, &[ACCEPT], 0).unwrap();
    assert_eq!(sp.start_offset(), 0);
    sp.acknowledge("a", 0, 0, &[ACCEPT], 0).unwrap();
    assert_eq!(sp.start_offset(), 2);
}

#[test]
fn only_the_member_holding_a_record_acknowledges_it_and_nothing_of_a_refused_batch_applies() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 1)], 100, Limit::Records, 0);
    sp.acquire(&m("b"), &[data(2, 2)], 100, Limit::Records, 0);
    assert_eq!(
        sp.acknowledge("a", 0, 2, &[ACCEPT], 0),
        Err(AckError::InvalidRecordState(2))
    );
    assert_eq!(sp.start_offset(), 0, "offsets 0 and 1 were not accepted");
    // Kafka's share-partition: past every acquired offset is INVALID_REQUEST.
    assert!(matches!(
        sp.acknowledge("a", 5, 5, &[ACCEPT], 0),
        Err(AckError::InvalidRequest(m)) if m.contains("first offset in request is past")
    ));
    assert!(matches!(
        sp.acknowledge("a", 1, 5, &[ACCEPT], 0),
        Err(AckError::InvalidRequest(m)) if m.contains("last offset in request is past")
    ));
    assert_eq!(
        sp.acknowledge("a", 1, 0, &[ACCEPT], 0),
        Err(AckError::InvalidRequest("last offset before first offset"))
    );
    assert!(matches!(
        sp.acknowledge("a", 0, 1, &[ACCEPT, ACCEPT, ACCEPT], 0),
        Err(AckError::InvalidRequest(_))
    ));
    assert_eq!(
        sp.acknowledge("a", 0, 1, &[9], 0),
        Err(AckError::InvalidType(9))
    );
    // A refused batch refuses the whole request's batches of the partition.
    assert_eq!(
        sp.acknowledge_all("a", &[(0, 0, &[ACCEPT]), (2, 2, &[ACCEPT])], 0),
        Err(AckError::InvalidRecordState(2))
    );
    assert_eq!(sp.start_offset(), 0, "the first batch was rolled back");
    sp.acknowledge("a", 0, 1, &[ACCEPT], 0).unwrap();
    assert_eq!(sp.start_offset(), 2);
}

#[test]
fn acknowledging_below_the_start_offset_is_a_no_op_as_in_kafka() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 2)], 100, Limit::Records, 0);
    sp.acknowledge("a", 0, 0, &[ACCEPT], 0).unwrap();
    assert_eq!(sp.start_offset(), 1);
    // Accepted again, or a gap there: done already, nothing happens and nothing is refused.
    assert_eq!(sp.acknowledge("a", 0, 0, &[ACCEPT], 0), Ok(vec![]));
    assert_eq!(sp.acknowledge("a", 0, 0, &[0], 0), Ok(vec![]));
    // A batch across the start offset applies to the offsets from it.
    assert_eq!(sp.acknowledge("a", 0, 1, &[ACCEPT], 0), Ok(vec![]));
    assert_eq!(sp.start_offset(), 2);
    // A record released is not acquired: INVALID_RECORD_STATE.
    sp.acknowledge("a", 2, 2, &[RELEASE], 0).unwrap();
    assert_eq!(
        sp.acknowledge("a", 2, 2, &[ACCEPT], 0),
        Err(AckError::InvalidRecordState(2))
    );
}

#[test]
fn per_offset_types_release_and_redeliver_with_a_higher_count() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 2)], 100, Limit::Records, 0);
    assert_eq!(
        sp.acknowledge("a", 0, 2, &[ACCEPT, RELEASE, ACCEPT], 0),
        Ok(vec![])
    );
    assert_eq!(sp.start_offset(), 1);
    assert_eq!(sp.next_fetch_offset(), Some(1));
    // Reading from 1 returns the batch again: only the released record is acquired.
    assert_eq!(
        sp.acquire(&m("b"), &[data(0, 2), data(3, 3)], 100, Limit::Records, 0),
        vec![acq(1, 1, 2), acq(3, 3, 1)]
    );
}

#[test]
fn a_lock_expires_and_the_record_goes_to_another_member() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 0)], 100, Limit::Records, 0);
    assert_eq!(sp.next_deadline(), Some(1_000));
    assert!(sp.expire(999).is_empty());
    assert_eq!(sp.next_fetch_offset(), Some(1));
    assert!(sp.expire(1_000).is_empty());
    assert_eq!(sp.next_fetch_offset(), Some(0));
    assert_eq!(sp.next_deadline(), None);
    // The old holder's acknowledgement is refused now.
    assert_eq!(
        sp.acknowledge("a", 0, 0, &[ACCEPT], 1_001),
        Err(AckError::InvalidRecordState(0))
    );
    assert_eq!(
        sp.acquire(&m("b"), &[data(0, 0)], 100, Limit::Records, 1_001),
        vec![acq(0, 0, 2)]
    );
    sp.acknowledge("b", 0, 0, &[ACCEPT], 1_002).unwrap();
    assert_eq!(sp.start_offset(), 1);
}

#[test]
fn renew_extends_the_lock() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 0)], 100, Limit::Records, 0);
    sp.acknowledge("a", 0, 0, &[RENEW], 900).unwrap();
    assert!(sp.expire(1_500).is_empty());
    assert_eq!(sp.next_deadline(), Some(1_900));
    sp.acknowledge("a", 0, 0, &[ACCEPT], 1_600).unwrap();
}

#[test]
fn a_member_leaving_releases_only_its_records() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 1)], 100, Limit::Records, 0);
    sp.acquire(&m("b"), &[data(2, 3)], 100, Limit::Records, 0);
    assert!(sp.release_member("a").is_empty());
    assert_eq!(sp.counts(), (2, 0));
    assert_eq!(
        sp.acquire(&m("c"), &[data(0, 3)], 100, Limit::Records, 0),
        vec![acq(0, 1, 2)]
    );
    sp.acknowledge("b", 2, 3, &[ACCEPT], 0).unwrap();
}

#[test]
fn reject_archives_at_once_and_reports_it() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 1)], 100, Limit::Records, 0);
    assert_eq!(
        sp.acknowledge("a", 0, 1, &[REJECT, ACCEPT], 0),
        Ok(vec![Archived {
            offset: 0,
            delivery_count: 1,
            reason: ArchiveReason::Rejected
        }])
    );
    assert_eq!(sp.start_offset(), 2);
    assert!(sp
        .acquire(&m("b"), &[data(0, 1)], 100, Limit::Records, 0)
        .is_empty());
}

#[test]
fn the_delivery_limit_archives_a_record_released_on_its_last_delivery() {
    // Limit 3: delivered three times, then archived, whether released by the member, by an
    // expired lock or by the member leaving.
    for how in ["release", "expire", "leave"] {
        let mut sp = SharePartition::new(0, limits());
        let mut deliveries = 0;
        let mut archived = Vec::new();
        let mut now = 0;
        while sp.start_offset() == 0 {
            let a = sp.acquire(&m("a"), &[data(0, 0)], 100, Limit::Records, now);
            assert_eq!(a.len(), 1, "{how}: acquired on delivery {}", deliveries + 1);
            deliveries += 1;
            assert_eq!(a[0].delivery_count, deliveries);
            archived.extend(match how {
                "release" => sp.acknowledge("a", 0, 0, &[RELEASE], now).unwrap(),
                "expire" => {
                    now += 1_000;
                    sp.expire(now)
                }
                _ => sp.release_member("a"),
            });
        }
        assert_eq!(deliveries, 3, "{how}");
        assert_eq!(
            archived,
            vec![Archived {
                offset: 0,
                delivery_count: 3,
                reason: ArchiveReason::DeliveryLimit
            }],
            "{how}"
        );
    }
}

#[test]
fn skipped_batches_and_gaps_are_done_without_delivery() {
    let mut sp = SharePartition::new(0, limits());
    let control = BatchSpan {
        first: 2,
        last: 2,
        skip: true,
    };
    // Offsets 3 and 4 are missing (compacted away): done too.
    let a = sp.acquire(
        &m("a"),
        &[data(0, 1), control, data(5, 5)],
        100,
        Limit::Records,
        0,
    );
    assert_eq!(a, vec![acq(0, 1, 1), acq(5, 5, 1)]);
    sp.acknowledge("a", 0, 1, &[ACCEPT], 0).unwrap();
    assert_eq!(sp.start_offset(), 5);
    // A gap the client reports inside an acquired range counts as done.
    sp.acknowledge("a", 5, 5, &[0], 0).unwrap();
    assert_eq!(sp.start_offset(), 6);
}

#[test]
fn the_window_bounds_gaps_behind_an_open_record() {
    let mut sp = SharePartition::new(0, limits());
    // Nothing in flight: offsets without records past the end cost nothing.
    assert_eq!(
        sp.acquire(&m("a"), &[data(50, 50)], 100, Limit::Records, 0),
        vec![acq(50, 50, 1)]
    );
    assert_eq!(sp.start_offset(), 50);
    // Behind an acquired record, a gap fills the window and no more is acquired.
    assert!(sp
        .acquire(&m("a"), &[data(80, 80)], 100, Limit::Records, 0)
        .is_empty());
    assert_eq!(sp.end(), 60);
    assert_eq!(sp.next_fetch_offset(), None);
    sp.acknowledge("a", 50, 50, &[ACCEPT], 0).unwrap();
    assert_eq!(sp.start_offset(), 60);
    assert_eq!(
        sp.acquire(&m("a"), &[data(80, 80)], 100, Limit::Records, 0),
        vec![acq(80, 80, 1)]
    );
}

#[test]
fn snapshot_and_restore_keep_counts_and_drop_locks() {
    let mut sp = SharePartition::new(10, limits());
    sp.acquire(&m("a"), &[data(10, 14)], 100, Limit::Records, 0);
    sp.acknowledge("a", 10, 14, &[RELEASE, ACCEPT, REJECT, ACCEPT, ACCEPT], 0)
        .unwrap();
    sp.acquire(&m("a"), &[data(15, 15)], 100, Limit::Records, 0);
    let (start, batches) = sp.snapshot();
    assert_eq!(start, 10);
    assert_eq!(
        batches,
        vec![
            StateBatch {
                first: 10,
                last: 10,
                state: PersistedState::Available,
                delivery_count: 1
            },
            StateBatch {
                first: 11,
                last: 11,
                state: PersistedState::Acknowledged,
                delivery_count: 1
            },
            StateBatch {
                first: 12,
                last: 12,
                state: PersistedState::Archived,
                delivery_count: 1
            },
            StateBatch {
                first: 13,
                last: 14,
                state: PersistedState::Acknowledged,
                delivery_count: 1
            },
            StateBatch {
                first: 15,
                last: 15,
                state: PersistedState::Available,
                delivery_count: 1
            },
        ]
    );
    let mut back = SharePartition::restore(start, &batches, limits());
    assert_eq!(back.snapshot(), (start, batches));
    // The acquired record came back available; accepted and archived ones are not delivered.
    let a = back.acquire(&m("b"), &[data(10, 16)], 100, Limit::Records, 0);
    assert_eq!(a, vec![acq(10, 10, 2), acq(15, 15, 2), acq(16, 16, 1)]);
}

#[test]
fn moving_the_start_drops_what_lies_below() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 4)], 100, Limit::Records, 0);
    sp.release_member("a");
    sp.move_start(3);
    assert_eq!(sp.start_offset(), 3);
    assert_eq!(sp.next_fetch_offset(), Some(3));
    sp.move_start(100);
    assert_eq!((sp.start_offset(), sp.end()), (100, 100));
    assert_eq!(sp.next_fetch_offset(), Some(100));
}

#[test]
fn with_a_dead_letter_topic_archived_records_wait_for_their_write() {
    let dlq = ShareLimits {
        dead_letter: true,
        ..limits()
    };
    let mut sp = SharePartition::new(0, dlq);
    sp.acquire(&m("a"), &[data(0, 2)], 100, Limit::Records, 0);
    let archived = sp
        .acknowledge("a", 0, 2, &[REJECT, ACCEPT, RELEASE], 0)
        .unwrap();
    assert_eq!(archived.len(), 1);
    // Archiving holds the start and is never delivered again.
    assert_eq!(sp.start_offset(), 0);
    assert_eq!(sp.archiving(), vec![(0, 1)]);
    assert_eq!(
        sp.acquire(&m("b"), &[data(0, 2)], 100, Limit::Records, 0),
        vec![acq(2, 2, 2)]
    );
    // It survives a restart as archiving: its write may not have happened.
    let (start, batches) = sp.snapshot();
    let mut back = SharePartition::restore(start, &batches, dlq);
    assert_eq!(back.archiving(), vec![(0, 1)]);
    assert!(back.finish_archiving(0));
    assert!(!back.finish_archiving(0), "finished once");
    assert!(!back.finish_archiving(7), "never archiving");
    assert_eq!(back.start_offset(), 2);
    assert!(sp.finish_archiving(0));
    assert_eq!(sp.archiving(), vec![]);
}

#[test]
fn a_reset_drops_everything_in_flight() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 4)], 100, Limit::Records, 0);
    sp.reset(2);
    assert_eq!((sp.start_offset(), sp.end()), (2, 2));
    assert_eq!(sp.counts(), (0, 0));
    assert_eq!(
        sp.acknowledge("a", 2, 2, &[ACCEPT], 0),
        Err(AckError::InvalidRecordState(2))
    );
    assert_eq!(
        sp.acquire(&m("b"), &[data(0, 4)], 100, Limit::Records, 0),
        vec![acq(2, 4, 1)]
    );
}

#[test]
fn new_limits_apply_to_the_next_acquisitions() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 0)], 100, Limit::Records, 0);
    sp.set_limits(ShareLimits {
        lock_ms: 5_000,
        max_in_flight: 2,
        ..limits()
    });
    assert_eq!(sp.limits().lock_ms, 5_000);
    // The record already acquired keeps its lock; a new one gets the new duration, and the
    // window is two records now.
    assert_eq!(
        sp.acquire(&m("a"), &[data(1, 5)], 100, Limit::Records, 0),
        vec![acq(1, 1, 1)]
    );
    assert_eq!(sp.next_deadline(), Some(1_000));
    assert!(sp.expire(1_000).is_empty());
    assert_eq!(sp.next_deadline(), Some(5_000));
}

#[test]
fn only_archiving_records_finish_and_their_offsets_are_absolute() {
    let dlq = ShareLimits {
        dead_letter: true,
        ..limits()
    };
    let mut sp = SharePartition::new(10, dlq);
    sp.acquire(&m("a"), &[data(10, 13)], 100, Limit::Records, 0);
    sp.acknowledge("a", 12, 12, &[REJECT], 0).unwrap();
    assert_eq!(sp.archiving(), vec![(12, 1)]);
    // An acquired record is not archiving: nothing happens to it.
    assert!(!sp.finish_archiving(11));
    sp.acknowledge("a", 11, 11, &[ACCEPT], 0).unwrap();
    assert!(sp.finish_archiving(12));
    assert_eq!(sp.archiving(), vec![]);
    sp.acknowledge("a", 10, 10, &[ACCEPT], 0).unwrap();
    assert_eq!(sp.start_offset(), 13);
}

#[test]
fn the_next_fetch_starts_at_the_first_available_record_behind_the_end() {
    let mut sp = SharePartition::new(20, limits());
    sp.acquire(&m("a"), &[data(20, 24)], 100, Limit::Records, 0);
    sp.acknowledge("a", 23, 23, &[RELEASE], 0).unwrap();
    assert_eq!(sp.next_fetch_offset(), Some(23));
    sp.acknowledge("a", 21, 21, &[RELEASE], 0).unwrap();
    assert_eq!(sp.next_fetch_offset(), Some(21));
}

#[test]
fn max_records_bounds_redeliveries_too() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 3)], 100, Limit::Records, 0);
    sp.acknowledge("a", 0, 3, &[RELEASE], 0).unwrap();
    assert_eq!(
        sp.acquire(&m("b"), &[data(0, 3)], 2, Limit::Records, 0),
        vec![acq(0, 1, 2)]
    );
    assert_eq!(
        sp.acquire(&m("c"), &[data(0, 3)], 1, Limit::Records, 0),
        vec![acq(2, 2, 2)]
    );
}

#[test]
fn a_gap_that_fills_the_window_exactly_leaves_the_next_record_for_later() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 0)], 100, Limit::Records, 0);
    // Offsets 1-9 hold nothing: the window (10) is full right before offset 10.
    assert!(sp
        .acquire(&m("a"), &[data(10, 10)], 100, Limit::Records, 0)
        .is_empty());
    assert_eq!(sp.end(), 10);
    assert_eq!(sp.next_fetch_offset(), None);
    sp.acknowledge("a", 0, 0, &[ACCEPT], 0).unwrap();
    assert_eq!(
        sp.acquire(&m("a"), &[data(10, 10)], 100, Limit::Records, 0),
        vec![acq(10, 10, 1)]
    );
}

#[test]
fn records_archived_by_expiry_or_a_leaving_member_carry_their_own_offsets() {
    // Not at the start of the window, nor at offset 0: offsets 12 and 13 of a window from 10.
    for how in ["expire", "leave"] {
        let mut sp = SharePartition::new(10, limits());
        let mut now = 0;
        let mut archived = Vec::new();
        for _ in 0..3 {
            sp.acquire(&m("keep"), &[data(10, 11)], 100, Limit::Records, now);
            let got = sp.acquire(&m("a"), &[data(12, 13)], 100, Limit::Records, now);
            assert_eq!(got.len(), 1, "{how}");
            archived.extend(match how {
                "expire" => {
                    // Only a's locks run out: keep renews its own.
                    sp.acknowledge("keep", 10, 11, &[RENEW], now + 999).unwrap();
                    now += 1_000;
                    sp.expire(now)
                }
                _ => sp.release_member("a"),
            });
        }
        let offsets: Vec<i64> = archived.iter().map(|a| a.offset).collect();
        assert_eq!(offsets, vec![12, 13], "{how}");
        assert_eq!(sp.start_offset(), 10, "{how}: 10 and 11 are still held");
    }
}

#[test]
fn moving_the_start_forward_keeps_what_is_in_flight_above_it_and_back_drops_all() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 4)], 100, Limit::Records, 0);
    // To the start itself: nothing changes.
    sp.move_start(0);
    assert_eq!((sp.start_offset(), sp.end(), sp.counts()), (0, 5, (5, 0)));
    // Forward within the window: 3 and 4 stay acquired by a.
    sp.move_start(3);
    assert_eq!((sp.start_offset(), sp.end()), (3, 5));
    assert_eq!(sp.acknowledge("a", 3, 4, &[ACCEPT], 0), Ok(vec![]));
    assert_eq!(sp.start_offset(), 5);
    // Back (an operator's reset to an earlier offset): everything in flight goes.
    sp.acquire(&m("a"), &[data(5, 6)], 100, Limit::Records, 0);
    sp.move_start(2);
    assert_eq!((sp.start_offset(), sp.end(), sp.counts()), (2, 2, (0, 0)));
    assert_eq!(sp.next_fetch_offset(), Some(2));
}

#[test]
fn record_limit_acquisition_ends_inside_a_batch_and_the_rest_stays_for_the_next_fetch() {
    // KIP-1206 record_limit: three records of a ten-record batch, exactly.
    let mut sp = SharePartition::new(0, limits());
    assert_eq!(
        sp.acquire(&m("a"), &[data(0, 9)], 3, Limit::Records, 0),
        vec![acq(0, 2, 1)]
    );
    // The rest of the batch was never acquired: the next fetch reads it from offset 3.
    assert_eq!(sp.next_fetch_offset(), Some(3));
    assert_eq!(sp.end(), 3);
    assert_eq!(
        sp.acquire(&m("b"), &[data(0, 9)], 4, Limit::Records, 0),
        vec![acq(3, 6, 1)]
    );
    // Released records inside the batch are redelivered within the limit too.
    sp.acknowledge("a", 0, 2, &[RELEASE], 1).unwrap();
    assert_eq!(sp.next_fetch_offset(), Some(0));
    assert_eq!(
        sp.acquire(&m("c"), &[data(0, 9)], 2, Limit::Records, 2),
        vec![acq(0, 1, 2)]
    );
    assert_eq!(
        sp.acquire(&m("c"), &[data(2, 9)], 2, Limit::Records, 2),
        vec![acq(2, 2, 2), acq(7, 7, 1)]
    );
}

#[test]
fn batch_optimized_acquisition_finishes_the_batch_where_the_limit_falls() {
    // batch_optimized (every v1 fetch): the limit of three falls inside the first batch,
    // which is acquired whole; the next batch is not started.
    let mut sp = SharePartition::new(
        0,
        ShareLimits {
            max_in_flight: 100,
            ..limits()
        },
    );
    assert_eq!(
        sp.acquire(&m("a"), &[data(0, 9), data(10, 14)], 3, Limit::Batches, 0),
        vec![acq(0, 9, 1)]
    );
    assert_eq!(sp.next_fetch_offset(), Some(10));
    // Below the limit at a batch's start, that batch is taken whole too.
    assert_eq!(
        sp.acquire(&m("b"), &[data(10, 14), data(15, 19)], 4, Limit::Batches, 0),
        vec![acq(10, 14, 1)]
    );
    // Released records of a batch come back as one acquisition, past the limit as well.
    sp.acknowledge("a", 0, 9, &[RELEASE], 1).unwrap();
    assert_eq!(
        sp.acquire(&m("c"), &[data(0, 9)], 2, Limit::Batches, 2),
        vec![acq(0, 9, 2)]
    );
}

#[test]
fn renew_restarts_the_lock_from_now_and_the_record_stays_with_its_member() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 1)], 100, Limit::Records, 0);
    // Renewed at 600: the lock lasts lock_ms from then, not from the acquisition.
    sp.acknowledge("a", 0, 0, &[RENEW], 600).unwrap();
    assert_eq!(
        sp.record(0).map(|r| &r.state),
        Some(&State::Acquired {
            member: m("a"),
            deadline_ms: 1_600
        })
    );
    assert_eq!(sp.record(0).map(|r| r.delivery_count), Some(1));
    // At the first deadline only the record not renewed goes back.
    assert!(sp.expire(1_000).is_empty());
    assert_eq!(sp.next_fetch_offset(), Some(1));
    assert_eq!(
        sp.acquire(&m("b"), &[data(0, 1)], 100, Limit::Records, 1_000),
        vec![acq(1, 1, 2)]
    );
    // The renewed record is still a's to acknowledge, not b's.
    assert_eq!(
        sp.acknowledge("b", 0, 0, &[ACCEPT], 1_100),
        Err(AckError::InvalidRecordState(0))
    );
    assert_eq!(sp.acknowledge("a", 0, 0, &[ACCEPT], 1_100), Ok(vec![]));
}

#[test]
fn renewing_a_record_the_member_does_not_hold_is_refused_and_changes_nothing() {
    let mut sp = SharePartition::new(0, limits());
    sp.acquire(&m("a"), &[data(0, 0)], 100, Limit::Records, 0);
    sp.acquire(&m("b"), &[data(1, 1)], 100, Limit::Records, 0);
    // Held by another member.
    assert_eq!(
        sp.acknowledge("b", 0, 0, &[RENEW], 500),
        Err(AckError::InvalidRecordState(0))
    );
    // A batch with one record not held refuses the renewal of the other too.
    assert_eq!(
        sp.acknowledge("b", 0, 1, &[RENEW], 500),
        Err(AckError::InvalidRecordState(0))
    );
    assert_eq!(sp.next_deadline(), Some(1_000));
    // No longer held: its lock expired and it went back.
    sp.expire(1_000);
    assert_eq!(
        sp.acknowledge("a", 0, 0, &[RENEW], 1_001),
        Err(AckError::InvalidRecordState(0))
    );
    assert_eq!(sp.record(0).map(|r| &r.state), Some(&State::Available));
}

#[test]
fn acknowledgement_batches_are_checked_as_kafka_checks_them_before_the_share_partition() {
    let ok = |b: &[(i64, i64, &[i8])], v2: bool, renew: bool| acknowledgements_valid(b, v2, renew);
    assert!(ok(
        &[(0, 2, &[ACCEPT]), (3, 4, &[RELEASE, REJECT])],
        false,
        false
    ));
    // RENEW: only from v2, and only in a request that says it renews.
    assert!(!ok(&[(0, 0, &[RENEW])], false, false));
    assert!(!ok(&[(0, 0, &[RENEW])], false, true));
    assert!(!ok(&[(0, 0, &[RENEW])], true, false));
    assert!(ok(&[(0, 1, &[RENEW, ACCEPT])], true, true));
    // A renewing request may also carry other types.
    assert!(ok(&[(0, 0, &[ACCEPT])], true, true));
    // Types Kafka does not define, or none.
    assert!(!ok(&[(0, 0, &[5])], true, true));
    assert!(!ok(&[(0, 0, &[-1])], true, true));
    assert!(!ok(&[(0, 0, &[])], false, false));
    // Neither one type nor one per offset; last before first.
    assert!(!ok(&[(0, 2, &[ACCEPT, ACCEPT])], false, false));
    assert!(!ok(&[(3, 2, &[ACCEPT])], false, false));
    // A batch that starts before the previous one's last offset (ending at it is allowed).
    assert!(!ok(&[(0, 4, &[ACCEPT]), (3, 5, &[ACCEPT])], false, false));
    assert!(ok(&[(0, 4, &[ACCEPT]), (4, 5, &[ACCEPT])], false, false));
}
