//! Service-auth tokens: ES256K JWTs an account's repository key signs
//! (`com.atproto.server.getServiceAuth`, and the proxied calls of
//! `proxy.rs`), which another atproto service checks against the
//! `#atproto` key of the account's DID document.
//!
//! Header `{"typ":"JWT","alg":"ES256K"}`; claims `iat`, `iss` (the
//! account's DID), `aud` (the service's DID), `exp`, `lxm` (the method the
//! token is bound to, if any) and `jti` (16 random bytes, hex). The
//! signature is the compact low-S `r || s` of SHA-256 over
//! `header.payload`, base64url: the secret key never leaves the store
//! ([`store::Store::sign_as`]).

use crate::error::{XResult, XrpcError};

const B64: data_encoding::Encoding = data_encoding::BASE64URL_NOPAD;

/// Default lifetime when the caller names none (the lexicon's 60 s).
pub const DEFAULT_TTL: i64 = 60;

/// What a token says.
pub struct ServiceClaims<'a> {
    /// The account's DID.
    pub iss: &'a str,
    /// The service's DID (may carry a `#service` fragment).
    pub aud: &'a str,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// The method it is bound to.
    pub lxm: Option<&'a str>,
}

/// Signs a token for `c` with `iss`'s repository key; 400 `InvalidRequest`
/// when the store holds no key for it.
pub fn sign(store: &store::Store, c: &ServiceClaims<'_>) -> XResult<String> {
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).map_err(XrpcError::fault)?;
    let mut payload = serde_json::json!({
        "iat": crate::auth::now(),
        "iss": c.iss,
        "aud": c.aud,
        "exp": c.exp,
        "jti": data_encoding::HEXLOWER.encode(&jti),
    });
    if let Some(lxm) = c.lxm {
        payload["lxm"] = lxm.into();
    }
    let mut out = B64.encode(br#"{"typ":"JWT","alg":"ES256K"}"#);
    out.push('.');
    out.push_str(&B64.encode(payload.to_string().as_bytes()));
    let sig = store
        .sign_as(c.iss, out.as_bytes())?
        .ok_or_else(|| XrpcError::invalid(format!("no signing key for {}", c.iss)))?;
    out.push('.');
    out.push_str(&B64.encode(&sig));
    Ok(out)
}
