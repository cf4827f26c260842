use kafka_protocol::ResponseError;

use super::cache::{Answered, CacheConfig, Context, FetchSessionCache};
use super::cache_tests::{key, params};
use super::client::{FetchRequestData, FetchSessionHandler};
use super::*;

fn wanted(offsets: &[(i32, i64)]) -> Vec<(PartitionKey, FetchParams)> {
    offsets
        .iter()
        .map(|&(p, o)| (key("t", p), params(o)))
        .collect()
}

fn keys(w: &[(PartitionKey, FetchParams)]) -> Vec<PartitionKey> {
    w.iter().map(|(k, _)| k.clone()).collect()
}

/// A handler whose session 77 holds partitions 0..3 at offset 0, next epoch 1.
fn in_session() -> FetchSessionHandler {
    let mut h = FetchSessionHandler::new();
    let w = wanted(&[(0, 0), (1, 0), (2, 0)]);
    h.build(w.clone());
    assert!(h.handle_response(0, 77, &keys(&w)));
    h
}

#[test]
fn the_first_request_is_a_full_fetch_asking_for_a_session() {
    let mut h = FetchSessionHandler::new();
    let w = wanted(&[(0, 5), (1, 6)]);
    let r = h.build(w.clone());
    assert_eq!(
        r,
        FetchRequestData {
            session_id: 0,
            epoch: 0,
            to_send: w,
            to_forget: vec![]
        }
    );
}

#[test]
fn a_session_once_made_sends_nothing_while_nothing_changes() {
    let mut h = in_session();
    assert_eq!(h.session_id(), 77);
    let r = h.build(wanted(&[(0, 0), (1, 0), (2, 0)]));
    assert_eq!((r.session_id, r.epoch), (77, 1));
    assert!(r.to_send.is_empty() && r.to_forget.is_empty());
    assert!(h.handle_response(0, 77, &[]));
    assert_eq!(h.build(wanted(&[(0, 0), (1, 0), (2, 0)])).epoch, 2);
}

#[test]
fn an_incremental_fetch_sends_what_changed_or_is_new_and_forgets_what_is_gone() {
    let mut h = in_session();
    let r = h.build(wanted(&[(0, 0), (1, 9), (3, 0)]));
    assert_eq!(r.to_send, wanted(&[(1, 9), (3, 0)]));
    assert_eq!(r.to_forget, vec![key("t", 2)]);
    assert!(h.handle_response(0, 77, &[key("t", 1)]));
    // What was sent is what the session holds now.
    let r = h.build(wanted(&[(0, 0), (1, 9), (3, 0)]));
    assert!(r.to_send.is_empty() && r.to_forget.is_empty());
}

#[test]
fn session_id_not_found_starts_a_new_session() {
    let mut h = in_session();
    h.build(wanted(&[(0, 0), (1, 0), (2, 0)]));
    let code = ResponseError::FetchSessionIdNotFound.code();
    assert!(!h.handle_response(code, 0, &[]));
    let r = h.build(wanted(&[(0, 0), (1, 0), (2, 0)]));
    assert_eq!((r.session_id, r.epoch, r.to_send.len()), (0, 0, 3));
}

#[test]
fn an_invalid_epoch_closes_the_session_and_asks_for_another_in_one_full_fetch() {
    let mut h = in_session();
    h.build(wanted(&[(0, 0), (1, 0), (2, 0)]));
    let code = ResponseError::InvalidFetchSessionEpoch.code();
    assert!(!h.handle_response(code, 77, &[]));
    let r = h.build(wanted(&[(0, 0), (1, 0), (2, 0)]));
    assert_eq!((r.session_id, r.epoch, r.to_send.len()), (77, 0, 3));
}

#[test]
fn a_failed_request_closes_the_session_and_asks_for_another() {
    let mut h = in_session();
    h.build(wanted(&[(0, 1), (1, 0), (2, 0)]));
    h.handle_error();
    let r = h.build(wanted(&[(0, 1), (1, 0), (2, 0)]));
    assert_eq!((r.session_id, r.epoch, r.to_send.len()), (77, 0, 3));
}

#[test]
fn a_broker_without_room_keeps_getting_full_fetches() {
    let mut h = FetchSessionHandler::new();
    let w = wanted(&[(0, 0), (1, 0)]);
    h.build(w.clone());
    assert!(h.handle_response(0, 0, &keys(&w)));
    let r = h.build(w.clone());
    assert_eq!((r.session_id, r.epoch, r.to_send.len()), (0, 0, 2));
}

#[test]
fn a_full_answer_that_omits_a_partition_is_not_used() {
    let mut h = FetchSessionHandler::new();
    let w = wanted(&[(0, 0), (1, 0)]);
    h.build(w.clone());
    assert!(!h.handle_response(0, 77, &[key("t", 0)]));
    assert_eq!(h.build(w).epoch, 0);
    assert_eq!(h.session_id(), 0);
}

#[test]
fn an_incremental_answer_naming_a_partition_outside_the_session_is_not_used() {
    let mut h = in_session();
    h.build(wanted(&[(0, 0), (1, 0), (2, 0)]));
    assert!(!h.handle_response(0, 77, &[key("x", 0)]));
    let r = h.build(wanted(&[(0, 0), (1, 0), (2, 0)]));
    assert_eq!((r.session_id, r.epoch), (77, 0));
}

#[test]
fn an_incremental_answer_without_a_session_closed_it() {
    let mut h = in_session();
    h.build(wanted(&[(0, 0), (1, 0), (2, 0)]));
    assert!(h.handle_response(0, 0, &[key("t", 0)]));
    let r = h.build(wanted(&[(0, 0), (1, 0), (2, 0)]));
    assert_eq!((r.session_id, r.epoch, r.to_send.len()), (0, 0, 3));
}

/// The two sides together: the broker reads every partition of the session while the fetcher
/// names only the one that moved, and the answers stay in step.
#[test]
fn handler_and_cache_agree_on_the_session() {
    let mut cache = FetchSessionCache::new(CacheConfig::default(), 1);
    let mut h = FetchSessionHandler::new();
    let quiet = Answered {
        high_watermark: 0,
        last_stable_offset: 0,
        log_start_offset: 0,
        error_code: 0,
        has_records: false,
        diverging_epoch: false,
        preferred_read_replica: false,
    };
    let all: Vec<(i32, i64)> = (0..20).map(|p| (p, 0)).collect();
    let r = h.build(wanted(&all));
    assert_eq!(
        cache.new_context(12, r.session_id, r.epoch, &r.to_send, &r.to_forget, 0),
        Context::Full
    );
    let id = cache.create(
        0,
        true,
        false,
        r.to_send
            .iter()
            .map(|(k, p)| (k.clone(), *p, quiet))
            .collect(),
    );
    assert!(h.handle_response(0, id, &keys(&r.to_send)));
    let mut moved = all.clone();
    moved[7].1 = 3;
    for round in 0..3 {
        let r = h.build(wanted(&moved));
        assert_eq!(r.to_send.len(), usize::from(round == 0));
        let ctx = cache.new_context(12, r.session_id, r.epoch, &r.to_send, &r.to_forget, 1);
        let Context::Incremental {
            id,
            epoch,
            partitions,
        } = ctx
        else {
            panic!("{ctx:?}")
        };
        assert_eq!(partitions.len(), 20);
        assert_eq!(partitions[7].1.fetch_offset, 3);
        let included = cache.complete(id, epoch, &vec![quiet; 20]).unwrap();
        assert!(included.iter().all(|i| !i));
        assert!(h.handle_response(0, id, &[]));
    }
}
