//! The lexical pieces both dialects' pragma parsers share: identifiers,
//! parenthesised arguments, name lists and `[a:b]` pair lists, each with its
//! position in the file for diagnostics.

use super::{Named, Pair, array_name};
use crate::diag::Diagnostic;

/// A position in the pragma text.
pub(crate) struct Cursor<'a> {
    /// The pragma's text after `#pragma`.
    pub text: &'a str,
    /// The position in `text`.
    pub pos: usize,
    /// The file offset of `text`'s first byte.
    pub base: usize,
}

impl Cursor<'_> {
    pub fn abs(&self) -> usize {
        self.base + self.pos
    }

    pub fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    pub fn skip_ws(&mut self) {
        // Line continuations are whitespace inside a directive, and so are comments,
        // as everywhere in C (`#pragma tpace init /* ... */`, `async // ...`).
        loop {
            let rest = &self.text[self.pos..];
            if let Some(c) = rest.chars().next().filter(|c| c.is_whitespace()) {
                self.pos += c.len_utf8();
            } else if let Some(body) = rest.strip_prefix("/*") {
                self.pos += 2 + body.find("*/").map_or(body.len(), |end| end + 2);
            } else if rest.starts_with("//") {
                self.pos += rest.find('\n').unwrap_or(rest.len());
            } else if rest.starts_with("\\\n") {
                self.pos += 2;
            } else if rest.starts_with("\\\r\n") {
                self.pos += 3;
            } else {
                break;
            }
        }
    }

    pub fn ident(&mut self) -> Option<Named> {
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

    pub fn error(&self, msg: &str) -> Diagnostic {
        self.error_help(
            msg,
            "see the directive syntax in docs/directives.md (or docs/stencil-dialect.md)",
        )
    }

    pub fn error_help(&self, msg: &str, help: &str) -> Diagnostic {
        let at = self.abs();
        let end = at + self.peek().map_or(0, char::len_utf8);
        Diagnostic::new(at..end, msg, "here", help)
    }

    pub fn expect_end(&mut self) -> Result<(), Diagnostic> {
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
                "remove it, or check the directive syntax in docs/directives.md (or docs/stencil-dialect.md)",
            ))
        }
    }

    /// `( ... )` with balanced parentheses; returns the inner text and its absolute start.
    pub fn parenthesised(&mut self) -> Result<(String, usize), Diagnostic> {
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

    pub fn name_list(&mut self) -> Result<Vec<Named>, Diagnostic> {
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
    pub fn pair_list(&mut self) -> Result<Vec<Pair>, Diagnostic> {
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
