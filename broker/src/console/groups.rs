//! Consumer groups, their consumers and their lag (REST v3 `KafkaConsumerGroup`,
//! `KafkaConsumer`, `KafkaConsumerLag`, `KafkaConsumerGroupLagSummary`): ListGroups on every
//! broker, then at the group's coordinator ConsumerGroupDescribe (KIP-848 groups) or
//! DescribeGroups (classic), OffsetFetch, and ListOffsets for the log end offsets. The
//! authorizer filters ListGroups and refuses the rest as it would for any client.

use std::collections::BTreeMap;

use axum::response::Response;
use kafka_protocol::messages::ListGroupsRequest;
use serde_json::{json, Value};

use super::{list_of, ApiError, Req};
use crate::cli::client::{check, Client, Node, LATEST};
use crate::cli::group::{describe_consumer_group, describe_group, offset_fetch, Described, Member};
use crate::cli::share_group::describe_share;

/// `GET /v3/clusters/{id}/consumer-groups`: the groups every broker coordinates, by id.
pub async fn list(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let meta = client.metadata(Some(&[]))?;
        let mut nodes: Vec<Node> = meta.brokers.iter().map(|b| Node::Id(b.node_id.0)).collect();
        if nodes.is_empty() {
            nodes.push(Node::Any);
        }
        let mut groups = BTreeMap::new();
        for node in nodes {
            let (version, resp) = client.call(node, |_| ListGroupsRequest::default())?;
            check(resp.error_code, "ListGroups", None)?;
            for g in resp.groups {
                let state = (version >= 4).then(|| g.group_state.to_string());
                let kind = match version >= 5 {
                    true => g.group_type.to_ascii_uppercase(),
                    false => String::new(),
                };
                let id = g.group_id.to_string();
                groups.insert(id, (g.protocol_type.to_string(), state, kind));
            }
        }
        let data = groups
            .iter()
            .map(|(id, (protocol_type, state, kind))| {
                json!({
                    "kind": "KafkaConsumerGroup",
                    "metadata": r.metadata(&["consumer-groups", id], &format!("/consumer-group={id}")),
                    "cluster_id": r.cluster_id(),
                    "consumer_group_id": id,
                    "is_simple": protocol_type.is_empty(),
                    "partition_assignor": Value::Null,
                    "state": state,
                    "type": kind,
                    "protocol_type": protocol_type,
                    "consumers": r.related(&["consumer-groups", id, "consumers"]),
                    "lag_summary": r.related(&["consumer-groups", id, "lag-summary"]),
                })
            })
            .collect();
        Ok(list_of("KafkaConsumerGroupList", r.url(&["consumer-groups"]), None, data))
    })
    .await
}

/// The group's coordinator and description; 404 for a group that does not exist (Kafka
/// describes it as `Dead` with no members and nothing committed). A KIP-848 consumer group
/// (ConsumerGroupDescribe) is of type CONSUMER, a KIP-932 share group (ShareGroupDescribe,
/// its members' assignments as the assignment) SHARE, any other CLASSIC.
fn described(
    client: &mut Client,
    group: &str,
) -> Result<(Node, Described, &'static str), ApiError> {
    let coordinator = client.group_coordinator(group)?;
    let (d, kind) = if let Some(d) = describe_consumer_group(client, coordinator, group) {
        (d, "CONSUMER")
    } else if let Some(s) = describe_share(client, coordinator, group)? {
        let members = s
            .members
            .into_iter()
            .map(|m| Member {
                member_id: m.member_id,
                group_instance_id: None,
                client_id: m.client_id,
                host: m.host,
                assignment: m.assignment,
                epoch: None,
                target: Vec::new(),
            })
            .collect();
        let d = Described {
            state: s.state,
            protocol_type: "share".into(),
            protocol: String::new(),
            members,
            epochs: Some((s.epoch, s.epoch)),
        };
        (d, "SHARE")
    } else {
        (describe_group(client, coordinator, group)?, "CLASSIC")
    };
    if d.state == "Dead" && d.members.is_empty() {
        return Err(ApiError::not_found(format!(
            "consumer group '{group}' does not exist"
        )));
    }
    Ok((coordinator, d, kind))
}

/// `GET /v3/clusters/{id}/consumer-groups/{group}`.
pub async fn get_one(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let group = r.param("group");
        let (coordinator, d, kind) = described(client, group)?;
        let coordinator = match coordinator {
            Node::Id(id) => Some(r.related(&["brokers", &id.to_string()])),
            Node::Any => None,
        };
        Ok(json!({
            "kind": "KafkaConsumerGroup",
            "metadata": r.metadata(&["consumer-groups", group], &format!("/consumer-group={group}")),
            "cluster_id": r.cluster_id(),
            "consumer_group_id": group,
            "is_simple": d.protocol_type.is_empty(),
            "partition_assignor": d.protocol,
            "state": d.state,
            "type": kind,
            "protocol_type": d.protocol_type,
            "coordinator": coordinator,
            "consumers": r.related(&["consumer-groups", group, "consumers"]),
            "lag_summary": r.related(&["consumer-groups", group, "lag-summary"]),
        }))
    })
    .await
}

/// `GET /v3/clusters/{id}/consumer-groups/{group}/consumers`.
pub async fn consumers(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let group = r.param("group");
        let (_, d, _) = described(client, group)?;
        let data = d
            .members
            .iter()
            .map(|m| {
                let id = m.member_id.as_str();
                json!({
                    "kind": "KafkaConsumer",
                    "metadata": r.metadata(&["consumer-groups", group, "consumers", id], &format!("/consumer-group={group}/consumer={id}")),
                    "cluster_id": r.cluster_id(),
                    "consumer_group_id": group,
                    "consumer_id": id,
                    "instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "host": m.host,
                    "assignments": r.related(&["consumer-groups", group, "consumers", id, "assignments"]),
                    "assigned_partitions": m.assignment.iter().map(|(t, p)| json!({"topic_name": t, "partition_id": p})).collect::<Vec<_>>(),
                })
            })
            .collect();
        Ok(list_of(
            "KafkaConsumerList",
            r.url(&["consumer-groups", group, "consumers"]),
            None,
            data,
        ))
    })
    .await
}

/// One partition's lag in a group.
struct Lag {
    topic: String,
    partition: i32,
    current_offset: i64,
    log_end_offset: i64,
    /// Member id, instance id and client id of the consumer it is assigned to.
    consumer: Option<(String, Option<String>, String)>,
}

impl Lag {
    fn lag(&self) -> i64 {
        (self.log_end_offset - self.current_offset).max(0)
    }
}

/// The lag of every partition the group committed, in (topic, partition) order.
fn lags_of(client: &mut Client, group: &str) -> Result<Vec<Lag>, ApiError> {
    let (coordinator, d, kind) = described(client, group)?;
    if kind == "SHARE" {
        // Share groups keep a start offset per partition (DescribeShareGroupOffsets), not a
        // committed position: not shown here yet.
        return Err(ApiError::bad_request(format!(
            "'{group}' is a share group: its lag is not served by this API yet"
        )));
    }
    let committed = offset_fetch(client, coordinator, group, None)?;
    let mut owner = BTreeMap::new();
    for m in &d.members {
        for tp in &m.assignment {
            let who = (
                m.member_id.clone(),
                m.group_instance_id.clone(),
                m.client_id.clone(),
            );
            owner.insert(tp.clone(), who);
        }
    }
    let mut topics: Vec<String> = committed.keys().map(|(t, _)| t.clone()).collect();
    topics.dedup();
    if topics.is_empty() {
        return Ok(Vec::new());
    }
    client.metadata(Some(&topics))?;
    let wanted: Vec<_> = committed
        .keys()
        .map(|(t, p)| (t.clone(), *p, LATEST))
        .collect();
    let ends = client.list_offsets(&wanted)?;
    Ok(committed
        .iter()
        .map(|((t, p), c)| Lag {
            topic: t.clone(),
            partition: *p,
            current_offset: *c,
            log_end_offset: ends.get(&(t.clone(), *p)).map_or(*c, |o| o.0),
            consumer: owner.get(&(t.clone(), *p)).cloned(),
        })
        .collect())
}

/// `GET /v3/clusters/{id}/consumer-groups/{group}/lags`.
pub async fn lags(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let group = r.param("group");
        let data = lags_of(client, group)?
            .iter()
            .map(|l| {
                let p = l.partition.to_string();
                let (consumer_id, instance_id, client_id) = l.consumer.clone().unzip3();
                json!({
                    "kind": "KafkaConsumerLag",
                    "metadata": r.metadata(&["consumer-groups", group, "lags", &l.topic, "partitions", &p], &format!("/consumer-group={group}/lag={}/partition={p}", l.topic)),
                    "cluster_id": r.cluster_id(),
                    "consumer_group_id": group,
                    "topic_name": l.topic,
                    "partition_id": l.partition,
                    "current_offset": l.current_offset,
                    "log_end_offset": l.log_end_offset,
                    "lag": l.lag(),
                    "consumer_id": consumer_id,
                    "instance_id": instance_id.flatten(),
                    "client_id": client_id,
                })
            })
            .collect();
        Ok(list_of("KafkaConsumerLagList", r.url(&["consumer-groups", group, "lags"]), None, data))
    })
    .await
}

/// `GET /v3/clusters/{id}/consumer-groups/{group}/lag-summary`: the largest lag (the first
/// partition with it) and the total.
pub async fn lag_summary(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let group = r.param("group");
        let lags = lags_of(client, group)?;
        let total: i64 = lags.iter().map(Lag::lag).sum();
        let max = lags.iter().fold(None::<&Lag>, |best, l| match best {
            Some(b) if b.lag() >= l.lag() => Some(b),
            _ => Some(l),
        });
        let (consumer_id, instance_id, client_id) =
            max.and_then(|l| l.consumer.clone()).unzip3();
        Ok(json!({
            "kind": "KafkaConsumerGroupLagSummary",
            "metadata": r.metadata(&["consumer-groups", group, "lag-summary"], &format!("/consumer-group={group}/lag-summary")),
            "cluster_id": r.cluster_id(),
            "consumer_group_id": group,
            "max_lag_consumer_id": consumer_id,
            "max_lag_instance_id": instance_id.flatten(),
            "max_lag_client_id": client_id,
            "max_lag_topic_name": max.map(|l| l.topic.clone()),
            "max_lag_partition_id": max.map(|l| l.partition),
            "max_lag": max.map_or(0, Lag::lag),
            "total_lag": total,
            "max_lag_consumer": consumer_id.as_ref().map(|c| r.related(&["consumer-groups", group, "consumers", c])),
            "max_lag_partition": max.map(|l| r.related(&["topics", &l.topic, "partitions", &l.partition.to_string()])),
        }))
    })
    .await
}

/// `Option<(a, b, c)>` as three options.
trait Unzip3<A, B, C> {
    fn unzip3(self) -> (Option<A>, Option<B>, Option<C>);
}

impl<A, B, C> Unzip3<A, B, C> for Option<(A, B, C)> {
    fn unzip3(self) -> (Option<A>, Option<B>, Option<C>) {
        match self {
            Some((a, b, c)) => (Some(a), Some(b), Some(c)),
            None => (None, None, None),
        }
    }
}
