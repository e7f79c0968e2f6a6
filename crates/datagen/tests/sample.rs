//! `load_sample()` from the default data directory: whatever the directory
//! holds (the full dataset, only the committed MANIFEST.json, or nothing),
//! the benches get the same lines.

use datagen::hotpath::{
    Kind, Sample, SampleSizes, SampleSource, data_dir, load_sample, sample_source,
};

#[test]
fn default_sample_is_the_generated_one_wherever_it_comes_from() {
    assert_eq!(sample_source(), "none");
    let loaded = load_sample();
    let source = loaded.source;
    assert_eq!(sample_source(), source.as_str());
    eprintln!(
        "sample came from {} ({})",
        source.as_str(),
        data_dir().display()
    );

    let sizes = SampleSizes::BENCH;
    assert_eq!(
        [
            loaded.records.len(),
            loaded.sql.len(),
            loaded.object.len(),
            loaded.rest.len(),
            loaded.blobs.len()
        ],
        [8000, 8000, 4000, 4000, 64]
    );
    let mut generated = Sample::generate(sizes);
    generated.source = source;
    assert!(
        loaded == generated,
        "sample from {} differs from the generator",
        source.as_str()
    );
    if source == SampleSource::DataDir {
        assert!(data_dir().join(Kind::Records.file_name()).exists());
    }
}

#[test]
fn data_dir_is_the_workspace_data_folder() {
    if std::env::var_os("ATBENCH_DATA_DIR").is_some_and(|v| !v.is_empty()) {
        return; // overridden by the caller's environment
    }
    let dir = data_dir();
    assert!(dir.ends_with("data"), "{}", dir.display());
    assert!(
        dir.parent().unwrap().join("Cargo.toml").exists(),
        "{}",
        dir.display()
    );
    assert!(
        dir.parent().unwrap().join("crates/datagen").is_dir(),
        "{}",
        dir.display()
    );
}
