//! Credentials and the session: an account or app password from the
//! environment (`ATPROTO_IDENTIFIER`, `ATPROTO_PASSWORD`) or a JSON file
//! (`KNOT_CREDENTIALS`, else `$XDG_CONFIG_HOME/knot/credentials.json`, else
//! `~/.config/knot/credentials.json`: `{"identifier": "...", "password":
//! "..."}`); the identifier defaults to the remote URL's account. One
//! `createSession` per process at most: the tokens are cached with the
//! warm state, an access token that expires within a minute (its JWT `exp`)
//! is refreshed with `refreshSession`, and one the server calls expired is
//! refreshed once and the call retried.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::client::Xrpc;
use crate::error::{KnotError, Result};
use crate::state::Tokens;

/// An identifier and a password.
#[derive(Clone)]
pub struct Credentials {
    /// Handle, DID or email.
    pub identifier: String,
    /// Account or app password.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({:?}, <password>)", self.identifier)
    }
}

fn credentials_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KNOT_CREDENTIALS") {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("knot").join("credentials.json"))
}

impl Credentials {
    /// From the environment, else the credentials file.
    pub fn find(default_identifier: &str) -> Result<Credentials> {
        let id = std::env::var("ATPROTO_IDENTIFIER")
            .ok()
            .filter(|s| !s.is_empty());
        if let Ok(password) = std::env::var("ATPROTO_PASSWORD")
            && !password.is_empty()
        {
            return Ok(Credentials {
                identifier: id.unwrap_or_else(|| default_identifier.to_owned()),
                password,
            });
        }
        let Some(path) = credentials_file() else {
            return Err(KnotError::Credentials(
                "set ATPROTO_PASSWORD (and ATPROTO_IDENTIFIER) or KNOT_CREDENTIALS".into(),
            ));
        };
        let text = std::fs::read(&path).map_err(|_| {
            KnotError::Credentials(format!(
                "set ATPROTO_PASSWORD (and ATPROTO_IDENTIFIER), or write {{\"identifier\",\"password\"}} to {}",
                path.display()
            ))
        })?;
        let v: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| KnotError::Credentials(format!("{}: {e}", path.display())))?;
        let password = v["password"].as_str().ok_or_else(|| {
            KnotError::Credentials(format!("{}: no \"password\"", path.display()))
        })?;
        Ok(Credentials {
            identifier: id
                .or_else(|| v["identifier"].as_str().map(str::to_owned))
                .unwrap_or_else(|| default_identifier.to_owned()),
            password: password.to_owned(),
        })
    }
}

/// The `exp` claim of a JWT (unix seconds), unverified: only used to
/// refresh before the server would refuse.
pub fn jwt_exp(jwt: &str) -> Option<u64> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = data_encoding::BASE64URL_NOPAD
        .decode(payload.trim_end_matches('=').as_bytes())
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v["exp"].as_u64()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn tokens_of(op: &str, v: &serde_json::Value) -> Result<Tokens> {
    let s = |k: &str| {
        v[k].as_str()
            .map(str::to_owned)
            .ok_or_else(|| KnotError::bad(op, format!("no {k}")))
    };
    Ok(Tokens {
        did: s("did")?,
        access: s("accessJwt")?,
        refresh: s("refreshJwt")?,
    })
}

/// Whether the access token needs a refresh before use.
pub fn stale(t: &Tokens) -> bool {
    jwt_exp(&t.access).is_some_and(|exp| exp <= now() + 60)
}

/// `createSession`.
pub async fn create(pds: &Xrpc, c: &Credentials) -> Result<Tokens> {
    const OP: &str = "com.atproto.server.createSession";
    let v = pds
        .procedure(
            OP,
            &json!({"identifier": c.identifier, "password": c.password}),
            None,
        )
        .await?;
    tokens_of(OP, &v)
}

/// `refreshSession`.
pub async fn refresh(pds: &Xrpc, t: &Tokens) -> Result<Tokens> {
    const OP: &str = "com.atproto.server.refreshSession";
    let v = pds
        .procedure(OP, &serde_json::Value::Null, Some(&t.refresh))
        .await?;
    tokens_of(OP, &v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_read() {
        let payload = data_encoding::BASE64URL_NOPAD.encode(br#"{"exp":1234,"sub":"did:x"}"#);
        assert_eq!(jwt_exp(&format!("h.{payload}.s")), Some(1234));
        assert_eq!(jwt_exp("nonsense"), None);
        assert_eq!(jwt_exp("a.!!!.c"), None);
    }
}
