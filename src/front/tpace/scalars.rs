//! Variables a sweep body reads that are declared outside it (coefficients such
//! as `omega`, sizes held in locals): targets whose kernels are separate
//! functions (CUDA) pass them as arguments.

use super::decls::{declared_name, find_decl, scalar_type};
use crate::front::cst::{descendants, span, text};
use crate::ir::{Array, Scalar};
use std::collections::BTreeSet;
use tree_sitter::{Node, Tree};

/// Names the preprocessor defines anywhere in the file (they need no argument).
pub fn macro_names(tree: &Tree, source: &str) -> BTreeSet<String> {
    descendants(tree.root_node())
        .into_iter()
        .filter(|n| matches!(n.kind(), "preproc_def" | "preproc_function_def"))
        .filter_map(|n| n.child_by_field_name("name"))
        .map(|n| text(n, source).to_string())
        .collect()
}

/// The free variables of `body`, in order of first use. `bound` holds the names
/// the generated kernel defines itself (loop indices, the time counter).
pub fn free_scalars(
    body: Node,
    bound: &BTreeSet<String>,
    arrays: &[Array],
    macros: &BTreeSet<String>,
    at: Node,
    tree: &Tree,
    source: &str,
) -> Vec<Scalar> {
    let nodes = descendants(body);
    // Names declared inside the body are the kernel's own locals.
    let local: BTreeSet<&str> = nodes
        .iter()
        .filter(|n| n.kind() == "declaration")
        .flat_map(|d| {
            let mut cursor = d.walk();
            d.children_by_field_name("declarator", &mut cursor)
                .collect::<Vec<_>>()
        })
        .filter_map(|d| declared_name(d, source))
        .collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for n in nodes.iter().filter(|n| n.kind() == "identifier") {
        let name = text(*n, source);
        let known = local.contains(name)
            || bound.contains(name)
            || macros.contains(name)
            || arrays.iter().any(|a| a.name == name)
            || seen.contains(name);
        // Cheap tests first: tree-sitter finds a node's parent from the root.
        let called = || {
            n.parent().is_some_and(|p| {
                p.kind() == "call_expression" && p.child_by_field_name("function") == Some(*n)
            })
        };
        if known || called() {
            continue;
        }
        seen.insert(name.to_string());
        // Not declared where the pipeline sees it: a header's macro or an enumerator.
        if find_decl(name, at, tree, source).is_none() {
            continue;
        }
        out.push(Scalar {
            name: name.to_string(),
            ty: scalar_type(name, at, tree, source),
            span: span(*n),
        });
    }
    out
}
