//! The optimal dynamic program for a chain with rematerialization and offloading — Theorem 1
//! and Appendix B of Beaumont, Eyraud-Dubois and Shilova (NeurIPS 2021) — made exact for the
//! whole-tensor semantics of [`crate::chain::sim`], and its pure-rematerialization special
//! case (Beaumont et al. 2019, "rotor").
//!
//! # The class of schedules (Section 3.2's assumptions, made precise)
//!
//! [`solve`] returns a schedule of least makespan, as measured by [`crate::chain::sim`], among
//! the schedules of the following class 𝒮; the brute force of the tests enumerates exactly 𝒮.
//!
//! 1. **Memory persistency, top level** (B.1). The forward phase runs each stage once, as a
//!    sequence of *segments*: a segment `[i..=j]` is either `F_ck^i F_∅^{i+1} … F_∅^j`
//!    (B.1 case 2: its input Ix_i is checkpointed and a_j becomes the next input, x = 0) or
//!    the single `F_all^i` (case 1, j = i: ā_i becomes the next input, x = 1). Then the loss
//!    `F_all^{L+1}` and `B_{L+1}` (B.2). The input of segment i is Ix_i = a_{i-1} (x = 0) or
//!    ā_{i-1} (x = 1); Ix_1 = a_0.
//! 2. **Backward** (B.3). The segments' backwards run in reverse order after `B_{L+1}`: the
//!    backward of an `F_all` segment is `B_i`; that of an `F_ck` segment `[i..=j]` is any
//!    *persistent* rematerialization schedule of `[i..=j]` from Ix_i and δ_j (the recursion of
//!    C_Δ with its cases F_all / F_ck, with Δ = 0: see 4.).
//! 3. **Offloading** only of segment inputs Ix_i (the checkpoints that persist into the
//!    backward; not the loss's input), during the forward phase: `Offload(i-1)` is listed
//!    immediately before the segment's first operation F^i, which reads Ix_i while it leaves.
//! 4. **Prefetching** only during the backward phase, in the reverse order: the prefetch of an
//!    offloaded Ix_i is listed either immediately before the first operation of segment i's
//!    backward ("own": the transfer is waited for), or immediately before the first
//!    operation of the backward of the *next* segment (i.e. of the one executed just before
//!    it; `B_{L+1}` for the last segment), after that segment's own prefetch ("overlap": it
//!    runs alongside that one backward and occupies memory during it).
//!
//! Deviations from the paper, all forced by exactness under whole-tensor transfers:
//! * The paper's fluid Lemma 1 (memory released / taken at rate β) is replaced by the exact
//!   event times of [`crate::chain::sim`]: the idle time of each operation of a segment is
//!   computed from the completion of the offload in flight (a Lemma 1 idle time, per operation).
//! * The paper's ΔF (bytes still to offload) becomes (s, r): the size of the one offload that
//!   can be in flight at a segment boundary and its remaining bytes (only one: an offload
//!   listed before F^i makes F^i wait until the link has finished the previous one).
//! * The paper's ΔB lets prefetches spread over any part of the backward (C_Δ's Δ); here a
//!   prefetch overlaps at most the one backward of the next segment (rule 4), so C(i, j) is a
//!   rematerialization table on the memory that remains, and the state only records p: whether
//!   the previous segment's input is to be prefetched alongside this segment's backward.
//! * ε_G of B.2 is the simulator's phase barrier: `B_{L+1}` waits for every offload.
//!
//! What 𝒮 gives up, as measured by the brute forces of the tests (small random chains):
//! * Persistency (rules 1–2) is an assumption, not a theorem: with no link, a search over all
//!   sequences of Table 1's operations beat the persistent optimum in 1 of 414 cases (by 9%):
//!   the backward of a segment may discard its checkpoint a_{i-1} with F_∅^i when the earlier
//!   segment's F_all^{i-1} will recompute it inside ā_{i-1} anyway.
//! * Rule 4: letting prefetches be listed before any top-level backward (the paper's ΔB
//!   freedom at the top level) was better in 2 of 302 cases (by at most 4%).
//!
//! # The dynamic program (Appendix B.1, Table 2)
//!
//! OC(i, x, A, s, r, p) is the least time from the end of F^{i-1} to the end of segment i's
//! backward (and of the prefetch launched with it when p), where A is the memory of the
//! earlier checkpoints that stay on the device, (s, r) the offload in flight and p as above.
//! A segment choice (F_all or F_ck up to j, and offload v ∈ {none, own, overlap}) costs its
//! forward time with idle times, plus OC of the next segment in the state of Table 2 (A + Ix_i
//! when Ix_i stays; the new in-flight offload when it leaves; p' = "overlap"), plus Ix_i / β
//! for "own", plus the backward C(i, j) on memory M − A − Ix_i − δ_j − (p ? s : 0), plus, when
//! p, the idle max(0, s / β − C) until the previous input has arrived. OC(L+1, …) is the loss.
//! The result is OC(1, 0, 0, 0, 0, false).
//!
//! # Memory discretization
//!
//! Sizes are counted in units of `unit` bytes, rounded up, and the budget rounded down (B.4's
//! N_GPU values). `mem_slots = Some(n)`: unit = ⌈budget / n⌉. `None`: the exact unit, the gcd
//! of all sizes (and of β·u for every duration u when these are whole numbers, so that link
//! remainders are exact), when the budget is at most [`EXACT_LIMIT`] units; otherwise
//! [`DEFAULT_SLOTS`] slots. Rounding sizes up is conservative: the returned schedule always
//! fits the real budget, and the DP's value is an upper bound of its simulated makespan,
//! equal to it when the unit is exact. The returned [`ChainSchedule`] carries the simulated
//! makespan and peak.
//!
//! # Complexity
//!
//! The rematerialization table has O(L² N) entries of O(L) work (rotor's O(L³ N)). The top
//! level has at most L · N³ states (A, s, r), each of O(L) work: O(L² N³) as Theorem 1's
//! forward part; only the states reachable from the start are computed (memoized).

use super::model::{Chain, ChainOp, ChainSchedule};
use super::sim;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Slots used when `mem_slots` is `None` and the exact unit would need more than
/// [`EXACT_LIMIT`] of them (the paper's observation, B.4: 50 values are enough in practice).
pub const DEFAULT_SLOTS: usize = 50;

/// The largest budget, in exact units, for which `mem_slots = None` is solved exactly.
pub const EXACT_LIMIT: u64 = 200;

/// The most slots accepted (larger requests are clamped).
const MAX_SLOTS: u64 = 16_000;

/// Finds a schedule of least makespan in the class 𝒮 (module documentation) for `chain`
/// under `budget` bytes with a link of `beta` bytes per time unit (`None` or 0: no offloading,
/// then this is the rotor optimum, equal to [`solve_remat_only`]), memory discretized in
/// `mem_slots` values (`None`: exact, see the module documentation). `None` when no schedule of
/// the class fits (in the discretized sizes).
pub fn solve(chain: &Chain, budget: u64, beta: Option<f64>, mem_slots: Option<usize>) -> Option<ChainSchedule> {
    let (ops, _) = solve_value(chain, budget, beta, mem_slots)?;
    measured(chain, ops, budget, beta)
}

/// The optimal persistent rematerialization schedule of the chain, loss included (Beaumont et
/// al. 2019; the recursion C_Δ of Appendix B.3 with Δ = 0 applied to the whole chain), under
/// `budget` bytes with memory discretized as in [`solve`]. It equals `solve(chain, budget,
/// None, mem_slots)`: with no link the top level of [`solve`] is this recursion unrolled.
pub fn solve_remat_only(chain: &Chain, budget: u64, mem_slots: Option<usize>) -> Option<ChainSchedule> {
    let (ops, _) = remat_only_value(chain, budget, mem_slots)?;
    measured(chain, ops, budget, None)
}

fn measured(chain: &Chain, ops: Vec<ChainOp>, budget: u64, beta: Option<f64>) -> Option<ChainSchedule> {
    match sim::simulate(chain, &ops, budget, beta) {
        Ok((makespan, peak)) => Some(ChainSchedule { ops, makespan, peak }),
        Err(e) => {
            debug_assert!(false, "the chain DP produced a schedule the simulator rejects: {e}");
            tracing::warn!("the chain DP produced a schedule the simulator rejects: {e}");
            None
        }
    }
}

/// [`solve`]'s operations and the DP's own value of their makespan.
pub(crate) fn solve_value(
    chain: &Chain,
    budget: u64,
    beta: Option<f64>,
    mem_slots: Option<usize>,
) -> Option<(Vec<ChainOp>, f64)> {
    chain.check().ok()?;
    let u = Units::new(chain, budget, beta, mem_slots);
    let rotor = Rotor::new(&u);
    let mut oc = TopLevel {
        u: &u,
        rotor: &rotor,
        memo: HashMap::default(),
        bounds: vec![f64::NAN; (u.l + 2) * 2 * (u.m.max(0) as usize + 1)],
    };
    let value = oc.oc(1, 0, 0, 0, 0, false);
    if !value.is_finite() {
        return None;
    }
    let mut ops = Vec::new();
    oc.emit(1, 0, 0, 0, 0, false, None, &mut ops);
    Some((ops, value))
}

/// [`solve_remat_only`]'s operations and the DP's value.
pub(crate) fn remat_only_value(chain: &Chain, budget: u64, mem_slots: Option<usize>) -> Option<(Vec<ChainOp>, f64)> {
    chain.check().ok()?;
    let u = Units::new(chain, budget, None, mem_slots);
    let rotor = Rotor::new(&u);
    let l1 = u.l + 1;
    let m = u.m - u.a[0];
    if m < 0 {
        return None;
    }
    let value = rotor.get(1, l1, m);
    if !value.is_finite() {
        return None;
    }
    let mut ops = Vec::new();
    rotor.emit(&u, 1, l1, m, &mut ops);
    Some((ops, value))
}

/// The greatest common divisor (memory units are the gcd of a chain's sizes).
pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The chain in memory units.
struct Units {
    l: usize,
    /// Budget in units.
    m: i64,
    /// Link speed in units per time unit (0: no link).
    beta_u: f64,
    /// |a_ℓ|, ℓ ∈ 0..=L (index L+1: 0).
    a: Vec<i64>,
    /// |ā_ℓ|, ℓ ∈ 1..=L+1 (index 0: |a_0|).
    abar: Vec<i64>,
    /// |δ_ℓ|, ℓ ∈ 0..=L+1.
    d: Vec<i64>,
    of: Vec<i64>,
    ob: Vec<i64>,
    uf: Vec<f64>,
    ub: Vec<f64>,
    /// Σ_{k' > k} u_F over stages 1..=L+1.
    rest_f: Vec<f64>,
    /// Σ_{k' ≥ k} u_B over stages 1..=L+1.
    rest_b: Vec<f64>,
}

impl Units {
    fn new(chain: &Chain, budget: u64, beta: Option<f64>, mem_slots: Option<usize>) -> Units {
        let l = chain.len();
        let beta = beta.filter(|b| *b > 0.0 && b.is_finite()).unwrap_or(0.0);
        let slots_unit = |n: u64| budget.div_ceil(n.clamp(1, MAX_SLOTS)).max(1);
        let unit = match mem_slots {
            Some(n) => slots_unit(n as u64),
            None => {
                let mut g = chain.all_sizes().into_iter().fold(0, gcd);
                if beta > 0.0 {
                    let products: Vec<f64> = chain.all_durations().iter().map(|u| u * beta).collect();
                    if products.iter().all(|x| (x - x.round()).abs() <= 1e-9 * x.abs().max(1.0)) {
                        g = products.iter().fold(g, |g, x| gcd(g, x.round() as u64));
                    }
                }
                let g = g.max(1);
                if budget / g <= EXACT_LIMIT {
                    g
                } else {
                    slots_unit(DEFAULT_SLOTS as u64)
                }
            }
        };
        let q = |bytes: u64| bytes.div_ceil(unit) as i64;
        let mut a: Vec<i64> = (0..=l).map(|k| q(chain.a(k))).collect();
        a.push(0);
        let mut abar = vec![a[0]];
        abar.extend((1..=l + 1).map(|k| q(chain.abar(k))));
        let d = (0..=l + 1).map(|k| q(chain.delta(k))).collect();
        let mut of = vec![0];
        of.extend((1..=l + 1).map(|k| q(chain.of(k))));
        let mut ob = vec![0];
        ob.extend((1..=l + 1).map(|k| q(chain.ob(k))));
        let mut uf = vec![0.0];
        uf.extend((1..=l + 1).map(|k| chain.uf(k)));
        let mut ub = vec![0.0];
        ub.extend((1..=l + 1).map(|k| chain.ub(k)));
        // rest_f[k] = Σ_{k'>k} u_F, rest_b[k] = Σ_{k'≥k} u_B (over 1..=L+1).
        let mut rest_f = vec![0.0; l + 3];
        let mut rest_b = vec![0.0; l + 3];
        for k in (0..=l + 1).rev() {
            rest_f[k] = rest_f[k + 1] + if k < l + 1 { uf[k + 1] } else { 0.0 };
            rest_b[k] = rest_b[k + 1] + if k >= 1 { ub[k] } else { 0.0 };
        }
        Units { l, m: (budget / unit) as i64, beta_u: beta / unit as f64, a, abar, d, of, ob, uf, ub, rest_f, rest_b }
    }

    /// |Ix_i| for input type x.
    fn ix(&self, i: usize, x: u8) -> i64 {
        if x == 0 {
            self.a[i - 1]
        } else {
            self.abar[i - 1]
        }
    }

    /// Link bytes (units) as a state value: exact whole numbers are kept, anything else is
    /// rounded up (conservative).
    fn quantize(&self, x: f64) -> i64 {
        if x <= 0.0 {
            return 0;
        }
        let r = x.round();
        if (x - r).abs() <= 1e-7 * x.max(1.0) {
            r as i64
        } else {
            x.ceil() as i64
        }
    }
}

/// Persistent rematerialization of sub-chains (B.3 with Δ = 0; rotor): `val(i, j, m)` is the
/// least time to run the backward of `[i..=j]` from Ix_i and δ_j with `m` units free besides
/// everything resident at its start.
struct Rotor {
    mm: usize,
    val: Vec<f64>,
    /// 0: F_all first (or the single stage); c > 0: F_ck^i … F_∅^{i+c-1}, split at k = i+c-1.
    choice: Vec<u16>,
}

impl Rotor {
    fn pair(i: usize, j: usize) -> usize {
        (j - 1) * j / 2 + (i - 1)
    }

    fn at(&self, i: usize, j: usize, m: i64) -> usize {
        Rotor::pair(i, j) * self.mm + m as usize
    }

    fn get(&self, i: usize, j: usize, m: i64) -> f64 {
        if m < 0 {
            return f64::INFINITY;
        }
        let m = (m as usize).min(self.mm - 1) as i64;
        self.val[self.at(i, j, m)]
    }

    wide_lanes!(
        /// [`Self::fill`] in the widest vectors the CPU has.
        fn new(u: &Units) -> Rotor = Rotor::fill
    );

    /// Fills the table span by span, shortest first. Per span, candidates come in a fixed order
    /// (F_all, then each split k) and a later one wins only when strictly cheaper; each is swept
    /// over the span's whole row of m at once ([`relax`]).
    #[inline(always)]
    fn fill(u: &Units) -> Rotor {
        let l1 = u.l + 1;
        let mm = u.m.max(0) as usize + 1;
        let pairs = l1 * (l1 + 1) / 2;
        let mut r = Rotor { mm, val: vec![f64::INFINITY; pairs * mm], choice: vec![0; pairs * mm] };
        let mut best = vec![f64::INFINITY; mm];
        let mut choice = vec![0u16; mm];
        // The first m at or above `least`, as an index into a row (`mm`: none).
        let from = |least: i64| least.clamp(0, mm as i64) as usize;
        for len in 0..l1 {
            for i in 1..=l1 - len {
                let j = i + len;
                best.fill(f64::INFINITY);
                choice.fill(0);
                if len == 0 {
                    let least = from((u.abar[i] + u.of[i]).max(u.abar[i] + u.d[i - 1] + u.ob[i]));
                    best[least..].fill(u.uf[i] + u.ub[i]);
                } else {
                    // F_all^i, then [i+1..=j] on top of ā_i, then B_i.
                    let need = (u.abar[i] + u.of[i]).max(u.abar[i] + u.d[i] + u.d[i - 1] + u.ob[i] - u.d[j]);
                    // Below ā_i the rest has no room (an infinite candidate, which never wins).
                    let least = from(need.max(u.abar[i]));
                    if least < mm {
                        let rest = r.row(i + 1, j) + least - u.abar[i] as usize;
                        let rest = &r.val[rest..rest + (mm - least)];
                        let (uf, ub) = (u.uf[i], u.ub[i]);
                        relax(&mut best[least..], &mut choice[least..], 0, rest.iter().map(|&sub| uf + sub + ub));
                    }
                    // F_ck^i F_∅^{i+1} … F_∅^k, then [k+1..=j] on top of a_k, then [i..=k].
                    let mut need = u.a[i] + u.of[i];
                    let mut tf = u.uf[i];
                    for k in i..j {
                        if k > i {
                            need = need.max(u.a[k - 1] + u.a[k] + u.of[k]);
                            tf += u.uf[k];
                        }
                        if need >= mm as i64 {
                            break;
                        }
                        let split = Split {
                            after: r.row(k + 1, j),
                            a_k: u.a[k],
                            before: r.row(i, k),
                            shift: u.d[j] - u.d[k],
                            forward: tf,
                        };
                        relax_split(&r.val, &mut best, &mut choice, (k - i + 1) as u16, need, &split);
                    }
                }
                let at = r.row(i, j);
                r.val[at..at + mm].copy_from_slice(&best);
                r.choice[at..at + mm].copy_from_slice(&choice);
            }
        }
        r
    }

    /// Where the row of span (i, j) starts in `val` and `choice`.
    fn row(&self, i: usize, j: usize) -> usize {
        self.at(i, j, 0)
    }

    fn emit(&self, u: &Units, i: usize, j: usize, m: i64, ops: &mut Vec<ChainOp>) {
        let m = m.min(self.mm as i64 - 1);
        let c = self.choice[self.at(i, j, m)] as usize;
        if i == j {
            ops.push(ChainOp::FAll(i));
            ops.push(ChainOp::B(i));
        } else if c == 0 {
            ops.push(ChainOp::FAll(i));
            self.emit(u, i + 1, j, m - u.abar[i], ops);
            ops.push(ChainOp::B(i));
        } else {
            let k = i + c - 1;
            ops.push(ChainOp::FCk(i));
            ops.extend((i + 1..=k).map(ChainOp::FNone));
            self.emit(u, k + 1, j, m - u.a[k], ops);
            self.emit(u, i, k, m + u.d[j] - u.d[k], ops);
        }
    }
}

/// Lowers `best[m]` to the m-th of `candidates` where that is strictly cheaper, recording
/// `tag` as its choice: of equal candidates the earliest stays. Branch-free, so the DPs' inner
/// loops over a row of memory vectorize.
#[inline(always)]
pub(crate) fn relax<T: Copy>(best: &mut [f64], choice: &mut [T], tag: T, candidates: impl Iterator<Item = f64>) {
    for ((best, choice), cand) in best.iter_mut().zip(choice.iter_mut()).zip(candidates) {
        let better = cand < *best;
        *best = if better { cand } else { *best };
        *choice = if better { tag } else { *choice };
    }
}

/// A split candidate of Rotor's recursion (and of the menus' DP, which has its form): run the
/// forward of `[i..=k]` (`forward`, its time), then `[k+1..=j]` on top of `a_k`, then `[i..=k]`
/// with `shift` more units free. `after` and `before` are where the two sub-spans' rows start
/// in the table.
pub(crate) struct Split {
    pub after: usize,
    pub a_k: i64,
    pub before: usize,
    pub shift: i64,
    pub forward: f64,
}

/// [`relax`] with `split`'s candidate for every m from `need` on, read from `val` (a row per
/// span, `best.len()` entries each): `forward + val(k+1, j, m − a_k) + val(i, k, m + shift)`,
/// the second row read at its last entry beyond its end. Below `a_k` or `−shift` the candidate
/// is infinite, and an infinite term leaves an infinite candidate, which never wins.
#[inline(always)]
pub(crate) fn relax_split<T: Copy>(val: &[f64], best: &mut [f64], choice: &mut [T], tag: T, need: i64, split: &Split) {
    let mm = best.len();
    let least = need.max(split.a_k).max(-split.shift).clamp(0, mm as i64) as usize;
    if least == mm {
        return;
    }
    let after = split.after + least - split.a_k as usize;
    let after = &val[after..after + (mm - least)];
    let clamped = (mm as i64 - split.shift).clamp(least as i64, mm as i64) as usize;
    let (after_unclamped, after_clamped) = after.split_at(clamped - least);
    let start = (split.before as i64 + least as i64 + split.shift) as usize;
    let before_unclamped = &val[start..start + (clamped - least)];
    let last = val[split.before + mm - 1];
    let forward = split.forward;
    relax(
        &mut best[least..clamped],
        &mut choice[least..clamped],
        tag,
        after_unclamped.iter().zip(before_unclamped).map(|(&t1, &t2)| forward + t1 + t2),
    );
    relax(&mut best[clamped..], &mut choice[clamped..], tag, after_clamped.iter().map(|&t1| forward + t1 + last));
}

/// Declares `fn $name(args) -> ret` running `$body` (an `#[inline(always)]` function, so
/// that it is compiled into each variant) built for the widest vectors this CPU has: AVX-512,
/// AVX2, else the target's baseline. The DPs' row sweeps ([`relax`]) then run eight or four
/// lanes where SSE2 runs two. The same additions in the same order (Rust never fuses a
/// multiply-add), so the same tables to the bit on every CPU.
macro_rules! wide_lanes {
    ($(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $body:path) => {
        $(#[$attr])*
        fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F, checked just above.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU has AVX2, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}
pub(crate) use wide_lanes;

/// Offload modes of a segment input.
const NO_OFFLOAD: u8 = 0;
/// Prefetched right before its own segment's backward.
const OWN: u8 = 1;
/// Prefetched alongside the next segment's backward.
const OVERLAP: u8 = 2;

#[derive(Clone, Copy)]
struct Entry {
    val: f64,
    /// F_all segment (else F_ck up to `j`).
    all: bool,
    j: u32,
    mode: u8,
    child: u64,
}

const INF_ENTRY: Entry = Entry { val: f64::INFINITY, all: false, j: 0, mode: 0, child: 0 };

fn pack(i: usize, x: u8, a: i64, s: i64, r: i64, p: bool) -> u64 {
    (i as u64) << 48 | (x as u64) << 47 | (p as u64) << 46 | (a as u64) << 31 | (s as u64) << 16 | r as u64
}

fn unpack(k: u64) -> (usize, u8, i64, i64, i64, bool) {
    (
        (k >> 48) as usize,
        ((k >> 47) & 1) as u8,
        ((k >> 31) & 0x7fff) as i64,
        ((k >> 16) & 0x7fff) as i64,
        (k & 0xffff) as i64,
        (k >> 46) & 1 == 1,
    )
}

/// A small multiplicative hasher for the memo's `u64` keys.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = (k ^ (k >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The forward of one segment, simulated operation by operation (Lemma 1's idle times, exact).
#[derive(Clone, Copy)]
struct Forward {
    /// Resident units that stay during the segment (A, and Ix_i unless it leaves).
    fixed: i64,
    /// Output of the last operation.
    out: i64,
    /// Units resident until a time: (time, units).
    events: [(f64, i64); 2],
    /// End of the last operation.
    t: f64,
}

impl Forward {
    /// Earliest start ≥ `t0` at which `alloc` fits under `m`.
    fn fit(&self, t0: f64, alloc: i64, m: i64) -> Option<f64> {
        let [(t_a, b_a), (t_b, b_b)] = self.events;
        let resident = |t: f64| {
            self.fixed + self.out + if t_a > t + 1e-9 { b_a } else { 0 } + if t_b > t + 1e-9 { b_b } else { 0 }
        };
        if resident(t0) + alloc <= m {
            return Some(t0);
        }
        let (first, second) = if t_a <= t_b { (t_a, t_b) } else { (t_b, t_a) };
        [first, second].into_iter().find(|&t| t > t0 + 1e-9 && resident(t) + alloc <= m)
    }
}

/// The top level of Appendix B.1: OC over segments, memoized on reachable states.
struct TopLevel<'a> {
    u: &'a Units,
    rotor: &'a Rotor,
    memo: HashMap<u64, Entry, BuildHasherDefault<KeyHasher>>,
    /// Memo of [`TopLevel::bound`], indexed by (i, x, A); NaN: not computed.
    bounds: Vec<f64>,
}

impl TopLevel<'_> {
    /// OC(i, x, A, s, r, p) (module documentation).
    fn oc(&mut self, i: usize, x: u8, a: i64, s: i64, r: i64, p: bool) -> f64 {
        let key = pack(i, x, a, s, r, p);
        if let Some(e) = self.memo.get(&key) {
            return e.val;
        }
        let e = if i == self.u.l + 1 { self.loss(x, a, s, r, p) } else { self.segment(i, x, a, s, r, p) };
        self.memo.insert(key, e);
        e.val
    }

    /// A lower bound of OC(i, x, A, s, r, p) for every s, r, p: the same recursion with an
    /// infinitely fast link (transfers take no time, so nothing is in flight, nothing is
    /// waited for, and an offloaded input only occupies memory while F^i reads it and during
    /// its own backward). The same operations take no longer and need no more memory there.
    fn bound(&mut self, i: usize, x: u8, a: i64) -> f64 {
        let u = self.u;
        let at = ((i * 2) + x as usize) * (u.m.max(0) as usize + 1) + a as usize;
        if !self.bounds[at].is_nan() {
            return self.bounds[at];
        }
        let ix = u.ix(i, x);
        let mut best = f64::INFINITY;
        if i == u.l + 1 {
            if a + ix + u.abar[i] + u.of[i] <= u.m && a + ix + u.abar[i] + u.d[i - 1] + u.ob[i] <= u.m {
                best = u.uf[i] + u.ub[i];
            }
        } else {
            let choices: &[bool] = if u.beta_u > 0.0 { &[false, true] } else { &[false] };
            for &offload in choices {
                let a_next = if offload { a } else { a + ix };
                if a + ix + u.abar[i] + u.of[i] <= u.m && a + ix + u.abar[i] + u.d[i] + u.d[i - 1] + u.ob[i] <= u.m {
                    best = best.min(u.uf[i] + self.bound(i + 1, 1, a_next) + u.ub[i]);
                }
                if a + ix + u.a[i] + u.of[i] > u.m {
                    continue;
                }
                let mut tf = u.uf[i];
                for j in i..=u.l {
                    if j > i {
                        if a_next + u.a[j - 1] + u.a[j] + u.of[j] > u.m {
                            break;
                        }
                        tf += u.uf[j];
                    }
                    let c = self.rotor.get(i, j, u.m - (a + ix + u.d[j]));
                    if c.is_finite() {
                        best = best.min(tf + c + self.bound(j + 1, 0, a_next));
                    }
                }
            }
        }
        self.bounds[at] = best;
        best
    }

    /// OC(L+1, …): the loss (B.2), with the phase barrier (ε_G).
    fn loss(&self, x: u8, a: i64, s: i64, r: i64, p: bool) -> Entry {
        let u = self.u;
        let l1 = u.l + 1;
        let ix = u.ix(l1, x);
        let c_old = if r > 0 { r as f64 / u.beta_u } else { 0.0 };
        let fw = Forward { fixed: a + ix, out: 0, events: [(c_old, if r > 0 { s } else { 0 }), (0.0, 0)], t: 0.0 };
        let Some(start) = fw.fit(0.0, u.abar[l1] + u.of[l1], u.m) else { return INF_ENTRY };
        let b_start = (start + u.uf[l1]).max(c_old);
        let ps = if p { s } else { 0 };
        if a + ix + u.abar[l1] + ps + u.d[l1 - 1] + u.ob[l1] > u.m {
            return INF_ENTRY;
        }
        let wait = if p { (s as f64 / u.beta_u - u.ub[l1]).max(0.0) } else { 0.0 };
        Entry { val: b_start + u.ub[l1] + wait, ..INF_ENTRY }
    }

    /// OC(i, …) for a real segment start i ≤ L: B.1's cases 1 (F_all) and 2 (F_ck … F_∅).
    fn segment(&mut self, i: usize, x: u8, a: i64, s: i64, r: i64, p: bool) -> Entry {
        let u = self.u;
        let ix = u.ix(i, x);
        let bu = u.beta_u;
        let ps = if p { s } else { 0 };
        let mut best = INF_ENTRY;
        let offload_choices: &[bool] = if bu > 0.0 { &[false, true] } else { &[false] };
        for &offload in offload_choices {
            // Link and memory at the boundary (time 0 = end of F^{i-1}).
            let (t0, fw0, oe) = if offload {
                // F^i waits for the link: the previous offload completes at t0.
                let t0 = r as f64 / bu;
                (t0, Forward { fixed: a + ix, out: 0, events: [(0.0, 0); 2], t: t0 }, t0 + ix as f64 / bu)
            } else {
                let c_old = if r > 0 { r as f64 / bu } else { 0.0 };
                (
                    0.0,
                    Forward { fixed: a + ix, out: 0, events: [(c_old, if r > 0 { s } else { 0 }), (0.0, 0)], t: 0.0 },
                    0.0,
                )
            };
            let modes: &[u8] = if offload { &[OWN, OVERLAP] } else { &[NO_OFFLOAD] };
            let a_next = if offload { a } else { a + ix };
            // The state after the forward ends at `t`: (s', r').
            let link_after = |fw: &Forward| -> (i64, i64) {
                if offload {
                    (ix, u.quantize((oe - fw.t) * bu))
                } else if r > 0 {
                    let rr = u.quantize((fw.events[0].0 - fw.t) * bu);
                    (if rr > 0 { s } else { 0 }, rr)
                } else {
                    (0, 0)
                }
            };
            // After F^i (which pins Ix_i while it leaves), Ix_i is released at max(oe, end).
            let after_first = |mut fw: Forward, start: f64, uf: f64, out: i64| -> Forward {
                fw.t = start + uf;
                fw.out = out;
                if offload {
                    fw.fixed = a;
                    fw.events[1] = (oe.max(fw.t), ix);
                }
                fw
            };

            // Case 1: F_all^i.
            if let Some(start) = fw0.fit(t0, u.abar[i] + u.of[i], u.m) {
                let fw = after_first(fw0, start, u.uf[i], u.abar[i]);
                let (s1, r1) = link_after(&fw);
                let b_ok = a + ix + u.abar[i] + u.d[i] + ps + u.d[i - 1] + u.ob[i] <= u.m;
                if b_ok {
                    let wait = if p { (s as f64 / bu - u.ub[i]).max(0.0) } else { 0.0 };
                    let bound = fw.t + u.ub[i] + wait + self.bound(i + 1, 1, a_next);
                    for &mode in modes {
                        let own = if mode == OWN { ix as f64 / bu } else { 0.0 };
                        if bound + own >= best.val {
                            continue;
                        }
                        let p1 = mode == OVERLAP;
                        let s1 = if p1 || r1 > 0 { s1 } else { 0 };
                        let child = self.oc(i + 1, 1, a_next, s1, r1, p1);
                        let val = fw.t + child + own + u.ub[i] + wait;
                        if val < best.val {
                            best =
                                Entry { val, all: true, j: i as u32, mode, child: pack(i + 1, 1, a_next, s1, r1, p1) };
                        }
                    }
                }
            }

            // Case 2: F_ck^i F_∅^{i+1} … F_∅^j.
            let Some(start) = fw0.fit(t0, u.a[i] + u.of[i], u.m) else { continue };
            let mut fw = after_first(fw0, start, u.uf[i], u.a[i]);
            for j in i..=u.l {
                if j > i {
                    let Some(start) = fw.fit(fw.t, u.a[j] + u.of[j], u.m) else { break };
                    fw.t = start + u.uf[j];
                    fw.out = u.a[j];
                }
                // Every later choice costs at least the forward so far, the forwards after j
                // and every backward from B_i on; this only grows with j.
                if fw.t + u.rest_f[j] + u.rest_b[i] >= best.val {
                    break;
                }
                let c = self.rotor.get(i, j, u.m - (a + ix + u.d[j] + ps));
                if !c.is_finite() {
                    continue;
                }
                let (s1, r1) = link_after(&fw);
                let wait = if p { (s as f64 / bu - c).max(0.0) } else { 0.0 };
                // The rest costs at least its value with an infinitely fast link.
                let bound = fw.t + c + wait + self.bound(j + 1, 0, a_next);
                for &mode in modes {
                    let own = if mode == OWN { ix as f64 / bu } else { 0.0 };
                    if bound + own >= best.val {
                        continue;
                    }
                    let p1 = mode == OVERLAP;
                    let s1 = if p1 || r1 > 0 { s1 } else { 0 };
                    let child = self.oc(j + 1, 0, a_next, s1, r1, p1);
                    let val = fw.t + child + own + c + wait;
                    if val < best.val {
                        best = Entry { val, all: false, j: j as u32, mode, child: pack(j + 1, 0, a_next, s1, r1, p1) };
                    }
                }
            }
        }
        best
    }

    /// Appends the operations of the optimal OC(i, …) schedule; `parent_ix` is the activation
    /// to prefetch alongside this segment's backward when p.
    #[allow(clippy::too_many_arguments)]
    fn emit(&self, i: usize, x: u8, a: i64, s: i64, r: i64, p: bool, parent_ix: Option<usize>, ops: &mut Vec<ChainOp>) {
        let u = self.u;
        let l1 = u.l + 1;
        let prefetch_parent = |ops: &mut Vec<ChainOp>| {
            if p {
                ops.push(ChainOp::Prefetch(parent_ix.expect("p without a parent input")));
            }
        };
        if i == l1 {
            ops.push(ChainOp::FAll(l1));
            prefetch_parent(ops);
            ops.push(ChainOp::B(l1));
            return;
        }
        let e = self.memo[&pack(i, x, a, s, r, p)];
        let j = e.j as usize;
        if e.mode != NO_OFFLOAD {
            ops.push(ChainOp::Offload(i - 1));
        }
        if e.all {
            ops.push(ChainOp::FAll(i));
        } else {
            ops.push(ChainOp::FCk(i));
            ops.extend((i + 1..=j).map(ChainOp::FNone));
        }
        let (ci, cx, ca, cs, cr, cp) = unpack(e.child);
        self.emit(ci, cx, ca, cs, cr, cp, if e.mode == OVERLAP { Some(i - 1) } else { None }, ops);
        if e.mode == OWN {
            ops.push(ChainOp::Prefetch(i - 1));
        }
        prefetch_parent(ops);
        if e.all {
            ops.push(ChainOp::B(i));
        } else {
            let ix = u.ix(i, x);
            let ps = if p { s } else { 0 };
            self.rotor.emit(u, i, j, u.m - (a + ix + u.d[j] + ps), ops);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::brute::{random_chain, Rng};
    use crate::chain::model::{Loss, Stage};
    use std::time::Instant;

    fn stage(a: u64, a_bar: u64, delta: u64, u_f: f64, u_b: f64) -> Stage {
        Stage { u_f, u_b, a, a_bar, delta, of: 0, ob: 0 }
    }

    /// Three unit stages behind a large input a_0 (4 bytes): keeping everything needs 9 bytes
    /// (at B_3: a_0, ā_1..ā_3, δ_3 and the new δ_2).
    fn big_input_chain() -> Chain {
        Chain {
            a0: 4,
            delta0: 0,
            stages: vec![stage(1, 1, 1, 1.0, 1.0); 3],
            loss: Loss { u_f: 0.0, u_b: 0.0, a_bar: 0, of: 0, ob: 0 },
        }
    }

    /// Test 4: offloading a_0 during F_1 and prefetching it alongside B_2 hides the
    /// recomputation that pure rematerialization needs at 8 bytes.
    #[test]
    fn chain_offloading_hides_a_recomputation() {
        let chain = big_input_chain();
        let ideal = 6.0;
        assert_eq!(solve_remat_only(&chain, 9, None).unwrap().makespan, ideal);
        let remat = solve_remat_only(&chain, 8, None).unwrap();
        assert!(remat.makespan > ideal, "remat needs a recomputation: {:?}", remat.ops);
        let with_link = solve(&chain, 8, Some(4.0), None).unwrap();
        assert_eq!(with_link.makespan, ideal);
        assert!(with_link.peak <= 8);
        use ChainOp::*;
        assert_eq!(
            with_link.ops,
            vec![Offload(0), FAll(1), FAll(2), FAll(3), FAll(4), B(4), B(3), Prefetch(0), B(2), B(1)]
        );
        // A slower link: the transfers are no longer hidden, yet better than recomputing.
        let slow = solve(&chain, 8, Some(2.0), None).unwrap();
        assert!(slow.makespan > ideal && slow.makespan <= remat.makespan, "{slow:?} vs {remat:?}");
        let (t, _) = sim::simulate(&chain, &slow.ops, 8, Some(2.0)).unwrap();
        assert_eq!(t, slow.makespan);
    }

    /// Offloading can make a budget feasible that rematerialization alone cannot meet.
    #[test]
    fn chain_offloading_extends_feasibility() {
        let chain = big_input_chain();
        let least_remat = (0..20).find(|&b| solve_remat_only(&chain, b, None).is_some()).unwrap();
        let least_link = (0..20).find(|&b| solve(&chain, b, Some(4.0), None).is_some()).unwrap();
        assert!(least_link < least_remat, "{least_link} vs {least_remat}");
        assert!(solve(&chain, least_link - 1, Some(4.0), None).is_none());
    }

    /// A chain the classical recursion handles by hand: with room for everything, no
    /// recomputation; with a budget that forces one, the F_ck choice of B.3 case 2.
    #[test]
    fn chain_remat_only_by_hand() {
        // a_0 = 1, three stages of a = ā = 1, δ = 1, u_F = 1, u_B = 2; the loss is free.
        let chain = Chain {
            a0: 1,
            delta0: 1,
            stages: vec![stage(1, 1, 1, 1.0, 2.0); 3],
            loss: Loss { u_f: 0.0, u_b: 0.0, a_bar: 0, of: 0, ob: 0 },
        };
        // Everything: a_0 + ā_1..ā_3 + δ_3 + δ_2 = 6 at B_3.
        let all = solve_remat_only(&chain, 6, None).unwrap();
        assert_eq!(all.makespan, 9.0);
        assert_eq!(all.peak, 6);
        let tight = solve_remat_only(&chain, 5, None).unwrap();
        assert!(tight.makespan > 9.0);
        assert!(tight.peak <= 5);
        let (t, _) = sim::simulate(&chain, &tight.ops, 5, None).unwrap();
        assert_eq!(t, tight.makespan);
        assert!(solve_remat_only(&chain, 3, None).is_none());
    }

    /// The discretization rules: an explicit slot count rounds sizes up, `None` is exact for
    /// small integer chains and falls back to [`DEFAULT_SLOTS`] for large budgets.
    #[test]
    fn chain_discretization() {
        let chain = big_input_chain();
        let u = Units::new(&chain, 8, Some(4.0), None);
        assert_eq!((u.m, u.a[0]), (8, 4));
        let u = Units::new(&chain, 8, Some(4.0), Some(3));
        assert_eq!((u.m, u.a[0], u.a[1]), (2, 2, 1));
        let mut big = chain.clone();
        big.a0 = 4 << 20;
        for s in &mut big.stages {
            s.a = 1 << 20;
            s.a_bar = 1 << 20;
            s.delta = 1 << 20;
        }
        let u = Units::new(&big, 8 << 20, None, None);
        assert_eq!(u.m, 8);
        // One odd size: the exact unit is a byte, too fine; 50 slots of ⌈budget / 50⌉ bytes.
        big.loss.of = 1;
        let u = Units::new(&big, 8 << 20, None, None);
        let unit = (8u64 << 20).div_ceil(DEFAULT_SLOTS as u64);
        assert_eq!(
            (u.m, u.a[0], u.a[1]),
            (((8u64 << 20) / unit) as i64, (4u64 << 20).div_ceil(unit) as i64, (1u64 << 20).div_ceil(unit) as i64)
        );
        assert!(u.m as usize <= DEFAULT_SLOTS);
    }

    /// Long chains solve in seconds with 50 slots.
    #[test]
    fn chain_hundred_stages_fifty_slots() {
        let mut rng = Rng::new(11);
        let mut chain = random_chain(&mut rng, 100);
        for s in &mut chain.stages {
            s.a *= 1000;
            s.a_bar *= 1000;
            s.delta *= 1000;
            s.of *= 1000;
            s.ob *= 1000;
        }
        chain.a0 *= 1000;
        let total: u64 = chain.all_sizes().iter().sum();
        for (frac, beta) in [(0.25, Some(2000.0)), (0.15, Some(500.0)), (0.25, None)] {
            let budget = (total as f64 * frac) as u64;
            let t = Instant::now();
            let s = solve(&chain, budget, beta, Some(50));
            let elapsed = t.elapsed().as_secs_f64();
            let remat = solve_remat_only(&chain, budget, Some(50));
            eprintln!(
                "100 stages, budget {budget} ({frac} of all), β {beta:?}: {:?} in {elapsed:.2}s (remat only: {:?})",
                s.as_ref().map(|s| (s.makespan, s.peak, s.ops.iter().filter(|o| o.is_transfer()).count())),
                remat.as_ref().map(|s| s.makespan)
            );
            assert!(elapsed < 60.0);
            if let Some(s) = s {
                assert!(s.peak <= budget);
            }
        }
    }

    /// The recursion of [`Rotor`] one m at a time, as the rotor paper states it: the reference
    /// its row sweeps must match to the bit, choices included.
    fn rotor_per_m(u: &Units) -> (Vec<f64>, Vec<u16>) {
        let l1 = u.l + 1;
        let mm = u.m.max(0) as usize + 1;
        let mut r =
            Rotor { mm, val: vec![f64::INFINITY; l1 * (l1 + 1) / 2 * mm], choice: vec![0; l1 * (l1 + 1) / 2 * mm] };
        for len in 0..l1 {
            for i in 1..=l1 - len {
                let j = i + len;
                for m in 0..mm as i64 {
                    let (mut best, mut choice) = (f64::INFINITY, 0u16);
                    if len == 0 {
                        if u.abar[i] + u.of[i] <= m && u.abar[i] + u.d[i - 1] + u.ob[i] <= m {
                            best = u.uf[i] + u.ub[i];
                        }
                    } else {
                        if u.abar[i] + u.of[i] <= m && u.abar[i] + u.d[i] + u.d[i - 1] + u.ob[i] - u.d[j] <= m {
                            best = u.uf[i] + r.get(i + 1, j, m - u.abar[i]) + u.ub[i];
                        }
                        let mut need = u.a[i] + u.of[i];
                        let mut tf = u.uf[i];
                        for k in i..j {
                            if k > i {
                                need = need.max(u.a[k - 1] + u.a[k] + u.of[k]);
                                tf += u.uf[k];
                            }
                            if need > m {
                                break;
                            }
                            let t1 = r.get(k + 1, j, m - u.a[k]);
                            if !t1.is_finite() {
                                continue;
                            }
                            let cand = tf + t1 + r.get(i, k, m + u.d[j] - u.d[k]);
                            if cand < best {
                                best = cand;
                                choice = (k - i + 1) as u16;
                            }
                        }
                    }
                    let at = r.at(i, j, m);
                    r.val[at] = best;
                    r.choice[at] = choice;
                }
            }
        }
        (r.val, r.choice)
    }

    /// The row sweeps, in the widest vectors this CPU has, fill the same table as the
    /// recursion taken one m at a time: same values to the bit, same choices (ties to the
    /// first candidate). Durations with fractions, so the order of additions shows.
    #[test]
    fn rotor_row_sweeps_match_the_recursion_per_m() {
        let mut rng = Rng::new(11);
        let mut compared = 0;
        for l in [1, 2, 3, 5, 8, 13] {
            for _ in 0..12 {
                let mut chain = random_chain(&mut rng, l);
                for stage in &mut chain.stages {
                    stage.u_f = stage.u_f / 3.0 + 0.1;
                    stage.u_b = stage.u_b * 0.7 + 1.0 / 7.0;
                    stage.a *= rng.range(1, 40);
                    stage.a_bar = stage.a + rng.range(0, 40);
                    stage.delta *= rng.range(1, 40);
                }
                let total = chain.total_bytes();
                for budget in [total / 4, total / 2, total, 2 * total] {
                    for slots in [None, Some(7), Some(30)] {
                        let u = Units::new(&chain, budget.max(1), None, slots);
                        let rows = Rotor::new(&u);
                        let (val, choice) = rotor_per_m(&u);
                        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&rows.val), bits(&val), "l={l} budget={budget} slots={slots:?}");
                        assert_eq!(rows.choice, choice, "l={l} budget={budget} slots={slots:?}");
                        compared += 1;
                    }
                }
            }
        }
        assert_eq!(compared, 6 * 12 * 4 * 3);
    }
}
