//! Password hashes: scrypt, the memory-hard KDF the reference PDS uses.
//!
//! Parameters: N = 2^14, r = 8, p = 1, a 16-byte random salt and a 64-byte
//! output, the reference PDS's (`@atproto/pds` hashes with Node's scrypt
//! at its defaults, N = 16384, r = 8, p = 1, keylen 64). Each hash fills
//! 128 * N * r = 16 MiB, so a guess costs an attacker 16 MiB of memory
//! bandwidth and GPUs gain little; it also costs the server that much per
//! login, which is why `createSession` runs on the blocking pool, at most
//! one hash per core at a time (`App::kdf`: memory stays at 16 MiB per
//! core however many logins arrive), and is the slowest route by design. Tests lower N through
//! [`ServerConfig::scrypt_log_n`](crate::ServerConfig::scrypt_log_n) (the
//! cost is stored in each hash, so hashes of any cost verify).
//!
//! Stored form: `scrypt$<log_n>$<r>$<p>$<salt hex>$<hash hex>`.
//!
//! Verifying trusts only what this module writes: r = 8, p = 1, a 64-byte
//! hash and 1 <= log_n <= [`MAX_LOG_N`]. Anything else in the account
//! file is [`PasswordError::Malformed`]: the cost comes from the stored
//! row, and a corrupt one (log_n = 40) would otherwise ask scrypt for
//! 2^50 bytes on the next login.

/// log2(N) of new hashes.
pub const DEFAULT_LOG_N: u8 = 14;
/// The largest log2(N) hashed or verified: 128 * 2^20 * r = 1 GiB per hash.
pub const MAX_LOG_N: u8 = 20;
const R: u32 = 8;
const P: u32 = 1;
const OUT: usize = 64;

/// Why a hash could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// Bad scrypt parameters.
    #[error("scrypt parameters: {0}")]
    Params(String),
    /// A stored hash that does not parse.
    #[error("stored password hash is malformed")]
    Malformed,
    /// No randomness.
    #[error("random: {0}")]
    Random(String),
}

fn derive(
    password: &str,
    salt: &[u8],
    log_n: u8,
    r: u32,
    p: u32,
) -> Result<Vec<u8>, PasswordError> {
    let params =
        scrypt::Params::new(log_n, r, p, OUT).map_err(|e| PasswordError::Params(e.to_string()))?;
    let mut out = vec![0u8; OUT];
    scrypt::scrypt(password.as_bytes(), salt, &params, &mut out)
        .map_err(|e| PasswordError::Params(e.to_string()))?;
    Ok(out)
}

/// Equal in time independent of where the bytes differ.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Hashes `password` with a fresh salt.
pub fn hash(password: &str, log_n: u8) -> Result<String, PasswordError> {
    if !(1..=MAX_LOG_N).contains(&log_n) {
        return Err(PasswordError::Params(format!(
            "log2(N) = {log_n} is outside 1..={MAX_LOG_N}"
        )));
    }
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| PasswordError::Random(e.to_string()))?;
    let out = derive(password, &salt, log_n, R, P)?;
    let hex = data_encoding::HEXLOWER;
    Ok(format!(
        "scrypt${log_n}${R}${P}${}${}",
        hex.encode(&salt),
        hex.encode(&out)
    ))
}

/// Hashes `password` with a given salt (app passwords: `app_passwords.rs`
/// derives it from the DID, so one hash of a candidate compares with all
/// of an account's).
pub fn hash_salted(password: &str, salt: &[u8], log_n: u8) -> Result<String, PasswordError> {
    if !(1..=MAX_LOG_N).contains(&log_n) {
        return Err(PasswordError::Params(format!(
            "log2(N) = {log_n} is outside 1..={MAX_LOG_N}"
        )));
    }
    let out = derive(password, salt, log_n, R, P)?;
    let hex = data_encoding::HEXLOWER;
    Ok(format!(
        "scrypt${log_n}${R}${P}${}${}",
        hex.encode(salt),
        hex.encode(&out)
    ))
}

/// The cost a stored hash was made at (`None`: not this module's form).
pub fn stored_log_n(stored: &str) -> Option<u8> {
    let n = stored.strip_prefix("scrypt$")?.split('$').next()?;
    n.parse::<u8>().ok().filter(|n| (1..=MAX_LOG_N).contains(n))
}

/// Whether `password` matches `stored` (compared in constant time).
/// A stored hash at cost `log_n` that no password matches: a random salt
/// and a random 64-byte "output" (no KDF run, so it costs nothing to
/// make). Checking a password against it costs one scrypt at `log_n`, as
/// against a real hash, and matches with probability 2^-512.
pub fn unmatchable(log_n: u8) -> Result<String, PasswordError> {
    if !(1..=MAX_LOG_N).contains(&log_n) {
        return Err(PasswordError::Params(format!(
            "log2(N) = {log_n} is outside 1..={MAX_LOG_N}"
        )));
    }
    let mut bytes = [0u8; 16 + OUT];
    getrandom::fill(&mut bytes).map_err(|e| PasswordError::Random(e.to_string()))?;
    let hex = data_encoding::HEXLOWER;
    Ok(format!(
        "scrypt${log_n}${R}${P}${}${}",
        hex.encode(&bytes[..16]),
        hex.encode(&bytes[16..])
    ))
}

pub fn verify(password: &str, stored: &str) -> Result<bool, PasswordError> {
    let mut parts = stored.split('$');
    let (Some("scrypt"), Some(n), Some(r), Some(p), Some(salt), Some(h), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(PasswordError::Malformed);
    };
    let num = |s: &str| s.parse::<u32>().map_err(|_| PasswordError::Malformed);
    let log_n = u8::try_from(num(n)?).map_err(|_| PasswordError::Malformed)?;
    if !(1..=MAX_LOG_N).contains(&log_n) || num(r)? != R || num(p)? != P {
        return Err(PasswordError::Malformed);
    }
    let hex = data_encoding::HEXLOWER;
    let salt = hex
        .decode(salt.as_bytes())
        .map_err(|_| PasswordError::Malformed)?;
    let want = hex
        .decode(h.as_bytes())
        .map_err(|_| PasswordError::Malformed)?;
    if want.len() != OUT {
        return Err(PasswordError::Malformed);
    }
    let got = derive(password, &salt, log_n, R, P)?;
    Ok(ct_eq(&got, &want))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unmatchable_hash_is_well_formed_and_matches_nothing() {
        let h = unmatchable(4).unwrap();
        let fields: Vec<&str> = h.split('$').collect();
        assert_eq!(fields[..4], ["scrypt", "4", "8", "1"]);
        assert_eq!(
            (fields[4].len(), fields[5].len(), fields.len()),
            (32, 128, 6)
        );
        for pw in ["", "hunter2", "password"] {
            assert!(!verify(pw, &h).unwrap());
        }
        assert_ne!(h, unmatchable(4).unwrap());
        assert!(unmatchable(0).is_err());
    }

    #[test]
    fn round_trip_and_mismatch() {
        let h = hash("hunter2", 4).unwrap();
        assert!(verify("hunter2", &h).unwrap());
        assert!(!verify("hunter3", &h).unwrap());
        assert!(verify("x", "scrypt$4$8$1$zz$00").is_err());
        // A hash of the wrong length is malformed, not a mismatch.
        assert!(matches!(
            verify("x", "scrypt$4$8$1$00$00"),
            Err(PasswordError::Malformed)
        ));
        assert!(verify("x", "bcrypt$...").is_err());
        // Two hashes of one password differ (fresh salts).
        assert_ne!(h, hash("hunter2", 4).unwrap());
    }

    /// Costs this module never writes are refused before scrypt runs: a
    /// corrupt row must not make a login allocate 2^50 bytes or spin on a
    /// huge p. (Before the check, log_n = 40 reached scrypt.)
    #[test]
    fn refuses_costs_it_never_writes() {
        let good = hash("pw", 4).unwrap();
        let tail = good.splitn(5, '$').nth(4).unwrap();
        for (n, r, p) in [
            (40, 8, 1),
            (21, 8, 1),
            (0, 8, 1),
            (4, 1024, 1),
            (4, 8, 64),
            (4, 7, 1),
        ] {
            let stored = format!("scrypt${n}${r}${p}${tail}");
            assert!(
                matches!(verify("pw", &stored), Err(PasswordError::Malformed)),
                "{stored}"
            );
        }
        assert!(verify("pw", &good).unwrap());
        assert!(matches!(
            hash("pw", MAX_LOG_N + 1),
            Err(PasswordError::Params(_))
        ));
        assert!(matches!(hash("pw", 0), Err(PasswordError::Params(_))));
    }
}
