//! ConsumerGroupDescribe (KIP-848): each consumer group's state, group and assignment epochs,
//! assignor and members (epoch, client, subscription, current and target assignment, and from
//! v1 the member type, 1 for the consumer protocol). A group id that is not a consumer group
//! here is GROUP_ID_NOT_FOUND ("Group g is not a consumer group." when another kind of group has
//! it, "Group g not found." otherwise), as Kafka answers; the empty id is INVALID_GROUP_ID.
//! ACLs: DESCRIBE on each group; `authorized_operations` (when asked for) from the authorizer.

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::consumer::reconcile::Partitions;
use crate::group::modern::consumer_settings;

/// Kafka's member types: a consumer-protocol member, and a classic member in a consumer group.
const MEMBER_TYPE_CONSUMER: i8 = 1;
const MEMBER_TYPE_CLASSIC: i8 = 0;

fn assignment(ctx: &Ctx<'_>, partitions: &Partitions) -> Assignment {
    let mut a = Assignment::default();
    a.topic_partitions = partitions
        .iter()
        .filter_map(|(id, ps)| {
            let name = super::ctx::topic_name_by_id(ctx.node(), id)?;
            let mut tp = TopicPartitions::default();
            tp.topic_id = *id;
            tp.topic_name = TopicName(StrBytes::from_string(name));
            tp.partitions = ps.iter().copied().collect();
            Some(tp)
        })
        .collect();
    a
}

pub fn handle(ctx: &Ctx<'_>, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse {
    let mut resp = ConsumerGroupDescribeResponse::default();
    let enabled = crate::group::modern::consumer_protocol_enabled(ctx.node());
    for id in &req.group_ids {
        let group_id = id.as_str();
        let mut d = DescribedGroup::default();
        d.group_id = id.clone();
        d.authorized_operations = i32::MIN;
        let refuse = |d: &mut DescribedGroup, e: ResponseError, m: Option<String>| {
            d.error_code = e.code();
            d.error_message = m.map(StrBytes::from_string);
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
        let settings = consumer_settings(ctx.node(), group_id);
        let found = ctx.groups().with_consumer_group(group_id, |g| {
            d.group_state = StrBytes::from_static_str(g.state().as_str());
            d.group_epoch = g.group_epoch();
            d.assignment_epoch = g.assignment_epoch();
            d.assignor_name = StrBytes::from_static_str(g.assignor(&settings).name());
            d.members = g
                .members()
                .map(|m| {
                    let mut out = Member::default();
                    out.member_id = StrBytes::from_string(m.member_id.clone());
                    out.instance_id = m.instance_id.clone().map(StrBytes::from_string);
                    out.rack_id = m.rack_id.clone().map(StrBytes::from_string);
                    out.member_epoch = m.current.member_epoch;
                    out.client_id = StrBytes::from_string(m.client_id.clone());
                    out.client_host = StrBytes::from_string(m.client_host.clone());
                    out.subscribed_topic_names = m
                        .subscribed_names
                        .iter()
                        .map(|t| TopicName(StrBytes::from_string(t.clone())))
                        .collect();
                    // "" for a member without one, as Kafka 4.4 answers.
                    out.subscribed_topic_regex = Some(StrBytes::from_string(
                        m.subscribed_regex.clone().unwrap_or_default(),
                    ));
                    out.assignment = assignment(ctx, &m.current.assigned);
                    out.target_assignment =
                        assignment(ctx, g.target_of(&m.member_id).unwrap_or(&Partitions::new()));
                    out.member_type = match m.uses_classic_protocol() {
                        true => MEMBER_TYPE_CLASSIC,
                        false => MEMBER_TYPE_CONSUMER,
                    };
                    out
                })
                .collect();
        });
        if found.is_none() {
            let other = ctx.groups().exists(group_id) || ctx.shares().has_group(group_id);
            let message = if other {
                format!("Group {group_id} is not a consumer group.")
            } else {
                format!("Group {group_id} not found.")
            };
            refuse(&mut d, ResponseError::GroupIdNotFound, Some(message));
        }
        resp.groups.push(d);
    }
    resp
}
