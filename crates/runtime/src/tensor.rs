//! Host tensors: the step's inputs and outputs as bytes, with their element type and shape.

use crate::error::RuntimeError;
use remat_rng::SplitMix64;
use std::fmt;

/// Element types a step may take or return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementType {
    F16,
    BF16,
    F32,
    F64,
    I1,
    I8,
    I16,
    I32,
    I64,
}

impl ElementType {
    /// From MLIR's spelling (`f32`, `i64`, …); `i1` is stored as one byte.
    pub fn from_mlir(text: &str) -> Option<Self> {
        Some(match text {
            "f16" => Self::F16,
            "bf16" => Self::BF16,
            "f32" => Self::F32,
            "f64" => Self::F64,
            "i1" => Self::I1,
            "i8" | "ui8" | "si8" => Self::I8,
            "i16" => Self::I16,
            "i32" | "ui32" | "si32" => Self::I32,
            "i64" | "ui64" | "si64" | "index" => Self::I64,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn bytes(self) -> usize {
        match self {
            Self::I1 | Self::I8 => 1,
            Self::F16 | Self::BF16 | Self::I16 => 2,
            Self::F32 | Self::I32 => 4,
            Self::F64 | Self::I64 => 8,
        }
    }

    /// Whether elements are floating point (compared within a tolerance, not exactly).
    pub fn is_float(self) -> bool {
        matches!(self, Self::F16 | Self::BF16 | Self::F32 | Self::F64)
    }

    /// The element type of a NumPy dtype string: what [`Self::npy_descr`] writes (so `<u2` is
    /// `bf16`), and the unsigned types the runtime stores in its signed ones (`u1`, `u4`, `u8`).
    /// Big-endian multi-byte types are not supported.
    pub fn from_npy_descr(descr: &str) -> Option<Self> {
        let (order, code) = descr.split_at_checked(1)?;
        let element = match code {
            "f2" => Self::F16,
            "u2" => Self::BF16,
            "f4" => Self::F32,
            "f8" => Self::F64,
            "b1" => Self::I1,
            "i1" | "u1" => Self::I8,
            "i2" => Self::I16,
            "i4" | "u4" => Self::I32,
            "i8" | "u8" => Self::I64,
            _ => return None,
        };
        let little_endian = matches!(order, "<" | "|") || (order == "=" && cfg!(target_endian = "little"));
        (little_endian || (order == ">" && element.bytes() == 1)).then_some(element)
    }

    /// NumPy's dtype string (`bf16` has none: stored as raw `<u2`).
    pub fn npy_descr(self) -> &'static str {
        match self {
            Self::F16 => "<f2",
            Self::BF16 => "<u2",
            Self::F32 => "<f4",
            Self::F64 => "<f8",
            Self::I1 => "|b1",
            Self::I8 => "|i1",
            Self::I16 => "<i2",
            Self::I32 => "<i4",
            Self::I64 => "<i8",
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::I1 => "i1",
            Self::I8 => "i8",
            Self::I16 => "i16",
            Self::I32 => "i32",
            Self::I64 => "i64",
        };
        f.write_str(s)
    }
}

/// The type of a statically shaped tensor argument or result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorSpec {
    pub element: ElementType,
    pub shape: Vec<usize>,
}

impl TensorSpec {
    /// Parses `tensor<4x8xf32>` / `tensor<f32>` (or a `memref<…>` with the identity layout).
    pub fn parse(text: &str) -> Result<Self, RuntimeError> {
        let inner = text
            .strip_prefix("tensor<")
            .or_else(|| text.strip_prefix("memref<"))
            .and_then(|s| s.strip_suffix('>'))
            .ok_or_else(|| RuntimeError::NotRankedTensor { text: text.to_string() })?;
        if inner.contains(',') {
            return Err(RuntimeError::UnsupportedLayout { text: text.to_string() });
        }
        let mut parts: Vec<&str> = inner.split('x').collect();
        let element_text = parts.pop().unwrap_or("");
        let element = ElementType::from_mlir(element_text).ok_or_else(|| RuntimeError::UnsupportedElementType {
            text: text.to_string(),
            element: element_text.to_string(),
        })?;
        let shape = parts
            .iter()
            .map(|d| d.parse::<usize>().map_err(|_| RuntimeError::MalformedDimension { text: text.to_string() }))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TensorSpec { element, shape })
    }

    /// Number of elements.
    pub fn elements(&self) -> usize {
        self.shape.iter().product()
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.elements() * self.element.bytes()
    }
}

impl fmt::Display for TensorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}>", self.element)
    }
}

/// A tensor in host memory: row-major, 64-byte aligned.
#[derive(Clone)]
pub struct HostTensor {
    pub spec: TensorSpec,
    storage: Vec<Aligned>,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Aligned([u8; 64]);

impl HostTensor {
    /// All zeros.
    pub fn zeros(spec: TensorSpec) -> Self {
        let blocks = spec.bytes().div_ceil(64).max(1);
        HostTensor { spec, storage: vec![Aligned([0; 64]); blocks] }
    }

    /// Seeded random values: floats uniform in [-1, 1), integers uniform in [0, `int_bound`),
    /// `i1` uniform in {0, 1}. The same generator state gives the same bytes on every platform.
    pub fn random(spec: TensorSpec, rng: &mut SplitMix64, int_bound: u64) -> Self {
        let mut t = Self::zeros(spec);
        let element = t.spec.element;
        let n = t.spec.elements();
        let bytes = t.bytes_mut();
        for i in 0..n {
            let r = rng.next_u64();
            // 24 random bits → a float in [-1, 1) that every float type holds exactly.
            let x = ((r >> 40) as f64) / (1u64 << 23) as f64 - 1.0;
            let k = if int_bound == 0 { 0 } else { r % int_bound };
            let out = &mut bytes[i * element.bytes()..(i + 1) * element.bytes()];
            match element {
                ElementType::F32 => out.copy_from_slice(&(x as f32).to_le_bytes()),
                ElementType::F64 => out.copy_from_slice(&x.to_le_bytes()),
                // bf16: the f32's top half (truncated; random inputs need not be exact).
                ElementType::BF16 => out.copy_from_slice(&(((x as f32).to_bits() >> 16) as u16).to_le_bytes()),
                ElementType::F16 => out.copy_from_slice(&f32_to_f16_bits(x as f32).to_le_bytes()),
                ElementType::I1 => out[0] = (r & 1) as u8,
                ElementType::I8 => out[0] = k as u8,
                ElementType::I16 => out.copy_from_slice(&(k as u16).to_le_bytes()),
                ElementType::I32 => out.copy_from_slice(&(k as u32).to_le_bytes()),
                ElementType::I64 => out.copy_from_slice(&k.to_le_bytes()),
            }
        }
        t
    }

    /// The data, row-major.
    pub fn bytes(&self) -> &[u8] {
        let len = self.spec.bytes();
        unsafe { std::slice::from_raw_parts(self.storage.as_ptr() as *const u8, len) }
    }

    /// The data, row-major, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.spec.bytes();
        unsafe { std::slice::from_raw_parts_mut(self.storage.as_mut_ptr() as *mut u8, len) }
    }

    /// Pointer to the first element (for a memref descriptor).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.storage.as_mut_ptr() as *mut u8
    }

    /// Element `i` as f64 (for reports; integers convert exactly up to 2^53).
    pub fn value(&self, i: usize) -> f64 {
        let e = self.spec.element;
        let b = &self.bytes()[i * e.bytes()..(i + 1) * e.bytes()];
        match e {
            ElementType::F32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
            ElementType::F64 => f64::from_le_bytes(b.try_into().unwrap()),
            ElementType::BF16 => f32::from_bits((u16::from_le_bytes(b.try_into().unwrap()) as u32) << 16) as f64,
            ElementType::F16 => f16_bits_to_f32(u16::from_le_bytes(b.try_into().unwrap())) as f64,
            ElementType::I1 | ElementType::I8 => b[0] as i8 as f64,
            ElementType::I16 => i16::from_le_bytes(b.try_into().unwrap()) as f64,
            ElementType::I32 => i32::from_le_bytes(b.try_into().unwrap()) as f64,
            ElementType::I64 => i64::from_le_bytes(b.try_into().unwrap()) as f64,
        }
    }
}

impl fmt::Debug for HostTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostTensor({})", self.spec)
    }
}

fn f32_to_f16_bits(x: f32) -> u16 {
    // Values here are in [-1, 1): no overflow or NaN; subnormals flush to zero.
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    if exponent <= 0 {
        return sign;
    }
    let mantissa = ((bits >> 13) & 0x3ff) as u16;
    sign | ((exponent as u16) << 10) | mantissa
}

fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exponent = ((h >> 10) & 0x1f) as u32;
    let mantissa = (h & 0x3ff) as u32;
    let bits = match exponent {
        0 if mantissa == 0 => sign,
        0 => return f32::from_bits(sign) + (mantissa as f32) * 2f32.powi(-24) * if sign != 0 { -1.0 } else { 1.0 },
        31 => sign | 0x7f80_0000 | (mantissa << 13),
        e => sign | ((e + 127 - 15) << 23) | (mantissa << 13),
    };
    f32::from_bits(bits)
}

/// How two tensors differ.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The types differ (then nothing else is compared).
    pub types: Option<(TensorSpec, TensorSpec)>,
    /// Elements whose bytes differ.
    pub differing: usize,
    /// The first of them (row-major index).
    pub first: usize,
    /// The largest absolute difference among them, as f64 (NaN if one side is NaN).
    pub max_abs_diff: f64,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((a, b)) = &self.types {
            return write!(f, "types differ: {a} vs {b}");
        }
        write!(
            f,
            "{} element(s) differ, first at index {}, max |difference| {:e}",
            self.differing, self.first, self.max_abs_diff
        )
    }
}

/// Compares two tensors bit for bit; None when identical.
pub fn compare(a: &HostTensor, b: &HostTensor) -> Option<Mismatch> {
    if a.spec != b.spec {
        return Some(Mismatch {
            types: Some((a.spec.clone(), b.spec.clone())),
            differing: 0,
            first: 0,
            max_abs_diff: f64::NAN,
        });
    }
    let size = a.spec.element.bytes();
    let mut mismatch: Option<Mismatch> = None;
    for (i, (x, y)) in a.bytes().chunks(size).zip(b.bytes().chunks(size)).enumerate() {
        if x != y {
            let diff = (a.value(i) - b.value(i)).abs();
            let m = mismatch.get_or_insert(Mismatch { types: None, differing: 0, first: i, max_abs_diff: 0.0 });
            m.differing += 1;
            m.max_abs_diff = if diff.is_nan() || m.max_abs_diff.is_nan() { f64::NAN } else { m.max_abs_diff.max(diff) };
        }
    }
    mismatch
}

/// How far a tensor is from the expected one under a tolerance (a GPU run against the CPU's):
/// floats within `atol + rtol * |expected|`, integers and booleans exactly.
#[derive(Clone, Debug, PartialEq)]
pub struct ToleranceReport {
    /// The types differ (then nothing else is compared).
    pub types: Option<(TensorSpec, TensorSpec)>,
    /// Elements out of tolerance.
    pub out_of_tolerance: usize,
    /// The first of them (row-major index).
    pub first: Option<usize>,
    /// The largest |actual - expected| over all elements (NaN if a NaN met a number; infinite
    /// if an infinity met anything else).
    pub max_abs_error: f64,
}

impl ToleranceReport {
    /// Same types and every element within tolerance.
    pub fn matches(&self) -> bool {
        self.types.is_none() && self.out_of_tolerance == 0
    }
}

impl fmt::Display for ToleranceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((a, b)) = &self.types {
            return write!(f, "types differ: {a} vs {b}");
        }
        match self.first {
            None => write!(f, "all elements within tolerance, max |error| {:e}", self.max_abs_error),
            Some(first) => write!(
                f,
                "{} element(s) out of tolerance, first at index {first}, max |error| {:e}",
                self.out_of_tolerance, self.max_abs_error
            ),
        }
    }
}

/// Compares `actual` with `expected` element by element: a float is within tolerance when
/// `|actual - expected| <= atol + rtol * |expected|` (NaN only matches NaN, an infinity only
/// the same infinity); integer and boolean elements must be equal.
pub fn compare_within(actual: &HostTensor, expected: &HostTensor, rtol: f64, atol: f64) -> ToleranceReport {
    let mut report = ToleranceReport { types: None, out_of_tolerance: 0, first: None, max_abs_error: 0.0 };
    if actual.spec != expected.spec {
        report.types = Some((actual.spec.clone(), expected.spec.clone()));
        report.max_abs_error = f64::NAN;
        return report;
    }
    let element = actual.spec.element;
    let size = element.bytes();
    let pairs = actual.bytes().chunks(size).zip(expected.bytes().chunks(size));
    for (i, (x, y)) in pairs.enumerate() {
        let (a, b) = (actual.value(i), expected.value(i));
        let (error, within) = if !element.is_float() {
            ((a - b).abs(), x == y)
        } else if a.is_nan() || b.is_nan() {
            if a.is_nan() && b.is_nan() {
                (0.0, true)
            } else {
                (f64::NAN, false)
            }
        } else if a == b {
            (0.0, true)
        } else if a.is_infinite() || b.is_infinite() {
            (f64::INFINITY, false)
        } else {
            let error = (a - b).abs();
            (error, error <= atol + rtol * b.abs())
        };
        report.max_abs_error =
            if error.is_nan() || report.max_abs_error.is_nan() { f64::NAN } else { report.max_abs_error.max(error) };
        if !within {
            report.out_of_tolerance += 1;
            report.first.get_or_insert(i);
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tensor_types() {
        assert_eq!(
            TensorSpec::parse("tensor<4x8xf32>").unwrap(),
            TensorSpec { element: ElementType::F32, shape: vec![4, 8] }
        );
        assert_eq!(TensorSpec::parse("tensor<i32>").unwrap().shape, Vec::<usize>::new());
        assert!(TensorSpec::parse("tensor<?x8xf32>").is_err());
        assert!(TensorSpec::parse("tensor<4xcomplex<f32>>").is_err());
        assert!(TensorSpec::parse("f32").is_err());
        let error = TensorSpec::parse("tensor<4xf8E4M3FN>").unwrap_err();
        assert_eq!(error.to_string(), "'tensor<4xf8E4M3FN>': element type 'f8E4M3FN' is not supported");
        assert!(matches!(
            &error,
            RuntimeError::UnsupportedElementType { text, element }
                if text == "tensor<4xf8E4M3FN>" && element == "f8E4M3FN"
        ));
        assert!(matches!(
            TensorSpec::parse("tensor<?x8xf32>"),
            Err(RuntimeError::MalformedDimension { text }) if text == "tensor<?x8xf32>"
        ));
        assert_eq!(TensorSpec::parse("tensor<2x3xi1>").unwrap().bytes(), 6);
    }

    #[test]
    fn random_inputs_are_seeded_and_in_range() {
        let spec = TensorSpec { element: ElementType::F32, shape: vec![100] };
        let a = HostTensor::random(spec.clone(), &mut SplitMix64::new(7), 8);
        let b = HostTensor::random(spec.clone(), &mut SplitMix64::new(7), 8);
        let c = HostTensor::random(spec, &mut SplitMix64::new(8), 8);
        assert!(compare(&a, &b).is_none());
        assert!(compare(&a, &c).is_some());
        assert!((0..100).all(|i| (-1.0..1.0).contains(&a.value(i))));
        let ints =
            HostTensor::random(TensorSpec { element: ElementType::I32, shape: vec![50] }, &mut SplitMix64::new(1), 8);
        assert!((0..50).all(|i| (0.0..8.0).contains(&ints.value(i))));
        assert_eq!(a.storage.as_ptr() as usize % 64, 0);
    }

    #[test]
    fn compare_reports_differences() {
        let spec = TensorSpec { element: ElementType::F32, shape: vec![3] };
        let a = HostTensor::random(spec.clone(), &mut SplitMix64::new(1), 8);
        let mut b = a.clone();
        b.bytes_mut()[4..8].copy_from_slice(&2.5f32.to_le_bytes());
        let m = compare(&a, &b).unwrap();
        assert_eq!((m.differing, m.first), (1, 1));
        assert!((m.max_abs_diff - (2.5 - a.value(1)).abs()).abs() < 1e-12);
    }

    #[test]
    fn f16_round_trips_simple_values() {
        for x in [0.0f32, 0.5, -0.75, 0.125] {
            assert_eq!(f16_bits_to_f32(f32_to_f16_bits(x)), x);
        }
    }

    fn floats(element: ElementType, values: &[f64]) -> HostTensor {
        let mut t = HostTensor::zeros(TensorSpec { element, shape: vec![values.len()] });
        let size = element.bytes();
        for (i, &x) in values.iter().enumerate() {
            let out = &mut t.bytes_mut()[i * size..(i + 1) * size];
            match element {
                ElementType::F32 => out.copy_from_slice(&(x as f32).to_le_bytes()),
                ElementType::F64 => out.copy_from_slice(&x.to_le_bytes()),
                ElementType::I32 => out.copy_from_slice(&(x as i32).to_le_bytes()),
                ElementType::I1 => out[0] = x as u8,
                other => unreachable!("no test values for {other}"),
            }
        }
        t
    }

    #[test]
    fn tolerance_accepts_small_float_errors_only() {
        let expected = floats(ElementType::F64, &[1.0, -2.0, 1000.0, 0.0]);
        let close = floats(ElementType::F64, &[1.0 + 1e-6, -2.0 - 1e-6, 1000.05, 5e-6]);
        let report = compare_within(&close, &expected, 1e-4, 1e-5);
        assert!(report.matches(), "{report}");
        assert!((report.max_abs_error - 0.05).abs() < 1e-9);
        // 1000 * 1e-4 + 1e-5 is the allowance at 1000: 0.2 is too far; 2e-5 is too far from 0.
        let far = floats(ElementType::F64, &[1.0, -2.0, 1000.2, 2e-5]);
        let report = compare_within(&far, &expected, 1e-4, 1e-5);
        assert_eq!((report.out_of_tolerance, report.first), (2, Some(2)));
        assert!((report.max_abs_error - 0.2).abs() < 1e-9);
        // The allowance scales with the expected value, not the actual one.
        let (zero, half) = (floats(ElementType::F64, &[0.0]), floats(ElementType::F64, &[0.5]));
        assert!(compare_within(&zero, &half, 1.0, 0.0).matches());
        assert!(!compare_within(&half, &zero, 1.0, 0.0).matches());
    }

    #[test]
    fn tolerance_treats_nan_and_infinity_strictly() {
        let nan = f64::NAN;
        let inf = f64::INFINITY;
        let expected = floats(ElementType::F32, &[nan, inf, -inf, 1.0]);
        assert!(compare_within(&expected, &expected, 0.0, 0.0).matches());
        let report = compare_within(&floats(ElementType::F32, &[1.0, inf, -inf, 1.0]), &expected, 1.0, 1.0);
        assert_eq!(report.out_of_tolerance, 1);
        assert!(report.max_abs_error.is_nan());
        let report = compare_within(&floats(ElementType::F32, &[nan, 1e30, -inf, nan]), &expected, 1e9, 1e9);
        assert_eq!((report.out_of_tolerance, report.first), (2, Some(1)));
        assert!(report.max_abs_error.is_nan());
        let report = compare_within(&floats(ElementType::F32, &[nan, -inf, -inf, 1.0]), &expected, 1e9, 1e9);
        assert_eq!(report.out_of_tolerance, 1);
        assert_eq!(report.max_abs_error, f64::INFINITY);
    }

    #[test]
    fn tolerance_compares_integers_and_booleans_exactly() {
        let ints = floats(ElementType::I32, &[3.0, 4.0, 5.0]);
        let report = compare_within(&floats(ElementType::I32, &[3.0, 5.0, 5.0]), &ints, 1.0, 1.0);
        assert_eq!((report.out_of_tolerance, report.first, report.max_abs_error), (1, Some(1), 1.0));
        let bools = floats(ElementType::I1, &[0.0, 1.0]);
        assert!(compare_within(&bools, &bools, 0.0, 0.0).matches());
        assert_eq!(compare_within(&floats(ElementType::I1, &[1.0, 1.0]), &bools, 1.0, 1.0).out_of_tolerance, 1);
        let other = floats(ElementType::F32, &[3.0, 4.0, 5.0]);
        let report = compare_within(&other, &ints, 1.0, 1.0);
        assert!(!report.matches());
        assert!(report.to_string().contains("types differ"));
    }

    #[test]
    fn npy_descriptions_map_back_to_element_types() {
        for e in [
            ElementType::F16,
            ElementType::BF16,
            ElementType::F32,
            ElementType::F64,
            ElementType::I1,
            ElementType::I8,
            ElementType::I16,
            ElementType::I32,
            ElementType::I64,
        ] {
            assert_eq!(ElementType::from_npy_descr(e.npy_descr()), Some(e));
        }
        assert_eq!(ElementType::from_npy_descr("|u1"), Some(ElementType::I8));
        assert_eq!(ElementType::from_npy_descr(">i1"), Some(ElementType::I8));
        assert_eq!(ElementType::from_npy_descr(">f4"), None);
        assert_eq!(ElementType::from_npy_descr("<c8"), None);
        assert_eq!(ElementType::from_npy_descr(""), None);
    }
}
