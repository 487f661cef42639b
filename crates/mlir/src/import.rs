//! MLIR function → [`Graph`].
//!
//! Phase 1 of 3: *normalize* the function in place — inline calls to private functions (JAX
//! exports are full of them; MLIR 22's own inliner crashes beside unregistered region ops),
//! unroll loops whose trip count is static ([`crate::unroll`]), and
//! give every destination-passing op its own `tensor.empty` / `linalg.fill` init (a `cse` run
//! shares them; inits it hoisted out of regions go back in), and dissolve `stablehlo.optimization_barrier`s (`jax.checkpoint` puts them
//! there to stop XLA from merging recomputations; the barrier's results are its operands), and
//! then, where there were barriers (or always, with `MergeRecomputation::All`), merge the
//! recomputation they kept apart into the ops it repeats (constant index arithmetic folded, a scan's
//! stack-and-reshape round trips undone, upstream CSE), so remat-opt plans all recomputation
//! itself, and point uses of a loop's invariant results at its operands. All keep the
//! program's meaning.
//! Phase 2 of 3: *group* ops into nodes: a destination-passing op with the init ops that
//! produce its `outs` is one node, so they are moved and cloned together.
//! Phase 3 of 3: *measure* each node: bytes of its results (views and constants own none),
//! cost, purity, and its inputs — including values its regions capture from the function body.

use crate::ir::{self, Op, Val};
use crate::kept_loop;
use crate::ops;
use crate::unroll;
use crate::unstack;
use crate::{CostModel, MlirError};
use indexmap::IndexMap;
use mlir_sys::{MlirBlock, MlirOperation};
use remat_graph::{Graph, GraphBuilder, NodeId, NodeSpec};

/// A planned function's graph plus the IR handles the rewriter needs.
pub struct ImportedFunction {
    /// The function's symbol name.
    pub name: String,
    /// The graph: arguments first (ids `0..arguments`), then one node per op group in body order.
    pub graph: Graph,
    /// The function's own order of its nodes: the baseline schedule.
    pub order: Vec<NodeId>,
    /// For each node, its ops in body order (init ops first); empty for arguments.
    pub(crate) groups: Vec<Vec<MlirOperation>>,
    /// For each node, the op whose results are the node's value (`None` for arguments).
    pub(crate) mains: Vec<Option<MlirOperation>>,
    pub(crate) body: MlirBlock,
    pub(crate) terminator: MlirOperation,
    pub(crate) func: MlirOperation,
    /// Loops left as single nodes, each with why (see [`crate::unroll`]): warnings.
    pub warnings: Vec<MlirError>,
    /// What the importer changed in the function before grouping it into nodes.
    pub normalized: Normalization,
}

/// What importing changed in a function beyond inlining and grouping: loops unrolled
/// ([`crate::unroll`]) and reads of stacked tensors forwarded ([`crate::unstack`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Normalization {
    /// `stablehlo.while` loops replaced by their iterations.
    pub loops_unrolled: usize,
    /// Slices of stacked tensors replaced by the value written there.
    pub forwarded_reads: usize,
    /// Ops erased because only those reads used them (the reads, writes and stacks).
    pub erased_ops: usize,
    /// Ops of the recomputation the input wrote (`jax.checkpoint`'s) merged into the ops they
    /// repeat, and the bookkeeping left unused ([`ImportOptions::merge_recomputation`]).
    pub merged_ops: usize,
}

impl Normalization {
    /// Whether importing changed anything besides inlining and grouping.
    pub fn is_empty(&self) -> bool {
        *self == Normalization::default()
    }

    /// Both normalizations' counts together.
    pub fn and(self, other: Normalization) -> Normalization {
        Normalization {
            loops_unrolled: self.loops_unrolled + other.loops_unrolled,
            forwarded_reads: self.forwarded_reads + other.forwarded_reads,
            erased_ops: self.erased_ops + other.erased_ops,
            merged_ops: self.merged_ops + other.merged_ops,
        }
    }
}

impl ImportedFunction {
    /// `file:line:col` of the function, for diagnostics about it.
    pub fn location(&self) -> Option<String> {
        Some(ir::location_text(ir::location(self.func)))
    }
}

/// Options for [`import_function`].
#[derive(Clone, Debug, PartialEq)]
pub struct ImportOptions {
    /// How to estimate the cost of a node.
    pub cost_model: CostModel,
    /// `stablehlo.while` loops with a static trip count up to this are unrolled (0: none).
    pub unroll_limit: usize,
    /// Loops are unrolled only if, all unrolled, they add at most this many ops; past it,
    /// every loop stays whole.
    pub unroll_max_ops: usize,
    /// Mark elementwise ops that may write into a dying input's buffer
    /// ([`remat_graph::Node::reuses`]).
    pub buffer_reuse: bool,
    /// Which recomputation the input already does is merged into the ops it repeats, so the
    /// planner decides what to keep and what to recompute ([`MergeRecomputation`]).
    pub merge_recomputation: MergeRecomputation,
}

/// What importing merges of the recomputation an input already does (`--checkpoints`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MergeRecomputation {
    /// Nothing: the step is planned as written (`keep`).
    Keep,
    /// Where `jax.checkpoint` kept its recomputation apart with optimization barriers, merge
    /// every duplicated side-effect-free op once the barriers are dissolved (`replan`).
    #[default]
    BehindBarriers,
    /// Merge every duplicated side-effect-free op, barriers or not (`merge-all`): also
    /// `jax.checkpoint(prevent_cse=False)`, which scanned layers use (MaxText), and any other
    /// computation the step repeats.
    All,
}

/// Default of [`ImportOptions::unroll_limit`]: a scan over a long sequence unrolls, a loop
/// that would add millions of ops does not.
pub const DEFAULT_UNROLL_LIMIT: usize = 1024;

/// Default of [`ImportOptions::unroll_max_ops`]: a scan of up to about two dozen small
/// transformer layers unrolls (the planners see every layer); a longer one is planned rolled,
/// in a second rather than minutes, and compiles as a loop.
pub const DEFAULT_UNROLL_MAX_OPS: usize = 20_000;

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            cost_model: CostModel::default(),
            unroll_limit: DEFAULT_UNROLL_LIMIT,
            unroll_max_ops: DEFAULT_UNROLL_MAX_OPS,
            buffer_reuse: false,
            merge_recomputation: MergeRecomputation::default(),
        }
    }
}

pub(crate) fn error_at(op: Op, message: impl Into<String>) -> MlirError {
    MlirError { location: Some(ir::location_text(ir::location(op))), message: message.into() }
}

/// All `func.func` ops at the top of `module_op`'s body, with their symbol names.
pub(crate) fn functions(module_body: MlirBlock) -> Vec<(String, Op)> {
    ir::block_ops(module_body)
        .into_iter()
        .filter(|&op| ir::op_name(op) == "func.func")
        .map(|op| (ir::string_attribute(op, "sym_name").unwrap_or_default(), op))
        .collect()
}

fn is_private(func: Op) -> bool {
    ir::string_attribute(func, "sym_visibility").is_some_and(|v| v == "private")
}

fn has_body(func: Op) -> bool {
    ir::regions(func).first().is_some_and(|&r| !ir::blocks(r).is_empty())
}

/// Picks the function to plan: `wanted` if given, else the one public function with a body
/// (preferring `main` when there are several).
pub(crate) fn select_function(module_body: MlirBlock, module_op: Op, wanted: Option<&str>) -> Result<Op, MlirError> {
    let funcs = functions(module_body);
    if let Some(name) = wanted {
        return funcs
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, op)| op)
            .ok_or_else(|| error_at(module_op, format!("no function named '{name}' in the module")));
    }
    let public: Vec<&(String, Op)> = funcs.iter().filter(|(_, op)| !is_private(*op) && has_body(*op)).collect();
    match public.as_slice() {
        [] => Err(error_at(module_op, "the module has no public function with a body to plan")),
        [(_, op)] => Ok(*op),
        many => many.iter().find(|(n, _)| n == "main").map(|(_, op)| *op).ok_or_else(|| {
            let names: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
            error_at(
                module_op,
                format!("several public functions ({}); choose one with --function=NAME", names.join(", ")),
            )
        }),
    }
}

fn single_block(func: Op) -> Result<MlirBlock, MlirError> {
    let region = *ir::regions(func).first().ok_or_else(|| error_at(func, "function has no body"))?;
    match ir::blocks(region).as_slice() {
        [block] => Ok(*block),
        [] => Err(error_at(func, "function has no body")),
        _ => Err(error_at(
            func,
            "functions with more than one block are not supported; remat-opt plans straight-line training steps",
        )),
    }
}

/// Inlines every top-level `func.call` of a private function defined in the module, until
/// none is left. Inlined ops get call-site locations, as MLIR's inliner gives them.
fn inline_private_calls(module_body: MlirBlock, body: MlirBlock) -> Result<(), MlirError> {
    let callees: IndexMap<String, Op> =
        functions(module_body).into_iter().filter(|(_, f)| is_private(*f) && has_body(*f)).collect();
    let mut rounds = 0;
    loop {
        let calls: Vec<Op> = ir::block_ops(body)
            .into_iter()
            .filter(|&op| ir::op_name(op) == "func.call")
            .filter(|&op| ir::flat_symbol_attribute(op, "callee").is_some_and(|c| callees.contains_key(&c)))
            .collect();
        if calls.is_empty() {
            return Ok(());
        }
        rounds += 1;
        if rounds > 64 {
            return Err(error_at(calls[0], "calls nest more than 64 deep (recursion?); cannot inline"));
        }
        for call in calls {
            let callee = callees[&ir::flat_symbol_attribute(call, "callee").expect("filtered above")];
            inline_call(call, callee)?;
        }
    }
}

fn inline_call(call: Op, callee: Op) -> Result<(), MlirError> {
    let callee_body = single_block(callee)?;
    let args = ir::block_arguments(callee_body);
    let call_operands = ir::operands(call);
    if args.len() != call_operands.len() {
        return Err(error_at(call, "call passes a different number of operands than the callee takes"));
    }
    let mut map: std::collections::HashMap<usize, Val> = std::collections::HashMap::new();
    for (a, &o) in args.iter().zip(&call_operands) {
        map.insert(ir::value_key(*a), o);
    }
    let caller_block = ir::op_block(call);
    let call_loc = ir::location(call);
    let ops = ir::block_ops(callee_body);
    let (terminator, ops) = ops.split_last().ok_or_else(|| error_at(callee, "callee body is empty"))?;
    if ir::op_name(*terminator) != "func.return" {
        return Err(error_at(*terminator, "the callee's body must end in func.return"));
    }
    for &op in ops {
        let clone = ir::clone_remapped(op, caller_block, call, &mut map);
        for o in std::iter::once(clone).chain(ir::nested_ops(clone)) {
            ir::set_location(o, ir::call_site_location(ir::location(o), call_loc));
        }
    }
    let returned = ir::operands(*terminator);
    let call_results = ir::results(call);
    if returned.len() != call_results.len() {
        return Err(error_at(call, "callee returns a different number of values than the call produces"));
    }
    for (result, value) in call_results.into_iter().zip(returned) {
        let value = map.get(&ir::value_key(value)).copied().unwrap_or(value);
        ir::replace_all_uses(result, value);
    }
    ir::erase(call);
    Ok(())
}

/// Moves init ops (`tensor.empty`, `linalg.fill`) that ops inside regions use into those
/// regions: each nested use gets its own copy right before its user, and an init left without
/// uses is erased. `cse` hoists them out of regions (a scatter's update computation, a while
/// body); inside, they are part of the region op's own work, not a buffer that lives in the
/// function body, which is how bufferization treats them once the region is lowered.
fn sink_captured_inits(body: MlirBlock) {
    // Reverse order: a fill is sunk before the empty tensor it fills, whose copy then follows.
    for op in ir::block_ops(body).into_iter().rev() {
        if !ops::is_init(&ir::op_name(op)) || ir::results(op).len() != 1 {
            continue;
        }
        let result = ir::results(op)[0];
        let nested: Vec<(Op, usize)> =
            ir::uses(result).into_iter().filter(|&(user, _)| !is_top_level_in(user, body)).collect();
        for (user, n) in nested {
            let clone = ir::clone_op(op);
            ir::insert_before(ir::op_block(user), user, clone);
            ir::set_operand(user, n, ir::results(clone)[0]);
        }
        if ir::uses(result).is_empty() {
            ir::erase(op);
        }
    }
}

/// Gives each destination operand its own init op: an init op (`tensor.empty`,
/// `linalg.fill`) used as the `outs` of several ops, or also as an ordinary input, is cloned
/// once per destination use beyond the first, so grouping can fold it into exactly one node.
fn untie_shared_inits(body: MlirBlock) {
    // Reverse order: a shared fill is untied before the empty tensor it fills.
    for op in ir::block_ops(body).into_iter().rev() {
        if !ops::is_init(&ir::op_name(op)) || ir::results(op).len() != 1 {
            continue;
        }
        let result = ir::results(op)[0];
        let uses = ir::uses(result);
        let destination_uses: Vec<(Op, usize)> = uses
            .iter()
            .copied()
            .filter(|&(user, n)| is_top_level_in(user, body) && ops::destination_operands(user).contains(&n))
            .collect();
        let keep_first = destination_uses.len() == uses.len();
        for &(user, n) in destination_uses.iter().skip(keep_first as usize) {
            let clone = ir::clone_op(op);
            ir::insert_before(body, op, clone);
            ir::set_operand(user, n, ir::results(clone)[0]);
        }
    }
}

/// Makes every destination that is a computed value (not an init op, an argument or a
/// constant — those bufferize to a fresh buffer or a copy already) behave the same in every
/// order, as the memory model needs:
///
/// * written in place: a destination used only by this op, made by an op that owns its
///   buffer. One-shot bufferization then always writes into it, so the op is an *in-place
///   update*: a view of its destination in the graph, executed once (a second execution
///   would need the overwritten value). Returned as (op, destination) pairs.
/// * copied: any other destination gets a fresh `bufferization.alloc_tensor copy(…)` init,
///   which bufferization always allocates; left to itself it would write in place or copy
///   depending on whether a later op still reads the destination, which depends on the
///   schedule.
fn isolate_computed_destinations(body: MlirBlock) -> IndexMap<usize, Val> {
    let mut in_place = IndexMap::new();
    for op in ir::block_ops(body) {
        let destinations = ops::destination_operands(op);
        let single = destinations.len() == 1 && ir::results(op).len() == 1;
        for n in destinations {
            let dest = ir::operands(op)[n];
            let Some((producer, _)) = ir::defining_op(dest) else { continue };
            let producer_name = ir::op_name(producer);
            if ops::is_init(&producer_name) || ops::is_constant(&producer_name) {
                continue;
            }
            let owns_buffer = is_top_level_in(producer, body) && !ops::is_view(&producer_name);
            if single && owns_buffer && ir::uses(dest).len() == 1 {
                in_place.insert(ir::op_key(op), dest);
                continue;
            }
            ir::read_through_copy(body, op, n);
        }
    }
    in_place
}

/// Points the uses of a `stablehlo.while`'s loop-invariant results at the loop's operands
/// (the same values), so liveness sees what bufferization does: one buffer, not two.
fn forward_loop_invariants(body: MlirBlock) {
    for op in ir::block_ops(body) {
        let operands = ir::operands(op);
        let results = ir::results(op);
        for i in ops::loop_invariant_results(op) {
            ir::replace_all_uses(results[i], operands[i]);
        }
    }
}

/// Replaces every top-level `stablehlo.optimization_barrier` by its operands; returns how many
/// there were.
fn dissolve_optimization_barriers(body: MlirBlock) -> usize {
    let mut dissolved = 0;
    for op in ir::block_ops(body) {
        if ir::op_name(op) == "stablehlo.optimization_barrier" {
            for (result, operand) in ir::results(op).into_iter().zip(ir::operands(op)) {
                ir::replace_all_uses(result, operand);
            }
            ir::erase(op);
            dissolved += 1;
        }
    }
    dissolved
}

/// Replaces each operand of a top-level op that is integer bookkeeping computed from constants
/// (a loop counter's index after unrolling: `12 - j - 1` as 0-d generics, cast and clamped) by
/// a constant of its value, placed right before the op. Recomputation in an unrolled backward
/// loop indexes its layer's parameters with such arithmetic where the forward used a constant;
/// once both are constants, the merge sees the two slices as the same op.
fn fold_static_indices(body: MlirBlock) {
    let mut evaluator = unroll::Evaluator::default();
    for op in ir::block_ops(body) {
        let name = ir::op_name(op);
        if ops::is_constant(&name) {
            continue;
        }
        for (i, v) in ir::operands(op).into_iter().enumerate() {
            let computed = ir::defining_op(v).is_some_and(|(d, _)| !ops::is_constant(&ir::op_name(d)));
            if !computed {
                continue;
            }
            if let Some(value) = evaluator.value(v) {
                // The constant a loop's unrolling makes for a StableHLO counter is a
                // `stablehlo.constant`: the same op, so the merge sees both as one.
                let t = ir::value_type(v);
                let dialect = if name.starts_with("stablehlo.") && ir::tensor_shape(t).is_some() {
                    "stablehlo.constant"
                } else {
                    "arith.constant"
                };
                let constant = ir::create_integer_constant(dialect, t, value, ir::location(op));
                ir::insert_before(body, op, constant);
                ir::set_operand(op, i, ir::results(constant)[0]);
            }
        }
    }
}

/// Points the uses of a top-level reshape back at the value it reshapes when it only undoes
/// earlier reshapes: a chain of `collapse_shape`/`expand_shape`/`reshape`s, `broadcast_in_dim`s
/// that add unit dimensions, and jaxlib's copies of a value with unit dimensions added
/// ([`rematIsUnitDimCopy`]), back to a value `x` of the result's type (all keep row-major order,
/// so the result is `x`). A scan stacks `x` as `[1, …]` and its backward reads it back and
/// reshapes it; once the read is forwarded, this makes the backward's value `x` itself, as its
/// forward's is.
fn fold_reshape_round_trips(body: MlirBlock) {
    const RESHAPES: [&str; 4] = ["tensor.collapse_shape", "tensor.expand_shape", "tensor.reshape", "stablehlo.reshape"];
    for op in ir::block_ops(body) {
        if !RESHAPES.contains(&ir::op_name(op).as_str()) {
            continue;
        }
        let result = ir::results(op)[0];
        // Walk back through the chain of reshapes to the earliest value of the result's type.
        let mut earliest = None;
        let mut current = ir::operands(op)[0];
        while let Some((source, _)) = ir::defining_op(current) {
            let reshapes = RESHAPES.contains(&ir::op_name(source).as_str())
                || adds_unit_dims(source)
                || unsafe { rematIsUnitDimCopy(source) };
            if !reshapes {
                break;
            }
            current = ir::operands(source)[0];
            if ir::types_equal(ir::value_type(current), ir::value_type(result)) {
                earliest = Some(current);
            }
        }
        if let Some(original) = earliest {
            ir::replace_all_uses(result, original);
        }
    }
}

/// Whether `op` is a `stablehlo.broadcast_in_dim` that only adds unit dimensions: its operand's
/// dimensions map, in order, to result dimensions of the same sizes, and every other result
/// dimension is 1 (a reshape, row-major order kept).
fn adds_unit_dims(op: Op) -> bool {
    if ir::op_name(op) != "stablehlo.broadcast_in_dim" {
        return false;
    }
    let (Some(&operand), Some(&result)) = (ir::operands(op).first(), ir::results(op).first()) else {
        return false;
    };
    let (Some(from), Some(to)) = (ir::tensor_shape(ir::value_type(operand)), ir::tensor_shape(ir::value_type(result)))
    else {
        return false;
    };
    let Some(dims) = ir::attribute(op, "broadcast_dimensions").and_then(ir::dense_i64_array) else {
        return false;
    };
    let increasing = dims.windows(2).all(|w| w[0] < w[1]);
    let mapped = dims.len() == from.len()
        && dims.iter().zip(&from).all(|(&d, &size)| usize::try_from(d).ok().and_then(|d| to.get(d)) == Some(&size));
    let others_unit = to.iter().enumerate().all(|(i, &size)| size == 1 || dims.contains(&(i as i64)));
    increasing && mapped && others_unit
}

unsafe extern "C" {
    /// Upstream CSE over an op and its regions, then the top-level ops left unused erased
    /// (`cpp/merge.cpp`); returns the ops it erased.
    fn rematMergeEquivalentOps(op: mlir_sys::MlirOperation) -> usize;
    /// Whether a `linalg.generic` copies its one input with unit dimensions added (`cpp/merge.cpp`).
    fn rematIsUnitDimCopy(op: mlir_sys::MlirOperation) -> bool;
}

/// Whether `op` only adds unit dimensions to its first operand, keeping row-major order: an
/// `expand_shape`, a `reshape`, a unit-dimension `broadcast_in_dim`, or jaxlib's copy.
pub(crate) fn only_adds_unit_dims(op: Op) -> bool {
    matches!(ir::op_name(op).as_str(), "tensor.expand_shape" | "tensor.reshape" | "stablehlo.reshape")
        || adds_unit_dims(op)
        || unsafe { rematIsUnitDimCopy(op) }
}

fn is_top_level_in(op: Op, body: MlirBlock) -> bool {
    ir::op_block(op).ptr == body.ptr
}

/// Imports function `func` of a module into a graph, normalizing it first (see module docs).
pub(crate) fn import_function(
    module_body: MlirBlock,
    func: Op,
    options: &ImportOptions,
) -> Result<ImportedFunction, MlirError> {
    let name = ir::string_attribute(func, "sym_name").unwrap_or_default();
    let body = single_block(func)?;
    inline_private_calls(module_body, body)?;
    let (unrolled, kept_warnings) = unroll::unroll_static_loops(body, options.unroll_limit, options.unroll_max_ops);
    if unrolled > 0 {
        // Bodies of StableHLO loops call private functions too.
        inline_private_calls(module_body, body)?;
    }
    // The bodies of loops kept whole too: the model reads what their ops allocate.
    for op in ir::block_ops(body).into_iter().filter(|&op| ir::op_name(op) == "stablehlo.while") {
        for region in ir::regions(op) {
            for block in ir::blocks(region) {
                inline_private_calls(module_body, block)?;
            }
        }
    }
    let unstacked = unstack::forward_stacked_slices(body);
    let mut normalized = Normalization {
        loops_unrolled: unrolled,
        forwarded_reads: unstacked.forwarded,
        erased_ops: unstacked.erased,
        merged_ops: 0,
    };
    let barriers = dissolve_optimization_barriers(body);
    let merge = match options.merge_recomputation {
        MergeRecomputation::Keep => false,
        MergeRecomputation::BehindBarriers => barriers > 0,
        MergeRecomputation::All => true,
    };
    if merge {
        fold_static_indices(body);
        fold_reshape_round_trips(body);
        normalized.merged_ops = unsafe { rematMergeEquivalentOps(func) };
    }
    if !normalized.is_empty() {
        tracing::debug!(?normalized, "normalized before grouping");
    }
    sink_captured_inits(body);
    untie_shared_inits(body);
    forward_loop_invariants(body);
    let in_place = isolate_computed_destinations(body);
    let kept_loops = kept_loop::isolate_loop_inits(body, &untie_shared_inits);
    // Loops in the model need no warning.
    let warnings: Vec<MlirError> = kept_warnings
        .into_iter()
        .filter(|(op, _)| !kept_loops.contains_key(&ir::op_key(*op)))
        .map(|(_, warning)| warning)
        .collect();

    let all_ops = ir::block_ops(body);
    let (terminator, body_ops) = all_ops.split_last().ok_or_else(|| error_at(func, "function body is empty"))?;
    let terminator = *terminator;
    if ir::op_name(terminator) != "func.return" {
        return Err(error_at(terminator, "the function body must end in func.return"));
    }

    // Phase 2: which op each init op folds into.
    let position: IndexMap<usize, usize> = body_ops.iter().enumerate().map(|(i, &op)| (ir::op_key(op), i)).collect();
    let mut folded_into: Vec<Option<usize>> = vec![None; body_ops.len()];
    for (i, &op) in body_ops.iter().enumerate() {
        if !ops::is_init(&ir::op_name(op)) || ir::results(op).len() != 1 {
            continue;
        }
        if let [(user, n)] = ir::uses(ir::results(op)[0]).as_slice() {
            if is_top_level_in(*user, body) && ops::destination_operands(*user).contains(n) {
                folded_into[i] = Some(position[&ir::op_key(*user)]);
            }
        }
    }
    let group_of = |mut i: usize| {
        while let Some(next) = folded_into[i] {
            i = next;
        }
        i
    };

    // Nodes: arguments, then one per group, numbered by the position of the group's main op.
    let mut builder = GraphBuilder::new();
    let mut value_node: IndexMap<usize, NodeId> = IndexMap::new();
    for (index, arg) in ir::block_arguments(body).into_iter().enumerate() {
        let bytes = static_bytes(arg, func, &format!("argument #{index}"))?;
        let id = builder.add(NodeSpec::argument(format!("%arg{index}"), bytes), &[]);
        value_node.insert(ir::value_key(arg), id);
    }
    let argument_count = builder.len();
    let mut groups: Vec<Vec<MlirOperation>> = vec![Vec::new(); argument_count];
    let mut mains: Vec<Option<MlirOperation>> = vec![None; argument_count];
    // The values a loop kept whole changes get nodes of their own right after the loop's
    // (each buffer is freed after its own last use); the loop's node owns none.
    let kept_results = |op: Op| kept_loops.get(&ir::op_key(op)).map_or(&[][..], |k| &k.results[..]);
    let mut node_of_main: IndexMap<usize, NodeId> = IndexMap::new();
    let mut next_node = argument_count;
    for (i, &op) in body_ops.iter().enumerate().filter(|&(i, _)| folded_into[i].is_none()) {
        node_of_main.insert(i, NodeId(next_node as u32));
        next_node += 1 + kept_results(op).len();
    }
    let mut members: Vec<Vec<Op>> = vec![Vec::new(); next_node - argument_count];
    for (i, &op) in body_ops.iter().enumerate() {
        let node = node_of_main[&group_of(i)];
        members[node.index() - argument_count].push(op);
        for r in ir::results(op) {
            value_node.insert(ir::value_key(r), node);
        }
        if folded_into[i].is_none() {
            let results = ir::results(op);
            for (n, &k) in kept_results(op).iter().enumerate() {
                value_node.insert(ir::value_key(results[k]), NodeId((node.index() + 1 + n) as u32));
            }
        }
    }

    // Phase 3: measure each group.
    let mut reusable: Vec<(NodeId, NodeId)> = Vec::new();
    for (&main_index, &node) in &node_of_main {
        let main = body_ops[main_index];
        let group = &members[node.index() - argument_count];
        let main_name = ir::op_name(main);
        let mut preds: Vec<NodeId> = Vec::new();
        for &op in group {
            for o in std::iter::once(op).chain(ir::nested_ops(op)) {
                for v in ir::operands(o) {
                    if let Some(&p) = value_node.get(&ir::value_key(v)) {
                        if p != node && !preds.contains(&p) {
                            preds.push(p);
                        }
                    }
                }
            }
        }
        let mut bytes = 0u64;
        let invariant = ops::loop_invariant_results(main);
        for (k, r) in ir::results(main).into_iter().enumerate() {
            if invariant.contains(&k) {
                continue;
            }
            bytes = bytes.saturating_add(static_bytes(r, main, &format!("result #{k} of '{main_name}'"))?);
        }
        let kept = kept_loops.get(&ir::op_key(main));
        // A loop kept whole writes into its inits' buffers (the result nodes that follow are
        // views of them) and holds one iteration's buffers while it runs.
        let workspace = kept.map(|k| k.workspace);
        if kept.is_some() {
            bytes = 0;
        }
        let in_place_destination = in_place.get(&ir::op_key(main)).copied();
        let view_source = if ops::is_view(&main_name) {
            ir::operands(main).first().and_then(|&v| value_node.get(&ir::value_key(v)).copied())
        } else {
            in_place_destination.and_then(|v| value_node.get(&ir::value_key(v)).copied())
        };
        let constant = ops::is_constant(&main_name);
        if constant || view_source.is_some() {
            bytes = 0;
        }
        let cost = match options.cost_model {
            CostModel::Unit => 1.0,
            CostModel::Estimate => group
                .iter()
                .map(|&op| match kept {
                    Some(kept) if ir::same_op(op, main) => kept.cost,
                    _ => ops::cost(op),
                })
                .sum(),
        };
        // A loop kept whole writes into its inits: run twice, it would start from its results.
        let pure = kept.is_none() && group.iter().all(|&op| ops::is_pure(op));
        let mut spec = NodeSpec::op(node_name(main, node), bytes, cost)
            .origin(main_name.clone(), Some(ir::location_text(ir::location(main))));
        if !pure || in_place_destination.is_some() {
            spec = spec.impure();
        }
        if let Some(source) = view_source {
            spec = spec.view_of(source);
        }
        if let Some(workspace) = workspace {
            spec = spec.with_workspace(workspace);
        }
        let id = builder.add(spec, &preds);
        debug_assert_eq!(id, node);
        groups.push(group.clone());
        mains.push(Some(main));
        let inits = ir::operands(main);
        for &k in kept_results(main) {
            let init = value_node.get(&ir::value_key(inits[k])).copied().ok_or_else(|| {
                error_at(main, format!("internal error: the init of result #{k} of '{main_name}' has no node"))
            })?;
            let spec = NodeSpec::op(format!("{}#{k}", node_name(main, node)), 0, 0.0)
                .origin(main_name.clone(), Some(ir::location_text(ir::location(main))))
                .impure()
                .view_of(init);
            builder.add(spec, &[node, init]);
            groups.push(Vec::new());
            mains.push(None);
        }
        if options.buffer_reuse && pure && view_source.is_none() {
            if let Some(v) = crate::fuse::reusable_input(main).and_then(|i| ir::operands(main).get(i).copied()) {
                if let Some(&p) = value_node.get(&ir::value_key(v)) {
                    reusable.push((node, p));
                }
            }
        }
    }
    // Elementwise ops may write in place into an input of their bytes that owns its buffer.
    // Not the results of a loop kept whole: ownership-based deallocation cannot tell whether
    // they are the loop's inits, and would copy anything written into them that the step returns.
    for (node, input) in reusable {
        let source = builder.node_mut(input).clone();
        let loop_result = groups[input.index()].is_empty() && !source.argument;
        if !source.argument && !loop_result && source.view_of.is_none() && source.bytes == builder.node_mut(node).bytes
        {
            builder.node_mut(node).reuses = Some(input);
        }
    }

    // Outputs: whatever the terminator returns.
    for v in ir::operands(terminator) {
        if let Some(&node) = value_node.get(&ir::value_key(v)) {
            builder.node_mut(node).output = true;
        }
    }
    let graph = builder.finish().map_err(|e| error_at(func, format!("internal error building the graph: {e}")))?;
    let order = graph.topological_schedule();
    debug_assert!(order.iter().enumerate().all(|(i, n)| n.index() == argument_count + i));
    Ok(ImportedFunction { name, graph, order, groups, mains, body, terminator, func, warnings, normalized })
}

fn node_name(main: Op, node: NodeId) -> String {
    let name = ir::op_name(main);
    let short = name.rsplit('.').next().unwrap_or(&name);
    format!("{short}_{}", node.0)
}

fn static_bytes(v: Val, op: Op, what: &str) -> Result<u64, MlirError> {
    match ir::type_bytes(ir::value_type(v)) {
        ir::TypeBytes::NotATensor | ir::TypeBytes::MemRef => Ok(0),
        ir::TypeBytes::Static(b) => Ok(b),
        ir::TypeBytes::Dynamic => Err(error_at(
            op,
            format!(
                "{what} has a dynamic shape ({}); remat-opt needs static shapes to size buffers",
                ir::type_text(ir::value_type(v))
            ),
        )),
        ir::TypeBytes::Unranked => {
            Err(error_at(op, format!("{what} is an unranked tensor; remat-opt needs static shapes")))
        }
        ir::TypeBytes::UnknownElement(t) => {
            Err(error_at(op, format!("{what} has element type {t}, whose size remat-opt does not know")))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{lines, MEMORY_MODEL_EXAMPLE};
    use crate::{import, CostModel, ImportOptions, ImportedFunction, RematContext};
    use remat_graph::{simulate, Graph};

    /// One line per node: `id: name bytes=B [cost=C] [arg] [out] [impure] [view_of=V] preds=[…]`.
    fn graph_text(g: &Graph) -> Vec<String> {
        g.ids()
            .map(|id| {
                let n = g.node(id);
                let mut line = format!("{}: {} bytes={}", id.0, n.name, n.bytes);
                if n.argument {
                    line.push_str(" arg");
                } else {
                    line.push_str(&format!(" cost={}", n.cost));
                }
                if n.output {
                    line.push_str(" out");
                }
                if !n.pure && !n.argument {
                    line.push_str(" impure");
                }
                if let Some(v) = n.view_of {
                    line.push_str(&format!(" view_of={}", v.0));
                }
                if n.workspace > 0 {
                    line.push_str(&format!(" workspace={}", n.workspace));
                }
                if !n.argument {
                    let mut preds: Vec<u32> = g.preds(id).iter().map(|p| p.0).collect();
                    preds.sort();
                    line.push_str(&format!(" preds={preds:?}"));
                }
                line
            })
            .collect()
    }

    /// Imports `input` with `options` and hands the result and the normalized module's text
    /// to `f`.
    fn with_import<R>(input: &str, options: &ImportOptions, f: impl FnOnce(&ImportedFunction, String) -> R) -> R {
        let context = RematContext::new();
        let module = context.parse(input, "import.mlir").unwrap_or_else(|e| panic!("{e:?}\n{input}"));
        let imported = import(&module, None, options).unwrap_or_else(|e| panic!("{e}\n{input}"));
        context.verify(&module).unwrap_or_else(|e| panic!("normalized module does not verify: {e:?}"));
        f(&imported, module.as_operation().to_string())
    }

    /// Imports `input` and compares its graph with `expected`; the baseline order must be the
    /// body order, every non-argument node once.
    fn check(input: &str, expected: &str) {
        with_import(input, &ImportOptions::default(), |imported, text| {
            assert_eq!(graph_text(&imported.graph), lines(expected), "\n{text}");
            let arguments = imported.graph.ids().filter(|&id| imported.graph.node(id).argument).count();
            let body_order: Vec<u32> = (arguments as u32..imported.graph.len() as u32).collect();
            assert_eq!(imported.order.iter().map(|n| n.0).collect::<Vec<_>>(), body_order);
        })
    }

    /// The error importing `input` gives: its location's `line:col` (MLIR names a buffer parsed
    /// from memory "-"; remat-opt puts the file name back) and its message.
    fn import_error(input: &str, function: Option<&str>) -> (String, String) {
        let context = RematContext::new();
        let module = context.parse(input, "import.mlir").unwrap_or_else(|e| panic!("{e:?}\n{input}"));
        match import(&module, function, &ImportOptions::default()) {
            Ok(_) => panic!("imported without an error:\n{input}"),
            Err(e) => {
                let location = e.location.unwrap_or_default();
                let line_col = location.split_once(':').map(|(_, rest)| rest.to_string()).unwrap_or_default();
                (line_col, e.message)
            }
        }
    }

    #[test]
    fn the_memory_model_example_groups_inits_into_the_matmul() {
        // docs/memory-model.md, "Nodes from MLIR": six nodes, matmul_3 = empty + fill + matmul.
        let input = MEMORY_MODEL_EXAMPLE;
        check(
            input,
            "
            0: %arg0 bytes=256 arg
            1: %arg1 bytes=512 arg
            2: constant_2 bytes=0 cost=0 preds=[]
            3: matmul_3 bytes=128 cost=1056 preds=[0, 1, 2]
            4: collapse_shape_4 bytes=0 cost=0 view_of=3 preds=[3]
            5: exp_5 bytes=128 cost=32 out preds=[4]
            ",
        );
        with_import(input, &ImportOptions::default(), |imported, _| {
            assert_eq!(imported.name, "step");
            assert_eq!(imported.graph.argument_bytes(), 768);
            // exp_5's 128 bytes plus matmul_3's, which the view keeps alive.
            assert_eq!(simulate(&imported.graph, &imported.order).unwrap().peak_bytes, 256);
            let ops: Vec<Vec<String>> =
                imported.groups.iter().map(|g| g.iter().map(|&op| crate::ir::op_name(op)).collect()).collect();
            assert_eq!(ops[3], ["tensor.empty", "linalg.fill", "linalg.matmul"]);
            assert_eq!(ops[5], ["tensor.empty", "linalg.exp"]);
            assert!(ops[0].is_empty() && ops[1].is_empty());
        });
    }

    #[test]
    fn unit_cost_model_costs_every_node_one() {
        let input = r#"
            func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
              %c = "stablehlo.constant"() <{value = dense<1.0> : tensor<4x4xf32>}> : () -> tensor<4x4xf32>
              %d = "stablehlo.dot"(%x, %c) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
              %v = "stablehlo.reshape"(%d) : (tensor<4x4xf32>) -> tensor<16xf32>
              %w = "stablehlo.reshape"(%v) : (tensor<16xf32>) -> tensor<4x4xf32>
              return %w : tensor<4x4xf32>
            }
        "#;
        let options = ImportOptions { cost_model: CostModel::Unit, ..ImportOptions::default() };
        with_import(input, &options, |imported, _| {
            assert_eq!(
                graph_text(&imported.graph),
                lines(
                    "
                    0: %arg0 bytes=64 arg
                    1: constant_1 bytes=0 cost=1 preds=[]
                    2: dot_2 bytes=64 cost=1 preds=[0, 1]
                    3: reshape_3 bytes=0 cost=1 view_of=2 preds=[2]
                    4: reshape_4 bytes=0 cost=1 out view_of=3 preds=[3]
                    "
                )
            );
            assert_eq!(imported.graph.storage_root(remat_graph::NodeId(4)), remat_graph::NodeId(2));
        });
    }

    #[test]
    fn views_of_arguments_and_index_operands() {
        check(
            r#"
            func.func @main(%x: tensor<8xf32>) -> tensor<2xf32> {
              %c2 = arith.constant 2 : index
              %s = tensor.extract_slice %x[%c2] [4] [1] : tensor<8xf32> to tensor<4xf32>
              %t = tensor.extract_slice %s[%c2] [2] [1] : tensor<4xf32> to tensor<2xf32>
              %e = tensor.empty() : tensor<2xf32>
              %y = linalg.negf ins(%t : tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
              return %y : tensor<2xf32>
            }
            "#,
            "
            0: %arg0 bytes=32 arg
            1: constant_1 bytes=0 cost=0 preds=[]
            2: extract_slice_2 bytes=0 cost=0 view_of=0 preds=[0, 1]
            3: extract_slice_3 bytes=0 cost=0 view_of=2 preds=[1, 2]
            4: negf_4 bytes=8 cost=2 out preds=[3]
            ",
        );
    }

    /// Behind an optimization barrier, `exp` of the barrier's result and `exp` of a reshape
    /// that only undoes a unit-dimension copy of `x` are both `exp(x)` again: merged into the
    /// first, with the copy left unused and erased. `exp` of a collapsed *transposing* copy
    /// with a unit dimension is another value and stays. `keep` imports the step as written.
    #[test]
    fn recomputation_behind_a_barrier_merges_into_the_op_it_repeats() {
        let input = r#"
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1, d2) -> (d2, d1)>
#lead = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @main(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %b = "stablehlo.optimization_barrier"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %e0 = tensor.empty() : tensor<4x4xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x4xf32>) outs(%e0 : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<1x4x4xf32>
  %c = linalg.generic {indexing_maps = [#lead, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<4x4xf32>) outs(%e1 : tensor<1x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x4xf32>
  %back = tensor.collapse_shape %c [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<1x4x4xf32>
  %t3 = linalg.generic {indexing_maps = [#tr, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<4x4xf32>) outs(%e2 : tensor<1x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x4xf32>
  %t = tensor.collapse_shape %t3 [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<4x4xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x4xf32>) outs(%e3 : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %e4 = tensor.empty() : tensor<4x4xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%back : tensor<4x4xf32>) outs(%e4 : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %e5 = tensor.empty() : tensor<4x4xf32>
  %k = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<4x4xf32>) outs(%e5 : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  return %f, %g, %h, %k : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
"#;
        let unit = ImportOptions { cost_model: CostModel::Unit, ..ImportOptions::default() };
        with_import(input, &unit, |imported, text| {
            let names: Vec<&str> =
                imported.graph.ids().skip(1).map(|id| imported.graph.node(id).name.as_str()).collect();
            assert_eq!(names, ["generic_1", "generic_2", "collapse_shape_3", "generic_4"], "\n{text}");
            assert!(imported.normalized.merged_ops >= 3, "{:?}", imported.normalized);
            // exp(x) is returned three times; exp of the transpose once.
            assert_eq!(text.matches("math.exp").count(), 2, "\n{text}");
        });
        let keep = ImportOptions { merge_recomputation: crate::MergeRecomputation::Keep, ..unit };
        with_import(input, &keep, |imported, text| {
            assert_eq!(imported.graph.op_count(), 8, "\n{text}");
            assert_eq!(imported.normalized.merged_ops, 0);
        });
    }

    #[test]
    fn constants_own_no_bytes_and_returned_arguments_are_outputs() {
        check(
            r#"
            func.func @main(%x: tensor<64xf32>, %y: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
              %k = arith.constant dense<2.0> : tensor<64xf32>
              %m = "stablehlo.multiply"(%x, %k) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
              %n = "stablehlo.custom_call"(%m) <{call_target_name = "effect"}> : (tensor<64xf32>) -> tensor<64xf32>
              return %y, %k, %n : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
            }
            "#,
            "
            0: %arg0 bytes=256 arg
            1: %arg1 bytes=256 arg out
            2: constant_2 bytes=0 cost=0 out preds=[]
            3: multiply_3 bytes=256 cost=64 preds=[0, 2]
            4: custom_call_4 bytes=256 cost=64 out impure preds=[3]
            ",
        );
    }

    #[test]
    fn an_init_shared_by_two_destinations_is_untied() {
        let input = r#"
            func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
              %e = tensor.empty() : tensor<4xf32>
              %a = linalg.exp ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
              %b = linalg.negf ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
              return %a, %b : tensor<4xf32>, tensor<4xf32>
            }
        "#;
        check(
            input,
            "
            0: %arg0 bytes=16 arg
            1: exp_1 bytes=16 cost=4 out preds=[0]
            2: negf_2 bytes=16 cost=4 out preds=[0]
            ",
        );
        with_import(input, &ImportOptions::default(), |imported, text| {
            assert_eq!(text.matches("tensor.empty()").count(), 2, "{text}");
            let groups: Vec<usize> = imported.groups.iter().map(Vec::len).collect();
            assert_eq!(groups, [0, 2, 2]);
        });
    }

    #[test]
    fn an_init_also_read_as_an_input_stays_a_node_and_the_destination_gets_a_copy_of_it() {
        // %z is both an input and the destination of the add: the add gets its own fill.
        let input = r#"
            func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
              %c = arith.constant 1.0 : f32
              %e = tensor.empty() : tensor<4xf32>
              %z = linalg.fill ins(%c : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
              %a = linalg.add ins(%x, %z : tensor<4xf32>, tensor<4xf32>) outs(%z : tensor<4xf32>) -> tensor<4xf32>
              return %a : tensor<4xf32>
            }
        "#;
        check(
            input,
            "
            0: %arg0 bytes=16 arg
            1: constant_1 bytes=0 cost=0 preds=[]
            2: fill_2 bytes=16 cost=4 preds=[1]
            3: add_3 bytes=16 cost=8 out preds=[0, 1, 2]
            ",
        );
        with_import(input, &ImportOptions::default(), |imported, text| {
            assert_eq!(text.matches("linalg.fill").count(), 2, "{text}");
            let ops: Vec<String> = imported.groups[3].iter().map(|&op| crate::ir::op_name(op)).collect();
            assert_eq!(ops, ["tensor.empty", "linalg.fill", "linalg.add"]);
        });
    }

    #[test]
    fn a_destination_used_only_by_its_update_is_updated_in_place() {
        check(
            r#"
            func.func @main(%x: tensor<8xf32>, %u: tensor<2xf32>) -> tensor<8xf32> {
              %e = tensor.empty() : tensor<8xf32>
              %a = linalg.exp ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
              %b = tensor.insert_slice %u into %a[0] [2] [1] : tensor<2xf32> into tensor<8xf32>
              return %b : tensor<8xf32>
            }
            "#,
            "
            0: %arg0 bytes=32 arg
            1: %arg1 bytes=8 arg
            2: exp_2 bytes=32 cost=8 preds=[0]
            3: insert_slice_3 bytes=0 cost=2 out impure view_of=2 preds=[1, 2]
            ",
        );
    }

    #[test]
    fn a_destination_read_again_later_is_copied_first() {
        let input = r#"
            func.func @main(%x: tensor<8xf32>, %u: tensor<2xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
              %e = tensor.empty() : tensor<8xf32>
              %a = linalg.exp ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
              %b = tensor.insert_slice %u into %a[0] [2] [1] : tensor<2xf32> into tensor<8xf32>
              return %a, %b : tensor<8xf32>, tensor<8xf32>
            }
        "#;
        check(
            input,
            "
            0: %arg0 bytes=32 arg
            1: %arg1 bytes=8 arg
            2: exp_2 bytes=32 cost=8 out preds=[0]
            3: insert_slice_3 bytes=32 cost=10 out preds=[1, 2]
            ",
        );
        with_import(input, &ImportOptions::default(), |imported, text| {
            assert!(text.contains("bufferization.alloc_tensor() copy(%1) : tensor<8xf32>"), "{text}");
            let ops: Vec<String> = imported.groups[3].iter().map(|&op| crate::ir::op_name(op)).collect();
            assert_eq!(ops, ["bufferization.alloc_tensor", "tensor.insert_slice"]);
        });
    }

    #[test]
    fn private_calls_are_inlined_once_per_call_site() {
        let input = r#"
            func.func public @main(%x: tensor<16xf32>) -> tensor<16xf32> {
              %h = "stablehlo.exponential"(%x) : (tensor<16xf32>) -> tensor<16xf32>
              %r = func.call @relu(%h) : (tensor<16xf32>) -> tensor<16xf32>
              %s = func.call @relu(%r) : (tensor<16xf32>) -> tensor<16xf32>
              return %s : tensor<16xf32>
            }
            func.func private @relu(%y: tensor<16xf32>) -> tensor<16xf32> {
              %zero = "stablehlo.constant"() <{value = dense<0.0> : tensor<16xf32>}> : () -> tensor<16xf32>
              %m = "stablehlo.maximum"(%y, %zero) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
              return %m : tensor<16xf32>
            }
        "#;
        check(
            input,
            "
            0: %arg0 bytes=64 arg
            1: exponential_1 bytes=64 cost=16 preds=[0]
            2: constant_2 bytes=0 cost=0 preds=[]
            3: maximum_3 bytes=64 cost=16 preds=[1, 2]
            4: constant_4 bytes=0 cost=0 preds=[]
            5: maximum_5 bytes=64 cost=16 out preds=[3, 4]
            ",
        );
        with_import(input, &ImportOptions::default(), |imported, text| {
            assert!(!text.contains("func.call"), "{text}");
            assert!(text.contains("func.func private @relu"), "the callee stays: {text}");
            // Inlined ops keep the call site as their location.
            let location = |n: u32| imported.graph.node(remat_graph::NodeId(n)).location.clone().unwrap();
            assert!(location(3).ends_with(":4:20"), "{}", location(3));
            assert!(location(5).ends_with(":5:20"), "{}", location(5));
        });
    }

    #[test]
    fn optimization_barriers_dissolve_into_their_operands() {
        check(
            r#"
            func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
              %a = "stablehlo.exponential"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %b:2 = "stablehlo.optimization_barrier"(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
              %c = "stablehlo.add"(%b#0, %b#1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
              return %c : tensor<4xf32>
            }
            "#,
            "
            0: %arg0 bytes=16 arg
            1: exponential_1 bytes=16 cost=4 preds=[0]
            2: add_2 bytes=16 cost=4 out preds=[0, 1]
            ",
        );
    }

    #[test]
    fn a_loop_kept_whole_owns_only_the_results_its_body_changes() {
        let input = r#"
            func.func @main(%n: tensor<i32>, %x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
              %r:3 = "stablehlo.while"(%n, %x, %w) ({
              ^bb0(%a: tensor<i32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
                %p = "stablehlo.compare"(%a, %n) <{comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
                "stablehlo.return"(%p) : (tensor<i1>) -> ()
              }, {
              ^bb0(%a: tensor<i32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
                %y = "stablehlo.multiply"(%b, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
                "stablehlo.return"(%a, %y, %c) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> ()
              }) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>)
              return %r#1, %r#2 : tensor<4xf32>, tensor<4xf32>
            }
        "#;
        // Results 0 and 2 come back unchanged: the loop owns only result 1's 16 bytes, and
        // `return %r#2` is `return %w`. Cost: 9 result elements × 2 body ops.
        with_import(input, &ImportOptions::default(), |imported, _| {
            assert_eq!(
                graph_text(&imported.graph),
                lines(
                    "
                    0: %arg0 bytes=4 arg
                    1: %arg1 bytes=16 arg
                    2: %arg2 bytes=16 arg out
                    3: while_3 bytes=16 cost=18 out preds=[0, 1, 2]
                    "
                )
            );
            // %n is an argument: the trip count is unknown until the step runs.
            let warnings: Vec<&str> = imported.warnings.iter().map(|w| w.message.as_str()).collect();
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].starts_with(
                    "loop kept as one node (its trip count depends on values known only when the step runs)"
                ),
                "{warnings:?}"
            );
            assert!(imported.warnings[0].location.as_deref().is_some_and(|l| l.ends_with(":3:22")));
        });
    }

    #[test]
    fn a_counted_loop_kept_whole_holds_one_iteration_and_writes_into_its_inits() {
        // 3 iterations of: x' = x * w (x: a state), s[i] = x' (s: a stack, written in place),
        // i' = i + 1 (a state, from a constant); w comes back unchanged.
        let input = r#"
            func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
              %zero = arith.constant dense<0> : tensor<i32>
              %c0 = arith.constant 0.0 : f32
              %e = tensor.empty() : tensor<3x4xf32>
              %s = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
              %r:4 = "stablehlo.while"(%zero, %x, %w, %s) ({
              ^bb0(%i: tensor<i32>, %v: tensor<4xf32>, %u: tensor<4xf32>, %t: tensor<3x4xf32>):
                %n = arith.constant dense<3> : tensor<i32>
                %p = "stablehlo.compare"(%i, %n) <{comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
                "stablehlo.return"(%p) : (tensor<i1>) -> ()
              }, {
              ^bb0(%i: tensor<i32>, %v: tensor<4xf32>, %u: tensor<4xf32>, %t: tensor<3x4xf32>):
                %one = arith.constant dense<1> : tensor<i32>
                %i1 = "stablehlo.add"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>
                %v2 = "stablehlo.multiply"(%v, %u) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
                %row = "stablehlo.reshape"(%v2) : (tensor<4xf32>) -> tensor<1x4xf32>
                %z = arith.constant dense<0> : tensor<i32>
                %t2 = "stablehlo.dynamic_update_slice"(%t, %row, %i, %z) : (tensor<3x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<3x4xf32>
                "stablehlo.return"(%i1, %v2, %u, %t2) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> ()
              }) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>)
              %y = "stablehlo.exponential"(%r#1) : (tensor<4xf32>) -> tensor<4xf32>
              return %y, %r#3 : tensor<4xf32>, tensor<3x4xf32>
            }
        "#;
        let options = ImportOptions { unroll_limit: 2, ..ImportOptions::default() };
        with_import(input, &options, |imported, text| {
            // The constant counter and the argument x get copies the loop writes into (nodes 3
            // and 6); the fill is the stack's buffer. The loop owns nothing and runs once (it
            // writes into its inits); one iteration holds i + 1 (4 bytes) and x * w (16, its
            // reshape a view), both to the end of the body. Its results are views of their
            // inits; the returned stack goes out through a copy. Cost: 3 × (1 + 4 + 4), the
            // last the slice written.
            assert_eq!(
                graph_text(&imported.graph),
                lines(
                    "
                    0: %arg0 bytes=16 arg
                    1: %arg1 bytes=16 arg
                    2: constant_2 bytes=0 cost=0 preds=[]
                    3: constant_3 bytes=0 cost=0 preds=[]
                    4: fill_4 bytes=48 cost=12 preds=[3]
                    5: alloc_tensor_5 bytes=4 cost=1 preds=[2]
                    6: alloc_tensor_6 bytes=16 cost=4 preds=[0]
                    7: while_7 bytes=0 cost=27 impure workspace=20 preds=[1, 4, 5, 6]
                    8: while_7#0 bytes=0 cost=0 impure view_of=5 preds=[5, 7]
                    9: while_7#1 bytes=0 cost=0 impure view_of=6 preds=[6, 7]
                    10: while_7#3 bytes=0 cost=0 impure view_of=4 preds=[4, 7]
                    11: exponential_11 bytes=16 cost=4 out preds=[9]
                    12: alloc_tensor_12 bytes=48 cost=12 out preds=[10]
                    "
                ),
                "\n{text}"
            );
            assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
        });
    }

    #[test]
    fn dynamic_shapes_are_errors_that_name_the_value() {
        assert_eq!(
            import_error(
                "func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n  return %x : tensor<?xf32>\n}\n",
                None
            ),
            (
                "1:1".to_string(),
                "argument #0 has a dynamic shape (tensor<?xf32>); remat-opt needs static shapes to size buffers"
                    .to_string()
            )
        );
        assert_eq!(
            import_error(
                "func.func @main(%x: tensor<4xf32>) -> tensor<?xf32> {\n  \
                 %d = tensor.cast %x : tensor<4xf32> to tensor<?xf32>\n  return %d : tensor<?xf32>\n}\n",
                None
            ),
            (
                "2:8".to_string(),
                "result #0 of 'tensor.cast' has a dynamic shape (tensor<?xf32>); \
                 remat-opt needs static shapes to size buffers"
                    .to_string()
            )
        );
        assert_eq!(
            import_error("func.func @main(%x: tensor<*xf32>) {\n  return\n}\n", None),
            ("1:1".to_string(), "argument #0 is an unranked tensor; remat-opt needs static shapes".to_string())
        );
    }

    #[test]
    fn the_function_to_plan_is_chosen_or_named() {
        let two = "func.func @a() {\n  return\n}\nfunc.func @b() {\n  return\n}\n";
        assert_eq!(import_error(two, None).1, "several public functions (a, b); choose one with --function=NAME");
        assert_eq!(import_error(two, Some("c")).1, "no function named 'c' in the module");
        let context = RematContext::new();
        let module = context.parse(two, "import.mlir").unwrap();
        assert_eq!(crate::select_function_name(&module, Some("b")).unwrap(), "b");
        let with_main = "func.func @a() {\n  return\n}\nfunc.func @main() {\n  return\n}\n\
                         func.func private @c() {\n  return\n}\n";
        let module = context.parse(with_main, "import.mlir").unwrap();
        assert_eq!(crate::select_function_name(&module, None).unwrap(), "main");
        assert_eq!(
            import_error("func.func private @p() {\n  return\n}\n", None).1,
            "the module has no public function with a body to plan"
        );
        assert_eq!(
            import_error("func.func @main() {\n  cf.br ^bb1\n^bb1:\n  return\n}\n", None),
            (
                "1:1".to_string(),
                "functions with more than one block are not supported; \
                 remat-opt plans straight-line training steps"
                    .to_string()
            )
        );
    }
}
