//! `samsa cluster local`: a cluster of N nodes on this machine in one command. Each node is a
//! child process of this one (the same executable), broker and controller, a voter of the
//! metadata quorum, with its own data directory `<dir>/node-<i>` and log `<dir>/node-<i>.log`;
//! or, with `--controllers C --brokers B`, nodes 1..=C are controller-only voters and the next B
//! broker-only nodes, as Kafka runs separate controllers.
//!
//! Node i listens on 127.0.0.1: `port + 100*(i-1)` for clients, the next port for the
//! controllers and the one after for Prometheus metrics (each node only on those of its roles). The cluster id, the node count and
//! the base port are kept in `<dir>/cluster.id` and `<dir>/cluster.properties`, so that the
//! same command restarts the same cluster. SIGINT or SIGTERM stops every node (SIGTERM, then
//! SIGKILL after 30 s or on a second signal); a node that exits on its own is reported and the
//! others keep running.

use std::fs::OpenOptions;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

const STOP_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_NODES: u16 = 32;
const ID_FILE: &str = "cluster.id";
const PROPS_FILE: &str = "cluster.properties";
/// Set for each node by the launcher: given again after `--` they would break the cluster.
const SET_PER_NODE: &str = "node.id cluster.id log.dirs log.dir listeners advertised.listeners \
    controller.listener.names controller.quorum.voters process.roles";

#[derive(Debug, clap::Args)]
pub struct LocalArgs {
    /// Number of nodes, all voters [default: 3; a restart takes the stored count].
    #[arg(long, conflicts_with_all = ["controllers", "brokers"])]
    pub nodes: Option<u16>,
    /// Controller-only nodes (process.roles=controller), the voters: nodes 1..=C. With it,
    /// the other nodes are broker-only [a restart takes the stored count].
    #[arg(long)]
    pub controllers: Option<u16>,
    /// Broker-only nodes after the controllers [default: 3 with --controllers].
    #[arg(long, requires = "controllers")]
    pub brokers: Option<u16>,
    /// Directory of the cluster: cluster.id, cluster.properties, node-<i>/ and node-<i>.log.
    #[arg(long, default_value = "./samsa-cluster")]
    pub dir: PathBuf,
    /// Base port: node i uses PORT+100*(i-1) (clients), +1 (controllers), +2 (metrics)
    /// [default: 9092; a restart takes the stored port].
    #[arg(long)]
    pub port: Option<u16>,
    /// I/O engine of every node.
    #[arg(long = "io.engine", alias = "io-engine", value_parser = ["auto", "uring", "epoll"])]
    pub io_engine: Option<String>,
    /// Puts node i in a rack of its own, `broker.rack=<PREFIX><i>` (RACK1, RACK2... with
    /// `--rack-prefix RACK`, as librdkafka's test suite expects): rack-aware placement and
    /// fetching from followers (`replica.selector.class`) can then be tried on one machine.
    #[arg(long = "rack-prefix", value_name = "PREFIX")]
    pub rack_prefix: Option<String>,
    /// Seconds each node may take to serve and be unfenced before the cluster is stopped
    /// with an error (a restart of many nodes holding many partitions on few cores takes
    /// minutes).
    #[arg(long = "start-timeout", value_name = "SECS", default_value_t = 60)]
    pub start_timeout: u64,
    /// More --key=value properties for every node (after --, e.g. -- --num.partitions=3).
    #[arg(last = true)]
    pub extra: Vec<String>,
}

/// What a node runs (`process.roles`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeRole {
    /// broker,controller: a voter that also serves clients.
    Combined,
    Controller,
    Broker,
}

impl NodeRole {
    fn is_controller(self) -> bool {
        self != NodeRole::Broker
    }
    fn is_broker(self) -> bool {
        self != NodeRole::Controller
    }
}

/// The ports of one node; `metrics` is `None` when disabled (`--metrics.listener=`) or for a
/// controller-only node. A node listens only on the ports of its roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodePorts {
    pub id: u16,
    pub role: NodeRole,
    pub client: u16,
    pub controller: u16,
    pub metrics: Option<u16>,
}

/// Node i (1..=nodes) gets `port + 100*(i-1)` for clients, +1 for controllers, +2 for metrics.
/// With `controllers` > 0, nodes 1..=controllers are controller-only and the rest broker-only.
pub fn plan(
    nodes: u16,
    controllers: u16,
    port: u16,
    metrics: bool,
) -> Result<Vec<NodePorts>, String> {
    if nodes == 0 || nodes > MAX_NODES || port == 0 {
        return Err(format!(
            "--nodes must be 1 to {MAX_NODES} (not {nodes}) and --port a port (not {port})"
        ));
    }
    if controllers >= nodes {
        return Err(format!(
            "--controllers {controllers} leaves no broker among {nodes} nodes: give --brokers 1 or more"
        ));
    }
    let top = port as u32 + 100 * (nodes as u32 - 1) + if metrics { 2 } else { 1 };
    if top > u16::MAX as u32 {
        return Err(format!("--port {port} leaves no room for {nodes} nodes: node {nodes} would need port {top}; choose a lower --port"));
    }
    let ports = |id: u16| {
        let client = port + 100 * (id - 1);
        let role = match controllers {
            0 => NodeRole::Combined,
            c if id <= c => NodeRole::Controller,
            _ => NodeRole::Broker,
        };
        let metrics = (metrics && role.is_broker()).then(|| client + 2);
        NodePorts {
            id,
            role,
            client,
            controller: client + 1,
            metrics,
        }
    };
    Ok((1..=nodes).map(ports).collect())
}

fn join(plan: &[NodePorts], f: impl Fn(&NodePorts) -> Option<String>) -> String {
    plan.iter().filter_map(f).collect::<Vec<_>>().join(",")
}

pub fn voters(plan: &[NodePorts]) -> String {
    join(plan, |p| {
        p.role
            .is_controller()
            .then(|| format!("{}@127.0.0.1:{}", p.id, p.controller))
    })
}

pub fn bootstrap(plan: &[NodePorts]) -> String {
    join(plan, |p| {
        p.role
            .is_broker()
            .then(|| format!("127.0.0.1:{}", p.client))
    })
}

/// Binds every port of the plan once (and lets it go), so that nothing starts when one is taken.
pub fn check_ports(plan: &[NodePorts]) -> Result<(), String> {
    for p in plan {
        let ports = [
            ("client", p.role.is_broker().then_some(p.client)),
            ("controller", p.role.is_controller().then_some(p.controller)),
        ];
        for (what, port) in ports.into_iter().chain([("metrics", p.metrics)]) {
            let Some(port) = port else { continue };
            TcpListener::bind(("127.0.0.1", port)).map_err(|e| {
                format!("port {port} (node {}'s {what} port) is not free: {e}; stop what uses it or choose another base with --port (node i uses PORT+100*(i-1) to +2)", p.id)
            })?;
        }
    }
    Ok(())
}

/// What `<dir>/cluster.id` and `<dir>/cluster.properties` hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterFile {
    pub cluster_id: String,
    pub nodes: u16,
    /// Controller-only nodes among them (0: every node is broker and controller).
    pub controllers: u16,
    pub port: u16,
}

impl ClusterFile {
    pub fn parse(id_text: &str, props_text: &str) -> Result<ClusterFile, String> {
        let cluster_id = id_text.trim().to_string();
        let base64 = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        if cluster_id.len() != 22 || !cluster_id.bytes().all(base64) {
            return Err(format!(
                "{ID_FILE} holds '{cluster_id}', not a 22-character base64 cluster id"
            ));
        }
        let (mut nodes, mut port, mut controllers) = (None, None, None);
        let lines = props_text.lines().map(str::trim);
        for line in lines.filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let Some((key, value)) = line.split_once('=').map(|(k, v)| (k.trim(), v.trim())) else {
                return Err(format!("{PROPS_FILE}: '{line}' is not key=value"));
            };
            let slot = match key {
                "nodes" => &mut nodes,
                "port" => &mut port,
                "controllers" => &mut controllers,
                _ => return Err(format!("{PROPS_FILE}: unknown key '{key}'")),
            };
            let bad = |_| format!("{PROPS_FILE}: {key}={value} is not a number");
            *slot = Some(value.parse::<u16>().map_err(bad)?);
        }
        let missing = |key: &str| format!("{PROPS_FILE} has no {key}=");
        let nodes = nodes.ok_or_else(|| missing("nodes"))?;
        let port = port.ok_or_else(|| missing("port"))?;
        Ok(ClusterFile {
            cluster_id,
            nodes,
            controllers: controllers.unwrap_or(0),
            port,
        })
    }

    pub fn properties(&self) -> String {
        let controllers = match self.controllers {
            0 => String::new(),
            c => format!("# nodes 1..=controllers are controller-only, the rest broker-only.\ncontrollers={c}\n"),
        };
        format!(
            "# samsa cluster local: node i (1..=nodes) listens on port+100*(i-1) for clients,\n\
             # +1 for controllers, +2 for metrics; the cluster id is in {ID_FILE}.\n\
             nodes={}\nport={}\n{controllers}",
            self.nodes, self.port
        )
    }
}

/// The cluster to start and whether it is new: the stored one (the options, when given, must
/// agree with it) or a new one (3 nodes from port 9092 unless told otherwise).
pub fn settle(
    stored: Option<ClusterFile>,
    nodes: Option<u16>,
    controllers: Option<u16>,
    port: Option<u16>,
    dir: &Path,
) -> Result<(ClusterFile, bool), String> {
    let Some(s) = stored else {
        let (nodes, port) = (nodes.unwrap_or(3), port.unwrap_or(9092));
        let cluster_id = crate::meta::new_cluster_id();
        return Ok((
            ClusterFile {
                cluster_id,
                nodes,
                controllers: controllers.unwrap_or(0),
                port,
            },
            true,
        ));
    };
    let checks = [
        ("nodes", nodes, s.nodes),
        ("controllers", controllers, s.controllers),
        ("port", port, s.port),
    ];
    for (what, given, stored) in checks {
        if let Some(given) = given.filter(|g| *g != stored) {
            return Err(format!("{} holds a cluster with --{what} {stored}, not {given}: leave out --{what} (or give --{what} {stored}) to restart it, or choose another --dir for a new cluster", dir.display()));
        }
    }
    Ok((s, false))
}

/// Checks the flags given after `--`; returns whether each node gets its own metrics port.
pub fn check_extra(extra: &[String]) -> Result<bool, String> {
    let mut metrics = true;
    for arg in extra {
        let Some((key, value)) = arg.strip_prefix("--").and_then(|b| b.split_once('=')) else {
            return Err(format!(
                "'{arg}': the flags after -- go to every node and must be --key=value"
            ));
        };
        if SET_PER_NODE.split_whitespace().any(|k| k == key) {
            return Err(format!("--{key} is set for each node by `samsa cluster local` and cannot be given after --"));
        }
        if key == "metrics.listener" && !value.trim().is_empty() {
            return Err(format!("--metrics.listener={value} would be one port for every node: leave it out (node i gets PORT+100*(i-1)+2) or pass --metrics.listener= to disable metrics"));
        }
        metrics &= key != "metrics.listener";
    }
    Ok(metrics)
}

/// The stored cluster of `dir`, `None` for a new (missing or empty) directory.
fn load(dir: &Path) -> anyhow::Result<Option<ClusterFile>> {
    let read = |name: &str| match std::fs::read_to_string(dir.join(name)) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow!("cannot read {}: {e}", dir.join(name).display())),
    };
    let d = dir.display();
    match (read(ID_FILE)?, read(PROPS_FILE)?) {
        (Some(id), Some(props)) => (ClusterFile::parse(&id, &props).map(Some))
            .map_err(|e| anyhow!("{d}: {e}")),
        (None, None) if std::fs::read_dir(dir).is_ok_and(|mut e| e.next().is_some()) => {
            bail!("{d} is not empty and holds no cluster ({ID_FILE} is missing): choose another --dir")
        }
        (None, None) => Ok(None),
        _ => bail!("{d} has only one of {ID_FILE} and {PROPS_FILE}: restore the other or choose another --dir"),
    }
}

static SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

fn signals() -> usize {
    SIGNALS.load(Ordering::SeqCst)
}

struct Node {
    ports: NodePorts,
    log: PathBuf,
    /// Where this run's output starts in the log (a restart appends).
    log_start: u64,
    child: Child,
    serving: bool,
    /// Registered with the active controller and unfenced: it can lead and host partitions.
    joined: bool,
    /// Set once it has exited (and been reaped).
    status: Option<ExitStatus>,
}

impl Node {
    fn running(&self) -> bool {
        self.status.is_none()
    }

    fn log_text(&self) -> String {
        let bytes = std::fs::read(&self.log).unwrap_or_default();
        let from = (self.log_start as usize).min(bytes.len());
        String::from_utf8_lossy(&bytes[from..]).into_owned()
    }

    fn tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        format!("last lines of {}:\n{tail}", self.log.display())
    }
}

fn spawn(
    exe: &Path,
    args: &LocalArgs,
    id: &str,
    p: NodePorts,
    voters: &str,
    console: bool,
) -> anyhow::Result<Node> {
    let listeners = match p.role {
        NodeRole::Combined => format!(
            "PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}",
            p.client, p.controller
        ),
        NodeRole::Controller => format!("CONTROLLER://127.0.0.1:{}", p.controller),
        NodeRole::Broker => format!("PLAINTEXT://127.0.0.1:{}", p.client),
    };
    let log = args.dir.join(format!("node-{}.log", p.id));
    let out = OpenOptions::new().create(true).append(true).open(&log);
    let out = out.with_context(|| format!("cannot open {}", log.display()))?;
    let log_start = out.metadata()?.len();
    let data = args.dir.join(format!("node-{}", p.id));
    let mut cmd = Command::new(exe);
    cmd.arg(format!("--node.id={}", p.id))
        .arg(format!("--cluster.id={id}"))
        .arg(format!("--log.dirs={}", data.display()))
        .arg(format!("--listeners={listeners}"))
        .arg("--controller.listener.names=CONTROLLER")
        .arg(format!("--controller.quorum.voters={voters}"));
    match p.role {
        NodeRole::Combined => {}
        NodeRole::Controller => {
            cmd.arg("--process.roles=controller");
        }
        NodeRole::Broker => {
            cmd.arg("--process.roles=broker");
        }
    }
    if let Some(m) = p.metrics {
        cmd.arg(format!("--metrics.listener=127.0.0.1:{m}"));
    }
    if !console {
        cmd.arg("--console.listener=");
    }
    if let Some(engine) = &args.io_engine {
        cmd.arg(format!("--io.engine={engine}"));
    }
    if let Some(prefix) = &args.rack_prefix {
        cmd.arg(format!("--broker.rack={prefix}{}", p.id));
    }
    // Its own process group, so that a terminal's Ctrl-C reaches only the launcher, which
    // stops the nodes in order; and SIGTERM should the launcher die without stopping them.
    cmd.args(&args.extra)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0);
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    // A controller-only node has no broker to register: it has joined once it serves.
    let (serving, joined, status) = (false, !p.role.is_broker(), None);
    Ok(Node {
        ports: p,
        log,
        log_start,
        child,
        serving,
        joined,
        status,
    })
}

/// SIGTERM to every running node, then waits for them: SIGKILL for those still running after
/// 30 s, or at once on another SIGINT/SIGTERM.
fn stop_all(nodes: &mut [Node]) {
    let seen = signals();
    for n in nodes.iter().filter(|n| n.running()) {
        // SAFETY: kill(2) on the pid of our own child, not yet reaped.
        unsafe { libc::kill(n.child.id() as libc::pid_t, libc::SIGTERM) };
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    loop {
        for n in nodes.iter_mut().filter(|n| n.running()) {
            n.status = n.child.try_wait().ok().flatten();
            if let Some(status) = n.status {
                println!("node {} stopped ({status})", n.ports.id);
            }
        }
        if !nodes.iter().any(Node::running) {
            return;
        }
        let hurry = signals() > seen;
        if hurry || Instant::now() > deadline {
            for n in nodes.iter_mut().filter(|n| n.running()) {
                let _ = n.child.kill();
                n.status = n.child.wait().ok();
                let why = if hurry {
                    "second signal"
                } else {
                    "still running 30 s after SIGTERM"
                };
                println!("node {} killed ({why})", n.ports.id);
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Watches the nodes until a signal (then stops them) or until every one has exited. The
/// cluster is announced once every node serves and has joined (registered with the active
/// controller and unfenced), so that what is created right after lands on all of them, as a
/// Kafka broker enables its listeners only once unfenced. Until then, a node that exits, or
/// does not serve and join within `start_timeout`, stops the cluster: an error with the tail of
/// its log.
fn watch(nodes: &mut [Node], bootstrap: &str, start_timeout: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    let mut starting = true;
    loop {
        if signals() > 0 {
            println!("stopping the cluster");
            stop_all(nodes);
            return Ok(());
        }
        let late = start.elapsed() > start_timeout;
        for i in 0..nodes.len() {
            let n = &mut nodes[i];
            if !n.running() {
                continue;
            }
            if !n.serving || !n.joined {
                let text = n.log_text();
                if !n.serving && text.contains("samsa is serving") {
                    n.serving = true;
                    println!(
                        "node {} serving ({:.1} s)",
                        n.ports.id,
                        start.elapsed().as_secs_f64()
                    );
                }
                if !n.joined && text.contains("the controller unfenced this broker") {
                    n.joined = true;
                    println!(
                        "node {} joined the cluster ({:.1} s)",
                        n.ports.id,
                        start.elapsed().as_secs_f64()
                    );
                }
            }
            let exited = n.child.try_wait()?;
            n.status = exited;
            let id = n.ports.id;
            if starting && (exited.is_some() || late && !(n.serving && n.joined)) {
                let why = match exited {
                    Some(s) => format!("exited with {s} before the cluster served"),
                    None if !n.serving => format!(
                        "did not log 'samsa is serving' within {} s",
                        start_timeout.as_secs()
                    ),
                    None => format!(
                        "was not unfenced by the active controller within {} s (no quorum of controller.quorum.voters?)",
                        start_timeout.as_secs()
                    ),
                };
                let error = anyhow!("node {id} {why}; {}", n.tail());
                stop_all(nodes);
                return Err(error);
            }
            if let Some(status) = exited {
                let (pid, log) = (n.child.id(), n.log.display().to_string());
                let left = nodes.iter().filter(|n| n.running()).count();
                eprintln!("samsa: node {id} (pid {pid}) exited on its own with {status}; {left} node(s) still running; see {log}");
            }
        }
        if starting && nodes.iter().all(|n| n.serving && n.joined) {
            starting = false;
            println!(
                "all {} node(s) serving; bootstrap {bootstrap}; Ctrl-C stops the cluster",
                nodes.len()
            );
        }
        if !nodes.iter().any(Node::running) {
            if nodes.iter().all(|n| n.status.is_some_and(|s| s.success())) {
                println!("every node has exited");
                return Ok(());
            }
            bail!("every node has exited, not all cleanly (see their logs)");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn run(args: &LocalArgs) -> anyhow::Result<()> {
    let metrics = check_extra(&args.extra).map_err(anyhow::Error::msg)?;
    let nodes = match args.controllers {
        Some(c) => Some(c.saturating_add(args.brokers.unwrap_or(3))),
        None => args.nodes,
    };
    let (file, new) = settle(
        load(&args.dir)?,
        nodes,
        args.controllers,
        args.port,
        &args.dir,
    )
    .map_err(anyhow::Error::msg)?;
    let plan =
        plan(file.nodes, file.controllers, file.port, metrics).map_err(anyhow::Error::msg)?;
    check_ports(&plan).map_err(anyhow::Error::msg)?;
    let exe = std::env::current_exe().context("cannot find the samsa executable")?;
    let dir = &args.dir;
    if new {
        let write = |name: &str, text: String| std::fs::write(dir.join(name), text);
        (std::fs::create_dir_all(dir)
            .and_then(|()| write(ID_FILE, format!("{}\n", file.cluster_id))))
        .and_then(|()| write(PROPS_FILE, file.properties()))
        .with_context(|| format!("cannot write the cluster files in {}", dir.display()))?;
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only increments an atomic counter.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
    let how = if new { "new" } else { "restarted" };
    println!(
        "cluster {} ({how}) in {}: {} node(s)",
        file.cluster_id,
        dir.display(),
        file.nodes
    );
    let mut nodes = Vec::new();
    // The console (`console.listener`, one default port) on the first broker only: the others
    // would find its port taken.
    let console = plan.iter().find(|n| n.role.is_broker()).map(|n| n.id);
    for p in &plan {
        let console = console == Some(p.id);
        match spawn(&exe, args, &file.cluster_id, *p, &voters(&plan), console) {
            Ok(n) => nodes.push(n),
            Err(e) => {
                stop_all(&mut nodes);
                return Err(e);
            }
        }
        let pid = nodes.last().expect("just started").child.id();
        let metrics = p
            .metrics
            .map_or("-".to_string(), |m| format!("127.0.0.1:{m}"));
        let log = dir.join(format!("node-{}.log", p.id));
        let port = |used: bool, port: u16| {
            if used {
                format!("127.0.0.1:{port}")
            } else {
                "-".into()
            }
        };
        let role = match p.role {
            NodeRole::Combined => "",
            NodeRole::Controller => "  (controller only)",
            NodeRole::Broker => "  (broker only)",
        };
        println!(
            "node {}  pid {pid}  client {}  controller {}  metrics {metrics}  log {}{role}",
            p.id,
            port(p.role.is_broker(), p.client),
            port(p.role.is_controller(), p.controller),
            log.display()
        );
    }
    println!("bootstrap {}", bootstrap(&plan));
    watch(
        &mut nodes,
        &bootstrap(&plan),
        Duration::from_secs(args.start_timeout.max(1)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_a_hundred_ports_apart() {
        let p = plan(3, 0, 9092, true).unwrap();
        let ports: Vec<_> = p
            .iter()
            .map(|n| (n.id, n.client, n.controller, n.metrics))
            .collect();
        assert_eq!(
            ports,
            [
                (1, 9092, 9093, Some(9094)),
                (2, 9192, 9193, Some(9194)),
                (3, 9292, 9293, Some(9294))
            ]
        );
        assert_eq!(
            voters(&p),
            "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293"
        );
        assert_eq!(
            bootstrap(&p),
            "127.0.0.1:9092,127.0.0.1:9192,127.0.0.1:9292"
        );
        assert_eq!(plan(1, 0, 100, false).unwrap()[0].metrics, None);
        assert!(plan(0, 0, 9092, true)
            .unwrap_err()
            .contains("--nodes must be 1 to 32 (not 0)"));
        assert!(plan(33, 0, 9092, true).is_err());
        assert!(plan(1, 0, 0, true).is_err());
        // The last node's metrics port must exist.
        assert!(plan(2, 0, 65434, true)
            .unwrap_err()
            .contains("node 2 would need port 65536"));
        assert!(plan(2, 0, 65433, true).is_ok());
        assert!(plan(2, 0, 65434, false).is_ok());
    }

    #[test]
    fn a_taken_port_is_refused_before_anything_starts() {
        // A taken port whose neighbour below is free (other processes hold ports too: the
        // neighbour is checked, or the controller-port case would find the client port taken).
        let (taken, port) = (0..50)
            .find_map(|_| {
                let taken = TcpListener::bind("127.0.0.1:0").unwrap();
                let port = taken.local_addr().unwrap().port();
                let below_free = port > 1 && TcpListener::bind(("127.0.0.1", port - 1)).is_ok();
                below_free.then_some((taken, port))
            })
            .expect("a taken port with a free one below it");
        // The taken port as node 1's client port, then as its controller port.
        let err = check_ports(&plan(1, 0, port, true).unwrap()).unwrap_err();
        assert!(
            err.contains(&format!("port {port} (node 1's client port) is not free")),
            "{err}"
        );
        let err = check_ports(&plan(1, 0, port - 1, false).unwrap()).unwrap_err();
        assert!(err.contains("node 1's controller port"), "{err}");
        drop(taken);
        assert_eq!(check_ports(&plan(1, 0, port, false).unwrap()), Ok(()));
    }

    #[test]
    fn the_cluster_file_round_trips_and_refuses_garbage() {
        let f = ClusterFile {
            cluster_id: crate::meta::new_cluster_id(),
            nodes: 5,
            controllers: 0,
            port: 19092,
        };
        assert_eq!(
            ClusterFile::parse(&format!("{}\n", f.cluster_id), &f.properties()),
            Ok(f.clone())
        );
        let id = &f.cluster_id;
        let bad = |id: &str, props: &str| ClusterFile::parse(id, props).unwrap_err();
        assert!(bad("short", "nodes=3\nport=9092").contains("not a 22-character base64"));
        assert!(bad("abc/defghijklmnopqrstu", "nodes=3\nport=9092").contains("base64"));
        assert!(bad(id, "nodes=3").contains("no port="));
        assert!(bad(id, "port=9092").contains("no nodes="));
        assert!(bad(id, "nodes=three\nport=9092").contains("nodes=three is not a number"));
        assert!(bad(id, "nodes=3\nport=9092\nspeed=fast").contains("unknown key 'speed'"));
        assert!(bad(id, "nodes 3").contains("is not key=value"));
    }

    #[test]
    fn a_stored_cluster_is_restarted_as_it_was() {
        let dir = Path::new("/tmp/c");
        let stored = ClusterFile {
            cluster_id: "AAAAAAAAAAAAAAAAAAAAAA".into(),
            nodes: 3,
            controllers: 0,
            port: 9092,
        };
        for (nodes, port) in [(None, None), (Some(3), None), (Some(3), Some(9092))] {
            assert_eq!(
                settle(Some(stored.clone()), nodes, None, port, dir),
                Ok((stored.clone(), false))
            );
        }
        let err = settle(Some(stored.clone()), Some(5), None, None, dir).unwrap_err();
        assert!(
            err.contains("/tmp/c holds a cluster with --nodes 3, not 5"),
            "{err}"
        );
        let err = settle(Some(stored.clone()), None, None, Some(19092), dir).unwrap_err();
        assert!(err.contains("with --port 9092, not 19092"), "{err}");
        let (new, is_new) = settle(None, None, None, None, dir).unwrap();
        assert!(is_new);
        assert_eq!((new.nodes, new.port, new.cluster_id.len()), (3, 9092, 22));
        let (new, _) = settle(None, Some(5), None, Some(19092), dir).unwrap();
        assert_eq!((new.nodes, new.port), (5, 19092));
        let err = settle(Some(stored), None, Some(3), None, dir).unwrap_err();
        assert!(err.contains("with --controllers 0, not 3"), "{err}");
    }

    #[test]
    fn separate_controllers_are_the_first_nodes_and_listen_only_as_controllers() {
        let p = plan(5, 3, 9092, true).unwrap();
        let roles: Vec<_> = p.iter().map(|n| (n.id, n.role, n.metrics)).collect();
        assert_eq!(
            roles,
            [
                (1, NodeRole::Controller, None),
                (2, NodeRole::Controller, None),
                (3, NodeRole::Controller, None),
                (4, NodeRole::Broker, Some(9394)),
                (5, NodeRole::Broker, Some(9494)),
            ]
        );
        assert_eq!(
            voters(&p),
            "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293"
        );
        assert_eq!(bootstrap(&p), "127.0.0.1:9392,127.0.0.1:9492");
        assert!(plan(3, 3, 9092, true)
            .unwrap_err()
            .contains("--controllers 3 leaves no broker among 3 nodes"));
        let f = ClusterFile {
            cluster_id: crate::meta::new_cluster_id(),
            nodes: 5,
            controllers: 3,
            port: 9092,
        };
        assert_eq!(
            ClusterFile::parse(&f.cluster_id, &f.properties()),
            Ok(f.clone())
        );
        let (new, _) = settle(None, Some(5), Some(3), None, Path::new("/tmp/c")).unwrap();
        assert_eq!((new.nodes, new.controllers), (5, 3));
    }

    #[test]
    fn extra_flags_are_checked() {
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(check_extra(&s(&["--num.partitions=3"])), Ok(true));
        assert_eq!(check_extra(&s(&["--metrics.listener="])), Ok(false));
        assert!(check_extra(&s(&["--metrics.listener=127.0.0.1:9644"]))
            .unwrap_err()
            .contains("one port for every node"));
        assert!(check_extra(&s(&["--listeners=PLAINTEXT://:1"]))
            .unwrap_err()
            .contains("set for each node"));
        assert!(check_extra(&s(&["--num.partitions", "3"]))
            .unwrap_err()
            .contains("must be --key=value"));
    }

    #[test]
    fn a_directory_that_is_not_a_cluster_is_refused() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(load(&t.path().join("new")).unwrap(), None);
        assert_eq!(load(t.path()).unwrap(), None);
        std::fs::write(t.path().join("notes.txt"), "mine").unwrap();
        assert!(load(t.path())
            .unwrap_err()
            .to_string()
            .contains("is not empty and holds no cluster"));
        std::fs::write(t.path().join(ID_FILE), "AAAAAAAAAAAAAAAAAAAAAA\n").unwrap();
        assert!(load(t.path())
            .unwrap_err()
            .to_string()
            .contains("only one of"));
        std::fs::write(t.path().join(PROPS_FILE), "nodes=2\nport=9092\n").unwrap();
        assert_eq!(load(t.path()).unwrap().map(|f| f.nodes), Some(2));
    }
}
