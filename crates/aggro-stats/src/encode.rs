//! HdrHistogram's standard compressed form (V2 + DEFLATE, base64), the same
//! encoding as HdrHistogram interval logs, so other HdrHistogram tools can
//! read a result file's histograms.

use crate::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// A histogram that could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error("bad histogram encoding: {0}")]
pub struct DecodeError(String);

/// Encodes a histogram as base64 of its V2-DEFLATE serialization.
pub fn to_base64(h: &Histogram) -> String {
    use base64::Engine;
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serializing to a Vec cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes what [`to_base64`] wrote.
pub fn from_base64(text: &str) -> Result<Histogram, DecodeError> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim()).map_err(|e| DecodeError(e.to_string()))?;
    let mut h: Histogram = Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(|e| DecodeError(format!("{e:?}")))?;
    // Let it grow, so merging never fails.
    h.auto(true);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_count() {
        let mut h = crate::new_histogram();
        for v in [1u64, 10, 999, 123_456, 7_000_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let back = from_base64(&to_base64(&h)).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.max(), h.max());
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        let mut grown = back.clone();
        grown.record(u64::MAX / 4).expect("a decoded histogram grows");
        assert!(from_base64("not base64!").is_err());
        assert!(from_base64("AAAA").is_err());
    }
}
