//! `samsa group ...`: the everyday jobs of Kafka's `kafka-consumer-groups.sh`, through the
//! standard group APIs (FindCoordinator, ListGroups, DescribeGroups, OffsetFetch,
//! OffsetCommit, DeleteGroups) so that they work against any Kafka-compatible broker; a KIP-848
//! consumer group is described with ConsumerGroupDescribe (its assignor, the group's and each
//! member's epoch, current and target assignments).
//!
//! `reset-offsets` is a dry run unless `--execute`, and is refused while the group has
//! members, as Kafka's tool does: a live consumer would overwrite the reset with its next
//! commit. The reset commits as a "simple consumer" (generation -1, no member id), which
//! Kafka's coordinator accepts for a group without members.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use clap::Subcommand;
use kafka_protocol::messages::consumer_group_describe_response;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerProtocolAssignment, DeleteGroupsRequest,
    DescribeGroupsRequest, GroupId, ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use serde_json::json;

use super::client::{self, check, Client, ClientError, Node, EARLIEST, LATEST};
use super::global::Global;
use super::output::{emit, parse_datetime_ms, Progress, Table};
use super::share_group;

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// List consumer groups.
    List,
    /// State, members and their assignments, and committed offset, log end offset and lag
    /// per partition.
    Describe { name: String },
    /// Delete a group without members, with its committed offsets.
    Delete { name: String },
    /// Move a group's committed offsets (a dry run unless --execute).
    ResetOffsets(ResetArgs),
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args([
    "to_earliest", "to_latest", "to_offset", "to_datetime", "shift_by",
])))]
pub struct ResetArgs {
    /// The group.
    pub name: String,
    /// TOPIC or TOPIC:P1,P2 (repeatable).
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
    /// The first offset still in each partition.
    #[arg(long)]
    pub to_earliest: bool,
    /// The end of each partition (skip everything not yet consumed).
    #[arg(long)]
    pub to_latest: bool,
    /// An absolute offset (clamped into each partition's range, as Kafka does).
    #[arg(long)]
    pub to_offset: Option<i64>,
    /// The first offset at or after this time (ISO 8601, e.g. 2024-05-01T12:00:00Z).
    #[arg(long)]
    pub to_datetime: Option<String>,
    /// Move each committed offset by N (negative moves back), clamped into the range.
    #[arg(long, allow_negative_numbers = true)]
    pub shift_by: Option<i64>,
    /// Commit the new offsets (otherwise only show them).
    #[arg(long)]
    pub execute: bool,
    /// The group is a share group (KIP-932): needed only to create one, for an existing share
    /// group is recognised.
    #[arg(long)]
    pub share: bool,
}

pub fn run(global: &Global, cmd: &GroupCommand) -> anyhow::Result<()> {
    let mut client = global.connect()?;
    match cmd {
        GroupCommand::List => list(global, &mut client),
        GroupCommand::Describe { name } => describe(global, &mut client, name),
        GroupCommand::Delete { name } => delete(global, &mut client, name),
        GroupCommand::ResetOffsets(args) => reset_offsets(global, &mut client, args),
    }
}

fn group_id(name: &str) -> GroupId {
    GroupId(StrBytes::from_string(name.to_string()))
}

/// Committed offsets of a group (`topics`: `None` = every partition the group committed).
/// Partitions without a committed offset are left out.
pub fn offset_fetch(
    client: &mut Client,
    coordinator: Node,
    group: &str,
    topics: Option<&[(String, Vec<i32>)]>,
) -> Result<BTreeMap<(String, i32), i64>, ClientError> {
    let (version, resp) = client.call(coordinator, |_| {
        let mut req = OffsetFetchRequest::default();
        req.group_id = group_id(group);
        req.topics = topics.map(|ts| {
            ts.iter()
                .map(|(t, ps)| {
                    let mut rt = OffsetFetchRequestTopic::default();
                    rt.name = TopicName(StrBytes::from_string(t.clone()));
                    rt.partition_indexes = ps.clone();
                    rt
                })
                .collect()
        });
        req
    })?;
    let what = format!("group '{group}'");
    if version >= 2 {
        check(resp.error_code, &what, None)?;
    }
    let mut out = BTreeMap::new();
    for t in resp.topics {
        for p in t.partitions {
            if p.error_code == ResponseError::UnknownTopicOrPartition.code() {
                continue;
            }
            check(
                p.error_code,
                &format!("{what} offset of {}-{}", t.name.as_str(), p.partition_index),
                None,
            )?;
            if p.committed_offset >= 0 {
                out.insert((t.name.to_string(), p.partition_index), p.committed_offset);
            }
        }
    }
    Ok(out)
}

/// Commits offsets for a group as a consumer outside any generation (generation -1, no
/// member id): Kafka's coordinator accepts that only while the group has no members.
pub fn offset_commit(
    client: &mut Client,
    coordinator: Node,
    group: &str,
    offsets: &BTreeMap<(String, i32), i64>,
) -> Result<(), ClientError> {
    if offsets.is_empty() {
        return Ok(());
    }
    let mut by_topic: BTreeMap<&str, Vec<(i32, i64)>> = BTreeMap::new();
    for ((t, p), o) in offsets {
        by_topic.entry(t).or_default().push((*p, *o));
    }
    let (_, resp) = client.call(coordinator, |_| {
        let mut req = OffsetCommitRequest::default();
        req.group_id = group_id(group);
        req.generation_id_or_member_epoch = -1;
        req.member_id = StrBytes::from_static_str("");
        req.topics = by_topic
            .iter()
            .map(|(t, ps)| {
                let mut rt = OffsetCommitRequestTopic::default();
                rt.name = TopicName(StrBytes::from_string(t.to_string()));
                rt.partitions = ps
                    .iter()
                    .map(|(p, o)| {
                        let mut rp = OffsetCommitRequestPartition::default();
                        rp.partition_index = *p;
                        rp.committed_offset = *o;
                        rp
                    })
                    .collect();
                rt
            })
            .collect();
        req
    })?;
    for t in resp.topics {
        for p in t.partitions {
            check(
                p.error_code,
                &format!(
                    "commit of group '{group}' for {}-{}",
                    t.name.as_str(),
                    p.partition_index
                ),
                None,
            )?;
        }
    }
    Ok(())
}

/// What DescribeGroups (or ConsumerGroupDescribe) says about one group.
pub struct Described {
    pub state: String,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<Member>,
    /// A KIP-848 consumer group's epoch and target assignment epoch.
    pub epochs: Option<(i32, i32)>,
}

pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub host: String,
    /// Assigned (topic, partition)s, decoded when the protocol type is "consumer".
    pub assignment: Vec<(String, i32)>,
    /// A KIP-848 member's epoch and its target partitions.
    pub epoch: Option<i32>,
    pub target: Vec<(String, i32)>,
}

/// ConsumerGroupDescribe of a KIP-848 consumer group; `None` when the broker does not serve
/// it or the group is of another kind.
pub fn describe_consumer_group(
    client: &mut Client,
    coordinator: Node,
    name: &str,
) -> Option<Described> {
    let (_, resp) = client
        .call(coordinator, |_| {
            let mut req = ConsumerGroupDescribeRequest::default();
            req.group_ids = vec![group_id(name)];
            req
        })
        .ok()?;
    let g = resp.groups.into_iter().next()?;
    if g.error_code != 0 {
        return None;
    }
    let partitions = |a: &consumer_group_describe_response::Assignment| -> Vec<(String, i32)> {
        a.topic_partitions
            .iter()
            .flat_map(|tp| {
                tp.partitions
                    .iter()
                    .map(move |p| (tp.topic_name.to_string(), *p))
            })
            .collect()
    };
    Some(Described {
        state: g.group_state.to_string(),
        protocol_type: "consumer".into(),
        protocol: g.assignor_name.to_string(),
        epochs: Some((g.group_epoch, g.assignment_epoch)),
        members: g
            .members
            .iter()
            .map(|m| Member {
                member_id: m.member_id.to_string(),
                group_instance_id: m.instance_id.as_ref().map(|s| s.to_string()),
                client_id: m.client_id.to_string(),
                host: m.client_host.to_string(),
                assignment: partitions(&m.assignment),
                epoch: Some(m.member_epoch),
                target: partitions(&m.target_assignment),
            })
            .collect(),
    })
}

pub fn describe_group(
    client: &mut Client,
    coordinator: Node,
    name: &str,
) -> Result<Described, ClientError> {
    let (_, resp) = client.call(coordinator, |_| {
        let mut req = DescribeGroupsRequest::default();
        req.groups = vec![group_id(name)];
        req
    })?;
    let g = resp
        .groups
        .into_iter()
        .next()
        .ok_or_else(|| ClientError::Protocol {
            addr: client.bootstrap_addr().to_string(),
            reason: "DescribeGroups answered no group".into(),
        })?;
    check(
        g.error_code,
        &format!("group '{name}'"),
        g.error_message.as_ref(),
    )?;
    let consumer = g.protocol_type.as_str() == "consumer";
    let members = g
        .members
        .iter()
        .map(|m| {
            let assigned = if consumer {
                client::decode_versioned::<ConsumerProtocolAssignment>(Bytes::clone(
                    &m.member_assignment,
                ))
                .map(|a| {
                    a.assigned_partitions
                        .iter()
                        .flat_map(|tp| {
                            tp.partitions
                                .iter()
                                .map(move |p| (tp.topic.to_string(), *p))
                        })
                        .collect()
                })
                .unwrap_or_default()
            } else {
                Vec::new()
            };
            Member {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.as_ref().map(|s| s.to_string()),
                client_id: m.client_id.to_string(),
                host: m.client_host.to_string(),
                assignment: assigned,
                epoch: None,
                target: Vec::new(),
            }
        })
        .collect();
    Ok(Described {
        state: g.group_state.to_string(),
        protocol_type: g.protocol_type.to_string(),
        protocol: g.protocol_data.to_string(),
        members,
        epochs: None,
    })
}

/// The members of a described group as a table (member, client, host, assigned partitions),
/// with a blank line after it; nothing for a group without members.
pub fn members_table<'a>(
    members: impl Iterator<Item = (&'a String, &'a String, &'a String, &'a [(String, i32)])>,
) -> String {
    let mut t = Table::new(&["MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"]);
    let mut any = false;
    for (member_id, client_id, host, assignment) in members {
        any = true;
        let a: Vec<String> = assignment.iter().map(|(t, p)| format!("{t}-{p}")).collect();
        t.row(vec![
            member_id.clone(),
            client_id.clone(),
            host.clone(),
            a.join(","),
        ]);
    }
    if any {
        t.render() + "\n"
    } else {
        String::new()
    }
}

fn list(global: &Global, client: &mut Client) -> anyhow::Result<()> {
    // Each broker lists the groups it coordinates: ask them all, as Kafka's tool does.
    let meta = client.metadata(Some(&[]))?;
    let mut nodes: Vec<i32> = meta.brokers.iter().map(|b| b.node_id.0).collect();
    nodes.sort_unstable();
    let mut groups: BTreeMap<String, (String, String)> = BTreeMap::new();
    let targets: Vec<Node> = if nodes.is_empty() {
        vec![Node::Any]
    } else {
        nodes.into_iter().map(Node::Id).collect()
    };
    for node in targets {
        let (version, resp) = client.call(node, |_| ListGroupsRequest::default())?;
        check(resp.error_code, "ListGroups", None)?;
        for g in resp.groups {
            let state = if version >= 4 {
                g.group_state.to_string()
            } else {
                String::new()
            };
            groups.insert(g.group_id.to_string(), (g.protocol_type.to_string(), state));
        }
    }
    let value = json!(groups
        .iter()
        .map(|(g, (pt, state))| json!({ "group": g, "protocol_type": pt, "state": state }))
        .collect::<Vec<_>>());
    emit(global.format, &value, || {
        let mut t = Table::new(&["GROUP", "STATE", "PROTOCOL-TYPE"]);
        for (g, (pt, state)) in &groups {
            t.row(vec![g.clone(), state.clone(), pt.clone()]);
        }
        t.render()
    });
    Ok(())
}

fn describe(global: &Global, client: &mut Client, name: &str) -> anyhow::Result<()> {
    let coordinator = client.group_coordinator(name)?;
    if let Some(share) = share_group::describe_share(client, coordinator, name)? {
        return share_group::describe(global, client, coordinator, name, share);
    }
    let described = match describe_consumer_group(client, coordinator, name) {
        Some(d) => d,
        None => describe_group(client, coordinator, name)?,
    };
    let committed = offset_fetch(client, coordinator, name, None)?;
    // Every partition that is committed or assigned gets a row.
    let mut partitions: BTreeMap<(String, i32), Option<String>> = BTreeMap::new();
    for tp in committed.keys() {
        partitions.insert(tp.clone(), None);
    }
    for m in &described.members {
        for tp in &m.assignment {
            partitions.insert(tp.clone(), Some(m.member_id.clone()));
        }
    }
    let topics: Vec<String> = {
        let mut t: Vec<String> = partitions.keys().map(|(t, _)| t.clone()).collect();
        t.dedup();
        t
    };
    let ends = if topics.is_empty() {
        HashMap::new()
    } else {
        client.metadata(Some(&topics))?;
        let wanted: Vec<(String, i32, i64)> = partitions
            .keys()
            .map(|(t, p)| (t.clone(), *p, LATEST))
            .collect();
        client.list_offsets(&wanted)?
    };
    let rows: Vec<_> = partitions
        .iter()
        .map(|((t, p), member)| {
            let committed = committed.get(&(t.clone(), *p)).copied();
            let end = ends.get(&(t.clone(), *p)).map(|o| o.0);
            let lag = match (committed, end) {
                (Some(c), Some(e)) => Some((e - c).max(0)),
                _ => None,
            };
            (t.clone(), *p, committed, end, lag, member.clone())
        })
        .collect();
    let value = json!({
        "group": name,
        "state": described.state,
        "protocol_type": described.protocol_type,
        "protocol": described.protocol,
        "group_epoch": described.epochs.map(|e| e.0),
        "assignment_epoch": described.epochs.map(|e| e.1),
        "members": described.members.iter().map(|m| json!({
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "host": m.host,
            "assignment": m.assignment.iter().map(|(t, p)| json!({"topic": t, "partition": p})).collect::<Vec<_>>(),
            "member_epoch": m.epoch,
            "target_assignment": described.epochs.map(|_| m.target.iter().map(|(t, p)| json!({"topic": t, "partition": p})).collect::<Vec<_>>()),
        })).collect::<Vec<_>>(),
        "offsets": rows.iter().map(|(t, p, c, e, lag, member)| json!({
            "topic": t,
            "partition": p,
            "committed_offset": c,
            "log_end_offset": e,
            "lag": lag,
            "member_id": member,
        })).collect::<Vec<_>>(),
        "total_lag": rows.iter().filter_map(|r| r.4).sum::<i64>(),
    });
    emit(global.format, &value, || {
        let or_dash = |s: &str| {
            if s.is_empty() {
                "-".to_string()
            } else {
                s.to_string()
            }
        };
        let mut out = match described.epochs {
            // A KIP-848 consumer group: its assignor and epochs, and each member's.
            Some((epoch, target)) => {
                let mut out = format!(
                    "group {name}  state {}  type consumer  assignor {}  epoch {epoch}  target-epoch {target}  members {}\n",
                    described.state,
                    or_dash(&described.protocol),
                    described.members.len()
                );
                for m in &described.members {
                    let list = |ps: &[(String, i32)]| {
                        let v: Vec<String> = ps.iter().map(|(t, p)| format!("{t}-{p}")).collect();
                        or_dash(&v.join(","))
                    };
                    out.push_str(&format!(
                        "  member {}  epoch {}  target {}\n",
                        m.member_id,
                        m.epoch.unwrap_or(-1),
                        list(&m.target)
                    ));
                }
                out + "\n"
            }
            None => format!(
                "group {name}  state {}  protocol-type {}  protocol {}  members {}\n\n",
                described.state,
                or_dash(&described.protocol_type),
                or_dash(&described.protocol),
                described.members.len()
            ),
        };
        out.push_str(&members_table(
            described
                .members
                .iter()
                .map(|m| (&m.member_id, &m.client_id, &m.host, &m.assignment[..])),
        ));
        let mut t = Table::new(&[
            "TOPIC",
            "PARTITION",
            "COMMITTED-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "MEMBER-ID",
        ]);
        let show = |o: Option<i64>| o.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
        for (topic, p, c, e, lag, member) in &rows {
            t.row(vec![
                topic.clone(),
                p.to_string(),
                show(*c),
                show(*e),
                show(*lag),
                member.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        out + &t.render()
    });
    Ok(())
}

fn delete(global: &Global, client: &mut Client, name: &str) -> anyhow::Result<()> {
    let coordinator = client.group_coordinator(name)?;
    let (_, resp) = client.call(coordinator, |_| {
        let mut req = DeleteGroupsRequest::default();
        req.groups_names = vec![group_id(name)];
        req
    })?;
    for r in &resp.results {
        check(r.error_code, &format!("group '{name}'"), None)?;
    }
    emit(
        global.format,
        &json!({ "group": name, "deleted": true }),
        || format!("deleted group '{name}'\n"),
    );
    Ok(())
}

/// `TOPIC` or `TOPIC:P1,P2`.
fn parse_topic_spec(spec: &str) -> anyhow::Result<(String, Option<Vec<i32>>)> {
    match spec.split_once(':') {
        None => Ok((spec.to_string(), None)),
        Some((t, ps)) => {
            let parts = ps
                .split(',')
                .map(|p| p.trim().parse::<i32>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| anyhow::anyhow!("'{spec}' is not TOPIC or TOPIC:P1,P2"))?;
            Ok((t.to_string(), Some(parts)))
        }
    }
}

fn reset_offsets(global: &Global, client: &mut Client, args: &ResetArgs) -> anyhow::Result<()> {
    let name = &args.name;
    let coordinator = client.group_coordinator(name)?;
    // A share group's start offsets move instead of committed offsets.
    let share = match share_group::describe_share(client, coordinator, name)? {
        None if args.share => Some(share_group::ShareDescribed {
            state: "Empty".into(),
            epoch: 0,
            members: Vec::new(),
        }),
        other => other,
    };
    let (members, state) = match &share {
        Some(d) => (d.members.len(), d.state.clone()),
        None => {
            // A group that does not exist yet has no members: resetting creates its offsets, as
            // Kafka's tool allows (older brokers describe it as Dead, newer ones as
            // GROUP_ID_NOT_FOUND).
            match describe_group(client, coordinator, name) {
                Err(ClientError::Kafka(e)) if e.code == ResponseError::GroupIdNotFound.code() => {
                    (0, String::new())
                }
                other => {
                    let d = other?;
                    (d.members.len(), d.state)
                }
            }
        }
    };
    if members > 0 {
        anyhow::bail!(
            "group '{name}' has {members} live member(s) (state {state}); stop its consumers before resetting offsets"
        );
    }
    let mut targets: Vec<(String, i32)> = Vec::new();
    for spec in &args.topics {
        let (topic, parts) = parse_topic_spec(spec)?;
        let all = client.partitions(&topic)?;
        let chosen = match parts {
            None => all,
            Some(ps) => {
                if let Some(bad) = ps.iter().find(|p| !all.contains(p)) {
                    anyhow::bail!("topic '{topic}' has no partition {bad}");
                }
                ps
            }
        };
        targets.extend(chosen.into_iter().map(|p| (topic.clone(), p)));
    }
    targets.sort();
    targets.dedup();
    let mut progress = Progress::new();
    let with_ts = |ts: i64| -> Vec<(String, i32, i64)> {
        targets.iter().map(|(t, p)| (t.clone(), *p, ts)).collect()
    };
    progress.update(|| format!("reading offsets of {} partitions", targets.len()));
    let starts = client.list_offsets(&with_ts(EARLIEST))?;
    let ends = client.list_offsets(&with_ts(LATEST))?;
    let topic_list: Vec<(String, Vec<i32>)> = {
        let mut m: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (t, p) in &targets {
            m.entry(t.clone()).or_default().push(*p);
        }
        m.into_iter().collect()
    };
    let committed = match &share {
        Some(_) => share_group::share_offsets(client, coordinator, name)?
            .into_iter()
            .filter(|(_, (start, _, _))| *start >= 0)
            .map(|(k, (start, _, _))| (k, start))
            .collect(),
        None => offset_fetch(client, coordinator, name, Some(&topic_list))?,
    };
    let at_time = match &args.to_datetime {
        Some(s) => {
            let ms = parse_datetime_ms(s).ok_or_else(|| {
                anyhow::anyhow!("'{s}' is not an ISO 8601 date-time such as 2024-05-01T12:00:00Z")
            })?;
            Some(client.list_offsets(&with_ts(ms))?)
        }
        None => None,
    };
    let mut plan: BTreeMap<(String, i32), i64> = BTreeMap::new();
    let mut rows = Vec::new();
    for (t, p) in &targets {
        let key = (t.clone(), *p);
        let start = starts.get(&key).map(|o| o.0).unwrap_or(0);
        let end = ends.get(&key).map(|o| o.0).unwrap_or(0);
        let current = committed.get(&key).copied();
        let clamp = |o: i64| o.clamp(start, end.max(start));
        let new = if args.to_earliest {
            start
        } else if args.to_latest {
            end
        } else if let Some(o) = args.to_offset {
            clamp(o)
        } else if let Some(found) = &at_time {
            // No record at or after the time: the end, as Kafka's tool does.
            match found.get(&key).map(|o| o.0) {
                Some(o) if o >= 0 => o,
                _ => end,
            }
        } else if let Some(n) = args.shift_by {
            let Some(c) = current else {
                anyhow::bail!(
                    "group '{name}' has no committed offset for {t}-{p} to shift from; use --to-earliest, --to-latest or --to-offset"
                );
            };
            clamp(c.saturating_add(n))
        } else {
            unreachable!("clap requires one target")
        };
        plan.insert(key, new);
        rows.push((t.clone(), *p, current, new));
    }
    if args.execute {
        progress.update(|| format!("committing {} offsets", plan.len()));
        match &share {
            Some(_) => share_group::alter_share_offsets(client, coordinator, name, &plan)?,
            None => offset_commit(client, coordinator, name, &plan)?,
        }
    }
    progress.finish();
    let value = json!({
        "group": name,
        "executed": args.execute,
        "offsets": rows.iter().map(|(t, p, current, new)| json!({
            "topic": t,
            "partition": p,
            "current_offset": current,
            "new_offset": new,
        })).collect::<Vec<_>>(),
    });
    emit(global.format, &value, || {
        let mut t = Table::new(&["TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]);
        for (topic, p, current, new) in &rows {
            t.row(vec![
                topic.clone(),
                p.to_string(),
                current.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
                new.to_string(),
            ]);
        }
        let mut out = t.render();
        if args.execute {
            out.push_str(&format!(
                "\nreset {} offsets of group '{name}'\n",
                rows.len()
            ));
        } else {
            out.push_str("\ndry run: nothing committed; add --execute to apply\n");
        }
        out
    });
    Ok(())
}
