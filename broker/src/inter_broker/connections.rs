//! The connections to the other brokers ([`InterBroker`]): one pipelined connection per
//! broker ([`Peer`]), secured as the inter-broker listener is, run by a thread of its own so
//! that a request from any shard can use it. It knows addresses, not the cluster: finding a
//! broker's address is [`super::send`]'s.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use parking_lot::Mutex;

use super::error::SendError;
use crate::net::peer::Peer;
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

    /// Sends a request to broker `peer`, reachable at `addr`, and waits for its answer (on
    /// the connection already open to it there, else a new one).
    pub async fn send_to(
        &self,
        peer: i32,
        addr: SocketAddr,
        key: ApiKey,
        version: i16,
        body: RequestKind,
    ) -> Result<ResponseKind, SendError> {
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
            Ok(answer) => Ok(answer?),
            Err(_) => Err(SendError::ConnectionGone(peer)),
        }
    }
}
