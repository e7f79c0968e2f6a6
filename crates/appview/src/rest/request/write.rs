//! The write routes' bodies: `POST /flows/`, `POST /flow_runs/` and
//! `POST /flow_runs/{id}/set_state` (Prefect's `FlowCreate`,
//! `FlowRunCreate`, `StateCreate`).

use serde_json::Value;

use super::fields::{
    At, Res, boolean, field, keys, list, object, required, state_type, string, unused, uuid,
};
use crate::model::StateType;
use crate::params;
use crate::uuid::Uuid;

/// `POST /flows/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowCreate {
    /// The name.
    pub name: String,
    /// Tags.
    pub tags: Vec<String>,
}

/// Parses `POST /flows/`.
pub fn flow_create(v: &Value) -> Res<FlowCreate> {
    let at = At::BODY;
    let m = object(v, &at)?;
    keys(m, &["name", "tags"], &["labels"], &at)?;
    let name = string(required(m, "name", &at)?, &at.key("name"))?;
    let tags = field(m, "tags").map_or(Ok(Vec::new()), |t| list(t, &at.key("tags"), string))?;
    Ok(FlowCreate { name, tags })
}

/// A state as sent (`StateCreate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateCreate {
    /// Its type.
    pub state_type: StateType,
    /// Its name (Prefect's default: the type, capitalised).
    pub name: String,
    /// Its message.
    pub message: String,
}

fn state_create(v: &Value, at: &At<'_>) -> Res<StateCreate> {
    let m = object(v, at)?;
    keys(
        m,
        // `data`: a failed run's result record (where the client stored the
        // exception); accepted, not stored.
        &["type", "name", "message", "state_details", "data"],
        &[],
        at,
    )?;
    if let Some(d) = field(m, "state_details") {
        // Its fields are the orchestration's bookkeeping (ids the server
        // fills, cache and pause settings); accepted as an object, not
        // stored.
        object(d, &at.key("state_details"))?;
    }
    let state_type = state_type(required(m, "type", at)?, &at.key("type"))?;
    let name = match field(m, "name") {
        Some(n) => string(n, &at.key("name"))?,
        None => default_name(state_type),
    };
    let message =
        field(m, "message").map_or(Ok(String::new()), |s| string(s, &at.key("message")))?;
    Ok(StateCreate {
        state_type,
        name,
        message,
    })
}

/// Prefect's default state name: the type's words capitalised.
pub fn default_name(t: StateType) -> String {
    let s = t.as_str();
    let mut out = String::with_capacity(s.len());
    out.push_str(&s[..1]);
    out.push_str(&s[1..].to_ascii_lowercase());
    out
}

/// `POST /flow_runs/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowRunCreate {
    /// The flow.
    pub flow_id: Uuid,
    /// The name (`None`: the server makes one).
    pub name: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Parameters: key and value JSON text, in the order sent
    /// (`crate::params`).
    pub parameters: Vec<(String, String)>,
}

/// Parses `POST /flow_runs/` from its value tree `v` and its text `body`
/// (the parameters are read from the text, which keeps their order). The
/// run starts PENDING (a `state` of another type, or another name, is
/// refused: this server creates runs PENDING, its model's first state).
pub fn flow_run_create(v: &Value, body: &[u8]) -> Res<FlowRunCreate> {
    let at = At::BODY;
    let m = object(v, &at)?;
    keys(
        m,
        &[
            "state",
            "name",
            "flow_id",
            "flow_version",
            "parameters",
            "empirical_policy",
            "tags",
            // A subflow's: the parent's task run (`POST /task_runs/`);
            // accepted, not stored in the run's record.
            "parent_task_run_id",
        ],
        &[
            "context",
            "infrastructure_document_id",
            "labels",
            "idempotency_key",
            "work_pool_name",
            "work_queue_name",
            "job_variables",
            "deployment_id",
        ],
        &at,
    )?;
    // The version is the flow's code hash a client sends with every run:
    // accepted, not stored (the model has no field for it).
    if let Some(v) = field(m, "flow_version") {
        string(v, &at.key("flow_version"))?;
    }
    if let Some(p) = field(m, "empirical_policy") {
        let pat = at.key("empirical_policy");
        let pm = object(p, &pat)?;
        for k in [
            "max_retries",
            "retries",
            "retry_delay_seconds",
            "retry_delay",
            "pause_keys",
            "resuming",
            "retry_type",
        ] {
            unused(pm, k, &pat)?;
        }
    }
    let flow_id = uuid(required(m, "flow_id", &at)?, &at.key("flow_id"))?;
    if let Some(s) = field(m, "state") {
        let sat = at.key("state");
        let st = state_create(s, &sat)?;
        if st.state_type != StateType::Pending {
            return Err(sat.key("type").bad(
                "not_supported",
                "this server creates flow runs PENDING only",
                &Value::from(st.state_type.as_str()),
            ));
        }
        if st.name != "Pending" || !st.message.is_empty() {
            return Err(sat.bad(
                "not_supported",
                "this server's first state is named Pending, without a message",
                s,
            ));
        }
    }
    let name = field(m, "name")
        .map(|n| string(n, &at.key("name")))
        .transpose()?;
    let tags = field(m, "tags").map_or(Ok(Vec::new()), |t| list(t, &at.key("tags"), string))?;
    let mut parameters = Vec::new();
    if let Some(p) = field(m, "parameters") {
        let pat = at.key("parameters");
        object(p, &pat)?;
        // Prefect's refusal of a too large object is a `value_error` of
        // the field.
        parameters = params::from_body(body)
            .map_err(|e| pat.bad("value_error", format!("Value error, {e}"), p))?
            .unwrap_or_default();
    }
    Ok(FlowRunCreate {
        flow_id,
        name,
        tags,
        parameters,
    })
}

/// Parses `POST /flow_runs/{id}/set_state`: the state (`force` must be
/// false: this server always orchestrates).
pub fn set_state(v: &Value) -> Res<StateCreate> {
    let at = At::BODY;
    let m = object(v, &at)?;
    if let Some(f) = field(m, "force")
        && boolean(f, &at.key("force"))?
    {
        return Err(at.key("force").bad(
            "not_supported",
            "force is not supported by this server (it always orchestrates)",
            f,
        ));
    }
    state_create(required(m, "state", &at)?, &at.key("state"))
}
