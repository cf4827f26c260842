//! AlterUserScramCredentials: Kafka's `ScramControlManager`; and DescribeUserScramCredentials as
//! any broker answers it from its image (Kafka's `ScramImage.describe`).
//!
//! The client sends, per user and mechanism, the salt, the iteration count and the salted
//! password (RFC 5802's `Hi(password, salt, i)`; the password never leaves the client). The
//! controller keeps what a SCRAM server needs and nothing it does not: the StoredKey
//! (`H(HMAC(salted, "Client Key"))`) and the ServerKey (`HMAC(salted, "Server Key")`), in a
//! `UserScramCredentialRecord`, as Kafka's `ScramFormatter` derives them. A deletion is a
//! `RemoveUserScramCredentialRecord`.
//!
//! Results come in Kafka's order: the users deleted, the users upserted, then the refusals.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use hmac::{Hmac, Mac};
use kafka_protocol::ResponseError;
use sha2::{Digest, Sha256, Sha512};

use super::{Controller, ControllerError};
use crate::metadata::records::{
    MetadataRecord, RemoveUserScramCredentialRecord, UserScramCredentialRecord,
};
use crate::metadata::MetadataImage;

/// Kafka's bounds on iterations (`ScramMechanism.minIterations`, `MAX_ITERATIONS`).
pub const SCRAM_ITERATIONS_MIN: i32 = 4096;
pub const SCRAM_ITERATIONS_MAX: i32 = 16384;
/// Users with credentials at most. Kafka has no limit, but every broker keeps every credential
/// in its image.
pub const SCRAM_USERS_MAX: usize = 100_000;
/// Longest user name, salt and salted password accepted.
pub const SCRAM_USER_BYTES_MAX: usize = 1024;
pub const SCRAM_SALT_BYTES_MAX: usize = 1024;
pub const SCRAM_SALTED_PASSWORD_BYTES_MAX: usize = 1024;
/// `metadata.version` 3.5-IV2, the first whose log holds SCRAM credentials (Kafka's
/// `isScramSupported`): below it every alteration is UNSUPPORTED_VERSION.
pub const METADATA_VERSION_SCRAM: i16 = 11;

/// Kafka's `ScramMechanism` and its wire codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScramMechanism {
    Sha256 = 1,
    Sha512 = 2,
}

impl ScramMechanism {
    pub fn from_code(code: i8) -> Option<ScramMechanism> {
        match code {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    pub fn code(self) -> i8 {
        self as i8
    }

    /// The SASL mechanism name.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// RFC 5802's `HMAC(key, data)` with this mechanism's hash.
    pub fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC takes keys of any length (long ones are hashed first).
        const ANY_KEY: &str = "HMAC accepts keys of every length";
        match self {
            ScramMechanism::Sha256 => {
                let mut mac = Hmac::<Sha256>::new_from_slice(key).expect(ANY_KEY);
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut mac = Hmac::<Sha512>::new_from_slice(key).expect(ANY_KEY);
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    /// RFC 5802's `H(data)`.
    pub fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// The StoredKey and ServerKey of a salted password (Kafka's `ScramFormatter.storedKey`
    /// of `clientKey`, and `serverKey`).
    pub fn stored_and_server_keys(self, salted_password: &[u8]) -> (Bytes, Bytes) {
        let client_key = self.hmac(salted_password, b"Client Key");
        let stored_key = self.hash(&client_key);
        let server_key = self.hmac(salted_password, b"Server Key");
        (stored_key.into(), server_key.into())
    }
}

/// A deletion of AlterUserScramCredentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramCredentialDeletion {
    pub name: String,
    /// A [`ScramMechanism`] code as the request carries it (others are refused).
    pub mechanism: i8,
}

/// An upsertion of AlterUserScramCredentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramCredentialUpsertion {
    pub name: String,
    /// A [`ScramMechanism`] code as the request carries it (others are refused).
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Bytes,
    pub salted_password: Bytes,
}

/// The answer for one user of AlterUserScramCredentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterScramCredentialResult {
    pub user: String,
    pub error_code: i16,
    pub error_message: Option<String>,
}

/// The answer for one user of DescribeUserScramCredentials: `(mechanism, iterations)` per
/// credential, or the error code and message.
pub type ScramCredentialDescription = (String, Result<Vec<(ScramMechanism, i32)>, (i16, String)>);

type Refusal = (i16, String);

fn refusal(e: ResponseError, message: impl Into<String>) -> Refusal {
    (e.code(), message.into())
}

impl Controller {
    /// AlterUserScramCredentials. A user may be altered once per request: a second deletion or
    /// upsertion of the same user, whatever the mechanism, is DUPLICATE_RESOURCE for that user
    /// and cancels the first (Kafka's rule). Each alteration is refused alone: below
    /// [`METADATA_VERSION_SCRAM`] (UNSUPPORTED_VERSION); an empty user name
    /// (UNACCEPTABLE_CREDENTIAL); a mechanism other than SCRAM-SHA-256
    /// and SCRAM-SHA-512 (UNSUPPORTED_SASL_MECHANISM); deleting a credential that does not exist
    /// (RESOURCE_NOT_FOUND); iterations outside 4096..=16384, a user name, salt or salted
    /// password over 1024 bytes, or an empty salted password (UNACCEPTABLE_CREDENTIAL); a new
    /// user past
    /// [`SCRAM_USERS_MAX`] (POLICY_VIOLATION).
    pub fn alter_user_scram_credentials(
        &self,
        image: &MetadataImage,
        deletions: Vec<ScramCredentialDeletion>,
        upsertions: Vec<ScramCredentialUpsertion>,
    ) -> Result<(Vec<MetadataRecord>, Vec<AlterScramCredentialResult>), ControllerError> {
        self.check_active()?;
        let supported = image
            .metadata_version()
            .is_some_and(|v| v >= METADATA_VERSION_SCRAM);
        let mut errors: Vec<(String, Refusal)> = Vec::new();
        let failed =
            |errors: &[(String, Refusal)], user: &str| errors.iter().any(|(u, _)| u == user);
        let duplicate = || {
            refusal(
                ResponseError::DuplicateResource,
                "A user credential cannot be altered twice in the same request",
            )
        };
        let unsupported = || {
            refusal(
                ResponseError::UnsupportedVersion,
                "The current metadata.version does not support SCRAM",
            )
        };
        let mut to_delete: Vec<(&str, ScramMechanism)> = Vec::new();
        for d in &deletions {
            if failed(&errors, &d.name) {
                continue;
            }
            if let Some(i) = to_delete.iter().position(|(u, _)| *u == d.name) {
                to_delete.remove(i);
                errors.push((d.name.clone(), duplicate()));
                continue;
            }
            let outcome = if supported {
                validate_deletion(image, d)
            } else {
                Err(unsupported())
            };
            match outcome {
                Ok(mechanism) => to_delete.push((&d.name, mechanism)),
                Err(e) => errors.push((d.name.clone(), e)),
            }
        }
        let mut to_upsert: Vec<(&ScramCredentialUpsertion, ScramMechanism)> = Vec::new();
        for u in &upsertions {
            if failed(&errors, &u.name) {
                continue;
            }
            let deleted = to_delete.iter().position(|(n, _)| *n == u.name);
            let upserted = to_upsert.iter().position(|(x, _)| x.name == u.name);
            if deleted.is_some() || upserted.is_some() {
                if let Some(i) = deleted {
                    to_delete.remove(i);
                }
                if let Some(i) = upserted {
                    to_upsert.remove(i);
                }
                errors.push((u.name.clone(), duplicate()));
                continue;
            }
            let outcome = if supported {
                validate_upsertion(u)
            } else {
                Err(unsupported())
            };
            match outcome {
                Ok(mechanism) => to_upsert.push((u, mechanism)),
                Err(e) => errors.push((u.name.clone(), e)),
            }
        }

        // Users with credentials once the deletions are done, for the limit on users.
        let mut credentials_per_user: HashMap<&str, usize> = HashMap::new();
        for (_, user, _) in image.scram_credentials() {
            *credentials_per_user.entry(user).or_default() += 1;
        }
        let mut records: Vec<MetadataRecord> = Vec::new();
        let mut results: Vec<AlterScramCredentialResult> = Vec::new();
        for (name, mechanism) in &to_delete {
            if let Some(n) = credentials_per_user.get_mut(name) {
                *n -= 1;
                if *n == 0 {
                    credentials_per_user.remove(name);
                }
            }
            records.push(
                RemoveUserScramCredentialRecord {
                    name: name.to_string(),
                    mechanism: mechanism.code(),
                    ..Default::default()
                }
                .into(),
            );
            results.push(success(name));
        }
        let mut users: HashSet<&str> = credentials_per_user.into_keys().collect();
        for (u, mechanism) in &to_upsert {
            if !users.contains(u.name.as_str()) && users.len() >= SCRAM_USERS_MAX {
                errors.push((
                    u.name.clone(),
                    refusal(
                        ResponseError::PolicyViolation,
                        format!(
                            "the cluster holds SCRAM credentials for {SCRAM_USERS_MAX} users, its \
                             limit"
                        ),
                    ),
                ));
                continue;
            }
            users.insert(&u.name);
            let (stored_key, server_key) = mechanism.stored_and_server_keys(&u.salted_password);
            records.push(
                UserScramCredentialRecord {
                    name: u.name.clone(),
                    mechanism: mechanism.code(),
                    salt: u.salt.clone(),
                    stored_key,
                    server_key,
                    iterations: u.iterations,
                    ..Default::default()
                }
                .into(),
            );
            results.push(success(&u.name));
        }
        results.extend(errors.into_iter().map(|(user, (code, message))| {
            AlterScramCredentialResult {
                user,
                error_code: code,
                error_message: Some(message),
            }
        }));
        Ok((records, results))
    }
}

fn success(user: &str) -> AlterScramCredentialResult {
    AlterScramCredentialResult {
        user: user.to_owned(),
        error_code: 0,
        error_message: None,
    }
}

/// Kafka's `validateScramUsernameAndMechanism`.
fn validate_user_and_mechanism(user: &str, mechanism: i8) -> Result<ScramMechanism, Refusal> {
    if user.is_empty() {
        return Err(refusal(
            ResponseError::UnacceptableCredential,
            "Username must not be empty",
        ));
    }
    ScramMechanism::from_code(mechanism).ok_or_else(|| {
        refusal(
            ResponseError::UnsupportedSaslMechanism,
            "Unknown SCRAM mechanism",
        )
    })
}

fn validate_deletion(
    image: &MetadataImage,
    d: &ScramCredentialDeletion,
) -> Result<ScramMechanism, Refusal> {
    let mechanism = validate_user_and_mechanism(&d.name, d.mechanism)?;
    if image.scram_credential(d.mechanism, &d.name).is_none() {
        return Err(refusal(
            ResponseError::ResourceNotFound,
            "Attempt to delete a user credential that does not exist",
        ));
    }
    Ok(mechanism)
}

fn validate_upsertion(u: &ScramCredentialUpsertion) -> Result<ScramMechanism, Refusal> {
    let mechanism = validate_user_and_mechanism(&u.name, u.mechanism)?;
    if u.iterations < SCRAM_ITERATIONS_MIN {
        return Err(refusal(
            ResponseError::UnacceptableCredential,
            "Too few iterations",
        ));
    }
    if u.iterations > SCRAM_ITERATIONS_MAX {
        return Err(refusal(
            ResponseError::UnacceptableCredential,
            "Too many iterations",
        ));
    }
    for (what, len, max) in [
        ("user name", u.name.len(), SCRAM_USER_BYTES_MAX),
        ("salt", u.salt.len(), SCRAM_SALT_BYTES_MAX),
        (
            "salted password",
            u.salted_password.len(),
            SCRAM_SALTED_PASSWORD_BYTES_MAX,
        ),
    ] {
        if len > max {
            return Err(refusal(
                ResponseError::UnacceptableCredential,
                format!("{what} of {len} bytes exceeds the limit of {max} bytes"),
            ));
        }
    }
    // Kafka's HMAC refuses an empty key, which it answers as UNKNOWN_SERVER_ERROR; the
    // credential is what is unacceptable.
    if u.salted_password.is_empty() {
        return Err(refusal(
            ResponseError::UnacceptableCredential,
            "Salted password must not be empty",
        ));
    }
    Ok(mechanism)
}

/// DescribeUserScramCredentials from the image (Kafka's `ScramImage.describe`): every user with
/// credentials when `users` is empty, in name order; else each user named, once, in the order
/// first named: DUPLICATE_RESOURCE when named twice, RESOURCE_NOT_FOUND without credentials.
/// O(credentials).
pub fn describe_user_scram_credentials(
    image: &MetadataImage,
    users: &[String],
) -> Vec<ScramCredentialDescription> {
    let mut by_user: HashMap<&str, Vec<(ScramMechanism, i32)>> = HashMap::new();
    for (mechanism, user, c) in image.scram_credentials() {
        // A mechanism this version does not know is not reported (Kafka's image drops it too).
        if let Some(m) = ScramMechanism::from_code(mechanism) {
            by_user.entry(user).or_default().push((m, c.iterations));
        }
    }
    let describe = |user: &str| match by_user.get(user) {
        Some(creds) => {
            let mut creds = creds.clone();
            creds.sort();
            Ok(creds)
        }
        None => Err(refusal(
            ResponseError::ResourceNotFound,
            format!("Attempt to describe a user credential that does not exist: {user}"),
        )),
    };
    if users.is_empty() {
        let mut names: Vec<&str> = by_user.keys().copied().collect();
        names.sort_unstable();
        return names
            .into_iter()
            .map(|u| (u.to_owned(), describe(u)))
            .collect();
    }
    let mut times: HashMap<&str, usize> = HashMap::new();
    for u in users {
        *times.entry(u.as_str()).or_default() += 1;
    }
    let mut seen = HashSet::new();
    users
        .iter()
        .filter(|u| seen.insert(u.as_str()))
        .map(|u| {
            let result = if times[u.as_str()] > 1 {
                Err(refusal(
                    ResponseError::DuplicateResource,
                    format!(
                        "Cannot describe SCRAM credentials for the same user twice in a single \
                         request: {u}"
                    ),
                ))
            } else {
                describe(u)
            };
            (u.clone(), result)
        })
        .collect()
}
