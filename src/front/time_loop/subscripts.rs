//! Reads every subscripted reference to a listed array in a sweep body as
//! (array, constant offset per dimension, read or write); the index a
//! lower-dimensional sweep fixes in each dimension it has no loop for; and the
//! per-step values (`fict[t]`) it reads from unlisted arrays.

use super::context::Context;
use super::decls::lookup;
use super::flat::{FlatAccess, Problem, decompose};
use super::index_vars::{IndexVars, Values};
use super::macro_reads;
use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{Parsed, descendants, named_children, parse_c, span, text};
use crate::front::directives::mentions_name;
use crate::front::poly::{Poly, member_text};
use crate::ir::{Access, AccessKind, Array, Layout, Span, StepValue, Subscript, SweepLoop};
use crate::text::{mentions, splice};
use tree_sitter::Node;

/// Label of the diagnostic for an access with another number of subscripts than `size`.
pub const WRONG_COUNT: &str = "wrong number of subscripts";

/// Per access, the index (as text) of each grid position the sweep has no loop
/// for, and where to point when it is wrong.
type Unlooped = Vec<(usize, String, Span)>;

/// The offsets (per grid position) of every element one subscript can reach.
type Reach = Vec<Vec<i64>>;

/// What one subscript expression (or macro invocation) says.
struct One {
    /// A read, a write, or both.
    accesses: Vec<Access>,
    /// The indices of the positions without a loop.
    unlooped: Unlooped,
    /// For a flat array: its strides and component.
    flat: Option<FlatAccess>,
}

/// What a sweep body says about the data it touches.
pub struct Found {
    /// Every access to a listed array.
    pub accesses: Vec<Access>,
    /// Per grid position without a loop: the index every access fixes there (C text).
    pub fixed: Vec<(usize, String)>,
    /// Reads of unlisted arrays that are the same at every point of a step.
    pub step_values: Vec<StepValue>,
    /// What each access to a flat array says beyond its offsets.
    pub flat: Vec<FlatAccess>,
    /// The statements that compute index variables (integer work, not flops).
    pub index_statements: Vec<Span>,
}

/// How the value of an expression is used by the expression around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Read.
    Value,
    /// Left of `=` (`compound: false`) or of `+=`, `-=`, ... (`compound: true`).
    Target { compound: bool },
    /// Operand of `++` or `--`.
    Update,
}

/// A node still to visit, with what its ancestors say about it.
struct Frame<'t> {
    node: Node<'t>,
    /// The node is the array part of a bigger subscript (`a[x]` in `a[x][y]`).
    inner_link: bool,
    role: Role,
    /// Evaluated at every point of the box (see [`Access::unconditional`]).
    ///
    /// [`Access::unconditional`]: crate::ir::Access::unconditional
    unconditional: bool,
}

/// Whether a node kind is a statement (or a declaration, which may stand for one).
fn is_statement(kind: &str) -> bool {
    kind.ends_with("_statement") || kind == "declaration"
}

/// All accesses to listed arrays in `body`.
///
/// One pass from the top, carrying what the ancestors say (assignment target,
/// conditional): no walk back up the tree, which tree-sitter makes cost the
/// node's depth per step, so that deeply nested input stays linear.
///
/// A macro invocation whose expansion is one access (`MR(p,0,i+1,j,k)`, or
/// `a[IDX(i,j)]`) is read from its expansion and stands for it: the access's
/// span is the invocation, which the generated code replaces.
pub fn accesses(body: Node, loops: &[SweepLoop], ctx: &Context) -> DiagResult<Found> {
    let (arrays, source) = (ctx.arrays, ctx.source);
    let macros = ctx.types.macros;
    let loop_vars: Vec<&str> = loops.iter().map(|l| l.var.as_str()).collect();
    let vars = &IndexVars::scan(body, source, &loop_vars, macros);
    let mut out = Vec::new();
    let mut errors = Vec::new();
    // Per access in `out`: the index texts of the positions without a loop.
    let mut unlooped: Vec<Unlooped> = Vec::new();
    let mut step_values = Vec::new();
    let mut flats = Vec::new();
    let mut stack = vec![Frame {
        node: body,
        inner_link: false,
        role: Role::Value,
        unconditional: body.kind() == "expression_statement",
    }];
    let mut take = |one: One, out: &mut Vec<Access>, unlooped: &mut Vec<Unlooped>| {
        for a in one.accesses {
            out.push(a);
            unlooped.push(one.unlooped.clone());
        }
        flats.extend(one.flat);
    };
    while let Some(frame) = stack.pop() {
        let node = frame.node;
        let mut children_of = node;
        if is_invocation(node, ctx) {
            match through_macros(node, &frame, loops, vars, ctx) {
                Ok(Some(one)) => {
                    take(one, &mut out, &mut unlooped);
                    continue;
                }
                // Not an access: only its arguments are the sweep's own text.
                Ok(None) => match node.child_by_field_name("arguments") {
                    Some(args) => children_of = args,
                    None => continue,
                },
                Err(d) => {
                    errors.push(d);
                    continue;
                }
            }
        } else if node.kind() == "subscript_expression" && !frame.inner_link {
            let with_macros = macros.mentioned_in(text(node, source));
            // `ROW(i)[j]`: only the expansion names the array.
            if with_macros && listed_base(node, source, arrays).is_none() {
                match through_macros(node, &frame, loops, vars, ctx) {
                    Ok(Some(one)) => {
                        take(one, &mut out, &mut unlooped);
                        continue;
                    }
                    Ok(None) => {}
                    Err(d) => {
                        errors.push(d);
                        continue;
                    }
                }
            }
            let (base, _) = chain(node);
            let listed = listed_base(node, source, arrays).is_some();
            if base.kind() == "identifier" && !listed {
                // An unlisted array: a per-step value, or refused; its subscripts are host code.
                match step_value(node, &frame, body, loops, ctx, step_values.len()) {
                    Ok(Some(v)) => step_values.push(v),
                    Ok(None) => {}
                    Err(d) => errors.push(d),
                }
                continue;
            }
            // The user's text where it reads as an access (`a[X - 1][y]` keeps `X`),
            // else its expansion (`a[i][j + HALF]`).
            let at = node.start_byte();
            match access(node, &frame, (loops, vars, at), ctx, source, &[]) {
                Ok(one) => take(one, &mut out, &mut unlooped),
                Err(d) => match with_macros.then(|| through_macros(node, &frame, loops, vars, ctx))
                {
                    Some(Ok(Some(one))) => take(one, &mut out, &mut unlooped),
                    _ => errors.push(d),
                },
            }
        }
        let node = children_of;
        let op = node
            .child_by_field_name("operator")
            .map_or("", |o| text(o, source));
        let branches = match node.kind() {
            "conditional_expression" => true,
            "binary_expression" => matches!(op, "&&" | "||"),
            _ => false,
        };
        let argument = node.child_by_field_name("argument");
        let left = node.child_by_field_name("left");
        let mut cursor = node.walk();
        let children: Vec<Node> = node.named_children(&mut cursor).collect();
        for child in children.into_iter().rev() {
            let role = match node.kind() {
                "assignment_expression" if Some(child) == left => Role::Target {
                    compound: op != "=",
                },
                "update_expression" if Some(child) == argument => Role::Update,
                "parenthesized_expression" => frame.role,
                _ => Role::Value,
            };
            let unconditional = if node == body && body.kind() == "compound_statement" {
                child.kind() == "expression_statement"
            } else {
                frame.unconditional && !branches && !is_statement(child.kind())
            };
            stack.push(Frame {
                node: child,
                inner_link: node.kind() == "subscript_expression" && Some(child) == argument,
                role,
                unconditional,
            });
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let fixed = fix_unlooped(&mut out, &unlooped, loops, ctx)?;
    Ok(Found {
        accesses: out,
        fixed,
        step_values,
        flat: flats,
        index_statements: vars.statements(),
    })
}

/// Whether `node` invokes a macro: a call of one, or an object-like macro's name.
fn is_invocation(node: Node, ctx: &Context) -> bool {
    let macros = ctx.types.macros;
    match node.kind() {
        "call_expression" => node
            .child_by_field_name("function")
            .is_some_and(|f| f.kind() == "identifier" && macros.contains(text(f, ctx.source))),
        "identifier" => macros
            .get(text(node, ctx.source))
            .is_some_and(|m| m.params.is_none()),
        _ => false,
    }
}

/// The index of the listed array a subscript expression's base names.
fn listed_base(node: Node, source: &str, arrays: &[Array]) -> Option<usize> {
    let (base, _) = chain(node);
    let name = match base.kind() {
        "identifier" => text(base, source).to_string(),
        "field_expression" => member_text(base, source)?,
        _ => return None,
    };
    arrays.iter().position(|a| a.name == name)
}

/// The listed array whose name `text` mentions, if any.
fn mentioned_array<'a>(text: &str, arrays: &'a [Array]) -> Option<&'a Array> {
    arrays.iter().find(|a| mentions_name(text, &a.name))
}

/// The access a macro invocation, or a subscript written with macros, stands
/// for, read from its expansion; `None` if it is not one access.
fn through_macros(
    node: Node,
    frame: &Frame,
    loops: &[SweepLoop],
    vars: &IndexVars,
    ctx: &Context,
) -> Result<Option<One>, Diagnostic> {
    let macros = ctx.types.macros;
    let written = text(node, ctx.source);
    let at = span(node);
    let Some(expanded) = macros.expand(written) else {
        return Err(Diagnostic::new(
            at,
            format!("cannot expand `{}`", first_line(written)),
            "macro expansion",
            "the macros nest too deeply or an argument list is not closed; write the expression \
             without them",
        ));
    };
    let parsed = Parsed::new(&expanded);
    let array = parsed.as_ref().and_then(|p| {
        let e = p.expr()?;
        (e.kind() == "subscript_expression")
            .then(|| listed_base(e, &p.src, ctx.arrays))
            .flatten()
    });
    let Some(array) = array else {
        if node.kind() != "subscript_expression" {
            check_definition(node, ctx)?;
        }
        return Ok(None);
    };
    // A flat array's constant macro arguments stand for names of their own,
    // so that one of them can be read as a component index.
    let symbolic = match (ctx.arrays[array].layout, node.kind()) {
        (Layout::Flat, "call_expression") => symbolic_invocation(node, ctx),
        _ => None,
    };
    let (text_read, symbols) = match symbolic {
        Some((t, s)) => (t, s),
        None => (expanded.clone(), Vec::new()),
    };
    let remap = |mut d: Diagnostic| {
        d.span = at.clone();
        d.help = format!(
            "{} (`{}` expands to `{expanded}`)",
            d.help,
            first_line(written)
        );
        d
    };
    let parsed = Parsed::new(&text_read).ok_or_else(|| {
        remap(Diagnostic::new(
            at.clone(),
            "cannot read the macro's expansion as a C expression",
            "macro expansion",
            "write the access without the macro",
        ))
    })?;
    let e = parsed.expr().expect("parsed as an expression above");
    let nest = (loops, vars, at.start);
    let mut one = access(e, frame, nest, ctx, &parsed.src, &symbols).map_err(remap)?;
    if !symbols.is_empty() && one.accesses.iter().any(|a| a.kept.is_some()) {
        return Err(remap(Diagnostic::new(
            at.clone(),
            "a macro with constant arguments takes an index variable",
            "macro access through an index variable",
            "pass the macro the loop indices (plus constants), or write the subscript without it",
        )));
    }
    for a in &mut one.accesses {
        a.span = at.clone();
    }
    for u in &mut one.unlooped {
        u.2 = at.clone();
    }
    if let Some(f) = &mut one.flat {
        f.span = at.clone();
    }
    Ok(Some(one))
}

/// A macro invocation's text with every argument that is an integer constant
/// replaced by a name of its own, expanded; and those names with their values.
fn symbolic_invocation(node: Node, ctx: &Context) -> Option<(String, Vec<(String, i64)>)> {
    let args = node.child_by_field_name("arguments")?;
    let mut edits = Vec::new();
    let mut symbols = Vec::new();
    for arg in named_children(args) {
        let value = ctx
            .types
            .macros
            .expand(text(arg, ctx.source))
            .and_then(|t| poly_of_text(&t))
            .and_then(|p| p.as_constant());
        if let Some(v) = value {
            let name = format!("tpace_karg{}", symbols.len());
            edits.push((
                arg.start_byte() - node.start_byte()..arg.end_byte() - node.start_byte(),
                name.clone(),
            ));
            symbols.push((name, v));
        }
    }
    if symbols.is_empty() {
        return None;
    }
    let replaced = splice(text(node, ctx.source), edits);
    Some((ctx.types.macros.expand(&replaced)?, symbols))
}

/// Refuse a macro that reaches a listed array in its own definition without
/// being one access: the generated code could not put the device's copy there.
fn check_definition(node: Node, ctx: &Context) -> Result<(), Diagnostic> {
    let source = ctx.source;
    let (name, invocation) = macro_reads::with_placeholders(node, source);
    let expanded = ctx.types.macros.expand(&invocation).unwrap_or_default();
    let Some(array) = mentioned_array(&expanded, ctx.arrays) else {
        return check_unlisted_in_definition(node, name, &expanded, ctx);
    };
    Err(Diagnostic::new(
        span(node),
        format!(
            "the macro `{name}` uses the listed array `{}` in its definition, but `{}` is not one access to it",
            array.name,
            first_line(text(node, source))
        ),
        format!("expands to `{}`", first_line(&expanded)),
        format!(
            "tpace replaces each access to a listed array by the device's copy of it, and reads a \
             macro invocation as an access only when it expands to exactly one subscript of the \
             array (e.g. `#define A(i, j) {}[(i) * N + (j)]`); write the accesses in the sweep, or \
             use such a macro for each",
            array.name
        ),
    ))
}

/// Refuse a macro whose definition reads an array (or any variable that is
/// not a plain number) the pipeline does not list: the kernel keeps the
/// macro's text, and the device has no copy of that variable.
fn check_unlisted_in_definition(
    node: Node,
    name: &str,
    expanded: &str,
    ctx: &Context,
) -> Result<(), Diagnostic> {
    for (var, _) in macro_reads::names(node, ctx.source, ctx.types) {
        let Some(decl) = lookup(&var, ctx.at, ctx.tree, ctx.source, ctx.types) else {
            continue;
        };
        if decl.depth == 0 && ctx.types.arithmetic(&decl.ty).is_some() {
            continue; // a number: passed to the kernels by value (scalars.rs)
        }
        return Err(Diagnostic::new(
            span(node),
            format!(
                "the macro `{name}` reads `{var}`, which the pipeline does not list, in its definition"
            ),
            format!(
                "expands to `{}`",
                first_line(
                    &ctx.types
                        .macros
                        .expand(text(node, ctx.source))
                        .unwrap_or_else(|| expanded.to_string())
                )
            ),
            format!(
                "the kernels keep the macro's text and the device holds only the listed arrays: \
                 list `{var}` in targetin({var}) with the grid's shape if it is an array over the \
                 grid, or write what the macro reads in the sweep itself (a per-step value such as \
                 `{var}[t]` is passed by value when it is written there)"
            ),
        ));
    }
    Ok(())
}

/// The first line of a text, for messages.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// In each dimension without a loop, the index of the sweep's first write (else
/// its first access): every access must be that index plus a constant (or the
/// same text), which becomes its offset there.
fn fix_unlooped(
    out: &mut [Access],
    unlooped: &[Unlooped],
    loops: &[SweepLoop],
    ctx: &Context,
) -> DiagResult<Vec<(usize, String)>> {
    let rank = ctx.grid.rank();
    let mut fixed = Vec::new();
    let mut errors = Vec::new();
    for pos in (0..rank).filter(|p| !loops.iter().any(|l| l.pos == *p)) {
        let dim = rank - pos;
        let at = |i: usize| {
            unlooped[i]
                .iter()
                .find(|(p, _, _)| *p == pos)
                .map(|(_, t, s)| (t.as_str(), s.clone()))
        };
        let reference = (0..out.len())
            .find(|i| out[*i].kind == AccessKind::Write)
            .or(if out.is_empty() { None } else { Some(0) })
            .and_then(at);
        let Some((ref_text, ref_span)) = reference else {
            continue;
        };
        // Fixed means fixed for the whole step: no loop index, no time counter.
        let moving = loops
            .iter()
            .map(|l| l.var.as_str())
            .chain([ctx.time_var])
            .find(|v| mentions(ref_text, v));
        if let Some(var) = moving {
            let name = ctx.arrays[out[0].array].display_name();
            errors.push(Diagnostic::new(
                ref_span,
                format!(
                    "the sweep has no loop for dim({dim}), but `{name}` is indexed there by `{var}`"
                ),
                "index of a dimension without a loop",
                format!(
                    "a sweep with fewer loops than `size` has dimensions works on one plane: index \
                     dim({dim}) with the same constant in every access (e.g. `[0]`), or add a loop \
                     over it marked `#pragma tpace loop dim({dim})`"
                ),
            ));
            continue;
        }
        // As written (`X - 2` against `X - 1`), else with macros expanded.
        let expand = |t: &str| ctx.types.macros.expand(t).unwrap_or_default();
        let diff_of = |a: &str, b: &str| {
            poly_of_text(a)
                .zip(poly_of_text(b))
                .and_then(|(p, r)| p.sub(&r))
                .and_then(|d| d.as_constant())
        };
        let compact = |t: &str| t.split_whitespace().collect::<String>();
        for (i, acc) in out.iter_mut().enumerate() {
            let Some((index, index_span)) = at(i) else {
                continue;
            };
            let diff =
                diff_of(index, ref_text).or_else(|| diff_of(&expand(index), &expand(ref_text)));
            let same = compact(index) == compact(ref_text);
            match (diff, same) {
                (Some(d), _) => acc.offsets[pos] = d,
                (None, true) => acc.offsets[pos] = 0,
                (None, false) => errors.push(Diagnostic::new(
                    index_span,
                    format!(
                        "index `{index}` in dim({dim}) is not the sweep's fixed index `{ref_text}` plus a constant"
                    ),
                    "the sweep has no loop for this dimension",
                    format!(
                        "a sweep without a loop for dim({dim}) works on plane `{ref_text}` (where it \
                         writes): index dim({dim}) there as `{ref_text}` plus an integer constant"
                    ),
                )),
            }
        }
        fixed.push((pos, ref_text.to_string()));
    }
    if errors.is_empty() {
        Ok(fixed)
    } else {
        Err(errors)
    }
}

/// Whether `name` is assigned, updated or declared anywhere in `body`.
fn changes_in(body: Node, name: &str, source: &str) -> bool {
    descendants(body).into_iter().any(|n| {
        let target = match n.kind() {
            "assignment_expression" => n.child_by_field_name("left"),
            "update_expression" => n.child_by_field_name("argument"),
            "init_declarator" => n.child_by_field_name("declarator"),
            "declaration" => n
                .child_by_field_name("declarator")
                .filter(|d| d.kind() == "identifier"),
            _ => None,
        };
        target.is_some_and(|t| t.kind() == "identifier" && text(t, source) == name)
    })
}

/// An unlisted array read at subscripts that depend only on the time counter and
/// variables the sweep does not change: a value per step, `local` number `n`.
/// `None` for what is no array at all (a macro's subscript); an error for
/// anything that would need the array on the device.
fn step_value(
    node: Node,
    frame: &Frame,
    body: Node,
    loops: &[SweepLoop],
    ctx: &Context,
    n: usize,
) -> Result<Option<StepValue>, Diagnostic> {
    let source = ctx.source;
    let (base, indices) = chain(node);
    let name = text(base, source);
    let expr = text(node, source);
    let grid_shape: String = "[..]".repeat(ctx.grid.rank());
    let what_to_do = format!(
        "list `{name}` in targetin({name}) with the grid's shape (`{name}{grid_shape}`) if it \
         varies over the grid, or make it a per-step value: an array the sweeps only read, at \
         subscripts made of the time counter `{time}`, constants and variables the sweep does not \
         change (e.g. `{name}[{time}]`)",
        time = ctx.time_var
    );
    let spatial = indices.iter().find_map(|i| {
        let t = text(*i, source);
        loops
            .iter()
            .map(|l| l.var.as_str())
            .find(|v| mentions(t, v))
            .or_else(|| {
                ctx.arrays
                    .iter()
                    .map(|a| a.name.as_str())
                    .find(|a| mentions(t, a))
            })
            .or_else(|| {
                descendants(*i)
                    .into_iter()
                    .filter(|d| d.kind() == "identifier")
                    .map(|d| text(d, source))
                    .find(|v| *v != ctx.time_var && changes_in(body, v, source))
            })
    });
    if let Some(var) = spatial {
        return Err(Diagnostic::new(
            span(node),
            format!("array `{name}` is used but not listed in the pipeline directive"),
            format!("not in targetinout(...) or targetin(...), and indexed by `{var}`"),
            what_to_do,
        ));
    }
    if frame.role != Role::Value {
        return Err(Diagnostic::new(
            span(node),
            format!("unlisted array `{name}` is written in a sweep"),
            "the device holds only the listed arrays",
            format!(
                "list `{name}` in targetinout({name}) with the grid's shape (`{name}{grid_shape}`); \
                 per-step values such as `{expr}` can only be read"
            ),
        ));
    }
    let Some(decl) = lookup(name, ctx.at, ctx.tree, source, ctx.types) else {
        // Not a variable: a macro or a header's object; the kernel copies the text.
        return Ok(None);
    };
    // An arithmetic type (through typedefs and macros): it is passed by value.
    let resolved = ctx.types.arithmetic(&decl.ty);
    if decl.depth != indices.len() || resolved.is_none() {
        return Err(Diagnostic::new(
            span(node),
            format!(
                "`{expr}` is not an element of a plain scalar type (`{name}` is declared as `{} {}`)",
                decl.ty.trim(),
                decl.declarator
            ),
            "per-step value tpace can not pass by value",
            format!(
                "a per-step value is one element of an array of `float`, `double` or an integer \
                 type, with one subscript per declared dimension; {what_to_do}"
            ),
        ));
    }
    Ok(Some(StepValue {
        text: expr.to_string(),
        span: span(node),
        ty: resolved.unwrap_or(decl.ty),
        local: format!("tp_step_{}", n + 1),
    }))
}

/// The accesses (a read, a write, or both) of one whole subscript expression to
/// a listed array (`node`, in a tree over `source`: the file, or a macro's
/// expansion), with the indices of the positions that have no loop, or the
/// problem with it. `symbols` stand for a macro's constant arguments.
fn access(
    node: Node,
    frame: &Frame,
    (loops, vars, at): (&[SweepLoop], &IndexVars, usize),
    ctx: &Context,
    source: &str,
    symbols: &[(String, i64)],
) -> Result<One, Diagnostic> {
    let (grid, arrays) = (ctx.grid, ctx.arrays);
    let (_, indices) = chain(node);
    // Not a listed array's name (e.g. `(*p)[x]`, `f()[0]`): no access to one.
    let Some(first) = listed_base(node, source, arrays) else {
        return Ok(One {
            accesses: Vec::new(),
            unlooped: Vec::new(),
            flat: None,
        });
    };
    let name = &arrays[first].name;
    let (array, indices) = if arrays[first].component.is_some() {
        component_of(node, &indices, first, ctx, source)?
    } else {
        (first, &indices[..])
    };
    let (reach, free, flat, kept) = match arrays[array].layout {
        Layout::Flat => {
            if loops.len() < grid.rank() {
                return Err(Diagnostic::new(
                    span(node),
                    format!(
                        "`{name}` has a flat subscript in a sweep with fewer loops than `size` has dimensions"
                    ),
                    "flat array in a lower-dimensional sweep",
                    "a sweep over fewer dimensions than `size` can use only arrays subscripted once per \
                     dimension: declare it `T a[X][Y]` or `T (*a)[Y]`, or loop over every dimension",
                ));
            }
            let nest = (loops, vars, at);
            let (o, f, kept) = flat_offsets(node, indices, nest, ctx, array, source, symbols)?;
            (o, Vec::new(), Some(f), kept)
        }
        Layout::Static | Layout::PointerToArray => {
            let nest = (loops, vars, at);
            let (o, free, kept) =
                per_dim_offsets(node, indices, nest, ctx, &arrays[array], source)?;
            (o, free, None, kept)
        }
    };
    let kinds: &[AccessKind] = match frame.role {
        Role::Value => &[AccessKind::Read],
        Role::Target { compound: false } => &[AccessKind::Write],
        Role::Target { compound: true } | Role::Update => &[AccessKind::Read, AccessKind::Write],
    };
    // Through index variables, one access per element the subscript can reach.
    let one_element = reach.len() == 1;
    let accesses = reach
        .iter()
        .flat_map(|offsets| {
            kinds.iter().map(|kind| Access {
                array,
                offsets: offsets.clone(),
                kind: *kind,
                span: span(node),
                unconditional: frame.unconditional && one_element,
                kept: kept.clone(),
            })
        })
        .collect();
    Ok(One {
        accesses,
        unlooped: free,
        flat,
    })
}

/// For an array declared with a component dimension (`first` its component 0):
/// the listed component the constant leading subscript selects, and the rest.
fn component_of<'a, 't>(
    node: Node,
    indices: &'a [Node<'t>],
    first: usize,
    ctx: &Context,
    source: &str,
) -> Result<(usize, &'a [Node<'t>]), Diagnostic> {
    let (grid, arrays) = (ctx.grid, ctx.arrays);
    let name = &arrays[first].name;
    let count = arrays.iter().filter(|a| a.name == *name).count();
    let rank = grid.rank();
    let help = format!(
        "give the component first, as an integer constant from 0 to {}: `{name}[0]{}`",
        count - 1,
        "[..]".repeat(rank)
    );
    if indices.len() != rank + 1 {
        return Err(Diagnostic::new(
            span(node),
            format!(
                "`{name}` is declared with a component dimension but subscripted with {}",
                crate::text::count(indices.len(), "index", "indices")
            ),
            format!("{} expected: a component, then one per dimension", rank + 1),
            help,
        ));
    }
    let Some(c) = Poly::from_node(indices[0], source)
        .and_then(|p| ctx.bind(p))
        .and_then(|p| p.as_constant())
    else {
        return Err(Diagnostic::new(
            span(indices[0]),
            format!("component subscript of `{name}` is not an integer constant"),
            "selects the component at run time",
            help,
        ));
    };
    let array = (0..arrays.len())
        .find(|a| arrays[*a].name == *name && arrays[*a].component.map(i64::from) == Some(c));
    let Some(array) = array else {
        return Err(Diagnostic::new(
            span(indices[0]),
            format!("component {c} of `{name}` is out of range: it is declared with {count}"),
            "no such component",
            help,
        ));
    };
    Ok((array, &indices[1..]))
}

/// `a[i][j]` -> (`a`, [`i`, `j`]).
fn chain(node: Node) -> (Node, Vec<Node>) {
    let mut indices = Vec::new();
    let mut cur = node;
    while cur.kind() == "subscript_expression" {
        if let Some(i) = cur.child_by_field_name("index") {
            indices.push(i);
        }
        match cur.child_by_field_name("argument") {
            Some(a) => cur = a,
            None => break,
        }
    }
    indices.reverse();
    (cur, indices)
}

fn not_affine(node: Node, array: &Array, expected: String, constant: &str) -> Diagnostic {
    Diagnostic::new(
        span(node),
        format!(
            "subscript of `{}` is not a loop index plus a constant",
            array.display_name()
        ),
        "unsupported subscript",
        format!("write it as {expected}, with integer constants {constant}"),
    )
}

/// A name for "some integer constant" in help texts that is neither the array's
/// name nor a loop index (`c`, unless the array is called `c`).
fn placeholder(array: &Array, loops: &[SweepLoop], vars: &IndexVars) -> &'static str {
    ["c", "d", "m", "q", "off"]
        .into_iter()
        .find(|p| *p != array.name && !loops.iter().any(|l| l.var == *p) && !vars.names(p))
        .unwrap_or("off")
}

/// Every combination of one element from each list, in order (`None` past
/// [`super::index_vars::MAX_VALUES`]).
fn combinations(lists: &[Vec<i64>]) -> Option<Vec<Vec<i64>>> {
    let mut out: Vec<Vec<i64>> = vec![Vec::new()];
    for list in lists {
        let mut next = Vec::new();
        for prefix in &out {
            for v in list {
                let mut o = prefix.clone();
                o.push(*v);
                next.push(o);
            }
        }
        if next.len() > super::index_vars::MAX_VALUES {
            return None;
        }
        out = next;
    }
    Some(out)
}

/// The error for a subscript through an index variable tpace does not follow
/// (`unknown`) or whose values are too many (`None`).
fn unfollowed(node: Node, array: &Array, unknown: Option<&str>) -> Diagnostic {
    let follows = "tpace follows an index variable that the innermost loop's body sets with `=` \
                   in a statement of its own before the access (`c = x + y * nx;`, \
                   `w = (x == 0) ? c : c - 1;`), from the loop indices, outside variables, \
                   integer constants, `+`, `-`, `*` and `?:`";
    match unknown {
        Some(v) => Diagnostic::new(
            span(node),
            format!(
                "the subscript of `{}` reads `{v}`, which the sweep sets in a way tpace does not follow",
                array.display_name()
            ),
            format!("`{v}` is not an index variable here"),
            format!(
                "{follows}; set `{v}` so before this access, or write the subscript from the loop \
                 indices"
            ),
        ),
        None => Diagnostic::new(
            span(node),
            format!(
                "the subscript of `{}` can take more than {} forms through its index variables",
                array.display_name(),
                super::index_vars::MAX_VALUES
            ),
            "too many `?:` branches",
            format!("{follows}; split the choices over fewer variables"),
        ),
    }
}

/// Offsets per position; positions without a loop get 0 and their index node,
/// resolved against the sweep's fixed index later.
fn per_dim_offsets(
    node: Node,
    indices: &[Node],
    (loops, index_vars, at): (&[SweepLoop], &IndexVars, usize),
    ctx: &Context,
    array: &Array,
    source: &str,
) -> Result<(Reach, Unlooped, Option<Subscript>), Diagnostic> {
    let grid = ctx.grid;
    let c = placeholder(array, loops, index_vars);
    let vars: Vec<Option<&str>> = (0..grid.rank())
        .map(|p| loops.iter().find(|l| l.pos == p).map(|l| l.var.as_str()))
        .collect();
    let component = array.component.map_or(String::new(), |k| format!("[{k}]"));
    let expected = format!(
        "`{}{component}{}`",
        array.name,
        vars.iter()
            .map(|v| match v {
                Some(v) => format!("[{v} + {c}]"),
                None => format!("[{c}]"),
            })
            .collect::<String>()
    );
    if indices.len() != grid.rank() {
        return Err(Diagnostic::new(
            span(node),
            format!(
                "`{}` is subscripted with {} but the grid has {}",
                array.display_name(),
                crate::text::count(indices.len(), "index", "indices"),
                crate::text::count(grid.rank(), "dimension", "dimensions")
            ),
            WRONG_COUNT,
            format!("write it as {expected}"),
        ));
    }
    // Per position, the offsets the index can take (one, unless it goes through
    // index variables).
    let mut offsets: Vec<Vec<i64>> = Vec::new();
    let mut free = Vec::new();
    let mut through_vars = false;
    let macros = ctx.types.macros;
    for (pos, (index, var)) in indices.iter().zip(&vars).enumerate() {
        let values = match index_vars.subscript(*index, source, at, macros) {
            Values::None => Poly::from_node(*index, source).map(|p| vec![p]),
            Values::Some(v) => {
                through_vars = true;
                Some(v)
            }
            Values::Unknown(v) => return Err(unfollowed(node, array, Some(&v))),
            Values::TooMany => return Err(unfollowed(node, array, None)),
        };
        match var {
            Some(var) => offsets.push(
                values
                    .and_then(|vs| {
                        vs.iter()
                            .map(|p| {
                                // In a sweep function, in the caller's names.
                                ctx.bind(p.clone())
                                    .and_then(|p| p.sub(&Poly::var(var)))
                                    .and_then(|p| p.as_constant())
                            })
                            .collect::<Option<Vec<i64>>>()
                    })
                    .ok_or_else(|| not_affine(node, array, expected.clone(), c))?,
            ),
            None => {
                if through_vars {
                    return Err(not_affine(node, array, expected.clone(), c));
                }
                offsets.push(vec![0]);
                free.push((pos, text(*index, source).to_string(), span(*index)));
            }
        }
    }
    let kept = through_vars.then(|| {
        Subscript::PerDim(
            indices
                .iter()
                .map(|i| text(*i, source).to_string())
                .collect(),
        )
    });
    let reach = combinations(&offsets).ok_or_else(|| unfollowed(node, array, None))?;
    Ok((dedup(reach), free, kept))
}

/// The list without repeats, in first-seen order.
fn dedup(list: Vec<Vec<i64>>) -> Vec<Vec<i64>> {
    let mut out: Vec<Vec<i64>> = Vec::new();
    for o in list {
        if !out.contains(&o) {
            out.push(o);
        }
    }
    out
}

/// Parse a C expression given as text (a `size` extent) into a polynomial.
pub fn poly_of_text(expr: &str) -> Option<Poly> {
    let wrapped = format!("long tpace_e = ({expr});");
    let tree = parse_c(&wrapped);
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let decl = root.named_child(0)?;
    let init = decl.child_by_field_name("declarator")?;
    let value = init.child_by_field_name("value")?;
    Poly::from_node(value, &wrapped)
}

/// The offsets of a flat subscript and what else it says (see [`super::flat`]).
fn flat_offsets(
    node: Node,
    indices: &[Node],
    (loops, index_vars, at): (&[SweepLoop], &IndexVars, usize),
    ctx: &Context,
    array_index: usize,
    source: &str,
    symbols: &[(String, i64)],
) -> Result<(Reach, FlatAccess, Option<Subscript>), Diagnostic> {
    let grid = ctx.grid;
    let array = &ctx.arrays[array_index];
    let rank = grid.rank();
    let var = |p: usize| {
        loops
            .iter()
            .find(|l| l.pos == p)
            .map_or("?", |l| l.var.as_str())
    };
    let mut expected = String::new();
    for p in 0..rank {
        let stride = if p + 1 == rank {
            String::new()
        } else {
            let inner: Vec<&str> = grid.dims[p + 1..].iter().map(|d| d.n.as_str()).collect();
            format!("*{}", inner.join("*"))
        };
        if p > 0 {
            expected.push_str(" + ");
        }
        expected.push_str(&format!(
            "({} - {} + {}){stride}",
            var(p),
            grid.dims[p].lo,
            placeholder(array, loops, index_vars)
        ));
    }
    let expected = format!("`{}[{expected}]`", array.name);
    let not_affine = || {
        not_affine(
            node,
            array,
            expected.clone(),
            placeholder(array, loops, index_vars),
        )
    };
    // The first indices as written, and with macros expanded (for a subscript
    // read from a macro's expansion).
    let los: Option<Vec<Poly>> = grid.dims.iter().map(|d| poly_of_text(&d.lo)).collect();
    let expanded_los: Option<Vec<Poly>> = grid
        .dims
        .iter()
        .map(|d| {
            ctx.types
                .macros
                .expand(&d.lo)
                .and_then(|t| poly_of_text(&t))
        })
        .collect();
    let Some(los) = los.or(expanded_los.clone()) else {
        return Err(Diagnostic::new(
            span(node),
            format!(
                "cannot read the `size` clause's first indices to decompose the flat subscript of `{}`",
                array.name
            ),
            "flat subscript",
            "write `size` first indices as integer expressions of constants, variables and macros",
        ));
    };
    if indices.len() != 1 {
        return Err(not_affine());
    }
    let (values, kept) = match index_vars.subscript(indices[0], source, at, ctx.types.macros) {
        Values::None => (
            vec![Poly::from_node(indices[0], source).ok_or_else(not_affine)?],
            None,
        ),
        Values::Some(v) => (
            v,
            Some(Subscript::Flat(text(indices[0], source).to_string())),
        ),
        Values::Unknown(v) => return Err(unfollowed(node, array, Some(&v))),
        Values::TooMany => return Err(unfollowed(node, array, None)),
    };
    // In a sweep function, in the caller's names: the strides are checked in its
    // scope (the kept text stays in the function's names, which its kernel has).
    let values: Vec<Poly> = values
        .into_iter()
        .map(|p| ctx.bind(p))
        .collect::<Option<_>>()
        .ok_or_else(not_affine)?;
    let vars: Vec<&str> = (0..rank).map(var).collect();
    let mut reach = Vec::new();
    let mut first = None;
    for index in &values {
        let read = decompose(index, &vars, &los, symbols);
        let read = match (read, &expanded_los) {
            (Err(Problem::NotAffine), Some(e)) => decompose(index, &vars, e, symbols),
            (r, _) => r,
        };
        let read = match read {
            // A kept subscript is the array's own numbering: no component in it.
            Ok((_, _, Some(_))) if kept.is_some() => Err(Problem::NotAffine),
            r => r,
        };
        match read {
            Ok((offsets, strides, component)) => {
                if !reach.contains(&offsets) {
                    reach.push(offsets);
                }
                first.get_or_insert((strides, component));
            }
            Err(p) => return Err(flat_problem(p, node, array, &not_affine)),
        }
    }
    let (strides, component) = first.expect("a subscript has at least one value");
    Ok((
        reach,
        FlatAccess {
            array: array_index,
            strides,
            component,
            span: span(node),
        },
        kept,
    ))
}

/// The diagnostic for a flat subscript that could not be read.
fn flat_problem(
    problem: Problem,
    node: Node,
    array: &Array,
    not_affine: &dyn Fn() -> Diagnostic,
) -> Diagnostic {
    match problem {
        Problem::NotAffine => not_affine(),
        Problem::TwoComponents => Diagnostic::new(
            span(node),
            format!(
                "the subscript of `{}` selects a component with more than one constant",
                array.name
            ),
            "two component indices",
            "tpace reads one constant macro argument that multiplies a stride of its own as the \
             component (Himeno's `MR(a, 3, i, j, k)`); fold the others into it",
        ),
    }
}
