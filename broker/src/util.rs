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

/// Runs `f` over `items` on up to `threads` scoped threads (one when there are few items) and
/// returns the results in the items' order.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    /// Items per thread below which another thread is not worth starting.
    const ITEMS_PER_THREAD_MIN: usize = 32;
    let threads = threads.clamp(1, items.len().div_ceil(ITEMS_PER_THREAD_MIN).max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return mine;
                        };
                        mine.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a parallel_map worker panicked"))
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    assert_eq!(done.len(), items.len(), "every item mapped once");
    done.into_iter().map(|(_, r)| r).collect()
}

/// Writes `dir/name` so that a crash leaves either the old or the new content.
pub fn write_atomically(dir: &std::path::Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically_with_mode(dir, name, bytes, 0o666)
}

/// [`write_atomically`] for secrets (credentials, passwords): readable by the broker's user only.
pub fn write_atomically_private(
    dir: &std::path::Path,
    name: &str,
    bytes: &[u8],
) -> std::io::Result<()> {
    write_atomically_with_mode(dir, name, bytes, 0o600)
}

fn write_atomically_with_mode(
    dir: &std::path::Path,
    name: &str,
    bytes: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = dir.join(format!("{name}.tmp"));
    // A leftover of a crash would keep its own permissions: start afresh.
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(name))?;
    std::fs::File::open(dir)?.sync_all()
}

/// A node's JSON file from before the metadata log (`None` when there is none); one that does
/// not parse is an error naming it.
pub fn read_legacy_json<T: serde::de::DeserializeOwned>(
    dir: &std::path::Path,
    file: &str,
) -> anyhow::Result<Option<T>> {
    let path = dir.join(file);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("{} is corrupt: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    }
}

#[cfg(test)]
mod parallel_map_tests {
    use super::parallel_map;

    #[test]
    fn every_item_once_in_order_on_any_thread_count() {
        let items: Vec<u64> = (0..1000).collect();
        for threads in [0, 1, 2, 8, 5000] {
            let out = parallel_map(&items, threads, |x| x * 2);
            assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        }
        assert!(parallel_map(&[] as &[u8], 4, |x| *x).is_empty());
    }
}
