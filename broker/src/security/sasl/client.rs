//! The client side of SASL, for this node's own connections to other nodes (replica fetchers,
//! transaction markers, the quorum's and brokers' requests to controllers): PLAIN, SCRAM-SHA-256
//! and SCRAM-SHA-512 (RFC 5802, as Kafka's `ScramSaslClient`), and OAUTHBEARER with an
//! unsecured token (Kafka's `OAuthBearerUnsecuredLoginCallbackHandler`, KIP-255).
//!
//! The credentials come from the listener's JAAS config for the mechanism, as in Kafka: the
//! `username` and `password` options of `PlainLoginModule` / `ScramLoginModule`, the
//! `unsecuredLoginStringClaim_sub` option of `OAuthBearerLoginModule`.
//!
//! Sans-IO: [`SaslClient::first`] gives the first token, [`SaslClient::step`] takes each
//! server token and gives the next, until [`SaslClient::step`] says the exchange is complete.

use std::collections::BTreeMap;

use base64::engine::general_purpose::{STANDARD as B64, URL_SAFE_NO_PAD as B64URL};
use base64::Engine as _;
use samsa_cluster::controller::{ScramMechanism, SCRAM_ITERATIONS_MAX, SCRAM_ITERATIONS_MIN};

use super::{jaas, Mechanism};

/// The PBKDF2 iterations a server may ask for: Kafka's bounds (`ScramMechanism`), the ones
/// AlterUserScramCredentials accepts. Fewer would trust the server with a cheaply salted
/// password; more would let it make this node spin.
const MIN_ITERATIONS: u32 = SCRAM_ITERATIONS_MIN as u32;
const MAX_ITERATIONS: u32 = SCRAM_ITERATIONS_MAX as u32;
/// Client nonce characters.
const NONCE_CHARS: usize = 32;
/// Lifetime of an unsecured OAUTHBEARER token unless the JAAS config says otherwise (Kafka's
/// `unsecuredLoginLifetimeSeconds` default).
const OAUTH_LIFETIME_S: u64 = 3600;

/// What this node authenticates as on one listener.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub mechanism: Mechanism,
    pub username: String,
    password: String,
    /// OAUTHBEARER's extra claims and lifetime.
    oauth: BTreeMap<String, String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// From the JAAS config text of `mechanism` (errors never quote a password).
    pub fn from_jaas(mechanism: Mechanism, text: &str) -> Result<Credentials, String> {
        let module = jaas::parse(text)?;
        let expected = match mechanism {
            Mechanism::Plain => "PlainLoginModule",
            Mechanism::ScramSha256 | Mechanism::ScramSha512 => "ScramLoginModule",
            Mechanism::OAuthBearer => "OAuthBearerLoginModule",
        };
        if !module.class.ends_with(expected) {
            return Err(format!(
                "{} needs the login module {expected}, not {}",
                mechanism.name(),
                module.class
            ));
        }
        let option = |k: &str| module.options.get(k).filter(|v| !v.is_empty()).cloned();
        if mechanism == Mechanism::OAuthBearer {
            let sub = option("unsecuredLoginStringClaim_sub").ok_or(
                "OAUTHBEARER needs unsecuredLoginStringClaim_sub (the principal this node's \
                 unsecured token names)",
            )?;
            return Ok(Credentials {
                mechanism,
                username: sub,
                password: String::new(),
                oauth: module.options,
            });
        }
        if module.options.get("tokenauth").is_some_and(|v| v == "true") {
            return Err("delegation tokens (tokenauth) are not supported".into());
        }
        let username = option("username")
            .ok_or("the login module has no username option (the user to authenticate as)")?;
        let password = option("password").ok_or("the login module has no password option")?;
        Ok(Credentials {
            mechanism,
            username,
            password,
            oauth: BTreeMap::new(),
        })
    }

    /// PLAIN or SCRAM credentials given directly.
    pub fn new(mechanism: Mechanism, username: &str, password: &str) -> Credentials {
        Credentials {
            mechanism,
            username: username.into(),
            password: password.into(),
            oauth: BTreeMap::new(),
        }
    }
}

enum State {
    Start,
    /// SCRAM: sent client-first.
    SentFirst {
        nonce: String,
        client_first_bare: String,
    },
    /// SCRAM: sent client-final; the server signature expected.
    SentFinal {
        server_signature: Vec<u8>,
    },
    /// PLAIN and OAUTHBEARER: sent the only token.
    SentOnly,
    Done,
}

/// One client exchange.
pub struct SaslClient {
    creds: Credentials,
    /// SCRAM's client nonce.
    nonce: String,
    state: State,
}

/// What a step gives: a token to send, or the end of the exchange.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Send(Vec<u8>),
    Done,
}

impl SaslClient {
    pub fn new(creds: Credentials) -> SaslClient {
        SaslClient::with_nonce(creds, super::nonce(NONCE_CHARS))
    }

    fn with_nonce(creds: Credentials, nonce: String) -> SaslClient {
        SaslClient {
            creds,
            nonce,
            state: State::Start,
        }
    }

    /// The first token (the client speaks first in every mechanism here).
    pub fn first(&mut self, now_ms: i64) -> Vec<u8> {
        assert!(matches!(self.state, State::Start), "first() twice");
        let c = &self.creds;
        match c.mechanism {
            Mechanism::Plain => {
                self.state = State::SentOnly;
                format!("\0{}\0{}", c.username, c.password).into_bytes()
            }
            Mechanism::OAuthBearer => {
                self.state = State::SentOnly;
                let token = unsecured_token(&c.oauth, now_ms);
                format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
            }
            Mechanism::ScramSha256 | Mechanism::ScramSha512 => {
                let nonce = self.nonce.clone();
                let user = c.username.replace('=', "=3D").replace(',', "=2C");
                let client_first_bare = format!("n={user},r={nonce}");
                let first = format!("n,,{client_first_bare}").into_bytes();
                self.state = State::SentFirst {
                    nonce,
                    client_first_bare,
                };
                first
            }
        }
    }

    /// The server's answer to the last token: the next token, or Done once the exchange is
    /// complete (and, for SCRAM, the server proved it knows the credential).
    pub fn step(&mut self, server: &[u8]) -> Result<Next, String> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Start => Err("the exchange has not started".into()),
            State::Done => Err("the exchange is already complete".into()),
            State::SentOnly => Ok(Next::Done),
            State::SentFirst {
                nonce,
                client_first_bare,
            } => {
                let m = self.creds.mechanism.scram().expect("a SCRAM exchange");
                let server_first = std::str::from_utf8(server)
                    .map_err(|_| "the server-first message is not UTF-8")?;
                let (r#final, server_signature) = client_final(
                    m,
                    &self.creds.password,
                    &nonce,
                    &client_first_bare,
                    server_first,
                )?;
                self.state = State::SentFinal { server_signature };
                Ok(Next::Send(r#final.into_bytes()))
            }
            State::SentFinal { server_signature } => {
                let text = std::str::from_utf8(server)
                    .map_err(|_| "the server-final message is not UTF-8")?;
                if let Some(e) = text.strip_prefix("e=") {
                    return Err(format!("the server refused: {e}"));
                }
                let v = text
                    .strip_prefix("v=")
                    .and_then(|v| B64.decode(v.split(',').next().unwrap_or("")).ok())
                    .ok_or("the server-final message has no verifier")?;
                if v != server_signature {
                    return Err("the server's signature is wrong: it does not know the \
                                credential (a server in the middle?)"
                        .into());
                }
                Ok(Next::Done)
            }
        }
    }
}

/// client-final for server-first, and the server signature to expect.
fn client_final(
    m: ScramMechanism,
    password: &str,
    nonce: &str,
    client_first_bare: &str,
    server_first: &str,
) -> Result<(String, Vec<u8>), String> {
    let mut attrs: BTreeMap<&str, &str> = BTreeMap::new();
    for a in server_first.split(',') {
        let (k, v) = a
            .split_once('=')
            .ok_or("a malformed server-first message")?;
        attrs.entry(k).or_insert(v);
    }
    if let Some(e) = attrs.get("e") {
        return Err(format!("the server refused: {e}"));
    }
    if attrs.contains_key("m") {
        return Err("server-first has a mandatory extension (m=) this client does not know".into());
    }
    let server_nonce = attrs.get("r").ok_or("server-first has no nonce")?;
    if !server_nonce.starts_with(nonce) || server_nonce.len() == nonce.len() {
        return Err("server-first's nonce does not extend this client's".into());
    }
    let salt = attrs
        .get("s")
        .and_then(|s| B64.decode(s).ok())
        .filter(|s| !s.is_empty())
        .ok_or("server-first has no valid salt")?;
    let iterations: u32 = attrs
        .get("i")
        .and_then(|i| i.parse().ok())
        .ok_or("server-first has no valid iteration count")?;
    if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
        return Err(format!(
            "server-first asks {iterations} iterations, outside {MIN_ITERATIONS}..={MAX_ITERATIONS}"
        ));
    }
    let salted = super::scram::hi(m, password.as_bytes(), &salt, iterations);
    let client_key = m.hmac(&salted, b"Client Key");
    let stored_key = m.hash(&client_key);
    let without_proof = format!("c=biws,r={server_nonce}");
    let auth = format!("{client_first_bare},{server_first},{without_proof}");
    let signature = m.hmac(&stored_key, auth.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(k, s)| k ^ s)
        .collect();
    let server_key = m.hmac(&salted, b"Server Key");
    let server_signature = m.hmac(&server_key, auth.as_bytes());
    Ok((
        format!("{without_proof},p={}", B64.encode(proof)),
        server_signature,
    ))
}

/// An unsecured JWS (`"alg":"none"`, no signature) as Kafka's unsecured login handler makes
/// one: `sub` from `unsecuredLoginStringClaim_sub`, other `unsecuredLoginStringClaim_<name>`
/// claims, `iat` and `exp` (`unsecuredLoginLifetimeSeconds` later).
fn unsecured_token(options: &BTreeMap<String, String>, now_ms: i64) -> String {
    let lifetime = options
        .get("unsecuredLoginLifetimeSeconds")
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(OAUTH_LIFETIME_S);
    let now_s = now_ms as f64 / 1000.0;
    let mut claims = serde_json::Map::new();
    for (k, v) in options {
        if let Some(name) = k.strip_prefix("unsecuredLoginStringClaim_") {
            claims.insert(name.to_string(), serde_json::Value::String(v.clone()));
        }
    }
    claims.insert("iat".into(), serde_json::json!(now_s));
    claims.insert("exp".into(), serde_json::json!(now_s + lifetime as f64));
    let header = B64URL.encode(br#"{"alg":"none"}"#);
    let body = B64URL.encode(serde_json::Value::Object(claims).to_string());
    format!("{header}.{body}.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::sasl::{Exchange, SaslSettings};
    use bytes::Bytes;
    use samsa_cluster::metadata::image::ScramCredential;

    fn credential(m: ScramMechanism, password: &str) -> ScramCredential {
        let salt = b"a salt of some length";
        let salted = super::super::scram::hi(m, password.as_bytes(), salt, 4096);
        let (stored_key, server_key) = m.stored_and_server_keys(&salted);
        ScramCredential {
            salt: Bytes::copy_from_slice(salt),
            stored_key,
            server_key,
            iterations: 4096,
        }
    }

    /// Runs the client against this broker's own server side; the principal, or why not.
    fn exchange(
        client: Credentials,
        settings: &SaslSettings,
        stored: &str,
    ) -> Result<String, String> {
        let m = client.mechanism;
        let mut c = SaslClient::new(client);
        let mut server = Exchange::new(m);
        let lookup =
            |sm: ScramMechanism, user: &str| (user == "admin").then(|| credential(sm, stored));
        let mut token = c.first(crate::util::now_ms());
        loop {
            let step = server
                .step(&token, settings, &lookup)
                .map_err(|e| e.message().to_string())?;
            match c.step(&step.response)? {
                Next::Send(t) => token = t,
                Next::Done => return step.principal.ok_or("no principal".into()),
            }
        }
    }

    #[test]
    fn every_mechanism_authenticates_against_the_broker_side() {
        let settings = SaslSettings::for_tests(
            vec![
                Mechanism::Plain,
                Mechanism::ScramSha256,
                Mechanism::ScramSha512,
                Mechanism::OAuthBearer,
            ],
            &[("admin", "admin-secret")],
        );
        for m in [
            Mechanism::Plain,
            Mechanism::ScramSha256,
            Mechanism::ScramSha512,
        ] {
            let ok = exchange(
                Credentials::new(m, "admin", "admin-secret"),
                &settings,
                "admin-secret",
            );
            assert_eq!(ok, Ok("User:admin".to_string()), "{m:?}");
            let wrong = exchange(
                Credentials::new(m, "admin", "guess"),
                &settings,
                "admin-secret",
            );
            assert!(wrong.is_err(), "{m:?}: {wrong:?}");
        }
        let oauth = Credentials::from_jaas(
            Mechanism::OAuthBearer,
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             unsecuredLoginStringClaim_sub=\"broker-1\";",
        )
        .unwrap();
        assert_eq!(exchange(oauth, &settings, "").unwrap(), "User:broker-1");
    }

    #[test]
    fn scram_follows_rfc_7677s_example() {
        let creds = Credentials::new(Mechanism::ScramSha256, "user", "pencil");
        let mut c = SaslClient::with_nonce(creds, "rOprNGfwEbeRWgbNEkqO".into());
        assert_eq!(c.first(0), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                            s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let Next::Send(fin) = c.step(server_first.as_bytes()).unwrap() else {
            panic!("client-final expected")
        };
        assert_eq!(
            String::from_utf8(fin).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        let server_final = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
        assert_eq!(c.step(server_final), Ok(Next::Done));
    }

    #[test]
    fn a_server_that_does_not_know_the_password_is_caught() {
        // A server in the middle that answers from a credential made for another password: the
        // client's proof fails there, and were it accepted, the server signature would not match.
        let m = ScramMechanism::Sha256;
        let mut c = SaslClient::new(Credentials::new(Mechanism::ScramSha256, "admin", "pw"));
        let first = String::from_utf8(c.first(0)).unwrap();
        let nonce = first.rsplit_once("r=").unwrap().1.to_string();
        let salt = B64.encode(b"salt");
        let server_first = format!("r={nonce}xyz,s={salt},i=4096");
        let Next::Send(_) = c.step(server_first.as_bytes()).unwrap() else {
            panic!("client-final expected")
        };
        let forged = B64.encode(m.hmac(b"not the key", b"anything"));
        let e = c.step(format!("v={forged}").as_bytes()).unwrap_err();
        assert!(e.contains("signature is wrong"), "{e}");
    }

    #[test]
    fn a_bad_server_first_is_refused() {
        let start = || {
            let mut c = SaslClient::new(Credentials::new(Mechanism::ScramSha512, "a,b=c", "pw"));
            let first = String::from_utf8(c.first(0)).unwrap();
            assert!(first.starts_with("n,,n=a=2Cb=3Dc,r="), "{first}");
            let nonce = first.rsplit_once("r=").unwrap().1.to_string();
            (c, nonce)
        };
        let salt = B64.encode(b"salt");
        for (server_first, says) in [
            (format!("r=other,s={salt},i=4096"), "does not extend"),
            (format!("r={{n}},s={salt},i=4096"), "does not extend"),
            ("r={n}x,s=,i=4096".to_string(), "no valid salt"),
            (format!("r={{n}}x,s={salt},i=100"), "iterations"),
            (format!("r={{n}}x,s={salt},i=99999999"), "iterations"),
            (format!("r={{n}}x,s={salt}"), "iteration count"),
            ("e=unknown-user".to_string(), "refused"),
            (
                format!("m=x,r={{n}}x,s={salt},i=4096"),
                "mandatory extension",
            ),
            ("garbage".to_string(), "malformed"),
        ] {
            let (mut c, nonce) = start();
            let msg = server_first.replace("{n}", &nonce);
            let e = c.step(msg.as_bytes()).unwrap_err();
            assert!(e.contains(says), "{msg}: {e}");
        }
    }

    #[test]
    fn credentials_come_from_the_login_module_of_the_mechanism() {
        let plain = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                     username=\"admin\" password=\"s3cret\" user_admin=\"s3cret\";";
        let c = Credentials::from_jaas(Mechanism::Plain, plain).unwrap();
        assert_eq!(
            (c.username.as_str(), c.password.as_str()),
            ("admin", "s3cret")
        );
        let shown = format!("{c:?}");
        assert!(shown.contains("admin") && shown.contains("Plain") && !shown.contains("s3cret"));
        let e = Credentials::from_jaas(Mechanism::ScramSha256, plain).unwrap_err();
        assert!(e.contains("ScramLoginModule"), "{e}");
        let no_user = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                       user_admin=\"s3cret\";";
        let e = Credentials::from_jaas(Mechanism::Plain, no_user).unwrap_err();
        assert!(e.contains("username") && !e.contains("s3cret"), "{e}");
        let token = "org.apache.kafka.common.security.scram.ScramLoginModule required \
                     username=\"a\" password=\"b\" tokenauth=\"true\";";
        let e = Credentials::from_jaas(Mechanism::ScramSha512, token).unwrap_err();
        assert!(e.contains("tokenauth"), "{e}");
    }

    #[test]
    fn the_unsecured_token_carries_its_claims_and_lifetime() {
        let mut options = BTreeMap::new();
        options.insert("unsecuredLoginStringClaim_sub".into(), "broker".into());
        options.insert("unsecuredLoginLifetimeSeconds".into(), "60".into());
        let token = unsecured_token(&options, 1_000_000);
        let body = token.split('.').nth(1).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&B64URL.decode(body).unwrap()).unwrap();
        assert_eq!(claims["sub"], "broker");
        assert_eq!(claims["exp"].as_f64(), Some(1060.0));
        assert!(token.ends_with('.'));
    }
}
