//! The canonical DAG-CBOR encoder.
//!
//! [`Encoder`] writes single items (minimal heads) into a `Vec<u8>`; typed
//! encoders elsewhere in the crate (MST nodes, commits, frames) use it
//! directly, without building a value tree. [`encode`] writes a whole
//! [`Value`]/[`ValueRef`]; maps are already canonical so nothing is sorted.

use super::value::{Kind, Node, Value, ValueRef};
use crate::cid::Cid;

/// Appends canonical DAG-CBOR items to a buffer.
#[derive(Debug)]
pub struct Encoder<'o> {
    out: &'o mut Vec<u8>,
}

impl<'o> Encoder<'o> {
    /// An encoder appending to `out`.
    #[inline]
    pub fn new(out: &'o mut Vec<u8>) -> Self {
        Encoder { out }
    }

    /// A head with the shortest argument form.
    #[inline]
    pub fn head(&mut self, major: u8, arg: u64) {
        let m = major << 5;
        if arg < 24 {
            self.out.push(m | arg as u8);
        } else if arg < 0x100 {
            self.out.extend_from_slice(&[m | 24, arg as u8]);
        } else if arg < 0x1_0000 {
            self.out.push(m | 25);
            self.out.extend_from_slice(&(arg as u16).to_be_bytes());
        } else if arg < 0x1_0000_0000 {
            self.out.push(m | 26);
            self.out.extend_from_slice(&(arg as u32).to_be_bytes());
        } else {
            self.out.push(m | 27);
            self.out.extend_from_slice(&arg.to_be_bytes());
        }
    }

    /// An integer.
    #[inline]
    pub fn int(&mut self, v: i64) {
        if v >= 0 {
            self.head(0, v as u64);
        } else {
            self.head(1, (-1 - v) as u64);
        }
    }

    /// A text string.
    #[inline]
    pub fn text(&mut self, s: &str) {
        self.head(3, s.len() as u64);
        self.out.extend_from_slice(s.as_bytes());
    }

    /// A byte string.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.head(2, b.len() as u64);
        self.out.extend_from_slice(b);
    }

    /// A tag-42 link.
    #[inline]
    pub fn link(&mut self, cid: &Cid) {
        // tag 42, bytes(37), 0x00 prefix
        self.out.extend_from_slice(&[0xd8, 0x2a, 0x58, 0x25, 0x00]);
        self.out.extend_from_slice(&cid.to_bytes());
    }

    /// A link or null.
    #[inline]
    pub fn link_or_null(&mut self, cid: Option<&Cid>) {
        match cid {
            Some(c) => self.link(c),
            None => self.null(),
        }
    }

    /// `null`.
    #[inline]
    pub fn null(&mut self) {
        self.out.push(0xf6);
    }

    /// A boolean.
    #[inline]
    pub fn bool(&mut self, b: bool) {
        self.out.push(if b { 0xf5 } else { 0xf4 });
    }

    /// A list head of `n` items.
    #[inline]
    pub fn list(&mut self, n: usize) {
        self.head(4, n as u64);
    }

    /// A map head of `n` entries; the caller writes keys in canonical order.
    #[inline]
    pub fn map(&mut self, n: usize) {
        self.head(5, n as u64);
    }

    /// Raw, already-encoded bytes.
    #[inline]
    pub fn raw(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    pub(crate) fn node<N: Node>(&mut self, v: &N) {
        match v.kind() {
            Kind::Null => self.null(),
            Kind::Bool(b) => self.bool(b),
            Kind::Int(i) => self.int(i),
            Kind::Text(s) => self.text(s),
            Kind::Bytes(b) => self.bytes(b),
            Kind::List(items) => {
                self.list(items.len());
                for item in items {
                    self.node(item);
                }
            }
            Kind::Map(entries) => {
                self.map(entries.len());
                for (k, v) in entries {
                    self.text(k.as_ref());
                    self.node(v);
                }
            }
            Kind::Link(c) => self.link(&c),
        }
    }
}

/// Appends the canonical encoding of `v` to `out`.
pub fn encode(v: &Value, out: &mut Vec<u8>) {
    Encoder::new(out).node(v);
}

/// Appends the canonical encoding of `v` to `out`.
pub fn encode_ref(v: &ValueRef<'_>, out: &mut Vec<u8>) {
    Encoder::new(out).node(v);
}

/// The canonical encoding of `v`.
pub fn to_vec(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode(v, &mut out);
    out
}

/// The canonical encoding of `v`.
pub fn to_vec_ref(v: &ValueRef<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode_ref(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbor::{Map, decode};

    #[test]
    fn minimal_heads() {
        let cases: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (23, &[0x17]),
            (24, &[0x18, 24]),
            (255, &[0x18, 0xff]),
            (256, &[0x19, 0x01, 0x00]),
            (65536, &[0x1a, 0, 1, 0, 0]),
            (-1, &[0x20]),
            (-25, &[0x38, 24]),
            (
                i64::MIN,
                &[0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
        ];
        for (v, want) in cases {
            let mut out = Vec::new();
            Encoder::new(&mut out).int(*v);
            assert_eq!(&out, want, "{v}");
        }
    }

    #[test]
    fn map_order() {
        let m: Map = [("bb", 1), ("a", 2), ("c", 3), ("aaa", 4)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::Int(v)))
            .collect();
        let bytes = to_vec(&Value::Map(m));
        let back = decode(&bytes).unwrap();
        let keys: Vec<&str> = back
            .as_map()
            .unwrap()
            .entries()
            .iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(keys, ["a", "c", "bb", "aaa"]);
    }
}
