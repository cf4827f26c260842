//! Fetch on the metadata log, both sides: the leader validates each fetch position against
//! its epoch cache and answers with records, a diverging epoch or a snapshot to fetch, and
//! advances the high watermark; a follower appends, truncates where told, downloads
//! snapshots, and fetches again once what it holds is on disk.

use bytes::{Bytes, BytesMut};

use super::*;

impl Quorum {
    // ----- the leader's side of Fetch -----

    pub(super) fn append_as_leader(
        &mut self,
        now: u64,
        control: bool,
        records: Vec<Record>,
    ) -> i64 {
        let batch = Batch {
            base_offset: self.log.end_offset(),
            epoch: self.epoch,
            control,
            append_time_ms: now as i64,
            records,
        };
        let last = batch.last_offset();
        self.log.append(batch.clone());
        self.voters_appended(now, &batch);
        self.actions.push_back(Action::Append(vec![batch]));
        self.actions.push_back(Action::Flush {
            end_offset: self.log.end_offset(),
        });
        last
    }

    pub(super) fn on_fetch(&mut self, now: u64, from: NodeId, r: FetchRequest) {
        let me = self.cfg.node_id;
        if r.replica_id != from || from == me {
            return;
        }
        let State::Leader(l) = &mut self.state else {
            let error = if r.epoch > self.epoch {
                QuorumError::UnknownLeaderEpoch
            } else if r.epoch < self.epoch {
                QuorumError::FencedLeaderEpoch
            } else {
                QuorumError::NotLeaderOrFollower
            };
            return self.reply_fetch(from, &r, Some(error), None, None, Vec::new());
        };
        if r.epoch != self.epoch {
            let error = if r.epoch < self.epoch {
                QuorumError::FencedLeaderEpoch
            } else {
                QuorumError::UnknownLeaderEpoch
            };
            return self.reply_fetch(from, &r, Some(error), None, None, Vec::new());
        }
        let voter = self.voters.ids().contains(&from);
        let replicas = if voter {
            &mut l.replicas
        } else {
            &mut l.observers
        };
        let replica = replicas.entry(from).or_insert(ReplicaState {
            node_id: from,
            ..Default::default()
        });
        replica.last_fetch_ms = Some(now);
        l.parked.remove(&from);

        // Is the fetch position on our log?
        if r.fetch_offset < self.log.start_offset() {
            let snapshot = self.log.snapshot();
            return self.reply_fetch(from, &r, None, None, snapshot, Vec::new());
        }
        let on_log =
            if r.fetch_offset == 0 && r.last_fetched_epoch == 0 && self.log.start_offset() == 0 {
                Ok(())
            } else {
                match self.log.end_offset_for_epoch(r.last_fetched_epoch) {
                    Some((e, end)) if e == r.last_fetched_epoch && r.fetch_offset <= end => Ok(()),
                    Some(diverging) => Err(Some(diverging)),
                    None if self.log.start_offset() > 0 => Err(None),
                    None => Err(Some((0, 0))),
                }
            };
        match on_log {
            Err(Some(diverging)) => {
                return self.reply_fetch(from, &r, None, Some(diverging), None, Vec::new())
            }
            Err(None) => {
                let snapshot = self.log.snapshot();
                return self.reply_fetch(from, &r, None, None, snapshot, Vec::new());
            }
            Ok(()) => {}
        }
        assert!(r.fetch_offset <= self.log.end_offset());
        replica.log_end_offset = Some(r.fetch_offset);
        if r.fetch_offset >= self.log.end_offset() {
            replica.last_caught_up_ms = Some(now);
        }
        if voter {
            self.maybe_advance_high_watermark(now);
        }
        let behind_on_hw = r.high_watermark.is_some_and(|h| h < self.high_watermark);
        if r.fetch_offset < self.log.end_offset() || behind_on_hw || r.max_wait_ms == 0 {
            let batches = self.log.read(r.fetch_offset, self.cfg.fetch_max_bytes);
            self.reply_fetch(from, &r, None, None, None, batches);
        } else if let State::Leader(l) = &mut self.state {
            let wait = r.max_wait_ms.min(self.cfg.fetch_max_wait_ms);
            l.parked.insert(from, (now + wait, r));
        }
    }

    /// Answers the parked fetches `due` picks (after an append, a high-watermark move, or at
    /// their deadline).
    pub(super) fn answer_parked(&mut self, _now: u64, due: impl Fn(u64, &FetchRequest) -> bool) {
        let State::Leader(l) = &mut self.state else {
            return;
        };
        let ready: Vec<NodeId> = l
            .parked
            .iter()
            .filter(|(_, (d, r))| due(*d, r))
            .map(|(id, _)| *id)
            .collect();
        for id in ready {
            let State::Leader(l) = &mut self.state else {
                return;
            };
            let (_, r) = l.parked.remove(&id).expect("listed");
            let batches = self.log.read(r.fetch_offset, self.cfg.fetch_max_bytes);
            self.reply_fetch(id, &r, None, None, None, batches);
        }
    }

    pub(super) fn reply_fetch(
        &mut self,
        to: NodeId,
        r: &FetchRequest,
        error: Option<QuorumError>,
        diverging_epoch: Option<(i32, i64)>,
        snapshot_id: Option<SnapshotId>,
        batches: Vec<Batch>,
    ) {
        let msg = Message::FetchResponse(FetchResponse {
            id: r.id,
            error,
            epoch: self.epoch,
            leader_id: self.leader_id,
            high_watermark: self.high_watermark,
            log_start_offset: self.log.start_offset(),
            diverging_epoch,
            snapshot_id,
            batches,
        });
        self.send(to, msg);
    }

    pub(super) fn maybe_advance_high_watermark(&mut self, now: u64) {
        let State::Leader(l) = &self.state else {
            return;
        };
        let me = self.cfg.node_id;
        let mut ends: Vec<i64> = l
            .replicas
            .values()
            .map(|r| {
                if r.node_id == me {
                    self.flushed_offset
                } else {
                    r.log_end_offset.unwrap_or(-1)
                }
            })
            .collect();
        ends.sort_unstable_by(|a, b| b.cmp(a));
        let candidate = ends[self.voters.majority() - 1];
        if candidate > l.epoch_start_offset && candidate > self.high_watermark {
            self.set_high_watermark(candidate);
            self.answer_parked(now, |_, _| true);
            self.resign_if_removed(now);
        }
    }

    pub(super) fn set_high_watermark(&mut self, hw: i64) {
        assert!(hw >= self.high_watermark, "high watermark went back");
        assert!(
            hw <= self.log.end_offset(),
            "high watermark past the log end"
        );
        if hw > self.high_watermark {
            self.high_watermark = hw;
            self.actions
                .push_back(Action::Committed { high_watermark: hw });
        }
    }

    pub(super) fn send_begin_quorum_epoch(&mut self, to: NodeId) {
        let id = self.new_id();
        let msg = Message::BeginQuorumEpoch(BeginQuorumEpochRequest {
            id,
            epoch: self.epoch,
            leader_id: self.cfg.node_id,
        });
        self.send(to, msg);
    }

    pub(super) fn on_fetch_snapshot(&mut self, _now: u64, from: NodeId, r: FetchSnapshotRequest) {
        let mut resp = FetchSnapshotResponse {
            id: r.id,
            error: None,
            epoch: self.epoch,
            leader_id: self.leader_id,
            snapshot_id: r.snapshot_id,
            size: 0,
            position: r.position,
            chunk: Bytes::new(),
        };
        if !matches!(self.state, State::Leader(_)) {
            resp.error = Some(QuorumError::NotLeaderOrFollower);
        } else if r.epoch != self.epoch {
            resp.error = Some(if r.epoch < self.epoch {
                QuorumError::FencedLeaderEpoch
            } else {
                QuorumError::UnknownLeaderEpoch
            });
        } else {
            let held = [&self.snapshot_data, &self.previous_snapshot]
                .into_iter()
                .flatten()
                .find(|(id, _)| *id == r.snapshot_id);
            match held {
                Some((_, data)) => {
                    let size = data.len() as u64;
                    if r.position > size {
                        resp.error = Some(QuorumError::PositionOutOfRange);
                    } else {
                        let max = r.max_bytes.min(self.cfg.snapshot_chunk_bytes).max(1) as u64;
                        let end = (r.position + max).min(size);
                        resp.size = size;
                        resp.chunk = data.slice(r.position as usize..end as usize);
                    }
                }
                _ => resp.error = Some(QuorumError::SnapshotNotFound),
            }
        }
        self.send(from, Message::FetchSnapshotResponse(resp));
    }

    // ----- the follower's side of Fetch -----

    pub(super) fn send_fetch(&mut self, now: u64) {
        let State::Follower { leader, .. } = self.state else {
            return;
        };
        self.send_fetch_to(now, leader);
    }

    /// An observer with no leader asks the bootstrap servers in turn, or the voters when it
    /// was given none (Kafka's `RequestManager` over either list); under kraft.version 1 the
    /// voters its log names, then the bootstrap servers.
    pub(super) fn send_probe(&mut self, now: u64) {
        let State::Unattached { probe_index, .. } = &mut self.state else {
            return;
        };
        let me = self.cfg.node_id;
        let voters = self.voters.ids().iter().copied().filter(|&v| v != me);
        let targets: Vec<NodeId> = if self.cfg.bootstrap.is_empty() {
            voters.collect()
        } else if self.voters.is_dynamic() {
            // The voters its log names first: they know the leader, while the bootstrap
            // servers may all have been removed since (or be this node itself).
            voters.chain(self.cfg.bootstrap.iter().copied()).collect()
        } else {
            self.cfg.bootstrap.clone()
        };
        let to = targets[*probe_index % targets.len()];
        *probe_index += 1;
        self.send_fetch_to(now, to);
    }

    pub(super) fn send_fetch_to(&mut self, now: u64, to: NodeId) {
        let id = self.new_id();
        let expires = now + self.cfg.fetch_max_wait_ms + self.cfg.request_timeout_ms;
        let fetch = match &mut self.state {
            State::Follower { fetch, .. } => fetch,
            State::Unattached { probe, .. } => probe,
            _ => return,
        };
        fetch.in_flight = Some((id, expires));
        let message = match &fetch.download {
            Some(d) => Message::FetchSnapshot(FetchSnapshotRequest {
                id,
                replica_id: self.cfg.node_id,
                epoch: self.epoch,
                snapshot_id: d.id,
                position: d.buf.len() as u64,
                max_bytes: self.cfg.snapshot_chunk_bytes,
            }),
            None => {
                // A voter's fetch offset counts toward the high watermark: it must not name
                // records that are not on disk yet.
                assert!(
                    !matches!(self.state, State::Follower { .. })
                        || self.flushed_offset == self.log.end_offset(),
                    "fetching at {} with only {} flushed",
                    self.log.end_offset(),
                    self.flushed_offset
                );
                Message::Fetch(FetchRequest {
                    id,
                    replica_id: self.cfg.node_id,
                    epoch: self.epoch,
                    fetch_offset: self.log.end_offset(),
                    last_fetched_epoch: self.log.last_epoch(),
                    high_watermark: Some(self.high_watermark),
                    max_wait_ms: self.cfg.fetch_max_wait_ms,
                })
            }
        };
        self.send(to, message);
    }

    /// Takes the in-flight fetch `id` off the fetch loop; false when it is not the one awaited.
    pub(super) fn take_in_flight(&mut self, id: u64) -> bool {
        let fetch = match &mut self.state {
            State::Follower { fetch, .. } => fetch,
            State::Unattached { probe, .. } => probe,
            _ => return false,
        };
        if fetch.in_flight.is_some_and(|(i, _)| i == id) {
            fetch.in_flight = None;
            true
        } else {
            false
        }
    }

    pub(super) fn retry_fetch_after(&mut self, at: u64) {
        if let State::Follower { fetch, .. } | State::Unattached { probe: fetch, .. } =
            &mut self.state
        {
            fetch.next_fetch_at = at;
        }
    }

    pub(super) fn on_fetch_response(&mut self, now: u64, from: NodeId, r: FetchResponse) {
        if !self.take_in_flight(r.id) {
            return;
        }
        if let Some(error) = r.error {
            if r.epoch > self.epoch
                || (r.epoch == self.epoch && r.leader_id.is_some() && r.leader_id != self.leader_id)
            {
                self.observe_epoch(now, from, r.epoch, r.leader_id);
            }
            if matches!(
                error,
                QuorumError::NotLeaderOrFollower | QuorumError::FencedLeaderEpoch
            ) && r.leader_id.is_none()
                && !self.is_voter()
                && matches!(self.state, State::Follower { .. })
            {
                self.become_unattached_same_epoch(now, now + self.cfg.retry_backoff_ms);
                return;
            }
            self.retry_fetch_after(now + self.cfg.retry_backoff_ms);
            return;
        }
        if self.observe_epoch(now, from, r.epoch, r.leader_id) {
            return;
        }
        let State::Follower {
            leader,
            fetch_timeout_at,
            fetch,
        } = &mut self.state
        else {
            return;
        };
        if *leader != from {
            return;
        }
        *fetch_timeout_at = now + self.cfg.fetch_timeout_ms;
        fetch.next_fetch_at = now;
        if let Some((epoch, end)) = r.diverging_epoch {
            // Where our logs part: if we hold that epoch, at the earlier of our two ends of
            // it; if not, at the end of our largest epoch below it (the next fetch, from
            // there, is validated again and narrows it further).
            let to = match self.log.end_offset_for_epoch(epoch) {
                Some((e, own_end)) if e == epoch => end.min(own_end),
                Some((_, own_end)) => own_end,
                None => self.log.start_offset(),
            }
            .max(self.log.start_offset());
            self.truncate_to(to);
            self.send_fetch(now);
            return;
        }
        if let Some(id) = r.snapshot_id {
            fetch.download = Some(Download {
                id,
                buf: BytesMut::new(),
            });
            self.send_fetch(now);
            return;
        }
        let mut appended = Vec::new();
        for b in r.batches {
            if b.base_offset != self.log.end_offset() {
                break; // not where this log ends: a stale answer; fetch again from the end
            }
            self.log.append(b.clone());
            self.voters_appended(now, &b);
            appended.push(b);
        }
        if !appended.is_empty() {
            self.actions.push_back(Action::Append(appended));
            self.actions.push_back(Action::Flush {
                end_offset: self.log.end_offset(),
            });
        }
        let hw = r.high_watermark.min(self.log.end_offset());
        if hw > self.high_watermark {
            self.set_high_watermark(hw);
        }
        if self.flushed_offset == self.log.end_offset() {
            self.send_fetch(now);
        }
    }

    pub(super) fn on_fetch_snapshot_response(
        &mut self,
        now: u64,
        from: NodeId,
        r: FetchSnapshotResponse,
    ) {
        if !self.take_in_flight(r.id) {
            return;
        }
        if r.error.is_some() {
            self.observe_epoch(now, from, r.epoch, r.leader_id);
            if let State::Follower { fetch, .. } = &mut self.state {
                fetch.download = None;
            }
            self.retry_fetch_after(now + self.cfg.retry_backoff_ms);
            return;
        }
        if self.observe_epoch(now, from, r.epoch, r.leader_id) {
            return;
        }
        let State::Follower {
            leader,
            fetch_timeout_at,
            fetch,
        } = &mut self.state
        else {
            return;
        };
        let Some(d) = &mut fetch.download else {
            return;
        };
        if *leader != from || d.id != r.snapshot_id || r.position != d.buf.len() as u64 {
            return;
        }
        *fetch_timeout_at = now + self.cfg.fetch_timeout_ms;
        d.buf.extend_from_slice(&r.chunk);
        if (d.buf.len() as u64) < r.size && !r.chunk.is_empty() {
            self.send_fetch(now);
            return;
        }
        let d = fetch.download.take().expect("downloading");
        let id = d.id;
        let data = d.buf.freeze();
        assert!(
            id.end_offset >= self.high_watermark,
            "snapshot at {} below the high watermark {}",
            id.end_offset,
            self.high_watermark
        );
        self.log.reset_to_snapshot(id);
        let set = (self.cfg.snapshot_voters)(&data);
        self.voters.reset_to_snapshot(id.end_offset, set);
        self.flushed_offset = id.end_offset;
        self.previous_snapshot = self.snapshot_data.replace((id, data.clone()));
        self.actions.push_back(Action::InstallSnapshot { id, data });
        if id.end_offset > self.high_watermark {
            self.high_watermark = id.end_offset;
        }
        self.send_fetch(now);
    }

    pub(super) fn truncate_to(&mut self, end_offset: i64) {
        assert!(
            end_offset >= self.high_watermark,
            "truncation to {end_offset} below the high watermark {}",
            self.high_watermark
        );
        if end_offset >= self.log.end_offset() {
            return;
        }
        self.log.truncate_to(end_offset);
        self.voters.truncated(end_offset);
        self.flushed_offset = self.flushed_offset.min(end_offset);
        self.actions.push_back(Action::Truncate { end_offset });
    }
}
