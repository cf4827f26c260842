//! Waiting on the metadata a change goes through: the active controller's answer to a
//! forwarded change, this broker's committed image and its topic registry, each taken as the
//! part it waits on (not the whole broker). Handlers answer a change once it is visible here;
//! internal topics and the upgrade import wait the same way. Below the handlers: it knows
//! nothing of requests or connections. (Waiting for the publisher to follow the image is
//! `publisher::wait_until_published`.)

use crate::controller::runtime::Controller;
use crate::topics::TopicRegistry;

/// How long a request forwarded to the controller may take: the client's `timeout_ms`,
/// within bounds (a client's 0 still gives the controller a moment).
pub fn ctx_timeout(timeout_ms: i32) -> std::time::Duration {
    std::time::Duration::from_millis(timeout_ms.clamp(1_000, 60_000) as u64)
}

/// Waits (at most the client's `timeout_ms`, and 5 s) until `done` holds for this broker's
/// topics: a topic change committed by the controller is answered once it is installed here.
pub async fn wait_for_topics(
    topics: &TopicRegistry,
    timeout_ms: i32,
    done: impl Fn(&TopicRegistry) -> bool,
) {
    let mut changes = topics.watch();
    let limit = std::time::Duration::from_millis(timeout_ms.clamp(0, 5_000) as u64);
    let _ = tokio::time::timeout(limit, async {
        while !done(topics) {
            if changes.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
}

/// Waits (at most `timeout_ms`) until `done` holds for this broker's committed metadata image.
pub async fn wait_for_image(
    controller: &Controller,
    timeout_ms: u64,
    done: impl Fn(&samsa_cluster::metadata::MetadataImage) -> bool,
) {
    let mut images = controller.subscribe();
    let limit = std::time::Duration::from_millis(timeout_ms);
    let _ = tokio::time::timeout(limit, images.wait_for(|image| done(image))).await;
}

/// How long the active controller may take to decide a change to configs, ACLs, credentials
/// or features (requests that carry no timeout of their own).
const FORWARD_TIMEOUT_MS: i32 = 15_000;

/// Asks the active controller, wherever it is, for a change to configs, ACLs, credentials or
/// features: REQUEST_TIMED_OUT after 15 s without an answer (no quorum).
pub async fn ask_controller(
    controller: &Controller,
    request: crate::controller::active::ControllerRequest,
) -> crate::controller::active::ControllerResult {
    controller
        .request_retrying(request, ctx_timeout(FORWARD_TIMEOUT_MS))
        .await
}
