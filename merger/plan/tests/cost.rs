//! What the cluster pays under a plan: which deployments stay, a merged
//! pod's requests and limits, the total caps and the cost objective.

use fmerge_plan::model::{
    CallsTo, HEADROOM, Kept, MIB, Model, Objective, Origin, Resource, Set, bit,
};
use fmerge_plan::search::{self, Limits};

/// A model of `n` functions named a, b, c, … with these calls (one per
/// invocation), one request from outside at a, its declared entry point,
/// 100Mi and 1 core of limits each, no requests, no usage measured, and
/// traffic that names every caller (what a drop needs: [`proven`]).
fn model(n: usize, calls: &[(usize, usize)]) -> Model {
    let mut m = Model {
        names: (0..n)
            .map(|i| ((b'a' + i as u8) as char).to_string())
            .collect(),
        memory: vec![Some(100.0 * MIB); n],
        cpu: vec![Some(1.0); n],
        requests: vec![[None, None]; n],
        calls: vec![Vec::new(); n],
        external: vec![0.0; n],
        left_out: vec![None; n],
        declared: vec![false; n],
        computed: vec![false; n],
        usage: vec![[None, None]; n],
        ..Model::default()
    };
    proven(&mut m);
    for &(u, v) in calls {
        m.calls[u].push(CallsTo {
            callee: v,
            calls: 1.0,
        });
    }
    m.external[0] = 1.0;
    m.finish().unwrap();
    m
}

/// What lets a deployment go: the whole stack planned, the first function
/// a declared entry point, and traffic naming every caller.
fn proven(m: &mut Model) {
    m.partial = None;
    m.declared = vec![false; m.n()];
    m.declared[0] = true;
    m.measured = true;
    m.watched = vec![true; m.n()];
}

fn alone(m: &Model) -> Vec<Set> {
    (0..m.n()).map(bit).collect()
}

/// `alone` with `caller`'s group made of `members` (caller included).
fn with(m: &Model, caller: usize, members: &[usize]) -> Vec<Set> {
    let mut groups = alone(m);
    groups[caller] = members
        .iter()
        .map(|&i| bit(i))
        .fold(Set::EMPTY, |a, b| a | b);
    groups
}

#[test]
fn a_callee_only_its_group_calls_is_dropped() {
    // a calls b and c; a's group holds b: nothing else calls b.
    let m = model(3, &[(0, 1), (0, 2)]);
    let groups = with(&m, 0, &[0, 1]);
    assert_eq!(m.deployed(&groups), [true, false, true]);
    let kept = m.kept(&groups);
    assert_eq!(kept[0], Some(Kept::Caller));
    assert_eq!(kept[2], Some(Kept::NoCopy));
    let r = m.reserved(&groups);
    assert_eq!(r.pods, 2);
    assert_eq!(r.limits[0], Some(300.0 * MIB));
}

#[test]
fn a_callee_with_an_outside_caller_stays() {
    // d calls b too: b's deployment serves d.
    let mut m = model(4, &[(0, 1), (3, 1)]);
    m.external[3] = 1.0;
    let groups = with(&m, 0, &[0, 1]);
    assert_eq!(m.kept(&groups)[1], Some(Kept::Called { by: 3, from: 3 }));
    // A copy's own call leaves its group's process: c (a copy in d's
    // group) stays for b, running in a's pod.
    let mut m = model(4, &[(0, 1), (1, 2), (3, 2)]);
    m.external[3] = 1.0;
    let mut groups = with(&m, 0, &[0, 1]);
    groups[3] = bit(3) | bit(2);
    assert_eq!(m.kept(&groups)[2], Some(Kept::Called { by: 1, from: 0 }));
    assert_eq!(m.deployed(&groups), [true, false, true, true]);
}

#[test]
fn a_callee_with_outside_traffic_stays() {
    let mut m = model(2, &[(0, 1)]);
    m.external[1] = 0.5;
    assert_eq!(m.kept(&with(&m, 0, &[0, 1]))[1], Some(Kept::Outside));
}

#[test]
fn a_declared_entry_point_stays() {
    let mut m = model(2, &[(0, 1)]);
    m.declared[1] = true;
    let groups = with(&m, 0, &[0, 1]);
    assert_eq!(m.kept(&groups)[1], Some(Kept::Declared));
    assert_eq!(m.reserved(&groups).pods, 2);
}

#[test]
fn a_call_through_a_computed_name_keeps_every_deployment() {
    let mut m = model(2, &[(0, 1)]);
    m.computed[0] = true;
    assert_eq!(m.deployed(&with(&m, 0, &[0, 1])), [true, true]);
}

#[test]
fn requests_come_from_measured_usage_and_the_sum_where_unmeasured() {
    let mut m = model(2, &[(0, 1)]);
    m.requests = vec![[Some(32.0 * MIB), Some(0.1)]; 2];
    let set = bit(0) | bit(1);
    // Nothing measured: the members' requests added up.
    let pod = m.pod(0, set);
    assert_eq!(pod.requests[0].amount, Some(64.0 * MIB));
    assert_eq!(pod.requests[0].from, Origin::Stack);
    // Both measured: their usage as one process, with the headroom: the
    // memory every process holds (the least measured, 4Mi) once, the cpu
    // added up.
    m.usage = vec![[Some(8.0 * MIB), Some(0.02)], [Some(4.0 * MIB), Some(0.01)]];
    let pod = m.pod(0, set);
    assert_eq!(pod.requests[0].amount, Some(8.0 * MIB * (1.0 + HEADROOM)));
    let cpu = pod.requests[1].amount.unwrap();
    assert!((cpu - 0.03 * (1.0 + HEADROOM)).abs() < 1e-12, "{cpu}");
    assert_eq!(pod.requests[0].from, Origin::Measured);
    // One measured: its usage, the other's request.
    m.usage[1] = [None, None];
    let pod = m.pod(0, set);
    assert_eq!(
        pod.requests[0].amount,
        Some(8.0 * MIB * (1.0 + HEADROOM) + 32.0 * MIB)
    );
    assert_eq!(pod.requests[1].from, Origin::Mixed);
    // A function alone keeps the stack's figures.
    assert_eq!(m.pod(1, bit(1)).requests[0].amount, Some(32.0 * MIB));
}

#[test]
fn a_merged_pod_holds_what_every_process_holds_once() {
    // c, in no group, is the lightest measured process (4Mi): a merged
    // pod of a (6Mi) and b (5Mi) holds that part once, and what each adds.
    let mut m = model(3, &[(0, 1)]);
    m.usage = vec![
        [Some(6.0 * MIB), None],
        [Some(5.0 * MIB), None],
        [Some(4.0 * MIB), None],
    ];
    assert_eq!(m.shared(Resource::Memory), 4.0 * MIB);
    assert_eq!(m.shared(Resource::Cpu), 0.0);
    let pod = m.pod(0, bit(0) | bit(1));
    assert_eq!(pod.requests[0].amount, Some(7.0 * MIB * (1.0 + HEADROOM)));
}

#[test]
fn limits_hold_when_every_member_peaks_at_once() {
    // a (100Mi) and b (50Mi), the lightest process 10Mi: at once they hold
    // their limits less one copy of that part.
    let mut m = model(2, &[(0, 1)]);
    m.memory = vec![Some(100.0 * MIB), Some(50.0 * MIB)];
    let set = bit(0) | bit(1);
    assert_eq!(m.pod(0, set).limits[0].amount, Some(150.0 * MIB));
    m.usage = vec![[Some(20.0 * MIB), None], [Some(10.0 * MIB), None]];
    assert_eq!(m.pod(0, set).limits[0].amount, Some(140.0 * MIB));
    m.memory[1] = None;
    assert_eq!(m.pod(0, set).limits[0].amount, None);
}

#[test]
fn cpu_limits_hold_when_every_replica_of_a_member_peaks_at_once() {
    // a calls b once a request, 1 core of limit each. Counted pods or not,
    // one pod each: the limits added up.
    let mut m = model(2, &[(0, 1)]);
    let set = bit(0) | bit(1);
    assert_eq!(m.pod(0, set).limits[1].amount, Some(2.0));
    // b on 4 pods, a on 1: the merged pod carries b's four pods' work, up
    // to 4 cores at once beside a's 1.
    m.pods = vec![Some(1.0), Some(4.0)];
    assert_eq!(m.pod(0, set).limits[1].amount, Some(5.0));
    assert_eq!(m.cores(0, set), Some(5.0));
    // b on fewer pods than a: each merged pod still gives b its own core.
    m.pods = vec![Some(4.0), Some(1.0)];
    assert_eq!(m.pod(0, set).limits[1].amount, Some(2.0));
    // Memory is one process's, whatever the replicas.
    assert_eq!(m.pod(0, set).limits[0].amount, Some(200.0 * MIB));
}

#[test]
fn an_unmeasured_members_cpu_request_counts_every_pod_of_its_work() {
    // b on 4 pods requests 0.5 core a pod, its cpu not measured: the merged
    // pod carries its four pods' work, 2 cores, beside a's 0.5.
    let mut m = model(2, &[(0, 1)]);
    m.requests = vec![[None, Some(0.5)]; 2];
    let set = bit(0) | bit(1);
    assert_eq!(m.pod(0, set).requests[1].amount, Some(1.0));
    m.pods = vec![Some(1.0), Some(4.0)];
    let cpu = m.pod(0, set).requests[1];
    assert_eq!((cpu.amount, cpu.from), (Some(2.5), Origin::Stack));
}

#[test]
fn limits_leave_every_member_the_room_it_had_alone() {
    // --limits-assume-apart: lower limits, as if members never peak at once.
    let mut m = model(2, &[(0, 1)]);
    m.constraints.limits_assume_apart = true;
    m.memory = vec![Some(100.0 * MIB), Some(50.0 * MIB)];
    let set = bit(0) | bit(1);
    // Unmeasured: the sum.
    assert_eq!(m.pod(0, set).limits[0].amount, Some(150.0 * MIB));
    // Measured: the most any member needs, its own limit beside what the
    // other adds beyond the shared part (the least measured, 10Mi), with
    // headroom: b's 50Mi beside a's 10Mi more, a's 100Mi beside nothing.
    m.usage = vec![[Some(20.0 * MIB), None], [Some(10.0 * MIB), None]];
    let limit = m.pod(0, set).limits[0].amount.unwrap();
    assert_eq!(limit, 100.0 * MIB);
    assert!(limit - 10.0 * MIB * (1.0 + HEADROOM) >= 50.0 * MIB);
    m.memory[1] = Some(95.0 * MIB);
    let limit = m.pod(0, set).limits[0].amount.unwrap();
    assert_eq!(limit, 95.0 * MIB + 10.0 * MIB * (1.0 + HEADROOM));
    // A member without a limit: the pod has none.
    m.memory[1] = None;
    assert_eq!(m.pod(0, set).limits[0].amount, None);
}

#[test]
fn the_total_caps_count_what_stays_deployed() {
    // a calls b and c: merging both drops both; 300Mi unmerged, 300Mi
    // merged (the pod's sum), in 1 pod.
    let mut m = model(3, &[(0, 1), (0, 2)]);
    m.constraints.max_total_memory = Some(300.0 * MIB);
    assert!(m.within_caps(&with(&m, 0, &[0, 1, 2])));
    // c declared: its own deployment stays beside its copy.
    m.declared[2] = true;
    assert!(!m.within_caps(&with(&m, 0, &[0, 1, 2])));
    assert!(m.within_caps(&with(&m, 0, &[0, 1])));
}

#[test]
fn the_cost_objective_picks_the_cheaper_plan() {
    // a calls b and c at once; c is an entry point (it stays deployed).
    // Latency wants both in a's group; cost only b (dropped with it),
    // since c's copy would reserve more and drop no pod.
    let mut m = model(3, &[(0, 1), (0, 2)]);
    m.declared[2] = true;
    m.constraints.hop_ms = 1.0;
    for objective in [Objective::Latency, Objective::Cost] {
        m.constraints.objective = objective;
        let exact = search::exact(&m, Limits::default()).unwrap();
        let heuristic = search::heuristic(&m);
        let want: Set = match objective {
            Objective::Cost => bit(0) | bit(1),
            _ => bit(0) | bit(1) | bit(2),
        };
        assert_eq!(exact.groups[0], want, "{objective:?}");
        assert_eq!(heuristic.groups[0], want, "{objective:?}");
    }
    let cheap = m.cost(&with(&m, 0, &[0, 1]));
    assert!(cheap < m.cost(&with(&m, 0, &[0, 1, 2])), "{cheap}");
    assert!(cheap < m.cost(&alone(&m)), "{cheap}");
    assert!((m.cost(&alone(&m)) - 1.0).abs() < 1e-12);
    assert_eq!(
        Resource::Memory.show(m.reserved(&alone(&m)).requests[0]),
        "300Mi"
    );
}

#[test]
fn a_callee_kept_by_an_idle_caller_goes_when_the_objective_loses_nothing() {
    // a and b, both entry points, call c; requests reach a only. The
    // latency objective gains nothing from merging c into b, yet b's call
    // is all that keeps c's own deployment: the plan drops it.
    let mut m = model(3, &[(0, 2), (1, 2)]);
    (m.declared[0], m.declared[1]) = (true, true);
    m.constraints.hop_ms = 1.0;
    let found = search::within(&m, Limits::default());
    assert!(found.proven);
    assert_eq!(found.plan.groups[0], bit(0) | bit(2));
    assert_eq!(found.plan.groups[1], bit(1) | bit(2));
    assert_eq!(m.deployed(&found.plan.groups), [true, true, false]);
    // The objective's figure is the one the search proved.
    let searched = search::exact(&m, Limits::default()).unwrap();
    assert_eq!(searched.groups[1], bit(1));
    assert!((found.plan.gain_ms - searched.gain_ms).abs() < 1e-9);
    assert!(m.cost(&found.plan.groups) < m.cost(&searched.groups));
}

#[test]
fn a_callee_stays_when_holding_it_breaks_a_cap() {
    // As above, but b's group may not hold c (100Mi each, 150Mi a group).
    let mut m = model(3, &[(0, 2), (1, 2)]);
    (m.declared[0], m.declared[1]) = (true, true);
    m.constraints.hop_ms = 1.0;
    m.constraints.max_memory = Some(200.0 * MIB);
    m.memory[1] = Some(150.0 * MIB);
    let found = search::within(&m, Limits::default());
    assert_eq!(found.plan.groups[1], bit(1));
    assert_eq!(m.deployed(&found.plan.groups), [true, true, true]);
}

#[test]
fn a_cost_plan_at_its_floor_is_proven_with_no_time_to_search() {
    // a → b → c, a declared, nothing reserved but pods: b and c can go, and
    // one pod is the least any plan keeps (a's, which stays whatever
    // merges). The heuristic's plan reaches it, so it is proven though the
    // branch and bound had no time.
    let mut m = model(3, &[(0, 1), (1, 2)]);
    m.memory = vec![None; 3];
    m.cpu = vec![None; 3];
    m.constraints.objective = Objective::Cost;
    assert!((m.trivial_bound() + 1.0 / 3.0).abs() < 1e-12);
    let found = search::within(
        &m,
        Limits {
            deadline: Some(std::time::Instant::now()),
            ..Limits::default()
        },
    );
    assert_eq!(found.plan.groups[0], with(&m, 0, &[0, 1, 2])[0]);
    assert!((m.cost(&found.plan.groups) - 1.0 / 3.0).abs() < 1e-12);
    assert!(found.proven);
}
