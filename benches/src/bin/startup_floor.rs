//! `xrpc.startup/process-floor/no-store`'s server: the least a process can
//! do to answer "launch to the first 200 of `/xrpc/_health`" on this
//! machine. Standard library only, no async runtime, no store, no
//! configuration: it binds `--listen ADDR`, then answers every connection's
//! first request with a fixed 200 and closes it, until it is signalled.
//! Timed by the same client loop as atpds, it is the floor under every
//! `xrpc.startup` lane: process creation, the dynamic loader, one bind and
//! one loopback HTTP exchange.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::ExitCode;

const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 19\r\nconnection: close\r\n\r\n{\"version\":\"floor\"}";

/// Reads one request head (up to its blank line, at most 16 KiB).
fn read_head(stream: &mut impl Read) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(256);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(addr) = args
        .iter()
        .position(|a| a == "--listen")
        .and_then(|i| args.get(i + 1))
    else {
        eprintln!("usage: startup_floor --listen ADDR");
        return ExitCode::from(2);
    };
    let listener = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("startup_floor: bind {addr}: {e}");
            return ExitCode::from(1);
        }
    };
    println!("startup_floor listening on http://{addr}");
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if read_head(&mut stream).is_ok() {
            let _ = stream.write_all(ANSWER);
        }
    }
    ExitCode::SUCCESS
}
