//! The game world of the benchmark (One Hour One Life's map): 16-byte keys
//! (x, y, slot) inserted in exploration order — an outward square spiral, so
//! newer areas come later — with 16–64-byte values.

/// Object slots per map cell that hold a record.
pub const SLOTS: u64 = 4;

/// The `n`-th cell of an outward square spiral around (0, 0).
pub fn spiral(n: u64) -> (i32, i32) {
    if n == 0 {
        return (0, 0);
    }
    // Ring k holds cells n in ((2k-1)^2, (2k+1)^2], 8k of them.
    let k = ((((n as f64).sqrt() - 1.0) / 2.0).ceil() as i64).max(1);
    let mut k = k;
    while ((2 * k - 1) * (2 * k - 1)) as u64 > n {
        k -= 1;
    }
    while ((2 * k + 1) * (2 * k + 1)) as u64 <= n {
        k += 1;
    }
    let first = ((2 * k - 1) * (2 * k - 1)) as i64;
    let t = n as i64 - first; // 0 .. 8k
    let side = 2 * k;
    let (x, y) = match t / side {
        0 => (k, -k + 1 + t),
        1 => (k - 1 - (t - side), k),
        2 => (-k, k - 1 - (t - 2 * side)),
        _ => (-k + 1 + (t - 3 * side), -k),
    };
    (x as i32, y as i32)
}

/// The key of cell `cell`, slot `slot`.
fn cell_key(cell: u64, slot: u64) -> [u8; 16] {
    let (x, y) = spiral(cell);
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&x.to_be_bytes());
    k[4..8].copy_from_slice(&y.to_be_bytes());
    k[8..].copy_from_slice(&slot.to_be_bytes());
    k
}

/// The key of record `i` (records are numbered in insertion order).
pub fn key(i: u64) -> [u8; 16] {
    cell_key(i / SLOTS, i % SLOTS)
}

/// A key that is not there: an empty slot of an explored cell, or a cell
/// beyond the explored area ("is this cell empty?").
pub fn missing_key(r: u64, records: u64) -> [u8; 16] {
    let cells = records.div_ceil(SLOTS);
    if r % 2 == 0 { cell_key(r / 2 % cells, SLOTS + r % SLOTS) } else { cell_key(cells + r / 2 % cells, r % SLOTS) }
}

/// Writes version `version` of record `i`'s value (16–64 bytes) into `buf`.
pub fn value(i: u64, version: u64, buf: &mut Vec<u8>) {
    let h = mix(i ^ version.rotate_left(32));
    let len = 16 + (h % 49) as usize;
    buf.clear();
    buf.extend_from_slice(&i.to_le_bytes());
    buf.extend_from_slice(&version.to_le_bytes());
    buf.resize(len, (h >> 8) as u8);
}

/// splitmix64's finalizer: a cheap, well-spread hash.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A record for the recency mix: 90 % from the newest 10 %, 10 % uniform.
pub fn recent_or_any(r: u64, records: u64) -> u64 {
    let h = mix(r);
    let newest = (records / 10).max(1);
    if h % 10 == 0 { (h >> 8) % records } else { records - 1 - (h >> 8) % newest }
}

/// Operation `r` of the recency mix: its record, and the version it writes (`None`: a read). Half
/// are reads, half overwrites.
pub fn mix_op(r: u64, records: u64) -> (u64, Option<u64>) {
    let i = recent_or_any(r, records);
    (i, (mix(r ^ 0x5EED) & 1 == 1).then_some(r + 1))
}

/// Bytes of keys and values live after the insert of `records` and `ops` operations of the mix: what
/// an engine's files are measured against (its space amplification).
pub fn live_bytes(records: u64, ops: u64) -> u64 {
    let mut newest = std::collections::HashMap::new();
    for r in 0..ops {
        if let (i, Some(version)) = mix_op(r, records) {
            newest.insert(i, version);
        }
    }
    let mut buf = Vec::with_capacity(64);
    (0..records)
        .map(|i| {
            value(i, newest.get(&i).copied().unwrap_or(0), &mut buf);
            (key(i).len() + buf.len()) as u64
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_spiral_visits_each_cell_once_ring_by_ring() {
        let cells: Vec<(i32, i32)> = (0..49).map(spiral).collect();
        assert_eq!(cells.iter().collect::<HashSet<_>>().len(), 49);
        assert!(cells.iter().all(|(x, y)| x.abs() <= 3 && y.abs() <= 3));
        for w in cells.windows(2).skip(1) {
            let step = (w[0].0 - w[1].0).abs() + (w[0].1 - w[1].1).abs();
            assert!(step <= 2, "{w:?}");
        }
        assert_eq!(spiral(1), (1, 0));
    }

    #[test]
    fn missing_keys_are_missing() {
        let n = 1000;
        let present: HashSet<[u8; 16]> = (0..n).map(key).collect();
        assert_eq!(present.len(), n as usize);
        assert!((0..5000).all(|r| !present.contains(&missing_key(r, n))));
    }
}
