//! What the memory model needs to know about each op: views, constants, init ops,
//! destination operands, purity and cost (docs/memory-model.md).

use crate::ir::{self, Op};

/// Ops that bufferize to a view of their first operand: no buffer of their own.
const VIEW_OPS: &[&str] = &[
    "tensor.expand_shape",
    "tensor.collapse_shape",
    "tensor.extract_slice",
    "tensor.cast",
    "tensor.bitcast",
    "stablehlo.reshape",
];

/// Ops that bufferize to globals: no runtime buffer, no work.
const CONSTANT_OPS: &[&str] = &["arith.constant", "stablehlo.constant", "stablehlo.iota_constant", "tosa.const"];

/// Ops that only provide a destination buffer for a destination-passing op.
const INIT_OPS: &[&str] = &["tensor.empty", "bufferization.alloc_tensor", "linalg.fill"];

/// StableHLO ops with effects (or whose cloning would change meaning).
const STABLEHLO_IMPURE: &[&str] = &[
    "stablehlo.custom_call",
    "stablehlo.rng",
    "stablehlo.rng_bit_generator",
    "stablehlo.infeed",
    "stablehlo.outfeed",
    "stablehlo.send",
    "stablehlo.recv",
    "stablehlo.all_reduce",
    "stablehlo.all_gather",
    "stablehlo.all_to_all",
    "stablehlo.reduce_scatter",
    "stablehlo.collective_permute",
    "stablehlo.collective_broadcast",
    "stablehlo.partition_id",
    "stablehlo.replica_id",
    "stablehlo.after_all",
    "stablehlo.create_token",
    "stablehlo.optimization_barrier",
    "stablehlo.composite",
];

/// Dialects whose ops are free of side effects on tensors.
const PURE_DIALECTS: &[&str] = &["arith", "math", "tensor", "complex", "chlo", "affine", "index"];

/// Region terminators that carry values and do nothing else.
const PURE_TERMINATORS: &[&str] = &["linalg.yield", "tensor.yield", "scf.yield", "stablehlo.return", "affine.yield"];

pub(crate) fn is_view(name: &str) -> bool {
    VIEW_OPS.contains(&name)
}

pub(crate) fn is_constant(name: &str) -> bool {
    CONSTANT_OPS.contains(&name)
}

pub(crate) fn is_init(name: &str) -> bool {
    INIT_OPS.contains(&name)
}

fn dialect(name: &str) -> &str {
    name.split('.').next().unwrap_or("")
}

/// Whether `op` (with everything nested in it) can be executed again without changing the
/// program's meaning. Unknown ops are impure.
pub(crate) fn is_pure(op: Op) -> bool {
    std::iter::once(op).chain(ir::nested_ops(op)).all(is_pure_alone)
}

fn is_pure_alone(op: Op) -> bool {
    let name = ir::op_name(op);
    if PURE_TERMINATORS.contains(&name.as_str()) || is_constant(&name) {
        return true;
    }
    let touches_memref =
        ir::operands(op).iter().chain(ir::results(op).iter()).any(|&v| ir::is_memref(ir::value_type(v)));
    if touches_memref {
        return false;
    }
    match dialect(&name) {
        "linalg" | "bufferization" if name != "bufferization.materialize_in_destination" => true,
        "stablehlo" => !STABLEHLO_IMPURE.contains(&name.as_str()),
        "scf" => matches!(
            name.as_str(),
            "scf.for" | "scf.if" | "scf.while" | "scf.condition" | "scf.forall" | "scf.in_parallel"
        ),
        d => PURE_DIALECTS.contains(&d),
    }
}

/// Results of a `stablehlo.while` that the body passes through unchanged (it returns its block
/// argument `i` as value `i`): loop invariants, equal to operand `i`. Bufferization gives them
/// the operand's buffer, so they own no memory.
pub(crate) fn loop_invariant_results(op: Op) -> Vec<usize> {
    if ir::op_name(op) != "stablehlo.while" {
        return Vec::new();
    }
    let Some(&body_region) = ir::regions(op).get(1) else { return Vec::new() };
    let Some(&body) = ir::blocks(body_region).first() else { return Vec::new() };
    let Some(&yield_op) = ir::block_ops(body).last() else { return Vec::new() };
    let arguments = ir::block_arguments(body);
    let results = ir::results(op).len();
    ir::operands(yield_op)
        .into_iter()
        .enumerate()
        .filter(|&(i, v)| i < results && arguments.get(i).is_some_and(|&a| ir::same_value(a, v)))
        .map(|(i, _)| i)
        .collect()
}

/// Operand indices that are destination (`outs`) operands of a destination-passing op.
/// linalg ops with variadic inputs carry `operandSegmentSizes = [ins, outs]`; the others
/// (`linalg.transpose`, `linalg.broadcast`, `linalg.map`, `linalg.reduce`, …) end with one
/// init per tensor result. `tensor.insert_slice` and `tensor.insert` write into operand 1.
pub(crate) fn destination_operands(op: Op) -> std::ops::Range<usize> {
    let name = ir::op_name(op);
    match name.as_str() {
        "tensor.insert_slice" | "tensor.insert" => return 1..2,
        _ if dialect(&name) != "linalg" => return 0..0,
        _ => {}
    }
    if let Some(segments) = ir::attribute(op, "operandSegmentSizes").and_then(ir::dense_i32_array) {
        if segments.len() != 2 || segments.iter().any(|&s| s < 0) {
            return 0..0;
        }
        let ins = segments[0] as usize;
        return ins..ins + segments[1] as usize;
    }
    let operands = ir::operands(op).len();
    let results = ir::results(op).len();
    if results == 0 || results > operands {
        return 0..0;
    }
    operands - results..operands
}

fn elements(shape: &[u64]) -> f64 {
    shape.iter().map(|&d| d as f64).product()
}

fn shape_of(v: ir::Val) -> Vec<u64> {
    ir::tensor_shape(ir::value_type(v)).unwrap_or_default()
}

fn body_op_count(op: Op) -> f64 {
    let nested = ir::nested_ops(op);
    let work = nested.iter().filter(|&&o| !PURE_TERMINATORS.contains(&ir::op_name(o).as_str())).count();
    work.max(1) as f64
}

/// Reads `name = [a, b]` out of a printed (possibly opaque) attribute.
fn int_list_after(text: &str, name: &str) -> Vec<usize> {
    let Some(start) = text.find(name) else { return Vec::new() };
    let rest = &text[start + name.len()..];
    let Some(open) = rest.find('[') else { return Vec::new() };
    let Some(close) = rest[open..].find(']') else { return Vec::new() };
    rest[open + 1..open + close].split(',').filter_map(|s| s.trim().parse().ok()).collect()
}

/// Estimated work of one execution of `op` (docs/memory-model.md, "Cost"): 2·M·N·K for
/// contractions, 2·(output elements)·(kernel volume)·(input channels) for convolutions,
/// iteration space × scalar ops in the body for generic ops, output elements for data movement
/// and elementwise ops, 0 for views, constants and empty tensors.
pub(crate) fn cost(op: Op) -> f64 {
    let name = ir::op_name(op);
    if is_view(&name) || is_constant(&name) || name == "tensor.empty" || name == "bufferization.alloc_tensor" {
        return 0.0;
    }
    let operands = ir::operands(op);
    let results = ir::results(op);
    let out: f64 = results.iter().map(|&r| elements(&shape_of(r))).sum::<f64>().max(1.0);
    let lhs = operands.first().map(|&v| shape_of(v)).unwrap_or_default();
    let rhs = operands.get(1).map(|&v| shape_of(v)).unwrap_or_default();
    let reduction = |dim: usize| lhs.get(dim).copied().unwrap_or(1) as f64;
    match name.as_str() {
        "linalg.matmul" | "linalg.matvec" => 2.0 * out * reduction(1),
        "linalg.batch_matmul" => 2.0 * out * reduction(2),
        "linalg.vecmat" | "linalg.dot" => 2.0 * out * reduction(0),
        "stablehlo.dot" => 2.0 * out * lhs.last().copied().unwrap_or(1) as f64,
        "stablehlo.dot_general" => {
            let dims = ir::attribute(op, "dot_dimension_numbers").map(ir::attribute_text).unwrap_or_default();
            let k: f64 = int_list_after(&dims, "lhs_contracting_dimensions").iter().map(|&d| reduction(d)).product();
            2.0 * out * k
        }
        "stablehlo.convolution" => {
            let text = ir::attribute(op, "dimension_numbers").map(ir::attribute_text).unwrap_or_default();
            // `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`: the kernel's output-feature position.
            let kernel_spec = text.split('x').nth(1).and_then(|s| s.split("->").next()).unwrap_or("");
            let o =
                kernel_spec.trim_matches(|c| c == '[' || c == ']' || c == ' ').split(',').position(|d| d.trim() == "o");
            let cout = o.and_then(|o| rhs.get(o)).copied().unwrap_or(1).max(1) as f64;
            2.0 * out * elements(&rhs) / cout
        }
        n if n.starts_with("linalg.conv")
            || n.starts_with("linalg.depthwise_conv")
            || n.starts_with("linalg.pooling") =>
        {
            // Filter layouts ending in `f` (…hwcf) keep output channels last; `f…` first.
            let filter_suffix = n.rsplit('_').next().unwrap_or("");
            let cout = if filter_suffix.ends_with('f') {
                rhs.last().copied()
            } else if filter_suffix.starts_with('f') {
                rhs.first().copied()
            } else {
                Some(1)
            };
            2.0 * out * elements(&rhs) / cout.unwrap_or(1).max(1) as f64
        }
        "linalg.generic" | "linalg.reduce" | "linalg.map" => {
            let volume = ir::iteration_volume(op)
                .map(|v| v as f64)
                .unwrap_or_else(|| operands.iter().map(|&v| elements(&shape_of(v))).fold(out, f64::max));
            volume * body_op_count(op)
        }
        "stablehlo.reduce" | "stablehlo.reduce_window" | "stablehlo.scatter" | "stablehlo.select_and_scatter" => {
            let input = operands.iter().map(|&v| elements(&shape_of(v))).fold(out, f64::max);
            input * body_op_count(op)
        }
        _ if ir::regions(op).is_empty() => out,
        _ => out * body_op_count(op),
    }
}
