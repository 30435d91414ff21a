//! Helpers over tree-sitter's concrete syntax tree of a C file.

use crate::diag::Diagnostic;
use crate::ir::Span;
use tree_sitter::{Node, Parser, Tree};

/// Parse C source. tree-sitter always returns a tree; errors show up as ERROR/MISSING nodes.
pub fn parse_c(source: &str) -> Tree {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_c::LANGUAGE.into())
        .expect("the bundled tree-sitter-c grammar matches the tree-sitter runtime");
    parser
        .parse(source, None)
        .expect("parsing without a timeout or cancellation flag always yields a tree")
}

/// One diagnostic per syntax error in the tree (the first few, outermost first).
pub fn syntax_errors(tree: &Tree, source: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    collect_errors(tree.root_node(), source, &mut out);
    out
}

/// Depth first, in source order, without recursion (a deeply nested input must not
/// overflow the stack); stops at `LIMIT` errors.
fn collect_errors(root: Node, source: &str, out: &mut Vec<Diagnostic>) {
    const LIMIT: usize = 5;
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if out.len() >= LIMIT {
            return;
        }
        if !node.has_error() {
            continue;
        }
        if node.is_missing() {
            let at = node.start_byte();
            out.push(if directive_follows(source, at) {
                // `for (...)` then `#ifdef` then the body: the parser takes the
                // preprocessor line for the body (pragma lines are blanked before).
                let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
                let indent = source[line_start..at].len() - source[line_start..at].trim_start().len();
                Diagnostic::new(
                    line_start + indent..at.max(line_start + indent + 1),
                    "a preprocessor line right after a loop or `if` header without braces",
                    "this header's body is the next line, a `#` line",
                    "put the body in braces, `{` at the end of this header and `}` after the body: \
                     `#if`, `#define` and other lines that are not `#pragma` can not stand between a \
                     header and its body",
                )
            } else {
                Diagnostic::new(
                    at..at,
                    format!("C syntax error: missing `{}`", node.kind()),
                    "expected here",
                    "fix the C syntax; the program must compile as plain C without tpace",
                )
            });
            continue;
        }
        if node.is_error() {
            let end = node
                .end_byte()
                .min(node.start_byte() + first_line_len(source, node.start_byte()));
            out.push(Diagnostic::new(
                node.start_byte()..end.max(node.start_byte() + 1).min(source.len()),
                "C syntax error",
                "could not parse this",
                "fix the C syntax; the program must compile as plain C without tpace",
            ));
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
}

/// Whether only blanks follow `at` on its line and the next non-blank line is a
/// preprocessor line.
fn directive_follows(source: &str, at: usize) -> bool {
    let rest = &source[at.min(source.len())..];
    let Some(eol) = rest.find('\n') else {
        return false;
    };
    rest[..eol].trim().is_empty() && rest[eol..].trim_start().starts_with('#')
}

fn first_line_len(source: &str, at: usize) -> usize {
    source[at..].find('\n').unwrap_or(source.len() - at)
}

/// Source text of a node.
pub fn text<'s>(node: Node, source: &'s str) -> &'s str {
    &source[node.byte_range()]
}

/// Byte span of a node.
pub fn span(node: Node) -> Span {
    node.byte_range()
}

/// Named children of a node, in order.
pub fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// Every node under `node` (itself included), depth first.
pub fn descendants(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        out.push(n);
        let mut cursor = n.walk();
        let children: Vec<Node> = n.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

/// The statements a loop body stands for: the children of a block, or the body itself.
pub fn body_items(body: Node) -> Vec<Node> {
    if body.kind() == "compound_statement" {
        named_children(body)
    } else {
        vec![body]
    }
}

/// A C expression parsed apart from the file (a macro's expansion).
pub struct Parsed {
    /// The text parsed: the expression wrapped in a function.
    pub src: String,
    /// Its parse.
    pub tree: Tree,
}

impl Parsed {
    /// Parse `expr`; `None` if it is not a C expression.
    pub fn new(expr: &str) -> Option<Parsed> {
        let src = format!("void tpace_x(void)\n{{\n({expr});\n}}\n");
        let tree = parse_c(&src);
        (!tree.root_node().has_error()).then_some(Parsed { src, tree })
    }

    /// The expression, without the parentheses around it.
    pub fn expr(&self) -> Option<Node<'_>> {
        let f = self.tree.root_node().named_child(0)?;
        let stmt = f.child_by_field_name("body")?.named_child(0)?;
        let mut e = stmt.named_child(0)?;
        while e.kind() == "parenthesized_expression" {
            e = e.named_child(0)?;
        }
        Some(e)
    }
}
