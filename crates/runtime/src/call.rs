//! Calling a compiled step through MLIR's packed calling convention.
//!
//! The LLVM lowering of `func.func @f(memref<…>, …) -> (memref<…>, …)` takes each memref as its
//! descriptor's fields (allocated pointer, aligned pointer, offset, sizes…, strides…) and
//! returns the result descriptors as one struct. MLIR's ExecutionEngine wraps every function
//! in `_mlir_f(void **args)`: one pointer per scalar argument, then one pointer where the
//! result struct is stored. All fields are 8 bytes, so the struct is a flat array of words.

use crate::alloc::{self, AllocationCounts, AllocationEvent};
use crate::error::RuntimeError;
use crate::tensor::{HostTensor, TensorSpec};
use std::collections::HashSet;
use std::time::Instant;

/// `_mlir_<name>`: the packed entry point of a step.
pub type PackedEntry = unsafe extern "C" fn(*mut *mut ());

/// One measured call.
#[derive(Debug)]
pub struct StepRun {
    /// The step's results, copied out (row-major).
    pub outputs: Vec<HostTensor>,
    /// What the step allocated: `peak_bytes` is the measured peak.
    pub counts: AllocationCounts,
    /// Wall time of the call.
    pub seconds: f64,
    /// Every allocation and free, when asked for.
    pub trace: Vec<AllocationEvent>,
}

/// Words (8 bytes each) in a ranked memref descriptor: allocated and aligned pointers, offset,
/// sizes, strides.
pub(crate) fn descriptor_words(rank: usize) -> usize {
    3 + 2 * rank
}

/// The strides of a dense row-major memref of `shape`.
pub(crate) fn row_major_strides(shape: &[usize]) -> Vec<u64> {
    let mut strides = vec![1u64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] as u64;
    }
    strides
}

/// The words of a packed call: each input's descriptor (an identity-layout memref at its
/// data address), then the storage the results' descriptors are written to.
pub(crate) struct PackedCall {
    words: Vec<Vec<u64>>,
    pub(crate) result_storage: Vec<u64>,
    has_results: bool,
}

impl PackedCall {
    /// Descriptors for inputs given as (data address, shape), and room for `results`.
    pub(crate) fn new(inputs: impl Iterator<Item = (u64, Vec<usize>)>, results: &[TensorSpec]) -> PackedCall {
        let words = inputs
            .map(|(address, shape)| {
                let mut w = vec![address, address, 0];
                w.extend(shape.iter().map(|&d| d as u64));
                w.extend(row_major_strides(&shape));
                w
            })
            .collect();
        let result_words: usize = results.iter().map(|r| descriptor_words(r.shape.len())).sum();
        PackedCall { words, result_storage: vec![0u64; result_words.max(1)], has_results: !results.is_empty() }
    }

    /// The `void **` array: one pointer per input word, then the result storage.
    pub(crate) fn arguments(&mut self) -> Vec<*mut ()> {
        let mut args: Vec<*mut ()> =
            self.words.iter_mut().flat_map(|w| w.iter_mut().map(|x| x as *mut u64 as *mut ())).collect();
        if self.has_results {
            args.push(self.result_storage.as_mut_ptr() as *mut ());
        }
        args
    }
}

/// Calls `entry` with `inputs` (tensors passed as identity-layout memrefs) and returns the
/// results described by `results`, with the bytes allocated during the call. Result buffers the
/// step allocated are freed after they are copied out (after the counts are taken).
///
/// # Safety
/// `entry` must be the packed entry of a function whose arguments are exactly `inputs`' memref
/// types and whose results are `results`' memref types.
pub unsafe fn call_step(
    entry: PackedEntry,
    inputs: &mut [HostTensor],
    results: &[TensorSpec],
    trace: bool,
) -> Result<StepRun, RuntimeError> {
    let mut call = PackedCall::new(inputs.iter_mut().map(|t| (t.as_mut_ptr() as u64, t.spec.shape.clone())), results);
    let mut args = call.arguments();

    alloc::reset(trace);
    let start = Instant::now();
    unsafe { entry(args.as_mut_ptr()) };
    let seconds = start.elapsed().as_secs_f64();
    let counts = alloc::counts();
    let trace = alloc::take_trace();
    // Read only after the call wrote it through `args`.
    let result_storage = &call.result_storage;

    let mut outputs = Vec::with_capacity(results.len());
    let mut owned = HashSet::new();
    let mut offset = 0;
    let mut error = None;
    for spec in results {
        let rank = spec.shape.len();
        let w = &result_storage[offset..offset + descriptor_words(rank)];
        offset += descriptor_words(rank);
        let (allocated, aligned, element_offset) = (w[0] as *mut u8, w[1] as *const u8, w[2] as usize);
        let sizes: Vec<usize> = w[3..3 + rank].iter().map(|&s| s as usize).collect();
        let strides: Vec<usize> = w[3 + rank..3 + 2 * rank].iter().map(|&s| s as usize).collect();
        if alloc::owns(allocated) {
            owned.insert(allocated as usize);
        }
        if sizes != spec.shape {
            error.get_or_insert(RuntimeError::ResultShape {
                index: outputs.len(),
                found: sizes,
                expected: spec.clone(),
            });
            outputs.push(HostTensor::zeros(spec.clone()));
            continue;
        }
        let mut out = HostTensor::zeros(spec.clone());
        let size = spec.element.bytes();
        let dst = out.bytes_mut();
        let mut index = vec![0usize; rank];
        for i in 0..spec.elements() {
            let element = element_offset + index.iter().zip(&strides).map(|(a, s)| a * s).sum::<usize>();
            let src = unsafe { std::slice::from_raw_parts(aligned.add(element * size), size) };
            dst[i * size..(i + 1) * size].copy_from_slice(src);
            for d in (0..rank).rev() {
                index[d] += 1;
                if index[d] < sizes[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        outputs.push(out);
    }
    let mut owned: Vec<usize> = owned.into_iter().collect();
    owned.sort_unstable();
    for ptr in owned {
        alloc::free(ptr as *mut u8);
    }
    match error {
        Some(e) => Err(e),
        None => Ok(StepRun { outputs, counts, seconds, trace }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::mlir_aligned_alloc;
    use crate::tensor::ElementType;
    use remat_rng::SplitMix64;

    /// A hand-written packed step: `f(a: memref<2x3xf32>) -> (memref<3x2xf32>, memref<f32>)`,
    /// the transpose of `a` (in a buffer it allocates, freed by the caller) and the sum of `a`
    /// (in a temporary it frees itself).
    unsafe extern "C" fn transpose_and_sum(args: *mut *mut ()) {
        unsafe {
            let read = |i: usize| *(*args.add(i) as *const u64);
            let a = read(1) as *const f32;
            let (rows, cols) = (read(3) as usize, read(4) as usize);
            let (s0, s1) = (read(5) as usize, read(6) as usize);
            let scratch = mlir_aligned_alloc(64, 1000);
            let t = mlir_aligned_alloc(64, (rows * cols * 4) as u64) as *mut f32;
            let total = mlir_aligned_alloc(64, 4) as *mut f32;
            *total = 0.0;
            for r in 0..rows {
                for c in 0..cols {
                    let x = *a.add(r * s0 + c * s1);
                    *t.add(c * rows + r) = x;
                    *total += x;
                }
            }
            alloc::free(scratch);
            let out = *args.add(7) as *mut u64;
            let words =
                [t as u64, t as u64, 0, cols as u64, rows as u64, rows as u64, 1, total as u64, total as u64, 0];
            for (i, w) in words.iter().enumerate() {
                *out.add(i) = *w;
            }
        }
    }

    #[test]
    fn calls_a_packed_step_and_counts_its_memory() {
        let spec = TensorSpec { element: ElementType::F32, shape: vec![2, 3] };
        let mut inputs = vec![HostTensor::random(spec, &mut SplitMix64::new(3), 8)];
        let results = [
            TensorSpec { element: ElementType::F32, shape: vec![3, 2] },
            TensorSpec { element: ElementType::F32, shape: vec![] },
        ];
        let run = unsafe { call_step(transpose_and_sum, &mut inputs, &results, true) }.unwrap();
        assert_eq!(run.counts.peak_bytes, 1000 + 24 + 4);
        assert_eq!(run.counts.live_bytes, 28);
        assert_eq!(run.trace.len(), 4);
        let a = &inputs[0];
        for r in 0..2 {
            for c in 0..3 {
                assert_eq!(run.outputs[0].value(c * 2 + r), a.value(r * 3 + c));
            }
        }
        let sum: f32 = (0..6).map(|i| a.value(i) as f32).sum();
        assert_eq!(run.outputs[1].value(0) as f32, sum);
        // The result buffers were freed after the counts were taken.
        assert_eq!(alloc::counts().live_bytes, 0);
    }

    #[test]
    fn a_result_of_another_shape_is_an_error_with_both_shapes() {
        let spec = TensorSpec { element: ElementType::F32, shape: vec![2, 3] };
        let mut inputs = vec![HostTensor::random(spec.clone(), &mut SplitMix64::new(3), 8)];
        // The step returns a 3x2 transpose, not the 2x3 claimed here.
        let results = [spec.clone(), TensorSpec { element: ElementType::F32, shape: vec![] }];
        let error = unsafe { call_step(transpose_and_sum, &mut inputs, &results, false) }.unwrap_err();
        assert_eq!(error.to_string(), "result 0 has shape [3, 2], expected tensor<2x3xf32>");
        match error {
            RuntimeError::ResultShape { index, found, expected } => {
                assert_eq!((index, found, expected), (0, vec![3, 2], spec));
            }
            other => panic!("expected ResultShape, got {other:?}"),
        }
        // The step's result buffers are freed on failure too.
        assert_eq!(alloc::counts().live_bytes, 0);
    }
}
