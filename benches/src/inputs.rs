//! Inputs more than one bench target builds the same way.

use datagen::segment::SegEvent;
use segment::{EventRef, Kind};

/// Borrowed segment events over generated ones (`--bench segment` and
/// `--bench instructions`).
pub fn segment_refs(events: &[SegEvent]) -> Vec<EventRef<'_>> {
    events
        .iter()
        .map(|e| EventRef {
            seq: e.seq,
            witnessed_at: e.witnessed_at,
            indexed_at: e.indexed_at,
            kind: Kind::from_u8(e.kind).unwrap_or(Kind::Create),
            did: &e.did,
            collection: &e.collection,
            rkey: &e.rkey,
            rev: &e.rev,
            payload: &e.payload,
        })
        .collect()
}
