//! The segment inspector (feature `wire`), behind
//! `cargo run --release -p segment --example inspect -- [--verify] <file.jss>`.
//!
//! Output: the header summary as `# `-prefixed text lines (so the rest of
//! the output stays JSON lines), one `# block` line per block, then every
//! event as one Jetstream v1 JSON line with `"cursor"` (= the event's seq)
//! as its first key. Events v1 never sends (`#sync`) are printed in their
//! v2 form ([`crate::wire::encode_v2`], which carries `cursor` too); an
//! event whose payload is not DAG-CBOR is printed as a fallback line
//! `{"cursor", "seq", "did", "time_us", "kind_code", "payload_len",
//! "payload_base64", "error"}` rather than stopping the dump.
//!
//! `--verify` opens the file checked (index, blooms, checksum, collection
//! index); without it the open is unchecked. Any open or block error stops
//! the dump and is reported with a non-zero exit code ([`run`]).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::event::EventRef;
use crate::reader::{BlockBuf, Segment};
use crate::wire::{encode_v1, encode_v2};

/// What [`inspect`] printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Blocks listed.
    pub blocks: usize,
    /// Event lines printed.
    pub events: u64,
    /// Events printed as fallback lines (payload not renderable).
    pub unrenderable: u64,
}

fn write_err(e: std::io::Error) -> Error {
    Error::Io {
        op: "write inspector output",
        source: e,
    }
}

/// Prints the header summary, the block list and every event of the
/// segment at `path` to `out`. `verify` opens it checked.
pub fn inspect(path: &Path, verify: bool, out: &mut dyn Write) -> Result<Summary> {
    let seg = if verify {
        Segment::open(path)?
    } else {
        Segment::open_unchecked(path)?
    };
    let h = *seg.header();
    let mut head = String::new();
    head.push_str(&format!("# segment {}\n", path.display()));
    head.push_str(&format!(
        "# open: {}\n",
        if verify {
            "checked (index, blooms, checksum, collection index verified)"
        } else {
            "unchecked (header only)"
        }
    ));
    head.push_str(&format!(
        "# version 1, checksum {:#018x}, blocks {}, events {}, unique DIDs {}\n",
        h.checksum, h.block_count, h.event_count, h.unique_did_count
    ));
    head.push_str(&format!(
        "# seq {}..={}, witnessed_at {}..={}\n",
        h.min_seq, h.max_seq, h.min_witnessed_at, h.max_witnessed_at
    ));
    head.push_str(&format!(
        "# footer {} (block index), did bloom {}, block blooms {}, collection index {}\n",
        h.footer_offset, h.did_bloom_offset, h.block_did_bloom_offset, h.collection_index_offset
    ));
    if let Some(ci) = seg.collections() {
        let names: Vec<String> = ci
            .entries
            .iter()
            .map(|c| format!("{} x{}", c.nsid, c.count))
            .collect();
        head.push_str(&format!("# collections: {}\n", names.join(", ")));
    }
    for i in 0..seg.block_count() {
        let m = seg.block_meta(i)?;
        head.push_str(&format!(
            "# block {i}: offset {}, {} -> {} bytes, {} events, seq {}..={}, witnessed_at {}..={}\n",
            m.offset,
            m.compressed_size,
            m.uncompressed_size,
            m.event_count,
            m.min_seq,
            m.max_seq,
            m.min_witnessed_at,
            m.max_witnessed_at
        ));
    }
    out.write_all(head.as_bytes()).map_err(write_err)?;

    let mut summary = Summary {
        blocks: seg.block_count(),
        events: 0,
        unrenderable: 0,
    };
    let mut buf = BlockBuf::new()?;
    let mut text = String::new();
    for i in 0..seg.block_count() {
        let events = seg.read_block(i, &mut buf)?;
        text.clear();
        for e in &events {
            if !event_line(e, &mut text) {
                summary.unrenderable += 1;
            }
            text.push('\n');
            summary.events += 1;
        }
        out.write_all(text.as_bytes()).map_err(write_err)?;
    }
    out.flush().map_err(write_err)?;
    Ok(summary)
}

/// Appends the line of one event (no newline); `false` if it is a
/// fallback line.
pub fn event_line(e: &EventRef<'_>, out: &mut String) -> bool {
    let start = out.len();
    let failure = match encode_v1(e, out) {
        Ok(true) => {
            out.insert_str(start + 1, &format!("\"cursor\":{},", e.seq));
            return true;
        }
        Ok(false) => match encode_v2(e, out) {
            Ok(_) => return true,
            Err(err) => err,
        },
        Err(err) => err,
    };
    let v = serde_json::json!({
        "cursor": e.seq,
        "seq": e.seq,
        "did": e.did,
        "time_us": e.witnessed_at,
        "kind_code": e.kind as u8,
        "payload_len": e.payload.len(),
        "payload_base64": codec::base64::encode(e.payload),
        "error": failure.to_string(),
    });
    out.push_str(&v.to_string());
    false
}

const USAGE: &str = "usage: inspect [--verify] <file.jss>";

/// The inspector's command line: `args` without the program name. Writes
/// the dump to `out` and any error to `err`; returns the exit code (0 ok,
/// 1 the file failed to open, verify or decode, 2 usage).
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut verify = false;
    let mut path = None;
    for a in args {
        match a.as_str() {
            "--verify" => verify = true,
            "-h" | "--help" => {
                let _ = writeln!(out, "{USAGE}");
                return 0;
            }
            s if s.starts_with('-') => {
                let _ = writeln!(err, "unknown option {s}\n{USAGE}");
                return 2;
            }
            s if path.is_none() => path = Some(s.to_owned()),
            _ => {
                let _ = writeln!(err, "more than one file\n{USAGE}");
                return 2;
            }
        }
    }
    let Some(path) = path else {
        let _ = writeln!(err, "{USAGE}");
        return 2;
    };
    match inspect(Path::new(&path), verify, out) {
        Ok(_) => 0,
        Err(e) => {
            let _ = writeln!(err, "{path}: {e}");
            1
        }
    }
}
