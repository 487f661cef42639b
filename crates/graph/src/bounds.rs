//! Proven lower bounds on the peak memory of any schedule.

use crate::graph::{Graph, NodeId};
use crate::maxflow::FlowNetwork;

/// A lower bound on `peak_bytes` of every valid schedule of `graph`.
///
/// Two facts hold for any schedule (Kumar et al. §2.1: `M(σ) ≥ max{M_in, M_max}`, extended to
/// views and outputs): (1) every node executes at least once, and at that step its output and
/// the memory behind all its inputs are resident; (2) at the last step, the memory behind every
/// output is resident. Views contribute the bytes of their storage root; arguments none. A
/// node that may take an input's buffer ([`crate::Node::reuses`]) holds one buffer for both
/// when that input dies there, which some schedule may do, so it counts once. A node that may
/// compute an input itself ([`crate::Node::fuses`]) counts the least of its own footprint and
/// each fused one (the input's inputs in place of the input).
pub fn lower_bound(graph: &Graph) -> u64 {
    let mut best = 0;
    let mut roots: Vec<NodeId> = Vec::new();
    for id in graph.ids() {
        let node = graph.node(id);
        if node.argument {
            continue;
        }
        let mut footprint = u64::MAX;
        each_way(graph, id, &mut roots, |_, bytes| footprint = footprint.min(bytes));
        best = best.max(footprint);
    }
    best.max(resident_bytes(graph, &output_roots(graph)))
}

/// The storage roots behind the outputs, each once, in id order, arguments left out.
fn output_roots(graph: &Graph) -> Vec<NodeId> {
    let mut roots: Vec<NodeId> =
        graph.outputs().map(|o| graph.storage_root(o)).filter(|&r| !graph.node(r).argument).collect();
    roots.sort();
    roots.dedup();
    roots
}

/// A lower bound on `peak_bytes` of every valid schedule of `graph` without host transfers:
/// [`lower_bound`], raised where the step's outputs cannot all be resident beside its last
/// large step (docs/memory-model.md, "The lower bound", 3). Computed once per graph.
///
/// The argument, for a threshold `B`: call a node *large* when every way to execute it
/// (unfused, or fused with an input) has a footprint of at least `B` bytes, and let `L` be the
/// last step of a schedule that executes a large node. At `L`'s step its footprint `F` is
/// resident; after it only small nodes run, so every output must then be computable from what
/// is resident at that step by small nodes alone (arguments are always there). The resident
/// values together with `F` thus form a vertex cut between the large nodes and the outputs,
/// each value weighing the bytes of its storage, and the step holds at least
/// `bytes(F) + (the least such cut once F's values weigh nothing)`: one maximum flow per
/// large node and way of executing it. The bound for `B` is the least of these over the large
/// nodes, and the result the largest over the thresholds tried. On a training step it counts
/// the updated parameters beside the footprint of the last matmul that any gradient needs,
/// where [`lower_bound`] has the parameters alone.
///
/// The flows are limited to [`PEAK_BOUND_WORK`] edge visits in all (deterministic, so the
/// bound is the same on every run); a threshold whose large nodes were not all tried does not
/// count. Host transfers break the argument (an offloaded value comes back without a step), so
/// where offloading is allowed the planners measure plans against [`lower_bound`] alone.
pub fn peak_lower_bound(graph: &Graph) -> u64 {
    *graph.peak_bound_memo().get_or_init(|| last_large_step_bound(graph, lower_bound(graph), PEAK_BOUND_WORK))
}

/// The visits [`peak_lower_bound`] may make in all: each edge of each network built or copied,
/// and what its flows visit ([`FlowNetwork::max_flow_within`]). Measured on a 2-core Xeon: at
/// most about 1.5 s on generated steps of 10^4–10^5 nodes (graph building aside); every
/// bundled step's bound finishes within it (resnet.stablehlo's needs more than 3·10^8), a
/// 3,000-node ResNet-like step's would take 1.4·10^9 edge visits in its flows alone (six
/// seconds) and stops short. Counted per visit, not per flow: Dinic's phases make one flow on
/// a deep step cost dozens of passes over its edges.
pub const PEAK_BOUND_WORK: u64 = 400_000_000;

/// Calls `f` with every way to execute `id` as one step: the storage roots resident at it
/// (result first) and their bytes, unfused first (a taken input buffer counted once, and the
/// workspace), then fused with each input it may compute itself, which reads that input's
/// inputs instead and writes a buffer of its own. `roots` is scratch space.
fn each_way(graph: &Graph, id: NodeId, roots: &mut Vec<NodeId>, mut f: impl FnMut(&[NodeId], u64)) {
    let bytes = unfused_footprint(graph, id, roots);
    f(roots, bytes);
    for &fused in &graph.node(id).fuses {
        let inputs = graph.preds(id).iter().copied().filter(|&p| p != fused).chain(graph.preds(fused).iter().copied());
        let bytes = step_bytes(graph, id, inputs, roots);
        f(roots, bytes);
    }
}

/// [`each_way`]'s ways, collected.
fn step_footprints(graph: &Graph, id: NodeId) -> Vec<(Vec<NodeId>, u64)> {
    let mut ways = Vec::new();
    each_way(graph, id, &mut Vec::new(), |roots, bytes| ways.push((roots.to_vec(), bytes)));
    ways
}

/// The largest bound of [`peak_lower_bound`]'s argument above `floor`, or `floor`, within
/// `work` edge visits.
fn last_large_step_bound(graph: &Graph, floor: u64, work: u64) -> u64 {
    let n = graph.len();
    let outputs = output_roots(graph);
    if outputs.is_empty() {
        return floor;
    }
    let ops: Vec<NodeId> = graph.ids().filter(|&v| !graph.node(v).argument).collect();
    let mut ways: Vec<Vec<(Vec<NodeId>, u64)>> = vec![Vec::new(); n];
    let mut least = vec![0u64; n];
    for &v in &ops {
        ways[v.index()] = step_footprints(graph, v);
        least[v.index()] = ways[v.index()].iter().map(|w| w.1).min().unwrap_or(0);
    }
    let mut thresholds: Vec<u64> = ops.iter().map(|v| least[v.index()]).filter(|&b| b > 0).collect();
    thresholds.sort_unstable_by(|a, b| b.cmp(a));
    thresholds.dedup();

    let (source, sink) = (2 * n, 2 * n + 1);
    let (into, out) = (|v: NodeId| 2 * v.index(), |v: NodeId| 2 * v.index() + 1);
    let mut best = floor;
    let mut work = work;
    for threshold in thresholds {
        let large = |v: NodeId| least[v.index()] >= threshold;
        // The network: a value is an edge in → out weighing its bytes (a view is never cut
        // itself: cutting its storage root holds it); reads join out → in.
        let mut network = FlowNetwork::new(2 * n + 2);
        let mut value_edge = vec![usize::MAX; n];
        for &v in &ops {
            let node = graph.node(v);
            let weight = if node.view_of.is_some() { f64::INFINITY } else { node.bytes as f64 };
            value_edge[v.index()] = network.add_edge(into(v), out(v), weight);
            for &p in graph.preds(v) {
                // Fused, `v` computes `p` unfused from `p`'s inputs: where that step is small
                // and `p`'s own unfused step is not, `v` may do without `p` after the last
                // large step though `p` cannot be made, so the read is no edge (leaving out
                // what `v` then reads instead can only lower the cut).
                let fused_small = |k: usize| ways[v.index()][1 + k].1 < threshold;
                let bypassed = node.fuses.iter().position(|&f| f == p).is_some_and(fused_small)
                    && ways[p.index()][0].1 >= threshold;
                if !graph.node(p).argument && !bypassed {
                    network.add_edge(out(p), into(v), f64::INFINITY);
                }
            }
            if large(v) && node.view_of.is_none() {
                network.add_edge(source, into(v), f64::INFINITY);
            }
        }
        for &o in &outputs {
            network.add_edge(out(o), sink, f64::INFINITY);
        }
        // Building the network, and each copy of it below, visits its edges too.
        let Some(left) = work.checked_sub(network.edge_slots() as u64) else { break };
        work = left;
        // The last large step, cheapest footprints first: one at or below `best` ends this
        // threshold, as it cannot raise the bound.
        let mut candidates: Vec<(u64, NodeId, usize)> = ops
            .iter()
            .filter(|&&v| large(v))
            .flat_map(|&v| ways[v.index()].iter().enumerate().map(move |(k, w)| (w.1, v, k)))
            .collect();
        candidates.sort_unstable();
        let mut at_threshold = u64::MAX;
        let mut complete = true;
        for (bytes, v, k) in candidates {
            if bytes >= at_threshold {
                break;
            }
            let Some(left) = work.checked_sub(network.edge_slots() as u64) else {
                complete = false;
                break;
            };
            work = left;
            let mut resident = network.clone();
            for &r in &ways[v.index()][k].0 {
                if !graph.node(r).argument {
                    resident.close_edge(value_edge[r.index()]);
                }
            }
            let Ok(flow) = resident.max_flow_within(source, sink, 0.5, &mut work) else {
                complete = false;
                break;
            };
            let cut = flow.floor() as u64;
            at_threshold = at_threshold.min(bytes + cut);
            if at_threshold <= best {
                break;
            }
        }
        if complete && at_threshold != u64::MAX {
            best = best.max(at_threshold);
        }
        if !complete {
            break;
        }
    }
    best
}

/// The bytes resident at any step that executes `id` unfused: the storage behind its result and
/// its inputs (each storage root once, arguments excluded), an input it may take the buffer of
/// counted once, and its workspace. `roots` is left holding those storage roots (result first).
pub fn unfused_footprint(graph: &Graph, id: NodeId, roots: &mut Vec<NodeId>) -> u64 {
    let node = graph.node(id);
    let shared = node.reuses.filter(|&input| !graph.node(input).output).map_or(0, |input| graph.node(input).bytes);
    step_bytes(graph, id, graph.preds(id).iter().copied(), roots) - shared + node.workspace
}

/// The bytes behind `id`'s result and `inputs` (each storage root once, arguments excluded);
/// `roots` is scratch space.
fn step_bytes(graph: &Graph, id: NodeId, inputs: impl Iterator<Item = NodeId>, roots: &mut Vec<NodeId>) -> u64 {
    roots.clear();
    roots.push(graph.storage_root(id));
    for p in inputs {
        let root = graph.storage_root(p);
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    resident_bytes(graph, roots)
}

fn resident_bytes(graph: &Graph, roots: &[NodeId]) -> u64 {
    roots.iter().map(|&r| graph.node(r)).filter(|n| !n.argument).map(|n| n.bytes).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GraphBuilder, NodeSpec};

    #[test]
    fn widest_step_or_all_outputs() {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::argument("x", 1000), &[]);
        let a = g.add(NodeSpec::op("a", 5, 1.0), &[x]);
        let b = g.add(NodeSpec::op("b", 7, 1.0), &[x]);
        let v = g.add(NodeSpec::op("v", 0, 0.0).view_of(a), &[a]);
        let _c = g.add(NodeSpec::op("c", 3, 1.0).output(), &[v, b]);
        let _d = g.add(NodeSpec::op("d", 20, 1.0).output(), &[x]);
        let g = g.finish().unwrap();
        // c's step: 3 + a (via v) 5 + b 7 = 15; outputs: 3 + 20 = 23.
        assert_eq!(lower_bound(&g), 23);
    }

    #[test]
    fn a_fusing_node_counts_its_least_footprint() {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::op("x", 10, 1.0), &[]);
        let p = g.add(NodeSpec::op("p", 100, 1.0), &[x]);
        let q = g.add(NodeSpec::op("q", 30, 1.0), &[]);
        let c = g.add(NodeSpec::op("c", 20, 1.0).output().fusing(&[p]), &[p, q]);
        let g = g.finish().unwrap();
        // c's step: 20 + 100 + 30 = 150 unfused; fused with p: 20 + 10 + 30 = 60; p's step: 110.
        assert_eq!(lower_bound(&g), 110);
        let _ = c;
    }
}
