//! AddRaftVoter and RemoveRaftVoter (KIP-853) as Kafka sends them: turned into a
//! [`VoterChange`] for the quorum's leader, and the leader's answer (or the one a forwarded
//! request brings back) into the response. Served on the controller listener and, forwarded
//! to the leader, on brokers, as Kafka's brokers forward them.

use std::time::Duration;

use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, ApiKey, RemoveRaftVoterRequest,
    RemoveRaftVoterResponse, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::quorum::{VoterEndpoint, VoterNode};

use super::active::ReplyError;
use super::runtime::{VoterChange, VoterChangeRouted};

fn invalid(message: String) -> ReplyError {
    ReplyError::new(ResponseError::InvalidRequest.code(), message)
}

/// Checks the request's cluster id against ours (INCONSISTENT_CLUSTER_ID when it differs).
fn check_cluster(asked: &Option<StrBytes>, ours: &str) -> Result<(), ReplyError> {
    match asked {
        Some(id) if !id.is_empty() && id.as_str() != ours => Err(ReplyError::new(
            ResponseError::InconsistentClusterId.code(),
            format!("the request is for cluster {id}, this is cluster {ours}"),
        )),
        _ => Ok(()),
    }
}

/// The voter an AddRaftVoter request names.
pub fn add_from_kafka(
    r: &AddRaftVoterRequest,
    cluster_id: &str,
) -> Result<VoterChange, ReplyError> {
    check_cluster(&r.cluster_id, cluster_id)?;
    if r.voter_id < 0 {
        return Err(invalid(format!("voter id {} is not a node id", r.voter_id)));
    }
    if r.listeners.is_empty() {
        return Err(invalid(format!(
            "voter {} has no listener: give the controller listener it is reached at",
            r.voter_id
        )));
    }
    Ok(VoterChange::Add(VoterNode {
        id: r.voter_id,
        directory_id: r.voter_directory_id,
        endpoints: r
            .listeners
            .iter()
            .map(|l| VoterEndpoint {
                name: l.name.to_string(),
                host: l.host.to_string(),
                port: l.port,
            })
            .collect(),
    }))
}

/// The voter a RemoveRaftVoter request names (a nil directory id matches any).
pub fn remove_from_kafka(
    r: &RemoveRaftVoterRequest,
    cluster_id: &str,
) -> Result<VoterChange, ReplyError> {
    check_cluster(&r.cluster_id, cluster_id)?;
    Ok(VoterChange::Remove {
        id: r.voter_id,
        directory_id: (!r.voter_directory_id.is_nil()).then_some(r.voter_directory_id),
    })
}

/// The response to `key` carrying `result`.
pub fn response(key: ApiKey, result: Result<(), ReplyError>) -> ResponseKind {
    let (code, message) = match result {
        Ok(()) => (0, None),
        Err(ReplyError { code, message: m }) => (code, Some(StrBytes::from_string(m))),
    };
    match key {
        ApiKey::AddRaftVoter => ResponseKind::AddRaftVoter(
            AddRaftVoterResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        _ => ResponseKind::RemoveRaftVoter(
            RemoveRaftVoterResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
    }
}

/// What the leader decided, or the answer of the leader the request was forwarded to.
pub async fn finish(
    routed: VoterChangeRouted,
    key: ApiKey,
    version: i16,
    body: RequestKind,
) -> ResponseKind {
    match routed {
        VoterChangeRouted::Done(result) => response(key, result),
        VoterChangeRouted::Forward(peer, patience) => {
            // Sent on at the newest version the codec writes (AddRaftVoter 1's
            // AckWhenCommitted=false is answered as 0's commit, see handlers::add_raft_voter).
            let version = samsa_protocol::newer::request_codec_version(key, version);
            let answer = peer.send(key, version, body);
            match tokio::time::timeout(patience.max(Duration::from_secs(1)), answer).await {
                Ok(Ok(Ok(
                    r @ (ResponseKind::AddRaftVoter(_) | ResponseKind::RemoveRaftVoter(_)),
                ))) => r,
                Ok(Ok(Ok(_))) | Ok(Ok(Err(_))) | Ok(Err(_)) | Err(_) => response(
                    key,
                    Err(ReplyError::new(
                        ResponseError::RequestTimedOut.code(),
                        "the metadata quorum's leader did not answer; retry".into(),
                    )),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::add_raft_voter_request::Listener;

    #[test]
    fn requests_are_checked_before_the_leader_sees_them() {
        let mut r = AddRaftVoterRequest::default().with_voter_id(3);
        assert!(add_from_kafka(&r, "c")
            .unwrap_err()
            .message
            .contains("no listener"));
        r.listeners = vec![Listener::default()
            .with_name(StrBytes::from_static_str("CONTROLLER"))
            .with_host(StrBytes::from_static_str("127.0.0.1"))
            .with_port(9093)];
        assert!(
            matches!(add_from_kafka(&r, "c"), Ok(VoterChange::Add(v)) if v.id == 3 && v.endpoints[0].port == 9093)
        );
        r.cluster_id = Some(StrBytes::from_static_str("other"));
        assert_eq!(
            add_from_kafka(&r, "c").unwrap_err().code,
            ResponseError::InconsistentClusterId.code()
        );
        let rm = RemoveRaftVoterRequest::default().with_voter_id(2);
        assert!(matches!(
            remove_from_kafka(&rm, "c"),
            Ok(VoterChange::Remove {
                id: 2,
                directory_id: None
            })
        ));
    }
}
