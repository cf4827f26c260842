//! JoinGroup and the rebalance it drives: a joining member is added or updated, the group
//! prepares a rebalance, and once everyone has rejoined (or the join timer fires) the next
//! generation starts and every parked JoinGroup is answered.

use std::collections::HashMap;

use bytes::Bytes;

use super::{
    AfterStore, Effects, Group, GroupConfig, GroupError, GroupEvent, GroupState, JoinReply,
    JoinRequest, JoinTimer, Member, Store, WaiterId, PENDING_MEMBERS_PER_GROUP_MAX,
    PENDING_OVERHEAD_BYTES,
};

impl Group {
    /// Handles a JoinGroup. The answer (now or when the rebalance completes) comes as a join
    /// reply for `waiter` in the effects of this or a later call.
    pub fn join(
        &mut self,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
    ) -> Effects {
        let mut fx = Effects::default();
        if req.session_timeout_ms < cfg.min_session_timeout_ms
            || req.session_timeout_ms > cfg.max_session_timeout_ms
        {
            fx.join(
                waiter,
                JoinReply::error(&req.member_id, GroupError::InvalidSessionTimeout),
            );
            return fx;
        }
        if !self.accept_joining_member(&req.member_id, cfg) {
            if self.members.contains_key(&req.member_id) {
                fx.removed(&req.member_id, "group.max.size reached");
            }
            self.remove(&req.member_id, &mut fx);
            fx.join(
                waiter,
                JoinReply::error("", GroupError::GroupMaxSizeReached),
            );
            self.debug_check_invariants();
            return fx;
        }
        if self.state == GroupState::Dead {
            // The group was just deleted: let the member find the coordinator again.
            let reply = JoinReply::error(&req.member_id, GroupError::CoordinatorNotAvailable);
            fx.join(waiter, reply);
            return fx;
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            let reply = JoinReply::error(&req.member_id, GroupError::InconsistentGroupProtocol);
            fx.join(waiter, reply);
            return fx;
        }
        if req.member_id.is_empty() {
            self.join_new_member(req, waiter, cfg, now_ms, &mut fx);
        } else {
            self.join_existing_member(req, waiter, cfg, now_ms, &mut fx);
        }
        self.debug_check_invariants();
        fx
    }

    fn accept_joining_member(&self, member_id: &str, cfg: &GroupConfig) -> bool {
        match self.state {
            GroupState::Empty | GroupState::Dead => true,
            // Awaiting members are counted: they are the ones that will be in the next
            // generation, and counting them lets the last joiners be refused.
            GroupState::PreparingRebalance => {
                self.members
                    .get(member_id)
                    .is_some_and(Member::is_awaiting_join)
                    || self.awaiting_join < cfg.max_size
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.members.contains_key(member_id) || self.members.len() < cfg.max_size
            }
        }
    }

    fn join_new_member(
        &mut self,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        let new_id = req.new_member_id.clone();
        match req.group_instance_id.clone() {
            Some(instance) => match self.static_members.get(&instance).cloned() {
                Some(old_id) => {
                    self.update_static_member_and_rebalance(
                        &instance, &old_id, &new_id, req, waiter, cfg, now_ms, fx,
                    );
                }
                None => self.add_member_and_rebalance(new_id, req, waiter, cfg, now_ms, fx),
            },
            None if req.require_known_member_id => {
                if self.pending_join.len() >= PENDING_MEMBERS_PER_GROUP_MAX {
                    let reply = JoinReply::error("", GroupError::CoordinatorNotAvailable);
                    fx.join(waiter, reply);
                    return;
                }
                // KIP-394: hand out the id first, so that a client that times out and retries
                // does not leave a member behind for every attempt.
                self.pending_join_bytes += new_id.len() + PENDING_OVERHEAD_BYTES;
                self.pending_join
                    .insert(new_id.clone(), now_ms + req.session_timeout_ms as i64);
                fx.join(
                    waiter,
                    JoinReply::error(&new_id, GroupError::MemberIdRequired),
                );
            }
            None => self.add_member_and_rebalance(new_id, req, waiter, cfg, now_ms, fx),
        }
    }

    fn join_existing_member(
        &mut self,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        let member_id = req.member_id.clone();
        if self.pending_join.contains_key(&member_id) {
            if req.group_instance_id.is_some() {
                // Pending ids are only handed to dynamic members; Kafka fails this request.
                fx.join(
                    waiter,
                    JoinReply::error(&member_id, GroupError::UnknownServerError),
                );
                return;
            }
            self.add_member_and_rebalance(member_id, req, waiter, cfg, now_ms, fx);
            return;
        }
        if let Err(e) = self.validate_member(&member_id, req.group_instance_id.as_deref()) {
            fx.join(waiter, JoinReply::error(&member_id, e));
            return;
        }
        let matches = self.members[&member_id].matches(&req.protocols);
        let is_leader = self.leader_id.as_deref() == Some(member_id.as_str());
        match self.state {
            GroupState::PreparingRebalance => {
                self.update_member_and_rebalance(&member_id, req, waiter, cfg, now_ms, fx)
            }
            GroupState::CompletingRebalance if matches => {
                // The member lost the JoinGroup response: answer it again.
                let reply = self.current_reply(&member_id, self.leader_id.clone(), is_leader);
                fx.join(waiter, reply);
            }
            GroupState::Stable if matches && !is_leader => {
                // A follower with unchanged metadata just needs the current generation to sync.
                let reply = self.current_reply(&member_id, self.leader_id.clone(), false);
                fx.join(waiter, reply);
            }
            // A changed subscription, or the leader asking for a rebalance (e.g. for topic
            // metadata changes that its metadata does not show).
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member_and_rebalance(&member_id, req, waiter, cfg, now_ms, fx)
            }
            GroupState::Empty | GroupState::Dead => fx.join(
                waiter,
                JoinReply::error(&member_id, GroupError::UnknownMemberId),
            ),
        }
    }

    fn add_member_and_rebalance(
        &mut self,
        member_id: String,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        let member = Member {
            member_id: member_id.clone(),
            group_instance_id: req.group_instance_id,
            client_id: req.client_id,
            client_host: req.client_host,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type,
            protocols: req.protocols,
            assignment: Bytes::new(),
            join_waiter: Some(waiter),
            sync_waiter: None,
            is_new: true,
            heartbeat_deadline_ms: Some(now_ms + cfg.new_member_join_timeout_ms as i64),
        };
        if self.state == GroupState::PreparingRebalance && self.previous_state == GroupState::Empty
        {
            self.new_member_added = true;
        }
        self.add(member);
        self.maybe_prepare_rebalance_or_complete_join("a member joined", cfg, now_ms, fx);
    }

    fn update_member_and_rebalance(
        &mut self,
        member_id: &str,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        self.update_member(
            member_id,
            req.protocols,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            Some(waiter),
            fx,
        );
        self.maybe_prepare_rebalance_or_complete_join(
            "a member rejoined with new metadata, or the leader rejoined",
            cfg,
            now_ms,
            fx,
        );
    }
    pub(super) fn reply_join(
        &mut self,
        member_id: &str,
        reply: JoinReply,
        fx: &mut Effects,
    ) -> bool {
        let Some(m) = self.members.get_mut(member_id) else {
            return false;
        };
        let Some(w) = m.join_waiter.take() else {
            return false;
        };
        self.awaiting_join -= 1;
        fx.join(w, reply);
        true
    }

    pub(super) fn maybe_prepare_rebalance_or_complete_join(
        &mut self,
        reason: &'static str,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        if self.can_rebalance() {
            self.prepare_rebalance(reason, cfg, now_ms, fx);
        } else {
            self.maybe_complete_join_phase(now_ms, fx);
        }
    }

    /// Completes the join phase early when everyone has joined, except during the initial
    /// delay of a new group, which always runs its course.
    pub(super) fn maybe_complete_join_phase(&mut self, now_ms: i64, fx: &mut Effects) {
        if self.state == GroupState::PreparingRebalance
            && self.has_all_members_joined()
            && self.previous_state != GroupState::Empty
        {
            self.complete_join(now_ms, fx);
        }
    }

    pub(super) fn prepare_rebalance(
        &mut self,
        reason: &'static str,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        fx.events.push(GroupEvent::PreparingRebalance { reason });
        if self.state == GroupState::CompletingRebalance {
            // Members waiting for their assignment must rejoin instead.
            self.reset_and_propagate_assignment_error(GroupError::RebalanceInProgress, now_ms, fx);
        }
        self.sync_timer = None;
        let initial = self.state == GroupState::Empty;
        if initial {
            let delay = cfg.initial_rebalance_delay_ms.max(0) as i64;
            let remaining = (self.rebalance_timeout_ms() as i64 - delay).max(0);
            self.join_timer = Some(JoinTimer {
                deadline_ms: now_ms + delay,
                initial: Some((delay, remaining)),
            });
        }
        self.transition(GroupState::PreparingRebalance, now_ms);
        if !initial {
            if self.has_all_members_joined() {
                self.complete_join(now_ms, fx);
            } else {
                self.join_timer = Some(JoinTimer {
                    deadline_ms: now_ms + self.rebalance_timeout_ms() as i64,
                    initial: None,
                });
            }
        }
    }

    pub(super) fn complete_join(&mut self, now_ms: i64, fx: &mut Effects) {
        self.join_timer = None;
        // Dynamic members that did not rejoin in time are gone; static members keep their
        // place (KIP-345) until their session expires.
        let not_rejoined: Vec<String> = self
            .members
            .values()
            .filter(|m| !m.is_awaiting_join() && !m.is_static())
            .map(|m| m.member_id.clone())
            .collect();
        for id in not_rejoined {
            fx.removed(&id, "did not rejoin within the rebalance timeout");
            self.remove(&id, fx);
        }
        if self.state == GroupState::Dead {
            return;
        }
        if !self.maybe_elect_new_joined_leader() && !self.members.is_empty() {
            // Nobody rejoined: wait another rebalance timeout for the session timeouts to
            // remove the silent members.
            self.join_timer = Some(JoinTimer {
                deadline_ms: now_ms + self.rebalance_timeout_ms() as i64,
                initial: None,
            });
            return;
        }
        self.init_next_generation(now_ms);
        if self.state == GroupState::Empty {
            fx.events.push(GroupEvent::Emptied {
                generation_id: self.generation_id,
            });
            fx.store.push(Store {
                value: self.metadata_value(Some(&HashMap::new())),
                then: AfterStore::Nothing,
            });
            return;
        }
        fx.events.push(GroupEvent::Stabilized {
            generation_id: self.generation_id,
            members: self.members.len(),
        });
        let leader = self.leader_id.clone();
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let is_leader = leader.as_deref() == Some(id.as_str());
            let reply = self.current_reply(&id, leader.clone(), is_leader);
            self.reply_join(&id, reply, fx);
            self.reschedule_heartbeat(&id, now_ms);
            if let Some(m) = self.members.get_mut(&id) {
                m.is_new = false;
            }
            self.pending_sync.insert(id);
        }
        self.sync_timer = Some((
            now_ms + self.rebalance_timeout_ms() as i64,
            self.generation_id,
        ));
    }

    /// Keeps the leader if it rejoined, else picks a member that did. False when the group
    /// has no leader or nobody rejoined.
    fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.clone() else {
            return false;
        };
        if self
            .members
            .get(&leader)
            .is_some_and(Member::is_awaiting_join)
        {
            return true;
        }
        match self.members.values().find(|m| m.is_awaiting_join()) {
            Some(m) => {
                self.leader_id = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }

    fn init_next_generation(&mut self, now_ms: i64) {
        self.generation_id += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition(GroupState::Empty, now_ms);
        } else {
            self.protocol_name = self.select_protocol();
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition(GroupState::CompletingRebalance, now_ms);
        }
        self.pending_sync.clear();
    }
}
