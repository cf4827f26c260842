//! DescribeClientQuotas (KIP-546): the client quota entities matching a filter, with their
//! quotas, from this broker's metadata image (`samsa_cluster::controller::describe_client_quotas`,
//! Kafka's `ClientQuotasImage.describe`). A malformed filter is the whole request's error
//! (INVALID_REQUEST, or UNSUPPORTED_VERSION for an unknown entity type) with no entries, as
//! Kafka answers. ACLs: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED for
//! the whole request.

use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::controller::{describe_client_quotas, ClientQuotaFilterComponent};

use super::ctx::Ctx;
use crate::acl::AclOperation;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

pub fn handle(ctx: &Ctx<'_>, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse {
    let mut resp = DescribeClientQuotasResponse::default();
    if ctx
        .authorize_cluster(AclOperation::DescribeConfigs)
        .is_err()
    {
        let e = ResponseError::ClusterAuthorizationFailed;
        resp.error_code = e.code();
        // Kafka's message for the error, as its generic error answer carries.
        resp.error_message = Some(s("Cluster authorization failed."));
        resp.entries = None;
        return resp;
    }
    let components: Vec<ClientQuotaFilterComponent> = req
        .components
        .iter()
        .map(|c| ClientQuotaFilterComponent {
            entity_type: c.entity_type.to_string(),
            match_type: c.match_type,
            r#match: c._match.as_ref().map(|m| m.to_string()),
        })
        .collect();
    let image = ctx.node().controller.image();
    match describe_client_quotas(&image, &components, req.strict) {
        Ok(found) => {
            // Kafka's answer leaves the message of a success at its schema default, "".
            resp.error_message = Some(StrBytes::default());
            resp.entries = Some(
                found
                    .into_iter()
                    .map(|(entity, quotas)| {
                        let mut e = EntryData::default();
                        e.entity = entity
                            .iter()
                            .map(|(t, n)| {
                                let mut d = EntityData::default();
                                d.entity_type = s(t);
                                d.entity_name = n.as_deref().map(s);
                                d
                            })
                            .collect();
                        e.values = quotas
                            .iter()
                            .map(|(k, v)| {
                                let mut x = ValueData::default();
                                x.key = s(k);
                                x.value = *v;
                                x
                            })
                            .collect();
                        e
                    })
                    .collect(),
            );
        }
        Err((code, message)) => {
            resp.error_code = code;
            resp.error_message = Some(s(&message));
            resp.entries = None;
        }
    }
    resp
}
