//! ILP benchmarks: generated VGG- and ResNet-like steps written as Checkmate/Moccasin
//! node-link graph JSON, and the ILP beside every heuristic at a list of budgets (cost,
//! status, proven gap and solve time).

use crate::read_graph;
use remat_graph::random::RandomLayeredDag;
use remat_graph::training::{Architecture, ConvNet, FeedForward, Transformer};
use remat_graph::{simulate, Graph};
use remat_planners::ilp::SolveStatus;
use remat_planners::{measure_plan, strategy, PlannerOptions};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Writes a small generated CNN step (`vgg` or `resnet`, with `stages` layers or blocks per
/// stage) as node-link graph JSON: the format of the Checkmate and Moccasin benchmark graphs.
pub fn export(architecture: &str, stages: &[usize], output: &Path) -> Result<(), String> {
    let (graph, name) = match architecture {
        "vgg" | "resnet" => {
            let kind = if architecture == "vgg" { Architecture::Vgg } else { Architecture::ResNet };
            (ConvNet::new(kind, stages).generate(), format!("{kind:?}{stages:?}").to_lowercase())
        }
        "transformer" => {
            let layers = stages.first().copied().unwrap_or(1);
            (Transformer::new(layers).generate(), format!("transformer{layers}"))
        }
        "ffn" => {
            let depth = stages.first().copied().unwrap_or(1);
            (FeedForward::mlp(depth).generate(), format!("ffn{depth}"))
        }
        "layered-dag" => {
            let ops = stages.first().copied().unwrap_or(1000);
            let seed = stages.get(1).copied().unwrap_or(0) as u64;
            (RandomLayeredDag::new(ops).generate(seed), format!("layered-dag{ops}-seed{seed}"))
        }
        other => {
            return Err(format!(
                "unknown architecture '{other}' (available: vgg, resnet, transformer, ffn, layered-dag)"
            ))
        }
    };
    let text = remat_graph::json::write_graph(
        &graph,
        &[("name", json!(name)), ("generator", json!("remat-bench export-graph"))],
    );
    std::fs::write(output, text).map_err(|e| format!("{}: {e}", output.display()))?;
    println!("{}: {} nodes ({} ops)", output.display(), graph.len(), graph.op_count());
    Ok(())
}

/// Per graph and budget: the ILP's cost, status, gap and time beside each heuristic's cost.
pub fn table(
    graphs: &[PathBuf],
    percents: &[f64],
    heuristics: &[String],
    options: &PlannerOptions,
) -> Result<(), String> {
    print!("| graph | ops | budget | ilp formulation | ilp status | ilp cost | gap | LP bound | ilp s |");
    for h in heuristics {
        print!(" {h} cost |");
    }
    println!(" ilp ≤ all |");
    println!("|---|---:|---:|---|---|---:|---:|---:|---:|{}---|", "---:|".repeat(heuristics.len()));
    for path in graphs {
        let graph: Graph = read_graph(path)?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let order = graph.topological_schedule();
        let baseline = simulate(&graph, &order).map_err(|e| e.to_string())?;
        for &percent in percents {
            let budget = (baseline.peak_bytes as f64 * percent / 100.0) as u64;
            let ilp = match measure_plan(strategy("ilp").unwrap(), &graph, &order, Some(budget), options) {
                Ok(plan) => plan,
                Err(e) => {
                    println!(
                        "| {name} | {} | {percent:.0}% | — | failed: {e} |{}",
                        graph.op_count(),
                        " |".repeat(5 + heuristics.len())
                    );
                    continue;
                }
            };
            let certificate =
                ilp.details.facts::<remat_planners::ilp::Certificate>().ok_or("the ilp returned no certificate")?;
            let fits = ilp.simulation.peak_bytes <= budget;
            let cost = |c: f64| format!("{:.4e}", c);
            let status = match certificate.status {
                SolveStatus::Optimal => "optimal",
                SolveStatus::TimeLimit | SolveStatus::Fallback(..) => "time limit",
                SolveStatus::Rounded => "rounded",
            };
            print!(
                "| {name} | {} | {percent:.0}% | {} | {} | {} | {} | {} | {:.1} |",
                graph.op_count(),
                certificate.formulation,
                if fits {
                    status.to_string()
                } else {
                    format!(
                        "{status}, over budget ({}% least)",
                        100 * ilp.simulation.peak_bytes / baseline.peak_bytes.max(1)
                    )
                },
                if fits { cost(ilp.simulation.cost) } else { "—".into() },
                if fits { format!("{:.2}%", 100.0 * certificate.gap) } else { "—".into() },
                certificate.lp_bound.map(cost).unwrap_or_else(|| "—".into()),
                ilp.plan_seconds
            );
            let mut all = true;
            for h in heuristics {
                let planner = strategy(h).ok_or_else(|| format!("unknown strategy '{h}'"))?;
                let plan = measure_plan(planner, &graph, &order, Some(budget), options).map_err(|e| e.to_string())?;
                if plan.simulation.peak_bytes <= budget {
                    print!(" {} |", cost(plan.simulation.cost));
                    all &= fits && ilp.simulation.cost <= plan.simulation.cost + 1e-9 * plan.simulation.cost.abs();
                } else {
                    print!(" over |");
                }
            }
            println!(" {} |", if all { "yes" } else { "NO" });
        }
    }
    Ok(())
}
