//! Masks figures ([`crate::spec::FigureKind::Masks`], ESL paper Fig. 10c): samples of image data
//! as they are and with the selected-feature mask applied.

use super::plots::ImagePanel;
use crate::spec::ImageShape;
use structdr_datasets::Dataset;

/// The samples a masks figure draws: `frames` when given (each checked against N), else 4 evenly
/// spaced (`i N / 4`; fewer when N < 4).
pub(super) fn frames(frames: Option<&[usize]>, n: usize) -> Result<Vec<usize>, String> {
    match frames {
        Some(f) => match f.iter().find(|&&i| i >= n) {
            Some(i) => Err(format!("`frames` names sample {i}; the data set has {n} (0-based)")),
            None => Ok(f.to_vec()),
        },
        None => {
            let mut v: Vec<usize> = (0..4).map(|i| i * n / 4).collect();
            v.dedup();
            Ok(v)
        }
    }
}

/// Pixels selected: a pixel is selected when any of its channels is among `selected`.
pub(super) fn pixel_mask(shape: &ImageShape, selected: &[usize]) -> Vec<bool> {
    let mut feature = vec![false; shape.features()];
    for &f in selected {
        if f < feature.len() {
            feature[f] = true;
        }
    }
    let mut mask = vec![false; shape.height * shape.width];
    for r in 0..shape.height {
        for c in 0..shape.width {
            mask[r * shape.width + c] = (0..shape.channels).any(|k| feature[shape.feature(r, c, k)]);
        }
    }
    mask
}

/// For the fit titled `title`, selecting the features `selected` of `data` (images of `shape`):
/// the samples `frames` as they are (first list) and masked (second list: unselected pixels
/// black), and the line for `figures.md`. Values are drawn as they are when they lie in [0, 1],
/// else min-max scaled over the drawn samples (z-scored or 0..255 pixels).
pub(super) fn panels(
    title: &str,
    data: &Dataset,
    selected: &[usize],
    shape: &ImageShape,
    frames: &[usize],
) -> Result<(Vec<ImagePanel>, Vec<ImagePanel>, String), String> {
    let d = data.x.ncols();
    if shape.features() != d {
        return Err(format!("`image` = {} x {} x {} = {} features; the data set has {d}", shape.height, shape.width, shape.channels, shape.features()));
    }
    let values = || frames.iter().flat_map(|&i| data.x.row(i).to_vec());
    let (lo, hi) = values().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    let scale = |v: f64| {
        if lo >= 0.0 && hi <= 1.0 {
            v
        } else if hi > lo {
            (v - lo) / (hi - lo)
        } else {
            0.5
        }
    };
    let mask = pixel_mask(shape, selected);
    let pixels_on = mask.iter().filter(|&&m| m).count();
    let (mut plain, mut masked) = (Vec::new(), Vec::new());
    for &i in frames {
        let x = data.x.row(i);
        let mut px = Vec::with_capacity(shape.height * shape.width);
        for r in 0..shape.height {
            for c in 0..shape.width {
                let ch = |k: usize| scale(x[shape.feature(r, c, k.min(shape.channels - 1))]);
                px.push([ch(0), ch(1), ch(2)]);
            }
        }
        let hidden: Vec<[f64; 3]> = px.iter().zip(&mask).map(|(&p, &m)| if m { p } else { [0.0; 3] }).collect();
        plain.push(ImagePanel { title: format!("{title}: sample {i}"), height: shape.height, width: shape.width, pixels: px });
        masked.push(ImagePanel { title: format!("{title}: sample {i}, masked"), height: shape.height, width: shape.width, pixels: hidden });
    }
    let summary = format!("{} of {d} features selected: {pixels_on} of {} pixels; samples {:?}", selected.len(), shape.height * shape.width, frames);
    Ok((plain, masked, summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::PixelOrder;

    #[test]
    fn masks_follow_the_pixel_order_and_any_channel_selects() {
        let rgb = ImageShape { height: 2, width: 3, channels: 3, order: PixelOrder::Row };
        // feature 5 is pixel (0, 1), blue; feature 9 pixel (1, 0), red
        assert_eq!(pixel_mask(&rgb, &[5, 9]), vec![false, true, false, true, false, false]);
        let grey = ImageShape { height: 2, width: 3, channels: 1, order: PixelOrder::Column };
        // column-major: feature 1 is pixel (1, 0), feature 4 is pixel (0, 2)
        assert_eq!(pixel_mask(&grey, &[1, 4]), vec![false, false, true, true, false, false]);
    }

    #[test]
    fn frames_default_to_four_spread_and_are_checked() {
        assert_eq!(frames(None, 400).unwrap(), vec![0, 100, 200, 300]);
        assert_eq!(frames(None, 2).unwrap(), vec![0, 1]);
        assert!(frames(Some(&[3, 400]), 400).unwrap_err().contains("sample 400"));
    }
}
