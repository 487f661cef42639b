//! Strided memref layouts as runs of contiguous elements, so a copy is one `memcpy` (or, on the
//! GPU, one `cuMemcpy`) per run instead of one per element: `memrefCopy` on the CPU and the
//! GPU. Plain arithmetic, tested without a GPU.

/// Whether a memref with these sizes and strides is dense and row-major (dimensions of size 1
/// may have any stride).
pub(crate) fn is_row_major_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    let mut expected = 1i64;
    for (&size, &stride) in sizes.iter().zip(strides).rev() {
        if size != 1 && stride != expected {
            return false;
        }
        expected = expected.saturating_mul(size);
    }
    true
}

/// The number of elements from a strided memref's first element to just past its last one
/// (what a copy of its whole footprint moves); None for an empty memref, negative strides or
/// overflow.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))] // used by the GPU runtime only
pub(crate) fn footprint_elements(sizes: &[i64], strides: &[i64]) -> Option<i64> {
    if sizes.contains(&0) {
        return None;
    }
    sizes.iter().zip(strides).try_fold(1i64, |end, (&size, &stride)| {
        if size < 0 || stride < 0 {
            return None;
        }
        end.checked_add((size - 1).checked_mul(stride)?)
    })
}

/// Calls `run(source_element, destination_element, elements)` for every contiguous run of a
/// copy between two memrefs of shape `sizes` (element offsets from each one's first element):
/// one run when both are dense row-major, rows when both have unit innermost stride, else
/// single elements. Nothing for an empty shape; one element for rank 0.
pub(crate) fn for_each_run(
    sizes: &[i64],
    source_strides: &[i64],
    destination_strides: &[i64],
    mut run: impl FnMut(i64, i64, i64),
) {
    if sizes.iter().any(|&s| s <= 0) {
        return;
    }
    if is_row_major_contiguous(sizes, source_strides) && is_row_major_contiguous(sizes, destination_strides) {
        run(0, 0, sizes.iter().fold(1i64, |n, &s| n.wrapping_mul(s)));
        return;
    }
    let rank = sizes.len();
    let rows = rank > 0 && source_strides[rank - 1] == 1 && destination_strides[rank - 1] == 1;
    let (outer, length) = if rows { (rank - 1, sizes[rank - 1]) } else { (rank, 1) };
    let mut index = vec![0i64; outer];
    loop {
        // Wrapping: memrefCopy passes what the step's descriptors say, and must not panic.
        let offset =
            |strides: &[i64]| index.iter().zip(strides).fold(0i64, |sum, (i, s)| sum.wrapping_add(i.wrapping_mul(*s)));
        run(offset(source_strides), offset(destination_strides), length);
        let mut dim = outer;
        loop {
            if dim == 0 {
                return;
            }
            dim -= 1;
            index[dim] += 1;
            if index[dim] < sizes[dim] {
                break;
            }
            index[dim] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies the runs to host arrays, as the GPU code applies them with `cuMemcpy`.
    fn copy(
        sizes: &[i64],
        src: &[i32],
        src_offset: i64,
        src_strides: &[i64],
        dst: &mut [i32],
        dst_offset: i64,
        dst_strides: &[i64],
    ) -> usize {
        let mut runs = 0;
        for_each_run(sizes, src_strides, dst_strides, |s, d, n| {
            runs += 1;
            for k in 0..n {
                dst[(dst_offset + d + k) as usize] = src[(src_offset + s + k) as usize];
            }
        });
        runs
    }

    #[test]
    fn dense_copies_are_one_run() {
        let src: Vec<i32> = (0..24).collect();
        let mut dst = vec![0; 24];
        assert_eq!(copy(&[2, 3, 4], &src, 0, &[12, 4, 1], &mut dst, 0, &[12, 4, 1]), 1);
        assert_eq!(dst, src);
        // A size-1 dimension's stride does not matter.
        assert!(is_row_major_contiguous(&[1, 4], &[99, 1]));
        assert!(!is_row_major_contiguous(&[2, 4], &[5, 1]));
    }

    #[test]
    fn windows_copy_row_by_row() {
        // The 2x2 window at offset 1 of a 3x3 source (strides [3, 1]) into a dense 2x2.
        let src: Vec<i32> = (0..9).collect();
        let mut dst = vec![0; 4];
        assert_eq!(copy(&[2, 2], &src, 1, &[3, 1], &mut dst, 0, &[2, 1]), 2);
        assert_eq!(dst, [1, 2, 4, 5]);
        assert_eq!(footprint_elements(&[2, 2], &[3, 1]), Some(5));
    }

    #[test]
    fn transposed_copies_go_element_by_element() {
        let src: Vec<i32> = (0..6).collect();
        let mut dst = vec![0; 6];
        // The transpose of a 2x3 row-major source: shape 3x2, strides [1, 3].
        assert_eq!(copy(&[3, 2], &src, 0, &[1, 3], &mut dst, 0, &[2, 1]), 6);
        assert_eq!(dst, [0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn scalars_and_empty_shapes() {
        let src = [7, 8];
        let mut dst = [0];
        assert_eq!(copy(&[], &src, 1, &[], &mut dst, 0, &[]), 1);
        assert_eq!(dst, [8]);
        assert_eq!(copy(&[0, 3], &src, 0, &[3, 1], &mut dst, 0, &[3, 1]), 0);
        assert_eq!(footprint_elements(&[], &[]), Some(1));
        assert_eq!(footprint_elements(&[0, 3], &[3, 1]), None);
        assert_eq!(footprint_elements(&[2, 2], &[-1, 1]), None);
        assert_eq!(footprint_elements(&[3], &[0]), Some(1));
    }
}
