//! Handle resolution by DNS: one TXT query for `_atproto.<handle>` over
//! UDP (RFC 1035), answered with `did=<did>` (the atproto handle spec's
//! DNS method).
//!
//! Hand-written rather than a resolver crate: the helper needs one query
//! type over one transport, and `hickory-resolver` brings its own runtime
//! glue, caches and configuration parsing for that (the cold build cost of
//! a short-lived helper's dependency counts in CI). What is parsed is
//! bounded: at most [`MAX_MESSAGE`] bytes are read, names follow at most
//! [`MAX_POINTERS`] compression pointers, and every length is checked
//! against the message before it is used; the parser is property-tested
//! against arbitrary bytes and against answers it builds itself.
//!
//! The resolver is `KNOT_DNS_RESOLVER` (`host:port`) when set, else the
//! first `nameserver` of `/etc/resolv.conf` (port 53). A truncated answer
//! (TC) is not retried over TCP: the caller falls back to HTTPS.

use std::net::SocketAddr;
use std::time::Duration;

/// Largest answer read (EDNS is not asked for: 512 is the usual size).
pub const MAX_MESSAGE: usize = 4096;
/// Most compression pointers followed in one name.
pub const MAX_POINTERS: usize = 16;
/// Deadline of one query.
pub const TIMEOUT: Duration = Duration::from_secs(3);

const TYPE_TXT: u16 = 16;
const CLASS_IN: u16 = 1;

/// What went wrong with a DNS lookup.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DnsError {
    /// The name cannot be put in a query.
    #[error("{0:?} is not a DNS name")]
    BadName(String),
    /// The answer is shorter than its own counts and lengths say.
    #[error("the answer is cut short at byte {0}")]
    Truncated(usize),
    /// The answer is malformed.
    #[error("malformed answer: {0}")]
    Malformed(&'static str),
    /// The answer is for another query.
    #[error("the answer does not match the query")]
    Mismatch,
    /// The server answered with an error code (3: no such name).
    #[error("the server answered rcode {0}")]
    Rcode(u8),
    /// The answer did not fit in UDP (TC set).
    #[error("the answer was truncated (TC)")]
    TooLong,
    /// Sending, receiving or the deadline.
    #[error("{0}")]
    Io(String),
}

/// A TXT query for `name` with id `id`.
pub fn build_query(id: u16, name: &str) -> Result<Vec<u8>, DnsError> {
    let name = name.trim_end_matches('.');
    if name.is_empty() || name.len() > 253 {
        return Err(DnsError::BadName(name.to_owned()));
    }
    let mut q = Vec::with_capacity(18 + name.len());
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00]); // RD
    q.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // QD 1, AN/NS/AR 0
    for label in name.split('.') {
        if label.is_empty()
            || label.len() > 63
            || !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(DnsError::BadName(name.to_owned()));
        }
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&TYPE_TXT.to_be_bytes());
    q.extend_from_slice(&CLASS_IN.to_be_bytes());
    Ok(q)
}

fn u16_at(m: &[u8], at: usize) -> Result<u16, DnsError> {
    match m.get(at..at + 2) {
        Some(b) => Ok(u16::from_be_bytes([b[0], b[1]])),
        None => Err(DnsError::Truncated(at)),
    }
}

/// Reads the (possibly compressed) name at `at`; returns it lower-cased
/// and the offset just past it in the message.
fn read_name(m: &[u8], mut at: usize) -> Result<(String, usize), DnsError> {
    let mut name = String::new();
    let mut end = None;
    let mut jumps = 0;
    loop {
        let len = *m.get(at).ok_or(DnsError::Truncated(at))? as usize;
        match len & 0xC0 {
            0x00 => {
                if len == 0 {
                    return Ok((name, end.unwrap_or(at + 1)));
                }
                let label = m
                    .get(at + 1..at + 1 + len)
                    .ok_or(DnsError::Truncated(at + 1))?;
                if !name.is_empty() {
                    name.push('.');
                }
                if name.len() + len > 255 {
                    return Err(DnsError::Malformed("name longer than 255 bytes"));
                }
                name.extend(label.iter().map(|b| b.to_ascii_lowercase() as char));
                at += 1 + len;
            }
            0xC0 => {
                jumps += 1;
                if jumps > MAX_POINTERS {
                    return Err(DnsError::Malformed("too many compression pointers"));
                }
                let ptr = (u16_at(m, at)? & 0x3FFF) as usize;
                if end.is_none() {
                    end = Some(at + 2);
                }
                at = ptr;
            }
            _ => return Err(DnsError::Malformed("reserved label type")),
        }
    }
}

/// The TXT records of an answer to the query `id` for `name`, each
/// record's strings joined.
pub fn parse_txt_answer(id: u16, name: &str, m: &[u8]) -> Result<Vec<String>, DnsError> {
    if m.len() < 12 {
        return Err(DnsError::Truncated(m.len()));
    }
    if u16_at(m, 0)? != id || m[2] & 0x80 == 0 {
        return Err(DnsError::Mismatch);
    }
    if m[2] & 0x02 != 0 {
        return Err(DnsError::TooLong);
    }
    let rcode = m[3] & 0x0F;
    if rcode != 0 {
        return Err(DnsError::Rcode(rcode));
    }
    let (qd, an) = (u16_at(m, 4)?, u16_at(m, 6)?);
    if qd != 1 {
        return Err(DnsError::Mismatch);
    }
    let want = name.trim_end_matches('.').to_ascii_lowercase();
    let (qname, mut at) = read_name(m, 12)?;
    if qname != want || u16_at(m, at)? != TYPE_TXT {
        return Err(DnsError::Mismatch);
    }
    at += 4;
    let mut out = Vec::new();
    for _ in 0..an {
        let (_, next) = read_name(m, at)?;
        at = next;
        let (typ, class) = (u16_at(m, at)?, u16_at(m, at + 2)?);
        let rdlen = u16_at(m, at + 8)? as usize;
        at += 10;
        let rdata = m.get(at..at + rdlen).ok_or(DnsError::Truncated(at))?;
        at += rdlen;
        // CNAMEs and the like before the TXT records are skipped.
        if typ != TYPE_TXT || class != CLASS_IN {
            continue;
        }
        let mut text = Vec::new();
        let mut i = 0;
        while i < rdata.len() {
            let l = rdata[i] as usize;
            let s = rdata
                .get(i + 1..i + 1 + l)
                .ok_or(DnsError::Malformed("TXT string past its record"))?;
            text.extend_from_slice(s);
            i += 1 + l;
        }
        out.push(String::from_utf8_lossy(&text).into_owned());
    }
    Ok(out)
}

/// The resolver to ask: `KNOT_DNS_RESOLVER`, else `/etc/resolv.conf`'s
/// first nameserver.
pub fn resolver() -> Option<SocketAddr> {
    if let Ok(v) = std::env::var("KNOT_DNS_RESOLVER") {
        return v.parse().ok();
    }
    let conf = std::fs::read_to_string("/etc/resolv.conf").ok()?;
    conf.lines().find_map(|l| {
        let ip = l.trim().strip_prefix("nameserver")?.trim();
        let ip: std::net::IpAddr = ip.split('%').next()?.parse().ok()?;
        Some(SocketAddr::new(ip, 53))
    })
}

/// The TXT records of `name`, asked of `server` over UDP.
pub async fn txt(server: SocketAddr, name: &str) -> Result<Vec<String>, DnsError> {
    let id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x4b4e, |d| (d.subsec_nanos() >> 8) as u16);
    let q = build_query(id, name)?;
    let bind: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let io = |e: std::io::Error| DnsError::Io(e.to_string());
    let sock = tokio::net::UdpSocket::bind(bind).await.map_err(io)?;
    sock.connect(server).await.map_err(io)?;
    sock.send(&q).await.map_err(io)?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let n = tokio::time::timeout_at(deadline, sock.recv(&mut buf))
            .await
            .map_err(|_| DnsError::Io(format!("no answer from {server} within {TIMEOUT:?}")))?
            .map_err(io)?;
        match parse_txt_answer(id, name, &buf[..n]) {
            // A stray datagram (another id) is not the answer: wait on.
            Err(DnsError::Mismatch) => continue,
            r => return r,
        }
    }
}

/// The DID a handle's `_atproto` TXT records name, if exactly one
/// `did=` record does.
pub fn did_of(records: &[String]) -> Option<String> {
    let dids: Vec<&str> = records
        .iter()
        .filter_map(|r| r.strip_prefix("did="))
        .collect();
    match dids.as_slice() {
        [one] => Some((*one).to_owned()),
        _ => None,
    }
}

/// An answer to `query` with these TXT records (tests and the in-process
/// responder of the integration tests).
#[cfg(any(test, feature = "test-support"))]
pub fn answer(query: &[u8], records: &[&str]) -> Vec<u8> {
    let mut m = query.to_vec();
    if m.len() < 12 {
        return m;
    }
    m[2] |= 0x80;
    m[3] = 0x80;
    m[6..8].copy_from_slice(&(records.len() as u16).to_be_bytes());
    for r in records {
        m.extend_from_slice(&[0xC0, 12]);
        m.extend_from_slice(&TYPE_TXT.to_be_bytes());
        m.extend_from_slice(&CLASS_IN.to_be_bytes());
        m.extend_from_slice(&300u32.to_be_bytes());
        let chunks: Vec<&[u8]> = r.as_bytes().chunks(255).collect();
        let rdlen: usize = chunks.iter().map(|c| c.len() + 1).sum();
        m.extend_from_slice(&(rdlen as u16).to_be_bytes());
        for c in chunks {
            m.push(c.len() as u8);
            m.extend_from_slice(c);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn query_and_answer() {
        let q = build_query(7, "_atproto.alice.example.com").unwrap();
        let a = answer(&q, &["did=did:plc:abc", "v=spf1"]);
        let recs = parse_txt_answer(7, "_atproto.alice.example.com", &a).unwrap();
        assert_eq!(recs, ["did=did:plc:abc", "v=spf1"]);
        assert_eq!(did_of(&recs).as_deref(), Some("did:plc:abc"));
        assert_eq!(
            parse_txt_answer(8, "_atproto.alice.example.com", &a),
            Err(DnsError::Mismatch)
        );
        assert_eq!(
            parse_txt_answer(7, "_atproto.bob.example.com", &a),
            Err(DnsError::Mismatch)
        );
        assert!(build_query(1, "a..b").is_err());
        assert!(build_query(1, &"a".repeat(64)).is_err());
        assert_eq!(did_of(&["did=a".into(), "did=b".into()]), None);
        let mut nx = answer(&q, &[]);
        nx[3] = 0x83;
        assert_eq!(
            parse_txt_answer(7, "_atproto.alice.example.com", &nx),
            Err(DnsError::Rcode(3))
        );
        // A pointer loop ends.
        let mut lp = answer(&q, &["x"]);
        let at = q.len();
        lp[at] = 0xC0;
        lp[at + 1] = at as u8;
        assert!(parse_txt_answer(7, "_atproto.alice.example.com", &lp).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600), id: u16) {
            let _ = parse_txt_answer(id, "_atproto.a.example", &bytes);
        }

        #[test]
        fn records_round_trip(
            recs in proptest::collection::vec("[ -~]{0,600}", 0..5),
            id: u16,
            cut in 0usize..2000,
        ) {
            let q = build_query(id, "_atproto.a.example").unwrap();
            let refs: Vec<&str> = recs.iter().map(String::as_str).collect();
            let a = answer(&q, &refs);
            prop_assert_eq!(parse_txt_answer(id, "_atproto.a.example", &a).unwrap(), recs);
            // Any prefix is an error or a shorter answer, never a panic.
            let _ = parse_txt_answer(id, "_atproto.a.example", &a[..cut.min(a.len())]);
        }
    }
}
