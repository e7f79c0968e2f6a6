//! The columnar block body: `event_count u32`, ten fixed-width arrays
//! (34 bytes per event), then the concatenated strings and payloads.

// `ok_or_else` on purpose: `Error` has drop glue, and building one eagerly
// per event cost much of `segment.decode_columns`'s time (measured with perf).
#![allow(clippy::unnecessary_lazy_evaluations)]

use std::cell::Cell;

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
    /// The four string sections, contiguous as in the body.
    strings: &'a [u8],
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
    // The four string sections together (the ASCII fill cuts them by
    // offset); the sum fits: it is part of `expected`, checked above.
    let strings = rest
        .get(..coll_total + did_total + rkey_total + rev_total)
        .ok_or_else(|| Error::Body("strings run past the end"))?;
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
        strings,
        ascii: a1 && a2 && a3 && a4,
        payloads: rest,
    })
}

/// Decodes a block body into events borrowing `body`, appended to `out`
/// (cleared first). Validates the event count, column sizes, kinds, length
/// sums, UTF-8 of the strings and the absence of trailing bytes.
pub fn decode_into<'a>(body: &'a [u8], out: &mut Vec<EventRef<'a>>) -> Result<()> {
    out.clear();
    let p = parse(body)?;
    let failed = if p.ascii {
        fill_ascii(&p, out)
    } else {
        fill_utf8(&p, out)
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

/// The fixed-width columns of `p`, zipped event by event (`TrustedLen`,
/// so `extend` writes the events in place).
fn rows<'p, 'a>(
    p: &'p Parts<'a>,
) -> impl Iterator<Item = (u64, i64, i64, u8, usize, usize, usize, usize, usize)> + 'p {
    p.seq
        .iter()
        .zip(p.witnessed)
        .zip(p.indexed)
        .zip(p.kinds)
        .zip(p.coll_len)
        .zip(p.did_len)
        .zip(p.rkey_len)
        .zip(p.rev_len)
        .zip(p.payload_len)
        .map(|((((((((seq, w), x), &k), &cl), dl), &kl), &vl), pl)| {
            (
                u64::from_le_bytes(*seq),
                i64::from_le_bytes(*w),
                i64::from_le_bytes(*x),
                k,
                cl as usize,
                u16::from_le_bytes(*dl) as usize,
                kl as usize,
                vl as usize,
                u32::from_le_bytes(*pl) as usize,
            )
        })
}

/// Records the first failed field (in event order); the cold path of the
/// fill loops, which stay infallible so `extend` keeps writing in place.
fn first_failure(failed: &Cell<Option<Field>>, f: Field) {
    if failed.get().is_none() {
        failed.set(Some(f));
    }
}

/// Appends the events of an all-ASCII body to `out`; returns the first
/// field (in event order) whose cut failed. The four string sections are
/// contiguous in `Parts::strings`, so each field's state is one offset into
/// it (or into `Parts::payloads`), owned by the row closure rather than
/// reached through references: faster per row than per-section slice
/// cursors (interleaved same-process A/B of `segment.decode_columns`). The sums
/// equal the section lengths, so no cut crosses a section or fails; each
/// stays checked against its region anyway (a wrapped offset fails the
/// check and becomes a typed error, never a panic). The loop is infallible
/// so `extend` writes the events in place.
fn fill_ascii<'a>(p: &Parts<'a>, out: &mut Vec<EventRef<'a>>) -> Option<Field> {
    debug_assert!(p.ascii);
    let (strings, payloads) = (p.strings, p.payloads);
    let mut at_coll = 0usize;
    let mut at_did = p.colls.len();
    let mut at_rkey = at_did + p.dids.len();
    let mut at_rev = at_rkey + p.rkeys.len();
    let mut at_payload = 0usize;
    let failed_cell = Cell::new(None);
    let failed = &failed_cell;
    let cut = |region: &'a [u8], at: &mut usize, len: usize, f: Field| -> &'a [u8] {
        let start = *at;
        *at = start.wrapping_add(len);
        region.get(start..*at).unwrap_or_else(|| {
            first_failure(failed, f);
            &[]
        })
    };
    let text = |bytes: &'a [u8]| -> &'a str {
        debug_assert!(bytes.is_ascii());
        // SAFETY: `fill_ascii` only runs when `Parts::ascii` holds, i.e.
        // `parse` found every byte of `Parts::strings` ASCII; `bytes` is a
        // piece of it (or empty), and ASCII bytes are valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    };
    out.reserve(p.n);
    out.extend(rows(p).map(
        move |(seq, witnessed_at, indexed_at, k, cl, dl, kl, vl, pl)| {
            let collection = text(cut(strings, &mut at_coll, cl, Field::Collection));
            let did = text(cut(strings, &mut at_did, dl, Field::Did));
            let rkey = text(cut(strings, &mut at_rkey, kl, Field::Rkey));
            let rev = text(cut(strings, &mut at_rev, vl, Field::Rev));
            let payload = cut(payloads, &mut at_payload, pl, Field::Payload);
            EventRef {
                seq,
                witnessed_at,
                indexed_at,
                kind: KINDS[(k & 7) as usize],
                collection,
                did,
                rkey,
                rev,
                payload,
            }
        },
    ));
    failed_cell.get()
}

/// Appends the events of a body with non-ASCII strings (rare: DIDs, NSIDs,
/// record keys and TIDs are ASCII by syntax): each split of a checked `str`
/// section also checks the character boundary. Same contract as
/// [`fill_ascii`].
fn fill_utf8<'a>(p: &Parts<'a>, out: &mut Vec<EventRef<'a>>) -> Option<Field> {
    let (mut colls, mut dids, mut rkeys, mut revs) = (p.colls, p.dids, p.rkeys, p.revs);
    let mut payloads = p.payloads;
    let mut failed: Option<Field> = None;
    let mut fail = |f: Field| {
        failed.get_or_insert(f);
    };
    out.reserve(p.n);
    out.extend(
        rows(p).map(|(seq, witnessed_at, indexed_at, k, cl, dl, kl, vl, pl)| {
            let mut split = |section: &mut &'a str, len: usize, f: Field| -> &'a str {
                match section.split_at_checked(len) {
                    Some((head, tail)) => {
                        *section = tail;
                        head
                    }
                    None => {
                        fail(f);
                        ""
                    }
                }
            };
            let collection = split(&mut colls, cl, Field::Collection);
            let did = split(&mut dids, dl, Field::Did);
            let rkey = split(&mut rkeys, kl, Field::Rkey);
            let rev = split(&mut revs, vl, Field::Rev);
            let payload = match payloads.split_at_checked(pl) {
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
                seq,
                witnessed_at,
                indexed_at,
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
