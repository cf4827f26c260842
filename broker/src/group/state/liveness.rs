//! How members stay in a group and leave it: Heartbeat, LeaveGroup, and the timers that end
//! the join phase, enforce the SyncGroup deadline and expire sessions and pending member ids.

use super::{Effects, Group, GroupConfig, GroupError, GroupState, JoinTimer};

impl Group {
    pub fn heartbeat(
        &mut self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        self.validate_generation(member_id, group_instance_id, generation_id)?;
        match self.state {
            GroupState::Empty => Err(GroupError::UnknownMemberId),
            GroupState::PreparingRebalance => {
                self.reschedule_heartbeat(member_id, now_ms);
                Err(GroupError::RebalanceInProgress)
            }
            // Members may heartbeat between their JoinGroup and SyncGroup responses.
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.reschedule_heartbeat(member_id, now_ms);
                Ok(())
            }
            GroupState::Dead => Err(GroupError::CoordinatorNotAvailable),
        }
    }

    // -- LeaveGroup --

    /// Removes members: by member id, or (with an empty member id) administratively by
    /// `group.instance.id`. Returns one result per member, in order.
    pub fn leave(
        &mut self,
        leaving: &[(String, Option<String>)],
        cfg: &GroupConfig,
        now_ms: i64,
    ) -> Result<(Vec<Result<(), GroupError>>, Effects), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        let mut fx = Effects::default();
        let mut results = Vec::with_capacity(leaving.len());
        for (member_id, instance) in leaving {
            let r = if member_id.is_empty() {
                match instance
                    .as_deref()
                    .and_then(|i| self.static_members.get(i).cloned())
                {
                    Some(current) => {
                        fx.removed(&current, "removed by its group.instance.id (LeaveGroup)");
                        self.remove(&current, &mut fx);
                        Ok(())
                    }
                    None => Err(GroupError::UnknownMemberId),
                }
            } else if self.pending_join.contains_key(member_id) {
                self.remove(member_id, &mut fx);
                Ok(())
            } else {
                self.validate_member(member_id, instance.as_deref())
                    .map(|()| {
                        fx.removed(member_id, "left the group (LeaveGroup)");
                        self.remove(member_id, &mut fx)
                    })
            };
            results.push(r);
        }
        if results.iter().any(Result::is_ok) {
            match self.state {
                GroupState::Stable | GroupState::CompletingRebalance => self
                    .maybe_prepare_rebalance_or_complete_join("members left", cfg, now_ms, &mut fx),
                GroupState::PreparingRebalance => self.maybe_complete_join_phase(now_ms, &mut fx),
                GroupState::Empty | GroupState::Dead => {}
            }
        }
        self.debug_check_invariants();
        Ok((results, fx))
    }

    // -- timers --

    /// Fires every deadline at or before `now_ms`: the join phase's end, the SyncGroup
    /// deadline, pending member ids, and member sessions.
    pub fn tick(&mut self, cfg: &GroupConfig, now_ms: i64) -> Effects {
        let mut fx = Effects::default();
        // Each pass fires what is due; a handler may schedule something due at once (an
        // initial delay of 0), which the next pass fires. Bounded: every pass either removes
        // a member or moves a timer forward.
        for _ in 0..1_000 {
            let mut fired = false;
            if let Some(t) = self.join_timer.filter(|t| t.deadline_ms <= now_ms) {
                fired = true;
                self.join_timer = None;
                self.on_join_timer(t, cfg, now_ms, &mut fx);
            }
            if let Some((_, generation)) = self.sync_timer.filter(|(d, _)| *d <= now_ms) {
                fired = true;
                self.sync_timer = None;
                self.expire_pending_sync(generation, cfg, now_ms, &mut fx);
            }
            let pending: Vec<String> = self
                .pending_join
                .iter()
                .filter(|(_, d)| **d <= now_ms)
                .map(|(id, _)| id.clone())
                .collect();
            for id in pending {
                fired = true;
                self.remove(&id, &mut fx);
                if self.state == GroupState::PreparingRebalance && self.has_all_members_joined() {
                    self.complete_join(now_ms, &mut fx);
                }
            }
            let expired: Vec<String> = self
                .members
                .values()
                .filter(|m| m.heartbeat_deadline_ms.is_some_and(|d| d <= now_ms))
                .map(|m| m.member_id.clone())
                .collect();
            for id in expired {
                fired = true;
                let Some(m) = self.members.get_mut(&id) else {
                    continue;
                };
                m.heartbeat_deadline_ms = None;
                if !m.has_satisfied_heartbeat() {
                    let reason = if m.is_new {
                        "a new member's JoinGroup waited too long"
                    } else {
                        "session timeout expired"
                    };
                    fx.removed(&id, reason);
                    self.remove_member_and_update(&id, cfg, now_ms, &mut fx);
                }
            }
            if !fired {
                break;
            }
        }
        self.debug_check_invariants();
        fx
    }

    /// [`tick`](Self::tick) when a deadline is already due and firing it did something.
    pub fn tick_if_due(&mut self, cfg: &GroupConfig, now_ms: i64) -> Option<Effects> {
        if self.next_deadline().is_none_or(|d| d > now_ms) {
            return None;
        }
        Some(self.tick(cfg, now_ms)).filter(|fx| !fx.is_empty())
    }

    fn on_join_timer(&mut self, t: JoinTimer, cfg: &GroupConfig, now_ms: i64, fx: &mut Effects) {
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        match t.initial {
            Some((delay, remaining)) if self.new_member_added && remaining != 0 => {
                self.new_member_added = false;
                let next_delay = (cfg.initial_rebalance_delay_ms as i64).min(remaining);
                let next_remaining = (remaining - delay).max(0);
                self.join_timer = Some(JoinTimer {
                    deadline_ms: now_ms + next_delay,
                    initial: Some((next_delay, next_remaining)),
                });
            }
            _ => self.complete_join(now_ms, fx),
        }
    }

    fn expire_pending_sync(
        &mut self,
        generation: i32,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        if generation != self.generation_id {
            return;
        }
        if matches!(
            self.state,
            GroupState::CompletingRebalance | GroupState::Stable
        ) && !self.pending_sync.is_empty()
        {
            let late: Vec<String> = self.pending_sync.iter().cloned().collect();
            for id in late {
                fx.removed(&id, "did not send SyncGroup within the rebalance timeout");
                self.remove(&id, fx);
            }
            self.prepare_rebalance("members missed the SyncGroup deadline", cfg, now_ms, fx);
        }
    }

    fn remove_member_and_update(
        &mut self,
        member_id: &str,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        self.remove(member_id, fx);
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => self
                .maybe_prepare_rebalance_or_complete_join(
                    "a member's session expired",
                    cfg,
                    now_ms,
                    fx,
                ),
            GroupState::PreparingRebalance if self.has_all_members_joined() => {
                self.complete_join(now_ms, fx)
            }
            _ => {}
        }
    }
}
