//! ApiVersions' answers, which the client listeners and the controller listener (KIP-919) both
//! give: here, below both, so the controller needs no handler.

use bytes::BytesMut;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::metadata::image::METADATA_VERSION_FEATURE;
use samsa_cluster::metadata::MetadataImage;

use crate::controller::runtime::QuorumStatus;

/// Kafka's `ApiVersionsRequest.isValid` for v5: a cluster id and a node id come together or
/// not at all (a request with one alone is INVALID_REQUEST, on either listener).
pub fn addressed_validly(added: &samsa_protocol::newer::Record) -> bool {
    let cluster = added.get("ClusterId").and_then(|v| v.as_str()).is_some();
    let node = added.get("NodeId").and_then(|v| v.as_i64()).unwrap_or(-1) != -1;
    cluster == node
}

/// The answer to `req` listing `apis`, with the features of `image` and `status` (read in that
/// order): the client listeners' and the controller listener's, which Kafka's controllers
/// answer alike (KIP-919's `--bootstrap-controller` tools read features there).
pub fn answer(
    req: &ApiVersionsRequest,
    version: i16,
    apis: Vec<ApiVersion>,
    image: &MetadataImage,
    status: &QuorumStatus,
) -> ApiVersionsResponse {
    let mut resp = ApiVersionsResponse::default();
    // KIP-511: from v3 the client names its software; Kafka refuses names and versions that
    // are not of letters, digits, '.' and '-' (starting and ending with a letter or digit),
    // with nothing else in the answer.
    if version >= 3
        && !(valid_software_text(&req.client_software_name)
            && valid_software_text(&req.client_software_version))
    {
        resp.error_code = ResponseError::InvalidRequest.code();
        return resp;
    }
    resp.api_keys = apis;
    resp.supported_features = supported_features()
        .into_iter()
        .map(|f| {
            let mut k = SupportedFeatureKey::default();
            k.name = StrBytes::from_string(f.name);
            k.min_version = f.min_supported_version;
            k.max_version = f.max_supported_version;
            k
        })
        .chain(std::iter::once({
            // The quorum's own feature (KIP-853): 1 lets its voters change.
            let mut k = SupportedFeatureKey::default();
            k.name = StrBytes::from_static_str("kraft.version");
            k.min_version = 0;
            k.max_version = 1;
            k
        }))
        // v3 cannot say a minimum of 0 (KAFKA-17011): such features are left out before v4.
        .filter(|k| version >= 4 || k.min_version > 0)
        .collect();
    let applied_offset = status.applied_offset;
    if let Some(metadata_version) = image.metadata_version() {
        resp.finalized_features_epoch = applied_offset - 1;
        // kraft.version is finalized by the quorum, not the image; level 0 is not listed.
        let kraft = (status.kraft_version > 0).then_some(("kraft.version", status.kraft_version));
        let finalized = std::iter::once((METADATA_VERSION_FEATURE, metadata_version))
            .chain(kraft)
            .chain(image.features().iter().map(|(n, l)| (n.as_str(), *l)));
        resp.finalized_features = finalized
            .map(|(name, level)| {
                let mut k = FinalizedFeatureKey::default();
                k.name = StrBytes::from_string(name.to_string());
                k.min_version_level = level;
                k.max_version_level = level;
                k
            })
            .collect();
    }
    resp
}

/// Kafka's rule for `client_software_name` and `client_software_version`
/// (`ApiVersionsRequest.isValid`): letters, digits, '.' and '-', starting and ending with a
/// letter or digit.
fn valid_software_text(s: &str) -> bool {
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    edge_ok(s.chars().next())
        && edge_ok(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

/// The answer to an ApiVersions request of a version we do not serve: the v0 body with
/// UNSUPPORTED_VERSION and, as Kafka answers, only ApiVersions' own range in `apis` (the client
/// listeners' table, or the controller listener's), which is all the client needs to retry.
pub fn unsupported_version(
    out: &mut BytesMut,
    correlation_id: i32,
    apis: &[samsa_protocol::api_table::ApiRange],
) {
    let mut resp = ApiVersionsResponse::default();
    resp.error_code = ResponseError::UnsupportedVersion.code();
    resp.api_keys = samsa_protocol::api_table::api_versions(apis);
    resp.api_keys
        .retain(|k| k.api_key == ApiKey::ApiVersions as i16);
    samsa_protocol::encode_response(
        out,
        ApiKey::ApiVersions,
        0,
        correlation_id,
        &ResponseKind::ApiVersions(resp),
    )
    .expect("an ApiVersions v0 response always encodes");
}

/// The feature levels this broker supports: what it registers with, and what ApiVersions
/// reports (a feature not listed is supported at level 0 only).
pub fn supported_features() -> Vec<samsa_cluster::metadata::records::BrokerFeature> {
    samsa_cluster::controller::samsa_supported_features()
        .into_iter()
        .map(
            |(name, min, max)| samsa_cluster::metadata::records::BrokerFeature {
                name,
                min_supported_version: min,
                max_supported_version: max,
                unknown_tagged_fields: Default::default(),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::valid_software_text;

    #[test]
    fn client_software_names_follow_kafkas_rule() {
        for ok in ["librdkafka", "apache-kafka-java", "4.4.0", "a", "1.0-rc1"] {
            assert!(valid_software_text(ok), "{ok}");
        }
        for bad in [
            "",
            "bad name!",
            "1.0 beta",
            "client-",
            "-x",
            ".x",
            "x.",
            "ü",
        ] {
            assert!(!valid_software_text(bad), "{bad}");
        }
    }
}
