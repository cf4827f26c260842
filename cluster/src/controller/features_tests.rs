//! UpdateFeatures rules.

use kafka_protocol::ResponseError;

use super::features::KRAFT_VERSION_FEATURE;
use super::tests::{cfg, registration, Harness};
use super::*;
use crate::metadata::records::*;

const GROUP_VERSION: &str = "group.version";

/// A controller (node 1) at `metadata_version` that supports `metadata.version` up to 4.0-IV3
/// and `group.version` 0-1, with no brokers.
fn controller_at(metadata_version: i16) -> Harness {
    let mut c = cfg();
    c.node_id = 1;
    c.bootstrap_metadata_version = metadata_version;
    c.supported_features.push((GROUP_VERSION.to_string(), 0, 1));
    Harness::new(c)
}

/// Registers `broker` supporting these `(feature, min, max)`.
fn register_broker(h: &mut Harness, broker: NodeId, features: &[(&str, i16, i16)]) {
    let mut req = registration(broker, 1);
    req.features = features
        .iter()
        .map(|(name, min, max)| BrokerFeature {
            name: name.to_string(),
            min_supported_version: *min,
            max_supported_version: *max,
            ..Default::default()
        })
        .collect();
    h.register(req).unwrap();
}

fn update(feature: &str, level: i16, upgrade_type: FeatureUpgradeType) -> FeatureUpdate {
    FeatureUpdate {
        feature: feature.into(),
        max_version_level: level,
        upgrade_type: upgrade_type as i8,
    }
}

fn upgrade(feature: &str, level: i16) -> FeatureUpdate {
    update(feature, level, FeatureUpgradeType::Upgrade)
}

/// Runs UpdateFeatures and applies its records.
fn run(
    h: &mut Harness,
    updates: Vec<FeatureUpdate>,
) -> (Vec<MetadataRecord>, UpdateFeaturesResult) {
    let (records, result) = h.ctl.update_features(&h.image, updates, false).unwrap();
    h.apply(&records);
    (records, result)
}

fn assert_ok(result: &UpdateFeaturesResult) {
    assert_eq!(
        (result.error_code, result.error_message.as_deref()),
        (0, None)
    );
}

/// The request failed whole with this message for its first refused update.
fn assert_refused(result: &UpdateFeaturesResult, message: &str) {
    assert_eq!(
        result.error_code,
        ResponseError::InvalidUpdateVersion.code(),
        "{result:?}"
    );
    assert_eq!(
        result.error_message.as_deref(),
        Some(
            format!(
                "The update failed for all features since the following feature had an error: \
                 {message}"
            )
            .as_str()
        )
    );
}

fn level(feature: &str, level: i16) -> MetadataRecord {
    FeatureLevelRecord {
        name: feature.into(),
        feature_level: level,
        ..Default::default()
    }
    .into()
}

const MV: &str = METADATA_VERSION_FEATURE;

#[test]
fn upgrading_metadata_version_writes_its_feature_level() {
    let mut h = controller_at(21);
    register_broker(&mut h, 2, &[(MV, 7, 25)]);
    let (records, result) = run(&mut h, vec![upgrade(MV, 25)]);
    assert_ok(&result);
    assert_eq!(records, vec![level(MV, 25)]);
    assert_eq!(h.image.metadata_version(), Some(25));
}

#[test]
fn lowering_a_level_needs_a_downgrade_and_raising_one_an_upgrade() {
    let mut h = controller_at(25);
    let (_, result) = run(&mut h, vec![upgrade(MV, 24)]);
    assert_refused(
        &result,
        "Invalid update version 24 for feature metadata.version. Can't downgrade the version of \
         this feature without setting the upgrade type to either safe or unsafe downgrade.",
    );
    let (records, result) = run(
        &mut h,
        vec![update(MV, 24, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_ok(&result);
    assert_eq!(records, vec![level(MV, 24)]);
    let (_, result) = run(
        &mut h,
        vec![update(MV, 25, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_refused(
        &result,
        "Invalid update version 25 for feature metadata.version. Can't downgrade to a newer \
         version.",
    );
    // The same level is no change either way, and still written, as Kafka does.
    let (records, result) = run(
        &mut h,
        vec![update(MV, 24, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_ok(&result);
    assert_eq!(records, vec![level(MV, 24)]);
}

#[test]
fn metadata_version_goes_down_only_past_levels_that_kept_the_format() {
    // 4.0-IV2 and -IV3 changed nothing; 4.0-IV1 did.
    let mut h = controller_at(25);
    for unsafe_too in [
        FeatureUpgradeType::SafeDowngrade,
        FeatureUpgradeType::UnsafeDowngrade,
    ] {
        let (records, result) = run(&mut h, vec![update(MV, 22, unsafe_too)]);
        assert!(records.is_empty());
        assert_refused(
            &result,
            if unsafe_too == FeatureUpgradeType::UnsafeDowngrade {
                "Unsupported metadata.version downgrade from 25 to 22. Unsafe metadata downgrade \
                 is not supported in this version."
            } else {
                "Unsupported metadata.version downgrade from 25 to 22. Refusing to perform the \
                 requested downgrade because it might delete metadata information."
            },
        );
    }
    let (_, result) = run(
        &mut h,
        vec![update(MV, 23, FeatureUpgradeType::UnsafeDowngrade)],
    );
    assert_ok(&result);
    assert_eq!(h.image.metadata_version(), Some(23));
    // 3.5-IV2 (11) changed the format; 3.5-IV0 and -IV1 (9, 10) did not, so from 10 the way
    // down to 3.4-IV0 (8) is safe, and from 11 no step down is.
    let mut h = controller_at(11);
    let (_, result) = run(
        &mut h,
        vec![update(MV, 10, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_eq!(
        result.error_code,
        ResponseError::InvalidUpdateVersion.code()
    );
    let mut h = controller_at(10);
    let (_, result) = run(
        &mut h,
        vec![update(MV, 8, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_ok(&result);
    let (_, result) = run(
        &mut h,
        vec![update(MV, 7, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_eq!(
        result.error_code,
        ResponseError::InvalidUpdateVersion.code()
    );
}

#[test]
fn an_unknown_metadata_version_is_refused() {
    let mut h = controller_at(25);
    h.ctl.cfg.supported_features[0].2 = 30;
    let (_, result) = run(&mut h, vec![upgrade(MV, 26)]);
    assert_refused(
        &result,
        "Invalid metadata.version 26. Valid versions are from 7 to 25.",
    );
    h.ctl.cfg.supported_features[0].1 = 1;
    let (_, result) = run(
        &mut h,
        vec![update(MV, 6, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_refused(
        &result,
        "Invalid metadata.version 6. Valid versions are from 7 to 25.",
    );
}

#[test]
fn every_registered_broker_must_support_the_level() {
    let mut h = controller_at(21);
    register_broker(&mut h, 2, &[(MV, 7, 25), (GROUP_VERSION, 0, 1)]);
    register_broker(&mut h, 3, &[(MV, 7, 21)]);
    let (records, result) = run(&mut h, vec![upgrade(MV, 22)]);
    assert!(records.is_empty());
    assert_refused(
        &result,
        "Invalid update version 22 for feature metadata.version. Broker 3 only supports versions \
         7-21",
    );
    let (_, result) = run(&mut h, vec![upgrade(GROUP_VERSION, 1)]);
    assert_refused(
        &result,
        "Invalid update version 1 for feature group.version. Broker 3 does not support this \
         feature.",
    );
    // Level 0 of a feature nobody lists is supported by everybody.
    let (records, result) = run(
        &mut h,
        vec![update(GROUP_VERSION, 0, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_ok(&result);
    assert_eq!(records, vec![level(GROUP_VERSION, 0)]);
}

#[test]
fn this_controller_must_support_and_know_the_feature() {
    let mut h = controller_at(25);
    let (_, result) = run(&mut h, vec![upgrade("eligible.leader.replicas.version", 1)]);
    assert_refused(
        &result,
        "Invalid update version 1 for feature eligible.leader.replicas.version. Local controller 1 \
         does not support this feature.",
    );
    let (_, result) = run(&mut h, vec![upgrade(GROUP_VERSION, 2)]);
    assert_refused(
        &result,
        "Invalid update version 2 for feature group.version. Local controller 1 only supports \
         versions 0-1",
    );
    let (_, result) = run(&mut h, vec![upgrade("eligible.leader.replicas.version", 0)]);
    assert_refused(
        &result,
        "Invalid update version 0 for feature eligible.leader.replicas.version. This controller \
         does not know the feature.",
    );
    h.ctl.cfg.supported_features.push(("a".into(), 3, 3));
    h.ctl.cfg.supported_features.push(("b".into(), 1, i16::MAX));
    let (_, result) = run(&mut h, vec![upgrade("a", 4)]);
    assert_refused(
        &result,
        "Invalid update version 4 for feature a. Local controller 1 only supports versions 3",
    );
    let (_, result) = run(
        &mut h,
        vec![update("b", 0, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_refused(
        &result,
        "Invalid update version 0 for feature b. Local controller 1 only supports versions 1+",
    );
}

/// `share.version` as Samsa supports it (0-2, Kafka 4.4's range): upgraded from a log without
/// it (level 0, a cluster that predates the feature), downgraded to 0 and back.
#[test]
fn share_version_goes_up_to_2_and_down_to_0() {
    let mut h = controller_at(25);
    const SV: &str = SHARE_VERSION_FEATURE;
    assert_eq!(h.image.features().get(SV), None);
    register_broker(&mut h, 2, &[(MV, 7, 25), (SV, 0, 2)]);
    let (_, result) = run(&mut h, vec![upgrade(SV, 3)]);
    assert_refused(
        &result,
        "Invalid update version 3 for feature share.version. Local controller 1 only supports \
         versions 0-2",
    );
    let (records, result) = run(&mut h, vec![upgrade(SV, 1)]);
    assert_ok(&result);
    assert_eq!(records, vec![level(SV, 1)]);
    let (records, result) = run(&mut h, vec![upgrade(SV, 2)]);
    assert_ok(&result);
    assert_eq!(records, vec![level(SV, 2)]);
    assert_eq!(h.image.features().get(SV), Some(&2));
    let (_, result) = run(&mut h, vec![upgrade(SV, 0)]);
    assert_refused(
        &result,
        "Invalid update version 0 for feature share.version. Can't downgrade the version of this \
         feature without setting the upgrade type to either safe or unsafe downgrade.",
    );
    let (records, result) = run(
        &mut h,
        vec![update(SV, 0, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_ok(&result);
    assert_eq!(records, vec![level(SV, 0)]);
    assert_eq!(h.image.features().get(SV), None);
    // A broker that does not know the feature holds it at 0.
    register_broker(&mut h, 3, &[(MV, 7, 25)]);
    let (_, result) = run(&mut h, vec![upgrade(SV, 1)]);
    assert_refused(
        &result,
        "Invalid update version 1 for feature share.version. Broker 3 does not support this \
         feature.",
    );
}

#[test]
fn registered_controllers_are_checked_once_they_register_at_3_7_iv0() {
    let controller = |id: NodeId| -> MetadataRecord {
        RegisterControllerRecord {
            controller_id: id,
            features: vec![ControllerFeature {
                name: MV.into(),
                min_supported_version: 7,
                max_supported_version: 25,
                ..Default::default()
            }],
            ..Default::default()
        }
        .into()
    };
    for (mv, refused) in [
        (METADATA_VERSION_CONTROLLER_REGISTRATION - 1, false),
        (METADATA_VERSION_CONTROLLER_REGISTRATION, true),
    ] {
        let mut h = controller_at(mv);
        // This controller's own registration is not what decides.
        h.apply(&[controller(1)]);
        let (_, result) = run(&mut h, vec![upgrade(GROUP_VERSION, 1)]);
        assert_ok(&result);
        let (_, result) = run(
            &mut h,
            vec![update(GROUP_VERSION, 0, FeatureUpgradeType::SafeDowngrade)],
        );
        assert_ok(&result);
        h.apply(&[controller(2)]);
        let (_, result) = run(&mut h, vec![upgrade(GROUP_VERSION, 1)]);
        if refused {
            assert_refused(
                &result,
                "Invalid update version 1 for feature group.version. Controller 2 does not \
                 support this feature.",
            );
        } else {
            assert_ok(&result);
        }
    }
}

#[test]
fn a_level_needs_its_dependencies_as_the_request_would_leave_them() {
    let mut h = controller_at(21);
    h.ctl.cfg.feature_dependencies.push(FeatureDependency {
        feature: GROUP_VERSION.into(),
        level: 1,
        requires: MV.into(),
        requires_level: 22,
    });
    let (_, result) = run(&mut h, vec![upgrade(GROUP_VERSION, 1)]);
    assert_refused(
        &result,
        "Invalid update version 1 for feature group.version. group.version could not be set to 1 \
         because it depends on metadata.version level 22",
    );
    let (records, result) = run(&mut h, vec![upgrade(GROUP_VERSION, 1), upgrade(MV, 22)]);
    assert_ok(&result);
    assert_eq!(records, vec![level(GROUP_VERSION, 1), level(MV, 22)]);
    assert_eq!(h.image.features().get(GROUP_VERSION), Some(&1));
    // Disabling the feature again is level 0, which the image drops.
    let (_, result) = run(
        &mut h,
        vec![update(GROUP_VERSION, 0, FeatureUpgradeType::SafeDowngrade)],
    );
    assert_ok(&result);
    assert!(h.image.features().get(GROUP_VERSION).is_none());
}

#[test]
fn one_refused_update_fails_the_whole_request() {
    let mut h = controller_at(21);
    let (records, result) = run(&mut h, vec![upgrade(MV, 22), upgrade(GROUP_VERSION, 5)]);
    assert!(records.is_empty());
    assert_eq!(
        result.error_code,
        ResponseError::InvalidUpdateVersion.code()
    );
    assert_eq!(h.image.metadata_version(), Some(21));
}

#[test]
fn malformed_updates_are_refused() {
    let mut h = controller_at(21);
    let (_, result) = run(&mut h, vec![upgrade(MV, -1)]);
    assert_refused(
        &result,
        "Invalid update version -1 for feature metadata.version. A feature version cannot be \
         less than 0.",
    );
    let mut bad_type = upgrade(MV, 22);
    bad_type.upgrade_type = 0;
    let (_, result) = run(&mut h, vec![bad_type]);
    assert_refused(
        &result,
        "Invalid update version 22 for feature metadata.version. The controller does not \
         support the given upgrade type.",
    );
    h.ctl
        .cfg
        .supported_features
        .push((KRAFT_VERSION_FEATURE.into(), 0, 1));
    let (_, result) = run(&mut h, vec![upgrade(KRAFT_VERSION_FEATURE, 1)]);
    assert_refused(
        &result,
        "Invalid update version 1 for feature kraft.version. kraft.version is the metadata \
         quorum's and is not changed through UpdateFeatures here.",
    );
}

#[test]
fn a_feature_named_twice_takes_its_last_level_and_validate_only_writes_nothing() {
    let mut h = controller_at(21);
    let updates = vec![upgrade(MV, 25), upgrade(GROUP_VERSION, 1), upgrade(MV, 22)];
    let (records, result) = h
        .ctl
        .update_features(&h.image, updates.clone(), true)
        .unwrap();
    assert_ok(&result);
    assert!(records.is_empty());
    let (records, result) = run(&mut h, updates);
    assert_ok(&result);
    assert_eq!(records, vec![level(MV, 22), level(GROUP_VERSION, 1)]);
}

#[test]
fn upgrade_types_have_kafkas_codes() {
    assert_eq!(
        FeatureUpgradeType::from_code(1),
        Some(FeatureUpgradeType::Upgrade)
    );
    assert_eq!(
        FeatureUpgradeType::from_code(2),
        Some(FeatureUpgradeType::SafeDowngrade)
    );
    assert_eq!(
        FeatureUpgradeType::from_code(3),
        Some(FeatureUpgradeType::UnsafeDowngrade)
    );
    assert_eq!(FeatureUpgradeType::from_code(0), None);
    assert_eq!(FeatureUpgradeType::from_code(4), None);
}

#[test]
fn an_inactive_controller_refuses_feature_updates() {
    let mut h = controller_at(25);
    h.ctl.deactivate();
    assert_eq!(
        h.ctl
            .update_features(&h.image, vec![upgrade(MV, 25)], false),
        Err(ControllerError::NotController)
    );
}
