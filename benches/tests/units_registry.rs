//! `benches/units.toml` against the bench sources: every group a bench
//! target opens (`.group("…")` with a literal name, the house convention,
//! or an appview read pattern's group, named by `appview::Pattern`) is
//! registered for that target, and every registered group is opened by its
//! target — nothing unregistered, nothing stale. The bench targets enforce
//! the same at run time (`cargo bench --features bench-internals -- --test`);
//! this test catches it without building them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use benches::registry::{Registry, check_group};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The literal names passed to `.group("…")` in `source`.
fn opened_groups(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find(".group(\"") {
        rest = &rest[at + ".group(\"".len()..];
        if let Some(end) = rest.find('"') {
            names.push(rest[..end].to_owned());
            rest = &rest[end..];
        }
    }
    names
}

/// The groups a gungraun source counts: `instructions.<f>` for every
/// `#[library_benchmark]` function `f` (see
/// `benches/benches/instructions/main.rs`).
fn counted_groups(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("#[library_benchmark]") {
        rest = &rest[at..];
        if let Some(f) = rest.find("\nfn ") {
            rest = &rest[f + "\nfn ".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            names.push(format!("instructions.{}", &rest[..end]));
        } else {
            break;
        }
    }
    names
}

/// The bench target a file under `benches/benches/` belongs to.
fn target_of(path: &Path) -> String {
    let relative = path
        .strip_prefix(Path::new(ROOT).join("benches"))
        .unwrap_or_else(|_| panic!("{} is outside benches/benches", path.display()));
    let first = relative
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    first.trim_end_matches(".rs").to_owned()
}

#[test]
fn every_opened_group_is_registered_and_nothing_is_stale() {
    let registry = Registry::load().unwrap_or_else(|e| panic!("{e}"));
    let mut files = Vec::new();
    rust_files(&Path::new(ROOT).join("benches"), &mut files);
    assert!(!files.is_empty(), "no bench sources under {ROOT}/benches");

    // group -> targets that open it
    let mut opened: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut sources: Vec<(String, String)> = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{e}"));
        for group in opened_groups(&source)
            .into_iter()
            .chain(counted_groups(&source))
        {
            check_group(&group).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            opened.entry(group).or_default().insert(target_of(file));
        }
        sources.push((target_of(file), source));
    }
    // Groups the harness opens: the calibration groups (`target.rs`) for
    // every target; those of another harness module for every target
    // whose sources use that module (`benches::appview::group`).
    let mut harness = Vec::new();
    rust_files(&Path::new(ROOT).join("src"), &mut harness);
    for file in &harness {
        let source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{e}"));
        let module = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let users: BTreeSet<String> = if module == "target" {
            BTreeSet::from(["*".to_owned()])
        } else {
            let path = format!("benches::{module}::");
            sources
                .iter()
                .filter(|(_, s)| s.contains(&path))
                .map(|(t, _)| t.clone())
                .collect()
        };
        for group in opened_groups(&source) {
            check_group(&group).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert!(
                !users.is_empty(),
                "{} opens group {group} but no bench target uses benches::{module}",
                file.display()
            );
            opened
                .entry(group)
                .or_default()
                .extend(users.iter().cloned());
        }
    }
    // The read patterns' groups are built from `appview::Pattern::name`
    // (`benches::appview::group`, which both targets use), not spelled out.
    for pattern in appview::Pattern::ALL {
        let group = format!("appview.{}", pattern.name());
        check_group(&group).unwrap_or_else(|e| panic!("{e}"));
        let targets = opened.entry(group).or_default();
        targets.insert("appview".to_owned());
        targets.insert("live_backends".to_owned());
        // Their REST counterparts (`benches/benches/appview/rest.rs`).
        let rest = format!("appview.rest_{}", pattern.name());
        check_group(&rest).unwrap_or_else(|e| panic!("{e}"));
        opened.entry(rest).or_default().insert("appview".to_owned());
    }

    for (group, targets) in &opened {
        let spec = registry.groups.get(group).unwrap_or_else(|| {
            panic!("group {group} is opened by {targets:?} but not registered in units.toml")
        });
        for target in targets {
            assert!(
                spec.runs_in(target),
                "group {group} is opened by target {target} but registered for {}",
                spec.target
            );
        }
    }
    let stale: Vec<&String> = registry
        .groups
        .keys()
        .filter(|g| !opened.contains_key(*g))
        .collect();
    assert!(
        stale.is_empty(),
        "units.toml lists groups no bench opens: {stale:?}"
    );
}

#[test]
fn counted_functions_are_found() {
    let source = "#[library_benchmark]\n#[bench::a__1(x)]\nfn crc32(x: u8) {}\n\
                  fn other() {}\n#[library_benchmark]\nfn mst_add() {}";
    assert_eq!(
        counted_groups(source),
        ["instructions.crc32", "instructions.mst_add"]
    );
}

#[test]
fn group_literals_are_found() {
    let names = opened_groups(r#"let g = t.group("a.b"); let h = t.group("c.d");"#);
    assert_eq!(names, ["a.b", "c.d"]);
}
