//! `treewidth`: TWRemat, rematerialization by divide and conquer over a tree decomposition
//! (Kumar et al. 2019, Algorithm 1, Theorem 5), with the TWRemat(k) trade-off of §4.3.
//!
//! [`tw_schedule`] is Algorithm 1: pick a balanced separator bag X* (Lemma 3) of the
//! decomposition (shrunk to at most n bags by Lemma 1); for each node v of X* in topological
//! order, recursively schedule v's inputs inside each component left by removing X*, then v;
//! finally recursively schedule the requested nodes that lie in the components. Separators are
//! memoized ([`SeparatorHierarchy`]): the proof of Theorem 5 needs each sub-decomposition's
//! separator found once, not once per call. TWRemat(k) stops the recursion in parts with
//! fewer than k bags and schedules what is needed there in topological order, so k = 1 is
//! TWRemat and k above the number of bags is NoRemat.
//!
//! A training step has many outputs (the loss and every gradient), so the top-level call asks
//! for all of them at once, as Algorithm 1 allows (`S` is a set). Dead values (sinks that are
//! not outputs) are requested too, so every node runs. Deviations, written down:
//!
//! * A call computes only the separator nodes that the requested set needs (reaches within the
//!   call's nodes), not all of X*. Lemma 4's proof only covers predecessors of requested
//!   nodes: a separator node nothing requested needs may read a node of an enclosing separator
//!   that comes later in topological order and is not computed yet, so computing all of X*
//!   can produce an invalid schedule (it did, on our MLP). Needed nodes read only enclosing
//!   separator nodes that precede the node the enclosing call is preparing, which are resident.
//! * A recursive call with an empty request is skipped (it would compute nothing).
//! * Impure nodes keep only their first execution (they may run once); their value stays
//!   resident until its last use instead.
//!
//! Choosing k: with a budget, the cheapest plan (after [`polish`](crate::polish::polish)) within it over
//! k ∈ {1, 2, 4, …, bags + 1} and both elimination heuristics; without one, the lowest peak
//! (`choose_candidate` in the crate root).
//! `--tw-stop` and `--td-heuristic` fix either.

use crate::pathwidth::LENGTH_LIMIT_PER_NODE;
use crate::treedec::{EliminationHeuristic, SeparatorHierarchy, TreeDecomposition};
use crate::{
    plan_among, smallest_budget_among, Candidates, Deadline, PlanDetails, PlanError, PlanRequest, Planner,
    PlannerOptions,
};
use remat_graph::{Graph, NodeId, Schedule};

/// Kumar et al.'s TWRemat (Algorithm 1) with the TWRemat(k) trade-off.
pub struct TwRemat;

impl Planner for TwRemat {
    fn name(&self) -> &'static str {
        "treewidth"
    }
    fn summary(&self) -> &'static str {
        "TWRemat: divide and conquer over balanced separators of a tree decomposition (Kumar et al.)"
    }
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError> {
        Ok(self.plan_detailed(request)?.0)
    }
    fn plan_detailed(&self, request: &PlanRequest<'_>) -> Result<(Schedule, PlanDetails), PlanError> {
        plan_among(request, "treewidth", candidates(request)?)
    }
    /// The candidates (TWRemat(k) for every k and heuristic) do not depend on the budget, so
    /// they are built once and only the choice among them is bisected.
    fn smallest_feasible_budget_once(
        &self,
        graph: &Graph,
        order: &[NodeId],
        options: &PlannerOptions,
    ) -> Option<Option<u64>> {
        Some(smallest_budget_among(graph, order, options, "treewidth", candidates))
    }
}

/// TWRemat(k) for each k (or `--tw-stop`'s) and each elimination heuristic (or
/// `--td-heuristic`'s).
fn candidates(request: &PlanRequest<'_>) -> Result<Candidates, PlanError> {
    let graph = request.graph;
    let options = request.options;
    let rank = request.order_positions()?;
    let heuristics: Vec<EliminationHeuristic> = match options.td_heuristic {
        Some(h) => vec![h],
        None => EliminationHeuristic::ALL.to_vec(),
    };
    let limit = LENGTH_LIMIT_PER_NODE.saturating_mul(graph.len().max(1));
    let deadline = options.deadline;
    let mut candidates = Candidates::default();
    for heuristic in heuristics {
        let Some(mut td) = TreeDecomposition::from_elimination_until(graph, heuristic, deadline) else {
            candidates.out_of_time = true;
            break;
        };
        td.compress();
        debug_assert_eq!(td.validate(graph), Ok(()));
        let hierarchy = SeparatorHierarchy::new(&td, graph.len(), &rank);
        let stops: Vec<usize> = match options.tw_stop {
            Some(k) => vec![k.max(1)],
            None => std::iter::successors(Some(1usize), |&k| (k <= td.len()).then_some(k * 2)).collect(),
        };
        tracing::debug!(heuristic = heuristic.name(), width = td.width(), bags = td.len(), "tree decomposition");
        for k in stops {
            if deadline.expired() {
                candidates.out_of_time = true;
                break;
            }
            match tw_schedule(graph, &hierarchy, &rank, request.order, k, limit, deadline) {
                Some(schedule) => candidates.schedules.push(schedule),
                None => tracing::debug!(stop = k, limit, "TWRemat(k) abandoned: schedule too long or out of time"),
            }
        }
    }
    candidates.out_of_time |= deadline.expired();
    Ok(candidates)
}

/// TWRemat(k) on the whole graph: the outputs and dead values requested at the top level;
/// impure nodes then keep only their first execution. `None` once the raw schedule passes
/// `limit` steps, or once `deadline` passes.
pub fn tw_schedule(
    graph: &Graph,
    hierarchy: &SeparatorHierarchy,
    rank: &[usize],
    order: &[NodeId],
    stop: usize,
    limit: usize,
    deadline: Deadline,
) -> Option<Schedule> {
    if hierarchy.levels.is_empty() {
        return Some(Vec::new());
    }
    let mut wanted: Vec<NodeId> = graph
        .ids()
        .filter(|&n| !graph.node(n).argument && (graph.node(n).output || graph.succs(n).is_empty()))
        .collect();
    wanted.sort_by_key(|n| rank[n.index()]);
    let mut run = Recursion {
        graph,
        hierarchy,
        rank,
        order,
        stop,
        limit,
        schedule: Vec::new(),
        stamp: vec![0; graph.len()],
        calls: 0,
        deadline,
        out_of_time: false,
    };
    run.call(0, &wanted);
    if run.schedule.len() > limit || run.out_of_time {
        return None;
    }
    let mut executed = vec![false; graph.len()];
    run.schedule.retain(|&n| graph.node(n).pure || !std::mem::replace(&mut executed[n.index()], true));
    Some(run.schedule)
}

struct Recursion<'a> {
    graph: &'a Graph,
    hierarchy: &'a SeparatorHierarchy,
    rank: &'a [usize],
    order: &'a [NodeId],
    stop: usize,
    /// The recursion gives up once the schedule passes this many steps.
    limit: usize,
    schedule: Schedule,
    /// `stamp[v] == calls` marks `v` as needed by the current call.
    stamp: Vec<u64>,
    calls: u64,
    /// Read at every call: a call walks up to the whole graph, so the clock is cheap beside it.
    deadline: Deadline,
    out_of_time: bool,
}

impl Recursion<'_> {
    /// Algorithm 1 on level `level` (V' = its nodes), computing `wanted` ⊆ V'.
    fn call(&mut self, level: usize, wanted: &[NodeId]) {
        if self.schedule.len() > self.limit || self.out_of_time {
            return;
        }
        if self.deadline.expired() {
            self.out_of_time = true;
            return;
        }
        let needed = self.needed(level, wanted);
        let here = &self.hierarchy.levels[level];
        if here.bags < self.stop {
            // TWRemat(k)'s base case: what is needed, in topological order.
            self.schedule.extend(needed);
            return;
        }
        let separator: Vec<NodeId> = here
            .separator
            .iter()
            .copied()
            .filter(|v| needed.binary_search_by_key(&self.rank[v.index()], |n| self.rank[n.index()]).is_ok())
            .collect();
        let children = here.children.clone();
        for &v in &separator {
            let inputs = self.split_by_child(level, self.graph.preds(v), &children);
            for (child, part) in children.iter().zip(inputs) {
                if !part.is_empty() {
                    self.call(*child, &part);
                }
            }
            self.schedule.push(v);
        }
        let rest: Vec<NodeId> = wanted.iter().copied().filter(|v| !separator.contains(v)).collect();
        let parts = self.split_by_child(level, &rest, &children);
        for (child, part) in children.iter().zip(parts) {
            if !part.is_empty() {
                self.call(*child, &part);
            }
        }
    }

    /// The nodes of `nodes` in each child's part (each in the graph's order, no duplicates).
    fn split_by_child(&self, level: usize, nodes: &[NodeId], children: &[usize]) -> Vec<Vec<NodeId>> {
        let mut parts = vec![Vec::new(); children.len()];
        for &n in nodes {
            if self.graph.node(n).argument {
                continue;
            }
            if let Some(child) = self.hierarchy.child_holding(level, n) {
                let slot = children.iter().position(|&c| c == child).expect("a child of this level");
                if !parts[slot].contains(&n) {
                    parts[slot].push(n);
                }
            }
        }
        for part in &mut parts {
            part.sort_by_key(|n| self.rank[n.index()]);
        }
        parts
    }

    /// The nodes of `level`'s part from which `wanted` is reachable inside the part (nodes
    /// outside it are resident), in topological order.
    fn needed(&mut self, level: usize, wanted: &[NodeId]) -> Vec<NodeId> {
        self.calls += 1;
        let mut stack: Vec<NodeId> = wanted.to_vec();
        let mut list = Vec::new();
        while let Some(n) = stack.pop() {
            if self.graph.node(n).argument || self.stamp[n.index()] == self.calls || !self.hierarchy.holds(level, n) {
                continue;
            }
            self.stamp[n.index()] = self.calls;
            list.push(n);
            stack.extend(self.graph.preds(n).iter().copied());
        }
        list.sort_by_key(|n| self.rank[n.index()]);
        debug_assert!(list.iter().all(|n| self.order[self.rank[n.index()]] == *n));
        list
    }
}
