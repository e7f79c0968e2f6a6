//! Social cards: a 1200×630 PNG naming the repository, the path and
//! branch, the last commit's line and the first lines of the file, drawn
//! with ab_glyph's rasteriser over a flat RGB canvas and encoded with the
//! `png` crate's fast deflate. The app caches each card by what it shows
//! (commit and path), so it is drawn once.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};
use bytes::Bytes;

use crate::error::{Result, ServeError};

pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 630;
/// Lines of the file drawn on a file's card.
pub const FILE_LINES: usize = 12;
/// Characters of one line drawn (the rest is cut).
const MAX_CHARS: usize = 90;

/// DejaVu Sans Mono (licence: `assets/DejaVu-LICENSE`).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSansMono.ttf");

/// What a card shows.
#[derive(Debug, Clone, Default)]
pub struct CardText {
    pub repo: String,
    /// `branch` or `branch · path`.
    pub subtitle: String,
    /// The last commit's short id and summary.
    pub commit: String,
    /// Leading lines of the file (empty for a repository card).
    pub lines: Vec<String>,
}

/// The font, parsed once.
pub struct CardFont {
    font: FontRef<'static>,
}

const BG: [u8; 3] = [0xff, 0xff, 0xff];
const BAND: [u8; 3] = [0x24, 0x29, 0x2f];
const CODE_BG: [u8; 3] = [0xf6, 0xf8, 0xfa];

struct Canvas {
    px: Vec<u8>,
}

impl Canvas {
    fn fill(&mut self, x0: u32, y0: u32, x1: u32, y1: u32, c: [u8; 3]) {
        for y in y0..y1.min(HEIGHT) {
            let row = (y * WIDTH) as usize * 3;
            for x in x0..x1.min(WIDTH) {
                let i = row + x as usize * 3;
                self.px[i..i + 3].copy_from_slice(&c);
            }
        }
    }

    fn blend(&mut self, x: i32, y: i32, a: f32, c: [u8; 3]) {
        if x < 0 || y < 0 || x >= WIDTH as i32 || y >= HEIGHT as i32 {
            return;
        }
        let i = (y as usize * WIDTH as usize + x as usize) * 3;
        // Coverage in 16 steps: the card then holds few enough colours
        // for an 8-bit palette, which deflates several times smaller than
        // RGB (the ~30 KB target) and is invisible at this size.
        let a = (a.clamp(0.0, 1.0) * 15.0).round() / 15.0;
        for (k, &ck) in c.iter().enumerate() {
            let d = f32::from(self.px[i + k]);
            self.px[i + k] = (d + (f32::from(ck) - d) * a).round() as u8;
        }
    }
}

impl CardFont {
    pub fn new() -> Result<CardFont> {
        Ok(CardFont {
            font: FontRef::try_from_slice(FONT).map_err(|e| ServeError::Card(e.to_string()))?,
        })
    }

    fn text(&self, cv: &mut Canvas, s: &str, x: f32, baseline: f32, px: f32, c: [u8; 3]) {
        let scaled = self.font.as_scaled(PxScale::from(px));
        let mut pen = x;
        for ch in s.chars().take(MAX_CHARS) {
            let ch = if ch == '\t' { ' ' } else { ch };
            let g = scaled.scaled_glyph(ch);
            let adv = scaled.h_advance(g.id);
            let mut g = g;
            g.position = point(pen, baseline);
            if let Some(og) = self.font.outline_glyph(g) {
                let b = og.px_bounds();
                og.draw(|gx, gy, a| {
                    cv.blend(b.min.x as i32 + gx as i32, b.min.y as i32 + gy as i32, a, c);
                });
            }
            pen += adv;
            if pen > (WIDTH - 40) as f32 {
                break;
            }
        }
    }

    /// The card as PNG bytes.
    pub fn draw(&self, t: &CardText) -> Result<Bytes> {
        let mut cv = Canvas {
            px: vec![0; (WIDTH * HEIGHT * 3) as usize],
        };
        cv.fill(0, 0, WIDTH, HEIGHT, BG);
        cv.fill(0, 0, WIDTH, 150, BAND);
        self.text(&mut cv, &t.repo, 48.0, 92.0, 56.0, [0xff, 0xff, 0xff]);
        self.text(&mut cv, &t.subtitle, 48.0, 132.0, 26.0, [0xd0, 0xd7, 0xde]);
        self.text(&mut cv, &t.commit, 48.0, 200.0, 26.0, [0x1f, 0x23, 0x28]);
        if !t.lines.is_empty() {
            cv.fill(40, 228, WIDTH - 40, HEIGHT - 30, CODE_BG);
            for (i, l) in t.lines.iter().take(FILE_LINES).enumerate() {
                let y = 262.0 + i as f32 * 28.0;
                self.text(&mut cv, l, 56.0, y, 21.0, [0x30, 0x36, 0x3d]);
            }
        } else {
            self.text(
                &mut cv,
                "git in a PDS · knot",
                48.0,
                580.0,
                24.0,
                [0x59, 0x63, 0x6e],
            );
        }
        encode(&cv.px)
    }
}

/// The palette and the index of every pixel, or `None` past 256 colours.
fn palettize(rgb: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut palette: Vec<[u8; 3]> = Vec::new();
    let mut index = Vec::with_capacity(rgb.len() / 3);
    let mut last: Option<([u8; 3], u8)> = None;
    for p in rgb.chunks_exact(3) {
        let c = [p[0], p[1], p[2]];
        let i = match last {
            Some((lc, li)) if lc == c => li,
            _ => {
                let i = match palette.iter().position(|x| *x == c) {
                    Some(i) => i,
                    None => {
                        palette.push(c);
                        palette.len() - 1
                    }
                };
                let i = u8::try_from(i).ok()?;
                last = Some((c, i));
                i
            }
        };
        index.push(i);
    }
    Some((palette.concat(), index))
}

fn encode(rgb: &[u8]) -> Result<Bytes> {
    let perr = |e: png::EncodingError| ServeError::Card(e.to_string());
    let mut out = Vec::with_capacity(48 << 10);
    {
        let mut enc = png::Encoder::new(&mut out, WIDTH, HEIGHT);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let data = match palettize(rgb) {
            Some((palette, index)) => {
                enc.set_color(png::ColorType::Indexed);
                enc.set_palette(palette);
                index
            }
            None => {
                enc.set_color(png::ColorType::Rgb);
                rgb.to_vec()
            }
        };
        let mut w = enc.write_header().map_err(perr)?;
        w.write_image_data(&data).map_err(perr)?;
        w.finish().map_err(perr)?;
    }
    Ok(Bytes::from(out))
}
