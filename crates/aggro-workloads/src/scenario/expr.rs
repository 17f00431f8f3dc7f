//! Expressions: pgbench's `\set` language, which scenario files share.
//!
//! Integers, floats and 'text' literals; variables (`aid` or pgbench's
//! `:aid`); `+ - * / %` (integer arithmetic stays integer, as in pgbench),
//! comparisons, `and`/`or`/`not`, parentheses; and calls of the functions in
//! [`Func`]. [`parse`] turns text into a tree of names; [`compile`] resolves
//! the names against a [`Scope`] (variable slots, key spaces, size
//! generators), so evaluation touches no map.

use super::dist::{self, Gen};
use aggro_core::rng::Rng;
use aggro_core::scenario::Value;

/// An expression as parsed: names unresolved.
#[derive(Clone, Debug, PartialEq)]
pub enum Ast {
    /// A literal.
    Lit(Value),
    /// A variable or (as a function's argument) a key space or size name.
    Name(String),
    /// `-x` or `not x`.
    Unary(UnOp, Box<Ast>),
    /// `a op b`.
    Binary(BinOp, Box<Ast>, Box<Ast>),
    /// `f(args…)`.
    Call(String, Vec<Ast>),
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `not x`
    Not,
}

/// Binary operators, loosest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `or`
    Or,
    /// `and`
    And,
    /// `=` or `==`
    Eq,
    /// `<>` or `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

impl BinOp {
    fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
            BinOp::Add | BinOp::Sub => 4,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 5,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Num(Value),
    Str(String),
    Ident(String),
    Op(BinOp),
    Minus,
    Not,
    Open,
    Close,
    Comma,
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'(' | b')' | b',' | b'+' | b'*' | b'/' | b'%' => {
                out.push(match c {
                    b'(' => Token::Open,
                    b')' => Token::Close,
                    b',' => Token::Comma,
                    b'+' => Token::Op(BinOp::Add),
                    b'*' => Token::Op(BinOp::Mul),
                    b'/' => Token::Op(BinOp::Div),
                    _ => Token::Op(BinOp::Rem),
                });
                i += 1;
            }
            b'-' => {
                out.push(Token::Minus);
                i += 1;
            }
            b'=' | b'<' | b'>' | b'!' => {
                let two = b.get(i + 1).copied();
                let (tok, len) = match (c, two) {
                    (b'=', Some(b'=')) => (Token::Op(BinOp::Eq), 2),
                    (b'=', _) => (Token::Op(BinOp::Eq), 1),
                    (b'<', Some(b'=')) => (Token::Op(BinOp::Le), 2),
                    (b'<', Some(b'>')) => (Token::Op(BinOp::Ne), 2),
                    (b'<', _) => (Token::Op(BinOp::Lt), 1),
                    (b'>', Some(b'=')) => (Token::Op(BinOp::Ge), 2),
                    (b'>', _) => (Token::Op(BinOp::Gt), 1),
                    (b'!', Some(b'=')) => (Token::Op(BinOp::Ne), 2),
                    _ => return Err("unexpected '!' (use != or not)".into()),
                };
                out.push(tok);
                i += len;
            }
            b'\'' => {
                let start = i + 1;
                let end = text[start..].find('\'').ok_or("a 'text' literal is not closed")? + start;
                out.push(Token::Str(text[start..end].to_string()));
                i = end + 1;
            }
            b'0'..=b'9' | b'.' => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_digit()
                        || b[i] == b'.'
                        || b[i] == b'e'
                        || b[i] == b'E'
                        || ((b[i] == b'-' || b[i] == b'+') && matches!(b[i - 1], b'e' | b'E')))
                {
                    i += 1;
                }
                let n = &text[start..i];
                let v = match n.parse::<i64>() {
                    Ok(v) => Value::Int(v),
                    Err(_) => Value::Float(n.parse::<f64>().map_err(|_| format!("bad number {n:?}"))?),
                };
                out.push(Token::Num(v));
            }
            // A name: letters of any script, digits, `_` and `.`.
            _ if c == b':' || c == b'_' || text[i..].chars().next().is_some_and(char::is_alphabetic) => {
                let start = if c == b':' { i + 1 } else { i };
                let rest = &text[start..];
                i = start + rest.find(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == '.')).unwrap_or(rest.len());
                let word = &text[start..i];
                if word.is_empty() {
                    return Err("':' must be followed by a variable name".into());
                }
                out.push(match word.to_ascii_lowercase().as_str() {
                    "and" => Token::Op(BinOp::And),
                    "or" => Token::Op(BinOp::Or),
                    "not" => Token::Not,
                    "true" => Token::Num(Value::Int(1)),
                    "false" => Token::Num(Value::Int(0)),
                    "null" => Token::Num(Value::Null),
                    _ => Token::Ident(word.to_string()),
                });
            }
            _ => return Err(format!("unexpected character {:?}", text[i..].chars().next().unwrap_or_default())),
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    /// Parentheses, signs and calls open around the token at `at`.
    open: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn binary(&mut self, min: u8) -> Result<Ast, String> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Token::Op(op)) => *op,
                Some(Token::Minus) => BinOp::Sub,
                _ => return Ok(left),
            };
            if op.precedence() < min {
                return Ok(left);
            }
            self.at += 1;
            let right = self.binary(op.precedence() + 1)?;
            left = Ast::Binary(op, Box::new(left), Box::new(right));
        }
    }

    /// One operand: a literal, a name, a call, or a signed or parenthesised expression.
    fn unary(&mut self) -> Result<Ast, String> {
        self.open += 1;
        if self.open > MAX_DEPTH {
            return Err(format!("the expression nests deeper than {MAX_DEPTH} (split it over variables)"));
        }
        let operand = self.operand();
        self.open -= 1;
        operand
    }

    fn operand(&mut self) -> Result<Ast, String> {
        match self.next() {
            Some(Token::Minus) => Ok(match self.unary()? {
                Ast::Lit(Value::Int(i)) => Ast::Lit(Value::Int(-i)),
                Ast::Lit(Value::Float(f)) => Ast::Lit(Value::Float(-f)),
                e => Ast::Unary(UnOp::Neg, Box::new(e)),
            }),
            Some(Token::Not) => Ok(Ast::Unary(UnOp::Not, Box::new(self.binary(3)?))),
            Some(Token::Num(v)) => Ok(Ast::Lit(v)),
            Some(Token::Str(s)) => Ok(Ast::Lit(Value::Text(s))),
            Some(Token::Open) => {
                let e = self.binary(0)?;
                match self.next() {
                    Some(Token::Close) => Ok(e),
                    _ => Err("a '(' is not closed".into()),
                }
            }
            Some(Token::Ident(name)) => {
                if self.peek() != Some(&Token::Open) {
                    return Ok(Ast::Name(name));
                }
                self.at += 1;
                let mut args = Vec::new();
                if self.peek() == Some(&Token::Close) {
                    self.at += 1;
                    return Ok(Ast::Call(name.to_ascii_lowercase(), args));
                }
                loop {
                    args.push(self.binary(0)?);
                    match self.next() {
                        Some(Token::Comma) => {}
                        Some(Token::Close) => return Ok(Ast::Call(name.to_ascii_lowercase(), args)),
                        _ => return Err(format!("the arguments of {name}( are not closed by ')'")),
                    }
                }
            }
            Some(t) => Err(format!("unexpected {t:?}")),
            None => Err("the expression ends too soon".into()),
        }
    }
}

/// The most tokens an expression may have.
const MAX_TOKENS: usize = 1024;
/// The deepest an expression's tree may be: the parser, the compiler, the evaluator and the tree's
/// drop each walk it by recursion on a loader's stack (a 20,000-deep expression overflowed it; in a
/// debug build 500 levels did).
const MAX_DEPTH: usize = 64;

/// The depth of `ast`'s tree, walked without recursion.
fn depth(ast: &Ast) -> usize {
    let (mut deepest, mut stack) = (0, vec![(ast, 1)]);
    while let Some((node, d)) = stack.pop() {
        deepest = deepest.max(d);
        match node {
            Ast::Lit(_) | Ast::Name(_) => {}
            Ast::Unary(_, e) => stack.push((e, d + 1)),
            Ast::Binary(_, l, r) => stack.extend([(&**l, d + 1), (&**r, d + 1)]),
            Ast::Call(_, args) => stack.extend(args.iter().map(|a| (a, d + 1))),
        }
    }
    deepest
}

/// Parses an expression.
pub fn parse(text: &str) -> Result<Ast, String> {
    let mut p = Parser { tokens: tokens(text)?, at: 0, open: 0 };
    if p.tokens.is_empty() {
        return Err("empty expression".into());
    }
    if p.tokens.len() > MAX_TOKENS {
        return Err(format!("an expression of {} tokens: at most {MAX_TOKENS} (split it over variables)", p.tokens.len()));
    }
    let e = p.binary(0)?;
    if depth(&e) > MAX_DEPTH {
        return Err(format!("the expression nests deeper than {MAX_DEPTH} (split it over variables)"));
    }
    match p.peek() {
        None => Ok(e),
        Some(t) => Err(format!("unexpected {t:?} after a complete expression")),
    }
}

/// What the names of an expression may refer to.
pub trait Scope {
    /// The slot of variable `name`, if it is one.
    fn var(&self, name: &str) -> Option<usize>;
    /// The index of key space `name`.
    fn space(&self, name: &str) -> Option<usize>;
    /// The index of size generator `name`.
    fn size(&self, name: &str) -> Option<usize>;
    /// The index of a transaction named `name`, for `committed(name)` (invariants only).
    fn transaction(&self, _name: &str) -> Option<usize> {
        None
    }
    /// The value of a variable no step ever sets (a `[vars]` constant), so
    /// expressions over it are folded when compiled.
    fn constant(&self, _slot: usize) -> Option<Value> {
        None
    }
}

/// A built-in function, its name-valued argument resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Func {
    /// `random(lb, ub)`: uniform integer in `lb..=ub`.
    Random,
    /// `random_zipfian(lb, ub, s)`: pgbench's Zipf draw.
    RandomZipfian,
    /// `random_exponential(lb, ub, parameter)`.
    RandomExponential,
    /// `random_gaussian(lb, ub, parameter)`.
    RandomGaussian,
    /// `abs(x)`.
    Abs,
    /// `int(x)`.
    Int,
    /// `double(x)`.
    Double,
    /// `greatest(a, …)`.
    Greatest,
    /// `least(a, …)`.
    Least,
    /// `sqrt(x)`.
    Sqrt,
    /// `pi()`.
    Pi,
    /// `hash(x)`: FNV-1a 64 of the integer's bytes, non-negative.
    Hash,
    /// `draw(space)`: a record number from the key space's request distribution.
    Draw(usize),
    /// `key(space)` or `key(space, n)`: the key of a drawn record, or of record `n`.
    Key(usize),
    /// `insert(space)`: the number of a new record (the space grows by one).
    Insert(usize),
    /// `text(size)` or `text(n)`: random printable text of the generator's or a fixed length.
    Text(Option<usize>),
    /// `committed(transaction)`: the run's committed count of a transaction (invariants).
    Committed(usize),
}

/// A compiled expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A constant.
    Lit(Value),
    /// A variable's slot.
    Var(usize),
    /// `-x`, `not x`.
    Unary(UnOp, Box<Expr>),
    /// `a op b`.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// A function call.
    Call(Func, Vec<Expr>),
}

fn arity(name: &str, args: &[Ast], range: std::ops::RangeInclusive<usize>) -> Result<(), String> {
    if range.contains(&args.len()) {
        Ok(())
    } else if range.start() == range.end() {
        Err(format!("{name}() takes {} argument(s), not {}", range.start(), args.len()))
    } else {
        Err(format!("{name}() takes {} to {} arguments, not {}", range.start(), range.end(), args.len()))
    }
}

/// Evaluates an operator over constants now (`100000 * :scale` with a
/// constant scale); `None` leaves it to run time (and its error there).
fn fold(e: &Expr) -> Option<Value> {
    let lit = |e: &Expr| match e {
        Expr::Lit(v) => Some(v.clone()),
        _ => None,
    };
    let gens = Gen::default();
    let mut rng = Rng::seeded(0);
    let mut cx = Cx { slots: &[], rng: &mut rng, gens: &gens, committed: &[] };
    match e {
        Expr::Unary(_, a) => lit(a).and_then(|_| e.eval(&mut cx).ok()),
        Expr::Binary(_, a, b) => lit(a).and(lit(b)).and_then(|_| e.eval(&mut cx).ok()),
        _ => None,
    }
}

/// Resolves every name of `ast` in `scope`, folding constants.
pub fn compile(ast: &Ast, scope: &dyn Scope) -> Result<Expr, String> {
    let folded = |e: Expr| fold(&e).map_or(e, Expr::Lit);
    Ok(match ast {
        Ast::Lit(v) => Expr::Lit(v.clone()),
        Ast::Name(n) => {
            let slot = scope.var(n).ok_or_else(|| format!("unknown variable {n:?}"))?;
            scope.constant(slot).map_or(Expr::Var(slot), Expr::Lit)
        }
        Ast::Unary(op, e) => folded(Expr::Unary(*op, Box::new(compile(e, scope)?))),
        Ast::Binary(op, a, b) => folded(Expr::Binary(*op, Box::new(compile(a, scope)?), Box::new(compile(b, scope)?))),
        Ast::Call(name, args) => {
            let named = |what: &str, find: &dyn Fn(&str) -> Option<usize>| -> Result<usize, String> {
                match args.first() {
                    Some(Ast::Name(n) | Ast::Lit(Value::Text(n))) => find(n).ok_or_else(|| format!("{name}(): no {what} named {n:?}")),
                    _ => Err(format!("{name}() takes the name of a {what} first")),
                }
            };
            let (func, rest): (Func, &[Ast]) = match name.as_str() {
                "random" => (arity(name, args, 2..=2).map(|_| Func::Random)?, args),
                "random_zipfian" => (arity(name, args, 3..=3).map(|_| Func::RandomZipfian)?, args),
                "random_exponential" => (arity(name, args, 3..=3).map(|_| Func::RandomExponential)?, args),
                "random_gaussian" => (arity(name, args, 3..=3).map(|_| Func::RandomGaussian)?, args),
                "abs" => (arity(name, args, 1..=1).map(|_| Func::Abs)?, args),
                "int" => (arity(name, args, 1..=1).map(|_| Func::Int)?, args),
                "double" => (arity(name, args, 1..=1).map(|_| Func::Double)?, args),
                "greatest" => (arity(name, args, 1..=64).map(|_| Func::Greatest)?, args),
                "least" => (arity(name, args, 1..=64).map(|_| Func::Least)?, args),
                "sqrt" => (arity(name, args, 1..=1).map(|_| Func::Sqrt)?, args),
                "pi" => (arity(name, args, 0..=0).map(|_| Func::Pi)?, args),
                "hash" | "hash_fnv1a" => (arity(name, args, 1..=1).map(|_| Func::Hash)?, args),
                "draw" => (arity(name, args, 1..=1).and_then(|_| named("key space", &|n| scope.space(n))).map(Func::Draw)?, &args[1..]),
                "key" => (arity(name, args, 1..=2).and_then(|_| named("key space", &|n| scope.space(n))).map(Func::Key)?, &args[1..]),
                "insert" => (arity(name, args, 1..=1).and_then(|_| named("key space", &|n| scope.space(n))).map(Func::Insert)?, &args[1..]),
                "text" => {
                    arity(name, args, 1..=1)?;
                    match &args[0] {
                        Ast::Name(n) if scope.var(n).is_none() => (Func::Text(Some(named("size", &|n| scope.size(n))?)), &args[1..]),
                        _ => (Func::Text(None), args),
                    }
                }
                "committed" => {
                    arity(name, args, 1..=1)?;
                    (Func::Committed(named("transaction", &|n| scope.transaction(n))?), &args[1..])
                }
                other => return Err(format!("unknown function {other}()")),
            };
            Expr::Call(func, rest.iter().map(|a| compile(a, scope)).collect::<Result<_, _>>()?)
        }
    })
}

/// What evaluation reads and draws from.
pub struct Cx<'a> {
    /// Variable slots.
    pub slots: &'a [Value],
    /// This request's random stream.
    pub rng: &'a mut Rng,
    /// Key spaces and size generators.
    pub gens: &'a Gen,
    /// Committed counts per transaction (invariants only).
    pub committed: &'a [u64],
}

fn num_err(what: &str, v: &Value) -> String {
    format!("{what}: {v:?} is not a number")
}

fn int(v: &Value, what: &str) -> Result<i64, String> {
    v.as_int().ok_or_else(|| num_err(what, v))
}

fn float(v: &Value, what: &str) -> Result<f64, String> {
    v.as_float().ok_or_else(|| num_err(what, v))
}

/// Whether a value counts as true (pgbench's `\if`): a non-zero number, a non-empty text.
pub fn truth(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Text(t) => !t.is_empty(),
    }
}

/// Text that reads as an integer, beside an integer, is one (a value `\gset` stored, as pgbench reads it).
fn integer_beside(v: Value, other: &Value) -> Value {
    match (v, other) {
        (Value::Text(t), Value::Int(_)) => t.trim().parse().map(Value::Int).unwrap_or(Value::Text(t)),
        (v, _) => v,
    }
}

fn arith(op: BinOp, a: Value, b: Value) -> Result<Value, String> {
    use BinOp::*;
    let a = integer_beside(a, &b);
    let b = integer_beside(b, &a);
    if let (Value::Int(x), Value::Int(y)) = (&a, &b) {
        let (x, y) = (*x, *y);
        let out_of_range = || "bigint out of range".to_string();
        return Ok(Value::Int(match op {
            Add => x.checked_add(y).ok_or_else(out_of_range)?,
            Sub => x.checked_sub(y).ok_or_else(out_of_range)?,
            Mul => x.checked_mul(y).ok_or_else(out_of_range)?,
            Div | Rem if y == 0 => return Err("division by zero".into()),
            Div => x.checked_div(y).ok_or_else(out_of_range)?,
            // pgbench: anything mod -1 is 0, i64::MIN included.
            Rem => x.checked_rem(y).unwrap_or(0),
            Eq => (x == y) as i64,
            Ne => (x != y) as i64,
            Lt => (x < y) as i64,
            Le => (x <= y) as i64,
            Gt => (x > y) as i64,
            Ge => (x >= y) as i64,
            And | Or => unreachable!("handled by eval"),
        }));
    }
    if let (Value::Text(x), Value::Text(y)) = (&a, &b) {
        match op {
            Eq => return Ok(Value::Int((x == y) as i64)),
            Ne => return Ok(Value::Int((x != y) as i64)),
            Add => return Ok(Value::Text(format!("{x}{y}"))),
            _ => {}
        }
    }
    let (x, y) = (float(&a, "arithmetic")?, float(&b, "arithmetic")?);
    Ok(match op {
        Add => Value::Float(x + y),
        Sub => Value::Float(x - y),
        Mul => Value::Float(x * y),
        Div => Value::Float(x / y),
        Rem => Value::Float(x % y),
        Eq => Value::Int((x == y) as i64),
        Ne => Value::Int((x != y) as i64),
        Lt => Value::Int((x < y) as i64),
        Le => Value::Int((x <= y) as i64),
        Gt => Value::Int((x > y) as i64),
        Ge => Value::Int((x >= y) as i64),
        And | Or => unreachable!("handled by eval"),
    })
}

impl Expr {
    /// Evaluates the expression.
    pub fn eval(&self, cx: &mut Cx<'_>) -> Result<Value, String> {
        match self {
            Expr::Lit(v) => Ok(v.clone()),
            Expr::Var(slot) => Ok(cx.slots[*slot].clone()),
            Expr::Unary(UnOp::Neg, e) => match e.eval(cx)? {
                Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(|| "bigint out of range".to_string()),
                v => Ok(Value::Float(-float(&v, "-")?)),
            },
            Expr::Unary(UnOp::Not, e) => Ok(Value::Int(!truth(&e.eval(cx)?) as i64)),
            Expr::Binary(BinOp::And, a, b) => Ok(Value::Int((truth(&a.eval(cx)?) && truth(&b.eval(cx)?)) as i64)),
            Expr::Binary(BinOp::Or, a, b) => Ok(Value::Int((truth(&a.eval(cx)?) || truth(&b.eval(cx)?)) as i64)),
            Expr::Binary(op, a, b) => {
                let a = a.eval(cx)?;
                let b = b.eval(cx)?;
                arith(*op, a, b)
            }
            Expr::Call(f, args) => call(*f, args, cx),
        }
    }

    /// Evaluates the expression as an integer.
    pub fn eval_int(&self, cx: &mut Cx<'_>, what: &str) -> Result<i64, String> {
        int(&self.eval(cx)?, what)
    }
}

fn call(f: Func, args: &[Expr], cx: &mut Cx<'_>) -> Result<Value, String> {
    let arg = |i: usize, cx: &mut Cx<'_>| args[i].eval(cx);
    match f {
        Func::Random | Func::RandomZipfian | Func::RandomExponential | Func::RandomGaussian => {
            let lb = int(&arg(0, cx)?, "random's lower bound")?;
            let ub = int(&arg(1, cx)?, "random's upper bound")?;
            if lb > ub {
                return Err(format!("random bounds {lb} > {ub}"));
            }
            let parameter = match args.get(2) {
                Some(e) => float(&e.eval(cx)?, "the distribution's parameter")?,
                None => 0.0,
            };
            let n = match f {
                Func::Random => dist::uniform(cx.rng, lb, ub),
                Func::RandomZipfian => dist::pgbench_zipfian(cx.rng, lb, ub, parameter)?,
                Func::RandomExponential => dist::pgbench_exponential(cx.rng, lb, ub, parameter)?,
                _ => dist::pgbench_gaussian(cx.rng, lb, ub, parameter)?,
            };
            Ok(Value::Int(n))
        }
        Func::Abs => match arg(0, cx)? {
            Value::Int(i) => Ok(Value::Int(i.wrapping_abs())),
            v => Ok(Value::Float(float(&v, "abs")?.abs())),
        },
        Func::Int => Ok(Value::Int(int(&arg(0, cx)?, "int")?)),
        Func::Double => Ok(Value::Float(float(&arg(0, cx)?, "double")?)),
        Func::Sqrt => Ok(Value::Float(float(&arg(0, cx)?, "sqrt")?.sqrt())),
        Func::Pi => Ok(Value::Float(std::f64::consts::PI)),
        Func::Greatest | Func::Least => {
            let mut best = arg(0, cx)?;
            for i in 1..args.len() {
                let v = arg(i, cx)?;
                let better = truth(&arith(if f == Func::Greatest { BinOp::Gt } else { BinOp::Lt }, v.clone(), best.clone())?);
                if better {
                    best = v;
                }
            }
            Ok(best)
        }
        Func::Hash => Ok(Value::Int((dist::fnv64(int(&arg(0, cx)?, "hash")? as u64) >> 1) as i64)),
        Func::Draw(space) => Ok(Value::Int(cx.gens.draw(space, cx.rng) as i64)),
        Func::Key(space) => {
            let n = match args.first() {
                Some(e) => int(&e.eval(cx)?, "key's record number")? as u64,
                None => cx.gens.draw(space, cx.rng),
            };
            Ok(Value::Text(cx.gens.key(space, n)))
        }
        Func::Insert(space) => Ok(Value::Int(cx.gens.insert(space) as i64)),
        Func::Text(size) => {
            let len = match size {
                Some(s) => cx.gens.size(s, cx.rng),
                None => int(&arg(0, cx)?, "text's length")?.clamp(0, 1 << 24) as usize,
            };
            Ok(Value::Text(dist::text(cx.rng, len)))
        }
        Func::Committed(t) => Ok(Value::Int(cx.committed.get(t).copied().unwrap_or(0) as i64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two variables, `scale` and `aid`; `scale` a constant when given one.
    struct Names(Option<Value>);
    impl Scope for Names {
        fn var(&self, name: &str) -> Option<usize> {
            ["scale", "aid"].iter().position(|n| *n == name)
        }
        fn space(&self, _: &str) -> Option<usize> {
            None
        }
        fn size(&self, _: &str) -> Option<usize> {
            None
        }
        fn constant(&self, slot: usize) -> Option<Value> {
            self.0.clone().filter(|_| slot == 0)
        }
    }

    fn eval(text: &str) -> Result<Value, String> {
        let e = compile(&parse(text)?, &Names(None))?;
        let gens = Gen::default();
        let mut rng = Rng::seeded(1);
        e.eval(&mut Cx { slots: &[Value::Int(10), Value::Int(7)], rng: &mut rng, gens: &gens, committed: &[] })
    }

    #[test]
    fn arithmetic_follows_pgbench() {
        assert_eq!(eval("1 + 2 * 3"), Ok(Value::Int(7)));
        assert_eq!(eval("(1 + 2) * 3"), Ok(Value::Int(9)));
        assert_eq!(eval("7 / 2"), Ok(Value::Int(3)));
        assert_eq!(eval("7 / 2.0"), Ok(Value::Float(3.5)));
        assert_eq!(eval("-7 % 3"), Ok(Value::Int(-1)));
        assert_eq!(eval("100000 * :scale"), Ok(Value::Int(1_000_000)));
        assert_eq!(eval("aid - -1"), Ok(Value::Int(8)));
        assert_eq!(eval("1 < 2 and not 0"), Ok(Value::Int(1)));
        assert_eq!(eval("greatest(3, aid, 5)"), Ok(Value::Int(7)));
        assert_eq!(eval("least(3.5, 1)"), Ok(Value::Int(1)));
        assert_eq!(eval("'ab' + 'c'"), Ok(Value::Text("abc".into())));
        assert_eq!(eval("1 / 0"), Err("division by zero".into()));
        assert_eq!(eval("9223372036854775807 + 1"), Err("bigint out of range".into()));
        assert_eq!(eval("-9223372036854775807 - 2"), Err("bigint out of range".into()));
        assert_eq!(eval("3037000500 * 3037000500"), Err("bigint out of range".into()));
        assert_eq!(eval("(-9223372036854775807 - 1) % -1"), Ok(Value::Int(0)));
        // Text a \gset stored reads as the integer it is, beside one.
        assert_eq!(eval("'41' + 1"), Ok(Value::Int(42)));
    }

    #[test]
    fn constants_are_folded_when_compiled() {
        let scaled = Names(Some(Value::Int(10)));
        let e = compile(&parse("random(1, 100000 * :scale) + -(2 * 3)").unwrap(), &scaled).unwrap();
        let Expr::Binary(BinOp::Add, call, six) = e else { panic!("{e:?}") };
        assert_eq!(*six, Expr::Lit(Value::Int(-6)));
        assert_eq!(*call, Expr::Call(Func::Random, vec![Expr::Lit(Value::Int(1)), Expr::Lit(Value::Int(1_000_000))]));
        assert_eq!(
            compile(&parse("aid * scale").unwrap(), &scaled).unwrap(),
            Expr::Binary(BinOp::Mul, Box::new(Expr::Var(1)), Box::new(Expr::Lit(Value::Int(10))))
        );
        // An error stays for run time, where it is reported with its step.
        assert_eq!(
            compile(&parse("1 / 0").unwrap(), &scaled).unwrap(),
            Expr::Binary(BinOp::Div, Box::new(Expr::Lit(Value::Int(1))), Box::new(Expr::Lit(Value::Int(0))))
        );
    }

    #[test]
    fn random_stays_in_its_bounds() {
        for _ in 0..100 {
            let Ok(Value::Int(v)) = eval("random(-5000, 5000)") else { panic!() };
            assert!((-5000..=5000).contains(&v));
        }
    }

    #[test]
    fn bad_expressions_say_why() {
        assert_eq!(eval("1 +").unwrap_err(), "the expression ends too soon");
        assert!(eval("random(1)").unwrap_err().contains("takes 2"));
        assert!(eval("nosuch(1)").unwrap_err().contains("unknown function nosuch()"));
        assert!(eval("bid + 1").unwrap_err().contains("unknown variable \"bid\""));
        assert!(eval("(1 + 2").unwrap_err().contains("not closed"));
        assert!(eval("1 2").unwrap_err().contains("after a complete expression"));
        assert!(eval("key(nospace)").unwrap_err().contains("no key space named"));
        let nested = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
        assert!(eval(&nested(20_000)).unwrap_err().contains("at most 1024"));
        assert!(eval(&nested(500)).unwrap_err().contains("nests deeper than 64"));
        assert_eq!(eval(&nested(60)), Ok(Value::Int(1)));
        assert!(eval(&vec!["1"; 20_000].join("+")).unwrap_err().contains("at most 1024"));
        assert!(eval(&vec!["1"; 500].join("+")).unwrap_err().contains("nests deeper than 64"));
        assert_eq!(eval(&vec!["1"; 50].join("+")), Ok(Value::Int(50)));
        assert!(eval("ユーザー + 1").unwrap_err().contains("unknown variable \"ユーザー\""));
        assert_eq!(eval("1 § 2").unwrap_err(), "unexpected character '§'");
    }
}
