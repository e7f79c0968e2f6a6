//! `EXPLAIN QUERY PLAN` of every statement of the crate: each one reads
//! through a primary key or an index (a `SEARCH`), never a full `SCAN`,
//! and never sorts in a temp B-tree. The table it prints is the one in
//! `docs/design/space.md`.

mod common;

#[test]
fn no_statement_scans_or_sorts() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::open(&dir);
    drop(s);
    let conn = rusqlite::Connection::open(dir.path().join("store.sqlite")).unwrap();
    let mut bad = Vec::new();
    println!("| statement | plan |\n|---|---|");
    for (name, sql) in space::statements() {
        let mut st = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        // Unbound parameters are NULL: the plan does not depend on them.
        let mut rows = st.raw_query();
        let mut details = Vec::new();
        while let Some(r) = rows.next().unwrap() {
            details.push(r.get::<_, String>(3).unwrap());
        }
        let plan = if details.is_empty() {
            "(no read: a write by key)".to_owned()
        } else {
            details.join("; ")
        };
        println!("| `{name}` | {plan} |");
        for d in &details {
            if d.starts_with("SCAN") || d.contains("TEMP B-TREE") {
                bad.push(format!("{name}: {d}"));
            }
        }
    }
    assert!(bad.is_empty(), "full scans or sorts: {bad:#?}");
}
