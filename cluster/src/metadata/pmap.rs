//! A persistent (copy-on-write) map for the metadata image's large collections.
//!
//! Keys are spread over a fixed number of shards by hash; each shard is an `Arc<BTreeMap>`.
//! Cloning the map copies one `Arc`. Changing a key in a clone copies the shard table (a few
//! KiB of pointers) once, then the one shard holding the key (about `len / SHARDS` entries);
//! every other shard stays shared with the original. With 100,000 topics a one-topic change
//! copies ~400 entries instead of 100,000, which is what lets a broker keep serving the old
//! image while the next one is built (Kafka's images get the same from pcollections maps).
//!
//! Invariant: a key always lives in shard `shard_of(key)`, so two maps are equal iff their
//! shards are pairwise equal.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

const SHARDS: usize = 256;

#[derive(Debug, Clone)]
pub struct PersistentMap<K, V> {
    shards: Arc<Vec<Arc<BTreeMap<K, V>>>>,
    len: usize,
}

fn shard_of<K: Hash + ?Sized>(key: &K) -> usize {
    // `DefaultHasher::new()` has fixed keys: the shard of a key is the same in every map of
    // this process, which equality relies on.
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    (h.finish() as usize) % SHARDS
}

impl<K: Ord + Hash + Clone, V: Clone> Default for PersistentMap<K, V> {
    fn default() -> Self {
        // Every shard of an empty map is the same empty `BTreeMap`: one allocation, and the
        // first write to a shard copies (nothing) out of it.
        let empty = Arc::new(BTreeMap::new());
        PersistentMap {
            shards: Arc::new((0..SHARDS).map(|_| Arc::clone(&empty)).collect()),
            len: 0,
        }
    }
}

impl<K: Ord + Hash + Clone, V: Clone> PersistentMap<K, V> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + Hash + ?Sized,
    {
        self.shards[shard_of(key)].get(key)
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + Hash + ?Sized,
    {
        self.get(key).is_some()
    }

    fn shard_mut(&mut self, i: usize) -> &mut BTreeMap<K, V> {
        Arc::make_mut(&mut Arc::make_mut(&mut self.shards)[i])
    }

    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        let old = self.shard_mut(shard_of(&key)).insert(key, value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + Hash + ?Sized,
    {
        let i = shard_of(key);
        if !self.shards[i].contains_key(key) {
            return None;
        }
        let old = self.shard_mut(i).remove(key);
        self.len -= 1;
        old
    }

    /// A mutable reference to the value of `key`, copying its shard if it is shared.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + Hash + ?Sized,
    {
        let i = shard_of(key);
        if !self.shards[i].contains_key(key) {
            return None;
        }
        self.shard_mut(i).get_mut(key)
    }

    /// Entries shard by shard (an order stable for the life of the process, not sorted).
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.shards.iter().flat_map(|s| s.iter())
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }
}

impl<K: PartialEq, V: PartialEq> PartialEq for PersistentMap<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && (Arc::ptr_eq(&self.shards, &other.shards)
                || self
                    .shards
                    .iter()
                    .zip(other.shards.iter())
                    .all(|(a, b)| Arc::ptr_eq(a, b) || a == b))
    }
}

impl<K: Eq, V: Eq> Eq for PersistentMap<K, V> {}
