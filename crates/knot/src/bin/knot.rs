//! `knot`: tools around the `git-remote-at` helper (see the `knot` crate docs).
//! `knot compact <remote>`: [`knot::compact`].

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "knot",
    about = "git hosted in an atproto PDS: tools beside git-remote-at"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Fold the packs of a remote's refs into one deltified pack.
    Compact(knot::compact::cli::CompactArgs),
}

fn main() -> ExitCode {
    match Cli::parse().cmd {
        Cmd::Compact(a) => knot::compact::cli::main(a),
    }
}
