//! This node as a TLS client: its connections to a listener of other nodes, and the
//! certificate verifier for peers whose names are not checked.

use std::sync::Arc;

use rustls::{CertificateError, ClientConfig};
use rustls_pki_types::CertificateDer;

use super::stores::{keystore, truststore};
use super::suites::protocols_and_suites;
use super::Keys;

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
