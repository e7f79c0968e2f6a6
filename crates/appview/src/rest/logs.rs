//! The log routes over [`crate::logs::LogStore`] (a SQLite table beside
//! the store, not records: why is that module's doc).
//!
//! | route | answer |
//! |---|---|
//! | `POST /api/logs/` | 201 `null` once the batch is durable (one transaction); 422 in Prefect's shape for a bad line (nothing written) or past `MAX_BATCH` lines; 413 past `RestConfig::max_log_batch_bytes` |
//! | `POST /api/logs/filter` | lines by `logs.flow_run_id.any_`, `task_run_id.any_`/`is_null_`, `level.ge_`/`le_`, `timestamp.after_`/`before_` (inclusive), `sort` `TIMESTAMP_ASC` (default) or `TIMESTAMP_DESC`, `limit` (default and maximum 200), `offset`; Prefect's `Log` JSON |
//!
//! Not answered: `logs.text` (Prefect's text search) and `operator` `or_`
//! are refused with 422 `not_supported`; `GET /api/logs/out` (live
//! streaming, which `prefect flow-run logs` does not use) is 404.

use serde_json::Value;

use crate::app::AppView;
use crate::logs::LogRow;
use crate::rest::reply::Reply;
use crate::rest::request::{self, PageError};
use crate::rest::{render, time};
use crate::uuid::Uuid;

/// The log routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogRoute {
    /// `POST /api/logs/`.
    Create,
    /// `POST /api/logs/filter`.
    Filter,
}

/// A version 7 UUID for a line taken at `now_us` (Prefect's log ids are
/// version 7: time-ordered).
fn uuid7(now_us: i64, random: u128) -> Uuid {
    let ms = u128::from(u64::try_from(now_us.div_euclid(1000)).unwrap_or(0)) & ((1 << 48) - 1);
    let rand = random & !(0xffff_ffff_ffff_u128 << 80) & !(0xf << 76) & !(0x3 << 62);
    Uuid((ms << 80) | (0x7 << 76) | (0x2 << 62) | rand)
}

fn parse(text: &[u8]) -> Result<Value, Reply> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(text).map_err(|e| Reply::bad_json(&e, text))
}

/// Answers a log route with request body `text`.
pub fn respond(app: &AppView, route: LogRoute, text: &[u8]) -> Reply {
    let body = match parse(text) {
        Ok(v) => v,
        Err(r) => return r,
    };
    match route {
        LogRoute::Create => create(app, &body),
        LogRoute::Filter => filter(app, &body),
    }
}

fn create(app: &AppView, body: &Value) -> Reply {
    let lines = match request::logs_create(body) {
        Ok(l) => l,
        Err(e) => return Reply::invalid(&e, body),
    };
    let now = time::now_us();
    let mut rows = Vec::with_capacity(lines.len());
    for l in lines {
        let mut b = [0u8; 16];
        if getrandom::fill(&mut b).is_err() {
            return Reply::exception(500, "Internal Server Error");
        }
        rows.push(LogRow {
            id: uuid7(now, u128::from_be_bytes(b)),
            created: now,
            name: l.name,
            level: l.level,
            message: l.message,
            timestamp: l.timestamp,
            flow_run_id: l.flow_run_id,
            task_run_id: l.task_run_id,
        });
    }
    match app.logs().insert(&rows) {
        // Prefect's route returns None with 201.
        Ok(()) => Reply::json(201, "null".into()),
        Err(_) => Reply::exception(500, "Internal Server Error"),
    }
}

fn filter(app: &AppView, body: &Value) -> Reply {
    let q = match request::logs_read(body) {
        Ok(q) => q,
        Err(PageError::Invalid(i)) => return Reply::invalid(&i, body),
        Err(PageError::Limit) => {
            return Reply::detail(422, "Invalid limit: must be less than or equal to 200.");
        }
    };
    let rows = match app.logs().read(&q.filter, q.sort, q.offset, q.limit) {
        Ok(r) => r,
        Err(_) => return Reply::exception(500, "Internal Server Error"),
    };
    let mut out = String::with_capacity(rows.iter().map(|r| 320 + r.message.len()).sum());
    out.push('[');
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        log(&mut out, r);
    }
    out.push(']');
    Reply::json(200, out)
}

fn id(out: &mut String, id: Option<Uuid>) {
    match id {
        Some(id) => {
            let mut buf = [0u8; 36];
            out.push('"');
            out.push_str(id.write_to(&mut buf));
            out.push('"');
        }
        None => out.push_str("null"),
    }
}

/// Prefect's `Log` JSON, its fields in its order.
fn log(out: &mut String, r: &LogRow) {
    out.push_str("{\"id\":");
    id(out, Some(r.id));
    for k in ["created", "updated"] {
        out.push_str(",\"");
        out.push_str(k);
        out.push_str("\":\"");
        time::write(out, r.created);
        out.push('"');
    }
    out.push_str(",\"name\":");
    render::string(out, &r.name);
    out.push_str(",\"level\":");
    out.push_str(&r.level.to_string());
    out.push_str(",\"message\":");
    render::string(out, &r.message);
    out.push_str(",\"timestamp\":\"");
    time::write(out, r.timestamp);
    out.push_str("\",\"flow_run_id\":");
    id(out, r.flow_run_id);
    out.push_str(",\"task_run_id\":");
    id(out, r.task_run_id);
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_version_7_and_ordered_by_time() {
        let a = uuid7(1_765_000_000_000_000, u128::MAX).to_string();
        let b = uuid7(1_765_000_000_001_000, 0).to_string();
        assert_eq!(&a[14..15], "7");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        assert!(a < b, "{a} {b}");
    }

    #[test]
    fn a_line_renders_as_prefects_log() {
        let mut out = String::new();
        log(
            &mut out,
            &LogRow {
                id: Uuid(1),
                created: 0,
                name: "n".into(),
                level: 20,
                message: "say \"hi\"".into(),
                timestamp: 1_000_000,
                flow_run_id: Some(Uuid(2)),
                task_run_id: None,
            },
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["message"], "say \"hi\"");
        assert_eq!(v["timestamp"], "1970-01-01T00:00:01.000000Z");
        assert_eq!(v["flow_run_id"], "00000000-0000-0000-0000-000000000002");
        assert!(v["task_run_id"].is_null());
        assert_eq!(v["updated"], v["created"]);
    }
}
