//! [`RunPage`]: a page of runs as dense rows. Each run is one
//! fixed-size [`RunRow`] (every field but the text ones, stored inline)
//! and its text (name, state name, tags, parameters) packed into one
//! byte buffer the page owns, so a page is two allocations however many
//! rows it has, and reading it walks two contiguous arrays. The index
//! keeps its runs in the same form ([`crate::rows`]) and a page copies
//! its rows out of that slab; the other backends build the same page
//! from their decoded runs ([`RunPage::push`]).
//!
//! The text of one run is a sequence of pieces, each a LEB128 length and
//! that many UTF-8 bytes: name, state name, the tag count, the tags, the
//! parameter count, then each key and value.

use std::fmt;

use crate::model::{FlowRun, StateType};
use crate::uuid::Uuid;

const HAS_NEXT: u8 = 1;
const HAS_START: u8 = 2;
const HAS_END: u8 = 4;

/// A run's fixed-size fields, and where its text lies in the buffer
/// beside the rows (the page's, or the index's arena).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunRow {
    pub(crate) id: Uuid,
    pub(crate) flow_id: Uuid,
    pub(crate) state_id: Uuid,
    pub(crate) state_timestamp: i64,
    pub(crate) expected_start: i64,
    next_scheduled_start: i64,
    start: i64,
    end: i64,
    total_run_time: i64,
    run_count: i64,
    created: i64,
    updated: i64,
    /// The text's first byte in its buffer.
    pub(crate) text_at: usize,
    /// The text's length.
    pub(crate) text_len: usize,
    pub(crate) state_type: StateType,
    /// Which of the optional times are set (`HAS_*`).
    flags: u8,
}

impl RunRow {
    /// `run`'s row, its text at `text_at`, `text_len` bytes long.
    pub(crate) fn new(run: &FlowRun, text_at: usize, text_len: usize) -> RunRow {
        let flag = |t: Option<i64>, f: u8| if t.is_some() { f } else { 0 };
        RunRow {
            id: run.id,
            flow_id: run.flow_id,
            state_id: run.state_id,
            state_timestamp: run.state_timestamp,
            expected_start: run.expected_start,
            next_scheduled_start: run.next_scheduled_start.unwrap_or(0),
            start: run.start.unwrap_or(0),
            end: run.end.unwrap_or(0),
            total_run_time: run.total_run_time,
            run_count: run.run_count,
            created: run.created,
            updated: run.updated,
            text_at,
            text_len,
            state_type: run.state_type,
            flags: flag(run.next_scheduled_start, HAS_NEXT)
                | flag(run.start, HAS_START)
                | flag(run.end, HAS_END),
        }
    }

    fn opt(&self, flag: u8, t: i64) -> Option<i64> {
        (self.flags & flag != 0).then_some(t)
    }
}

fn push_piece(out: &mut Vec<u8>, bytes: &[u8]) {
    push_len(out, bytes.len());
    out.extend_from_slice(bytes);
}

fn push_len(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends `run`'s text to `out` (the layout in the module doc).
pub(crate) fn push_text(out: &mut Vec<u8>, run: &FlowRun) {
    push_piece(out, run.name.as_bytes());
    push_piece(out, run.state_name.as_bytes());
    push_len(out, run.tags.len());
    for t in &run.tags {
        push_piece(out, t.as_bytes());
    }
    push_len(out, run.parameters.len());
    for (k, v) in &run.parameters {
        push_piece(out, k.as_bytes());
        push_piece(out, v.as_bytes());
    }
}

/// Reads the pieces of one run's text. The text was written by
/// [`push_text`] from `String`s, so it is well formed; a malformed one
/// (never seen) reads as empty pieces rather than panicking.
struct Pieces<'a>(&'a [u8]);

impl<'a> Pieces<'a> {
    fn len(&mut self) -> usize {
        let mut n = 0usize;
        for shift in (0..usize::BITS).step_by(7) {
            let Some((&b, rest)) = self.0.split_first() else {
                return 0;
            };
            self.0 = rest;
            n |= usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return n;
            }
        }
        0
    }

    fn piece(&mut self) -> &'a str {
        let n = self.len();
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        std::str::from_utf8(head).unwrap_or_default()
    }
}

/// One run of a [`RunPage`] (or of the index's slab): its row and text.
#[derive(Clone, Copy)]
pub struct RunView<'a> {
    row: &'a RunRow,
    text: &'a [u8],
}

impl<'a> RunView<'a> {
    /// `row` whose text is in `buf`.
    pub(crate) fn new(row: &'a RunRow, buf: &'a [u8]) -> RunView<'a> {
        let text = buf
            .get(row.text_at..row.text_at.saturating_add(row.text_len))
            .unwrap_or_default();
        RunView { row, text }
    }

    /// Id.
    pub fn id(&self) -> Uuid {
        self.row.id
    }
    /// Its flow.
    pub fn flow_id(&self) -> Uuid {
        self.row.flow_id
    }
    /// The current state's row.
    pub fn state_id(&self) -> Uuid {
        self.row.state_id
    }
    /// Current state type.
    pub fn state_type(&self) -> StateType {
        self.row.state_type
    }
    /// When the current state began (µs).
    pub fn state_timestamp(&self) -> i64 {
        self.row.state_timestamp
    }
    /// Expected start (µs).
    pub fn expected_start(&self) -> i64 {
        self.row.expected_start
    }
    /// Next scheduled start (µs).
    pub fn next_scheduled_start(&self) -> Option<i64> {
        self.row.opt(HAS_NEXT, self.row.next_scheduled_start)
    }
    /// Start (µs).
    pub fn start(&self) -> Option<i64> {
        self.row.opt(HAS_START, self.row.start)
    }
    /// End (µs).
    pub fn end(&self) -> Option<i64> {
        self.row.opt(HAS_END, self.row.end)
    }
    /// Total run time (µs).
    pub fn total_run_time(&self) -> i64 {
        self.row.total_run_time
    }
    /// Times it entered RUNNING.
    pub fn run_count(&self) -> i64 {
        self.row.run_count
    }
    /// Created (µs).
    pub fn created(&self) -> i64 {
        self.row.created
    }
    /// Updated (µs).
    pub fn updated(&self) -> i64 {
        self.row.updated
    }
    /// Name.
    pub fn name(&self) -> &'a str {
        Pieces(self.text).piece()
    }
    /// Current state name.
    pub fn state_name(&self) -> &'a str {
        let mut p = Pieces(self.text);
        p.piece();
        p.piece()
    }
    /// Tags.
    pub fn tags(&self) -> impl Iterator<Item = &'a str> + 'a {
        let mut p = Pieces(self.text);
        p.piece();
        p.piece();
        let n = p.len();
        (0..n).map(move |_| p.piece())
    }
    /// Parameters: key and value JSON text, in the order given.
    pub fn parameters(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let mut p = Pieces(self.text);
        p.piece();
        p.piece();
        let tags = p.len();
        for _ in 0..tags {
            p.piece();
        }
        let n = p.len();
        (0..n).map(move |_| (p.piece(), p.piece()))
    }

    /// The run, decoded into the model.
    pub fn to_run(&self) -> FlowRun {
        FlowRun {
            id: self.id(),
            flow_id: self.flow_id(),
            name: self.name().into(),
            state_id: self.state_id(),
            state_type: self.state_type(),
            state_name: self.state_name().into(),
            state_timestamp: self.state_timestamp(),
            expected_start: self.expected_start(),
            next_scheduled_start: self.next_scheduled_start(),
            start: self.start(),
            end: self.end(),
            total_run_time: self.total_run_time(),
            run_count: self.run_count(),
            created: self.created(),
            updated: self.updated(),
            tags: self.tags().map(String::from).collect(),
            parameters: self
                .parameters()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

/// A page of runs: dense rows and their text (see the module doc).
#[derive(Clone, Default)]
pub struct RunPage {
    rows: Vec<RunRow>,
    text: Vec<u8>,
}

impl RunPage {
    /// An empty page with room for `rows` rows.
    pub fn with_capacity(rows: usize) -> RunPage {
        RunPage {
            rows: Vec::with_capacity(rows),
            text: Vec::with_capacity(rows * 32),
        }
    }

    /// Appends `run`.
    pub fn push(&mut self, run: &FlowRun) {
        let at = self.text.len();
        push_text(&mut self.text, run);
        let len = self.text.len() - at;
        self.rows.push(RunRow::new(run, at, len));
    }

    /// Appends the row `view` (copied: its fields, then its text).
    pub(crate) fn push_view(&mut self, view: RunView<'_>) {
        let mut row = *view.row;
        row.text_at = self.text.len();
        self.text.extend_from_slice(view.text);
        self.rows.push(row);
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = RunView<'_>> + '_ {
        self.rows.iter().map(|r| RunView::new(r, &self.text))
    }

    /// The rows decoded into the model.
    pub fn to_runs(&self) -> Vec<FlowRun> {
        self.iter().map(|v| v.to_run()).collect()
    }
}

impl FromIterator<FlowRun> for RunPage {
    fn from_iter<I: IntoIterator<Item = FlowRun>>(runs: I) -> RunPage {
        let mut page = RunPage::default();
        for r in runs {
            page.push(&r);
        }
        page
    }
}

impl PartialEq for RunPage {
    /// The same runs with the same fields in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.iter().zip(other.iter()).all(|(a, b)| {
                let (mut x, mut y) = (*a.row, *b.row);
                (x.text_at, y.text_at) = (0, 0);
                x == y && a.text == b.text
            })
    }
}

impl Eq for RunPage {}

impl fmt::Debug for RunPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|v| v.to_run()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn any_run() -> impl Strategy<Value = FlowRun> {
        let opt = || proptest::option::of(any::<i64>());
        (
            (any::<u128>(), any::<u128>(), any::<u128>(), 0usize..9),
            ("\\PC{0,40}", "\\PC{0,20}", any::<[i64; 7]>()),
            (opt(), opt(), opt()),
            (
                proptest::collection::vec("\\PC{0,10}", 0..4),
                proptest::collection::vec(("\\PC{0,8}", "\\PC{0,200}"), 0..4),
            ),
        )
            .prop_map(
                |((id, flow, st, ty), (name, sname, t), (n, s, e), (tags, params))| FlowRun {
                    id: Uuid(id),
                    flow_id: Uuid(flow),
                    name,
                    state_id: Uuid(st),
                    state_type: StateType::ALL[ty],
                    state_name: sname,
                    state_timestamp: t[0],
                    expected_start: t[1],
                    next_scheduled_start: n,
                    start: s,
                    end: e,
                    total_run_time: t[2],
                    run_count: t[3],
                    created: t[4],
                    updated: t[5],
                    tags,
                    parameters: params,
                },
            )
    }

    proptest! {
        #[test]
        fn a_page_gives_back_every_field_of_its_runs(runs in proptest::collection::vec(any_run(), 0..6)) {
            let page: RunPage = runs.iter().cloned().collect();
            prop_assert_eq!(page.to_runs(), runs.clone());
            // Copying rows out of one buffer into another, at other
            // offsets, keeps them.
            let mut copy = RunPage::default();
            for v in page.iter() {
                copy.push_view(v);
            }
            prop_assert_eq!(&copy, &page);
            let mut shifted: RunPage = runs.iter().take(1).cloned().collect();
            for v in page.iter() {
                shifted.push_view(v);
            }
            prop_assert_eq!(shifted.to_runs().split_off(runs.len().min(1)), runs);
        }
    }

    #[test]
    fn pages_differ_by_any_field() {
        let run = FlowRun {
            id: Uuid(1),
            flow_id: Uuid(2),
            name: "a".into(),
            state_id: Uuid(3),
            state_type: StateType::Running,
            state_name: "Running".into(),
            state_timestamp: 4,
            expected_start: 5,
            next_scheduled_start: None,
            start: Some(6),
            end: None,
            total_run_time: 7,
            run_count: 1,
            created: 8,
            updated: 9,
            tags: vec!["t".into()],
            parameters: vec![("k".into(), "v".into())],
        };
        let page = |r: &FlowRun| RunPage::from_iter([r.clone()]);
        let mut other = run.clone();
        other.end = Some(0);
        assert_ne!(page(&run), page(&other));
        let mut other = run.clone();
        other.tags.push(String::new());
        assert_ne!(page(&run), page(&other));
        assert_eq!(page(&run), page(&run.clone()));
    }
}
