//! Keystores and truststores: the broker's certificate chain and private key, and the CA
//! certificates client certificates are verified against, from PEM files, inline PEM values or
//! PKCS12 stores. JKS stores and encrypted PEM keys are refused with the command that converts
//! them.

use std::sync::OnceLock;

use p12_keystore::{KeyStore, KeyStoreEntry};
use regex::Regex;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::Keys;

impl Keys<'_> {
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
pub(super) fn keystore(k: &Keys<'_>, warnings: &mut Vec<String>) -> Result<Keystore, String> {
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
pub(super) fn truststore(k: &Keys<'_>) -> Result<Option<RootCertStore>, String> {
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
