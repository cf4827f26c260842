//! Topics, partitions and topic configs (REST v3 `KafkaTopic`, `KafkaPartition`,
//! `KafkaTopicConfig`), from Metadata, ListOffsets and DescribeConfigs as the requester may
//! see them: Metadata lists only the topics the requester may describe.
//!
//! The topic list is paged in name order, [`PAGE_SIZE_DEFAULT`] a page (`page_size` up to
//! [`PAGE_SIZE_MAX`]); `metadata.next` links the next page by the last name of this one.
//! Partitions carry Samsa's extensions beside REST v3's links: `leader_id`, `replica_ids`,
//! `isr_ids`, `earliest_offset`, `latest_offset`.

use axum::response::Response;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::metadata_response::{
    MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::DescribeConfigsRequest;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use serde_json::{json, Value};

use super::{encode, list_of, ApiError, Req};
use crate::cli::client::{check, Client, Node, EARLIEST, LATEST};

/// Topics on a page unless `page_size` says otherwise.
pub const PAGE_SIZE_DEFAULT: usize = 100;
/// The largest `page_size`.
pub const PAGE_SIZE_MAX: usize = 1000;
/// DescribeConfigs' resource type of a topic.
const RESOURCE_TOPIC: i8 = 2;

/// Metadata of one topic; 404 when it does not exist or the requester may not see it
/// (Kafka answers both alike to a client that may not describe it).
pub fn topic_metadata(client: &mut Client, name: &str) -> Result<MetadataResponseTopic, ApiError> {
    let meta = client.metadata(Some(&[name.to_string()]))?;
    let t = meta
        .topics
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::not_found(format!("topic '{name}' does not exist")))?;
    check(t.error_code, &format!("topic '{name}'"), None)?;
    Ok(t)
}

fn topic_json(r: &Req, t: &MetadataResponseTopic) -> Value {
    let name = t.name.as_ref().map(|n| n.as_str()).unwrap_or("");
    let replication_factor = t.partitions.iter().map(|p| p.replica_nodes.len()).max();
    json!({
        "kind": "KafkaTopic",
        "metadata": r.metadata(&["topics", name], &format!("/topic={name}")),
        "cluster_id": r.cluster_id(),
        "topic_name": name,
        "is_internal": t.is_internal,
        "replication_factor": replication_factor.unwrap_or(0),
        "partitions_count": t.partitions.len(),
        "partitions": r.related(&["topics", name, "partitions"]),
        "configs": r.related(&["topics", name, "configs"]),
        "partition_reassignments": r.related(&["topics", name, "partitions", "-", "reassignment"]),
    })
}

/// `GET /v3/clusters/{id}/topics?page_size=N&page_token=NAME`.
pub async fn list(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&["page_size", "page_token"])?;
        let size = r.query::<usize>("page_size")?.unwrap_or(PAGE_SIZE_DEFAULT);
        if !(1..=PAGE_SIZE_MAX).contains(&size) {
            return Err(ApiError::bad_request(format!(
                "page_size={size} is outside 1..={PAGE_SIZE_MAX}"
            )));
        }
        let after = r.query::<String>("page_token")?;
        let meta = client.metadata(None)?;
        let mut topics: Vec<&MetadataResponseTopic> = meta
            .topics
            .iter()
            // A topic whose leaders are still being elected (LEADER_NOT_AVAILABLE) is listed;
            // one the requester may not describe never is.
            .filter(|t| t.error_code != ResponseError::TopicAuthorizationFailed.code())
            .filter(|t| match (&t.name, &after) {
                (Some(n), Some(a)) => n.as_str() > a.as_str(),
                (Some(_), None) => true,
                (None, _) => false,
            })
            .collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        let more = topics.len() > size;
        topics.truncate(size);
        let next = match (more, topics.last().and_then(|t| t.name.as_ref())) {
            (true, Some(last)) => Some(r.self_with(&format!(
                "page_size={size}&page_token={}",
                encode(last.as_str())
            ))),
            _ => None,
        };
        let query = match &after {
            Some(a) => format!("page_size={size}&page_token={}", encode(a)),
            None => String::new(),
        };
        let data = topics.iter().map(|t| topic_json(r, t)).collect();
        Ok(list_of("KafkaTopicList", r.self_with(&query), next, data))
    })
    .await
}

/// `GET /v3/clusters/{id}/topics/{topic}`.
pub async fn get_one(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let t = topic_metadata(client, r.param("topic"))?;
        Ok(topic_json(r, &t))
    })
    .await
}

/// The first and next offsets of partitions, by partition id.
fn offsets(
    client: &mut Client,
    topic: &str,
    partitions: &[i32],
) -> Result<Vec<(i32, i64, i64)>, ApiError> {
    let mut wanted = Vec::new();
    for p in partitions {
        wanted.push((topic.to_string(), *p, EARLIEST));
    }
    let earliest = client.list_offsets(&wanted)?;
    for w in wanted.iter_mut() {
        w.2 = LATEST;
    }
    let latest = client.list_offsets(&wanted)?;
    let key = |p: &i32| (topic.to_string(), *p);
    Ok(partitions
        .iter()
        .map(|p| {
            let e = earliest.get(&key(p)).map_or(-1, |o| o.0);
            let l = latest.get(&key(p)).map_or(-1, |o| o.0);
            (*p, e, l)
        })
        .collect())
}

fn partition_json(
    r: &Req,
    topic: &str,
    p: &MetadataResponsePartition,
    offsets: (i64, i64),
) -> Value {
    let id = p.partition_index.to_string();
    let leader = p.leader_id.0;
    json!({
        "kind": "KafkaPartition",
        "metadata": r.metadata(&["topics", topic, "partitions", &id], &format!("/topic={topic}/partition={id}")),
        "cluster_id": r.cluster_id(),
        "topic_name": topic,
        "partition_id": p.partition_index,
        "leader": (leader >= 0).then(|| r.related(&["topics", topic, "partitions", &id, "replicas", &leader.to_string()])),
        "replicas": r.related(&["topics", topic, "partitions", &id, "replicas"]),
        "reassignment": r.related(&["topics", topic, "partitions", &id, "reassignment"]),
        "leader_id": (leader >= 0).then_some(leader),
        "replica_ids": p.replica_nodes.iter().map(|b| b.0).collect::<Vec<_>>(),
        "isr_ids": p.isr_nodes.iter().map(|b| b.0).collect::<Vec<_>>(),
        "earliest_offset": offsets.0,
        "latest_offset": offsets.1,
    })
}

/// `GET /v3/clusters/{id}/topics/{topic}/partitions`.
pub async fn partitions(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let topic = r.param("topic");
        let mut t = topic_metadata(client, topic)?;
        t.partitions.sort_by_key(|p| p.partition_index);
        let ids: Vec<i32> = t.partitions.iter().map(|p| p.partition_index).collect();
        let offs = offsets(client, topic, &ids)?;
        let data = t
            .partitions
            .iter()
            .zip(offs)
            .map(|(p, (_, e, l))| partition_json(r, topic, p, (e, l)))
            .collect();
        Ok(list_of(
            "KafkaPartitionList",
            r.url(&["topics", topic, "partitions"]),
            None,
            data,
        ))
    })
    .await
}

/// The metadata of one partition; 404 when the topic or the partition does not exist.
pub fn partition_metadata(
    client: &mut Client,
    topic: &str,
    partition: i32,
) -> Result<MetadataResponsePartition, ApiError> {
    let t = topic_metadata(client, topic)?;
    let count = t.partitions.len();
    t.partitions
        .into_iter()
        .find(|p| p.partition_index == partition)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "topic '{topic}' has no partition {partition} (it has {count})"
            ))
        })
}

/// `GET /v3/clusters/{id}/topics/{topic}/partitions/{partition}`.
pub async fn partition(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let topic = r.param("topic");
        let id = r.int_param("partition")?;
        let p = partition_metadata(client, topic, id)?;
        let (_, e, l) = offsets(client, topic, &[id])?[0];
        Ok(partition_json(r, topic, &p, (e, l)))
    })
    .await
}

/// Kafka's name of a DescribeConfigs `config_source`.
fn source_name(source: i8) -> &'static str {
    match source {
        1 => "DYNAMIC_TOPIC_CONFIG",
        2 => "DYNAMIC_BROKER_CONFIG",
        3 => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        4 => "STATIC_BROKER_CONFIG",
        5 => "DEFAULT_CONFIG",
        6 => "DYNAMIC_BROKER_LOGGER_CONFIG",
        _ => "UNKNOWN",
    }
}

/// `GET /v3/clusters/{id}/topics/{topic}/configs`: every config of the topic with its source
/// and synonyms (DescribeConfigs, which the authorizer allows on DescribeConfigs of the topic).
pub async fn configs(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let topic = r.param("topic").to_string();
        // Metadata first: an unknown topic is a 404, as for the other topic resources.
        topic_metadata(client, &topic)?;
        let (_, resp) = client.call(Node::Any, |_| {
            let mut res = DescribeConfigsResource::default();
            res.resource_type = RESOURCE_TOPIC;
            res.resource_name = StrBytes::from_string(topic.clone());
            let mut req = DescribeConfigsRequest::default();
            req.resources = vec![res];
            req.include_synonyms = true;
            req
        })?;
        let mut data = Vec::new();
        for res in resp.results {
            check(res.error_code, &format!("topic '{topic}'"), res.error_message.as_ref())?;
            for c in res.configs {
                let name = c.name.as_str();
                data.push(json!({
                    "kind": "KafkaTopicConfig",
                    "metadata": r.metadata(&["topics", &topic, "configs", name], &format!("/topic={topic}/config={name}")),
                    "cluster_id": r.cluster_id(),
                    "topic_name": topic,
                    "name": name,
                    "value": c.value.as_ref().map(|v| v.as_str()),
                    "is_default": c.config_source == 5,
                    "is_read_only": c.read_only,
                    "is_sensitive": c.is_sensitive,
                    "source": source_name(c.config_source),
                    "synonyms": c.synonyms.iter().map(|s| json!({
                        "name": s.name.as_str(),
                        "value": s.value.as_ref().map(|v| v.as_str()),
                        "source": source_name(s.source),
                    })).collect::<Vec<_>>(),
                }));
            }
        }
        Ok(list_of(
            "KafkaTopicConfigList",
            r.url(&["topics", &topic, "configs"]),
            None,
            data,
        ))
    })
    .await
}
