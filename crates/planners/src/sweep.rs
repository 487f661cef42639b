//! `--sweep`: every strategy's peak and recompute overhead over a list of budgets.
//!
//! [`sweep`] plans a graph with each strategy at each budget (a percentage of the baseline
//! peak, resolved as `--budget=N%` is), measuring each plan as `--remat=auto` does (simulated
//! after polishing, no search for the smallest feasible budget): a plan that misses its budget
//! is a row with its peak and `fits = false`. The [`SweepTable`] renders as a fixed-width
//! table, as CSV (stable column order) and as an SVG Pareto chart of peak against overhead.
//! Everything but the seconds is deterministic.

use crate::auto::{candidate, Candidate};
use crate::{InvalidRequest, PlanError, PlanRequest, Planner, PlannerOptions, STRATEGIES};
use remat_graph::units::{Budget, Bytes};
use remat_graph::{simulate, Graph, NodeId};

/// The name of the certificate's rows in the table and the CSV (`--certify`).
pub const CERTIFICATE: &str = "certificate";

/// The budgets `--sweep` uses when none are given, in percent of the baseline peak.
pub const DEFAULT_PERCENTS: [f64; 9] = [100.0, 90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 20.0];

/// The strategies `--sweep` compares by default: all of [`STRATEGIES`] but `auto` (which
/// would only repeat the best of the others).
pub fn default_strategies() -> Vec<&'static dyn Planner> {
    STRATEGIES.iter().copied().filter(|p| p.name() != "auto").collect()
}

/// One strategy at one budget.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRow {
    /// The budget in percent of the baseline peak.
    pub percent: f64,
    /// The budget in bytes.
    pub budget_bytes: u64,
    /// The strategy's plan: peak, cost, whether it fits, seconds, or why there is none.
    pub result: Candidate,
}

/// What a sweep measured.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepTable {
    /// Peak of the input order.
    pub baseline_peak: u64,
    /// Cost of the input order.
    pub baseline_cost: f64,
    /// The proven lower bound on any schedule's peak.
    pub lower_bound: u64,
    /// The strategies, in the order they were run (one SVG series each).
    pub strategies: Vec<&'static str>,
    /// One row per budget and strategy, budgets in the order given, strategies within each.
    pub rows: Vec<SweepRow>,
    /// After [`certify`](SweepTable::certify): the certificate at each budget, in the order of
    /// the budgets.
    pub bounds: Vec<(f64, crate::cost_bound::CostBound)>,
}

/// Plans `graph` with every strategy of `strategies` at every budget of `percents` (percent
/// of the baseline peak, each finite and non-negative). Fails only on a malformed request;
/// a strategy that fails at a budget is a row with a note.
pub fn sweep(
    graph: &Graph,
    order: &[NodeId],
    percents: &[f64],
    strategies: &[&dyn Planner],
    options: &PlannerOptions,
) -> Result<SweepTable, PlanError> {
    PlanRequest { graph, order, budget: None, options }.order_positions()?;
    if let Some(p) = percents.iter().find(|p| !(p.is_finite() && **p >= 0.0)) {
        return Err(InvalidRequest::SweepPercent(*p).into());
    }
    let baseline = simulate(graph, order).map_err(InvalidRequest::from)?;
    let mut rows = Vec::with_capacity(percents.len() * strategies.len());
    for &percent in percents {
        let budget_bytes = Budget::PercentOfBaseline(percent).resolve(baseline.peak_bytes);
        for planner in strategies {
            let (result, _) = candidate(*planner, graph, order, Some(budget_bytes), options);
            tracing::debug!(strategy = planner.name(), percent, peak = ?result.peak_bytes, "sweep");
            rows.push(SweepRow { percent, budget_bytes, result });
        }
    }
    Ok(SweepTable {
        baseline_peak: baseline.peak_bytes,
        baseline_cost: baseline.cost,
        lower_bound: crate::bound_for(graph, options.chain.bandwidth.is_some()),
        strategies: strategies.iter().map(|p| p.name()).collect(),
        rows,
        bounds: Vec::new(),
    })
}

impl SweepTable {
    /// Adds the certificate (`--certify`) at each budget: the least recomputation any schedule
    /// within it needs ([`crate::cost_bound`]), each search stopped at `time_limit` seconds.
    pub fn certify(&mut self, graph: &Graph, order: &[NodeId], time_limit: f64) {
        let mut budgets: Vec<(f64, u64)> = Vec::new();
        for row in &self.rows {
            if !budgets.iter().any(|b| b.0 == row.percent) {
                budgets.push((row.percent, row.budget_bytes));
            }
        }
        self.bounds = budgets
            .into_iter()
            .map(|(percent, bytes)| {
                let deadline = crate::Deadline::after(time_limit);
                (percent, crate::cost_bound::recompute_lower_bound(graph, order, bytes, deadline))
            })
            .collect();
    }

    /// The certificate at `percent`, when [`certify`](SweepTable::certify) ran.
    fn bound_at(&self, percent: f64) -> Option<&crate::cost_bound::CostBound> {
        self.bounds.iter().find(|b| b.0 == percent).map(|b| &b.1)
    }

    /// `part` in percent of the baseline peak (0 when the baseline peak is 0).
    pub fn percent_of_baseline(&self, part: u64) -> f64 {
        if self.baseline_peak > 0 {
            100.0 * part as f64 / self.baseline_peak as f64
        } else {
            0.0
        }
    }

    /// A fixed-width table for people, headed by `function`'s baseline and lower bound. The
    /// seconds column is left out when `deterministic`.
    pub fn to_table(&self, function: &str, deterministic: bool) -> String {
        let mut s = format!(
            "sweep of @{function}: baseline peak {}, cost {:.4e}; lower bound {} ({:.1}%)\n",
            Bytes(self.baseline_peak),
            self.baseline_cost,
            Bytes(self.lower_bound),
            self.percent_of_baseline(self.lower_bound)
        );
        let width = self
            .strategies
            .iter()
            .map(|n| n.len())
            .max()
            .unwrap_or(0)
            .max("strategy".len())
            .max(if self.bounds.is_empty() { 0 } else { CERTIFICATE.len() });
        let seconds_header = if deterministic { String::new() } else { format!("  {:>8}", "seconds") };
        s += &format!(
            "{:>6}  {:>10}  {:<width$}  {:>10}  {:>7}  {:>9}  {:<4}{seconds_header}\n",
            "budget", "bytes", "strategy", "peak", "% base", "overhead", "fits"
        );
        for (i, row) in self.rows.iter().enumerate() {
            let c = &row.result;
            let peak = c.peak_bytes.map(|p| Bytes(p).to_string()).unwrap_or_else(|| "-".into());
            let percent =
                c.peak_bytes.map(|p| format!("{:.1}%", self.percent_of_baseline(p))).unwrap_or_else(|| "-".into());
            let overhead = c
                .recompute_overhead(self.baseline_cost)
                .map(|o| format!("{:+.1}%", 100.0 * o))
                .unwrap_or_else(|| "-".into());
            let fits = match c.peak_bytes {
                Some(_) if c.fits => "yes",
                Some(_) => "no",
                None => "-",
            };
            let seconds = if deterministic { String::new() } else { format!("  {:>8.3}", c.seconds) };
            let line = format!(
                "{:>6}  {:>10}  {:<width$}  {peak:>10}  {percent:>7}  {overhead:>9}  {fits:<4}{seconds}",
                format!("{}%", row.percent),
                Bytes(row.budget_bytes).to_string(),
                c.strategy
            );
            s += line.trim_end();
            if let Some(note) = c.note() {
                s += &format!("  ({note})");
            }
            s.push('\n');
            let last_of_budget = self.rows.get(i + 1).is_none_or(|next| next.percent != row.percent);
            if let (true, Some(bound)) = (last_of_budget, self.bound_at(row.percent)) {
                let (overhead, fits) = match bound.status {
                    crate::cost_bound::BoundStatus::Proven => (format!(">={:+.1}%", 100.0 * bound.overhead), "any"),
                    crate::cost_bound::BoundStatus::Infeasible => ("-".to_string(), "none"),
                };
                let line = format!(
                    "{:>6}  {:>10}  {:<width$}  {:>10}  {:>7}  {overhead:>9}  {fits:<4}",
                    format!("{}%", row.percent),
                    Bytes(row.budget_bytes).to_string(),
                    CERTIFICATE,
                    "-",
                    "-",
                );
                s += line.trim_end();
                s.push('\n');
            }
        }
        s
    }

    /// The rows as CSV with a header: `budget_percent, budget_bytes, strategy, peak_bytes,
    /// peak_percent, cost, recompute_overhead, fits, seconds, note` (empty fields where a
    /// strategy has no plan).
    pub fn to_csv(&self) -> String {
        let mut s = String::from(
            "budget_percent,budget_bytes,strategy,peak_bytes,peak_percent,cost,recompute_overhead,fits,seconds,note\n",
        );
        for row in &self.rows {
            let c = &row.result;
            let fields = [
                row.percent.to_string(),
                row.budget_bytes.to_string(),
                c.strategy.to_string(),
                c.peak_bytes.map(|p| p.to_string()).unwrap_or_default(),
                c.peak_bytes.map(|p| format!("{:.4}", self.percent_of_baseline(p))).unwrap_or_default(),
                c.cost.map(|v| v.to_string()).unwrap_or_default(),
                c.recompute_overhead(self.baseline_cost).map(|o| format!("{o:.6}")).unwrap_or_default(),
                if c.peak_bytes.is_some() { c.fits.to_string() } else { String::new() },
                format!("{:.3}", c.seconds),
                c.note().unwrap_or_default(),
            ];
            let fields: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            s += &fields.join(",");
            s.push('\n');
        }
        // The certificate's rows: its cost is the least any schedule within the budget costs.
        for (percent, bound) in &self.bounds {
            let proven = bound.status == crate::cost_bound::BoundStatus::Proven;
            let fields = [
                percent.to_string(),
                bound.budget.to_string(),
                CERTIFICATE.to_string(),
                String::new(),
                String::new(),
                if proven { (self.baseline_cost + bound.cost).to_string() } else { String::new() },
                if proven { format!("{:.6}", bound.overhead) } else { String::new() },
                String::new(),
                format!("{:.3}", bound.seconds),
                if proven { "proven lower bound".to_string() } else { "no schedule fits".to_string() },
            ];
            let fields: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            s += &fields.join(",");
            s.push('\n');
        }
        s
    }

    /// An SVG Pareto chart: x the peak in percent of the baseline, y the recompute overhead in
    /// percent, one series per strategy whose points are its plans within their budgets, drawn
    /// as its Pareto front (see [`remat_plot::pareto_chart`]).
    pub fn to_svg(&self, function: &str) -> String {
        let series: Vec<remat_plot::Series> = self
            .strategies
            .iter()
            .map(|&name| remat_plot::Series {
                name: name.to_string(),
                points: self
                    .rows
                    .iter()
                    .map(|row| &row.result)
                    .filter(|c| c.strategy == name && c.fits)
                    .filter_map(|c| {
                        Some((
                            self.percent_of_baseline(c.peak_bytes?),
                            100.0 * c.recompute_overhead(self.baseline_cost)?,
                        ))
                    })
                    .collect(),
            })
            .collect();
        let title = format!("@{function}: peak vs recompute overhead over budgets");
        let axes = remat_plot::Axes {
            title: &title,
            x_label: "peak (% of the input order's peak)",
            y_label: "recompute overhead (%)",
            log_x: false,
            log_y: false,
        };
        remat_plot::pareto_chart(&axes, &series)
    }
}

/// Quotes a CSV field when it holds a comma, a quote or a line break.
fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy;
    use remat_graph::training::FeedForward;

    fn table() -> SweepTable {
        let graph = FeedForward::mlp(6).generate();
        let order = graph.topological_schedule();
        let strategies: Vec<&dyn Planner> =
            ["none", "greedy", "treewidth"].iter().filter_map(|n| strategy(n)).collect();
        sweep(&graph, &order, &[100.0, 60.0, 1.0], &strategies, &PlannerOptions::default()).unwrap()
    }

    #[test]
    fn certified_sweeps_add_the_bound_below_each_budget() {
        let graph = FeedForward::mlp(6).generate();
        let order = graph.topological_schedule();
        let mut t = table();
        t.certify(&graph, &order, 10.0);
        assert_eq!(t.bounds.iter().map(|b| b.0).collect::<Vec<_>>(), [100.0, 60.0, 1.0]);
        let text = t.to_table("f", true);
        let lines: Vec<&str> = text.lines().collect();
        // Header, column names, then per budget three strategies and the certificate.
        assert!(lines[5].contains("certificate") && lines[5].contains(">=+0.0%"), "{text}");
        assert!(lines[9].starts_with("   60%") && lines[9].contains("certificate"), "{text}");
        // At 1 % nothing fits: below the peak lower bound every anchor's footprint is over.
        assert!(lines[13].starts_with("    1%") && lines[13].ends_with("none"), "{text}");
        let csv = t.to_csv();
        assert_eq!(csv.lines().filter(|l| l.contains(",certificate,")).count(), 3, "{csv}");
        // The bound is never above a plan within its budget.
        for (percent, bound) in &t.bounds {
            for row in t.rows.iter().filter(|r| r.percent == *percent && r.result.fits) {
                assert!(bound.cost <= row.result.cost.unwrap() - t.baseline_cost + 1e-6, "{percent}%: {bound:?}");
            }
        }
    }

    #[test]
    fn every_budget_and_strategy_is_a_row() {
        let t = table();
        assert_eq!(t.rows.len(), 9);
        let keys: Vec<(f64, &str)> = t.rows.iter().map(|r| (r.percent, r.result.strategy)).collect();
        assert_eq!(keys[..4], [(100.0, "none"), (100.0, "greedy"), (100.0, "treewidth"), (60.0, "none")]);
        for row in &t.rows {
            let c = &row.result;
            let peak = c.peak_bytes.expect("these strategies always plan");
            assert_eq!(c.fits, peak <= row.budget_bytes);
            assert!(peak >= t.lower_bound);
        }
        assert!(t.rows[0].result.fits && !t.rows[3].result.fits, "none fits at 100% only");
        assert!(t.rows[6..].iter().all(|r| !r.result.fits), "1% is below the lower bound");
    }

    #[test]
    fn renderers_are_deterministic_apart_from_seconds() {
        let (a, b) = (table(), table());
        assert_eq!(a.to_table("f", true), b.to_table("f", true));
        let strip =
            |csv: String| csv.lines().map(|l| l.split(',').take(8).collect::<Vec<_>>().join(",")).collect::<Vec<_>>();
        assert_eq!(strip(a.to_csv()), strip(b.to_csv()));
        let csv = a.to_csv();
        assert!(csv.starts_with(
            "budget_percent,budget_bytes,strategy,peak_bytes,peak_percent,cost,recompute_overhead,fits,seconds,note\n"
        ));
        assert_eq!(csv.lines().count(), 10);
        assert!(csv.contains("\n100,") && csv.contains(",none,"));
        let svg = a.to_svg("f");
        assert!(svg.contains(">greedy<") && svg.contains(">treewidth<") && svg.ends_with("</svg>\n"));
    }

    #[test]
    fn a_bad_request_is_an_error() {
        let graph = FeedForward::mlp(2).generate();
        let order = graph.topological_schedule();
        assert!(sweep(&graph, &order, &[f64::NAN], &default_strategies(), &PlannerOptions::default()).is_err());
        assert!(sweep(&graph, &order[1..], &[50.0], &default_strategies(), &PlannerOptions::default()).is_err());
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
    }
}
