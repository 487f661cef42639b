//! The computation graph, schedules and the memory model of remat-opt.
//!
//! This crate knows nothing about MLIR. A [`Graph`] is a DAG of nodes with byte sizes and
//! compute costs; a [`Schedule`] is a sequence of node executions in which a node may occur
//! more than once (a rematerialization). [`simulate`] implements the memory model of
//! `docs/memory-model.md` (Kumar et al. 2019, §2.1, extended with pinned arguments, outputs
//! and views); every planner, the report and the tests measure schedules with it.
//!
//! ```
//! use remat_graph::{GraphBuilder, NodeSpec, simulate};
//! // a -> b -> c, and a -> c: the Figure 1 idea in miniature.
//! let mut g = GraphBuilder::new();
//! let a = g.add(NodeSpec::op("a", 10, 1.0), &[]);
//! let b = g.add(NodeSpec::op("b", 10, 1.0), &[a]);
//! let c = g.add(NodeSpec::op("c", 10, 1.0).output(), &[a, b]);
//! let graph = g.finish().unwrap();
//! let sim = simulate(&graph, &[a, b, c]).unwrap();
//! assert_eq!(sim.peak_bytes, 30);
//! ```

#![deny(missing_docs)]

mod bounds;
mod dtrlog;
mod graph;
pub mod json;
pub mod maxflow;
pub mod random;
mod simulate;
pub mod training;
pub mod units;

pub use bounds::{lower_bound, peak_lower_bound, unfused_footprint};
pub use dtrlog::{looks_like_dtr_log, read_dtr_log, DtrLogError, DtrLogErrorKind};
pub use graph::{Graph, GraphBuilder, GraphError, Node, NodeId, NodeSpec};
pub use simulate::{
    lifetimes, lifetimes_with_transfers, recompute_overhead, simulate, simulate_with_transfers, validate, Lifetimes,
    ScheduleError, ScheduleErrorKind, Simulation, Transfer,
};

/// A plan: node executions in order. A node that occurs twice is recomputed.
pub type Schedule = Vec<NodeId>;
