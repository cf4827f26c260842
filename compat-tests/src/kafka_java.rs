//! Apache Kafka's own Java client, Streams and tools as test clients: the jars come from Maven
//! Central through `scripts/reference/kafka install` (pinned, into `.tools`, once), the small
//! client programs of `compat-tests/java/*.java` are compiled against them once per change of
//! their sources, and each is run as a child process like the Python clients are.
//!
//! Java 17 and Maven are machine prerequisites, as cargo is; `scripts/test` installs the jars.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use crate::{run_with_timeout, workspace_root};

/// Where `scripts/reference/kafka install` puts Kafka's jars, installed on first use.
pub fn kafka_libs() -> PathBuf {
    static INSTALLED: Mutex<bool> = Mutex::new(false);
    let libs = workspace_root().join(".tools/kafka-4.4.0/libs");
    let mut done = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    if !*done {
        // The install is idempotent but not safe to run twice at once: one per test process,
        // and other processes see its completion marker.
        let mut cmd = Command::new(workspace_root().join("scripts/reference/kafka"));
        cmd.arg("install");
        let (status, out, err) = run_with_timeout(&mut cmd, Duration::from_secs(900))
            .expect("run scripts/reference/kafka install");
        assert!(
            status.success(),
            "scripts/reference/kafka install failed (it needs java and mvn):\n{out}\n{err}"
        );
        *done = true;
    }
    libs
}

fn classpath(extra: &[&Path]) -> String {
    let libs = kafka_libs();
    let mut jars: Vec<PathBuf> = std::fs::read_dir(&libs)
        .expect("Kafka's jars")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jar"))
        .collect();
    jars.sort();
    extra
        .iter()
        .map(|p| p.to_path_buf())
        .chain(jars)
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// `java` with Kafka's log4j2 settings (warnings to a file under `logs_dir`).
fn java(classpath: String, logs_dir: &Path) -> Command {
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(classpath)
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            workspace_root()
                .join("scripts/reference/log4j2.properties")
                .display()
        ))
        .arg(format!("-Dkafka.logs.dir={}", logs_dir.display()));
    cmd
}

/// The programs of `compat-tests/java`, compiled against Kafka's jars (again only when their
/// sources changed): the directory of their classes.
pub fn java_clients() -> PathBuf {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = built.as_ref() {
        return dir.clone();
    }
    let sources_dir = workspace_root().join("compat-tests/java");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&sources_dir)
        .expect("compat-tests/java")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    sources.sort();
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    for s in &sources {
        for b in std::fs::read(s).expect("a java source") {
            digest = (digest ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("target"));
    let out = target.join("compat-java").join(format!("{digest:016x}"));
    if !out.join(".complete").exists() {
        let staging = out.with_extension("partial");
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging).expect("a directory for compiled classes");
        let mut cmd = Command::new("javac");
        cmd.arg("-nowarn")
            .arg("-d")
            .arg(&staging)
            .arg("-cp")
            .arg(classpath(&[]))
            .args(&sources);
        let (status, o, e) =
            run_with_timeout(&mut cmd, Duration::from_secs(300)).expect("run javac");
        assert!(
            status.success(),
            "javac compat-tests/java failed:\n{o}\n{e}"
        );
        std::fs::write(staging.join(".complete"), b"").unwrap();
        let _ = std::fs::remove_dir_all(&out);
        std::fs::rename(&staging, &out).expect("install the compiled classes");
    }
    *built = Some(out.clone());
    out
}

/// A program of `compat-tests/java` (its class name), ready to take its arguments; its
/// client log goes to `logs_dir/server.log`.
pub fn java_client(class: &str, logs_dir: &Path) -> Command {
    let classes = java_clients();
    let mut cmd = java(classpath(&[&classes]), logs_dir);
    cmd.arg(class);
    cmd
}

/// One of Kafka's tools, as its `bin/kafka-*.sh` script runs it (the class, e.g.
/// `org.apache.kafka.tools.TopicCommand`), ready to take its arguments.
pub fn kafka_tool(class: &str, logs_dir: &Path) -> Command {
    let mut cmd = java(classpath(&[]), logs_dir);
    cmd.arg(class);
    cmd
}
