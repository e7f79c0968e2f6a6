//! The permissioned-data state of atpds: the `space` crate's store on the
//! same SQLite file, the two envelopes (E2 signing with the account keys
//! the store holds, E4 decapsulating with the host's P-256 KEM key), and
//! space credentials.
//!
//! A space credential (`com.atproto.space.getSpaceCredential`) lets a
//! reader fetch one space's records without a session: it names the
//! reader's DID, the space and an expiry, and is MACed with the host's
//! credential key (`v1.<base64url payload>.<base64url HMAC-SHA256>`,
//! payload `did \n space \n exp`). It is presented as
//! `Authorization: Atproto-Space-Credential <token>`; a credential for
//! another space, an expired one or a forged one is refused, and the
//! reader's access is checked again at each use (a removed member's
//! credential stops working at once). E2 bound credentials to DPoP and E4
//! to a P-256 key with an HTTP message signature; neither binding is
//! implemented here (the token is a bearer credential, documented in
//! `docs/design/space.md`).
//!
//! Secrets (`DB.space-secret`, mode 0600, created on first start): two hex
//! lines, `credential <32 bytes>` and `kem <32 bytes>`.

use std::path::Path;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use space::envelope::kem::KemKey;
use space::envelope::{E2, E4};
use space::{SpaceError, SpaceRef, SpaceStore};
use store::Store;

use crate::error::XrpcError;

/// Longest credential accepted (bytes).
pub const MAX_CREDENTIAL: usize = 2048;
/// A credential's lifetime.
pub const CREDENTIAL_TTL_SECS: i64 = 3600;

/// Signs E2 commits with the account key the store holds.
struct StoreSigner(Arc<Store>);

impl space::commit::Signer for StoreSigner {
    fn sign_as(&self, did: &str, msg: &[u8]) -> space::Result<[u8; 64]> {
        match self.0.sign_as(did, msg) {
            Ok(Some(sig)) => Ok(sig),
            Ok(None) => Err(SpaceError::NoSigningKey(did.to_owned())),
            Err(e) => Err(SpaceError::Corrupt(format!("signing key of {did}: {e}"))),
        }
    }
}

/// The spaces of one server.
pub struct Spaces {
    /// The space tables.
    pub store: Arc<SpaceStore>,
    /// E2 envelope.
    pub e2: E2,
    /// E4 envelope.
    pub e4: E4,
    /// The host KEM key (its did:key is the `#atproto_kem` key).
    pub kem: Arc<KemKey>,
    credential_key: [u8; 32],
}

fn hex32(s: &str) -> Option<[u8; 32]> {
    let v = data_encoding::HEXLOWER.decode(s.trim().as_bytes()).ok()?;
    v.try_into().ok()
}

fn load_or_create(path: &Path) -> Result<([u8; 32], [u8; 32]), String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let mut cred = None;
        let mut kem = None;
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("credential", h)) => cred = hex32(h),
                Some(("kem", h)) => kem = hex32(h),
                _ => {}
            }
        }
        return match (cred, kem) {
            (Some(c), Some(k)) => Ok((c, k)),
            _ => Err(format!(
                "{}: not two hex lines `credential`, `kem`",
                path.display()
            )),
        };
    }
    let mut cred = [0u8; 32];
    getrandom::fill(&mut cred).map_err(|e| e.to_string())?;
    // A P-256 secret scalar: draw until one is in range.
    let mut kem_bytes = [0u8; 32];
    loop {
        getrandom::fill(&mut kem_bytes).map_err(|e| e.to_string())?;
        if KemKey::from_bytes(&kem_bytes).is_ok() {
            break;
        }
    }
    let text = format!(
        "credential {}\nkem {}\n",
        data_encoding::HEXLOWER.encode(&cred),
        data_encoding::HEXLOWER.encode(&kem_bytes)
    );
    write_private(path, &text)?;
    Ok((cred, kem_bytes))
}

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

impl Spaces {
    /// Opens the space tables on the store's file and the secrets beside
    /// it.
    pub fn open(db: &Path, store: Arc<Store>, durable: bool) -> Result<Spaces, String> {
        let (credential_key, kem) = load_or_create(&secret_path(db))?;
        let kem = Arc::new(KemKey::from_bytes(&kem).map_err(|e| e.to_string())?);
        let config = space::Config {
            durable,
            // The store's checkpointer owns the WAL.
            autocheckpoint: false,
            ..space::Config::default()
        };
        let spaces = SpaceStore::open(db, config).map_err(|e| format!("space tables: {e}"))?;
        Ok(Spaces {
            store: Arc::new(spaces),
            e2: E2::new(Arc::new(StoreSigner(store))),
            e4: E4::new(kem.clone()),
            kem,
            credential_key,
        })
    }

    fn mac(&self, payload: &[u8]) -> [u8; 32] {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.credential_key)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        m.update(payload);
        m.finalize().into_bytes().into()
    }

    /// A credential for `did` to read `space` until `now + TTL`.
    pub fn mint(&self, did: &str, space: &SpaceRef, now: i64) -> (String, i64) {
        let exp = now + CREDENTIAL_TTL_SECS;
        let payload = format!("{did}\n{}\n{exp}", space.to_uri());
        let b64 = data_encoding::BASE64URL_NOPAD;
        let token = format!(
            "v1.{}.{}",
            b64.encode(payload.as_bytes()),
            b64.encode(&self.mac(payload.as_bytes()))
        );
        (token, exp)
    }

    /// The DID a credential names, if it is genuine, unexpired and for
    /// `space`.
    pub fn verify(&self, token: &str, space: &SpaceRef, now: i64) -> Result<String, XrpcError> {
        let bad =
            |m: &str| XrpcError::new(http::StatusCode::UNAUTHORIZED, "InvalidToken", m.to_owned());
        if token.len() > MAX_CREDENTIAL {
            return Err(bad("Space credential too long"));
        }
        let b64 = data_encoding::BASE64URL_NOPAD;
        let mut parts = token.split('.');
        let (Some("v1"), Some(p), Some(m), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad("Malformed space credential"));
        };
        let payload = b64
            .decode(p.as_bytes())
            .map_err(|_| bad("Malformed space credential"))?;
        let mac = b64
            .decode(m.as_bytes())
            .map_err(|_| bad("Malformed space credential"))?;
        let mut h = <Hmac<Sha256> as Mac>::new_from_slice(&self.credential_key)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        h.update(&payload);
        h.verify_slice(&mac)
            .map_err(|_| bad("Space credential does not verify"))?;
        let text = String::from_utf8(payload).map_err(|_| bad("Malformed space credential"))?;
        let mut f = text.split('\n');
        let (Some(did), Some(sp), Some(exp), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad("Malformed space credential"));
        };
        if sp != space.to_uri() {
            return Err(XrpcError::new(
                http::StatusCode::FORBIDDEN,
                "InvalidToken",
                "Space credential is for another space",
            ));
        }
        let exp: i64 = exp.parse().map_err(|_| bad("Malformed space credential"))?;
        if exp <= now {
            return Err(XrpcError::new(
                http::StatusCode::UNAUTHORIZED,
                "ExpiredToken",
                "Space credential expired",
            ));
        }
        Ok(did.to_owned())
    }
}

/// A space error in the lexicon's shape.
pub fn xrpc_error(e: SpaceError) -> XrpcError {
    use http::StatusCode as S;
    let status = match &e {
        SpaceError::Forbidden(_) => S::FORBIDDEN,
        SpaceError::NoSigningKey(_)
        | SpaceError::Corrupt(_)
        | SpaceError::Sqlite(_)
        | SpaceError::Column(_)
        | SpaceError::Io(_) => S::INTERNAL_SERVER_ERROR,
        _ => S::BAD_REQUEST,
    };
    XrpcError::new(status, e.lexicon_name(), e.to_string())
}

/// `<db>.space-secret`, beside the store's file (as `app::beside` names the
/// server's other files; not imported, so this module stays a leaf of `app`).
fn secret_path(db: &std::path::Path) -> std::path::PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".space-secret");
    std::path::PathBuf::from(name)
}
