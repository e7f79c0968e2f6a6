//! `/.well-known/did.json`: the server's own did:web document (its DID is
//! `did:web:<hostname>`, as `describeServer` says), naming this server as
//! the `#atproto_pds` service at its public URL, so that a client or a
//! relay resolving the server's DID finds where it answers. The same shape
//! the reference PDS serves.

use std::sync::Arc;

use http::Response;

use crate::app::App;
use crate::response::{Body, ok};

/// The document (built per request: a few hundred bytes).
pub fn did_json(app: &Arc<App>) -> Response<Body> {
    let doc = serde_json::json!({
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": format!("did:web:{}", app.config.hostname),
        "service": [{
            "id": "#atproto_pds",
            "type": "AtprotoPersonalDataServer",
            "serviceEndpoint": app.public_url,
        }],
    });
    ok(doc.to_string())
}
