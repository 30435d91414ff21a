//! What a target's own device file (CUDA's `.cu`, compiled as C++) takes from
//! the user's program: every preprocessor line, of the file-scope type
//! declarations only those its kernels use, and the functions of the file the
//! sweeps call with the constants they read. The other declarations stay in the
//! host program alone, so that C the device compiler would refuse there (a
//! member named `class` or `new`) is never handed to it.

use crate::front::cst;
use crate::front::time_loop::calls;
use crate::ir::{Program, Span};
use crate::text::identifiers;
use std::collections::BTreeSet;

/// The program's declarations (`Program::declarations`) that device code of
/// text `device` needs, in order: the preprocessor lines, and each type
/// declaration that declares a name the device code mentions, or a kept macro
/// it uses mentions, or a kept declaration mentions.
pub fn declarations(program: &Program, device: &str) -> Vec<Span> {
    let decls = &program.declarations;
    let texts: Vec<&str> = decls.iter().map(|d| &program.source[d.clone()]).collect();
    let is_directive: Vec<bool> = texts
        .iter()
        .map(|t| t.trim_start().starts_with('#'))
        .collect();
    let declared: Vec<Vec<String>> = texts
        .iter()
        .zip(&is_directive)
        .map(|(t, d)| {
            if *d {
                defined_macro(t)
            } else {
                declared_names(t)
            }
        })
        .collect();
    let mut needed: BTreeSet<&str> = identifiers(device).into_iter().collect();
    // A directive is always kept; it brings in what it mentions once its macro is used.
    let mut used = vec![false; decls.len()];
    loop {
        let mut changed = false;
        for i in 0..decls.len() {
            if !used[i] && declared[i].iter().any(|n| needed.contains(n.as_str())) {
                used[i] = true;
                needed.extend(identifiers(texts[i]));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    decls
        .iter()
        .zip(is_directive.iter().zip(&used))
        .filter(|(_, (directive, used))| **directive || **used)
        .map(|(d, _)| d.clone())
        .collect()
}

/// A function of the file that sweeps call: it runs on the device too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its name.
    pub name: String,
    /// Its first declaration (a prototype or the definition).
    pub first: Span,
    /// Its definition.
    pub definition: Span,
}

/// The functions of the file the sweeps call, directly or through each other,
/// and the file-scope constants they read.
#[derive(Debug, Clone, Default)]
pub struct Functions {
    /// In source order.
    pub functions: Vec<Function>,
    /// Declarations of the constant scalars they read, in source order.
    pub constants: Vec<Span>,
    /// Per pipeline, the functions (indices into `functions`) its sweeps call.
    pub per_pipeline: Vec<Vec<usize>>,
}

/// The functions of the file that the sweeps of `program` call.
pub fn functions(program: &Program) -> Functions {
    let bodies =
        |p: &crate::ir::Pipeline| -> Vec<Span> { p.body.iter().map(|s| s.body.clone()).collect() };
    let all: Vec<Span> = program.pipelines.iter().flat_map(bodies).collect();
    let found = calls::device_functions(&program.source, &all);
    let functions: Vec<Function> = found
        .functions
        .into_iter()
        .map(|(name, first, definition)| Function {
            name,
            first,
            definition,
        })
        .collect();
    let per_pipeline = program
        .pipelines
        .iter()
        .map(|p| {
            let mine = calls::device_functions(&program.source, &bodies(p));
            mine.functions
                .iter()
                .filter_map(|(n, _, _)| functions.iter().position(|f| &f.name == n))
                .collect()
        })
        .collect();
    Functions {
        functions,
        constants: found.constants,
        per_pipeline,
    }
}

/// The macro a `#define` line defines (none for other directives).
fn defined_macro(line: &str) -> Vec<String> {
    let rest = line.trim_start().trim_start_matches('#').trim_start();
    rest.strip_prefix("define")
        .filter(|r| r.starts_with([' ', '\t']))
        .and_then(|r| identifiers(r).first().map(|n| vec![n.to_string()]))
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
