//! Harness for compatibility tests: start the real `samsa` binary on a free port with its own
//! data directory, wait until it serves, and stop it (SIGTERM, or SIGKILL for crash tests)
//! when the test is done. Nothing here knows Samsa's internals; tests talk to the broker only
//! through real Kafka clients.
//!
//! The I/O engine comes from the environment (`SAMSA_IO_ENGINE=epoll|uring|auto`), which the
//! broker reads itself; `scripts/test` runs the suite under both.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

pub mod kafka_java;
pub mod netns;
pub mod power_loss;
pub mod proxy;

pub use netns::{NetLab, NodeNet};

/// How long a broker may take to start serving.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The workspace root (compat-tests' parent).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The `samsa` binary, built once per test process (`cargo build` is quick when up to date).
/// `TEST_SAMSA_BIN` points at another build.
pub fn samsa_bin() -> PathBuf {
    static BUILD: Once = Once::new();
    if let Ok(bin) = std::env::var("TEST_SAMSA_BIN") {
        return PathBuf::from(bin);
    }
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    BUILD.call_once(|| {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.current_dir(workspace_root()).args([
            "build",
            "--quiet",
            "-p",
            "samsa-broker",
            "--bin",
            "samsa",
        ]);
        if profile == "release" {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build for the samsa binary");
        assert!(status.success(), "cargo build of the samsa binary failed");
    });
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("target"));
    target.join(profile).join("samsa")
}

/// A port nobody listens on right now (the broker then proves the listener is its own by
/// answering; see [`Broker::start`]), and never one this process was given before: a port
/// handed out but not bound yet (a cluster's client ports are all chosen before its first node
/// starts) is free to the kernel, which gave one twice, as a node's client and metrics port.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("bind an ephemeral port")
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// What the broker logged so far, collected from its stderr.
type BrokerLog = Arc<Mutex<Vec<String>>>;

/// Options for a broker under test.
#[derive(Clone, Debug, Default)]
pub struct BrokerOptions {
    /// Extra `--key=value` properties.
    pub props: Vec<(String, String)>,
    /// Reuse this data directory (restart tests); a fresh temporary one otherwise.
    pub data_dir: Option<PathBuf>,
    /// Reuse this port (restart tests).
    pub port: Option<u16>,
    /// Run the broker through this wrapper program (`wrapper samsa args...`), e.g. the
    /// `without_io_uring` binary of this crate.
    pub wrapper: Option<PathBuf>,
    /// Run under the power-loss shim (see [`power_loss`]), so that [`Broker::power_off`] can
    /// take away what was not fsynced.
    pub power_loss: bool,
    /// Run the broker in this network namespace, listening on its address there (a
    /// [`NetLab`]'s node); on 127.0.0.1 in this process's namespace otherwise.
    pub netns: Option<NodeNet>,
    /// Run the broker with this file-handle limit (soft and hard `RLIMIT_NOFILE`, as
    /// `prlimit --nofile=N` sets it), as in a container whose limit root cannot raise.
    pub nofile_limit: Option<u64>,
}

impl BrokerOptions {
    pub fn prop(mut self, key: &str, value: impl ToString) -> Self {
        self.props.push((key.to_string(), value.to_string()));
        self
    }
}

/// A running `samsa` process. Dropping it stops the process (SIGKILL if SIGTERM is ignored).
pub struct Broker {
    child: Option<Child>,
    /// The address its listeners bind (127.0.0.1 unless it runs in a namespace of its own).
    pub host: Ipv4Addr,
    pub port: u16,
    /// The Prometheus endpoint's port (`metrics.listener`).
    pub metrics_port: u16,
    pub data_dir: PathBuf,
    _temp: Option<Arc<tempfile::TempDir>>,
    log: Arc<Mutex<Vec<String>>>,
    pub options: BrokerOptions,
}

impl Broker {
    /// Starts a broker with defaults suited to tests (fast group rebalances).
    pub fn start() -> Broker {
        Broker::start_with(BrokerOptions::default())
    }

    pub fn start_with(options: BrokerOptions) -> Broker {
        let (data_dir, temp) = match &options.data_dir {
            Some(d) => (d.clone(), None),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("samsa-test-")
                    .tempdir()
                    .expect("temp dir");
                (t.path().join("data"), Some(Arc::new(t)))
            }
        };
        let mut last_err = String::new();
        // A free port can be taken between choosing it and binding it: retry on a new one.
        for _ in 0..5 {
            let port = options.port.unwrap_or_else(free_port);
            let metrics_port = free_port();
            match Broker::spawn(&options, port, metrics_port, &data_dir) {
                Ok((child, log)) => {
                    return Broker {
                        child: Some(child),
                        host: host(&options),
                        port,
                        metrics_port,
                        data_dir: data_dir.clone(),
                        _temp: temp,
                        log,
                        options,
                    };
                }
                Err(e) if options.port.is_none() && e.contains("Address already in use") => {
                    last_err = e
                }
                Err(e) => panic!("samsa did not start: {e}"),
            }
        }
        panic!("samsa did not start: {last_err}");
    }

    /// Starts several brokers at once (the nodes of one cluster, each with its own fixed
    /// port) and waits until each serves: a node with other voters serves once it has caught up
    /// with the quorum, which needs a majority of the voters running.
    pub fn start_together(options: Vec<BrokerOptions>) -> Vec<Broker> {
        let launched: Vec<_> = options
            .into_iter()
            .map(|options| {
                let port = options
                    .port
                    .expect("nodes started together have fixed ports");
                let metrics_port = free_port();
                let (data_dir, temp) = match &options.data_dir {
                    Some(d) => (d.clone(), None),
                    None => {
                        let t = tempfile::Builder::new()
                            .prefix("samsa-test-")
                            .tempdir()
                            .expect("temp dir");
                        (t.path().join("data"), Some(Arc::new(t)))
                    }
                };
                let (child, log) = Broker::launch(&options, port, metrics_port, &data_dir)
                    .unwrap_or_else(|e| panic!("samsa did not start: {e}"));
                (options, port, metrics_port, data_dir, temp, child, log)
            })
            .collect();
        launched
            .into_iter()
            .map(
                |(options, port, metrics_port, data_dir, temp, child, log)| {
                    let child = Broker::await_serving(child, &log, host(&options), port)
                        .unwrap_or_else(|e| panic!("samsa did not start: {e}"));
                    Broker {
                        child: Some(child),
                        host: host(&options),
                        port,
                        metrics_port,
                        data_dir,
                        _temp: temp,
                        log,
                        options,
                    }
                },
            )
            .collect()
    }

    fn spawn(
        options: &BrokerOptions,
        port: u16,
        metrics_port: u16,
        data_dir: &Path,
    ) -> Result<(Child, BrokerLog), String> {
        let (child, log) = Broker::launch(options, port, metrics_port, data_dir)?;
        let child = Broker::await_serving(child, &log, host(options), port)?;
        Ok((child, log))
    }

    /// Runs the process, its stderr collected; does not wait for it to serve.
    fn launch(
        options: &BrokerOptions,
        port: u16,
        metrics_port: u16,
        data_dir: &Path,
    ) -> Result<(Child, BrokerLog), String> {
        let mut cmd = match &options.wrapper {
            Some(wrapper) => {
                let mut c = Command::new(wrapper);
                c.arg(samsa_bin());
                c
            }
            None => Command::new(samsa_bin()),
        };
        let host = host(options);
        cmd.arg(format!("--listeners=PLAINTEXT://{host}:{port}"))
            .arg(format!("--log.dirs={}", data_dir.display()))
            .arg(format!("--metrics.listener={host}:{metrics_port}"))
            // The console is off unless a test turns it on (`console.listener` in its props,
            // which come after and win): nodes started side by side would contend for its
            // default port.
            .arg("--console.listener=")
            .arg("--group.initial.rebalance.delay.ms=0");
        for (k, v) in &options.props {
            cmd.arg(format!("--{k}={v}"));
        }
        if options.power_loss {
            std::fs::create_dir_all(data_dir).map_err(|e| format!("create the data dir: {e}"))?;
            cmd.envs(power_loss::env(
                data_dir,
                &power_loss::journal_dir(data_dir),
            ));
        }
        if let Some(n) = options.nofile_limit {
            limit_files(&mut cmd, n);
        }
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        // Kept open until the child has entered it (close-on-exec then closes it there).
        let _namespace = match &options.netns {
            Some(net) => Some(enter_namespace_on_spawn(&mut cmd, &net.namespace)?),
            None => None,
        };
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", samsa_bin().display()))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = log.clone();
        let echo = std::env::var("TEST_SAMSA_LOG").is_ok();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if echo {
                    eprintln!("[samsa:{port}] {line}");
                }
                sink.lock().unwrap().push(line);
            }
        });
        Ok((child, log))
    }

    /// Waits until the process says it serves and its port answers.
    fn await_serving(
        mut child: Child,
        log: &BrokerLog,
        host: Ipv4Addr,
        port: u16,
    ) -> Result<Child, String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                std::thread::sleep(Duration::from_millis(50));
                let lines = log.lock().unwrap().join("\n");
                return Err(format!("exited with {status} before serving:\n{lines}"));
            }
            // Serving means our process logged its listener on our port and the port answers.
            let announced = log
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("samsa is serving"));
            if announced
                && TcpStream::connect_timeout(
                    &SocketAddr::from((host, port)),
                    Duration::from_millis(200),
                )
                .is_ok()
            {
                return Ok(child);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err(format!(
                    "not serving after {START_TIMEOUT:?}:\n{}",
                    log.lock().unwrap().join("\n")
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn bootstrap(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The body of `GET /metrics` (OpenMetrics text), fetched with a plain HTTP/1.1 request.
    pub fn scrape_metrics(&self) -> anyhow::Result<String> {
        use std::io::{Read, Write};
        let mut s = TcpStream::connect((self.host, self.metrics_port))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.host
        )?;
        let mut response = String::new();
        s.read_to_string(&mut response)?;
        let (head, body) = response
            .split_once("\r\n\r\n")
            .ok_or_else(|| anyhow::anyhow!("no HTTP head in {response:?}"))?;
        anyhow::ensure!(head.starts_with("HTTP/1.1 200"), "scrape failed: {head}");
        Ok(body.to_string())
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGSTOP: the process stays but does nothing (a long pause, a partition from everyone).
    pub fn pause(&self) {
        unsafe {
            libc::kill(self.pid() as i32, libc::SIGSTOP);
        }
    }

    pub fn resume(&self) {
        unsafe {
            libc::kill(self.pid() as i32, libc::SIGCONT);
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Everything the broker logged so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// SIGTERM, then wait for exit (the clean shutdown path).
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("broker is running");
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait().expect("wait for samsa") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "samsa did not exit within 30 s of SIGTERM:\n{}",
                    self.log_lines().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: a crash, with no chance to flush or checkpoint.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("broker is running");
        let _ = child.kill();
        let _ = child.wait();
    }

    /// A power cut: SIGKILL, then the data directory loses what was not fsynced (the broker
    /// must run under the shim, [`BrokerOptions::power_loss`]). Returns what went.
    pub fn power_off(&mut self) -> power_loss::Lost {
        assert!(
            self.options.power_loss,
            "power_off needs BrokerOptions::power_loss"
        );
        self.kill();
        power_loss::apply(&self.data_dir, &power_loss::journal_dir(&self.data_dir))
            .unwrap_or_else(|e| panic!("cannot apply the power-loss journals: {e}"))
    }

    /// Starts new processes of several stopped brokers at once (the nodes of one cluster, which
    /// serve only once a majority of voters runs) and waits until each serves.
    pub fn restart_together(nodes: &mut [&mut Broker]) {
        let launched: Vec<_> = nodes
            .iter()
            .map(|b| {
                assert!(b.child.is_none(), "stop or kill the broker first");
                Broker::launch(&b.options, b.port, b.metrics_port, &b.data_dir)
                    .unwrap_or_else(|e| panic!("restart failed: {e}"))
            })
            .collect();
        for (b, (child, log)) in nodes.iter_mut().zip(launched) {
            let child = Broker::await_serving(child, &log, b.host, b.port)
                .unwrap_or_else(|e| panic!("restart failed: {e}"));
            b.child = Some(child);
            b.log = log;
        }
    }

    /// Starts a new process on the same port and data directory (after `stop` or `kill`).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "stop or kill the broker first");
        let (child, log) =
            Broker::spawn(&self.options, self.port, self.metrics_port, &self.data_dir)
                .unwrap_or_else(|e| panic!("restart failed: {e}"));
        self.child = Some(child);
        self.log = log;
    }
}

/// Makes `cmd`'s child run with a file-handle limit of `n` (soft and hard `RLIMIT_NOFILE`,
/// as `prlimit --nofile=N` sets it).
pub fn limit_files(cmd: &mut Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Where a broker with `options` listens.
fn host(options: &BrokerOptions) -> Ipv4Addr {
    options
        .netns
        .as_ref()
        .map_or(Ipv4Addr::LOCALHOST, |n| n.address)
}

/// Makes `cmd`'s child join the network namespace `namespace` (an `ip netns` name) before it
/// runs the program, so that its pid is the program's own (signals reach the broker, not a
/// wrapper). Returns the namespace's file, to keep open until the child is spawned.
fn enter_namespace_on_spawn(cmd: &mut Command, namespace: &str) -> Result<std::fs::File, String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let path = format!("/run/netns/{namespace}");
    let file = std::fs::File::open(&path).map_err(|e| format!("open {path}: {e}"))?;
    let fd = file.as_raw_fd();
    // Safety: setns is async-signal-safe and the closure touches nothing else.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(file)
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Several `samsa` processes forming one cluster: every node is broker and controller, a voter
/// of the metadata quorum, with its own client port, controller port and data directory; or,
/// from [`Cluster::start_separate`], controller-only voters and broker-only nodes.
pub struct Cluster {
    pub nodes: Vec<Broker>,
    /// `controller.quorum.voters` as every node was given it.
    pub voters: String,
    pub cluster_id: String,
    /// How many of the first nodes are controller-only (`process.roles=controller`): their
    /// `port` is their controller listener, which serves no clients.
    pub controller_only: usize,
}

impl Cluster {
    pub fn start(n: usize) -> Cluster {
        Cluster::start_with(n, BrokerOptions::default())
    }

    /// Starts `n` nodes with ids 1..=n, each with `options`' extra properties.
    pub fn start_with(n: usize, options: BrokerOptions) -> Cluster {
        Cluster::start_on(vec![None; n], |_| options.clone())
    }

    /// Starts `n` nodes with ids 1..=n, node `id` with `options(id)`' extra properties (a
    /// `broker.rack` per node, say).
    pub fn start_each(n: usize, options: impl Fn(i32) -> BrokerOptions) -> Cluster {
        Cluster::start_on(vec![None; n], options)
    }

    /// Starts one node in each of `lab`'s namespaces (ids 1..), each with `options`' extra
    /// properties: the nodes reach each other, and this process reaches them, through the
    /// lab's bridge, which [`NetLab::cut_from_peers`] and [`NetLab::isolate`] partition.
    pub fn start_in(lab: &NetLab, options: BrokerOptions) -> Cluster {
        let nets = (1..=lab.len() as i32)
            .map(|id| Some(lab.node(id).clone()))
            .collect();
        Cluster::start_on(nets, |_| options.clone())
    }

    fn start_on(nets: Vec<Option<NodeNet>>, options: impl Fn(i32) -> BrokerOptions) -> Cluster {
        let n = nets.len();
        let hosts: Vec<Ipv4Addr> = nets
            .iter()
            .map(|net| net.as_ref().map_or(Ipv4Addr::LOCALHOST, |n| n.address))
            .collect();
        let client_ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let controller_ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let voters = controller_ports
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{}@{}:{p}", i + 1, hosts[i]))
            .collect::<Vec<_>>()
            .join(",");
        // No cluster.id: the nodes derive one from the voter set, as a user's would.
        let options: Vec<BrokerOptions> = (0..n)
            .map(|i| {
                let mut o = options(i as i32 + 1);
                o.port = Some(client_ports[i]);
                o.netns = nets[i].clone();
                let o = o
                    .prop("node.id", i + 1)
                    .prop(
                        "listeners",
                        format!(
                            "PLAINTEXT://{host}:{},CONTROLLER://{host}:{}",
                            client_ports[i],
                            controller_ports[i],
                            host = hosts[i]
                        ),
                    )
                    .prop("controller.listener.names", "CONTROLLER")
                    .prop("controller.quorum.voters", &voters);
                o
            })
            .collect();
        let nodes = Broker::start_together(options);
        let cluster_id = std::fs::read_to_string(nodes[0].data_dir.join("meta.properties"))
            .expect("meta.properties")
            .lines()
            .find_map(|l| l.strip_prefix("cluster.id=").map(str::to_string))
            .expect("a cluster.id");
        Cluster {
            nodes,
            voters,
            cluster_id,
            controller_only: 0,
        }
    }

    /// Starts `controllers` controller-only nodes (ids 1..=controllers, the voters, each
    /// listening only on its controller listener) and then `brokers` broker-only nodes (the
    /// ids after them) that follow the quorum as observers: Kafka's layout with separate
    /// controllers.
    pub fn start_separate(controllers: usize, brokers: usize, options: BrokerOptions) -> Cluster {
        let ports: Vec<u16> = (0..controllers).map(|_| free_port()).collect();
        let voters = ports
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{}@127.0.0.1:{p}", i + 1))
            .collect::<Vec<_>>()
            .join(",");
        let mut nodes: Vec<Broker> = (0..controllers)
            .map(|i| {
                let mut o = options.clone();
                // The harness waits for this port to answer: the controller listener.
                o.port = Some(ports[i]);
                Broker::start_with(
                    o.prop("node.id", i + 1)
                        .prop("process.roles", "controller")
                        .prop("listeners", format!("CONTROLLER://127.0.0.1:{}", ports[i]))
                        .prop("controller.listener.names", "CONTROLLER")
                        .prop("controller.quorum.voters", &voters),
                )
            })
            .collect();
        let cluster_id = std::fs::read_to_string(nodes[0].data_dir.join("meta.properties"))
            .expect("meta.properties")
            .lines()
            .find_map(|l| l.strip_prefix("cluster.id=").map(str::to_string))
            .expect("a cluster.id");
        let mut cluster = Cluster {
            nodes: Vec::new(),
            voters,
            cluster_id,
            controller_only: controllers,
        };
        cluster.nodes.append(&mut nodes);
        for i in 0..brokers {
            cluster.add_observer_with((controllers + i + 1) as i32, options.clone());
        }
        cluster
    }

    /// Starts a broker-only node with id `id` that knows the quorum only through
    /// `controller.quorum.bootstrap.servers` = `bootstrap_servers` (KIP-853).
    pub fn add_bootstrap_observer(&mut self, id: i32, bootstrap_servers: &str) -> &mut Broker {
        let o = BrokerOptions::default()
            .prop("cluster.id", &self.cluster_id)
            .prop("node.id", id)
            .prop("process.roles", "broker")
            .prop("controller.listener.names", "CONTROLLER")
            .prop("controller.quorum.bootstrap.servers", bootstrap_servers);
        self.nodes.push(Broker::start_with(o));
        self.nodes.last_mut().unwrap()
    }

    /// Starts a broker-only node (`process.roles=broker`) with id `id`: it follows the metadata
    /// quorum as an observer and registers with the active controller.
    pub fn add_observer(&mut self, id: i32) -> &mut Broker {
        self.add_observer_with(id, BrokerOptions::default())
    }

    fn add_observer_with(&mut self, id: i32, options: BrokerOptions) -> &mut Broker {
        let o = options
            .prop("cluster.id", &self.cluster_id)
            .prop("node.id", id)
            .prop("process.roles", "broker")
            .prop("controller.listener.names", "CONTROLLER")
            .prop("controller.quorum.voters", &self.voters);
        self.nodes.push(Broker::start_with(o));
        self.nodes.last_mut().unwrap()
    }

    /// The node with `node.id` = `id` (voters are 1..=n, observers follow in the order added).
    pub fn node(&mut self, id: i32) -> &mut Broker {
        &mut self.nodes[(id - 1) as usize]
    }

    /// Every running broker's client address, comma-separated.
    pub fn bootstrap(&self) -> String {
        self.nodes
            .iter()
            .skip(self.controller_only)
            .filter(|n| n.is_running())
            .map(|n| n.bootstrap())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Runs a command with a time limit; returns (status, stdout, stderr).
pub fn run_with_timeout(
    cmd: &mut Command,
    timeout: Duration,
) -> anyhow::Result<(ExitStatus, String, String)> {
    run(cmd, None, timeout)
}

/// Like [`run_with_timeout`], with `input` written to the command's stdin (then closed).
pub fn run_with_input(
    cmd: &mut Command,
    input: &[u8],
    timeout: Duration,
) -> anyhow::Result<(ExitStatus, String, String)> {
    run(cmd, Some(input.to_vec()), timeout)
}

fn run(
    cmd: &mut Command,
    input: Option<Vec<u8>>,
    timeout: Duration,
) -> anyhow::Result<(ExitStatus, String, String)> {
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    // A writer thread, so that a command that stops reading cannot block us.
    let writer = match (input, child.stdin.take()) {
        (Some(data), Some(mut stdin)) => Some(std::thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut stdin, &data);
        })),
        _ => None,
    };
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!(
                "{cmd:?} did not finish within {timeout:?}: stderr: {}",
                err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(w) = writer {
        let _ = w.join();
    }
    Ok((
        status,
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    ))
}

/// The project's Python (a virtual environment made by `scripts/test`).
pub fn python() -> PathBuf {
    let venv = workspace_root().join(".venv/bin/python");
    assert!(
        venv.exists(),
        "{} is missing: run scripts/test (it installs the Python clients)",
        venv.display()
    );
    venv
}

/// kcat, installed by `scripts/test`.
pub fn kcat() -> PathBuf {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = Path::new(dir).join("kcat");
        if p.exists() {
            return p;
        }
    }
    panic!("kcat is not installed: run scripts/test (it installs kcat from Debian)");
}
