//! Resolving an `at://` remote's account to its DID and PDS:
//! - handle to DID: `com.atproto.identity.resolveHandle` on the service
//!   `KNOT_HANDLE_RESOLVER` names when set (atpds answers it for its own
//!   accounts), else the DNS TXT record `_atproto.<handle>` (`did=<did>`,
//!   [`crate::dns`], resolver from `KNOT_DNS_RESOLVER` or
//!   `/etc/resolv.conf`), else `https://<handle>/.well-known/atproto-did`
//!   (the handle spec's two methods, DNS first);
//! - DID to document: `did:plc` from `KNOT_PLC_URL` (default
//!   `https://plc.directory`), `did:web` from
//!   `https://<host>/.well-known/did.json` (`http` for `localhost` and
//!   loopback hosts);
//! - the document's `#atproto_pds` service endpoint is the PDS.
//!
//! The result is cached with the warm state; a remote naming its PDS
//! (`at+http://`) skips all of this.

use crate::client::Xrpc;
use crate::error::{KnotError, Result};
use crate::url::check_account;

const DOC_LIMIT: usize = 256 << 10;

fn err(what: &str, why: impl Into<String>) -> KnotError {
    KnotError::Resolve {
        what: what.to_owned(),
        why: why.into(),
    }
}

fn scheme_for(host: &str) -> &'static str {
    let h = host.rsplit_once(':').map_or(host, |(h, _)| h);
    if h == "localhost"
        || h.ends_with(".localhost")
        || h.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
    {
        "http"
    } else {
        "https"
    }
}

/// The DID of `handle`.
pub async fn resolve_handle(http: &Xrpc, handle: &str) -> Result<String> {
    let did = if let Ok(svc) = std::env::var("KNOT_HANDLE_RESOLVER") {
        let r = Xrpc::new(&svc, std::time::Duration::from_secs(30));
        let v = r
            .query(
                "com.atproto.identity.resolveHandle",
                &[("handle", handle)],
                None,
            )
            .await
            .map_err(|e| err(handle, e.to_string()))?;
        v["did"]
            .as_str()
            .ok_or_else(|| err(handle, "resolveHandle gave no did"))?
            .to_owned()
    } else {
        // DNS first (one datagram each way), then HTTPS: either method
        // may hold the handle.
        let by_dns = match crate::dns::resolver() {
            Some(server) => match crate::dns::txt(server, &format!("_atproto.{handle}")).await {
                Ok(recs) => crate::dns::did_of(&recs),
                Err(e) => {
                    crate::trace::mark(&format!("dns: _atproto.{handle}: {e}"), None);
                    None
                }
            },
            None => None,
        };
        match by_dns {
            Some(d) => d,
            None => {
                let url = format!("{}://{handle}/.well-known/atproto-did", scheme_for(handle));
                let body = http.get_url(&url, 2048).await.map_err(|e| {
                    err(
                        handle,
                        format!("no _atproto TXT record with one did=, and {e}"),
                    )
                })?;
                String::from_utf8_lossy(&body).trim().to_owned()
            }
        }
    };
    if !did.starts_with("did:") || check_account(&did).is_err() {
        return Err(err(handle, format!("{did:?} is not a DID")));
    }
    Ok(did)
}

/// The PDS endpoint in a DID document.
pub fn pds_of(did: &str, doc: &serde_json::Value) -> Result<String> {
    let services = doc["service"]
        .as_array()
        .ok_or_else(|| err(did, "DID document without services"))?;
    for s in services {
        let id = s["id"].as_str().unwrap_or("");
        if (id == "#atproto_pds" || id.ends_with("#atproto_pds"))
            && s["type"].as_str() == Some("AtprotoPersonalDataServer")
            && let Some(ep) = s["serviceEndpoint"].as_str()
        {
            if !(ep.starts_with("https://") || ep.starts_with("http://")) {
                return Err(err(did, format!("PDS endpoint {ep:?} is not an HTTP URL")));
            }
            return Ok(ep.trim_end_matches('/').to_owned());
        }
    }
    Err(err(did, "DID document names no #atproto_pds service"))
}

/// The DID document of `did`.
pub async fn did_doc(http: &Xrpc, did: &str) -> Result<serde_json::Value> {
    let url = if did.starts_with("did:plc:") {
        let base = std::env::var("KNOT_PLC_URL").unwrap_or_else(|_| "https://plc.directory".into());
        format!("{}/{did}", base.trim_end_matches('/'))
    } else if let Some(host) = did.strip_prefix("did:web:") {
        if host.contains(':') && !host.contains("%3A") {
            return Err(err(did, "did:web with a path is not supported"));
        }
        let host = host.replace("%3A", ":");
        format!("{}://{host}/.well-known/did.json", scheme_for(&host))
    } else {
        return Err(err(did, "only did:plc and did:web are resolved"));
    };
    let body = http
        .get_url(&url, DOC_LIMIT)
        .await
        .map_err(|e| err(did, e.to_string()))?;
    let doc: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| err(did, format!("DID document is not JSON: {e}")))?;
    if doc["id"].as_str() != Some(did) {
        return Err(err(did, "the DID document is another DID's"));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pds_endpoint() {
        let doc = json!({"id": "did:plc:x", "service": [{"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": "https://pds.example/"}]});
        assert_eq!(pds_of("did:plc:x", &doc).unwrap(), "https://pds.example");
        assert!(pds_of("did:plc:x", &json!({"service": []})).is_err());
        assert!(pds_of("did:plc:x", &json!({"service": [{"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": "ftp://x"}]})).is_err());
        assert_eq!(scheme_for("localhost:2583"), "http");
        assert_eq!(scheme_for("127.0.0.1:80"), "http");
        assert_eq!(scheme_for("bsky.social"), "https");
    }
}
