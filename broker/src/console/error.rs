//! Errors as REST v3 gives them, `{"error_code": <HTTP status>, "message": ...}`, and the
//! one mapping of the Kafka client's errors to HTTP statuses.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::cli::client::ClientError;

/// An error as REST v3 gives it: `{"error_code": <HTTP status>, "message": ...}`.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error_code": self.status.as_u16(), "message": self.message });
        let mut resp = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Basic realm=\"samsa console\""),
            );
        }
        resp
    }
}

impl From<ClientError> for ApiError {
    /// A Kafka error at the handler boundary: missing things are 404, refusals by the
    /// authorizer 403, a failed sign-in 401, an unreachable or misbehaving broker 502/503.
    fn from(e: ClientError) -> ApiError {
        use kafka_protocol::ResponseError as K;
        let status = match &e {
            ClientError::Auth { .. } => StatusCode::UNAUTHORIZED,
            ClientError::Kafka(k) => match K::try_from_code(k.code) {
                Some(K::SaslAuthenticationFailed) => StatusCode::UNAUTHORIZED,
                Some(K::UnknownTopicOrPartition | K::GroupIdNotFound | K::UnknownTopicId) => {
                    StatusCode::NOT_FOUND
                }
                Some(
                    K::TopicAuthorizationFailed
                    | K::GroupAuthorizationFailed
                    | K::ClusterAuthorizationFailed
                    | K::TransactionalIdAuthorizationFailed,
                ) => StatusCode::FORBIDDEN,
                Some(
                    K::InvalidConfig
                    | K::InvalidRequest
                    | K::InvalidTopicException
                    | K::RecordListTooLarge
                    | K::MessageTooLarge
                    | K::InvalidRecord
                    | K::PolicyViolation
                    | K::InvalidPartitions,
                ) => StatusCode::BAD_REQUEST,
                Some(
                    K::NotLeaderOrFollower
                    | K::LeaderNotAvailable
                    | K::CoordinatorNotAvailable
                    | K::CoordinatorLoadInProgress
                    | K::NotCoordinator
                    | K::RequestTimedOut
                    | K::NotEnoughReplicas
                    | K::NotEnoughReplicasAfterAppend,
                ) => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
            ClientError::Connect { .. } | ClientError::Closed { .. } | ClientError::Io { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            _ => StatusCode::BAD_GATEWAY,
        };
        ApiError::new(status, without_cli_hint(e.to_string()))
    }
}

/// The CLI client's messages may point at its own commands ("(`samsa topic list` shows the
/// topics)"), which mean nothing to a user of the API.
fn without_cli_hint(mut message: String) -> String {
    if let Some(i) = message.find(" (`samsa ") {
        if let Some(j) = message[i..].find(')') {
            message.replace_range(i..i + j + 1, "");
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clis_hints_are_left_out_of_api_messages() {
        assert_eq!(
            without_cli_hint(
                "topic 'x' does not exist (`samsa topic list` shows the topics) (UNKNOWN_TOPIC_OR_PARTITION)"
                    .into()
            ),
            "topic 'x' does not exist (UNKNOWN_TOPIC_OR_PARTITION)"
        );
        assert_eq!(without_cli_hint("no hint (X)".into()), "no hint (X)");
    }
}
