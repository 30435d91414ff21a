//! Reads every subscripted reference to a listed array in a sweep body as
//! (array, constant offset per dimension, read or write); the index a
//! lower-dimensional sweep fixes in each dimension it has no loop for; and the
//! per-step values (`fict[t]`) it reads from unlisted arrays.

use super::context::Context;
use super::decls::{declared_depth, find_decl};
use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{descendants, parse_c, span, text};
use crate::front::poly::Poly;
use crate::ir::{Access, AccessKind, Array, Grid, Layout, StepValue, SweepLoop};
use crate::text::mentions;
use tree_sitter::Node;

/// Label of the diagnostic for an access with another number of subscripts than `size`.
pub const WRONG_COUNT: &str = "wrong number of subscripts";

/// Largest offset magnitude tried when decomposing a flat subscript.
const MAX_FLAT_OFFSET: i64 = 8;

/// Element types a per-step value may have (it is passed by value).
const STEP_VALUE_TYPES: [&str; 8] = [
    "float", "double", "int", "long", "short", "char", "unsigned", "size_t",
];

/// Per access, the index nodes of the grid positions the sweep has no loop for.
type Unlooped<'t> = Vec<(usize, Node<'t>)>;

/// What a sweep body says about the data it touches.
pub struct Found {
    /// Every access to a listed array.
    pub accesses: Vec<Access>,
    /// Per grid position without a loop: the index every access fixes there (C text).
    pub fixed: Vec<(usize, String)>,
    /// Reads of unlisted arrays that are the same at every point of a step.
    pub step_values: Vec<StepValue>,
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
pub fn accesses(body: Node, loops: &[SweepLoop], ctx: &Context) -> DiagResult<Found> {
    let (grid, arrays, source) = (ctx.grid, ctx.arrays, ctx.source);
    let mut out = Vec::new();
    let mut errors = Vec::new();
    // Per access in `out`: the index nodes of the positions without a loop.
    let mut unlooped: Vec<Vec<(usize, Node)>> = Vec::new();
    let mut step_values = Vec::new();
    let mut stack = vec![Frame {
        node: body,
        inner_link: false,
        role: Role::Value,
        unconditional: body.kind() == "expression_statement",
    }];
    while let Some(frame) = stack.pop() {
        let node = frame.node;
        if node.kind() == "subscript_expression" && !frame.inner_link {
            let (base, _) = chain(node);
            let listed =
                base.kind() == "identifier" && arrays.iter().any(|a| a.name == text(base, source));
            if base.kind() == "identifier" && !listed {
                // An unlisted array: a per-step value, or refused; its subscripts are host code.
                match step_value(node, &frame, body, loops, ctx, step_values.len()) {
                    Ok(Some(v)) => step_values.push(v),
                    Ok(None) => {}
                    Err(d) => errors.push(d),
                }
                continue;
            }
            match access(node, &frame, loops, grid, arrays, source) {
                Ok((found, free)) => {
                    for a in found {
                        out.push(a);
                        unlooped.push(free.clone());
                    }
                }
                Err(d) => errors.push(d),
            }
        }
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
    })
}

/// In each dimension without a loop, the index of the sweep's first write (else
/// its first access): every access must be that index plus a constant (or the
/// same text), which becomes its offset there.
fn fix_unlooped(
    out: &mut [Access],
    unlooped: &[Vec<(usize, Node)>],
    loops: &[SweepLoop],
    ctx: &Context,
) -> DiagResult<Vec<(usize, String)>> {
    let source = ctx.source;
    let rank = ctx.grid.rank();
    let mut fixed = Vec::new();
    let mut errors = Vec::new();
    for pos in (0..rank).filter(|p| !loops.iter().any(|l| l.pos == *p)) {
        let dim = rank - pos;
        let at = |i: usize| unlooped[i].iter().find(|(p, _)| *p == pos).map(|(_, n)| *n);
        let reference = (0..out.len())
            .find(|i| out[*i].kind == AccessKind::Write)
            .or(if out.is_empty() { None } else { Some(0) })
            .and_then(at);
        let Some(reference) = reference else {
            continue;
        };
        let ref_text = text(reference, source);
        // Fixed means fixed for the whole step: no loop index, no time counter.
        let moving = loops
            .iter()
            .map(|l| l.var.as_str())
            .chain([ctx.time_var])
            .find(|v| mentions(ref_text, v));
        if let Some(var) = moving {
            let name = ctx.arrays[out[0].array].display_name();
            errors.push(Diagnostic::new(
                span(reference),
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
        let ref_poly = Poly::from_node(reference, source);
        let compact = |t: &str| t.split_whitespace().collect::<String>();
        for (i, acc) in out.iter_mut().enumerate() {
            let Some(node) = at(i) else { continue };
            let diff = Poly::from_node(node, source)
                .zip(ref_poly.as_ref())
                .and_then(|(p, r)| p.sub(r))
                .and_then(|d| d.as_constant());
            let same = compact(text(node, source)) == compact(ref_text);
            match (diff, same) {
                (Some(d), _) => acc.offsets[pos] = d,
                (None, true) => acc.offsets[pos] = 0,
                (None, false) => errors.push(Diagnostic::new(
                    span(node),
                    format!(
                        "index `{}` in dim({dim}) is not the sweep's fixed index `{ref_text}` plus a constant",
                        text(node, source)
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
    let Some((decl, declarator)) = find_decl(name, ctx.at, ctx.tree, source) else {
        // Not a variable: a macro or a header's object; the kernel copies the text.
        return Ok(None);
    };
    let ty = decl
        .child_by_field_name("type")
        .map_or("", |t| text(t, source))
        .to_string();
    let depth = declared_depth(declarator);
    if depth != indices.len() || !STEP_VALUE_TYPES.contains(&ty.as_str()) {
        return Err(Diagnostic::new(
            span(node),
            format!(
                "`{expr}` is not an element of a plain scalar type (`{name}` is declared as `{ty} {}`)",
                text(declarator, source)
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
        ty,
        local: format!("tp_step_{}", n + 1),
    }))
}

/// The accesses (a read, a write, or both) of one whole subscript expression to
/// a listed array, with the index nodes of the positions that have no loop, or
/// the problem with it.
fn access<'t>(
    node: Node<'t>,
    frame: &Frame,
    loops: &[SweepLoop],
    grid: &Grid,
    arrays: &[Array],
    source: &str,
) -> Result<(Vec<Access>, Unlooped<'t>), Diagnostic> {
    let (base, indices) = chain(node);
    let name = text(base, source);
    // Not a listed array's name (e.g. `(*p)[x]`, `f()[0]`): no access to one.
    let Some(first) = arrays
        .iter()
        .position(|a| base.kind() == "identifier" && a.name == name)
    else {
        return Ok((Vec::new(), Vec::new()));
    };
    let (array, indices) = if arrays[first].component.is_some() {
        component_of(node, &indices, first, grid, arrays, source)?
    } else {
        (first, &indices[..])
    };
    let (offsets, free) = match arrays[array].layout {
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
            let o = flat_offsets(node, indices, loops, grid, &arrays[array], source)?;
            (o, Vec::new())
        }
        Layout::Static | Layout::PointerToArray => {
            per_dim_offsets(node, indices, loops, grid, &arrays[array], source)?
        }
    };
    let kinds: &[AccessKind] = match frame.role {
        Role::Value => &[AccessKind::Read],
        Role::Target { compound: false } => &[AccessKind::Write],
        Role::Target { compound: true } | Role::Update => &[AccessKind::Read, AccessKind::Write],
    };
    let found = kinds
        .iter()
        .map(|kind| Access {
            array,
            offsets: offsets.clone(),
            kind: *kind,
            span: span(node),
            unconditional: frame.unconditional,
        })
        .collect();
    Ok((found, free))
}

/// For an array declared with a component dimension (`first` its component 0):
/// the listed component the constant leading subscript selects, and the rest.
fn component_of<'a, 't>(
    node: Node,
    indices: &'a [Node<'t>],
    first: usize,
    grid: &Grid,
    arrays: &[Array],
    source: &str,
) -> Result<(usize, &'a [Node<'t>]), Diagnostic> {
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
    let Some(c) = Poly::from_node(indices[0], source).and_then(|p| p.as_constant()) else {
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
fn placeholder(array: &Array, loops: &[SweepLoop]) -> &'static str {
    ["c", "d", "m", "q", "off"]
        .into_iter()
        .find(|p| *p != array.name && !loops.iter().any(|l| l.var == *p))
        .unwrap_or("off")
}

/// Offsets per position; positions without a loop get 0 and their index node,
/// resolved against the sweep's fixed index later.
fn per_dim_offsets<'t>(
    node: Node,
    indices: &[Node<'t>],
    loops: &[SweepLoop],
    grid: &Grid,
    array: &Array,
    source: &str,
) -> Result<(Vec<i64>, Unlooped<'t>), Diagnostic> {
    let c = placeholder(array, loops);
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
    let mut offsets = Vec::new();
    let mut free = Vec::new();
    for (pos, (index, var)) in indices.iter().zip(&vars).enumerate() {
        match var {
            Some(var) => offsets.push(
                Poly::from_node(*index, source)
                    .and_then(|p| p.sub(&Poly::var(var)))
                    .and_then(|p| p.as_constant())
                    .ok_or_else(|| not_affine(node, array, expected.clone(), c))?,
            ),
            None => {
                offsets.push(0);
                free.push((pos, *index));
            }
        }
    }
    Ok((offsets, free))
}

/// Parse a C expression given as text (a `size` extent) into a polynomial.
fn poly_of_text(expr: &str) -> Option<Poly> {
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

fn flat_offsets(
    node: Node,
    indices: &[Node],
    loops: &[SweepLoop],
    grid: &Grid,
    array: &Array,
    source: &str,
) -> Result<Vec<i64>, Diagnostic> {
    let rank = grid.rank();
    let var = |p: usize| {
        loops
            .iter()
            .find(|l| l.pos == p)
            .map_or("?", |l| l.var.as_str())
    };
    // Row-major strides over the `size` extents: stride[p] = n[p+1] * ... * n[rank-1].
    let extents: Option<Vec<Poly>> = grid.dims.iter().map(|d| poly_of_text(&d.n)).collect();
    let los: Option<Vec<Poly>> = grid.dims.iter().map(|d| poly_of_text(&d.lo)).collect();
    let mut expected = String::new();
    let mut strides_text = vec![String::new(); rank];
    for p in (0..rank).rev() {
        strides_text[p] = if p + 1 == rank {
            String::new()
        } else {
            let inner: Vec<&str> = grid.dims[p + 1..].iter().map(|d| d.n.as_str()).collect();
            format!("*{}", inner.join("*"))
        };
    }
    for (p, stride) in strides_text.iter().enumerate() {
        if p > 0 {
            expected.push_str(" + ");
        }
        expected.push_str(&format!(
            "({} - {} + {}){stride}",
            var(p),
            grid.dims[p].lo,
            placeholder(array, loops)
        ));
    }
    let expected = format!("`{}[{expected}]`", array.name);
    let strides = extents.as_deref().and_then(|extents| {
        let mut strides = vec![Poly::constant(1); rank];
        for p in (0..rank.saturating_sub(1)).rev() {
            strides[p] = strides[p + 1].mul(&extents[p + 1])?;
        }
        Some(strides)
    });
    let (Some(strides), Some(los)) = (strides, los) else {
        return Err(Diagnostic::new(
            span(node),
            format!(
                "cannot read the `size` extents to decompose the flat subscript of `{}`",
                array.name
            ),
            "flat subscript",
            "write `size` extents as integer expressions of constants and macros",
        ));
    };
    if indices.len() != 1 {
        return Err(not_affine(node, array, expected, placeholder(array, loops)));
    }
    // What is left of the subscript once every dimension's index term is taken away.
    let mut rest = Poly::from_node(indices[0], source);
    for p in 0..rank {
        rest = rest.and_then(|r| r.sub(&Poly::var(var(p)).sub(&los[p])?.mul(&strides[p])?));
    }
    let Some(rest) = rest else {
        return Err(not_affine(node, array, expected, placeholder(array, loops)));
    };
    if loops.iter().any(|l| rest.mentions(&l.var)) {
        return Err(not_affine(node, array, expected, placeholder(array, loops)));
    }
    // Smallest offsets first, so that literal extents cannot pick a far-away alias.
    for radius in 0..=MAX_FLAT_OFFSET {
        let mut c = vec![-radius; rank];
        loop {
            if c.iter().any(|v| v.abs() == radius) {
                let sum = c
                    .iter()
                    .zip(&strides)
                    .try_fold(Poly::constant(0), |acc, (ci, s)| acc.add(&s.scale(*ci)?));
                if sum.as_ref() == Some(&rest) {
                    return Ok(c);
                }
            }
            // Odometer over [-radius, radius]^rank.
            let mut i = 0;
            while i < rank {
                c[i] += 1;
                if c[i] <= radius {
                    break;
                }
                c[i] = -radius;
                i += 1;
            }
            if i == rank {
                break;
            }
        }
    }
    Err(not_affine(node, array, expected, placeholder(array, loops)))
}
