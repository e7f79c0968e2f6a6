//! The official PDS as a whole server beside ours (`BENCH_PEERS=1`):
//! started through `benches::official_pds` with a fresh directory, seeded
//! through its own XRPC routes exactly as ours is (`seed::fill`: the same
//! accounts, records, blob and sessions), then measured by the same route
//! and write rows as ours, ids `<route>.official-pds`. Its `app.bsky.*`
//! calls go to the same appview as ours (the mix's stand-in).

use benches::official_pds::OfficialPds;

use crate::seed::{self, Seed};

/// The implementation suffix of the official PDS's rows.
pub const OFFICIAL_PDS: &str = "official-pds";

/// The seeded official PDS, or `None` with the printed reason (no
/// `BENCH_PEERS=1`, a `--test` run, no node or no install); `appview`
/// answers its proxied `app.bsky.*` reads.
pub fn official_seed(appview: &xrpc::Appview) -> Option<Seed> {
    if let Some(reason) = benches::peers::skip_reason() {
        eprintln!("atbench: xrpc: official-pds rows skipped: {reason}");
        return None;
    }
    let pds = OfficialPds::start_or_skip_with("xrpc", Some(appview))?;
    let addr = pds.addr();
    Some(seed::fill(addr, Box::new(pds)))
}
