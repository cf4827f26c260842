//! ShareGroupDescribe (KIP-932): each share group's state, epoch, assignor and members with
//! their subscriptions and assignments. A group id that is not a share group here is
//! GROUP_ID_NOT_FOUND (with a message saying whether it is a classic group), as Kafka answers;
//! the empty id is INVALID_GROUP_ID. ACLs: DESCRIBE on each group; `authorized_operations` (when
//! asked for) comes from the authorizer, as DescribeGroups computes it.

use kafka_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::share::ShareCoordinator;

pub fn handle(ctx: &Ctx<'_>, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse {
    let node = ctx.node();
    let mut resp = ShareGroupDescribeResponse::default();
    if !crate::share::enabled(&node.controller.image()) {
        // Kafka's getErrorResponse: each group with its id and the error, nothing else.
        for id in &req.group_ids {
            let mut d = DescribedGroup::default();
            d.group_id = id.clone();
            d.authorized_operations = i32::MIN;
            d.error_code = ResponseError::UnsupportedVersion.code();
            resp.groups.push(d);
        }
        return resp;
    }
    for id in &req.group_ids {
        let group_id = id.as_str();
        let mut d = DescribedGroup::default();
        d.group_id = id.clone();
        d.authorized_operations = i32::MIN;
        let refuse = |d: &mut DescribedGroup, e: ResponseError, m: Option<String>| {
            d.error_code = e.code();
            d.error_message = m.map(StrBytes::from_string);
        };
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
        if req.include_authorized_operations {
            d.authorized_operations = ctx.authorized_operations(ResourceType::Group, group_id);
        }
        if let Err(e) = ctx.groups().check_loaded(group_id) {
            refuse(&mut d, e.response_error(), Some(e.to_string()));
            resp.groups.push(d);
            continue;
        }
        let topic = |name: &str| ShareCoordinator::topic_meta(node, name);
        let found = ctx.shares().with_group(group_id, false, |g| {
            d.group_state = StrBytes::from_static_str(g.state());
            d.group_epoch = g.epoch();
            d.assignment_epoch = g.epoch();
            d.assignor_name = StrBytes::from_static_str("simple");
            d.members = g
                .members()
                .map(|m| {
                    let mut out = Member::default();
                    out.member_id = StrBytes::from_string(m.id.clone());
                    out.rack_id = m.rack_id.clone().map(StrBytes::from_string);
                    out.member_epoch = m.epoch;
                    out.client_id = StrBytes::from_string(m.client_id.clone());
                    out.client_host = StrBytes::from_string(m.client_host.clone());
                    out.subscribed_topic_names = m
                        .topics
                        .iter()
                        .map(|t| TopicName(StrBytes::from_string(t.clone())))
                        .collect();
                    let mut a = Assignment::default();
                    a.topic_partitions = g
                        .assignment(&m.id, &topic)
                        .into_iter()
                        .map(|(topic_id, partitions)| {
                            let mut tp = TopicPartitions::default();
                            tp.topic_id = topic_id;
                            tp.topic_name = TopicName(StrBytes::from_string(
                                node.topics
                                    .get_by_id(&topic_id)
                                    .map(|t| t.name.clone())
                                    .unwrap_or_default(),
                            ));
                            tp.partitions = partitions;
                            tp
                        })
                        .collect();
                    out.assignment = a;
                    out
                })
                .collect();
        });
        if found.is_none() {
            let m = if ctx.groups().exists(group_id) {
                format!("Group {group_id} is not a share group.")
            } else {
                format!("Group {group_id} not found.")
            };
            refuse(&mut d, ResponseError::GroupIdNotFound, Some(m));
        }
        resp.groups.push(d);
    }
    resp
}
