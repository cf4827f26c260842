//! Who holds each task of a streams group now, by process: what the reconciliation asks
//! ([`Owners`]) before it gives a task out, kept up to date from every member's assigned and
//! pending-revocation tasks.

use std::collections::{BTreeMap, BTreeSet};

use crate::reconcile::{Assigned, Owners};
use crate::TaskSet;

/// Who holds each task now (from every member's assigned and pending-revocation tasks).
#[derive(Debug, Clone, Default)]
pub(crate) struct Holders {
    pub(crate) active: BTreeMap<(String, i32), String>,
    standby: BTreeMap<(String, i32), BTreeSet<String>>,
    warmup: BTreeMap<(String, i32), BTreeSet<String>>,
}

impl Owners for Holders {
    fn active_process(&self, s: &str, p: i32) -> Option<&str> {
        self.active.get(&(s.to_string(), p)).map(String::as_str)
    }
    fn standby_on(&self, s: &str, p: i32, process: &str) -> bool {
        self.standby
            .get(&(s.to_string(), p))
            .is_some_and(|x| x.contains(process))
    }
    fn warmup_on(&self, s: &str, p: i32, process: &str) -> bool {
        self.warmup
            .get(&(s.to_string(), p))
            .is_some_and(|x| x.contains(process))
    }
}

impl Holders {
    pub(crate) fn add(&mut self, a: &Assigned, process: &str) {
        for (s, parts) in &a.active {
            for &p in parts.keys() {
                self.active.insert((s.clone(), p), process.to_string());
            }
        }
        add_set(&mut self.standby, &a.standby, process);
        add_set(&mut self.warmup, &a.warmup, process);
    }

    pub(crate) fn remove(&mut self, a: &Assigned, process: &str) {
        for (s, parts) in &a.active {
            for &p in parts.keys() {
                let key = (s.clone(), p);
                if self.active.get(&key).is_some_and(|x| x == process) {
                    self.active.remove(&key);
                }
            }
        }
        remove_set(&mut self.standby, &a.standby, process);
        remove_set(&mut self.warmup, &a.warmup, process);
    }
}

fn add_set(into: &mut BTreeMap<(String, i32), BTreeSet<String>>, tasks: &TaskSet, process: &str) {
    for (s, parts) in tasks {
        for &p in parts {
            into.entry((s.clone(), p))
                .or_default()
                .insert(process.to_string());
        }
    }
}

fn remove_set(
    from: &mut BTreeMap<(String, i32), BTreeSet<String>>,
    tasks: &TaskSet,
    process: &str,
) {
    for (s, parts) in tasks {
        for &p in parts {
            let key = (s.clone(), p);
            if let Some(x) = from.get_mut(&key) {
                x.remove(process);
                if x.is_empty() {
                    from.remove(&key);
                }
            }
        }
    }
}
