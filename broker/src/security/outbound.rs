//! How this node secures its own connections to other nodes, as Kafka's inter-broker and
//! controller clients do: the security protocol of the listener it connects to (the
//! inter-broker listener for replica fetchers and transaction markers, the controller listener
//! for the quorum and for brokers' requests to controllers), TLS from that listener's `ssl.*`
//! keys ([`super::tls::client_config`]), and SASL with the mechanism of
//! `sasl.mechanism.inter.broker.protocol` / `sasl.mechanism.controller.protocol` and the
//! credentials of that listener's JAAS config for it ([`super::sasl::client`]).
//!
//! Errors are start-up errors that name the listener and the key: a node that cannot reach its
//! peers must not start believing it can.

use std::sync::Arc;

use parking_lot::RwLock;
use rustls::ClientConfig;

use super::sasl::client::Credentials;
use super::sasl::Mechanism;
use crate::config::listeners::SecurityProtocol;
use crate::config::BrokerConfig;

/// The security of connections to one listener of other nodes.
pub struct PeerSecurity {
    pub listener: String,
    pub protocol: SecurityProtocol,
    /// The TLS client settings in force and the fingerprint of what they were made from;
    /// replaced when the listener's keystore or truststore changes (KIP-226), for connections
    /// opened afterwards.
    tls: Option<RwLock<(Arc<ClientConfig>, u64)>>,
    pub sasl: Option<Credentials>,
    /// Why connections cannot be secured as configured, on a node that has no peers to reach
    /// (a quorum of one): it starts, and fails any connection with this, should one be needed.
    pub refused: Option<String>,
}

impl std::fmt::Debug for PeerSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.describe())
    }
}

/// Which of this node's clients: the key that names its SASL mechanism differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    InterBroker,
    Controller,
}

impl Channel {
    fn mechanism_key(self) -> &'static str {
        match self {
            Channel::InterBroker => "sasl.mechanism.inter.broker.protocol",
            Channel::Controller => "sasl.mechanism.controller.protocol",
        }
    }
}

impl PeerSecurity {
    /// The security of `channel` on `listener` for a node without peers: what
    /// [`PeerSecurity::from_config`] gives, or, when that fails, connections that fail with
    /// the reason (logged here at debug level: a node alone opens no such connection unless a
    /// peer is added later, and then the connection's error names the reason).
    pub fn for_node_alone(
        config: &BrokerConfig,
        listener: &str,
        channel: Channel,
    ) -> Arc<PeerSecurity> {
        PeerSecurity::from_config(config, listener, channel).unwrap_or_else(|e| {
            tracing::debug!(
                listener,
                "this node has no peers; it could not connect to any: {e}"
            );
            Arc::new(PeerSecurity {
                listener: listener.to_string(),
                protocol: config
                    .security_protocol(listener)
                    .unwrap_or(SecurityProtocol::Plaintext),
                tls: None,
                sasl: None,
                refused: Some(e),
            })
        })
    }

    /// The security of this node's connections of `channel` to `listener`.
    pub fn from_config(
        config: &BrokerConfig,
        listener: &str,
        channel: Channel,
    ) -> Result<Arc<PeerSecurity>, String> {
        let protocol = config.security_protocol(listener)?;
        let get = |key: &str| super::listener_value(config, listener, key);
        let tls = match protocol {
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => {
                let (c, warnings) = super::tls::client_config(listener, &get)?;
                for w in warnings {
                    tracing::warn!(listener, "connections to other nodes: {w}");
                }
                Some(RwLock::new((c, fingerprint(&get))))
            }
            _ => None,
        };
        let sasl = match protocol {
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {
                Some(credentials(config, listener, channel, &get)?)
            }
            _ => None,
        };
        Ok(Arc::new(PeerSecurity {
            listener: listener.to_string(),
            protocol,
            tls,
            sasl,
            refused: None,
        }))
    }

    /// The TLS settings a new connection gets (None: no TLS).
    pub fn tls(&self) -> Option<Arc<ClientConfig>> {
        self.tls.as_ref().map(|t| t.read().0.clone())
    }

    /// Re-reads the listener's TLS keys from `config` and puts them in force for new
    /// connections if a key or a file they name changed (a rotated keystore is presented to
    /// peers from the next connection on). `Ok(true)` when replaced; on an error the settings in
    /// force stay.
    pub fn reload_tls(&self, config: &BrokerConfig) -> Result<bool, String> {
        let Some(state) = &self.tls else {
            return Ok(false);
        };
        let get = |key: &str| super::listener_value(config, &self.listener, key);
        let print = fingerprint(&get);
        if state.read().1 == print {
            return Ok(false);
        }
        let (c, _) = super::tls::client_config(&self.listener, &get)?;
        *state.write() = (c, print);
        Ok(true)
    }

    /// For the log: `SASL_SSL (SCRAM-SHA-512 as admin)`.
    pub fn describe(&self) -> String {
        match &self.sasl {
            Some(c) => format!(
                "{} ({} as {})",
                self.protocol.name(),
                c.mechanism.name(),
                c.username
            ),
            None => self.protocol.name().to_string(),
        }
    }
}

/// [`PeerSecurity::reload_tls`], logged.
pub fn reload(peer: &PeerSecurity, config: &BrokerConfig) {
    match peer.reload_tls(config) {
        Ok(true) => {
            tracing::info!(listener = %peer.listener, "TLS settings for connections to other nodes reloaded")
        }
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(listener = %peer.listener, "TLS settings for connections to other nodes not reloaded, the previous ones stay: {e}")
        }
    }
}

/// What the client side's TLS settings are made from: the listener's TLS keys and files, and
/// the host name check.
fn fingerprint(get: &dyn Fn(&str) -> Option<String>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    super::tls_fingerprint(get).hash(&mut h);
    get("ssl.endpoint.identification.algorithm").hash(&mut h);
    h.finish()
}

/// The mechanism and credentials this node authenticates with on `listener`.
fn credentials(
    config: &BrokerConfig,
    listener: &str,
    channel: Channel,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Credentials, String> {
    let key = channel.mechanism_key();
    let name = config
        .get(key)
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "GSSAPI".into());
    let name = name.trim();
    let Some(mechanism) = Mechanism::parse(name) else {
        return Err(format!(
            "{key}={name}{}: Samsa's nodes authenticate to each other with PLAIN, SCRAM-SHA-256, \
             SCRAM-SHA-512 or OAUTHBEARER (listener {listener} is {})",
            if config.is_set(key) {
                ""
            } else {
                " (Kafka's default; Kerberos is not implemented)"
            },
            config
                .security_protocol(listener)
                .map(|p| p.name())
                .unwrap_or("?")
        ));
    };
    if channel == Channel::Controller && mechanism.scram().is_some() {
        return Err(format!(
            "{key}={name}: SCRAM cannot authenticate nodes to controllers (its credentials live \
             in the metadata the controllers serve), as in Kafka: use PLAIN or OAUTHBEARER on \
             the controller listener {listener}"
        ));
    }
    // Kafka requires it: a mechanism this node offers nowhere would fail at every peer too.
    let serves = config
        .listeners()
        .iter()
        .any(|l| l.name.eq_ignore_ascii_case(listener));
    if serves {
        let enabled = get("sasl.enabled.mechanisms").unwrap_or_else(|| "GSSAPI".into());
        if !enabled.split(',').any(|m| m.trim() == name) {
            return Err(format!(
                "{key}={name} must be one of listener {listener}'s sasl.enabled.mechanisms \
                 ({enabled}) when nodes reach each other on it"
            ));
        }
    }
    let jaas_key = format!("{}.sasl.jaas.config", name.to_ascii_lowercase());
    let text = get(&jaas_key)
        .or_else(|| get("sasl.jaas.config"))
        .ok_or_else(|| {
            format!(
            "listener {listener}: this node authenticates to other nodes with {name} and needs \
             its credentials: set listener.name.{}.{jaas_key} with the username and password \
             options (or unsecuredLoginStringClaim_sub for OAUTHBEARER)",
            listener.to_ascii_lowercase()
        )
        })?;
    Credentials::from_jaas(mechanism, &text)
        .map_err(|e| format!("listener {listener}: {jaas_key}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BrokerConfig {
        let flags = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        BrokerConfig::load(None, vec![], flags).unwrap()
    }

    const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                        username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\";";

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "listeners",
                "CLIENT://127.0.0.1:1,INTERNAL://127.0.0.1:2,CONTROLLER://127.0.0.1:3",
            ),
            (
                "listener.security.protocol.map",
                "CLIENT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
            ),
            ("controller.listener.names", "CONTROLLER"),
            ("inter.broker.listener.name", "INTERNAL"),
        ]
    }

    #[test]
    fn sasl_between_nodes_takes_kafkas_keys_and_refuses_what_cannot_work() {
        let mut ok = base();
        ok.extend([
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            ("listener.name.internal.plain.sasl.jaas.config", JAAS),
        ]);
        let s = PeerSecurity::from_config(&config(&ok), "INTERNAL", Channel::InterBroker).unwrap();
        assert_eq!(s.describe(), "SASL_PLAINTEXT (PLAIN as admin)");
        assert_eq!(format!("{s:?}"), s.describe());
        // SCRAM between brokers is Kafka's usual choice.
        let mut scram = base();
        scram.extend([
            ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
            ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
            (
                "listener.name.internal.scram-sha-512.sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required \
                 username=\"broker\" password=\"b\";",
            ),
        ]);
        let s =
            PeerSecurity::from_config(&config(&scram), "INTERNAL", Channel::InterBroker).unwrap();
        assert_eq!(s.describe(), "SASL_PLAINTEXT (SCRAM-SHA-512 as broker)");
        let plain =
            PeerSecurity::from_config(&config(&ok), "CLIENT", Channel::InterBroker).unwrap();
        assert_eq!(plain.describe(), "PLAINTEXT");

        type Case = (
            Vec<(&'static str, &'static str)>,
            &'static str,
            Channel,
            &'static str,
        );
        let cases: Vec<Case> = vec![
            // Kafka's default mechanism is GSSAPI.
            (
                vec![],
                "INTERNAL",
                Channel::InterBroker,
                "Kerberos is not implemented",
            ),
            (
                vec![("sasl.mechanism.inter.broker.protocol", "PLAIN")],
                "INTERNAL",
                Channel::InterBroker,
                "sasl.enabled.mechanisms",
            ),
            (
                vec![
                    ("sasl.enabled.mechanisms", "PLAIN"),
                    ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
                ],
                "INTERNAL",
                Channel::InterBroker,
                "listener.name.internal.plain.sasl.jaas.config",
            ),
            (
                vec![
                    ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
                    ("sasl.mechanism.controller.protocol", "SCRAM-SHA-256"),
                ],
                "CONTROLLER",
                Channel::Controller,
                "SCRAM cannot authenticate nodes to controllers",
            ),
        ];
        for (extra, listener, channel, says) in cases {
            let mut pairs = base();
            pairs.extend(extra);
            let e = PeerSecurity::from_config(&config(&pairs), listener, channel).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    fn ca_pem(name: &str) -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.distinguished_name.push(rcgen::DnType::CommonName, name);
        p.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn a_rewritten_truststore_is_reloaded_and_a_broken_one_leaves_the_old_in_force() {
        let dir = tempfile::tempdir().unwrap();
        let trust = dir.path().join("ca.pem");
        std::fs::write(&trust, ca_pem("first")).unwrap();
        let trust = trust.to_str().unwrap().to_string();
        let mut pairs = base();
        pairs[1].1 = "CLIENT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:PLAINTEXT";
        pairs.extend([
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", &trust),
        ]);
        let c = config(&pairs);
        let s = PeerSecurity::from_config(&c, "INTERNAL", Channel::InterBroker).unwrap();
        let before = s.tls().unwrap();
        assert_eq!(s.reload_tls(&c), Ok(false));
        std::fs::write(&trust, ca_pem("second")).unwrap();
        reload(&s, &c);
        assert!(!Arc::ptr_eq(&before, &s.tls().unwrap()));
        assert_eq!(s.reload_tls(&c), Ok(false));
        let current = s.tls().unwrap();
        std::fs::write(&trust, "not a certificate").unwrap();
        let e = s.reload_tls(&c).unwrap_err();
        assert!(e.contains("ssl.truststore.location"), "{e}");
        assert!(Arc::ptr_eq(&current, &s.tls().unwrap()));
    }

    #[test]
    fn tls_between_nodes_needs_a_truststore() {
        let mut pairs = base();
        pairs[1].1 = "CLIENT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:PLAINTEXT";
        let e = PeerSecurity::from_config(&config(&pairs), "INTERNAL", Channel::InterBroker)
            .unwrap_err();
        assert!(e.contains("ssl.truststore.location"), "{e}");
    }
}
