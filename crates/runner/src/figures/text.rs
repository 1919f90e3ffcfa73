//! Text of the figures: a bitmap backend wrapper that lays glyphs out correctly, and the
//! parameter names the papers write as Greek letters.
//!
//! plotters 0.3.7's `ab_glyph` text drops every glyph's left side bearing and truncates the pen
//! position to whole pixels per glyph, so "Principal" is drawn as "Princip al" and "l1" as
//! "ll". [`GlyphText`] wraps a backend and draws text itself with `ab_glyph` (the same crate and
//! the same embedded DejaVu Sans): glyphs are positioned at the fractional pen position
//! `x_k = sum_{j<k} (advance_j + kern_{j-1,j})` on the baseline plotters' SVG backend uses, and
//! rasterised within their own pixel bounds. Everything else passes through to the wrapped
//! backend unchanged.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::{FontStyle, FontTransform};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};
use std::sync::OnceLock;

/// DejaVu Sans (regular, bold), parsed once.
fn fonts() -> &'static (FontRef<'static>, FontRef<'static>) {
    static FONTS: OnceLock<(FontRef<'static>, FontRef<'static>)> = OnceLock::new();
    FONTS.get_or_init(|| {
        (
            FontRef::try_from_slice(dejavu::sans::regular()).expect("embedded DejaVu Sans parses"),
            FontRef::try_from_slice(dejavu::sans::bold()).expect("embedded DejaVu Sans Bold parses"),
        )
    })
}

fn font_for(style: FontStyle) -> &'static FontRef<'static> {
    let (regular, bold) = fonts();
    if matches!(style, FontStyle::Bold) {
        bold
    } else {
        regular
    }
}

/// The glyph scale whose em is `size / 1.24` px: plotters' (and its SVG backend's) reading of
/// a font size, so the bitmap and the SVG of a figure set their text at the same size.
fn px_scale(font: &FontRef<'static>, size: f64) -> PxScale {
    let em = font.units_per_em().unwrap_or(2048.0);
    PxScale::from((size / 1.24) as f32 * font.height_unscaled() / em)
}

/// Pen positions of the glyphs of `text` at font size `size`, and the text's advance width.
fn layout(font: &FontRef<'static>, size: f64, text: &str) -> (Vec<(ab_glyph::GlyphId, f32)>, f32) {
    let f = font.as_scaled(px_scale(font, size));
    let mut x = 0f32;
    let mut prev = None;
    let mut glyphs = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = f.glyph_id(c);
        if let Some(p) = prev {
            x += f.kern(p, id);
        }
        glyphs.push((id, x));
        x += f.h_advance(id);
        prev = Some(id);
    }
    (glyphs, x)
}

/// Width and height in pixels of `text` at font size `size` in DejaVu Sans (regular or bold):
/// the advance width, and one em (`size / 1.24`) as plotters measures a line.
pub fn text_size(text: &str, size: f64, bold: bool) -> (u32, u32) {
    let font = if bold { &fonts().1 } else { &fonts().0 };
    let (_, w) = layout(font, size, text);
    (w.ceil() as u32, (size / 1.24).ceil() as u32)
}

/// A backend whose text is measured by `layout` and, on bitmaps, drawn by it (see the module
/// documentation); all other primitives go to the wrapped backend. The SVG backend keeps its
/// own `<text>` elements and only takes the measurements, so a figure's PNG and SVG have the
/// same layout.
pub struct GlyphText<B> {
    inner: B,
    raster: bool,
}

impl<B> GlyphText<B> {
    /// Wraps a bitmap backend: text is rasterised here.
    pub fn raster(inner: B) -> Self {
        GlyphText { inner, raster: true }
    }
    /// Wraps a vector backend: text stays text, measured here.
    pub fn vector(inner: B) -> Self {
        GlyphText { inner, raster: false }
    }
}

impl<B: DrawingBackend> DrawingBackend for GlyphText<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, style: &S) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, path: I, style: &S) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(&mut self, center: BackendCoord, radius: u32, style: &S, fill: bool) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, vert: I, style: &S) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }
    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(&self, text: &str, style: &S) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        Ok(text_size(text, style.size(), matches!(style.style(), FontStyle::Bold)))
    }

    /// Draws like plotters' SVG text: the anchor's x is the start, middle or end of the advance
    /// width; the baseline is 0.76 em below a top anchor, 0.5 ex below a centre anchor and 0.5 ex
    /// above a bottom anchor (DejaVu's x-height, 1120/2048 em, is the ex).
    fn draw_text<S: BackendTextStyle>(&mut self, text: &str, style: &S, pos: BackendCoord) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        if !self.raster {
            return self.inner.draw_text(text, style, pos);
        }
        let color = style.color();
        if color.alpha == 0.0 || text.is_empty() {
            return Ok(());
        }
        let font = font_for(style.style());
        let scale = px_scale(font, style.size());
        let (glyphs, width) = layout(font, style.size(), text);
        let em = (style.size() / 1.24) as f32;
        let ex = em * 1120.0 / 2048.0;
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Right => -width,
            HPos::Center => -width / 2.0,
        };
        let baseline = match style.anchor().v_pos {
            VPos::Top => 0.76 * em,
            VPos::Center => 0.5 * ex,
            VPos::Bottom => -0.5 * ex,
        };
        let trans: FontTransform = style.transform();
        let (w, h) = self.get_size();
        // Coverage accumulated per pixel first, so pixels shared by two glyph boxes blend once.
        let mut cover: std::collections::BTreeMap<(i32, i32), f32> = std::collections::BTreeMap::new();
        for (id, x) in glyphs {
            let glyph = id.with_scale_and_position(scale, ab_glyph::point(x + dx, baseline));
            if let Some(outline) = font.outline_glyph(glyph) {
                let b = outline.px_bounds();
                outline.draw(|gx, gy, c| {
                    if c > 0.0 {
                        let e = cover.entry((b.min.x as i32 + gx as i32, b.min.y as i32 + gy as i32)).or_insert(0.0);
                        *e = (*e + c).min(1.0);
                    }
                });
            }
        }
        for ((x, y), c) in cover {
            let (x, y) = trans.transform(x, y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && y >= 0 && (x as u32) < w && (y as u32) < h {
                self.inner.draw_pixel((x, y), BackendColor { alpha: color.alpha * c as f64, rgb: color.rgb })?;
            }
        }
        Ok(())
    }
}

/// Parameter names the papers write as Greek letters, as whole words: `lambda` -> λ, `gamma`
/// -> γ, `sigma` -> σ, ...; and `inf` -> ∞.
const GREEK: [(&str, &str); 12] = [
    ("alpha", "α"),
    ("beta", "β"),
    ("gamma", "γ"),
    ("delta", "δ"),
    ("epsilon", "ε"),
    ("theta", "θ"),
    ("lambda", "λ"),
    ("mu", "μ"),
    ("rho", "ρ"),
    ("sigma", "σ"),
    ("tau", "τ"),
    ("inf", "∞"),
];

/// `s` with every whole word of `GREEK` replaced by its letter; a word is a maximal run of
/// ASCII letters, digits and `_`, so `gamma=0.1` and `(C = inf)` change but `lambdas`,
/// `info` and `sigma_x` do not.
pub fn greek(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut rest = s;
    while let Some(start) = rest.find(is_word) {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail.find(|c: char| !is_word(c)).unwrap_or(tail.len());
        let word = &tail[..end];
        out.push_str(GREEK.iter().find(|(w, _)| *w == word).map_or(word, |(_, g)| g));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greek_replaces_whole_words_only() {
        assert_eq!(greek("gamma = 1e-3, C = inf"), "γ = 1e-3, C = ∞");
        assert_eq!(greek("MPME (lambda=0.03): 0.9975"), "MPME (λ=0.03): 0.9975");
        assert_eq!(greek("lambdas info sigma_x mu2"), "lambdas info sigma_x mu2");
        assert_eq!(greek("perplexity u, sigma"), "perplexity u, σ");
        assert_eq!(greek(""), "");
    }

    #[test]
    fn layout_keeps_side_bearings_and_kerning() {
        // The advance width is the sum of the glyphs' advances: "ll" is twice "l", and a
        // space-free word is as wide as its letters apart.
        let (w_l, _) = text_size("l", 20.0, false);
        let (w_ll, _) = text_size("ll", 20.0, false);
        assert!((w_ll as i64 - 2 * w_l as i64).abs() <= 1, "{w_l} {w_ll}");
        let (w1, _) = text_size("Principal", 20.0, false);
        let (w2, _) = text_size("Princip", 20.0, false);
        let (w3, _) = text_size("al", 20.0, false);
        assert!((w1 as i64 - (w2 + w3) as i64).abs() <= 2, "{w1} vs {w2} + {w3}");
        // bold is wider than regular
        assert!(text_size("Principal", 20.0, true).0 > w1);
    }

    /// Drawn text covers the pixels of its layout box, not outside it: the ink of a left-
    /// anchored "Hl" lies within [pos, pos + width] and is not empty.
    #[test]
    fn drawn_text_lies_in_its_box() {
        use plotters::prelude::*;
        let mut buf = vec![255u8; 200 * 60 * 3];
        {
            let root = GlyphText::raster(BitMapBackend::with_buffer(&mut buf, (200, 60))).into_drawing_area();
            crate::figures::render::register_fonts();
            root.draw(&Text::new("Hl", (10, 10), ("sans-serif", 30).into_font().color(&BLACK))).unwrap();
            root.present().unwrap();
        }
        // top anchor: ink from the cap height (0.76 em - 0.73 em) down to the baseline
        let (w, h) = text_size("Hl", 30.0, false);
        let mut ink = 0;
        for y in 0..60 {
            for x in 0..200 {
                if buf[3 * (y * 200 + x)] < 128 {
                    ink += 1;
                    assert!((10..=10 + w as usize + 1).contains(&x) && (10..=10 + h as usize + 1).contains(&y), "ink at ({x}, {y}) outside the box {w}x{h}");
                }
            }
        }
        assert!(ink > 50, "{ink} inked pixels");
    }
}
