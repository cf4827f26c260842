//! UnregisterBroker (KIP-631; `kafka-cluster.sh unregister`, `Admin.unregisterBroker`): removes
//! a broker's registration, for a broker that is gone for good. Kafka's brokers forward it to the
//! active controller, which takes the broker out of every ISR and leadership and writes an
//! `UnregisterBrokerRecord`; an id that is not registered is BROKER_ID_NOT_REGISTERED ("Broker
//! ID N is not currently registered"). A live broker is unregistered too: Kafka's goes on
//! heartbeating in vain until it restarts, Samsa's registers again at its next heartbeat.
//!
//! ACLs: ALTER on the cluster (Kafka's controller checks it), else CLUSTER_AUTHORIZATION_FAILED.
//! A removal is answered once this broker's image no longer holds the broker, so that the
//! DescribeCluster or Metadata a tool sends next does not list it.

use kafka_protocol::messages::{UnregisterBrokerRequest, UnregisterBrokerResponse};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::AclOperation;
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::controller::broker_rpcs;

pub async fn handle(ctx: &Ctx<'_>, req: UnregisterBrokerRequest) -> UnregisterBrokerResponse {
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Alter) {
        let mut r = UnregisterBrokerResponse::default();
        r.error_code = code.code();
        r.error_message = Some(StrBytes::from_string(message));
        return r;
    }
    let broker_id = req.broker_id.0;
    let result = crate::metadata_wait::ask_controller(
        &ctx.controller(),
        ControllerRequest::UnregisterBroker { broker_id },
    )
    .await;
    if let Ok(ControllerReply::UnregisterBroker) = result {
        crate::metadata_wait::wait_until_published(ctx.node(), |image| {
            image.broker(broker_id).is_none()
        })
        .await;
    }
    broker_rpcs::unregister_response(&result)
}
