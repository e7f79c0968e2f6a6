//! Prefect 3's response shapes (`FlowResponse`, `FlowRunResponse`,
//! `State`, `OrchestrationResult`), written straight into the response
//! text. The fields the model does not hold are written as Prefect writes
//! them for a run that never used them (no deployment, no work pool, the
//! default empirical policy); derived fields are computed as Prefect does
//! (`estimated_run_time` adds the time in RUNNING so far,
//! `estimated_start_time_delta` is how late the run started or, not yet
//! started, is).

use std::fmt::Write as _;

use crate::model::{Flow, FlowRunState, StateType};
use crate::rest::time;
use crate::run_page::RunView;
use crate::uuid::Uuid;

/// Appends `s` as a JSON string.
pub use codec::json_text::push_string as string;

fn uuid(out: &mut String, id: Uuid) {
    let mut buf = [0u8; 36];
    out.push('"');
    out.push_str(id.write_to(&mut buf));
    out.push('"');
}

fn time_or_null(out: &mut String, t: Option<i64>) {
    match t {
        Some(t) => {
            out.push('"');
            time::write(out, t);
            out.push('"');
        }
        None => out.push_str("null"),
    }
}

fn strings<'a>(out: &mut String, items: impl Iterator<Item = &'a str>) {
    out.push('[');
    for (i, s) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, s);
    }
    out.push(']');
}

/// `us` as Prefect's float seconds: the text of `{:?}` of `us / 1e6`.
/// From 1 ms to 10^9 s the shortest decimal of that float is the exact
/// decimal `us / 10^6` (at most 15 significant digits, so no shorter
/// decimal names the same float), written here digit by digit (three per
/// row of a list page, `appview.rest_*`); other values go through `fmt`.
/// A test holds the two equal.
fn seconds(out: &mut String, us: i64) {
    let abs = us.unsigned_abs();
    if us != 0 && !(1_000..1_000_000_000_000_000).contains(&abs) {
        let _ = write!(out, "{:?}", us as f64 / 1e6);
        return;
    }
    if us < 0 {
        out.push('-');
    }
    let (whole, mut frac) = (abs / 1_000_000, abs % 1_000_000);
    let _ = write!(out, "{whole}.");
    if frac == 0 {
        out.push('0');
        return;
    }
    let mut digits = 6;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    let _ = write!(out, "{frac:0digits$}");
}

/// A flow.
pub fn flow(out: &mut String, f: &Flow) {
    out.push_str("{\"id\":");
    uuid(out, f.id);
    out.push_str(",\"created\":");
    time_or_null(out, Some(f.created));
    out.push_str(",\"updated\":");
    time_or_null(out, Some(f.updated));
    out.push_str(",\"name\":");
    string(out, &f.name);
    out.push_str(",\"tags\":");
    strings(out, f.tags.iter().map(String::as_str));
    out.push_str(",\"labels\":{}}");
}

/// A list of flows.
pub fn flows<'a>(out: &mut String, items: impl Iterator<Item = &'a Flow>) {
    out.push('[');
    for (i, f) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        flow(out, f);
    }
    out.push(']');
}

/// A state (`state` of a run or of an orchestration result).
pub fn state(out: &mut String, s: &FlowRunState) {
    out.push_str("{\"id\":");
    uuid(out, s.id);
    out.push_str(",\"type\":\"");
    out.push_str(s.state_type.as_str());
    out.push_str("\",\"name\":");
    string(out, &s.name);
    out.push_str(",\"timestamp\":");
    time_or_null(out, Some(s.timestamp));
    out.push_str(",\"message\":");
    if s.message.is_empty() {
        out.push_str("null");
    } else {
        string(out, &s.message);
    }
    out.push_str(",\"data\":null,\"state_details\":{\"flow_run_id\":");
    uuid(out, s.run_id);
    out.push_str(
        ",\"task_run_id\":null,\"child_flow_run_id\":null,\"scheduled_time\":null,\
         \"cache_key\":null,\"cache_expiration\":null,\"deferred\":false,\
         \"untrackable_result\":false,\"pause_timeout\":null,\"pause_reschedule\":false,\
         \"pause_key\":null,\"run_input_keyset\":null,\"refresh_cache\":null,\
         \"retriable\":null,\"transition_id\":null,\"task_parameters_id\":null,\
         \"traceparent\":null,\"deployment_concurrency_lease_id\":null}}",
    );
}

/// A flow run with its current state (`None`: the history lost it,
/// written `null`), at `now` (µs) for the estimated fields.
pub fn run(out: &mut String, r: RunView<'_>, st: Option<&FlowRunState>, now: i64) {
    out.push_str("{\"id\":");
    uuid(out, r.id());
    out.push_str(",\"created\":");
    time_or_null(out, Some(r.created()));
    out.push_str(",\"updated\":");
    time_or_null(out, Some(r.updated()));
    out.push_str(",\"name\":");
    string(out, r.name());
    out.push_str(",\"flow_id\":");
    uuid(out, r.flow_id());
    out.push_str(",\"state_id\":");
    uuid(out, r.state_id());
    out.push_str(
        ",\"deployment_id\":null,\"deployment_version\":null,\"work_queue_id\":null,\
         \"work_queue_name\":null,\"flow_version\":null,\"parameters\":",
    );
    crate::params::push_object(out, r.parameters());
    out.push_str(
        ",\"idempotency_key\":null,\"context\":{},\"empirical_policy\":{\"max_retries\":0,\
         \"retry_delay_seconds\":0.0,\"retries\":null,\"retry_delay\":null,\"pause_keys\":[],\
         \"resuming\":false,\"retry_type\":null},\"tags\":",
    );
    strings(out, r.tags());
    out.push_str(",\"labels\":{\"prefect.flow.id\":");
    uuid(out, r.flow_id());
    out.push_str("},\"parent_task_run_id\":null,\"state_type\":\"");
    out.push_str(r.state_type().as_str());
    out.push_str("\",\"state_name\":");
    string(out, r.state_name());
    let _ = write!(out, ",\"run_count\":{}", r.run_count());
    out.push_str(",\"expected_start_time\":");
    time_or_null(out, Some(r.expected_start()));
    out.push_str(",\"next_scheduled_start_time\":");
    time_or_null(out, r.next_scheduled_start());
    out.push_str(",\"start_time\":");
    time_or_null(out, r.start());
    out.push_str(",\"end_time\":");
    time_or_null(out, r.end());
    out.push_str(",\"total_run_time\":");
    seconds(out, r.total_run_time());
    let running = if r.state_type() == StateType::Running {
        now.saturating_sub(r.state_timestamp()).max(0)
    } else {
        0
    };
    out.push_str(",\"estimated_run_time\":");
    seconds(out, r.total_run_time().saturating_add(running));
    let late = match r.start() {
        Some(start) => start.saturating_sub(r.expected_start()),
        None if !r.state_type().is_terminal() => now.saturating_sub(r.expected_start()),
        None => 0,
    };
    out.push_str(",\"estimated_start_time_delta\":");
    seconds(out, late.max(0));
    out.push_str(
        ",\"auto_scheduled\":false,\"infrastructure_document_id\":null,\
         \"infrastructure_pid\":null,\"created_by\":null,\"work_pool_id\":null,\
         \"work_pool_name\":null,\"state\":",
    );
    match st {
        Some(s) => state(out, s),
        None => out.push_str("null"),
    }
    out.push_str(",\"job_variables\":{}}");
}

/// An orchestration result: `status` (`ACCEPT`, `REJECT`, `ABORT`,
/// `WAIT`), the state it leaves the run in, and the details (`reason` for
/// all but ACCEPT).
pub fn orchestration(
    out: &mut String,
    status: &str,
    st: Option<&FlowRunState>,
    reason: Option<&str>,
) {
    out.push_str("{\"state\":");
    match st {
        Some(s) => state(out, s),
        None => out.push_str("null"),
    }
    out.push_str(",\"status\":\"");
    out.push_str(status);
    out.push_str("\",\"details\":{\"type\":\"");
    out.push_str(&status.to_ascii_lowercase());
    out.push_str("_details\"");
    if let Some(reason) = reason {
        out.push_str(",\"reason\":");
        string(out, reason);
    }
    out.push_str("}}");
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn seconds_are_written_as_the_float_debug_text(
            us in prop_oneof![
                any::<i64>(),
                -2_000_000_000_000_000i64..2_000_000_000_000_000,
                -10_000_000i64..10_000_000,
                -2_000i64..2_000,
            ]
        ) {
            let mut out = String::new();
            seconds(&mut out, us);
            prop_assert_eq!(out, format!("{:?}", us as f64 / 1e6));
        }

        #[test]
        fn any_string_is_written_as_the_json_string_of_it(s in "\\PC*|[\\x00-\\x1f\"\\\\]{0,8}") {
            let mut out = String::new();
            string(&mut out, &s);
            prop_assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s);
        }
    }
}
