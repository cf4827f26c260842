//! Listener security: TLS ([`tls`], rustls over either I/O engine) and SASL ([`sasl`]), and the
//! per-listener settings a connection is served with ([`ListenerSecurity`]), read at start from
//! Kafka's keys with their `listener.name.<listener>.` overrides.
//!
//! A connection's principal is what the ACLs see: `User:ANONYMOUS` on a PLAINTEXT listener,
//! the mapped subject of the client certificate on SSL (ANONYMOUS without one), the SASL user on
//! SASL_PLAINTEXT and SASL_SSL (Kafka's `DefaultKafkaPrincipalBuilder`).

pub mod sasl;
pub mod tls;

use crate::config::listeners::SecurityProtocol;
use crate::config::{BrokerConfig, Listener};

/// How a listener's connections are secured.
pub struct ListenerSecurity {
    /// The listener's name as configured (`CLIENT`, `PLAINTEXT`, ...).
    pub name: String,
    pub protocol: SecurityProtocol,
    pub tls: Option<tls::TlsSettings>,
    pub sasl: Option<sasl::SaslSettings>,
    /// `connections.max.reauth.ms` (KIP-368): how long a SASL session lasts before the client
    /// must re-authenticate on its connection; 0 for ever.
    pub reauth_ms: u64,
}

impl ListenerSecurity {
    /// A PLAINTEXT listener (tests, and listeners Samsa opens for itself).
    pub fn plaintext(name: &str) -> ListenerSecurity {
        ListenerSecurity {
            name: name.to_string(),
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
            reauth_ms: 0,
        }
    }

    /// The settings of `listener` from the configuration; errors are start-up errors that name
    /// the listener and the key.
    pub fn from_config(
        config: &BrokerConfig,
        listener: &Listener,
    ) -> Result<ListenerSecurity, String> {
        let protocol = config.security_protocol(&listener.name)?;
        let get = |key: &str| listener_value(config, &listener.name, key);
        let tls = match protocol {
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => {
                Some(tls::settings(&listener.name, &get)?)
            }
            _ => None,
        };
        let sasl = match protocol {
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {
                Some(sasl::SaslSettings::from_config(&listener.name, &get)?)
            }
            _ => None,
        };
        let reauth_ms = match get("connections.max.reauth.ms") {
            None => 0,
            Some(v) => v.trim().parse::<i64>().map_err(|_| {
                format!(
                    "listener {}: connections.max.reauth.ms: '{v}' is not a number",
                    listener.name
                )
            })?,
        }
        .max(0) as u64;
        Ok(ListenerSecurity {
            name: listener.name.clone(),
            protocol,
            tls,
            sasl,
            reauth_ms,
        })
    }

    pub fn uses_sasl(&self) -> bool {
        self.sasl.is_some()
    }
}

/// The value set for `key` on `listener`: `listener.name.<listener>.<key>` (the name in lower
/// case, as Kafka's `ListenerName.configPrefix`), else the key itself; `None` when neither is
/// set (the settings apply Kafka's defaults themselves, and say when a default is the reason
/// for a refusal).
pub fn listener_value(config: &BrokerConfig, listener: &str, key: &str) -> Option<String> {
    let prefixed = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
    if config.is_set(&prefixed) {
        return config.get(&prefixed);
    }
    if config.is_set(key) {
        return config.get(key);
    }
    None
}
