//! Finds the C declaration of every array listed in `targetinout` / `targetin`
//! and reads its element type and layout.

use super::clauses::{Named, PipelineClauses};
use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{descendants, named_children, text};
use crate::ir::{Array, ElemType, Intent, Layout};
use tree_sitter::{Node, Tree};

/// The listed arrays, in clause order (`targetinout` first).
pub fn listed_arrays(
    clauses: &PipelineClauses,
    pragma: Node,
    tree: &Tree,
    source: &str,
) -> DiagResult<Vec<Array>> {
    let listed = clauses
        .targetinout
        .iter()
        .map(|n| (n, Intent::InOut))
        .chain(clauses.targetin.iter().map(|n| (n, Intent::In)));
    let mut arrays: Vec<Array> = Vec::new();
    let mut errors = Vec::new();
    if clauses.targetinout.is_empty() {
        errors.push(Diagnostic::new(
            pragma.byte_range().start..pragma.byte_range().start + 7,
            "`pipeline` lists no `targetinout` array",
            "nothing to compute",
            "list the arrays the stencil writes in targetinout(...) and those it only reads in targetin(...)",
        ));
    }
    for (named, intent) in listed {
        if arrays.iter().any(|a| a.name == named.name) {
            errors.push(Diagnostic::new(
                named.span.clone(),
                format!("`{}` is listed twice", named.name),
                "listed again here",
                "name each array once, in targetinout(...) if the stencil writes it, else in targetin(...)",
            ));
            continue;
        }
        match find_declaration(named, pragma, tree, source) {
            Ok((elem, layout)) => arrays.push(Array {
                name: named.name.clone(),
                elem,
                layout,
                intent,
                span: named.span.clone(),
            }),
            Err(d) => errors.push(d),
        }
    }
    if errors.is_empty() {
        Ok(arrays)
    } else {
        Err(errors)
    }
}

/// Declarations visible at the pipeline: the enclosing function's parameters and
/// locals declared before it, then file-scope declarations.
fn find_declaration(
    named: &Named,
    pragma: Node,
    tree: &Tree,
    source: &str,
) -> Result<(ElemType, Layout), Diagnostic> {
    let mut candidates: Vec<(Node, Node)> = Vec::new(); // (declaration, declarator)
    let mut func = pragma.parent();
    while let Some(f) = func {
        if f.kind() == "function_definition" {
            break;
        }
        func = f.parent();
    }
    if let Some(f) = func {
        for d in descendants(f) {
            let is_decl = matches!(d.kind(), "declaration" | "parameter_declaration");
            if is_decl && d.start_byte() < pragma.start_byte() {
                for decl in declarators(d) {
                    if declared_name(decl, source) == Some(named.name.as_str()) {
                        candidates.push((d, decl));
                    }
                }
            }
        }
    }
    if candidates.is_empty() {
        for d in named_children(tree.root_node()) {
            if d.kind() == "declaration" {
                for decl in declarators(d) {
                    if declared_name(decl, source) == Some(named.name.as_str()) {
                        candidates.push((d, decl));
                    }
                }
            }
        }
    }
    let Some((decl, declarator)) = candidates.last().copied() else {
        return Err(Diagnostic::new(
            named.span.clone(),
            format!("cannot find the declaration of `{}`", named.name),
            "not declared before the pipeline",
            "declare the array in this function or at file scope, before the time loop",
        ));
    };
    let ty = decl
        .child_by_field_name("type")
        .map(|t| text(t, source))
        .unwrap_or("");
    let elem = match ty {
        "float" => ElemType::Float,
        "double" => ElemType::Double,
        other => {
            return Err(Diagnostic::new(
                named.span.clone(),
                format!("`{}` has element type `{other}`", named.name),
                "declared with an unsupported type",
                "tpace pipelines arrays of `float` or `double`",
            ));
        }
    };
    layout_of(declarator)
        .ok_or_else(|| {
            Diagnostic::new(
                named.span.clone(),
                format!(
                    "`{}` is declared as `{}`, which is not a grid array",
                    named.name,
                    text(declarator, source)
                ),
                "unsupported declaration",
                "declare it as `T a[X][Y]`, `T (*a)[Y]` or a flat `T *a`",
            )
        })
        .map(|layout| (elem, layout))
}

/// The declarators of a declaration, with initialisers unwrapped.
fn declarators(decl: Node) -> Vec<Node> {
    let mut cursor = decl.walk();
    decl.children_by_field_name("declarator", &mut cursor)
        .map(|d| {
            if d.kind() == "init_declarator" {
                d.child_by_field_name("declarator").unwrap_or(d)
            } else {
                d
            }
        })
        .collect()
}

/// The identifier a declarator declares.
fn declared_name<'s>(mut node: Node, source: &'s str) -> Option<&'s str> {
    loop {
        match node.kind() {
            "identifier" => return Some(text(node, source)),
            "parenthesized_declarator" => node = node.named_child(0)?,
            _ => node = node.child_by_field_name("declarator")?,
        }
    }
}

fn layout_of(declarator: Node) -> Option<Layout> {
    match declarator.kind() {
        "pointer_declarator" => {
            let inner = declarator.child_by_field_name("declarator")?;
            (inner.kind() == "identifier").then_some(Layout::Flat)
        }
        "array_declarator" => {
            let mut inner = declarator;
            while inner.kind() == "array_declarator" {
                inner = inner.child_by_field_name("declarator")?;
            }
            match inner.kind() {
                "identifier" => Some(Layout::Static),
                "parenthesized_declarator" => {
                    let ptr = inner.named_child(0)?;
                    let id = ptr.child_by_field_name("declarator")?;
                    (ptr.kind() == "pointer_declarator" && id.kind() == "identifier")
                        .then_some(Layout::PointerToArray)
                }
                _ => None,
            }
        }
        _ => None,
    }
}
