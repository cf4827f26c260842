//! This node's loggers, as Kafka's BROKER_LOGGER resource shows and changes them (KIP-412).
//!
//! Samsa logs through `tracing`, whose loggers are targets: module paths such as
//! `samsa_broker::net::connection`. The loggers are `root`, whose level is the default level of
//! `log.level` (or `RUST_LOG`), every target this process has logged under so far (a target
//! appears when one of its log lines is first reached at an enabled level), their parent
//! modules, and any logger given a level. DescribeConfigs lists each with its effective level in
//! Kafka's names (TRACE, DEBUG, INFO, WARN, ERROR, FATAL): its own, else its closest parent's,
//! else root's. IncrementalAlterConfigs SET gives a logger its own level and DELETE takes it
//! away; the process's filter is rebuilt at once. As in Kafka, changes last until the process
//! stops, and they are this node's alone (not forwarded to the controller).
//!
//! Kafka's rules: a level must be one of Kafka's six (upper case; FATAL logs as ERROR here), a
//! logger must exist (here: a known one, or a module path under a crate that has logged), root
//! keeps a level, and APPEND and SUBTRACT are refused.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use parking_lot::Mutex;
use tracing::subscriber::Interest;
use tracing::{Metadata, Subscriber};

use super::dynamic::{AlterOp, DynamicConfigError, OpType};

/// The logger whose level is every other's default.
pub const ROOT: &str = "root";
/// Kafka's log levels (`LogLevelConfig.VALID_LOG_LEVELS`), in the order its messages list them.
pub const LEVELS: [&str; 6] = ["DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN"];
/// Loggers that may hold a level of their own at once.
pub const LEVELS_SET_MAX: usize = 1_000;
/// Longest logger name accepted.
pub const NAME_BYTES_MAX: usize = 256;

/// Applies a filter directive string (EnvFilter syntax) to the running subscriber.
pub type Reload = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The levels: root's, the loggers' own, and the directives of the start-up filter that name
/// spans or fields (kept as they are).
#[derive(Debug, Clone, Default)]
struct Levels {
    root: String,
    own: BTreeMap<String, String>,
    verbatim: Vec<String>,
}

impl Levels {
    /// A start-up filter (`log.level` or `RUST_LOG`), read as Kafka levels: a bare level is
    /// root's, `target=level` a logger's own, `target` alone TRACE for it.
    fn parse(filter: &str) -> Levels {
        let mut levels = Levels {
            root: "INFO".into(),
            ..Levels::default()
        };
        for directive in split_directives(filter) {
            let d = directive.trim();
            if d.is_empty() {
                continue;
            }
            if d.contains('[') {
                levels.verbatim.push(d.to_string());
                continue;
            }
            match d.split_once('=') {
                None if is_level(d) => levels.root = d.to_ascii_uppercase(),
                None => {
                    levels.own.insert(d.to_string(), "TRACE".into());
                }
                Some((target, level)) => {
                    levels
                        .own
                        .insert(target.to_string(), level.trim().to_ascii_uppercase());
                }
            }
        }
        levels
    }

    /// The EnvFilter directives these levels make.
    fn directives(&self) -> String {
        let mut out = vec![tracing_level(&self.root).to_string()];
        out.extend(
            self.own
                .iter()
                .map(|(target, level)| format!("{target}={}", tracing_level(level))),
        );
        out.extend(self.verbatim.iter().cloned());
        out.join(",")
    }

    /// A logger's level: its own, else its closest parent module's, else root's.
    fn effective(&self, logger: &str) -> String {
        if logger == ROOT {
            return self.root.clone();
        }
        let mut name = logger;
        loop {
            if let Some(level) = self.own.get(name) {
                return level.clone();
            }
            match name.rsplit_once("::") {
                Some((parent, _)) => name = parent,
                None => return self.root.clone(),
            }
        }
    }
}

/// Commas separate directives, except inside `[...]` and `{...}` (span and field filters).
fn split_directives(filter: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut current) = (0i32, String::new());
    for c in filter.chars() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out
}

fn is_level(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "trace" | "debug" | "info" | "warn" | "error" | "off"
    )
}

/// A Kafka level as a tracing level (tracing has no FATAL: ERROR is the closest).
fn tracing_level(level: &str) -> &str {
    match level {
        "TRACE" => "trace",
        "DEBUG" => "debug",
        "INFO" => "info",
        "WARN" => "warn",
        "ERROR" | "FATAL" => "error",
        "OFF" => "off",
        other => other,
    }
}

/// A Rust module path: `crate` or `crate::module::...`.
fn is_module_path(name: &str) -> bool {
    !name.is_empty()
        && name.split("::").all(|segment| {
            let mut chars = segment.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// The loggers of this process.
pub struct Loggers {
    levels: Mutex<Levels>,
    /// The targets seen so far. Its own lock, never held with `levels`: the subscriber adds to
    /// it while a reload (under `levels`) rebuilds the callsites' interest.
    targets: Mutex<BTreeSet<String>>,
    reload: Option<Reload>,
}

impl Loggers {
    /// Loggers whose levels start from `filter`; `reload` applies a rebuilt one (none: the
    /// levels change only as reported, as in a test).
    pub fn new(filter: &str, reload: Option<Reload>) -> Loggers {
        Loggers {
            levels: Mutex::new(Levels::parse(filter)),
            targets: Mutex::new(BTreeSet::new()),
            reload,
        }
    }

    /// Notes a target the process logs under, with its parent modules.
    pub fn note_target(&self, target: &str) {
        if !is_module_path(target) {
            return;
        }
        let mut targets = self.targets.lock();
        if targets.contains(target) {
            return;
        }
        let mut name = target;
        loop {
            targets.insert(name.to_string());
            match name.rsplit_once("::") {
                Some((parent, _)) => name = parent,
                None => break,
            }
        }
    }

    /// Every logger with its effective level, root first.
    pub fn describe(&self) -> Vec<(String, String)> {
        let targets: BTreeSet<String> = self.targets.lock().clone();
        let levels = self.levels.lock();
        let mut names: BTreeSet<&str> = targets.iter().map(String::as_str).collect();
        names.extend(levels.own.keys().map(String::as_str));
        std::iter::once((ROOT.to_string(), levels.root.clone()))
            .chain(
                names
                    .into_iter()
                    .map(|n| (n.to_string(), levels.effective(n))),
            )
            .collect()
    }

    /// Whether Kafka's "Logger ... does not exist!" applies: root, a target seen, a logger
    /// with a level, or a module path under a crate that has logged, exist.
    fn exists(&self, name: &str) -> bool {
        if name == ROOT || self.levels.lock().own.contains_key(name) {
            return true;
        }
        let targets = self.targets.lock();
        targets.contains(name)
            || (is_module_path(name)
                && name.len() <= NAME_BYTES_MAX
                && targets.contains(name.split("::").next().unwrap_or(name)))
    }

    /// Kafka's checks of IncrementalAlterConfigs on a BROKER_LOGGER resource
    /// (`ConfigAdminManager.validateLogLevelConfigs`), in order; the first refusal wins.
    pub fn validate(&self, ops: &[AlterOp]) -> Result<(), DynamicConfigError> {
        let missing = |name: &str| {
            DynamicConfigError::InvalidConfig(format!("Logger {name} does not exist!"))
        };
        for op in ops {
            let name = op.name.as_str();
            match op.op {
                OpType::Set => {
                    if !self.exists(name) {
                        return Err(missing(name));
                    }
                    let level = op.value.as_deref().unwrap_or_default();
                    if !LEVELS.contains(&level) {
                        return Err(DynamicConfigError::InvalidConfig(format!(
                            "Cannot set the log level of {name} to {level} as it is not a supported log level. Valid log levels are {}",
                            LEVELS.join(", ")
                        )));
                    }
                }
                OpType::Delete => {
                    if !self.exists(name) {
                        return Err(missing(name));
                    }
                    if name == ROOT {
                        return Err(DynamicConfigError::InvalidRequest(format!(
                            "Removing the log level of the {ROOT} logger is not allowed"
                        )));
                    }
                }
                OpType::Append | OpType::Subtract => {
                    return Err(DynamicConfigError::InvalidRequest(format!(
                        "{} operation is not allowed for the BROKER_LOGGER resource",
                        op.op.name()
                    )));
                }
            }
        }
        let mut own = self.levels.lock().own.clone();
        for op in ops {
            match op.op {
                OpType::Set if op.name != ROOT => {
                    own.insert(op.name.clone(), String::new());
                }
                OpType::Delete => {
                    own.remove(&op.name);
                }
                _ => {}
            }
        }
        if own.len() > LEVELS_SET_MAX {
            return Err(DynamicConfigError::TooMany(format!(
                "{} loggers with a level of their own would exceed the limit of {LEVELS_SET_MAX}",
                own.len()
            )));
        }
        Ok(())
    }

    /// Validates and applies the operations, then rebuilds the process's filter.
    pub fn alter(&self, ops: &[AlterOp]) -> Result<(), DynamicConfigError> {
        self.validate(ops)?;
        let mut levels = self.levels.lock();
        for op in ops {
            match (op.op, op.name.as_str()) {
                (OpType::Set, ROOT) => levels.root = op.value.clone().unwrap_or_default(),
                (OpType::Set, name) => {
                    levels
                        .own
                        .insert(name.to_string(), op.value.clone().unwrap_or_default());
                }
                (OpType::Delete, name) => {
                    levels.own.remove(name);
                }
                _ => unreachable!("refused by validate"),
            }
        }
        let directives = levels.directives();
        if let Some(reload) = &self.reload {
            // Under `levels`, so that concurrent changes reach the subscriber in order.
            reload(&directives).map_err(|e| {
                DynamicConfigError::InvalidRequest(format!("cannot apply log levels: {e}"))
            })?;
        }
        tracing::info!(filter = %directives, "log levels changed");
        Ok(())
    }
}

static LOGGERS: OnceLock<Loggers> = OnceLock::new();

/// Installs the process's loggers (`main`, once, when it sets up logging).
pub fn install(filter: &str, reload: Reload) {
    let _ = LOGGERS.set(Loggers::new(filter, Some(reload)));
}

/// The process's loggers: those `main` installed, else (a broker run inside a test process)
/// loggers at INFO whose changes are reported but not applied.
pub fn loggers() -> &'static Loggers {
    LOGGERS.get_or_init(|| Loggers::new("info", None))
}

/// A layer that notes the target of every callsite the subscriber registers. It filters
/// nothing; put it outermost, so that it sees callsites the filter turns away.
pub struct TargetRegistry;

impl<S: Subscriber> tracing_subscriber::Layer<S> for TargetRegistry {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        loggers().note_target(metadata.target());
        Interest::always()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn op(name: &str, op: OpType, value: Option<&str>) -> AlterOp {
        AlterOp {
            name: name.into(),
            op,
            value: value.map(str::to_string),
        }
    }

    fn applied() -> (Loggers, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let loggers = Loggers::new(
            "warn,samsa_storage=debug,samsa_broker::net[conn]=trace",
            Some(Box::new(move |d: &str| {
                sink.lock().push(d.to_string());
                Ok(())
            })),
        );
        loggers.note_target("samsa_broker::net::connection");
        (loggers, seen)
    }

    fn level_of(loggers: &Loggers, name: &str) -> Option<String> {
        loggers
            .describe()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| l)
    }

    #[test]
    fn the_start_up_filter_gives_root_and_the_loggers_their_levels() {
        let (loggers, _) = applied();
        let described = loggers.describe();
        assert_eq!(described[0], (ROOT.to_string(), "WARN".to_string()));
        assert_eq!(
            level_of(&loggers, "samsa_storage").as_deref(),
            Some("DEBUG")
        );
        // Targets seen, and their parents, inherit root's level.
        assert_eq!(
            level_of(&loggers, "samsa_broker::net::connection").as_deref(),
            Some("WARN")
        );
        assert_eq!(level_of(&loggers, "samsa_broker").as_deref(), Some("WARN"));
    }

    #[test]
    fn set_and_delete_change_the_filter_and_loggers_inherit_from_their_parents() {
        let (loggers, seen) = applied();
        loggers
            .alter(&[
                op(ROOT, OpType::Set, Some("INFO")),
                op("samsa_broker::net", OpType::Set, Some("FATAL")),
            ])
            .unwrap();
        assert_eq!(
            seen.lock().last().unwrap(),
            "info,samsa_broker::net=error,samsa_storage=debug,samsa_broker::net[conn]=trace"
        );
        assert_eq!(
            level_of(&loggers, "samsa_broker::net::connection").as_deref(),
            Some("FATAL")
        );
        loggers
            .alter(&[op("samsa_broker::net", OpType::Delete, None)])
            .unwrap();
        assert_eq!(
            level_of(&loggers, "samsa_broker::net::connection").as_deref(),
            Some("INFO")
        );
        assert_eq!(level_of(&loggers, "samsa_broker::net"), Some("INFO".into()));
    }

    #[test]
    fn kafkas_refusals_with_kafkas_codes() {
        let (loggers, seen) = applied();
        let refused = |ops: &[AlterOp]| loggers.validate(ops).unwrap_err();
        let e = refused(&[op(ROOT, OpType::Set, Some("LOUD"))]);
        assert!(matches!(e, DynamicConfigError::InvalidConfig(_)), "{e}");
        assert!(e
            .to_string()
            .contains("Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"));
        // Kafka's levels are upper case.
        assert!(loggers
            .validate(&[op(ROOT, OpType::Set, Some("info"))])
            .is_err());
        let e = refused(&[op(
            "kafka.server.ReplicaManager",
            OpType::Set,
            Some("DEBUG"),
        )]);
        assert_eq!(
            e.to_string(),
            "Logger kafka.server.ReplicaManager does not exist!"
        );
        assert!(matches!(e, DynamicConfigError::InvalidConfig(_)));
        let e = refused(&[op(ROOT, OpType::Delete, None)]);
        assert!(matches!(e, DynamicConfigError::InvalidRequest(_)), "{e}");
        let e = refused(&[op(ROOT, OpType::Append, Some("INFO"))]);
        assert_eq!(
            e.to_string(),
            "APPEND operation is not allowed for the BROKER_LOGGER resource"
        );
        // A module of a crate that has logged exists before it logs itself.
        assert!(loggers
            .validate(&[op("samsa_broker::txn", OpType::Set, Some("DEBUG"))])
            .is_ok());
        assert!(seen.lock().is_empty(), "validation applies nothing");
    }
}
