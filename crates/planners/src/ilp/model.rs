//! A mixed-integer linear program kept as plain rows, so that an assignment can be checked
//! against exactly what the solver saw, and solved with HiGHS through good_lp.

use good_lp::{variable, Expression, ProblemVariables, SolverModel, Variable};
use highs::HighsModelStatus;

/// A column: bounds, integrality and objective coefficient.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub lo: f64,
    pub hi: f64,
    pub integer: bool,
    pub cost: f64,
}

/// A row `lo ≤ Σ coef·x ≤ hi`.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub terms: Vec<(usize, f64)>,
    pub lo: f64,
    pub hi: f64,
}

/// The program: minimise `Σ cost·x` subject to the rows and column bounds.
#[derive(Clone, Debug, Default)]
pub(crate) struct Model {
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

/// How a solve ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Proven optimal within the gap option.
    Optimal,
    /// Out of time with an incumbent.
    TimeLimit,
    /// Proven infeasible.
    Infeasible,
    /// Out of time without any feasible point.
    NoSolution,
}

/// Why HiGHS gave no answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum SolverError {
    /// good_lp could not build the HiGHS model.
    #[error("{0}")]
    Model(String),
    /// HiGHS failed to run.
    #[error("HiGHS failed: {0}")]
    Highs(String),
    /// HiGHS ended with a status that is neither a solution nor infeasibility.
    #[error("HiGHS ended with status {0}")]
    Status(String),
}

/// A solver result.
#[derive(Clone, Debug)]
pub(crate) struct Solved {
    pub outcome: Outcome,
    /// Objective of the incumbent (`NaN` without one).
    pub objective: f64,
    /// Proven lower bound on the optimum (the objective itself for an LP).
    pub dual_bound: f64,
    /// The incumbent (empty without one).
    pub values: Vec<f64>,
    pub seconds: f64,
}

impl Solved {
    /// No solve: out of time before HiGHS could start.
    fn nothing(seconds: f64) -> Self {
        Solved { outcome: Outcome::NoSolution, objective: f64::NAN, dual_bound: f64::NAN, values: Vec::new(), seconds }
    }
}

/// Seconds a solve takes per nonzero beyond HiGHS's time limit (see [`Model::solve`]).
const SECONDS_PER_NONZERO: f64 = 1.0e-6;

/// Feasibility tolerance of [`Model::violation`], relative to the row's scale.
const TOLERANCE: f64 = 1e-6;

impl Model {
    pub fn binary(&mut self, cost: f64) -> usize {
        self.column(0.0, 1.0, true, cost)
    }
    pub fn continuous(&mut self, lo: f64, hi: f64) -> usize {
        self.column(lo, hi, false, 0.0)
    }
    pub fn column(&mut self, lo: f64, hi: f64, integer: bool, cost: f64) -> usize {
        self.columns.push(Column { lo, hi, integer, cost });
        self.columns.len() - 1
    }
    pub fn row(&mut self, terms: Vec<(usize, f64)>, lo: f64, hi: f64) {
        self.rows.push(Row { terms, lo, hi });
    }
    pub fn objective(&self, values: &[f64]) -> f64 {
        self.columns.iter().zip(values).map(|(c, v)| c.cost * v).sum()
    }

    /// The first bound or row `values` breaks, described; `None` when it satisfies all.
    pub fn violation(&self, values: &[f64]) -> Option<String> {
        for (j, (c, &v)) in self.columns.iter().zip(values).enumerate() {
            if v < c.lo - TOLERANCE || v > c.hi + TOLERANCE || (c.integer && (v - v.round()).abs() > TOLERANCE) {
                return Some(format!("column {j} = {v} breaks its bounds [{}, {}]", c.lo, c.hi));
            }
        }
        for (r, row) in self.rows.iter().enumerate() {
            let lhs: f64 = row.terms.iter().map(|&(j, a)| a * values[j]).sum();
            let scale = 1.0 + row.terms.iter().map(|&(j, a)| (a * values[j]).abs()).fold(0.0, f64::max);
            if lhs < row.lo - TOLERANCE * scale || lhs > row.hi + TOLERANCE * scale {
                return Some(format!("row {r}: {lhs} is outside [{}, {}]", row.lo, row.hi));
            }
        }
        None
    }

    /// Solves with HiGHS. `relax` drops integrality (the LP relaxation); `initial` is a
    /// feasible point to start from (a MIP warm start); `max_nodes` stops the branch and bound
    /// after that many nodes, a limit that, unlike time, gives the same answer on every
    /// machine. `time_limit` counts from the call: handing the model to HiGHS (seconds for
    /// millions of rows) is part of it, and when nothing is left for the solver it is not
    /// started ([`Outcome::NoSolution`]).
    pub fn solve(
        &self,
        relax: bool,
        time_limit: f64,
        mip_gap: f64,
        initial: Option<&[f64]>,
        verbose: bool,
        max_nodes: Option<usize>,
    ) -> Result<Solved, SolverError> {
        let started = std::time::Instant::now();
        let nonzeros: usize = self.rows.iter().map(|r| r.terms.len()).sum();
        // What a solve costs beyond HiGHS's own time limit grows with the model: the handoff
        // through good_lp (about 0.2 µs a nonzero), and HiGHS's presolve and IPX, which check
        // the clock seldom (up to about 0.8 µs a nonzero past the limit, measured on models of
        // 10^5–10^7 nonzeros). Both come out of the limit, and a model that leaves HiGHS no
        // time is not handed over at all: `time_limit` bounds the whole call.
        let overhead = nonzeros as f64 * SECONDS_PER_NONZERO;
        if time_limit - overhead <= 0.0 {
            tracing::debug!(
                target: "remat_planners::ilp",
                "not solving a model of {nonzeros} nonzeros: it needs about {overhead:.2} s beyond the solver's own, {time_limit:.2} s left"
            );
            return Ok(Solved::nothing(started.elapsed().as_secs_f64()));
        }
        let mut vars = ProblemVariables::new();
        let columns: Vec<Variable> = self
            .columns
            .iter()
            .map(|c| {
                let v = variable().bounds(c.lo..=c.hi);
                vars.add(if c.integer && !relax { v.integer() } else { v })
            })
            .collect();
        let objective: Expression =
            self.columns.iter().zip(&columns).filter(|(c, _)| c.cost != 0.0).map(|(c, &v)| c.cost * v).sum();
        let mut problem = vars.minimise(objective).using(good_lp::solvers::highs::highs);
        for row in &self.rows {
            let lhs: Expression = row.terms.iter().map(|&(j, a)| a * columns[j]).sum();
            if row.lo == row.hi {
                problem.add_constraint(lhs.eq(row.lo));
            } else {
                if row.lo.is_finite() {
                    problem.add_constraint(lhs.clone().geq(row.lo));
                }
                if row.hi.is_finite() {
                    problem.add_constraint(lhs.leq(row.hi));
                }
            }
        }
        // good_lp creates one HiGHS column per variable, in creation order.
        let mut model = problem.try_into_inner().map_err(|e| SolverError::Model(e.to_string()))?;
        if verbose {
            model.set_option("output_flag", true);
            model.set_option("log_to_console", true);
        } else {
            model.make_quiet();
        }
        let handoff = started.elapsed().as_secs_f64();
        tracing::debug!(target: "remat_planners::ilp", "model of {nonzeros} nonzeros handed to HiGHS in {handoff:.2} s");
        let left = time_limit - handoff - overhead;
        if left <= 0.0 {
            return Ok(Solved::nothing(started.elapsed().as_secs_f64()));
        }
        model.set_option("time_limit", left);
        model.set_option("mip_rel_gap", mip_gap.max(0.0));
        model.set_option("random_seed", 0);
        model.set_option("threads", 1);
        if let Some(nodes) = max_nodes {
            model.set_option("mip_max_nodes", nodes.min(i32::MAX as usize) as i32);
        }
        if let (Some(x), false) = (initial, relax) {
            model.set_solution(Some(x), None, None, None);
        }
        let solved = model.try_solve().map_err(|e| SolverError::Highs(format!("{e:?}")))?;
        tracing::debug!(target: "remat_planners::ilp", "HiGHS returned after {:.2} s of {left:.2} s", started.elapsed().as_secs_f64());
        let status = solved.status();
        let seconds = started.elapsed().as_secs_f64();
        let has_point = solved.primal_solution_status() == highs::HighsSolutionStatus::Feasible;
        let outcome = match status {
            HighsModelStatus::Optimal | HighsModelStatus::ObjectiveBound | HighsModelStatus::ObjectiveTarget
                if has_point =>
            {
                Outcome::Optimal
            }
            HighsModelStatus::Infeasible | HighsModelStatus::UnboundedOrInfeasible => Outcome::Infeasible,
            HighsModelStatus::ReachedTimeLimit
            | HighsModelStatus::ReachedIterationLimit
            | HighsModelStatus::ReachedSolutionLimit
            | HighsModelStatus::ReachedInterrupt
            | HighsModelStatus::ReachedMemoryLimit => {
                if has_point {
                    Outcome::TimeLimit
                } else {
                    Outcome::NoSolution
                }
            }
            other => return Err(SolverError::Status(format!("{other:?}"))),
        };
        if !has_point {
            return Ok(Solved { outcome, objective: f64::NAN, dual_bound: f64::NAN, values: Vec::new(), seconds });
        }
        let values = solved.get_solution().columns().to_vec();
        let objective = self.objective(&values);
        let dual_bound = if relax {
            objective
        } else {
            solved.double_info_value(c"mip_dual_bound").unwrap_or(f64::NEG_INFINITY).min(objective)
        };
        Ok(Solved { outcome, objective, dual_bound, values, seconds })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// max x + 1.5y, x + 2y ≤ 4.5, x ≤ 3, integers: the MIP optimum (2, 1) differs from the LP's (3, 0.75).
    #[test]
    fn solves_a_small_mip_and_its_relaxation() {
        let mut m = Model::default();
        let x = m.column(0.0, 3.0, true, -1.0);
        let y = m.column(0.0, 10.0, true, -1.5);
        m.row(vec![(x, 1.0), (y, 2.0)], f64::NEG_INFINITY, 4.5);
        let mip = m.solve(false, 10.0, 0.0, None, false, None).unwrap();
        assert_eq!(mip.outcome, Outcome::Optimal);
        assert_eq!(mip.values.iter().map(|v| v.round() as i64).collect::<Vec<_>>(), vec![2, 1]);
        assert!(m.violation(&mip.values).is_none());
        let lp = m.solve(true, 10.0, 0.0, None, false, None).unwrap();
        assert!((lp.objective - (-3.0 - 1.5 * 0.75)).abs() < 1e-6, "{}", lp.objective);
        assert!(m.violation(&[3.0, 1.0]).is_some());
    }

    /// A model whose handoff alone would outlast the time left is not handed to HiGHS.
    #[test]
    fn does_not_start_a_solve_it_cannot_finish_in_time() {
        let mut m = Model::default();
        let xs: Vec<usize> = (0..1000).map(|_| m.binary(1.0)).collect();
        for pair in xs.windows(2) {
            m.row(vec![(pair[0], 1.0), (pair[1], 1.0)], 1.0, f64::INFINITY);
        }
        let limit = 1998.0 * SECONDS_PER_NONZERO * 0.9;
        let solved = m.solve(false, limit, 0.0, None, false, None).unwrap();
        assert_eq!(solved.outcome, Outcome::NoSolution);
        assert!(solved.values.is_empty());
        assert_eq!(m.solve(false, 10.0, 0.0, None, false, None).unwrap().outcome, Outcome::Optimal);
    }

    #[test]
    fn reports_infeasibility() {
        let mut m = Model::default();
        let x = m.binary(1.0);
        m.row(vec![(x, 1.0)], 2.0, f64::INFINITY);
        assert_eq!(m.solve(false, 10.0, 0.0, None, false, None).unwrap().outcome, Outcome::Infeasible);
    }
}
