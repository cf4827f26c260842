//! The broker's membership of the cluster (Kafka's `BrokerLifecycleManager`): it registers with
//! the active controller (BrokerRegistration, a new incarnation id per process start), then
//! heartbeats every `broker.heartbeat.interval.ms` with the offset of the metadata it has
//! applied; the controller unfences it once it has caught up with its own registration and
//! fences it when the heartbeats stop. On shutdown it asks for a controlled shutdown (leaders
//! move off it first) and waits, bounded, until the controller lets it go.
//!
//! A heartbeat must reach whichever controller is active within the session timeout, or the
//! broker is fenced and every partition it leads moves. So, as Kafka's brokers do: each request
//! waits at most half the session timeout (KAFKA-14392); a request forwarded to a leader the
//! quorum has since replaced fails at once ([`Controller::request`]); and a failed one is sent
//! again after a short exponential backoff (100 ms, doubling up to the session timeout), not
//! after a whole heartbeat interval. A controller that stops answering (SIGSTOP, a cut link)
//! then costs a heartbeat a few hundred milliseconds once the quorum has a new leader, not the
//! forwarding timeout, which is longer than the session.
//!
//! [`Controller::request`]: crate::controller::runtime::Controller::request

use std::sync::Arc;
use std::time::Duration;

use samsa_cluster::controller::{BrokerHeartbeatRequest, BrokerRegistrationRequest};
use samsa_cluster::metadata::records::BrokerEndpoint;
use tokio::sync::watch;
use uuid::Uuid;

use crate::controller::active::{ControllerReply, ControllerRequest, ReplyError};
use crate::controller::answers::api_versions::supported_features;
pub use crate::node::Membership;
use crate::node::Node;

fn registration(node: &Node, incarnation_id: Uuid) -> BrokerRegistrationRequest {
    let listeners = node
        .config
        .advertised_listeners()
        .into_iter()
        .filter(|l| !node.is_controller_listener(&l.name))
        .map(|l| BrokerEndpoint {
            security_protocol: node
                .config
                .security_protocol(&l.name)
                .map(|p| p.id())
                .unwrap_or(0),
            name: l.name,
            host: l.host,
            port: l.port,
            unknown_tagged_fields: Default::default(),
        })
        .collect();
    BrokerRegistrationRequest {
        broker_id: node.node_id,
        cluster_id: node.cluster_id.clone(),
        incarnation_id,
        listeners,
        features: supported_features(),
        rack: node.config.get("broker.rack").filter(|r| !r.is_empty()),
        is_migrating_zk_broker: false,
        log_dirs: vec![node.directory_id],
    }
}

/// The first wait after a failed registration or heartbeat (Kafka's lifecycle manager backs
/// off from 100 ms).
const RETRY_BACKOFF_INITIAL: Duration = Duration::from_millis(100);

/// How long to wait before the next registration or heartbeat: the first heartbeat at once,
/// then quickly while fenced (the controller waits for this broker to apply its own
/// registration) and at the interval once unfenced; after `failed_attempts` failures in a row,
/// an exponential backoff from [`RETRY_BACKOFF_INITIAL`] up to the heartbeat interval (Kafka
/// backs off up to the session timeout; a retry every interval loads the controller no more than
/// a healthy broker's heartbeats, and a broker restarted within its former incarnation's session
/// registers within an interval of that session's end, not up to a session later).
fn next_wait(
    first: bool,
    fenced: bool,
    failed_attempts: u32,
    interval: Duration,
    session_timeout: Duration,
) -> Duration {
    if failed_attempts > 0 {
        let factor = 1u32 << (failed_attempts - 1).min(16);
        return RETRY_BACKOFF_INITIAL
            .saturating_mul(factor)
            .min(interval.min(session_timeout).max(RETRY_BACKOFF_INITIAL));
    }
    match (first, fenced) {
        (true, _) => Duration::ZERO,
        (false, true) => interval.min(Duration::from_millis(20)),
        (false, false) => interval,
    }
}

/// Registers and heartbeats until `shutdown` turns true, then asks for a controlled shutdown.
pub async fn run(
    node: Arc<Node>,
    membership: watch::Sender<Membership>,
    mut shutdown: watch::Receiver<bool>,
) {
    let interval =
        Duration::from_millis(node.config.long("broker.heartbeat.interval.ms").max(10) as u64);
    let session_timeout =
        Duration::from_millis(node.config.long("broker.session.timeout.ms").max(10) as u64);
    // Each request to the controller waits at most this long (Kafka: KAFKA-14392).
    let request_timeout = session_timeout / 2;
    let ask = |req: ControllerRequest| {
        let node = node.clone();
        async move {
            tokio::time::timeout(request_timeout, node.controller.request(req))
                .await
                .unwrap_or_else(|_| {
                    Err(ReplyError::new(
                        kafka_protocol::ResponseError::RequestTimedOut.code(),
                        format!(
                            "no answer from the active controller within {} ms (half of broker.session.timeout.ms)",
                            request_timeout.as_millis()
                        ),
                    ))
                })
        }
    };
    let incarnation_id = Uuid::new_v4();
    let heartbeat = |epoch: i64, want_shut_down: bool| BrokerHeartbeatRequest {
        broker_id: node.node_id,
        broker_epoch: epoch,
        current_metadata_offset: node.controller.status().applied_offset - 1,
        want_fence: false,
        want_shut_down,
    };
    let mut epoch;
    'member: loop {
        // Register, retrying until some controller leads and accepts.
        let mut failed_attempts = 0;
        epoch = loop {
            if *shutdown.borrow() {
                return;
            }
            let req = ControllerRequest::RegisterBroker(registration(&node, incarnation_id));
            // A shutdown does not wait for an answer.
            let answer = tokio::select! {
                a = ask(req) => a,
                _ = shutdown.changed() => return,
            };
            match answer {
                Ok(ControllerReply::RegisterBroker(r)) => break r.broker_epoch,
                Ok(_) => {}
                Err(ReplyError { code, message: why }) => {
                    tracing::debug!(code, %why, "broker registration not accepted yet; retrying")
                }
            }
            failed_attempts += 1;
            let backoff = next_wait(false, true, failed_attempts, interval, session_timeout);
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = shutdown.changed() => {}
            }
        };
        tracing::info!(
            broker_epoch = epoch,
            "registered with the active controller"
        );
        membership.send_replace(Membership {
            broker_epoch: Some(epoch),
            fenced: true,
        });
        let mut fenced = true;
        let mut first = true;
        let mut failed_attempts = 0;
        loop {
            let wait = next_wait(first, fenced, failed_attempts, interval, session_timeout);
            first = false;
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.changed() => {}
            }
            if *shutdown.borrow() {
                break 'member;
            }
            let req = ControllerRequest::BrokerHeartbeat(heartbeat(epoch, false));
            let answer = tokio::select! {
                a = ask(req) => a,
                _ = shutdown.changed() => break 'member,
            };
            failed_attempts = match &answer {
                Ok(ControllerReply::BrokerHeartbeat(_)) => 0,
                _ => failed_attempts + 1,
            };
            match answer {
                Ok(ControllerReply::BrokerHeartbeat(r)) => {
                    if r.is_fenced != fenced {
                        fenced = r.is_fenced;
                        if fenced {
                            tracing::warn!(
                                broker_epoch = epoch,
                                "the controller fenced this broker"
                            );
                        } else {
                            tracing::info!(
                                broker_epoch = epoch,
                                "the controller unfenced this broker"
                            );
                        }
                        membership.send_replace(Membership {
                            broker_epoch: Some(epoch),
                            fenced,
                        });
                    }
                }
                Ok(_) => {}
                // STALE_BROKER_EPOCH: the controller knows this broker by another epoch (or
                // not at all): register again, as Kafka's brokers do.
                Err(ReplyError {
                    code: 77,
                    message: why,
                }) => {
                    tracing::warn!(broker_epoch = epoch, %why, "the controller does not know this broker's epoch; registering again");
                    membership.send_replace(Membership::default());
                    continue 'member;
                }
                Err(ReplyError { code, message: why }) => {
                    tracing::debug!(code, %why, failed_attempts, "heartbeat failed; sending again")
                }
            }
        }
    }
    // Controlled shutdown: bounded, so that a cluster without a leader does not hold the
    // process forever.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        let req = ControllerRequest::BrokerHeartbeat(heartbeat(epoch, true));
        let answer =
            tokio::time::timeout(Duration::from_secs(2), node.controller.request(req)).await;
        if let Ok(Ok(ControllerReply::BrokerHeartbeat(r))) = answer {
            if r.should_shut_down {
                tracing::info!("controlled shutdown complete");
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::warn!("controlled shutdown did not complete within 5 s; stopping anyway");
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERVAL: Duration = Duration::from_millis(2_000);
    const SESSION: Duration = Duration::from_millis(9_000);

    #[test]
    fn heartbeats_go_at_once_then_quickly_while_fenced_then_at_the_interval() {
        assert_eq!(next_wait(true, true, 0, INTERVAL, SESSION), Duration::ZERO);
        assert_eq!(
            next_wait(false, true, 0, INTERVAL, SESSION),
            Duration::from_millis(20)
        );
        assert_eq!(next_wait(false, false, 0, INTERVAL, SESSION), INTERVAL);
    }

    #[test]
    fn a_failed_heartbeat_is_sent_again_after_a_backoff_far_below_the_session_timeout() {
        let waits: Vec<u128> = (1..=8)
            .map(|n| next_wait(false, false, n, INTERVAL, SESSION).as_millis())
            .collect();
        assert_eq!(waits, vec![100, 200, 400, 800, 1_600, 2_000, 2_000, 2_000]);
        assert_eq!(next_wait(false, false, 1_000, INTERVAL, SESSION), INTERVAL);
        // A session shorter than the interval bounds it too.
        let short = Duration::from_millis(500);
        assert_eq!(next_wait(false, false, 9, INTERVAL, short), short);
    }
}
