//! The answer of every REST route: a status and a JSON body, with the
//! error shapes FastAPI and Prefect answer in. A leaf: the routes, the
//! task-run and event modules and the server all take it from here.

use serde_json::Value;

use crate::rest::render;
use crate::rest::request::{Invalid, Loc};

/// An answer: status and JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The JSON text.
    pub body: String,
}

impl Reply {
    /// A JSON body as it is.
    pub fn json(status: u16, body: String) -> Reply {
        Reply { status, body }
    }

    /// `{"detail": ...}` (FastAPI's HTTPException shape).
    pub fn detail(status: u16, detail: &str) -> Reply {
        let mut body = String::from("{\"detail\":");
        render::string(&mut body, detail);
        body.push('}');
        Reply { status, body }
    }

    /// Prefect's `{"exception_message": ...}` shape (its 404 for a state
    /// set on a missing run, its 500).
    pub fn exception(status: u16, message: &str) -> Reply {
        let mut body = String::from("{\"exception_message\":");
        render::string(&mut body, message);
        body.push('}');
        Reply { status, body }
    }

    /// A request validation error, Prefect's 422 shape.
    pub fn invalid(e: &Invalid, request_body: &Value) -> Reply {
        let loc: Vec<Value> = e
            .loc
            .iter()
            .map(|l| match l {
                Loc::Key(k) => Value::from(*k),
                Loc::Name(k) => Value::from(k.as_str()),
                Loc::Index(i) => Value::from(*i),
            })
            .collect();
        let body = serde_json::json!({
            "exception_message": "Invalid request received.",
            "exception_detail": [{"type": e.kind, "loc": loc, "msg": e.msg, "input": e.input}],
            "request_body": request_body,
        });
        Reply::json(422, body.to_string())
    }

    /// A body that is not JSON (FastAPI's `json_invalid`).
    pub fn bad_json(err: &serde_json::Error, text: &[u8]) -> Reply {
        let body = serde_json::json!({
            "exception_message": "Invalid request received.",
            "exception_detail": [{
                "type": "json_invalid",
                "loc": ["body", err.column()],
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": err.to_string()},
            }],
            "request_body": String::from_utf8_lossy(text),
        });
        Reply::json(422, body.to_string())
    }
}
