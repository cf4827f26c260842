//! DeleteAcls (KIP-140): deletes the bindings each filter selects (filters as DescribeAcls's)
//! and reports them per filter. The caller needs ALTER on the cluster; without an authorizer
//! every filter gets SECURITY_DISABLED, as in Kafka. The filters go to the active controller,
//! which decides for the cluster: every filter sees the ACLs as they were before the request,
//! and a filter with an unknown code gets INVALID_REQUEST and deletes nothing. Answered once
//! this broker's authorizer no longer has the deleted ACLs.

use std::collections::HashSet;

use kafka_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use kafka_protocol::messages::{ApiKey, DeleteAclsRequest, DeleteAclsResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclBinding, AclOperation};
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::controller::admin_rpcs;

/// Filters one request may carry: each is matched against every ACL.
const FILTERS_PER_REQUEST_MAX: usize = 1_000;

pub async fn handle(ctx: &Ctx<'_>, req: DeleteAclsRequest) -> DeleteAclsResponse {
    let mut resp = DeleteAclsResponse::default();
    let refuse_all =
        |e: ResponseError, message: &str| req.filters.iter().map(|_| failure(e, message)).collect();
    if let Err((e, message)) = ctx.acl_admin(AclOperation::Alter, "No Authorizer is configured.") {
        resp.filter_results = refuse_all(e, &message);
        return resp;
    }
    if req.filters.len() > FILTERS_PER_REQUEST_MAX {
        resp.filter_results = refuse_all(
            ResponseError::InvalidRequest,
            &format!(
                "{} filters in one DeleteAcls request exceed the limit of {FILTERS_PER_REQUEST_MAX}",
                req.filters.len()
            ),
        );
        return resp;
    }
    if req.filters.is_empty() {
        return resp;
    }
    let filters = req
        .filters
        .iter()
        .map(admin_rpcs::filter_from_kafka)
        .collect();
    let request = ControllerRequest::DeleteAcls(filters);
    let result = crate::metadata_wait::ask_controller(&ctx.controller(), request.clone()).await;
    if let Ok(ControllerReply::DeleteAcls(results)) = &result {
        let deleted: HashSet<&AclBinding> = results
            .iter()
            .flat_map(|r| r.matching_acls.iter())
            .collect();
        crate::metadata_wait::wait_until_published(ctx.node(), |image| {
            !image
                .acls()
                .any(|(_, a)| deleted.contains(&AclBinding::from(&**a)))
        })
        .await;
    }
    match admin_rpcs::response_to_kafka(ApiKey::DeleteAcls, &request, &result) {
        ResponseKind::DeleteAcls(r) => r,
        _ => unreachable!("a DeleteAcls answer"),
    }
}

fn failure(e: ResponseError, message: &str) -> DeleteAclsFilterResult {
    let mut r = DeleteAclsFilterResult::default();
    r.error_code = e.code();
    r.error_message = Some(StrBytes::from_string(message.to_string()));
    r
}
