//! The parts of Prefect's API this server does not serve, answered in
//! Prefect's own shape: 404 with a `detail` naming what is not served,
//! for every path and method under the area's prefix, as Prefect answers
//! an object it does not have (`{"detail": "Deployment not found"}`).
//!
//! What Prefect 3.9.1's client does with that answer:
//! - a list command (`prefect deployment ls`, `prefect work-pool ls`, ...)
//!   exits 1 with `An exception occurred.` after the HTTP error, whose
//!   last line quotes this detail (the CLI prints a traceback for every
//!   HTTP error it does not expect; no answer but a served list avoids
//!   it);
//! - the calls that treat 404 as "no such object" degrade gracefully:
//!   `Variable.get(name, default=d)` returns `d`, `Block.load(name)`
//!   raises `ValueError: Unable to find block document named ...`,
//!   `prefect deployment inspect NAME` prints `Deployment 'NAME' not
//!   found!`;
//! - a flow that creates an artifact (`create_markdown_artifact`) or
//!   takes a concurrency slot (`concurrency("db")`) ends FAILED on the
//!   error (`ConcurrencySlotAcquisitionError` quoting the detail).

use crate::rest::reply::Reply;

/// Each area: its path prefixes under `/api/`, and its name in the reply.
const AREAS: &[(&[&str], &str)] = &[
    (&["deployments"], "Deployments"),
    (&["work_pools"], "Work pools"),
    (&["work_queues"], "Work queues"),
    (&["automations"], "Automations"),
    (
        &[
            "block_documents",
            "block_types",
            "block_schemas",
            "block_capabilities",
        ],
        "Blocks",
    ),
    (&["variables"], "Variables"),
    (
        &["concurrency_limits", "v2/concurrency_limits"],
        "Concurrency limits",
    ),
    (&["artifacts"], "Artifacts"),
];

/// The area `path` (after `/api/`) falls in, if one this server does not
/// serve.
pub fn area(path: &str) -> Option<&'static str> {
    AREAS.iter().find_map(|(prefixes, name)| {
        prefixes
            .iter()
            .any(|p| {
                path.strip_prefix(p)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
            .then_some(*name)
    })
}

/// The answer for area `name`.
pub fn reply(name: &str) -> Reply {
    Reply::detail(
        404,
        &format!(
            "{name} are not served by this server (appview serves flows, flow runs, \
             task runs, logs and events)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_area_and_only_it_is_told() {
        assert_eq!(area("deployments/filter"), Some("Deployments"));
        assert_eq!(area("deployments/"), Some("Deployments"));
        assert_eq!(area("work_pools/default/queues"), Some("Work pools"));
        assert_eq!(area("block_types/slug/x"), Some("Blocks"));
        assert_eq!(
            area("v2/concurrency_limits/filter"),
            Some("Concurrency limits")
        );
        assert_eq!(area("artifacts/latest/filter"), Some("Artifacts"));
        assert_eq!(area("variables/name/x"), Some("Variables"));
        assert_eq!(area("deploymentsx/filter"), None);
        assert_eq!(area("flow_runs/filter"), None);
        assert_eq!(area("logs/"), None);
    }
}
