//! The broker's fetch sessions (Kafka's `FetchSessionCache` and `FetchManager`): for each
//! session, its partitions in order with what the fetcher last asked of each and what it was
//! last told, so that an incremental request may name only what changed and its answer holds
//! only the partitions with something new.
//!
//! A fetch goes through the cache twice: [`FetchSessionCache::new_context`] when it arrives
//! (which partitions to read, and the session's epoch advanced), and when its answer is ready
//! either [`FetchSessionCache::create`] (a full fetch asking for a session) or
//! [`FetchSessionCache::complete`] (an incremental one: which partitions to answer). The fetch
//! may long-poll in between without holding the cache.
//!
//! Rules, each Kafka's:
//! - An incremental answer holds a partition that has records, an error, a diverging epoch, or a
//!   high watermark, last stable offset or log start offset other than last told. A partition
//!   that returned records moves to the end of the session's order, so that the response
//!   budget does not go to the same large partitions first every time.
//! - `max.incremental.fetch.session.cache.slots` sessions at most. A new session may evict the
//!   least recently used one if it went unused for longer than the eviction time; else the
//!   least valuable evictable one if the new one is worth more (a follower's over a consumer's,
//!   then more partitions over fewer). A follower's session is evictable only once it is older
//!   than the eviction time, and then only by another follower's; a consumer's likewise only by
//!   a follower's before that age (its age is judged at its last use, as Kafka does).
//! - An incremental request that leaves its session empty closes it and is answered without one.
//!
//! Sessions are found by a linear pass only when a new one must evict (at most the slots, 1000);
//! everything else is a hash lookup plus work in proportion to the session's partitions, which
//! the fetch reads anyway.

use std::collections::HashMap;

use kafka_protocol::ResponseError;
use rand::{Rng, SeedableRng};

use super::{next_epoch, FetchParams, PartitionKey, FINAL_EPOCH, INITIAL_EPOCH};

/// Kafka's `max.incremental.fetch.session.cache.slots` default.
pub const SESSION_SLOTS_DEFAULT: usize = 1_000;
/// Kafka's `MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`: how long a session must have gone
/// unused to be evicted by any new one, and how old it must be to be evicted by a more valuable
/// one.
pub const EVICTION_MS: u64 = 120_000;
/// Fetch sessions exist from Fetch v7.
pub const FIRST_SESSION_VERSION: i16 = 7;

/// What one partition's answer says, as far as its session cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub error_code: i16,
    pub has_records: bool,
    pub diverging_epoch: bool,
    /// The leader named another replica for a consumer to read from (KIP-392).
    pub preferred_read_replica: bool,
}

/// What the fetcher was last told of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Told {
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    error_code: i16,
}

impl From<&Answered> for Told {
    fn from(a: &Answered) -> Told {
        Told {
            high_watermark: a.high_watermark,
            last_stable_offset: a.last_stable_offset,
            log_start_offset: a.log_start_offset,
            error_code: a.error_code,
        }
    }
}

#[derive(Debug, Clone)]
struct CachedPartition {
    key: PartitionKey,
    params: FetchParams,
    told: Told,
}

/// One fetch session. Its partitions live in slots (freed ones reused) so that reordering them
/// rewrites a vector of slot numbers and never the hash index.
#[derive(Debug)]
struct Session {
    id: i32,
    /// A follower's (Kafka: privileged), which consumers' sessions cannot evict.
    privileged: bool,
    uses_topic_ids: bool,
    creation_ms: u64,
    last_used_ms: u64,
    /// The epoch the next request must carry.
    epoch: i32,
    slots: Vec<Option<CachedPartition>>,
    free: Vec<usize>,
    index: HashMap<PartitionKey, usize>,
    order: Vec<usize>,
}

/// A partition not told anything yet: whatever its first answer says differs.
const NOTHING_TOLD: Told = Told {
    high_watermark: -1,
    last_stable_offset: -1,
    log_start_offset: -1,
    error_code: -1,
};

impl Session {
    fn len(&self) -> usize {
        self.order.len()
    }

    fn insert(&mut self, key: PartitionKey, params: FetchParams, told: Told) {
        debug_assert!(!self.index.contains_key(&key));
        let entry = CachedPartition {
            key: key.clone(),
            params,
            told,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s] = Some(entry);
                s
            }
            None => {
                self.slots.push(Some(entry));
                self.slots.len() - 1
            }
        };
        self.index.insert(key, slot);
        self.order.push(slot);
    }

    /// Adds a partition at the end, or changes what is asked of one already there (in place).
    fn upsert(&mut self, key: &PartitionKey, params: FetchParams) {
        match self.index.get(key) {
            Some(&slot) => {
                self.slots[slot]
                    .as_mut()
                    .expect("an indexed slot is full")
                    .params = params
            }
            None => self.insert(key.clone(), params, NOTHING_TOLD),
        }
    }

    fn remove(&mut self, key: &PartitionKey) {
        if let Some(slot) = self.index.remove(key) {
            self.slots[slot] = None;
            self.free.push(slot);
            self.order.retain(|&s| s != slot);
        }
    }

    fn partitions(&self) -> impl Iterator<Item = &CachedPartition> {
        self.order
            .iter()
            .map(|&s| self.slots[s].as_ref().expect("an ordered slot is full"))
    }

    /// Kafka's `EvictableKey` without the id: less is evicted first.
    fn value(&self) -> (bool, usize) {
        (self.privileged, self.len())
    }
}

/// What a fetch reads, decided when it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Context {
    /// The request's own partitions, answered without a session: epoch -1, a version before
    /// sessions, or an incremental request that left its session empty (which closed it).
    Sessionless,
    /// The request's own partitions; the answer makes a session of them if the cache has room
    /// ([`FetchSessionCache::create`]).
    Full,
    /// The session's partitions, in its order, with what was last asked of each (the request's
    /// changes applied). The answer is filtered by [`FetchSessionCache::complete`].
    Incremental {
        id: i32,
        /// The session's epoch after this request: it must still be this when the answer is
        /// made, or another request of the session came in between.
        epoch: i32,
        partitions: Vec<(PartitionKey, FetchParams)>,
    },
    /// Answered with this error alone (and session id 0).
    Error(ResponseError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// `max.incremental.fetch.session.cache.slots`.
    pub max_sessions: usize,
    pub eviction_ms: u64,
}

impl Default for CacheConfig {
    fn default() -> CacheConfig {
        CacheConfig {
            max_sessions: SESSION_SLOTS_DEFAULT,
            eviction_ms: EVICTION_MS,
        }
    }
}

pub struct FetchSessionCache {
    config: CacheConfig,
    sessions: HashMap<i32, Session>,
    /// Partitions over all sessions.
    partitions: usize,
    evictions: u64,
    rng: rand::rngs::StdRng,
}

impl std::fmt::Debug for FetchSessionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchSessionCache")
            .field("sessions", &self.sessions.len())
            .field("partitions", &self.partitions)
            .field("evictions", &self.evictions)
            .finish()
    }
}

impl FetchSessionCache {
    /// An empty cache whose session ids come from a generator seeded with `seed`.
    pub fn new(config: CacheConfig, seed: u64) -> FetchSessionCache {
        FetchSessionCache {
            config,
            sessions: HashMap::new(),
            partitions: 0,
            evictions: 0,
            rng: rand::rngs::StdRng::seed_from_u64(seed),
        }
    }

    /// Sessions cached (Kafka's `NumIncrementalFetchSessions`).
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Partitions over all sessions (Kafka's `NumIncrementalFetchPartitionsCached`).
    pub fn partitions(&self) -> usize {
        self.partitions
    }

    /// Sessions evicted to make room for others, since the start.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// The epoch session `id` expects next, if it exists.
    pub fn epoch(&self, id: i32) -> Option<i32> {
        self.sessions.get(&id).map(|s| s.epoch)
    }

    /// A fetch arrived (Kafka's `FetchManager.newContext`): `sent` are its partitions,
    /// `forgotten` its `forgotten_topics_data`.
    pub fn new_context(
        &mut self,
        version: i16,
        session_id: i32,
        epoch: i32,
        sent: &[(PartitionKey, FetchParams)],
        forgotten: &[PartitionKey],
        now_ms: u64,
    ) -> Context {
        if version < FIRST_SESSION_VERSION {
            return Context::Sessionless;
        }
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            // A full fetch closes the session it names.
            self.remove(session_id);
            return if epoch == FINAL_EPOCH {
                Context::Sessionless
            } else {
                Context::Full
            };
        }
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return Context::Error(ResponseError::FetchSessionIdNotFound);
        };
        if session.epoch != epoch {
            return Context::Error(ResponseError::InvalidFetchSessionEpoch);
        }
        if session.uses_topic_ids != (version >= 13) {
            return Context::Error(ResponseError::FetchSessionTopicIdError);
        }
        let before = session.len();
        for (key, params) in sent {
            session.upsert(key, *params);
        }
        for key in forgotten {
            session.remove(key);
        }
        let after = session.len();
        self.partitions = self.partitions + after - before;
        if after == 0 {
            self.remove(session_id);
            return Context::Sessionless;
        }
        session.last_used_ms = now_ms;
        session.epoch = next_epoch(session.epoch);
        Context::Incremental {
            id: session_id,
            epoch: session.epoch,
            partitions: session
                .partitions()
                .map(|p| (p.key.clone(), p.params))
                .collect(),
        }
    }

    /// The answer of a full fetch that asked for a session (Kafka's
    /// `FullFetchContext.updateAndGenerateResponseData`): its partitions, in the request's order,
    /// with what each was asked and answered. Returns the new session's id, or 0 when there is
    /// no room (the fetcher goes on with full fetches).
    pub fn create(
        &mut self,
        now_ms: u64,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: Vec<(PartitionKey, FetchParams, Answered)>,
    ) -> i32 {
        let size = partitions.len();
        if self.sessions.len() >= self.config.max_sessions
            && !self.try_evict(privileged, size, now_ms)
        {
            return super::INVALID_SESSION_ID;
        }
        let id = self.new_session_id();
        let mut session = Session {
            id,
            privileged,
            uses_topic_ids,
            creation_ms: now_ms,
            last_used_ms: now_ms,
            epoch: next_epoch(INITIAL_EPOCH),
            slots: Vec::with_capacity(size),
            free: Vec::new(),
            index: HashMap::with_capacity(size),
            order: Vec::with_capacity(size),
        };
        for (key, params, answered) in partitions {
            // A partition named twice is kept once, as last asked.
            if session.index.contains_key(&key) {
                session.upsert(&key, params);
            } else {
                session.insert(key, params, Told::from(&answered));
            }
        }
        self.partitions += session.len();
        self.sessions.insert(id, session);
        id
    }

    /// The answer of an incremental fetch is ready (Kafka's
    /// `IncrementalFetchContext.updateAndGenerateResponseData`): `answers` are those of the
    /// context's partitions, in its order. Returns for each whether the answer includes it (and
    /// records what it tells), or the error to answer instead: the session is gone, or another
    /// request of it came in between (INVALID_FETCH_SESSION_EPOCH, as Kafka answers a duplicate).
    pub fn complete(
        &mut self,
        id: i32,
        epoch: i32,
        answers: &[Answered],
    ) -> Result<Vec<bool>, ResponseError> {
        let Some(session) = self.sessions.get_mut(&id) else {
            return Err(ResponseError::FetchSessionIdNotFound);
        };
        if session.epoch != epoch {
            return Err(ResponseError::InvalidFetchSessionEpoch);
        }
        // No request of this session came in since its context was made, so the session holds
        // the context's partitions in the context's order.
        assert_eq!(session.order.len(), answers.len(), "session {id} changed");
        let mut included = Vec::with_capacity(answers.len());
        let mut moved = false;
        let mut seen_records = false;
        for (&slot, answer) in session.order.iter().zip(answers) {
            let p = session.slots[slot]
                .as_mut()
                .expect("an ordered slot is full");
            let told = Told::from(answer);
            let include = answer.has_records
                || answer.diverging_epoch
                || answer.preferred_read_replica
                || answer.error_code != 0
                || told != p.told;
            p.told = told;
            included.push(include);
            // The order changes only if a partition without records follows one with records.
            moved |= seen_records && !answer.has_records;
            seen_records |= answer.has_records;
        }
        if moved {
            // Those that returned records go to the end, each group in its order.
            let slots = || session.order.iter().copied().zip(answers);
            let without = slots().filter(|(_, a)| !a.has_records);
            let with = slots().filter(|(_, a)| a.has_records);
            session.order = without.chain(with).map(|(slot, _)| slot).collect();
        }
        Ok(included)
    }

    /// Closes session `id` (no-op for an unknown id or 0).
    fn remove(&mut self, id: i32) -> Option<Session> {
        let session = self.sessions.remove(&id)?;
        self.partitions -= session.len();
        Some(session)
    }

    /// Kafka's `tryEvict`: makes room for a new session of `size` partitions, `privileged` if a
    /// follower's. Returns whether it did.
    fn try_evict(&mut self, privileged: bool, size: usize, now_ms: u64) -> bool {
        // The least recently used session, if stale, goes whatever the new one is.
        let stale = self
            .sessions
            .values()
            .min_by_key(|s| (s.last_used_ms, s.id))
            .filter(|s| now_ms.saturating_sub(s.last_used_ms) > self.config.eviction_ms)
            .map(|s| s.id);
        let victim = stale.or_else(|| {
            let eviction_ms = self.config.eviction_ms;
            let (id, value) = self
                .sessions
                .values()
                .filter(|s| {
                    let aged = s.last_used_ms.saturating_sub(s.creation_ms) > eviction_ms;
                    if privileged {
                        !s.privileged || aged
                    } else {
                        aged
                    }
                })
                .map(|s| (s.id, s.value()))
                .min_by_key(|&(id, value)| (value, id))?;
            // Evicted only by something worth more: a tie keeps the old one.
            ((privileged, size) > value).then_some(id)
        });
        match victim {
            Some(id) => {
                self.remove(id);
                self.evictions += 1;
                true
            }
            None => false,
        }
    }

    /// A random positive id no session has.
    fn new_session_id(&mut self) -> i32 {
        loop {
            let id = self.rng.gen_range(1..=i32::MAX);
            if !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}
