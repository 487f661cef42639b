//! `none`: the graph's own order with no recomputation — NoRemat in Kumar et al. §4, and the
//! baseline every report compares against.

use crate::{InvalidRequest, PlanError, PlanRequest, Planner};
use remat_graph::{validate, Schedule};

/// The input order, unchanged. Ignores the budget (the caller reports when it is exceeded).
pub struct NoRemat;

impl Planner for NoRemat {
    fn name(&self) -> &'static str {
        "none"
    }
    fn summary(&self) -> &'static str {
        "the input order, no recomputation (the baseline)"
    }
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError> {
        validate(request.graph, request.order).map_err(InvalidRequest::from)?;
        Ok(request.order.to_vec())
    }
}
