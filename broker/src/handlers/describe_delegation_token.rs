//! DescribeDelegationToken (KIP-48). Samsa issues no delegation tokens, so there are none to
//! describe. A broker answers as Apache Kafka 4.4 without a secret key does
//! (`KafkaApis.handleDescribeTokensRequest`): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED where it
//! refuses the requester (PLAINTEXT, one-way TLS: see
//! [`create_delegation_token`](super::create_delegation_token)), else
//! DELEGATION_TOKEN_AUTH_DISABLED, whatever owners are named. Kafka's controllers advertise the
//! API but have no handler for it and answer UNKNOWN_SERVER_ERROR, as a controller listener here
//! does.

use kafka_protocol::messages::{DescribeDelegationTokenRequest, DescribeDelegationTokenResponse};

use super::ctx::Ctx;
use crate::controller::answers::delegation_tokens::{describe, Requester, TokenListener};

pub fn handle(
    ctx: &Ctx<'_>,
    _req: DescribeDelegationTokenRequest,
) -> DescribeDelegationTokenResponse {
    let principal = ctx.conn.principal().clone();
    let requester = Requester {
        protocol: ctx.conn.listener.protocol,
        principal: &principal,
    };
    describe(requester, TokenListener::Broker)
}
