//! The benches' bounded sample: read from `data/` when a current dataset is
//! there, otherwise generated in memory from the same seed (identical lines).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use super::manifest::{MANIFEST_FILE, Manifest};
use super::{Kind, lines};

/// How many lines of each kind a [`Sample`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleSizes {
    /// Lines of `records.ndjson`.
    pub records: usize,
    /// Lines of `sql_dispatch.ndjson`.
    pub sql: usize,
    /// Lines of `object_dispatch.ndjson`.
    pub object: usize,
    /// Lines of `rest_dispatch.ndjson`.
    pub rest: usize,
    /// Lines of `blobs.ndjson` (cycling 16 B, 256 B, 4 KiB, 64 KiB).
    pub blobs: usize,
}

impl SampleSizes {
    /// The benches' sample (`docs/design/hotpath.md`): the first 8000 records,
    /// 8000 SQL, 4000 object and 4000 REST lines, and 64 blob lines.
    pub const BENCH: SampleSizes = SampleSizes {
        records: 8000,
        sql: 8000,
        object: 4000,
        rest: 4000,
        blobs: 64,
    };

    fn per_kind(self) -> [(Kind, usize); 5] {
        [
            (Kind::Records, self.records),
            (Kind::SqlDispatch, self.sql),
            (Kind::ObjectDispatch, self.object),
            (Kind::RestDispatch, self.rest),
            (Kind::Blobs, self.blobs),
        ]
    }
}

/// Where a [`Sample`]'s lines came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleSource {
    /// Read from the data directory's files.
    DataDir,
    /// Generated in memory (no current dataset on disk).
    Generated,
}

impl SampleSource {
    /// `"data-dir"` or `"generated"`, for bench metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            SampleSource::DataDir => "data-dir",
            SampleSource::Generated => "generated",
        }
    }
}

/// The first lines of each hot-path kind for [`crate::SEED`], without
/// newlines. The same values whether read from disk or generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// First lines of `records.ndjson`.
    pub records: Vec<String>,
    /// First lines of `sql_dispatch.ndjson`.
    pub sql: Vec<String>,
    /// First lines of `object_dispatch.ndjson`.
    pub object: Vec<String>,
    /// First lines of `rest_dispatch.ndjson`.
    pub rest: Vec<String>,
    /// First lines of `blobs.ndjson`.
    pub blobs: Vec<String>,
    /// Where the lines came from.
    pub source: SampleSource,
}

impl Sample {
    /// Generates the sample in memory (what [`load_sample`] falls back to).
    pub fn generate(sizes: SampleSizes) -> Sample {
        Sample {
            records: lines(Kind::Records, sizes.records),
            sql: lines(Kind::SqlDispatch, sizes.sql),
            object: lines(Kind::ObjectDispatch, sizes.object),
            rest: lines(Kind::RestDispatch, sizes.rest),
            blobs: lines(Kind::Blobs, sizes.blobs),
            source: SampleSource::Generated,
        }
    }

    fn slot(&mut self, kind: Kind) -> &mut Vec<String> {
        match kind {
            Kind::Records => &mut self.records,
            Kind::SqlDispatch => &mut self.sql,
            Kind::ObjectDispatch => &mut self.object,
            Kind::RestDispatch => &mut self.rest,
            Kind::Blobs => &mut self.blobs,
        }
    }
}

/// The data directory: `$ATBENCH_DATA_DIR` when set and non-empty, else
/// `data/` at the workspace root.
pub fn data_dir() -> PathBuf {
    match std::env::var_os("ATBENCH_DATA_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            // crates/datagen -> the workspace root.
            let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
            match crate_dir.ancestors().nth(2) {
                Some(root) => root.join("data"),
                None => crate_dir.join("../../data"),
            }
        }
    }
}

/// 0 = no sample loaded yet, 1 = data dir, 2 = generated.
static LAST_SOURCE: AtomicU8 = AtomicU8::new(0);
static SAID_GENERATING: AtomicBool = AtomicBool::new(false);

/// Where the most recent [`load_sample`]/[`load_sample_with`] in this
/// process got its lines: `"data-dir"`, `"generated"`, or `"none"` before
/// the first call.
pub fn sample_source() -> &'static str {
    match LAST_SOURCE.load(Ordering::Relaxed) {
        1 => SampleSource::DataDir.as_str(),
        2 => SampleSource::Generated.as_str(),
        _ => "none",
    }
}

/// The benches' sample ([`SampleSizes::BENCH`]) from [`data_dir`].
pub fn load_sample() -> Sample {
    load_sample_with(&data_dir(), SampleSizes::BENCH)
}

/// The first `sizes` lines of each kind, read from `dir` when it holds a
/// current dataset, otherwise generated in memory.
///
/// `dir` is used only if all of these hold (cheap checks; hashing a whole
/// 512 MB dataset at bench start would take seconds):
/// * `MANIFEST.json` parses, names generator `datagen`, this crate's
///   [`crate::GENERATOR_VERSION`] and seed [`crate::SEED`];
/// * each needed file is listed with at least as many lines as needed, and
///   its size on disk equals the listed byte count (catches truncated or
///   rewritten files);
/// * the needed lines read back complete (newline-terminated), and the
///   first 100 of each kind equal the in-memory generator's (catches a
///   generator change that forgot to bump the version).
///
/// Otherwise it prints one line to stderr (once per process) naming the
/// reason and generates the identical sample in memory.
pub fn load_sample_with(dir: &Path, sizes: SampleSizes) -> Sample {
    match read_sample(dir, sizes) {
        Ok(sample) => {
            LAST_SOURCE.store(1, Ordering::Relaxed);
            sample
        }
        Err(reason) => {
            if !SAID_GENERATING.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "datagen: {} not present or stale ({reason}); generating the seed-{} sample in memory",
                    dir.display(),
                    crate::SEED
                );
            }
            LAST_SOURCE.store(2, Ordering::Relaxed);
            Sample::generate(sizes)
        }
    }
}

/// Lines compared against the in-memory generator on every read.
const HEAD_CHECK_LINES: usize = 100;

/// The strict half of [`load_sample_with`]: the sample read from `dir`, or
/// why `dir` cannot be used (the checks listed there), without fallback.
pub fn read_sample(dir: &Path, sizes: SampleSizes) -> Result<Sample, String> {
    let manifest = Manifest::read(dir)?;
    if manifest.generator != "datagen"
        || manifest.generator_version != crate::GENERATOR_VERSION
        || manifest.seed != crate::SEED
    {
        return Err(format!(
            "{MANIFEST_FILE} is {} v{} seed {}, want datagen v{} seed {}",
            manifest.generator,
            manifest.generator_version,
            manifest.seed,
            crate::GENERATOR_VERSION,
            crate::SEED
        ));
    }
    let mut sample = Sample {
        records: Vec::new(),
        sql: Vec::new(),
        object: Vec::new(),
        rest: Vec::new(),
        blobs: Vec::new(),
        source: SampleSource::DataDir,
    };
    for (kind, need) in sizes.per_kind() {
        if need == 0 {
            continue;
        }
        let name = kind.file_name();
        let entry = manifest
            .files
            .get(name)
            .ok_or_else(|| format!("{MANIFEST_FILE} does not list {name}"))?;
        if entry.lines < need as u64 {
            return Err(format!("{name} has {} lines, need {need}", entry.lines));
        }
        let path = dir.join(name);
        let on_disk = std::fs::metadata(&path)
            .map_err(|e| format!("{name}: {e}"))?
            .len();
        if on_disk != entry.bytes {
            return Err(format!(
                "{name} is {on_disk} bytes, manifest says {}",
                entry.bytes
            ));
        }
        let read = read_lines(&path, need).map_err(|e| format!("{name}: {e}"))?;
        let head = read.len().min(HEAD_CHECK_LINES);
        if read[..head] != lines(kind, head)[..] {
            return Err(format!(
                "{name} differs from the generator in its first {head} lines"
            ));
        }
        *sample.slot(kind) = read;
    }
    Ok(sample)
}

/// The first `count` newline-terminated lines of `path`, newlines removed.
fn read_lines(path: &Path, count: usize) -> Result<Vec<String>, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut out = Vec::with_capacity(count);
    for n in 0..count {
        let mut line = String::new();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        if line.pop() != Some('\n') {
            return Err(format!("line {} is missing or incomplete", n + 1));
        }
        out.push(line);
    }
    Ok(out)
}
