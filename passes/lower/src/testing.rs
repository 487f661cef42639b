//! Helpers of this crate's unit tests: printed IR as trimmed lines, to compare with expected
//! text written inline.

/// The printed module's lines, trimmed, without the `module {` around them.
pub(crate) fn printed(module: &melior::ir::Module) -> Vec<String> {
    let text = module.as_operation().to_string();
    let lines: Vec<String> = text.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
    assert_eq!((lines.first().map(String::as_str), lines.last().map(String::as_str)), (Some("module {"), Some("}")));
    lines[1..lines.len() - 1].to_vec()
}

/// `expected`'s lines, trimmed, without blank ones.
pub(crate) fn lines(expected: &str) -> Vec<String> {
    expected.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
}

/// Parses `text`, lowers it to LLVM for the CPU, runs its `@main` on `inputs` and returns its
/// outputs: the differential tests of the StableHLO lowerings.
pub(crate) fn run_main(text: &str, mut inputs: Vec<remat_runtime::HostTensor>) -> Vec<remat_runtime::HostTensor> {
    let context = remat_mlir::RematContext::new();
    let mut module = context.parse(text, "test.mlir").unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let signature = crate::signature(&module, "main").unwrap();
    crate::lower_to_llvm(&context, &mut module, &crate::Target::Cpu).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let jit = crate::Jit::new(&module, 0).unwrap();
    let run = unsafe { remat_runtime::call_step(jit.entry("main").unwrap(), &mut inputs, &signature.results, false) }
        .unwrap();
    run.outputs
}

/// `tensor<…xf32>` of `shape`.
pub(crate) fn f32_type(shape: &[usize]) -> String {
    let dims: String = shape.iter().map(|d| format!("{d}x")).collect();
    format!("tensor<{dims}f32>")
}

/// An f32 tensor of `shape` holding `values` (row-major).
pub(crate) fn f32_tensor(shape: &[usize], values: &[f32]) -> remat_runtime::HostTensor {
    let mut tensor = remat_runtime::HostTensor::zeros(remat_runtime::TensorSpec::parse(&f32_type(shape)).unwrap());
    tensor.bytes_mut().copy_from_slice(&values.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
    tensor
}

/// An f32 tensor's values (row-major).
pub(crate) fn f32_values(tensor: &remat_runtime::HostTensor) -> Vec<f32> {
    tensor.bytes().chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

/// Row-major coordinates of every element of `shape`.
pub(crate) fn coordinates(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![Vec::new()];
    for &extent in shape {
        all = all.into_iter().flat_map(|c| (0..extent).map(move |i| [c.clone(), vec![i]].concat())).collect();
    }
    all
}

/// The row-major offset of `index` in `shape`.
pub(crate) fn offset(shape: &[usize], index: &[usize]) -> usize {
    index.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}
