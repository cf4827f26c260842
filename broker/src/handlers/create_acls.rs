//! CreateAcls (KIP-140): adds ACL bindings, each answered on its own. The caller needs ALTER on
//! the cluster; without an authorizer every binding gets SECURITY_DISABLED, as in Kafka. The
//! bindings go to the active controller, which decides for the cluster: a binding Kafka would
//! refuse (a filter value such as ANY or MATCH, an unknown enum code, an empty name, a CLUSTER
//! resource not named `kafka-cluster`, a principal without a type) gets INVALID_REQUEST and the
//! others are still created; creating one that exists succeeds. Answered once this broker's
//! authorizer has the new ACLs.

use std::collections::HashSet;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{ApiKey, CreateAclsRequest, CreateAclsResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclBinding, AclOperation};
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::controller::admin_rpcs;

pub async fn handle(ctx: &Ctx<'_>, req: CreateAclsRequest) -> CreateAclsResponse {
    let mut resp = CreateAclsResponse::default();
    if let Err((e, message)) = ctx.acl_admin(AclOperation::Alter, "No Authorizer is configured.") {
        resp.results = req.creations.iter().map(|_| failure(e, &message)).collect();
        return resp;
    }
    if req.creations.is_empty() {
        return resp;
    }
    let bindings: Vec<AclBinding> = req
        .creations
        .iter()
        .map(admin_rpcs::binding_from_kafka)
        .collect();
    let request = ControllerRequest::CreateAcls(bindings.clone());
    let result = crate::metadata_wait::ask_controller(&ctx.controller(), request.clone()).await;
    if let Ok(ControllerReply::CreateAcls(results)) = &result {
        let created: Vec<&AclBinding> = bindings
            .iter()
            .zip(results)
            .filter(|(_, r)| r.error_code == 0)
            .map(|(b, _)| b)
            .collect();
        crate::metadata_wait::wait_until_published(ctx.node(), |image| {
            let acls: HashSet<AclBinding> =
                image.acls().map(|(_, a)| AclBinding::from(&**a)).collect();
            created.iter().all(|b| acls.contains(*b))
        })
        .await;
    }
    match admin_rpcs::response_to_kafka(ApiKey::CreateAcls, &request, &result) {
        ResponseKind::CreateAcls(r) => r,
        _ => unreachable!("a CreateAcls answer"),
    }
}

fn failure(e: ResponseError, message: &str) -> AclCreationResult {
    let mut r = AclCreationResult::default();
    r.error_code = e.code();
    r.error_message = Some(StrBytes::from_string(message.to_string()));
    r
}
