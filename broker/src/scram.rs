//! SCRAM credentials (KIP-554): per user and mechanism (SCRAM-SHA-256, SCRAM-SHA-512) the salt,
//! the salted password and the iteration count that AlterUserScramCredentials sets, as the
//! client computed them (RFC 5802's `Hi(password, salt, i)`; the password itself never reaches
//! the broker). A SASL/SCRAM authenticator derives the StoredKey and ServerKey it checks proofs
//! with from the salted password; Samsa has no SASL yet, so nothing reads them but
//! DescribeUserScramCredentials, which reports mechanisms and iterations only.
//!
//! Persisted in `samsa-scram-credentials.json` in the log directory, readable by the broker's
//! user only, written atomically (temp file, fsync, rename, fsync the directory) before a change
//! is visible, and reloaded on start. Validation and error codes follow Kafka's
//! `ScramControlManager`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use kafka_protocol::ResponseError;
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

const FILE: &str = "samsa-scram-credentials.json";
/// Kafka's bounds on iterations (`ScramMechanism.minIterations`, `MAX_ITERATIONS`).
pub const ITERATIONS_MIN: i32 = 4096;
pub const ITERATIONS_MAX: i32 = 16384;
/// Users with credentials at most (Kafka has no limit; every one is kept in memory and
/// rewritten on each change).
pub const USERS_MAX: usize = 100_000;
/// Longest user name, salt and salted password accepted.
pub const USER_BYTES_MAX: usize = 1024;
pub const SALT_BYTES_MAX: usize = 1024;
pub const SALTED_PASSWORD_BYTES_MAX: usize = 1024;

/// Kafka's `ScramMechanism` and its wire codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ScramMechanism {
    #[serde(rename = "SCRAM-SHA-256")]
    Sha256,
    #[serde(rename = "SCRAM-SHA-512")]
    Sha512,
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
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }
}

/// One user's credential for one mechanism.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    #[serde(with = "hex_bytes")]
    pub salt: Vec<u8>,
    #[serde(with = "hex_bytes")]
    pub salted_password: Vec<u8>,
    pub iterations: i32,
}

/// An upsertion of AlterUserScramCredentials.
#[derive(Debug, Clone)]
pub struct Upsertion {
    pub user: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
}

/// A deletion of AlterUserScramCredentials.
#[derive(Debug, Clone)]
pub struct Deletion {
    pub user: String,
    pub mechanism: i8,
}

/// The outcome for one user: Kafka's error code and message (none on success).
pub type UserResult = (String, Option<(ResponseError, String)>);

/// What DescribeUserScramCredentials reports for one user.
pub type UserDescription = (
    String,
    Result<Vec<(ScramMechanism, i32)>, (ResponseError, String)>,
);

#[derive(Serialize, Deserialize, Default)]
struct StoredFile {
    version: u32,
    users: BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>,
}

type Users = BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>;

pub struct ScramCredentials {
    dir: PathBuf,
    users: RwLock<Users>,
    /// Serialises changes, so that the file and the map agree.
    admin: Mutex<()>,
}

impl ScramCredentials {
    /// Loads the credentials stored in `dir` (none without a file). A file that does not parse
    /// stops the start: serving without the credentials an operator created would lock users out.
    pub fn open(dir: &Path) -> anyhow::Result<ScramCredentials> {
        let path = dir.join(FILE);
        let users = match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice::<StoredFile>(&bytes)
                    .map_err(|e| anyhow::anyhow!("{} is corrupt: {e}", path.display()))?
                    .users
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Users::new(),
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        };
        Ok(ScramCredentials {
            dir: dir.to_path_buf(),
            users: RwLock::new(users),
            admin: Mutex::new(()),
        })
    }

    /// The credential of `user` for `mechanism`, for an authenticator.
    pub fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.users.read().get(user)?.get(&mechanism).cloned()
    }

    /// Kafka's `ScramImage.describe`: every user with credentials when `users` is empty, else
    /// each named user once (DUPLICATE_RESOURCE when named twice, RESOURCE_NOT_FOUND without
    /// credentials), in the order first named.
    pub fn describe(&self, users: &[String]) -> Vec<UserDescription> {
        let stored = self.users.read();
        let describe_one = |user: &str| match stored.get(user) {
            Some(creds) if !creds.is_empty() => {
                Ok(creds.iter().map(|(m, c)| (*m, c.iterations)).collect())
            }
            _ => Err((
                ResponseError::ResourceNotFound,
                format!("Attempt to describe a user credential that does not exist: {user}"),
            )),
        };
        if users.is_empty() {
            return stored
                .keys()
                .map(|u| (u.clone(), describe_one(u)))
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
                    Err((
                        ResponseError::DuplicateResource,
                        format!("Cannot describe SCRAM credentials for the same user twice in a single request: {u}"),
                    ))
                } else {
                    describe_one(u)
                };
                (u.clone(), result)
            })
            .collect()
    }

    /// Kafka's `ScramControlManager.alterCredentials`: a user may be altered once per request
    /// (DUPLICATE_RESOURCE otherwise); the valid changes apply together. Results come as Kafka
    /// orders them: deletions, upsertions, then refusals.
    pub fn alter(
        &self,
        deletions: &[Deletion],
        upsertions: &[Upsertion],
    ) -> Result<Vec<UserResult>, std::io::Error> {
        let _admin = self.admin.lock();
        let current = self.users.read().clone();
        let mut errors: Vec<(String, (ResponseError, String))> = Vec::new();
        let has_error = |errors: &Vec<(String, (ResponseError, String))>, u: &str| {
            errors.iter().any(|(e, _)| e == u)
        };
        let duplicate = || {
            (
                ResponseError::DuplicateResource,
                "A user credential cannot be altered twice in the same request".to_string(),
            )
        };
        let mut to_delete: Vec<&Deletion> = Vec::new();
        for d in deletions {
            if has_error(&errors, &d.user) {
                continue;
            }
            if let Some(i) = to_delete.iter().position(|x| x.user == d.user) {
                to_delete.remove(i);
                errors.push((d.user.clone(), duplicate()));
                continue;
            }
            match validate_deletion(&current, d) {
                Ok(()) => to_delete.push(d),
                Err(e) => errors.push((d.user.clone(), e)),
            }
        }
        let mut to_upsert: Vec<&Upsertion> = Vec::new();
        for u in upsertions {
            if has_error(&errors, &u.user) {
                continue;
            }
            let deleted = to_delete.iter().position(|x| x.user == u.user);
            let upserted = to_upsert.iter().position(|x| x.user == u.user);
            if deleted.is_some() || upserted.is_some() {
                if let Some(i) = deleted {
                    to_delete.remove(i);
                }
                if let Some(i) = upserted {
                    to_upsert.remove(i);
                }
                errors.push((u.user.clone(), duplicate()));
                continue;
            }
            match validate_upsertion(u) {
                Ok(()) => to_upsert.push(u),
                Err(e) => errors.push((u.user.clone(), e)),
            }
        }
        let mut next = current;
        for d in &to_delete {
            let mechanism = ScramMechanism::from_code(d.mechanism).expect("validated");
            if let Some(creds) = next.get_mut(&d.user) {
                creds.remove(&mechanism);
                if creds.is_empty() {
                    next.remove(&d.user);
                }
            }
        }
        let mut results: Vec<UserResult> =
            to_delete.iter().map(|d| (d.user.clone(), None)).collect();
        for u in &to_upsert {
            let mechanism = ScramMechanism::from_code(u.mechanism).expect("validated");
            if !next.contains_key(&u.user) && next.len() >= USERS_MAX {
                errors.push((
                    u.user.clone(),
                    (
                        ResponseError::PolicyViolation,
                        format!(
                            "the broker holds SCRAM credentials for {USERS_MAX} users, its limit"
                        ),
                    ),
                ));
                continue;
            }
            next.entry(u.user.clone()).or_default().insert(
                mechanism,
                ScramCredential {
                    salt: u.salt.clone(),
                    salted_password: u.salted_password.clone(),
                    iterations: u.iterations,
                },
            );
            results.push((u.user.clone(), None));
        }
        if !to_delete.is_empty() || results.len() > to_delete.len() {
            let bytes = serde_json::to_vec_pretty(&StoredFile {
                version: 1,
                users: next.clone(),
            })
            .expect("serialisable");
            crate::topics::write_atomically_private(&self.dir, FILE, &bytes)?;
            *self.users.write() = next;
            tracing::info!(
                changed = ?results.iter().map(|(u, _)| u.as_str()).collect::<Vec<_>>(),
                "SCRAM credentials changed"
            );
        }
        results.extend(errors.into_iter().map(|(u, e)| (u, Some(e))));
        Ok(results)
    }
}

fn validate_user_and_mechanism(user: &str, mechanism: i8) -> Result<(), (ResponseError, String)> {
    if user.is_empty() {
        return Err((
            ResponseError::UnacceptableCredential,
            "Username must not be empty".into(),
        ));
    }
    if ScramMechanism::from_code(mechanism).is_none() {
        return Err((
            ResponseError::UnsupportedSaslMechanism,
            "Unknown SCRAM mechanism".into(),
        ));
    }
    Ok(())
}

fn validate_deletion(current: &Users, d: &Deletion) -> Result<(), (ResponseError, String)> {
    validate_user_and_mechanism(&d.user, d.mechanism)?;
    let mechanism = ScramMechanism::from_code(d.mechanism).expect("validated");
    if current
        .get(&d.user)
        .is_none_or(|creds| !creds.contains_key(&mechanism))
    {
        return Err((
            ResponseError::ResourceNotFound,
            "Attempt to delete a user credential that does not exist".into(),
        ));
    }
    Ok(())
}

fn validate_upsertion(u: &Upsertion) -> Result<(), (ResponseError, String)> {
    validate_user_and_mechanism(&u.user, u.mechanism)?;
    if u.iterations < ITERATIONS_MIN {
        return Err((
            ResponseError::UnacceptableCredential,
            "Too few iterations".into(),
        ));
    }
    if u.iterations > ITERATIONS_MAX {
        return Err((
            ResponseError::UnacceptableCredential,
            "Too many iterations".into(),
        ));
    }
    for (what, len, max) in [
        ("user name", u.user.len(), USER_BYTES_MAX),
        ("salt", u.salt.len(), SALT_BYTES_MAX),
        (
            "salted password",
            u.salted_password.len(),
            SALTED_PASSWORD_BYTES_MAX,
        ),
    ] {
        if len > max {
            return Err((
                ResponseError::UnacceptableCredential,
                format!("{what} of {len} bytes exceeds the limit of {max} bytes"),
            ));
        }
    }
    Ok(())
}

/// Bytes as lower-case hex in the JSON file.
mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        s.serialize_str(&text)
    }

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

    fn upsert(user: &str, mechanism: i8, iterations: i32) -> Upsertion {
        Upsertion {
            user: user.into(),
            mechanism,
            iterations,
            salt: b"salt".to_vec(),
            salted_password: vec![0xab; 32],
        }
    }

    fn delete(user: &str, mechanism: i8) -> Deletion {
        Deletion {
            user: user.into(),
            mechanism,
        }
    }

    fn codes(results: &[UserResult]) -> Vec<(String, Option<ResponseError>)> {
        results
            .iter()
            .map(|(u, e)| (u.clone(), e.as_ref().map(|(c, _)| *c)))
            .collect()
    }

    #[test]
    fn credentials_are_stored_described_deleted_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = ScramCredentials::open(dir.path()).unwrap();
        let r = store
            .alter(&[], &[upsert("alice", 1, 8192), upsert("bob", 2, 4096)])
            .unwrap();
        assert_eq!(
            codes(&r),
            vec![("alice".into(), None), ("bob".into(), None)]
        );
        store.alter(&[], &[upsert("alice", 2, 16384)]).unwrap();
        let reopened = ScramCredentials::open(dir.path()).unwrap();
        assert_eq!(
            reopened.get("alice", ScramMechanism::Sha256).unwrap(),
            ScramCredential {
                salt: b"salt".to_vec(),
                salted_password: vec![0xab; 32],
                iterations: 8192
            }
        );
        let described = reopened.describe(&[]);
        assert_eq!(described[0].0, "alice");
        assert_eq!(
            described[0].1.as_ref().unwrap(),
            &vec![
                (ScramMechanism::Sha256, 8192),
                (ScramMechanism::Sha512, 16384)
            ]
        );
        let r = reopened.alter(&[delete("bob", 2)], &[]).unwrap();
        assert_eq!(codes(&r), vec![("bob".into(), None)]);
        let d = reopened.describe(&["bob".into()]);
        assert_eq!(
            d[0].1.as_ref().unwrap_err().0,
            ResponseError::ResourceNotFound
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "credentials are private: {mode:o}");
        }
    }

    #[test]
    fn kafkas_validation_and_error_codes() {
        let dir = tempfile::tempdir().unwrap();
        let store = ScramCredentials::open(dir.path()).unwrap();
        store.alter(&[], &[upsert("twice", 1, 4096)]).unwrap();
        let r = store
            .alter(
                &[delete("nobody", 1), delete("twice", 1), delete("twice", 2)],
                &[
                    upsert("", 1, 8192),
                    upsert("md5", 3, 8192),
                    upsert("few", 1, 4095),
                    upsert("many", 2, 16385),
                    upsert("ok", 1, 4096),
                    upsert("ok", 2, 4096),
                ],
            )
            .unwrap();
        let got: HashMap<String, Option<ResponseError>> = codes(&r).into_iter().collect();
        assert_eq!(got["nobody"], Some(ResponseError::ResourceNotFound));
        assert_eq!(got["twice"], Some(ResponseError::DuplicateResource));
        assert_eq!(got[""], Some(ResponseError::UnacceptableCredential));
        assert_eq!(got["md5"], Some(ResponseError::UnsupportedSaslMechanism));
        assert_eq!(got["few"], Some(ResponseError::UnacceptableCredential));
        assert_eq!(got["many"], Some(ResponseError::UnacceptableCredential));
        assert_eq!(got["ok"], Some(ResponseError::DuplicateResource));
        assert_eq!(r.len(), 7, "one result per user: {r:?}");
        // Nothing valid was left, so nothing changed.
        let users: Vec<String> = store.describe(&[]).into_iter().map(|(u, _)| u).collect();
        assert_eq!(users, vec!["twice".to_string()]);
        let d = store.describe(&["x".into(), "x".into()]);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].1.as_ref().unwrap_err().0,
            ResponseError::DuplicateResource
        );
    }
}
