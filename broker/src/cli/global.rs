//! What every command shares: the global options (bootstrap servers, output format, timeout,
//! the client properties file) with the connection they make, and `key=value` parsing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::client::Client;
use super::output::Format;
use super::security;

/// Options every command takes.
#[derive(Debug, clap::Args)]
pub struct Global {
    /// Broker(s) to bootstrap from, host:port[,host:port...].
    #[arg(short = 'b', long, global = true, default_value = "127.0.0.1:9092")]
    pub bootstrap: String,
    /// Output: aligned table for people, JSON for scripts.
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Connect and request timeout in milliseconds.
    #[arg(long, global = true, default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// A Kafka client properties file for TLS and SASL (security.protocol, ssl.truststore.*,
    /// ssl.keystore.*, sasl.mechanism, sasl.jaas.config), as Kafka's tools take it.
    #[arg(long, global = true, value_name = "FILE")]
    pub command_config: Option<PathBuf>,
}

impl Global {
    pub fn connect(&self) -> anyhow::Result<Client> {
        let security = match &self.command_config {
            Some(path) => security::Security::load(path)?,
            None => security::Security::plaintext(),
        };
        for note in security.notes() {
            eprintln!("samsa: note: {note}");
        }
        Ok(Client::connect_with(
            &self.bootstrap,
            Duration::from_millis(self.timeout_ms.max(1)),
            Arc::new(security),
        )?)
    }
}

/// Splits `key=value` (for `-c`, `-s`, `-H`).
pub fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("'{s}' is not key=value")),
    }
}
