//! Tests of the columnar body (a child module of `columns`).

use super::*;
use proptest::prelude::*;

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

fn arb_event() -> impl Strategy<Value = crate::event::Event> {
    (
        any::<u64>(),
        any::<i64>(),
        any::<i64>(),
        1u8..=7,
        "[a-z:.é]{0,40}",
        "[a-z.]{0,60}",
        "[a-z0-9]{0,20}",
        "[a-z0-9]{0,20}",
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(
            |(seq, w, i, k, did, collection, rkey, rev, payload)| crate::event::Event {
                seq,
                witnessed_at: w,
                indexed_at: i,
                kind: Kind::from_u8(k).unwrap(),
                did,
                collection,
                rkey,
                rev,
                payload,
            },
        )
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
    fn bulk_decoder_agrees_with_the_per_row_reference(
        events in proptest::collection::vec(arb_event(), 0..12),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3),
    ) {
        let refs: Vec<EventRef<'_>> = events.iter().map(|e| e.as_ref()).collect();
        let mut body = Vec::new();
        encode_events(&refs, &mut body).unwrap();
        for (at, x) in flips {
            let i = at % body.len();
            body[i] ^= x;
        }
        let ours = decode(&body).map_err(|e| format!("{e:?}"));
        let reference = decode_reference(&body).map_err(|e| format!("{e:?}"));
        prop_assert_eq!(ours, reference);
    }

    // All-ASCII strings take `fill_ascii` (one offset per field into the
    // contiguous string region); flipped length bytes must still give the
    // reference's result, and a decoded body must really be ASCII-split.
    #[test]
    fn ascii_fast_path_agrees_with_the_per_row_reference(
        events in proptest::collection::vec(arb_event(), 0..16),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3),
    ) {
        let events: Vec<crate::event::Event> = events
            .into_iter()
            .map(|mut e| {
                e.did = e.did.replace('é', "e");
                e
            })
            .collect();
        let refs: Vec<EventRef<'_>> = events.iter().map(|e| e.as_ref()).collect();
        let mut body = Vec::new();
        encode_events(&refs, &mut body).unwrap();
        prop_assert!(parse(&body).unwrap().ascii);
        prop_assert_eq!(decode(&body).unwrap(), refs);
        for (at, x) in flips {
            let i = at % body.len();
            body[i] ^= x;
        }
        let ours = decode(&body).map_err(|e| format!("{e:?}"));
        let reference = decode_reference(&body).map_err(|e| format!("{e:?}"));
        if let Ok(evs) = &ours {
            prop_assert!(evs.iter().all(|e| (e.did.to_owned() + e.collection + e.rkey + e.rev).is_ascii()));
        }
        prop_assert_eq!(ours, reference);
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

/// The per-row decoder the bulk one replaced, kept as the oracle of the tests.
fn decode_reference<'a>(body: &'a [u8]) -> Result<Vec<EventRef<'a>>> {
    let p = parse(body)?;
    let (n, seq, witnessed, indexed) = (
        p.n,
        p.seq.as_flattened(),
        p.witnessed.as_flattened(),
        p.indexed.as_flattened(),
    );
    let (did_len, payload_len) = (p.did_len.as_flattened(), p.payload_len.as_flattened());
    let (mut co, mut d, mut rk, mut rv, mut pp) = (0usize, 0usize, 0usize, 0usize, 0usize);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (cl, dl, kl, vl) = (
            p.coll_len[i] as usize,
            u16_at(did_len, i) as usize,
            p.rkey_len[i] as usize,
            p.rev_len[i] as usize,
        );
        let pl = u32_at(payload_len, i) as usize;
        out.push(EventRef {
            seq: u64_at(seq, i),
            witnessed_at: u64_at(witnessed, i) as i64,
            indexed_at: u64_at(indexed, i) as i64,
            kind: Kind::from_u8(p.kinds[i])?,
            collection: p
                .colls
                .get(co..co + cl)
                .ok_or_else(|| Error::InvalidUtf8("collection"))?,
            did: p
                .dids
                .get(d..d + dl)
                .ok_or_else(|| Error::InvalidUtf8("did"))?,
            rkey: p
                .rkeys
                .get(rk..rk + kl)
                .ok_or_else(|| Error::InvalidUtf8("rkey"))?,
            rev: p
                .revs
                .get(rv..rv + vl)
                .ok_or_else(|| Error::InvalidUtf8("rev"))?,
            payload: p
                .payloads
                .get(pp..pp + pl)
                .ok_or_else(|| Error::Body("payload out of range"))?,
        });
        co += cl;
        d += dl;
        rk += kl;
        rv += vl;
        pp += pl;
    }
    Ok(out)
}
