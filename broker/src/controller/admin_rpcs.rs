//! IncrementalAlterConfigs, AlterConfigs, CreateAcls, DeleteAcls, AlterUserScramCredentials and
//! UpdateFeatures as the active controller takes them: the Kafka requests a broker forwards to
//! the leader's controller listener (the versions Kafka 4.x brokers send), and the answers,
//! mapped to and from the controller's own types.
//!
//! A request the controller refused whole (NOT_CONTROLLER, REQUEST_TIMED_OUT, a batch over
//! `MAX_RECORDS_PER_USER_OP`) has no top-level error in most of these responses: every resource,
//! binding, filter or user carries the code, as Kafka answers. Read back, an answer whose every
//! item is NOT_CONTROLLER is the whole request's, so that the forwarding broker asks again.

use kafka_protocol::messages::alter_configs_request::{
    AlterConfigsResource as KLegacyResource, AlterableConfig as KLegacyConfig,
};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter as KFilter;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult as KFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource as KResource, AlterableConfig as KConfig,
};
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{
    alter_configs_response, alter_user_scram_credentials_request as scram_request,
    alter_user_scram_credentials_response as scram_response, incremental_alter_configs_response,
    AlterConfigsRequest, AlterConfigsResponse, AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse, ApiKey, CreateAclsRequest, CreateAclsResponse,
    DeleteAclsRequest, DeleteAclsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, RequestKind, ResponseKind, UpdateFeaturesRequest,
    UpdateFeaturesResponse,
};
use kafka_protocol::protocol::StrBytes;
use samsa_cluster::acl::{
    AclBinding, AclFilter, AclOperation, PatternType, PermissionType, ResourceType,
};
use samsa_cluster::controller::{
    AlterConfigsResource, AlterConfigsResult, AlterScramCredentialResult, AlterableConfig,
    CreateAclResult, DeleteAclsFilterResult, FeatureUpdate, IncrementalAlterConfigsResource,
    ScramCredentialDeletion, ScramCredentialUpsertion, UpdateFeaturesResult,
};

use super::active::{
    ControllerReply, ControllerRequest, ControllerResult, ReplyError, NOT_CONTROLLER,
};

pub const INCREMENTAL_ALTER_CONFIGS_VERSION: i16 = 1;
pub const ALTER_CONFIGS_VERSION: i16 = 2;
pub const CREATE_ACLS_VERSION: i16 = 3;
pub const DELETE_ACLS_VERSION: i16 = 3;
pub const ALTER_USER_SCRAM_CREDENTIALS_VERSION: i16 = 0;
pub const UPDATE_FEATURES_VERSION: i16 = 1;
/// How long the controller may take, as a forwarding broker tells it (UpdateFeatures).
const TIMEOUT_MS: i32 = 30_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn text(m: Option<StrBytes>) -> Option<String> {
    m.map(|m| m.to_string())
}

/// The Kafka request to send to the active controller (`None` for the other requests).
pub fn to_kafka(request: &ControllerRequest) -> Option<(ApiKey, i16, RequestKind)> {
    Some(match request {
        ControllerRequest::IncrementalAlterConfigs {
            resources,
            validate_only,
        } => {
            let mut k = IncrementalAlterConfigsRequest::default();
            k.validate_only = *validate_only;
            k.resources = resources
                .iter()
                .map(|r| {
                    let mut x = KResource::default();
                    x.resource_type = r.resource_type;
                    x.resource_name = s(&r.resource_name);
                    x.configs = r
                        .configs
                        .iter()
                        .map(|c| {
                            let mut y = KConfig::default();
                            y.name = s(&c.name);
                            y.config_operation = c.operation;
                            y.value = c.value.as_deref().map(s);
                            y
                        })
                        .collect();
                    x
                })
                .collect();
            (
                ApiKey::IncrementalAlterConfigs,
                INCREMENTAL_ALTER_CONFIGS_VERSION,
                RequestKind::IncrementalAlterConfigs(k),
            )
        }
        ControllerRequest::AlterConfigs {
            resources,
            validate_only,
        } => {
            let mut k = AlterConfigsRequest::default();
            k.validate_only = *validate_only;
            k.resources = resources
                .iter()
                .map(|r| {
                    let mut x = KLegacyResource::default();
                    x.resource_type = r.resource_type;
                    x.resource_name = s(&r.resource_name);
                    x.configs = r
                        .configs
                        .iter()
                        .map(|(name, value)| {
                            let mut y = KLegacyConfig::default();
                            y.name = s(name);
                            y.value = value.as_deref().map(s);
                            y
                        })
                        .collect();
                    x
                })
                .collect();
            (
                ApiKey::AlterConfigs,
                ALTER_CONFIGS_VERSION,
                RequestKind::AlterConfigs(k),
            )
        }
        ControllerRequest::CreateAcls(bindings) => {
            let mut k = CreateAclsRequest::default();
            k.creations = bindings
                .iter()
                .map(|b| {
                    let mut c = AclCreation::default();
                    c.resource_type = b.resource_type.code();
                    c.resource_name = s(&b.resource_name);
                    c.resource_pattern_type = b.pattern_type.code();
                    c.principal = s(&b.principal);
                    c.host = s(&b.host);
                    c.operation = b.operation.code();
                    c.permission_type = b.permission_type.code();
                    c
                })
                .collect();
            (
                ApiKey::CreateAcls,
                CREATE_ACLS_VERSION,
                RequestKind::CreateAcls(k),
            )
        }
        ControllerRequest::DeleteAcls(filters) => {
            let mut k = DeleteAclsRequest::default();
            k.filters = filters
                .iter()
                .map(|f| {
                    let mut x = KFilter::default();
                    x.resource_type_filter = f.resource_type.code();
                    x.resource_name_filter = f.resource_name.as_deref().map(s);
                    x.pattern_type_filter = f.pattern_type.code();
                    x.principal_filter = f.principal.as_deref().map(s);
                    x.host_filter = f.host.as_deref().map(s);
                    x.operation = f.operation.code();
                    x.permission_type = f.permission_type.code();
                    x
                })
                .collect();
            (
                ApiKey::DeleteAcls,
                DELETE_ACLS_VERSION,
                RequestKind::DeleteAcls(k),
            )
        }
        ControllerRequest::AlterUserScramCredentials {
            deletions,
            upsertions,
        } => {
            let mut k = AlterUserScramCredentialsRequest::default();
            k.deletions = deletions
                .iter()
                .map(|d| {
                    let mut x = scram_request::ScramCredentialDeletion::default();
                    x.name = s(&d.name);
                    x.mechanism = d.mechanism;
                    x
                })
                .collect();
            k.upsertions = upsertions
                .iter()
                .map(|u| {
                    let mut x = scram_request::ScramCredentialUpsertion::default();
                    x.name = s(&u.name);
                    x.mechanism = u.mechanism;
                    x.iterations = u.iterations;
                    x.salt = u.salt.clone();
                    x.salted_password = u.salted_password.clone();
                    x
                })
                .collect();
            (
                ApiKey::AlterUserScramCredentials,
                ALTER_USER_SCRAM_CREDENTIALS_VERSION,
                RequestKind::AlterUserScramCredentials(k),
            )
        }
        ControllerRequest::UpdateFeatures {
            updates,
            validate_only,
        } => {
            let mut k = UpdateFeaturesRequest::default();
            k.timeout_ms = TIMEOUT_MS;
            k.validate_only = *validate_only;
            k.feature_updates = updates
                .iter()
                .map(|u| {
                    let mut x = FeatureUpdateKey::default();
                    x.feature = s(&u.feature);
                    x.max_version_level = u.max_version_level;
                    x.upgrade_type = u.upgrade_type;
                    x
                })
                .collect();
            (
                ApiKey::UpdateFeatures,
                UPDATE_FEATURES_VERSION,
                RequestKind::UpdateFeatures(k),
            )
        }
        _ => return None,
    })
}

/// An ACL binding as CreateAcls carries it (codes this version does not know read as
/// `Unknown`, which the controller refuses).
pub fn binding_from_kafka(c: &AclCreation) -> AclBinding {
    AclBinding {
        resource_type: ResourceType::from_code(c.resource_type),
        resource_name: c.resource_name.to_string(),
        pattern_type: PatternType::from_code(c.resource_pattern_type),
        principal: c.principal.to_string(),
        host: c.host.to_string(),
        operation: AclOperation::from_code(c.operation),
        permission_type: PermissionType::from_code(c.permission_type),
    }
}

/// An ACL filter as DeleteAcls carries it.
pub fn filter_from_kafka(f: &KFilter) -> AclFilter {
    AclFilter::from_wire(
        f.resource_type_filter,
        f.resource_name_filter.as_deref(),
        f.pattern_type_filter,
        f.principal_filter.as_deref(),
        f.host_filter.as_deref(),
        f.operation,
        f.permission_type,
    )
}

/// An UpdateFeatures update of any version (v0 has `allow_downgrade` where later versions have
/// an upgrade type).
pub fn feature_update_from_kafka(u: &FeatureUpdateKey) -> FeatureUpdate {
    FeatureUpdate {
        feature: u.feature.to_string(),
        max_version_level: u.max_version_level,
        upgrade_type: if u.allow_downgrade { 2 } else { u.upgrade_type },
    }
}

/// A received request of this module for the active controller, of any version.
pub fn from_kafka(body: RequestKind) -> Option<ControllerRequest> {
    Some(match body {
        RequestKind::IncrementalAlterConfigs(k) => ControllerRequest::IncrementalAlterConfigs {
            validate_only: k.validate_only,
            resources: k
                .resources
                .into_iter()
                .map(|r| IncrementalAlterConfigsResource {
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.to_string(),
                    configs: r
                        .configs
                        .into_iter()
                        .map(|c| AlterableConfig {
                            name: c.name.to_string(),
                            operation: c.config_operation,
                            value: text(c.value),
                        })
                        .collect(),
                })
                .collect(),
        },
        RequestKind::AlterConfigs(k) => ControllerRequest::AlterConfigs {
            validate_only: k.validate_only,
            resources: k
                .resources
                .into_iter()
                .map(|r| AlterConfigsResource {
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.to_string(),
                    configs: r
                        .configs
                        .into_iter()
                        .map(|c| (c.name.to_string(), text(c.value)))
                        .collect(),
                })
                .collect(),
        },
        RequestKind::CreateAcls(k) => {
            ControllerRequest::CreateAcls(k.creations.iter().map(binding_from_kafka).collect())
        }
        RequestKind::DeleteAcls(k) => {
            ControllerRequest::DeleteAcls(k.filters.iter().map(filter_from_kafka).collect())
        }
        RequestKind::AlterUserScramCredentials(k) => ControllerRequest::AlterUserScramCredentials {
            deletions: k
                .deletions
                .into_iter()
                .map(|d| ScramCredentialDeletion {
                    name: d.name.to_string(),
                    mechanism: d.mechanism,
                })
                .collect(),
            upsertions: k
                .upsertions
                .into_iter()
                .map(|u| ScramCredentialUpsertion {
                    name: u.name.to_string(),
                    mechanism: u.mechanism,
                    iterations: u.iterations,
                    salt: u.salt,
                    salted_password: u.salted_password,
                })
                .collect(),
        },
        RequestKind::UpdateFeatures(k) => ControllerRequest::UpdateFeatures {
            validate_only: k.validate_only,
            updates: k
                .feature_updates
                .iter()
                .map(feature_update_from_kafka)
                .collect(),
        },
        _ => return None,
    })
}

/// The config resources a config request names, in order, for the answer of one that failed
/// whole.
fn config_resources(request: &ControllerRequest) -> Vec<(i8, String)> {
    match request {
        ControllerRequest::IncrementalAlterConfigs { resources, .. } => resources
            .iter()
            .map(|r| (r.resource_type, r.resource_name.clone()))
            .collect(),
        ControllerRequest::AlterConfigs { resources, .. } => resources
            .iter()
            .map(|r| (r.resource_type, r.resource_name.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The users an AlterUserScramCredentials request names, each once, in name order (Kafka's
/// `getErrorResponse`), for the answer of one that failed whole.
pub fn scram_users(
    deletions: &[ScramCredentialDeletion],
    upsertions: &[ScramCredentialUpsertion],
) -> Vec<String> {
    let users: std::collections::BTreeSet<&str> = deletions
        .iter()
        .map(|d| d.name.as_str())
        .chain(upsertions.iter().map(|u| u.name.as_str()))
        .collect();
    users.into_iter().map(str::to_owned).collect()
}

/// The results of a config request: the controller's, or each resource with the error of a
/// request that failed whole.
pub fn config_results(
    request: &ControllerRequest,
    result: &ControllerResult,
) -> Vec<AlterConfigsResult> {
    match result {
        Ok(ControllerReply::AlterConfigs(results)) => results.clone(),
        other => {
            let (code, message) = whole_error(other);
            config_resources(request)
                .into_iter()
                .map(|(resource_type, resource_name)| AlterConfigsResult {
                    resource_type,
                    resource_name,
                    error_code: code,
                    error_message: Some(message.clone()),
                })
                .collect()
        }
    }
}

/// The error of a request that failed whole (or was answered with the wrong reply).
fn whole_error(result: &ControllerResult) -> (i16, String) {
    match result {
        Err(e) => (e.code, e.message.clone()),
        Ok(_) => (
            kafka_protocol::ResponseError::UnknownServerError.code(),
            "the controller answered another request".into(),
        ),
    }
}

/// The answer as the Kafka response to `key` (an API of this module; `request`: what was asked).
pub fn response_to_kafka(
    key: ApiKey,
    request: &ControllerRequest,
    result: &ControllerResult,
) -> ResponseKind {
    match key {
        ApiKey::IncrementalAlterConfigs => {
            let mut r = IncrementalAlterConfigsResponse::default();
            r.responses = config_results(request, result)
                .into_iter()
                .map(|c| {
                    let mut x =
                        incremental_alter_configs_response::AlterConfigsResourceResponse::default();
                    x.resource_type = c.resource_type;
                    x.resource_name = s(&c.resource_name);
                    x.error_code = c.error_code;
                    x.error_message = c.error_message.as_deref().map(s);
                    x
                })
                .collect();
            ResponseKind::IncrementalAlterConfigs(r)
        }
        ApiKey::AlterConfigs => {
            let mut r = AlterConfigsResponse::default();
            r.responses = config_results(request, result)
                .into_iter()
                .map(|c| {
                    let mut x = alter_configs_response::AlterConfigsResourceResponse::default();
                    x.resource_type = c.resource_type;
                    x.resource_name = s(&c.resource_name);
                    x.error_code = c.error_code;
                    x.error_message = c.error_message.as_deref().map(s);
                    x
                })
                .collect();
            ResponseKind::AlterConfigs(r)
        }
        ApiKey::CreateAcls => {
            let mut r = CreateAclsResponse::default();
            let results: Vec<CreateAclResult> = match result {
                Ok(ControllerReply::CreateAcls(results)) => results.clone(),
                other => {
                    let (code, message) = whole_error(other);
                    let n = match request {
                        ControllerRequest::CreateAcls(b) => b.len(),
                        _ => 0,
                    };
                    vec![
                        CreateAclResult {
                            error_code: code,
                            error_message: Some(message),
                        };
                        n
                    ]
                }
            };
            r.results = results
                .into_iter()
                .map(|c| {
                    let mut x = AclCreationResult::default();
                    x.error_code = c.error_code;
                    x.error_message = c.error_message.as_deref().map(s);
                    x
                })
                .collect();
            ResponseKind::CreateAcls(r)
        }
        ApiKey::DeleteAcls => {
            let mut r = DeleteAclsResponse::default();
            let results: Vec<DeleteAclsFilterResult> = match result {
                Ok(ControllerReply::DeleteAcls(results)) => results.clone(),
                other => {
                    let (code, message) = whole_error(other);
                    let n = match request {
                        ControllerRequest::DeleteAcls(f) => f.len(),
                        _ => 0,
                    };
                    vec![
                        DeleteAclsFilterResult {
                            error_code: code,
                            error_message: Some(message),
                            matching_acls: Vec::new(),
                        };
                        n
                    ]
                }
            };
            r.filter_results = results.iter().map(filter_result_to_kafka).collect();
            ResponseKind::DeleteAcls(r)
        }
        ApiKey::AlterUserScramCredentials => {
            let mut r = AlterUserScramCredentialsResponse::default();
            let results: Vec<AlterScramCredentialResult> = match result {
                Ok(ControllerReply::AlterUserScramCredentials(results)) => results.clone(),
                other => {
                    let (code, message) = whole_error(other);
                    let users = match request {
                        ControllerRequest::AlterUserScramCredentials {
                            deletions,
                            upsertions,
                        } => scram_users(deletions, upsertions),
                        _ => Vec::new(),
                    };
                    users
                        .into_iter()
                        .map(|user| AlterScramCredentialResult {
                            user,
                            error_code: code,
                            error_message: Some(message.clone()),
                        })
                        .collect()
                }
            };
            r.results = results
                .into_iter()
                .map(|u| {
                    let mut x = scram_response::AlterUserScramCredentialsResult::default();
                    x.user = s(&u.user);
                    x.error_code = u.error_code;
                    x.error_message = u.error_message.as_deref().map(s);
                    x
                })
                .collect();
            ResponseKind::AlterUserScramCredentials(r)
        }
        _ => {
            debug_assert_eq!(key, ApiKey::UpdateFeatures);
            let mut r = UpdateFeaturesResponse::default();
            let (code, message) = match result {
                Ok(ControllerReply::UpdateFeatures(u)) => (u.error_code, u.error_message.clone()),
                other => {
                    let (code, message) = whole_error(other);
                    (code, Some(message))
                }
            };
            r.error_code = code;
            r.error_message = message.as_deref().map(s);
            // Versions 0 and 1 also answer per feature, but only a success, each with Kafka's
            // name for no error as its message (`QuorumController.updateFeatures`); a refusal
            // is the top-level error alone.
            if let ControllerRequest::UpdateFeatures { updates, .. } = request {
                if code == 0 {
                    r.results = updates
                        .iter()
                        .map(|u| {
                            let mut x = UpdatableFeatureResult::default();
                            x.feature = s(&u.feature);
                            x.error_message = Some(s("NONE"));
                            x
                        })
                        .collect();
                }
            }
            ResponseKind::UpdateFeatures(r)
        }
    }
}

/// A DeleteAcls filter's answer as Kafka's.
pub fn filter_result_to_kafka(f: &DeleteAclsFilterResult) -> KFilterResult {
    let mut x = KFilterResult::default();
    x.error_code = f.error_code;
    x.error_message = f.error_message.as_deref().map(s);
    x.matching_acls = f
        .matching_acls
        .iter()
        .map(|b| {
            let mut m = DeleteAclsMatchingAcl::default();
            m.resource_type = b.resource_type.code();
            m.resource_name = s(&b.resource_name);
            m.pattern_type = b.pattern_type.code();
            m.principal = s(&b.principal);
            m.host = s(&b.host);
            m.operation = b.operation.code();
            m.permission_type = b.permission_type.code();
            m
        })
        .collect();
    x
}

/// An answer whose every item failed with NOT_CONTROLLER is a refusal of the whole request.
fn whole_unless_not_controller(
    codes: impl Iterator<Item = (i16, Option<StrBytes>)>,
    reply: ControllerReply,
) -> ControllerResult {
    let mut codes = codes.peekable();
    let first_message = codes.peek().map(|(_, m)| m.clone());
    let mut any = false;
    let mut all_not_controller = true;
    for (code, _) in codes {
        any = true;
        all_not_controller &= code == NOT_CONTROLLER;
    }
    if any && all_not_controller {
        return Err(ReplyError::new(
            NOT_CONTROLLER,
            text(first_message.flatten()).unwrap_or_else(|| "not the active controller".into()),
        ));
    }
    Ok(reply)
}

/// The active controller's Kafka response to a request of this module as the answer (`None`
/// for other responses).
pub fn response_from_kafka(body: ResponseKind) -> Option<ControllerResult> {
    let config_result =
        |resource_type, resource_name: StrBytes, error_code, error_message| AlterConfigsResult {
            resource_type,
            resource_name: resource_name.to_string(),
            error_code,
            error_message: text(error_message),
        };
    Some(match body {
        ResponseKind::IncrementalAlterConfigs(r) => {
            let codes: Vec<_> = r
                .responses
                .iter()
                .map(|x| (x.error_code, x.error_message.clone()))
                .collect();
            let results = r
                .responses
                .into_iter()
                .map(|x| {
                    config_result(
                        x.resource_type,
                        x.resource_name,
                        x.error_code,
                        x.error_message,
                    )
                })
                .collect();
            whole_unless_not_controller(codes.into_iter(), ControllerReply::AlterConfigs(results))
        }
        ResponseKind::AlterConfigs(r) => {
            let codes: Vec<_> = r
                .responses
                .iter()
                .map(|x| (x.error_code, x.error_message.clone()))
                .collect();
            let results = r
                .responses
                .into_iter()
                .map(|x| {
                    config_result(
                        x.resource_type,
                        x.resource_name,
                        x.error_code,
                        x.error_message,
                    )
                })
                .collect();
            whole_unless_not_controller(codes.into_iter(), ControllerReply::AlterConfigs(results))
        }
        ResponseKind::CreateAcls(r) => {
            let codes: Vec<_> = r
                .results
                .iter()
                .map(|x| (x.error_code, x.error_message.clone()))
                .collect();
            let results = r
                .results
                .into_iter()
                .map(|x| CreateAclResult {
                    error_code: x.error_code,
                    error_message: text(x.error_message),
                })
                .collect();
            whole_unless_not_controller(codes.into_iter(), ControllerReply::CreateAcls(results))
        }
        ResponseKind::DeleteAcls(r) => {
            let codes: Vec<_> = r
                .filter_results
                .iter()
                .map(|x| (x.error_code, x.error_message.clone()))
                .collect();
            let results = r
                .filter_results
                .into_iter()
                .map(|x| DeleteAclsFilterResult {
                    error_code: x.error_code,
                    error_message: text(x.error_message),
                    matching_acls: x
                        .matching_acls
                        .iter()
                        .map(|m| AclBinding {
                            resource_type: ResourceType::from_code(m.resource_type),
                            resource_name: m.resource_name.to_string(),
                            pattern_type: PatternType::from_code(m.pattern_type),
                            principal: m.principal.to_string(),
                            host: m.host.to_string(),
                            operation: AclOperation::from_code(m.operation),
                            permission_type: PermissionType::from_code(m.permission_type),
                        })
                        .collect(),
                })
                .collect();
            whole_unless_not_controller(codes.into_iter(), ControllerReply::DeleteAcls(results))
        }
        ResponseKind::AlterUserScramCredentials(r) => {
            let codes: Vec<_> = r
                .results
                .iter()
                .map(|x| (x.error_code, x.error_message.clone()))
                .collect();
            let results = r
                .results
                .into_iter()
                .map(|x| AlterScramCredentialResult {
                    user: x.user.to_string(),
                    error_code: x.error_code,
                    error_message: text(x.error_message),
                })
                .collect();
            whole_unless_not_controller(
                codes.into_iter(),
                ControllerReply::AlterUserScramCredentials(results),
            )
        }
        ResponseKind::UpdateFeatures(r) if r.error_code == NOT_CONTROLLER => Err(ReplyError::new(
            NOT_CONTROLLER,
            text(r.error_message).unwrap_or_else(|| "not the active controller".into()),
        )),
        ResponseKind::UpdateFeatures(r) => {
            Ok(ControllerReply::UpdateFeatures(UpdateFeaturesResult {
                error_code: r.error_code,
                error_message: text(r.error_message),
            }))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    fn wire<T: Encodable + Decodable>(value: T, version: i16) -> T {
        let mut buf = bytes::BytesMut::new();
        value.encode(&mut buf, version).unwrap();
        T::decode(&mut buf.freeze(), version).unwrap()
    }

    /// What a broker forwards is what the controller decodes, through the wire encoding.
    fn round_trip(request: ControllerRequest) -> ControllerRequest {
        let (key, version, body) = to_kafka(&request).expect("a request of this module");
        let decoded = match body {
            RequestKind::IncrementalAlterConfigs(r) => {
                RequestKind::IncrementalAlterConfigs(wire(r, version))
            }
            RequestKind::AlterConfigs(r) => RequestKind::AlterConfigs(wire(r, version)),
            RequestKind::CreateAcls(r) => RequestKind::CreateAcls(wire(r, version)),
            RequestKind::DeleteAcls(r) => RequestKind::DeleteAcls(wire(r, version)),
            RequestKind::AlterUserScramCredentials(r) => {
                RequestKind::AlterUserScramCredentials(wire(r, version))
            }
            RequestKind::UpdateFeatures(r) => RequestKind::UpdateFeatures(wire(r, version)),
            _ => unreachable!("{key:?}"),
        };
        from_kafka(decoded).expect("a request of this module")
    }

    /// The answer to `request` as the forwarding broker reads it back off the wire.
    fn answer_round_trip(
        request: &ControllerRequest,
        result: &ControllerResult,
    ) -> ControllerResult {
        let (key, version, _) = to_kafka(request).unwrap();
        let decoded = match response_to_kafka(key, request, result) {
            ResponseKind::IncrementalAlterConfigs(r) => {
                ResponseKind::IncrementalAlterConfigs(wire(r, version))
            }
            ResponseKind::AlterConfigs(r) => ResponseKind::AlterConfigs(wire(r, version)),
            ResponseKind::CreateAcls(r) => ResponseKind::CreateAcls(wire(r, version)),
            ResponseKind::DeleteAcls(r) => ResponseKind::DeleteAcls(wire(r, version)),
            ResponseKind::AlterUserScramCredentials(r) => {
                ResponseKind::AlterUserScramCredentials(wire(r, version))
            }
            ResponseKind::UpdateFeatures(r) => ResponseKind::UpdateFeatures(wire(r, version)),
            other => unreachable!("{other:?}"),
        };
        response_from_kafka(decoded).expect("a response of this module")
    }

    fn same<T: std::fmt::Debug>(a: &T, b: &T) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    fn binding(name: &str) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: name.into(),
            pattern_type: PatternType::Prefixed,
            principal: "User:alice".into(),
            host: "10.0.0.1".into(),
            operation: AclOperation::Write,
            permission_type: PermissionType::Deny,
        }
    }

    #[test]
    fn config_requests_and_their_answers_survive_forwarding() {
        let incremental = ControllerRequest::IncrementalAlterConfigs {
            validate_only: true,
            resources: vec![
                IncrementalAlterConfigsResource {
                    resource_type: 2,
                    resource_name: "orders".into(),
                    configs: vec![
                        AlterableConfig {
                            name: "cleanup.policy".into(),
                            operation: 2,
                            value: Some("compact".into()),
                        },
                        AlterableConfig {
                            name: "retention.ms".into(),
                            operation: 1,
                            value: None,
                        },
                    ],
                },
                IncrementalAlterConfigsResource {
                    resource_type: 4,
                    resource_name: String::new(),
                    configs: Vec::new(),
                },
            ],
        };
        same(&round_trip(incremental.clone()), &incremental);
        let legacy = ControllerRequest::AlterConfigs {
            validate_only: false,
            resources: vec![AlterConfigsResource {
                resource_type: 32,
                resource_name: "billing".into(),
                configs: vec![
                    ("consumer.session.timeout.ms".into(), Some("50000".into())),
                    ("x".into(), None),
                ],
            }],
        };
        same(&round_trip(legacy.clone()), &legacy);

        let answer: ControllerResult = Ok(ControllerReply::AlterConfigs(vec![
            AlterConfigsResult {
                resource_type: 2,
                resource_name: "orders".into(),
                error_code: 0,
                error_message: None,
            },
            AlterConfigsResult {
                resource_type: 4,
                resource_name: String::new(),
                error_code: 40,
                error_message: Some("bad".into()),
            },
        ]));
        same(&answer_round_trip(&incremental, &answer), &answer);
        same(&answer_round_trip(&legacy, &answer), &answer);
    }

    #[test]
    fn acl_requests_and_their_answers_survive_forwarding() {
        let mut unknown = binding("t");
        unknown.operation = AclOperation::Unknown;
        let create = ControllerRequest::CreateAcls(vec![binding("orders"), unknown]);
        same(&round_trip(create.clone()), &create);
        let mut filter = AclFilter::any();
        filter.resource_name = Some("ord".into());
        filter.pattern_type = PatternType::Match;
        filter.principal = Some("User:alice".into());
        let delete = ControllerRequest::DeleteAcls(vec![filter, AclFilter::any()]);
        same(&round_trip(delete.clone()), &delete);

        let created: ControllerResult = Ok(ControllerReply::CreateAcls(vec![
            CreateAclResult {
                error_code: 0,
                error_message: None,
            },
            CreateAclResult {
                error_code: 42,
                error_message: Some("Invalid operation UNKNOWN".into()),
            },
        ]));
        same(&answer_round_trip(&create, &created), &created);
        let deleted: ControllerResult = Ok(ControllerReply::DeleteAcls(vec![
            DeleteAclsFilterResult {
                error_code: 0,
                error_message: None,
                matching_acls: vec![binding("orders"), binding("ords")],
            },
            DeleteAclsFilterResult {
                error_code: 42,
                error_message: Some("Unknown operation in the ACL filter".into()),
                matching_acls: Vec::new(),
            },
        ]));
        same(&answer_round_trip(&delete, &deleted), &deleted);
    }

    #[test]
    fn scram_and_feature_requests_and_their_answers_survive_forwarding() {
        let alter = ControllerRequest::AlterUserScramCredentials {
            deletions: vec![ScramCredentialDeletion {
                name: "bob".into(),
                mechanism: 2,
            }],
            upsertions: vec![ScramCredentialUpsertion {
                name: "alice".into(),
                mechanism: 1,
                iterations: 8192,
                salt: Bytes::from_static(b"salt"),
                salted_password: Bytes::from_static(&[7; 32]),
            }],
        };
        same(&round_trip(alter.clone()), &alter);
        let altered: ControllerResult = Ok(ControllerReply::AlterUserScramCredentials(vec![
            AlterScramCredentialResult {
                user: "bob".into(),
                error_code: 0,
                error_message: None,
            },
            AlterScramCredentialResult {
                user: "alice".into(),
                error_code: 67,
                error_message: Some("Too few iterations".into()),
            },
        ]));
        same(&answer_round_trip(&alter, &altered), &altered);

        let update = ControllerRequest::UpdateFeatures {
            validate_only: true,
            updates: vec![FeatureUpdate {
                feature: "metadata.version".into(),
                max_version_level: 21,
                upgrade_type: 2,
            }],
        };
        same(&round_trip(update.clone()), &update);
        let refused: ControllerResult = Ok(ControllerReply::UpdateFeatures(UpdateFeaturesResult {
            error_code: 95,
            error_message: Some("no".into()),
        }));
        same(&answer_round_trip(&update, &refused), &refused);
        // Version 0's flag is a safe downgrade.
        let mut v0 = FeatureUpdateKey::default();
        v0.feature = s("metadata.version");
        v0.max_version_level = 20;
        v0.allow_downgrade = true;
        assert_eq!(feature_update_from_kafka(&wire(v0, 0)).upgrade_type, 2);
    }

    #[test]
    fn a_request_refused_whole_answers_every_item_and_reads_back_as_refused() {
        let alter = ControllerRequest::AlterUserScramCredentials {
            deletions: vec![ScramCredentialDeletion {
                name: "zed".into(),
                mechanism: 1,
            }],
            upsertions: vec![
                ScramCredentialUpsertion {
                    name: "amy".into(),
                    mechanism: 1,
                    iterations: 8192,
                    salt: Bytes::new(),
                    salted_password: Bytes::from_static(b"x"),
                },
                ScramCredentialUpsertion {
                    name: "zed".into(),
                    mechanism: 2,
                    iterations: 8192,
                    salt: Bytes::new(),
                    salted_password: Bytes::from_static(b"x"),
                },
            ],
        };
        let not_controller: ControllerResult =
            Err(ReplyError::new(NOT_CONTROLLER, "no leader".into()));
        let ResponseKind::AlterUserScramCredentials(r) =
            response_to_kafka(ApiKey::AlterUserScramCredentials, &alter, &not_controller)
        else {
            panic!()
        };
        let users: Vec<&str> = r.results.iter().map(|u| u.user.as_str()).collect();
        assert_eq!(users, vec!["amy", "zed"], "each user once, by name");
        // NOT_CONTROLLER on every item comes back as the whole request's, to be asked again.
        let back = answer_round_trip(&alter, &not_controller);
        assert!(
            matches!(back, Err(ReplyError { code: NOT_CONTROLLER, message: m }) if m == "no leader")
        );
        let create = ControllerRequest::CreateAcls(vec![binding("a"), binding("b")]);
        let too_many: ControllerResult = Err(ReplyError::new(44, "too many".into()));
        let back = answer_round_trip(&create, &too_many).unwrap();
        let ControllerReply::CreateAcls(results) = back else {
            panic!()
        };
        assert_eq!(results.len(), 2);
        assert!(results.iter().all(|r| r.error_code == 44));
    }
}
