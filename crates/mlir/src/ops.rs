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
/// and elementwise ops (the slice's for a slice written into a tensor, the copy's for
/// `bufferization.alloc_tensor copy`), 0 for views, constants and empty tensors.
pub(crate) fn cost(op: Op) -> f64 {
    let name = ir::op_name(op);
    if name == "bufferization.alloc_tensor" && !ir::operands(op).is_empty() {
        // `copy(%v)`: a fresh buffer holding `%v`.
        return ir::results(op).iter().map(|&r| elements(&shape_of(r))).sum();
    }
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
        // Written in place (or into a copy the importer makes, counted apart): the slice.
        "tensor.insert_slice" => elements(&lhs),
        "stablehlo.dynamic_update_slice" => elements(&rhs),
        "stablehlo.reduce" | "stablehlo.reduce_window" | "stablehlo.scatter" | "stablehlo.select_and_scatter" => {
            let input = operands.iter().map(|&v| elements(&shape_of(v))).fold(out, f64::max);
            input * body_op_count(op)
        }
        _ if ir::regions(op).is_empty() => out,
        _ => out * body_op_count(op),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RematContext;

    /// What the memory model sees in one op: `name [view] [constant] [init] [outs=a..b]
    /// pure|impure cost=N`.
    fn describe(op: Op) -> String {
        let name = ir::op_name(op);
        let mut line = name.clone();
        for (flag, word) in [(is_view(&name), "view"), (is_constant(&name), "constant"), (is_init(&name), "init")] {
            if flag {
                line.push(' ');
                line.push_str(word);
            }
        }
        let outs = destination_operands(op);
        if !outs.is_empty() {
            line.push_str(&format!(" outs={}..{}", outs.start, outs.end));
        }
        let purity = if is_pure(op) { "pure" } else { "impure" };
        line.push_str(&format!(" {purity} cost={}", cost(op)));
        line
    }

    /// Describes every op of function `@f`'s body but its terminator, one line each, and
    /// compares with `expected` (lines trimmed).
    fn check(input: &str, expected: &str) {
        let context = RematContext::new();
        let module = context.parse(input, "ops.mlir").unwrap_or_else(|e| panic!("{e:?}\n{input}"));
        let module_op = module.as_operation().to_raw();
        let func = ir::nested_ops(module_op)
            .into_iter()
            .find(|&op| ir::op_name(op) == "func.func" && ir::string_attribute(op, "sym_name").as_deref() == Some("f"))
            .expect("a function @f");
        let body = ir::blocks(ir::regions(func)[0])[0];
        let ops = ir::block_ops(body);
        let actual: Vec<String> = ops[..ops.len() - 1].iter().map(|&op| describe(op)).collect();
        let expected: Vec<&str> = expected.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        assert_eq!(actual, expected, "\n{input}");
    }

    #[test]
    fn views_and_constants_are_pure_and_free() {
        check(
            r#"
            func.func @f(%x: tensor<4x8xf32>, %i: index) {
              %a = tensor.collapse_shape %x [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
              %b = tensor.expand_shape %a [[0, 1]] output_shape [8, 4] : tensor<32xf32> into tensor<8x4xf32>
              %c = tensor.extract_slice %x[%i, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
              %d = tensor.cast %x : tensor<4x8xf32> to tensor<?x8xf32>
              %e = tensor.bitcast %x : tensor<4x8xf32> to tensor<4x8xi32>
              %g = "stablehlo.reshape"(%x) : (tensor<4x8xf32>) -> tensor<32xf32>
              %h = arith.constant dense<1.0> : tensor<64xf32>
              %k = "stablehlo.constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
              return
            }
            "#,
            "
            tensor.collapse_shape view pure cost=0
            tensor.expand_shape view pure cost=0
            tensor.extract_slice view pure cost=0
            tensor.cast view pure cost=0
            tensor.bitcast view pure cost=0
            stablehlo.reshape view pure cost=0
            arith.constant constant pure cost=0
            stablehlo.constant constant pure cost=0
            ",
        );
    }

    #[test]
    fn init_ops_cost_nothing_but_fills_and_copies_write_their_output() {
        check(
            r#"
            func.func @f(%x: tensor<4x8xf32>) {
              %cst = arith.constant 0.0 : f32
              %e = tensor.empty() : tensor<4x8xf32>
              %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
              %a = bufferization.alloc_tensor() : tensor<4x8xf32>
              %c = bufferization.alloc_tensor() copy(%x) : tensor<4x8xf32>
              return
            }
            "#,
            "
            arith.constant constant pure cost=0
            tensor.empty init pure cost=0
            linalg.fill init outs=1..2 pure cost=32
            bufferization.alloc_tensor init pure cost=0
            bufferization.alloc_tensor init pure cost=32
            ",
        );
    }

    #[test]
    fn destination_operands_from_segments_trailing_inits_and_insert_ops() {
        // The fill on a buffer has no result: only `operandSegmentSizes` says what it writes.
        check(
            r#"
            func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<4x2xf32>, %t: tensor<8x4xf32>,
                         %s: tensor<2x2xf32>, %r: tensor<4xf32>, %v: f32, %i: index, %m: memref<4x2xf32>) {
              %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%c : tensor<4x2xf32>) -> tensor<4x2xf32>
              %1 = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%t : tensor<8x4xf32>) permutation = [1, 0]
              %2:2 = linalg.reduce ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%r, %r : tensor<4xf32>, tensor<4xf32>)
                dimensions = [1]
                (%in0: f32, %in1: f32, %out0: f32, %out1: f32) {
                  %x0 = arith.addf %in0, %out0 : f32
                  %x1 = arith.maximumf %in1, %out1 : f32
                  linalg.yield %x0, %x1 : f32, f32
                }
              %3 = tensor.insert_slice %s into %c[0, 0] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<4x2xf32>
              %4 = tensor.insert %v into %c[%i, %i] : tensor<4x2xf32>
              %5 = "stablehlo.add"(%a, %a) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
              linalg.fill ins(%v : f32) outs(%m : memref<4x2xf32>)
              return
            }
            "#,
            "
            linalg.matmul outs=2..3 pure cost=128
            linalg.transpose outs=1..2 pure cost=32
            linalg.reduce outs=2..4 pure cost=64
            tensor.insert_slice outs=1..2 pure cost=4
            tensor.insert outs=1..2 pure cost=8
            stablehlo.add pure cost=32
            linalg.fill init outs=1..2 impure cost=1
            ",
        );
    }

    #[test]
    fn effects_calls_unknown_ops_and_memrefs_are_impure() {
        check(
            r#"
            func.func private @g(tensor<4xf32>) -> tensor<4xf32>
            func.func @f(%x: tensor<4xf32>, %m: memref<4xf32>, %n: index) {
              %c0 = arith.constant 0 : index
              %c1 = arith.constant 1 : index
              %0 = "stablehlo.custom_call"(%x) <{call_target_name = "foo"}> : (tensor<4xf32>) -> tensor<4xf32>
              %1 = "stablehlo.optimization_barrier"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %2 = func.call @g(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %3 = bufferization.to_tensor %m : memref<4xf32> to tensor<4xf32>
              %4 = bufferization.materialize_in_destination %x in %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
              %5 = "foo.bar"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %6 = math.exp %x : tensor<4xf32>
              %7 = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %x) -> tensor<4xf32> {
                %y = "stablehlo.multiply"(%acc, %acc) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
                %z = "stablehlo.add"(%y, %acc) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
                scf.yield %z : tensor<4xf32>
              }
              %8 = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %x) -> tensor<4xf32> {
                %y = func.call @g(%acc) : (tensor<4xf32>) -> tensor<4xf32>
                scf.yield %y : tensor<4xf32>
              }
              return
            }
            "#,
            "
            arith.constant constant pure cost=0
            arith.constant constant pure cost=0
            stablehlo.custom_call impure cost=4
            stablehlo.optimization_barrier impure cost=4
            func.call impure cost=4
            bufferization.to_tensor impure cost=4
            bufferization.materialize_in_destination impure cost=4
            foo.bar impure cost=4
            math.exp pure cost=4
            scf.for pure cost=8
            scf.for impure cost=4
            ",
        );
    }

    #[test]
    fn contractions_cost_two_flops_per_multiply_add() {
        check(
            r#"
            func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<4x2xf32>, %v8: tensor<8xf32>,
                         %v4: tensor<4xf32>, %s: tensor<f32>, %ba: tensor<3x4x8xf32>, %bb: tensor<3x8x2xf32>,
                         %bc: tensor<3x4x2xf32>) {
              %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%c : tensor<4x2xf32>) -> tensor<4x2xf32>
              %1 = linalg.matvec ins(%a, %v8 : tensor<4x8xf32>, tensor<8xf32>) outs(%v4 : tensor<4xf32>) -> tensor<4xf32>
              %2 = linalg.vecmat ins(%v4, %a : tensor<4xf32>, tensor<4x8xf32>) outs(%v8 : tensor<8xf32>) -> tensor<8xf32>
              %3 = linalg.dot ins(%v8, %v8 : tensor<8xf32>, tensor<8xf32>) outs(%s : tensor<f32>) -> tensor<f32>
              %4 = linalg.batch_matmul ins(%ba, %bb : tensor<3x4x8xf32>, tensor<3x8x2xf32>) outs(%bc : tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
              %5 = "stablehlo.dot"(%a, %b) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
              %6 = "stablehlo.dot_general"(%ba, %bb) <{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>}> : (tensor<3x4x8xf32>, tensor<3x8x2xf32>) -> tensor<3x4x2xf32>
              %7 = "stablehlo.dot_general"(%b, %a) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0, 1], rhs_contracting_dimensions = [1, 0]>}> : (tensor<8x2xf32>, tensor<4x8xf32>) -> tensor<f32>
              return
            }
            "#,
            "
            linalg.matmul outs=2..3 pure cost=128
            linalg.matvec outs=2..3 pure cost=64
            linalg.vecmat outs=2..3 pure cost=64
            linalg.dot outs=2..3 pure cost=16
            linalg.batch_matmul outs=2..3 pure cost=384
            stablehlo.dot pure cost=128
            stablehlo.dot_general pure cost=384
            stablehlo.dot_general pure cost=32
            ",
        );
    }

    #[test]
    fn convolutions_cost_by_filter_layout() {
        // Every convolution here: 1·4·4·8 = 128 outputs, a 3·3·3 window per output channel.
        check(
            r#"
            func.func @f(%nhwc: tensor<1x6x6x3xf32>, %hwcf: tensor<3x3x3x8xf32>, %o_nhwc: tensor<1x4x4x8xf32>,
                         %nchw: tensor<1x3x6x6xf32>, %fchw: tensor<8x3x3x3xf32>, %o_nchw: tensor<1x8x4x4xf32>,
                         %window: tensor<3x3xf32>, %o_pool: tensor<1x4x4x3xf32>) {
              %0 = linalg.conv_2d_nhwc_hwcf ins(%nhwc, %hwcf : tensor<1x6x6x3xf32>, tensor<3x3x3x8xf32>) outs(%o_nhwc : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
              %1 = linalg.conv_2d_nchw_fchw ins(%nchw, %fchw : tensor<1x3x6x6xf32>, tensor<8x3x3x3xf32>) outs(%o_nchw : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
              %2 = "stablehlo.convolution"(%nhwc, %hwcf) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64}> : (tensor<1x6x6x3xf32>, tensor<3x3x3x8xf32>) -> tensor<1x4x4x8xf32>
              %3 = "stablehlo.convolution"(%nchw, %fchw) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, feature_group_count = 1 : i64}> : (tensor<1x3x6x6xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x4x4xf32>
              %4 = linalg.pooling_nhwc_max ins(%nhwc, %window : tensor<1x6x6x3xf32>, tensor<3x3xf32>) outs(%o_pool : tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
              return
            }
            "#,
            "
            linalg.conv_2d_nhwc_hwcf outs=2..3 pure cost=6912
            linalg.conv_2d_nchw_fchw outs=2..3 pure cost=6912
            stablehlo.convolution pure cost=6912
            stablehlo.convolution pure cost=6912
            linalg.pooling_nhwc_max outs=2..3 pure cost=864
            ",
        );
    }

    #[test]
    fn region_ops_cost_their_iteration_space_times_body_ops() {
        check(
            r#"
            #id = affine_map<(d0, d1) -> (d0, d1)>
            #row = affine_map<(d0, d1) -> (d0)>
            func.func @f(%a: tensor<4x8xf32>, %r: tensor<4xf32>, %z: tensor<f32>) {
              %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
                  ins(%a : tensor<4x8xf32>) outs(%r : tensor<4xf32>) {
                ^bb0(%in: f32, %out: f32):
                  %m = arith.mulf %in, %in : f32
                  %s = arith.addf %m, %out : f32
                  linalg.yield %s : f32
              } -> tensor<4xf32>
              %1 = linalg.exp ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
              %2 = "stablehlo.reduce"(%a, %z) <{dimensions = array<i64: 1>}> ({
              ^bb0(%p: tensor<f32>, %q: tensor<f32>):
                %t = "stablehlo.add"(%p, %q) : (tensor<f32>, tensor<f32>) -> tensor<f32>
                "stablehlo.return"(%t) : (tensor<f32>) -> ()
              }) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
              return
            }
            "#,
            "
            linalg.generic outs=1..2 pure cost=64
            linalg.exp outs=1..2 pure cost=32
            stablehlo.reduce pure cost=32
            ",
        );
    }

    #[test]
    fn loop_invariant_results_are_the_ones_the_body_returns_unchanged() {
        let context = RematContext::new();
        let module = context
            .parse(
                r#"
                func.func @f(%i: tensor<i32>, %x: tensor<4xf32>, %w: tensor<4xf32>) {
                  %r:3 = "stablehlo.while"(%i, %x, %w) ({
                  ^bb0(%a: tensor<i32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
                    %p = "stablehlo.compare"(%a, %a) <{comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
                    "stablehlo.return"(%p) : (tensor<i1>) -> ()
                  }, {
                  ^bb0(%a: tensor<i32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
                    %n = "stablehlo.add"(%a, %a) : (tensor<i32>, tensor<i32>) -> tensor<i32>
                    %y = "stablehlo.multiply"(%b, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
                    "stablehlo.return"(%n, %y, %c) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> ()
                  }) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>)
                  return
                }
                "#,
                "while.mlir",
            )
            .unwrap();
        let ops = ir::nested_ops(module.as_operation().to_raw());
        let while_op = ops.iter().copied().find(|&op| ir::op_name(op) == "stablehlo.while").unwrap();
        assert_eq!(loop_invariant_results(while_op), vec![2]);
        let add = ops.iter().copied().find(|&op| ir::op_name(op) == "stablehlo.add").unwrap();
        assert_eq!(loop_invariant_results(add), Vec::<usize>::new());
    }
}
