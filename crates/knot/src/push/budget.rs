//! The push's write points against what the PDS last said remains: the
//! one-line cost summary, and the refusal, before anything is written, of
//! a push that does not fit, naming the batches that would.

use std::collections::BTreeMap;

use crate::state::{WriteAllowance, unix_now};

/// A push's write points, by part.
#[derive(Debug, Default)]
pub struct Cost {
    /// The pack and repository records (`(what, points)`).
    pub fixed: Vec<(&'static str, u32)>,
    /// Each ref write: `(kind, ref, points)`.
    pub refs: Vec<(&'static str, String, u32)>,
}

impl Cost {
    /// The total.
    pub fn points(&self) -> u32 {
        let f: u32 = self.fixed.iter().map(|(_, p)| p).sum();
        f + self.refs.iter().map(|(_, _, p)| p).sum::<u32>()
    }

    /// The parts, as the cost line names them: counts per kind, or every
    /// ref with `trace` (`KNOT_TRACE=1`).
    pub fn describe(&self, trace: bool) -> String {
        let mut parts: Vec<String> = self
            .fixed
            .iter()
            .map(|(w, p)| format!("{w} record {p}"))
            .collect();
        if trace {
            for (what, dst, p) in &self.refs {
                parts.push(format!("{what} {dst} {p}"));
            }
        } else {
            let mut kinds: BTreeMap<(&str, u32), u32> = BTreeMap::new();
            for (what, _, p) in &self.refs {
                *kinds.entry((what, *p)).or_insert(0) += 1;
            }
            for ((what, p), n) in kinds {
                let s = if n == 1 { "" } else { "s" };
                parts.push(format!("{n} ref {what}{s} x {p}"));
            }
        }
        parts.join(", ")
    }

    /// `None` when the push fits in `allowance` (or nothing is known of
    /// one still in force); else the refusal, naming a batch that fits.
    pub fn refusal(&self, allowance: Option<WriteAllowance>) -> Option<String> {
        let now = unix_now();
        let a = allowance?.current(now)?;
        let points = u64::from(self.points());
        if points <= a.remaining {
            return None;
        }
        let fixed: u64 = self.fixed.iter().map(|(_, p)| u64::from(*p)).sum();
        let dearest = self.refs.iter().map(|(_, _, p)| *p).max().unwrap_or(1);
        let fit = a.remaining.saturating_sub(fixed) / u64::from(dearest.max(1));
        let wait = a.reset - now;
        let mut m = format!(
            "knot: this push needs {points} write points and the PDS said {} remain for \
             {}m{:02}s more: nothing was written.\nknot: ",
            a.remaining,
            wait / 60,
            wait % 60
        );
        if fit == 0 {
            m.push_str("push again once the window resets");
        } else {
            let first: Vec<&str> = self
                .refs
                .iter()
                .take(usize::try_from(fit.min(3)).unwrap_or(3))
                .map(|(_, d, _)| d.as_str())
                .collect();
            m.push_str(&format!(
                "push at most {fit} refs now, in batches that fit, for example \
                 `git push <remote> {}{}`, the rest after the window resets",
                first.join(" "),
                if fit > 3 { " ..." } else { "" }
            ));
        }
        Some(m)
    }
}

/// Refs named in a message: all of them under `KNOT_TRACE=1`, else the
/// first few and how many more (a push of thousands stays a short line).
pub fn ref_list(names: &[&str]) -> String {
    const SHOWN: usize = 10;
    if names.is_empty() {
        return "(none)".into();
    }
    if names.len() <= SHOWN || crate::trace::on() {
        return names.join(", ");
    }
    format!(
        "{} and {} more (KNOT_TRACE=1 names every one)",
        names[..SHOWN].join(", "),
        names.len() - SHOWN
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(n: usize) -> Cost {
        Cost {
            fixed: vec![("pack", 2)],
            refs: (0..n)
                .map(|i| ("create", format!("refs/tags/t{i}"), 3))
                .collect(),
        }
    }

    #[test]
    fn summary_and_refusal() {
        let c = cost(10);
        assert_eq!(c.points(), 32);
        assert_eq!(c.describe(false), "pack record 2, 10 ref creates x 3");
        assert!(c.describe(true).contains("create refs/tags/t9 3"));
        let at = |remaining| {
            Some(WriteAllowance {
                remaining,
                reset: unix_now() + 100,
            })
        };
        assert!(c.refusal(None).is_none());
        assert!(c.refusal(at(32)).is_none());
        let m = c.refusal(at(20)).unwrap();
        assert!(m.contains("push at most 6 refs"), "{m}");
        assert!(
            m.contains("refs/tags/t0 refs/tags/t1 refs/tags/t2 ..."),
            "{m}"
        );
        assert!(c.refusal(at(2)).unwrap().contains("once the window resets"));
        // A window that ended says nothing.
        let old = WriteAllowance {
            remaining: 0,
            reset: unix_now().saturating_sub(1),
        };
        assert!(c.refusal(Some(old)).is_none());
        let names: Vec<String> = (0..25).map(|i| format!("t{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(ref_list(&names[..2]), "t0, t1");
        if !crate::trace::on() {
            assert!(ref_list(&names).ends_with("t9 and 15 more (KNOT_TRACE=1 names every one)"));
        }
    }

    #[test]
    fn answers_merge_per_window() {
        let w = |remaining, reset| WriteAllowance { remaining, reset };
        // Out of order within a window (reset rounded a second apart).
        assert_eq!(w(10, 100).merge(w(12, 101)), w(10, 101));
        // A new window replaces the old one; an older one is ignored.
        assert_eq!(w(0, 100).merge(w(50, 3700)), w(50, 3700));
        assert_eq!(w(50, 3700).merge(w(0, 100)), w(50, 3700));
    }
}
