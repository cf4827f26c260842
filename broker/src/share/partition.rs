//! One share-partition (KIP-932): the delivery state of one topic partition for one share
//! group, sans-IO. The clock is an input (`now_ms`); log reads, the persisted state and the
//! dead-letter writes are the caller's.
//!
//! Offsets below the share-partition start offset (SPSO) are done: acknowledged, archived or
//! never deliverable (control records, aborted transactions, compacted gaps). Offsets from the
//! start up to the end offset (SPEO, exclusive) are in flight, one [`Record`] each; the window
//! `end - start` is bounded by `max_in_flight` (Kafka's `group.share.partition.max.record.locks`),
//! so acquisition stops while the oldest record is unfinished and the window is full. Offsets at
//! or past the end were never delivered.
//!
//! A record is *acquired* by one member under a lock that lasts `lock_ms`; each acquisition
//! counts one delivery. The member acknowledges it ACCEPT (done), RELEASE (available again),
//! REJECT (archived, never delivered again) or GAP (an offset the client found no record at),
//! or RENEW (KIP-1222: the lock starts again). A lock that expires, or a member that leaves,
//! releases the record. A record released at `delivery_limit` deliveries is archived instead of
//! made available: [`Archived`] tells the caller, which writes it to the dead-letter queue.

use std::collections::VecDeque;
use std::sync::Arc;

/// A share-group member's id.
pub type MemberId = Arc<str>;

/// How a member acknowledges a record (ShareFetch / ShareAcknowledge `acknowledge_types`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckType {
    /// No record at this offset (a gap in the fetched batches).
    Gap,
    Accept,
    Release,
    Reject,
    /// KIP-1222: keep the record and start its lock again.
    Renew,
}

impl AckType {
    pub fn from_wire(t: i8) -> Option<AckType> {
        Some(match t {
            0 => AckType::Gap,
            1 => AckType::Accept,
            2 => AckType::Release,
            3 => AckType::Reject,
            4 => AckType::Renew,
            _ => return None,
        })
    }
}

/// The acknowledge type RENEW on the wire.
pub const RENEW: i8 = 4;

/// Kafka's checks of one partition's acknowledgement batches in a request, before any reaches
/// the share-partition (its `validateAcknowledgementBatches`; a partition that fails them
/// answers INVALID_REQUEST without a message and nothing of it applies): each batch has
/// `first <= last`, starts no earlier than the previous batch's last offset, has one type or
/// one per offset, and only types the version knows (RENEW from ShareFetch and
/// ShareAcknowledge v2, `renew_supported`), RENEW only in a request that says it carries
/// renewals (`renew_ack`, KIP-1222's IsRenewAck).
pub fn acknowledgements_valid(
    batches: &[(i64, i64, &[i8])],
    renew_supported: bool,
    renew_ack: bool,
) -> bool {
    let max_type = if renew_supported { RENEW } else { RENEW - 1 };
    let mut previous_last = -1;
    for (first, last, types) in batches {
        let whole = types.len() == 1 || last.checked_sub(*first) == Some(types.len() as i64 - 1);
        if first > last
            || *first < previous_last
            || types.is_empty()
            || !whole
            || types.iter().any(|t| !(0..=max_type).contains(t))
            || (types.contains(&RENEW) && !renew_ack)
        {
            return false;
        }
        previous_last = *last;
    }
    true
}

/// Where a record stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Deliverable: never acquired since it became available again.
    Available,
    Acquired {
        member: MemberId,
        deadline_ms: i64,
    },
    /// Accepted, or not a deliverable record at all (gap, control record, aborted): done.
    Acknowledged,
    /// Rejected or over the delivery limit, and waiting to be written to the group's
    /// dead-letter topic (KIP-1191): never delivered again, but not done until
    /// [`SharePartition::finish_archiving`], so the start offset waits for it.
    Archiving,
    /// Rejected or over the delivery limit: done, never delivered again.
    Archived,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub state: State,
    /// How many times the record was acquired.
    pub delivery_count: i16,
}

impl Record {
    fn done(&self) -> bool {
        matches!(self.state, State::Acknowledged | State::Archived)
    }
}

/// Limits of one share-partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareLimits {
    /// `share.record.lock.duration.ms`.
    pub lock_ms: i64,
    /// `share.delivery.count.limit`: deliveries before a released record is archived.
    pub delivery_limit: i16,
    /// `group.share.partition.max.record.locks`: the in-flight window.
    pub max_in_flight: usize,
    /// Whether archived records go to a dead-letter topic first ([`State::Archiving`]).
    pub dead_letter: bool,
}

/// One batch as the log read returned it: its offsets, and whether its records are not to be
/// delivered (a control batch, or a transaction that was aborted, for read_committed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSpan {
    pub first: i64,
    pub last: i64,
    pub skip: bool,
}

/// How a fetch's `max_records` bounds an acquisition (ShareFetch v2's ShareAcquireMode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `batch_optimized` (0, the default and every v1 fetch): whole log batches, the last one
    /// finished where the limit falls inside it.
    Batches,
    /// `record_limit` (1): exactly `max_records`, ending inside a batch.
    Records,
}

/// Offsets acquired by one [`SharePartition::acquire`], as ShareFetch answers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acquired {
    pub first: i64,
    pub last: i64,
    pub delivery_count: i16,
}

/// Why a record was archived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveReason {
    /// A member acknowledged it REJECT.
    Rejected,
    /// It was released (acknowledged, timed out, or its member left) after its last allowed
    /// delivery.
    DeliveryLimit,
}

/// A record archived by an operation: the caller dead-letters it (KIP-1191).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Archived {
    pub offset: i64,
    pub delivery_count: i16,
    pub reason: ArchiveReason,
}

/// Why an acknowledgement was refused (INVALID_RECORD_STATE, or INVALID_REQUEST for a
/// malformed batch). Nothing of a refused batch is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckError {
    /// An offset that is not acquired by this member (never, no longer, or by another).
    InvalidRecordState(i64),
    /// `last < first`, a type list of the wrong length, or offsets past those acquired.
    InvalidRequest(&'static str),
    /// An acknowledge type Kafka does not define (INVALID_REQUEST without a message).
    InvalidType(i8),
}

/// A run of offsets in one persisted state (what `__share_group_state` stores; acquired
/// records are stored as available: their locks do not survive the broker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBatch {
    pub first: i64,
    pub last: i64,
    pub state: PersistedState,
    pub delivery_count: i16,
}

/// Kafka's `RecordState` ids as `__share_group_state` stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistedState {
    Available = 0,
    Acknowledged = 2,
    /// KIP-1191: archived, not yet written to the dead-letter topic.
    Archiving = 3,
    Archived = 4,
}

pub struct SharePartition {
    start: i64,
    /// `records[i]` is offset `start + i`; its length is `end - start`.
    records: VecDeque<Record>,
    limits: ShareLimits,
    /// Records in state Available (a scan for them is skipped when there are none).
    available: usize,
}

impl SharePartition {
    /// A share-partition that starts at `start_offset` with nothing in flight.
    pub fn new(start_offset: i64, limits: ShareLimits) -> SharePartition {
        assert!(start_offset >= 0, "share-partition start {start_offset}");
        assert!(limits.max_in_flight > 0 && limits.delivery_limit > 0);
        SharePartition {
            start: start_offset,
            records: VecDeque::new(),
            limits,
            available: 0,
        }
    }

    /// Rebuilds a share-partition from its persisted state (batches in offset order, within
    /// the window from `start_offset`).
    pub fn restore(
        start_offset: i64,
        batches: &[StateBatch],
        limits: ShareLimits,
    ) -> SharePartition {
        let mut sp = SharePartition::new(start_offset, limits);
        for b in batches {
            let first = b.first.max(sp.end());
            for _ in first..=b.last {
                let state = match b.state {
                    PersistedState::Available => State::Available,
                    PersistedState::Acknowledged => State::Acknowledged,
                    PersistedState::Archiving => State::Archiving,
                    PersistedState::Archived => State::Archived,
                };
                if state == State::Available {
                    sp.available += 1;
                }
                sp.records.push_back(Record {
                    state,
                    delivery_count: b.delivery_count,
                });
            }
        }
        sp.advance_start();
        sp
    }

    pub fn limits(&self) -> ShareLimits {
        self.limits
    }

    /// Takes new limits (a group config changed); records already acquired keep their lock.
    pub fn set_limits(&mut self, limits: ShareLimits) {
        assert!(limits.max_in_flight > 0 && limits.delivery_limit > 0);
        self.limits = limits;
    }

    /// The share-partition start offset: every offset below it is done.
    pub fn start_offset(&self) -> i64 {
        self.start
    }

    /// One past the last offset ever acquired.
    pub fn end(&self) -> i64 {
        self.start + self.records.len() as i64
    }

    pub fn record(&self, offset: i64) -> Option<&Record> {
        let i = offset.checked_sub(self.start)?;
        if i < 0 {
            return None;
        }
        self.records.get(i as usize)
    }

    /// Records in flight that are acquired, and that are archived (or archiving).
    pub fn counts(&self) -> (usize, usize) {
        let acquired = self
            .records
            .iter()
            .filter(|r| matches!(r.state, State::Acquired { .. }))
            .count();
        let archived = self
            .records
            .iter()
            .filter(|r| matches!(r.state, State::Archived | State::Archiving))
            .count();
        (acquired, archived)
    }

    /// Records in flight whose delivery is complete: acknowledged or archived (Kafka's
    /// `DeliveryCompleteCount`, KIP-1226).
    pub fn delivery_complete(&self) -> usize {
        self.records
            .iter()
            .filter(|r| matches!(r.state, State::Acknowledged | State::Archived))
            .count()
    }

    /// The records waiting to be dead-lettered (after a restart: those whose write may or may
    /// not have happened), with their delivery counts.
    pub fn archiving(&self) -> Vec<(i64, i16)> {
        self.records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.state == State::Archiving)
            .map(|(i, r)| (self.start + i as i64, r.delivery_count))
            .collect()
    }

    /// `offset` was written to the dead-letter topic: archived for good. False when it was not
    /// archiving (already finished, or moved past by the start).
    pub fn finish_archiving(&mut self, offset: i64) -> bool {
        let Some(i) = offset.checked_sub(self.start).filter(|i| *i >= 0) else {
            return false;
        };
        match self.records.get_mut(i as usize) {
            Some(r) if r.state == State::Archiving => {
                r.state = State::Archived;
                self.advance_start();
                self.check();
                true
            }
            _ => false,
        }
    }

    /// Where the next acquisition reads the log from, or `None` when nothing can be acquired
    /// (no record is available and the window is full).
    pub fn next_fetch_offset(&self) -> Option<i64> {
        if self.available > 0 {
            if let Some(i) = self
                .records
                .iter()
                .position(|r| r.state == State::Available)
            {
                return Some(self.start + i as i64);
            }
        }
        (self.records.len() < self.limits.max_in_flight).then(|| self.end())
    }

    /// Acquires for `member` what it may take from `batches` (read from the log at
    /// [`next_fetch_offset`](Self::next_fetch_offset), in offset order): available records in
    /// flight and new records past the end, up to `max_records` and the window. Offsets past
    /// the end that no batch holds, and the records of skipped batches, are done at once.
    ///
    /// `max_records` is exact in Kafka's `record_limit` acquire mode (KIP-1206): acquisition
    /// ends inside the batch where the limit falls. In `batch_optimized` mode
    /// ([`Limit::Batches`]) it is a soft limit, as in Kafka: no batch is started once it is
    /// reached, but the batch in which it falls is acquired to its end.
    pub fn acquire(
        &mut self,
        member: &MemberId,
        batches: &[BatchSpan],
        max_records: usize,
        limit: Limit,
        now_ms: i64,
    ) -> Vec<Acquired> {
        let deadline_ms = now_ms.saturating_add(self.limits.lock_ms);
        let mut out: Vec<Acquired> = Vec::new();
        let mut taken = 0usize;
        let push = |out: &mut Vec<Acquired>, offset: i64, delivery_count: i16| match out.last_mut()
        {
            Some(a) if a.last + 1 == offset && a.delivery_count == delivery_count => {
                a.last = offset
            }
            _ => out.push(Acquired {
                first: offset,
                last: offset,
                delivery_count,
            }),
        };
        'batches: for b in batches {
            debug_assert!(b.first <= b.last, "batch {b:?}");
            if taken >= max_records {
                break;
            }
            let mut offset = b.first.max(self.start);
            while offset <= b.last {
                if taken >= max_records && limit == Limit::Records {
                    break 'batches;
                }
                let end = self.end();
                if offset < end {
                    let r = &mut self.records[(offset - self.start) as usize];
                    if r.state == State::Available && !b.skip {
                        r.state = State::Acquired {
                            member: member.clone(),
                            deadline_ms,
                        };
                        r.delivery_count = r.delivery_count.saturating_add(1);
                        self.available -= 1;
                        taken += 1;
                        push(&mut out, offset, r.delivery_count);
                    }
                    offset += 1;
                    continue;
                }
                // New offsets: nothing past the window.
                if self.records.len() >= self.limits.max_in_flight {
                    break 'batches;
                }
                // Offsets between the end and this batch hold no record (compaction, or a
                // batch the read did not return): done.
                while self.end() < offset && self.records.len() < self.limits.max_in_flight {
                    self.push_done();
                }
                // Filled up to the window (the loop stops at the offset or there).
                if self.records.len() >= self.limits.max_in_flight {
                    break 'batches;
                }
                debug_assert_eq!(self.end(), offset);
                if b.skip {
                    self.push_done();
                } else {
                    self.records.push_back(Record {
                        state: State::Acquired {
                            member: member.clone(),
                            deadline_ms,
                        },
                        delivery_count: 1,
                    });
                    taken += 1;
                    push(&mut out, offset, 1);
                }
                offset += 1;
            }
        }
        self.advance_start();
        self.check();
        out
    }

    /// Applies one acknowledgement batch of `member`: offsets `first..=last` with one type for
    /// all or one per offset. Kafka's share-partition rules: offsets below the start offset are
    /// done already and skipped (a batch wholly below it changes nothing, without error); a
    /// batch past every acquired offset is INVALID_REQUEST ("batch record not found"), and so is
    /// one with nothing in flight; every other offset must be acquired by `member`
    /// (INVALID_RECORD_STATE). Nothing of a refused batch is applied.
    pub fn acknowledge(
        &mut self,
        member: &str,
        first: i64,
        last: i64,
        types: &[i8],
        now_ms: i64,
    ) -> Result<Vec<Archived>, AckError> {
        self.acknowledge_all(member, &[(first, last, types)], now_ms)
    }

    /// Applies a request's acknowledgement batches of one partition, all or none: the first
    /// refused batch refuses them all (Kafka rolls back the batches before it).
    pub fn acknowledge_all(
        &mut self,
        member: &str,
        batches: &[(i64, i64, &[i8])],
        now_ms: i64,
    ) -> Result<Vec<Archived>, AckError> {
        let mut checked = Vec::with_capacity(batches.len());
        for (first, last, types) in batches {
            if let Some(parsed) = self.check_ack(member, *first, *last, types)? {
                checked.push((*first, *last, parsed));
            }
        }
        let mut archived = Vec::new();
        for (first, last, parsed) in checked {
            for offset in first.max(self.start)..=last {
                let t = if parsed.len() == 1 {
                    parsed[0]
                } else {
                    parsed[(offset - first) as usize]
                };
                let limit = self.limits.delivery_limit;
                let lock_ms = self.limits.lock_ms;
                let dead_letter = self.limits.dead_letter;
                let r = &mut self.records[(offset - self.start) as usize];
                match t {
                    AckType::Accept | AckType::Gap => r.state = State::Acknowledged,
                    AckType::Reject => {
                        r.state = archived_state(dead_letter);
                        archived.push(Archived {
                            offset,
                            delivery_count: r.delivery_count,
                            reason: ArchiveReason::Rejected,
                        });
                    }
                    AckType::Release => {
                        if let Some(a) = release(r, offset, limit, dead_letter) {
                            archived.push(a);
                        } else {
                            self.available += 1;
                        }
                    }
                    AckType::Renew => {
                        if let State::Acquired { deadline_ms, .. } = &mut r.state {
                            *deadline_ms = now_ms.saturating_add(lock_ms);
                        }
                    }
                }
            }
        }
        self.advance_start();
        self.check();
        Ok(archived)
    }

    /// Checks one acknowledgement batch; `None` when it lies wholly below the start offset.
    fn check_ack(
        &self,
        member: &str,
        first: i64,
        last: i64,
        types: &[i8],
    ) -> Result<Option<Vec<AckType>>, AckError> {
        if last < first {
            return Err(AckError::InvalidRequest("last offset before first offset"));
        }
        let n = (last - first + 1) as usize;
        if types.len() != 1 && types.len() != n {
            return Err(AckError::InvalidRequest(
                "acknowledge types neither one nor one per offset",
            ));
        }
        let mut parsed = Vec::with_capacity(types.len());
        for t in types {
            parsed.push(AckType::from_wire(*t).ok_or(AckError::InvalidType(*t))?);
        }
        if last < self.start {
            return Ok(None);
        }
        if self.records.is_empty() {
            return Err(AckError::InvalidRecordState(first.max(self.start)));
        }
        if first >= self.end() {
            return Err(AckError::InvalidRequest(
                "Batch record not found. The first offset in request is past acquired records.",
            ));
        }
        if last >= self.end() {
            return Err(AckError::InvalidRequest(
                "Batch record not found. The last offset in request is past acquired records.",
            ));
        }
        for offset in first.max(self.start)..=last {
            match self.record(offset) {
                Some(Record {
                    state: State::Acquired { member: m, .. },
                    ..
                }) if &**m == member => {}
                _ => return Err(AckError::InvalidRecordState(offset)),
            }
        }
        Ok(Some(parsed))
    }

    /// Releases every record whose lock expired by `now_ms`.
    pub fn expire(&mut self, now_ms: i64) -> Vec<Archived> {
        self.release_where(|_, deadline| deadline <= now_ms)
    }

    /// Releases every record `member` holds (it left the group or closed its share session).
    pub fn release_member(&mut self, member: &str) -> Vec<Archived> {
        self.release_where(|m, _| m == member)
    }

    fn release_where(&mut self, mut hit: impl FnMut(&str, i64) -> bool) -> Vec<Archived> {
        let limit = self.limits.delivery_limit;
        let dead_letter = self.limits.dead_letter;
        let mut archived = Vec::new();
        for (i, r) in self.records.iter_mut().enumerate() {
            let State::Acquired {
                member,
                deadline_ms,
            } = &r.state
            else {
                continue;
            };
            if !hit(member, *deadline_ms) {
                continue;
            }
            let offset = self.start + i as i64;
            match release(r, offset, limit, dead_letter) {
                Some(a) => archived.push(a),
                None => self.available += 1,
            }
        }
        self.advance_start();
        self.check();
        archived
    }

    /// The earliest lock deadline, if any record is acquired.
    pub fn next_deadline(&self) -> Option<i64> {
        self.records
            .iter()
            .filter_map(|r| match r.state {
                State::Acquired { deadline_ms, .. } => Some(deadline_ms),
                _ => None,
            })
            .min()
    }

    /// Moves the start to `offset` when the log no longer holds what lies below it (retention,
    /// DeleteRecords) or an operator reset it (AlterShareGroupOffsets on an empty group):
    /// everything below is dropped, whatever its state. Moving back is only for resets, and
    /// drops everything in flight.
    pub fn move_start(&mut self, offset: i64) {
        if offset >= self.end() || offset < self.start {
            self.records.clear();
            self.available = 0;
            self.start = offset.max(0);
        } else {
            while self.start < offset {
                let r = self.records.pop_front().expect("offset within the window");
                if r.state == State::Available {
                    self.available -= 1;
                }
                self.start += 1;
            }
        }
        self.advance_start();
        self.check();
    }

    /// Starts over at `offset` with nothing in flight (an operator's reset).
    pub fn reset(&mut self, offset: i64) {
        assert!(offset >= 0, "share-partition start {offset}");
        self.records.clear();
        self.available = 0;
        self.start = offset;
        self.check();
    }

    /// The state to persist: the start and runs of equal state within the window.
    pub fn snapshot(&self) -> (i64, Vec<StateBatch>) {
        let mut out: Vec<StateBatch> = Vec::new();
        for (i, r) in self.records.iter().enumerate() {
            let offset = self.start + i as i64;
            let state = match r.state {
                State::Available | State::Acquired { .. } => PersistedState::Available,
                State::Acknowledged => PersistedState::Acknowledged,
                State::Archiving => PersistedState::Archiving,
                State::Archived => PersistedState::Archived,
            };
            match out.last_mut() {
                Some(b)
                    if b.last + 1 == offset
                        && b.state == state
                        && b.delivery_count == r.delivery_count =>
                {
                    b.last = offset
                }
                _ => out.push(StateBatch {
                    first: offset,
                    last: offset,
                    state,
                    delivery_count: r.delivery_count,
                }),
            }
        }
        (self.start, out)
    }

    /// Appends a finished offset: with nothing in flight, the start simply moves past it.
    fn push_done(&mut self) {
        if self.records.is_empty() {
            self.start += 1;
        } else {
            self.records.push_back(Record {
                state: State::Acknowledged,
                delivery_count: 0,
            });
        }
    }

    fn advance_start(&mut self) {
        while self.records.front().is_some_and(Record::done) {
            self.records.pop_front();
            self.start += 1;
        }
    }

    /// Cheap invariants, checked after every change.
    fn check(&self) {
        assert!(self.start >= 0);
        assert!(
            self.records.front().is_none_or(|r| !r.done()),
            "share-partition start {} is at a finished record",
            self.start
        );
        debug_assert_eq!(
            self.available,
            self.records
                .iter()
                .filter(|r| r.state == State::Available)
                .count()
        );
    }
}

/// Where an archived record goes: straight to Archived, or through Archiving when the group
/// dead-letters its records.
fn archived_state(dead_letter: bool) -> State {
    if dead_letter {
        State::Archiving
    } else {
        State::Archived
    }
}

/// Releases one acquired record: available again, or archived at the delivery limit.
fn release(r: &mut Record, offset: i64, limit: i16, dead_letter: bool) -> Option<Archived> {
    debug_assert!(matches!(r.state, State::Acquired { .. }));
    if r.delivery_count >= limit {
        r.state = archived_state(dead_letter);
        Some(Archived {
            offset,
            delivery_count: r.delivery_count,
            reason: ArchiveReason::DeliveryLimit,
        })
    } else {
        r.state = State::Available;
        None
    }
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;
