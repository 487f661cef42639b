//! `remat-bench report`: docs/benchmarks.md from what `sweep` and `planner-time` wrote, with
//! XLA's and PyTorch's own figures (`tools/export/alternatives.sh`) and the papers' published
//! ones (`published.json`) beside ours. Every number in the document comes from those files.

use crate::planner_time::TimeDoc;
use crate::sweep::{SweepDoc, SweepRow};
use remat_graph::units::Bytes;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

/// A row of `alternatives.json`: another framework's own account of a step's memory.
#[derive(Debug, Deserialize)]
pub(crate) struct Alternative {
    framework: String,
    pub(crate) model: String,
    policy: String,
    peak_bytes: Option<u64>,
    pub(crate) recompute_overhead: Option<f64>,
    how: String,
    /// The same policy's step counted by our cost model (`tools/export/our_cost_model.py`).
    pub(crate) in_our_cost_model: Option<InOurCostModel>,
}

/// A framework's checkpointed step imported by remat-opt, unfused and unplanned: what its
/// recomputation costs on the scale our overheads use.
#[derive(Debug, Deserialize)]
pub(crate) struct InOurCostModel {
    pub(crate) recompute_overhead: f64,
}

impl Alternative {
    /// The overheads this row's step paid that our plans are held to: its framework's own
    /// count, and our cost model's where that was taken. A negative count (XLA's accounting
    /// after its own fusion, not less work) counts as zero.
    pub(crate) fn target_overheads(&self) -> impl Iterator<Item = f64> + '_ {
        let ours = self.in_our_cost_model.as_ref().map(|o| o.recompute_overhead);
        self.recompute_overhead.into_iter().chain(ours).map(|o| o.max(0.0))
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct Alternatives {
    versions: serde_json::Map<String, serde_json::Value>,
    pub(crate) rows: Vec<Alternative>,
}

impl Alternatives {
    pub(crate) fn load(path: &Path) -> Result<Self, String> {
        read(path)
    }
}

/// A row of `published.json`, as the paper printed it.
#[derive(Debug, Deserialize)]
struct Published {
    source: String,
    model: String,
    method: String,
    metric: String,
    value: String,
    #[serde(default)]
    ours: String,
}

#[derive(Debug, Deserialize)]
struct PublishedDoc {
    rows: Vec<Published>,
}

fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_optional<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, String> {
    if path.exists() {
        read(path).map(Some)
    } else {
        Ok(None)
    }
}

/// Where the figures come from: the commit and machine of the whole regeneration, and the
/// commit of the planner-time runs where they were measured again on their own.
pub struct Provenance<'a> {
    pub commit: &'a str,
    pub machine: &'a str,
    /// How long the whole regeneration took.
    pub minutes: Option<f64>,
    pub planner_time_commit: Option<&'a str>,
}

pub fn write(dir: &Path, output: &Path, provenance: &Provenance<'_>) -> Result<(), String> {
    let sweep: SweepDoc = read(&dir.join("sweep.json"))?;
    let times: TimeDoc = read(&dir.join("planner-time.json"))?;
    let alternatives: Option<Alternatives> = read_optional(&dir.join("alternatives.json"))?;
    let published: Option<PublishedDoc> = read_optional(&dir.join("published.json"))?;
    // Links are relative to the document.
    let base = output.parent().unwrap_or(Path::new(""));
    let rel = relative_to(dir, base);
    let mut timelines: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("timeline-") && n.ends_with(".svg"))
        .collect();
    timelines.sort();

    let mut md = String::new();
    header(&mut md, &rel, provenance, &sweep, &times);
    winners(&mut md, &sweep);
    certified_distance(&mut md, &sweep);
    ilp_distance(&mut md, &sweep);
    measured(&mut md, &sweep);
    if let Some(a) = &alternatives {
        beside_alternatives(&mut md, &sweep, a);
    }
    planner_time(&mut md, &rel, &times);
    if let Some(p) = &published {
        beside_papers(&mut md, &sweep, p);
    }
    timeline_section(&mut md, &rel, &timelines);
    per_model(&mut md, &rel, &sweep);
    std::fs::write(output, md).map_err(|e| format!("{}: {e}", output.display()))
}

/// `dir` relative to `base` when it lies under it (the usual docs/ layout), else as given.
fn relative_to(dir: &Path, base: &Path) -> String {
    dir.strip_prefix(base).unwrap_or(dir).to_string_lossy().into_owned()
}

fn models(sweep: &SweepDoc) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in &sweep.rows {
        if !names.contains(&r.model) {
            names.push(r.model.clone());
        }
    }
    names
}

fn rows<'a>(sweep: &'a SweepDoc, model: &'a str) -> impl Iterator<Item = &'a SweepRow> + 'a {
    sweep.rows.iter().filter(move |r| r.model == model)
}

fn row<'a>(sweep: &'a SweepDoc, model: &str, strategy: &str, percent: f64) -> Option<&'a SweepRow> {
    sweep.rows.iter().find(|r| r.model == model && r.strategy == strategy && r.percent == percent)
}

fn pct(v: f64) -> String {
    // No "-0.0%" for a bound that is zero up to rounding.
    let v = if v.abs() < 5e-4 { 0.0 } else { v };
    format!("{:+.1}%", 100.0 * v)
}

fn percent_label(p: f64) -> String {
    format!("{p}%")
}

fn budget_label(row: &SweepRow) -> String {
    if row.targeted {
        format!("{}%, targeted", row.percent)
    } else {
        percent_label(row.percent)
    }
}

fn header(md: &mut String, rel: &str, provenance: &Provenance<'_>, sweep: &SweepDoc, times: &TimeDoc) {
    let Provenance { commit, machine, minutes, planner_time_commit } = *provenance;
    let mut took = minutes.map(|m| format!(" The whole regeneration took {m:.1} minutes.")).unwrap_or_default();
    if let Some(again) = planner_time_commit {
        let _ = write!(
            took,
            " The planning-time section was measured again on its own at commit `{again}`, on the same \
             machine, as the script runs it (`remat-bench planner-time`); every other figure is from `{commit}`."
        );
    }
    let _ = writeln!(
        md,
        "# Benchmarks\n\n\
         <!-- Generated by `bash tools/benchmarks.sh` (tools/remat-bench/src/report.rs). Do not edit by hand. -->\n\n\
         Regenerated by **`bash tools/benchmarks.sh`** at commit `{commit}` on {machine}.{took}\n\n\
         Raw data: [sweep.json]({rel}/sweep.json), [sweep.csv]({rel}/sweep.csv), \
         [planner-time.json]({rel}/planner-time.json), [planner-time.csv]({rel}/planner-time.csv), \
         [alternatives.json]({rel}/alternatives.json) (XLA and PyTorch), [published.json]({rel}/published.json) \
         (the papers' figures). The papers' experiments reproduced one by one — TWRemat(k) curves, \
         Re-forwarding's Tables 1–2, DTR's heuristics and Theorem 3.1, the chain DP with offloading — are in \
         [bench/README.md](bench/README.md) (`bash tools/bench.sh`).\n\n\
         **Terms.** *Budget*: a percentage of the input order's peak. *Peak*: the [memory model](memory-model.md) — the most \
         bytes live at once, function arguments (parameters, inputs) excluded, outputs included. *Overhead*: \
         extra compute of the plan by the cost model (2·M·N·K per matmul, per-element work otherwise), \
         `plan cost / input order's cost − 1`. *Measured*: the peak `remat-run` counted while running the step \
         remat-opt rewrote, on the CPU (every allocation goes through a counting allocator). Each plan had \
         {:.0} s in the sweep and {:.0} s in the planner-time runs{} (the ILP's solver limit too); a strategy out \
         of time at one budget or size is not run at the next.\n",
        sweep.time_limit,
        times.time_limit,
        times.strategy_limits.iter().map(|(s, l)| format!(", {s} {l:.0} s")).collect::<String>()
    );
}

/// The cheapest plan within the budget per model and budget.
fn winners(md: &mut String, sweep: &SweepDoc) {
    let _ = writeln!(md, "## Which strategy wins where\n\nThe plan with the least overhead among those within the budget (ties: the first in the order {}); `—`: no strategy fits.\n", sweep.strategies.join(", "));
    let _ = write!(md, "| model | nodes | input order's peak |");
    for p in &sweep.budgets {
        let _ = write!(md, " {} |", percent_label(*p));
    }
    let _ = writeln!(md, "\n|---|---:|---:|{}", "---|".repeat(sweep.budgets.len()));
    let mut wins: Vec<(String, usize)> = sweep.strategies.iter().map(|s| (s.clone(), 0)).collect();
    for model in models(sweep) {
        let first = rows(sweep, &model).find(|r| r.plan.nodes > 0);
        let (nodes, baseline) = first.map_or((0, 0), |r| (r.plan.nodes, r.plan.baseline_peak));
        let _ = write!(md, "| {model} | {nodes} | {} |", Bytes(baseline));
        for &p in &sweep.budgets {
            match crate::sweep::cheapest_fit(rows(sweep, &model).filter(|r| r.percent == p)) {
                Some(r) => {
                    let _ = write!(md, " {} {} |", r.strategy, pct(r.plan.overhead().unwrap_or(0.0)));
                    if let Some(w) = wins.iter_mut().find(|w| w.0 == r.strategy) {
                        w.1 += 1;
                    }
                }
                None => {
                    let _ = write!(md, " — |");
                }
            }
        }
        let _ = writeln!(md);
    }
    wins.retain(|w| w.1 > 0);
    wins.sort_by_key(|w| std::cmp::Reverse(w.1));
    let counts: Vec<String> = wins.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let _ = writeln!(md, "\nCheapest within budget, counted over models and budgets: {}.\n", counts.join(", "));
}

/// The cheapest plan within each budget beside the certificate's proven least overhead.
fn certified_distance(md: &mut String, sweep: &SweepDoc) {
    if sweep.bounds.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## How far the cheapest plan is from the proven bound\n\n\
         The cheapest plan within each budget (as above) and the least overhead any schedule within it \
         needs, proven by `--certify` (docs/memory-model.md, \"The recomputation lower bound\"): `plan / bound`; \
         `—`: no strategy fits; `infeasible`: no schedule fits.\n"
    );
    let _ = write!(md, "| model |");
    for p in &sweep.budgets {
        let _ = write!(md, " {} |", percent_label(*p));
    }
    let _ = writeln!(md, "\n|---|{}", "---:|".repeat(sweep.budgets.len()));
    let (mut cells, mut within_one, mut within_five) = (0, 0, 0);
    for model in models(sweep) {
        let _ = write!(md, "| {model} |");
        for &p in &sweep.budgets {
            let bound = sweep.bounds.iter().find(|b| b.model == model && b.percent == p);
            let best = crate::sweep::cheapest_fit(rows(sweep, &model).filter(|r| r.percent == p));
            let cell = match (best.and_then(|r| r.plan.overhead()), bound) {
                (_, Some(b)) if b.status == "infeasible" => "infeasible".to_string(),
                (Some(plan), Some(b)) => {
                    cells += 1;
                    let gap = 100.0 * (plan - b.overhead);
                    within_one += usize::from(gap <= 1.0 + 1e-9);
                    within_five += usize::from(gap <= 5.0 + 1e-9);
                    format!("{} / {}", pct(plan), pct(b.overhead))
                }
                (None, Some(b)) => format!("— / {}", pct(b.overhead)),
                (Some(plan), None) => format!("{} / ?", pct(plan)),
                (None, None) => "—".to_string(),
            };
            let _ = write!(md, " {cell} |");
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(
        md,
        "\nOf {cells} budgets with a plan, the cheapest is within 1 point of the bound at {within_one} and within 5 points at {within_five}.\n"
    );
}

/// Each heuristic's overhead beside the ILP's, where the ILP has a plan.
fn ilp_distance(md: &mut String, sweep: &SweepDoc) {
    let heuristics: Vec<&String> = sweep.strategies.iter().filter(|s| *s != "ilp" && *s != "none").collect();
    let ilp_plans = sweep.rows.iter().filter(|r| r.strategy == "ilp" && r.plan.fits);
    // A plan the ILP fell back to (its solver found none in the time limit) is a heuristic's.
    let (fallbacks, cases): (Vec<&SweepRow>, Vec<&SweepRow>) =
        ilp_plans.partition(|r| r.plan.stop.as_deref() == Some("fallback"));
    let _ = writeln!(md, "## How far each heuristic is from the ILP\n");
    if cases.is_empty() {
        let _ = writeln!(md, "The ILP found no plan within any budget in its time limit.\n");
        return;
    }
    let _ = writeln!(
        md,
        "Where the ILP (Checkmate's formulation) has a plan within the budget: its overhead, how the solve ended, and the \
         proven lower bound on the overhead of any schedule of its class; then each heuristic's overhead *minus the ILP's*, \
         in percentage points (`over`: the heuristic's plan misses the budget). A heuristic can beat the ILP when the ILP \
         stopped at its time limit, or when the heuristic's schedule lies outside the ILP's class (the class is named). \
         Left out: {} plans where the solver found none in its time limit and the ILP returned the best heuristic plan \
         instead (stop reason `fallback`).\n",
        fallbacks.len()
    );
    let _ = write!(md, "| model | budget | ILP overhead | status | proven bound |");
    for h in &heuristics {
        let _ = write!(md, " {h} |");
    }
    let _ = writeln!(md, "\n|---|---:|---:|---|---:|{}", "---:|".repeat(heuristics.len()));
    let mut gaps: Vec<(String, Vec<f64>)> = heuristics.iter().map(|h| ((*h).clone(), Vec::new())).collect();
    let mut classes: Vec<String> = Vec::new();
    for ilp in cases {
        let (Some(o), base) = (ilp.plan.overhead(), ilp.plan.baseline_cost) else { continue };
        let bound = ilp
            .plan
            .ilp_cost_bound
            .map(|b| if base > 0.0 { pct(remat_graph::recompute_overhead(b, base)) } else { "—".into() })
            .unwrap_or_else(|| "—".into());
        let status = ilp.plan.ilp_status.as_deref().unwrap_or("?");
        if let Some(class) = &ilp.plan.ilp_class {
            if !classes.contains(class) {
                classes.push(class.clone());
            }
        }
        let _ = write!(md, "| {} | {} | {} | {status} | {bound} |", ilp.model, percent_label(ilp.percent), pct(o));
        for (h, gap) in heuristics.iter().zip(&mut gaps) {
            let cell = match row(sweep, &ilp.model, h, ilp.percent) {
                Some(r) if r.plan.fits => {
                    let d = r.plan.overhead().unwrap_or(0.0) - o;
                    gap.1.push(d);
                    format!("{:+.1}", 100.0 * d)
                }
                Some(r) if r.plan.peak.is_some() => "over".into(),
                _ => "—".into(),
            };
            let _ = write!(md, " {cell} |");
        }
        let _ = writeln!(md);
    }
    let summary: Vec<String> = gaps
        .iter()
        .filter(|g| !g.1.is_empty())
        .map(|(h, g)| {
            format!(
                "{h} {:+.1} points on average over {} cases (worst {:+.1})",
                100.0 * g.iter().sum::<f64>() / g.len() as f64,
                g.len(),
                100.0 * g.iter().cloned().fold(f64::MIN, f64::max)
            )
        })
        .collect();
    let _ = writeln!(md, "\nWhere a heuristic fits too: {}.\n", summary.join("; "));
    let _ = writeln!(md, "The ILP's class of schedules (its bound holds within it): {}.\n", classes.join("; or "));
}

fn measured(md: &mut String, sweep: &SweepDoc) {
    let runs: Vec<&SweepRow> = sweep.rows.iter().filter(|r| r.measured_peak.is_some()).collect();
    let _ = writeln!(md, "## Planned against measured (CPU)\n");
    if runs.is_empty() {
        let _ = writeln!(md, "Nothing was measured (no `--remat-run`).\n");
        return;
    }
    let equal = runs.iter().filter(|r| r.measured_peak == r.plan.peak && r.planned_by_remat_opt == r.plan.peak).count();
    let identical = runs.iter().filter(|r| r.outputs_match == Some(true)).count();
    let failed: Vec<&SweepRow> = sweep
        .rows
        .iter()
        .filter(|r| r.measured_peak.is_none() && r.measure_note.as_deref().is_some_and(|n| n.starts_with("remat-")))
        .collect();
    let _ = writeln!(
        md,
        "At each budget, the cheapest plan within it was rewritten by remat-opt and run by remat-run (every MLIR step; \
         StableHLO steps legalized by remat-opt, as it does by default){}. **{equal} of {} runs measured exactly the planned peak**, \
         and {identical} computed outputs bit-identical to the input step's (`remat-run --compare-with` the input: for a \
         step fused by default, the unfused original). Runs that failed: {}.\n",
        if sweep.targeted_strategies.is_empty() {
            ""
        } else {
            "; so were the plans the targeted stage chose (budgets marked `targeted`, see Beside XLA and PyTorch)"
        },
        runs.len(),
        if failed.is_empty() {
            "none".to_string()
        } else {
            failed
                .iter()
                .map(|r| {
                    format!("{} {} {}: {}", r.model, r.strategy, budget_label(r), r.measure_note.as_deref().unwrap_or(""))
                })
                .collect::<Vec<_>>()
                .join("; ")
        }
    );
    let _ = writeln!(md, "| model | budget | strategy | overhead | planned (remat-bench) | planned (remat-opt) | measured | measured − planned | outputs |\n|---|---:|---|---:|---:|---:|---:|---:|---|");
    for r in runs {
        let (planned, measured) = (r.plan.peak.unwrap_or(0), r.measured_peak.unwrap_or(0));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {planned} | {} | {measured} | {:+} | {} |",
            r.model,
            budget_label(r),
            r.strategy,
            r.plan.overhead().map(pct).unwrap_or_default(),
            r.planned_by_remat_opt.map(|v| v.to_string()).unwrap_or_default(),
            measured as i128 - planned as i128,
            match r.outputs_match {
                Some(true) => "bit-identical",
                Some(false) => "DIFFER",
                None => "not compared",
            }
        );
    }
    let _ = writeln!(md);
}

fn beside_alternatives(md: &mut String, sweep: &SweepDoc, alternatives: &Alternatives) {
    let versions: Vec<String> = alternatives
        .versions
        .iter()
        .map(|(k, v)| format!("{k} {}", v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
        .collect();
    let _ = writeln!(
        md,
        "## Beside XLA and PyTorch\n\n\
         XLA's and PyTorch's own accounts of the same steps ({}; `bash tools/export/alternatives.sh`), each with \
         jax.checkpoint policies or torch.utils.checkpoint, beside our plan with the least *measured* peak among those \
         whose overhead is at most theirs, or at most zero where theirs is negative (planned where nothing qualifying was measured, marked `planned`). {}Their \
         own overhead counts FLOPs (XLA's cost analysis, PyTorch's FLOP counter); ours is the cost model's estimate. The two are not one scale: \
         XLA counts the program it compiled, after its own simplification and fusion, and calls some checkpointed steps cheaper than the plain one \
         although they do all its work and recompute more. So each XLA policy's step is also counted by our cost model (`tools/export/our_cost_model.py`: \
         the checkpointed step lowered as the examples are, imported by remat-opt unfused and unplanned), and our plan is held to that overhead, \
         the same scale as ours; the last column holds it to XLA's own count instead. \
         How their peaks are counted is listed under the table.\n",
        versions.join(", "),
        if sweep.targeted_strategies.is_empty() {
            String::new()
        } else {
            format!(
                "Ours come from the sweep's budgets and from a targeted stage: {} planned at every whole percent down \
                 to the budget where the overhead passes theirs, and the least-peak plan within each of their overheads \
                 rewritten and measured (budget marked `targeted`). ",
                sweep.targeted_strategies.join(", ")
            )
        }
    );
    let _ = writeln!(
        md,
        "| model | theirs | their peak | their overhead: own count | in our cost model | our plan (budget) | our overhead | our peak | ours / theirs | at their own count |\n\
         |---|---|---:|---:|---:|---|---:|---:|---:|---:|"
    );
    let policy_rank = |p: &str| ["none", "dots_saveable", "nothing_saveable"].iter().position(|q| *q == p).unwrap_or(3);
    let model_rank =
        |m: &str| models(sweep).iter().position(|n| n == m || n == &format!("{m}.linalg")).unwrap_or(usize::MAX);
    let mut ordered: Vec<&Alternative> = alternatives.rows.iter().collect();
    ordered.sort_by_key(|a| (model_rank(&a.model), a.model.clone(), policy_rank(&a.policy)));
    let mut how: Vec<(String, String)> = Vec::new();
    for a in ordered {
        let (Some(their_peak), their_overhead) = (a.peak_bytes, a.recompute_overhead.unwrap_or(0.0)) else { continue };
        let key = format!("{} {}", a.framework, a.policy);
        if !how.iter().any(|(k, _)| *k == key) {
            how.push((key.clone(), format!("{} (on {})", a.how, a.model)));
        }
        // A negative FLOP difference is XLA's accounting (fusion), not less work: compare at 0.
        let ours_scale = a.in_our_cost_model.as_ref().map(|o| o.recompute_overhead);
        let held_to = ours_scale.unwrap_or(their_overhead).max(0.0);
        let ratio_at = |overhead: f64| {
            our_best(sweep, &a.model, overhead)
                .map(|(_, peak, _)| format!("{:.2}", peak as f64 / their_peak.max(1) as f64))
        };
        let (plan, overhead, peak, ratio) = match our_best(sweep, &a.model, held_to) {
            Some((r, peak, kind)) => (
                format!("{} ({})", r.strategy, budget_label(r)),
                r.plan.overhead().map(pct).unwrap_or_default(),
                format!("{} {kind}", Bytes(peak)),
                format!("{:.2}", peak as f64 / their_peak.max(1) as f64),
            ),
            None => ("—".into(), String::new(), String::new(), String::new()),
        };
        let at_own = if ours_scale.is_some() {
            ratio_at(their_overhead.max(0.0)).unwrap_or("—".into())
        } else {
            ratio.clone()
        };
        let _ = writeln!(
            md,
            "| {} | {key} | {} | {} | {} | {plan} | {overhead} | {peak} | {ratio} | {at_own} |",
            a.model,
            Bytes(their_peak),
            pct(their_overhead),
            ours_scale.map(pct).unwrap_or("—".into()),
        );
    }
    let _ = writeln!(md, "\nHow their figures were taken (each row's own account is in alternatives.json):\n");
    for (key, text) in how {
        let _ = writeln!(md, "* **{key}**: {text}");
    }
    let _ = writeln!(md);
}

/// Our plan of `model` (its linalg step, else any input of that name) with overhead at most
/// `overhead`: the least measured peak, else the least planned one.
fn our_best<'a>(sweep: &'a SweepDoc, model: &str, overhead: f64) -> Option<(&'a SweepRow, u64, &'static str)> {
    let candidates = [format!("{model}.linalg"), model.to_string()];
    let name = candidates.iter().find(|c| sweep.rows.iter().any(|r| &r.model == *c))?;
    let within =
        |r: &&SweepRow| r.model == *name && r.plan.fits && r.plan.overhead().is_some_and(|o| o <= overhead + 1e-9);
    let measured =
        sweep.rows.iter().filter(within).filter_map(|r| Some((r, r.measured_peak?, "measured"))).min_by_key(|x| x.1);
    measured.or_else(|| {
        sweep.rows.iter().filter(within).filter_map(|r| Some((r, r.plan.peak?, "planned"))).min_by_key(|x| x.1)
    })
}

fn planner_time(md: &mut String, rel: &str, times: &TimeDoc) {
    let _ = writeln!(
        md,
        "## Planning time against graph size\n\n\
         Generated training steps of four families (`remat_graph::training`: FFN = `FeedForward::mlp`, ResNet-like = \
         `ConvNet` with four stages of basic blocks, transformer-like = `Transformer`, random layered = `RandomLayered`, \
         width 8, seed 0), planned at {}% of the input order's peak, release build, one thread. Seconds are the planner's \
         own (planning and polishing, not building the graph). A cross at the time limit marks where a strategy stopped; \
         `×` in the table: out of time (not run at larger sizes), `err`: the strategy has no plan for this graph.\n",
        times.percent
    );
    for family in &times.families {
        let _ = writeln!(md, "![planner time, {family}]({rel}/planner-time-{family}.svg)\n");
        let _ = write!(md, "| {family} |");
        for size in &times.sizes {
            let nodes = times
                .rows
                .iter()
                .find(|r| &r.family == family && r.target_nodes == *size && r.plan.nodes > 0)
                .map(|r| r.plan.nodes);
            let _ = write!(md, " {} |", nodes.map(|n| format!("{n} nodes")).unwrap_or_else(|| format!("~{size}")));
        }
        let _ = writeln!(md, "\n|---|{}", "---:|".repeat(times.sizes.len()));
        for s in &times.strategies {
            let _ = write!(md, "| {s} |");
            for size in &times.sizes {
                let cell = match times
                    .rows
                    .iter()
                    .find(|r| &r.family == family && &r.strategy == s && r.target_nodes == *size)
                {
                    None => "—".to_string(),
                    Some(r) if r.plan.timed_out() => format!("× >{}s", times.limit_of(s)),
                    Some(r) if r.plan.peak.is_none() => "err".to_string(),
                    Some(r) => format!("{:.3}", r.plan.seconds),
                };
                let _ = write!(md, " {cell} |");
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
    }
    let errors: Vec<String> = times
        .rows
        .iter()
        .filter(|r| r.plan.peak.is_none() && !r.plan.timed_out())
        .filter_map(|r| {
            r.plan.note.as_ref().map(|n| format!("{} on {} (~{} nodes): {}", r.strategy, r.family, r.target_nodes, n))
        })
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(md, "Why `err`:\n");
        let mut seen: Vec<&str> = Vec::new();
        for e in &errors {
            let strategy = e.split(' ').next().unwrap_or("");
            if !seen.contains(&strategy) {
                seen.push(strategy);
                let _ = writeln!(md, "* {e}");
            }
        }
        let _ = writeln!(md);
    }
}

/// Our least-peak plan of `model` by `strategy` over the sweep's budgets.
fn least_peak<'a>(sweep: &'a SweepDoc, model: &'a str, strategy: &str) -> Option<&'a SweepRow> {
    rows(sweep, model)
        .filter(|r| !r.targeted && r.strategy == strategy && r.plan.peak.is_some())
        .min_by_key(|r| r.plan.peak)
}

fn beside_papers(md: &mut String, sweep: &SweepDoc, published: &PublishedDoc) {
    let _ = writeln!(md, "## Beside the papers' published figures\n\nEach published figure is labelled with its source (`published.json` holds them as printed); ours come from the sweep above.\n");
    // Kumar et al. Table 2: peak memory (GB) and schedule length relative to NoRemat.
    let kumar: Vec<&Published> = published
        .rows
        .iter()
        .filter(|r| r.source == "Kumar et al. 2019, Table 2" && r.model == "Transformer Base")
        .collect();
    let value = |method: &str, metric: &str| {
        kumar
            .iter()
            .find(|r| r.method == method && r.metric.starts_with(metric))
            .and_then(|r| r.value.parse::<f64>().ok())
    };
    if let Some(none) = value("NoRemat", "Mem") {
        let _ = writeln!(
            md,
            "### Kumar et al. 2019, Table 2 (Transformer Base) beside transformer12\n\n\
             The paper's peak reduction is NoRemat's memory over the strategy's; its length is the schedule's relative to \
             NoRemat. Ours: the strategy's least-peak plan in the sweep (budgets down to {}%), reduction = input order's \
             peak / plan's peak, length = schedule steps / ops.\n\n\
             | method | paper: reduction | paper: length | ours (graph): reduction | length | overhead |\n|---|---:|---:|---|---:|---:|",
            sweep.budgets.iter().cloned().fold(f64::MAX, f64::min)
        );
        for (method, ours) in [("GreedyRemat", "greedy"), ("TWRemat", "treewidth")] {
            let (Some(mem), Some(len)) = (value(method, "Mem"), value(method, "Rel")) else { continue };
            let mut cells = Vec::new();
            for model in ["transformer12.linalg", "transformer12.stablehlo"] {
                if let Some(r) = least_peak(sweep, model, ours) {
                    let peak = r.plan.peak.unwrap_or(1).max(1);
                    cells.push(format!(
                        "{} ({model}): {:.2}× | {:.2}× | {}",
                        ours,
                        r.plan.baseline_peak as f64 / peak as f64,
                        r.plan.steps.unwrap_or(0) as f64 / r.plan.nodes.max(1) as f64,
                        r.plan.overhead().map(pct).unwrap_or_default()
                    ));
                }
            }
            if cells.is_empty() {
                cells.push("— | | ".into());
            }
            for (i, c) in cells.iter().enumerate() {
                let paper = if i == 0 { format!("{:.2}× | {len:.2}×", none / mem) } else { " | ".into() };
                let _ = writeln!(md, "| {} | {paper} | {c} |", if i == 0 { method } else { "" });
            }
        }
        let _ = writeln!(md);
    }
    // Feng & Huang Table 1: memory cut and time overhead of re-forwarding.
    let feng: Vec<&Published> = published.rows.iter().filter(|r| r.source == "Feng & Huang 2018, Table 1").collect();
    let networks: Vec<String> =
        models(sweep).into_iter().filter(|m| feng.iter().any(|r| r.model.to_lowercase() == *m)).collect();
    if !networks.is_empty() {
        let _ = writeln!(
            md,
            "### Feng & Huang 2018, Table 1 beside our generated networks\n\n\
             The paper measured GPU memory and time per iteration of PyTorch training; ours are the generated networks of \
             `remat_graph::training::ConvNet` (Table 1's layouts, basic blocks throughout) under the memory model, \
             with acg's least-peak plan in the sweep and the least-peak plan of any strategy.\n\n\
             | network | paper: memory cut | paper: time overhead | acg: cut | acg: overhead | best cut (strategy, overhead) |\n|---|---:|---:|---:|---:|---|"
        );
        for net in networks {
            let paper = |metric: &str| {
                feng.iter()
                    .find(|r| r.model.to_lowercase() == net && r.metric.starts_with(metric))
                    .map(|r| r.value.clone())
                    .unwrap_or_default()
            };
            let cut = |r: &SweepRow| 1.0 - r.plan.peak.unwrap_or(0) as f64 / r.plan.baseline_peak.max(1) as f64;
            let acg = least_peak(sweep, &net, "acg");
            let best = sweep.strategies.iter().filter_map(|s| least_peak(sweep, &net, s)).min_by_key(|r| r.plan.peak);
            let _ = writeln!(
                md,
                "| {net} | {} | {} | {} | {} | {} |",
                paper("Memory Cut"),
                paper("Time Overhead"),
                acg.map(|r| format!("{:.0}%", 100.0 * cut(r))).unwrap_or_else(|| "—".into()),
                acg.and_then(|r| r.plan.overhead()).map(pct).unwrap_or_default(),
                best.map(|r| format!(
                    "{:.0}% ({}, {})",
                    100.0 * cut(r),
                    r.strategy,
                    r.plan.overhead().map(pct).unwrap_or_default()
                ))
                .unwrap_or_default()
            );
        }
        let _ = writeln!(md);
    }
    let related: Vec<&Published> = published
        .rows
        .iter()
        .filter(|r| {
            !r.ours.is_empty()
                && !r.source.contains("Feng & Huang 2018, Table 1")
                && r.source != "Kumar et al. 2019, Table 2"
        })
        .collect();
    if !related.is_empty() {
        let _ = writeln!(md, "### The other published figures with a counterpart here\n\n| source | model | method | metric | published | compare with |\n|---|---|---|---|---|---|");
        for r in related {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                r.source,
                r.model,
                r.method,
                r.metric,
                r.value.replace('|', "/"),
                r.ours.replace('|', "/")
            );
        }
        let _ = writeln!(md);
    }
}

fn timeline_section(md: &mut String, rel: &str, timelines: &[String]) {
    if timelines.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Memory timelines (`remat-opt --plot`)\n\nBytes live at each step of the input order and of the plan, with the budget and the proven lower bound.\n");
    for t in timelines {
        let _ = writeln!(md, "![{t}]({rel}/{t})\n");
    }
}

fn per_model(md: &mut String, rel: &str, sweep: &SweepDoc) {
    let _ = writeln!(
        md,
        "## Every strategy at every budget, per model\n\n\
         Cells: overhead and planner seconds of a plan within the budget; `over N%`: the plan's peak, as a percentage of the \
         input order's, misses the budget; `out of time`, `not run` (out of time at a larger budget) or `err` (the \
         strategy has no plan; the CSV has why). Charts: peak against compute (1 + overhead, log scale), every plan; \
         filled markers and the step line are each strategy's Pareto front.\n"
    );
    for model in models(sweep) {
        let first = rows(sweep, &model).find(|r| r.plan.nodes > 0);
        let (nodes, baseline) = first.map_or((0, 0), |r| (r.plan.nodes, r.plan.baseline_peak));
        let _ = writeln!(
            md,
            "### {model}\n\n{nodes} nodes, input order's peak {}.\n\n![{model}]({rel}/pareto-{model}.svg)\n",
            Bytes(baseline)
        );
        let _ = write!(md, "| strategy |");
        for p in &sweep.budgets {
            let _ = write!(md, " {} |", percent_label(*p));
        }
        let _ = writeln!(md, "\n|---|{}", "---:|".repeat(sweep.budgets.len()));
        for s in &sweep.strategies {
            let _ = write!(md, "| {s} |");
            for &p in &sweep.budgets {
                let cell = match row(sweep, &model, s, p) {
                    None => "—".to_string(),
                    Some(r) if r.plan.timed_out() => "out of time".into(),
                    Some(r) if r.plan.note.as_deref().is_some_and(|n| n.starts_with("not run")) => "not run".into(),
                    Some(r) => match (r.plan.peak, r.plan.overhead()) {
                        (Some(_), Some(o)) if r.plan.fits => format!("{} ({:.2}s)", pct(o), r.plan.seconds),
                        (Some(peak), _) => {
                            format!("over {:.0}%", 100.0 * peak as f64 / r.plan.baseline_peak.max(1) as f64)
                        }
                        _ => "err".into(),
                    },
                };
                let _ = write!(md, " {cell} |");
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::child::PlanOutcome;
    use crate::planner_time::TimeRow;
    use crate::sweep::BoundRow;

    fn plan(peak: Option<u64>, cost: f64, fits: bool) -> PlanOutcome {
        PlanOutcome {
            nodes: 10,
            baseline_peak: 100,
            baseline_cost: 10.0,
            budget_bytes: 60,
            peak,
            cost: peak.map(|_| cost),
            steps: peak.map(|_| 12),
            fits,
            seconds: 0.5,
            ..Default::default()
        }
    }

    fn sweep_row(strategy: &str, percent: f64, plan: PlanOutcome, measured: Option<u64>) -> SweepRow {
        SweepRow {
            model: "m.linalg".into(),
            strategy: strategy.into(),
            percent,
            planned_by_remat_opt: measured,
            measured_peak: measured,
            outputs_match: measured.map(|_| true),
            measure_note: None,
            plan,
            targeted: false,
        }
    }

    #[test]
    fn the_report_names_winners_measurements_and_stops() {
        let dir = std::env::temp_dir().join(format!("remat-bench-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sweep = SweepDoc {
            budgets: vec![100.0, 60.0],
            strategies: vec!["none".into(), "greedy".into(), "treewidth".into()],
            time_limit: 5.0,
            targeted_strategies: Vec::new(),
            bounds: vec![
                BoundRow {
                    model: "m.linalg".into(),
                    percent: 100.0,
                    status: "proven".into(),
                    overhead: 0.0,
                    seconds: 0.0,
                },
                BoundRow {
                    model: "m.linalg".into(),
                    percent: 60.0,
                    status: "proven".into(),
                    overhead: 0.15,
                    seconds: 0.0,
                },
            ],
            rows: vec![
                sweep_row("none", 100.0, plan(Some(100), 10.0, true), Some(100)),
                sweep_row("greedy", 100.0, plan(Some(100), 10.0, true), None),
                sweep_row("treewidth", 100.0, plan(Some(100), 10.0, true), None),
                sweep_row("none", 60.0, plan(Some(100), 10.0, false), None),
                sweep_row("greedy", 60.0, plan(Some(58), 12.0, true), Some(58)),
                sweep_row("treewidth", 60.0, plan(Some(55), 15.0, true), None),
            ],
        };
        let timed_out = PlanOutcome { note: Some("timed out".into()), ..Default::default() };
        let times = TimeDoc {
            families: vec!["ffn".into()],
            strategies: vec!["greedy".into()],
            sizes: vec![1000, 2000],
            percent: 50.0,
            time_limit: 5.0,
            strategy_limits: vec![],
            rows: vec![
                TimeRow {
                    family: "ffn".into(),
                    strategy: "greedy".into(),
                    target_nodes: 1000,
                    plan: plan(Some(50), 11.0, true),
                },
                TimeRow { family: "ffn".into(), strategy: "greedy".into(), target_nodes: 2000, plan: timed_out },
            ],
        };
        std::fs::write(dir.join("sweep.json"), serde_json::to_string(&sweep).unwrap()).unwrap();
        std::fs::write(dir.join("planner-time.json"), serde_json::to_string(&times).unwrap()).unwrap();
        let out = dir.join("benchmarks.md");
        let mut provenance =
            Provenance { commit: "abc1234", machine: "a test machine", minutes: Some(1.0), planner_time_commit: None };
        write(&dir, &out, &provenance).unwrap();
        let md = std::fs::read_to_string(&out).unwrap();
        provenance.planner_time_commit = Some("def5678");
        write(&dir, &out, &provenance).unwrap();
        let again = std::fs::read_to_string(&out).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            md.contains("at commit `abc1234` on a test machine. The whole regeneration took 1.0 minutes.\n"),
            "{md}"
        );
        assert!(!md.contains("measured again"), "{md}");
        assert!(again.contains("measured again on its own at commit `def5678`"), "{again}");
        assert!(again.contains("every other figure is from `abc1234`."), "{again}");
        // At 60 % greedy (+20 %) beats treewidth (+50 %); none does not fit.
        assert!(md.contains("| m.linalg | 10 | 100 B | none +0.0% | greedy +20.0% |"), "{md}");
        assert!(md.contains("proven bound\n\nThe cheapest plan within each budget"), "{md}");
        // Greedy's +20 % is 5 points above the proven +15 %.
        assert!(md.contains("| m.linalg | +0.0% / +0.0% | +20.0% / +15.0% |"), "{md}");
        assert!(
            md.contains(
                "Of 2 budgets with a plan, the cheapest is within 1 point of the bound at 1 and within 5 points at 2."
            ),
            "{md}"
        );
        assert!(md.contains("**2 of 2 runs measured exactly the planned peak**, and 2 computed outputs"), "{md}");
        assert!(md.contains("Runs that failed: none."), "{md}");
        assert!(md.contains("| none | over 100% |") || md.contains("| none | +0.0% (0.50s) | over 100% |"), "{md}");
        assert!(md.contains("| greedy | 0.500 | × >5s |"), "{md}");
    }
}
