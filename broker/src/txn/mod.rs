//! The transaction coordinator: producer ids, and the state of every transactional id whose
//! partition of `__transaction_state` this broker leads (on a single node: all of them).
//!
//! Each transactional id is a [`state::TxnMetadata`] behind its own async mutex; an operation
//! holds it from the decision to the end of its writes, so two requests of one transactional
//! id never interleave. This module does the I/O around the sans-IO state machine: it writes
//! each new state to `__transaction_state` before acting on it and waits until every in-sync
//! replica has it (acks=all, as Kafka's coordinator appends: a state only this broker holds
//! is lost when another takes the partition over, and a commit answered on it ends up
//! committed in some partitions and aborted in others), writes the COMMIT/ABORT markers to
//! every partition of a transaction itself (Kafka's WriteTxnMarkers, without the network
//! hop), verifies transactional produces against the ongoing transaction (KIP-890 part 1),
//! aborts transactions that outlive their timeout, expires idle transactional ids, and on
//! start reloads every transactional id from the log and completes the transactions that were
//! between PrepareCommit/PrepareAbort and their markers when the broker stopped.
//!
//! Lock order: a transactional id, then a group (transactional offset commits), then a
//! partition's log. Markers are written with no group lock held.
//!
//! Bounds: [`TRANSACTIONAL_IDS_MAX`] transactional ids; [`state::TXN_PARTITIONS_MAX`]
//! partitions per transaction; `transaction.max.timeout.ms`.

pub mod markers;
pub mod producer_ids;
pub mod records;
pub mod state;
pub mod verification;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::ResponseError;

use crate::internal_topics::{LOADED, LOADING, NOT_COORDINATOR};
use parking_lot::RwLock;
use samsa_storage::{EndTxnMarker, LogError};
use tokio::sync::{Mutex, OwnedMutexGuard};

use self::producer_ids::ProducerIdManager;
use self::state::{EndDecision, InitDecision, TxnError, TxnMetadata, TxnState};
use crate::config::topic::TopicOverrides;
use crate::config::BrokerConfig;
use crate::coordinator_write::{CoordinatorWrite, WriteError};
use crate::node::Node;
use crate::partition::{Partition, Replayed};

/// The internal topic that holds transaction state.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
/// Transactional ids the coordinator keeps at most (each costs a little memory; beyond it new
/// ids are refused with COORDINATOR_NOT_AVAILABLE until idle ones expire).
pub const TRANSACTIONAL_IDS_MAX: usize = 100_000;

type TxnHandle = Arc<Mutex<TxnMetadata>>;

/// A transactional id, locked for a produce or a transactional offset commit to verify
/// against (KIP-890): the transaction cannot end while the guard is held.
pub type TxnGuard = OwnedMutexGuard<TxnMetadata>;

pub struct TransactionCoordinator {
    /// The partition count of `__transaction_state`: the topic's once it exists (ids hash over
    /// it), `transaction.state.log.num.partitions` to create it.
    partitions: std::sync::atomic::AtomicI32,
    max_timeout_ms: i32,
    id_expiration_ms: i64,
    abort_check_ms: u64,
    expire_check_ms: u64,
    segment_bytes: i64,
    /// `transaction.state.log.replication.factor`.
    replication_factor: i16,
    txns: RwLock<HashMap<String, TxnHandle>>,
    /// Wakes the timers to complete the transactions a load found prepared.
    prepared_loaded: tokio::sync::Notify,
    /// Per partition of `__transaction_state`: whether this broker coordinates its ids
    /// ([`NOT_COORDINATOR`], [`LOADING`], [`LOADED`]), as the group coordinator keeps it.
    coordinating: Vec<AtomicU8>,
    producer_ids: ProducerIdManager,
    /// The group coordinator, which makes a transaction's offsets visible (or drops them) once
    /// its marker is in their `__consumer_offsets` partition.
    groups: Arc<crate::group::GroupCoordinator>,
}

fn storage_error(what: &str, e: &LogError) -> TxnError {
    tracing::error!("{what}: {e}");
    TxnError::StorageError
}

impl TransactionCoordinator {
    /// Builds the coordinator over the producer-id claims of `log_dir`. `existing_partitions`
    /// is the partition count of `__transaction_state` when it already exists.
    pub fn new(
        config: &BrokerConfig,
        log_dir: &Path,
        existing_partitions: Option<i32>,
        groups: Arc<crate::group::GroupCoordinator>,
    ) -> anyhow::Result<TransactionCoordinator> {
        let partitions = existing_partitions
            .unwrap_or_else(|| config.int("transaction.state.log.num.partitions"))
            .max(1);
        Ok(TransactionCoordinator {
            partitions: partitions.into(),
            max_timeout_ms: config.int("transaction.max.timeout.ms").max(1),
            id_expiration_ms: config.long("transactional.id.expiration.ms").max(1),
            abort_check_ms: config
                .long("transaction.abort.timed.out.transaction.cleanup.interval.ms")
                .clamp(10, 3_600_000) as u64,
            expire_check_ms: config
                .long("transaction.remove.expired.transaction.cleanup.interval.ms")
                .clamp(10, 86_400_000) as u64,
            segment_bytes: config.long("transaction.state.log.segment.bytes"),
            replication_factor: config.int("transaction.state.log.replication.factor") as i16,
            txns: RwLock::new(HashMap::new()),
            prepared_loaded: tokio::sync::Notify::new(),
            coordinating: (0..crate::topics::PARTITIONS_PER_TOPIC_MAX)
                .map(|_| AtomicU8::new(NOT_COORDINATOR))
                .collect(),
            producer_ids: ProducerIdManager::open(log_dir)?,
            groups,
        })
    }

    /// The partition of `__transaction_state` that owns `transactional_id`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        records::partition_for(transactional_id, self.partitions.load(Ordering::Acquire))
    }

    /// A producer id for an idempotent producer without a transactional id: a fresh one every
    /// time, with epoch 0 (Kafka's coordinator does the same; such a producer bumps its epoch
    /// itself, KIP-360).
    pub async fn new_producer_id(&self, node: &Node) -> Result<i64, TxnError> {
        self.producer_ids.generate(node).await.map_err(|e| {
            tracing::warn!("{e}");
            TxnError::CoordinatorNotAvailable
        })
    }

    /// The partition of `__transaction_state` for `transactional_id`, if this broker leads
    /// it (FindCoordinator creates the topic through the controller, as Kafka does).
    fn state_partition(
        &self,
        node: &Node,
        transactional_id: &str,
    ) -> Result<Arc<Partition>, TxnError> {
        let topic = node
            .topics
            .get(TRANSACTION_STATE_TOPIC)
            .ok_or(TxnError::CoordinatorNotAvailable)?;
        let index = self.partition_for(transactional_id);
        match topic.led_partition(index) {
            Ok(_) if self.coordinating[index as usize].load(Ordering::Acquire) != LOADED => {
                Err(TxnError::CoordinatorLoadInProgress)
            }
            Ok(p) => Ok(p.clone()),
            Err(ResponseError::NotLeaderOrFollower) => Err(TxnError::NotCoordinator),
            Err(_) => Err(TxnError::CoordinatorNotAvailable),
        }
    }

    /// How `__transaction_state` is created: partitions, replication factor and configs.
    pub fn state_topic_spec(&self) -> crate::internal_topics::InternalTopicSpec {
        let mut configs = TopicOverrides::new();
        configs.insert("cleanup.policy".into(), "compact".into());
        configs.insert("segment.bytes".into(), self.segment_bytes.to_string());
        configs.insert("compression.type".into(), "uncompressed".into());
        crate::internal_topics::InternalTopicSpec {
            name: TRANSACTION_STATE_TOPIC.to_string(),
            partitions: self.partitions.load(Ordering::Acquire),
            replication_factor: self.replication_factor,
            configs,
        }
    }

    fn handle(&self, transactional_id: &str) -> Option<TxnHandle> {
        self.txns.read().get(transactional_id).cloned()
    }

    /// The metadata of a transactional id that a request expects to exist (Kafka answers
    /// INVALID_PRODUCER_ID_MAPPING for an unknown one). Asked first, as Kafka's coordinator
    /// does, whether this broker coordinates the id at all: a client still talking to a former
    /// coordinator must hear NOT_COORDINATOR and look it up again, not that its producer id is
    /// unknown, which fails its transaction.
    fn existing(&self, node: &Node, transactional_id: &str) -> Result<TxnHandle, TxnError> {
        if transactional_id.is_empty() {
            return Err(TxnError::InvalidRequest);
        }
        self.state_partition(node, transactional_id)?;
        self.handle(transactional_id)
            .ok_or(TxnError::InvalidProducerIdMapping)
    }

    /// Writes a transactional id's state (or its tombstone) to `__transaction_state` and waits
    /// until it is on disk in durable mode and in every in-sync replica's log (Kafka's answers
    /// when it is not: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE).
    async fn write_state(
        &self,
        node: &Node,
        transactional_id: &str,
        m: Option<&TxnMetadata>,
    ) -> Result<(), TxnError> {
        let partition = self.state_partition(node, transactional_id)?;
        let now = crate::util::now_ms();
        let batch = crate::coordinator_write::one_record_batch(
            now,
            Some(Bytes::from(records::encode_key(transactional_id))),
            m.map(|m| Bytes::from(records::encode_value(m))),
            Default::default(),
        );
        let write =
            CoordinatorWrite::append(partition, |p| p.append(batch, now, &node.group_commit))
                .map_err(|e| storage_error("cannot write to __transaction_state", &e))?;
        let tp = write.partition.tp.clone();
        write.replicated().await.map_err(|e| {
            tracing::warn!(partition = %tp, transactional_id, "a transaction state was written but not replicated: {e}");
            match e {
                WriteError::Storage => TxnError::StorageError,
                WriteError::NotLeader => TxnError::NotCoordinator,
                WriteError::TimedOut => TxnError::CoordinatorNotAvailable,
            }
        })
    }

    // ------------------------------------------------------------ client requests

    /// InitProducerId with a transactional id: the producer id and epoch for it.
    pub async fn init_producer_id(
        &self,
        node: &Node,
        transactional_id: &str,
        txn_timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16), TxnError> {
        if transactional_id.is_empty() {
            return Err(TxnError::InvalidRequest);
        }
        if txn_timeout_ms <= 0 || txn_timeout_ms > self.max_timeout_ms {
            return Err(TxnError::InvalidTransactionTimeout);
        }
        self.state_partition(node, transactional_id)?;
        let now = crate::util::now_ms();
        let handle = match self.handle(transactional_id) {
            Some(h) => h,
            None => {
                if self.txns.read().len() >= TRANSACTIONAL_IDS_MAX {
                    tracing::warn!("{TRANSACTIONAL_IDS_MAX} transactional ids are known; refusing a new one until idle ones expire");
                    return Err(TxnError::CoordinatorNotAvailable);
                }
                // Minted outside the map's lock (a new block asks the controller); a racing
                // first InitProducerId of the same id wastes one id, which is harmless.
                let pid = self.new_producer_id(node).await?;
                let fresh = TxnMetadata::new(transactional_id, pid, txn_timeout_ms, now);
                self.txns
                    .write()
                    .entry(transactional_id.to_string())
                    .or_insert_with(|| Arc::new(Mutex::new(fresh)))
                    .clone()
            }
        };
        // The decision may need a new producer id (an exhausted epoch): one is made available
        // first, since deciding cannot wait for the controller.
        self.producer_ids
            .ensure_available(node)
            .await
            .map_err(|e| {
                tracing::warn!("{e}");
                TxnError::CoordinatorNotAvailable
            })?;
        let mut m = handle.lock().await;
        let decision = m.init_producer_id(txn_timeout_ms, expected, now, || {
            self.producer_ids
                .try_generate()
                .ok_or(TxnError::CoordinatorNotAvailable)
        })?;
        match decision {
            InitDecision::Ready(next) => {
                self.write_state(node, transactional_id, Some(&next))
                    .await?;
                *m = next;
                tracing::info!(
                    transactional_id,
                    producer_id = m.producer_id,
                    producer_epoch = m.producer_epoch,
                    "initialized transactional id"
                );
                Ok((m.producer_id, m.producer_epoch))
            }
            InitDecision::AbortFirst(next) => {
                tracing::info!(
                    transactional_id,
                    "a new producer fences the one with an open transaction; aborting it"
                );
                self.write_state(node, transactional_id, Some(&next))
                    .await?;
                *m = next;
                self.complete(node, &mut m).await?;
                Err(TxnError::ConcurrentTransactions)
            }
        }
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets partition); `tv2`
    /// for the transaction version 2 form (v4+, sent by brokers for a produce).
    pub async fn add_partitions(
        &self,
        node: &Node,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<(String, i32)>,
        tv2: bool,
    ) -> Result<(), TxnError> {
        let handle = self.existing(node, transactional_id)?;
        let mut m = handle.lock().await;
        self.add_partitions_locked(node, &mut m, producer_id, producer_epoch, partitions, tv2)
            .await
    }

    /// [`Self::add_partitions`] for a transactional id already locked (a transaction version 2
    /// produce or offset commit adding its own partition before it writes).
    pub async fn add_partitions_locked(
        &self,
        node: &Node,
        m: &mut TxnMetadata,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<(String, i32)>,
        tv2: bool,
    ) -> Result<(), TxnError> {
        let now = crate::util::now_ms();
        if let Some(next) = m.add_partitions(producer_id, producer_epoch, partitions, tv2, now)? {
            let id = m.transactional_id.clone();
            self.write_state(node, &id, Some(&next)).await?;
            *m = next;
        }
        Ok(())
    }

    /// AddPartitionsToTxn v4+ with `verify_only`: which partitions are in the ongoing
    /// transaction.
    pub async fn verify(
        &self,
        node: &Node,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<Vec<bool>, TxnError> {
        let handle = self.existing(node, transactional_id)?;
        let m = handle.lock().await;
        m.verify_partitions(producer_id, producer_epoch, partitions)
    }

    /// Locks a transactional id for a write that must be verified against its ongoing
    /// transaction (a transactional produce, a transactional offset commit). Refused as
    /// [`Self::existing`] refuses: this broker does not coordinate the id, or its partition of
    /// `__transaction_state` is still loading (after a restart or a leader change), or the id
    /// is unknown.
    pub async fn lock(&self, node: &Node, transactional_id: &str) -> Result<TxnGuard, TxnError> {
        let handle = self.existing(node, transactional_id)?;
        Ok(handle.lock_owned().await)
    }

    /// EndTxn: commits or aborts the ongoing transaction. Returns the producer id and epoch
    /// the producer uses next (EndTxn v5 reports them; under transaction version 2, `tv2`, the
    /// epoch is one higher, or a new producer id has epoch 0).
    pub async fn end_txn(
        &self,
        node: &Node,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        tv2: bool,
    ) -> Result<(i64, i16), TxnError> {
        let handle = self.existing(node, transactional_id)?;
        let mut m = handle.lock().await;
        if tv2 && state::is_epoch_exhausted(m.producer_epoch) {
            // The decision may hand out a new producer id: have one ready, since deciding
            // cannot wait for the controller.
            self.producer_ids
                .ensure_available(node)
                .await
                .map_err(|e| {
                    tracing::warn!("{e}");
                    TxnError::CoordinatorNotAvailable
                })?;
        }
        let now = crate::util::now_ms();
        let decision = m.end_txn(producer_id, producer_epoch, commit, true, tv2, now, || {
            self.producer_ids
                .try_generate()
                .ok_or(TxnError::CoordinatorNotAvailable)
        })?;
        match decision {
            EndDecision::AlreadyDone => {}
            EndDecision::Prepare(next) => {
                self.write_state(node, transactional_id, Some(&next))
                    .await?;
                *m = next;
                // The outcome is decided and durable: a failure to write a marker now is
                // retried by the timer, and the client is told the transaction ended.
                if let Err(e) = self.complete(node, &mut m).await {
                    tracing::warn!(
                        transactional_id,
                        "transaction decided but not completed yet ({e}); will retry"
                    );
                }
            }
        }
        Ok((m.producer_id, m.producer_epoch))
    }

    /// Writes the markers of a transaction in PrepareCommit/PrepareAbort to each of its
    /// partitions, then its completion. On a storage error the transaction stays prepared and
    /// the timer retries (a partition may then get a second marker, which changes nothing).
    async fn complete(&self, node: &Node, m: &mut TxnMetadata) -> Result<(), TxnError> {
        let commit = match m.state {
            TxnState::PrepareCommit => true,
            TxnState::PrepareAbort => false,
            other => {
                tracing::error!(transactional_id = %m.transactional_id, state = other.name(), "asked to complete a transaction that is not prepared");
                return Err(TxnError::InvalidTxnState);
            }
        };
        let coordinator_epoch = self
            .state_partition(node, &m.transactional_id)?
            .leader_epoch();
        let marker = EndTxnMarker {
            commit,
            coordinator_epoch,
        };
        let partitions: Vec<(String, i32)> = m.partitions.iter().cloned().collect();
        let outcome = markers::write_all(
            node,
            &self.groups,
            m.producer_id,
            m.producer_epoch,
            marker,
            &partitions,
        )
        .await;
        if !outcome.retry.is_empty() {
            tracing::debug!(transactional_id = %m.transactional_id, partitions = ?outcome.retry, "transaction markers not written yet; retrying later");
            return Err(TxnError::StorageError);
        }
        let done = m.complete(crate::util::now_ms());
        self.write_state(node, &m.transactional_id.clone(), Some(&done))
            .await?;
        tracing::debug!(transactional_id = %m.transactional_id, state = done.state.name(), partitions = m.partitions.len(), "transaction completed");
        *m = done;
        Ok(())
    }

    // ------------------------------------------------------------ operators

    /// DescribeTransactions of one id.
    pub async fn describe(&self, transactional_id: &str) -> Result<TxnMetadata, TxnError> {
        if transactional_id.is_empty() {
            return Err(TxnError::InvalidRequest);
        }
        let handle = self
            .handle(transactional_id)
            .ok_or(TxnError::TransactionalIdNotFound)?;
        let m = handle.lock().await.clone();
        if m.state == TxnState::Dead {
            return Err(TxnError::TransactionalIdNotFound);
        }
        Ok(m)
    }

    /// Every known transactional id's state (ListTransactions), by id.
    pub async fn list(&self) -> Vec<TxnMetadata> {
        let mut handles: Vec<(String, TxnHandle)> = self
            .txns
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        handles.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::with_capacity(handles.len());
        for (_, h) in handles {
            out.push(h.lock().await.clone());
        }
        out
    }

    // ------------------------------------------------------------ timers

    /// Aborts transactions past their timeout, retries unfinished completions, and expires
    /// idle transactional ids, on the control runtime until the broker stops.
    pub async fn run_timers(self: Arc<Self>, node: Arc<Node>) {
        let mut tick = tokio::time::interval(Duration::from_millis(self.abort_check_ms));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut since_expiry = 0u64;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = self.prepared_loaded.notified() => {
                    self.abort_timed_out(&node).await;
                    continue;
                }
            }
            self.abort_timed_out(&node).await;
            since_expiry += self.abort_check_ms;
            if since_expiry >= self.expire_check_ms {
                since_expiry = 0;
                self.expire_ids(&node).await;
            }
        }
    }

    /// One pass of the timeout sweep (Kafka's `abortTimedOutTransactions`), which also
    /// finishes transactions left prepared by a failed marker write.
    pub async fn abort_timed_out(&self, node: &Node) {
        let handles: Vec<TxnHandle> = self.txns.read().values().cloned().collect();
        for h in handles {
            // A transaction busy with a request is not idle: look again next time.
            let Ok(mut m) = h.try_lock() else { continue };
            let now = crate::util::now_ms();
            if m.is_timed_out(now) {
                let id = m.transactional_id.clone();
                let next = match m.fence_and_abort(now) {
                    Ok(next) => next,
                    Err(e) => {
                        tracing::warn!(transactional_id = %id, "cannot abort a timed-out transaction: {e}");
                        continue;
                    }
                };
                tracing::info!(transactional_id = %id, producer_id = m.producer_id, timeout_ms = m.txn_timeout_ms, "aborting a transaction past its timeout");
                if self.write_state(node, &id, Some(&next)).await.is_err() {
                    continue;
                }
                *m = next;
            }
            if matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
                if let Err(e) = self.complete(node, &mut m).await {
                    tracing::warn!(transactional_id = %m.transactional_id, "completing a transaction failed again: {e}");
                }
            }
        }
    }

    /// Forgets transactional ids idle past `transactional.id.expiration.ms`, writing their
    /// tombstones.
    pub async fn expire_ids(&self, node: &Node) {
        let handles: Vec<(String, TxnHandle)> = self
            .txns
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (id, h) in handles {
            let Ok(mut m) = h.try_lock() else { continue };
            if !m.is_expired(crate::util::now_ms(), self.id_expiration_ms) {
                continue;
            }
            if self.write_state(node, &id, None).await.is_err() {
                continue;
            }
            m.state = TxnState::Dead;
            self.txns.write().remove(&id);
            tracing::info!(transactional_id = %id, "expired an idle transactional id");
        }
    }

    // ------------------------------------------------------------ load

    /// Follows the leadership of `__transaction_state` partitions (Kafka's `onElection` and
    /// `onResignation`): reloads the transactional ids of a partition this broker now leads
    /// (the last record of each id wins, as compaction would leave it) and has the timers
    /// complete at once the transactions that were prepared but not completed when the last
    /// leader stopped (as Kafka's marker channel does, apart from the metadata thread); forgets
    /// the ids of a partition it no longer leads. Ongoing transactions stay open: their
    /// producer may carry on, or the timeout sweep aborts them. Called whenever the metadata
    /// image changed here.
    pub fn follow_leadership(&self, node: &Node) {
        let Some(topic) = node.topics.get(TRANSACTION_STATE_TOPIC) else {
            return;
        };
        // Ids hash over the topic's own partition count, whatever the configuration says now.
        let count = topic
            .partition_count
            .clamp(1, self.coordinating.len() as i32);
        self.partitions.store(count, Ordering::Release);
        for (index, state) in self.coordinating[..count as usize].iter().enumerate() {
            let index = index as i32;
            let led = topic.led_partition(index).ok();
            match (led, state.load(Ordering::Acquire)) {
                (Some(p), NOT_COORDINATOR) => {
                    if state
                        .compare_exchange(
                            NOT_COORDINATOR,
                            LOADING,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_ok()
                    {
                        let prepared = self.load_partition(p);
                        state.store(LOADED, Ordering::Release);
                        self.complete_prepared(prepared);
                    }
                }
                (None, LOADED) => {
                    if state
                        .compare_exchange(LOADED, LOADING, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        let ids = self.unload_partition(index);
                        state.store(NOT_COORDINATOR, Ordering::Release);
                        tracing::info!(partition = index, transactional_ids = ids, "no longer coordinating the transactional ids of this partition of {TRANSACTION_STATE_TOPIC}");
                    }
                }
                _ => {}
            }
        }
    }

    /// Loads one partition's transactional ids; returns those with a prepared transaction.
    fn load_partition(&self, p: &Partition) -> Vec<String> {
        let mut states: HashMap<String, Option<TxnMetadata>> = HashMap::new();
        if let Err(e) = load_partition(p, &mut states) {
            tracing::error!(partition = %p.tp, "cannot load transactional ids: {e}");
        }
        let mut prepared = Vec::new();
        let mut txns = self.txns.write();
        for (id, m) in states {
            let Some(m) = m else { continue };
            if m.state == TxnState::Dead {
                continue;
            }
            if matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
                prepared.push(id.clone());
            }
            txns.insert(id, Arc::new(Mutex::new(m)));
        }
        tracing::info!(
            partition = %p.tp,
            transactional_ids = txns.len(),
            prepared = prepared.len(),
            "loaded transactional ids"
        );
        prepared
    }

    /// Has the timers complete the transactions prepared before this broker took their
    /// partition, at once. Not here: completing waits for replication, which needs this
    /// thread (the metadata publisher) to apply ISR and leadership changes.
    fn complete_prepared(&self, prepared: Vec<String>) {
        if !prepared.is_empty() {
            tracing::info!(transactional_ids = ?prepared, "completing transactions prepared before this broker coordinated them");
            self.prepared_loaded.notify_one();
        }
    }

    /// Forgets the transactional ids of partition `index`; returns how many.
    fn unload_partition(&self, index: i32) -> usize {
        let mut txns = self.txns.write();
        let before = txns.len();
        txns.retain(|id, _| self.partition_for(id) != index);
        before - txns.len()
    }
}

/// Replays one partition of `__transaction_state` into `states` (None: tombstoned).
fn load_partition(
    partition: &Partition,
    states: &mut HashMap<String, Option<TxnMetadata>>,
) -> Result<(), LogError> {
    partition.replay(|r| {
        let Replayed::Record {
            key: Some(key),
            value,
            ..
        } = r
        else {
            return;
        };
        let id = match records::decode_key(key) {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!(partition = %partition.tp, "{e}; skipped");
                return;
            }
        };
        match value {
            None => {
                states.insert(id, None);
            }
            Some(v) => match records::decode_value(&id, v) {
                Ok(m) => {
                    states.insert(id, Some(m));
                }
                Err(e) => {
                    tracing::warn!(partition = %partition.tp, transactional_id = %id, "{e}; skipped")
                }
            },
        }
    })?;
    Ok(())
}
