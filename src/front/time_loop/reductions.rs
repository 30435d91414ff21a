//! Reductions inside a sweep: an outside `float` or `double` variable that the
//! sweep only accumulates into, by statements of one of these forms (`e` does
//! not mention the variable):
//!
//! * sum: `s += e;`, `s = s + e;`, `s = e + s;` (also `s = s + e1 + e2;`);
//! * max: `m = fmax(m, e);`, `fmaxf`, either argument order, and
//!   `m = m > e ? m : e;`, `m = e > m ? e : m;`, with `<`, `>=`, `<=` mirrored;
//! * min: the same with `fmin`, `fminf`, or the comparison picking the smaller.
//!
//! Every use of the variable in the sweep must be in such a statement, all with
//! the same operator. Anything else stays [`ScalarRole::Carried`] and is refused.

use crate::front::cst::{descendants, span, text};
use crate::ir::{ElemType, ReduceOp, Reduction, ScalarRole, Sweep};
use tree_sitter::{Node, Tree};

/// Turn the carried `float`/`double` variables of each sweep that are only
/// accumulated into reductions (their role becomes [`ScalarRole::Reduction`]).
pub fn find(body: &mut [Sweep], tree: &Tree, source: &str) -> Vec<Reduction> {
    let root = tree.root_node();
    let mut out = Vec::new();
    for (s, sweep) in body.iter_mut().enumerate() {
        let Some(node) = root.descendant_for_byte_range(sweep.body.start, sweep.body.end) else {
            continue;
        };
        for sc in sweep
            .scalars
            .iter_mut()
            .filter(|s| s.role == ScalarRole::Carried)
        {
            let elem = match sc.ty.as_deref().and_then(|t| t.split_whitespace().last()) {
                Some("float") => ElemType::Float,
                Some("double") => ElemType::Double,
                _ => continue,
            };
            if let Some((op, first)) = classify(node, &sc.name, source) {
                sc.role = ScalarRole::Reduction;
                out.push(Reduction {
                    var: sc.name.clone(),
                    elem,
                    op,
                    sweep: s,
                    span: first,
                });
            }
        }
    }
    out
}

/// The operator if every use of `var` in `body` is an accepted update statement,
/// and the span of the first one.
fn classify(body: Node, var: &str, source: &str) -> Option<(ReduceOp, crate::ir::Span)> {
    let uses: Vec<Node> = descendants(body)
        .into_iter()
        .filter(|n| n.kind() == "identifier" && text(*n, source) == var)
        .collect();
    let mut op = None;
    let mut first = None;
    for u in &uses {
        let assign = u.parent()?;
        if assign.kind() != "assignment_expression" || assign.child_by_field_name("left")? != *u {
            // A use on the right of an update is checked with its statement.
            let stmt = enclosing_update(*u, var, source)?;
            if !uses.iter().any(|w| w.parent() == Some(stmt)) {
                return None;
            }
            continue;
        }
        if assign.parent()?.kind() != "expression_statement" {
            return None;
        }
        let this = update_op(assign, var, source)?;
        if op.is_some_and(|o| o != this) {
            return None;
        }
        op = Some(this);
        first.get_or_insert_with(|| span(assign.parent().expect("checked above")));
    }
    Some((op?, first?))
}

/// The assignment `var = ...` whose right side holds `node`, if it is one of the accepted forms.
fn enclosing_update<'t>(node: Node<'t>, var: &str, source: &str) -> Option<Node<'t>> {
    let mut at = node.parent();
    while let Some(n) = at {
        if n.kind() == "assignment_expression" {
            let left = n.child_by_field_name("left")?;
            return (text(left, source) == var && update_op(n, var, source).is_some()).then_some(n);
        }
        at = n.parent();
    }
    None
}

/// The operator of `var OP= ...` if the assignment is an accepted update form.
fn update_op(assign: Node, var: &str, source: &str) -> Option<ReduceOp> {
    let operator = assign
        .child_by_field_name("operator")
        .map_or("=", |o| text(o, source));
    let right = strip(assign.child_by_field_name("right")?);
    match operator {
        "+=" => (!mentions(right, var, source)).then_some(ReduceOp::Sum),
        "=" => match right.kind() {
            "binary_expression" => sum_chain(right, var, source),
            "call_expression" => min_max_call(right, var, source),
            "conditional_expression" => min_max_conditional(right, var, source),
            _ => None,
        },
        _ => None,
    }
}

/// `var + e1 + e2`, `e + var`: a chain of `+` in which `var` is one whole operand, once.
fn sum_chain(expr: Node, var: &str, source: &str) -> Option<ReduceOp> {
    let mut operands = Vec::new();
    let mut stack = vec![expr];
    while let Some(n) = stack.pop() {
        let n = strip(n);
        let is_plus = n.kind() == "binary_expression"
            && n.child_by_field_name("operator")
                .is_some_and(|o| text(o, source) == "+");
        if is_plus {
            stack.push(n.child_by_field_name("left")?);
            stack.push(n.child_by_field_name("right")?);
        } else {
            operands.push(n);
        }
    }
    let whole = operands.iter().filter(|o| is_var(**o, var, source)).count();
    let inside = operands
        .iter()
        .filter(|o| !is_var(**o, var, source) && mentions(**o, var, source))
        .count();
    (whole == 1 && inside == 0).then_some(ReduceOp::Sum)
}

/// `fmax(var, e)`, `fminf(e, var)`, ...
fn min_max_call(call: Node, var: &str, source: &str) -> Option<ReduceOp> {
    let op = match text(call.child_by_field_name("function")?, source) {
        "fmax" | "fmaxf" => ReduceOp::Max,
        "fmin" | "fminf" => ReduceOp::Min,
        _ => return None,
    };
    let args = call.child_by_field_name("arguments")?;
    let mut cursor = args.walk();
    let list: Vec<Node> = args.named_children(&mut cursor).collect();
    let [a, b] = list.as_slice() else {
        return None;
    };
    let (a, b) = (strip(*a), strip(*b));
    let ok = (is_var(a, var, source) && !mentions(b, var, source))
        || (is_var(b, var, source) && !mentions(a, var, source));
    ok.then_some(op)
}

/// `L > R ? L : R` (max), `L > R ? R : L` (min), with `<`, `>=`, `<=`, where one of
/// `L`, `R` is `var` and the other does not mention it.
fn min_max_conditional(cond_expr: Node, var: &str, source: &str) -> Option<ReduceOp> {
    let cond = strip(cond_expr.child_by_field_name("condition")?);
    let yes = strip(cond_expr.child_by_field_name("consequence")?);
    let no = strip(cond_expr.child_by_field_name("alternative")?);
    if cond.kind() != "binary_expression" {
        return None;
    }
    let l = strip(cond.child_by_field_name("left")?);
    let r = strip(cond.child_by_field_name("right")?);
    let greater = match text(cond.child_by_field_name("operator")?, source) {
        ">" | ">=" => true,
        "<" | "<=" => false,
        _ => return None,
    };
    let (e, _) = if is_var(l, var, source) {
        (r, l)
    } else if is_var(r, var, source) {
        (l, r)
    } else {
        return None;
    };
    if mentions(e, var, source) {
        return None;
    }
    let same = |a: Node, b: Node| squeeze(text(a, source)) == squeeze(text(b, source));
    // true when the condition holding picks the larger of L and R.
    let picks_l = if same(yes, l) && same(no, r) {
        true
    } else if same(yes, r) && same(no, l) {
        false
    } else {
        return None;
    };
    Some(if picks_l == greater {
        ReduceOp::Max
    } else {
        ReduceOp::Min
    })
}

/// `node` without enclosing parentheses.
fn strip(mut node: Node) -> Node {
    while node.kind() == "parenthesized_expression" {
        match node.named_child(0) {
            Some(inner) => node = inner,
            None => break,
        }
    }
    node
}

fn is_var(node: Node, var: &str, source: &str) -> bool {
    node.kind() == "identifier" && text(node, source) == var
}

fn mentions(node: Node, var: &str, source: &str) -> bool {
    descendants(node)
        .iter()
        .any(|n| n.kind() == "identifier" && text(*n, source) == var)
}

fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
