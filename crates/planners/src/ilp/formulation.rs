//! The stage formulation of Checkmate (Jain et al., MLSys 2020, §4), written against
//! remat-opt's memory model (docs/memory-model.md).
//!
//! A schedule is cut into stages; stage `t` computes the nodes with `R[t,i] = 1` in the input
//! order's numbering, each at most once. `S[t,i] = 1` keeps the latest value of `i` from
//! stage `t−1` into stage `t`. Two families of stages:
//!
//! * **fixed** (Checkmate's, §4.1): stage `t` ends with the *first* computation of block `t`
//!   of the input order (one node per block in the paper; larger blocks make big graphs
//!   tractable), and may recompute only earlier nodes. The optimum is over schedules whose
//!   first computations follow the input order.
//! * **free** (order-free): any node may be computed in any stage. Every schedule is a
//!   concatenation of increasing runs of the input order, so with `T` stages the optimum is
//!   over every schedule of at most `T` runs.
//!
//! Memory is Checkmate's `U[t,k]` (Eqn. 5–6): what is resident while stage `t` computes
//! position `k`. A value is freed right after its last reader in the stage unless it is kept
//! into the next stage (`FREE[t,(i,k)]`, Eqn. 7), which is exactly the memory model's "live
//! until its last use". Checkmate linearises `FREE` with one aggregated row per variable and
//! needs it binary; here a suffix-OR chain `L` over the value's readers keeps `FREE` and `L`
//! continuous: the solver always wants `FREE` as large as the rows allow, and at integral
//! `R, S` the rows allow exactly the product.
//!
//! Views own no bytes and keep their source live, so the readers of a view are readers of its
//! source, a kept view keeps its source (`S[t,v] ≤ S[t,s]`), and a source is not recomputed
//! while an older view of it is kept (`R[t,s] + S[t,v] ≤ 1`; the model would then hold two
//! copies of the source, which a single `S[t,s]` cannot count). That last rule is the one
//! restriction of the class beyond the stage structure.
//!
//! Fused recomputation (docs/memory-model.md, "Fused recomputations") is a decision per
//! duplicable producer: `Z[t,(p,c)] = 1` recomputes `p` in stage `t` right before `c`, which
//! computes it itself, so `p` is never held. It needs `p` and `c` computed in the stage,
//! nothing computed between them, no other reader of `p` after `c` in the stage, `p` not kept
//! into the next stage, and `p` a recomputation; then the model is certain to fuse the pair,
//! so `U` drops `p`'s bytes from its step to `c`'s and holds `p`'s inputs until `c` instead.
//! Buffer reuse is counted as the model counts it: a node that may take an input's buffer
//! (`Node::reuses`) holds no buffer of its own at its step where that input is freed right
//! after it (`W[t,k] ≤ FREE`, and no fused recomputation into it), and takes the input's
//! bytes from the next step on.
//!
//! Only pairs whose fusion can never hold more than the two steps unfused are offered
//! ([`Problem::fusions`]). The rows count what the model holds or more: a plan that fits them
//! fits the budget.

use super::model::Model;
use super::StageOrder;
use remat_graph::{lifetimes, Graph, NodeId, Schedule};

/// The graph in positions of the input order, with what the formulation needs per node.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    pub nodes: Vec<NodeId>,
    pub position: Vec<usize>,
    /// Bytes in units of `unit`.
    pub bytes: Vec<u64>,
    pub unit: u64,
    pub cost: Vec<f64>,
    pub pure: Vec<bool>,
    pub output: Vec<bool>,
    /// Inputs that are ops (arguments are resident and left out).
    pub preds: Vec<Vec<usize>>,
    /// Every op that keeps this value live by reading it or a view of it, ascending.
    pub readers: Vec<Vec<usize>>,
    /// For a view whose source is an op: that source.
    pub view_source: Vec<Option<usize>>,
    /// Live to the end: an output, or the source of a view that is.
    pub pinned: Vec<bool>,
    /// Per consumer, the producers it may compute itself if they are recomputed right before
    /// it, each with the bytes (in units) of the producer's inputs the fused op may hold
    /// longer: only pairs where those, with the consumer's own buffer where it could have
    /// taken a dying input's, weigh no more than the producer, so that the model fuses every
    /// pair a plan recomputes that way ([`remat_graph::Lifetimes::fused`]).
    pub fusions: Vec<Vec<(usize, u64)>>,
    /// The producers each node may compute itself, whatever their bytes ([`remat_graph::Node::fuses`]).
    pub fuses: Vec<Vec<usize>>,
    /// The input whose buffer each node takes where that input dies at it
    /// ([`remat_graph::Node::reuses`]); none where the input is an output (the model never
    /// reuses an output's buffer; a pinned value's last instance is kept, never freed here).
    pub reuses: Vec<Option<usize>>,
    /// The graph's proven lower bound on any peak, in units (rounded up).
    pub least_peak: u64,
    /// What objective costs are divided by (the mean positive cost), to keep them near 1.
    pub cost_scale: f64,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Problem {
    pub fn new(graph: &Graph, order: &[NodeId]) -> Self {
        let n = order.len();
        let mut position = vec![usize::MAX; graph.len()];
        for (i, &node) in order.iter().enumerate() {
            position[node.index()] = i;
        }
        let unit = order.iter().map(|&v| graph.node(v).bytes).fold(0, gcd).max(1);
        let op = |v: &NodeId| (position[v.index()] != usize::MAX).then(|| position[v.index()]);
        let preds: Vec<Vec<usize>> = order.iter().map(|&v| graph.preds(v).iter().filter_map(op).collect()).collect();
        let view_source: Vec<Option<usize>> =
            order.iter().map(|&v| graph.node(v).view_of.as_ref().and_then(op)).collect();
        let mut readers: Vec<Vec<usize>> =
            order.iter().map(|&v| graph.succs(v).iter().filter_map(op).collect()).collect();
        let mut pinned: Vec<bool> = order.iter().map(|&v| graph.node(v).output).collect();
        // A view comes after its source, so one backward sweep carries readers down chains.
        for v in (0..n).rev() {
            if let Some(s) = view_source[v] {
                let through = readers[v].clone();
                readers[s].extend(through);
                pinned[s] |= pinned[v];
            }
        }
        for r in &mut readers {
            r.sort_unstable();
            r.dedup();
        }
        let fuses: Vec<Vec<usize>> =
            order.iter().map(|&c| graph.node(c).fuses.iter().filter_map(op).collect()).collect();
        let fusions: Vec<Vec<(usize, u64)>> = order
            .iter()
            .enumerate()
            .map(|(c, &consumer)| {
                fuses[c]
                    .iter()
                    .filter(|&&q| !pinned[q] && !graph.node(order[q]).output)
                    .filter_map(|&q| graph.certain_fusion_growth(consumer, order[q]).map(|grown| (q, grown / unit)))
                    .collect()
            })
            .collect();
        let reuses: Vec<Option<usize>> = order
            .iter()
            .map(|&v| graph.node(v).reuses.as_ref().and_then(op).filter(|&q| !graph.node(order[q]).output))
            .collect();
        Problem {
            nodes: order.to_vec(),
            position,
            bytes: order.iter().map(|&v| graph.node(v).bytes / unit).collect(),
            unit,
            cost: order.iter().map(|&v| graph.node(v).cost).collect(),
            pure: order.iter().map(|&v| graph.node(v).pure).collect(),
            output: order.iter().map(|&v| graph.node(v).output).collect(),
            preds,
            readers,
            view_source,
            pinned,
            fusions,
            fuses,
            reuses,
            least_peak: remat_graph::lower_bound(graph).div_ceil(unit),
            cost_scale: {
                let positive: Vec<f64> = order.iter().map(|&v| graph.node(v).cost).filter(|&c| c > 0.0).collect();
                if positive.is_empty() {
                    1.0
                } else {
                    positive.iter().sum::<f64>() / positive.len() as f64
                }
            },
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The same problem with no fused recomputation offered.
    pub fn without_fusions(&self) -> Problem {
        let mut unfused = self.clone();
        unfused.fusions.iter_mut().for_each(Vec::clear);
        unfused
    }
}

/// The stages and which variables each has.
#[derive(Clone, Debug)]
pub(crate) struct Stages {
    pub order: StageOrder,
    /// Fixed: block `t` of the input order, `[lo, hi)`. Free: `(0, n)` for every stage.
    pub blocks: Vec<(usize, usize)>,
    /// Fixed: the block of each position.
    block_of: Vec<usize>,
}

impl Stages {
    /// Checkmate's stages with `block` nodes each (the paper: 1).
    pub fn fixed(n: usize, block: usize) -> Self {
        let block = block.max(1);
        let blocks: Vec<(usize, usize)> =
            (0..n.div_ceil(block)).map(|t| (t * block, ((t + 1) * block).min(n))).collect();
        Stages { order: StageOrder::Fixed, blocks, block_of: (0..n).map(|i| i / block).collect() }
    }
    /// `stages` order-free stages.
    pub fn free(n: usize, stages: usize) -> Self {
        Stages { order: StageOrder::Free, blocks: vec![(0, n); stages.max(1)], block_of: Vec::new() }
    }
    pub fn len(&self) -> usize {
        self.blocks.len()
    }
    fn r_allowed(&self, p: &Problem, t: usize, i: usize) -> bool {
        match self.order {
            StageOrder::Free => true,
            StageOrder::Fixed => i < self.blocks[t].1 && (p.pure[i] || self.block_of[i] == t),
        }
    }
    fn forced(&self, t: usize, i: usize) -> bool {
        self.order == StageOrder::Fixed && self.block_of[i] == t
    }
    fn s_allowed(&self, t: usize, i: usize) -> bool {
        t > 0
            && match self.order {
                StageOrder::Free => true,
                StageOrder::Fixed => i < self.blocks[t].0,
            }
    }
}

/// What the program asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Goal {
    /// Least cost with every `U` within this many bytes.
    Cost { budget: u64 },
    /// Least peak `M ≥ U`.
    Memory,
}

/// One value's free chain in one stage: the positions that may free it (itself, then its
/// readers) with their `FREE` and suffix-OR `L` columns.
#[derive(Clone, Debug)]
struct Chain {
    stage: usize,
    value: usize,
    positions: Vec<usize>,
    free: Vec<Option<usize>>,
    later: Vec<Option<usize>>,
}

/// One `Z[t,(p,c)]`: in stage `t`, recompute `p` fused into `c` (module docs).
#[derive(Clone, Copy, Debug)]
struct Fusion {
    stage: usize,
    producer: usize,
    consumer: usize,
    column: usize,
    /// Bytes (units) of `p`'s inputs the fused op may hold until `c`.
    grown: u64,
}

/// The `Z` columns of stage `t` (pushed stage by stage).
fn stage_fusions(z: &[Fusion], t: usize) -> &[Fusion] {
    &z[z.partition_point(|z| z.stage < t)..z.partition_point(|z| z.stage <= t)]
}

/// One `W[t,k]`: in stage `t`, the node at position `k` takes its dying input's buffer.
#[derive(Clone, Copy, Debug)]
struct Reuse {
    stage: usize,
    position: usize,
    column: usize,
    /// The input's `FREE[t,(input,k)]`.
    free: usize,
}

/// A column, or a constant where the formulation fixes the value.
#[derive(Clone, Copy, Debug)]
enum Term {
    Column(usize),
    Constant(bool),
}

/// The built program and where each variable lives.
pub(crate) struct Formulation<'p> {
    pub problem: &'p Problem,
    pub stages: Stages,
    pub goal: Goal,
    pub model: Model,
    r: Vec<Vec<Option<usize>>>,
    s: Vec<Vec<Option<usize>>>,
    u: Vec<Vec<usize>>,
    /// `Z[t,(p,c)]` columns: stage, producer, consumer, column, grown bytes in units.
    z: Vec<Fusion>,
    w: Vec<Reuse>,
    active: Vec<Option<usize>>,
    chains: Vec<Chain>,
    peak: Option<usize>,
}

impl<'p> Formulation<'p> {
    pub fn build(problem: &'p Problem, stages: Stages, goal: Goal) -> Self {
        let started = std::time::Instant::now();
        let n = problem.len();
        let t_count = stages.len();
        let mut model = Model::default();
        let r_cost = |i: usize| if matches!(goal, Goal::Memory) { 0.0 } else { problem.cost[i] / problem.cost_scale };
        let mut r = vec![vec![None; n]; t_count];
        let mut s = vec![vec![None; n]; t_count];
        for t in 0..t_count {
            for i in 0..n {
                if stages.r_allowed(problem, t, i) {
                    let lo = if stages.forced(t, i) { 1.0 } else { 0.0 };
                    r[t][i] = Some(model.column(lo, 1.0, true, r_cost(i)));
                }
                if stages.s_allowed(t, i) {
                    s[t][i] = Some(model.binary(0.0));
                }
            }
        }
        let mut f = Formulation {
            problem,
            stages,
            goal,
            model,
            r,
            s,
            u: Vec::new(),
            z: Vec::new(),
            w: Vec::new(),
            active: vec![None; t_count],
            chains: Vec::new(),
            peak: None,
        };
        f.add_schedule_rows();
        f.add_fusion_rows();
        f.add_memory_rows();
        tracing::debug!(
            target: "remat_planners::ilp",
            "built {} columns, {} rows in {:.2} s",
            f.model.columns.len(),
            f.model.rows.len(),
            started.elapsed().as_secs_f64()
        );
        f
    }

    fn kept(&self, t: usize, i: usize) -> Term {
        if t + 1 == self.stages.len() {
            Term::Constant(self.problem.pinned[i])
        } else {
            self.s[t + 1][i].map_or(Term::Constant(false), Term::Column)
        }
    }

    fn add_schedule_rows(&mut self) {
        let (p, t_count) = (self.problem, self.stages.len());
        let n = p.len();
        let free = self.stages.order == StageOrder::Free;
        let m = &mut self.model;
        for t in 0..t_count {
            if free {
                let a = m.binary(0.0);
                self.active[t] = Some(a);
                if t > 0 {
                    m.row(vec![(a, 1.0), (self.active[t - 1].unwrap(), -1.0)], f64::NEG_INFINITY, 0.0);
                }
            }
            for i in 0..n {
                let (ri, si) = (self.r[t][i], self.s[t][i]);
                if let Some(ri) = ri {
                    // Inputs are computed earlier in the stage or kept into it (Eqn. 2).
                    for &q in &p.preds[i] {
                        let mut terms = vec![(ri, 1.0)];
                        terms.extend(self.r[t][q].map(|c| (c, -1.0)));
                        terms.extend(self.s[t][q].map(|c| (c, -1.0)));
                        m.row(terms, f64::NEG_INFINITY, 0.0);
                    }
                    if let Some(a) = self.active[t] {
                        m.row(vec![(ri, 1.0), (a, -1.0)], f64::NEG_INFINITY, 0.0);
                    }
                }
                // Only what exists at the end of stage t can be kept into t+1 (Eqn. 3).
                if t + 1 < t_count {
                    if let Some(next) = self.s[t + 1][i] {
                        let mut terms = vec![(next, 1.0)];
                        terms.extend(ri.map(|c| (c, -1.0)));
                        terms.extend(si.map(|c| (c, -1.0)));
                        m.row(terms, f64::NEG_INFINITY, 0.0);
                    }
                }
                // Keeping a value and recomputing it in the same stage is never useful; the
                // memory rows would count both.
                if let (Some(ri), Some(si)) = (ri, si) {
                    m.row(vec![(ri, 1.0), (si, 1.0)], f64::NEG_INFINITY, 1.0);
                }
                if let (Some(src), Some(sv)) = (p.view_source[i], si) {
                    let mut terms = vec![(sv, 1.0)];
                    terms.extend(self.s[t][src].map(|c| (c, -1.0)));
                    m.row(terms, f64::NEG_INFINITY, 0.0);
                    if let Some(rs) = self.r[t][src] {
                        m.row(vec![(rs, 1.0), (sv, 1.0)], f64::NEG_INFINITY, 1.0);
                    }
                }
            }
        }
        for i in 0..n {
            // Every node runs; impure ones exactly once.
            if free {
                let terms: Vec<(usize, f64)> = (0..t_count).filter_map(|t| self.r[t][i].map(|c| (c, 1.0))).collect();
                let hi = if p.pure[i] { f64::INFINITY } else { 1.0 };
                m.row(terms, 1.0, hi);
            }
            // Outputs exist at the end.
            if p.output[i] {
                let last = t_count - 1;
                let mut terms: Vec<(usize, f64)> = self.r[last][i].map(|c| (c, 1.0)).into_iter().collect();
                terms.extend(self.s[last][i].map(|c| (c, 1.0)));
                m.row(terms, 1.0, f64::INFINITY);
            }
        }
    }

    /// `Z[t,(p,c)]` and the rows that make it a fusion the model is certain to make.
    fn add_fusion_rows(&mut self) {
        let (p, t_count) = (self.problem, self.stages.len());
        let free = self.stages.order == StageOrder::Free;
        for t in 0..t_count {
            for c in 0..p.len() {
                let Some(rc) = self.r[t][c] else { continue };
                for &(q, grown) in &p.fusions[c] {
                    let Some(rq) = self.r[t][q] else { continue };
                    // A recomputation: not its first computation (fixed: an earlier block).
                    if (!free && self.stages.forced(t, q)) || (free && t == 0) {
                        continue;
                    }
                    let z = self.model.binary(0.0);
                    let m = &mut self.model;
                    m.row(vec![(z, 1.0), (rq, -1.0)], f64::NEG_INFINITY, 0.0);
                    m.row(vec![(z, 1.0), (rc, -1.0)], f64::NEG_INFINITY, 0.0);
                    if free {
                        let mut terms = vec![(z, 1.0)];
                        terms.extend((0..t).filter_map(|e| self.r[e][q].map(|col| (col, -1.0))));
                        m.row(terms, f64::NEG_INFINITY, 0.0);
                        // Not first in its stage, so the step before it is one of the stage's
                        // (the rows below see it). Fixed stages need no such row: the last step
                        // of the stage before is a first computation, which never fuses.
                        let mut terms = vec![(z, 1.0)];
                        terms.extend((0..q).filter_map(|k| self.r[t][k].map(|col| (col, -1.0))));
                        m.row(terms, f64::NEG_INFINITY, 0.0);
                    }
                    // Nothing computed between them.
                    let between: Vec<usize> = (q + 1..c).filter_map(|k| self.r[t][k]).collect();
                    if !between.is_empty() {
                        let gap = between.len() as f64;
                        let mut terms: Vec<(usize, f64)> = between.iter().map(|&col| (col, 1.0)).collect();
                        terms.push((z, gap));
                        m.row(terms, f64::NEG_INFINITY, gap);
                    }
                    // No later reader of this instance: none after c in the stage, not kept.
                    for &k in p.readers[q].iter().filter(|&&k| k > c) {
                        if let Some(rk) = self.r[t][k] {
                            m.row(vec![(z, 1.0), (rk, 1.0)], f64::NEG_INFINITY, 1.0);
                        }
                    }
                    if t + 1 < t_count {
                        if let Some(kept) = self.s[t + 1][q] {
                            m.row(vec![(z, 1.0), (kept, 1.0)], f64::NEG_INFINITY, 1.0);
                        }
                    }
                    // The model fuses the first of two such pairs: nothing q could fuse is
                    // computed in the stage (it might be the step right before q).
                    for &o in &p.fuses[q] {
                        if let Some(ro) = self.r[t][o] {
                            m.row(vec![(z, 1.0), (ro, 1.0)], f64::NEG_INFINITY, 1.0);
                        }
                    }
                    self.z.push(Fusion { stage: t, producer: q, consumer: c, column: z, grown });
                }
            }
        }
    }

    fn add_memory_rows(&mut self) {
        let p = self.problem;
        let n = p.len();
        let cap = match self.goal {
            Goal::Cost { budget } => (budget / p.unit) as f64 + 0.5,
            Goal::Memory => f64::INFINITY,
        };
        if self.goal == Goal::Memory {
            // The proven lower bound lets the solver stop as soon as a plan reaches it.
            self.peak = Some(self.model.column(p.least_peak as f64, f64::INFINITY, false, 1.0));
        }
        for t in 0..self.stages.len() {
            let hi = self.stages.blocks[t].1;
            // frees[k]: (bytes, FREE column) of the values freed right after position k.
            let mut frees: Vec<Vec<(f64, usize)>> = vec![Vec::new(); hi];
            // chain_of[v]: v's chain in this stage.
            let mut chain_of: Vec<Option<usize>> = vec![None; n];
            for (i, chain_of_i) in chain_of.iter_mut().enumerate() {
                if p.bytes[i] == 0 || (self.r[t][i].is_none() && self.s[t][i].is_none()) {
                    continue;
                }
                let mut positions: Vec<usize> = self.r[t][i].map(|_| i).into_iter().collect();
                positions.extend(p.readers[i].iter().copied().filter(|&j| self.r[t][j].is_some()));
                let len = positions.len();
                let mut chain = Chain { stage: t, value: i, positions, free: vec![None; len], later: vec![None; len] };
                let mut next = self.kept(t, i);
                for q in (0..len).rev() {
                    let rk = self.r[t][chain.positions[q]].unwrap();
                    if !matches!(next, Term::Constant(true)) {
                        let fr = self.model.continuous(0.0, 1.0);
                        self.model.row(vec![(fr, 1.0), (rk, -1.0)], f64::NEG_INFINITY, 0.0);
                        if let Term::Column(c) = next {
                            self.model.row(vec![(fr, 1.0), (c, 1.0)], f64::NEG_INFINITY, 1.0);
                        }
                        chain.free[q] = Some(fr);
                        frees[chain.positions[q]].push((p.bytes[i] as f64, fr));
                    }
                    if q > 0 {
                        // L_q = R[t, P_q] ∨ L_{q+1}: some reader at or after P_q, or kept.
                        let lo = if matches!(next, Term::Constant(true)) { 1.0 } else { 0.0 };
                        let l = self.model.continuous(lo, 1.0);
                        self.model.row(vec![(rk, 1.0), (l, -1.0)], f64::NEG_INFINITY, 0.0);
                        if let Term::Column(c) = next {
                            self.model.row(vec![(c, 1.0), (l, -1.0)], f64::NEG_INFINITY, 0.0);
                        }
                        chain.later[q] = Some(l);
                        next = Term::Column(l);
                    }
                }
                *chain_of_i = Some(self.chains.len());
                self.chains.push(chain);
            }
            // W[t,k]: k takes its input's buffer, which is freed right after it.
            let mut reuse: Vec<Option<usize>> = vec![None; hi];
            for (k, reuse_k) in reuse.iter_mut().enumerate() {
                let Some(v) = p.reuses[k].filter(|_| self.r[t][k].is_some() && p.bytes[k] > 0) else { continue };
                let Some(chain) = chain_of[v].map(|c| &self.chains[c]) else { continue };
                let Some(free) = chain.positions.iter().position(|&j| j == k).and_then(|q| chain.free[q]) else {
                    continue;
                };
                let w = self.model.continuous(0.0, 1.0);
                self.model.row(vec![(w, 1.0), (free, -1.0)], f64::NEG_INFINITY, 0.0);
                for z in stage_fusions(&self.z, t).iter().filter(|z| z.consumer == k) {
                    // A fused consumer writes a buffer of its own.
                    self.model.row(vec![(w, 1.0), (z.column, 1.0)], f64::NEG_INFINITY, 1.0);
                }
                *reuse_k = Some(w);
                self.w.push(Reuse { stage: t, position: k, column: w, free });
            }
            // U[t,k] = U[t,k−1] − freed after k−1 + computed at k; U[t,−1] = kept into t.
            let mut row_u = Vec::with_capacity(hi);
            for k in 0..hi {
                let u = self.model.continuous(0.0, cap);
                let mut terms = vec![(u, 1.0)];
                if k == 0 {
                    terms
                        .extend((0..n).filter_map(|i| {
                            self.s[t][i].filter(|_| p.bytes[i] > 0).map(|c| (c, -(p.bytes[i] as f64)))
                        }));
                } else {
                    terms.push((row_u[k - 1], -1.0));
                    terms.extend(frees[k - 1].iter().map(|&(b, c)| (c, b)));
                }
                if let Some(rk) = self.r[t][k].filter(|_| p.bytes[k] > 0) {
                    terms.push((rk, -(p.bytes[k] as f64)));
                }
                // Reuse: k's result shares its input's buffer at k, and holds it from k + 1.
                if let Some(w) = reuse[k] {
                    terms.push((w, p.bytes[k] as f64));
                }
                if let Some(w) = k.checked_sub(1).and_then(|j| reuse[j]) {
                    terms.push((w, -(p.bytes[k - 1] as f64)));
                }
                // A fused recomputation: U drops p from its step on, holds p's inputs from
                // the step after it through c's, and after c undoes both (c's free of p then
                // removes what was never added).
                let mut not_held = Vec::new();
                for z in stage_fusions(&self.z, t) {
                    let (bytes, grown) = (p.bytes[z.producer] as f64, z.grown as f64);
                    let delta = if k == z.producer {
                        -bytes
                    } else if k == z.producer + 1 {
                        grown
                    } else if k == z.consumer + 1 {
                        bytes - grown
                    } else {
                        0.0
                    };
                    if delta != 0.0 {
                        terms.push((z.column, -delta));
                    }
                    if (k == z.producer || k == z.consumer) && bytes > 0.0 {
                        not_held.push((z.column, bytes));
                    }
                }
                self.model.row(terms, 0.0, 0.0);
                // Valid inequality: a step holds its output and its inputs (less a value
                // fused into it, or its own value when it is fused). Implied at integral
                // points, it keeps the LP relaxation from freeing inputs fractionally.
                if let Some(rk) = self.r[t][k] {
                    let held = p.bytes[k] + p.preds[k].iter().map(|&q| p.bytes[q]).sum::<u64>();
                    if held > 0 {
                        let mut terms = vec![(u, 1.0), (rk, -(held as f64))];
                        terms.extend(not_held);
                        terms.extend(reuse[k].map(|w| (w, p.bytes[k] as f64)));
                        self.model.row(terms, 0.0, f64::INFINITY);
                    }
                }
                if let Some(m) = self.peak {
                    self.model.row(vec![(u, 1.0), (m, -1.0)], f64::NEG_INFINITY, 0.0);
                }
                row_u.push(u);
            }
            self.u.push(row_u);
        }
    }

    /// The schedule an (integral) solution describes: each stage's computations in order.
    pub fn schedule(&self, values: &[f64]) -> Schedule {
        let mut steps = Vec::new();
        for t in 0..self.stages.len() {
            for i in 0..self.problem.len() {
                if self.r[t][i].is_some_and(|c| values[c] > 0.5) {
                    steps.push(self.problem.nodes[i]);
                }
            }
        }
        steps
    }

    /// The steps of [`Formulation::schedule`] that an (integral) solution recomputes fused
    /// into the step after them.
    #[cfg(test)]
    pub fn fused_steps(&self, values: &[f64]) -> Vec<usize> {
        let mut step = 0;
        let mut fused = Vec::new();
        for t in 0..self.stages.len() {
            for i in 0..self.problem.len() {
                if self.r[t][i].is_some_and(|c| values[c] > 0.5) {
                    if self.z.iter().any(|z| z.stage == t && z.producer == i && values[z.column] > 0.5) {
                        fused.push(step);
                    }
                    step += 1;
                }
            }
        }
        fused
    }

    /// The relaxation's `S[t][i]` (0 where the formulation has no such variable).
    pub fn stored(&self, values: &[f64]) -> Vec<Vec<f64>> {
        self.s.iter().map(|row| row.iter().map(|c| c.map_or(0.0, |c| values[c])).collect()).collect()
    }

    /// Checkmate's second rounding phase (§5.2): given which values to keep into each stage,
    /// compute in each stage exactly what its forced nodes, the next stage's kept values and
    /// the outputs need. Kept values that do not exist, kept views without their source, and
    /// impure values (never dropped while a later stage reads them) are repaired first, so
    /// the result is always a valid schedule.
    pub fn schedule_keeping(&self, keep: &[Vec<bool>]) -> Schedule {
        let p = self.problem;
        let (n, t_count) = (p.len(), self.stages.len());
        let last_reader: Vec<usize> = (0..n).map(|i| p.readers[i].last().copied().unwrap_or(0)).collect();
        let mut present = vec![false; n];
        let mut steps = Vec::new();
        for t in 0..t_count {
            let (lo, hi) = self.stages.blocks[t];
            let mut kept: Vec<bool> = (0..n)
                .map(|i| {
                    present[i]
                        && (keep[t][i] || (!p.pure[i] && last_reader[i] >= lo) || (t + 1 == t_count && p.pinned[i]))
                })
                .collect();
            for v in 0..n {
                if let Some(src) = p.view_source[v] {
                    if kept[v] && !kept[src] {
                        kept[src] = true;
                    }
                }
            }
            let mut need = vec![false; n];
            for i in 0..hi {
                need[i] = self.stages.forced(t, i)
                    || (!kept[i] && t + 1 < t_count && keep[t + 1][i])
                    || (!kept[i] && t + 1 == t_count && p.output[i]);
            }
            for j in (0..hi).rev() {
                if need[j] {
                    for &q in &p.preds[j] {
                        if !kept[q] {
                            need[q] = true;
                        }
                    }
                }
            }
            for i in 0..hi {
                if need[i] {
                    steps.push(p.nodes[i]);
                }
                present[i] = kept[i] || need[i];
            }
            present[hi..].fill(false);
        }
        steps
    }

    /// The largest `U` of a solution, in bytes.
    #[cfg(test)]
    pub fn peak_bytes(&self, values: &[f64]) -> u64 {
        let units = self.u.iter().flatten().map(|&c| values[c]).fold(0.0, f64::max);
        (units.round() as u64) * self.problem.unit
    }

    /// Cuts a schedule into this formulation's stages: `None` when it is not in the class.
    fn stage_of_steps(&self, positions: &[usize]) -> Option<Vec<usize>> {
        let t_count = self.stages.len();
        let mut stage = vec![0; positions.len()];
        match self.stages.order {
            StageOrder::Free => {
                let mut t = 0;
                for k in 1..positions.len() {
                    if positions[k] <= positions[k - 1] {
                        t += 1;
                    }
                    stage[k] = t;
                }
                if positions.last().is_some() && t >= t_count {
                    return None;
                }
            }
            StageOrder::Fixed => {
                // A step belongs to the stage of the next first computation.
                let mut seen = vec![false; self.problem.len()];
                let mut next_first = vec![None; positions.len()];
                let mut upcoming = None;
                let mut firsts = vec![false; positions.len()];
                for (k, &i) in positions.iter().enumerate() {
                    firsts[k] = !seen[i];
                    seen[i] = true;
                }
                for k in (0..positions.len()).rev() {
                    if firsts[k] {
                        upcoming = Some(self.stages.block_of[positions[k]]);
                    }
                    next_first[k] = upcoming;
                }
                let mut previous = 0;
                for k in 0..positions.len() {
                    let t = next_first[k]?;
                    if t < previous {
                        return None;
                    }
                    previous = t;
                    stage[k] = t;
                }
            }
        }
        // Within a stage, steps are strictly increasing and allowed there.
        for k in 0..positions.len() {
            if !self.stages.r_allowed(self.problem, stage[k], positions[k]) {
                return None;
            }
            if k > 0 && stage[k] == stage[k - 1] && positions[k] <= positions[k - 1] {
                return None;
            }
        }
        Some(stage)
    }

    /// The schedule of the class nearest to `schedule`, for fixed stages: each step goes to
    /// the stage of the next first computation (as [`Self::assignment`] reads it), and within
    /// a stage the steps run in input order, each node once. A recomputation thereby moves up
    /// to its stage's start and an instance freed and remade within a stage is kept instead, so
    /// the result may peak higher. Still valid: a recomputed node's inputs computed in the stage
    /// come before it in input order, and those computed earlier were live where it ran, so are
    /// live from the stage's start. `None` for order-free stages, or when the schedule's first
    /// computations do not follow the stages' order.
    pub fn project(&self, schedule: &[NodeId]) -> Option<Schedule> {
        if self.stages.order != StageOrder::Fixed {
            return None;
        }
        let p = self.problem;
        let positions: Vec<usize> = schedule.iter().map(|v| p.position[v.index()]).collect();
        if positions.contains(&usize::MAX) {
            return None;
        }
        let mut seen = vec![false; p.len()];
        let mut upcoming = None;
        let mut stage_of = vec![None; positions.len()];
        let firsts: Vec<bool> = positions.iter().map(|&i| !std::mem::replace(&mut seen[i], true)).collect();
        for k in (0..positions.len()).rev() {
            if firsts[k] {
                upcoming = Some(self.stages.block_of[positions[k]]);
            }
            stage_of[k] = upcoming;
        }
        let mut stages: Vec<Vec<usize>> = vec![Vec::new(); self.stages.len()];
        let mut previous = 0;
        for (k, &i) in positions.iter().enumerate() {
            // A step after the last first computation (an output recomputed late) has no stage.
            let t = stage_of[k]?;
            if t < previous {
                return None;
            }
            previous = t;
            stages[t].push(i);
        }
        let mut projected = Vec::with_capacity(schedule.len());
        for mut steps in stages {
            steps.sort_unstable();
            steps.dedup();
            projected.extend(steps.into_iter().map(|i| p.nodes[i]));
        }
        Some(projected)
    }

    /// The canonical assignment of a schedule: `R` from its stages, `S` exactly the values
    /// live at each stage's start, `FREE`, `L` and `U` as the rows define them. `None` when
    /// the schedule is not in the formulation's class or breaks a row (e.g. the budget).
    pub fn assignment(&self, graph: &Graph, schedule: &[NodeId]) -> Option<Vec<f64>> {
        let p = self.problem;
        let n = p.len();
        let t_count = self.stages.len();
        let positions: Vec<usize> = schedule.iter().map(|v| p.position[v.index()]).collect();
        if positions.contains(&usize::MAX) {
            return None;
        }
        let stage = self.stage_of_steps(&positions)?;
        let life = lifetimes(graph, schedule).ok()?;
        let mut x = vec![0.0; self.model.columns.len()];
        let mut computed = vec![vec![false; n]; t_count];
        for (k, &i) in positions.iter().enumerate() {
            computed[stage[k]][i] = true;
            x[self.r[stage[k]][i]?] = 1.0;
        }
        // Each stage's first step (the schedule's length for stages after the last step).
        let mut start = vec![schedule.len(); t_count];
        for k in (0..positions.len()).rev() {
            start[stage[k]] = k;
        }
        for t in (0..t_count.saturating_sub(1)).rev() {
            start[t] = start[t].min(start[t + 1]);
        }
        let mut latest: Vec<Option<usize>> = vec![None; n];
        let mut k = 0;
        for t in 0..t_count {
            while k < start[t] {
                latest[positions[k]] = Some(k);
                k += 1;
            }
            for i in 0..n {
                let live = latest[i].is_some_and(|inst| {
                    if start[t] < schedule.len() {
                        life.end[inst] >= start[t]
                    } else {
                        p.pinned[i]
                    }
                });
                if live {
                    x[self.s[t][i]?] = 1.0;
                }
            }
            if let Some(a) = self.active[t] {
                x[a] = if positions.is_empty() || t <= *stage.last().unwrap() { 1.0 } else { 0.0 };
            }
        }
        let value = |term: Term, x: &[f64]| match term {
            Term::Column(c) => x[c],
            Term::Constant(b) => b as u8 as f64,
        };
        for chain in &self.chains {
            let (t, i) = (chain.stage, chain.value);
            let mut next = value(self.kept(t, i), &x);
            for q in (0..chain.positions.len()).rev() {
                let here = computed[t][chain.positions[q]] as u8 as f64;
                if let Some(fr) = chain.free[q] {
                    x[fr] = here * (1.0 - next);
                }
                if let Some(l) = chain.later[q] {
                    x[l] = here.max(next);
                    next = x[l];
                }
            }
        }
        for w in &self.w {
            x[w.column] = x[w.free];
        }
        let mut peak: f64 = 0.0;
        for t in 0..t_count {
            let hi = self.stages.blocks[t].1;
            // Bytes a step's result shares with its dying input (from the next step on, its own).
            let mut shared = vec![0.0; hi];
            for w in self.w.iter().filter(|w| w.stage == t) {
                shared[w.position] = x[w.column] * p.bytes[w.position] as f64;
            }
            let mut freed_after = vec![0.0; hi];
            for chain in self.chains.iter().filter(|c| c.stage == t) {
                for (q, fr) in chain.free.iter().enumerate() {
                    if let Some(fr) = fr {
                        freed_after[chain.positions[q]] += x[*fr] * p.bytes[chain.value] as f64;
                    }
                }
            }
            let mut u =
                (0..n).filter(|&i| self.s[t][i].is_some_and(|c| x[c] > 0.5)).map(|i| p.bytes[i] as f64).sum::<f64>();
            for k in 0..hi {
                if k > 0 {
                    u -= freed_after[k - 1];
                    u += shared[k - 1];
                }
                if computed[t][k] {
                    u += p.bytes[k] as f64 - shared[k];
                }
                x[self.u[t][k]] = u;
                peak = peak.max(u);
            }
        }
        if let Some(m) = self.peak {
            x[m] = peak;
        }
        self.model.violation(&x).is_none().then_some(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ilp::increasing_runs;
    use crate::{PlanRequest, PlannerOptions};
    use proptest::prelude::*;
    use remat_graph::random::RandomDag;
    use remat_graph::simulate;

    /// [`canonical_memory_is_the_simulated_peak`] for one random step.
    fn canonical_memory_matches(seed: u64, ops: usize, reuse_percent: u64) -> Result<(), TestCaseError> {
        let g = RandomDag { ops, view_percent: 20, impure_percent: 10, reuse_percent, ..RandomDag::default() }
            .generate(seed);
        let order = g.topological_schedule();
        let p = Problem::new(&g, &order);
        let options = PlannerOptions::default();
        let baseline = simulate(&g, &order).unwrap().peak_bytes;
        let mut schedules = vec![order.clone()];
        for name in ["greedy", "treewidth", "pathwidth"] {
            let request = PlanRequest { graph: &g, order: &order, budget: Some(baseline * 6 / 10), options: &options };
            schedules.push(crate::strategy(name).unwrap().plan(&request).unwrap());
        }
        for (k, schedule) in schedules.iter().enumerate() {
            let peak = simulate(&g, schedule).unwrap().peak_bytes;
            let mut formulations = vec![Formulation::build(
                &p,
                Stages::free(p.len(), increasing_runs(&g, &order, schedule)),
                Goal::Memory,
            )];
            if k == 0 {
                formulations.push(Formulation::build(&p, Stages::fixed(p.len(), 1), Goal::Memory));
                formulations.push(Formulation::build(&p, Stages::fixed(p.len(), 3), Goal::Memory));
                formulations.push(Formulation::build(&p, Stages::free(p.len(), 1), Goal::Cost { budget: peak }));
            }
            for f in &formulations {
                match f.assignment(&g, schedule) {
                    Some(x) => {
                        prop_assert_eq!(f.peak_bytes(&x), peak, "{:?} stages, schedule {}", f.stages.order, k);
                        prop_assert_eq!(f.schedule(&x), schedule.clone());
                    }
                    None => prop_assert!(k > 0, "the input order must be in every class"),
                }
            }
        }
        Ok(())
    }

    /// A pinned input (the source of an output's view) whose earlier instance a step reuses:
    /// the rows once refused reuse of any pinned value and counted 298 units for 261.
    #[test]
    fn a_pinned_inputs_earlier_instance_is_reused() {
        canonical_memory_matches(15600216861843746102, 11, 40).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The formulation's memory accounting is the memory model: the canonical assignment
        /// of a schedule satisfies every row, and its largest `U` is the simulated peak. The
        /// input order is in every class; heuristic plans are checked whenever they are in
        /// the order-free class.
        #[test]
        fn canonical_memory_is_the_simulated_peak(seed in any::<u64>(), ops in 1usize..14, reuse_percent in prop_oneof![Just(0u64), Just(40)]) {
            canonical_memory_matches(seed, ops, reuse_percent)?;
        }

        /// The least-memory MILP's optimum is the simulated peak of the schedule it describes,
        /// and that schedule's canonical assignment is as good.
        #[test]
        fn the_memory_milp_optimum_is_the_simulated_peak(seed in any::<u64>(), ops in 1usize..8, reuse_percent in prop_oneof![Just(0u64), Just(40)]) {
            let g = RandomDag { ops, view_percent: 20, impure_percent: 10, reuse_percent, ..RandomDag::default() }.generate(seed);
            let order = g.topological_schedule();
            let p = Problem::new(&g, &order);
            for stages in [Stages::free(p.len(), p.len()), Stages::fixed(p.len(), 1)] {
                let f = Formulation::build(&p, stages, Goal::Memory);
                let solved = f.model.solve(false, 30.0, 0.0, None, false, None).unwrap();
                prop_assert_eq!(solved.outcome, super::super::model::Outcome::Optimal);
                let schedule = f.schedule(&solved.values);
                let peak = simulate(&g, &schedule).unwrap().peak_bytes;
                prop_assert_eq!((solved.objective.round() as u64) * p.unit, peak);
                let canonical = f.assignment(&g, &schedule);
                prop_assert!(canonical.is_some());
                prop_assert_eq!(f.peak_bytes(&canonical.unwrap()), peak);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(120))]
        /// With fusable pairs, the least-memory MILP's optimum bounds the simulated peak of
        /// its schedule, and the model fuses every pair the solution recomputes fused.
        #[test]
        fn the_model_fuses_what_the_milp_fuses(seed in any::<u64>(), ops in 1usize..8) {
            let g = RandomDag { ops, fuse_percent: 70, reuse_percent: 20, ..RandomDag::default() }.generate(seed);
            let order = g.topological_schedule();
            let p = Problem::new(&g, &order);
            for stages in [Stages::free(p.len(), p.len()), Stages::fixed(p.len(), 1)] {
                let f = Formulation::build(&p, stages, Goal::Memory);
                let solved = f.model.solve(false, 30.0, 0.0, None, false, None).unwrap();
                let schedule = f.schedule(&solved.values);
                let life = remat_graph::lifetimes(&g, &schedule).unwrap();
                for step in f.fused_steps(&solved.values) {
                    prop_assert!(life.fused[step], "step {} of {:?} planned fused, not fused by the model", step, schedule);
                }
                let peak = simulate(&g, &schedule).unwrap().peak_bytes;
                prop_assert!(peak <= (solved.objective.round() as u64) * p.unit);
            }
        }
    }

    /// A producer recomputed for a consumer that computes it itself holds nothing: the least
    /// memory the MILP finds uses it, and it is below what any plan without it reaches.
    #[test]
    fn the_milp_recomputes_fused_where_it_saves_memory() {
        let (mut fused, mut lower) = (0, 0);
        for seed in 0..20 {
            let g = RandomDag { ops: 6, fuse_percent: 80, ..RandomDag::default() }.generate(seed);
            let order = g.topological_schedule();
            let p = Problem::new(&g, &order);
            let f = Formulation::build(&p, Stages::free(p.len(), p.len()), Goal::Memory);
            let solved = f.model.solve(false, 30.0, 0.0, None, false, None).unwrap();
            fused += f.fused_steps(&solved.values).len();
            let unfused = p.without_fusions();
            let without = Formulation::build(&unfused, Stages::free(p.len(), p.len()), Goal::Memory);
            let plain = without.model.solve(false, 30.0, 0.0, None, false, None).unwrap();
            assert!(solved.objective <= plain.objective + 1e-6, "seed {seed}: fusions can only help");
            lower += (solved.objective + 0.5 < plain.objective) as usize;
        }
        assert!(fused > 0 && lower > 0, "fused {fused} steps, lower peaks on {lower} of 20 graphs");
    }

    /// How many of [`projections_are_valid_schedules_of_the_class`]'s projections were of plans
    /// not in the class already, and in the class once projected.
    fn projected_into_class(seed: u64, ops: usize) -> Result<usize, TestCaseError> {
        let g = RandomDag { ops, view_percent: 20, impure_percent: 10, reuse_percent: 30, ..RandomDag::default() }
            .generate(seed);
        let order = g.topological_schedule();
        let p = Problem::new(&g, &order);
        let options = PlannerOptions::default();
        let baseline = simulate(&g, &order).unwrap().peak_bytes;
        let mut moved = 0;
        for name in ["greedy", "treewidth", "pathwidth", "dtr"] {
            let request = PlanRequest { graph: &g, order: &order, budget: Some(baseline * 6 / 10), options: &options };
            let Ok(plan) = crate::strategy(name).unwrap().plan(&request) else { continue };
            for block in 1..=3 {
                let f = Formulation::build(&p, Stages::fixed(p.len(), block), Goal::Memory);
                let Some(projected) = f.project(&plan) else { continue };
                prop_assert!(
                    remat_graph::validate(&g, &projected).is_ok(),
                    "{name}, {block}-node stages: {projected:?}"
                );
                let twice = f.project(&projected);
                prop_assert_eq!(twice.as_ref(), Some(&projected), "projecting twice changes nothing");
                let Some(x) = f.assignment(&g, &projected) else { continue };
                prop_assert_eq!(f.schedule(&x), projected.clone());
                prop_assert_eq!(f.peak_bytes(&x), simulate(&g, &projected).unwrap().peak_bytes);
                moved += usize::from(f.assignment(&g, &plan).is_none());
            }
        }
        Ok(moved)
    }

    /// A heuristic plan projected into the fixed stages' class is a valid schedule, a fixed
    /// point of the projection, and (unless it recomputes a view's source while an older view
    /// is live, which the class forbids) in the class, with the canonical assignment's memory.
    #[test]
    fn projections_are_valid_schedules_of_the_class() {
        let mut moved = 0;
        for seed in 0..150 {
            moved += projected_into_class(seed, 4 + (seed % 12) as usize).unwrap();
        }
        // Plans not in the class that the projection brought into it: the path must run.
        assert!(moved >= 30, "only {moved} plans were brought into the class");
    }

    #[test]
    fn runs_are_stages() {
        let g = RandomDag { ops: 6, view_percent: 0, impure_percent: 0, ..RandomDag::default() }.generate(7);
        let order = g.topological_schedule();
        let p = Problem::new(&g, &order);
        assert_eq!(increasing_runs(&g, &order, &order), 1);
        let mut twice = order.clone();
        twice.extend(order.iter().copied());
        assert_eq!(increasing_runs(&g, &order, &twice), 2);
        let f = Formulation::build(&p, Stages::free(p.len(), 1), Goal::Memory);
        assert!(f.assignment(&g, &twice).is_none(), "two runs do not fit one stage");
    }
}
