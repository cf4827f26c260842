//! `samsa topic ...`: the everyday jobs of Kafka's `kafka-topics.sh`, the topic half of
//! `kafka-configs.sh`, `kafka-leader-election.sh` and `kafka-reassign-partitions.sh`, through
//! CreateTopics, Metadata, ListOffsets, DescribeConfigs, DeleteTopics, IncrementalAlterConfigs,
//! CreatePartitions, ElectLeaders and Alter/ListPartitionReassignments.

use clap::Subcommand;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::{
    alter_partition_reassignments_request, list_partition_reassignments_request,
    AlterPartitionReassignmentsRequest, BrokerId, CreatePartitionsRequest, CreateTopicsRequest,
    DeleteTopicsRequest, DescribeConfigsRequest, ElectLeadersRequest,
    IncrementalAlterConfigsRequest, ListPartitionReassignmentsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use serde_json::json;

use super::client::{check, Client, ClientError, ListedOffsets, Node, EARLIEST, LATEST};
use super::global::{key_value, Global};
use super::output::{emit, Table};

/// DescribeConfigs / IncrementalAlterConfigs resource type of a topic.
pub(super) const RESOURCE_TOPIC: i8 = 2;
/// IncrementalAlterConfigs resource type of a broker.
pub(super) const RESOURCE_BROKER: i8 = 4;
/// DescribeConfigs `config_source` of a per-topic override (DYNAMIC_TOPIC_CONFIG): what
/// differs from the broker's defaults, the configs `kafka-topics.sh --describe` lists.
const SOURCE_TOPIC_OVERRIDE: i8 = 1;
/// IncrementalAlterConfigs operations.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

#[derive(Debug, Subcommand)]
pub enum TopicCommand {
    /// Create a topic.
    Create {
        name: String,
        /// Partitions (the broker's num.partitions when omitted).
        #[arg(short, long)]
        partitions: Option<i32>,
        /// Replication factor (the broker's default.replication.factor when omitted).
        #[arg(short = 'r', long)]
        replicas: Option<i16>,
        /// Topic config, key=value (repeatable), e.g. -c cleanup.policy=compact.
        #[arg(short = 'c', long = "config", value_parser = key_value)]
        configs: Vec<(String, String)>,
    },
    /// List topics.
    List {
        /// Include internal topics (__consumer_offsets, ...).
        #[arg(long)]
        internal: bool,
    },
    /// Partitions, leaders, replicas, ISR, offsets and the configs that differ from defaults;
    /// with --under-replicated, only the partitions whose ISR is smaller than their replicas
    /// (of every topic when no name is given).
    Describe {
        name: Option<String>,
        /// Only partitions with fewer in-sync replicas than replicas.
        #[arg(long)]
        under_replicated: bool,
    },
    /// Delete a topic and its data.
    Delete { name: String },
    /// Set (-s key=value) or remove (-d key) topic configs.
    AlterConfig {
        name: String,
        #[arg(short = 's', long = "set", value_parser = key_value)]
        set: Vec<(String, String)>,
        #[arg(short = 'd', long = "delete")]
        delete: Vec<String>,
    },
    /// Grow a topic to TOTAL partitions.
    AddPartitions {
        name: String,
        /// The new total number of partitions.
        #[arg(short = 'n', long = "total")]
        total: i32,
    },
    /// Elect leaders, as kafka-leader-election.sh does: --preferred gives leadership back to
    /// each partition's preferred replica (its first) where it is a live in-sync replica;
    /// --unclean gives a partition that has no leader and no live in-sync replica a leader
    /// from outside the ISR, losing the records only the former ISR had.
    ElectLeaders {
        /// Elect the preferred replicas.
        #[arg(long, conflicts_with = "unclean", required_unless_present = "unclean")]
        preferred: bool,
        /// Elect a live replica outside the ISR where no in-sync one is left.
        #[arg(long)]
        unclean: bool,
        /// The topic (every partition of it, unless --partition names some).
        #[arg(short, long, conflicts_with = "all", required_unless_present = "all")]
        topic: Option<String>,
        /// A partition of --topic (repeatable).
        #[arg(short, long = "partition", requires = "topic")]
        partitions: Vec<i32>,
        /// Every partition of every topic; only those that needed an election are listed.
        #[arg(long)]
        all: bool,
    },
    /// Move a partition to other brokers, as kafka-reassign-partitions.sh does (KIP-455): the
    /// brokers added copy it from the leader, and once they are in sync the ones left out stop
    /// being replicas and delete their copy. --cancel goes back to where the move started.
    /// --throttle bounds the copy (KIP-73) as kafka-reassign-partitions.sh --throttle does;
    /// --verify shows the topic's moves in progress and, once there are none, removes the
    /// throttle (as kafka-reassign-partitions.sh --verify does).
    Reassign {
        name: String,
        #[arg(short, long, required_unless_present = "verify")]
        partition: Option<i32>,
        /// The new replicas, comma-separated, the preferred leader first (e.g. 2,3).
        #[arg(
            short,
            long,
            value_delimiter = ',',
            required_unless_present_any = ["cancel", "verify"]
        )]
        replicas: Vec<i32>,
        /// Cancel the move in progress.
        #[arg(long, conflicts_with = "replicas")]
        cancel: bool,
        /// Refuse a target with another number of replicas (KIP-860).
        #[arg(long)]
        keep_replication_factor: bool,
        /// Throttle the copy to this many bytes/s: sets leader.replication.throttled.rate and
        /// follower.replication.throttled.rate on the brokers of the move and the topic's
        /// throttled-replicas lists for the partition (cleared by --verify once it is done).
        #[arg(long, value_name = "BYTES_PER_S", conflicts_with_all = ["cancel", "verify"])]
        throttle: Option<i64>,
        /// Show the moves of the topic (or of --partition) still in progress; when none is
        /// left, remove the replication throttle from the topic and every broker.
        #[arg(long, conflicts_with_all = ["replicas", "cancel"])]
        verify: bool,
    },
}

pub fn run(global: &Global, cmd: &TopicCommand) -> anyhow::Result<()> {
    let mut client = global.connect()?;
    match cmd {
        TopicCommand::Create {
            name,
            partitions,
            replicas,
            configs,
        } => create(global, &mut client, name, *partitions, *replicas, configs),
        TopicCommand::List { internal } => list(global, &mut client, *internal),
        TopicCommand::Describe {
            name,
            under_replicated: true,
        } => under_replicated(global, &mut client, name.as_deref()),
        TopicCommand::Describe {
            name: Some(name), ..
        } => describe(global, &mut client, name),
        TopicCommand::Describe { name: None, .. } => {
            anyhow::bail!(
                "name the topic to describe (or ask for --under-replicated partitions of all)"
            )
        }
        TopicCommand::Delete { name } => delete(global, &mut client, name),
        TopicCommand::AlterConfig { name, set, delete } => {
            alter_config(global, &mut client, name, set, delete)
        }
        TopicCommand::AddPartitions { name, total } => {
            add_partitions(global, &mut client, name, *total)
        }
        TopicCommand::ElectLeaders {
            unclean,
            topic,
            partitions,
            ..
        } => elect_leaders(global, &mut client, *unclean, topic.as_deref(), partitions),
        TopicCommand::Reassign {
            name,
            partition,
            verify: true,
            ..
        } => verify(global, &mut client, name, *partition),
        TopicCommand::Reassign {
            name,
            partition,
            replicas,
            cancel,
            keep_replication_factor,
            throttle,
            ..
        } => {
            let partition =
                partition.ok_or_else(|| anyhow::anyhow!("name the partition to move (-p)"))?;
            if let Some(rate) = throttle {
                set_throttle(global, &mut client, name, partition, replicas, *rate)?;
            }
            reassign(
                global,
                &mut client,
                name,
                partition,
                (!cancel).then_some(&replicas[..]),
                *keep_replication_factor,
            )
        }
    }
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

fn timeout_ms(global: &Global) -> i32 {
    global.timeout_ms.min(i32::MAX as u64) as i32
}

fn create(
    global: &Global,
    client: &mut Client,
    name: &str,
    partitions: Option<i32>,
    replicas: Option<i16>,
    configs: &[(String, String)],
) -> anyhow::Result<()> {
    let (version, resp) = client.call(Node::Any, |v| {
        let mut t = CreatableTopic::default();
        t.name = topic_name(name);
        // -1 asks for the broker's defaults (CreateTopics v4+, KIP-464).
        let default = if v >= 4 { -1 } else { 1 };
        t.num_partitions = partitions.unwrap_or(default);
        t.replication_factor = replicas.unwrap_or(default as i16);
        t.configs = configs
            .iter()
            .map(|(k, val)| {
                let mut c = CreatableTopicConfig::default();
                c.name = StrBytes::from_string(k.clone());
                c.value = Some(StrBytes::from_string(val.clone()));
                c
            })
            .collect();
        let mut req = CreateTopicsRequest::default();
        req.topics = vec![t];
        req.timeout_ms = timeout_ms(global);
        req
    })?;
    let r = resp
        .topics
        .first()
        .ok_or_else(|| anyhow::anyhow!("CreateTopics answered nothing"))?;
    check(
        r.error_code,
        &format!("topic '{name}'"),
        r.error_message.as_ref(),
    )?;
    // v5+ reports what was created; older brokers do not, so ask.
    let (count, rf) = if version >= 5 {
        (r.num_partitions, r.replication_factor)
    } else {
        let ids = client.partitions(name)?;
        (ids.len() as i32, replicas.unwrap_or(-1))
    };
    let topic_id = (version >= 7).then(|| r.topic_id.to_string());
    emit(
        global.format,
        &json!({
            "topic": name,
            "topic_id": topic_id,
            "partitions": count,
            "replication_factor": rf,
        }),
        || format!("created topic '{name}' with {count} partitions, replication factor {rf}\n"),
    );
    Ok(())
}

fn list(global: &Global, client: &mut Client, internal: bool) -> anyhow::Result<()> {
    let resp = client.metadata(None)?;
    let mut topics: Vec<_> = resp
        .topics
        .iter()
        .filter(|t| internal || !t.is_internal)
        .filter_map(|t| {
            let name = t.name.as_ref()?.to_string();
            let rf = t
                .partitions
                .first()
                .map(|p| p.replica_nodes.len())
                .unwrap_or(0);
            Some((name, t.partitions.len(), rf, t.is_internal, t.topic_id))
        })
        .collect();
    topics.sort();
    let value = json!(topics
        .iter()
        .map(|(name, p, rf, internal, id)| json!({
            "name": name,
            "topic_id": id.to_string(),
            "partitions": p,
            "replication_factor": rf,
            "internal": internal,
        }))
        .collect::<Vec<_>>());
    emit(global.format, &value, || {
        let mut t = Table::new(&["TOPIC", "PARTITIONS", "REPLICAS"]);
        for (name, p, rf, internal, _) in &topics {
            let name = if *internal {
                format!("{name} (internal)")
            } else {
                name.clone()
            };
            t.row(vec![name, p.to_string(), rf.to_string()]);
        }
        t.render()
    });
    Ok(())
}

/// The configs of a topic that override the broker's defaults.
fn topic_overrides(
    client: &mut Client,
    name: &str,
) -> Result<Vec<(String, Option<String>)>, ClientError> {
    let (_, resp) = client.call(Node::Any, |_| {
        let mut r = DescribeConfigsResource::default();
        r.resource_type = RESOURCE_TOPIC;
        r.resource_name = StrBytes::from_string(name.to_string());
        r.configuration_keys = None;
        let mut req = DescribeConfigsRequest::default();
        req.resources = vec![r];
        req
    })?;
    let mut out = Vec::new();
    for r in resp.results {
        check(
            r.error_code,
            &format!("topic '{name}'"),
            r.error_message.as_ref(),
        )?;
        for c in r.configs {
            if c.config_source == SOURCE_TOPIC_OVERRIDE {
                out.push((c.name.to_string(), c.value.map(|v| v.to_string())));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// IncrementalAlterConfigs of one resource (`resource_type` 2: a topic, 4: a broker): `set`
/// keys to values, `delete` keys; an error names the resource.
pub(super) fn alter_configs(
    client: &mut Client,
    node: Node,
    resource_type: i8,
    resource_name: &str,
    set: &[(&str, &str)],
    delete: &[&str],
) -> anyhow::Result<()> {
    let s = |v: &str| StrBytes::from_string(v.to_string());
    let (_, resp) = client.call(node, |_| {
        let mut r = AlterConfigsResource::default();
        r.resource_type = resource_type;
        r.resource_name = s(resource_name);
        for (k, v) in set {
            let mut c = AlterableConfig::default();
            c.name = s(k);
            c.config_operation = OP_SET;
            c.value = Some(s(v));
            r.configs.push(c);
        }
        for k in delete {
            let mut c = AlterableConfig::default();
            c.name = s(k);
            c.config_operation = OP_DELETE;
            r.configs.push(c);
        }
        let mut req = IncrementalAlterConfigsRequest::default();
        req.resources = vec![r];
        req
    })?;
    let what = if resource_type == RESOURCE_TOPIC {
        format!("topic '{resource_name}'")
    } else {
        format!("broker {resource_name}")
    };
    for r in &resp.responses {
        check(r.error_code, &what, r.error_message.as_ref())?;
    }
    Ok(())
}

/// The topic `name` as Metadata describes it; its error if it has one.
fn topic_metadata(client: &mut Client, name: &str) -> anyhow::Result<MetadataResponseTopic> {
    let resp = client.metadata(Some(&[name.to_string()]))?;
    let t = resp
        .topics
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("metadata answered nothing for topic '{name}'"))?;
    check(t.error_code, &format!("topic '{name}'"), None)?;
    Ok(t)
}

fn describe(global: &Global, client: &mut Client, name: &str) -> anyhow::Result<()> {
    let t = topic_metadata(client, name)?;
    let mut partitions = t.partitions.clone();
    partitions.sort_by_key(|p| p.partition_index);
    let wanted = |ts: i64| -> Vec<(String, i32, i64)> {
        partitions
            .iter()
            .map(|p| (name.to_string(), p.partition_index, ts))
            .collect()
    };
    let starts = client.list_offsets(&wanted(EARLIEST))?;
    let ends = client.list_offsets(&wanted(LATEST))?;
    let configs = topic_overrides(client, name)?;
    let indexes: Vec<i32> = partitions.iter().map(|p| p.partition_index).collect();
    let moving = reassignments(client, name, indexes)?;
    let ids = |v: &[kafka_protocol::messages::BrokerId]| v.iter().map(|b| b.0).collect::<Vec<_>>();
    let offset =
        |m: &ListedOffsets, p: i32| m.get(&(name.to_string(), p)).map(|o| o.0).unwrap_or(-1);
    let rows: Vec<serde_json::Value> = partitions
        .iter()
        .map(|p| {
            json!({
                "partition": p.partition_index,
                "leader": p.leader_id.0,
                "leader_epoch": p.leader_epoch,
                "replicas": ids(&p.replica_nodes),
                "isr": ids(&p.isr_nodes),
                "offline_replicas": ids(&p.offline_replicas),
                "log_start_offset": offset(&starts, p.partition_index),
                "log_end_offset": offset(&ends, p.partition_index),
                "adding_replicas": moving.get(&p.partition_index).map(|m| m.0.clone()).unwrap_or_default(),
                "removing_replicas": moving.get(&p.partition_index).map(|m| m.1.clone()).unwrap_or_default(),
                "error": (p.error_code != 0).then(|| crate::util::error_name(p.error_code)),
            })
        })
        .collect();
    let value = json!({
        "topic": name,
        "topic_id": t.topic_id.to_string(),
        "internal": t.is_internal,
        "partitions": rows,
        "configs": configs.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
    });
    emit(global.format, &value, || {
        let rf = partitions
            .first()
            .map(|p| p.replica_nodes.len())
            .unwrap_or(0);
        let mut out = format!(
            "topic {name}  id {}  partitions {}  replication factor {rf}\n",
            t.topic_id,
            partitions.len()
        );
        if configs.is_empty() {
            out.push_str("configs: (all defaults)\n");
        } else {
            let list: Vec<String> = configs
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("null")))
                .collect();
            out.push_str(&format!("configs: {}\n", list.join(", ")));
        }
        out.push('\n');
        let mut table = Table::new(&[
            "PARTITION",
            "LEADER",
            "REPLICAS",
            "ISR",
            "LOG-START-OFFSET",
            "LOG-END-OFFSET",
        ]);
        let join = |v: Vec<i32>| v.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
        for p in &partitions {
            table.row(vec![
                p.partition_index.to_string(),
                p.leader_id.0.to_string(),
                join(ids(&p.replica_nodes)),
                join(ids(&p.isr_nodes)),
                offset(&starts, p.partition_index).to_string(),
                offset(&ends, p.partition_index).to_string(),
            ]);
        }
        let mut out = out + &table.render();
        if !moving.is_empty() {
            out.push_str("\nreassignments in progress:\n");
            for (p, (adding, removing)) in &moving {
                out.push_str(&format!(
                    "  partition {p}: adding {}  removing {}\n",
                    join(adding.clone()),
                    join(removing.clone())
                ));
            }
        }
        out
    });
    Ok(())
}

/// A partition's reassignment in progress: (adding replicas, removing replicas).
type Moving = (Vec<i32>, Vec<i32>);

/// The reassignments in progress among `partitions` of `topic`, by partition. None where the
/// broker does not serve ListPartitionReassignments.
fn reassignments(
    client: &mut Client,
    topic: &str,
    partitions: Vec<i32>,
) -> anyhow::Result<std::collections::BTreeMap<i32, Moving>> {
    if client
        .version::<ListPartitionReassignmentsRequest>(Node::Any)
        .is_err()
    {
        return Ok(Default::default());
    }
    let (_, resp) = client.call(Node::Any, |_| {
        let mut t =
            list_partition_reassignments_request::ListPartitionReassignmentsTopics::default();
        t.name = topic_name(topic);
        t.partition_indexes = partitions.clone();
        let mut req = ListPartitionReassignmentsRequest::default();
        req.topics = Some(vec![t]);
        req
    })?;
    check(
        resp.error_code,
        "the reassignments in progress",
        resp.error_message.as_ref(),
    )?;
    let ids = |v: &[BrokerId]| v.iter().map(|b| b.0).collect::<Vec<_>>();
    Ok(resp
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            (
                p.partition_index,
                (ids(&p.adding_replicas), ids(&p.removing_replicas)),
            )
        })
        .collect())
}

/// `samsa topic reassign`: AlterPartitionReassignments of one partition.
fn reassign(
    global: &Global,
    client: &mut Client,
    name: &str,
    partition: i32,
    replicas: Option<&[i32]>,
    keep_replication_factor: bool,
) -> anyhow::Result<()> {
    let (_, resp) = client.call(Node::Any, |_| {
        let mut p = alter_partition_reassignments_request::ReassignablePartition::default();
        p.partition_index = partition;
        p.replicas = replicas.map(|r| r.iter().map(|&b| BrokerId(b)).collect());
        let mut t = alter_partition_reassignments_request::ReassignableTopic::default();
        t.name = topic_name(name);
        t.partitions = vec![p];
        let mut req = AlterPartitionReassignmentsRequest::default();
        req.topics = vec![t];
        req.timeout_ms = timeout_ms(global);
        req.allow_replication_factor_change = !keep_replication_factor;
        req
    })?;
    check(
        resp.error_code,
        "the reassignment",
        resp.error_message.as_ref(),
    )?;
    let p = resp
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .next()
        .ok_or_else(|| anyhow::anyhow!("the broker answered for no partition"))?;
    check(
        p.error_code,
        &format!("reassigning {name}-{partition}"),
        p.error_message.as_ref(),
    )?;
    let what = match replicas {
        Some(r) => format!("moving to {r:?}"),
        None => "cancelled".to_string(),
    };
    let value =
        json!({ "topic": name, "partition": partition, "replicas": replicas, "status": what });
    emit(global.format, &value, || {
        format!("{name}-{partition}: {what}\n")
    });
    Ok(())
}

/// `samsa topic reassign --throttle`: the throttle of moving `partition` of `name` to `target`,
/// set before the move starts (as Kafka's tool does).
fn set_throttle(
    global: &Global,
    client: &mut Client,
    name: &str,
    partition: i32,
    target: &[i32],
    rate: i64,
) -> anyhow::Result<()> {
    if rate < 0 {
        anyhow::bail!("--throttle must be at least 0 bytes/s, not {rate}");
    }
    let t = topic_metadata(client, name)?;
    let current: Vec<i32> = t
        .partitions
        .iter()
        .find(|p| p.partition_index == partition)
        .ok_or_else(|| anyhow::anyhow!("topic '{name}' has no partition {partition}"))?
        .replica_nodes
        .iter()
        .map(|b| b.0)
        .collect();
    let overrides = topic_overrides(client, name)?;
    let brokers =
        super::throttle::set(client, name, partition, &current, target, rate, &overrides)?;
    let value =
        json!({ "topic": name, "partition": partition, "throttle": rate, "brokers": brokers });
    emit(global.format, &value, || {
        format!(
            "{name}-{partition}: replication throttled to {rate} bytes/s on brokers {brokers:?}\n"
        )
    });
    Ok(())
}

/// `samsa topic reassign --verify`: the moves of `name` (or of its `partition`) in progress;
/// with none left, the replication throttle removed from the topic and from every broker.
fn verify(
    global: &Global,
    client: &mut Client,
    name: &str,
    partition: Option<i32>,
) -> anyhow::Result<()> {
    let partitions = match partition {
        Some(p) => vec![p],
        None => client.partitions(name)?,
    };
    let moving = reassignments(client, name, partitions)?;
    let brokers: Vec<i32> = if moving.is_empty() {
        let resp = client.metadata(Some(&[]))?;
        let brokers: Vec<i32> = resp.brokers.iter().map(|b| b.node_id.0).collect();
        super::throttle::clear(client, name, &brokers)?;
        brokers
    } else {
        Vec::new()
    };
    let value = json!({
        "topic": name,
        "in_progress": moving.iter().map(|(p, (adding, removing))| json!({
            "partition": p, "adding_replicas": adding, "removing_replicas": removing,
        })).collect::<Vec<_>>(),
        "throttle_cleared_on": brokers,
    });
    emit(global.format, &value, || {
        if moving.is_empty() {
            return format!(
                "no reassignment of '{name}' in progress; throttle removed from the topic and brokers {brokers:?}\n"
            );
        }
        let mut out = String::new();
        for (p, (adding, removing)) in &moving {
            out.push_str(&format!(
                "{name}-{p}: in progress (adding {adding:?}, removing {removing:?}); throttle kept\n"
            ));
        }
        out
    });
    Ok(())
}

/// The partitions whose ISR is smaller than their replica set (`kafka-topics.sh --describe
/// --under-replicated-partitions`), of one topic or of all.
fn under_replicated(
    global: &Global,
    client: &mut Client,
    name: Option<&str>,
) -> anyhow::Result<()> {
    let names = name.map(|n| vec![n.to_string()]);
    let resp = client.metadata(names.as_deref())?;
    let ids = |v: &[kafka_protocol::messages::BrokerId]| v.iter().map(|b| b.0).collect::<Vec<_>>();
    let mut rows = Vec::new();
    for t in &resp.topics {
        let topic = t.name.as_ref().map(|n| n.to_string()).unwrap_or_default();
        check(t.error_code, &format!("topic '{topic}'"), None)?;
        for p in &t.partitions {
            if p.isr_nodes.len() < p.replica_nodes.len() {
                rows.push((topic.clone(), p.clone()));
            }
        }
    }
    rows.sort_by(|a, b| (&a.0, a.1.partition_index).cmp(&(&b.0, b.1.partition_index)));
    let value = json!(rows
        .iter()
        .map(|(topic, p)| json!({
            "topic": topic,
            "partition": p.partition_index,
            "leader": p.leader_id.0,
            "replicas": ids(&p.replica_nodes),
            "isr": ids(&p.isr_nodes),
            "offline_replicas": ids(&p.offline_replicas),
        }))
        .collect::<Vec<_>>());
    emit(global.format, &value, || {
        if rows.is_empty() {
            return "no under-replicated partitions\n".to_string();
        }
        let join = |v: Vec<i32>| v.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
        let mut table = Table::new(&["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "OFFLINE"]);
        for (topic, p) in &rows {
            table.row(vec![
                topic.clone(),
                p.partition_index.to_string(),
                p.leader_id.0.to_string(),
                join(ids(&p.replica_nodes)),
                join(ids(&p.isr_nodes)),
                join(ids(&p.offline_replicas)),
            ]);
        }
        table.render()
    });
    Ok(())
}

fn delete(global: &Global, client: &mut Client, name: &str) -> anyhow::Result<()> {
    let (_, resp) = client.call(Node::Any, |v| {
        let mut req = DeleteTopicsRequest::default();
        if v >= 6 {
            let mut s = DeleteTopicState::default();
            s.name = Some(topic_name(name));
            req.topics = vec![s];
        } else {
            req.topic_names = vec![topic_name(name)];
        }
        req.timeout_ms = timeout_ms(global);
        req
    })?;
    let r = resp
        .responses
        .first()
        .ok_or_else(|| anyhow::anyhow!("DeleteTopics answered nothing"))?;
    check(
        r.error_code,
        &format!("topic '{name}'"),
        r.error_message.as_ref(),
    )?;
    emit(
        global.format,
        &json!({ "topic": name, "deleted": true }),
        || format!("deleted topic '{name}'\n"),
    );
    Ok(())
}

fn alter_config(
    global: &Global,
    client: &mut Client,
    name: &str,
    set: &[(String, String)],
    delete: &[String],
) -> anyhow::Result<()> {
    if set.is_empty() && delete.is_empty() {
        anyhow::bail!("nothing to change: give -s key=value and/or -d key");
    }
    let set: Vec<(&str, &str)> = set.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let delete: Vec<&str> = delete.iter().map(String::as_str).collect();
    alter_configs(client, Node::Any, RESOURCE_TOPIC, name, &set, &delete)?;
    let configs = topic_overrides(client, name)?;
    let value = json!({
        "topic": name,
        "configs": configs.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
    });
    emit(global.format, &value, || {
        let mut out = format!("updated configs of topic '{name}'\n");
        let mut t = Table::new(&["CONFIG", "VALUE"]);
        for (k, v) in &configs {
            t.row(vec![k.clone(), v.clone().unwrap_or_else(|| "null".into())]);
        }
        if !configs.is_empty() {
            out.push_str(&t.render());
        }
        out
    });
    Ok(())
}

fn add_partitions(
    global: &Global,
    client: &mut Client,
    name: &str,
    total: i32,
) -> anyhow::Result<()> {
    let (_, resp) = client.call(Node::Any, |_| {
        let mut t = CreatePartitionsTopic::default();
        t.name = topic_name(name);
        t.count = total;
        t.assignments = None;
        let mut req = CreatePartitionsRequest::default();
        req.topics = vec![t];
        req.timeout_ms = timeout_ms(global);
        req
    })?;
    for r in &resp.results {
        check(
            r.error_code,
            &format!("topic '{name}'"),
            r.error_message.as_ref(),
        )?;
    }
    emit(
        global.format,
        &json!({ "topic": name, "partitions": total }),
        || format!("topic '{name}' now has {total} partitions\n"),
    );
    Ok(())
}

/// ElectLeaders' election types.
const ELECTION_PREFERRED: i8 = 0;
const ELECTION_UNCLEAN: i8 = 1;

fn elect_leaders(
    global: &Global,
    client: &mut Client,
    unclean: bool,
    topic: Option<&str>,
    partitions: &[i32],
) -> anyhow::Result<()> {
    let kind = if unclean { "unclean" } else { "preferred" };
    // `None`: every partition of every topic.
    let asked: Option<(String, Vec<i32>)> = match topic {
        Some(t) if partitions.is_empty() => Some((t.to_string(), client.partitions(t)?)),
        Some(t) => Some((t.to_string(), partitions.to_vec())),
        None => None,
    };
    if unclean && client.version::<ElectLeadersRequest>(Node::Any)? == 0 {
        anyhow::bail!("the broker takes only preferred elections (ElectLeaders v0)");
    }
    let (version, resp) = client.call(Node::Any, |v| {
        let mut req = ElectLeadersRequest::default();
        if v >= 1 {
            req.election_type = if unclean {
                ELECTION_UNCLEAN
            } else {
                ELECTION_PREFERRED
            };
        }
        req.topic_partitions = asked.as_ref().map(|(t, ps)| {
            let mut x = TopicPartitions::default();
            x.topic = topic_name(t);
            x.partitions = ps.clone();
            vec![x]
        });
        req.timeout_ms = timeout_ms(global);
        req
    })?;
    if version >= 1 {
        let message = resp
            .replica_election_results
            .iter()
            .flat_map(|t| t.partition_result.iter())
            .find_map(|p| p.error_message.as_ref());
        check(resp.error_code, "the leader election", message)?;
    }
    let not_needed = ResponseError::ElectionNotNeeded.code();
    let mut rows: Vec<(String, i32, i16, Option<String>)> = resp
        .replica_election_results
        .iter()
        .flat_map(|t| {
            t.partition_result.iter().map(|p| {
                (
                    t.topic.to_string(),
                    p.partition_id,
                    p.error_code,
                    p.error_message.as_ref().map(|m| m.to_string()),
                )
            })
        })
        .collect();
    rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let outcome = |code: i16, message: &Option<String>| match code {
        0 => "elected".to_string(),
        c if c == not_needed => "not needed".to_string(),
        c => {
            let name = crate::util::error_name(c);
            match message {
                Some(m) if !m.is_empty() => format!("{name}: {m}"),
                _ => name,
            }
        }
    };
    let value = json!({
        "election": kind,
        "partitions": rows.iter().map(|(t, p, code, message)| json!({
            "topic": t,
            "partition": p,
            "error_code": code,
            "error": (*code != 0).then(|| crate::util::error_name(*code)),
            "error_message": message,
        })).collect::<Vec<_>>(),
    });
    emit(global.format, &value, || {
        if rows.is_empty() {
            return format!("no partition needed a {kind} election\n");
        }
        let mut t = Table::new(&["TOPIC", "PARTITION", "RESULT"]);
        for (topic, p, code, message) in &rows {
            t.row(vec![topic.clone(), p.to_string(), outcome(*code, message)]);
        }
        t.render()
    });
    let failed = rows
        .iter()
        .filter(|(_, _, code, _)| *code != 0 && *code != not_needed)
        .count();
    if failed > 0 {
        anyhow::bail!(
            "the {kind} election failed for {failed} of {} partition(s)",
            rows.len()
        );
    }
    Ok(())
}
