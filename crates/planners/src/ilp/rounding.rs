//! Checkmate's LP relaxation with two-phase rounding (Jain et al., §5): round the relaxed
//! `S*` (deterministically at a sweep of thresholds, and randomly with `P[S = 1] = S*`),
//! then let [`Formulation::schedule_keeping`] compute what each stage needs. The caller
//! measures every candidate with the memory model and keeps the best.

use super::formulation::Formulation;
use remat_graph::random::SplitMix64;
use remat_graph::Schedule;

/// Thresholds of the deterministic sweep.
const THRESHOLDS: [f64; 9] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
/// Randomized roundings drawn per solve.
const RANDOM_DRAWS: usize = 24;

/// The rounded schedules of an LP solution, distinct, in a deterministic order.
pub(crate) fn candidates(f: &Formulation<'_>, lp_values: &[f64], seed: u64) -> Vec<Schedule> {
    let stored = f.stored(lp_values);
    let mut out: Vec<Schedule> = Vec::new();
    let mut push = |keep: Vec<Vec<bool>>| {
        let schedule = f.schedule_keeping(&keep);
        if !out.contains(&schedule) {
            out.push(schedule);
        }
    };
    for theta in THRESHOLDS {
        push(stored.iter().map(|row| row.iter().map(|&s| s >= theta).collect()).collect());
    }
    let mut rng = SplitMix64::new(seed);
    for _ in 0..RANDOM_DRAWS {
        push(stored.iter().map(|row| row.iter().map(|&s| unit(&mut rng) < s).collect()).collect());
    }
    out
}

/// A uniform number in `[0, 1)`.
fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}
