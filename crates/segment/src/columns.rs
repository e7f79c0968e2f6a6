//! The columnar block body: `event_count u32`, ten fixed-width arrays
//! (34 bytes per event), then the concatenated strings and payloads.

// `ok_or_else` on purpose: `Error` has drop glue, and building one eagerly
// per event cost a third of the decode time (measured with perf).
#![allow(clippy::unnecessary_lazy_evaluations)]

use crate::error::{Error, Result};
use crate::event::{EventRef, Kind};

/// Most events one block body may hold.
pub const MAX_BLOCK_EVENTS: usize = 262_144;
/// Bytes of fixed-width columns per event.
pub const FIXED_BYTES_PER_EVENT: usize = 34;

/// A pending block as parallel column vectors (the writer's buffer).
#[derive(Debug, Default, Clone)]
pub struct Columns {
    seq: Vec<u64>,
    witnessed_at: Vec<i64>,
    indexed_at: Vec<i64>,
    kind: Vec<u8>,
    collection_len: Vec<u8>,
    did_len: Vec<u16>,
    rkey_len: Vec<u8>,
    rev_len: Vec<u8>,
    payload_len: Vec<u32>,
    collections: Vec<u8>,
    dids: Vec<u8>,
    rkeys: Vec<u8>,
    revs: Vec<u8>,
    payloads: Vec<u8>,
}

impl Columns {
    /// Empty columns with room for `events` events.
    pub fn with_capacity(events: usize) -> Self {
        Columns {
            seq: Vec::with_capacity(events),
            witnessed_at: Vec::with_capacity(events),
            indexed_at: Vec::with_capacity(events),
            kind: Vec::with_capacity(events),
            collection_len: Vec::with_capacity(events),
            did_len: Vec::with_capacity(events),
            rkey_len: Vec::with_capacity(events),
            rev_len: Vec::with_capacity(events),
            payload_len: Vec::with_capacity(events),
            ..Columns::default()
        }
    }

    /// Events held.
    pub fn len(&self) -> usize {
        self.seq.len()
    }

    /// Whether no event is held.
    pub fn is_empty(&self) -> bool {
        self.seq.is_empty()
    }

    /// Appends one event after checking the field limits.
    pub fn push(&mut self, event: &EventRef<'_>) -> Result<()> {
        event.validate()?;
        if self.len() >= MAX_BLOCK_EVENTS {
            return Err(Error::Limit("block holds 262,144 events"));
        }
        self.seq.push(event.seq);
        self.witnessed_at.push(event.witnessed_at);
        self.indexed_at.push(event.indexed_at);
        self.kind.push(event.kind as u8);
        // Lengths fit: `validate` checked them.
        self.collection_len.push(event.collection.len() as u8);
        self.did_len.push(event.did.len() as u16);
        self.rkey_len.push(event.rkey.len() as u8);
        self.rev_len.push(event.rev.len() as u8);
        self.payload_len.push(event.payload.len() as u32);
        self.collections
            .extend_from_slice(event.collection.as_bytes());
        self.dids.extend_from_slice(event.did.as_bytes());
        self.rkeys.extend_from_slice(event.rkey.as_bytes());
        self.revs.extend_from_slice(event.rev.as_bytes());
        self.payloads.extend_from_slice(event.payload);
        Ok(())
    }

    /// Forgets every event, keeping the allocations.
    pub fn clear(&mut self) {
        self.seq.clear();
        self.witnessed_at.clear();
        self.indexed_at.clear();
        self.kind.clear();
        self.collection_len.clear();
        self.did_len.clear();
        self.rkey_len.clear();
        self.rev_len.clear();
        self.payload_len.clear();
        self.collections.clear();
        self.dids.clear();
        self.rkeys.clear();
        self.revs.clear();
        self.payloads.clear();
    }

    /// Bytes of the encoded body.
    pub fn encoded_len(&self) -> usize {
        4 + FIXED_BYTES_PER_EVENT * self.len()
            + self.collections.len()
            + self.dids.len()
            + self.rkeys.len()
            + self.revs.len()
            + self.payloads.len()
    }

    /// Encodes the body into `out` (cleared first, allocation reused).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(self.encoded_len());
        out.extend_from_slice(&(self.len() as u32).to_le_bytes());
        for v in &self.seq {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in &self.witnessed_at {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in &self.indexed_at {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.kind);
        out.extend_from_slice(&self.collection_len);
        for v in &self.did_len {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.rkey_len);
        out.extend_from_slice(&self.rev_len);
        for v in &self.payload_len {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.collections);
        out.extend_from_slice(&self.dids);
        out.extend_from_slice(&self.rkeys);
        out.extend_from_slice(&self.revs);
        out.extend_from_slice(&self.payloads);
    }
}

/// Encodes `events` as one block body into `out` (cleared first, its
/// allocation reused), checking every field limit first.
pub fn encode_events(events: &[EventRef<'_>], out: &mut Vec<u8>) -> Result<()> {
    if events.len() > MAX_BLOCK_EVENTS {
        return Err(Error::Limit("block holds 262,144 events"));
    }
    let mut var = 0usize;
    for e in events {
        e.validate()?;
        var = var
            .checked_add(e.collection.len() + e.did.len() + e.rkey.len() + e.rev.len())
            .and_then(|v| v.checked_add(e.payload.len()))
            .ok_or_else(|| Error::Limit("block body larger than memory"))?;
    }
    out.clear();
    out.reserve(4 + FIXED_BYTES_PER_EVENT * events.len() + var);
    out.extend_from_slice(&(events.len() as u32).to_le_bytes());
    for e in events {
        out.extend_from_slice(&e.seq.to_le_bytes());
    }
    for e in events {
        out.extend_from_slice(&e.witnessed_at.to_le_bytes());
    }
    for e in events {
        out.extend_from_slice(&e.indexed_at.to_le_bytes());
    }
    out.extend(events.iter().map(|e| e.kind as u8));
    out.extend(events.iter().map(|e| e.collection.len() as u8));
    for e in events {
        out.extend_from_slice(&(e.did.len() as u16).to_le_bytes());
    }
    out.extend(events.iter().map(|e| e.rkey.len() as u8));
    out.extend(events.iter().map(|e| e.rev.len() as u8));
    for e in events {
        out.extend_from_slice(&(e.payload.len() as u32).to_le_bytes());
    }
    for e in events {
        out.extend_from_slice(e.collection.as_bytes());
    }
    for e in events {
        out.extend_from_slice(e.did.as_bytes());
    }
    for e in events {
        out.extend_from_slice(e.rkey.as_bytes());
    }
    for e in events {
        out.extend_from_slice(e.rev.as_bytes());
    }
    for e in events {
        out.extend_from_slice(e.payload);
    }
    Ok(())
}

/// Splits `n` bytes off the front of `rest`.
fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
    if rest.len() < n {
        return Err(Error::Body("column runs past the end"));
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

/// Kinds by byte; index 0 is never read (bytes are checked to be 1..=7 first).
const KINDS: [Kind; 8] = [
    Kind::Create,
    Kind::Create,
    Kind::Update,
    Kind::Delete,
    Kind::Identity,
    Kind::Account,
    Kind::Sync,
    Kind::CreateResync,
];

/// The section as a `str`, and whether it is all ASCII (checked first: it
/// is the common case and makes every byte offset a character boundary).
fn str_of<'a>(bytes: &'a [u8], field: &'static str) -> Result<(&'a str, bool)> {
    if bytes.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8 (checked just above).
        return Ok((unsafe { std::str::from_utf8_unchecked(bytes) }, true));
    }
    std::str::from_utf8(bytes)
        .map(|s| (s, false))
        .map_err(|_| Error::InvalidUtf8(field))
}

/// The columns and sections of a body whose every bulk check passed:
/// event count, column sizes, length sums equal to the section lengths,
/// UTF-8 of each string section and every kind byte in 1..=7.
struct Parts<'a> {
    n: usize,
    seq: &'a [[u8; 8]],
    witnessed: &'a [[u8; 8]],
    indexed: &'a [[u8; 8]],
    kinds: &'a [u8],
    coll_len: &'a [u8],
    did_len: &'a [[u8; 2]],
    rkey_len: &'a [u8],
    rev_len: &'a [u8],
    payload_len: &'a [[u8; 4]],
    colls: &'a str,
    dids: &'a str,
    rkeys: &'a str,
    revs: &'a str,
    /// All four string sections are ASCII.
    ascii: bool,
    payloads: &'a [u8],
}

/// `n` fixed-width entries of `W` bytes off the front of `rest`.
fn take_array<'a, const W: usize>(rest: &mut &'a [u8], n: usize) -> Result<&'a [[u8; W]]> {
    let (col, tail) = take(rest, n * W)?.as_chunks::<W>();
    debug_assert!(tail.is_empty());
    Ok(col)
}

fn parse(body: &[u8]) -> Result<Parts<'_>> {
    let mut rest = body;
    let head = take(&mut rest, 4).map_err(|_| Error::Body("shorter than its event count"))?;
    let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if n > MAX_BLOCK_EVENTS {
        return Err(Error::Body("more than 262,144 events"));
    }
    if rest.len() / FIXED_BYTES_PER_EVENT < n {
        return Err(Error::Body("fewer than 34 bytes per event"));
    }
    let seq = take_array::<8>(&mut rest, n)?;
    let witnessed = take_array::<8>(&mut rest, n)?;
    let indexed = take_array::<8>(&mut rest, n)?;
    let kinds = take(&mut rest, n)?;
    let coll_len = take(&mut rest, n)?;
    let did_len = take_array::<2>(&mut rest, n)?;
    let rkey_len = take(&mut rest, n)?;
    let rev_len = take(&mut rest, n)?;
    let payload_len = take_array::<4>(&mut rest, n)?;
    // Bulk sums (vectorised): at most 2^18 lengths, so u8/u16 sums fit a
    // u32 and u32 sums fit a u64 (< 2^50) without overflow.
    let sum8 = |col: &[u8]| col.iter().map(|&b| b as u32).sum::<u32>() as usize;
    let coll_total = sum8(coll_len);
    let rkey_total = sum8(rkey_len);
    let rev_total = sum8(rev_len);
    let did_total = did_len
        .iter()
        .map(|b| u16::from_le_bytes(*b) as u32)
        .sum::<u32>() as usize;
    let payload_total = payload_len
        .iter()
        .map(|b| u32::from_le_bytes(*b) as u64)
        .sum::<u64>();
    let payload_total =
        usize::try_from(payload_total).map_err(|_| Error::Body("payload lengths overflow"))?;
    let expected = coll_total
        .checked_add(did_total)
        .and_then(|v| v.checked_add(rkey_total))
        .and_then(|v| v.checked_add(rev_total))
        .and_then(|v| v.checked_add(payload_total))
        .ok_or_else(|| Error::Body("length sums overflow"))?;
    if expected != rest.len() {
        return Err(if expected > rest.len() {
            Error::Body("strings run past the end")
        } else {
            Error::Body("trailing bytes")
        });
    }
    // Each string section is validated as UTF-8 once (ASCII at SIMD
    // speed); slicing the checked `str` per event then rejects any piece
    // that would split a character.
    let (colls, a1) = str_of(take(&mut rest, coll_total)?, "collection")?;
    let (dids, a2) = str_of(take(&mut rest, did_total)?, "did")?;
    let (rkeys, a3) = str_of(take(&mut rest, rkey_total)?, "rkey")?;
    let (revs, a4) = str_of(take(&mut rest, rev_total)?, "rev")?;
    // Kinds in bulk: one vectorised pass, then a lookup per event.
    if !kinds.iter().all(|&k| k.wrapping_sub(1) < 7) {
        let bad = kinds
            .iter()
            .copied()
            .find(|&k| k.wrapping_sub(1) >= 7)
            .unwrap_or_default();
        return Err(Error::InvalidKind(bad));
    }
    Ok(Parts {
        n,
        seq,
        witnessed,
        indexed,
        kinds,
        coll_len,
        did_len,
        rkey_len,
        rev_len,
        payload_len,
        colls,
        dids,
        rkeys,
        revs,
        ascii: a1 && a2 && a3 && a4,
        payloads: rest,
    })
}

/// A checked string section, split event by event.
trait Section<'a> {
    /// Splits the next `len` bytes off; `None` if they run past the
    /// section or split a character.
    fn split(&mut self, len: usize) -> Option<&'a str>;
}

/// Any UTF-8 section: each split checks the character boundary.
struct Utf8<'a>(&'a str);

impl<'a> Section<'a> for Utf8<'a> {
    #[inline(always)]
    fn split(&mut self, len: usize) -> Option<&'a str> {
        let (head, tail) = self.0.split_at_checked(len)?;
        self.0 = tail;
        Some(head)
    }
}

/// An all-ASCII section: every byte offset is a character boundary, so a
/// split is a length check only.
struct Ascii<'a>(&'a [u8]);

impl<'a> Section<'a> for Ascii<'a> {
    #[inline(always)]
    fn split(&mut self, len: usize) -> Option<&'a str> {
        let (head, tail) = self.0.split_at_checked(len)?;
        self.0 = tail;
        // SAFETY: `Ascii` is only built over sections `parse` found to be
        // all ASCII (`Parts::ascii`); any piece of ASCII is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(head) })
    }
}

/// Decodes a block body into events borrowing `body`, appended to `out`
/// (cleared first). Validates the event count, column sizes, kinds, length
/// sums, UTF-8 of the strings and the absence of trailing bytes.
pub fn decode_into<'a>(body: &'a [u8], out: &mut Vec<EventRef<'a>>) -> Result<()> {
    out.clear();
    let p = parse(body)?;
    let sections = (p.colls, p.dids, p.rkeys, p.revs);
    let failed = if p.ascii {
        let a = |s: &'a str| Ascii(s.as_bytes());
        fill(
            &p,
            (a(sections.0), a(sections.1), a(sections.2), a(sections.3)),
            out,
        )
    } else {
        let u = Utf8;
        fill(
            &p,
            (u(sections.0), u(sections.1), u(sections.2), u(sections.3)),
            out,
        )
    };
    match failed {
        None => Ok(()),
        Some(f) => {
            out.clear();
            Err(match f {
                Field::Collection => Error::InvalidUtf8("collection"),
                Field::Did => Error::InvalidUtf8("did"),
                Field::Rkey => Error::InvalidUtf8("rkey"),
                Field::Rev => Error::InvalidUtf8("rev"),
                Field::Payload => Error::Body("payload out of range"),
            })
        }
    }
}

/// Appends the events of `p` to `out`; returns the first field (in event
/// order) whose split failed. The loop stays branch-light and infallible so
/// `extend` writes events in place (the zip is `TrustedLen`).
fn fill<'a, S: Section<'a>>(
    p: &Parts<'a>,
    sections: (S, S, S, S),
    out: &mut Vec<EventRef<'a>>,
) -> Option<Field> {
    let (mut colls, mut dids, mut rkeys, mut revs) = sections;
    let mut payloads = p.payloads;
    let mut failed: Option<Field> = None;
    let mut fail = |f: Field| {
        failed.get_or_insert(f);
    };
    out.reserve(p.n);
    let fixed = p
        .seq
        .iter()
        .zip(p.witnessed)
        .zip(p.indexed)
        .zip(p.kinds)
        .zip(p.coll_len)
        .zip(p.did_len)
        .zip(p.rkey_len)
        .zip(p.rev_len)
        .zip(p.payload_len);
    out.extend(
        fixed.map(|((((((((seq, w), x), &k), &cl), dl), &kl), &vl), pl)| {
            // The sums equal the section lengths, so the splits stay in
            // range; they still guard it (and the character boundaries).
            let mut split = |section: &mut S, len: usize, f: Field| {
                section.split(len).unwrap_or_else(|| {
                    fail(f);
                    ""
                })
            };
            let collection = split(&mut colls, cl as usize, Field::Collection);
            let did = split(&mut dids, u16::from_le_bytes(*dl) as usize, Field::Did);
            let rkey = split(&mut rkeys, kl as usize, Field::Rkey);
            let rev = split(&mut revs, vl as usize, Field::Rev);
            let payload = match payloads.split_at_checked(u32::from_le_bytes(*pl) as usize) {
                Some((head, tail)) => {
                    payloads = tail;
                    head
                }
                None => {
                    fail(Field::Payload);
                    &[]
                }
            };
            EventRef {
                seq: u64::from_le_bytes(*seq),
                witnessed_at: i64::from_le_bytes(*w),
                indexed_at: i64::from_le_bytes(*x),
                kind: KINDS[(k & 7) as usize],
                collection,
                did,
                rkey,
                rev,
                payload,
            }
        }),
    );
    failed
}

/// A variable-length field of an event.
#[derive(Clone, Copy)]
enum Field {
    Collection,
    Did,
    Rkey,
    Rev,
    Payload,
}

/// Decodes a block body into a new vector of borrowed events.
pub fn decode(body: &[u8]) -> Result<Vec<EventRef<'_>>> {
    let mut out = Vec::new();
    decode_into(body, &mut out)?;
    Ok(out)
}

#[cfg(test)]
#[path = "columns_tests.rs"]
mod tests;
