//! did:plc genesis operations: built and signed locally, the DID derived
//! from them, and submitted to a PLC directory when one is configured.
//!
//! The rules (did-method-plc): the operation is a map `{type:
//! "plc_operation", rotationKeys, verificationMethods, alsoKnownAs,
//! services, prev: null}`; its signature is a low-S secp256k1 ECDSA
//! signature over the SHA-256 of the unsigned operation's DAG-CBOR, in
//! base64url without padding, added as `sig`; the DID is `did:plc:` and the
//! first 24 characters of the lower-case base32 (no padding) SHA-256 of the
//! signed operation's DAG-CBOR. A directory recomputes all of it, so the
//! DID of a submitted operation is exactly the one computed here.
//!
//! The rotation key is the server's (kept in the secret file), the
//! `atproto` verification method is the repository's signing key.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use repo::cbor::{Map, Value};
use repo::crypto::Keypair;
use sha2::{Digest, Sha256};

/// A signed genesis operation and its DID.
pub struct Genesis {
    /// `did:plc:...`.
    pub did: String,
    /// The signed operation as JSON (what a directory accepts).
    pub json: serde_json::Value,
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

/// Builds and signs the genesis operation of a new account.
pub fn genesis(rotation: &Keypair, signing: &Keypair, handle: &str, endpoint: &str) -> Genesis {
    let rotation_key = rotation.public_key().to_did_key();
    let signing_key = signing.public_key().to_did_key();
    let aka = format!("at://{handle}");
    let mut op = match map(vec![
        ("type", text("plc_operation")),
        ("rotationKeys", Value::List(vec![text(&rotation_key)])),
        (
            "verificationMethods",
            map(vec![("atproto", text(&signing_key))]),
        ),
        ("alsoKnownAs", Value::List(vec![text(&aka)])),
        (
            "services",
            map(vec![(
                "atproto_pds",
                map(vec![
                    ("type", text("AtprotoPersonalDataServer")),
                    ("endpoint", text(endpoint)),
                ]),
            )]),
        ),
        ("prev", Value::Null),
    ]) {
        Value::Map(m) => m,
        _ => Map::new(),
    };
    let unsigned = repo::cbor::to_vec(&Value::Map(op.clone()));
    let sig = data_encoding::BASE64URL_NOPAD.encode(&rotation.sign(&unsigned));
    op.insert("sig", text(&sig));
    let signed = repo::cbor::to_vec(&Value::Map(op));
    let hash = Sha256::digest(&signed);
    let b32 = data_encoding::BASE32_NOPAD
        .encode(&hash)
        .to_ascii_lowercase();
    let did = format!("did:plc:{}", &b32[..24]);
    let json = serde_json::json!({
        "type": "plc_operation",
        "rotationKeys": [rotation_key],
        "verificationMethods": {"atproto": signing_key},
        "alsoKnownAs": [aka],
        "services": {"atproto_pds": {"type": "AtprotoPersonalDataServer", "endpoint": endpoint}},
        "prev": null,
        "sig": sig,
    });
    Genesis { did, json }
}

/// Why a submission failed.
#[derive(Debug, thiserror::Error)]
pub enum PlcError {
    /// The directory URL is not `http://host[:port][/path]`.
    #[error("PLC URL {0:?}: only http://host[:port] directories are supported")]
    Url(String),
    /// Connecting or talking to it.
    #[error("PLC directory: {0}")]
    Io(String),
    /// It refused the operation.
    #[error("PLC directory answered {status}: {body}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// Its body.
        body: String,
    },
}

/// POSTs the signed operation to `<plc_url>/<did>`.
pub async fn submit(plc_url: &str, g: &Genesis) -> Result<(), PlcError> {
    let rest = plc_url
        .strip_prefix("http://")
        .ok_or_else(|| PlcError::Url(plc_url.to_owned()))?;
    let (authority, base) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return Err(PlcError::Url(plc_url.to_owned()));
    }
    let addr = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let io = |e: &dyn std::fmt::Display| PlcError::Io(e.to_string());
    let work = async {
        let stream = tokio::net::TcpStream::connect(&addr)
            .await
            .map_err(|e| io(&e))?;
        let (mut send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| io(&e))?;
        tokio::spawn(conn);
        let req = http::Request::post(format!("{base}/{}", g.did))
            .header(http::header::HOST, authority)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(g.json.to_string())))
            .map_err(|e| io(&e))?;
        let resp = send.send_request(req).await.map_err(|e| io(&e))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| io(&e))?
            .to_bytes();
        if status.is_success() {
            Ok(())
        } else {
            Err(PlcError::Refused {
                status: status.as_u16(),
                body: String::from_utf8_lossy(&body).chars().take(500).collect(),
            })
        }
    };
    tokio::time::timeout(Duration::from_secs(10), work)
        .await
        .map_err(|_| PlcError::Io("timed out".into()))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use repo::crypto::Algorithm;

    #[test]
    fn genesis_did_is_the_hash_of_the_signed_op_and_the_signature_verifies() {
        let rot = Keypair::from_bytes(Algorithm::K256, &[7u8; 32]).unwrap();
        let sig = Keypair::from_bytes(Algorithm::K256, &[9u8; 32]).unwrap();
        let g = genesis(&rot, &sig, "alice.test", "http://127.0.0.1:2583");
        assert!(g.did.starts_with("did:plc:"));
        assert_eq!(g.did.len(), 8 + 24);
        // Re-encode the JSON form: the same DID comes out.
        let v = repo::cbor::json::from_json_value(&g.json).unwrap();
        let signed = repo::cbor::to_vec(&v);
        let b32 = data_encoding::BASE32_NOPAD
            .encode(&Sha256::digest(&signed))
            .to_ascii_lowercase();
        assert_eq!(&g.did[8..], &b32[..24]);
        // The signature is over the op without `sig`.
        let Value::Map(mut m) = v else { panic!() };
        let Some(Value::Text(s)) = m.remove("sig") else {
            panic!()
        };
        let raw = data_encoding::BASE64URL_NOPAD.decode(s.as_bytes()).unwrap();
        rot.public_key()
            .verify(&repo::cbor::to_vec(&Value::Map(m)), &raw)
            .unwrap();
        // Deterministic: same keys, same DID.
        let again = genesis(&rot, &sig, "alice.test", "http://127.0.0.1:2583");
        assert_eq!(again.did, g.did);
    }
}
