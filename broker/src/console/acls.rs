//! ACLs (REST v3 `KafkaAcl`): `GET /v3/clusters/{id}/acls`, DescribeAcls with the filter the
//! query gives (`resource_type`, `resource_name`, `pattern_type`, `principal`, `host`,
//! `operation`, `permission`, by Kafka's names; each defaults to ANY). The authorizer allows
//! it to those who may describe the cluster; without an authorizer there are no ACLs (400).

use axum::http::StatusCode;
use axum::response::Response;
use kafka_protocol::messages::DescribeAclsRequest;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use serde_json::json;

use super::{list_of, ApiError, Req};
use crate::acl::{AclOperation, PatternType, PermissionType, ResourceType};
use crate::cli::client::{check, Node};

/// The code of Kafka's enum value named `name` (any case), or a 400 naming the parameter.
fn code_of<T>(
    r: &Req,
    param: &str,
    from_code: fn(i8) -> T,
    name_of: fn(&T) -> &'static str,
) -> Result<i8, ApiError> {
    let Some(name) = r.query::<String>(param)? else {
        return Ok(1); // ANY
    };
    (1..=i8::MAX)
        .find(|c| name_of(&from_code(*c)).eq_ignore_ascii_case(&name))
        .ok_or_else(|| ApiError::bad_request(format!("{param}={name} is not one of Kafka's names")))
}

/// `GET /v3/clusters/{id}/acls`.
pub async fn list(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[
            "resource_type",
            "resource_name",
            "pattern_type",
            "principal",
            "host",
            "operation",
            "permission",
        ])?;
        let resource_type = code_of(r, "resource_type", ResourceType::from_code, |v| v.name())?;
        let pattern_type = code_of(r, "pattern_type", PatternType::from_code, |v| v.name())?;
        let operation = code_of(r, "operation", AclOperation::from_code, |v| v.name())?;
        let permission = code_of(r, "permission", PermissionType::from_code, |v| v.name())?;
        let text = |k: &str| -> Result<Option<StrBytes>, ApiError> {
            Ok(r.query::<String>(k)?.map(StrBytes::from_string))
        };
        let (name, principal, host) = (text("resource_name")?, text("principal")?, text("host")?);
        let (_, resp) = client.call(Node::Any, |_| {
            let mut req = DescribeAclsRequest::default();
            req.resource_type_filter = resource_type;
            req.resource_name_filter = name.clone();
            req.pattern_type_filter = pattern_type;
            req.principal_filter = principal.clone();
            req.host_filter = host.clone();
            req.operation = operation;
            req.permission_type = permission;
            req
        })?;
        if resp.error_code == ResponseError::SecurityDisabled.code() {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "this cluster has no authorizer (authorizer.class.name), so no ACLs",
            ));
        }
        check(
            resp.error_code,
            "the cluster's ACLs",
            resp.error_message.as_ref(),
        )?;
        let mut data = Vec::new();
        for res in &resp.resources {
            for a in &res.acls {
                data.push(json!({
                    "kind": "KafkaAcl",
                    "metadata": { "self": r.url(&["acls"]) },
                    "cluster_id": r.cluster_id(),
                    "resource_type": ResourceType::from_code(res.resource_type).name(),
                    "resource_name": res.resource_name.as_str(),
                    "pattern_type": PatternType::from_code(res.pattern_type).name(),
                    "principal": a.principal.as_str(),
                    "host": a.host.as_str(),
                    "operation": AclOperation::from_code(a.operation).name(),
                    "permission": PermissionType::from_code(a.permission_type).name(),
                }));
            }
        }
        Ok(list_of("KafkaAclDataList", r.url(&["acls"]), None, data))
    })
    .await
}
