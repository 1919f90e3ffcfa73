//! Image files as samples: PGM / PPM, PNG and JPEG decoded to `f64` values, and what an image's
//! first bytes declare (its size, checked before a zip member is inflated whole). Every decoder
//! checks the declared size against [`MAX_IMAGE_BYTES`] before allocating.

use super::error::{layout, LoadError};
use crate::registry::Loader;
use std::path::Path;

/// A decoded image: `height x width x channels` samples, row-major, channels interleaved.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// 1 (grey) or 3 (RGB); alpha channels are dropped.
    pub channels: usize,
    /// `height * width * channels` values: `data[(r * width + c) * channels + k]`.
    pub data: Vec<f64>,
}

pub(crate) fn pnm_token<'a>(data: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    loop {
        while *pos < data.len() && data[*pos].is_ascii_whitespace() {
            *pos += 1;
        }
        if *pos < data.len() && data[*pos] == b'#' {
            while *pos < data.len() && data[*pos] != b'\n' {
                *pos += 1;
            }
            continue;
        }
        break;
    }
    let start = *pos;
    while *pos < data.len() && !data[*pos].is_ascii_whitespace() {
        *pos += 1;
    }
    (start < *pos).then(|| &data[start..*pos])
}

/// Largest decoded image (samples or bytes of pixel data) [`decode_pnm`], [`decode_png`] and
/// [`decode_jpeg`] accept: 256 Mi, 10^4 times the largest benchmark image, so that a forged
/// header cannot make the loader allocate gigabytes before the pixel data runs out.
pub const MAX_IMAGE_BYTES: usize = 256 << 20;

fn check_image_size(source: &str, format: &str, size: usize) -> Result<(), LoadError> {
    if size > MAX_IMAGE_BYTES {
        return Err(layout(source, format!("{format} header declares {size} pixel values, more than the limit of {MAX_IMAGE_BYTES}")));
    }
    Ok(())
}

/// Decodes a binary or ASCII PGM/PPM (`P2`, `P3`, `P5`, `P6`; maxval up to 65535, values kept
/// as stored).
pub fn decode_pnm(data: &[u8], source: &str) -> Result<Image, LoadError> {
    let mut pos = 0;
    let magic = pnm_token(data, &mut pos).ok_or_else(|| layout(source, "empty PNM file"))?;
    let (channels, binary) = match magic {
        b"P2" => (1, false),
        b"P3" => (3, false),
        b"P5" => (1, true),
        b"P6" => (3, true),
        _ => return Err(layout(source, "not a PGM/PPM file (magic P2, P3, P5 or P6)")),
    };
    let mut num = |what: &str| -> Result<usize, LoadError> {
        pnm_token(data, &mut pos)
            .and_then(|t| std::str::from_utf8(t).ok())
            .and_then(|t| t.parse::<usize>().ok())
            .ok_or_else(|| layout(source, format!("bad PNM header: {what} (byte {pos})")))
    };
    let width = num("width")?;
    let height = num("height")?;
    let maxval = num("maxval")?;
    if width == 0 || height == 0 || maxval == 0 || maxval > 65535 {
        return Err(layout(source, format!("bad PNM header {width} x {height}, maxval {maxval}")));
    }
    let n = width.checked_mul(height).and_then(|v| v.checked_mul(channels)).ok_or_else(|| layout(source, "PNM dimensions overflow"))?;
    check_image_size(source, "PNM", n)?;
    // reserve no more than the file can hold: every sample takes at least one byte (found by
    // `just fuzz images`: a header of 1e9 x 1e9 reserved 2 GiB before the data ran out)
    let mut out = Vec::with_capacity(n.min(data.len()));
    if binary {
        pos += 1; // the single whitespace byte after maxval
        let bps = if maxval > 255 { 2 } else { 1 };
        let need = n * bps;
        let body = data
            .get(pos..pos + need)
            .ok_or_else(|| layout(source, format!("PNM pixel data truncated: need {need} bytes from byte {pos}, file has {}", data.len())))?;
        if bps == 1 {
            out.extend(body.iter().map(|&b| f64::from(b)));
        } else {
            out.extend(body.chunks_exact(2).map(|c| f64::from(u16::from_be_bytes([c[0], c[1]]))));
        }
    } else {
        for i in 0..n {
            let v = pnm_token(data, &mut pos)
                .and_then(|t| std::str::from_utf8(t).ok())
                .and_then(|t| t.parse::<u32>().ok())
                .ok_or_else(|| layout(source, format!("PNM sample {i} missing or malformed (byte {pos})")))?;
            out.push(f64::from(v));
        }
    }
    Ok(Image { height, width, channels, data: out })
}

fn drop_alpha(data: Vec<u8>, channels_in: usize) -> (Vec<f64>, usize) {
    match channels_in {
        2 => (data.chunks_exact(2).map(|c| f64::from(c[0])).collect(), 1),
        4 => (data.chunks_exact(4).flat_map(|c| c[..3].iter().map(|&b| f64::from(b))).collect(), 3),
        c => (data.into_iter().map(f64::from).collect(), c),
    }
}

/// Decodes a PNG (any colour type; palette expanded, 16-bit reduced to 8-bit, alpha dropped).
pub fn decode_png(data: &[u8], source: &str) -> Result<Image, LoadError> {
    let err = |e: png::DecodingError| layout(source, format!("PNG: {e}"));
    let mut dec = png::Decoder::new(std::io::Cursor::new(data));
    dec.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = dec.read_info().map_err(err)?;
    // the header's size is checked before the frame buffer is allocated (found by `just fuzz
    // images`: 3 x 939524098 pixels asked for 2.8 GB from a 60-byte file)
    check_image_size(source, "PNG", reader.output_buffer_size())?;
    let mut buf = vec![0u8; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).map_err(err)?;
    let ch = match info.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Err(layout(source, "PNG: palette not expanded")),
    };
    let (w, h) = (info.width as usize, info.height as usize);
    let mut rows = Vec::with_capacity(w * h * ch);
    for r in 0..h {
        let line = buf.get(r * info.line_size..r * info.line_size + w * ch).ok_or_else(|| layout(source, "PNG: short frame buffer"))?;
        rows.extend_from_slice(line);
    }
    let (data, channels) = drop_alpha(rows, ch);
    Ok(Image { height: h, width: w, channels, data })
}

/// Decodes a baseline or progressive JPEG (8-bit grey or RGB).
pub fn decode_jpeg(data: &[u8], source: &str) -> Result<Image, LoadError> {
    let mut dec = jpeg_decoder::Decoder::new(std::io::Cursor::new(data));
    dec.set_max_decoding_buffer_size(MAX_IMAGE_BYTES);
    // The header's size is checked before any scan is decoded (found by `just fuzz images`: 485
    // bytes declaring 32775 x 8201 pixels decoded for over 10 s). Even a flat baseline block costs
    // a few bits per 8 x 8 pixels, so a real JPEG holds at most ~256 pixels per byte: 1024 per
    // byte (+ 64 Ki) is a generous bound.
    dec.read_info().map_err(|e| layout(source, format!("JPEG: {e}")))?;
    if let Some(info) = dec.info() {
        let pixels = usize::from(info.width) * usize::from(info.height);
        check_image_size(source, "JPEG", pixels)?;
        if pixels > 1024 * data.len() + (1 << 16) {
            return Err(layout(source, format!("JPEG header declares {} x {} pixels, more than {} bytes can encode", info.width, info.height, data.len())));
        }
    }
    let pixels = dec.decode().map_err(|e| layout(source, format!("JPEG: {e}")))?;
    let info = dec.info().ok_or_else(|| layout(source, "JPEG: no frame header"))?;
    let channels = match info.pixel_format {
        jpeg_decoder::PixelFormat::L8 => 1,
        jpeg_decoder::PixelFormat::RGB24 => 3,
        other => return Err(layout(source, format!("JPEG: unsupported pixel format {other:?}"))),
    };
    let (w, h) = (usize::from(info.width), usize::from(info.height));
    if pixels.len() != w * h * channels {
        return Err(layout(source, "JPEG: pixel buffer size does not match the header"));
    }
    Ok(Image { height: h, width: w, channels, data: pixels.into_iter().map(f64::from).collect() })
}

/// Decodes an image by file extension: `.pgm`/`.ppm`/`.pnm`, `.png`, `.jpg`/`.jpeg`.
/// Returns `None` for other extensions.
pub fn decode_image(name: &str, data: &[u8], source: &str) -> Option<Result<Image, LoadError>> {
    let ext = Path::new(name).extension()?.to_string_lossy().to_ascii_lowercase();
    Some(match ext.as_str() {
        "pgm" | "ppm" | "pnm" => decode_pnm(data, source),
        "png" => decode_png(data, source),
        "jpg" | "jpeg" => decode_jpeg(data, source),
        _ => return None,
    })
}

/// `(height, width, channels after decoding)` from the first bytes of an image file, by its
/// extension: a PNM header (`P2`/`P5` grey, `P3`/`P6` RGB), a PNG `IHDR` (palette and alpha
/// dropped as [`decode_png`] does: grey 1, RGB 3), or a JPEG start-of-frame marker (`SOF0`-`SOF15`
/// but `DHT`, `JPG`, `DAC`). `None` when the bytes do not tell (the decoder then decides).
pub(crate) fn image_header(name: &str, head: &[u8]) -> Option<(usize, usize, usize)> {
    let ext = Path::new(name).extension()?.to_string_lossy().to_ascii_lowercase();
    match ext.as_str() {
        "pgm" | "ppm" | "pnm" => {
            let mut pos = 0;
            let channels = match pnm_token(head, &mut pos)? {
                b"P2" | b"P5" => 1,
                b"P3" | b"P6" => 3,
                _ => return None,
            };
            let mut num = || std::str::from_utf8(pnm_token(head, &mut pos)?).ok()?.parse::<usize>().ok();
            let w = num()?;
            let h = num()?;
            Some((h, w, channels))
        }
        "png" => {
            if head.len() < 26 || &head[..8] != b"\x89PNG\r\n\x1a\n" || &head[12..16] != b"IHDR" {
                return None;
            }
            let w = u32::from_be_bytes([head[16], head[17], head[18], head[19]]) as usize;
            let h = u32::from_be_bytes([head[20], head[21], head[22], head[23]]) as usize;
            let channels = match head[25] {
                0 | 4 => 1,
                2 | 3 | 6 => 3,
                _ => return None,
            };
            Some((h, w, channels))
        }
        "jpg" | "jpeg" => {
            let mut p = 2;
            while p + 10 <= head.len() && head[p] == 0xff {
                let marker = head[p + 1];
                let len = usize::from(u16::from_be_bytes([head[p + 2], head[p + 3]]));
                if (0xc0..=0xcf).contains(&marker) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
                    let h = usize::from(u16::from_be_bytes([head[p + 5], head[p + 6]]));
                    let w = usize::from(u16::from_be_bytes([head[p + 7], head[p + 8]]));
                    return Some((h, w, usize::from(head[p + 9])));
                }
                p += 2 + len;
            }
            None
        }
        _ => None,
    }
}

/// An image's declared size against what the data set expects, before the image is inflated:
/// the registry's `image_shape` (`h x w` or `w x h`, `ch` channels) when it has one, else
/// `h * w * ch = n_features`; and at most [`MAX_IMAGE_BYTES`] values.
pub(crate) fn check_image_dims(source: &str, (h, w, c): (usize, usize, usize), loader: &Loader, n_features: usize) -> Result<(), LoadError> {
    let values = h.saturating_mul(w).saturating_mul(c);
    check_image_size(source, "image", values)?;
    match loader.image_shape {
        Some([eh, ew, ec]) if !(c == ec && ((h, w) == (eh, ew) || (h, w) == (ew, eh))) => {
            Err(layout(source, format!("header declares {h} x {w} x {c}; the registry expects {eh} x {ew} x {ec}")))
        }
        None if values != n_features => {
            Err(layout(source, format!("header declares {h} x {w} x {c} = {values} values; the data set has {n_features} features")))
        }
        _ => Ok(()),
    }
}
