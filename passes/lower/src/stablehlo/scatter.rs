//! `stablehlo.scatter` → a loop nest on tensors (`scf.for` + `tensor.extract`/`tensor.insert`).
//!
//! Semantics follow the StableHLO specification of `scatter` (one input): for every index `u`
//! of `updates`,
//!
//! * `update_scatter_dims` = the dimensions of `updates` not in `update_window_dims`; their
//!   coordinates pick a start vector out of `scatter_indices` (along `index_vector_dim`);
//! * `full_start_index[d]` = that start for the operand dimensions listed in
//!   `scatter_dims_to_operand_dims`, 0 elsewhere;
//! * `full_batching_index` copies the coordinates of the index batch dimensions listed in
//!   `scatter_indices_batching_dims` to the operand dimensions in `input_batching_dims`;
//! * `full_window_index` spreads `u`'s `update_window_dims` coordinates over the operand
//!   dimensions in neither `inserted_window_dims` nor `input_batching_dims`;
//! * `result[full_start_index + full_batching_index + full_window_index] = f(result[…], updates[u])`, where `f` is the
//!   update computation, evaluated in the loop on scalars.
//!
//! A start index whose window does not fit in the operand skips that update, as XLA does (the
//! specification leaves it implementation-defined).
//!
//! The result is written into a fresh buffer (`tensor.empty` + `linalg.copy` of the operand), so
//! bufferization allocates exactly the scatter's result bytes, as the memory model says: never
//! an in-place update of the operand that the model would not know about.

use super::{create_op, error_at, set_segments, OpError};
use crate::LowerError;
use mlir_sys::*;
use remat_mlir::ir::{self, Op, Val};
use std::collections::HashMap;
use std::ffi::CString;

/// The dimension numbers of one scatter, checked against its operand shapes.
#[derive(Debug)]
pub(crate) struct ScatterPlan {
    operand_shape: Vec<i64>,
    indices_shape: Vec<i64>,
    updates_shape: Vec<i64>,
    update_window_dims: Vec<i64>,
    inserted_window_dims: Vec<i64>,
    input_batching_dims: Vec<i64>,
    scatter_indices_batching_dims: Vec<i64>,
    scatter_dims_to_operand_dims: Vec<i64>,
    index_vector_dim: i64,
}

fn shape_of(v: Val) -> Option<Vec<i64>> {
    ir::tensor_shape(ir::value_type(v)).map(|s| s.into_iter().map(|d| d as i64).collect())
}

/// `key = [1, 2]` or `key = 3` out of an opaque `#stablehlo.scatter<…>` attribute.
fn field(text: &str, key: &str) -> Option<Vec<i64>> {
    let mut rest = text;
    loop {
        let at = rest.find(key)?;
        let before = rest[..at].chars().last();
        let after = &rest[at + key.len()..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let after = after.trim_start();
        let Some(value) = after.strip_prefix('=') else { continue };
        let value = value.trim_start();
        if let Some(list) = value.strip_prefix('[') {
            let end = list.find(']')?;
            let items = list[..end].split(',').map(str::trim).filter(|s| !s.is_empty());
            return items.map(|s| s.parse().ok()).collect();
        }
        let end = value.find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(value.len());
        return value[..end].parse().ok().map(|n| vec![n]);
    }
}

impl ScatterPlan {
    pub(crate) fn analyze(op: Op) -> Result<ScatterPlan, OpError> {
        let operands = ir::operands(op);
        if operands.len() != 3 || ir::results(op).len() != 1 {
            return Err(error_at(op, "stablehlo.scatter with several inputs is not supported by the CPU lowering"));
        }
        let shapes: Option<Vec<Vec<i64>>> = operands.iter().map(|&v| shape_of(v)).collect();
        let Some(shapes) = shapes else {
            return Err(error_at(op, "stablehlo.scatter needs statically shaped tensors"));
        };
        let Some(attr) = ir::attribute(op, "scatter_dimension_numbers") else {
            return Err(error_at(op, "stablehlo.scatter has no scatter_dimension_numbers"));
        };
        let text = ir::attribute_text(attr);
        let plan = ScatterPlan {
            operand_shape: shapes[0].clone(),
            indices_shape: shapes[1].clone(),
            updates_shape: shapes[2].clone(),
            update_window_dims: field(&text, "update_window_dims").unwrap_or_default(),
            inserted_window_dims: field(&text, "inserted_window_dims").unwrap_or_default(),
            input_batching_dims: field(&text, "input_batching_dims").unwrap_or_default(),
            scatter_indices_batching_dims: field(&text, "scatter_indices_batching_dims").unwrap_or_default(),
            scatter_dims_to_operand_dims: field(&text, "scatter_dims_to_operand_dims").unwrap_or_default(),
            // StableHLO prints the attribute's fields only when they differ from their defaults
            // (empty lists, and 0 for `index_vector_dim`): an omitted index_vector_dim is 0.
            // (optax's integer-label cross-entropy writes its gradient with one.)
            index_vector_dim: field(&text, "index_vector_dim").and_then(|v| v.first().copied()).unwrap_or(0),
        };
        plan.check().map_err(|m| error_at(op, format!("stablehlo.scatter: {m} (dimension numbers: {text})")))?;
        let block = super::single_block(op, 0, "update computation")?;
        if ir::block_arguments(block).len() != 2 {
            return Err(error_at(op, "stablehlo.scatter: the update computation must take two arguments"));
        }
        Ok(plan)
    }

    fn check(&self) -> Result<(), LowerError> {
        let operand_rank = self.operand_shape.len() as i64;
        let indices_rank = self.indices_shape.len() as i64;
        let updates_rank = self.updates_shape.len() as i64;
        let out_of_range = |field: &'static str, dimension: i64, rank: i64| LowerError::ScatterDimensionOutOfRange {
            field,
            dimension,
            rank,
        };
        let in_range =
            |field: &'static str, dims: &[i64], rank: i64| match dims.iter().find(|d| !(0..rank).contains(*d)) {
                Some(&d) => Err(out_of_range(field, d, rank)),
                None => Ok(()),
            };
        in_range("update_window_dims", &self.update_window_dims, updates_rank)?;
        in_range("inserted_window_dims", &self.inserted_window_dims, operand_rank)?;
        in_range("scatter_dims_to_operand_dims", &self.scatter_dims_to_operand_dims, operand_rank)?;
        in_range("input_batching_dims", &self.input_batching_dims, operand_rank)?;
        in_range("scatter_indices_batching_dims", &self.scatter_indices_batching_dims, indices_rank)?;
        // The index vector dimension is one past the last when the indices are implicit, and
        // never a batching dimension.
        if self.scatter_indices_batching_dims.contains(&self.index_vector_dim)
            || !(0..=indices_rank).contains(&self.index_vector_dim)
        {
            return Err(out_of_range("index_vector_dim", self.index_vector_dim, indices_rank));
        }
        if self.input_batching_dims.len() != self.scatter_indices_batching_dims.len() {
            return Err(LowerError::ScatterBatchingDimsLength {
                input_batching_dims: self.input_batching_dims.clone(),
                scatter_indices_batching_dims: self.scatter_indices_batching_dims.clone(),
            });
        }
        if (self.update_window_dims.len() + self.inserted_window_dims.len() + self.input_batching_dims.len()) as i64
            != operand_rank
        {
            return Err(LowerError::ScatterWindowCoverage {
                update_window_dims: self.update_window_dims.clone(),
                inserted_window_dims: self.inserted_window_dims.clone(),
                input_batching_dims: self.input_batching_dims.clone(),
                operand_rank: self.operand_shape.len(),
            });
        }
        let vector_len =
            if self.index_vector_dim == indices_rank { 1 } else { self.indices_shape[self.index_vector_dim as usize] };
        if vector_len != self.scatter_dims_to_operand_dims.len() as i64 {
            return Err(LowerError::ScatterIndexVector {
                index_vector_length: vector_len,
                scatter_dims_to_operand_dims: self.scatter_dims_to_operand_dims.clone(),
            });
        }
        let scatter_dims = updates_rank - self.update_window_dims.len() as i64;
        let batch_dims = indices_rank - i64::from(self.index_vector_dim < indices_rank);
        if scatter_dims != batch_dims {
            return Err(LowerError::ScatterBatchDimensions {
                update_scatter_dims: scatter_dims,
                index_batch_dims: batch_dims,
            });
        }
        Ok(())
    }

    /// Operand dimensions that receive window coordinates, in order.
    fn window_operand_dims(&self) -> Vec<usize> {
        (0..self.operand_shape.len())
            .filter(|d| {
                !self.inserted_window_dims.contains(&(*d as i64)) && !self.input_batching_dims.contains(&(*d as i64))
            })
            .collect()
    }

    /// The position of indices dimension `d` (not the index vector dimension) among the
    /// update scatter dimensions.
    fn batch_position(&self, d: i64) -> usize {
        (if d < self.index_vector_dim { d } else { d - 1 }) as usize
    }

    /// Window extent along each operand dimension (1 for inserted dimensions).
    fn window_sizes(&self) -> Vec<i64> {
        let mut sizes = vec![1; self.operand_shape.len()];
        for (&operand_dim, &update_dim) in self.window_operand_dims().iter().zip(&self.update_window_dims) {
            sizes[operand_dim] = self.updates_shape[update_dim as usize];
        }
        sizes
    }
}

/// Builds ops at one insertion point.
struct Builder {
    block: MlirBlock,
    /// Insert before this op; null appends to `block`.
    before: Op,
    location: MlirLocation,
    context: MlirContext,
}

impl Builder {
    fn insert(&self, op: Op) -> Op {
        unsafe {
            if self.before.ptr.is_null() {
                mlirBlockAppendOwnedOperation(self.block, op);
            } else {
                mlirBlockInsertOwnedOperationBefore(self.block, self.before, op);
            }
        }
        op
    }

    fn op(&self, name: &str, operands: &[Val], results: &[MlirType]) -> Val {
        let op = self.insert(create_op(name, self.location, operands, results, vec![]));
        ir::results(op)[0]
    }

    fn with_attribute(
        &self,
        name: &str,
        operands: &[Val],
        results: &[MlirType],
        attribute: (&str, MlirAttribute),
    ) -> Val {
        let op = create_op(name, self.location, operands, results, vec![]);
        let key = CString::new(attribute.0).expect("attribute names have no NUL");
        unsafe { mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString(key.as_ptr()), attribute.1) };
        self.insert(op);
        ir::results(op)[0]
    }

    fn index_type(&self) -> MlirType {
        unsafe { mlirIndexTypeGet(self.context) }
    }

    fn index(&self, value: i64) -> Val {
        let t = self.index_type();
        let attr = unsafe { mlirIntegerAttrGet(t, value) };
        self.with_attribute("arith.constant", &[], &[t], ("value", attr))
    }

    fn add(&self, a: Val, b: Val) -> Val {
        self.op("arith.addi", &[a, b], &[self.index_type()])
    }

    /// `arith.cmpi` with a predicate number (sle = 3, sge = 5 in MLIR's enum).
    fn compare(&self, predicate: i64, a: Val, b: Val) -> Val {
        let i1 = unsafe { mlirIntegerTypeGet(self.context, 1) };
        let i64t = unsafe { mlirIntegerTypeGet(self.context, 64) };
        let attr = unsafe { mlirIntegerAttrGet(i64t, predicate) };
        self.with_attribute("arith.cmpi", &[a, b], &[i1], ("predicate", attr))
    }
}

const CMPI_SLE: i64 = 3;
const CMPI_SGE: i64 = 5;

pub(crate) fn lower_scatter(op: Op) -> Result<(), OpError> {
    let plan = ScatterPlan::analyze(op)?;
    let [input, indices, updates] = ir::operands(op)[..] else { unreachable!("checked by analyze") };
    let result_type = ir::value_type(ir::results(op)[0]);
    let outer = Builder {
        block: ir::op_block(op),
        before: op,
        location: ir::location(op),
        context: unsafe { mlirOperationGetContext(op) },
    };

    // A fresh result buffer holding a copy of the operand.
    let empty = outer.op("tensor.empty", &[], &[result_type]);
    let copy = create_op(
        "linalg.copy",
        outer.location,
        &[input, empty],
        &[result_type],
        vec![copy_region(&outer, result_type)],
    );
    set_segments(copy, &[1, 1]);
    let init = ir::results(outer.insert(copy))[0];

    let update_region = ir::regions(op)[0];
    let result = build_loops(&outer, &plan, update_region, indices, updates, init, result_type, &mut Vec::new())?;
    ir::replace_all_uses(ir::results(op)[0], result);
    ir::erase(op);
    Ok(())
}

/// The body of `linalg.copy` (a `linalg.yield` of the input element).
fn copy_region(b: &Builder, tensor: MlirType) -> MlirRegion {
    unsafe {
        let element = mlirShapedTypeGetElementType(tensor);
        let region = mlirRegionCreate();
        let types = [element, element];
        let locations = [b.location, b.location];
        let block = mlirBlockCreate(2, types.as_ptr(), locations.as_ptr());
        mlirRegionAppendOwnedBlock(region, block);
        let first = mlirBlockGetArgument(block, 0);
        mlirBlockAppendOwnedOperation(block, create_op("linalg.yield", b.location, &[first], &[], vec![]));
        region
    }
}

/// One `scf.for` per dimension of `updates`, carrying the result tensor; the innermost body
/// applies one update. Returns the outermost loop's result.
#[allow(clippy::too_many_arguments)]
fn build_loops(
    b: &Builder,
    plan: &ScatterPlan,
    update_region: MlirRegion,
    indices: Val,
    updates: Val,
    acc: Val,
    tensor: MlirType,
    ivs: &mut Vec<Val>,
) -> Result<Val, OpError> {
    let depth = ivs.len();
    if depth == plan.updates_shape.len() {
        return apply_update(b, plan, update_region, indices, updates, acc, tensor, ivs);
    }
    let index = b.index_type();
    let (lower, upper, step) = (b.index(0), b.index(plan.updates_shape[depth]), b.index(1));
    let (block, region) = unsafe {
        let types = [index, tensor];
        let locations = [b.location, b.location];
        let block = mlirBlockCreate(2, types.as_ptr(), locations.as_ptr());
        let region = mlirRegionCreate();
        mlirRegionAppendOwnedBlock(region, block);
        (block, region)
    };
    let for_op = b.insert(create_op("scf.for", b.location, &[lower, upper, step, acc], &[tensor], vec![region]));
    let inner = Builder { block, before: Op { ptr: std::ptr::null_mut() }, location: b.location, context: b.context };
    let args = ir::block_arguments(block);
    ivs.push(args[0]);
    let next = build_loops(&inner, plan, update_region, indices, updates, args[1], tensor, ivs)?;
    ivs.pop();
    inner.insert(create_op("scf.yield", b.location, &[next], &[], vec![]));
    Ok(ir::results(for_op)[0])
}

/// result[start + window] = f(result[…], updates[ivs]) when the window fits.
#[allow(clippy::too_many_arguments)]
fn apply_update(
    b: &Builder,
    plan: &ScatterPlan,
    update_region: MlirRegion,
    indices: Val,
    updates: Val,
    acc: Val,
    tensor: MlirType,
    ivs: &[Val],
) -> Result<Val, OpError> {
    let index = b.index_type();
    let operand_rank = plan.operand_shape.len();
    let indices_rank = plan.indices_shape.len();

    // Coordinates of `u` along the update scatter dims pick the index batch position.
    let scatter_ivs: Vec<Val> = (0..plan.updates_shape.len())
        .filter(|d| !plan.update_window_dims.contains(&(*d as i64)))
        .map(|d| ivs[d])
        .collect();
    let mut full_index = vec![b.index(0); operand_rank];
    for (k, &operand_dim) in plan.scatter_dims_to_operand_dims.iter().enumerate() {
        let mut position = Vec::with_capacity(indices_rank);
        let mut batch = scatter_ivs.iter();
        for d in 0..indices_rank {
            if d as i64 == plan.index_vector_dim {
                position.push(b.index(k as i64));
            } else {
                position.push(*batch.next().expect("checked: batch dims match scatter dims"));
            }
        }
        let mut operands = vec![indices];
        operands.extend(position);
        let element = unsafe { mlirShapedTypeGetElementType(ir::value_type(indices)) };
        let raw = b.op("tensor.extract", &operands, &[element]);
        let start = if unsafe { mlirTypeIsAIndex(element) } { raw } else { b.op("arith.index_cast", &[raw], &[index]) };
        full_index[operand_dim as usize] = start;
    }

    // In bounds: 0 <= start[d] <= operand[d] - window[d] for every dimension.
    let window_sizes = plan.window_sizes();
    let zero = b.index(0);
    let mut in_bounds: Option<Val> = None;
    for &operand_dim in &plan.scatter_dims_to_operand_dims {
        let d = operand_dim as usize;
        let start = full_index[d];
        let limit = b.index(plan.operand_shape[d] - window_sizes[d]);
        let low = b.compare(CMPI_SGE, start, zero);
        let high = b.compare(CMPI_SLE, start, limit);
        let both = b.op("arith.andi", &[low, high], &[ir::value_type(low)]);
        in_bounds = Some(match in_bounds {
            None => both,
            Some(prev) => b.op("arith.andi", &[prev, both], &[ir::value_type(both)]),
        });
    }

    // Batching coordinates: the operand's batching dimensions follow the indices' ones.
    for (&operand_dim, &indices_dim) in plan.input_batching_dims.iter().zip(&plan.scatter_indices_batching_dims) {
        full_index[operand_dim as usize] =
            b.add(full_index[operand_dim as usize], scatter_ivs[plan.batch_position(indices_dim)]);
    }

    // Window coordinates.
    for (&operand_dim, &update_dim) in plan.window_operand_dims().iter().zip(&plan.update_window_dims) {
        full_index[operand_dim] = b.add(full_index[operand_dim], ivs[update_dim as usize]);
    }

    let element = unsafe { mlirShapedTypeGetElementType(tensor) };
    let update = |inner: &Builder| -> Result<Val, OpError> {
        let mut operands = vec![acc];
        operands.extend(&full_index);
        let old = inner.op("tensor.extract", &operands, &[element]);
        let mut operands = vec![updates];
        operands.extend(ivs);
        let new = inner.op("tensor.extract", &operands, &[element]);
        let combined = scalar_update(inner, update_region, old, new)?;
        let mut operands = vec![combined, acc];
        operands.extend(&full_index);
        Ok(inner.op("tensor.insert", &operands, &[tensor]))
    };

    let Some(condition) = in_bounds else { return update(b) };
    let (then_block, then_region) = new_region();
    let (else_block, else_region) = new_region();
    let if_op = b.insert(create_op("scf.if", b.location, &[condition], &[tensor], vec![then_region, else_region]));
    let then_builder = Builder {
        block: then_block,
        before: Op { ptr: std::ptr::null_mut() },
        location: b.location,
        context: b.context,
    };
    let updated = update(&then_builder)?;
    then_builder.insert(create_op("scf.yield", b.location, &[updated], &[], vec![]));
    let else_builder = Builder { block: else_block, ..then_builder };
    else_builder.insert(create_op("scf.yield", b.location, &[acc], &[], vec![]));
    Ok(ir::results(if_op)[0])
}

fn new_region() -> (MlirBlock, MlirRegion) {
    unsafe {
        let block = mlirBlockCreate(0, std::ptr::null(), std::ptr::null());
        let region = mlirRegionCreate();
        mlirRegionAppendOwnedBlock(region, block);
        (block, region)
    }
}

/// Evaluates the update computation on scalars: its two arguments (0-d tensors) are `old` and
/// `new`; 0-d StableHLO arithmetic and 0-d `linalg.generic`/`linalg.map` ops become scalar ops.
fn scalar_update(b: &Builder, region: MlirRegion, old: Val, new: Val) -> Result<Val, OpError> {
    let block = ir::blocks(region)[0];
    let args = ir::block_arguments(block);
    // Tensor values of the region (0-d) → their scalar.
    let mut scalars: HashMap<usize, Val> =
        HashMap::from([(ir::value_key(args[0]), old), (ir::value_key(args[1]), new)]);
    let lookup = |scalars: &HashMap<usize, Val>, v: Val, at: Op| -> Result<Val, OpError> {
        match scalars.get(&ir::value_key(v)) {
            Some(&s) => Ok(s),
            // A scalar from outside the region (a constant, say) is used as it is.
            None if !unsafe { mlirTypeIsATensor(ir::value_type(v)) } => Ok(v),
            None => Err(error_at(
                at,
                "stablehlo.scatter: the update computation uses a tensor the CPU lowering cannot scalarize",
            )),
        }
    };
    for op in ir::block_ops(block) {
        let name = ir::op_name(op);
        match name.as_str() {
            "stablehlo.return" => {
                let [value] = ir::operands(op)[..] else {
                    return Err(error_at(op, "stablehlo.scatter: the update computation must return one value"));
                };
                return lookup(&scalars, value, op);
            }
            "tensor.empty" => {}
            "tensor.extract" | "tensor.from_elements" => {
                let source = lookup(&scalars, ir::operands(op)[0], op)?;
                scalars.insert(ir::value_key(ir::results(op)[0]), source);
            }
            "linalg.generic" | "linalg.map" => {
                let value = inline_scalar_body(b, op, &scalars)?;
                scalars.insert(ir::value_key(ir::results(op)[0]), value);
            }
            _ if name.starts_with("stablehlo.") => {
                let inputs =
                    ir::operands(op).into_iter().map(|v| lookup(&scalars, v, op)).collect::<Result<Vec<_>, _>>()?;
                let value = stablehlo_scalar(b, op, &name, &inputs)?;
                scalars.insert(ir::value_key(ir::results(op)[0]), value);
            }
            _ if name.starts_with("arith.") || name.starts_with("math.") => {
                let clone = b.insert(ir::clone_op(op));
                for (i, v) in ir::operands(op).into_iter().enumerate() {
                    ir::set_operand(clone, i, lookup(&scalars, v, op)?);
                }
                for (old_result, new_result) in ir::results(op).into_iter().zip(ir::results(clone)) {
                    scalars.insert(ir::value_key(old_result), new_result);
                }
            }
            _ => {
                return Err(error_at(
                    op,
                    format!(
                        "stablehlo.scatter: '{name}' in the update computation is not supported by the CPU lowering"
                    ),
                ))
            }
        }
    }
    Err(error_at(
        unsafe { mlirBlockGetParentOperation(block) },
        "stablehlo.scatter: the update computation has no stablehlo.return",
    ))
}

/// A 0-d `linalg.generic`/`linalg.map`: clone its scalar body with its inputs mapped.
fn inline_scalar_body(b: &Builder, op: Op, scalars: &HashMap<usize, Val>) -> Result<Val, OpError> {
    let operands = ir::operands(op);
    let block = ir::blocks(ir::regions(op)[0])[0];
    let args = ir::block_arguments(block);
    let mut map: HashMap<usize, Val> = HashMap::new();
    for (i, &arg) in args.iter().enumerate() {
        let Some(&operand) = operands.get(i) else { break };
        if let Some(&s) = scalars.get(&ir::value_key(operand)) {
            map.insert(ir::value_key(arg), s);
        }
    }
    for inner in ir::block_ops(block) {
        if ir::op_name(inner).ends_with(".yield") {
            let [value] = ir::operands(inner)[..] else {
                return Err(error_at(op, "stablehlo.scatter: expected a single-result body"));
            };
            return Ok(*map.get(&ir::value_key(value)).unwrap_or(&value));
        }
        let clone = b.insert(ir::clone_op(inner));
        for (i, v) in ir::operands(inner).into_iter().enumerate() {
            if let Some(&m) = map.get(&ir::value_key(v)) {
                ir::set_operand(clone, i, m);
            } else if args.iter().any(|a| ir::same_value(*a, v)) {
                return Err(error_at(op, "stablehlo.scatter: the update computation reads its output tensor"));
            }
        }
        for (o, n) in ir::results(inner).into_iter().zip(ir::results(clone)) {
            map.insert(ir::value_key(o), n);
        }
    }
    Err(error_at(op, "stablehlo.scatter: a body without a yield"))
}

/// 0-d StableHLO arithmetic on scalars.
fn stablehlo_scalar(b: &Builder, op: Op, name: &str, inputs: &[Val]) -> Result<Val, OpError> {
    let t = ir::value_type(inputs[0]);
    let float = unsafe { mlirTypeIsAFloat(t) };
    let arith = match (name, float) {
        ("stablehlo.add", true) => "arith.addf",
        ("stablehlo.add", false) => "arith.addi",
        ("stablehlo.subtract", true) => "arith.subf",
        ("stablehlo.subtract", false) => "arith.subi",
        ("stablehlo.multiply", true) => "arith.mulf",
        ("stablehlo.multiply", false) => "arith.muli",
        ("stablehlo.maximum", true) => "arith.maximumf",
        ("stablehlo.maximum", false) => "arith.maxsi",
        ("stablehlo.minimum", true) => "arith.minimumf",
        ("stablehlo.minimum", false) => "arith.minsi",
        _ => {
            return Err(error_at(
                op,
                format!("stablehlo.scatter: '{name}' in the update computation is not supported by the CPU lowering"),
            ))
        }
    };
    if inputs.len() != 2 {
        return Err(error_at(op, format!("stablehlo.scatter: '{name}' must have two operands")));
    }
    Ok(b.op(arith, inputs, &[t]))
}

#[cfg(test)]
mod tests {
    //! The lowering against the StableHLO specification's definition of `scatter`, on random
    //! valid dimension numbers: batching dimensions, inserted window dimensions, any index
    //! vector dimension (implicit, and omitted when 0, as StableHLO prints it), duplicate and
    //! out-of-range indices. Each case is lowered to LLVM, run, and compared bit for bit with
    //! a direct transcription of the specification (`reference`).

    use crate::{lower_to_llvm, Jit, Target};
    use proptest::prelude::*;
    use remat_mlir::RematContext;
    use remat_runtime::{call_step, HostTensor, SplitMix64, TensorSpec};

    #[derive(Debug)]
    struct Case {
        operand_shape: Vec<usize>,
        indices_shape: Vec<usize>,
        updates_shape: Vec<usize>,
        update_window_dims: Vec<usize>,
        inserted_window_dims: Vec<usize>,
        input_batching_dims: Vec<usize>,
        scatter_indices_batching_dims: Vec<usize>,
        scatter_dims_to_operand_dims: Vec<usize>,
        index_vector_dim: usize,
        operand: Vec<f32>,
        indices: Vec<i32>,
        updates: Vec<f32>,
    }

    /// Row-major coordinates of every element of `shape`.
    fn coordinates(shape: &[usize]) -> Vec<Vec<usize>> {
        let mut all = vec![Vec::new()];
        for &extent in shape {
            all = all.into_iter().flat_map(|c| (0..extent).map(move |i| [c.clone(), vec![i]].concat())).collect();
        }
        all
    }

    fn offset(shape: &[usize], index: &[usize]) -> usize {
        index.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
    }

    /// A random scatter that the specification's constraints accept.
    fn generate(seed: u64) -> Case {
        let mut rng = SplitMix64::new(seed);
        let rank = rng.range(1, 3) as usize;
        let operand_shape: Vec<usize> = (0..rank).map(|_| rng.range(1, 4) as usize).collect();
        // Each operand dimension is a batching, an inserted or a window dimension.
        let roles: Vec<u64> = (0..rank).map(|_| rng.below(10)).collect();
        let input_batching_dims: Vec<usize> = (0..rank).filter(|&d| roles[d] < 2).collect();
        let inserted_window_dims: Vec<usize> = (0..rank).filter(|&d| (2..5).contains(&roles[d])).collect();
        let window_dims: Vec<usize> = (0..rank).filter(|&d| roles[d] >= 5).collect();
        // The start index addresses some non-batching dimensions, in any order.
        let mut free: Vec<usize> = (0..rank).filter(|d| !input_batching_dims.contains(d)).collect();
        let mut scatter_dims_to_operand_dims = Vec::new();
        let k = rng.range(0, free.len() as u64) as usize;
        for _ in 0..k {
            scatter_dims_to_operand_dims.push(free.remove(rng.below(free.len() as u64) as usize));
        }
        // Index batch dimensions: the batching ones and up to two more.
        let batch_count = input_batching_dims.len() + rng.range(0, 2) as usize;
        let explicit = k != 1 || rng.chance(50);
        let index_vector_dim = if explicit { rng.range(0, batch_count as u64) as usize } else { batch_count };
        let indices_rank = batch_count + usize::from(explicit);
        let batch_positions: Vec<usize> = (0..indices_rank).filter(|&d| d != index_vector_dim || !explicit).collect();
        let mut batch_sizes: Vec<usize> = (0..batch_count).map(|_| rng.range(1, 3) as usize).collect();
        let mut unused: Vec<usize> = (0..batch_count).collect();
        let mut scatter_indices_batching_dims = Vec::new();
        for &operand_dim in &input_batching_dims {
            let b = unused.remove(rng.below(unused.len() as u64) as usize);
            batch_sizes[b] = operand_shape[operand_dim];
            scatter_indices_batching_dims.push(batch_positions[b]);
        }
        let mut indices_shape = vec![0; indices_rank];
        for (b, &position) in batch_positions.iter().enumerate() {
            indices_shape[position] = batch_sizes[b];
        }
        if explicit {
            indices_shape[index_vector_dim] = k;
        }
        // Updates: the index batch dimensions in order, with the window dimensions among them.
        let updates_rank = batch_count + window_dims.len();
        let mut update_window_dims: Vec<usize> = Vec::new();
        let mut positions: Vec<usize> = (0..updates_rank).collect();
        for _ in 0..window_dims.len() {
            update_window_dims.push(positions.remove(rng.below(positions.len() as u64) as usize));
        }
        update_window_dims.sort_unstable();
        let mut updates_shape = vec![0; updates_rank];
        let (mut window, mut batch) = (window_dims.iter(), batch_sizes.iter());
        for (d, size) in updates_shape.iter_mut().enumerate() {
            *size = if update_window_dims.contains(&d) {
                rng.range(1, operand_shape[*window.next().unwrap()] as u64) as usize
            } else {
                *batch.next().unwrap()
            };
        }
        let count = |shape: &[usize]| shape.iter().product::<usize>();
        let operand = (0..count(&operand_shape)).map(|_| rng.range(0, 3) as f32).collect();
        let updates = (0..count(&updates_shape)).map(|_| rng.range(1, 9) as f32).collect();
        // Start indices from -1 to one past the last: some updates fall outside.
        let vector_dims: Vec<usize> = scatter_dims_to_operand_dims.clone();
        let indices = coordinates(&indices_shape)
            .iter()
            .map(|c| {
                let component = if explicit { c[index_vector_dim] } else { 0 };
                let extent = vector_dims.get(component).map_or(1, |&d| operand_shape[d]) as u64;
                rng.range(0, extent + 1) as i32 - 1
            })
            .collect();
        Case {
            operand_shape,
            indices_shape,
            updates_shape,
            update_window_dims,
            inserted_window_dims,
            input_batching_dims,
            scatter_indices_batching_dims,
            scatter_dims_to_operand_dims,
            index_vector_dim,
            operand,
            indices,
            updates,
        }
    }

    /// The specification's `scatter` with an adding update computation; an update whose
    /// window does not fit in the operand is skipped, as XLA does (the specification leaves
    /// it implementation-defined).
    fn reference(c: &Case) -> Vec<f32> {
        let mut result = c.operand.clone();
        let indices_rank = c.indices_shape.len();
        let update_scatter_dims: Vec<usize> =
            (0..c.updates_shape.len()).filter(|d| !c.update_window_dims.contains(d)).collect();
        let mut window_sizes = vec![1; c.operand_shape.len()];
        let window_operand_dims: Vec<usize> = (0..c.operand_shape.len())
            .filter(|d| !c.inserted_window_dims.contains(d) && !c.input_batching_dims.contains(d))
            .collect();
        for (&d, &u) in window_operand_dims.iter().zip(&c.update_window_dims) {
            window_sizes[d] = c.updates_shape[u];
        }
        for update_index in coordinates(&c.updates_shape) {
            let update_scatter_index: Vec<usize> = update_scatter_dims.iter().map(|&d| update_index[d]).collect();
            let start_index: Vec<i64> = (0..c.scatter_dims_to_operand_dims.len())
                .map(|k| {
                    let mut position = update_scatter_index.clone();
                    if c.index_vector_dim < indices_rank {
                        position.insert(c.index_vector_dim, k);
                    }
                    c.indices[offset(&c.indices_shape, &position)] as i64
                })
                .collect();
            let mut full_start_index = vec![0i64; c.operand_shape.len()];
            for (k, &d) in c.scatter_dims_to_operand_dims.iter().enumerate() {
                full_start_index[d] = start_index[k];
            }
            let fits = c.scatter_dims_to_operand_dims.iter().all(|&d| {
                full_start_index[d] >= 0 && full_start_index[d] <= (c.operand_shape[d] - window_sizes[d]) as i64
            });
            if !fits {
                continue;
            }
            let mut full_batching_index = vec![0i64; c.operand_shape.len()];
            for (&d_input, &d_start) in c.input_batching_dims.iter().zip(&c.scatter_indices_batching_dims) {
                let position = if d_start < c.index_vector_dim { d_start } else { d_start - 1 };
                full_batching_index[d_input] = update_scatter_index[position] as i64;
            }
            let update_window_index: Vec<usize> = c.update_window_dims.iter().map(|&d| update_index[d]).collect();
            let mut full_window_index = vec![0i64; c.operand_shape.len()];
            for (&d, &w) in window_operand_dims.iter().zip(&update_window_index) {
                full_window_index[d] = w as i64;
            }
            let result_index: Vec<usize> = (0..c.operand_shape.len())
                .map(|d| (full_start_index[d] + full_batching_index[d] + full_window_index[d]) as usize)
                .collect();
            result[offset(&c.operand_shape, &result_index)] += c.updates[offset(&c.updates_shape, &update_index)];
        }
        result
    }

    fn tensor_type(shape: &[usize], element: &str) -> String {
        let dims: String = shape.iter().map(|d| format!("{d}x")).collect();
        format!("tensor<{dims}{element}>")
    }

    /// The case as a module, its dimension numbers printed as StableHLO prints them: fields at
    /// their defaults (empty lists, `index_vector_dim = 0`) left out.
    fn module_text(c: &Case) -> String {
        let list = |v: &[usize]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let mut fields = Vec::new();
        for (name, dims) in [
            ("update_window_dims", &c.update_window_dims),
            ("inserted_window_dims", &c.inserted_window_dims),
            ("input_batching_dims", &c.input_batching_dims),
            ("scatter_indices_batching_dims", &c.scatter_indices_batching_dims),
            ("scatter_dims_to_operand_dims", &c.scatter_dims_to_operand_dims),
        ] {
            if !dims.is_empty() {
                fields.push(format!("{name} = [{}]", list(dims)));
            }
        }
        if c.index_vector_dim != 0 {
            fields.push(format!("index_vector_dim = {}", c.index_vector_dim));
        }
        let (o, i, u) = (
            tensor_type(&c.operand_shape, "f32"),
            tensor_type(&c.indices_shape, "i32"),
            tensor_type(&c.updates_shape, "f32"),
        );
        format!(
            r#"func.func @main(%o: {o}, %i: {i}, %u: {u}) -> {o} {{
  %e = tensor.empty() : tensor<f32>
  %r = "stablehlo.scatter"(%o, %i, %u) <{{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<{fields}>, unique_indices = false}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = linalg.generic {{indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}}
        ins(%a, %b : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {{
    ^bb0(%x: f32, %y: f32, %z: f32):
      %t = arith.addf %x, %y : f32
      linalg.yield %t : f32
    }} -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }}) : ({o}, {i}, {u}) -> {o}
  return %r : {o}
}}"#,
            fields = fields.join(", ")
        )
    }

    fn host(shape: &[usize], element: &str, bytes: Vec<u8>) -> HostTensor {
        let mut tensor = HostTensor::zeros(TensorSpec::parse(&tensor_type(shape, element)).unwrap());
        tensor.bytes_mut().copy_from_slice(&bytes);
        tensor
    }

    fn run(c: &Case) -> Vec<f32> {
        let context = RematContext::new();
        let text = module_text(c);
        let mut module = context.parse(&text, "scatter.mlir").unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let signature = crate::signature(&module, "main").unwrap();
        lower_to_llvm(&context, &mut module, &Target::Cpu).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let jit = Jit::new(&module, 0).unwrap();
        let f32_bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let mut inputs = vec![
            host(&c.operand_shape, "f32", f32_bytes(&c.operand)),
            host(&c.indices_shape, "i32", c.indices.iter().flat_map(|x| x.to_le_bytes()).collect()),
            host(&c.updates_shape, "f32", f32_bytes(&c.updates)),
        ];
        let run = unsafe { call_step(jit.entry("main").unwrap(), &mut inputs, &signature.results, false) }.unwrap();
        run.outputs[0].bytes().chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
    }

    /// optax's `softmax_cross_entropy_with_integer_labels`: its gradient scatters a 2x8 update
    /// into a 2x8x1 operand at one index along the last dimension, `index_vector_dim`
    /// omitted (0) — the case once rejected for a wrong default.
    #[test]
    fn optax_integer_label_gradient() {
        let case = Case {
            operand_shape: vec![2, 3, 1],
            indices_shape: vec![1],
            updates_shape: vec![2, 3],
            update_window_dims: vec![0, 1],
            inserted_window_dims: vec![2],
            input_batching_dims: vec![],
            scatter_indices_batching_dims: vec![],
            scatter_dims_to_operand_dims: vec![2],
            index_vector_dim: 0,
            operand: vec![0.0; 6],
            indices: vec![0],
            updates: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        };
        assert!(module_text(&case).contains("scatter_dims_to_operand_dims = [2]>"), "index_vector_dim left out");
        assert_eq!(run(&case), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(run(&Case { indices: vec![1], ..case }), vec![0.0; 6], "an index past the end is skipped");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn lowering_computes_the_specifications_scatter(seed in any::<u64>()) {
            let case = generate(seed);
            prop_assert_eq!(run(&case), reference(&case), "{:?}\n{}", case, module_text(&case));
        }
    }
}
