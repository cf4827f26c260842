//! Static members (KIP-345, `group.instance.id`): a member that comes back under a new
//! member id takes over its instance id and fences the old one, in a Stable group without a
//! rebalance once the replacement is stored.

use super::{
    AfterStore, Effects, Group, GroupConfig, GroupError, GroupEvent, GroupState, JoinReply,
    JoinRequest, Protocol, Store, SyncReply, WaiterId,
};

/// A static member's replacement while its record is written: what to restore if the write
/// fails, and the new member's parked JoinGroup to answer either way.
#[derive(Debug, Clone)]
pub struct StaticReplace {
    pub group_instance_id: String,
    pub old_member_id: String,
    pub new_member_id: String,
    pub old_protocols: Vec<Protocol>,
    pub old_rebalance_timeout_ms: i32,
    pub old_session_timeout_ms: i32,
    pub current_leader: Option<String>,
    pub supports_skip_assignment: bool,
    pub waiter: WaiterId,
}
impl Group {
    /// KIP-345: a static member that comes back with an unknown member id takes over its
    /// instance id. Its old id is fenced (parked requests answered FENCED_INSTANCE_ID); in a
    /// Stable group whose protocol would not change, it gets the current generation back
    /// without a rebalance once the new member id is persisted.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn update_static_member_and_rebalance(
        &mut self,
        instance: &str,
        old_id: &str,
        new_id: &str,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        let current_leader = self.leader_id.clone();
        let (old_protocols, old_rebalance, old_session) = {
            let m = &self.members[old_id];
            (
                m.protocols.clone(),
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
            )
        };
        self.replace_static_member(instance, old_id, new_id, fx);
        fx.events.push(GroupEvent::StaticMemberReplaced {
            group_instance_id: instance.to_string(),
            old_member_id: old_id.to_string(),
            new_member_id: new_id.to_string(),
        });
        self.reschedule_heartbeat(new_id, now_ms);
        self.update_member(
            new_id,
            req.protocols,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            Some(waiter),
            fx,
        );
        match self.state {
            GroupState::Stable => {
                if self.protocol_name.is_some() && self.select_protocol() == self.protocol_name {
                    fx.store.push(Store {
                        value: self.metadata_value(None),
                        then: AfterStore::StaticReplace(Box::new(StaticReplace {
                            group_instance_id: instance.to_string(),
                            old_member_id: old_id.to_string(),
                            new_member_id: new_id.to_string(),
                            old_protocols,
                            old_rebalance_timeout_ms: old_rebalance,
                            old_session_timeout_ms: old_session,
                            current_leader,
                            supports_skip_assignment: req.supports_skip_assignment,
                            waiter,
                        })),
                    });
                } else {
                    self.maybe_prepare_rebalance_or_complete_join(
                        "a static member rejoined with protocols that change the selection",
                        cfg,
                        now_ms,
                        fx,
                    );
                }
            }
            // The leader may already be assigning with the old member id, which the new one
            // would not match: rebalance.
            GroupState::CompletingRebalance => self.prepare_rebalance(
                "a static member rejoined while the assignment was computed",
                cfg,
                now_ms,
                fx,
            ),
            GroupState::PreparingRebalance => self.maybe_complete_join_phase(now_ms, fx),
            // Unreachable: a group with a static member is neither Empty nor Dead here.
            GroupState::Empty | GroupState::Dead => {
                self.reply_join(
                    new_id,
                    JoinReply::error("", GroupError::UnknownServerError),
                    fx,
                );
            }
        }
    }

    fn replace_static_member(
        &mut self,
        instance: &str,
        old_id: &str,
        new_id: &str,
        fx: &mut Effects,
    ) {
        let Some(mut m) = self.members.remove(old_id) else {
            return;
        };
        if let Some(w) = m.join_waiter.take() {
            self.awaiting_join -= 1;
            fx.join(w, JoinReply::error(old_id, GroupError::FencedInstanceId));
        }
        if let Some(w) = m.sync_waiter.take() {
            fx.sync_replies
                .push((w, SyncReply::error(GroupError::FencedInstanceId)));
        }
        self.members_bytes -= m.bytes();
        m.member_id = new_id.to_string();
        m.is_new = false;
        self.members_bytes += m.bytes();
        self.members.insert(new_id.to_string(), m);
        if self.leader_id.as_deref() == Some(old_id) {
            self.leader_id = Some(new_id.to_string());
        }
        // The new incarnation owes the SyncGroup the old one had not sent yet.
        if self.pending_sync.remove(old_id) {
            self.pending_sync.insert(new_id.to_string());
        }
        self.static_members
            .insert(instance.to_string(), new_id.to_string());
    }

    /// Completes a replacement once its record is written, or undoes it if the write failed.
    pub(super) fn static_replace_stored(
        &mut self,
        r: StaticReplace,
        result: Result<(), GroupError>,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        match result {
            Err(e) => {
                // Restore the old member id; the newcomer is told to retry.
                self.update_member(
                    &r.new_member_id,
                    r.old_protocols.clone(),
                    r.old_rebalance_timeout_ms,
                    r.old_session_timeout_ms,
                    None,
                    fx,
                );
                self.replace_static_member(
                    &r.group_instance_id,
                    &r.new_member_id,
                    &r.old_member_id,
                    fx,
                );
                self.reschedule_heartbeat(&r.old_member_id, now_ms);
                let mut reply = self.current_reply("", r.current_leader.clone(), false);
                reply.error = Some(e);
                fx.join(r.waiter, reply);
            }
            Ok(()) if r.supports_skip_assignment => {
                // JoinGroup v9+: a static leader learns it leads but must not run the
                // assignor again (the group stays Stable with its assignment).
                let is_leader = self.leader_id.as_deref() == Some(r.new_member_id.as_str());
                let mut reply =
                    self.current_reply(&r.new_member_id, self.leader_id.clone(), is_leader);
                reply.skip_assignment = is_leader;
                self.reply_join(&r.new_member_id, reply, fx);
            }
            Ok(()) => {
                // Older clients: report the previous leader id, so that a returning
                // static leader does not think it must assign (its assignment would
                // not be used by a Stable group).
                let reply = self.current_reply(&r.new_member_id, r.current_leader.clone(), false);
                self.reply_join(&r.new_member_id, reply, fx);
            }
        }
    }
}
