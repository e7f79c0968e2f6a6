//! Whole-value decoding into [`ValueRef`] (zero-copy) and [`Value`] (owned).

use super::reader::Reader;
use super::value::{Map, MapRef, Value, ValueRef};
use super::{DecodeError, DecodeErrorKind as K, MAX_DEPTH};

/// Decodes exactly one value occupying all of `buf`, borrowing text and
/// bytes from it.
pub fn decode(buf: &[u8]) -> Result<ValueRef<'_>, DecodeError> {
    let mut r = Reader::new(buf);
    let v = read_ref(&mut r, 0)?;
    r.finish()?;
    Ok(v)
}

/// Decodes one value at the front of `buf`; returns it and the number of
/// bytes it took (for concatenated values such as firehose frames).
pub fn decode_prefix(buf: &[u8]) -> Result<(ValueRef<'_>, usize), DecodeError> {
    let mut r = Reader::new(buf);
    let v = read_ref(&mut r, 0)?;
    Ok((v, r.position()))
}

/// Decodes exactly one value occupying all of `buf` into an owned tree.
pub fn decode_owned(buf: &[u8]) -> Result<Value, DecodeError> {
    let mut r = Reader::new(buf);
    let v = read_owned(&mut r, 0)?;
    r.finish()?;
    Ok(v)
}

impl<'a> Reader<'a> {
    /// Reads one complete value as a borrowed tree.
    pub fn read_value(&mut self) -> Result<ValueRef<'a>, DecodeError> {
        read_ref(self, 0)
    }
}

/// A list element or map value: short text (the commonest member of a
/// record) is read here, without a call into [`read_ref`].
#[inline(always)]
fn read_ref_item<'a>(r: &mut Reader<'a>, depth: usize) -> Result<ValueRef<'a>, DecodeError> {
    match r.short_text() {
        Some(text) => text.map(ValueRef::Text),
        None => read_ref(r, depth),
    }
}

fn read_ref<'a>(r: &mut Reader<'a>, depth: usize) -> Result<ValueRef<'a>, DecodeError> {
    if let Some(text) = r.short_text() {
        return text.map(ValueRef::Text);
    }
    let start = r.position();
    let (major, arg) = r.head()?;
    Ok(match major {
        0 | 1 => ValueRef::Int(r.int_from(major, arg, start)?),
        2 => ValueRef::Bytes(r.take(arg, start)?),
        3 => ValueRef::Text(r.take_str(arg, start)?),
        4 => {
            if depth >= MAX_DEPTH {
                return Err(r.err(start, K::TooDeep));
            }
            let n = r.container_len(arg, 1, start)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(read_ref_item(r, depth + 1)?);
            }
            ValueRef::List(items)
        }
        5 => {
            if depth >= MAX_DEPTH {
                return Err(r.err(start, K::TooDeep));
            }
            let n = r.container_len(arg, 2, start)?;
            let mut entries = Vec::with_capacity(n);
            let mut prev = None;
            for _ in 0..n {
                let k = r.read_key(&mut prev)?;
                entries.push((k, read_ref_item(r, depth + 1)?));
            }
            ValueRef::Map(MapRef::from_sorted(entries))
        }
        6 => {
            if arg != 42 {
                return Err(r.err(start, K::Tag(arg)));
            }
            ValueRef::Link(r.link_body(start)?)
        }
        _ => match arg {
            20 => ValueRef::Bool(false),
            21 => ValueRef::Bool(true),
            _ => ValueRef::Null,
        },
    })
}

/// As [`read_ref_item`], into an owned value.
#[inline(always)]
fn read_owned_item(r: &mut Reader<'_>, depth: usize) -> Result<Value, DecodeError> {
    match r.short_text() {
        Some(text) => text.map(|t| Value::Text(t.to_owned())),
        None => read_owned(r, depth),
    }
}

fn read_owned(r: &mut Reader<'_>, depth: usize) -> Result<Value, DecodeError> {
    if let Some(text) = r.short_text() {
        return text.map(|t| Value::Text(t.to_owned()));
    }
    let start = r.position();
    let (major, arg) = r.head()?;
    Ok(match major {
        0 | 1 => Value::Int(r.int_from(major, arg, start)?),
        2 => Value::Bytes(r.take(arg, start)?.to_vec()),
        3 => Value::Text(r.take_str(arg, start)?.to_owned()),
        4 => {
            if depth >= MAX_DEPTH {
                return Err(r.err(start, K::TooDeep));
            }
            let n = r.container_len(arg, 1, start)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(read_owned_item(r, depth + 1)?);
            }
            Value::List(items)
        }
        5 => {
            if depth >= MAX_DEPTH {
                return Err(r.err(start, K::TooDeep));
            }
            let n = r.container_len(arg, 2, start)?;
            let mut entries = Vec::with_capacity(n);
            let mut prev = None;
            for _ in 0..n {
                let k = r.read_key(&mut prev)?;
                entries.push((k.to_owned(), read_owned_item(r, depth + 1)?));
            }
            Value::Map(Map::from_sorted(entries))
        }
        6 => {
            if arg != 42 {
                return Err(r.err(start, K::Tag(arg)));
            }
            Value::Link(r.link_body(start)?)
        }
        _ => match arg {
            20 => Value::Bool(false),
            21 => Value::Bool(true),
            _ => Value::Null,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbor::DecodeErrorKind;

    fn kind(buf: &[u8]) -> DecodeErrorKind {
        decode(buf).unwrap_err().kind
    }

    #[test]
    fn strict_rejections() {
        assert_eq!(kind(&[0x18, 0x05]), DecodeErrorKind::NonMinimal);
        assert_eq!(kind(&[0x19, 0x00, 0x10]), DecodeErrorKind::NonMinimal);
        assert_eq!(
            kind(&[0xfb, 0, 0, 0, 0, 0, 0, 0, 0]),
            DecodeErrorKind::Float
        );
        assert_eq!(kind(&[0xf9, 0, 0]), DecodeErrorKind::Float);
        assert_eq!(kind(&[0x9f, 0xff]), DecodeErrorKind::Indefinite);
        assert_eq!(kind(&[0x5f, 0xff]), DecodeErrorKind::Indefinite);
        assert_eq!(kind(&[0xf7]), DecodeErrorKind::Simple(23));
        assert_eq!(kind(&[0xc1, 0x00]), DecodeErrorKind::Tag(1));
        assert_eq!(kind(&[0x01, 0x02]), DecodeErrorKind::TrailingBytes(1));
        assert_eq!(kind(&[0x62, b'a']), DecodeErrorKind::LengthPastEnd(2));
        assert_eq!(kind(&[0x61, 0xff]), DecodeErrorKind::Utf8);
        assert_eq!(kind(&[0xa1, 0x01, 0x01]), DecodeErrorKind::NonTextKey);
        assert_eq!(
            kind(&[0xa2, 0x61, b'b', 0x01, 0x61, b'a', 0x01]),
            DecodeErrorKind::UnsortedKey("a".into())
        );
        assert_eq!(
            kind(&[0xa2, 0x62, b'a', b'a', 0x01, 0x61, b'b', 0x01]),
            DecodeErrorKind::UnsortedKey("b".into())
        );
        assert_eq!(
            kind(&[0xa2, 0x61, b'a', 0x01, 0x61, b'a', 0x01]),
            DecodeErrorKind::DuplicateKey("a".into())
        );
        assert_eq!(
            kind(&[0x1b, 0x80, 0, 0, 0, 0, 0, 0, 0]),
            DecodeErrorKind::IntRange
        );
        assert_eq!(
            kind(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            DecodeErrorKind::LengthPastEnd(u64::MAX)
        );
        let deep: Vec<u8> = std::iter::repeat_n(0x81u8, MAX_DEPTH + 1)
            .chain([0x00])
            .collect();
        assert_eq!(kind(&deep), DecodeErrorKind::TooDeep);
        let ok: Vec<u8> = std::iter::repeat_n(0x81u8, MAX_DEPTH)
            .chain([0x00])
            .collect();
        assert!(decode(&ok).is_ok());
    }

    #[test]
    fn positions() {
        let e = decode(&[0x82, 0x01, 0xf9, 0, 0]).unwrap_err();
        assert_eq!(e.pos, 2);
        let e = decode(&[0x82, 0x01, 0x63, b'a', 0xc3, 0x28]).unwrap_err();
        assert_eq!((e.pos, e.kind), (4, DecodeErrorKind::Utf8));
    }

    /// The short-text fast path (`Reader::short_text`) and the general
    /// path give the same values and the same errors at the same offsets.
    #[test]
    fn short_text_fast_path() {
        assert_eq!(decode(&[0x60]).unwrap(), ValueRef::Text(""));
        assert_eq!(decode(&[0x62, 0xc3, 0xa9]).unwrap(), ValueRef::Text("é"));
        let long = [&[0x78, 24][..], &[b'x'; 24]].concat();
        assert_eq!(decode(&long).unwrap(), ValueRef::Text(&"x".repeat(24)));
        let mut nonmin = vec![0x78, 23];
        nonmin.extend_from_slice(&[b'x'; 23]);
        assert_eq!(kind(&nonmin), DecodeErrorKind::NonMinimal);
        assert_eq!(kind(&[0x78]), DecodeErrorKind::UnexpectedEof);
        assert_eq!(kind(&[0x78, 30, b'a']), DecodeErrorKind::LengthPastEnd(30));
        let e = decode(&[0x78, 24, 0xff]).unwrap_err();
        assert_eq!((e.pos, e.kind), (0, DecodeErrorKind::LengthPastEnd(24)));
        let mut bad = vec![0x78, 24];
        bad.extend_from_slice(&[b'a'; 23]);
        bad.push(0xff);
        let e = decode(&bad).unwrap_err();
        assert_eq!((e.pos, e.kind), (25, DecodeErrorKind::Utf8));
        // List items and map values take the fast path before the call
        // into the general reader: same errors, same offsets.
        let e = decode(&[0x82, 0x61, b'a', 0x62, b'b', 0xff]).unwrap_err();
        assert_eq!((e.pos, e.kind), (5, DecodeErrorKind::Utf8));
        let e = decode_owned(&[0xa1, 0x61, b'k', 0x63, b'v', b'w']).unwrap_err();
        assert_eq!((e.pos, e.kind), (3, DecodeErrorKind::LengthPastEnd(3)));
        assert_eq!(
            decode(&[0x82, 0x61, b'a', 0x00]).unwrap(),
            ValueRef::List(vec![ValueRef::Text("a"), ValueRef::Int(0)])
        );
        // Keys: the same fast path, then the order check.
        assert_eq!(kind(&[0xa1, 0x62, 0xc3, 0x28, 0x01]), DecodeErrorKind::Utf8);
        let owned = decode_owned(&[0xa1, 0x62, 0xc3, 0xa9, 0x61, b'v']).unwrap();
        assert_eq!(
            crate::cbor::to_vec(&owned),
            [0xa1, 0x62, 0xc3, 0xa9, 0x61, b'v']
        );
    }

    #[test]
    fn ints() {
        assert_eq!(decode(&[0x20]).unwrap(), ValueRef::Int(-1));
        assert_eq!(
            decode(&[0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).unwrap(),
            ValueRef::Int(i64::MIN)
        );
        assert_eq!(
            decode(&[0x1b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).unwrap(),
            ValueRef::Int(i64::MAX)
        );
    }
}
