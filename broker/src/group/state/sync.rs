//! SyncGroup: the leader's assignment is stored, then handed to every member, and the group
//! is Stable; and [`Group::stored`], which reports how a record the group asked for was
//! written.

use std::collections::HashMap;

use bytes::Bytes;

use super::{
    AfterStore, Effects, Group, GroupConfig, GroupError, GroupState, Store, SyncReply, SyncRequest,
    WaiterId,
};

impl Group {
    /// Handles a SyncGroup; the answer comes as a sync reply for `waiter` (the leader's
    /// assignment is first stored: see [`stored`](Self::stored)).
    pub fn sync(&mut self, req: SyncRequest, waiter: WaiterId, now_ms: i64) -> Effects {
        let mut fx = Effects::default();
        if let Err(e) = self.validate_sync(&req) {
            fx.sync_replies.push((waiter, SyncReply::error(e)));
            return fx;
        }
        let member_id = req.member_id.as_str();
        match self.state {
            GroupState::Empty => fx
                .sync_replies
                .push((waiter, SyncReply::error(GroupError::UnknownMemberId))),
            GroupState::PreparingRebalance => fx
                .sync_replies
                .push((waiter, SyncReply::error(GroupError::RebalanceInProgress))),
            GroupState::CompletingRebalance => {
                let m = self.members.get_mut(member_id).expect("validated member");
                if let Some(old) = m.sync_waiter.replace(waiter) {
                    fx.sync_replies
                        .push((old, SyncReply::error(GroupError::RebalanceInProgress)));
                }
                self.remove_pending_sync(member_id);
                if self.leader_id.as_deref() == Some(member_id) {
                    let mut assignment: HashMap<String, Bytes> = HashMap::new();
                    for (id, a) in req.assignments {
                        if self.members.contains_key(&id) {
                            assignment.insert(id, a);
                        }
                    }
                    for id in self.members.keys() {
                        assignment.entry(id.clone()).or_default();
                    }
                    fx.store.push(Store {
                        value: self.metadata_value(Some(&assignment)),
                        then: AfterStore::Assignment {
                            generation_id: self.generation_id,
                            assignment,
                        },
                    });
                }
            }
            GroupState::Stable => {
                self.remove_pending_sync(member_id);
                let m = &self.members[member_id];
                fx.sync_replies.push((
                    waiter,
                    SyncReply {
                        error: None,
                        protocol_type: self.protocol_type.clone(),
                        protocol_name: self.protocol_name.clone(),
                        assignment: m.assignment.clone(),
                    },
                ));
                self.reschedule_heartbeat(member_id, now_ms);
            }
            GroupState::Dead => unreachable!("validate_sync refuses dead groups"),
        }
        self.debug_check_invariants();
        fx
    }

    /// The checks of SyncGroup, Heartbeat and members' OffsetCommits: a live group, a
    /// current member, the current generation.
    pub(super) fn validate_generation(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Result<(), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        self.validate_member(member_id, group_instance_id)?;
        if generation_id != self.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        Ok(())
    }

    fn validate_sync(&self, req: &SyncRequest) -> Result<(), GroupError> {
        self.validate_generation(
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
        )?;
        let inconsistent = |asked: &Option<String>, ours: &Option<String>| matches!((asked, ours), (Some(a), Some(o)) if a != o);
        if inconsistent(&req.protocol_type, &self.protocol_type)
            || inconsistent(&req.protocol_name, &self.protocol_name)
        {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        Ok(())
    }

    fn remove_pending_sync(&mut self, member_id: &str) {
        self.pending_sync.remove(member_id);
        let cancel = match self.state {
            GroupState::Dead | GroupState::Empty | GroupState::PreparingRebalance => true,
            GroupState::CompletingRebalance | GroupState::Stable => self.pending_sync.is_empty(),
        };
        if cancel {
            self.sync_timer = None;
        }
    }

    fn propagate_assignment(&mut self, error: Option<GroupError>, now_ms: i64, fx: &mut Effects) {
        let (protocol_type, protocol_name) = match error {
            None => (self.protocol_type.clone(), self.protocol_name.clone()),
            Some(_) => (None, None),
        };
        for m in self.members.values_mut() {
            if let Some(w) = m.sync_waiter.take() {
                fx.sync_replies.push((
                    w,
                    SyncReply {
                        error,
                        protocol_type: protocol_type.clone(),
                        protocol_name: protocol_name.clone(),
                        assignment: m.assignment.clone(),
                    },
                ));
                // A session that expired while the member waited was ignored: start it again.
                m.heartbeat_deadline_ms = Some(now_ms + m.session_timeout_ms as i64);
            }
        }
    }

    pub(super) fn reset_and_propagate_assignment_error(
        &mut self,
        error: GroupError,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            self.set_assignment(&id, Bytes::new());
        }
        self.propagate_assignment(Some(error), now_ms, fx);
    }

    /// Reports the outcome of writing a [`Store`]'s record.
    pub fn stored(
        &mut self,
        then: AfterStore,
        result: Result<(), GroupError>,
        cfg: &GroupConfig,
        now_ms: i64,
    ) -> Effects {
        let mut fx = Effects::default();
        match then {
            AfterStore::Nothing => {}
            AfterStore::Assignment {
                generation_id,
                assignment,
            } => {
                // A member may have joined meanwhile (in Kafka the write is asynchronous).
                if self.state != GroupState::CompletingRebalance
                    || generation_id != self.generation_id
                {
                    return fx;
                }
                match result {
                    Err(e) => {
                        self.reset_and_propagate_assignment_error(e, now_ms, &mut fx);
                        self.maybe_prepare_rebalance_or_complete_join(
                            "the assignment could not be stored",
                            cfg,
                            now_ms,
                            &mut fx,
                        );
                    }
                    Ok(()) => {
                        for (id, a) in assignment {
                            self.set_assignment(&id, a);
                        }
                        self.propagate_assignment(None, now_ms, &mut fx);
                        self.transition(GroupState::Stable, now_ms);
                    }
                }
            }
            AfterStore::StaticReplace(r) => self.static_replace_stored(*r, result, now_ms, &mut fx),
        }
        self.debug_check_invariants();
        fx
    }
}
