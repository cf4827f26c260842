//! AddRaftVoter (KIP-853): adds a controller to a dynamic metadata quorum (kraft.version 1).
//! The node must already follow the quorum as an observer and have caught up. Needs ALTER on
//! the cluster; sent on to the quorum's leader, which answers once the new voter set is
//! committed. A fixed voter set (`controller.quorum.voters`) answers UNSUPPORTED_VERSION.
//!
//! v1's AckWhenCommitted=false lets Kafka's leader answer once it has appended the new voter
//! set, before it commits; Samsa's leader decides voter changes in its controller loop and
//! answers only at commit, so false is answered as true is: later, never wrongly (the voter
//! set the answer reports is committed either way).

use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, ApiKey, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::AclOperation;
use crate::controller::voter_rpcs;

pub async fn handle(ctx: &Ctx<'_>, req: AddRaftVoterRequest) -> AddRaftVoterResponse {
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Alter) {
        return AddRaftVoterResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(StrBytes::from_string(message)));
    }
    let key = ApiKey::AddRaftVoter;
    let answer = match voter_rpcs::add_from_kafka(&req, &ctx.node().cluster_id) {
        Err(e) => voter_rpcs::response(key, Err(e)),
        Ok(change) => {
            let routed = ctx.controller().change_voters(change).await;
            voter_rpcs::finish(routed, key, ctx.version, RequestKind::AddRaftVoter(req)).await
        }
    };
    match answer {
        ResponseKind::AddRaftVoter(r) => r,
        _ => unreachable!("an AddRaftVoter answer"),
    }
}
