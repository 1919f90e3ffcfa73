//! One image of a set as a 2-D point cloud of its ink pixels: the preprocessing of character
//! templates for principal-graph skeletons (Kégl & Krzyżak 2002, followed by the principal-graph
//! paper 004 §6.6): "each pixel has integer coordinates ... we add the pixel with value 1 into the
//! data set. Finally, we scale the data set into square area with unit width and height."
//!
//! The templates of 004 are black-and-white; the digit images we mirror are grey (USPS, 16 x 16,
//! 0-255), so a pixel is ink when its value is at least `threshold`. An optional bilinear
//! `upsample` by an integer factor refines the grid first (a 16 x 16 digit gives only 60-90 ink
//! pixels, its strokes two or three pixels wide).

use crate::Dataset;
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// How a sample's features lay out the image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PixelOrder {
    /// Row after row (feature `r W + c` is row r, column c).
    #[default]
    RowMajor,
    /// Column after column (feature `c H + r`; MATLAB's layout, e.g. Roweis' USPS).
    ColumnMajor,
}

/// The parameters of [`ink_points`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InkParams {
    /// 0-based row of the data set holding the image.
    pub sample: usize,
    /// Image width W (`W H` = the number of features).
    pub width: usize,
    /// Image height H.
    pub height: usize,
    /// Layout of the features.
    pub order: PixelOrder,
    /// A pixel is ink when its (interpolated) value is `>= threshold`.
    pub threshold: f64,
    /// Integer refinement factor u >= 1 of a bilinear interpolation: the grid becomes
    /// `((W - 1) u + 1) x ((H - 1) u + 1)`, the original pixels at every u-th node.
    pub upsample: usize,
}

/// What [`ink_points`] returns: the point cloud, or the reason it cannot be made (the
/// preprocessing step reports it as a bad parameter of `ink_points`).
pub type Result<T> = std::result::Result<T, String>;

/// Upsampling factors above this are refused (a 16 x 16 image at 16 has 58,081 nodes).
pub const MAX_UPSAMPLE: usize = 16;

impl InkParams {
    /// Checks what does not depend on the data: a non-empty image, a finite threshold, `1 <= u <=`
    /// [`MAX_UPSAMPLE`].
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Err(reason);
        if self.width == 0 || self.height == 0 {
            return bad(format!("width and height must be >= 1, got {} x {}", self.width, self.height));
        }
        if !self.threshold.is_finite() {
            return bad(format!("threshold must be finite, got {}", self.threshold));
        }
        if self.upsample == 0 || self.upsample > MAX_UPSAMPLE {
            return bad(format!("upsample must be in [1, {MAX_UPSAMPLE}], got {}", self.upsample));
        }
        Ok(())
    }
}

/// The ink pixels of image `p.sample` as points `(x, y)` in the unit square: on the (upsampled)
/// grid of `W' x H'` nodes, node (row r, column c) is `(c, H' - 1 - r) / (max(W', H') - 1)` (y up,
/// the image's aspect kept; a 1 x 1 grid maps to the origin). Points are listed row by row from
/// the top, columns left to right. Every point carries the image's label; `t` is dropped.
///
/// Bilinear value at node (r, c): with `(a, b) = (r / u, c / u)` in pixel units,
/// `(1-fa)(1-fb) v[a0][b0] + (1-fa) fb v[a0][b0+1] + fa (1-fb) v[a0+1][b0] + fa fb v[a0+1][b0+1]`.
///
/// Errors: a sample out of range, `W H` different from the number of features, or no ink pixel.
pub fn ink_points(ds: &Dataset, p: &InkParams) -> Result<Dataset> {
    p.validate()?;
    let bad = |reason: String| Err(reason);
    let (n, d) = ds.x.dim();
    if p.sample >= n {
        return bad(format!("sample {} is out of range: data set '{}' has {n} samples", p.sample, ds.name));
    }
    if p.width * p.height != d {
        return bad(format!("a {} x {} image needs {} features; data set '{}' has {d}", p.width, p.height, p.width * p.height, ds.name));
    }
    let row = ds.x.row(p.sample);
    let pixel = |r: usize, c: usize| match p.order {
        PixelOrder::RowMajor => row[r * p.width + c],
        PixelOrder::ColumnMajor => row[c * p.height + r],
    };
    let u = p.upsample;
    let (hh, ww) = ((p.height - 1) * u + 1, (p.width - 1) * u + 1);
    let scale = (hh.max(ww) - 1).max(1) as f64;
    let mut pts: Vec<f64> = Vec::new();
    for r in 0..hh {
        let (r0, fr) = (r / u, (r % u) as f64 / u as f64);
        let r1 = (r0 + 1).min(p.height - 1);
        for c in 0..ww {
            let (c0, fc) = (c / u, (c % u) as f64 / u as f64);
            let c1 = (c0 + 1).min(p.width - 1);
            let v = if fr == 0.0 && fc == 0.0 {
                pixel(r0, c0)
            } else {
                (1.0 - fr) * (1.0 - fc) * pixel(r0, c0) + (1.0 - fr) * fc * pixel(r0, c1) + fr * (1.0 - fc) * pixel(r1, c0) + fr * fc * pixel(r1, c1)
            };
            if v >= p.threshold {
                pts.push(c as f64 / scale);
                pts.push((hh - 1 - r) as f64 / scale);
            }
        }
    }
    if pts.is_empty() {
        return bad(format!("image {} of '{}' has no pixel >= {} (threshold)", p.sample, ds.name, p.threshold));
    }
    let m = pts.len() / 2;
    let label = ds.labels.as_ref().map(|y| y[p.sample]);
    Ok(Dataset {
        name: ds.name.clone(),
        x: Array2::from_shape_vec((m, 2), pts).expect("two coordinates per point"),
        labels: label.map(|l| vec![l; m]),
        t: None,
        checksum: ds.checksum.clone(),
        note: ds.note.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3 x 2 image (W = 3, H = 2) stored row-major and column-major, label 7 on sample 1.
    fn images(order: PixelOrder) -> Dataset {
        // image rows: [0, 9, 0] (top) and [9, 9, 0] (bottom)
        let img = [[0.0, 9.0, 0.0], [9.0, 9.0, 0.0]];
        let flat: Vec<f64> = match order {
            PixelOrder::RowMajor => img.iter().flatten().copied().collect(),
            PixelOrder::ColumnMajor => (0..3).flat_map(|c| (0..2).map(move |r| img[r][c])).collect(),
        };
        let mut x = Array2::zeros((2, 6));
        x.row_mut(1).assign(&ndarray::aview1(&flat));
        Dataset { name: "img".into(), x, labels: Some(vec![3, 7]), t: Some(vec![0.0, 1.0]), checksum: "c".into(), note: None }
    }

    fn params(order: PixelOrder, upsample: usize) -> InkParams {
        InkParams { sample: 1, width: 3, height: 2, order, threshold: 5.0, upsample }
    }

    #[test]
    fn ink_pixels_become_unit_square_points_in_either_layout() {
        for order in [PixelOrder::RowMajor, PixelOrder::ColumnMajor] {
            let out = ink_points(&images(order), &params(order, 1)).unwrap();
            // top row: (1, 1) -> (0.5, 0.5); bottom row: (0, 0), (1, 0) -> scaled by 1 / (3 - 1)
            assert_eq!(out.x, ndarray::array![[0.5, 0.5], [0.0, 0.0], [0.5, 0.0]], "{order:?}");
            assert_eq!(out.labels, Some(vec![7, 7, 7]));
            assert!(out.t.is_none());
        }
    }

    #[test]
    fn upsampling_interpolates_bilinearly_and_keeps_the_pixels() {
        let out = ink_points(&images(PixelOrder::RowMajor), &params(PixelOrder::RowMajor, 2)).unwrap();
        // grid 5 x 3 nodes, scale 1 / 4; the middle row (r = 1) interpolates the two image rows:
        // c = 0: (0 + 9) / 2 = 4.5 (not ink), c = 1: (0.5 (0 + 9) + 0.5 (9 + 9)) / 2 = 6.75,
        // c = 2: (9 + 9) / 2 = 9, c = 3: 4.5, c = 4: 0
        let pts: Vec<(f64, f64)> = out.x.rows().into_iter().map(|r| (r[0], r[1])).collect();
        assert!(pts.contains(&(0.25, 0.25)) && pts.contains(&(0.5, 0.25)) && !pts.contains(&(0.0, 0.25)) && !pts.contains(&(0.75, 0.25)));
        // the original ink pixels are nodes 2c: (2, top) and (0, 2) bottom
        assert!(pts.contains(&(0.5, 0.5)) && pts.contains(&(0.0, 0.0)) && pts.contains(&(0.5, 0.0)));
        assert_eq!(pts.len(), 6, "{pts:?}");
    }

    #[test]
    fn bad_images_are_errors() {
        let ds = images(PixelOrder::RowMajor);
        let p = params(PixelOrder::RowMajor, 1);
        assert!(ink_points(&ds, &InkParams { sample: 2, ..p.clone() }).is_err());
        assert!(ink_points(&ds, &InkParams { width: 4, ..p.clone() }).is_err());
        assert!(ink_points(&ds, &InkParams { threshold: 10.0, ..p.clone() }).is_err());
        assert!(ink_points(&ds, &InkParams { upsample: 0, ..p.clone() }).is_err());
        assert!(ink_points(&ds, &InkParams { threshold: f64::NAN, ..p }).is_err());
    }
}
