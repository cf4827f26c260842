//! One partition as a follower replicates it: Kafka's `AbstractFetcherThread` partition state,
//! sans-IO. The follower fetches from its leader at its log end offset with the epoch of its
//! last record (Fetch v12+, KIP-320); the leader answers records, or a diverging epoch when the
//! follower's log has records the leader's never had at that epoch (a follower of an old
//! leader that appended what was never committed). Then the follower truncates to where the
//! two logs agree before it fetches again, so that an ISR member never holds a record the
//! leader lacks below the high watermark (KIP-101, KIP-279).
//!
//! What this decides from each answer, the caller does to the log: truncate, append the
//! records as the leader numbered them, and take the leader's high watermark, capped at its own
//! log end offset.

use crate::NodeId;

/// The follower's view of one partition it replicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerPartition {
    pub leader: NodeId,
    /// The leader epoch this broker follows at; fetches carry it as `current_leader_epoch`.
    pub leader_epoch: i32,
    /// Where the next fetch starts: the follower's log end offset.
    pub fetch_offset: i64,
    /// The epoch of the follower's last record (-1: an empty log), sent as `last_fetched_epoch`.
    pub last_fetched_epoch: i32,
    pub high_watermark: i64,
}

/// One partition's part of a leader's Fetch answer, as the follower reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchAnswer {
    pub error: FetchError,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    /// KIP-320: the leader's end of the follower's last epoch, when the logs diverge there.
    pub diverging_epoch: Option<(i32, i64)>,
    /// The base offset of the first batch returned and the offset after the last one, with the
    /// epoch of the last batch, when there are records.
    pub records: Option<Records>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Records {
    pub base_offset: i64,
    pub next_offset: i64,
    pub last_epoch: i32,
}

/// The Kafka errors a follower's fetch may meet, in the classes it treats alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchError {
    None,
    /// OFFSET_OUT_OF_RANGE: the fetch offset is outside the leader's log.
    OffsetOutOfRange,
    /// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID...:
    /// the leadership moved; wait for the metadata to say where.
    LeadershipChanged,
    /// Anything else: back off and fetch again.
    Retriable,
}

/// What the caller does to the log, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Drop every record at and after the offset (and the epochs that start there).
    Truncate(i64),
    /// Drop the whole log and start it empty at the offset (the leader's log start is past
    /// ours).
    TruncateFullyAndStartAt(i64),
    /// Append the records of the answer as the leader numbered them.
    Append,
    /// The new high watermark.
    HighWatermark(i64),
    /// Stop fetching this partition until the metadata image names its leader.
    AwaitLeadership,
    /// Fetch again after a pause.
    Backoff,
}

impl FollowerPartition {
    /// Starts following `leader` at `leader_epoch` with a log that ends at `log_end_offset`
    /// with a record of epoch `last_epoch` (-1: empty).
    pub fn new(
        leader: NodeId,
        leader_epoch: i32,
        log_end_offset: i64,
        last_epoch: i32,
        high_watermark: i64,
    ) -> FollowerPartition {
        FollowerPartition {
            leader,
            leader_epoch,
            fetch_offset: log_end_offset,
            last_fetched_epoch: last_epoch,
            high_watermark: high_watermark.min(log_end_offset),
        }
    }

    /// After a truncation, the log's own end and last epoch: a truncation removes whole batches,
    /// so the log may end before the offset asked for, and fetching must resume where it does
    /// end (else the next append would leave a gap). The truncation also drops the epochs that
    /// start at or after the offset, even where it removes no record (an epoch a broker began
    /// as leader at its log end without writing): the last epoch is that of the last record
    /// kept, or the follower would name the empty epoch again and diverge there forever.
    pub fn resync(&mut self, log_end_offset: i64, last_epoch: i32) {
        self.fetch_offset = log_end_offset;
        self.last_fetched_epoch = last_epoch;
        self.high_watermark = self.high_watermark.min(log_end_offset);
    }

    /// Applies the leader's answer to a fetch at `self.fetch_offset`; `own_end_for_epoch`
    /// gives, for an epoch, the largest epoch of the follower's own log not above it and that
    /// epoch's end offset (its leader-epoch cache), used to find where the logs agree after a
    /// divergence.
    pub fn on_answer(
        &mut self,
        answer: &FetchAnswer,
        own_end_for_epoch: impl Fn(i32) -> Option<(i32, i64)>,
    ) -> Vec<Step> {
        match answer.error {
            FetchError::None => {}
            FetchError::LeadershipChanged => return vec![Step::AwaitLeadership],
            FetchError::Retriable => return vec![Step::Backoff],
            FetchError::OffsetOutOfRange => {
                let start = answer.log_start_offset;
                if start < 0 {
                    // The answer does not say where the leader's log starts: ask again.
                    return vec![Step::Backoff];
                }
                if self.fetch_offset < start {
                    // Kafka's `handleOutOfRangeError`, behind the leader's log start: what
                    // this follower has is gone there, start over from it.
                    self.fetch_offset = start;
                    self.last_fetched_epoch = -1;
                    self.high_watermark = self.high_watermark.min(start);
                    return vec![Step::TruncateFullyAndStartAt(start)];
                }
                // Ahead of the leader's log end, which only an unclean election leaves (the
                // diverging epoch handles the rest): keep what is committed, below the high
                // watermark, and drop the rest (Kafka truncates to the leader's end, which it
                // asks for with ListOffsets; the high watermark is at or below it). The
                // caller resyncs the fetch offset with the log it truncated.
                let to = answer.high_watermark.max(start);
                self.high_watermark = self.high_watermark.min(to);
                return vec![Step::Truncate(to)];
            }
        }
        let mut steps = Vec::new();
        if let Some((epoch, end_offset)) = answer.diverging_epoch {
            // KIP-320: truncate to the smaller of the leader's end of that epoch and our own
            // end of the largest epoch not above it (Kafka's `truncateOnFetchResponse`).
            let ours = own_end_for_epoch(epoch);
            // Where our largest epoch not above it is an older one, the next fetch names that
            // epoch and the leader says where it diverges there, if it does (Kafka truncates to
            // our end of it and goes another round; the smaller offset here only saves a
            // fetch of records that would be truncated).
            let to = match ours {
                Some((_, our_end)) => our_end.min(end_offset),
                None => 0,
            }
            .min(self.fetch_offset);
            self.fetch_offset = to;
            self.last_fetched_epoch = match ours {
                Some((e, _)) if e <= epoch => e,
                _ => -1,
            };
            self.high_watermark = self.high_watermark.min(to);
            steps.push(Step::Truncate(to));
            // Records in the same answer are for the old fetch position: fetch again.
            return steps;
        }
        if let Some(r) = answer.records {
            // Whole batches from the fetch offset on; one that starts inside this log cannot be
            // appended (it would rewrite offsets this follower has).
            if r.base_offset < self.fetch_offset {
                return vec![Step::Backoff];
            }
            if r.next_offset > self.fetch_offset {
                steps.push(Step::Append);
                self.fetch_offset = r.next_offset;
                self.last_fetched_epoch = r.last_epoch;
            }
        }
        // The follower's high watermark is the leader's, capped at what the follower holds.
        let hw = answer.high_watermark.min(self.fetch_offset);
        if hw != self.high_watermark {
            self.high_watermark = hw;
            steps.push(Step::HighWatermark(hw));
        }
        steps
    }
}
