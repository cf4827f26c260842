//! DescribeAcls (KIP-140): the ACL bindings one filter selects, grouped by resource pattern,
//! from this broker's metadata image (`samsa_cluster::acl::describe_acls`: every broker
//! answers alike). A null name, principal or host and the ANY values match everything; pattern
//! type MATCH selects the bindings that apply to the named resource (its literal, `*`, and
//! prefixes of it, KIP-290). A filter with an unknown code is INVALID_REQUEST. The caller needs
//! DESCRIBE on the cluster. Without an authorizer the answer is SECURITY_DISABLED, as in Kafka.

use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{DescribeAclsRequest, DescribeAclsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclBinding, AclFilter, AclOperation};

pub fn handle(ctx: &Ctx<'_>, req: DescribeAclsRequest) -> DescribeAclsResponse {
    let mut resp = DescribeAclsResponse::default();
    let filter = AclFilter::from_wire(
        req.resource_type_filter,
        req.resource_name_filter.as_deref(),
        req.pattern_type_filter,
        req.principal_filter.as_deref(),
        req.host_filter.as_deref(),
        req.operation,
        req.permission_type,
    );
    let described = ctx
        .acl_admin(
            AclOperation::Describe,
            "No Authorizer is configured on the broker",
        )
        .and_then(|_| {
            samsa_cluster::acl::describe_acls(&ctx.controller().image(), &filter)
                .map_err(|e| (ResponseError::InvalidRequest, e.0))
        });
    match described {
        Ok(bindings) => resp.resources = by_resource(bindings),
        Err((e, message)) => {
            resp.error_code = e.code();
            resp.error_message = Some(StrBytes::from_string(message));
        }
    }
    resp
}

/// Bindings as the response carries them: one entry per resource pattern, with its ACLs. The
/// input is ordered by resource, so each pattern's bindings are contiguous.
fn by_resource(bindings: Vec<AclBinding>) -> Vec<DescribeAclsResource> {
    let mut out: Vec<DescribeAclsResource> = Vec::new();
    for b in bindings {
        let same = out.last().is_some_and(|r| {
            r.resource_type == b.resource_type.code()
                && r.pattern_type == b.pattern_type.code()
                && r.resource_name.as_str() == b.resource_name
        });
        if !same {
            let mut r = DescribeAclsResource::default();
            r.resource_type = b.resource_type.code();
            r.resource_name = StrBytes::from_string(b.resource_name.clone());
            r.pattern_type = b.pattern_type.code();
            out.push(r);
        }
        let mut d = AclDescription::default();
        d.principal = StrBytes::from_string(b.principal);
        d.host = StrBytes::from_string(b.host);
        d.operation = b.operation.code();
        d.permission_type = b.permission_type.code();
        out.last_mut().expect("pushed above").acls.push(d);
    }
    out
}
