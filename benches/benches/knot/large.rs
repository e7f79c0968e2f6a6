//! `knot.large_push` and `knot.large_clone`: repositories generated at run
//! time with `git fast-import` from a seeded ChaCha stream (incompressible
//! file contents, so the packed size is the generated size): the push of
//! the whole history to a new remote repository, and its clone. Beside
//! the time, the helper's peak RSS (its own `VmHWM`, written by
//! `knot_bench_helper` at exit; git's pack-objects and index-pack are
//! other processes) is recorded per size: the target is flat across
//! sizes and under 64 MiB. Every store given runs the same rows (the
//! official PDS under `BENCH_PEERS=1`: its default blob limit, 5 MiB, holds
//! the 4 MiB parts); the repositories are generated once.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use criterion::Throughput;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::fixture::Fixture;

/// Helper peak RSS ceiling checked after every large operation (KiB).
pub const RSS_CEILING_KIB: u64 = 64 << 10;

/// Generates a repository of about `mib` MiB: files of `file_kib` KiB, four
/// per commit, each commit touching new paths.
fn generate(f: &Fixture, name: &str, mib: usize, seed: u64) -> PathBuf {
    let dir = f.init(name);
    let file_kib = if mib <= 16 { 256 } else { 1024 };
    let files = mib * 1024 / file_kib;
    let mut child = Command::new("git")
        .current_dir(&dir)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import");
    let mut w = std::io::BufWriter::new(child.stdin.take().expect("stdin"));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf = vec![0u8; file_kib * 1024];
    for c in 0..files.div_ceil(4) {
        let msg = format!("commit {c}");
        write!(w, "commit refs/heads/main\ncommitter Bench <bench@example.com> {} +0000\ndata {}\n{msg}\n", 1_700_000_000 + c, msg.len()).expect("write");
        for i in 0..4.min(files - c * 4) {
            rng.fill_bytes(&mut buf);
            write!(w, "M 644 inline d{}/f{i}.bin\ndata {}\n", c % 16, buf.len()).expect("write");
            w.write_all(&buf).expect("write");
            w.write_all(b"\n").expect("write");
        }
    }
    drop(w);
    assert!(
        child.wait().expect("fast-import").success(),
        "fast-import failed"
    );
    // fast-import leaves a small import loose; one pack (no delta search:
    // the contents are random) gives the packed size.
    f.git(&dir, &["repack", "-adq", "--window=0"]);
    f.git(&dir, &["reset", "-q", "--hard", "main"]);
    dir
}

fn packed_bytes(f: &Fixture, dir: &Path) -> u64 {
    let out = f.git(dir, &["count-objects", "-v"]);
    let kib: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("size-pack: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("size-pack");
    kib * 1024
}

/// Runs `args` with the RSS file set; returns (elapsed, the helper's peak KiB).
fn run_measured(f: &Fixture, dir: &Path, args: &[&str]) -> (Duration, u64) {
    let rss = f.root.join("rss.txt");
    let _ = std::fs::remove_file(&rss);
    let start = Instant::now();
    let o = f
        .cmd(dir, args)
        .env("KNOT_BENCH_RSS_FILE", &rss)
        .output()
        .expect("git");
    let d = start.elapsed();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let peak = std::fs::read_to_string(&rss)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .max()
        .expect("the helper reported its peak RSS");
    assert!(
        peak < RSS_CEILING_KIB,
        "helper peak RSS {peak} KiB is over the 64 MiB target"
    );
    (d, peak)
}

pub fn run(target: &mut BenchTarget, stores: &[&Fixture], sizes: &[usize]) {
    let Some(first) = stores.first() else { return };
    let proxies: Vec<_> = stores.iter().map(|f| f.proxy(Duration::ZERO)).collect();
    let repos: Vec<(usize, PathBuf, u64)> = sizes
        .iter()
        .map(|&mib| {
            let dir = generate(
                first,
                &format!("large-{mib}"),
                mib,
                datagen::SEED ^ mib as u64,
            );
            let bytes = packed_bytes(first, &dir);
            (mib, dir, bytes)
        })
        .collect();
    let mut rss_table = Vec::new();
    let mut counter = 0u64;
    if target.may_run("knot.large_push") {
        let mut g = target.group("knot.large_push");
        g.criterion().sample_size(10);
        for (f, proxy) in stores.iter().zip(&proxies) {
            for (mib, dir, bytes) in &repos {
                let tier = format!("{mib}MiB");
                let id = g.id(f.name, &tier);
                let mut peak = 0;
                g.throughput(Throughput::Bytes(*bytes));
                g.bench(f.name, &tier, |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            counter += 1;
                            let url = f.url(proxy, &format!("large-{mib}-{counter}"));
                            let (d, p) = run_measured(f, dir, &["push", "-q", &url, "main"]);
                            total += d;
                            peak = peak.max(p);
                            assert_eq!(
                                f.remote_ref(dir, &url, "refs/heads/main"),
                                Some(f.git(dir, &["rev-parse", "HEAD"]))
                            );
                        }
                        total
                    });
                });
                f.note(&id, "helper_peak_rss_kib", peak.into());
                f.note(&id, "packed_bytes", (*bytes).into());
                rss_table.push((f.name, "push", *mib, *bytes, peak));
            }
        }
        g.finish();
    }
    if target.may_run("knot.large_clone") {
        let mut g = target.group("knot.large_clone");
        g.criterion().sample_size(10);
        for (f, proxy) in stores.iter().zip(&proxies) {
            for (mib, dir, bytes) in &repos {
                let url = f.url(proxy, &format!("large-{mib}-src"));
                f.git(dir, &["push", "-q", &url, "main"]);
                let tier = format!("{mib}MiB");
                let id = g.id(f.name, &tier);
                let mut peak = 0;
                g.throughput(Throughput::Bytes(*bytes));
                g.bench(f.name, &tier, |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            counter += 1;
                            let into = format!("large-clone-{counter}");
                            let (d, p) = run_measured(
                                f,
                                &f.root,
                                &["clone", "-q", "--no-checkout", &url, &into],
                            );
                            total += d;
                            peak = peak.max(p);
                            let c = f.root.join(&into);
                            assert_eq!(
                                f.git(&c, &["rev-parse", "HEAD"]),
                                f.git(dir, &["rev-parse", "HEAD"])
                            );
                            let _ = std::fs::remove_dir_all(&c);
                        }
                        total
                    });
                });
                f.note(&id, "helper_peak_rss_kib", peak.into());
                f.note(&id, "packed_bytes", (*bytes).into());
                rss_table.push((f.name, "clone", *mib, *bytes, peak));
            }
        }
        g.finish();
    }
    for (store, op, mib, bytes, peak) in &rss_table {
        eprintln!(
            "atbench: knot: helper peak RSS, {op} of a {mib} MiB repository ({:.1} MiB packed), {store}: {:.1} MiB",
            *bytes as f64 / (1 << 20) as f64,
            *peak as f64 / 1024.0
        );
    }
}
