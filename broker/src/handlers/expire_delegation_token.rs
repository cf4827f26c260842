//! ExpireDelegationToken (KIP-48). Samsa issues no delegation tokens, so there is none to
//! expire: answered as RenewDelegationToken is (see
//! [`renew_delegation_token`](super::renew_delegation_token)), as Apache Kafka 4.4 without a
//! secret key answers both.

use kafka_protocol::messages::{ExpireDelegationTokenRequest, ExpireDelegationTokenResponse};

use super::create_delegation_token::{Requester, TokenListener};
use super::ctx::Ctx;

pub fn handle(ctx: &Ctx<'_>, _req: ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse {
    let principal = ctx.conn.principal().clone();
    let requester = Requester {
        protocol: ctx.conn.listener.protocol,
        principal: &principal,
    };
    answer(requester, TokenListener::Broker)
}

pub fn answer(requester: Requester<'_>, listener: TokenListener) -> ExpireDelegationTokenResponse {
    let (error, expiry) = super::renew_delegation_token::outcome(requester, listener);
    let mut r = ExpireDelegationTokenResponse::default();
    r.error_code = error.code();
    r.expiry_timestamp_ms = expiry;
    r
}
