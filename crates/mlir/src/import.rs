//! MLIR function → [`Graph`].
//!
//! Phase 1 of 3: *normalize* the function in place — inline calls to private functions (JAX
//! exports are full of them; MLIR 22's own inliner crashes beside unregistered region ops),
//! unroll loops whose trip count is static ([`crate::unroll`]), and
//! give every destination-passing op its own `tensor.empty` / `linalg.fill` init (a `cse` run
//! shares them; inits it hoisted out of regions go back in), and dissolve `stablehlo.optimization_barrier`s (`jax.checkpoint` puts them
//! there to stop XLA from merging recomputations; the barrier's results are its operands, and
//! remat-opt plans recomputation itself and never merges it away), and point uses of a loop's
//! invariant results at its operands. All keep the program's
//! meaning.
//! Phase 2 of 3: *group* ops into nodes: a destination-passing op with the init ops that
//! produce its `outs` is one node, so they are moved and cloned together.
//! Phase 3 of 3: *measure* each node: bytes of its results (views and constants own none),
//! cost, purity, and its inputs — including values its regions capture from the function body.

use crate::ir::{self, Op, Val};
use crate::ops;
use crate::unroll;
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
}

/// Default of [`ImportOptions::unroll_limit`]: a scan over a long sequence unrolls, a loop
/// that would add millions of ops does not.
pub const DEFAULT_UNROLL_LIMIT: usize = 1024;

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions { cost_model: CostModel::default(), unroll_limit: DEFAULT_UNROLL_LIMIT }
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
            let copy = ir::create_op(
                "bufferization.alloc_tensor",
                &[dest],
                &[ir::value_type(dest)],
                &[("operandSegmentSizes", ir::dense_i32_array_attribute(op, &[0, 1, 0]))],
                ir::location(op),
            );
            ir::insert_before(body, op, copy);
            ir::set_operand(op, n, ir::results(copy)[0]);
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

/// Replaces every top-level `stablehlo.optimization_barrier` by its operands.
fn dissolve_optimization_barriers(body: MlirBlock) {
    for op in ir::block_ops(body) {
        if ir::op_name(op) == "stablehlo.optimization_barrier" {
            for (result, operand) in ir::results(op).into_iter().zip(ir::operands(op)) {
                ir::replace_all_uses(result, operand);
            }
            ir::erase(op);
        }
    }
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
    let (unrolled, warnings) = unroll::unroll_static_loops(body, options.unroll_limit);
    if unrolled > 0 {
        // Bodies of StableHLO loops call private functions too.
        inline_private_calls(module_body, body)?;
    }
    sink_captured_inits(body);
    untie_shared_inits(body);
    dissolve_optimization_barriers(body);
    forward_loop_invariants(body);
    let in_place = isolate_computed_destinations(body);

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
    let mut node_of_main: IndexMap<usize, NodeId> = IndexMap::new();
    for (i, _) in body_ops.iter().enumerate().filter(|&(i, _)| folded_into[i].is_none()) {
        node_of_main.insert(i, NodeId((argument_count + node_of_main.len()) as u32));
    }
    let mut members: Vec<Vec<Op>> = vec![Vec::new(); node_of_main.len()];
    for (i, &op) in body_ops.iter().enumerate() {
        let node = node_of_main[&group_of(i)];
        members[node.index() - argument_count].push(op);
        for r in ir::results(op) {
            value_node.insert(ir::value_key(r), node);
        }
    }

    // Phase 3: measure each group.
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
            CostModel::Estimate => group.iter().map(|&op| ops::cost(op)).sum(),
        };
        let pure = group.iter().all(|&op| ops::is_pure(op));
        let mut spec = NodeSpec::op(node_name(main, node), bytes, cost)
            .origin(main_name, Some(ir::location_text(ir::location(main))));
        if !pure || in_place_destination.is_some() {
            spec = spec.impure();
        }
        if let Some(source) = view_source {
            spec = spec.view_of(source);
        }
        let id = builder.add(spec, &preds);
        debug_assert_eq!(id, node);
        groups.push(group.clone());
        mains.push(Some(main));
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
    Ok(ImportedFunction { name, graph, order, groups, mains, body, terminator, func, warnings })
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
