//! `remat-bench sweep`: every strategy over MLIR examples and graph JSON files at a list of
//! budgets, each plan under a time limit; for MLIR steps that run on the CPU, the peak that
//! `remat-run` measures for the step remat-opt rewrote with the same strategy and budget.
//! Writes `sweep.json`, `sweep.csv` and one Pareto chart per model (`pareto-MODEL.svg`).
//!
//! With the other frameworks' figures (`alternatives.json`), a second, targeted stage follows
//! the budgets for each measured step: the fast strategies are planned at every whole percent
//! between the sweep's budgets, and for each framework's overhead the least-peak plan that costs
//! no more is measured. The coarse budgets alone answer "which plan at 60 %?", not "how little
//! memory at XLA's +22 %?", which is the question a user comparing with `jax.checkpoint` asks.

use crate::child::{run_plan, run_with_limit, GraphSource, PlanOutcome};
use crate::report::Alternatives;
use remat_planners::compare_plans;
use remat_plot as svg;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One strategy at one budget on one model.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepRow {
    /// The input's file name without its extension (`transformer.linalg`), or the generated
    /// network's name.
    pub model: String,
    pub strategy: String,
    /// The budget, in percent of the input order's peak.
    pub percent: f64,
    #[serde(flatten)]
    pub plan: PlanOutcome,
    /// What remat-opt's report planned for the step it rewrote (MLIR inputs).
    pub planned_by_remat_opt: Option<u64>,
    /// The peak remat-run measured running that step on the CPU.
    pub measured_peak: Option<u64>,
    /// Whether that run's outputs were bit-identical to the input step's (remat-run
    /// `--compare-with` the input: for an MLIR step fused by default, the unfused original).
    #[serde(default)]
    pub outputs_match: Option<bool>,
    /// Why there is no measurement.
    pub measure_note: Option<String>,
    /// Planned by the targeted stage (at a whole percent between the sweep's budgets), not at
    /// one of the sweep's budgets.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub targeted: bool,
}

impl SweepRow {
    /// A plan, before anything is measured.
    fn unmeasured(model: &str, strategy: &str, percent: f64, plan: PlanOutcome, targeted: bool) -> Self {
        SweepRow {
            model: model.to_string(),
            strategy: strategy.to_string(),
            percent,
            plan,
            planned_by_remat_opt: None,
            measured_peak: None,
            outputs_match: None,
            measure_note: None,
            targeted,
        }
    }
}

/// Everything a sweep recorded (`sweep.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepDoc {
    pub budgets: Vec<f64>,
    pub strategies: Vec<String>,
    /// Seconds each plan was allowed.
    pub time_limit: f64,
    /// Strategies of the targeted stage (none when it did not run).
    #[serde(default)]
    pub targeted_strategies: Vec<String>,
    pub rows: Vec<SweepRow>,
    /// The certificate at each model's budgets (`remat_planners::cost_bound`).
    #[serde(default)]
    pub bounds: Vec<BoundRow>,
}

/// The proven least recomputation of any schedule of a model within a budget.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BoundRow {
    pub model: String,
    /// The budget, in percent of the input order's peak.
    pub percent: f64,
    /// `proven`, or `infeasible` when no schedule fits.
    pub status: String,
    /// The least `recompute_overhead` of any schedule within the budget.
    pub overhead: f64,
    pub seconds: f64,
}

/// The tools that turn an MLIR step into a measured run.
pub struct Runner {
    pub remat_opt: PathBuf,
    pub remat_run: Option<PathBuf>,
    /// Measure every plan within its budget, not only the cheapest at each budget.
    pub measure_all: bool,
    /// The other frameworks' figures whose overheads the targeted stage aims at.
    pub alternatives: Option<Alternatives>,
    /// The strategies the targeted stage plans with (fast ones: it plans at every percent).
    pub targeted_strategies: Vec<String>,
}

/// The lowest budget the targeted stage tries, in percent.
const TARGETED_FLOOR: u32 = 10;

/// The best plan within its budget by [`remat_planners::compare_plans`] (the cheapest, then the
/// lower peak; the first of equals): the one a user would take at that budget.
pub(crate) fn cheapest_fit<'a>(rows: impl IntoIterator<Item = &'a SweepRow>) -> Option<&'a SweepRow> {
    let mut best: Option<(&SweepRow, (u64, f64))> = None;
    for row in rows {
        let plan = &row.plan;
        if let (true, Some(peak), Some(cost)) = (plan.fits, plan.peak, plan.cost) {
            let better = |b: &(u64, f64)| compare_plans((peak, cost), *b, Some(plan.budget_bytes)).is_lt();
            if best.as_ref().is_none_or(|(_, b)| better(b)) {
                best = Some((row, (peak, cost)));
            }
        }
    }
    best.map(|(row, _)| row)
}

pub fn run(
    inputs: &[PathBuf],
    budgets: &[f64],
    strategies: &[String],
    time_limit: f64,
    runner: &Runner,
    out: &Path,
) -> Result<(), String> {
    distinct_models(inputs)?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let scratch = std::env::temp_dir().join(format!("remat-bench-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let targeted_strategies =
        if runner.alternatives.is_some() { runner.targeted_strategies.clone() } else { Vec::new() };
    let mut doc = SweepDoc {
        budgets: budgets.to_vec(),
        strategies: strategies.to_vec(),
        time_limit,
        targeted_strategies,
        rows: Vec::new(),
        bounds: Vec::new(),
    };
    for input in inputs {
        let model = model_name(input);
        let is_mlir = input.extension().is_some_and(|e| e == "mlir");
        // Anything else is graph JSON or a generated network's name, which the child loads.
        let graph = if is_mlir {
            let json = scratch.join(format!("{model}.json"));
            let mut export = Command::new(&runner.remat_opt);
            export.arg(input).arg("--remat=none").arg("--emit=graph-json").arg("-o").arg(&json);
            run_with_limit(&mut export, 600.0)?
                .ok_or_else(|| format!("{}: exporting the graph timed out", input.display()))?;
            json
        } else {
            input.clone()
        };
        let mut measurer = if is_mlir {
            runner.remat_run.as_ref().map(|run| Measurer::new(&runner.remat_opt, run, input, &scratch, time_limit))
        } else {
            None
        };
        // The certificate runs here, not in a child: it is one function of the graph, and
        // stops at the time limit itself.
        let certified = crate::reforward::load(&graph.to_string_lossy()).map(|(_, g)| {
            let order = g.topological_schedule();
            let baseline_peak = remat_graph::simulate(&g, &order).map_or(0, |s| s.peak_bytes);
            (g, order, baseline_peak)
        });
        let mut out_of_time: Vec<&str> = Vec::new();
        for &percent in budgets {
            if let Ok((g, order, baseline_peak)) = &certified {
                let budget = remat_graph::units::Budget::PercentOfBaseline(percent).resolve(*baseline_peak);
                let deadline = remat_planners::Deadline::after(time_limit);
                let bound = remat_planners::cost_bound::recompute_lower_bound(g, order, budget, deadline);
                eprintln!(
                    "sweep: {model} certificate {percent}%: {} +{:.2}%",
                    bound.status.name(),
                    100.0 * bound.overhead
                );
                doc.bounds.push(BoundRow {
                    model: model.clone(),
                    percent,
                    status: bound.status.name().to_string(),
                    overhead: bound.overhead,
                    seconds: bound.seconds,
                });
            }
            let first = doc.rows.len();
            for s in strategies {
                // A strategy out of time at one budget is not run at the next (smaller, and
                // usually harder) ones.
                let plan = if out_of_time.contains(&s.as_str()) {
                    PlanOutcome { note: Some("not run: out of time at a larger budget".into()), ..Default::default() }
                } else {
                    run_plan(&GraphSource::File(graph.clone()), s, percent, time_limit)
                };
                if plan.timed_out() {
                    out_of_time.push(s);
                }
                doc.rows.push(SweepRow::unmeasured(&model, s, percent, plan, false));
            }
            let rows = &mut doc.rows[first..];
            if let Some(m) = &mut measurer {
                // Strategies are distinct within a budget, so the name identifies the row.
                let chosen =
                    if runner.measure_all { None } else { cheapest_fit(rows.iter()).map(|r| r.strategy.clone()) };
                for row in rows.iter_mut() {
                    if !row.plan.fits {
                        row.measure_note = Some("no plan within the budget".into());
                    } else if runner.measure_all || chosen.as_ref() == Some(&row.strategy) {
                        m.measure(row);
                    } else {
                        row.measure_note = Some("not the cheapest plan within the budget".into());
                    }
                }
            }
            for row in rows.iter() {
                eprintln!("sweep: {model} {} {percent}%: {}", row.strategy, describe(row));
            }
        }
        let targets = runner.alternatives.as_ref().map(|a| target_overheads(a, &model)).unwrap_or_default();
        if let (Some(m), false) = (&mut measurer, targets.is_empty()) {
            let first = doc.rows.len();
            let searched = targeted_search(&graph, &model, &doc.targeted_strategies, budgets, &targets, time_limit);
            doc.rows.extend(searched);
            measure_targets(m, &mut doc.rows, &model, &targets);
            for row in &doc.rows[first..] {
                eprintln!("sweep: {model} {} {}% (targeted): {}", row.strategy, row.percent, describe(row));
            }
        }
        write(&out.join(format!("pareto-{model}.svg")), &pareto_svg(&doc, &model))?;
        // After every model, so a long sweep shows its progress and keeps what it measured.
        let mut json = serde_json::to_string_pretty(&doc).expect("plain data serializes");
        json.push('\n');
        write(&out.join("sweep.json"), &json)?;
        write(&out.join("sweep.csv"), &to_csv(&doc))?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// The overheads the other frameworks paid on `model` (its name without `.linalg`), by their
/// own count and by our cost model's ([`crate::report::Alternative::target_overheads`]);
/// ascending, distinct.
fn target_overheads(alternatives: &Alternatives, model: &str) -> Vec<f64> {
    let name = model.strip_suffix(".linalg").unwrap_or(model);
    let mut targets: Vec<f64> =
        alternatives.rows.iter().filter(|a| a.model == name).flat_map(|a| a.target_overheads()).collect();
    targets.sort_by(f64::total_cmp);
    targets.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    targets
}

/// Plans with each strategy at every whole percent from 99 down to [`TARGETED_FLOOR`] that is
/// not one of the sweep's budgets, and keeps the plans within their budget whose overhead is
/// within the largest target. A strategy stops after three budgets in a row that it misses or
/// that cost more than twice the largest target (lower budgets only cost more), or at its
/// time limit.
fn targeted_search(
    graph: &Path,
    model: &str,
    strategies: &[String],
    budgets: &[f64],
    targets: &[f64],
    time_limit: f64,
) -> Vec<SweepRow> {
    let largest = targets.last().copied().unwrap_or(0.0);
    let mut rows = Vec::new();
    for s in strategies {
        let mut useless_in_a_row = 0;
        for percent in (TARGETED_FLOOR..100).rev().map(f64::from) {
            if budgets.contains(&percent) {
                continue;
            }
            let plan = run_plan(&GraphSource::File(graph.to_path_buf()), s, percent, time_limit);
            if plan.timed_out() {
                break;
            }
            let overhead = plan.overhead().filter(|_| plan.fits);
            if overhead.is_none_or(|o| o > 2.0 * largest + 0.05) {
                useless_in_a_row += 1;
                if useless_in_a_row == 3 {
                    break;
                }
            } else {
                useless_in_a_row = 0;
            }
            if overhead.is_some_and(|o| o <= largest + 1e-9) {
                rows.push(SweepRow::unmeasured(model, s, percent, plan, true));
            }
        }
    }
    rows
}

/// For each target overhead, measures `model`'s least-peak plan within its budget that costs
/// at most the target (the lower cost among equal peaks), unless it was measured already.
fn measure_targets(measurer: &mut Measurer, rows: &mut [SweepRow], model: &str, targets: &[f64]) {
    for &target in targets {
        let best = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.model == model && r.plan.fits)
            .filter_map(|(i, r)| {
                let (peak, overhead) = (r.plan.peak?, r.plan.overhead()?);
                (overhead <= target + 1e-9).then_some((i, peak, overhead))
            })
            .min_by(|a, b| a.1.cmp(&b.1).then(a.2.total_cmp(&b.2)))
            .map(|(i, _, _)| i);
        if let Some(i) = best {
            if rows[i].measured_peak.is_none() {
                rows[i].measure_note = None;
                measurer.measure(&mut rows[i]);
            }
        }
    }
}

/// Rows are keyed by model name: two inputs of one name (a graph file and the generated
/// network it was exported from) would be planned twice and listed twice in every table.
fn distinct_models(inputs: &[PathBuf]) -> Result<(), String> {
    let mut seen: HashMap<String, &PathBuf> = HashMap::new();
    for input in inputs {
        if let Some(first) = seen.insert(model_name(input), input) {
            return Err(format!(
                "{} and {} are both model '{}': give the sweep one of them",
                first.display(),
                input.display(),
                model_name(input)
            ));
        }
    }
    Ok(())
}

fn model_name(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

fn describe(row: &SweepRow) -> String {
    let plan = match (row.plan.peak, row.plan.overhead()) {
        (Some(peak), Some(o)) => format!(
            "peak {peak} ({}), {:+.1}%, {:.2}s",
            if row.plan.fits { "fits" } else { "over" },
            100.0 * o,
            row.plan.seconds
        ),
        _ => row.plan.note.clone().unwrap_or_default(),
    };
    match (row.measured_peak, &row.measure_note) {
        (Some(m), _) => format!("{plan}; measured {m}"),
        (None, Some(n)) => format!("{plan}; not measured: {n}"),
        _ => plan,
    }
}

pub(crate) fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Plans one MLIR step with remat-opt and runs the rewritten step with remat-run; runs whose
/// rewritten modules are identical are measured once.
struct Measurer<'a> {
    remat_opt: &'a Path,
    remat_run: &'a Path,
    input: &'a Path,
    scratch: &'a Path,
    time_limit: f64,
    /// Measured peaks and whether the outputs matched, by rewritten module text.
    measured: HashMap<String, (u64, bool)>,
    /// Whether the input itself runs (checked at the first measurement): `Err(why)` when
    /// it does not, and then nothing is measured.
    runs: Option<Result<(), String>>,
}

impl<'a> Measurer<'a> {
    fn new(remat_opt: &'a Path, remat_run: &'a Path, input: &'a Path, scratch: &'a Path, time_limit: f64) -> Self {
        Measurer { remat_opt, remat_run, input, scratch, time_limit, measured: HashMap::new(), runs: None }
    }

    fn measure(&mut self, row: &mut SweepRow) {
        let runs = self.runs.get_or_insert_with(|| {
            run_step(self.remat_run, self.input, None)
                .map(|_| ())
                .map_err(|e| format!("the input does not run on the CPU: {e}"))
        });
        if let Err(why) = runs {
            row.measure_note = Some(why.clone());
            return;
        }
        match self.plan_and_run(&row.strategy, row.percent) {
            Ok((planned, (measured, outputs_match))) => {
                row.planned_by_remat_opt = Some(planned);
                row.measured_peak = Some(measured);
                row.outputs_match = Some(outputs_match);
            }
            Err(why) => row.measure_note = Some(why),
        }
    }

    /// remat-opt's planned peak, remat-run's measured one and whether the outputs matched the
    /// input's.
    fn plan_and_run(&mut self, strategy: &str, percent: f64) -> Result<(u64, (u64, bool)), String> {
        let (module, report) = (self.scratch.join("rewritten.mlir"), self.scratch.join("report.json"));
        let limit = self.time_limit.to_string();
        let mut opt = Command::new(self.remat_opt);
        opt.arg(self.input)
            .arg(format!("--remat={strategy}"))
            .arg(format!("--budget={percent}%"))
            .arg(format!("--ilp-time-limit={limit}"))
            .arg(format!("--auto-time-limit={limit}"));
        opt.arg("-o").arg(&module).arg("--report-json").arg(&report);
        match run_with_limit(&mut opt, self.time_limit + 60.0) {
            Ok(Some(_)) => {}
            Ok(None) => return Err("remat-opt timed out".into()),
            Err(e) => return Err(format!("remat-opt: {e}")),
        }
        let read = |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
        let planned = serde_json::from_str::<serde_json::Value>(&read(&report)?)
            .ok()
            .and_then(|r| r["plan"]["peak_bytes"].as_u64())
            .ok_or("remat-opt's report has no plan.peak_bytes")?;
        let text = read(&module)?;
        if let Some(&run) = self.measured.get(&text) {
            return Ok((planned, run));
        }
        let run = run_step(self.remat_run, &module, Some(self.input))?;
        self.measured.insert(text, run);
        Ok((planned, run))
    }
}

/// Runs `step` with remat-run and returns the peak it measured and, with `original`, whether
/// the outputs were bit-identical to the original's (remat-run exits non-zero when they differ,
/// and still prints its JSON).
fn run_step(remat_run: &Path, step: &Path, original: Option<&Path>) -> Result<(u64, bool), String> {
    let mut run = Command::new(remat_run);
    run.arg(step).arg("--json");
    if let Some(original) = original {
        run.arg(format!("--compare-with={}", original.display()));
    }
    let stdout = match run_with_limit(&mut run, 600.0) {
        Ok(Some(stdout)) => stdout,
        Ok(None) => return Err("remat-run timed out".into()),
        Err(e) => return Err(format!("remat-run: {e}")),
    };
    let report = serde_json::from_str::<serde_json::Value>(&stdout).ok();
    let peak = report.as_ref().and_then(|r| r["peak_bytes"].as_u64()).ok_or("remat-run printed no peak_bytes")?;
    let matches = report.as_ref().and_then(|r| r["outputs_match"].as_bool()).unwrap_or(original.is_none());
    Ok((peak, matches))
}

/// Peak (percent of the input order's) against compute (× the input order's), every plan of
/// every strategy.
fn pareto_svg(doc: &SweepDoc, model: &str) -> String {
    let series: Vec<svg::Series> = doc
        .strategies
        .iter()
        .map(|s| svg::Series {
            name: s.clone(),
            points: doc
                .rows
                .iter()
                .filter(|r| r.model == model && &r.strategy == s)
                .filter_map(|r| {
                    Some((100.0 * r.plan.peak? as f64 / r.plan.baseline_peak.max(1) as f64, 1.0 + r.plan.overhead()?))
                })
                .collect(),
        })
        .collect();
    // Compute on a log axis: overheads range from a few percent to many times the step.
    let title = format!("{model}: peak memory vs compute");
    let axes = svg::Axes {
        title: &title,
        x_label: "peak (% of the input order's)",
        y_label: "compute (× the input order's)",
        log_x: false,
        log_y: true,
    };
    svg::pareto_chart(&axes, &series)
}

fn to_csv(doc: &SweepDoc) -> String {
    let mut csv = String::from("model,strategy,budget_percent,budget_bytes,nodes,baseline_peak,baseline_cost,peak,cost,overhead,fits,steps,seconds,planned_by_remat_opt,measured_peak,note\n");
    let opt = |v: Option<String>| v.unwrap_or_default();
    for r in &doc.rows {
        let p = &r.plan;
        let note = p.note.clone().or_else(|| r.measure_note.clone()).unwrap_or_default().replace([',', '\n', '"'], " ");
        csv += &format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{},{},{}\n",
            r.model,
            r.strategy,
            r.percent,
            p.budget_bytes,
            p.nodes,
            p.baseline_peak,
            p.baseline_cost,
            opt(p.peak.map(|v| v.to_string())),
            opt(p.cost.map(|v| v.to_string())),
            opt(p.overhead().map(|v| format!("{v:.6}"))),
            p.fits,
            opt(p.steps.map(|v| v.to_string())),
            p.seconds,
            opt(r.planned_by_remat_opt.map(|v| v.to_string())),
            opt(r.measured_peak.map(|v| v.to_string())),
            note
        );
    }
    csv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_the_models_overheads_by_both_counts_with_negative_ones_at_zero() {
        let alternatives: Alternatives = serde_json::from_str(
            r#"{"versions": {}, "rows": [
                {"framework": "XLA", "model": "t", "policy": "none", "peak_bytes": 9, "recompute_overhead": 0.0, "how": ""},
                {"framework": "XLA", "model": "t", "policy": "dots_saveable", "peak_bytes": 5, "recompute_overhead": -0.03, "how": "",
                 "in_our_cost_model": {"recompute_overhead": 0.03}},
                {"framework": "XLA", "model": "t", "policy": "nothing_saveable", "peak_bytes": 3, "recompute_overhead": 0.22, "how": ""},
                {"framework": "XLA", "model": "u", "policy": "nothing_saveable", "peak_bytes": 3, "recompute_overhead": 0.5, "how": ""},
                {"framework": "XLA", "model": "t", "policy": "other", "peak_bytes": 3, "recompute_overhead": null, "how": ""}
            ]}"#,
        )
        .unwrap();
        assert_eq!(target_overheads(&alternatives, "t.linalg"), vec![0.0, 0.03, 0.22]);
        assert_eq!(target_overheads(&alternatives, "u"), vec![0.5]);
        assert!(target_overheads(&alternatives, "v.linalg").is_empty());
    }

    #[test]
    fn two_inputs_of_one_model_name_are_refused() {
        let inputs = |names: &[&str]| names.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(distinct_models(&inputs(&["examples/graphs/resnet18.json", "vgg16", "a.linalg.mlir"])), Ok(()));
        let err = distinct_models(&inputs(&["examples/graphs/resnet18.json", "vgg16", "resnet18"])).unwrap_err();
        assert!(err.contains("examples/graphs/resnet18.json and resnet18 are both model 'resnet18'"), "{err}");
    }
}
