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

/// `text` with every `(name)` (blanks allowed inside) written ` name `.
fn unparenthesize(text: &str, name: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('(') {
        let after = &rest[open + 1..];
        let inner = after.trim_start();
        let matches = inner.starts_with(name)
            && inner[name.len()..].trim_start().starts_with(')')
            && !inner[name.len()..]
                .chars()
                .next()
                .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric());
        let before_ok = !rest[..open]
            .chars()
            .next_back()
            .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric());
        if matches && before_ok {
            let close = open + 1 + after.find(')').expect("checked above");
            out.push_str(&rest[..open]);
            out.push(' ');
            out.push_str(name);
            out.push(' ');
            rest = &rest[close + 1..];
        } else {
            out.push_str(&rest[..=open]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
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
    ///
    /// A macro's expansion puts its arguments in parentheses, and C's grammar
    /// reads `(i)+nx*...` (Parboil's `Index3D`) as a cast of `+nx` to a type `i`:
    /// where the parse has such casts to names that are no type of C's own, the
    /// expression is read again without the parentheses around those names.
    pub fn new(expr: &str) -> Option<Parsed> {
        let parse = |expr: &str| {
            let src = format!("void tpace_x(void)\n{{\n({expr});\n}}\n");
            let tree = parse_c(&src);
            (!tree.root_node().has_error()).then_some(Parsed { src, tree })
        };
        let parsed = parse(expr)?;
        let names: Vec<String> = descendants(parsed.tree.root_node())
            .into_iter()
            .filter(|n| n.kind() == "cast_expression")
            .filter_map(|n| n.child_by_field_name("type"))
            .filter(|t| t.named_child_count() == 1)
            .filter_map(|t| t.named_child(0))
            .filter(|t| t.kind() == "type_identifier")
            .map(|t| text(t, &parsed.src).to_string())
            .filter(|n| !n.ends_with("_t"))
            .collect();
        if names.is_empty() {
            return Some(parsed);
        }
        let mut bare = expr.to_string();
        for name in &names {
            bare = unparenthesize(&bare, name);
        }
        Some(parse(&bare).unwrap_or(parsed))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_macros_parenthesized_arguments_are_no_casts() {
        // Parboil's Index3D(nx, ny, i, j, k + 1) expands to this; C's grammar reads
        // `(i)+nx` as a cast of `+nx` to a type `i`.
        let p = Parsed::new("((i)+nx*((j)+ny*(k + 1)))").expect("parses");
        let e = p.expr().expect("an expression");
        assert_eq!(e.kind(), "binary_expression");
        assert!(
            !descendants(e).iter().any(|n| n.kind() == "cast_expression"),
            "{}",
            e.to_sexp()
        );
        // Casts to C's own types stay casts.
        let p = Parsed::new("(long)(i) + (size_t)j").expect("parses");
        let casts = descendants(p.expr().unwrap())
            .into_iter()
            .filter(|n| n.kind() == "cast_expression")
            .count();
        assert_eq!(casts, 2);
        assert_eq!(
            unparenthesize("(i)+f(i)+( i )*(ii)", "i"),
            " i +f(i)+ i *(ii)"
        );
    }
}
