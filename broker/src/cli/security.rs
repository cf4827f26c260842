//! TLS and SASL for the admin CLI, configured as Kafka's tools are: `--command-config FILE`, a
//! Java properties file with a Kafka client's security keys.
//!
//! - [`Security::parse`] reads `security.protocol`, the PEM trust and key stores
//!   (`ssl.truststore.*`, `ssl.keystore.*`), `ssl.endpoint.identification.algorithm`,
//!   `ssl.enabled.protocols`, `sasl.mechanism` and `sasl.jaas.config`. A security key the CLI
//!   cannot honour (JKS stores, encrypted keys, GSSAPI, Java classes, cipher suites, other
//!   `ssl.*`/`sasl.*` keys) is refused with a message naming it; client keys that do not concern
//!   security (`client.id`, timeouts) are ignored with a note. Errors never quote a password.
//! - [`Security::secure`] wraps a connected `TcpStream` in rustls (ring), finishing the
//!   handshake at once so that a certificate problem is reported as one, with what to change.
//! - [`SaslExchange`] makes the client's SASL tokens, which the connection (`client.rs`) carries
//!   in SaslHandshake v1 and SaslAuthenticate after ApiVersions, as Kafka's clients do: PLAIN
//!   (RFC 4616) or SCRAM-SHA-256/512 (RFC 5802/7677; the server's signature is checked, so a
//!   server that does not know the credential cannot pass for the broker).

use std::collections::BTreeMap;
use std::io;
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::{CertificateError, ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use samsa_cluster::controller::{ScramMechanism, SCRAM_ITERATIONS_MAX, SCRAM_ITERATIONS_MIN};

use crate::config::listeners::SecurityProtocol;
use crate::config::parse_properties;
use crate::security::sasl::jaas;

/// Keys the CLI honours.
const KNOWN: &str = "security.protocol ssl.truststore.type ssl.truststore.location \
    ssl.truststore.certificates ssl.truststore.password ssl.keystore.type ssl.keystore.location \
    ssl.keystore.key ssl.keystore.certificate.chain ssl.keystore.password ssl.key.password \
    ssl.endpoint.identification.algorithm ssl.enabled.protocols sasl.mechanism sasl.jaas.config";
/// Security keys (and prefixes) that only choose Java implementations (`ssl.protocol` names an
/// SSLContext; rustls speaks TLS 1.2 and 1.3), or belong to mechanisms the CLI does not use:
/// ignoring them weakens nothing.
const NOT_APPLICABLE: &str = "ssl.protocol ssl.keymanager.algorithm ssl.trustmanager.algorithm \
    ssl.secure.random.implementation ssl.provider sasl.kerberos. sasl.login.refresh. \
    sasl.oauthbearer.";
/// CA bundles of common systems, for SSL without a truststore (Kafka then uses the JVM's).
const SYSTEM_CA_FILES: &str =
    "/etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt \
    /etc/ssl/ca-bundle.pem /etc/ssl/cert.pem";

/// A connection's byte stream: the TCP stream, or TLS over it (with the socket's timeouts).
pub trait Stream: io::Read + io::Write + Send {}
impl<T: io::Read + io::Write + Send> Stream for T {}

/// How the CLI's connections are secured.
pub struct Security {
    protocol: SecurityProtocol,
    tls: Option<Arc<ClientConfig>>,
    sasl: Option<SaslLogin>,
    notes: Vec<String>,
}

/// SASL credentials from `sasl.jaas.config`.
pub struct SaslLogin {
    /// None for PLAIN.
    scram: Option<ScramMechanism>,
    pub username: String,
    password: String,
}

impl SaslLogin {
    pub fn mechanism(&self) -> &'static str {
        self.scram.map_or("PLAIN", |m| m.name())
    }
}

impl Security {
    pub fn plaintext() -> Security {
        Security {
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
            notes: Vec::new(),
        }
    }

    /// Reads a command config file; errors name the file.
    pub fn load(path: &Path) -> anyhow::Result<Security> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("command config {}: {e}", path.display()))?;
        Security::parse(&text)
            .map_err(|e| anyhow::anyhow!("command config {}: {e}", path.display()))
    }

    /// Parses a command config's text (the paths in it are relative to the working directory).
    pub fn parse(text: &str) -> Result<Security, String> {
        let mut props = BTreeMap::new();
        for (_, k, v) in parse_properties(text) {
            // As java.util.Properties: the last value of a key wins.
            props.insert(k, unescape(&v));
        }
        let mut notes = Vec::new();
        for key in props.keys() {
            let k = key.as_str();
            let security =
                k.starts_with("ssl.") || k.starts_with("sasl.") || k.starts_with("security.");
            if KNOWN.split_whitespace().any(|x| x == k) {
            } else if NOT_APPLICABLE.split_whitespace().any(|p| k.starts_with(p)) {
                notes.push(format!("ignoring {k}: it does not apply to samsa's CLI"));
            } else if security && k.ends_with(".class") {
                return Err(format!("{k}: samsa's CLI cannot load Java classes"));
            } else if security {
                return Err(format!(
                    "{k} is not a security setting samsa's CLI supports (it reads \
                     security.protocol, ssl.truststore.*, ssl.keystore.*, ssl.key.password, \
                     ssl.endpoint.identification.algorithm, ssl.enabled.protocols, \
                     sasl.mechanism and sasl.jaas.config)"
                ));
            } else {
                notes.push(format!("ignoring {k}: samsa's CLI does not use it"));
            }
        }
        let get = |k: &str| {
            props
                .get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let name = get("security.protocol").unwrap_or_else(|| "PLAINTEXT".into());
        let protocol = SecurityProtocol::parse(&name.to_ascii_uppercase()).ok_or_else(|| {
            format!("security.protocol={name} is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
        })?;
        let tls = matches!(protocol, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl);
        let sasl = matches!(
            protocol,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        );
        for (prefix, used) in [("ssl.", tls), ("sasl.", sasl)] {
            if !used && props.keys().any(|k| k.starts_with(prefix)) {
                notes.push(format!(
                    "ignoring the {prefix}* keys: security.protocol={} does not use them",
                    protocol.name()
                ));
            }
        }
        let endpoint = props.get("ssl.endpoint.identification.algorithm");
        let endpoint = endpoint.map(|v| v.trim());
        Ok(Security {
            protocol,
            tls: tls.then(|| tls_config(&get, endpoint)).transpose()?,
            sasl: sasl.then(|| sasl_login(&get)).transpose()?,
            notes,
        })
    }

    pub fn protocol(&self) -> SecurityProtocol {
        self.protocol
    }

    pub fn sasl(&self) -> Option<&SaslLogin> {
        self.sasl.as_ref()
    }

    /// Keys that were read and ignored, for a note.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The stream requests go over: `tcp` itself, or TLS over it once the handshake with `addr`
    /// (host:port, whose host the certificate must name unless that check is off) succeeded.
    pub fn secure(&self, tcp: TcpStream, addr: &str) -> Result<Box<dyn Stream>, String> {
        let Some(config) = &self.tls else {
            return Ok(Box::new(tcp));
        };
        let host = host_of(addr);
        let name = ServerName::try_from(host.to_string())
            .map_err(|_| format!("'{host}' is not a host name TLS can check"))?;
        let conn = ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())?;
        let mut stream = StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            if let Err(e) = stream.conn.complete_io(&mut stream.sock) {
                return Err(tls_failure(&e, host));
            }
        }
        Ok(Box::new(stream))
    }
}

/// `host` of `host:port` (`[::1]:9092` gives `::1`).
pub fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// Why a TLS handshake with `host` failed (or the broker ended the connection in TLS, as it does
/// in TLS 1.3 when it refuses the client's certificate), and what to change.
pub fn tls_failure(e: &io::Error, host: &str) -> String {
    use rustls::Error as E;
    let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<E>()) else {
        return format!("TLS handshake failed ({e}): is this a TLS listener (SSL or SASL_SSL)?");
    };
    let hint = match tls {
        E::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "the broker's certificate is not signed by a CA of the truststore \
             (ssl.truststore.location or ssl.truststore.certificates)"
                .to_string()
        }
        E::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => format!(
            "the broker's certificate is not for '{host}': connect by a name it has, or set \
             ssl.endpoint.identification.algorithm= (empty) to skip the host name check"
        ),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => {
            "the broker did not answer in TLS: is this a TLS listener (SSL or SASL_SSL)?".into()
        }
        E::AlertReceived(alert) => format!(
            "the broker refused the handshake ({alert:?}); if it requires client \
             certificates, set ssl.keystore.location to a key and certificate its CA signed"
        ),
        other => other.to_string(),
    };
    format!("TLS handshake failed: {hint}")
}

/// The rustls configuration of the `ssl.*` keys. `endpoint` is
/// `ssl.endpoint.identification.algorithm` as given (empty: no host name check).
fn tls_config(
    get: &dyn Fn(&str) -> Option<String>,
    endpoint: Option<&str>,
) -> Result<Arc<ClientConfig>, String> {
    let check_host = match endpoint {
        None => true,
        Some(v) if v.eq_ignore_ascii_case("https") => true,
        Some("") => false,
        Some(v) => {
            return Err(format!(
                "ssl.endpoint.identification.algorithm={v}: only https (check the host name, \
                 the default) or empty (do not) are known"
            ))
        }
    };
    for key in "ssl.truststore.password ssl.keystore.password ssl.key.password".split(' ') {
        if get(key).is_some() {
            return Err(format!(
                "{key}: samsa's CLI reads PEM stores without passwords and unencrypted keys \
                 only; decrypt an encrypted key (`openssl pkcs8 -in key.pem -out plain.pem`)"
            ));
        }
    }
    let mut versions = Vec::new();
    let enabled = get("ssl.enabled.protocols").unwrap_or_else(|| "TLSv1.2,TLSv1.3".into());
    for name in enabled.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match name {
            "TLSv1.2" => versions.push(&rustls::version::TLS12),
            "TLSv1.3" => versions.push(&rustls::version::TLS13),
            _ => {
                return Err(format!(
                    "ssl.enabled.protocols: {name} is not offered (rustls speaks TLSv1.2 and \
                     TLSv1.3 only)"
                ))
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = Arc::new(truststore(get)?);
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("ssl.enabled.protocols: {e}"))?;
    let builder = if check_host {
        builder.with_root_certificates(roots)
    } else {
        let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| format!("truststore: {e}"))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyName(inner)))
    };
    let config = match keystore(get)? {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| format!("ssl.keystore: {e}"))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// Refuses a store type other than PEM (Kafka's default is JKS).
fn require_pem(get: &dyn Fn(&str) -> Option<String>, key: &str) -> Result<(), String> {
    match get(key) {
        Some(v) if v.eq_ignore_ascii_case("PEM") => Ok(()),
        v => Err(format!(
            "{key} is {}: samsa's CLI reads PEM stores only; set {key}=PEM (convert a JKS or \
             PKCS12 store with keytool and `openssl pkcs12 -nodes`)",
            v.unwrap_or_else(|| "unset (Kafka's default, JKS)".into())
        )),
    }
}

fn read_file(key: &str, path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{key}: cannot read {path}: {e}"))
}

fn certificates(key: &str, text: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(normalize_pem(text).as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{key}: bad PEM certificate: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{key}: no PEM certificate found"));
    }
    Ok(certs)
}

/// The CAs the broker's certificate must chain to: the truststore, else the system's.
fn truststore(get: &dyn Fn(&str) -> Option<String>) -> Result<RootCertStore, String> {
    const LOCATION: &str = "ssl.truststore.location";
    const CERTS: &str = "ssl.truststore.certificates";
    let mut roots = RootCertStore::empty();
    let (key, text) = match (get(LOCATION), get(CERTS)) {
        (Some(_), Some(_)) => return Err(format!("set {LOCATION} or {CERTS}, not both")),
        (Some(path), None) => (
            LOCATION,
            require_pem(get, "ssl.truststore.type").and_then(|()| read_file(LOCATION, &path))?,
        ),
        (None, Some(text)) => (
            CERTS,
            require_pem(get, "ssl.truststore.type").map(|()| text)?,
        ),
        (None, None) => {
            let env = std::env::var("SSL_CERT_FILE").ok();
            for path in env
                .iter()
                .map(String::as_str)
                .chain(SYSTEM_CA_FILES.split_whitespace())
            {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                roots.add_parsable_certificates(
                    CertificateDer::pem_slice_iter(text.as_bytes()).flatten(),
                );
                if !roots.is_empty() {
                    return Ok(roots);
                }
            }
            return Err(format!(
                "TLS needs a truststore: set ssl.truststore.type=PEM and {LOCATION} (CA \
                 certificates in PEM) or {CERTS}; no system CA bundle was found either"
            ));
        }
    };
    for (i, c) in certificates(key, &text)?.into_iter().enumerate() {
        roots
            .add(c)
            .map_err(|e| format!("{key}: certificate {} is not a usable CA: {e}", i + 1))?;
    }
    Ok(roots)
}

type KeyStore = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// The client certificate chain and key for mutual TLS, if configured.
fn keystore(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<KeyStore>, String> {
    const LOCATION: &str = "ssl.keystore.location";
    const KEY: &str = "ssl.keystore.key";
    const CHAIN: &str = "ssl.keystore.certificate.chain";
    let (from, key_text, chain_text) = match (get(LOCATION), get(KEY), get(CHAIN)) {
        (None, None, None) => return Ok(None),
        (Some(path), None, None) => {
            let text = read_file(LOCATION, &path)?;
            (LOCATION, text.clone(), text)
        }
        (None, Some(key), Some(chain)) => (KEY, key, chain),
        (Some(_), _, _) => return Err(format!("set {LOCATION} or {KEY} and {CHAIN}, not both")),
        (None, _, _) => return Err(format!("{KEY} and {CHAIN} go together: set both")),
    };
    require_pem(get, "ssl.keystore.type")?;
    if key_text.contains("ENCRYPTED") {
        return Err(format!(
            "{from}: the private key is encrypted, and samsa's CLI reads unencrypted PEM keys \
             only: decrypt it (`openssl pkcs8 -in key.pem -out plain-key.pem`)"
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(normalize_pem(&key_text).as_bytes())
        .map_err(|e| format!("{from}: no PEM private key (PKCS#8, PKCS#1 or SEC1) found: {e}"))?;
    let chain_from = if from == KEY { CHAIN } else { LOCATION };
    Ok(Some((certificates(chain_from, &chain_text)?, key)))
}

/// PEM as a properties file may carry it inline (continued lines are joined, so markers and
/// base64 run together separated by spaces): puts each on a line of its own.
fn normalize_pem(text: &str) -> String {
    static MARKER: OnceLock<regex::Regex> = OnceLock::new();
    let marker = MARKER
        .get_or_init(|| regex::Regex::new(r"-----(?:BEGIN|END) [A-Z0-9 ]+-----").expect("regex"));
    let mut out = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for m in marker.find_iter(text) {
        text[last..m.start()].split_whitespace().for_each(|w| {
            out.push_str(w);
            out.push('\n');
        });
        out.push_str(m.as_str());
        out.push('\n');
        last = m.end();
    }
    text[last..].split_whitespace().for_each(|w| {
        out.push_str(w);
        out.push('\n');
    });
    out
}

/// java.util.Properties escapes in a value: `\\`, `\t`, `\n`, `\r`, `\f`, `\uXXXX`, and any
/// other escaped character as itself.
fn unescape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => out.push_str(&format!("\\u{hex}")),
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// A verifier that checks the chain and signatures but not the host name
/// (`ssl.endpoint.identification.algorithm=`).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

// ---- SASL ----

/// The credentials of `sasl.mechanism` and `sasl.jaas.config`.
fn sasl_login(get: &dyn Fn(&str) -> Option<String>) -> Result<SaslLogin, String> {
    let name = get("sasl.mechanism");
    let scram = match name.as_deref() {
        None | Some("GSSAPI") => {
            return Err(format!(
                "sasl.mechanism is {}: Kerberos is not supported by samsa's CLI; set \
                 sasl.mechanism to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
                if name.is_none() {
                    "unset, so GSSAPI (Kafka's default)"
                } else {
                    "GSSAPI"
                }
            ))
        }
        Some("PLAIN") => None,
        Some("SCRAM-SHA-256") => Some(ScramMechanism::Sha256),
        Some("SCRAM-SHA-512") => Some(ScramMechanism::Sha512),
        Some(n) => {
            return Err(format!(
                "sasl.mechanism={n} is not supported by samsa's CLI: use PLAIN, SCRAM-SHA-256 or \
                 SCRAM-SHA-512 (in capitals)"
            ))
        }
    };
    let text = get("sasl.jaas.config").ok_or_else(|| {
        "sasl.jaas.config is not set: it gives the user and password, e.g. \
         org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" \
         password=\"alice-secret\";"
            .to_string()
    })?;
    let module = jaas::parse(&text)?;
    let (class, mechanism) = match scram {
        None => ("PlainLoginModule", "PLAIN"),
        Some(m) => ("ScramLoginModule", m.name()),
    };
    if !module.class.ends_with(class) {
        let given = &module.class;
        return Err(format!(
            "sasl.jaas.config: {mechanism} needs {class}, not {given}"
        ));
    }
    if module.options.get("tokenauth").is_some_and(|v| v == "true") {
        return Err("sasl.jaas.config: delegation tokens (tokenauth) are not supported".into());
    }
    let option = |o: &str| {
        module
            .options
            .get(o)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or_else(|| format!("sasl.jaas.config: the {o} option is missing or empty"))
    };
    Ok(SaslLogin {
        scram,
        username: option("username")?,
        password: option("password")?,
    })
}

pub use crate::security::sasl::scram::hi;

/// The client's side of one exchange, sans-IO: [`SaslExchange::step`] takes the server's last
/// token and gives the next one to send, `None` once the exchange is complete.
pub struct SaslExchange<'a> {
    login: &'a SaslLogin,
    nonce: String,
    state: ScramState,
}

enum ScramState {
    Start,
    SentFirst { bare: String },
    SentFinal { server_signature: Vec<u8> },
    Done,
}

impl<'a> SaslExchange<'a> {
    pub fn new(login: &'a SaslLogin) -> SaslExchange<'a> {
        use rand::distributions::Alphanumeric;
        use rand::Rng;
        let nonce = rand::thread_rng()
            .sample_iter(&Alphanumeric)
            .take(32)
            .map(char::from);
        SaslExchange::with_nonce(login, nonce.collect())
    }

    fn with_nonce(login: &'a SaslLogin, nonce: String) -> SaslExchange<'a> {
        SaslExchange {
            login,
            nonce,
            state: ScramState::Start,
        }
    }

    /// The next token, from the server's last one (`None` before the first).
    pub fn step(&mut self, server: Option<&[u8]>) -> Result<Option<Vec<u8>>, String> {
        let login = self.login;
        let Some(m) = login.scram else {
            // PLAIN: one message, `authzid NUL user NUL password`, and an empty answer.
            return Ok(match std::mem::replace(&mut self.state, ScramState::Done) {
                ScramState::Start => {
                    Some(format!("\0{}\0{}", login.username, login.password).into_bytes())
                }
                _ => None,
            });
        };
        match std::mem::replace(&mut self.state, ScramState::Done) {
            ScramState::Start => {
                let user = login.username.replace('=', "=3D").replace(',', "=2C");
                let bare = format!("n={user},r={}", self.nonce);
                let first = format!("n,,{bare}").into_bytes();
                self.state = ScramState::SentFirst { bare };
                Ok(Some(first))
            }
            ScramState::SentFirst { bare } => {
                let (token, server_signature) = self.client_final(m, &bare, server)?;
                self.state = ScramState::SentFinal { server_signature };
                Ok(Some(token))
            }
            ScramState::SentFinal { server_signature } => {
                let text = std::str::from_utf8(server.unwrap_or_default()).unwrap_or("");
                if let Some(e) = text.strip_prefix("e=") {
                    return Err(format!("the broker ended the SCRAM exchange: {e}"));
                }
                let theirs = text.strip_prefix("v=").and_then(|v| B64.decode(v).ok());
                if theirs.as_deref() != Some(&server_signature[..]) {
                    return Err(
                        "the broker's SCRAM signature is wrong: it does not know this \
                                user's credential (is it the broker you meant?)"
                            .into(),
                    );
                }
                Ok(None)
            }
            ScramState::Done => Ok(None),
        }
    }

    /// client-final-message for the server-first one, and the signature the server must send.
    fn client_final(
        &self,
        m: ScramMechanism,
        bare: &str,
        server: Option<&[u8]>,
    ) -> Result<(Vec<u8>, Vec<u8>), String> {
        let bad = |why: &str| format!("bad SCRAM server-first message: {why}");
        let server_first =
            std::str::from_utf8(server.unwrap_or_default()).map_err(|_| bad("not UTF-8"))?;
        let (mut nonce, mut salt, mut iterations) = (None, None, None);
        for attr in server_first.split(',') {
            match attr.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = B64.decode(v).ok(),
                Some(("i", v)) => iterations = v.parse::<i32>().ok(),
                Some(("m", _)) => return Err(bad("it has a mandatory extension")),
                _ => {}
            }
        }
        let nonce = nonce
            .filter(|n| n.len() > self.nonce.len() && n.starts_with(&self.nonce))
            .ok_or_else(|| bad("its nonce does not extend the client's"))?;
        let salt = salt
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad("no salt"))?;
        let iterations = iterations.ok_or_else(|| bad("no iteration count"))?;
        if !(SCRAM_ITERATIONS_MIN..=SCRAM_ITERATIONS_MAX).contains(&iterations) {
            return Err(bad(&format!(
                "{iterations} iterations is outside {SCRAM_ITERATIONS_MIN}..={SCRAM_ITERATIONS_MAX}"
            )));
        }
        let salted = hi(m, self.login.password.as_bytes(), &salt, iterations as u32);
        let client_key = m.hmac(&salted, b"Client Key");
        let stored_key = m.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{bare},{server_first},{without_proof}");
        let signature = m.hmac(&stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = m.hmac(&salted, b"Server Key");
        Ok((
            format!("{without_proof},p={}", B64.encode(proof)).into_bytes(),
            m.hmac(&server_key, auth.as_bytes()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(scram: Option<ScramMechanism>, user: &str, password: &str) -> SaslLogin {
        let (username, password) = (user.into(), password.into());
        SaslLogin {
            scram,
            username,
            password,
        }
    }

    #[test]
    fn the_scram_client_follows_rfc_7677s_example_and_checks_the_server() {
        let alice = login(Some(ScramMechanism::Sha256), "user", "pencil");
        let run = |server_first: &str| {
            let mut x = SaslExchange::with_nonce(&alice, "rOprNGfwEbeRWgbNEkqO".into());
            let first = x.step(None).unwrap().unwrap();
            assert_eq!(first, b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
            x.step(Some(server_first.as_bytes()))
                .map(|t| (x, t.unwrap()))
        };
        let sf = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,\
                  i=4096";
        let (mut x, fin) = run(sf).unwrap();
        assert_eq!(
            String::from_utf8(fin).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        let server_final = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
        assert_eq!(x.step(Some(server_final)), Ok(None));
        let e = run(sf).unwrap().0.step(Some(b"v=AAAA")).unwrap_err();
        assert!(e.contains("signature is wrong"), "{e}");
        let i = "rOprNGfwEbeRWgbNEkqOx";
        for (bad, says) in [
            ("r=someoneElse,s=cw==,i=4096".to_string(), "nonce"),
            (format!("r={i},s=cw==,i=1"), "iterations"),
            (format!("r={i},i=4096"), "no salt"),
            (format!("m=x,r={i},s=cw==,i=4096"), "mandatory"),
        ] {
            let e = run(&bad).map(|_| ()).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // User names escape ',' and '='; PLAIN is one message.
        let odd = login(Some(ScramMechanism::Sha512), "a,b=c", "p");
        let first = SaslExchange::with_nonce(&odd, "n0nce".into())
            .step(None)
            .unwrap();
        assert_eq!(first.unwrap(), b"n,,n=a=2Cb=3Dc,r=n0nce");
        let plain = login(None, "alice", "secret");
        let mut x = SaslExchange::new(&plain);
        assert_eq!(x.step(None).unwrap().unwrap(), b"\0alice\0secret");
        assert_eq!(x.step(Some(b"")), Ok(None));
    }

    #[test]
    fn a_command_config_is_read_as_kafkas_clients_read_it() {
        let key = rcgen::KeyPair::generate().unwrap();
        let ca = rcgen::CertificateParams::new(vec!["ca".to_string()]).unwrap();
        let pem = ca.self_signed(&key).unwrap().pem();
        // Inline PEM continued over lines, a JAAS config with a Java escape, a harmless key.
        let inline = pem.trim_end().replace('\n', " \\\n  ");
        let text = format!(
            "# admin\nsecurity.protocol=sasl_ssl\nssl.truststore.type=PEM\n\
             ssl.truststore.certificates={inline}\nssl.endpoint.identification.algorithm=\n\
             sasl.mechanism=SCRAM-SHA-512\nclient.id=me\nsasl.jaas.config=org.apache.kafka.\
             common.security.scram.ScramLoginModule required username=\"alice\" \
             password=\"p\\u0041\";"
        );
        let s = Security::parse(&text).unwrap();
        assert_eq!(s.protocol, SecurityProtocol::SaslSsl);
        assert!(s.tls.is_some());
        let l = s.sasl().unwrap();
        assert_eq!(
            (l.mechanism(), l.username.as_str(), l.password.as_str()),
            ("SCRAM-SHA-512", "alice", "pA")
        );
        assert_eq!(
            s.notes(),
            ["ignoring client.id: samsa's CLI does not use it"]
        );
        let p = Security::parse("ssl.truststore.location=x\nsasl.mechanism=PLAIN\n").unwrap();
        assert_eq!(
            (p.protocol, p.tls.is_none(), p.notes().len()),
            (SecurityProtocol::Plaintext, true, 2)
        );
    }

    #[test]
    fn what_the_cli_cannot_honour_is_refused_by_name() {
        let sasl = "security.protocol=SASL_PLAINTEXT\n";
        let ssl = "security.protocol=SSL\n";
        let scram = "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule \
                     required username=\"alice\" password=\"s3cret\";\n";
        let no_password = "sasl.jaas.config=a.ScramLoginModule required username=x;";
        for (text, says) in [
            (sasl.to_string(), "unset, so GSSAPI (Kafka's default)"),
            (
                format!("{sasl}sasl.mechanism=GSSAPI"),
                "Kerberos is not supported",
            ),
            (
                format!("{sasl}sasl.mechanism=OAUTHBEARER"),
                "is not supported",
            ),
            (
                format!("{sasl}sasl.mechanism=PLAIN"),
                "sasl.jaas.config is not set",
            ),
            (
                format!("{sasl}sasl.mechanism=PLAIN\n{scram}"),
                "PLAIN needs PlainLoginModule",
            ),
            (
                format!("{sasl}sasl.mechanism=SCRAM-SHA-256\n{no_password}"),
                "password option",
            ),
            ("security.protocol=TLS".into(), "is not PLAINTEXT, SSL"),
            (
                "ssl.engine.factory.class=x.Y".into(),
                "cannot load Java classes",
            ),
            (
                "ssl.cipher.suites=X".into(),
                "ssl.cipher.suites is not a security setting",
            ),
            (
                format!("{ssl}ssl.truststore.location=/ca.jks"),
                "unset (Kafka's default, JKS)",
            ),
            (
                format!("{ssl}ssl.truststore.type=PEM\nssl.truststore.location=/nope"),
                "cannot read /nope",
            ),
            (
                format!("{ssl}ssl.endpoint.identification.algorithm=ldaps"),
                "only https",
            ),
            (format!("{ssl}ssl.key.password=x"), "unencrypted keys"),
            (
                format!("{ssl}ssl.enabled.protocols=TLSv1.1"),
                "TLSv1.1 is not offered",
            ),
            (format!("{ssl}ssl.keystore.key=k"), "go together"),
        ] {
            let e = Security::parse(&text)
                .err()
                .unwrap_or_else(|| panic!("{text}: accepted"));
            assert!(e.contains(says) && !e.contains("s3cret"), "{text}: {e}");
        }
    }
}
