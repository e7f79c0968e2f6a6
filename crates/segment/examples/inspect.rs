//! Prints a jss0 segment: header summary, blocks, then every event as one
//! Jetstream v1 JSON line with `cursor` = seq. The logic (and its tests)
//! live in `segment::inspect`.
//!
//! ```sh
//! cargo run --release -p segment --example inspect -- [--verify] <file.jss>
//! ```

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = segment::inspect::run(&args, &mut out, &mut std::io::stderr());
    drop(out);
    std::process::exit(code);
}
