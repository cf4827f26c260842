//! `samsa dev`: one throwaway node for tests and for trying Samsa. Its presets sit below the
//! usual sources (properties file, `SAMSA_*` variables, flags), so any of them can be
//! overridden; without `--log.dirs` (or `log.dir`) the data lives in a new temporary
//! directory that is deleted when the node stops.

use std::path::{Path, PathBuf};

/// What `samsa dev` sets, besides its listener and data directory.
pub const PRESETS: &[(&str, &str)] = &[
    // Topics come into being when a client names them.
    ("auto.create.topics.enable", "true"),
    // One node: the internal topics get one replica each, and need one in sync.
    ("offsets.topic.replication.factor", "1"),
    ("transaction.state.log.replication.factor", "1"),
    ("transaction.state.log.min.isr", "1"),
    ("share.coordinator.state.topic.replication.factor", "1"),
    // Every group protocol: classic, KIP-848 consumer groups and KIP-1071 streams groups
    // (Kafka's default, stated); a new cluster finalizes group.version 1 and streams.version 1.
    (
        "group.coordinator.rebalance.protocols",
        "classic,consumer,streams",
    ),
    // No wait for more members before a new group's first rebalance.
    ("group.initial.rebalance.delay.ms", "0"),
    // Writes are answered from the page cache, never after an fsync (Kafka's default too).
    ("log.durable", "false"),
    // No Prometheus endpoint: a fixed port would collide between test nodes.
    ("metrics.listener", ""),
    // One event loop: a test node serves a few clients, and starts sooner with fewer threads.
    ("num.shards", "1"),
];

/// The group features need no setting: a new cluster finalizes `group.version` 1 (KIP-848),
/// `share.version` 2 and `streams.version` 1, and a dev node is always a new cluster unless
/// given a data directory that holds one.
pub const SUMMARY: &str = "auto-create topics on; KIP-848 consumer groups on (group.version 1), \
     share groups on (share.version 2), streams groups on (streams.version 1), classic groups; \
     internal topics at replication factor 1; group.initial.rebalance.delay.ms=0; fsync: none on \
     the write path (log.durable=false: produces are answered from the page cache, a crash of \
     samsa loses nothing, a power loss of the machine can lose the last minute)";

/// `samsa dev`'s own options: `--port N` (0: a free port, asked of the kernel) and
/// `--keep` (do not delete the temporary data directory at exit). The rest are serve's.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DevArgs {
    pub port: Option<u16>,
    pub keep: bool,
    pub rest: Vec<String>,
}

pub fn parse_args(args: &[String]) -> Result<DevArgs, String> {
    let mut out = DevArgs::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = match a.as_str() {
            "--port" | "-p" => Some(
                it.next()
                    .ok_or_else(|| "--port needs a value".to_string())?
                    .clone(),
            ),
            "--keep" => {
                out.keep = true;
                continue;
            }
            other => other.strip_prefix("--port=").map(str::to_string),
        };
        match value {
            Some(v) => {
                let port = v
                    .parse::<u16>()
                    .map_err(|_| format!("--port: '{v}' is not a port number (0 to 65535)"))?;
                out.port = Some(port);
            }
            None => out.rest.push(a.clone()),
        }
    }
    Ok(out)
}

/// The port `--port` asks for: 0 becomes a port the kernel reports free on 127.0.0.1 (another
/// process could take it before the node binds it; the node then fails to start).
pub fn resolve_port(port: Option<u16>) -> std::io::Result<u16> {
    match port {
        None => Ok(9092),
        Some(0) => Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
            .local_addr()?
            .port()),
        Some(p) => Ok(p),
    }
}

/// The presets for a node on `port` (None: the listeners come from the other sources) with its
/// data in `data_dir` (None: from the other sources).
pub fn presets(port: Option<u16>, data_dir: Option<&Path>) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> =
        PRESETS.iter().map(|(k, v)| (*k, v.to_string())).collect();
    if let Some(p) = port {
        out.push(("listeners", format!("PLAINTEXT://127.0.0.1:{p}")));
    }
    if let Some(d) = data_dir {
        out.push(("log.dirs", d.display().to_string()));
    }
    out
}

/// A new, empty directory for a dev node's data under the system's temporary directory.
pub fn temp_data_dir() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    for attempt in 0..100u32 {
        let dir = base.join(format!(
            "samsa-dev-{}-{:08x}",
            std::process::id(),
            nanos.wrapping_add(attempt)
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free name for a temporary data directory",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn dev_options_are_taken_out_and_the_rest_kept_in_order() {
        let a = parse_args(&args(&[
            "--port",
            "0",
            "--num.partitions=3",
            "--keep",
            "--x",
            "y",
        ]))
        .unwrap();
        assert_eq!(a.port, Some(0));
        assert!(a.keep);
        assert_eq!(a.rest, args(&["--num.partitions=3", "--x", "y"]));
        assert_eq!(
            parse_args(&args(&["--port=19092"])).unwrap().port,
            Some(19092)
        );
        assert!(parse_args(&args(&["--port"])).is_err());
        assert!(parse_args(&args(&["--port=70000"])).is_err());
        assert_eq!(parse_args(&[]).unwrap(), DevArgs::default());
    }

    #[test]
    fn port_zero_is_a_free_port_and_none_is_kafkas() {
        assert_eq!(resolve_port(None).unwrap(), 9092);
        assert_eq!(resolve_port(Some(19093)).unwrap(), 19093);
        let p = resolve_port(Some(0)).unwrap();
        assert_ne!(p, 0);
        std::net::TcpListener::bind(("127.0.0.1", p)).expect("the port is free");
    }

    #[test]
    fn presets_are_valid_and_every_source_overrides_them() {
        let dir = Path::new("/tmp/samsa-dev-test");
        let p = presets(Some(19094), Some(dir));
        let flags = vec![("num.partitions".to_string(), "3".to_string())];
        let cfg = BrokerConfig::load_over(&p, "samsa dev", None, Vec::new(), flags).unwrap();
        assert_eq!(cfg.int("group.initial.rebalance.delay.ms"), 0);
        assert_eq!(
            cfg.list("group.coordinator.rebalance.protocols"),
            vec!["classic", "consumer", "streams"]
        );
        assert_eq!(cfg.int("offsets.topic.replication.factor"), 1);
        assert_eq!(cfg.int("transaction.state.log.replication.factor"), 1);
        assert_eq!(
            cfg.int("share.coordinator.state.topic.replication.factor"),
            1
        );
        assert!(!cfg.bool("log.durable"));
        assert!(cfg.bool("auto.create.topics.enable"));
        assert_eq!(cfg.get("metrics.listener").unwrap_or_default(), "");
        assert_eq!(cfg.list("listeners"), vec!["PLAINTEXT://127.0.0.1:19094"]);
        assert_eq!(cfg.log_dir(), dir);
        assert_eq!(cfg.int("num.partitions"), 3);
        assert_eq!(cfg.origin("log.durable"), Some("samsa dev"));

        let env = vec![
            ("SAMSA_LOG_DURABLE".to_string(), "true".to_string()),
            (
                "SAMSA_GROUP_INITIAL_REBALANCE_DELAY_MS".to_string(),
                "100".to_string(),
            ),
        ];
        let flags = vec![(
            "listeners".to_string(),
            "PLAINTEXT://127.0.0.1:19095".to_string(),
        )];
        let cfg = BrokerConfig::load_over(&p, "samsa dev", None, env, flags).unwrap();
        assert!(cfg.bool("log.durable"));
        assert_eq!(cfg.int("group.initial.rebalance.delay.ms"), 100);
        assert_eq!(cfg.list("listeners"), vec!["PLAINTEXT://127.0.0.1:19095"]);
    }

    #[test]
    fn temp_data_dirs_are_new_and_distinct() {
        let a = temp_data_dir().unwrap();
        let b = temp_data_dir().unwrap();
        assert_ne!(a, b);
        assert!(a.is_dir() && b.is_dir());
        assert_eq!(std::fs::read_dir(&a).unwrap().count(), 0);
        std::fs::remove_dir(&a).unwrap();
        std::fs::remove_dir(&b).unwrap();
    }
}
