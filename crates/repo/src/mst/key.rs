//! [`Key`]: an MST key stored inline when short (nearly every real key:
//! `app.bsky.feed.post/3lo3kqqljmfe2` is 32 bytes), shared on the heap
//! otherwise, so decoding and copying nodes rarely allocates per key.

use std::cmp::Ordering;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

const INLINE: usize = 46;

/// An MST key's bytes.
#[derive(Clone)]
pub(crate) enum Key {
    Inline { len: u8, buf: [u8; INLINE] },
    Heap(Arc<[u8]>),
}

impl Key {
    #[inline]
    pub fn new(bytes: &[u8]) -> Key {
        if bytes.len() <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..bytes.len()].copy_from_slice(bytes);
            Key::Inline {
                len: bytes.len() as u8,
                buf,
            }
        } else {
            Key::Heap(Arc::from(bytes))
        }
    }
}

impl Key {
    /// The key `buf[..len]` where `buf` has at least [`INLINE`] bytes
    /// (whatever follows the key is copied but never read): a fixed-size
    /// copy instead of a zero-fill and a variable one.
    #[inline]
    pub fn from_padded(buf: &[u8], len: usize) -> Key {
        match buf.get(..INLINE) {
            Some(head) if len <= INLINE => {
                let mut inline = [0u8; INLINE];
                inline.copy_from_slice(head);
                Key::Inline {
                    len: len as u8,
                    buf: inline,
                }
            }
            _ => Key::new(&buf[..len.min(buf.len())]),
        }
    }
}

impl Deref for Key {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Key::Inline { len, buf } => &buf[..usize::from(*len)],
            Key::Heap(a) => a,
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        (**self).cmp(&**other)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}
