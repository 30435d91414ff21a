//! Front ends: C source with directives in, stencil IR out.
//!
//! One module per directive dialect ([`tpace`], [`stencil`]) reads its own
//! pragma lines into the dialect-neutral [`directives`]; [`time_loop`] lowers
//! those, with the C they annotate, to the IR. All share the C parser helpers
//! in [`cst`], the pragma lines of [`pragmas`], the preprocessor's view
//! ([`preprocess`], [`macros`], [`types`]) and the subscript arithmetic in
//! [`poly`].

pub mod cst;
pub mod directives;
pub mod macros;
pub mod poly;
pub mod pragmas;
pub mod preprocess;
pub mod stencil;
pub mod time_loop;
pub mod tpace;
pub mod types;

use crate::diag::{DiagResult, Diagnostic};
use crate::ir::Program;
use preprocess::Env;

/// Parse a C file and lower its annotated time loops to the IR, with the
/// macros its own `#define` lines give (no preprocessor is run).
pub fn parse(path: &str, source: &str) -> DiagResult<Program> {
    parse_with(path, source, &Env::from_source(source, &Default::default()))
}

/// Parse a C file and lower its annotated time loops to the IR, with what the
/// C preprocessor said about its macros and headers (see [`preprocess::Env`]).
pub fn parse_with(path: &str, source: &str, env: &Env) -> DiagResult<Program> {
    let lines = pragmas::scan(source);
    // Pragma lines are not statements: blanked out, braceless nests parse as C means them.
    let blanked = pragmas::blank(source, &lines);
    let tree = cst::parse_c(&blanked);
    let syntax = cst::syntax_errors(&tree, &blanked);
    if !syntax.is_empty() {
        return Err(syntax);
    }
    // Each dialect's directives, then one lowering for all of them, in file order.
    let tpace_found = tpace::directives(&tree, &blanked, &lines);
    let stencil_found = stencil::directives(source, &tree, &blanked, &lines);
    let (mut found, regions) = match (tpace_found, stencil_found) {
        (Ok(found), Ok(regions)) => (found, regions),
        (t, s) => return Err(t.err().into_iter().chain(s.err()).flatten().collect()),
    };
    mixed_dialects(&found, &regions.spans)?;
    found.extend(regions.found);
    found.sort_by_key(|f| f.line.span.start);
    let mut program = time_loop::lower(path, source, &tree, &found, env, || {
        tpace::missing_pipeline(source, &found)
    })?;
    program.declarations = declarations(source, &tree);
    program.main = main_function(source, &tree);
    Ok(program)
}

/// A tpace directive inside a stencil region: each time loop is described in one dialect.
fn mixed_dialects(tpace: &[directives::Found], regions: &[crate::ir::Span]) -> DiagResult<()> {
    let errors: Vec<Diagnostic> = tpace
        .iter()
        .filter(|f| {
            regions.iter().any(|r| {
                r.contains(&f.line.span.start)
                    && !matches!(f.directive, directives::Directive::Init)
            })
        })
        .map(|f| {
            Diagnostic::new(
                f.span(),
                "a `#pragma tpace` directive inside a `#pragma stencil` region",
                "two dialects for one time loop",
                "describe each time loop in one dialect: drop this line, or replace the region's \
                 stencil lines by tpace directives",
            )
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The definition of `main`, if the file has one.
fn main_function(source: &str, tree: &tree_sitter::Tree) -> Option<crate::ir::MainFunction> {
    let root = tree.root_node();
    cst::named_children(root).into_iter().find_map(|f| {
        if f.kind() != "function_definition" {
            return None;
        }
        let declarator = f.child_by_field_name("declarator")?;
        let function = if declarator.kind() == "function_declarator" {
            declarator
        } else {
            cst::named_children(declarator)
                .into_iter()
                .find(|n| n.kind() == "function_declarator")?
        };
        let name = function.child_by_field_name("declarator")?;
        if cst::text(name, source) != "main" {
            return None;
        }
        let body = f.child_by_field_name("body")?;
        let params: Vec<String> = function
            .child_by_field_name("parameters")
            .map(|list| {
                cst::named_children(list)
                    .into_iter()
                    .filter(|p| p.kind() == "parameter_declaration")
                    .filter_map(|p| p.child_by_field_name("declarator"))
                    .filter_map(|d| declared(d, source))
                    .collect()
            })
            .unwrap_or_default();
        Some(crate::ir::MainFunction {
            span: f.byte_range(),
            body: body.start_byte() + 1,
            args: match params.as_slice() {
                [argc, argv, ..] => Some((argc.clone(), argv.clone())),
                _ => None,
            },
        })
    })
}

/// The name a declarator declares (`argv` in `char **argv` or `char *argv[]`).
fn declared(mut node: tree_sitter::Node, source: &str) -> Option<String> {
    loop {
        match node.kind() {
            "identifier" => return Some(cst::text(node, source).to_string()),
            "parenthesized_declarator" => node = node.named_child(0)?,
            _ => node = node.child_by_field_name("declarator")?,
        }
    }
}

/// The file's preprocessor lines but pragmas and its file-scope type
/// declarations, in order, each with what it declares (see `Program::declarations`).
fn declarations(source: &str, tree: &tree_sitter::Tree) -> Vec<crate::ir::Declaration> {
    spans_of_declarations(source, tree)
        .into_iter()
        .map(|span| {
            let text = &source[span.clone()];
            let declares = if text.trim_start().starts_with('#') {
                defined_macro(text)
            } else {
                declared_names(text)
            };
            crate::ir::Declaration { span, declares }
        })
        .collect()
}

/// The macro a `#define` line defines (none for other directives).
fn defined_macro(line: &str) -> Vec<String> {
    let rest = line.trim_start().trim_start_matches('#').trim_start();
    rest.strip_prefix("define")
        .filter(|r| r.starts_with([' ', '\t']))
        .and_then(|r| {
            crate::text::identifiers(r)
                .first()
                .map(|n| vec![n.to_string()])
        })
        .unwrap_or_default()
}

/// The names a type declaration declares: typedef names, struct, union and enum
/// tags, enumerators.
fn declared_names(text: &str) -> Vec<String> {
    let tree = cst::parse_c(text);
    let mut out = Vec::new();
    for node in cst::descendants(tree.root_node()) {
        match node.kind() {
            "struct_specifier" | "union_specifier" | "enum_specifier" | "enumerator" => {
                if let Some(name) = node.child_by_field_name("name") {
                    out.push(cst::text(name, text).to_string());
                }
            }
            "type_definition" => {
                let mut cursor = node.walk();
                for declarator in node.children_by_field_name("declarator", &mut cursor) {
                    // The name inside `*p`, `(*fn)(int)`, `v[3]`.
                    if let Some(name) = cst::descendants(declarator)
                        .into_iter()
                        .find(|n| n.kind() == "type_identifier")
                    {
                        out.push(cst::text(name, text).to_string());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Where the file's preprocessor lines but pragmas and its file-scope type
/// declarations are written, in order.
fn spans_of_declarations(source: &str, tree: &tree_sitter::Tree) -> Vec<crate::ir::Span> {
    let mut out = pragmas::other_directives(source);
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        for child in cst::named_children(node) {
            match child.kind() {
                "type_definition" | "struct_specifier" | "union_specifier" | "enum_specifier" => {
                    // A bare `struct S {...}` ends at its brace: take its `;` too.
                    let mut end = child.end_byte();
                    let rest = &source[end..];
                    if rest.trim_start().starts_with(';') {
                        end += rest.len() - rest.trim_start().len() + 1;
                    }
                    out.push(child.start_byte()..end);
                }
                kind if kind.starts_with("preproc_if")
                    || kind.starts_with("preproc_else")
                    || kind == "preproc_elif"
                    || kind == "preproc_elifdef" =>
                {
                    stack.push(child)
                }
                _ => {}
            }
        }
    }
    out.sort_by_key(|s| s.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_type_declaration_declares() {
        assert_eq!(
            declared_names(
                "typedef struct node { int class; struct node *next; } node_t, *node_p;"
            ),
            ["node_t", "node_p", "node", "node"]
        );
        assert_eq!(
            declared_names("enum color { RED, GREEN = 2 };"),
            ["color", "RED", "GREEN"]
        );
        assert_eq!(declared_names("typedef double (*fn)(double);"), ["fn"]);
        assert_eq!(defined_macro("#  define REAL double"), ["REAL"]);
        assert_eq!(defined_macro("#define SQ(x) ((x) * (x))"), ["SQ"]);
        assert!(defined_macro("#include <stdio.h>").is_empty());
        assert!(defined_macro("#defined_not").is_empty());
    }
}
