//! car-file-fixtures.json plus reader robustness.

mod common;

use base64::Engine as _;
use repo::Cid;
use repo::car::{CarErrorKind, CarReader, CarSlice, CarWriter};

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(s.trim_end_matches('='))
        .unwrap()
}

type Blocks = Vec<(Cid, Vec<u8>)>;

fn fixture() -> (Cid, Blocks, Vec<u8>) {
    let cases = common::read_json("interop/from-atproto-repo/repo/car-file-fixtures.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 1);
    let c = &cases[0];
    let root: Cid = c["root"].as_str().unwrap().parse().unwrap();
    let blocks: Vec<(Cid, Vec<u8>)> = c["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["cid"].as_str().unwrap().parse().unwrap(),
                b64(b["bytes"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(blocks.len(), 5);
    (root, blocks, b64(c["car"].as_str().unwrap()))
}

#[test]
fn writer_produces_fixture_bytes() {
    let (root, blocks, car) = fixture();
    let mut w = CarWriter::new(Vec::new(), &[root]).unwrap();
    for (cid, data) in &blocks {
        w.write_block(cid, data).unwrap();
    }
    assert_eq!(w.bytes_written() as usize, car.len());
    assert_eq!(w.finish().unwrap(), car);
    let refs: Vec<(&Cid, &[u8])> = blocks.iter().map(|(c, d)| (c, d.as_slice())).collect();
    assert_eq!(repo::car::write_car_vec(&[root], refs), car);
}

#[test]
fn readers_yield_fixture_blocks() {
    let (root, blocks, car) = fixture();
    let reader = CarReader::new(&car[..]).unwrap().verify(true);
    assert_eq!(reader.roots(), &[root]);
    let got: Vec<(Cid, Vec<u8>)> = reader.map(Result::unwrap).collect();
    assert_eq!(got, blocks);
    for (cid, data) in &blocks {
        assert_eq!(Cid::for_dag_cbor(data), *cid);
    }
    let slice = CarSlice::parse(&car, true).unwrap();
    assert_eq!(slice.roots, vec![root]);
    let borrowed: Vec<(Cid, Vec<u8>)> =
        slice.blocks.iter().map(|(c, d)| (*c, d.to_vec())).collect();
    assert_eq!(borrowed, blocks);
}

#[test]
fn reader_rejects_bad_input_with_offsets() {
    let (_, _, car) = fixture();
    // Every truncation is an error, except cuts exactly between sections
    // (which CAR cannot detect): never a panic.
    let mut clean = 0;
    for n in 0..car.len() {
        let streamed: Result<Vec<_>, _> =
            CarReader::new(&car[..n]).and_then(|r| r.verify(true).collect());
        let sliced = CarSlice::parse(&car[..n], true);
        assert_eq!(streamed.is_ok(), sliced.is_ok(), "cut at {n}");
        clean += usize::from(sliced.is_ok());
    }
    assert_eq!(
        clean, 5,
        "one clean cut after the header and after each of 4 blocks"
    );
    // A flipped data byte in the last block fails the hash check.
    let mut bad = car.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let err = CarReader::new(&bad[..])
        .unwrap()
        .verify(true)
        .collect::<Result<Vec<_>, _>>()
        .unwrap_err();
    assert!(matches!(err.kind, CarErrorKind::HashMismatch(_)), "{err}");
    assert!(err.offset > 0);
    // Without verification the same bytes read fine.
    assert!(
        CarReader::new(&bad[..])
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .is_ok()
    );
    // A section claiming 4 GiB: rejected by the limit, nothing allocated.
    let mut huge = car[..car[0] as usize + 1].to_vec();
    huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    let err = CarReader::new(&huge[..]).unwrap().next_block().unwrap_err();
    assert!(
        matches!(err.kind, CarErrorKind::SectionTooLarge(_)),
        "{err}"
    );
    // Under a raised limit the claim still only allocates what arrives.
    let err = CarReader::new(&huge[..])
        .unwrap()
        .max_section(u64::MAX)
        .next_block()
        .unwrap_err();
    assert!(matches!(err.kind, CarErrorKind::Truncated), "{err}");
    // Header version 2.
    let mut v2 = car.clone();
    let hdr_len = v2[0] as usize;
    assert_eq!(v2[hdr_len], 0x01);
    v2[hdr_len] = 0x02;
    let err = CarReader::new(&v2[..]).unwrap_err();
    assert!(matches!(err.kind, CarErrorKind::Version(2)), "{err}");
}

#[test]
fn streaming_writer_handles_many_blocks() {
    // 20k blocks through a counting sink: constant memory on our side.
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len() as u64;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let root = Cid::for_dag_cbor(b"root");
    let mut w = CarWriter::new(Count(0), &[root]).unwrap();
    let data = [7u8; 100];
    for i in 0..20_000u32 {
        let cid = Cid::for_raw(&i.to_be_bytes());
        w.write_block(&cid, &data).unwrap();
    }
    let n = w.bytes_written();
    assert_eq!(w.finish().unwrap().0, n);
}
