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

/// The check above reads `space::statements()`; this holds every other SQL
/// text of the crate to the migration's three, which run once per open on
/// `sqlite_master` and the one-row `space_schema` table: a statement added
/// anywhere but `src/sql.rs` fails here instead of escaping the plan check.
#[test]
fn every_statement_is_in_the_plan_check() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.clone()];
    let mut found = Vec::new();
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if p.extension().is_none_or(|e| e != "rs") || p.ends_with("sql.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (n, line) in text.lines().enumerate() {
            let upper = line.to_ascii_uppercase();
            for verb in [
                "\"SELECT ",
                "\"INSERT ",
                "\"UPDATE ",
                "\"DELETE ",
                "\"WITH ",
                "\"REPLACE ",
            ] {
                if upper.contains(verb) {
                    let name = p.strip_prefix(&src).unwrap().display().to_string();
                    found.push(format!("{name}:{}", n + 1));
                }
            }
        }
    }
    found.sort();
    let migration: Vec<&str> = found.iter().map(|f| f.split(':').next().unwrap()).collect();
    assert!(
        found.len() == 3 && migration.iter().all(|f| *f == "schema.rs"),
        "SQL outside src/sql.rs (add it to sql::STATEMENTS): {found:#?}"
    );
}
