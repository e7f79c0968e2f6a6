//! `atstore`: the record store from the command line.
//!
//! ```text
//! atstore [--db PATH] import <file.car> [--signing-key <did:key>]
//! atstore [--db PATH] get <at-uri>
//! atstore [--db PATH] ls <did> [collection]
//! atstore [--db PATH] export <did> <out.car>
//! atstore [--db PATH] stats
//! ```
//!
//! The database (default `./atstore.sqlite`) is created by the first
//! `import`. `import` opens it for writing and holds its writer lock: a
//! second writer, in another process too, fails with "database … is in use
//! by pid N". `get`, `ls`, `export` and `stats` open it read-only (no lock,
//! nothing written), so they work while another process imports and on a
//! file they cannot write. A file that is not an atbench store is refused
//! untouched. Errors name the file they concern.

use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use repo::crypto::PublicKey;
use repo::syntax::AtUri;
use store::{Config, ListOptions, Store, StoreError};

#[derive(Parser)]
#[command(name = "atstore", about = "atproto record store on SQLite")]
struct Cli {
    /// Database file.
    #[arg(long, default_value = "./atstore.sqlite")]
    db: PathBuf,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Import a repository CAR: every block checked against its CID, the MST
    /// against the commit, the signature when a key is given.
    Import {
        /// The CAR file.
        car: PathBuf,
        /// The account's signing key (`did:key:z...`).
        #[arg(long)]
        signing_key: Option<String>,
    },
    /// Print one record as atproto JSON.
    Get {
        /// `at://did/collection/rkey`.
        uri: String,
    },
    /// List records: `collection/rkey<TAB>cid`, in key order.
    Ls {
        /// The account.
        did: String,
        /// Only this collection.
        collection: Option<String>,
    },
    /// Export a repository as a CAR file.
    Export {
        /// The account.
        did: String,
        /// Output path.
        out: PathBuf,
    },
    /// Table counts.
    Stats,
}

#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{}: cannot {op}: {source}", path.display())]
    File {
        path: PathBuf,
        op: &'static str,
        source: std::io::Error,
    },
    #[error("writing the output: {0}")]
    Stdout(#[from] std::io::Error),
    #[error("{0}")]
    Usage(String),
}

fn file_error<'p>(
    path: &'p Path,
    op: &'static str,
) -> impl FnOnce(std::io::Error) -> CliError + 'p {
    move |source| CliError::File {
        path: path.to_path_buf(),
        op,
        source,
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    let store = match cli.cmd {
        Cmd::Import { .. } => Store::open(&cli.db, Config::default())?,
        _ => Store::open_read_only(&cli.db, Config::default())?,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    match cli.cmd {
        Cmd::Import { car, signing_key } => {
            let key = signing_key
                .map(|k| PublicKey::from_did_key(&k))
                .transpose()
                .map_err(|e| CliError::Usage(format!("--signing-key: {e}")))?;
            let file = std::fs::File::open(&car).map_err(file_error(&car, "open the CAR"))?;
            let info = store.import_car(BufReader::new(file), key.as_ref())?;
            let n = store.check_repo(&info.did)?;
            writeln!(
                out,
                "imported {} rev {} commit {} ({} records{})",
                info.did,
                info.rev,
                info.commit,
                n,
                if key.is_some() {
                    ", signature verified"
                } else {
                    ", signature NOT checked: no --signing-key"
                }
            )?;
        }
        Cmd::Get { uri } => {
            let u = AtUri::parse(&uri).map_err(StoreError::from)?;
            let (Some(coll), Some(rkey)) = (u.collection, u.rkey) else {
                return Err(CliError::Usage("get needs at://did/collection/rkey".into()));
            };
            match store.get_record(u.authority, coll, rkey)? {
                Some(r) => writeln!(out, "{}", r.json)?,
                None => return Err(CliError::Usage(format!("{uri}: not found"))),
            }
        }
        Cmd::Ls { did, collection } => {
            if store.repo_root(&did)?.is_none() {
                return Err(StoreError::UnknownAccount(did).into());
            }
            let collections = match collection {
                Some(c) => vec![c],
                None => store.collections(&did)?,
            };
            for c in collections {
                let mut cursor: Option<String> = None;
                loop {
                    let page = store.list_record_cids(
                        &did,
                        &c,
                        &ListOptions {
                            limit: 100,
                            cursor: cursor.as_deref(),
                            reverse: true,
                        },
                    )?;
                    for (rkey, cid) in &page {
                        writeln!(out, "{c}/{rkey}\t{cid}")?;
                    }
                    match page.last() {
                        Some((rkey, _)) if page.len() == 100 => cursor = Some(rkey.clone()),
                        _ => break,
                    }
                }
            }
        }
        Cmd::Export { did, out: path } => {
            // An unknown account is an error before any file exists.
            if store.repo_root(&did)?.is_none() {
                return Err(StoreError::UnknownAccount(did).into());
            }
            let file = std::fs::File::create(&path).map_err(file_error(&path, "create"))?;
            let info = match store.export_repo(&did, None, BufWriter::new(file)) {
                Ok(info) => info,
                Err(e) => {
                    // No partial CAR left behind.
                    let _ = std::fs::remove_file(&path);
                    return Err(e.into());
                }
            };
            writeln!(
                out,
                "exported {did} commit {} ({} blocks, {} bytes) to {}",
                info.root,
                info.blocks,
                info.bytes,
                path.display()
            )?;
        }
        Cmd::Stats => {
            let s = store.stats()?;
            writeln!(out, "accounts\t{}", s.accounts)?;
            writeln!(out, "records\t{}", s.records)?;
            writeln!(out, "blocks\t{}", s.blocks)?;
            writeln!(out, "block_bytes\t{}", s.block_bytes)?;
            writeln!(out, "events\t{}", s.events)?;
            writeln!(out, "last_seq\t{}", s.last_seq)?;
            writeln!(out, "blobs\t{}", s.blobs)?;
            let r = store.startup_report();
            writeln!(
                out,
                "startup\tstorage {:?}, migrations {:?}, sequence {:?}, backfill {:?} ({} blocks)",
                r.storage, r.migrations, r.sequence, r.backfill, r.backfilled
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("atstore: {e}");
            ExitCode::FAILURE
        }
    }
}
