//! TLS for Kafka listeners (`security.protocol=SSL`), with rustls.
//!
//! What it does:
//! - [`settings`] turns a listener's `ssl.*` keys (Kafka's names and defaults) into a rustls
//!   `ServerConfig`, the client-authentication mode and the principal mapping rules, refusing
//!   what Samsa cannot honour with a message naming the listener and the key (JKS stores,
//!   encrypted PEM keys, TLS versions rustls does not implement). Keystores and truststores are
//!   PEM or PKCS12 (read with p12-keystore). Settings that can be
//!   partly honoured (`TLSv1.1,TLSv1.2`, unknown cipher suite names) come back as warnings.
//! - [`accept`] runs the server handshake over the two halves of a socket and names the client
//!   the way Kafka's `DefaultKafkaPrincipalBuilder` does: `User:ANONYMOUS` without a client
//!   certificate, else `User:` and the certificate's subject in Java's RFC 2253 form
//!   (`X500Principal.getName()`), rewritten by `ssl.principal.mapping.rules`.
//! - [`TlsRead`] and [`TlsWrite`] are the two halves afterwards: they implement the same
//!   [`SocketRead`](crate::net::transport::SocketRead)/
//!   [`SocketWrite`](crate::net::transport::SocketWrite) traits as plaintext sockets, so the
//!   connection code does not know whether it speaks TLS.
//!
//! Why this shape: rustls is used sans-IO (`read_tls`/`process_new_packets`/`write_tls` on a
//! `ServerConnection`), so the same code runs over both I/O engines, epoll and io_uring, whose
//! halves take and return owned buffers (completion-based I/O needs that). Both halves share
//! one `ServerConnection` in an `Rc<RefCell<_>>`: connections live on one single-threaded
//! shard, and a borrow is only ever held by synchronous code, never across an `.await`, so the
//! read loop and the write loop of a connection (run together by `tokio::join!`) never collide.
//!
//! TLS bytes that reading produces (a TLS 1.3 KeyUpdate answer, an alert) stay queued inside
//! rustls, which is the shared pending queue: the writer drains everything rustls has queued,
//! in order, with its next write. Keeping one queue keeps the records in sequence-number
//! order; the cost is that if the writer is idle they wait for the next response (clients do
//! not wait for a KeyUpdate answer, and an alert after a read error is lost with the
//! connection, as the connection closes anyway).
//!
//! `sendfile` cannot encrypt, so file ranges are read into memory piecewise (256 KiB) and
//! encrypted; plaintext goes through rustls in pieces of 64 KiB, so a connection holds at
//! most about that much ciphertext. Kernel TLS (the kernel encrypting what `sendfile` sends)
//! would avoid the copy; [`ktls_available`] probes whether this kernel offers it, for the
//! start-up log, but the read-and-encrypt path is the one used.
//!
//! Files: this one holds the listener settings ([`settings`], [`TlsSettings`]); `suites.rs`
//! the protocol versions and cipher suites; `stores.rs` the keystores and truststores (PEM,
//! PKCS12, and the refusal of JKS); `principal.rs` the client's principal and
//! `ssl.principal.mapping.rules`; `stream.rs` the handshake and the two halves; `client.rs`
//! this node's TLS as a client of other nodes.

mod client;
mod principal;
mod stores;
mod stream;
mod suites;

use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;

pub use self::client::{client_config, AnyName};
pub use self::principal::{principal_of, subject_dn, PrincipalMapper};
pub(crate) use self::stores::normalize_pem;
use self::stores::{keystore, truststore};
pub use self::stream::{accept, ktls_available, TlsRead, TlsWrite};
use self::suites::protocols_and_suites;

/// Kafka's `ssl.client.auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// A TLS listener's settings, checked and ready for [`accept`].
#[derive(Debug)]
pub struct TlsSettings {
    listener: String,
    config: Arc<ServerConfig>,
    client_auth: ClientAuth,
    mapper: PrincipalMapper,
    /// Settings honoured only in part (unsupported protocol versions or cipher suites that were
    /// left out): the caller logs them at start-up.
    pub warnings: Vec<String>,
}

impl TlsSettings {
    pub fn listener(&self) -> &str {
        &self.listener
    }

    pub fn client_auth(&self) -> ClientAuth {
        self.client_auth
    }

    pub fn server_config(&self) -> &Arc<ServerConfig> {
        &self.config
    }

    pub fn principal_mapper(&self) -> &PrincipalMapper {
        &self.mapper
    }
}

/// Reads the `ssl.*` settings of `listener`. `get(key)` returns a key's effective value for
/// this listener (the `listener.name.<l>.` prefix already resolved), None when unset; a value
/// that is empty or blank counts as unset. The error names the listener and the key.
pub fn settings(
    listener: &str,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<TlsSettings, String> {
    let k = Keys { listener, get };
    let mut warnings = Vec::new();
    let (provider, versions) = protocols_and_suites(&k, &mut warnings)?;
    let (chain, key, key_from) = keystore(&k, &mut warnings)?;
    let auth = k
        .get("ssl.client.auth")
        .map(|v| v.trim().to_ascii_lowercase());
    let client_auth = match auth.as_deref() {
        None | Some("none") => ClientAuth::None,
        Some("requested") => ClientAuth::Requested,
        Some("required") => ClientAuth::Required,
        Some(v) => {
            let msg = format!("`{v}` is not one of none, requested, required");
            return Err(k.fail("ssl.client.auth", msg));
        }
    };
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| k.fail("ssl.enabled.protocols", e))?;
    let builder = match (client_auth, truststore(&k)?) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (_, None) => {
            return Err(k.fail(
                "ssl.client.auth",
                format!(
                    "{} needs a truststore to verify client certificates against: set \
                     ssl.truststore.type=PEM and ssl.truststore.location (or \
                     ssl.truststore.certificates)",
                    auth.unwrap_or_default()
                ),
            ))
        }
        (auth, Some(roots)) => {
            let mut v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            if auth == ClientAuth::Requested {
                v = v.allow_unauthenticated();
            }
            let v = v
                .build()
                .map_err(|e| k.fail("ssl.truststore.location", e))?;
            builder.with_client_cert_verifier(v)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => k.fail(
            key_from,
            "the private key does not match the certificate (the first certificate of the \
             chain must be the broker's own, for this key)",
        ),
        e => k.fail(key_from, format!("unusable key or certificate: {e}")),
    })?;
    config.ignore_client_order = false;
    config.alpn_protocols.clear();
    let rules = k.get("ssl.principal.mapping.rules");
    let mapper = PrincipalMapper::parse(rules.as_deref().unwrap_or("DEFAULT"))
        .map_err(|e| k.fail("ssl.principal.mapping.rules", e))?;
    Ok(TlsSettings {
        listener: listener.to_string(),
        config: Arc::new(config),
        client_auth,
        mapper,
        warnings,
    })
}

/// A listener's `ssl.*` keys: blank values count as unset; errors name the listener and key.
struct Keys<'a> {
    listener: &'a str,
    get: &'a dyn Fn(&str) -> Option<String>,
}

impl Keys<'_> {
    fn get(&self, key: &str) -> Option<String> {
        (self.get)(key).filter(|v| !v.trim().is_empty())
    }

    fn fail(&self, key: &str, msg: impl std::fmt::Display) -> String {
        format!("listener {}: {key}: {msg}", self.listener)
    }
}

#[cfg(test)]
#[path = "../tls_tests.rs"]
mod tests;
