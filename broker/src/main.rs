//! `samsa`: with no subcommand (or `serve`), a Kafka-compatible broker on 127.0.0.1:9092.
//! Broker settings use Kafka's property names: `--config server.properties`,
//! `--<property>=<value>` flags and `SAMSA_<PROPERTY>` environment variables.

use std::path::PathBuf;
use std::process::ExitCode;

use samsa_broker::config::BrokerConfig;

/// mimalloc keeps freed memory for reuse instead of returning large blocks to the kernel at
/// once: with glibc, every ~1 MiB fetch buffer was a fresh mmap whose pages faulted in again.
/// Counted, for the metrics endpoint's `samsa_heap_allocations_total`.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: samsa_broker::alloc_count::Counting<mimalloc::MiMalloc> =
    samsa_broker::alloc_count::Counting(mimalloc::MiMalloc);

/// With `--features system-allocator`, glibc's malloc, so that heap profilers which intercept
/// `malloc` (heaptrack, valgrind's massif) see every allocation: a build for memory profiles.
#[cfg(feature = "system-allocator")]
#[global_allocator]
static GLOBAL: samsa_broker::alloc_count::Counting<std::alloc::System> =
    samsa_broker::alloc_count::Counting(std::alloc::System);

const USAGE: &str = "\
samsa: a Kafka-compatible message broker

USAGE:
    samsa [serve] [--config FILE] [--<property>=<value> ...]

    Serves a broker (one node on 127.0.0.1:9092, data in ./samsa-data by default).
    Properties use Kafka's names, e.g. --listeners=PLAINTEXT://127.0.0.1:19092
    --log.dirs=./data --num.partitions=3; SAMSA_LOG_DIRS=... works too.
    Samsa's own: --io-engine=auto|uring|epoll, --shards=N, --log.durable=true.

    samsa --help | --version   (the version and the git commit it was built from)

DEV (a throwaway node for tests and trying things):
    samsa dev [--port N] [--keep] [--<property>=<value> ...]
    One node on 127.0.0.1:N (9092; --port 0 asks the kernel for a free port), data in a new
    temporary directory deleted at exit (--keep keeps it; --log.dirs=DIR uses DIR and keeps it),
    auto-create on, KIP-848 consumer groups, share groups and streams groups on (beside classic
    ones), internal topics at replication factor 1, group.initial.rebalance.delay.ms=0, no
    Prometheus endpoint, one shard, and no fsync on the write path (log.durable=false, Kafka's
    default: produces are answered from the page cache; a crash of samsa loses nothing, a power
    loss can lose the last minute). Once serving, prints `log.dirs=DIR` and
    `bootstrap.servers=HOST:PORT` on stdout.
    Any property, file or SAMSA_* variable overrides these presets.

ADMIN (Kafka protocol; works against Apache Kafka too; -b host:port, --format json,
       --command-config FILE for TLS and SASL: a Kafka client properties file):
    samsa topic create|list|describe|delete|alter-config|add-partitions ...
    samsa group list|describe|delete|reset-offsets ...
    samsa user scram-set NAME --password PW|--password-stdin [--mechanism SCRAM-SHA-512]
                                   [--iterations N]   (SCRAM credentials, KIP-554)
    samsa user scram-delete NAME --mechanism M        samsa user list|describe [NAME ...]
    samsa quota list [ENTITY FILTER] [--strict]    (client quotas, KIP-546; a filter per type:
                     --user U (exact), --user-default, bare --user (any); --client-id, --ip alike)
    samsa quota describe ENTITY FILTER             (as kafka-configs --describe prints it)
    samsa quota set ENTITY --producer-byte-rate N --consumer-byte-rate N --request-percentage P
                    --controller-mutation-rate R --connection-creation-rate N [--validate-only]
                    (any of them; ENTITY: --user U|--user-default and/or
                     --client-id C|--client-id-default, or --ip IP|--ip-default)
    samsa quota delete ENTITY --key K [--key K ...] [--validate-only]
    samsa produce TOPIC < lines        samsa consume TOPIC [-g GROUP] [-n COUNT]
    samsa cluster info                 samsa dump-log SEGMENT.log
    samsa cluster add-controller --id N --endpoint HOST:PORT   (a dynamic quorum, KIP-853)
    samsa cluster remove-controller --id N
    samsa cluster local --nodes 3      (a local cluster, one process per node; Ctrl-C stops it;
                                        --controllers 3 --brokers 3 for separate controllers)
    samsa <command> --help shows the options of each.

STORAGE:
    samsa storage format --standalone [--cluster-id ID] [--config FILE] [--<property>=<value> ...]
    Makes this node, given controller.quorum.bootstrap.servers, the only voter of a new
    dynamic metadata quorum (KIP-853); other controllers join with cluster add-controller.
";

/// The version and the git commit of this build (`build.rs`; `unknown` outside a repository,
/// `-dirty` when tracked files differed from it).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("GIT_COMMIT_OF_SAMSA"),
    ")"
);

fn main() -> ExitCode {
    #[cfg(not(feature = "system-allocator"))]
    samsa_broker::alloc_count::tune_memory();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if samsa_broker::cli::is_command(&args) {
        return samsa_broker::cli::run(&args);
    }
    let rest: &[String] = match args.first().map(String::as_str) {
        Some("storage") => return storage(&args[1..]),
        Some("serve") => &args[1..],
        Some("dev") if args[1..].iter().any(|a| a == "-h" || a == "--help") => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some("dev") => {
            return match dev(&args[1..]) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("samsa dev: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some("-V" | "--version") => {
            println!("samsa {VERSION}");
            return ExitCode::SUCCESS;
        }
        _ => &args[..],
    };
    match serve(rest) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("samsa: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Parses `--config FILE`, `--key=value` and `--key value` into the broker configuration.
/// `serve`'s arguments: an optional properties file and `--key=value` properties.
type ServeArgs = (Option<PathBuf>, Vec<(String, String)>);

fn parse_serve_args(args: &[String]) -> anyhow::Result<ServeArgs> {
    let mut file = None;
    let mut flags = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let Some(body) = arg.strip_prefix("--") else {
            anyhow::bail!("unexpected argument '{arg}' (properties are given as --<property>=<value>; see --help)");
        };
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => {
                i += 1;
                let v = args
                    .get(i)
                    .ok_or_else(|| anyhow::anyhow!("--{body} needs a value"))?;
                (body.to_string(), v.clone())
            }
        };
        // Samsa's own spellings of its settings.
        let key = match key.as_str() {
            "io-engine" => "io.engine".to_string(),
            "shards" => "num.shards".to_string(),
            _ => key,
        };
        if key == "config" {
            file = Some(PathBuf::from(value));
        } else {
            flags.push((key, value));
        }
        i += 1;
    }
    Ok((file, flags))
}

/// `samsa storage format --standalone [--cluster-id ID] <serve arguments>`.
fn storage(args: &[String]) -> ExitCode {
    let run = || -> anyhow::Result<String> {
        if args.first().map(String::as_str) != Some("format") {
            anyhow::bail!("usage: samsa storage format --standalone [--cluster-id ID] [--config FILE] [--<property>=<value> ...]");
        }
        let mut standalone = false;
        let mut rest = Vec::new();
        let mut it = args[1..].iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--standalone" | "-s" => standalone = true,
                "--cluster-id" | "-t" => {
                    let id = it
                        .next()
                        .ok_or_else(|| anyhow::anyhow!("--cluster-id needs a value"))?;
                    rest.push(format!("--cluster.id={id}"));
                }
                other => match other.strip_prefix("--cluster-id=") {
                    Some(id) => rest.push(format!("--cluster.id={id}")),
                    None => rest.push(other.to_string()),
                },
            }
        }
        if !standalone {
            anyhow::bail!("format needs --standalone (the first controller of a dynamic quorum); nodes with controller.quorum.voters, and controllers that join a dynamic quorum, need no format step");
        }
        let (file, flags) = parse_serve_args(&rest)?;
        let config = BrokerConfig::load(file.as_deref(), std::env::vars(), flags)?;
        samsa_broker::cli::storage::format_standalone(&config)
    };
    match run() {
        Ok(done) => {
            println!("{done}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("samsa: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// `samsa dev`: serve with `samsa_broker::dev`'s presets below the usual sources.
fn dev(args: &[String]) -> anyhow::Result<()> {
    use samsa_broker::dev;
    let a = dev::parse_args(args).map_err(anyhow::Error::msg)?;
    let (file, flags) = parse_serve_args(&a.rest)?;
    let load = |presets: &[(&str, String)]| {
        BrokerConfig::load_over(
            presets,
            "samsa dev",
            file.as_deref(),
            std::env::vars(),
            flags.clone(),
        )
    };
    // Which of the listener and the data directory the other sources already set.
    let given = load(&dev::presets(None, None))?;
    let listeners_given = given.origin("listeners").is_some();
    if listeners_given && a.port.is_some() {
        anyhow::bail!("--port and listeners set together; give one of them");
    }
    let port = if listeners_given {
        None
    } else {
        Some(dev::resolve_port(a.port)?)
    };
    let temp = if given.origin("log.dirs").is_none() && given.origin("log.dir").is_none() {
        Some(dev::temp_data_dir()?)
    } else {
        None
    };
    let config = load(&dev::presets(port, temp.as_deref()))?;
    let bootstrap = config
        .advertised_listeners()
        .first()
        .map(|l| format!("{}:{}", l.host, l.port))
        .unwrap_or_default();
    let data = config.log_dir();
    let result = serve_config(
        config,
        |config| {
            tracing::info!(
                bootstrap_servers = %bootstrap,
                data = %config.log_dir().display(),
                data_deleted_at_exit = temp.is_some() && !a.keep,
                "samsa dev: {}",
                dev::SUMMARY
            );
        },
        || {
            // The only lines on stdout, once serving: the data directory, then the address
            // scripts and the Python and JS helpers wait for.
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "log.dirs={}", data.display());
            let _ = writeln!(out, "bootstrap.servers={bootstrap}");
            let _ = out.flush();
        },
    );
    if let (Some(dir), false) = (&temp, a.keep) {
        if let Err(e) = std::fs::remove_dir_all(dir) {
            // Not eprintln!: a helper that started this node may be gone with its stderr.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "samsa dev: could not delete {}: {e}",
                dir.display()
            );
        }
    }
    result
}

fn serve(args: &[String]) -> anyhow::Result<()> {
    let (file, flags) = parse_serve_args(args)?;
    let config = BrokerConfig::load(file.as_deref(), std::env::vars(), flags)?;
    serve_config(config, |_| {}, || {})
}

/// Runs the node of `config` until it stops; `announce` logs after the configuration lines.
fn serve_config(
    config: BrokerConfig,
    announce: impl FnOnce(&BrokerConfig),
    serving: impl FnOnce(),
) -> anyhow::Result<()> {
    init_logging(&config);
    // Secrets (passwords, keys, JAAS configs) are never logged.
    let explicit: Vec<String> = config
        .explicit()
        .map(|(k, v)| {
            if BrokerConfig::is_sensitive(k) {
                format!("{k}=[hidden]")
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    tracing::info!(
        version = VERSION,
        config = %if explicit.is_empty() { "defaults".to_string() } else { explicit.join(" ") },
        "starting samsa"
    );
    // What the broker will actually do, defaults included, so a log alone answers "how was
    // this node configured?".
    let listed = |key: &str| config.list(key).join(",");
    tracing::info!(
        listeners = %listed("listeners"),
        advertised_listeners = %config
            .advertised_listeners()
            .iter()
            .map(|l| format!("{}://{}:{}", l.name, l.host, l.port))
            .collect::<Vec<_>>()
            .join(","),
        log_dirs = %config.log_dir().display(),
        node_id = config.int("node.id"),
        io_engine = %config.get("io.engine").unwrap_or_default(),
        num_partitions = config.int("num.partitions"),
        auto_create_topics = config.bool("auto.create.topics.enable"),
        log_durable = config.bool("log.durable"),
        metrics_listener = %config.get("metrics.listener").unwrap_or_default(),
        "effective configuration"
    );
    announce(&config);
    samsa_broker::server::run_then(config, serving)
}

fn init_logging(config: &BrokerConfig) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .or_else(|| config.get("log.level"))
        .unwrap_or_else(|| "info".into());
    let (env_filter, bad_filter) = match tracing_subscriber::EnvFilter::try_new(&filter) {
        Ok(f) => (f, None),
        Err(e) => (
            tracing_subscriber::EnvFilter::new("info"),
            Some((filter.clone(), e)),
        ),
    };
    // The filter is reloadable: IncrementalAlterConfigs on the BROKER_LOGGER resource changes
    // levels while the node runs (config::loggers).
    let (env_filter, handle) = tracing_subscriber::reload::Layer::new(env_filter);
    let start = if bad_filter.is_some() {
        "info"
    } else {
        filter.as_str()
    };
    samsa_broker::config::loggers::install(
        start,
        Box::new(move |directives: &str| {
            let f =
                tracing_subscriber::EnvFilter::try_new(directives).map_err(|e| e.to_string())?;
            handle.reload(f).map_err(|e| e.to_string())
        }),
    );
    tracing_subscriber::registry()
        .with(env_filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_target(false)
                // Colour only for people: a log file or a pipe gets plain text.
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_writer(std::io::stderr),
        )
        .with(samsa_broker::config::loggers::TargetRegistry)
        .init();
    if let Some((filter, e)) = bad_filter {
        tracing::warn!(
            "log level '{filter}' is not a level or tracing filter ({e}); logging at info. \
             Use error, warn, info, debug or trace, or a filter such as samsa_broker=debug"
        );
    }
    for (key, origin) in config.retired() {
        tracing::warn!("{key} (from {origin}) was removed in Kafka 4.0 and has no effect");
    }
    if samsa_broker::share::listed_in_protocols(config) {
        // Kafka 4.4's words: the share.version feature alone turns share groups on and off.
        tracing::warn!(
            "'share' in `group.coordinator.rebalance.protocols` is deprecated. Share groups are \
             controlled by the 'share.version' feature. This config will be removed in Kafka 5.0."
        );
    }
}
