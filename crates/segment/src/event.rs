//! The archived event, borrowed ([`EventRef`]) and owned ([`Event`]).

use crate::error::{Error, Result};

/// Longest DID the format stores.
pub const MAX_DID_LEN: usize = u16::MAX as usize;
/// Longest collection, rkey or rev the format stores.
pub const MAX_SHORT_LEN: usize = u8::MAX as usize;
/// Longest payload the format stores.
pub const MAX_PAYLOAD_LEN: usize = u32::MAX as usize;

/// What an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// A record was created.
    Create = 1,
    /// A record was updated.
    Update = 2,
    /// A record was deleted (no payload).
    Delete = 3,
    /// An identity event.
    Identity = 4,
    /// An account event.
    Account = 5,
    /// A sync event.
    Sync = 6,
    /// A create replayed by a resync.
    CreateResync = 7,
}

impl Kind {
    /// The kind of byte `b`.
    pub fn from_u8(b: u8) -> Result<Kind> {
        Ok(match b {
            1 => Kind::Create,
            2 => Kind::Update,
            3 => Kind::Delete,
            4 => Kind::Identity,
            5 => Kind::Account,
            6 => Kind::Sync,
            7 => Kind::CreateResync,
            other => return Err(Error::InvalidKind(other)),
        })
    }

    /// The sentinel collection whose bit the collection index sets for this
    /// kind, if any.
    pub fn sentinel(self) -> Option<&'static str> {
        match self {
            Kind::Identity => Some("$identity"),
            Kind::Account => Some("$account"),
            Kind::Sync => Some("$sync"),
            _ => None,
        }
    }
}

/// One event, borrowing its strings and payload (from a decoded block or
/// from the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRef<'a> {
    /// The archive's sequence number, from 1.
    pub seq: u64,
    /// When the archive saw it (µs since the epoch).
    pub witnessed_at: i64,
    /// When upstream indexed it (µs); 0 means "use witnessed_at".
    pub indexed_at: i64,
    /// What it records.
    pub kind: Kind,
    /// The repo's DID (may be empty).
    pub did: &'a str,
    /// The record's collection NSID (empty for non-record events).
    pub collection: &'a str,
    /// The record key.
    pub rkey: &'a str,
    /// The commit revision.
    pub rev: &'a str,
    /// Raw DAG-CBOR (record, or identity/account/sync body); empty for deletes.
    pub payload: &'a [u8],
}

impl EventRef<'_> {
    /// Checks the field limits of the format.
    pub fn validate(&self) -> Result<()> {
        check_len("did", self.did.len(), MAX_DID_LEN)?;
        check_len("collection", self.collection.len(), MAX_SHORT_LEN)?;
        check_len("rkey", self.rkey.len(), MAX_SHORT_LEN)?;
        check_len("rev", self.rev.len(), MAX_SHORT_LEN)?;
        check_len("payload", self.payload.len(), MAX_PAYLOAD_LEN)
    }

    /// An owned copy.
    pub fn to_event(&self) -> Event {
        Event {
            seq: self.seq,
            witnessed_at: self.witnessed_at,
            indexed_at: self.indexed_at,
            kind: self.kind,
            did: self.did.to_owned(),
            collection: self.collection.to_owned(),
            rkey: self.rkey.to_owned(),
            rev: self.rev.to_owned(),
            payload: self.payload.to_vec(),
        }
    }
}

fn check_len(field: &'static str, len: usize, limit: usize) -> Result<()> {
    if len > limit {
        Err(Error::FieldTooLong { field, len, limit })
    } else {
        Ok(())
    }
}

/// One event, owning its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// See [`EventRef::seq`].
    pub seq: u64,
    /// See [`EventRef::witnessed_at`].
    pub witnessed_at: i64,
    /// See [`EventRef::indexed_at`].
    pub indexed_at: i64,
    /// See [`EventRef::kind`].
    pub kind: Kind,
    /// See [`EventRef::did`].
    pub did: String,
    /// See [`EventRef::collection`].
    pub collection: String,
    /// See [`EventRef::rkey`].
    pub rkey: String,
    /// See [`EventRef::rev`].
    pub rev: String,
    /// See [`EventRef::payload`].
    pub payload: Vec<u8>,
}

impl Event {
    /// A borrowed view.
    pub fn as_ref(&self) -> EventRef<'_> {
        EventRef {
            seq: self.seq,
            witnessed_at: self.witnessed_at,
            indexed_at: self.indexed_at,
            kind: self.kind,
            did: &self.did,
            collection: &self.collection,
            rkey: &self.rkey,
            rev: &self.rev,
            payload: &self.payload,
        }
    }
}
