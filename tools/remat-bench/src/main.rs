//! remat-bench: benchmarks of the planners. Each command prints a Markdown table (and, with
//! `--svg`, writes a plot); nothing here asserts. Graphs come from graph JSON
//! (`remat-opt STEP.mlir --emit=graph-json`) or from the feed-forward generator
//! (`remat_graph::training`).
//!
//! * `depth`: peak vs depth of generated training steps, with each strategy's log-log slope.
//! * `scale`: planning time vs graph size (generated residual networks).
//! * `tradeoff GRAPH`: the TWRemat(k) memory/length curve (Kumar et al. Figure 4).
//! * `compare GRAPH…`: peak reduction and recompute overhead, raw and polished, per strategy.
//! * `reforward GRAPH…`: Re-forwarding (ACG) beside none, greedy and Chen's √n checkpoints:
//!   Eqn. 1 objective, simulated peak and overhead (Feng & Huang Table 1). A GRAPH is a graph
//!   JSON file or a generated network's name (`vgg16`, `resnet34`, `densenet121`, …).
//! * `reforward-time`: ACG solver time vs forward vertices on generated networks (Table 2).
//! * `export-graph vgg|resnet|transformer|ffn|layered-dag`: a generated step or random layered DAG
//!   as Checkmate/Moccasin node-link JSON.
//! * `ilp GRAPH…`: the ILP's cost, status, proven gap and time beside every heuristic's cost
//!   at a list of budgets.
//! * `sweep INPUT…`: every strategy at a list of budgets over MLIR steps and graph JSON, with
//!   the measured CPU peak of the rewritten MLIR steps; JSON, CSV and Pareto charts.
//! * `planner-time`: planning seconds vs size (1k–100k nodes) on generated families.
//! * `report`: docs/benchmarks.md from what `sweep` and `planner-time` wrote.

mod chain;
mod child;
mod dtr;
mod families;
mod ilp;
mod planner_time;
mod reforward;
mod report;
mod sweep;

use clap::{Parser, Subcommand};
use remat_graph::training::FeedForward;
use remat_graph::units::Bytes;
use remat_graph::Graph;
use remat_planners::treedec::{EliminationHeuristic, TreeDecomposition};
use remat_planners::{plan_within_budget, strategy, PlannerOptions};
use remat_plot as svg;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "remat-bench", about = "Benchmarks of remat-opt's planners (tables and SVG plots)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Peak vs depth of generated feed-forward training steps, and its log-log slope.
    Depth {
        #[arg(long, value_delimiter = ',', default_value = "25,50,100,200,400")]
        depths: Vec<usize>,
        #[arg(long, value_delimiter = ',', default_value = "none,greedy,treewidth,pathwidth")]
        strategies: Vec<String>,
        /// Residual connections around every layer.
        #[arg(long)]
        residual: bool,
        /// Bytes of each weight (0: the peak is the activation memory a schedule controls;
        /// pinned weights add the same linear term to every strategy).
        #[arg(long, default_value_t = 0)]
        weight_bytes: u64,
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Planning time vs size on generated residual training steps.
    Scale {
        /// Target node counts.
        #[arg(long, value_delimiter = ',', default_value = "1000,2000,5000,10000,20000,50000")]
        sizes: Vec<usize>,
        #[arg(long, value_delimiter = ',', default_value = "greedy,treewidth")]
        strategies: Vec<String>,
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// The TWRemat(k) trade-off curve of a graph: peak and length for every k.
    Tradeoff {
        graph: PathBuf,
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Widths of each graph's decompositions: tree (both heuristics), path (greedy and
    /// topological orderings), and path after spine addition.
    Decompose { graphs: Vec<PathBuf> },
    /// Peak reduction and recompute overhead (raw and polished) per strategy and graph.
    /// Re-forwarding beside none, greedy and Chen's √n checkpoints (Feng & Huang Table 1).
    Reforward { graphs: Vec<String> },
    /// ACG solver time vs forward vertices on generated VGG, ResNet and DenseNet steps.
    ReforwardTime {
        /// Target forward vertex counts.
        #[arg(long, value_delimiter = ',', default_value = "100,250,500,1000,2500,5000")]
        sizes: Vec<usize>,
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// A generated VGG-, ResNet-, transformer-like or feed-forward training step, or a random
    /// layered DAG with long edges, as node-link graph JSON.
    ExportGraph {
        /// `vgg`, `resnet`, `transformer`, `ffn` or `layered-dag`.
        architecture: String,
        /// Layers (VGG) or blocks (ResNet) per stage; for `transformer`, the number of layers;
        /// for `ffn`, the depth; for `layered-dag`, the number of ops and the seed.
        #[arg(long, value_delimiter = ',', default_value = "1,1")]
        stages: Vec<usize>,
        #[arg(short = 'o')]
        output: PathBuf,
    },
    /// The chain DP on generated MLP steps: overhead with and without offloading.
    Chain {
        #[arg(long, value_delimiter = ',', default_value = "8,16")]
        depths: Vec<usize>,
        /// Budgets, as percentages of the store-everything peak.
        #[arg(long, value_delimiter = ',', default_value = "80,60,40")]
        budgets: Vec<f64>,
        /// Bandwidths β, in bytes per cost unit.
        #[arg(long, value_delimiter = ',', default_value = "0.1,0.4,1")]
        betas: Vec<f64>,
        /// Memory slots of the DP (default: the DP's).
        #[arg(long)]
        slots: Option<usize>,
    },
    /// DTR's Theorem 3.1 on the linear network: operations under a 2⌈√N⌉ budget.
    DtrTheorem {
        #[arg(long, value_delimiter = ',', default_value = "10,100,1000,10000")]
        sizes: Vec<usize>,
    },
    /// DTR's heuristics at falling budgets: compute overhead and metadata accesses.
    Dtr {
        /// Graph JSON files or generated network names (vgg16, resnet18, …).
        graphs: Vec<String>,
        /// Budgets, as percentages of the input order's peak.
        #[arg(long, value_delimiter = ',', default_value = "80,70,60,50,40,30")]
        budgets: Vec<f64>,
        /// Deallocation policy: eager, banish or ignore.
        #[arg(long, default_value = "eager")]
        dealloc: String,
    },
    /// The ILP beside every heuristic at each budget: cost, status, proven gap, time.
    Ilp {
        graphs: Vec<PathBuf>,
        /// Budgets, as percentages of the input order's peak.
        #[arg(long, value_delimiter = ',', default_value = "90,80,70")]
        budgets: Vec<f64>,
        #[arg(long, value_delimiter = ',', default_value = "greedy,treewidth,pathwidth,acg")]
        strategies: Vec<String>,
        /// The solver's time limit per solve, in seconds.
        #[arg(long, default_value_t = 60.0)]
        time_limit: f64,
    },
    /// Every strategy at every budget over MLIR steps and graph JSON files, each plan under a
    /// time limit; MLIR steps are also rewritten by remat-opt and run by remat-run.
    Sweep {
        /// MLIR steps (`.mlir`) and graph JSON files.
        inputs: Vec<PathBuf>,
        /// Budgets, as percentages of the input order's peak.
        #[arg(long, value_delimiter = ',', default_value = "100,80,60,50,40,30")]
        budgets: Vec<f64>,
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "none,greedy,treewidth,pathwidth,acg,dtr,chain,hierarchical,ilp"
        )]
        strategies: Vec<String>,
        /// Seconds each plan may take (the ILP's solver limit too).
        #[arg(long, default_value_t = 60.0)]
        time_limit: f64,
        /// The remat-opt binary (exports MLIR steps' graphs and rewrites them).
        #[arg(long, default_value = "target/release/remat-opt")]
        remat_opt: PathBuf,
        /// The remat-run binary; without it nothing is measured.
        #[arg(long)]
        remat_run: Option<PathBuf>,
        /// Measure every plan within its budget (default: the cheapest at each budget).
        #[arg(long)]
        measure_all: bool,
        /// Other frameworks' figures (alternatives.json): after the budgets, plan measured steps
        /// at every whole percent and measure the least-peak plan at each framework's overhead.
        #[arg(long)]
        alternatives: Option<PathBuf>,
        /// Strategies of that targeted stage.
        #[arg(long, value_delimiter = ',', default_value = "greedy,treewidth,pathwidth,acg,dtr,chain,hierarchical")]
        targeted_strategies: Vec<String>,
        /// Directory for sweep.json, sweep.csv and the charts.
        #[arg(long, default_value = "docs/benchmarks")]
        out: PathBuf,
    },
    /// Planning seconds vs graph size on generated FFN, ResNet-like, transformer-like and
    /// random layered steps.
    PlannerTime {
        #[arg(long, value_delimiter = ',', default_value = "ffn,resnet,transformer,random-layered")]
        families: Vec<String>,
        /// Target node counts.
        #[arg(long, value_delimiter = ',', default_value = "1000,2000,5000,10000,20000,50000,100000")]
        sizes: Vec<usize>,
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "greedy,treewidth,pathwidth,acg,dtr,chain,hierarchical,ilp"
        )]
        strategies: Vec<String>,
        /// The budget, in percent of the input order's peak.
        #[arg(long, default_value_t = 50.0)]
        percent: f64,
        /// Seconds each plan may take.
        #[arg(long, default_value_t = 60.0)]
        time_limit: f64,
        /// Time limits of particular strategies, as STRATEGY=SECONDS (e.g. treewidth=120).
        #[arg(long, value_delimiter = ',', value_parser = strategy_limit)]
        strategy_time_limit: Vec<(String, f64)>,
        #[arg(long, default_value = "docs/benchmarks")]
        out: PathBuf,
    },
    /// Writes docs/benchmarks.md from the files `sweep` and `planner-time` wrote (and the
    /// alternatives' and papers' figures beside them).
    Report {
        /// Where sweep.json, planner-time.json, alternatives.json and published.json are.
        #[arg(long, default_value = "docs/benchmarks")]
        dir: PathBuf,
        #[arg(short = 'o', default_value = "docs/benchmarks.md")]
        output: PathBuf,
        /// The commit the figures come from.
        #[arg(long)]
        commit: String,
        /// The machine they were measured on.
        #[arg(long)]
        machine: String,
        /// How long the whole regeneration took.
        #[arg(long)]
        minutes: Option<f64>,
        /// The commit of planner-time.json where it was measured again after the rest.
        #[arg(long)]
        planner_time_commit: Option<String>,
    },
    /// One plan, printed as JSON (the child process of `sweep` and `planner-time`).
    #[command(hide = true)]
    Plan {
        #[arg(long, conflicts_with = "family")]
        graph: Option<PathBuf>,
        #[arg(long, requires = "nodes")]
        family: Option<String>,
        #[arg(long)]
        nodes: Option<usize>,
        #[arg(long)]
        strategy: String,
        #[arg(long)]
        percent: f64,
        #[arg(long, default_value_t = 60.0)]
        time_limit: f64,
    },
    Compare {
        graphs: Vec<PathBuf>,
        #[arg(long, value_delimiter = ',', default_value = "greedy,treewidth,pathwidth")]
        strategies: Vec<String>,
        /// Plan within this percentage of the input order's peak (default: least memory).
        #[arg(long, value_name = "PERCENT")]
        budget: Option<f64>,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Depth { depths, strategies, residual, weight_bytes, svg } => {
            depth(&depths, &strategies, residual, weight_bytes, svg)
        }
        Command::Scale { sizes, strategies, svg } => scale(&sizes, &strategies, svg),
        Command::Tradeoff { graph, svg } => tradeoff(&graph, svg),
        Command::Decompose { graphs } => decompose(&graphs),
        Command::Compare { graphs, strategies, budget } => compare(&graphs, &strategies, budget),
        Command::Sweep {
            inputs,
            budgets,
            strategies,
            time_limit,
            remat_opt,
            remat_run,
            measure_all,
            alternatives,
            targeted_strategies,
            out,
        } => alternatives.as_deref().map(report::Alternatives::load).transpose().and_then(|alternatives| {
            let runner = sweep::Runner { remat_opt, remat_run, measure_all, alternatives, targeted_strategies };
            sweep::run(&inputs, &budgets, &strategies, time_limit, &runner, &out)
        }),
        Command::PlannerTime { families, sizes, strategies, percent, time_limit, strategy_time_limit, out } => {
            families.iter().map(|f| families::Family::from_name(f)).collect::<Result<Vec<_>, _>>().and_then(
                |families| {
                    planner_time::run(&families, &sizes, &strategies, percent, time_limit, &strategy_time_limit, &out)
                },
            )
        }
        Command::Report { dir, output, commit, machine, minutes, planner_time_commit } => {
            let provenance = report::Provenance {
                commit: &commit,
                machine: &machine,
                minutes,
                planner_time_commit: planner_time_commit.as_deref(),
            };
            report::write(&dir, &output, &provenance)
        }
        Command::Plan { graph, family, nodes, strategy, percent, time_limit } => {
            let source = match (graph, family, nodes) {
                (Some(path), None, _) => Ok(child::GraphSource::File(path)),
                (None, Some(family), Some(nodes)) => {
                    families::Family::from_name(&family).map(|f| child::GraphSource::Family(f, nodes))
                }
                _ => Err("plan needs --graph FILE or --family NAME --nodes N".to_string()),
            };
            source.and_then(|source| child::plan_and_print(&source, &strategy, percent, time_limit))
        }
        Command::Reforward { graphs } => reforward::table(&graphs),
        Command::ReforwardTime { sizes, svg } => reforward::timing(&sizes, svg),
        Command::ExportGraph { architecture, stages, output } => ilp::export(&architecture, &stages, &output),
        Command::Chain { depths, budgets, betas, slots } => chain::table(&depths, &budgets, &betas, slots),
        Command::DtrTheorem { sizes } => dtr::theorem(&sizes),
        Command::Dtr { graphs, budgets, dealloc } => match remat_planners::dtr::Dealloc::from_name(&dealloc) {
            Some(dealloc) => dtr::heuristics(&graphs, &budgets, dealloc),
            None => Err(format!("unknown dealloc policy '{dealloc}' (expected eager, banish or ignore)")),
        },
        Command::Ilp { graphs, budgets, strategies, time_limit } => {
            let mut options = PlannerOptions::default();
            options.ilp.time_limit = time_limit;
            ilp::table(&graphs, &budgets, &strategies, &options)
        }
    };
    if let Err(message) = result {
        eprintln!("remat-bench: error: {message}");
        std::process::exit(1);
    }
}

/// One strategy's plan of one graph, measured.
struct Measured {
    peak: u64,
    raw_peak: u64,
    cost: f64,
    raw_cost: f64,
    steps: usize,
    raw_steps: usize,
    baseline_peak: u64,
    baseline_cost: f64,
    ops: usize,
    seconds: f64,
}

fn measure(name: &str, graph: &Graph, options: &PlannerOptions) -> Result<Measured, String> {
    measure_within(name, graph, options, None)
}

fn measure_within(
    name: &str,
    graph: &Graph,
    options: &PlannerOptions,
    budget_percent: Option<f64>,
) -> Result<Measured, String> {
    let planner = strategy(name)
        .ok_or_else(|| format!("unknown strategy '{name}' (available: {})", remat_planners::strategy_names()))?;
    let order = graph.topological_schedule();
    let budget = match budget_percent {
        Some(p) => Some(
            (remat_graph::simulate(graph, &order).map_err(|e| e.to_string())?.peak_bytes as f64 * p / 100.0) as u64,
        ),
        None => None,
    };
    let plan = plan_within_budget(planner, graph, &order, budget, options).map_err(|e| e.to_string())?;
    Ok(Measured {
        peak: plan.simulation.peak_bytes,
        raw_peak: plan.raw.peak_bytes,
        cost: plan.simulation.cost,
        raw_cost: plan.raw.cost,
        steps: plan.simulation.step_bytes.len(),
        raw_steps: plan.raw.step_bytes.len(),
        baseline_peak: plan.baseline.peak_bytes,
        baseline_cost: plan.baseline.cost,
        ops: order.len(),
        seconds: plan.plan_seconds,
    })
}

/// `STRATEGY=SECONDS`.
fn strategy_limit(text: &str) -> Result<(String, f64), String> {
    let (strategy, seconds) = text.split_once('=').ok_or_else(|| format!("expected STRATEGY=SECONDS, got '{text}'"))?;
    match seconds.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok((strategy.to_string(), s)),
        _ => Err(format!("invalid seconds in '{text}'")),
    }
}

pub(crate) fn read_graph(path: &PathBuf) -> Result<Graph, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    remat_graph::json::read_graph(&text).map_err(|e| format!("{}: {e}", path.display()))
}

pub(crate) fn write_svg(path: Option<PathBuf>, document: impl FnOnce() -> String) -> Result<(), String> {
    if let Some(path) = path {
        std::fs::write(&path, document()).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("\nplot: {}", path.display());
    }
    Ok(())
}

/// Least-squares slope of ln(y) against ln(x).
fn log_log_slope(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
    let n = logs.len() as f64;
    let (mx, my) = (logs.iter().map(|p| p.0).sum::<f64>() / n, logs.iter().map(|p| p.1).sum::<f64>() / n);
    let covariance: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let variance: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    covariance / variance
}

fn depth(
    depths: &[usize],
    strategies: &[String],
    residual: bool,
    weight_bytes: u64,
    svg: Option<PathBuf>,
) -> Result<(), String> {
    let options = PlannerOptions::default();
    let kind = if residual { "residual" } else { "plain" };
    println!("Peak memory of generated {kind} feed-forward training steps (64 KiB activations, {weight_bytes}-byte weights), polished plans\n");
    print!("| depth | nodes |");
    for s in strategies {
        print!(" {s} peak | {s} overhead |");
    }
    println!();
    println!("|---:|---:|{}", "---:|---:|".repeat(strategies.len()));
    let mut series: Vec<svg::Series> =
        strategies.iter().map(|s| svg::Series { name: s.clone(), points: Vec::new() }).collect();
    for &d in depths {
        let graph =
            FeedForward { weight_bytes, ..if residual { FeedForward::residual(d) } else { FeedForward::mlp(d) } }
                .generate();
        print!("| {d} | {} |", graph.op_count());
        for (s, line) in strategies.iter().zip(&mut series) {
            let m = measure(s, &graph, &options)?;
            print!(" {} | {:+.1}% |", Bytes(m.peak), 100.0 * remat_graph::recompute_overhead(m.cost, m.baseline_cost));
            line.points.push((d as f64, m.peak as f64));
        }
        println!();
    }
    if depths.len() >= 2 {
        println!("\n| strategy | log-log slope of peak vs depth |\n|---|---:|");
        for line in &series {
            println!("| {} | {:.3} |", line.name, log_log_slope(&line.points));
        }
    }
    write_svg(svg, || {
        let axes = svg::Axes {
            title: &format!("Peak vs depth ({kind} feed-forward training step)"),
            x_label: "depth (layers)",
            y_label: "peak bytes",
            log_x: true,
            log_y: true,
        };
        svg::line_chart(&axes, &series)
    })
}

fn scale(sizes: &[usize], strategies: &[String], svg: Option<PathBuf>) -> Result<(), String> {
    let options = PlannerOptions::default();
    println!("Planning time on generated residual training steps (release build, one thread)\n");
    print!("| nodes |");
    for s in strategies {
        print!(" {s} seconds | {s} peak / none |");
    }
    println!();
    println!("|---:|{}", "---:|---:|".repeat(strategies.len()));
    let mut series: Vec<svg::Series> =
        strategies.iter().map(|s| svg::Series { name: s.clone(), points: Vec::new() }).collect();
    for &size in sizes {
        // A residual layer is 7 nodes (3 forward, 4 backward).
        let graph = FeedForward::residual((size / 7).max(1)).generate();
        let nodes = graph.op_count();
        print!("| {nodes} |");
        for (s, line) in strategies.iter().zip(&mut series) {
            let m = measure(s, &graph, &options)?;
            print!(" {:.3} | {:.3} |", m.seconds, m.peak as f64 / m.baseline_peak as f64);
            line.points.push((nodes as f64, m.seconds));
        }
        println!();
    }
    write_svg(svg, || {
        let axes = svg::Axes {
            title: "Planning time vs graph size",
            x_label: "nodes",
            y_label: "seconds",
            log_x: true,
            log_y: true,
        };
        svg::line_chart(&axes, &series)
    })
}

fn tradeoff(path: &PathBuf, svg: Option<PathBuf>) -> Result<(), String> {
    let graph = read_graph(path)?;
    println!("TWRemat(k) on {} ({} nodes): peak and schedule length (steps / ops)\n", path.display(), graph.op_count());
    println!("| heuristic | k | raw peak | raw length | polished peak | polished length | polished overhead |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut series = Vec::new();
    for heuristic in EliminationHeuristic::ALL {
        let mut td = TreeDecomposition::from_elimination(&graph, heuristic);
        td.compress();
        let mut raw_line = svg::Series { name: format!("{} raw", heuristic.name()), points: Vec::new() };
        let mut polished_line = svg::Series { name: format!("{} polished", heuristic.name()), points: Vec::new() };
        let mut k = 1;
        loop {
            let options =
                PlannerOptions { tw_stop: Some(k), td_heuristic: Some(heuristic), ..PlannerOptions::default() };
            let m = measure("treewidth", &graph, &options)?;
            let (raw_len, len) = (m.raw_steps as f64 / m.ops as f64, m.steps as f64 / m.ops as f64);
            println!(
                "| {} | {k} | {} | {raw_len:.2}× | {} | {len:.2}× | {:+.1}% |",
                heuristic.name(),
                Bytes(m.raw_peak),
                Bytes(m.peak),
                100.0 * remat_graph::recompute_overhead(m.cost, m.baseline_cost)
            );
            raw_line.points.push((raw_len, m.raw_peak as f64));
            polished_line.points.push((len, m.peak as f64));
            if k > td.len() {
                break;
            }
            k *= 2;
        }
        series.push(raw_line);
        series.push(polished_line);
    }
    write_svg(svg, || {
        let axes = svg::Axes {
            title: "TWRemat(k): memory vs schedule length",
            x_label: "schedule length / ops",
            y_label: "peak bytes",
            log_x: false,
            log_y: false,
        };
        svg::line_chart(&axes, &series)
    })
}

fn decompose(paths: &[PathBuf]) -> Result<(), String> {
    use remat_planners::pathdec::{add_spine, greedy_ordering, hamiltonian_path, PathDecomposition};
    println!("| graph | nodes | treewidth min-fill | treewidth min-degree | pathwidth greedy | pathwidth topological | with spine | spine edges added | intervals grown left |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for path in paths {
        let graph = read_graph(path)?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let tw: Vec<usize> =
            EliminationHeuristic::ALL.iter().map(|&h| TreeDecomposition::from_elimination(&graph, h).width()).collect();
        let base = graph.topological_schedule();
        let mut greedy = PathDecomposition::from_ordering(&graph, &greedy_ordering(&graph, &base));
        greedy.compress();
        let topological = PathDecomposition::from_ordering(&graph, &base);
        let mut narrow = if greedy.width() <= topological.width() { greedy.clone() } else { topological.clone() };
        let (spined, added, left) = match hamiltonian_path(&graph) {
            Some(_) => (narrow.width(), 0, 0),
            None => {
                let spine = add_spine(&graph, &mut narrow);
                (narrow.width(), spine.added.len(), spine.stretched_left)
            }
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {spined} | {added} | {left} |",
            graph.op_count(),
            tw[0],
            tw[1],
            greedy.width(),
            topological.width()
        );
    }
    Ok(())
}

fn compare(paths: &[PathBuf], strategies: &[String], budget: Option<f64>) -> Result<(), String> {
    let within = budget.map(|p| format!(", within {p}% of the input order's peak")).unwrap_or_default();
    println!("Peak reduction (none's peak / plan's peak), schedule length (steps / ops) and recompute overhead (cost), raw and polished{within}\n");
    println!("| graph | nodes | strategy | reduction raw | reduction polished | length raw | length polished | overhead raw | overhead polished | seconds |");
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for path in paths {
        let graph = read_graph(path)?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        for s in strategies {
            let m = match measure_within(s, &graph, &PlannerOptions::default(), budget) {
                Ok(m) => m,
                Err(e) => {
                    println!("| {name} | {} | {s} | {e} |||||||", graph.op_count());
                    continue;
                }
            };
            println!(
                "| {name} | {} | {s} | {:.2}× | {:.2}× | {:.2}× | {:.2}× | {:+.1}% | {:+.1}% | {:.2} |",
                m.ops,
                m.baseline_peak as f64 / m.raw_peak as f64,
                m.baseline_peak as f64 / m.peak as f64,
                m.raw_steps as f64 / m.ops as f64,
                m.steps as f64 / m.ops as f64,
                100.0 * remat_graph::recompute_overhead(m.raw_cost, m.baseline_cost),
                100.0 * remat_graph::recompute_overhead(m.cost, m.baseline_cost),
                m.seconds
            );
        }
    }
    Ok(())
}
