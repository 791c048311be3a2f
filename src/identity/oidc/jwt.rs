//! ID token verification (OpenID Connect Core 3.1.3.7): an RS256 JWS
//! signed by a key of the provider's JWKS, from the configured issuer, for
//! our client, unexpired, and carrying the nonce this sign-in sent.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::signature::Verifier;
use sha2::Sha256;

use super::model::{Claims, Header, Jwk, Jwks};

/// Why an ID token is refused; the name goes into the audit event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    Malformed,
    Algorithm,
    UnknownKey,
    Signature,
    Issuer,
    Audience,
    Expired,
    Nonce,
}

impl Invalid {
    pub fn as_str(self) -> &'static str {
        match self {
            Invalid::Malformed => "malformed_id_token",
            Invalid::Algorithm => "unsupported_algorithm",
            Invalid::UnknownKey => "unknown_key",
            Invalid::Signature => "bad_signature",
            Invalid::Issuer => "wrong_issuer",
            Invalid::Audience => "wrong_audience",
            Invalid::Expired => "expired",
            Invalid::Nonce => "wrong_nonce",
        }
    }
}

/// Clock difference tolerated between the provider and this server.
const LEEWAY_SECS: i64 = 60;

fn decode<T: serde::de::DeserializeOwned>(part: &str) -> Result<T, Invalid> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| Invalid::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| Invalid::Malformed)
}

fn public_key(jwk: &Jwk) -> Option<rsa::PublicKey> {
    let n = URL_SAFE_NO_PAD.decode(jwk.n.as_deref()?).ok()?;
    let e = URL_SAFE_NO_PAD.decode(jwk.e.as_deref()?).ok()?;
    rsa::PublicKey::new(
        rsa::BoxedUint::from_be_slice_vartime(&n),
        rsa::BoxedUint::from_be_slice_vartime(&e),
    )
    .ok()
}

/// The RSA signing keys a token with this `kid` may be signed with: the
/// named one, or every RSA signing key when the token names none.
fn candidates<'a>(jwks: &'a Jwks, kid: Option<&'a str>) -> impl Iterator<Item = &'a Jwk> + 'a {
    jwks.keys.iter().filter(move |k| {
        k.kty == "RSA"
            && k.use_.as_deref().is_none_or(|u| u == "sig")
            && k.alg.as_deref().is_none_or(|a| a == "RS256")
            && kid.is_none_or(|kid| k.kid.as_deref() == Some(kid))
    })
}

/// Verifies `token` and answers its claims. `now` is Unix seconds.
pub fn verify(
    token: &str,
    jwks: &Jwks,
    issuer: &str,
    client_id: &str,
    nonce: &str,
    now: i64,
) -> Result<Claims, Invalid> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Invalid::Malformed);
    };
    let header: Header = decode(header)?;
    // Only the algorithm providers sign with by default; never `none` or
    // an HMAC keyed with something public.
    if header.alg != "RS256" {
        return Err(Invalid::Algorithm);
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| Invalid::Malformed)?;
    let signature =
        rsa::pkcs1v15::Signature::try_from(signature.as_slice()).map_err(|_| Invalid::Signature)?;
    let signed = &token[..header_and_payload_len(token)];
    let mut any_key = false;
    let mut verified = false;
    for jwk in candidates(jwks, header.kid.as_deref()) {
        let Some(key) = public_key(jwk) else { continue };
        any_key = true;
        let key = rsa::pkcs1v15::VerifyingKey::<Sha256>::new(key);
        if key.verify(signed.as_bytes(), &signature).is_ok() {
            verified = true;
            break;
        }
    }
    if !any_key {
        return Err(Invalid::UnknownKey);
    }
    if !verified {
        return Err(Invalid::Signature);
    }
    let claims: Claims = decode(payload)?;
    if claims.iss != issuer {
        return Err(Invalid::Issuer);
    }
    // Core 3.1.3.7 (3) and (4): our client among the audiences, and the
    // authorized party ours when there are several.
    if !claims.aud.contains(client_id)
        || (claims.aud.several() && claims.azp.as_deref() != Some(client_id))
        || claims.azp.as_deref().is_some_and(|azp| azp != client_id)
    {
        return Err(Invalid::Audience);
    }
    if claims.exp + LEEWAY_SECS <= now || claims.iat.is_some_and(|iat| iat > now + LEEWAY_SECS) {
        return Err(Invalid::Expired);
    }
    let nonce_ok = claims.nonce.as_deref().is_some_and(|sent| {
        bool::from(subtle::ConstantTimeEq::ct_eq(
            sent.as_bytes(),
            nonce.as_bytes(),
        ))
    });
    if !nonce_ok {
        return Err(Invalid::Nonce);
    }
    Ok(claims)
}

/// The length of `header.payload`, the signed part.
fn header_and_payload_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(0)
}
