//! AlterUserScramCredentials (KIP-554): upserts and deletes SCRAM credentials. The client sends
//! the salted password (`Hi(password, salt, iterations)`), never the password. ACLs: ALTER on
//! the cluster, else CLUSTER_AUTHORIZATION_FAILED for every user named. The rest is the active
//! controller's, which decides for the cluster with Kafka's rules (`ScramControlManager`): a
//! user altered twice in one request is DUPLICATE_RESOURCE, an empty user name or iterations
//! outside 4096..=16384 UNACCEPTABLE_CREDENTIAL, a mechanism other than SCRAM-SHA-256/512
//! UNSUPPORTED_SASL_MECHANISM, deleting a credential that does not exist RESOURCE_NOT_FOUND;
//! the valid changes are committed together and answered once this broker's image has them.

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey, RequestKind,
    ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::AclOperation;
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::controller::admin_rpcs;

pub async fn handle(
    ctx: &Ctx<'_>,
    req: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let Some(ControllerRequest::AlterUserScramCredentials {
        deletions,
        upsertions,
    }) = admin_rpcs::from_kafka(RequestKind::AlterUserScramCredentials(req))
    else {
        unreachable!("an AlterUserScramCredentials request")
    };
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Alter) {
        // Every user named, once, in name order (Kafka's `getErrorResponse`).
        let mut resp = AlterUserScramCredentialsResponse::default();
        resp.results = admin_rpcs::scram_users(&deletions, &upsertions)
            .into_iter()
            .map(|user| {
                let mut r = AlterUserScramCredentialsResult::default();
                r.user = StrBytes::from_string(user);
                r.error_code = code.code();
                r.error_message = Some(StrBytes::from_string(message.clone()));
                r
            })
            .collect();
        return resp;
    }
    if deletions.is_empty() && upsertions.is_empty() {
        return AlterUserScramCredentialsResponse::default();
    }
    let request = ControllerRequest::AlterUserScramCredentials {
        deletions: deletions.clone(),
        upsertions: upsertions.clone(),
    };
    let result = crate::metadata_wait::ask_controller(&ctx.controller(), request.clone()).await;
    if let Ok(ControllerReply::AlterUserScramCredentials(results)) = &result {
        let succeeded = |user: &str| results.iter().any(|r| r.user == user && r.error_code == 0);
        crate::metadata_wait::wait_until_published(ctx.node(), |image| {
            deletions
                .iter()
                .filter(|d| succeeded(&d.name))
                .all(|d| image.scram_credential(d.mechanism, &d.name).is_none())
                && upsertions.iter().filter(|u| succeeded(&u.name)).all(|u| {
                    image
                        .scram_credential(u.mechanism, &u.name)
                        .is_some_and(|c| c.iterations == u.iterations && c.salt == u.salt)
                })
        })
        .await;
    }
    match admin_rpcs::response_to_kafka(ApiKey::AlterUserScramCredentials, &request, &result) {
        ResponseKind::AlterUserScramCredentials(r) => r,
        _ => unreachable!("an AlterUserScramCredentials answer"),
    }
}
