//! Front ends: C source with directives in, stencil IR out.
//!
//! One module per directive dialect ([`tpace`], [`stencil`]) reads its own
//! pragma lines into the dialect-neutral [`directives`]; [`time_loop`] lowers
//! those, with the C they annotate, to the IR. All share the C parser helpers
//! in [`cst`], the pragma lines of [`pragmas`], the preprocessor's view
//! ([`preprocess`], [`macros`], [`types`]), the program's own headers
//! ([`headers`]) and the subscript arithmetic in
//! [`poly`].

pub mod cst;
pub mod directives;
pub mod headers;
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
    program.declarations =
        headers::declarations(std::path::Path::new(path), source, &tree, &env.include_dirs);
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
