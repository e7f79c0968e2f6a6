//! The Criterion group of each read pattern, shared by `--bench appview`
//! and `--bench live_backends` (which includes this file by path), so the
//! two targets' rows of one pattern always land in the same group.

use appview::Pattern;
use benches::target::BenchTarget;

/// The group of `pattern` (literal names: the registry test reads them).
pub fn group(target: &mut BenchTarget, pattern: Pattern) -> benches::Group<'_> {
    match pattern {
        Pattern::PointLookup => target.group("appview.point_lookup"),
        Pattern::ActiveByState => target.group("appview.active_by_state"),
        Pattern::Completed50 => target.group("appview.completed_50"),
        Pattern::Paginated => target.group("appview.paginated"),
        Pattern::CountCompleted => target.group("appview.count_completed"),
        Pattern::FlowList => target.group("appview.flow_list"),
        Pattern::Completed1h => target.group("appview.completed_1h"),
    }
}
