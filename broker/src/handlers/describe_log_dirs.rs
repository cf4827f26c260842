//! DescribeLogDirs: the log directory with the size of each partition in it, and (v4) the
//! filesystem's total and usable bytes. ACLs: DESCRIBE on the cluster, else nothing (and
//! CLUSTER_AUTHORIZATION_FAILED from v3).

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use kafka_protocol::ResponseError;

pub fn handle(ctx: &Ctx<'_>, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    if !ctx.authorize(AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
        // No log directories; the error itself exists from v3.
        let mut resp = DescribeLogDirsResponse::default();
        if ctx.version >= 3 {
            resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        }
        return resp;
    }
    let mut wanted: Option<BTreeMap<String, Vec<i32>>> = None;
    if let Some(topics) = req.topics {
        wanted = Some(
            topics
                .into_iter()
                .map(|t| (t.topic.to_string(), t.partitions))
                .collect(),
        );
    }
    let mut result = DescribeLogDirsResult::default();
    let dir = ctx.topics().dir();
    result.log_dir = StrBytes::from_string(
        std::fs::canonicalize(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .display()
            .to_string(),
    );
    let (total, usable) = filesystem_bytes(dir).unwrap_or((-1, -1));
    result.total_bytes = total;
    result.usable_bytes = usable;
    for topic in ctx.topics().all() {
        let filter = match &wanted {
            Some(w) => match w.get(&topic.name) {
                Some(parts) => Some(parts),
                None => continue,
            },
            None => None,
        };
        let mut t = DescribeLogDirsTopic::default();
        t.name = TopicName(StrBytes::from_string(topic.name.clone()));
        for p in &topic.partitions {
            if filter.is_some_and(|f| !f.contains(&p.tp.partition)) {
                continue;
            }
            let mut dp = DescribeLogDirsPartition::default();
            dp.partition_index = p.tp.partition;
            dp.partition_size = p.with_log(|log| log.size_bytes()) as i64;
            dp.offset_lag = 0;
            t.partitions.push(dp);
        }
        // As Kafka, which lists the logs it has: a topic without one here is left out.
        if !t.partitions.is_empty() {
            result.topics.push(t);
        }
    }
    let mut resp = DescribeLogDirsResponse::default();
    resp.results.push(result);
    resp
}

fn filesystem_bytes(dir: &std::path::Path) -> Option<(i64, i64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let block = st.f_frsize as i64;
    Some((st.f_blocks as i64 * block, st.f_bavail as i64 * block))
}
