//! `#pragma` lines, found by position rather than by the C grammar.
//!
//! A `#pragma` line is not a statement in C: `for (...)`, a pragma line, then
//! the loop's body is valid C, and the pragma belongs to the statement that
//! follows it. tree-sitter's C grammar, however, takes a preprocessor line for
//! a statement and so misparses braceless loop nests with pragmas between
//! their headers (the OpenACC and OpenMP convention). So every pragma line is
//! blanked out (replaced by spaces of the same byte length, newlines kept, so
//! every offset and line number stays valid) before the parse, and each pragma
//! is attached afterwards to the statement that starts after it.

use crate::ir::Span;
use tree_sitter::{Node, Tree};

/// One `#pragma` line (with its backslash continuations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PragmaLine {
    /// The whole line, `#` to the end of its last continuation, without the newline.
    pub span: Span,
    /// Where the text after `#pragma` starts.
    pub arg_start: usize,
    /// The text after `#pragma`, continuations replaced by spaces (same length,
    /// so that `arg_start + i` is the file offset of the text's byte `i`).
    pub arg: String,
}

impl PragmaLine {
    /// The first word of the pragma's text (`tpace`, `stencil`, `omp`, `acc`).
    pub fn dialect(&self) -> &str {
        let t = self.arg.trim_start();
        let end = t
            .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
            .unwrap_or(t.len());
        &t[..end]
    }
}

/// Every `#pragma` line of a C file, outside comments and string literals.
pub fn scan(source: &str) -> Vec<PragmaLine> {
    let mut out = Vec::new();
    for_each_directive(source, |start, end| {
        if let Some(p) = pragma_at(source, start, end) {
            out.push(p);
        }
    });
    out
}

/// Every preprocessor line but `#pragma` (`#include`, `#define`, `#if`, ...),
/// with its continuations, without the newline.
pub fn other_directives(source: &str) -> Vec<Span> {
    let mut out = Vec::new();
    for_each_directive(source, |start, end| {
        if pragma_at(source, start, end).is_none() {
            let trimmed = source[start..end].trim_end().len();
            out.push(start..start + trimmed);
        }
    });
    out
}

/// Call `found(start, end)` for each logical line that is a preprocessor
/// directive (its first non-blank is `#`), outside comments and literals.
fn for_each_directive(source: &str, mut found: impl FnMut(usize, usize)) {
    let b = source.as_bytes();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line_start = true;
                i += 1;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = source[i + 2..]
                    .find("*/")
                    .map_or(b.len(), |e| i + 2 + e + 2);
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = logical_line_end(source, i);
            }
            b'"' | b'\'' => {
                i = literal_end(b, i);
                line_start = false;
            }
            b'#' if line_start => {
                let end = logical_line_end(source, i);
                found(i, end);
                i = end;
            }
            _ => {
                line_start = false;
                i += 1;
            }
        }
    }
}

/// `source` with every pragma line replaced by spaces (newlines kept).
pub fn blank(source: &str, pragmas: &[PragmaLine]) -> String {
    let mut bytes = source.as_bytes().to_vec();
    for p in pragmas {
        for b in &mut bytes[p.span.clone()] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    String::from_utf8(bytes).expect("only ASCII bytes were replaced by spaces")
}

/// The statement a pragma belongs to: the outermost statement that starts at
/// the first code after the pragma line (comments and blank lines skipped).
/// `None` when a closing brace, the end of the file or a non-statement follows.
pub fn attached_statement<'t>(
    tree: &'t Tree,
    blanked: &str,
    pragma: &PragmaLine,
) -> Option<Node<'t>> {
    let at = next_code(blanked, pragma.span.end)?;
    let mut node = tree.root_node().descendant_for_byte_range(at, at)?;
    let mut best = None;
    loop {
        if node.start_byte() != at {
            break;
        }
        if is_statement(node.kind()) {
            best = Some(node);
        }
        match node.parent() {
            Some(p) => node = p,
            None => break,
        }
    }
    best
}

/// Whether a node kind is a statement (or a declaration, which may stand for one).
pub fn is_statement(kind: &str) -> bool {
    kind.ends_with("_statement") || kind == "declaration"
}

/// The first byte at or after `from` that is neither blank nor in a comment.
fn next_code(source: &str, from: usize) -> Option<usize> {
    let b = source.as_bytes();
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = source[i + 2..].find("*/").map(|e| i + 2 + e + 2)?;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => i = logical_line_end(source, i),
            _ => return Some(i),
        }
    }
    None
}

/// The end of the logical line that contains `at` (before its newline), following
/// backslash continuations.
fn logical_line_end(source: &str, at: usize) -> usize {
    let b = source.as_bytes();
    let mut i = at;
    while i < b.len() {
        if b[i] == b'\n' {
            let continued =
                i > 0 && b[i - 1] == b'\\' || (i > 1 && b[i - 1] == b'\r' && b[i - 2] == b'\\');
            if !continued {
                return i;
            }
        }
        i += 1;
    }
    b.len()
}

/// The end of the string or character literal that opens at `at`.
fn literal_end(b: &[u8], at: usize) -> usize {
    let quote = b[at];
    let mut i = at + 1;
    while i < b.len() && b[i] != quote && b[i] != b'\n' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    (i + 1).min(b.len())
}

/// The pragma on the logical line `[start, end)` that starts with `#`, if it is one.
fn pragma_at(source: &str, start: usize, end: usize) -> Option<PragmaLine> {
    let line = &source[start..end];
    let after_hash = line[1..].trim_start_matches([' ', '\t']);
    let rest = after_hash.strip_prefix("pragma")?;
    if !rest.is_empty() && !rest.starts_with([' ', '\t', '\\']) {
        return None;
    }
    let arg_start = end - rest.len();
    // Continuations become spaces of the same length, so offsets stay file offsets.
    let arg: String = rest
        .replace("\\\r\n", "   ")
        .replace("\\\n", "  ")
        .chars()
        .collect();
    let trimmed = line.trim_end().len();
    Some(PragmaLine {
        span: start..start + trimmed,
        arg_start,
        arg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::cst::parse_c;

    const BRACELESS: &str = "void f(void) {\n  int i, j;\n#pragma tpace loop dim(2)\n  for (i = 0; i < 4; i++)\n#pragma tpace loop dim(1)\n    for (j = 0; j < 4; j++)\n      a[i][j] = 0;\n}\n";

    #[test]
    fn finds_pragmas_outside_comments_and_strings() {
        let src = "/* #pragma no */\nconst char *s = \"#pragma no\";\n  #  pragma tpace init\n// #pragma no\n#pragma acc \\\n  loop\n";
        let found = scan(src);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].dialect(), "tpace");
        assert_eq!(found[0].arg.trim(), "tpace init");
        assert_eq!(found[1].dialect(), "acc");
        assert!(found[1].arg.contains("loop"), "{:?}", found[1].arg);
        // Offsets into the arg are file offsets.
        let i = found[1].arg.find("loop").unwrap();
        assert_eq!(
            &src[found[1].arg_start + i..found[1].arg_start + i + 4],
            "loop"
        );
    }

    #[test]
    fn blanked_braceless_nests_parse_and_pragmas_attach_to_their_loops() {
        let pragmas = scan(BRACELESS);
        let blanked = blank(BRACELESS, &pragmas);
        assert_eq!(blanked.len(), BRACELESS.len());
        assert_eq!(blanked.lines().count(), BRACELESS.lines().count());
        let tree = parse_c(&blanked);
        assert!(!tree.root_node().has_error());
        let outer = attached_statement(&tree, &blanked, &pragmas[0]).unwrap();
        let inner = attached_statement(&tree, &blanked, &pragmas[1]).unwrap();
        assert_eq!(outer.kind(), "for_statement");
        assert_eq!(inner.kind(), "for_statement");
        assert!(blanked[outer.byte_range()].starts_with("for (i"));
        assert!(blanked[inner.byte_range()].starts_with("for (j"));
        assert_eq!(outer.child_by_field_name("body"), Some(inner));
    }

    #[test]
    fn a_pragma_before_a_closing_brace_attaches_to_nothing() {
        let src = "void f(void) {\n  g();\n#pragma tpace loop dim(1)\n}\n";
        let pragmas = scan(src);
        let blanked = blank(src, &pragmas);
        let tree = parse_c(&blanked);
        assert!(attached_statement(&tree, &blanked, &pragmas[0]).is_none());
    }
}
