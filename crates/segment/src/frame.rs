//! zstd frames: level 3, content checksum and content size on, no
//! dictionary; decoding capped at 1 GiB and never allocating past what the
//! frame can legitimately produce.

use zstd::zstd_safe::{self, CCtx, CParameter, DCtx, DParameter};

use crate::error::{Error, Result};

/// Compression level of every frame.
pub const LEVEL: i32 = 3;
/// Largest decompressed frame accepted.
pub const MAX_DECODED: usize = 1 << 30;
/// zstd can expand at most ~43,690x (a 3-byte RLE block header plus one
/// byte per 128 KiB block); a frame claiming more is hostile.
const MAX_RATIO: usize = 1 << 16;
const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The most bytes a zstd frame of `decoded` bytes can take, header and
/// checksum included (zstd's compress bound).
pub(crate) fn frame_bound(decoded: u64) -> u64 {
    let n = usize::try_from(decoded).unwrap_or(usize::MAX);
    zstd_safe::compress_bound(n) as u64
}

fn zstd_err(code: usize) -> Error {
    Error::Frame(zstd_safe::get_error_name(code).to_owned())
}

/// A reusable zstd compression context configured for segment frames.
pub struct Compressor {
    cctx: CCtx<'static>,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compressor")
    }
}

impl Compressor {
    /// A context at level 3 with checksum and content size.
    pub fn new() -> Result<Self> {
        let mut cctx =
            CCtx::try_create().ok_or_else(|| Error::Frame("cannot allocate context".into()))?;
        cctx.set_parameter(CParameter::CompressionLevel(LEVEL))
            .map_err(zstd_err)?;
        cctx.set_parameter(CParameter::ChecksumFlag(true))
            .map_err(zstd_err)?;
        cctx.set_parameter(CParameter::ContentSizeFlag(true))
            .map_err(zstd_err)?;
        Ok(Compressor { cctx })
    }

    /// Appends one frame of `src` to `out`; returns the frame's length.
    pub fn compress_append(&mut self, src: &[u8], out: &mut Vec<u8>) -> Result<usize> {
        let start = out.len();
        // Compress straight into the spare capacity after `start` (no
        // zero-fill of the bound): the cursor makes zstd write there and
        // sets the length to `start + n`.
        out.reserve(zstd_safe::compress_bound(src.len()));
        let mut cursor = std::io::Cursor::new(&mut *out);
        cursor.set_position(start as u64);
        match self.cctx.compress2(&mut cursor, src) {
            Ok(n) if out.len() == start + n => Ok(n),
            Ok(_) => {
                out.truncate(start);
                Err(Error::Frame("compressor wrote an unexpected length".into()))
            }
            Err(code) => {
                out.truncate(start);
                Err(zstd_err(code))
            }
        }
    }
}

/// A reusable zstd decompression context.
pub struct Decompressor {
    dctx: DCtx<'static>,
}

impl std::fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decompressor")
    }
}

/// Checks the frame header of `src`: magic, and the content checksum flag
/// when `need_checksum`. Returns the declared content size, if any.
fn inspect(src: &[u8], need_checksum: bool) -> Result<Option<usize>> {
    if src.len() < 5 || src[..4] != MAGIC {
        return Err(Error::Frame("not a zstd frame".into()));
    }
    if need_checksum && src[4] & 0x04 == 0 {
        return Err(Error::Frame("frame has no content checksum".into()));
    }
    match zstd_safe::get_frame_content_size(src) {
        Ok(Some(n)) => usize::try_from(n)
            .map(Some)
            .map_err(|_| Error::Frame("content size too large".into())),
        Ok(None) => Ok(None),
        Err(_) => Err(Error::Frame("bad frame header".into())),
    }
}

impl Decompressor {
    /// A fresh context (window limited to zstd's default maximum).
    pub fn new() -> Result<Self> {
        let mut dctx =
            DCtx::try_create().ok_or_else(|| Error::Frame("cannot allocate context".into()))?;
        dctx.set_parameter(DParameter::WindowLogMax(27))
            .map_err(zstd_err)?;
        Ok(Decompressor { dctx })
    }

    /// Decompresses exactly one frame (`src` must be the whole frame, with
    /// a content checksum) into `out` (cleared first). `expected` is the
    /// decoded size the caller knows, if it knows one; the frame's content
    /// size, when present, must agree with it. Output is capped at
    /// [`MAX_DECODED`] and at what `src` can legitimately expand to.
    pub fn decompress_into(
        &mut self,
        src: &[u8],
        expected: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        out.clear();
        let declared = inspect(src, true)?;
        let size = match (declared, expected) {
            (Some(d), Some(e)) if d != e => {
                return Err(Error::Frame(format!(
                    "content size {d} differs from the expected {e}"
                )));
            }
            (Some(d), _) => d,
            (None, Some(e)) => e,
            (None, None) => return self.decompress_streaming(src, out),
        };
        if size > MAX_DECODED || size > src.len().saturating_mul(MAX_RATIO) {
            return Err(Error::Frame(format!("content size {size} past the cap")));
        }
        match zstd_safe::find_frame_compressed_size(src) {
            Ok(n) if n == src.len() => {}
            Ok(_) => return Err(Error::Frame("bytes after the frame".into())),
            Err(code) => return Err(zstd_err(code)),
        }
        // One spare byte so a frame that decodes longer than declared
        // fails the size check instead of "destination too small".
        out.reserve_exact(size + 1);
        let n = self.dctx.decompress(out, src).map_err(zstd_err)?;
        if n != size {
            out.clear();
            return Err(Error::Frame(format!("decoded {n} bytes, expected {size}")));
        }
        Ok(())
    }
}

impl Decompressor {
    /// A frame without a content size and no expected size: stream it,
    /// growing the output only as data arrives, up to the cap.
    fn decompress_streaming(&mut self, src: &[u8], out: &mut Vec<u8>) -> Result<()> {
        use std::io::Read;
        match zstd_safe::find_frame_compressed_size(src) {
            Ok(n) if n == src.len() => {}
            Ok(_) => return Err(Error::Frame("bytes after the frame".into())),
            Err(code) => return Err(zstd_err(code)),
        }
        let cap = MAX_DECODED.min(src.len().saturating_mul(MAX_RATIO));
        let decoder = zstd::stream::read::Decoder::with_buffer(src)
            .map_err(|e| Error::Frame(e.to_string()))?
            .single_frame();
        decoder
            .take(cap as u64 + 1)
            .read_to_end(out)
            .map_err(|e| Error::Frame(e.to_string()))?;
        if out.len() > cap {
            out.clear();
            return Err(Error::Frame("decoded size past the cap".into()));
        }
        Ok(())
    }
}

/// Compresses `src` into a new frame (convenience for tests and one-offs).
pub fn compress(src: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    Compressor::new()?.compress_append(src, &mut out)?;
    Ok(out)
}

/// Decompresses one whole frame into a new buffer.
pub fn decompress(src: &[u8], expected: Option<usize>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    Decompressor::new()?.decompress_into(src, expected, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_carry_checksum_and_size_and_round_trip() {
        let data = b"hello hello hello hello".repeat(100);
        let f = compress(&data).unwrap();
        assert_eq!(f[4] & 0x04, 0x04, "checksum flag");
        assert_eq!(
            zstd_safe::get_frame_content_size(&f).unwrap(),
            Some(data.len() as u64)
        );
        assert_eq!(decompress(&f, None).unwrap(), data);
        assert_eq!(decompress(&f, Some(data.len())).unwrap(), data);
        assert!(decompress(&f, Some(data.len() + 1)).is_err());
        let mut trailing = f.clone();
        trailing.push(0);
        assert!(decompress(&trailing, None).is_err());
        let mut bad = f.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert!(decompress(&bad, None).is_err(), "content checksum verified");
    }

    #[test]
    fn frames_without_checksum_are_rejected() {
        let data = vec![7u8; 100];
        let plain = zstd::bulk::compress(&data, 3).unwrap();
        assert!(decompress(&plain, None).is_err());
    }

    #[test]
    fn frames_without_content_size_stream_within_the_cap() {
        let data = vec![9u8; 10_000];
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_checksum(true).unwrap();
        std::io::Write::write_all(&mut enc, &data).unwrap();
        let f = enc.finish().unwrap();
        assert_eq!(zstd_safe::get_frame_content_size(&f).unwrap(), None);
        assert_eq!(decompress(&f, None).unwrap(), data);
        assert_eq!(decompress(&f, Some(data.len())).unwrap(), data);
        assert!(decompress(&f, Some(data.len() - 1)).is_err());
    }
}
