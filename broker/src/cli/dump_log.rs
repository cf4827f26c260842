//! `samsa dump-log PATH`: the batches (and with `--records`, the records) of a segment file,
//! with offsets, timestamps, producer ids and a CRC-32C check of every batch — the job of
//! Kafka's `kafka-dump-log.sh`. Reads the file only; no broker is needed.
//!
//! The exit code is 1 when any batch fails its check or the file ends in a torn batch, so a
//! script can verify a segment with it.

use std::path::PathBuf;

use samsa_storage::batch::{self, Compression};
use serde_json::json;

use super::output::{emit, format_ms, Format, Table};
use super::records::{self, show};
use super::Global;

#[derive(Debug, clap::Args)]
pub struct DumpLogArgs {
    /// A segment file (`<topic>-<partition>/<base offset>.log`).
    pub path: PathBuf,
    /// Also print every record (Kafka's --print-data-log).
    #[arg(long, visible_alias = "print-data-log")]
    pub records: bool,
}

/// Largest segment read at once; Kafka's segments are at most 1 GiB by default.
const SEGMENT_BYTES_MAX: u64 = 4 * 1024 * 1024 * 1024;

fn codec_name(c: Option<Compression>) -> &'static str {
    match c {
        Some(Compression::None) => "none",
        Some(Compression::Gzip) => "gzip",
        Some(Compression::Snappy) => "snappy",
        Some(Compression::Lz4) => "lz4",
        Some(Compression::Zstd) => "zstd",
        None => "unknown",
    }
}

pub fn run(global: &Global, args: &DumpLogArgs) -> anyhow::Result<()> {
    let path = &args.path;
    // Kafka's segment directory also holds .index, .timeindex and .snapshot files, which are
    // not record batches: say so rather than report them as corrupt.
    if path.extension().is_some_and(|e| e != "log") {
        anyhow::bail!(
            "{} is not a segment file: dump-log reads <base offset>.log files",
            path.display()
        );
    }
    let meta = std::fs::metadata(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    if meta.len() > SEGMENT_BYTES_MAX {
        anyhow::bail!(
            "{} is {} bytes, above the {SEGMENT_BYTES_MAX}-byte limit for a segment",
            path.display(),
            meta.len()
        );
    }
    let data =
        std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut batches = Vec::new();
    let mut record_rows = Vec::new();
    let mut invalid = 0usize;
    let mut it = batch::batches(&data);
    let mut tail_error = None;
    loop {
        let position = it.position();
        let Some(next) = it.next() else { break };
        let b = match next {
            Ok(b) => b,
            Err(e) => {
                tail_error = Some(format!("at position {position}: {e}"));
                break;
            }
        };
        let h = *b.header();
        let check = b.validate_integrity();
        let valid = check.is_ok();
        if !valid {
            invalid += 1;
        }
        let mut recs = Vec::new();
        let mut record_error = None;
        if args.records && valid && !h.is_control() {
            match records::decode(&b) {
                Ok(r) => recs = r,
                Err(e) => record_error = Some(e),
            }
        }
        for r in &recs {
            record_rows.push(r.clone());
        }
        batches.push(json!({
            "base_offset": h.base_offset,
            "last_offset": h.last_offset(),
            "count": h.record_count,
            "position": position,
            "size": h.size_bytes(),
            "magic": h.magic,
            "partition_leader_epoch": h.partition_leader_epoch,
            "base_timestamp": h.base_timestamp,
            "max_timestamp": h.max_timestamp,
            "timestamp_type": if h.is_log_append_time() { "LogAppendTime" } else { "CreateTime" },
            "producer_id": h.producer_id,
            "producer_epoch": h.producer_epoch,
            "base_sequence": h.base_sequence,
            "last_sequence": h.last_sequence(),
            "compression": codec_name(h.compression()),
            "transactional": h.is_transactional(),
            "control": h.is_control(),
            "crc": h.crc,
            "computed_crc": b.compute_crc(),
            "valid": valid,
            "error": check.err().map(|e| e.to_string()).or(record_error),
            "records": args.records.then(|| recs.iter().map(|r| records::to_json(None, None, r)).collect::<Vec<_>>()),
        }));
    }
    let value = json!({
        "path": path.display().to_string(),
        "size": data.len(),
        "batches": batches,
        "invalid_batches": invalid,
        "tail_error": tail_error,
    });
    if global.format == Format::Json {
        emit(global.format, &value, String::new);
    } else {
        emit(global.format, &value, || {
            render(path, &batches, &record_rows, args.records)
        });
    }
    if invalid > 0 || tail_error.is_some() {
        let mut problems = Vec::new();
        if invalid > 0 {
            problems.push(format!("{invalid} batch(es) failed the CRC/format check"));
        }
        if let Some(t) = &tail_error {
            problems.push(format!("torn or corrupt data {t}"));
        }
        anyhow::bail!(
            "{}: {}; the broker truncates such a tail on recovery",
            path.display(),
            problems.join("; ")
        );
    }
    Ok(())
}

fn render(
    path: &std::path::Path,
    batches: &[serde_json::Value],
    records: &[records::Record],
    with_records: bool,
) -> String {
    let mut out = format!("dumping {}\n", path.display());
    let mut t = Table::new(&[
        "BASE-OFFSET",
        "LAST-OFFSET",
        "COUNT",
        "POSITION",
        "SIZE",
        "MAX-TIMESTAMP",
        "PRODUCER-ID",
        "EPOCH",
        "BASE-SEQ",
        "CODEC",
        "FLAGS",
        "CRC",
        "VALID",
    ]);
    for b in batches {
        let mut flags = Vec::new();
        if b["transactional"] == true {
            flags.push("txn");
        }
        if b["control"] == true {
            flags.push("control");
        }
        if b["timestamp_type"] == "LogAppendTime" {
            flags.push("append-time");
        }
        let valid = if b["valid"] == true {
            "yes".to_string()
        } else {
            format!("NO: {}", b["error"].as_str().unwrap_or(""))
        };
        t.row(vec![
            b["base_offset"].to_string(),
            b["last_offset"].to_string(),
            b["count"].to_string(),
            b["position"].to_string(),
            b["size"].to_string(),
            format_ms(b["max_timestamp"].as_i64().unwrap_or(-1)),
            b["producer_id"].to_string(),
            b["producer_epoch"].to_string(),
            b["base_sequence"].to_string(),
            b["compression"].as_str().unwrap_or("").to_string(),
            if flags.is_empty() {
                "-".into()
            } else {
                flags.join(",")
            },
            format!("{:#010x}", b["crc"].as_u64().unwrap_or(0)),
            valid,
        ]);
    }
    out.push_str(&t.render());
    if with_records {
        out.push('\n');
        let mut t = Table::new(&["OFFSET", "TIMESTAMP", "KEY", "VALUE", "HEADERS"]);
        for r in records {
            let headers: Vec<String> = r
                .headers
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_deref().map(show).unwrap_or_default()))
                .collect();
            t.row(vec![
                r.offset.to_string(),
                format_ms(r.timestamp),
                r.key.as_deref().map(show).unwrap_or_else(|| "null".into()),
                r.value
                    .as_deref()
                    .map(show)
                    .unwrap_or_else(|| "null".into()),
                headers.join(","),
            ]);
        }
        out.push_str(&t.render());
    }
    out
}
