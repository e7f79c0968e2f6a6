//! Tests of the CAR slice parser: paired block hashing against the
//! one-pass parse it replaced (a child module of `car`).

use super::*;

/// Roots and blocks of a parse.
type Parsed<'a> = (Vec<Cid>, Vec<(Cid, &'a [u8])>);

/// The one-pass parse [`parse_into`] replaced: hash checked as each
/// section is read, so the first error in file order wins.
fn one_pass(bytes: &[u8]) -> Result<Parsed<'_>, CarError> {
    let (roots, mut pos) = read_header(bytes)?;
    let mut blocks = Vec::new();
    while pos < bytes.len() {
        let at = pos as u64;
        let (len, n) = varint::read(&bytes[pos..]).map_err(|e| err(at, CarErrorKind::Varint(e)))?;
        let start = pos + n;
        let section = usize::try_from(len)
            .ok()
            .and_then(|l| bytes.get(start..start.checked_add(l)?))
            .ok_or_else(|| err(at, CarErrorKind::Truncated))?;
        let (cid, used) = Cid::read_prefix(section).map_err(|e| err(at, CarErrorKind::Cid(e)))?;
        let data = &section[used..];
        if !cid.matches(data) {
            return Err(err(at, CarErrorKind::HashMismatch(cid)));
        }
        blocks.push((cid, data));
        pos = start + section.len();
    }
    Ok((roots, blocks))
}

/// Paired hashing reports exactly what the one-pass parse does, on a
/// CAR of blocks of many sizes and on every one-byte corruption and
/// truncation of it (several bad blocks at once included).
#[test]
fn paired_verification_matches_one_pass() {
    let datas: Vec<Vec<u8>> = (0..9usize)
        .map(|i| (0..i * 37 + 3).map(|j| (i * 7 + j) as u8).collect())
        .collect();
    let cids: Vec<Cid> = datas.iter().map(|d| Cid::for_dag_cbor(d)).collect();
    let car = write_car_vec(&cids[..1], cids.iter().zip(datas.iter().map(Vec::as_slice)));
    let show = |r: Result<Parsed<'_>, CarError>| format!("{r:?}");
    let ours = |b: &[u8]| {
        let mut blocks = Vec::new();
        let r = parse_into(b, true, &mut blocks);
        format!("{:?}", r.map(|roots| (roots, blocks)))
    };
    assert_eq!(ours(&car), show(one_pass(&car)));
    assert!(one_pass(&car).is_ok());
    for i in 0..car.len() {
        for flip in [0x01u8, 0x80] {
            let mut m = car.clone();
            m[i] ^= flip;
            assert_eq!(ours(&m), show(one_pass(&m)), "byte {i} ^ {flip:#x}");
            // A second bad block further on: the first still wins.
            let j = (i * 7 + 100) % m.len();
            m[j] ^= 0x04;
            assert_eq!(ours(&m), show(one_pass(&m)), "bytes {i}, {j}");
        }
        assert_eq!(ours(&car[..i]), show(one_pass(&car[..i])), "cut at {i}");
    }
}
