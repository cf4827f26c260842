//! Requests from this broker to other brokers (Kafka's inter-broker channel): the transaction
//! coordinator's WriteTxnMarkers to partition leaders, and partition leaders' KIP-890
//! verification (AddPartitionsToTxn `verify_only`) at transaction coordinators. Each broker is
//! reached at the endpoint its registration in the metadata image gives for the listener
//! clients use, on one pipelined connection per broker ([`Peer`]), owned by a thread of its own
//! so that a request from any shard can use it.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use parking_lot::Mutex;

use crate::handlers::cluster_view::ClusterView;
use crate::net::peer::Peer;
use crate::server::Broker;

/// How long another broker may take to answer before the request fails (and its connection
/// is started afresh).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

pub struct InterBroker {
    runtime: tokio::runtime::Handle,
    /// The connection to each broker, with the address it was opened to.
    peers: Mutex<HashMap<i32, Peer>>,
    client_id: String,
    /// Dropped with this: ends the thread that runs the connections.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl InterBroker {
    /// Starts the thread that runs the connections (they connect on first use).
    pub fn start(node_id: i32) -> std::io::Result<InterBroker> {
        let (runtime, stop) = crate::util::runtime_thread("inter-broker")?;
        Ok(InterBroker {
            runtime,
            peers: Mutex::new(HashMap::new()),
            client_id: format!("samsa-broker-{node_id}"),
            _stop: stop,
        })
    }

    /// Sends a request to broker `node` and waits for its answer.
    pub async fn send(
        &self,
        broker: &Broker,
        node: i32,
        key: ApiKey,
        version: i16,
        body: RequestKind,
    ) -> Result<ResponseKind, String> {
        let view = ClusterView::new(broker);
        let endpoint = view
            .node(node)
            .ok_or_else(|| format!("broker {node} is not live"))?;
        let addr: SocketAddr = (endpoint.host.as_str(), endpoint.port as u16)
            .to_socket_addrs()
            .map_err(|e| format!("broker {node} at {}:{}: {e}", endpoint.host, endpoint.port))?
            .next()
            .ok_or_else(|| format!("broker {node} at {}: no address", endpoint.host))?;
        let peer = {
            let mut peers = self.peers.lock();
            match peers.get(&node) {
                Some(p) if p.addr == addr => p.clone(),
                _ => {
                    let _in_runtime = self.runtime.enter();
                    let p = Peer::spawn(addr, self.client_id.clone(), REQUEST_TIMEOUT);
                    peers.insert(node, p.clone());
                    p
                }
            }
        };
        match peer.send(key, version, body).await {
            Ok(answer) => answer,
            Err(_) => Err(format!("the connection to broker {node} is gone")),
        }
    }
}
