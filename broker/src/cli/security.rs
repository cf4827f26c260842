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
//! - The SASL credentials ([`Credentials`]) go to the broker's own sans-IO SASL client
//!   (`security::sasl::client`), whose tokens the connection (`client.rs`) carries in
//!   SaslHandshake v1 and SaslAuthenticate after ApiVersions, as Kafka's clients do: PLAIN
//!   (RFC 4616) or SCRAM-SHA-256/512 (RFC 5802/7677; the server's signature is checked, so a
//!   server that does not know the credential cannot pass for the broker).

use std::collections::BTreeMap;
use std::io;
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::{CertificateError, ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::config::listeners::SecurityProtocol;
use crate::config::parse_properties;
use crate::security::sasl::client::Credentials;
use crate::security::sasl::Mechanism;
use crate::security::tls::normalize_pem;

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
    sasl: Option<Credentials>,
    notes: Vec<String>,
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

    /// SASL_PLAINTEXT with these credentials (the console signs in as its user this way).
    pub fn sasl_plaintext(credentials: Credentials) -> Security {
        Security {
            protocol: SecurityProtocol::SaslPlaintext,
            tls: None,
            sasl: Some(credentials),
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

    pub fn sasl(&self) -> Option<&Credentials> {
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
            .with_custom_certificate_verifier(Arc::new(crate::security::tls::AnyName(inner)))
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

// ---- SASL ----

/// The credentials of `sasl.mechanism` and `sasl.jaas.config` (the SASL client itself is the
/// broker's own, `security::sasl::client`).
fn sasl_login(get: &dyn Fn(&str) -> Option<String>) -> Result<Credentials, String> {
    let name = get("sasl.mechanism");
    let mechanism = match name.as_deref() {
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
        Some(n) => match Mechanism::parse(n).filter(|m| *m != Mechanism::OAuthBearer) {
            Some(m) => m,
            None => {
                return Err(format!(
                    "sasl.mechanism={n} is not supported by samsa's CLI: use PLAIN, \
                     SCRAM-SHA-256 or SCRAM-SHA-512 (in capitals)"
                ))
            }
        },
    };
    let text = get("sasl.jaas.config").ok_or_else(|| {
        "sasl.jaas.config is not set: it gives the user and password, e.g. \
         org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" \
         password=\"alice-secret\";"
            .to_string()
    })?;
    Credentials::from_jaas(mechanism, &text).map_err(|e| format!("sasl.jaas.config: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            s.sasl(),
            Some(&Credentials::new(Mechanism::ScramSha512, "alice", "pA"))
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
                "PLAIN needs the login module PlainLoginModule",
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
