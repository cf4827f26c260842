//! UpdateFeatures: the update half of Kafka's `FeatureControlManager` (the bootstrap half is
//! [`Controller::activate`]).
//!
//! A request succeeds or fails whole: the first refused update answers for all of them with
//! INVALID_UPDATE_VERSION and nothing is written, as in Kafka. A level must be supported by this
//! controller ([`ControllerConfig::supported_features`]), by every registered broker and, from
//! `metadata.version` 3.7-IV0 on (when controllers register), by every registered controller; a
//! feature a node does not list is supported at level 0 only. Lowering a level needs a
//! downgrade upgrade-type and raising one an upgrade. `metadata.version` may go down only past
//! levels that did not change the metadata format (Kafka's `checkIfMetadataChanged`: a lower
//! version could not read what the newer levels wrote); Kafka has no unsafe downgrade yet and
//! neither has Samsa. Other features' levels must meet their dependencies
//! ([`ControllerConfig::feature_dependencies`]).
//!
//! `kraft.version` is the quorum's (it lives in the log's control records, KIP-853), not a
//! `FeatureLevelRecord`: it is refused here.

use kafka_protocol::ResponseError;

use super::{Controller, ControllerConfig, ControllerError, METADATA_VERSION_MINIMUM};
use crate::metadata::image::METADATA_VERSION_FEATURE;
use crate::metadata::records::{BrokerFeature, FeatureLevelRecord, MetadataRecord};
use crate::metadata::MetadataImage;

/// The quorum's own feature (KIP-853).
pub const KRAFT_VERSION_FEATURE: &str = "kraft.version";
/// KIP-890's `transaction.version`: 2 lets clients use transaction version 2 (partitions join
/// a transaction through the produce, the epoch is bumped at every commit and abort). Samsa
/// supports 0 to 2 and finalizes 2 on a new cluster, as Kafka 4.4 formats one.
pub const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";
/// The highest `transaction.version` Samsa supports.
pub const TRANSACTION_VERSION_MAX: i16 = 2;
/// KIP-932's `share.version`: 1 turns share groups on (the share-group APIs answer
/// UNSUPPORTED_VERSION below it), 2 adds their dead-letter queues (KIP-1191). Samsa supports 0
/// to 2 and finalizes 2 on a new cluster, as Kafka 4.4 formats one; a metadata log written
/// before Samsa knew the feature has none finalized, so level 0 until it is upgraded, as a
/// Kafka cluster upgraded from an older release.
pub const SHARE_VERSION_FEATURE: &str = "share.version";
/// The highest `share.version` Samsa supports.
pub const SHARE_VERSION_MAX: i16 = 2;
/// KIP-848's `group.version`: 1 turns the consumer group protocol on (ConsumerGroupHeartbeat
/// answers UNSUPPORTED_VERSION below it). Samsa supports 0 to 1 and finalizes 1 on a new
/// cluster, as Kafka 4.x formats one; a log written before Samsa knew it has level 0 until
/// `kafka-features upgrade --feature group.version=1`.
pub const GROUP_VERSION_FEATURE: &str = "group.version";
/// The highest `group.version` Samsa supports.
pub const GROUP_VERSION_MAX: i16 = 1;
/// KIP-1071's `streams.version`: 1 turns streams groups on (StreamsGroupHeartbeat and
/// StreamsGroupDescribe answer UNSUPPORTED_VERSION below it). Samsa supports 0 to 1 and
/// finalizes 1 on a new cluster, as Kafka 4.4 formats one; a log written before Samsa knew it
/// has level 0 until `kafka-features upgrade --feature streams.version=1`. (Kafka makes level 1
/// depend on a `metadata.version` newer than Samsa's records; Samsa's streams groups need no
/// metadata record of their own, so it does not.)
pub const STREAMS_VERSION_FEATURE: &str = "streams.version";
/// The highest `streams.version` Samsa supports.
pub const STREAMS_VERSION_MAX: i16 = 1;

/// The feature levels a Samsa node supports, `(name, min, max)`: what its controller accepts
/// and its broker registers with (a feature not listed is supported at level 0 only).
pub fn samsa_supported_features() -> Vec<(String, i16, i16)> {
    vec![
        (
            METADATA_VERSION_FEATURE.to_string(),
            METADATA_VERSION_MINIMUM,
            super::METADATA_VERSION_4_0_IV3,
        ),
        (GROUP_VERSION_FEATURE.to_string(), 0, GROUP_VERSION_MAX),
        (SHARE_VERSION_FEATURE.to_string(), 0, SHARE_VERSION_MAX),
        (STREAMS_VERSION_FEATURE.to_string(), 0, STREAMS_VERSION_MAX),
        (
            TRANSACTION_VERSION_FEATURE.to_string(),
            0,
            TRANSACTION_VERSION_MAX,
        ),
    ]
}
/// `metadata.version` 3.7-IV0: controllers register (KIP-919), so their support can be checked.
pub const METADATA_VERSION_CONTROLLER_REGISTRATION: i16 = 15;

/// Whether each `metadata.version` level from [`METADATA_VERSION_MINIMUM`] (3.3-IV3) to 4.0-IV3
/// changed the metadata format (Kafka's `MetadataVersion.didMetadataChange`).
const METADATA_CHANGED: [(i16, bool); 19] = [
    (7, true),   // 3.3-IV3
    (8, true),   // 3.4-IV0
    (9, false),  // 3.5-IV0
    (10, false), // 3.5-IV1
    (11, true),  // 3.5-IV2
    (12, false), // 3.6-IV0
    (13, true),  // 3.6-IV1
    (14, true),  // 3.6-IV2
    (15, true),  // 3.7-IV0
    (16, false), // 3.7-IV1
    (17, true),  // 3.7-IV2
    (18, false), // 3.7-IV3
    (19, false), // 3.7-IV4
    (20, false), // 3.8-IV0
    (21, false), // 3.9-IV0
    (22, false), // 4.0-IV0
    (23, true),  // 4.0-IV1
    (24, false), // 4.0-IV2
    (25, false), // 4.0-IV3
];

/// UpdateFeatures' upgrade types (Kafka's `FeatureUpdate.UpgradeType`). Version 0 of the request
/// has a flag instead: `allow_downgrade` is [`FeatureUpgradeType::SafeDowngrade`], else
/// [`FeatureUpgradeType::Upgrade`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureUpgradeType {
    Upgrade = 1,
    SafeDowngrade = 2,
    UnsafeDowngrade = 3,
}

impl FeatureUpgradeType {
    pub fn from_code(code: i8) -> Option<FeatureUpgradeType> {
        match code {
            1 => Some(FeatureUpgradeType::Upgrade),
            2 => Some(FeatureUpgradeType::SafeDowngrade),
            3 => Some(FeatureUpgradeType::UnsafeDowngrade),
            _ => None,
        }
    }
}

/// One update of an UpdateFeatures request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureUpdate {
    pub feature: String,
    /// The level to finalize; 0 disables a feature other than `metadata.version`.
    pub max_version_level: i16,
    /// A [`FeatureUpgradeType`] code as the request carries it (others are refused).
    pub upgrade_type: i8,
}

/// A feature level's need for another feature (Kafka's `FeatureVersion.dependencies`): setting
/// `feature` to `level` needs `requires` at `requires_level` or above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureDependency {
    pub feature: String,
    pub level: i16,
    pub requires: String,
    pub requires_level: i16,
}

/// The answer to UpdateFeatures (the response's top-level error; Kafka fills the per-feature
/// results of versions 0 and 1 with the same code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateFeaturesResult {
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl Controller {
    /// UpdateFeatures: a `FeatureLevelRecord` per update, in request order (a feature named
    /// twice takes its last level, as Kafka's map does), or none if any update is refused. With
    /// `validate_only` the answer is the same but there are no records. See the module doc for
    /// the rules.
    pub fn update_features(
        &self,
        image: &MetadataImage,
        updates: Vec<FeatureUpdate>,
        validate_only: bool,
    ) -> Result<(Vec<MetadataRecord>, UpdateFeaturesResult), ControllerError> {
        self.check_active()?;
        let mut last: Vec<FeatureUpdate> = Vec::with_capacity(updates.len());
        for u in updates {
            match last.iter_mut().find(|l| l.feature == u.feature) {
                Some(l) => *l = u,
                None => last.push(u),
            }
        }
        // What the finalized levels would be: the dependencies are checked against these.
        let current_mv = current_metadata_version(image);
        let proposed = |name: &str| -> i16 {
            last.iter()
                .find(|u| u.feature == name)
                .map(|u| u.max_version_level)
                .unwrap_or_else(|| finalized_level(image, current_mv, name))
        };
        let mut records = Vec::with_capacity(last.len());
        for u in &last {
            if let Err(message) = self.check_update(image, current_mv, u, &proposed) {
                return Ok((
                    Vec::new(),
                    UpdateFeaturesResult {
                        error_code: ResponseError::InvalidUpdateVersion.code(),
                        error_message: Some(format!(
                            "The update failed for all features since the following feature \
                             had an error: {message}"
                        )),
                    },
                ));
            }
            records.push(
                FeatureLevelRecord {
                    name: u.feature.clone(),
                    feature_level: u.max_version_level,
                    ..Default::default()
                }
                .into(),
            );
        }
        if validate_only {
            records.clear();
        }
        Ok((
            records,
            UpdateFeaturesResult {
                error_code: 0,
                error_message: None,
            },
        ))
    }

    /// Kafka's `updateFeature`, in its order.
    fn check_update(
        &self,
        image: &MetadataImage,
        current_mv: i16,
        u: &FeatureUpdate,
        proposed: &dyn Fn(&str) -> i16,
    ) -> Result<(), String> {
        let (name, level) = (u.feature.as_str(), u.max_version_level);
        let invalid = |m: &str| {
            Err(format!(
                "Invalid update version {level} for feature {name}. {m}"
            ))
        };
        let Some(upgrade_type) = FeatureUpgradeType::from_code(u.upgrade_type) else {
            return invalid("The controller does not support the given upgrade type.");
        };
        if name == KRAFT_VERSION_FEATURE {
            return invalid(
                "kraft.version is the metadata quorum's and is not changed through UpdateFeatures \
                 here.",
            );
        }
        if level < 0 {
            return invalid("A feature version cannot be less than 0.");
        }
        if let Some(reason) = self.reason_not_supported(image, current_mv, name, level) {
            return invalid(&reason);
        }
        let current = finalized_level(image, current_mv, name);
        if level < current && upgrade_type == FeatureUpgradeType::Upgrade {
            return invalid(
                "Can't downgrade the version of this feature without setting the upgrade type to \
                 either safe or unsafe downgrade.",
            );
        }
        if level > current && upgrade_type != FeatureUpgradeType::Upgrade {
            return invalid("Can't downgrade to a newer version.");
        }
        if name == METADATA_VERSION_FEATURE {
            return check_metadata_version(current, level, upgrade_type);
        }
        if !self
            .cfg
            .supported_features
            .iter()
            .any(|(n, _, _)| n == name)
        {
            return invalid("This controller does not know the feature.");
        }
        for d in &self.cfg.feature_dependencies {
            if d.feature == name && d.level == level && proposed(&d.requires) < d.requires_level {
                return invalid(&format!(
                    "{name} could not be set to {level} because it depends on {} level {}",
                    d.requires, d.requires_level
                ));
            }
        }
        Ok(())
    }

    /// Kafka's `reasonNotSupported`: this controller, then each registered broker, then (once
    /// controllers register) each other registered controller.
    fn reason_not_supported(
        &self,
        image: &MetadataImage,
        current_mv: i16,
        name: &str,
        level: i16,
    ) -> Option<String> {
        let local = self
            .cfg
            .supported_features
            .iter()
            .find(|(n, _, _)| n == name)
            .map_or((0, 0), |(_, min, max)| (*min, *max));
        let node_id = self.cfg.node_id;
        if let Some(r) = not_supported(level, &format!("Local controller {node_id}"), local) {
            return Some(r);
        }
        for b in image.brokers().values() {
            let range = range_of(&b.supported_features, name);
            if let Some(r) = not_supported(level, &format!("Broker {}", b.id), range) {
                return Some(r);
            }
        }
        // Kafka also requires every quorum voter to have registered; the voters are the
        // runtime's knowledge, not this state machine's.
        if current_mv >= METADATA_VERSION_CONTROLLER_REGISTRATION {
            for c in image.controllers().values().filter(|c| c.id != node_id) {
                let range = range_of(&c.supported_features, name);
                if let Some(r) = not_supported(level, &format!("Controller {}", c.id), range) {
                    return Some(r);
                }
            }
        }
        None
    }
}

impl ControllerConfig {
    /// Kafka's default support: `metadata.version` 3.3-IV3 to 4.0-IV3 and nothing else.
    pub(super) fn default_supported_features() -> Vec<(String, i16, i16)> {
        samsa_supported_features()
    }
}

/// The `metadata.version` the image finalized. Every active controller has written one
/// ([`Controller::activate`]); Kafka's oldest is assumed otherwise.
fn current_metadata_version(image: &MetadataImage) -> i16 {
    image.metadata_version().unwrap_or(METADATA_VERSION_MINIMUM)
}

fn finalized_level(image: &MetadataImage, current_mv: i16, name: &str) -> i16 {
    if name == METADATA_VERSION_FEATURE {
        current_mv
    } else {
        image.features().get(name).copied().unwrap_or(0)
    }
}

/// A node's range for `name`; one it does not list is Kafka's `DISABLED` (level 0 only).
fn range_of(features: &[BrokerFeature], name: &str) -> (i16, i16) {
    features
        .iter()
        .find(|f| f.name == name)
        .map_or((0, 0), |f| {
            (f.min_supported_version, f.max_supported_version)
        })
}

/// Kafka's `QuorumFeatures.reasonNotSupported`, with `VersionRange`'s way of printing a range.
fn not_supported(level: i16, who: &str, (min, max): (i16, i16)) -> Option<String> {
    if (min..=max).contains(&level) {
        return None;
    }
    if max == 0 {
        return Some(format!("{who} does not support this feature."));
    }
    let range = if min == max {
        min.to_string()
    } else if max == i16::MAX {
        format!("{min}+")
    } else {
        format!("{min}-{max}")
    };
    Some(format!("{who} only supports versions {range}"))
}

/// Kafka's `updateMetadataVersion`: a level it knows, and a downgrade only past levels that did
/// not change the metadata format.
fn check_metadata_version(
    current: i16,
    level: i16,
    upgrade_type: FeatureUpgradeType,
) -> Result<(), String> {
    let invalid = |m: &str| Err(format!("Invalid metadata.version {level}. {m}"));
    let (first, last) = (
        METADATA_CHANGED[0].0,
        METADATA_CHANGED[METADATA_CHANGED.len() - 1].0,
    );
    if !(first..=last).contains(&level) {
        return invalid(&format!("Valid versions are from {first} to {last}."));
    }
    // A downgrade (an upgrade has no level between) past a level that changed the format.
    let changed = METADATA_CHANGED
        .iter()
        .any(|&(v, changed)| changed && level < v && v <= current);
    if changed {
        // Kafka dropped "Retry using UNSAFE_DOWNGRADE" from its message until unsafe
        // downgrades exist (KAFKA-13896); Kafka 4.4 words the refusal as below.
        let reason = if upgrade_type == FeatureUpgradeType::UnsafeDowngrade {
            "Unsafe metadata downgrade is not supported in this version."
        } else {
            "Refusing to perform the requested downgrade because it might delete metadata \
             information."
        };
        return Err(format!(
            "Unsupported metadata.version downgrade from {current} to {level}. {reason}"
        ));
    }
    Ok(())
}
