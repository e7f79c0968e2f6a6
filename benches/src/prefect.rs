//! The Prefect server as a peer of the appview's REST server (the
//! `appview.rest_*` rows of `--bench appview`), and the one HTTP client
//! every server of those rows is measured through:
//!
//! - [`Http`]: a blocking HTTP/1.1 keep-alive client over one TCP
//!   connection (no pool, no TLS, no redirects: a request, its
//!   `content-length` or chunked body read whole), the same for ours and
//!   Prefect's;
//! - [`PrefectServer`]: `prefect server start --no-services` (or, for
//!   `appview.flow_e2e`, with its services) from the venv
//!   `scripts/prefect_venv.py` installs (prefect 3.9.1, pinned in
//!   `peers/prefect/requirements.lock`), on a free port, UI and analytics
//!   off, on SQLite in a fresh `PREFECT_HOME` or on a fresh PostgreSQL
//!   database of the local server (`pg_trgm` created first; dropped when
//!   the server stops). Startup runs Prefect's migrations.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One keep-alive connection.
pub struct Http {
    addr: SocketAddr,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    head: String,
}

impl Http {
    /// Connects to `addr`.
    pub fn connect(addr: SocketAddr) -> std::io::Result<Http> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(120)))?;
        Ok(Http {
            addr,
            reader: BufReader::new(s.try_clone()?),
            writer: s,
            head: String::with_capacity(256),
        })
    }

    /// `method path` with a JSON `body` (empty: none); the status and the
    /// body. Reconnects once when the server closed the idle connection.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> std::io::Result<(u16, Vec<u8>)> {
        match self.once(method, path, body) {
            Ok(r) => Ok(r),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof
                        | std::io::ErrorKind::BrokenPipe
                        | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                *self = Http::connect(self.addr)?;
                self.once(method, path, body)
            }
            Err(e) => Err(e),
        }
    }

    /// A POST of JSON.
    pub fn post(
        &mut self,
        path: &str,
        body: &serde_json::Value,
    ) -> std::io::Result<(u16, Vec<u8>)> {
        self.request("POST", path, body.to_string().as_bytes())
    }

    fn once(&mut self, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\naccept: application/json\r\n",
            self.addr
        );
        if !body.is_empty() || method == "POST" {
            req.push_str(&format!(
                "content-type: application/json\r\ncontent-length: {}\r\n",
                body.len()
            ));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        self.writer.write_all(&bytes)?;
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_owned());
        self.head.clear();
        if self.reader.read_line(&mut self.head)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let status: u16 = self
            .head
            .get(9..12)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("status line"))?;
        let (mut length, mut chunked) = (None, false);
        loop {
            self.head.clear();
            if self.reader.read_line(&mut self.head)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let line = self.head.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                if k == "content-length" {
                    length = v.parse::<usize>().ok();
                } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                }
            }
        }
        let mut out = Vec::new();
        if chunked {
            loop {
                self.head.clear();
                self.reader.read_line(&mut self.head)?;
                let n = usize::from_str_radix(self.head.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| bad("chunk size"))?;
                let at = out.len();
                out.resize(at + n + 2, 0);
                self.reader.read_exact(&mut out[at..])?;
                out.truncate(at + n);
                if n == 0 {
                    break;
                }
            }
        } else {
            out.resize(length.ok_or_else(|| bad("no content-length"))?, 0);
            self.reader.read_exact(&mut out)?;
        }
        Ok((status, out))
    }
}

/// The venv's python, or why the Prefect peer cannot run.
pub fn venv_python() -> Result<PathBuf, String> {
    let script = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/prefect_venv.py"
    ));
    let out = Command::new("python3")
        .arg(&script)
        .arg("--check")
        .output()
        .map_err(|e| format!("python3 not runnable: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the Prefect venv is not installed (python3 scripts/prefect_venv.py): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Which database a Prefect server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefectDb {
    /// SQLite (aiosqlite) in a fresh `PREFECT_HOME`.
    Sqlite,
    /// A fresh database on the local PostgreSQL (asyncpg).
    Postgres,
}

impl PrefectDb {
    /// The implementation name of its rows.
    pub fn implementation(self) -> &'static str {
        match self {
            PrefectDb::Sqlite => "prefect-sqlite",
            PrefectDb::Postgres => "prefect-postgres",
        }
    }
}

/// The local PostgreSQL the Prefect peer uses (`GATEWAY_PG_URL`'s host,
/// user and port when set as `postgres://user@host:port/...`).
fn pg_server() -> (String, String, u16) {
    let url = std::env::var("GATEWAY_PG_URL")
        .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".into());
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let (auth, hostpart) = rest.split_once('@').unwrap_or(("root", rest));
    let user = auth.split(':').next().unwrap_or("root").to_owned();
    let hostport = hostpart.split('/').next().unwrap_or("127.0.0.1:5432");
    let (host, port) = hostport.split_once(':').unwrap_or((hostport, "5432"));
    (host.to_owned(), user, port.parse().unwrap_or(5432))
}

/// Runs one SQL statement on database `db` of the local server with `psql`.
pub fn psql(db: &str, sql: &str) -> Result<String, String> {
    let (host, user, port) = pg_server();
    let out = Command::new("psql")
        .args([
            "-h",
            &host,
            "-U",
            &user,
            "-p",
            &port.to_string(),
            "-d",
            db,
            "-v",
            "ON_ERROR_STOP=1",
            "-Atqc",
            sql,
        ])
        .output()
        .map_err(|e| format!("psql not runnable: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A running Prefect server; stopped (and its PostgreSQL database
/// dropped) on drop.
pub struct PrefectServer {
    child: Child,
    addr: SocketAddr,
    /// Its `PREFECT_HOME`.
    pub home: PathBuf,
    /// The PostgreSQL database, when on PostgreSQL.
    pub pg_db: Option<String>,
    /// The database URL Prefect was given.
    pub database_url: String,
    /// Seconds from spawn to a healthy `/api/health`.
    pub startup_s: f64,
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl PrefectServer {
    /// Starts Prefect on `db` with its home under `dir`, the webserver
    /// only (`--no-services`): what the REST read rows need.
    pub fn start(python: &Path, db: PrefectDb, dir: &Path) -> Result<PrefectServer, String> {
        Self::spawn(python, db, dir, false)
    }

    /// Starts Prefect as `prefect server start` runs by default, its
    /// services too: the task run recorder is what turns the client's
    /// task-run events into task runs (`appview.flow_e2e`).
    pub fn start_with_services(
        python: &Path,
        db: PrefectDb,
        dir: &Path,
    ) -> Result<PrefectServer, String> {
        Self::spawn(python, db, dir, true)
    }

    fn spawn(
        python: &Path,
        db: PrefectDb,
        dir: &Path,
        services: bool,
    ) -> Result<PrefectServer, String> {
        let home = dir.join(format!("prefect-home-{}", db.implementation()));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
        let (database_url, pg_db) = match db {
            PrefectDb::Sqlite => (
                format!("sqlite+aiosqlite:///{}/prefect.db", home.display()),
                None,
            ),
            PrefectDb::Postgres => {
                // One database per server of this process (several run at once).
                static NEXT: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let name = format!("atbench_prefect_{}_{n}", std::process::id());
                psql("postgres", &format!("DROP DATABASE IF EXISTS {name}"))?;
                psql("postgres", &format!("CREATE DATABASE {name}"))?;
                psql(&name, "CREATE EXTENSION IF NOT EXISTS pg_trgm")?;
                let (host, user, port) = pg_server();
                (
                    format!("postgresql+asyncpg://{user}@{host}:{port}/{name}"),
                    Some(name),
                )
            }
        };
        let port = free_port().map_err(|e| e.to_string())?;
        let bin = python.with_file_name("prefect");
        let log = std::fs::File::create(home.join("server.log")).map_err(|e| e.to_string())?;
        let t = Instant::now();
        let port_arg = port.to_string();
        let mut args = vec!["server", "start"];
        if !services {
            args.push("--no-services");
        }
        args.extend(["--host", "127.0.0.1", "--port", &port_arg]);
        let child = Command::new(bin)
            .args(&args)
            .env("PREFECT_HOME", &home)
            .env("PREFECT_SERVER_DATABASE_CONNECTION_URL", &database_url)
            .env("PREFECT_SERVER_UI_ENABLED", "false")
            .env("PREFECT_UI_ENABLED", "false")
            .env("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
            .env("PREFECT_SERVER_LOGGING_LEVEL", "WARNING")
            .env("PREFECT_LOGGING_SERVER_LEVEL", "WARNING")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("prefect server start: {e}"))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut server = PrefectServer {
            child,
            addr,
            home,
            pg_db,
            database_url,
            startup_s: 0.0,
        };
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "prefect server exited ({status}); see {}/server.log",
                    server.home.display()
                ));
            }
            if let Ok(mut c) = Http::connect(addr)
                && let Ok((200, _)) = c.request("GET", "/api/health", b"")
            {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "prefect server not healthy in 180 s; see {}/server.log",
                    server.home.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        server.startup_s = t.elapsed().as_secs_f64();
        Ok(server)
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for PrefectServer {
    fn drop(&mut self) {
        // SIGTERM lets uvicorn close its database pool before the drop.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(db) = &self.pg_db {
            let _ = psql(
                "postgres",
                &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
            );
        }
    }
}

/// SQL literal of a string.
fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// SQL literal of a time (µs) as each database's Prefect column holds it:
/// naive UTC text on SQLite (SQLAlchemy's DATETIME), timestamptz on
/// PostgreSQL.
fn ts(db: PrefectDb, us: Option<i64>) -> String {
    let Some(us) = us else { return "NULL".into() };
    let t = appview::rest::time::format(us);
    // 2026-12-05T09:29:58.899981Z -> 2026-12-05 09:29:58.899981
    let naive = t.trim_end_matches('Z').replacen('T', " ", 1);
    match db {
        PrefectDb::Sqlite => lit(&naive),
        PrefectDb::Postgres => format!("'{naive}+00'"),
    }
}

/// A duration (µs): SQLAlchemy's Interval is the epoch plus the duration
/// on SQLite, an interval on PostgreSQL.
fn interval(db: PrefectDb, us: i64) -> String {
    match db {
        PrefectDb::Sqlite => ts(db, Some(us)),
        PrefectDb::Postgres => format!("'{us} microseconds'"),
    }
}

fn json_lit(v: &serde_json::Value) -> String {
    lit(&v.to_string())
}

/// The 10^5 tier's rows as SQL for Prefect's own tables (`flow`,
/// `flow_run`, `flow_run_state`, the columns its migrations create):
/// every flow, run and state of `index` with its ids and times, the
/// columns the model does not hold at Prefect's defaults for a run that
/// never used them. Multi-row INSERTs of `batch` rows, in one
/// transaction; foreign keys are not checked while loading (SQLite does
/// not unless asked; PostgreSQL through `session_replication_role`), so
/// runs and their current states may come in either order.
pub fn bulk_sql(index: &appview::Index, db: PrefectDb, batch: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(index.run_count() * 900);
    out.push_str("BEGIN;\n");
    if db == PrefectDb::Postgres {
        out.push_str("SET session_replication_role = replica;\n");
    }
    let f = match db {
        PrefectDb::Sqlite => "0",
        PrefectDb::Postgres => "false",
    };
    let flows: Vec<String> = index
        .flows()
        .map(|fl| {
            format!(
                "({},{},{},{},{},'{{}}')",
                lit(&fl.id.to_string()),
                ts(db, Some(fl.created)),
                ts(db, Some(fl.updated)),
                lit(&fl.name),
                json_lit(&serde_json::json!(fl.tags))
            )
        })
        .collect();
    for chunk in flows.chunks(batch.max(1)) {
        let _ = writeln!(
            out,
            "INSERT INTO flow (id, created, updated, name, tags, labels) VALUES {};",
            chunk.join(",")
        );
    }
    let runs: Vec<String> = index
        .runs()
        .map(|r| {
            let params: serde_json::Map<String, serde_json::Value> =
                r.parameters.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str()))).collect();
            format!(
                "({},{},{},{},{},{},{},{},{},{},{},{},{},{},'{{}}','{{}}',{},{f},{},{},'{{}}','{{}}')",
                lit(&r.id.to_string()),
                ts(db, Some(r.created)),
                ts(db, Some(r.updated)),
                lit(&r.name),
                lit(r.state_type.as_str()),
                lit(&r.state_name),
                ts(db, Some(r.state_timestamp)),
                r.run_count,
                ts(db, Some(r.expected_start)),
                ts(db, r.next_scheduled_start),
                ts(db, r.start),
                ts(db, r.end),
                interval(db, r.total_run_time),
                json_lit(&serde_json::Value::Object(params)),
                json_lit(&serde_json::json!(r.tags)),
                lit(&r.flow_id.to_string()),
                lit(&r.state_id.to_string()),
            )
        })
        .collect();
    for chunk in runs.chunks(batch.max(1)) {
        let _ = writeln!(
            out,
            "INSERT INTO flow_run (id, created, updated, name, state_type, state_name, state_timestamp, run_count, \
             expected_start_time, next_scheduled_start_time, start_time, end_time, total_run_time, parameters, context, \
             empirical_policy, tags, auto_scheduled, flow_id, state_id, job_variables, labels) VALUES {};",
            chunk.join(",")
        );
    }
    let states: Vec<String> = index
        .states()
        .map(|s| {
            format!(
                "({},{},{},{},{},{},{},{},{})",
                lit(&s.id.to_string()),
                ts(db, Some(s.timestamp)),
                ts(db, Some(s.timestamp)),
                lit(s.state_type.as_str()),
                ts(db, Some(s.timestamp)),
                lit(&s.name),
                if s.message.is_empty() {
                    "NULL".into()
                } else {
                    lit(&s.message)
                },
                json_lit(&serde_json::json!({"flow_run_id": s.run_id.to_string()})),
                lit(&s.run_id.to_string()),
            )
        })
        .collect();
    for chunk in states.chunks(batch.max(1)) {
        let _ = writeln!(
            out,
            "INSERT INTO flow_run_state (id, created, updated, type, timestamp, name, message, state_details, flow_run_id) VALUES {};",
            chunk.join(",")
        );
    }
    out.push_str("COMMIT;\nANALYZE;\n");
    out
}

impl PrefectServer {
    /// Loads `sql` ([`bulk_sql`]) into this server's database, through
    /// Python's sqlite3 (SQLite) or psql (PostgreSQL), while it runs.
    pub fn load_sql(&self, python: &Path, sql: &str) -> Result<(), String> {
        let file = self.home.join("bulk.sql");
        std::fs::write(&file, sql).map_err(|e| e.to_string())?;
        let status = match &self.pg_db {
            None => {
                let db = self.home.join("prefect.db");
                Command::new(python)
                    .args([
                        "-c",
                        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60); c.executescript(open(sys.argv[2]).read())",
                    ])
                    .arg(&db)
                    .arg(&file)
                    .status()
            }
            Some(name) => {
                let (host, user, port) = pg_server();
                Command::new("psql")
                    .args(["-h", &host, "-U", &user, "-p", &port.to_string(), "-d", name, "-q", "-v", "ON_ERROR_STOP=1", "-f"])
                    .arg(&file)
                    .stdout(Stdio::null())
                    .status()
            }
        }
        .map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&file);
        if !status.success() {
            return Err(format!("bulk load into {}: {status}", self.database_url));
        }
        Ok(())
    }
}
