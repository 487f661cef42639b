//! `.npy` files (NumPy format), so a framework can check a run's inputs and outputs:
//! `remat-run --save-io=DIR` writes `argN.npy` and `resultN.npy` (format 1.0), and
//! `remat-gpu-run --inputs/--expect DIR` reads them back to run the same step on a GPU and
//! compare it with the CPU.

use crate::error::RuntimeError;
use crate::tensor::{ElementType, HostTensor, TensorSpec};
use std::io::Write;
use std::path::Path;

/// The bytes of a `.npy` file holding `tensor`.
pub fn encode(tensor: &HostTensor) -> Vec<u8> {
    let shape = match tensor.spec.shape.as_slice() {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        dims => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header =
        format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}", tensor.spec.element.npy_descr());
    // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + tensor.bytes().len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(tensor.bytes());
    out
}

/// Writes `tensor` to `path`.
pub fn write(path: &Path, tensor: &HostTensor) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    f.write_all(&encode(tensor))
}

/// Reads the `.npy` file at `path`.
pub fn read(path: &Path) -> Result<HostTensor, RuntimeError> {
    let bytes = std::fs::read(path).map_err(|error| RuntimeError::ReadFile { path: path.to_path_buf(), error })?;
    decode(&bytes).map_err(|error| RuntimeError::NpyFile { path: path.to_path_buf(), error: Box::new(error) })
}

/// The tensor in the bytes of a `.npy` file (format 1.0, 2.0 or 3.0; C order; the dtypes
/// [`ElementType::npy_descr`] writes, so `<u2` reads back as `bf16`).
pub fn decode(bytes: &[u8]) -> Result<HostTensor, RuntimeError> {
    let magic = b"\x93NUMPY";
    if bytes.len() < 10 || &bytes[..6] != magic {
        return Err(RuntimeError::NpyBadMagic);
    }
    let (header_start, header_len) = match bytes[6] {
        1 => (10usize, u16::from_le_bytes([bytes[8], bytes[9]]) as usize),
        2 | 3 if bytes.len() >= 12 => (12, u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize),
        version => return Err(RuntimeError::NpyVersion { version }),
    };
    let data_start = header_start
        .checked_add(header_len)
        .filter(|&end| end <= bytes.len())
        .ok_or(RuntimeError::NpyTruncatedHeader)?;
    let header = std::str::from_utf8(&bytes[header_start..data_start]).map_err(|_| RuntimeError::NpyHeaderNotText)?;
    let spec = parse_header(header)?;
    let data = &bytes[data_start..];
    if data.len() != spec.bytes() {
        return Err(RuntimeError::NpyDataSize { expected: spec.bytes(), found: data.len(), spec });
    }
    let mut tensor = HostTensor::zeros(spec);
    tensor.bytes_mut().copy_from_slice(data);
    Ok(tensor)
}

/// The tensor type of a header such as `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
fn parse_header(header: &str) -> Result<TensorSpec, RuntimeError> {
    let descr = header_value(header, "descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let element =
        ElementType::from_npy_descr(descr).ok_or_else(|| RuntimeError::NpyDtype { descr: descr.to_string() })?;
    if header_value(header, "fortran_order")? != "False" {
        return Err(RuntimeError::NpyFortranOrder);
    }
    let shape_text = header_value(header, "shape")?;
    let malformed = || RuntimeError::NpyMalformedShape { shape: shape_text.to_string() };
    let inner = shape_text.strip_prefix('(').and_then(|s| s.strip_suffix(')')).ok_or_else(malformed)?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.trim_end_matches('L').parse::<usize>().map_err(|_| malformed()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TensorSpec { element, shape })
}

/// The text of `key`'s value in the header's dict: a quoted string, a word, or a tuple.
fn header_value<'a>(header: &'a str, key: &str) -> Result<&'a str, RuntimeError> {
    let missing = || RuntimeError::NpyMissingKey { key: key.to_string() };
    let after_key = ["'", "\""]
        .iter()
        .find_map(|q| header.find(&format!("{q}{key}{q}")).map(|at| &header[at + key.len() + 2..]))
        .ok_or_else(missing)?;
    let value = after_key.trim_start().strip_prefix(':').ok_or_else(missing)?.trim_start();
    let end = match value.chars().next() {
        Some('(') => value.find(')').map(|i| i + 1),
        Some(q @ ('\'' | '"')) => value[1..].find(q).map(|i| i + 2),
        Some(_) => value.find([',', '}']),
        None => None,
    };
    end.map(|e| value[..e].trim()).ok_or_else(|| RuntimeError::NpyMalformedValue { key: key.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_rng::SplitMix64;

    #[test]
    fn header_is_aligned_and_describes_the_tensor() {
        let mut t = HostTensor::zeros(TensorSpec { element: ElementType::F32, shape: vec![2, 3] });
        t.bytes_mut()[0..4].copy_from_slice(&1.5f32.to_le_bytes());
        let bytes = encode(&t);
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
        assert!(header.ends_with('\n'));
        assert_eq!(bytes.len(), 10 + header_len + 24);
        assert_eq!(&bytes[10 + header_len..10 + header_len + 4], &1.5f32.to_le_bytes());
        let scalar = encode(&HostTensor::zeros(TensorSpec { element: ElementType::I32, shape: vec![] }));
        assert!(std::str::from_utf8(&scalar[10..64]).unwrap().contains("'shape': ()"));
    }

    #[test]
    fn every_element_type_round_trips() {
        let elements = [
            ElementType::F16,
            ElementType::BF16,
            ElementType::F32,
            ElementType::F64,
            ElementType::I1,
            ElementType::I8,
            ElementType::I16,
            ElementType::I32,
            ElementType::I64,
        ];
        for (seed, element) in elements.into_iter().enumerate() {
            for shape in [vec![], vec![5], vec![2, 3, 4], vec![0, 3]] {
                let t = HostTensor::random(TensorSpec { element, shape }, &mut SplitMix64::new(seed as u64), 100);
                let back = decode(&encode(&t)).unwrap();
                assert_eq!(back.spec, t.spec);
                assert_eq!(back.bytes(), t.bytes(), "{}", t.spec);
            }
        }
    }

    #[test]
    fn reads_numpy_written_headers() {
        // NumPy 2.x writes format 1.0 with this spacing; format 2.0 has a 4-byte length.
        let header = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend_from_slice(&(header.len() as u32).to_le_bytes());
        v2.extend_from_slice(header.as_bytes());
        for x in [7i64, -1, 1 << 40] {
            v2.extend_from_slice(&x.to_le_bytes());
        }
        let t = decode(&v2).unwrap();
        assert_eq!(t.spec, TensorSpec { element: ElementType::I64, shape: vec![3] });
        assert_eq!((t.value(0), t.value(1), t.value(2)), (7.0, -1.0, (1u64 << 40) as f64));
    }

    #[test]
    fn rejects_bad_files_with_a_message() {
        let good = encode(&HostTensor::zeros(TensorSpec { element: ElementType::F32, shape: vec![2] }));
        let message = |bytes: &[u8]| decode(bytes).unwrap_err().to_string();
        assert!(message(b"PK\x03\x04").contains("magic"));
        assert!(message(&good[..good.len() - 1]).contains("data bytes"));
        // Same-length edits of the header, so its recorded length stays right.
        let replace = |from: &str, to: &str| {
            assert_eq!(from.len(), to.len());
            let mut bytes = good.clone();
            let at = bytes.windows(from.len()).position(|w| w == from.as_bytes()).unwrap();
            bytes[at..at + to.len()].copy_from_slice(to.as_bytes());
            decode(&bytes).unwrap_err().to_string()
        };
        assert!(replace("'fortran_order': False", "'fortran_order': True ").contains("Fortran"));
        assert!(replace("<f4", "<c8").contains("dtype"));
        assert!(replace("<f4", ">f4").contains("dtype"));
        assert!(replace("(2,)", "(x,)").contains("shape"));
        assert!(read(Path::new("/nonexistent/arg0.npy")).unwrap_err().to_string().contains("could not read"));
    }

    #[test]
    fn errors_carry_the_path_and_the_problem() {
        let dir = std::env::temp_dir().join(format!("remat-runtime-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("arg0.npy");
        std::fs::write(&path, b"PK\x03\x04 not numpy").unwrap();
        let error = read(&path).unwrap_err();
        assert_eq!(error.to_string(), format!("{}: not a .npy file (bad magic)", path.display()));
        match &error {
            RuntimeError::NpyFile { path: at, error } => {
                assert_eq!(at, &path);
                assert!(matches!(**error, RuntimeError::NpyBadMagic), "{error:?}");
            }
            other => panic!("expected NpyFile, got {other:?}"),
        }

        let missing = dir.join("missing.npy");
        match read(&missing).unwrap_err() {
            RuntimeError::ReadFile { path: at, error } => {
                assert_eq!(at, missing);
                assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("expected ReadFile, got {other:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();

        let spec = TensorSpec { element: ElementType::I32, shape: vec![3] };
        let bytes = encode(&HostTensor::zeros(spec.clone()));
        match decode(&bytes[..bytes.len() - 2]).unwrap_err() {
            RuntimeError::NpyDataSize { spec: got, expected, found } => {
                assert_eq!((got, expected, found), (spec, 12, 10));
            }
            other => panic!("expected NpyDataSize, got {other:?}"),
        }
        let mut v9 = bytes.clone();
        v9[6] = 9;
        assert!(matches!(decode(&v9), Err(RuntimeError::NpyVersion { version: 9 })));
        assert_eq!(decode(&v9).unwrap_err().to_string(), "unsupported .npy format version 9");
    }
}
