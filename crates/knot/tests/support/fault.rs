//! A fault-injecting HTTP proxy: each request is shown to a rule, which
//! forwards it to the upstream server or answers in its place (an error,
//! a 429 with rate-limit headers, an answer that never comes, a body that
//! never ends).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// What the proxy does with one request.
pub enum Action {
    Forward,
    Respond(u16, Vec<(&'static str, String)>, Bytes),
    /// Never answers.
    Hang,
    /// 200 with a body that never ends.
    Endless,
}

pub type Rule = dyn Fn(&Parts, &Bytes) -> Action + Send + Sync;

pub struct FaultProxy {
    pub url: String,
    _rt: tokio::runtime::Runtime,
}

impl FaultProxy {
    pub fn start(upstream: Option<String>, rule: Arc<Rule>) -> FaultProxy {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        rt.spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                let (rule, upstream, client) = (rule.clone(), upstream.clone(), client.clone());
                tokio::spawn(async move {
                    let svc =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let (rule, upstream, client) =
                                (rule.clone(), upstream.clone(), client.clone());
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = body
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                let resp: Response<BoxBody<Bytes, Infallible>> =
                                    match rule(&parts, &body) {
                                        Action::Forward => {
                                            let up = upstream
                                                .expect("a rule forwarded without an upstream");
                                            let uri = format!(
                                                "{up}{}",
                                                parts
                                                    .uri
                                                    .path_and_query()
                                                    .map_or("/", |p| p.as_str())
                                            );
                                            let mut b = Request::builder()
                                                .method(parts.method.clone())
                                                .uri(uri);
                                            for (k, v) in &parts.headers {
                                                if k != http::header::HOST {
                                                    b = b.header(k, v);
                                                }
                                            }
                                            let r = client
                                                .request(b.body(Full::new(body)).unwrap())
                                                .await
                                                .unwrap();
                                            let (p, b) = r.into_parts();
                                            let b = b
                                                .collect()
                                                .await
                                                .map(|b| b.to_bytes())
                                                .unwrap_or_default();
                                            Response::from_parts(p, Full::new(b).boxed())
                                        }
                                        Action::Respond(status, headers, body) => {
                                            let mut r = Response::builder().status(status);
                                            for (k, v) in headers {
                                                r = r.header(k, v);
                                            }
                                            r.body(Full::new(body).boxed()).unwrap()
                                        }
                                        Action::Hang => {
                                            std::future::pending::<()>().await;
                                            unreachable!()
                                        }
                                        Action::Endless => {
                                            let chunk = Bytes::from(vec![b'7'; 64 << 10]);
                                            let s = futures_util::stream::repeat_with(move || {
                                                Ok::<_, Infallible>(Frame::data(chunk.clone()))
                                            });
                                            Response::new(BodyExt::boxed(StreamBody::new(s)))
                                        }
                                    };
                                Ok::<_, Infallible>(resp)
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(sock), svc)
                        .await;
                });
            }
        });
        FaultProxy { url, _rt: rt }
    }
}

/// The XRPC method of a request.
pub fn method(p: &Parts) -> &str {
    p.uri.path().strip_prefix("/xrpc/").unwrap_or("")
}
