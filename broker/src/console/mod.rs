//! The console's JSON API (issue 45), served by the broker itself on `console.listener`.
//!
//! Resources follow Confluent REST Proxy v3 where it has one (`/v3/clusters/{id}/topics`, ...);
//! the record browser, which REST v3 lacks, is `GET .../partitions/{p}/records`. One file per
//! resource group: `clusters.rs` (clusters, brokers), `acls.rs` (ACLs), `topics.rs` (topics,
//! partitions, configs), `groups.rs` (consumer groups, consumers, lags), `records.rs` (produce,
//! browse).
//!
//! Security: the API holds no privileges of its own. Every request is answered by a Kafka
//! client ([`crate::cli::client`]) that connects to this node's own client listener and signs
//! in with the HTTP Basic credentials of the request (SASL SCRAM or PLAIN), so that the ACL
//! authorizer judges each action as it would judge the same Kafka request. Without
//! credentials the client is anonymous, on a PLAINTEXT listener only, and never while an
//! authorizer is configured (401). Writes (produce) are refused with 403 unless
//! `console.writes.enable=true`, before any Kafka request is made.
//!
//! TLS (`console.ssl.keystore.*`) is `tls.rs`; without it the listener stays on loopback
//! unless `console.listener.insecure.enable=true`.
//!
//! Limits: at most [`SESSIONS_MAX`] requests in flight (more get 503), each bounded by
//! [`REQUEST_TIMEOUT`]; bodies above [`BODY_BYTES_MAX`] are refused; pages and record reads
//! have the limits their files state.

mod acls;
mod clusters;
mod error;
mod groups;
mod records;
mod session;
mod tls;
mod topics;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Query};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use serde_json::{json, Value};

use crate::cli::client::Client;
use crate::config::listeners::SecurityProtocol;
use crate::config::BrokerConfig;
use crate::security::sasl::Mechanism;

pub use error::ApiError;
pub use session::Endpoint;

/// Requests answered at once; each holds a blocking thread and Kafka connections.
pub const SESSIONS_MAX: usize = 32;
/// The longest one request may take (its Kafka calls have shorter timeouts of their own).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest request body (a produced record with its key, value and headers).
pub const BODY_BYTES_MAX: usize = 1024 * 1024;
/// The default of `console.listener`.
pub const DEFAULT_LISTENER: &str = "127.0.0.1:9645";

/// What the console serves with: read from the node's configuration at start.
pub struct Console {
    cluster_id: String,
    writes_enable: bool,
    /// An authorizer is configured: anonymous requests are refused (401).
    authorizer: bool,
    /// The client listeners the console's Kafka client may connect to.
    endpoints: Vec<Endpoint>,
    sessions: Arc<tokio::sync::Semaphore>,
    /// `http` or `https`, for the `self` links.
    scheme: &'static str,
}

impl Console {
    pub fn new(
        config: &BrokerConfig,
        cluster_id: &str,
        endpoints: Vec<Endpoint>,
        bound: &Bound,
    ) -> Console {
        Console {
            scheme: bound.scheme(),
            cluster_id: cluster_id.to_string(),
            writes_enable: config.bool("console.writes.enable"),
            authorizer: !config
                .get("authorizer.class.name")
                .unwrap_or_default()
                .trim()
                .is_empty(),
            endpoints,
            sessions: Arc::new(tokio::sync::Semaphore::new(SESSIONS_MAX)),
        }
    }
}

/// The console's socket, bound at start, and its TLS settings when it has them.
#[derive(Debug)]
pub struct Bound {
    pub socket: std::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl Bound {
    pub fn scheme(&self) -> &'static str {
        match self.tls {
            Some(_) => "https",
            None => "http",
        }
    }
}

/// Binds `console.listener`; `None` when it is empty. A taken default port is a warning (a
/// second node on this machine), a taken chosen one an error. A bind beyond loopback needs TLS
/// (`console.ssl.keystore.location`), since Basic auth carries passwords, unless
/// `console.listener.insecure.enable=true` (behind a TLS proxy, say).
pub fn bind(config: &BrokerConfig) -> anyhow::Result<Option<Bound>> {
    let value = config.get("console.listener").unwrap_or_default();
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    use std::net::ToSocketAddrs;
    let addr: SocketAddr = value
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| anyhow::anyhow!("console.listener '{value}' is not host:port"))?;
    let tls = tls::server_config(config)?;
    if !addr.ip().is_loopback() && tls.is_none() && !config.bool("console.listener.insecure.enable")
    {
        anyhow::bail!(
            "console.listener={value} is not a loopback address, and the console has no TLS: \
             passwords would cross the network in clear. Bind it to 127.0.0.1, give it TLS \
             (console.ssl.keystore.location), or set console.listener.insecure.enable=true to \
             serve it anyway"
        );
    }
    let socket = match crate::net::bind(addr) {
        Ok(s) => s,
        Err(e) if !config.is_set("console.listener") => {
            tracing::warn!(
                "the console is off: cannot listen on {addr} (the default console.listener): \
                 {e}; set console.listener to another port, or empty to turn it off"
            );
            return Ok(None);
        }
        Err(e) => anyhow::bail!(
            "cannot listen on {addr} (console.listener): {e}; choose another port or set \
             console.listener= to turn the console off"
        ),
    };
    Ok(Some(Bound { socket, tls }))
}

/// Serves the API until the task is dropped.
pub async fn serve(bound: Bound, console: Arc<Console>) {
    let listener = match bound
        .socket
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(bound.socket))
    {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("console listener unusable: {e}; the console is not served");
            return;
        }
    };
    let served = match bound.tls {
        None => axum::serve(listener, router(console)).await,
        Some(tls) => match tls::TlsListener::new(listener, tls) {
            Ok(l) => axum::serve(l, router(console)).await,
            Err(e) => Err(e),
        },
    };
    if let Err(e) = served {
        tracing::error!("the console stopped: {e}");
    }
}

/// Every route of the API.
pub fn router(console: Arc<Console>) -> Router {
    use axum::routing::post;
    let c = "/v3/clusters/{cluster_id}";
    Router::new()
        .route("/v3/clusters", get(clusters::list))
        .route(c, get(clusters::get_one))
        .route(&format!("{c}/brokers"), get(clusters::brokers))
        .route(&format!("{c}/acls"), get(acls::list))
        .route(&format!("{c}/brokers/{{broker_id}}"), get(clusters::broker))
        .route(&format!("{c}/topics"), get(topics::list))
        .route(&format!("{c}/topics/{{topic}}"), get(topics::get_one))
        .route(
            &format!("{c}/topics/{{topic}}/partitions"),
            get(topics::partitions),
        )
        .route(
            &format!("{c}/topics/{{topic}}/partitions/{{partition}}"),
            get(topics::partition),
        )
        .route(
            &format!("{c}/topics/{{topic}}/partitions/{{partition}}/records"),
            get(records::browse),
        )
        .route(
            &format!("{c}/topics/{{topic}}/configs"),
            get(topics::configs),
        )
        .route(
            &format!("{c}/topics/{{topic}}/records"),
            post(records::produce),
        )
        .route(&format!("{c}/consumer-groups"), get(groups::list))
        .route(
            &format!("{c}/consumer-groups/{{group}}"),
            get(groups::get_one),
        )
        .route(
            &format!("{c}/consumer-groups/{{group}}/consumers"),
            get(groups::consumers),
        )
        .route(
            &format!("{c}/consumer-groups/{{group}}/lag-summary"),
            get(groups::lag_summary),
        )
        .route(
            &format!("{c}/consumer-groups/{{group}}/lags"),
            get(groups::lags),
        )
        .fallback(|| async { ApiError::not_found("no such resource in the console's API") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "this resource does not take that method",
            )
        })
        .layer(DefaultBodyLimit::max(BODY_BYTES_MAX))
        .layer(Extension(console))
}

/// One API request as the handlers see it: who asks, where, for what.
#[derive(Clone)]
pub struct Req {
    console: Arc<Console>,
    /// `http://host:port` as the client addressed us, for the `self` links.
    base: String,
    /// HTTP Basic credentials (user, password), if given.
    credentials: Option<(String, String)>,
    params: HashMap<String, String>,
    query: HashMap<String, String>,
    path: String,
}

impl<S: Send + Sync> FromRequestParts<S> for Req {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Req, ApiError> {
        let console = parts
            .extensions
            .get::<Arc<Console>>()
            .cloned()
            .ok_or_else(|| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "no console"))?;
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request(format!("bad path: {e}")))?;
        let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map_err(|e| ApiError::bad_request(format!("bad query string: {e}")))?;
        let mut query = HashMap::new();
        for (k, v) in pairs {
            if query.insert(k.clone(), v).is_some() {
                return Err(ApiError::bad_request(format!(
                    "query parameter '{k}' is given twice"
                )));
            }
        }
        let host = parts
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .filter(|h| h.chars().all(|c| c.is_ascii_graphic()))
            .unwrap_or("localhost");
        let req = Req {
            credentials: basic_credentials(&parts.headers)?,
            base: format!("{}://{host}", console.scheme),
            params,
            query,
            path: parts.uri.path().to_string(),
            console,
        };
        if let Some(id) = req.params.get("cluster_id") {
            if *id != req.console.cluster_id {
                // Not naming the right one: the id is for those who may list clusters.
                return Err(ApiError::not_found(format!(
                    "cluster '{id}' is not this cluster (GET /v3/clusters lists it)"
                )));
            }
        }
        Ok(req)
    }
}

impl Req {
    pub fn cluster_id(&self) -> &str {
        &self.console.cluster_id
    }

    /// A path parameter the route has.
    pub fn param(&self, name: &str) -> &str {
        self.params.get(name).map(String::as_str).unwrap_or("")
    }

    /// A path parameter that must be a whole number (a partition, a broker id).
    pub fn int_param(&self, name: &str) -> Result<i32, ApiError> {
        let v = self.param(name);
        v.parse()
            .map_err(|_| ApiError::bad_request(format!("{name} '{v}' is not a whole number")))
    }

    /// An optional query parameter parsed as `T`, with a message naming it when it is not.
    pub fn query<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, ApiError> {
        match self.query.get(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!("query parameter {name}='{v}' is not valid"))
            }),
        }
    }

    /// Refuses query parameters the resource does not know, so a typo is not ignored.
    pub fn only_query(&self, known: &[&str]) -> Result<(), ApiError> {
        match self.query.keys().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(ApiError::bad_request(format!(
                "unknown query parameter '{k}' (this resource takes: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))),
        }
    }

    /// The absolute URL of a resource under this cluster (`parts` are percent-encoded).
    pub fn url(&self, parts: &[&str]) -> String {
        let mut u = format!("{}/v3/clusters/{}", self.base, self.console.cluster_id);
        for p in parts {
            u.push('/');
            u.push_str(&encode(p));
        }
        u
    }

    /// This request's own URL with `query` (already encoded) instead of its query string.
    pub fn self_with(&self, query: &str) -> String {
        match query.is_empty() {
            true => format!("{}{}", self.base, self.path),
            false => format!("{}{}?{query}", self.base, self.path),
        }
    }

    /// REST v3's `metadata` of a resource: its link and its resource name.
    pub fn metadata(&self, parts: &[&str], crn: &str) -> Value {
        json!({
            "self": self.url(parts),
            "resource_name": format!("crn:///kafka={}{crn}", self.console.cluster_id),
        })
    }

    pub fn related(&self, parts: &[&str]) -> Value {
        json!({ "related": self.url(parts) })
    }

    /// Answers with what `work` makes of a Kafka client signed in as the requester. The
    /// client is blocking: it runs on tokio's blocking pool, at most [`SESSIONS_MAX`] at once.
    pub async fn run(
        self,
        work: impl FnOnce(&mut Client, &Req) -> Result<Value, ApiError> + Send + 'static,
    ) -> Response {
        let Ok(permit) = self.console.sessions.clone().try_acquire_owned() else {
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the console is answering {SESSIONS_MAX} requests already; retry"),
            )
            .into_response();
        };
        let job = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut client = session::sign_in(&self)?;
            work(&mut client, &self)
        });
        match tokio::time::timeout(REQUEST_TIMEOUT, job).await {
            Ok(Ok(Ok(v))) => axum::Json(v).into_response(),
            Ok(Ok(Err(e))) => e.into_response(),
            Ok(Err(e)) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the request failed: {e}"),
            )
            .into_response(),
            Err(_) => ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "no answer from the broker within {} s",
                    REQUEST_TIMEOUT.as_secs()
                ),
            )
            .into_response(),
        }
    }
}

/// `Authorization: Basic ...` as (user, password); an undecodable header is a 400.
fn basic_credentials(headers: &HeaderMap) -> Result<Option<(String, String)>, ApiError> {
    use base64::Engine;
    let Some(h) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let bad = || ApiError::bad_request("the Authorization header is not Basic user:password");
    let text = h.to_str().map_err(|_| bad())?;
    let (scheme, token) = text.trim().split_once(' ').ok_or_else(bad)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            format!("the console takes Basic authentication, not {scheme}"),
        ));
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(token.trim())
        .map_err(|_| bad())?;
    let text = String::from_utf8(raw).map_err(|_| bad())?;
    let (user, password) = text.split_once(':').ok_or_else(bad)?;
    Ok(Some((user.to_string(), password.to_string())))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `protocol` and the SASL mechanisms of a listener, as the console may use them.
pub fn endpoint(
    listener: &str,
    protocol: SecurityProtocol,
    addr: SocketAddr,
    mechanisms: &[&str],
) -> Endpoint {
    Endpoint {
        listener: listener.to_string(),
        protocol,
        addr,
        mechanisms: mechanisms
            .iter()
            .filter_map(|m| Mechanism::parse(m))
            .collect(),
    }
}

/// A REST v3 list: `{"kind": ..., "metadata": {"self", "next"}, "data": [...]}`.
pub fn list_of(kind: &str, self_url: String, next: Option<String>, data: Vec<Value>) -> Value {
    json!({
        "kind": kind,
        "metadata": { "self": self_url, "next": next },
        "data": data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_keeps_unreserved_and_escapes_the_rest() {
        assert_eq!(encode("orders-1.v2_x~"), "orders-1.v2_x~");
        assert_eq!(encode("a b/c?"), "a%20b%2Fc%3F");
        assert_eq!(encode("é"), "%C3%A9");
    }

    fn config(pairs: &[(&str, &str)]) -> BrokerConfig {
        let flags: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        BrokerConfig::load(None, vec![], flags).unwrap()
    }

    #[test]
    fn a_console_beyond_loopback_needs_the_insecure_opt_in() {
        let refused = bind(&config(&[("console.listener", "0.0.0.0:0")])).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("console.listener.insecure.enable=true"),
            "{refused}"
        );
        let allowed = config(&[
            ("console.listener", "0.0.0.0:0"),
            ("console.listener.insecure.enable", "true"),
        ]);
        assert!(bind(&allowed).unwrap().is_some());
        assert!(bind(&config(&[("console.listener", "127.0.0.1:0")]))
            .unwrap()
            .is_some());
        assert!(bind(&config(&[("console.listener", "")]))
            .unwrap()
            .is_none());
        assert!(bind(&config(&[("console.listener", "nowhere")])).is_err());
    }

    #[test]
    fn a_taken_port_stops_the_start_only_when_it_was_chosen() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let chosen = bind(&config(&[("console.listener", &addr)])).unwrap_err();
        assert!(chosen.to_string().contains("console.listener="), "{chosen}");
        // The default port taken (a second node on this machine) is only a warning, if it is
        // taken here; otherwise the default binds.
        match std::net::TcpListener::bind(DEFAULT_LISTENER) {
            Ok(holder) => {
                assert!(bind(&config(&[])).unwrap().is_none());
                drop(holder);
            }
            Err(_) => assert!(bind(&config(&[])).unwrap().is_none()),
        }
    }

    #[test]
    fn basic_credentials_are_decoded_and_bad_ones_refused() {
        let mut h = HeaderMap::new();
        assert!(basic_credentials(&h).unwrap().is_none());
        // "alice:s3:cret" (a colon in the password is kept)
        h.insert(
            header::AUTHORIZATION,
            "Basic YWxpY2U6czM6Y3JldA==".parse().unwrap(),
        );
        assert_eq!(
            basic_credentials(&h).unwrap(),
            Some(("alice".to_string(), "s3:cret".to_string()))
        );
        h.insert(header::AUTHORIZATION, "Basic !!!".parse().unwrap());
        assert_eq!(
            basic_credentials(&h).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        h.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(
            basic_credentials(&h).unwrap_err().status,
            StatusCode::UNAUTHORIZED
        );
    }
}
