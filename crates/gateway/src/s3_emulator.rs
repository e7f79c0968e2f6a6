//! An S3-compatible server in this process, for tests and benchmarks on
//! machines without an S3 service (feature `s3-emulator`).
//!
//! It is an **emulator**: `s3s-fs` (the `s3s` project's S3 service over a
//! directory, one subdirectory per bucket, one file per object) behind
//! `s3s`'s SigV4 check, served by hyper on an ephemeral loopback port from
//! a runtime thread of its own. Its latencies are a local file system's
//! and a loopback socket's, not a real object store's. The executor talks
//! to it over plain S3 (path-style addressing) and has nothing specific to
//! it; only bucket creation is the emulator's own (a directory), since the
//! executor's line shape has no bucket operations.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::sync::oneshot;

use crate::config::{PoolConfig, S3Config};

/// The access key the emulator accepts.
pub const ACCESS_KEY: &str = "atbench-access";
/// The secret key the emulator accepts.
pub const SECRET_KEY: &str = "atbench-secret-key";

/// A running emulator; stopped (and its thread joined) on drop.
pub struct S3Emulator {
    addr: SocketAddr,
    root: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl S3Emulator {
    /// Starts serving the directory `root` (which must exist) on
    /// `127.0.0.1:<ephemeral>`.
    ///
    /// # Errors
    /// When the directory cannot be served, the runtime cannot start or the
    /// port cannot be bound.
    pub fn start(root: &Path) -> std::io::Result<S3Emulator> {
        let fs =
            s3s_fs::FileSystem::new(root).map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        let mut builder = S3ServiceBuilder::new(fs);
        builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        let service = builder.build();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("s3-emulator")
            .enable_all()
            .build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))?;
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("s3-emulator".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let http = ConnBuilder::new(TokioExecutor::new());
                    loop {
                        let socket = tokio::select! {
                            accepted = listener.accept() => match accepted {
                                Ok((socket, _)) => socket,
                                Err(_) => continue,
                            },
                            _ = &mut stopped => break,
                        };
                        let _ = socket.set_nodelay(true);
                        let conn = http
                            .serve_connection(TokioIo::new(socket), service.clone())
                            .into_owned();
                        tokio::spawn(async move {
                            let _ = conn.await;
                        });
                    }
                });
                runtime.shutdown_background();
            })?;
        Ok(S3Emulator {
            addr,
            root: root.to_path_buf(),
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Creates bucket `name` (a directory under the root).
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub fn create_bucket(&self, name: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(self.root.join(name))
    }

    /// Removes bucket `name` and every object in it.
    ///
    /// # Errors
    /// When the directory cannot be removed.
    pub fn remove_bucket(&self, name: &str) -> std::io::Result<()> {
        std::fs::remove_dir_all(self.root.join(name))
    }

    /// A configuration pointing the executor at this emulator.
    pub fn config(&self, pool: PoolConfig) -> S3Config {
        S3Config {
            endpoint: self.endpoint(),
            region: "us-east-1".into(),
            access_key: ACCESS_KEY.into(),
            secret_key: SECRET_KEY.into(),
            path_style: true,
            pool,
        }
    }
}

impl Drop for S3Emulator {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
