//! The delegation-token APIs' answers (KIP-48, without tokens), which the client listeners and
//! the controller listener both give: here, below both, so the controller needs no handler.

use kafka_protocol::messages::{
    CreateDelegationTokenRequest, CreateDelegationTokenResponse, DescribeDelegationTokenResponse,
    ExpireDelegationTokenResponse, RenewDelegationTokenResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::acl::ANONYMOUS;
use crate::config::listeners::SecurityProtocol;

/// Where a token request is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenListener {
    /// A client listener (Kafka's `KafkaApis`).
    Broker,
    /// A controller listener (Kafka's `ControllerApis`); `active` when this node is the
    /// active controller.
    Controller { active: bool },
}

/// Who asks for a token: a principal (`Type:name`) on a listener of `protocol`.
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    pub protocol: SecurityProtocol,
    pub principal: &'a str,
}

impl Requester<'_> {
    /// Kafka's `allowTokenRequests`: not over PLAINTEXT, not over one-way TLS (SSL without a
    /// client certificate, whose principal is ANONYMOUS). Kafka also refuses a principal that
    /// authenticated with a delegation token; Samsa authenticates none that way.
    pub fn may_ask_for_tokens(&self) -> bool {
        match self.protocol {
            SecurityProtocol::Plaintext => false,
            SecurityProtocol::Ssl => self.principal != ANONYMOUS,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => true,
        }
    }
}

/// A principal `Type:name` as Kafka's `KafkaPrincipal` holds it: its type and its name.
pub fn principal_parts(principal: &str) -> (&str, &str) {
    principal.split_once(':').unwrap_or(("", principal))
}

/// CreateDelegationToken's answer to `req` at `version` from `requester` on `listener`;
/// `may_create_for` says whether the requester holds CREATE_TOKENS on the USER resource named
/// (`Type:name`).
pub fn create(
    req: &CreateDelegationTokenRequest,
    version: i16,
    requester: Requester<'_>,
    listener: TokenListener,
    may_create_for: impl Fn(&str) -> bool,
) -> CreateDelegationTokenResponse {
    let asker = principal_parts(requester.principal);
    let anonymous = principal_parts(ANONYMOUS);
    let owner = match (&req.owner_principal_type, &req.owner_principal_name) {
        (_, None) => asker,
        (_, Some(name)) if name.is_empty() => asker,
        (Some(kind), Some(name)) => (kind.as_str(), name.as_str()),
        // Kafka's KafkaPrincipal refuses a null type: the request fails as a whole.
        (None, Some(_)) => {
            return refusal(
                version,
                ResponseError::UnknownServerError,
                anonymous,
                anonymous,
            )
        }
    };
    if !requester.may_ask_for_tokens() {
        return refusal(
            version,
            ResponseError::DelegationTokenRequestNotAllowed,
            owner,
            asker,
        );
    }
    if owner != asker && !may_create_for(&format!("{}:{}", owner.0, owner.1)) {
        return refusal(
            version,
            ResponseError::DelegationTokenAuthorizationFailed,
            owner,
            asker,
        );
    }
    match listener {
        TokenListener::Broker
            if req
                .renewers
                .iter()
                .any(|r| r.principal_type.as_str() != "User") =>
        {
            refusal(version, ResponseError::InvalidPrincipalType, owner, asker)
        }
        TokenListener::Controller { active: false } => {
            refusal(version, ResponseError::NotController, anonymous, anonymous)
        }
        // The controller's answer: no timestamps at all, not the broker's -1.
        _ => response(
            version,
            ResponseError::DelegationTokenAuthDisabled,
            owner,
            asker,
            0,
        ),
    }
}

/// A refusal before any token is made: timestamps -1 (Kafka's `prepareResponse` without a
/// token).
fn refusal(
    version: i16,
    error: ResponseError,
    owner: (&str, &str),
    requester: (&str, &str),
) -> CreateDelegationTokenResponse {
    response(version, error, owner, requester, -1)
}

fn response(
    version: i16,
    error: ResponseError,
    owner: (&str, &str),
    requester: (&str, &str),
    timestamps: i64,
) -> CreateDelegationTokenResponse {
    let s = |v: &str| StrBytes::from_string(v.to_string());
    let mut r = CreateDelegationTokenResponse::default();
    r.error_code = error.code();
    r.principal_type = s(owner.0);
    r.principal_name = s(owner.1);
    if version >= 3 {
        r.token_requester_principal_type = s(requester.0);
        r.token_requester_principal_name = s(requester.1);
    }
    r.issue_timestamp_ms = timestamps;
    r.expiry_timestamp_ms = timestamps;
    r.max_timestamp_ms = timestamps;
    r
}

/// RenewDelegationToken's answer.
pub fn renew(requester: Requester<'_>, listener: TokenListener) -> RenewDelegationTokenResponse {
    let (error, expiry) = outcome(requester, listener);
    let mut r = RenewDelegationTokenResponse::default();
    r.error_code = error.code();
    r.expiry_timestamp_ms = expiry;
    r
}

/// The error and expiry timestamp Kafka answers a renewal or an expiry with when it has no
/// tokens: its own refusal has expiry -1, the controller's (and NOT_CONTROLLER) the schema's 0.
fn outcome(requester: Requester<'_>, listener: TokenListener) -> (ResponseError, i64) {
    if !requester.may_ask_for_tokens() {
        return (ResponseError::DelegationTokenRequestNotAllowed, -1);
    }
    match listener {
        TokenListener::Controller { active: false } => (ResponseError::NotController, 0),
        _ => (ResponseError::DelegationTokenAuthDisabled, 0),
    }
}

/// ExpireDelegationToken's answer, as [`renew`]'s.
pub fn expire(requester: Requester<'_>, listener: TokenListener) -> ExpireDelegationTokenResponse {
    let (error, expiry) = outcome(requester, listener);
    let mut r = ExpireDelegationTokenResponse::default();
    r.error_code = error.code();
    r.expiry_timestamp_ms = expiry;
    r
}

/// DescribeDelegationToken's answer.
pub fn describe(
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

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::create_delegation_token_request::CreatableRenewers;

    use super::*;

    fn s(v: &str) -> StrBytes {
        StrBytes::from_string(v.to_string())
    }

    fn over(protocol: SecurityProtocol, principal: &str) -> Requester<'_> {
        Requester {
            protocol,
            principal,
        }
    }

    fn owned_by(kind: Option<&str>, name: Option<&str>) -> CreateDelegationTokenRequest {
        let mut r = CreateDelegationTokenRequest::default();
        r.owner_principal_type = kind.map(s);
        r.owner_principal_name = name.map(s);
        r.max_lifetime_ms = -1;
        r
    }

    fn renewed_by(kind: &str) -> CreateDelegationTokenRequest {
        let mut r = owned_by(None, None);
        let mut renewer = CreatableRenewers::default();
        renewer.principal_type = s(kind);
        renewer.principal_name = s("carol");
        r.renewers.push(renewer);
        r
    }

    const ALICE: &str = "User:alice";

    #[test]
    fn only_authenticated_principals_may_ask() {
        let refused = |p: SecurityProtocol, who: &str| !over(p, who).may_ask_for_tokens();
        assert!(refused(SecurityProtocol::Plaintext, ANONYMOUS));
        assert!(refused(SecurityProtocol::Plaintext, ALICE));
        assert!(refused(SecurityProtocol::Ssl, ANONYMOUS));
        assert!(!refused(SecurityProtocol::Ssl, "User:CN=alice"));
        assert!(!refused(SecurityProtocol::SaslPlaintext, ALICE));
        assert!(!refused(SecurityProtocol::SaslSsl, ALICE));
    }

    #[test]
    fn plaintext_is_refused_with_the_owner_and_requester_and_timestamps_of_minus_one() {
        let r = create(
            &owned_by(Some("User"), Some("bob")),
            3,
            over(SecurityProtocol::Plaintext, ANONYMOUS),
            TokenListener::Broker,
            |_| true,
        );
        assert_eq!(r.error_code, 64);
        assert_eq!(
            (r.principal_type.as_str(), r.principal_name.as_str()),
            ("User", "bob")
        );
        assert_eq!(r.token_requester_principal_name.as_str(), "ANONYMOUS");
        assert_eq!(
            (
                r.issue_timestamp_ms,
                r.expiry_timestamp_ms,
                r.max_timestamp_ms
            ),
            (-1, -1, -1)
        );
        assert_eq!(r.token_id.as_str(), "");
        assert!(r.hmac.is_empty());
    }

    #[test]
    fn below_v3_the_requester_is_not_in_the_answer() {
        let r = create(
            &owned_by(None, None),
            2,
            over(SecurityProtocol::Plaintext, ANONYMOUS),
            TokenListener::Broker,
            |_| true,
        );
        assert_eq!(r.principal_name.as_str(), "ANONYMOUS");
        assert_eq!(r.token_requester_principal_type.as_str(), "");
    }

    #[test]
    fn an_authenticated_requester_gets_the_controllers_refusal_with_timestamps_of_zero() {
        let sasl = over(SecurityProtocol::SaslPlaintext, ALICE);
        let r = create(
            &owned_by(None, None),
            3,
            sasl,
            TokenListener::Broker,
            |_| false,
        );
        assert_eq!(r.error_code, 61);
        assert_eq!(r.principal_name.as_str(), "alice");
        assert_eq!(r.token_requester_principal_name.as_str(), "alice");
        assert_eq!(
            (
                r.issue_timestamp_ms,
                r.expiry_timestamp_ms,
                r.max_timestamp_ms
            ),
            (0, 0, 0)
        );
        // An empty owner name is the requester, who needs no CREATE_TOKENS for itself.
        let r = create(
            &owned_by(Some("User"), Some("")),
            3,
            sasl,
            TokenListener::Broker,
            |_| false,
        );
        assert_eq!((r.error_code, r.principal_name.as_str()), (61, "alice"));
    }

    #[test]
    fn another_owner_needs_create_tokens_on_that_user() {
        let sasl = over(SecurityProtocol::SaslPlaintext, ALICE);
        let bob = owned_by(Some("User"), Some("bob"));
        let asked = std::cell::RefCell::new(Vec::new());
        let r = create(&bob, 3, sasl, TokenListener::Broker, |who| {
            asked.borrow_mut().push(who.to_string());
            false
        });
        assert_eq!(asked.into_inner(), vec!["User:bob".to_string()]);
        assert_eq!((r.error_code, r.issue_timestamp_ms), (65, -1));
        assert_eq!(r.principal_name.as_str(), "bob");
        let r = create(&bob, 3, sasl, TokenListener::Broker, |_| true);
        assert_eq!((r.error_code, r.principal_name.as_str()), (61, "bob"));
    }

    #[test]
    fn renewers_must_be_users_on_a_broker_listener_only() {
        let sasl = over(SecurityProtocol::SaslPlaintext, ALICE);
        let group = renewed_by("Group");
        let r = create(&group, 1, sasl, TokenListener::Broker, |_| true);
        assert_eq!((r.error_code, r.expiry_timestamp_ms), (67, -1));
        let active = TokenListener::Controller { active: true };
        assert_eq!(create(&group, 1, sasl, active, |_| true).error_code, 61);
        let r = create(&renewed_by("User"), 1, sasl, TokenListener::Broker, |_| {
            true
        });
        assert_eq!(r.error_code, 61);
    }

    #[test]
    fn an_owner_name_without_a_type_fails_whole() {
        let r = create(
            &owned_by(None, Some("bob")),
            3,
            over(SecurityProtocol::SaslPlaintext, ALICE),
            TokenListener::Broker,
            |_| true,
        );
        assert_eq!(r.error_code, -1);
        assert_eq!(r.principal_name.as_str(), "ANONYMOUS");
        assert_eq!(r.token_requester_principal_name.as_str(), "ANONYMOUS");
    }

    #[test]
    fn a_controller_that_is_not_active_says_so() {
        let sasl = over(SecurityProtocol::SaslPlaintext, ALICE);
        let passive = TokenListener::Controller { active: false };
        let r = create(&owned_by(None, None), 3, sasl, passive, |_| true);
        assert_eq!((r.error_code, r.principal_name.as_str()), (41, "ANONYMOUS"));
        // The checks before the controller still come first.
        let plaintext = over(SecurityProtocol::Plaintext, ANONYMOUS);
        assert_eq!(
            create(&owned_by(None, None), 3, plaintext, passive, |_| true).error_code,
            64
        );
    }

    #[test]
    fn refused_over_plaintext_and_disabled_for_an_authenticated_principal() {
        let over = |protocol, principal| Requester {
            protocol,
            principal,
        };
        let r = renew(
            over(SecurityProtocol::Plaintext, ANONYMOUS),
            TokenListener::Broker,
        );
        assert_eq!((r.error_code, r.expiry_timestamp_ms), (64, -1));
        let r = renew(
            over(SecurityProtocol::SaslSsl, "User:alice"),
            TokenListener::Broker,
        );
        assert_eq!((r.error_code, r.expiry_timestamp_ms), (61, 0));
        let r = renew(
            over(SecurityProtocol::SaslPlaintext, "User:alice"),
            TokenListener::Controller { active: false },
        );
        assert_eq!((r.error_code, r.expiry_timestamp_ms), (41, 0));
    }
}
