//! Configuration: one struct per backend, read from `GATEWAY_*` variables
//! with this project's local services as defaults, and the pool settings
//! every executor shares.

use std::time::Duration;

/// Pool size and timeouts, the same knobs for every backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Connections the pool opens at most. More connections let more lines
    /// run at once on the server; each costs a server process or thread
    /// (PostgreSQL) and memory. Default: 2 x the cores of this machine.
    pub size: usize,
    /// How long opening a connection, or waiting for a free one, may take
    /// before the line fails with `Timeout` (or `Unreachable` when the
    /// connect itself was refused).
    pub connect_timeout: Duration,
    /// How long one statement or request may run, measured by the client;
    /// SQL backends also get it as their session's server-side limit so the
    /// server stops working on a line nobody waits for.
    pub statement_timeout: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        PoolConfig {
            size: 2 * cores,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(30),
        }
    }
}

/// The default PostgreSQL URL: this machine's server, database `test`.
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
/// The default MariaDB/MySQL URL: root with an empty password, database `test`.
pub const DEFAULT_MYSQL_URL: &str = "mysql://root@127.0.0.1:3306/test";
/// The default Redis URL.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379/";

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// A relational backend: a URL and the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlConfig {
    /// `postgres://user[:password]@host:port/db` or `mysql://...`.
    pub url: String,
    /// Pool and timeouts.
    pub pool: PoolConfig,
}

impl SqlConfig {
    /// PostgreSQL from `GATEWAY_PG_URL`, else [`DEFAULT_PG_URL`].
    pub fn postgres_from_env() -> Self {
        SqlConfig {
            url: env_or("GATEWAY_PG_URL", DEFAULT_PG_URL),
            pool: PoolConfig::default(),
        }
    }

    /// The same server and pool with database `db` (the URL's path
    /// replaced; user, host and query kept).
    pub fn with_database(&self, db: &str) -> SqlConfig {
        let (scheme, rest) = self.url.split_once("://").unwrap_or(("", &self.url));
        let (before_query, query) = rest
            .split_once('?')
            .map_or((rest, None), |(a, q)| (a, Some(q)));
        let host = before_query.split('/').next().unwrap_or(before_query);
        let mut url = format!("{scheme}://{host}/{db}");
        if let Some(q) = query {
            url.push('?');
            url.push_str(q);
        }
        SqlConfig {
            url,
            pool: self.pool,
        }
    }

    /// MariaDB/MySQL from `GATEWAY_MYSQL_URL`, else [`DEFAULT_MYSQL_URL`].
    pub fn mysql_from_env() -> Self {
        SqlConfig {
            url: env_or("GATEWAY_MYSQL_URL", DEFAULT_MYSQL_URL),
            pool: PoolConfig::default(),
        }
    }
}

/// Redis: a URL, the prefix every key of a line is put under, and the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://host:port/[db]`.
    pub url: String,
    /// Prepended to every key a line names, so that tenants (and test runs)
    /// sharing one server never see each other's keys. Empty = none.
    pub key_prefix: String,
    /// Pool and timeouts.
    pub pool: PoolConfig,
}

impl RedisConfig {
    /// From `GATEWAY_REDIS_URL` (else [`DEFAULT_REDIS_URL`]) and
    /// `GATEWAY_REDIS_PREFIX` (else none).
    pub fn from_env() -> Self {
        RedisConfig {
            url: env_or("GATEWAY_REDIS_URL", DEFAULT_REDIS_URL),
            key_prefix: env_or("GATEWAY_REDIS_PREFIX", ""),
            pool: PoolConfig::default(),
        }
    }
}

/// An S3-compatible endpoint and its credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Config {
    /// `http(s)://host:port` of the service.
    pub endpoint: String,
    /// SigV4 region.
    pub region: String,
    /// Access key id.
    pub access_key: String,
    /// Secret access key.
    pub secret_key: String,
    /// Path-style addressing (`endpoint/bucket/key`) rather than
    /// virtual-hosted (`bucket.endpoint/key`); most self-hosted servers
    /// want path style.
    pub path_style: bool,
    /// Pool (idle connections kept per host) and timeouts.
    pub pool: PoolConfig,
}

impl S3Config {
    /// From `GATEWAY_S3_URL`, `GATEWAY_S3_REGION` (default `us-east-1`),
    /// `GATEWAY_S3_ACCESS_KEY`, `GATEWAY_S3_SECRET_KEY` and
    /// `GATEWAY_S3_PATH_STYLE` (`0` for virtual-hosted; default path style).
    /// `None` when `GATEWAY_S3_URL` is unset: there is no default S3 server.
    pub fn from_env() -> Option<Self> {
        let endpoint = std::env::var("GATEWAY_S3_URL")
            .ok()
            .filter(|v| !v.is_empty())?;
        Some(S3Config {
            endpoint,
            region: env_or("GATEWAY_S3_REGION", "us-east-1"),
            access_key: env_or("GATEWAY_S3_ACCESS_KEY", ""),
            secret_key: env_or("GATEWAY_S3_SECRET_KEY", ""),
            path_style: env_or("GATEWAY_S3_PATH_STYLE", "1") != "0",
            pool: PoolConfig::default(),
        })
    }
}

/// `host:port` of a URL, for messages that must not carry the password.
pub(crate) fn endpoint_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or(rest).to_string()
}

#[cfg(test)]
mod tests {
    use super::{PoolConfig, SqlConfig, endpoint_of};

    #[test]
    fn the_endpoint_of_a_url_drops_the_credentials_and_the_path() {
        assert_eq!(endpoint_of("postgres://u:secret@db:5432/test"), "db:5432");
        assert_eq!(endpoint_of("redis://127.0.0.1:6379/"), "127.0.0.1:6379");
        assert_eq!(endpoint_of("mysql://root@h:3306/test?x=1"), "h:3306");
        assert_eq!(endpoint_of("nohost"), "nohost");
    }

    #[test]
    fn with_database_replaces_only_the_path() {
        let c = SqlConfig {
            url: "mysql://root@h:3306/test?x=1".into(),
            pool: PoolConfig::default(),
        };
        assert_eq!(
            c.with_database("other").url,
            "mysql://root@h:3306/other?x=1"
        );
        let c = SqlConfig {
            url: "postgres://u@h:5432".into(),
            pool: PoolConfig::default(),
        };
        assert_eq!(c.with_database("d").url, "postgres://u@h:5432/d");
    }
}
