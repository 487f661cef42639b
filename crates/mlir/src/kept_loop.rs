//! Loops kept whole (more iterations than `--unroll-limit`) in the memory model.
//!
//! `remat-lower-stablehlo` lowers a `stablehlo.while` whose trip count can be evaluated before
//! the step runs to an `scf.for` that reads the values its body returns unchanged from above
//! and writes every other value it carries in place: a *stack* (the body writes slices into
//! it: a scan's residuals, its gradients) by the body's own writes, a *state* (the body
//! replaces it: a scan's carry, its counter) by a copy of the new value into the old one's
//! buffer at the end of the body. One-shot bufferization then gives the loop no buffers of its
//! own but each iteration's temporaries, and the loop's results are its inits' buffers, freed
//! after their last uses (measured with `remat-run --trace-allocs`). Left to itself it would
//! copy every loop-invariant value before the loop, and yield a fresh buffer for each state
//! in each iteration, which ownership-based deallocation could free only with the init, at
//! the end of the step (a result is its init when the loop runs no iteration).
//!
//! [`isolate_loop_inits`] prepares the step so that this is what the graph says:
//!
//! * an init the loop cannot write into (a constant, an argument, a view, a value read
//!   elsewhere too) gets an explicit copy (`bufferization.alloc_tensor copy(…)`, as the
//!   importer gives destinations), which bufferization would make anyway, in an order that
//!   does not depend on the plan;
//! * a loop result the step returns is returned through a copy (bufferization would clone it
//!   there: it cannot tell a result from its init);
//! * the body's calls are inlined and its inits untied (by the importer), as in the step's body;
//! * loops in the body are prepared and modelled first; the outer iteration holds their
//!   workspace while they run.
//!
//! A replaced value that is a carried value or a view of one is staged in a fresh buffer before
//! the write-backs ([`is_carried_view`]); the iteration's peak counts it.
//!
//! The importer then gives the loop a node that owns nothing, whose workspace
//! ([`remat_graph::Node::workspace`]) is the peak of one iteration's buffers, and each result
//! it changes a node of its own: an in-place update, a view of its init.
//!
//! A loop whose trip count is known only when the step runs stays an `scf.while`, whose
//! condition copies every state in every iteration; it is not in the model (a warning says so),
//! nor is a loop with one such in its body.

use crate::ir::{self, Op, Val};
use crate::ops;
use crate::unroll;
use indexmap::IndexMap;
use mlir_sys::MlirBlock;

/// Loops whose trip count is evaluated up to this many iterations are lowered to `scf.for`
/// and modelled here.
pub const MAX_COUNTED_TRIPS: usize = 1 << 20;

/// What the memory model knows of a loop kept whole.
#[derive(Clone, Debug)]
pub(crate) struct KeptLoop {
    /// The results the body changes, each written into its init's buffer (the others are
    /// their inits).
    pub results: Vec<usize>,
    /// The most bytes one iteration holds beyond the loop's carried values.
    pub workspace: u64,
    /// The work of all its iterations.
    pub cost: f64,
}

/// For each top-level loop of `body` with a trip count known before the step runs (kept
/// whole: the unroller has run), gives each value it carries and changes an init that only
/// the loop writes (see the module docs), and returns the loops' models by op key. Loops the
/// model cannot follow (a loop in the body, a state replaced by another carried value) are
/// left out. `untie_inits` gives each op of a loop's body a destination of its own, as the
/// importer does in the step's body.
pub(crate) fn isolate_loop_inits(body: MlirBlock, untie_inits: &impl Fn(MlirBlock)) -> IndexMap<usize, KeptLoop> {
    let mut kept = IndexMap::new();
    for op in ir::block_ops(body) {
        if ir::op_name(op) != "stablehlo.while" {
            continue;
        }
        let at = || ir::location_text(ir::location(op));
        let Some(trips) = unroll::static_trip_count(op, MAX_COUNTED_TRIPS) else {
            tracing::debug!(loop_at = %at(), "loop outside the model: its trip count is not static");
            continue;
        };
        let Some(carried) = classify(op) else {
            tracing::debug!(loop_at = %at(), "loop outside the model: its regions do not match its values");
            continue;
        };
        if let Some(loop_body) = loop_body(op) {
            untie_inits(loop_body);
            // Loops in the body (a PRNG's rounds in a scanned layer) first: the body's
            // iteration holds theirs while they run.
            kept.extend(isolate_loop_inits(loop_body, untie_inits));
        }
        for (k, class) in carried.iter().enumerate() {
            if *class == Carried::Invariant {
                continue;
            }
            let init = ir::operands(op)[k];
            // The loop writes into its init's buffer: one only it reads, that owns its bytes.
            let owned = ir::defining_op(init).is_some_and(|(p, _)| {
                let name = ir::op_name(p);
                ir::op_block(p).ptr == body.ptr
                    && !ops::is_constant(&name)
                    && !ops::is_view(&name)
                    && ir::uses(init).len() == 1
            });
            if owned {
                continue;
            }
            ir::read_through_copy(body, op, k);
        }
        let Some(workspace) = iteration_peak(op, &carried, &kept) else {
            tracing::debug!(loop_at = %at(), "loop outside the model: a value of its body has no static size, or a loop in it is outside");
            continue;
        };
        let body_cost: f64 = loop_body(op)
            .map(|b| {
                let body_ops = ir::block_ops(b);
                body_ops[..body_ops.len().saturating_sub(1)]
                    .iter()
                    .map(|&o| kept.get(&ir::op_key(o)).map_or_else(|| ops::cost(o), |inner| inner.cost))
                    .sum()
            })
            .unwrap_or(0.0);
        tracing::debug!(loop_at = %ir::location_text(ir::location(op)), trips, workspace, "loop kept whole");
        let results = (0..carried.len()).filter(|&k| carried[k] != Carried::Invariant).collect();
        kept.insert(ir::op_key(op), KeptLoop { results, workspace, cost: trips as f64 * body_cost });
    }
    if ir::block_ops(body).last().is_some_and(|&t| ir::op_name(t) == "func.return") {
        copy_returned_results(body, &kept);
    }
    kept
}

/// Gives each result of a loop in `kept` that the step returns a copy to return instead:
/// ownership-based deallocation copies it there anyway (it cannot tell whether the result is
/// the loop's init), and a copy of the importer's is a node of the model.
fn copy_returned_results(body: MlirBlock, kept: &IndexMap<usize, KeptLoop>) {
    let Some(&terminator) = ir::block_ops(body).last() else { return };
    for (n, value) in ir::operands(terminator).into_iter().enumerate() {
        let Some((producer, k)) = ir::defining_op(value) else { continue };
        if !kept.get(&ir::op_key(producer)).is_some_and(|l| l.results.contains(&k)) {
            continue;
        }
        ir::read_through_copy(body, terminator, n);
    }
}

/// How the loop treats a value it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Carried {
    /// Returned unchanged: read from above, no buffer of the loop's.
    Invariant,
    /// Only written into, in place.
    Stack,
    /// Replaced by a fresh value in each iteration.
    State,
}

/// The body block of `stablehlo.while` `op` (its second region's).
pub(crate) fn loop_body(op: Op) -> Option<MlirBlock> {
    ir::blocks(*ir::regions(op).get(1)?).first().copied()
}

/// The class of each carried value, or `None` where the model cannot follow the loop.
pub(crate) fn classify(op: Op) -> Option<Vec<Carried>> {
    let body = loop_body(op)?;
    let ops_in_body = ir::block_ops(body);
    let arguments = ir::block_arguments(body);
    let yields = ir::operands(*ops_in_body.last()?);
    if arguments.len() != yields.len() || yields.len() != ir::operands(op).len() {
        return None;
    }
    let carried: Vec<Carried> = arguments
        .iter()
        .zip(&yields)
        .map(|(&argument, &yielded)| {
            if ir::same_value(argument, yielded) {
                Carried::Invariant
            } else if writes_in_place(yielded, argument) {
                Carried::Stack
            } else {
                Carried::State
            }
        })
        .collect();
    Some(carried)
}

/// Whether `value`, which a loop's body returns for a value it replaces, is a carried
/// argument of the body or a view of one (`arguments`: the body's arguments that the loop does
/// not return unchanged). Written back in place it would be overwritten before it is read (a
/// PRNG's rounds swap their words), so the lowering stages it in a fresh buffer first.
pub fn is_carried_view(value: Val, arguments: &[Val]) -> bool {
    let root = storage_root(value);
    arguments.iter().any(|&a| ir::same_value(a, root))
}

/// The value whose buffer `v` is a view of (itself if none).
fn storage_root(mut v: Val) -> Val {
    while let Some((producer, _)) = ir::defining_op(v) {
        if !ops::is_view(&ir::op_name(producer)) {
            break;
        }
        match ir::operands(producer).first() {
            Some(&source) => v = source,
            None => break,
        }
    }
    v
}

/// Whether `value` is `argument` with slices written into it: a chain of destination-passing
/// writes (`tensor.insert_slice`, `stablehlo.dynamic_update_slice`) whose first destination
/// is `argument`, each destination read by nothing else.
pub fn writes_in_place(value: Val, argument: Val) -> bool {
    let mut current = value;
    loop {
        if ir::same_value(current, argument) {
            return true;
        }
        let Some((producer, _)) = ir::defining_op(current) else { return false };
        let destination = match ir::op_name(producer).as_str() {
            "stablehlo.dynamic_update_slice" => 0,
            _ => match ops::destination_operands(producer) {
                d if d.len() == 1 && ir::results(producer).len() == 1 => d.start,
                _ => return false,
            },
        };
        let next = ir::operands(producer)[destination];
        if ir::uses(next).len() != 1 {
            return false;
        }
        current = next;
    }
}

/// The most bytes one iteration holds of its own (the carried values and the values it reads
/// from above excluded): each buffer its ops make, from the op that makes it to its last use
/// (to the end for the values it returns, which the lowering copies into their buffers
/// there). `None` if a value's size is not static.
fn iteration_peak(op: Op, carried: &[Carried], nested: &IndexMap<usize, KeptLoop>) -> Option<u64> {
    struct Buffer {
        bytes: u64,
        made_at: usize,
        last_use: usize,
    }
    let body = loop_body(op)?;
    let body_ops = ir::block_ops(body);
    let (terminator, body_ops) = body_ops.split_last()?;
    let end = body_ops.len();
    let mut buffers: Vec<Buffer> = Vec::new();
    // The buffer a value lives in, where it is one of the iteration's.
    let mut buffer_of: IndexMap<usize, usize> = IndexMap::new();
    // A loop in the body holds its workspace while it runs.
    let mut transient: Vec<(usize, u64)> = Vec::new();
    for (i, &o) in body_ops.iter().enumerate() {
        let name = ir::op_name(o);
        if ops::is_constant(&name) {
            continue;
        }
        if ir::nested_ops(o).iter().any(|&n| ir::op_name(n) == "stablehlo.while") {
            return None; // a loop deeper in an op's regions
        }
        let inner = (name == "stablehlo.while").then(|| nested.get(&ir::op_key(o)));
        if let Some(inner) = inner {
            let inner = inner?; // a loop the model does not follow
            transient.push((i, inner.workspace));
        }
        let operands = ir::operands(o);
        let results = ir::results(o);
        for (k, &r) in results.iter().enumerate() {
            let source = if ops::is_view(&name) {
                operands.first().copied()
            } else if name == "stablehlo.optimization_barrier" || name == "stablehlo.while" {
                // A barrier's results are its operands; a loop's are its inits' buffers.
                operands.get(k).copied()
            } else {
                let destination = if name == "stablehlo.dynamic_update_slice" {
                    Some(0)
                } else {
                    let destinations = ops::destination_operands(o);
                    (destinations.len() == results.len()).then(|| destinations.clone().nth(k)).flatten()
                };
                // Written in place where nothing else reads the destination.
                destination.map(|d| operands[d]).filter(|&d| ir::uses(d).len() == 1)
            };
            match source {
                Some(s) => {
                    if let Some(&b) = buffer_of.get(&ir::value_key(s)) {
                        buffer_of.insert(ir::value_key(r), b);
                    }
                }
                None => {
                    let bytes = match ir::type_bytes(ir::value_type(r)) {
                        ir::TypeBytes::Static(b) => b,
                        ir::TypeBytes::NotATensor | ir::TypeBytes::MemRef => 0,
                        _ => return None,
                    };
                    buffer_of.insert(ir::value_key(r), buffers.len());
                    buffers.push(Buffer { bytes, made_at: i, last_use: i });
                }
            }
        }
    }
    for (i, &o) in body_ops.iter().enumerate() {
        for n in std::iter::once(o).chain(ir::nested_ops(o)) {
            for v in ir::operands(n) {
                if let Some(&b) = buffer_of.get(&ir::value_key(v)) {
                    buffers[b].last_use = buffers[b].last_use.max(i);
                }
            }
        }
    }
    for v in ir::operands(*terminator) {
        if let Some(&b) = buffer_of.get(&ir::value_key(v)) {
            buffers[b].last_use = end;
        }
    }
    // Replaced values that are carried values (or views of them) are staged in fresh buffers
    // at the end of the body (see `is_carried_view`).
    let arguments = ir::block_arguments(body);
    let changing: Vec<Val> =
        arguments.iter().zip(carried).filter(|(_, c)| **c != Carried::Invariant).map(|(&a, _)| a).collect();
    let staged: u64 = ir::operands(*terminator)
        .iter()
        .zip(carried)
        .filter(|(&y, c)| **c == Carried::State && is_carried_view(y, &changing))
        .map(|(&y, _)| match ir::type_bytes(ir::value_type(y)) {
            ir::TypeBytes::Static(b) => b,
            _ => 0,
        })
        .sum();
    transient.push((end, staged));
    let mut delta = vec![0i128; end + 2];
    for b in &buffers {
        delta[b.made_at] += b.bytes as i128;
        delta[b.last_use + 1] -= b.bytes as i128;
    }
    for &(i, bytes) in &transient {
        delta[i] += bytes as i128;
        delta[i + 1] -= bytes as i128;
    }
    let mut live = 0i128;
    let mut peak = 0i128;
    for d in &delta[..=end] {
        live += d;
        peak = peak.max(live);
    }
    Some(peak as u64)
}
