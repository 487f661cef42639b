//! Trading a dear recomputation for cheaper ones: a local search over any plan within a
//! budget.
//!
//! Polishing ([`crate::polish`]) only removes steps, so it keeps a plan's choice of *which*
//! values make room. A planner that decides in whole blocks often makes room with a dear value
//! (a convolution's result, recomputed for the backward) where a few cheap ones would do (the
//! normalization and activation after it, 9× cheaper per byte in a ResNet step). The move
//! here: drop one recomputation (its readers read the value's previous instance, which now
//! lives through the gap), then repair the steps that pushes over the budget by *splitting*
//! other values' lifetimes: an instance held idle across those steps between two of its
//! reads is recomputed right before the later read, together with those of its inputs that
//! are no longer resident there (a short chain). Splits are taken greedily by the over-budget
//! bytes they free per unit of cost, until every step fits; the trade is kept when the
//! repaired plan, simulated exactly, is within the budget and cheaper. Dearest recomputations
//! are tried first, each once per pass; passes repeat while one makes a trade (a trade can
//! make room for one that failed before).
//!
//! The same repair also pushes a plan *below* its own peak ([`descend`]): with nothing dropped,
//! every step over a smaller budget is repaired by splits, with longer chains (a block's
//! forward rebuilt from its checkpoint right before its backward reads it), and, once a split
//! brings the summed excess to no new low, the next chosen by simulating the best few
//! ([`STALLED_CANDIDATES`]) rather than by their estimates. Before the greedy, the descent
//! chooses splits together ([`covering_splits`]): the cheapest set whose bytes cover every
//! over-budget step's excess, by the same estimates, a covering program that HiGHS solves; a
//! few rounds, each on the schedule the last one left, then the greedy for the rest; on small
//! schedules (and where no round could be solved) the greedy alone as well, the cheaper kept.
//! Splits taken one by one by bytes freed per cost can pay twice for steps one dearer split
//! spans whole: transformer12's linalg step at its peak lower bound + 10 % costs +26.7 % this
//! way where the greedy alone costs +27.9 %. That is how the hierarchical planner goes below
//! the least memory its DP reaches: the DP keeps a checkpoint per block through the backward,
//! and near its least the peak is where those checkpoints sit beside one block's working set
//! (a 240-layer transformer: 38.6 MiB least, 37.2 MiB after splits, at +52.7 % where DTR needs
//! +1041 %).
//!
//! Every schedule it keeps was simulated by [`remat_graph::lifetimes`], so the memory model's
//! views, buffer reuse and fusion are decided exactly; the split estimates ignore them and only
//! rank candidates. Values with views, views, impure nodes and arguments are never split (views
//! and the values they view may be rebuilt inside a split's chain). The
//! work is capped in simulated steps ([`WORK_STEPS`]), so the result does not depend on the
//! machine's speed; the deadline only stops it earlier.

use crate::Deadline;
use remat_graph::{lifetimes, simulate, Graph, NodeId, Schedule};

/// At most this many schedule steps simulated over one search (a few seconds at most), so the
/// result does not depend on the machine; each trial costs a few simulations.
const WORK_STEPS: usize = 20_000_000;

/// The search stops after this many trials in a row that found no trade (on a plan whose
/// recomputations are all needed, it would otherwise spend its whole work budget).
const PATIENCE: usize = 256;

/// At most this many splits repair one dropped recomputation.
const MAX_SPLITS: usize = 48;

/// Spans of at most this many over-budget steps get a split's gain summed step by step.
const EXACT_SPAN: usize = 256;

/// At most this many nodes recomputed by one split (the value and inputs no longer resident).
const MAX_CHAIN: usize = 8;

/// [`descend`]'s limits: splits in all, nodes per split (a block's forward, rebuilt from its
/// checkpoint), and splits in a row that bring the excess over the budget to no new low (a
/// repair that only moves the excess around).
const DESCEND_SPLITS: usize = 4096;
const DESCEND_CHAIN: usize = 64;
const DESCEND_STALL: usize = 64;

/// After a split that brought the excess over the budget to no new low, [`descend`] simulates
/// the best this many splits by their estimate and takes the one that leaves the least excess.
/// The estimates ignore a chain's own bytes, buffer reuse and fusion; near a plan's least the
/// best-scoring split can move the excess back and forth without end (transformer12's linalg
/// step at the forward's end: the same three cheap values split again and again, ten steps
/// later each time), where an exact choice among a few goes on down (that step's plan at
/// 585 KiB to its peak lower bound + 10 %, 518,852 B, where the estimates alone stall).
const STALLED_CANDIDATES: usize = 32;

/// [`descend`]'s covering program ([`covering_splits`]): rounds at most, programs larger than
/// this many nonzeros not built, branch-and-bound nodes (a limit that gives the same choice on
/// every machine) and seconds (the deadline's remainder if less) per program.
const COVER_ROUNDS: usize = 8;
const COVER_NONZEROS: usize = 400_000;
const COVER_NODES: usize = 2_000;
const COVER_SECONDS: f64 = 10.0;

/// [`descend`] on a schedule of up to this many steps also runs the greedy alone and keeps the
/// cheaper (a ResNet-50 layout at 45 %: the greedy's +16.4 % where the covering way's is
/// +17.8 %); on larger ones the covering way alone.
const BOTH_WAYS_STEPS: usize = 2_000;

/// How far one repair may go.
struct Limits {
    /// Cost the splits may add, exclusive.
    cost: f64,
    splits: usize,
    chain: usize,
    /// Splits simulated to choose one after a split without a new low (1: the estimate's best).
    stalled_candidates: usize,
    /// Splits in a row without a new low of the summed excess before it gives up.
    stall: usize,
}

/// `schedule`, cheaper and still within `target`, after the trades that pay (module docs), and
/// how many were made; `None` where none pays, or where `schedule` is invalid or over `target`.
pub(crate) fn trade_recomputations(
    graph: &Graph,
    schedule: &[NodeId],
    target: u64,
    deadline: Deadline,
) -> Option<(Schedule, usize)> {
    let start = simulate(graph, schedule).ok().filter(|s| s.peak_bytes <= target)?;
    let splittable = splittable_nodes(graph, false);
    let mut work = Work { left: WORK_STEPS, deadline };
    let mut current = schedule.to_vec();
    let mut current_cost = start.cost;
    let mut traded = 0;
    // A pass tries each recomputation once, dearest first (a node whose trial failed is not
    // tried again in the pass, the list being rebuilt after each trade); passes repeat while
    // one makes a trade, since a trade can make room for one that failed before.
    let mut failed = vec![false; graph.len()];
    let mut failed_in_a_row = 0;
    let mut traded_in_pass = 0;
    'search: loop {
        for j in recomputations_dearest_first(graph, &current) {
            let node = current[j];
            let dropped_cost = graph.node(node).cost;
            if dropped_cost <= 0.0 || failed_in_a_row == PATIENCE {
                break;
            }
            if failed[node.index()] {
                continue;
            }
            if !work.spend(current.len()) {
                break 'search;
            }
            failed_in_a_row += 1;
            failed[node.index()] = true;
            let mut trial = current.clone();
            trial.remove(j);
            let limits = Limits {
                cost: dropped_cost,
                splits: MAX_SPLITS,
                chain: MAX_CHAIN,
                stalled_candidates: 1,
                stall: MAX_SPLITS + 1,
            };
            let Some(repaired) = repair(graph, &splittable, trial, target, &limits, &mut work) else { continue };
            if !work.spend(repaired.len()) {
                break 'search;
            }
            let Ok(sim) = simulate(graph, &repaired) else { continue };
            if sim.peak_bytes <= target && sim.cost < current_cost * (1.0 - 1e-12) {
                tracing::trace!(
                    target: "remat_planners::trade",
                    dropped = %graph.node(node).name,
                    from = current_cost,
                    to = sim.cost,
                    "trade kept"
                );
                current = repaired;
                current_cost = sim.cost;
                traded += 1;
                traded_in_pass += 1;
                failed_in_a_row = 0;
                failed[node.index()] = false;
                continue 'search;
            }
        }
        if traded_in_pass == 0 {
            break;
        }
        traded_in_pass = 0;
        failed_in_a_row = 0;
        failed.fill(false);
    }
    tracing::debug!(target: "remat_planners::trade", traded, work_left = work.left, from = start.cost, to = current_cost, "trades");
    (traded > 0).then_some((current, traded))
}

/// `schedule`, over `target`, brought within it by splits alone (module docs), and how many;
/// `None` where the splits cannot (a step over `target` that no idle value spans, a repair
/// that stalls) or `schedule` is invalid. A schedule already within `target` comes back as it
/// is, with 0 splits. Capped in simulated steps like the trades.
///
/// With `views_in_chains`, a split may rebuild the views its value reads through (and what
/// they view), which is how a transformer's residuals, read through reshapes, come back; the
/// greedy's choices then differ, and neither way is always the cheaper (transformer12's linalg
/// step: +25.4 % where the splits without views cost +47.7 % at its least, +21.6 % where they
/// cost +21.1 % at 600 KiB), so the hierarchical planner tries both. The splits are first
/// chosen together by covering programs ([`covered`]), the rest by the greedy repair; on
/// schedules of up to [`BOTH_WAYS_STEPS`] steps, and where no covering program could be solved,
/// the greedy also repairs the whole, and the cheaper descent stands.
pub(crate) fn descend(
    graph: &Graph,
    schedule: &[NodeId],
    target: u64,
    views_in_chains: bool,
    deadline: Deadline,
) -> Option<(Schedule, usize)> {
    let splittable = splittable_nodes(graph, views_in_chains);
    let mut work = Work { left: WORK_STEPS, deadline };
    let limits = Limits {
        cost: f64::INFINITY,
        splits: DESCEND_SPLITS,
        chain: DESCEND_CHAIN,
        stalled_candidates: STALLED_CANDIDATES,
        stall: DESCEND_STALL,
    };
    // Splits chosen together by covering programs first, the greedy for what they leave; the
    // greedy alone beside that on schedules of up to `BOTH_WAYS_STEPS` (neither way is always
    // the cheaper), and on larger ones only where no program could be solved: there a second
    // way would double the descents' time, which near a step's least fill the hierarchical
    // planner's time limit.
    let start = covered(graph, &splittable, schedule.to_vec(), target, &mut work);
    let none_solved = start.is_none();
    let by_cover = start.and_then(|start| repair(graph, &splittable, start, target, &limits, &mut work));
    let by_greedy = (none_solved || schedule.len() <= BOTH_WAYS_STEPS)
        .then(|| {
            let mut work = Work { left: WORK_STEPS, deadline };
            repair(graph, &splittable, schedule.to_vec(), target, &limits, &mut work)
        })
        .flatten();
    let cost = |s: &Schedule| simulate(graph, s).map_or(f64::INFINITY, |s| s.cost);
    let descended = match (by_cover, by_greedy) {
        // The covering way on a tie.
        (Some(cover), Some(greedy)) => {
            if cost(&greedy) < cost(&cover) {
                greedy
            } else {
                cover
            }
        }
        (cover, greedy) => cover.or(greedy)?,
    };
    let splits = descended.len() - schedule.len();
    tracing::debug!(target: "remat_planners::trade", target, steps = splits, work_left = work.left, "descended");
    Some((descended, splits))
}

/// `schedule` with the splits [`covering_splits`] chooses, round after round while the summed
/// excess over `target` falls ([`COVER_ROUNDS`] at most): each round's estimates ignore what
/// its splits do to each other (a chain's own bytes, an input held longer for a chain that
/// reads it), which the next round sees. `None` where no round could be solved; the schedule
/// may still be over `target`.
fn covered(
    graph: &Graph,
    splittable: &Splittable,
    mut schedule: Schedule,
    target: u64,
    work: &mut Work,
) -> Option<Schedule> {
    let mut excess = u64::MAX;
    let mut solved = false;
    for _ in 0..COVER_ROUNDS {
        if !work.spend(schedule.len()) {
            break;
        }
        let life = lifetimes(graph, &schedule).ok()?;
        let over: Vec<usize> = (0..schedule.len()).filter(|&t| life.step_bytes[t] > target).collect();
        let now = excess_over(&life.step_bytes, target);
        if over.is_empty() || now >= excess {
            break;
        }
        excess = now;
        let Some(mut splits) = covering_splits(graph, splittable, &schedule, &life, &over, target, work.deadline)
        else {
            break;
        };
        solved = true;
        // From the last position back, so that the earlier positions stay where they were.
        splits.sort_by_key(|split| std::cmp::Reverse(split.0));
        for (position, chain, _) in splits {
            schedule.splice(position..position, chain);
        }
    }
    solved.then_some(schedule)
}

/// The simulation budget of one search.
struct Work {
    left: usize,
    deadline: Deadline,
}

impl Work {
    /// Takes `steps` from the budget; false once it (or the deadline) is spent.
    fn spend(&mut self, steps: usize) -> bool {
        if self.left < steps || self.deadline.expired() {
            self.left = 0;
            return false;
        }
        self.left -= steps;
        true
    }
}

/// What splits may recompute.
struct Splittable {
    /// As the value split: pure, neither a view nor viewed (a view's readers would keep the old
    /// instance's buffer alive), no loop workspace, not an argument.
    value: Vec<bool>,
    /// Inside a split's chain, rebuilding the value's inputs: pure, no loop workspace, not an
    /// argument; views and the values they view included, rebuilt together (a view rebuilt
    /// from its source's new instance aliases that instance). Layers read their inputs
    /// through reshapes, and without them a transformer's residuals could not be rebuilt.
    input: Vec<bool>,
}

/// What splits may recompute; without `views_in_chains`, a chain's inputs are held to the
/// split value's terms.
fn splittable_nodes(graph: &Graph, views_in_chains: bool) -> Splittable {
    let input: Vec<bool> = graph
        .ids()
        .map(|v| {
            let node = graph.node(v);
            !node.argument && node.pure && node.workspace == 0
        })
        .collect();
    let value: Vec<bool> = graph
        .ids()
        .map(|v| {
            input[v.index()]
                && graph.node(v).view_of.is_none()
                && !graph.succs(v).iter().any(|&s| graph.node(s).view_of == Some(v))
        })
        .collect();
    let input = if views_in_chains { input } else { value.clone() };
    Splittable { value, input }
}

/// Steps that recompute a node (not its first instance, not a view), dearest first, then by
/// position.
fn recomputations_dearest_first(graph: &Graph, schedule: &[NodeId]) -> Vec<usize> {
    let mut seen = vec![false; graph.len()];
    let mut steps = Vec::new();
    for (j, &v) in schedule.iter().enumerate() {
        if std::mem::replace(&mut seen[v.index()], true) && graph.node(v).view_of.is_none() {
            steps.push(j);
        }
    }
    steps.sort_by(|&a, &b| graph.node(schedule[b]).cost.total_cmp(&graph.node(schedule[a]).cost).then(a.cmp(&b)));
    steps
}

/// `schedule` with splits added until every step is within `target`, within `limits`; `None`
/// where that fails.
fn repair(
    graph: &Graph,
    splittable: &Splittable,
    mut schedule: Schedule,
    target: u64,
    limits: &Limits,
    work: &mut Work,
) -> Option<Schedule> {
    let mut added = 0.0;
    let (mut lowest_excess, mut since_lowest) = (u64::MAX, 0);
    for _ in 0..=limits.splits {
        if !work.spend(schedule.len()) {
            return None;
        }
        let life = lifetimes(graph, &schedule).ok()?;
        let over: Vec<usize> = (0..schedule.len()).filter(|&t| life.step_bytes[t] > target).collect();
        if over.is_empty() {
            return Some(schedule);
        }
        let excess = excess_over(&life.step_bytes, target);
        if excess < lowest_excess {
            (lowest_excess, since_lowest) = (excess, 0);
        } else {
            since_lowest += 1;
            if since_lowest == limits.stall {
                return None;
            }
        }
        let keep = if since_lowest > 0 { limits.stalled_candidates } else { 1 };
        let candidates = best_splits(graph, splittable, &schedule, &life, &over, target, limits.chain, keep);
        let (position, chain, cost) = if candidates.len() > 1 {
            least_excess_split(graph, &schedule, target, candidates, work)?
        } else {
            candidates.into_iter().next()?
        };
        added += cost;
        if added >= limits.cost {
            return None;
        }
        schedule.splice(position..position, chain);
    }
    None
}

/// Of `candidates` (splits as [`best_splits`] gives them), the one whose schedule, simulated,
/// has the least excess over `target`, the first among equals; `None` where the work runs out.
fn least_excess_split(
    graph: &Graph,
    schedule: &[NodeId],
    target: u64,
    candidates: Vec<Split>,
    work: &mut Work,
) -> Option<Split> {
    let mut least: Option<(u64, Split)> = None;
    for split in candidates {
        if !work.spend(schedule.len() + split.1.len()) {
            return None;
        }
        let (position, chain, _) = &split;
        let trial: Schedule =
            schedule[..*position].iter().chain(chain).chain(&schedule[*position..]).copied().collect();
        let Ok(life) = lifetimes(graph, &trial) else { continue };
        let excess = excess_over(&life.step_bytes, target);
        if least.as_ref().is_none_or(|(least, _)| excess < *least) {
            least = Some((excess, split));
        }
    }
    least.map(|(_, split)| split)
}

/// The bytes over `target`, summed over the steps: how far a schedule is from fitting.
fn excess_over(step_bytes: &[u64], target: u64) -> u64 {
    step_bytes.iter().map(|&bytes| bytes.saturating_sub(target)).sum()
}

/// A split: where to insert, the nodes to recompute there in schedule order, and their cost.
type Split = (usize, Vec<NodeId>, f64);

/// A split with what it frees: the over-budget steps it spans (indices `lo..hi` into the
/// over-budget steps) and the bytes of the value it stops holding there.
struct SplitCandidate {
    split: Split,
    over: std::ops::Range<usize>,
    bytes: u64,
}

/// Every split of an instance held idle across over-budget steps, between two of its reads
/// (or its step and its first read), whose chain may be recomputed, in schedule order.
fn split_candidates(
    graph: &Graph,
    splittable: &Splittable,
    schedule: &[NodeId],
    life: &remat_graph::Lifetimes,
    over: &[usize],
    max_chain: usize,
) -> Vec<SplitCandidate> {
    let steps = schedule.len();
    // Per instance (its step), the steps that read it; per node, its instances.
    let mut reads: Vec<Vec<usize>> = vec![Vec::new(); steps];
    let mut instances: Vec<Vec<usize>> = vec![Vec::new(); graph.len()];
    let mut latest = vec![usize::MAX; graph.len()];
    for (i, &v) in schedule.iter().enumerate() {
        for &p in graph.preds(v) {
            let k = latest[p.index()];
            if k != usize::MAX && reads[k].last() != Some(&i) {
                reads[k].push(i);
            }
        }
        latest[v.index()] = i;
        instances[v.index()].push(i);
    }
    let (first_over, last_over) = (over[0], over[over.len() - 1]);
    let mut candidates = Vec::new();
    for (k, &v) in schedule.iter().enumerate() {
        let bytes = graph.node(v).bytes;
        if !splittable.value[v.index()] || bytes == 0 || life.fused[k] || k >= last_over || life.end[k] <= first_over {
            continue;
        }
        let events = std::iter::once(k).chain(reads[k].iter().copied());
        for (a, b) in events.clone().zip(events.skip(1)) {
            // Over-budget steps strictly between the two events, where the value sits idle.
            let lo = over.partition_point(|&t| t <= a);
            let hi = over.partition_point(|&t| t < b);
            if lo >= hi {
                continue;
            }
            let Some((chain, cost)) = chain_at(graph, splittable, life, &instances, v, b, max_chain) else {
                continue;
            };
            candidates.push(SplitCandidate { split: (b, chain, cost), over: lo..hi, bytes });
        }
    }
    candidates
}

/// The `keep` splits freeing the most over-budget bytes per unit of cost, best first.
#[allow(clippy::too_many_arguments)]
fn best_splits(
    graph: &Graph,
    splittable: &Splittable,
    schedule: &[NodeId],
    life: &remat_graph::Lifetimes,
    over: &[usize],
    target: u64,
    max_chain: usize,
    keep: usize,
) -> Vec<Split> {
    // Excess over the budget, summed over the over-budget steps before each of them.
    let mut excess_before = Vec::with_capacity(over.len() + 1);
    excess_before.push(0u64);
    for &t in over {
        excess_before.push(excess_before.last().unwrap() + (life.step_bytes[t] - target));
    }
    // Best first; a later equal score goes after the earlier ones.
    let mut best: Vec<(f64, Split)> = Vec::with_capacity(keep + 1);
    for candidate in split_candidates(graph, splittable, schedule, life, over, max_chain) {
        let (lo, hi, bytes) = (candidate.over.start, candidate.over.end, candidate.bytes);
        // The excess it removes: exactly over a short span, else bounded both ways.
        let gain = if hi - lo <= EXACT_SPAN {
            over[lo..hi].iter().map(|&t| (life.step_bytes[t] - target).min(bytes)).sum::<u64>()
        } else {
            (bytes * (hi - lo) as u64).min(excess_before[hi] - excess_before[lo])
        } as f64;
        let score = gain / candidate.split.2.max(f64::MIN_POSITIVE);
        if best.len() < keep || best.last().is_some_and(|(last, _)| score > *last) {
            let at = best.partition_point(|(s, _)| *s >= score);
            best.insert(at, (score, candidate.split));
            best.truncate(keep);
        }
    }
    best.into_iter().map(|(_, split)| split).collect()
}

/// The cheapest set of splits that, by their estimates, brings every over-budget step within
/// `target`: a covering program (each step's excess covered by the bytes of the splits that
/// span it), solved by HiGHS. `None` where the program is too large or has no solution.
fn covering_splits(
    graph: &Graph,
    splittable: &Splittable,
    schedule: &[NodeId],
    life: &remat_graph::Lifetimes,
    over: &[usize],
    target: u64,
    deadline: Deadline,
) -> Option<Vec<Split>> {
    use crate::ilp::model::{Model, Outcome};
    let candidates = split_candidates(graph, splittable, schedule, life, over, DESCEND_CHAIN);
    // Elementary segments of the over-budget steps: between consecutive span ends, the same
    // splits cover every step, so one row (the segment's largest excess) stands for them.
    let mut cuts: Vec<usize> = candidates.iter().flat_map(|c| [c.over.start, c.over.end]).collect();
    cuts.extend([0, over.len()]);
    cuts.sort_unstable();
    cuts.dedup();
    let nonzeros: usize = candidates
        .iter()
        .map(|c| cuts.partition_point(|&x| x < c.over.end) - cuts.partition_point(|&x| x < c.over.start))
        .sum();
    if nonzeros > COVER_NONZEROS {
        tracing::debug!(target: "remat_planners::trade", nonzeros, "covering program too large");
        return None;
    }
    let mut model = Model::default();
    let columns: Vec<usize> = candidates.iter().map(|c| model.binary(c.split.2)).collect();
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); cuts.len().saturating_sub(1)];
    let mut need = vec![0u64; rows.len()];
    for (segment, w) in cuts.windows(2).enumerate() {
        need[segment] = over[w[0]..w[1]].iter().map(|&t| life.step_bytes[t] - target).max().unwrap_or(0);
    }
    for (c, &column) in candidates.iter().zip(&columns) {
        let from = cuts.partition_point(|&x| x < c.over.start);
        let to = cuts.partition_point(|&x| x < c.over.end);
        for segment in from..to {
            rows[segment].push((column, c.bytes.min(need[segment]) as f64));
        }
    }
    // A step the splits cannot cover alone is covered as far as they go (the greedy's longer
    // chains repair the rest).
    for (terms, need) in rows.into_iter().zip(need) {
        let most: f64 = terms.iter().map(|&(_, a)| a).sum();
        let need = (need as f64).min(most);
        if need > 0.0 {
            model.row(terms, need, f64::INFINITY);
        }
    }
    // Nothing for the splits to cover (HiGHS has no answer for an empty program).
    if model.rows.is_empty() {
        return None;
    }
    let seconds = deadline.remaining().map_or(COVER_SECONDS, |left| left.min(COVER_SECONDS));
    let solved = model.solve(false, seconds, 1e-4, None, false, Some(COVER_NODES)).ok()?;
    tracing::debug!(
        target: "remat_planners::trade",
        candidates = candidates.len(),
        rows = model.rows.len(),
        nonzeros,
        outcome = ?solved.outcome,
        cost = solved.objective,
        seconds = solved.seconds,
        "covering splits"
    );
    if !matches!(solved.outcome, Outcome::Optimal | Outcome::TimeLimit) {
        return None;
    }
    Some(candidates.into_iter().zip(columns).filter(|&(_, c)| solved.values[c] > 0.5).map(|(c, _)| c.split).collect())
}

/// The nodes to run right before step `at` to recompute `v` there: `v` and, transitively,
/// inputs whose latest instance before `at` is no longer live at `at`, in schedule order;
/// `None` when one of them may not be recomputed or the chain is too long.
fn chain_at(
    graph: &Graph,
    splittable: &Splittable,
    life: &remat_graph::Lifetimes,
    instances: &[Vec<usize>],
    v: NodeId,
    at: usize,
    max_chain: usize,
) -> Option<(Vec<NodeId>, f64)> {
    let mut chain = vec![v];
    let mut stack = vec![v];
    while let Some(u) = stack.pop() {
        for &p in graph.preds(u) {
            if graph.node(p).argument || chain.contains(&p) {
                continue;
            }
            let mine = &instances[p.index()];
            let latest = mine[..mine.partition_point(|&i| i < at)].last().copied()?;
            let output_held = graph.node(p).output && latest == *mine.last()?;
            if life.end[latest] >= at || output_held {
                continue;
            }
            if !splittable.input[p.index()] || chain.len() == max_chain {
                return None;
            }
            chain.push(p);
            stack.push(p);
        }
    }
    // Schedule order of first instances is topological.
    chain.sort_by_key(|u| instances[u.index()][0]);
    let cost = chain.iter().map(|&u| graph.node(u).cost).sum();
    Some((chain, cost))
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_graph::random::{random_schedule, RandomDag};
    use remat_graph::{GraphBuilder, NodeSpec};

    #[test]
    fn a_dear_recomputation_gives_way_to_a_cheap_one() {
        // X (10 B, cost 100) and Y (10 B, cost 1, from X's input-free sibling S) are both read
        // by the forward and again at the end; the big C in between leaves room for one of
        // them. The plan recomputes X; recomputing Y (from S, still held) is cheaper.
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::op("X", 10, 100.0), &[]);
        let s = g.add(NodeSpec::op("S", 2, 50.0), &[]);
        let y = g.add(NodeSpec::op("Y", 10, 1.0), &[s]);
        let p = g.add(NodeSpec::op("P", 1, 1.0), &[x, y]);
        let c = g.add(NodeSpec::op("C", 10, 1.0), &[p]);
        let e = g.add(NodeSpec::op("E", 1, 1.0), &[c]);
        let d = g.add(NodeSpec::op("D", 1, 1.0).output(), &[x, y, s, e]);
        let g = g.finish().unwrap();
        let plan = vec![x, s, y, p, c, e, x, d];
        let sim = simulate(&g, &plan).unwrap();
        assert_eq!((sim.peak_bytes, sim.cost), (24, 255.0));
        let (traded, trades) = trade_recomputations(&g, &plan, 24, Deadline::NONE).expect("a cheaper plan");
        assert_eq!(trades, 1);
        let sim = simulate(&g, &traded).unwrap();
        assert!(sim.peak_bytes <= 24, "{traded:?}");
        assert_eq!(sim.cost, 156.0, "{traded:?}");
        assert_eq!(traded.iter().filter(|&&v| v == x).count(), 1, "X runs once: {traded:?}");
        // Already the cheapest: nothing to trade.
        assert_eq!(trade_recomputations(&g, &traded, 24, Deadline::NONE), None);
    }

    /// A random step with views, impure ops, buffer reuse and fusion, and a random plan of it
    /// recomputing about `recompute_percent` % of its steps, polished at its own peak.
    fn polished_random_plan(seed: u64, recompute_percent: u64) -> (Graph, Schedule) {
        let shape =
            RandomDag { ops: 12 + (seed % 30) as usize, reuse_percent: 15, fuse_percent: 15, ..RandomDag::default() };
        let g = shape.generate(seed);
        let random = random_schedule(&g, seed, recompute_percent);
        let peak = simulate(&g, &random).unwrap().peak_bytes;
        let plan = crate::polish::polish(&g, &random, peak);
        (g, plan)
    }

    #[test]
    fn trades_keep_random_plans_valid_within_their_peak_and_cheaper() {
        // Random steps with views, impure ops, buffer reuse and fusion; random plans with
        // recomputations, each traded at its own peak.
        let mut traded_plans = 0;
        for seed in 0..400u64 {
            // Polished first, so that only trades with splits pay.
            let (g, plan) = polished_random_plan(seed, 40);
            let before = simulate(&g, &plan).unwrap();
            let Some((traded, _)) = trade_recomputations(&g, &plan, before.peak_bytes, Deadline::NONE) else {
                continue;
            };
            let after = simulate(&g, &traded).unwrap_or_else(|e| panic!("seed {seed}: invalid {e:?}"));
            assert!(after.peak_bytes <= before.peak_bytes, "seed {seed}: {} > {}", after.peak_bytes, before.peak_bytes);
            assert!(after.cost < before.cost, "seed {seed}: {} ≥ {}", after.cost, before.cost);
            traded_plans += 1;
        }
        // 167 of them at this change: random plans recompute dear values where cheap ones do.
        assert!(traded_plans >= 100, "only {traded_plans} of 400 plans traded");
    }

    #[test]
    fn a_descent_takes_the_cheapest_set_of_splits_where_the_greedy_pays_more() {
        // Three steps S1..S3 each 10 B over a 40 B budget. A (10 B, 20 to rebuild) sits idle
        // across all three, B (10 B, 12) across S1 and S2, C (10 B, 9) across S3. By bytes
        // freed per cost the greedy splits B first (20 B for 12), and then needs C for S3: 21.
        // Chosen together, A alone covers all three: 20.
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::argument("X", 4), &[]);
        let a = g.add(NodeSpec::op("A", 10, 20.0), &[x]);
        let b = g.add(NodeSpec::op("B", 10, 12.0), &[x]);
        let s1 = g.add(NodeSpec::op("S1", 30, 1.0), &[x]);
        let s2 = g.add(NodeSpec::op("S2", 30, 1.0), &[x]);
        let rb = g.add(NodeSpec::op("RB", 1, 1.0), &[b]);
        let c = g.add(NodeSpec::op("C", 10, 9.0), &[x]);
        let s3 = g.add(NodeSpec::op("S3", 29, 1.0), &[x]);
        let d = g.add(NodeSpec::op("D", 1, 1.0).output(), &[a, c, rb]);
        let g = g.finish().unwrap();
        let plan = vec![a, b, s1, s2, rb, c, s3, d];
        let before = simulate(&g, &plan).unwrap();
        let life = lifetimes(&g, &plan).unwrap();
        assert_eq!(life.step_bytes, vec![10, 20, 50, 50, 21, 21, 50, 22]);

        let splittable = splittable_nodes(&g, false);
        let limits = Limits {
            cost: f64::INFINITY,
            splits: DESCEND_SPLITS,
            chain: DESCEND_CHAIN,
            stalled_candidates: STALLED_CANDIDATES,
            stall: DESCEND_STALL,
        };
        let mut work = Work { left: WORK_STEPS, deadline: Deadline::NONE };
        let greedy = repair(&g, &splittable, plan.clone(), 40, &limits, &mut work).expect("the greedy fits");
        assert_eq!(simulate(&g, &greedy).unwrap().cost - before.cost, 21.0, "{greedy:?}");

        let (descended, splits) = descend(&g, &plan, 40, false, Deadline::NONE).expect("a descent");
        let after = simulate(&g, &descended).unwrap();
        assert!(after.peak_bytes <= 40, "{descended:?}");
        assert_eq!((after.cost - before.cost, splits), (20.0, 1), "{descended:?}");
        assert_eq!(descended.iter().filter(|&&v| v == a).count(), 2, "A rebuilt: {descended:?}");
    }

    #[test]
    fn a_chain_held_for_its_backward_descends_by_rebuilding_it_from_its_start() {
        // An MLP's forward keeps every activation for its backward: the input order peaks with
        // all of them resident, and no order of the same steps does better. Split, each
        // activation is rebuilt from the one before it right before the backward reads it.
        use remat_graph::training::FeedForward;
        let g = FeedForward::mlp(8).generate();
        let order = g.topological_schedule();
        let before = simulate(&g, &order).unwrap();
        let target = before.peak_bytes * 3 / 4;
        let (descended, splits) = descend(&g, &order, target, false, Deadline::NONE).expect("no descent to 75 %");
        let after = simulate(&g, &descended).unwrap();
        assert!(after.peak_bytes <= target, "{} > {target}", after.peak_bytes);
        assert_eq!(descended.len(), order.len() + splits);
        assert!(splits > 0 && after.cost > before.cost);
        // Within its peak already: returned as it is.
        assert_eq!(descend(&g, &order, before.peak_bytes, false, Deadline::NONE), Some((order.clone(), 0)));
    }

    #[test]
    fn a_split_rebuilds_the_view_its_value_reads_through() {
        // B reads A through a reshape and is held idle from C until GB; the reshape's own
        // instance died at B. Splitting B rebuilds the view from A (held for GA) first.
        let mut g = GraphBuilder::new();
        let a = g.add(NodeSpec::op("A", 10, 1.0), &[]);
        let view = g.add(NodeSpec::op("view", 0, 0.0).view_of(a), &[a]);
        let b = g.add(NodeSpec::op("B", 10, 1.0), &[view]);
        let c = g.add(NodeSpec::op("C", 10, 1.0), &[b]);
        let big = g.add(NodeSpec::op("big", 30, 1.0), &[c]);
        let e = g.add(NodeSpec::op("E", 1, 1.0), &[big]);
        let gb = g.add(NodeSpec::op("GB", 1, 1.0), &[e, b]);
        let ga = g.add(NodeSpec::op("GA", 1, 1.0).output(), &[gb, a]);
        let g = g.finish().unwrap();
        let order = vec![a, view, b, c, big, e, gb, ga];
        assert_eq!(simulate(&g, &order).unwrap().peak_bytes, 60);
        let (descended, splits) = descend(&g, &order, 50, true, Deadline::NONE).expect("no descent to 50 B");
        assert_eq!(descend(&g, &order, 50, false, Deadline::NONE), None);
        assert_eq!(descended, vec![a, view, b, c, big, e, view, b, gb, ga]);
        assert_eq!((splits, simulate(&g, &descended).unwrap().peak_bytes), (2, 50));
    }

    #[test]
    fn a_stalled_descent_takes_the_split_that_leaves_the_least_excess() {
        // X, Y, C and D peak at 31 B over a 21 B target. Splitting X at D (the estimate's
        // favourite, say) rebuilds it beside Y and C: still 31 B. Splitting Y at E frees it
        // across C and D: nothing over.
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::op("X", 10, 1.0), &[]);
        let y = g.add(NodeSpec::op("Y", 10, 1.0), &[]);
        let c = g.add(NodeSpec::op("C", 10, 1.0), &[]);
        let d = g.add(NodeSpec::op("D", 1, 1.0), &[x, c]);
        let e = g.add(NodeSpec::op("E", 1, 1.0).output(), &[y, d]);
        let g = g.finish().unwrap();
        let order = vec![x, y, c, d, e];
        assert_eq!(simulate(&g, &order).unwrap().peak_bytes, 31);
        let split_x = (3, vec![x], 1.0);
        let split_y = (4, vec![y], 1.0);
        let mut work = Work { left: WORK_STEPS, deadline: Deadline::NONE };
        let chosen = least_excess_split(&g, &order, 21, vec![split_x.clone(), split_y.clone()], &mut work);
        assert_eq!(chosen, Some(split_y.clone()));
        // The first among equals.
        assert_eq!(least_excess_split(&g, &order, 31, vec![split_x.clone(), split_y], &mut work), Some(split_x));
    }

    #[test]
    fn descents_of_random_plans_are_valid_and_within_their_target() {
        let mut descended_plans = 0;
        for seed in 0..300u64 {
            let (g, plan) = polished_random_plan(seed, 20);
            let peak = simulate(&g, &plan).unwrap().peak_bytes;
            let target = peak - peak / [10, 5, 3][seed as usize % 3];
            let Some((descended, splits)) = descend(&g, &plan, target, seed % 2 == 0, Deadline::NONE) else { continue };
            let after = simulate(&g, &descended).unwrap_or_else(|e| panic!("seed {seed}: invalid {e:?}"));
            assert!(after.peak_bytes <= target, "seed {seed}: {} > {target}", after.peak_bytes);
            assert_eq!(descended.len(), plan.len() + splits, "seed {seed}");
            descended_plans += 1;
        }
        // 49 of them at this change (40 before splits were chosen exactly once stalled): on
        // random DAGs most excess sits where every value is read (no idle span to split) or the
        // splits only move it.
        assert!(descended_plans >= 45, "only {descended_plans} of 300 plans descended");
    }
}
