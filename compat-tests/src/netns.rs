//! Network partitions between real processes: each node of a cluster runs in its own network
//! namespace, with its own address on a bridge in the root namespace, where the test and its
//! clients stay and reach every node directly. A partition is made with the kernel's routing:
//!
//! - [`NetLab::cut_from_peers`] adds `blackhole` routes between one node and the others, both
//!   ways, so the node loses its peers (the metadata quorum and replication) but clients still
//!   reach it: a leader that goes on taking writes it can no longer replicate. A connection
//!   made before the cut hears nothing more (its packets are dropped as they leave); a new one
//!   fails at once.
//! - [`NetLab::isolate`] takes the node's link to the bridge down: nobody reaches it, clients
//!   included, and its packets vanish silently.
//!
//! [`NetLab::heal`] undoes both. Needs root (CAP_NET_ADMIN) and iproute2's `ip`;
//! [`NetLab::create`] says when they are missing, so that a test can skip. Names carry the test
//! process's id and a counter, and the subnet is one no interface uses, so tests running in
//! parallel do not clash; dropping the lab deletes every namespace, link and route it made,
//! also when a test panics, and a new lab deletes what a killed test process left behind.

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Where one node lives: its namespace (`ip netns` name) and its address there.
#[derive(Clone, Debug)]
pub struct NodeNet {
    pub namespace: String,
    pub address: Ipv4Addr,
}

/// The namespaces, the bridge and the links of one cluster's network.
pub struct NetLab {
    bridge: String,
    /// The root-namespace end of each node's veth pair (index: node id - 1).
    links: Vec<String>,
    nodes: Vec<NodeNet>,
    /// Blackhole routes in place: (namespace, destination).
    blackholes: Mutex<Vec<(String, Ipv4Addr)>>,
}

/// Labs made by this process so far (part of every name).
static LABS: AtomicU32 = AtomicU32::new(0);
const NAMESPACE_PREFIX: &str = "samsa-";

impl NetLab {
    /// Builds a network of `nodes` namespaces. `Err` says why it cannot be done here: not root,
    /// or no `ip` that can make namespaces.
    pub fn create(nodes: usize) -> Result<NetLab, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root (CAP_NET_ADMIN)".into());
        }
        ip(&["netns", "list"]).map_err(|e| format!("iproute2 unusable: {e}"))?;
        remove_leftovers();
        let pid = std::process::id();
        let k = LABS.fetch_add(1, Ordering::Relaxed);
        let subnet = free_subnet(pid, k)?;
        let mut lab = NetLab {
            bridge: format!("sb{pid:x}-{k}"),
            links: Vec::new(),
            nodes: Vec::new(),
            blackholes: Mutex::default(),
        };
        // On an error the half-built lab is dropped, which deletes what was made.
        let gateway = Ipv4Addr::new(subnet[0], subnet[1], subnet[2], 1);
        ip(&["link", "add", &lab.bridge, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{gateway}/24"), "dev", &lab.bridge])?;
        ip(&["link", "set", &lab.bridge, "up"])?;
        for i in 0..nodes {
            let namespace = format!("{NAMESPACE_PREFIX}{pid}-{k}-n{}", i + 1);
            let link = format!("sv{pid:x}-{k}-{}", i + 1);
            let address = Ipv4Addr::new(subnet[0], subnet[1], subnet[2], 2 + i as u8);
            ip(&["netns", "add", &namespace])?;
            lab.nodes.push(NodeNet {
                namespace: namespace.clone(),
                address,
            });
            ip(&[
                "link", "add", &link, "type", "veth", "peer", "name", "eth0", "netns", &namespace,
            ])?;
            lab.links.push(link.clone());
            ip(&["link", "set", &link, "master", &lab.bridge, "up"])?;
            ip(&[
                "-n",
                &namespace,
                "addr",
                "add",
                &format!("{address}/24"),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", &namespace, "link", "set", "eth0", "up"])?;
            ip(&["-n", &namespace, "link", "set", "lo", "up"])?;
        }
        Ok(lab)
    }

    /// Node `id` (1-based, as `node.id`).
    pub fn node(&self, id: i32) -> &NodeNet {
        &self.nodes[(id - 1) as usize]
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `id` loses every other node, both ways; clients still reach it.
    pub fn cut_from_peers(&self, id: i32) {
        let me = self.node(id).clone();
        let mut blackholes = self.blackholes.lock().unwrap();
        for peer in self.nodes.iter().filter(|n| n.address != me.address) {
            for (namespace, destination) in
                [(&me.namespace, peer.address), (&peer.namespace, me.address)]
            {
                ip(&[
                    "-n",
                    namespace,
                    "route",
                    "add",
                    "blackhole",
                    &format!("{destination}/32"),
                ])
                .unwrap_or_else(|e| panic!("cut node {id} from its peers: {e}"));
                blackholes.push((namespace.clone(), destination));
            }
        }
    }

    /// Node `id` loses everyone, clients included: its link to the bridge goes down.
    pub fn isolate(&self, id: i32) {
        ip(&["link", "set", &self.links[(id - 1) as usize], "down"])
            .unwrap_or_else(|e| panic!("isolate node {id}: {e}"));
    }

    /// Every node reaches every other again.
    pub fn heal(&self) {
        for (namespace, destination) in self.blackholes.lock().unwrap().drain(..) {
            ip(&[
                "-n",
                &namespace,
                "route",
                "del",
                "blackhole",
                &format!("{destination}/32"),
            ])
            .unwrap_or_else(|e| panic!("heal: {e}"));
        }
        for link in &self.links {
            ip(&["link", "set", link, "up"]).unwrap_or_else(|e| panic!("heal: {e}"));
        }
    }
}

impl Drop for NetLab {
    fn drop(&mut self) {
        // Deleting one end of a veth pair deletes both; a namespace goes when its last process
        // does (the nodes should be stopped by now).
        for link in &self.links {
            let _ = ip(&["link", "del", link]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
        for n in &self.nodes {
            let _ = ip(&["netns", "del", &n.namespace]);
        }
    }
}

/// Runs `ip args`; `Err` with what it said when it fails.
fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Deletes the namespaces and bridges of test processes that no longer run (killed before
/// their labs were dropped).
fn remove_leftovers() {
    let dead = |pid: u32| !std::path::Path::new(&format!("/proc/{pid}")).exists();
    for line in ip(&["netns", "list"]).unwrap_or_default().lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let pid = name
            .strip_prefix(NAMESPACE_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse().ok());
        if pid.is_some_and(dead) {
            let _ = ip(&["netns", "del", name]);
        }
    }
    for line in ip(&["-o", "link", "show", "type", "bridge"])
        .unwrap_or_default()
        .lines()
    {
        // "12: sb1a2b-0: <BROADCAST,..."
        let name = line.split(": ").nth(1).unwrap_or_default();
        let pid = name
            .strip_prefix("sb")
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| u32::from_str_radix(p, 16).ok());
        if pid.is_some_and(dead) {
            let _ = ip(&["link", "del", name]);
        }
    }
}

/// A 10.x.y.0/24 that no address or route on this machine falls in, starting from one chosen
/// by this process's id and lab number.
fn free_subnet(pid: u32, k: u32) -> Result<[u8; 3], String> {
    let taken = format!(
        "{}\n{}",
        ip(&["-4", "-o", "addr"])?,
        ip(&["-4", "route", "show", "table", "all"])?
    );
    let start = (pid.wrapping_mul(31) + k.wrapping_mul(7)) % (100 * 256);
    (0..100 * 256)
        .map(|i| (start + i) % (100 * 256))
        .map(|n| [10, 150 + (n / 256) as u8, (n % 256) as u8])
        .find(|s| !taken.contains(&format!("10.{}.{}.", s[1], s[2])))
        .ok_or_else(|| "no free 10.x.y.0/24 subnet".to_string())
}
