//! `samsa cluster info`: cluster id, controller, brokers with their advertised listeners, and
//! the API versions the bootstrap broker serves (Metadata + ApiVersions). `samsa cluster
//! local` (in [`super::local`]) starts a cluster on this machine.

use clap::Subcommand;
use kafka_protocol::messages::ApiKey;
use serde_json::json;

use super::output::{emit, Table};
use super::Global;

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Cluster id, controller, brokers, listeners and API versions served.
    Info,
    /// Start a cluster of N nodes on this machine (one child process each) and wait; Ctrl-C
    /// stops it.
    ///
    /// Node i (1..=N) is broker and controller, a voter of the metadata quorum, and listens on
    /// 127.0.0.1: PORT+100*(i-1) for clients, +1 for the controllers and +2 for Prometheus
    /// metrics (`-- --metrics.listener=` disables them). Its data is in DIR/node-<i> and its log
    /// in DIR/node-<i>.log. Every port is tried before anything starts. The cluster id, N and
    /// PORT are kept in DIR/cluster.id and DIR/cluster.properties: the same command restarts
    /// the same cluster. SIGINT/SIGTERM stops every node (SIGTERM, then SIGKILL after 30 s or
    /// on a second signal); a node that exits on its own is reported and the others go on.
    Local(super::local::LocalArgs),
}

pub fn run(global: &Global, cmd: &ClusterCommand) -> anyhow::Result<()> {
    match cmd {
        ClusterCommand::Info => info(global),
        ClusterCommand::Local(args) => super::local::run(args),
    }
}

fn api_name(key: i16) -> String {
    ApiKey::try_from(key)
        .map(|k| format!("{k:?}"))
        .unwrap_or_else(|_| format!("Unknown({key})"))
}

fn info(global: &Global) -> anyhow::Result<()> {
    let mut client = global.connect()?;
    let meta = client.metadata(Some(&[]))?;
    let mut brokers: Vec<_> = meta
        .brokers
        .iter()
        .map(|b| {
            (
                b.node_id.0,
                b.host.to_string(),
                b.port,
                b.rack.as_ref().map(|r| r.to_string()),
            )
        })
        .collect();
    brokers.sort();
    let apis = client.served_versions();
    let cluster_id = meta.cluster_id.as_ref().map(|c| c.to_string());
    let controller = meta.controller_id.0;
    let value = json!({
        "cluster_id": cluster_id,
        "controller_id": controller,
        "bootstrap": client.bootstrap_addr(),
        "brokers": brokers.iter().map(|(id, host, port, rack)| json!({
            "node_id": id,
            "host": host,
            "port": port,
            "listener": format!("{host}:{port}"),
            "rack": rack,
        })).collect::<Vec<_>>(),
        "apis": apis.iter().map(|(key, min, max)| json!({
            "api_key": key,
            "name": api_name(*key),
            "min_version": min,
            "max_version": max,
        })).collect::<Vec<_>>(),
    });
    emit(global.format, &value, || {
        let mut out = format!(
            "cluster id   {}\ncontroller   {controller}\n\n",
            cluster_id.as_deref().unwrap_or("-")
        );
        let mut t = Table::new(&["NODE", "LISTENER", "RACK"]);
        for (id, host, port, rack) in &brokers {
            let node = if *id == controller {
                format!("{id} (controller)")
            } else {
                id.to_string()
            };
            t.row(vec![
                node,
                format!("{host}:{port}"),
                rack.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        out.push_str(&t.render());
        out.push('\n');
        let mut t = Table::new(&["API", "KEY", "VERSIONS"]);
        for (key, min, max) in &apis {
            t.row(vec![
                api_name(*key),
                key.to_string(),
                format!("{min}-{max}"),
            ]);
        }
        out + &t.render()
    });
    Ok(())
}
