//! The time loop header and the spatial loop nests (sweeps) inside it.

use super::context::Context;
use super::flat::FlatAccess;
use super::subscripts;
use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{body_items, descendants, span, text};
use crate::ir::{HostStatement, Span, Sweep, SweepLoop, TimeLoop};
use crate::text::count;
use tree_sitter::Node;

/// The first line of a node, for diagnostics about a whole statement.
pub fn first_line(node: Node, source: &str) -> Span {
    let r = node.byte_range();
    let len = source[r.clone()].find('\n').unwrap_or(r.len());
    r.start..r.start + len
}

/// The header `for (...)` of a for statement: up to its `)`, without the pragma
/// lines or comments that may stand between it and its body.
fn header(node: Node, source: &str) -> Span {
    let body_start = node
        .child_by_field_name("body")
        .map_or(node.end_byte(), |b| b.start_byte());
    let mut cursor = node.walk();
    let end = node
        .children(&mut cursor)
        .filter(|c| c.end_byte() <= body_start && c.kind() != "comment")
        .map(|c| c.end_byte())
        .max()
        .unwrap_or(body_start);
    let r = node.start_byte()..end;
    let trimmed = source[r.clone()].trim_end().len();
    r.start..r.start + trimmed
}

/// Diagnostic for a spatial loop without `#pragma tpace loop dim(d)`.
pub fn missing_dim(for_node: Node, source: &str) -> Diagnostic {
    Diagnostic::new(
        header(for_node, source),
        "loop without `#pragma tpace loop dim(d)`",
        "which dimension does this loop iterate?",
        "put `#pragma tpace loop dim(d)` above every spatial loop, dim(1) on the innermost index",
    )
}

/// `var = start` (or `T var = start`), `var < end` / `var <= end`, `var++`.
struct Header {
    var: String,
    declared_type: Option<String>,
    start: String,
    end: String,
    inclusive: bool,
}

fn parse_header(node: Node, source: &str, what: &str, form: &str) -> Result<Header, Diagnostic> {
    let bad = || {
        Diagnostic::new(
            header(node, source),
            format!("{what} does not have the form `{form}`"),
            "unsupported loop header",
            format!("write the {what} as `{form}`, counting up by one"),
        )
    };
    let init = node.child_by_field_name("initializer").ok_or_else(bad)?;
    let (var, declared_type, start) = match init.kind() {
        "assignment_expression" => {
            let left = init.child_by_field_name("left").ok_or_else(bad)?;
            let op = init.child_by_field_name("operator").ok_or_else(bad)?;
            if left.kind() != "identifier" || text(op, source) != "=" {
                return Err(bad());
            }
            let right = init.child_by_field_name("right").ok_or_else(bad)?;
            (
                text(left, source).to_string(),
                None,
                text(right, source).to_string(),
            )
        }
        "declaration" => {
            let ty = init.child_by_field_name("type").ok_or_else(bad)?;
            let decl = init.child_by_field_name("declarator").ok_or_else(bad)?;
            let name = decl.child_by_field_name("declarator").ok_or_else(bad)?;
            let value = decl.child_by_field_name("value").ok_or_else(bad)?;
            if decl.kind() != "init_declarator" || name.kind() != "identifier" {
                return Err(bad());
            }
            (
                text(name, source).to_string(),
                Some(text(ty, source).to_string()),
                text(value, source).to_string(),
            )
        }
        _ => return Err(bad()),
    };
    let cond = node.child_by_field_name("condition").ok_or_else(bad)?;
    let (end, inclusive) = match cond.kind() {
        "binary_expression" => {
            let left = cond.child_by_field_name("left").ok_or_else(bad)?;
            let op = text(
                cond.child_by_field_name("operator").ok_or_else(bad)?,
                source,
            );
            let right = cond.child_by_field_name("right").ok_or_else(bad)?;
            if text(left, source) != var || !matches!(op, "<" | "<=") {
                return Err(bad());
            }
            (text(right, source).to_string(), op == "<=")
        }
        _ => return Err(bad()),
    };
    let update = node.child_by_field_name("update").ok_or_else(bad)?;
    let compact: String = text(update, source).split_whitespace().collect();
    let increments = [
        format!("{var}++"),
        format!("++{var}"),
        format!("{var}+=1"),
        format!("{var}={var}+1"),
    ];
    if !increments.contains(&compact) {
        return Err(bad());
    }
    Ok(Header {
        var,
        declared_type,
        start,
        end,
        inclusive,
    })
}

/// Read the time loop's header.
pub fn time_loop(node: Node, source: &str) -> DiagResult<TimeLoop> {
    let h = parse_header(node, source, "the time loop", "for (n = 0; n < N; n++)")
        .map_err(|d| vec![d])?;
    Ok(TimeLoop {
        form: crate::ir::TimeForm::For,
        var: h.var,
        var_type: h.declared_type.clone().unwrap_or_else(|| "long".into()),
        declared_type: h.declared_type,
        start: h.start,
        end: h.end,
        inclusive: h.inclusive,
        steps_hint: None,
        advance: None,
    })
}

/// Refuse jumps out of (or within) the time loop: with temporal blocking the
/// loop runs k steps on the device at a time, so it can not stop early.
pub fn forbid_jumps(time_loop: Node, source: &str) -> DiagResult<()> {
    let errors: Vec<Diagnostic> = descendants(time_loop)
        .into_iter()
        .filter_map(|n| {
            let word = match n.kind() {
                "break_statement" => "break",
                "continue_statement" => "continue",
                "return_statement" => "return",
                "goto_statement" => "goto",
                _ => return None,
            };
            Some(Diagnostic::new(
                first_line(n, source),
                format!("`{word}` inside the pipelined time loop"),
                "control leaves the regular loop structure here",
                "the step count must be fixed before the loop starts (tpace paper §3.2): \
                 remove the jump, or move the test after the time loop",
            ))
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Lower one loop nest whose outermost loop carries `loop dim(dim)`; also what
/// its flat accesses say beyond their offsets.
pub fn sweep(
    outer: Node,
    dim: usize,
    pragma: Span,
    ctx: &Context,
    loop_dim_of: &dyn Fn(Node) -> Option<(usize, Span)>,
) -> DiagResult<(Sweep, Vec<FlatAccess>)> {
    let (grid, source) = (ctx.grid, ctx.source);
    let rank = grid.rank();
    let mut loops = Vec::new();
    let (mut node, mut dim, mut pragma) = (outer, dim, pragma);
    // Names declared between the loops: (name, type, declaration).
    let mut between: Vec<(String, String, Node)> = Vec::new();
    let body = loop {
        let Some(pos) = grid.position_of_dim(dim) else {
            return Err(vec![Diagnostic::new(
                pragma,
                format!(
                    "`dim({dim})` but `size` declares {}",
                    count(rank, "dimension", "dimensions")
                ),
                "no such dimension",
                format!("number the loops dim(1) (innermost) to dim({rank}) (outermost)"),
            )]);
        };
        if let Some(prev) = loops.iter().find(|l: &&SweepLoop| l.pos == pos) {
            return Err(vec![Diagnostic::new(
                pragma,
                format!("duplicate `loop dim({dim})` in one loop nest"),
                format!("dimension already iterated by `{}`", prev.var),
                "each loop of a nest iterates a different dimension: dim(1) innermost, then dim(2), ...",
            )]);
        }
        let h = parse_header(node, source, "a spatial loop", "for (x = lo; x < hi; x++)")
            .map_err(|d| vec![d])?;
        loops.push(SweepLoop {
            pos,
            var: h.var,
            var_type: h.declared_type.clone().unwrap_or_else(|| "long".into()),
            declared_type: h.declared_type,
            lo: h.start,
            hi: if h.inclusive {
                format!("({}) + 1", h.end)
            } else {
                h.end
            },
            header: header(node, source),
            fixed: false,
        });
        let body = node
            .child_by_field_name("body")
            .expect("a parsed for statement has a body");
        let items: Vec<Node> = body_items(body)
            .into_iter()
            .filter(|n| n.kind() != "comment")
            .collect();
        // The next loop of the nest: the body's one statement, a `for` with its `loop dim`.
        let nested = items.iter().position(|n| loop_dim_of(*n).is_some());
        match nested {
            Some(i) => {
                // Besides the next loop, only declarations of inner loops' indices
                // (Parboil's `int j, k;` between its loops).
                for other in items.iter().filter(|n| **n != items[i]) {
                    match plain_declaration(*other, source) {
                        Some((ty, names)) if other.start_byte() < items[i].start_byte() => {
                            between.extend(names.into_iter().map(|n| (n, ty.clone(), *other)));
                        }
                        _ => {
                            return Err(vec![Diagnostic::new(
                                first_line(*other, source),
                                "loop nest is not perfectly nested",
                                "statement between the loops",
                                "put all statements of a sweep inside its innermost loop (only \
                                 declarations of the inner loops' indices may stand between the loops)",
                            )]);
                        }
                    }
                }
                (dim, pragma) = loop_dim_of(items[i]).expect("found as a loop directive");
                node = items[i];
            }
            None => {
                if let Some(inner) = descendants(body)
                    .into_iter()
                    .find(|n| n.kind() == "for_statement")
                {
                    return Err(vec![missing_dim(inner, source)]);
                }
                break body;
            }
        }
    };
    for (name, ty, decl) in between {
        match loops
            .iter_mut()
            .find(|l| l.var == name && l.header.start > decl.start_byte())
        {
            // Declared in the nest: the kernel declares it, the call site does not set it after.
            Some(l) => l.declared_type = Some(ty),
            None => {
                return Err(vec![Diagnostic::new(
                    first_line(decl, source),
                    "loop nest is not perfectly nested",
                    format!("`{name}` is not an index of an inner loop"),
                    "put all statements of a sweep inside its innermost loop (only declarations \
                     of the inner loops' indices may stand between the loops)",
                )]);
            }
        }
    }
    let fewer = loops.len() < rank;
    let too_few = |missing: &[String]| {
        Diagnostic::new(
            header(outer, source),
            format!(
                "loop nest has {} but `size` declares {}",
                count(loops.len(), "loop", "loops"),
                count(rank, "dimension", "dimensions")
            ),
            format!("no loop for {}", missing.join(", ")),
            "a sweep needs one loop per dimension of `size`, each marked with its dim(d), or \
             fewer loops and a constant index in the other dimensions of every access (`a[0][j]`)",
        )
    };
    let unlooped: Vec<String> = (0..rank)
        .filter(|p| !loops.iter().any(|l| l.pos == *p))
        .map(|p| format!("dim({})", rank - p))
        .collect();
    let found = match subscripts::accesses(body, &loops, ctx) {
        Ok(found) => found,
        // Accesses with fewer subscripts than `size`: the nest, not a fixed plane, is wrong.
        Err(d) if fewer && d.iter().any(|d| d.label == subscripts::WRONG_COUNT) => {
            return Err(vec![too_few(&unlooped)]);
        }
        Err(d) => return Err(d),
    };
    if fewer {
        // A lower-dimensional sweep: one plane in each dimension without a loop.
        let missing: Vec<String> = (0..rank)
            .filter(|p| !found.fixed.iter().any(|(f, _)| f == p))
            .filter(|p| !loops.iter().any(|l| l.pos == *p))
            .map(|p| format!("dim({})", rank - p))
            .collect();
        if !missing.is_empty() {
            return Err(vec![too_few(&missing)]);
        }
        // Outermost first, so that OpenACC's gang loop is the fixed one (one iteration).
        for (pos, index) in found.fixed.iter().rev() {
            loops.insert(
                0,
                SweepLoop {
                    pos: *pos,
                    var: format!("tp_fixed{pos}"),
                    declared_type: Some("long".into()),
                    var_type: "long".into(),
                    lo: format!("({index})"),
                    hi: format!("({index}) + 1"),
                    header: outer.start_byte()..outer.start_byte(),
                    fixed: true,
                },
            );
        }
    }
    let flops = count_flops(body, source, &found.accesses, &found.index_statements);
    let sweep = Sweep {
        span: span(outer),
        loops,
        body: span(body),
        accesses: found.accesses,
        flops,
        scalars: Vec::new(),
        step_values: found.step_values,
        call: None,
    };
    Ok((sweep, found.flat))
}

/// The time loop's host statements without the declarations of the sweeps'
/// loop indices (`int i;` in the loop body, above a nest over `i`): those
/// indices are the nests' own (the kernels declare them; the call site does not
/// set them after the loop, where they are out of scope).
pub fn loop_index_declarations(
    host: Vec<HostStatement>,
    sweeps: &mut [Sweep],
    ctx: &Context,
) -> Vec<HostStatement> {
    let root = ctx.tree.root_node();
    let mut kept = Vec::new();
    for (i, h) in host.iter().enumerate() {
        let node = root
            .descendant_for_byte_range(h.span.start, h.span.end)
            .filter(|n| n.byte_range() == h.span);
        let Some((ty, names)) = node.and_then(|n| plain_declaration(n, ctx.source)) else {
            kept.push(h.clone());
            continue;
        };
        // A sweep function's nests have indices of their own: only the loop's own nests.
        let later = |s: &Sweep| s.call.is_none() && s.span.start > h.span.start;
        let indexes = |name: &String| {
            sweeps
                .iter()
                .filter(|s| later(s))
                .any(|s| s.loops.iter().any(|l| !l.fixed && l.var == *name))
        };
        let elsewhere = |name: &String| {
            host.iter()
                .enumerate()
                .any(|(j, o)| j != i && crate::text::mentions(&ctx.source[o.span.clone()], name))
        };
        if !names.iter().all(|n| indexes(n) && !elsewhere(n)) {
            kept.push(h.clone());
            continue;
        }
        for s in sweeps.iter_mut().filter(|s| later(s)) {
            for l in s.loops.iter_mut() {
                if names.contains(&l.var) && l.declared_type.is_none() {
                    l.declared_type = Some(ty.clone());
                }
            }
        }
    }
    kept
}

/// A declaration of plain variables without initial values (`int j, k;`): its
/// type and names.
pub fn plain_declaration(node: Node, source: &str) -> Option<(String, Vec<String>)> {
    if node.kind() != "declaration" {
        return None;
    }
    let ty = text(node.child_by_field_name("type")?, source).to_string();
    let mut cursor = node.walk();
    let names: Option<Vec<String>> = node
        .children_by_field_name("declarator", &mut cursor)
        .map(|d| (d.kind() == "identifier").then(|| text(d, source).to_string()))
        .collect();
    names.filter(|n| !n.is_empty()).map(|n| (ty, n))
}

/// Arithmetic operators on values (subscript arithmetic excluded, the arguments
/// of a macro invocation that is an access, and the statements that compute
/// index variables).
fn count_flops(
    body: Node,
    source: &str,
    accesses: &[crate::ir::Access],
    index_statements: &[Span],
) -> u32 {
    let spans: std::collections::BTreeSet<(usize, usize)> = accesses
        .iter()
        .map(|a| (a.span.start, a.span.end))
        .chain(index_statements.iter().map(|s| (s.start, s.end)))
        .collect();
    let is_access = |n: Node| spans.contains(&(n.start_byte(), n.end_byte()));
    // Depth first with an "inside a subscript's index" flag, without recursion and
    // without walking back up the tree per node (deep expressions stay linear).
    let mut count = 0u32;
    let mut stack = vec![(body, false)];
    while let Some((n, in_index)) = stack.pop() {
        let op = match n.kind() {
            "binary_expression" | "assignment_expression" => n
                .child_by_field_name("operator")
                .map_or("", |o| text(o, source)),
            _ => "",
        };
        if !in_index && matches!(op, "+" | "-" | "*" | "/" | "+=" | "-=" | "*=" | "/=") {
            count = count.saturating_add(1);
        }
        let index = (n.kind() == "subscript_expression")
            .then(|| n.child_by_field_name("index"))
            .flatten();
        let inside = in_index || is_access(n);
        let mut cursor = n.walk();
        for child in n.named_children(&mut cursor) {
            stack.push((child, inside || Some(child) == index));
        }
    }
    count
}
