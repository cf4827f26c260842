//! The server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), as Kafka's
//! `ScramSaslServer` runs it: client-first, server-first, client-final, server-final, against
//! the StoredKey and ServerKey the metadata image keeps per user (AlterUserScramCredentials).
//! No channel binding (gs2 `n` or `y`), an authorization id only if it is the user itself,
//! Kafka's `tokenauth` extension refused (Samsa has no delegation tokens).
//!
//! Sans-IO: [`ScramServer::step`] takes the client's message and returns the answer.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use samsa_cluster::controller::ScramMechanism;
use samsa_cluster::metadata::image::ScramCredential;

use super::{constant_time_eq, SaslError};

/// Nonce characters the server adds (printable, no ',').
const SERVER_NONCE_CHARS: usize = 32;

#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per connection, for the exchange only
enum State {
    /// Waiting for client-first.
    Start,
    /// Sent server-first; waiting for client-final.
    SentFirst {
        user: String,
        credential: ScramCredential,
        gs2_header: String,
        client_first_bare: String,
        server_first: String,
        nonce: String,
    },
    Done,
}

#[derive(Debug)]
pub struct ScramServer {
    mechanism: ScramMechanism,
    state: State,
}

/// What a step yields: the server's message, and the authenticated user once finished.
#[derive(Debug, PartialEq, Eq)]
pub struct ScramStep {
    pub response: Vec<u8>,
    pub authenticated: Option<String>,
}

impl ScramServer {
    pub fn new(mechanism: ScramMechanism) -> ScramServer {
        ScramServer {
            mechanism,
            state: State::Start,
        }
    }

    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// One client message. `lookup(user)` gives the user's credential for this mechanism.
    /// Every failure is final: the exchange cannot continue after an error.
    pub fn step(
        &mut self,
        message: &[u8],
        lookup: &dyn Fn(&str) -> Option<ScramCredential>,
    ) -> Result<ScramStep, SaslError> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Start => self.client_first(message, lookup),
            State::SentFirst {
                user,
                credential,
                gs2_header,
                client_first_bare,
                server_first,
                nonce,
            } => {
                let response = self.client_final(
                    message,
                    &credential,
                    &gs2_header,
                    &client_first_bare,
                    &server_first,
                    &nonce,
                )?;
                Ok(ScramStep {
                    response,
                    authenticated: Some(user),
                })
            }
            State::Done => Err(SaslError::IllegalState(
                "the SCRAM exchange is already complete".into(),
            )),
        }
    }

    fn client_first(
        &mut self,
        message: &[u8],
        lookup: &dyn Fn(&str) -> Option<ScramCredential>,
    ) -> Result<ScramStep, SaslError> {
        let text = std::str::from_utf8(message)
            .map_err(|_| invalid("the client-first message is not UTF-8"))?;
        // gs2-header: cbind-flag "," [authzid] ","
        let mut parts = text.splitn(3, ',');
        let cbind = parts.next().unwrap_or_default();
        let authzid = parts
            .next()
            .ok_or_else(|| invalid("the client-first message has no gs2 header"))?;
        let bare = parts
            .next()
            .ok_or_else(|| invalid("the client-first message has no body"))?;
        match cbind {
            "n" | "y" => {}
            c if c.starts_with("p=") => {
                return Err(invalid("channel binding is not supported"));
            }
            _ => {
                return Err(invalid(
                    "the client-first message has a malformed gs2 header",
                ))
            }
        }
        let gs2_header = format!("{cbind},{authzid},");
        let mut user = None;
        let mut client_nonce = None;
        for attr in bare.split(',') {
            match attr.split_once('=') {
                Some(("n", v)) => user = Some(decode_saslname(v)?),
                Some(("r", v)) => client_nonce = Some(v.to_string()),
                Some(("m", _)) => return Err(invalid("mandatory extensions are not supported")),
                Some(("tokenauth", _)) => {
                    return Err(SaslError::AuthenticationFailed(
                        "delegation tokens (tokenauth) are not supported".into(),
                    ))
                }
                // Other extensions (Kafka's SCRAM extensions) are ignored.
                _ => {}
            }
        }
        let user = user.ok_or_else(|| invalid("the client-first message names no user"))?;
        let client_nonce = client_nonce
            .filter(|n| !n.is_empty() && n.bytes().all(|c| (0x21..=0x7e).contains(&c) && c != b','))
            .ok_or_else(|| invalid("the client-first message has no valid nonce"))?;
        if let Some(a) = authzid.strip_prefix("a=") {
            if decode_saslname(a)? != user {
                return Err(SaslError::AuthenticationFailed(
                    "Authentication failed: Client requested an authorization id that is different from username".into(),
                ));
            }
        } else if !authzid.is_empty() {
            return Err(invalid(
                "the client-first message has a malformed authorization id",
            ));
        }
        let credential = lookup(&user).ok_or_else(failed)?;
        let nonce = format!("{client_nonce}{}", super::nonce(SERVER_NONCE_CHARS));
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        let response = server_first.clone().into_bytes();
        self.state = State::SentFirst {
            user,
            credential,
            gs2_header,
            client_first_bare: bare.to_string(),
            server_first,
            nonce,
        };
        Ok(ScramStep {
            response,
            authenticated: None,
        })
    }

    fn client_final(
        &self,
        message: &[u8],
        credential: &ScramCredential,
        gs2_header: &str,
        client_first_bare: &str,
        server_first: &str,
        nonce: &str,
    ) -> Result<Vec<u8>, SaslError> {
        let text = std::str::from_utf8(message)
            .map_err(|_| invalid("the client-final message is not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or_else(|| invalid("the client-final message has no proof"))?;
        let mut binding = None;
        let mut their_nonce = None;
        for attr in without_proof.split(',') {
            match attr.split_once('=') {
                Some(("c", v)) => binding = Some(v),
                Some(("r", v)) => their_nonce = Some(v),
                _ => {}
            }
        }
        let binding =
            binding.ok_or_else(|| invalid("the client-final message has no channel binding"))?;
        if B64.decode(binding).ok().as_deref() != Some(gs2_header.as_bytes()) {
            return Err(invalid("the channel binding does not match the gs2 header"));
        }
        if their_nonce != Some(nonce) {
            return Err(invalid("the client-final nonce is not the server's"));
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| invalid("the client proof is not base64"))?;
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let m = self.mechanism;
        let signature = m.hmac(&credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(failed());
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        if !constant_time_eq(&m.hash(&client_key), &credential.stored_key) {
            return Err(failed());
        }
        let server_signature = m.hmac(&credential.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)).into_bytes())
    }
}

/// Kafka's answer to wrong credentials: the same for an unknown user and a wrong password.
fn failed() -> SaslError {
    SaslError::AuthenticationFailed(
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM"
            .into(),
    )
}

fn invalid(why: &str) -> SaslError {
    SaslError::AuthenticationFailed(format!(
        "Authentication failed: invalid SCRAM message: {why}"
    ))
}

/// RFC 5802's saslname: "=2C" is ',' and "=3D" is '='; any other '=' is malformed.
fn decode_saslname(s: &str) -> Result<String, SaslError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(invalid("a user name has a malformed '=' escape")),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// RFC 5802's Hi(): PBKDF2 with the mechanism's HMAC, one block (the salted password a SCRAM
/// client derives, and a credential's tools compute before AlterUserScramCredentials).
pub fn hi(m: ScramMechanism, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut first = salt.to_vec();
    first.extend_from_slice(&1u32.to_be_bytes());
    let mut u = m.hmac(password, &first);
    let mut out = u.clone();
    for _ in 1..iterations {
        u = m.hmac(password, &u);
        out.iter_mut().zip(&u).for_each(|(o, x)| *o ^= x);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// A credential for `password` as AlterUserScramCredentials would store it.
    fn credential(
        m: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> ScramCredential {
        let salted = hi(m, password.as_bytes(), salt, iterations);
        let (stored_key, server_key) = m.stored_and_server_keys(&salted);
        ScramCredential {
            salt: Bytes::copy_from_slice(salt),
            stored_key,
            server_key,
            iterations: iterations as i32,
        }
    }

    /// A SCRAM client, as librdkafka or kafka-python runs one.
    fn client_final(
        m: ScramMechanism,
        password: &str,
        client_first_bare: &str,
        server_first: &str,
    ) -> (String, Vec<u8>) {
        let attrs: std::collections::HashMap<&str, &str> = server_first
            .split(',')
            .filter_map(|a| a.split_once('='))
            .collect();
        let salt = B64.decode(attrs["s"]).unwrap();
        let iterations: u32 = attrs["i"].parse().unwrap();
        let salted = hi(m, password.as_bytes(), &salt, iterations);
        let client_key = m.hmac(&salted, b"Client Key");
        let stored_key = m.hash(&client_key);
        let without_proof = format!("c=biws,r={}", attrs["r"]);
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let sig = m.hmac(&stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        let server_key = m.hmac(&salted, b"Server Key");
        let expected = m.hmac(&server_key, auth.as_bytes());
        (
            format!("{without_proof},p={}", B64.encode(proof)),
            format!("v={}", B64.encode(expected)).into_bytes(),
        )
    }

    fn exchange(
        m: ScramMechanism,
        stored: &str,
        tried: &str,
    ) -> Result<(Vec<u8>, Vec<u8>, ScramStep), SaslError> {
        let cred = credential(m, stored, b"salty-salt", 4096);
        let lookup = move |u: &str| (u == "alice").then(|| cred.clone());
        let mut s = ScramServer::new(m);
        let bare = "n=alice,r=fyko+d2lbbFgONRv9qkxdawL";
        let first = s.step(format!("n,,{bare}").as_bytes(), &lookup)?;
        assert_eq!(first.authenticated, None);
        let server_first = String::from_utf8(first.response.clone()).unwrap();
        assert!(
            server_first.starts_with("r=fyko+d2lbbFgONRv9qkxdawL"),
            "{server_first}"
        );
        let (fin, expected) = client_final(m, tried, bare, &server_first);
        let done = s.step(fin.as_bytes(), &lookup)?;
        Ok((first.response, expected, done))
    }

    #[test]
    fn both_mechanisms_authenticate_the_right_password_and_sign_for_it() {
        for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let (_, expected, done) = exchange(m, "pencil", "pencil").unwrap();
            assert_eq!(done.authenticated.as_deref(), Some("alice"));
            assert_eq!(done.response, expected, "{m:?}: the server signature");
        }
    }

    #[test]
    fn a_wrong_password_and_an_unknown_user_fail_alike() {
        let wrong = exchange(ScramMechanism::Sha256, "pencil", "crayon").unwrap_err();
        assert!(
            matches!(wrong, SaslError::AuthenticationFailed(_)),
            "{wrong:?}"
        );
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        let unknown = s.step(b"n,,n=bob,r=abc", &|_| None).unwrap_err();
        assert_eq!(
            unknown, wrong,
            "no difference tells a guesser which was wrong"
        );
        // The exchange is over after a failure.
        assert!(matches!(
            s.step(b"n,,n=bob,r=abc", &|_| None),
            Err(SaslError::IllegalState(_))
        ));
    }

    #[test]
    fn malformed_messages_are_refused() {
        let cred = credential(ScramMechanism::Sha256, "pw", b"s", 4096);
        let lookup = |_: &str| Some(cred.clone());
        for (msg, says) in [
            (&b"\xff\xfe"[..], "not UTF-8"),
            (b"n", "no gs2 header"),
            (
                b"p=tls-unique,,n=alice,r=abc",
                "channel binding is not supported",
            ),
            (b"x,,n=alice,r=abc", "malformed gs2 header"),
            (b"n,,r=abc", "names no user"),
            (b"n,,n=alice", "no valid nonce"),
            (b"n,,n=alice,r=", "no valid nonce"),
            (b"n,,n=alice,r=a b", "no valid nonce"),
            (b"n,,n=alice,r=a\x7fb", "no valid nonce"),
            (b"n,,n=al=ZZice,r=abc", "malformed '=' escape"),
            (b"n,a=bob,n=alice,r=abc", "different from username"),
            (b"n,,m=ext,n=alice,r=abc", "mandatory extensions"),
            (b"n,,n=alice,r=abc,tokenauth=true", "delegation tokens"),
        ] {
            let mut s = ScramServer::new(ScramMechanism::Sha256);
            match s.step(msg, &lookup) {
                Err(e) => assert!(e.message().contains(says), "{says}: {e:?}"),
                Ok(_) => panic!("{:?} accepted", String::from_utf8_lossy(msg)),
            }
        }
        // The authorization id may be the user itself, escaped names decode (RFC 5802's
        // saslname: =2C is ',' and =3D is '=').
        for (msg, user) in [
            (&b"n,a=a=2Cb,n=a=2Cb,r=abc"[..], "a,b"),
            (b"n,,n=a=3Db=2C=3D,r=abc", "a=b,="),
            (b"n,,n==2Cx,r=abc", ",x"),
        ] {
            let seen = std::cell::RefCell::new(String::new());
            let named = |u: &str| {
                *seen.borrow_mut() = u.to_string();
                Some(cred.clone())
            };
            let mut s = ScramServer::new(ScramMechanism::Sha256);
            assert!(s.step(msg, &named).is_ok());
            assert_eq!(*seen.borrow(), user);
        }
        // A client-final with another nonce or binding, or a short proof.
        for fin in [
            "c=biws,r=other,p=AAAA",
            "c=eSws,r={n},p=AAAA",
            "c=biws,r={n},p=AAAA",
            "c=biws,r={n}",
        ] {
            let mut s = ScramServer::new(ScramMechanism::Sha256);
            let first = s.step(b"n,,n=alice,r=abc", &lookup).unwrap();
            let sf = String::from_utf8(first.response).unwrap();
            let nonce = &sf[2..sf.find(',').unwrap()];
            let fin = fin.replace("{n}", nonce);
            assert!(s.step(fin.as_bytes(), &lookup).is_err(), "{fin} accepted");
        }
    }

    #[test]
    fn proofs_compare_in_constant_time_and_exactly() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        // Two differences that cancel under xor must still differ.
        assert!(!constant_time_eq(&[1, 1], &[0, 0]));
    }

    #[test]
    fn server_nonces_differ_and_extend_the_clients() {
        let cred = credential(ScramMechanism::Sha512, "pw", b"s", 4096);
        let lookup = |_: &str| Some(cred.clone());
        let a = ScramServer::new(ScramMechanism::Sha512)
            .step(b"n,,n=u,r=abc", &lookup)
            .unwrap()
            .response;
        let b = ScramServer::new(ScramMechanism::Sha512)
            .step(b"n,,n=u,r=abc", &lookup)
            .unwrap()
            .response;
        assert_ne!(a, b);
        let a = String::from_utf8(a).unwrap();
        assert!(
            a.starts_with("r=abc") && a.contains(",s=cw==,i=4096"),
            "{a}"
        );
    }
}
