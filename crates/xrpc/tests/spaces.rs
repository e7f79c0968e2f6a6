//! `com.atproto.space.*` over real HTTP: management by the authority,
//! writes into one's own repo, reads by members with read access or by a
//! space credential of this space, refusals in the lexicon's error shape,
//! getBlob with Range only for blobs a record of the space references, and
//! both eras' getRepo and commits. The public repo is untouched.

mod support;

use bytes::Bytes;
use http::Method;
use serde_json::{Value, json};
use support::start;

fn q(s: &str) -> String {
    s.replace(':', "%3A").replace('/', "%2F")
}

#[tokio::test]
async fn spaces_end_to_end() {
    let s = start();
    let (owner, owner_t, _) = s.account("owner.test").await;
    let (writer, writer_t, _) = s.account("writer.test").await;
    let (reader, reader_t, _) = s.account("reader.test").await;
    let (blind, blind_t, _) = s.account("blind.test").await;
    let (_, outsider_t, _) = s.account("outsider.test").await;

    let create = |name: &str| {
        json!({"type": "app.example.group", "skey": name,
        "policy": {"$type": "com.atproto.simplespace.defs#memberListPolicy"}})
    };
    let sp = s
        .post(
            "/xrpc/com.atproto.simplespace.createSpace",
            Some(&owner_t),
            &create("self"),
        )
        .await
        .ok_json()["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(sp, format!("at://{owner}/space/app.example.group/self"));
    s.post(
        "/xrpc/com.atproto.simplespace.createSpace",
        Some(&owner_t),
        &create("self"),
    )
    .await
    .expect_error(400, "SpaceAlreadyExists");
    s.post("/xrpc/com.atproto.simplespace.createSpace", Some(&owner_t),
        &json!({"type": "app.example.group", "policy": {"$type": "com.atproto.simplespace.defs#managingAppPolicy"}})).await
        .expect_error(400, "UnsupportedPolicy");
    let other = s
        .post(
            "/xrpc/com.atproto.simplespace.createSpace",
            Some(&owner_t),
            &create("other"),
        )
        .await
        .ok_json()["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    for (did, read, write) in [
        (&writer, true, true),
        (&reader, true, false),
        (&blind, false, true),
    ] {
        s.post(
            "/xrpc/com.atproto.simplespace.addMember",
            Some(&owner_t),
            &json!({"space": sp, "did": did, "read": read, "write": write}),
        )
        .await
        .ok_json();
    }
    // Only the authority manages.
    s.post(
        "/xrpc/com.atproto.simplespace.addMember",
        Some(&writer_t),
        &json!({"space": sp, "did": writer}),
    )
    .await
    .expect_error(403, "Forbidden");

    // A blob, uploaded the ordinary way, referenced by a space record.
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let up = s
        .request(
            Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[
                ("authorization", &format!("Bearer {writer_t}")),
                ("content-type", "application/octet-stream"),
            ],
            Bytes::from(bytes.clone()),
        )
        .await
        .ok_json();
    let blob = up["blob"].clone();
    let blob_cid = blob["ref"]["$link"].as_str().unwrap().to_owned();
    let rec = json!({"space": sp, "repo": writer, "collection": "app.example.post", "rkey": "one",
        "record": {"$type": "app.example.post", "text": "hello", "image": blob}});
    let made = s
        .post(
            "/xrpc/com.atproto.space.createRecord",
            Some(&writer_t),
            &rec,
        )
        .await
        .ok_json();
    assert_eq!(made["uri"], format!("{sp}/{writer}/app.example.post/one"));
    s.post(
        "/xrpc/com.atproto.space.createRecord",
        Some(&writer_t),
        &rec,
    )
    .await
    .expect_error(400, "RecordAlreadyExists");
    // Nobody writes into another's repo; a read-only member writes nothing.
    let mut theirs = rec.clone();
    theirs["rkey"] = json!("two");
    s.post(
        "/xrpc/com.atproto.space.createRecord",
        Some(&owner_t),
        &theirs,
    )
    .await
    .expect_error(403, "Forbidden");
    let mut own = theirs.clone();
    own["repo"] = json!(reader);
    s.post(
        "/xrpc/com.atproto.space.createRecord",
        Some(&reader_t),
        &own,
    )
    .await
    .expect_error(403, "Forbidden");
    s.post("/xrpc/com.atproto.space.createRecord", None, &theirs)
        .await
        .expect_error(401, "AuthRequired");

    let get = format!(
        "/xrpc/com.atproto.space.getRecord?space={}&repo={writer}&collection=app.example.post&rkey=one",
        q(&sp)
    );
    let got = s.get_auth(&get, &reader_t).await.ok_json();
    assert_eq!(got["value"]["text"], "hello");
    assert_eq!(got["cid"], made["cid"]);
    s.get_auth(&get, &blind_t)
        .await
        .expect_error(403, "Forbidden");
    s.get_auth(&get, &outsider_t)
        .await
        .expect_error(403, "Forbidden");
    s.get(&get).await.expect_error(401, "AuthRequired");
    let missing = get.replace("rkey=one", "rkey=nope");
    s.get_auth(&missing, &reader_t)
        .await
        .expect_error(400, "RecordNotFound");

    // A space credential: good for its space, refused for another.
    let cred = s
        .post(
            "/xrpc/com.atproto.space.getSpaceCredential",
            Some(&reader_t),
            &json!({"space": sp}),
        )
        .await
        .ok_json()["credential"]
        .as_str()
        .unwrap()
        .to_owned();
    let cred_h = format!("Atproto-Space-Credential {cred}");
    let h = [("authorization", cred_h.as_str())];
    assert_eq!(
        s.request(Method::GET, &get, &h, Bytes::new())
            .await
            .ok_json()["value"]["text"],
        "hello"
    );
    let other_get = format!(
        "/xrpc/com.atproto.space.listRecords?space={}&repo={owner}",
        q(&other)
    );
    s.request(Method::GET, &other_get, &h, Bytes::new())
        .await
        .expect_error(403, "InvalidToken");
    let forged = format!("Atproto-Space-Credential {}x", cred);
    s.request(
        Method::GET,
        &get,
        &[("authorization", &forged)],
        Bytes::new(),
    )
    .await
    .expect_error(401, "InvalidToken");
    s.post(
        "/xrpc/com.atproto.space.getSpaceCredential",
        Some(&blind_t),
        &json!({"space": sp}),
    )
    .await
    .expect_error(403, "Forbidden");

    // listRecords, listRepoOps (commit on the last page only), getLatestCommit.
    s.post("/xrpc/com.atproto.space.putRecord", Some(&writer_t), &json!({"space": sp, "repo": writer,
        "collection": "app.example.post", "rkey": "two", "record": {"$type": "app.example.post", "text": "two"}})).await.ok_json();
    let list = s
        .get_auth(
            &format!(
                "/xrpc/com.atproto.space.listRecords?space={}&repo={writer}",
                q(&sp)
            ),
            &reader_t,
        )
        .await
        .ok_json();
    let rkeys: Vec<&str> = list["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rkey"].as_str().unwrap())
        .collect();
    assert_eq!(rkeys, ["two", "one"]);
    let ops_url = format!(
        "/xrpc/com.atproto.space.listRepoOps?space={}&repo={writer}",
        q(&sp)
    );
    let p1 = s
        .get_auth(&format!("{ops_url}&limit=1"), &reader_t)
        .await
        .ok_json();
    assert!(p1["commit"].is_null() && p1["cursor"].is_string(), "{p1}");
    let p2 = s
        .get_auth(
            &format!(
                "{ops_url}&limit=5&cursor={}",
                q(p1["cursor"].as_str().unwrap())
            ),
            &reader_t,
        )
        .await
        .ok_json();
    assert!(p2["cursor"].is_null(), "{p2}");
    assert_eq!(p2["ops"][0]["rkey"], "two");
    let commit = &p2["commit"];
    assert!(
        commit["sig"]["$bytes"].is_string() && commit["ikm"]["$bytes"].is_string(),
        "E2 signed commit: {commit}"
    );
    let latest = s
        .get_auth(
            &format!(
                "/xrpc/com.atproto.space.getLatestCommit?space={}&repo={writer}",
                q(&sp)
            ),
            &reader_t,
        )
        .await
        .ok_json();
    assert_eq!(latest["commit"]["rev"], commit["rev"]);
    assert_eq!(latest["commit"]["hash"], commit["hash"]);

    // getRepo: E2 CAR by default.
    let repo_url = format!(
        "/xrpc/com.atproto.space.getRepo?space={}&repo={writer}",
        q(&sp)
    );
    let car = s.get_auth(&repo_url, &reader_t).await;
    assert_eq!(car.status, 200);
    assert_eq!(car.headers["content-type"], "application/vnd.ipld.car");
    let reader_car = repo::car::CarReader::new(&car.body[..]).unwrap();
    assert_eq!(reader_car.roots().len(), 2);
    assert_eq!(reader_car.count(), 4, "commit, index, two records");
    // E4 STAR with a KEM key share to the host's #atproto_kem key.
    let doc = s.get("/.well-known/did.json").await.ok_json();
    let kem = doc["verificationMethod"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "#atproto_kem")
        .unwrap()
        .clone();
    let host =
        match repo::crypto::PublicKey::from_multikey(kem["publicKeyMultibase"].as_str().unwrap())
            .unwrap()
        {
            repo::crypto::PublicKey::P256(vk) => p256::PublicKey::from(vk),
            _ => panic!("KEM key is not P-256"),
        };
    let (share, secret) = space::envelope::kem::encapsulate(&host).unwrap();
    let mac_req = format!("profile=commit;key-share=\"{share}\"");
    let star = s
        .request(
            Method::GET,
            &repo_url,
            &[
                ("authorization", &format!("Bearer {reader_t}")),
                ("accept", "application/vnd.dasl.star"),
                ("atproto-space-mac", &mac_req),
            ],
            Bytes::new(),
        )
        .await;
    assert_eq!(
        star.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&star.body)
    );
    let parsed = space::star::parse(&star.body).unwrap();
    assert_eq!(parsed.entries.len(), 2);
    let meta = repo::cbor::decode_owned(parsed.meta).unwrap();
    let want = space::envelope::mac(
        &secret,
        "commit",
        &share,
        &[&repo::cbor::to_vec(meta.get("commit").unwrap())],
    );
    let header = star.headers["atproto-space-mac"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        header,
        format!(
            "profile=commit;mac=:{}:",
            data_encoding::BASE64.encode(&want)
        )
    );

    // getBlob: Range within a referenced blob; 416 past its end; an
    // unreferenced blob is not served.
    let blob_url = format!(
        "/xrpc/com.atproto.space.getBlob?space={}&repo={writer}&cid={blob_cid}",
        q(&sp)
    );
    let auth = format!("Bearer {reader_t}");
    let part = s
        .request(
            Method::GET,
            &blob_url,
            &[("authorization", &auth), ("range", "bytes=100-199")],
            Bytes::new(),
        )
        .await;
    assert_eq!(part.status, 206);
    assert_eq!(&part.body[..], &bytes[100..200]);
    assert_eq!(part.headers["content-range"], "bytes 100-199/5000");
    let whole = s.get_auth(&blob_url, &reader_t).await;
    assert_eq!((whole.status.as_u16(), whole.body.len()), (200, 5000));
    let past = s
        .request(
            Method::GET,
            &blob_url,
            &[("authorization", &auth), ("range", "bytes=9000-9001")],
            Bytes::new(),
        )
        .await;
    assert_eq!(past.status, 416);
    s.get_auth(&blob_url, &blind_t)
        .await
        .expect_error(403, "Forbidden");
    let up2 = s
        .request(
            Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[
                ("authorization", &format!("Bearer {writer_t}")),
                ("content-type", "application/octet-stream"),
            ],
            Bytes::from_static(b"not referenced"),
        )
        .await
        .ok_json();
    let loose = blob_url.replace(&blob_cid, up2["blob"]["ref"]["$link"].as_str().unwrap());
    s.get_auth(&loose, &reader_t)
        .await
        .expect_error(400, "BlobNotFound");

    // The public repo never sees space records.
    let public: Value = s
        .get(&format!(
            "/xrpc/com.atproto.repo.listRecords?repo={writer}&collection=app.example.post"
        ))
        .await
        .ok_json();
    assert_eq!(public["records"], json!([]));
    // deleteRecord is idempotent.
    for _ in 0..2 {
        s.post(
            "/xrpc/com.atproto.space.deleteRecord",
            Some(&writer_t),
            &json!({"space": sp, "repo": writer,
            "collection": "app.example.post", "rkey": "two"}),
        )
        .await
        .ok_json();
    }
}
