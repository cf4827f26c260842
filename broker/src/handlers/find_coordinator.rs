//! FindCoordinator: which broker coordinates a group (key type 0) or a transactional id
//! (key type 1). On a single node that is this broker, for every group: the one that leads
//! the group's partition of `__consumer_offsets`, which is created here on first use as Kafka
//! does. v4+ batches keys (`coordinator_keys`) and answers one entry per key. A transactional
//! id's coordinator leads its partition of `__transaction_state`, likewise created on first
//! use. ACLs: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or transactional id
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType};

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

pub fn handle(ctx: &Ctx<'_>, req: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let mut resp = FindCoordinatorResponse::default();
    if ctx.version >= 4 {
        resp.coordinators = req
            .coordinator_keys
            .iter()
            .map(|key| coordinator(ctx, key, req.key_type))
            .collect();
        return resp;
    }
    let c = coordinator(ctx, &req.key, req.key_type);
    resp.error_code = c.error_code;
    if ctx.version >= 1 {
        resp.error_message = c.error_message;
    }
    resp.node_id = c.node_id;
    resp.host = c.host;
    resp.port = c.port;
    resp
}

fn coordinator(ctx: &Ctx<'_>, key: &StrBytes, key_type: i8) -> Coordinator {
    let mut c = Coordinator::default();
    c.key = key.clone();
    let found = match key_type {
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
        KEY_TYPE_GROUP => ctx
            .broker
            .groups
            .find_coordinator(ctx.broker, key.as_str())
            .map_err(|e| (e.response_error(), e.to_string())),
        KEY_TYPE_TRANSACTION => ctx
            .broker
            .txn
            .find_coordinator(ctx.broker, key.as_str())
            .map_err(|e| (e.response_error(), e.to_string())),
        other => Err((
            ResponseError::InvalidRequest,
            format!("unknown coordinator key type {other}"),
        )),
    };
    let listener = ctx.broker.config.advertised_listeners().into_iter().next();
    match (found, listener) {
        (Ok(()), Some(l)) => {
            c.node_id = BrokerId(ctx.broker.node_id);
            c.host = StrBytes::from_string(l.host);
            c.port = l.port as i32;
            c.error_message = None;
        }
        (Ok(()), None) => no_coordinator(
            &mut c,
            ResponseError::CoordinatorNotAvailable,
            "no advertised listener".into(),
        ),
        (Err((e, message)), _) => no_coordinator(&mut c, e, message),
    }
    c
}

fn no_coordinator(c: &mut Coordinator, e: ResponseError, message: String) {
    c.error_code = e.code();
    c.error_message = Some(StrBytes::from_string(message));
    c.node_id = BrokerId(-1);
    c.host = StrBytes::default();
    c.port = -1;
}
