//! The order in which Java's `HashMap` and `HashSet` iterate string keys.
//!
//! Kafka's coordinator walks several hash maps while it configures a topology (the
//! subtopologies by id, the topics of a copartition group, the internal topics to create), and
//! that order decides which error it reports first, which topics its detail names, and in a few
//! corner cases a derived partition count. To give the same answers, this module reproduces the
//! order: a map built with the default constructor has a table of 16 buckets, doubled whenever
//! the entries outgrow three quarters of it; a key's bucket is the low bits of its
//! `String.hashCode()` folded with its upper half; the iteration walks the buckets in order,
//! and the keys of one bucket in the order they were inserted (a resize keeps that order).
//!
//! Not reproduced: a bucket of eight or more colliding keys (Java then resizes early or turns
//! the bucket into a tree), which topic names do not reach in practice.

use std::collections::HashSet;

/// Java's `String.hashCode()`: over the UTF-16 code units, `h = 31 * h + c`, wrapping.
pub(crate) fn string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The table size of a default `HashMap` once `entries` distinct keys went in.
fn table_size(entries: usize) -> usize {
    let mut size = 16;
    while entries > size / 4 * 3 {
        size *= 2;
    }
    size
}

fn bucket(key: &str, size: usize) -> usize {
    let h = string_hash(key) as u32;
    ((h ^ (h >> 16)) as usize) & (size - 1)
}

/// The distinct keys in the order a default Java `HashMap` (or `HashSet`) iterates them, after
/// they were inserted in the given order (a key inserted again keeps its first place).
pub(crate) fn hash_order<I, S>(keys: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut seen = HashSet::new();
    let mut distinct: Vec<String> = Vec::new();
    for key in keys {
        let key = key.as_ref();
        if seen.insert(key.to_string()) {
            distinct.push(key.to_string());
        }
    }
    let size = table_size(distinct.len());
    // A stable sort keeps the insertion order within a bucket.
    distinct.sort_by_key(|k| bucket(k, size));
    distinct
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_codes_are_javas() {
        // Values of "...".hashCode() in Java.
        assert_eq!(string_hash(""), 0);
        assert_eq!(string_hash("a"), 97);
        assert_eq!(string_hash("0"), 48);
        assert_eq!(string_hash("10"), 1567);
        assert_eq!(string_hash("hello"), 99_162_322);
        assert_eq!(string_hash("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn table_grows_past_three_quarters() {
        assert_eq!(table_size(0), 16);
        assert_eq!(table_size(12), 16);
        assert_eq!(table_size(13), 32);
        assert_eq!(table_size(24), 32);
        assert_eq!(table_size(25), 64);
    }

    #[test]
    fn subtopology_ids_iterate_as_java_does() {
        // new HashMap<>() with "0".."12" put in order: 13 entries, 32 buckets; "10" hashes to
        // 1567 (bucket 31 of 32), "11" to 1568 (bucket 0), "12" to 1569 (bucket 1).
        let ids: Vec<String> = (0..13).map(|i| i.to_string()).collect();
        let order = hash_order(&ids);
        assert_eq!(
            order,
            ["11", "12", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]
        );
        // Fewer than 13: 16 buckets, "10" in bucket 15 after "9" (bucket 9).
        let ids: Vec<String> = (0..11).map(|i| i.to_string()).collect();
        assert_eq!(
            hash_order(&ids),
            ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]
        );
    }

    #[test]
    fn forty_topics_iterate_as_java_does() {
        // A HashSet of "topic-0".."topic-39" added in order, printed by Java 17.
        let names: Vec<String> = (0..40).map(|i| format!("topic-{i}")).collect();
        let expected: Vec<String> = [
            6, 7, 8, 9, 0, 1, 30, 2, 31, 3, 10, 32, 4, 11, 33, 5, 12, 34, 24, 25, 26, 27, 28, 29,
            20, 21, 22, 23, 13, 35, 14, 36, 15, 37, 16, 38, 17, 39, 18, 19,
        ]
        .iter()
        .map(|i| format!("topic-{i}"))
        .collect();
        assert_eq!(hash_order(&names), expected);
    }

    #[test]
    fn duplicates_keep_their_first_place() {
        assert_eq!(hash_order(["b", "a", "b"]), hash_order(["b", "a"]));
    }
}
