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

/// More blocks than the on-stack order holds, through both the plain and
/// the state-keeping parse: the same answers as the one-pass parse, and
/// each kept state resumes to the block's own digest.
#[test]
fn many_blocks_and_logged_states_match_one_pass() {
    let datas: Vec<Vec<u8>> = (0..70usize)
        .map(|i| (0..(i * 13) % 200).map(|j| (i + j * 3) as u8).collect())
        .collect();
    let cids: Vec<Cid> = datas.iter().map(|d| Cid::for_dag_cbor(d)).collect();
    let car = write_car_vec(&cids[..1], cids.iter().zip(datas.iter().map(Vec::as_slice)));
    let show = |r: Result<Parsed<'_>, CarError>| format!("{r:?}");
    let plain = |b: &[u8]| {
        let mut blocks = Vec::new();
        let r = parse_into(b, true, &mut blocks);
        format!("{:?}", r.map(|roots| (roots, blocks)))
    };
    let logged = |b: &[u8], states: &mut BlockStates| {
        let mut blocks = Vec::new();
        let r = parse_into_logged(b, &mut blocks, states);
        format!("{:?}", r.map(|roots| (roots, blocks)))
    };
    let mut states = BlockStates::default();
    assert_eq!(logged(&car, &mut states), show(one_pass(&car)));
    for (i, d) in datas.iter().enumerate() {
        let st = states.of(i);
        assert_eq!(st.len(), d.len() / 64, "block {i}");
        for (k, s) in st.iter().enumerate() {
            let done = (k + 1) * 64;
            assert_eq!(
                &sha256x2::digest_resume(s, done as u64, &d[done..]),
                cids[i].digest(),
                "block {i} state {k}"
            );
        }
    }
    for i in (0..car.len()).step_by(97) {
        let mut m = car.clone();
        m[i] ^= 0x10;
        let want = show(one_pass(&m));
        assert_eq!(plain(&m), want, "byte {i}");
        assert_eq!(logged(&m, &mut states), want, "byte {i} (logged)");
    }
}
