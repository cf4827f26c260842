//! A fetcher's side of a fetch session with one broker (Kafka's `FetchSessionHandler`): it
//! remembers what the broker's session holds, so that each request names only the partitions
//! added or changed since the last one and those to forget, and it reads each answer as the
//! protocol means it: a partition absent from an incremental answer has nothing new.
//!
//! Any trouble starts a new session with a full fetch: FETCH_SESSION_ID_NOT_FOUND (the broker
//! lost or evicted the session) asks for a new one; any other error, an answer that does not fit
//! the session, or a request that got no answer closes the old session and asks for a new one
//! in the same full request. A broker that makes no session (it has no room, or predates
//! sessions) answers session id 0, and the fetcher keeps sending full fetches.

use std::collections::{HashMap, HashSet};

use kafka_protocol::ResponseError;

use super::{next_epoch, FetchParams, PartitionKey, INITIAL_EPOCH, INVALID_SESSION_ID};

/// The session as the fetcher knows it.
#[derive(Debug, Clone, Default)]
pub struct FetchSessionHandler {
    /// The session of the next request (0: none yet).
    session_id: i32,
    /// The next request's epoch: 0 for a full fetch.
    epoch: i32,
    /// What the broker's session holds: each partition as last sent.
    partitions: HashMap<PartitionKey, FetchParams>,
}

/// One request's session fields and partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequestData {
    pub session_id: i32,
    pub epoch: i32,
    /// The partitions to name: all of them in a full fetch; in an incremental one those added
    /// or changed, in the order they were wanted.
    pub to_send: Vec<(PartitionKey, FetchParams)>,
    /// `forgotten_topics_data`: in the session, no longer wanted.
    pub to_forget: Vec<PartitionKey>,
}

impl FetchSessionHandler {
    pub fn new() -> FetchSessionHandler {
        FetchSessionHandler {
            session_id: INVALID_SESSION_ID,
            epoch: INITIAL_EPOCH,
            partitions: HashMap::new(),
        }
    }

    pub fn session_id(&self) -> i32 {
        self.session_id
    }

    /// Whether the next request is a full fetch.
    pub fn is_full(&self) -> bool {
        self.epoch <= INITIAL_EPOCH
    }

    /// The next request, for the partitions `wanted` now (each once; a full fetch lists them in
    /// this order, which is the order the broker's response budget serves them in).
    pub fn build(&mut self, wanted: Vec<(PartitionKey, FetchParams)>) -> FetchRequestData {
        if self.is_full() {
            self.partitions = wanted.iter().cloned().collect();
            return FetchRequestData {
                session_id: self.session_id,
                epoch: self.epoch,
                to_send: wanted,
                to_forget: Vec::new(),
            };
        }
        let mut before =
            std::mem::replace(&mut self.partitions, HashMap::with_capacity(wanted.len()));
        let mut to_send = Vec::new();
        for (key, params) in wanted {
            if before.remove(&key) != Some(params) {
                to_send.push((key.clone(), params));
            }
            self.partitions.insert(key, params);
        }
        FetchRequestData {
            session_id: self.session_id,
            epoch: self.epoch,
            to_send,
            to_forget: before.into_keys().collect(),
        }
    }

    /// The broker answered the last request built with top-level `error_code`, `session_id` and
    /// these partitions. Returns whether the answer's partitions may be used; if not, the next
    /// request is a full fetch that starts a new session.
    pub fn handle_response<'a>(
        &mut self,
        error_code: i16,
        session_id: i32,
        partitions: impl IntoIterator<Item = &'a PartitionKey>,
    ) -> bool {
        if error_code != 0 {
            if error_code == ResponseError::FetchSessionIdNotFound.code() {
                self.session_id = INVALID_SESSION_ID;
            }
            self.epoch = INITIAL_EPOCH;
            return false;
        }
        let answered: HashSet<&PartitionKey> = partitions.into_iter().collect();
        let extra = answered.iter().any(|k| !self.partitions.contains_key(k));
        if self.is_full() {
            let omitted = self.partitions.keys().any(|k| !answered.contains(k));
            if extra || omitted {
                tracing::info!(extra, omitted, "a full fetch answer does not match the partitions asked for; starting a new fetch session");
                self.session_id = INVALID_SESSION_ID;
                self.epoch = INITIAL_EPOCH;
                return false;
            }
            self.session_id = session_id;
            self.epoch = if session_id == INVALID_SESSION_ID {
                INITIAL_EPOCH
            } else {
                next_epoch(INITIAL_EPOCH)
            };
            return true;
        }
        if extra {
            tracing::info!(
                session_id = self.session_id,
                "an incremental fetch answer names partitions outside the session; starting a new one"
            );
            self.epoch = INITIAL_EPOCH;
            return false;
        }
        if session_id == INVALID_SESSION_ID {
            // The broker closed the session (it answered without one).
            self.session_id = INVALID_SESSION_ID;
            self.epoch = INITIAL_EPOCH;
        } else {
            self.epoch = next_epoch(self.epoch);
        }
        true
    }

    /// The last request got no answer (the connection failed): close the session and start a
    /// new one with the next request.
    pub fn handle_error(&mut self) {
        self.epoch = INITIAL_EPOCH;
    }
}
