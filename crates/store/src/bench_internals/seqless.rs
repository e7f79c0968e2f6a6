//! An event encoded before its seq is known, with the seq's value cut
//! out; the writer that appends it puts back the seq it hands out. What
//! the index-only write unit appends: the frame is built outside the
//! timing, so the timed write does no frame encoding beyond the seq's few
//! bytes.

use repo::cbor::Encoder;

use crate::error::{Result, StoreError};
use crate::events::{Encoded, frame_header};

/// See the module doc.
#[derive(Debug, Clone)]
pub struct SeqlessEvent {
    kind: String,
    header: Vec<u8>,
    before: Vec<u8>,
    after: Vec<u8>,
}

impl SeqlessEvent {
    /// From `frame(seq)`, the encoded frame of kind `kind` carrying `seq`
    /// and otherwise the same whatever `seq` is: encoded at seq 0 and at
    /// seq 1, the one byte where the two bodies differ is the seq's value.
    pub fn new(kind: &str, frame: impl Fn(i64) -> Vec<u8>) -> Result<Self> {
        let header = frame_header(kind);
        let (zero, one) = (frame(0), frame(1));
        let body = |f: &[u8]| -> Result<Vec<u8>> {
            f.strip_prefix(header.as_slice())
                .map(<[u8]>::to_vec)
                .ok_or_else(|| StoreError::Corrupt("frame header mismatch".into()))
        };
        let (zero, one) = (body(&zero)?, body(&one)?);
        let mut differ = (zero.iter().zip(&one).enumerate()).filter(|(_, (a, b))| a != b);
        let at = match (differ.next(), differ.next()) {
            (Some((at, (0x00, 0x01))), None) if zero.len() == one.len() => at,
            _ => {
                return Err(StoreError::InvalidEvent(
                    "the frame differs at seq 0 and 1 other than in one seq byte",
                ));
            }
        };
        Ok(SeqlessEvent {
            kind: kind.to_owned(),
            header,
            before: zero[..at].to_vec(),
            after: zero[at + 1..].to_vec(),
        })
    }

    /// The event's kind (`#commit`, ...).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The frame carrying `seq`.
    pub(crate) fn encoded(&self, seq: i64) -> Encoded {
        let mut out =
            Vec::with_capacity(self.header.len() + self.before.len() + 9 + self.after.len());
        out.extend_from_slice(&self.header);
        out.extend_from_slice(&self.before);
        Encoder::new(&mut out).int(seq);
        out.extend_from_slice(&self.after);
        Encoded::from_parts(out, self.header.len())
    }

    /// The body carrying `seq`, into `out` (cleared first).
    #[cfg(test)]
    pub(crate) fn body_into(&self, seq: i64, out: &mut Vec<u8>) {
        let e = self.encoded(seq);
        out.clear();
        out.extend_from_slice(e.body());
    }
}
