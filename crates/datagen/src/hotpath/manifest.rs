//! `data/MANIFEST.json` and the dataset writer behind the CLI.
//!
//! The manifest is committed; the `*.ndjson` files it describes are
//! git-ignored. Layout (pretty-printed, keys in this order, files sorted by
//! name):
//!
//! ```json
//! {
//!   "generator": "datagen",
//!   "generator_version": 1,
//!   "seed": 20260602,
//!   "target_mb": 512,
//!   "files": {
//!     "blobs.ndjson": { "lines": 0, "bytes": 0, "sha256": "..." }
//!   }
//! }
//! ```

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufWriter};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Kind, write_kind};
use crate::Error;

/// The manifest's file name inside the data directory.
pub const MANIFEST_FILE: &str = "MANIFEST.json";

/// What one generated file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Newline-terminated lines.
    pub lines: u64,
    /// Size in bytes.
    pub bytes: u64,
    /// Lowercase hex sha-256 of the whole file.
    pub sha256: String,
}

/// The contents of `MANIFEST.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always `"datagen"`.
    pub generator: String,
    /// [`crate::GENERATOR_VERSION`] of the writer.
    pub generator_version: u32,
    /// The seed the files were generated from.
    pub seed: u64,
    /// The `--target-mb` the files were sized for (MiB).
    pub target_mb: u64,
    /// Per file name, what the file holds.
    pub files: BTreeMap<String, FileEntry>,
}

impl Manifest {
    /// Reads and parses `dir/MANIFEST.json`; the error says what went wrong.
    pub fn read(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join(MANIFEST_FILE);
        let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Total bytes [`write_dataset`] will write for `target_mb` (each file
/// overshoots its share by less than one line), for progress bars.
pub fn planned_bytes(target_mb: u64) -> u64 {
    Kind::ALL.iter().map(|k| k.target_bytes(target_mb)).sum()
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |source| Error::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Writes the five hot-path files for `seed` sized for `target_mb` MiB into
/// `dir` (created if missing), then `MANIFEST.json`.
///
/// The old manifest is removed first and every file is written under a
/// `.tmp` name and renamed when complete, so an interrupted run never
/// leaves a manifest that matches partial files. `progress` gets the bytes
/// of every line written.
pub fn write_dataset(
    dir: &Path,
    seed: u64,
    target_mb: u64,
    mut progress: impl FnMut(u64),
) -> Result<Manifest, Error> {
    fs::create_dir_all(dir).map_err(io_err("create directory", dir))?;
    let manifest_path = dir.join(MANIFEST_FILE);
    match fs::remove_file(&manifest_path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            return Err(io_err("remove old manifest", &manifest_path)(e));
        }
        _ => {}
    }
    let mut files = BTreeMap::new();
    for kind in Kind::ALL {
        let path = dir.join(kind.file_name());
        let tmp = dir.join(format!("{}.tmp", kind.file_name()));
        let file = File::create(&tmp).map_err(io_err("create", &tmp))?;
        let out = BufWriter::with_capacity(1 << 20, file);
        let summary = write_kind(kind, seed, kind.target_bytes(target_mb), out, &mut progress)
            .map_err(io_err("write", &tmp))?;
        fs::rename(&tmp, &path).map_err(io_err("rename into place", &path))?;
        files.insert(
            kind.file_name().to_string(),
            FileEntry {
                lines: summary.lines,
                bytes: summary.bytes,
                sha256: summary.sha256,
            },
        );
    }
    let manifest = Manifest {
        generator: "datagen".to_string(),
        generator_version: crate::GENERATOR_VERSION,
        seed,
        target_mb,
        files,
    };
    let mut text = serde_json::to_string_pretty(&manifest)?;
    text.push('\n');
    let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
    fs::write(&tmp, text).map_err(io_err("write", &tmp))?;
    fs::rename(&tmp, &manifest_path).map_err(io_err("rename into place", &manifest_path))?;
    Ok(manifest)
}
