//! One plan in a child process, so a planner that runs past its time limit can be stopped.
//!
//! Planners are plain functions with no cancellation points, so the benchmarks run each one
//! as `remat-bench plan …` (this same binary) and kill it at the limit. The child prints one
//! JSON object, a [`PlanOutcome`].

use crate::families::Family;
use remat_planners::ilp::{Certificate, SolveStatus};
use remat_planners::{measure_plan, strategy, FallbackCause, NoPlanCause, PlanError, PlannerOptions, StopReason};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where the child's graph comes from.
#[derive(Clone, Debug)]
pub enum GraphSource {
    /// A graph JSON file, or a generated network's name (`vgg16`, `resnet18`, …).
    File(PathBuf),
    /// A generated family at (about) this many nodes.
    Family(Family, usize),
}

/// What one planner run measured (`peak` and `cost` absent when the strategy has no plan).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PlanOutcome {
    /// Ops of the graph.
    pub nodes: usize,
    /// Peak and cost of the input order.
    pub baseline_peak: u64,
    pub baseline_cost: f64,
    /// The budget asked for.
    pub budget_bytes: u64,
    /// The polished plan's simulated peak and cost.
    pub peak: Option<u64>,
    pub cost: Option<f64>,
    /// Schedule steps of the plan.
    pub steps: Option<usize>,
    /// Whether the plan is within the budget.
    pub fits: bool,
    /// Planner seconds (planning and polishing; not loading the graph).
    pub seconds: f64,
    /// Why there is no plan: the planner's error, "timed out", or how the child failed.
    pub note: Option<String>,
    /// Why the planner stopped, when it planned (`StopReason::name`).
    #[serde(default)]
    pub stop: Option<String>,
    /// Whether the planner ran out of its own time: it stopped at a time limit without a plan
    /// within the budget, or gave no plan because of one.
    #[serde(default)]
    pub out_of_time: bool,
    /// The ILP's certificate: how its solve ended, over which class of schedules, and the
    /// proven lower bound on the cost of any schedule of that class within the budget.
    pub ilp_status: Option<String>,
    pub ilp_class: Option<String>,
    pub ilp_cost_bound: Option<f64>,
}

impl PlanOutcome {
    /// `cost / baseline cost − 1`, when there is a plan.
    pub fn overhead(&self) -> Option<f64> {
        self.cost.map(|c| remat_graph::recompute_overhead(c, self.baseline_cost))
    }

    /// Whether the planner ran out of time: the child was stopped at its limit, or the
    /// planner stopped at its own limit (`out_of_time`).
    pub fn timed_out(&self) -> bool {
        self.out_of_time || self.note.as_deref() == Some(TIMED_OUT)
    }
}

const TIMED_OUT: &str = "timed out";

/// The child: plans `source` with `strategy_name` at `percent` of the input order's peak and
/// prints the outcome as JSON. The ILP gets `time_limit` seconds of solver time.
pub fn plan_and_print(source: &GraphSource, strategy_name: &str, percent: f64, time_limit: f64) -> Result<(), String> {
    let graph = match source {
        GraphSource::File(path) => crate::reforward::load(&path.to_string_lossy())?.1,
        GraphSource::Family(family, nodes) => family.with_nodes(*nodes),
    };
    let planner = strategy(strategy_name).ok_or_else(|| {
        format!("unknown strategy '{strategy_name}' (available: {})", remat_planners::strategy_names())
    })?;
    let order = graph.topological_schedule();
    let baseline = remat_graph::simulate(&graph, &order).map_err(|e| e.to_string())?;
    let budget = remat_graph::units::Budget::PercentOfBaseline(percent).resolve(baseline.peak_bytes);
    let mut options = PlannerOptions::default();
    options.ilp.time_limit = time_limit;
    options.auto_time_limit = time_limit;
    let mut outcome = PlanOutcome {
        nodes: graph.op_count(),
        baseline_peak: baseline.peak_bytes,
        baseline_cost: baseline.cost,
        budget_bytes: budget,
        ..Default::default()
    };
    let started = Instant::now();
    match measure_plan(planner, &graph, &order, Some(budget), &options) {
        Ok(plan) => {
            outcome.peak = Some(plan.simulation.peak_bytes);
            outcome.cost = Some(plan.simulation.cost);
            outcome.steps = Some(plan.simulation.step_bytes.len());
            outcome.fits = plan.simulation.peak_bytes <= budget;
            outcome.seconds = plan.plan_seconds;
            outcome.stop = Some(plan.details.stop.name().to_string());
            let at_limit = matches!(plan.details.stop, StopReason::TimeLimit { .. })
                || matches!(plan.details.stop, StopReason::Fallback { cause: FallbackCause::TimeLimit, .. });
            if !outcome.fits && (at_limit || outcome.seconds >= 0.95 * time_limit) {
                // An incumbent at the limit: the plan is kept, but the strategy is out of time.
                outcome.note = Some(format!("ran to the time limit ({time_limit} s) without a plan within the budget"));
                outcome.out_of_time = true;
            }
            if let Some(c) = plan.details.facts::<Certificate>() {
                outcome.ilp_status = Some(
                    match c.status {
                        SolveStatus::Optimal => "optimal",
                        SolveStatus::TimeLimit | SolveStatus::Fallback(..) => "timelimit",
                        SolveStatus::Rounded => "rounded",
                    }
                    .to_string(),
                );
                outcome.ilp_class = Some(c.class.clone());
                outcome.ilp_cost_bound = Some(c.dual_bound);
            }
        }
        Err(e) => {
            outcome.seconds = started.elapsed().as_secs_f64();
            outcome.out_of_time = matches!(
                e,
                PlanError::NoPlan {
                    why: NoPlanCause::TimeLimit(_)
                        | NoPlanCause::TimeLimitWithinBudget(_)
                        | NoPlanCause::RelaxationTimeLimit(_),
                    ..
                }
            );
            outcome.note = Some(e.to_string());
        }
    }
    println!("{}", serde_json::to_string(&outcome).expect("plain data serializes"));
    Ok(())
}

/// Runs the child for one plan and waits at most `limit` (plus a second for loading the
/// graph); a child past that is killed and reported as timed out.
pub fn run_plan(source: &GraphSource, strategy_name: &str, percent: f64, limit: f64) -> PlanOutcome {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return failed(format!("cannot find remat-bench itself: {e}")),
    };
    let mut command = Command::new(exe);
    command
        .arg("plan")
        .arg("--strategy")
        .arg(strategy_name)
        .arg("--percent")
        .arg(percent.to_string())
        .arg("--time-limit")
        .arg(limit.to_string());
    match source {
        GraphSource::File(path) => command.arg("--graph").arg(path),
        GraphSource::Family(family, nodes) => {
            command.arg("--family").arg(family.name()).arg("--nodes").arg(nodes.to_string())
        }
    };
    match run_with_limit(&mut command, limit + 1.0) {
        Ok(Some(stdout)) => serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| failed(format!("unreadable child output ({e}): {}", stdout.trim()))),
        Ok(None) => PlanOutcome { note: Some(TIMED_OUT.into()), seconds: limit, ..Default::default() },
        Err(e) => failed(e),
    }
}

fn failed(note: String) -> PlanOutcome {
    PlanOutcome { note: Some(note), ..Default::default() }
}

/// Runs `command` to completion within `seconds`: its stdout, `None` when it was killed at the
/// limit, or an error naming its exit status and the start of its stderr.
pub fn run_with_limit(command: &mut Command, seconds: f64) -> Result<Option<String>, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
    // Drain both pipes on threads so a chatty child never blocks on a full pipe.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
    match status {
        None => Ok(None),
        Some(status) if status.success() => Ok(Some(stdout)),
        Some(status) => Err(format!("{status}: {}", stderr.lines().next().unwrap_or("").trim())),
    }
}
