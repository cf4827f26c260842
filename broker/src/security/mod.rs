//! Listener security: TLS ([`tls`], rustls over either I/O engine) and SASL ([`sasl`]), and the
//! per-listener settings a connection is served with ([`ListenerSecurity`]), read at start from
//! Kafka's keys with their `listener.name.<listener>.` overrides.
//!
//! A connection's principal is what the ACLs see: `User:ANONYMOUS` on a PLAINTEXT listener,
//! the mapped subject of the client certificate on SSL (ANONYMOUS without one), the SASL user on
//! SASL_PLAINTEXT and SASL_SSL (Kafka's `DefaultKafkaPrincipalBuilder`).

pub mod outbound;
pub mod sasl;
pub mod tls;

use std::sync::Arc;

use crate::config::listeners::SecurityProtocol;
use crate::config::{BrokerConfig, Listener};

/// How a listener's connections are secured.
pub struct ListenerSecurity {
    /// The listener's name as configured (`CLIENT`, `PLAINTEXT`, ...).
    pub name: String,
    pub protocol: SecurityProtocol,
    /// The TLS settings in force; replaced when a keystore or truststore changes (KIP-226:
    /// `listener.name.<l>.ssl.keystore.location` and friends are dynamic per broker).
    pub tls: Option<TlsState>,
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
        let get = |key: &str| tls_value(config, &listener.name, protocol, key);
        let tls = match protocol {
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => {
                let settings = tls::settings(&listener.name, &get)?;
                for w in &settings.warnings {
                    tracing::warn!(listener = %listener.name, "{w}");
                }
                Some(TlsState {
                    current: parking_lot::RwLock::new((Arc::new(settings), tls_fingerprint(&get))),
                })
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

    /// Whether `config` gives this listener TLS settings that load (AlterConfigs checks a
    /// change before it is made, as Kafka's `SslFactory.validateReconfiguration` does).
    pub fn check_tls(&self, config: &BrokerConfig) -> Result<(), String> {
        if self.tls.is_none() {
            return Ok(());
        }
        let get = |key: &str| tls_value(config, &self.name, self.protocol, key);
        tls::settings(&self.name, &get).map(|_| ())
    }

    /// Re-reads this listener's TLS settings from `config` and puts them in force if a key or
    /// a file they name changed; new connections get them, open ones keep theirs. `Ok(true)`
    /// when they were replaced; on an error the settings in force stay.
    pub fn reload_tls(&self, config: &BrokerConfig) -> Result<bool, String> {
        let Some(state) = &self.tls else {
            return Ok(false);
        };
        let get = |key: &str| tls_value(config, &self.name, self.protocol, key);
        let fingerprint = tls_fingerprint(&get);
        if state.current.read().1 == fingerprint {
            return Ok(false);
        }
        let settings = tls::settings(&self.name, &get)?;
        *state.current.write() = (Arc::new(settings), fingerprint);
        Ok(true)
    }
}

/// A TLS listener's settings, replaceable while connections use the previous ones.
pub struct TlsState {
    /// The settings and the fingerprint of the keys and files they were made from.
    current: parking_lot::RwLock<(Arc<tls::TlsSettings>, u64)>,
}

impl TlsState {
    /// The settings a new connection gets.
    pub fn get(&self) -> Arc<tls::TlsSettings> {
        self.current.read().0.clone()
    }
}

/// The keys that make a listener's TLS settings.
const TLS_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.key",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.certificate.chain",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
];

/// A hash of the TLS keys' values and of the files they name: a keystore rewritten in place
/// and set again (as Kafka's operators rotate certificates) changes it.
fn tls_fingerprint(get: &dyn Fn(&str) -> Option<String>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for key in TLS_KEYS {
        let value = get(key);
        value.hash(&mut h);
        if key.ends_with(".location") {
            if let Some(path) = value {
                std::fs::read(path.trim()).ok().hash(&mut h);
            }
        }
    }
    h.finish()
}

/// Puts the TLS settings of `config` in force on every listener whose keys or files changed,
/// logging what happened (called when the dynamic configuration changes, and when an
/// AlterConfigs sets a listener's TLS keys again).
pub fn reload_all(listeners: &[Arc<ListenerSecurity>], config: &BrokerConfig) {
    for l in listeners {
        match l.reload_tls(config) {
            Ok(true) => {
                tracing::info!(listener = %l.name, "TLS keystore and truststore reloaded: new connections use them")
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(listener = %l.name, "TLS settings not reloaded, the previous ones stay in force: {e}")
            }
        }
    }
}

/// [`listener_value`], except that a SASL_SSL listener takes `ssl.client.auth` only with its
/// listener prefix: Kafka ignores the broker-wide key there (KIP-684), so that a broker-wide
/// `ssl.client.auth=required` for SSL listeners does not ask SASL clients for certificates.
fn tls_value(
    config: &BrokerConfig,
    listener: &str,
    protocol: SecurityProtocol,
    key: &str,
) -> Option<String> {
    if key == "ssl.client.auth" && protocol == SecurityProtocol::SaslSsl {
        let prefixed = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
        return config.get(&prefixed).filter(|_| config.is_set(&prefixed));
    }
    listener_value(config, listener, key)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BrokerConfig {
        let flags = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        BrokerConfig::load(None, vec![], flags).unwrap()
    }

    #[test]
    fn listener_keys_override_and_sasl_ssl_ignores_the_broker_wide_client_auth() {
        let c = config(&[
            (
                "listeners",
                "SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094,CLIENT://127.0.0.1:9095",
            ),
            (
                "listener.security.protocol.map",
                "SSL:SSL,SASL_SSL:SASL_SSL,CLIENT:SASL_SSL",
            ),
            ("ssl.client.auth", "required"),
            ("listener.name.client.ssl.client.auth", "requested"),
            ("ssl.keystore.type", "PEM"),
            ("listener.name.ssl.ssl.keystore.type", "JKS"),
        ]);
        let ssl = SecurityProtocol::Ssl;
        let sasl_ssl = SecurityProtocol::SaslSsl;
        // KIP-684: the broker-wide key is for SSL listeners only.
        assert_eq!(
            tls_value(&c, "SSL", ssl, "ssl.client.auth").as_deref(),
            Some("required")
        );
        assert_eq!(tls_value(&c, "SASL_SSL", sasl_ssl, "ssl.client.auth"), None);
        assert_eq!(
            tls_value(&c, "CLIENT", sasl_ssl, "ssl.client.auth").as_deref(),
            Some("requested")
        );
        // The listener prefix wins, else the broker-wide key, else nothing (Kafka's defaults
        // are the settings' business).
        assert_eq!(
            listener_value(&c, "SSL", "ssl.keystore.type").as_deref(),
            Some("JKS")
        );
        assert_eq!(
            listener_value(&c, "CLIENT", "ssl.keystore.type").as_deref(),
            Some("PEM")
        );
        assert_eq!(listener_value(&c, "SSL", "ssl.truststore.type"), None);
    }
}
