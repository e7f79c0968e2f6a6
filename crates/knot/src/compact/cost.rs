//! What a compaction costs, said before anything is written: blob uploads
//! (one per 4 MiB part; bsky.social allows 1,000 a day per IP) and write
//! points (the reference PDS's: `putRecord` 2 whether it creates or
//! updates, delete 1; 5,000 an hour and 35,000 a day per account), and the
//! budget a run is given (`--max-points`, `--max-uploads`).

/// Points of one `putRecord` (create or update).
pub const PUT_POINTS: u32 = 2;
/// Points of one `deleteRecord`.
pub const DELETE_POINTS: u32 = 1;

/// The account of one compaction plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Account {
    /// Packs folded.
    pub packs: usize,
    /// The new pack's size.
    pub size: u64,
    /// Its objects.
    pub objects: u64,
    /// Its parts (uploads in all).
    pub parts: u32,
    /// Parts uploaded by earlier runs.
    pub parts_done: u32,
    /// Refs switched to the new pack.
    pub refs: u32,
    /// Whether the pack record is already written.
    pub pack_written: bool,
}

impl Account {
    /// Uploads still to make.
    pub fn uploads_left(&self) -> u32 {
        self.parts.saturating_sub(self.parts_done)
    }

    /// Points the switch needs (the pack record unless written, one
    /// update per ref): what must fit in the budget before a part is
    /// uploaded.
    pub fn switch_points(&self) -> u32 {
        (if self.pack_written { 0 } else { PUT_POINTS }) + PUT_POINTS * self.refs
    }

    /// Points of deleting the folded packs' records later.
    pub fn delete_points(&self) -> u32 {
        DELETE_POINTS * u32::try_from(self.packs).unwrap_or(u32::MAX)
    }

    /// The account in words, for stderr.
    pub fn describe(&self) -> String {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        format!(
            "knot: compaction: {} packs fold into 1 pack of {:.2} MiB ({} objects)\n\
             knot: cost: {} upload{} of 4 MiB parts ({} of {} already uploaded); \
             write points: {} now (pack record {}, {} ref update{} x {PUT_POINTS}), \
             {} later (deleting {} old pack record{} x {DELETE_POINTS} once no ref names them); \
             total {} points (bsky.social: 5,000/hour, 35,000/day; uploads 1,000/day)",
            self.packs,
            mib(self.size),
            self.objects,
            self.uploads_left(),
            if self.uploads_left() == 1 { "" } else { "s" },
            self.parts_done,
            self.parts,
            self.switch_points(),
            if self.pack_written {
                "0: written".to_owned()
            } else {
                PUT_POINTS.to_string()
            },
            self.refs,
            if self.refs == 1 { "" } else { "s" },
            self.delete_points(),
            self.packs,
            if self.packs == 1 { "" } else { "s" },
            self.switch_points() + self.delete_points(),
        )
    }
}

/// What one run may spend; `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// Write points.
    pub points: Option<u32>,
    /// Uploads.
    pub uploads: Option<u32>,
}

/// What a run spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    /// Points spent.
    pub points: u32,
    /// Uploads made.
    pub uploads: u32,
}

impl Budget {
    /// Points still allowed after `s`.
    pub fn points_left(&self, s: &Spent) -> u32 {
        self.points.map_or(u32::MAX, |p| p.saturating_sub(s.points))
    }

    /// Uploads still allowed after `s`.
    pub fn uploads_left(&self, s: &Spent) -> u32 {
        self.uploads
            .map_or(u32::MAX, |u| u.saturating_sub(s.uploads))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account() {
        let a = Account {
            packs: 20,
            size: 1 << 19,
            objects: 60,
            parts: 3,
            parts_done: 1,
            refs: 2,
            pack_written: false,
        };
        assert_eq!(a.uploads_left(), 2);
        assert_eq!(a.switch_points(), 6);
        assert_eq!(a.delete_points(), 20);
        let d = a.describe();
        assert!(d.contains("2 uploads"), "{d}");
        assert!(d.contains("6 now"), "{d}");
        assert!(d.contains("total 26 points"), "{d}");
        let b = Budget {
            points: Some(5),
            uploads: None,
        };
        let s = Spent {
            points: 2,
            uploads: 9,
        };
        assert_eq!(b.points_left(&s), 3);
        assert_eq!(b.uploads_left(&s), u32::MAX);
    }
}
