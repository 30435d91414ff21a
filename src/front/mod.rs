//! Front ends: C source with directives in, stencil IR out.
//!
//! One module per directive dialect; all of them share the C parser helpers
//! in [`cst`], the pragma lines of [`pragmas`] and the subscript arithmetic in
//! [`poly`].

pub mod cst;
pub mod macros;
pub mod poly;
pub mod pragmas;
pub mod preprocess;
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
    if let Some(p) = lines.iter().find(|p| p.dialect() == "stencil") {
        return Err(vec![Diagnostic::new(
            p.span.clone(),
            "the `#pragma stencil` dialect is not supported yet",
            "stencil-directive dialect",
            "use the `#pragma tpace` directives (init, pipeline, loop dim(d)) described in the README",
        )]);
    }
    let mut program = tpace::lower(path, source, &tree, &blanked, &lines, env)?;
    program.declarations = declarations(source, &tree);
    program.main = main_function(source, &tree);
    Ok(program)
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
/// declarations, in order (see `Program::declarations`).
fn declarations(source: &str, tree: &tree_sitter::Tree) -> Vec<crate::ir::Span> {
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
