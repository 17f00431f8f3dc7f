//! pgbench's `-M simple`: each request's values written into its statement's text, sent as one
//! simple query (`Q`). pgbench substitutes a variable's value as it stands, unquoted — `:name`
//! holding `abc` becomes `abc`, not `'abc'` — so the same is done here with the `$k` a compiled
//! statement holds in place of each variable; a NULL (a `\gset` of a NULL column) is written `NULL`.

use super::wire::push_text;
use aggro_core::scenario::Value;
use bytes::{BufMut, BytesMut};
use postgres_protocol::IsNull;

/// A statement cut at its parameters.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Inline {
    pieces: Vec<Piece>,
}

#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Text(String),
    /// Parameter `$k + 1`.
    Param(usize),
}

impl Inline {
    /// Cuts `sql` at each `$k` outside quotes that does not continue an identifier (`a$1` is a name).
    pub(super) fn parse(sql: &str) -> Self {
        let (b, mut pieces, mut from) = (sql.as_bytes(), Vec::new(), 0);
        let (mut single, mut double, mut i) = (false, false, 0);
        while i < b.len() {
            match b[i] {
                b'\'' if !double => single = !single,
                b'"' if !single => double = !double,
                b'$' if !single && !double && b.get(i + 1).is_some_and(u8::is_ascii_digit) && !continues_name(b, i) => {
                    let end = b[i + 1..].iter().position(|c| !c.is_ascii_digit()).map_or(b.len(), |n| i + 1 + n);
                    if let Ok(k @ 1..) = sql[i + 1..end].parse::<usize>() {
                        pieces.push(Piece::Text(sql[from..i].to_string()));
                        pieces.push(Piece::Param(k - 1));
                        from = end;
                    }
                    i = end;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        pieces.push(Piece::Text(sql[from..].to_string()));
        Self { pieces }
    }

    /// Appends the simple query with `args` written in (a `$k` beyond them is left as it stands, for
    /// the server to refuse).
    pub(super) fn encode(&self, out: &mut BytesMut, args: &[Value]) {
        out.put_u8(b'Q');
        let length_at = out.len();
        out.put_i32(0);
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
                Piece::Param(k) => match args.get(*k) {
                    Some(v) => {
                        if let IsNull::Yes = push_text(out, v) {
                            out.extend_from_slice(b"NULL");
                        }
                    }
                    None => out.extend_from_slice(format!("${}", k + 1).as_bytes()),
                },
            }
        }
        out.put_u8(0);
        let length = (out.len() - length_at) as i32;
        out[length_at..length_at + 4].copy_from_slice(&length.to_be_bytes());
    }
}

/// Whether the byte before `at` belongs to an identifier, so a `$` there is part of a name.
fn continues_name(b: &[u8], at: usize) -> bool {
    at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_' || b[at - 1] == b'$')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(sql: &str, args: &[Value]) -> String {
        let mut out = BytesMut::new();
        Inline::parse(sql).encode(&mut out, args);
        assert_eq!(out[0], b'Q');
        assert_eq!(i32::from_be_bytes(out[1..5].try_into().unwrap()) as usize, out.len() - 1, "the length counts itself and the text");
        assert_eq!(out.last(), Some(&0));
        String::from_utf8(out[5..out.len() - 1].to_vec()).unwrap()
    }

    #[test]
    fn values_are_written_in_as_pgbench_substitutes_them() {
        assert_eq!(query("SELECT $1 + $2", &[Value::Int(1), Value::Int(-2)]), "SELECT 1 + -2");
        assert_eq!(query("SELECT $1, $1", &[Value::Text("abc".into())]), "SELECT abc, abc", "unquoted, as pgbench writes a variable");
        assert_eq!(query("SELECT $2::text || $1", &[Value::Float(0.5), Value::Null]), "SELECT NULL::text || 0.5");
        assert_eq!(query("UPDATE t SET a = $10", &(0..10).map(Value::Int).collect::<Vec<_>>()), "UPDATE t SET a = 9");
    }

    #[test]
    fn quotes_names_and_missing_parameters_are_left_alone() {
        let args = [Value::Int(7)];
        assert_eq!(query("SELECT '$1', \"$1\", a$1, $1", &args), "SELECT '$1', \"$1\", a$1, 7");
        assert_eq!(query("SELECT 'it''s', $1", &args), "SELECT 'it''s', 7", "a doubled quote closes and reopens");
        assert_eq!(query("SELECT $2, $0, $$x$$", &args), "SELECT $2, $0, $$x$$");
    }
}
