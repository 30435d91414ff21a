//! Reads every subscripted reference to a listed array in a sweep body as
//! (array, constant offset per dimension, read or write).

use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{mentions, parse_c, span, text};
use crate::front::poly::Poly;
use crate::ir::{Access, AccessKind, Array, Grid, Layout, SweepLoop};
use tree_sitter::Node;

/// Largest offset magnitude tried when decomposing a flat subscript.
const MAX_FLAT_OFFSET: i64 = 8;

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
pub fn accesses(
    body: Node,
    loops: &[SweepLoop],
    grid: &Grid,
    arrays: &[Array],
    source: &str,
) -> DiagResult<Vec<Access>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut stack = vec![Frame {
        node: body,
        inner_link: false,
        role: Role::Value,
        unconditional: body.kind() == "expression_statement",
    }];
    while let Some(frame) = stack.pop() {
        let node = frame.node;
        if node.kind() == "subscript_expression" && !frame.inner_link {
            match access(node, &frame, loops, grid, arrays, source) {
                Ok(found) => out.extend(found),
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
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The accesses (a read, a write, or both) of one whole subscript expression,
/// nothing if it is not a listed array, or the problem with it.
fn access(
    node: Node,
    frame: &Frame,
    loops: &[SweepLoop],
    grid: &Grid,
    arrays: &[Array],
    source: &str,
) -> Result<Vec<Access>, Diagnostic> {
    let (base, indices) = chain(node);
    if base.kind() != "identifier" {
        return Ok(Vec::new());
    }
    let name = text(base, source);
    let Some(array) = arrays.iter().position(|a| a.name == name) else {
        let uses_index = indices.iter().any(|i| {
            let t = text(*i, source);
            loops.iter().any(|l| mentions(t, &l.var))
        });
        if !uses_index {
            return Ok(Vec::new());
        }
        return Err(Diagnostic::new(
            span(node),
            format!("array `{name}` is used but not listed in the pipeline directive"),
            "not in targetinout(...) or targetin(...)",
            format!(
                "add `{name}` to targetin({name}) if the stencil only reads it, \
                     or to targetinout({name}) if it writes it"
            ),
        ));
    };
    let offsets = match arrays[array].layout {
        Layout::Flat => flat_offsets(node, &indices, loops, grid, &arrays[array], source),
        Layout::Static | Layout::PointerToArray => {
            per_dim_offsets(node, &indices, loops, grid, &arrays[array], source)
        }
    };
    let offsets = offsets?;
    let kinds: &[AccessKind] = match frame.role {
        Role::Value => &[AccessKind::Read],
        Role::Target { compound: false } => &[AccessKind::Write],
        Role::Target { compound: true } | Role::Update => &[AccessKind::Read, AccessKind::Write],
    };
    Ok(kinds
        .iter()
        .map(|kind| Access {
            array,
            offsets: offsets.clone(),
            kind: *kind,
            span: span(node),
            unconditional: frame.unconditional,
        })
        .collect())
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

fn not_affine(node: Node, array: &Array, expected: String) -> Diagnostic {
    Diagnostic::new(
        span(node),
        format!(
            "subscript of `{}` is not a loop index plus a constant",
            array.name
        ),
        "unsupported subscript",
        format!("write it as {expected}, with integer constants c"),
    )
}

fn per_dim_offsets(
    node: Node,
    indices: &[Node],
    loops: &[SweepLoop],
    grid: &Grid,
    array: &Array,
    source: &str,
) -> Result<Vec<i64>, Diagnostic> {
    let vars: Vec<&str> = (0..grid.rank())
        .map(|p| {
            loops
                .iter()
                .find(|l| l.pos == p)
                .map_or("?", |l| l.var.as_str())
        })
        .collect();
    let expected = format!(
        "`{}{}`",
        array.name,
        vars.iter()
            .map(|v| format!("[{v} + c]"))
            .collect::<String>()
    );
    if indices.len() != grid.rank() {
        return Err(Diagnostic::new(
            span(node),
            format!(
                "`{}` is subscripted with {} but the grid has {}",
                array.name,
                super::count(indices.len(), "index", "indices"),
                super::count(grid.rank(), "dimension", "dimensions")
            ),
            "wrong number of subscripts",
            format!("write it as {expected}"),
        ));
    }
    indices
        .iter()
        .zip(&vars)
        .map(|(index, var)| {
            Poly::from_node(*index, source)
                .and_then(|p| p.sub(&Poly::var(var)))
                .and_then(|p| p.as_constant())
                .ok_or_else(|| not_affine(node, array, expected.clone()))
        })
        .collect()
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
        expected.push_str(&format!("({} - {} + c){stride}", var(p), grid.dims[p].lo));
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
        return Err(not_affine(node, array, expected));
    }
    // What is left of the subscript once every dimension's index term is taken away.
    let mut rest = Poly::from_node(indices[0], source);
    for p in 0..rank {
        rest = rest.and_then(|r| r.sub(&Poly::var(var(p)).sub(&los[p])?.mul(&strides[p])?));
    }
    let Some(rest) = rest else {
        return Err(not_affine(node, array, expected));
    };
    if loops.iter().any(|l| rest.mentions(&l.var)) {
        return Err(not_affine(node, array, expected));
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
    Err(not_affine(node, array, expected))
}
