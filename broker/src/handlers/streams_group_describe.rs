//! StreamsGroupDescribe (KIP-1071, API key 89): each streams group's state, group and assignment
//! epochs, topology (as configured against the topics once nothing is missing, with the internal
//! topics' partition counts; as its members sent it before) and members (epochs, process, endpoint,
//! client tags, the task offsets they last reported, current and target tasks); v1 adds the
//! assignor's name and the topology description, which Samsa does not store (no description
//! plugin: NOT_STORED when asked for, as Kafka without one). A group id that is not a streams
//! group here is GROUP_ID_NOT_FOUND ("Group g is not a streams group." when another kind of
//! group has it, "Group g not found." otherwise), as Kafka answers. ACLs: DESCRIBE on
//! each group.

use kafka_protocol::ResponseError;
use samsa_protocol::streams::{
    description_status, Assignment, DescribedGroup, DescribedMember, DescribedSubtopology,
    DescribedTopology, KeyValue, StreamsGroupDescribeRequest, StreamsGroupDescribeResponse,
    TaskIds, TaskOffset,
};
use samsa_streams_group::topology::ConfiguredInternalTopic;
use samsa_streams_group::{TaskSet, Tasks, TopicInfo};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};

fn task_ids(set: &TaskSet) -> Vec<TaskIds> {
    set.iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| TaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
        })
        .collect()
}

fn assignment(t: &Tasks) -> Assignment {
    Assignment {
        active_tasks: task_ids(&t.active),
        standby_tasks: task_ids(&t.standby),
        warmup_tasks: task_ids(&t.warmup),
    }
}

fn topic_info(t: &TopicInfo) -> samsa_protocol::streams::TopicInfo {
    samsa_protocol::streams::TopicInfo {
        name: t.name.clone(),
        partitions: t.partitions,
        replication_factor: t.replication_factor,
        topic_configs: t
            .configs
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.clone(),
                value: v.clone(),
            })
            .collect(),
    }
}

fn task_offsets(m: &std::collections::BTreeMap<(String, i32), i64>) -> Vec<TaskOffset> {
    m.iter()
        .map(|((s, p), o)| TaskOffset {
            subtopology_id: s.clone(),
            partition: *p,
            offset: *o,
        })
        .collect()
}

/// GROUP_ID_NOT_FOUND's message for `group_id`: `other` when another kind of group has the id.
/// Kafka's describe says "Group g not found." (its heartbeat, "Streams group g not found.").
fn not_found_message(group_id: &str, other: bool) -> String {
    if other {
        format!("Group {group_id} is not a streams group.")
    } else {
        format!("Group {group_id} not found.")
    }
}

pub fn handle(ctx: &Ctx<'_>, req: StreamsGroupDescribeRequest) -> StreamsGroupDescribeResponse {
    let mut resp = StreamsGroupDescribeResponse::default();
    let enabled = crate::group::streams_shell::streams_protocol_enabled(ctx.node());
    for group_id in &req.group_ids {
        let mut d = DescribedGroup {
            group_id: group_id.clone(),
            authorized_operations: i32::MIN,
            topology_description_status: if req.include_topology_description {
                description_status::NOT_STORED
            } else {
                description_status::NOT_REQUESTED
            },
            ..Default::default()
        };
        let refuse = |d: &mut DescribedGroup, e: ResponseError, m: Option<String>| {
            d.error_code = e.code();
            d.error_message = m;
        };
        if !enabled {
            refuse(&mut d, ResponseError::UnsupportedVersion, None);
            resp.groups.push(d);
            continue;
        }
        if !ctx.authorize(AclOperation::Describe, ResourceType::Group, group_id) {
            refuse(&mut d, ResponseError::GroupAuthorizationFailed, None);
            resp.groups.push(d);
            continue;
        }
        if group_id.is_empty() {
            refuse(&mut d, ResponseError::InvalidGroupId, None);
            resp.groups.push(d);
            continue;
        }
        if let Err(e) = ctx.groups().check_loaded(group_id) {
            refuse(&mut d, e.response_error(), None);
            resp.groups.push(d);
            continue;
        }
        if req.include_authorized_operations {
            d.authorized_operations = ctx.authorized_operations(ResourceType::Group, group_id);
        }
        let found = ctx.groups().with_streams_group(group_id, |g| {
            d.group_state = g.state().as_str().to_string();
            d.group_epoch = g.group_epoch();
            d.assignment_epoch = g.assignment_epoch();
            d.assignor_name = Some("sticky".to_string());
            // A topology configured against the topics (nothing missing) is shown as configured,
            // with the partition counts it decided for the internal topics, as Kafka shows it.
            let configured = g
                .configured_topology()
                .filter(|c| c.is_ready())
                .and_then(|c| c.subtopologies.as_ref().map(|s| (c.epoch, s)));
            if let Some((epoch, subtopologies)) = configured {
                let internal = |m: &std::collections::BTreeMap<String, ConfiguredInternalTopic>| {
                    m.values()
                        .map(|t| samsa_protocol::streams::TopicInfo {
                            name: t.name.clone(),
                            partitions: t.partitions,
                            replication_factor: t.replication_factor,
                            topic_configs: t
                                .configs
                                .iter()
                                .map(|(k, v)| KeyValue {
                                    key: k.clone(),
                                    value: v.clone(),
                                })
                                .collect(),
                        })
                        .collect()
                };
                d.topology = Some(DescribedTopology {
                    epoch,
                    subtopologies: Some(
                        subtopologies
                            .iter()
                            .map(|(id, s)| DescribedSubtopology {
                                subtopology_id: id.clone(),
                                source_topics: s.source_topics.iter().cloned().collect(),
                                repartition_sink_topics: s
                                    .repartition_sink_topics
                                    .iter()
                                    .cloned()
                                    .collect(),
                                state_changelog_topics: internal(&s.state_changelog_topics),
                                repartition_source_topics: internal(&s.repartition_source_topics),
                            })
                            .collect(),
                    ),
                });
            } else {
                d.topology = g.topology().map(|t| {
                    let mut subtopologies: Vec<DescribedSubtopology> = t
                        .subtopologies
                        .iter()
                        .map(|s| DescribedSubtopology {
                            subtopology_id: s.id.clone(),
                            source_topics: s.source_topics.clone(),
                            repartition_sink_topics: s.repartition_sink_topics.clone(),
                            state_changelog_topics: s
                                .state_changelog_topics
                                .iter()
                                .map(topic_info)
                                .collect(),
                            repartition_source_topics: s
                                .repartition_source_topics
                                .iter()
                                .map(topic_info)
                                .collect(),
                        })
                        .collect();
                    subtopologies.sort_by(|a, b| a.subtopology_id.cmp(&b.subtopology_id));
                    DescribedTopology {
                        epoch: t.epoch,
                        subtopologies: Some(subtopologies),
                    }
                });
            }
            d.members = g
                .members()
                .map(|m| {
                    let offsets = g.task_offsets(&m.member_id);
                    DescribedMember {
                        member_id: m.member_id.clone(),
                        member_epoch: m.current.member_epoch,
                        instance_id: m.instance_id.clone(),
                        rack_id: m.rack_id.clone(),
                        client_id: m.client_id.clone(),
                        client_host: m.client_host.clone(),
                        topology_epoch: m.topology_epoch,
                        process_id: m.process_id.clone(),
                        user_endpoint: m.user_endpoint.as_ref().map(|e| {
                            samsa_protocol::streams::Endpoint {
                                host: e.host.clone(),
                                port: e.port,
                            }
                        }),
                        client_tags: m
                            .client_tags
                            .iter()
                            .map(|(k, v)| KeyValue {
                                key: k.clone(),
                                value: v.clone(),
                            })
                            .collect(),
                        task_offsets: offsets
                            .map(|o| task_offsets(&o.offsets))
                            .unwrap_or_default(),
                        task_end_offsets: offsets
                            .map(|o| task_offsets(&o.end_offsets))
                            .unwrap_or_default(),
                        assignment: assignment(&m.current.assigned.tasks()),
                        target_assignment: assignment(
                            g.target_of(&m.member_id).unwrap_or(&Tasks::default()),
                        ),
                        is_classic: false,
                    }
                })
                .collect();
        });
        if found.is_none() {
            let other = ctx.groups().exists(group_id)
                || ctx.groups().is_consumer_group(group_id)
                || ctx.shares().has_group(group_id);
            refuse(
                &mut d,
                ResponseError::GroupIdNotFound,
                Some(not_found_message(group_id, other)),
            );
        }
        resp.groups.push(d);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::not_found_message;

    #[test]
    fn not_found_messages_are_kafkas() {
        // kafka-streams-groups --describe of a deleted group prints Kafka 4.4's
        // "GroupIdNotFoundException: Group g not found."
        assert_eq!(not_found_message("g", false), "Group g not found.");
        assert_eq!(
            not_found_message("g", true),
            "Group g is not a streams group."
        );
    }
}
