//! `__cluster_metadata-0/quorum-state`: the election state a KRaft node must not forget (the
//! epoch it is in, whom it voted for, the leader it knows), in Kafka's JSON shape: one line
//! holding `QuorumStateData` as Kafka's JSON converter writes it plus `data_version`.
//!
//! Kafka 4 writes version 1 (`leaderId`, `leaderEpoch`, `votedId`, `votedDirectoryId`); version
//! 0 (Kafka 3.x: also `clusterId`, `appliedOffset`, `currentVoters`) is read too, its voters
//! ignored (the configured voters are authoritative). We always write version 1. A field of
//! the wrong type, a missing mandatory field or an unknown version is refused, never defaulted.

use serde_json::Value;
use uuid::Uuid;

pub const QUORUM_STATE_FILE: &str = "quorum-state";
/// The `data_version` we write (Kafka 4's `FileQuorumStateStore` with kraft.version 1).
pub const QUORUM_STATE_VERSION: i64 = 1;
/// Larger than any real quorum-state file by far; a bigger one is not ours.
pub const QUORUM_STATE_BYTES_MAX: u64 = 64 << 10;

/// The persisted election state (Kafka's `ElectionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuorumStateFile {
    /// The leader known in `leader_epoch`, -1 for none.
    pub leader_id: i32,
    pub leader_epoch: i32,
    /// The candidate voted for in `leader_epoch`, -1 for none.
    pub voted_id: i32,
    /// The voted candidate's metadata directory id (KIP-853), nil when unknown or no vote.
    pub voted_directory_id: Uuid,
}

impl QuorumStateFile {
    /// The file's contents: one JSON object, fields in Kafka's order, no trailing newline.
    pub fn encode(&self) -> String {
        format!(
            r#"{{"leaderId":{},"leaderEpoch":{},"votedId":{},"votedDirectoryId":"{}","data_version":{}}}"#,
            self.leader_id,
            self.leader_epoch,
            self.voted_id,
            kafka_uuid_string(&self.voted_directory_id),
            QUORUM_STATE_VERSION
        )
    }

    /// Parses the file's contents (Kafka reads its first line only; so do we).
    pub fn decode(text: &str) -> Result<QuorumStateFile, String> {
        let line = text.lines().next().ok_or("the file is empty")?;
        let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
        let obj = v.as_object().ok_or("not a JSON object")?;
        let version = obj
            .get("data_version")
            .ok_or("no data_version field")?
            .as_i64()
            .ok_or("data_version is not an integer")?;
        if !(0..=QUORUM_STATE_VERSION).contains(&version) {
            return Err(format!(
                "data_version {version} is not within the supported 0..={QUORUM_STATE_VERSION}"
            ));
        }
        let int = |name: &str| -> Result<i32, String> {
            let f = obj
                .get(name)
                .ok_or_else(|| format!("no {name} field (mandatory in version {version})"))?;
            f.as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| format!("{name} is not a 32-bit integer: {f}"))
        };
        let voted_directory_id = if version >= 1 {
            let f = obj
                .get("votedDirectoryId")
                .ok_or("no votedDirectoryId field (mandatory in version 1)")?;
            let s = f
                .as_str()
                .ok_or_else(|| format!("votedDirectoryId is not a string: {f}"))?;
            parse_kafka_uuid(s).ok_or_else(|| format!("votedDirectoryId {s:?} is not a Uuid"))?
        } else {
            Uuid::nil()
        };
        Ok(QuorumStateFile {
            leader_id: int("leaderId")?,
            leader_epoch: int("leaderEpoch")?,
            voted_id: int("votedId")?,
            voted_directory_id,
        })
    }
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Kafka's `Uuid.toString()`: the 16 bytes in URL-safe base64 without padding (22 characters).
pub fn kafka_uuid_string(id: &Uuid) -> String {
    let mut out = String::with_capacity(22);
    let (mut acc, mut bits) = (0u32, 0);
    for b in id.as_bytes() {
        acc = (acc << 8) | *b as u32;
        bits += 8;
        while bits >= 6 {
            bits -= 6;
            out.push(BASE64URL[((acc >> bits) & 63) as usize] as char);
        }
    }
    out.push(BASE64URL[((acc << (6 - bits)) & 63) as usize] as char);
    out
}

/// The inverse of [`kafka_uuid_string`] (Kafka's `Uuid.fromString`).
pub fn parse_kafka_uuid(s: &str) -> Option<Uuid> {
    if s.len() != 22 {
        return None;
    }
    let mut bytes = [0u8; 16];
    let (mut acc, mut bits, mut n) = (0u32, 0, 0);
    for c in s.bytes() {
        let v = BASE64URL.iter().position(|&a| a == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes[n] = (acc >> bits) as u8;
            n += 1;
        }
    }
    // 22 characters carry 132 bits: the last 4 must be zero in a canonical encoding.
    (acc & ((1 << bits) - 1) == 0).then(|| Uuid::from_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_kafkas_shape_and_reads_version_0() {
        let s = QuorumStateFile {
            leader_id: -1,
            leader_epoch: 7,
            voted_id: 2,
            voted_directory_id: Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
        };
        let text = s.encode();
        assert!(
            text.starts_with(r#"{"leaderId":-1,"leaderEpoch":7,"votedId":2,"votedDirectoryId":""#),
            "{text}"
        );
        assert!(text.ends_with(r#","data_version":1}"#), "{text}");
        assert_eq!(QuorumStateFile::decode(&text).unwrap(), s);
        assert_eq!(kafka_uuid_string(&Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
        // What Kafka 3.x wrote (FileQuorumStateStoreTest's shape).
        let v0 = r#"{"clusterId":"","leaderId":9990,"leaderEpoch":3012,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":9990}],"data_version":0}"#;
        let got = QuorumStateFile::decode(v0).unwrap();
        assert_eq!(
            (got.leader_id, got.leader_epoch, got.voted_id),
            (9990, 3012, -1)
        );
        for bad in [
            "",
            "{",
            r#"{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA"}"#,
            r#"{"leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":1}"#,
            r#"{"leaderId":"x","leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}"#,
            r#"{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":2}"#,
        ] {
            assert!(QuorumStateFile::decode(bad).is_err(), "{bad}");
        }
    }
}
