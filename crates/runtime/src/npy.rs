//! Writing `.npy` files (NumPy format 1.0), so a framework can check a run's inputs and
//! outputs: `remat-run --save-io=DIR` writes `argN.npy` and `resultN.npy`.

use crate::tensor::HostTensor;
use std::io::Write;
use std::path::Path;

/// The bytes of a `.npy` file holding `tensor`.
pub fn encode(tensor: &HostTensor) -> Vec<u8> {
    let shape = match tensor.spec.shape.as_slice() {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        dims => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}", tensor.spec.element.npy_descr());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{ElementType, TensorSpec};

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
}
