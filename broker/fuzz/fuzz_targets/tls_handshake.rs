//! TLS records from a client that may not speak TLS at all, into a server configured as a
//! listener is (`security::tls::settings`, mutual TLS requested so client certificates are
//! parsed too). Nothing may panic; rustls answers with an error or waits for more.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;

fn config() -> Arc<rustls::ServerConfig> {
    static CONFIG: OnceLock<Arc<rustls::ServerConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("samsa-fuzz-tls-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let ca_key = rcgen::KeyPair::generate().unwrap();
            let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            let ca = ca.self_signed(&ca_key).unwrap();
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
                .unwrap()
                .signed_by(&key, &ca, &ca_key)
                .unwrap();
            let keystore = dir.join("server.pem");
            std::fs::write(&keystore, format!("{}{}", key.serialize_pem(), cert.pem())).unwrap();
            let truststore = dir.join("ca.pem");
            std::fs::write(&truststore, ca.pem()).unwrap();
            let settings = samsa_broker::security::tls::settings("FUZZ", &|k| match k {
                "ssl.keystore.type" | "ssl.truststore.type" => Some("PEM".into()),
                "ssl.keystore.location" => Some(keystore.display().to_string()),
                "ssl.truststore.location" => Some(truststore.display().to_string()),
                "ssl.client.auth" => Some("requested".into()),
                _ => None,
            })
            .expect("settings");
            settings.server_config().clone()
        })
        .clone()
}

fuzz_target!(|data: &[u8]| {
    let mut conn = rustls::ServerConnection::new(config()).expect("connection");
    let mut input = data;
    while !input.is_empty() {
        match conn.read_tls(&mut input) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if conn.process_new_packets().is_err() {
            break;
        }
    }
    let mut out = Vec::new();
    while conn.wants_write() {
        if conn.write_tls(&mut out).is_err() {
            break;
        }
    }
});
