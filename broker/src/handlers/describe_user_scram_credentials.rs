//! DescribeUserScramCredentials (KIP-554): the SCRAM mechanisms and iteration counts of the
//! named users, or of every user with credentials when none is named, from this broker's
//! metadata image (`samsa_cluster::controller::describe_user_scram_credentials`). A user without
//! credentials is RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE (Kafka's
//! `ScramImage.describe`). Salts and salted passwords are never returned. ACLs: DESCRIBE on the
//! cluster, else CLUSTER_AUTHORIZATION_FAILED for the whole request, as Kafka answers. Messages
//! are "" where nothing went wrong, as in Kafka's answers.

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;
use samsa_cluster::controller::describe_user_scram_credentials;

use super::ctx::Ctx;
use crate::acl::AclOperation;

pub fn handle(
    ctx: &Ctx<'_>,
    req: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    let mut resp = DescribeUserScramCredentialsResponse::default();
    let users: Vec<String> = req
        .users
        .unwrap_or_default()
        .iter()
        .map(|u| u.name.to_string())
        .collect();
    if let Err((error, _)) = ctx.authorize_cluster(AclOperation::Describe) {
        // Kafka's generic error answer: the code at the top and once per user named, with
        // neither a message nor (in the results) the user's name.
        let code = error.code();
        resp.error_code = code;
        resp.error_message = None;
        resp.results = users
            .iter()
            .map(|_| {
                let mut r = DescribeUserScramCredentialsResult::default();
                r.error_code = code;
                r.error_message = None;
                r
            })
            .collect();
        return resp;
    }
    // Kafka's answer leaves the messages of what succeeded at their schema default, "".
    resp.error_message = Some(StrBytes::default());
    let image = ctx.controller().image();
    resp.results = describe_user_scram_credentials(&image, &users)
        .into_iter()
        .map(|(user, described)| {
            let mut r = DescribeUserScramCredentialsResult::default();
            r.user = StrBytes::from_string(user);
            r.error_message = Some(StrBytes::default());
            match described {
                Ok(infos) => {
                    r.credential_infos = infos
                        .into_iter()
                        .map(|(mechanism, iterations)| {
                            let mut i = CredentialInfo::default();
                            i.mechanism = mechanism.code();
                            i.iterations = iterations;
                            i
                        })
                        .collect();
                }
                Err((code, message)) => {
                    r.error_code = code;
                    r.error_message = Some(StrBytes::from_string(message));
                }
            }
            r
        })
        .collect();
    resp
}
