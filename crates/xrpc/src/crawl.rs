//! Telling relays about this server: after a store write, each configured
//! relay (`--relay-url`) gets `com.atproto.sync.requestCrawl` with this
//! server's host name, at most once per
//! [`ServerConfig::crawl_interval`](crate::ServerConfig::crawl_interval)
//! (the reference PDS's crawler notifier waits 20 minutes between two
//! notifications; a relay, once crawling, follows the firehose and needs
//! no more). The request runs on a task of its own, bounded by a timeout;
//! a write never waits for it. The deprecated `notifyOfUpdate` is not
//! sent (the reference no longer sends it either).
//!
//! The host name sent is the public URL's authority (`host[:port]`): a
//! relay connects to `wss://<hostname>` (or `ws://` for a local one).

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;

/// The relays and when they were last told.
pub struct Crawlers {
    urls: Vec<String>,
    hostname: String,
    interval: Duration,
    client: Client<HttpConnector, Full<Bytes>>,
    last: Mutex<Option<tokio::time::Instant>>,
}

impl Crawlers {
    /// Relays at `urls` (no trailing slash), told about `public_url`.
    pub fn new(
        urls: Vec<String>,
        public_url: &str,
        interval: Duration,
        client: Client<HttpConnector, Full<Bytes>>,
    ) -> Crawlers {
        let hostname = public_url
            .split_once("://")
            .map_or(public_url, |(_, rest)| rest)
            .trim_end_matches('/')
            .to_owned();
        Crawlers {
            urls: urls
                .into_iter()
                .map(|u| u.trim_end_matches('/').to_owned())
                .collect(),
            hostname,
            interval,
            client,
            last: Mutex::new(None),
        }
    }

    /// A store write happened: tells the relays if the interval has passed
    /// since the last time (on a task; never waits).
    pub fn notify(&self) {
        if self.urls.is_empty() {
            return;
        }
        let now = tokio::time::Instant::now();
        {
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|t| now.duration_since(t) < self.interval) {
                return;
            }
            *last = Some(now);
        }
        let body = serde_json::json!({ "hostname": self.hostname }).to_string();
        for url in &self.urls {
            let (client, url, body) = (self.client.clone(), url.clone(), body.clone());
            tokio::spawn(async move {
                if let Err(e) = request_crawl(&client, &url, body).await {
                    eprintln!("atpds: requestCrawl to {url} failed: {e}");
                }
            });
        }
    }
}

async fn request_crawl(
    client: &Client<HttpConnector, Full<Bytes>>,
    url: &str,
    body: String,
) -> Result<(), String> {
    let req = http::Request::post(format!("{url}/xrpc/com.atproto.sync.requestCrawl"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let work = async {
        let resp = client.request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status();
        // Read (and drop) a bounded answer so the connection is reused.
        let _ = http_body_util::Limited::new(resp.into_body(), 64 << 10)
            .collect()
            .await;
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the relay answered {status}"))
        }
    };
    tokio::time::timeout(Duration::from_secs(10), work)
        .await
        .map_err(|_| "timed out".to_owned())?
}
