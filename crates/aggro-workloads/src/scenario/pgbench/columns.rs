//! The names of the columns a query returns, as PostgreSQL names them — what pgbench's `\gset` and
//! `\aset` store the first row under — read from the query's text: a SELECT's list (up to its
//! top-level FROM) or what follows RETURNING. An item is named by its `AS name`, or, when it is a
//! column reference (`abalance`, `a.abalance`), by the column; anything else has no name aggro can
//! tell without asking the server, and is refused with the fix (`write … AS name`).

use super::lines::Quotes;

/// Words (letters, digits, `_`) outside quotes and parentheses: their byte ranges.
fn top_level_words(sql: &str) -> Vec<std::ops::Range<usize>> {
    let b = sql.as_bytes();
    let (mut words, mut depth, mut i, mut quotes) = (Vec::new(), 0i32, 0, Quotes::default());
    while i < b.len() {
        let c = b[i];
        match c {
            _ if !quotes.outside(c) => {}
            b'(' => depth += 1,
            b')' => depth -= 1,
            c if depth == 0 && (c.is_ascii_alphabetic() || c == b'_') => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                words.push(start..i);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    words
}

/// `text` split at its top-level commas.
fn top_level_items(text: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start, mut quotes) = (Vec::new(), 0i32, 0, Quotes::default());
    for (i, c) in text.bytes().enumerate() {
        match c {
            _ if !quotes.outside(c) => {}
            b'(' => depth += 1,
            b')' => depth -= 1,
            b',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
}

/// An identifier as PostgreSQL keeps it: quoted as written, unquoted folded to lower case.
fn identifier(text: &str) -> Option<String> {
    let t = text.trim();
    if let Some(inner) = t.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        return (!inner.is_empty() && !inner.contains('"')).then(|| inner.to_string());
    }
    let plain = t.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    plain.then(|| t.to_ascii_lowercase())
}

/// The column names of `sql`'s rows, in order.
pub(super) fn returned_columns(sql: &str) -> Result<Vec<String>, String> {
    let words = top_level_words(sql);
    let is = |r: &std::ops::Range<usize>, w: &str| sql[r.clone()].eq_ignore_ascii_case(w);
    let list = if let Some(ret) = words.iter().find(|r| is(r, "returning")) {
        &sql[ret.end..]
    } else if let Some(select) = words.iter().position(|r| is(r, "select")) {
        // SELECT [DISTINCT | ALL] the list [FROM …]
        let mut at = select;
        while words.get(at + 1).is_some_and(|r| is(r, "distinct") || is(r, "all")) {
            at += 1;
        }
        const ENDS: [&str; 10] = ["from", "where", "group", "having", "order", "limit", "offset", "union", "except", "intersect"];
        let end = words[at + 1..].iter().find(|r| ENDS.iter().any(|w| is(r, w))).map_or(sql.len(), |r| r.start);
        &sql[words[at].end..end]
    } else {
        return Err("it returns no rows aggro can name (a SELECT, or a statement with RETURNING)".into());
    };
    top_level_items(list)
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let item = item.trim();
            let words = top_level_words(item);
            if let Some(r#as) = words.iter().rev().find(|r| item[(*r).clone()].eq_ignore_ascii_case("as")) {
                return identifier(&item[r#as.end..]).ok_or_else(|| format!("column {} ({item}): its name after AS is not a name", i + 1));
            }
            let column = item.rsplit('.').next().filter(|_| item.split('.').all(|part| identifier(part).is_some()));
            column.and_then(identifier).ok_or_else(|| format!("column {} ({item}) has no name aggro can tell: write `{item} AS name`", i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_named_as_postgres_names_them() {
        let names = |sql: &str| returned_columns(sql);
        assert_eq!(names("SELECT abalance FROM pgbench_accounts WHERE aid = $1"), Ok(vec!["abalance".into()]));
        assert_eq!(names("select a.Bid, count(*) AS n, \"Mixed\" from t a group by 1"), Ok(vec!["bid".into(), "n".into(), "Mixed".into()]));
        assert_eq!(names("SELECT DISTINCT x, coalesce(y, 0) as y FROM t"), Ok(vec!["x".into(), "y".into()]));
        assert_eq!(names("SELECT 1 AS one, 'a, b' AS two"), Ok(vec!["one".into(), "two".into()]));
        assert_eq!(names("UPDATE t SET v = v + 1 WHERE k = $1 RETURNING v, k AS key"), Ok(vec!["v".into(), "key".into()]));
        assert!(names("SELECT $1 + $2").unwrap_err().contains("write `$1 + $2 AS name`"));
        assert!(names("SELECT * FROM t").unwrap_err().contains("(*)"));
        assert!(names("INSERT INTO t VALUES (1)").unwrap_err().contains("returns no rows"));
    }
}
