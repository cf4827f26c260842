//! The follower's handling of its leader's answers.

use super::follower::*;

fn answer(hw: i64) -> FetchAnswer {
    FetchAnswer {
        error: FetchError::None,
        high_watermark: hw,
        log_start_offset: 0,
        diverging_epoch: None,
        records: None,
    }
}

#[test]
fn records_are_appended_and_the_high_watermark_is_capped_at_the_follower_log() {
    let mut f = FollowerPartition::new(1, 3, 10, 2, 10);
    let mut a = answer(25);
    a.records = Some(Records {
        base_offset: 10,
        next_offset: 20,
        last_epoch: 3,
    });
    assert_eq!(
        f.on_answer(&a, |_| None),
        vec![Step::Append, Step::HighWatermark(20)]
    );
    assert_eq!((f.fetch_offset, f.last_fetched_epoch), (20, 3));
    let mut b = answer(25);
    b.records = Some(Records {
        base_offset: 20,
        next_offset: 30,
        last_epoch: 3,
    });
    assert_eq!(
        f.on_answer(&b, |_| None),
        vec![Step::Append, Step::HighWatermark(25)]
    );
    assert_eq!(f.on_answer(&answer(25), |_| None), vec![], "nothing new");
}

#[test]
fn a_diverging_epoch_truncates_to_where_both_logs_agree_and_appends_nothing() {
    // The follower has epoch 2 up to offset 15; the new leader ended epoch 2 at 12.
    let mut f = FollowerPartition::new(2, 4, 15, 2, 11);
    let mut a = answer(12);
    a.diverging_epoch = Some((2, 12));
    a.records = Some(Records {
        base_offset: 15,
        next_offset: 18,
        last_epoch: 4,
    });
    let steps = f.on_answer(&a, |e| (e == 2).then_some((2, 15)));
    assert_eq!(steps, vec![Step::Truncate(12)]);
    assert_eq!(
        (f.fetch_offset, f.last_fetched_epoch, f.high_watermark),
        (12, 2, 11)
    );
}

#[test]
fn a_diverging_epoch_the_follower_never_had_truncates_to_its_own_end_of_an_earlier_one() {
    // The leader says epoch 3 ended at 20, but this follower's last epoch before 3 is 1,
    // ending at 8: everything after 8 may differ.
    let mut f = FollowerPartition::new(2, 4, 30, 3, 5);
    let mut a = answer(5);
    a.diverging_epoch = Some((3, 20));
    assert_eq!(f.on_answer(&a, |_| Some((1, 8))), vec![Step::Truncate(8)]);
    assert_eq!(f.last_fetched_epoch, 1);
}

#[test]
fn a_follower_behind_the_leaders_log_start_starts_over_there() {
    let mut f = FollowerPartition::new(1, 3, 10, 2, 10);
    let mut a = answer(500);
    a.error = FetchError::OffsetOutOfRange;
    a.log_start_offset = 400;
    assert_eq!(
        f.on_answer(&a, |_| None),
        vec![Step::TruncateFullyAndStartAt(400)]
    );
    assert_eq!((f.fetch_offset, f.last_fetched_epoch), (400, -1));
}

#[test]
fn a_follower_ahead_of_the_leaders_log_end_keeps_what_is_committed() {
    let mut f = FollowerPartition::new(1, 3, 90, 2, 60);
    let mut a = answer(70);
    a.error = FetchError::OffsetOutOfRange;
    a.log_start_offset = 5;
    assert_eq!(f.on_answer(&a, |_| None), vec![Step::Truncate(70)]);
    assert_eq!(f.high_watermark, 60);
}

#[test]
fn an_out_of_range_answer_without_the_leaders_log_start_is_asked_again() {
    let mut f = FollowerPartition::new(1, 3, 10, 2, 10);
    let mut a = answer(10);
    a.error = FetchError::OffsetOutOfRange;
    a.log_start_offset = -1;
    assert_eq!(f.on_answer(&a, |_| None), vec![Step::Backoff]);
    assert_eq!(f.fetch_offset, 10);
}

#[test]
fn leadership_errors_wait_for_the_metadata_and_others_back_off() {
    let mut f = FollowerPartition::new(1, 3, 10, 2, 10);
    let mut a = answer(10);
    a.error = FetchError::LeadershipChanged;
    assert_eq!(f.on_answer(&a, |_| None), vec![Step::AwaitLeadership]);
    a.error = FetchError::Retriable;
    assert_eq!(f.on_answer(&a, |_| None), vec![Step::Backoff]);
    assert_eq!(f.fetch_offset, 10);
}

#[test]
fn a_batch_starting_inside_the_follower_log_is_not_appended() {
    let mut f = FollowerPartition::new(1, 3, 10, 2, 10);
    let mut a = answer(10);
    a.records = Some(Records {
        base_offset: 8,
        next_offset: 12,
        last_epoch: 3,
    });
    assert_eq!(f.on_answer(&a, |_| None), vec![Step::Backoff]);
}

#[test]
fn after_a_truncation_the_follower_resumes_at_its_logs_real_end() {
    // The leader says epoch 2 ended at 12, but the batch holding 10..13 straddles it: the log
    // removes it whole and ends at 10, with a last batch of epoch 1.
    let mut f = FollowerPartition::new(2, 4, 15, 2, 9);
    let mut a = answer(9);
    a.diverging_epoch = Some((2, 12));
    assert_eq!(
        f.on_answer(&a, |e| (e == 2).then_some((2, 15))),
        vec![Step::Truncate(12)]
    );
    f.resync(10, 1);
    assert_eq!(
        (f.fetch_offset, f.last_fetched_epoch, f.high_watermark),
        (10, 1, 9)
    );
}

#[test]
fn a_follower_whose_log_ends_with_an_epoch_it_never_wrote_settles_on_its_last_written_one() {
    // This broker led epoch 4 from offset 175 without writing anything: its epoch cache ends
    // with (4, 175), its last batch is of epoch 3. The new leader never had epoch 4.
    let own_end_for_epoch = |e: i32| match e {
        3 => Some((3, 175)),
        4.. => Some((4, 175)),
        _ => None,
    };
    let mut f = FollowerPartition::new(3, 8, 175, 4, 175);
    let mut a = answer(604);
    a.diverging_epoch = Some((3, 175));
    assert_eq!(
        f.on_answer(&a, own_end_for_epoch),
        vec![Step::Truncate(175)],
        "a truncation at the log end, which drops the empty epoch"
    );
    f.resync(175, 3);
    assert_eq!((f.fetch_offset, f.last_fetched_epoch), (175, 3));
    // The leader agrees on epoch 3 ending at 175 and sends what follows.
    let mut b = answer(604);
    b.records = Some(Records {
        base_offset: 175,
        next_offset: 232,
        last_epoch: 5,
    });
    assert_eq!(
        f.on_answer(&b, |e| (e == 3).then_some((3, 175))),
        vec![Step::Append, Step::HighWatermark(232)]
    );
    assert_eq!(f.last_fetched_epoch, 5);
}

#[test]
fn out_of_range_at_a_log_start_of_zero_truncates_to_the_high_watermark() {
    // Ahead of a leader whose log starts at 0 (an unclean election left it shorter): keep
    // what is committed. A start of 0 is an answer, not a missing one.
    let mut f = FollowerPartition::new(1, 3, 10, 2, 6);
    let mut a = answer(5);
    a.error = FetchError::OffsetOutOfRange;
    a.log_start_offset = 0;
    assert_eq!(f.on_answer(&a, |_| None), vec![Step::Truncate(5)]);
    assert_eq!(f.high_watermark, 5);
    // Without a log start in the answer: ask again.
    a.log_start_offset = -1;
    assert_eq!(f.on_answer(&a, |_| None), vec![Step::Backoff]);
}

#[test]
fn out_of_range_exactly_at_the_leader_log_start_is_ahead_not_behind() {
    // fetch_offset == the leader's log start: this follower is not behind the start (it
    // holds nothing the leader deleted), so it keeps its log and truncates to the high
    // watermark's side, never starting over.
    let mut f = FollowerPartition::new(1, 3, 10, 2, 10);
    let mut a = answer(8);
    a.error = FetchError::OffsetOutOfRange;
    a.log_start_offset = 10;
    assert_eq!(f.on_answer(&a, |_| None), vec![Step::Truncate(10)]);
    // One behind the start: everything it has is gone at the leader.
    let mut g = FollowerPartition::new(1, 3, 9, 2, 9);
    assert_eq!(
        g.on_answer(&a, |_| None),
        vec![Step::TruncateFullyAndStartAt(10)]
    );
    assert_eq!((g.fetch_offset, g.last_fetched_epoch), (10, -1));
}

#[test]
fn a_diverging_epoch_this_follower_never_had_truncates_to_its_older_epoch() {
    // The leader says epoch 3 diverges at 14; this follower's largest epoch not above 3 is 1,
    // which it ends at 12: truncate to 12 and name epoch 1 in the next fetch.
    let mut f = FollowerPartition::new(2, 5, 16, 4, 12);
    let mut a = answer(12);
    a.diverging_epoch = Some((3, 14));
    assert_eq!(
        f.on_answer(&a, |e| (e == 3).then_some((1, 12))),
        vec![Step::Truncate(12)]
    );
    assert_eq!((f.fetch_offset, f.last_fetched_epoch), (12, 1));
    // No epoch at all at or below the leader's: the log goes, and the fetch names none.
    let mut g = FollowerPartition::new(2, 5, 16, 4, 12);
    assert_eq!(g.on_answer(&a, |_| None), vec![Step::Truncate(0)]);
    assert_eq!(
        (g.fetch_offset, g.last_fetched_epoch, g.high_watermark),
        (0, -1, 0)
    );
    // An epoch cache that answers above what was asked breaks its contract: the fetch names
    // no epoch rather than one the leader never asked about.
    let mut h = FollowerPartition::new(2, 5, 16, 4, 12);
    assert_eq!(h.on_answer(&a, |_| Some((4, 16))), vec![Step::Truncate(14)]);
    assert_eq!(h.last_fetched_epoch, -1);
}

#[test]
fn an_empty_record_span_at_the_fetch_offset_appends_nothing() {
    let mut f = FollowerPartition::new(1, 3, 10, 2, 10);
    let mut a = answer(10);
    a.records = Some(Records {
        base_offset: 10,
        next_offset: 10,
        last_epoch: 3,
    });
    assert_eq!(f.on_answer(&a, |_| None), vec![]);
    assert_eq!((f.fetch_offset, f.last_fetched_epoch), (10, 2));
}
