//! Rolled plans for scans kept whole: which residuals each layer saves for the backward, and
//! which the backward recomputes from them — the choice a `jax.checkpoint` policy makes by
//! hand, applied to every iteration alike, without unrolling.
//!
//! JAX differentiates `lax.scan` into two loops: the forward writes each layer's residuals
//! into `[layers, …]` stacks (`tensor.insert_slice` at the layer's index), and the backward
//! reads them back at its own index (`tensor.extract_slice`). With both loops kept whole
//! ([`crate::kept_loop`]), a [`ScanPair`] is such a forward loop, the backward loop that reads
//! its stacks, and for each stack whether the backward could recompute it instead:
//! [`drop_residuals`] stops the forward from writing the chosen stacks, clones the forward
//! ops that compute them into the backward's body (reading the forward's loop-invariant values
//! from above, the kept stacks at the backward's index, and the layer's index where the
//! forward used its own), and removes the stacks from both loops.
//!
//! A residual can be recomputed when the forward computes it from values the backward has:
//! the loop-invariant ones (the stacked weights, sliced at the layer's index), and the kept
//! residuals. One computed from the forward's carry is recomputable only if the carry (the
//! layer's input) is itself a kept residual, as it is in JAX's scans.

use crate::ir::{self, Op, Val};
use crate::kept_loop::{self, loop_body, Carried};
use crate::ops;
use mlir_sys::*;
use std::collections::{HashMap, HashSet};

/// Why a scan's residuals cannot be dropped as asked.
#[derive(Debug, thiserror::Error)]
pub enum RolledError {
    /// The scan does not have the shape the rewrite needs.
    #[error("cannot recompute the scan's residuals in its backward loop: {0}")]
    Unsupported(&'static str),
    /// Importing the rewritten step failed.
    #[error(transparent)]
    Import(#[from] crate::MlirError),
    /// The rewritten step is not valid.
    #[error("the rewritten step is invalid: {0}")]
    Invalid(String),
}

/// A forward scan loop and the backward loop that reads its residual stacks.
#[derive(Clone, Debug)]
pub struct ScanPair {
    /// Position of the forward loop among the function body's ops.
    pub forward_position: usize,
    /// Position of the backward loop.
    pub backward_position: usize,
    /// Iterations of the loops.
    pub trips: usize,
    pub residuals: Vec<Residual>,
}

/// One residual stack of a [`ScanPair`].
#[derive(Clone, Debug)]
pub struct Residual {
    /// The forward loop's carried value (the stack).
    pub forward_carry: usize,
    /// The backward loop's carried value that reads it.
    pub backward_carry: usize,
    /// Bytes of the stack.
    pub bytes: u64,
    /// The work of recomputing one layer's slice in the backward while every other residual is
    /// kept; `None` where the backward cannot recompute it.
    pub recompute_cost: Option<f64>,
}

/// How the forward writes a stack and the backward reads it.
struct StackLink {
    forward_carry: usize,
    backward_carry: usize,
    /// What the forward writes (shape `[1, …]`).
    written: Val,
    /// The slice the backward reads (the same type), and the layer index it reads at.
    read: Val,
    read_index: Val,
}

struct Pair {
    forward: Op,
    backward: Op,
    /// The forward's carried counter: the layer index it writes every stack at.
    counter: usize,
    links: Vec<StackLink>,
}

/// The scan pairs among the top-level ops of `body` (a function body the importer has
/// normalized: loops kept whole, their inits isolated).
pub fn scan_pairs(body: MlirBlock) -> Vec<ScanPair> {
    let top: Vec<Op> = ir::block_ops(body);
    let position = |op: Op| top.iter().position(|&o| ir::same_op(o, op));
    pairs(body)
        .into_iter()
        .filter_map(|pair| {
            let trips = crate::unroll::static_trip_count(pair.forward, kept_loop::MAX_COUNTED_TRIPS)?;
            let residuals = pair
                .links
                .iter()
                .map(|link| {
                    let kept: Vec<&StackLink> =
                        pair.links.iter().filter(|l| l.forward_carry != link.forward_carry).collect();
                    Residual {
                        forward_carry: link.forward_carry,
                        backward_carry: link.backward_carry,
                        bytes: stack_bytes(pair.forward, link.forward_carry),
                        recompute_cost: cone(&pair, &kept, &[link.written])
                            .map(|ops| ops.iter().map(|&o| ops::cost(o)).sum()),
                    }
                })
                .collect();
            Some(ScanPair {
                forward_position: position(pair.forward)?,
                backward_position: position(pair.backward)?,
                trips,
                residuals,
            })
        })
        .collect()
}

fn stack_bytes(forward: Op, carry: usize) -> u64 {
    match ir::type_bytes(ir::value_type(ir::operands(forward)[carry])) {
        ir::TypeBytes::Static(b) => b,
        _ => 0,
    }
}

/// Makes the backward loop of `pair` recompute the residuals of the forward carries `drop`
/// (see the module docs). Fails, changing nothing, where one cannot be recomputed.
pub fn drop_residuals(body: MlirBlock, pair: &ScanPair, drop: &[usize]) -> Result<(), RolledError> {
    let top = ir::block_ops(body);
    let (Some(&forward), Some(&backward)) = (top.get(pair.forward_position), top.get(pair.backward_position)) else {
        return Err(RolledError::Unsupported("the scan's loops moved"));
    };
    let found = pairs(body).into_iter().find(|p| ir::same_op(p.forward, forward) && ir::same_op(p.backward, backward));
    let Some(found) = found else { return Err(RolledError::Unsupported("the scan's loops no longer pair")) };
    let (dropped, kept): (Vec<&StackLink>, Vec<&StackLink>) =
        found.links.iter().partition(|l| drop.contains(&l.forward_carry));
    if dropped.len() != drop.len() {
        return Err(RolledError::Unsupported("a residual to drop is not a stack the backward reads"));
    }
    if dropped.is_empty() {
        return Ok(());
    }
    let written: Vec<Val> = dropped.iter().map(|l| l.written).collect();
    let cone_ops = cone(&found, &kept, &written)
        .ok_or(RolledError::Unsupported("a residual to drop needs the forward's carry"))?;
    let backward_body = loop_body(backward).ok_or(RolledError::Unsupported("the backward loop has no body"))?;

    // Clone the cone right before the backward's first read of a dropped residual.
    let reads: Vec<Val> = dropped.iter().map(|l| l.read).collect();
    let body_ops = ir::block_ops(backward_body);
    let first_use = body_ops
        .iter()
        .position(|&o| {
            std::iter::once(o)
                .chain(ir::nested_ops(o))
                .any(|n| ir::operands(n).iter().any(|&v| reads.iter().any(|&r| ir::same_value(v, r))))
        })
        .ok_or(RolledError::Unsupported("the backward does not read a dropped residual"))?;
    let reference = body_ops[first_use];
    let defined_before = |v: Val| match ir::defining_op(v) {
        Some((op, _)) if ir::op_block(op).ptr == backward_body.ptr => {
            body_ops.iter().position(|&o| ir::same_op(o, op)).is_some_and(|p| p < first_use)
        }
        _ => true,
    };
    let mut map: HashMap<usize, Val> = HashMap::new();
    let forward_body = loop_body(forward).ok_or(RolledError::Unsupported("the forward loop has no body"))?;
    let forward_arguments = ir::block_arguments(forward_body);
    for (&argument, &init) in forward_arguments.iter().zip(&ir::operands(forward)) {
        map.insert(ir::value_key(argument), init);
    }
    // The forward's counter, in the backward: the layer its first dropped read reads.
    let counter = forward_arguments[found.counter];
    if cone_ops.iter().any(|&o| {
        std::iter::once(o).chain(ir::nested_ops(o)).any(|n| ir::operands(n).iter().any(|&v| ir::same_value(v, counter)))
    }) {
        let layer = layer_value(dropped[0].read_index, ir::value_type(counter), backward_body, reference)
            .ok_or(RolledError::Unsupported("the counter is not an integer scalar"))?;
        map.insert(ir::value_key(counter), layer);
    }
    let reads_in_cone = |v: Val| {
        cone_ops.iter().any(|&o| {
            std::iter::once(o).chain(ir::nested_ops(o)).any(|n| ir::operands(n).iter().any(|&u| ir::same_value(u, v)))
        })
    };
    let layer_index = dropped[0].read_index;
    for link in &kept {
        let source = unit_dim_source(link.written);
        if !reads_in_cone(link.written) && !source.is_some_and(reads_in_cone) {
            continue;
        }
        // A kept residual the backward reads only later is read here too, at the layer the
        // first dropped read reads (every read of the pair reads that layer).
        let read = if defined_before(link.read) {
            link.read
        } else {
            let stack = ir::block_arguments(backward_body)[link.backward_carry];
            layer_slice(stack, layer_index, ir::value_type(link.read), backward_body, reference)
                .ok_or(RolledError::Unsupported("cannot read a kept residual"))?
        };
        map.insert(ir::value_key(link.written), read);
        if let Some(source) = source.filter(|&s| reads_in_cone(s)) {
            let undone = drop_unit_dim(read, ir::value_type(source), backward_body, reference)
                .ok_or(RolledError::Unsupported("cannot undo a residual's unit dimension"))?;
            map.insert(ir::value_key(source), undone);
        }
    }
    for &op in &cone_ops {
        ir::clone_remapped(op, backward_body, reference, &mut map);
    }
    for link in &dropped {
        let recomputed = map[&ir::value_key(link.written)];
        ir::replace_all_uses(link.read, recomputed);
        if let Some((op, _)) = ir::defining_op(link.read) {
            ir::erase(op);
        }
    }

    // The forward stops writing the dropped stacks; both loops stop carrying them.
    let forward_carries: Vec<usize> = dropped.iter().map(|l| l.forward_carry).collect();
    let backward_carries: Vec<usize> = dropped.iter().map(|l| l.backward_carry).collect();
    let forward_return = *ir::block_ops(forward_body).last().ok_or(RolledError::Unsupported("empty forward body"))?;
    let arguments = ir::block_arguments(forward_body);
    for &k in &forward_carries {
        ir::set_operand(forward_return, k, arguments[k]);
    }
    erase_dead_ops(forward_body);
    let inits: Vec<Val> = forward_carries.iter().map(|&k| ir::operands(forward)[k]).collect();
    remove_carries(backward, &backward_carries)?;
    remove_carries(forward, &forward_carries)?;
    for init in inits {
        erase_if_dead(init);
    }
    Ok(())
}

/// Erases the pure op that defines `value` if nothing reads its results any more, and then
/// its operands' defining ops in turn.
fn erase_if_dead(value: Val) {
    let Some((op, _)) = ir::defining_op(value) else { return };
    if !ops::is_pure(op) || ir::results(op).iter().any(|&r| !ir::uses(r).is_empty()) {
        return;
    }
    let operands = ir::operands(op);
    ir::erase(op);
    for v in operands {
        erase_if_dead(v);
    }
}

/// The forward–backward pairs of `body`'s top-level loops: each stack the forward writes a
/// layer's slice into at its counter's value, read once by the backward as a value it carries
/// unchanged, at an index that every such read of the pair agrees on in every iteration.
fn pairs(body: MlirBlock) -> Vec<Pair> {
    let mut found = Vec::new();
    for forward in ir::block_ops(body) {
        if ir::op_name(forward) != "stablehlo.while" {
            continue;
        }
        let Some(carried) = kept_loop::classify(forward) else { continue };
        let Some(forward_body) = loop_body(forward) else { continue };
        let Ok(forward_states) = crate::unroll::trip_states(forward, kept_loop::MAX_COUNTED_TRIPS) else { continue };
        let trips = forward_states.len() - 1;
        let arguments = ir::block_arguments(forward_body);
        let Some(&forward_return) = ir::block_ops(forward_body).last() else { continue };
        let yields = ir::operands(forward_return);
        let results = ir::results(forward);
        let mut backward: Option<Op> = None;
        let mut counter: Option<usize> = None;
        let mut links = Vec::new();
        for (k, class) in carried.iter().enumerate() {
            if *class != Carried::Stack {
                continue;
            }
            // One write of a layer's slice, at the index the counter holds.
            let Some((write, _)) = ir::defining_op(yields[k]) else { continue };
            let Some((written, index)) = layer_write(write, arguments[k]) else { continue };
            let values: Vec<Option<i64>> = forward_states[..trips]
                .iter()
                .map(|state| crate::unroll::Evaluator::bound(&arguments, state).value(index))
                .collect();
            let counts = |c: usize| {
                carried[c] == Carried::State
                    && forward_states[..trips].iter().zip(&values).all(|(state, v)| v.is_some() && state[c] == *v)
            };
            let Some(c) = counter.filter(|&c| counts(c)).or_else(|| (0..carried.len()).find(|&c| counts(c))) else {
                continue;
            };
            if counter.is_some_and(|known| known != c) {
                continue;
            }
            // Read by one other loop, as a value it carries unchanged, once.
            let [(user, operand)] = ir::uses(results[k])[..] else { continue };
            if ir::op_name(user) != "stablehlo.while" || ir::op_block(user).ptr != body.ptr {
                continue;
            }
            if backward.is_some_and(|b| !ir::same_op(b, user)) {
                continue;
            }
            let Some(user_carried) = kept_loop::classify(user) else { continue };
            if user_carried.get(operand) != Some(&Carried::Invariant) {
                continue;
            }
            let Some(user_body) = loop_body(user) else { continue };
            let Some(&user_return) = ir::block_ops(user_body).last() else { continue };
            let argument = ir::block_arguments(user_body)[operand];
            let condition = ir::regions(user).first().and_then(|&r| ir::blocks(r).first().copied());
            if condition.is_some_and(|b| !ir::uses(ir::block_arguments(b)[operand]).is_empty()) {
                continue;
            }
            let readers: Vec<(Op, usize)> =
                ir::uses(argument).into_iter().filter(|&(o, _)| !ir::same_op(o, user_return)).collect();
            let [(reader, 0)] = readers[..] else { continue };
            let Some((read, read_index)) = layer_read(reader, ir::value_type(written)) else { continue };
            backward = Some(user);
            counter = Some(c);
            links.push(StackLink { forward_carry: k, backward_carry: operand, written, read, read_index });
        }
        let (Some(backward), Some(counter)) = (backward, counter) else { continue };
        // Every read of the pair reads one layer in each iteration, one the forward wrote.
        let Some(backward_body) = loop_body(backward) else { continue };
        let Ok(backward_states) = crate::unroll::trip_states(backward, kept_loop::MAX_COUNTED_TRIPS) else { continue };
        let backward_arguments = ir::block_arguments(backward_body);
        let agree = backward_states[..backward_states.len() - 1].iter().all(|state| {
            let mut evaluator = crate::unroll::Evaluator::bound(&backward_arguments, state);
            let indices: Vec<Option<i64>> = links.iter().map(|l| evaluator.value(l.read_index)).collect();
            indices.iter().all(|&i| i.is_some() && i == indices[0] && (0..trips as i64).contains(&i.unwrap_or(-1)))
        });
        if agree {
            found.push(Pair { forward, backward, counter, links });
        }
    }
    found
}

/// `tensor.insert_slice %v into %stack[%i, 0, …]` of a `[1, …]` slice: (`%v`, `%i`).
fn layer_write(op: Op, stack: Val) -> Option<(Val, Val)> {
    if ir::op_name(op) != "tensor.insert_slice" {
        return None;
    }
    let operands = ir::operands(op);
    if operands.len() < 3 || !ir::same_value(operands[1], stack) {
        return None;
    }
    let index = layer_slice_index(op, ir::value_type(stack), &operands[2..])?;
    Some((operands[0], index))
}

/// `%r = tensor.extract_slice %stack[%i, 0, …]` of a `[1, …]` slice of type `slice`: (`%r`, `%i`).
fn layer_read(op: Op, slice: MlirType) -> Option<(Val, Val)> {
    if ir::op_name(op) != "tensor.extract_slice" {
        return None;
    }
    let operands = ir::operands(op);
    let result = ir::results(op)[0];
    if operands.len() < 2 || !ir::types_equal(ir::value_type(result), slice) {
        return None;
    }
    let index = layer_slice_index(op, ir::value_type(operands[0]), &operands[1..])?;
    Some((result, index))
}

/// The layer index of a slice op whose offsets are `[%i, 0, …]`, sizes `[1, d1, …]` and
/// strides 1 in a stack of shape `[n, d1, …]`. `dynamic` are its offset operands (and nothing
/// else); offsets past the first may be computed, from constants, to 0 (StableHLO's clamped
/// indices, legalized).
fn layer_slice_index(op: Op, stack: MlirType, dynamic: &[Val]) -> Option<Val> {
    let shape = ir::tensor_shape(stack)?;
    let get = |name| ir::attribute(op, name).and_then(ir::dense_i64_array);
    let (offsets, sizes, strides) = (get("static_offsets")?, get("static_sizes")?, get("static_strides")?);
    let dynamic_offsets = offsets.iter().filter(|&&o| o == i64::MIN).count();
    let shapes_fit = offsets.len() == shape.len()
        && offsets[0] == i64::MIN
        && dynamic.len() == dynamic_offsets
        && sizes.first() == Some(&1)
        && sizes[1..].iter().zip(&shape[1..]).all(|(&s, &d)| s == d as i64)
        && strides.iter().all(|&s| s == 1);
    if !shapes_fit {
        return None;
    }
    let mut rest = dynamic[1..].iter();
    for &offset in &offsets[1..] {
        let zero = if offset == i64::MIN {
            crate::unroll::Evaluator::default().value(*rest.next()?) == Some(0)
        } else {
            offset == 0
        };
        if !zero {
            return None;
        }
    }
    Some(dynamic[0])
}

/// `tensor.extract_slice %stack[%index, 0, …]` of type `slice` (`[1, d…]`), before `reference`.
fn layer_slice(stack: Val, index: Val, slice: MlirType, block: MlirBlock, reference: Op) -> Option<Val> {
    let shape = ir::tensor_shape(slice)?;
    let context = unsafe { mlirOperationGetContext(reference) };
    let array = |values: Vec<i64>| unsafe { mlirDenseI64ArrayGet(context, values.len() as isize, values.as_ptr()) };
    let mut offsets = vec![0i64; shape.len()];
    offsets[0] = i64::MIN;
    let attributes = [
        ("operandSegmentSizes", ir::dense_i32_array_attribute(reference, &[1, 1, 0, 0])),
        ("static_offsets", array(offsets)),
        ("static_sizes", array(shape.iter().map(|&d| d as i64).collect())),
        ("static_strides", array(vec![1; shape.len()])),
    ];
    let op = ir::create_op("tensor.extract_slice", &[stack, index], &[slice], &attributes, ir::location(reference));
    ir::insert_before(block, reference, op);
    Some(ir::results(op)[0])
}

/// `index` (an `index`) as a value of the counter's type (`tensor<iN>` or `iN`), before `reference`.
fn layer_value(index: Val, counter: MlirType, block: MlirBlock, reference: Op) -> Option<Val> {
    let scalar = if ir::is_ranked_tensor(counter) {
        if ir::tensor_shape(counter)?.iter().product::<u64>() != 1 || !ir::tensor_shape(counter)?.is_empty() {
            return None;
        }
        ir::element_type(counter)
    } else {
        counter
    };
    ir::integer_width(scalar)?;
    let location = ir::location(reference);
    let cast = ir::create_op("arith.index_cast", &[index], &[scalar], &[], location);
    ir::insert_before(block, reference, cast);
    let value = ir::results(cast)[0];
    if !ir::is_ranked_tensor(counter) {
        return Some(value);
    }
    let tensor = ir::create_op("tensor.from_elements", &[value], &[counter], &[], location);
    ir::insert_before(block, reference, tensor);
    Some(ir::results(tensor)[0])
}

/// Where `written` (a `[1, d…]` slice) is a value of shape `[d…]` with the unit dimension
/// added (a reshape, or jaxlib's copy): that value.
fn unit_dim_source(written: Val) -> Option<Val> {
    let (op, _) = ir::defining_op(written)?;
    if ir::operands(op).is_empty() || !crate::import::only_adds_unit_dims(op) {
        return None;
    }
    let source = ir::operands(op)[0];
    let slice = ir::tensor_shape(ir::value_type(written))?;
    let shape = ir::tensor_shape(ir::value_type(source))?;
    let same_element =
        ir::types_equal(ir::element_type(ir::value_type(source)), ir::element_type(ir::value_type(written)));
    (same_element && slice.first() == Some(&1) && slice[1..] == shape[..]).then_some(source)
}

/// `tensor.collapse_shape` of `slice` (`[1, d…]`) to `[d…]`, inserted before `reference`.
fn drop_unit_dim(slice: Val, to: MlirType, block: MlirBlock, reference: Op) -> Option<Val> {
    let rank = ir::tensor_shape(to)?.len();
    let groups: Vec<String> =
        (0..rank).map(|d| if d == 0 { "[0, 1]".to_string() } else { format!("[{}]", d + 1) }).collect();
    let text = std::ffi::CString::new(format!("[{}]", groups.join(", "))).ok()?;
    let attribute = unsafe {
        mlirAttributeParseGet(mlirOperationGetContext(reference), mlirStringRefCreateFromCString(text.as_ptr()))
    };
    if attribute.ptr.is_null() {
        return None;
    }
    let op = ir::create_op(
        "tensor.collapse_shape",
        &[slice],
        &[to],
        &[("reassociation", attribute)],
        ir::location(reference),
    );
    ir::insert_before(block, reference, op);
    Some(ir::results(op)[0])
}

/// The forward body's ops (in body order) that compute `targets` from what the backward has:
/// the forward's loop-invariant values, its counter (the layer's index), and the `kept`
/// residuals (or the values they add a unit dimension to). `None` if a target needs another
/// carried value.
fn cone(pair: &Pair, kept: &[&StackLink], targets: &[Val]) -> Option<Vec<Op>> {
    let body = loop_body(pair.forward)?;
    let carried = kept_loop::classify(pair.forward)?;
    let arguments = ir::block_arguments(body);
    let mut available: HashSet<usize> = HashSet::new();
    for (k, &a) in arguments.iter().enumerate() {
        if carried[k] == Carried::Invariant || k == pair.counter {
            available.insert(ir::value_key(a));
        }
    }
    for link in kept {
        available.insert(ir::value_key(link.written));
        if let Some(source) = unit_dim_source(link.written) {
            available.insert(ir::value_key(source));
        }
    }
    let mut needed: HashSet<usize> = HashSet::new();
    let mut stack: Vec<Val> = targets.to_vec();
    while let Some(v) = stack.pop() {
        if available.contains(&ir::value_key(v)) {
            continue;
        }
        let Some((op, _)) = ir::defining_op(v) else {
            // A block argument: the forward's carry, or a value of a region nested in an op.
            return None;
        };
        if ir::op_block(op).ptr != body.ptr {
            if is_defined_in(op, body) {
                return None;
            }
            continue; // defined above the loop
        }
        if !needed.insert(ir::op_key(op)) {
            continue;
        }
        if !ops::is_pure(op) {
            return None;
        }
        for n in std::iter::once(op).chain(ir::nested_ops(op)) {
            for o in ir::operands(n) {
                let inside = ir::defining_op(o).is_some_and(|(d, _)| ir::same_op(d, op) || is_nested_in(d, op));
                let argument_of_nested =
                    ir::defining_op(o).is_none() && !arguments.iter().any(|&a| ir::same_value(a, o));
                if !inside && !argument_of_nested {
                    stack.push(o);
                }
            }
        }
    }
    Some(ir::block_ops(body).into_iter().filter(|&o| needed.contains(&ir::op_key(o))).collect())
}

/// Whether `op` sits somewhere inside `block` (directly or in a nested region).
fn is_defined_in(op: Op, block: MlirBlock) -> bool {
    let mut current = op;
    loop {
        let parent_block = ir::op_block(current);
        if parent_block.ptr == block.ptr {
            return true;
        }
        if parent_block.ptr.is_null() {
            return false;
        }
        let parent = unsafe { mlirBlockGetParentOperation(parent_block) };
        if parent.ptr.is_null() {
            return false;
        }
        current = parent;
    }
}

/// Whether `op` is nested (at any depth) in `ancestor`'s regions.
fn is_nested_in(op: Op, ancestor: Op) -> bool {
    let mut current = op;
    loop {
        let parent = unsafe { mlirOperationGetParentOperation(current) };
        if parent.ptr.is_null() {
            return false;
        }
        if ir::same_op(parent, ancestor) {
            return true;
        }
        current = parent;
    }
}

/// Erases pure ops of `block` whose results nothing uses, until none is left.
fn erase_dead_ops(block: MlirBlock) {
    loop {
        let dead: Vec<Op> = ir::block_ops(block)
            .into_iter()
            .filter(|&o| {
                let results = ir::results(o);
                !results.is_empty() && results.iter().all(|&r| ir::uses(r).is_empty()) && ops::is_pure(o)
            })
            .collect();
        if dead.is_empty() {
            return;
        }
        for o in dead {
            ir::erase(o);
        }
    }
}

/// Rebuilds `stablehlo.while` `op` without the carried values `drop`, which neither region
/// nor anything after the loop may read any more.
fn remove_carries(op: Op, drop: &[usize]) -> Result<(), RolledError> {
    let operands = ir::operands(op);
    let results = ir::results(op);
    let keep: Vec<usize> = (0..operands.len()).filter(|k| !drop.contains(k)).collect();
    if drop.iter().any(|&k| !ir::uses(results[k]).is_empty()) {
        return Err(RolledError::Unsupported("a dropped stack is read after the backward"));
    }
    let regions = ir::regions(op);
    for (index, &region) in regions.iter().enumerate() {
        let Some(&block) = ir::blocks(region).first() else {
            return Err(RolledError::Unsupported("a loop region is empty"));
        };
        let terminator =
            *ir::block_ops(block).last().ok_or(RolledError::Unsupported("a loop region has no terminator"))?;
        let arguments = ir::block_arguments(block);
        if index == 1 {
            // The body: return only the kept values (a dropped one comes back unchanged).
            let kept: Vec<Val> = keep.iter().map(|&k| ir::operands(terminator)[k]).collect();
            let new_return = ir::create_op("stablehlo.return", &kept, &[], &[], ir::location(terminator));
            ir::insert_before(block, terminator, new_return);
            ir::erase(terminator);
        }
        for &k in drop.iter().rev() {
            if !ir::uses(arguments[k]).is_empty() {
                return Err(RolledError::Unsupported("a loop still reads a dropped stack"));
            }
        }
        let mut sorted = drop.to_vec();
        sorted.sort_unstable();
        for &k in sorted.iter().rev() {
            unsafe { mlirBlockEraseArgument(block, k as u32) };
        }
    }
    let new_regions: Vec<MlirRegion> = regions
        .iter()
        .map(|&old| unsafe {
            let new = mlirRegionCreate();
            mlirRegionTakeBody(new, old);
            new
        })
        .collect();
    let kept_operands: Vec<Val> = keep.iter().map(|&k| operands[k]).collect();
    let types: Vec<MlirType> = keep.iter().map(|&k| ir::value_type(results[k])).collect();
    let name = std::ffi::CString::new("stablehlo.while").expect("no NUL");
    let rebuilt = unsafe {
        let mut state = mlirOperationStateGet(mlirStringRefCreateFromCString(name.as_ptr()), ir::location(op));
        mlirOperationStateAddOperands(&mut state, kept_operands.len() as isize, kept_operands.as_ptr());
        mlirOperationStateAddResults(&mut state, types.len() as isize, types.as_ptr());
        mlirOperationStateAddOwnedRegions(&mut state, new_regions.len() as isize, new_regions.as_ptr());
        mlirOperationCreate(&mut state)
    };
    ir::insert_before(ir::op_block(op), op, rebuilt);
    let new_results = ir::results(rebuilt);
    for (n, &k) in keep.iter().enumerate() {
        ir::replace_all_uses(results[k], new_results[n]);
    }
    ir::erase(op);
    Ok(())
}

/// The residuals [`choose`] has the backward recompute, per scan pair, and what the step then
/// measures in its input order.
#[derive(Clone, Debug)]
pub struct RolledChoice {
    /// Each pair with the forward carries whose stacks the backward recomputes.
    pub dropped: Vec<(ScanPair, Vec<usize>)>,
    /// Peak and cost of the step's input order with them dropped.
    pub peak_bytes: u64,
    pub cost: f64,
    /// Residual stacks of all pairs, and how many of them the backward could recompute.
    pub residuals: usize,
    pub recomputable: usize,
    /// Sets of residuals measured.
    pub tried: usize,
}

/// Chooses which residuals of the function's scans the backward recomputes, so that the step
/// in its input order fits `budget`: those that free the most bytes per unit of work first,
/// as few as reach the budget, each set measured exactly (applied to a copy of the module,
/// which is imported again). Without a set that fits, the one with the lowest peak, if lower
/// than the step's own. `None` when the function has no scan pair, already fits, or gains
/// nothing.
pub fn choose(
    imported: &crate::ImportedFunction,
    options: &crate::ImportOptions,
    budget: u64,
) -> Result<Option<RolledChoice>, crate::MlirError> {
    let pairs = scan_pairs(imported.body);
    for pair in &pairs {
        tracing::debug!(forward = pair.forward_position, backward = pair.backward_position, trips = pair.trips, residuals = ?pair.residuals, "scan pair");
    }
    if pairs.is_empty() {
        return Ok(None);
    }
    let baseline = remat_graph::simulate(&imported.graph, &imported.order)
        .map_err(|e| crate::MlirError { location: None, message: format!("internal error: {e}") })?;
    if baseline.peak_bytes <= budget {
        return Ok(None);
    }
    // Most bytes freed per unit of work first; ties in carry order.
    let mut candidates: Vec<(usize, usize, f64)> = Vec::new();
    for (p, pair) in pairs.iter().enumerate() {
        for r in &pair.residuals {
            if let Some(cost) = r.recompute_cost {
                let ratio = if cost > 0.0 { r.bytes as f64 / cost } else { f64::INFINITY };
                candidates.push((p, r.forward_carry, ratio));
            }
        }
    }
    candidates.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
    let residuals = pairs.iter().map(|p| p.residuals.len()).sum();
    let recomputable = candidates.len();
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    // A set of (pair, forward carry) with its peak and cost.
    type Measured = (Vec<(usize, usize)>, u64, f64);
    let mut best: Option<Measured> = None;
    let mut tried = 0;
    for &(p, carry, _) in &candidates {
        let mut set = chosen.clone();
        set.push((p, carry));
        tried += 1;
        let measured = measure(imported, options, &grouped(&pairs, &set));
        tracing::debug!(pair = p, carry, ?measured, "scan residuals measured");
        let Ok((peak, cost)) = measured else { continue };
        chosen = set;
        if best.as_ref().is_none_or(|b| peak < b.1) {
            best = Some((chosen.clone(), peak, cost));
        }
        if peak <= budget {
            best = Some((chosen.clone(), peak, cost));
            break;
        }
    }
    // Then keep again, dearest first, each residual the budget does without.
    if let Some((set, _, _)) = best.clone().filter(|b| b.1 <= budget) {
        let cost_of = |&(p, carry): &(usize, usize)| {
            pairs[p].residuals.iter().find(|r| r.forward_carry == carry).and_then(|r| r.recompute_cost).unwrap_or(0.0)
        };
        let mut dearest_first = set.clone();
        dearest_first.sort_by(|a, b| cost_of(b).total_cmp(&cost_of(a)));
        let mut current = set;
        for candidate in dearest_first {
            let without: Vec<(usize, usize)> = current.iter().copied().filter(|&c| c != candidate).collect();
            if without.is_empty() {
                continue;
            }
            tried += 1;
            if let Ok((peak, cost)) = measure(imported, options, &grouped(&pairs, &without)) {
                if peak <= budget {
                    current = without;
                    best = Some((current.clone(), peak, cost));
                }
            }
        }
    }
    Ok(best.filter(|b| b.1 < baseline.peak_bytes).map(|(set, peak_bytes, cost)| RolledChoice {
        dropped: grouped(&pairs, &set),
        peak_bytes,
        cost,
        residuals,
        recomputable,
        tried,
    }))
}

/// `set` (pair index, forward carry) as the carries to drop per pair.
fn grouped(pairs: &[ScanPair], set: &[(usize, usize)]) -> Vec<(ScanPair, Vec<usize>)> {
    pairs
        .iter()
        .enumerate()
        .filter_map(|(p, pair)| {
            let carries: Vec<usize> = set.iter().filter(|&&(q, _)| q == p).map(|&(_, c)| c).collect();
            (!carries.is_empty()).then(|| (pair.clone(), carries))
        })
        .collect()
}

/// Applies [`drop_residuals`] for each pair, the last pair first (dropping erases the stacks'
/// inits before the forward loop, which moves every later op).
pub fn apply(body: MlirBlock, dropped: &[(ScanPair, Vec<usize>)]) -> Result<(), RolledError> {
    let mut order: Vec<&(ScanPair, Vec<usize>)> = dropped.iter().collect();
    order.sort_by_key(|(pair, _)| std::cmp::Reverse(pair.forward_position));
    for (pair, carries) in order {
        drop_residuals(body, pair, carries)?;
    }
    Ok(())
}

/// Peak and cost of the input order of `imported`'s function with `dropped` applied, on a copy
/// of its module.
fn measure(
    imported: &crate::ImportedFunction,
    options: &crate::ImportOptions,
    dropped: &[(ScanPair, Vec<usize>)],
) -> Result<(u64, f64), RolledError> {
    let module = unsafe { mlirOperationGetParentOperation(imported.func) };
    let copy = unsafe { mlirOperationClone(module) };
    let result = (|| {
        let body = *ir::blocks(*ir::regions(copy).first().ok_or(RolledError::Unsupported("no module body"))?)
            .first()
            .ok_or(RolledError::Unsupported("no module body"))?;
        let func = crate::import::select_function(body, copy, Some(&imported.name))?;
        let keep = crate::ImportOptions { merge_recomputation: crate::MergeRecomputation::Keep, ..options.clone() };
        let again = crate::import::import_function(body, func, &keep)?;
        apply(again.body, dropped)?;
        if !unsafe { mlirOperationVerify(copy) } {
            return Err(RolledError::Invalid("it does not verify".into()));
        }
        let after = again.reimport(options)?;
        let simulation =
            remat_graph::simulate(&after.graph, &after.order).map_err(|e| RolledError::Invalid(e.to_string()))?;
        Ok((simulation.peak_bytes, simulation.cost))
    })();
    unsafe { mlirOperationDestroy(copy) };
    result
}

impl crate::ImportedFunction {
    /// Applies `choice` (from [`choose`]) to the function and imports it again.
    pub fn apply_scan_residuals(
        self,
        choice: &RolledChoice,
        options: &crate::ImportOptions,
    ) -> Result<crate::ImportedFunction, crate::MlirError> {
        let location = self.location();
        apply(self.body, &choice.dropped)
            .map_err(|e| crate::MlirError { location, message: format!("internal error: {e}") })?;
        self.reimport(options)
    }
}
