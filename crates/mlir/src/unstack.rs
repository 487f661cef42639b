//! Unstacking scan residuals: store-to-load forwarding on tensors.
//!
//! A `lax.scan` forward writes each iteration's residuals into *stacked* buffers
//! (`stablehlo.dynamic_update_slice`, or `tensor.insert_slice` in jaxlib's linalg form) that
//! the backward scan reads back slice by slice (`stablehlo.dynamic_slice`,
//! `tensor.extract_slice`). Once the loops are unrolled ([`crate::unroll`]) every index is a
//! constant, but a stack is still one value that lives from the first forward write to the
//! last backward read, so no planner could free or recompute one iteration's slice.
//!
//! Here a read whose region is exactly the region of an earlier write in its stack's chain of
//! writes, with nothing in between overlapping it, becomes a direct use of the written value:
//! that is what the read returns, element for element. Writes that cover no part of the read
//! are looked through; a write that overlaps it partly, a read of another shape or type, a
//! chain that reaches anything but a write (an argument, a loop kept as one node, an op that
//! reads the stack whole) leave the read as it is. A stack whose reads were all forwarded is
//! dead and is erased with the writes that built it; a stack that escapes (returned, read
//! whole) keeps its writes. Indices are evaluated like loop counters
//! ([`crate::unroll::Evaluator`]), with StableHLO's clamping of start indices
//! (`dynamic_slice`, `dynamic_update_slice` in the StableHLO specification).

use crate::ir::{self, Op, Val};
use crate::ops;
use crate::unroll::Evaluator;
use mlir_sys::MlirBlock;

/// What [`forward_stacked_slices`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Unstacked {
    /// Reads replaced by the value written there.
    pub forwarded: usize,
    /// Ops erased: the forwarded reads and what only they used (writes, stacks, indices).
    pub erased: usize,
}

/// A rectangular region of a ranked tensor: per dimension, start and size (unit strides).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Region {
    offsets: Vec<i64>,
    sizes: Vec<i64>,
}

impl Region {
    fn disjoint(&self, other: &Region) -> bool {
        self.offsets
            .iter()
            .zip(&self.sizes)
            .zip(other.offsets.iter().zip(&other.sizes))
            .any(|((&a, &sa), (&b, &sb))| a.saturating_add(sa) <= b || b.saturating_add(sb) <= a)
    }
}

/// A top-level op that reads a region of a tensor: (the tensor, the region).
fn read_region(op: Op) -> Option<(Val, Region)> {
    let name = ir::op_name(op);
    let operands = ir::operands(op);
    let source = *operands.first()?;
    let shape = shape_of(source)?;
    let region = match name.as_str() {
        "stablehlo.dynamic_slice" => {
            let sizes = i64_array(op, "slice_sizes")?;
            let starts = evaluate_all(&operands[1..])?;
            clamped(&shape, starts, sizes)?
        }
        "stablehlo.slice" => {
            let start = i64_array(op, "start_indices")?;
            let limit = i64_array(op, "limit_indices")?;
            if i64_array(op, "strides")?.iter().any(|&s| s != 1) {
                return None;
            }
            let sizes = start.iter().zip(&limit).map(|(&s, &l)| l - s).collect();
            Region { offsets: start, sizes }
        }
        "tensor.extract_slice" => tensor_slice_region(op, &operands[1..])?,
        _ => return None,
    };
    (region.offsets.len() == shape.len()).then_some((source, region))
}

/// A top-level op that writes a region of a tensor: (the tensor written into, the value
/// written, the region).
fn write_region(op: Op) -> Option<(Val, Val, Region)> {
    let name = ir::op_name(op);
    let operands = ir::operands(op);
    let (base, update, region) = match name.as_str() {
        "stablehlo.dynamic_update_slice" => {
            let (&base, &update) = (operands.first()?, operands.get(1)?);
            let sizes = shape_of(update)?;
            let starts = evaluate_all(&operands[2..])?;
            (base, update, clamped(&shape_of(base)?, starts, sizes)?)
        }
        "tensor.insert_slice" => {
            let (&update, &base) = (operands.first()?, operands.get(1)?);
            (base, update, tensor_slice_region(op, &operands[2..])?)
        }
        _ => return None,
    };
    (region.offsets.len() == shape_of(base)?.len()).then_some((base, update, region))
}

/// The region of a `tensor.extract_slice`/`insert_slice` whose sizes and strides are static
/// (strides 1); `dynamic` are the operands after the source (and destination).
fn tensor_slice_region(op: Op, dynamic: &[Val]) -> Option<Region> {
    // ShapedType::kDynamic marks an entry given by an operand.
    const DYNAMIC: i64 = i64::MIN;
    let static_offsets = i64_array(op, "static_offsets")?;
    let sizes = i64_array(op, "static_sizes")?;
    let strides = i64_array(op, "static_strides")?;
    if sizes.contains(&DYNAMIC) || strides.iter().any(|&s| s != 1) {
        return None;
    }
    let dynamic_count = static_offsets.iter().filter(|&&o| o == DYNAMIC).count();
    if dynamic.len() != dynamic_count {
        return None;
    }
    let mut values = evaluate_all(dynamic)?.into_iter();
    let offsets: Option<Vec<i64>> =
        static_offsets.iter().map(|&o| if o == DYNAMIC { values.next() } else { Some(o) }).collect();
    Some(Region { offsets: offsets?, sizes })
}

/// StableHLO clamps each start index into `[0, dim - size]` (spec: `dynamic_slice`,
/// `dynamic_update_slice`).
fn clamped(shape: &[i64], starts: Vec<i64>, sizes: Vec<i64>) -> Option<Region> {
    if starts.len() != shape.len() || sizes.len() != shape.len() {
        return None;
    }
    let offsets = starts.iter().zip(shape).zip(&sizes).map(|((&s, &d), &n)| s.clamp(0, (d - n).max(0))).collect();
    Some(Region { offsets, sizes })
}

fn evaluate_all(values: &[Val]) -> Option<Vec<i64>> {
    let mut eval = Evaluator::default();
    values.iter().map(|&v| eval.value(v)).collect()
}

fn shape_of(v: Val) -> Option<Vec<i64>> {
    Some(ir::tensor_shape(ir::value_type(v))?.into_iter().map(|d| d as i64).collect())
}

fn i64_array(op: Op, name: &str) -> Option<Vec<i64>> {
    ir::dense_i64_array(ir::attribute(op, name)?)
}

/// The value an earlier write put exactly where `read` reads, if the read sees it.
fn forwarded_value(read: Op, body: MlirBlock) -> Option<Val> {
    let (mut stack, region) = read_region(read)?;
    let result_type = ir::value_type(*ir::results(read).first()?);
    loop {
        let (write, _) = ir::defining_op(stack)?;
        if ir::op_block(write).ptr != body.ptr {
            return None;
        }
        let (base, update, written) = write_region(write)?;
        match seen_through(&written, &region) {
            Seen::Written => return ir::types_equal(ir::value_type(update), result_type).then_some(update),
            Seen::Untouched => stack = base,
            Seen::Overlapped => return None,
        }
    }
}

/// What a read of `read` finds in a write of `written`, walking back from the read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// The write wrote exactly the region read: the read returns the written value.
    Written,
    /// The write wrote none of it: the read sees whatever the write wrote into.
    Untouched,
    /// The write wrote part of it, or more: the read's value is not one written value.
    Overlapped,
}

fn seen_through(written: &Region, read: &Region) -> Seen {
    if written == read {
        Seen::Written
    } else if written.disjoint(read) {
        Seen::Untouched
    } else {
        Seen::Overlapped
    }
}

/// Forwards every read of a stacked tensor in `body` that sees exactly one earlier write (see
/// the module docs) and erases what only those reads kept alive.
pub(crate) fn forward_stacked_slices(body: MlirBlock) -> Unstacked {
    let mut done = Unstacked::default();
    let mut dead: Vec<Op> = Vec::new();
    for op in ir::block_ops(body) {
        let Some(value) = forwarded_value(op, body) else { continue };
        ir::replace_all_uses(ir::results(op)[0], value);
        done.forwarded += 1;
        dead.push(op);
    }
    // Erase the forwarded reads, then whatever only they used, producers after consumers.
    while let Some(op) = dead.pop() {
        if !ir::results(op).iter().all(|&r| ir::uses(r).is_empty()) || !ops::is_pure(op) {
            continue;
        }
        let producers: Vec<Op> = ir::operands(op)
            .into_iter()
            .filter_map(|v| ir::defining_op(v).map(|(p, _)| p))
            .filter(|&p| ir::op_block(p).ptr == body.ptr)
            .collect();
        ir::erase(op);
        done.erased += 1;
        for p in producers {
            if !dead.iter().any(|&d| ir::op_key(d) == ir::op_key(p)) {
                dead.push(p);
            }
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::{clamped, seen_through, Region, Seen};
    use remat_rng::SplitMix64;

    fn region(offsets: &[i64], sizes: &[i64]) -> Region {
        Region { offsets: offsets.to_vec(), sizes: sizes.to_vec() }
    }

    #[test]
    fn start_indices_clamp_into_the_tensor_as_stablehlo_says() {
        assert_eq!(clamped(&[3, 4], vec![7, 0], vec![1, 4]), Some(region(&[2, 0], &[1, 4])));
        assert_eq!(clamped(&[3, 4], vec![-1, 2], vec![1, 4]), Some(region(&[0, 0], &[1, 4])));
        assert_eq!(clamped(&[3, 4], vec![1, 1], vec![2, 2]), Some(region(&[1, 1], &[2, 2])));
        assert_eq!(clamped(&[3, 4], vec![1], vec![2, 2]), None);
    }

    /// Which write (index into `writes`, later ones later) last wrote element `at`, if any.
    fn last_writer(writes: &[Region], at: &[i64]) -> Option<usize> {
        writes.iter().rposition(|w| w.offsets.iter().zip(&w.sizes).zip(at).all(|((&o, &n), &x)| o <= x && x < o + n))
    }

    /// The walk from a read back over the writes, as `forwarded_value` does on IR.
    fn walk(writes: &[Region], read: &Region) -> Option<usize> {
        for (i, w) in writes.iter().enumerate().rev() {
            match seen_through(w, read) {
                Seen::Written => return Some(i),
                Seen::Untouched => {}
                Seen::Overlapped => return None,
            }
        }
        None
    }

    #[test]
    fn a_read_is_forwarded_exactly_when_one_write_holds_every_element_it_reads() {
        let mut rng = SplitMix64::new(26);
        let shape = [4i64, 3];
        let random_region = |rng: &mut SplitMix64| {
            let sizes: Vec<i64> = shape.iter().map(|&d| 1 + rng.below(d as u64) as i64).collect();
            let offsets = shape.iter().zip(&sizes).map(|(&d, &n)| rng.below((d - n + 1) as u64) as i64).collect();
            Region { offsets, sizes }
        };
        let (mut forwarded, mut kept) = (0, 0);
        for _ in 0..5000 {
            let writes: Vec<Region> = (0..1 + rng.below(5)).map(|_| random_region(&mut rng)).collect();
            // Half the reads read what some write wrote, as a scan's backward does.
            let read = if rng.below(2) == 0 {
                writes[rng.below(writes.len() as u64) as usize].clone()
            } else {
                random_region(&mut rng)
            };
            let elements: Vec<Vec<i64>> = (0..read.sizes[0])
                .flat_map(|i| (0..read.sizes[1]).map(move |j| vec![i, j]))
                .map(|d| d.iter().zip(&read.offsets).map(|(x, o)| x + o).collect())
                .collect();
            let writers: Vec<Option<usize>> = elements.iter().map(|e| last_writer(&writes, e)).collect();
            let one_writer = writers[0].filter(|&w| writers.iter().all(|&x| x == Some(w)));
            let expected = one_writer.filter(|&w| writes[w] == read);
            assert_eq!(walk(&writes, &read), expected, "writes {writes:?}, read {read:?}");
            if expected.is_some() {
                forwarded += 1;
            } else {
                kept += 1;
            }
        }
        assert!(forwarded > 1000 && kept > 1000, "forwarded {forwarded}, kept {kept}");
    }
}
