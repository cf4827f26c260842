//! A coordinator's write to a partition of its internal topic (`__consumer_offsets`,
//! `__transaction_state`, or a transaction marker in any partition), waited for as an acks=all
//! produce waits: the group and transaction coordinators append with required acks -1 and act
//! on a write (answer the client, move on) only once every in-sync replica has it, as Kafka's
//! coordinators do. A write only this broker holds is lost when another replica takes the
//! partition over, with the client told it succeeded.
//!
//! A write counts as replicated only by the high watermark of the leadership it was written in:
//! [`CoordinatorWrite`] keeps the leader epoch the partition had at the append, and the wait
//! asks that this broker still leads that epoch before and after reading the high watermark. A
//! leader deposed and elected again, or a replica whose high watermark now follows another
//! leader, says nothing of a write it made before (the new leader may have truncated it).
//!
//! The wait is woken by the partition's high watermark and leadership changes, so it must not
//! run where those are applied (the metadata publisher).

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;
use samsa_storage::{AppendInfo, LogError};

use crate::partition::{Partition, SyncWait};

/// How long a coordinator's write may take to reach every in-sync replica (Kafka's
/// coordinators append with acks=all within the broker's `request.timeout.ms`, 30 s).
pub const REPLICATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a coordinator's write did not become safe to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// Durable mode: the fsync of the write failed (KAFKA_STORAGE_ERROR).
    #[error("the write could not be synced to disk")]
    Storage,
    /// This broker stopped leading the partition at the epoch it wrote in
    /// (NOT_LEADER_OR_FOLLOWER): the write may be truncated by the new leader.
    #[error("this broker no longer leads the partition at the epoch it wrote in")]
    NotLeader,
    /// The in-sync replicas did not all have the write within the timeout (REQUEST_TIMED_OUT);
    /// it may still be replicated later.
    #[error("not replicated to every in-sync replica within the timeout")]
    TimedOut,
}

impl WriteError {
    /// The error an acks=all produce would have got.
    pub fn response_error(self) -> ResponseError {
        match self {
            WriteError::Storage => ResponseError::KafkaStorageError,
            WriteError::NotLeader => ResponseError::NotLeaderOrFollower,
            WriteError::TimedOut => ResponseError::RequestTimedOut,
        }
    }

    /// What a coordinator answers for it (Kafka's coordinators map append errors so:
    /// NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR to NOT_COORDINATOR, so that the client
    /// looks the coordinator up again; REQUEST_TIMED_OUT to COORDINATOR_NOT_AVAILABLE, so that
    /// it retries).
    pub fn coordinator_error(self) -> ResponseError {
        match self {
            WriteError::Storage | WriteError::NotLeader => ResponseError::NotCoordinator,
            WriteError::TimedOut => ResponseError::CoordinatorNotAvailable,
        }
    }
}

/// A write appended to a partition this broker leads, not yet known to be replicated.
#[must_use = "a coordinator acts on a write only once it is replicated"]
pub struct CoordinatorWrite {
    pub partition: Arc<Partition>,
    /// The offset after the write's last record.
    pub end_offset: i64,
    /// The epoch the partition was led at when the write was made.
    pub leader_epoch: i32,
    fsync: SyncWait,
}

impl CoordinatorWrite {
    /// Appends through `append` (one of [`Partition`]'s appends), noting the leader epoch
    /// before it: should the epoch move between the two, the write is judged by the older one
    /// and fails as not led, never the other way round.
    pub fn append(
        partition: Arc<Partition>,
        append: impl FnOnce(&Arc<Partition>) -> Result<(AppendInfo, SyncWait), LogError>,
    ) -> Result<CoordinatorWrite, LogError> {
        let leader_epoch = partition.leader_epoch();
        let (info, fsync) = append(&partition)?;
        debug_assert!(info.last_offset >= info.base_offset);
        Ok(CoordinatorWrite {
            end_offset: info.last_offset + 1,
            leader_epoch,
            fsync,
            partition,
        })
    }

    /// Whether the write is known, without waiting, to be replicated (`Some(Ok)`: no fsync to
    /// wait for, and the high watermark of its leadership passed it, as on a single node) or
    /// never to be (`Some(Err)`: the leadership it was written in is over).
    pub fn replicated_now(&self) -> Option<Result<(), WriteError>> {
        if self.fsync.is_some() {
            return None;
        }
        match self.leads_with_high_watermark() {
            None => Some(Err(WriteError::NotLeader)),
            Some(hw) if hw >= self.end_offset => Some(Ok(())),
            Some(_) => None,
        }
    }

    /// The partition's high watermark, if this broker leads it at the write's epoch before
    /// and after reading it, so that it is that leadership's (a replica that stops leading
    /// keeps its high watermark until its new leader's moves it, a fetch away).
    fn leads_with_high_watermark(&self) -> Option<i64> {
        let p = &self.partition;
        let leads = || p.is_leader() && p.leader_epoch() == self.leader_epoch;
        if !leads() {
            return None;
        }
        let high_watermark = p.high_watermark();
        leads().then_some(high_watermark)
    }

    /// Waits until the write is on disk (durable mode) and every in-sync replica holds it.
    pub async fn replicated(self) -> Result<(), WriteError> {
        self.replicated_within(REPLICATION_TIMEOUT).await
    }

    async fn replicated_within(mut self, timeout: Duration) -> Result<(), WriteError> {
        let p = &self.partition;
        if let Some(rx) = self.fsync.take() {
            let synced = rx.await;
            // The high watermark moves to what is on disk, whatever became of this fsync.
            p.synced();
            match synced {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::error!(partition = %p.tp, "fsync of a coordinator write failed: {e}");
                    return Err(WriteError::Storage);
                }
                Err(_) => return Err(WriteError::Storage),
            }
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = p.data_arrived();
            match self.leads_with_high_watermark() {
                None => return Err(WriteError::NotLeader),
                Some(hw) if hw >= self.end_offset => return Ok(()),
                Some(_) => {}
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Err(WriteError::TimedOut);
            }
        }
    }
}

/// One uncompressed v2 batch of one record, as coordinators write to their internal topics
/// (a transaction's state, a share-partition's state, a dead letter); offsets are assigned by
/// the log.
pub fn one_record_batch(
    timestamp: i64,
    key: Option<bytes::Bytes>,
    value: Option<bytes::Bytes>,
    headers: kafka_protocol::indexmap::IndexMap<
        kafka_protocol::protocol::StrBytes,
        Option<bytes::Bytes>,
    >,
) -> bytes::Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp,
        key,
        value,
        headers,
    };
    let mut buf = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        std::iter::once(&record),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("an uncompressed batch always encodes");
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::tests::led_by;
    use samsa_cluster::replication::leader::FetchedBy;
    use samsa_storage::test_support::{open_log, BatchBuilder};
    use samsa_storage::{GroupCommit, LogConfig, TopicPartition};
    use uuid::Uuid;

    /// Broker 1 leads epoch 1 of a partition replicated on brokers 1 and 2.
    fn led_partition(dir: &std::path::Path) -> Arc<Partition> {
        let tp = TopicPartition::new("__consumer_offsets", 0);
        let (_d, log) = open_log(dir, &tp, LogConfig::default());
        let p = Partition::new_replica(tp, Uuid::nil(), log, 0);
        p.apply_leadership(1, &led_by(1, 1), 30_000, 0).unwrap();
        Arc::new(p)
    }

    fn write(p: &Arc<Partition>, group_commit: &GroupCommit) -> CoordinatorWrite {
        let batch = BatchBuilder::new().records(2, 10).build();
        CoordinatorWrite::append(p.clone(), |p| p.append(batch, 0, group_commit)).unwrap()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_write_counts_once_every_in_sync_replica_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = led_partition(dir.path());
        let group_commit = GroupCommit::new();
        let w = write(&p, &group_commit);
        assert_eq!((w.end_offset, w.leader_epoch), (2, 1));
        assert_eq!(w.replicated_now(), None);
        runtime().block_on(async {
            let waiting = tokio::spawn(w.replicated());
            tokio::task::yield_now().await;
            assert!(
                !waiting.is_finished(),
                "answered before the follower had it"
            );
            p.on_follower_fetch(2, 2, -1, 0, FetchedBy::eligible(-1))
                .unwrap();
            assert_eq!(waiting.await.unwrap(), Ok(()));
        });
        let again = write(&p, &group_commit);
        p.on_follower_fetch(2, again.end_offset, -1, 0, FetchedBy::eligible(-1))
            .unwrap();
        assert_eq!(again.replicated_now(), Some(Ok(())));
    }

    #[test]
    fn a_write_the_followers_never_fetch_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = led_partition(dir.path());
        let group_commit = GroupCommit::new();
        let w = write(&p, &group_commit);
        let r = runtime().block_on(w.replicated_within(Duration::from_millis(20)));
        assert_eq!(r, Err(WriteError::TimedOut));
        assert_eq!(
            WriteError::TimedOut.coordinator_error(),
            ResponseError::CoordinatorNotAvailable
        );
    }

    #[test]
    fn a_high_watermark_of_a_later_leadership_says_nothing_of_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = led_partition(dir.path());
        let group_commit = GroupCommit::new();
        let w = write(&p, &group_commit);
        // Deposed and elected again: the new epoch's high watermark passes the offsets, but
        // the records there may be another leader's.
        p.apply_leadership(1, &led_by(2, 2), 30_000, 0).unwrap();
        p.apply_leadership(1, &led_by(1, 3), 30_000, 0).unwrap();
        p.on_follower_fetch(2, 2, -1, 0, FetchedBy::eligible(-1))
            .unwrap();
        assert!(p.high_watermark() >= w.end_offset);
        assert_eq!(w.replicated_now(), Some(Err(WriteError::NotLeader)));
        let r = runtime().block_on(w.replicated());
        assert_eq!(r, Err(WriteError::NotLeader));
        assert_eq!(
            WriteError::NotLeader.coordinator_error(),
            ResponseError::NotCoordinator
        );
    }

    #[test]
    fn a_write_whose_leader_is_deposed_while_waiting_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = led_partition(dir.path());
        let group_commit = GroupCommit::new();
        let w = write(&p, &group_commit);
        runtime().block_on(async {
            let waiting = tokio::spawn(w.replicated());
            tokio::task::yield_now().await;
            p.apply_leadership(1, &led_by(2, 2), 30_000, 0).unwrap();
            assert_eq!(waiting.await.unwrap(), Err(WriteError::NotLeader));
        });
    }
}
