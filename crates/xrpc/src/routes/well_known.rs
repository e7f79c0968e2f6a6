//! `/.well-known/did.json`: the server's own did:web document (its DID is
//! `did:web:<hostname>`, as `describeServer` says), naming this server as
//! the `#atproto_pds` service at its public URL, so that a client or a
//! relay resolving the server's DID finds where it answers. The same shape
//! the reference PDS serves. Also the OAuth discovery documents, which
//! say truthfully that no OAuth grant is supported.

use std::sync::Arc;

use http::Response;

use crate::app::App;
use crate::response::{Body, ok};

/// The document (built per request: a few hundred bytes).
pub fn did_json(app: &Arc<App>) -> Response<Body> {
    let doc = serde_json::json!({
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": format!("did:web:{}", app.config.hostname),
        // The space host's KEM key (E4 syncers encapsulate to it).
        "verificationMethod": [{
            "id": "#atproto_kem",
            "type": "Multikey",
            "controller": format!("did:web:{}", app.config.hostname),
            "publicKeyMultibase": app.spaces.kem.did_key().trim_start_matches("did:key:"),
        }],
        "service": [{
            "id": "#atproto_pds",
            "type": "AtprotoPersonalDataServer",
            "serviceEndpoint": app.public_url,
        }],
    });
    ok(doc.to_string())
}

/// `/.well-known/oauth-protected-resource` (RFC 9728): this server is
/// the resource, and names itself as its authorization server, whose
/// metadata ([`oauth_authorization_server`]) says it grants nothing: atpds
/// implements no OAuth flow, so the truthful lists are empty and clients
/// use `createSession` (bearer tokens in the `Authorization` header).
pub fn oauth_protected_resource(app: &Arc<App>) -> Response<Body> {
    let doc = serde_json::json!({
        "resource": app.public_url,
        "authorization_servers": [app.public_url],
        "scopes_supported": [],
        "bearer_methods_supported": ["header"],
        "resource_documentation": "https://atproto.com",
    });
    ok(doc.to_string())
}

/// `/.well-known/oauth-authorization-server` (RFC 8414): the issuer and
/// its JWKS location, with every grant, response type, scope and client
/// authentication list empty (none is implemented; see
/// [`oauth_protected_resource`]).
pub fn oauth_authorization_server(app: &Arc<App>) -> Response<Body> {
    let doc = serde_json::json!({
        "issuer": app.public_url,
        "jwks_uri": format!("{}/oauth/jwks", app.public_url),
        "scopes_supported": [],
        "response_types_supported": [],
        "response_modes_supported": [],
        "grant_types_supported": [],
        "token_endpoint_auth_methods_supported": [],
        "code_challenge_methods_supported": [],
        "dpop_signing_alg_values_supported": [],
        "authorization_response_iss_parameter_supported": false,
        "require_pushed_authorization_requests": false,
        "client_id_metadata_document_supported": false,
    });
    ok(doc.to_string())
}

/// `/oauth/jwks`: the authorization server's signing keys, none (it issues
/// no OAuth tokens; sessions are HS256 tokens only this server checks).
pub fn oauth_jwks() -> Response<Body> {
    ok(bytes::Bytes::from_static(b"{\"keys\":[]}"))
}
