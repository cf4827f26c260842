//! The security protocol of each listener, as Kafka resolves it: `listener.security.protocol.map`
//! (`NAME:PROTOCOL,...`) when set, else Kafka's default map, in which each protocol's name is a
//! listener name of that protocol and a controller listener not named there is PLAINTEXT
//! (Kafka's `effectiveListenerSecurityProtocolMap`).
//!
//! Every listener may be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL: client listeners are served
//! by `net/` with `security/`, the controller listener by `controller/listener.rs`, and this
//! node's own connections to other nodes are secured as the listener they reach
//! (`security/outbound.rs`).

use super::{BrokerConfig, Listener};

/// Kafka's `SecurityProtocol`, with its wire ids (BrokerRegistration, UpdateMetadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Kafka's `SecurityProtocol.forName`: upper case names only.
    pub fn parse(s: &str) -> Option<SecurityProtocol> {
        SecurityProtocol::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// The definition of a listener override, `listener.name.<listener>.<key>` of a broker key, or
/// `listener.name.<listener>.<mechanism>.sasl.jaas.config` (Kafka's per-mechanism JAAS config,
/// the mechanism in lower case).
pub fn listener_key_def(key: &str) -> Option<&'static super::defs::ConfigDef> {
    let rest = key.strip_prefix("listener.name.")?;
    let (listener, base) = rest.split_once('.')?;
    if listener.is_empty() {
        return None;
    }
    if let Some(def) = super::defs::broker_def(base) {
        return Some(def);
    }
    let (mechanism, base) = base.split_once('.')?;
    (matches!(
        base,
        "sasl.jaas.config" | "sasl.server.callback.handler.class"
    ) && !mechanism.is_empty())
    .then(|| super::defs::broker_def(base))
    .flatten()
}

/// `listener.security.protocol.map` as (upper-cased listener name, protocol) pairs.
pub fn parse_map(value: &str) -> Result<Vec<(String, SecurityProtocol)>, String> {
    let mut out: Vec<(String, SecurityProtocol)> = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, proto) = entry.split_once(':').ok_or_else(|| {
            format!("listener.security.protocol.map: '{entry}' is not LISTENER_NAME:PROTOCOL")
        })?;
        let (name, proto) = (name.trim(), proto.trim());
        let proto = SecurityProtocol::parse(proto).ok_or_else(|| {
            format!(
                "listener.security.protocol.map: unknown security protocol '{proto}' for \
                 listener {name} (expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"
            )
        })?;
        let name = name.to_ascii_uppercase();
        if out.iter().any(|(n, _)| *n == name) {
            return Err(format!(
                "listener.security.protocol.map: listener {name} is mapped twice"
            ));
        }
        out.push((name, proto));
    }
    Ok(out)
}

impl BrokerConfig {
    /// The security protocol of the listener named `name` (case-insensitive, as Kafka's
    /// `ListenerName.normalised`), or why it has none.
    pub fn security_protocol(&self, name: &str) -> Result<SecurityProtocol, String> {
        let upper = name.to_ascii_uppercase();
        if self.is_set("listener.security.protocol.map") {
            let value = self
                .get("listener.security.protocol.map")
                .unwrap_or_default();
            return parse_map(&value)?
                .into_iter()
                .find(|(n, _)| *n == upper)
                .map(|(_, p)| p)
                .ok_or_else(|| {
                    format!(
                        "listener {name} has no security protocol in \
                         listener.security.protocol.map ({value})"
                    )
                });
        }
        if let Some(p) = SecurityProtocol::parse(&upper) {
            return Ok(p);
        }
        let controller = self.list("controller.listener.names");
        if controller.iter().any(|c| c.eq_ignore_ascii_case(name)) {
            return Ok(SecurityProtocol::Plaintext);
        }
        Err(format!(
            "listener {name} has no security protocol: if it is the controller listener, \
             name it in controller.listener.names; otherwise name it PLAINTEXT or map it in \
             listener.security.protocol.map (for example {name}:PLAINTEXT)"
        ))
    }

    /// Start-up check: every listener resolves to a protocol Samsa serves.
    pub(super) fn check_listener_security(&self) -> Result<(), (String, String)> {
        if self.is_set("listener.security.protocol.map") {
            parse_map(
                &self
                    .get("listener.security.protocol.map")
                    .unwrap_or_default(),
            )
            .map_err(|m| ("listener.security.protocol.map".to_string(), m))?;
        }
        let mut all: Vec<(&str, Listener)> = Vec::new();
        for key in ["listeners", "advertised.listeners"] {
            for l in self.list(key) {
                if let Ok(l) = Listener::parse(&l) {
                    all.push((key, l));
                }
            }
        }
        for (key, l) in &all {
            self.security_protocol(&l.name)
                .map_err(|m| (key.to_string(), format!("{key}: {m}")))?;
        }
        if let Some(name) = self.get("inter.broker.listener.name") {
            if !name.is_empty()
                && !self
                    .listeners()
                    .iter()
                    .any(|l| l.name.eq_ignore_ascii_case(&name))
            {
                return Err((
                    "inter.broker.listener.name".into(),
                    format!("inter.broker.listener.name: {name} is not one of the listeners"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(pairs: &[(&str, &str)]) -> Result<BrokerConfig, String> {
        let flags = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>();
        BrokerConfig::load(None, vec![], flags).map_err(|e| e.to_string())
    }

    #[test]
    fn every_listener_may_be_secured() {
        for listener in [
            "SSL://127.0.0.1:9093",
            "SASL_PLAINTEXT://127.0.0.1:9094",
            "sasl_ssl://127.0.0.1:9095",
        ] {
            let c = load(&[("listeners", listener)]).unwrap();
            assert_ne!(
                c.security_protocol(&c.listeners()[0].name).unwrap(),
                SecurityProtocol::Plaintext
            );
        }
        // The controller listener too, from the map.
        let c = load(&[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            ),
            ("controller.listener.names", "CONTROLLER"),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
            ),
        ])
        .unwrap();
        assert_eq!(
            c.security_protocol("CONTROLLER").unwrap(),
            SecurityProtocol::Ssl
        );
        // Listener overrides and per-mechanism JAAS configs are known keys.
        let c = load(&[
            ("listeners", "CLIENT://127.0.0.1:9093"),
            ("listener.security.protocol.map", "CLIENT:SASL_SSL"),
            ("listener.name.client.sasl.enabled.mechanisms", "PLAIN"),
            ("listener.name.client.plain.sasl.jaas.config", "x required;"),
            ("listener.name.client.ssl.keystore.type", "PEM"),
        ])
        .unwrap();
        assert!(c.is_set("listener.name.client.plain.sasl.jaas.config"));
        let e = load(&[("listener.name.client.no.such.key", "1")]).unwrap_err();
        assert!(e.contains("unknown configuration key"), "{e}");
    }

    #[test]
    fn listener_names_resolve_as_kafka_resolves_them() {
        let c = load(&[]).unwrap();
        assert_eq!(
            c.security_protocol("PLAINTEXT").unwrap(),
            SecurityProtocol::Plaintext
        );
        assert_eq!(c.security_protocol("ssl").unwrap(), SecurityProtocol::Ssl);
        // A name of no protocol needs the map, except a controller listener (PLAINTEXT).
        let e = load(&[("listeners", "INTERNAL://127.0.0.1:9092")]).unwrap_err();
        assert!(
            e.contains("listener INTERNAL has no security protocol"),
            "{e}"
        );
        let c = load(&[
            ("listeners", "INTERNAL://127.0.0.1:9092"),
            ("listener.security.protocol.map", "internal:PLAINTEXT"),
            ("inter.broker.listener.name", "INTERNAL"),
        ])
        .unwrap();
        assert_eq!(
            c.security_protocol("Internal").unwrap(),
            SecurityProtocol::Plaintext
        );
        let c = load(&[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            ),
            ("controller.listener.names", "CONTROLLER"),
        ])
        .unwrap();
        assert_eq!(
            c.security_protocol("CONTROLLER").unwrap(),
            SecurityProtocol::Plaintext
        );
        // An explicit map must name every listener, the controller's included.
        let e = load(&[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            ),
            ("controller.listener.names", "CONTROLLER"),
            ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT"),
        ])
        .unwrap_err();
        assert!(
            e.contains("listener CONTROLLER has no security protocol"),
            "{e}"
        );
    }

    #[test]
    fn a_malformed_map_or_an_unknown_inter_broker_listener_is_refused() {
        for (map, want) in [
            ("PLAINTEXT", "not LISTENER_NAME:PROTOCOL"),
            ("PLAINTEXT:TLS", "unknown security protocol 'TLS'"),
            (
                "PLAINTEXT:plaintext",
                "unknown security protocol 'plaintext'",
            ),
            ("PLAINTEXT:PLAINTEXT,plaintext:SSL", "mapped twice"),
        ] {
            let e = load(&[("listener.security.protocol.map", map)]).unwrap_err();
            assert!(e.contains(want), "{map}: {e}");
        }
        let e = load(&[("inter.broker.listener.name", "REPLICATION")]).unwrap_err();
        assert!(e.contains("REPLICATION is not one of the listeners"), "{e}");
    }

    #[test]
    fn wire_ids_are_kafkas() {
        let ids: Vec<(i16, &str)> = SecurityProtocol::ALL
            .iter()
            .map(|p| (p.id(), p.name()))
            .collect();
        assert_eq!(
            ids,
            vec![
                (0, "PLAINTEXT"),
                (1, "SSL"),
                (2, "SASL_PLAINTEXT"),
                (3, "SASL_SSL")
            ]
        );
    }
}
