//! `remat-bench planner-time`: planning seconds against graph size on the generated families,
//! each plan under a time limit (its strategy's own, where one is given). A strategy that runs out of time at one size is not run at
//! larger ones of that family: its line stops there, with a cross at the limit. Writes
//! `planner-time.json`, `planner-time.csv` and `planner-time-FAMILY.svg`.

use crate::child::{run_plan, GraphSource, PlanOutcome};
use crate::families::Family;
use crate::sweep::write;
use remat_plot as svg;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One strategy at one size of one family.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TimeRow {
    pub family: String,
    pub strategy: String,
    /// The size asked for (the graph's own is `plan.nodes`).
    pub target_nodes: usize,
    #[serde(flatten)]
    pub plan: PlanOutcome,
}

/// Everything a planner-time run recorded (`planner-time.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TimeDoc {
    pub families: Vec<String>,
    pub strategies: Vec<String>,
    pub sizes: Vec<usize>,
    /// The budget, in percent of the input order's peak.
    pub percent: f64,
    /// Seconds each plan may take, unless its strategy has its own in `strategy_limits`.
    pub time_limit: f64,
    #[serde(default)]
    pub strategy_limits: Vec<(String, f64)>,
    pub rows: Vec<TimeRow>,
}

impl TimeDoc {
    /// The time limit of `strategy`'s plans.
    pub fn limit_of(&self, strategy: &str) -> f64 {
        self.strategy_limits.iter().find(|(s, _)| s == strategy).map_or(self.time_limit, |l| l.1)
    }
}

pub fn run(
    families: &[Family],
    sizes: &[usize],
    strategies: &[String],
    percent: f64,
    time_limit: f64,
    strategy_limits: &[(String, f64)],
    out: &Path,
) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut doc = TimeDoc {
        families: families.iter().map(|f| f.name().to_string()).collect(),
        strategies: strategies.to_vec(),
        sizes: sizes.to_vec(),
        percent,
        time_limit,
        strategy_limits: strategy_limits.to_vec(),
        rows: Vec::new(),
    };
    for &family in families {
        for s in strategies {
            for &nodes in sizes {
                let plan = run_plan(&GraphSource::Family(family, nodes), s, percent, doc.limit_of(s));
                let stop = plan.timed_out();
                eprintln!(
                    "planner-time: {} {s} {nodes}: {}",
                    family.name(),
                    plan.note.clone().unwrap_or_else(|| format!("{:.3}s", plan.seconds))
                );
                doc.rows.push(TimeRow {
                    family: family.name().to_string(),
                    strategy: s.clone(),
                    target_nodes: nodes,
                    plan,
                });
                if stop {
                    break;
                }
            }
        }
        write(&out.join(format!("planner-time-{}.svg", family.name())), &chart(&doc, family.name()))?;
    }
    let mut json = serde_json::to_string_pretty(&doc).expect("plain data serializes");
    json.push('\n');
    write(&out.join("planner-time.json"), &json)?;
    let mut csv = String::from("family,strategy,target_nodes,nodes,seconds,peak_over_baseline,fits,note\n");
    for r in &doc.rows {
        let ratio =
            r.plan.peak.map(|p| format!("{:.4}", p as f64 / r.plan.baseline_peak.max(1) as f64)).unwrap_or_default();
        let note = r.plan.note.clone().unwrap_or_default().replace([',', '\n', '"'], " ");
        csv += &format!(
            "{},{},{},{},{:.4},{ratio},{},{note}\n",
            r.family, r.strategy, r.target_nodes, r.plan.nodes, r.plan.seconds, r.plan.fits
        );
    }
    write(&out.join("planner-time.csv"), &csv)
}

/// Seconds against nodes per strategy (log-log), crosses where a strategy ran out of time.
fn chart(doc: &TimeDoc, family: &str) -> String {
    let mut series = Vec::new();
    let mut stops = Vec::new();
    for (i, s) in doc.strategies.iter().enumerate() {
        let rows: Vec<&TimeRow> = doc.rows.iter().filter(|r| r.family == family && &r.strategy == s).collect();
        let points = rows
            .iter()
            .filter(|r| r.plan.peak.is_some())
            .map(|r| (r.plan.nodes as f64, r.plan.seconds.max(1e-4)))
            .collect();
        if let Some(r) = rows.iter().find(|r| r.plan.timed_out()) {
            stops.push(svg::Stop { series: i, point: (r.target_nodes as f64, doc.limit_of(s)) });
        }
        series.push(svg::Series { name: s.clone(), points });
    }
    let title = format!("Planning time, generated {family} steps ({}% budget)", doc.percent);
    let axes = svg::Axes { title: &title, x_label: "nodes", y_label: "seconds", log_x: true, log_y: true };
    let mut limits: Vec<f64> = doc.strategies.iter().map(|s| doc.limit_of(s)).collect();
    limits.sort_by(f64::total_cmp);
    limits.dedup();
    let guides: Vec<svg::Guide> =
        limits.iter().map(|&l| svg::Guide { name: format!("time limit {l}s (× = stopped)"), y: l }).collect();
    svg::annotated_line_chart(&axes, &series, &guides, &stops)
}
