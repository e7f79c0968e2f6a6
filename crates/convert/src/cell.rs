//! `base64_cell`: how a BLOB column travels in JSON, as the string
//! `"base64:" + base64(bytes)` (padded standard alphabet, through `codec`).

/// The prefix that marks a base64 cell.
pub const BASE64_CELL_PREFIX: &str = "base64:";

/// Appends the cell text of `bytes` (`base64:` and the encoding) to `out`.
pub fn base64_cell_into(bytes: &[u8], out: &mut String) {
    out.reserve(BASE64_CELL_PREFIX.len() + codec::base64::encoded_len(bytes.len()));
    out.push_str(BASE64_CELL_PREFIX);
    codec::base64::encode_into_string(bytes, out);
}

/// The cell text of `bytes`: `"base64:" + base64(bytes)`, in one
/// allocation of exactly its size.
pub fn base64_cell(bytes: &[u8]) -> String {
    let mut out = String::new();
    base64_cell_into(bytes, &mut out);
    out
}

/// The bytes of a cell written by [`base64_cell`], or `None` when `cell`
/// lacks the prefix or is not valid base64.
pub fn base64_cell_bytes(cell: &str) -> Option<Vec<u8>> {
    let text = cell.strip_prefix(BASE64_CELL_PREFIX)?;
    codec::base64::decode(text.as_bytes()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells() {
        assert_eq!(base64_cell(b""), "base64:");
        assert_eq!(base64_cell(b"hi!"), "base64:aGkh");
        assert_eq!(base64_cell(&[0xff, 0xfe]), "base64://4=");
        let bytes: Vec<u8> = (0..=255).collect();
        let cell = base64_cell(&bytes);
        assert_eq!(cell.len(), cell.capacity());
        assert_eq!(base64_cell_bytes(&cell), Some(bytes));
        assert_eq!(base64_cell_bytes("aGkh"), None);
    }
}
