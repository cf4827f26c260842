//! The delegation-token APIs (KIP-48) of a running `samsa`, which issues no tokens and answers
//! as Apache Kafka 4.4 without `delegation.token.secret.key`: over PLAINTEXT the requester is
//! refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), over SASL the feature is off
//! (DELEGATION_TOKEN_AUTH_DISABLED), and the controller listener answers as Kafka's
//! controllers do. The answers' other fields are Kafka's, as the differential run
//! (scripts/reference/differential/TokenScenarios.java) and a SASL Kafka showed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::create_delegation_token_request::CreatableRenewers;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

const NOT_ALLOWED: i16 = 64;
const AUTH_DISABLED: i16 = 61;
const INVALID_PRINCIPAL_TYPE: i16 = 67;
const UNKNOWN_SERVER_ERROR: i16 = -1;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `samsa` with a PLAINTEXT listener, a SASL_PLAINTEXT one (PLAIN, user alice) and a
/// controller listener, killed when dropped.
struct Running {
    child: std::process::Child,
    plaintext: u16,
    sasl: u16,
    controller: u16,
    dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.path().join("samsa.log"));
            eprintln!("samsa's log:\n{}", log.unwrap_or_default());
        }
    }
}

impl Running {
    fn start() -> Running {
        let dir = tempfile::tempdir().unwrap();
        let (plaintext, sasl, controller) = (free_port(), free_port(), free_port());
        let log = std::fs::File::create(dir.path().join("samsa.log")).unwrap();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_samsa"))
            .arg(format!(
                "--listeners=PLAINTEXT://127.0.0.1:{plaintext},SASL://127.0.0.1:{sasl},\
                 CONTROLLER://127.0.0.1:{controller}"
            ))
            .arg("--controller.listener.names=CONTROLLER")
            .arg(
                "--listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,\
                 CONTROLLER:PLAINTEXT",
            )
            .arg("--sasl.enabled.mechanisms=PLAIN")
            .arg(
                "--listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.\
                 plain.PlainLoginModule required user_alice=\"alice-secret\";",
            )
            .arg(format!("--log.dirs={}", dir.path().join("data").display()))
            .arg("--metrics.listener=")
            .arg("--console.listener=")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Running {
            child,
            plaintext,
            sasl,
            controller,
            dir,
        }
    }

    fn connect(&self, port: u16) -> Client {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(stream) => {
                    stream
                        .set_read_timeout(Some(Duration::from_secs(30)))
                        .unwrap();
                    return Client {
                        stream,
                        correlation_id: 0,
                    };
                }
                Err(e) if Instant::now() > deadline => panic!("samsa never listened: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
}

struct Client {
    stream: TcpStream,
    correlation_id: i32,
}

impl Client {
    fn call(&mut self, key: ApiKey, version: i16, body: RequestKind) -> ResponseKind {
        self.correlation_id += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = key as i16;
        header.request_api_version = version;
        header.correlation_id = self.correlation_id;
        header.client_id = Some(s("delegation-tokens"));
        let mut frame = BytesMut::new();
        header
            .encode(&mut frame, key.request_header_version(version))
            .unwrap();
        body.encode(&mut frame, version).unwrap();
        let mut out = (frame.len() as i32).to_be_bytes().to_vec();
        out.extend_from_slice(&frame);
        self.stream.write_all(&out).unwrap();
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).unwrap();
        let mut answer = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut answer).unwrap();
        let mut answer = Bytes::from(answer);
        let header =
            ResponseHeader::decode(&mut answer, key.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation_id);
        ResponseKind::decode(key, &mut answer, version)
            .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"))
    }

    /// SaslHandshake v1 and SaslAuthenticate with PLAIN as alice.
    fn authenticate(&mut self) {
        let mut handshake = SaslHandshakeRequest::default();
        handshake.mechanism = s("PLAIN");
        let ResponseKind::SaslHandshake(r) = self.call(
            ApiKey::SaslHandshake,
            1,
            RequestKind::SaslHandshake(handshake),
        ) else {
            unreachable!()
        };
        assert_eq!(r.error_code, 0);
        let mut auth = SaslAuthenticateRequest::default();
        auth.auth_bytes = Bytes::from_static(b"\0alice\0alice-secret");
        let ResponseKind::SaslAuthenticate(r) = self.call(
            ApiKey::SaslAuthenticate,
            2,
            RequestKind::SaslAuthenticate(auth),
        ) else {
            unreachable!()
        };
        assert_eq!(r.error_code, 0, "{r:?}");
    }

    fn create(
        &mut self,
        version: i16,
        req: CreateDelegationTokenRequest,
    ) -> CreateDelegationTokenResponse {
        match self.call(
            ApiKey::CreateDelegationToken,
            version,
            RequestKind::CreateDelegationToken(req),
        ) {
            ResponseKind::CreateDelegationToken(r) => r,
            other => panic!("{other:?}"),
        }
    }

    /// RenewDelegationToken and ExpireDelegationToken: (error, expiry) of each.
    fn renew_and_expire(&mut self, version: i16) -> [(i16, i64); 2] {
        let mut renew = RenewDelegationTokenRequest::default();
        renew.hmac = Bytes::from_static(b"not-a-token");
        renew.renew_period_ms = 1000;
        let ResponseKind::RenewDelegationToken(r) = self.call(
            ApiKey::RenewDelegationToken,
            version,
            RequestKind::RenewDelegationToken(renew),
        ) else {
            unreachable!()
        };
        let mut expire = ExpireDelegationTokenRequest::default();
        expire.hmac = Bytes::from_static(b"not-a-token");
        expire.expiry_time_period_ms = -1;
        let ResponseKind::ExpireDelegationToken(e) = self.call(
            ApiKey::ExpireDelegationToken,
            version,
            RequestKind::ExpireDelegationToken(expire),
        ) else {
            unreachable!()
        };
        [
            (r.error_code, r.expiry_timestamp_ms),
            (e.error_code, e.expiry_timestamp_ms),
        ]
    }

    fn describe(
        &mut self,
        version: i16,
        owners: Option<Vec<&str>>,
    ) -> DescribeDelegationTokenResponse {
        let mut req = DescribeDelegationTokenRequest::default();
        req.owners = owners.map(|o| {
            o.into_iter()
                .map(|name| {
                    let mut owner =
                        describe_delegation_token_request::DescribeDelegationTokenOwner::default();
                    owner.principal_type = s("User");
                    owner.principal_name = s(name);
                    owner
                })
                .collect()
        });
        match self.call(
            ApiKey::DescribeDelegationToken,
            version,
            RequestKind::DescribeDelegationToken(req),
        ) {
            ResponseKind::DescribeDelegationToken(r) => r,
            other => panic!("{other:?}"),
        }
    }

    /// The advertised range of `key`.
    fn range(&mut self, key: ApiKey) -> Option<(i16, i16)> {
        let mut req = ApiVersionsRequest::default();
        req.client_software_name = s("delegation-tokens");
        req.client_software_version = s("1");
        let ResponseKind::ApiVersions(r) =
            self.call(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(req))
        else {
            unreachable!()
        };
        r.api_keys
            .iter()
            .find(|a| a.api_key == key as i16)
            .map(|a| (a.min_version, a.max_version))
    }
}

fn owned_by(owner: Option<(&str, &str)>) -> CreateDelegationTokenRequest {
    let mut r = CreateDelegationTokenRequest::default();
    // Without an owner the fields keep their defaults, which every version can carry.
    if let Some((kind, name)) = owner {
        r.owner_principal_type = Some(s(kind));
        r.owner_principal_name = Some(s(name));
    }
    r.max_lifetime_ms = -1;
    r
}

fn names(r: &CreateDelegationTokenResponse) -> [&str; 4] {
    [
        r.principal_type.as_str(),
        r.principal_name.as_str(),
        r.token_requester_principal_type.as_str(),
        r.token_requester_principal_name.as_str(),
    ]
}

fn timestamps(r: &CreateDelegationTokenResponse) -> [i64; 3] {
    [
        r.issue_timestamp_ms,
        r.expiry_timestamp_ms,
        r.max_timestamp_ms,
    ]
}

const TOKEN_APIS: [(ApiKey, i16, i16); 4] = [
    (ApiKey::CreateDelegationToken, 1, 3),
    (ApiKey::RenewDelegationToken, 1, 2),
    (ApiKey::ExpireDelegationToken, 1, 2),
    (ApiKey::DescribeDelegationToken, 1, 3),
];

#[test]
fn token_requests_are_refused_over_plaintext_and_disabled_over_sasl() {
    let samsa = Running::start();

    // PLAINTEXT: advertised at Kafka 4's versions, every request refused.
    let mut plain = samsa.connect(samsa.plaintext);
    for (key, min, max) in TOKEN_APIS {
        assert_eq!(plain.range(key), Some((min, max)), "{key:?}");
    }
    for version in 1..=3 {
        let r = plain.create(version, owned_by(None));
        assert_eq!(r.error_code, NOT_ALLOWED, "v{version}");
        assert_eq!(timestamps(&r), [-1; 3]);
        assert_eq!((r.token_id.as_str(), r.hmac.len()), ("", 0));
        let requester = if version >= 3 {
            ["User", "ANONYMOUS"]
        } else {
            [""; 2]
        };
        assert_eq!(names(&r), ["User", "ANONYMOUS", requester[0], requester[1]]);
        let r = plain.describe(version, None);
        assert_eq!((r.error_code, r.tokens.len()), (NOT_ALLOWED, 0));
    }
    let r = plain.create(3, owned_by(Some(("User", "bob"))));
    assert_eq!(names(&r), ["User", "bob", "User", "ANONYMOUS"]);
    for version in 1..=2 {
        assert_eq!(plain.renew_and_expire(version), [(NOT_ALLOWED, -1); 2]);
    }

    // SASL_PLAINTEXT as alice: the controller's answer, the feature is off.
    let mut sasl = samsa.connect(samsa.sasl);
    sasl.authenticate();
    for version in 1..=3 {
        let r = sasl.create(version, owned_by(None));
        assert_eq!(r.error_code, AUTH_DISABLED, "v{version}");
        assert_eq!(timestamps(&r), [0; 3]);
        let requester = if version >= 3 {
            ["User", "alice"]
        } else {
            [""; 2]
        };
        assert_eq!(names(&r), ["User", "alice", requester[0], requester[1]]);
        for owners in [None, Some(vec![]), Some(vec!["alice"])] {
            let r = sasl.describe(version, owners);
            assert_eq!((r.error_code, r.tokens.len()), (AUTH_DISABLED, 0));
        }
    }
    // Without an authorizer alice may ask for bob's token; renewers must be users.
    let r = sasl.create(3, owned_by(Some(("User", "bob"))));
    assert_eq!(
        (r.error_code, names(&r)),
        (AUTH_DISABLED, ["User", "bob", "User", "alice"])
    );
    let mut group_renewed = owned_by(None);
    let mut renewer = CreatableRenewers::default();
    renewer.principal_type = s("Group");
    renewer.principal_name = s("g");
    group_renewed.renewers.push(renewer);
    let r = sasl.create(3, group_renewed);
    assert_eq!(
        (r.error_code, timestamps(&r)),
        (INVALID_PRINCIPAL_TYPE, [-1; 3])
    );
    for version in 1..=2 {
        assert_eq!(sasl.renew_and_expire(version), [(AUTH_DISABLED, 0); 2]);
    }

    // The controller listener advertises them too, as Kafka's controllers do, and refuses a
    // PLAINTEXT requester; DescribeDelegationToken has no handler on Kafka's controllers.
    let mut controller = samsa.connect(samsa.controller);
    for (key, min, max) in TOKEN_APIS {
        assert_eq!(controller.range(key), Some((min, max)), "{key:?}");
    }
    assert_eq!(controller.create(3, owned_by(None)).error_code, NOT_ALLOWED);
    assert_eq!(controller.renew_and_expire(2), [(NOT_ALLOWED, -1); 2]);
    assert_eq!(
        controller.describe(3, None).error_code,
        UNKNOWN_SERVER_ERROR
    );
}
