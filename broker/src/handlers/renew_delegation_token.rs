//! RenewDelegationToken (KIP-48). Samsa issues no delegation tokens, so there is none to
//! renew: as Apache Kafka 4.4 without a secret key, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry
//! -1) where Kafka refuses the requester (PLAINTEXT, one-way TLS: see
//! [`create_delegation_token`](super::create_delegation_token)), else the active controller's
//! DELEGATION_TOKEN_AUTH_DISABLED (expiry 0), given by the broker itself as that answer is
//! fixed. On a controller listener, NOT_CONTROLLER from a controller that is not active.

use kafka_protocol::messages::{RenewDelegationTokenRequest, RenewDelegationTokenResponse};
use kafka_protocol::ResponseError;

use super::create_delegation_token::{Requester, TokenListener};
use super::ctx::Ctx;

pub fn handle(ctx: &Ctx<'_>, _req: RenewDelegationTokenRequest) -> RenewDelegationTokenResponse {
    let principal = ctx.conn.principal().clone();
    let requester = Requester {
        protocol: ctx.conn.listener.protocol,
        principal: &principal,
    };
    answer(requester, TokenListener::Broker)
}

pub fn answer(requester: Requester<'_>, listener: TokenListener) -> RenewDelegationTokenResponse {
    let (error, expiry) = outcome(requester, listener);
    let mut r = RenewDelegationTokenResponse::default();
    r.error_code = error.code();
    r.expiry_timestamp_ms = expiry;
    r
}

/// The error and expiry timestamp Kafka answers a renewal or an expiry with when it has no
/// tokens: its own refusal has expiry -1, the controller's (and NOT_CONTROLLER) the schema's 0.
pub(super) fn outcome(requester: Requester<'_>, listener: TokenListener) -> (ResponseError, i64) {
    if !requester.may_ask_for_tokens() {
        return (ResponseError::DelegationTokenRequestNotAllowed, -1);
    }
    match listener {
        TokenListener::Controller { active: false } => (ResponseError::NotController, 0),
        _ => (ResponseError::DelegationTokenAuthDisabled, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::ANONYMOUS;
    use crate::config::listeners::SecurityProtocol;

    #[test]
    fn refused_over_plaintext_and_disabled_for_an_authenticated_principal() {
        let over = |protocol, principal| Requester {
            protocol,
            principal,
        };
        let r = answer(
            over(SecurityProtocol::Plaintext, ANONYMOUS),
            TokenListener::Broker,
        );
        assert_eq!((r.error_code, r.expiry_timestamp_ms), (64, -1));
        let r = answer(
            over(SecurityProtocol::SaslSsl, "User:alice"),
            TokenListener::Broker,
        );
        assert_eq!((r.error_code, r.expiry_timestamp_ms), (61, 0));
        let r = answer(
            over(SecurityProtocol::SaslPlaintext, "User:alice"),
            TokenListener::Controller { active: false },
        );
        assert_eq!((r.error_code, r.expiry_timestamp_ms), (41, 0));
    }
}
