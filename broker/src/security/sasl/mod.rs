//! SASL on a listener (Kafka's `SaslServerAuthenticator`): which mechanisms it offers and the
//! exchange of one mechanism. Sans-IO: [`Exchange::step`] takes a client token and returns the
//! server's; the connection (`net::connection`, the SaslHandshake and SaslAuthenticate
//! handlers) carries the tokens and decides what a failure does to the connection.
//!
//! Mechanisms: PLAIN against the users of the listener's JAAS config (`user_<name>="<password>"`
//! options of `PlainLoginModule`, Kafka's format), SCRAM-SHA-256 and SCRAM-SHA-512 against the
//! credentials in the metadata image (AlterUserScramCredentials), and OAUTHBEARER with Kafka's
//! unsecured JWT validator ([`oauthbearer`]). GSSAPI, and OAUTHBEARER with a validator class
//! (signed tokens, KIP-768), are refused at start when a listener enables them.

pub mod client;
pub mod jaas;
pub mod oauthbearer;
pub mod scram;

use std::collections::BTreeMap;

use samsa_cluster::controller::ScramMechanism;
use samsa_cluster::metadata::image::ScramCredential;

/// Most bytes of one SASL token Samsa reads (Kafka's `sasl.server.max.receive.size`, 512 KiB,
/// bounds the same thing; PLAIN and SCRAM tokens are far smaller).
pub const TOKEN_BYTES_MAX: usize = 512 * 1024;

/// A mechanism Samsa serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
    OAuthBearer,
}

impl Mechanism {
    pub const ALL: [Mechanism; 4] = [
        Mechanism::Plain,
        Mechanism::ScramSha256,
        Mechanism::ScramSha512,
        Mechanism::OAuthBearer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// Mechanism names are case-sensitive, as Kafka compares them.
    pub fn parse(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn scram(self) -> Option<ScramMechanism> {
        match self {
            Mechanism::Plain | Mechanism::OAuthBearer => None,
            Mechanism::ScramSha256 => Some(ScramMechanism::Sha256),
            Mechanism::ScramSha512 => Some(ScramMechanism::Sha512),
        }
    }
}

/// Why an exchange failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslError {
    /// Wrong or malformed credentials: SASL_AUTHENTICATION_FAILED, then the connection closes.
    AuthenticationFailed(String),
    /// A message out of turn: ILLEGAL_SASL_STATE.
    IllegalState(String),
}

impl SaslError {
    pub fn message(&self) -> &str {
        match self {
            SaslError::AuthenticationFailed(m) | SaslError::IllegalState(m) => m,
        }
    }
}

/// What a listener offers.
#[derive(Debug, Clone, Default)]
pub struct SaslSettings {
    /// In the order `sasl.enabled.mechanisms` lists them.
    pub mechanisms: Vec<Mechanism>,
    /// PLAIN's users and passwords, from the JAAS config's `user_<name>` options.
    plain_users: BTreeMap<String, String>,
    /// OAUTHBEARER's validator, from the JAAS config's `unsecuredValidator*` options.
    oauthbearer: oauthbearer::UnsecuredValidator,
}

impl SaslSettings {
    /// The settings of `listener` from its effective keys (`get` resolves Kafka's
    /// `listener.name.<listener>.` prefix, and `<mechanism>.sasl.jaas.config` with the lower-case
    /// mechanism name before it, as Kafka looks the JAAS config up). Errors are start-up errors
    /// naming the listener and the key.
    pub fn from_config(
        listener: &str,
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SaslSettings, String> {
        let enabled = get("sasl.enabled.mechanisms").unwrap_or_else(|| "GSSAPI".into());
        let mut mechanisms = Vec::new();
        for name in enabled.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match Mechanism::parse(name) {
                Some(m) if !mechanisms.contains(&m) => mechanisms.push(m),
                Some(_) => {}
                None => {
                    let why = match name {
                        "GSSAPI" => "Kerberos (GSSAPI) is not implemented".to_string(),
                        _ => format!("'{name}' is not a SASL mechanism Samsa knows"),
                    };
                    return Err(format!(
                        "listener {listener}: sasl.enabled.mechanisms={enabled}: {why}; Samsa \
                         serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER{}",
                        if get("sasl.enabled.mechanisms").is_none() {
                            " (Kafka's default is GSSAPI: set sasl.enabled.mechanisms)"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
        if mechanisms.is_empty() {
            return Err(format!(
                "listener {listener}: sasl.enabled.mechanisms is empty: a SASL listener needs at \
                 least one mechanism"
            ));
        }
        let mut plain_users = BTreeMap::new();
        if mechanisms.contains(&Mechanism::Plain) {
            let key = "plain.sasl.jaas.config";
            let text = get(key).ok_or_else(|| {
                format!(
                    "listener {listener}: PLAIN is enabled but listener.name.{}.{key} is not \
                     set: PLAIN's users come from it (org.apache.kafka.common.security.plain.\
                     PlainLoginModule required user_alice=\"alice-secret\";)",
                    listener.to_ascii_lowercase()
                )
            })?;
            let module = jaas::parse(&text).map_err(|e| format!("listener {listener}: {e}"))?;
            if !module.class.ends_with("PlainLoginModule") {
                return Err(format!(
                    "listener {listener}: {key}: PLAIN needs \
                     org.apache.kafka.common.security.plain.PlainLoginModule, not {}",
                    module.class
                ));
            }
            for (k, v) in module.options {
                if let Some(user) = k.strip_prefix("user_") {
                    plain_users.insert(user.to_string(), v);
                }
            }
            if plain_users.is_empty() {
                tracing::warn!(listener, "PLAIN is enabled but {key} has no user_<name> option: no client can authenticate with PLAIN");
            }
        }
        let mut oauthbearer = oauthbearer::UnsecuredValidator::default();
        if mechanisms.contains(&Mechanism::OAuthBearer) {
            const UNSECURED: &str = "org.apache.kafka.common.security.oauthbearer.internals.\
                                     unsecured.OAuthBearerUnsecuredValidatorCallbackHandler";
            let key = "oauthbearer.sasl.server.callback.handler.class";
            if let Some(class) = get(key).filter(|c| !c.trim().is_empty() && c.trim() != UNSECURED)
            {
                return Err(format!(
                    "listener {listener}: {key}={class}: validating signed OAUTHBEARER tokens \
                     (KIP-768) is not implemented; Samsa runs Kafka's unsecured validator \
                     (development only) when no validator class is set"
                ));
            }
            if let Some(text) = get("oauthbearer.sasl.jaas.config") {
                let module = jaas::parse(&text).map_err(|e| format!("listener {listener}: {e}"))?;
                oauthbearer = oauthbearer::UnsecuredValidator::from_options(&module.options)
                    .map_err(|e| {
                        format!("listener {listener}: oauthbearer.sasl.jaas.config: {e}")
                    })?;
            }
            tracing::warn!(listener, "OAUTHBEARER runs Kafka's unsecured JWT validator: tokens are not signed and prove nothing (development only)");
        }
        Ok(SaslSettings {
            mechanisms,
            plain_users,
            oauthbearer,
        })
    }

    pub fn offers(&self, m: Mechanism) -> bool {
        self.mechanisms.contains(&m)
    }

    pub fn mechanism_names(&self) -> Vec<&'static str> {
        self.mechanisms.iter().map(|m| m.name()).collect()
    }

    #[cfg(test)]
    pub fn for_tests(mechanisms: Vec<Mechanism>, users: &[(&str, &str)]) -> SaslSettings {
        SaslSettings {
            oauthbearer: Default::default(),
            mechanisms,
            plain_users: users
                .iter()
                .map(|(u, p)| (u.to_string(), p.to_string()))
                .collect(),
        }
    }
}

/// One authentication exchange.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per connection, for the exchange only
pub enum Exchange {
    Plain { done: bool },
    Scram(scram::ScramServer),
    OAuthBearer { done: bool },
}

/// A step's outcome: the token for the client, and the principal once authenticated.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    pub response: Vec<u8>,
    pub principal: Option<String>,
}

impl Exchange {
    pub fn new(m: Mechanism) -> Exchange {
        match (m, m.scram()) {
            (Mechanism::OAuthBearer, _) => Exchange::OAuthBearer { done: false },
            (_, Some(s)) => Exchange::Scram(scram::ScramServer::new(s)),
            (_, None) => Exchange::Plain { done: false },
        }
    }

    /// One client token. `scram_credential(mechanism, user)` reads the metadata image.
    pub fn step(
        &mut self,
        token: &[u8],
        settings: &SaslSettings,
        scram_credential: &dyn Fn(ScramMechanism, &str) -> Option<ScramCredential>,
    ) -> Result<Step, SaslError> {
        if token.len() > TOKEN_BYTES_MAX {
            return Err(SaslError::AuthenticationFailed(format!(
                "Authentication failed: a SASL token of {} bytes exceeds {TOKEN_BYTES_MAX}",
                token.len()
            )));
        }
        match self {
            Exchange::Plain { done } => {
                if *done {
                    return Err(SaslError::IllegalState(
                        "the PLAIN exchange is already complete".into(),
                    ));
                }
                *done = true;
                let user = plain(token, &settings.plain_users)?;
                Ok(Step {
                    response: Vec::new(),
                    principal: Some(format!("User:{user}")),
                })
            }
            Exchange::OAuthBearer { done } => {
                if *done {
                    return Err(SaslError::IllegalState(
                        "the OAUTHBEARER exchange is already complete".into(),
                    ));
                }
                *done = true;
                let user =
                    oauthbearer::validate(token, &settings.oauthbearer, crate::util::now_ms())?;
                Ok(Step {
                    response: Vec::new(),
                    principal: Some(format!("User:{user}")),
                })
            }
            Exchange::Scram(s) => {
                let m = s.mechanism();
                let step = s.step(token, &|user| scram_credential(m, user))?;
                Ok(Step {
                    response: step.response,
                    principal: step.authenticated.map(|u| format!("User:{u}")),
                })
            }
        }
    }
}

/// RFC 4616's message, `[authzid] NUL authcid NUL passwd`, checked as Kafka's
/// `PlainSaslServer` does: the authorization id empty or the user's own, the password the one
/// the JAAS config gives the user.
fn plain(token: &[u8], users: &BTreeMap<String, String>) -> Result<String, SaslError> {
    let failed =
        |why: &str| SaslError::AuthenticationFailed(format!("Authentication failed: {why}"));
    let text = std::str::from_utf8(token).map_err(|_| failed("the PLAIN message is not UTF-8"))?;
    let parts: Vec<&str> = text.split('\u{0}').collect();
    let [authzid, user, password] = parts[..] else {
        return Err(failed(&format!(
            "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
            parts.len()
        )));
    };
    if user.is_empty() {
        return Err(failed("username not specified"));
    }
    if password.is_empty() {
        return Err(failed("password not specified"));
    }
    if !authzid.is_empty() && authzid != user {
        return Err(failed(
            "Client requested an authorization id that is different from username",
        ));
    }
    match users.get(user) {
        Some(expected) if constant_time_eq(expected.as_bytes(), password.as_bytes()) => {
            Ok(user.to_string())
        }
        _ => Err(failed("Invalid username or password")),
    }
}

/// A random nonce of `len` alphanumeric characters (printable, no ','), for SCRAM.
fn nonce(len: usize) -> String {
    use rand::distributions::Alphanumeric;
    use rand::Rng;
    rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_scram(_: ScramMechanism, _: &str) -> Option<ScramCredential> {
        None
    }

    #[test]
    fn plain_checks_user_password_and_authorization_id() {
        let s = SaslSettings::for_tests(vec![Mechanism::Plain], &[("alice", "alice-secret")]);
        let run = |token: &[u8]| Exchange::new(Mechanism::Plain).step(token, &s, &no_scram);
        assert_eq!(
            run(b"\0alice\0alice-secret").unwrap().principal.as_deref(),
            Some("User:alice")
        );
        assert!(run(b"alice\0alice\0alice-secret").is_ok());
        for (token, says) in [
            (&b"\0alice\0wrong"[..], "Invalid username or password"),
            (b"\0bob\0alice-secret", "Invalid username or password"),
            (b"bob\0alice\0alice-secret", "authorization id"),
            (b"\0\0x", "username not specified"),
            (b"\0alice\0", "password not specified"),
            (b"alice-secret", "expected 3 tokens, got 1"),
            (b"\xff\0a\0b", "not UTF-8"),
        ] {
            match run(token) {
                Err(SaslError::AuthenticationFailed(m)) => assert!(m.contains(says), "{m}"),
                other => panic!("{token:?}: {other:?}"),
            }
        }
        // One exchange, one message.
        let mut e = Exchange::new(Mechanism::Plain);
        e.step(b"\0alice\0alice-secret", &s, &no_scram).unwrap();
        assert!(matches!(
            e.step(b"\0alice\0alice-secret", &s, &no_scram),
            Err(SaslError::IllegalState(_))
        ));
    }

    #[test]
    fn oversized_tokens_are_refused_before_parsing() {
        let s = SaslSettings::for_tests(vec![Mechanism::Plain], &[]);
        let big = vec![b'a'; TOKEN_BYTES_MAX + 1];
        assert!(matches!(
            Exchange::new(Mechanism::Plain).step(&big, &s, &no_scram),
            Err(SaslError::AuthenticationFailed(m)) if m.contains("exceeds")
        ));
    }

    #[test]
    fn settings_follow_kafkas_keys_and_refuse_what_samsa_lacks() {
        let conf = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let s = SaslSettings::from_config(
            "CLIENT",
            &conf(&[
                ("sasl.enabled.mechanisms", "SCRAM-SHA-512, PLAIN"),
                (
                    "plain.sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required \
                     username=\"admin\" password=\"a\" user_admin=\"a\" user_alice=\"b\";",
                ),
            ]),
        )
        .unwrap();
        assert_eq!(s.mechanism_names(), ["SCRAM-SHA-512", "PLAIN"]);
        assert_eq!(s.plain_users.len(), 2);
        for (pairs, says) in [
            (&[][..], "Kafka's default is GSSAPI"),
            (&[("sasl.enabled.mechanisms", "GSSAPI")][..], "Kerberos"),
            (
                &[
                    ("sasl.enabled.mechanisms", "OAUTHBEARER"),
                    (
                        "oauthbearer.sasl.server.callback.handler.class",
                        "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                    ),
                ][..],
                "KIP-768",
            ),
            (
                &[("sasl.enabled.mechanisms", "plain")][..],
                "'plain' is not",
            ),
            (&[("sasl.enabled.mechanisms", "")][..], "is empty"),
            (
                &[("sasl.enabled.mechanisms", "PLAIN")][..],
                "listener.name.client.plain.sasl.jaas.config is not set",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "PLAIN"),
                    (
                        "plain.sasl.jaas.config",
                        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                    ),
                ][..],
                "PLAIN needs",
            ),
        ] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(pairs.to_vec().into_boxed_slice());
            let e = SaslSettings::from_config("CLIENT", &conf(pairs)).unwrap_err();
            assert!(e.contains(says) && e.contains("CLIENT"), "{e}");
        }
    }
}
