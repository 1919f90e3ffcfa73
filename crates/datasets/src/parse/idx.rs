//! IDX tensors (LeCun's MNIST format, also Fashion-MNIST), unsigned-byte type only.
//!
//! Layout: magic `00 00 08 k` (type 0x08 = unsigned byte, `k` = number of dimensions), then `k`
//! big-endian u32 sizes, then `prod(sizes)` bytes in row-major order. Images are `0x00000803`
//! (N x rows x cols), labels `0x00000801` (N).

use super::ParseError;

/// Parses a decompressed IDX file; returns the dimensions and the raw bytes (row-major).
///
/// Errors name `source` and the byte offset: bad magic (offset 0), non-byte element type
/// (offset 2), zero dimensions, truncated header, or a data length different from
/// `prod(dims)` (offset of the data start).
pub fn parse(data: &[u8], source: &str) -> Result<(Vec<usize>, Vec<u8>), ParseError> {
    if data.len() < 4 {
        return Err(ParseError::offset(source, data.len(), "truncated IDX magic number (4 bytes needed)"));
    }
    if data[0] != 0 || data[1] != 0 {
        return Err(ParseError::offset(
            source,
            0,
            format!("bad IDX magic {:02x}{:02x}{:02x}{:02x} (expected 0000080k; is the file still gzip-compressed?)", data[0], data[1], data[2], data[3]),
        ));
    }
    if data[2] != 0x08 {
        return Err(ParseError::offset(source, 2, format!("IDX element type {:#04x} is not unsigned byte (0x08)", data[2])));
    }
    let k = data[3] as usize;
    if k == 0 {
        return Err(ParseError::offset(source, 3, "IDX file declares 0 dimensions"));
    }
    let head = 4 + 4 * k;
    if data.len() < head {
        return Err(ParseError::offset(source, data.len(), format!("truncated IDX header: {k} dimensions need {head} bytes")));
    }
    let dims: Vec<usize> = (0..k).map(|i| u32::from_be_bytes([data[4 + 4 * i], data[5 + 4 * i], data[6 + 4 * i], data[7 + 4 * i]]) as usize).collect();
    let want = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let have = data.len() - head;
    if want != Some(have) {
        return Err(ParseError::offset(
            source,
            head,
            format!("IDX dimensions {dims:?} need {} data bytes but {have} follow the header", want.map_or("too many".to_string(), |w| w.to_string())),
        ));
    }
    Ok((dims, data[head..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testutil::mirror;

    #[test]
    fn small_images_and_labels() {
        let mut f = vec![0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 3];
        f.extend([1, 2, 3, 4, 5, 6]);
        let (d, v) = parse(&f, "img.idx").unwrap();
        assert_eq!(d, vec![2, 1, 3]);
        assert_eq!(v, vec![1, 2, 3, 4, 5, 6]);
        let (d, v) = parse(&[0, 0, 8, 1, 0, 0, 0, 2, 9, 7], "lab.idx").unwrap();
        assert_eq!((d, v), (vec![2], vec![9, 7]));
    }

    #[test]
    fn malformed() {
        let cases: &[(&[u8], &str)] = &[
            (&[0, 0, 8], "byte offset 3"),
            (&[0x1f, 0x8b, 8, 0], "byte offset 0"),
            (&[0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0], "byte offset 2"),
            (&[0, 0, 8, 1, 0, 0, 0], "byte offset 7"),
            (&[0, 0, 8, 1, 0, 0, 0, 3, 1, 2], "byte offset 8"),
            (&[0, 0, 8, 1, 0, 0, 0, 1, 1, 2], "byte offset 8"),
            (&[0, 0, 8, 2, 255, 255, 255, 255, 255, 255, 255, 255], "byte offset 12"),
        ];
        for (b, want) in cases {
            let e = parse(b, "bad.idx").unwrap_err().to_string();
            assert!(e.contains("bad.idx") && e.contains(want), "{e} (wanted {want})");
        }
    }

    #[test]
    fn mirrored_fashion_mnist_test_set() {
        if let Some(p) = mirror("fashion-mnist/t10k-labels-idx1-ubyte.gz") {
            let raw = crate::parse::gunzip(&std::fs::read(&p).unwrap(), "t10k-labels").unwrap();
            let (d, v) = parse(&raw, "t10k-labels").unwrap();
            assert_eq!(d, vec![10000]);
            assert_eq!(v.len(), 10000);
            for c in 0..10u8 {
                assert_eq!(v.iter().filter(|&&l| l == c).count(), 1000);
            }
        }
        if let Some(p) = mirror("fashion-mnist/t10k-images-idx3-ubyte.gz") {
            let raw = crate::parse::gunzip(&std::fs::read(&p).unwrap(), "t10k-images").unwrap();
            let (d, v) = parse(&raw, "t10k-images").unwrap();
            assert_eq!(d, vec![10000, 28, 28]);
            assert_eq!(v.len(), 10000 * 784);
        }
    }
}
