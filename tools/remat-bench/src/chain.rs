//! The chain DP of Beaumont et al. (NeurIPS 2021) on chain-shaped steps: the recompute
//! overhead with and without offloading at each budget and bandwidth.

use remat_graph::training::FeedForward;
use remat_planners::chain::dp;
use remat_planners::chain::planner::ChainView;
use std::time::Instant;

/// Per depth, budget (percent of the chain's store-everything peak) and β (bytes per cost
/// unit): the makespan overhead over one forward and one backward without remat, for
/// rematerialization only and with offloading, and the share of the overhead offloading removes.
pub fn table(depths: &[usize], budgets: &[f64], betas: &[f64], slots: Option<usize>) -> Result<(), String> {
    println!("Chain DP (Beaumont et al. 2021): makespan overhead, rematerialization only vs with offloading\n");
    println!("| network | stages | budget | β (B/unit) | remat only | with offloading | overhead removed | seconds |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for &depth in depths {
        let graph = FeedForward::mlp(depth).generate();
        let order = graph.topological_schedule();
        let view = ChainView::of(&graph, &order);
        let chain = &view.chain;
        let ideal: f64 = chain.stages.iter().map(|s| s.u_f + s.u_b).sum::<f64>() + chain.loss.u_f + chain.loss.u_b;
        // The least budget under which storing everything (F_all everywhere) still fits.
        let all = store_all_peak(chain);
        for &percent in budgets {
            let budget = (all as f64 * percent / 100.0) as u64;
            for &beta in betas {
                let started = Instant::now();
                let remat = dp::solve_remat_only(chain, budget, slots);
                let offload = dp::solve(chain, budget, Some(beta), slots);
                let seconds = started.elapsed().as_secs_f64();
                let over = |m: f64| 100.0 * (m / ideal - 1.0);
                let cell = |p: &Option<remat_planners::chain::ChainSchedule>| {
                    p.as_ref().map(|p| format!("{:+.1}%", over(p.makespan))).unwrap_or_else(|| "infeasible".into())
                };
                let removed = match (&remat, &offload) {
                    (Some(r), Some(o)) if r.makespan > ideal => {
                        format!("{:.0}%", 100.0 * (r.makespan - o.makespan) / (r.makespan - ideal))
                    }
                    _ => "–".into(),
                };
                println!(
                    "| mlp({depth}) | {} | {percent:.0}% | {beta} | {} | {} | {removed} | {seconds:.2} |",
                    chain.len(),
                    cell(&remat),
                    cell(&offload)
                );
            }
        }
    }
    Ok(())
}

/// Peak of the store-everything schedule, by bisection on the DP (the least budget at which
/// the rematerialization-only optimum has no overhead).
fn store_all_peak(chain: &remat_planners::chain::Chain) -> u64 {
    let ideal: f64 = chain.stages.iter().map(|s| s.u_f + s.u_b).sum::<f64>() + chain.loss.u_f + chain.loss.u_b;
    let total: u64 = chain.stages.iter().map(|s| s.a_bar + s.delta + s.of + s.ob).sum::<u64>()
        + chain.loss.a_bar
        + chain.loss.ob
        + chain.a0;
    let no_overhead =
        |b: u64| dp::solve_remat_only(chain, b, None).is_some_and(|p| p.makespan <= ideal * (1.0 + 1e-12));
    let (mut low, mut high) = (0u64, total.max(1));
    while low < high {
        let mid = low + (high - low) / 2;
        if no_overhead(mid) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    high
}
