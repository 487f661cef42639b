//! `remat-lower-stablehlo`: lower StableHLO to upstream dialects, keeping the semantics the
//! StableHLO specification (openxla/stablehlo, `docs/spec.md`) defines:
//!
//! * the ops of [`legalize::LEGALIZED`] (elementwise arithmetic and math, `compare`, `select`,
//!   `convert`, `constant`, `broadcast_in_dim`, `reshape`, `transpose`, `dot_general`, `reduce`,
//!   `iota`, slices, `concatenate`, `reverse`, `pad`, `gather`, `convolution`, `reduce_window`)
//!   — to linalg, tensor, arith and math on tensors, in-tree, as jaxlib's
//!   `stablehlo-legalize-to-linalg` decomposes them (see [`legalize`]), so StableHLO steps run
//!   without jaxlib;
//!
//! and the ops that `stablehlo-legalize-to-linalg` leaves in real JAX training steps
//! (examples/README.md, "`*.linalg.mlir`"):
//!
//! * `stablehlo.optimization_barrier` (from `jax.checkpoint`) — its results are its operands;
//!   the barrier only constrains XLA's scheduler, which is not in the loop here.
//! * `stablehlo.while` (from `lax.scan`, `lax.fori_loop`) — `scf.for` over the same body when
//!   its trip count can be evaluated before the step runs (the condition is then dropped);
//!   otherwise `scf.while` with the same regions: the condition's `stablehlo.return %p :
//!   tensor<i1>` becomes `tensor.extract` + `scf.condition`. The body's `stablehlo.return`
//!   becomes `scf.yield`.
//! * `stablehlo.scatter` (integer-label losses, embedding gradients) — see [`scatter`].
//!
//! MLIR 22 has no StableHLO dialect, so these ops are unregistered and read in generic form;
//! any other StableHLO op left is an error naming it and its location.

mod legalize;
mod scatter;

pub(crate) use legalize::{apply as legalize_apply, plan as legalize_plan};
pub use legalize::{LEGALIZED, LEGALIZED_CHLO};

use mlir_sys::*;
use remat_mlir::ir::{self, Op, Val};
use remat_mlir::MlirError;
use std::ffi::CString;

/// What the pass lowered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoweringStats {
    /// Ops legalized to linalg, tensor, arith and math.
    pub legalized: usize,
    pub barriers: usize,
    pub whiles: usize,
    pub scatters: usize,
}

/// Lowers every StableHLO op nested in `root` (legalized ones first, then the leftovers); fails
/// on any StableHLO op it cannot lower (and changes nothing then).
pub fn lower_stablehlo(root: Op) -> Result<LoweringStats, OpError> {
    // Check first, so a failure leaves the IR untouched.
    let templates = legalize::plan(root)?;
    let legalized: std::collections::HashSet<usize> = templates.iter().map(|(op, _)| ir::op_key(*op)).collect();
    // Ops in the body of a StableHLO op (a reduce's, a scatter's) are read by their owner.
    let all: Vec<Op> = ir::nested_ops(root)
        .into_iter()
        .filter(|&op| !legalized.contains(&ir::op_key(op)) && !legalize::inside_body(op))
        .collect();
    for &op in &all {
        let name = ir::op_name(op);
        if name.starts_with("chlo.") {
            return Err(error_at(
                op,
                format!(
                    "'{name}' is not supported by the CPU lowering (supported: chlo.{})",
                    LEGALIZED_CHLO.join(", chlo.")
                ),
            ));
        }
        if name.starts_with("stablehlo.")
            && !matches!(
                name.as_str(),
                "stablehlo.optimization_barrier" | "stablehlo.while" | "stablehlo.scatter" | "stablehlo.return"
            )
        {
            return Err(error_at(op, format!("'{name}' is not supported by the CPU lowering (supported: stablehlo.{}, while, scatter and optimization_barrier)", legalize::LEGALIZED.join(", "))));
        }
        if name == "stablehlo.scatter" {
            scatter::ScatterPlan::analyze(op)?;
        }
    }
    // Only the ops to lower, named now: lowering a scatter destroys the ops in its region.
    let targets: Vec<(Op, String)> = all
        .into_iter()
        .map(|op| (op, ir::op_name(op)))
        .filter(|(_, name)| {
            matches!(name.as_str(), "stablehlo.optimization_barrier" | "stablehlo.while" | "stablehlo.scatter")
        })
        .collect();
    let mut stats = LoweringStats { legalized: legalize::apply(root, templates)?, ..LoweringStats::default() };
    for (op, name) in targets {
        match name.as_str() {
            "stablehlo.optimization_barrier" => {
                for (result, operand) in ir::results(op).into_iter().zip(ir::operands(op)) {
                    ir::replace_all_uses(result, operand);
                }
                ir::erase(op);
                stats.barriers += 1;
            }
            "stablehlo.while" => {
                lower_while(op)?;
                stats.whiles += 1;
            }
            _ => {
                scatter::lower_scatter(op)?;
                stats.scatters += 1;
            }
        }
    }
    Ok(stats)
}

/// An error at an op (so the pass can emit its diagnostic there).
#[derive(Debug)]
pub struct OpError {
    pub op: Op,
    pub message: String,
}

impl OpError {
    /// As an [`MlirError`] with the op's location.
    pub fn to_mlir_error(&self) -> MlirError {
        let location = ir::location_text(ir::location(self.op));
        MlirError {
            location: (!location.is_empty() && location != "loc(unknown)").then_some(location),
            message: self.message.clone(),
        }
    }
}

pub(crate) fn error_at(op: Op, message: impl Into<String>) -> OpError {
    OpError { op, message: message.into() }
}

/// Creates an operation (not inserted anywhere).
pub(crate) fn create_op(
    name: &str,
    location: MlirLocation,
    operands: &[Val],
    results: &[MlirType],
    regions: Vec<MlirRegion>,
) -> Op {
    let c_name = CString::new(name).expect("op names have no NUL");
    unsafe {
        let mut state = mlirOperationStateGet(mlirStringRefCreateFromCString(c_name.as_ptr()), location);
        mlirOperationStateAddOperands(&mut state, operands.len() as isize, operands.as_ptr());
        mlirOperationStateAddResults(&mut state, results.len() as isize, results.as_ptr());
        mlirOperationStateAddOwnedRegions(&mut state, regions.len() as isize, regions.as_ptr());
        mlirOperationCreate(&mut state)
    }
}

/// Sets `op`'s `operandSegmentSizes` (how its variadic operand groups split its operands).
pub(crate) fn set_segments(op: Op, sizes: &[i32]) {
    unsafe {
        let attr = mlirDenseI32ArrayGet(mlirOperationGetContext(op), sizes.len() as isize, sizes.as_ptr());
        let key = CString::new("operandSegmentSizes").expect("no NUL");
        mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString(key.as_ptr()), attr);
    }
}

/// Inserts `op` right before `reference` (in `reference`'s block).
pub(crate) fn insert_before(reference: Op, op: Op) -> Op {
    ir::insert_before(ir::op_block(reference), reference, op);
    op
}

fn result_types(op: Op) -> Vec<MlirType> {
    ir::results(op).into_iter().map(ir::value_type).collect()
}

/// The single block of region `index` of `op`, checked.
fn single_block(op: Op, index: usize, what: &str) -> Result<MlirBlock, OpError> {
    let regions = ir::regions(op);
    let blocks = regions.get(index).map(|&r| ir::blocks(r)).unwrap_or_default();
    match blocks.as_slice() {
        [b] => Ok(*b),
        _ => Err(error_at(op, format!("expected the {what} region to have exactly one block"))),
    }
}

/// The last op of `block` (MLIR cannot tell that an unregistered op is a terminator).
fn terminator(block: MlirBlock) -> Op {
    ir::block_ops(block).last().copied().unwrap_or(Op { ptr: std::ptr::null_mut() })
}

fn lower_while(op: Op) -> Result<(), OpError> {
    let location = ir::location(op);
    let condition = single_block(op, 0, "condition")?;
    let body = single_block(op, 1, "body")?;
    let cond_return = terminator(condition);
    let body_return = terminator(body);
    if cond_return.ptr.is_null()
        || body_return.ptr.is_null()
        || ir::op_name(cond_return) != "stablehlo.return"
        || ir::op_name(body_return) != "stablehlo.return"
    {
        return Err(error_at(op, "stablehlo.while regions must end in stablehlo.return"));
    }
    let [predicate] = ir::operands(cond_return)[..] else {
        return Err(error_at(cond_return, "the condition of stablehlo.while must return one tensor<i1>"));
    };

    if let Some(trips) = remat_mlir::static_trip_count(op, remat_mlir::MAX_COUNTED_TRIPS) {
        return lower_counted_while(op, body, body_return, trips);
    }

    // Condition: tensor<i1> -> i1, then scf.condition(%p) with the region's arguments.
    let i1 = unsafe { mlirIntegerTypeGet(mlirOperationGetContext(op), 1) };
    let extract =
        insert_before(cond_return, create_op("tensor.extract", ir::location(cond_return), &[predicate], &[i1], vec![]));
    let mut forwarded = vec![ir::results(extract)[0]];
    forwarded.extend(ir::block_arguments(condition));
    insert_before(cond_return, create_op("scf.condition", ir::location(cond_return), &forwarded, &[], vec![]));
    ir::erase(cond_return);
    // Body: stablehlo.return -> scf.yield.
    insert_before(
        body_return,
        create_op("scf.yield", ir::location(body_return), &ir::operands(body_return), &[], vec![]),
    );
    ir::erase(body_return);

    let regions: Vec<MlirRegion> = ir::regions(op)
        .into_iter()
        .map(|old| unsafe {
            let new = mlirRegionCreate();
            mlirRegionTakeBody(new, old);
            new
        })
        .collect();
    let scf_while = insert_before(op, create_op("scf.while", location, &ir::operands(op), &result_types(op), regions));
    for (old, new) in ir::results(op).into_iter().zip(ir::results(scf_while)) {
        ir::replace_all_uses(old, new);
    }
    ir::erase(op);
    Ok(())
}

/// `linalg.copy ins(%value) outs(%destination)`, inserted before `before`.
fn copy_into(value: Val, destination: Val, before: Op) -> Val {
    let location = ir::location(before);
    let tensor = ir::value_type(destination);
    let region = unsafe {
        let element = mlirShapedTypeGetElementType(tensor);
        let region = mlirRegionCreate();
        let types = [element, element];
        let locations = [location, location];
        let block = mlirBlockCreate(2, types.as_ptr(), locations.as_ptr());
        mlirRegionAppendOwnedBlock(region, block);
        let first = mlirBlockGetArgument(block, 0);
        mlirBlockAppendOwnedOperation(block, create_op("linalg.yield", location, &[first], &[], vec![]));
        region
    };
    let copy = create_op("linalg.copy", location, &[value, destination], &[tensor], vec![region]);
    set_segments(copy, &[1, 1]);
    ir::results(insert_before(before, copy))[0]
}

/// A `stablehlo.while` that runs `trips` iterations, known before the step runs (a scan, a
/// `fori_loop`): `scf.for %i = 0 to trips` carrying the same values through the same body;
/// the condition, pure integer bookkeeping, is dropped. Its iterations bufferize as the
/// body's ops say: an `scf.while` condition copies every carried value that its body
/// replaces, in every iteration (one-shot bufferization cannot make the condition's
/// forwarded values alias the body's fresh results). Values the body returns unchanged (the
/// weights a scan reads) are not carried but read from above: carried, bufferization copies
/// them before the loop.
fn lower_counted_while(op: Op, body: MlirBlock, body_return: Op, trips: usize) -> Result<(), OpError> {
    let location = ir::location(op);
    let context = unsafe { mlirOperationGetContext(op) };
    let index = unsafe { mlirIndexTypeGet(context) };
    let bound = |value: usize| {
        let attr = unsafe { mlirIntegerAttrGet(index, value as i64) };
        let constant = insert_before(op, create_op("arith.constant", location, &[], &[index], vec![]));
        let key = CString::new("value").expect("no NUL");
        unsafe { mlirOperationSetAttributeByName(constant, mlirStringRefCreateFromCString(key.as_ptr()), attr) };
        ir::results(constant)[0]
    };
    let inits = ir::operands(op);
    let arguments = ir::block_arguments(body);
    let yields = ir::operands(body_return);
    if arguments.len() != inits.len() || yields.len() != inits.len() {
        return Err(error_at(op, "stablehlo.while must carry as many values as its body takes and returns"));
    }
    let invariant: Vec<bool> = arguments.iter().zip(&yields).map(|(&a, &y)| ir::same_value(a, y)).collect();
    let carried: Vec<usize> = (0..inits.len()).filter(|&k| !invariant[k]).collect();
    let mut operands = vec![bound(0), bound(trips), bound(1)];
    operands.extend(carried.iter().map(|&k| inits[k]));
    // A value the body replaces is copied into its own buffer at the end of the body, so
    // that every carried value is written in place: the loop's results are its inits'
    // buffers, freed after their last uses. Yielded as fresh buffers, ownership-based
    // deallocation could only free the results and the inits together, at the end of the
    // function (a result may be its init when the loop runs no iteration).
    // A replaced value that is itself a carried value (or a view of one: a PRNG's rounds swap
    // their words) is staged in a fresh buffer first, or its write-back would overwrite it
    // before it is read.
    let changing: Vec<Val> = carried.iter().map(|&k| arguments[k]).collect();
    let staged: Vec<Val> = carried
        .iter()
        .map(|&k| {
            let y = yields[k];
            if remat_mlir::writes_in_place(y, arguments[k]) || !remat_mlir::is_carried_view(y, &changing) {
                return y;
            }
            let empty = insert_before(
                body_return,
                create_op("tensor.empty", ir::location(body_return), &[], &[ir::value_type(y)], vec![]),
            );
            copy_into(y, ir::results(empty)[0], body_return)
        })
        .collect();
    let carried_yields: Vec<Val> = carried
        .iter()
        .zip(&staged)
        .map(
            |(&k, &y)| {
                if remat_mlir::writes_in_place(y, arguments[k]) {
                    y
                } else {
                    copy_into(y, arguments[k], body_return)
                }
            },
        )
        .collect();
    insert_before(body_return, create_op("scf.yield", ir::location(body_return), &carried_yields, &[], vec![]));
    ir::erase(body_return);
    for k in (0..inits.len()).rev().filter(|&k| invariant[k]) {
        ir::replace_all_uses(arguments[k], inits[k]);
        unsafe { mlirBlockEraseArgument(body, k as u32) };
    }
    // The induction variable comes first in an scf.for body; the carried values follow.
    unsafe { mlirBlockInsertArgument(body, 0, index, location) };
    let region = unsafe {
        let new = mlirRegionCreate();
        mlirRegionTakeBody(new, ir::regions(op)[1]);
        new
    };
    let types: Vec<MlirType> = carried.iter().map(|&k| ir::value_type(inits[k])).collect();
    let scf_for = insert_before(op, create_op("scf.for", location, &operands, &types, vec![region]));
    let new_results = ir::results(scf_for);
    for (k, old) in ir::results(op).into_iter().enumerate() {
        match carried.iter().position(|&c| c == k) {
            Some(n) => ir::replace_all_uses(old, new_results[n]),
            None => ir::replace_all_uses(old, inits[k]),
        }
    }
    ir::erase(op);
    Ok(())
}
