use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::cache::{Answered, CacheConfig, Context, FetchSessionCache};
use super::*;

pub(super) fn key(topic: &'static str, partition: i32) -> PartitionKey {
    PartitionKey {
        topic: TopicKey::Name(StrBytes::from_static_str(topic)),
        partition,
    }
}

pub(super) fn params(fetch_offset: i64) -> FetchParams {
    FetchParams {
        fetch_offset,
        log_start_offset: -1,
        partition_max_bytes: 1 << 20,
        current_leader_epoch: 0,
        last_fetched_epoch: -1,
    }
}

fn quiet(high_watermark: i64) -> Answered {
    Answered {
        high_watermark,
        last_stable_offset: high_watermark,
        log_start_offset: 0,
        error_code: 0,
        has_records: false,
        diverging_epoch: false,
        preferred_read_replica: false,
    }
}

fn cache(max_sessions: usize) -> FetchSessionCache {
    FetchSessionCache::new(
        CacheConfig {
            max_sessions,
            eviction_ms: 1_000,
        },
        7,
    )
}

/// Partitions 0..n of topic "t", asked at offset 0 and answered with high watermark 0.
fn parts(n: i32) -> Vec<(PartitionKey, FetchParams, Answered)> {
    (0..n).map(|p| (key("t", p), params(0), quiet(0))).collect()
}

/// A session of `n` partitions of topic "t" (all at offset 0, high watermark 0), made at `now`.
fn session(c: &mut FetchSessionCache, n: i32, privileged: bool, now: u64) -> i32 {
    let id = c.create(now, privileged, false, parts(n));
    assert_ne!(id, 0, "a session was made");
    id
}

/// An incremental fetch of session `id` that changes nothing.
fn touch(c: &mut FetchSessionCache, id: i32, now: u64) -> Context {
    let epoch = c.epoch(id).expect("the session exists");
    c.new_context(12, id, epoch, &[], &[], now)
}

fn incremental_partitions(ctx: &Context) -> Vec<(PartitionKey, FetchParams)> {
    match ctx {
        Context::Incremental { partitions, .. } => partitions.clone(),
        other => panic!("not incremental: {other:?}"),
    }
}

#[test]
fn epochs_advance_by_one_and_wrap_to_one() {
    assert_eq!(next_epoch(0), 1);
    assert_eq!(next_epoch(41), 42);
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(-1), -1);
}

#[test]
fn a_full_fetch_at_epoch_zero_makes_a_session_that_expects_epoch_one() {
    let mut c = cache(10);
    let sent = [(key("t", 0), params(5))];
    assert_eq!(c.new_context(12, 0, 0, &sent, &[], 0), Context::Full);
    let id = c.create(0, false, false, vec![(key("t", 0), params(5), quiet(5))]);
    assert!(id > 0);
    assert_eq!(c.epoch(id), Some(1));
    assert_eq!((c.len(), c.partitions()), (1, 1));
}

#[test]
fn session_ids_are_distinct_and_never_zero() {
    let mut c = cache(100);
    let ids: std::collections::HashSet<i32> =
        (0..100).map(|_| session(&mut c, 1, false, 0)).collect();
    assert_eq!(ids.len(), 100);
    assert!(!ids.contains(&0));
}

#[test]
fn epoch_minus_one_is_sessionless_and_closes_the_session_it_names() {
    let mut c = cache(10);
    let id = session(&mut c, 3, false, 0);
    assert_eq!(c.new_context(12, id, -1, &[], &[], 1), Context::Sessionless);
    assert_eq!(c.epoch(id), None);
    assert_eq!((c.len(), c.partitions()), (0, 0));
    assert_eq!(
        c.new_context(12, id, 1, &[], &[], 2),
        Context::Error(ResponseError::FetchSessionIdNotFound)
    );
}

#[test]
fn a_full_fetch_naming_a_session_closes_it() {
    let mut c = cache(10);
    let id = session(&mut c, 3, false, 0);
    assert_eq!(c.new_context(12, id, 0, &[], &[], 1), Context::Full);
    assert_eq!(c.epoch(id), None);
}

#[test]
fn an_unknown_session_is_fetch_session_id_not_found() {
    let mut c = cache(10);
    assert_eq!(
        c.new_context(12, 1234, 1, &[], &[], 0),
        Context::Error(ResponseError::FetchSessionIdNotFound)
    );
}

#[test]
fn a_wrong_epoch_is_invalid_fetch_session_epoch_and_changes_nothing() {
    let mut c = cache(10);
    let id = session(&mut c, 2, false, 0);
    for wrong in [2, 7, -5] {
        assert_eq!(
            c.new_context(12, id, wrong, &[(key("t", 9), params(0))], &[], 1),
            Context::Error(ResponseError::InvalidFetchSessionEpoch)
        );
    }
    assert_eq!(c.epoch(id), Some(1));
    assert_eq!(c.partitions(), 2);
}

#[test]
fn a_session_keeps_to_names_or_to_topic_ids() {
    let mut c = cache(10);
    let by_name = session(&mut c, 1, false, 0);
    assert_eq!(
        c.new_context(13, by_name, 1, &[], &[], 1),
        Context::Error(ResponseError::FetchSessionTopicIdError)
    );
    let by_id = c.create(0, false, true, vec![(key("t", 0), params(0), quiet(0))]);
    assert_eq!(
        c.new_context(12, by_id, 1, &[], &[], 1),
        Context::Error(ResponseError::FetchSessionTopicIdError)
    );
    assert!(matches!(
        c.new_context(13, by_id, 1, &[], &[], 1),
        Context::Incremental { .. }
    ));
}

#[test]
fn versions_before_seven_have_no_sessions() {
    let mut c = cache(10);
    let id = session(&mut c, 1, false, 0);
    assert_eq!(c.new_context(6, id, 1, &[], &[], 1), Context::Sessionless);
    assert_eq!(c.epoch(id), Some(1), "untouched");
}

#[test]
fn an_incremental_fetch_reads_every_partition_of_the_session_with_its_changes() {
    let mut c = cache(10);
    let id = session(&mut c, 3, false, 0);
    let ctx = c.new_context(
        12,
        id,
        1,
        &[(key("t", 1), params(40)), (key("u", 0), params(7))],
        &[],
        1,
    );
    let Context::Incremental { id: got, epoch, .. } = &ctx else {
        panic!("{ctx:?}")
    };
    assert_eq!((*got, *epoch), (id, 2));
    assert_eq!(
        incremental_partitions(&ctx),
        vec![
            (key("t", 0), params(0)),
            (key("t", 1), params(40)),
            (key("t", 2), params(0)),
            (key("u", 0), params(7)),
        ],
        "changed in place, added at the end"
    );
    assert_eq!(c.partitions(), 4);
    assert_eq!(c.epoch(id), Some(2));
}

#[test]
fn forgotten_partitions_leave_the_session() {
    let mut c = cache(10);
    let id = session(&mut c, 3, false, 0);
    let ctx = c.new_context(12, id, 1, &[], &[key("t", 1), key("x", 0)], 1);
    assert_eq!(
        incremental_partitions(&ctx),
        vec![(key("t", 0), params(0)), (key("t", 2), params(0))]
    );
    assert_eq!(c.partitions(), 2);
    // A forgotten partition named again comes back at the end.
    let ctx = c.new_context(12, id, 2, &[(key("t", 1), params(3))], &[], 2);
    assert_eq!(
        incremental_partitions(&ctx),
        vec![
            (key("t", 0), params(0)),
            (key("t", 2), params(0)),
            (key("t", 1), params(3))
        ]
    );
}

#[test]
fn forgetting_every_partition_closes_the_session() {
    let mut c = cache(10);
    let id = session(&mut c, 2, false, 0);
    assert_eq!(
        c.new_context(12, id, 1, &[], &[key("t", 0), key("t", 1)], 1),
        Context::Sessionless
    );
    assert_eq!((c.len(), c.partitions()), (0, 0));
}

#[test]
fn an_incremental_answer_holds_only_partitions_with_something_new() {
    let mut c = cache(10);
    let id = session(&mut c, 9, false, 0);
    let ctx = touch(&mut c, id, 1);
    let Context::Incremental { epoch, .. } = ctx else {
        panic!()
    };
    let mut answers = vec![quiet(0); 9];
    answers[1].has_records = true;
    answers[2].error_code = ResponseError::NotLeaderOrFollower.code();
    answers[3].high_watermark = 4;
    answers[4].last_stable_offset = 3;
    answers[5].log_start_offset = 2;
    answers[6].diverging_epoch = true;
    answers[7].preferred_read_replica = true;
    let included = c.complete(id, epoch, &answers).unwrap();
    assert_eq!(
        included,
        vec![false, true, true, true, true, true, true, true, false]
    );
    // The same answers again: only records, errors, diverging epochs and preferred read
    // replicas are news now.
    let ctx = touch(&mut c, id, 2);
    let Context::Incremental {
        epoch, partitions, ..
    } = ctx
    else {
        panic!()
    };
    // Partition 1 returned records, so it is last now.
    assert_eq!(partitions.last().unwrap().0, key("t", 1));
    let again: Vec<Answered> = partitions
        .iter()
        .map(|(k, _)| answers[k.partition as usize])
        .collect();
    let included = c.complete(id, epoch, &again).unwrap();
    let named: Vec<i32> = partitions
        .iter()
        .zip(&included)
        .filter(|(_, &i)| i)
        .map(|(k, _)| k.0.partition)
        .collect();
    assert_eq!(named, vec![2, 6, 7, 1]);
    // The error gone: partition 2 is news once more, then quiet.
    let ctx = touch(&mut c, id, 3);
    let Context::Incremental {
        epoch, partitions, ..
    } = ctx
    else {
        panic!()
    };
    let cleared: Vec<Answered> = partitions.iter().map(|_| quiet(0)).collect();
    let included = c.complete(id, epoch, &cleared).unwrap();
    let named: Vec<i32> = partitions
        .iter()
        .zip(&included)
        .filter(|(_, &i)| i)
        .map(|(k, _)| k.0.partition)
        .collect();
    assert_eq!(named, vec![2, 3, 4, 5], "back to what partition 0 says");
}

#[test]
fn partitions_that_returned_records_move_to_the_end_in_order() {
    let mut c = cache(10);
    let id = session(&mut c, 5, false, 0);
    let Context::Incremental { epoch, .. } = touch(&mut c, id, 1) else {
        panic!()
    };
    let mut answers = vec![quiet(0); 5];
    answers[0].has_records = true;
    answers[2].has_records = true;
    c.complete(id, epoch, &answers).unwrap();
    let order: Vec<i32> = incremental_partitions(&touch(&mut c, id, 2))
        .iter()
        .map(|(k, _)| k.partition)
        .collect();
    assert_eq!(order, vec![1, 3, 4, 0, 2]);
}

#[test]
fn a_request_of_the_session_in_between_makes_the_earlier_answer_invalid() {
    let mut c = cache(10);
    let id = session(&mut c, 2, false, 0);
    let Context::Incremental { epoch: first, .. } = touch(&mut c, id, 1) else {
        panic!()
    };
    // The next request arrives before the first is answered (a long poll still waiting).
    let Context::Incremental { epoch: second, .. } = touch(&mut c, id, 2) else {
        panic!()
    };
    assert_eq!(
        c.complete(id, first, &[quiet(0), quiet(0)]),
        Err(ResponseError::InvalidFetchSessionEpoch)
    );
    assert!(c.complete(id, second, &[quiet(0), quiet(0)]).is_ok());
    c.new_context(12, id, -1, &[], &[], 3);
    assert_eq!(
        c.complete(id, second, &[quiet(0), quiet(0)]),
        Err(ResponseError::FetchSessionIdNotFound)
    );
}

#[test]
fn a_full_cache_makes_no_session_when_nothing_may_be_evicted() {
    let mut c = cache(2);
    session(&mut c, 5, true, 0);
    session(&mut c, 5, true, 0);
    // Young followers' sessions: neither a consumer's nor a follower's may take their place.
    assert_eq!(c.create(10, false, false, parts(1)), 0);
    assert_eq!(c.create(10, true, false, parts(1)), 0);
    assert_eq!((c.len(), c.evictions()), (2, 0));
}

#[test]
fn a_session_unused_for_the_eviction_time_goes_first_whoever_asks() {
    let mut c = cache(2);
    let old = session(&mut c, 100, true, 0);
    let used = session(&mut c, 100, true, 0);
    touch(&mut c, used, 900);
    // At 1001 the first was unused for more than 1000 ms: even a consumer's session of one
    // partition takes its place.
    let new = c.create(1_001, false, false, parts(1));
    assert_ne!(new, 0);
    assert_eq!(c.epoch(old), None);
    assert_eq!(c.epoch(used), Some(2));
    assert_eq!((c.evictions(), c.partitions()), (1, 101));
}

#[test]
fn a_followers_session_evicts_a_young_consumers_session() {
    let mut c = cache(1);
    let consumer = session(&mut c, 50, false, 0);
    let follower = session(&mut c, 1, true, 10);
    assert_eq!(c.epoch(consumer), None);
    assert_eq!(c.epoch(follower), Some(1));
    assert_eq!(c.evictions(), 1);
}

#[test]
fn a_consumers_session_evicts_only_an_aged_smaller_consumers_session() {
    let mut c = cache(1);
    let first = session(&mut c, 10, false, 0);
    // Young: not evictable by a consumer, however large.
    assert_eq!(c.create(500, false, false, parts(20)), 0);
    // Used at 1500, 1500 ms after its creation: aged, but not stale.
    touch(&mut c, first, 1_500);
    assert_eq!(
        c.create(1_600, false, false, parts(10)),
        0,
        "a tie keeps the old one"
    );
    assert_eq!(
        c.create(1_600, false, false, parts(9)),
        0,
        "a smaller one does not evict"
    );
    let second = c.create(1_600, false, false, parts(11));
    assert_ne!(second, 0);
    assert_eq!(c.epoch(first), None);
}

#[test]
fn a_followers_session_is_evicted_only_by_a_larger_followers_once_aged() {
    let mut c = cache(1);
    let follower = session(&mut c, 10, true, 0);
    touch(&mut c, follower, 1_500);
    assert_eq!(
        c.create(1_600, false, false, parts(500)),
        0,
        "never by a consumer's before it is stale"
    );
    assert_ne!(c.create(1_600, true, false, parts(11)), 0);
    assert_eq!(c.epoch(follower), None);
}

#[test]
fn no_slots_means_no_sessions() {
    let mut c = cache(0);
    assert_eq!(c.create(0, true, false, parts(1)), 0);
    assert!(c.is_empty());
}
