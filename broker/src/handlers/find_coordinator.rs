//! FindCoordinator: which broker coordinates a group (key type 0) or a transactional id
//! (key type 1): the broker that leads the group's partition of `__consumer_offsets`, which is
//! created through the controller on first use as Kafka does. v4+ batches keys (`coordinator_keys`) and answers one entry per key. A transactional
//! id's coordinator leads its partition of `__transaction_state`, likewise created on first
//! use. Key type 2 (v6+, KIP-932) names a share-partition, `group:topicId:partition`; its share
//! coordinator leads the partition of `__share_group_state` that holds the share-partition's
//! state (a malformed key is INVALID_REQUEST with an empty message, as Kafka answers).
//! ACLs: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or transactional id
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); CLUSTER_ACTION on the cluster for a share key.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::cluster_view::ClusterView;
use crate::share::ShareKey;

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;
const KEY_TYPE_SHARE: i8 = 2;

/// A share coordinator key, `group:topicId:partition` (Kafka's `SharePartitionKey`): the group
/// is everything before the last two `:`-separated parts and may hold `:` itself.
pub fn parse_share_key(key: &str) -> Option<ShareKey> {
    // Java's `split(":")` drops trailing empty parts.
    let mut parts: Vec<&str> = key.split(':').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    if parts.len() < 3 {
        return None;
    }
    let partition = parts[parts.len() - 1].parse::<i32>().ok()?;
    let topic_id = crate::controller::quorum_state::parse_kafka_uuid(parts[parts.len() - 2])?;
    let group = parts[..parts.len() - 2].join(":");
    if group.trim().is_empty() {
        return None;
    }
    Some(ShareKey {
        group: group.into(),
        topic_id,
        partition,
    })
}

pub async fn handle(ctx: &Ctx<'_>, req: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let mut resp = FindCoordinatorResponse::default();
    if ctx.version >= 4 {
        for key in &req.coordinator_keys {
            resp.coordinators
                .push(coordinator(ctx, key, req.key_type).await);
        }
        return resp;
    }
    let c = coordinator(ctx, &req.key, req.key_type).await;
    resp.error_code = c.error_code;
    if ctx.version >= 1 {
        // Kafka's v1-3 answer names the error even when there is none (`Errors.NONE.message()`).
        resp.error_message = match c.error_code {
            0 => Some(StrBytes::from_static_str("NONE")),
            _ => c.error_message,
        };
    }
    resp.node_id = c.node_id;
    resp.host = c.host;
    resp.port = c.port;
    resp
}

async fn coordinator(ctx: &Ctx<'_>, key: &StrBytes, key_type: i8) -> Coordinator {
    let mut c = Coordinator::default();
    c.key = key.clone();
    let node = ctx.node();
    let wanted = match key_type {
        KEY_TYPE_GROUP if !ctx.authorize(AclOperation::Describe, ResourceType::Group, key) => {
            Err((
                ResponseError::GroupAuthorizationFailed,
                ctx.denied(AclOperation::Describe, ResourceType::Group, key),
            ))
        }
        KEY_TYPE_TRANSACTION
            if !ctx.authorize(AclOperation::Describe, ResourceType::TransactionalId, key) =>
        {
            Err((
                ResponseError::TransactionalIdAuthorizationFailed,
                ctx.denied(AclOperation::Describe, ResourceType::TransactionalId, key),
            ))
        }
        KEY_TYPE_GROUP => Ok((
            ctx.groups().offsets_topic_spec(),
            ctx.groups().partition_for(key),
        )),
        KEY_TYPE_TRANSACTION => Ok((ctx.txn().state_topic_spec(), ctx.txn().partition_for(key))),
        KEY_TYPE_SHARE if ctx.version < 6 => Err((ResponseError::InvalidRequest, String::new())),
        KEY_TYPE_SHARE
            if !ctx.authorize(
                AclOperation::ClusterAction,
                ResourceType::Cluster,
                CLUSTER_NAME,
            ) =>
        {
            Err((
                ResponseError::ClusterAuthorizationFailed,
                ctx.denied(
                    AclOperation::ClusterAction,
                    ResourceType::Cluster,
                    CLUSTER_NAME,
                ),
            ))
        }
        KEY_TYPE_SHARE => match parse_share_key(key) {
            None => Err((ResponseError::InvalidRequest, String::new())),
            Some(k) => {
                let spec = crate::share::state_store::topic_spec(node);
                let partitions = node
                    .topics
                    .get(&spec.name)
                    .map_or(spec.partitions, |t| t.partition_count);
                let index = crate::share::state_store::state_partition(&k, partitions);
                Ok((spec, index))
            }
        },
        other => Err((
            ResponseError::InvalidRequest,
            format!("unknown coordinator key type {other}"),
        )),
    };
    let (spec, index) = match wanted {
        Ok(w) => w,
        Err((e, message)) => {
            no_coordinator(&mut c, e, message);
            return c;
        }
    };
    if let Err(e) = crate::internal_topics::ensure(node, &spec).await {
        no_coordinator(&mut c, e, format!("{} is not available yet", spec.name));
        return c;
    }
    let view = ClusterView::for_listener(node, &ctx.conn.listener.name);
    let leader = view
        .topic(&spec.name)
        .and_then(|t| view.partition(&t, index))
        .and_then(|p| p.leader)
        .and_then(|l| view.node(l).cloned());
    let Some(coordinator) = leader else {
        no_coordinator(
            &mut c,
            ResponseError::CoordinatorNotAvailable,
            format!("partition {index} of {} has no live leader", spec.name),
        );
        return c;
    };
    // A group this broker has just become the coordinator of is answered once its partition
    // is loaded, so that the client's JoinGroup is not refused (bounded; it may retry).
    if coordinator.id == node.node_id && key_type == KEY_TYPE_GROUP {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while !ctx.groups().is_loaded(key) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    c.node_id = BrokerId(coordinator.id);
    c.host = StrBytes::from_string(coordinator.host);
    c.port = coordinator.port;
    // Kafka's batched answer (v4+) carries an empty message for a coordinator it found.
    c.error_message = Some(StrBytes::default());
    c
}

fn no_coordinator(c: &mut Coordinator, e: ResponseError, message: String) {
    c.error_code = e.code();
    c.error_message = Some(StrBytes::from_string(message));
    c.node_id = BrokerId(-1);
    c.host = StrBytes::default();
    c.port = -1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_keys_are_parsed_as_kafkas_share_partition_key() {
        let id = uuid::Uuid::from_u128(42);
        let encoded = crate::controller::quorum_state::kafka_uuid_string(&id);
        let k = parse_share_key(&format!("g:{encoded}:3")).unwrap();
        assert_eq!((&*k.group, k.topic_id, k.partition), ("g", id, 3));
        // The group may hold ':' itself: the last two parts are the topic and the partition.
        let k = parse_share_key(&format!("a:b:{encoded}:0")).unwrap();
        assert_eq!(&*k.group, "a:b");
        for bad in [
            String::new(),
            "g".to_string(),
            "g:nope:0".to_string(),
            format!("g:{encoded}:x"),
            format!(":{encoded}:0"),
            format!("g:{encoded}:"),
        ] {
            assert!(parse_share_key(&bad).is_none(), "{bad}");
        }
    }
}
