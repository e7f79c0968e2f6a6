//! `benches/units.toml`, the registry of units of work, and the id grammar.
//!
//! An id is `<area>.<operation>/<implementation>[.<variant>]/<tier>`: the
//! group (`area.operation`) and the implementation use `[a-z0-9_.-]`; the
//! tier is a size or count with its unit (`64B`, `16KiB`, `100k`,
//! `callers-10`, `1000x32`) and may also use upper case. No part may hold a
//! space, a slash, `+` or parentheses. The tier may be absent
//! (`repo.commit_sign/k256`).

use std::collections::BTreeMap;

use serde::Deserialize;

/// The registry as compiled into the harness.
pub const UNITS_TOML: &str = include_str!("../units.toml");

/// What Criterion's `Throughput` counts for a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThroughputKind {
    /// `Throughput::Bytes` (or `BytesDecimal`).
    Bytes,
    /// `Throughput::Elements`.
    Elements,
    /// No throughput: the group's work has no size.
    None,
}

/// One group's entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// The bench target that runs the group, `*` for every target, or
    /// several targets separated by commas (a group whose rows come from
    /// two targets, e.g. the embedded and the live backends of one read).
    pub target: String,
    /// What one iteration does.
    pub unit: String,
    /// What the throughput counts.
    pub throughput: ThroughputKind,
    /// Implementations that do the same unit of work, compared side by side.
    #[serde(default)]
    pub compare: Vec<String>,
    /// The whole group is an adjacent probe.
    #[serde(default)]
    pub probe: bool,
    /// The calibration group whose change "Δ vs calibration" divides this
    /// group's by (absent: the geometric mean of every kernel).
    #[serde(default)]
    pub calibration: Option<String>,
    /// Reference implementations measured by a probe outside Criterion
    /// (`peers/`, `BENCH_PEERS=1`), by implementation name (its variants
    /// included): which of our implementations each does the same unit of
    /// work as, and how it differs.
    #[serde(default)]
    pub peers: BTreeMap<String, PeerSpec>,
    /// Floor probes: for a baseline implementation (in `compare`), the
    /// implementation of its probe rows in the same group and tiers: the
    /// same statement on the same data through an independent mainstream
    /// client (`python-sqlite3`, `pgbench`, ...). A probe row is adjacent,
    /// never compared (so it is not in `compare`); the baseline should come
    /// within 1.5x of it or its unit says why not.
    #[serde(default)]
    pub floor_probes: BTreeMap<String, String>,
}

/// One peer of a group.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerSpec {
    /// Our implementations (in `compare`, or their common prefix before a
    /// variant: `full` for `full.callers-1`, matched to the peer's own
    /// variant) it is the same unit of work as.
    pub same_as: Vec<String>,
    /// How the peer's path differs from ours, in one line.
    pub note: String,
}

impl GroupSpec {
    /// Whether `target` runs this group.
    pub fn runs_in(&self, target: &str) -> bool {
        self.target == "*" || self.target.split(',').any(|t| t.trim() == target)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    groups: BTreeMap<String, GroupSpec>,
    /// `[kinds]`: group or id glob -> kind of work (issue 48; read by
    /// scripts/atbench_snapshot/kinds.py, which sets the floors by kind).
    #[serde(default)]
    kinds: BTreeMap<String, String>,
}

/// The kinds of work an id can be classified as (`[kinds]` in units.toml).
pub const KINDS: [&str; 5] = ["cpu", "memory", "io", "network", "threads"];

/// Whether `text` matches the glob `pattern` (`*` any run, `?` one char).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match (pattern.first(), text.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob(&pattern[1..], text) || (!text.is_empty() && glob(pattern, &text[1..]))
        }
        (Some(b'?'), Some(_)) => glob(&pattern[1..], &text[1..]),
        (Some(p), Some(t)) if p == t => glob(&pattern[1..], &text[1..]),
        _ => false,
    }
}

/// The parsed registry.
#[derive(Debug, Clone)]
pub struct Registry {
    /// Entries by group name.
    pub groups: BTreeMap<String, GroupSpec>,
    /// `[kinds]`: pattern -> kind of work.
    pub kinds: BTreeMap<String, String>,
}

impl Registry {
    /// Parses the compiled-in `units.toml` and checks every entry.
    pub fn load() -> Result<Self, String> {
        Self::parse(UNITS_TOML)
    }

    /// Parses a registry text and checks every entry.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: File = toml::from_str(text).map_err(|e| format!("units.toml: {e}"))?;
        for (name, spec) in &file.groups {
            check_group(name).map_err(|e| format!("units.toml: group {name:?}: {e}"))?;
            if spec.unit.trim().is_empty() {
                return Err(format!("units.toml: group {name:?} has an empty unit"));
            }
            if spec.compare.is_empty() && !spec.probe {
                return Err(format!(
                    "units.toml: group {name:?} compares nothing and is not a probe"
                ));
            }
            for implementation in &spec.compare {
                check_implementation(implementation)
                    .map_err(|e| format!("units.toml: group {name:?}: {e}"))?;
            }
            for (peer, peer_spec) in &spec.peers {
                let listed = spec
                    .compare
                    .iter()
                    .any(|c| c == peer || c.starts_with(&format!("{peer}.")));
                if !listed {
                    return Err(format!(
                        "units.toml: group {name:?}: peer {peer:?} is not in compare"
                    ));
                }
                if let Some(missing) = peer_spec.same_as.iter().find(|ours| {
                    !spec
                        .compare
                        .iter()
                        .any(|c| c == *ours || c.starts_with(&format!("{ours}.")))
                }) {
                    return Err(format!(
                        "units.toml: group {name:?}: peer {peer:?} is the same unit as {missing:?}, which is not in compare"
                    ));
                }
            }
            for (baseline, probe) in &spec.floor_probes {
                if !spec.compare.contains(baseline) {
                    return Err(format!(
                        "units.toml: group {name:?}: floor probe of {baseline:?}, which is not in compare"
                    ));
                }
                check_implementation(probe)
                    .map_err(|e| format!("units.toml: group {name:?}: floor probe: {e}"))?;
                if spec.compare.contains(probe) {
                    return Err(format!(
                        "units.toml: group {name:?}: floor probe {probe:?} is in compare (a probe is adjacent, not compared)"
                    ));
                }
            }
            if let Some(kernel) = &spec.calibration
                && (!kernel.starts_with("calibrate.") || !file.groups.contains_key(kernel))
            {
                return Err(format!(
                    "units.toml: group {name:?}: calibration {kernel:?} is not a registered calibrate.* group"
                ));
            }
        }
        for (pattern, kind) in &file.kinds {
            if !KINDS.contains(&kind.as_str()) {
                return Err(format!(
                    "units.toml: [kinds] {pattern:?} = {kind:?}: not one of {KINDS:?}"
                ));
            }
        }
        Ok(Registry {
            groups: file.groups,
            kinds: file.kinds,
        })
    }

    /// The kind of work of `full_id` (the rule of
    /// scripts/atbench_snapshot/kinds.py): an id pattern (with `/`) beats a
    /// group pattern, then the most literal characters, then the text.
    pub fn kind_of(&self, full_id: &str) -> Option<&str> {
        let group = full_id.split('/').next().unwrap_or(full_id);
        self.kinds
            .iter()
            .filter(|(pattern, _)| {
                let subject = if pattern.contains('/') {
                    full_id
                } else {
                    group
                };
                glob(pattern.as_bytes(), subject.as_bytes())
            })
            .min_by_key(|(pattern, _)| {
                let literal = pattern.chars().filter(|c| *c != '*' && *c != '?').count();
                (
                    !pattern.contains('/'),
                    std::cmp::Reverse(literal),
                    pattern.as_str(),
                )
            })
            .map(|(_, kind)| kind.as_str())
    }

    /// The groups `target` must run.
    pub fn groups_of<'a>(&'a self, target: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.groups
            .iter()
            .filter(move |(_, spec)| spec.runs_in(target))
            .map(|(name, _)| name.as_str())
    }
}

fn check_chars(part: &str, what: &str, allowed: impl Fn(char) -> bool) -> Result<(), String> {
    if part.is_empty() {
        return Err(format!("empty {what}"));
    }
    match part.chars().find(|&c| !allowed(c)) {
        Some(c) => Err(format!("{what} {part:?} has {c:?}, outside the id grammar")),
        None => Ok(()),
    }
}

fn lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-')
}

/// Checks a group name: `<area>.<operation>` in `[a-z0-9_.-]`.
pub fn check_group(name: &str) -> Result<(), String> {
    check_chars(name, "group", lower)?;
    match name.split_once('.') {
        Some((area, op)) if !area.is_empty() && !op.is_empty() => Ok(()),
        _ => Err(format!("group {name:?} is not <area>.<operation>")),
    }
}

/// Checks an implementation (with its variant): `[a-z0-9_.-]`.
pub fn check_implementation(name: &str) -> Result<(), String> {
    check_chars(name, "implementation", lower)
}

/// Checks a tier: `[A-Za-z0-9_.-]`, e.g. `16KiB`, `100k`, `callers-10`.
pub fn check_tier(tier: &str) -> Result<(), String> {
    check_chars(tier, "tier", |c| lower(c) || c.is_ascii_uppercase())
}

/// Checks a whole id: `<group>/<implementation>[/<tier>]`.
pub fn check_id(full_id: &str) -> Result<(), String> {
    let parts: Vec<&str> = full_id.split('/').collect();
    match parts.as_slice() {
        [group, implementation] => {
            check_group(group)?;
            check_implementation(implementation)
        }
        [group, implementation, tier] => {
            check_group(group)?;
            check_implementation(implementation)?;
            check_tier(tier)
        }
        _ => Err(format!(
            "id {full_id:?} is not <group>/<implementation>[/<tier>]"
        )),
    }
}

/// The tier name of a byte size: `64B`, `16KiB`, `1MiB`.
pub fn size_tier(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b.is_multiple_of(1 << 20) => format!("{}MiB", b >> 20),
        b if b >= 1 << 10 && b.is_multiple_of(1 << 10) => format!("{}KiB", b >> 10),
        b => format!("{b}B"),
    }
}

/// The tier name of a count: `1k`, `100k`, `1m`.
pub fn count_tier(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n.is_multiple_of(1_000_000) => format!("{}m", n / 1_000_000),
        n if n >= 1_000 && n.is_multiple_of(1_000) => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_parses_and_names_existing_targets() {
        let registry = Registry::load().expect("units.toml is valid");
        let benches = concat!(env!("CARGO_MANIFEST_DIR"), "/benches");
        for (name, spec) in &registry.groups {
            for target in spec.target.split(',').map(str::trim).filter(|t| *t != "*") {
                let file = format!("{benches}/{target}.rs");
                let dir = format!("{benches}/{target}/main.rs");
                assert!(
                    std::path::Path::new(&file).exists() || std::path::Path::new(&dir).exists(),
                    "group {name} names target {target} but neither {file} nor {dir} exists",
                );
            }
        }
        assert!(registry.groups.contains_key("calibrate.cpu"));
    }

    #[test]
    fn every_group_has_a_kind_of_work() {
        let registry = Registry::load().expect("units.toml is valid");
        let unclassified: Vec<String> = registry
            .groups
            .iter()
            .flat_map(|(name, spec)| spec.compare.iter().map(move |i| format!("{name}/{i}")))
            .filter(|id| registry.kind_of(id).is_none())
            .collect();
        assert!(
            unclassified.is_empty(),
            "no [kinds] pattern matches {unclassified:?}"
        );
        assert_eq!(registry.kind_of("calibrate.fsync/file/4KiB"), Some("io"));
        assert_eq!(registry.kind_of("codec.crc32/fast/16KiB"), Some("cpu"));
        assert_eq!(
            registry.kind_of("store.get_record/ours/callers-10"),
            Some("threads")
        );
        assert_eq!(
            registry.kind_of("store.get_record/official-pds/callers-10"),
            Some("network")
        );
        assert!(Registry::parse("[groups]\n[kinds]\n\"a.*\" = \"gpu\"\n").is_err());
    }

    #[test]
    fn grammar() {
        assert!(check_group("codec.base64_decode").is_ok());
        assert!(check_group("codec").is_err());
        assert!(check_group("Codec.x").is_err());
        assert!(check_group("codec.a b").is_err());
        assert!(check_implementation("ours.nosync").is_ok());
        assert!(check_implementation("a+b").is_err());
        assert!(check_implementation("a/b").is_err());
        assert!(check_tier("16KiB").is_ok());
        assert!(check_tier("callers-10").is_ok());
        assert!(check_tier("(x)").is_err());
        assert!(check_tier("").is_err());
    }

    #[test]
    fn tiers() {
        assert_eq!(size_tier(64), "64B");
        assert_eq!(size_tier(1024), "1KiB");
        assert_eq!(size_tier(16 * 1024), "16KiB");
        assert_eq!(size_tier(256 * 1024), "256KiB");
        assert_eq!(size_tier(1 << 20), "1MiB");
        assert_eq!(size_tier(212), "212B");
        assert_eq!(count_tier(1000), "1k");
        assert_eq!(count_tier(100_000), "100k");
        assert_eq!(count_tier(1_000_000), "1m");
    }

    #[test]
    fn bad_registries_are_refused() {
        let no_compare = "[groups.\"a.b\"]\ntarget=\"x\"\nunit=\"u\"\nthroughput=\"bytes\"\n";
        assert!(Registry::parse(no_compare).is_err());
        let bad_name =
            "[groups.\"ab\"]\ntarget=\"x\"\nunit=\"u\"\nthroughput=\"bytes\"\nprobe=true\n";
        assert!(Registry::parse(bad_name).is_err());
        let unknown =
            "[groups.\"a.b\"]\ntarget=\"x\"\nunit=\"u\"\nthroughput=\"bytes\"\nprobe=true\nx=1\n";
        assert!(Registry::parse(unknown).is_err());
        let bad_kernel = "[groups.\"a.b\"]\ntarget=\"x\"\nunit=\"u\"\nthroughput=\"bytes\"\nprobe=true\ncalibration=\"a.b\"\n";
        assert!(Registry::parse(bad_kernel).is_err());
    }
}
