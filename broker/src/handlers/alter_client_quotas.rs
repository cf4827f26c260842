//! AlterClientQuotas (KIP-546): sets and removes the quotas of client quota entities. ACLs:
//! ALTER_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every entity named. The
//! rest is the active controller's, which decides for the cluster with Kafka's rules
//! (`samsa_cluster::controller` `client_quotas.rs`): every entity is answered, the valid changes
//! are committed together and answered once this broker's image has them, so that a
//! DescribeClientQuotas sent next to this broker sees them.

use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
use samsa_cluster::metadata::image::{ClientQuotaEntity, QuotaValue};

use super::ctx::Ctx;
use crate::acl::AclOperation;
use crate::controller::active::{ControllerReply, ControllerRequest, ReplyError};
use crate::controller::quota_rpcs;

/// An entity and what each key it names should be once published (`None`: removed).
type Expected = (ClientQuotaEntity, Vec<(String, Option<f64>)>);

pub async fn handle(ctx: &Ctx<'_>, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse {
    let ControllerRequest::AlterClientQuotas {
        alterations,
        validate_only,
    } = quota_rpcs::from_kafka(req)
    else {
        unreachable!("an AlterClientQuotas request")
    };
    if let Err((code, _)) = ctx.authorize_cluster(AclOperation::AlterConfigs) {
        let refused = Err(ReplyError::new(
            code.code(),
            "Cluster authorization failed.".into(),
        ));
        return quota_rpcs::response_to_kafka(&alterations, &refused);
    }
    if alterations.is_empty() {
        return AlterClientQuotasResponse::default();
    }
    let request = ControllerRequest::AlterClientQuotas {
        alterations: alterations.clone(),
        validate_only,
    };
    let result = crate::metadata_wait::ask_controller(ctx.controller(), request).await;
    if let (Ok(ControllerReply::AlterClientQuotas(results)), false) = (&result, validate_only) {
        // What each entity that succeeded should look like once published.
        let expected: Vec<Expected> = alterations
            .iter()
            .filter(|a| {
                results.iter().any(|r| {
                    r.error_code == 0
                        && r.entity.iter().cloned().collect::<ClientQuotaEntity>()
                            == a.entity.iter().cloned().collect::<ClientQuotaEntity>()
                })
            })
            .map(|a| {
                (
                    a.entity.iter().cloned().collect(),
                    a.ops
                        .iter()
                        .map(|o| (o.key.clone(), (!o.remove).then_some(o.value)))
                        .collect(),
                )
            })
            .collect();
        crate::metadata_wait::wait_until_published(ctx.node(), |image| {
            expected.iter().all(|(entity, ops)| {
                let quotas = image.client_quotas().get(entity);
                ops.iter().all(|(key, value)| {
                    quotas.and_then(|q| q.get(key)) == value.map(QuotaValue).as_ref()
                })
            })
        })
        .await;
    }
    quota_rpcs::response_to_kafka(&alterations, &result)
}
