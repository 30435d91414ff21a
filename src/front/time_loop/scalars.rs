//! Variables a sweep body reads that are declared outside it (coefficients such
//! as `omega`, sizes held in locals): targets whose kernels are separate
//! functions (CUDA) pass them as arguments.

use super::decls::{declared_name, find_decl, scalar_type};
use super::macro_reads;
use crate::front::cst::{descendants, span, text};
use crate::front::types::Types;
use crate::ir::{Array, Scalar, ScalarRole};
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

/// Names and places in a sweep body that are not free variables of its kernel.
pub struct NotFree<'a> {
    /// Names the generated kernel defines itself (loop indices, the time counter).
    pub bound: &'a BTreeSet<String>,
    /// Per-step values (`fict[t]`), which the host evaluates, and the accesses
    /// to listed arrays, which the kernel replaces whole (the names in their
    /// subscripts and macro arguments are not the kernel's).
    pub replaced: &'a [crate::ir::Span],
}

/// The free variables of `body`, in order of first use, except `not_free`.
pub fn free_scalars(
    body: Node,
    not_free: &NotFree,
    arrays: &[Array],
    at: Node,
    tree: &Tree,
    source: &str,
    types: &Types,
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
    // Every use of each candidate name, in source order (depth-first is source order).
    let mut uses: Vec<(String, Vec<Node>)> = Vec::new();
    let mut index: std::collections::BTreeMap<String, usize> = Default::default();
    // Names a macro's definition writes (a macro's name is the place of what it reads).
    let mut written_by_macro: BTreeSet<String> = BTreeSet::new();
    // Per-step values (`fict[t]`) are evaluated on the host: their names are not the kernel's.
    let (bound, replaced) = (not_free.bound, not_free.replaced);
    // Disjoint, sorted: a binary search per identifier (nested accesses merge).
    let mut merged: Vec<crate::ir::Span> = Vec::new();
    let mut sorted = replaced.to_vec();
    sorted.sort_by_key(|s| s.start);
    for s in sorted {
        match merged.last_mut() {
            Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
            _ => merged.push(s),
        }
    }
    let in_step_value = |n: &Node| {
        let i = merged.partition_point(|s| s.start <= n.start_byte());
        i > 0 && n.end_byte() <= merged[i - 1].end
    };
    for n in nodes
        .iter()
        .filter(|n| n.kind() == "identifier" && !in_step_value(n))
    {
        let name = text(*n, source);
        let known = |name: &str| {
            local.contains(name)
                || bound.contains(name)
                || types.macros.contains(name)
                || arrays.iter().any(|a| a.name == name)
        };
        if types.macros.contains(name) {
            // The kernels keep a macro's text: what its definition reads must be
            // the kernel's too (subscripts.rs refuses arrays among them).
            for (used, written) in macro_reads::names(macro_reads::invocation_of(*n), source, types)
            {
                if known(&used) {
                    continue;
                }
                let i = *index.entry(used.clone()).or_insert_with(|| {
                    uses.push((used.clone(), Vec::new()));
                    uses.len() - 1
                });
                uses[i].1.push(*n);
                if written {
                    written_by_macro.insert(used);
                }
            }
            continue;
        }
        if known(name) {
            continue;
        }
        match index.get(name) {
            Some(i) => uses[*i].1.push(*n),
            None => {
                index.insert(name.to_string(), uses.len());
                uses.push((name.to_string(), vec![*n]));
            }
        }
    }
    let mut out = Vec::new();
    for (name, list) in uses {
        let first = list[0];
        // Tree-sitter finds a node's parent from the root: asked only for these names.
        // Uses through a macro are reads, unless its definition writes the name.
        let direct: Vec<Node> = list
            .iter()
            .copied()
            .filter(|u| text(*u, source) == name)
            .collect();
        let called = direct.first().is_some_and(|d| {
            d.parent().is_some_and(|p| {
                p.kind() == "call_expression" && p.child_by_field_name("function") == Some(*d)
            })
        });
        // Not declared where the pipeline sees it: a header's macro or an enumerator.
        if called || find_decl(&name, at, tree, source).is_none() {
            continue;
        }
        let role = if written_by_macro.contains(&name) {
            ScalarRole::Carried
        } else if direct.is_empty() {
            ScalarRole::Read
        } else {
            role(&direct, source)
        };
        out.push(Scalar {
            ty: scalar_type(&name, at, tree, source, types),
            value: name.clone(),
            name,
            span: span(first),
            role,
        });
    }
    out
}

/// How a sweep body uses an outside variable: only read; written at each point
/// before any read (`s0 = ...; ... s0 ...`); or carried from point to point
/// (`gosa += ss * ss`, `n = n + 1`, `count++`), which a parallel schedule can
/// not keep.
fn role(uses: &[Node], source: &str) -> ScalarRole {
    let target = |n: &Node| -> Option<&str> {
        let p = n.parent()?;
        match p.kind() {
            "assignment_expression" if p.child_by_field_name("left") == Some(*n) => Some(
                p.child_by_field_name("operator")
                    .map_or("=", |o| text(o, source)),
            ),
            "update_expression" => Some("++"),
            _ => None,
        }
    };
    let written: Vec<Option<&str>> = uses.iter().map(target).collect();
    if written.iter().all(Option::is_none) {
        return ScalarRole::Read;
    }
    let first_is_plain_write = written[0] == Some("=");
    let reads_itself = uses[0]
        .parent()
        .and_then(|p| p.child_by_field_name("right"))
        .is_some_and(|r| {
            uses.iter()
                .any(|u| r.start_byte() <= u.start_byte() && u.end_byte() <= r.end_byte())
        });
    if first_is_plain_write
        && !reads_itself
        && written
            .iter()
            .skip(1)
            .all(|w| w.is_none() || *w == Some("="))
    {
        ScalarRole::PerPoint
    } else {
        ScalarRole::Carried
    }
}
