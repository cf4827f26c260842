//! Small helpers with no better home.

/// Wall-clock milliseconds since the Unix epoch (Kafka timestamps).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
