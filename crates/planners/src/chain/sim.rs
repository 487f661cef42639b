//! An exact event simulator of a chain operation sequence: the semantics every chain schedule
//! is measured with (the dynamic program of [`crate::chain::dp`] is checked against it).
//!
//! # Resources
//!
//! * one **compute stream** runs F and B operations one at a time, in list order;
//! * one **communication link** of bandwidth β bytes per time unit runs offloads and prefetches
//!   one at a time, in list order; a transfer of `s` bytes lasts `s / β`. With β = 0 (or
//!   `None`) there is no link and any transfer is an error.
//!
//! # When an operation starts
//!
//! Every operation starts at the earliest time that satisfies all of the following (and ends
//! its duration later). This is the earliest-start timing of the list, which is also the best
//! timing of it: all constraints are monotone, so no delay of one operation lets another start
//! earlier.
//!
//! * **Stream order**: after the end of the previous operation on its own resource.
//! * **List order across resources**: a compute operation starts no earlier than the *start* of
//!   the last transfer listed before it; a transfer starts no earlier than the *end* of the
//!   last compute operation listed before it. (So compute operations and prefetches start in
//!   list order, and a transfer listed between two compute operations runs alongside the
//!   second one.)
//! * **Data**: a compute operation's inputs must be resident (Table 1, see
//!   [`crate::chain::model`]); an input being prefetched is waited for until its prefetch
//!   completes (Lemma 1's idle time when a transfer is late). A prefetch needs the activation
//!   to have been offloaded (listed before it; the link's order makes it complete first).
//! * **Memory**: what the operation allocates at its start (outputs and overhead for a compute
//!   operation, the value for a prefetch; an offload allocates nothing) must fit under the
//!   budget together with everything resident at that time; otherwise the operation waits for
//!   later frees (Lemma 1's idle time when memory is short). If no later free can make room
//!   the sequence is rejected ([`SimFailure::OverBudget`]).
//! * **Phase barrier**: the loss's backward B_{L+1} starts after every offload listed before
//!   it has completed: no offloading overlaps the backward phase (the paper's assumption of
//!   Section 3.2, and the idle time ε_G of Appendix B.2).
//!
//! # Memory
//!
//! Allocations happen at operation starts, frees at their ends (Table 1). An offloaded
//! activation is freed on the device when its offload completes, or at the end of a compute
//! operation that reads it and started before that (such a reader, listed after the offload,
//! must start no later than the offload's completion; a compute operation may not *consume* an
//! activation whose offload was listed). A prefetched activation occupies device memory from
//! the start of its prefetch. Frees at time t are available to an operation starting at t.
//! The peak is the largest memory in use at any start (overheads included); it never exceeds
//! the budget.
//!
//! The makespan is the last end of any operation. A sequence is complete once δ_0 exists
//! (after B_1).

use super::model::{Chain, ChainOp};
use std::fmt;

/// Why a sequence is rejected: the operation (by index in the list) and the reason.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct SimError {
    /// Index of the offending operation in the list (the list's length for an incomplete
    /// sequence).
    pub index: usize,
    /// The offending operation (`None` for an incomplete sequence).
    pub op: Option<ChainOp>,
    /// What went wrong.
    pub reason: SimFailure,
}

impl SimError {
    fn describe(&self) -> String {
        match self.op {
            Some(op) => format!("operation {} ({op}): {}", self.index, self.reason),
            None => format!("after {} operations: {}", self.index, self.reason),
        }
    }
}

/// The reason a sequence is rejected.
#[derive(Clone, Debug, PartialEq)]
pub enum SimFailure {
    /// The operation is malformed or an input is missing, offloaded, or already present.
    InvalidDependency(String),
    /// The operation never fits: even after every later free it would need `needed` bytes.
    OverBudget {
        /// The least memory the operation would need at any time it could start.
        needed: u64,
        /// The budget.
        budget: u64,
    },
    /// A transfer with no link (β = 0 or `None`).
    NoLink,
    /// The sequence ends before δ_0 is computed.
    Incomplete,
}

impl fmt::Display for SimFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimFailure::InvalidDependency(s) => write!(f, "invalid dependency: {s}"),
            SimFailure::OverBudget { needed, budget } => {
                write!(f, "over budget: needs {needed} bytes, budget {budget}")
            }
            SimFailure::NoLink => write!(f, "no communication link (bandwidth 0)"),
            SimFailure::Incomplete => write!(f, "incomplete: δ_0 is never computed"),
        }
    }
}

/// Simulates `ops` on `chain` under `budget` bytes with a link of `beta` bytes per time unit
/// (`None` or 0: no link). Returns the makespan and the peak memory in bytes.
pub fn simulate(chain: &Chain, ops: &[ChainOp], budget: u64, beta: Option<f64>) -> Result<(f64, u64), SimError> {
    let mut sim = Simulator::new(chain, budget, beta);
    for &op in ops {
        sim.apply(op)?;
    }
    sim.finish()
}

/// Which form an activation is stored in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Absent,
    A,
    Abar,
}

/// Where a stored activation is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Loc {
    Device,
    /// Offload listed: readable by readers starting no later than `end`; freed by `free`.
    Leaving {
        end: f64,
        free: usize,
    },
    /// Prefetch listed: resident, readable from `ready`.
    Arriving {
        ready: f64,
    },
}

#[derive(Clone, Copy, Debug)]
struct Free {
    time: f64,
    bytes: u64,
}

const EPS: f64 = 1e-9;

/// The incremental simulator behind [`simulate`] (also used by the brute-force tests).
#[derive(Clone, Debug)]
pub(crate) struct Simulator<'c> {
    chain: &'c Chain,
    budget: u64,
    beta: f64,
    form: Vec<Form>,
    loc: Vec<Loc>,
    grad: Vec<bool>,
    /// Everything ever allocated; usage at t is this minus the frees with time ≤ t.
    allocated: u64,
    frees: Vec<Free>,
    last_compute_end: f64,
    last_transfer_start: f64,
    link_free: f64,
    last_offload_end: f64,
    makespan: f64,
    peak: u64,
    index: usize,
}

impl<'c> Simulator<'c> {
    pub(crate) fn new(chain: &'c Chain, budget: u64, beta: Option<f64>) -> Self {
        let l = chain.len();
        let mut form = vec![Form::Absent; l + 2];
        form[0] = Form::A;
        let beta = match beta {
            Some(b) if b > 0.0 && b.is_finite() => b,
            _ => 0.0,
        };
        Simulator {
            chain,
            budget,
            beta,
            form,
            loc: vec![Loc::Device; l + 2],
            grad: vec![false; l + 1],
            allocated: chain.a0,
            frees: Vec::new(),
            last_compute_end: 0.0,
            last_transfer_start: 0.0,
            link_free: 0.0,
            last_offload_end: 0.0,
            makespan: 0.0,
            peak: chain.a0,
            index: 0,
        }
    }

    /// Latest end of any operation so far.
    #[cfg(test)]
    pub(crate) fn makespan(&self) -> f64 {
        self.makespan
    }

    /// Whether δ_0 has been computed.
    pub(crate) fn done(&self) -> bool {
        self.grad[0]
    }

    /// The result of a complete sequence.
    pub(crate) fn finish(&self) -> Result<(f64, u64), SimError> {
        if !self.done() {
            return Err(SimError { index: self.index, op: None, reason: SimFailure::Incomplete });
        }
        Ok((self.makespan, self.peak))
    }

    fn size(&self, l: usize, form: Form) -> u64 {
        match form {
            Form::Absent => 0,
            Form::A => self.chain.a(l),
            Form::Abar => self.chain.abar(l),
        }
    }

    /// Memory in use at `t` (every allocation so far happened at or before `t`), the frees in
    /// `pinned` not counted.
    fn usage(&self, t: f64, pinned: &[usize]) -> u64 {
        let freed: u64 = self
            .frees
            .iter()
            .enumerate()
            .filter(|(k, f)| f.time <= t + EPS && !pinned.contains(k))
            .map(|(_, f)| f.bytes)
            .sum();
        self.allocated - freed
    }

    /// The earliest time ≥ `t0` at which `alloc` more bytes fit.
    fn fit(&self, t0: f64, alloc: u64, pinned: &[usize]) -> Result<(f64, u64), SimFailure> {
        let mut times: Vec<f64> = self
            .frees
            .iter()
            .enumerate()
            .filter(|(k, f)| f.time > t0 + EPS && !pinned.contains(k))
            .map(|(_, f)| f.time)
            .collect();
        times.sort_by(f64::total_cmp);
        let mut least = u64::MAX;
        for t in std::iter::once(t0).chain(times) {
            let need = self.usage(t, pinned) + alloc;
            if need <= self.budget {
                return Ok((t, need));
            }
            least = least.min(need);
        }
        Err(SimFailure::OverBudget { needed: least, budget: self.budget })
    }

    /// Applies the next operation of the list.
    pub(crate) fn apply(&mut self, op: ChainOp) -> Result<(), SimError> {
        let result = if op.is_transfer() { self.transfer(op) } else { self.compute(op) };
        let index = self.index;
        self.index += 1;
        result.map_err(|reason| SimError { index, op: Some(op), reason })
    }

    fn compute(&mut self, op: ChainOp) -> Result<(), SimFailure> {
        let l_max = self.chain.len() + 1;
        let bad = |s: String| Err(SimFailure::InvalidDependency(s));
        let (l, out_form) = match op {
            ChainOp::FAll(l) => (l, Form::Abar),
            ChainOp::FCk(l) | ChainOp::FNone(l) => (l, Form::A),
            ChainOp::B(l) => (l, Form::Absent),
            _ => unreachable!(),
        };
        let is_b = matches!(op, ChainOp::B(_));
        if l == 0 || l > l_max || (l == l_max && !matches!(op, ChainOp::FAll(_) | ChainOp::B(_))) {
            return bad(format!("no such operation (stages are 1..={l_max}, the loss {l_max} has only F_all and B)"));
        }
        // Inputs: (activation, consumed).
        let mut inputs: Vec<(usize, bool)> = Vec::with_capacity(2);
        let (alloc, overhead, duration);
        if is_b {
            if l <= self.chain.len() && !self.grad[l] {
                return bad(format!("δ_{l} is not present"));
            }
            if self.grad[l - 1] {
                return bad(format!("δ_{} is already present", l - 1));
            }
            if self.form[l] != Form::Abar {
                return bad(format!("ā_{l} is not stored"));
            }
            if self.form[l - 1] == Form::Absent {
                return bad(format!("activation {} is not stored", l - 1));
            }
            inputs.push((l, true));
            inputs.push((l - 1, self.form[l - 1] == Form::A));
            overhead = self.chain.ob(l);
            alloc = self.chain.delta(l - 1) + overhead;
            duration = self.chain.ub(l);
        } else {
            if self.form[l - 1] == Form::Absent {
                return bad(format!("activation {} is not stored", l - 1));
            }
            if self.form[l] != Form::Absent {
                return bad(format!("activation {l} is already stored"));
            }
            inputs.push((l - 1, matches!(op, ChainOp::FNone(_))));
            overhead = self.chain.of(l);
            alloc = self.size(l, out_form) + overhead;
            duration = self.chain.uf(l);
        }
        let mut t0 = self.last_compute_end.max(self.last_transfer_start);
        if is_b && l == l_max {
            t0 = t0.max(self.last_offload_end);
        }
        let mut pinned = Vec::new();
        for &(v, consumed) in &inputs {
            match self.loc[v] {
                Loc::Device => {}
                Loc::Arriving { ready } => t0 = t0.max(ready),
                Loc::Leaving { end, free } => {
                    if consumed {
                        return bad(format!("activation {v} is being offloaded and cannot be consumed"));
                    }
                    if t0 > end + EPS {
                        return bad(format!("activation {v} is offloaded (since {end}); prefetch it first"));
                    }
                    pinned.push(free);
                }
            }
        }
        let (start, used) = self.fit(t0, alloc, &pinned)?;
        let end = start + duration;
        for &(v, _) in &inputs {
            if let Loc::Leaving { end: off_end, free } = self.loc[v] {
                if start > off_end + EPS {
                    return bad(format!("activation {v} was offloaded (at {off_end}) before this read (at {start})"));
                }
                self.frees[free].time = self.frees[free].time.max(end);
            }
        }
        self.peak = self.peak.max(used);
        self.allocated += alloc;
        let mut freed = overhead;
        for &(v, consumed) in &inputs {
            if consumed {
                freed += self.size(v, self.form[v]);
                self.form[v] = Form::Absent;
                self.loc[v] = Loc::Device;
            } else if let Loc::Arriving { .. } = self.loc[v] {
                self.loc[v] = Loc::Device;
            }
        }
        if is_b {
            if l <= self.chain.len() {
                freed += self.chain.delta(l);
                self.grad[l] = false;
            }
            self.grad[l - 1] = true;
        } else {
            self.form[l] = out_form;
            self.loc[l] = Loc::Device;
        }
        self.frees.push(Free { time: end, bytes: freed });
        self.last_compute_end = end;
        self.makespan = self.makespan.max(end);
        Ok(())
    }

    fn transfer(&mut self, op: ChainOp) -> Result<(), SimFailure> {
        if self.beta <= 0.0 {
            return Err(SimFailure::NoLink);
        }
        let bad = |s: String| Err(SimFailure::InvalidDependency(s));
        let t0 = self.link_free.max(self.last_compute_end);
        match op {
            ChainOp::Offload(l) => {
                if l > self.chain.len() {
                    return bad(format!("only activations 0..={} can be offloaded", self.chain.len()));
                }
                if self.form[l] == Form::Absent {
                    return bad(format!("activation {l} is not stored"));
                }
                if self.loc[l] != Loc::Device {
                    return bad(format!("activation {l} is already being transferred or offloaded"));
                }
                let bytes = self.size(l, self.form[l]);
                let end = t0 + bytes as f64 / self.beta;
                self.frees.push(Free { time: end, bytes });
                self.loc[l] = Loc::Leaving { end, free: self.frees.len() - 1 };
                self.link_free = end;
                self.last_transfer_start = t0;
                self.last_offload_end = self.last_offload_end.max(end);
                self.makespan = self.makespan.max(end);
                Ok(())
            }
            ChainOp::Prefetch(l) => {
                if l > self.chain.len() || self.form[l] == Form::Absent {
                    return bad(format!("activation {l} is not stored"));
                }
                if !matches!(self.loc[l], Loc::Leaving { .. }) {
                    return bad(format!("activation {l} is not offloaded"));
                }
                let bytes = self.size(l, self.form[l]);
                let (start, used) = self.fit(t0, bytes, &[])?;
                let end = start + bytes as f64 / self.beta;
                self.peak = self.peak.max(used);
                self.allocated += bytes;
                self.loc[l] = Loc::Arriving { ready: end };
                self.link_free = end;
                self.last_transfer_start = start;
                self.makespan = self.makespan.max(end);
                Ok(())
            }
            _ => unreachable!(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::model::{Loss, Stage};
    use ChainOp::*;

    /// a_0 = 2 bytes, one stage (a = ā = 1, δ = 1), unit durations, a free-sized loss.
    fn tiny() -> Chain {
        let s = Stage { u_f: 1.0, u_b: 1.0, a: 1, a_bar: 1, delta: 1, of: 0, ob: 0 };
        Chain { a0: 2, delta0: 0, stages: vec![s], loss: Loss { u_f: 1.0, u_b: 1.0, a_bar: 0, of: 0, ob: 0 } }
    }

    #[test]
    fn chain_sim_timeline_by_hand() {
        let chain = tiny();
        // O_0 runs [0, 2) alongside F_all^1 [0, 1) (which reads a_0 while it leaves) and
        // F_all^2 [1, 2); B_2 waits for the offload (phase barrier) and runs [2, 3); P_0
        // runs [3, 5); B_1 waits for it and runs [5, 6). Peak: a_0 + ā_1 at F_all^1, 3;
        // then ā_1 + δ_1 + a_0 once a_0 is back, 4.
        let ops = [Offload(0), FAll(1), FAll(2), B(2), Prefetch(0), B(1)];
        assert_eq!(simulate(&chain, &ops, 4, Some(1.0)), Ok((6.0, 4)));
        // Listing P_0 before B_2 overlaps it with B_2: [2, 4), then B_1 [4, 5); a_0 is back
        // during B_2: ā_1 + a_0 + δ_1 = 4.
        let ops = [Offload(0), FAll(1), FAll(2), Prefetch(0), B(2), B(1)];
        assert_eq!(simulate(&chain, &ops, 4, Some(1.0)), Ok((5.0, 4)));
        // With 3 bytes the prefetch fits (ā_1 + a_0) but then B_2 (+ δ_1) never does: nothing
        // will free memory (Lemma 1 cannot help), so the sequence is rejected.
        let err = simulate(&chain, &ops, 3, Some(1.0)).unwrap_err();
        assert_eq!((err.index, err.op), (4, Some(B(2))));
        assert_eq!(err.reason, SimFailure::OverBudget { needed: 4, budget: 3 });
        // No offloading: 4 operations of unit time.
        assert_eq!(simulate(&chain, &[FAll(1), FAll(2), B(2), B(1)], 4, None), Ok((4.0, 4)));
    }

    #[test]
    fn chain_sim_waits_for_an_offload_to_free_memory() {
        let s = Stage { u_f: 1.0, u_b: 1.0, a: 2, a_bar: 2, delta: 1, of: 0, ob: 0 };
        let chain = Chain {
            a0: 2,
            delta0: 0,
            stages: vec![s.clone(), s],
            loss: Loss { u_f: 1.0, u_b: 1.0, a_bar: 0, of: 0, ob: 0 },
        };
        // Budget 4: F_ck^1 fits (a_0 + a_1); F_∅^2 needs a_0 + a_1 + a_2 = 6 until a_0's
        // offload (2 bytes at β = 1, [0, 2)) completes: it waits from 1 to 2 (Lemma 1), then
        // the loss runs [3, 4) and B_3 [4, 5).
        let ops = [Offload(0), FCk(1), FNone(2), FAll(3), B(3)];
        let mut sim = Simulator::new(&chain, 4, Some(1.0));
        for op in ops {
            sim.apply(op).unwrap();
        }
        assert_eq!(sim.makespan(), 5.0);
        // Now a_0 is offloaded: recomputing from it is an invalid dependency.
        let err = sim.apply(FCk(1)).unwrap_err();
        assert!(matches!(err.reason, SimFailure::InvalidDependency(_)), "{err}");
        // Prefetched back [5, 7), it can be read: F_ck^1 waits for it.
        sim.apply(Prefetch(0)).unwrap();
        assert_eq!(sim.makespan(), 7.0);
    }

    #[test]
    fn chain_sim_rejects_bad_sequences() {
        let chain = tiny();
        let reason = |ops: &[ChainOp], beta| simulate(&chain, ops, 10, beta).unwrap_err().reason;
        assert!(matches!(reason(&[B(1)], None), SimFailure::InvalidDependency(_)));
        assert!(matches!(reason(&[FNone(1), FAll(1)], None), SimFailure::InvalidDependency(_)));
        assert!(matches!(reason(&[FCk(2)], None), SimFailure::InvalidDependency(_)));
        assert_eq!(reason(&[Offload(0)], None), SimFailure::NoLink);
        assert_eq!(reason(&[Offload(0)], Some(0.0)), SimFailure::NoLink);
        assert_eq!(reason(&[FAll(1), FAll(2)], None), SimFailure::Incomplete);
        // Consuming a value being offloaded.
        assert!(matches!(
            reason(&[FAll(1), FAll(2), B(2), Offload(1), B(1)], Some(1.0)),
            SimFailure::InvalidDependency(_)
        ));
        assert!(matches!(reason(&[Prefetch(0)], Some(1.0)), SimFailure::InvalidDependency(_)));
    }
}
