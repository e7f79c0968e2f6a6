//! Blobs: put, get, ranged get, and the references records hold to them.

mod common;

use common::*;
use repo::Cid;

#[test]
fn blobs_put_get_range_and_references() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    let bytes = datagen::random_bytes(42, 5000);
    let cid = store.put_blob(did, bytes.clone(), "image/jpeg").unwrap();
    assert_eq!(cid, Cid::for_raw(&bytes));
    let b = store.get_blob(did, &cid).unwrap().unwrap();
    assert_eq!((b.mime.as_str(), &b.bytes), ("image/jpeg", &bytes));
    assert_eq!(
        store.get_blob_range(did, &cid, 100, 50).unwrap().unwrap(),
        bytes[100..150]
    );
    assert_eq!(
        store.get_blob_range(did, &cid, 4990, 50).unwrap().unwrap(),
        bytes[4990..]
    );
    assert!(store.get_blob(did, &Cid::for_raw(b"x")).unwrap().is_none());
    let post = serde_json::json!({
        "$type": "app.bsky.feed.post", "text": "pic", "createdAt": "2024-06-01T00:00:00.000Z",
        "embed": {"$type": "app.bsky.embed.images", "images": [{"alt": "", "image": {
            "$type": "blob", "ref": {"$link": cid.to_string()}, "mimeType": "image/jpeg", "size": 5000}}]}
    });
    let c = store
        .create_record(
            did,
            "app.bsky.feed.post",
            Some("3kaaaaaaaaaaa"),
            cbor(&post),
            None,
        )
        .unwrap();
    assert_eq!(store.referenced_blobs(did).unwrap(), vec![cid]);
    store
        .delete_record(
            did,
            "app.bsky.feed.post",
            "3kaaaaaaaaaaa",
            c.results[0].cid,
            None,
        )
        .unwrap();
    assert!(store.referenced_blobs(did).unwrap().is_empty());
}
