// Temporary local load check (not committed).
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Instant;

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = xrpc::ServerConfig::new(dir.path().join("p.sqlite"));
    c.listen = "127.0.0.1:0".parse().unwrap();
    c.scrypt_log_n = 4;
    let s = xrpc::spawn(c).unwrap();
    let url = s.url();
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(100)
        .build_http();
    let post = |path: String, tok: Option<String>, body: String| {
        let client = client.clone();
        async move {
            let mut r = hyper::Request::post(path).header("content-type", "application/json");
            if let Some(t) = tok {
                r = r.header("authorization", format!("Bearer {t}"));
            }
            let resp = client
                .request(r.body(Full::new(Bytes::from(body))).unwrap())
                .await
                .unwrap();
            let st = resp.status();
            let b = resp.into_body().collect().await.unwrap().to_bytes();
            assert!(st.is_success(), "{st} {:?}", b);
            serde_json::from_slice::<serde_json::Value>(&b).unwrap_or(serde_json::Value::Null)
        }
    };
    let mut accts = Vec::new();
    for i in 0..50 {
        let v = post(
            format!("{url}/xrpc/com.atproto.server.createAccount"),
            None,
            format!(r#"{{"handle":"u{i}.test","password":"p"}}"#),
        )
        .await;
        accts.push((
            v["did"].as_str().unwrap().to_owned(),
            v["accessJwt"].as_str().unwrap().to_owned(),
        ));
    }
    let v = post(format!("{url}/xrpc/com.atproto.repo.createRecord"), Some(accts[0].1.clone()), format!(r#"{{"repo":"{}","collection":"app.bsky.feed.post","rkey":"r1","record":{{"text":"hello","createdAt":"2024-01-01T00:00:00Z"}}}}"#, accts[0].0)).await;
    let _ = v;
    for (name, conns, n) in [
        ("health", 50, 20000),
        ("getRecord", 50, 20000),
        ("createRecord", 10, 5000),
        ("createRecord", 1, 1000),
    ] {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for ci in 0..conns {
            let client = client.clone();
            let url = url.clone();
            let (did, tok) = accts[ci].clone();
            let d0 = accts[0].0.clone();
            tasks.push(tokio::spawn(async move {
                for j in 0..n / conns {
                    let req = match name {
                        "health" => hyper::Request::get(format!("{url}/xrpc/_health")).body(Full::new(Bytes::new())).unwrap(),
                        "getRecord" => hyper::Request::get(format!("{url}/xrpc/com.atproto.repo.getRecord?repo={d0}&collection=app.bsky.feed.post&rkey=r1")).body(Full::new(Bytes::new())).unwrap(),
                        _ => hyper::Request::post(format!("{url}/xrpc/com.atproto.repo.createRecord")).header("authorization", format!("Bearer {tok}")).header("content-type","application/json").body(Full::new(Bytes::from(format!(r#"{{"repo":"{did}","collection":"app.bsky.feed.post","record":{{"text":"p {j} {ci}","createdAt":"2024-01-01T00:00:00Z"}}}}"#)))).unwrap(),
                    };
                    let resp = client.request(req).await.unwrap();
                    assert!(resp.status().is_success(), "{}", resp.status());
                    let _ = resp.into_body().collect().await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let el = start.elapsed();
        println!("{name} c{conns}: {:.0} req/s", n as f64 / el.as_secs_f64());
    }
    s.shutdown();
}
