//! `samsa dump-log PATH`: the batches (and with `--records`, the records) of a segment file or
//! a KRaft snapshot (`<end offset>-<epoch>.checkpoint`, record batches like a segment), with
//! offsets, timestamps, producer ids, the type of each control batch's records (transaction
//! markers, KRaft's LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion, KRaftVoters)
//! and a CRC-32C check of every batch — the job of Kafka's `kafka-dump-log.sh`. Reads the
//! file only; no broker is needed.
//!
//! The exit code is 1 when any batch fails its check or the file ends in a torn batch, so a
//! script can verify a segment with it.

use std::path::PathBuf;

use samsa_cluster::quorum::ControlType;
use samsa_storage::batch::{self, Compression};
use serde_json::json;

use super::global::Global;
use super::output::{emit, format_ms, Format, Table};
use super::records::{self, show};

#[derive(Debug, clap::Args)]
pub struct DumpLogArgs {
    /// A segment file (`<topic>-<partition>/<base offset>.log`) or a KRaft snapshot
    /// (`__cluster_metadata-0/<end offset>-<epoch>.checkpoint`).
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

/// The name of a control record's type, from its key (Kafka's `ControlRecordType`).
fn control_type_name(key: Option<&[u8]>) -> String {
    let Some(key) = key else {
        return "NoKey".into();
    };
    if let Some(t) = ControlType::from_key(key) {
        return format!("{t:?}");
    }
    match key {
        [0, 0, 0, 0] => "Abort".into(),
        [0, 0, 0, 1] => "Commit".into(),
        [_, _, a, b, ..] => format!("Unknown({})", i16::from_be_bytes([*a, *b])),
        _ => "Unknown".into(),
    }
}

/// What a dump found: the JSON value, the data records (for the table) and the problems.
struct Dump {
    value: serde_json::Value,
    batches: Vec<serde_json::Value>,
    records: Vec<records::Record>,
    problems: Vec<String>,
}

pub fn run(global: &Global, args: &DumpLogArgs) -> anyhow::Result<()> {
    let path = &args.path;
    let d = dump(path, args.records)?;
    if global.format == Format::Json {
        emit(global.format, &d.value, String::new);
    } else {
        emit(global.format, &d.value, || {
            render(path, &d.batches, &d.records, args.records)
        });
    }
    if !d.problems.is_empty() {
        anyhow::bail!(
            "{}: {}; the broker truncates such a tail on recovery",
            path.display(),
            d.problems.join("; ")
        );
    }
    Ok(())
}

fn dump(path: &std::path::Path, with_records: bool) -> anyhow::Result<Dump> {
    // Kafka's segment directory also holds .index, .timeindex and .snapshot files, which are
    // not record batches: say so rather than report them as corrupt.
    let kind = match path.extension().and_then(|e| e.to_str()) {
        Some("checkpoint") => "snapshot",
        Some("log") | None => "segment",
        Some(_) => anyhow::bail!(
            "{} is not a segment or snapshot file: dump-log reads <base offset>.log and \
             <end offset>-<epoch>.checkpoint files",
            path.display()
        ),
    };
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
        // Control batches are small: always look inside them for their records' types.
        if valid && (with_records || h.is_control()) {
            match records::decode(&b) {
                Ok(r) => recs = r,
                Err(e) => record_error = Some(e),
            }
        }
        let control_types = h.is_control().then(|| {
            recs.iter()
                .map(|r| control_type_name(r.key.as_deref()))
                .collect::<Vec<_>>()
        });
        if h.is_control() {
            recs.clear();
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
            "control_types": control_types,
            "crc": h.crc,
            "computed_crc": b.compute_crc(),
            "valid": valid,
            "error": check.err().map(|e| e.to_string()).or(record_error),
            "records": with_records.then(|| recs.iter().map(|r| records::to_json(None, None, r)).collect::<Vec<_>>()),
        }));
    }
    let value = json!({
        "path": path.display().to_string(),
        "kind": kind,
        "size": data.len(),
        "batches": batches,
        "invalid_batches": invalid,
        "tail_error": tail_error,
    });
    let mut problems = Vec::new();
    if invalid > 0 {
        problems.push(format!("{invalid} batch(es) failed the CRC/format check"));
    }
    if let Some(t) = &tail_error {
        problems.push(format!("torn or corrupt data {t}"));
    }
    Ok(Dump {
        value,
        batches,
        records: record_rows,
        problems,
    })
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
        let control;
        if b["control"] == true {
            let types: Vec<&str> = b["control_types"]
                .as_array()
                .map(|a| a.iter().filter_map(|t| t.as_str()).collect())
                .unwrap_or_default();
            control = if types.is_empty() {
                "control".to_string()
            } else {
                format!("control:{}", types.join("+"))
            };
            flags.push(&control);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{MetadataLogConfig, MetadataLogStore};
    use bytes::Bytes;
    use samsa_cluster::quorum::{Batch, Record, SnapshotId};

    #[test]
    fn dumps_a_kraft_snapshot_and_names_control_records() {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, _) =
            MetadataLogStore::open(dir.path(), MetadataLogConfig::default()).unwrap();
        let leader_change = Batch {
            base_offset: 0,
            epoch: 1,
            control: true,
            append_time_ms: 1_700_000_000_000,
            records: vec![Record {
                key: Some(ControlType::LeaderChange.key()),
                value: Some(Bytes::from_static(b"\x00\x00")),
            }],
        };
        let data = Batch {
            base_offset: 1,
            epoch: 1,
            control: false,
            append_time_ms: 1_700_000_000_001,
            records: vec![Record::value(Bytes::from_static(b"topic record"))],
        };
        store.append(&[leader_change, data]).unwrap();
        store.flush().unwrap();
        let id = SnapshotId {
            end_offset: 2,
            epoch: 1,
        };
        let image = [
            Bytes::from_static(b"image a"),
            Bytes::from_static(b"image b"),
        ];
        store.write_snapshot(id, &image, 1_700_000_000_002).unwrap();
        let meta = store.dir().to_path_buf();

        let seg = dump(&meta.join("00000000000000000000.log"), false).unwrap();
        assert!(seg.problems.is_empty());
        assert_eq!(seg.value["kind"], "segment");
        assert_eq!(seg.batches[0]["control_types"], json!(["LeaderChange"]));
        assert_eq!(seg.batches[1]["control_types"], serde_json::Value::Null);

        let path = meta.join("00000000000000000002-0000000001.checkpoint");
        let snap = dump(&path, true).unwrap();
        assert!(snap.problems.is_empty(), "{:?}", snap.problems);
        assert_eq!(snap.value["kind"], "snapshot");
        let b = &snap.batches;
        assert_eq!(b.len(), 3);
        assert_eq!(b[0]["control_types"], json!(["SnapshotHeader"]));
        assert_eq!(b[2]["control_types"], json!(["SnapshotFooter"]));
        assert_eq!(b[1]["records"][1]["value"], "image b");
        let text = render(&path, &snap.batches, &snap.records, true);
        assert!(text.contains("control:SnapshotHeader"), "{text}");

        let part = meta.join("00000000000000000002-0000000001.checkpoint.part");
        assert!(dump(&part, false).is_err());
    }
}
