//! Client quotas on the request path (KIP-13, KIP-219): the bytes a Produce or a consumer's
//! Fetch moves are recorded against the client's byte-rate quota, a client over it is told how
//! long to wait (`throttle_time_ms`, answered at once) and its connection reads nothing more
//! for that long. Shared by the Produce and Fetch handlers; without a quota in the metadata
//! image each costs one atomic load.

use kafka_protocol::messages::{RequestKind, ResponseKind};

use super::ctx::Ctx;
use crate::quota::client::{QuotaKind, Resolved};

/// A throttle time as the responses' `throttle_time_ms` carries it.
pub fn as_field(throttle_ms: i64) -> i32 {
    throttle_ms.clamp(0, i64::from(i32::MAX)) as i32
}

/// Records `value` against `r` (of `kind`) and, when that puts the client over its quota,
/// mutes the connection and counts the throttle. The throttle time in ms.
pub fn record(ctx: &Ctx<'_>, kind: QuotaKind, r: &Resolved, value: f64) -> i64 {
    let quotas = &ctx.node().client_quotas;
    let throttle_ms = quotas.record(kind, r, value, crate::util::now_ms());
    throttled(ctx, kind, r, throttle_ms);
    throttle_ms
}

/// Mutes the connection for a throttle given, and counts it.
pub fn throttled(ctx: &Ctx<'_>, kind: QuotaKind, r: &Resolved, throttle_ms: i64) {
    if throttle_ms > 0 {
        ctx.node().client_quotas.throttled(kind, r, throttle_ms);
        ctx.mute_for(throttle_ms);
    }
}

/// A consumer's Fetch ready with `bytes` of records: they count against its
/// `consumer_byte_rate`. Over the quota, they are taken back and the fetch is answered with
/// nothing and the throttle time (Kafka's fetch path): the throttle time, 0 to answer in full.
pub fn fetched(ctx: &Ctx<'_>, r: &Resolved, bytes: usize) -> i64 {
    let quotas = &ctx.node().client_quotas;
    let now_ms = crate::util::now_ms();
    let throttle_ms = quotas.record(QuotaKind::Fetch, r, bytes as f64, now_ms);
    if throttle_ms > 0 {
        quotas.unrecord(QuotaKind::Fetch, r, bytes as f64, now_ms);
        throttled(ctx, QuotaKind::Fetch, r, throttle_ms);
    }
    throttle_ms
}

/// A Produce, handled: its request bytes count against `producer_byte_rate` (Kafka's
/// `request.sizeInBytes`, whatever the outcome). The throttle time for its answer.
pub fn after_produce(ctx: &Ctx<'_>) -> i32 {
    match ctx.client_quota(QuotaKind::Produce) {
        Some(r) => as_field(record(
            ctx,
            QuotaKind::Produce,
            &r,
            ctx.conn.frame_bytes.get() as f64,
        )),
        None => 0,
    }
}

/// Requests Kafka never charges to `request_percentage`: those a client must be able to send
/// whatever its quota (ApiVersions and SASL), replication and the other inter-broker requests
/// (`ApiKeys.clusterAction`), and acks=0 produces (no answer to carry a throttle).
pub fn exempt_from_request_quota(body: &RequestKind) -> bool {
    match body {
        RequestKind::ApiVersions(_)
        | RequestKind::SaslHandshake(_)
        | RequestKind::SaslAuthenticate(_)
        | RequestKind::WriteTxnMarkers(_)
        | RequestKind::ReadShareGroupState(_)
        | RequestKind::WriteShareGroupState(_)
        | RequestKind::DeleteShareGroupState(_) => true,
        RequestKind::Fetch(r) => r.replica_id.0 >= 0 || r.replica_state.replica_id.0 >= 0,
        RequestKind::Produce(r) => r.acks == 0,
        _ => false,
    }
}

/// Charges `busy` (the time the request kept its shard busy) to the client's
/// `request_percentage` quota, as the percentage of one thread it took (Kafka's
/// `nanosToPercentage`), and puts the throttle time on the response (the larger, where a
/// byte-rate quota throttled it already).
pub fn charge_request_time(ctx: &Ctx<'_>, busy: std::time::Duration, response: &mut ResponseKind) {
    let Some(r) = ctx.client_quota(QuotaKind::Request) else {
        return;
    };
    let percent = busy.as_nanos() as f64 * 100.0 / 1e9;
    let throttle_ms = record(ctx, QuotaKind::Request, &r, percent);
    if throttle_ms > 0 {
        raise_throttle(response, as_field(throttle_ms));
    }
}

/// Sets `throttle_time_ms` of any response that has one to at least `ms`.
pub fn raise_throttle(response: &mut ResponseKind, ms: i32) {
    macro_rules! raise {
        ($($variant:ident),* $(,)?) => {
            match response {
                $(ResponseKind::$variant(r) => r.throttle_time_ms = r.throttle_time_ms.max(ms),)*
                _ => {}
            }
        };
    }
    raise!(
        AddOffsetsToTxn,
        AddPartitionsToTxn,
        AddRaftVoter,
        AlterClientQuotas,
        AlterConfigs,
        AlterPartitionReassignments,
        AlterReplicaLogDirs,
        AlterShareGroupOffsets,
        AlterUserScramCredentials,
        ApiVersions,
        ConsumerGroupDescribe,
        ConsumerGroupHeartbeat,
        CreateAcls,
        CreateDelegationToken,
        CreatePartitions,
        CreateTopics,
        DeleteAcls,
        DeleteGroups,
        DeleteRecords,
        DeleteShareGroupOffsets,
        DeleteTopics,
        DescribeAcls,
        DescribeClientQuotas,
        DescribeCluster,
        DescribeConfigs,
        DescribeDelegationToken,
        DescribeGroups,
        DescribeLogDirs,
        DescribeProducers,
        DescribeShareGroupOffsets,
        DescribeTopicPartitions,
        DescribeTransactions,
        DescribeUserScramCredentials,
        ElectLeaders,
        EndTxn,
        ExpireDelegationToken,
        Fetch,
        FindCoordinator,
        Heartbeat,
        IncrementalAlterConfigs,
        InitProducerId,
        JoinGroup,
        LeaveGroup,
        ListConfigResources,
        ListGroups,
        ListOffsets,
        ListPartitionReassignments,
        ListTransactions,
        Metadata,
        OffsetCommit,
        OffsetDelete,
        OffsetFetch,
        OffsetForLeaderEpoch,
        Produce,
        RemoveRaftVoter,
        RenewDelegationToken,
        ShareAcknowledge,
        ShareFetch,
        ShareGroupDescribe,
        ShareGroupHeartbeat,
        SyncGroup,
        TxnOffsetCommit,
        UnregisterBroker,
        UpdateFeatures,
    );
}

/// The controller mutation quota (KIP-599, `controller_mutation_rate`) of one CreateTopics,
/// CreatePartitions or DeleteTopics: partitions created or deleted count against a token
/// bucket. From the version that knows THROTTLING_QUOTA_EXCEEDED (CreateTopics 6,
/// CreatePartitions 3, DeleteTopics 5) the quota is strict: a topic asked for while the
/// bucket is below zero is refused with it, and the answer carries the throttle time. Older
/// clients are never refused: their partitions are counted and the answer is held back for the
/// throttle time (Kafka's permissive quota).
pub struct Mutations {
    quota: Option<Resolved>,
    strict: bool,
    /// The throttle time of the last refusal (strict).
    refused_ms: i64,
}

/// Kafka's message for THROTTLING_QUOTA_EXCEEDED.
pub const THROTTLING_QUOTA_EXCEEDED_MESSAGE: &str = "The throttling quota has been exceeded.";

impl Mutations {
    /// The quota of this request; `strict_since`: the first version that is refused.
    pub fn new(ctx: &Ctx<'_>, strict_since: i16) -> Mutations {
        Mutations {
            quota: ctx.client_quota(QuotaKind::ControllerMutation),
            strict: ctx.version >= strict_since,
            refused_ms: 0,
        }
    }

    /// Takes `partitions` mutations for one topic, or refuses it (strict, over the quota).
    pub fn admit(
        &mut self,
        ctx: &Ctx<'_>,
        partitions: i64,
    ) -> Result<(), (kafka_protocol::ResponseError, String)> {
        let Some(r) = &self.quota else {
            return Ok(());
        };
        let quotas = &ctx.node().client_quotas;
        let now_ms = crate::util::now_ms();
        if self.strict {
            let throttle_ms = quotas.mutation_throttle_ms(r, now_ms);
            if throttle_ms > 0 {
                self.refused_ms = throttle_ms;
                return Err((
                    kafka_protocol::ResponseError::ThrottlingQuotaExceeded,
                    THROTTLING_QUOTA_EXCEEDED_MESSAGE.into(),
                ));
            }
        }
        quotas.record_mutations(r, partitions.max(0) as f64, now_ms);
        Ok(())
    }

    /// Gives back what an admitted topic did not do (the controller refused it).
    pub fn refund(&self, ctx: &Ctx<'_>, partitions: i64) {
        if let Some(r) = &self.quota {
            let now_ms = crate::util::now_ms();
            ctx.node()
                .client_quotas
                .record_mutations(r, -(partitions.max(0) as f64), now_ms);
        }
    }

    /// The answer's throttle time: a strict refusal's; for an older client, the bucket's,
    /// waited out here before answering. The connection is muted for it either way.
    pub async fn finish(self, ctx: &Ctx<'_>) -> i32 {
        let Some(r) = &self.quota else {
            return 0;
        };
        let throttle_ms = if self.strict {
            self.refused_ms
        } else {
            ctx.node()
                .client_quotas
                .mutation_throttle_ms(r, crate::util::now_ms())
        };
        if throttle_ms > 0 {
            throttled(ctx, QuotaKind::ControllerMutation, r, throttle_ms);
            if !self.strict {
                tokio::time::sleep(std::time::Duration::from_millis(throttle_ms as u64)).await;
            }
        }
        as_field(throttle_ms)
    }
}
