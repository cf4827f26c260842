//! Broker keys of the node itself: its id, listeners and data directories, sockets and
//! threads, logging and metrics, and the upkeep of its logs (retention checks, flushes,
//! checkpoints, the cleaner).

use super::types::ConfigType::*;
use super::types::{def, inert, ConfigDef};

/// The node, its listeners, sockets and data directories, logging, metrics and log upkeep.
#[rustfmt::skip]
pub(super) const NODE: &[ConfigDef] = &[
    def("node.id", Int, Some("1"), "this broker's id"),
    def(
        "broker.id",
        Int,
        Some("-1"),
        "synonym of node.id when node.id is not set; DescribeConfigs reports the node id",
    ),
    def(
        "listeners",
        List,
        Some("PLAINTEXT://127.0.0.1:9092"),
        "listeners, NAME://host:port",
    ),
    def(
        "advertised.listeners",
        List,
        None,
        "listeners as clients should reach them (Metadata)",
    ),
    def("log.dirs", List, None, "data directory (one is used); log.dir when unset"),
    def(
        "log.dir",
        List,
        Some("./samsa-data"),
        "data directory when log.dirs is not set",
    ),
    def(
        "num.partitions",
        Int,
        Some("1"),
        "partitions of an auto-created topic or CreateTopics with -1",
    ),
    def(
        "default.replication.factor",
        Int,
        Some("1"),
        "replication factor of auto-created topics",
    ),
    def(
        "auto.create.topics.enable",
        Boolean,
        Some("true"),
        "create topics named in Metadata requests",
    ),
    def(
        "delete.topic.enable",
        Boolean,
        Some("true"),
        "allow DeleteTopics",
    ),
    def(
        "socket.request.max.bytes",
        Int,
        Some("104857600"),
        "largest request frame accepted",
    ),
    def(
        "max.request.partition.size.limit",
        Int,
        Some("2000"),
        "partitions in one DescribeTopicPartitions response (KIP-966)",
    ),
    def(
        "connections.max.idle.ms",
        Long,
        Some("600000"),
        "close connections idle this long",
    ),
    def(
        "max.connections",
        Int,
        Some("2147483647"),
        "connections accepted at once (the process's file-handle limit bounds them too)",
    ).cluster_wide(),
    def(
        "num.shards",
        Int,
        Some("0"),
        "shards (threads with their own event loop); 0 = one per core",
    ),
    def("io.engine", String, Some("auto"), "auto, uring or epoll"),
    def(
        "cluster.id",
        String,
        None,
        "cluster id; generated and stored in meta.properties when unset",
    ),
    def(
        "log.level",
        String,
        Some("info"),
        "log level or tracing filter (RUST_LOG overrides)",
    ),
    def(
        "metrics.listener",
        String,
        Some("127.0.0.1:9644"),
        "Prometheus endpoint host:port; empty disables",
    ),
    def(
        "console.listener",
        String,
        Some("127.0.0.1:9645"),
        "the console's JSON API host:port; empty disables; a taken default port only warns",
    ),
    def(
        "console.writes.enable",
        Boolean,
        Some("false"),
        "lets the console produce records (otherwise its writes answer 403)",
    ),
    def(
        "console.ssl.keystore.type",
        String,
        Some("PEM"),
        "PEM or PKCS12: the store console.ssl.keystore.location names",
    ),
    def(
        "console.ssl.keystore.location",
        String,
        None,
        "TLS on the console listener: a PEM file with its private key and certificate chain, \
         or a PKCS12 store; unset, the console speaks plain HTTP",
    ),
    def(
        "console.ssl.keystore.password",
        Password,
        None,
        "the password of a PKCS12 console keystore",
    ),
    def(
        "console.listener.insecure.enable",
        Boolean,
        Some("false"),
        "lets console.listener bind beyond loopback, where Basic auth crosses the network in clear",
    ),
    def(
        "metrics.partition.level",
        String,
        Some("partition"),
        "partition: offsets, ISR and follower lag per partition; topic: summed per topic, for \
         brokers with so many partitions that a scrape of per-partition series is too large",
    ),
    def(
        "log.retention.check.interval.ms",
        Long,
        Some("300000"),
        "how often time and size retention delete old segments (the active one too)",
    ),
    def(
        "log.flush.scheduler.interval.ms",
        Long,
        Some("9223372036854775807"),
        "how often logs are checked for flush.ms; Samsa checks at least every second anyway \
         (its maintenance tick), so only a shorter interval changes anything",
    ),
    def(
        "log.open.files.max",
        Int,
        None,
        "segment files held open at once over all partitions (idle ones close and reopen on \
         use); default a quarter of the process's file-handle limit, at most 8192",
    ),
    def(
        "log.flush.offset.checkpoint.interval.ms",
        Int,
        Some("60000"),
        "how often checkpoints are written",
    ),
    def(
        "log.cleaner.enable",
        Boolean,
        Some("true"),
        "compact topics with cleanup.policy=compact",
    ),
    def(
        "log.cleaner.backoff.ms",
        Long,
        Some("15000"),
        "pause between cleaner passes",
    ).cluster_wide(),
    def(
        "log.durable",
        Boolean,
        Some("false"),
        "answer produce only after an fsync shared by concurrent writes (group commit)",
    ),
    def(
        "log.tail.cache.bytes",
        Long,
        Some("4194304"),
        "memory all partitions share for their newest produced batches, served to consumers at the tail without a read (at most 4 MiB each); 0 = none",
    ),
];

/// Network and I/O threads, socket buffers, and the threads that recover logs at start.
#[rustfmt::skip]
pub(super) const THREADS: &[ConfigDef] = &[
    inert("num.network.threads", Int, Some("3")).cluster_wide(),
    inert("num.io.threads", Int, Some("8")).cluster_wide(),
    inert("socket.send.buffer.bytes", Int, Some("102400")),
    inert("socket.receive.buffer.bytes", Int, Some("102400")),
    def(
        "num.recovery.threads.per.data.dir",
        Int,
        Some("8"),
        "threads that open (recover) partition logs and apply their leadership as the metadata \
         image names them, at start and for large topics; Samsa's default is 8, not Kafka's 2, \
         as the work waits on fsync, which a disk serves better several at a time",
    )
    .cluster_wide(),
];
