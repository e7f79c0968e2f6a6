//! `knot`: commands around git hosted in a PDS (the remote helper itself
//! is `git-remote-at`). `knot gateway` lands many writers' pushes on one
//! branch as one push per queue (see `knot::gateway`); `knot compact
//! <remote>` folds a remote's packs into one (see `knot::compact`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use knot::gateway::{Kind, Limit};

mod compact;

#[derive(Parser)]
#[command(name = "knot", about = "git hosted in an atproto PDS")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve a push gateway: per-branch queues, each landed as one pack
    /// and one compare-and-swap.
    Gateway(GatewayArgs),
    /// Fold the packs of a remote's refs into one deltified pack.
    Compact(compact::CompactArgs),
}

#[derive(clap::Args)]
struct GatewayArgs {
    /// The PDS (http://host:port).
    #[arg(long)]
    pds: String,
    /// The account (handle or DID); credentials as git-remote-at finds them.
    #[arg(long)]
    account: String,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: SocketAddr,
    /// The scratch repository (created when absent).
    #[arg(long, default_value = "knot-gateway.git")]
    dir: PathBuf,
    /// Write-point limits, <points>/<seconds> (default 5000/3600 and 35000/86400).
    #[arg(long = "points")]
    points: Vec<Limit>,
    /// uploadBlob limit, <calls>/<seconds>.
    #[arg(long, default_value = "1000/86400")]
    uploads: Limit,
    /// Request limit, <requests>/<seconds>.
    #[arg(long, default_value = "3000/300")]
    requests: Limit,
    /// Pushes one queue holds at most.
    #[arg(long, default_value_t = 1024)]
    max_queue: usize,
    /// Largest push (bytes of pack).
    #[arg(long, default_value_t = 64 << 20)]
    max_push_bytes: usize,
    /// Connections served at once.
    #[arg(long, default_value_t = 256)]
    max_connections: usize,
    /// A bearer token writers must send (KNOT_GATEWAY_TOKEN on their side;
    /// read from KNOT_GATEWAY_TOKEN here too when not given).
    #[arg(long)]
    token: Option<String>,
}

fn gateway(a: GatewayArgs) -> knot::Result<()> {
    let mut cfg = knot::gateway::Config::new(&a.pds, &a.account, a.listen, a.dir);
    let points = if a.points.is_empty() {
        vec!["5000/3600".parse(), "35000/86400".parse()]
            .into_iter()
            .flatten()
            .collect()
    } else {
        a.points
    };
    cfg.limits = points.into_iter().map(|l| (Kind::Points, l)).collect();
    cfg.limits.push((Kind::Uploads, a.uploads));
    cfg.limits.push((Kind::Requests, a.requests));
    cfg.max_queue = a.max_queue;
    cfg.max_push_bytes = a.max_push_bytes;
    cfg.max_connections = a.max_connections;
    cfg.token = a.token.or_else(|| {
        std::env::var("KNOT_GATEWAY_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
    });
    knot::gateway::run(cfg)
}

fn main() -> ExitCode {
    let r = match Cli::parse().cmd {
        Cmd::Gateway(a) => gateway(a),
        Cmd::Compact(a) => return compact::main(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("knot: {e}");
            ExitCode::FAILURE
        }
    }
}
