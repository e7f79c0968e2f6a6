//! CAR v1: `varint(len) || {"roots": [cid, ...], "version": 1}` then
//! sections `varint(len(cid) + len(data)) || cid || data`.
//!
//! - [`CarWriter`] streams to any `std::io::Write` with constant memory.
//! - [`CarReader`] streams from any `std::io::Read`, one block at a time,
//!   optionally checking each block's SHA-256 against its CID.
//! - [`CarSlice`] parses an in-memory CAR without copying (the `blocks` of a
//!   firehose `#commit`), and [`CarBlocks`] serves its blocks as a
//!   [`BlockSource`]. With `verify`, its block hashes are checked two at a
//!   time (interleaved SHA-256, well above one stream's throughput where
//!   the x86 SHA extensions exist: `repo.car_read/ours.verify`), still
//!   reporting the first bad block in
//!   file order.
//!
//! Choices where the spec is silent: the header is decoded as strict
//! DAG-CBOR with exactly `roots` and `version` (= 1), and at most 1 MiB; a
//! section may be at most [`CarReader::DEFAULT_MAX_SECTION`] (8 MiB) unless
//! the caller raises it; allocation grows with the bytes actually read, so
//! a lying length cannot make the reader reserve memory it never fills;
//! only CIDs this crate accepts (v1, sha2-256, dag-cbor/raw) are allowed.
//! Errors carry the byte offset of the section (or header) at fault.

use std::borrow::Cow;
use std::io::{self, Read, Write};

use crate::cbor::{DecodeError, Encoder, Reader};
use crate::cid::{Cid, CidError, CidMap};
use crate::mst::{BlockSource, BlockSourceError};
use crate::sha256x2::{self, State};
use crate::varint::{self, VarintError};

const MAX_HEADER: u64 = 1 << 20;

/// A CAR read failure and the byte offset where it happened.
#[derive(Debug, thiserror::Error)]
#[error("CAR at byte {offset}: {kind}")]
pub struct CarError {
    /// Offset of the header or section at fault.
    pub offset: u64,
    /// What went wrong.
    pub kind: CarErrorKind,
}

/// The reasons a CAR is rejected.
#[derive(Debug, thiserror::Error)]
pub enum CarErrorKind {
    /// The underlying reader failed.
    #[error("I/O: {0}")]
    Io(#[from] io::Error),
    /// The input ended inside the header or a section.
    #[error("truncated")]
    Truncated,
    /// A bad length varint.
    #[error("bad length varint: {0}")]
    Varint(VarintError),
    /// Header longer than 1 MiB.
    #[error("header length {0} too large")]
    HeaderTooLarge(u64),
    /// Header not strict DAG-CBOR.
    #[error("header: {0}")]
    Header(DecodeError),
    /// Header map without exactly `roots` and `version`.
    #[error("header: {0}")]
    HeaderShape(&'static str),
    /// Header version other than 1.
    #[error("unsupported CAR version {0}")]
    Version(i64),
    /// A section longer than the limit.
    #[error("section length {0} over the limit")]
    SectionTooLarge(u64),
    /// A section whose CID is unsupported or cut short.
    #[error("section CID: {0}")]
    Cid(CidError),
    /// A block whose bytes do not hash to its CID.
    #[error("block {0} does not match its CID")]
    HashMismatch(Cid),
}

fn err(offset: u64, kind: CarErrorKind) -> CarError {
    CarError { offset, kind }
}

/// Writes the header: the bytes before the first section.
fn encode_header(roots: &[Cid]) -> Vec<u8> {
    let mut body = Vec::with_capacity(16 + 41 * roots.len());
    let mut e = Encoder::new(&mut body);
    e.map(2);
    e.text("roots");
    e.list(roots.len());
    for r in roots {
        e.link(r);
    }
    e.text("version");
    e.int(1);
    let mut out = Vec::with_capacity(body.len() + 4);
    varint::write(body.len() as u64, &mut out);
    out.extend_from_slice(&body);
    out
}

fn decode_header(body: &[u8]) -> Result<Vec<Cid>, CarErrorKind> {
    let mut r = Reader::new(body);
    let n = r.read_map_len().map_err(CarErrorKind::Header)?;
    let mut prev = None;
    let (mut roots, mut version) = (None, None);
    for _ in 0..n {
        match r.read_key(&mut prev).map_err(CarErrorKind::Header)? {
            "roots" => {
                let count = r.read_list_len().map_err(CarErrorKind::Header)?;
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(r.read_link().map_err(CarErrorKind::Header)?);
                }
                roots = Some(v);
            }
            "version" => version = Some(r.read_int().map_err(CarErrorKind::Header)?),
            _ => return Err(CarErrorKind::HeaderShape("unknown header field")),
        }
    }
    r.finish().map_err(CarErrorKind::Header)?;
    match version {
        Some(1) => {}
        Some(v) => return Err(CarErrorKind::Version(v)),
        None => return Err(CarErrorKind::HeaderShape("missing version")),
    }
    roots.ok_or(CarErrorKind::HeaderShape("missing roots"))
}

/// Streams a CAR v1 to a writer.
#[derive(Debug)]
pub struct CarWriter<W: Write> {
    out: W,
    written: u64,
}

impl<W: Write> CarWriter<W> {
    /// Writes the header for `roots`.
    pub fn new(mut out: W, roots: &[Cid]) -> io::Result<Self> {
        let header = encode_header(roots);
        out.write_all(&header)?;
        Ok(CarWriter {
            out,
            written: header.len() as u64,
        })
    }

    /// Appends one block.
    pub fn write_block(&mut self, cid: &Cid, data: &[u8]) -> io::Result<()> {
        let (len, n) = varint::encode((Cid::BYTE_LEN + data.len()) as u64);
        self.out.write_all(&len[..n])?;
        self.out.write_all(&cid.to_bytes())?;
        self.out.write_all(data)?;
        self.written += (n + Cid::BYTE_LEN + data.len()) as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Flushes and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Streams blocks out of a CAR v1. For files, pass a buffered reader.
#[derive(Debug)]
pub struct CarReader<R: Read> {
    input: R,
    roots: Vec<Cid>,
    offset: u64,
    verify: bool,
    max_section: u64,
    done: bool,
}

/// Reads a varint from a stream: `Ok(None)` at a clean end of input.
fn read_varint<R: Read>(r: &mut R, offset: u64) -> Result<Option<(u64, usize)>, CarError> {
    let mut buf = [0u8; 10];
    let mut n = 0;
    loop {
        let mut b = [0u8; 1];
        match r.read(&mut b) {
            Ok(0) if n == 0 => return Ok(None),
            Ok(0) => return Err(err(offset, CarErrorKind::Truncated)),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(err(offset, CarErrorKind::Io(e))),
        }
        buf[n] = b[0];
        n += 1;
        if b[0] < 0x80 || n == buf.len() {
            return varint::read(&buf[..n])
                .map(Some)
                .map_err(|e| err(offset, CarErrorKind::Varint(e)));
        }
    }
}

fn read_exact_growing<R: Read>(r: &mut R, len: u64, offset: u64) -> Result<Vec<u8>, CarError> {
    let mut out = Vec::with_capacity(len.min(64 * 1024) as usize);
    r.take(len)
        .read_to_end(&mut out)
        .map_err(|e| err(offset, CarErrorKind::Io(e)))?;
    if (out.len() as u64) < len {
        return Err(err(offset, CarErrorKind::Truncated));
    }
    Ok(out)
}

impl<R: Read> CarReader<R> {
    /// Default cap on one section (CID + data).
    pub const DEFAULT_MAX_SECTION: u64 = 8 << 20;

    /// Reads the header. Blocks are not hash-checked unless
    /// [`verify`](Self::verify) is turned on.
    pub fn new(mut input: R) -> Result<Self, CarError> {
        let (len, n) = read_varint(&mut input, 0)?.ok_or(err(0, CarErrorKind::Truncated))?;
        if len > MAX_HEADER {
            return Err(err(0, CarErrorKind::HeaderTooLarge(len)));
        }
        let body = read_exact_growing(&mut input, len, 0)?;
        let roots = decode_header(&body).map_err(|k| err(0, k))?;
        Ok(CarReader {
            input,
            roots,
            offset: n as u64 + len,
            verify: false,
            max_section: Self::DEFAULT_MAX_SECTION,
            done: false,
        })
    }

    /// Turns per-block hash checking on or off.
    pub fn verify(mut self, on: bool) -> Self {
        self.verify = on;
        self
    }

    /// Sets the largest section accepted.
    pub fn max_section(mut self, bytes: u64) -> Self {
        self.max_section = bytes;
        self
    }

    /// The header's roots.
    pub fn roots(&self) -> &[Cid] {
        &self.roots
    }

    /// The next block, or `None` at the end.
    pub fn next_block(&mut self) -> Result<Option<(Cid, Vec<u8>)>, CarError> {
        if self.done {
            return Ok(None);
        }
        let at = self.offset;
        let Some((len, n)) = read_varint(&mut self.input, at)? else {
            self.done = true;
            return Ok(None);
        };
        if len > self.max_section {
            self.done = true;
            return Err(err(at, CarErrorKind::SectionTooLarge(len)));
        }
        let section =
            read_exact_growing(&mut self.input, len, at).inspect_err(|_| self.done = true)?;
        self.offset += n as u64 + len;
        let (cid, used) = Cid::read_prefix(&section).map_err(|e| {
            self.done = true;
            err(at, CarErrorKind::Cid(e))
        })?;
        let data = section[used..].to_vec();
        if self.verify && !cid.matches(&data) {
            self.done = true;
            return Err(err(at, CarErrorKind::HashMismatch(cid)));
        }
        Ok(Some((cid, data)))
    }
}

impl<R: Read> Iterator for CarReader<R> {
    type Item = Result<(Cid, Vec<u8>), CarError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_block().transpose()
    }
}

/// A CAR held in memory, parsed without copying.
#[derive(Debug, Clone)]
pub struct CarSlice<'a> {
    /// The header's roots.
    pub roots: Vec<Cid>,
    /// Blocks in file order, data borrowed from the input.
    pub blocks: Vec<(Cid, &'a [u8])>,
}

impl<'a> CarSlice<'a> {
    /// Parses `bytes`; with `verify`, checks every block's hash.
    pub fn parse(bytes: &'a [u8], verify: bool) -> Result<Self, CarError> {
        // A firehose slice holds about ten blocks; a whole repo grows it.
        let mut blocks = Vec::with_capacity(16);
        let roots = parse_into(bytes, verify, &mut blocks)?;
        Ok(CarSlice { roots, blocks })
    }

    /// The first block with this CID.
    pub fn get(&self, cid: &Cid) -> Option<&'a [u8]> {
        self.blocks.iter().find(|b| b.0 == *cid).map(|b| b.1)
    }
}

/// [`CarSlice::parse`] into a caller's (cleared) block list, so a verifier
/// can reuse its allocation; returns the roots.
///
/// With `verify`, the hashes are checked after the sections are split,
/// two blocks at a time ([`crate::sha256x2`]); the error is still the
/// first one in file order: a mismatching block before a malformed
/// section is reported as the mismatch, as a one-pass reader would.
pub(crate) fn parse_into<'a>(
    bytes: &'a [u8],
    verify: bool,
    blocks: &mut Vec<(Cid, &'a [u8])>,
) -> Result<Vec<Cid>, CarError> {
    parse_impl(bytes, verify, blocks, None)
}

/// [`parse_into`] with hash checks that also keep, for every block, the
/// SHA-256 state after each of its whole 64-byte blocks (in `states`), so
/// that a re-encoding of an edited block can resume its hash from them.
pub(crate) fn parse_into_logged<'a>(
    bytes: &'a [u8],
    blocks: &mut Vec<(Cid, &'a [u8])>,
    states: &mut BlockStates,
) -> Result<Vec<Cid>, CarError> {
    parse_impl(bytes, true, blocks, Some(states))
}

/// The SHA-256 states [`parse_into_logged`] keeps: for block `i` of the
/// slice, the state after each whole 64-byte block of its bytes.
#[derive(Debug, Default)]
pub(crate) struct BlockStates {
    states: Vec<State>,
    /// Block `i`'s states are `states[first[i]..first[i + 1]]`.
    first: Vec<u32>,
}

impl BlockStates {
    /// The states of block `i` (`k`-th: after `k + 1` whole blocks);
    /// empty when none were kept.
    pub(crate) fn of(&self, i: usize) -> &[State] {
        match (self.first.get(i), self.first.get(i + 1)) {
            (Some(&a), Some(&b)) => self.states.get(a as usize..b as usize).unwrap_or_default(),
            _ => &[],
        }
    }

    fn clear(&mut self) {
        self.states.clear();
        self.first.clear();
    }
}

fn parse_impl<'a>(
    bytes: &'a [u8],
    verify: bool,
    blocks: &mut Vec<(Cid, &'a [u8])>,
    mut states: Option<&mut BlockStates>,
) -> Result<Vec<Cid>, CarError> {
    blocks.clear();
    if let Some(s) = states.as_deref_mut() {
        s.clear();
    }
    let (roots, first) = read_header(bytes)?;
    let malformed = split_sections(bytes, first, blocks).err();
    if verify && let Some(i) = first_mismatch(blocks, states) {
        let at = section_offset(bytes, first, i);
        return Err(err(at, CarErrorKind::HashMismatch(blocks[i].0)));
    }
    match malformed {
        Some(e) => Err(e),
        None => Ok(roots),
    }
}

/// The header of an in-memory CAR: its roots and the offset of the first
/// section.
fn read_header(bytes: &[u8]) -> Result<(Vec<Cid>, usize), CarError> {
    let (len, n) = varint::read(bytes).map_err(|e| err(0, CarErrorKind::Varint(e)))?;
    if len > MAX_HEADER {
        return Err(err(0, CarErrorKind::HeaderTooLarge(len)));
    }
    let body = bytes
        .get(n..)
        .and_then(|b| b.get(..len as usize))
        .ok_or_else(|| err(0, CarErrorKind::Truncated))?;
    Ok((
        decode_header(body).map_err(|k| err(0, k))?,
        n + len as usize,
    ))
}

/// Splits the sections from byte `pos` on into `blocks`, up to the end or
/// the first malformed section (its error).
fn split_sections<'a>(
    bytes: &'a [u8],
    mut pos: usize,
    blocks: &mut Vec<(Cid, &'a [u8])>,
) -> Result<(), CarError> {
    while pos < bytes.len() {
        let at = pos as u64;
        let (len, n) = varint::read(&bytes[pos..]).map_err(|e| err(at, CarErrorKind::Varint(e)))?;
        let start = pos + n;
        let section = usize::try_from(len)
            .ok()
            .and_then(|l| bytes.get(start..start.checked_add(l)?))
            .ok_or_else(|| err(at, CarErrorKind::Truncated))?;
        let (cid, used) = Cid::read_prefix(section).map_err(|e| err(at, CarErrorKind::Cid(e)))?;
        blocks.push((cid, &section[used..]));
        pos = start + section.len();
    }
    Ok(())
}

/// The index of the first block (in file order) whose bytes do not hash to
/// its CID. Blocks are hashed two at a time, paired by length (so the two
/// messages of a pair mostly run the same number of SHA-256 blocks).
fn first_mismatch(blocks: &[(Cid, &[u8])], log: Option<&mut BlockStates>) -> Option<usize> {
    let mut order_small = [0usize; 64];
    let mut order_large = Vec::new();
    let order: &mut [usize] = if blocks.len() <= order_small.len() {
        &mut order_small[..blocks.len()]
    } else {
        order_large.resize(blocks.len(), 0);
        &mut order_large
    };
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    order.sort_unstable_by_key(|&i| blocks[i].1.len());
    let mut first: Option<usize> = None;
    let mut note = |i: usize, digest: &[u8; 32]| {
        if blocks[i].0.digest() != digest && first.is_none_or(|f| i < f) {
            first = Some(i);
        }
    };
    let mut pairs = order.chunks_exact(2);
    match log {
        None => {
            for p in &mut pairs {
                let (a, b) = (p[0], p[1]);
                let (da, db) = sha256x2::digest_pair(blocks[a].1, blocks[b].1);
                note(a, &da);
                note(b, &db);
            }
            if let [i] = *pairs.remainder() {
                note(i, &sha256x2::digest(blocks[i].1));
            }
        }
        Some(log) => {
            let mut total = 0u32;
            log.first.push(0);
            for (_, data) in blocks {
                total = total.saturating_add((data.len() / 64) as u32);
                log.first.push(total);
            }
            log.states.resize(total as usize, [0; 8]);
            let (starts, states) = (&log.first, &mut log.states);
            let mut put = |i: usize, k: usize, s: &State| {
                if let Some(slot) = states.get_mut(starts[i] as usize + k) {
                    *slot = *s;
                }
            };
            for p in &mut pairs {
                let (a, b) = (p[0], p[1]);
                let (da, db) =
                    sha256x2::digest_pair_logged(blocks[a].1, blocks[b].1, &mut |lane, k, s| {
                        put(if lane == 0 { a } else { b }, k, s)
                    });
                note(a, &da);
                note(b, &db);
            }
            if let [i] = *pairs.remainder() {
                note(
                    i,
                    &sha256x2::digest_logged(blocks[i].1, &mut |_, k, s| put(i, k, s)),
                );
            }
        }
    }
    first
}

/// The byte offset of section `i` (counted from the one at `pos`, which
/// [`split_sections`] already walked without error).
#[cold]
fn section_offset(bytes: &[u8], mut pos: usize, i: usize) -> u64 {
    for _ in 0..i {
        match varint::read(bytes.get(pos..).unwrap_or_default()) {
            Ok((len, n)) => pos = pos.saturating_add(n).saturating_add(len as usize),
            Err(_) => break,
        }
    }
    pos as u64
}

/// Blocks by CID, borrowed from a parsed [`CarSlice`]; a [`BlockSource`].
#[derive(Debug, Clone)]
pub struct CarBlocks<'a> {
    small: Vec<(Cid, &'a [u8])>,
    map: Option<CidMap<&'a [u8]>>,
}

impl<'a> CarBlocks<'a> {
    /// Indexes the blocks (a linear list when there are few).
    pub fn new(blocks: &[(Cid, &'a [u8])]) -> Self {
        if blocks.len() <= 32 {
            CarBlocks {
                small: blocks.to_vec(),
                map: None,
            }
        } else {
            CarBlocks {
                small: Vec::new(),
                map: Some(blocks.iter().copied().collect()),
            }
        }
    }

    /// The bytes of `cid`.
    #[inline]
    pub fn get(&self, cid: &Cid) -> Option<&'a [u8]> {
        match &self.map {
            Some(m) => m.get(cid).copied(),
            None => self.small.iter().find(|b| b.0 == *cid).map(|b| b.1),
        }
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(self.small.len(), |m| m.len())
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl BlockSource for CarBlocks<'_> {
    fn get_block(&self, cid: &Cid) -> Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        Ok(self.get(cid).map(Cow::Borrowed))
    }
}

/// Writes a whole CAR into a `Vec` (small exports, firehose slices).
pub fn write_car_vec<'b>(
    roots: &[Cid],
    blocks: impl IntoIterator<Item = (&'b Cid, &'b [u8])>,
) -> Vec<u8> {
    let mut out = Vec::new();
    write_car(roots, blocks, &mut out);
    out
}

/// Appends a whole CAR to `out` (a caller that knows the size reserves it
/// first: no reallocation on the way).
pub fn write_car<'b>(
    roots: &[Cid],
    blocks: impl IntoIterator<Item = (&'b Cid, &'b [u8])>,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(&encode_header(roots));
    for (cid, data) in blocks {
        varint::write((Cid::BYTE_LEN + data.len()) as u64, out);
        out.extend_from_slice(&cid.to_bytes());
        out.extend_from_slice(data);
    }
}

#[cfg(test)]
#[path = "car_tests.rs"]
mod tests;
