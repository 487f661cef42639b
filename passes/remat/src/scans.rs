//! Rolled plans for scans kept whole, before the strategy plans the rest of the step (see
//! `remat_mlir::rolled`): which residuals every layer saves, chosen under the budget.

use crate::{RematError, RematOptions};
use remat_graph::units::Budget;
use remat_mlir::{rolled, ImportedFunction};
use remat_planners::StrategyFacts;
use serde_json::json;
use std::sync::Arc;

/// What the rolled plan did, for the report (`"scan_residuals"`).
#[derive(Clone, Debug)]
pub struct ScanResidualFacts {
    /// Residual stacks of the step's scans, how many the backward could recompute, and how
    /// many it recomputes now.
    pub residuals: usize,
    pub recomputable: usize,
    pub recomputed: usize,
    /// Sets of residuals measured.
    pub tried: usize,
    /// Seconds spent choosing.
    pub seconds: f64,
    /// Peak and cost of the step as written, and of its input order once rolled.
    pub input_peak_bytes: u64,
    pub input_cost: f64,
    pub rolled_peak_bytes: u64,
    pub rolled_cost: f64,
}

impl StrategyFacts for ScanResidualFacts {
    fn key(&self) -> &'static str {
        "scan_residuals"
    }
    fn to_json(&self, deterministic: bool) -> serde_json::Value {
        let mut facts = json!({
            "residuals": self.residuals,
            "recomputable": self.recomputable,
            "recomputed": self.recomputed,
            "sets_measured": self.tried,
            "input_peak_bytes": self.input_peak_bytes,
            "input_cost": self.input_cost,
            "rolled_peak_bytes": self.rolled_peak_bytes,
            "rolled_cost": self.rolled_cost,
        });
        if !deterministic {
            facts["seconds"] = json!(self.seconds);
        }
        facts
    }
    fn lines(&self, _deterministic: bool) -> Vec<(String, String)> {
        vec![(
            "scan residuals".into(),
            format!(
                "{} of {} recomputed in the backward loop ({} could be; {} sets measured): the step's own order then peaks at {} B for {:+.1}% work",
                self.recomputed,
                self.residuals,
                self.recomputable,
                self.tried,
                self.rolled_peak_bytes,
                100.0 * (self.rolled_cost / self.input_cost.max(f64::MIN_POSITIVE) - 1.0)
            ),
        )]
    }
}

/// Under a budget, gives the function's scans kept whole a rolled plan (when
/// `options.plan_scan_residuals`): returns the function (imported again if it changed), the
/// facts, and the options to plan the rest with — the budget resolved against the step as
/// written, not the rolled one.
pub fn plan_scan_residuals(
    imported: ImportedFunction,
    options: &RematOptions,
) -> Result<(ImportedFunction, Option<ScanResidualFacts>, RematOptions), RematError> {
    let unchanged = |imported| Ok((imported, None, options.clone()));
    let Some(budget) = options.budget.filter(|_| options.plan_scan_residuals && options.schedule.is_none()) else {
        return unchanged(imported);
    };
    let input = remat_graph::simulate(&imported.graph, &imported.order)?;
    let bytes = budget.resolve(input.peak_bytes);
    let import_options = options.import_options();
    let started = std::time::Instant::now();
    let Some(choice) = rolled::choose(&imported, &import_options, bytes)? else { return unchanged(imported) };
    let imported = imported.apply_scan_residuals(&choice, &import_options)?;
    let facts = ScanResidualFacts {
        residuals: choice.residuals,
        recomputable: choice.recomputable,
        recomputed: choice.dropped.iter().map(|(_, carries)| carries.len()).sum(),
        tried: choice.tried,
        input_peak_bytes: input.peak_bytes,
        input_cost: input.cost,
        rolled_peak_bytes: choice.peak_bytes,
        rolled_cost: choice.cost,
        seconds: started.elapsed().as_secs_f64(),
    };
    tracing::info!(?facts, "scan residuals planned rolled");
    let options = RematOptions { budget: Some(Budget::Bytes(bytes)), ..options.clone() };
    Ok((imported, Some(facts), options))
}

/// The report of a plan made after [`plan_scan_residuals`]: its baseline is the step as
/// written, and it shows the facts.
pub fn report_scan_residuals(report: &mut crate::Report, facts: Option<ScanResidualFacts>) {
    if let Some(facts) = facts {
        report.baseline_peak_bytes = facts.input_peak_bytes;
        report.baseline_cost = facts.input_cost;
        report.plan_seconds += facts.seconds;
        report.facts.push(Arc::new(facts));
    }
}
