//! DescribeTopicPartitions (KIP-966): the partitions of some or all topics, paged. Kafka 4's
//! admin client describes topics with it. Topics come sorted by name; a response holds at most
//! `response_partition_limit` partitions (and never more than
//! `max.request.partition.size.limit`), and `next_cursor` names the first topic and partition
//! the next page starts at, exactly as Kafka's metadata cache pages them: a topic cut short
//! sets the cursor inside it; a page that ends with a topic's last partition points at the next
//! topic's partition 0; a limit below 1 counts as 1. The cursor's topic must be among the named
//! topics and its partition not negative (else every topic is answered INVALID_REQUEST).
//! ACLs: DESCRIBE on a topic; a named topic without it is TOPIC_AUTHORIZATION_FAILED, the
//! all-topics listing leaves it out, and `topic_authorized_operations` comes from the authorizer.

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::cluster_view::{ClusterView, TopicView};
use crate::topics::is_internal_topic;

pub fn handle(
    ctx: &Ctx<'_>,
    req: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let mut resp = DescribeTopicPartitionsResponse::default();
    let all = req.topics.is_empty();
    let cursor_topic = req
        .cursor
        .as_ref()
        .map(|c| c.topic_name.to_string())
        .unwrap_or_default();
    let view = ClusterView::for_listener(ctx.node(), &ctx.conn.listener.name);
    let mut names: Vec<String> = if all {
        view.topics().iter().map(|t| t.name().to_string()).collect()
    } else {
        req.topics.iter().map(|t| t.name.to_string()).collect()
    };
    names.retain(|n| *n >= cursor_topic);
    names.sort();
    names.dedup();
    // Kafka refuses the whole request (each topic named back with INVALID_REQUEST) when the
    // cursor's topic is not among the named ones or its partition is negative.
    let cursor_topic_unnamed =
        !all && req.cursor.is_some() && names.binary_search(&cursor_topic).is_err();
    let cursor_partition_negative = req.cursor.as_ref().is_some_and(|c| c.partition_index < 0);
    if cursor_topic_unnamed || cursor_partition_negative {
        for t in &req.topics {
            let mut rt = DescribeTopicPartitionsResponseTopic::default();
            rt.error_code = ResponseError::InvalidRequest.code();
            rt.name = Some(t.name.clone());
            resp.topics.push(rt);
        }
        return resp;
    }
    // Named topics the caller may not describe are answered after the page, outside the
    // partition limit, without their id; the all-topics listing leaves them out.
    let mut unauthorized = Vec::new();
    names.retain(|n| {
        let allowed = ctx.authorize(AclOperation::Describe, ResourceType::Topic, n);
        if !allowed && !all {
            unauthorized.push(n.clone());
        }
        allowed
    });

    // As Kafka, a limit below 1 is taken as 1, so that a paging client always moves on.
    let limit = ctx.node().config.int("max.request.partition.size.limit");
    let mut remaining = req.response_partition_limit.min(limit).max(1);
    for name in names {
        if remaining == 0 {
            resp.next_cursor = Some(cursor(&name, 0));
            break;
        }
        let Some(topic) = view.topic(&name) else {
            // Listing every topic skips one deleted meanwhile; a named one gets its error
            // (and, as in Kafka, the caller's operations on it).
            if !all {
                let mut rt = DescribeTopicPartitionsResponseTopic::default();
                rt.error_code = if samsa_storage::is_valid_topic_name(&name) {
                    ResponseError::UnknownTopicOrPartition.code()
                } else {
                    ResponseError::InvalidTopicException.code()
                };
                rt.is_internal = is_internal_topic(&name);
                rt.topic_authorized_operations =
                    ctx.authorized_operations(ResourceType::Topic, &name);
                rt.name = Some(TopicName(StrBytes::from_string(name)));
                resp.topics.push(rt);
            }
            continue;
        };
        let first = match &req.cursor {
            Some(c) if c.topic_name.as_str() == name => c.partition_index,
            _ => 0,
        };
        let count = topic.partition_count();
        let end = count.min(first.saturating_add(remaining)).max(first);
        resp.topics.push(describe(ctx, &view, &topic, first..end));
        if end < count {
            resp.next_cursor = Some(cursor(&name, end));
            break;
        }
        remaining -= end - first;
    }
    for name in unauthorized {
        let mut rt = DescribeTopicPartitionsResponseTopic::default();
        rt.error_code = ResponseError::TopicAuthorizationFailed.code();
        rt.name = Some(TopicName(StrBytes::from_string(name)));
        resp.topics.push(rt);
    }
    resp
}

fn cursor(topic: &str, partition_index: i32) -> Cursor {
    let mut c = Cursor::default();
    c.topic_name = TopicName(StrBytes::from_string(topic.to_string()));
    c.partition_index = partition_index;
    c
}

fn describe(
    ctx: &Ctx<'_>,
    view: &ClusterView<'_>,
    topic: &TopicView,
    partitions: std::ops::Range<i32>,
) -> DescribeTopicPartitionsResponseTopic {
    let mut rt = DescribeTopicPartitionsResponseTopic::default();
    rt.name = Some(TopicName(StrBytes::from_string(topic.name().to_string())));
    rt.topic_id = topic.id();
    rt.is_internal = topic.is_internal();
    rt.topic_authorized_operations = ctx.authorized_operations(ResourceType::Topic, topic.name());
    let ids = |v: &[i32]| v.iter().map(|&b| BrokerId(b)).collect::<Vec<_>>();
    for index in partitions {
        let Some(p) = view.partition(topic, index) else {
            continue;
        };
        let mut rp = DescribeTopicPartitionsResponsePartition::default();
        rp.partition_index = index;
        match p.leader {
            Some(l) => rp.leader_id = BrokerId(l),
            None => {
                rp.error_code = ResponseError::LeaderNotAvailable.code();
                rp.leader_id = BrokerId(-1);
            }
        }
        rp.leader_epoch = p.leader_epoch;
        rp.replica_nodes = ids(&p.replicas);
        rp.isr_nodes = ids(&p.isr);
        rp.offline_replicas = ids(&p.offline);
        rp.eligible_leader_replicas = Some(ids(&p.elr));
        rp.last_known_elr = Some(ids(&p.last_known_elr));
        rt.partitions.push(rp);
    }
    rt
}
