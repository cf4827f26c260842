//! The SASL exchanges as a client drives them: the input is split into tokens (at 0xff bytes)
//! and fed to PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 servers in turn, with a known user; the
//! JAAS parser gets the whole input as text. Nothing may panic, and no token may authenticate
//! anyone but the known user (who needs the right password, which the fuzzer may find for
//! PLAIN only: SCRAM proofs cannot be guessed).
#![no_main]

use libfuzzer_sys::fuzz_target;
use samsa_broker::security::sasl::{jaas, Exchange, Mechanism, SaslSettings};
use samsa_cluster::controller::ScramMechanism;
use samsa_cluster::metadata::image::ScramCredential;

fn credential(m: ScramMechanism) -> ScramCredential {
    let (stored_key, server_key) = m.stored_and_server_keys(&[7u8; 32]);
    ScramCredential {
        salt: bytes::Bytes::from_static(b"salt"),
        stored_key,
        server_key,
        iterations: 4096,
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = jaas::parse(text);
    }
    let settings = SaslSettings::from_config("FUZZ", &|key| match key {
        "sasl.enabled.mechanisms" => Some("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512".into()),
        "plain.sasl.jaas.config" => Some(
            "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"secret\";"
                .into(),
        ),
        _ => None,
    })
    .expect("settings");
    let lookup = |m: ScramMechanism, user: &str| (user == "alice").then(|| credential(m));
    for mechanism in Mechanism::ALL {
        let mut exchange = Exchange::new(mechanism);
        for token in data.split(|b| *b == 0xff) {
            match exchange.step(token, &settings, &lookup) {
                Ok(step) => {
                    if let Some(p) = step.principal {
                        assert_eq!(p, "User:alice");
                        assert_eq!(mechanism, Mechanism::Plain, "a SCRAM proof was forged");
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    }
});
