//! A blob's MIME type, as `com.atproto.repo.uploadBlob` keeps it.
//!
//! The lexicon's input encoding is `*/*`, so clients send any
//! `Content-Type`, `*/*` itself included. As the reference PDS does, the
//! type is sniffed from the blob's leading bytes (magic numbers, by the
//! `infer` crate) and the sniffed type wins over the declared one, so a
//! lying header does not reach a record's `mimeType`. When nothing is
//! recognised the declared type is kept if it is a concrete `type/subtype`
//! ([`store::is_valid_mime`]).
//!
//! Deviation: the reference stores an unrecognised declared string as it
//! came (`*/*` included); atpds stores `application/octet-stream` when the
//! declared type is missing, a wildcard or not a valid type, so every
//! stored blob has a type a reader can serve as `Content-Type`.

/// What a blob is served as when neither its bytes nor its header say.
pub const FALLBACK: &str = "application/octet-stream";

/// The MIME type to store for a blob of `bytes` uploaded with `declared`
/// as its `Content-Type` (if any).
pub fn blob_mime(declared: Option<&str>, bytes: &[u8]) -> String {
    if let Some(t) = infer::get(bytes) {
        return t.mime_type().to_owned();
    }
    match declared.map(str::trim) {
        Some(d) if store::is_valid_mime(d) => d.to_owned(),
        _ => FALLBACK.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
    const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0";

    #[test]
    fn sniffed_type_wins_over_any_header() {
        assert_eq!(blob_mime(Some("*/*"), PNG), "image/png");
        assert_eq!(blob_mime(None, PNG), "image/png");
        assert_eq!(blob_mime(Some("image/png"), JPEG), "image/jpeg");
        assert_eq!(blob_mime(Some("text/plain"), JPEG), "image/jpeg");
    }

    #[test]
    fn unrecognised_bytes_keep_a_concrete_header_or_fall_back() {
        let text = b"just some words";
        assert_eq!(
            blob_mime(Some("text/plain; charset=utf-8"), text),
            "text/plain; charset=utf-8"
        );
        assert_eq!(blob_mime(Some(" image/png "), text), "image/png");
        assert_eq!(blob_mime(Some("*/*"), text), FALLBACK);
        assert_eq!(blob_mime(Some("image/*"), text), FALLBACK);
        assert_eq!(blob_mime(Some("garbage"), text), FALLBACK);
        assert_eq!(blob_mime(None, text), FALLBACK);
        assert_eq!(blob_mime(None, b""), FALLBACK);
    }
}
