//! RemoveRaftVoter (KIP-853): removes a controller from a dynamic metadata quorum
//! (kraft.version 1); the leader may remove itself, and resigns once that is committed. Needs
//! ALTER on the cluster; sent on to the quorum's leader, which answers once the new voter set
//! is committed. A fixed voter set (`controller.quorum.voters`) answers UNSUPPORTED_VERSION.

use kafka_protocol::messages::{
    ApiKey, RemoveRaftVoterRequest, RemoveRaftVoterResponse, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::AclOperation;
use crate::controller::voter_rpcs;

pub async fn handle(ctx: &Ctx<'_>, req: RemoveRaftVoterRequest) -> RemoveRaftVoterResponse {
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Alter) {
        return RemoveRaftVoterResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(StrBytes::from_string(message)));
    }
    let key = ApiKey::RemoveRaftVoter;
    let answer = match voter_rpcs::remove_from_kafka(&req, &ctx.node().cluster_id) {
        Err(e) => voter_rpcs::response(key, Err(e)),
        Ok(change) => {
            let routed = ctx.controller().change_voters(change).await;
            voter_rpcs::finish(routed, key, ctx.version, RequestKind::RemoveRaftVoter(req)).await
        }
    };
    match answer {
        ResponseKind::RemoveRaftVoter(r) => r,
        _ => unreachable!("a RemoveRaftVoter answer"),
    }
}
