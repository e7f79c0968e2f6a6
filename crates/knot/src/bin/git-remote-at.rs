//! `git-remote-at`: git's remote helper for `at://` and `at+http(s)://`
//! URLs (see the `knot` crate docs). git runs it as
//! `git-remote-at <remote> <url>`.

use std::io::{BufReader, stdin, stdout};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let url = match args.as_slice() {
        [_, _, url] => url.clone(),
        [_, url] => url.clone(),
        _ => {
            eprintln!("usage: git-remote-at <remote> <url> (git runs this for at:// remotes)");
            return ExitCode::from(2);
        }
    };
    // git calls the helper with the scheme `at` stripped for `at::<url>`.
    let url = if url.starts_with("at://") || url.starts_with("at+") {
        url
    } else {
        format!("at://{url}")
    };
    let mut out = stdout().lock();
    match knot::helper::run(&url, BufReader::new(stdin().lock()), &mut out) {
        Ok(knot::helper::Exit::Done) => ExitCode::SUCCESS,
        Ok(knot::helper::Exit::RateLimited) => ExitCode::from(1),
        Err(e) => {
            eprintln!("fatal: {e}");
            ExitCode::from(128)
        }
    }
}
