//! The error codes a response carries, for the per-API error counters. Like Kafka's
//! `AbstractResponse.errorCounts`, a response counts once per partition, resource or group
//! that failed, so one bad partition in a large fetch counts once, not as a failed request.

use kafka_protocol::messages::ResponseKind;

/// Calls `f` with every non-zero error code in `response`.
pub fn for_each_error(response: &ResponseKind, mut f: impl FnMut(i16)) {
    let mut e = |code: i16| {
        if code != 0 {
            f(code)
        }
    };
    match response {
        ResponseKind::Produce(r) => r
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .for_each(|p| e(p.error_code)),
        ResponseKind::Fetch(r) => {
            e(r.error_code);
            r.responses
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| e(p.error_code));
        }
        ResponseKind::ListOffsets(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| e(p.error_code)),
        ResponseKind::Metadata(r) => {
            e(r.error_code);
            for t in &r.topics {
                e(t.error_code);
                t.partitions.iter().for_each(|p| e(p.error_code));
            }
        }
        ResponseKind::ApiVersions(r) => e(r.error_code),
        ResponseKind::CreateTopics(r) => r.topics.iter().for_each(|t| e(t.error_code)),
        ResponseKind::DeleteTopics(r) => r.responses.iter().for_each(|t| e(t.error_code)),
        ResponseKind::DeleteRecords(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| e(p.error_code)),
        ResponseKind::OffsetForLeaderEpoch(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| e(p.error_code)),
        ResponseKind::DescribeConfigs(r) => r.results.iter().for_each(|x| e(x.error_code)),
        ResponseKind::AlterConfigs(r) => r.responses.iter().for_each(|x| e(x.error_code)),
        ResponseKind::IncrementalAlterConfigs(r) => {
            r.responses.iter().for_each(|x| e(x.error_code))
        }
        ResponseKind::DescribeLogDirs(r) => {
            e(r.error_code);
            r.results.iter().for_each(|x| e(x.error_code));
        }
        ResponseKind::CreatePartitions(r) => r.results.iter().for_each(|x| e(x.error_code)),
        ResponseKind::DescribeCluster(r) => e(r.error_code),
        ResponseKind::DescribeQuorum(r) => {
            e(r.error_code);
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| e(p.error_code));
        }
        ResponseKind::FindCoordinator(r) => {
            e(r.error_code);
            r.coordinators.iter().for_each(|c| e(c.error_code));
        }
        ResponseKind::JoinGroup(r) => e(r.error_code),
        ResponseKind::SyncGroup(r) => e(r.error_code),
        ResponseKind::Heartbeat(r) => e(r.error_code),
        ResponseKind::LeaveGroup(r) => {
            e(r.error_code);
            r.members.iter().for_each(|m| e(m.error_code));
        }
        ResponseKind::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| e(p.error_code)),
        ResponseKind::OffsetFetch(r) => {
            e(r.error_code);
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| e(p.error_code));
            for g in &r.groups {
                e(g.error_code);
                g.topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .for_each(|p| e(p.error_code));
            }
        }
        ResponseKind::DescribeGroups(r) => r.groups.iter().for_each(|g| e(g.error_code)),
        ResponseKind::ListGroups(r) => e(r.error_code),
        ResponseKind::DeleteGroups(r) => r.results.iter().for_each(|g| e(g.error_code)),
        ResponseKind::OffsetDelete(r) => {
            e(r.error_code);
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| e(p.error_code));
        }
        ResponseKind::InitProducerId(r) => e(r.error_code),
        // APIs Samsa does not serve yet count requests and latency only.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::produce_response::{
        PartitionProduceResponse, TopicProduceResponse,
    };
    use kafka_protocol::messages::ProduceResponse;

    #[test]
    fn counts_each_failed_partition_and_skips_successes() {
        let mut t = TopicProduceResponse::default();
        for code in [0, 3, 3, 10] {
            let mut p = PartitionProduceResponse::default();
            p.error_code = code;
            t.partition_responses.push(p);
        }
        let mut r = ProduceResponse::default();
        r.responses.push(t);
        let mut seen = Vec::new();
        for_each_error(&ResponseKind::Produce(r), |c| seen.push(c));
        assert_eq!(seen, vec![3, 3, 10]);
    }
}
