//! AlterUserScramCredentials (KIP-554): upserts and deletes SCRAM credentials. The client sends
//! the salted password (`Hi(password, salt, iterations)`), never the password. Kafka's rules
//! (`ScramControlManager`): a user altered twice in one request is DUPLICATE_RESOURCE, an
//! empty user name or iterations outside 4096..=16384 UNACCEPTABLE_CREDENTIAL, a mechanism
//! other than SCRAM-SHA-256/512 UNSUPPORTED_SASL_MECHANISM, deleting a credential that does
//! not exist RESOURCE_NOT_FOUND; the valid changes are persisted together before the answer.
//! ACLs: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every user named.

use std::collections::BTreeSet;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::AclOperation;
use crate::scram::{Deletion, Upsertion};

fn result(user: String, error: Option<(ResponseError, String)>) -> AlterUserScramCredentialsResult {
    let mut r = AlterUserScramCredentialsResult::default();
    r.user = StrBytes::from_string(user);
    if let Some((code, message)) = error {
        r.error_code = code.code();
        r.error_message = Some(StrBytes::from_string(message));
    }
    r
}

pub fn handle(
    ctx: &Ctx<'_>,
    req: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let mut resp = AlterUserScramCredentialsResponse::default();
    let deletions: Vec<Deletion> = req
        .deletions
        .iter()
        .map(|d| Deletion {
            user: d.name.to_string(),
            mechanism: d.mechanism,
        })
        .collect();
    let upsertions: Vec<Upsertion> = req
        .upsertions
        .iter()
        .map(|u| Upsertion {
            user: u.name.to_string(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let refuse_all = |code: ResponseError, message: String| {
        // Every user named, once, in name order (Kafka's `getErrorResponse`).
        let users: BTreeSet<&str> = deletions
            .iter()
            .map(|d| d.user.as_str())
            .chain(upsertions.iter().map(|u| u.user.as_str()))
            .collect();
        users
            .into_iter()
            .map(|u| result(u.to_string(), Some((code, message.clone()))))
            .collect()
    };
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Alter) {
        resp.results = refuse_all(code, message);
        return resp;
    }
    resp.results = match ctx.broker.scram_credentials.alter(&deletions, &upsertions) {
        Ok(results) => results.into_iter().map(|(u, e)| result(u, e)).collect(),
        Err(e) => refuse_all(
            ResponseError::UnknownServerError,
            format!("cannot write the SCRAM credentials: {e}"),
        ),
    };
    resp
}
