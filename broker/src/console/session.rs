//! Signing in: the Kafka client each API request is answered by, connected to this node's
//! own client listener as the requester. With Basic credentials it authenticates over a
//! SASL_PLAINTEXT listener, trying the mechanisms that listener enables (SCRAM-SHA-512,
//! SCRAM-SHA-256, then PLAIN); without them it is anonymous on a PLAINTEXT listener, unless
//! an authorizer is on. The broker then applies its ACLs to every request, as it would to any
//! client's: the console can show and do no more than its user could with a Kafka client.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;

use super::{ApiError, Req};
use crate::cli::client::{Client, ClientError};
use crate::cli::security::Security;
use crate::config::listeners::SecurityProtocol;
use crate::security::sasl::client::Credentials;
use crate::security::sasl::Mechanism;

/// Connect and per-call timeout of the console's Kafka client.
const KAFKA_TIMEOUT: Duration = Duration::from_secs(10);
/// The mechanisms the console signs in with, best first (OAUTHBEARER needs a token, not a
/// password).
const MECHANISMS: [Mechanism; 3] = [
    Mechanism::ScramSha512,
    Mechanism::ScramSha256,
    Mechanism::Plain,
];

/// SASL_AUTHENTICATION_FAILED and UNSUPPORTED_SASL_MECHANISM: try the next mechanism.
const SIGN_IN_REFUSED: [i16; 2] = [58, 33];

/// A client listener of this node, as bound.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub listener: String,
    pub protocol: SecurityProtocol,
    pub addr: SocketAddr,
    pub mechanisms: Vec<Mechanism>,
}

impl Endpoint {
    /// Where to connect: a wildcard bind is reached over loopback.
    fn connect_addr(&self) -> String {
        let ip = match self.addr.ip() {
            IpAddr::V4(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(a) if a.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        SocketAddr::new(ip, self.addr.port()).to_string()
    }
}

/// The Kafka client for `req`'s requester; 401 when it cannot sign in or must.
pub fn sign_in(req: &Req) -> Result<Client, ApiError> {
    let console = &req.console;
    let find = |p: SecurityProtocol| console.endpoints.iter().find(|e| e.protocol == p);
    let sasl = console.endpoints.iter().find(|e| {
        e.protocol == SecurityProtocol::SaslPlaintext
            && MECHANISMS.iter().any(|m| e.mechanisms.contains(m))
    });
    let plain = find(SecurityProtocol::Plaintext);
    if sasl.is_none() && plain.is_none() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the console signs in through a PLAINTEXT or SASL_PLAINTEXT (SCRAM or PLAIN) \
             listener of this node, and it has none",
        ));
    }
    let connect = |e: &Endpoint, security: Security| {
        Client::connect_with(&e.connect_addr(), KAFKA_TIMEOUT, Arc::new(security))
    };
    match (&req.credentials, sasl) {
        (Some((user, password)), Some(e)) => {
            let mut last = None;
            for m in MECHANISMS.iter().filter(|m| e.mechanisms.contains(m)) {
                let creds = Credentials::new(*m, user, password);
                match connect(e, Security::sasl_plaintext(creds)) {
                    Ok(c) => return Ok(c),
                    Err(ClientError::Auth { reason, .. }) => last = Some(reason),
                    Err(ClientError::Kafka(k)) if SIGN_IN_REFUSED.contains(&k.code) => {
                        last = Some(k.message)
                    }
                    Err(other) => return Err(other.into()),
                }
            }
            Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                format!(
                    "sign-in as '{user}' failed: {}",
                    last.unwrap_or_else(|| "no mechanism".into())
                ),
            ))
        }
        _ if console.authorizer && req.credentials.is_none() => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "this cluster has an authorizer: sign in (HTTP Basic, a SCRAM or PLAIN user)",
        )),
        // Credentials on a cluster without SASL listeners sign in to nothing: anonymous.
        (_, _) => match plain {
            Some(e) => connect(e, Security::plaintext()).map_err(ApiError::from),
            None => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this node's listeners take SASL only: sign in (HTTP Basic, a SCRAM or PLAIN \
                 user)",
            )),
        },
    }
}
