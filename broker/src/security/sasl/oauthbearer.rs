//! SASL/OAUTHBEARER (RFC 7628, KIP-255) with Kafka's unsecured JWT validator, which is what a
//! Kafka broker runs when OAUTHBEARER is enabled without `sasl.server.callback.handler.class`:
//! a JWS with `"alg":"none"` and an empty signature, whose `exp` is in the future (within
//! `unsecuredValidatorAllowableClockSkewMs`), whose principal claim (`sub`, or
//! `unsecuredValidatorPrincipalClaimName`) names the user, and whose scope includes
//! `unsecuredValidatorRequiredScope` when that is set. For development only, as in Kafka: the
//! token proves nothing. Signed tokens against a JWKS (KIP-768) are not implemented; a listener
//! that configures a validator class is refused at start.
//!
//! Sans-IO: [`validate`] takes the client's initial response and the time.

use std::collections::BTreeMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine as _;

use super::SaslError;

/// The unsecured validator's options (the JAAS config's `unsecuredValidator*` options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredValidator {
    pub principal_claim: String,
    pub scope_claim: String,
    pub required_scope: Vec<String>,
    pub allowable_clock_skew_ms: i64,
}

impl Default for UnsecuredValidator {
    fn default() -> Self {
        UnsecuredValidator {
            principal_claim: "sub".into(),
            scope_claim: "scope".into(),
            required_scope: Vec::new(),
            allowable_clock_skew_ms: 0,
        }
    }
}

impl UnsecuredValidator {
    /// From the JAAS options of `OAuthBearerLoginModule`.
    pub fn from_options(options: &BTreeMap<String, String>) -> Result<UnsecuredValidator, String> {
        let mut v = UnsecuredValidator::default();
        if let Some(c) = options.get("unsecuredValidatorPrincipalClaimName") {
            v.principal_claim = c.trim().to_string();
        }
        if let Some(c) = options.get("unsecuredValidatorScopeClaimName") {
            v.scope_claim = c.trim().to_string();
        }
        if let Some(s) = options.get("unsecuredValidatorRequiredScope") {
            v.required_scope = s
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
        }
        if let Some(ms) = options.get("unsecuredValidatorAllowableClockSkewMs") {
            v.allowable_clock_skew_ms = ms
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|ms| *ms >= 0)
                .ok_or_else(|| {
                    format!("unsecuredValidatorAllowableClockSkewMs: '{ms}' is not a number of milliseconds")
                })?;
        }
        Ok(v)
    }
}

/// Validates the client's initial response (`n,,\x01auth=Bearer <token>\x01...\x01\x01`) at
/// `now_ms`; the principal's name.
pub fn validate(
    message: &[u8],
    validator: &UnsecuredValidator,
    now_ms: i64,
) -> Result<String, SaslError> {
    let text = std::str::from_utf8(message)
        .map_err(|_| invalid("the OAUTHBEARER message is not UTF-8"))?;
    // gs2-header "," then key=value pairs separated by 0x01, ending with two 0x01.
    let (gs2, rest) = text
        .split_once('\u{1}')
        .ok_or_else(|| invalid("the OAUTHBEARER message has no key/value pairs"))?;
    let mut gs2_parts = gs2.splitn(3, ',');
    if !matches!(gs2_parts.next(), Some("n" | "y")) {
        return Err(invalid(
            "the gs2 header is malformed or asks for channel binding",
        ));
    }
    let authzid = gs2_parts.next().unwrap_or_default();
    if !rest.ends_with("\u{1}\u{1}") && rest != "\u{1}" {
        return Err(invalid(
            "the key/value pairs do not end with two 0x01 bytes",
        ));
    }
    let mut token = None;
    for kv in rest.split('\u{1}').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| invalid("a key/value pair has no '='"))?;
        if k == "auth" {
            let bearer = v
                .strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
                .ok_or_else(|| invalid("auth is not a Bearer token"))?;
            token = Some(bearer.trim());
        }
        // Other keys are SASL extensions (KIP-342): accepted, unused.
    }
    let token = token.ok_or_else(|| invalid("no auth=Bearer token"))?;
    let principal = unsecured_jws_principal(token, validator, now_ms)?;
    if let Some(a) = authzid.strip_prefix("a=") {
        if a != principal {
            return Err(SaslError::AuthenticationFailed(format!(
                "Authentication failed: the authorization id {a} is not the token's principal"
            )));
        }
    }
    Ok(principal)
}

fn unsecured_jws_principal(
    token: &str,
    v: &UnsecuredValidator,
    now_ms: i64,
) -> Result<String, SaslError> {
    let parts: Vec<&str> = token.split('.').collect();
    let [header, payload, signature] = parts[..] else {
        return Err(invalid_token("not a JWS of three parts"));
    };
    if !signature.is_empty() {
        return Err(invalid_token(
            "a signed token: Samsa validates unsecured tokens (alg none) only",
        ));
    }
    let json =
        |part: &str, what: &str| -> Result<serde_json::Map<String, serde_json::Value>, SaslError> {
            let bytes = B64URL
                .decode(part.trim_end_matches('='))
                .map_err(|_| invalid_token(&format!("the {what} is not base64url")))?;
            match serde_json::from_slice(&bytes) {
                Ok(serde_json::Value::Object(m)) => Ok(m),
                _ => Err(invalid_token(&format!("the {what} is not a JSON object"))),
            }
        };
    let header = json(header, "header")?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("none") {
        return Err(invalid_token("the header's alg is not none"));
    }
    let claims = json(payload, "payload")?;
    let seconds = |name: &str| -> Result<Option<f64>, SaslError> {
        match claims.get(name) {
            None => Ok(None),
            Some(serde_json::Value::Number(n)) => Ok(n.as_f64()),
            Some(_) => Err(invalid_token(&format!("the {name} claim is not a number"))),
        }
    };
    let skew = v.allowable_clock_skew_ms as f64;
    let exp = seconds("exp")?.ok_or_else(|| invalid_token("no exp claim"))?;
    if exp * 1000.0 + skew <= now_ms as f64 {
        return Err(invalid_token("the token has expired"));
    }
    if let Some(iat) = seconds("iat")? {
        if iat * 1000.0 - skew > now_ms as f64 {
            return Err(invalid_token("the token was issued in the future (iat)"));
        }
    }
    if let Some(nbf) = seconds("nbf")? {
        if nbf * 1000.0 - skew > now_ms as f64 {
            return Err(invalid_token("the token is not valid yet (nbf)"));
        }
    }
    let principal = match claims.get(&v.principal_claim) {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        _ => {
            return Err(invalid_token(&format!(
                "no {} claim naming the principal",
                v.principal_claim
            )))
        }
    };
    if !v.required_scope.is_empty() {
        let scope: Vec<String> = match claims.get(&v.scope_claim) {
            Some(serde_json::Value::String(s)) => s.split(' ').map(str::to_string).collect(),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        if let Some(missing) = v.required_scope.iter().find(|s| !scope.contains(s)) {
            return Err(invalid_token(&format!(
                "the token's scope lacks the required {missing}"
            )));
        }
    }
    Ok(principal)
}

fn invalid(why: &str) -> SaslError {
    SaslError::AuthenticationFailed(format!(
        "Authentication failed: invalid OAUTHBEARER message: {why}"
    ))
}

fn invalid_token(why: &str) -> SaslError {
    SaslError::AuthenticationFailed(format!("Authentication failed: invalid_token: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(header: &str, claims: &str) -> String {
        format!("{}.{}.", B64URL.encode(header), B64URL.encode(claims))
    }

    fn message(token: &str) -> Vec<u8> {
        format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
    }

    const NOW_MS: i64 = 1_800_000_000_000;

    #[test]
    fn an_unsecured_token_names_its_subject() {
        let t = token(
            r#"{"alg":"none"}"#,
            r#"{"sub":"alice","exp":1800000100,"iat":1799999000}"#,
        );
        let v = UnsecuredValidator::default();
        assert_eq!(validate(&message(&t), &v, NOW_MS).unwrap(), "alice");
        // librdkafka's own unsecured tokens carry extensions and a scope array.
        let t = token(
            r#"{"alg":"none"}"#,
            r#"{"sub":"bob","exp":1800000100.5,"scope":["a","b"]}"#,
        );
        let m = format!("n,,\u{1}auth=Bearer {t}\u{1}traceId=123\u{1}\u{1}");
        let v = UnsecuredValidator {
            required_scope: vec!["b".into()],
            ..Default::default()
        };
        assert_eq!(validate(m.as_bytes(), &v, NOW_MS).unwrap(), "bob");
    }

    #[test]
    fn bad_tokens_are_refused_with_the_reason() {
        let v = UnsecuredValidator {
            required_scope: vec!["kafka".into()],
            ..Default::default()
        };
        let ok_claims = r#"{"sub":"alice","exp":1800000100,"scope":"kafka other"}"#;
        assert!(validate(&message(&token(r#"{"alg":"none"}"#, ok_claims)), &v, NOW_MS).is_ok());
        for (t, says) in [
            (token(r#"{"alg":"RS256"}"#, ok_claims), "alg is not none"),
            (
                format!("{}sig", token(r#"{"alg":"none"}"#, ok_claims)),
                "a signed token",
            ),
            (
                token(r#"{"alg":"none"}"#, r#"{"sub":"alice","exp":1799999999}"#),
                "expired",
            ),
            (token(r#"{"alg":"none"}"#, r#"{"sub":"alice"}"#), "no exp"),
            (
                token(r#"{"alg":"none"}"#, r#"{"exp":1800000100,"scope":"kafka"}"#),
                "no sub claim",
            ),
            (
                token(
                    r#"{"alg":"none"}"#,
                    r#"{"sub":"a","exp":1800000100,"scope":"other"}"#,
                ),
                "lacks the required kafka",
            ),
            (
                token(
                    r#"{"alg":"none"}"#,
                    r#"{"sub":"a","exp":1800000100,"iat":1800000050,"scope":"kafka"}"#,
                ),
                "in the future",
            ),
            (
                token(r#"{"alg":"none"}"#, r#"{"sub":"a","exp":"soon"}"#),
                "not a number",
            ),
            ("a.b".to_string(), "three parts"),
            ("!!.??.".to_string(), "base64url"),
        ] {
            match validate(&message(&t), &v, NOW_MS) {
                Err(SaslError::AuthenticationFailed(m)) => assert!(m.contains(says), "{says}: {m}"),
                other => panic!("{says}: {other:?}"),
            }
        }
        for (m, says) in [
            (&b"\xff"[..], "UTF-8"),
            (b"n,,", "no key/value"),
            (b"p=x,,\x01auth=Bearer a.b.\x01\x01", "gs2"),
            (b"n,,\x01auth=Bearer a.b.\x01", "two 0x01"),
            (b"n,,\x01auth=Basic x\x01\x01", "not a Bearer"),
            (b"n,,\x01foo=bar\x01\x01", "no auth=Bearer"),
        ] {
            match validate(m, &v, NOW_MS) {
                Err(SaslError::AuthenticationFailed(e)) => assert!(e.contains(says), "{says}: {e}"),
                other => panic!("{says}: {other:?}"),
            }
        }
        // The skew allowance, and an authorization id that is not the principal.
        let late = token(r#"{"alg":"none"}"#, r#"{"sub":"a","exp":1799999999}"#);
        let skewed = UnsecuredValidator {
            allowable_clock_skew_ms: 5000,
            ..Default::default()
        };
        assert!(validate(&message(&late), &skewed, NOW_MS).is_ok());
        let t = token(r#"{"alg":"none"}"#, r#"{"sub":"a","exp":1800000100}"#);
        let m = format!("n,a=b,\u{1}auth=Bearer {t}\u{1}\u{1}");
        assert!(validate(m.as_bytes(), &UnsecuredValidator::default(), NOW_MS).is_err());
    }

    #[test]
    fn options_come_from_the_jaas_config() {
        let mut o = BTreeMap::new();
        o.insert(
            "unsecuredValidatorPrincipalClaimName".to_string(),
            "client_id".to_string(),
        );
        o.insert(
            "unsecuredValidatorRequiredScope".to_string(),
            "a b,c".to_string(),
        );
        o.insert(
            "unsecuredValidatorAllowableClockSkewMs".to_string(),
            "250".to_string(),
        );
        let v = UnsecuredValidator::from_options(&o).unwrap();
        assert_eq!(v.principal_claim, "client_id");
        assert_eq!(v.required_scope, ["a", "b", "c"]);
        assert_eq!(v.allowable_clock_skew_ms, 250);
        o.insert(
            "unsecuredValidatorAllowableClockSkewMs".to_string(),
            "-1".to_string(),
        );
        assert!(UnsecuredValidator::from_options(&o).is_err());
    }
}
