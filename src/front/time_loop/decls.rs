//! Finds the C declaration of every array listed in `targetinout` / `targetin`
//! and reads its element type and layout.

use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{descendants, named_children};
use crate::front::directives::{Named, PipelineClauses};
use crate::front::types::{DeclInfo, Types, declarators, expand_declarator, field};
use crate::ir::{Array, ElemType, Grid, Intent, Layout, LayoutCheck, Span};
use tree_sitter::{Node, Tree};

pub use crate::front::types::declared_name;

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
    types: &Types,
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
        let found =
            find_declaration(named, at, tree, source, types).and_then(|(elem, layout, decl)| {
                below_grid_rank(named, intent, layout, &decl, rank)?;
                Ok((elem, layout, components(named, layout, &decl, rank, types)?))
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

/// An array declared with its shape but fewer dimensions than the grid (a
/// 1-D table beside a 2-D grid) is no grid array: say so at the clause.
fn below_grid_rank(
    named: &Named,
    intent: Intent,
    layout: Layout,
    decl: &DeclInfo,
    rank: usize,
) -> Result<(), Diagnostic> {
    // Only a read-only one: an array the stencil writes that does not match
    // `size` says more likely that the clause is wrong (said at the loops).
    if layout == Layout::Flat || decl.depth >= rank || intent != Intent::In {
        return Ok(());
    }
    let name = &named.name;
    Err(Diagnostic::new(
        named.span.clone(),
        format!(
            "`{name}` is declared as `{}`, with {}, but `size` has {}",
            decl.declarator,
            crate::text::count(decl.depth, "dimension", "dimensions"),
            rank
        ),
        "not an array of the grid's shape",
        format!(
            "targetin(...) lists arrays of the grid's shape, which the pipeline cuts into chunks; \
             a table the sweeps read only at subscripts without a spatial loop index (a per-step \
             value, `{name}[t]` with the time counter) may be listed there or not, and an array \
             along fewer axes than the grid is not handled: give it the grid's shape"
        ),
    ))
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

/// What the declaration of `name` visible at the pipeline says, including a
/// parameter or variable declared through a declaration macro
/// (`DATA_TYPE POLYBENCH_2D(A,N,N,n,n)`, which the C grammar reads as a
/// function declarator named `POLYBENCH_2D`).
pub fn lookup(name: &str, at: Node, tree: &Tree, source: &str, types: &Types) -> Option<DeclInfo> {
    let direct = find_decl(name, at, tree, source);
    let mut best = direct.map(|(d, decl)| (d.start_byte(), DeclInfo::of(d, decl, source)));
    let consider = |best: &mut Option<(usize, DeclInfo)>, d: Node| {
        for decl in declarators(d) {
            if let Some((n, info)) = expand_declarator(d, decl, source, types.macros)
                && n == name
                && best.as_ref().is_none_or(|(b, _)| *b <= d.start_byte())
            {
                *best = Some((d.start_byte(), info));
            }
        }
    };
    if let Some(f) = enclosing_function(at) {
        for d in descendants(f) {
            let is_decl = matches!(d.kind(), "declaration" | "parameter_declaration");
            if is_decl && d.start_byte() < at.start_byte() {
                consider(&mut best, d);
            }
        }
    }
    if best.is_none() {
        for d in named_children(tree.root_node())
            .into_iter()
            .filter(|d| d.kind() == "declaration")
        {
            consider(&mut best, d);
        }
    }
    best.map(|(_, info)| info)
}

/// The name of a function declarator among the declarations before `at` in
/// its function whose first argument is `name` (`POLYBENCH_2D(A, ...)`, read
/// as a function declarator when the macro is unknown).
fn unknown_declaration_macro<'s>(name: &str, at: Node, source: &'s str) -> Option<&'s str> {
    let f = enclosing_function(at)?;
    descendants(f)
        .into_iter()
        .filter(|d| d.kind() == "function_declarator" && d.start_byte() < at.start_byte())
        .find_map(|d| {
            let params = d.child_by_field_name("parameters")?;
            let first = named_children(params).into_iter().next()?;
            (crate::front::cst::text(first, source).trim() == name)
                .then(|| d.child_by_field_name("declarator"))
                .flatten()
                .map(|callee| crate::front::cst::text(callee, source))
        })
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

/// The C type of a plain scalar variable `name` as generated code should
/// declare it (`int`, `float`, a typedef or macro resolved to the arithmetic
/// type it names, else the user's text), or `None` if it is not declared as
/// one where the pipeline sees it.
pub fn scalar_type(
    name: &str,
    at: Node,
    tree: &Tree,
    source: &str,
    types: &Types,
) -> Option<String> {
    let (decl, declarator) = find_decl(name, at, tree, source)?;
    if declarator.kind() != "identifier" {
        return None;
    }
    let ty = decl.child_by_field_name("type")?;
    // Keep `unsigned long` and the like whole; drop storage class and qualifiers.
    Some(types.scalar_text(crate::front::cst::text(ty, source)))
}

/// `Some(C)` if `decl` declares a component array `T a[C][..]` (one dimension
/// more than the grid's `rank`, `C` an integer constant), `None` for a plain
/// grid array, or why tpace can not address it.
fn components(
    named: &Named,
    layout: Layout,
    decl: &DeclInfo,
    rank: usize,
    types: &Types,
) -> Result<Option<u32>, Diagnostic> {
    if decl.depth != rank + 1 || layout == Layout::Flat {
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
                named.name, decl.declarator
            ),
            "component array tpace can not address",
        ));
    }
    // The first dimension's size, a number or a macro that expands to one.
    let count = decl
        .first_dim
        .as_deref()
        .and_then(|s| types.macros.expand(s))
        .and_then(|s| crate::front::macros::integer(s.trim()))
        .and_then(|c| u32::try_from(c).ok())
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

fn find_declaration(
    named: &Named,
    pragma: Node,
    tree: &Tree,
    source: &str,
    types: &Types,
) -> Result<(ElemType, Layout, DeclInfo), Diagnostic> {
    let info = if named.name.contains(['.', '-']) {
        member_declaration(named, pragma, tree, source, types)?
    } else {
        lookup(&named.name, pragma, tree, source, types).ok_or_else(|| {
            let help = match unknown_declaration_macro(&named.name, pragma, source) {
                Some(m) => format!(
                    "`{}` looks declared through `{m}(...)`, which is not a macro tpace knows: \
                     give the folder of the header that defines it with -I DIR (and the -D \
                     options you compile with)",
                    named.name
                ),
                None => "declare the array in this function or at file scope, before the time loop"
                    .to_string(),
            };
            Diagnostic::new(
                named.span.clone(),
                format!("cannot find the declaration of `{}`", named.name),
                "not declared before the pipeline",
                help,
            )
        })?
    };
    let elem = types.elem(&info.ty).map_err(|resolved| {
        let shown = if resolved == info.ty.trim() {
            format!("`{resolved}`")
        } else {
            format!("`{}` (`{resolved}`)", info.ty.trim())
        };
        Diagnostic::new(
            named.span.clone(),
            format!("`{}` has element type {shown}", named.name),
            "declared with an unsupported type",
            "tpace pipelines arrays of `float` or `double` (directly, or through a typedef or a macro)",
        )
    })?;
    let layout = info.layout.ok_or_else(|| {
        Diagnostic::new(
            named.span.clone(),
            format!(
                "`{}` is declared as `{}`, which is not a grid array",
                named.name, info.declarator
            ),
            "unsupported declaration",
            "declare it as `T a[X][Y]`, `T (*a)[Y]` or a flat `T *a`",
        )
    })?;
    Ok((elem, layout, info))
}

/// The declaration of the field a member expression names (`p->m`, `s.u`):
/// the variable's struct type, through typedefs and macros, then each field's.
fn member_declaration(
    named: &Named,
    pragma: Node,
    tree: &Tree,
    source: &str,
    types: &Types,
) -> Result<DeclInfo, Diagnostic> {
    let err = |message: String, label: &str, help: String| {
        Diagnostic::new(named.span.clone(), message, label, help)
    };
    let (base, steps) = member_steps(&named.name);
    let mut info = lookup(base, pragma, tree, source, types).ok_or_else(|| {
        err(
            format!("cannot find the declaration of `{base}`"),
            "not declared before the pipeline",
            format!("declare `{base}` in this function or at file scope, before the time loop"),
        )
    })?;
    let mut shown = base.to_string();
    for (op, name) in steps {
        let Some((fields, typedef_pointers, tag)) = types.struct_of(&info.ty) else {
            return Err(err(
                format!(
                    "`{shown}` is not a struct: it is declared as `{} {}`",
                    info.ty.trim(),
                    info.declarator
                ),
                "no field to name",
                format!(
                    "name an array held in a struct, e.g. `{shown}{op}{name}` with `{shown}` a \
                     struct or a pointer to one"
                ),
            ));
        };
        let pointers = if info.pointer {
            typedef_pointers + 1
        } else if info.plain {
            typedef_pointers
        } else {
            usize::MAX
        };
        match (op, pointers) {
            ("->", 1) | (".", 0) => {}
            ("->", 0) => {
                return Err(err(
                    format!("`{shown}` is a `{tag}`, not a pointer to one"),
                    "`->` on a struct",
                    format!("write `{shown}.{name}`"),
                ));
            }
            (".", 1) => {
                return Err(err(
                    format!("`{shown}` is a pointer to a `{tag}`"),
                    "`.` on a pointer",
                    format!("write `{shown}->{name}`"),
                ));
            }
            _ => {
                return Err(err(
                    format!(
                        "`{shown}` is declared as `{} {}`, not as a struct or a pointer to one",
                        info.ty.trim(),
                        info.declarator
                    ),
                    "member of what?",
                    "tpace takes arrays held in a struct variable or behind a pointer to one"
                        .to_string(),
                ));
            }
        }
        info = field(fields, name).map_err(|all| {
            let list: Vec<String> = all.iter().map(|f| format!("`{f}`")).collect();
            err(
                format!("`{tag}` has no field `{name}`"),
                "no such field",
                if list.is_empty() {
                    format!("`{tag}` declares no fields tpace can read")
                } else {
                    format!("its fields are {}", list.join(", "))
                },
            )
        })?;
        shown = format!("{shown}{op}{name}");
    }
    Ok(info)
}

/// `p->m` -> (`p`, [(`->`, `m`)]); the name is as [`crate::front::directives::array_name`] returns it.
fn member_steps(name: &str) -> (&str, Vec<(&str, &str)>) {
    let mut steps = Vec::new();
    let end = name.find(['.', '-']).unwrap_or(name.len());
    let base = &name[..end];
    let mut rest = &name[end..];
    while !rest.is_empty() {
        let op = if rest.starts_with("->") { "->" } else { "." };
        rest = &rest[op.len()..];
        let end = rest.find(['.', '-']).unwrap_or(rest.len());
        steps.push((op, &rest[..end]));
        rest = &rest[end..];
    }
    (base, steps)
}
