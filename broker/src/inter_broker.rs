//! Requests from this broker to other brokers (Kafka's inter-broker channel): the transaction
//! coordinator's WriteTxnMarkers to partition leaders, and partition leaders' KIP-890
//! verification (AddPartitionsToTxn `verify_only`) at transaction coordinators. Each broker is
//! reached at the endpoint its registration in the metadata image gives for the listener
//! brokers use (`inter.broker.listener.name`), secured as that listener is, on one pipelined
//! connection per broker ([`Peer`]), owned by a thread of its own
//! so that a request from any shard can use it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use parking_lot::Mutex;

use crate::cluster_view::ClusterView;
use crate::net::peer::Peer;
use crate::node::Node;
use crate::security::outbound::PeerSecurity;

/// How long another broker may take to answer before the request fails (and its connection
/// is started afresh).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

pub struct InterBroker {
    runtime: tokio::runtime::Handle,
    /// The connection to each broker, with the address it was opened to.
    peers: Mutex<HashMap<i32, Peer>>,
    client_id: String,
    /// How connections to the inter-broker listener are secured (TLS, SASL).
    pub security: Arc<PeerSecurity>,
    /// Dropped with this: ends the thread that runs the connections.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl InterBroker {
    /// Starts the thread that runs the connections (they connect on first use).
    pub fn start(node_id: i32, security: Arc<PeerSecurity>) -> std::io::Result<InterBroker> {
        let (runtime, stop) = crate::util::runtime_thread("inter-broker")?;
        Ok(InterBroker {
            runtime,
            peers: Mutex::new(HashMap::new()),
            client_id: format!("samsa-broker-{node_id}"),
            security,
            _stop: stop,
        })
    }

    /// Sends a request to broker `peer` and waits for its answer.
    pub async fn send(
        &self,
        node: &Node,
        peer: i32,
        key: ApiKey,
        version: i16,
        body: RequestKind,
    ) -> Result<ResponseKind, String> {
        let view = ClusterView::new(node);
        let endpoint = view
            .node(peer)
            .ok_or_else(|| format!("broker {peer} is not live"))?;
        let addr: SocketAddr = crate::net::peer::resolve(&endpoint.host, endpoint.port as u16)
            .ok_or_else(|| {
                format!(
                    "broker {peer} at {}:{}: cannot resolve the address",
                    endpoint.host, endpoint.port
                )
            })?;
        let connection = {
            let mut peers = self.peers.lock();
            match peers.get(&peer) {
                Some(p) if p.addr == addr => p.clone(),
                _ => {
                    let _in_runtime = self.runtime.enter();
                    let p = Peer::spawn(
                        addr,
                        self.client_id.clone(),
                        REQUEST_TIMEOUT,
                        self.security.clone(),
                    );
                    peers.insert(peer, p.clone());
                    p
                }
            }
        };
        match connection.send(key, version, body).await {
            Ok(answer) => answer,
            Err(_) => Err(format!("the connection to broker {peer} is gone")),
        }
    }
}
