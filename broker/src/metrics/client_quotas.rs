//! Client quotas on the metrics endpoint (KIP-13, KIP-55, KIP-124; Kafka's per-entity
//! `Produce`/`Fetch`/`Request` `byte-rate`, `request-time` and `throttle-time` sensors),
//! sampled at scrape time from [`ClientQuotas`]:
//!
//! - `samsa_client_quota_rate{quota,user,client_id}`: what the quota measures now, per metric
//!   entity (bytes/s for Produce and Fetch, percent of a thread for Request);
//! - `samsa_client_quota_throttle_time_ms_total{...}` and `samsa_client_quota_throttles_total`
//!   `{...}`: the throttle time given to the entity and how many times;
//! - `samsa_client_quota_kind_throttle_time_ms_total{quota}`: throttle time given per quota
//!   kind since start, exact whatever was dropped below;
//! - `samsa_client_quota_entities{quota}`: metric entities tracked now.
//!
//! A metric entity is the user and client id as far as the quota that applies names them
//! (`user=""` for a client-id quota shared by every user, `client_id=""` for a user quota), so
//! only clients under a quota appear. Client ids are arbitrary strings: the text encoder
//! escapes `\`, `"` and newlines in label values as the exposition format requires. The
//! cardinality is bounded twice: entities idle for an hour are forgotten (as Kafka expires
//! quota sensors), and at most [`ENTITY_SERIES_MAX`] entities are shown per scrape, those
//! throttled the most first, then the busiest; `samsa_client_quota_entities` says how many
//! there are in all.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::quota::client::{ClientQuotas, QuotaKind};

/// Metric entities shown per scrape at most (each is three series).
pub const ENTITY_SERIES_MAX: usize = 1_000;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EntityLabels {
    quota: &'static str,
    user: String,
    client_id: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    quota: &'static str,
}

/// Registers the client quota families of `quotas` as they are at `now_ms`.
pub fn sample(quotas: &ClientQuotas, now_ms: i64, r: &mut Registry) {
    let mut samples = quotas.samples(now_ms);
    let entities = Family::<KindLabels, Gauge>::default();
    for kind in QuotaKind::ALL {
        let n = samples.iter().filter(|s| s.kind == kind).count();
        entities
            .get_or_create(&KindLabels { quota: kind.name() })
            .set(n as i64);
    }
    if samples.len() > ENTITY_SERIES_MAX {
        samples.sort_by(|a, b| {
            (b.throttle_ms_total, b.rate)
                .partial_cmp(&(a.throttle_ms_total, a.rate))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        samples.truncate(ENTITY_SERIES_MAX);
    }
    let rate = Family::<EntityLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    let throttle_ms = Family::<EntityLabels, Counter>::default();
    let throttles = Family::<EntityLabels, Counter>::default();
    for s in &samples {
        let labels = EntityLabels {
            quota: s.kind.name(),
            user: s.user.to_string(),
            client_id: s.client_id.to_string(),
        };
        // The mutation quota is a token bucket, which has no rate to show.
        if s.kind != QuotaKind::ControllerMutation {
            // An empty sum of f64 is -0.0: shown as 0.
            rate.get_or_create(&labels).set(s.rate.max(0.0));
        }
        throttle_ms
            .get_or_create(&labels)
            .inc_by(s.throttle_ms_total);
        throttles.get_or_create(&labels).inc_by(s.throttles);
    }
    let by_kind = Family::<KindLabels, Counter>::default();
    for (kind, ms) in quotas.throttle_ms_totals() {
        by_kind
            .get_or_create(&KindLabels { quota: kind.name() })
            .inc_by(ms);
    }
    r.register(
        "client_quota_rate",
        "What a client quota measures now per metric entity (the user and client id as far as the quota applying names them): bytes/s for Produce and Fetch, percent of a thread's time for Request",
        rate,
    );
    r.register(
        "client_quota_throttle_time_ms",
        "Throttle time given to a client quota's metric entity, in ms",
        throttle_ms,
    );
    r.register(
        "client_quota_throttles",
        "Responses throttled by a client quota, per metric entity",
        throttles,
    );
    r.register(
        "client_quota_kind_throttle_time_ms",
        "Throttle time given by client quotas since start, per quota kind, in ms",
        by_kind,
    );
    r.register(
        "client_quota_entities",
        "Client quota metric entities tracked now (idle ones are forgotten after an hour), per quota kind",
        entities,
    );
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use prometheus_client::encoding::text::encode_registry;
    use samsa_cluster::controller::PRODUCER_BYTE_RATE;
    use samsa_cluster::metadata::image::{ClientQuotaEntity, QuotaValue};

    use super::*;
    use crate::quota::client::{resolve, QuotaMap};
    use crate::quota::rate::Windows;

    /// A default client-id produce quota: every client id is its own metric entity.
    fn per_client_id(bound: f64) -> QuotaMap {
        let e: ClientQuotaEntity = [("client-id".to_string(), None)].into_iter().collect();
        let q: BTreeMap<String, QuotaValue> = [(PRODUCER_BYTE_RATE.to_string(), QuotaValue(bound))]
            .into_iter()
            .collect();
        [(e, q)].into_iter().collect()
    }

    fn render(cq: &ClientQuotas, now_ms: i64) -> String {
        let mut r = Registry::with_prefix("samsa");
        sample(cq, now_ms, &mut r);
        let mut out = String::new();
        encode_registry(&mut out, &r).unwrap();
        out
    }

    #[test]
    fn a_throttled_entity_shows_its_throttle_with_its_client_id_escaped() {
        let q = per_client_id(1_000.0);
        let cq = ClientQuotas::new(Windows::KAFKA_DEFAULT, Windows::KAFKA_DEFAULT);
        let id = "app \"blue\"\\\nnext";
        let r = resolve(&q, QuotaKind::Produce, "alice", id).unwrap();
        let throttle = cq.record(QuotaKind::Produce, &r, 20_000.0, 0);
        assert!(throttle > 0);
        cq.throttled(QuotaKind::Produce, &r, throttle);
        let text = render(&cq, 0);
        // A client-id quota is shared by every user: the user label is empty.
        let labels = r#"{quota="Produce",user="",client_id="app \"blue\"\\\nnext"}"#;
        assert!(
            text.contains(&format!(
                "samsa_client_quota_throttle_time_ms_total{labels} {throttle}\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!("samsa_client_quota_throttles_total{labels} 1\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("samsa_client_quota_rate{labels} ")),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "samsa_client_quota_kind_throttle_time_ms_total{{quota=\"Produce\"}} {throttle}\n"
            )),
            "{text}"
        );
        assert!(text.contains("samsa_client_quota_entities{quota=\"Produce\"} 1\n"));
        assert!(text.contains("samsa_client_quota_entities{quota=\"Fetch\"} 0\n"));
        // Every sample line stays on one line: the newline in the id is escaped.
        assert!(text
            .lines()
            .all(|l| l.starts_with('#') || l.starts_with("samsa_")));
    }

    #[test]
    fn at_most_entity_series_max_entities_are_shown_the_throttled_first() {
        let q = per_client_id(1e12);
        let cq = ClientQuotas::new(Windows::KAFKA_DEFAULT, Windows::KAFKA_DEFAULT);
        for i in 0..ENTITY_SERIES_MAX + 10 {
            let r = resolve(&q, QuotaKind::Produce, "u", &format!("c{i}")).unwrap();
            cq.record(QuotaKind::Produce, &r, 1.0, 0);
        }
        let hot = resolve(&q, QuotaKind::Produce, "u", "zz-hot").unwrap();
        cq.record(QuotaKind::Produce, &hot, 1.0, 0);
        cq.throttled(QuotaKind::Produce, &hot, 250);
        let text = render(&cq, 0);
        let shown = text
            .lines()
            .filter(|l| l.starts_with("samsa_client_quota_throttles_total{"))
            .count();
        assert_eq!(shown, ENTITY_SERIES_MAX);
        assert!(
            text.contains("client_id=\"zz-hot\"} 250\n"),
            "the throttled entity stays"
        );
        let all = ENTITY_SERIES_MAX + 11;
        assert!(text.contains(&format!(
            "samsa_client_quota_entities{{quota=\"Produce\"}} {all}\n"
        )));
        // Idle for an hour: forgotten, while the per-kind total stays.
        let later = render(&cq, 3_600_000);
        assert!(!later.contains("zz-hot"));
        assert!(later
            .contains("samsa_client_quota_kind_throttle_time_ms_total{quota=\"Produce\"} 250\n"));
    }
}
