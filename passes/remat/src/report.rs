//! The memory report: one per planned function, as JSON (docs/report-schema.md) and as a
//! table for people.

use remat_graph::recompute_overhead;
use remat_graph::units::Bytes;
use remat_planners::auto::Candidate;
use remat_planners::{MeasuredPlan, StopReason, StrategyFacts};
use serde_json::{json, Value};
use std::sync::Arc;

/// Version of the report's JSON form (docs/report-schema.md), written as its `schema_version`.
/// Fields are only added within a version; removing or renaming one, or changing its meaning,
/// increments it.
pub const REPORT_SCHEMA_VERSION: u32 = 2;

/// What planning one function measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// Function name.
    pub function: String,
    /// Strategy name.
    pub strategy: String,
    /// The budget in bytes, if one was given.
    pub budget_bytes: Option<u64>,
    /// Executable nodes (arguments excluded).
    pub nodes: usize,
    /// Bytes of the pinned arguments.
    pub argument_bytes: u64,
    /// Proven lower bound on any schedule's peak.
    pub lower_bound_bytes: u64,
    /// Peak and cost of the input order.
    pub baseline_peak_bytes: u64,
    /// Cost of the input order.
    pub baseline_cost: f64,
    /// Peak of the plan.
    pub plan_peak_bytes: u64,
    /// Cost of the plan.
    pub plan_cost: f64,
    /// Steps that recompute a node.
    pub recomputed_ops: usize,
    /// Of those, the ones computed inside the op that reads them (never materialized).
    pub fused_recomputations: usize,
    /// Seconds spent planning.
    pub plan_seconds: f64,
    /// The strategy's schedule before polishing: peak, cost, recomputed steps.
    pub raw: (u64, f64, usize),
    /// Why the strategy stopped.
    pub stop: StopReason,
    /// The strategy's own facts (the ILP's certificate, DTR's simulation, the chain DP's
    /// stages), each shown under its key.
    pub facts: Vec<Arc<dyn StrategyFacts>>,
    /// `--remat=auto`'s comparison of the strategies it ran (empty for other strategies).
    pub candidates: Vec<Candidate>,
    /// The plan's host round trips (`--remat=chain --bandwidth`): per transfer the node, its
    /// bytes, and the steps it leaves after and comes back before.
    pub transfers: Vec<(remat_graph::NodeId, u64, remat_graph::Transfer)>,
    /// Host bytes held at most between two steps (0 without transfers).
    pub host_peak_bytes: u64,
    /// Bytes copied to the host in all.
    pub offloaded_bytes: u64,
    /// Device bytes resident at each step of the input order and of the plan (arguments
    /// excluded), for `--plot`.
    pub timeline: (Vec<u64>, Vec<u64>),
    /// What fusion did before planning (`None` with `fusion=none`, or for graph inputs); the
    /// baseline above is the fused step's.
    pub fusion: Option<crate::FusionSummary>,
    /// With `certify`: the proven least recomputation of any schedule within the budget.
    pub cost_bound: Option<remat_planners::cost_bound::CostBound>,
    /// What importing changed before fusion and planning (loops unrolled, reads of stacked
    /// tensors forwarded); empty for graph inputs.
    pub normalized: remat_mlir::Normalization,
}

impl Report {
    /// Collects the report of a measured plan.
    pub fn new(
        function: &str,
        strategy: &str,
        graph: &remat_graph::Graph,
        budget: Option<u64>,
        plan: &MeasuredPlan,
    ) -> Self {
        Report {
            function: function.to_string(),
            strategy: strategy.to_string(),
            budget_bytes: budget,
            nodes: graph.op_count(),
            argument_bytes: graph.argument_bytes(),
            lower_bound_bytes: plan.lower_bound,
            baseline_peak_bytes: plan.baseline.peak_bytes,
            baseline_cost: plan.baseline.cost,
            plan_peak_bytes: plan.simulation.peak_bytes,
            plan_cost: plan.simulation.cost,
            recomputed_ops: plan.simulation.recomputations,
            fused_recomputations: plan.simulation.fused_recomputations,
            plan_seconds: plan.plan_seconds,
            raw: (plan.raw.peak_bytes, plan.raw.cost, plan.raw.recomputations),
            stop: plan.details.stop,
            facts: plan.details.facts.clone(),
            candidates: plan.details.comparison.clone(),
            transfers: plan
                .details
                .transfers
                .iter()
                .map(|t| (plan.schedule[t.instance], graph.node(plan.schedule[t.instance]).bytes, *t))
                .collect(),
            host_peak_bytes: plan.simulation.host_peak_bytes,
            offloaded_bytes: plan.simulation.offloaded_bytes,
            timeline: (plan.baseline.step_bytes.clone(), plan.simulation.step_bytes.clone()),
            fusion: None,
            normalized: remat_mlir::Normalization::default(),
            cost_bound: None,
        }
    }

    /// The memory timeline as an SVG chart (`remat-opt --plot`): bytes resident at each step
    /// of the input order and of the plan, with the budget and the lower bound as guides.
    pub fn timeline_svg(&self) -> String {
        use remat_plot::{timeline_chart, Axes, Guide, Series};
        let line = |name: String, steps: &[u64]| Series {
            name,
            points: steps.iter().enumerate().map(|(i, &b)| (i as f64, b as f64)).collect(),
        };
        let series = [
            line(format!("before: {}", Bytes(self.baseline_peak_bytes)), &self.timeline.0),
            line(format!("after: {}", Bytes(self.plan_peak_bytes)), &self.timeline.1),
        ];
        let mut guides = vec![Guide {
            name: format!("lower bound {}", Bytes(self.lower_bound_bytes)),
            y: self.lower_bound_bytes as f64,
        }];
        if let Some(budget) = self.budget_bytes {
            guides.push(Guide { name: format!("budget {}", Bytes(budget)), y: budget as f64 });
        }
        let title = format!(
            "@{}: memory before and after {} ({:+.1}% compute)",
            self.function,
            self.strategy,
            100.0 * self.recompute_overhead()
        );
        let axes = Axes {
            title: &title,
            x_label: "schedule step",
            y_label: "bytes resident (arguments excluded)",
            log_x: false,
            log_y: false,
        };
        timeline_chart(&axes, &series, &guides)
    }

    /// Whether polishing changed the strategy's schedule.
    pub fn polished(&self) -> bool {
        self.raw != (self.plan_peak_bytes, self.plan_cost, self.recomputed_ops)
    }

    /// How far the plan's overhead is above the certificate's proven least overhead, when the
    /// plan fits the certified budget (`None` without a certificate).
    pub fn certified_gap(&self) -> Option<f64> {
        let b = self.cost_bound.as_ref()?;
        (b.status == remat_planners::cost_bound::BoundStatus::Proven && self.plan_peak_bytes <= b.budget)
            .then(|| self.recompute_overhead() - b.overhead)
    }

    /// `plan cost / baseline cost − 1` (0 when the baseline costs nothing).
    pub fn recompute_overhead(&self) -> f64 {
        recompute_overhead(self.plan_cost, self.baseline_cost)
    }

    /// The report as JSON. `plan_seconds` is omitted when `deterministic` (for snapshots).
    pub fn to_json(&self, deterministic: bool) -> Value {
        let mut v = json!({
            "schema_version": REPORT_SCHEMA_VERSION,
            "function": self.function,
            "strategy": self.strategy,
            "budget_bytes": self.budget_bytes,
            "nodes": self.nodes,
            "argument_bytes": self.argument_bytes,
            "lower_bound_bytes": self.lower_bound_bytes,
            "baseline": {"peak_bytes": self.baseline_peak_bytes, "cost": self.baseline_cost},
            "plan": {
                "peak_bytes": self.plan_peak_bytes,
                "cost": self.plan_cost,
                "recompute_overhead": self.recompute_overhead(),
                "recomputed_ops": self.recomputed_ops,
            },
        });
        if self.fused_recomputations > 0 {
            v["plan"]["fused_recomputations"] = json!(self.fused_recomputations);
        }
        if self.polished() {
            let (peak, cost, recomputed) = self.raw;
            let overhead = recompute_overhead(cost, self.baseline_cost);
            v["raw_plan"] =
                json!({"peak_bytes": peak, "cost": cost, "recompute_overhead": overhead, "recomputed_ops": recomputed});
        }
        if !self.normalized.is_empty() {
            let n = &self.normalized;
            v["import"] = json!({
                "loops_unrolled": n.loops_unrolled,
                "forwarded_reads": n.forwarded_reads,
                "erased_ops": n.erased_ops,
                "merged_ops": n.merged_ops,
            });
        }
        if let Some(f) = &self.fusion {
            v["fusion"] = json!({
                "mode": f.mode.name(),
                "fused": f.fused,
                "unfused_nodes": f.nodes_before,
                "unfused_peak_bytes": f.peak_before,
                "unfused_cost": f.cost_before,
                "unfused_lower_bound_bytes": f.lower_bound_before,
                "saved_bytes": f.peak_before.saturating_sub(self.baseline_peak_bytes),
                "fusable_pairs": f.fusable_recomputations,
            });
        }
        if let Some(b) = &self.cost_bound {
            let mut c = json!({
                "budget_bytes": b.budget,
                "status": b.status.name(),
                "cost_lower_bound": b.cost,
                "overhead_lower_bound": b.overhead,
                "gap": self.certified_gap(),
                "anchor": b.anchor.as_ref().map(|(_, name)| name.as_str()),
                "anchors_tried": b.anchors.0,
                "anchor_candidates": b.anchors.1,
            });
            if !deterministic {
                c["seconds"] = json!(b.seconds);
            }
            v["certificate"] = c;
        }
        v["stop"] = stop_json(&self.stop);
        for facts in &self.facts {
            v[facts.key()] = facts.to_json(deterministic);
        }
        if !self.transfers.is_empty() {
            let transfers = self.transfers.iter().map(|(node, bytes, t)| {
                json!({"node": node.0, "bytes": bytes, "instance_step": t.instance, "offload_after_step": t.offload_after, "prefetch_before_step": t.prefetch_before})
            });
            v["host"] = json!({"peak_bytes": self.host_peak_bytes, "offloaded_bytes": self.offloaded_bytes, "transfers": Value::Array(transfers.collect())});
        }
        if !self.candidates.is_empty() {
            let rows = self.candidates.iter().map(|c| {
                let mut row = json!({
                    "strategy": c.strategy,
                    "peak_bytes": c.peak_bytes,
                    "cost": c.cost,
                    "recompute_overhead": c.recompute_overhead(self.baseline_cost),
                    "fits": c.fits,
                    "chosen": c.chosen,
                });
                if let Some(stop) = c.stop() {
                    row["stop"] = stop_json(&stop);
                }
                if let Some(note) = c.note() {
                    row["note"] = json!(note);
                }
                if !deterministic {
                    row["seconds"] = json!(c.seconds);
                }
                row
            });
            v["candidates"] = Value::Array(rows.collect());
        }
        if !deterministic {
            v["plan_seconds"] = json!(self.plan_seconds);
        }
        v
    }

    /// A table for people. `plan_seconds` is omitted when `deterministic`.
    pub fn to_table(&self, deterministic: bool) -> String {
        let percent = |part: u64| self.percent_of_baseline(part);
        let budget = match self.budget_bytes {
            Some(b) => format!("{} ({})", Bytes(b), percent(b)),
            None if self.strategy == "none" || self.strategy == remat_planners::GIVEN => "none".into(),
            None => "none (least memory)".into(),
        };
        let mut s = String::new();
        s.push_str(&format!("remat-opt report for @{}\n", self.function));
        s.push_str(&format!("  strategy          {}\n", self.strategy));
        s.push_str(&format!("  budget            {budget}\n"));
        s.push_str(&format!("  nodes             {}\n", self.nodes));
        s.push_str(&format!("  argument bytes    {}\n", Bytes(self.argument_bytes)));
        s.push_str(&format!(
            "  lower bound       {} ({})\n",
            Bytes(self.lower_bound_bytes),
            percent(self.lower_bound_bytes)
        ));
        s.push_str(&format!("  {:<16}  {:>12}  {:>8}  {:>12}\n", "", "peak", "", "cost"));
        s.push_str(&format!(
            "  {:<16}  {:>12}  {:>8}  {:>12.4e}\n",
            "baseline",
            Bytes(self.baseline_peak_bytes).to_string(),
            "100.0%",
            self.baseline_cost
        ));
        s.push_str(&format!(
            "  {:<16}  {:>12}  {:>8}  {:>12.4e}  +{:.1}% recompute, {} ops recomputed\n",
            "plan",
            Bytes(self.plan_peak_bytes).to_string(),
            percent(self.plan_peak_bytes),
            self.plan_cost,
            100.0 * self.recompute_overhead(),
            self.recomputed_ops
        ));
        if self.fused_recomputations > 0 {
            s.push_str(&format!(
                "  {:<16}  {} of them computed inside the op that reads them\n",
                "fused", self.fused_recomputations
            ));
        }
        if let Some(b) = &self.cost_bound {
            use remat_planners::cost_bound::BoundStatus;
            let line = match b.status {
                BoundStatus::Proven => {
                    let gap = match self.certified_gap() {
                        Some(gap) => format!("; this plan is {:.1} points above it", 100.0 * gap),
                        None => String::new(),
                    };
                    format!(
                        "any schedule within {} recomputes at least +{:.1}%{gap}",
                        Bytes(b.budget),
                        100.0 * b.overhead
                    )
                }
                BoundStatus::Infeasible => format!("no schedule fits {}", Bytes(b.budget)),
            };
            s.push_str(&format!("  {:<16}  {line}\n", "certificate"));
        }
        if self.polished() {
            let (peak, cost, recomputed) = self.raw;
            let overhead = recompute_overhead(cost, self.baseline_cost);
            s.push_str(&format!(
                "  {:<16}  {:>12}  {:>8}  {:>12.4e}  +{:.1}% recompute, {} ops recomputed\n",
                "before polishing",
                Bytes(peak).to_string(),
                percent(peak),
                cost,
                100.0 * overhead,
                recomputed
            ));
        }
        if !self.normalized.is_empty() {
            let n = &self.normalized;
            let mut parts = Vec::new();
            if n.loops_unrolled > 0 || n.forwarded_reads > 0 || n.erased_ops > 0 {
                parts.push(format!(
                    "{} loops unrolled; {} reads of stacked tensors forwarded, {} ops erased",
                    n.loops_unrolled, n.forwarded_reads, n.erased_ops
                ));
            }
            if n.merged_ops > 0 {
                parts.push(format!(
                    "{} ops of the input's own recomputation merged into the ops they repeat",
                    n.merged_ops
                ));
            }
            s += &line("import", parts.join("; "));
        }
        if let Some(f) = &self.fusion {
            s += &line(
                "fusion",
                format!(
                    "{}: {} fused, {} nodes of {}; unfused peak {} ({}), lower bound {}",
                    f.mode.name(),
                    f.fused,
                    self.nodes,
                    f.nodes_before,
                    Bytes(f.peak_before),
                    percent(f.peak_before),
                    Bytes(f.lower_bound_before)
                ),
            );
        }
        s += &line("stopped", self.stop.to_string());
        for facts in &self.facts {
            for (label, text) in facts.lines(deterministic) {
                s += &line(&label, text);
            }
        }
        if !self.transfers.is_empty() {
            s += &line(
                "host",
                format!(
                    "{} transfers, {} offloaded, {} on the host at most",
                    self.transfers.len(),
                    Bytes(self.offloaded_bytes),
                    Bytes(self.host_peak_bytes)
                ),
            );
        }
        if !self.candidates.is_empty() {
            s.push_str(&self.candidate_lines(deterministic));
        }
        if !deterministic {
            s.push_str(&format!("  planned in {:.3} s\n", self.plan_seconds));
        }
        s
    }

    /// `auto`'s comparison: one row per strategy, the chosen one marked `*`.
    fn candidate_lines(&self, deterministic: bool) -> String {
        let width = self.candidates.iter().map(|c| c.strategy.len()).max().unwrap_or(0).max("strategy".len());
        let seconds = |text: String| if deterministic { String::new() } else { format!("  {text:>8}") };
        let mut s = String::from("  strategies compared (* chosen):\n");
        s += &format!(
            "    {:<width$}  {:>10}  {:>8}  {:>9}  {:<4}{}\n",
            "strategy",
            "peak",
            "% base",
            "overhead",
            "fits",
            seconds("seconds".into())
        );
        for c in &self.candidates {
            let dash = || "-".to_string();
            let peak = c.peak_bytes.map(|p| Bytes(p).to_string()).unwrap_or_else(dash);
            let percent = c.peak_bytes.map(|p| self.percent_of_baseline(p)).unwrap_or_else(dash);
            let overhead =
                c.recompute_overhead(self.baseline_cost).map(|o| format!("{:+.1}%", 100.0 * o)).unwrap_or_else(dash);
            let fits = match c.peak_bytes {
                Some(_) if c.fits => "yes",
                Some(_) => "no",
                None => "-",
            };
            let mark = if c.chosen { '*' } else { ' ' };
            let row = format!(
                "  {mark} {:<width$}  {peak:>10}  {percent:>8}  {overhead:>9}  {fits:<4}{}",
                c.strategy,
                seconds(format!("{:.3}", c.seconds))
            );
            s += row.trim_end();
            if let Some(note) = c.note() {
                s += &format!("  ({note})");
            }
            s.push('\n');
        }
        s
    }

    /// `part` as a percentage of the baseline peak (`-` when the baseline peak is 0).
    fn percent_of_baseline(&self, part: u64) -> String {
        if self.baseline_peak_bytes > 0 {
            format!("{:.1}%", 100.0 * part as f64 / self.baseline_peak_bytes as f64)
        } else {
            "-".into()
        }
    }
}

/// A stop reason as the report's JSON writes it: `{"reason": …}`, with the proven `gap` where
/// there is one and the strategy a fallback used.
fn stop_json(stop: &StopReason) -> Value {
    let mut v = json!({ "reason": stop.name() });
    if let Some(gap) = stop.gap() {
        v["gap"] = json!(gap);
    }
    if let StopReason::Fallback { to, .. } = stop {
        v["fallback_to"] = json!(to);
    }
    v
}

/// One labelled fact of the report table (the stop reason and the strategies' facts).
fn line(label: &str, value: String) -> String {
    format!("  {label:<16}  {value}\n")
}

#[cfg(test)]
mod tests {
    /// This crate's directory as cargo gives it to the running test, not as it was when the test
    /// was compiled: a build cache reused from a checkout elsewhere (CI's fresh clone) keeps test
    /// binaries whose compile-time path no longer exists.
    fn manifest_dir() -> String {
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
    }

    use super::*;

    /// The documented schema is this version's.
    #[test]
    fn the_schema_file_is_this_version() {
        let path = std::path::Path::new(&manifest_dir()).join("../../docs/report.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(schema["properties"]["schema_version"]["const"], json!(REPORT_SCHEMA_VERSION));
        let reasons = schema["$defs"]["stop"]["properties"]["reason"]["enum"].as_array().unwrap().clone();
        let named: Vec<Value> = [
            StopReason::Completed,
            StopReason::Optimal,
            StopReason::Gap { gap: 0.1 },
            StopReason::TimeLimit { gap: None },
            StopReason::NoImprovement,
            StopReason::WorkLimit,
            StopReason::Fallback { to: "none", cause: remat_planners::FallbackCause::NoPlan },
        ]
        .iter()
        .map(|s| json!(s.name()))
        .collect();
        assert_eq!(reasons, named, "every stop reason, as the schema lists them");
    }

    #[test]
    fn stop_reasons_carry_their_gap_and_fallback() {
        assert_eq!(stop_json(&StopReason::Completed), json!({"reason": "completed"}));
        assert_eq!(stop_json(&StopReason::Optimal), json!({"reason": "optimal", "gap": 0.0}));
        let fallback = StopReason::Fallback { to: "greedy", cause: remat_planners::FallbackCause::TimeLimit };
        assert_eq!(stop_json(&fallback), json!({"reason": "fallback", "fallback_to": "greedy"}));
    }
}
