//! The assignor beside Kafka 4.4's own `StickyTaskAssignor`, on the same random groups.
//!
//! Ignored by default: it needs `java`/`javac` (17) and Kafka's jars, from
//! `.tools/kafka-4.4.0/libs` of the workspace (`scripts/reference/kafka install`) or
//! `$KAFKA_LIBS`. Run it with
//! `cargo test -p samsa-streams-group kafka_diff -- --ignored --nocapture`.
//!
//! The small Java program below (Samsa's own) feeds each group to Kafka's assignor, its
//! members put into a `HashMap` in id order as Samsa assumes (Kafka's `TargetAssignmentBuilder`
//! puts them in its group's order), and prints the result: the two assignments must be the
//! same, and pass [`check_assignment`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use super::tests::{arb_group, flat};
use super::*;

const HARNESS: &str = r#"
import java.io.*;
import java.util.*;
import org.apache.kafka.coordinator.group.api.streams.assignor.*;
import org.apache.kafka.coordinator.group.streams.assignor.*;

public class AssignorHarness {
    static void add(Map<String, Map<String, Set<Integer>>> all, String member, String sub, int p) {
        all.get(member).computeIfAbsent(sub, k -> new HashSet<>()).add(p);
    }

    static String tasks(Map<String, Set<Integer>> tasks) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, Set<Integer>> e : tasks.entrySet())
            for (int p : e.getValue()) out.add(e.getKey() + "_" + p);
        Collections.sort(out);
        return out.isEmpty() ? "-" : String.join(",", out);
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int standbys = 0;
        TreeMap<String, int[]> subtopologies = new TreeMap<>();
        TreeMap<String, String> processes = new TreeMap<>();
        Map<String, Map<String, Set<Integer>>> active = new HashMap<>(), standby = new HashMap<>();
        Map<String, Map<String, Map<Integer, Long>>> offsets = new HashMap<>();
        String member = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "standbys": standbys = Integer.parseInt(f[1]); break;
                case "subtopology":
                    subtopologies.put(f[1], new int[] {Integer.parseInt(f[2]), Integer.parseInt(f[3])});
                    break;
                case "member":
                    member = f[1];
                    processes.put(member, f[2]);
                    active.put(member, new HashMap<>());
                    standby.put(member, new HashMap<>());
                    offsets.put(member, new HashMap<>());
                    break;
                case "active": add(active, member, f[1], Integer.parseInt(f[2])); break;
                case "standby": add(standby, member, f[1], Integer.parseInt(f[2])); break;
                case "offset":
                    offsets.get(member).computeIfAbsent(f[1], k -> new HashMap<>())
                        .put(Integer.parseInt(f[2]), Long.parseLong(f[3]));
                    break;
                case "end": {
                    Map<String, MemberMetadataAndStateImpl> members = new HashMap<>();
                    for (String m : processes.keySet()) {
                        members.put(m, new MemberMetadataAndStateImpl(Optional.empty(), Optional.empty(),
                            processes.get(m), Map.of(), active.get(m), standby.get(m), Map.of(),
                            offsets.get(m), Map.of()));
                    }
                    final TreeMap<String, int[]> subs = subtopologies;
                    TopologyDescriber topology = new TopologyDescriber() {
                        public List<String> subtopologies() { return new ArrayList<>(subs.keySet()); }
                        public int maxNumInputPartitions(String id) { return subs.get(id)[0]; }
                        public boolean isStateful(String id) { return subs.get(id)[1] != 0; }
                    };
                    GroupSpec spec = new GroupSpecImpl(members, new AssignmentConfigsImpl(standbys, List.of()));
                    try {
                        GroupAssignment result = new StickyTaskAssignor().assign(spec, topology);
                        for (String m : new TreeSet<>(result.members().keySet())) {
                            MemberAssignment a = result.members().get(m);
                            System.out.println(m + " " + tasks(a.activeTasks()) + " " + tasks(a.standbyTasks()));
                        }
                    } catch (RuntimeException e) {
                        System.out.println("error " + e.getClass().getSimpleName());
                    }
                    System.out.println("end");
                    standbys = 0;
                    subtopologies = new TreeMap<>();
                    processes = new TreeMap<>();
                    active = new HashMap<>();
                    standby = new HashMap<>();
                    offsets = new HashMap<>();
                    break;
                }
                default: throw new IllegalArgumentException(line);
            }
        }
    }
}
"#;

/// A group in the harness's input format.
fn write_group(out: &mut String, s: &GroupSpec) {
    writeln!(out, "standbys {}", s.configs.num_standby_replicas).unwrap();
    for (id, sub) in &s.subtopologies {
        writeln!(
            out,
            "subtopology {id} {} {}",
            sub.tasks,
            u8::from(sub.stateful)
        )
        .unwrap();
    }
    for (id, m) in &s.members {
        writeln!(out, "member {id} {}", m.process_id).unwrap();
        for (kind, set) in [
            ("active", &m.current.active),
            ("standby", &m.current.standby),
        ] {
            for (sub, p) in flat(set) {
                writeln!(out, "{kind} {sub} {p}").unwrap();
            }
        }
        for (sub, partitions) in &m.task_offsets {
            for (p, offset) in partitions {
                writeln!(out, "offset {sub} {p} {offset}").unwrap();
            }
        }
    }
    writeln!(out, "end").unwrap();
}

/// One group's answer from the harness.
fn parse_answer(block: &str) -> Option<BTreeMap<String, Tasks>> {
    let mut out = BTreeMap::new();
    for line in block.lines().filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split(' ').collect();
        if f[0] == "error" {
            return None;
        }
        let set = |s: &str| {
            let mut set = TaskSet::new();
            for t in s.split(',').filter(|t| *t != "-") {
                let (sub, p) = t.rsplit_once('_').unwrap();
                set.entry(sub.to_string())
                    .or_default()
                    .insert(p.parse().unwrap());
            }
            set
        };
        out.insert(
            f[0].to_string(),
            Tasks {
                active: set(f[1]),
                standby: set(f[2]),
                warmup: TaskSet::new(),
            },
        );
    }
    Some(out)
}

#[test]
#[ignore = "needs java and Kafka 4.4's jars"]
fn the_same_as_kafka() {
    let libs = std::env::var_os("KAFKA_LIBS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.tools/kafka-4.4.0/libs")
        });
    assert!(
        libs.join("kafka-group-coordinator-4.4.0.jar").exists(),
        "no Kafka 4.4 jars in {} (set KAFKA_LIBS)",
        libs.display()
    );
    let classpath = format!("{}/*", libs.display());
    let dir = std::env::temp_dir().join(format!("samsa-assignor-harness-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("AssignorHarness.java"), HARNESS).unwrap();
    let status = Command::new("javac")
        .args(["-cp", &classpath, "-d"])
        .arg(&dir)
        .arg(dir.join("AssignorHarness.java"))
        .status()
        .expect("javac");
    assert!(status.success());

    let cases: usize = std::env::var("CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let mut runner = TestRunner::deterministic();
    let strategy = arb_group();
    let groups: Vec<GroupSpec> = (0..cases)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect();
    let mut input = String::new();
    groups.iter().for_each(|g| write_group(&mut input, g));
    std::fs::write(dir.join("input.txt"), input).unwrap();

    let output = Command::new("java")
        .args([
            "-cp",
            &format!("{}:{classpath}", dir.display()),
            "AssignorHarness",
        ])
        .stdin(std::fs::File::open(dir.join("input.txt")).unwrap())
        .stderr(Stdio::null())
        .output()
        .expect("java");
    assert!(output.status.success());
    let output = String::from_utf8(output.stdout).unwrap();
    let answers: Vec<&str> = output.split("end\n").collect();
    assert_eq!(answers.len(), cases + 1);

    for (i, (group, answer)) in groups.iter().zip(&answers).enumerate() {
        let ours = assign(group);
        let kafka = parse_answer(answer);
        match (&ours, &kafka) {
            (Ok(ours), Some(kafka)) => {
                assert_eq!(check_assignment(group, kafka), Ok(()), "case {i}: Kafka's");
                assert_eq!(ours, kafka, "case {i}: {group:#?}");
            }
            (Err(_), None) => {}
            _ => panic!("case {i}: ours {ours:?}, Kafka's {kafka:?}"),
        }
    }
    eprintln!("{cases} groups: the same assignments as Kafka's");
    std::fs::remove_dir_all(&dir).ok();
}
