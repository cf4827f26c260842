//! The admin CLI over TLS and SASL, run as a user would: the real `samsa` binary with
//! `--command-config FILE` (a Kafka client properties file) against a real broker with SSL,
//! mutual-TLS, SASL_PLAINTEXT and SASL_SSL listeners. SCRAM credentials are set with
//! `samsa user scram-set` over the PLAINTEXT listener, then used to authenticate; certificates
//! are made here (rcgen): a CA, the broker's (SANs localhost and 127.0.0.1), one for another
//! host name, and a client's for mutual TLS.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use compat_tests::{Broker, BrokerOptions};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use serde_json::Value;

const CLI_TIMEOUT: Duration = Duration::from_secs(60);

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

/// The test PKI and the command configs, in a temporary directory.
struct Pki {
    dir: tempfile::TempDir,
    ca: PathBuf,
    /// Key and certificate chain in one file (Kafka's PEM keystore): the broker's, one for a
    /// host that is not 127.0.0.1, and alice's client certificate.
    server: PathBuf,
    elsewhere: PathBuf,
    alice: PathBuf,
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(DnType::CommonName, "samsa CLI test CA");
    let ca = p.self_signed(&ca_key).unwrap();
    let signed = |names: &[&str], cn: &str| -> String {
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut p = CertificateParams::new(names).unwrap();
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name.push(DnType::CommonName, cn);
        let cert = p.signed_by(&key, &ca, &ca_key).unwrap();
        format!("{}{}", key.serialize_pem(), cert.pem())
    };
    Pki {
        ca: write("ca.pem", &ca.pem()),
        server: write(
            "server.pem",
            &signed(&["localhost", "127.0.0.1"], "localhost"),
        ),
        elsewhere: write(
            "elsewhere.pem",
            &signed(&["elsewhere.invalid"], "elsewhere"),
        ),
        alice: write("alice.pem", &signed(&[], "alice")),
        dir,
    }
}

/// A broker with PLAINTEXT (the harness's), SSL, MTLS (SSL requiring client certificates),
/// ELSEWHERE (SSL with a certificate for another host), SASL_PLAINTEXT and SASL_SSL listeners.
struct Secured {
    broker: Broker,
    pki: Pki,
    ssl: String,
    mtls: String,
    elsewhere: String,
    sasl_plaintext: String,
    sasl_ssl: String,
}

fn start() -> Secured {
    let pki = pki();
    let ports = [(); 6].map(|_| compat_tests::free_port());
    let [plain, ssl, mtls, elsewhere, sasl_plaintext, sasl_ssl] = ports;
    let options = BrokerOptions {
        port: Some(plain),
        ..Default::default()
    }
    .prop(
        "listeners",
        format!(
            "PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl},MTLS://127.0.0.1:{mtls},\
             ELSEWHERE://127.0.0.1:{elsewhere},SASL_PLAINTEXT://127.0.0.1:{sasl_plaintext},\
             SASL_SSL://127.0.0.1:{sasl_ssl}"
        ),
    )
    .prop(
        "listener.security.protocol.map",
        "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,ELSEWHERE:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,\
         SASL_SSL:SASL_SSL",
    )
    .prop("ssl.keystore.type", "PEM")
    .prop("ssl.keystore.location", pki.server.display())
    .prop("ssl.truststore.type", "PEM")
    .prop("ssl.truststore.location", pki.ca.display())
    .prop("listener.name.mtls.ssl.client.auth", "required")
    .prop(
        "listener.name.elsewhere.ssl.keystore.location",
        pki.elsewhere.display(),
    )
    .prop(
        "sasl.enabled.mechanisms",
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    )
    .prop(
        "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        PLAIN_JAAS,
    )
    .prop("listener.name.sasl_ssl.plain.sasl.jaas.config", PLAIN_JAAS);
    let addr = |port: u16| format!("127.0.0.1:{port}");
    Secured {
        broker: Broker::start_with(options),
        pki,
        ssl: addr(ssl),
        mtls: addr(mtls),
        elsewhere: addr(elsewhere),
        sasl_plaintext: addr(sasl_plaintext),
        sasl_ssl: addr(sasl_ssl),
    }
}

/// Runs `samsa -b addr [--command-config config] ARGS` with `stdin`.
fn samsa(
    addr: &str,
    config: Option<&Path>,
    args: &[&str],
    stdin: &str,
) -> (ExitStatus, String, String) {
    let mut cmd = Command::new(compat_tests::samsa_bin());
    cmd.arg("-b").arg(addr);
    if let Some(c) = config {
        cmd.arg("--command-config").arg(c);
    }
    cmd.args(args);
    compat_tests::run_with_input(&mut cmd, stdin.as_bytes(), CLI_TIMEOUT)
        .unwrap_or_else(|e| panic!("samsa {args:?}: {e}"))
}

/// A command that must succeed; its stdout.
fn ok(addr: &str, config: Option<&Path>, args: &[&str], stdin: &str) -> String {
    let (status, out, err) = samsa(addr, config, args, stdin);
    assert!(status.success(), "samsa -b {addr} {args:?} failed: {err}");
    out
}

/// A command that must fail with exit code 1; its stderr.
fn fails(addr: &str, config: Option<&Path>, args: &[&str]) -> String {
    let (status, out, err) = samsa(addr, config, args, "");
    assert_eq!(
        status.code(),
        Some(1),
        "samsa {args:?} should fail: {out} {err}"
    );
    err
}

/// Writes a command config; `file` names it in the PKI's directory.
fn command_config(pki: &Pki, file: &str, lines: &[String]) -> PathBuf {
    let path = pki.dir.path().join(file);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn truststore(pki: &Pki) -> Vec<String> {
    vec![
        "ssl.truststore.type=PEM".into(),
        format!("ssl.truststore.location={}", pki.ca.display()),
    ]
}

fn sasl(protocol: &str, mechanism: &str, user: &str, password: &str) -> Vec<String> {
    let module = if mechanism == "PLAIN" {
        "org.apache.kafka.common.security.plain.PlainLoginModule"
    } else {
        "org.apache.kafka.common.security.scram.ScramLoginModule"
    };
    vec![
        format!("security.protocol={protocol}"),
        format!("sasl.mechanism={mechanism}"),
        format!("sasl.jaas.config={module} required username=\"{user}\" password=\"{password}\";"),
    ]
}

/// Creates `topic`, produces `lines` and reads them back, all through `addr` with `config`.
fn round_trip(addr: &str, config: &Path, topic: &str, lines: &[&str]) {
    let c = Some(config);
    let created = ok(addr, c, &["topic", "create", topic, "-p", "2"], "");
    assert!(
        created.contains(&format!("created topic '{topic}'")),
        "{created}"
    );
    let listed = ok(addr, c, &["topic", "list"], "");
    assert!(listed.lines().any(|l| l.starts_with(topic)), "{listed}");
    ok(addr, c, &["produce", topic], &(lines.join("\n") + "\n"));
    let n = lines.len().to_string();
    let out = ok(addr, c, &["consume", topic, "-n", &n, "-e"], "");
    let mut got: Vec<&str> = out.lines().collect();
    got.sort_unstable();
    let mut want = lines.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "{topic} over {addr}");
}

/// `user list --format json` as (user, mechanism, iterations).
fn scram_users(s: &Secured) -> Vec<(String, String, i64)> {
    let out = ok(
        &s.broker.bootstrap(),
        None,
        &["user", "list", "--format", "json"],
        "",
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let mut rows = Vec::new();
    for u in v.as_array().unwrap() {
        for c in u["credentials"].as_array().unwrap() {
            rows.push((
                u["user"].as_str().unwrap().to_string(),
                c["mechanism"].as_str().unwrap().to_string(),
                c["iterations"].as_i64().unwrap(),
            ));
        }
    }
    rows
}

fn set_alice(s: &Secured) {
    let plain = s.broker.bootstrap();
    let out = ok(
        &plain,
        None,
        &["user", "scram-set", "alice", "--password", "alice-256"],
        "",
    );
    assert!(
        out.contains("SCRAM-SHA-256 credential of user 'alice' (4096 iterations)"),
        "{out}"
    );
    let args = [
        "user",
        "scram-set",
        "alice",
        "--password-stdin",
        "--mechanism",
        "SCRAM-SHA-512",
        "--iterations",
        "8192",
    ];
    ok(&plain, None, &args, "alice-512\n");
}

#[test]
fn scram_users_set_with_the_cli_then_every_secured_listener_serves_it() {
    let s = start();
    set_alice(&s);
    assert_eq!(
        scram_users(&s),
        [
            ("alice".to_string(), "SCRAM-SHA-256".to_string(), 4096),
            ("alice".to_string(), "SCRAM-SHA-512".to_string(), 8192),
        ]
    );
    let pki = &s.pki;

    // SASL_SSL with SCRAM-SHA-512 as alice, the CA in a truststore file.
    let mut lines = sasl("SASL_SSL", "SCRAM-SHA-512", "alice", "alice-512");
    lines.extend(truststore(pki));
    let scram_ssl = command_config(pki, "scram-ssl.properties", &lines);
    round_trip(
        &s.sasl_ssl,
        &scram_ssl,
        "over-sasl-ssl",
        &["one", "two", "three"],
    );

    // SSL with only a truststore, given inline (continued lines), and a key the CLI ignores.
    let ca = std::fs::read_to_string(&pki.ca).unwrap();
    let inline = ca.trim_end().replace('\n', " \\\n    ");
    let ssl = command_config(
        pki,
        "ssl.properties",
        &[
            "security.protocol=SSL".into(),
            "ssl.truststore.type=PEM".into(),
            format!("ssl.truststore.certificates={inline}"),
            "request.timeout.ms=30000".into(),
        ],
    );
    let (status, _, err) = samsa(&s.ssl, Some(&ssl), &["topic", "list"], "");
    assert!(
        status.success() && err.contains("ignoring request.timeout.ms"),
        "{err}"
    );
    round_trip(&s.ssl, &ssl, "over-ssl", &["a", "b"]);

    // SASL_PLAINTEXT with PLAIN, and with SCRAM-SHA-256.
    let plain = sasl("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret");
    let plain = command_config(pki, "plain.properties", &plain);
    round_trip(
        &s.sasl_plaintext,
        &plain,
        "over-sasl-plaintext",
        &["x", "y", "z"],
    );
    let scram256 = sasl("SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", "alice-256");
    let scram256 = command_config(pki, "scram256.properties", &scram256);
    let read = ok(
        &s.sasl_plaintext,
        Some(&scram256),
        &["consume", "over-sasl-ssl", "-n", "3", "-e"],
        "",
    );
    assert_eq!(read.lines().count(), 3, "{read}");

    // Mutual TLS: alice's certificate and key in one PEM keystore.
    let mut lines = vec!["security.protocol=SSL".to_string()];
    lines.extend(truststore(pki));
    let no_cert = command_config(pki, "no-cert.properties", &lines);
    lines.push("ssl.keystore.type=PEM".into());
    lines.push(format!("ssl.keystore.location={}", pki.alice.display()));
    let mtls = command_config(pki, "mtls.properties", &lines);
    let listed = ok(&s.mtls, Some(&mtls), &["topic", "list"], "");
    assert!(listed.contains("over-ssl"), "{listed}");
    let err = fails(&s.mtls, Some(&no_cert), &["topic", "list"]);
    assert!(
        err.contains("CertificateRequired") && err.contains("ssl.keystore.location"),
        "{err}"
    );
}

#[test]
fn failures_are_reported_with_the_brokers_message_or_before_connecting() {
    let s = start();
    set_alice(&s);
    let pki = &s.pki;
    let config = |file: &str, mut lines: Vec<String>, tls: bool| {
        if tls {
            lines.extend(truststore(pki));
        }
        command_config(pki, file, &lines)
    };

    // Wrong passwords: exit code 1 and the broker's message.
    let wrong = config(
        "wrong.properties",
        sasl("SASL_SSL", "SCRAM-SHA-512", "alice", "nope"),
        true,
    );
    let err = fails(&s.sasl_ssl, Some(&wrong), &["topic", "list"]);
    assert!(
        err.contains("Authentication failed during authentication due to invalid credentials")
            && err.contains("SASL_AUTHENTICATION_FAILED"),
        "{err}"
    );
    let wrong = config(
        "wrong-plain.properties",
        sasl("SASL_PLAINTEXT", "PLAIN", "alice", "x"),
        false,
    );
    let err = fails(&s.sasl_plaintext, Some(&wrong), &["topic", "list"]);
    assert!(
        err.contains("Authentication failed: Invalid username or password"),
        "{err}"
    );

    // Kafka's default mechanism, GSSAPI, is refused before connecting (nothing listens there).
    let gssapi = config(
        "gssapi.properties",
        vec!["security.protocol=SASL_SSL".into()],
        true,
    );
    let nowhere = format!("127.0.0.1:{}", compat_tests::free_port());
    let err = fails(&nowhere, Some(&gssapi), &["topic", "list"]);
    assert!(
        err.contains("GSSAPI") && !err.contains("cannot reach"),
        "{err}"
    );
    let mut explicit = sasl("SASL_PLAINTEXT", "GSSAPI", "alice", "x");
    explicit.push("sasl.kerberos.service.name=kafka".into());
    let err = fails(
        &nowhere,
        Some(&config("k.properties", explicit, false)),
        &["topic", "list"],
    );
    assert!(err.contains("Kerberos is not supported"), "{err}");

    // A deleted credential no longer authenticates; the other mechanism's still does.
    let out = ok(
        &s.broker.bootstrap(),
        None,
        &[
            "user",
            "scram-delete",
            "alice",
            "--mechanism",
            "SCRAM-SHA-512",
        ],
        "",
    );
    assert!(
        out.contains("deleted the SCRAM-SHA-512 credential of user 'alice'"),
        "{out}"
    );
    assert_eq!(
        scram_users(&s),
        [("alice".to_string(), "SCRAM-SHA-256".to_string(), 4096)]
    );
    let gone = config(
        "gone.properties",
        sasl("SASL_SSL", "SCRAM-SHA-512", "alice", "alice-512"),
        true,
    );
    let err = fails(&s.sasl_ssl, Some(&gone), &["topic", "list"]);
    assert!(err.contains("SASL_AUTHENTICATION_FAILED"), "{err}");
    let kept = config(
        "kept.properties",
        sasl("SASL_SSL", "SCRAM-SHA-256", "alice", "alice-256"),
        true,
    );
    ok(&s.sasl_ssl, Some(&kept), &["topic", "list"], "");
    // The broker's refusals of credential changes, with its message.
    let err = fails(
        &s.broker.bootstrap(),
        None,
        &[
            "user",
            "scram-set",
            "bob",
            "--password",
            "pw",
            "--iterations",
            "1000",
        ],
    );
    assert!(
        err.contains("Too few iterations") && err.contains("UNACCEPTABLE_CREDENTIAL"),
        "{err}"
    );

    // The host name is checked unless ssl.endpoint.identification.algorithm is empty.
    let checked = config(
        "checked.properties",
        vec!["security.protocol=SSL".into()],
        true,
    );
    let err = fails(&s.elsewhere, Some(&checked), &["topic", "list"]);
    assert!(err.contains("not for '127.0.0.1'"), "{err}");
    let unchecked = config(
        "unchecked.properties",
        vec![
            "security.protocol=SSL".into(),
            "ssl.endpoint.identification.algorithm=".into(),
        ],
        true,
    );
    ok(&s.elsewhere, Some(&unchecked), &["topic", "list"], "");

    // Listeners and protocols that do not match say so.
    let err = fails(&s.ssl, None, &["topic", "list"]);
    assert!(err.contains("answers in TLS"), "{err}");
    let err = fails(&s.broker.bootstrap(), Some(&checked), &["topic", "list"]);
    assert!(err.contains("is this a TLS listener"), "{err}");
    let err = fails(&s.ssl, Some(&kept), &["topic", "list"]);
    assert!(err.contains("does not use SASL"), "{err}");
}
