//! UpdateFeatures (KIP-584): finalizes feature levels for the cluster (`metadata.version`, and
//! features such as `group.version` where this cluster supports them). The caller needs ALTER
//! on the cluster (else CLUSTER_AUTHORIZATION_FAILED); the rest is the active controller's
//! (Kafka's `FeatureControlManager`: every node must support a level, downgrades need their
//! upgrade type, one refused update fails the request with INVALID_UPDATE_VERSION). v0 asks for
//! a downgrade with a flag, later versions with an upgrade type; v0 and v1 answer per feature
//! too, with the request's code. Answered once this broker's image has the new levels, so that
//! its ApiVersions reports them.

use kafka_protocol::messages::{
    ApiKey, ResponseKind, UpdateFeaturesRequest, UpdateFeaturesResponse,
};
use samsa_cluster::controller::FeatureUpdate;
use samsa_cluster::metadata::image::METADATA_VERSION_FEATURE;

use super::ctx::Ctx;
use crate::acl::AclOperation;
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::controller::admin_rpcs;
use crate::metadata_wait::ctx_timeout;

pub async fn handle(ctx: &Ctx<'_>, req: UpdateFeaturesRequest) -> UpdateFeaturesResponse {
    let updates: Vec<FeatureUpdate> = req
        .feature_updates
        .iter()
        .map(admin_rpcs::feature_update_from_kafka)
        .collect();
    let request = ControllerRequest::UpdateFeatures {
        updates: updates.clone(),
        validate_only: req.validate_only,
    };
    let result = match ctx.authorize_cluster(AclOperation::Alter) {
        Err((code, message)) => Err(crate::controller::active::ReplyError::new(
            code.code(),
            message,
        )),
        Ok(()) => {
            ctx.controller()
                .request_retrying(request.clone(), ctx_timeout(req.timeout_ms))
                .await
        }
    };
    if let Ok(ControllerReply::UpdateFeatures(r)) = &result {
        if r.error_code == 0 && !req.validate_only {
            crate::metadata_wait::wait_until_published(ctx.node(), |image| {
                updates.iter().all(|u| {
                    let level = if u.feature == METADATA_VERSION_FEATURE {
                        image.metadata_version()
                    } else {
                        image.features().get(&u.feature).copied()
                    };
                    level.unwrap_or(0) == u.max_version_level
                })
            })
            .await;
        }
    }
    let ResponseKind::UpdateFeatures(mut resp) =
        admin_rpcs::response_to_kafka(ApiKey::UpdateFeatures, &request, &result)
    else {
        unreachable!("an UpdateFeatures answer")
    };
    // Version 2 answers for the whole request only (KIP-1022).
    if ctx.version >= 2 {
        resp.results.clear();
    }
    resp
}
