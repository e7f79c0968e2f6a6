//! The MST node block: `{"e": [{"k": bytes, "p": int, "t": link|null,
//! "v": link}], "l": link|null}`, keys prefix-compressed against the
//! previous key of the same node.

pub(crate) use super::key::Key;
use super::{MstError, common_prefix_len, key_rule};
use crate::cbor::{Encoder, Reader};
use crate::cid::{Cid, Codec};

/// One entry of a decoded node: a key, its record CID, and the subtree to
/// its right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub(crate) key: Key,
    /// The record CID.
    pub value: Cid,
    /// The subtree between this key and the next (`t`).
    pub right: Option<Cid>,
}

impl Entry {
    /// The full key (validated ASCII on decode).
    pub fn key(&self) -> &str {
        std::str::from_utf8(&self.key).unwrap_or_default()
    }

    /// The full key as bytes.
    pub fn key_bytes(&self) -> &[u8] {
        &self.key
    }
}

/// A decoded node block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Node {
    /// The leftmost subtree (`l`).
    pub left: Option<Cid>,
    /// The entries in key order (`e`).
    pub entries: Vec<Entry>,
}

fn rule(reason: &'static str) -> MstError {
    MstError::malformed(reason)
}

impl Node {
    /// Decodes and checks a node block (canonical CBOR, exact field set,
    /// strictly increasing valid keys, maximal prefix compression).
    pub fn decode(bytes: &[u8]) -> Result<Node, MstError> {
        let (left, entries) = decode_with(bytes, |key, value, right| Entry { key, value, right })?;
        Ok(Node { left, entries })
    }

    /// The subtree in gap `i` (0 = `l`, i = right of entry i-1).
    #[inline]
    pub fn gap(&self, i: usize) -> Option<Cid> {
        if i == 0 {
            self.left
        } else {
            self.entries.get(i - 1).and_then(|e| e.right)
        }
    }

    /// Binary search for `key`: `Ok(index)` when present, else the gap.
    #[inline]
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        self.entries.binary_search_by(|e| (*e.key).cmp(key))
    }

    /// Appends the canonical block bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode_node(
            out,
            self.left.as_ref(),
            self.entries.len(),
            self.entries
                .iter()
                .map(|e| (&*e.key, &e.value, e.right.as_ref())),
        );
    }

    /// The canonical block bytes and CID.
    pub fn to_block(&self) -> (Cid, Vec<u8>) {
        // An entry with both links is ~95 bytes plus its key suffix: 128
        // per entry covers that and a ~30-byte suffix, so encoding (which
        // reserves 100 per entry) does not regrow the buffer.
        let mut out = Vec::with_capacity(16 + 128 * self.entries.len());
        self.encode(&mut out);
        (Cid::for_dag_cbor(&out), out)
    }
}

/// [`Node::decode`] building each entry with `mk(key, value, right)` (so
/// an editable node is decoded straight into its own entry type): the same
/// checks and errors.
#[inline]
pub(crate) fn decode_with<E>(
    bytes: &[u8],
    mk: impl FnMut(Key, Cid, Option<Cid>) -> E,
) -> Result<(Option<Cid>, Vec<E>), MstError> {
    let mut entries = Vec::new();
    let left = decode_into(bytes, &mut entries, mk)?;
    Ok((left, entries))
}

/// [`decode_with`] into a caller's entry list (cleared first; its
/// allocation is reused). Returns `l`.
#[inline]
pub(crate) fn decode_into<E>(
    bytes: &[u8],
    entries: &mut Vec<E>,
    mk: impl FnMut(Key, Cid, Option<Cid>) -> E,
) -> Result<Option<Cid>, MstError> {
    decode_parts(bytes, true, entries, mk).map_err(|e| match e {
        MstError::Malformed { cid: None, reason } => MstError::Malformed {
            cid: Some(Cid::for_dag_cbor(bytes)),
            reason,
        },
        other => other,
    })
}

#[cfg(test)]
fn decode_inner(bytes: &[u8], fast: bool) -> Result<Node, MstError> {
    let mut entries = Vec::new();
    let left = decode_parts(bytes, fast, &mut entries, |key, value, right| Entry {
        key,
        value,
        right,
    })?;
    Ok(Node { left, entries })
}

/// `fast`: use the direct entry parser and the suffix-only key check (off
/// only in tests, which hold the two paths to identical answers).
#[inline]
fn decode_parts<E>(
    bytes: &[u8],
    fast: bool,
    entries: &mut Vec<E>,
    mut mk: impl FnMut(Key, Cid, Option<Cid>) -> E,
) -> Result<Option<Cid>, MstError> {
    entries.clear();
    let cbor = |err| MstError::Decode {
        cid: Cid::for_dag_cbor(bytes),
        err,
    };
    let mut r = Reader::new(bytes);
    // {"e": [...], "l": ...}: map(2), text "e".
    if !r.eat(&[0xa2, 0x61, b'e']) {
        return Err(shape(&mut r, cbor));
    }
    let n = r.read_list_len().map_err(cbor)?;
    entries.reserve(n);
    // The previous full key, on the stack: keys are at most 1024 bytes.
    let mut prev_buf = [0u8; 1024];
    let mut prev_len = 0usize;
    // Where the previous key's '/' is (it passed the key rules).
    let mut prev_slash = 0usize;
    for _ in 0..n {
        let prev = &prev_buf[..prev_len];
        // {"k": bytes, "p": int, "t": link|null, "v": link}
        let parsed = if fast { fast_entry(r.rest()) } else { None };
        let (suffix, p, right, value) = match parsed {
            Some((suffix, p, right, value, used)) => {
                r.advance(used);
                (suffix, p as i64, right, value)
            }
            None => {
                if !r.eat(&[0xa4, 0x61, b'k']) {
                    return Err(shape(&mut r, cbor));
                }
                let suffix = r.read_bytes().map_err(cbor)?;
                if !r.eat(&[0x61, b'p']) {
                    return Err(shape(&mut r, cbor));
                }
                let p = r.read_int().map_err(cbor)?;
                if !r.eat(&[0x61, b't']) {
                    return Err(shape(&mut r, cbor));
                }
                let right = r.read_link_or_null().map_err(cbor)?;
                if !r.eat(&[0x61, b'v']) {
                    return Err(shape(&mut r, cbor));
                }
                let value = r.read_link().map_err(cbor)?;
                (suffix, p, right, value)
            }
        };
        if p < 0 || p as usize > prev.len() {
            return Err(rule("prefix length past the previous key"));
        }
        let p = p as usize;
        if p < prev.len() && suffix.first() == Some(&prev[p]) {
            return Err(rule("prefix length not maximal"));
        }
        let increasing = match (prev.get(p), suffix.first()) {
            // Shares exactly p bytes: the first differing byte decides.
            (Some(a), Some(b)) => b > a,
            // The previous key is a prefix: longer is greater.
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if !increasing && !entries.is_empty() {
            return Err(rule("keys not strictly increasing"));
        }
        let len = p + suffix.len();
        if len > prev_buf.len() {
            return Err(rule("longer than 1024 bytes"));
        }
        prev_buf[p..len].copy_from_slice(suffix);
        prev_len = len;
        let key = &prev_buf[..len];
        let quick = if fast && !entries.is_empty() {
            suffix_key_rule(key, p, prev_slash)
        } else {
            None
        };
        prev_slash = match quick {
            Some(slash) => slash,
            // The first key, or a rule broken: the full check (and its
            // exact reason).
            _ => {
                key_rule(key).map_err(rule)?;
                key.iter().position(|&c| c == b'/').unwrap_or(0)
            }
        };
        entries.push(mk(Key::from_padded(&prev_buf, len), value, right));
    }
    if !r.eat(&[0x61, b'l']) {
        return Err(shape(&mut r, cbor));
    }
    let left = r.read_link_or_null().map_err(cbor)?;
    r.finish().map_err(cbor)?;
    Ok(left)
}

/// The key rules for `key` whose first `p` bytes are a prefix of a key
/// that passed them with its '/' at `prev_slash`: only the suffix is
/// scanned. Returns the new '/' position, or None when a rule fails (the
/// caller then runs the full [`key_rule`] for the reason).
#[inline]
fn suffix_key_rule(key: &[u8], p: usize, prev_slash: usize) -> Option<usize> {
    if key.len() > 1024 {
        return None;
    }
    let mut slash = (prev_slash < p).then_some(prev_slash);
    for (i, &c) in key.iter().enumerate().skip(p) {
        if !super::KEY_CHARS[c as usize] {
            if c != b'/' || slash.is_some() {
                return None;
            }
            slash = Some(i);
        }
    }
    match slash {
        Some(s) if s > 0 && s + 1 < key.len() => Some(s),
        _ => None,
    }
}

/// What [`fast_entry`] parsed: suffix, `p`, `t`, `v`, bytes used.
type FastEntry<'a> = (&'a [u8], usize, Option<Cid>, Cid, usize);

/// One entry in its usual canonical form, parsed straight from the bytes:
/// `a4 61 6b` bytes(suffix) `61 70` uint(p) `61 74` (null | link) `61 76`
/// link, with one- or two-byte minimal heads. Returns the suffix, `p`, `t`,
/// `v` and the bytes used; None for any other form (the general reader
/// then decides, so errors and their positions stay exact).
#[inline]
fn fast_entry(b: &[u8]) -> Option<FastEntry<'_>> {
    if b.get(..3)? != [0xa4, 0x61, b'k'] {
        return None;
    }
    let mut i = 3;
    let h = *b.get(i)?;
    let len = match h {
        0x40..=0x57 => {
            i += 1;
            usize::from(h - 0x40)
        }
        0x58 => {
            let l = *b.get(i + 1)?;
            if l < 24 {
                return None;
            }
            i += 2;
            usize::from(l)
        }
        _ => return None,
    };
    let suffix = b.get(i..i + len)?;
    i += len;
    if b.get(i..i + 2)? != [0x61, b'p'] {
        return None;
    }
    i += 2;
    let h = *b.get(i)?;
    let p = match h {
        0x00..=0x17 => {
            i += 1;
            usize::from(h)
        }
        0x18 => {
            let v = *b.get(i + 1)?;
            if v < 24 {
                return None;
            }
            i += 2;
            usize::from(v)
        }
        _ => return None,
    };
    if b.get(i..i + 2)? != [0x61, b't'] {
        return None;
    }
    i += 2;
    let right = if *b.get(i)? == 0xf6 {
        i += 1;
        None
    } else {
        let c = fast_link(b.get(i..)?)?;
        i += 41;
        Some(c)
    };
    if b.get(i..i + 2)? != [0x61, b'v'] {
        return None;
    }
    i += 2;
    let value = fast_link(b.get(i..)?)?;
    Some((suffix, p, right, value, i + 41))
}

/// A canonical tag-42 link: `d8 2a 58 25 00 01 codec 12 20 digest`.
#[inline]
fn fast_link(b: &[u8]) -> Option<Cid> {
    let b = b.get(..41)?;
    if b[..6] != [0xd8, 0x2a, 0x58, 0x25, 0x00, 0x01] || b[7..9] != [0x12, 0x20] {
        return None;
    }
    let codec = match b[6] {
        0x71 => Codec::DagCbor,
        0x55 => Codec::Raw,
        _ => return None,
    };
    let mut digest = [0u8; 32];
    digest.copy_from_slice(&b[9..41]);
    Some(Cid::new(codec, digest))
}

/// The error for bytes that are not the node shape: a CBOR error if they
/// are not strict DAG-CBOR at this point, else a shape error.
#[cold]
fn shape(r: &mut Reader<'_>, cbor: impl Fn(crate::cbor::DecodeError) -> MstError) -> MstError {
    match r.skip() {
        Err(e) => cbor(e),
        Ok(()) => rule("node must be {e: [{k, p, t, v}], l} exactly"),
    }
}

/// Writes a node from its parts (shared by [`Node`] and edited nodes).
/// Written byte by byte from the fixed shape: every map key is one of
/// `e`, `l`, `k`, `p`, `t`, `v`, already in canonical order.
pub(crate) fn encode_node<'k>(
    out: &mut Vec<u8>,
    left: Option<&Cid>,
    count: usize,
    entries: impl Iterator<Item = (&'k [u8], &'k Cid, Option<&'k Cid>)>,
) {
    out.reserve(8 + count * 100);
    out.extend_from_slice(&[0xa2, 0x61, b'e']);
    Encoder::new(out).list(count);
    let mut prev: &[u8] = &[];
    for (key, value, right) in entries {
        let p = common_prefix_len(prev, key);
        let suffix = &key[p..];
        // Short suffix and prefix (nearly every entry): the whole entry
        // is built on the stack and appended with one copy.
        if suffix.len() <= SHORT_SUFFIX && p < 256 {
            let mut b = [0u8; SHORT_ENTRY];
            b[..3].copy_from_slice(&[0xa4, 0x61, b'k']);
            let mut n = 3 + small_head(&mut b[3..], 0x40, suffix.len());
            b[n..n + suffix.len()].copy_from_slice(suffix);
            n += suffix.len();
            b[n..n + 2].copy_from_slice(&[0x61, b'p']);
            n += 2;
            n += small_head(&mut b[n..], 0x00, p);
            b[n..n + 2].copy_from_slice(&[0x61, b't']);
            n += 2;
            match right {
                Some(c) => {
                    write_link(&mut b[n..n + 41], c);
                    n += 41;
                }
                None => {
                    b[n] = 0xf6;
                    n += 1;
                }
            }
            b[n..n + 2].copy_from_slice(&[0x61, b'v']);
            n += 2;
            write_link(&mut b[n..n + 41], value);
            n += 41;
            out.extend_from_slice(&b[..n]);
            prev = key;
            continue;
        }
        if suffix.len() < 256 && p < 256 {
            let mut head = [0u8; 6];
            head[..3].copy_from_slice(&[0xa4, 0x61, b'k']);
            let n = small_head(&mut head[3..], 0x40, suffix.len());
            out.extend_from_slice(&head[..3 + n]);
            out.extend_from_slice(suffix);
            let mut mid = [0u8; 6];
            mid[..2].copy_from_slice(&[0x61, b'p']);
            let n = small_head(&mut mid[2..], 0x00, p);
            mid[2 + n..4 + n].copy_from_slice(&[0x61, b't']);
            out.extend_from_slice(&mid[..4 + n]);
        } else {
            out.extend_from_slice(&[0xa4, 0x61, b'k']);
            Encoder::new(out).bytes(suffix);
            out.extend_from_slice(&[0x61, b'p']);
            Encoder::new(out).int(p as i64);
            out.extend_from_slice(&[0x61, b't']);
        }
        match right {
            Some(c) => push_link(out, c),
            None => out.push(0xf6),
        }
        out.extend_from_slice(&[0x61, b'v']);
        push_link(out, value);
        prev = key;
    }
    out.extend_from_slice(&[0x61, b'l']);
    match left {
        Some(c) => push_link(out, c),
        None => out.push(0xf6),
    }
}

/// A minimal head for `arg < 256` of major type `m` (0x00 or 0x40) into
/// `out`; returns its length.
#[inline]
fn small_head(out: &mut [u8], m: u8, arg: usize) -> usize {
    if arg < 24 {
        out[0] = m | arg as u8;
        1
    } else {
        out[0] = m | 24;
        out[1] = arg as u8;
        2
    }
}

#[inline]
fn push_link(out: &mut Vec<u8>, cid: &Cid) {
    // tag 42, bytes(37), 0x00, CIDv1, codec, sha2-256, 32: one copy.
    let mut b = [0u8; 41];
    write_link(&mut b, cid);
    out.extend_from_slice(&b);
}

/// The 41 bytes of a canonical link into `b` (exactly 41 long).
#[inline]
fn write_link(b: &mut [u8], cid: &Cid) {
    b[..6].copy_from_slice(&[0xd8, 0x2a, 0x58, 0x25, 0x00, 0x01]);
    b[6] = cid.codec() as u8;
    b[7..9].copy_from_slice(&[0x12, 0x20]);
    b[9..41].copy_from_slice(cid.digest());
}

/// Suffixes up to this long take the one-copy entry path of
/// [`encode_node`].
const SHORT_SUFFIX: usize = 64;
/// The largest such entry: `a4 61 6b`, a two-byte head, the suffix, `61
/// 70`, a two-byte `p`, `61 74`, a link, `61 76`, a link.
const SHORT_ENTRY: usize = 3 + 2 + SHORT_SUFFIX + 2 + 2 + 2 + 41 + 2 + 41;

#[cfg(test)]
mod tests {
    use super::*;

    fn node(keys: &[&str], with_links: bool) -> Vec<u8> {
        let mut keys: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        keys.sort();
        let cids: Vec<Cid> = (0..=keys.len() as u8)
            .map(|i| Cid::for_dag_cbor(&[i]))
            .collect();
        let mut out = Vec::new();
        encode_node(
            &mut out,
            with_links.then_some(&cids[0]),
            keys.len(),
            keys.iter()
                .zip(&cids)
                .enumerate()
                .map(|(i, (k, c))| (&k[..], c, (with_links && i % 2 == 1).then_some(c))),
        );
        out
    }

    /// The one-copy entry path and the general one (suffixes past
    /// [`SHORT_SUFFIX`], prefixes past 23 and 255) write bytes the strict
    /// decoder takes back unchanged, on both sides of every head size.
    #[test]
    fn encode_round_trips_across_entry_paths() {
        let lens = (1..=70).chain([100, 254, 255, 256, 300, 900]);
        for len in lens {
            let stem = format!("c/{}", "k".repeat(len));
            let keys = [
                stem.clone(),
                format!("{stem}a"),
                format!("{stem}b{}", "z".repeat(len.min(100))),
                format!("d/{}", "q".repeat(len)),
            ];
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            for links in [false, true] {
                let bytes = node(&keys, links);
                let decoded = Node::decode(&bytes).unwrap_or_else(|e| panic!("{len}: {e}"));
                assert_eq!(decoded.entries.len(), 4);
                let (cid, again) = decoded.to_block();
                assert_eq!(again, bytes, "suffix length {len}");
                assert_eq!(cid, Cid::for_dag_cbor(&bytes));
            }
        }
    }

    /// The direct entry parser and the suffix-only key check give exactly
    /// what the general strict reader gives, on valid nodes and on every
    /// one-byte corruption and truncation of them.
    #[test]
    fn fast_and_general_decoders_agree() {
        let long = format!("app.bsky.feed.post/{}", "x".repeat(40));
        let longer = format!("app.bsky.feed.post/{}y", "x".repeat(40));
        let samples = [
            node(
                &[
                    "app.bsky.feed.like/3l2a",
                    "app.bsky.feed.like/3l2b",
                    "app.bsky.feed.post/3k",
                ],
                true,
            ),
            node(&["a/b", "a/c", "ab/c", "b/a"], false),
            node(&[&long, &longer, "com.example.thing/self"], true),
            node(&[], true),
        ];
        let show = |r: Result<Node, MstError>| format!("{r:?}");
        for bytes in &samples {
            let good = decode_inner(bytes, true);
            assert!(good.is_ok(), "{good:?}");
            assert_eq!(show(good), show(decode_inner(bytes, false)));
            for i in 0..bytes.len() {
                for flip in [0x01u8, 0x02, 0x10, 0x20, 0x40, 0x80, 0xff] {
                    let mut m = bytes.clone();
                    m[i] ^= flip;
                    assert_eq!(
                        show(decode_inner(&m, true)),
                        show(decode_inner(&m, false)),
                        "byte {i} ^ {flip:#x}"
                    );
                }
                assert_eq!(
                    show(decode_inner(&bytes[..i], true)),
                    show(decode_inner(&bytes[..i], false))
                );
            }
        }
    }
}
