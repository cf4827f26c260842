//! Waiting on the metadata a change goes through: the active controller's answer to a
//! forwarded change, this broker's committed image and its topic registry, each taken as the
//! part it waits on (not the whole broker). Handlers answer a change once it is visible here;
//! internal topics and the upgrade import wait the same way. Below the handlers: it knows
//! nothing of requests or connections.

use std::sync::Arc;

use crate::controller::runtime::Controller;
use crate::node::Node;
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

/// Waits (at most `timeout`) until the publisher has published the image the controller has
/// now, or a later one; returns whether it did. (The image changes every
/// `metadata.max.idle.interval.ms` at least, with the controller's no-op records, so "the
/// image of now" is compared afresh each time the publisher publishes.)
pub async fn caught_up(node: &Node, timeout: std::time::Duration) -> bool {
    published(node, timeout, false).await
}

/// [`caught_up`], and the partitions have taken their roles (this incarnation registered and
/// was unfenced): what a broker waits for before it says it serves.
pub async fn serving(node: &Node, timeout: std::time::Duration) -> bool {
    published(node, timeout, true).await
}

async fn published(node: &Node, timeout: std::time::Duration, roles: bool) -> bool {
    let mut published = node.published.subscribe();
    let waited = tokio::time::timeout(timeout, async {
        loop {
            let done = {
                let (image, with_roles) = &*published.borrow_and_update();
                Arc::ptr_eq(image, &node.controller.image()) && (*with_roles || !roles)
            };
            if done {
                return true;
            }
            if published.changed().await.is_err() {
                return false;
            }
        }
    });
    waited.await.unwrap_or(false)
}

/// How long a change the controller committed may take to reach this broker's publisher.
const PUBLISH_WAIT_MS: u64 = 5_000;

/// Waits (bounded) until this broker's image satisfies `done` and the publisher has made the
/// broker follow it: a cluster-wide change (configs, ACLs, credentials, features) the controller
/// committed is answered once this broker serves with it.
pub async fn wait_until_published(
    node: &Node,
    done: impl Fn(&samsa_cluster::metadata::MetadataImage) -> bool,
) {
    crate::metadata_wait::wait_for_image(&node.controller, PUBLISH_WAIT_MS, done).await;
    caught_up(node, std::time::Duration::from_millis(PUBLISH_WAIT_MS)).await;
}
