//! Requests from this broker to other brokers (Kafka's inter-broker channel): the transaction
//! coordinator's WriteTxnMarkers to partition leaders, and partition leaders' KIP-890
//! verification (AddPartitionsToTxn `verify_only`) at transaction coordinators. Each broker is
//! reached at the endpoint its registration in the metadata image gives for the listener
//! brokers use (`inter.broker.listener.name`), secured as that listener is, on one pipelined
//! connection per broker ([`connections::InterBroker`]), owned by a thread of its own
//! so that a request from any shard can use it.

pub mod connections;
mod error;

pub use error::SendError;

use std::net::SocketAddr;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use crate::cluster_view::ClusterView;
use crate::node::Node;

/// Sends a request to broker `peer` and waits for its answer: its endpoint on the
/// inter-broker listener from this node's metadata image, then the connection to it.
pub async fn send(
    node: &Node,
    peer: i32,
    key: ApiKey,
    version: i16,
    body: RequestKind,
) -> Result<ResponseKind, SendError> {
    let view = ClusterView::new(node);
    let endpoint = view.node(peer).ok_or(SendError::NotLive(peer))?;
    let addr: SocketAddr = crate::net::peer::resolve(&endpoint.host, endpoint.port as u16)
        .ok_or_else(|| SendError::Unresolvable {
            broker: peer,
            host: endpoint.host.to_string(),
            port: endpoint.port,
        })?;
    node.inter_broker
        .send_to(peer, addr, key, version, body)
        .await
}
