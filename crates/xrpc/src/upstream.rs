//! The pooled HTTP client every upstream call sends with: the proxy's
//! forwarded calls (`proxy.rs`), relay crawls (`crawl.rs`) and the PLC
//! checks (`routes/service_auth.rs`). A leaf: the application state
//! (`app.rs`) owns one, and the modules that use it import it from here,
//! not from the proxy that uses the state.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;

/// The pooled HTTP client upstream calls send with.
pub struct Proxy {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Proxy {
    /// A client whose connections are pooled per upstream.
    pub fn new() -> Proxy {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(Duration::from_secs(5)));
        connector.set_nodelay(true);
        Proxy {
            client: Client::builder(hyper_util::rt::TokioExecutor::new())
                .pool_idle_timeout(Duration::from_secs(30))
                .build(connector),
        }
    }
}

impl Proxy {
    /// The pooled client (shared with `crawl.rs`).
    pub fn client(&self) -> Client<HttpConnector, Full<Bytes>> {
        self.client.clone()
    }
}

impl Default for Proxy {
    fn default() -> Self {
        Proxy::new()
    }
}
