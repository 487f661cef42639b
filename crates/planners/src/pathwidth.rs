//! `pathwidth`: PWRemat, rematerialization by divide and conquer over a path decomposition of
//! a long-spined graph (Kumar et al. 2019, §5; supplementary Algorithm 3, Theorem 22).
//!
//! The graph gets a spine first (Algorithm 2, [`add_spine`]) unless it already has a
//! Hamiltonian path; the spine fixes a total order `v1 ≺ … ≺ vn`, and its edges count as real
//! dependencies (the paper schedules `G′ = G + spine`). [`PwSchedule`] is Algorithm 3:
//!
//! * `PWRemat(X, u, W)` returns a schedule computing `u`, valid when `W` and every node
//!   outside the decomposition `X` are known. It drops the nodes after `u`, splits the bags at
//!   one holding `u` into a left part (walked outward from `u`) and a right part, and
//!   flattens the union of their interleaved schedules on `u`'s bag.
//! * `InterleavedSchedule(X, 𝒳, W)` returns one schedule `σ` per `x ∈ X` preparing `x`'s
//!   inputs (valid once the nodes of `X` before `x` are known). It halves `𝒳` at bag
//!   `X_{b/2}`: the nodes `u1 ≺ … ≺ uj` of `X_{b/2}` and of `X` before `last(X_{b/2})` are
//!   computed in the inner half by `PWRemat` on each spine predecessor, with the earlier
//!   `u`'s known (Lemma 11 makes the inner width drop by one); the outer half prepares
//!   `X_{b/2}`, and the inner half prepares the rest of `X` with all of those known.
//!   `Condense` folds the tuples onto `X`.
//!
//! Known nodes cost nothing in the paper's accounting (`M_W` skips steps of `W`, and `W` is
//! held), so a node known in the context that emits it is not emitted: that is the same
//! value, still resident, read later. Every other emission is a real (re)computation, so the
//! raw schedule has the paper's length — repeated prefixes included — and polishing then
//! removes what the memory target does not need.
//!
//! Practical additions, written down: PWRemat(k) stops the recursion in decompositions of
//! fewer than k bags (like TWRemat(k), §4.3) and schedules what is needed there without
//! rematerialization, as the paper's pathwidth-1 base case does; the schedule length grows
//! like `2^p (p!)² b log^{p-2} b`, so a run is abandoned once it emits more than
//! [`LENGTH_LIMIT_PER_NODE`]·n steps, and a larger k is tried. The split bag for `u` is the one
//! of `u`'s interval nearest the middle of the decomposition (the paper allows any).

use crate::deadline::DeadlineProbe;
use crate::pathdec::{add_spine, greedy_ordering_until, hamiltonian_path, ordering_width, PathDecomposition, Spine};
use crate::{
    plan_among, smallest_budget_among, Candidates, Deadline, PlanDetails, PlanError, PlanRequest, Planner,
    PlannerOptions,
};
use remat_graph::{Graph, NodeId, Schedule};

/// A run is abandoned once its raw schedule passes this many steps per node.
pub const LENGTH_LIMIT_PER_NODE: usize = 64;

/// Kumar et al.'s PWRemat (Algorithm 3) with a PWRemat(k) stop.
pub struct PwRemat;

impl Planner for PwRemat {
    fn name(&self) -> &'static str {
        "pathwidth"
    }
    fn summary(&self) -> &'static str {
        "PWRemat: divide and conquer over a path decomposition with a long spine (Kumar et al.)"
    }
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError> {
        Ok(self.plan_detailed(request)?.0)
    }
    fn plan_detailed(&self, request: &PlanRequest<'_>) -> Result<(Schedule, PlanDetails), PlanError> {
        plan_among(request, "pathwidth", candidates(request)?)
    }
    /// The candidates do not depend on the budget: built once, only the choice is bisected.
    fn smallest_feasible_budget_once(
        &self,
        graph: &Graph,
        order: &[NodeId],
        options: &PlannerOptions,
    ) -> Option<Option<u64>> {
        Some(smallest_budget_among(graph, order, options, "pathwidth", candidates))
    }
}

/// The input order and PWRemat(k) for each k (or `--pw-stop`'s).
fn candidates(request: &PlanRequest<'_>) -> Result<Candidates, PlanError> {
    let graph = request.graph;
    request.order_positions()?;
    let deadline = request.options.deadline;
    // PWRemat(∞): the top-level base case, a schedule without rematerialization; the
    // paper asks for any valid one, and the input order is the one the user measured.
    let mut candidates = Candidates { schedules: vec![request.order.to_vec()], out_of_time: false };
    if deadline.expired() {
        candidates.out_of_time = true;
        return Ok(candidates);
    }
    let problem = match SpinedDecomposition::new_until(graph, request.order, deadline) {
        Ok(problem) => problem,
        Err(Unbuilt::OutOfTime) => {
            candidates.out_of_time = true;
            return Ok(candidates);
        }
        Err(Unbuilt::TooWide { width }) => {
            tracing::debug!(width, "pathwidth: no decomposition, its bags would not fit in memory");
            return Ok(candidates);
        }
    };
    tracing::debug!(
        width = problem.width,
        bags = problem.bags.len(),
        added = problem.spine.added.len(),
        "path decomposition with spine"
    );
    let stops: Vec<usize> = match request.options.pw_stop {
        Some(k) => vec![k.max(1)],
        None => std::iter::successors(Some(1usize), |&k| (k <= problem.bags.len()).then_some(k * 2)).collect(),
    };
    let limit = LENGTH_LIMIT_PER_NODE.saturating_mul(graph.len().max(1));
    for k in stops {
        if deadline.expired() {
            break;
        }
        match problem.schedule(graph, k, limit, deadline) {
            Some(raw) => candidates.schedules.push(raw),
            None => tracing::debug!(stop = k, limit, "PWRemat(k) abandoned: schedule too long or out of time"),
        }
    }
    candidates.out_of_time = deadline.expired();
    Ok(candidates)
}

/// Most node entries the bags of a path decomposition may hold (n × (width + 1)): 2^26, a
/// quarter of a gigabyte. PWRemat's schedules grow exponentially with the width, so a graph
/// this wide would be abandoned at the length limit anyway.
pub const MAX_BAG_ENTRIES: usize = 1 << 26;

/// Why [`SpinedDecomposition::new_until`] built nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unbuilt {
    /// The deadline passed during the greedy ordering.
    OutOfTime,
    /// Both orderings' bags would hold more than [`MAX_BAG_ENTRIES`]; the narrower's width.
    TooWide {
        /// The narrower ordering's width.
        width: usize,
    },
}

/// A graph with a long spine and a path decomposition of graph + spine, in spine indices.
pub struct SpinedDecomposition {
    /// The spine (and the edges added for it).
    pub spine: Spine,
    /// Bags of spine indices, sorted.
    pub bags: Vec<Vec<u32>>,
    /// Width of the decomposition.
    pub width: usize,
    /// Each spine index's interval of bag positions.
    intervals: Vec<(usize, usize)>,
    /// Each spine index's inputs in `G′` (graph edges between ops, plus the spine edge).
    inputs: Vec<Vec<u32>>,
}

impl SpinedDecomposition {
    /// Decomposes `graph` (the narrower of the greedy and the `base` ordering's vertex
    /// separation decompositions), then adds a spine unless the graph has a Hamiltonian path.
    /// Panics when the bags would hold more than [`MAX_BAG_ENTRIES`] (graphs of thousands of
    /// nodes with a wide ordering); [`new_until`](Self::new_until) says so instead.
    pub fn new(graph: &Graph, base: &[NodeId]) -> Self {
        match Self::new_until(graph, base, Deadline::NONE) {
            Ok(problem) => problem,
            Err(unbuilt) => panic!("no path decomposition: {unbuilt:?}"),
        }
    }

    /// [`new`](Self::new), or why it was not built: the deadline passed during the greedy
    /// ordering, or both orderings are too wide to hold their bags.
    pub fn new_until(graph: &Graph, base: &[NodeId], deadline: Deadline) -> Result<Self, Unbuilt> {
        let greedy = greedy_ordering_until(graph, base, deadline).ok_or(Unbuilt::OutOfTime)?;
        // Only the narrower ordering's bags are built (both on a tie, which the compressed
        // length breaks), and none when even those would hold more than MAX_BAG_ENTRIES.
        let orderings = [greedy, base.to_vec()];
        let widths = orderings.each_ref().map(|o| ordering_width(graph, o));
        let narrowest = widths[0].min(widths[1]);
        if (narrowest + 1).saturating_mul(base.len()) > MAX_BAG_ENTRIES {
            return Err(Unbuilt::TooWide { width: narrowest });
        }
        let mut decomposition = orderings
            .iter()
            .zip(widths)
            .filter(|&(_, width)| width == narrowest)
            .map(|(ordering, _)| {
                let mut pd = PathDecomposition::from_ordering(graph, ordering);
                pd.compress();
                pd
            })
            .min_by_key(|pd| (pd.width(), pd.len()))
            .expect("the narrowest ordering");
        debug_assert_eq!(decomposition.validate(graph, &[]), Ok(()));
        let spine = match hamiltonian_path(graph) {
            Some(order) => Spine { order, added: Vec::new(), stretched_left: 0 },
            None => add_spine(graph, &mut decomposition),
        };
        debug_assert_eq!(decomposition.validate(graph, &spine.added), Ok(()));
        Ok(Self::with_spine(graph, &decomposition, spine))
    }

    /// The decomposition in spine indices; `decomposition` must be valid for graph + spine.
    pub fn with_spine(graph: &Graph, decomposition: &PathDecomposition, spine: Spine) -> Self {
        let mut index = vec![u32::MAX; graph.len()];
        for (i, n) in spine.order.iter().enumerate() {
            index[n.index()] = i as u32;
        }
        let bags: Vec<Vec<u32>> = decomposition
            .bags
            .iter()
            .map(|bag| {
                let mut b: Vec<u32> = bag.iter().map(|n| index[n.index()]).collect();
                b.sort_unstable();
                b
            })
            .collect();
        let mut intervals = vec![(usize::MAX, 0); spine.order.len()];
        for (i, bag) in bags.iter().enumerate() {
            for &v in bag {
                let slot = &mut intervals[v as usize];
                *slot = (slot.0.min(i), i);
            }
        }
        let inputs = spine
            .order
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let mut list: Vec<u32> =
                    graph.preds(n).iter().filter(|p| !graph.node(**p).argument).map(|p| index[p.index()]).collect();
                if i > 0 {
                    list.push(i as u32 - 1);
                }
                list.sort_unstable();
                list.dedup();
                list
            })
            .collect();
        let width = bags.iter().map(Vec::len).max().unwrap_or(1).saturating_sub(1);
        SpinedDecomposition { spine, bags, width, intervals, inputs }
    }

    /// PWRemat(k) for the last spine node (every node is its ancestor through the spine),
    /// mapped back to graph nodes; impure nodes keep only their first execution. `None` when
    /// the schedule passes `limit` steps, or when `deadline` passes.
    pub fn schedule(&self, graph: &Graph, stop: usize, limit: usize, deadline: Deadline) -> Option<Schedule> {
        let n = self.spine.order.len();
        if n == 0 {
            return Some(Vec::new());
        }
        let whole = View { lo: 0, hi: self.bags.len(), reversed: false, cap: n as u32 - 1 };
        let mut run = PwSchedule { problem: self, stop: stop.max(1), work: 0, limit, deadline: deadline.probe() };
        // Deep recursions (a left part can be all but one bag) need more than a default stack.
        let indices = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(1 << 30)
                .spawn_scoped(scope, || run.pw_remat(whole, n as u32 - 1, &[]))
                .expect("spawn the PWRemat thread")
                .join()
                .expect("PWRemat does not panic")
        })
        .ok()?;
        let mut executed = vec![false; graph.len()];
        let schedule = indices
            .into_iter()
            .map(|i| self.spine.order[i as usize])
            .filter(|&v| graph.node(v).pure || !std::mem::replace(&mut executed[v.index()], true))
            .collect();
        Some(schedule)
    }
}

/// A sub-decomposition: bag positions `lo..hi` walked forward or backward, keeping only spine
/// indices up to `cap`.
#[derive(Clone, Copy, Debug)]
struct View {
    lo: usize,
    hi: usize,
    reversed: bool,
    cap: u32,
}

impl View {
    fn len(self) -> usize {
        self.hi - self.lo
    }
    /// The bag position of the `j`-th bag in walking order.
    fn position(self, j: usize) -> usize {
        if self.reversed {
            self.hi - 1 - j
        } else {
            self.lo + j
        }
    }
    /// The walking-order index of bag position `position` (the inverse of [`View::position`]).
    fn index_of(self, position: usize) -> usize {
        if self.reversed {
            self.hi - 1 - position
        } else {
            position - self.lo
        }
    }
    /// Bags `j0..j1` in walking order.
    fn part(self, j0: usize, j1: usize) -> View {
        if self.reversed {
            View { lo: self.hi - j1, hi: self.hi - j0, ..self }
        } else {
            View { lo: self.lo + j0, hi: self.lo + j1, ..self }
        }
    }
    fn flipped(self) -> View {
        View { reversed: !self.reversed, ..self }
    }
}

/// The schedule exceeded its length limit, or the deadline passed.
struct TooLong;

/// An interleaved schedule: `(x, σ)` tuples (several may share an `x`).
type Interleaved = Vec<(u32, Vec<u32>)>;

struct PwSchedule<'a> {
    problem: &'a SpinedDecomposition,
    stop: usize,
    /// Steps emitted or copied so far, and calls made: bounded by `limit`.
    work: usize,
    limit: usize,
    deadline: DeadlineProbe,
}

impl PwSchedule<'_> {
    fn charge(&mut self, steps: usize) -> Result<(), TooLong> {
        self.work += steps;
        if self.work > self.limit || self.deadline.expired() {
            Err(TooLong)
        } else {
            Ok(())
        }
    }

    /// The `j`-th bag of `view`, restricted to `view.cap`.
    fn bag(&self, view: View, j: usize) -> &[u32] {
        let bag = &self.problem.bags[view.position(j)];
        &bag[..bag.partition_point(|&v| v <= view.cap)]
    }

    /// Whether `v` is a node of `view` (ν(𝒳)).
    fn holds(&self, view: View, v: u32) -> bool {
        let (l, r) = self.problem.intervals[v as usize];
        v <= view.cap && l < view.hi && r >= view.lo
    }

    /// `PWRemat(𝒳, u, W)`: a schedule computing `u`, valid for known set `W ∪ ν̄(𝒳)`.
    fn pw_remat(&mut self, view: View, u: u32, known: &[u32]) -> Result<Vec<u32>, TooLong> {
        self.charge(1)?;
        if known.binary_search(&u).is_ok() || !self.holds(view, u) {
            return Ok(Vec::new()); // known: the held value serves
        }
        if self.problem.inputs[u as usize].iter().all(|&p| !self.holds(view, p) || known.binary_search(&p).is_ok()) {
            self.charge(1)?;
            return Ok(vec![u]);
        }
        let view = View { cap: u, ..view };
        if view.len() < self.stop || (0..view.len()).all(|j| self.bag(view, j).len() <= 2) {
            return self.without_remat(view, u, known);
        }
        // The bag of u's interval nearest the middle of the view, in walking order.
        let (l, r) = self.problem.intervals[u as usize];
        let (l, r) = (l.max(view.lo), r.min(view.hi - 1));
        let middle = (view.lo + view.hi - 1) / 2;
        let position = middle.clamp(l, r);
        let i = view.index_of(position);
        let bag: Vec<u32> = self.bag(view, i).to_vec();
        let mut tuples = self.interleaved(&bag, view.part(0, i).flipped(), known)?;
        tuples.extend(self.interleaved(&bag, view.part(i + 1, view.len()), known)?);
        // Flatten(I_ℓ ∪ I_r): each x's schedules (ℓ before r), then x.
        tuples.sort_by_key(|t| t.0);
        let mut schedule = Vec::new();
        for (k, (x, sigma)) in tuples.iter().enumerate() {
            schedule.extend(sigma.iter().copied().filter(|&v| known.binary_search(&v).is_err()));
            if tuples.get(k + 1).is_none_or(|next| next.0 != *x) && known.binary_search(x).is_err() {
                schedule.push(*x);
            }
        }
        self.charge(schedule.len())?;
        Ok(schedule)
    }

    /// The base cases' schedule: the ancestors of `u` in `view` that are not known, in spine
    /// order, each once.
    fn without_remat(&mut self, view: View, u: u32, known: &[u32]) -> Result<Vec<u32>, TooLong> {
        let mut needed = vec![u];
        let mut stack = vec![u];
        let mut seen = std::collections::HashSet::from([u]);
        while let Some(v) = stack.pop() {
            for &p in &self.problem.inputs[v as usize] {
                if self.holds(view, p) && known.binary_search(&p).is_err() && seen.insert(p) {
                    needed.push(p);
                    stack.push(p);
                }
            }
        }
        needed.sort_unstable();
        self.charge(needed.len())?;
        Ok(needed)
    }

    /// `InterleavedSchedule(X, 𝒳, W)`: for each `x ∈ X` a schedule that, with `W`, the nodes
    /// outside `𝒳` and the nodes of `X` before `x` known, makes `x` computable.
    fn interleaved(&mut self, x_set: &[u32], view: View, known: &[u32]) -> Result<Interleaved, TooLong> {
        self.charge(1)?;
        if view.len() == 0 || x_set.iter().all(|x| known.binary_search(x).is_ok()) {
            return Ok(x_set.iter().map(|&x| (x, Vec::new())).collect());
        }
        let b = view.len();
        let mid = (b - 1) / 2; // X_{b/2}, rounding up, 0-based
        let inner = view.part(0, mid);
        let outer = view.part(mid + 1, b);
        let middle: Vec<u32> = self.bag(view, mid).to_vec();
        let last = middle.last().copied();
        let before: Vec<u32> = x_set.iter().copied().filter(|&x| last.is_some_and(|l| x < l)).collect();
        let mut us: Vec<u32> = before.iter().chain(middle.iter()).copied().collect();
        us.sort_unstable();
        us.dedup();
        // I_inner: σ_i = PWRemat(𝒳_inner, pred(u_i), {u_1..u_{i-1}}), tuple ⟨σ_1∘u_1∘…∘σ_i, u_i⟩
        // (the u's before u_i are known in that tuple, so only the σ's are emitted).
        let mut tuples: Interleaved = Vec::new();
        let mut prefix: Vec<u32> = Vec::new();
        for (i, &u_i) in us.iter().enumerate() {
            if u_i > 0 {
                let sigma = self.pw_remat(inner, u_i - 1, &us[..i])?;
                prefix.extend(sigma);
            }
            self.charge(prefix.len())?;
            tuples.push((u_i, prefix.clone()));
        }
        tuples.extend(self.interleaved(&middle, outer, known)?);
        let rest: Vec<u32> = x_set.iter().copied().filter(|x| before.binary_search(x).is_err()).collect();
        let mut lower_known: Vec<u32> = known.iter().chain(before.iter()).chain(middle.iter()).copied().collect();
        lower_known.sort_unstable();
        lower_known.dedup();
        tuples.extend(self.interleaved(&rest, inner, &lower_known)?);
        Ok(self.condense(x_set, tuples, view, known))
    }

    /// `Condense(X, I)`: merge the tuples of each node (in the order they were made), then fold
    /// every node not in `X` — its schedules, then itself — into the next node of `X`; what
    /// follows the last node of `X` is not needed. Each result drops what its context knows.
    fn condense(&self, x_set: &[u32], mut tuples: Interleaved, view: View, known: &[u32]) -> Interleaved {
        tuples.sort_by_key(|t| t.0);
        let mut result = Vec::with_capacity(x_set.len());
        let mut pending: Vec<u32> = Vec::new();
        for k in 0..tuples.len() {
            let (x, ref sigma) = tuples[k];
            pending.extend_from_slice(sigma);
            if tuples.get(k + 1).is_some_and(|next| next.0 == x) {
                continue;
            }
            if x_set.binary_search(&x).is_ok() {
                let sigma: Vec<u32> = std::mem::take(&mut pending)
                    .into_iter()
                    .filter(|&v| {
                        known.binary_search(&v).is_err()
                            && self.holds(view, v)
                            && !(v < x && x_set.binary_search(&v).is_ok())
                    })
                    .collect();
                result.push((x, sigma));
            } else {
                pending.push(x);
            }
        }
        for &x in x_set {
            if result.binary_search_by_key(&x, |t| t.0).is_err() {
                result.push((x, Vec::new()));
            }
        }
        result.sort_by_key(|t| t.0);
        result
    }
}
