//! `datagen` CLI: writes the seeded hot-path dataset and `MANIFEST.json`.
//!
//! ```text
//! cargo run --release -p datagen -- --target-mb 512 [--out DIR] [--seed S]
//! ```
//!
//! `--out` defaults to `data/` at the workspace root (or `$ATBENCH_DATA_DIR`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

use datagen::hotpath::{MIB, data_dir};
use datagen::manifest::{planned_bytes, write_dataset};

/// Largest accepted `--target-mb` (64 GiB).
const MAX_TARGET_MB: u64 = 65_536;

/// Writes atbench's seeded hot-path dataset (five NDJSON files) and its
/// MANIFEST.json.
#[derive(Debug, Parser)]
#[command(name = "datagen", version)]
struct Args {
    /// Total size of the dataset in MiB (1..=65536), split 60/18/10/6/6 %
    /// over records, object dispatch, blobs, SQL dispatch, REST dispatch.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_target_mb)]
    target_mb: u64,

    /// Output directory (created if missing) [default: data/ at the
    /// workspace root, or $ATBENCH_DATA_DIR].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// Seed of the generators; anything but the default makes a dataset the
    /// benches will not use.
    #[arg(long, value_name = "S", default_value_t = datagen::SEED)]
    seed: u64,
}

/// `--target-mb`: a whole number of MiB in `1..=MAX_TARGET_MB`.
fn parse_target_mb(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let want = format!("a whole number of MiB from 1 to {MAX_TARGET_MB}");
    if text.starts_with('-') {
        return Err(format!("must be positive: want {want}"));
    }
    let mb: u64 = text
        .parse()
        .map_err(|_| format!("not a number: want {want}"))?;
    match mb {
        0 => Err(format!("an empty dataset is useless: want {want}")),
        n if n > MAX_TARGET_MB => Err(format!("too large: want {want}")),
        n => Ok(n),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let dir = args.out.unwrap_or_else(data_dir);
    let total = planned_bytes(args.target_mb);

    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, eta {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);

    let started = Instant::now();
    let mut pending = 0u64;
    let result = write_dataset(&dir, args.seed, args.target_mb, |n| {
        pending += n;
        if pending >= MIB {
            bar.inc(pending);
            pending = 0;
        }
    });
    bar.finish_and_clear();

    match result {
        Ok(manifest) => {
            let secs = started.elapsed().as_secs_f64();
            let bytes: u64 = manifest.files.values().map(|f| f.bytes).sum();
            for (name, file) in &manifest.files {
                println!(
                    "{name:<24} {:>10} lines {:>12} bytes  sha256 {}",
                    file.lines, file.bytes, file.sha256
                );
            }
            println!(
                "datagen: wrote {:.1} MiB (seed {}) to {} in {secs:.2} s ({:.0} MiB/s)",
                bytes as f64 / MIB as f64,
                manifest.seed,
                dir.display(),
                bytes as f64 / MIB as f64 / secs.max(1e-9)
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("datagen: error: {err}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_mb_bounds() {
        assert_eq!(parse_target_mb("1"), Ok(1));
        assert_eq!(parse_target_mb(" 512 "), Ok(512));
        assert_eq!(parse_target_mb("65536"), Ok(MAX_TARGET_MB));
        for bad in [
            "0",
            "65537",
            "-1",
            "1e3",
            "",
            "512MB",
            "18446744073709551616",
        ] {
            assert!(parse_target_mb(bad).is_err(), "{bad:?} accepted");
        }
    }
}
