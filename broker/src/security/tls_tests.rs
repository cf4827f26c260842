//! Tests of the TLS layer: settings, principals, and real handshakes and transfers between
//! a rustls client on a thread and the server halves over both I/O engines.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::FileExt as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rand::Rng;
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType, DnValue, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use samsa_protocol::FileRange;

use super::suites::iana_name;
use super::*;
use crate::net::transport::{EpollRead, EpollWrite, SocketRead, SocketWrite};

// ---- certificates ----

struct Ca {
    cert: Certificate,
    key: KeyPair,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).unwrap();
    Ca { cert, key }
}

/// A certificate for `dn` (in encoding order: most general first) signed by `ca`.
fn leaf(ca: &Ca, dn: &[(DnType, DnValue)], expired: bool) -> (Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    params.distinguished_name = DistinguishedName::new();
    for (t, v) in dn {
        params.distinguished_name.push(t.clone(), v.clone());
    }
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
    (cert, key)
}

fn cn(name: &str) -> Vec<(DnType, DnValue)> {
    vec![
        (DnType::CountryName, "US".into()),
        (DnType::OrganizationName, "acme".into()),
        (DnType::OrganizationalUnitName, "eng".into()),
        (DnType::CommonName, name.into()),
    ]
}

/// A CA, a server certificate from it in a PEM keystore file, and the CA in a truststore file.
struct Pki {
    dir: tempfile::TempDir,
    ca: Ca,
    keystore: String,
    truststore: String,
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("test ca");
    let (cert, key) = leaf(&ca, &cn("broker"), false);
    // As `openssl pkcs12 -nodes` writes it: attributes before each block, CRLF line ends.
    let keystore = format!(
        "Bag Attributes\n    friendlyName: broker\nKey Attributes: <No Attributes>\n{}\
         Bag Attributes\n    friendlyName: broker\nsubject=CN = broker\n{}{}",
        key.serialize_pem(),
        cert.pem(),
        ca.cert.pem()
    );
    let keystore = write(&dir, "keystore.pem", &keystore.replace('\n', "\r\n"));
    let truststore = write(&dir, "truststore.pem", &ca.cert.pem());
    Pki {
        dir,
        ca,
        keystore,
        truststore,
    }
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// Settings of listener SSL from key/value pairs.
fn try_settings(pairs: &[(&str, &str)]) -> Result<TlsSettings, String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    settings("SSL", &|k| map.get(k).cloned())
}

fn server_settings(pki: &Pki, extra: &[(&str, &str)]) -> TlsSettings {
    let mut pairs = vec![
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", pki.keystore.as_str()),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", pki.truststore.as_str()),
    ];
    pairs.extend_from_slice(extra);
    try_settings(&pairs).unwrap()
}

fn client_config(ca: &Ca, identity: Option<&(Certificate, KeyPair)>) -> Arc<ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.cert.der().clone()).unwrap();
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![cert.der().clone()],
                rustls_pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

fn tls_client(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
) -> StreamOwned<ClientConnection, TcpStream> {
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let conn = ClientConnection::new(config, "localhost".try_into().unwrap()).unwrap();
    StreamOwned::new(conn, sock)
}

/// Runs `server` on a current-thread runtime with the epoll halves of one accepted
/// connection, while `client` runs on a thread against its address.
fn with_epoll<T: Send + 'static, S>(
    client: impl FnOnce(SocketAddr) -> T + Send + 'static,
    server: impl FnOnce(EpollRead, EpollWrite) -> S,
) -> (T, S::Output)
where
    S: std::future::Future,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || client(addr));
        let (stream, _) = listener.accept().await.unwrap();
        let (r, w) = stream.into_split();
        let out = server(EpollRead(r), EpollWrite(w)).await;
        (client.join().unwrap(), out)
    })
}

const HANDSHAKE: Duration = Duration::from_secs(10);

// ---- transfers ----

/// Reads with random limits and echoes with random write shapes, the two halves running
/// side by side as a connection runs them; ends when the client closes.
async fn echo<R: SocketRead, W: SocketWrite>(mut r: TlsRead<R>, mut w: TlsWrite<W>) -> usize {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
    let reading = async move {
        let mut total = 0;
        loop {
            let max = rand::thread_rng().gen_range(1..40_000);
            let (n, mut buf) = r.read(BytesMut::with_capacity(64 * 1024), max).await;
            let n = n.unwrap();
            if n == 0 {
                return total;
            }
            assert!(n <= max && buf.len() == n);
            total += n;
            tx.send(buf.split().freeze()).unwrap();
        }
    };
    let writing = async move {
        let mut k = 0;
        while let Some(first) = rx.recv().await {
            let mut chunks = vec![first];
            while let Ok(more) = rx.try_recv() {
                chunks.push(more);
            }
            k += 1;
            if k % 2 == 0 {
                for c in chunks {
                    w.write_all(c).await.unwrap();
                }
            } else {
                w.write_all_vectored(chunks).await.unwrap();
            }
        }
    };
    tokio::join!(reading, writing).0
}

/// Client side of the round trip: 3 MiB in random pieces, then reads the echo back.
fn round_trip_client(addr: SocketAddr, config: Arc<ClientConfig>) -> bool {
    let mut rng = rand::thread_rng();
    let data: Vec<u8> = (0..3 << 20).map(|_| rng.gen()).collect();
    let mut tls = tls_client(addr, config);
    let mut sent = 0;
    let mut writes = 0;
    while sent < data.len() {
        let n = rng.gen_range(1..100_000).min(data.len() - sent);
        tls.write_all(&data[sent..sent + n]).unwrap();
        sent += n;
        // TLS 1.3 KeyUpdates asking for the server's: its answer, queued by the server's
        // reading half, must go out before anything its writing half encrypts after it.
        // (TLS 1.2 has none: there the call fails.)
        writes += 1;
        if [2, 9, 25].contains(&writes) {
            let _ = tls.conn.refresh_traffic_keys();
        }
    }
    tls.flush().unwrap();
    let mut back = vec![0u8; data.len()];
    tls.read_exact(&mut back).unwrap();
    tls.conn.send_close_notify();
    let _ = tls.flush();
    back == data
}

#[test]
fn round_trip_of_3_mib_over_epoll() {
    let pki = pki();
    let settings = server_settings(&pki, &[]);
    let config = client_config(&pki.ca, None);
    let (same, echoed) = with_epoll(
        move |addr| round_trip_client(addr, config),
        |r, w| async move {
            let (r, w, principal) = accept(&settings, r, w, HANDSHAKE).await.unwrap();
            assert_eq!(principal, "User:ANONYMOUS");
            echo(r, w).await
        },
    );
    assert!(same, "echoed bytes differ");
    assert_eq!(echoed, 3 << 20);
}

#[test]
fn round_trip_over_tls12_with_a_named_suite() {
    let pki = pki();
    let settings = server_settings(
        &pki,
        &[
            ("ssl.enabled.protocols", "TLSv1.2"),
            (
                "ssl.cipher.suites",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            ),
        ],
    );
    let config = client_config(&pki.ca, None);
    let (same, echoed) = with_epoll(
        move |addr| round_trip_client(addr, config),
        |r, w| async move {
            let (r, w, _) = accept(&settings, r, w, HANDSHAKE).await.unwrap();
            echo(r, w).await
        },
    );
    assert!(same);
    assert_eq!(echoed, 3 << 20);
}

#[test]
fn round_trip_over_io_uring() {
    if io_uring::IoUring::new(8).is_err() {
        eprintln!("io_uring unavailable here: skipped");
        return;
    }
    let pki = pki();
    let settings = server_settings(&pki, &[]);
    let config = client_config(&pki.ca, None);
    tokio_uring::start(async {
        let listener = tokio_uring::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || round_trip_client(addr, config));
        let (stream, _) = listener.accept().await.unwrap();
        let stream = std::rc::Rc::new(stream);
        let r = crate::net::transport::UringRead(stream.clone());
        let w = crate::net::transport::UringWrite::new(stream);
        let (r, w, _) = accept(&settings, r, w, HANDSHAKE).await.unwrap();
        assert_eq!(echo(r, w).await, 3 << 20);
        assert!(client.join().unwrap());
    });
}

#[test]
fn file_ranges_go_through_tls_whole_and_a_truncated_file_is_an_error() {
    let pki = pki();
    let settings = server_settings(&pki, &[]);
    let config = client_config(&pki.ca, None);
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.path().join("segment"))
        .unwrap();
    let len = 8 << 20;
    let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    file.write_all_at(&bytes, 10).unwrap();
    let range = FileRange {
        file: Arc::new(file),
        position: 10,
        len,
    };
    let (got, ()) = with_epoll(
        move |addr| {
            let mut tls = tls_client(addr, config);
            let mut got = vec![0u8; 4 + len + 4];
            tls.read_exact(&mut got).unwrap();
            got
        },
        |r, w| async move {
            let (_r, mut w, _) = accept(&settings, r, w, HANDSHAKE).await.unwrap();
            let mut head = vec![Bytes::from_static(b"he"), Bytes::from_static(b"ad")];
            w.write_before_file(&mut head).await.unwrap();
            assert!(head.is_empty());
            w.send_file(&range).await.unwrap();
            w.write_all(Bytes::from_static(b"tail")).await.unwrap();
            range.file.set_len(10 + 100).unwrap();
            let err = w.send_file(&range).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
        },
    );
    assert_eq!(&got[..4], b"head");
    assert!(got[4..4 + len] == bytes[..], "file bytes differ");
    assert_eq!(&got[4 + len..], b"tail");
}

#[test]
fn a_read_abandoned_by_a_timeout_loses_nothing_and_a_dropped_socket_reads_as_closed() {
    let pki = pki();
    let settings = server_settings(&pki, &[]);
    let config = client_config(&pki.ca, None);
    let ((), got) = with_epoll(
        move |addr| {
            let mut tls = tls_client(addr, config);
            tls.write_all(b"hello").unwrap();
            std::thread::sleep(Duration::from_millis(300));
            tls.write_all(b" world").unwrap();
            // Ends the TCP stream without a close_notify, then waits for the server to close.
            tls.sock.shutdown(std::net::Shutdown::Write).unwrap();
            let _ = tls.sock.read_to_end(&mut Vec::new());
        },
        |r, w| async move {
            let (mut r, _w, _) = accept(&settings, r, w, HANDSHAKE).await.unwrap();
            let mut got = BytesMut::new();
            let mut timeouts = 0;
            loop {
                let read = r.read(BytesMut::with_capacity(64), 64);
                match tokio::time::timeout(Duration::from_millis(50), read).await {
                    Err(_) => timeouts += 1,
                    Ok((n, buf)) => match n.unwrap() {
                        0 => break,
                        _ => got.extend_from_slice(&buf),
                    },
                }
            }
            assert!(timeouts > 0);
            got
        },
    );
    assert_eq!(&got[..], b"hello world");
}

// ---- handshakes ----

/// Accepts one client under `settings` and returns what `accept` said, with the time it took.
fn handshake_with(
    settings: TlsSettings,
    client: impl FnOnce(SocketAddr) + Send + 'static,
    timeout: Duration,
) -> (io::Result<String>, Duration) {
    let ((), out) = with_epoll(client, |r, w| async move {
        let start = Instant::now();
        let r = accept(&settings, r, w, timeout).await.map(|(_, _, p)| p);
        (r, start.elapsed())
    });
    out
}

/// A TLS client that completes its side of the handshake and then waits for the server to
/// speak or close (so a refusal after the client's last flight is seen by the server).
fn tls_peer(config: Arc<ClientConfig>) -> impl FnOnce(SocketAddr) + Send + 'static {
    move |addr| {
        let mut tls = tls_client(addr, config);
        let _ = tls.conn.complete_io(&mut tls.sock);
        let mut b = [0u8; 1];
        let _ = tls.read(&mut b);
    }
}

#[test]
fn mutual_tls_names_the_client_and_refuses_untrusted_expired_and_missing_certificates() {
    let pki = pki();
    let rules = (
        "ssl.principal.mapping.rules",
        "RULE:^CN=([A-Za-z]+),.*$/$1/L,DEFAULT",
    );
    let required = || server_settings(&pki, &[("ssl.client.auth", "required"), rules]);

    let alice = leaf(&pki.ca, &cn("Alice"), false);
    let (r, _) = handshake_with(
        required(),
        tls_peer(client_config(&pki.ca, Some(&alice))),
        HANDSHAKE,
    );
    assert_eq!(r.unwrap(), "User:alice");

    // A DN no rule but DEFAULT matches keeps its RFC 2253 form.
    let odd = leaf(&pki.ca, &cn("bob-2"), false);
    let (r, _) = handshake_with(
        required(),
        tls_peer(client_config(&pki.ca, Some(&odd))),
        HANDSHAKE,
    );
    assert_eq!(r.unwrap(), "User:CN=bob-2,OU=eng,O=acme,C=US");

    let other = ca("other ca");
    let mallory = leaf(&other, &cn("mallory"), false);
    let (r, _) = handshake_with(
        required(),
        tls_peer(client_config(&pki.ca, Some(&mallory))),
        HANDSHAKE,
    );
    let err = r.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
    assert!(err.to_string().contains("untrusted"), "{err}");

    let old = leaf(&pki.ca, &cn("old"), true);
    let (r, _) = handshake_with(
        required(),
        tls_peer(client_config(&pki.ca, Some(&old))),
        HANDSHAKE,
    );
    let err = r.unwrap_err();
    assert!(err.to_string().contains("expired"), "{err}");

    let (r, _) = handshake_with(
        required(),
        tls_peer(client_config(&pki.ca, None)),
        HANDSHAKE,
    );
    let err = r.unwrap_err();
    assert!(err.to_string().contains("no certificate"), "{err}");

    let requested = server_settings(&pki, &[("ssl.client.auth", "requested"), rules]);
    let (r, _) = handshake_with(requested, tls_peer(client_config(&pki.ca, None)), HANDSHAKE);
    assert_eq!(r.unwrap(), "User:ANONYMOUS");
    let requested = server_settings(&pki, &[("ssl.client.auth", "requested"), rules]);
    let (r, _) = handshake_with(
        requested,
        tls_peer(client_config(&pki.ca, Some(&alice))),
        HANDSHAKE,
    );
    assert_eq!(r.unwrap(), "User:alice");
}

#[test]
fn a_client_no_rule_applies_to_is_refused() {
    let pki = pki();
    let settings = server_settings(
        &pki,
        &[
            ("ssl.client.auth", "required"),
            ("ssl.principal.mapping.rules", "RULE:^CN=admin,.*$/admin/"),
        ],
    );
    let alice = leaf(&pki.ca, &cn("alice"), false);
    let (r, _) = handshake_with(
        settings,
        tls_peer(client_config(&pki.ca, Some(&alice))),
        HANDSHAKE,
    );
    let err = r.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    assert!(
        err.to_string().contains("CN=alice,OU=eng,O=acme,C=US"),
        "{err}"
    );
}

#[test]
fn a_plaintext_client_fails_the_handshake_promptly() {
    let pki = pki();
    let settings = server_settings(&pki, &[]);
    let (r, took) = handshake_with(
        settings,
        |addr| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            // ApiVersions v3, correlation id 1, client id "hello".
            s.write_all(&[
                0, 0, 0, 15, 0, 18, 0, 3, 0, 0, 0, 1, 0, 5, b'h', b'e', b'l', b'l', b'o', 0, 0,
            ])
            .unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
        },
        HANDSHAKE,
    );
    let err = r.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    assert!(err.to_string().contains("did not speak TLS"), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn a_silent_client_times_the_handshake_out() {
    let pki = pki();
    let settings = server_settings(&pki, &[]);
    let (r, took) = handshake_with(
        settings,
        |addr| {
            let mut s = TcpStream::connect(addr).unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
        },
        Duration::from_millis(200),
    );
    assert_eq!(r.unwrap_err().kind(), io::ErrorKind::TimedOut);
    assert!(took < Duration::from_secs(5));
}

// ---- settings ----

fn err_of(pairs: &[(&str, &str)]) -> String {
    try_settings(pairs).unwrap_err()
}

#[test]
fn settings_refuse_what_samsa_cannot_honour_and_name_the_key() {
    let pki = pki();
    let ks = pki.keystore.as_str();
    let ts = pki.truststore.as_str();

    let e = err_of(&[("ssl.keystore.location", ks)]);
    assert!(
        e.contains("listener SSL")
            && e.contains("ssl.keystore.type")
            && e.contains("=PEM or PKCS12"),
        "{e}"
    );
    let e = err_of(&[("ssl.keystore.type", "JKS"), ("ssl.keystore.location", ks)]);
    assert!(e.contains("`JKS`") && e.contains("PKCS12"), "{e}");
    let e = err_of(&[("ssl.keystore.type", "PEM")]);
    assert!(e.contains("ssl.keystore.location"), "{e}");
    let e = err_of(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", "/nonexistent/ks.pem"),
    ]);
    assert!(
        e.contains("ssl.keystore.location") && e.contains("/nonexistent/ks.pem"),
        "{e}"
    );

    // The key of one certificate with the certificate of another.
    let (a, _) = leaf(&pki.ca, &cn("a"), false);
    let (_, b_key) = leaf(&pki.ca, &cn("b"), false);
    let mismatched = write(
        &pki.dir,
        "mismatched.pem",
        &format!("{}{}", b_key.serialize_pem(), a.pem()),
    );
    let e = err_of(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &mismatched),
    ]);
    assert!(e.contains("does not match"), "{e}");

    let only_cert = write(&pki.dir, "cert-only.pem", &a.pem());
    let e = err_of(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &only_cert),
    ]);
    assert!(e.contains("private key"), "{e}");
    let only_key = write(&pki.dir, "key-only.pem", &b_key.serialize_pem());
    let e = err_of(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &only_key),
    ]);
    assert!(e.contains("no PEM certificate"), "{e}");

    let encrypted = write(
        &pki.dir,
        "encrypted.pem",
        &format!(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIBvTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQI\n-----END ENCRYPTED PRIVATE KEY-----\n{}",
            a.pem()
        ),
    );
    let e = err_of(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &encrypted),
        ("ssl.key.password", "secret"),
    ]);
    assert!(
        e.contains("encrypted") && e.contains("ssl.key.password"),
        "{e}"
    );

    let base = [("ssl.keystore.type", "PEM"), ("ssl.keystore.location", ks)];
    let with = |more: &[(&'static str, &'static str)]| {
        let mut v: Vec<(&str, &str)> = base.to_vec();
        v.extend_from_slice(more);
        v
    };
    let e = err_of(&with(&[("ssl.client.auth", "required")]));
    assert!(
        e.contains("ssl.client.auth") && e.contains("truststore"),
        "{e}"
    );
    let e = err_of(&with(&[("ssl.client.auth", "sometimes")]));
    assert!(e.contains("ssl.client.auth"), "{e}");
    let e = err_of(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", ks),
        ("ssl.truststore.location", ts),
    ]);
    assert!(e.contains("ssl.truststore.type"), "{e}");

    let e = err_of(&with(&[("ssl.enabled.protocols", "TLSv1.1")]));
    assert!(
        e.contains("ssl.enabled.protocols") && e.contains("rustls does not offer"),
        "{e}"
    );
    let e = err_of(&with(&[("ssl.enabled.protocols", " , ")]));
    assert!(e.contains("ssl.enabled.protocols"), "{e}");
    let s = try_settings(&with(&[("ssl.enabled.protocols", "TLSv1.1, TLSv1.2")])).unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(s.warnings[0].contains("TLSv1.1"));

    let e = err_of(&with(&[("ssl.cipher.suites", "TLS_RSA_WITH_RC4_128_MD5")]));
    assert!(e.contains("ssl.cipher.suites"), "{e}");
    let e = err_of(&with(&[("ssl.principal.mapping.rules", "RULE:x")]));
    assert!(
        e.contains("ssl.principal.mapping.rules") && e.contains("RULE:x"),
        "{e}"
    );
}

#[test]
fn settings_accept_kafka_spellings() {
    let pki = pki();
    let ks = pki.keystore.as_str();
    let s = try_settings(&[
        ("ssl.keystore.type", "pem"),
        ("ssl.keystore.location", ks),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", pki.truststore.as_str()),
        ("ssl.client.auth", "REQUIRED"),
        ("ssl.key.password", "ignored"),
        (
            "ssl.cipher.suites",
            "TLS_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_BOGUS, tls_aes_128_gcm_sha256",
        ),
    ])
    .unwrap();
    assert_eq!(s.client_auth(), ClientAuth::Required);
    let suites: Vec<String> = s
        .server_config()
        .crypto_provider()
        .cipher_suites
        .iter()
        .map(iana_name)
        .collect();
    assert_eq!(
        suites,
        [
            "TLS_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
        ]
    );
    assert!(
        s.warnings.iter().any(|w| w.contains("TLS_BOGUS")),
        "{:?}",
        s.warnings
    );
    assert!(
        s.warnings.iter().any(|w| w.contains("ssl.key.password")),
        "{:?}",
        s.warnings
    );
    assert!(!s.server_config().ignore_client_order);
    assert!(s.server_config().alpn_protocols.is_empty());

    // Only TLS 1.3 suites: TLS 1.2 is left out with a warning.
    let s = try_settings(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", ks),
        ("ssl.cipher.suites", "TLS_AES_256_GCM_SHA384"),
    ])
    .unwrap();
    assert!(
        s.warnings.iter().any(|w| w.contains("TLSv1_2")),
        "{:?}",
        s.warnings
    );

    // Inline PEM, as a properties file with continued lines delivers it: on one line.
    let text = std::fs::read_to_string(ks).unwrap();
    let key_end =
        text.find("-----END PRIVATE KEY-----").unwrap() + "-----END PRIVATE KEY-----".len();
    let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let key = one_line(&text[..key_end]);
    let chain = one_line(&text[key_end..]);
    let s = try_settings(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.key", &key),
        ("ssl.keystore.certificate.chain", &chain),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.certificates", &one_line(&pki.ca.cert.pem())),
        ("ssl.client.auth", "requested"),
    ]);
    assert!(s.is_ok(), "{:?}", s.err());
}

#[test]
fn the_ktls_probe_answers_and_keeps_its_answer() {
    fn shared_by_shards<T: Send + Sync>(_: &T) {}
    shared_by_shards(&server_settings(&pki(), &[]));
    let available = ktls_available();
    eprintln!("kernel TLS available: {available}");
    assert_eq!(ktls_available(), available);
}

// ---- principals ----

fn mapper(rules: &str) -> PrincipalMapper {
    PrincipalMapper::parse(rules).unwrap()
}

#[test]
fn principal_mapping_rules_follow_kafka() {
    let m = mapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U ,DEFAULT");
    assert_eq!(
        m.map("CN=kafka1,OU=ServiceUsers,O=Org,C=US").unwrap(),
        "kafka1"
    );
    assert_eq!(
        m.map("CN=Duke,OU=JavaSoft,O=Sun,L=SF,ST=CA,C=US").unwrap(),
        "duke@javasoft"
    );
    assert_eq!(
        m.map("cn=alice,ou=eng,dc=acme,dc=com").unwrap(),
        "ALICE@ENG"
    );
    assert_eq!(m.map("CN=someone,O=else").unwrap(), "CN=someone,O=else");

    // No DEFAULT: no match is an error naming the DN.
    let m = mapper("RULE:^CN=([a-z]+)$/$1/");
    assert_eq!(m.map("CN=bob").unwrap(), "bob");
    let e = m.map("CN=Bob,O=x").unwrap_err();
    assert!(e.contains("CN=Bob,O=x"), "{e}");

    // Newlines separate rules too; whitespace around rules is ignored; empty rules too.
    let m = mapper("\n RULE:^O=(.*)$/org-$1/ \n,, DEFAULT\n");
    assert_eq!(m.map("O=x").unwrap(), "org-x");
    assert_eq!(m.map("C=y").unwrap(), "C=y");

    // Escapes: `\/` in a pattern and a replacement, `\$` literal, `$9` beyond the groups
    // literal (as Kafka does), `${name}` named groups, `$12` with one group is `$1` then `2`.
    let m = mapper(r"RULE:^CN=([^,]+),O=a\/b$/$1\/\$$9/");
    assert_eq!(m.map("CN=x,O=a/b").unwrap(), "x/$$9");
    let m = mapper("RULE:^CN=(?<user>[^,]+).*$/${user}!/");
    assert_eq!(m.map("CN=x,O=y").unwrap(), "x!");
    let m = mapper("RULE:^CN=([^,]+).*$/$12/");
    assert_eq!(m.map("CN=x,O=y").unwrap(), "x2");
    // Java's replaceAll: the pattern also matches the empty end of the name.
    let m = mapper("RULE:(.*)/<$1>/");
    assert_eq!(m.map("abc").unwrap(), "<abc><>");
    // Matching is on the whole name, replacing on every match.
    let m = mapper("RULE:[a-z]+=?/x/, DEFAULT");
    assert_eq!(m.map("ab=").unwrap(), "x");
    assert_eq!(m.map("ab=c").unwrap(), "ab=c");

    for bad in [
        "",
        " , ",
        "RULE:x",
        "RULE:a/b",
        "RULE:a/b/X",
        "RULE:a/b/Lx",
        "DEFAULTX",
        "garbage",
        "RULE:(/x/",
        "RULE:a/$1/",
        "RULE:(a)/$x/",
        "RULE:(a)/x\\/",
        "RULE:(a)/${nope}/",
    ] {
        assert!(PrincipalMapper::parse(bad).is_err(), "{bad:?} parsed");
    }
}

#[test]
fn subjects_print_as_java_prints_them() {
    let ca = ca("ca");
    let dn = |entries: Vec<(DnType, DnValue)>| {
        let (cert, _) = leaf(&ca, &entries, false);
        subject_dn(cert.der()).unwrap()
    };
    assert_eq!(dn(cn("alice")), "CN=alice,OU=eng,O=acme,C=US");
    assert_eq!(
        dn(vec![
            (
                DnType::CountryName,
                DnValue::PrintableString("US".try_into().unwrap())
            ),
            (DnType::StateOrProvinceName, "CA".into()),
            (DnType::LocalityName, "SF".into()),
            (DnType::OrganizationName, "Acme, Inc.".into()),
            (DnType::CommonName, "a+b=c;d<e>f\"g\\h#i".into()),
        ]),
        r#"CN=a\+b\=c\;d\<e\>f\"g\\h\#i,O=Acme\, Inc.,L=SF,ST=CA,C=US"#
    );
    assert_eq!(
        dn(vec![(DnType::CommonName, "#lead ".into())]),
        r"CN=\#lead\ "
    );
    assert_eq!(
        dn(vec![(DnType::CommonName, "  two".into())]),
        r"CN=\ \ two"
    );
    // DC and UID have keywords; other types are dotted OIDs with the DER value in hex.
    assert_eq!(
        dn(vec![
            (
                DnType::CustomDnType(vec![0, 9, 2342, 19200300, 100, 1, 25]),
                "acme".into()
            ),
            (
                DnType::CustomDnType(vec![0, 9, 2342, 19200300, 100, 1, 1]),
                "u1".into()
            ),
            (
                DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
                DnValue::Ia5String("a@b".try_into().unwrap())
            ),
        ]),
        "1.2.840.113549.1.9.1=#1603614062,UID=u1,DC=acme"
    );

    // principal_of: no certificate is ANONYMOUS; one is mapped.
    let pki = pki();
    let s = server_settings(
        &pki,
        &[("ssl.principal.mapping.rules", "RULE:^CN=([^,]+),.*$/$1/U")],
    );
    assert_eq!(principal_of(&s, None).unwrap(), "User:ANONYMOUS");
    assert_eq!(principal_of(&s, Some(&[][..])).unwrap(), "User:ANONYMOUS");
    let (cert, _) = leaf(&ca, &cn("carol"), false);
    let chain: Vec<CertificateDer<'_>> = vec![cert.der().clone()];
    assert_eq!(principal_of(&s, Some(&chain)).unwrap(), "User:CAROL");
}

// ---- this node as a client of other nodes ----

/// Runs a handshake between two in-memory connections: Ok once both finished, else the side
/// that failed and why.
fn handshake_in_memory(
    client: &mut ClientConnection,
    server: &mut rustls::ServerConnection,
) -> Result<(), String> {
    for _ in 0..20 {
        let mut wire = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut wire).unwrap();
        }
        if !wire.is_empty() {
            server.read_tls(&mut &wire[..]).unwrap();
            server
                .process_new_packets()
                .map_err(|e| format!("server: {e}"))?;
        }
        let mut wire = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut wire).unwrap();
        }
        if !wire.is_empty() {
            client.read_tls(&mut &wire[..]).unwrap();
            client
                .process_new_packets()
                .map_err(|e| format!("client: {e}"))?;
        }
        if !client.is_handshaking() && !server.is_handshaking() {
            return Ok(());
        }
    }
    Err("the handshake did not finish".into())
}

/// A node's connection to a listener with `server` settings, as `name`, with the client side
/// made by [`super::client_config`] from `pairs`.
fn connect_as_node(
    pairs: &[(&str, &str)],
    server: &TlsSettings,
    name: &str,
) -> Result<rustls::ServerConnection, String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (config, _) = super::client_config("INTERNAL", &|k| map.get(k).cloned())?;
    let name = rustls_pki_types::ServerName::try_from(name.to_string()).unwrap();
    let mut client = ClientConnection::new(config, name).unwrap();
    let mut s = rustls::ServerConnection::new(server.server_config().clone()).unwrap();
    handshake_in_memory(&mut client, &mut s)?;
    Ok(s)
}

#[test]
fn nodes_verify_the_peer_for_its_name_and_present_their_keystore() {
    let pki = pki();
    let server = server_settings(&pki, &[]);
    let trusting = [
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", pki.truststore.as_str()),
    ];
    // The certificate names localhost and 127.0.0.1.
    for name in ["localhost", "127.0.0.1"] {
        connect_as_node(&trusting, &server, name).unwrap();
    }
    // Another name fails (Kafka's default ssl.endpoint.identification.algorithm=https)...
    let e = connect_as_node(&trusting, &server, "elsewhere.example").unwrap_err();
    assert!(
        e.contains("client") && e.contains("not valid for name"),
        "{e}"
    );
    let mut no_check = trusting.to_vec();
    no_check.push(("ssl.endpoint.identification.algorithm", ""));
    // ...unless the check is off; the chain is still verified.
    connect_as_node(&no_check, &server, "elsewhere.example").unwrap();
    let other = tempfile::tempdir().unwrap();
    let stranger = write(&other, "other-ca.pem", &ca("another ca").cert.pem());
    let mut untrusting = no_check.clone();
    untrusting[1].1 = stranger.as_str();
    let e = connect_as_node(&untrusting, &server, "localhost").unwrap_err();
    assert!(e.contains("UnknownIssuer"), "{e}");

    // A listener that requires client certificates gets the node's own keystore.
    let mtls = server_settings(&pki, &[("ssl.client.auth", "required")]);
    let e = connect_as_node(&trusting, &mtls, "localhost").unwrap_err();
    assert!(e.contains("server"), "{e}");
    let mut with_keystore = trusting.to_vec();
    with_keystore.extend([
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", pki.keystore.as_str()),
    ]);
    let s = connect_as_node(&with_keystore, &mtls, "localhost").unwrap();
    let presented = s.peer_certificates().expect("the node's certificate");
    assert_eq!(
        subject_dn(presented[0].as_ref()).unwrap(),
        "CN=broker,OU=eng,O=acme,C=US"
    );

    // Without a truststore there is nothing to verify peers against: refused.
    let e = connect_as_node(&[], &server, "localhost").unwrap_err();
    assert!(
        e.contains("listener INTERNAL: ssl.truststore.location"),
        "{e}"
    );
}

// ---- PKCS12 stores ----

/// `pki`'s keystore and truststore as PKCS12 files (as keytool and openssl write them: the key
/// and the certificates under the store's password), with `algorithm`.
fn pkcs12_stores(
    pki: &Pki,
    password: &str,
    algorithm: p12_keystore::EncryptionAlgorithm,
) -> (String, String) {
    use p12_keystore::{Certificate as P12Cert, KeyStore, KeyStoreEntry, PrivateKeyChain};
    let pem = std::fs::read_to_string(&pki.keystore)
        .unwrap()
        .replace("\r\n", "\n");
    let key = PrivateKeyDer::from_pem_slice(pem.as_bytes()).unwrap();
    let certs: Vec<P12Cert> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|c| P12Cert::from_der(c.unwrap().as_ref()).unwrap())
        .collect();
    let mut keystore = KeyStore::new();
    let chain = PrivateKeyChain::new(key.secret_der(), b"broker-key", certs);
    keystore.add_entry("broker", KeyStoreEntry::PrivateKeyChain(chain));
    let mut truststore = KeyStore::new();
    let ca = P12Cert::from_der(pki.ca.cert.der()).unwrap();
    truststore.add_entry("ca", KeyStoreEntry::Certificate(ca));
    let write = |store: &KeyStore, name: &str| {
        let bytes = store
            .writer(password)
            .encryption_algorithm(algorithm)
            .write()
            .unwrap();
        let path = pki.dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_str().unwrap().to_string()
    };
    (
        write(&keystore, "keystore.p12"),
        write(&truststore, "truststore.p12"),
    )
}

#[test]
fn pkcs12_keystores_and_truststores_serve_with_their_password() {
    let pki = pki();
    for algorithm in [
        p12_keystore::EncryptionAlgorithm::PbeWithHmacSha256AndAes256,
        p12_keystore::EncryptionAlgorithm::PbeWithShaAnd3KeyTripleDesCbc,
    ] {
        let (ks, ts) = pkcs12_stores(&pki, "store-secret", algorithm);
        let server = try_settings(&[
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", &ks),
            ("ssl.keystore.password", "store-secret"),
            ("ssl.truststore.type", "PKCS12"),
            ("ssl.truststore.location", &ts),
            ("ssl.truststore.password", "store-secret"),
            ("ssl.client.auth", "required"),
        ])
        .unwrap();
        // A node trusting the PKCS12 truststore reaches it, presenting the PKCS12 keystore.
        let node = [
            ("ssl.truststore.type", "PKCS12"),
            ("ssl.truststore.location", ts.as_str()),
            ("ssl.truststore.password", "store-secret"),
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", ks.as_str()),
            ("ssl.keystore.password", "store-secret"),
        ];
        let s = connect_as_node(&node, &server, "localhost").unwrap();
        assert!(s.peer_certificates().is_some(), "{algorithm:?}");
    }
    let (ks, _) = pkcs12_stores(
        &pki,
        "store-secret",
        p12_keystore::EncryptionAlgorithm::PbeWithHmacSha256AndAes256,
    );
    let with = |extra: &[(&str, &str)]| {
        let mut pairs = vec![
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", ks.as_str()),
        ];
        pairs.extend_from_slice(extra);
        try_settings(&pairs).map(|_| ()).unwrap_err()
    };
    let e = with(&[]);
    assert!(
        e.contains("ssl.keystore.password: a PKCS12 keystore needs"),
        "{e}"
    );
    let e = with(&[("ssl.keystore.password", "guess")]);
    assert!(
        e.contains("listener SSL: ssl.keystore.location: cannot open the PKCS12 store")
            && e.contains("wrong ssl.keystore.password")
            && !e.contains("guess"),
        "{e}"
    );
    let e = with(&[
        ("ssl.keystore.password", "store-secret"),
        ("ssl.key.password", "other"),
    ]);
    assert!(e.contains("ssl.key.password: differs"), "{e}");
    // A PEM file named PKCS12 is not a PKCS12 store.
    let e = try_settings(&[
        ("ssl.keystore.type", "PKCS12"),
        ("ssl.keystore.location", &pki.keystore),
        ("ssl.keystore.password", "x"),
    ])
    .map(|_| ())
    .unwrap_err();
    assert!(e.contains("cannot open the PKCS12 store"), "{e}");
}
