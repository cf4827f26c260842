//! Records: produce one (REST v3 `POST .../topics/{topic}/records`, only with
//! `console.writes.enable=true`), and read a partition from an offset or a time
//! (`GET .../topics/{topic}/partitions/{p}/records`, Samsa's own: REST v3 has no read).
//!
//! A read returns at most `limit` records (default [`LIMIT_DEFAULT`], at most [`LIMIT_MAX`]),
//! taken with at most [`FETCHES_MAX`] Fetch requests that do not wait for new records. Keys,
//! values and header values are shown as JSON when they parse as JSON, as text when they are
//! UTF-8, else base64 (`type` JSON, STRING or BINARY), cut after `max_value_bytes` (default
//! [`VALUE_BYTES_DEFAULT`]) with `truncated: true`. An offset outside the partition's range
//! is a 400 that gives the range.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use samsa_storage::batch;
use serde_json::{json, Value};

use super::topics::{partition_metadata, topic_metadata};
use super::{list_of, ApiError, Req, BODY_BYTES_MAX};
use crate::cli::client::{check, Client, EARLIEST, LATEST};
use crate::cli::consume::fetch_request;
use crate::cli::output::{format_ms, parse_datetime_ms};
use crate::cli::produce::{encode_batch, murmur2, record};
use crate::cli::records;

/// Records a read returns unless `limit` says otherwise.
pub const LIMIT_DEFAULT: usize = 20;
/// The largest `limit`.
pub const LIMIT_MAX: usize = 500;
/// Bytes of a key, value or header value shown unless `max_value_bytes` says otherwise.
pub const VALUE_BYTES_DEFAULT: usize = 4096;
/// The largest `max_value_bytes`.
pub const VALUE_BYTES_MAX: usize = 1024 * 1024;
/// Fetch requests one read may make.
pub const FETCHES_MAX: usize = 16;
/// Bytes one Fetch asks for.
const FETCH_BYTES: i32 = 1024 * 1024;
/// How long a produce waits for its acknowledgement (acks=all).
const PRODUCE_TIMEOUT_MS: i32 = 10_000;

/// A key, value or header value as the API shows it.
fn shown(bytes: Option<&[u8]>, max: usize) -> Value {
    let Some(b) = bytes else {
        return Value::Null;
    };
    let text = std::str::from_utf8(b).ok();
    let parsed = text.and_then(|t| serde_json::from_str::<Value>(t).ok());
    let kind = match (&parsed, text) {
        (Some(_), _) => "JSON",
        (None, Some(_)) => "STRING",
        (None, None) => "BINARY",
    };
    let truncated = b.len() > max;
    let data = match (parsed, text) {
        (Some(v), _) if !truncated => v,
        (_, Some(t)) => {
            let mut end = t.len().min(max);
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            Value::String(t[..end].to_string())
        }
        _ => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(&b[..b.len().min(max)]))
        }
    };
    json!({ "type": kind, "size": b.len(), "data": data, "truncated": truncated })
}

/// `GET .../topics/{topic}/partitions/{p}/records?offset=N|timestamp=T&limit=M&max_value_bytes=B`.
/// Without `offset` or `timestamp`, the last `limit` records.
pub async fn browse(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&["offset", "timestamp", "limit", "max_value_bytes"])?;
        let topic = r.param("topic").to_string();
        let partition = r.int_param("partition")?;
        let limit = r.query::<usize>("limit")?.unwrap_or(LIMIT_DEFAULT);
        if !(1..=LIMIT_MAX).contains(&limit) {
            return Err(ApiError::bad_request(format!("limit={limit} is outside 1..={LIMIT_MAX}")));
        }
        let max_value = r.query::<usize>("max_value_bytes")?.unwrap_or(VALUE_BYTES_DEFAULT);
        if !(1..=VALUE_BYTES_MAX).contains(&max_value) {
            return Err(ApiError::bad_request(format!(
                "max_value_bytes={max_value} is outside 1..={VALUE_BYTES_MAX}"
            )));
        }
        let offset = r.query::<i64>("offset")?;
        let timestamp = match r.query::<String>("timestamp")? {
            None => None,
            Some(t) => Some(t.parse::<i64>().ok().filter(|ms| *ms >= 0).or_else(|| parse_datetime_ms(&t)).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "timestamp='{t}' is neither milliseconds since the epoch nor a date-time like 2026-12-07T20:00:00Z"
                ))
            })?),
        };
        if offset.is_some() && timestamp.is_some() {
            return Err(ApiError::bad_request("give offset or timestamp, not both"));
        }
        partition_metadata(client, &topic, partition)?;
        let tp = (topic.clone(), partition);
        let range = |client: &mut Client, at: i64| -> Result<(i64, i64), ApiError> {
            let o = client.list_offsets(&[(topic.clone(), partition, at)])?;
            Ok(o.get(&tp).copied().unwrap_or((-1, -1)))
        };
        let earliest = range(client, EARLIEST)?.0;
        let latest = range(client, LATEST)?.0;
        let start = match (offset, timestamp) {
            (Some(o), _) => {
                if o < earliest || o > latest {
                    return Err(ApiError::bad_request(format!(
                        "offset {o} is outside {topic}-{partition}'s records [{earliest}, {latest}) \
                         (the latest offset is where the next record goes)"
                    )));
                }
                o
            }
            (None, Some(ms)) => match range(client, ms)?.0 {
                -1 => latest,
                o => o,
            },
            (None, None) => (latest - limit as i64).max(earliest),
        };
        let mut out = Vec::new();
        let mut position = start;
        for _ in 0..FETCHES_MAX {
            if out.len() >= limit || position >= latest {
                break;
            }
            let before = position;
            fetch_into(client, &topic, partition, &mut position, limit, max_value, &mut out)?;
            if position == before {
                break;
            }
        }
        let mut list = list_of(
            "SamsaRecordList",
            r.self_with(&format!("offset={start}&limit={limit}")),
            (position < latest).then(|| r.self_with(&format!("offset={position}&limit={limit}"))),
            out,
        );
        list["earliest_offset"] = earliest.into();
        list["latest_offset"] = latest.into();
        list["next_offset"] = position.into();
        Ok(list)
    })
    .await
}

/// One Fetch from `position`; appends what it read and moves `position` past it.
fn fetch_into(
    client: &mut Client,
    topic: &str,
    partition: i32,
    position: &mut i64,
    limit: usize,
    max_value: usize,
    out: &mut Vec<Value>,
) -> Result<(), ApiError> {
    let node = client.leader(topic, partition);
    let from = *position;
    let (_, resp) = client.call(node, |_| {
        let mut req = fetch_request(topic, std::iter::once((partition, from)), FETCH_BYTES);
        req.max_wait_ms = 0;
        req.min_bytes = 0;
        req.max_bytes = FETCH_BYTES;
        req
    })?;
    check(resp.error_code, &format!("fetch from '{topic}'"), None)?;
    for t in resp.responses {
        for pd in t.partitions {
            check(
                pd.error_code,
                &format!("partition {topic}-{partition}"),
                None,
            )?;
            let Some(data) = pd.records else { continue };
            for b in batch::batches(&data) {
                // A fetch may end in a partial batch (KIP-74): the rest comes next time.
                let Ok(b) = b else { break };
                let h = *b.header();
                if h.next_offset() <= *position {
                    continue;
                }
                if !h.is_control() {
                    let recs = records::decode(&b).map_err(|e| {
                        ApiError::new(
                            StatusCode::BAD_GATEWAY,
                            format!(
                                "batch at offset {} of {topic}-{partition}: {e}",
                                h.base_offset
                            ),
                        )
                    })?;
                    let first = *position;
                    for rec in recs.iter().filter(|x| x.offset >= first) {
                        if out.len() >= limit {
                            return Ok(());
                        }
                        out.push(record_json(partition, rec, max_value));
                        *position = rec.offset + 1;
                    }
                }
                *position = (*position).max(h.next_offset());
            }
        }
    }
    Ok(())
}

fn record_json(partition: i32, r: &records::Record, max_value: usize) -> Value {
    json!({
        "partition_id": partition,
        "offset": r.offset,
        "timestamp": format_ms(r.timestamp),
        "timestamp_ms": r.timestamp,
        "key": shown(r.key.as_deref(), max_value),
        "value": shown(r.value.as_deref(), max_value),
        "headers": r.headers.iter().map(|(k, v)| json!({"name": k, "value": shown(v.as_deref(), max_value)})).collect::<Vec<_>>(),
    })
}

/// REST v3's `{"type": "BINARY"|"JSON"|"STRING", "data": ...}` as bytes (and its type).
fn data_bytes(field: &str, v: Option<&Value>) -> Result<Option<(Vec<u8>, String)>, ApiError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let bad = |why: &str| ApiError::bad_request(format!("{field}: {why}"));
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("JSON")
        .to_ascii_uppercase();
    let data = v.get("data").ok_or_else(|| bad("no data"))?;
    let bytes = match kind.as_str() {
        "STRING" => data
            .as_str()
            .ok_or_else(|| bad("STRING data must be a string"))?
            .as_bytes()
            .to_vec(),
        "JSON" => serde_json::to_vec(data).map_err(|e| bad(&e.to_string()))?,
        "BINARY" => {
            let s = data
                .as_str()
                .ok_or_else(|| bad("BINARY data must be a base64 string"))?;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| bad("BINARY data is not base64"))?
        }
        other => return Err(bad(&format!("type {other} is not BINARY, JSON or STRING"))),
    };
    Ok(Some((bytes, kind)))
}

/// `POST /v3/clusters/{id}/topics/{topic}/records`: one record, REST v3's ProduceRequest
/// (`partition_id`, `key`, `value`, `headers` of base64 values, `timestamp`), acks=all.
pub async fn produce(r: Req, body: Result<Bytes, BytesRejection>) -> Response {
    if !r.console.writes_enable {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "the console is read-only: set console.writes.enable=true to produce",
        )
        .into_response();
    }
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            let message = format!("the body cannot be read: {e} (at most {BODY_BYTES_MAX} bytes)");
            return ApiError::new(e.status(), message).into_response();
        }
    };
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return ApiError::bad_request("the body must be a JSON object").into_response(),
        Err(e) => {
            return ApiError::bad_request(format!("the body is not JSON: {e}")).into_response()
        }
    };
    r.run(move |client, r| {
        r.only_query(&[])?;
        let topic = r.param("topic").to_string();
        let known = ["partition_id", "key", "value", "headers", "timestamp"];
        if let Some(k) = body
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys())
            .find(|k| !known.contains(&k.as_str()))
        {
            return Err(ApiError::bad_request(format!(
                "unknown field '{k}' (known: {})",
                known.join(", ")
            )));
        }
        let key = data_bytes("key", body.get("key"))?;
        let value = data_bytes("value", body.get("value"))?;
        let mut headers = Vec::new();
        for h in body
            .get("headers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = h
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::bad_request("a header needs a name"))?;
            let value = match h.get("value") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(
                    base64::engine::general_purpose::STANDARD
                        .decode(s)
                        .map_err(|_| {
                            ApiError::bad_request(format!("header '{name}': value is not base64"))
                        })?,
                ),
                Some(_) => {
                    return Err(ApiError::bad_request(format!(
                        "header '{name}': value must be a base64 string"
                    )))
                }
            };
            headers.push((
                StrBytes::from_string(name.to_string()),
                value.map(bytes::Bytes::from),
            ));
        }
        let timestamp = match body.get("timestamp") {
            None | Some(Value::Null) => crate::util::now_ms(),
            Some(Value::Number(n)) => n.as_i64().filter(|ms| *ms >= 0).ok_or_else(|| {
                ApiError::bad_request("timestamp must be milliseconds since the epoch")
            })?,
            Some(Value::String(s)) => parse_datetime_ms(s).ok_or_else(|| {
                ApiError::bad_request(format!("timestamp '{s}' is not a date-time"))
            })?,
            Some(_) => {
                return Err(ApiError::bad_request(
                    "timestamp must be a number or a date-time string",
                ))
            }
        };
        let t = topic_metadata(client, &topic)?;
        let count = t.partitions.len() as i32;
        if count == 0 {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("topic '{topic}' has no partitions yet"),
            ));
        }
        let partition = match body.get("partition_id") {
            None | Some(Value::Null) => match &key {
                Some((k, _)) => (murmur2(k) & 0x7fff_ffff) % count,
                None => ((rand::random::<u32>() & 0x7fff_ffff) as i32) % count,
            },
            Some(v) => {
                let p = v
                    .as_i64()
                    .ok_or_else(|| ApiError::bad_request("partition_id must be a whole number"))?;
                if p < 0 || p >= count as i64 {
                    return Err(ApiError::bad_request(format!(
                        "topic '{topic}' has no partition {p} (it has {count})"
                    )));
                }
                p as i32
            }
        };
        let mut recs = vec![record(
            timestamp,
            key.as_ref().map(|(k, _)| bytes::Bytes::from(k.clone())),
            value.as_ref().map(|(v, _)| bytes::Bytes::from(v.clone())),
            headers,
        )];
        let batch = encode_batch(&mut recs, kafka_protocol::records::Compression::None)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let node = client.leader(&topic, partition);
        let (_, resp) = client.call(node, |_| {
            let mut pd = PartitionProduceData::default();
            pd.index = partition;
            pd.records = Some(batch.clone());
            let mut td = TopicProduceData::default();
            td.name = TopicName(StrBytes::from_string(topic.clone()));
            td.partition_data = vec![pd];
            let mut req = ProduceRequest::default();
            req.acks = -1;
            req.timeout_ms = PRODUCE_TIMEOUT_MS;
            req.topic_data = vec![td];
            req
        })?;
        let mut offset = -1;
        for t in &resp.responses {
            for p in &t.partition_responses {
                check(
                    p.error_code,
                    &format!("produce to {topic}-{}", p.index),
                    p.error_message.as_ref(),
                )?;
                offset = p.base_offset;
            }
        }
        let size_of = |x: &Option<(Vec<u8>, String)>| {
            x.as_ref().map(|(b, k)| json!({"type": k, "size": b.len()}))
        };
        Ok(json!({
            "error_code": 200,
            "cluster_id": r.cluster_id(),
            "topic_name": topic,
            "partition_id": partition,
            "offset": offset,
            "timestamp": format_ms(timestamp),
            "key": size_of(&key),
            "value": size_of(&value),
        }))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_shown_as_json_text_or_base64_and_cut_at_the_limit() {
        assert_eq!(shown(None, 10), Value::Null);
        let j = shown(Some(br#"{"a":1}"#), 100);
        assert_eq!(
            (j["type"].as_str(), &j["data"]["a"]),
            (Some("JSON"), &json!(1))
        );
        let s = shown(Some("héllo wörld".as_bytes()), 2);
        // "h" and the two bytes of "é" do not fit in 2: the cut keeps whole characters.
        assert_eq!(s["data"], "h");
        assert_eq!(
            (s["type"].as_str(), s["truncated"].as_bool()),
            (Some("STRING"), Some(true))
        );
        let b = shown(Some(&[0xff, 0x00, 0x01]), 2);
        assert_eq!(
            (b["type"].as_str(), b["data"].as_str()),
            (Some("BINARY"), Some("/wA="))
        );
        assert_eq!(b["size"], 3);
    }

    #[test]
    fn produced_data_is_read_as_rest_v3_types() {
        let d = |v: Value| data_bytes("value", Some(&v));
        assert_eq!(
            d(json!({"type": "STRING", "data": "hi"}))
                .unwrap()
                .unwrap()
                .0,
            b"hi"
        );
        assert_eq!(
            d(json!({"type": "BINARY", "data": "aGk="}))
                .unwrap()
                .unwrap()
                .0,
            b"hi"
        );
        assert_eq!(
            d(json!({"type": "JSON", "data": {"x": [1]}}))
                .unwrap()
                .unwrap()
                .0,
            br#"{"x":[1]}"#
        );
        assert_eq!(
            d(json!({"type": "AVRO", "data": 1})).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            d(json!({"type": "BINARY", "data": "!"}))
                .unwrap_err()
                .status,
            StatusCode::BAD_REQUEST
        );
        assert!(data_bytes("value", None).unwrap().is_none());
    }
}
