//! The versions of the Rust peers this build of `--bench repo` links,
//! read from the workspace's `Cargo.lock` (compiled in, so the figure is the
//! one the binary was built with), printed and recorded in the run context
//! (`target/atbench/context/repo_peers.json`).

/// `Cargo.lock` as it was when this binary was compiled.
const LOCK: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"));

/// The peer crates whose versions the run records (the lock holds two
/// serde_ipld_dagcbor versions: both are listed).
const PEERS: &[&str] = &[
    "serde_ipld_dagcbor",
    "serde_cbor",
    "ciborium",
    "atrium-repo",
    "atproto-dasl",
    "iroh-car",
    "proto-blue-repo",
    "proto-blue-lex-cbor",
    "proto-blue-crypto",
    #[cfg(feature = "peers-rust")]
    "jacquard-repo",
    #[cfg(feature = "peers-rust")]
    "rsky-repo",
    #[cfg(feature = "peers-rust")]
    "atproto-repo",
];

/// Every locked version of package `name`, in lock order.
fn locked(name: &str) -> Vec<&'static str> {
    let mut versions = Vec::new();
    let mut lines = LOCK.lines();
    while let Some(line) = lines.next() {
        if line
            .strip_prefix("name = \"")
            .and_then(|r| r.strip_suffix('"'))
            == Some(name)
            && let Some(v) = lines
                .next()
                .and_then(|l| l.strip_prefix("version = \""))
                .and_then(|r| r.strip_suffix('"'))
        {
            versions.push(v);
        }
    }
    versions
}

/// Prints the peers' versions and writes them to the run context.
pub fn record() {
    let mut map = serde_json::Map::new();
    for name in PEERS {
        let versions = locked(name);
        assert!(!versions.is_empty(), "{name} is not in Cargo.lock");
        map.insert((*name).to_owned(), serde_json::json!(versions.join(", ")));
    }
    eprintln!(
        "atbench: repo peers: {}",
        map.iter()
            .map(|(k, v)| format!("{k} {}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    benches::sidecar::context(
        "repo_peers",
        serde_json::json!({ "repo_peer_versions": map }),
    );
}
