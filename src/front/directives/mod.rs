//! The directives' meaning, whichever dialect wrote them: a time loop to
//! pipeline with its arrays, grid and halo, the spatial loops and their
//! dimensions, the set-up point. Each dialect's front end (`tpace`, `stencil`)
//! parses its own pragma lines into these; [`crate::front::time_loop`] lowers
//! them, with the C they annotate, to the IR.

mod cursor;

pub(crate) use cursor::Cursor;

use crate::front::pragmas::PragmaLine;
use crate::ir::Span;
use tree_sitter::Node;

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
    /// The halo is the stencil's reach as its reads say, not a clause (the
    /// stencil dialect); `halo` is then `None`.
    pub halo_from_reads: bool,
    /// The time loop's counter as the directives name it (`step(t:MAX)`), checked
    /// against the loop.
    pub time_var: Option<Named>,
    /// The step count the directives give (`step(t:MAX)`), as C text.
    pub steps_hint: Option<String>,
    /// The dialect's other lines for this pipeline outside the time loop.
    pub lines: Vec<Span>,
    /// Element types the directives declare (the stencil dialect's `data`), each
    /// with the array it types: checked against the program's declarations.
    pub declared_elems: Vec<(Named, String)>,
}

/// A parsed tpace directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `init`: where buffers are set up (accepted; tpace allocates next to the loop).
    Init,
    /// `pipeline ...` on the time loop.
    Pipeline(Box<PipelineClauses>),
    /// `loop dim(d)` on a spatial loop.
    Loop {
        /// The dimension number `d` (1 = innermost).
        dim: usize,
        /// Where `dim(d)` is written.
        span: Span,
    },
}

/// A directive, the pragma line that says it and the statement it belongs to.
pub struct Found<'t> {
    /// The pragma line (for a dialect that says one thing in several lines, the
    /// line that says the most: the stencil dialect's `data`).
    pub line: PragmaLine,
    /// What it says.
    pub directive: Directive,
    /// The statement after it, if any.
    pub stmt: Option<Node<'t>>,
}

impl Found<'_> {
    /// Where the directive is written.
    pub fn span(&self) -> Span {
        self.line.span.clone()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_expressions_are_array_names() {
        for bad in ["p->", "p->m[0]", "*p", "p-m", "1a", "p..m"] {
            assert_eq!(array_name(bad), None, "{bad}");
        }
        assert_eq!(array_name("wrk2 -> m").as_deref(), Some("wrk2->m"));
        assert!(mentions_name("x = p -> m[3];", "p->m"));
        assert!(!mentions_name("x = p->mrows + q->p->m[0];", "p->m"));
        assert!(mentions_name("a[i] + 1", "a") && !mentions_name("ab[i]", "a"));
    }
}
