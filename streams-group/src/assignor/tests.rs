use super::*;
use proptest::prelude::*;

/// A spec with these subtopologies (id, tasks, stateful) and standby replicas, no members.
pub(super) fn spec(subtopologies: &[(&str, i32, bool)], standbys: i32) -> GroupSpec {
    GroupSpec {
        members: BTreeMap::new(),
        subtopologies: subtopologies
            .iter()
            .map(|&(id, tasks, stateful)| (id.to_string(), SubtopologySpec { tasks, stateful }))
            .collect(),
        configs: AssignmentConfigs {
            num_standby_replicas: standbys,
            rack_aware_assignment_tags: Vec::new(),
        },
    }
}

fn task_set(tasks: &[(&str, i32)]) -> TaskSet {
    let mut set = TaskSet::new();
    for &(s, p) in tasks {
        set.entry(s.to_string()).or_default().insert(p);
    }
    set
}

pub(super) fn add_member<'a>(
    spec: &'a mut GroupSpec,
    id: &str,
    process: &str,
) -> &'a mut MemberSpec {
    spec.members.insert(
        id.to_string(),
        MemberSpec {
            process_id: process.to_string(),
            ..MemberSpec::default()
        },
    );
    spec.members.get_mut(id).unwrap()
}

fn count(set: &TaskSet) -> usize {
    set.values().map(BTreeSet::len).sum()
}

pub(super) fn flat(set: &TaskSet) -> BTreeSet<(String, i32)> {
    set.iter()
        .flat_map(|(s, ps)| ps.iter().map(move |p| (s.clone(), *p)))
        .collect()
}

#[test]
fn a_single_member_gets_every_task() {
    let mut s = spec(&[("0", 4, true), ("1", 3, false)], 1);
    add_member(&mut s, "m", "p");
    let out = assign(&s).unwrap();
    assert_eq!(out.len(), 1);
    let m = &out["m"];
    assert_eq!(
        m.active,
        task_set(&[
            ("0", 0),
            ("0", 1),
            ("0", 2),
            ("0", 3),
            ("1", 0),
            ("1", 1),
            ("1", 2)
        ])
    );
    // One process: nowhere to put a standby.
    assert!(m.standby.is_empty());
    assert!(m.warmup.is_empty());
}

#[test]
fn members_without_tasks_get_an_empty_assignment() {
    let mut s = spec(&[("0", 1, false)], 0);
    add_member(&mut s, "a", "p1");
    add_member(&mut s, "b", "p2");
    let out = assign(&s).unwrap();
    assert_eq!(out.len(), 2);
    let (with, without): (Vec<_>, Vec<_>) = out.values().partition(|t| !t.active.is_empty());
    assert_eq!((with.len(), count(&with[0].active)), (1, 1));
    assert_eq!(without, vec![&Tasks::default()]);
}

#[test]
fn no_members() {
    let s = spec(&[("0", 0, true)], 1);
    assert_eq!(assign(&s).unwrap(), BTreeMap::new());
    let s = spec(&[("0", 2, true)], 1);
    assert_eq!(
        assign(&s),
        Err(AssignError::NoProcess(TaskId {
            subtopology: "0".into(),
            partition: 0
        }))
    );
}

#[test]
fn balance_across_members_of_distinct_processes() {
    let mut s = spec(&[("0", 6, true), ("1", 4, false)], 0);
    for (m, p) in [("a", "p1"), ("b", "p2"), ("c", "p3")] {
        add_member(&mut s, m, p);
    }
    let out = assign(&s).unwrap();
    let mut counts: Vec<usize> = out.values().map(|t| count(&t.active)).collect();
    counts.sort();
    assert_eq!(counts, vec![3, 3, 4]);
}

#[test]
fn balance_by_process_capacity() {
    // p1 runs two threads, p2 one: p1 takes twice the tasks.
    let mut s = spec(&[("0", 6, false)], 0);
    add_member(&mut s, "a", "p1");
    add_member(&mut s, "b", "p1");
    add_member(&mut s, "c", "p2");
    let out = assign(&s).unwrap();
    for m in ["a", "b", "c"] {
        assert_eq!(count(&out[m].active), 2, "{m}: {out:?}");
    }
}

#[test]
fn a_joining_member_takes_tasks_from_the_others_only() {
    let mut s = spec(&[("0", 6, true)], 0);
    add_member(&mut s, "a", "p1").current.active = task_set(&[("0", 0), ("0", 1), ("0", 2)]);
    add_member(&mut s, "b", "p2").current.active = task_set(&[("0", 3), ("0", 4), ("0", 5)]);
    add_member(&mut s, "c", "p3");
    let out = assign(&s).unwrap();
    for m in ["a", "b", "c"] {
        assert_eq!(count(&out[m].active), 2, "{m}: {out:?}");
    }
    for m in ["a", "b"] {
        assert!(flat(&out[m].active).is_subset(&flat(&s.members[m].current.active)));
    }
}

#[test]
fn a_leaving_member_only_hands_over_its_own_tasks() {
    let mut s = spec(&[("0", 6, true)], 0);
    add_member(&mut s, "a", "p1").current.active = task_set(&[("0", 0), ("0", 3)]);
    add_member(&mut s, "b", "p2").current.active = task_set(&[("0", 1), ("0", 4)]);
    // c, which owned 0_2 and 0_5, left.
    let out = assign(&s).unwrap();
    for m in ["a", "b"] {
        assert_eq!(count(&out[m].active), 3);
        assert!(flat(&s.members[m].current.active).is_subset(&flat(&out[m].active)));
    }
}

#[test]
fn stickiness_is_by_partition_first() {
    // Kafka walks the previous owners' tasks by partition, then subtopology: with room for
    // two, a keeps partition 0 of both subtopologies.
    let mut s = spec(&[("0", 2, false), ("1", 2, false)], 0);
    add_member(&mut s, "a", "p1").current.active =
        task_set(&[("0", 0), ("0", 1), ("1", 0), ("1", 1)]);
    add_member(&mut s, "b", "p2");
    let out = assign(&s).unwrap();
    assert_eq!(out["a"].active, task_set(&[("0", 0), ("1", 0)]));
    assert_eq!(out["b"].active, task_set(&[("0", 1), ("1", 1)]));
}

#[test]
fn a_restarted_instance_gets_its_state_back_through_its_offsets() {
    // a restarted with a new member id and an empty assignment, but reports offsets for the
    // tasks whose state it kept on disk.
    let mut s = spec(&[("0", 4, true)], 0);
    add_member(&mut s, "a2", "p1").task_offsets =
        [("0".to_string(), [(1, 100), (3, 50)].into_iter().collect())]
            .into_iter()
            .collect();
    add_member(&mut s, "b", "p2");
    let out = assign(&s).unwrap();
    assert_eq!(out["a2"].active, task_set(&[("0", 1), ("0", 3)]));
    assert_eq!(out["b"].active, task_set(&[("0", 0), ("0", 2)]));
}

#[test]
fn the_standby_with_the_state_wins_over_offsets_only() {
    // Task 0_0 was on a member that left; b holds it as standby, c only reported offsets
    // (higher ones): b, the standby, gets it.
    let mut s = spec(&[("0", 1, true)], 0);
    add_member(&mut s, "b", "p2").current.standby = task_set(&[("0", 0)]);
    add_member(&mut s, "c", "p3").task_offsets =
        [("0".to_string(), [(0, 1_000)].into_iter().collect())]
            .into_iter()
            .collect();
    let out = assign(&s).unwrap();
    assert_eq!(out["b"].active, task_set(&[("0", 0)]));
    assert!(out["c"].active.is_empty());
}

#[test]
fn standbys_go_to_other_processes() {
    let mut s = spec(&[("0", 4, true)], 1);
    for (m, p) in [("a", "p1"), ("b", "p1"), ("c", "p2"), ("d", "p2")] {
        add_member(&mut s, m, p);
    }
    let out = assign(&s).unwrap();
    let process_of = |m: &str| s.members[m].process_id.clone();
    let mut active_on = BTreeMap::new();
    let mut standby_on = BTreeMap::new();
    for (m, t) in &out {
        for task in flat(&t.active) {
            active_on.insert(task, process_of(m));
        }
        for task in flat(&t.standby) {
            assert!(standby_on.insert(task, process_of(m)).is_none());
        }
    }
    assert_eq!(active_on.len(), 4);
    assert_eq!(standby_on.len(), 4);
    for (task, p) in &active_on {
        assert_ne!(&standby_on[task], p, "{task:?}");
    }
    // Balanced: every member one active and one standby.
    for t in out.values() {
        assert_eq!((count(&t.active), count(&t.standby)), (1, 1), "{out:?}");
    }
}

#[test]
fn no_standbys_with_one_process() {
    let mut s = spec(&[("0", 4, true)], 2);
    add_member(&mut s, "a", "p");
    add_member(&mut s, "b", "p");
    let out = assign(&s).unwrap();
    assert!(out.values().all(|t| t.standby.is_empty()));
    assert_eq!(count(&out["a"].active) + count(&out["b"].active), 4);
}

#[test]
fn standbys_are_capped_by_the_other_processes() {
    // Three standbys asked, two other processes: two standbys per task.
    let mut s = spec(&[("0", 3, true)], 3);
    for (m, p) in [("a", "p1"), ("b", "p2"), ("c", "p3")] {
        add_member(&mut s, m, p);
    }
    let out = assign(&s).unwrap();
    for t in out.values() {
        assert_eq!((count(&t.active), count(&t.standby)), (1, 2), "{out:?}");
    }
}

#[test]
fn stateless_subtopologies_get_no_standbys() {
    let mut s = spec(&[("0", 2, true), ("1", 2, false)], 1);
    add_member(&mut s, "a", "p1");
    add_member(&mut s, "b", "p2");
    let out = assign(&s).unwrap();
    let standbys: BTreeSet<_> = out.values().flat_map(|t| flat(&t.standby)).collect();
    assert_eq!(
        standbys,
        [("0".to_string(), 0), ("0".to_string(), 1)]
            .into_iter()
            .collect()
    );
}

#[test]
fn standbys_stay_where_they_were() {
    let mut s = spec(&[("0", 1, true)], 1);
    add_member(&mut s, "a", "p1").current.active = task_set(&[("0", 0)]);
    add_member(&mut s, "b", "p2");
    add_member(&mut s, "c", "p3").current.standby = task_set(&[("0", 0)]);
    let out = assign(&s).unwrap();
    assert_eq!(out["a"].active, task_set(&[("0", 0)]));
    assert_eq!(out["c"].standby, task_set(&[("0", 0)]));
    assert_eq!(out["b"], Tasks::default());
}

#[test]
fn the_previous_owner_keeps_a_moved_task_as_standby() {
    let mut s = spec(&[("0", 4, true)], 1);
    add_member(&mut s, "a", "p1").current.active =
        task_set(&[("0", 0), ("0", 1), ("0", 2), ("0", 3)]);
    add_member(&mut s, "b", "p2");
    let out = assign(&s).unwrap();
    assert_eq!(out["a"].active, task_set(&[("0", 0), ("0", 1)]));
    assert_eq!(out["a"].standby, task_set(&[("0", 2), ("0", 3)]));
    assert_eq!(out["b"].active, task_set(&[("0", 2), ("0", 3)]));
    assert_eq!(out["b"].standby, task_set(&[("0", 0), ("0", 1)]));
}

#[test]
fn warm_ups_are_neither_read_nor_assigned() {
    let mut s = spec(&[("0", 2, true)], 0);
    add_member(&mut s, "a", "p1").current.active = task_set(&[("0", 0), ("0", 1)]);
    add_member(&mut s, "b", "p2").current.warmup = task_set(&[("0", 0)]);
    let out = assign(&s).unwrap();
    // a keeps one (quota 1); b gets the other by load, not the one it was warming up.
    assert_eq!(out["a"].active, task_set(&[("0", 0)]));
    assert_eq!(out["b"].active, task_set(&[("0", 1)]));
    assert!(out.values().all(|t| t.warmup.is_empty()));
}

#[test]
fn tasks_outside_the_topology_are_ignored() {
    let mut s = spec(&[("0", 2, true)], 1);
    let a = add_member(&mut s, "a", "p1");
    a.current.active = task_set(&[("0", 0), ("0", 7), ("9", 0)]);
    a.current.standby = task_set(&[("8", 1)]);
    a.task_offsets = [("0".to_string(), [(5, 3)].into_iter().collect())]
        .into_iter()
        .collect();
    add_member(&mut s, "b", "p2");
    let out = assign(&s).unwrap();
    assert_eq!(out["a"].active, task_set(&[("0", 0)]));
    assert_eq!(out["b"].active, task_set(&[("0", 1)]));
}

#[test]
fn configs_from_kafkas_map() {
    assert_eq!(
        AssignmentConfigs::from_map(&BTreeMap::new()),
        Ok(AssignmentConfigs::default())
    );
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let c = AssignmentConfigs::from_map(&map(&[
        ("num.standby.replicas", "2"),
        ("rack.aware.assignment.tags", "zone,,cluster,,"),
    ]))
    .unwrap();
    assert_eq!(c.num_standby_replicas, 2);
    assert_eq!(c.rack_aware_assignment_tags, vec!["zone", "", "cluster"]);
    let c = AssignmentConfigs::from_map(&map(&[("num.standby.replicas", "1")])).unwrap();
    assert_eq!(c.rack_aware_assignment_tags, Vec::<String>::new());
    assert_eq!(c.to_map(), map(&[("num.standby.replicas", "1")]));
    assert!(AssignmentConfigs::from_map(&map(&[("rack.aware.assignment.tags", "a")])).is_err());
    assert!(AssignmentConfigs::from_map(&map(&[("num.standby.replicas", " 1")])).is_err());
    let c = AssignmentConfigs {
        num_standby_replicas: 0,
        rack_aware_assignment_tags: vec!["zone".into(), "rack".into()],
    };
    assert_eq!(AssignmentConfigs::from_map(&c.to_map()), Ok(c));
}

#[test]
fn the_invariant_check_catches_broken_assignments() {
    let mut s = spec(&[("0", 2, true), ("1", 1, false)], 1);
    add_member(&mut s, "a", "p1");
    add_member(&mut s, "b", "p1");
    add_member(&mut s, "c", "p2");
    let good = assign(&s).unwrap();
    assert_eq!(check_assignment(&s, &good), Ok(()));

    let broken = |f: &dyn Fn(&mut BTreeMap<String, Tasks>)| {
        let mut out = good.clone();
        f(&mut out);
        check_assignment(&s, &out)
    };
    // A task active twice.
    assert!(broken(&|o| {
        let t = o["a"].active.clone();
        o.get_mut("c").unwrap().active.extend(t);
    })
    .is_err());
    // A task active nowhere.
    assert!(broken(&|o| o.values_mut().for_each(|t| t.active.clear())).is_err());
    // Active and standby on one process.
    assert!(broken(&|o| {
        let t = o["a"].active.clone();
        o.get_mut("b").unwrap().standby = t;
    })
    .is_err());
    // A standby of a stateless task.
    assert!(broken(&|o| o.get_mut("c").unwrap().standby = task_set(&[("1", 0)])).is_err());
    // A warm-up.
    assert!(broken(&|o| o.get_mut("c").unwrap().warmup = task_set(&[("0", 0)])).is_err());
    // A missing member.
    assert!(broken(&|o| {
        o.remove("c");
    })
    .is_err());
}

/// A group: (member -> process), subtopologies, standbys, and a previous state made of
/// arbitrary (possibly inconsistent) current tasks and offsets.
pub(super) fn arb_group() -> impl Strategy<Value = GroupSpec> {
    (
        prop::collection::vec(0usize..10, 1..40),
        prop::collection::vec((0i32..16, any::<bool>()), 1..5),
        0i32..4,
        prop::option::of(any::<u64>()),
    )
        .prop_flat_map(|(processes, subs, standbys, salt)| {
            let n = processes.len();
            // The topology's tasks, and two outside it.
            let mut tasks: Vec<(String, i32)> = subs
                .iter()
                .enumerate()
                .flat_map(|(i, (t, _))| (0..*t).map(move |p| (i.to_string(), p)))
                .collect();
            tasks.extend([("9".to_string(), 0), ("0".to_string(), 99)]);
            let t = tasks.len();
            // Per member: active, standby and offset task indexes (may overlap and collide).
            let member_state = (
                prop::collection::vec(0..t, 0..6),
                prop::collection::vec(0..t, 0..4),
                prop::collection::vec((0..t, 0i64..1_000), 0..4),
            );
            (
                Just(processes),
                Just(subs),
                Just(standbys),
                Just((tasks, salt)),
                prop::collection::vec(member_state, n..=n),
            )
        })
        .prop_map(|(processes, subs, standbys, (tasks, salt), states)| {
            let mut s = GroupSpec {
                members: BTreeMap::new(),
                subtopologies: subs
                    .iter()
                    .enumerate()
                    .map(|(i, &(tasks, stateful))| {
                        (i.to_string(), SubtopologySpec { tasks, stateful })
                    })
                    .collect(),
                configs: AssignmentConfigs {
                    num_standby_replicas: standbys,
                    rack_aware_assignment_tags: Vec::new(),
                },
            };
            for (i, (p, (active, standby, offsets))) in processes.iter().zip(states).enumerate() {
                // Short ids, or random ones shaped as Kafka Streams' (member ids of 22
                // characters, process ids as UUIDs), which share hash buckets more.
                let (member, process) = match salt {
                    None => (format!("m{i:02}"), format!("p{p}")),
                    Some(salt) => {
                        let member = format!("{:016x}{:06x}", mix(salt ^ i as u64), i);
                        let u = mix(salt.wrapping_add(*p as u64 + 1_000));
                        let v = mix(u);
                        let process = format!(
                            "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
                            u >> 32,
                            (u >> 16) & 0xffff,
                            u & 0xfff,
                            v >> 52,
                            v & 0xffff_ffff_ffff
                        );
                        (member, process)
                    }
                };
                let m = add_member(&mut s, &member, &process);
                for a in active {
                    let (sub, p) = &tasks[a];
                    m.current.active.entry(sub.clone()).or_default().insert(*p);
                }
                for a in standby {
                    let (sub, p) = &tasks[a];
                    m.current.standby.entry(sub.clone()).or_default().insert(*p);
                }
                for (a, o) in offsets {
                    let (sub, p) = &tasks[a];
                    m.task_offsets.entry(sub.clone()).or_default().insert(*p, o);
                }
            }
            s
        })
}

/// SplitMix64's finalizer: a well-spread 64-bit value.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn invariants_and_balance(s in arb_group()) {
        let out = assign(&s).unwrap();
        prop_assert_eq!(check_assignment(&s, &out), Ok(()));
        prop_assert_eq!(&assign(&s).unwrap(), &out, "deterministic");

        let members = s.members.len();
        let processes: BTreeSet<&str> = s.members.values().map(|m| m.process_id.as_str()).collect();
        let total: usize = s.subtopologies.values().map(|t| t.tasks as usize).sum();
        let ceil = total.div_ceil(members);
        // No member above its share of active tasks.
        for (m, t) in &out {
            prop_assert!(count(&t.active) <= ceil, "{} has {} > {}", m, count(&t.active), ceil);
        }
        // Every stateful task has as many standbys as there are other processes, up to the
        // number asked for; stateless ones none.
        let mut standbys: BTreeMap<(String, i32), usize> = BTreeMap::new();
        for t in out.values() {
            for task in flat(&t.standby) {
                *standbys.entry(task).or_default() += 1;
            }
        }
        let want = (s.configs.num_standby_replicas as usize).min(processes.len() - 1);
        for (sub, spec) in &s.subtopologies {
            for p in 0..spec.tasks {
                let got = standbys.get(&(sub.clone(), p)).copied().unwrap_or(0);
                prop_assert_eq!(got, if spec.stateful { want } else { 0 });
            }
        }
    }

    #[test]
    fn fresh_groups_are_balanced_and_stable(s in arb_group()) {
        // Without a previous state, and with one member per process: active counts within
        // one of each other; the result, fed back as the current assignment, keeps its active
        // tasks (not always its standbys: the total quota can move one).
        let mut s = s;
        let ids: Vec<String> = s.members.keys().cloned().collect();
        for (i, id) in ids.iter().enumerate() {
            let m = s.members.get_mut(id).unwrap();
            *m = MemberSpec { process_id: format!("p{i:02}"), ..MemberSpec::default() };
        }
        let out = assign(&s).unwrap();
        let counts: Vec<usize> = out.values().map(|t| count(&t.active)).collect();
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        prop_assert!(max - min <= 1, "{:?}", counts);
        // Totals (active and standby) are not as even: standbys go to the least loaded process
        // without the task, which left totals 3 apart in some random cases, in Kafka as here.
        for (id, t) in &out {
            s.members.get_mut(id).unwrap().current = t.clone();
        }
        let again = assign(&s).unwrap();
        for (id, t) in &out {
            prop_assert_eq!(&again[id].active, &t.active);
        }
    }
}
