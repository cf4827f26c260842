//! Broker keys of replication and the controller: followers' fetches and the ISR, the KRaft
//! quorum and its metadata log, and leader elections.

use super::types::ConfigType::*;
use super::types::{def, inert, ConfigDef};

/// The ISR and followers' fetches (and the fetch sessions of consumers).
#[rustfmt::skip]
pub(super) const REPLICAS: &[ConfigDef] = &[
    def(
        "min.insync.replicas",
        Int,
        Some("1"),
        "default min.insync.replicas of topics",
    ).cluster_wide(),
    def(
        "replica.lag.time.max.ms",
        Long,
        Some("30000"),
        "a follower not caught up with its leader for this long leaves the ISR",
    ),
    def(
        "replica.fetch.max.bytes",
        Int,
        Some("1048576"),
        "bytes a follower asks for per partition and fetch",
    ),
    def(
        "replica.fetch.response.max.bytes",
        Int,
        Some("10485760"),
        "bytes a follower asks for per fetch",
    ),
    def(
        "replica.fetch.wait.max.ms",
        Int,
        Some("500"),
        "how long a follower's fetch waits at the leader for new records",
    ),
    def(
        "replica.selector.class",
        String,
        None,
        "org.apache.kafka.common.replica.RackAwareReplicaSelector: a leader sends a consumer whose client.rack matches an in-sync replica's broker.rack to that replica (KIP-392); unset: consumers read from leaders",
    ),
    def(
        "max.incremental.fetch.session.cache.slots",
        Int,
        Some("1000"),
        "fetch sessions (KIP-227) this broker keeps at most (0: none)",
    ),
    def(
        "replica.fetch.backoff.ms",
        Int,
        Some("1000"),
        "pause after a follower's fetch failed",
    ),
    // The replication throttles (KIP-73). The rates are Kafka's dynamic-only keys
    // (`DynamicConfig.Broker`), not in its broker catalogue: described only once set.
    def(
        "leader.replication.throttled.rate",
        Long,
        Some("9223372036854775807"),
        "bytes/s this broker sends to followers of the replicas its topics' leader.replication.throttled.replicas name, while they are out of sync",
    ).cluster_wide().hidden(),
    def(
        "follower.replication.throttled.rate",
        Long,
        Some("9223372036854775807"),
        "bytes/s this broker fetches for the replicas its topics' follower.replication.throttled.replicas name, while they are out of sync",
    ).cluster_wide().hidden(),
    def(
        "replication.quota.window.num",
        Int,
        Some("11"),
        "samples the replication throttles' rates are measured over",
    ),
    def(
        "replication.quota.window.size.seconds",
        Int,
        Some("1"),
        "length of each sample of the replication throttles' rates",
    ),
];

/// KRaft: process roles, the controller quorum and the metadata log, and the listener names
/// and protocols nodes reach each other by.
#[rustfmt::skip]
pub(super) const KRAFT: &[ConfigDef] = &[
    // Kafka keys with no effect on a single Samsa node.
    // KRaft (controller/settings.rs checks them together).
    def(
        "process.roles",
        List,
        Some("broker,controller"),
        "broker,controller, broker or controller (Kafka has no default; Samsa's node is both)",
    ),
    def(
        "controller.quorum.voters",
        List,
        Some(""),
        "the metadata quorum's voters, id@host:port; unset: this node alone",
    ),
    def(
        "controller.quorum.bootstrap.servers",
        List,
        Some(""),
        "host:port of controllers a broker-only node asks for the quorum's leader (KIP-853), instead of controller.quorum.voters; refused on controllers (dynamic voter sets are not supported yet)",
    ),
    def(
        "controller.listener.names",
        List,
        None,
        "the listener the controllers talk on (served apart from clients)",
    ),
    def(
        "controller.quorum.election.timeout.ms",
        Int,
        Some("1000"),
        "a voter that hears no leader for this long stands for election",
    ),
    def(
        "controller.quorum.election.backoff.max.ms",
        Int,
        Some("1000"),
        "longest wait before standing again after a failed election",
    ),
    def(
        "controller.quorum.fetch.timeout.ms",
        Int,
        Some("2000"),
        "a follower that cannot fetch from its leader for this long starts an election",
    ),
    def(
        "controller.quorum.request.timeout.ms",
        Int,
        Some("2000"),
        "how long a controller waits for another's answer",
    ),
    def(
        "controller.quorum.retry.backoff.ms",
        Int,
        Some("20"),
        "wait before retrying a failed controller request",
    ),
    def(
        "broker.rack",
        String,
        None,
        "this broker's rack: registered with the controller, reported in Metadata",
    ),
    def(
        "broker.session.timeout.ms",
        Int,
        Some("9000"),
        "a broker that has not heartbeated to the controller for this long is fenced",
    ),
    def(
        "broker.heartbeat.interval.ms",
        Int,
        Some("2000"),
        "how often a broker heartbeats to the active controller",
    ),
    def(
        "metadata.max.idle.interval.ms",
        Int,
        Some("500"),
        "the active controller writes a no-op record this often when idle (0: never)",
    ),
    def(
        "metadata.log.segment.bytes",
        Int,
        Some("1073741824"),
        "segment size of the metadata log",
    ),
    def(
        "metadata.log.segment.ms",
        Long,
        Some("604800000"),
        "age after which the metadata log rolls a segment",
    ),
    def(
        "metadata.log.max.record.bytes.between.snapshots",
        Long,
        Some("20971520"),
        "committed metadata bytes after which a snapshot is written",
    ),
    def(
        "metadata.log.max.snapshot.interval.ms",
        Long,
        Some("3600000"),
        "a metadata snapshot at least this often while records are committed (0: by size only)",
    ),
    inert("inter.broker.listener.name", String, None),
    def(
        "listener.security.protocol.map",
        String,
        Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"),
        "each listener's security protocol, LISTENER:PROTOCOL,...; a controller listener not \
         named is PLAINTEXT",
    )
    .per_broker(),
];

/// Unclean and preferred leader elections.
#[rustfmt::skip]
pub(super) const LEADER_ELECTION: &[ConfigDef] = &[
    def(
        "unclean.leader.election.enable",
        Boolean,
        Some("false"),
        "elect a replica outside the ISR when no in-sync one is live (records only the ISR had are lost); topics may override it",
    )
    .cluster_wide(),
    def(
        "unclean.leader.election.interval.ms",
        Long,
        Some("300000"),
        "how often the active controller elects leaders uncleanly for leaderless partitions of topics that allow it",
    )
    .hidden(),
    def(
        "auto.leader.rebalance.enable",
        Boolean,
        Some("true"),
        "the active controller moves leadership back to preferred replicas every leader.imbalance.check.interval.seconds",
    ),
    def(
        "leader.imbalance.check.interval.seconds",
        Long,
        Some("300"),
        "how often the active controller moves leadership back to preferred replicas",
    ),
];
