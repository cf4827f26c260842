//! StreamsGroupHeartbeat (KIP-1071, API key 88): a Kafka Streams instance's thread joins
//! (epoch 0, with the application's topology), shows it is alive, reports the tasks it owns
//! and their offsets, and learns its active, standby and warm-up tasks, or leaves (epoch -1,
//! or -2 for a static member that will come back). Served by the group's coordinator (the
//! leader of its `__consumer_offsets` partition) when `streams.version` is 1 or above (else
//! UNSUPPORTED_VERSION, as Kafka answers). The request is checked as Kafka's
//! `GroupCoordinatorService` checks it (INVALID_REQUEST and STREAMS_INVALID_TOPOLOGY with
//! Kafka's messages); the group itself is `samsa_streams_group::group`. Internal topics the
//! topology needs and the cluster lacks are created by the coordinator
//! (`group::streams_topics`). ACLs: READ on the group, DESCRIBE on the topology's topics.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::ResponseError;
use samsa_protocol::streams::{
    EndpointToPartitions, HeartbeatStatus, StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse, TaskIds, TopicPartitions,
};
use samsa_streams_group::group::{Endpoint, Heartbeat, HeartbeatError, LEAVE_STATIC_EPOCH};
use samsa_streams_group::{CopartitionGroup, Subtopology, TaskSet, Tasks, TopicInfo, Topology};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::streams_shell::StreamsFailure;

/// STREAMS_INVALID_TOPOLOGY.
const STREAMS_INVALID_TOPOLOGY: i16 = 130;

fn error(code: i16, message: Option<String>) -> StreamsGroupHeartbeatResponse {
    StreamsGroupHeartbeatResponse {
        error_code: code,
        error_message: message,
        ..Default::default()
    }
}

/// Kafka's checks before the group (`throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures`
/// then `throwIfStreamsGroupHeartbeatRequestIsInvalid`): the error code and message.
fn invalid(req: &StreamsGroupHeartbeatRequest) -> Option<(i16, String)> {
    let bad = |m: &str| Some((ResponseError::InvalidRequest.code(), m.to_string()));
    if let Some(t) = &req.topology {
        if t.subtopologies
            .iter()
            .any(|s| !s.source_topic_regex.is_empty())
        {
            return bad("Regular expressions for source topics are not supported yet.");
        }
    }
    if req.member_id.is_empty() {
        return bad("MemberId can't be empty.");
    }
    if req.group_id.is_empty() {
        return bad("GroupId can't be empty.");
    }
    if req.instance_id.as_ref().is_some_and(|i| i.is_empty()) {
        return bad("InstanceId can't be empty.");
    }
    if req.rack_id.as_ref().is_some_and(|r| r.is_empty()) {
        return bad("RackId can't be empty.");
    }
    // On a join a task list must be there and empty: null is refused too, as Kafka does.
    let non_empty = |t: &Option<Vec<TaskIds>>| t.as_ref().is_none_or(|t| !t.is_empty());
    if req.member_epoch == 0 {
        if req.rebalance_timeout_ms == -1 {
            return bad("RebalanceTimeoutMs must be provided in first request.");
        }
        if non_empty(&req.active_tasks) {
            return bad("ActiveTasks must be empty when (re-)joining.");
        }
        if non_empty(&req.standby_tasks) {
            return bad("StandbyTasks must be empty when (re-)joining.");
        }
        if non_empty(&req.warmup_tasks) {
            return bad("WarmupTasks must be empty when (re-)joining.");
        }
        let Some(topology) = &req.topology else {
            return bad("Topology must be non-null when (re-)joining.");
        };
        for s in &topology.subtopologies {
            for t in &s.state_changelog_topics {
                if t.partitions != 0 {
                    return Some((
                        STREAMS_INVALID_TOPOLOGY,
                        format!(
                            "Changelog topic {} must have an undefined partition count, but it is set to {}.",
                            t.name, t.partitions
                        ),
                    ));
                }
            }
        }
    } else if req.member_epoch == LEAVE_STATIC_EPOCH {
        if req.instance_id.is_none() {
            return bad("InstanceId can't be null.");
        }
    } else if req.member_epoch < LEAVE_STATIC_EPOCH {
        return bad(&format!(
            "MemberEpoch is {}, but must be greater than or equal to -2.",
            req.member_epoch
        ));
    }
    let some = [&req.active_tasks, &req.standby_tasks, &req.warmup_tasks]
        .iter()
        .filter(|t| t.is_some())
        .count();
    if some != 0 && some != 3 {
        return bad("If one task-type is non-null, all must be non-null.");
    }
    if req.member_epoch != 0 && req.topology.is_some() {
        return bad("Topology can only be provided when (re-)joining.");
    }
    None
}

fn task_set(ids: &[TaskIds]) -> TaskSet {
    let mut set = TaskSet::new();
    for t in ids {
        set.entry(t.subtopology_id.clone())
            .or_default()
            .extend(t.partitions.iter().copied());
    }
    set
}

fn task_ids(set: &TaskSet) -> Vec<TaskIds> {
    set.iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| TaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
        })
        .collect()
}

fn topic_info(t: &samsa_protocol::streams::TopicInfo) -> TopicInfo {
    TopicInfo {
        name: t.name.clone(),
        partitions: t.partitions,
        replication_factor: t.replication_factor,
        configs: t
            .topic_configs
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone()))
            .collect(),
    }
}

/// The request's topology in the group's terms.
pub fn topology(t: &samsa_protocol::streams::Topology) -> Topology {
    Topology {
        epoch: t.epoch,
        subtopologies: t
            .subtopologies
            .iter()
            .map(|s| Subtopology {
                id: s.subtopology_id.clone(),
                source_topics: s.source_topics.clone(),
                source_topic_regex: s.source_topic_regex.clone(),
                state_changelog_topics: s.state_changelog_topics.iter().map(topic_info).collect(),
                repartition_sink_topics: s.repartition_sink_topics.clone(),
                repartition_source_topics: s
                    .repartition_source_topics
                    .iter()
                    .map(topic_info)
                    .collect(),
                copartition_groups: s
                    .copartition_groups
                    .iter()
                    .map(|g| CopartitionGroup {
                        source_topics: g.source_topics.clone(),
                        source_topic_regex: g.source_topic_regex.clone(),
                        repartition_source_topics: g.repartition_source_topics.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn offsets(
    list: &Option<Vec<samsa_protocol::streams::TaskOffset>>,
) -> Option<Vec<(String, i32, i64)>> {
    list.as_ref().map(|l| {
        l.iter()
            .map(|o| (o.subtopology_id.clone(), o.partition, o.offset))
            .collect()
    })
}

pub async fn handle(
    ctx: &Ctx<'_>,
    req: StreamsGroupHeartbeatRequest,
) -> StreamsGroupHeartbeatResponse {
    let node = ctx.node();
    if !crate::group::streams_shell::streams_protocol_enabled(node) {
        return error(ResponseError::UnsupportedVersion.code(), None);
    }
    let group_id = req.group_id.as_str();
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, group_id) {
        return error(ResponseError::GroupAuthorizationFailed.code(), None);
    }
    if let Some(t) = &req.topology {
        let mut names = BTreeSet::new();
        for s in &t.subtopologies {
            names.extend(s.source_topics.iter().cloned());
            names.extend(s.repartition_source_topics.iter().map(|t| t.name.clone()));
            names.extend(s.state_changelog_topics.iter().map(|t| t.name.clone()));
        }
        let unauthorized: Vec<String> = names
            .into_iter()
            .filter(|n| !ctx.authorize(AclOperation::Describe, ResourceType::Topic, n))
            .collect();
        if !unauthorized.is_empty() {
            return error(
                ResponseError::TopicAuthorizationFailed.code(),
                Some(format!("Unauthorized topics: {}", unauthorized.join(", "))),
            );
        }
    }
    if let Some((code, m)) = invalid(&req) {
        return error(code, Some(m));
    }
    let owned = req.active_tasks.as_ref().map(|a| Tasks {
        active: task_set(a),
        standby: task_set(req.standby_tasks.as_deref().unwrap_or_default()),
        warmup: task_set(req.warmup_tasks.as_deref().unwrap_or_default()),
    });
    let hb = Heartbeat {
        member_id: req.member_id.clone(),
        member_epoch: req.member_epoch,
        endpoint_information_epoch: req.endpoint_information_epoch,
        instance_id: req.instance_id.clone(),
        rack_id: req.rack_id.clone(),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        topology: req.topology.as_ref().map(topology),
        owned,
        process_id: req.process_id.clone(),
        user_endpoint: req.user_endpoint.as_ref().map(|e| Endpoint {
            host: e.host.clone(),
            port: e.port,
        }),
        client_tags: req.client_tags.as_ref().map(|tags| {
            tags.iter()
                .map(|kv| (kv.key.clone(), kv.value.clone()))
                .collect::<BTreeMap<_, _>>()
        }),
        task_offsets: offsets(&req.task_offsets),
        task_end_offsets: offsets(&req.task_end_offsets),
        shutdown_application: req.shutdown_application,
        client_id: ctx
            .header
            .client_id
            .as_ref()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        client_host: format!("/{}", ctx.conn.peer.ip()),
    };
    let joining = req.member_epoch == 0;
    let leaving = req.member_epoch < 0;
    let reply = match ctx.groups().streams_heartbeat(node, group_id, hb).await {
        Ok(r) => r,
        Err(StreamsFailure::Coordinator(e)) => return error(e.response_error().code(), None),
        Err(StreamsFailure::GroupIdNotFound(m)) => {
            return error(ResponseError::GroupIdNotFound.code(), Some(m))
        }
        Err(StreamsFailure::Group(e)) => {
            let code = match &e {
                HeartbeatError::UnknownMemberId(_) => ResponseError::UnknownMemberId.code(),
                HeartbeatError::FencedMemberEpoch(_) => ResponseError::FencedMemberEpoch.code(),
                HeartbeatError::UnreleasedInstanceId(_) => {
                    ResponseError::UnreleasedInstanceId.code()
                }
                HeartbeatError::FencedInstanceId(_) => ResponseError::FencedInstanceId.code(),
                HeartbeatError::GroupMaxSizeReached(_) => ResponseError::GroupMaxSizeReached.code(),
                HeartbeatError::InvalidRequest(_) => ResponseError::InvalidRequest.code(),
                HeartbeatError::GroupIdNotFound(_) => ResponseError::GroupIdNotFound.code(),
                HeartbeatError::InvalidTopology(t) => t.error_code(),
            };
            return error(code, Some(e.to_string()));
        }
    };
    if joining {
        tracing::debug!(group = group_id, member = %reply.member_id, epoch = reply.member_epoch, "streams group member joined");
    }
    if leaving {
        // Kafka answers a leave with the member and its epoch only.
        return StreamsGroupHeartbeatResponse {
            member_id: reply.member_id,
            member_epoch: reply.member_epoch,
            status: Some(Vec::new()),
            ..Default::default()
        };
    }
    let lag = reply.acceptable_recovery_lag;
    StreamsGroupHeartbeatResponse {
        member_id: reply.member_id,
        member_epoch: reply.member_epoch,
        heartbeat_interval_ms: reply.heartbeat_interval_ms,
        acceptable_recovery_lag_legacy: lag,
        acceptable_recovery_lag: lag as i64,
        task_offset_interval_ms: reply.task_offset_interval_ms,
        status: Some(
            reply
                .status
                .iter()
                .map(|s| HeartbeatStatus {
                    status_code: s.status.code(),
                    status_detail: s.detail.clone(),
                })
                .collect(),
        ),
        active_tasks: reply.tasks.as_ref().map(|t| task_ids(&t.active)),
        standby_tasks: reply.tasks.as_ref().map(|t| task_ids(&t.standby)),
        warmup_tasks: reply.tasks.as_ref().map(|t| task_ids(&t.warmup)),
        endpoint_information_epoch: reply.endpoint_information_epoch,
        partitions_by_user_endpoint: reply.partitions_by_user_endpoint.map(|list| {
            list.into_iter()
                .map(|e| EndpointToPartitions {
                    user_endpoint: samsa_protocol::streams::Endpoint {
                        host: e.endpoint.host,
                        port: e.endpoint.port,
                    },
                    active_partitions: topic_partitions(e.active),
                    standby_partitions: topic_partitions(e.standby),
                })
                .collect()
        }),
        ..Default::default()
    }
}

fn topic_partitions(list: Vec<(String, Vec<i32>)>) -> Vec<TopicPartitions> {
    list.into_iter()
        .map(|(topic, partitions)| TopicPartitions { topic, partitions })
        .collect()
}
