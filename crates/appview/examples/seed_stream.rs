//! Runs the seeded 300-run write stream (every write a signed commit
//! through `crates/store`, indexed as it lands) into a fresh appview and
//! prints wall time and process CPU time per write; then, as a probe in
//! the same process, the store's own floor: the same writes (planned
//! outside the timing) committed one `applyWrites` each through the store
//! alone, same account, no index. Small on purpose: it is the program
//! `callgrind` profiles for `appview.seed_write/atproto/300`
//! (instructions per write, and where), e.g.
//! `SEED_STORE_FLOOR=0 valgrind --tool=callgrind target/release/examples/seed_stream`.
//! `SEED_ROUNDS=N` repeats both N times (a fresh directory each).

use std::time::Instant;

use appview::{APPVIEW_DID, AppView, bulk, signing_key, store_writes};

/// Process CPU time (user + system, every thread) in seconds.
fn cpu_seconds() -> f64 {
    // /proc/self/stat after the command's `)`: utime and stime (fields 14
    // and 15) are the 12th and 13th, in clock ticks.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn report(what: &str, round: usize, n: usize, wall: f64, cpu: f64) {
    println!(
        "round {round} {what}: {n} writes, wall {:.1} µs/write ({:.0} writes/s), process CPU {:.1} µs/write",
        wall * 1e6 / n as f64,
        n as f64 / wall,
        cpu * 1e6 / n as f64
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::var("SEED_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let floor = std::env::var("SEED_STORE_FLOOR").map_or(true, |v| v != "0");
    let workload = datagen::appview::workload(300);
    let n = workload.ops.len();
    let (_, mutations) = bulk::load(&workload)?;
    let tmp = std::env::temp_dir().join(format!("appview-seed-stream-{}", std::process::id()));
    for round in 0..rounds {
        let dir = tmp.join(format!("app-{round}"));
        let _ = std::fs::remove_dir_all(&dir);
        let app = AppView::open(&dir, store::Config::default())?;
        let (t, cpu) = (Instant::now(), cpu_seconds());
        for op in &workload.ops {
            app.apply_op(op)?;
        }
        report(
            "appview",
            round,
            n,
            t.elapsed().as_secs_f64(),
            cpu_seconds() - cpu,
        );
        drop(app);
        let _ = std::fs::remove_dir_all(&dir);
        if !floor {
            continue;
        }
        let dir = tmp.join(format!("store-{round}"));
        std::fs::create_dir_all(&dir)?;
        let store = store::Store::open(dir.join("s.sqlite"), store::Config::default())?;
        store.create_account(APPVIEW_DID, &signing_key()?)?;
        let writes: Vec<_> = mutations.iter().map(store_writes).collect();
        let (t, cpu) = (Instant::now(), cpu_seconds());
        for w in writes {
            store.apply_writes(APPVIEW_DID, w, None)?;
        }
        report(
            "store floor",
            round,
            n,
            t.elapsed().as_secs_f64(),
            cpu_seconds() - cpu,
        );
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
