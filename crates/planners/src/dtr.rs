//! `dtr`: Dynamic Tensor Rematerialization (Kirisame et al., ICLR 2021) run as a simulator
//! over the step's program order, its execution (originals and rematerializations) kept as a
//! static schedule — the paper's own suggestion for static models (App. E.3).
//!
//! # The runtime (Figure 1, App. C)
//!
//! The simulator replays the input order. Before each op its inputs are made resident: an
//! evicted input is rematerialized by replaying its parent op, recursively (`PerformOp` in
//! Figure 1), with the storages of the inputs already resident *locked* so that the recursion
//! cannot evict them (C.4, "(Re)materialization"). Allocating an op's result when memory plus
//! its size exceeds the budget evicts the resident, unlocked storage with the lowest heuristic
//! score until it fits; when nothing evictable is left the budget fails.
//!
//! Storages and tensors follow C.1: a storage is the memory of a non-view node (its *root*);
//! views of it (our zero-byte view nodes) are its other tensors. Evicting a storage undefines
//! every tensor of it; a view is defined again only by replaying its (free) view op.
//! Arguments are constants: resident, never evicted, and (as in the memory model) outside the
//! budget. Impure nodes, and storages written by an in-place update, cannot be replayed: they
//! are pinned once computed.
//!
//! # Deallocation (C.5)
//!
//! A storage's external references are its tensors' remaining uses in the program order, plus
//! one for each output. When they drop to zero the program would free it:
//! * [`Dealloc::Eager`] (the paper's default, *eager eviction*): evict it if it can be replayed;
//!   a pinned storage is banished instead (it could never be evicted otherwise);
//! * [`Dealloc::Banish`]: banish it — free it for good, which is allowed only while none of its
//!   dependents is evicted (otherwise retried each time a dependent is rematerialized) and pins
//!   its dependents;
//! * [`Dealloc::Ignore`]: do nothing (the ablation of D.2).
//!
//! At the end every output is rematerialized if evicted and locked (C.6, "Output condition").
//!
//! # Heuristics (§2, C.2, C.3)
//!
//! The lowest score is evicted; ties go to the stalest storage, then the lowest id. Staleness
//! counts operations, not time, for reproducibility (App. E.3): `stale = T − last_access + 1`
//! with `T` the number of ops executed so far (the `+ 1` keeps a just-used storage finite).
//! `cost(S)` sums the costs of S's tensors (C.2).
//! * `dtr`: h_DTR = (cost(S) + Σ_{e*(S)} cost) / (size · stale), the exact evicted
//!   neighbourhood e* (evicted ancestors and descendants reachable through evicted storages);
//! * `dtr-eq`: h_DTR^eq, e* relaxed to union-find evicted components with the splitting
//!   approximation of C.2 (a rematerialized storage leaves its set, which keeps its cost minus
//!   the storage's; "phantom" connections stay);
//! * `dtr-local`: h_DTR^local = cost(S) / (size · stale);
//! * `lru`: 1 / stale; `size`: 1 / size (GreedyRemat's rule); `msps`: (cost(S) + Σ_{e_R(S)}
//!   cost) / size with e_R the evicted ancestors (Peng et al.); `random`: seeded uniform;
//! * `estar`: h_{e*} = (cost(S) + Σ_{e*(S)} cost) / size, the staleness-free heuristic of
//!   Theorem 3.1 (App. A.3).
//!
//! Metadata accesses (App. D.3) count the storages each heuristic evaluation reads and those
//! its bookkeeping updates (the union-find's merges and splits).
//!
//! # From the simulation to the memory model
//!
//! A value the schedule keeps from one step to a later use was never evicted in between, so it
//! was resident in the simulation: at every step the memory model's live set is a subset of
//! the simulator's resident set, and the schedule's simulated peak is at most the budget the
//! simulation kept to. The property tests check it.
//!
//! Cost: each eviction scans the resident storages; `dtr` and `msps` add a graph search per
//! candidate, `dtr-eq` a walk over its neighbours.

use crate::deadline::DeadlineProbe;
use crate::{Deadline, PlanDetails, PlanError, PlanRequest, Planner, StrategyFacts};
use indexmap::IndexSet;
use remat_graph::random::SplitMix64;
use remat_graph::{Graph, NodeId, Schedule};

/// An eviction heuristic (the lowest score is evicted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Heuristic {
    /// h_DTR with the exact evicted neighbourhood e*.
    Dtr,
    /// h_DTR^eq: e* relaxed to union-find evicted components.
    DtrEq,
    /// h_DTR^local: the storage's own cost only.
    DtrLocal,
    /// Least recently used.
    Lru,
    /// Largest first (GreedyRemat).
    Size,
    /// MSPS: cost of the evicted ancestors per byte.
    Msps,
    /// Uniformly random (seeded).
    Random,
    /// h_{e*}: e*-cost per byte, no staleness (Theorem 3.1).
    EStar,
}

impl Heuristic {
    /// Every heuristic, in `--help` order.
    pub const ALL: [Heuristic; 8] = [
        Heuristic::Dtr,
        Heuristic::DtrEq,
        Heuristic::DtrLocal,
        Heuristic::Lru,
        Heuristic::Size,
        Heuristic::Msps,
        Heuristic::Random,
        Heuristic::EStar,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Heuristic::Dtr => "dtr",
            Heuristic::DtrEq => "dtr-eq",
            Heuristic::DtrLocal => "dtr-local",
            Heuristic::Lru => "lru",
            Heuristic::Size => "size",
            Heuristic::Msps => "msps",
            Heuristic::Random => "random",
            Heuristic::EStar => "estar",
        }
    }

    /// Looks a heuristic up by its command-line name.
    pub fn from_name(name: &str) -> Option<Heuristic> {
        Heuristic::ALL.into_iter().find(|h| h.name() == name)
    }

    /// The names, comma-separated (for diagnostics).
    pub fn names() -> String {
        Heuristic::ALL.iter().map(|h| h.name()).collect::<Vec<_>>().join(", ")
    }
}

/// What happens when the program drops its last reference to a storage (App. C.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dealloc {
    /// Evict it (banish it if it cannot be replayed).
    Eager,
    /// Banish it: free it for good and pin its dependents.
    Banish,
    /// Keep it until the heuristic evicts it.
    Ignore,
}

impl Dealloc {
    /// Every policy.
    pub const ALL: [Dealloc; 3] = [Dealloc::Eager, Dealloc::Banish, Dealloc::Ignore];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Dealloc::Eager => "eager",
            Dealloc::Banish => "banish",
            Dealloc::Ignore => "ignore",
        }
    }

    /// Looks a policy up by its command-line name.
    pub fn from_name(name: &str) -> Option<Dealloc> {
        Dealloc::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// The DTR planner's knobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DtrOptions {
    /// The eviction heuristic (`--dtr-heuristic`).
    pub heuristic: Heuristic,
    /// The deallocation policy (`--dtr-dealloc`).
    pub dealloc: Dealloc,
    /// Seed of the `random` heuristic (`--dtr-seed`).
    pub seed: u64,
}

impl Default for DtrOptions {
    fn default() -> Self {
        // h_DTR^eq: nearly h_DTR's plans at a fraction of its metadata accesses (§4, D.3).
        DtrOptions { heuristic: Heuristic::DtrEq, dealloc: Dealloc::Eager, seed: 0 }
    }
}

/// What one simulation did.
#[derive(Clone, Debug, PartialEq)]
pub struct DtrStats {
    /// The heuristic.
    pub heuristic: Heuristic,
    /// The deallocation policy.
    pub dealloc: Dealloc,
    /// The budget simulated, in bytes.
    pub budget: u64,
    /// Ops executed, rematerializations included.
    pub operations: usize,
    /// Ops executed again.
    pub rematerializations: usize,
    /// Evictions chosen by the heuristic.
    pub evictions: usize,
    /// Evictions on deallocation ([`Dealloc::Eager`]).
    pub eager_evictions: usize,
    /// Storages banished.
    pub banished: usize,
    /// Storage accesses by heuristic evaluations and metadata upkeep (App. D.3).
    pub metadata_accesses: u64,
    /// The most memory resident at once in the simulation (at most the budget).
    pub peak_resident: u64,
}

/// Why a simulation stopped.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DtrError {
    /// An allocation could not be made room for.
    #[error("DTR ran out of memory computing node {node}: {needed} bytes needed, {resident} resident and nothing left to evict (budget {budget})")]
    OutOfMemory {
        /// The node being computed.
        node: NodeId,
        /// Its result bytes.
        needed: u64,
        /// Bytes resident (locked or pinned).
        resident: u64,
        /// The budget.
        budget: u64,
    },
    /// The simulation executed [`WORK_FACTOR`] times the input order's ops without
    /// finishing: rematerializations are cascading (thrashing).
    #[error("DTR stopped after {operations} operations ({factor}× the program's): rematerializations cascade under budget {budget}")]
    WorkLimit {
        /// Ops executed so far.
        operations: usize,
        /// The bound, as a multiple of the program's ops.
        factor: usize,
        /// The budget.
        budget: u64,
    },
    /// The deadline (`--time-limit`) passed before the simulation finished.
    #[error("DTR stopped at the time limit after {operations} operations")]
    TimeLimit {
        /// Ops executed so far.
        operations: usize,
    },
}

/// A simulation gives up ([`DtrError::WorkLimit`]) once it has executed this many times the
/// program's ops. Thrashing DTR (each rematerialization evicting what the next needs) ran for
/// minutes on 1000-node random layered DAGs with long edges; the bound keeps DTR's own costly
/// plans (up to 10× the program's ops, at +997 %, on transformer12 at 30 %) and stops the
/// cascades, bounding a simulation by O(program × resident storages).
const WORK_FACTOR: usize = 12;

/// Runs DTR over `order` under `budget` bytes: the executed ops, in order, and what it did.
pub fn simulate_dtr(
    graph: &Graph,
    order: &[NodeId],
    budget: u64,
    options: &DtrOptions,
) -> Result<(Schedule, DtrStats), DtrError> {
    simulate_dtr_until(graph, order, budget, options, Deadline::NONE)
}

/// [`simulate_dtr`], stopped with [`DtrError::TimeLimit`] once `deadline` passes.
pub fn simulate_dtr_until(
    graph: &Graph,
    order: &[NodeId],
    budget: u64,
    options: &DtrOptions,
    deadline: Deadline,
) -> Result<(Schedule, DtrStats), DtrError> {
    let mut runtime = Runtime::new(graph, budget, options);
    runtime.deadline = deadline.probe();
    runtime.work_limit = WORK_FACTOR * order.len() + graph.outputs().count();
    for &node in order {
        runtime.perform(node)?;
        runtime.release_inputs_of(node);
    }
    let outputs: Vec<NodeId> = graph.outputs().collect();
    for out in outputs {
        if !runtime.defined[out.index()] {
            runtime.perform(out)?;
        }
        runtime.lock(out);
    }
    Ok((runtime.schedule, runtime.stats))
}

/// The DTR runtime's state (C.4): per storage (indexed by its root node) and per tensor.
struct Runtime<'g> {
    graph: &'g Graph,
    options: DtrOptions,
    budget: u64,
    /// Storage (root index) of every node.
    storage: Vec<usize>,
    /// Tensors of each storage (root first).
    tensors: Vec<Vec<NodeId>>,
    /// Bytes of each storage (0 for arguments: outside the budget).
    size: Vec<u64>,
    /// cost(S) of C.2.
    cost: Vec<f64>,
    /// deps(S) and deps^T(S) of C.2.
    deps: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
    defined: Vec<bool>,
    resident: Vec<bool>,
    computed: Vec<bool>,
    banished: Vec<bool>,
    /// Cannot be evicted: an argument, impure, written in place, or a banished parent's child.
    pinned: Vec<bool>,
    locks: Vec<u32>,
    /// External references (remaining uses in the program order, plus outputs).
    refs: Vec<u64>,
    last_access: Vec<u64>,
    /// Storages banishing waits for (a dependent is evicted).
    pending_banish: IndexSet<usize>,
    /// Resident storages that own bytes and can be replayed: the eviction candidates.
    pool: IndexSet<usize>,
    memory: u64,
    clock: u64,
    /// Union-find over evicted components (`dtr-eq`).
    uf: UnionFind,
    /// Each storage's union-find set (`dtr-eq`).
    set_of: Vec<usize>,
    /// Scratch for graph searches.
    visit_mark: Vec<u32>,
    visit_generation: u32,
    rng: SplitMix64,
    schedule: Schedule,
    stats: DtrStats,
    /// Most ops the simulation may execute ([`DtrError::WorkLimit`]).
    work_limit: usize,
    /// When the simulation stops ([`DtrError::TimeLimit`]).
    deadline: DeadlineProbe,
}

impl<'g> Runtime<'g> {
    fn new(graph: &'g Graph, budget: u64, options: &DtrOptions) -> Self {
        let n = graph.len();
        let storage: Vec<usize> = graph.ids().map(|id| graph.storage_root(id).index()).collect();
        let mut tensors = vec![Vec::new(); n];
        let mut cost = vec![0.0; n];
        for id in graph.ids() {
            tensors[storage[id.index()]].push(id);
            cost[storage[id.index()]] += graph.node(id).cost;
        }
        let mut deps = vec![Vec::new(); n];
        for id in graph.ids() {
            let s = storage[id.index()];
            for &p in graph.preds(id) {
                let d = storage[p.index()];
                if d != s && !deps[s].contains(&d) {
                    deps[s].push(d);
                }
            }
        }
        let mut dependents = vec![Vec::new(); n];
        for (s, ds) in deps.iter().enumerate() {
            for &d in ds {
                dependents[d].push(s);
            }
        }
        let mut refs = vec![0u64; n];
        for id in graph.ids() {
            for &p in graph.preds(id) {
                refs[storage[p.index()]] += 1;
            }
            if graph.node(id).output {
                refs[storage[id.index()]] += 1;
            }
        }
        let size: Vec<u64> =
            graph.ids().map(|id| if graph.node(id).argument { 0 } else { graph.node(id).bytes }).collect();
        let mut runtime = Runtime {
            graph,
            options: *options,
            budget,
            storage,
            tensors,
            size,
            cost,
            deps,
            dependents,
            defined: vec![false; n],
            resident: vec![false; n],
            computed: vec![false; n],
            banished: vec![false; n],
            pinned: vec![false; n],
            locks: vec![0; n],
            refs,
            last_access: vec![0; n],
            pending_banish: IndexSet::new(),
            pool: IndexSet::new(),
            memory: 0,
            clock: 0,
            uf: UnionFind::default(),
            set_of: vec![usize::MAX; n],
            visit_mark: vec![0; n],
            visit_generation: 0,
            rng: SplitMix64::new(options.seed),
            schedule: Vec::new(),
            stats: DtrStats {
                heuristic: options.heuristic,
                dealloc: options.dealloc,
                budget,
                operations: 0,
                rematerializations: 0,
                evictions: 0,
                eager_evictions: 0,
                banished: 0,
                metadata_accesses: 0,
                peak_resident: 0,
            },
            work_limit: usize::MAX,
            deadline: Deadline::NONE.probe(),
        };
        for id in graph.ids().filter(|&id| graph.node(id).argument) {
            let i = id.index();
            runtime.defined[i] = true;
            runtime.resident[i] = true;
            runtime.computed[i] = true;
            runtime.pinned[i] = true;
        }
        runtime
    }

    /// Makes `target` defined, rematerializing evicted inputs first (Figure 1's `PerformOp`,
    /// iteratively: a frame locks each input once it is defined and computes its op when all
    /// are).
    fn perform(&mut self, target: NodeId) -> Result<(), DtrError> {
        struct Frame {
            node: NodeId,
            next_input: usize,
        }
        let mut stack = vec![Frame { node: target, next_input: 0 }];
        while let Some(frame) = stack.last_mut() {
            let node = frame.node;
            let preds = self.graph.preds(node);
            if frame.next_input < preds.len() {
                let p = preds[frame.next_input];
                if self.defined[p.index()] {
                    frame.next_input += 1;
                    self.lock(p);
                } else {
                    stack.push(Frame { node: p, next_input: 0 });
                }
                continue;
            }
            let result = self.compute(node);
            for &p in self.graph.preds(node) {
                self.unlock(p);
            }
            result?;
            stack.pop();
        }
        Ok(())
    }

    /// Allocates `node`'s result (evicting as needed) and executes it; its inputs are locked.
    fn compute(&mut self, node: NodeId) -> Result<(), DtrError> {
        if self.stats.operations >= self.work_limit {
            let (operations, factor, budget) = (self.stats.operations, WORK_FACTOR, self.budget);
            return Err(DtrError::WorkLimit { operations, factor, budget });
        }
        if self.deadline.expired() {
            return Err(DtrError::TimeLimit { operations: self.stats.operations });
        }
        let i = node.index();
        let s = self.storage[i];
        let info = self.graph.node(node);
        let owns = info.view_of.is_none();
        if owns {
            let needed = self.size[s];
            // Lock the storage being made so that a multi-tensor storage is not evicted from
            // under its own allocation.
            self.locks[s] += 1;
            while self.memory + needed > self.budget {
                if !self.evict_one() {
                    self.locks[s] -= 1;
                    return Err(DtrError::OutOfMemory { node, needed, resident: self.memory, budget: self.budget });
                }
            }
            self.locks[s] -= 1;
            self.memory += needed;
            self.stats.peak_resident = self.stats.peak_resident.max(self.memory);
            self.resident[s] = true;
            if self.computed[s] {
                self.split_from_component(s);
            }
        }
        let again = self.computed[i];
        self.defined[i] = true;
        self.computed[i] = true;
        self.computed[s] = true;
        self.schedule.push(node);
        self.stats.operations += 1;
        if again {
            self.stats.rematerializations += 1;
        }
        self.clock += 1;
        for &p in self.graph.preds(node) {
            self.last_access[self.storage[p.index()]] = self.clock;
        }
        self.last_access[s] = self.clock;
        if !info.pure {
            // An impure op, or an in-place update of its storage: never replayed.
            self.pin(s);
        }
        self.refresh_pool(s);
        if again {
            self.retry_banishing_around(s);
        }
        Ok(())
    }

    /// Drops one reference to each input of `node` (and to `node` itself when nothing reads it):
    /// the program's deallocations.
    fn release_inputs_of(&mut self, node: NodeId) {
        let mut dropped: Vec<usize> = Vec::new();
        for &p in self.graph.preds(node) {
            let s = self.storage[p.index()];
            self.refs[s] -= 1;
            if self.refs[s] == 0 {
                dropped.push(s);
            }
        }
        let own = self.storage[node.index()];
        if self.refs[own] == 0 && !dropped.contains(&own) {
            dropped.push(own);
        }
        for s in dropped {
            if self.graph.node(NodeId(s as u32)).argument {
                continue;
            }
            self.deallocate(s);
        }
    }

    fn deallocate(&mut self, s: usize) {
        match self.options.dealloc {
            Dealloc::Ignore => {}
            Dealloc::Banish => self.try_banish(s),
            Dealloc::Eager => {
                if self.pinned[s] {
                    self.try_banish(s);
                } else if self.resident[s] && self.locks[s] == 0 && self.size[s] > 0 {
                    self.evict(s);
                    self.stats.eager_evictions += 1;
                }
            }
        }
    }

    /// Banishes `s` if none of its dependents is evicted (C.4), else waits for them.
    fn try_banish(&mut self, s: usize) {
        if self.banished[s] || self.locks[s] > 0 {
            return;
        }
        if self.dependents[s].iter().any(|&d| self.is_evicted(d)) {
            self.pending_banish.insert(s);
            return;
        }
        self.pending_banish.shift_remove(&s);
        if self.resident[s] {
            self.release(s);
        }
        self.banished[s] = true;
        self.stats.banished += 1;
        for k in 0..self.dependents[s].len() {
            let d = self.dependents[s][k];
            if self.computed[d] && !self.banished[d] {
                self.pin(d);
            }
        }
    }

    fn retry_banishing_around(&mut self, s: usize) {
        if self.pending_banish.is_empty() {
            return;
        }
        for k in 0..self.deps[s].len() {
            let d = self.deps[s][k];
            if self.pending_banish.contains(&d) {
                self.try_banish(d);
            }
        }
    }

    fn is_evicted(&self, s: usize) -> bool {
        self.computed[s] && !self.resident[s] && !self.banished[s]
    }

    fn pin(&mut self, s: usize) {
        self.pinned[s] = true;
        self.pool.shift_remove(&s);
    }

    fn lock(&mut self, node: NodeId) {
        let s = self.storage[node.index()];
        self.locks[s] += 1;
    }

    fn unlock(&mut self, node: NodeId) {
        let s = self.storage[node.index()];
        self.locks[s] -= 1;
    }

    fn refresh_pool(&mut self, s: usize) {
        if self.resident[s] && !self.pinned[s] && !self.banished[s] && self.size[s] > 0 {
            self.pool.insert(s);
        } else {
            self.pool.shift_remove(&s);
        }
    }

    /// Frees a resident storage and undefines its tensors.
    fn release(&mut self, s: usize) {
        self.resident[s] = false;
        self.memory -= self.size[s];
        for k in 0..self.tensors[s].len() {
            let t = self.tensors[s][k];
            self.defined[t.index()] = false;
        }
        self.pool.shift_remove(&s);
    }

    fn evict(&mut self, s: usize) {
        self.release(s);
        if self.options.heuristic == Heuristic::DtrEq {
            self.join_component(s);
        }
    }

    /// Evicts the lowest-scoring unlocked storage; false when there is none.
    fn evict_one(&mut self) -> bool {
        let mut best: Option<(f64, u64, usize)> = None;
        for k in 0..self.pool.len() {
            let s = self.pool[k];
            if self.locks[s] > 0 {
                continue;
            }
            let score = self.score(s);
            let key = (score, self.last_access[s], s);
            let better = match best {
                None => true,
                Some(b) => key.0 < b.0 || (key.0 == b.0 && (key.1, key.2) < (b.1, b.2)),
            };
            if better {
                best = Some(key);
            }
        }
        match best {
            Some((_, _, s)) => {
                self.evict(s);
                self.stats.evictions += 1;
                true
            }
            None => false,
        }
    }

    fn score(&mut self, s: usize) -> f64 {
        let size = self.size[s] as f64;
        let stale = (self.clock - self.last_access[s] + 1) as f64;
        self.stats.metadata_accesses += 1;
        match self.options.heuristic {
            Heuristic::Dtr => (self.cost[s] + self.neighbourhood_cost(s, true)) / (size * stale),
            Heuristic::EStar => (self.cost[s] + self.neighbourhood_cost(s, true)) / size,
            Heuristic::Msps => (self.cost[s] + self.neighbourhood_cost(s, false)) / size,
            Heuristic::DtrEq => (self.cost[s] + self.component_cost(s)) / (size * stale),
            Heuristic::DtrLocal => self.cost[s] / (size * stale),
            Heuristic::Lru => 1.0 / stale,
            Heuristic::Size => 1.0 / size,
            Heuristic::Random => (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64,
        }
    }

    /// Σ cost over e*(s) (evicted ancestors and descendants reachable through evicted
    /// storages), or over the evicted ancestors only (MSPS's e_R).
    fn neighbourhood_cost(&mut self, s: usize, descendants: bool) -> f64 {
        self.visit_generation += 1;
        let generation = self.visit_generation;
        let mut total = 0.0;
        let mut stack: Vec<(usize, bool)> = Vec::new();
        self.visit_mark[s] = generation;
        stack.push((s, true));
        if descendants {
            stack.push((s, false));
        }
        while let Some((v, up)) = stack.pop() {
            let next = if up { &self.deps[v] } else { &self.dependents[v] };
            for &w in next {
                self.stats.metadata_accesses += 1;
                if self.visit_mark[w] != generation && self.is_evicted(w) {
                    self.visit_mark[w] = generation;
                    total += self.cost[w];
                    stack.push((w, up));
                }
            }
        }
        total
    }

    /// Σ cost of the union-find components of `s`'s evicted neighbours (ẽ*, C.2), without
    /// merging them.
    fn component_cost(&mut self, s: usize) -> f64 {
        let mut roots: Vec<usize> = Vec::new();
        let mut total = 0.0;
        for k in 0..self.deps[s].len() + self.dependents[s].len() {
            let w = if k < self.deps[s].len() { self.deps[s][k] } else { self.dependents[s][k - self.deps[s].len()] };
            self.stats.metadata_accesses += 1;
            if self.is_evicted(w) && self.set_of[w] != usize::MAX {
                let root = self.uf.find(self.set_of[w]);
                if !roots.contains(&root) {
                    roots.push(root);
                    total += self.uf.cost[root];
                }
            }
        }
        total
    }

    /// On eviction: `s` starts a set with its cost, merged with its evicted neighbours' sets.
    fn join_component(&mut self, s: usize) {
        let mine = self.uf.make(self.cost[s]);
        self.set_of[s] = mine;
        for k in 0..self.deps[s].len() + self.dependents[s].len() {
            let w = if k < self.deps[s].len() { self.deps[s][k] } else { self.dependents[s][k - self.deps[s].len()] };
            self.stats.metadata_accesses += 1;
            if w != s && self.is_evicted(w) && self.set_of[w] != usize::MAX {
                self.uf.union(self.set_of[s], self.set_of[w]);
            }
        }
    }

    /// On rematerialization: the splitting approximation of C.2.
    fn split_from_component(&mut self, s: usize) {
        if self.options.heuristic != Heuristic::DtrEq || self.set_of[s] == usize::MAX {
            return;
        }
        let root = self.uf.find(self.set_of[s]);
        self.uf.cost[root] -= self.cost[s];
        self.set_of[s] = usize::MAX;
        self.stats.metadata_accesses += 1;
    }
}

/// Union-find with a cost per set (path halving, union by size).
#[derive(Default)]
struct UnionFind {
    parent: Vec<usize>,
    weight: Vec<u32>,
    cost: Vec<f64>,
}

impl UnionFind {
    fn make(&mut self, cost: f64) -> usize {
        self.parent.push(self.parent.len());
        self.weight.push(1);
        self.cost.push(cost);
        self.parent.len() - 1
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        let (big, small) = if self.weight[a] >= self.weight[b] { (a, b) } else { (b, a) };
        self.parent[small] = big;
        self.weight[big] += self.weight[small];
        self.cost[big] += self.cost[small];
    }
}

/// DTR as a static planner (`--remat=dtr`).
pub struct DtrRemat;

impl DtrRemat {
    fn run(request: &PlanRequest<'_>, budget: u64) -> (Schedule, PlanDetails) {
        let options = request.options;
        match simulate_dtr_until(request.graph, request.order, budget, &options.dtr, options.deadline) {
            Ok((schedule, stats)) => (schedule, PlanDetails::default().with_facts(stats)),
            Err(e) => {
                tracing::debug!(target: "remat_planners::dtr", "{e}");
                // No plan fits: hand back the input order, which the caller measures and
                // reports as over budget (with the smallest budget DTR meets).
                let (order, details) = request.no_plan();
                match e {
                    DtrError::WorkLimit { .. } => (order, PlanDetails::stopped(crate::StopReason::WorkLimit)),
                    DtrError::TimeLimit { .. } => {
                        let stop = crate::StopReason::Fallback { to: "none", cause: crate::FallbackCause::TimeLimit };
                        (order, PlanDetails::stopped(stop))
                    }
                    DtrError::OutOfMemory { .. } => (order, details),
                }
            }
        }
    }
}

impl StrategyFacts for DtrStats {
    fn key(&self) -> &'static str {
        "dtr"
    }

    fn to_json(&self, _deterministic: bool) -> serde_json::Value {
        serde_json::json!({
            "heuristic": self.heuristic.name(),
            "dealloc": self.dealloc.name(),
            "budget_bytes": self.budget,
            "operations": self.operations,
            "rematerializations": self.rematerializations,
            "evictions": self.evictions,
            "eager_evictions": self.eager_evictions,
            "banished": self.banished,
            "metadata_accesses": self.metadata_accesses,
            "peak_resident_bytes": self.peak_resident,
        })
    }

    fn lines(&self, _deterministic: bool) -> Vec<(String, String)> {
        use remat_graph::units::Bytes;
        vec![
            (
                "dtr".into(),
                format!(
                    "heuristic {}, dealloc {}, simulated at {} ({} bytes)",
                    self.heuristic.name(),
                    self.dealloc.name(),
                    Bytes(self.budget),
                    self.budget
                ),
            ),
            (
                "dtr simulation".into(),
                format!(
                    "{} ops ({} rematerialized), {} evictions + {} on deallocation, {} banished",
                    self.operations, self.rematerializations, self.evictions, self.eager_evictions, self.banished
                ),
            ),
            (
                "dtr metadata".into(),
                format!("{} storage accesses; {} resident at most", self.metadata_accesses, Bytes(self.peak_resident)),
            ),
        ]
    }
}

impl Planner for DtrRemat {
    fn name(&self) -> &'static str {
        "dtr"
    }
    fn summary(&self) -> &'static str {
        "Dynamic Tensor Rematerialization simulated over the program order, kept as a static plan"
    }
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError> {
        Ok(self.plan_detailed(request)?.0)
    }
    fn plan_detailed(&self, request: &PlanRequest<'_>) -> Result<(Schedule, PlanDetails), PlanError> {
        request.order_positions()?;
        let budget = match request.budget {
            Some(b) => b,
            // DTR needs a budget: without one, the least it meets (bisected).
            None => crate::smallest_feasible_budget(self, request.graph, request.order, request.options)
                .unwrap_or_else(|| {
                    remat_graph::simulate(request.graph, request.order).map(|s| s.peak_bytes).unwrap_or(0)
                }),
        };
        Ok(Self::run(request, budget))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_graph::{simulate, GraphBuilder, NodeSpec};

    fn linear_network(n: usize) -> (Graph, Vec<NodeId>) {
        let graph = remat_graph::training::linear_network(n);
        let order = graph.topological_schedule();
        (graph, order)
    }

    fn run(
        graph: &Graph,
        order: &[NodeId],
        budget: u64,
        heuristic: Heuristic,
        dealloc: Dealloc,
    ) -> Result<(Schedule, DtrStats), DtrError> {
        simulate_dtr(graph, order, budget, &DtrOptions { heuristic, dealloc, seed: 7 })
    }

    #[test]
    fn without_pressure_dtr_replays_the_program() {
        let (graph, order) = linear_network(20);
        let baseline = simulate(&graph, &order).unwrap().peak_bytes;
        for h in Heuristic::ALL {
            let (schedule, stats) = run(&graph, &order, baseline, h, Dealloc::Eager).unwrap();
            assert_eq!(schedule, order, "{h:?}");
            assert_eq!(stats.evictions, 0);
        }
    }

    #[test]
    fn plans_fit_their_budget_in_the_memory_model() {
        // Not every heuristic survives a 2⌈√N⌉ budget (h_DTR^local and LRU evict the
        // gradients and nest rematerializations until the locks fill memory, as §2 warns);
        // those that use e* do, and every plan that succeeds fits in the memory model.
        let n = 100;
        let (graph, order) = linear_network(n);
        let budget = 2 * (n as f64).sqrt().ceil() as u64;
        for h in Heuristic::ALL {
            for d in Dealloc::ALL {
                let outcome = run(&graph, &order, budget, h, d);
                if matches!(h, Heuristic::Dtr | Heuristic::DtrEq | Heuristic::EStar) && d != Dealloc::Ignore {
                    assert!(outcome.is_ok(), "{h:?} {d:?}: {outcome:?}");
                }
                let Ok((schedule, stats)) = outcome else { continue };
                let sim = simulate(&graph, &schedule).unwrap();
                assert!(sim.peak_bytes <= budget, "{h:?} {d:?}: model peak {} over {budget}", sim.peak_bytes);
                assert!(stats.peak_resident <= budget);
                assert_eq!(stats.operations, schedule.len());
                assert_eq!(sim.recomputations, stats.rematerializations);
            }
        }
    }

    #[test]
    fn theorem_3_1_operations_grow_linearly() {
        // Theorem 3.1: O(N) operations under a 2⌈√N⌉ budget with h_{e*}. The measured
        // constant (remat-bench dtr-theorem) is about 3.2 (eager) to 3.5 (banishing) and flat
        // in N; 4N is the bound this test holds it to.
        for n in [16, 100, 400, 1000] {
            let (graph, order) = linear_network(n);
            let budget = 2 * (n as f64).sqrt().ceil() as u64;
            for d in [Dealloc::Eager, Dealloc::Banish] {
                let (_, stats) = run(&graph, &order, budget, Heuristic::EStar, d).unwrap();
                assert!(stats.operations <= 4 * n, "N={n} {d:?}: {} operations", stats.operations);
            }
        }
    }

    #[test]
    fn a_budget_below_one_op_fails_cleanly() {
        let (graph, order) = linear_network(10);
        let err = run(&graph, &order, 1, Heuristic::DtrEq, Dealloc::Eager).unwrap_err();
        assert!(matches!(err, DtrError::OutOfMemory { .. }));
    }

    #[test]
    fn impure_nodes_run_once_and_views_follow_their_storage() {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::argument("x", 8), &[]);
        let rng = g.add(NodeSpec::op("rng", 4, 1.0).impure(), &[x]);
        let a = g.add(NodeSpec::op("a", 4, 1.0), &[x]);
        let view = g.add(NodeSpec::op("view", 0, 0.0).view_of(a), &[a]);
        let b = g.add(NodeSpec::op("b", 4, 1.0), &[rng, a]);
        let c = g.add(NodeSpec::op("c", 4, 1.0), &[b]);
        let d = g.add(NodeSpec::op("d", 4, 1.0).output(), &[c, view, rng]);
        let graph = g.finish().unwrap();
        let order = vec![rng, a, view, b, c, d];
        let baseline = simulate(&graph, &order).unwrap().peak_bytes;
        for h in Heuristic::ALL {
            for budget in (1..=baseline).rev() {
                let Ok((schedule, _)) = run(&graph, &order, budget, h, Dealloc::Eager) else { break };
                let sim = simulate(&graph, &schedule).unwrap();
                assert!(sim.peak_bytes <= budget);
            }
        }
    }

    #[test]
    fn union_find_components_sum_their_costs() {
        let mut uf = UnionFind::default();
        let a = uf.make(1.0);
        let b = uf.make(2.0);
        let c = uf.make(4.0);
        uf.union(a, b);
        uf.union(b, c);
        let root = uf.find(a);
        assert_eq!(uf.cost[root], 7.0);
        assert_eq!(uf.find(c), root);
    }
}
