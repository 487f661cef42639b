//! StableHLO → linalg/tensor/arith/math on tensors, in-tree: the ops a JAX training step is
//! made of, with the semantics of the StableHLO specification (openxla/stablehlo,
//! `docs/spec.md`), decomposed as jaxlib's `stablehlo-legalize-to-linalg` decomposes them, so
//! that the same inputs give bit-identical outputs.
//!
//! Each op becomes a short sequence of upstream ops, written as the body of a template
//! function (its arguments are the op's operands, its results the op's), parsed in the op's
//! context and cloned in place of the op. Templates are text so that each decomposition reads
//! as the IR it produces; the types come from the op, so the parser checks every template.
//!
//! | StableHLO | becomes |
//! |---|---|
//! | elementwise arithmetic, math, `compare`, `select`, `convert`, `clamp`, `sign`, `is_finite`, `bitcast_convert` (same width) | one `linalg.generic` (all parallel), the scalar op in its body |
//! | `constant` | `arith.constant` |
//! | `broadcast_in_dim` | `linalg.generic` copying the operand, size-1 dimensions expanded |
//! | `reshape` | `tensor.collapse_shape` to one dimension, then `tensor.expand_shape` |
//! | `transpose` | `linalg.transpose` |
//! | `dot_general` | `linalg.fill` with zero, then a `linalg.generic` over batch, free and contracting dimensions (multiply, add) |
//! | `reduce` (any operands; a body of elementwise ops and constants, translated to scalars) | `linalg.fill` with each init, then one `linalg.reduce` |
//! | `iota` | `linalg.generic` of `linalg.index`, converted |
//! | `slice`, `dynamic_slice` (starts clamped) | `tensor.extract_slice` |
//! | `dynamic_update_slice` (starts clamped) | `tensor.insert_slice` |
//! | `concatenate` | `tensor.insert_slice`s into a `tensor.empty` |
//! | `reverse` | `linalg.generic` reading `size - 1 - d` |
//! | `pad` | `tensor.pad`; with interior padding or negative edges, crop, fill, strided `tensor.insert_slice` |
//! | `gather` | `linalg.generic` over the result, its body computing the operand index (`tensor.extract`) |
//! | `convolution` (feature or batch groups too) | the input padded and dilated, then a `linalg.generic` summing in jaxlib's order for the layout |
//! | `reduce_window` (one operand; any elementwise body) | the input padded with the init, then a `linalg.generic` over result and window |
//! | `sort` (any inputs, a comparator of elementwise ops) | a `linalg.generic` ranking each element in its row (stable), then one placing each element at its rank |
//! | `select_and_scatter` (elementwise bodies) | a `linalg.generic` selecting each window's element (value and offset), then one over the operand gathering the source values that selected each element |
//!
//! | `chlo.square` | a multiply, as jaxlib's `chlo-legalize-to-stablehlo` makes it |
//! | `chlo.erf`, `chlo.erfc`, `chlo.sinh`, `chlo.cosh`, `tan` | the `math` op (libm's function) |
//!
//! Bit-identity with jaxlib's linalg form holds where the decomposition is jaxlib's; it does not
//! for `chlo.erf`, `erfc`, `sinh` and `cosh`, which jaxlib expands into polynomials and
//! exponentials and this legalization hands to libm: the same functions, rounded differently —
//! at most 3, 7, 3 and 2 ulps from JAX on 4,096 normal samples (`tools/export/chlo_tolerance.py`,
//! docs/bench/README.md "CHLO ops against JAX"); `square` and `tan` were bit-identical there.
//!
//! Anything else is left for the leftover lowering (`while`, `scatter`,
//! `optimization_barrier`), which names any op it cannot lower at its location.

use super::{error_at, OpError};
use mlir_sys::*;
use remat_mlir::ir::{self, Op, Val};
use std::collections::HashMap;
use std::fmt::Write;

/// The legalization of every supported StableHLO op nested in `root` (not those in the body of
/// another StableHLO op but `while`: their owner reads them), checked but not applied: each op
/// with its template's body.
pub(crate) fn plan(root: Op) -> Result<Vec<(Op, String)>, OpError> {
    let mut templates = Vec::new();
    for op in ir::nested_ops(root) {
        let name = ir::op_name(op);
        if (name.starts_with("stablehlo.") || name.starts_with("chlo.")) && !inside_body(op) {
            if let Some(body) = template(op)? {
                templates.push((op, body));
            }
        }
    }
    Ok(templates)
}

/// Applies [`plan`]'s templates to `root`; returns how many ops were legalized. First every
/// value of an unsigned or signed integer type becomes signless (functions' types too), and
/// the casts between the two forms that jaxlib's linalg form holds
/// (`builtin.unrealized_conversion_cast`) fold away.
pub(crate) fn apply(root: Op, templates: Vec<(Op, String)>) -> Result<usize, OpError> {
    make_signless(root);
    let count = templates.len();
    for (op, body) in templates {
        inline(op, &body)?;
    }
    Ok(count)
}

/// Retypes every value nested in `root` with [`signless_type_text`]; folds the
/// `builtin.unrealized_conversion_cast`s that become casts of a type to itself.
fn make_signless(root: Op) {
    let context = unsafe { mlirOperationGetContext(root) };
    let retype = |v: Val| {
        let text = ir::type_text(ir::value_type(v));
        let new = signless_type_text(&text);
        if new != text {
            let t = unsafe { mlirTypeParseGet(context, ir::string_ref(&new)) };
            if !t.ptr.is_null() {
                unsafe { mlirValueSetType(v, t) };
            }
        }
    };
    let mut casts = Vec::new();
    for op in std::iter::once(root).chain(ir::nested_ops(root)) {
        ir::results(op).into_iter().for_each(retype);
        for region in ir::regions(op) {
            for block in ir::blocks(region) {
                ir::block_arguments(block).into_iter().for_each(retype);
            }
        }
        if let Some(attr) = ir::attribute(op, "function_type") {
            let text = ir::attribute_text(attr);
            let new = signless_type_text(&text);
            if new != text {
                let t = unsafe { mlirTypeParseGet(context, ir::string_ref(&new)) };
                if !t.ptr.is_null() {
                    unsafe { mlirOperationSetAttributeByName(op, ir::string_ref("function_type"), mlirTypeAttrGet(t)) };
                }
            }
        }
        if ir::op_name(op) == "builtin.unrealized_conversion_cast" {
            casts.push(op);
        }
    }
    for cast in casts {
        if let ([from], [to]) = (&ir::operands(cast)[..], &ir::results(cast)[..]) {
            if ir::types_equal(ir::value_type(*from), ir::value_type(*to)) {
                ir::replace_all_uses(*to, *from);
                ir::erase(cast);
            }
        }
    }
}

/// Whether `op` is in the body of a StableHLO op other than `while` (`reduce`,
/// `reduce_window`, `scatter`, `sort`, …: scalar code on 0-d tensors that its owner
/// translates, and erases with it).
pub(crate) fn inside_body(op: Op) -> bool {
    let parent = unsafe { mlirOperationGetParentOperation(op) };
    !parent.ptr.is_null() && {
        let name = ir::op_name(parent);
        name.starts_with("stablehlo.") && name != "stablehlo.while"
    }
}

/// A ranked tensor type, read from its text (`tensor<4x8xf32>`, `tensor<f32>`).
#[derive(Clone, Debug, PartialEq)]
struct Tensor {
    shape: Vec<i64>,
    element: String,
}

impl Tensor {
    fn of(op: Op, v: Val) -> Result<Tensor, OpError> {
        let text = ir::type_text(ir::value_type(v));
        Tensor::parse(&text).ok_or_else(|| error_at(op, format!("expected a statically shaped tensor, found {text}")))
    }
    fn parse(text: &str) -> Option<Tensor> {
        let inner = text.strip_prefix("tensor<")?.strip_suffix('>')?;
        let mut parts: Vec<&str> = inner.split('x').collect();
        let element = signless(parts.pop()?);
        if element.contains(['<', ',', '?']) {
            return None;
        }
        let shape = parts.iter().map(|d| d.parse::<i64>().ok().filter(|&d| d >= 0)).collect::<Option<Vec<_>>>()?;
        Some(Tensor { shape, element })
    }
    fn text(&self) -> String {
        let mut s = String::from("tensor<");
        for d in &self.shape {
            let _ = write!(s, "{d}x");
        }
        s.push_str(&self.element);
        s.push('>');
        s
    }
    fn rank(&self) -> usize {
        self.shape.len()
    }
    fn is_float(&self) -> bool {
        is_float(&self.element)
    }
}

/// An integer element type without its signedness (`ui32`, `si32` → `i32`): the legalized
/// program is signless, as upstream arith wants; the ops whose meaning depends on the sign read
/// it from the original types ([`scalar_element`]) before [`apply`] retypes the values.
fn signless(element: &str) -> String {
    match element.strip_prefix("ui").or_else(|| element.strip_prefix("si")) {
        Some(bits) if bits.parse::<u32>().is_ok() => format!("i{bits}"),
        _ => element.to_string(),
    }
}

/// Whether an element type (as written, before [`signless`]) is an unsigned integer.
fn is_unsigned(element: &str) -> bool {
    element.strip_prefix("ui").is_some_and(|w| w.parse::<u32>().is_ok())
}

/// The element type of `v` as written (`ui32` stays `ui32`), for [`scalar`].
fn scalar_element(v: Val) -> String {
    let text = ir::type_text(ir::value_type(v));
    let inner = text.strip_prefix("tensor<").and_then(|t| t.strip_suffix('>')).unwrap_or(&text);
    inner.rsplit('x').next().unwrap_or(inner).to_string()
}

/// `text` (a type) with every unsigned or signed integer element type made signless.
fn signless_type_text(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(['u', 's']) {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let boundary = out.ends_with(['x', '<', '(', ' ', ',']) || out.is_empty();
        let bits: String = from[2..].chars().take_while(char::is_ascii_digit).collect();
        if boundary && from[1..].starts_with('i') && !bits.is_empty() {
            out.push('i');
            out.push_str(&bits);
            rest = &from[2 + bits.len()..];
        } else {
            out.push_str(&from[..1]);
            rest = &from[1..];
        }
    }
    out.push_str(rest);
    out
}

fn is_float(element: &str) -> bool {
    matches!(element, "f16" | "bf16" | "f32" | "f64")
}

/// Signless integers (`i1` is the boolean).
fn is_integer(element: &str) -> bool {
    element.strip_prefix('i').is_some_and(|w| w.parse::<u32>().is_ok())
}

fn width(element: &str) -> u32 {
    element.trim_start_matches(|c: char| c.is_ascii_alphabetic()).parse().unwrap_or(0)
}

/// `(d0, d1, …)`.
fn dims(rank: usize) -> String {
    (0..rank).map(|d| format!("d{d}")).collect::<Vec<_>>().join(", ")
}

fn identity_map(rank: usize) -> String {
    format!("affine_map<({}) -> ({})>", dims(rank), dims(rank))
}

fn parallel(rank: usize) -> String {
    vec!["\"parallel\""; rank].join(", ")
}

/// A `dense<…>`/`array<…>` integer list attribute of `op`, as numbers.
fn int_list(op: Op, name: &str) -> Result<Vec<i64>, OpError> {
    let attr = ir::attribute(op, name).ok_or_else(|| error_at(op, format!("missing attribute '{name}'")))?;
    if let Some(values) = ir::dense_i64_array(attr) {
        return Ok(values);
    }
    Err(error_at(op, format!("attribute '{name}' must be an array<i64: …>, found {}", ir::attribute_text(attr))))
}

/// The numbers after `key = [` in a StableHLO attribute's text (`#stablehlo.dot<…>`).
fn bracket_field(text: &str, key: &str) -> Vec<i64> {
    let Some(at) = text.find(&format!("{key} = [")) else { return Vec::new() };
    let rest = &text[at + key.len() + 4..];
    let end = rest.find(']').unwrap_or(0);
    rest[..end].split(',').filter_map(|s| s.trim().parse().ok()).collect()
}

/// The word in a `#stablehlo<kind WORD>` attribute's text.
fn enum_word(op: Op, name: &str) -> Option<String> {
    let text = ir::attribute_text(ir::attribute(op, name)?);
    let inner = text.strip_suffix('>')?;
    inner.rsplit(' ').next().map(str::to_string)
}

/// The CHLO ops JAX leaves in StableHLO exports (names without the dialect) that this
/// legalization handles: `square` as the multiply jaxlib's `chlo-legalize-to-stablehlo` makes
/// of it (bit-identical); `erf`, `erfc`, `sinh`, `cosh`, `tan` as the `math` ops (libm's, while
/// jaxlib expands some into polynomials and exponentials: the same function, rounded
/// differently, a few ulps apart; see the module's documentation).
pub const LEGALIZED_CHLO: &[&str] = &["square", "erf", "erfc", "sinh", "cosh", "tan"];

/// The StableHLO ops (names without the dialect) this legalization handles.
pub const LEGALIZED: &[&str] = &[
    "constant",
    "broadcast_in_dim",
    "reshape",
    "transpose",
    "dot_general",
    "reduce",
    "iota",
    "convert",
    "slice",
    "dynamic_slice",
    "dynamic_update_slice",
    "concatenate",
    "reverse",
    "pad",
    "gather",
    "convolution",
    "reduce_window",
    "select_and_scatter",
    "sort",
    "add",
    "subtract",
    "multiply",
    "divide",
    "remainder",
    "maximum",
    "minimum",
    "power",
    "atan2",
    "and",
    "or",
    "xor",
    "not",
    "negate",
    "abs",
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "tanh",
    "sqrt",
    "rsqrt",
    "cbrt",
    "floor",
    "ceil",
    "sine",
    "cosine",
    "tan",
    "round_nearest_even",
    "round_nearest_afz",
    "logistic",
    "popcnt",
    "shift_left",
    "shift_right_logical",
    "shift_right_arithmetic",
    "select",
    "compare",
    "clamp",
    "sign",
    "is_finite",
    "bitcast_convert",
];

/// The template's body for `op`, or `None` when `op` is not one this legalization handles
/// (the leftover lowering decides). Operands are `%a0, %a1, …`; the body ends in `return`.
fn template(op: Op) -> Result<Option<String>, OpError> {
    let name = ir::op_name(op);
    let short = match name.strip_prefix("chlo.") {
        Some(chlo) if LEGALIZED_CHLO.contains(&chlo) => chlo,
        Some(_) => return Ok(None),
        None => name.trim_start_matches("stablehlo."),
    };
    if !LEGALIZED.contains(&short) && !LEGALIZED_CHLO.contains(&short) {
        return Ok(None);
    }
    let operands: Vec<Tensor> = ir::operands(op).into_iter().map(|v| Tensor::of(op, v)).collect::<Result<_, _>>()?;
    let results: Vec<Tensor> = ir::results(op).into_iter().map(|v| Tensor::of(op, v)).collect::<Result<_, _>>()?;
    let unsupported = |why: &str| error_at(op, format!("'{name}' {why}"));
    let body = match short {
        "constant" => {
            let value = ir::attribute(op, "value").ok_or_else(|| unsupported("has no value"))?;
            let result = &results[0];
            // The attribute's text carries its type (`dense<…> : tensor<…>`), made signless.
            let text = ir::attribute_text(value);
            let literal = text.rsplit_once(" : ").map_or(text.as_str(), |(literal, _)| literal);
            format!("%r = arith.constant {literal} : {t}\nreturn %r : {t}", t = result.text())
        }
        "broadcast_in_dim" => broadcast_in_dim(op, &operands[0], &results[0])?,
        "reshape" => reshape(&operands[0], &results[0]),
        "transpose" => {
            let permutation = int_list(op, "permutation")?;
            let r = &results[0];
            let list = permutation.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
            format!(
                "%e = tensor.empty() : {t}\n%r = linalg.transpose ins(%a0 : {o}) outs(%e : {t}) permutation = [{list}]\nreturn %r : {t}",
                t = r.text(),
                o = operands[0].text()
            )
        }
        "dot_general" => dot_general(op, &operands, &results[0])?,
        "slice" => {
            let (start, strides) = (int_list(op, "start_indices")?, int_list(op, "strides")?);
            let (o, r) = (&operands[0], &results[0]);
            format!(
                "%r = tensor.extract_slice %a0[{}] [{}] [{}] : {} to {}\nreturn %r : {}",
                join(&start),
                join(&r.shape),
                join(&strides),
                o.text(),
                r.text(),
                r.text()
            )
        }
        "dynamic_slice" => {
            let sizes = int_list(op, "slice_sizes")?;
            let (o, r) = (&operands[0], &results[0]);
            let (clamp, offsets) = clamped_starts(op, &operands[1..], &o.shape, &sizes)?;
            format!(
                "{clamp}%r = tensor.extract_slice %a0[{offsets}] [{}] [{}] : {} to {}\nreturn %r : {}",
                join(&sizes),
                join(&vec![1; sizes.len()]),
                o.text(),
                r.text(),
                r.text()
            )
        }
        "dynamic_update_slice" => {
            let (o, u) = (&operands[0], &operands[1]);
            let (clamp, offsets) = clamped_starts(op, &operands[2..], &o.shape, &u.shape)?;
            format!(
                "{clamp}%r = tensor.insert_slice %a1 into %a0[{offsets}] [{}] [{}] : {} into {}\nreturn %r : {}",
                join(&u.shape),
                join(&vec![1; u.rank()]),
                u.text(),
                o.text(),
                o.text()
            )
        }
        "concatenate" => {
            let dimension = ir::attribute(op, "dimension")
                .and_then(ir::integer_attribute_value)
                .and_then(|d| usize::try_from(d).ok())
                .filter(|&d| d < results[0].rank())
                .ok_or_else(|| unsupported("has no valid dimension"))?;
            let r = &results[0];
            let mut body = format!("%t0 = tensor.empty() : {}\n", r.text());
            let mut at = 0;
            for (i, o) in operands.iter().enumerate() {
                let mut offsets = vec![0; r.rank()];
                offsets[dimension] = at;
                let _ = writeln!(
                    body,
                    "%t{} = tensor.insert_slice %a{i} into %t{i}[{}] [{}] [{}] : {} into {}",
                    i + 1,
                    join(&offsets),
                    join(&o.shape),
                    join(&vec![1; o.rank()]),
                    o.text(),
                    r.text()
                );
                at += o.shape[dimension];
            }
            let _ = write!(body, "return %t{} : {}", operands.len(), r.text());
            body
        }
        "reverse" => {
            let reversed = int_list(op, "dimensions")?;
            let r = &results[0];
            let reads: Vec<String> = (0..r.rank())
                .map(|d| {
                    if reversed.contains(&(d as i64)) {
                        format!("{} - d{d}", r.shape[d] - 1)
                    } else {
                        format!("d{d}")
                    }
                })
                .collect();
            copy_with_map(&operands[0], r, &reads.join(", "))
        }
        "pad" => pad(op, &operands, &results[0])?,
        "gather" => gather(op, &operands, &results[0])?,
        "convolution" => convolution(op, &operands, &results[0])?,
        "reduce_window" => reduce_window(op, &operands, &results)?,
        "select_and_scatter" => select_and_scatter(op, &operands, &results[0])?,
        "sort" => sort(op, &operands, &results)?,
        "reduce" => return reduce(op, &operands, &results).map(Some),
        "iota" => {
            let dimension = ir::attribute(op, "iota_dimension")
                .and_then(ir::integer_attribute_value)
                .ok_or_else(|| unsupported("has no iota_dimension"))?;
            let r = &results[0];
            let convert = if r.is_float() {
                format!("%c = arith.index_cast %i : index to i64\n%v = arith.sitofp %c : i64 to {}", r.element)
            } else if is_integer(&r.element) {
                format!("%v = arith.index_cast %i : index to {}", r.element)
            } else {
                return Err(unsupported(&format!("of element type {} is not supported", r.element)));
            };
            format!(
                "%e = tensor.empty() : {t}\n%r = linalg.generic {{indexing_maps = [{map}], iterator_types = [{it}]}} outs(%e : {t}) {{\n^bb0(%o: {el}):\n%i = linalg.index {dimension} : index\n{convert}\nlinalg.yield %v : {el}\n}} -> {t}\nreturn %r : {t}",
                t = r.text(),
                map = identity_map(r.rank()),
                it = parallel(r.rank()),
                el = r.element
            )
        }
        "convert" if operands[0] == results[0] => format!("return %a0 : {}", results[0].text()),
        _ => match elementwise(op, short, &operands, &results)? {
            Some(body) => body,
            None => return Ok(None),
        },
    };
    Ok(Some(body))
}

/// The scalar computation of an elementwise op on `%x0, %x1, …` (element types `inputs`)
/// into `%v`, or `None` when `short` is not an elementwise op this legalization knows.
fn scalar(op: Op, short: &str, inputs: &[String], output: &str) -> Result<Option<String>, OpError> {
    let written = inputs.first().cloned().unwrap_or_default();
    let unsigned = is_unsigned(&written);
    let raw_output = output;
    let signless_output = signless(output);
    let output = signless_output.as_str();
    let t = signless(&written);
    let float = is_float(&t);
    let int = is_integer(&t);
    let unsupported =
        || error_at(op, format!("'{}' on {written} is not supported by the legalization", ir::op_name(op)));
    // Integer ops whose meaning depends on the sign.
    let (max, min) = if unsigned { ("arith.maxui", "arith.minui") } else { ("arith.maxsi", "arith.minsi") };
    let binary = |f: &str, i: &str| -> Result<String, OpError> {
        let name = if float {
            f
        } else if int {
            i
        } else {
            ""
        };
        if name.is_empty() {
            return Err(unsupported());
        }
        Ok(format!("%v = {name} %x0, %x1 : {t}"))
    };
    let unary_float = |f: &str| -> Result<String, OpError> {
        if !float {
            return Err(unsupported());
        }
        Ok(format!("%v = {f} %x0 : {t}"))
    };
    let text = match short {
        "add" => binary("arith.addf", "arith.addi")?,
        "subtract" => binary("arith.subf", "arith.subi")?,
        "multiply" => binary("arith.mulf", "arith.muli")?,
        "divide" if float => binary("arith.divf", "")?,
        "remainder" if float => binary("arith.remf", "")?,
        "divide" | "remainder" if int && t != "i1" => integer_division(short == "divide", unsigned, &t),
        "maximum" => binary("arith.maximumf", max)?,
        "minimum" => binary("arith.minimumf", min)?,
        "shift_left" | "shift_right_logical" | "shift_right_arithmetic" if int && t != "i1" => {
            // The specification: a shift by the width or more gives 0 (left, logical) or the
            // sign in every bit (arithmetic); LLVM's shifts are poison there.
            let bits = width(&t);
            match short {
                "shift_right_arithmetic" => format!(
                    "%top = arith.constant {} : {t}\n%s = arith.minui %x1, %top : {t}\n%v = arith.shrsi %x0, %s : {t}",
                    bits - 1
                ),
                _ => format!(
                    "%w = arith.constant {bits} : {t}\n%zero = arith.constant 0 : {t}\n%big = arith.cmpi uge, %x1, %w : {t}\n%sh = {} %x0, %x1 : {t}\n%v = arith.select %big, %zero, %sh : {t}",
                    if short == "shift_left" { "arith.shli" } else { "arith.shrui" }
                ),
            }
        }
        "power" if float => binary("math.powf", "")?,
        "atan2" if float => binary("math.atan2", "")?,
        "and" if int => binary("", "arith.andi")?,
        "or" if int => binary("", "arith.ori")?,
        "xor" if int => binary("", "arith.xori")?,
        "not" if int => {
            let ones = if t == "i1" { "true".to_string() } else { format!("-1 : {t}") };
            format!("%m = arith.constant {ones}\n%v = arith.xori %x0, %m : {t}")
        }
        "negate" if float => unary_float("arith.negf")?,
        "negate" if int => format!("%z = arith.constant 0 : {t}\n%v = arith.subi %z, %x0 : {t}"),
        "abs" if float => unary_float("math.absf")?,
        "abs" if int && !unsigned => format!("%v = math.absi %x0 : {t}"),
        "exponential" => unary_float("math.exp")?,
        "exponential_minus_one" => unary_float("math.expm1")?,
        "log" => unary_float("math.log")?,
        "log_plus_one" => unary_float("math.log1p")?,
        "tanh" => unary_float("math.tanh")?,
        "sqrt" => unary_float("math.sqrt")?,
        "rsqrt" => unary_float("math.rsqrt")?,
        "cbrt" => unary_float("math.cbrt")?,
        "floor" => unary_float("math.floor")?,
        "ceil" => unary_float("math.ceil")?,
        "sine" => unary_float("math.sin")?,
        "cosine" => unary_float("math.cos")?,
        "round_nearest_even" => unary_float("math.roundeven")?,
        "round_nearest_afz" => unary_float("math.round")?,
        "tan" => unary_float("math.tan")?,
        "erf" => unary_float("math.erf")?,
        "erfc" => unary_float("math.erfc")?,
        "sinh" => unary_float("math.sinh")?,
        "cosh" => unary_float("math.cosh")?,
        "square" if float => format!("%v = arith.mulf %x0, %x0 : {t}"),
        "square" if int => format!("%v = arith.muli %x0, %x0 : {t}"),
        "logistic" if float => format!(
            "%n = arith.negf %x0 : {t}\n%e = math.exp %n : {t}\n%one = arith.constant 1.0 : {t}\n%d = arith.addf %one, %e : {t}\n%v = arith.divf %one, %d : {t}"
        ),
        "popcnt" if int => format!("%v = math.ctpop %x0 : {t}"),
        // clamp(min, operand, max) = min(max(operand, min), max).
        "clamp" => {
            let (lo, hi) = if float { ("arith.maximumf", "arith.minimumf") } else { (max, min) };
            if !float && !int {
                return Err(unsupported());
            }
            format!("%g = {lo} %x1, %x0 : {t}\n%v = {hi} %g, %x2 : {t}")
        }
        // sign: -1 or 1 by the sign bit, but ±0 and NaN are themselves.
        "sign" if float => format!(
            "%zero = arith.constant 0.0 : {t}\n%one = arith.constant 1.0 : {t}\n%z = arith.cmpf oeq, %x0, %zero : {t}\n%n = arith.cmpf uno, %x0, %x0 : {t}\n%keep = arith.ori %z, %n : i1\n%s = math.copysign %one, %x0 : {t}\n%v = arith.select %keep, %x0, %s : {t}"
        ),
        "is_finite" if float => format!("%v = math.isfinite %x0 : {t}"),
        "bitcast_convert" if width(&t) == width(output) && t != output => {
            format!("%v = arith.bitcast %x0 : {t} to {output}")
        }
        "select" => {
            let value = signless(inputs.get(1).map_or("", String::as_str));
            format!("%v = arith.select %x0, %x1, %x2 : {value}")
        }
        "compare" => {
            let direction = enum_word(op, "comparison_direction").unwrap_or_default();
            let kind = enum_word(op, "compare_type").unwrap_or_else(|| {
                if float {
                    "FLOAT".into()
                } else if t == "i1" || unsigned {
                    "UNSIGNED".into()
                } else {
                    "SIGNED".into()
                }
            });
            if kind == "TOTALORDER" && float {
                // IEEE 754's total order (-NaN < -inf < … < -0 < +0 < … < +inf < +NaN): the
                // bits as a signed integer, the magnitude bits flipped when the sign is set.
                let bits = width(&t);
                let i = format!("i{bits}");
                let predicate =
                    ["eq", "ne", "slt", "sle", "sgt", "sge"][direction_index(&direction).ok_or_else(unsupported)?];
                return Ok(Some(format!(
                    "%ai = arith.bitcast %x0 : {t} to {i}\n%bi = arith.bitcast %x1 : {t} to {i}\n%zero = arith.constant 0 : {i}\n%mask = arith.constant {} : {i}\n%an = arith.cmpi slt, %ai, %zero : {i}\n%bn = arith.cmpi slt, %bi, %zero : {i}\n%af = arith.xori %ai, %mask : {i}\n%bf = arith.xori %bi, %mask : {i}\n%ak = arith.select %an, %af, %ai : {i}\n%bk = arith.select %bn, %bf, %bi : {i}\n%v = arith.cmpi {predicate}, %ak, %bk : {i}",
                    (1i128 << (bits - 1)) - 1
                )));
            }
            let predicate = match (kind.as_str(), direction.as_str()) {
                ("FLOAT", d) => ["oeq", "une", "olt", "ole", "ogt", "oge"][direction_index(d).ok_or_else(unsupported)?],
                ("SIGNED", d) => ["eq", "ne", "slt", "sle", "sgt", "sge"][direction_index(d).ok_or_else(unsupported)?],
                ("UNSIGNED", d) => ["eq", "ne", "ult", "ule", "ugt", "uge"][direction_index(d).ok_or_else(unsupported)?],
                _ => return Err(unsupported()),
            };
            let cmp = if float { "arith.cmpf" } else if int { "arith.cmpi" } else { return Err(unsupported()) };
            format!("%v = {cmp} {predicate}, %x0, %x1 : {t}")
        }
        "convert" => convert(&written, raw_output).ok_or_else(|| {
            error_at(op, format!("'stablehlo.convert' from {written} to {raw_output} is not supported by the legalization"))
        })?,
        // A known op on types it has no decomposition for (an unsigned `abs`, …).
        _ if LEGALIZED.contains(&short) || LEGALIZED_CHLO.contains(&short) => return Err(unsupported()),
        _ => return Ok(None),
    };
    Ok(Some(text))
}

/// Integer `divide` (quotient truncated toward zero) or `remainder` (the sign of the dividend)
/// of `%x0` by `%x1`, total as XLA makes it: by zero, the quotient has every bit set and the
/// remainder is the dividend; the one signed overflow, `MIN / -1`, gives `MIN` remainder 0.
/// LLVM's division is undefined there, so the divisor is replaced by 1 first.
fn integer_division(divide: bool, unsigned: bool, t: &str) -> String {
    let mut text = format!(
        "%zero = arith.constant 0 : {t}\n%one = arith.constant 1 : {t}\n%by_zero = arith.cmpi eq, %x1, %zero : {t}\n"
    );
    let bad = if unsigned {
        "%by_zero".to_string()
    } else {
        let _ = write!(
            text,
            "%min = arith.constant {} : {t}\n%minus_one = arith.constant -1 : {t}\n%is_min = arith.cmpi eq, %x0, %min : {t}\n%is_minus_one = arith.cmpi eq, %x1, %minus_one : {t}\n%overflow = arith.andi %is_min, %is_minus_one : i1\n%bad = arith.ori %by_zero, %overflow : i1\n",
            -(1i128 << (width(t) - 1))
        );
        "%bad".to_string()
    };
    let (div, rem) = if unsigned { ("arith.divui", "arith.remui") } else { ("arith.divsi", "arith.remsi") };
    let _ = writeln!(text, "%d = arith.select {bad}, %one, %x1 : {t}");
    if divide {
        let _ = write!(
            text,
            "%q = {div} %x0, %d : {t}\n%all = arith.constant -1 : {t}\n%fix = arith.select %by_zero, %all, %x0 : {t}\n%v = arith.select {bad}, %fix, %q : {t}"
        );
    } else {
        let fix = if unsigned { "%x0".to_string() } else { "%fix".to_string() };
        let _ = writeln!(text, "%q = {rem} %x0, %d : {t}");
        if !unsigned {
            let _ = writeln!(text, "%fix = arith.select %by_zero, %x0, %zero : {t}");
        }
        let _ = write!(text, "%v = arith.select {bad}, {fix}, %q : {t}");
    }
    text
}

fn direction_index(direction: &str) -> Option<usize> {
    ["EQ", "NE", "LT", "LE", "GT", "GE"].iter().position(|&d| d == direction)
}

/// `%x0` of element type `from` converted to `to` as `%v` (StableHLO `convert`: floats round
/// to nearest, floats to integers truncate toward zero, booleans are 0 and 1, anything to a
/// boolean is `x != 0`).
fn convert(from: &str, to: &str) -> Option<String> {
    let (from_unsigned, to_unsigned) = (is_unsigned(from), is_unsigned(to));
    let (from, to) = (signless(from), signless(to));
    let (from, to) = (from.as_str(), to.as_str());
    let (wf, wt) = (width(from), width(to));
    Some(if to == "i1" {
        if from == "i1" {
            return None;
        }
        if is_float(from) {
            format!("%z = arith.constant 0.0 : {from}\n%v = arith.cmpf une, %x0, %z : {from}")
        } else {
            format!("%z = arith.constant 0 : {from}\n%v = arith.cmpi ne, %x0, %z : {from}")
        }
    } else if is_float(from) && is_float(to) {
        // f16 and bf16 have one width and neither holds the other: not a plain extension.
        if wf == wt {
            return None;
        }
        let op = if wt > wf { "arith.extf" } else { "arith.truncf" };
        format!("%v = {op} %x0 : {from} to {to}")
    } else if is_integer(from) && is_float(to) {
        let op = if from == "i1" || from_unsigned { "arith.uitofp" } else { "arith.sitofp" };
        format!("%v = {op} %x0 : {from} to {to}")
    } else if is_float(from) && is_integer(to) {
        let op = if to_unsigned { "arith.fptoui" } else { "arith.fptosi" };
        format!("%v = {op} %x0 : {from} to {to}")
    } else if is_integer(from) && is_integer(to) {
        if wt == wf {
            // Only the sign changes: the same bits.
            return Some(format!("%z = arith.constant 0 : {to}\n%v = arith.ori %x0, %z : {to}"));
        }
        let op = if wt > wf {
            if from == "i1" || from_unsigned {
                "arith.extui"
            } else {
                "arith.extsi"
            }
        } else {
            "arith.trunci"
        };
        format!("%v = {op} %x0 : {from} to {to}")
    } else {
        return None;
    })
}

/// An elementwise op as one all-parallel `linalg.generic`. StableHLO's elementwise operands
/// have the result's shape, except `select`'s predicate, which may be a 0-d tensor.
fn elementwise(op: Op, short: &str, operands: &[Tensor], results: &[Tensor]) -> Result<Option<String>, OpError> {
    let [result] = results else { return Ok(None) };
    let inputs: Vec<String> = ir::operands(op).into_iter().map(scalar_element).collect();
    let output = ir::results(op).first().map(|&r| scalar_element(r)).unwrap_or_default();
    let Some(scalar) = scalar(op, short, &inputs, &output)? else { return Ok(None) };
    let rank = result.rank();
    let mut maps = Vec::new();
    for operand in operands {
        if operand.shape == result.shape {
            maps.push(identity_map(rank));
        } else if operand.rank() == 0 {
            maps.push(format!("affine_map<({}) -> ()>", dims(rank)));
        } else {
            return Err(error_at(op, format!("operand {} does not have the result's shape", operand.text())));
        }
    }
    maps.push(identity_map(rank));
    let ins: Vec<String> = (0..operands.len()).map(|i| format!("%a{i}")).collect();
    let in_types: Vec<String> = operands.iter().map(Tensor::text).collect();
    let args: Vec<String> = operands.iter().enumerate().map(|(i, t)| format!("%x{i}: {}", t.element)).collect();
    let t = result.text();
    Ok(Some(format!(
        "%e = tensor.empty() : {t}\n%r = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{it}]}} ins({ins} : {in_types}) outs(%e : {t}) {{\n^bb0({args}, %out: {el}):\n{scalar}\nlinalg.yield %v : {el}\n}} -> {t}\nreturn %r : {t}",
        maps = maps.join(", "),
        it = parallel(rank),
        ins = ins.join(", "),
        in_types = in_types.join(", "),
        args = args.join(", "),
        el = result.element,
    )))
}

/// `broadcast_in_dim`: operand dimension `i` is result dimension `broadcast_dimensions[i]`;
/// a size-1 operand dimension of a larger result dimension is read at 0 (spec: "broadcast").
fn broadcast_in_dim(op: Op, operand: &Tensor, result: &Tensor) -> Result<String, OpError> {
    let dimensions = int_list(op, "broadcast_dimensions")?;
    if dimensions.len() != operand.rank() {
        return Err(error_at(op, "broadcast_dimensions must name one result dimension per operand dimension"));
    }
    let mut reads = Vec::new();
    for (i, &d) in dimensions.iter().enumerate() {
        let d = usize::try_from(d).ok().filter(|&d| d < result.rank()).ok_or_else(|| {
            error_at(op, format!("broadcast dimension {d} is out of the result's rank {}", result.rank()))
        })?;
        reads.push(if operand.shape[i] == 1 && result.shape[d] != 1 { "0".to_string() } else { format!("d{d}") });
    }
    let rank = result.rank();
    let t = result.text();
    Ok(format!(
        "%e = tensor.empty() : {t}\n%r = linalg.generic {{indexing_maps = [affine_map<({all}) -> ({reads})>, {out}], iterator_types = [{it}]}} ins(%a0 : {o}) outs(%e : {t}) {{\n^bb0(%x: {el}, %y: {el}):\nlinalg.yield %x : {el}\n}} -> {t}\nreturn %r : {t}",
        all = dims(rank),
        reads = reads.join(", "),
        out = identity_map(rank),
        it = parallel(rank),
        o = operand.text(),
        el = result.element,
    ))
}

/// `reshape` (row-major, spec): collapse to one dimension, expand to the result's shape. Both
/// are views after bufferization.
fn reshape(operand: &Tensor, result: &Tensor) -> String {
    let (o, r) = (operand.text(), result.text());
    let group = |rank: usize| format!("[[{}]]", (0..rank).map(|d| d.to_string()).collect::<Vec<_>>().join(", "));
    let shape = result.shape.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    if operand.shape == result.shape {
        return format!("return %a0 : {r}");
    }
    // A 0-d tensor and one of only 1s: no reassociation groups at all.
    if operand.rank() == 0 {
        return format!("%r = tensor.expand_shape %a0 [] output_shape [{shape}] : {o} into {r}\nreturn %r : {r}");
    }
    if result.rank() == 0 {
        return format!("%r = tensor.collapse_shape %a0 [] : {o} into {r}\nreturn %r : {r}");
    }
    let elements: i64 = operand.shape.iter().product();
    let flat = Tensor { shape: vec![elements], element: operand.element.clone() }.text();
    let mut body = String::new();
    let collapsed = if operand.rank() == 1 {
        "%a0"
    } else {
        let _ = writeln!(body, "%c = tensor.collapse_shape %a0 {} : {o} into {flat}", group(operand.rank()));
        "%c"
    };
    if result.rank() == 1 {
        let _ = write!(body, "return {collapsed} : {r}");
    } else {
        let _ = write!(
            body,
            "%r = tensor.expand_shape {collapsed} {} output_shape [{shape}] : {flat} into {r}\nreturn %r : {r}",
            group(result.rank())
        );
    }
    body
}

/// A `linalg.generic` folding two inputs into `result`, filled with the scalar `%{init}` first:
/// the common shape of `dot_general`, `convolution` and `reduce_window`. `reads` are each
/// input's affine expressions of `d0…d{space-1}`; `combine` computes `yielded` from `%x`, `%y`
/// and `%acc`.
struct Fold<'a> {
    init: &'a str,
    space: usize,
    inputs: [(&'a str, String, Vec<String>); 2],
    out: Vec<String>,
    reduction: Vec<usize>,
    combine: &'a str,
    /// The value `combine` computes.
    yielded: &'a str,
}

impl Fold<'_> {
    fn text(&self, result: &Tensor) -> String {
        let (t, el) = (result.text(), &result.element);
        let all = dims(self.space);
        let iterators: Vec<&str> = (0..self.space)
            .map(|d| if self.reduction.contains(&d) { "\"reduction\"" } else { "\"parallel\"" })
            .collect();
        let [(a, at, ar), (b, bt, br)] = &self.inputs;
        format!(
            "%e = tensor.empty() : {t}\n%f = linalg.fill ins(%{init} : {el}) outs(%e : {t}) -> {t}\n%r = linalg.generic {{indexing_maps = [affine_map<({all}) -> ({})>, affine_map<({all}) -> ({})>, affine_map<({all}) -> ({})>], iterator_types = [{}]}} ins({a}, {b} : {at}, {bt}) outs(%f : {t}) {{\n^bb0(%x: {el}, %y: {el}, %acc: {el}):\n{}\nlinalg.yield {} : {el}\n}} -> {t}\nreturn %r : {t}",
            ar.join(", "),
            br.join(", "),
            self.out.join(", "),
            iterators.join(", "),
            self.combine,
            self.yielded,
            init = self.init,
        )
    }
}

/// Multiply, then add to the accumulator (`linalg.matmul`'s body).
const MULTIPLY_ADD: &str = "%m = arith.mulf %x, %y : ELEMENT\n%v = arith.addf %acc, %m : ELEMENT";

/// `dot_general` (spec): result dimensions are the batch dimensions, then the lhs's free
/// dimensions, then the rhs's, each in order; elements are sums over the contracting
/// dimensions of products, accumulated from zero in index order (as `linalg.matmul`).
fn dot_general(op: Op, operands: &[Tensor], result: &Tensor) -> Result<String, OpError> {
    let numbers = ir::attribute(op, "dot_dimension_numbers")
        .map(ir::attribute_text)
        .ok_or_else(|| error_at(op, "'stablehlo.dot_general' has no dot_dimension_numbers"))?;
    let (lhs, rhs) = (&operands[0], &operands[1]);
    let lb = bracket_field(&numbers, "lhs_batching_dimensions");
    let rb = bracket_field(&numbers, "rhs_batching_dimensions");
    let lc = bracket_field(&numbers, "lhs_contracting_dimensions");
    let rc = bracket_field(&numbers, "rhs_contracting_dimensions");
    if lb.len() != rb.len() || lc.len() != rc.len() {
        return Err(error_at(op, "dot_dimension_numbers pair unequal numbers of dimensions"));
    }
    if !result.is_float() || lhs.element != result.element || rhs.element != result.element {
        return Err(error_at(op, "'stablehlo.dot_general' is supported on floats of the result's type only"));
    }
    let free = |t: &Tensor, batch: &[i64], contracting: &[i64]| -> Vec<usize> {
        (0..t.rank()).filter(|&d| !batch.contains(&(d as i64)) && !contracting.contains(&(d as i64))).collect()
    };
    let (lf, rf) = (free(lhs, &lb, &lc), free(rhs, &rb, &rc));
    // Iteration space: batch, lhs free, rhs free (the result's dimensions), then contracting.
    let n_out = lb.len() + lf.len() + rf.len();
    if n_out != result.rank() {
        return Err(error_at(op, "the result's rank does not match dot_dimension_numbers"));
    }
    let space = n_out + lc.len();
    let mut lhs_read = vec![String::new(); lhs.rank()];
    let mut rhs_read = vec![String::new(); rhs.rank()];
    for (i, (&l, &r)) in lb.iter().zip(&rb).enumerate() {
        lhs_read[l as usize] = format!("d{i}");
        rhs_read[r as usize] = format!("d{i}");
    }
    for (i, &l) in lf.iter().enumerate() {
        lhs_read[l] = format!("d{}", lb.len() + i);
    }
    for (i, &r) in rf.iter().enumerate() {
        rhs_read[r] = format!("d{}", lb.len() + lf.len() + i);
    }
    for (i, (&l, &r)) in lc.iter().zip(&rc).enumerate() {
        lhs_read[l as usize] = format!("d{}", n_out + i);
        rhs_read[r as usize] = format!("d{}", n_out + i);
    }
    if lhs_read.iter().chain(&rhs_read).any(String::is_empty) {
        return Err(error_at(op, "dot_dimension_numbers name a dimension twice"));
    }
    let el = &result.element;
    let fold = Fold {
        init: "zero",
        space,
        inputs: [("%a0", lhs.text(), lhs_read), ("%a1", rhs.text(), rhs_read)],
        out: (0..n_out).map(|d| format!("d{d}")).collect(),
        reduction: (n_out..space).collect(),
        combine: &MULTIPLY_ADD.replace("ELEMENT", el),
        yielded: "%v",
    };
    Ok(format!("%zero = arith.constant 0.0 : {el}\n{}", fold.text(result)))
}

fn join<T: ToString>(values: &[T]) -> String {
    values.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// A `linalg.generic` copying `operand` into a fresh `result`, reading the operand at `reads`
/// (affine expressions of the result's `d0, d1, …`).
fn copy_with_map(operand: &Tensor, result: &Tensor, reads: &str) -> String {
    let rank = result.rank();
    let t = result.text();
    format!(
        "%e = tensor.empty() : {t}\n%r = linalg.generic {{indexing_maps = [affine_map<({all}) -> ({reads})>, {out}], iterator_types = [{it}]}} ins(%a0 : {o}) outs(%e : {t}) {{\n^bb0(%x: {el}, %y: {el}):\nlinalg.yield %x : {el}\n}} -> {t}\nreturn %r : {t}",
        all = dims(rank),
        out = identity_map(rank),
        it = parallel(rank),
        o = operand.text(),
        el = result.element,
    )
}

/// The start indices of a `dynamic_slice` or `dynamic_update_slice` (0-d integer tensors,
/// operands `%a{first}…`), each clamped to `[0, dim - size]` as the specification says: the
/// ops computing them, and the `%l…` names to use as offsets.
fn clamped_starts(op: Op, starts: &[Tensor], shape: &[i64], sizes: &[i64]) -> Result<(String, String), OpError> {
    if starts.len() != shape.len() || sizes.len() != shape.len() {
        return Err(error_at(op, "expected one start index and one size per dimension"));
    }
    let first = ir::operands(op).len() - starts.len();
    let mut text = String::from("%zero = arith.constant 0 : index\n");
    let mut names = Vec::new();
    for (i, start) in starts.iter().enumerate() {
        if start.rank() != 0 || !is_integer(&start.element) || start.element == "i1" {
            return Err(error_at(
                op,
                format!("start index {i} must be a 0-d signless integer tensor, found {}", start.text()),
            ));
        }
        let a = first + i;
        // Unsigned indices are zero-extended.
        let cast = if is_unsigned(&scalar_element(ir::operands(op)[a])) { "index_castui" } else { "index_cast" };
        let _ = writeln!(
            text,
            "%s{i} = tensor.extract %a{a}[] : {t}\n%i{i} = arith.{cast} %s{i} : {el} to index\n%m{i} = arith.constant {limit} : index\n%g{i} = arith.maxsi %i{i}, %zero : index\n%l{i} = arith.minsi %g{i}, %m{i} : index",
            t = start.text(),
            el = start.element,
            limit = (shape[i] - sizes[i]).max(0),
        );
        names.push(format!("%l{i}"));
    }
    Ok((text, names.join(", ")))
}

/// `pad` (spec): the padding value everywhere, the operand's elements placed `interior + 1`
/// apart from `edge_padding_low`; negative edges crop. Without interior padding or cropping,
/// `tensor.pad`, as jaxlib emits it.
fn pad(op: Op, operands: &[Tensor], result: &Tensor) -> Result<String, OpError> {
    let (low, high, interior) =
        (int_list(op, "edge_padding_low")?, int_list(op, "edge_padding_high")?, int_list(op, "interior_padding")?);
    let (o, value) = (&operands[0], &operands[1]);
    let rank = o.rank();
    if low.len() != rank || high.len() != rank || interior.len() != rank {
        return Err(error_at(op, "expected one padding amount per dimension"));
    }
    if (0..rank).any(|d| interior[d] < 0 || (interior[d] > 0 && (low[d] < 0 || high[d] < 0))) {
        return Err(error_at(op, "'stablehlo.pad' with negative edges and interior padding in one dimension is not supported by the legalization yet"));
    }
    let t = result.text();
    Ok(format!(
        "%v = tensor.extract %a1[] : {}\n{}return %pr : {t}",
        value.text(),
        pad_text("%a0", o, result, &Padding { low, high, interior }, "%v", "p")
    ))
}

/// Edge and interior padding per dimension (`pad`'s operands).
struct Padding {
    low: Vec<i64>,
    high: Vec<i64>,
    interior: Vec<i64>,
}

/// The ops padding `source` (of type `o`) into `result` with the scalar `value`, their SSA
/// names prefixed with `prefix`; the padded tensor is `%{prefix}r`. Interior padding must not
/// meet a negative edge in one dimension (the caller checks).
fn pad_text(source: &str, o: &Tensor, result: &Tensor, padding: &Padding, value: &str, prefix: &str) -> String {
    let Padding { low, high, interior } = padding;
    let rank = o.rank();
    let (t, el) = (result.text(), &result.element);
    let mut body = String::new();
    if interior.iter().all(|&i| i == 0) && low.iter().chain(high.iter()).all(|&p| p >= 0) {
        let _ = writeln!(
            body,
            "%{prefix}r = tensor.pad {source} low[{}] high[{}] {{\n^bb0({}):\ntensor.yield {value} : {el}\n}} : {} to {t}",
            join(low),
            join(high),
            (0..rank).map(|d| format!("%{prefix}i{d}: index")).collect::<Vec<_>>().join(", "),
            o.text()
        );
        return body;
    }
    // Crop negative edges, then place the rest with strides into a filled result.
    let crop_low: Vec<i64> = low.iter().map(|&l| (-l).max(0)).collect();
    let kept: Vec<i64> = (0..rank).map(|d| (o.shape[d] - crop_low[d] - (-high[d]).max(0)).max(0)).collect();
    // A dimension cropped away entirely is an empty slice, taken and placed at offset 0 (an
    // offset past the end is out of bounds even for nothing).
    let crop_low: Vec<i64> = (0..rank).map(|d| if kept[d] == 0 { 0 } else { crop_low[d] }).collect();
    let cropped = Tensor { shape: kept.clone(), element: o.element.clone() };
    let placed = if crop_low.iter().all(|&c| c == 0) && kept == o.shape {
        source.to_string()
    } else {
        let _ = writeln!(
            body,
            "%{prefix}c = tensor.extract_slice {source}[{}] [{}] [{}] : {} to {}",
            join(&crop_low),
            join(&kept),
            join(&vec![1; rank]),
            o.text(),
            cropped.text()
        );
        format!("%{prefix}c")
    };
    let offsets: Vec<i64> = (0..rank).map(|d| if kept[d] == 0 { 0 } else { low[d].max(0) }).collect();
    let strides: Vec<i64> = interior.iter().map(|&i| i + 1).collect();
    let _ = writeln!(
        body,
        "%{prefix}e = tensor.empty() : {t}\n%{prefix}f = linalg.fill ins({value} : {el}) outs(%{prefix}e : {t}) -> {t}\n%{prefix}r = tensor.insert_slice {placed} into %{prefix}f[{}] [{}] [{}] : {} into {t}",
        join(&offsets),
        join(&kept),
        join(&strides),
        cropped.text()
    );
    body
}

/// A `#stablehlo.gather<…>` attribute's fields (absent lists are empty).
struct GatherNumbers {
    offset_dims: Vec<i64>,
    collapsed: Vec<i64>,
    operand_batching: Vec<i64>,
    indices_batching: Vec<i64>,
    start_index_map: Vec<i64>,
    index_vector_dim: usize,
}

impl GatherNumbers {
    fn parse(text: &str) -> GatherNumbers {
        let index_vector_dim = text
            .find("index_vector_dim = ")
            .and_then(|at| text[at + 19..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
            .unwrap_or(0);
        GatherNumbers {
            offset_dims: bracket_field(text, "offset_dims"),
            collapsed: bracket_field(text, "collapsed_slice_dims"),
            operand_batching: bracket_field(text, "operand_batching_dims"),
            indices_batching: bracket_field(text, "start_indices_batching_dims"),
            start_index_map: bracket_field(text, "start_index_map"),
            index_vector_dim,
        }
    }
}

/// `gather` (spec): one `linalg.generic` over the result, whose body computes each element's
/// operand index — the batch index's start indices (read from the indices tensor, clamped to
/// `[0, dim - slice_size]`), the batching dimensions, and the offset — and extracts it, as
/// jaxlib lowers it.
fn gather(op: Op, operands: &[Tensor], result: &Tensor) -> Result<String, OpError> {
    let numbers = ir::attribute(op, "dimension_numbers")
        .map(ir::attribute_text)
        .ok_or_else(|| error_at(op, "'stablehlo.gather' has no dimension_numbers"))?;
    let GatherNumbers { offset_dims, collapsed, operand_batching, indices_batching, start_index_map, index_vector_dim } =
        GatherNumbers::parse(&numbers);
    let slice_sizes = int_list(op, "slice_sizes")?;
    let (operand, indices) = (&operands[0], &operands[1]);
    if !is_integer(&indices.element) || indices.element == "i1" {
        return Err(error_at(op, format!("gather indices must be signless integers, found {}", indices.text())));
    }
    let rank = result.rank();
    let batch_dims: Vec<usize> = (0..rank).filter(|d| !offset_dims.contains(&(*d as i64))).collect();
    let mut body = String::new();
    for d in 0..rank {
        let _ = writeln!(body, "%d{d} = linalg.index {d} : index");
    }
    // The indices tensor's index for start index `k`: the batch index with `k` at
    // index_vector_dim (or the batch index alone when index_vector_dim is its rank).
    let indices_index = |k: usize| -> Vec<String> {
        let mut index: Vec<String> = batch_dims.iter().map(|&d| format!("%d{d}")).collect();
        if index_vector_dim < indices.rank() {
            index.insert(index_vector_dim, format!("%k{k}"));
        }
        index
    };
    let cast = if is_unsigned(&scalar_element(ir::operands(op)[1])) { "index_castui" } else { "index_cast" };
    let mut operand_index: Vec<String> = vec!["%zero".into(); operand.rank()];
    let _ = writeln!(body, "%zero = arith.constant 0 : index");
    for (k, &d) in start_index_map.iter().enumerate() {
        let d = d as usize;
        if d >= operand.rank() || d >= slice_sizes.len() {
            return Err(error_at(op, "start_index_map names a dimension the operand does not have"));
        }
        let _ = writeln!(
            body,
            "%k{k} = arith.constant {k} : index\n%s{k} = tensor.extract %a1[{}] : {}\n%i{k} = arith.{cast} %s{k} : {} to index\n%m{k} = arith.constant {} : index\n%g{k} = arith.maxsi %i{k}, %zero : index\n%l{k} = arith.minsi %g{k}, %m{k} : index",
            indices_index(k).join(", "),
            indices.text(),
            indices.element,
            (operand.shape[d] - slice_sizes[d]).max(0)
        );
        operand_index[d] = format!("%l{k}");
    }
    for (&od, &sd) in operand_batching.iter().zip(&indices_batching) {
        let sd = sd as usize;
        let position = if sd < index_vector_dim { sd } else { sd - 1 };
        let Some(&result_dim) = batch_dims.get(position) else {
            return Err(error_at(op, "start_indices_batching_dims names a dimension the batch index does not have"));
        };
        operand_index[od as usize] = format!("%d{result_dim}");
    }
    // Offsets: the operand's dimensions neither collapsed nor batching, in order, take the
    // result's offset dimensions.
    let offset_operand_dims: Vec<usize> = (0..operand.rank())
        .filter(|d| !collapsed.contains(&(*d as i64)) && !operand_batching.contains(&(*d as i64)))
        .collect();
    if offset_operand_dims.len() != offset_dims.len() {
        return Err(error_at(op, "offset_dims do not match the operand's uncollapsed dimensions"));
    }
    for (&od, &rd) in offset_operand_dims.iter().zip(&offset_dims) {
        let base = operand_index[od].clone();
        let _ = writeln!(body, "%o{od} = arith.addi {base}, %d{rd} : index");
        operand_index[od] = format!("%o{od}");
    }
    let t = result.text();
    let el = &result.element;
    let _ = writeln!(body, "%v = tensor.extract %a0[{}] : {}", operand_index.join(", "), operand.text());
    Ok(format!(
        "%e = tensor.empty() : {t}\n%r = linalg.generic {{indexing_maps = [{map}], iterator_types = [{it}]}} outs(%e : {t}) {{\n^bb0(%out: {el}):\n{body}linalg.yield %v : {el}\n}} -> {t}\nreturn %r : {t}",
        map = identity_map(rank),
        it = parallel(rank),
    ))
}

/// An optional `padding` attribute (`dense<N>` or `dense<[[lo, hi], …]>` of `pairs` pairs),
/// flattened to `[lo0, hi0, lo1, hi1, …]`; zeros without it.
fn padding_pairs(op: Op, pairs: usize) -> Result<Vec<i64>, OpError> {
    let Some(attr) = ir::attribute(op, "padding") else { return Ok(vec![0; 2 * pairs]) };
    let text = ir::attribute_text(attr);
    let body = &text[text.find('<').map_or(0, |i| i + 1)..text.find('>').unwrap_or(text.len())];
    let numbers: Vec<i64> = body.split([',', '[', ']']).filter_map(|v| v.trim().parse().ok()).collect();
    match numbers.len() {
        1 => Ok(vec![numbers[0]; 2 * pairs]),
        l if l == 2 * pairs => Ok(numbers),
        _ => Err(error_at(op, format!("cannot read the padding {text}"))),
    }
}

/// An optional `array<i64: …>` attribute, or `default` per dimension.
fn int_list_or(op: Op, name: &str, count: usize, default: i64) -> Result<Vec<i64>, OpError> {
    match ir::attribute(op, name) {
        None => Ok(vec![default; count]),
        Some(_) => {
            let values = int_list(op, name)?;
            if values.len() != count {
                return Err(error_at(op, format!("'{name}' must have {count} values")));
            }
            Ok(values)
        }
    }
}

/// The layout in a `#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`: for each of
/// the three, the position of each letter and of each spatial dimension.
#[derive(PartialEq)]
struct ConvLayout {
    /// `(batch, feature, spatial positions)` of the input.
    lhs: (usize, usize, Vec<usize>),
    /// `(input feature, output feature, spatial positions)` of the kernel.
    rhs: (usize, usize, Vec<usize>),
    /// `(batch, feature, spatial positions)` of the result.
    out: (usize, usize, Vec<usize>),
}

impl ConvLayout {
    fn parse(text: &str) -> Option<ConvLayout> {
        let inner = &text[text.find('<')? + 1..text.rfind('>')?];
        let (lhs, rest) = inner.split_once('x')?;
        let (rhs, out) = rest.split_once("->")?;
        let fields = |part: &str| -> Vec<String> {
            part.trim().trim_start_matches('[').trim_end_matches(']').split(',').map(|f| f.trim().to_string()).collect()
        };
        let layout = |part: &str, first: &str, second: &str| -> Option<(usize, usize, Vec<usize>)> {
            let f = fields(part);
            let a = f.iter().position(|x| x == first)?;
            let b = f.iter().position(|x| x == second)?;
            let spatial =
                (0..f.len() - 2).map(|d| f.iter().position(|x| x == &d.to_string())).collect::<Option<Vec<usize>>>()?;
            Some((a, b, spatial))
        };
        Some(ConvLayout { lhs: layout(lhs, "b", "f")?, rhs: layout(rhs, "i", "o")?, out: layout(out, "b", "f")? })
    }
}

/// `convolution` (spec), with feature or batch groups (JAX's depthwise convolutions and their
/// weight gradients): the input padded (edges
/// from `padding`, `lhs_dilation - 1` zeros between elements, as `pad` does), then one
/// `linalg.generic` over the result's dimensions and the reduction over the window and the
/// input features (input feature innermost, as `linalg.conv_2d_nhwc_hwcf`), reading the input at
/// `output · stride + window · rhs_dilation` and the kernel, reversed where `window_reversal` says.
fn convolution(op: Op, operands: &[Tensor], result: &Tensor) -> Result<String, OpError> {
    let not_yet =
        |why: &str| error_at(op, format!("'stablehlo.convolution' {why} is not supported by the legalization yet"));
    let groups = |name: &str| ir::attribute(op, name).and_then(ir::integer_attribute_value).unwrap_or(1);
    let (feature_groups, batch_groups) = (groups("feature_group_count"), groups("batch_group_count"));
    if feature_groups < 1 || batch_groups < 1 || (feature_groups > 1 && batch_groups > 1) {
        return Err(error_at(op, "'stablehlo.convolution' needs positive group counts, at most one of them above 1"));
    }
    let numbers = ir::attribute(op, "dimension_numbers")
        .map(ir::attribute_text)
        .ok_or_else(|| error_at(op, "'stablehlo.convolution' has no dimension_numbers"))?;
    let layout = ConvLayout::parse(&numbers)
        .ok_or_else(|| error_at(op, format!("cannot read the convolution's dimension numbers {numbers}")))?;
    let (lhs, rhs) = (&operands[0], &operands[1]);
    if !result.is_float() || lhs.element != result.element || rhs.element != result.element {
        return Err(not_yet("on mixed or integer element types"));
    }
    let n = layout.lhs.2.len();
    let strides = int_list_or(op, "window_strides", n, 1)?;
    let lhs_dilation = int_list_or(op, "lhs_dilation", n, 1)?;
    let rhs_dilation = int_list_or(op, "rhs_dilation", n, 1)?;
    let reversal: Vec<bool> = match ir::attribute(op, "window_reversal") {
        None => vec![false; n],
        Some(attr) => {
            let text = ir::attribute_text(attr);
            let inner = text.split_once(':').map_or("", |(_, rest)| rest.trim_end_matches('>'));
            inner.split(',').map(|v| v.trim() == "true").collect()
        }
    };
    let padding = padding_pairs(op, n)?;
    if reversal.len() != n {
        return Err(error_at(op, "window_reversal must have one flag per spatial dimension"));
    }
    // The input, padded and dilated as `pad` would.
    let mut padded_shape = lhs.shape.clone();
    let mut low = vec![0; lhs.rank()];
    let mut high = vec![0; lhs.rank()];
    let mut interior = vec![0; lhs.rank()];
    for (s, &d) in layout.lhs.2.iter().enumerate() {
        low[d] = padding[2 * s];
        high[d] = padding[2 * s + 1];
        interior[d] = lhs_dilation[s] - 1;
        let dilated = if lhs.shape[d] == 0 { 0 } else { (lhs.shape[d] - 1) * lhs_dilation[s] + 1 };
        padded_shape[d] = dilated + low[d] + high[d];
    }
    let padded = Tensor { shape: padded_shape, element: lhs.element.clone() };
    let el = &result.element;
    let mut body = String::new();
    let input = if low.iter().chain(&high).chain(&interior).all(|&p| p == 0) {
        "%a0".to_string()
    } else {
        if (0..lhs.rank()).any(|d| interior[d] > 0 && (low[d] < 0 || high[d] < 0)) {
            return Err(not_yet("with negative padding and lhs dilation in one dimension"));
        }
        let _ = write!(
            body,
            "%zero = arith.constant 0.0 : {el}\n{}",
            pad_text("%a0", lhs, &padded, &Padding { low, high, interior }, "%zero", "p")
        );
        "%pr".to_string()
    };
    // The iteration space, in jaxlib's order (so that sums are accumulated in its order): for
    // the forward layout (`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`, its
    // `linalg.conv_2d_nhwc_hwcf`) the result's dimensions, the window's, then the input feature;
    // for any other layout (its general convolution) the input feature, the output feature, each
    // spatial dimension's (output, window) pair, then the batch.
    let rank = result.rank();
    let forward = layout.lhs == (0, n + 1, (1..=n).collect())
        && layout.rhs == (n, n + 1, (0..n).collect())
        && layout.out == (0, n + 1, (1..=n).collect());
    let (batch, out_feature, in_feature, out_spatial, window): (usize, usize, usize, Vec<usize>, Vec<usize>) =
        if forward {
            (0, n + 1, rank + n, (1..=n).collect(), (0..n).map(|s| rank + s).collect())
        } else {
            (2 * n + 2, 1, 0, (0..n).map(|s| 2 + 2 * s).collect(), (0..n).map(|s| 3 + 2 * s).collect())
        };
    let space = rank + n + 1;
    let reduction: Vec<usize> = window.iter().copied().chain([in_feature]).collect();
    // Groups (spec: feature_group_count splits the input features and the output features
    // into as many groups, each output feature reading its group's inputs; batch_group_count
    // splits the input batch likewise): the output feature's group picks the input feature
    // (or batch) block, an affine `floordiv` of the output feature loop.
    let (in_features, out_features) = (rhs.shape[layout.rhs.0], rhs.shape[layout.rhs.1]);
    let (lhs_batch, lhs_features, out_batch) =
        (lhs.shape[layout.lhs.0], lhs.shape[layout.lhs.1], result.shape[layout.out.0]);
    if lhs_features != in_features * feature_groups
        || out_features % (feature_groups * batch_groups) != 0
        || lhs_batch != out_batch * batch_groups
    {
        return Err(error_at(
            op,
            format!(
                "'stablehlo.convolution' with {feature_groups} feature and {batch_groups} batch groups: the shapes do not divide into them"
            ),
        ));
    }
    let mut lhs_read = vec![String::new(); lhs.rank()];
    lhs_read[layout.lhs.0] = if batch_groups > 1 {
        format!("(d{out_feature} floordiv {}) * {out_batch} + d{batch}", out_features / batch_groups)
    } else {
        format!("d{batch}")
    };
    lhs_read[layout.lhs.1] = if feature_groups > 1 {
        format!("(d{out_feature} floordiv {}) * {in_features} + d{in_feature}", out_features / feature_groups)
    } else {
        format!("d{in_feature}")
    };
    for (s, &d) in layout.lhs.2.iter().enumerate() {
        lhs_read[d] = format!("d{} * {} + d{} * {}", out_spatial[s], strides[s], window[s], rhs_dilation[s]);
    }
    let mut rhs_read = vec![String::new(); rhs.rank()];
    rhs_read[layout.rhs.0] = format!("d{in_feature}");
    rhs_read[layout.rhs.1] = format!("d{out_feature}");
    for (s, &d) in layout.rhs.2.iter().enumerate() {
        rhs_read[d] = format!("d{}", window[s]);
    }
    let mut out_read = vec![String::new(); rank];
    out_read[layout.out.0] = format!("d{batch}");
    out_read[layout.out.1] = format!("d{out_feature}");
    for (s, &d) in layout.out.2.iter().enumerate() {
        out_read[d] = format!("d{}", out_spatial[s]);
    }
    // Window reversal: the kernel reversed first (a copy), so that every loop of the
    // convolution is a plain dimension of some operand (linalg infers its bounds from them).
    let kernel = if reversal.iter().any(|&r| r) {
        let reads: Vec<String> = (0..rhs.rank())
            .map(|d| match layout.rhs.2.iter().position(|&k| k == d) {
                Some(s) if reversal[s] => format!("{} - d{d}", rhs.shape[d] - 1),
                _ => format!("d{d}"),
            })
            .collect();
        let _ = writeln!(
            body,
            "%ke = tensor.empty() : {t}\n%kr = linalg.generic {{indexing_maps = [affine_map<({all}) -> ({reads})>, {out}], iterator_types = [{it}]}} ins(%a1 : {t}) outs(%ke : {t}) {{\n^bb0(%kx: {el}, %ky: {el}):\nlinalg.yield %kx : {el}\n}} -> {t}",
            t = rhs.text(),
            all = dims(rhs.rank()),
            reads = reads.join(", "),
            out = identity_map(rhs.rank()),
            it = parallel(rhs.rank()),
        );
        "%kr"
    } else {
        "%a1"
    };
    let fold = Fold {
        init: "zero_acc",
        space,
        inputs: [
            (input.as_str(), if input == "%a0" { lhs.text() } else { padded.text() }, lhs_read),
            (kernel, rhs.text(), rhs_read),
        ],
        out: out_read,
        reduction,
        combine: &MULTIPLY_ADD.replace("ELEMENT", el),
        yielded: "%v",
    };
    let _ = write!(body, "%zero_acc = arith.constant 0.0 : {el}\n{}", fold.text(result));
    Ok(body)
}

/// `reduce` of any number of operands: each init (a 0-d tensor) fills its result, then one
/// `linalg.reduce` folds the operands' elements in index order, its body the StableHLO body's
/// ops as scalars (body arguments: the accumulators, then the elements).
fn reduce(op: Op, operands: &[Tensor], results: &[Tensor]) -> Result<String, OpError> {
    let n = results.len();
    if n == 0 || operands.len() != 2 * n {
        return Err(error_at(op, "'stablehlo.reduce' must have one init per input and one result per input"));
    }
    let dimensions = int_list(op, "dimensions")?;
    // StableHLO's body takes (accumulators…, elements…); linalg.reduce's block (elements…, inits…).
    let names: Vec<String> = (0..n).map(|i| format!("%acc{i}")).chain((0..n).map(|i| format!("%in{i}"))).collect();
    let (scalar, yielded) = body_scalars(op, &names)?;
    let mut text = String::new();
    for (i, (init, result)) in operands[n..].iter().zip(results).enumerate() {
        let (t, el) = (result.text(), &result.element);
        let _ = writeln!(
            text,
            "%init{i} = tensor.extract %a{}[] : {}\n%e{i} = tensor.empty() : {t}\n%f{i} = linalg.fill ins(%init{i} : {el}) outs(%e{i} : {t}) -> {t}",
            n + i,
            init.text()
        );
    }
    let ins: Vec<String> = (0..n).map(|i| format!("%a{i}")).collect();
    let in_types: Vec<String> = operands[..n].iter().map(Tensor::text).collect();
    let outs: Vec<String> = (0..n).map(|i| format!("%f{i}")).collect();
    let out_types: Vec<String> = results.iter().map(Tensor::text).collect();
    let block: Vec<String> = (0..n)
        .map(|i| format!("%in{i}: {}", results[i].element))
        .chain((0..n).map(|i| format!("%acc{i}: {}", results[i].element)))
        .collect();
    let element_types: Vec<&str> = results.iter().map(|r| r.element.as_str()).collect();
    let _ = write!(
        text,
        "%r:{n} = linalg.reduce ins({} : {}) outs({} : {}) dimensions = [{}]\n({}) {{\n{scalar}linalg.yield {} : {}\n}}\nreturn {} : {}",
        ins.join(", "),
        in_types.join(", "),
        outs.join(", "),
        out_types.join(", "),
        join(&dimensions),
        block.join(", "),
        yielded.join(", "),
        element_types.join(", "),
        (0..n).map(|i| format!("%r#{i}")).collect::<Vec<_>>().join(", "),
        out_types.join(", "),
    );
    Ok(text)
}

/// The scalar code of a `reduce` or `reduce_window` body (its block's arguments named `names`,
/// of element types `types`): each StableHLO op of the body on 0-d tensors becomes its scalar
/// ops, with names of its own; returns the code and the names the body returns.
fn body_scalars(op: Op, names: &[String]) -> Result<(String, Vec<String>), OpError> {
    region_scalars(op, 0, names)
}

/// [`body_scalars`] of region `region` of `op` (`select_and_scatter` has two bodies); the
/// names it gives its values start with `%b` in region 0 and `%b{region}r` in the others.
fn region_scalars(op: Op, region: usize, names: &[String]) -> Result<(String, Vec<String>), OpError> {
    let prefix = if region == 0 { "b".to_string() } else { format!("b{region}r") };
    named_region_scalars(op, region, names, &prefix)
}

/// [`region_scalars`] with the names of its values starting with `%{prefix}` (a body inlined
/// twice in one template, as `sort`'s comparator is, needs two prefixes).
fn named_region_scalars(
    op: Op,
    region: usize,
    names: &[String],
    prefix: &str,
) -> Result<(String, Vec<String>), OpError> {
    let name = ir::op_name(op);
    let not_yet = |why: String| error_at(op, format!("'{name}' {why} is not supported by the legalization yet"));
    let regions = ir::regions(op);
    let blocks = regions.get(region).map(|&r| ir::blocks(r)).unwrap_or_default();
    let [block] = blocks[..] else { return Err(not_yet("without a one-block body".into())) };
    let arguments = ir::block_arguments(block);
    if arguments.len() != names.len() {
        return Err(not_yet(format!("with a body of {} arguments", arguments.len())));
    }
    // Each value of the body: its scalar name and element type.
    // Element types as written (`ui32`), so that `scalar` sees the signedness.
    let mut values: Vec<(Val, String, String)> =
        arguments.iter().zip(names).map(|(&v, n)| (v, n.clone(), scalar_element(v))).collect();
    let lookup = |values: &[(Val, String, String)], v: Val| {
        values.iter().find(|(w, _, _)| ir::same_value(*w, v)).map(|(_, n, t)| (n.clone(), t.clone()))
    };
    let mut text = String::new();
    let ops = ir::block_ops(block);
    let Some((ret, body)) = ops.split_last() else { return Err(not_yet("with an empty body".into())) };
    for (k, &inner) in body.iter().enumerate() {
        let full = ir::op_name(inner);
        // jaxlib's linalg form: the body's StableHLO ops legalized to 0-d linalg ops.
        match full.as_str() {
            "tensor.empty" => continue,
            "tensor.extract" | "tensor.from_elements" => {
                let (Some(&source), [result]) = (ir::operands(inner).first(), &ir::results(inner)[..]) else {
                    return Err(not_yet(format!("with a '{full}' of other than one operand and result")));
                };
                let (name, _) =
                    lookup(&values, source).ok_or_else(|| not_yet("whose body reads values from outside".into()))?;
                values.push((*result, name, scalar_element(*result)));
                continue;
            }
            "linalg.generic" | "linalg.map" => {
                let results = ir::results(inner);
                let operands = ir::operands(inner);
                let inputs = operands.len().saturating_sub(results.len());
                let [result] = results[..] else {
                    return Err(not_yet(format!("with a '{full}' of several results in its body")));
                };
                let mut mapped = Vec::new();
                for &v in &operands[..inputs] {
                    mapped.push(
                        lookup(&values, v).ok_or_else(|| not_yet("whose body reads values from outside".into()))?,
                    );
                }
                let name = inline_scalar_linalg(inner, &format!("{prefix}{k}"), &mapped, &mut text, &not_yet)?;
                values.push((result, name, scalar_element(result)));
                continue;
            }
            _ => {}
        }
        let short = full.trim_start_matches("stablehlo.").to_string();
        let mut inputs = Vec::new();
        for v in ir::operands(inner) {
            inputs.push(lookup(&values, v).ok_or_else(|| not_yet("whose body reads values from outside".into()))?);
        }
        let [result] = ir::results(inner)[..] else {
            return Err(not_yet(format!("with a 'stablehlo.{short}' of several results in its body")));
        };
        let output = Tensor::of(inner, result)?;
        if output.rank() != 0 {
            return Err(not_yet("whose body computes on tensors that are not 0-d".into()));
        }
        if short == "constant" {
            // A 0-d constant: the literal inside `dense<…>`.
            let value = ir::attribute(inner, "value").map(ir::attribute_text).unwrap_or_default();
            let literal = value.strip_prefix("dense<").and_then(|t| t.split_once('>')).map(|(l, _)| l.trim());
            let Some(literal) = literal.filter(|l| !l.is_empty() && !l.contains(['[', ','])) else {
                return Err(not_yet(format!("with the constant {value} in its body")));
            };
            let _ = writeln!(text, "%{prefix}{k}_v = arith.constant {literal} : {}", output.element);
            values.push((result, format!("%{prefix}{k}_v"), output.element));
            continue;
        }
        let input_types: Vec<String> = inputs.iter().map(|(_, t)| t.clone()).collect();
        let Some(code) = scalar(inner, &short, &input_types, &scalar_element(result))? else {
            return Err(not_yet(format!("with a 'stablehlo.{short}' in its body")));
        };
        // The snippet's own names get this op's prefix; its inputs are the body's values.
        let mut code = code;
        for i in 0..inputs.len() {
            code = code.replace(&format!("%x{i}"), &format!("@{i}@"));
        }
        let mut code = code.replace('%', &format!("%{prefix}{k}_"));
        for (i, (input, _)) in inputs.iter().enumerate() {
            code = code.replace(&format!("@{i}@"), input);
        }
        let _ = writeln!(text, "{code}");
        values.push((result, format!("%{prefix}{k}_v"), output.element));
    }
    if ir::op_name(*ret) != "stablehlo.return" {
        return Err(not_yet("whose body does not end in stablehlo.return".into()));
    }
    let mut yielded = Vec::new();
    for v in ir::operands(*ret) {
        yielded.push(lookup(&values, v).ok_or_else(|| not_yet("whose body returns values from outside".into()))?.0);
    }
    Ok((text, yielded))
}

/// Writes the scalar body of a 0-d `linalg.generic`/`linalg.map` (its inputs are `inputs`:
/// name and element type) to `text`, each arith/math op in generic form under names starting
/// with `%{prefix}_`; returns the name of the value it yields.
fn inline_scalar_linalg(
    op: Op,
    prefix: &str,
    inputs: &[(String, String)],
    text: &mut String,
    not_yet: &dyn Fn(String) -> OpError,
) -> Result<String, OpError> {
    let [region] = ir::regions(op)[..] else {
        return Err(not_yet("with a linalg op of several regions in its body".into()));
    };
    let [block] = ir::blocks(region)[..] else {
        return Err(not_yet("with a linalg op of several blocks in its body".into()));
    };
    let arguments = ir::block_arguments(block);
    let mut names: Vec<(Val, String)> = arguments.iter().zip(inputs).map(|(&a, (n, _))| (a, n.clone())).collect();
    for (j, inner) in ir::block_ops(block).into_iter().enumerate() {
        let name = ir::op_name(inner);
        let mut operands = Vec::new();
        for v in ir::operands(inner) {
            match names.iter().find(|(w, _)| ir::same_value(*w, v)) {
                Some((_, n)) => operands.push(n.clone()),
                None => {
                    return Err(not_yet(format!("with a '{name}' reading a value other than the linalg op's inputs")))
                }
            }
        }
        if name == "linalg.yield" {
            let [value] = &operands[..] else { return Err(not_yet("with a linalg op yielding several values".into())) };
            return Ok(value.clone());
        }
        if !(name.starts_with("arith.") || name.starts_with("math.")) || !ir::regions(inner).is_empty() {
            return Err(not_yet(format!("with a '{name}' in a linalg body")));
        }
        let [result] = ir::results(inner)[..] else {
            return Err(not_yet(format!("with a '{name}' of several results")));
        };
        let operand_types: Vec<String> =
            ir::operands(inner).iter().map(|&v| ir::type_text(ir::value_type(v))).collect();
        let attributes: Vec<String> = (0..unsafe { mlirOperationGetNumAttributes(inner) })
            .map(|i| {
                let named = unsafe { mlirOperationGetAttribute(inner, i) };
                let key = ir::string_ref_to_string(unsafe { mlirIdentifierStr(named.name) });
                format!("{key} = {}", ir::attribute_text(named.attribute))
            })
            .collect();
        let value = format!("%{prefix}_{j}");
        let _ = writeln!(
            text,
            "{value} = \"{name}\"({}) {{{}}} : ({}) -> {}",
            operands.join(", "),
            attributes.join(", "),
            operand_types.join(", "),
            ir::type_text(ir::value_type(result))
        );
        names.push((result, value));
    }
    Err(not_yet("with a linalg op without a yield".into()))
}

/// `reduce_window` (spec) of one operand: the operand padded with the init value (edges from
/// `padding`, `base_dilations - 1` between elements), the result filled with the init, then one
/// `linalg.generic` over the result's and the window's dimensions (a `tensor.empty` of the
/// window's shape gives their extent, as linalg's pooling ops take it) folding
/// `input[o · stride + w · window_dilation]` into each result element, window in index order.
fn reduce_window(op: Op, operands: &[Tensor], results: &[Tensor]) -> Result<String, OpError> {
    let ([input, init], [result]) = (operands, results) else {
        return Err(error_at(
            op,
            "'stablehlo.reduce_window' of several operands is not supported by the legalization yet",
        ));
    };
    let rank = input.rank();
    let window = int_list(op, "window_dimensions")?;
    let strides = int_list_or(op, "window_strides", rank, 1)?;
    let base = int_list_or(op, "base_dilations", rank, 1)?;
    let dilations = int_list_or(op, "window_dilations", rank, 1)?;
    let padding = padding_pairs(op, rank)?;
    if window.len() != rank {
        return Err(error_at(op, "window_dimensions must have one size per dimension"));
    }
    let low: Vec<i64> = (0..rank).map(|d| padding[2 * d]).collect();
    let high: Vec<i64> = (0..rank).map(|d| padding[2 * d + 1]).collect();
    let interior: Vec<i64> = base.iter().map(|&b| b - 1).collect();
    if (0..rank).any(|d| interior[d] > 0 && (low[d] < 0 || high[d] < 0)) {
        return Err(error_at(op, "'stablehlo.reduce_window' with negative padding and base dilation is not supported by the legalization yet"));
    }
    let el = &result.element;
    let (scalar, yielded) = body_scalars(op, &["%acc".to_string(), "%x".to_string()])?;
    let [yielded] = &yielded[..] else {
        return Err(error_at(
            op,
            "'stablehlo.reduce_window' of several results is not supported by the legalization yet",
        ));
    };
    let mut body = format!("%init = tensor.extract %a1[] : {}\n", init.text());
    let (source, source_type) = if low.iter().chain(&high).chain(&interior).all(|&p| p == 0) {
        ("%a0", input.text())
    } else {
        let shape: Vec<i64> = (0..rank)
            .map(|d| if input.shape[d] == 0 { 0 } else { (input.shape[d] - 1) * base[d] + 1 } + low[d] + high[d])
            .collect();
        let padded = Tensor { shape, element: input.element.clone() };
        body.push_str(&pad_text("%a0", input, &padded, &Padding { low, high, interior }, "%init", "p"));
        ("%pr", padded.text())
    };
    let window_type = Tensor { shape: window.clone(), element: el.clone() }.text();
    let space = 2 * rank;
    let reads: Vec<String> =
        (0..rank).map(|d| format!("d{d} * {} + d{} * {}", strides[d], rank + d, dilations[d])).collect();
    let window_dims: Vec<String> = (0..rank).map(|d| format!("d{}", rank + d)).collect();
    let fold = Fold {
        init: "init",
        space,
        inputs: [(source, source_type, reads), ("%w", window_type.clone(), window_dims)],
        out: (0..rank).map(|d| format!("d{d}")).collect(),
        reduction: (rank..space).collect(),
        combine: &scalar,
        yielded,
    };
    let _ = write!(body, "%w = tensor.empty() : {window_type}\n{}", fold.text(result));
    Ok(body)
}

/// `select_and_scatter` (spec): two `linalg.generic`s over a window-shaped `tensor.empty`, as
/// for `reduce_window`.
///
/// 1. Over the source's and the window's dimensions: each window's selected element, in
///    window index order — the first element of the window inside the operand (padding is
///    never selected), then each later one replaces it unless `select(current, candidate)`
///    holds (XLA's rule: with `GE`, the first maximum). It keeps the selected value and the
///    element's offset in the window (row-major, `-1` for a window of padding only).
/// 2. Over the operand's and the window's dimensions: each result element starts at the init
///    value and folds with `scatter`, in the source's index order, the source value of every
///    window that contains it and selected it (the window offsets are walked backwards, so the
///    windows come in ascending order).
///
/// The operand is read with `tensor.extract` at clamped indices, so no padded copy is made.
fn select_and_scatter(op: Op, operands: &[Tensor], result: &Tensor) -> Result<String, OpError> {
    let [operand, source, init] = operands else {
        return Err(error_at(op, "'stablehlo.select_and_scatter' must have an operand, a source and an init value"));
    };
    let rank = operand.rank();
    let window = int_list(op, "window_dimensions")?;
    let strides = int_list_or(op, "window_strides", rank, 1)?;
    let padding = padding_pairs(op, rank)?;
    if window.len() != rank || source.rank() != rank || window.iter().chain(&strides).any(|&v| v <= 0) {
        return Err(error_at(
            op,
            "'stablehlo.select_and_scatter' needs a positive window size and stride per dimension",
        ));
    }
    let low: Vec<i64> = (0..rank).map(|d| padding[2 * d]).collect();
    for d in 0..rank {
        let padded = operand.shape[d] + padding[2 * d] + padding[2 * d + 1];
        let windows = if padded <= 0 || window[d] > padded { 0 } else { (padded - window[d]) / strides[d] + 1 };
        if source.shape[d] != windows {
            return Err(error_at(
                op,
                format!(
                    "'stablehlo.select_and_scatter': the source has {} windows along dimension {d}, the operand {windows}",
                    source.shape[d]
                ),
            ));
        }
    }
    let el = &operand.element;
    let (select, kept) = region_scalars(op, 0, &["%cur".to_string(), "%x".to_string()])?;
    let (scatter, scattered) = region_scalars(op, 1, &["%acc".to_string(), "%src".to_string()])?;
    let ([kept], [scattered]) = (&kept[..], &scattered[..]) else {
        return Err(error_at(op, "'stablehlo.select_and_scatter' bodies must return one value each"));
    };
    // Row-major offsets within the window.
    let mut multiplier = vec![1i64; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        multiplier[d] = multiplier[d + 1] * window[d + 1];
    }
    let window_type = Tensor { shape: window.clone(), element: el.clone() }.text();
    let offsets_type = Tensor { shape: source.shape.clone(), element: "i32".into() }.text();
    let (ot, st, rt) = (operand.text(), source.text(), result.text());
    let space = 2 * rank;
    let all = dims(space);
    let outer = dims(rank);
    let inner = (rank..space).map(|d| format!("d{d}")).collect::<Vec<_>>().join(", ");
    let iterators =
        vec!["\"parallel\""; rank].into_iter().chain(vec!["\"reduction\""; rank]).collect::<Vec<_>>().join(", ");
    let maps = format!("affine_map<({all}) -> ({inner})>, affine_map<({all}) -> ({outer})>");
    let flat = |w: &dyn Fn(usize) -> String, prefix: &str, body: &mut String| {
        let _ = writeln!(body, "%{prefix}f0 = arith.constant 0 : index");
        for (d, m) in multiplier.iter().enumerate() {
            let _ = writeln!(
                body,
                "%{prefix}m{d} = arith.constant {m} : index\n%{prefix}t{d} = arith.muli {}, %{prefix}m{d} : index\n%{prefix}f{} = arith.addi %{prefix}f{d}, %{prefix}t{d} : index",
                w(d),
                d + 1
            );
        }
        let _ = writeln!(body, "%{prefix}flat = arith.index_cast %{prefix}f{rank} : index to i32");
    };

    let mut text = format!(
        "%init = tensor.extract %a2[] : {}\n%w = tensor.empty() : {window_type}\n%zero = arith.constant 0 : index\n%true = arith.constant true\n%none = arith.constant -1 : i32\n%sv = tensor.empty() : {st}\n%si0 = tensor.empty() : {offsets_type}\n%si = linalg.fill ins(%none : i32) outs(%si0 : {offsets_type}) -> {offsets_type}\n",
        init.text()
    );
    // 1. The selection.
    let mut select_body = String::new();
    let mut valid = "%true".to_string();
    let mut position = Vec::new();
    for d in 0..rank {
        let _ = writeln!(
            select_body,
            "%o{d} = linalg.index {d} : index\n%w{d} = linalg.index {} : index\n%os{d} = arith.constant {} : index\n%ow{d} = arith.muli %o{d}, %os{d} : index\n%lo{d} = arith.constant {} : index\n%q{d} = arith.addi %ow{d}, %w{d} : index\n%p{d} = arith.subi %q{d}, %lo{d} : index\n%n{d} = arith.constant {} : index\n%top{d} = arith.constant {} : index\n%ge{d} = arith.cmpi sge, %p{d}, %zero : index\n%lt{d} = arith.cmpi slt, %p{d}, %n{d} : index\n%in{d} = arith.andi %ge{d}, %lt{d} : i1\n%v{d} = arith.andi {valid}, %in{d} : i1\n%cl{d} = arith.maxsi %p{d}, %zero : index\n%c{d} = arith.minsi %cl{d}, %top{d} : index",
            rank + d,
            strides[d],
            low[d],
            operand.shape[d],
            (operand.shape[d] - 1).max(0),
        );
        valid = format!("%v{d}");
        position.push(format!("%c{d}"));
    }
    flat(&|d| format!("%w{d}"), "s", &mut select_body);
    let _ = write!(
        select_body,
        "%x = tensor.extract %a0[{}] : {ot}\n{select}%first = arith.cmpi eq, %ci, %none : i32\n%replace = arith.xori {kept}, %true : i1\n%better = arith.ori %first, %replace : i1\n%take = arith.andi {valid}, %better : i1\n%nv = arith.select %take, %x, %cur : {el}\n%ni = arith.select %take, %sflat, %ci : i32\nlinalg.yield %nv, %ni : {el}, i32\n",
        position.join(", ")
    );
    let _ = writeln!(
        text,
        "%sel:2 = linalg.generic {{indexing_maps = [{maps}, affine_map<({all}) -> ({outer})>], iterator_types = [{iterators}]}} ins(%w : {window_type}) outs(%sv, %si : {st}, {offsets_type}) {{\n^bb0(%unused: {el}, %cur: {el}, %ci: i32):\n{select_body}}} -> ({st}, {offsets_type})"
    );
    // 2. The scatter, gathered per result element.
    let mut scatter_body = String::new();
    let mut hit = "%true".to_string();
    let mut window_of = Vec::new();
    for d in 0..rank {
        let _ = writeln!(
            scatter_body,
            "%r{d} = linalg.index {d} : index\n%u{d} = linalg.index {} : index\n%last{d} = arith.constant {} : index\n%k{d} = arith.subi %last{d}, %u{d} : index\n%glo{d} = arith.constant {} : index\n%rl{d} = arith.addi %r{d}, %glo{d} : index\n%t{d} = arith.subi %rl{d}, %k{d} : index\n%gs{d} = arith.constant {} : index\n%tc{d} = arith.maxsi %t{d}, %zero : index\n%rem{d} = arith.remsi %tc{d}, %gs{d} : index\n%j{d} = arith.divsi %tc{d}, %gs{d} : index\n%gn{d} = arith.constant {} : index\n%gtop{d} = arith.constant {} : index\n%ge{d} = arith.cmpi sge, %t{d}, %zero : index\n%on{d} = arith.cmpi eq, %rem{d}, %zero : index\n%lt{d} = arith.cmpi slt, %j{d}, %gn{d} : index\n%gok{d} = arith.andi %ge{d}, %on{d} : i1\n%gin{d} = arith.andi %gok{d}, %lt{d} : i1\n%h{d} = arith.andi {hit}, %gin{d} : i1\n%jc{d} = arith.minsi %j{d}, %gtop{d} : index",
            rank + d,
            window[d] - 1,
            low[d],
            strides[d],
            source.shape[d],
            (source.shape[d] - 1).max(0),
        );
        hit = format!("%h{d}");
        window_of.push(format!("%jc{d}"));
    }
    flat(&|d| format!("%k{d}"), "g", &mut scatter_body);
    let at = window_of.join(", ");
    let _ = write!(
        scatter_body,
        "%chosen = tensor.extract %sel#1[{at}] : {offsets_type}\n%same = arith.cmpi eq, %chosen, %gflat : i32\n%go = arith.andi {hit}, %same : i1\n%src = tensor.extract %a1[{at}] : {st}\n{scatter}%nr = arith.select %go, {scattered}, %acc : {el}\nlinalg.yield %nr : {el}\n"
    );
    let _ = write!(
        text,
        "%re = tensor.empty() : {rt}\n%rf = linalg.fill ins(%init : {el}) outs(%re : {rt}) -> {rt}\n%r = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iterators}]}} ins(%w : {window_type}) outs(%rf : {rt}) {{\n^bb0(%unused: {el}, %acc: {el}):\n{scatter_body}}} -> {rt}\nreturn %r : {rt}"
    );
    Ok(text)
}

/// `sort` (spec) of any number of inputs along `dimension`, stable, by ranks: one
/// `linalg.generic` counts, for each element, the elements of its row that the comparator puts
/// before it (`cmp(x_j, x_i)`, or an equivalent one earlier in the row), then one over the
/// result's positions and the row picks, for each position, the element of that rank, for every
/// input. Both are quadratic in the sorted dimension's size (JAX sorts short rows in training
/// steps: top-k routing, argsort of scores); the result is the stable order, which an unstable
/// sort may also return.
fn sort(op: Op, operands: &[Tensor], results: &[Tensor]) -> Result<String, OpError> {
    let Some(first) = operands.first() else {
        return Err(error_at(op, "'stablehlo.sort' needs at least one input"));
    };
    if operands.iter().chain(results).any(|t| t.shape != first.shape) {
        return Err(error_at(op, "'stablehlo.sort' inputs and results must all have one shape"));
    }
    let rank = first.rank();
    let dimension = ir::attribute(op, "dimension")
        .and_then(ir::integer_attribute_value)
        .map(|d| if d < 0 { d + rank as i64 } else { d })
        .and_then(|d| usize::try_from(d).ok())
        .filter(|&d| d < rank)
        .ok_or_else(|| error_at(op, "'stablehlo.sort' has no valid dimension"))?;
    let n = operands.len();
    let row = first.shape[dimension];
    // The comparator takes (lhs_0, rhs_0, lhs_1, rhs_1, …): once as cmp(x_j, x_i), once as
    // cmp(x_i, x_j).
    let pairs = |lhs: &str, rhs: &str| -> Vec<String> {
        (0..n).flat_map(|k| [format!("%{lhs}{k}"), format!("%{rhs}{k}")]).collect()
    };
    let (before, ji) = named_region_scalars(op, 0, &pairs("xj", "xi"), "cji")?;
    let (after, ij) = named_region_scalars(op, 0, &pairs("xi", "xj"), "cij")?;
    let ([ji], [ij]) = (&ji[..], &ij[..]) else {
        return Err(error_at(op, "'stablehlo.sort' comparator must return one value"));
    };
    let space = rank + 1;
    let all = dims(space);
    let own = dims(rank);
    let along: Vec<String> =
        (0..rank).map(|d| if d == dimension { format!("d{rank}") } else { format!("d{d}") }).collect();
    let along = along.join(", ");
    let iterators = vec!["\"parallel\""; rank].into_iter().chain(["\"reduction\""]).collect::<Vec<_>>().join(", ");
    let row_type = Tensor { shape: vec![row], element: "i32".into() }.text();
    let ranks_type = Tensor { shape: first.shape.clone(), element: "i32".into() }.text();
    let ins_i: Vec<String> = (0..n).map(|k| format!("%a{k}")).collect();
    let types: Vec<String> = operands.iter().map(Tensor::text).collect();
    let mut text = format!(
        "%row = tensor.empty() : {row_type}\n%zero = arith.constant 0 : i32\n%one = arith.constant 1 : i32\n%true = arith.constant true\n%re = tensor.empty() : {ranks_type}\n%rf = linalg.fill ins(%zero : i32) outs(%re : {ranks_type}) -> {ranks_type}\n"
    );
    // 1. Each element's rank in its row.
    let maps: Vec<String> = std::iter::repeat_n(format!("affine_map<({all}) -> ({own})>"), n)
        .chain(std::iter::repeat_n(format!("affine_map<({all}) -> ({along})>"), n))
        .chain([format!("affine_map<({all}) -> (d{rank})>"), format!("affine_map<({all}) -> ({own})>")])
        .collect();
    let args: Vec<String> = (0..n)
        .map(|k| format!("%xi{k}: {}", operands[k].element))
        .chain((0..n).map(|k| format!("%xj{k}: {}", operands[k].element)))
        .chain(["%unused: i32".to_string(), "%acc: i32".to_string()])
        .collect();
    let _ = writeln!(
        text,
        "%ranks = linalg.generic {{indexing_maps = [{}], iterator_types = [{iterators}]}} ins({}, {}, %row : {}, {}, {row_type}) outs(%rf : {ranks_type}) {{\n^bb0({}):\n{before}{after}%i = linalg.index {dimension} : index\n%j = linalg.index {rank} : index\n%earlier = arith.cmpi slt, %j, %i : index\n%not_after = arith.xori {ij}, %true : i1\n%tie_before = arith.andi %earlier, %not_after : i1\n%counts = arith.ori {ji}, %tie_before : i1\n%add = arith.select %counts, %one, %zero : i32\n%sum = arith.addi %acc, %add : i32\nlinalg.yield %sum : i32\n}} -> {ranks_type}",
        maps.join(", "),
        ins_i.join(", "),
        ins_i.join(", "),
        types.join(", "),
        types.join(", "),
        args.join(", "),
    );
    // 2. Each position takes the element of its rank.
    let maps: Vec<String> = [format!("affine_map<({all}) -> ({along})>")]
        .into_iter()
        .chain(std::iter::repeat_n(format!("affine_map<({all}) -> ({along})>"), n))
        .chain(std::iter::repeat_n(format!("affine_map<({all}) -> ({own})>"), n))
        .collect();
    let mut outs = Vec::new();
    for (k, r) in results.iter().enumerate() {
        let zero = if r.is_float() { format!("0.0 : {}", r.element) } else { format!("0 : {}", r.element) };
        let _ = writeln!(
            text,
            "%z{k} = arith.constant {zero}\n%e{k} = tensor.empty() : {t}\n%f{k} = linalg.fill ins(%z{k} : {el}) outs(%e{k} : {t}) -> {t}",
            t = r.text(),
            el = r.element
        );
        outs.push(format!("%f{k}"));
    }
    let out_types: Vec<String> = results.iter().map(Tensor::text).collect();
    let args: Vec<String> = ["%rank: i32".to_string()]
        .into_iter()
        .chain((0..n).map(|k| format!("%x{k}: {}", operands[k].element)))
        .chain((0..n).map(|k| format!("%acc{k}: {}", results[k].element)))
        .collect();
    let mut body = format!("%p = linalg.index {dimension} : index\n%pi = arith.index_cast %p : index to i32\n%here = arith.cmpi eq, %rank, %pi : i32\n");
    for (k, r) in results.iter().enumerate() {
        let _ = writeln!(body, "%v{k} = arith.select %here, %x{k}, %acc{k} : {}", r.element);
    }
    let yielded: Vec<String> = (0..n).map(|k| format!("%v{k}")).collect();
    let elements: Vec<&str> = results.iter().map(|r| r.element.as_str()).collect();
    let _ = write!(
        text,
        "%r:{n} = linalg.generic {{indexing_maps = [{}], iterator_types = [{iterators}]}} ins(%ranks, {} : {ranks_type}, {}) outs({} : {}) {{\n^bb0({}):\n{body}linalg.yield {} : {}\n}} -> ({})\nreturn {} : {}",
        maps.join(", "),
        ins_i.join(", "),
        types.join(", "),
        outs.join(", "),
        out_types.join(", "),
        args.join(", "),
        yielded.join(", "),
        elements.join(", "),
        out_types.join(", "),
        (0..n).map(|k| format!("%r#{k}")).collect::<Vec<_>>().join(", "),
        out_types.join(", "),
    );
    Ok(text)
}

/// Parses `body` as a function of `op`'s operands and results in `op`'s context and clones its
/// ops in place of `op`, at `op`'s location.
fn inline(op: Op, body: &str) -> Result<(), OpError> {
    let operands = ir::operands(op);
    let results = ir::results(op);
    let arg_types: Vec<String> = operands.iter().map(|&v| ir::type_text(ir::value_type(v))).collect();
    let result_types: Vec<String> = results.iter().map(|&v| ir::type_text(ir::value_type(v))).collect();
    let args: Vec<String> = arg_types.iter().enumerate().map(|(i, t)| format!("%a{i}: {t}")).collect();
    let text = format!("func.func @legalized({}) -> ({}) {{\n{body}\n}}\n", args.join(", "), result_types.join(", "));
    let context = unsafe { mlirOperationGetContext(op) };
    let module = unsafe { mlirModuleCreateParse(context, ir::string_ref(&text)) };
    if module.ptr.is_null() {
        return Err(error_at(
            op,
            format!("internal error: the legalization of '{}' does not parse:\n{text}", ir::op_name(op)),
        ));
    }
    let func = ir::block_ops(unsafe { mlirModuleGetBody(module) })[0];
    let block = ir::blocks(ir::regions(func)[0])[0];
    let mut map: HashMap<usize, Val> = HashMap::new();
    for (arg, &value) in ir::block_arguments(block).into_iter().zip(&operands) {
        map.insert(ir::value_key(arg), value);
    }
    let location = ir::location(op);
    let target = ir::op_block(op);
    let ops = ir::block_ops(block);
    let (ret, body_ops) = ops.split_last().expect("a template ends in return");
    for &inner in body_ops {
        let clone = ir::clone_remapped(inner, target, op, &mut map);
        for nested in std::iter::once(clone).chain(ir::nested_ops(clone)) {
            ir::set_location(nested, location);
        }
    }
    for (old, new) in results.iter().zip(ir::operands(*ret)) {
        let new = map.get(&ir::value_key(new)).copied().unwrap_or(new);
        ir::replace_all_uses(*old, new);
    }
    unsafe { mlirModuleDestroy(module) };
    ir::erase(op);
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Differential tests: random `dot_general`s (any batch, contracting and free dimensions, in
    //! any order) and `broadcast_in_dim` + `reduce` chains, lowered to LLVM, run, and compared
    //! bit for bit with the specification's definitions transcribed directly.

    use crate::testing::{coordinates, f32_tensor, f32_type, f32_values, offset, run_main};
    use proptest::prelude::*;
    use remat_runtime::SplitMix64;

    /// Values whose products and sums round: a bit-for-bit comparison checks the order too.
    fn values(rng: &mut SplitMix64, n: usize) -> Vec<f32> {
        (0..n).map(|_| (rng.below(2001) as f32 - 1000.0) * 0.001_37).collect()
    }

    fn list(v: &[usize]) -> String {
        v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    }

    #[derive(Debug)]
    struct Dot {
        lhs: Vec<usize>,
        rhs: Vec<usize>,
        lb: Vec<usize>,
        rb: Vec<usize>,
        lc: Vec<usize>,
        rc: Vec<usize>,
        a: Vec<f32>,
        b: Vec<f32>,
    }

    /// Dimension roles (0 batch, 1 contracting, 2 free) placed in a random order.
    fn shuffled(rng: &mut SplitMix64, mut roles: Vec<(u8, usize)>) -> Vec<(u8, usize)> {
        for i in (1..roles.len()).rev() {
            roles.swap(i, rng.below(i as u64 + 1) as usize);
        }
        roles
    }

    fn generate_dot(seed: u64) -> Dot {
        let mut rng = SplitMix64::new(seed);
        let batch: Vec<usize> = (0..rng.below(2)).map(|_| rng.range(1, 3) as usize).collect();
        let contracting: Vec<usize> = (0..rng.range(1, 2)).map(|_| rng.range(1, 4) as usize).collect();
        let side = |rng: &mut SplitMix64| -> Vec<(u8, usize)> {
            let free: Vec<usize> = (0..rng.below(3)).map(|_| rng.range(1, 3) as usize).collect();
            let roles: Vec<(u8, usize)> = batch
                .iter()
                .enumerate()
                .map(|(i, _)| (0, i))
                .chain(contracting.iter().enumerate().map(|(i, _)| (1, i)))
                .chain(free.iter().map(|&n| (2, n)))
                .collect();
            shuffled(rng, roles)
        };
        let (left, right) = (side(&mut rng), side(&mut rng));
        let shape = |roles: &[(u8, usize)]| -> Vec<usize> {
            roles
                .iter()
                .map(|&(r, k)| {
                    if r == 0 {
                        batch[k]
                    } else if r == 1 {
                        contracting[k]
                    } else {
                        k
                    }
                })
                .collect()
        };
        let dims_of = |roles: &[(u8, usize)], role: u8, count: usize| -> Vec<usize> {
            (0..count).map(|k| roles.iter().position(|&(r, i)| r == role && i == k).unwrap()).collect()
        };
        let (lhs, rhs) = (shape(&left), shape(&right));
        let a = values(&mut rng, lhs.iter().product());
        let b = values(&mut rng, rhs.iter().product());
        Dot {
            lb: dims_of(&left, 0, batch.len()),
            rb: dims_of(&right, 0, batch.len()),
            lc: dims_of(&left, 1, contracting.len()),
            rc: dims_of(&right, 1, contracting.len()),
            lhs,
            rhs,
            a,
            b,
        }
    }

    fn free(shape: &[usize], batch: &[usize], contracting: &[usize]) -> Vec<usize> {
        (0..shape.len()).filter(|d| !batch.contains(d) && !contracting.contains(d)).collect()
    }

    fn dot_result_shape(c: &Dot) -> Vec<usize> {
        let mut shape: Vec<usize> = c.lb.iter().map(|&d| c.lhs[d]).collect();
        shape.extend(free(&c.lhs, &c.lb, &c.lc).iter().map(|&d| c.lhs[d]));
        shape.extend(free(&c.rhs, &c.rb, &c.rc).iter().map(|&d| c.rhs[d]));
        shape
    }

    /// The specification's `dot_general`: per result element, the sum over the contracting
    /// indices (row-major) of lhs × rhs, from zero.
    fn dot_reference(c: &Dot) -> Vec<f32> {
        let (lf, rf) = (free(&c.lhs, &c.lb, &c.lc), free(&c.rhs, &c.rb, &c.rc));
        let contracting: Vec<usize> = c.lc.iter().map(|&d| c.lhs[d]).collect();
        coordinates(&dot_result_shape(c))
            .into_iter()
            .map(|out| {
                let mut acc = 0.0f32;
                for k in coordinates(&contracting) {
                    let mut li = vec![0; c.lhs.len()];
                    let mut ri = vec![0; c.rhs.len()];
                    for (i, (&l, &r)) in c.lb.iter().zip(&c.rb).enumerate() {
                        li[l] = out[i];
                        ri[r] = out[i];
                    }
                    for (i, &l) in lf.iter().enumerate() {
                        li[l] = out[c.lb.len() + i];
                    }
                    for (i, &r) in rf.iter().enumerate() {
                        ri[r] = out[c.lb.len() + lf.len() + i];
                    }
                    for (i, (&l, &r)) in c.lc.iter().zip(&c.rc).enumerate() {
                        li[l] = k[i];
                        ri[r] = k[i];
                    }
                    acc += c.a[offset(&c.lhs, &li)] * c.b[offset(&c.rhs, &ri)];
                }
                acc
            })
            .collect()
    }

    fn dot_module(c: &Dot) -> String {
        let (l, r, o) = (f32_type(&c.lhs), f32_type(&c.rhs), f32_type(&dot_result_shape(c)));
        format!(
            r#"func.func @main(%a: {l}, %b: {r}) -> {o} {{
  %0 = "stablehlo.dot_general"(%a, %b) <{{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [{}], rhs_batching_dimensions = [{}], lhs_contracting_dimensions = [{}], rhs_contracting_dimensions = [{}]>}}> : ({l}, {r}) -> {o}
  return %0 : {o}
}}"#,
            list(&c.lb),
            list(&c.rb),
            list(&c.lc),
            list(&c.rc)
        )
    }

    /// A broadcast of a random operand into a larger result (some dimensions kept, some of size
    /// 1 expanded, some new), then a sum over some of the result's dimensions.
    #[derive(Debug)]
    struct BroadcastReduce {
        operand: Vec<usize>,
        result: Vec<usize>,
        dimensions: Vec<usize>,
        reduced: Vec<usize>,
        x: Vec<f32>,
    }

    fn generate_broadcast(seed: u64) -> BroadcastReduce {
        let mut rng = SplitMix64::new(seed);
        let result: Vec<usize> = (0..rng.range(1, 3)).map(|_| rng.range(1, 4) as usize).collect();
        // Operand dimensions: an increasing subset of the result's, each of its size or 1.
        let dimensions: Vec<usize> = (0..result.len()).filter(|_| rng.chance(60)).collect();
        let operand: Vec<usize> = dimensions.iter().map(|&d| if rng.chance(30) { 1 } else { result[d] }).collect();
        let reduced: Vec<usize> = (0..result.len()).filter(|_| rng.chance(50)).collect();
        let x = values(&mut rng, operand.iter().product());
        BroadcastReduce { operand, result, dimensions, reduced, x }
    }

    fn broadcast_reference(c: &BroadcastReduce) -> Vec<f32> {
        let kept: Vec<usize> = (0..c.result.len()).filter(|d| !c.reduced.contains(d)).collect();
        let out_shape: Vec<usize> = kept.iter().map(|&d| c.result[d]).collect();
        let reduced_shape: Vec<usize> = c.reduced.iter().map(|&d| c.result[d]).collect();
        coordinates(&out_shape)
            .into_iter()
            .map(|out| {
                let mut acc = 0.5f32;
                for r in coordinates(&reduced_shape) {
                    let mut index = vec![0; c.result.len()];
                    for (i, &d) in kept.iter().enumerate() {
                        index[d] = out[i];
                    }
                    for (i, &d) in c.reduced.iter().enumerate() {
                        index[d] = r[i];
                    }
                    let read: Vec<usize> = c
                        .dimensions
                        .iter()
                        .enumerate()
                        .map(|(i, &d)| if c.operand[i] == 1 { 0 } else { index[d] })
                        .collect();
                    acc += c.x[offset(&c.operand, &read)];
                }
                acc
            })
            .collect()
    }

    fn broadcast_module(c: &BroadcastReduce) -> String {
        let kept: Vec<usize> = (0..c.result.len()).filter(|d| !c.reduced.contains(d)).map(|d| c.result[d]).collect();
        let (x, b, o) = (f32_type(&c.operand), f32_type(&c.result), f32_type(&kept));
        format!(
            r#"func.func @main(%x: {x}) -> {o} {{
  %b = "stablehlo.broadcast_in_dim"(%x) <{{broadcast_dimensions = array<i64{colon}{}>}}> : ({x}) -> {b}
  %init = "stablehlo.constant"() <{{value = dense<0.5> : tensor<f32>}}> : () -> tensor<f32>
  %r = "stablehlo.reduce"(%b, %init) <{{dimensions = array<i64{rcolon}{}>}}> ({{
  ^bb0(%acc: tensor<f32>, %e: tensor<f32>):
    %s = "stablehlo.add"(%acc, %e) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }}) : ({b}, tensor<f32>) -> {o}
  return %r : {o}
}}"#,
            list(&c.dimensions),
            list(&c.reduced),
            colon = if c.dimensions.is_empty() { "" } else { ": " },
            rcolon = if c.reduced.is_empty() { "" } else { ": " },
        )
    }

    /// A random gather the specification's constraints accept: batching dimensions, collapsed
    /// and offset dimensions, any index_vector_dim (implicit when it is the indices' rank), and
    /// start indices out of range (clamped).
    #[derive(Debug)]
    struct Gather {
        operand: Vec<usize>,
        indices: Vec<usize>,
        result: Vec<usize>,
        offset_dims: Vec<usize>,
        collapsed: Vec<usize>,
        operand_batching: Vec<usize>,
        indices_batching: Vec<usize>,
        start_index_map: Vec<usize>,
        index_vector_dim: usize,
        slice_sizes: Vec<usize>,
        x: Vec<f32>,
        starts: Vec<i32>,
    }

    fn generate_gather(seed: u64) -> Gather {
        let mut rng = SplitMix64::new(seed);
        let rank = rng.range(1, 3) as usize;
        let operand: Vec<usize> = (0..rank).map(|_| rng.range(1, 4) as usize).collect();
        let mut dims: Vec<usize> = (0..rank).collect();
        for i in (1..dims.len()).rev() {
            dims.swap(i, rng.below(i as u64 + 1) as usize);
        }
        // At most one batching dimension (when the operand has two or more), then the mapped
        // start dimensions among the rest, some of them collapsed.
        let operand_batching: Vec<usize> = if rank >= 2 && rng.chance(40) { vec![dims.pop().unwrap()] } else { vec![] };
        let mapped = rng.range(1, dims.len() as u64) as usize;
        let start_index_map: Vec<usize> = dims[..mapped].to_vec();
        let mut collapsed: Vec<usize> = start_index_map.iter().copied().filter(|_| rng.chance(50)).collect();
        collapsed.sort_unstable();
        let slice_sizes: Vec<usize> = (0..rank)
            .map(|d| {
                if collapsed.contains(&d) || operand_batching.contains(&d) {
                    1
                } else {
                    rng.range(1, operand[d] as u64) as usize
                }
            })
            .collect();
        // Indices: batch dimensions (the batching one first, of the operand's size), the index
        // vector at index_vector_dim, or implicit when it is the rank and one start is mapped.
        let mut batch: Vec<usize> = operand_batching.iter().map(|&d| operand[d]).collect();
        batch.extend((0..rng.below(2)).map(|_| rng.range(1, 3) as usize));
        let implicit = start_index_map.len() == 1 && rng.chance(30);
        let index_vector_dim = if implicit { batch.len() } else { rng.below(batch.len() as u64 + 1) as usize };
        let mut indices = batch.clone();
        if !implicit {
            indices.insert(index_vector_dim, start_index_map.len());
        }
        // The batching dimension is batch position 0; in the indices, shifted past index_vector_dim.
        let indices_batching: Vec<usize> =
            operand_batching.iter().map(|_| if index_vector_dim == 0 && !implicit { 1 } else { 0 }).collect();
        let offsets = rank - collapsed.len() - operand_batching.len();
        let result_rank = batch.len() + offsets;
        let mut positions: Vec<usize> = (0..result_rank).collect();
        for i in (1..positions.len()).rev() {
            positions.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut offset_dims = positions[..offsets].to_vec();
        offset_dims.sort_unstable();
        let offset_sizes: Vec<usize> = (0..rank)
            .filter(|d| !collapsed.contains(d) && !operand_batching.contains(d))
            .map(|d| slice_sizes[d])
            .collect();
        let (mut b, mut o) = (batch.iter(), offset_sizes.iter());
        let result: Vec<usize> =
            (0..result_rank).map(|d| *if offset_dims.contains(&d) { o.next() } else { b.next() }.unwrap()).collect();
        let x = values(&mut rng, operand.iter().product());
        let starts = (0..indices.iter().product::<usize>()).map(|_| rng.below(8) as i32 - 2).collect();
        Gather {
            operand,
            indices,
            result,
            offset_dims,
            collapsed,
            operand_batching,
            indices_batching,
            start_index_map,
            index_vector_dim,
            slice_sizes,
            x,
            starts,
        }
    }

    /// The specification's `gather`, transcribed.
    fn gather_reference(c: &Gather) -> Vec<f32> {
        let batch_dims: Vec<usize> = (0..c.result.len()).filter(|d| !c.offset_dims.contains(d)).collect();
        coordinates(&c.result)
            .into_iter()
            .map(|ri| {
                let batch_index: Vec<usize> = batch_dims.iter().map(|&d| ri[d]).collect();
                let start = |k: usize| -> i64 {
                    let mut index = batch_index.clone();
                    if c.index_vector_dim < c.indices.len() {
                        index.insert(c.index_vector_dim, k);
                    }
                    i64::from(c.starts[offset(&c.indices, &index)])
                };
                let mut operand_index = vec![0usize; c.operand.len()];
                for (k, &d) in c.start_index_map.iter().enumerate() {
                    let limit = (c.operand[d] - c.slice_sizes[d]) as i64;
                    operand_index[d] = start(k).clamp(0, limit) as usize;
                }
                for (&od, &sd) in c.operand_batching.iter().zip(&c.indices_batching) {
                    operand_index[od] += batch_index[if sd < c.index_vector_dim { sd } else { sd - 1 }];
                }
                let offset_operand: Vec<usize> = (0..c.operand.len())
                    .filter(|d| !c.collapsed.contains(d) && !c.operand_batching.contains(d))
                    .collect();
                for (&od, &rd) in offset_operand.iter().zip(&c.offset_dims) {
                    operand_index[od] += ri[rd];
                }
                c.x[offset(&c.operand, &operand_index)]
            })
            .collect()
    }

    fn gather_module(c: &Gather) -> String {
        let mut fields = Vec::new();
        for (name, dims) in [
            ("offset_dims", &c.offset_dims),
            ("collapsed_slice_dims", &c.collapsed),
            ("operand_batching_dims", &c.operand_batching),
            ("start_indices_batching_dims", &c.indices_batching),
            ("start_index_map", &c.start_index_map),
        ] {
            if !dims.is_empty() {
                fields.push(format!("{name} = [{}]", list(dims)));
            }
        }
        fields.push(format!("index_vector_dim = {}", c.index_vector_dim));
        let dims: String = c.indices.iter().map(|d| format!("{d}x")).collect();
        let (x, i, r) = (f32_type(&c.operand), format!("tensor<{dims}i32>"), f32_type(&c.result));
        format!(
            r#"func.func @main(%x: {x}, %i: {i}) -> {r} {{
  %0 = "stablehlo.gather"(%x, %i) <{{dimension_numbers = #stablehlo.gather<{}>, indices_are_sorted = false, slice_sizes = array<i64: {}>}}> : ({x}, {i}) -> {r}
  return %0 : {r}
}}"#,
            fields.join(", "),
            list(&c.slice_sizes)
        )
    }

    /// A random convolution: one or two spatial dimensions, every layout, strides, padding
    /// (negative too), lhs and rhs dilation, window reversal. Values are small integers, so every
    /// sum is exact in any order: this checks which elements meet, not the summation order (the
    /// bit-for-bit comparison with jaxlib's order is `lit-tests/run/stablehlo.test`'s ResNet).
    #[derive(Debug)]
    struct Conv {
        spatial: usize,
        lhs_layout: Vec<String>,
        rhs_layout: Vec<String>,
        out_layout: Vec<String>,
        batch: usize,
        cin: usize,
        cout: usize,
        input: Vec<usize>,
        kernel: Vec<usize>,
        output: Vec<usize>,
        strides: Vec<usize>,
        padding: Vec<(i64, i64)>,
        lhs_dilation: Vec<usize>,
        rhs_dilation: Vec<usize>,
        reversal: Vec<bool>,
        /// feature_group_count and batch_group_count (at most one above 1); `cin` is the
        /// kernel's input features (per group), `batch` the result's batch.
        feature_groups: usize,
        batch_groups: usize,
        x: Vec<f32>,
        w: Vec<f32>,
    }

    fn integers(rng: &mut SplitMix64, n: usize) -> Vec<f32> {
        (0..n).map(|_| rng.below(7) as f32 - 3.0).collect()
    }

    fn generate_conv(seed: u64) -> Conv {
        let mut rng = SplitMix64::new(seed);
        loop {
            let spatial = rng.range(1, 2) as usize;
            let (feature_groups, batch_groups) = match rng.below(4) {
                0 => (rng.range(2, 3) as usize, 1),
                1 => (1, rng.range(2, 3) as usize),
                _ => (1, 1),
            };
            let (batch, cin) = (rng.range(1, 2) as usize, rng.range(1, 3) as usize);
            let cout = feature_groups * batch_groups * rng.range(1, 2) as usize;
            let input: Vec<usize> = (0..spatial).map(|_| rng.range(1, 5) as usize).collect();
            let kernel: Vec<usize> = (0..spatial).map(|_| rng.range(1, 3) as usize).collect();
            let strides: Vec<usize> = (0..spatial).map(|_| rng.range(1, 2) as usize).collect();
            let lhs_dilation: Vec<usize> = (0..spatial).map(|_| rng.range(1, 2) as usize).collect();
            let rhs_dilation: Vec<usize> = (0..spatial).map(|_| rng.range(1, 2) as usize).collect();
            let padding: Vec<(i64, i64)> = (0..spatial)
                .map(|s| {
                    let low = if lhs_dilation[s] > 1 { 0 } else { -1 };
                    (rng.range(0, 3) as i64 + low, rng.range(0, 3) as i64 + low)
                })
                .collect();
            let reversal: Vec<bool> = (0..spatial).map(|_| rng.chance(30)).collect();
            let output: Option<Vec<usize>> = (0..spatial)
                .map(|s| {
                    let padded = ((input[s] - 1) * lhs_dilation[s] + 1) as i64 + padding[s].0 + padding[s].1;
                    let window = ((kernel[s] - 1) * rhs_dilation[s] + 1) as i64;
                    (padded >= window).then(|| ((padded - window) as usize) / strides[s] + 1)
                })
                .collect();
            let Some(output) = output else { continue };
            let layout = |rng: &mut SplitMix64, first: &str, second: &str| -> Vec<String> {
                let mut l: Vec<String> = [first.to_string(), second.to_string()]
                    .into_iter()
                    .chain((0..spatial).map(|d| d.to_string()))
                    .collect();
                for i in (1..l.len()).rev() {
                    l.swap(i, rng.below(i as u64 + 1) as usize);
                }
                l
            };
            let (lhs_layout, rhs_layout, out_layout) =
                (layout(&mut rng, "b", "f"), layout(&mut rng, "i", "o"), layout(&mut rng, "b", "f"));
            let mut conv = Conv {
                spatial,
                lhs_layout,
                rhs_layout,
                out_layout,
                batch,
                cin,
                cout,
                input,
                kernel,
                output,
                strides,
                padding,
                lhs_dilation,
                rhs_dilation,
                reversal,
                feature_groups,
                batch_groups,
                x: Vec::new(),
                w: Vec::new(),
            };
            conv.x = integers(&mut rng, conv.shape(&conv.lhs_layout, 'l').iter().product());
            conv.w = integers(&mut rng, conv.shape(&conv.rhs_layout, 'r').iter().product());
            return conv;
        }
    }

    impl Conv {
        /// The shape of the lhs (`'l'`), rhs (`'r'`) or result (`'o'`) in `layout`.
        fn shape(&self, layout: &[String], which: char) -> Vec<usize> {
            layout
                .iter()
                .map(|d| match (d.as_str(), which) {
                    ("b", 'l') => self.batch * self.batch_groups,
                    ("b", _) => self.batch,
                    ("f", 'l') => self.cin * self.feature_groups,
                    ("i", _) => self.cin,
                    ("f", _) | ("o", _) => self.cout,
                    (s, 'l') => self.input[s.parse::<usize>().unwrap()],
                    (s, 'r') => self.kernel[s.parse::<usize>().unwrap()],
                    (s, _) => self.output[s.parse::<usize>().unwrap()],
                })
                .collect()
        }

        /// `index` of named dimensions in `layout`'s order.
        fn at(layout: &[String], named: &dyn Fn(&str) -> usize) -> Vec<usize> {
            layout.iter().map(|d| named(d)).collect()
        }
    }

    /// The specification's convolution, transcribed: the input padded with zeros and dilated,
    /// the window's products summed over the output feature's group of input features (or of
    /// the batch).
    fn conv_reference(c: &Conv) -> Vec<f32> {
        let (lhs_shape, rhs_shape, out_shape) =
            (c.shape(&c.lhs_layout, 'l'), c.shape(&c.rhs_layout, 'r'), c.shape(&c.out_layout, 'o'));
        coordinates(&out_shape)
            .into_iter()
            .map(|oi| {
                let out_of = |d: &str| oi[c.out_layout.iter().position(|x| x == d).unwrap()];
                let (b, f) = (out_of("b"), out_of("f"));
                let feature_group = f / (c.cout / c.feature_groups);
                let batch_group = f / (c.cout / c.batch_groups);
                let mut acc = 0.0f32;
                for k in coordinates(&c.kernel) {
                    for ci in 0..c.cin {
                        // The padded, dilated input position, mapped back to the input.
                        let mut at = Vec::new();
                        for (s, &ks) in k.iter().enumerate() {
                            let p = (out_of(&s.to_string()) * c.strides[s] + ks * c.rhs_dilation[s]) as i64
                                - c.padding[s].0;
                            let dil = c.lhs_dilation[s] as i64;
                            if p < 0 || p % dil != 0 || p / dil >= c.input[s] as i64 {
                                break;
                            }
                            at.push((p / dil) as usize);
                        }
                        if at.len() < c.spatial {
                            continue;
                        }
                        let lhs_index = Conv::at(&c.lhs_layout, &|d| match d {
                            "b" => batch_group * c.batch + b,
                            "f" => feature_group * c.cin + ci,
                            s => at[s.parse::<usize>().unwrap()],
                        });
                        let rhs_index = Conv::at(&c.rhs_layout, &|d| match d {
                            "i" => ci,
                            "o" => f,
                            s => {
                                let s = s.parse::<usize>().unwrap();
                                if c.reversal[s] {
                                    c.kernel[s] - 1 - k[s]
                                } else {
                                    k[s]
                                }
                            }
                        });
                        acc += c.x[offset(&lhs_shape, &lhs_index)] * c.w[offset(&rhs_shape, &rhs_index)];
                    }
                }
                acc
            })
            .collect()
    }

    fn conv_module(c: &Conv) -> String {
        let (l, r, o) = (
            f32_type(&c.shape(&c.lhs_layout, 'l')),
            f32_type(&c.shape(&c.rhs_layout, 'r')),
            f32_type(&c.shape(&c.out_layout, 'o')),
        );
        let padding: Vec<String> = c.padding.iter().map(|(a, b)| format!("[{a}, {b}]")).collect();
        let reversal: Vec<&str> = c.reversal.iter().map(|&r| if r { "true" } else { "false" }).collect();
        format!(
            r#"func.func @main(%x: {l}, %w: {r}) -> {o} {{
  %0 = "stablehlo.convolution"(%x, %w) <{{batch_group_count = {} : i64, dimension_numbers = #stablehlo.conv<[{}]x[{}]->[{}]>, feature_group_count = {} : i64, lhs_dilation = array<i64: {}>, padding = dense<[{}]> : tensor<{}x2xi64>, rhs_dilation = array<i64: {}>, window_reversal = array<i1: {}>, window_strides = array<i64: {}>}}> : ({l}, {r}) -> {o}
  return %0 : {o}
}}"#,
            c.batch_groups,
            c.lhs_layout.join(", "),
            c.rhs_layout.join(", "),
            c.out_layout.join(", "),
            c.feature_groups,
            list(&c.lhs_dilation),
            padding.join(", "),
            c.spatial,
            list(&c.rhs_dilation),
            reversal.join(", "),
            list(&c.strides),
        )
    }

    /// JAX's argmax: a two-operand reduce whose body compares, ties to the lower index, and
    /// selects both; and a constant in a body.
    #[test]
    fn argmax_keeps_the_first_largest() {
        let text = r#"func.func @main(%x: tensor<2x4xf32>) -> (tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) {
  %i = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<2x4xi32>
  %v0 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
  %i0 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
  %r:2 = "stablehlo.reduce"(%x, %i, %v0, %i0) <{dimensions = array<i64: 1>}> ({
  ^bb0(%av: tensor<f32>, %ai: tensor<i32>, %bv: tensor<f32>, %bi: tensor<i32>):
    %gt = "stablehlo.compare"(%av, %bv) <{comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = "stablehlo.compare"(%av, %bv) <{comparison_direction = #stablehlo<comparison_direction EQ>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = "stablehlo.compare"(%ai, %bi) <{comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = "stablehlo.and"(%eq, %lt) : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %keep = "stablehlo.or"(%gt, %tie) : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %v = "stablehlo.select"(%keep, %av, %bv) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
    %j = "stablehlo.select"(%keep, %ai, %bi) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    "stablehlo.return"(%v, %j) : (tensor<f32>, tensor<i32>) -> ()
  }) : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
  %z = "stablehlo.constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %s = "stablehlo.reduce"(%x, %z) <{dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %two = "stablehlo.constant"() <{value = dense<2.0> : tensor<f32>}> : () -> tensor<f32>
    %d = "stablehlo.multiply"(%b, %two) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %t = "stablehlo.add"(%a, %d) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%t) : (tensor<f32>) -> ()
  }) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  return %r#0, %r#1, %s : tensor<2xf32>, tensor<2xi32>, tensor<2xf32>
}"#;
        let x = [1.0, 3.0, 3.0, 0.0, -1.0, -1.0, -2.0, -1.0];
        let outputs = run_main(text, vec![f32_tensor(&[2, 4], &x)]);
        assert_eq!(f32_values(&outputs[0]), vec![3.0, -1.0]);
        let indices: Vec<i32> =
            outputs[1].bytes().chunks(4).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(indices, vec![1, 0]);
        assert_eq!(f32_values(&outputs[2]), vec![14.0, -10.0]);
    }

    /// A random `select_and_scatter` (GE select, add scatter: JAX's max-pool gradient) with
    /// padding, strides below and above the window size, and ties among the operand's values.
    #[derive(Debug)]
    struct SelectScatter {
        operand: Vec<usize>,
        source: Vec<usize>,
        window: Vec<usize>,
        strides: Vec<usize>,
        padding: Vec<(usize, usize)>,
        x: Vec<f32>,
        s: Vec<f32>,
    }

    fn generate_select_scatter(seed: u64) -> SelectScatter {
        let mut rng = SplitMix64::new(seed);
        loop {
            let rank = rng.range(1, 4) as usize;
            let operand: Vec<usize> = (0..rank).map(|_| rng.range(1, 6) as usize).collect();
            let window: Vec<usize> = (0..rank).map(|_| rng.range(1, 4) as usize).collect();
            let strides: Vec<usize> = (0..rank).map(|_| rng.range(1, 4) as usize).collect();
            let padding: Vec<(usize, usize)> =
                (0..rank).map(|_| (rng.below(3) as usize, rng.below(3) as usize)).collect();
            let source: Vec<usize> = (0..rank)
                .map(|d| {
                    let padded = operand[d] + padding[d].0 + padding[d].1;
                    if window[d] > padded {
                        0
                    } else {
                        (padded - window[d]) / strides[d] + 1
                    }
                })
                .collect();
            if source.contains(&0) {
                continue;
            }
            // Few distinct operand values: windows with ties.
            let x = (0..operand.iter().product()).map(|_| rng.below(4) as f32).collect();
            let s = values(&mut rng, source.iter().product());
            return SelectScatter { operand, source, window, strides, padding, x, s };
        }
    }

    /// XLA's select_and_scatter: in each window (row-major, padding skipped) the first
    /// element is selected, and a later one replaces it unless `current >= candidate`; the
    /// source values are added to the init (0.25) in the source's row-major order.
    fn select_scatter_reference(c: &SelectScatter) -> Vec<f32> {
        let mut result = vec![0.25f32; c.x.len()];
        for o in coordinates(&c.source) {
            let mut selected: Option<(f32, usize)> = None;
            for w in coordinates(&c.window) {
                let position: Vec<i64> =
                    (0..o.len()).map(|d| (o[d] * c.strides[d] + w[d]) as i64 - c.padding[d].0 as i64).collect();
                if position.iter().zip(&c.operand).any(|(&p, &n)| p < 0 || p >= n as i64) {
                    continue;
                }
                let position: Vec<usize> = position.iter().map(|&p| p as usize).collect();
                let at = offset(&c.operand, &position);
                let x = c.x[at];
                match selected {
                    Some((current, _)) if current >= x => {}
                    _ => selected = Some((x, at)),
                }
            }
            if let Some((_, at)) = selected {
                result[at] += c.s[offset(&c.source, &o)];
            }
        }
        result
    }

    fn select_scatter_module(c: &SelectScatter) -> String {
        let (x, s) = (f32_type(&c.operand), f32_type(&c.source));
        let pads: Vec<String> = c.padding.iter().map(|(lo, hi)| format!("[{lo}, {hi}]")).collect();
        format!(
            r#"func.func @main(%x: {x}, %s: {s}) -> {x} {{
  %init = "stablehlo.constant"() <{{value = dense<0.25> : tensor<f32>}}> : () -> tensor<f32>
  %r = "stablehlo.select_and_scatter"(%x, %s, %init) <{{window_dimensions = array<i64: {}>, window_strides = array<i64: {}>, padding = dense<[{}]> : tensor<{}x2xi64>}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = "stablehlo.compare"(%a, %b) <{{comparison_direction = #stablehlo<comparison_direction GE>}}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }}, {{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%c) : (tensor<f32>) -> ()
  }}) : ({x}, {s}, tensor<f32>) -> {x}
  return %r : {x}
}}"#,
            list(&c.window),
            list(&c.strides),
            pads.join(", "),
            c.operand.len(),
        )
    }

    fn i32_tensor(values: &[i32], element: &str) -> remat_runtime::HostTensor {
        let spec = remat_runtime::TensorSpec::parse(&format!("tensor<{}x{element}>", values.len())).unwrap();
        let mut t = remat_runtime::HostTensor::zeros(spec);
        t.bytes_mut().copy_from_slice(&values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        t
    }

    fn i32_values(t: &remat_runtime::HostTensor) -> Vec<i32> {
        t.bytes().chunks(4).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect()
    }

    /// Integer division by zero and `MIN / -1` give XLA's results, never a trap.
    #[test]
    fn integer_division_is_total() {
        let text = r#"func.func @main(%a: tensor<6xi32>, %b: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>, tensor<6xui32>, tensor<6xui32>) {
  %0 = "stablehlo.divide"(%a, %b) : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %1 = "stablehlo.remainder"(%a, %b) : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %ua = "stablehlo.convert"(%a) : (tensor<6xi32>) -> tensor<6xui32>
  %ub = "stablehlo.convert"(%b) : (tensor<6xi32>) -> tensor<6xui32>
  %2 = "stablehlo.divide"(%ua, %ub) : (tensor<6xui32>, tensor<6xui32>) -> tensor<6xui32>
  %3 = "stablehlo.remainder"(%ua, %ub) : (tensor<6xui32>, tensor<6xui32>) -> tensor<6xui32>
  return %0, %1, %2, %3 : tensor<6xi32>, tensor<6xi32>, tensor<6xui32>, tensor<6xui32>
}"#;
        let a = [7, -7, 7, i32::MIN, 5, -1];
        let b = [2, 2, 0, -1, -3, 0];
        let out = run_main(text, vec![i32_tensor(&a, "i32"), i32_tensor(&b, "i32")]);
        assert_eq!(i32_values(&out[0]), [3, -3, -1, i32::MIN, -1, -1]);
        assert_eq!(i32_values(&out[1]), [1, -1, 7, 0, 2, -1]);
        let unsigned = |x: i32| x as u32;
        let quotients: Vec<i32> =
            a.iter().zip(&b).map(|(&x, &y)| if y == 0 { -1 } else { (unsigned(x) / unsigned(y)) as i32 }).collect();
        let remainders: Vec<i32> =
            a.iter().zip(&b).map(|(&x, &y)| if y == 0 { x } else { (unsigned(x) % unsigned(y)) as i32 }).collect();
        assert_eq!(i32_values(&out[2]), quotients);
        assert_eq!(i32_values(&out[3]), remainders);
    }

    /// Shifts by the width or more, unsigned compares, conversions and maxima.
    #[test]
    fn unsigned_and_shift_ops_follow_the_specification() {
        let text = r#"func.func @main(%x: tensor<5xui32>, %n: tensor<5xui32>) -> (tensor<5xui32>, tensor<5xui32>, tensor<5xi32>, tensor<5xi1>, tensor<5xf32>, tensor<5xui32>) {
  %0 = "stablehlo.shift_left"(%x, %n) : (tensor<5xui32>, tensor<5xui32>) -> tensor<5xui32>
  %1 = "stablehlo.shift_right_logical"(%x, %n) : (tensor<5xui32>, tensor<5xui32>) -> tensor<5xui32>
  %s = "stablehlo.convert"(%x) : (tensor<5xui32>) -> tensor<5xi32>
  %sn = "stablehlo.convert"(%n) : (tensor<5xui32>) -> tensor<5xi32>
  %2 = "stablehlo.shift_right_arithmetic"(%s, %sn) : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %3 = "stablehlo.compare"(%x, %n) <{comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type UNSIGNED>}> : (tensor<5xui32>, tensor<5xui32>) -> tensor<5xi1>
  %4 = "stablehlo.convert"(%x) : (tensor<5xui32>) -> tensor<5xf32>
  %5 = "stablehlo.maximum"(%x, %n) : (tensor<5xui32>, tensor<5xui32>) -> tensor<5xui32>
  return %0, %1, %2, %3, %4, %5 : tensor<5xui32>, tensor<5xui32>, tensor<5xi32>, tensor<5xi1>, tensor<5xf32>, tensor<5xui32>
}"#;
        let x: [u32; 5] = [1, 0x8000_0000, 0xffff_fff0, 12, 3];
        let n: [u32; 5] = [31, 32, 4, 40, 0xffff_ffff];
        let signed = |v: &[u32]| v.iter().map(|&u| u as i32).collect::<Vec<_>>();
        let out = run_main(text, vec![i32_tensor(&signed(&x), "ui32"), i32_tensor(&signed(&n), "ui32")]);
        let shl: Vec<u32> = x.iter().zip(&n).map(|(&v, &k)| if k >= 32 { 0 } else { v << k }).collect();
        let shr: Vec<u32> = x.iter().zip(&n).map(|(&v, &k)| if k >= 32 { 0 } else { v >> k }).collect();
        let sar: Vec<i32> = x.iter().zip(&n).map(|(&v, &k)| (v as i32) >> k.min(31)).collect();
        assert_eq!(i32_values(&out[0]), signed(&shl));
        assert_eq!(i32_values(&out[1]), signed(&shr));
        assert_eq!(i32_values(&out[2]), sar);
        let gt: Vec<u8> = x.iter().zip(&n).map(|(a, b)| u8::from(a > b)).collect();
        assert_eq!(out[3].bytes(), &gt[..]);
        assert_eq!(f32_values(&out[4]), x.iter().map(|&v| v as f32).collect::<Vec<_>>());
        assert_eq!(i32_values(&out[5]), signed(&x.iter().zip(&n).map(|(a, b)| *a.max(b)).collect::<Vec<_>>()));
    }

    /// JAX's argsort: a stable sort of (values, iota) by the values in IEEE total order (JAX's
    /// comparator), along a random dimension, against Rust's stable sort by `total_cmp`.
    #[test]
    fn sort_is_stable_in_total_order() {
        let mut cases = 0;
        for seed in 0..12u64 {
            let mut rng = SplitMix64::new(seed);
            let rank = rng.range(1, 3) as usize;
            let shape: Vec<usize> = (0..rank).map(|_| rng.range(1, 5) as usize).collect();
            let dimension = rng.below(rank as u64) as usize;
            let pool = [1.5f32, -0.0, 0.0, -2.0, f32::INFINITY, f32::NEG_INFINITY, 1.5, f32::NAN, -f32::NAN];
            let x: Vec<f32> =
                (0..shape.iter().product()).map(|_| pool[rng.below(pool.len() as u64) as usize]).collect();
            let t = f32_type(&shape);
            let i = t.replace("f32", "i32");
            let text = format!(
                r#"func.func @main(%x: {t}) -> ({t}, {i}) {{
  %iota = "stablehlo.iota"() <{{iota_dimension = {dimension} : i64}}> : () -> {i}
  %r:2 = "stablehlo.sort"(%x, %iota) <{{dimension = {dimension} : i64, is_stable = true}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = "stablehlo.compare"(%a, %b) <{{compare_type = #stablehlo<comparison_type TOTALORDER>, comparison_direction = #stablehlo<comparison_direction LT>}}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "stablehlo.return"(%lt) : (tensor<i1>) -> ()
  }}) : ({t}, {i}) -> ({t}, {i})
  return %r#0, %r#1 : {t}, {i}
}}"#
            );
            let out = run_main(&text, vec![f32_tensor(&shape, &x)]);
            // The reference, row by row along `dimension`.
            let mut values = x.clone();
            let mut indices = vec![0i32; x.len()];
            for start in coordinates(&shape).into_iter().filter(|c| c[dimension] == 0) {
                let at = |k: usize| {
                    let mut c = start.clone();
                    c[dimension] = k;
                    offset(&shape, &c)
                };
                let mut row: Vec<(f32, i32)> = (0..shape[dimension]).map(|k| (x[at(k)], k as i32)).collect();
                row.sort_by(|a, b| a.0.total_cmp(&b.0));
                for (k, (v, j)) in row.into_iter().enumerate() {
                    values[at(k)] = v;
                    indices[at(k)] = j;
                }
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&f32_values(&out[0])), bits(&values), "{text}");
            assert_eq!(i32_values(&out[1]), indices, "{text}");
            cases += 1;
        }
        assert_eq!(cases, 12);
    }

    #[derive(Debug)]
    struct Pad {
        operand: Vec<usize>,
        low: Vec<i64>,
        high: Vec<i64>,
        interior: Vec<i64>,
        x: Vec<f32>,
        value: f32,
    }

    impl Pad {
        fn result(&self) -> Vec<i64> {
            (0..self.operand.len())
                .map(|d| {
                    let n = self.operand[d] as i64;
                    self.low[d] + self.high[d] + n + (n - 1).max(0) * self.interior[d]
                })
                .collect()
        }
    }

    /// Edges of -1 to 2 (negative only without interior padding in the dimension) and
    /// interior padding of 0 to 2; results are never empty.
    fn generate_pad(seed: u64) -> Pad {
        let mut rng = SplitMix64::new(seed);
        loop {
            let rank = rng.range(1, 3) as usize;
            let operand: Vec<usize> = (0..rank).map(|_| rng.range(1, 4) as usize).collect();
            let interior: Vec<i64> = (0..rank).map(|_| rng.below(3) as i64).collect();
            let edge = |rng: &mut SplitMix64, d: usize| {
                if interior[d] > 0 {
                    rng.below(3) as i64
                } else {
                    rng.below(4) as i64 - 1
                }
            };
            let low: Vec<i64> = (0..rank).map(|d| edge(&mut rng, d)).collect();
            let high: Vec<i64> = (0..rank).map(|d| edge(&mut rng, d)).collect();
            let x = values(&mut rng, operand.iter().product());
            let case = Pad { operand, low, high, interior, x, value: 0.5 };
            if case.result().iter().all(|&n| n > 0) {
                return case;
            }
        }
    }

    fn pad_module(c: &Pad) -> String {
        let result: Vec<usize> = c.result().iter().map(|&n| n as usize).collect();
        let (x, r) = (f32_type(&c.operand), f32_type(&result));
        let ints = |v: &[i64]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        format!(
            r#"func.func @main(%x: {x}) -> {r} {{
  %v = "stablehlo.constant"() <{{value = dense<{:?}> : tensor<f32>}}> : () -> tensor<f32>
  %0 = "stablehlo.pad"(%x, %v) <{{edge_padding_low = array<i64: {}>, edge_padding_high = array<i64: {}>, interior_padding = array<i64: {}>}}> : ({x}, tensor<f32>) -> {r}
  return %0 : {r}
}}"#,
            c.value,
            ints(&c.low),
            ints(&c.high),
            ints(&c.interior)
        )
    }

    /// The specification's `pad`: result element `i` is operand element `j` where
    /// `i = low + j * (interior + 1)` in every dimension, else the padding value.
    fn pad_reference(c: &Pad) -> Vec<f32> {
        let result: Vec<usize> = c.result().iter().map(|&n| n as usize).collect();
        coordinates(&result)
            .iter()
            .map(|i| {
                let mut j = Vec::new();
                for (d, &at) in i.iter().enumerate() {
                    let q = at as i64 - c.low[d];
                    let step = c.interior[d] + 1;
                    if q < 0 || q % step != 0 || q / step >= c.operand[d] as i64 {
                        return c.value;
                    }
                    j.push((q / step) as usize);
                }
                c.x[offset(&c.operand, &j)]
            })
            .collect()
    }

    /// The specification's example: a 3x1 window with stride 2 and one row of padding.
    #[test]
    fn select_and_scatter_matches_the_specifications_example() {
        let case = SelectScatter {
            operand: vec![4, 2],
            source: vec![2, 2],
            window: vec![3, 1],
            strides: vec![2, 1],
            padding: vec![(0, 1), (0, 0)],
            x: vec![1.0, 5.0, 2.0, 5.0, 3.0, 6.0, 4.0, 4.0],
            s: vec![5.0, 6.0, 7.0, 8.0],
        };
        let outputs = run_main(
            &select_scatter_module(&case),
            vec![f32_tensor(&case.operand, &case.x), f32_tensor(&case.source, &case.s)],
        );
        // The example's result with init 0, plus this test's init 0.25 everywhere.
        let expected: Vec<f32> = [0.0, 0.0, 0.0, 0.0, 5.0, 14.0, 7.0, 0.0].iter().map(|v| v + 0.25).collect();
        assert_eq!(f32_values(&outputs[0]), expected);
        assert_eq!(select_scatter_reference(&case), expected);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn convolution_sums_the_specifications_windows(seed in any::<u64>()) {
            let case = generate_conv(seed);
            let text = conv_module(&case);
            let outputs = run_main(&text, vec![
                f32_tensor(&case.shape(&case.lhs_layout, 'l'), &case.x),
                f32_tensor(&case.shape(&case.rhs_layout, 'r'), &case.w),
            ]);
            prop_assert_eq!(f32_values(&outputs[0]), conv_reference(&case), "{:?}\n{}", case, text);
        }

        #[test]
        fn select_and_scatter_adds_into_the_specifications_selections(seed in any::<u64>()) {
            let case = generate_select_scatter(seed);
            let text = select_scatter_module(&case);
            let outputs = run_main(&text, vec![f32_tensor(&case.operand, &case.x), f32_tensor(&case.source, &case.s)]);
            prop_assert_eq!(f32_values(&outputs[0]), select_scatter_reference(&case), "{:?}\n{}", case, text);
        }

        #[test]
        fn pad_places_the_specifications_elements(seed in any::<u64>()) {
            let case = generate_pad(seed);
            let text = pad_module(&case);
            let outputs = run_main(&text, vec![f32_tensor(&case.operand, &case.x)]);
            prop_assert_eq!(f32_values(&outputs[0]), pad_reference(&case), "{:?}\n{}", case, text);
        }

        #[test]
        fn gather_reads_the_specifications_elements(seed in any::<u64>()) {
            let case = generate_gather(seed);
            let text = gather_module(&case);
            let mut indices = remat_runtime::HostTensor::zeros(
                remat_runtime::TensorSpec::parse(&format!("tensor<{}i32>", case.indices.iter().map(|d| format!("{d}x")).collect::<String>())).unwrap(),
            );
            indices.bytes_mut().copy_from_slice(&case.starts.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
            let outputs = run_main(&text, vec![f32_tensor(&case.operand, &case.x), indices]);
            prop_assert_eq!(f32_values(&outputs[0]), gather_reference(&case), "{:?}\n{}", case, text);
        }

        #[test]
        fn dot_general_computes_the_specifications_sums(seed in any::<u64>()) {
            let case = generate_dot(seed);
            let text = dot_module(&case);
            let outputs = run_main(&text, vec![f32_tensor(&case.lhs, &case.a), f32_tensor(&case.rhs, &case.b)]);
            prop_assert_eq!(f32_values(&outputs[0]), dot_reference(&case), "{:?}\n{}", case, text);
        }

        #[test]
        fn broadcast_then_reduce_computes_the_specifications_values(seed in any::<u64>()) {
            let case = generate_broadcast(seed);
            let text = broadcast_module(&case);
            let outputs = run_main(&text, vec![f32_tensor(&case.operand, &case.x)]);
            prop_assert_eq!(f32_values(&outputs[0]), broadcast_reference(&case), "{:?}\n{}", case, text);
        }
    }
}
