//! The Rust peers of each `sync.rs` / `mst.rs` group, as lists of the
//! functions that add their rows: the `peers-rust` feature adds the heavy
//! ones, each living in its own `peer_*` module. The roles they play (the
//! functions' signatures, the row helpers) are `peer_roles.rs`'s.

use crate::peer_roles::{
    CarReader, CarWriter, CommitSigner, CommitVerifier, FrameDecoder, FrameVerifier, MstAdder,
    MstDiffer,
};

pub fn commit_signers() -> Vec<CommitSigner> {
    vec![
        crate::peer_proto_blue::commit_sign,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::commit_sign,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::commit_sign,
    ]
}

pub fn commit_verifiers() -> Vec<CommitVerifier> {
    vec![
        crate::peer_proto_blue::commit_verify,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::commit_verify,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::commit_verify,
    ]
}

pub fn car_readers() -> Vec<CarReader> {
    vec![
        crate::peer_proto_blue::car_read,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::car_read,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::car_read,
    ]
}

pub fn frame_decoders() -> Vec<FrameDecoder> {
    vec![
        crate::peer_proto_blue::frame,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::frame,
    ]
}

pub fn mst_adders() -> Vec<MstAdder> {
    vec![
        crate::peer_proto_blue::mst_add,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::mst_add,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::mst_add,
        #[cfg(feature = "peers-rust")]
        crate::peer_atproto_repo::mst_add,
    ]
}

pub fn car_writers() -> Vec<CarWriter> {
    vec![
        crate::peer_proto_blue::car_write,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::car_write,
    ]
}

pub fn mst_differs() -> Vec<MstDiffer> {
    vec![
        crate::peer_proto_blue::mst_diff,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::mst_diff,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::mst_diff,
        #[cfg(feature = "peers-rust")]
        crate::peer_atproto_repo::mst_diff,
    ]
}

pub fn frame_verifiers() -> Vec<FrameVerifier> {
    vec![
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::frame_verify,
    ]
}
