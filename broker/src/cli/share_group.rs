//! `samsa group describe` and `samsa group reset-offsets` for share groups (KIP-932), through
//! ShareGroupDescribe, DescribeShareGroupOffsets and AlterShareGroupOffsets, as Kafka's
//! `kafka-share-groups.sh` does. Describe shows each share-partition's start offset, the log
//! end offset and the lag between them (records not yet acknowledged or archived, in flight
//! included), and, from Samsa brokers, the records acquired and archived in flight.

use std::collections::BTreeMap;

use kafka_protocol::messages::alter_share_group_offsets_request::{
    AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequest, GroupId,
    ShareGroupDescribeRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use serde_json::json;

use super::client::{check, Client, ClientError, Node, LATEST};
use super::global::Global;
use super::output::{emit, Table};

/// Samsa's tagged fields of DescribeShareGroupOffsets partitions (see the broker's handler).
const TAG_ACQUIRED: i32 = 10_000;
const TAG_ARCHIVED: i32 = 10_001;

pub struct ShareMember {
    pub member_id: String,
    pub client_id: String,
    pub host: String,
    pub topics: Vec<String>,
    pub assignment: Vec<(String, i32)>,
}

pub struct ShareDescribed {
    pub state: String,
    pub epoch: i32,
    pub members: Vec<ShareMember>,
}

/// One share-partition's offsets: start, and from Samsa the records acquired and archived.
pub type ShareOffsets = BTreeMap<(String, i32), (i64, Option<u64>, Option<u64>)>;

fn group_id(name: &str) -> GroupId {
    GroupId(StrBytes::from_string(name.to_string()))
}

/// The share group `name`, or `None` when it is not one (or the broker serves no share groups).
pub fn describe_share(
    client: &mut Client,
    coordinator: Node,
    name: &str,
) -> Result<Option<ShareDescribed>, ClientError> {
    let answer = client.call(coordinator, |_| {
        let mut req = ShareGroupDescribeRequest::default();
        req.group_ids = vec![group_id(name)];
        req
    });
    let Ok((_, resp)) = answer else {
        return Ok(None);
    };
    let Some(g) = resp.groups.into_iter().next() else {
        return Ok(None);
    };
    if g.error_code != 0 {
        return Ok(None);
    }
    Ok(Some(ShareDescribed {
        state: g.group_state.to_string(),
        epoch: g.group_epoch,
        members: g
            .members
            .iter()
            .map(|m| ShareMember {
                member_id: m.member_id.to_string(),
                client_id: m.client_id.to_string(),
                host: m.client_host.to_string(),
                topics: m
                    .subscribed_topic_names
                    .iter()
                    .map(|t| t.to_string())
                    .collect(),
                assignment: m
                    .assignment
                    .topic_partitions
                    .iter()
                    .flat_map(|tp| {
                        let t = tp.topic_name.to_string();
                        tp.partitions.iter().map(move |p| (t.clone(), *p))
                    })
                    .collect(),
            })
            .collect(),
    }))
}

fn uvarint(b: &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        v |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Every share-partition of `name` with its start offset.
pub fn share_offsets(
    client: &mut Client,
    coordinator: Node,
    name: &str,
) -> Result<ShareOffsets, ClientError> {
    let (_, resp) = client.call(coordinator, |_| {
        let mut g = DescribeShareGroupOffsetsRequestGroup::default();
        g.group_id = group_id(name);
        g.topics = None;
        let mut req = DescribeShareGroupOffsetsRequest::default();
        req.groups = vec![g];
        req
    })?;
    let mut out = ShareOffsets::new();
    for g in resp.groups {
        check(
            g.error_code,
            &format!("share group '{name}'"),
            g.error_message.as_ref(),
        )?;
        for t in g.topics {
            for p in t.partitions {
                check(
                    p.error_code,
                    &format!("{}-{}", t.topic_name.as_str(), p.partition_index),
                    p.error_message.as_ref(),
                )?;
                let tag = |k| p.unknown_tagged_fields.get(&k).and_then(|b| uvarint(b));
                out.insert(
                    (t.topic_name.to_string(), p.partition_index),
                    (p.start_offset, tag(TAG_ACQUIRED), tag(TAG_ARCHIVED)),
                );
            }
        }
    }
    Ok(out)
}

/// Moves the start offsets of `name`'s share-partitions.
pub fn alter_share_offsets(
    client: &mut Client,
    coordinator: Node,
    name: &str,
    plan: &BTreeMap<(String, i32), i64>,
) -> Result<(), ClientError> {
    let mut topics: BTreeMap<&str, Vec<(i32, i64)>> = BTreeMap::new();
    for ((t, p), o) in plan {
        topics.entry(t).or_default().push((*p, *o));
    }
    let (_, resp) = client.call(coordinator, |_| {
        let mut req = AlterShareGroupOffsetsRequest::default();
        req.group_id = group_id(name);
        req.topics = topics
            .iter()
            .map(|(t, ps)| {
                let mut rt = AlterShareGroupOffsetsRequestTopic::default();
                rt.topic_name = TopicName(StrBytes::from_string(t.to_string()));
                rt.partitions = ps
                    .iter()
                    .map(|(p, o)| {
                        let mut rp = AlterShareGroupOffsetsRequestPartition::default();
                        rp.partition_index = *p;
                        rp.start_offset = *o;
                        rp
                    })
                    .collect();
                rt
            })
            .collect();
        req
    })?;
    check(
        resp.error_code,
        &format!("share group '{name}'"),
        resp.error_message.as_ref(),
    )?;
    for t in resp.responses {
        for p in t.partitions {
            check(
                p.error_code,
                &format!("{}-{}", t.topic_name.as_str(), p.partition_index),
                p.error_message.as_ref(),
            )?;
        }
    }
    Ok(())
}

pub fn describe(
    global: &Global,
    client: &mut Client,
    coordinator: Node,
    name: &str,
    described: ShareDescribed,
) -> anyhow::Result<()> {
    let offsets = share_offsets(client, coordinator, name)?;
    let ends = if offsets.is_empty() {
        Default::default()
    } else {
        let topics: Vec<String> = {
            let mut t: Vec<String> = offsets.keys().map(|(t, _)| t.clone()).collect();
            t.dedup();
            t
        };
        client.metadata(Some(&topics))?;
        let wanted: Vec<(String, i32, i64)> = offsets
            .keys()
            .map(|(t, p)| (t.clone(), *p, LATEST))
            .collect();
        client.list_offsets(&wanted)?
    };
    let rows: Vec<_> = offsets
        .iter()
        .map(|((t, p), (start, acquired, archived))| {
            let end = ends.get(&(t.clone(), *p)).map(|o| o.0);
            let lag = end.map(|e| (e - start).max(0));
            (t.clone(), *p, *start, end, lag, *acquired, *archived)
        })
        .collect();
    let value = json!({
        "group": name,
        "type": "share",
        "state": described.state,
        "group_epoch": described.epoch,
        "members": described.members.iter().map(|m| json!({
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.host,
            "subscribed_topics": m.topics,
            "assignment": m.assignment.iter().map(|(t, p)| json!({"topic": t, "partition": p})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "offsets": rows.iter().map(|(t, p, start, end, lag, acquired, archived)| json!({
            "topic": t,
            "partition": p,
            "start_offset": start,
            "log_end_offset": end,
            "lag": lag,
            "acquired": acquired,
            "archived": archived,
        })).collect::<Vec<_>>(),
        "total_lag": rows.iter().filter_map(|r| r.4).sum::<i64>(),
    });
    emit(global.format, &value, || {
        let mut out = format!(
            "share group {name}  state {}  epoch {}  members {}\n\n",
            described.state,
            described.epoch,
            described.members.len()
        );
        out.push_str(&super::group::members_table(
            described
                .members
                .iter()
                .map(|m| (&m.member_id, &m.client_id, &m.host, &m.assignment[..])),
        ));
        let mut t = Table::new(&[
            "TOPIC",
            "PARTITION",
            "START-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "ACQUIRED",
            "ARCHIVED",
        ]);
        let show = |o: Option<i64>| o.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
        let show_u = |o: Option<u64>| o.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
        for (topic, p, start, end, lag, acquired, archived) in &rows {
            t.row(vec![
                topic.clone(),
                p.to_string(),
                start.to_string(),
                show(*end),
                show(*lag),
                show_u(*acquired),
                show_u(*archived),
            ]);
        }
        out + &t.render()
    });
    Ok(())
}
