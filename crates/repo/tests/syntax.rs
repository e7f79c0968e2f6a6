//! Every line of every interop syntax vector file.

mod common;

use repo::syntax::{self, SyntaxError};

type Check = fn(&str) -> Result<(), SyntaxError>;

fn run(stem: &str, check: Check) -> (usize, usize) {
    let valid = common::syntax_lines(&format!("interop/syntax/{stem}_syntax_valid.txt"));
    let invalid = common::syntax_lines(&format!("interop/syntax/{stem}_syntax_invalid.txt"));
    let mut failures = Vec::new();
    for v in &valid {
        if let Err(e) = check(v) {
            failures.push(format!("valid {stem} rejected: {v:?}: {e}"));
        }
    }
    for v in &invalid {
        if check(v).is_ok() {
            failures.push(format!("invalid {stem} accepted: {v:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Anti-vacuity: the vendored files hold exactly this many vectors.
    let want = match stem {
        "tid" => (4, 9),
        "recordkey" => (16, 11),
        "nsid" => (25, 27),
        "did" => (24, 18),
        "handle" => (71, 48),
        "atidentifier" => (11, 22),
        "aturi" => (23, 72),
        "cid" => (8, 10),
        "uri" => (9, 12),
        "datetime" => (35, 45),
        "language" => (18, 7),
        _ => panic!("no expected count for {stem}"),
    };
    assert_eq!((valid.len(), invalid.len()), want, "{stem} vector counts");
    (valid.len(), invalid.len())
}

#[test]
fn tid() {
    run("tid", syntax::validate_tid);
}

#[test]
fn record_key() {
    run("recordkey", syntax::validate_record_key);
}

#[test]
fn nsid() {
    run("nsid", syntax::validate_nsid);
}

#[test]
fn did() {
    run("did", syntax::validate_did);
}

#[test]
fn handle() {
    run("handle", syntax::validate_handle);
}

#[test]
fn at_identifier() {
    run("atidentifier", syntax::validate_at_identifier);
}

#[test]
fn at_uri() {
    run("aturi", syntax::validate_at_uri);
}

#[test]
fn cid() {
    run("cid", syntax::validate_cid_syntax);
}

#[test]
fn uri() {
    run("uri", syntax::validate_uri);
}

#[test]
fn datetime() {
    // The grammar and the full check agree on the syntax lists.
    run("datetime", syntax::validate_datetime_syntax);
    run("datetime", syntax::validate_datetime);
    let parse_invalid = common::syntax_lines("interop/syntax/datetime_parse_invalid.txt");
    assert_eq!(parse_invalid.len(), 7);
    for v in &parse_invalid {
        assert!(
            syntax::validate_datetime_syntax(v).is_ok(),
            "grammar rejected {v:?}"
        );
        assert!(syntax::validate_datetime(v).is_err(), "accepted {v:?}");
    }
}

#[test]
fn language() {
    run("language", syntax::validate_language_syntax);
    run("language", syntax::validate_language);
    let parse_invalid = common::syntax_lines("interop/syntax/language_parse_invalid.txt");
    assert_eq!(parse_invalid.len(), 4);
    for v in &parse_invalid {
        assert!(
            syntax::validate_language_syntax(v).is_ok(),
            "grammar rejected {v:?}"
        );
        assert!(syntax::validate_language(v).is_err(), "accepted {v:?}");
    }
}

#[test]
fn strict_cid_parser_on_cid_vectors() {
    // The strict parser accepts only CIDv1 sha2-256 dag-cbor/raw in base32;
    // every invalid-syntax line must be rejected by it too.
    for v in common::syntax_lines("interop/syntax/cid_syntax_invalid.txt") {
        assert!(v.parse::<repo::Cid>().is_err(), "{v:?}");
    }
}

#[test]
fn tid_round_trips_valid_vectors() {
    for v in common::syntax_lines("interop/syntax/tid_syntax_valid.txt") {
        let t: syntax::Tid = v.parse().unwrap();
        assert_eq!(t.to_string(), v);
    }
}
