//! Record writes and reads, blobs and the sync reads over real HTTP.

mod support;

use bytes::Bytes;
use hyper::Method;
use repo::Cid;
use repo::car::CarReader;
use serde_json::json;
use support::{start, start_with};

const POST: &str = "app.bsky.feed.post";

#[tokio::test]
async fn create_get_list_put_delete_apply() {
    let s = start();
    let (did, tok, _) = s.account("erin.test").await;
    let mut rkeys = Vec::new();
    for i in 0..5 {
        let (uri, cid) = s.post_record(&did, &tok, &format!("post {i}")).await;
        assert!(uri.starts_with(&format!("at://{did}/{POST}/")));
        Cid::parse_str(&cid).unwrap();
        rkeys.push(uri.rsplit('/').next().unwrap().to_owned());
    }
    // getRecord, by DID and by handle, with and without a matching cid.
    let path = format!(
        "/xrpc/com.atproto.repo.getRecord?repo={did}&collection={POST}&rkey={}",
        rkeys[0]
    );
    let r = s.get(&path).await.ok_json();
    assert_eq!(r["value"]["text"], "post 0");
    assert_eq!(r["value"]["$type"], POST);
    let cid = r["cid"].as_str().unwrap().to_owned();
    s.get(&format!("{path}&cid={cid}")).await.ok_json();
    let other = Cid::for_raw(b"x").to_string();
    s.get(&format!("{path}&cid={other}"))
        .await
        .expect_error(400, "RecordNotFound");
    s.get(&format!(
        "/xrpc/com.atproto.repo.getRecord?repo=erin.test&collection={POST}&rkey={}",
        rkeys[1]
    ))
    .await
    .ok_json();
    s.get(&format!(
        "/xrpc/com.atproto.repo.getRecord?repo={did}&collection={POST}&rkey=nope"
    ))
    .await
    .expect_error(400, "RecordNotFound");

    // listRecords: newest first, pages by cursor, reverse.
    let list = |q: String| {
        let (s, did) = (&s, &did);
        async move {
            s.get(&format!(
                "/xrpc/com.atproto.repo.listRecords?repo={did}&collection={POST}{q}"
            ))
            .await
            .ok_json()
        }
    };
    let all = list(String::new()).await;
    let texts: Vec<&str> = all["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["post 4", "post 3", "post 2", "post 1", "post 0"]);
    assert!(all.get("cursor").is_none());
    let page = list("&limit=2".into()).await;
    assert_eq!(page["records"].as_array().unwrap().len(), 2);
    let cursor = page["cursor"].as_str().unwrap().to_owned();
    let next = list(format!("&limit=2&cursor={cursor}")).await;
    assert_eq!(next["records"][0]["value"]["text"], "post 2");
    let rev = list("&reverse=true&limit=1".into()).await;
    assert_eq!(rev["records"][0]["value"]["text"], "post 0");

    // putRecord: create, then update; swapRecord mismatch is InvalidSwap.
    let put = |rkey: &str, text: &str, swap: Option<serde_json::Value>| {
        let mut body =
            json!({"repo": did, "collection": POST, "rkey": rkey, "record": {"text": text}});
        if let Some(sw) = swap {
            body["swapRecord"] = sw;
        }
        let (s, tok) = (&s, &tok);
        async move {
            s.post("/xrpc/com.atproto.repo.putRecord", Some(tok), &body)
                .await
        }
    };
    let p1 = put("self", "one", None).await.ok_json();
    assert_eq!(p1["validationStatus"], "unknown");
    assert!(p1["commit"]["cid"].is_string() && p1["commit"]["rev"].is_string());
    // The message names the record's current CID as the reference PDS
    // words it ("Record was at <cid>"), so a client needs no re-read.
    let r = put("self", "two", Some(json!(other))).await;
    r.expect_error(400, "InvalidSwap");
    let was_at = format!("Record was at {}", p1["cid"].as_str().unwrap());
    assert_eq!(r.json()["message"], was_at);
    let r = put("self", "two", Some(json!(null))).await;
    r.expect_error(400, "InvalidSwap");
    assert_eq!(r.json()["message"], was_at);
    // A swap on a record that does not exist: "Record was at null".
    let r = put("absent", "x", Some(p1["cid"].clone())).await;
    r.expect_error(400, "InvalidSwap");
    assert_eq!(r.json()["message"], "Record was at null");
    put("self", "two", Some(p1["cid"].clone())).await.ok_json();
    let got = s
        .get(&format!(
            "/xrpc/com.atproto.repo.getRecord?repo={did}&collection={POST}&rkey=self"
        ))
        .await
        .ok_json();
    assert_eq!(got["value"]["text"], "two");

    // deleteRecord: a commit, then a no-op.
    let del = json!({"repo": did, "collection": POST, "rkey": "self"});
    let d = s
        .post("/xrpc/com.atproto.repo.deleteRecord", Some(&tok), &del)
        .await
        .ok_json();
    assert!(d["commit"]["cid"].is_string());
    let d2 = s
        .post("/xrpc/com.atproto.repo.deleteRecord", Some(&tok), &del)
        .await
        .ok_json();
    assert!(d2.get("commit").is_none());

    // createRecord on a taken rkey, swapCommit mismatch.
    let dup = json!({"repo": did, "collection": POST, "rkey": rkeys[0], "record": {"text": "x"}});
    s.post("/xrpc/com.atproto.repo.createRecord", Some(&tok), &dup)
        .await
        .expect_error(400, "InvalidRequest");
    let bad_swap =
        json!({"repo": did, "collection": POST, "record": {"text": "x"}, "swapCommit": other});
    let r = s
        .post("/xrpc/com.atproto.repo.createRecord", Some(&tok), &bad_swap)
        .await;
    r.expect_error(400, "InvalidSwap");
    let head = s
        .get(&format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"))
        .await
        .ok_json();
    assert_eq!(
        r.json()["message"],
        format!("Commit was at {}", head["cid"].as_str().unwrap())
    );

    // applyWrites: one of each, results in order.
    let head = s
        .get(&format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"))
        .await
        .ok_json();
    let writes = json!({"repo": did, "swapCommit": head["cid"], "writes": [
        {"$type": "com.atproto.repo.applyWrites#create", "collection": POST, "rkey": "batch1", "value": {"text": "b1"}},
        {"$type": "com.atproto.repo.applyWrites#update", "collection": POST, "rkey": rkeys[1], "value": {"text": "edited"}},
        {"$type": "com.atproto.repo.applyWrites#delete", "collection": POST, "rkey": rkeys[2]},
    ]});
    let a = s
        .post("/xrpc/com.atproto.repo.applyWrites", Some(&tok), &writes)
        .await
        .ok_json();
    let results = a["results"].as_array().unwrap();
    assert_eq!(
        results[0]["$type"],
        "com.atproto.repo.applyWrites#createResult"
    );
    assert_eq!(results[0]["uri"], format!("at://{did}/{POST}/batch1"));
    assert_eq!(
        results[1]["$type"],
        "com.atproto.repo.applyWrites#updateResult"
    );
    assert_eq!(
        results[2],
        json!({"$type": "com.atproto.repo.applyWrites#deleteResult"})
    );
    // The same swapCommit again is stale.
    s.post("/xrpc/com.atproto.repo.applyWrites", Some(&tok), &writes)
        .await
        .expect_error(400, "InvalidSwap");
    let too_many: Vec<_> = (0..201)
        .map(|i| json!({"$type": "com.atproto.repo.applyWrites#create", "collection": POST, "rkey": format!("k{i}"), "value": {"text": "x"}}))
        .collect();
    s.post(
        "/xrpc/com.atproto.repo.applyWrites",
        Some(&tok),
        &json!({"repo": did, "writes": too_many}),
    )
    .await
    .expect_error(400, "InvalidRequest");
    s.post(
        "/xrpc/com.atproto.repo.applyWrites",
        Some(&tok),
        &json!({"repo": did, "writes": [{"$type": "nope", "collection": POST}]}),
    )
    .await
    .expect_error(400, "InvalidRequest");

    // describeRepo names the collection.
    let d = s
        .get(&format!("/xrpc/com.atproto.repo.describeRepo?repo={did}"))
        .await
        .ok_json();
    assert_eq!(d["collections"], json!([POST]));
    assert_eq!(d["handle"], "erin.test");
    assert_eq!(d["handleIsCorrect"], true);
    assert_eq!(d["didDoc"]["id"], did);
    s.get("/xrpc/com.atproto.repo.describeRepo?repo=did:plc:aaaaaaaaaaaaaaaaaaaaaaaa")
        .await
        .expect_error(400, "RepoNotFound");
}

#[tokio::test]
async fn blobs_upload_get_range_head_list_missing() {
    let s = start();
    let (did, tok, _) = s.account("fay.test").await;
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let auth = format!("Bearer {tok}");
    let up = s
        .request(
            Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[("authorization", &auth), ("content-type", "image/png")],
            Bytes::from(data.clone()),
        )
        .await
        .ok_json();
    assert_eq!(up["blob"]["$type"], "blob");
    assert_eq!(up["blob"]["mimeType"], "image/png");
    assert_eq!(up["blob"]["size"], 10_000);
    let cid = up["blob"]["ref"]["$link"].as_str().unwrap().to_owned();
    assert_eq!(cid, Cid::for_raw(&data).to_string());

    let path = format!("/xrpc/com.atproto.sync.getBlob?did={did}&cid={cid}");
    let full = s.get(&path).await;
    assert_eq!(full.status, 200);
    assert_eq!(full.body, data);
    assert_eq!(full.headers["content-type"], "image/png");
    let part = s
        .request(
            Method::GET,
            &path,
            &[("range", "bytes=100-199")],
            Bytes::new(),
        )
        .await;
    assert_eq!(part.status, 206);
    assert_eq!(part.body, data[100..200]);
    assert_eq!(part.headers["content-range"], "bytes 100-199/10000");
    let tail = s
        .request(Method::GET, &path, &[("range", "bytes=-10")], Bytes::new())
        .await;
    assert_eq!(tail.body, data[9990..]);
    let bad = s
        .request(
            Method::GET,
            &path,
            &[("range", "bytes=20000-")],
            Bytes::new(),
        )
        .await;
    assert_eq!(bad.status, 416);
    let head = s.request(Method::HEAD, &path, &[], Bytes::new()).await;
    assert_eq!(head.status, 200);
    assert_eq!(head.headers["content-length"], "10000");
    assert!(head.body.is_empty());
    let missing = Cid::for_raw(b"never uploaded").to_string();
    s.get(&format!(
        "/xrpc/com.atproto.sync.getBlob?did={did}&cid={missing}"
    ))
    .await
    .expect_error(400, "BlobNotFound");

    // A record naming a blob that was never uploaded is refused, as the
    // reference refuses it; one naming two uploaded blobs is taken.
    let blob_ref = |c: &str| json!({"$type": "blob", "ref": {"$link": c}, "mimeType": "image/png", "size": 10});
    let naming = |a: &str, b: &str| {
        json!({"repo": did, "collection": POST, "rkey": "withblobs", "record": {
            "text": "pics", "embed": {"images": [{"image": blob_ref(a)}, {"image": blob_ref(b)}]}
        }})
    };
    let refused = s
        .post(
            "/xrpc/com.atproto.repo.createRecord",
            Some(&tok),
            &naming(&cid, &missing),
        )
        .await;
    refused.expect_error(400, "BlobNotFound");
    let message = refused.json()["message"].as_str().unwrap().to_owned();
    assert_eq!(message, format!("Could not find blob: {missing}"));
    let second = s
        .request(
            Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[("authorization", &auth), ("content-type", "image/png")],
            Bytes::from_static(b"a second picture"),
        )
        .await
        .ok_json()["blob"]["ref"]["$link"]
        .as_str()
        .unwrap()
        .to_owned();
    s.post(
        "/xrpc/com.atproto.repo.createRecord",
        Some(&tok),
        &naming(&cid, &second),
    )
    .await
    .ok_json();
    let listed = s
        .get(&format!("/xrpc/com.atproto.sync.listBlobs?did={did}"))
        .await
        .ok_json();
    let mut cids: Vec<&str> = listed["cids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    cids.sort();
    let mut want = vec![cid.as_str(), second.as_str()];
    want.sort();
    assert_eq!(cids, want);
    let page = s
        .get(&format!(
            "/xrpc/com.atproto.sync.listBlobs?did={did}&limit=1"
        ))
        .await
        .ok_json();
    let c = page["cursor"].as_str().unwrap().to_owned();
    let rest = s
        .get(&format!(
            "/xrpc/com.atproto.sync.listBlobs?did={did}&limit=1&cursor={c}"
        ))
        .await
        .ok_json();
    assert_eq!(rest["cids"].as_array().unwrap().len(), 1);
    assert_ne!(rest["cids"][0], page["cids"][0]);
    let m = s
        .get_auth("/xrpc/com.atproto.repo.listMissingBlobs", &tok)
        .await
        .ok_json();
    assert_eq!(m["blobs"], json!([]));
    s.get("/xrpc/com.atproto.repo.listMissingBlobs")
        .await
        .expect_error(401, "AuthRequired");
    // Deleting the only record naming them frees both blobs.
    let del = json!({"repo": did, "collection": POST, "rkey": "withblobs"});
    s.post("/xrpc/com.atproto.repo.deleteRecord", Some(&tok), &del)
        .await
        .ok_json();
    for c in [&cid, &second] {
        s.get(&format!("/xrpc/com.atproto.sync.getBlob?did={did}&cid={c}"))
            .await
            .expect_error(400, "BlobNotFound");
    }
}

/// An upload no record names is swept after the grace (zero here, with a
/// fast sweep), and getBlob then answers `BlobNotFound`.
#[tokio::test]
async fn an_orphan_upload_is_swept_after_the_grace() {
    let s = start_with(|c| {
        c.sweep.orphan_grace = std::time::Duration::ZERO;
        c.sweep_interval = std::time::Duration::from_millis(100);
    });
    let (did, tok, _) = s.account("orphan.test").await;
    let auth = format!("Bearer {tok}");
    let up = s
        .request(
            Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[("authorization", &auth), ("content-type", "image/png")],
            Bytes::from_static(b"nobody names me"),
        )
        .await
        .ok_json();
    let cid = up["blob"]["ref"]["$link"].as_str().unwrap().to_owned();
    let path = format!("/xrpc/com.atproto.sync.getBlob?did={did}&cid={cid}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        let got = s.get(&path).await;
        if got.status == 400 {
            got.expect_error(400, "BlobNotFound");
            break;
        }
        assert_eq!(got.status, 200);
        assert!(std::time::Instant::now() < deadline, "not swept");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// uploadBlob takes any Content-Type (the lexicon's encoding is `*/*`):
/// the stored type is sniffed from the bytes first, as the reference PDS
/// does, and getBlob serves it.
#[tokio::test]
async fn upload_blob_sniffs_the_type_whatever_the_header_says() {
    let s = start();
    let (did, tok, _) = s.account("gus.test").await;
    let auth = format!("Bearer {tok}");
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0".to_vec();
    png.extend_from_slice(&[7; 64]);
    let mut jpeg = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0".to_vec();
    jpeg.extend_from_slice(&[9; 64]);
    let cases: [(&[u8], Option<&str>, &str); 5] = [
        (&png, Some("*/*"), "image/png"),
        (&jpeg, None, "image/jpeg"),
        (&jpeg, Some("image/png"), "image/jpeg"),
        (
            b"plain words, no magic",
            Some("*/*"),
            "application/octet-stream",
        ),
        (b"other words, no magic", Some("text/plain"), "text/plain"),
    ];
    for (bytes, declared, want) in cases {
        let mut headers = vec![("authorization", auth.as_str())];
        if let Some(d) = declared {
            headers.push(("content-type", d));
        }
        let up = s
            .request(
                Method::POST,
                "/xrpc/com.atproto.repo.uploadBlob",
                &headers,
                Bytes::from(bytes.to_vec()),
            )
            .await
            .ok_json();
        assert_eq!(up["blob"]["mimeType"], want, "declared {declared:?}");
        let cid = up["blob"]["ref"]["$link"].as_str().unwrap();
        let got = s
            .get(&format!(
                "/xrpc/com.atproto.sync.getBlob?did={did}&cid={cid}"
            ))
            .await;
        assert_eq!(got.status, 200);
        assert_eq!(got.body, bytes);
        assert_eq!(got.headers["content-type"], want, "declared {declared:?}");
    }
}

#[tokio::test]
async fn sync_reads_repo_car_proof_status_list() {
    let s = start();
    let (did, tok, _) = s.account("gus.test").await;
    let (did2, _, _) = s.account("hal.test").await;
    let mut cids = Vec::new();
    for i in 0..20 {
        cids.push(s.post_record(&did, &tok, &format!("p{i}")).await);
    }
    let latest = s
        .get(&format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"))
        .await
        .ok_json();
    let head = Cid::parse_str(latest["cid"].as_str().unwrap()).unwrap();
    let repo_car = s
        .get(&format!("/xrpc/com.atproto.sync.getRepo?did={did}"))
        .await;
    assert_eq!(repo_car.status, 200);
    assert_eq!(repo_car.headers["content-type"], "application/vnd.ipld.car");
    let mut reader = CarReader::new(&repo_car.body[..]).unwrap();
    assert_eq!(reader.roots(), &[head]);
    let mut blocks = Vec::new();
    while let Some((c, _)) = reader.next_block().unwrap() {
        blocks.push(c);
    }
    for (_, c) in &cids {
        assert!(blocks.contains(&Cid::parse_str(c).unwrap()));
    }
    // The store verifies what it exported: import it into a fresh store.
    let dir = tempfile::tempdir().unwrap();
    let other = store::Store::open(dir.path().join("x.sqlite"), store::Config::default()).unwrap();
    let info = other.import_car(&repo_car.body[..], None).unwrap();
    assert_eq!(info.commit, head);
    assert_eq!(other.check_repo(&did).unwrap(), 20);
    // since: only the newer blocks.
    let rev_mid = {
        let st = s
            .get(&format!("/xrpc/com.atproto.sync.getRepoStatus?did={did}"))
            .await
            .ok_json();
        assert_eq!(st["active"], true);
        st["rev"].as_str().unwrap().to_owned()
    };
    s.post_record(&did, &tok, "after").await;
    let since = s
        .get(&format!(
            "/xrpc/com.atproto.sync.getRepo?did={did}&since={rev_mid}"
        ))
        .await;
    assert_eq!(since.status, 200);
    assert!(since.body.len() < repo_car.body.len() / 2);
    let head_req = s
        .request(
            Method::HEAD,
            &format!("/xrpc/com.atproto.sync.getRepo?did={did}"),
            &[],
            Bytes::new(),
        )
        .await;
    assert_eq!(head_req.status, 200);

    // getRecord's proof CAR: commit, path nodes, the record.
    let (uri, rcid) = &cids[3];
    let rkey = uri.rsplit('/').next().unwrap();
    let proof = s
        .get(&format!(
            "/xrpc/com.atproto.sync.getRecord?did={did}&collection={POST}&rkey={rkey}"
        ))
        .await;
    assert_eq!(proof.status, 200);
    let mut reader = CarReader::new(&proof.body[..]).unwrap();
    assert_eq!(reader.roots(), &[head_after(&s, &did).await]);
    let mut got = Vec::new();
    let mut mem = repo::mst::MemoryBlockStore::new();
    while let Some((c, b)) = reader.next_block().unwrap() {
        got.push(c);
        mem.put(c, b);
    }
    assert!(got.contains(&Cid::parse_str(rcid).unwrap()));
    assert!(got.len() < blocks.len());
    // The proof alone walks from the signed commit to the record.
    let commit_bytes = mem.get(&got[0]).unwrap().to_vec();
    let commit = repo::commit::CommitRef::decode(&commit_bytes).unwrap();
    let key = format!("{POST}/{rkey}");
    let mut mst = repo::mst::Mst::load(&mem, commit.data);
    assert_eq!(mst.get(&key).unwrap(), Some(Cid::parse_str(rcid).unwrap()));
    s.get(&format!(
        "/xrpc/com.atproto.sync.getRecord?did={did}&collection={POST}&rkey=absent"
    ))
    .await
    .expect_error(400, "RecordNotFound");

    // listRepos pages by DID.
    let all = s.get("/xrpc/com.atproto.sync.listRepos").await.ok_json();
    let repos = all["repos"].as_array().unwrap();
    assert_eq!(repos.len(), 2);
    assert!(
        repos
            .iter()
            .all(|r| r["active"] == true && r["head"].is_string() && r["rev"].is_string())
    );
    let p1 = s
        .get("/xrpc/com.atproto.sync.listRepos?limit=1")
        .await
        .ok_json();
    let c = p1["cursor"].as_str().unwrap();
    let p2 = s
        .get(&format!(
            "/xrpc/com.atproto.sync.listRepos?limit=1&cursor={c}"
        ))
        .await
        .ok_json();
    let mut seen = vec![
        p1["repos"][0]["did"].as_str().unwrap().to_owned(),
        p2["repos"][0]["did"].as_str().unwrap().to_owned(),
    ];
    seen.sort();
    let mut want = vec![did.clone(), did2.clone()];
    want.sort();
    assert_eq!(seen, want);

    let nobody = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa";
    for path in [
        format!("/xrpc/com.atproto.sync.getLatestCommit?did={nobody}"),
        format!("/xrpc/com.atproto.sync.getRepoStatus?did={nobody}"),
        format!("/xrpc/com.atproto.sync.getRepo?did={nobody}"),
        format!("/xrpc/com.atproto.sync.listBlobs?did={nobody}"),
        format!("/xrpc/com.atproto.sync.getRecord?did={nobody}&collection={POST}&rkey=x"),
    ] {
        s.get(&path).await.expect_error(400, "RepoNotFound");
    }
}

async fn head_after(s: &support::TestServer, did: &str) -> Cid {
    let v = s
        .get(&format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"))
        .await
        .ok_json();
    Cid::parse_str(v["cid"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn bad_parameters_of_every_kind_are_invalid_request() {
    let s = start();
    let (did, tok, _) = s.account("ivy.test").await;
    let cid = Cid::for_raw(b"x").to_string();
    let bad = [
        // DID
        "/xrpc/com.atproto.sync.getLatestCommit?did=not-a-did".to_owned(),
        "/xrpc/com.atproto.sync.getRepo?did=did:".to_owned(),
        "/xrpc/com.atproto.sync.getRepoStatus".to_owned(),
        format!("/xrpc/com.atproto.sync.getBlob?did=did:bad%00&cid={cid}"),
        // handle / at-identifier
        format!("/xrpc/com.atproto.repo.getRecord?repo=-x-&collection={POST}&rkey=a"),
        "/xrpc/com.atproto.repo.describeRepo?repo=a..b".to_owned(),
        // NSID
        format!("/xrpc/com.atproto.repo.getRecord?repo={did}&collection=notansid&rkey=a"),
        format!("/xrpc/com.atproto.repo.listRecords?repo={did}&collection=a.b..c"),
        format!("/xrpc/com.atproto.sync.getRecord?did={did}&collection=x&rkey=a"),
        // rkey
        format!("/xrpc/com.atproto.repo.getRecord?repo={did}&collection={POST}&rkey=.."),
        format!("/xrpc/com.atproto.repo.getRecord?repo={did}&collection={POST}&rkey=a/b"),
        // CID
        format!("/xrpc/com.atproto.sync.getBlob?did={did}&cid=bafynotacid"),
        format!("/xrpc/com.atproto.repo.getRecord?repo={did}&collection={POST}&rkey=a&cid=zz"),
        format!("/xrpc/com.atproto.sync.listBlobs?did={did}&cursor=notacid"),
        // cursor and limit
        format!("/xrpc/com.atproto.repo.listRecords?repo={did}&collection={POST}&cursor=a/b"),
        format!("/xrpc/com.atproto.repo.listRecords?repo={did}&collection={POST}&limit=0"),
        format!("/xrpc/com.atproto.repo.listRecords?repo={did}&collection={POST}&limit=101"),
        format!("/xrpc/com.atproto.repo.listRecords?repo={did}&collection={POST}&limit=abc"),
        format!("/xrpc/com.atproto.repo.listRecords?repo={did}&collection={POST}&reverse=maybe"),
        "/xrpc/com.atproto.sync.listRepos?cursor=nope".to_owned(),
        "/xrpc/com.atproto.sync.listRepos?limit=1001".to_owned(),
        format!("/xrpc/com.atproto.sync.getRepo?did={did}&since=notatid"),
        "/xrpc/com.atproto.sync.subscribeRepos?cursor=-1".to_owned(),
        "/xrpc/com.atproto.sync.subscribeRepos?cursor=x".to_owned(),
        // encoding
        "/xrpc/com.atproto.identity.resolveHandle?handle=%zz".to_owned(),
        "/xrpc/com.atproto.identity.resolveHandle?handle=%C3%28".to_owned(),
    ];
    for path in &bad {
        let a = s.get(path).await;
        assert_eq!(
            (a.status.as_u16(), a.error().as_str()),
            (400, "InvalidRequest"),
            "{path}: {}",
            String::from_utf8_lossy(&a.body)
        );
    }
    s.get_auth("/xrpc/com.atproto.repo.listMissingBlobs?limit=0", &tok)
        .await
        .expect_error(400, "InvalidRequest");
    // Bad values in bodies.
    let bodies = [
        json!({"repo": did, "collection": "bad", "record": {"text": "x"}}),
        json!({"repo": did, "collection": POST, "rkey": "..", "record": {"text": "x"}}),
        json!({"repo": did, "collection": POST, "record": "not an object"}),
        json!({"repo": did, "collection": POST, "record": {"$type": "other.type.here", "text": "x"}}),
        json!({"repo": did, "collection": POST, "record": {"n": 1.5}}),
        json!({"repo": did, "collection": POST, "record": {"text": "x"}, "swapCommit": "nope"}),
        json!({"repo": "not a repo", "collection": POST, "record": {"text": "x"}}),
        json!({"collection": POST, "record": {"text": "x"}}),
    ];
    for b in &bodies {
        let a = s
            .post("/xrpc/com.atproto.repo.createRecord", Some(&tok), b)
            .await;
        assert_eq!(
            (a.status.as_u16(), a.error().as_str()),
            (400, "InvalidRequest"),
            "{b}: {}",
            String::from_utf8_lossy(&a.body)
        );
    }
}
