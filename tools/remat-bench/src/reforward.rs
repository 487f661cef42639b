//! Re-forwarding benchmarks: the Table 1 comparison and the Table 2 solver times of Feng &
//! Huang, on graph JSON files and generated networks.

use crate::{read_graph, svg, write_svg};
use remat_graph::training::{Architecture, ConvNet};
use remat_graph::units::Bytes;
use remat_graph::{simulate, Graph, NodeId};
use remat_planners::acg::ReforwardProblem;
use remat_planners::division::{Division, DivisionTree};
use remat_planners::step::ForwardPart;
use remat_planners::{plan_within_budget, strategy, PlannerOptions};
use std::path::PathBuf;
use std::time::Instant;

/// A graph by file name or generated network name.
pub fn load(name: &str) -> Result<(String, Graph), String> {
    if let Some(net) = ConvNet::named(name) {
        return Ok((name.to_string(), net.generate()));
    }
    let path = PathBuf::from(name);
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok((stem, read_graph(&path)?))
}

/// Counts of type-1, type-2 and type-3 nodes.
fn shape(tree: &DivisionTree) -> (usize, usize, usize) {
    let count = |f: fn(&Division) -> bool| tree.nodes.iter().filter(|n| f(&n.division)).count();
    (
        count(|d| matches!(d, Division::Series { .. })),
        count(|d| matches!(d, Division::Parallel)),
        count(|d| matches!(d, Division::Rigid { .. })),
    )
}

fn overhead(cost: f64, baseline: f64) -> String {
    format!("{:+.0}%", 100.0 * remat_graph::recompute_overhead(cost, baseline))
}

/// Table 1: per graph, Eqn. 1 for regular training (everything stored), Chen's √n and the
/// ACG optimum; then the simulated peak and overhead of each plan's schedule, the `acg`
/// strategy's final plan, and greedy held to that plan's peak.
pub fn table(names: &[String]) -> Result<(), String> {
    println!(
        "Re-forwarding (Feng & Huang): Eqn. 1 objective and the simulated step (peak bytes, recompute overhead)\n"
    );
    println!("| graph | forward vertices | tree (1/2/3) | solver s | Eqn. 1 regular | Eqn. 1 Chen √n | Eqn. 1 ACG | cut | none peak | Chen √n peak | ACG-optimum peak | acg plan peak | acg overhead | greedy at acg's peak |");
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let options = PlannerOptions::default();
    for name in names {
        let (label, graph) = load(name)?;
        let order = graph.topological_schedule();
        let baseline = simulate(&graph, &order).map_err(|e| e.to_string())?;
        let forward = ForwardPart::of(&graph, &order);
        let started = Instant::now();
        let problem = ReforwardProblem::new(&graph, &forward);
        let solver = problem.solver(false);
        let best = solver.sweep().best();
        let seconds = started.elapsed().as_secs_f64();
        let optimum = solver.plan_at(best.max_term);
        let chen = problem.chen_sqrt_n();
        let regular = problem.store_everything();
        let run = |plan| simulate(&graph, &problem.schedule(&graph, &order, plan)).map_err(|e| e.to_string());
        let (chen_sim, optimum_sim) = (run(&chen)?, run(&optimum)?);
        let acg =
            plan_within_budget(strategy("acg").unwrap(), &graph, &order, None, &options).map_err(|e| e.to_string())?;
        let greedy = match plan_within_budget(
            strategy("greedy").unwrap(),
            &graph,
            &order,
            Some(acg.simulation.peak_bytes),
            &options,
        ) {
            Ok(p) => format!("{} ({})", Bytes(p.simulation.peak_bytes), overhead(p.simulation.cost, baseline.cost)),
            Err(_) => "cannot".to_string(),
        };
        let (s1, s2, s3) = shape(&problem.tree);
        println!(
            "| {label} | {} | {s1}/{s2}/{s3} | {seconds:.3} | {} | {} | {} | {:.0}% | {} | {} ({}) | {} ({}) | {} | {} | {greedy} |",
            forward.nodes.len(),
            Bytes(regular),
            Bytes(problem.objective(&chen)),
            Bytes(best.objective),
            100.0 * (1.0 - best.objective as f64 / regular as f64),
            Bytes(baseline.peak_bytes),
            Bytes(chen_sim.peak_bytes),
            overhead(chen_sim.cost, baseline.cost),
            Bytes(optimum_sim.peak_bytes),
            overhead(optimum_sim.cost, baseline.cost),
            Bytes(acg.simulation.peak_bytes),
            overhead(acg.simulation.cost, baseline.cost),
        );
    }
    Ok(())
}

/// A generated network of `family` with about `vertices` forward vertices.
fn sized(family: Architecture, vertices: usize) -> ConvNet {
    match family {
        // Two vertices per layer.
        Architecture::Vgg => {
            let per = (vertices / 8).max(1);
            ConvNet::new(family, &[per; 4])
        }
        // Seven per basic block.
        Architecture::ResNet => {
            let per = (vertices / 28).max(1);
            ConvNet::new(family, &[per; 4])
        }
        // Dense blocks of 24 layers (four vertices each), as many as it takes.
        Architecture::DenseNet => {
            let blocks = (vertices / 100).max(1);
            ConvNet::new(family, &vec![24; blocks])
        }
    }
}

/// Table 2: solver time (division tree + max-term sweep) against forward vertices, and the
/// whole `acg` strategy (both assumptions, candidate schedules, simulation, polishing).
pub fn timing(sizes: &[usize], svg_path: Option<PathBuf>) -> Result<(), String> {
    println!("ACG solver time vs forward vertices (release build, one thread)\n");
    println!("| network | forward vertices | edges | tree (1/2/3) | division tree s | sweep s | max terms | Eqn. 1 cut | acg strategy s |");
    println!("|---|---:|---:|---|---:|---:|---:|---:|---:|");
    let mut series = Vec::new();
    let options = PlannerOptions::default();
    for (family, label) in
        [(Architecture::Vgg, "VGG"), (Architecture::ResNet, "ResNet"), (Architecture::DenseNet, "DenseNet")]
    {
        let mut points = Vec::new();
        for &size in sizes {
            let graph = sized(family, size).generate();
            let order: Vec<NodeId> = graph.topological_schedule();
            let forward = ForwardPart::of(&graph, &order);
            let edges: usize = forward
                .nodes
                .iter()
                .map(|&v| graph.preds(v).iter().filter(|p| forward.contains[p.index()]).count())
                .sum();
            let started = Instant::now();
            let problem = ReforwardProblem::new(&graph, &forward);
            let tree_seconds = started.elapsed().as_secs_f64();
            let started = Instant::now();
            let sweep = problem.solver(false).sweep();
            let sweep_seconds = started.elapsed().as_secs_f64();
            let regular = problem.store_everything();
            let plan = plan_within_budget(strategy("acg").unwrap(), &graph, &order, None, &options)
                .map_err(|e| e.to_string())?;
            let (s1, s2, s3) = shape(&problem.tree);
            println!(
                "| {label} | {} | {edges} | {s1}/{s2}/{s3} | {tree_seconds:.3} | {sweep_seconds:.3} | {} | {:.0}% | {:.2} |",
                forward.nodes.len(),
                sweep.points.len(),
                100.0 * (1.0 - sweep.best().objective as f64 / regular as f64),
                plan.plan_seconds
            );
            points.push((forward.nodes.len() as f64, tree_seconds + sweep_seconds));
        }
        series.push(svg::Series { name: format!("{label} (solver)"), points });
    }
    write_svg(svg_path, || {
        let axes = svg::Axes {
            title: "ACG solver time vs forward vertices",
            x_label: "forward vertices",
            y_label: "seconds",
            log_x: true,
            log_y: true,
        };
        svg::line_chart(&axes, &series)
    })
}
