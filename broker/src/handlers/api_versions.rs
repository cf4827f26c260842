//! ApiVersions: the APIs and version ranges this broker serves, from the one table in
//! `samsa_protocol::api_table`. A client asking with a version newer than ours gets the v0
//! body with UNSUPPORTED_VERSION and our ranges, so it can retry with one we know (KIP-511).
//! From v3 the answer also carries the feature levels this broker supports and those the
//! cluster finalized (KIP-584), from this broker's metadata image, with the image's offset as
//! their epoch; clients choose protocols by them.
//!
//! v5 (KIP-1242) lets a client name the cluster and node it means to reach: a client listener
//! answers REBOOTSTRAP_REQUIRED, with nothing else, when a cluster id is given and it or the
//! node id is not this node's (a client that kept an address the cluster gave to another node
//! learns to bootstrap again), as Kafka's `KafkaApis` does; the controller listener does not
//! check, as Kafka's `ControllerApis` does not. Both fields are outside `kafka-protocol`'s
//! struct (`samsa_protocol::newer` hands them over beside it).

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::ResponseError;
use samsa_protocol::SUPPORTED_APIS;

use super::ctx::Ctx;
use crate::controller::answers::api_versions::{addressed_validly, answer};

pub fn handle(ctx: &Ctx<'_>, req: ApiVersionsRequest) -> ApiVersionsResponse {
    handle_addressed(ctx, req, &samsa_protocol::newer::Record::new())
}

/// [`handle`] for a request that may name the cluster and node it is meant for: `added` holds
/// v5's ClusterId and NodeId (see `samsa_protocol::newer`).
pub fn handle_addressed(
    ctx: &Ctx<'_>,
    req: ApiVersionsRequest,
    added: &samsa_protocol::newer::Record,
) -> ApiVersionsResponse {
    // Every API, the share-group ones too whatever `share.version` is: Kafka 4.4 advertises
    // them always and answers UNSUPPORTED_VERSION while the feature is below 1.
    let apis = served();
    // The image first: the controller publishes its applied offset after the image, so the
    // epoch answered may trail these levels, never lead them (a client that caches levels by
    // epoch then takes the same levels again at the next epoch, rather than keeping old levels
    // under a new epoch).
    let image = ctx.controller().image();
    let status = ctx.controller().status();
    let mut resp = answer(&req, ctx.version, apis, &image, &status);
    if !addressed_validly(added) {
        resp = ApiVersionsResponse::default();
        resp.error_code = ResponseError::InvalidRequest.code();
    } else if resp.error_code == 0
        && names_another_node(added, &ctx.node().cluster_id, ctx.node().node_id)
    {
        resp = ApiVersionsResponse::default();
        resp.error_code = ResponseError::RebootstrapRequired.code();
    }
    resp
}

/// Whether an ApiVersions v5+ request (`added`: its ClusterId and NodeId) was meant for
/// another cluster or node: only when it names a cluster, and then the node id must match too
/// (Kafka's `clusterIdOrNodeIdIsInvalid`).
fn names_another_node(
    added: &samsa_protocol::newer::Record,
    cluster_id: &str,
    node_id: i32,
) -> bool {
    let Some(asked) = added.get("ClusterId").and_then(|v| v.as_str()) else {
        return false;
    };
    let asked_node = added.get("NodeId").and_then(|v| v.as_i64()).unwrap_or(-1);
    asked != cluster_id || asked_node != node_id as i64
}

fn served() -> Vec<ApiVersion> {
    let mut apis = samsa_protocol::api_table::api_versions(SUPPORTED_APIS);
    // The streams group APIs, outside `kafka-protocol`'s table (advertised whatever
    // `streams.version` is, as Kafka 4.4 does; below level 1 they answer UNSUPPORTED_VERSION).
    for (key, min, max) in super::streams_dispatch::SERVED {
        let mut a = ApiVersion::default();
        a.api_key = key;
        a.min_version = min;
        a.max_version = max;
        apis.push(a);
    }
    apis.sort_by_key(|a| a.api_key);
    apis
}

#[cfg(test)]
mod tests {
    use super::names_another_node;
    use samsa_protocol::newer::{Record, Value};

    #[test]
    fn a_v5_request_for_another_cluster_or_node_must_rebootstrap() {
        let asked = |cluster: Option<&str>, node: i64| {
            Record::new()
                .with("ClusterId", Value::string(cluster))
                .with("NodeId", Value::Int(node))
        };
        assert!(!names_another_node(&Record::new(), "c", 1), "v4 and below");
        assert!(
            !names_another_node(&asked(None, 7), "c", 1),
            "no cluster named"
        );
        assert!(!names_another_node(&asked(Some("c"), 1), "c", 1));
        assert!(names_another_node(&asked(Some("other"), 1), "c", 1));
        assert!(names_another_node(&asked(Some("c"), 2), "c", 1));
        assert!(names_another_node(&asked(Some("c"), -1), "c", 1));
        assert!(super::addressed_validly(&Record::new()));
        assert!(super::addressed_validly(&asked(None, -1)));
        assert!(super::addressed_validly(&asked(Some("c"), 1)));
        assert!(!super::addressed_validly(&asked(None, 7)));
        assert!(!super::addressed_validly(&asked(Some("c"), -1)));
    }
}
