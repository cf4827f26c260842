//! The broker's membership of the cluster (Kafka's `BrokerLifecycleManager`): it registers with
//! the active controller (BrokerRegistration, a new incarnation id per process start), then
//! heartbeats every `broker.heartbeat.interval.ms` with the offset of the metadata it has
//! applied; the controller unfences it once it has caught up with its own registration and
//! fences it when the heartbeats stop. On shutdown it asks for a controlled shutdown (leaders
//! move off it first) and waits, bounded, until the controller lets it go.

use std::sync::Arc;
use std::time::Duration;

use samsa_cluster::controller::{BrokerHeartbeatRequest, BrokerRegistrationRequest};
use samsa_cluster::metadata::records::{BrokerEndpoint, BrokerFeature};
use tokio::sync::watch;
use uuid::Uuid;

use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::server::Broker;

/// What the broker last heard from the controller about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Membership {
    pub broker_epoch: Option<i64>,
    pub fenced: bool,
}

/// Kafka's `SecurityProtocol` ids.
fn security_protocol(name: &str) -> i16 {
    match name.to_ascii_uppercase().as_str() {
        "SSL" => 1,
        "SASL_PLAINTEXT" => 2,
        "SASL_SSL" => 3,
        _ => 0,
    }
}

/// The feature levels this broker supports: what it registers with, and what ApiVersions
/// reports (a feature not listed is supported at level 0 only).
pub fn supported_features() -> Vec<BrokerFeature> {
    vec![BrokerFeature {
        name: "metadata.version".into(),
        min_supported_version: samsa_cluster::controller::METADATA_VERSION_MINIMUM,
        max_supported_version: samsa_cluster::controller::METADATA_VERSION_4_0_IV3,
        unknown_tagged_fields: Default::default(),
    }]
}

fn registration(broker: &Broker, incarnation_id: Uuid) -> BrokerRegistrationRequest {
    let listeners = broker
        .config
        .advertised_listeners()
        .into_iter()
        .filter(|l| !broker.is_controller_listener(&l.name))
        .map(|l| BrokerEndpoint {
            security_protocol: security_protocol(&l.name),
            name: l.name,
            host: l.host,
            port: l.port,
            unknown_tagged_fields: Default::default(),
        })
        .collect();
    BrokerRegistrationRequest {
        broker_id: broker.node_id,
        cluster_id: broker.cluster_id.clone(),
        incarnation_id,
        listeners,
        features: supported_features(),
        rack: broker.config.get("broker.rack").filter(|r| !r.is_empty()),
        is_migrating_zk_broker: false,
        log_dirs: vec![broker.directory_id],
    }
}

/// Registers and heartbeats until `shutdown` turns true, then asks for a controlled shutdown.
pub async fn run(
    broker: Arc<Broker>,
    membership: watch::Sender<Membership>,
    mut shutdown: watch::Receiver<bool>,
) {
    let interval =
        Duration::from_millis(broker.config.long("broker.heartbeat.interval.ms").max(10) as u64);
    let incarnation_id = Uuid::new_v4();
    let backoff = Duration::from_millis(100);
    let heartbeat = |epoch: i64, want_shut_down: bool| BrokerHeartbeatRequest {
        broker_id: broker.node_id,
        broker_epoch: epoch,
        current_metadata_offset: broker.controller.status().applied_offset - 1,
        want_fence: false,
        want_shut_down,
    };
    let mut epoch;
    'member: loop {
        // Register, retrying until some controller leads and accepts.
        epoch = loop {
            if *shutdown.borrow() {
                return;
            }
            let req = ControllerRequest::RegisterBroker(registration(&broker, incarnation_id));
            // A request forwarded to a leader that stopped answering can take the forwarding
            // timeout (seconds): a shutdown does not wait for it.
            let answer = tokio::select! {
                a = broker.controller.request(req) => a,
                _ = shutdown.changed() => return,
            };
            match answer {
                Ok(ControllerReply::RegisterBroker(r)) => break r.broker_epoch,
                Ok(_) => {}
                Err((code, why)) => {
                    tracing::debug!(code, %why, "broker registration not accepted yet; retrying")
                }
            }
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
        loop {
            // The first heartbeat at once and then quickly until unfenced (the controller
            // waits for this broker to apply its own registration), then at the interval.
            let wait = match (first, fenced) {
                (true, _) => Duration::ZERO,
                (false, true) => interval.min(Duration::from_millis(20)),
                (false, false) => interval,
            };
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
                a = broker.controller.request(req) => a,
                _ = shutdown.changed() => break 'member,
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
                Err((77, why)) => {
                    tracing::warn!(broker_epoch = epoch, %why, "the controller does not know this broker's epoch; registering again");
                    membership.send_replace(Membership::default());
                    continue 'member;
                }
                Err((code, why)) => tracing::debug!(code, %why, "heartbeat failed"),
            }
        }
    }
    // Controlled shutdown: bounded, so that a cluster without a leader does not hold the
    // process forever.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        let req = ControllerRequest::BrokerHeartbeat(heartbeat(epoch, true));
        let answer =
            tokio::time::timeout(Duration::from_secs(2), broker.controller.request(req)).await;
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
