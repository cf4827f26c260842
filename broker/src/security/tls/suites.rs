//! The protocol versions (`ssl.enabled.protocols`) and cipher suites (`ssl.cipher.suites`) a
//! listener offers, as far as rustls implements them.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::{SupportedCipherSuite, SupportedProtocolVersion};

use super::Keys;

/// The ring provider restricted to `ssl.cipher.suites`, and the versions of
/// `ssl.enabled.protocols` that rustls offers (and that some enabled suite can serve).
pub(super) fn protocols_and_suites(
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
pub(super) fn iana_name(suite: &SupportedCipherSuite) -> String {
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
