//! AlterUserScramCredentials and DescribeUserScramCredentials rules.

use bytes::Bytes;
use kafka_protocol::ResponseError;

use super::tests::{cfg, Harness};
use super::*;
use crate::metadata::records::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn upsert(name: &str, mechanism: i8, iterations: i32) -> ScramCredentialUpsertion {
    ScramCredentialUpsertion {
        name: name.into(),
        mechanism,
        iterations,
        salt: Bytes::from_static(b"salt"),
        salted_password: Bytes::from(vec![0xab; 32]),
    }
}

fn delete(name: &str, mechanism: i8) -> ScramCredentialDeletion {
    ScramCredentialDeletion {
        name: name.into(),
        mechanism,
    }
}

/// Runs AlterUserScramCredentials and applies its records.
fn alter(
    h: &mut Harness,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> (Vec<MetadataRecord>, Vec<AlterScramCredentialResult>) {
    let (records, results) = h
        .ctl
        .alter_user_scram_credentials(&h.image, deletions, upsertions)
        .unwrap();
    h.apply(&records);
    (records, results)
}

/// Each result as (user, error code, message).
fn outcomes(results: &[AlterScramCredentialResult]) -> Vec<(&str, i16, Option<&str>)> {
    results
        .iter()
        .map(|r| (r.user.as_str(), r.error_code, r.error_message.as_deref()))
        .collect()
}

fn code(e: ResponseError) -> i16 {
    e.code()
}

// RFC 7677 section 3: user "user", password "pencil", this salt, 4096 iterations.
const RFC7677_SALTED_PASSWORD: &str =
    "c4a49510323ab4f952cac1fa99441939e78ea74d6be81ddf7096e87513dc615d";
const RFC7677_AUTH_MESSAGE: &[u8] = b"n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
/// The example's `p=` (ClientProof) and `v=` (ServerSignature), from base64.
const RFC7677_CLIENT_PROOF: &str =
    "747cdb65aa56224e2352137e52d7bdcad6a0f738df30782caa69a2cfb0277554";
const RFC7677_SERVER_SIGNATURE: &str =
    "eabae24d1062db75a9451ff0b6ea7e98c8546549ff741e672d3251b2397de46e";

#[test]
fn stored_and_server_keys_verify_rfc_7677s_example_exchange() {
    let m = ScramMechanism::Sha256;
    let (stored_key, server_key) = m.stored_and_server_keys(&hex(RFC7677_SALTED_PASSWORD));
    // What a SCRAM server does with them: recover the ClientKey from the proof and check that
    // it hashes to the StoredKey; sign with the ServerKey.
    let signature = m.hmac(&stored_key, RFC7677_AUTH_MESSAGE);
    let client_key: Vec<u8> = hex(RFC7677_CLIENT_PROOF)
        .iter()
        .zip(&signature)
        .map(|(a, b)| a ^ b)
        .collect();
    assert_eq!(m.hash(&client_key), stored_key.to_vec());
    assert_eq!(
        m.hmac(&server_key, RFC7677_AUTH_MESSAGE),
        hex(RFC7677_SERVER_SIGNATURE)
    );
}

#[test]
fn scram_sha_512_keys_are_its_own_hmac_and_hash() {
    // The same exchange's password and salt, salted for SHA-512 (Python's hashlib agrees).
    let salted = hex(
        "f16efe1be67f1d09502ebd5ed9262fddffba5a377ab4f0b687e5ed5ba0f50686b8a4ae166476da8ab3b951d2fa9238b63998f45461bc33a464814949cec9631d",
    );
    let (stored_key, server_key) = ScramMechanism::Sha512.stored_and_server_keys(&salted);
    assert_eq!(
        stored_key.to_vec(),
        hex("e8002e6f7d3ae446119b216933644dc2a2be7869eb918b8459b5e7d7d2ec12606aceef106825cd735170a675fd3611f684affad1dce3f43a0ee43bd590e1dbbe")
    );
    assert_eq!(
        server_key.to_vec(),
        hex("8d91db6230b5687874fe129bc7206e1858c3ae08e02934f57ac03b6b05a229c459d28ff46f5c9611e6c179256490215ec1ff759cb0df285db89af0f99e613aac")
    );
}

#[test]
fn mechanisms_have_kafkas_codes_and_names() {
    for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
        assert_eq!(ScramMechanism::from_code(m.code()), Some(m));
    }
    assert_eq!(ScramMechanism::Sha256.code(), 1);
    assert_eq!(ScramMechanism::Sha512.code(), 2);
    assert_eq!(ScramMechanism::from_code(0), None);
    assert_eq!(ScramMechanism::from_code(3), None);
    assert_eq!(ScramMechanism::Sha512.name(), "SCRAM-SHA-512");
    assert_eq!(ScramMechanism::Sha256.name(), "SCRAM-SHA-256");
}

#[test]
fn an_upsertion_stores_the_salt_iterations_and_derived_keys_never_the_salted_password() {
    let mut h = Harness::new(cfg());
    let mut u = upsert("alice", 1, 8192);
    u.salted_password = Bytes::from(hex(RFC7677_SALTED_PASSWORD));
    let (records, results) = alter(&mut h, vec![], vec![u.clone(), upsert("bob", 2, 4096)]);
    assert_eq!(
        outcomes(&results),
        vec![("alice", 0, None), ("bob", 0, None)]
    );
    let (stored_key, server_key) =
        ScramMechanism::Sha256.stored_and_server_keys(&u.salted_password);
    assert_eq!(
        records[0],
        MetadataRecord::from(UserScramCredentialRecord {
            name: "alice".into(),
            mechanism: 1,
            salt: u.salt.clone(),
            stored_key: stored_key.clone(),
            server_key: server_key.clone(),
            iterations: 8192,
            ..Default::default()
        })
    );
    let c = h.image.scram_credential(1, "alice").unwrap();
    assert_eq!(
        (&c.salt, &c.stored_key, &c.server_key, c.iterations),
        (&u.salt, &stored_key, &server_key, 8192)
    );
    let bob = h.image.scram_credential(2, "bob").unwrap();
    assert_eq!(bob.stored_key.len(), 64, "SHA-512 for SCRAM-SHA-512");
    // Upserting again replaces the credential.
    alter(&mut h, vec![], vec![upsert("alice", 1, 16384)]);
    assert_eq!(
        h.image.scram_credential(1, "alice").unwrap().iterations,
        16384
    );
}

#[test]
fn a_deletion_removes_that_mechanisms_credential_only() {
    let mut h = Harness::new(cfg());
    alter(&mut h, vec![], vec![upsert("alice", 1, 4096)]);
    alter(&mut h, vec![], vec![upsert("alice", 2, 4096)]);
    let (records, results) = alter(&mut h, vec![delete("alice", 2)], vec![]);
    assert_eq!(outcomes(&results), vec![("alice", 0, None)]);
    assert_eq!(
        records,
        vec![MetadataRecord::from(RemoveUserScramCredentialRecord {
            name: "alice".into(),
            mechanism: 2,
            ..Default::default()
        })]
    );
    assert!(h.image.scram_credential(2, "alice").is_none());
    assert!(h.image.scram_credential(1, "alice").is_some());
}

#[test]
fn deleting_a_missing_credential_is_resource_not_found() {
    let mut h = Harness::new(cfg());
    alter(&mut h, vec![], vec![upsert("alice", 1, 4096)]);
    let (records, results) = alter(&mut h, vec![delete("alice", 2), delete("bob", 1)], vec![]);
    assert!(records.is_empty());
    let missing = Some("Attempt to delete a user credential that does not exist");
    let not_found = code(ResponseError::ResourceNotFound);
    assert_eq!(
        outcomes(&results),
        vec![("alice", not_found, missing), ("bob", not_found, missing)]
    );
}

#[test]
fn a_user_altered_twice_is_duplicate_resource_whatever_the_mechanisms() {
    let mut h = Harness::new(cfg());
    alter(
        &mut h,
        vec![],
        vec![
            upsert("d", 1, 4096),
            upsert("e", 1, 4096),
            upsert("f", 1, 4096),
        ],
    );
    let (records, results) = alter(
        &mut h,
        vec![
            delete("d", 1),
            delete("d", 2),
            delete("e", 1),
            delete("missing", 1),
        ],
        vec![
            upsert("e", 2, 4096),
            upsert("u", 1, 4096),
            upsert("u", 2, 4096),
            upsert("u", 1, 8192),
            upsert("missing", 1, 4096),
            upsert("ok", 1, 4096),
        ],
    );
    let duplicate = (
        code(ResponseError::DuplicateResource),
        Some("A user credential cannot be altered twice in the same request"),
    );
    // Each user once: the deletions and upsertions done, then the refusals in the order met.
    assert_eq!(
        outcomes(&results),
        vec![
            ("ok", 0, None),
            ("d", duplicate.0, duplicate.1),
            (
                "missing",
                code(ResponseError::ResourceNotFound),
                Some("Attempt to delete a user credential that does not exist")
            ),
            ("e", duplicate.0, duplicate.1),
            ("u", duplicate.0, duplicate.1),
        ]
    );
    assert_eq!(records.len(), 1, "only ok's upsertion: {records:?}");
    assert!(h.image.scram_credential(1, "d").is_some());
    assert!(h.image.scram_credential(1, "e").is_some());
    assert!(h.image.scram_credential(1, "u").is_none());
}

#[test]
fn results_list_deletions_then_upsertions_then_refusals() {
    let mut h = Harness::new(cfg());
    alter(&mut h, vec![], vec![upsert("a", 1, 4096)]);
    let (_, results) = alter(
        &mut h,
        vec![delete("x", 1), delete("a", 1)],
        vec![upsert("b", 1, 4096), upsert("", 1, 4096)],
    );
    let users: Vec<&str> = results.iter().map(|r| r.user.as_str()).collect();
    assert_eq!(users, vec!["a", "b", "x", ""]);
}

#[test]
fn kafkas_validation_of_names_mechanisms_iterations_and_sizes() {
    let mut h = Harness::new(cfg());
    let unacceptable = code(ResponseError::UnacceptableCredential);
    let long_name = upsert(&"n".repeat(SCRAM_USER_BYTES_MAX + 1), 1, 4096);
    let mut big_salt = upsert("big-salt", 1, 4096);
    big_salt.salt = Bytes::from(vec![1; SCRAM_SALT_BYTES_MAX + 1]);
    let mut big_password = upsert("big-password", 1, 4096);
    big_password.salted_password = Bytes::from(vec![1; SCRAM_SALTED_PASSWORD_BYTES_MAX + 1]);
    let mut no_password = upsert("no-password", 1, 4096);
    no_password.salted_password = Bytes::new();
    let mut largest = upsert(&"l".repeat(SCRAM_USER_BYTES_MAX), 2, SCRAM_ITERATIONS_MAX);
    largest.salt = Bytes::from(vec![1; SCRAM_SALT_BYTES_MAX]);
    largest.salted_password = Bytes::from(vec![1; SCRAM_SALTED_PASSWORD_BYTES_MAX]);
    let (records, results) = alter(
        &mut h,
        vec![delete("", 1), delete("md5", 3)],
        vec![
            upsert("", 1, 8192),
            upsert("sha1", 0, 8192),
            upsert("few", 1, SCRAM_ITERATIONS_MIN - 1),
            upsert("many", 2, SCRAM_ITERATIONS_MAX + 1),
            upsert("least", 1, SCRAM_ITERATIONS_MIN),
            long_name,
            big_salt,
            big_password,
            no_password,
            largest,
        ],
    );
    let refused: Vec<(&str, i16, Option<&str>)> = outcomes(&results)
        .into_iter()
        .filter(|(_, code, _)| *code != 0)
        .collect();
    let long = "n".repeat(SCRAM_USER_BYTES_MAX + 1);
    assert_eq!(
        refused,
        vec![
            ("", unacceptable, Some("Username must not be empty")),
            (
                "md5",
                code(ResponseError::UnsupportedSaslMechanism),
                Some("Unknown SCRAM mechanism")
            ),
            (
                "sha1",
                code(ResponseError::UnsupportedSaslMechanism),
                Some("Unknown SCRAM mechanism")
            ),
            ("few", unacceptable, Some("Too few iterations")),
            ("many", unacceptable, Some("Too many iterations")),
            (
                long.as_str(),
                unacceptable,
                Some("user name of 1025 bytes exceeds the limit of 1024 bytes")
            ),
            (
                "big-salt",
                unacceptable,
                Some("salt of 1025 bytes exceeds the limit of 1024 bytes")
            ),
            (
                "big-password",
                unacceptable,
                Some("salted password of 1025 bytes exceeds the limit of 1024 bytes")
            ),
            (
                "no-password",
                unacceptable,
                Some("Salted password must not be empty")
            ),
        ]
    );
    assert_eq!(records.len(), 2, "least and largest");
    assert!(h.image.scram_credential(1, "least").is_some());
}

#[test]
fn below_metadata_version_3_5_iv2_scram_is_unsupported() {
    let mut c = cfg();
    c.bootstrap_metadata_version = METADATA_VERSION_SCRAM - 1;
    let mut h = Harness::new(c);
    let (records, results) = alter(
        &mut h,
        vec![delete("a", 1)],
        vec![upsert("b", 1, 4096), upsert("b", 2, 4096)],
    );
    assert!(records.is_empty());
    let unsupported = (
        code(ResponseError::UnsupportedVersion),
        Some("The current metadata.version does not support SCRAM"),
    );
    assert_eq!(
        outcomes(&results),
        vec![
            ("a", unsupported.0, unsupported.1),
            ("b", unsupported.0, unsupported.1)
        ]
    );
    let mut c = cfg();
    c.bootstrap_metadata_version = METADATA_VERSION_SCRAM;
    let mut h = Harness::new(c);
    let (_, results) = alter(&mut h, vec![], vec![upsert("b", 1, 4096)]);
    assert_eq!(outcomes(&results), vec![("b", 0, None)]);
}

#[test]
fn new_users_past_scram_users_max_are_policy_violation() {
    let mut h = Harness::new(cfg());
    let records: Vec<MetadataRecord> = (0..SCRAM_USERS_MAX)
        .map(|i| {
            UserScramCredentialRecord {
                name: format!("u{i}"),
                mechanism: 1,
                iterations: 4096,
                ..Default::default()
            }
            .into()
        })
        .collect();
    h.apply(&records);
    let (records, results) = alter(
        &mut h,
        vec![],
        vec![upsert("u0", 2, 4096), upsert("new", 1, 4096)],
    );
    assert_eq!(
        records.len(),
        1,
        "a user with credentials may add a mechanism"
    );
    assert_eq!(
        outcomes(&results),
        vec![
            ("u0", 0, None),
            (
                "new",
                code(ResponseError::PolicyViolation),
                Some("the cluster holds SCRAM credentials for 100000 users, its limit")
            )
        ]
    );
    // Deleting a user's last credential frees a place in the same request; deleting one of
    // two does not.
    let (_, results) = alter(&mut h, vec![delete("u0", 1)], vec![upsert("new", 1, 4096)]);
    assert_eq!(results[1].error_code, code(ResponseError::PolicyViolation));
    let (_, results) = alter(&mut h, vec![delete("u1", 1)], vec![upsert("new", 1, 4096)]);
    assert_eq!(outcomes(&results), vec![("u1", 0, None), ("new", 0, None)]);
}

#[test]
fn describe_lists_every_user_or_the_users_named_once_each() {
    let mut h = Harness::new(cfg());
    alter(
        &mut h,
        vec![],
        vec![upsert("bob", 2, 8192), upsert("alice", 2, 4096)],
    );
    alter(&mut h, vec![], vec![upsert("bob", 1, 4096)]);
    let all = describe_user_scram_credentials(&h.image, &[]);
    assert_eq!(
        all,
        vec![
            (
                "alice".to_string(),
                Ok(vec![(ScramMechanism::Sha512, 4096)])
            ),
            (
                "bob".to_string(),
                Ok(vec![
                    (ScramMechanism::Sha256, 4096),
                    (ScramMechanism::Sha512, 8192)
                ])
            ),
        ]
    );
    let named = describe_user_scram_credentials(
        &h.image,
        &["carol".into(), "bob".into(), "alice".into(), "carol".into()],
    );
    assert_eq!(named.len(), 3);
    assert_eq!(
        named[0],
        (
            "carol".to_string(),
            Err((
                code(ResponseError::DuplicateResource),
                "Cannot describe SCRAM credentials for the same user twice in a single request: \
                 carol"
                    .to_string()
            ))
        )
    );
    assert_eq!(named[1].0, "bob");
    assert!(named[1].1.is_ok());
    let missing = describe_user_scram_credentials(&h.image, &["dave".into()]);
    assert_eq!(
        missing,
        vec![(
            "dave".to_string(),
            Err((
                code(ResponseError::ResourceNotFound),
                "Attempt to describe a user credential that does not exist: dave".to_string()
            ))
        )]
    );
}

#[test]
fn an_inactive_controller_refuses_credential_changes() {
    let mut h = Harness::new(cfg());
    h.ctl.deactivate();
    assert_eq!(
        h.ctl
            .alter_user_scram_credentials(&h.image, vec![], vec![upsert("a", 1, 4096)]),
        Err(ControllerError::NotController)
    );
}
