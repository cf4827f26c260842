//! SCRAM credentials (KIP-554) belong to the cluster: AlterUserScramCredentials goes to the
//! active controller, which keeps per user and mechanism what a SCRAM server needs (the salt,
//! the iteration count, and the StoredKey and ServerKey derived from the salted password the
//! client sent) in the metadata log; every broker's image has them (for a SASL/SCRAM
//! authenticator: `MetadataImage::scram_credential`) and DescribeUserScramCredentials answers
//! from it. Samsa has no SASL yet, so nothing else reads them.
//!
//! This module reads `samsa-scram-credentials.json`, where a node kept its credentials (with
//! the salted passwords) before the metadata log held them: once, for the import
//! (`upgrade.rs`), which hands the salted passwords to the controller as upsertions, so that it
//! derives the keys (`ScramMechanism::stored_and_server_keys`) as for any other. Never written.

use std::collections::BTreeMap;
use std::path::Path;

use bytes::Bytes;
use samsa_cluster::controller::{ScramCredentialUpsertion, ScramMechanism};
use serde::Deserialize;

pub const LEGACY_FILE: &str = "samsa-scram-credentials.json";

#[derive(Deserialize)]
struct StoredFile {
    users: BTreeMap<String, BTreeMap<String, StoredCredential>>,
}

/// One user's credential for one mechanism, as the file kept it.
#[derive(Deserialize)]
struct StoredCredential {
    #[serde(with = "hex_bytes")]
    salt: Vec<u8>,
    #[serde(with = "hex_bytes")]
    salted_password: Vec<u8>,
    iterations: i32,
}

/// The credentials of `dir`'s file as upsertions, by user then mechanism (`None` without a
/// file). A mechanism this version does not know is left out with a warning.
pub fn read_legacy(dir: &Path) -> anyhow::Result<Option<Vec<ScramCredentialUpsertion>>> {
    let Some(file) = crate::util::read_legacy_json::<StoredFile>(dir, LEGACY_FILE)? else {
        return Ok(None);
    };
    let mut upsertions = Vec::new();
    for (user, credentials) in file.users {
        for (mechanism_name, c) in credentials {
            let mechanism = [ScramMechanism::Sha256, ScramMechanism::Sha512]
                .into_iter()
                .find(|m| m.name() == mechanism_name);
            let Some(mechanism) = mechanism else {
                tracing::warn!(
                    user,
                    mechanism = mechanism_name,
                    "ignoring a stored SCRAM credential of an unknown mechanism"
                );
                continue;
            };
            upsertions.push(ScramCredentialUpsertion {
                name: user.clone(),
                mechanism: mechanism.code(),
                iterations: c.iterations,
                salt: Bytes::from(c.salt),
                salted_password: Bytes::from(c.salted_password),
            });
        }
    }
    Ok(Some(upsertions))
}

/// Bytes as lower-case hex in the JSON file.
mod hex_bytes {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() % 2 != 0 {
            return Err(serde::de::Error::custom("odd number of hex digits"));
        }
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(serde::de::Error::custom))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_credentials_become_upsertions_with_their_salted_passwords() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_legacy(dir.path()).unwrap().is_none());
        // As the release before the metadata log held credentials wrote it.
        std::fs::write(
            dir.path().join(LEGACY_FILE),
            r#"{"version": 1, "users": {
                "alice": {
                    "SCRAM-SHA-256": {"salt": "616c6963652d73616c74",
                                      "salted_password": "79eeb503", "iterations": 8192},
                    "SCRAM-SHA-512": {"salt": "00", "salted_password": "ff", "iterations": 4096},
                    "SCRAM-SHA-1": {"salt": "00", "salted_password": "ff", "iterations": 4096}
                }}}"#,
        )
        .unwrap();
        let read = read_legacy(dir.path()).unwrap().unwrap();
        assert_eq!(
            read,
            vec![
                ScramCredentialUpsertion {
                    name: "alice".into(),
                    mechanism: 1,
                    iterations: 8192,
                    salt: Bytes::from_static(b"alice-salt"),
                    salted_password: Bytes::from_static(&[0x79, 0xee, 0xb5, 0x03]),
                },
                ScramCredentialUpsertion {
                    name: "alice".into(),
                    mechanism: 2,
                    iterations: 4096,
                    salt: Bytes::from_static(&[0]),
                    salted_password: Bytes::from_static(&[0xff]),
                },
            ]
        );
        std::fs::write(
            dir.path().join(LEGACY_FILE),
            r#"{"users": {"bob": {"SCRAM-SHA-256": {"salt": "abc", "salted_password": "", "iterations": 1}}}}"#,
        )
        .unwrap();
        assert!(read_legacy(dir.path()).is_err(), "odd hex is corrupt");
    }
}
