//! AlterConfigs (the legacy, non-incremental form): a resource's configs are replaced by exactly
//! the configs in the request, as Kafka's controller does (`legacyAlterConfigResource`).
//!
//! - A topic: its overrides.
//! - A broker (KIP-226): this broker's dynamic layer (resource name = node id) or the
//!   cluster-wide default layer (empty name). Static-only keys are refused with INVALID_REQUEST,
//!   as Kafka refuses them; dynamic `log.*` topic defaults apply to every topic at once.
//! - A group (KIP-848): its group configs.
//! - A client-metrics subscription (KIP-714): its configs (`config::client_metrics`).
//!
//! Configs belong to the cluster: this broker makes Kafka's broker-side checks (ACLs, the
//! request's shape, a broker resource naming this broker, broker and group values against its
//! own configuration: `ConfigAdminManager.preprocess`) and forwards the rest to the active
//! controller, which checks again, commits the changes to the metadata log and answers per
//! resource; the answer goes back once this broker's image has the changes (so that a
//! DescribeConfigs here sees them, and the logs follow them). A topic only this node knows (from
//! before the metadata log held topics, until it is imported) is changed here.
//!
//! Kafka's request checks come first: a resource named twice, a key named twice in a resource
//! or a null value is INVALID_REQUEST. ACLs: ALTER_CONFIGS on the topic
//! (TOPIC_AUTHORIZATION_FAILED), the group (GROUP_AUTHORIZATION_FAILED) or the cluster
//! (CLUSTER_AUTHORIZATION_FAILED).

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::controller::{AlterConfigsResource, AlterConfigsResult};
use samsa_cluster::metadata::MetadataImage;

use super::ctx::Ctx;
use super::describe_configs::{
    authorize_resource, broker_resource, RESOURCE_BROKER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP,
    RESOURCE_TOPIC,
};
use crate::acl::AclOperation;
use crate::config::dynamic::{
    check_ops, groups_with_configs, layer, validate_broker_keys, validate_reconfiguration, AlterOp,
    DynamicConfigError, OpType, GROUPS_WITH_CONFIGS_MAX, GROUP_NAME_BYTES_MAX,
};
use crate::config::{client_metrics, group};
use crate::controller::active::ControllerRequest;

pub async fn handle(ctx: &Ctx<'_>, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let image = ctx.controller().image();
    let repeated = repeated_resources(
        req.resources
            .iter()
            .map(|r| (r.resource_type, &r.resource_name)),
    );
    let mut routes = Vec::with_capacity(req.resources.len());
    let mut forwarded: Vec<AlterConfigsResource> = Vec::new();
    for res in &req.resources {
        let name = res.resource_name.as_str();
        let ops: Vec<AlterOp> = res
            .configs
            .iter()
            .map(|c| AlterOp {
                name: c.name.to_string(),
                op: OpType::Set,
                value: c.value.as_ref().map(|v| v.to_string()),
            })
            .collect();
        let route = authorize_resource(ctx, AclOperation::AlterConfigs, res.resource_type, name)
            .and_then(|()| {
                if repeated.contains(&(res.resource_type, name.to_string())) {
                    return Err(repeated_resource());
                }
                check_ops(&ops).map_err(to_response)?;
                let configs: BTreeMap<String, String> = ops
                    .iter()
                    .map(|o| (o.name.clone(), o.value.clone().unwrap_or_default()))
                    .collect();
                let replace = |_: &BTreeMap<String, String>| Ok(configs.clone());
                route(
                    ctx,
                    &image,
                    res.resource_type,
                    name,
                    req.validate_only,
                    replace,
                )
            });
        routes.push(route.map(|r| {
            r.map(|resource_name| {
                forwarded.push(AlterConfigsResource {
                    resource_type: res.resource_type,
                    resource_name,
                    configs: ops
                        .iter()
                        .map(|o| (o.name.clone(), o.value.clone()))
                        .collect(),
                });
                forwarded.len() - 1
            })
        }));
    }
    let results = forward(
        ctx,
        &forwarded,
        req.validate_only,
        |resources, validate_only| ControllerRequest::AlterConfigs {
            resources,
            validate_only,
        },
        |image, r| {
            let want: Layer = r
                .configs
                .iter()
                .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
                .collect();
            layer(image, r.resource_type, &r.resource_name) == want
        },
    )
    .await;
    let mut resp = AlterConfigsResponse::default();
    for (res, route) in req.resources.into_iter().zip(routes) {
        let mut r = AlterConfigsResourceResponse::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name;
        (r.error_code, r.error_message) = outcome(route, &results);
        resp.responses.push(r);
    }
    resp
}

/// Where a resource's change is decided: here (a topic only this node knows; `None`), or by
/// the controller (`Some` resource name, a broker's in its canonical form).
pub type Route = Option<String>;

type Layer = BTreeMap<String, String>;

/// Kafka's broker-side checks of one resource and where its change goes. `change` makes the
/// resource's new configs from its current ones (as this broker's image has them).
pub fn route(
    ctx: &Ctx<'_>,
    image: &MetadataImage,
    resource_type: i8,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&Layer) -> Result<Layer, DynamicConfigError>,
) -> Result<Route, (ResponseError, String)> {
    let invalid = |m: &str| Err((ResponseError::InvalidRequest, m.to_string()));
    match resource_type {
        RESOURCE_TOPIC if name.is_empty() => invalid("Default topic resources are not allowed."),
        RESOURCE_TOPIC => {
            // A topic of the metadata image is the controller's; one only this node knows is
            // changed here.
            let Some(topic) = ctx.topics().get(name).filter(|t| !t.managed) else {
                return Ok(Some(name.to_string()));
            };
            let overrides = change(&topic.overrides.read()).map_err(to_response)?;
            ctx.topics()
                .set_overrides(name, overrides, validate_only)
                .map_err(|e| {
                    let code = ResponseError::try_from_code(e.code());
                    (
                        code.unwrap_or(ResponseError::UnknownServerError),
                        e.to_string(),
                    )
                })?;
            Ok(None)
        }
        RESOURCE_BROKER => {
            let per_broker = broker_resource(ctx, name, false)?;
            let resource_name = if per_broker {
                ctx.node().node_id.to_string()
            } else {
                String::new()
            };
            let next =
                change(&layer(image, RESOURCE_BROKER, &resource_name)).map_err(to_response)?;
            check_broker_layer(ctx, image, per_broker, next).map_err(to_response)?;
            Ok(Some(resource_name))
        }
        RESOURCE_GROUP if name.is_empty() => invalid("Default group resources are not allowed."),
        RESOURCE_GROUP => {
            let current = layer(image, RESOURCE_GROUP, name);
            let next = change(&current).map_err(to_response)?;
            check_group_layer(ctx, image, name, &current, &next).map_err(to_response)?;
            Ok(Some(name.to_string()))
        }
        RESOURCE_CLIENT_METRICS => {
            let current = layer(image, RESOURCE_CLIENT_METRICS, name);
            let next = change(&current).map_err(to_response)?;
            check_subscription(image, name, &current, &next).map_err(to_response)?;
            Ok(Some(name.to_string()))
        }
        other => Err((
            ResponseError::InvalidRequest,
            format!("Unknown resource type {other}"),
        )),
    }
}

/// A client-metrics subscription as a change would leave it: Kafka's checks, and Samsa's limit
/// on subscriptions.
fn check_subscription(
    image: &MetadataImage,
    name: &str,
    current: &Layer,
    next: &Layer,
) -> Result<(), DynamicConfigError> {
    client_metrics::validate(name, next)?;
    if current.is_empty() && !next.is_empty() {
        let subscriptions = image
            .config_resources()
            .filter(|(r, _)| r.resource_type == RESOURCE_CLIENT_METRICS)
            .count();
        if subscriptions >= client_metrics::SUBSCRIPTIONS_MAX {
            return Err(DynamicConfigError::TooMany(format!(
                "{} client-metrics subscriptions would exceed the limit of {}",
                subscriptions + 1,
                client_metrics::SUBSCRIPTIONS_MAX
            )));
        }
    }
    Ok(())
}

/// This broker's layer (`per_broker`) or the cluster-wide default as a change would leave it,
/// checked as Kafka's `ConfigAdminManager.validateBrokerConfigChange` does: the keys at their
/// level, and the configuration the change would give this broker (thread counts).
fn check_broker_layer(
    ctx: &Ctx<'_>,
    image: &MetadataImage,
    per_broker: bool,
    next: Layer,
) -> Result<(), DynamicConfigError> {
    validate_broker_keys(&next, per_broker)?;
    let configs = &ctx.node().dynamic_configs;
    let node = ctx.node().node_id.to_string();
    let candidate = if per_broker {
        configs.with_layers(next, layer(image, RESOURCE_BROKER, ""))
    } else {
        configs.with_layers(layer(image, RESOURCE_BROKER, &node), next)
    };
    validate_reconfiguration(&configs.effective(), &candidate)?;
    // TLS listeners: the keystore and truststore the change names must load (Kafka's
    // SslFactory validation). Set again unchanged, they are re-read now: a certificate
    // rewritten in place is rotated that way, as with Kafka.
    if per_broker {
        let listeners = ctx.node().listeners.get().map(Vec::as_slice).unwrap_or(&[]);
        for l in listeners {
            l.check_tls(&candidate).map_err(|e| {
                DynamicConfigError::InvalidRequest(format!(
                    "Validation of dynamic config update of SSLFactory failed: {e}"
                ))
            })?;
        }
        crate::security::reload_all(listeners, &configs.effective());
        crate::security::outbound::reload(&ctx.node().inter_broker.security, &configs.effective());
    }
    Ok(())
}

/// A group's configs (KIP-848; the group need not exist) as a change would leave them.
fn check_group_layer(
    ctx: &Ctx<'_>,
    image: &MetadataImage,
    name: &str,
    current: &Layer,
    next: &Layer,
) -> Result<(), DynamicConfigError> {
    group::validate(next, &ctx.node().dynamic_configs.effective())?;
    if name.len() > GROUP_NAME_BYTES_MAX {
        return Err(DynamicConfigError::TooMany(format!(
            "group name of {} bytes exceeds the limit of {GROUP_NAME_BYTES_MAX}",
            name.len()
        )));
    }
    if current.is_empty() && !next.is_empty() {
        let groups = groups_with_configs(image).len();
        if groups >= GROUPS_WITH_CONFIGS_MAX {
            return Err(DynamicConfigError::TooMany(format!(
                "configs for {} groups would exceed the limit of {GROUPS_WITH_CONFIGS_MAX}",
                groups + 1
            )));
        }
    }
    Ok(())
}

/// Forwards the resources this broker let through to the active controller and, unless only
/// validating, waits until this broker's image has the changes the controller accepted
/// (`applied` tells). One result per resource, in order.
pub async fn forward<R: Clone>(
    ctx: &Ctx<'_>,
    resources: &[R],
    validate_only: bool,
    request: impl FnOnce(Vec<R>, bool) -> ControllerRequest,
    applied: impl Fn(&MetadataImage, &R) -> bool,
) -> Vec<AlterConfigsResult> {
    if resources.is_empty() {
        return Vec::new();
    }
    let request = request(resources.to_vec(), validate_only);
    let result = crate::metadata_wait::ask_controller(&ctx.controller(), request.clone()).await;
    let results = crate::controller::admin_rpcs::config_results(&request, &result);
    if !validate_only {
        let changed: Vec<&R> = resources
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.error_code == 0)
            .map(|(f, _)| f)
            .collect();
        crate::metadata_wait::wait_until_published(ctx.node(), |image| {
            changed.iter().all(|r| applied(image, r))
        })
        .await;
    }
    results
}

/// A resource's answer: refused here, done here, or the controller's (by its index).
pub fn outcome(
    route: Result<Option<usize>, (ResponseError, String)>,
    results: &[AlterConfigsResult],
) -> (i16, Option<StrBytes>) {
    match route {
        Err((code, message)) => (code.code(), Some(StrBytes::from_string(message))),
        Ok(None) => (0, None),
        Ok(Some(i)) => match results.get(i) {
            Some(r) => (
                r.error_code,
                r.error_message.clone().map(StrBytes::from_string),
            ),
            None => (
                ResponseError::UnknownServerError.code(),
                Some(StrBytes::from_static_str(
                    "the controller answered for other resources",
                )),
            ),
        },
    }
}

/// The (type, name) pairs that appear more than once in a request: Kafka refuses every one of
/// their entries (`ConfigAdminManager.preprocess`).
pub fn repeated_resources<'a>(
    resources: impl Iterator<Item = (i8, &'a StrBytes)>,
) -> std::collections::HashSet<(i8, String)> {
    let mut count: HashMap<(i8, String), usize> = HashMap::new();
    for (t, n) in resources {
        *count.entry((t, n.to_string())).or_default() += 1;
    }
    count
        .into_iter()
        .filter(|(_, c)| *c > 1)
        .map(|(k, _)| k)
        .collect()
}

pub fn repeated_resource() -> (ResponseError, String) {
    (
        ResponseError::InvalidRequest,
        "Each resource must appear at most once.".into(),
    )
}

pub fn to_response(e: DynamicConfigError) -> (ResponseError, String) {
    (e.response_error(), e.to_string())
}
