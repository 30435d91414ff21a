//! Functions of the file that a sweep calls (`static inline double sq(double)`).
//! A sweep's body becomes a kernel, so such a function runs on the device too,
//! where it sees only what it is handed: its parameters, its own locals,
//! macros, enumerators, constant scalars of the file (`static const double dt
//! = 0.1;`), and other functions of the same kind. One that reads any other
//! variable declared outside it (a listed array above all, whose accesses
//! tpace would not see, or a host array) is refused.

use super::decls::declared_name;
use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{descendants, named_children, span, text};
use crate::ir::Span;
use std::collections::{BTreeMap, BTreeSet};
use tree_sitter::{Node, Tree};

/// The file-scope items: function definitions and declarations, looked for
/// inside `#if` blocks too.
fn file_scope_items(root: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        for child in named_children(node) {
            match child.kind() {
                "function_definition" | "declaration" => out.push(child),
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
    out.sort_by_key(|n| n.start_byte());
    out
}

/// The declarators of a declaration (`int a = 1, *b;`: `a`, `*b`).
fn declarators(decl: Node) -> Vec<Node> {
    let mut cursor = decl.walk();
    decl.children_by_field_name("declarator", &mut cursor)
        .map(|d| match d.kind() {
            "init_declarator" => d.child_by_field_name("declarator").unwrap_or(d),
            _ => d,
        })
        .collect()
}

/// Whether a declarator declares a function (a prototype), not a variable.
fn is_function_declarator(mut node: Node) -> bool {
    loop {
        match node.kind() {
            "function_declarator" => return true,
            "parenthesized_declarator" => match node.named_child(0) {
                Some(n) => node = n,
                None => return false,
            },
            _ => match node.child_by_field_name("declarator") {
                Some(n) if node.kind() != "pointer_declarator" => node = n,
                _ => return false,
            },
        }
    }
}

/// What the file declares at file scope.
struct FileScope<'t> {
    /// Function definitions by name.
    functions: BTreeMap<String, Node<'t>>,
    /// Each function's first declaration (a prototype or its definition).
    first: BTreeMap<String, Node<'t>>,
    /// Variables by name: whether each is a constant scalar.
    variables: BTreeMap<String, bool>,
    /// Constant scalars' declarations by name.
    constants: BTreeMap<String, Node<'t>>,
}

/// The function definitions of the file, by name (looked for inside `#if`
/// blocks too).
pub fn file_functions<'t>(tree: &'t Tree, source: &str) -> BTreeMap<String, Node<'t>> {
    file_scope(tree, source).functions
}

fn file_scope<'t>(tree: &'t Tree, source: &str) -> FileScope<'t> {
    let mut scope = FileScope {
        functions: BTreeMap::new(),
        first: BTreeMap::new(),
        variables: BTreeMap::new(),
        constants: BTreeMap::new(),
    };
    for item in file_scope_items(tree.root_node()) {
        if item.kind() == "function_definition" {
            if let Some(name) = item
                .child_by_field_name("declarator")
                .and_then(|d| declared_name(d, source))
            {
                scope.functions.insert(name.to_string(), item);
                scope.first.entry(name.to_string()).or_insert(item);
            }
            continue;
        }
        let constant = named_children(item)
            .iter()
            .any(|c| c.kind() == "type_qualifier" && text(*c, source) == "const");
        for d in declarators(item) {
            let Some(name) = declared_name(d, source) else {
                continue;
            };
            if is_function_declarator(d) {
                scope.first.entry(name.to_string()).or_insert(item);
            } else {
                // A plain name: a scalar (`const double dt`), not `*p` or `a[N]`.
                let scalar = constant && d.kind() == "identifier";
                scope.variables.insert(name.to_string(), scalar);
                if scalar {
                    scope.constants.insert(name.to_string(), item);
                }
            }
        }
    }
    scope
}

/// The names a function declares itself: parameters and locals.
fn own_names<'s>(function: Node, source: &'s str) -> BTreeSet<&'s str> {
    descendants(function)
        .into_iter()
        .filter(|n| matches!(n.kind(), "parameter_declaration" | "declaration"))
        .flat_map(declarators)
        .filter_map(|d| declared_name(d, source))
        .collect()
}

/// A call in a sweep to a function of the file that reads a variable declared
/// outside it: the call, the function, the variable.
struct Offence<'t> {
    call: Node<'t>,
    function: String,
    variable: String,
}

/// The file's functions `roots` call, directly or through each other, in source
/// order; and the first offence met, if any.
fn reached<'t>(
    roots: &[Node<'t>],
    scope: &FileScope<'t>,
    source: &str,
) -> (Vec<String>, Option<Offence<'t>>) {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut offence = None;
    for root in roots {
        for call in descendants(*root)
            .into_iter()
            .filter(|n| n.kind() == "call_expression")
        {
            let Some(callee) = call
                .child_by_field_name("function")
                .filter(|f| f.kind() == "identifier")
            else {
                continue;
            };
            let name = text(callee, source);
            let mut work = vec![name.to_string()];
            while let Some(f) = work.pop() {
                let Some(def) = scope.functions.get(&f) else {
                    continue;
                };
                if !seen.insert(f.clone()) {
                    continue;
                }
                let own = own_names(*def, source);
                for id in descendants(*def)
                    .into_iter()
                    .filter(|n| n.kind() == "identifier")
                {
                    let word = text(id, source);
                    if own.contains(word) || word == f {
                        continue;
                    }
                    if scope.functions.contains_key(word) {
                        work.push(word.to_string());
                    } else if scope.variables.get(word) == Some(&false) && offence.is_none() {
                        offence = Some(Offence {
                            call: callee,
                            function: f.clone(),
                            variable: word.to_string(),
                        });
                    }
                }
            }
        }
    }
    let mut names: Vec<String> = seen.into_iter().collect();
    names.sort_by_key(|n| scope.functions[n].start_byte());
    (names, offence)
}

/// Refuse a sweep that calls a function of the file reading a variable declared
/// outside that function (other than a constant scalar).
pub fn check(bodies: &[Span], tree: &Tree, source: &str) -> DiagResult<()> {
    let scope = file_scope(tree, source);
    let root = tree.root_node();
    let mut errors = Vec::new();
    for body in bodies {
        let Some(node) = root.descendant_for_byte_range(body.start, body.end) else {
            continue;
        };
        if let (_, Some(o)) = reached(&[node], &scope, source) {
            let via = if o.function == text(o.call, source) {
                String::new()
            } else {
                format!(" (through `{}`)", o.function)
            };
            errors.push(Diagnostic::new(
                span(o.call),
                format!(
                    "`{}`, called in a sweep, reads `{}`{via}, a variable declared outside it",
                    text(o.call, source),
                    o.variable
                ),
                "runs on the device with the sweep",
                format!(
                    "a function a sweep calls runs on the device, where it sees only its arguments, and tpace \
                     can not follow what it reads: pass what it needs of `{}` as an argument, or write the \
                     access in the sweep",
                    o.variable
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The functions of the file the sweeps call, directly or not (`bodies` are
/// the sweeps' bodies), in source order, and the declarations of the
/// file-scope constant scalars they read, in source order.
pub fn device_functions(
    tree: &Tree,
    source: &str,
    bodies: &[Span],
) -> (Vec<crate::ir::DeviceFunction>, Vec<Span>) {
    let scope = file_scope(tree, source);
    let root = tree.root_node();
    let nodes: Vec<Node> = bodies
        .iter()
        .filter_map(|b| root.descendant_for_byte_range(b.start, b.end))
        .collect();
    let (names, _) = reached(&nodes, &scope, source);
    let mut constants: Vec<Span> = Vec::new();
    for n in &names {
        let def = scope.functions[n];
        let own = own_names(def, source);
        for id in descendants(def)
            .into_iter()
            .filter(|n| n.kind() == "identifier")
        {
            let word = text(id, source);
            if let (false, Some(decl)) = (own.contains(word), scope.constants.get(word)) {
                let s = span(*decl);
                if !constants.contains(&s) {
                    constants.push(s);
                }
            }
        }
    }
    constants.sort_by_key(|s| s.start);
    let functions = names
        .into_iter()
        .map(|n| crate::ir::DeviceFunction {
            first: span(scope.first[&n]),
            definition: span(scope.functions[&n]),
            name: n,
        })
        .collect();
    (functions, constants)
}
