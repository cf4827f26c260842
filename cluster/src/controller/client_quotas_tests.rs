//! AlterClientQuotas and DescribeClientQuotas rules, as Kafka 4.4's `ClientQuotaControlManager`
//! and `ClientQuotasImage` decide them.

use kafka_protocol::ResponseError;

use super::tests::{cfg, Harness};
use super::*;
use crate::metadata::records::*;

fn entity(parts: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    parts
        .iter()
        .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
        .collect()
}

fn set(key: &str, value: f64) -> ClientQuotaOp {
    ClientQuotaOp {
        key: key.into(),
        value,
        remove: false,
    }
}

fn remove(key: &str) -> ClientQuotaOp {
    ClientQuotaOp {
        key: key.into(),
        value: 0.0,
        remove: true,
    }
}

fn alteration(parts: &[(&str, Option<&str>)], ops: Vec<ClientQuotaOp>) -> ClientQuotaAlteration {
    ClientQuotaAlteration {
        entity: entity(parts),
        ops,
    }
}

/// Runs AlterClientQuotas, applies its records, and gives each result as (code, message).
fn alter(
    h: &mut Harness,
    alterations: &[ClientQuotaAlteration],
) -> (Vec<MetadataRecord>, Vec<(i16, Option<String>)>) {
    let (records, results) = h
        .ctl
        .alter_client_quotas(&h.image, alterations, false)
        .unwrap();
    h.apply(&records);
    let outcomes = results
        .into_iter()
        .map(|r| (r.error_code, r.error_message))
        .collect();
    (records, outcomes)
}

const INVALID: i16 = 42;

fn refused(h: &mut Harness, a: ClientQuotaAlteration) -> String {
    let (records, results) = alter(h, &[a]);
    assert!(records.is_empty(), "a refused entity writes nothing");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, INVALID, "{:?}", results[0].1);
    results[0].1.clone().unwrap()
}

#[test]
fn quotas_are_set_changed_and_removed_with_only_changes_written() {
    let mut h = Harness::new(cfg());
    let alice = [("user", Some("alice"))];
    let (records, results) = alter(
        &mut h,
        &[alteration(
            &alice,
            vec![
                set(PRODUCER_BYTE_RATE, 1024.0),
                set(REQUEST_PERCENTAGE, 12.5),
            ],
        )],
    );
    assert_eq!(results, vec![(0, None)]);
    assert_eq!(records.len(), 2);
    // The same values again write nothing; a removal of what is not set writes nothing.
    let (records, results) = alter(
        &mut h,
        &[alteration(
            &alice,
            vec![set(PRODUCER_BYTE_RATE, 1024.0), remove(CONSUMER_BYTE_RATE)],
        )],
    );
    assert_eq!((records.len(), results), (0, vec![(0, None)]));
    let (records, _) = alter(
        &mut h,
        &[alteration(
            &alice,
            vec![remove(PRODUCER_BYTE_RATE), remove(REQUEST_PERCENTAGE)],
        )],
    );
    assert_eq!(records.len(), 2);
    assert!(h.image.client_quotas().is_empty());
}

#[test]
fn entity_types_and_combinations_are_kafkas() {
    let mut h = Harness::new(cfg());
    let ok = |h: &mut Harness, parts: &[(&str, Option<&str>)], key: &str| {
        let (_, results) = alter(h, &[alteration(parts, vec![set(key, 100.0)])]);
        assert_eq!(results, vec![(0, None)], "{parts:?}");
    };
    ok(
        &mut h,
        &[("user", Some("a")), ("client-id", None)],
        PRODUCER_BYTE_RATE,
    );
    ok(&mut h, &[("user", None)], CONTROLLER_MUTATION_RATE);
    ok(&mut h, &[("client-id", Some("c"))], CONSUMER_BYTE_RATE);
    ok(
        &mut h,
        &[("ip", Some("10.1.2.3"))],
        CONNECTION_CREATION_RATE,
    );
    ok(&mut h, &[("ip", None)], CONNECTION_CREATION_RATE);
    ok(&mut h, &[("ip", Some("::1"))], CONNECTION_CREATION_RATE);
    assert_eq!(
        refused(&mut h, alteration(&[], vec![set(PRODUCER_BYTE_RATE, 1.0)])),
        "Invalid empty client quota entity"
    );
    assert_eq!(
        refused(
            &mut h,
            alteration(&[("group", Some("g"))], vec![set(PRODUCER_BYTE_RATE, 1.0)])
        ),
        "Unhandled client quota entity type: group"
    );
    assert_eq!(
        refused(
            &mut h,
            alteration(&[("user", Some(""))], vec![set(PRODUCER_BYTE_RATE, 1.0)])
        ),
        "Empty user not supported"
    );
    assert_eq!(
        refused(
            &mut h,
            alteration(
                &[("ip", Some("10.0.0.1")), ("user", Some("a"))],
                vec![set(CONNECTION_CREATION_RATE, 1.0)]
            )
        ),
        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
    );
    assert_eq!(
        refused(
            &mut h,
            alteration(
                &[("ip", Some("not an address"))],
                vec![set(CONNECTION_CREATION_RATE, 1.0)]
            )
        ),
        "not an address is not a valid IP or resolvable host."
    );
    assert_eq!(
        refused(
            &mut h,
            alteration(
                &[("user", Some("a")), ("user", Some("b"))],
                vec![set(PRODUCER_BYTE_RATE, 1.0)]
            )
        ),
        "Invalid client quota entity, duplicate entity entry user"
    );
    // Keys belong to entity types.
    assert_eq!(
        refused(
            &mut h,
            alteration(&[("ip", None)], vec![set(PRODUCER_BYTE_RATE, 1.0)])
        ),
        "Invalid configuration key producer_byte_rate"
    );
    assert_eq!(
        refused(
            &mut h,
            alteration(&[("user", None)], vec![set(CONNECTION_CREATION_RATE, 1.0)])
        ),
        "Invalid configuration key connection_creation_rate"
    );
}

#[test]
fn values_must_be_positive_finite_and_whole_where_the_key_is_integral() {
    let mut h = Harness::new(cfg());
    let user = [("user", Some("u"))];
    let message =
        |h: &mut Harness, key: &str, v: f64| refused(h, alteration(&user, vec![set(key, v)]));
    assert_eq!(
        message(&mut h, PRODUCER_BYTE_RATE, -5.0),
        "Quota producer_byte_rate must be greater than 0"
    );
    assert_eq!(
        message(&mut h, REQUEST_PERCENTAGE, 0.0),
        "Quota request_percentage must be greater than 0"
    );
    assert_eq!(
        message(&mut h, CONSUMER_BYTE_RATE, f64::INFINITY),
        "Quota consumer_byte_rate must be a finite number"
    );
    assert_eq!(
        message(&mut h, PRODUCER_BYTE_RATE, 1.5),
        "producer_byte_rate cannot be a fractional value."
    );
    assert_eq!(
        message(&mut h, PRODUCER_BYTE_RATE, 1e19),
        "Proposed value for producer_byte_rate is too large for a LONG."
    );
    assert_eq!(
        refused(
            &mut h,
            alteration(&[("ip", None)], vec![set(CONNECTION_CREATION_RATE, 3e9)])
        ),
        "Proposed value for connection_creation_rate is too large for an INT."
    );
    // A fraction is fine where the key is a double; an entity refused for one key writes
    // none of its others.
    let (_, results) = alter(
        &mut h,
        &[alteration(&user, vec![set(REQUEST_PERCENTAGE, 0.5)])],
    );
    assert_eq!(results, vec![(0, None)]);
    let msg = refused(
        &mut h,
        alteration(
            &user,
            vec![
                set(CONSUMER_BYTE_RATE, 100.0),
                set(PRODUCER_BYTE_RATE, -1.0),
            ],
        ),
    );
    assert!(msg.contains("greater than 0"), "{msg}");
    assert_eq!(h.image.client_quotas().values().next().unwrap().len(), 1);
}

#[test]
fn duplicates_are_refused_after_what_the_first_entry_wrote_and_answered_once() {
    let mut h = Harness::new(cfg());
    let (records, results) = alter(
        &mut h,
        &[
            alteration(&[("user", Some("a"))], vec![set(PRODUCER_BYTE_RATE, 10.0)]),
            alteration(
                &[("client-id", Some("c"))],
                vec![set(PRODUCER_BYTE_RATE, 10.0)],
            ),
            alteration(&[("user", Some("a"))], vec![set(PRODUCER_BYTE_RATE, 20.0)]),
            alteration(
                &[("user", Some("b"))],
                vec![set(PRODUCER_BYTE_RATE, 1.0), set(PRODUCER_BYTE_RATE, 2.0)],
            ),
        ],
    );
    assert_eq!(records.len(), 2, "the first 'a' and 'c'");
    assert_eq!(results.len(), 3, "one answer per entity");
    assert_eq!(results[0].0, INVALID);
    assert_eq!(
        results[0].1.as_deref(),
        Some("Ignoring duplicate entity ClientQuotaEntity(entries={user=a})")
    );
    assert_eq!(results[1], (0, None));
    assert_eq!(results[2].0, INVALID);
}

#[test]
fn validate_only_decides_the_same_and_writes_nothing() {
    let h = Harness::new(cfg());
    let a = [
        alteration(&[("user", None)], vec![set(PRODUCER_BYTE_RATE, 10.0)]),
        alteration(&[("user", None), ("ip", None)], vec![]),
    ];
    let (records, results) = h.ctl.alter_client_quotas(&h.image, &a, true).unwrap();
    assert!(records.is_empty());
    assert_eq!(results[0].error_code, 0);
    assert_eq!(results[1].error_code, INVALID);
}

fn filter(t: &str, match_type: i8, m: Option<&str>) -> ClientQuotaFilterComponent {
    ClientQuotaFilterComponent {
        entity_type: t.into(),
        match_type,
        r#match: m.map(str::to_string),
    }
}

fn described(h: &Harness, f: &[ClientQuotaFilterComponent], strict: bool) -> Vec<String> {
    describe_client_quotas(&h.image, f, strict)
        .unwrap()
        .into_iter()
        .map(|(e, _)| {
            e.iter()
                .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("<default>")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

#[test]
fn describe_filters_as_kafka_does() {
    let mut h = Harness::new(cfg());
    for parts in [
        &[("user", Some("a"))][..],
        &[("user", Some("a")), ("client-id", Some("c"))],
        &[("user", None)],
        &[("client-id", Some("c"))],
    ] {
        alter(
            &mut h,
            &[alteration(parts, vec![set(PRODUCER_BYTE_RATE, 10.0)])],
        );
    }
    alter(
        &mut h,
        &[alteration(
            &[("ip", None)],
            vec![set(CONNECTION_CREATION_RATE, 5.0)],
        )],
    );
    assert_eq!(described(&h, &[], false).len(), 5);
    assert!(described(&h, &[], true).is_empty());
    assert_eq!(
        described(&h, &[filter("user", MATCH_TYPE_EXACT, Some("a"))], false),
        vec!["client-id=c,user=a", "user=a"]
    );
    assert_eq!(
        described(&h, &[filter("user", MATCH_TYPE_EXACT, Some("a"))], true),
        vec!["user=a"]
    );
    assert_eq!(
        described(&h, &[filter("user", MATCH_TYPE_DEFAULT, None)], false),
        vec!["user=<default>"]
    );
    assert_eq!(
        described(
            &h,
            &[filter("client-id", MATCH_TYPE_SPECIFIED, None)],
            false
        ),
        vec!["client-id=c", "client-id=c,user=a"]
    );
    assert_eq!(
        described(
            &h,
            &[
                filter("client-id", MATCH_TYPE_SPECIFIED, None),
                filter("user", MATCH_TYPE_SPECIFIED, None)
            ],
            true
        ),
        vec!["client-id=c,user=a"]
    );
    let error = |f: &[ClientQuotaFilterComponent]| describe_client_quotas(&h.image, f, false);
    let invalid = ResponseError::InvalidRequest.code();
    assert_eq!(
        error(&[filter("user", MATCH_TYPE_EXACT, None)]).unwrap_err(),
        (
            invalid,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.".into()
        )
    );
    assert_eq!(
        error(&[
            filter("ip", MATCH_TYPE_DEFAULT, None),
            filter("user", 2, None)
        ])
        .unwrap_err()
        .0,
        invalid
    );
    assert_eq!(
        error(&[filter("user", 2, None), filter("user", 1, None)]).unwrap_err(),
        (
            invalid,
            "Entity type user cannot appear more than once in the filter.".into()
        )
    );
    assert_eq!(
        error(&[filter("group", 2, None)]).unwrap_err(),
        (
            ResponseError::UnsupportedVersion.code(),
            "Unsupported entity type group".into()
        )
    );
    assert_eq!(
        error(&[filter("user", 7, None)]).unwrap_err(),
        (invalid, "Unknown match type 7".into())
    );
}

#[test]
fn the_largest_whole_value_of_an_integral_key_is_accepted() {
    let mut h = Harness::new(cfg());
    let (_, results) = alter(
        &mut h,
        &[
            alteration(
                &[("ip", None)],
                vec![set(CONNECTION_CREATION_RATE, 2_147_483_647.0)],
            ),
            alteration(&[("user", None)], vec![set(PRODUCER_BYTE_RATE, 9.2e18)]),
        ],
    );
    assert_eq!(results, vec![(0, None), (0, None)]);
}

#[test]
fn new_entities_stop_at_the_limit_and_existing_ones_still_change() {
    let mut h = Harness::new(cfg());
    // The image one entity short of the limit, built directly (the harness would round-trip
    // every record).
    let fill: Vec<MetadataRecord> = (0..CLIENT_QUOTA_ENTITIES_MAX - 1)
        .map(|i| {
            ClientQuotaRecord {
                entity: vec![ClientQuotaEntityData {
                    entity_type: "client-id".into(),
                    entity_name: Some(format!("c{i}")),
                }],
                key: PRODUCER_BYTE_RATE.into(),
                value: 1.0,
                ..Default::default()
            }
            .into()
        })
        .collect();
    h.image = h.image.with_records(&fill).unwrap();
    let (records, results) = alter(
        &mut h,
        &[
            alteration(&[("user", Some("a"))], vec![set(PRODUCER_BYTE_RATE, 1.0)]),
            alteration(&[("user", Some("b"))], vec![set(PRODUCER_BYTE_RATE, 1.0)]),
            alteration(
                &[("client-id", Some("c7"))],
                vec![set(PRODUCER_BYTE_RATE, 2.0)],
            ),
            // Removing from an entity that does not exist is no new entity.
            alteration(&[("user", Some("d"))], vec![remove(PRODUCER_BYTE_RATE)]),
        ],
    );
    assert_eq!(results[0], (0, None), "the last place is taken");
    assert_eq!(
        results[1].0,
        ResponseError::PolicyViolation.code(),
        "{:?}",
        results[1]
    );
    assert_eq!(results[2], (0, None), "an existing entity still changes");
    assert_eq!(results[3], (0, None));
    assert_eq!(records.len(), 2);
    assert_eq!(h.image.client_quotas().len(), CLIENT_QUOTA_ENTITIES_MAX);
}
