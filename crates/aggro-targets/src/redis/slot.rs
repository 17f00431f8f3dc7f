//! Which of Redis Cluster's 16,384 slots a command belongs to: CRC16 (XMODEM) of its key — or of the
//! key's hash tag, the text between the first `{` and the next `}` when not empty — modulo 16,384, as
//! the cluster specification defines it. Commands are read back from their RESP encoding, so a
//! pipeline encoded anywhere (a shared connection's batch, a bulk load) is routed the same way.

/// Slots in a cluster.
pub const SLOTS: usize = 16_384;

const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| (crc << 8) ^ CRC16_TABLE[usize::from((crc >> 8) as u8 ^ b)])
}

/// The slot of `key`.
pub fn slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.iter().position(|&b| b == b'}').filter(|&close| close > 0).map(|close| &rest[..close])
        })
        .unwrap_or(key);
    crc16(hashed) % SLOTS as u16
}

/// What a command is to routing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `MULTI`: the transaction goes whole to the node of its first key.
    Multi,
    /// `EXEC` or `DISCARD`: the end of a transaction.
    EndMulti,
    /// `FLUSHDB` or `FLUSHALL`: to every master, one reply (the first error, else the last).
    Everywhere,
    /// Any other command, with the byte range of its key if it has one.
    Keyed(Option<(usize, usize)>),
}

/// One command of an encoded pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    /// Where its encoding ends (it starts where the previous one ended).
    pub end: usize,
    pub kind: Kind,
}

/// Commands that name no key (they go with the next command that does, or the last one).
const KEYLESS: [&[u8]; 20] = [
    b"UNWATCH",
    b"SCRIPT",
    b"PING",
    b"SELECT",
    b"DBSIZE",
    b"SCAN",
    b"INFO",
    b"CLUSTER",
    b"ASKING",
    b"KEYS",
    b"RANDOMKEY",
    b"TIME",
    b"CONFIG",
    b"CLIENT",
    b"AUTH",
    b"HELLO",
    b"WAIT",
    b"FUNCTION",
    b"ECHO",
    b"COMMAND",
];

/// Scripts and functions: `NAME body numkeys key…`.
const SCRIPTED: [&[u8]; 6] = [b"EVAL", b"EVALSHA", b"EVAL_RO", b"EVALSHA_RO", b"FCALL", b"FCALL_RO"];

/// Reads a `\r\n`-terminated decimal at `at`; the number and where the next item starts.
fn number(buf: &[u8], at: usize) -> Option<(usize, usize)> {
    let len = buf.get(at..)?.iter().position(|&b| b == b'\r')?;
    let n = std::str::from_utf8(&buf[at..at + len]).ok()?.parse().ok()?;
    Some((n, at + len + 2))
}

/// The command encoded at `at` in `buf` (a RESP array of bulk strings, as [`super::resp::encode`]
/// writes), or None if the encoding is broken.
pub fn parse(buf: &[u8], at: usize) -> Option<Command> {
    if buf.get(at) != Some(&b'*') {
        return None;
    }
    let (count, mut pos) = number(buf, at + 1)?;
    let mut args = [(0usize, 0usize); 4];
    for i in 0..count {
        if buf.get(pos) != Some(&b'$') {
            return None;
        }
        let (len, start) = number(buf, pos + 1)?;
        pos = start.checked_add(len)?.checked_add(2)?;
        if pos > buf.len() {
            return None;
        }
        if i < args.len() {
            args[i] = (start, start + len);
        }
    }
    let arg = |i: usize| (i < count).then(|| &buf[args[i].0..args[i].1]);
    let name = arg(0)?;
    let is = |names: &[&[u8]]| names.iter().any(|n| n.eq_ignore_ascii_case(name));
    let kind = if is(&[b"MULTI"]) {
        Kind::Multi
    } else if is(&[b"EXEC", b"DISCARD"]) {
        Kind::EndMulti
    } else if is(&[b"FLUSHDB", b"FLUSHALL"]) {
        Kind::Everywhere
    } else if is(&KEYLESS) {
        Kind::Keyed(None)
    } else if is(&SCRIPTED) {
        let keys = arg(2).and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok()).unwrap_or(0);
        Kind::Keyed((keys > 0 && count > 3).then_some(args[3]))
    } else {
        Kind::Keyed((count > 1).then_some(args[1]))
    };
    Some(Command { end: pos, kind })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::resp::encode;

    #[test]
    fn slots_are_the_cluster_specifications() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
        assert_eq!(slot(b"{user1000}.following"), slot(b"{user1000}.followers"));
        assert_eq!(slot(b"User{7}"), slot(b"UserItem{7}"));
        assert_eq!(slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384, "an empty tag hashes the whole key");
        assert_eq!(slot(b"foo{{bar}}zap"), crc16(b"{bar") % 16384);
    }

    #[test]
    fn commands_are_read_back_with_their_keys() {
        let mut buf = Vec::new();
        for cmd in [
            &[&b"multi"[..]][..],
            &[b"HINCRBY", b"User{7}", b"Gold", b"-5"],
            &[b"EXEC"],
            &[b"EVALSHA", b"abc", b"1", b"k1", b"a"],
            &[b"PING"],
            &[b"flushdb"],
        ] {
            encode(&mut buf, cmd);
        }
        let mut at = 0;
        let mut kinds = Vec::new();
        while at < buf.len() {
            let c = parse(&buf, at).unwrap();
            kinds.push(match c.kind {
                Kind::Keyed(Some((s, e))) => String::from_utf8(buf[s..e].to_vec()).unwrap(),
                other => format!("{other:?}"),
            });
            at = c.end;
        }
        assert_eq!(kinds, ["Multi", "User{7}", "EndMulti", "k1", "Keyed(None)", "Everywhere"]);
        assert_eq!(parse(b"*2\r\n$3\r\nGET\r\n$9\r\nshort\r\n", 0), None, "a bulk string past the end is refused");
    }
}
