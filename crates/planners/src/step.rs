//! The structure of a training step that several strategies read: its forward part (the
//! activations the backward consumes) and the bytes storing a node keeps resident. Shared by
//! Re-forwarding ([`crate::acg`]) and the chain planner ([`crate::chain`]).

use remat_graph::{Graph, NodeId};

/// The forward part of a training step.
#[derive(Clone, Debug)]
pub struct ForwardPart {
    /// Forward nodes in program order.
    pub nodes: Vec<NodeId>,
    /// Per node index: in the forward part.
    pub contains: Vec<bool>,
}

impl ForwardPart {
    /// The nodes marked `backward: false` when any node is marked backward (less any that read
    /// a backward node); otherwise the loss — the smallest output, the earliest in `order` on
    /// ties — and every non-argument node it depends on.
    pub fn of(graph: &Graph, order: &[NodeId]) -> ForwardPart {
        let mut contains = vec![false; graph.len()];
        if graph.nodes().iter().any(|n| n.backward) {
            for &v in order {
                let node = graph.node(v);
                contains[v.index()] =
                    !node.backward && graph.preds(v).iter().all(|&p| graph.node(p).argument || contains[p.index()]);
            }
        } else if let Some(loss) =
            order.iter().copied().filter(|&v| graph.node(v).output).min_by_key(|&v| graph.node(v).bytes)
        {
            contains[loss.index()] = true;
            for &v in order.iter().rev() {
                if contains[v.index()] {
                    for &p in graph.preds(v) {
                        contains[p.index()] = !graph.node(p).argument;
                    }
                }
            }
        }
        let nodes = order.iter().copied().filter(|v| contains[v.index()]).collect();
        ForwardPart { nodes, contains }
    }

    /// The first `len` steps of `order` as the forward part.
    pub fn prefix(graph: &Graph, order: &[NodeId], len: usize) -> ForwardPart {
        let nodes = order[..len].to_vec();
        let mut contains = vec![false; graph.len()];
        for v in &nodes {
            contains[v.index()] = true;
        }
        ForwardPart { nodes, contains }
    }
}

/// The bytes that storing `v` keeps resident: a view keeps its storage root (nothing when
/// that is an argument, resident anyway).
pub fn stored_bytes(graph: &Graph, v: NodeId) -> u64 {
    let root = graph.node(graph.storage_root(v));
    if root.argument {
        0
    } else {
        root.bytes
    }
}
