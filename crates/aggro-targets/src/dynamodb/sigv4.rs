//! AWS Signature Version 4 for DynamoDB's JSON API.
//!
//! Only what a `POST /` with four signed headers needs. The signing key is
//! derived once per day and reused.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Credentials and region of the requests to sign.
#[derive(Clone)]
pub struct Signer {
    access_key: String,
    secret_key: String,
    session_token: Option<String>,
    region: String,
    cached: Option<(String, [u8; 32])>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret.
        f.debug_struct("Signer").field("access_key", &self.access_key).field("region", &self.region).finish()
    }
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    m.update(data);
    m.finalize().into_bytes().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `hex(sha256(data))`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// The SigV4 signing key for a day, region and service.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let k_date = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    hmac(&k_service, b"aws4_request")
}

/// The headers a signed request carries besides its body.
#[derive(Debug)]
pub struct Signed {
    /// `X-Amz-Date`.
    pub amz_date: String,
    /// `Authorization`.
    pub authorization: String,
    /// `X-Amz-Security-Token`, with temporary credentials.
    pub session_token: Option<String>,
}

impl Signer {
    /// A signer for `region` with the given credentials.
    pub fn new(access_key: String, secret_key: String, session_token: Option<String>, region: String) -> Self {
        Self { access_key, secret_key, session_token, region, cached: None }
    }

    /// Credentials from `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`
    /// (the fixed pair aggro/aggro if unset, which local servers accept), region from
    /// `region` or `AWS_REGION`/`AWS_DEFAULT_REGION`, else `us-east-1`.
    pub fn from_env(region: Option<String>) -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self::new(
            var("AWS_ACCESS_KEY_ID").unwrap_or_else(|| "aggro".into()),
            var("AWS_SECRET_ACCESS_KEY").unwrap_or_else(|| "aggro".into()),
            var("AWS_SESSION_TOKEN"),
            region.or_else(|| var("AWS_REGION")).or_else(|| var("AWS_DEFAULT_REGION")).unwrap_or_else(|| "us-east-1".into()),
        )
    }

    /// The region requests are signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// Signs `POST /` to `host` with `target` (`DynamoDB_20120810.GetItem`)
    /// and `body`, at `amz_date` (`YYYYMMDDTHHMMSSZ`).
    pub fn sign(&mut self, host: &str, target: &str, body: &[u8], amz_date: &str) -> Signed {
        let date = &amz_date[..8];
        let canonical = format!(
            "POST\n/\n\ncontent-type:application/x-amz-json-1.0\nhost:{host}\nx-amz-date:{amz_date}\nx-amz-target:{target}\n\ncontent-type;host;x-amz-date;x-amz-target\n{}",
            sha256_hex(body)
        );
        let scope = format!("{date}/{}/dynamodb/aws4_request", self.region);
        let to_sign = format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", sha256_hex(canonical.as_bytes()));
        let key = match &self.cached {
            Some((d, k)) if d == date => *k,
            _ => {
                let k = signing_key(&self.secret_key, date, &self.region, "dynamodb");
                self.cached = Some((date.to_string(), k));
                k
            }
        };
        Signed {
            amz_date: amz_date.to_string(),
            authorization: format!(
                "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature={}",
                self.access_key,
                hex(&hmac(&key, to_sign.as_bytes()))
            ),
            session_token: self.session_token.clone(),
        }
    }
}

/// Now as `YYYYMMDDTHHMMSSZ`.
pub fn amz_date_now() -> String {
    let t = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    t.replace(['-', ':'], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signing_key_matches_the_aws_documentation_example() {
        // From AWS's "Examples of how to derive a signing key for Signature Version 4".
        let k = signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215", "us-east-1", "iam");
        assert_eq!(hex(&k), "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
    }

    #[test]
    fn signatures_are_deterministic_and_cover_the_body() {
        let mut s = Signer::new("AKID".into(), "secret".into(), None, "eu-west-1".into());
        let a = s.sign("h:1", "DynamoDB_20120810.GetItem", b"{}", "20261122T101500Z");
        let b = s.sign("h:1", "DynamoDB_20120810.GetItem", b"{}", "20261122T101500Z");
        let c = s.sign("h:1", "DynamoDB_20120810.GetItem", b"{ }", "20261122T101500Z");
        assert_eq!(a.authorization, b.authorization);
        assert_ne!(a.authorization, c.authorization);
        assert!(a.authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKID/20261122/eu-west-1/dynamodb/aws4_request"));
        assert_eq!(amz_date_now().len(), 16);
    }
}
