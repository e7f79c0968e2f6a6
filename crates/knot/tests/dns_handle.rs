//! `at://<handle>/<repo>` resolved by the handle's `_atproto` DNS TXT
//! record: an in-process UDP responder (`KNOT_DNS_RESOLVER`) answers for
//! the handle, a stub PLC directory serves the DID document, and the
//! handle has no HTTPS `/.well-known/atproto-did` to fall back on, so a
//! push and a clone succeed only through DNS.

mod support;

use std::net::UdpSocket;

use bytes::Bytes;
use support::fault::{Action, FaultProxy};
use support::{Pds, Sandbox, stderr};

#[test]
fn handle_resolves_by_dns_txt() {
    let pds = Pds::start();
    let did = pds.account("dns.test");
    let sb = Sandbox::new("dns.test");
    let doc = serde_json::json!({"id": did, "service": [{"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": pds.url}]});
    let (d2, body) = (did.clone(), Bytes::from(doc.to_string()));
    let plc = FaultProxy::start(
        None,
        std::sync::Arc::new(move |p, _| {
            if p.uri.path() == format!("/{d2}") {
                Action::Respond(
                    200,
                    vec![("content-type", "application/json".into())],
                    body.clone(),
                )
            } else {
                Action::Respond(404, vec![], Bytes::from_static(b"{}"))
            }
        }),
    );
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let dns_addr = sock.local_addr().unwrap();
    let record = format!("did={did}");
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            let q = &buf[..n];
            // `_atproto.dns.test` has the record; any other name does not exist.
            let a = if q.windows(5).any(|w| w == b"\x03dns\x04") {
                knot::dns::answer(q, &[&record, "unrelated=1"])
            } else {
                let mut a = knot::dns::answer(q, &[]);
                a[3] |= 3;
                a
            };
            let _ = sock.send_to(&a, from);
        }
    });
    let env = |c: &mut std::process::Command| {
        c.env("KNOT_DNS_RESOLVER", dns_addr.to_string())
            .env("KNOT_PLC_URL", &plc.url)
            .env_remove("KNOT_HANDLE_RESOLVER");
    };
    let a = sb.init("a");
    let c1 = sb.commit(&a, "f", "1\n");
    let mut c = sb.cmd(&a, &["push", "at://dns.test/r", "main"]);
    env(&mut c);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut c = sb.cmd(sb.home.path(), &["clone", "-q", "at://dns.test/r", "b"]);
    env(&mut c);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(sb.rev(&sb.path("b"), "HEAD"), c1);
    // No record and no HTTPS answer: a clear error naming both.
    let mut c = sb.cmd(sb.home.path(), &["clone", "at://nodns.test/r", "c"]);
    env(&mut c);
    let o = c.output().unwrap();
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("nodns.test") && e.contains("no _atproto TXT record"),
        "{e}"
    );
}
