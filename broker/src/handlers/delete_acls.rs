//! DeleteAcls (KIP-140): deletes the bindings each filter selects (filters as DescribeAcls's)
//! and reports them per filter. Every filter sees the ACLs as they were before the request; a
//! filter with an unknown code gets INVALID_REQUEST and deletes nothing. The caller needs ALTER
//! on the cluster. Without an authorizer every filter gets SECURITY_DISABLED, as in Kafka.

use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::{AclFilter, AclOperation};

/// Filters one request may carry: each is matched against every ACL.
const FILTERS_PER_REQUEST_MAX: usize = 1_000;

pub fn handle(ctx: &Ctx<'_>, req: DeleteAclsRequest) -> DeleteAclsResponse {
    let mut resp = DeleteAclsResponse::default();
    let refuse_all = |e: ResponseError, message: String| {
        req.filters
            .iter()
            .map(|_| failure(e, message.clone()))
            .collect()
    };
    let authorizer = match ctx.acl_admin(AclOperation::Alter, "No Authorizer is configured.") {
        Ok(a) => a,
        Err((e, message)) => {
            resp.filter_results = refuse_all(e, message);
            return resp;
        }
    };
    if req.filters.len() > FILTERS_PER_REQUEST_MAX {
        resp.filter_results = refuse_all(
            ResponseError::InvalidRequest,
            format!(
                "{} filters in one DeleteAcls request exceed the limit of {FILTERS_PER_REQUEST_MAX}",
                req.filters.len()
            ),
        );
        return resp;
    }
    let filters: Vec<AclFilter> = req
        .filters
        .iter()
        .map(|f| {
            AclFilter::from_wire(
                f.resource_type_filter,
                f.resource_name_filter.as_deref(),
                f.pattern_type_filter,
                f.principal_filter.as_deref(),
                f.host_filter.as_deref(),
                f.operation,
                f.permission_type,
            )
        })
        .collect();
    resp.filter_results = authorizer
        .store
        .delete(&filters)
        .into_iter()
        .map(|r| match r {
            Err(e) => failure(e.response_error(), e.to_string()),
            Ok(deleted) => {
                let mut fr = DeleteAclsFilterResult::default();
                fr.matching_acls = deleted
                    .into_iter()
                    .map(|b| {
                        let mut m = DeleteAclsMatchingAcl::default();
                        m.resource_type = b.resource_type.code();
                        m.resource_name = StrBytes::from_string(b.resource_name);
                        m.pattern_type = b.pattern_type.code();
                        m.principal = StrBytes::from_string(b.principal);
                        m.host = StrBytes::from_string(b.host);
                        m.operation = b.operation.code();
                        m.permission_type = b.permission_type.code();
                        m
                    })
                    .collect();
                fr
            }
        })
        .collect();
    resp
}

fn failure(e: ResponseError, message: String) -> DeleteAclsFilterResult {
    let mut r = DeleteAclsFilterResult::default();
    r.error_code = e.code();
    r.error_message = Some(StrBytes::from_string(message));
    r
}
