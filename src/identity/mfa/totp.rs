//! RFC 6238 TOTP over RFC 4226 HOTP: 30-second steps, six digits,
//! HMAC-SHA1 (what authenticator apps use), a window of one step either
//! side for clock drift, and no step accepted twice.

use hmac::{Hmac, KeyInit, Mac};

pub const STEP_SECS: u64 = 30;
pub const DIGITS: u32 = 6;
/// Steps either side of now a code may come from.
pub const WINDOW: u64 = 1;

#[derive(Debug, Clone, Copy)]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha512,
}

fn mac(algorithm: Algorithm, key: &[u8], message: &[u8]) -> Vec<u8> {
    fn run<M: Mac + KeyInit>(key: &[u8], message: &[u8]) -> Vec<u8> {
        let mut mac = <M as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
        mac.update(message);
        mac.finalize().into_bytes().to_vec()
    }
    match algorithm {
        Algorithm::Sha1 => run::<Hmac<sha1::Sha1>>(key, message),
        Algorithm::Sha256 => run::<Hmac<sha2::Sha256>>(key, message),
        Algorithm::Sha512 => run::<Hmac<sha2::Sha512>>(key, message),
    }
}

/// RFC 4226 5.3: dynamic truncation of the HMAC of the counter.
pub fn hotp(algorithm: Algorithm, key: &[u8], counter: u64, digits: u32) -> String {
    let hash = mac(algorithm, key, &counter.to_be_bytes());
    let offset = (hash[hash.len() - 1] & 0x0f) as usize;
    let binary = u32::from_be_bytes([
        hash[offset] & 0x7f,
        hash[offset + 1],
        hash[offset + 2],
        hash[offset + 3],
    ]);
    let code = binary % 10u32.pow(digits);
    format!("{code:0width$}", width = digits as usize)
}

/// The six-digit code of the step holding `unix_secs`.
pub fn code_at(secret: &[u8], unix_secs: u64) -> String {
    hotp(Algorithm::Sha1, secret, unix_secs / STEP_SECS, DIGITS)
}

/// The step a presented code belongs to, if it is one of the window around
/// `unix_secs` and later than `last_step` (a code is good once).
pub fn verify(secret: &[u8], code: &str, unix_secs: u64, last_step: Option<u64>) -> Option<u64> {
    let code = code.trim();
    if code.len() != DIGITS as usize || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now = unix_secs / STEP_SECS;
    let mut found = None;
    for step in now.saturating_sub(WINDOW)..=now + WINDOW {
        let expected = hotp(Algorithm::Sha1, secret, step, DIGITS);
        let equal: bool =
            subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), code.as_bytes()).into();
        if equal && last_step.is_none_or(|last| step > last) {
            found = Some(step);
        }
    }
    found
}

/// RFC 4648 base32 without padding, as `otpauth://` URIs carry secrets.
pub fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// The Key URI authenticator apps read (issuer, account, secret, parameters).
pub fn otpauth_uri(issuer: &str, account: &str, secret: &[u8]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~@".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    format!(
        "otpauth://totp/{}:{}?secret={}&issuer={}&algorithm=SHA1&digits={DIGITS}&period={STEP_SECS}",
        enc(issuer),
        enc(account),
        base32(secret),
        enc(issuer)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 Appendix B: every published test vector (8 digits, T0 = 0, X = 30).
    #[test]
    fn rfc_6238_test_vectors() {
        let sha1 = b"12345678901234567890";
        let sha256 = b"12345678901234567890123456789012";
        let sha512 = b"1234567890123456789012345678901234567890123456789012345678901234";
        let vectors: [(u64, &str, &str, &str); 6] = [
            (59, "94287082", "46119246", "90693936"),
            (1111111109, "07081804", "68084774", "25091201"),
            (1111111111, "14050471", "67062674", "99943326"),
            (1234567890, "89005924", "91819424", "93441116"),
            (2000000000, "69279037", "90698825", "38618901"),
            (20000000000, "65353130", "77737706", "47863826"),
        ];
        for (time, one, two_five_six, five_twelve) in vectors {
            let step = time / STEP_SECS;
            assert_eq!(hotp(Algorithm::Sha1, sha1, step, 8), one, "SHA1 at {time}");
            assert_eq!(
                hotp(Algorithm::Sha256, sha256, step, 8),
                two_five_six,
                "SHA256 at {time}"
            );
            assert_eq!(
                hotp(Algorithm::Sha512, sha512, step, 8),
                five_twelve,
                "SHA512 at {time}"
            );
        }
    }

    /// RFC 4226 Appendix D: the HOTP values of counters 0 to 9.
    #[test]
    fn rfc_4226_test_vectors() {
        let expected = [
            "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583",
            "399871", "520489",
        ];
        for (counter, code) in expected.iter().enumerate() {
            assert_eq!(
                hotp(Algorithm::Sha1, b"12345678901234567890", counter as u64, 6),
                *code
            );
        }
    }

    #[test]
    fn window_of_one_step_and_no_reuse() {
        let secret = b"12345678901234567890";
        let t = 1_111_111_111;
        let code = code_at(secret, t);
        let step = t / STEP_SECS;
        assert_eq!(verify(secret, &code, t, None), Some(step));
        assert_eq!(verify(secret, &code, t + 30, None), Some(step));
        assert_eq!(verify(secret, &code, t - 30, None), Some(step));
        assert_eq!(verify(secret, &code, t + 60, None), None);
        assert_eq!(verify(secret, &code, t, Some(step)), None, "used once");
        assert_eq!(verify(secret, "12345", t, None), None);
    }

    #[test]
    fn base32_matches_rfc_4648() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY");
        assert_eq!(base32(b"fooba"), "MZXW6YTB");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI");
    }
}
