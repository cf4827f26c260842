//! ExpireDelegationToken (KIP-48). Samsa issues no delegation tokens, so there is none to
//! expire: answered as RenewDelegationToken is (see
//! [`renew_delegation_token`](super::renew_delegation_token)), as Apache Kafka 4.4 without a
//! secret key answers both.

use kafka_protocol::messages::{ExpireDelegationTokenRequest, ExpireDelegationTokenResponse};

use super::ctx::Ctx;
use crate::controller::answers::delegation_tokens::{expire, Requester, TokenListener};

pub fn handle(ctx: &Ctx<'_>, _req: ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse {
    let principal = ctx.conn.principal().clone();
    let requester = Requester {
        protocol: ctx.conn.listener.protocol,
        principal: &principal,
    };
    expire(requester, TokenListener::Broker)
}
