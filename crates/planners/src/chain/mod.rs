//! Rematerialization and offloading for a chain (Beaumont, Eyraud-Dubois, Shilova, NeurIPS
//! 2021): the model ([`model`]: Figure 1, Table 1), an exact simulator of operation sequences
//! ([`sim`]) and the optimal dynamic program ([`dp`]: Theorem 1, Appendix B).

pub mod dp;
pub mod model;
pub mod planner;
pub mod sim;

#[cfg(test)]
mod brute;

pub use model::{Chain, ChainOp, ChainSchedule, Loss, Stage};
