//! Parser for the text of one `#pragma tpace ...` line.
//!
//! Grammar (the tpace paper, §3.3):
//!
//! ```text
//! init
//! pipeline targetinout(a, b) targetin(c) size([lo:n][lo:n]) halo([m:p][m:p]) async
//! loop dim(d)
//! ```

use crate::diag::Diagnostic;
use crate::ir::Span;

/// A name inside a clause with its position in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The identifier.
    pub name: String,
    /// Where it is written.
    pub span: Span,
}

/// One `[a:b]` pair of a `size` or `halo` clause, as C expression text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// Text before the colon.
    pub first: String,
    /// Text after the colon.
    pub second: String,
    /// Where the bracket pair is written.
    pub span: Span,
}

/// The clauses of a `pipeline` directive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineClauses {
    /// `targetinout(...)` names.
    pub targetinout: Vec<Named>,
    /// `targetin(...)` names.
    pub targetin: Vec<Named>,
    /// `size(...)` pairs, outermost dimension first, and the clause's span.
    pub size: Option<(Vec<Pair>, Span)>,
    /// `halo(...)` pairs, outermost dimension first, and the clause's span.
    pub halo: Option<(Vec<Pair>, Span)>,
    /// Whether `async` was given.
    pub asynchronous: bool,
}

/// A parsed tpace directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `init`: where buffers are set up (accepted; tpace allocates next to the loop).
    Init,
    /// `pipeline ...` on the time loop.
    Pipeline(PipelineClauses),
    /// `loop dim(d)` on a spatial loop.
    Loop {
        /// The dimension number `d` (1 = innermost).
        dim: usize,
        /// Where `dim(d)` is written.
        span: Span,
    },
}

/// Parse the text after `#pragma` (which starts with `tpace`), located at byte `base` of the file.
pub fn parse_directive(text: &str, base: usize) -> Result<Directive, Diagnostic> {
    let mut p = Cursor { text, pos: 0, base };
    p.skip_ws();
    let word = p.ident().ok_or_else(|| p.error("expected `tpace`"))?;
    debug_assert_eq!(word.name, "tpace");
    p.skip_ws();
    let kind = p.ident().ok_or_else(|| {
        p.error_help(
            "`#pragma tpace` needs a directive",
            "write `init`, `pipeline ...` or `loop dim(d)`",
        )
    })?;
    match kind.name.as_str() {
        "init" => {
            p.expect_end()?;
            Ok(Directive::Init)
        }
        "pipeline" => parse_pipeline(&mut p).map(Directive::Pipeline),
        "loop" => parse_loop(&mut p),
        other => Err(Diagnostic::new(
            kind.span,
            format!("unknown tpace directive `{other}`"),
            "not a tpace directive",
            "tpace directives are `init`, `pipeline` and `loop`",
        )),
    }
}

fn parse_loop(p: &mut Cursor) -> Result<Directive, Diagnostic> {
    p.skip_ws();
    let start = p.abs();
    let clause = p.ident().ok_or_else(|| {
        p.error_help(
            "`loop` needs a `dim(d)` clause",
            "write `#pragma tpace loop dim(1)` on the innermost loop, `dim(2)` on the next, ...",
        )
    })?;
    if clause.name != "dim" {
        return Err(unknown_clause(&clause, "`loop` takes only `dim(d)`"));
    }
    let inner = p.parenthesised()?;
    let dim = inner.0.trim().parse::<usize>().ok().filter(|d| *d >= 1);
    let span = start..p.abs();
    let dim = dim.ok_or_else(|| {
        Diagnostic::new(
            span.clone(),
            format!("`dim({})` is not a dimension number", inner.0.trim()),
            "expected a positive integer",
            "`dim(1)` marks the innermost (fastest-varying) index, `dim(2)` the next one out",
        )
    })?;
    p.expect_end()?;
    Ok(Directive::Loop { dim, span })
}

fn parse_pipeline(p: &mut Cursor) -> Result<PipelineClauses, Diagnostic> {
    let mut c = PipelineClauses::default();
    loop {
        p.skip_ws();
        if p.at_end() {
            return Ok(c);
        }
        let start = p.abs();
        let clause = p.ident().ok_or_else(|| {
            p.error_help(
                "expected a clause name",
                "`pipeline` takes targetinout(...), targetin(...), size(...), halo(...) and async",
            )
        })?;
        match clause.name.as_str() {
            "targetinout" => c.targetinout.extend(p.name_list()?),
            "targetin" => c.targetin.extend(p.name_list()?),
            "size" => {
                let pairs = p.pair_list()?;
                c.size = Some((pairs, start..p.abs()));
            }
            "halo" => {
                let pairs = p.pair_list()?;
                c.halo = Some((pairs, start..p.abs()));
            }
            "async" => {
                // An optional queue argument, as in OpenACC, is accepted and ignored:
                // tpace chooses the queues itself.
                p.skip_ws();
                if p.peek() == Some('(') {
                    p.parenthesised()?;
                }
                c.asynchronous = true;
            }
            _ => {
                return Err(unknown_clause(
                    &clause,
                    "`pipeline` takes targetinout(...), targetin(...), size(...), halo(...) and async",
                ));
            }
        }
    }
}

fn unknown_clause(clause: &Named, help: &str) -> Diagnostic {
    Diagnostic::new(
        clause.span.clone(),
        format!("unknown clause `{}`", clause.name),
        "not understood here",
        help,
    )
}

/// An array name as a clause lists it: an identifier (`a`) or a member
/// expression of identifiers (`p->m`, `s.u`, `s.in->v`), returned without
/// blanks; `None` for anything else.
pub fn array_name(text: &str) -> Option<String> {
    let compact: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    let mut rest = compact.as_str();
    loop {
        let rest_trim = rest.trim_start();
        let len = rest_trim
            .char_indices()
            .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
            .map_or(rest_trim.len(), |(i, _)| i);
        if len == 0 {
            return None;
        }
        out.push_str(&rest_trim[..len]);
        rest = rest_trim[len..].trim_start();
        if rest.is_empty() {
            return Some(out);
        }
        let op = if rest.starts_with("->") {
            "->"
        } else if rest.starts_with('.') {
            "."
        } else {
            return None;
        };
        out.push_str(op);
        rest = &rest[op.len()..];
    }
}

/// Whether C `text` mentions the array `name`: an identifier as a word, a
/// member expression (`p->m`) as a whole (not `p->mrows`, not `q->p->m`).
pub fn mentions_name(text: &str, name: &str) -> bool {
    if !name.contains(['.', '-']) {
        return crate::text::mentions(text, name);
    }
    let compact: String = text.split_whitespace().collect();
    let ident = |c: char| c == '_' || c.is_ascii_alphanumeric();
    compact.match_indices(name).any(|(at, m)| {
        let before = compact[..at].chars().next_back();
        let after = compact[at + m.len()..].chars().next();
        before.is_none_or(|c| !ident(c) && c != '.' && c != '>') && after.is_none_or(|c| !ident(c))
    })
}

/// A position in the pragma text.
struct Cursor<'a> {
    text: &'a str,
    pos: usize,
    base: usize,
}

impl Cursor<'_> {
    fn abs(&self) -> usize {
        self.base + self.pos
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn skip_ws(&mut self) {
        // Line continuations are whitespace inside a directive.
        loop {
            let rest = &self.text[self.pos..];
            if let Some(c) = rest.chars().next().filter(|c| c.is_whitespace()) {
                self.pos += c.len_utf8();
            } else if rest.starts_with("\\\n") {
                self.pos += 2;
            } else if rest.starts_with("\\\r\n") {
                self.pos += 3;
            } else {
                break;
            }
        }
    }

    fn ident(&mut self) -> Option<Named> {
        let rest = &self.text[self.pos..];
        let len = rest
            .char_indices()
            .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
            .map_or(rest.len(), |(i, _)| i);
        if len == 0 {
            return None;
        }
        let start = self.abs();
        self.pos += len;
        Some(Named {
            name: rest[..len].to_string(),
            span: start..self.abs(),
        })
    }

    fn error(&self, msg: &str) -> Diagnostic {
        self.error_help(msg, "see the tpace directive syntax in the README")
    }

    fn error_help(&self, msg: &str, help: &str) -> Diagnostic {
        let at = self.abs();
        let end = at + self.peek().map_or(0, char::len_utf8);
        Diagnostic::new(at..end, msg, "here", help)
    }

    fn expect_end(&mut self) -> Result<(), Diagnostic> {
        self.skip_ws();
        if self.at_end() {
            Ok(())
        } else {
            let start = self.abs();
            let word = self.ident();
            let span = word.map_or(start..start + 1, |w| w.span);
            Err(Diagnostic::new(
                span,
                "unexpected text after the directive",
                "not understood here",
                "remove it, or check the directive syntax in the README",
            ))
        }
    }

    /// `( ... )` with balanced parentheses; returns the inner text and its absolute start.
    fn parenthesised(&mut self) -> Result<(String, usize), Diagnostic> {
        self.skip_ws();
        if self.peek() != Some('(') {
            return Err(self.error_help("expected `(`", "clause arguments go in parentheses"));
        }
        let open = self.pos;
        let mut depth = 0usize;
        for (i, c) in self.text[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner = self.text[open + 1..open + i].to_string();
                        let inner_start = self.base + open + 1;
                        self.pos = open + i + 1;
                        return Ok((inner, inner_start));
                    }
                }
                _ => {}
            }
        }
        Err(Diagnostic::new(
            self.base + open..self.base + open + 1,
            "unclosed `(` in directive",
            "opened here",
            "add the matching `)`",
        ))
    }

    fn name_list(&mut self) -> Result<Vec<Named>, Diagnostic> {
        let (inner, start) = self.parenthesised()?;
        let mut names = Vec::new();
        let mut offset = 0;
        for part in inner.split(',') {
            let lead = part.len() - part.trim_start().len();
            let name = part.trim();
            let at = start + offset + lead;
            let Some(normal) = array_name(name) else {
                return Err(Diagnostic::new(
                    at..at + name.len().max(1),
                    format!("`{name}` is not an array name"),
                    "expected an identifier or a member expression",
                    "list array names separated by commas, e.g. targetinout(a, work); an array \
                     held in a struct is named by its member, e.g. targetinout(p->m, s.u)",
                ));
            };
            names.push(Named {
                name: normal,
                span: at..at + name.len(),
            });
            offset += part.len() + 1;
        }
        Ok(names)
    }

    /// `([a:b][c:d]...)`
    fn pair_list(&mut self) -> Result<Vec<Pair>, Diagnostic> {
        let (inner, start) = self.parenthesised()?;
        let mut pairs = Vec::new();
        let mut rest = inner.as_str();
        let mut at = start;
        loop {
            let trimmed = rest.trim_start();
            at += rest.len() - trimmed.len();
            rest = trimmed;
            if rest.is_empty() {
                break;
            }
            let bad = |at: usize| {
                Diagnostic::new(
                    at..at + 1,
                    "expected `[first:second]`",
                    "here",
                    "write one bracket pair per dimension, outermost first, e.g. size([0:X][0:Y])",
                )
            };
            if !rest.starts_with('[') {
                return Err(bad(at));
            }
            let close = rest.find(']').ok_or_else(|| bad(at))?;
            let body = &rest[1..close];
            let colon = body.find(':').ok_or_else(|| bad(at))?;
            let (first, second) = (body[..colon].trim(), body[colon + 1..].trim());
            if first.is_empty() || second.is_empty() {
                return Err(bad(at));
            }
            pairs.push(Pair {
                first: first.to_string(),
                second: second.to_string(),
                span: at..at + close + 1,
            });
            at += close + 1;
            rest = &rest[close + 1..];
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_papers_pipeline() {
        let text = "tpace pipeline targetinout(work,a) size([0:X][0:Y]) halo([1:1][1:1]) async";
        let Directive::Pipeline(c) = parse_directive(text, 100).unwrap() else {
            panic!("not a pipeline")
        };
        let names: Vec<_> = c.targetinout.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["work", "a"]);
        assert_eq!(&text[c.targetinout[1].span.start - 100..][..1], "a");
        let (size, _) = c.size.unwrap();
        assert_eq!(
            (size[0].first.as_str(), size[0].second.as_str()),
            ("0", "X")
        );
        assert_eq!(c.halo.unwrap().0.len(), 2);
        assert!(c.asynchronous);
    }

    #[test]
    fn parses_loop_dim() {
        let d = parse_directive("tpace loop dim(2)", 0).unwrap();
        assert!(matches!(d, Directive::Loop { dim: 2, .. }));
    }

    #[test]
    fn rejects_unknown_clause_at_its_position() {
        let e = parse_directive("tpace pipeline targetinout(a) sizes([0:X])", 10).unwrap_err();
        assert_eq!(e.message, "unknown clause `sizes`");
        assert_eq!(e.span, 40..45);
    }

    #[test]
    fn member_expressions_are_array_names() {
        let text =
            "tpace pipeline targetinout(p->m, wrk2 -> m) targetin(s.u, a) size([0:N]) halo([1:1])";
        let Directive::Pipeline(c) = parse_directive(text, 0).unwrap() else {
            panic!("not a pipeline")
        };
        let names: Vec<_> = c
            .targetinout
            .iter()
            .chain(&c.targetin)
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(names, ["p->m", "wrk2->m", "s.u", "a"]);
        assert_eq!(&text[c.targetinout[1].span.clone()], "wrk2 -> m");
        for bad in ["p->", "p->m[0]", "*p", "p-m", "1a", "p..m"] {
            assert_eq!(array_name(bad), None, "{bad}");
        }
        assert!(mentions_name("x = p -> m[3];", "p->m"));
        assert!(!mentions_name("x = p->mrows + q->p->m[0];", "p->m"));
        assert!(mentions_name("a[i] + 1", "a") && !mentions_name("ab[i]", "a"));
    }

    #[test]
    fn rejects_dim_zero_and_garbage() {
        assert!(parse_directive("tpace loop dim(0)", 0).is_err());
        assert!(parse_directive("tpace loop dim(x)", 0).is_err());
        assert!(parse_directive("tpace pipeline size([0X])", 0).is_err());
        assert!(parse_directive("tpace pipeline targetin(a b)", 0).is_err());
        assert!(parse_directive("tpace pipeline targetin(a", 0).is_err());
    }
}
