//! Connect tokens: who may join, until when, and the session key that goes with it.
//!
//! A token is 40 bytes: client id, expiry (UNIX ms), nonce — all little-endian
//! u64 — then a 16-byte HMAC-SHA256 tag under the server's secret. The session
//! key is a second HMAC of the same body, so the issuer hands it to the client
//! out of band (with the token) and the server re-derives it; it never travels.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of an encoded token.
pub const TOKEN_BYTES: usize = 40;
const BODY_BYTES: usize = 24;

/// The secret shared by the server and the token issuer.
#[derive(Clone)]
pub struct Secret([u8; 32]);

impl Secret {
    /// A secret from its bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// A secret from a passphrase (SHA-256 of it); for tests and local benches.
    pub fn from_passphrase(text: &str) -> Self {
        use sha2::Digest;
        Self(Sha256::digest(text.as_bytes()).into())
    }

    fn hmac(&self, label: &[u8], body: &[u8]) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(label);
        mac.update(body);
        mac.finalize().into_bytes().into()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The 128-bit key that authenticates a session's packets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SessionKey {
    pub(crate) k0: u64,
    pub(crate) k1: u64,
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

/// What a token says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectToken {
    /// The client this token lets in.
    pub client_id: u64,
    /// UNIX time in ms after which the server refuses it.
    pub expires_at_ms: u64,
    /// Makes two tokens for one client different; a token is bound to the first address that uses it.
    pub nonce: u64,
}

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not [`TOKEN_BYTES`] long.
    #[error("a connect token is {TOKEN_BYTES} bytes")]
    Length,
    /// The tag does not match: forged, altered, or signed with another secret.
    #[error("the connect token's signature is wrong")]
    Forged,
    /// Past its expiry.
    #[error("the connect token has expired")]
    Expired,
}

impl ConnectToken {
    fn body(&self) -> [u8; BODY_BYTES] {
        let mut b = [0u8; BODY_BYTES];
        b[0..8].copy_from_slice(&self.client_id.to_le_bytes());
        b[8..16].copy_from_slice(&self.expires_at_ms.to_le_bytes());
        b[16..24].copy_from_slice(&self.nonce.to_le_bytes());
        b
    }

    /// Signs the token: its bytes for the client to present, and the session key to give the client with it.
    pub fn issue(&self, secret: &Secret) -> ([u8; TOKEN_BYTES], SessionKey) {
        let body = self.body();
        let mut out = [0u8; TOKEN_BYTES];
        out[..BODY_BYTES].copy_from_slice(&body);
        out[BODY_BYTES..].copy_from_slice(&secret.hmac(b"aggro-token", &body)[..16]);
        (out, session_key(secret, &body))
    }

    /// Checks a presented token: length, signature (in constant time), expiry.
    pub fn open(secret: &Secret, bytes: &[u8], now_unix_ms: u64) -> Result<(ConnectToken, SessionKey), TokenError> {
        if bytes.len() != TOKEN_BYTES {
            return Err(TokenError::Length);
        }
        let (body, tag) = bytes.split_at(BODY_BYTES);
        let expected = secret.hmac(b"aggro-token", body);
        let differs = tag.iter().zip(&expected[..16]).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differs != 0 {
            return Err(TokenError::Forged);
        }
        let word = |i: usize| u64::from_le_bytes(body[i..i + 8].try_into().expect("8 bytes"));
        let token = ConnectToken { client_id: word(0), expires_at_ms: word(8), nonce: word(16) };
        if now_unix_ms > token.expires_at_ms {
            return Err(TokenError::Expired);
        }
        Ok((token, session_key(secret, body)))
    }
}

fn session_key(secret: &Secret, body: &[u8]) -> SessionKey {
    let h = secret.hmac(b"aggro-session", body);
    let word = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
    SessionKey { k0: word(0), k1: word(8) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_with_its_secret_only_and_gives_the_same_key() {
        let secret = Secret::from_passphrase("s");
        let t = ConnectToken { client_id: 7, expires_at_ms: 1_000, nonce: 3 };
        let (bytes, key) = t.issue(&secret);
        assert_eq!(ConnectToken::open(&secret, &bytes, 999).unwrap(), (t, key));
        assert_eq!(ConnectToken::open(&secret, &bytes, 1_001).unwrap_err(), TokenError::Expired);
        assert_eq!(ConnectToken::open(&Secret::from_passphrase("t"), &bytes, 0).unwrap_err(), TokenError::Forged);
        let mut bent = bytes;
        bent[0] ^= 1;
        assert_eq!(ConnectToken::open(&secret, &bent, 0).unwrap_err(), TokenError::Forged);
        assert_eq!(ConnectToken::open(&secret, &bytes[..39], 0).unwrap_err(), TokenError::Length);
    }
}
