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
            index_vector_dim: field(&text, "index_vector_dim")
                .and_then(|v| v.first().copied())
                .unwrap_or(shapes[1].len() as i64),
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
