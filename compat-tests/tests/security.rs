//! TLS and SASL on the real binary with real clients: kcat (librdkafka) over SSL with a
//! verified CA and with client certificates, kafka-python and confluent-kafka over SASL_PLAINTEXT
//! and SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, the SASL exchange's rules on the
//! wire, and ACLs that bind to the authenticated principal. Certificates are made here (rcgen):
//! a CA, the broker's (SANs 127.0.0.1 and localhost: librdkafka checks the host name), clients'
//! signed by the CA, one signed by another CA, one expired.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, MetadataResponse, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" \
    user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

/// The test PKI, as PEM files in a temporary directory.
struct Pki {
    dir: tempfile::TempDir,
    ca: PathBuf,
    /// The CA's certificate and key, to sign more server certificates.
    signer: (rcgen::Certificate, KeyPair),
    /// The broker's key and certificate chain in one file (Kafka's PEM keystore).
    server: PathBuf,
    /// (certificate, key) of clients: alice and carol signed by the CA, rogue by another CA,
    /// expired by the CA but no longer valid.
    alice: (PathBuf, PathBuf),
    carol: (PathBuf, PathBuf),
    rogue: (PathBuf, PathBuf),
    expired: (PathBuf, PathBuf),
}

fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    (p.self_signed(&key).unwrap(), key)
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let (ca_cert, ca_key) = ca("samsa test CA");
    let (other_cert, other_key) = ca("some other CA");
    let server = server_keystore(&ca_cert, &ca_key, "localhost");
    let client = |name: &str,
                  issuer: &rcgen::Certificate,
                  issuer_key: &KeyPair,
                  expired: bool|
     -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        // Encoded O then CN, as CAs usually do: Java names it CN=<name>,O=samsa tests. (rcgen's
        // default name has a CN already, which would stay first.)
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name
            .push(DnType::OrganizationName, "samsa tests");
        p.distinguished_name.push(DnType::CommonName, name);
        if expired {
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let cert = p.signed_by(&key, issuer, issuer_key).unwrap();
        (
            write(&format!("{name}.crt"), &cert.pem()),
            write(&format!("{name}.key"), &key.serialize_pem()),
        )
    };
    let alice = client("alice", &ca_cert, &ca_key, false);
    let carol = client("carol", &ca_cert, &ca_key, false);
    let rogue = client("rogue", &other_cert, &other_key, false);
    let expired = client("expired", &ca_cert, &ca_key, true);
    Pki {
        ca: write("ca.pem", &ca_cert.pem()),
        server: write("server.pem", &server),
        alice,
        carol,
        rogue,
        expired,
        signer: (ca_cert, ca_key),
        dir,
    }
}

/// A PEM keystore (key, then certificate) for the broker, named `cn`, with the SANs clients
/// check (127.0.0.1 and localhost).
fn server_keystore(ca_cert: &rcgen::Certificate, ca_key: &KeyPair, cn: &str) -> String {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(DnType::CommonName, cn);
    let cert = p.signed_by(&key, ca_cert, ca_key).unwrap();
    format!("{}{}", key.serialize_pem(), cert.pem())
}

/// The subject the TLS listener on `port` presents to a new connection (openssl s_client).
fn served_subject(port: u16) -> String {
    let out = Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("openssl s_client");
    let pem = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut x509 = Command::new("openssl")
        .args(["x509", "-noout", "-subject"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    x509.stdin
        .take()
        .unwrap()
        .write_all(pem.as_bytes())
        .unwrap();
    String::from_utf8_lossy(&x509.wait_with_output().unwrap().stdout)
        .trim()
        .to_string()
}

fn wait_for_subject(port: u16, cn: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let subject = served_subject(port);
        if subject.ends_with(&format!("CN = {cn}")) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still serving {subject:?}, not {cn}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_keystore_is_rotated_without_a_restart() {
    let s = start_secured(&[]);
    let (ca_cert, ca_key) = &s.pki.signer;
    wait_for_subject(s.ssl, "localhost");
    // A new keystore file named by the dynamic per-listener key (KIP-226).
    let rotated = s.pki.dir.path().join("rotated.pem");
    std::fs::write(
        &rotated,
        server_keystore(ca_cert, ca_key, "localhost-rotated"),
    )
    .unwrap();
    let key = "listener.name.ssl.ssl.keystore.location";
    let (code, message) = set_configs(&s.broker, 4, "1", &[(key, &rotated.display().to_string())]);
    assert_eq!(code, 0, "{message}");
    wait_for_subject(s.ssl, "localhost-rotated");
    kcat_round_trip(
        &addr(s.ssl),
        &tls_config(&s.pki, None),
        "after-rotation",
        &["ok"],
    )
    .unwrap();
    // The same file rewritten and set again: re-read, as Kafka does.
    std::fs::write(
        &rotated,
        server_keystore(ca_cert, ca_key, "localhost-third"),
    )
    .unwrap();
    let (code, message) = set_configs(&s.broker, 4, "1", &[(key, &rotated.display().to_string())]);
    assert_eq!(code, 0, "{message}");
    wait_for_subject(s.ssl, "localhost-third");
    // A keystore that does not load is refused, and the one in force stays.
    let (code, message) = set_configs(&s.broker, 4, "1", &[(key, "/nonexistent/keystore.pem")]);
    assert_eq!(code, 42, "INVALID_REQUEST: {message}");
    assert!(
        message.contains("SSLFactory") && message.contains("keystore"),
        "{message}"
    );
    assert_eq!(served_subject(s.ssl), "subject=CN = localhost-third");
    // Another listener's keystore (MTLS) did not change.
    assert!(!s
        .broker
        .log_lines()
        .iter()
        .any(|l| l.contains("reloaded") && l.contains("MTLS")));
}

/// A broker with a listener of each kind: PLAINTEXT (the harness's, and the tests' setup),
/// SSL, MTLS (SSL with required client certificates, the CN mapped to the principal),
/// SASL_PLAINTEXT and SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).
struct Secured {
    broker: Broker,
    pki: Pki,
    ssl: u16,
    mtls: u16,
    sasl_plaintext: u16,
    sasl_ssl: u16,
}

fn start_secured(extra: &[(&str, &str)]) -> Secured {
    let pki = pki();
    let [plain, ssl, mtls, sasl_plaintext, sasl_ssl] = [(); 5].map(|_| compat_tests::free_port());
    let mut options = BrokerOptions {
        port: Some(plain),
        ..Default::default()
    }
    .prop(
        "listeners",
        format!(
            "PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl},MTLS://127.0.0.1:{mtls},\
             SASL_PLAINTEXT://127.0.0.1:{sasl_plaintext},SASL_SSL://127.0.0.1:{sasl_ssl}"
        ),
    )
    .prop(
        "listener.security.protocol.map",
        "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
    )
    .prop("ssl.keystore.type", "PEM")
    .prop("ssl.keystore.location", pki.server.display())
    .prop("ssl.truststore.type", "PEM")
    .prop("ssl.truststore.location", pki.ca.display())
    .prop("listener.name.mtls.ssl.client.auth", "required")
    .prop(
        "listener.name.mtls.ssl.principal.mapping.rules",
        "RULE:^CN=([a-z]+).*$/$1/L",
    )
    .prop(
        "sasl.enabled.mechanisms",
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
    )
    .prop(
        "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        PLAIN_JAAS,
    )
    .prop("listener.name.sasl_ssl.plain.sasl.jaas.config", PLAIN_JAAS);
    for (k, v) in extra {
        options = options.prop(k, v);
    }
    Secured {
        broker: Broker::start_with(options),
        pki,
        ssl,
        mtls,
        sasl_plaintext,
        sasl_ssl,
    }
}

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

/// kcat with `args` after `-b addr` and the given `-X` settings; (success, stdout, stderr).
fn kcat(
    addr: &str,
    config: &[(&str, String)],
    args: &[&str],
    input: Option<&str>,
) -> (bool, String, String) {
    let mut cmd = Command::new(compat_tests::kcat());
    // cargo test points LD_LIBRARY_PATH at rdkafka-sys's build of librdkafka, which has no
    // OpenSSL: kcat must load the system's.
    cmd.env_remove("LD_LIBRARY_PATH");
    cmd.arg("-b").arg(addr);
    for (k, v) in config {
        cmd.arg("-X").arg(format!("{k}={v}"));
    }
    cmd.args(args);
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("kcat");
    if let Some(text) = input {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tls_config(pki: &Pki, cert: Option<&(PathBuf, PathBuf)>) -> Vec<(&'static str, String)> {
    let mut c = vec![
        ("security.protocol", "ssl".to_string()),
        ("ssl.ca.location", pki.ca.display().to_string()),
        ("socket.timeout.ms", "10000".into()),
        ("message.timeout.ms", "10000".into()),
    ];
    if let Some((crt, key)) = cert {
        c.push(("ssl.certificate.location", crt.display().to_string()));
        c.push(("ssl.key.location", key.display().to_string()));
    }
    c
}

/// Produces `lines` with kcat, then reads them back.
fn kcat_round_trip(
    addr: &str,
    config: &[(&str, String)],
    topic: &str,
    lines: &[&str],
) -> Result<(), String> {
    let input = lines.join("\n") + "\n";
    let (ok, _, err) = kcat(addr, config, &["-P", "-t", topic], Some(&input));
    if !ok {
        return Err(format!("produce: {err}"));
    }
    let n = lines.len().to_string();
    let (ok, out, err) = kcat(
        addr,
        config,
        &["-C", "-t", topic, "-o", "beginning", "-c", &n, "-e", "-q"],
        None,
    );
    if !ok {
        return Err(format!("consume: {err}"));
    }
    let got: Vec<&str> = out.lines().collect();
    if got != lines {
        return Err(format!("read back {got:?}, produced {lines:?}"));
    }
    Ok(())
}

/// The metadata kcat lists: which ports the brokers are advertised on.
fn kcat_metadata(addr: &str, config: &[(&str, String)]) -> (bool, String, String) {
    kcat(addr, config, &["-L"], None)
}

#[test]
fn tls_listeners_serve_kcat_with_a_verified_ca_and_with_client_certificates() {
    let s = start_secured(&[]);
    let pki = &s.pki;
    // SSL with a verified CA (and the host name checked).
    kcat_round_trip(
        &addr(s.ssl),
        &tls_config(pki, None),
        "tls-topic",
        &["one", "two", "three"],
    )
    .unwrap();
    // Metadata on the SSL listener names the SSL endpoint, never the plaintext one.
    let (ok, out, err) = kcat_metadata(&addr(s.ssl), &tls_config(pki, None));
    assert!(ok, "{err}");
    assert!(out.contains(&format!("127.0.0.1:{}", s.ssl)), "{out}");
    assert!(
        !out.contains(&format!("127.0.0.1:{}", s.broker.port)),
        "{out}"
    );

    // Mutual TLS: a certificate of the CA is served; none, another CA's or an expired one are
    // refused in the handshake.
    kcat_round_trip(
        &addr(s.mtls),
        &tls_config(pki, Some(&pki.alice)),
        "mtls-topic",
        &["a", "b"],
    )
    .unwrap();
    for (who, cert) in [
        ("no certificate", None),
        ("another CA's", Some(&pki.rogue)),
        ("expired", Some(&pki.expired)),
    ] {
        let (ok, out, err) = kcat_metadata(&addr(s.mtls), &tls_config(pki, cert));
        assert!(!ok, "{who}: served:\n{out}");
        assert!(
            err.contains("SSL")
                || err.contains("ssl")
                || err.contains("Disconnected")
                || err.contains("transport"),
            "{who}: {err}"
        );
    }

    // A plaintext client on the TLS port gets no Kafka answer, and the listener goes on serving.
    let mut raw = TcpStream::connect(("127.0.0.1", s.ssl)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = encode_request(ApiKey::ApiVersions, 3, &api_versions_request()).unwrap();
    raw.write_all(&req).unwrap();
    let mut answer = Vec::new();
    let _ = raw.read_to_end(&mut answer);
    assert!(
        answer.len() < 8 || answer[..4] != [0, 0, 0, answer.len() as u8 - 4],
        "a plaintext ApiVersions on the TLS port was answered: {answer:?}"
    );
    kcat_round_trip(
        &addr(s.ssl),
        &tls_config(pki, None),
        "tls-topic-2",
        &["still"],
    )
    .unwrap();
    let failed = |listener: &str| {
        metric(
            &s.broker,
            &format!(
                "samsa_authentications_total{{listener=\"{listener}\",result=\"tls_failure\"}}"
            ),
        )
    };
    assert!(failed("MTLS") >= 3.0, "three refused client certificates");
    assert!(failed("SSL") >= 1.0, "the plaintext client");
    assert!(s
        .broker
        .log_lines()
        .iter()
        .any(|l| l.contains("TLS handshake failed")));
}

/// A connection to a SASL listener, speaking the exchange by hand.
struct RawConn(TcpStream);

impl RawConn {
    fn open(port: u16) -> RawConn {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        RawConn(s)
    }
    fn request<
        Req: kafka_protocol::protocol::Encodable,
        Resp: kafka_protocol::protocol::Decodable,
    >(
        &mut self,
        key: ApiKey,
        version: i16,
        body: &Req,
    ) -> anyhow::Result<Resp> {
        self.0.write_all(&encode_request(key, version, body)?)?;
        read_response(&mut self.0, key, version)
    }
    fn handshake(&mut self, version: i16, mechanism: &str) -> SaslHandshakeResponse {
        let mut h = SaslHandshakeRequest::default();
        h.mechanism = StrBytes::from_string(mechanism.into());
        self.request(ApiKey::SaslHandshake, version, &h).unwrap()
    }
    fn authenticate(&mut self, token: &[u8]) -> anyhow::Result<SaslAuthenticateResponse> {
        let mut a = SaslAuthenticateRequest::default();
        a.auth_bytes = bytes::Bytes::copy_from_slice(token);
        self.request(ApiKey::SaslAuthenticate, 2, &a)
    }
    fn metadata(&mut self) -> anyhow::Result<MetadataResponse> {
        self.request(ApiKey::Metadata, 12, &metadata_request(None))
    }
    /// Whether the broker closed the connection (EOF) within the read timeout.
    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.0.read(&mut b), Ok(0))
    }
}

#[test]
fn the_sasl_exchange_follows_kafkas_rules_on_the_wire() {
    let s = start_secured(&[(
        "listener.name.sasl_plaintext.connections.max.reauth.ms",
        "1500",
    )]);
    // A request before authentication closes the connection.
    let mut c = RawConn::open(s.sasl_plaintext);
    assert!(c.metadata().is_err());
    assert!(c.closed());
    // ApiVersions is answered before the handshake; an unknown mechanism is refused with the
    // enabled ones, and the connection closes.
    let mut c = RawConn::open(s.sasl_plaintext);
    let v: ApiVersionsResponse = c
        .request(ApiKey::ApiVersions, 3, &api_versions_request())
        .unwrap();
    assert_eq!(v.error_code, 0);
    assert!(v
        .api_keys
        .iter()
        .any(|k| k.api_key == ApiKey::SaslAuthenticate as i16));
    let h = c.handshake(1, "GSSAPI");
    assert_eq!(h.error_code, 33, "UNSUPPORTED_SASL_MECHANISM");
    let offered: Vec<String> = h.mechanisms.iter().map(|m| m.to_string()).collect();
    assert_eq!(
        offered,
        ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
    );
    assert!(c.closed());
    // A wrong password: SASL_AUTHENTICATION_FAILED with Kafka's message, after the delay,
    // then the connection closes.
    let mut c = RawConn::open(s.sasl_plaintext);
    assert_eq!(c.handshake(1, "PLAIN").error_code, 0);
    let started = Instant::now();
    let a = c.authenticate(b"\0alice\0wrong").unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(90),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(a.error_code, 58, "SASL_AUTHENTICATION_FAILED");
    assert_eq!(
        a.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert!(c.closed());
    // The right one: then requests are served, as alice.
    let mut c = RawConn::open(s.sasl_plaintext);
    assert_eq!(c.handshake(1, "PLAIN").error_code, 0);
    let a = c.authenticate(b"\0alice\0alice-secret").unwrap();
    assert_eq!(a.error_code, 0, "{:?}", a.error_message);
    assert_eq!(a.session_lifetime_ms, 1500, "connections.max.reauth.ms");
    let m = c.metadata().unwrap();
    assert!(
        m.brokers.iter().all(|b| b.port == s.sasl_plaintext as i32),
        "{:?}",
        m.brokers
    );
    // KIP-368: the same principal re-authenticates on its connection before the session ends
    // and is served on; a connection past its session's end is closed at its next request.
    std::thread::sleep(Duration::from_millis(900));
    assert_eq!(c.handshake(1, "PLAIN").error_code, 0);
    let a = c.authenticate(b"\0alice\0alice-secret").unwrap();
    assert_eq!((a.error_code, a.session_lifetime_ms), (0, 1500));
    std::thread::sleep(Duration::from_millis(900));
    assert!(c.metadata().is_ok(), "re-authenticated 0.9 s ago");
    std::thread::sleep(Duration::from_millis(1700));
    assert!(c.metadata().is_err());
    assert!(c.closed());
    // Re-authentication as someone else fails and closes the connection.
    let mut c = RawConn::open(s.sasl_plaintext);
    assert_eq!(c.handshake(1, "PLAIN").error_code, 0);
    assert_eq!(
        c.authenticate(b"\0alice\0alice-secret").unwrap().error_code,
        0
    );
    assert_eq!(c.handshake(1, "PLAIN").error_code, 0);
    let a = c.authenticate(b"\0bob\0bob-secret").unwrap();
    assert_eq!(a.error_code, 58);
    assert!(
        a.error_message
            .as_deref()
            .is_some_and(|m| m.contains("Cannot change principals")),
        "{a:?}"
    );
    assert!(c.closed());

    let count = |result: &str| {
        metric(
            &s.broker,
            &format!(
                "samsa_authentications_total{{listener=\"SASL_PLAINTEXT\",result=\"{result}\"}}"
            ),
        )
    };
    assert_eq!(
        (count("success"), count("reauthenticated"), count("failure")),
        (2.0, 1.0, 2.0),
        "alice twice, re-authenticated once, refused twice (a wrong password, then bob in alice's session)"
    );
    // SaslHandshake v0: the tokens follow as raw frames.
    let mut c = RawConn::open(s.sasl_plaintext);
    assert_eq!(c.handshake(0, "PLAIN").error_code, 0);
    let token = b"\0bob\0bob-secret";
    c.0.write_all(&(token.len() as u32).to_be_bytes()).unwrap();
    c.0.write_all(token).unwrap();
    let mut size = [0u8; 4];
    c.0.read_exact(&mut size).unwrap();
    assert_eq!(size, [0, 0, 0, 0], "PLAIN's empty server token");
    assert!(c.metadata().is_ok());
    // On a listener without SASL, SaslAuthenticate is ILLEGAL_SASL_STATE and the connection
    // stays.
    let mut c = RawConn::open(s.broker.port);
    let a = c.authenticate(b"\0alice\0alice-secret").unwrap();
    assert_eq!(a.error_code, 34);
    assert_eq!(c.handshake(1, "PLAIN").error_code, 34);
    assert!(c.metadata().is_ok());
    // An oversized frame before authentication is refused (sasl.server.max.receive.size).
    let mut c = RawConn::open(s.sasl_plaintext);
    c.0.write_all(&(1u32 << 20).to_be_bytes()).unwrap();
    assert!(c.closed());
}

/// SCRAM credentials for alice and bob through the admin API, on the plaintext listener.
fn add_scram_users(broker: &Broker) {
    let script = r#"
import sys
from confluent_kafka.admin import AdminClient, UserScramCredentialUpsertion, ScramCredentialInfo, ScramMechanism
a = AdminClient({"bootstrap.servers": sys.argv[1]})
ups = []
for user, pw in [("alice", b"alice-scram"), ("bob", b"bob-scram")]:
    for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        ups.append(UserScramCredentialUpsertion(user, ScramCredentialInfo(m, 8192), pw))
# Kafka refuses a user altered twice in one request (DUPLICATE_RESOURCE): one at a time.
for u in ups:
    for f in a.alter_user_scram_credentials([u]).values():
        f.result(timeout=30)
"#;
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg("-c").arg(script).arg(broker.bootstrap());
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(60)).unwrap();
    assert!(status.success(), "{out}\n{err}");
}

fn run_python(s: &Secured, script: &str) {
    let path = compat_tests::workspace_root()
        .join("compat-tests/python")
        .join(script);
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg(&path)
        .arg(addr(s.sasl_plaintext))
        .arg(addr(s.sasl_ssl))
        .arg(&s.pki.ca);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(240)).unwrap();
    if !status.success() {
        let log = s.broker.log_lines();
        let tail = log[log.len().saturating_sub(200)..].join("\n");
        panic!("{script} failed ({status}):\nstdout:\n{out}\nstderr:\n{err}\nbroker log:\n{tail}");
    }
}

#[test]
fn python_clients_authenticate_with_plain_and_scram_over_sasl_plaintext_and_sasl_ssl() {
    let s = start_secured(&[(
        "listener.name.sasl_plaintext.connections.max.reauth.ms",
        "1500",
    )]);
    add_scram_users(&s.broker);
    run_python(&s, "sasl_clients.py");
    // KIP-368: librdkafka re-authenticates on its connection and keeps producing.
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg(compat_tests::workspace_root().join("compat-tests/python/sasl_reauth.py"))
        .arg(addr(s.sasl_plaintext));
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(60)).unwrap();
    assert!(status.success(), "{out}\n{err}");
    let log = s.broker.log_lines().join("\n");
    assert!(
        !log.contains("the SASL session ended"),
        "a connection outlived its session:\n{log}"
    );
}

#[test]
fn acls_bind_to_the_certificate_and_sasl_principals() {
    let s = start_secured(&[
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:ANONYMOUS"),
        ("auto.create.topics.enable", "false"),
    ]);
    create_topic(&s.broker, "guarded", 1, &[]);
    // alice may write and read `guarded`; nobody else is named.
    for op in [
        4i8, /* write */
        3,   /* read */
        8,   /* describe */
    ] {
        create_acl(&s.broker, "User:alice", "guarded", op);
    }
    let pki = &s.pki;
    kcat_round_trip(
        &addr(s.mtls),
        &tls_config(pki, Some(&pki.alice)),
        "guarded",
        &["from alice's certificate"],
    )
    .unwrap();
    let e = kcat_round_trip(
        &addr(s.mtls),
        &tls_config(pki, Some(&pki.carol)),
        "guarded",
        &["x"],
    )
    .unwrap_err();
    assert!(e.to_lowercase().contains("authoriz"), "carol: {e}");
    let sasl = |user: &str, password: &str| {
        vec![
            ("security.protocol", "sasl_plaintext".to_string()),
            ("sasl.mechanisms", "PLAIN".into()),
            ("sasl.username", user.into()),
            ("sasl.password", password.into()),
            ("message.timeout.ms", "10000".into()),
        ]
    };
    let (ok, _, err) = kcat(
        &addr(s.sasl_plaintext),
        &sasl("alice", "alice-secret"),
        &["-P", "-t", "guarded"],
        Some("from alice's password\n"),
    );
    assert!(ok, "{err}");
    let (ok, _, err) = kcat(
        &addr(s.sasl_plaintext),
        &sasl("bob", "bob-secret"),
        &["-P", "-t", "guarded"],
        Some("from bob\n"),
    );
    // kcat reports a failed delivery on stderr (its exit status does not always say it).
    assert!(
        err.to_lowercase().contains("authoriz"),
        "bob (exit ok: {ok}): {err}"
    );
}
