//! Templates: `"user:${expr}"` — literal text with `${expression}` parts.
//!
//! `$${` is a literal `${`; any other `$`, `{` or `}` is literal text, so
//! JSON bodies need no escaping. A template that is one `${expr}` and
//! nothing else keeps the expression's value (a number stays a number).
//! Templates of DynamoDB bodies escape what they interpolate for JSON.

use super::expr::{self, Cx, Expr, Scope};
use aggro_core::scenario::Value;

/// One part of a template.
#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Expr(Expr),
}

/// A compiled template.
#[derive(Clone, Debug)]
pub struct Template {
    parts: Vec<Part>,
    json: bool,
}

impl Template {
    /// The text, when the template is literal text only (no `${…}`).
    pub fn literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Text(t)] => Some(t),
            [] => Some(""),
            _ => None,
        }
    }

    /// Parses and compiles `text`; `json` escapes interpolated values for a
    /// JSON string.
    pub fn compile(text: &str, scope: &dyn Scope, json: bool) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(i) = rest.find("${") {
            if i > 0 && rest.as_bytes()[i - 1] == b'$' {
                literal.push_str(&rest[..i - 1]);
                literal.push_str("${");
                rest = &rest[i + 2..];
                continue;
            }
            literal.push_str(&rest[..i]);
            let close = find_close(&rest[i + 2..]).ok_or("a '${' is not closed by '}'")?;
            let inner = &rest[i + 2..i + 2 + close];
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            let e = expr::parse(inner).and_then(|a| expr::compile(&a, scope)).map_err(|e| format!("${{{inner}}}: {e}"))?;
            parts.push(Part::Expr(e));
            rest = &rest[i + 2 + close + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Self { parts, json })
    }

    /// Renders the template.
    pub fn render(&self, cx: &mut Cx<'_>) -> Result<Value, String> {
        if let [Part::Expr(e)] = self.parts.as_slice()
            && !self.json
        {
            return e.eval(cx);
        }
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Expr(e) => {
                    let v = e.eval(cx)?;
                    if self.json {
                        escape_json(&v.to_text(), &mut out);
                    } else {
                        v.write_text(&mut out);
                    }
                }
            }
        }
        Ok(Value::Text(out))
    }
}

/// The end of a `${expr}` (its `}`), skipping 'quoted' text.
fn find_close(s: &str) -> Option<usize> {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '}' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

fn escape_json(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::dist::Gen;
    use aggro_core::rng::Rng;

    struct OneVar;
    impl Scope for OneVar {
        fn var(&self, name: &str) -> Option<usize> {
            (name == "id").then_some(0)
        }
        fn space(&self, _: &str) -> Option<usize> {
            None
        }
        fn size(&self, _: &str) -> Option<usize> {
            None
        }
    }

    fn render(text: &str, json: bool, id: Value) -> Result<Value, String> {
        let t = Template::compile(text, &OneVar, json)?;
        let mut rng = Rng::seeded(1);
        let gens = Gen::default();
        t.render(&mut Cx { slots: &[id], rng: &mut rng, gens: &gens, committed: &[] })
    }

    #[test]
    fn interpolates_and_keeps_a_lone_value_typed() {
        assert_eq!(render("user:${id}", false, Value::Int(7)), Ok(Value::Text("user:7".into())));
        assert_eq!(render("${id}", false, Value::Int(7)), Ok(Value::Int(7)));
        assert_eq!(render("${id + 1}", false, Value::Int(7)), Ok(Value::Int(8)));
        assert_eq!(render("$${literal} {x} $5 ${id}", false, Value::Int(1)), Ok(Value::Text("${literal} {x} $5 1".into())));
        assert_eq!(render("${'a}b'}", false, Value::Null), Ok(Value::Text("a}b".into())));
        assert_eq!(render("plain", false, Value::Null), Ok(Value::Text("plain".into())));
    }

    #[test]
    fn json_templates_escape_what_they_interpolate() {
        let v = render(r#"{"S":"${id}"}"#, true, Value::Text("a\"b".into()));
        assert_eq!(v, Ok(Value::Text(r#"{"S":"a\"b"}"#.into())));
    }

    #[test]
    fn bad_templates_say_why() {
        assert!(render("${id", false, Value::Null).unwrap_err().contains("not closed"));
        assert!(render("${nope}", false, Value::Null).unwrap_err().contains("unknown variable"));
    }
}
