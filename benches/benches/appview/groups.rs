//! The Criterion group of each read pattern, shared by `--bench appview`
//! and `--bench live_backends` (which includes this file by path), so the
//! two targets' rows of one pattern always land in the same group.

use appview::Pattern;
use benches::target::BenchTarget;

/// The group of `pattern`: `appview.<name>`, the name from
/// `Pattern::name`, its one spelling (the registry test derives the same
/// ids from `Pattern::ALL`).
pub fn group(target: &mut BenchTarget, pattern: Pattern) -> benches::Group<'_> {
    target.group(&format!("appview.{}", pattern.name()))
}
