//! The transaction state machine of one transactional id, sans I/O (Kafka's
//! `TransactionMetadata` and the decisions of its `TransactionCoordinator`): each function
//! takes the current metadata and a request and returns the metadata to write to
//! `__transaction_state` (the caller applies it only once the write succeeded) or the Kafka
//! error to answer. No clocks are read and nothing is written here.
//!
//! States and transitions (TV1, the protocol every client speaks when the broker does not
//! advertise `transaction.version` 2):
//!
//! ```text
//! Empty/CompleteCommit/CompleteAbort --AddPartitions/AddOffsets--> Ongoing
//! Ongoing --EndTxn(commit)--> PrepareCommit --markers written--> CompleteCommit
//! Ongoing --EndTxn(abort) / timeout / InitProducerId--> PrepareAbort --markers--> CompleteAbort
//! Empty/Complete* --InitProducerId--> Empty (epoch + 1, or a new producer id once exhausted)
//! Empty/Complete* --transactional.id.expiration.ms--> removed (tombstone)
//! ```
//!
//! A timed-out transaction, and one open when a new producer calls InitProducerId, is aborted
//! with the epoch bumped (Kafka's `PrepareEpochFence`, which Kafka never writes to the log
//! either): the old producer's next request is fenced.
//!
//! Transaction version 2 (KIP-890 part 2), chosen per request by the client's versions (EndTxn
//! v5+, Produce v12+ and AddPartitionsToTxn v4+, which a client sends once the cluster
//! finalizes `transaction.version` 2): partitions join the transaction through the produce
//! itself; every commit and abort bumps the producer epoch (the markers carry the new one, so
//! a zombie's late write is fenced by the partition), and EndTxn answers with the epoch (or,
//! once the epoch runs out, the new producer id) to use next. A retried EndTxn is recognised by
//! the epoch it still carries, one behind.

use std::collections::BTreeSet;

use kafka_protocol::ResponseError;

/// Partitions one transaction may span.
pub const TXN_PARTITIONS_MAX: usize = 100_000;

/// Kafka's `TransactionState`, with its ids and names (as DescribeTransactions reports them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    Dead,
    PrepareEpochFence,
}

impl TxnState {
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
        TxnState::PrepareEpochFence,
    ];

    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: i8) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.id() == id)
    }

    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    pub fn from_name(name: &str) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.name() == name)
    }

    /// States from which a transactional id may expire.
    fn is_expiration_allowed(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }

    fn is_prepare(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }
}

/// What the coordinator knows of one transactional id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    /// The producer id before the last rotation (-1: none), so a retried InitProducerId that
    /// rotated can be recognised.
    pub last_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last InitProducerId bump (-1: a new producer took over).
    pub last_producer_epoch: i16,
    pub txn_timeout_ms: i32,
    pub state: TxnState,
    /// Partitions in the transaction: (topic, partition).
    pub partitions: BTreeSet<(String, i32)>,
    /// When the transaction began (its first partition was added); -1 when none.
    pub txn_start_ms: i64,
    pub txn_last_update_ms: i64,
    /// The producer id the ongoing transaction's completion hands out (transaction version 2,
    /// when EndTxn found the epoch exhausted); -1 otherwise. Kafka's `nextProducerId`.
    pub next_producer_id: i64,
    /// Whether the client of the last transition speaks transaction version 2 (Kafka's
    /// `clientTransactionVersion`).
    pub tv2: bool,
}

/// Why a request was refused, as a Kafka error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    #[error("invalid request")]
    InvalidRequest,
    #[error("transaction timeout out of range")]
    InvalidTransactionTimeout,
    #[error("a concurrent operation on the transaction is in progress")]
    ConcurrentTransactions,
    #[error("a newer producer with the same transactional id fenced this one")]
    ProducerFenced,
    #[error("the producer id is not the one of this transactional id")]
    InvalidProducerIdMapping,
    #[error("the transaction is not in a state that allows this")]
    InvalidTxnState,
    #[error("the coordinator is not available")]
    CoordinatorNotAvailable,
    #[error("this broker is not the transactional id's coordinator")]
    NotCoordinator,
    #[error("the coordinator is loading the transactional id's partition")]
    CoordinatorLoadInProgress,
    #[error("the transactional id is not known")]
    TransactionalIdNotFound,
    #[error("storage error")]
    StorageError,
}

impl TxnError {
    pub fn response_error(self) -> ResponseError {
        match self {
            TxnError::InvalidRequest => ResponseError::InvalidRequest,
            TxnError::InvalidTransactionTimeout => ResponseError::InvalidTransactionTimeout,
            TxnError::ConcurrentTransactions => ResponseError::ConcurrentTransactions,
            TxnError::ProducerFenced => ResponseError::ProducerFenced,
            TxnError::InvalidProducerIdMapping => ResponseError::InvalidProducerIdMapping,
            TxnError::InvalidTxnState => ResponseError::InvalidTxnState,
            TxnError::CoordinatorNotAvailable => ResponseError::CoordinatorNotAvailable,
            TxnError::NotCoordinator => ResponseError::NotCoordinator,
            TxnError::CoordinatorLoadInProgress => ResponseError::CoordinatorLoadInProgress,
            TxnError::TransactionalIdNotFound => ResponseError::TransactionalIdNotFound,
            // Kafka answers a failed append to the transaction log with NOT_COORDINATOR, which
            // makes the client look the coordinator up again and retry.
            TxnError::StorageError => ResponseError::NotCoordinator,
        }
    }

    pub fn code(self) -> i16 {
        self.response_error().code()
    }

    /// The code for a request `version`: clients before KIP-588 (versions below
    /// `fenced_from`) do not know PRODUCER_FENCED and get INVALID_PRODUCER_EPOCH, as Kafka
    /// answers them.
    pub fn code_for(self, version: i16, fenced_from: i16) -> i16 {
        if self == TxnError::ProducerFenced && version < fenced_from {
            ResponseError::InvalidProducerEpoch.code()
        } else {
            self.code()
        }
    }
}

/// For decisions that never mint a producer id (the coordinator's own aborts).
fn no_new_producer_id() -> Result<i64, TxnError> {
    Err(TxnError::CoordinatorNotAvailable)
}

/// Kafka's `isEpochExhausted`: the epoch cannot be bumped safely any more.
pub fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// What InitProducerId decided.
#[derive(Debug, PartialEq, Eq)]
pub enum InitDecision {
    /// Write this metadata, then answer with its producer id and epoch.
    Ready(TxnMetadata),
    /// An open transaction is aborted first, with its producer fenced; the client is told
    /// CONCURRENT_TRANSACTIONS and retries (Kafka's `PrepareEpochFence` path).
    AbortFirst(TxnMetadata),
}

/// What EndTxn decided.
#[derive(Debug, PartialEq, Eq)]
pub enum EndDecision {
    /// A retry of an EndTxn that already completed the same way.
    AlreadyDone,
    /// Write this PrepareCommit/PrepareAbort metadata, then the markers, then complete.
    Prepare(TxnMetadata),
}

impl TxnMetadata {
    /// A transactional id seen for the first time, with its new producer id.
    pub fn new(transactional_id: &str, producer_id: i64, txn_timeout_ms: i32, now_ms: i64) -> Self {
        TxnMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id,
            last_producer_id: -1,
            producer_epoch: -1,
            last_producer_epoch: -1,
            txn_timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            txn_start_ms: -1,
            txn_last_update_ms: now_ms,
            next_producer_id: -1,
            tv2: false,
        }
    }

    /// InitProducerId (Kafka's `prepareInitProducerIdTransit`). `expected` is the producer id
    /// and epoch the client already holds (v3+, KIP-360), `new_producer_id` mints an id when
    /// the epoch is exhausted.
    pub fn init_producer_id(
        &self,
        txn_timeout_ms: i32,
        expected: Option<(i64, i16)>,
        now_ms: i64,
        new_producer_id: impl FnOnce() -> Result<i64, TxnError>,
    ) -> Result<InitDecision, TxnError> {
        // A producer that names its id and epoch is fenced unless it is this id's producer,
        // or a retry after a rotation whose answer it lost.
        let valid = |(pid, epoch): (i64, i16)| {
            self.producer_epoch == -1
                || pid == self.producer_id
                || (pid == self.last_producer_id && is_epoch_exhausted(epoch))
        };
        if !expected.is_none_or(valid) {
            return Err(TxnError::ProducerFenced);
        }
        match self.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                Err(TxnError::ConcurrentTransactions)
            }
            TxnState::Ongoing => Ok(InitDecision::AbortFirst(self.fence_and_abort(now_ms)?)),
            TxnState::Dead | TxnState::PrepareEpochFence => Err(TxnError::ConcurrentTransactions),
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                let mut next = self.clone();
                next.state = TxnState::Empty;
                next.partitions.clear();
                next.txn_start_ms = -1;
                next.txn_last_update_ms = now_ms;
                next.txn_timeout_ms = txn_timeout_ms;
                if is_epoch_exhausted(self.producer_epoch)
                    && expected.is_none_or(|(_, e)| e == self.producer_epoch)
                {
                    next.last_producer_id = self.producer_id;
                    next.producer_id = new_producer_id()?;
                    next.producer_epoch = 0;
                    next.last_producer_epoch = if expected.is_some() {
                        self.producer_epoch
                    } else {
                        -1
                    };
                    return Ok(InitDecision::Ready(next));
                }
                let bumped = self.producer_epoch + 1;
                let (epoch, last_epoch) = match expected {
                    // A new producer instance: whoever had the id before is fenced.
                    None => (bumped, -1),
                    // KIP-360: the same producer recovering from an error bumps its epoch.
                    Some((_, e)) if self.producer_epoch == -1 || e == self.producer_epoch => {
                        (bumped, self.producer_epoch)
                    }
                    // A retry of a bump whose answer was lost: the same answer again.
                    Some((_, e)) if e == self.last_producer_epoch => {
                        (self.producer_epoch, self.last_producer_epoch)
                    }
                    Some(_) => return Err(TxnError::ProducerFenced),
                };
                next.producer_epoch = epoch;
                next.last_producer_epoch = last_epoch;
                Ok(InitDecision::Ready(next))
            }
        }
    }

    fn check_producer(&self, producer_id: i64, producer_epoch: i16) -> Result<(), TxnError> {
        if producer_id != self.producer_id {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        if producer_epoch != self.producer_epoch {
            return Err(TxnError::ProducerFenced);
        }
        Ok(())
    }

    /// AddPartitionsToTxn and AddOffsetsToTxn (Kafka's `handleAddPartitionsToTransaction`), and
    /// the partitions a transaction version 2 produce or offset commit adds itself (`tv2`).
    /// `None`: every partition is already in the ongoing transaction, nothing to write.
    pub fn add_partitions(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<(String, i32)>,
        tv2: bool,
        now_ms: i64,
    ) -> Result<Option<TxnMetadata>, TxnError> {
        self.check_producer(producer_id, producer_epoch)?;
        match self.state {
            s if s.is_prepare() => Err(TxnError::ConcurrentTransactions),
            TxnState::Dead | TxnState::PrepareEpochFence => Err(TxnError::ConcurrentTransactions),
            TxnState::Ongoing if partitions.is_subset(&self.partitions) => Ok(None),
            _ => {
                let mut next = self.clone();
                next.tv2 = tv2;
                if next.state != TxnState::Ongoing {
                    next.txn_start_ms = now_ms;
                }
                next.state = TxnState::Ongoing;
                next.partitions.extend(partitions.iter().cloned());
                if next.partitions.len() > TXN_PARTITIONS_MAX {
                    return Err(TxnError::InvalidRequest);
                }
                next.txn_last_update_ms = now_ms;
                Ok(Some(next))
            }
        }
    }

    /// KIP-890 verification of a transactional write (Kafka's
    /// `handleVerifyPartitionsInTransaction`): for each partition, whether it is in the
    /// ongoing transaction of this producer.
    pub fn verify_partitions<'a>(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        partitions: impl IntoIterator<Item = &'a (String, i32)>,
    ) -> Result<Vec<bool>, TxnError> {
        self.check_producer(producer_id, producer_epoch)?;
        if self.state.is_prepare() {
            return Err(TxnError::ConcurrentTransactions);
        }
        let ongoing = self.state == TxnState::Ongoing;
        Ok(partitions
            .into_iter()
            .map(|p| ongoing && self.partitions.contains(p))
            .collect())
    }

    /// EndTxn (Kafka's `endTransaction`). `from_client` is false for the coordinator's own
    /// aborts, which may carry a bumped epoch; `tv2` says the client speaks transaction version
    /// 2 (EndTxn v5+): the epoch is bumped with the decision, and when it is exhausted
    /// `new_producer_id` names the producer id the completion hands out.
    pub fn end_txn(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        from_client: bool,
        tv2: bool,
        now_ms: i64,
        new_producer_id: impl FnOnce() -> Result<i64, TxnError>,
    ) -> Result<EndDecision, TxnError> {
        // Kafka's retries of a transaction version 2 EndTxn: the client still carries the epoch
        // the decision bumped (or, after an exhausted epoch, the id the completion replaced).
        let current_v2 = self.tv2 && from_client;
        let retry_on_bump = current_v2 && self.producer_epoch as i32 == producer_epoch as i32 + 1;
        let retry_on_overflow = current_v2
            && self.last_producer_id == producer_id
            && producer_epoch == i16::MAX - 1
            && self.producer_epoch == 0;
        // A transaction version 2 client may abort a transaction none of whose writes reached
        // a partition (it cannot know whether they did): nothing is open, and it is answered as
        // an abort, with the epoch bumped.
        let abort_empty = tv2
            && from_client
            && !commit
            && producer_epoch == self.producer_epoch
            && matches!(
                self.state,
                TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
            );
        let valid_epoch = if current_v2 {
            match self.state {
                TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_bump,
                TxnState::CompleteCommit | TxnState::CompleteAbort => {
                    retry_on_bump || retry_on_overflow || abort_empty
                }
                _ => producer_epoch == self.producer_epoch,
            }
        } else {
            (!from_client || producer_epoch == self.producer_epoch)
                && producer_epoch >= self.producer_epoch
        };
        if producer_id != self.producer_id && !retry_on_overflow {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        if !valid_epoch {
            return Err(TxnError::ProducerFenced);
        }
        if self.state == TxnState::Ongoing || abort_empty {
            let mut next = self.clone();
            if abort_empty {
                next.partitions.clear();
                next.txn_start_ms = now_ms;
            }
            next.state = if commit {
                TxnState::PrepareCommit
            } else {
                TxnState::PrepareAbort
            };
            if tv2 && from_client {
                if is_epoch_exhausted(self.producer_epoch) {
                    next.next_producer_id = new_producer_id()?;
                }
                next.producer_epoch = self.producer_epoch + 1;
                next.last_producer_epoch = self.producer_epoch;
                next.tv2 = true;
            } else if producer_epoch > self.producer_epoch {
                next.producer_epoch = producer_epoch;
                next.last_producer_epoch = -1;
            }
            if from_client && !tv2 {
                next.tv2 = false;
            }
            next.txn_last_update_ms = now_ms;
            return Ok(EndDecision::Prepare(next));
        }
        match (self.state, commit) {
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => {
                Ok(EndDecision::AlreadyDone)
            }
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                Err(TxnError::ConcurrentTransactions)
            }
            _ => Err(TxnError::InvalidTxnState),
        }
    }

    /// The abort of an ongoing transaction by the coordinator (timeout, or a new producer
    /// taking the id over), bumping the epoch so that the old producer is fenced (Kafka's
    /// `prepareFenceProducerEpoch` followed by `endTransaction(ABORT, isFromClient=false)`).
    pub fn fence_and_abort(&self, now_ms: i64) -> Result<TxnMetadata, TxnError> {
        if self.producer_epoch == i16::MAX {
            // Cannot bump further: abort without fencing (the next InitProducerId rotates).
            return match self.end_txn(
                self.producer_id,
                self.producer_epoch,
                false,
                false,
                false,
                now_ms,
                no_new_producer_id,
            )? {
                EndDecision::Prepare(next) => Ok(next),
                EndDecision::AlreadyDone => Err(TxnError::InvalidTxnState),
            };
        }
        match self.end_txn(
            self.producer_id,
            self.producer_epoch + 1,
            false,
            false,
            false,
            now_ms,
            no_new_producer_id,
        )? {
            EndDecision::Prepare(next) => Ok(next),
            EndDecision::AlreadyDone => Err(TxnError::InvalidTxnState),
        }
    }

    /// The completion once every marker is written (Kafka's `prepareComplete`). Under
    /// transaction version 2 an exhausted epoch's producer id is replaced here, after the
    /// markers went out with the old one.
    pub fn complete(&self, now_ms: i64) -> TxnMetadata {
        debug_assert!(self.state.is_prepare(), "complete from {:?}", self.state);
        let mut next = self.clone();
        next.state = if self.state == TxnState::PrepareCommit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        next.partitions.clear();
        next.txn_last_update_ms = now_ms;
        if self.tv2 {
            next.last_producer_epoch = self.producer_epoch;
            if self.next_producer_id >= 0 {
                next.last_producer_id = self.producer_id;
                next.producer_id = self.next_producer_id;
                next.producer_epoch = 0;
                next.next_producer_id = -1;
            }
        }
        next
    }

    /// The transaction ran past its timeout (Kafka's `timedOutTransactions`).
    pub fn is_timed_out(&self, now_ms: i64) -> bool {
        self.state == TxnState::Ongoing
            && self.txn_start_ms.saturating_add(self.txn_timeout_ms as i64) < now_ms
    }

    /// The transactional id has been idle past `transactional.id.expiration.ms`.
    pub fn is_expired(&self, now_ms: i64, expiration_ms: i64) -> bool {
        self.state.is_expiration_allowed()
            && self.txn_last_update_ms.saturating_add(expiration_ms) <= now_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000_000;

    fn parts(list: &[(&str, i32)]) -> BTreeSet<(String, i32)> {
        list.iter().map(|(t, p)| (t.to_string(), *p)).collect()
    }

    fn ready(d: InitDecision) -> TxnMetadata {
        match d {
            InitDecision::Ready(m) => m,
            other => panic!("expected Ready, got {other:?}"),
        }
    }

    fn prepared(d: EndDecision) -> TxnMetadata {
        match d {
            EndDecision::Prepare(m) => m,
            other => panic!("expected Prepare, got {other:?}"),
        }
    }

    fn no_new_id() -> Result<i64, TxnError> {
        panic!("no producer id rotation expected")
    }

    /// A fresh transactional id after its first InitProducerId.
    fn initialised() -> TxnMetadata {
        ready(
            TxnMetadata::new("app", 1000, 60_000, NOW)
                .init_producer_id(60_000, None, NOW, no_new_id)
                .unwrap(),
        )
    }

    #[test]
    fn the_first_init_producer_id_gives_epoch_zero_and_each_new_producer_bumps_it() {
        let m = initialised();
        assert_eq!(
            (m.producer_id, m.producer_epoch, m.state),
            (1000, 0, TxnState::Empty)
        );
        let again = ready(
            m.init_producer_id(30_000, None, NOW + 1, no_new_id)
                .unwrap(),
        );
        assert_eq!(again.producer_epoch, 1);
        assert_eq!(again.last_producer_epoch, -1);
        assert_eq!(again.txn_timeout_ms, 30_000);
    }

    #[test]
    fn kip_360_bump_with_the_current_epoch_and_its_retry() {
        let m = ready(
            initialised()
                .init_producer_id(60_000, None, NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!(m.producer_epoch, 1);
        let bumped = ready(
            m.init_producer_id(60_000, Some((1000, 1)), NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!((bumped.producer_epoch, bumped.last_producer_epoch), (2, 1));
        // The answer was lost; the producer retries with its old epoch and gets the same one.
        let retry = ready(
            bumped
                .init_producer_id(60_000, Some((1000, 1)), NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!(retry.producer_epoch, 2);
        // Any other epoch, or another producer id, is a zombie's.
        assert_eq!(
            bumped.init_producer_id(60_000, Some((1000, 0)), NOW, no_new_id),
            Err(TxnError::ProducerFenced)
        );
        assert_eq!(
            bumped.init_producer_id(60_000, Some((999, 2)), NOW, no_new_id),
            Err(TxnError::ProducerFenced)
        );
    }

    #[test]
    fn an_exhausted_epoch_rotates_to_a_new_producer_id() {
        let mut m = initialised();
        m.producer_epoch = i16::MAX - 1;
        let rotated = ready(m.init_producer_id(60_000, None, NOW, || Ok(2000)).unwrap());
        assert_eq!((rotated.producer_id, rotated.producer_epoch), (2000, 0));
        assert_eq!(rotated.last_producer_id, 1000);
        // The same producer recovering (KIP-360) rotates too; its retry of that call, naming
        // the old id with its exhausted epoch, gets the same answer again.
        let recovered = ready(
            m.init_producer_id(60_000, Some((1000, i16::MAX - 1)), NOW, || Ok(3000))
                .unwrap(),
        );
        assert_eq!((recovered.producer_id, recovered.producer_epoch), (3000, 0));
        let retry = ready(
            recovered
                .init_producer_id(60_000, Some((1000, i16::MAX - 1)), NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!((retry.producer_id, retry.producer_epoch), (3000, 0));
        // Without the exhausted epoch it is a zombie of the old id.
        assert_eq!(
            recovered.init_producer_id(60_000, Some((1000, 5)), NOW, no_new_id),
            Err(TxnError::ProducerFenced)
        );
    }

    #[test]
    fn init_producer_id_during_an_open_transaction_fences_and_aborts_it_first() {
        let m = initialised();
        let ongoing = m
            .add_partitions(1000, 0, &parts(&[("t", 0)]), false, NOW)
            .unwrap()
            .unwrap();
        match ongoing
            .init_producer_id(60_000, None, NOW, no_new_id)
            .unwrap()
        {
            InitDecision::AbortFirst(next) => {
                assert_eq!(next.state, TxnState::PrepareAbort);
                assert_eq!(next.producer_epoch, 1);
                assert_eq!(next.partitions, parts(&[("t", 0)]));
            }
            other => panic!("{other:?}"),
        }
        let mut preparing = ongoing.clone();
        preparing.state = TxnState::PrepareCommit;
        assert_eq!(
            preparing.init_producer_id(60_000, None, NOW, no_new_id),
            Err(TxnError::ConcurrentTransactions)
        );
    }

    #[test]
    fn add_partitions_starts_a_transaction_and_checks_the_producer() {
        let m = initialised();
        let t = m
            .add_partitions(1000, 0, &parts(&[("a", 0)]), false, NOW + 5)
            .unwrap()
            .unwrap();
        assert_eq!((t.state, t.txn_start_ms), (TxnState::Ongoing, NOW + 5));
        let t2 = t
            .add_partitions(1000, 0, &parts(&[("b", 1)]), false, NOW + 9)
            .unwrap()
            .unwrap();
        assert_eq!(t2.txn_start_ms, NOW + 5);
        assert_eq!(t2.partitions.len(), 2);
        assert_eq!(
            t2.add_partitions(1000, 0, &parts(&[("a", 0)]), false, NOW),
            Ok(None)
        );
        assert_eq!(
            t2.add_partitions(1000, 1, &parts(&[("a", 0)]), false, NOW),
            Err(TxnError::ProducerFenced)
        );
        assert_eq!(
            t2.add_partitions(7, 0, &parts(&[("a", 0)]), false, NOW),
            Err(TxnError::InvalidProducerIdMapping)
        );
        let committing = prepared(
            t2.end_txn(1000, 0, true, true, false, NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!(
            committing.add_partitions(1000, 0, &parts(&[("c", 0)]), false, NOW),
            Err(TxnError::ConcurrentTransactions)
        );
    }

    #[test]
    fn verification_accepts_only_partitions_of_the_ongoing_transaction() {
        let m = initialised();
        let ab = parts(&[("a", 0), ("b", 0)]);
        assert_eq!(
            m.verify_partitions(1000, 0, &ab).unwrap(),
            vec![false, false]
        );
        let t = m
            .add_partitions(1000, 0, &parts(&[("a", 0)]), false, NOW)
            .unwrap()
            .unwrap();
        assert_eq!(
            t.verify_partitions(1000, 0, &ab).unwrap(),
            vec![true, false]
        );
        assert_eq!(
            t.verify_partitions(1000, 1, &ab),
            Err(TxnError::ProducerFenced)
        );
    }

    #[test]
    fn end_txn_prepares_completes_and_answers_retries() {
        let t = initialised()
            .add_partitions(1000, 0, &parts(&[("a", 0)]), false, NOW)
            .unwrap()
            .unwrap();
        assert_eq!(
            t.end_txn(1000, 1, true, true, false, NOW, no_new_id),
            Err(TxnError::ProducerFenced)
        );
        assert_eq!(
            t.end_txn(5, 0, true, true, false, NOW, no_new_id),
            Err(TxnError::InvalidProducerIdMapping)
        );
        let p = prepared(
            t.end_txn(1000, 0, true, true, false, NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!(p.state, TxnState::PrepareCommit);
        assert_eq!(
            p.end_txn(1000, 0, true, true, false, NOW, no_new_id),
            Err(TxnError::ConcurrentTransactions)
        );
        assert_eq!(
            p.end_txn(1000, 0, false, true, false, NOW, no_new_id),
            Err(TxnError::InvalidTxnState)
        );
        let done = p.complete(NOW + 1);
        assert_eq!(done.state, TxnState::CompleteCommit);
        assert!(done.partitions.is_empty());
        assert_eq!(
            done.end_txn(1000, 0, true, true, false, NOW, no_new_id),
            Ok(EndDecision::AlreadyDone)
        );
        assert_eq!(
            done.end_txn(1000, 0, false, true, false, NOW, no_new_id),
            Err(TxnError::InvalidTxnState)
        );
        // Nothing to end in an empty transaction.
        assert_eq!(
            initialised().end_txn(1000, 0, false, true, false, NOW, no_new_id),
            Err(TxnError::InvalidTxnState)
        );
    }

    #[test]
    fn a_timed_out_transaction_is_aborted_with_a_bumped_epoch() {
        let t = initialised()
            .add_partitions(1000, 0, &parts(&[("a", 0)]), false, NOW)
            .unwrap()
            .unwrap();
        assert!(!t.is_timed_out(NOW + 60_000));
        assert!(t.is_timed_out(NOW + 60_001));
        let aborting = t.fence_and_abort(NOW + 60_001).unwrap();
        assert_eq!(aborting.state, TxnState::PrepareAbort);
        assert_eq!(
            (aborting.producer_epoch, aborting.last_producer_epoch),
            (1, -1)
        );
        let done = aborting.complete(NOW + 60_002);
        // The zombie's EndTxn and AddPartitions are fenced.
        assert_eq!(
            done.end_txn(1000, 0, true, true, false, NOW, no_new_id),
            Err(TxnError::ProducerFenced)
        );
        assert_eq!(
            done.add_partitions(1000, 0, &parts(&[("a", 0)]), false, NOW),
            Err(TxnError::ProducerFenced)
        );
        // Its KIP-360 recovery with the old epoch is fenced too (a new producer won).
        assert_eq!(
            done.init_producer_id(60_000, Some((1000, 0)), NOW, no_new_id),
            Err(TxnError::ProducerFenced)
        );
    }

    #[test]
    fn only_idle_ids_outside_a_transaction_expire() {
        let m = initialised();
        assert!(!m.is_expired(NOW + 10, 100));
        assert!(m.is_expired(NOW + 100, 100));
        let t = m
            .add_partitions(1000, 0, &parts(&[("a", 0)]), false, NOW)
            .unwrap()
            .unwrap();
        assert!(!t.is_expired(NOW + 1_000_000, 100));
    }

    #[test]
    fn state_ids_and_names_are_kafkas() {
        for s in TxnState::ALL {
            assert_eq!(TxnState::from_id(s.id()), Some(s));
            assert_eq!(TxnState::from_name(s.name()), Some(s));
        }
        assert_eq!(TxnState::PrepareEpochFence.id(), 7);
        assert_eq!(TxnState::CompleteAbort.name(), "CompleteAbort");
    }

    /// A transaction version 2 client's transaction: the produce adds the partition, EndTxn v5
    /// bumps the epoch with the decision, and the completion keeps the new epoch.
    fn tv2_committed(m: &TxnMetadata, epoch: i16) -> TxnMetadata {
        let ongoing = m
            .add_partitions(m.producer_id, epoch, &parts(&[("t", 0)]), true, NOW)
            .unwrap()
            .unwrap();
        assert!(ongoing.tv2);
        let prepared = prepared(
            ongoing
                .end_txn(m.producer_id, epoch, true, true, true, NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!(
            (
                prepared.state,
                prepared.producer_epoch,
                prepared.last_producer_epoch
            ),
            (TxnState::PrepareCommit, epoch + 1, epoch)
        );
        prepared.complete(NOW + 1)
    }

    #[test]
    fn transaction_version_2_bumps_the_epoch_at_every_end_and_fences_the_old_one() {
        let m = initialised();
        let done = tv2_committed(&m, 0);
        assert_eq!(
            (done.state, done.producer_epoch),
            (TxnState::CompleteCommit, 1)
        );
        // The producer goes on with the epoch EndTxn gave it; its old epoch is fenced.
        assert_eq!(
            done.add_partitions(1000, 0, &parts(&[("t", 0)]), true, NOW),
            Err(TxnError::ProducerFenced)
        );
        let again = tv2_committed(&done, 1);
        assert_eq!(again.producer_epoch, 2);
        // An abort bumps too.
        let ongoing = again
            .add_partitions(1000, 2, &parts(&[("t", 1)]), true, NOW)
            .unwrap()
            .unwrap();
        let aborting = prepared(
            ongoing
                .end_txn(1000, 2, false, true, true, NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!(
            (aborting.state, aborting.producer_epoch),
            (TxnState::PrepareAbort, 3)
        );
    }

    #[test]
    fn transaction_version_2_retries_of_end_txn_carry_the_epoch_before_the_bump() {
        let m = initialised();
        let ongoing = m
            .add_partitions(1000, 0, &parts(&[("t", 0)]), true, NOW)
            .unwrap()
            .unwrap();
        let preparing = prepared(
            ongoing
                .end_txn(1000, 0, true, true, true, NOW, no_new_id)
                .unwrap(),
        );
        // A retry while the markers are written: busy, try again.
        assert_eq!(
            preparing.end_txn(1000, 0, true, true, true, NOW, no_new_id),
            Err(TxnError::ConcurrentTransactions)
        );
        let done = preparing.complete(NOW + 1);
        // Once complete: the same answer again, with the bumped epoch.
        assert_eq!(
            done.end_txn(1000, 0, true, true, true, NOW, no_new_id),
            Ok(EndDecision::AlreadyDone)
        );
        // The other outcome, or the current epoch with no transaction open, is refused.
        assert_eq!(
            done.end_txn(1000, 0, false, true, true, NOW, no_new_id),
            Err(TxnError::InvalidTxnState)
        );
        assert_eq!(
            done.end_txn(1000, 1, true, true, true, NOW, no_new_id),
            Err(TxnError::ProducerFenced)
        );
        // A transaction version 1 client ends without a bump.
        let v1 = prepared(
            m.add_partitions(1000, 0, &parts(&[("t", 0)]), false, NOW)
                .unwrap()
                .unwrap()
                .end_txn(1000, 0, true, true, false, NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!(v1.producer_epoch, 0);
        assert!(!v1.complete(NOW).tv2);
    }

    #[test]
    fn transaction_version_2_hands_out_a_new_producer_id_when_the_epoch_runs_out() {
        let mut m = initialised();
        m.producer_epoch = i16::MAX - 1;
        let ongoing = m
            .add_partitions(1000, i16::MAX - 1, &parts(&[("t", 0)]), true, NOW)
            .unwrap()
            .unwrap();
        let preparing = prepared(
            ongoing
                .end_txn(1000, i16::MAX - 1, true, true, true, NOW, || Ok(5000))
                .unwrap(),
        );
        // The markers still go out under the old id, with the last epoch.
        assert_eq!(
            (
                preparing.producer_id,
                preparing.producer_epoch,
                preparing.next_producer_id
            ),
            (1000, i16::MAX, 5000)
        );
        let done = preparing.complete(NOW + 1);
        assert_eq!(
            (
                done.producer_id,
                done.producer_epoch,
                done.last_producer_id,
                done.next_producer_id
            ),
            (5000, 0, 1000, -1)
        );
        // A retry under the old id is recognised.
        assert_eq!(
            done.end_txn(1000, i16::MAX - 1, true, true, true, NOW, no_new_id),
            Ok(EndDecision::AlreadyDone)
        );
        assert_eq!(
            done.end_txn(1001, 0, true, true, true, NOW, no_new_id),
            Err(TxnError::InvalidProducerIdMapping)
        );
    }

    #[test]
    fn transaction_version_2_may_abort_a_transaction_that_reached_no_partition() {
        let m = initialised();
        let aborting = prepared(
            m.end_txn(1000, 0, false, true, true, NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!(
            (
                aborting.state,
                aborting.producer_epoch,
                aborting.partitions.len()
            ),
            (TxnState::PrepareAbort, 1, 0)
        );
        let done = aborting.complete(NOW + 1);
        // Again after a completed transaction, with the epoch it left; its retry is answered.
        let again = prepared(
            done.end_txn(1000, 1, false, true, true, NOW, no_new_id)
                .unwrap(),
        );
        assert_eq!(again.producer_epoch, 2);
        assert_eq!(
            again
                .complete(NOW)
                .end_txn(1000, 1, false, true, true, NOW, no_new_id),
            Ok(EndDecision::AlreadyDone)
        );
        // A commit of nothing stays refused, and so does anything from version 1 clients.
        assert_eq!(
            m.end_txn(1000, 0, true, true, true, NOW, no_new_id),
            Err(TxnError::InvalidTxnState)
        );
        assert_eq!(
            m.end_txn(1000, 0, false, true, false, NOW, no_new_id),
            Err(TxnError::InvalidTxnState)
        );
    }
}
