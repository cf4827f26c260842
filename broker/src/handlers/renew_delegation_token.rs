//! RenewDelegationToken (KIP-48). Samsa issues no delegation tokens, so there is none to
//! renew: as Apache Kafka 4.4 without a secret key, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry
//! -1) where Kafka refuses the requester (PLAINTEXT, one-way TLS: see
//! [`create_delegation_token`](super::create_delegation_token)), else the active controller's
//! DELEGATION_TOKEN_AUTH_DISABLED (expiry 0), given by the broker itself as that answer is
//! fixed. On a controller listener, NOT_CONTROLLER from a controller that is not active.

use kafka_protocol::messages::{RenewDelegationTokenRequest, RenewDelegationTokenResponse};

use super::ctx::Ctx;
use crate::controller::answers::delegation_tokens::{renew, Requester, TokenListener};

pub fn handle(ctx: &Ctx<'_>, _req: RenewDelegationTokenRequest) -> RenewDelegationTokenResponse {
    let principal = ctx.conn.principal().clone();
    let requester = Requester {
        protocol: ctx.conn.listener.protocol,
        principal: &principal,
    };
    renew(requester, TokenListener::Broker)
}
