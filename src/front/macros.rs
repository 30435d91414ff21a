//! The C preprocessor's macros as the front end sees them: a table of
//! object-like and function-like definitions (from the preprocessor's own
//! listing, see [`crate::front::preprocess`], or the file's `#define` lines)
//! and an expander that rewrites a piece of C text the way the preprocessor
//! would, for analysis only: the output keeps the user's text.

use std::collections::{BTreeMap, BTreeSet};

/// One `#define`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Macro {
    /// Parameter names of a function-like macro (`__VA_ARGS__` for `...`);
    /// `None` for an object-like one.
    pub params: Option<Vec<String>>,
    /// The replacement text.
    pub body: String,
}

/// Every macro defined at the end of a file, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MacroTable {
    defs: BTreeMap<String, Macro>,
}

/// Deepest nesting of macro expansions the expander follows.
const MAX_DEPTH: usize = 64;

/// Most tokens one expansion may produce (a guard against exponential macros).
const MAX_TOKENS: usize = 20_000;

impl MacroTable {
    /// The definition of `name`, if it is a macro.
    pub fn get(&self, name: &str) -> Option<&Macro> {
        self.defs.get(name)
    }

    /// Whether `name` is a macro.
    pub fn contains(&self, name: &str) -> bool {
        self.defs.contains_key(name)
    }

    /// Every macro, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Macro)> {
        self.defs.iter()
    }

    /// Apply one `#define` line's text (what follows `define`), as the preprocessor would.
    pub fn define_line(&mut self, rest: &str) {
        if let Some((name, m)) = parse_define(rest) {
            self.defs.insert(name, m);
        }
    }

    /// Apply one `#undef NAME`.
    pub fn undefine(&mut self, name: &str) {
        self.defs.remove(name.trim());
    }

    /// Define `NAME` or `NAME=VALUE` as a command line's `-D` does (`NAME` alone is 1).
    pub fn define_option(&mut self, option: &str) {
        let (name, value) = option.split_once('=').unwrap_or((option, "1"));
        self.define_line(&format!("{} {value}", name.trim()));
    }

    /// The macros the file's own preprocessor lines leave defined, with `-D`
    /// options first, when no C preprocessor is at hand: conditional groups
    /// are followed where their condition can be read (`#ifdef`, `#ifndef`,
    /// `#if` over `defined`, integers and macros with integer values), and
    /// taken where it can not; headers are not read.
    pub fn from_source(source: &str, defines: &[String]) -> MacroTable {
        let mut table = MacroTable::default();
        for d in defines {
            table.define_option(d);
        }
        // Per open group: (this group is taken, some branch of it was taken, parent taken).
        let mut stack: Vec<(bool, bool, bool)> = Vec::new();
        let active = |stack: &[(bool, bool, bool)]| stack.last().is_none_or(|g| g.0);
        for line in logical_lines(source) {
            let Some(rest) = line.trim_start().strip_prefix('#') else {
                continue;
            };
            let rest = rest.trim_start();
            let word_len = rest
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            let (word, args) = rest.split_at(word_len);
            let args = strip_comments(args);
            let args = args.trim();
            match word {
                "ifdef" | "ifndef" | "if" => {
                    let parent = active(&stack);
                    let cond = match word {
                        "ifdef" => table.contains(args),
                        "ifndef" => !table.contains(args),
                        _ => table.condition(args),
                    };
                    let taken = parent && cond;
                    stack.push((taken, taken, parent));
                }
                "elif" | "elifdef" | "elifndef" => {
                    if let Some(g) = stack.last_mut() {
                        let cond = match word {
                            "elifdef" => table.contains(args),
                            "elifndef" => !table.contains(args),
                            _ => table.condition(args),
                        };
                        let taken = g.2 && !g.1 && cond;
                        g.0 = taken;
                        g.1 |= taken;
                    }
                }
                "else" => {
                    if let Some(g) = stack.last_mut() {
                        g.0 = g.2 && !g.1;
                        g.1 = true;
                    }
                }
                "endif" => {
                    stack.pop();
                }
                "define" if active(&stack) => table.define_line(args),
                "undef" if active(&stack) => table.undefine(args),
                _ => {}
            }
        }
        table
    }

    /// The value of an `#if` condition; true where it can not be read.
    fn condition(&self, text: &str) -> bool {
        let tokens = tokenize(text);
        // `defined X` and `defined(X)` first, before macros are expanded.
        let mut replaced = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            if tokens[i] == Tok::Ident("defined".into()) {
                let mut j = i + 1;
                while tokens.get(j) == Some(&Tok::Space) {
                    j += 1;
                }
                let paren = tokens.get(j) == Some(&Tok::Punct("(".into()));
                if paren {
                    j += 1;
                    while tokens.get(j) == Some(&Tok::Space) {
                        j += 1;
                    }
                }
                if let Some(Tok::Ident(name)) = tokens.get(j) {
                    replaced.push(Tok::Other(
                        if self.contains(name) { "1" } else { "0" }.into(),
                    ));
                    j += 1;
                    if paren {
                        while tokens.get(j) == Some(&Tok::Space) {
                            j += 1;
                        }
                        j += 1;
                    }
                    i = j;
                    continue;
                }
            }
            replaced.push(tokens[i].clone());
            i += 1;
        }
        let Some(expanded) = self.expand_tokens(replaced, &BTreeSet::new(), 0, &mut 0) else {
            return true;
        };
        // Identifiers left after expansion are 0 in `#if`.
        let text: String = expanded
            .iter()
            .map(|t| match t {
                Tok::Ident(_) => "0".to_string(),
                t => t.text().to_string(),
            })
            .collect();
        eval_condition(&text).is_none_or(|v| v != 0)
    }

    /// `text` with every macro expanded, as the C preprocessor would (the
    /// result's tokens separated as in the input); `None` if the expansion
    /// nests or grows without bound or an invocation is not closed.
    pub fn expand(&self, text: &str) -> Option<String> {
        self.expand_counting(text).0
    }

    /// [`MacroTable::expand`], and the work it did: how many tokens the expander
    /// looked at, over every level of every invocation. Bounded by the guards
    /// (`MAX_DEPTH`, `MAX_TOKENS`) whatever the macros, so a test can hold the
    /// expander to it instead of to a clock.
    pub fn expand_counting(&self, text: &str) -> (Option<String>, usize) {
        let mut work = 0;
        let out = self.expand_tokens(tokenize(text), &BTreeSet::new(), 0, &mut work);
        (out.map(|o| join(&o)), work)
    }

    /// Whether `text` names a macro anywhere.
    pub fn mentioned_in(&self, text: &str) -> bool {
        crate::text::identifiers(text)
            .into_iter()
            .any(|w| self.contains(w))
    }

    fn expand_tokens(
        &self,
        tokens: Vec<Tok>,
        hide: &BTreeSet<String>,
        depth: usize,
        work: &mut usize,
    ) -> Option<Vec<Tok>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut out: Vec<Tok> = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            *work += 1;
            let tok = &tokens[i];
            let Tok::Ident(name) = tok else {
                out.push(tok.clone());
                i += 1;
                continue;
            };
            let Some(m) = self.defs.get(name).filter(|_| !hide.contains(name)) else {
                out.push(tok.clone());
                i += 1;
                continue;
            };
            let mut inner_hide = hide.clone();
            inner_hide.insert(name.clone());
            match &m.params {
                None => {
                    let body = paste(tokenize(&m.body));
                    out.extend(self.expand_tokens(body, &inner_hide, depth + 1, work)?);
                    i += 1;
                }
                Some(params) => {
                    let mut j = i + 1;
                    while tokens.get(j) == Some(&Tok::Space) {
                        j += 1;
                    }
                    if tokens.get(j) != Some(&Tok::Punct("(".into())) {
                        // A function-like macro's name without arguments is no invocation.
                        out.push(tok.clone());
                        i += 1;
                        continue;
                    }
                    let (args, end) = arguments(&tokens, j)?;
                    let body = substitute(self, m, params, &args, hide, depth, work)?;
                    out.extend(self.expand_tokens(body, &inner_hide, depth + 1, work)?);
                    i = end;
                }
            }
            if out.len() > MAX_TOKENS {
                return None;
            }
        }
        Some(out)
    }
}

/// The arguments of an invocation whose `(` is at `open`, split at top-level
/// commas, and the index after its `)`.
fn arguments(tokens: &[Tok], open: usize) -> Option<(Vec<Vec<Tok>>, usize)> {
    let mut args: Vec<Vec<Tok>> = vec![Vec::new()];
    let mut depth = 0usize;
    let mut j = open + 1;
    while j < tokens.len() {
        match &tokens[j] {
            Tok::Punct(p) if p == "(" => depth += 1,
            Tok::Punct(p) if p == ")" => {
                if depth == 0 {
                    return Some((args, j + 1));
                }
                depth -= 1;
            }
            Tok::Punct(p) if p == "," && depth == 0 => {
                args.push(Vec::new());
                j += 1;
                continue;
            }
            _ => {}
        }
        args.last_mut()?.push(tokens[j].clone());
        j += 1;
    }
    None
}

/// A function-like macro's body with its parameters replaced by the
/// arguments: expanded first, except next to `#` and `##`.
fn substitute(
    table: &MacroTable,
    m: &Macro,
    params: &[String],
    args: &[Vec<Tok>],
    hide: &BTreeSet<String>,
    depth: usize,
    work: &mut usize,
) -> Option<Vec<Tok>> {
    let trim = |a: &[Tok]| -> Vec<Tok> {
        let start = a.iter().position(|t| *t != Tok::Space).unwrap_or(a.len());
        let end = a
            .iter()
            .rposition(|t| *t != Tok::Space)
            .map_or(start, |e| e + 1);
        a[start..end].to_vec()
    };
    let arg_of = |name: &str| -> Option<Vec<Tok>> {
        let k = params.iter().position(|p| p == name)?;
        if name == "__VA_ARGS__" {
            let rest: Vec<Vec<Tok>> = args.get(k..).unwrap_or(&[]).to_vec();
            let mut joined = Vec::new();
            for (n, a) in rest.iter().enumerate() {
                if n > 0 {
                    joined.push(Tok::Punct(",".into()));
                }
                joined.extend(trim(a));
            }
            return Some(joined);
        }
        // `F()` passes one empty argument to a one-parameter macro.
        Some(trim(args.get(k).map_or(&[][..], |a| &a[..])))
    };
    let body = tokenize(&m.body);
    let significant = |k: usize, step: isize| -> Option<&Tok> {
        let mut at = k as isize + step;
        while at >= 0 && (at as usize) < body.len() {
            if body[at as usize] != Tok::Space {
                return Some(&body[at as usize]);
            }
            at += step;
        }
        None
    };
    let hash_hash = Tok::Punct("##".into());
    let mut out = Vec::new();
    let mut k = 0;
    while k < body.len() {
        let tok = &body[k];
        if *tok == Tok::Punct("#".into()) {
            // `#param`: the argument's spelling as a string literal.
            let mut j = k + 1;
            while body.get(j) == Some(&Tok::Space) {
                j += 1;
            }
            if let Some(Tok::Ident(p)) = body.get(j)
                && let Some(a) = arg_of(p)
            {
                let spelled = join(&a).replace('\\', "\\\\").replace('"', "\\\"");
                out.push(Tok::Other(format!("\"{spelled}\"")));
                k = j + 1;
                continue;
            }
        }
        if let Tok::Ident(p) = tok
            && let Some(a) = arg_of(p)
        {
            let pasted =
                significant(k, -1) == Some(&hash_hash) || significant(k, 1) == Some(&hash_hash);
            if pasted {
                out.extend(a);
            } else {
                out.extend(table.expand_tokens(a, hide, depth + 1, work)?);
            }
            k += 1;
            continue;
        }
        out.push(tok.clone());
        k += 1;
    }
    Some(paste(out))
}

/// Join the tokens around each `##` into one.
fn paste(tokens: Vec<Tok>) -> Vec<Tok> {
    if !tokens.iter().any(|t| *t == Tok::Punct("##".into())) {
        return tokens;
    }
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == Tok::Punct("##".into()) {
            while out.last() == Some(&Tok::Space) {
                out.pop();
            }
            let mut j = i + 1;
            while tokens.get(j) == Some(&Tok::Space) {
                j += 1;
            }
            let left = out.pop().map(|t| t.text().to_string()).unwrap_or_default();
            let right = tokens
                .get(j)
                .map(|t| t.text().to_string())
                .unwrap_or_default();
            out.extend(tokenize(&format!("{left}{right}")));
            i = j + 1;
            continue;
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    out
}

/// Parse what follows `#define`: `NAME body` or `NAME(params) body`.
fn parse_define(rest: &str) -> Option<(String, Macro)> {
    let rest = rest.trim_start();
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let (name, after) = rest.split_at(len);
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if let Some(list) = after.strip_prefix('(') {
        let close = list.find(')')?;
        let mut params: Vec<String> = list[..close]
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect();
        if let Some(last) = params.last_mut()
            && last.ends_with("...")
        {
            *last = "__VA_ARGS__".into();
        }
        let body = strip_comments(&list[close + 1..]).trim().to_string();
        return Some((
            name.to_string(),
            Macro {
                params: Some(params),
                body,
            },
        ));
    }
    Some((
        name.to_string(),
        Macro {
            params: None,
            body: strip_comments(after).trim().to_string(),
        },
    ))
}

/// The logical lines of a file: continuations joined, comments kept.
fn logical_lines(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in source.lines() {
        if let Some(stripped) = line.strip_suffix('\\') {
            cur.push_str(stripped);
            cur.push(' ');
        } else {
            cur.push_str(line);
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A directive's text without `/* */` and `//` comments (outside literals).
fn strip_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '/' if chars.get(i + 1) == Some(&'*') => {
                let mut j = i + 2;
                while j + 1 < chars.len() && !(chars[j] == '*' && chars[j + 1] == '/') {
                    j += 1;
                }
                i = (j + 2).min(chars.len());
                out.push(' ');
            }
            '/' if chars.get(i + 1) == Some(&'/') => break,
            q @ ('"' | '\'') => {
                out.push(q);
                i += 1;
                while i < chars.len() && chars[i] != q {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        out.push(chars[i]);
                        i += 1;
                    }
                    out.push(chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    out.push(q);
                    i += 1;
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// A preprocessing token.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Punct(String),
    /// Numbers and literals.
    Other(String),
    /// Any run of whitespace.
    Space,
}

impl Tok {
    fn text(&self) -> &str {
        match self {
            Tok::Ident(s) | Tok::Punct(s) | Tok::Other(s) => s,
            Tok::Space => " ",
        }
    }
}

/// Punctuators of more than one character, longest first.
const PUNCTS: [&str; 22] = [
    "...", "<<=", ">>=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "##",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=",
];

fn tokenize(text: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            out.push(Tok::Space);
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            // A pp-number: digits, letters, dots, and signs after an exponent letter.
            let start = i;
            i += 1;
            while i < chars.len() {
                let d = chars[i];
                let sign = (d == '+' || d == '-') && matches!(chars[i - 1], 'e' | 'E' | 'p' | 'P');
                if d.is_ascii_alphanumeric() || d == '.' || d == '_' || sign {
                    i += 1;
                } else {
                    break;
                }
            }
            out.push(Tok::Other(chars[start..i].iter().collect()));
        } else if c == '"' || c == '\'' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(chars.len());
            out.push(Tok::Other(chars[start..i].iter().collect()));
        } else {
            let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
            let p = PUNCTS
                .iter()
                .find(|p| rest.starts_with(**p))
                .map_or_else(|| c.to_string(), |p| p.to_string());
            i += p.chars().count();
            out.push(Tok::Punct(p));
        }
    }
    out
}

/// Tokens back to text; a space between two tokens that would otherwise run together.
fn join(tokens: &[Tok]) -> String {
    let mut out = String::new();
    let mut prev: Option<&Tok> = None;
    for t in tokens {
        if let Some(p) = prev {
            let word = |t: &Tok| matches!(t, Tok::Ident(_) | Tok::Other(_));
            if word(p) && word(t) {
                out.push(' ');
            }
        }
        out.push_str(t.text());
        if *t != Tok::Space {
            prev = Some(t);
        } else {
            prev = None;
        }
    }
    out.trim().to_string()
}

/// Evaluate an `#if` expression of integers (after `defined` and macros are
/// replaced); `None` if it is not one tpace reads.
fn eval_condition(text: &str) -> Option<i128> {
    let tokens: Vec<Tok> = tokenize(text)
        .into_iter()
        .filter(|t| *t != Tok::Space)
        .collect();
    let mut p = Cond { tokens, pos: 0 };
    let v = p.ternary()?;
    (p.pos == p.tokens.len()).then_some(v)
}

/// A precedence-climbing reader of `#if` expressions.
struct Cond {
    tokens: Vec<Tok>,
    pos: usize,
}

impl Cond {
    fn punct(&self) -> Option<&str> {
        match self.tokens.get(self.pos) {
            Some(Tok::Punct(p)) => Some(p),
            _ => None,
        }
    }

    fn ternary(&mut self) -> Option<i128> {
        let c = self.binary(0)?;
        if self.punct() == Some("?") {
            self.pos += 1;
            let a = self.ternary()?;
            if self.punct() != Some(":") {
                return None;
            }
            self.pos += 1;
            let b = self.ternary()?;
            return Some(if c != 0 { a } else { b });
        }
        Some(c)
    }

    fn binary(&mut self, min: u8) -> Option<i128> {
        let mut left = self.unary()?;
        loop {
            let Some(op) = self.punct().map(str::to_string) else {
                return Some(left);
            };
            let prec = match op.as_str() {
                "||" => 1,
                "&&" => 2,
                "|" => 3,
                "^" => 4,
                "&" => 5,
                "==" | "!=" => 6,
                "<" | ">" | "<=" | ">=" => 7,
                "<<" | ">>" => 8,
                "+" | "-" => 9,
                "*" | "/" | "%" => 10,
                _ => return Some(left),
            };
            if prec < min {
                return Some(left);
            }
            self.pos += 1;
            let right = self.binary(prec + 1)?;
            left = match op.as_str() {
                "||" => i128::from(left != 0 || right != 0),
                "&&" => i128::from(left != 0 && right != 0),
                "|" => left | right,
                "^" => left ^ right,
                "&" => left & right,
                "==" => i128::from(left == right),
                "!=" => i128::from(left != right),
                "<" => i128::from(left < right),
                ">" => i128::from(left > right),
                "<=" => i128::from(left <= right),
                ">=" => i128::from(left >= right),
                "<<" => left.checked_shl(u32::try_from(right).ok()?)?,
                ">>" => left.checked_shr(u32::try_from(right).ok()?)?,
                "+" => left.checked_add(right)?,
                "-" => left.checked_sub(right)?,
                "*" => left.checked_mul(right)?,
                "/" => left.checked_div(right)?,
                _ => left.checked_rem(right)?,
            };
        }
    }

    fn unary(&mut self) -> Option<i128> {
        match self.tokens.get(self.pos)?.clone() {
            Tok::Punct(p) if p == "!" || p == "-" || p == "+" || p == "~" => {
                self.pos += 1;
                let v = self.unary()?;
                Some(match p.as_str() {
                    "!" => i128::from(v == 0),
                    "-" => v.checked_neg()?,
                    "~" => !v,
                    _ => v,
                })
            }
            Tok::Punct(p) if p == "(" => {
                self.pos += 1;
                let v = self.ternary()?;
                if self.punct() != Some(")") {
                    return None;
                }
                self.pos += 1;
                Some(v)
            }
            Tok::Other(n) => {
                self.pos += 1;
                integer(&n)
            }
            _ => None,
        }
    }
}

/// A C integer literal's value (decimal, hex, octal; suffixes dropped).
pub fn integer(text: &str) -> Option<i128> {
    let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i128::from_str_radix(hex, 16).ok()
    } else if digits.len() > 1 && digits.starts_with('0') {
        i128::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HIMENO: &str = "#define MR(mt,n,r,c,d) mt->m[(n) * mt->mrows * mt->mcols * mt->mdeps + (r) * mt->mcols * mt->mdeps + (c) * mt->mdeps + (d)]\n";

    #[test]
    fn expands_function_like_macros_with_member_arguments() {
        let t = MacroTable::from_source(HIMENO, &[]);
        assert_eq!(
            t.expand("MR(p,0,i+1,j,k)").unwrap(),
            "p->m[(0) * p->mrows * p->mcols * p->mdeps + (i+1) * p->mcols * p->mdeps + (j) * p->mdeps + (k)]"
        );
        assert_eq!(
            t.expand("MR (a, 3, i, j, k) * 2")
                .unwrap()
                .matches("a->")
                .count(),
            7
        );
        // A function-like macro's name alone is not an invocation.
        assert_eq!(t.expand("MR + 1").unwrap(), "MR + 1");
    }

    /// Macros that double at every level (2^47 tokens in full) are given up on
    /// after a bounded amount of work, not after expanding without end: the
    /// expander's own count of tokens looked at, so the test holds on any machine.
    #[test]
    fn macros_that_grow_without_bound_are_given_up_on_after_bounded_work() {
        let mut src = String::from("#define GROW0 1.0f\n#define TWICE(x) x + x\n");
        for i in 1..48 {
            src.push_str(&format!("#define GROW{i} (GROW{p} + GROW{p})\n", p = i - 1));
        }
        let t = MacroTable::from_source(&src, &[]);
        // Each guard stops a level once it holds MAX_TOKENS tokens; the levels above
        // stop at their first child's failure: a few times MAX_TOKENS per level.
        let bound = 4 * MAX_TOKENS * MAX_DEPTH;
        let (out, work) = t.expand_counting("a * GROW47");
        assert_eq!(out, None);
        assert!(work < bound, "{work} tokens looked at, bound {bound}");
        let nested = format!("{}1{}", "TWICE(".repeat(40), ")".repeat(40));
        let (out, work) = t.expand_counting(&nested);
        assert_eq!(out, None);
        assert!(work < bound, "{work} tokens looked at, bound {bound}");
        // A macro that stays small is expanded whole, and its work is its size.
        let (out, work) = t.expand_counting("GROW3");
        assert_eq!(out.unwrap().matches("1.0f").count(), 8);
        assert!(work < 200, "{work}");
    }

    #[test]
    fn object_macros_nest_and_stop_at_themselves() {
        let src =
            "#define N (M + 2)\n#define M 10\n#define SELF SELF + 1\n#define DATA_TYPE double\n";
        let t = MacroTable::from_source(src, &[]);
        assert_eq!(t.expand("a[N*N]").unwrap(), "a[(10 + 2)*(10 + 2)]");
        assert_eq!(t.expand("SELF").unwrap(), "SELF + 1");
        assert_eq!(t.expand("DATA_TYPE").unwrap(), "double");
    }

    #[test]
    fn polybench_declaration_macros() {
        let src = "#define POLYBENCH_C99_SELECT(x,y) y\n\
                   #define POLYBENCH_2D(var, dim1, dim2, ddim1, ddim2) var[POLYBENCH_C99_SELECT(dim1,ddim1)][POLYBENCH_C99_SELECT(dim2,ddim2)]\n\
                   #define CAT(a, b) a ## b\n#define STR(x) #x\n#define V(...) f(__VA_ARGS__)\n";
        let t = MacroTable::from_source(src, &[]);
        assert_eq!(t.expand("POLYBENCH_2D(A,N,N,n,n)").unwrap(), "A[n][n]");
        assert_eq!(t.expand("CAT(x, 1)").unwrap(), "x1");
        assert_eq!(t.expand("STR(a + b)").unwrap(), "\"a + b\"");
        assert_eq!(t.expand("V(1, 2)").unwrap(), "f(1,2)");
    }

    #[test]
    fn conditionals_in_the_files_own_lines() {
        let src = "#if defined(SMALL)\n#define N 10\n#elif defined(LARGE)\n#define N 1000\n#endif\n\
                   #ifndef N\n#define N 100 /* default */\n#endif\n#if N > 50 && !defined(X)\n#define BIG 1\n#else\n#define BIG 0\n#endif\n";
        let plain = MacroTable::from_source(src, &[]);
        assert_eq!(plain.get("N").unwrap().body, "100");
        assert_eq!(plain.get("BIG").unwrap().body, "1");
        let small = MacroTable::from_source(src, &["SMALL".into()]);
        assert_eq!(small.get("N").unwrap().body, "10");
        assert_eq!(small.get("BIG").unwrap().body, "0");
        let given = MacroTable::from_source(src, &["N=7".into(), "X".into()]);
        assert_eq!(given.get("N").unwrap().body, "7");
        assert_eq!(given.get("BIG").unwrap().body, "0");
    }

    #[test]
    fn comments_and_literals_in_definitions() {
        let src = "#define A 1 /* one */ + 2 // two\n#define S \"a/*b\\\"é\" /* x */\n#define M(x) \\\n  ((x) + 1)\n";
        let t = MacroTable::from_source(src, &[]);
        assert_eq!(t.get("A").unwrap().body, "1   + 2");
        assert_eq!(t.get("S").unwrap().body, "\"a/*b\\\"é\"");
        assert_eq!(t.expand("M(2)").unwrap(), "((2) + 1)");
    }

    #[test]
    fn runaway_expansions_stop() {
        let mut src = String::from("#define A0 x\n");
        for i in 1..40 {
            src.push_str(&format!("#define A{i} A{p} A{p}\n", p = i - 1));
        }
        let t = MacroTable::from_source(&src, &[]);
        assert_eq!(t.expand("A39"), None);
        assert_eq!(t.expand("MR(").as_deref(), Some("MR("));
        let himeno = MacroTable::from_source(HIMENO, &[]);
        assert_eq!(himeno.expand("MR(p, 0"), None);
    }
}
