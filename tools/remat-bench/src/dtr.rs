//! DTR benchmarks (Kirisame et al.): Theorem 3.1 measured on the linear feed-forward network,
//! and the heuristics compared at falling budgets (the paper's Figure 2, as a table).

use crate::reforward::load;
use remat_graph::simulate;
use remat_graph::training::linear_network;
use remat_planners::dtr::{simulate_dtr, Dealloc, DtrOptions, Heuristic};
use std::time::Instant;

/// Theorem 3.1: operations DTR performs on the N-layer linear network (unit sizes and costs)
/// under a 2⌈√N⌉ budget, for h_{e*} (the theorem's heuristic) with banishing (its proof's
/// deallocation) and eager eviction, and for h_DTR and h_DTR^eq.
pub fn theorem(sizes: &[usize]) -> Result<(), String> {
    let runs = [
        (Heuristic::EStar, Dealloc::Banish),
        (Heuristic::EStar, Dealloc::Eager),
        (Heuristic::Dtr, Dealloc::Eager),
        (Heuristic::DtrEq, Dealloc::Eager),
    ];
    println!("Theorem 3.1: operations (forward + backward + rematerializations) on the N-layer linear network, budget B = 2⌈√N⌉\n");
    let header: Vec<String> = runs.iter().map(|(h, d)| format!("{} / {} ops (÷N)", h.name(), d.name())).collect();
    println!("| N | B | baseline ops | {} | ≤ 3N | seconds |", header.join(" | "));
    println!("|---:|---:|---:|{}---|---:|", "---:|".repeat(runs.len()));
    for &n in sizes {
        let graph = linear_network(n);
        let order = graph.topological_schedule();
        let budget = 2 * (n as f64).sqrt().ceil() as u64;
        let started = Instant::now();
        let mut cells = Vec::new();
        let mut within = Vec::new();
        for (heuristic, dealloc) in runs {
            match simulate_dtr(&graph, &order, budget, &DtrOptions { heuristic, dealloc, seed: 0 }) {
                Ok((_, stats)) => {
                    cells.push(format!("{} ({:.2})", stats.operations, stats.operations as f64 / n as f64));
                    within.push(if stats.operations <= 3 * n { "yes" } else { "no" });
                }
                Err(_) => {
                    cells.push("out of memory".into());
                    within.push("no");
                }
            }
        }
        println!(
            "| {n} | {budget} | {} | {} | {} | {:.2} |",
            order.len(),
            cells.join(" | "),
            within.join("/"),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Per graph and budget (percentages of the input order's peak): each heuristic's compute
/// overhead (executed cost / the input order's − 1), or OOM, and its metadata accesses.
pub fn heuristics(names: &[String], budgets: &[f64], dealloc: Dealloc) -> Result<(), String> {
    println!(
        "DTR heuristics, dealloc {}: compute overhead of the simulated run (metadata accesses in thousands)\n",
        dealloc.name()
    );
    let names_row: Vec<&str> = Heuristic::ALL.iter().map(|h| h.name()).collect();
    println!("| graph | budget | {} |", names_row.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(names_row.len()));
    for name in names {
        let (label, graph) = load(name)?;
        let order = graph.topological_schedule();
        let baseline = simulate(&graph, &order).map_err(|e| e.to_string())?;
        for &percent in budgets {
            let budget = (baseline.peak_bytes as f64 * percent / 100.0) as u64;
            let cells: Vec<String> = Heuristic::ALL
                .iter()
                .map(|&heuristic| {
                    match simulate_dtr(&graph, &order, budget, &DtrOptions { heuristic, dealloc, seed: 0 }) {
                        Ok((schedule, stats)) => {
                            let cost: f64 = schedule.iter().map(|&n| graph.node(n).cost).sum();
                            format!(
                                "{:+.1}% ({:.0}k)",
                                100.0 * remat_graph::recompute_overhead(cost, baseline.cost),
                                stats.metadata_accesses as f64 / 1000.0
                            )
                        }
                        Err(_) => "OOM".into(),
                    }
                })
                .collect();
            println!("| {label} | {percent:.0}% | {} |", cells.join(" | "));
        }
    }
    Ok(())
}
