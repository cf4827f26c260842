//! DescribeDelegationToken (KIP-48). Samsa issues no delegation tokens, so there are none to
//! describe. A broker answers as Apache Kafka 4.4 without a secret key does
//! (`KafkaApis.handleDescribeTokensRequest`): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED where it
//! refuses the requester (PLAINTEXT, one-way TLS: see
//! [`create_delegation_token`](super::create_delegation_token)), else
//! DELEGATION_TOKEN_AUTH_DISABLED, whatever owners are named. Kafka's controllers advertise the
//! API but have no handler for it and answer UNKNOWN_SERVER_ERROR, as a controller listener here
//! does.

use kafka_protocol::messages::{DescribeDelegationTokenRequest, DescribeDelegationTokenResponse};
use kafka_protocol::ResponseError;

use super::create_delegation_token::{Requester, TokenListener};
use super::ctx::Ctx;

pub fn handle(
    ctx: &Ctx<'_>,
    _req: DescribeDelegationTokenRequest,
) -> DescribeDelegationTokenResponse {
    let principal = ctx.conn.principal().clone();
    let requester = Requester {
        protocol: ctx.conn.listener.protocol,
        principal: &principal,
    };
    answer(requester, TokenListener::Broker)
}

pub fn answer(
    requester: Requester<'_>,
    listener: TokenListener,
) -> DescribeDelegationTokenResponse {
    let error = match listener {
        TokenListener::Controller { .. } => ResponseError::UnknownServerError,
        TokenListener::Broker if !requester.may_ask_for_tokens() => {
            ResponseError::DelegationTokenRequestNotAllowed
        }
        TokenListener::Broker => ResponseError::DelegationTokenAuthDisabled,
    };
    let mut r = DescribeDelegationTokenResponse::default();
    r.error_code = error.code();
    r
}
