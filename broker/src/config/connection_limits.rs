//! The values of the connection limits (`max.connections.per.ip` and its overrides,
//! `max.connection.creation.rate`, their listener forms), the quota windows and the
//! replication throttle rates, checked as Kafka checks them: at start, and on a dynamic update
//! before the controller commits it.

/// Why `value` is not valid for `key` (a broker key, or a `listener.name.<l>.` one as
/// `listener_prefixed`), if it is not. Keys that are not connection limits pass.
pub fn check_value(key: &str, value: &str, listener_prefixed: bool) -> Result<(), String> {
    let number = || value.trim().parse::<i64>().unwrap_or(0);
    match key {
        // Kafka's ListenerConnectionQuota.validateReconfiguration.
        "max.connections" | "max.connection.creation.rate"
            if listener_prefixed && number() <= 0 =>
        {
            return Err(format!("Invalid {key} {}", value.trim()));
        }
        "max.connections" | "max.connection.creation.rate" if listener_prefixed => {}
        // Kafka's ConfigDef ranges (atLeast(0), atLeast(1)).
        "max.connections.per.ip" | "max.connection.creation.rate" => at_least(key, value, 0)?,
        "leader.replication.throttled.rate" | "follower.replication.throttled.rate" => {
            at_least(key, value, 0)?
        }
        "quota.window.num"
        | "quota.window.size.seconds"
        | "replication.quota.window.num"
        | "replication.quota.window.size.seconds"
        | "controller.quota.window.num"
        | "controller.quota.window.size.seconds" => at_least(key, value, 1)?,
        "max.connections.per.ip.overrides" => {
            crate::quota::connections::parse_overrides(value)?;
        }
        _ => {}
    }
    Ok(())
}

fn at_least(key: &str, value: &str, min: i64) -> Result<(), String> {
    match value.trim().parse::<i64>() {
        Ok(n) if n >= min => Ok(()),
        _ => Err(format!(
            "Invalid value {} for configuration {key}: Value must be at least {min}",
            value.trim()
        )),
    }
}

/// Kafka's cross-key rule (`KafkaConfig.validateValues`) on the effective
/// `max.connections.per.ip` and `max.connections.per.ip.overrides`: no connection from anywhere
/// unless an override lets some in is a mistake.
pub fn check_per_ip(max_connections_per_ip: i64, overrides: Option<&str>) -> Result<(), String> {
    if max_connections_per_ip == 0 && overrides.unwrap_or("").trim().is_empty() {
        return Err(
            "requirement failed: max.connections.per.ip can be set to zero only if \
                    max.connections.per.ip.overrides property is set."
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_out_of_kafkas_ranges_are_refused() {
        assert!(check_value("max.connections.per.ip", "0", false).is_ok());
        assert_eq!(
            check_value("leader.replication.throttled.rate", "-1", false).unwrap_err(),
            "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"
        );
        assert!(check_value("follower.replication.throttled.rate", "0", false).is_ok());
        let e = check_value("max.connections.per.ip", "-1", false).unwrap_err();
        assert_eq!(
            e,
            "Invalid value -1 for configuration max.connections.per.ip: Value must be at least 0"
        );
        assert!(check_value("quota.window.num", "0", false).is_err());
        assert_eq!(
            check_value("max.connections", "0", true).unwrap_err(),
            "Invalid max.connections 0"
        );
        assert!(check_value("max.connection.creation.rate", "0", false).is_ok());
        assert!(check_value("max.connection.creation.rate", "0", true).is_err());
        assert!(check_value("max.connections.per.ip.overrides", "a:1,b", false).is_err());
        assert!(check_value("max.connections.per.ip.overrides", "a:1,b:2", false).is_ok());
    }
}
