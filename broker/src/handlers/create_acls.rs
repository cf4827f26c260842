//! CreateAcls (KIP-140): adds ACL bindings, each answered on its own. A binding Kafka would
//! refuse (a filter value such as ANY or MATCH, an unknown enum code, an empty name, a CLUSTER
//! resource not named `kafka-cluster`, a principal without a type) gets INVALID_REQUEST and the
//! others are still created; creating one that exists succeeds. The caller needs ALTER on the
//! cluster. Without an authorizer every binding gets SECURITY_DISABLED, as in Kafka.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::{AclBinding, AclOperation, PatternType, PermissionType, ResourceType};

pub fn handle(ctx: &Ctx<'_>, req: CreateAclsRequest) -> CreateAclsResponse {
    let mut resp = CreateAclsResponse::default();
    let refuse_all = |e: ResponseError, message: String| {
        req.creations
            .iter()
            .map(|_| failure(e, message.clone()))
            .collect()
    };
    let authorizer = match ctx.acl_admin(AclOperation::Alter, "No Authorizer is configured.") {
        Ok(a) => a,
        Err((e, message)) => {
            resp.results = refuse_all(e, message);
            return resp;
        }
    };
    let bindings = req.creations.iter().map(binding).collect();
    resp.results = authorizer
        .store
        .create(bindings)
        .into_iter()
        .map(|r| match r {
            Ok(()) => AclCreationResult::default(),
            Err(e) => failure(e.response_error(), e.to_string()),
        })
        .collect();
    resp
}

fn binding(c: &AclCreation) -> AclBinding {
    AclBinding {
        resource_type: ResourceType::from_code(c.resource_type),
        resource_name: c.resource_name.to_string(),
        pattern_type: PatternType::from_code(c.resource_pattern_type),
        principal: c.principal.to_string(),
        host: c.host.to_string(),
        operation: AclOperation::from_code(c.operation),
        permission_type: PermissionType::from_code(c.permission_type),
    }
}

fn failure(e: ResponseError, message: String) -> AclCreationResult {
    let mut r = AclCreationResult::default();
    r.error_code = e.code();
    r.error_message = Some(StrBytes::from_string(message));
    r
}
