//! The admin CLI inside the `samsa` binary: topics, groups, SCRAM users, client quotas,
//! produce, consume, cluster info and segment dumps. Everything but `dump-log` speaks only the
//! Kafka protocol (see [`client`]), so it works against Apache Kafka as well as Samsa.
//!
//! Output is an aligned table by default and JSON with `--format json`. A command succeeds
//! with exit code 0 or fails with one line on stderr naming the Kafka error and what to do,
//! and exit code 1 (2 for a command line clap cannot parse).
//!
//! `--command-config FILE` secures the connections with TLS and SASL, from a Kafka client's
//! properties, as `--command-config` does for Kafka's tools ([`security`]).

pub mod client;
pub mod cluster;
pub mod consume;
pub mod dump_log;
pub mod global;
pub mod group;
pub mod local;
pub mod output;
pub mod produce;
pub mod quota;
pub mod records;
pub mod security;
pub mod share_consume;
pub mod share_group;
pub mod storage;
pub mod throttle;
pub mod topic;
pub mod user;

use clap::{Parser, Subcommand};

pub use global::{key_value, Global};

/// First arguments that select the CLI rather than the broker (`samsa` alone, or with
/// `serve` or `--property=value` flags, serves).
pub const COMMANDS: &[&str] = &[
    "topic", "group", "user", "quota", "produce", "consume", "cluster", "dump-log",
];

/// True when `args` (without the program name) name a CLI command, possibly after global
/// options (`samsa -b host:9092 topic list`).
pub fn is_command(args: &[String]) -> bool {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-b" | "--bootstrap" | "--format" | "--timeout-ms" | "--command-config" => i += 2,
            a if a.starts_with("--bootstrap=")
                || a.starts_with("--format=")
                || a.starts_with("--timeout-ms=")
                || a.starts_with("--command-config=")
                || (a.starts_with("-b") && a.len() > 2) =>
            {
                i += 1
            }
            a => return COMMANDS.contains(&a),
        }
    }
    false
}

#[derive(Debug, Parser)]
#[command(
    name = "samsa",
    version,
    about = "Administer a Kafka-compatible cluster (Samsa or Apache Kafka)",
    after_help = "`samsa` alone or `samsa serve [--property=value ...]` runs a broker instead."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, list, describe, delete and configure topics.
    #[command(subcommand)]
    Topic(topic::TopicCommand),
    /// List, describe and delete consumer groups; reset their offsets.
    #[command(subcommand)]
    Group(group::GroupCommand),
    /// Set, delete and list users' SCRAM credentials (KIP-554).
    #[command(subcommand)]
    User(user::UserCommand),
    /// List, describe, set and delete client quotas of users, client ids and IPs (KIP-546).
    #[command(subcommand)]
    Quota(quota::QuotaCommand),
    /// Produce records read from stdin, one per line.
    Produce(produce::ProduceArgs),
    /// Print records of a topic with a format template.
    Consume(consume::ConsumeArgs),
    /// Cluster information.
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Print the batches and records of a segment file, checking every CRC (no broker needed).
    DumpLog(dump_log::DumpLogArgs),
}

/// Parses and runs a CLI command line (`args` without the program name).
pub fn run(args: &[String]) -> std::process::ExitCode {
    let cli =
        match Cli::try_parse_from(std::iter::once("samsa".to_string()).chain(args.iter().cloned()))
        {
            Ok(cli) => cli,
            Err(e) => {
                let _ = e.print();
                return std::process::ExitCode::from(if e.use_stderr() { 2 } else { 0 });
            }
        };
    let result = match &cli.command {
        Command::Topic(c) => topic::run(&cli.global, c),
        Command::Group(c) => group::run(&cli.global, c),
        Command::User(c) => user::run(&cli.global, c),
        Command::Quota(c) => quota::run(&cli.global, c),
        Command::Produce(a) => produce::run(&cli.global, a),
        Command::Consume(a) => consume::run(&cli.global, a),
        Command::Cluster(c) => cluster::run(&cli.global, c),
        Command::DumpLog(a) => dump_log::run(&cli.global, a),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("samsa: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
