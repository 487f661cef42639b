//! Unrolling `stablehlo.while` loops whose trip count is known before the step runs.
//!
//! JAX lowers `lax.scan` and `fori_loop` to a `stablehlo.while` whose condition compares an
//! integer counter with a constant. As one graph node such a loop hides what it allocates in
//! each iteration (bufferization gives every iteration its own temporaries and copies of the
//! carried values), so the memory model could not match the run; and a planner could not
//! keep or recompute anything inside it. Unrolled, every op of every iteration is an ordinary
//! node: the model is exact again and the planner sees the whole step.
//!
//! The trip count is found by *evaluating* the loop's integer bookkeeping: carried values that
//! are integers with one element, computed from constants by `arith`, `linalg.generic` on
//! one-element tensors, `tensor.extract`/`from_elements` and the StableHLO integer ops. A
//! loop whose condition needs anything else (a value computed from the data, say) is kept and
//! reported. Each unrolled iteration gets its counters as constants, so the ops that only
//! advance them are dropped.

use crate::ir::{self, Op, Val};
use crate::ops;
use crate::MlirError;
use mlir_sys::MlirBlock;
use std::collections::HashMap;

/// Why a loop's trip count cannot be evaluated before the step runs (so it is not unrolled).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TripCountError {
    /// The `stablehlo.while` lacks a condition or a body block.
    #[error("it has no condition and body regions")]
    MissingRegions,
    /// An op of the condition is not pure.
    #[error("its condition has side effects")]
    ConditionSideEffects,
    /// The condition's terminator has no operand.
    #[error("its condition yields nothing")]
    ConditionYieldsNothing,
    /// The numbers of operands, region arguments and yielded values differ.
    #[error("its regions do not match its operands")]
    RegionsMismatch { operands: usize, condition_arguments: usize, body_arguments: usize, yields: usize },
    /// The condition depends on a value that is not integer bookkeeping evaluated from constants.
    #[error("its trip count depends on values known only when the step runs")]
    DependsOnRuntimeValues,
    /// The loop runs more than `limit` iterations (`--unroll-limit`).
    #[error("more than {limit} iterations; raise --unroll-limit to unroll it")]
    TooManyIterations { limit: usize },
    /// Unrolled, the function's loops would add more than `limit` ops (`--unroll-max-ops`).
    #[error(
        "unrolled, the function's loops would add {ops} ops, more than {limit}; raise --unroll-max-ops to unroll them"
    )]
    TooManyOps { ops: usize, limit: usize },
}

/// Why a loop was left as one node.
pub(crate) fn kept_loop(op: Op, why: &TripCountError) -> MlirError {
    MlirError {
        location: Some(ir::location_text(ir::location(op))),
        message: format!(
            "loop kept as one node ({why}): the plan counts its results but not the buffers each iteration allocates, so the run may exceed the planned peak"
        ),
    }
}

/// Unrolls every top-level `stablehlo.while` of `body` whose trip count is at most
/// `max_trips` and can be evaluated; returns one warning per loop left in place, with the loop.
/// Loops nested in an unrolled body come to the top level and are unrolled in turn.
pub(crate) fn unroll_static_loops(body: MlirBlock, max_trips: usize, max_ops: usize) -> (usize, Vec<(Op, MlirError)>) {
    let mut unrolled = 0;
    let mut kept: Vec<(Op, MlirError)> = Vec::new();
    // Unrolling is all or nothing, so that a scan's two loops are treated alike: past
    // `max_ops`, every loop stays whole (and is planned rolled).
    let counted: Vec<(Op, usize)> = ir::block_ops(body)
        .into_iter()
        .filter(|&op| ir::op_name(op) == "stablehlo.while")
        .filter_map(|op| Some((op, trip_states(op, max_trips).ok()?.len() - 1)))
        .collect();
    let ops: usize = counted.iter().map(|&(op, trips)| trips.saturating_mul(body_op_count(op))).sum();
    tracing::debug!(loops = counted.len(), ops, max_ops, "ops the static loops would add unrolled");
    if ops > max_ops {
        for (op, _) in counted {
            kept.push((op, kept_loop(op, &TripCountError::TooManyOps { ops, limit: max_ops })));
        }
    }
    loop {
        let next = ir::block_ops(body).into_iter().find(|&op| {
            ir::op_name(op) == "stablehlo.while" && !kept.iter().any(|(k, _)| ir::op_key(*k) == ir::op_key(op))
        });
        let Some(op) = next else { break };
        match trip_states(op, max_trips) {
            Ok(states) => {
                unroll(body, op, &states);
                unrolled += 1;
            }
            Err(why) => kept.push((op, kept_loop(op, &why))),
        }
    }
    (unrolled, kept)
}

/// Ops in a loop's body as written (its top-level ops, terminators excluded; a call counts
/// as one): about what each unrolled iteration adds to the function.
fn body_op_count(op: Op) -> usize {
    ir::regions(op)
        .get(1)
        .and_then(|&r| ir::blocks(r).first().copied())
        .map_or(0, |b| ir::block_ops(b).len().saturating_sub(1))
}

/// How many iterations `stablehlo.while` `op` runs, when its integer bookkeeping can be
/// evaluated before the step runs and the count is at most `limit` (the lowering turns such a
/// loop into an `scf.for`, whose iterations bufferize without copying the carried values).
pub fn static_trip_count(op: Op, limit: usize) -> Option<usize> {
    trip_states(op, limit).ok().map(|states| states.len() - 1)
}

/// The known integer carried values at the start of each iteration, plus the state after the
/// last one (`states.len() == trips + 1`). `None` marks a carried value not known statically.
pub(crate) type TripStates = Vec<Vec<Option<i64>>>;

fn loop_blocks(op: Op) -> Option<(MlirBlock, MlirBlock)> {
    let regions = ir::regions(op);
    let cond = *ir::blocks(*regions.first()?).first()?;
    let body = *ir::blocks(*regions.get(1)?).first()?;
    Some((cond, body))
}

fn terminator_operands(block: MlirBlock) -> Vec<Val> {
    ir::block_ops(block).last().map(|&t| ir::operands(t)).unwrap_or_default()
}

pub(crate) fn trip_states(op: Op, max_trips: usize) -> Result<TripStates, TripCountError> {
    let (cond, body) = loop_blocks(op).ok_or(TripCountError::MissingRegions)?;
    if !ir::block_ops(cond).iter().all(|&o| ops::is_pure(o)) {
        return Err(TripCountError::ConditionSideEffects);
    }
    let inits = ir::operands(op);
    let cond_args = ir::block_arguments(cond);
    let body_args = ir::block_arguments(body);
    let yields = terminator_operands(body);
    let cond_value = *terminator_operands(cond).first().ok_or(TripCountError::ConditionYieldsNothing)?;
    if cond_args.len() != inits.len() || body_args.len() != inits.len() || yields.len() != inits.len() {
        return Err(TripCountError::RegionsMismatch {
            operands: inits.len(),
            condition_arguments: cond_args.len(),
            body_arguments: body_args.len(),
            yields: yields.len(),
        });
    }
    let mut state: Vec<Option<i64>> = inits.iter().map(|&v| Evaluator::default().value(v)).collect();
    let mut states = Vec::new();
    loop {
        let mut eval = Evaluator::bound(&cond_args, &state);
        match eval.value(cond_value) {
            None => return Err(TripCountError::DependsOnRuntimeValues),
            Some(0) => break,
            Some(_) if states.len() == max_trips => {
                return Err(TripCountError::TooManyIterations { limit: max_trips });
            }
            Some(_) => {}
        }
        let mut eval = Evaluator::bound(&body_args, &state);
        let next = yields.iter().map(|&y| eval.value(y)).collect();
        states.push(std::mem::replace(&mut state, next));
    }
    states.push(state);
    Ok(states)
}

/// Replaces loop `op` by `states.len() - 1` copies of its body, in order, right before it.
fn unroll(body: MlirBlock, op: Op, states: &TripStates) {
    let (_, loop_body) = loop_blocks(op).expect("checked by trip_states");
    let args = ir::block_arguments(loop_body);
    let yields = terminator_operands(loop_body);
    let body_ops = ir::block_ops(loop_body);
    let (_, body_ops) = body_ops.split_last().expect("a body has a terminator");
    let constant_name = if ir::nested_ops(op).iter().any(|&o| {
        let n = ir::op_name(o);
        n.starts_with("stablehlo.") && n != "stablehlo.return"
    }) {
        "stablehlo.constant"
    } else {
        "arith.constant"
    };
    let loc = ir::location(op);
    let mut created: Vec<Op> = Vec::new();
    let constant = |t: mlir_sys::MlirType, value: i64, created: &mut Vec<Op>| {
        let c = ir::create_integer_constant(constant_name, t, value, loc);
        ir::insert_before(body, op, c);
        created.push(c);
        ir::results(c)[0]
    };
    let mut current: Vec<Val> = ir::operands(op);
    for state in &states[..states.len() - 1] {
        let mut map: HashMap<usize, Val> = HashMap::new();
        for (k, &arg) in args.iter().enumerate() {
            let value = match state[k] {
                Some(v) if !ir::uses(arg).is_empty() => constant(ir::value_type(arg), v, &mut created),
                _ => current[k],
            };
            map.insert(ir::value_key(arg), value);
        }
        for &o in body_ops {
            created.push(ir::clone_remapped(o, body, op, &mut map));
        }
        current = yields.iter().map(|y| map.get(&ir::value_key(*y)).copied().unwrap_or(*y)).collect();
    }
    let last = states.last().expect("at least the final state");
    for (k, result) in ir::results(op).into_iter().enumerate() {
        if ir::uses(result).is_empty() {
            continue;
        }
        let value = match last[k] {
            Some(v) => constant(ir::value_type(result), v, &mut created),
            None => current[k],
        };
        ir::replace_all_uses(result, value);
    }
    ir::erase(op);
    // Counters now come from constants: drop the copies that only advanced them.
    for &o in created.iter().rev() {
        if ir::results(o).iter().all(|&r| ir::uses(r).is_empty()) && ops::is_pure(o) {
            ir::erase(o);
        }
    }
}

/// Evaluates integer values with one element (scalars and one-element tensors).
#[derive(Default)]
pub(crate) struct Evaluator {
    known: HashMap<usize, i64>,
    depth: usize,
}

/// Deeper expressions than this are not bookkeeping.
const MAX_DEPTH: usize = 256;

impl Evaluator {
    pub(crate) fn bound(args: &[Val], state: &[Option<i64>]) -> Self {
        let mut e = Evaluator::default();
        for (&a, s) in args.iter().zip(state) {
            if let Some(v) = s {
                e.known.insert(ir::value_key(a), *v);
            }
        }
        e
    }

    /// The value of `v`, when it is integer bookkeeping computed from constants.
    pub(crate) fn value(&mut self, v: Val) -> Option<i64> {
        if let Some(&x) = self.known.get(&ir::value_key(v)) {
            return Some(x);
        }
        let width = single_integer_width(v)?;
        let (op, index) = ir::defining_op(v)?;
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let result = self.evaluate(op, index);
        self.depth -= 1;
        let x = wrap(result?, width);
        self.known.insert(ir::value_key(v), x);
        Some(x)
    }

    fn operand(&mut self, op: Op, i: usize) -> Option<i64> {
        ir::operands(op).get(i).copied().and_then(|v| self.value(v))
    }

    fn evaluate(&mut self, op: Op, index: usize) -> Option<i64> {
        let name = ir::op_name(op);
        let operand_width = ir::operands(op).first().and_then(|&v| single_integer_width(v));
        match name.as_str() {
            "arith.constant" | "stablehlo.constant" => ir::integer_attribute_value(ir::attribute(op, "value")?),
            "tensor.extract"
            | "tensor.from_elements"
            | "tensor.cast"
            | "tensor.expand_shape"
            | "tensor.collapse_shape"
            | "tensor.reshape"
            | "stablehlo.reshape"
            | "stablehlo.broadcast_in_dim"
            | "stablehlo.convert"
            | "arith.extsi"
            | "arith.trunci"
            | "arith.index_cast" => {
                if name == "tensor.from_elements" && ir::operands(op).len() != 1 {
                    return None;
                }
                self.operand(op, 0)
            }
            // `copy(…)` of a value (the importer gives a loop's constant inits copies).
            "bufferization.alloc_tensor" if ir::operands(op).len() == 1 && ir::results(op).len() == 1 => {
                self.operand(op, 0)
            }
            "arith.extui" | "arith.index_castui" => {
                let w = operand_width?;
                self.operand(op, 0).map(|x| unsigned(x, w) as i64)
            }
            "linalg.generic" | "linalg.map" => self.region_result(op, index),
            "arith.select" | "stablehlo.select" => {
                if self.operand(op, 0)? != 0 {
                    self.operand(op, 1)
                } else {
                    self.operand(op, 2)
                }
            }
            "arith.cmpi" => {
                let p = ir::integer_attribute_value(ir::attribute(op, "predicate")?)?;
                let (a, b) = (self.operand(op, 0)?, self.operand(op, 1)?);
                compare(predicate_name(p)?, a, b, operand_width?)
            }
            "stablehlo.compare" => {
                let direction = ir::attribute_text(ir::attribute(op, "comparison_direction")?);
                let unsigned =
                    ir::attribute(op, "compare_type").is_some_and(|t| ir::attribute_text(t).contains("UNSIGNED"));
                let direction =
                    ["EQ", "NE", "LT", "LE", "GT", "GE"].into_iter().find(|d| direction.contains(&format!(" {d}>")))?;
                let p = match (direction, unsigned) {
                    ("EQ", _) => "eq",
                    ("NE", _) => "ne",
                    ("LT", false) => "slt",
                    ("LE", false) => "sle",
                    ("GT", false) => "sgt",
                    ("GE", false) => "sge",
                    ("LT", true) => "ult",
                    ("LE", true) => "ule",
                    ("GT", true) => "ugt",
                    _ => "uge",
                };
                let (a, b) = (self.operand(op, 0)?, self.operand(op, 1)?);
                compare(p, a, b, operand_width?)
            }
            "stablehlo.negate" => self.operand(op, 0)?.checked_neg(),
            _ => {
                let f = binary(&name)?;
                let (a, b) = (self.operand(op, 0)?, self.operand(op, 1)?);
                f(a, b)
            }
        }
    }

    /// Result `index` of a `linalg.generic`/`linalg.map` on one-element tensors: its region
    /// with the block arguments bound to the operands' values.
    fn region_result(&mut self, op: Op, index: usize) -> Option<i64> {
        if ir::attribute(op, "iterator_types").is_some_and(|t| ir::attribute_text(t).contains("reduction")) {
            return None;
        }
        let block = *ir::blocks(*ir::regions(op).first()?).first()?;
        let operands = ir::operands(op);
        for (arg, value) in ir::block_arguments(block).into_iter().zip(operands) {
            // The `outs` of an elementwise op is usually an empty tensor: leave it unbound.
            if let Some(x) = self.value(value) {
                self.known.insert(ir::value_key(arg), x);
            }
        }
        let yielded = *terminator_operands(block).get(index)?;
        self.value(yielded)
    }
}

/// The bit width of an integer value with exactly one element, `None` for anything else.
fn single_integer_width(v: Val) -> Option<u32> {
    let t = ir::value_type(v);
    let one_element_tensor = ir::tensor_shape(t).is_some_and(|s| s.iter().product::<u64>() == 1);
    if one_element_tensor || ir::integer_width(t).is_some() {
        ir::integer_width(ir::element_type(t))
    } else {
        None
    }
}

/// `x` truncated to `width` bits and sign-extended (`i1` stays 0 or 1).
fn wrap(x: i64, width: u32) -> i64 {
    match width {
        0 => 0,
        1 => x & 1,
        64.. => x,
        w => (x << (64 - w)) >> (64 - w),
    }
}

fn unsigned(x: i64, width: u32) -> u64 {
    if width >= 64 {
        x as u64
    } else {
        (x as u64) & ((1u64 << width) - 1)
    }
}

fn predicate_name(p: i64) -> Option<&'static str> {
    ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"].get(usize::try_from(p).ok()?).copied()
}

fn compare(p: &str, a: i64, b: i64, width: u32) -> Option<i64> {
    let (ua, ub) = (unsigned(a, width), unsigned(b, width));
    let (a, b) = (wrap(a, width), wrap(b, width));
    Some(match p {
        "eq" => a == b,
        "ne" => a != b,
        "slt" => a < b,
        "sle" => a <= b,
        "sgt" => a > b,
        "sge" => a >= b,
        "ult" => ua < ub,
        "ule" => ua <= ub,
        "ugt" => ua > ub,
        "uge" => ua >= ub,
        _ => return None,
    } as i64)
}

type Binary = fn(i64, i64) -> Option<i64>;

fn binary(name: &str) -> Option<Binary> {
    Some(match name {
        "arith.addi" | "stablehlo.add" => |a: i64, b: i64| Some(a.wrapping_add(b)),
        "arith.subi" | "stablehlo.subtract" => |a: i64, b: i64| Some(a.wrapping_sub(b)),
        "arith.muli" | "stablehlo.multiply" => |a: i64, b: i64| Some(a.wrapping_mul(b)),
        "arith.divsi" | "stablehlo.divide" => |a: i64, b: i64| a.checked_div(b),
        "arith.remsi" | "stablehlo.remainder" => |a: i64, b: i64| a.checked_rem(b),
        "arith.maxsi" | "stablehlo.maximum" => |a: i64, b: i64| Some(a.max(b)),
        "arith.minsi" | "stablehlo.minimum" => |a: i64, b: i64| Some(a.min(b)),
        "arith.andi" | "stablehlo.and" => |a: i64, b: i64| Some(a & b),
        "arith.ori" | "stablehlo.or" => |a: i64, b: i64| Some(a | b),
        "arith.xori" | "stablehlo.xor" => |a: i64, b: i64| Some(a ^ b),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::TripCountError;

    #[test]
    fn trip_count_errors_print_the_importers_reasons() {
        // lit-tests/import/unroll*.mlir check these inside "loop kept as one node (…)".
        assert_eq!(
            TripCountError::DependsOnRuntimeValues.to_string(),
            "its trip count depends on values known only when the step runs"
        );
        assert_eq!(
            TripCountError::TooManyIterations { limit: 3 }.to_string(),
            "more than 3 iterations; raise --unroll-limit to unroll it"
        );
    }
}
