//! `samsa cluster info`: cluster id, controller, brokers with their advertised listeners, the
//! metadata quorum (leader, epoch, high watermark, each voter's controller endpoint and each
//! voter's and observer's log end, lag and last fetch, from DescribeQuorum), and the API versions the bootstrap broker serves. `samsa cluster
//! local` (in [`super::local`]) starts a cluster on this machine.

use clap::Subcommand;
use kafka_protocol::messages::ApiKey;
use serde_json::json;

use super::global::Global;
use super::output::{emit, Table};

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Cluster id, controller, brokers, listeners and API versions served.
    Info,
    /// Start a cluster of N nodes on this machine (one child process each) and wait; Ctrl-C
    /// stops it.
    ///
    /// Node i (1..=N) is broker and controller, a voter of the metadata quorum, and listens on
    /// 127.0.0.1: PORT+100*(i-1) for clients, +1 for the controllers and +2 for Prometheus
    /// metrics (`-- --metrics.listener=` disables them). With `--controllers C --brokers B`,
    /// nodes 1..=C are controller-only voters (controller port only) and the next B are
    /// broker-only (client and metrics ports). Its data is in DIR/node-<i> and its log
    /// in DIR/node-<i>.log. Every port is tried before anything starts. The cluster id, N and
    /// PORT are kept in DIR/cluster.id and DIR/cluster.properties: the same command restarts
    /// the same cluster. SIGINT/SIGTERM stops every node (SIGTERM, then SIGKILL after 30 s or
    /// on a second signal); a node that exits on its own is reported and the others go on.
    Local(super::local::LocalArgs),
    /// Add a controller to a dynamic metadata quorum (KIP-853; Kafka's
    /// `kafka-metadata-quorum add-controller`). The node must be running with
    /// controller.quorum.bootstrap.servers and have caught up as an observer; answered once
    /// the new voter set is committed.
    AddController(AddControllerArgs),
    /// Remove a controller from a dynamic metadata quorum (KIP-853); the leader may remove
    /// itself (it resigns once the change is committed).
    RemoveController(RemoveControllerArgs),
}

#[derive(Debug, clap::Args)]
pub struct AddControllerArgs {
    /// The controller's node id.
    #[arg(long)]
    pub id: i32,
    /// Where the other controllers reach it (its controller listener), host:port.
    #[arg(long)]
    pub endpoint: String,
    /// The controller listener's name.
    #[arg(long, default_value = "CONTROLLER")]
    pub listener: String,
    /// Its metadata log directory's id (directory.id in its meta.properties); any when left out.
    #[arg(long)]
    pub directory_id: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct RemoveControllerArgs {
    /// The controller's node id.
    #[arg(long)]
    pub id: i32,
    /// Its metadata log directory's id; any when left out.
    #[arg(long)]
    pub directory_id: Option<String>,
}

pub fn run(global: &Global, cmd: &ClusterCommand) -> anyhow::Result<()> {
    match cmd {
        ClusterCommand::Info => info(global),
        ClusterCommand::Local(args) => super::local::run(args),
        ClusterCommand::AddController(a) => add_controller(global, a),
        ClusterCommand::RemoveController(a) => remove_controller(global, a),
    }
}

fn directory_id(text: &Option<String>) -> anyhow::Result<uuid::Uuid> {
    match text {
        None => Ok(uuid::Uuid::nil()),
        Some(t) => crate::controller::quorum_state::parse_kafka_uuid(t)
            .or_else(|| t.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("--directory-id {t}: not a directory id")),
    }
}

fn voter_answer(what: &str, code: i16, message: Option<String>) -> anyhow::Result<()> {
    if code == 0 {
        println!("{what}");
        return Ok(());
    }
    let name = kafka_protocol::ResponseError::try_from_code(code)
        .map(|e| format!("{e:?}"))
        .unwrap_or_else(|| format!("error {code}"));
    anyhow::bail!("{name}: {}", message.unwrap_or_default())
}

fn add_controller(global: &Global, a: &AddControllerArgs) -> anyhow::Result<()> {
    use kafka_protocol::messages::add_raft_voter_request::Listener;
    use kafka_protocol::messages::AddRaftVoterRequest;
    use kafka_protocol::protocol::StrBytes;
    let (host, port) = a
        .endpoint
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
        .ok_or_else(|| anyhow::anyhow!("--endpoint {}: not host:port", a.endpoint))?;
    let dir = directory_id(&a.directory_id)?;
    let mut client = global.connect()?;
    let (_, resp) = client.call(super::client::Node::Any, |_| {
        AddRaftVoterRequest::default()
            .with_cluster_id(None)
            .with_timeout_ms(30_000)
            .with_voter_id(a.id)
            .with_voter_directory_id(dir)
            .with_listeners(vec![Listener::default()
                .with_name(StrBytes::from_string(a.listener.clone()))
                .with_host(StrBytes::from_string(host.clone()))
                .with_port(port)])
    })?;
    voter_answer(
        &format!("controller {} is a voter of the metadata quorum", a.id),
        resp.error_code,
        resp.error_message.map(|m| m.to_string()),
    )
}

fn remove_controller(global: &Global, a: &RemoveControllerArgs) -> anyhow::Result<()> {
    use kafka_protocol::messages::RemoveRaftVoterRequest;
    let dir = directory_id(&a.directory_id)?;
    let mut client = global.connect()?;
    let (_, resp) = client.call(super::client::Node::Any, |_| {
        RemoveRaftVoterRequest::default()
            .with_cluster_id(None)
            .with_voter_id(a.id)
            .with_voter_directory_id(dir)
    })?;
    voter_answer(
        &format!(
            "controller {} is no longer a voter of the metadata quorum",
            a.id
        ),
        resp.error_code,
        resp.error_message.map(|m| m.to_string()),
    )
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
    let quorum = describe_quorum(&mut client);
    let cluster_id = meta.cluster_id.as_ref().map(|c| c.to_string());
    let controller = meta.controller_id.0;
    let value = json!({
        "cluster_id": cluster_id,
        "controller_id": controller,
        "active_controller_id": quorum.as_ref().map(|q| q.leader_id),
        "bootstrap": client.bootstrap_addr(),
        "brokers": brokers.iter().map(|(id, host, port, rack)| json!({
            "node_id": id,
            "host": host,
            "port": port,
            "listener": format!("{host}:{port}"),
            "rack": rack,
        })).collect::<Vec<_>>(),
        "quorum": quorum.as_ref().map(|q| json!({
            "leader_id": q.leader_id,
            "leader_epoch": q.epoch,
            "high_watermark": q.high_watermark,
            "replicas": q.replicas.iter().map(|r| json!({
                "node_id": r.node_id,
                "status": r.status,
                "log_end_offset": r.log_end_offset,
                "lag": r.lag,
                "last_fetch_ms_ago": r.last_fetch_ago_ms,
                "last_caught_up_ms_ago": r.last_caught_up_ago_ms,
                "endpoint": r.endpoint,
            })).collect::<Vec<_>>(),
        })),
        "apis": apis.iter().map(|(key, min, max)| json!({
            "api_key": key,
            "name": api_name(*key),
            "min_version": min,
            "max_version": max,
        })).collect::<Vec<_>>(),
    });
    emit(global.format, &value, || {
        // Metadata names a live broker as the controller (clients cannot reach KRaft
        // controllers); with controller-only nodes the quorum's leader is another node.
        let active = match &quorum {
            Some(q) if q.leader_id >= 0 && q.leader_id != controller => {
                format!(
                    "  (the active controller is node {}, controller-only)",
                    q.leader_id
                )
            }
            _ => String::new(),
        };
        let mut out = format!(
            "cluster id   {}\ncontroller   {controller}{active}\n\n",
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
        if let Some(q) = &quorum {
            // `kafka-metadata-quorum describe --status` and `--replication` as one table.
            out.push_str(&format!(
                "metadata quorum   leader {}  epoch {}  high watermark {}\n",
                q.leader_id, q.epoch, q.high_watermark
            ));
            let mut t = Table::new(&[
                "NODE",
                "STATUS",
                "ENDPOINT",
                "LOG-END",
                "LAG",
                "LAST-FETCH",
                "CAUGHT-UP",
            ]);
            let ago = |ms: Option<i64>| ms.map_or("-".to_string(), |ms| format!("{ms} ms ago"));
            for r in &q.replicas {
                t.row(vec![
                    r.node_id.to_string(),
                    r.status.to_string(),
                    r.endpoint.clone().unwrap_or_else(|| "-".into()),
                    r.log_end_offset.to_string(),
                    r.lag.map_or("-".into(), |l| l.to_string()),
                    ago(r.last_fetch_ago_ms),
                    ago(r.last_caught_up_ago_ms),
                ]);
            }
            out.push_str(&t.render());
            out.push('\n');
        }
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

/// One replica of the metadata quorum, as `cluster info` shows it.
struct QuorumReplica {
    node_id: i32,
    status: &'static str,
    log_end_offset: i64,
    lag: Option<i64>,
    last_fetch_ago_ms: Option<i64>,
    last_caught_up_ago_ms: Option<i64>,
    /// A voter's controller listener (DescribeQuorum v2's `nodes`), as `host:port`.
    endpoint: Option<String>,
}

struct QuorumView {
    leader_id: i32,
    epoch: i32,
    high_watermark: i64,
    replicas: Vec<QuorumReplica>,
}

/// DescribeQuorum through the bootstrap broker (which forwards it to the quorum's leader);
/// `None` where the broker does not serve it or the quorum has no leader.
fn describe_quorum(client: &mut super::client::Client) -> Option<QuorumView> {
    use kafka_protocol::messages::{describe_quorum_request, DescribeQuorumRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let (_, resp) = client
        .call(super::client::Node::Any, |_| {
            let mut p = describe_quorum_request::PartitionData::default();
            p.partition_index = 0;
            let mut t = describe_quorum_request::TopicData::default();
            t.topic_name = TopicName(StrBytes::from_static_str("__cluster_metadata"));
            t.partitions = vec![p];
            let mut r = DescribeQuorumRequest::default();
            r.topics = vec![t];
            r
        })
        .ok()?;
    let p = resp.topics.first()?.partitions.first()?;
    if resp.error_code != 0 || p.error_code != 0 {
        return None;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let ago = |t: i64| (t >= 0).then(|| (now - t).max(0));
    let replica = |r: &kafka_protocol::messages::describe_quorum_response::ReplicaState,
                   status: &'static str| QuorumReplica {
        node_id: r.replica_id.0,
        status,
        log_end_offset: r.log_end_offset,
        lag: (r.log_end_offset >= 0).then(|| (p.high_watermark - r.log_end_offset).max(0)),
        last_fetch_ago_ms: ago(r.last_fetch_timestamp),
        last_caught_up_ago_ms: ago(r.last_caught_up_timestamp),
        endpoint: resp
            .nodes
            .iter()
            .find(|n| n.node_id == r.replica_id)
            .and_then(|n| n.listeners.first())
            .map(|l| format!("{}:{}", l.host, l.port)),
    };
    let mut replicas: Vec<QuorumReplica> = p
        .current_voters
        .iter()
        .map(|r| {
            replica(
                r,
                if r.replica_id == p.leader_id {
                    "leader"
                } else {
                    "follower"
                },
            )
        })
        .collect();
    replicas.extend(p.observers.iter().map(|r| replica(r, "observer")));
    Some(QuorumView {
        leader_id: p.leader_id.0,
        epoch: p.leader_epoch,
        high_watermark: p.high_watermark,
        replicas,
    })
}
