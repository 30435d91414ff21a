//! Finds the C declaration of every array listed in `targetinout` / `targetin`
//! and reads its element type and layout.

use super::clauses::{Named, PipelineClauses};
use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{descendants, named_children, text};
use crate::ir::{Array, ElemType, Grid, Intent, Layout, LayoutCheck, Span};
use tree_sitter::{Node, Tree};

/// Most components a component array may declare (`a[C][..]`).
const MAX_COMPONENTS: u32 = 64;

/// The listed arrays, in clause order (`targetinout` first). An array declared
/// `T a[C][X][Y]..` with one dimension more than `size` (`rank`) is a component
/// array: it is listed once per component, `component: Some(0..C)`; the front end
/// drops the components no sweep uses once it has read the sweeps.
pub fn listed_arrays(
    clauses: &PipelineClauses,
    pragma: Span,
    at: Node,
    tree: &Tree,
    source: &str,
    grid: &Grid,
) -> DiagResult<Vec<Array>> {
    let rank = grid.rank();
    let listed = clauses
        .targetinout
        .iter()
        .map(|n| (n, Intent::InOut))
        .chain(clauses.targetin.iter().map(|n| (n, Intent::In)));
    let mut arrays: Vec<Array> = Vec::new();
    let mut errors = Vec::new();
    if clauses.targetinout.is_empty() {
        errors.push(Diagnostic::new(
            pragma.start..(pragma.start + 7).min(pragma.end),
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
        let found = find_declaration(named, at, tree, source).and_then(|(elem, layout, decl)| {
            Ok((elem, layout, components(named, layout, decl, rank, source)?))
        });
        match found {
            Ok((elem, layout, count)) => {
                let each: Vec<Option<u32>> = match count {
                    Some(c) => (0..c).map(Some).collect(),
                    None => vec![None],
                };
                for component in each {
                    arrays.push(Array {
                        name: named.name.clone(),
                        host_base: host_base(&named.name, component, layout, grid),
                        checks: layout_checks(&named.name, component, elem, layout, grid),
                        elem,
                        layout,
                        intent,
                        span: named.span.clone(),
                        component,
                    });
                }
            }
            Err(d) => errors.push(d),
        }
    }
    if errors.is_empty() {
        Ok(arrays)
    } else {
        Err(errors)
    }
}

/// C expression for the address of an array's first grid element (all `lo` indices).
fn host_base(name: &str, component: Option<u32>, layout: Layout, grid: &Grid) -> String {
    let component = component.map_or(String::new(), |c| format!("[{c}]"));
    match layout {
        Layout::Flat => format!("(void *)({name})"),
        Layout::Static | Layout::PointerToArray => {
            let subs: String = grid.dims.iter().map(|d| format!("[{}]", d.lo)).collect();
            format!("(void *)&{name}{component}{subs}")
        }
    }
}

/// Elements in one plane of the grid (product of the inner extents), as C.
pub fn plane_elements(grid: &Grid) -> String {
    if grid.rank() == 1 {
        return "1UL".to_string();
    }
    grid.dims[1..]
        .iter()
        .map(|d| format!("(unsigned long)({})", d.n))
        .collect::<Vec<_>>()
        .join(" * ")
}

/// An array declared with its shape must have rows as long as the `size` clause's
/// inner extents, or the planes the pipeline moves are not the array's planes.
fn layout_checks(
    name: &str,
    component: Option<u32>,
    elem: ElemType,
    layout: Layout,
    grid: &Grid,
) -> Vec<LayoutCheck> {
    if layout == Layout::Flat || grid.rank() < 2 {
        return Vec::new();
    }
    let row = match component {
        Some(c) => format!("{name}[{c}][0]"),
        None => format!("{name}[0]"),
    };
    vec![LayoutCheck {
        holds: format!(
            "sizeof({row}) == {} * sizeof({})",
            plane_elements(grid),
            elem.c_name()
        ),
        otherwise: format!(
            "array `{name}` has rows of another length than the size clause's inner extents"
        ),
    }]
}

/// The declaration (and its declarator) of `name` visible at the pipeline: the
/// enclosing function's parameters and locals declared before it, else file scope.
pub fn find_decl<'t>(
    name: &str,
    pragma: Node<'t>,
    tree: &'t Tree,
    source: &str,
) -> Option<(Node<'t>, Node<'t>)> {
    let mut candidates: Vec<(Node, Node)> = Vec::new();
    if let Some(f) = enclosing_function(pragma) {
        for d in descendants(f) {
            let is_decl = matches!(d.kind(), "declaration" | "parameter_declaration");
            if is_decl && d.start_byte() < pragma.start_byte() {
                for decl in declarators(d) {
                    if declared_name(decl, source) == Some(name) {
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
                    if declared_name(decl, source) == Some(name) {
                        candidates.push((d, decl));
                    }
                }
            }
        }
    }
    candidates.last().copied()
}

/// The function definition that contains `node`.
pub fn enclosing_function(node: Node) -> Option<Node> {
    let mut func = node.parent();
    while let Some(f) = func {
        if f.kind() == "function_definition" {
            return Some(f);
        }
        func = f.parent();
    }
    None
}

/// The C type of a plain scalar variable `name` (`int`, `float`, `long`, a typedef
/// name, ...), or `None` if it is not declared as one where the pipeline sees it.
pub fn scalar_type(name: &str, pragma: Node, tree: &Tree, source: &str) -> Option<String> {
    let (decl, declarator) = find_decl(name, pragma, tree, source)?;
    if declarator.kind() != "identifier" {
        return None;
    }
    let ty = decl.child_by_field_name("type")?;
    // Keep `unsigned long` and the like whole; drop storage class and qualifiers.
    Some(text(ty, source).to_string())
}

/// Number of subscripts a declarator takes: `a[X][Y]` 2, `(*a)[Y]` 2, `*a` 1.
pub fn declared_depth(mut node: Node) -> usize {
    let mut depth = 0;
    loop {
        match node.kind() {
            "array_declarator" | "pointer_declarator" => depth += 1,
            "parenthesized_declarator" => match node.named_child(0) {
                Some(n) => {
                    node = n;
                    continue;
                }
                None => return depth,
            },
            _ => return depth,
        }
        match node.child_by_field_name("declarator") {
            Some(n) => node = n,
            None => return depth,
        }
    }
}

/// `Some(C)` if `decl` declares a component array `T a[C][..]` (one dimension
/// more than the grid's `rank`, `C` an integer constant), `None` for a plain
/// grid array, or why tpace can not address it.
fn components(
    named: &Named,
    layout: Layout,
    decl: Node,
    rank: usize,
    source: &str,
) -> Result<Option<u32>, Diagnostic> {
    if declared_depth(decl) != rank + 1 || layout == Layout::Flat {
        return Ok(None);
    }
    let refuse = |what: String, label: &str| {
        Diagnostic::new(
            named.span.clone(),
            what,
            label,
            format!(
                "tpace takes a leading component dimension only on a static array with a constant \
                 count, `T {}[C]{}` (C an integer up to {MAX_COMPONENTS}); a pointer `T (*a)[..]` has \
                 no count to check the components against: declare it static, or split it into \
                 one array per component",
                named.name,
                "[..]".repeat(rank)
            ),
        )
    };
    if layout != Layout::Static {
        return Err(refuse(
            format!(
                "`{}` is declared as `{}`, a pointer with one dimension more than `size`",
                named.name,
                text(decl, source)
            ),
            "component array tpace can not address",
        ));
    }
    // The first dimension is the innermost array declarator's size.
    let mut first = decl;
    while let Some(inner) = first
        .child_by_field_name("declarator")
        .filter(|d| d.kind() == "array_declarator")
    {
        first = inner;
    }
    let count = first
        .child_by_field_name("size")
        .and_then(|s| text(s, source).trim().parse::<u32>().ok())
        .filter(|c| (1..=MAX_COMPONENTS).contains(c));
    count.map(Some).ok_or_else(|| {
        refuse(
            format!(
                "the component dimension of `{}` does not have a constant count",
                named.name
            ),
            "component count not an integer constant",
        )
    })
}

fn find_declaration<'t>(
    named: &Named,
    pragma: Node<'t>,
    tree: &'t Tree,
    source: &str,
) -> Result<(ElemType, Layout, Node<'t>), Diagnostic> {
    let Some((decl, declarator)) = find_decl(&named.name, pragma, tree, source) else {
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
        .map(|layout| (elem, layout, declarator))
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
pub fn declared_name<'s>(mut node: Node, source: &'s str) -> Option<&'s str> {
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
