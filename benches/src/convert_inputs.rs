//! The convert inputs `--bench hotpath` and `examples/dhat_hotpath.rs`
//! share: the merge_context contexts and the typed SQL rows derived from
//! the sample records.

use convert::{Cell, Context};
use serde_json::{Map, Value};

/// The authenticated and wire contexts of the merge benchmark (also used by
/// the dhat example): the wire sets user (padded, so it is trimmed),
/// correlation id, purpose, target backend, replica lag and scopes; it
/// leaves target instance, routing policy and read fence blank, two of
/// which the authenticated side has (the merge copies those two).
pub fn merge_inputs() -> (Context, Context) {
    let authenticated = Context {
        tenant: "tenant-007".into(),
        project: "atlas-03".into(),
        consistency: convert::Consistency::ReadYourWrites,
        catalog_version: 1_812,
        service_identity: "spiffe://gateway.internal/ns/data/sa/api".into(),
        decision_id: "dec-6f1c2a9e4b7d".into(),
        user: "svc-ingest".to_owned(),
        target_instance: "pg-eu-west-1b".to_owned(),
        routing_policy: "nearest-healthy".to_owned(),
        max_replica_lag_ms: 250,
        scopes: vec!["records:read".to_owned()].into(),
        ..Context::default()
    };
    let wire = Context {
        tenant: "tenant-999".into(),
        project: "other".into(),
        user: "  alice@example.org ".to_owned(),
        correlation_id: "req-01HZX3K9Q8".to_owned(),
        purpose: "support-ticket-4411".to_owned(),
        target_backend: "postgres".to_owned(),
        max_replica_lag_ms: 100,
        trace: true,
        scopes: vec!["records:read".to_owned(), "records:write".to_owned()].into(),
        ..Context::default()
    };
    (wire, authenticated)
}

/// Microseconds since the epoch of an RFC 3339 `YYYY-MM-DDTHH:MM:SS.mmmZ`
/// (`codec::datetime`, the workspace's one owner of dates).
fn micros_of(text: &str) -> Option<i64> {
    codec::datetime::parse_rfc3339_micros(text)
}

/// The 16 typed columns derived from a sample record; a set of more columns
/// repeats them with a suffix.
fn record_cells(record: &Map<String, Value>) -> [(&'static str, Cell); 16] {
    let text = |k: &str| {
        Cell::Text(
            record
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        )
    };
    let int = |v: Option<&Value>| Cell::Int(v.and_then(Value::as_i64).unwrap_or(0));
    let counts = record.get("counts");
    let metadata = record.get("metadata").cloned().unwrap_or(Value::Null);
    [
        (
            "id",
            Cell::Uuid(
                record
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|h| u128::from_str_radix(h, 16).ok())
                    .unwrap_or(0),
            ),
        ),
        ("tenant", text("tenant")),
        ("seq", int(record.get("seq"))),
        (
            "score",
            Cell::Float(record.get("score").and_then(Value::as_f64).unwrap_or(0.0)),
        ),
        (
            "ratio",
            Cell::Numeric(
                record
                    .get("ratio")
                    .map(Value::to_string)
                    .unwrap_or_default(),
            ),
        ),
        (
            "active",
            record
                .get("active")
                .and_then(Value::as_bool)
                .map_or(Cell::Null, Cell::Bool),
        ),
        (
            "payload",
            Cell::Bytes(
                record
                    .get("payload_b64")
                    .and_then(Value::as_str)
                    .and_then(|t| codec::base64::decode(t.as_bytes()).ok())
                    .unwrap_or_default(),
            ),
        ),
        (
            "created_at",
            record
                .get("created_at")
                .and_then(Value::as_str)
                .and_then(micros_of)
                .map_or(Cell::Null, Cell::Timestamp),
        ),
        (
            "flagged",
            record
                .get("flagged")
                .and_then(Value::as_bool)
                .map_or(Cell::Null, Cell::Bool),
        ),
        ("project", text("project")),
        ("views", int(counts.and_then(|c| c.get("views")))),
        ("metadata", Cell::Json(metadata.clone())),
        ("note", text("note")),
        (
            "tags",
            Cell::Json(record.get("tags").cloned().unwrap_or(Value::Null)),
        ),
        ("delta", int(counts.and_then(|c| c.get("delta")))),
        (
            "lang",
            Cell::Text(
                metadata
                    .get("lang")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            ),
        ),
    ]
}

/// `rows` x `cols` typed cells from the first `rows` sample records.
pub fn record_table(
    records: &[Map<String, Value>],
    rows: usize,
    cols: usize,
) -> (Vec<String>, Vec<Vec<Cell>>) {
    let mut columns = Vec::with_capacity(cols);
    let mut table = Vec::with_capacity(rows);
    for (r, record) in records.iter().take(rows).enumerate() {
        let cells = record_cells(record);
        let mut row = Vec::with_capacity(cols);
        for c in 0..cols {
            let (name, cell) = &cells[c % cells.len()];
            if r == 0 {
                columns.push(if c < cells.len() {
                    (*name).to_owned()
                } else {
                    format!("{name}_{}", c / cells.len())
                });
            }
            row.push(cell.clone());
        }
        table.push(row);
    }
    (columns, table)
}
