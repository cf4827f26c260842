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
//!   [`SocketRead`]/[`SocketWrite`] traits as plaintext sockets, so the connection code does
//!   not know whether it speaks TLS.
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

use std::cell::RefCell;
use std::io::{self, BufRead as _, Write as _};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use p12_keystore::{KeyStore, KeyStoreEntry};
use regex::Regex;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConfig, RootCertStore, ServerConfig, ServerConnection,
    SupportedCipherSuite, SupportedProtocolVersion,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use samsa_protocol::chunk::truncated;
use samsa_protocol::FileRange;
use x509_parser::der_parser::asn1_rs::{Any, Tag};
use x509_parser::x509::AttributeTypeAndValue;

use crate::net::transport::{SocketRead, SocketWrite};

/// Ciphertext asked of the socket per read (several records).
const CIPHER_READ_BYTES: usize = 64 * 1024;
/// Plaintext encrypted per step; the ciphertext buffer is flushed once it holds this much.
const PLAINTEXT_PIECE: usize = 64 * 1024;
/// Bytes of a file range read into memory at a time.
const FILE_PIECE: usize = 256 * 1024;

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

    /// The store type `key` names: PEM or PKCS12; anything else (Kafka's default is JKS) is
    /// refused, saying how to convert.
    fn store_type(&self, key: &str, store: &str) -> Result<StoreType, String> {
        let shown = match self.get(key) {
            Some(v) if v.trim().eq_ignore_ascii_case("PEM") => return Ok(StoreType::Pem),
            Some(v) if v.trim().eq_ignore_ascii_case("PKCS12") => return Ok(StoreType::Pkcs12),
            Some(v) => format!("`{}`", v.trim()),
            None => "unset (Kafka's default, JKS)".to_string(),
        };
        let msg = format!(
            "is {shown}, and Samsa reads PEM and PKCS12 {store}s: set {key}=PEM or PKCS12 \
             (convert a JKS one with `keytool -importkeystore -srckeystore store.jks \
             -destkeystore store.p12 -deststoretype PKCS12`)"
        );
        Err(self.fail(key, msg))
    }

    /// Opens the PKCS12 store at `path` (the value of `key`) with `password_key`'s password.
    fn pkcs12(&self, key: &str, path: &str, password_key: &str) -> Result<KeyStore, String> {
        let bytes =
            std::fs::read(path).map_err(|e| self.fail(key, format!("cannot read {path}: {e}")))?;
        let password = self.get(password_key).unwrap_or_default();
        KeyStore::from_pkcs12(&bytes, &password).map_err(|e| {
            self.fail(
                key,
                format!(
                    "cannot open the PKCS12 store {path} ({e}): a wrong {password_key}, or an \
                     encryption this reader lacks (it reads AES (PBES2), 3DES and RC2 stores; \
                     convert others with `openssl pkcs12 -in store.p12 -nodes -out store.pem` \
                     and use PEM)"
                ),
            )
        })
    }

    fn read(&self, key: &str, path: &str) -> Result<String, String> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => Err(self.fail(key, format!("cannot read {path}: {e}"))),
        }
    }

    /// The certificates of PEM `text` (the value of `key`, or the file it names): at least one.
    fn certs(&self, key: &str, text: &str) -> Result<Vec<CertificateDer<'static>>, String> {
        let certs = CertificateDer::pem_slice_iter(normalize_pem(text).as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(key, format!("bad PEM certificate: {e}")))?;
        if certs.is_empty() {
            return Err(self.fail(key, "no PEM certificate (BEGIN CERTIFICATE) found"));
        }
        Ok(certs)
    }
}

/// The ring provider restricted to `ssl.cipher.suites`, and the versions of
/// `ssl.enabled.protocols` that rustls offers (and that some enabled suite can serve).
fn protocols_and_suites(
    k: &Keys<'_>,
    warnings: &mut Vec<String>,
) -> Result<(Arc<CryptoProvider>, Vec<&'static SupportedProtocolVersion>), String> {
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(list) = k.get("ssl.cipher.suites") {
        let offered: Vec<String> = provider.cipher_suites.iter().map(iana_name).collect();
        let (mut chosen, mut unknown) = (Vec::<SupportedCipherSuite>::new(), Vec::new());
        for name in split_list(&list) {
            match offered.iter().position(|o| o.eq_ignore_ascii_case(name)) {
                Some(i) if !chosen.contains(&provider.cipher_suites[i]) => {
                    chosen.push(provider.cipher_suites[i])
                }
                Some(_) => {}
                None => unknown.push(name.to_string()),
            }
        }
        let offered = offered.join(", ");
        if chosen.is_empty() {
            let msg = format!("none of {unknown:?} is a suite rustls offers; it offers {offered}");
            return Err(k.fail("ssl.cipher.suites", msg));
        }
        if !unknown.is_empty() {
            let msg = format!("ignoring {unknown:?}, not offered by rustls (it offers {offered})");
            warnings.push(k.fail("ssl.cipher.suites", msg));
        }
        provider.cipher_suites = chosen;
    }

    let list = k.get("ssl.enabled.protocols");
    let mut versions: Vec<&'static SupportedProtocolVersion> = Vec::new();
    let mut unsupported = Vec::new();
    for name in split_list(list.as_deref().unwrap_or("TLSv1.2,TLSv1.3")) {
        let v = match name {
            _ if name.eq_ignore_ascii_case("TLSv1.2") => &rustls::version::TLS12,
            _ if name.eq_ignore_ascii_case("TLSv1.3") => &rustls::version::TLS13,
            _ => {
                unsupported.push(name.to_string());
                continue;
            }
        };
        if !versions.iter().any(|x| x.version == v.version) {
            versions.push(v);
        }
    }
    if versions.is_empty() && unsupported.is_empty() {
        return Err(k.fail(
            "ssl.enabled.protocols",
            "is empty: list TLSv1.2 and/or TLSv1.3",
        ));
    }
    if !unsupported.is_empty() {
        let msg = format!(
            "rustls does not offer {unsupported:?} (older versions are insecure and not \
             implemented), only TLSv1.2 and TLSv1.3"
        );
        if versions.is_empty() {
            return Err(k.fail("ssl.enabled.protocols", msg));
        }
        warnings.push(k.fail("ssl.enabled.protocols", format!("ignored: {msg}")));
    }
    // A version no enabled suite can serve would only fail handshakes: leave it out.
    versions.retain(|v| {
        let served = provider
            .cipher_suites
            .iter()
            .any(|s| s.version().version == v.version);
        if !served {
            let msg = format!(
                "ignoring {:?}: none of ssl.cipher.suites is for it",
                v.version
            );
            warnings.push(k.fail("ssl.enabled.protocols", msg));
        }
        served
    });
    if versions.is_empty() {
        return Err(k.fail(
            "ssl.cipher.suites",
            "no suite is for an enabled protocol version",
        ));
    }
    Ok((Arc::new(provider), versions))
}

/// The IANA (and JSSE) name of a suite: rustls spells TLS 1.3 suites `TLS13_...`.
fn iana_name(suite: &SupportedCipherSuite) -> String {
    let name = format!("{:?}", suite.suite());
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name,
    }
}

/// The items of a comma-separated list, trimmed, empty ones left out.
fn split_list(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// The store formats Samsa reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StoreType {
    Pem,
    Pkcs12,
}

/// A certificate chain, its private key, and the config key they came from.
type Keystore = (
    Vec<CertificateDer<'static>>,
    PrivateKeyDer<'static>,
    &'static str,
);

/// The broker's certificate chain and private key, and the key they came from.
fn keystore(k: &Keys<'_>, warnings: &mut Vec<String>) -> Result<Keystore, String> {
    const LOCATION: &str = "ssl.keystore.location";
    const KEY: &str = "ssl.keystore.key";
    const CHAIN: &str = "ssl.keystore.certificate.chain";
    let (key_from, key_text, chain_from, chain_text) =
        match (k.get(LOCATION), k.get(KEY), k.get(CHAIN)) {
            (Some(path), None, None) => {
                if k.store_type("ssl.keystore.type", "keystore")? == StoreType::Pkcs12 {
                    return pkcs12_keystore(k, &path);
                }
                let text = k.read(LOCATION, &path)?;
                (LOCATION, text.clone(), LOCATION, text)
            }
            (None, Some(key), Some(chain)) => {
                if k.store_type("ssl.keystore.type", "keystore")? != StoreType::Pem {
                    return Err(k.fail(
                        KEY,
                        "inline keys and chains are PEM: set ssl.keystore.type=PEM",
                    ));
                }
                (KEY, key, CHAIN, chain)
            }
            (Some(_), _, _) => {
                let msg = "set either it or ssl.keystore.key and ssl.keystore.certificate.chain";
                return Err(k.fail(LOCATION, msg));
            }
            (None, None, None) => {
                return Err(k.fail(
                    LOCATION,
                    "a TLS listener needs a certificate and key: set ssl.keystore.type=PEM and \
                     ssl.keystore.location (a PEM file with the private key and the \
                     certificate chain), or ssl.keystore.key and ssl.keystore.certificate.chain",
                ))
            }
            (None, _, _) => return Err(k.fail(KEY, format!("goes with {CHAIN}: set both"))),
        };
    if key_text.contains("ENCRYPTED PRIVATE KEY") || key_text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(k.fail(
            key_from,
            "the private key is encrypted, and Samsa reads unencrypted PEM keys only \
             (ssl.key.password cannot be honoured): decrypt it with `openssl pkcs8 -in key.pem \
             -out plain-key.pem`, protect the file by its permissions, and unset ssl.key.password",
        ));
    }
    if k.get("ssl.key.password").is_some() {
        warnings.push(k.fail(
            "ssl.key.password",
            "ignored: the private key is not encrypted",
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(normalize_pem(&key_text).as_bytes()).map_err(|e| {
        k.fail(
            key_from,
            format!("no PEM private key (PKCS#8, PKCS#1 or SEC1) found: {e}"),
        )
    })?;
    Ok((k.certs(chain_from, &chain_text)?, key, key_from))
}

/// The private key and chain of a PKCS12 keystore: Java's and OpenSSL's stores protect the key
/// with the store's password (Kafka's `ssl.keystore.password`); a different `ssl.key.password`
/// is refused, as this reader uses one password for both.
fn pkcs12_keystore(k: &Keys<'_>, path: &str) -> Result<Keystore, String> {
    const LOCATION: &str = "ssl.keystore.location";
    if k.get("ssl.keystore.password").is_none() {
        return Err(k.fail(
            "ssl.keystore.password",
            "a PKCS12 keystore needs its password (Kafka's ssl.keystore.password)",
        ));
    }
    if let Some(kp) = k.get("ssl.key.password") {
        if Some(kp) != k.get("ssl.keystore.password") {
            return Err(k.fail(
                "ssl.key.password",
                "differs from ssl.keystore.password, and Samsa reads PKCS12 keystores whose key \
                 is protected by the store's password (as keytool and openssl write them): \
                 unset it",
            ));
        }
    }
    let store = k.pkcs12(LOCATION, path, "ssl.keystore.password")?;
    let (_, chain) = store.private_key_chain().ok_or_else(|| {
        k.fail(
            LOCATION,
            format!("the PKCS12 store {path} holds no private key"),
        )
    })?;
    let certs: Vec<CertificateDer<'static>> = chain
        .chain()
        .iter()
        .map(|c| CertificateDer::from(c.as_der().to_vec()))
        .collect();
    if certs.is_empty() {
        return Err(k.fail(
            LOCATION,
            format!("the PKCS12 store {path} holds no certificate for its key"),
        ));
    }
    let key = PrivateKeyDer::Pkcs8(chain.key().to_vec().into());
    if let Err(e) = rustls::crypto::ring::sign::any_supported_type(&key) {
        return Err(k.fail(
            LOCATION,
            format!(
                "the private key of the PKCS12 store {path} is unusable ({e}); an EC key as \
                 Java's keytool writes it lacks the public key that ring needs: re-encode it \
                 with `openssl pkcs12 -in store.p12 -nodes -nocerts | openssl ec -out key.pem` \
                 (it adds the public key), put the chain after it (`openssl pkcs12 -in \
                 store.p12 -nokeys`) and use a PEM keystore, or use an RSA key"
            ),
        ));
    }
    Ok((certs, key, LOCATION))
}

/// The CA certificates client certificates are verified against, if any are configured.
fn truststore(k: &Keys<'_>) -> Result<Option<RootCertStore>, String> {
    const LOCATION: &str = "ssl.truststore.location";
    const CERTS: &str = "ssl.truststore.certificates";
    let (location, inline) = (k.get(LOCATION), k.get(CERTS));
    let store_type = match (&location, &inline) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => return Err(k.fail(LOCATION, format!("set either it or {CERTS}"))),
        _ => k.store_type("ssl.truststore.type", "truststore")?,
    };
    if store_type == StoreType::Pkcs12 {
        let Some(path) = location else {
            return Err(k.fail(
                CERTS,
                "inline certificates are PEM: set ssl.truststore.type=PEM",
            ));
        };
        let store = k.pkcs12(LOCATION, &path, "ssl.truststore.password")?;
        let mut roots = RootCertStore::empty();
        for (alias, entry) in store.entries() {
            if let KeyStoreEntry::Certificate(c) = entry {
                roots
                    .add(CertificateDer::from(c.as_der().to_vec()))
                    .map_err(|e| {
                        k.fail(
                            LOCATION,
                            format!("certificate {alias} is not a usable CA: {e}"),
                        )
                    })?;
            }
        }
        if roots.is_empty() {
            return Err(k.fail(
                LOCATION,
                format!("the PKCS12 store {path} holds no trusted certificate"),
            ));
        }
        return Ok(Some(roots));
    }
    let (key, text) = match location {
        Some(path) => (LOCATION, k.read(LOCATION, &path)?),
        None => (CERTS, inline.unwrap_or_default()),
    };
    let mut roots = RootCertStore::empty();
    for (i, c) in k.certs(key, &text)?.into_iter().enumerate() {
        let bad = |e| {
            k.fail(
                key,
                format!("certificate {} is not a usable CA: {e}", i + 1),
            )
        };
        roots.add(c).map_err(bad)?;
    }
    Ok(Some(roots))
}

/// PEM as a properties file may carry it inline: on one line (continued lines are joined),
/// markers and base64 separated by spaces. Puts markers and base64 on lines of their own.
pub(crate) fn normalize_pem(text: &str) -> String {
    static MARKER: OnceLock<Regex> = OnceLock::new();
    let marker =
        MARKER.get_or_init(|| Regex::new(r"-----(?:BEGIN|END) [A-Z0-9 ]+-----").expect("regex"));
    let mut out = String::with_capacity(text.len() + 16);
    let body = |s: &str, out: &mut String| {
        for word in s.split_whitespace() {
            out.push_str(word);
            out.push('\n');
        }
    };
    let mut last = 0;
    for m in marker.find_iter(text) {
        body(&text[last..m.start()], &mut out);
        out.push_str(m.as_str());
        out.push('\n');
        last = m.end();
    }
    body(&text[last..], &mut out);
    out
}

// ---- this node as a client (connections to other nodes) ----

/// TLS for this node's own connections to a listener of other nodes (replica fetchers,
/// transaction markers, controllers), from that listener's `ssl.*` keys as Kafka's inter-broker
/// client reads them: the peer's certificate verified against `ssl.truststore.*` and, unless
/// `ssl.endpoint.identification.algorithm` is empty, for the host name or address the peer was
/// reached at (Kafka's default, `https`); this node's `ssl.keystore.*`, when set, presented as
/// its client certificate (for listeners with `ssl.client.auth`).
pub fn client_config(
    listener: &str,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<(Arc<ClientConfig>, Vec<String>), String> {
    let k = Keys { listener, get };
    let mut warnings = Vec::new();
    let (provider, versions) = protocols_and_suites(&k, &mut warnings)?;
    let roots = truststore(&k)?.ok_or_else(|| {
        k.fail(
            "ssl.truststore.location",
            "this node connects to other nodes on this listener and verifies their \
             certificates against a truststore: set ssl.truststore.type=PEM and \
             ssl.truststore.location (or ssl.truststore.certificates)",
        )
    })?;
    let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .map_err(|e| k.fail("ssl.truststore.location", e))?;
    let algorithm = (k.get)("ssl.endpoint.identification.algorithm");
    let check_name = match algorithm.as_deref().map(str::trim) {
        None => true,
        Some(a) if a.eq_ignore_ascii_case("https") => true,
        Some("") => false,
        Some(a) => {
            let msg = format!("`{a}` is not one of https or empty (no host name check)");
            return Err(k.fail("ssl.endpoint.identification.algorithm", msg));
        }
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| k.fail("ssl.enabled.protocols", e))?;
    let builder = if check_name {
        builder.with_webpki_verifier(webpki)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyName(webpki)))
    };
    let has_keystore = ["ssl.keystore.location", "ssl.keystore.key"]
        .iter()
        .any(|key| k.get(key).is_some());
    let mut config = if has_keystore {
        let (chain, key, key_from) = keystore(&k, &mut warnings)?;
        builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| k.fail(key_from, format!("unusable key or certificate: {e}")))?
    } else {
        builder.with_no_client_auth()
    };
    config.alpn_protocols.clear();
    Ok((Arc::new(config), warnings))
}

/// A server certificate verifier that checks the chain and signatures but not the name
/// (`ssl.endpoint.identification.algorithm=`, empty); also the admin CLI's.
#[derive(Debug)]
pub struct AnyName(pub Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls_pki_types::ServerName<'_>,
        ocsp: &[u8],
        now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

// ---- principals ----

/// The principal of a client: `User:ANONYMOUS` without a certificate, else `User:` and the
/// subject of its certificate (RFC 2253, as Java prints it) mapped by the listener's
/// `ssl.principal.mapping.rules`. An error when no rule matches (Kafka refuses the client).
pub fn principal_of(
    settings: &TlsSettings,
    peer_certs: Option<&[CertificateDer<'_>]>,
) -> Result<String, String> {
    let Some(cert) = peer_certs.and_then(|c| c.first()) else {
        return Ok("User:ANONYMOUS".to_string());
    };
    let dn = subject_dn(cert)?;
    Ok(format!("User:{}", settings.mapper.map(&dn)?))
}

/// The subject of a DER certificate as Java's `X500Principal.getName()` (RFC 2253) prints it:
/// most specific RDN first, RFC 2253 keywords (CN, L, ST, O, OU, C, STREET, DC, UID), other
/// attribute types as dotted OIDs with `#`-hex values.
pub fn subject_dn(cert: &[u8]) -> Result<String, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert)
        .map_err(|e| format!("cannot parse the client certificate: {e}"))?;
    let rdns: Vec<String> = cert
        .subject()
        .iter_rdn()
        .map(|rdn| rdn.iter().map(ava_rfc2253).collect::<Vec<_>>().join("+"))
        .collect();
    Ok(rdns.into_iter().rev().collect::<Vec<_>>().join(","))
}

/// One attribute as `type=value`, the way Java's RFC 2253 output writes it.
fn ava_rfc2253(ava: &AttributeTypeAndValue<'_>) -> String {
    #[rustfmt::skip]
    const KEYWORDS: [(&str, &str); 9] = [
        ("2.5.4.3", "CN"), ("2.5.4.6", "C"), ("2.5.4.7", "L"), ("2.5.4.8", "ST"),
        ("2.5.4.9", "STREET"), ("2.5.4.10", "O"), ("2.5.4.11", "OU"),
        ("0.9.2342.19200300.100.1.25", "DC"), ("0.9.2342.19200300.100.1.1", "UID"),
    ];
    // The types Java prints as strings (their bytes decoded as UTF-8, whatever the type).
    #[rustfmt::skip]
    const STRINGS: [Tag; 6] = [
        Tag::PrintableString, Tag::T61String, Tag::Ia5String, Tag::GeneralString,
        Tag::BmpString, Tag::Utf8String,
    ];
    let oid = ava.attr_type().to_id_string();
    let keyword = KEYWORDS.iter().find(|(o, _)| *o == oid).map(|(_, k)| *k);
    let v = ava.attr_value();
    match keyword {
        Some(k)
            if v.header.is_universal() && v.header.is_primitive() && STRINGS.contains(&v.tag()) =>
        {
            format!("{k}={}", escape_rfc2253(&String::from_utf8_lossy(v.data)))
        }
        k => {
            let hex: String = der_of(v).iter().map(|b| format!("{b:02x}")).collect();
            format!("{}=#{hex}", k.unwrap_or(&oid))
        }
    }
}

/// Escapes an attribute value as Java does: `,=+<>#;"\` behind a backslash, NUL as `\00`,
/// leading and trailing spaces (and carriage returns) behind a backslash each.
fn escape_rfc2253(value: &str) -> String {
    let mut chars: Vec<char> = Vec::with_capacity(value.len());
    for c in value.chars() {
        match c {
            ',' | '=' | '+' | '<' | '>' | '#' | ';' | '"' | '\\' => chars.extend(['\\', c]),
            '\0' => chars.extend(['\\', '0', '0']),
            c => chars.push(c),
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = chars.iter().take_while(|c| blank(c)).count();
    let trail = chars.len() - chars.iter().rev().take_while(|c| blank(c)).count();
    let mut out = String::with_capacity(chars.len() + 4);
    for (i, c) in chars.into_iter().enumerate() {
        if i < lead || i >= trail.max(lead) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The DER encoding of a value: identifier octets (kept by the parser), length, contents.
fn der_of(v: &Any<'_>) -> Vec<u8> {
    let mut out = v
        .header
        .raw_tag()
        .map_or_else(|| vec![v.tag().0 as u8], <[u8]>::to_vec);
    let len = v.data.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(v.data);
    out
}

/// Kafka's `ssl.principal.mapping.rules`: a list of `RULE:pattern/replacement/` (optionally
/// followed by `L` or `U` to lower- or upper-case the result) and `DEFAULT` (the name
/// unchanged), separated by commas or newlines. The first rule whose pattern matches the
/// whole name applies; `replacement` follows Java's syntax (`$1`, `${name}`, `\` escapes).
#[derive(Clone, Debug)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
    text: String,
}

#[derive(Clone, Debug)]
enum Rule {
    Default,
    Map(MapRule),
}

#[derive(Clone, Debug)]
struct MapRule {
    /// The pattern anchored at both ends: Java's `matches()`.
    whole: Regex,
    /// The pattern as written, for the replacement (Java's `replaceAll`).
    find: Regex,
    replacement: Vec<Piece>,
    case: Case,
}

#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    Group(usize),
    Named(String),
}

#[derive(Clone, Copy, Debug)]
enum Case {
    Keep,
    Lower,
    Upper,
}

impl PrincipalMapper {
    pub fn parse(text: &str) -> Result<PrincipalMapper, String> {
        // One rule (or none: empty rules are ignored, as Kafka does) and the separator after it.
        static RULE: OnceLock<Regex> = OnceLock::new();
        let rule = RULE.get_or_init(|| {
            // A pattern or a replacement: up to an unescaped slash.
            let part = r"((?:\\[^\n]|[^\\/])*)";
            let rule = format!(r"(?:(DEFAULT)|RULE:{part}/{part}/([LU]?))?");
            Regex::new(&format!(r"\A[^\S\n]*{rule}[^\S\n]*(?:[,\n]|\z)")).expect("regex")
        });
        let mut rules = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let Some(c) = rule.captures(rest) else {
                let bad = rest.split([',', '\n']).next().unwrap_or(rest).trim();
                return Err(format!(
                    "invalid rule `{bad}`: rules are DEFAULT or RULE:pattern/replacement/ \
                     (optionally followed by L or U), separated by commas or newlines"
                ));
            };
            if c.get(1).is_some() {
                rules.push(Rule::Default);
            } else if let (Some(pattern), Some(replacement)) = (c.get(2), c.get(3)) {
                let case = match c.get(4).map(|m| m.as_str()) {
                    Some("L") => Case::Lower,
                    Some("U") => Case::Upper,
                    _ => Case::Keep,
                };
                rules.push(Rule::map(pattern.as_str(), replacement.as_str(), case)?);
            }
            let end = c.get(0).expect("group 0").end();
            debug_assert!(end > 0, "a match on a non-empty rest consumes something");
            rest = &rest[end..];
        }
        if rules.is_empty() {
            return Err("no rules (DEFAULT keeps the certificate's name as it is)".into());
        }
        Ok(PrincipalMapper {
            rules,
            text: text.trim().to_string(),
        })
    }

    /// The name `dn` maps to; an error if no rule applies.
    pub fn map(&self, dn: &str) -> Result<String, String> {
        for rule in &self.rules {
            if let Some(name) = rule.apply(dn) {
                return Ok(name);
            }
        }
        Err(format!(
            "no rule of ssl.principal.mapping.rules ({}) applies to the client certificate's \
             subject `{dn}`",
            self.text
        ))
    }
}

impl Rule {
    fn map(pattern: &str, replacement: &str, case: Case) -> Result<Rule, String> {
        let bad = |e: regex::Error| format!("rule pattern `{pattern}`: {e}");
        let find = Regex::new(pattern).map_err(bad)?;
        let whole = Regex::new(&format!("^(?:{pattern})$")).map_err(bad)?;
        let replacement = parse_replacement(replacement, &find)
            .map_err(|e| format!("rule replacement `{replacement}`: {e}"))?;
        Ok(Rule::Map(MapRule {
            whole,
            find,
            replacement,
            case,
        }))
    }

    fn apply(&self, dn: &str) -> Option<String> {
        let Rule::Map(MapRule {
            whole,
            find,
            replacement,
            case,
        }) = self
        else {
            return Some(dn.to_string());
        };
        if !whole.is_match(dn) {
            return None;
        }
        // Java's replaceAll: every match from the left; after an empty match the search
        // resumes one character later, and an empty match may follow a non-empty one.
        let mut out = String::new();
        let (mut copied, mut from) = (0, 0);
        while from <= dn.len() {
            let Some(caps) = find.captures_at(dn, from) else {
                break;
            };
            let m = caps.get(0).expect("group 0");
            out.push_str(&dn[copied..m.start()]);
            for piece in replacement {
                match piece {
                    Piece::Text(t) => out.push_str(t),
                    Piece::Group(g) => out.push_str(caps.get(*g).map_or("", |c| c.as_str())),
                    Piece::Named(n) => out.push_str(caps.name(n).map_or("", |c| c.as_str())),
                }
            }
            copied = m.end();
            from = if m.is_empty() {
                m.end() + dn[m.end()..].chars().next().map_or(1, char::len_utf8)
            } else {
                m.end()
            };
        }
        out.push_str(&dn[copied..]);
        Some(match case {
            Case::Keep => out,
            Case::Lower => out.to_lowercase(),
            Case::Upper => out.to_uppercase(),
        })
    }
}

/// A Java replacement string: `\x` is a literal x, `$n` group n (more digits while such a
/// group exists), `${name}` a named group. As in Kafka, `$n` beyond the pattern's groups is
/// literal text when the pattern has groups; Java would fail on every match when it has none,
/// which here is a start-up error.
fn parse_replacement(r: &str, re: &Regex) -> Result<Vec<Piece>, String> {
    let groups = re.captures_len() - 1;
    let chars: Vec<char> = r.chars().collect();
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let c = chars.get(i + 1).ok_or("ends with an escaping backslash")?;
                text.push(*c);
                i += 2;
            }
            '$' => match chars.get(i + 1) {
                Some('{') => {
                    let name: String = chars[i + 2..].iter().take_while(|c| **c != '}').collect();
                    let len = name.chars().count();
                    if i + 2 + len >= chars.len() || name.is_empty() {
                        return Err("`${` must be followed by a group name and `}`".into());
                    }
                    if !re.capture_names().flatten().any(|n| n == name) {
                        return Err(format!("the pattern has no group named `{name}`"));
                    }
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                    pieces.push(Piece::Named(name));
                    i += 3 + len;
                }
                Some(d) if d.is_ascii_digit() => {
                    let mut n = d.to_digit(10).expect("digit") as usize;
                    if n > groups {
                        if groups == 0 {
                            return Err(format!("`${n}` names a group; the pattern has none"));
                        }
                        text.push('$');
                        i += 1;
                        continue;
                    }
                    i += 2;
                    while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                        let more = n * 10 + d as usize;
                        if more > groups {
                            break;
                        }
                        n = more;
                        i += 1;
                    }
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                    pieces.push(Piece::Group(n));
                }
                _ => {
                    return Err("`$` needs a group number or {name} after it (`\\$` is a $)".into())
                }
            },
            c => {
                text.push(c);
                i += 1;
            }
        }
    }
    pieces.push(Piece::Text(text));
    pieces.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
    Ok(pieces)
}

// ---- the stream ----

/// Runs the server side of the TLS handshake over `reader` and `writer`, within `timeout`,
/// and names the client (see [`principal_of`]). A client that does not speak TLS fails with
/// `InvalidData`, one whose certificate is refused with `PermissionDenied`, a slow one with
/// `TimedOut`. Any alert rustls produced is written before the error is returned.
pub async fn accept<R: SocketRead, W: SocketWrite>(
    settings: &TlsSettings,
    mut reader: R,
    mut writer: W,
    timeout: Duration,
) -> io::Result<(TlsRead<R>, TlsWrite<W>, String)> {
    let mut conn = ServerConnection::new(settings.config.clone()).map_err(io::Error::other)?;
    let mut cipher = BytesMut::with_capacity(CIPHER_READ_BYTES);
    let handshake = handshake(&mut conn, &mut reader, &mut writer, &mut cipher);
    let late = format!(
        "SSL handshake not finished within {} ms",
        timeout.as_millis()
    );
    tokio::time::timeout(timeout, handshake)
        .await
        .map_err(|_| io_error(io::ErrorKind::TimedOut, late))??;
    debug_assert!(!conn.is_handshaking() && !conn.wants_write());
    let principal = principal_of(settings, conn.peer_certificates())
        .map_err(|e| io_error(io::ErrorKind::PermissionDenied, e))?;
    // Writes are bounded by the pieces `TlsWrite` hands over, not by rustls's buffer limit.
    conn.set_buffer_limit(None);
    let conn = Rc::new(RefCell::new(conn));
    Ok((
        TlsRead {
            inner: reader,
            conn: conn.clone(),
            cipher,
            closed: false,
        },
        TlsWrite {
            inner: writer,
            conn,
            out: BytesMut::new(),
        },
        principal,
    ))
}

async fn handshake<R: SocketRead, W: SocketWrite>(
    conn: &mut ServerConnection,
    reader: &mut R,
    writer: &mut W,
    cipher: &mut BytesMut,
) -> io::Result<()> {
    loop {
        // Flush first: the last flight (and TLS 1.3 session tickets) goes out before we finish.
        if conn.wants_write() {
            let mut out = BytesMut::new();
            drain(conn, &mut out)?;
            writer.write_all(out.freeze()).await?;
        }
        if !conn.is_handshaking() {
            return Ok(());
        }
        if cipher.is_empty() {
            let mut buf = std::mem::take(cipher);
            buf.reserve(CIPHER_READ_BYTES);
            let (r, buf) = reader.read(buf, CIPHER_READ_BYTES).await;
            *cipher = buf;
            if r? == 0 {
                let msg = "SSL handshake failed: the client closed the connection during it";
                return Err(io_error(io::ErrorKind::UnexpectedEof, msg));
            }
        }
        let n = conn
            .read_tls(&mut &cipher[..])
            .map_err(|e| invalid(format!("SSL handshake failed: {e}")))?;
        cipher.advance(n);
        match conn.process_new_packets() {
            // n == 0: rustls takes nothing after a close_notify.
            Ok(state) if n == 0 || state.peer_has_closed() => {
                let msg = "SSL handshake failed: the client closed the session during it";
                return Err(io_error(io::ErrorKind::UnexpectedEof, msg));
            }
            Ok(_) => {}
            Err(e) => {
                if conn.wants_write() {
                    let mut out = BytesMut::new();
                    if drain(conn, &mut out).is_ok() {
                        let _ = writer.write_all(out.freeze()).await;
                    }
                }
                return Err(handshake_error(e));
            }
        }
    }
}

/// Says why a handshake failed, in the words a broker operator needs.
fn handshake_error(e: rustls::Error) -> io::Error {
    use io::ErrorKind::{InvalidData, PermissionDenied};
    use CertificateError as C;
    let (kind, why) = match &e {
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => (
            InvalidData,
            "the peer did not speak TLS (a plaintext client on a TLS listener? it should use \
             security.protocol=SSL)",
        ),
        rustls::Error::NoCertificatesPresented => (
            PermissionDenied,
            "the client presented no certificate, and ssl.client.auth=required",
        ),
        rustls::Error::InvalidCertificate(c) => (
            PermissionDenied,
            match c {
                C::UnknownIssuer => {
                    "client certificate refused: untrusted (no CA of the truststore signed it)"
                }
                C::Expired | C::ExpiredContext { .. } => {
                    "client certificate refused: it has expired"
                }
                C::NotValidYet | C::NotValidYetContext { .. } => {
                    "client certificate refused: it is not valid yet"
                }
                C::Revoked => "client certificate refused: it is revoked",
                _ => "client certificate refused",
            },
        ),
        rustls::Error::PeerIncompatible(_) => (
            InvalidData,
            "no protocol version or cipher suite in common with the client",
        ),
        rustls::Error::AlertReceived(_) => (
            InvalidData,
            "the client gave up (does it trust the broker's certificate?)",
        ),
        _ => (InvalidData, "TLS error"),
    };
    io_error(kind, format!("SSL handshake failed: {why}: {e}"))
}

fn io_error(kind: io::ErrorKind, msg: impl ToString) -> io::Error {
    io::Error::new(kind, msg.to_string())
}

fn invalid(msg: impl ToString) -> io::Error {
    io_error(io::ErrorKind::InvalidData, msg)
}

/// Moves every TLS byte rustls has queued to the end of `out`.
fn drain(conn: &mut ServerConnection, out: &mut BytesMut) -> io::Result<()> {
    let mut w = out.writer();
    while conn.wants_write() {
        if conn.write_tls(&mut w)? == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
    }
    Ok(())
}

/// The reading half of a TLS connection.
pub struct TlsRead<R> {
    inner: R,
    conn: Rc<RefCell<ServerConnection>>,
    /// Ciphertext read and not yet given to rustls. Empty whenever a read of the socket is in
    /// flight, so a read abandoned at an `.await` (an idle timeout) loses nothing.
    cipher: BytesMut,
    /// The peer closed (close_notify or end of stream): reads return 0 from now on.
    closed: bool,
}

impl<R> TlsRead<R> {
    /// Moves up to `want` bytes of plaintext into `buf`, feeding rustls the buffered
    /// ciphertext as needed: how many (0 once the peer has closed), None if rustls needs more
    /// ciphertext for any. Synchronous: the connection is borrowed only here.
    fn decrypt(&mut self, buf: &mut BytesMut, want: usize) -> io::Result<Option<usize>> {
        let mut conn = self.conn.borrow_mut();
        let mut copied = 0;
        loop {
            while copied < want {
                let mut reader = conn.reader();
                let n = match reader.fill_buf() {
                    Ok([]) => {
                        self.closed = true; // close_notify and nothing left
                        break;
                    }
                    Ok(chunk) => {
                        let n = chunk.len().min(want - copied);
                        buf.extend_from_slice(&chunk[..n]);
                        n
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                };
                reader.consume(n);
                copied += n;
            }
            if copied == want || self.closed || self.cipher.is_empty() {
                break;
            }
            // Plaintext is drained, so rustls takes more (its plaintext buffer is not full).
            let n = conn.read_tls(&mut &self.cipher[..]).map_err(invalid)?;
            if n == 0 {
                // Ciphertext after close_notify: ignored.
                self.cipher.clear();
                self.closed = true;
                break;
            }
            self.cipher.advance(n);
            if let Err(e) = conn.process_new_packets() {
                return Err(invalid(format!("TLS error from the client: {e}")));
            }
        }
        debug_assert!(copied <= want);
        Ok((copied > 0 || self.closed).then_some(copied))
    }
}

impl<R: SocketRead> SocketRead for TlsRead<R> {
    async fn read(&mut self, mut buf: BytesMut, max: usize) -> (io::Result<usize>, BytesMut) {
        // Into the spare capacity, or past it (as the epoll engine does) if there is none.
        let spare = buf.capacity() - buf.len();
        let want = max.max(1).min(if spare > 0 { spare } else { usize::MAX });
        loop {
            match self.decrypt(&mut buf, want) {
                Ok(Some(n)) => return (Ok(n), buf),
                Ok(None) => {}
                Err(e) => return (Err(e), buf),
            }
            debug_assert!(self.cipher.is_empty());
            let mut cipher = std::mem::take(&mut self.cipher);
            cipher.reserve(CIPHER_READ_BYTES);
            let (r, cipher) = self.inner.read(cipher, CIPHER_READ_BYTES).await;
            self.cipher = cipher;
            match r {
                Ok(0) => {
                    self.closed = true;
                    return (Ok(0), buf);
                }
                Ok(_) => {}
                Err(e) => return (Err(e), buf),
            }
        }
    }

    /// Queues a close_notify (best effort: only a later write would send it, and after
    /// shutdown there is none; Kafka clients do not need it) and shuts the socket down.
    fn shutdown(&self) {
        if let Ok(mut conn) = self.conn.try_borrow_mut() {
            conn.send_close_notify();
        }
        self.inner.shutdown();
    }
}

/// The writing half of a TLS connection.
pub struct TlsWrite<W> {
    inner: W,
    conn: Rc<RefCell<ServerConnection>>,
    /// Ciphertext not yet written; its allocation is reused once the socket is done with it.
    out: BytesMut,
}

impl<W: SocketWrite> TlsWrite<W> {
    /// Encrypts `data` into `out`, in pieces, writing `out` out whenever it holds a piece's
    /// worth.
    async fn push(&mut self, data: &[u8]) -> io::Result<()> {
        for piece in data.chunks(PLAINTEXT_PIECE) {
            self.encrypt(piece)?;
            if self.out.len() >= PLAINTEXT_PIECE {
                self.flush().await?;
            }
        }
        Ok(())
    }

    /// Encrypts `piece` and moves what rustls queued (including TLS bytes the reading half
    /// left there, which come first) to `out`.
    fn encrypt(&mut self, piece: &[u8]) -> io::Result<()> {
        debug_assert!(piece.len() <= PLAINTEXT_PIECE);
        let mut conn = self.conn.borrow_mut();
        let mut rest = piece;
        while !rest.is_empty() {
            let n = conn.writer().write(rest)?;
            if n == 0 {
                return Err(io_error(
                    io::ErrorKind::BrokenPipe,
                    "the TLS session is closed",
                ));
            }
            rest = &rest[n..];
        }
        // Records add a few dozen bytes per 16 KiB.
        self.out.reserve(piece.len() + piece.len() / 256 + 256);
        drain(&mut conn, &mut self.out)
    }

    /// Writes `out` (and whatever rustls has queued) to the socket.
    async fn flush(&mut self) -> io::Result<()> {
        drain(&mut self.conn.borrow_mut(), &mut self.out)?;
        if self.out.is_empty() {
            return Ok(());
        }
        let bytes = self.out.split().freeze();
        self.inner.write_all(bytes).await
    }
}

impl<W: SocketWrite> SocketWrite for TlsWrite<W> {
    async fn write_all(&mut self, bytes: Bytes) -> io::Result<()> {
        self.push(&bytes).await?;
        self.flush().await
    }

    async fn write_all_vectored(&mut self, chunks: Vec<Bytes>) -> io::Result<()> {
        for c in &chunks {
            self.push(c).await?;
        }
        self.flush().await
    }

    /// Reads the range piecewise and encrypts it: sendfile cannot encrypt.
    async fn send_file(&mut self, range: &FileRange) -> io::Result<()> {
        let mut plain = vec![0u8; range.len.min(FILE_PIECE)];
        let mut done = 0;
        while done < range.len {
            let n = (range.len - done).min(FILE_PIECE);
            range
                .file
                .read_exact_at(&mut plain[..n], range.position + done as u64)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::UnexpectedEof => truncated(range),
                    _ => e,
                })?;
            self.push(&plain[..n]).await?;
            done += n;
        }
        debug_assert_eq!(done, range.len);
        self.flush().await
    }

    /// Encrypts the chunks and, like `MSG_MORE` on a plain socket, keeps a small result to go
    /// out with the first bytes of the range that follows (the next write flushes it).
    async fn write_before_file(&mut self, chunks: &mut Vec<Bytes>) -> io::Result<()> {
        for c in chunks.iter() {
            self.push(c).await?;
        }
        chunks.clear();
        Ok(())
    }
}

/// Whether this kernel offers kernel TLS (the `tls` upper-layer protocol on TCP sockets),
/// probed once on a loopback connection.
pub fn ktls_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| probe_ktls().unwrap_or(false))
}

fn probe_ktls() -> io::Result<bool> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let client = std::net::TcpStream::connect(listener.local_addr()?)?;
    let _server = listener.accept()?;
    let name = b"tls";
    // SAFETY: a plain setsockopt on a socket we own, with a buffer that outlives the call.
    let r = unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            libc::SOL_TCP,
            libc::TCP_ULP,
            name.as_ptr() as *const libc::c_void,
            name.len() as libc::socklen_t,
        )
    };
    Ok(r == 0)
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
