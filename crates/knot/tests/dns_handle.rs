//! `at://<handle>/<repo>` resolved by the handle's `_atproto` DNS TXT
//! record: an in-process UDP responder (`KNOT_DNS_RESOLVER`) answers for
//! the handle, a stub PLC directory serves the DID document, and the
//! handle has no HTTPS `/.well-known/atproto-did` to fall back on, so a
//! push and a clone succeed only through DNS.

mod support;

use std::net::UdpSocket;

use support::{plc_directory, signed_in, stderr};

#[test]
fn handle_resolves_by_dns_txt() {
    let (pds, did, sb) = signed_in("dns.test");
    let plc = plc_directory(&did, &pds.url);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let dns_addr = sock.local_addr().unwrap();
    let record = format!("did={did}");
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            let q = &buf[..n];
            // `_atproto.dns.test` has the record; any other name does not exist.
            let a = if q.windows(5).any(|w| w == b"\x03dns\x04") {
                knot::dns_answer(q, &[&record, "unrelated=1"])
            } else {
                let mut a = knot::dns_answer(q, &[]);
                a[3] |= 3;
                a
            };
            let _ = sock.send_to(&a, from);
        }
    });
    // git with the stub resolver and PLC directory, and no HTTPS fallback.
    let run = |dir: &std::path::Path, args: &[&str]| {
        sb.cmd(dir, args)
            .env("KNOT_DNS_RESOLVER", dns_addr.to_string())
            .env("KNOT_PLC_URL", &plc.url)
            .env_remove("KNOT_HANDLE_RESOLVER")
            .output()
            .unwrap()
    };
    let a = sb.init("a");
    let c1 = sb.commit(&a, "f", "1\n");
    let o = run(&a, &["push", "at://dns.test/r", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(sb.home.path(), &["clone", "-q", "at://dns.test/r", "b"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(sb.rev(&sb.path("b"), "HEAD"), c1);
    // No record and no HTTPS answer: a clear error naming both.
    let o = run(sb.home.path(), &["clone", "at://nodns.test/r", "c"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("nodns.test") && e.contains("no _atproto TXT record"),
        "{e}"
    );
}
