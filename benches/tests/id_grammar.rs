//! The id grammar against `benches/tests/id_grammar.toml`, the one list of
//! valid and invalid ids that the Python snapshot registry is tested on too
//! (`scripts/tests/test_machine.py`), so both sides apply the same rules.

use benches::registry::check_id;
use serde::Deserialize;

#[derive(Deserialize)]
struct Invalid {
    id: String,
    why: String,
}

#[derive(Deserialize)]
struct Grammar {
    valid: Vec<String>,
    invalid: Vec<Invalid>,
}

#[test]
fn the_shared_id_list_holds() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/id_grammar.toml");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let grammar: Grammar = toml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(!grammar.valid.is_empty() && !grammar.invalid.is_empty());
    for id in &grammar.valid {
        if let Err(e) = check_id(id) {
            panic!("{id:?} should be valid: {e}");
        }
    }
    for case in &grammar.invalid {
        assert!(
            check_id(&case.id).is_err(),
            "{:?} should be invalid ({})",
            case.id,
            case.why
        );
    }
}
