//! Issue 39 item 4: Debian's headless Chromium against a running
//! knot-serve (`scripts/knot_serve_browser.py`, over the DevTools pipe).
//! Every page kind loads with no console error and no failed request; a
//! reader's path from a tree to a file to its commit works; each
//! screenshot is a real render (decoded here: enough pixels differ from
//! the page background). Skips with the reason when Chromium cannot be
//! installed, and fails instead under `BENCH_REQUIRE_LIVE=1`.
//! `KNOT_SERVE_SAVE_SCREENSHOTS=DIR` keeps the screenshots.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use knot_serve::server::{self, ServerConfig};
use knot_serve::{App, Limits};
use support::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Share of pixels that differ from the top-left pixel's colour.
fn ink(png_bytes: &[u8]) -> (u32, u32, f64) {
    let dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let px = &buf[..info.buffer_size()];
    let bg = &px[..ch];
    let n = px.len() / ch;
    let differ = px
        .chunks(ch)
        .filter(|p| p[..3.min(ch)] != bg[..3.min(ch)])
        .count();
    (info.width, info.height, differ as f64 / n as f64)
}

#[test]
fn pages_render_in_chromium() {
    let f = fixture();
    let app = Arc::new(App::open("demo", &f.mirror, Limits::default()).unwrap());
    let srv = server::spawn(
        app,
        "127.0.0.1:0".parse().unwrap(),
        ServerConfig::default(),
        2,
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let commit = format!("/commit/{}", f.commits[1]);
    let paths = [
        "/",
        "/tree/main/src",
        "/blob/main/src/main.rs",
        &commit,
        "/log/main",
        "/refs",
    ];
    let o = Command::new("python3")
        .arg(root().join("scripts/knot_serve_browser.py"))
        .args(["--base", &srv.url(), "--out"])
        .arg(out.path())
        .args(paths)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if o.status.code() == Some(2) {
        let live = std::env::var("BENCH_REQUIRE_LIVE").is_ok_and(|v| v == "1");
        assert!(
            !live,
            "BENCH_REQUIRE_LIVE=1 and Chromium is unavailable: {stderr}"
        );
        eprintln!("skipped: {}", stderr.trim());
        return;
    }
    assert!(
        o.status.success(),
        "browser run failed ({}): {stderr}",
        o.status
    );
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("result.json")).unwrap()).unwrap();
    assert_eq!(result["errors"].as_array().unwrap().len(), 0, "{result}");
    let pages = result["pages"].as_array().unwrap();
    // Six page kinds, then the file and the commit reached by links.
    assert_eq!(pages.len(), paths.len() + 2, "{result}");
    let follow: Vec<&str> = result["follow"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(follow[0].ends_with("/tree/main/src"), "{follow:?}");
    assert!(follow[1].contains("/blob/main/src/"), "{follow:?}");
    assert!(follow[2].contains("/commit/"), "{follow:?}");
    for p in pages {
        let title = p["title"].as_str().unwrap();
        assert!(title.ends_with("· demo"), "{p}");
        let shot = std::fs::read(p["screenshot"].as_str().unwrap()).unwrap();
        let (w, h, share) = ink(&shot);
        assert_eq!((w, h), (1200, 800), "{p}");
        // The header band alone is ~5%; a blank or error page has less ink.
        assert!(
            share > 0.06,
            "{p}: only {:.3} of the pixels are not background",
            share
        );
    }
    if let Ok(dir) = std::env::var("KNOT_SERVE_SAVE_SCREENSHOTS") {
        std::fs::create_dir_all(&dir).unwrap();
        for p in pages {
            let s = PathBuf::from(p["screenshot"].as_str().unwrap());
            std::fs::copy(&s, Path::new(&dir).join(s.file_name().unwrap())).unwrap();
        }
    }
}
