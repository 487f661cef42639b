//! The chain model of Beaumont, Eyraud-Dubois and Shilova, "Efficient Combination of
//! Rematerialization and Offloading for Training DNNs" (NeurIPS 2021): a sequential network
//! F_1 … F_L followed by the loss (Figure 1 of the supplementary), the operations of Table 1,
//! and the offloading (O_ℓ) and prefetching (P_ℓ) operations of Section 4 / Appendix B.
//!
//! # Indices
//!
//! Stages are numbered `1..=L` as in the paper; the loss is stage `L + 1` (Appendix B.2 writes
//! it F_{L+1}, B_{L+1}). Activations are numbered `0..=L`: a_0 is the chain input, a_ℓ the
//! output of F_ℓ; ā_ℓ (`1..=L`) is everything F_all^ℓ keeps for B_ℓ (it contains a_ℓ) and
//! ā_{L+1} what the loss keeps for its backward. Gradients δ_ℓ (`0..=L`) have the shape of a_ℓ:
//! B_{L+1} produces δ_L and B_ℓ turns δ_ℓ into δ_{ℓ-1}; the schedule is complete once δ_0
//! exists.
//!
//! # Operations and memory (Table 1)
//!
//! Sizes are bytes (`u64`), durations are time units (`f64`). "Resident" below means on the
//! device. The memory used *during* an operation is everything resident, plus its outputs,
//! plus its transient overhead; afterwards the overhead and the consumed inputs are freed.
//!
//! | op | needs | allocates at start | frees at end |
//! |----|-------|--------------------|--------------|
//! | [`ChainOp::FAll`]`(ℓ)`, ℓ ≤ L+1 | a_{ℓ-1} or ā_{ℓ-1} | ā_ℓ + of_ℓ | of_ℓ |
//! | [`ChainOp::FCk`]`(ℓ)`, ℓ ≤ L | a_{ℓ-1} or ā_{ℓ-1} | a_ℓ + of_ℓ | of_ℓ |
//! | [`ChainOp::FNone`]`(ℓ)`, ℓ ≤ L | a_{ℓ-1} or ā_{ℓ-1} | a_ℓ + of_ℓ | of_ℓ and its input |
//! | [`ChainOp::B`]`(ℓ)`, ℓ ≤ L+1 | δ_ℓ, ā_ℓ, a_{ℓ-1} or ā_{ℓ-1} | δ_{ℓ-1} + ob_ℓ | ob_ℓ, δ_ℓ, ā_ℓ, and a_{ℓ-1} (an ā_{ℓ-1} input is kept: Table 1's second row) |
//!
//! F_all^ℓ and F_ck^ℓ keep their input ("forward and save all" / "forward and materialize
//! input"); F_∅^ℓ discards it. The loss only has F_all^{L+1} and B_{L+1} (B.2); B_{L+1} needs no
//! gradient. A forward operation may only compute an activation that is absent.
//!
//! [`ChainOp::Offload`]`(ℓ)` and [`ChainOp::Prefetch`]`(ℓ)` move the stored activation of index
//! ℓ ∈ `0..=L` (a_ℓ or ā_ℓ, whichever is stored) to host memory and back. The simulator accepts
//! them for any stored activation; the dynamic program only offloads what the paper offloads:
//! the checkpointed input Ix_i = a_{i-1} or ā_{i-1} of a top-level sub-chain (Appendix B, "the
//! global input of the chain Ix_i"), see [`crate::chain::dp`]. Their timing and memory rules are
//! those of [`crate::chain::sim`].

use std::fmt;

/// One stage ℓ ∈ `1..=L` of the chain (a row of Table 1's parameters).
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// Duration u_F of the forward operation F_ℓ (any of its three variants).
    pub u_f: f64,
    /// Duration u_B of the backward operation B_ℓ.
    pub u_b: f64,
    /// Bytes of the activation a_ℓ, the stage's output.
    pub a: u64,
    /// Bytes of ā_ℓ: everything F_all^ℓ keeps for B_ℓ, a_ℓ included (so `a_bar >= a`).
    pub a_bar: u64,
    /// Bytes of the gradient δ_ℓ (with respect to a_ℓ), B_ℓ's gradient input.
    pub delta: u64,
    /// Transient memory overhead of F_ℓ.
    pub of: u64,
    /// Transient memory overhead of B_ℓ.
    pub ob: u64,
}

/// The loss, stage L+1: always computed with F_all^{L+1} and then B_{L+1} (Appendix B.2).
#[derive(Clone, Debug, PartialEq)]
pub struct Loss {
    /// Duration of F_{L+1}.
    pub u_f: f64,
    /// Duration of B_{L+1}.
    pub u_b: f64,
    /// Bytes of ā_{L+1}: what the loss keeps for its backward.
    pub a_bar: u64,
    /// Transient overhead of F_{L+1}.
    pub of: u64,
    /// Transient overhead of B_{L+1}.
    pub ob: u64,
}

/// A chain of `L = stages.len()` stages followed by the loss (Figure 1).
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    /// Bytes of the chain input a_0 (resident at the start; B_1 consumes it).
    pub a0: u64,
    /// Bytes of δ_0, the gradient B_1 produces (0 when the input needs none).
    pub delta0: u64,
    /// Stages 1..=L, in order (`stages[ℓ - 1]` is stage ℓ).
    pub stages: Vec<Stage>,
    /// The loss, stage L+1.
    pub loss: Loss,
}

/// Why a [`Chain`]'s parameters are not valid.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ChainError {
    /// A stage's (or, for `None`, the loss's) durations are negative or not finite.
    #[error("{}: durations must be finite and non-negative", .stage.map_or("loss".to_string(), |k| format!("stage {k}")))]
    Durations {
        /// The stage, 1-based; `None` for the loss.
        stage: Option<usize>,
    },
    /// A stage whose ā (everything its backward needs) is smaller than its a.
    #[error("stage {stage}: a_bar ({a_bar}) is smaller than a ({a})")]
    ABarBelowA {
        /// The stage, 1-based.
        stage: usize,
        /// ā, bytes.
        a_bar: u64,
        /// a, bytes.
        a: u64,
    },
}

impl Chain {
    /// Every byte the chain could hold at once: each stage's ā, δ and overheads, the loss's
    /// and the input's. A DP budget this large needs no rematerialization.
    pub fn total_bytes(&self) -> u64 {
        let stages: u64 = self.stages.iter().map(|s| s.a_bar + s.delta + s.of + s.ob).sum();
        stages + self.loss.a_bar + self.loss.of + self.loss.ob + self.a0 + self.delta0
    }

    /// The number L of stages, the loss not counted.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether the chain has no stage (only the loss).
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Checks the parameters: finite non-negative durations and `a_bar >= a`.
    pub fn check(&self) -> Result<(), ChainError> {
        let ok = |u: f64| u.is_finite() && u >= 0.0;
        for (k, s) in self.stages.iter().enumerate() {
            if !ok(s.u_f) || !ok(s.u_b) {
                return Err(ChainError::Durations { stage: Some(k + 1) });
            }
            if s.a_bar < s.a {
                return Err(ChainError::ABarBelowA { stage: k + 1, a_bar: s.a_bar, a: s.a });
            }
        }
        if !ok(self.loss.u_f) || !ok(self.loss.u_b) {
            return Err(ChainError::Durations { stage: None });
        }
        Ok(())
    }

    /// |a_ℓ| for ℓ ∈ `0..=L`.
    pub(crate) fn a(&self, l: usize) -> u64 {
        if l == 0 {
            self.a0
        } else {
            self.stages[l - 1].a
        }
    }

    /// |ā_ℓ| for ℓ ∈ `1..=L+1`.
    pub(crate) fn abar(&self, l: usize) -> u64 {
        if l == self.len() + 1 {
            self.loss.a_bar
        } else {
            self.stages[l - 1].a_bar
        }
    }

    /// |δ_ℓ| for ℓ ∈ `0..=L+1` (δ_{L+1}, the loss's implicit seed, is 0).
    pub(crate) fn delta(&self, l: usize) -> u64 {
        if l == 0 {
            self.delta0
        } else if l == self.len() + 1 {
            0
        } else {
            self.stages[l - 1].delta
        }
    }

    /// u_F of stage ℓ ∈ `1..=L+1`.
    pub(crate) fn uf(&self, l: usize) -> f64 {
        if l == self.len() + 1 {
            self.loss.u_f
        } else {
            self.stages[l - 1].u_f
        }
    }

    /// u_B of stage ℓ ∈ `1..=L+1`.
    pub(crate) fn ub(&self, l: usize) -> f64 {
        if l == self.len() + 1 {
            self.loss.u_b
        } else {
            self.stages[l - 1].u_b
        }
    }

    /// of_ℓ for ℓ ∈ `1..=L+1`.
    pub(crate) fn of(&self, l: usize) -> u64 {
        if l == self.len() + 1 {
            self.loss.of
        } else {
            self.stages[l - 1].of
        }
    }

    /// ob_ℓ for ℓ ∈ `1..=L+1`.
    pub(crate) fn ob(&self, l: usize) -> u64 {
        if l == self.len() + 1 {
            self.loss.ob
        } else {
            self.stages[l - 1].ob
        }
    }

    /// Every size of the chain (activations, gradients, overheads).
    pub(crate) fn all_sizes(&self) -> Vec<u64> {
        let mut v = vec![self.a0, self.delta0, self.loss.a_bar, self.loss.of, self.loss.ob];
        for s in &self.stages {
            v.extend([s.a, s.a_bar, s.delta, s.of, s.ob]);
        }
        v
    }

    /// Every duration of the chain.
    pub(crate) fn all_durations(&self) -> Vec<f64> {
        let mut v = vec![self.loss.u_f, self.loss.u_b];
        for s in &self.stages {
            v.extend([s.u_f, s.u_b]);
        }
        v
    }
}

/// One operation of a chain schedule (Table 1 plus O_ℓ / P_ℓ). Forward and backward operations
/// carry the stage ℓ ∈ `1..=L+1` (L+1 is the loss); transfers carry the activation index
/// ℓ ∈ `0..=L`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainOp {
    /// F_all^ℓ: compute ā_ℓ from a_{ℓ-1} (or ā_{ℓ-1}), keeping the input.
    FAll(usize),
    /// F_ck^ℓ: compute a_ℓ, keeping the input (the input is checkpointed).
    FCk(usize),
    /// F_∅^ℓ: compute a_ℓ and discard the input.
    FNone(usize),
    /// B_ℓ: compute δ_{ℓ-1} from δ_ℓ, ā_ℓ and a_{ℓ-1} (or ā_{ℓ-1}, which is kept).
    B(usize),
    /// O_ℓ: copy the stored activation ℓ (a_ℓ or ā_ℓ) to the host and free it on the device.
    Offload(usize),
    /// P_ℓ: copy the offloaded activation ℓ back to the device.
    Prefetch(usize),
}

impl ChainOp {
    /// Whether this operation runs on the communication link (O_ℓ, P_ℓ) rather than the
    /// compute stream.
    pub fn is_transfer(self) -> bool {
        matches!(self, ChainOp::Offload(_) | ChainOp::Prefetch(_))
    }
}

impl fmt::Display for ChainOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ChainOp::FAll(l) => write!(f, "F_all^{l}"),
            ChainOp::FCk(l) => write!(f, "F_ck^{l}"),
            ChainOp::FNone(l) => write!(f, "F_none^{l}"),
            ChainOp::B(l) => write!(f, "B^{l}"),
            ChainOp::Offload(l) => write!(f, "O^{l}"),
            ChainOp::Prefetch(l) => write!(f, "P^{l}"),
        }
    }
}

/// A schedule of a chain: the operations in list order, with its makespan and peak memory as
/// measured by [`crate::chain::sim::simulate`].
#[derive(Clone, Debug, PartialEq)]
pub struct ChainSchedule {
    /// The operations, in list order (see [`crate::chain::sim`] for what the order means).
    pub ops: Vec<ChainOp>,
    /// Completion time of the last operation.
    pub makespan: f64,
    /// Peak device memory in bytes (overheads included).
    pub peak: u64,
}
