//! A proven lower bound on the peak memory of any schedule.

use crate::graph::{Graph, NodeId};

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
        let mut footprint = unfused_footprint(graph, id, &mut roots);
        // Run fused with a recomputation of an input, it reads that input's inputs instead
        // (and writes a buffer of its own); the input's own step keeps its term.
        for &fused in &node.fuses {
            let inputs =
                graph.preds(id).iter().copied().filter(|&p| p != fused).chain(graph.preds(fused).iter().copied());
            footprint = footprint.min(step_bytes(graph, id, inputs, &mut roots));
        }
        best = best.max(footprint);
    }
    let mut outputs: Vec<NodeId> = graph.outputs().map(|o| graph.storage_root(o)).collect();
    outputs.sort();
    outputs.dedup();
    best.max(resident_bytes(graph, &outputs))
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
