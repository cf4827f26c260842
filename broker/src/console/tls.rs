//! TLS on the console listener: `console.ssl.keystore.location` (a PEM file with the key and
//! the certificate chain, or a PKCS12 store with `console.ssl.keystore.type=PKCS12`), read by
//! the same code as a Kafka listener's `ssl.keystore.*`. Handshakes run on tasks of their own,
//! each bounded by [`HANDSHAKE_TIMEOUT`], so a client that stalls in one holds up no other;
//! finished connections are handed to the HTTP server through a bounded queue.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::config::BrokerConfig;

/// The longest a TLS handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshaken connections waiting for the HTTP server.
const QUEUE: usize = 64;

/// The console's TLS settings; `None` when `console.ssl.keystore.location` is unset.
pub fn server_config(config: &BrokerConfig) -> anyhow::Result<Option<Arc<ServerConfig>>> {
    let get = |k: &str| {
        config
            .get(&format!("console.{k}"))
            .filter(|v| !v.trim().is_empty())
    };
    if get("ssl.keystore.location").is_none() {
        return Ok(None);
    }
    let settings = crate::security::tls::settings("console", &get)
        .map_err(|e| anyhow::anyhow!("console TLS (the console.ssl.* keys): {e}"))?;
    Ok(Some(settings.server_config().clone()))
}

/// Connections that finished their TLS handshake, as axum's server takes them.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `listener` and handshakes with `config` until the listener is dropped.
    pub fn new(listener: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(QUEUE);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                // Ends with the server (its receiver dropped), not at the next connection.
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    () = tx.closed() => return,
                };
                let (tcp, peer) = match accepted {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::debug!("console accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, "console TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!(%peer, "console TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener { ready, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accepting task ended (its listener failed for good): serve nothing more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}
