//! Scheduled deadlines of the coordinator's groups (sessions, rebalances, delayed joins), one
//! per group id, earliest first.

use std::collections::{BTreeSet, HashMap};

/// Scheduled group deadlines, earliest first.
#[derive(Default)]
pub(super) struct Timers {
    pub(super) queue: BTreeSet<(i64, String)>,
    at: HashMap<String, i64>,
}

impl Timers {
    /// Sets a group's next deadline; true when it became the earliest one.
    pub(super) fn set(&mut self, group_id: &str, deadline: Option<i64>) -> bool {
        if let Some(old) = self.at.get(group_id).copied() {
            if Some(old) == deadline {
                return false;
            }
            self.queue.remove(&(old, group_id.to_string()));
            self.at.remove(group_id);
        }
        let Some(d) = deadline else {
            return false;
        };
        self.queue.insert((d, group_id.to_string()));
        self.at.insert(group_id.to_string(), d);
        self.queue.first().map(|(f, _)| *f) == Some(d)
    }

    pub(super) fn pop_due(&mut self, now_ms: i64) -> Vec<String> {
        let mut due = Vec::new();
        while let Some((d, _)) = self.queue.first() {
            if *d > now_ms {
                break;
            }
            let (_, id) = self.queue.pop_first().expect("non-empty");
            self.at.remove(&id);
            due.push(id);
        }
        due
    }
}
