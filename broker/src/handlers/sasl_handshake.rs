//! SaslHandshake (v0-1): the client names the SASL mechanism it will authenticate with. On a
//! SASL listener waiting for it, an offered mechanism starts the exchange: from v1 its tokens
//! come in SaslAuthenticate requests, after v0 as raw frames (`net::connection`). An unknown
//! or disabled mechanism is UNSUPPORTED_SASL_MECHANISM with the enabled ones, and the
//! connection closes, as Kafka's `SaslServerAuthenticator` does. Anywhere else (a listener
//! without SASL, an authenticated connection: re-authentication, KIP-368, is off) the answer is
//! ILLEGAL_SASL_STATE and the connection stays. With `connections.max.reauth.ms` set, an
//! authenticated connection may start a new exchange (KIP-368 re-authentication, v1 only).

use kafka_protocol::messages::{SaslHandshakeRequest, SaslHandshakeResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::{AuthState, Ctx};
use crate::security::sasl::{Exchange, Mechanism};

pub fn handle(ctx: &Ctx<'_>, req: SaslHandshakeRequest) -> SaslHandshakeResponse {
    let mut resp = SaslHandshakeResponse::default();
    let Some(settings) = ctx.conn.listener.sasl.as_ref() else {
        resp.error_code = ResponseError::IllegalSaslState.code();
        return resp;
    };
    resp.mechanisms = settings
        .mechanism_names()
        .into_iter()
        .map(StrBytes::from_static_str)
        .collect();
    let mut auth = ctx.conn.auth.borrow_mut();
    let reauthentication = matches!(*auth, AuthState::Authenticated)
        && ctx.conn.listener.reauth_ms > 0
        && ctx.version >= 1;
    if !matches!(*auth, AuthState::AwaitingHandshake) && !reauthentication {
        resp.error_code = ResponseError::IllegalSaslState.code();
        return resp;
    }
    if reauthentication {
        *ctx.conn.reauthenticating.borrow_mut() = Some(ctx.conn.principal().clone());
    }
    match Mechanism::parse(&req.mechanism).filter(|m| settings.offers(*m)) {
        Some(m) => {
            let exchange = Exchange::new(m);
            *auth = if ctx.version == 0 {
                AuthState::RawTokens(exchange)
            } else {
                AuthState::Authenticating(exchange)
            };
        }
        None => {
            tracing::info!(peer = %ctx.conn.peer, listener = %ctx.conn.listener.name, mechanism = %req.mechanism.as_str(), "closing connection: SASL mechanism not enabled on this listener");
            resp.error_code = ResponseError::UnsupportedSaslMechanism.code();
            *auth = AuthState::Failed;
        }
    }
    resp
}
