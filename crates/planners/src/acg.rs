//! `acg`: Re-forwarding (Feng & Huang, seeds/002): store a set of forward tensors V_R during the
//! forward pass, and during the backward pass re-forward each segment between stored tensors
//! from its stored source, right before the first backward op that needs it.
//!
//! ## The objective (Eqn. 1)
//!
//! `Σ_{v ∈ V_R} l(v) + max_segment l(segment)`: the stored tensors plus the largest re-forward.
//! Segments are closed sets (Definition 1) whose endpoints are stored, so the search runs over
//! the division tree ([`crate::division`]).
//!
//! * **LCG solver** (Algorithm 1): for a max term `m`, the fewest stored bytes with every segment
//!   at most `m` is a shortest path in the accessibility graph (an edge `v_i → v_j` when
//!   `l(v_i, v_j) ≤ m`). On a chain the accessible predecessors of `v_j` form a window that only
//!   moves right, so the shortest path is one pass with a monotone deque: O(N) per max term
//!   instead of the paper's O(N²) ([`Solver::series`]).
//! * **ACG solver** (Algorithm 5): a closed set is expanded only when its cost exceeds the max
//!   term; a type-1 node's children then form a chain solved as above, with expanded children as
//!   forced links; a type-2 or type-3 node's members are each a segment or expanded, and a type-3
//!   node stores its members' endpoints. One max term costs O(N).
//! * **Max terms**: Algorithm 1's skipping rule — if the solution under max term `C` has actual
//!   max `B`, every max term in `[B, C)` gives the same solution — makes the next max term
//!   `B − 1` (costs are whole bytes), so no list of all O(N²) closed-set costs is built. The sweep
//!   stops once the stored bytes alone reach the best objective: stored bytes never fall as the
//!   max term falls.
//!
//! ## On a training step
//!
//! The paper's graph is the forward pass, tensors as vertices. [`ForwardPart::of`](crate::step::ForwardPart::of) takes the
//! nodes marked `backward: false` in graph JSON, or else the loss — the smallest output (the
//! scalar a training step returns) — and everything it depends on. Arguments are resident and
//! never vertices; a virtual source and sink (cost 0) join the forward pass's sources and sinks,
//! so a segment may start at the arguments. A view costs its storage root's bytes (storing it
//! keeps the root). [`reforward_schedule`] runs the forward pass once, then the rest of the step
//! in program order, re-forwarding a segment's needed tensors right before the first op that
//! reads one of them.
//!
//! The paper's two assumptions:
//! 1. *Segments have one source and one target* — closed sets have, by definition; the virtual
//!    source and sink make the whole forward pass one closed set.
//! 2. *A multi-input op's gradient does not read its inputs* — where it does, the inputs of
//!    both branches are live at once, which Eqn. 1 does not count. As the paper suggests, one
//!    candidate stores every input of a multi-input forward op that the backward pass reads;
//!    the other trusts the assumption.
//!
//! Outputs, impure nodes and the storage roots of in-place updates are always stored (they
//! cannot be recomputed). The memory model (docs/memory-model.md) is the judge: every
//! candidate — both assumptions, each distinct (stored, max) point of the max-term sweep, and
//! the input order — is simulated, and [`choose_candidate`](crate::choose_candidate) picks the
//! lowest peak, or the cheapest plan within a budget.

use crate::division::{immediate_dominators, meet, Division, DivisionTree, TwoTerminalDag};
use crate::step::{stored_bytes, ForwardPart};
use crate::{
    plan_among, smallest_budget_among, Candidates, Deadline, PlanDetails, PlanError, PlanRequest, Planner,
    PlannerOptions,
};
use remat_graph::{Graph, NodeId, Schedule};

/// Feng & Huang's Re-forwarding with the ACG solver.
pub struct AcgRemat;

/// Most points of a max-term sweep turned into candidate schedules (the optimum always is).
const CANDIDATES_PER_SWEEP: usize = 16;

impl Planner for AcgRemat {
    fn name(&self) -> &'static str {
        "acg"
    }
    fn summary(&self) -> &'static str {
        "Re-forwarding: optimal stored set over the division tree of closed sets (Feng & Huang)"
    }
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError> {
        Ok(self.plan_detailed(request)?.0)
    }
    fn plan_detailed(&self, request: &PlanRequest<'_>) -> Result<(Schedule, PlanDetails), PlanError> {
        plan_among(request, "acg", candidates(request)?)
    }
    /// The candidates do not depend on the budget: built once, only the choice is bisected.
    fn smallest_feasible_budget_once(
        &self,
        graph: &Graph,
        order: &[NodeId],
        options: &PlannerOptions,
    ) -> Option<Option<u64>> {
        Some(smallest_budget_among(graph, order, options, "acg", candidates))
    }
}

/// The input order and, for both assumptions, the plans at the sweep's candidate points.
/// The deadline is checked between solver sweeps and candidates.
fn candidates(request: &PlanRequest<'_>) -> Result<Candidates, PlanError> {
    let graph = request.graph;
    request.order_positions()?;
    let deadline = request.options.deadline;
    let mut candidates = Candidates { schedules: vec![request.order.to_vec()], out_of_time: false };
    let forward = ForwardPart::of(graph, request.order);
    if !forward.nodes.is_empty() && !deadline.expired() {
        let problem = ReforwardProblem::new(graph, &forward);
        for keep_multi_input in [false, true] {
            if deadline.expired() {
                break;
            }
            let solver = problem.solver(keep_multi_input);
            let sweep = solver.sweep_until(deadline);
            tracing::debug!(
                keep_multi_input,
                vertices = forward.nodes.len(),
                max_terms = sweep.points.len(),
                objective = sweep.best().objective,
                "acg sweep"
            );
            // Past the deadline, only the sweep's best point is planned (one tree walk).
            let points = if deadline.expired() { vec![sweep.best()] } else { sweep.candidates(CANDIDATES_PER_SWEEP) };
            for point in points {
                if deadline.expired() && point != sweep.best() {
                    continue;
                }
                let plan = solver.plan_at(point.max_term);
                candidates.schedules.push(problem.schedule(graph, request.order, &plan));
            }
        }
    }
    candidates.out_of_time = deadline.expired();
    Ok(candidates)
}

/// A stored set and its segments, per graph node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReforwardPlan {
    /// Per node index: kept from the forward pass to its last use.
    pub stored: Vec<bool>,
    /// Per node index: the segment a non-stored forward node is re-forwarded with.
    pub segment: Vec<Option<u32>>,
}

/// A training step's forward part as a two-terminal DAG, with costs and the nodes that must be
/// stored.
pub struct ReforwardProblem {
    /// Vertex `i` (1..=n) is `vertex_node[i]`; 0 and n + 1 are the virtual source and sink.
    vertex_node: Vec<Option<NodeId>>,
    /// The division tree of the forward DAG.
    pub tree: DivisionTree,
    /// Eqn. 1's `l(v)` per vertex.
    pub cost: Vec<u64>,
    /// Vertices that can never be recomputed.
    must_store: Vec<bool>,
    /// Inputs of multi-input forward ops that the rest of the step reads (assumption 2).
    multi_input: Vec<bool>,
    forward: Vec<bool>,
    /// Forward nodes left out of the DAG and stored, and their bytes.
    always_stored: Vec<NodeId>,
    detached_bytes: u64,
}

impl ReforwardProblem {
    /// Builds the forward DAG and its division tree.
    ///
    /// Forward values computed from arguments alone (bias broadcasts, the first layer) are
    /// *free sources*: hanging them all from the virtual source would put an edge from it
    /// into every layer and leave no closed set but the whole pass. Each is hung instead from
    /// the nearest common dominator of its readers (it can be recomputed anywhere, so inside
    /// their closed set), computed on the forward DAG without free sources. Symmetrically, a
    /// non-output value nothing in the forward pass reads (graph JSON can mark such) feeds the
    /// nearest common post-dominator of its inputs instead of the virtual sink.
    ///
    /// Free sources that own no bytes (constants, views of arguments) are left out of the DAG
    /// and kept: one constant read by every layer would otherwise tie all layers into one
    /// closed set. (A free source with bytes read from many blocks — a mask, a position table
    /// — still does: its anchor is their common dominator.)
    pub fn new(graph: &Graph, full: &ForwardPart) -> ReforwardProblem {
        let detached =
            |v: NodeId| stored_bytes(graph, v) == 0 && graph.preds(v).iter().all(|p| !full.contains[p.index()]);
        let always_stored: Vec<NodeId> = full.nodes.iter().copied().filter(|&v| detached(v)).collect();
        let mut contains = full.contains.clone();
        for &v in &full.nodes {
            contains[v.index()] = !detached(v);
        }
        let forward =
            &ForwardPart { nodes: full.nodes.iter().copied().filter(|v| contains[v.index()]).collect(), contains };
        let n = forward.nodes.len();
        let mut local = vec![u32::MAX; graph.len()];
        for (i, &v) in forward.nodes.iter().enumerate() {
            local[v.index()] = i as u32;
        }
        let related = |list: &[NodeId]| -> Vec<u32> {
            let mut out: Vec<u32> =
                list.iter().filter(|p| forward.contains[p.index()]).map(|p| local[p.index()]).collect();
            out.sort_unstable();
            out.dedup();
            out
        };
        let preds: Vec<Vec<u32>> = forward.nodes.iter().map(|&v| related(graph.preds(v))).collect();
        let succs: Vec<Vec<u32>> = forward.nodes.iter().map(|&v| related(graph.succs(v))).collect();
        let output = |i: usize| graph.node(forward.nodes[i]).output;
        let any_output_sink = (0..n).any(|i| succs[i].is_empty() && output(i));
        let mut free_source: Vec<bool> = preds.iter().map(Vec::is_empty).collect();
        let mut free_sink: Vec<bool> = (0..n).map(|i| succs[i].is_empty() && any_output_sink && !output(i)).collect();
        if (0..n).all(|i| free_source[i] || free_sink[i]) {
            free_source = vec![false; n];
            free_sink = vec![false; n];
        }
        let core = |i: u32| !free_source[i as usize] && !free_sink[i as usize];
        // Dominators and post-dominators of the core (program order is topological); the
        // virtual source is index n, the virtual sink n + 1.
        let (source, sink) = (n as u32, n as u32 + 1);
        let rank: Vec<i64> = (0..n as i64).chain([-1, n as i64]).collect();
        // The core's edges, with the virtual terminals before its entries and after its exits.
        let mut core_edges: Vec<(u32, u32)> = Vec::new();
        for i in (0..n as u32).filter(|&i| core(i)) {
            let core_preds: Vec<u32> = preds[i as usize].iter().copied().filter(|&p| core(p)).collect();
            if core_preds.is_empty() {
                core_edges.push((source, i));
            }
            core_edges.extend(core_preds.into_iter().map(|p| (p, i)));
            if succs[i as usize].iter().all(|&q| !core(q)) {
                core_edges.push((i, sink));
            }
        }
        let idom = immediate_dominators(n + 2, core_edges.iter().copied(), source);
        let ipdom = immediate_dominators(n + 2, core_edges.iter().map(|&(u, w)| (w, u)), sink);
        let mut edges: Vec<(u32, u32)> = Vec::new();
        for i in 0..n {
            let x = i as u32;
            if free_source[i] {
                let readers = &succs[i];
                let anchor = if readers.iter().all(|&r| core(r)) && !readers.is_empty() {
                    readers
                        .iter()
                        .map(|&r| idom[r as usize])
                        .reduce(|a, b| meet(&idom, a, b, |x, y| rank[x as usize] > rank[y as usize]))
                        .unwrap()
                } else {
                    source
                };
                edges.push((anchor, x));
            } else {
                edges.extend(preds[i].iter().map(|&p| (p, x)));
                if core(x) && preds[i].iter().all(|&p| !core(p)) {
                    edges.push((source, x));
                }
            }
            if free_sink[i] {
                let inputs = &preds[i];
                let anchor = if inputs.iter().all(|&p| core(p)) && !inputs.is_empty() {
                    inputs
                        .iter()
                        .map(|&p| ipdom[p as usize])
                        .reduce(|a, b| meet(&ipdom, a, b, |x, y| rank[x as usize] < rank[y as usize]))
                        .unwrap()
                } else {
                    sink
                };
                edges.push((x, anchor));
            } else if core(x) && succs[i].iter().all(|&q| !core(q)) {
                edges.push((x, sink));
            }
        }
        if n == 0 {
            edges.push((source, sink));
        }
        edges.sort_unstable();
        edges.dedup();
        // Number the DAG topologically, program order first among the ready.
        let mut out_of: Vec<Vec<u32>> = vec![Vec::new(); n + 2];
        let mut indegree = vec![0usize; n + 2];
        for &(a, b) in &edges {
            out_of[a as usize].push(b);
            indegree[b as usize] += 1;
        }
        let mut number = vec![0u32; n + 2];
        let mut ready = std::collections::BinaryHeap::from([std::cmp::Reverse((rank[n], source))]);
        let mut next = 0;
        while let Some(std::cmp::Reverse((_, x))) = ready.pop() {
            number[x as usize] = next;
            next += 1;
            for &y in &out_of[x as usize] {
                indegree[y as usize] -= 1;
                if indegree[y as usize] == 0 {
                    ready.push(std::cmp::Reverse((rank[y as usize], y)));
                }
            }
        }
        debug_assert_eq!(next as usize, n + 2, "the forward DAG with its anchors is acyclic");
        let mut edges: Vec<(u32, u32)> = edges.iter().map(|&(a, b)| (number[a as usize], number[b as usize])).collect();
        edges.sort_unstable();

        let mut vertex_node = vec![None; n + 2];
        let mut cost = vec![0u64; n + 2];
        let mut must_store = vec![false; n + 2];
        let mut multi_input = vec![false; n + 2];
        let fwd = |v: NodeId| forward.contains[v.index()];
        for (i, &v) in forward.nodes.iter().enumerate() {
            let x = number[i] as usize;
            vertex_node[x] = Some(v);
            cost[x] = stored_bytes(graph, v);
            let node = graph.node(v);
            if node.output || !node.pure {
                must_store[x] = true;
            }
            if node.view_of.is_some() && !node.pure {
                let root = graph.storage_root(v);
                if fwd(root) {
                    must_store[number[local[root.index()] as usize] as usize] = true;
                }
            }
            if preds[i].len() >= 2 {
                for &p in &preds[i] {
                    let read_later = graph.succs(forward.nodes[p as usize]).iter().any(|&s| !fwd(s));
                    multi_input[number[p as usize] as usize] |= read_later;
                }
            }
        }
        let tree = DivisionTree::build(&TwoTerminalDag { vertices: n + 2, edges });
        ReforwardProblem {
            vertex_node,
            tree,
            cost,
            must_store,
            multi_input,
            forward: full.contains.clone(),
            detached_bytes: always_stored.iter().map(|&v| stored_bytes(graph, v)).sum(),
            always_stored,
        }
    }

    /// The solver for this step, trusting assumption 2 or storing multi-input ops' inputs.
    pub fn solver(&self, keep_multi_input: bool) -> Solver<'_> {
        let forced: Vec<bool> =
            self.must_store.iter().zip(&self.multi_input).map(|(&m, &i)| m || (keep_multi_input && i)).collect();
        Solver::new(&self.tree, self.cost.clone(), forced, self.detached_bytes)
    }

    /// Chen et al.'s √n checkpoints on the chain of articulation points (the splitting
    /// vertices of the whole forward pass): the chain's bytes are cut into ⌈√(k+1)⌉ stretches
    /// of about equal bytes (k articulation points; by count when every vertex costs the
    /// same), walking greedily and storing the articulation point where a stretch passes its
    /// share, as Chen et al.'s greedy planner does; the nodes that must be stored are too.
    /// Each stretch between checkpoints is one segment.
    pub fn chen_sqrt_n(&self) -> VertexPlan {
        let mut plan = VertexPlan { stored: self.must_store.clone(), segments: Vec::new() };
        let root = &self.tree.nodes[self.tree.root];
        let (children, splits): (&[usize], &[u32]) = match &root.division {
            Division::Series { splits } => (&root.children, splits),
            _ => (std::slice::from_ref(&self.tree.root), &[]),
        };
        let bytes = |vertices: &[u32]| vertices.iter().map(|&v| self.cost[v as usize]).sum::<u64>();
        let interiors: Vec<Vec<u32>> = children.iter().map(|&c| self.tree.interior(c)).collect();
        let total = interiors.iter().map(|i| bytes(i)).sum::<u64>() + bytes(splits);
        let stretches = ((splits.len() + 1) as f64).sqrt().ceil();
        let share = total as f64 / stretches;
        let (mut segment, mut running) = (Vec::new(), 0u64);
        for (i, interior) in interiors.iter().enumerate() {
            segment.extend_from_slice(interior);
            running += bytes(interior);
            if let Some(&split) = splits.get(i) {
                if running as f64 >= share {
                    plan.stored[split as usize] = true;
                    plan.segments.push(std::mem::take(&mut segment));
                    running = 0;
                } else {
                    segment.push(split);
                    running += self.cost[split as usize];
                }
            }
        }
        plan.segments.push(segment);
        plan.segments.retain(|s| !s.is_empty());
        plan
    }

    /// Eqn. 1 for regular training: every forward tensor stored.
    pub fn store_everything(&self) -> u64 {
        self.detached_bytes + self.cost.iter().sum::<u64>()
    }

    /// Eqn. 1 for a plan: stored bytes plus the largest segment's non-stored bytes.
    pub fn objective(&self, plan: &VertexPlan) -> u64 {
        let stored: u64 = plan.stored.iter().zip(&self.cost).filter(|(&s, _)| s).map(|(_, &c)| c).sum();
        let largest = plan
            .segments
            .iter()
            .map(|s| s.iter().filter(|&&v| !plan.stored[v as usize]).map(|&v| self.cost[v as usize]).sum::<u64>())
            .max();
        self.detached_bytes + stored + largest.unwrap_or(0)
    }

    /// The plan on graph nodes.
    pub fn on_nodes(&self, graph: &Graph, plan: &VertexPlan) -> ReforwardPlan {
        let mut stored = vec![false; graph.len()];
        let mut segment = vec![None; graph.len()];
        for &v in &self.always_stored {
            stored[v.index()] = true;
        }
        for (x, &node) in self.vertex_node.iter().enumerate() {
            if let (Some(v), true) = (node, plan.stored[x]) {
                stored[v.index()] = true;
            }
        }
        for (i, members) in plan.segments.iter().enumerate() {
            for &x in members {
                if let Some(v) = self.vertex_node[x as usize] {
                    if !stored[v.index()] {
                        segment[v.index()] = Some(i as u32);
                    }
                }
            }
        }
        ReforwardPlan { stored, segment }
    }

    /// The schedule of a plan ([`reforward_schedule`]).
    pub fn schedule(&self, graph: &Graph, order: &[NodeId], plan: &VertexPlan) -> Schedule {
        reforward_schedule(graph, order, &self.forward, &self.on_nodes(graph, plan))
    }
}

/// The forward pass in program order, then the rest of the step in program order; before each
/// op that reads a forward value neither stored nor re-forwarded yet, its segment's needed
/// nodes (those the rest of the step reads, and what they need inside the segment) are
/// re-forwarded in program order. A segment is re-forwarded once: its values then stay live
/// until their last use.
pub fn reforward_schedule(graph: &Graph, order: &[NodeId], forward: &[bool], plan: &ReforwardPlan) -> Schedule {
    let segments = plan.segment.iter().flatten().map(|&s| s as usize + 1).max().unwrap_or(0);
    // Needed nodes, found backwards from what the rest of the step reads.
    let mut needed = vec![false; graph.len()];
    for &v in order.iter().rev() {
        let read_later = graph.succs(v).iter().any(|&s| !forward[s.index()]);
        if plan.segment[v.index()].is_some() && (read_later || needed[v.index()]) {
            needed[v.index()] = true;
            for &p in graph.preds(v) {
                if plan.segment[p.index()].is_some() {
                    needed[p.index()] = true;
                }
            }
        }
    }
    let mut members: Vec<Vec<NodeId>> = vec![Vec::new(); segments];
    for &v in order {
        if needed[v.index()] {
            members[plan.segment[v.index()].unwrap() as usize].push(v);
        }
    }
    let mut schedule: Schedule = order.iter().copied().filter(|v| forward[v.index()]).collect();
    let mut done = vec![false; segments];
    for &v in order.iter().filter(|v| !forward[v.index()]) {
        for &p in graph.preds(v) {
            if let Some(s) = plan.segment[p.index()] {
                reforward(graph, plan, &members, &mut done, s as usize, &mut schedule);
            }
        }
        schedule.push(v);
    }
    schedule
}

/// Emits segment `s` (after any other segment its nodes read, which a closed set never needs
/// but a hand-made plan might).
fn reforward(
    graph: &Graph,
    plan: &ReforwardPlan,
    members: &[Vec<NodeId>],
    done: &mut [bool],
    s: usize,
    out: &mut Schedule,
) {
    if done[s] {
        return;
    }
    done[s] = true;
    for &v in &members[s] {
        for &p in graph.preds(v) {
            if let Some(other) = plan.segment[p.index()] {
                if other as usize != s {
                    reforward(graph, plan, members, done, other as usize, out);
                }
            }
        }
    }
    out.extend_from_slice(&members[s]);
}

/// A stored set and its segments, on the vertices of a [`ReforwardProblem`]'s DAG.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexPlan {
    /// Per vertex: in V_R.
    pub stored: Vec<bool>,
    /// Each segment's vertices (the interior of a closed set between stored vertices).
    pub segments: Vec<Vec<u32>>,
}

/// One max term of the sweep and what the solver returned for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepPoint {
    /// The max term `m`: no segment may cost more.
    pub max_term: u64,
    /// Stored bytes (Eqn. 1's first term, endpoints included).
    pub stored: u64,
    /// The actual largest segment (≤ `max_term`).
    pub largest_segment: u64,
    /// Eqn. 1: `stored + largest_segment`.
    pub objective: u64,
}

/// Every max term the sweep solved, largest first.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The points, by decreasing max term.
    pub points: Vec<SweepPoint>,
    best: usize,
}

impl Sweep {
    /// The point with the least objective (the largest max term among ties).
    pub fn best(&self) -> SweepPoint {
        self.points[self.best]
    }

    /// Up to `limit` points spread over the trade-off (always including the optimum): the
    /// points not dominated in (stored, largest segment).
    pub fn candidates(&self, limit: usize) -> Vec<SweepPoint> {
        let mut frontier: Vec<SweepPoint> = Vec::new();
        for &p in &self.points {
            // Max terms fall, so stored bytes only rise: a point is new when its segment shrinks.
            if frontier.last().is_none_or(|last| p.largest_segment < last.largest_segment) {
                frontier.push(p);
            }
        }
        let mut chosen: Vec<SweepPoint> = if frontier.len() <= limit {
            frontier
        } else {
            (0..limit).map(|i| frontier[i * (frontier.len() - 1) / (limit - 1).max(1)]).collect()
        };
        if !chosen.contains(&self.best()) {
            chosen.push(self.best());
        }
        chosen
    }
}

/// Algorithm 5 over a division tree with vertex costs.
pub struct Solver<'t> {
    tree: &'t DivisionTree,
    cost: Vec<u64>,
    forced: Vec<bool>,
    /// Per tree node: its interior's bytes, or `u64::MAX` when a forced vertex is inside
    /// (such a closed set can never be one segment).
    segment_cost: Vec<u64>,
    /// Bytes of the root's endpoints (stored, outside the tree's decisions).
    endpoints: u64,
}

/// Max terms and costs are below this; a forced vertex inside a gap costs it.
const BLOCKED: u64 = u64::MAX;

impl<'t> Solver<'t> {
    /// A solver over `tree` with Eqn. 1's `l(v)` in `cost` and vertices that must be stored;
    /// `endpoints` is what the root's endpoints cost (0 for virtual ones).
    pub fn new(tree: &'t DivisionTree, cost: Vec<u64>, forced: Vec<bool>, endpoints: u64) -> Solver<'t> {
        let mut segment_cost = vec![0u64; tree.nodes.len()];
        let vertex = |v: u32| if forced[v as usize] { BLOCKED } else { cost[v as usize] };
        for (id, node) in tree.nodes.iter().enumerate() {
            let own = match &node.division {
                Division::Series { splits } => splits.iter().map(|&v| vertex(v)).fold(0, u64::saturating_add),
                Division::Rigid { inner } => inner.iter().map(|&v| vertex(v)).fold(0, u64::saturating_add),
                Division::Edge | Division::Parallel => 0,
            };
            segment_cost[id] = node.children.iter().map(|&c| segment_cost[c]).fold(own, u64::saturating_add);
        }
        Solver { tree, cost, forced, segment_cost, endpoints }
    }

    /// Algorithm 5's loop over max terms with Algorithm 1's skipping rule.
    pub fn sweep(&self) -> Sweep {
        self.sweep_until(Deadline::NONE)
    }

    /// [`sweep`](Self::sweep), stopped once `deadline` passes with the points solved by then
    /// (at least one). Each point solves the whole division tree, and a forward part of 10^5
    /// vertices has about as many points.
    pub fn sweep_until(&self, deadline: Deadline) -> Sweep {
        let mut points: Vec<SweepPoint> = Vec::new();
        let mut best = 0;
        let mut max_term = BLOCKED - 1;
        if self.tree.nodes.is_empty() {
            return Sweep {
                points: vec![SweepPoint {
                    max_term,
                    stored: self.endpoints,
                    largest_segment: 0,
                    objective: self.endpoints,
                }],
                best,
            };
        }
        loop {
            let (stored, largest) = self.solve_root(max_term, None);
            let stored = stored + self.endpoints;
            let point = SweepPoint { max_term, stored, largest_segment: largest, objective: stored + largest };
            if points.is_empty() || point.objective < points[best].objective {
                best = points.len();
            }
            points.push(point);
            if largest == 0 || stored >= points[best].objective || deadline.expired() {
                break;
            }
            max_term = largest - 1;
        }
        Sweep { points, best }
    }

    /// The optimum of Eqn. 1 for the segment bound `max_term`, as a plan.
    pub fn plan_at(&self, max_term: u64) -> VertexPlan {
        let mut plan = VertexPlan { stored: self.forced.clone(), segments: Vec::new() };
        if !self.tree.nodes.is_empty() {
            let root = &self.tree.nodes[self.tree.root];
            plan.stored[root.source as usize] = true;
            plan.stored[root.target as usize] = true;
            self.solve_root(max_term, Some(&mut plan));
        }
        plan
    }

    /// (stored bytes inside the root, largest segment) under `max_term`.
    fn solve_root(&self, max_term: u64, record: Option<&mut VertexPlan>) -> (u64, u64) {
        let root = self.tree.root;
        if self.segment_cost[root] <= max_term {
            if let Some(plan) = record {
                self.record_segment(plan, &[root], &[]);
            }
            return (0, self.segment_cost[root]);
        }
        // Deep trees recurse deeply; give the recursion room.
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(1 << 28)
                .spawn_scoped(scope, || self.expand(root, max_term, record))
                .expect("spawn the ACG solver thread")
                .join()
                .expect("the ACG solver does not panic")
        })
    }

    /// Node `id` expanded (its endpoints stored by the caller): (stored bytes inside, largest
    /// segment), recording the choices into `record`.
    fn expand(&self, id: usize, max_term: u64, mut record: Option<&mut VertexPlan>) -> (u64, u64) {
        let node = &self.tree.nodes[id];
        match &node.division {
            Division::Edge => (0, 0),
            Division::Series { splits } => self.series(&node.children, splits, max_term, record),
            Division::Parallel | Division::Rigid { .. } => {
                let mut stored = 0;
                if let Division::Rigid { inner } = &node.division {
                    stored = inner.iter().map(|&v| self.cost[v as usize]).sum();
                    if let Some(plan) = record.as_deref_mut() {
                        for &v in inner {
                            plan.stored[v as usize] = true;
                        }
                    }
                }
                let mut largest = 0;
                for &c in &node.children {
                    let (s, l) = self.member(c, max_term, record.as_deref_mut());
                    stored += s;
                    largest = largest.max(l);
                }
                (stored, largest)
            }
        }
    }

    /// A member of a type-2 or type-3 division: one segment when it fits, else expanded.
    fn member(&self, id: usize, max_term: u64, record: Option<&mut VertexPlan>) -> (u64, u64) {
        if self.segment_cost[id] <= max_term {
            if let Some(plan) = record {
                self.record_segment(plan, &[id], &[]);
            }
            (0, self.segment_cost[id])
        } else {
            self.expand(id, max_term, record)
        }
    }

    /// Algorithm 1 on a type-1 node: positions 0..=k are its source, its splitting vertices
    /// and its target; a link `a → b` is one segment (children `a..b` and the splitting
    /// vertices between) when it costs at most `max_term`, or, for `b = a + 1` when child `a`
    /// does not fit, child `a` expanded. Shortest path by stored bytes, with the window of
    /// segment links kept in a monotone deque.
    fn series(&self, children: &[usize], splits: &[u32], max_term: u64, record: Option<&mut VertexPlan>) -> (u64, u64) {
        let k = children.len();
        let split_cost = |b: usize| -> u64 {
            if b == 0 || b == k {
                0
            } else {
                self.cost[splits[b - 1] as usize]
            }
        };
        let split_gap = |b: usize| -> u128 {
            if b == 0 || b == k {
                0
            } else if self.forced[splits[b - 1] as usize] {
                BLOCKED as u128
            } else {
                self.cost[splits[b - 1] as usize] as u128
            }
        };
        // gap(a, b) = prefix[b] - prefix[a] - split_gap(a): children a..b and splits a+1..b.
        let mut prefix = vec![0u128; k + 1];
        for b in 1..=k {
            prefix[b] = prefix[b - 1] + self.segment_cost[children[b - 1]] as u128 + split_gap(b - 1);
        }
        let gap = |a: usize, b: usize| prefix[b] - prefix[a] - split_gap(a);
        let mut dp = vec![0u64; k + 1];
        let mut link = vec![0usize; k + 1];
        let mut expanded: Vec<Option<(u64, u64)>> = vec![None; k];
        let mut window = std::collections::VecDeque::new();
        let mut low = 0;
        for b in 1..=k {
            while window.back().is_some_and(|&a: &usize| dp[a] >= dp[b - 1]) {
                window.pop_back();
            }
            window.push_back(b - 1);
            let child = children[b - 1];
            if self.segment_cost[child] > max_term {
                let (s, l) = self.expand(child, max_term, None);
                expanded[b - 1] = Some((s, l));
                dp[b] = dp[b - 1].saturating_add(s);
                link[b] = b - 1;
                low = b;
                window.clear();
            } else {
                while gap(low, b) > max_term as u128 {
                    low += 1;
                }
                while window.front().is_some_and(|&a| a < low) {
                    window.pop_front();
                }
                let a = *window.front().expect("a = b - 1 always fits");
                dp[b] = dp[a];
                link[b] = a;
            }
            dp[b] = dp[b].saturating_add(split_cost(b));
        }
        // Walk the path back: the largest segment, and the plan when recording.
        let mut record = record;
        let mut largest = 0u64;
        let mut b = k;
        while b > 0 {
            let a = link[b];
            if let Some((_, l)) = expanded[a].filter(|_| a + 1 == b) {
                largest = largest.max(l);
                if let Some(plan) = record.as_deref_mut() {
                    self.expand(children[a], max_term, Some(plan));
                }
            } else {
                largest = largest.max(gap(a, b) as u64);
                if let Some(plan) = record.as_deref_mut() {
                    // Splitting vertices at positions a+1..b sit at splits[a..b-1].
                    self.record_segment(plan, &children[a..b], &splits[a..b - 1]);
                }
            }
            if let Some(plan) = record.as_deref_mut() {
                if a > 0 {
                    plan.stored[splits[a - 1] as usize] = true;
                }
            }
            b = a;
        }
        (dp[k], largest)
    }
}

impl Solver<'_> {
    /// Records the segment made of tree nodes `members` and vertices `joints`. A lone type-2
    /// node is recorded as one segment per branch: the branches only meet at the stored
    /// endpoints, so each is re-forwarded on its own (Eqn. 1 charges them as one, which only
    /// overestimates; the sweep also meets the max term at which the node is expanded).
    fn record_segment(&self, plan: &mut VertexPlan, members: &[usize], joints: &[u32]) {
        if let ([only], []) = (members, joints) {
            if self.tree.nodes[*only].division == Division::Parallel {
                for &branch in &self.tree.nodes[*only].children {
                    self.record_segment(plan, &[branch], &[]);
                }
                return;
            }
        }
        let mut segment = joints.to_vec();
        for &m in members {
            segment.extend(self.tree.interior(m));
        }
        if !segment.is_empty() {
            plan.segments.push(segment);
        }
    }
}

/// Algorithm 1 on a linear computation graph with vertex costs `costs` (endpoints stored):
/// the optimal Eqn. 1 objective and the stored positions.
pub fn lcg_optimum(costs: &[u64]) -> (u64, Vec<usize>) {
    match costs.len() {
        0 => (0, Vec::new()),
        1 => (costs[0], vec![0]),
        n => {
            let edges = (0..n as u32 - 1).map(|i| (i, i + 1)).collect();
            let tree = DivisionTree::build(&TwoTerminalDag { vertices: n, edges });
            let solver = Solver::new(&tree, costs.to_vec(), vec![false; n], costs[0] + costs[n - 1]);
            let best = solver.sweep().best();
            let plan = solver.plan_at(best.max_term);
            (best.objective, (0..n).filter(|&i| plan.stored[i]).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_chains_store_about_sqrt_n() {
        // Case (1) of §3: N unit vertices, optimum near 2√N.
        // With k of the 98 inner vertices stored: 2 + k + ⌈(98 − k) / (k + 1)⌉.
        let closed_form = (0..=98u64).map(|k| 2 + k + (98 - k).div_ceil(k + 1)).min().unwrap();
        let (objective, stored) = lcg_optimum(&[1; 100]);
        assert_eq!(objective, closed_form);
        assert!((8..=13).contains(&stored.len()), "{stored:?}");
    }

    #[test]
    fn lcg_keeps_a_cheap_vertex_between_expensive_ones() {
        let (objective, stored) = lcg_optimum(&[1, 10, 1, 10, 1]);
        // Storing the middle 1 splits two 10s: 1 + 1 + 1 + 10 = 13 beats 1 + 1 + 21 = 23.
        assert_eq!((objective, stored), (13, vec![0, 2, 4]));
    }
}
