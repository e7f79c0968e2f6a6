//! The allocator policy of `--bench hotpath` (and `examples/convert_ab.rs`,
//! which times the same conversions), applied once at target start, before
//! any fixture is built, so it is the same for every row (ours and peers)
//! whatever ran before it.
//!
//! On glibc the policy pins two `mallopt` tunables:
//!
//! * `M_TRIM_THRESHOLD` = 1 GiB: freed heap memory is kept, not handed back
//!   to the kernel. With glibc's default (128 KiB, raised only as large
//!   mmapped blocks happen to be freed) the ~40 MB of output of a
//!   whole-batch iteration, dropped outside the timing, was trimmed off the
//!   top of the heap, and the next timed iteration page-faulted all of it
//!   back in (about 10k minor faults per `convert.struct_to_json`
//!   iteration, measured with `/usr/bin/time -f %R`): the rows measured the
//!   kernel zeroing pages, and how much depended on which groups had run
//!   before. A gateway in steady state reuses its heap the same way.
//! * `M_MMAP_THRESHOLD` = 32 MiB (glibc's 64-bit maximum): buffers below it
//!   (every codec buffer, up to 256 KiB) come from the heap, as glibc's
//!   dynamic threshold would settle on after the first large free anyway;
//!   setting the trim threshold by hand switches that dynamic adjustment
//!   off, so this pins it explicitly.
//!
//! `HOTPATH_MALLOC=default` skips the policy (glibc's defaults), for
//! before/after comparisons. Elsewhere than glibc nothing is changed, and
//! the target says so when it starts.

/// Applies the policy; returns the line the target prints about it.
pub fn apply() -> String {
    if std::env::var("HOTPATH_MALLOC").is_ok_and(|v| v == "default") {
        return "allocator policy: glibc defaults (HOTPATH_MALLOC=default)".to_owned();
    }
    imp::apply()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use std::ffi::c_int;

    unsafe extern "C" {
        /// glibc's `mallopt(3)`: returns 1 on success, 0 on error.
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }

    /// `<malloc.h>`: `M_TRIM_THRESHOLD`.
    const M_TRIM_THRESHOLD: c_int = -1;
    /// `<malloc.h>`: `M_MMAP_THRESHOLD`.
    const M_MMAP_THRESHOLD: c_int = -3;
    const TRIM: c_int = 1 << 30;
    const MMAP: c_int = 32 << 20;

    pub fn apply() -> String {
        // SAFETY: mallopt only changes malloc's tunables; it is called at
        // target start, before any other thread exists.
        let trim = unsafe { mallopt(M_TRIM_THRESHOLD, TRIM) } == 1;
        // SAFETY: as above.
        let mmap = unsafe { mallopt(M_MMAP_THRESHOLD, MMAP) } == 1;
        format!(
            "allocator policy: glibc mallopt M_TRIM_THRESHOLD=1GiB ({}), M_MMAP_THRESHOLD=32MiB ({})",
            if trim { "set" } else { "refused" },
            if mmap { "set" } else { "refused" }
        )
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub fn apply() -> String {
        "allocator policy: none (not glibc; the platform allocator's defaults)".to_owned()
    }
}
