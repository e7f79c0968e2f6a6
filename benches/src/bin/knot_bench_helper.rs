//! `--bench knot`'s copy of `git-remote-at`: the same [`knot::helper::run`]
//! as the product binary, plus, when `KNOT_BENCH_RSS_FILE` is set, one
//! line appended to that file at exit with this process's peak resident
//! set (`VmHWM` of `/proc/self/status`, KiB): how the bench reads the
//! helper's memory apart from the git processes around it. The bench
//! links it on PATH as `git-remote-at`.

use std::io::{BufReader, Write, stdin, stdout};
use std::process::ExitCode;

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(url) = args.last().filter(|_| args.len() >= 2).cloned() else {
        eprintln!("usage: git-remote-at <remote> <url>");
        return ExitCode::from(2);
    };
    let url = if url.starts_with("at://") || url.starts_with("at+") {
        url
    } else {
        format!("at://{url}")
    };
    let result = knot::helper::run(&url, BufReader::new(stdin().lock()), &mut stdout().lock());
    if let (Ok(path), Some(kib)) = (std::env::var("KNOT_BENCH_RSS_FILE"), peak_rss_kib())
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
    {
        let _ = writeln!(f, "{kib}");
    }
    match result {
        Ok(knot::helper::Exit::Done) => ExitCode::SUCCESS,
        Ok(knot::helper::Exit::RateLimited) => ExitCode::from(1),
        Err(e) => {
            eprintln!("fatal: {e}");
            ExitCode::from(128)
        }
    }
}
