//! [`Schedule`] → rewritten function body.
//!
//! docs/memory-model.md, "Schedule → IR": walking the schedule, (1) the first execution of a
//! node moves the node's ops (init ops first) to the end of the body, before the terminator;
//! (2) every later execution inserts a clone there, the main op marked `remat.recompute`;
//! (3) every operand — nested ones in regions too — is pointed at the most recent execution of
//! its producer. The terminator is rewired last, so outputs come from their latest executions.
//!
//! Buffer reuse ([`remat_graph::Node::reuses`]): at a step where the memory model lets an
//! elementwise op take the buffer of an input that dies there, the op's init becomes that input
//! (`outs(%input)`): bufferization writes in place (the access is elementwise), and the unused
//! init ops are erased at the end.
//!
//! Fused recomputations ([`remat_graph::Lifetimes::fused`]): where the memory model fuses a
//! recomputation into the step after it, the clone is fused into that step's op with
//! upstream's elementwise fusion (`cpp/fuse.cpp`), so the recomputed value is never
//! materialized; the clone and its init ops are erased.
//!
//! Host transfers ([`Transfer`]): after the offload step, the instance's tensor results are
//! copied to host memory, `bufferization.alloc_tensor() copy(%v) {memory_space = 1 : i64}`;
//! right before the prefetch step they are copied back, `alloc_tensor() copy(%h)
//! {memory_space = 0 : i64}`, and later uses read that copy. Memory space 1 is the host
//! ([`HOST_MEMORY_SPACE`]); the lowering turns its buffers into counted host allocations.
//!
//! Cost: O(Σ ops placed × operands + transfers).

use crate::import::ImportedFunction;
use crate::ir::{self, Op, Val};
use indexmap::IndexMap;
use remat_graph::{lifetimes_with_transfers, simulate_with_transfers, validate, NodeId, Transfer};

/// The discardable attribute that marks a rematerialized (cloned) op.
pub const RECOMPUTE_ATTRIBUTE: &str = "remat.recompute";

/// The memory space of host copies (`memory_space` of `bufferization.alloc_tensor`).
pub const HOST_MEMORY_SPACE: i64 = 1;

/// What the rewrite did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RewriteStats {
    /// Ops moved to their first planned position.
    pub moved_ops: usize,
    /// Ops inserted as recomputations (init ops included).
    pub cloned_ops: usize,
    /// Copies to the host and back inserted (two per transferred tensor).
    pub copies: usize,
    /// Recomputations fused into the op that reads them ([`remat_graph::Lifetimes::fused`]).
    pub fused: usize,
}

/// Materializes `schedule` in the function `imported` came from.
///
/// The schedule must be valid for `imported.graph` (checked). `imported` describes the IR as
/// it was imported; after this call it no longer matches and must not be reused.
pub fn apply_schedule(
    imported: &ImportedFunction,
    schedule: &[NodeId],
) -> Result<RewriteStats, remat_graph::ScheduleError> {
    apply_plan(imported, schedule, &[])
}

/// Materializes `schedule` with its host `transfers` (both checked against the memory model).
pub fn apply_plan(
    imported: &ImportedFunction,
    schedule: &[NodeId],
    transfers: &[Transfer],
) -> Result<RewriteStats, remat_graph::ScheduleError> {
    if transfers.is_empty() {
        validate(&imported.graph, schedule)?;
    } else {
        simulate_with_transfers(&imported.graph, schedule, transfers)?;
    }
    let life = lifetimes_with_transfers(&imported.graph, schedule, transfers)?;
    let (reused, fused) = (life.reused, life.fused);
    // The ops the previous step placed (a fused recomputation's init ops go unused).
    let mut previous_step_ops: Vec<Op> = Vec::new();
    // Fused recomputations: (consumer op, the recomputed value it reads, the clone's init ops).
    let mut fusions: Vec<(Op, Val, Vec<Op>)> = Vec::new();
    // Init ops of steps that write in place: erased once every clone has been made.
    let mut unused_inits: Vec<Op> = Vec::new();
    // The original init value of each node that may write in place.
    let mut own_inits: IndexMap<usize, Val> = IndexMap::new();
    let body = imported.body;
    let terminator = imported.terminator;
    // Any value produced by a node's ops (original or clone) → the original value it copies.
    let mut original_of: IndexMap<usize, Val> = IndexMap::new();
    // Original value → its most recent execution so far.
    let mut latest: IndexMap<usize, Val> = IndexMap::new();
    let mut executed = vec![false; imported.graph.len()];
    let mut stats = RewriteStats::default();
    // Host copies waiting for their prefetch: transfer index → (original, host copy) pairs.
    let mut on_host: IndexMap<usize, Vec<(Val, Val)>> = IndexMap::new();
    let rewire = |op: Op, original_of: &IndexMap<usize, Val>, latest: &IndexMap<usize, Val>| {
        for o in std::iter::once(op).chain(ir::nested_ops(op)) {
            for (i, v) in ir::operands(o).into_iter().enumerate() {
                let original = original_of.get(&ir::value_key(v)).copied().unwrap_or(v);
                if let Some(&current) = latest.get(&ir::value_key(original)) {
                    if !ir::same_value(current, v) {
                        ir::set_operand(o, i, current);
                    }
                }
            }
        }
    };
    for (step, &node) in schedule.iter().enumerate() {
        for (k, _) in transfers.iter().enumerate().filter(|(_, t)| t.prefetch_before == step) {
            for (original, host) in on_host.shift_remove(&k).unwrap_or_default() {
                let device = copy_to_memory_space(host, 0, body, terminator);
                original_of.insert(ir::value_key(device), original);
                latest.insert(ir::value_key(original), device);
                stats.copies += 1;
            }
        }
        let group = &imported.groups[node.index()];
        let first = !executed[node.index()];
        executed[node.index()] = true;
        let mut placed_ops: Vec<Op> = Vec::with_capacity(group.len());
        for (k, &op) in group.iter().enumerate() {
            let placed = if first {
                ir::move_before(op, terminator);
                stats.moved_ops += 1;
                op
            } else {
                let clone = ir::clone_op(op);
                ir::insert_before(body, terminator, clone);
                if k + 1 == group.len() {
                    ir::set_unit_attribute(clone, RECOMPUTE_ATTRIBUTE);
                }
                stats.cloned_ops += 1;
                clone
            };
            rewire(placed, &original_of, &latest);
            for (orig, new) in ir::results(op).into_iter().zip(ir::results(placed)) {
                original_of.insert(ir::value_key(new), orig);
                latest.insert(ir::value_key(orig), new);
            }
            if k + 1 == group.len() && imported.graph.node(node).reuses.is_some() {
                // The init this execution writes: the input's buffer where the model reuses it,
                // else this execution's own init (a clone copies the original's operands, which
                // an earlier execution may have pointed at its input).
                let init_index = ir::operands(op).len() - 1;
                let own_init = *own_inits.entry(node.index()).or_insert_with(|| ir::operands(op)[init_index]);
                let current = latest.get(&ir::value_key(own_init)).copied().unwrap_or(own_init);
                ir::set_operand(placed, init_index, current);
                if reused[step].is_some() {
                    write_in_place(placed, &mut unused_inits);
                }
            }
            placed_ops.push(placed);
        }
        if step > 0 && fused[step - 1] {
            // The memory model fused the previous step's recomputation into this one; fused
            // once every clone is made (the consumer may be an original that later steps clone).
            let producer = imported.mains[schedule[step - 1].index()].expect("a fused node is a generic");
            let value = latest[&ir::value_key(ir::results(producer)[0])];
            let consumer = *placed_ops.last().expect("a node has ops");
            let inits = previous_step_ops[..previous_step_ops.len().saturating_sub(1)].to_vec();
            fusions.push((consumer, value, inits));
        }
        previous_step_ops = placed_ops;
        for (k, t) in transfers.iter().enumerate().filter(|(_, t)| t.offload_after == step) {
            let main = imported.mains[schedule[t.instance].index()].expect("transfers move computed values");
            let mut copies = Vec::new();
            for original in ir::results(main).into_iter().filter(|&r| ir::is_ranked_tensor(ir::value_type(r))) {
                let current = latest[&ir::value_key(original)];
                copies.push((original, copy_to_memory_space(current, HOST_MEMORY_SPACE, body, terminator)));
                stats.copies += 1;
            }
            on_host.insert(k, copies);
        }
    }
    rewire(terminator, &original_of, &latest);
    for (consumer, value, inits) in fusions {
        // The consumer computes the recomputed value per element: the clone and its inits go.
        if crate::fuse::fuse_into(consumer, value).is_some() {
            for init in inits {
                mark_unused(&mut unused_inits, init);
            }
            stats.fused += 1;
        } else {
            tracing::error!("the memory model fused a recomputation the IR cannot fuse");
        }
    }
    // Last uses first: an init's own inits (a fill's empty) lose their use when it goes.
    while let Some(op) = unused_inits.pop() {
        if ir::results(op).into_iter().all(|r| ir::uses(r).is_empty()) {
            let inputs = ir::operands(op);
            ir::erase(op);
            for v in inputs {
                if let Some((def, _)) = ir::defining_op(v) {
                    if crate::ops::is_init(&ir::op_name(def)) {
                        mark_unused(&mut unused_inits, def);
                    }
                }
            }
        }
    }
    Ok(stats)
}

/// Makes the elementwise `op` write its result into its reusable input (the memory model's
/// reuse at this step): the init operand becomes that input, and the old init is left for
/// erasure.
fn write_in_place(op: Op, unused_inits: &mut Vec<Op>) {
    let Some(input) = crate::fuse::reusable_input(op) else { return };
    let operands = ir::operands(op);
    let init = operands.len() - 1;
    if let Some((def, _)) = ir::defining_op(operands[init]) {
        mark_unused(unused_inits, def);
    }
    ir::set_operand(op, init, operands[input]);
}

/// Leaves `op` (an init op nothing may read any more) for erasure, once.
fn mark_unused(unused_inits: &mut Vec<Op>, op: Op) {
    if !unused_inits.iter().any(|o| o.ptr == op.ptr) {
        unused_inits.push(op);
    }
}

/// `bufferization.alloc_tensor() copy(%value) {memory_space = space : i64}`, before
/// `terminator`.
fn copy_to_memory_space(value: Val, space: i64, body: mlir_sys::MlirBlock, terminator: Op) -> Val {
    let loc = ir::location(terminator);
    let t = ir::value_type(value);
    let space_attr = ir::integer_attribute(terminator, 64, space);
    let segments = ir::dense_i32_array_attribute(terminator, &[0, 1, 0]);
    let op = ir::create_op(
        "bufferization.alloc_tensor",
        &[value],
        &[t],
        &[("memory_space", space_attr), ("operandSegmentSizes", segments)],
        loc,
    );
    ir::insert_before(body, terminator, op);
    ir::results(op)[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{lines, MEMORY_MODEL_EXAMPLE};
    use crate::{import, ImportOptions, RematContext};
    use remat_graph::{simulate, ScheduleErrorKind};

    /// The function body as one line per op: `#i name(operands)`, an operand being `%argK`
    /// or `#j` (the op at position j), then `captures(…)` for top-level values that ops nested
    /// in its regions read, then `recompute` and the `memory_space` when the op has them.
    fn body_text(imported: &ImportedFunction) -> Vec<String> {
        let ops = ir::block_ops(imported.body);
        let arguments = ir::block_arguments(imported.body);
        let name_of = |v: Val| -> Option<String> {
            if let Some(k) = arguments.iter().position(|&a| ir::same_value(a, v)) {
                return Some(format!("%arg{k}"));
            }
            let (op, result) = ir::defining_op(v)?;
            let i = ops.iter().position(|&o| ir::same_op(o, op))?;
            Some(if result == 0 { format!("#{i}") } else { format!("#{i}.{result}") })
        };
        ops.iter()
            .enumerate()
            .map(|(i, &op)| {
                let operands: Vec<String> =
                    ir::operands(op).into_iter().map(|v| name_of(v).unwrap_or_else(|| "?".into())).collect();
                let mut line = format!("#{i} {}({})", ir::op_name(op), operands.join(", "));
                let captures: Vec<String> =
                    ir::nested_ops(op).into_iter().flat_map(ir::operands).filter_map(name_of).collect();
                if !captures.is_empty() {
                    line.push_str(&format!(" captures({})", captures.join(", ")));
                }
                if ir::attribute(op, RECOMPUTE_ATTRIBUTE).is_some() {
                    line.push_str(" recompute");
                }
                if let Some(space) = ir::attribute(op, "memory_space") {
                    line.push_str(&format!(" memory_space={}", ir::attribute_text(space)));
                }
                line
            })
            .collect()
    }

    /// Imports `input`, materializes `schedule` (node ids) with `transfers`, checks that the
    /// module verifies and that its body reads `expected`; returns the stats and the module.
    fn check(input: &str, schedule: &[u32], transfers: &[Transfer], expected: &str) -> (RewriteStats, String) {
        let context = RematContext::new();
        let module = context.parse(input, "rewrite.mlir").unwrap_or_else(|e| panic!("{e:?}\n{input}"));
        let imported = import(&module, None, &ImportOptions::default()).unwrap();
        let schedule: Vec<NodeId> = schedule.iter().map(|&n| NodeId(n)).collect();
        let stats = apply_plan(&imported, &schedule, transfers).unwrap_or_else(|e| panic!("{e}"));
        let text = module.as_operation().to_string();
        context.verify(&module).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        assert_eq!(body_text(&imported), lines(expected), "\n{text}");
        (stats, text)
    }

    const CHAIN: &str = r#"
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %a = "stablehlo.exponential"(%x) : (tensor<4xf32>) -> tensor<4xf32>
          %b = "stablehlo.negate"(%a) : (tensor<4xf32>) -> tensor<4xf32>
          %c = "stablehlo.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
          return %c : tensor<4xf32>
        }
    "#;

    #[test]
    fn the_input_order_leaves_the_body_as_it_was() {
        let (stats, _) = check(
            CHAIN,
            &[1, 2, 3],
            &[],
            "
            #0 stablehlo.exponential(%arg0)
            #1 stablehlo.negate(#0)
            #2 stablehlo.add(#0, #1)
            #3 func.return(#2)
            ",
        );
        assert_eq!(stats, RewriteStats { moved_ops: 3, cloned_ops: 0, copies: 0, fused: 0 });
    }

    #[test]
    fn a_recomputation_is_a_marked_clone_before_its_use_and_the_use_reads_it() {
        let (stats, text) = check(
            CHAIN,
            &[1, 2, 1, 3],
            &[],
            "
            #0 stablehlo.exponential(%arg0)
            #1 stablehlo.negate(#0)
            #2 stablehlo.exponential(%arg0) recompute
            #3 stablehlo.add(#2, #1)
            #4 func.return(#3)
            ",
        );
        assert_eq!(stats, RewriteStats { moved_ops: 3, cloned_ops: 1, copies: 0, fused: 0 });
        assert!(
            text.contains(
                r#"%2 = "stablehlo.exponential"(%arg0) {remat.recompute} : (tensor<4xf32>) -> tensor<4xf32>"#
            ),
            "{text}"
        );
        // Imported again, the rewritten body's own order is the plan: same peak, same cost.
        let context = RematContext::new();
        let original = context.parse(CHAIN, "chain.mlir").unwrap();
        let imported = import(&original, None, &ImportOptions::default()).unwrap();
        let planned = simulate(&imported.graph, &[NodeId(1), NodeId(2), NodeId(1), NodeId(3)]).unwrap();
        let again = context.parse(&text, "rewritten.mlir").unwrap();
        let reimported = import(&again, None, &ImportOptions::default()).unwrap();
        let names: Vec<&str> = reimported.graph.nodes().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["%arg0", "exponential_1", "negate_2", "exponential_3", "add_4"]);
        let measured = simulate(&reimported.graph, &reimported.order).unwrap();
        assert_eq!((measured.peak_bytes, measured.cost), (planned.peak_bytes, planned.cost));
        assert_eq!(planned.recomputations, 1);
    }

    #[test]
    fn first_executions_move_to_their_planned_position() {
        let input = r#"
            func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
              %a = "stablehlo.exponential"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %b = "stablehlo.negate"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %c = "stablehlo.sine"(%a) : (tensor<4xf32>) -> tensor<4xf32>
              return %b, %c : tensor<4xf32>, tensor<4xf32>
            }
        "#;
        let (stats, _) = check(
            input,
            &[1, 3, 2],
            &[],
            "
            #0 stablehlo.exponential(%arg0)
            #1 stablehlo.sine(#0)
            #2 stablehlo.negate(%arg0)
            #3 func.return(#2, #1)
            ",
        );
        assert_eq!(stats, RewriteStats { moved_ops: 3, cloned_ops: 0, copies: 0, fused: 0 });
    }

    #[test]
    fn a_node_is_cloned_with_its_init_ops_and_views_read_the_clone() {
        // docs/memory-model.md's example: recompute matmul_3 (empty + fill + matmul) and its
        // view collapse_shape_4 right before exp_5.
        let input = MEMORY_MODEL_EXAMPLE;
        let (stats, text) = check(
            input,
            &[2, 3, 4, 3, 4, 5],
            &[],
            "
            #0 arith.constant()
            #1 tensor.empty()
            #2 linalg.fill(#0, #1)
            #3 linalg.matmul(%arg0, %arg1, #2)
            #4 tensor.collapse_shape(#3)
            #5 tensor.empty()
            #6 linalg.fill(#0, #5)
            #7 linalg.matmul(%arg0, %arg1, #6) recompute
            #8 tensor.collapse_shape(#7) recompute
            #9 tensor.empty()
            #10 linalg.exp(#8, #9)
            #11 func.return(#10)
            ",
        );
        assert_eq!(stats, RewriteStats { moved_ops: 7, cloned_ops: 4, copies: 0, fused: 0 });
        assert_eq!(text.matches(RECOMPUTE_ATTRIBUTE).count(), 2, "{text}");
    }

    #[test]
    fn a_fused_recomputation_is_computed_inside_its_reader() {
        // a = exp(x) is read by b and by c; c may compute a itself. Recomputed right before c,
        // for c alone, the clone is fused into c: no op computes a twice as a buffer.
        let input = r#"
            #map = affine_map<(d0) -> (d0)>
            func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
              %e0 = tensor.empty() : tensor<4xf32>
              %a = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
                  ins(%x : tensor<4xf32>) outs(%e0 : tensor<4xf32>) {
              ^bb0(%in: f32, %out: f32):
                %r = math.exp %in : f32
                linalg.yield %r : f32
              } -> tensor<4xf32>
              %e1 = tensor.empty() : tensor<4xf32>
              %b = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
                  ins(%a : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
              ^bb0(%in: f32, %out: f32):
                %r = arith.negf %in : f32
                linalg.yield %r : f32
              } -> tensor<4xf32>
              %e2 = tensor.empty() : tensor<4xf32>
              %c = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
                  ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32>) {
              ^bb0(%in: f32, %in2: f32, %out: f32):
                %r = arith.mulf %in, %in2 : f32
                linalg.yield %r : f32
              } -> tensor<4xf32>
              return %b, %c : tensor<4xf32>, tensor<4xf32>
            }
        "#;
        let context = RematContext::new();
        let module = context.parse(input, "rewrite.mlir").unwrap();
        let mut imported = import(&module, None, &ImportOptions::default()).unwrap();
        let [a, b, c] = [1, 2, 3].map(NodeId);
        imported.graph.set_fuses(c, vec![a]).unwrap();
        let schedule = [a, b, a, c];
        assert_eq!(remat_graph::lifetimes(&imported.graph, &schedule).unwrap().fused, [false, false, true, false]);
        let stats = apply_schedule(&imported, &schedule).unwrap();
        let text = module.as_operation().to_string();
        context.verify(&module).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        assert_eq!(
            body_text(&imported),
            lines(
                "
                #0 tensor.empty()
                #1 linalg.generic(%arg0, #0)
                #2 tensor.empty()
                #3 linalg.generic(#1, #2)
                #4 tensor.empty()
                #5 linalg.generic(%arg0, #3, #4)
                #6 func.return(#3, #5)
                "
            ),
            "\n{text}"
        );
        assert_eq!(stats, RewriteStats { moved_ops: 6, cloned_ops: 2, copies: 0, fused: 1 });
        assert!(text.contains("math.exp") && text.matches("math.exp").count() == 2, "{text}");
    }

    #[test]
    fn operands_nested_in_regions_read_the_latest_execution() {
        let input = r#"
            #id = affine_map<(d0) -> (d0)>
            func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
              %a = "stablehlo.exponential"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %b = "stablehlo.negate"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %e = tensor.empty() : tensor<4xf32>
              %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%e : tensor<4xf32>) {
              ^bb0(%o: f32):
                %i = linalg.index 0 : index
                %v = tensor.extract %a[%i] : tensor<4xf32>
                %u = tensor.extract %b[%i] : tensor<4xf32>
                %s = arith.addf %v, %u : f32
                linalg.yield %s : f32
              } -> tensor<4xf32>
              return %r : tensor<4xf32>
            }
        "#;
        let (stats, _) = check(
            input,
            &[1, 2, 1, 3],
            &[],
            "
            #0 stablehlo.exponential(%arg0)
            #1 stablehlo.negate(%arg0)
            #2 stablehlo.exponential(%arg0) recompute
            #3 tensor.empty()
            #4 linalg.generic(#3) captures(#2, #1)
            #5 func.return(#4)
            ",
        );
        assert_eq!(stats, RewriteStats { moved_ops: 4, cloned_ops: 1, copies: 0, fused: 0 });
    }

    #[test]
    fn a_recomputed_output_is_returned_from_its_latest_execution() {
        let input = r#"
            func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
              %a = "stablehlo.exponential"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %b = "stablehlo.negate"(%a) : (tensor<4xf32>) -> tensor<4xf32>
              return %a, %b : tensor<4xf32>, tensor<4xf32>
            }
        "#;
        check(
            input,
            &[1, 2, 1],
            &[],
            "
            #0 stablehlo.exponential(%arg0)
            #1 stablehlo.negate(#0)
            #2 stablehlo.exponential(%arg0) recompute
            #3 func.return(#2, #1)
            ",
        );
    }

    #[test]
    fn transfers_copy_to_the_host_and_back_before_the_next_use() {
        let input = r#"
            func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
              %a = "stablehlo.exponential"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %b = "stablehlo.negate"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %c = "stablehlo.multiply"(%b, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
              %d = "stablehlo.add"(%a, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
              return %d : tensor<4xf32>
            }
        "#;
        let (stats, _) = check(
            input,
            &[1, 2, 3, 4],
            &[Transfer { instance: 0, offload_after: 0, prefetch_before: 3 }],
            "
            #0 stablehlo.exponential(%arg0)
            #1 bufferization.alloc_tensor(#0) memory_space=1 : i64
            #2 stablehlo.negate(%arg0)
            #3 stablehlo.multiply(#2, #2)
            #4 bufferization.alloc_tensor(#1) memory_space=0 : i64
            #5 stablehlo.add(#4, #3)
            #6 func.return(#5)
            ",
        );
        assert_eq!(stats, RewriteStats { moved_ops: 4, cloned_ops: 0, copies: 2, fused: 0 });
    }

    #[test]
    fn invalid_schedules_are_rejected_before_anything_moves() {
        let context = RematContext::new();
        let input = r#"
            func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
              %a = "stablehlo.custom_call"(%x) <{call_target_name = "f"}> : (tensor<4xf32>) -> tensor<4xf32>
              %b = "stablehlo.negate"(%a) : (tensor<4xf32>) -> tensor<4xf32>
              return %b : tensor<4xf32>
            }
        "#;
        let module = context.parse(input, "rewrite.mlir").unwrap();
        let before = module.as_operation().to_string();
        let imported = import(&module, None, &ImportOptions::default()).unwrap();
        let e = apply_schedule(&imported, &[NodeId(2), NodeId(1)]).unwrap_err();
        assert_eq!((e.kind, e.step, e.node), (ScheduleErrorKind::InputNotComputed(NodeId(1)), Some(0), NodeId(2)));
        let e = apply_schedule(&imported, &[NodeId(1), NodeId(1), NodeId(2)]).unwrap_err();
        assert_eq!((e.kind, e.step, e.node), (ScheduleErrorKind::ImpureRepeated, Some(1), NodeId(1)));
        let e = apply_schedule(&imported, &[NodeId(1)]).unwrap_err();
        assert_eq!(e.kind, ScheduleErrorKind::NeverExecuted);
        assert_eq!(e.node, NodeId(2));
        assert_eq!(module.as_operation().to_string(), before);
    }
}
