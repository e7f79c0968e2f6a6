//! Sessions: HS256 JWTs, as the reference PDS issues them.
//!
//! An access token (`typ: at+jwt`, scope `com.atproto.access`) is checked
//! by signature, scope and expiry alone, so a read of the session is one
//! HMAC and no lookup. A refresh token (`typ: refresh+jwt`, scope
//! `com.atproto.refresh`) also carries a `jti` that must be live in the
//! account file: `refreshSession` deletes it and issues a new pair
//! (rotation), `deleteSession` deletes it.
//!
//! The key is 32 random bytes in the secret file beside the store
//! (`DB.secret`, see `app.rs`), so tokens survive a restart.
//!
//! Refusals: no token is 401 `AuthRequired`; a token that does not verify
//! (bad signature, malformed, wrong scope) is 401 `AuthRequired` too (the
//! spec's rule: no valid access token); an expired one is 400
//! `ExpiredToken`, the status the reference PDS answers with and on which
//! `@atproto/api` refreshes the session. A refused login is another name
//! (`AuthenticationRequired`, the reference's; see `error.rs`).

use hmac::{Hmac, Mac};
use http::StatusCode;
use sha2::Sha256;

use crate::error::{XResult, XrpcError};

const ACCESS_SCOPE: &str = "com.atproto.access";
const REFRESH_SCOPE: &str = "com.atproto.refresh";
/// A session made with an app password (`app_passwords.rs`).
const APP_PASS_SCOPE: &str = "com.atproto.appPass";
/// A session made with a privileged app password.
const APP_PASS_PRIVILEGED_SCOPE: &str = "com.atproto.appPassPrivileged";
const B64: data_encoding::Encoding = data_encoding::BASE64URL_NOPAD;

/// Which kind of token a route wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// An access token: the account password's or an app password's.
    Access,
    /// An access token of the account password only (managing app
    /// passwords: the reference's `accessFull`).
    Full,
    /// A refresh token.
    Refresh,
}

/// What a session was made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant<'a> {
    /// The account password.
    Full,
    /// An app password: its id (`app_passwords.rs`) and whether it is
    /// privileged.
    AppPass { id: &'a str, privileged: bool },
}

/// The claims of a verified token.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Claims {
    /// `com.atproto.access` / `com.atproto.refresh`.
    pub scope: String,
    /// The account's DID.
    pub sub: String,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Refresh tokens only: the id the account file keeps while it is live.
    #[serde(default)]
    pub jti: Option<String>,
    /// The id of the app password the session was made with, if any: the
    /// token is refused once that app password is revoked.
    #[serde(default)]
    pub apw: Option<String>,
}

impl Claims {
    /// Whether the session may use privileged methods (the account
    /// password's, or a privileged app password's).
    pub fn is_privileged(&self) -> bool {
        self.scope != APP_PASS_SCOPE
    }
}

/// Signs and checks tokens.
pub struct Tokens {
    mac: Hmac<Sha256>,
    audience: String,
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Tokens {
    /// Tokens signed with `key`, issued for `audience` (the server's DID).
    pub fn new(key: &[u8], audience: &str) -> Self {
        Tokens {
            // HMAC takes keys of any length.
            mac: Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| unreachable!()),
            audience: audience.to_owned(),
        }
    }

    fn sign(&self, header: &str, payload: &str) -> String {
        let mut out = String::with_capacity(64 + payload.len() * 4 / 3 + 48);
        out.push_str(&B64.encode(header.as_bytes()));
        out.push('.');
        out.push_str(&B64.encode(payload.as_bytes()));
        let mut mac = self.mac.clone();
        mac.update(out.as_bytes());
        let sig = mac.finalize().into_bytes();
        out.push('.');
        out.push_str(&B64.encode(&sig));
        out
    }

    /// A new access token for `did`, valid for `ttl` seconds.
    pub fn access(&self, did: &str, ttl: i64, grant: Grant<'_>) -> String {
        let iat = now();
        let mut payload = serde_json::json!({
            "scope": ACCESS_SCOPE, "sub": did, "aud": self.audience,
            "iat": iat, "exp": iat + ttl,
        });
        if let Grant::AppPass { id, privileged } = grant {
            payload["scope"] = if privileged {
                APP_PASS_PRIVILEGED_SCOPE
            } else {
                APP_PASS_SCOPE
            }
            .into();
            payload["apw"] = id.into();
        }
        self.sign(r#"{"typ":"at+jwt","alg":"HS256"}"#, &payload.to_string())
    }

    /// A new refresh token for `did` with id `jti`; returns it and its expiry.
    pub fn refresh(&self, did: &str, jti: &str, ttl: i64, grant: Grant<'_>) -> (String, i64) {
        let iat = now();
        let mut payload = serde_json::json!({
            "scope": REFRESH_SCOPE, "sub": did, "aud": self.audience,
            "jti": jti, "iat": iat, "exp": iat + ttl,
        });
        if let Grant::AppPass { id, .. } = grant {
            payload["apw"] = id.into();
        }
        (
            self.sign(
                r#"{"typ":"refresh+jwt","alg":"HS256"}"#,
                &payload.to_string(),
            ),
            iat + ttl,
        )
    }

    /// Verifies `token` for `scope`.
    pub fn verify(&self, token: &str, scope: Scope) -> XResult<Claims> {
        let bad =
            |why: &str| XrpcError::auth_required(format!("Token could not be verified: {why}"));
        let (signed, sig) = token.rsplit_once('.').ok_or_else(|| bad("malformed"))?;
        let (_, payload) = signed.split_once('.').ok_or_else(|| bad("malformed"))?;
        let sig = B64
            .decode(sig.as_bytes())
            .map_err(|_| bad("malformed signature"))?;
        let mut mac = self.mac.clone();
        mac.update(signed.as_bytes());
        mac.verify_slice(&sig).map_err(|_| bad("bad signature"))?;
        let payload = B64
            .decode(payload.as_bytes())
            .map_err(|_| bad("malformed payload"))?;
        let claims: Claims =
            serde_json::from_slice(&payload).map_err(|_| bad("malformed claims"))?;
        let fits = match scope {
            Scope::Access => {
                claims.scope == ACCESS_SCOPE
                    || claims.scope == APP_PASS_SCOPE
                    || claims.scope == APP_PASS_PRIVILEGED_SCOPE
            }
            Scope::Full => claims.scope == ACCESS_SCOPE && claims.apw.is_none(),
            Scope::Refresh => claims.scope == REFRESH_SCOPE,
        };
        if !fits {
            if scope == Scope::Full && claims.scope != REFRESH_SCOPE {
                // The reference's answer to an app-password session on an
                // `accessFull` route.
                return Err(XrpcError::new(
                    StatusCode::UNAUTHORIZED,
                    "InvalidToken",
                    "Bad token scope",
                ));
            }
            return Err(bad("wrong token type"));
        }
        if claims.exp <= now() {
            return Err(XrpcError::new(
                StatusCode::BAD_REQUEST,
                "ExpiredToken",
                "Token has expired",
            ));
        }
        Ok(claims)
    }

    /// Verifies the bearer token of a request's `authorization` header.
    pub fn check(&self, headers: &http::HeaderMap, scope: Scope) -> XResult<Claims> {
        let Some(value) = headers.get(http::header::AUTHORIZATION) else {
            return Err(XrpcError::auth_required("Authentication Required"));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| XrpcError::auth_required("Authorization is not a Bearer token"))?;
        self.verify(token.trim(), scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_for_their_scope_only() {
        let t = Tokens::new(b"k", "did:web:localhost");
        let a = t.access("did:plc:abc", 60, Grant::Full);
        assert_eq!(t.verify(&a, Scope::Access).unwrap().sub, "did:plc:abc");
        assert_eq!(t.verify(&a, Scope::Refresh).unwrap_err().status, 401);
        let (r, _) = t.refresh("did:plc:abc", "j1", 60, Grant::Full);
        let c = t.verify(&r, Scope::Refresh).unwrap();
        assert_eq!(c.jti.as_deref(), Some("j1"));
        assert!(t.verify(&r, Scope::Access).is_err());
        // Another key's token, a tampered one, garbage.
        let other = Tokens::new(b"k2", "did:web:localhost").access("did:plc:abc", 60, Grant::Full);
        assert_eq!(t.verify(&other, Scope::Access).unwrap_err().status, 401);
        let mut tampered = a.clone();
        tampered.insert(tampered.len() / 2, 'x');
        assert!(t.verify(&tampered, Scope::Access).is_err());
        assert!(t.verify("a.b", Scope::Access).is_err());
        assert!(t.verify("", Scope::Access).is_err());
    }

    #[test]
    fn expired_is_400_expired_token() {
        let t = Tokens::new(b"k", "did:web:localhost");
        let a = t.access("did:plc:abc", -5, Grant::Full);
        let e = t.verify(&a, Scope::Access).unwrap_err();
        assert_eq!((e.status.as_u16(), e.error), (400, "ExpiredToken"));
    }

    #[test]
    fn app_password_sessions_are_not_full() {
        let t = Tokens::new(b"k", "did:web:localhost");
        let grant = Grant::AppPass {
            id: "ap1",
            privileged: false,
        };
        let a = t.access("did:plc:abc", 60, grant);
        let c = t.verify(&a, Scope::Access).unwrap();
        assert_eq!(c.apw.as_deref(), Some("ap1"));
        assert!(!c.is_privileged());
        let e = t.verify(&a, Scope::Full).unwrap_err();
        assert_eq!((e.status.as_u16(), e.error), (401, "InvalidToken"));
        let p = t.access(
            "did:plc:abc",
            60,
            Grant::AppPass {
                id: "ap2",
                privileged: true,
            },
        );
        assert!(t.verify(&p, Scope::Access).unwrap().is_privileged());
        let full = t.access("did:plc:abc", 60, Grant::Full);
        assert!(t.verify(&full, Scope::Full).unwrap().apw.is_none());
        let (r, _) = t.refresh("did:plc:abc", "j", 60, grant);
        assert_eq!(
            t.verify(&r, Scope::Refresh).unwrap().apw.as_deref(),
            Some("ap1")
        );
    }

    proptest::proptest! {
        #[test]
        fn verify_never_panics(s in ".{0,200}") {
            let t = Tokens::new(b"k", "a");
            let _ = t.verify(&s, Scope::Access);
        }
    }
}
