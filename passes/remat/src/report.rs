//! The memory report: one per planned function, as JSON (DESIGN.md, "Report JSON") and as a
//! table for people.

use remat_graph::units::Bytes;
use remat_planners::MeasuredPlan;
use serde_json::{json, Value};

/// What planning one function measured.
#[derive(Clone, Debug, PartialEq)]
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
    /// Seconds spent planning.
    pub plan_seconds: f64,
    /// The strategy's schedule before polishing: peak, cost, recomputed steps.
    pub raw: (u64, f64, usize),
}

impl Report {
    /// Collects the report of a measured plan.
    pub fn new(function: &str, strategy: &str, graph: &remat_graph::Graph, budget: Option<u64>, plan: &MeasuredPlan) -> Self {
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
            plan_seconds: plan.plan_seconds,
            raw: (plan.raw.peak_bytes, plan.raw.cost, plan.raw.recomputations),
        }
    }

    /// Whether polishing changed the strategy's schedule.
    pub fn polished(&self) -> bool {
        self.raw != (self.plan_peak_bytes, self.plan_cost, self.recomputed_ops)
    }

    /// `plan cost / baseline cost − 1` (0 when the baseline costs nothing).
    pub fn recompute_overhead(&self) -> f64 {
        if self.baseline_cost > 0.0 {
            self.plan_cost / self.baseline_cost - 1.0
        } else {
            0.0
        }
    }

    /// The report as JSON. `plan_seconds` is omitted when `deterministic` (for snapshots).
    pub fn to_json(&self, deterministic: bool) -> Value {
        let mut v = json!({
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
        if self.polished() {
            let (peak, cost, recomputed) = self.raw;
            let overhead = if self.baseline_cost > 0.0 { cost / self.baseline_cost - 1.0 } else { 0.0 };
            v["raw_plan"] = json!({"peak_bytes": peak, "cost": cost, "recompute_overhead": overhead, "recomputed_ops": recomputed});
        }
        if !deterministic {
            v["plan_seconds"] = json!(self.plan_seconds);
        }
        v
    }

    /// A table for people. `plan_seconds` is omitted when `deterministic`.
    pub fn to_table(&self, deterministic: bool) -> String {
        let percent = |part: u64| {
            if self.baseline_peak_bytes > 0 {
                format!("{:.1}%", 100.0 * part as f64 / self.baseline_peak_bytes as f64)
            } else {
                "-".into()
            }
        };
        let budget = match self.budget_bytes {
            Some(b) => format!("{} ({})", Bytes(b), percent(b)),
            None if self.strategy == "none" => "none".into(),
            None => "none (least memory)".into(),
        };
        let mut s = String::new();
        s.push_str(&format!("remat-opt report for @{}\n", self.function));
        s.push_str(&format!("  strategy          {}\n", self.strategy));
        s.push_str(&format!("  budget            {budget}\n"));
        s.push_str(&format!("  nodes             {}\n", self.nodes));
        s.push_str(&format!("  argument bytes    {}\n", Bytes(self.argument_bytes)));
        s.push_str(&format!("  lower bound       {} ({})\n", Bytes(self.lower_bound_bytes), percent(self.lower_bound_bytes)));
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
        if self.polished() {
            let (peak, cost, recomputed) = self.raw;
            let overhead = if self.baseline_cost > 0.0 { cost / self.baseline_cost - 1.0 } else { 0.0 };
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
        if !deterministic {
            s.push_str(&format!("  planned in {:.3} s\n", self.plan_seconds));
        }
        s
    }
}
