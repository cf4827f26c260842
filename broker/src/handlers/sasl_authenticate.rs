//! SaslAuthenticate (v0-2, KIP-152): one token of the SASL exchange that SaslHandshake v1
//! started, answered with the server's token. Success sets the connection's principal
//! (`User:<name>`) for the ACLs. Wrong credentials are SASL_AUTHENTICATION_FAILED with Kafka's
//! message, answered after `connection.failed.authentication.delay.ms` (it slows guessing),
//! and the connection closes. `session_lifetime_ms` is `connections.max.reauth.ms` (KIP-368;
//! 0, the default, for a session as long as the connection).
//! Outside an exchange: ILLEGAL_SASL_STATE (and the connection closes if it is still
//! unauthenticated, as Kafka's authenticator does).

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::{AuthState, Ctx};
use crate::security::sasl::SaslError;

pub async fn handle(ctx: &Ctx<'_>, req: SaslAuthenticateRequest) -> SaslAuthenticateResponse {
    let mut resp = SaslAuthenticateResponse::default();
    let outcome = {
        let mut auth = ctx.conn.auth.borrow_mut();
        match &mut *auth {
            AuthState::Authenticating(exchange) => {
                let settings = ctx
                    .conn
                    .listener
                    .sasl
                    .as_ref()
                    .expect("an exchange runs on a SASL listener only");
                let image = ctx.controller().image();
                let step = exchange.step(&req.auth_bytes, settings, &|m, user| {
                    image.scram_credential(m.code(), user).cloned()
                });
                match &step {
                    Ok(s) if s.principal.is_some() => *auth = AuthState::Authenticated,
                    Ok(_) => {}
                    Err(_) => *auth = AuthState::Failed,
                }
                step
            }
            AuthState::Open | AuthState::Authenticated => {
                resp.error_code = ResponseError::IllegalSaslState.code();
                resp.error_message = Some(StrBytes::from_static_str(
                    "SaslAuthenticate outside a SASL exchange (no SASL on this listener, or \
                     already authenticated)",
                ));
                return resp;
            }
            other => {
                *other = AuthState::Failed;
                Err(SaslError::IllegalState(
                    "Unexpected SaslAuthenticate: no SaslHandshake v1 came before it".into(),
                ))
            }
        }
    };
    // Re-authentication (KIP-368) must prove the same principal.
    let previous = ctx.conn.reauthenticating.borrow().clone();
    let outcome = match (outcome, previous) {
        (Ok(step), Some(previous)) if step.principal.as_ref().is_some_and(|p| *p != previous) => {
            *ctx.conn.auth.borrow_mut() = AuthState::Failed;
            Err(SaslError::AuthenticationFailed(format!(
                "Cannot change principals during re-authentication from {previous} to {}",
                step.principal.unwrap_or_default()
            )))
        }
        (outcome, _) => outcome,
    };
    match outcome {
        Ok(step) => {
            resp.auth_bytes = Bytes::from(step.response);
            if let Some(principal) = step.principal {
                let reauth_ms = ctx.conn.listener.reauth_ms;
                let again = ctx.conn.reauthenticating.borrow_mut().take().is_some();
                tracing::debug!(peer = %ctx.conn.peer, listener = %ctx.conn.listener.name, %principal, reauthenticated = again, "authenticated");
                ctx.node().metrics.authentication(
                    &ctx.conn.listener.name,
                    if again { "reauthenticated" } else { "success" },
                );
                ctx.conn.set_principal(principal);
                // A session that ends needs a client that can re-authenticate (v1+); a v0
                // client's session lasts as long as its connection, as in Kafka.
                if reauth_ms > 0 && ctx.version >= 1 {
                    resp.session_lifetime_ms = reauth_ms as i64;
                    ctx.conn.session_expires.set(Some(
                        std::time::Instant::now() + Duration::from_millis(reauth_ms),
                    ));
                }
            }
        }
        Err(e) => {
            let code = match e {
                SaslError::AuthenticationFailed(_) => ResponseError::SaslAuthenticationFailed,
                SaslError::IllegalState(_) => ResponseError::IllegalSaslState,
            };
            tracing::info!(peer = %ctx.conn.peer, listener = %ctx.conn.listener.name, "failed authentication: {}", e.message());
            ctx.node()
                .metrics
                .authentication(&ctx.conn.listener.name, "failure");
            failed_authentication_delay(ctx).await;
            resp.error_code = code.code();
            resp.error_message = Some(StrBytes::from_string(e.message().to_string()));
        }
    }
    resp
}

/// Kafka's `connection.failed.authentication.delay.ms`: a failed attempt is answered (and its
/// connection closed) only after this.
pub async fn failed_authentication_delay(ctx: &Ctx<'_>) {
    let ms = ctx
        .node()
        .config
        .long("connection.failed.authentication.delay.ms")
        .max(0) as u64;
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}
