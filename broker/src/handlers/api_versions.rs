//! ApiVersions: the APIs and version ranges this broker serves, from the one table in
//! `samsa_protocol::api_table`. A client asking with a version newer than ours gets the v0
//! body with UNSUPPORTED_VERSION and our ranges, so it can retry with one we know (KIP-511).

use bytes::BytesMut;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, ResponseKind};
use kafka_protocol::ResponseError;
use samsa_protocol::SUPPORTED_APIS;

use super::Ctx;

pub fn handle(_ctx: &Ctx<'_>, _req: ApiVersionsRequest) -> ApiVersionsResponse {
    let mut resp = ApiVersionsResponse::default();
    resp.api_keys = served();
    resp
}

fn served() -> Vec<ApiVersion> {
    samsa_protocol::api_table::api_versions(SUPPORTED_APIS)
}

/// The answer to an ApiVersions request of a version we do not serve.
pub fn unsupported_version(out: &mut BytesMut, correlation_id: i32) {
    let mut resp = ApiVersionsResponse::default();
    resp.error_code = ResponseError::UnsupportedVersion.code();
    resp.api_keys = served();
    samsa_protocol::encode_response(
        out,
        ApiKey::ApiVersions,
        0,
        correlation_id,
        &ResponseKind::ApiVersions(resp),
    )
    .expect("an ApiVersions v0 response always encodes");
}
