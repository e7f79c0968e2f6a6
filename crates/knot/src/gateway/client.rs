//! The helper's side of the gateway: whether a push batch goes through
//! it (`knot.gateway` in git's config, or `KNOT_GATEWAY`; only plain
//! branch updates and creations), and the push itself: per ref, the pack
//! of the new commit minus the remote tips held locally, sent to the
//! gateway, which answers once the commits are on the PDS.

use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::Full;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::client::{Xrpc, encode_query};
use crate::error::{KnotError, Result};
use crate::git;
use crate::push::{PushCmd, PushOptions, PushOutcome};
use crate::remote::Remote;

/// How long a writer waits for its push to land (the gateway may wait out
/// the account's budget first).
pub const LAND_TIMEOUT: Duration = Duration::from_secs(2 * 3600);
/// Largest pack the helper sends to the gateway (the gateway's own bound
/// may be lower; larger pushes go straight to the PDS).
pub const MAX_PACK: usize = 256 << 20;

/// The gateway's URL, when one is configured for this repository.
pub fn configured() -> Option<String> {
    if let Ok(v) = std::env::var("KNOT_GATEWAY")
        && !v.trim().is_empty()
    {
        return Some(v.trim().to_owned());
    }
    git::run(&["config", "--get", "knot.gateway"])
        .ok()
        .filter(|s| s.starts_with("http://") || s.starts_with("https://"))
}

/// Whether the gateway takes this batch: every ref a plain branch update
/// or creation, and no `--atomic`, `--dry-run` or lease.
pub fn eligible(cmds: &[PushCmd], opts: &PushOptions) -> bool {
    !opts.dry_run
        && !opts.atomic
        && opts.cas.is_empty()
        && !cmds.is_empty()
        && cmds
            .iter()
            .all(|c| !c.force && c.src.is_some() && c.dst.starts_with("refs/heads/"))
}

async fn pack(positive: &str, negatives: &[String]) -> Result<Bytes> {
    let gerr = |why: String| KnotError::Git {
        cmd: "pack-objects".into(),
        why,
    };
    let mut child = tokio::process::Command::new("git")
        .args([
            "pack-objects",
            "--revs",
            "--stdout",
            "--delta-base-offset",
            "-q",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| gerr(e.to_string()))?;
    let mut input = format!("{positive}\n");
    for n in negatives {
        input.push_str(&format!("^{n}\n"));
    }
    let mut stdin = child.stdin.take().ok_or_else(|| gerr("no stdin".into()))?;
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let _ = stdin.write_all(input.as_bytes()).await;
    });
    let mut out = child
        .stdout
        .take()
        .ok_or_else(|| gerr("no stdout".into()))?;
    let mut buf = Vec::new();
    let n = (&mut out)
        .take(MAX_PACK as u64 + 1)
        .read_to_end(&mut buf)
        .await
        .map_err(|e| gerr(e.to_string()))?;
    if n > MAX_PACK {
        return Err(gerr(format!(
            "the pack passes {MAX_PACK} bytes: unset knot.gateway and push straight to the PDS"
        )));
    }
    let st = child.wait().await.map_err(|e| gerr(e.to_string()))?;
    let _ = writer.await;
    if !st.success() {
        return Err(gerr(format!("exited with {st}")));
    }
    // A pack without objects is 32 bytes (header and checksum): send none.
    if buf.len() >= 12 && buf[8..12] == [0, 0, 0, 0] {
        buf.clear();
    }
    Ok(Bytes::from(buf))
}

/// Pushes `cmds` (all [`eligible`]) through the gateway at `gateway`.
pub async fn push(
    remote: &mut Remote,
    gateway: &str,
    cmds: Vec<PushCmd>,
    opts: &PushOptions,
) -> Result<PushOutcome> {
    let _ = opts;
    let refs = match remote.state.refs.clone() {
        Some(r) => r,
        None => remote.read_refs().await?,
    };
    let targets: Vec<&str> = refs.values().map(|r| r.record.target.as_str()).collect();
    let present = git::have(&targets)?;
    let negatives: Vec<String> = targets
        .iter()
        .zip(&present)
        .filter(|(_, h)| **h)
        .map(|(t, _)| (*t).to_owned())
        .collect();
    let gw = Xrpc::new(gateway, LAND_TIMEOUT);
    let token = std::env::var("KNOT_GATEWAY_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    let mut out = PushOutcome::default();
    for c in &cmds {
        let Some(src) = &c.src else { continue };
        let new = match git::rev_parse(src) {
            Ok(o) => o,
            Err(e) => {
                out.statuses.push((c.dst.clone(), Err(e.to_string())));
                continue;
            }
        };
        if refs.get(&c.dst).map(|r| r.record.target.as_str()) == Some(new.as_str()) {
            out.statuses.push((c.dst.clone(), Ok(())));
            continue;
        }
        let body = pack(&new, &negatives).await?;
        let url = format!(
            "{}/v1/push?repo={}&ref={}&new={new}",
            gw.base(),
            encode_query(&remote.repo),
            encode_query(&c.dst)
        );
        let mut b = Request::builder().method(Method::POST).uri(&url);
        if let Some(t) = &token {
            b = b.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let req = b
            .header(header::CONTENT_TYPE, "application/x-git-packed-objects")
            .body(Full::new(body))
            .map_err(|e| KnotError::bad("gateway push", e.to_string()))?;
        let a = match gw.send("gateway push", req, 64 << 10).await {
            Ok(a) => a,
            Err(KnotError::Xrpc { error, message, .. }) => {
                let why: String = format!("gateway {error}: {message}")
                    .chars()
                    .take(300)
                    .filter(|c| !c.is_control())
                    .collect();
                out.statuses.push((c.dst.clone(), Err(why)));
                continue;
            }
            Err(e) => return Err(e),
        };
        let v: Value = serde_json::from_slice(&a.body)
            .map_err(|e| KnotError::bad("gateway push", format!("not JSON: {e}")))?;
        match v["status"].as_str() {
            Some("landed") => {
                let landed = v["landed"].as_str().unwrap_or("");
                let rebased = v["rebased"].as_bool().unwrap_or(false);
                if rebased {
                    eprintln!(
                        "knot: gateway: {} landed as {landed} (rebased; `git pull --rebase` adopts it)",
                        c.dst
                    );
                } else {
                    eprintln!("knot: gateway: {} landed as {landed}", c.dst);
                }
                out.statuses.push((c.dst.clone(), Ok(())));
            }
            Some("refused") => {
                let why: String = v["why"]
                    .as_str()
                    .unwrap_or("refused")
                    .chars()
                    .take(200)
                    .filter(|c| !c.is_control())
                    .collect();
                out.statuses.push((c.dst.clone(), Err(why)));
            }
            _ => return Err(KnotError::bad("gateway push", "no status in the answer")),
        }
    }
    // The gateway wrote the records: the cached ones are stale.
    remote.state.refs = None;
    Ok(out)
}
