//! `knot-serve`: serves a mirror's pages and keeps the mirror up to date
//! from the remote's ref records (see the crate doc).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use knot_serve::server::{self, ServerConfig};
use knot_serve::sync::{self, Syncer};
use knot_serve::{App, Limits};

#[derive(Parser, Debug)]
#[command(version, about = "A read-only web server over a knot mirror")]
struct Args {
    /// The bare mirror (created when missing).
    #[arg(long)]
    mirror: PathBuf,
    /// The knot remote to follow (`at://…`, `at+http://…`); without it the
    /// mirror is served as it is.
    #[arg(long)]
    remote: Option<String>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Seconds between checks of the ref records.
    #[arg(long, default_value_t = 5)]
    interval: u64,
    /// The repository's name on the pages (default: the remote's, else the
    /// mirror directory's).
    #[arg(long)]
    name: Option<String>,
    /// Runtime worker threads.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Internal: fetch once into the mirror (run by the server itself with
    /// GIT_DIR set) and exit.
    #[arg(long, hide = true)]
    fetch_once: bool,
}

fn name_of(args: &Args) -> String {
    if let Some(n) = &args.name {
        return n.clone();
    }
    if let Some(r) = &args.remote
        && let Some(last) = r.trim_end_matches('/').rsplit('/').next()
    {
        return last.to_owned();
    }
    args.mirror
        .file_name()
        .map(|s| s.to_string_lossy().trim_end_matches(".git").to_owned())
        .unwrap_or_else(|| "repository".into())
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("knot-serve: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if args.fetch_once {
        let url = args
            .remote
            .as_deref()
            .ok_or("--fetch-once needs --remote")?;
        let stats = rt.block_on(sync::fetch_once(url, &args.mirror))?;
        eprintln!(
            "knot-serve: fetched {} packs, {} bytes",
            stats.packs, stats.bytes
        );
        return Ok(());
    }
    sync::init_mirror(&args.mirror)?;
    let mut syncer = match &args.remote {
        Some(url) => {
            let exe = std::env::current_exe()?;
            let mut s = rt.block_on(Syncer::open(url, &args.mirror, &exe))?;
            // The first sync before serving, so the pages start complete.
            let o = rt.block_on(s.check())?;
            eprintln!("knot-serve: mirror has {} refs", o.refs);
            Some(s)
        }
        None => None,
    };
    let app = Arc::new(App::open(&name_of(&args), &args.mirror, Limits::default())?);
    let running = server::spawn(app, args.listen, ServerConfig::default(), args.workers)?;
    eprintln!("knot-serve: serving {}", running.url());
    rt.block_on(async {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(args.interval.max(1))) => {}
                _ = tokio::signal::ctrl_c() => break,
            }
            if let Some(s) = syncer.as_mut() {
                match s.check().await {
                    Ok(o) if o.changed => eprintln!("knot-serve: synced ({} refs)", o.refs),
                    Ok(_) => {}
                    Err(e) => eprintln!("knot-serve: sync: {e}"),
                }
            }
        }
    });
    drop(running);
    Ok(())
}
