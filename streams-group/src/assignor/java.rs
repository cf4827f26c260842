//! The orders of the Java collections Kafka's assignor goes through, so that Samsa breaks ties
//! as Kafka does: a `java.util.HashMap`'s iteration order over string keys, and a
//! `java.util.PriorityQueue`'s choice among equal elements.

use std::cmp::Ordering;

/// Java's `String.hashCode`: over UTF-16 code units, `h = 31 * h + c`, wrapping.
pub(super) fn string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// `HashMap.hash`: the high half folded into the low one.
fn spread(h: i32) -> u32 {
    let h = h as u32;
    h ^ (h >> 16)
}

/// `HashMap.tableSizeFor`: the power of two at or above `cap`, at least 1.
fn table_size_for(cap: usize) -> usize {
    cap.max(1).next_power_of_two()
}

/// How keys went into a `java.util.HashMap`: `put` appends to its bucket and grows the table
/// after the insertion that passes the threshold; `computeIfAbsent` puts the key at the head of
/// its bucket and grows the table before an insertion when the map is already past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Insert {
    Put,
    ComputeIfAbsent,
}

/// The order a `java.util.HashMap` iterates its keys in, given every call that went into it
/// (a key may come again: `computeIfAbsent` checks the size before looking the key up, so even
/// a call for a key already there can grow the table): by bucket of the final table, and in a
/// bucket by insertion (`put`) or the reverse (`computeIfAbsent`); a resize splits buckets
/// keeping their order. `initial_capacity` is the constructor's argument (`None`:
/// `new HashMap<>()`). The answer: for each distinct key in iteration order, the index of its
/// first call. Buckets turned into trees (a ninth key in one bucket of a table of 64 or more)
/// are taken as lists, which Java does not quite keep; no group of real ids gets there.
pub(super) fn hash_map_order(
    calls: &[&str],
    initial_capacity: Option<usize>,
    insert: Insert,
) -> Vec<usize> {
    let mut seen = std::collections::HashSet::new();
    // The distinct keys, as (index of the first call, spread hash).
    let mut keys: Vec<(usize, u32)> = Vec::new();
    let mut table = Table {
        cap: 0,
        threshold: initial_capacity.map_or(0, table_size_for),
        buckets: Vec::new(),
    };
    for (call, key) in calls.iter().enumerate() {
        let size = keys.len();
        let hashes = || keys.iter().map(|&(_, h)| h);
        if table.cap == 0 || (insert == Insert::ComputeIfAbsent && size > table.threshold) {
            table.resize(hashes());
        }
        if !seen.insert(*key) {
            continue;
        }
        let h = spread(string_hash(key));
        keys.push((call, h));
        let hashes = || keys.iter().map(|&(_, h)| h);
        let bucket = h as usize & (table.cap - 1);
        let before = table.buckets[bucket];
        table.buckets[bucket] += 1;
        // `treeifyBin`, which grows a small table instead.
        let treeify = match insert {
            Insert::Put => before >= 8,
            Insert::ComputeIfAbsent => before >= 7,
        };
        if treeify && table.cap < 64 {
            table.resize(hashes());
        }
        if insert == Insert::Put && size + 1 > table.threshold {
            table.resize(hashes());
        }
    }
    let cap = table.cap.max(1);
    let mut order: Vec<(usize, isize, usize)> = keys
        .iter()
        .enumerate()
        .map(|(seq, &(call, h))| {
            let seq = match insert {
                Insert::Put => seq as isize,
                Insert::ComputeIfAbsent => -(seq as isize),
            };
            (h as usize & (cap - 1), seq, call)
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, _, call)| call).collect()
}

/// A `HashMap`'s table: its capacity (0: not allocated yet), resize threshold and the number
/// of keys in each bucket.
struct Table {
    cap: usize,
    threshold: usize,
    buckets: Vec<usize>,
}

impl Table {
    /// `HashMap.resize`, with the keys in the map so far.
    fn resize(&mut self, hashes: impl Iterator<Item = u32>) {
        let (old_cap, old_threshold) = (self.cap, self.threshold);
        let mut threshold = 0;
        if old_cap > 0 {
            self.cap = old_cap << 1;
            if old_cap >= 16 {
                threshold = old_threshold << 1;
            }
        } else if old_threshold > 0 {
            self.cap = old_threshold;
        } else {
            self.cap = 16;
            threshold = 12;
        }
        if threshold == 0 {
            // `(int) (newCap * 0.75f)`
            threshold = (self.cap as f32 * 0.75f32) as usize;
        }
        self.threshold = threshold;
        self.buckets = vec![0; self.cap];
        for h in hashes {
            self.buckets[h as usize & (self.cap - 1)] += 1;
        }
    }
}

/// A `java.util.PriorityQueue` of indexes, its comparator given at each call (the elements'
/// keys live elsewhere and must not change while they are in the queue).
#[derive(Debug, Default)]
pub(super) struct Heap {
    queue: Vec<usize>,
}

impl Heap {
    /// `offer`: sift up from the end.
    pub(super) fn offer(&mut self, x: usize, cmp: impl Fn(usize, usize) -> Ordering) {
        let mut k = self.queue.len();
        self.queue.push(x);
        while k > 0 {
            let parent = (k - 1) >> 1;
            let e = self.queue[parent];
            if cmp(x, e) != Ordering::Less {
                break;
            }
            self.queue[k] = e;
            k = parent;
        }
        self.queue[k] = x;
    }

    /// `poll`: the head; the last element sifts down from the root.
    pub(super) fn poll(&mut self, cmp: impl Fn(usize, usize) -> Ordering) -> Option<usize> {
        let n = self.queue.len().checked_sub(1)?;
        let result = self.queue[0];
        let x = self.queue.pop().expect("not empty");
        if n > 0 {
            let half = n >> 1;
            let mut k = 0;
            while k < half {
                let mut child = 2 * k + 1;
                let mut c = self.queue[child];
                let right = child + 1;
                if right < n && cmp(c, self.queue[right]) == Ordering::Greater {
                    child = right;
                    c = self.queue[child];
                }
                if cmp(x, c) != Ordering::Greater {
                    break;
                }
                self.queue[k] = c;
                k = child;
            }
            self.queue[k] = x;
        }
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_hashes_are_javas() {
        // Values from `"...".hashCode()` on a JVM.
        assert_eq!(string_hash(""), 0);
        assert_eq!(string_hash("p1"), 3521);
        assert_eq!(string_hash("hello"), 99_162_322);
        assert_eq!(string_hash("polygenelubricants"), i32::MIN);
        // Outside the BMP: two UTF-16 units.
        assert_eq!(string_hash("\u{1F600}"), 1_772_899);
    }

    #[test]
    fn hash_map_orders() {
        // Checked on a JVM. "p1" (3521) and "p2" (3522), put into `new HashMap<>(2)`: the
        // second put grows the table to 4, buckets 1 and 2.
        assert_eq!(
            hash_map_order(&["p2", "p1"], Some(2), Insert::Put),
            vec![1, 0]
        );
        // With computeIfAbsent the table stays at 2: buckets 0 and 1.
        assert_eq!(
            hash_map_order(&["p2", "p1"], Some(2), Insert::ComputeIfAbsent),
            vec![0, 1]
        );
        assert_eq!(hash_map_order(&[], None, Insert::Put), Vec::<usize>::new());
    }

    #[test]
    fn hash_map_orders_as_a_jvm_iterates_them() {
        // Thirty random keys and p0..p29; the orders a JVM (17) printed for `new HashMap<>()`
        // filled with put, `new HashMap<>(30)` filled with computeIfAbsent, and
        // `new HashMap<>(5)` with computeIfAbsent of the first 13 keys.
        let mut keys: Vec<String> = "11qq7va58a3fs z5jc1dx2hjuv 1ctcw65e5psnx ee9yv0bkmyjy 14wcyjx768mg3 1dbjp2a6kyqox gx5ryb218zq7 l18vy0yx2ux0 bnvj3t0lpa79 9zhrv0wuv8ky 1e86wfqyxm80n u5yxval9y9u1 1lltfn57crp1z 1uaca7mggtpf5 znnne66936hy 1hmjcd3yxquur w4x9sqc8irmh utq0vuckljh5 17v9xv350mxs4 ioqg6uqhp4cc ehonwf4c7bvk 1pu44yu7gcada 1uwpemt2lvznu eg6pu3z03k0y 1kfh98uqej6p3 z9zkh4bv9xmu 1iwpolu23m6d1 n4imoapqz5zr 1sy51epnjsgyi 1qvfwme506emj"
            .split(' ')
            .map(str::to_string)
            .collect();
        keys.extend((0..30).map(|i| format!("p{i}")));
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let order = |s: &str| -> Vec<usize> { s.split(',').map(|i| i.parse().unwrap()).collect() };
        assert_eq!(hash_map_order(&keys, None, Insert::Put), order("21,8,15,29,27,40,42,41,44,2,43,46,25,45,48,47,49,16,0,28,51,50,14,53,52,6,55,54,57,56,59,4,58,30,31,5,32,33,34,1,19,35,36,26,37,38,39,13,22,18,10,12,24,17,23,7,20,11,3,9"));
        assert_eq!(
            hash_map_order(&keys, Some(30), Insert::ComputeIfAbsent),
            order("21,15,8,29,27,40,42,41,44,43,2,46,45,25,48,47,49,16,0,28,51,50,53,14,52,55,6,54,57,56,59,58,4,30,31,32,5,33,34,35,19,1,36,37,26,38,39,13,22,18,12,10,24,17,23,20,7,11,3,9")
        );
        assert_eq!(
            hash_map_order(&keys[..13], Some(5), Insert::ComputeIfAbsent),
            order("11,6,5,8,2,0,3,1,12,10,4,9,7")
        );
    }

    #[test]
    fn compute_if_absent_grows_the_table_even_for_a_key_already_there() {
        // A JVM's order for `new HashMap<>(8)` after these 8 computeIfAbsent calls (the last a
        // repeat, which grows the table from 8 to 16 before finding its key).
        let calls = [
            "e45ab691-5c69-4ea9-a408-c90d822abae1",
            "d2f8ceb6-fc16-4924-aa1b-d702d59f8d48",
            "d02d914d-949e-4cf9-a520-1309ecaea2ad",
            "64c6fb07-948b-4669-a4e4-e3eb34c59b3e",
            "97039f8d-4645-4127-a9ba-e1ec569022d2",
            "e5790c91-dc75-4c32-a086-d4f8819be951",
            "a3db663b-0767-4f1c-ad34-4b653732471e",
            "64c6fb07-948b-4669-a4e4-e3eb34c59b3e",
        ];
        assert_eq!(
            hash_map_order(&calls, Some(8), Insert::ComputeIfAbsent),
            vec![3, 4, 0, 2, 1, 6, 5]
        );
        // Without the repeat, the table stays at 8.
        assert_eq!(
            hash_map_order(&calls[..7], Some(8), Insert::ComputeIfAbsent),
            vec![2, 3, 1, 6, 4, 0, 5]
        );
    }

    #[test]
    fn heap_ties_go_by_position() {
        let keys = [1, 1, 0, 1];
        let cmp = |a: usize, b: usize| keys[a].cmp(&keys[b]);
        let mut h = Heap::default();
        for i in 0..4 {
            h.offer(i, cmp);
        }
        // [2, 1, 0, 3] as a heap: 2 first, then the last element (3) moved to the root stays.
        assert_eq!(h.poll(cmp), Some(2));
        assert_eq!(h.poll(cmp), Some(3));
        assert_eq!(h.poll(cmp), Some(0));
        assert_eq!(h.poll(cmp), Some(1));
        assert_eq!(h.poll(cmp), None);
    }
}
