//! The three passes the GPU pipeline adds to upstream's parallel-loops-to-GPU path, so that every
//! memory access of a bufferized step runs in a kernel and the host only allocates, launches and
//! frees (device buffers are not readable on the host).
//!
//! * `remat-gpu-parallelize` (on the module, before `convert-linalg-to-parallel-loops`):
//!   `memref.copy` becomes a parallel loop nest of loads and stores; what would have no
//!   parallel loop — a linalg op on scalars or with only reduction iterators, an `scf.for` at
//!   the top of the function (the sequential read-modify-write of a scatter) — is wrapped in a
//!   one-iteration `scf.parallel`, so `convert-parallel-loops-to-gpu` runs it as a
//!   single-thread kernel. Slow for big reductions, but correct and in the same memory. A
//!   scalar the host reads from device memory (a counter left by an unrolled loop, a dynamic
//!   offset) is copied by such a kernel into a pinned host buffer of its size and read there
//!   (`remat_staging_alloc_next`: staging bytes, outside the plan).
//! * `remat-gpu-check-host` (on `func.func`, after `convert-parallel-loops-to-gpu`): clones
//!   every `memref.get_global` a launch reads into the launch body, so `gpu-kernel-outlining`
//!   copies the constant into the kernel module (device memory, not a host pointer); then
//!   rejects, with a diagnostic at the op, anything left on the host that would touch device
//!   memory. A view of a constant (a slice of a table) moves into the launch with it; a
//!   constant a launch would reach through any other op is an error there.
//! * `remat-gpu-launch-stack` (on the module, after `gpu-to-llvm`): brackets each launch in a
//!   host loop with `llvm.intr.stacksave`/`stackrestore`, so the stack its argument arrays
//!   take is freed after it.

use crate::stablehlo::{create_op, error_at, set_segments, OpError};
use mlir_sys::*;
use remat_mlir::ir::{self, Op, Val};
use std::collections::{HashMap, HashSet};

/// What `remat-gpu-parallelize` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParallelizeStats {
    /// `memref.copy` ops turned into parallel loops.
    pub copies: usize,
    /// Top-level sequential loops wrapped for a single-thread kernel.
    pub sequential_loops: usize,
    /// Scalars the host reads, staged through a pinned host buffer.
    pub read_backs: usize,
}

/// Runs `remat-gpu-parallelize` on every function of `module` (before
/// `convert-linalg-to-parallel-loops`).
pub fn parallelize(module: Op) -> ParallelizeStats {
    let mut stats = ParallelizeStats::default();
    let functions: Vec<Op> = ir::nested_ops(module).into_iter().filter(|&op| ir::op_name(op) == "func.func").collect();
    for func in functions {
        for op in ir::nested_ops(func) {
            if ir::op_name(op) == "memref.copy" {
                copy_as_parallel_loops(op);
                stats.copies += 1;
            }
        }
        for block in ir::regions(func).into_iter().flat_map(ir::blocks) {
            for op in ir::block_ops(block) {
                let name = ir::op_name(op);
                let sequential = (name == "scf.for" && ir::results(op).is_empty())
                    || (name.starts_with("linalg.") && !has_parallel_loop(op));
                if sequential {
                    wrap_in_single_iteration(op);
                    stats.sequential_loops += 1;
                } else if name == "memref.load" && !reads_host_constant(op) {
                    read_back(module, op);
                    stats.read_backs += 1;
                }
            }
        }
    }
    stats
}

/// Marks the host's read of a staged scalar, which `remat-gpu-check-host` accepts.
const HOST_READ: &str = "remat.host_read";

/// A scalar the host code needs from device memory (a loop counter, a dynamic offset): a
/// kernel copies it into a pinned host buffer of its size (counted as staging bytes, apart
/// from the plan's host bytes), which the host then reads and frees. Launches are
/// synchronous, so the value is there when read.
fn read_back(module: Op, load: Op) {
    let location = ir::location(load);
    let block = ir::op_block(load);
    let element = ir::value_type(ir::results(load)[0]);
    let scalar_buffer =
        unsafe { mlirMemRefTypeGet(element, 0, std::ptr::null(), mlirAttributeGetNull(), mlirAttributeGetNull()) };
    let alloc = create_op("memref.alloc", location, &[], &[scalar_buffer], vec![]);
    set_segments(alloc, &[0, 0]);
    ir::insert_before(block, load, alloc);
    crate::host_buffers::mark_allocation(module, alloc, crate::host_buffers::STAGING_ALLOC_NEXT);
    let host = ir::results(alloc)[0];
    // The device load and a store into the host buffer, in a one-iteration loop (a kernel).
    let copy = create_op("memref.store", location, &[ir::results(load)[0], host], &[], vec![]);
    ir::insert_before(block, load, copy);
    let host_value = create_op("memref.load", location, &[host], &[element], vec![]);
    ir::set_unit_attribute(host_value, HOST_READ);
    ir::insert_before(block, load, host_value);
    for (user, index) in ir::uses(ir::results(load)[0]) {
        if !ir::same_op(user, copy) {
            ir::set_operand(user, index, ir::results(host_value)[0]);
        }
    }
    ir::move_before(load, copy);
    wrap_range_in_single_iteration(load, copy);
    let dealloc = create_op("memref.dealloc", location, &[host], &[], vec![]);
    let after = ir::next_op(host_value).expect("a load is never a block's terminator");
    ir::insert_before(block, after, dealloc);
}

/// Whether `linalg_op` (on buffers) will have a parallel loop: a generic with a parallel
/// iterator, or another structured op whose output is not a scalar (rank 0).
fn has_parallel_loop(linalg_op: Op) -> bool {
    if let Some(iterators) = ir::attribute(linalg_op, "iterator_types") {
        return ir::attribute_text(iterators).contains("parallel");
    }
    ir::operands(linalg_op).last().is_some_and(|&init| {
        let t = ir::value_type(init);
        !ir::is_memref(t) || unsafe { mlirShapedTypeGetRank(t) } > 0
    })
}

/// `memref.copy %src, %dst` → `scf.parallel` over `%dst`'s shape with a load and a store.
fn copy_as_parallel_loops(copy: Op) {
    let [source, target] = ir::operands(copy)[..] else { return };
    let location = ir::location(copy);
    let context = unsafe { mlirOperationGetContext(copy) };
    let index = unsafe { mlirIndexTypeGet(context) };
    let target_type = ir::value_type(target);
    let rank = unsafe { mlirShapedTypeGetRank(target_type) } as usize;
    let before = |op: Op| {
        ir::insert_before(ir::op_block(copy), copy, op);
        op
    };
    let constant =
        |value: i64| ir::results(before(ir::create_integer_constant("arith.constant", index, value, location)))[0];
    let (zero, one) = (constant(0), constant(1));
    let mut bounds = Vec::with_capacity(rank);
    for d in 0..rank {
        let size = unsafe { mlirShapedTypeGetDimSize(target_type, d as isize) };
        bounds.push(if unsafe { mlirShapedTypeIsDynamicSize(size) } {
            let dim = constant(d as i64);
            ir::results(before(create_op("memref.dim", location, &[target, dim], &[index], vec![])))[0]
        } else {
            constant(size)
        });
    }
    // A rank-0 copy still needs a loop for the GPU mapping: one iteration.
    let (lower, upper, steps) =
        if rank == 0 { (vec![zero], vec![one], vec![one]) } else { (vec![zero; rank], bounds, vec![one; rank]) };
    let (block, parallel) = parallel_loop(location, &lower, &upper, &steps);
    before(parallel);
    let ivs = if rank == 0 { Vec::new() } else { ir::block_arguments(block) };
    let terminator = ir::block_ops(block)[0];
    let element = unsafe { mlirShapedTypeGetElementType(target_type) };
    let mut load_operands = vec![source];
    load_operands.extend(&ivs);
    let load = create_op("memref.load", location, &load_operands, &[element], vec![]);
    ir::insert_before(block, terminator, load);
    let mut store_operands = vec![ir::results(load)[0], target];
    store_operands.extend(&ivs);
    ir::insert_before(block, terminator, create_op("memref.store", location, &store_operands, &[], vec![]));
    ir::erase(copy);
}

/// An unattached `scf.parallel` with an empty body (just its `scf.reduce`); returns the body.
fn parallel_loop(location: MlirLocation, lower: &[Val], upper: &[Val], steps: &[Val]) -> (MlirBlock, Op) {
    unsafe {
        let context = mlirLocationGetContext(location);
        let index = mlirIndexTypeGet(context);
        let types = vec![index; lower.len()];
        let locations = vec![location; lower.len()];
        let block = mlirBlockCreate(types.len() as isize, types.as_ptr(), locations.as_ptr());
        mlirBlockAppendOwnedOperation(block, create_op("scf.reduce", location, &[], &[], vec![]));
        let region = mlirRegionCreate();
        mlirRegionAppendOwnedBlock(region, block);
        let operands: Vec<Val> = lower.iter().chain(upper).chain(steps).copied().collect();
        let op = create_op("scf.parallel", location, &operands, &[], vec![region]);
        let n = lower.len() as i32;
        set_segments(op, &[n, n, n, 0]);
        (block, op)
    }
}

/// Moves `op` into a one-iteration `scf.parallel` put where it was.
fn wrap_in_single_iteration(op: Op) {
    wrap_range_in_single_iteration(op, op);
}

/// Moves the ops from `first` to `last` (one block, in order, no result used after `last`) into
/// a one-iteration `scf.parallel` put where they were.
fn wrap_range_in_single_iteration(first: Op, last: Op) {
    let location = ir::location(first);
    let index = unsafe { mlirIndexTypeGet(mlirOperationGetContext(first)) };
    let block = ir::op_block(first);
    let constant = |value: i64| {
        let c = ir::create_integer_constant("arith.constant", index, value, location);
        ir::insert_before(block, first, c);
        ir::results(c)[0]
    };
    let (zero, one) = (constant(0), constant(1));
    let (body, parallel) = parallel_loop(location, &[zero], &[one], &[one]);
    ir::insert_before(block, first, parallel);
    let terminator = ir::block_ops(body)[0];
    let mut op = first;
    loop {
        let next = ir::next_op(op);
        ir::move_before(op, terminator);
        if ir::same_op(op, last) {
            break;
        }
        op = next.expect("`last` follows `first` in its block");
    }
}

/// What `remat-gpu-check-host` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckHostStats {
    /// `memref.get_global`s and views of them cloned into launch bodies.
    pub sunk_constants: usize,
    /// Kernels (`gpu.launch`) in the function.
    pub launches: usize,
}

/// Runs `remat-gpu-launch-stack` on `module` (LLVM dialect, launches not yet translated):
/// brackets every `gpu.launch_func` outside its function's entry block with
/// `llvm.intr.stacksave` / `llvm.intr.stackrestore`. Translating a launch allocates its
/// argument arrays on the stack where the launch is; in the entry block that is part of the
/// fixed frame, but elsewhere (a host loop over a dimension the GPU mapping left sequential)
/// each iteration would take more stack until the step overflows it. Returns the launches
/// bracketed.
pub fn bound_launch_stack(module: Op) -> usize {
    let launches: Vec<Op> =
        ir::nested_ops(module).into_iter().filter(|&op| ir::op_name(op) == "gpu.launch_func").collect();
    let pointer = unsafe { mlirTypeParseGet(mlirOperationGetContext(module), ir::string_ref("!llvm.ptr")) };
    let mut bracketed = 0;
    for launch in launches {
        let block = ir::op_block(launch);
        let entry = unsafe { mlirRegionGetFirstBlock(mlirBlockGetParentRegion(block)) };
        if entry.ptr == block.ptr {
            continue;
        }
        let location = ir::location(launch);
        let save = create_op("llvm.intr.stacksave", location, &[], &[pointer], vec![]);
        ir::insert_before(block, launch, save);
        let restore = create_op("llvm.intr.stackrestore", location, &[ir::results(save)[0]], &[], vec![]);
        let after = ir::next_op(launch).expect("a launch is never a block's terminator");
        ir::insert_before(block, after, restore);
        bracketed += 1;
    }
    bracketed
}

/// Host ops that read or write buffer contents: none may be left outside a `gpu.launch`.
fn touches_memory(name: &str) -> bool {
    matches!(
        name,
        "memref.load"
            | "memref.store"
            | "memref.copy"
            | "memref.atomic_rmw"
            | "scf.parallel"
            | "affine.load"
            | "affine.store"
    ) || name.starts_with("linalg.")
        || name.starts_with("vector.")
}

/// Runs `remat-gpu-check-host` on one function.
pub fn check_host(func: Op) -> Result<CheckHostStats, OpError> {
    let mut stats = CheckHostStats::default();
    let mut host_ops = Vec::new();
    collect_host_ops(func, &mut host_ops, &mut stats);
    for launch in ir::nested_ops(func).into_iter().filter(|&op| ir::op_name(op) == "gpu.launch") {
        reject_host_constants(launch)?;
    }
    for op in host_ops {
        let name = ir::op_name(op);
        if touches_memory(&name) && !reads_host_constant(op) && ir::attribute(op, HOST_READ).is_none() {
            return Err(error_at(
                op,
                format!("'{name}' would touch device memory from host code: the GPU lowering runs every memory access in a kernel, and this op was not mapped to one"),
            ));
        }
    }
    Ok(stats)
}

/// After sinking, a launch that still reads a value the host derives from a global, through an
/// op that is not one of [`VIEWS`], would be handed the host's copy: an error at that op
/// rather than a kernel that faults on the device.
fn reject_host_constants(launch: Op) -> Result<(), OpError> {
    let inside = ops_within(launch);
    for op in ir::nested_ops(launch) {
        for v in ir::operands(op) {
            let mut value = v;
            // Buffers only: a scalar the host loaded from a constant is the value itself.
            while let Some((def, _)) = ir::defining_op(value).filter(|_| ir::is_memref(ir::value_type(value))) {
                if inside.contains(&ir::op_key(def)) {
                    break;
                }
                let name = ir::op_name(def);
                if name == "memref.get_global" {
                    let via = ir::defining_op(v).map(|(d, _)| d).unwrap_or(def);
                    return Err(error_at(
                        via,
                        format!(
                            "'{}' of a constant would give a kernel the host's copy: only the global and its views ({}) move into a launch",
                            ir::op_name(via),
                            VIEWS.join(", ")
                        ),
                    ));
                }
                match ir::operands(def).first() {
                    Some(&source) if ir::is_memref(ir::value_type(source)) => value = source,
                    _ => break,
                }
            }
        }
    }
    Ok(())
}

/// A `memref.load` from a `memref.get_global` on the host reads host memory (the global the
/// host code refers to; launches get their own device copy): an unrolled loop's counter, say.
fn reads_host_constant(op: Op) -> bool {
    ir::op_name(op) == "memref.load"
        && ir::operands(op)
            .first()
            .and_then(|&m| ir::defining_op(m))
            .is_some_and(|(def, _)| ir::op_name(def) == "memref.get_global")
}

/// Ops outside launches go to `out`; each launch gets its constants sunk.
fn collect_host_ops(op: Op, out: &mut Vec<Op>, stats: &mut CheckHostStats) {
    for region in ir::regions(op) {
        for block in ir::blocks(region) {
            for inner in ir::block_ops(block) {
                if ir::op_name(inner) == "gpu.launch" {
                    stats.launches += 1;
                    stats.sunk_constants += sink_constants(inner);
                } else {
                    out.push(inner);
                    collect_host_ops(inner, out, stats);
                }
            }
        }
    }
}

/// The keys of `launch` and every op nested in it.
fn ops_within(launch: Op) -> HashSet<usize> {
    std::iter::once(launch).chain(ir::nested_ops(launch)).map(ir::op_key).collect()
}

/// Views that keep their source's memory: a view of a global is the global's memory too.
const VIEWS: [&str; 6] = [
    "memref.subview",
    "memref.reinterpret_cast",
    "memref.expand_shape",
    "memref.collapse_shape",
    "memref.cast",
    "memref.transpose",
];

/// Clones every `memref.get_global` defined outside `launch` and used inside it — directly or
/// through a chain of views on the host (a slice of a constant table) — to the start of the
/// launch body, and points the inside uses at the clones. Left outside, the kernel would be
/// handed the address of the host's copy, which the device cannot read. Returns the number of
/// ops cloned.
fn sink_constants(launch: Op) -> usize {
    let Some(body) = ir::regions(launch).first().and_then(|&r| ir::blocks(r).first().copied()) else { return 0 };
    let inside = ops_within(launch);
    // Clones go to the start of the body in the order made, each after the ones it reads.
    let first = ir::block_ops(body)[0];
    let mut clones: HashMap<usize, Val> = HashMap::new();
    for op in ir::nested_ops(launch) {
        for (i, v) in ir::operands(op).into_iter().enumerate() {
            if let Some(clone) = sink_global_view(v, &inside, body, first, &mut clones) {
                ir::set_operand(op, i, clone);
            }
        }
    }
    clones.len()
}

/// The clone inside the launch of `v` when `v` is defined outside it as a global or a view of
/// one (memoized in `clones`); `None` for anything else.
fn sink_global_view(
    v: Val,
    inside: &HashSet<usize>,
    body: MlirBlock,
    first: Op,
    clones: &mut HashMap<usize, Val>,
) -> Option<Val> {
    let (def, index) = ir::defining_op(v)?;
    if inside.contains(&ir::op_key(def)) {
        return None;
    }
    if let Some(&clone) = clones.get(&ir::value_key(v)) {
        return Some(clone);
    }
    let name = ir::op_name(def);
    let source = if name == "memref.get_global" {
        None
    } else if VIEWS.contains(&name.as_str()) {
        // Only the viewed buffer moves; offsets and sizes are host scalars the kernel receives.
        Some(sink_global_view(*ir::operands(def).first()?, inside, body, first, clones)?)
    } else {
        return None;
    };
    let clone = ir::clone_op(def);
    ir::insert_before(body, first, clone);
    if let Some(source) = source {
        ir::set_operand(clone, 0, source);
    }
    let result = ir::results(clone)[index];
    clones.insert(ir::value_key(v), result);
    Some(result)
}
