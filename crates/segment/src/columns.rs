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

fn u64_at(col: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&col[i * 8..i * 8 + 8]);
    u64::from_le_bytes(b)
}

fn u32_at(col: &[u8], i: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&col[i * 4..i * 4 + 4]);
    u32::from_le_bytes(b)
}

fn u16_at(col: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([col[i * 2], col[i * 2 + 1]])
}

fn sum_u8(col: &[u8]) -> usize {
    col.iter().map(|&b| b as usize).sum()
}

fn str_of<'a>(bytes: &'a [u8], field: &'static str) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|_| Error::InvalidUtf8(field))
}

/// Decodes a block body into events borrowing `body`, appended to `out`
/// (cleared first). Validates the event count, column sizes, kinds, length
/// sums, UTF-8 of the strings and the absence of trailing bytes.
pub fn decode_into<'a>(body: &'a [u8], out: &mut Vec<EventRef<'a>>) -> Result<()> {
    out.clear();
    let mut rest = body;
    let head = take(&mut rest, 4).map_err(|_| Error::Body("shorter than its event count"))?;
    let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if n > MAX_BLOCK_EVENTS {
        return Err(Error::Body("more than 262,144 events"));
    }
    if rest.len() / FIXED_BYTES_PER_EVENT < n {
        return Err(Error::Body("fewer than 34 bytes per event"));
    }
    let seq = take(&mut rest, n * 8)?;
    let witnessed = take(&mut rest, n * 8)?;
    let indexed = take(&mut rest, n * 8)?;
    let kinds = take(&mut rest, n)?;
    let coll_len = take(&mut rest, n)?;
    let did_len = take(&mut rest, n * 2)?;
    let rkey_len = take(&mut rest, n)?;
    let rev_len = take(&mut rest, n)?;
    let payload_len = take(&mut rest, n * 4)?;
    // Sums of at most 2^18 lengths of u8/u16: no overflow in usize; the
    // u32 payload lengths are summed checked.
    let coll_total = sum_u8(coll_len);
    let did_total: usize = (0..n).map(|i| u16_at(did_len, i) as usize).sum();
    let rkey_total = sum_u8(rkey_len);
    let rev_total = sum_u8(rev_len);
    let mut payload_total = 0usize;
    for i in 0..n {
        payload_total = payload_total
            .checked_add(u32_at(payload_len, i) as usize)
            .ok_or_else(|| Error::Body("payload lengths overflow"))?;
    }
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
    // Each string section is validated as UTF-8 once; slicing the checked
    // `str` then rejects any piece that would split a character.
    let colls = str_of(take(&mut rest, coll_total)?, "collection")?;
    let dids = str_of(take(&mut rest, did_total)?, "did")?;
    let rkeys = str_of(take(&mut rest, rkey_total)?, "rkey")?;
    let revs = str_of(take(&mut rest, rev_total)?, "rev")?;
    let payloads = rest;
    let (mut co, mut d, mut rk, mut rv, mut p) = (0usize, 0usize, 0usize, 0usize, 0usize);
    out.reserve(n);
    for i in 0..n {
        let kind = Kind::from_u8(kinds[i])?;
        let (cl, dl, kl, vl) = (
            coll_len[i] as usize,
            u16_at(did_len, i) as usize,
            rkey_len[i] as usize,
            rev_len[i] as usize,
        );
        let pl = u32_at(payload_len, i) as usize;
        // The sums above equal the section lengths, so these slices are in
        // range; `get` still guards them (and the char boundaries).
        let event = EventRef {
            seq: u64_at(seq, i),
            witnessed_at: u64_at(witnessed, i) as i64,
            indexed_at: u64_at(indexed, i) as i64,
            kind,
            collection: colls
                .get(co..co + cl)
                .ok_or_else(|| Error::InvalidUtf8("collection"))?,
            did: dids
                .get(d..d + dl)
                .ok_or_else(|| Error::InvalidUtf8("did"))?,
            rkey: rkeys
                .get(rk..rk + kl)
                .ok_or_else(|| Error::InvalidUtf8("rkey"))?,
            rev: revs
                .get(rv..rv + vl)
                .ok_or_else(|| Error::InvalidUtf8("rev"))?,
            payload: payloads
                .get(p..p + pl)
                .ok_or_else(|| Error::Body("payload out of range"))?,
        };
        out.push(event);
        co += cl;
        d += dl;
        rk += kl;
        rv += vl;
        p += pl;
    }
    Ok(())
}

/// Decodes a block body into a new vector of borrowed events.
pub fn decode(body: &[u8]) -> Result<Vec<EventRef<'_>>> {
    let mut out = Vec::new();
    decode_into(body, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_event() -> impl Strategy<Value = crate::event::Event> {
        (
            any::<u64>(),
            any::<i64>(),
            any::<i64>(),
            1u8..=7,
            "[a-z:.]{0,40}",
            "[a-z.]{0,60}",
            "[a-z0-9]{0,20}",
            "[a-z0-9]{0,20}",
            proptest::collection::vec(any::<u8>(), 0..300),
        )
            .prop_map(|(seq, w, i, k, did, collection, rkey, rev, payload)| {
                crate::event::Event {
                    seq,
                    witnessed_at: w,
                    indexed_at: i,
                    kind: Kind::from_u8(k).unwrap(),
                    did,
                    collection,
                    rkey,
                    rev,
                    payload,
                }
            })
    }

    proptest! {
        #[test]
        fn round_trip_both_encoders(events in proptest::collection::vec(arb_event(), 0..40)) {
            let refs: Vec<EventRef<'_>> = events.iter().map(|e| e.as_ref()).collect();
            let mut a = Vec::new();
            encode_events(&refs, &mut a).unwrap();
            let mut cols = Columns::with_capacity(4);
            for r in &refs {
                cols.push(r).unwrap();
            }
            let mut b = vec![1, 2, 3];
            cols.encode_into(&mut b);
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(a.len(), cols.encoded_len());
            let back = decode(&a).unwrap();
            prop_assert_eq!(back, refs);
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn truncations_and_flips_never_panic(events in proptest::collection::vec(arb_event(), 1..10), at in any::<usize>(), bit in 0u8..8) {
            let refs: Vec<EventRef<'_>> = events.iter().map(|e| e.as_ref()).collect();
            let mut body = Vec::new();
            encode_events(&refs, &mut body).unwrap();
            let cut = at % body.len();
            prop_assert!(decode(&body[..cut]).is_err());
            body[cut] ^= 1 << bit;
            let _ = decode(&body);
        }
    }

    #[test]
    fn a_split_inside_a_character_is_rejected() {
        let a = EventRef {
            seq: 1,
            witnessed_at: 1,
            indexed_at: 0,
            kind: Kind::Create,
            did: "did:é",
            collection: "",
            rkey: "",
            rev: "",
            payload: &[],
        };
        let b = EventRef {
            seq: 2,
            did: "x",
            ..a
        };
        let mut body = Vec::new();
        encode_events(&[a, b], &mut body).unwrap();
        assert!(decode(&body).is_ok());
        // did_len of event 0 is at 4 + 2*25 + 2*2 (seq, witnessed, indexed,
        // kind, collection_len columns before it): shorten it by one byte and
        // lengthen event 1's, so the section stays valid but splits "é".
        let at = 4 + 24 * 2 + 2 * 2;
        assert_eq!(u16::from_le_bytes([body[at], body[at + 1]]), 6);
        body[at] = 5;
        body[at + 2] = 2;
        assert!(matches!(decode(&body), Err(Error::InvalidUtf8("did"))));
    }

    #[test]
    fn limits() {
        let mut body = (MAX_BLOCK_EVENTS as u32 + 1).to_le_bytes().to_vec();
        assert!(matches!(decode(&body), Err(Error::Body(_))));
        body = 0u32.to_le_bytes().to_vec();
        assert!(decode(&body).unwrap().is_empty());
        body.push(0);
        assert!(matches!(decode(&body), Err(Error::Body("trailing bytes"))));
        assert!(decode(&[1, 0]).is_err());
    }
}
