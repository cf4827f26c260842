//! CreateDelegationToken (KIP-48). Samsa issues no delegation tokens: it refuses
//! `delegation.token.secret.key` at start, and its SASL/SCRAM refuses `tokenauth`. It answers
//! the four token APIs as Apache Kafka 4.4 does without a secret key, so that a client gets
//! Kafka's DelegationTokenDisabledException (or its refusal of the connection) and not
//! UnsupportedVersionException.
//!
//! Kafka's checks, in its order (`KafkaApis.handleCreateTokenRequest`):
//! - the owner (v3) is the requester unless a name is given; a name without a type fails as
//!   Kafka's principal constructor does (UNKNOWN_SERVER_ERROR, both principals ANONYMOUS);
//! - DELEGATION_TOKEN_REQUEST_NOT_ALLOWED over PLAINTEXT, or over SSL without a client
//!   certificate (`allowTokenRequests`; a token-authenticated principal is refused too, and
//!   Samsa has none);
//! - DELEGATION_TOKEN_AUTHORIZATION_FAILED for an owner other than the requester without
//!   CREATE_TOKENS on that owner's USER resource;
//! - INVALID_PRINCIPAL_TYPE for a renewer whose type is not `User`;
//! - the rest goes to the active controller, which answers DELEGATION_TOKEN_AUTH_DISABLED with
//!   the owner and requester and no token (timestamps 0). That answer is fixed while Samsa has
//!   no tokens, so a broker gives it itself instead of forwarding.
//!
//! The broker's own refusals carry timestamps of -1. A controller listener answers the same
//! way without the renewer check (Kafka's `ControllerApis` leaves it to the controller, which
//! answers DELEGATION_TOKEN_AUTH_DISABLED first), and with NOT_CONTROLLER when this node is not
//! the active controller.

use kafka_protocol::messages::{CreateDelegationTokenRequest, CreateDelegationTokenResponse};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::controller::answers::delegation_tokens::{create, Requester, TokenListener};

pub fn handle(ctx: &Ctx<'_>, req: CreateDelegationTokenRequest) -> CreateDelegationTokenResponse {
    let principal = ctx.conn.principal().clone();
    let requester = Requester {
        protocol: ctx.conn.listener.protocol,
        principal: &principal,
    };
    create(
        &req,
        ctx.version,
        requester,
        TokenListener::Broker,
        |owner| ctx.authorize(AclOperation::CreateTokens, ResourceType::User, owner),
    )
}
