//! The runtime's one error type: every fallible function of this crate returns
//! [`RuntimeError`]. Each variant carries what its message names, and its `Display` is the
//! message the runners print.
//!
//! A variant that wraps another error (`NpyFile`, `StepFailedOnDevice`, `DeviceResult`) prints
//! it as part of its own message, so it does not also report it as its `source()`.

use crate::tensor::TensorSpec;
#[cfg(feature = "gpu")]
use cudarc::driver::sys::CUresult;
use std::path::PathBuf;

/// Why a tensor type, a `.npy` file or a step run failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    // Tensor types (`TensorSpec::parse`).
    /// Not `tensor<…>` or `memref<…>`.
    #[error("'{text}' is not a ranked tensor type")]
    NotRankedTensor { text: String },
    /// A type with an encoding or a layout.
    #[error("'{text}': encodings and layouts are not supported")]
    UnsupportedLayout { text: String },
    /// An element type the runtime has no [`crate::ElementType`] for.
    #[error("'{text}': element type '{element}' is not supported")]
    UnsupportedElementType { text: String, element: String },
    /// A `?` or otherwise unparsable dimension.
    #[error("'{text}' has a dynamic or malformed dimension")]
    MalformedDimension { text: String },

    // `.npy` files (`npy::read`, `npy::decode`).
    /// The file could not be read.
    #[error("{path}: could not read: {error}")]
    ReadFile { path: PathBuf, error: std::io::Error },
    /// The file was read, but its contents are not a tensor (`error`, one of the `Npy*`
    /// variants).
    #[error("{path}: {error}")]
    NpyFile { path: PathBuf, error: Box<RuntimeError> },
    /// The bytes do not start with `\x93NUMPY`.
    #[error("not a .npy file (bad magic)")]
    NpyBadMagic,
    /// A format version other than 1.0, 2.0 or 3.0.
    #[error("unsupported .npy format version {version}")]
    NpyVersion { version: u8 },
    /// The header length runs past the end of the file.
    #[error("truncated .npy header")]
    NpyTruncatedHeader,
    /// The header is not UTF-8.
    #[error("the .npy header is not text")]
    NpyHeaderNotText,
    /// The header's dict has no such key.
    #[error("the .npy header has no '{key}'")]
    NpyMissingKey { key: String },
    /// The key's value does not end.
    #[error("malformed '{key}' in the .npy header")]
    NpyMalformedValue { key: String },
    /// A dtype with no [`crate::ElementType`] (or of the wrong byte order).
    #[error("unsupported dtype '{descr}'")]
    NpyDtype { descr: String },
    /// `'fortran_order': True`.
    #[error("Fortran-order arrays are not supported")]
    NpyFortranOrder,
    /// A shape that is not a tuple of sizes.
    #[error("malformed shape '{shape}'")]
    NpyMalformedShape { shape: String },
    /// The data after the header is not the size the header's tensor type needs.
    #[error("{spec} needs {expected} data bytes, the file has {found}")]
    NpyDataSize { spec: TensorSpec, expected: usize, found: usize },

    // Calls (`call_step`, `Device::call_step_on_device`).
    /// A result of a CPU step whose descriptor has other sizes than its type.
    #[error("result {index} has shape {found:?}, expected {expected}")]
    ResultShape { index: usize, found: Vec<usize>, expected: TensorSpec },

    // The CUDA runtime (feature `gpu`).
    /// The driver library (`libcuda.so`) cannot be loaded.
    #[cfg(feature = "gpu")]
    #[error("{}", crate::gpu::NO_DRIVER)]
    NoDriver,
    /// A driver call failed: upstream's `CUDA_REPORT_IF_ERROR` message, with the call as
    /// written in the source and the driver's name for the code.
    #[cfg(feature = "gpu")]
    #[error("'{call}' failed with '{name}'")]
    Cuda { call: String, code: CUresult, name: String },
    /// A device ordinal that does not fit the driver's `int`.
    #[cfg(feature = "gpu")]
    #[error("there is no CUDA device {ordinal}")]
    DeviceOrdinalTooLarge { ordinal: usize },
    /// A device ordinal past the machine's devices.
    #[cfg(feature = "gpu")]
    #[error("there is no CUDA device {ordinal} (this machine has {count})")]
    NoSuchDevice { ordinal: i32, count: i32 },
    /// A device without unified addressing.
    #[cfg(feature = "gpu")]
    #[error("CUDA device {ordinal} ({name}) has no unified addressing, which the runtime's copies need")]
    NoUnifiedAddressing { ordinal: i32, name: String },
    /// A step called on a device other than the one its kernels were loaded on.
    #[cfg(feature = "gpu")]
    #[error(
        "device {device} is not the default device of the wrappers ({default}): the step's kernels are loaded there"
    )]
    NotDefaultDevice { device: i32, default: i32 },
    /// The synchronization after a step failed (how a faulting kernel shows).
    #[cfg(feature = "gpu")]
    #[error("the step failed on the device: {error}")]
    StepFailedOnDevice { error: Box<RuntimeError> },
    /// A result of a device step could not be copied to the host (`error`, a `Cuda` or one of
    /// the `DeviceResult*` variants).
    #[cfg(feature = "gpu")]
    #[error("result {index}: {error}")]
    DeviceResult { index: usize, error: Box<RuntimeError> },
    /// A device result whose descriptor has other sizes than its type.
    #[cfg(feature = "gpu")]
    #[error("has shape {found:?}, expected {expected}")]
    DeviceResultShape { found: Vec<i64>, expected: TensorSpec },
    /// A device result with strides the runtime cannot copy (negative ones, or a footprint
    /// that overflows).
    #[cfg(feature = "gpu")]
    #[error("has strides {strides:?}, which this runtime does not copy")]
    DeviceResultStrides { strides: Vec<i64> },
    /// A device result with a null data pointer or an offset that points nowhere.
    #[cfg(feature = "gpu")]
    #[error("has data pointer {pointer:#x} and offset {offset}, which point nowhere")]
    DeviceResultAddress { pointer: u64, offset: i64 },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::ElementType;

    #[test]
    fn messages_name_the_data() {
        let spec = TensorSpec { element: ElementType::F32, shape: vec![2] };
        let e = RuntimeError::NpyFile {
            path: PathBuf::from("io/arg0.npy"),
            error: Box::new(RuntimeError::NpyDataSize { spec: spec.clone(), expected: 8, found: 7 }),
        };
        assert_eq!(e.to_string(), "io/arg0.npy: tensor<2xf32> needs 8 data bytes, the file has 7");
        let e = RuntimeError::ResultShape { index: 1, found: vec![3, 2], expected: spec };
        assert_eq!(e.to_string(), "result 1 has shape [3, 2], expected tensor<2xf32>");
        // Messages are the whole story: a wrapped error is printed, not chained.
        assert!(std::error::Error::source(&e).is_none());
    }
}
