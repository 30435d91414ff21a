//! What a macro invocation in a sweep names in its own definition: the kernels
//! keep the macro's text, so the variables its definition reads must reach
//! them (scalars.rs passes numbers by value; subscripts.rs refuses arrays).

use crate::front::cst::{descendants, parse_c, text};
use crate::front::types::Types;
use tree_sitter::Node;

/// The invocation's macro name, and its text with every argument replaced by a
/// placeholder `tpace_argK` (the arguments are the sweep's own text, read there).
/// `node` is the `call_expression` of a function-like macro or an object-like
/// macro's identifier.
pub fn with_placeholders<'s>(node: Node, source: &'s str) -> (&'s str, String) {
    if node.kind() != "call_expression" {
        let name = text(node, source);
        return (name, name.to_string());
    }
    let callee = node
        .child_by_field_name("function")
        .map_or("", |f| text(f, source));
    let args = node
        .child_by_field_name("arguments")
        .map_or(0, |a| a.named_child_count());
    let placeholders: Vec<String> = (0..args).map(|k| format!("tpace_arg{k}")).collect();
    (callee, format!("{callee}({})", placeholders.join(", ")))
}

/// The invocation of the macro whose name is `n`: the call around it, or `n`.
pub fn invocation_of(n: Node) -> Node {
    match n.parent() {
        Some(p)
            if p.kind() == "call_expression" && p.child_by_field_name("function") == Some(n) =>
        {
            p
        }
        _ => n,
    }
}

/// The variables the definition of the macro invoked at `node` names (not its
/// arguments, not functions it calls, not other macros), in order of first
/// mention, each with whether the definition assigns it. Empty when the
/// expansion is not a C expression.
pub fn names(node: Node, source: &str, types: &Types) -> Vec<(String, bool)> {
    let (_, invocation) = with_placeholders(node, source);
    let Some(expanded) = types.macros.expand(&invocation) else {
        return Vec::new();
    };
    let src = format!("void tpace_x(void)\n{{\n({expanded});\n}}\n");
    let tree = parse_c(&src);
    if tree.root_node().has_error() {
        return Vec::new();
    }
    let mut out: Vec<(String, bool)> = Vec::new();
    for id in descendants(tree.root_node()) {
        let name = text(id, &src);
        if id.kind() != "identifier" || name.starts_with("tpace_") || types.macros.contains(name) {
            continue;
        }
        let parent = id.parent();
        let called = parent.is_some_and(|p| {
            p.kind() == "call_expression" && p.child_by_field_name("function") == Some(id)
        });
        if called {
            continue;
        }
        let written = parent.is_some_and(|p| match p.kind() {
            "assignment_expression" => p.child_by_field_name("left") == Some(id),
            "update_expression" => true,
            _ => false,
        });
        match out.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 |= written,
            None => out.push((name.to_string(), written)),
        }
    }
    out
}
