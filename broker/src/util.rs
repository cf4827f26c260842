//! Small helpers with no better home.

/// Wall-clock milliseconds since the Unix epoch (Kafka timestamps).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Kafka's name for an error code (`TOPIC_ALREADY_EXISTS`), as its tools print it.
pub fn error_name(code: i16) -> String {
    match kafka_protocol::ResponseError::try_from_code(code) {
        None => "NONE".into(),
        Some(kafka_protocol::ResponseError::Unknown(c)) => format!("UNKNOWN_ERROR_CODE_{c}"),
        Some(e) => {
            let camel = format!("{e:?}");
            let mut out = String::with_capacity(camel.len() + 8);
            for (i, ch) in camel.chars().enumerate() {
                if ch.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(ch.to_ascii_uppercase());
            }
            out
        }
    }
}

/// Starts a thread named `name` running a current-thread tokio runtime, for tasks spawned
/// on the returned handle (connections to other brokers, replica fetchers). Dropping the
/// sender ends the thread.
pub fn runtime_thread(
    name: &str,
) -> std::io::Result<(tokio::runtime::Handle, tokio::sync::oneshot::Sender<()>)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let handle = rt.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            rt.block_on(async {
                let _ = stopped.await;
            })
        })?;
    Ok((handle, stop))
}
