//! Bulk loading: the seeded workload planned and applied straight to an
//! index, without signing a commit per write. The records go through
//! [`Index::apply_record`], the path a decoded commit takes, so the index
//! equals the one the signed stream builds (a test checks it at 300 runs).
//! This builds the 10^5-run tier in a second instead of signing ~290,000
//! commits; the signed stream itself is measured at 300 runs. Behind the
//! `workload` feature, like every use of the generator.

use datagen::appview::Workload;

use crate::error::Result;
use crate::index::Index;
use crate::model::Mutation;
use crate::plan::{Input, plan};

/// The workload's index and every mutation it planned, in order.
pub fn load(workload: &Workload) -> Result<(Index, Vec<Mutation>)> {
    let mut index = Index::new();
    let mut mutations = Vec::with_capacity(workload.ops.len());
    for op in &workload.ops {
        let m = plan(&index, &Input::from_op(op)?)?;
        // The index keeps its own copy; the mutation is returned too.
        for r in m.records() {
            index.apply_record(r.to_record());
        }
        mutations.push(m);
    }
    Ok((index, mutations))
}
