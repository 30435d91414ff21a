//! Front end for the `#pragma tpace` dialect (the tpace paper, §3.3): finds the
//! pipelined time loop and its sweeps in a C file and lowers them to the IR.

pub mod clauses;
mod decls;
mod host;
mod loops;
mod reductions;
mod scalars;
mod subscripts;

use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{self, body_items, span, text};
use crate::ir::{
    Array, Extent, Grid, Halo, HostStatement, Intent, Pipeline, Program, Sweep, TimeLoop,
};
use clauses::{Directive, PipelineClauses};
use tree_sitter::Node;

/// Widest halo, per side and dimension, that a `halo` clause may declare.
pub const MAX_HALO: i64 = 64;

/// A `#pragma tpace` line found in the tree.
struct Found<'t> {
    node: Node<'t>,
    directive: Directive,
}

/// Whether the text after `#pragma` belongs to the tpace dialect.
pub fn is_tpace_pragma(arg: &str) -> bool {
    let arg = arg.trim_start();
    arg.strip_prefix("tpace")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

/// Lower a parsed C file with tpace directives to a [`Program`].
pub fn lower(path: &str, source: &str, tree: &tree_sitter::Tree) -> DiagResult<Program> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for node in cst::descendants(tree.root_node()) {
        if let Some(arg) = pragma_arg(node, source)
            && is_tpace_pragma(text(arg, source))
        {
            match clauses::parse_directive(text(arg, source), arg.start_byte()) {
                Ok(directive) => found.push(Found { node, directive }),
                Err(d) => errors.push(d),
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let pipelines: Vec<&Found> = found
        .iter()
        .filter(|f| matches!(f.directive, Directive::Pipeline(_)))
        .collect();
    let pipeline = match pipelines.as_slice() {
        [one] => *one,
        [] => return Err(vec![missing_pipeline(source, &found)]),
        [_, second, ..] => {
            return Err(vec![Diagnostic::new(
                span(second.node),
                "more than one `pipeline` directive",
                "second pipeline",
                "tpace pipelines one time loop per file; move other stencils to their own file",
            )]);
        }
    };
    let Directive::Pipeline(clauses) = &pipeline.directive else {
        unreachable!("filtered to pipelines above")
    };
    let init_node = found.iter().find(|f| f.directive == Directive::Init);
    let init = init_node.map(|f| pragma_line(f.node, source));
    if let Some(f) = init_node
        && f.node.start_byte() > pipeline.node.start_byte()
    {
        return Err(vec![Diagnostic::new(
            pragma_line(f.node, source),
            "`init` comes after the `pipeline` directive",
            "misplaced init",
            "put `#pragma tpace init` before the pipelined time loop",
        )]);
    }
    let time_loop = next_statement(pipeline.node).filter(|n| n.kind() == "for_statement");
    let Some(time_loop) = time_loop else {
        return Err(vec![Diagnostic::new(
            pragma_line(pipeline.node, source),
            "`pipeline` must be followed by the time loop",
            "no `for` statement follows this directive",
            "put `#pragma tpace pipeline ...` directly above the `for` loop over time steps",
        )]);
    };
    // `loop` directives outside the time loop would be silently ignored: say so.
    for f in &found {
        if matches!(f.directive, Directive::Loop { .. }) && !inside(f.node, time_loop) {
            errors.push(Diagnostic::new(
                pragma_line(f.node, source),
                "`loop` directive outside the pipelined time loop",
                "not inside the time loop",
                "`#pragma tpace loop dim(d)` belongs on the spatial loops inside the time loop",
            ));
        }
    }
    let grid_and_halo = grid_and_halo(clauses, pipeline.node, source);
    let (grid, halo) = match grid_and_halo {
        Ok(v) => v,
        Err(d) => return Err(errors.into_iter().chain(d).collect()),
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    let arrays = decls::listed_arrays(clauses, pipeline.node, tree, source, grid.rank())?;
    let mut time = loops::time_loop(time_loop, source)?;
    let ctx = loops::Context {
        grid: &grid,
        arrays: &arrays,
        time_var: &time.var,
        source,
        tree,
        at: time_loop,
    };
    if let Err(mut jumps) = loops::forbid_jumps(time_loop, source) {
        // A jump under a test of a reduction is a convergence test: say so.
        if let Ok((mut body, _)) = lower_body(time_loop, &ctx, &found) {
            resolve_variables(&mut time, &mut body, &arrays, time_loop, tree, source);
            let reductions = reductions::find(&mut body, tree, source);
            for d in &mut jumps {
                host::convergence_test(d, &reductions, time_loop, tree, source);
            }
        }
        return Err(jumps);
    }
    let (mut body, host) = lower_body(time_loop, &ctx, &found)?;
    let arrays = drop_unused_components(arrays, &mut body);
    resolve_variables(&mut time, &mut body, &arrays, time_loop, tree, source);
    let reductions = reductions::find(&mut body, tree, source);
    host::check(&host, &body, &reductions, &arrays, &time, tree, source)?;
    let function = decls::enclosing_function(time_loop).map_or(0..0, span);
    let (line, col) = crate::diag::line_col(source, time_loop.start_byte());
    Ok(Program {
        path: path.to_string(),
        source: source.to_string(),
        init,
        pipeline: Pipeline {
            pragma: pragma_line(pipeline.node, source),
            stmt: span(time_loop),
            function,
            location: format!("{path}:{line}:{col}"),
            time,
            grid,
            halo,
            arrays,
            body,
            host,
            reductions,
            asynchronous: clauses.asynchronous,
        },
    })
}

/// The listed arrays without the components no sweep uses (they stay on the
/// host, untouched), with every access renumbered to match.
fn drop_unused_components(arrays: Vec<Array>, body: &mut [Sweep]) -> Vec<Array> {
    let used = |a: usize| body.iter().any(|s| s.accesses.iter().any(|x| x.array == a));
    let keep: Vec<bool> = (0..arrays.len())
        .map(|a| arrays[a].component.is_none() || used(a))
        .collect();
    let mut renumber = vec![usize::MAX; arrays.len()];
    let mut next = 0;
    for (a, k) in keep.iter().enumerate() {
        if *k {
            renumber[a] = next;
            next += 1;
        }
    }
    for sweep in body.iter_mut() {
        for acc in &mut sweep.accesses {
            acc.array = renumber[acc.array];
        }
    }
    arrays
        .into_iter()
        .zip(keep)
        .filter_map(|(a, k)| k.then_some(a))
        .collect()
}

/// Types of the counters declared before the loops, and each sweep's free variables.
fn resolve_variables(
    time: &mut TimeLoop,
    body: &mut [Sweep],
    arrays: &[Array],
    time_loop: Node,
    tree: &tree_sitter::Tree,
    source: &str,
) {
    let type_of = |var: &str, declared: &Option<String>| {
        declared
            .clone()
            .or_else(|| decls::scalar_type(var, time_loop, tree, source))
            .unwrap_or_else(|| "long".into())
    };
    time.var_type = type_of(&time.var, &time.declared_type);
    let macros = scalars::macro_names(tree, source);
    let root = tree.root_node();
    for sweep in body {
        for l in &mut sweep.loops {
            l.var_type = type_of(&l.var, &l.declared_type);
        }
        let mut bound: std::collections::BTreeSet<String> =
            sweep.loops.iter().map(|l| l.var.clone()).collect();
        bound.insert(time.var.clone());
        let Some(node) = root.descendant_for_byte_range(sweep.body.start, sweep.body.end) else {
            continue;
        };
        let step_spans: Vec<crate::ir::Span> =
            sweep.step_values.iter().map(|v| v.span.clone()).collect();
        let not_free = scalars::NotFree {
            bound: &bound,
            step_values: &step_spans,
        };
        sweep.scalars =
            scalars::free_scalars(node, &not_free, arrays, &macros, time_loop, tree, source);
    }
}

/// The `preproc_arg` of a `#pragma` line.
fn pragma_arg<'t>(node: Node<'t>, source: &str) -> Option<Node<'t>> {
    if node.kind() != "preproc_call" {
        return None;
    }
    let directive = node.child_by_field_name("directive")?;
    (text(directive, source) == "#pragma")
        .then(|| node.child_by_field_name("argument"))
        .flatten()
}

/// The span of a pragma line without its trailing newline.
fn pragma_line(node: Node, source: &str) -> std::ops::Range<usize> {
    let r = node.byte_range();
    let trimmed = source[r.clone()].trim_end().len();
    r.start..r.start + trimmed
}

fn inside(node: Node, outer: Node) -> bool {
    node.start_byte() >= outer.start_byte() && node.end_byte() <= outer.end_byte()
}

/// The statement after `node` among its siblings, skipping comments.
fn next_statement(node: Node) -> Option<Node> {
    let mut next = node.next_named_sibling();
    while let Some(n) = next {
        if n.kind() != "comment" {
            return Some(n);
        }
        next = n.next_named_sibling();
    }
    None
}

fn missing_pipeline(source: &str, found: &[Found]) -> Diagnostic {
    let at = found
        .first()
        .map_or(0..source.find('\n').unwrap_or(source.len()), |f| {
            pragma_line(f.node, source)
        });
    Diagnostic::new(
        at,
        "no `#pragma tpace pipeline` directive",
        "tpace found no pipelined time loop",
        "put `#pragma tpace pipeline targetinout(...) size(...) halo(...)` above the time loop",
    )
}

fn grid_and_halo(
    clauses: &PipelineClauses,
    pragma: Node,
    source: &str,
) -> DiagResult<(Grid, Vec<Halo>)> {
    let whole = pragma_line(pragma, source);
    let Some((size, size_span)) = &clauses.size else {
        return Err(vec![Diagnostic::new(
            whole,
            "`pipeline` needs a `size` clause",
            "no size clause",
            "add size([lo:n]...) with the first index and extent of every dimension, e.g. size([0:X][0:Y])",
        )]);
    };
    let Some((halo, halo_span)) = &clauses.halo else {
        return Err(vec![Diagnostic::new(
            whole,
            "`pipeline` needs a `halo` clause",
            "no halo clause",
            "add halo([m:p]...) with the stencil's reach below and above per dimension, e.g. halo([1:1][1:1])",
        )]);
    };
    if size.is_empty() || size.len() > 3 {
        return Err(vec![Diagnostic::new(
            size_span.clone(),
            format!(
                "`size` has {}; tpace handles 1 to 3",
                count(size.len(), "dimension", "dimensions")
            ),
            "here",
            "give one [lo:n] pair per spatial dimension",
        )]);
    }
    if halo.len() != size.len() {
        return Err(vec![Diagnostic::new(
            halo_span.clone(),
            format!(
                "`halo` has {} but `size` has {}",
                count(halo.len(), "dimension", "dimensions"),
                size.len()
            ),
            "rank mismatch",
            "give one [m:p] pair per dimension, in the same order as `size`",
        )]);
    }
    let mut halos = Vec::new();
    for pair in halo {
        let parse = |t: &str| t.parse::<i64>().ok().filter(|v| (0..=MAX_HALO).contains(v));
        match (parse(&pair.first), parse(&pair.second)) {
            (Some(minus), Some(plus)) => halos.push(Halo { minus, plus }),
            _ => {
                return Err(vec![Diagnostic::new(
                    pair.span.clone(),
                    format!("halo widths must be integer constants between 0 and {MAX_HALO}"),
                    "not a constant width",
                    "write the stencil's reach as numbers, e.g. halo([1:1])",
                )]);
            }
        }
    }
    let dims = size
        .iter()
        .map(|p| Extent {
            lo: p.first.clone(),
            n: p.second.clone(),
        })
        .collect();
    Ok((Grid { dims }, halos))
}

fn lower_body(
    time_loop: Node,
    ctx: &loops::Context,
    found: &[Found],
) -> DiagResult<(Vec<Sweep>, Vec<HostStatement>)> {
    let source = ctx.source;
    let body = time_loop
        .child_by_field_name("body")
        .expect("a parsed for statement has a body");
    let mut sweeps = Vec::new();
    let mut host = Vec::new();
    let mut errors = Vec::new();
    let mut pending_dim: Option<(usize, Node)> = None;
    for item in body_items(body) {
        match item.kind() {
            "comment" => {}
            "preproc_call" => {
                let dir = found.iter().find(|f| f.node == item).map(|f| &f.directive);
                match dir {
                    Some(Directive::Loop { dim, .. }) => pending_dim = Some((*dim, item)),
                    _ => errors.push(Diagnostic::new(
                        pragma_line(item, source),
                        "unexpected preprocessor line in the time loop",
                        "here",
                        "only `#pragma tpace loop dim(d)` lines may appear in the time loop",
                    )),
                }
            }
            "for_statement" => match pending_dim.take() {
                Some((dim, pragma)) => {
                    match loops::sweep(item, dim, pragma, ctx, found_loops(found)) {
                        Ok(s) => sweeps.push(s),
                        Err(d) => errors.extend(d),
                    }
                }
                None => errors.push(loops::missing_dim(item, source)),
            },
            // Any other statement runs on the host, in the replay of the time loop.
            _ => match pending_dim.take() {
                Some((_, pragma)) => errors.push(Diagnostic::new(
                    pragma_line(pragma, source),
                    "`loop` directive not followed by a `for` loop",
                    "nothing to annotate",
                    "put `#pragma tpace loop dim(d)` directly above a spatial `for` loop",
                )),
                None => host.push(HostStatement {
                    span: span(item),
                    before: sweeps.len(),
                }),
            },
        }
    }
    if let Some((_, pragma)) = pending_dim {
        errors.push(Diagnostic::new(
            pragma_line(pragma, source),
            "`loop` directive not followed by a `for` loop",
            "nothing to annotate",
            "put `#pragma tpace loop dim(d)` directly above a spatial `for` loop",
        ));
    }
    if errors.is_empty() && sweeps.is_empty() {
        errors.push(Diagnostic::new(
            loops::first_line(time_loop, source),
            "the time loop holds no sweep",
            "no loop nest marked with `#pragma tpace loop`",
            "mark each spatial loop with `#pragma tpace loop dim(d)`, dim(1) the innermost",
        ));
    }
    if errors.is_empty() {
        Ok((sweeps, host))
    } else {
        Err(errors)
    }
}

/// The `loop dim(d)` pragma nodes and their dimension.
fn found_loops<'a, 't>(found: &'a [Found<'t>]) -> impl Fn(Node) -> Option<usize> + 'a {
    move |node| {
        found
            .iter()
            .find(|f| f.node == node)
            .and_then(|f| match f.directive {
                Directive::Loop { dim, .. } => Some(dim),
                _ => None,
            })
    }
}

/// `n` and a noun, singular or plural: `1 dimension`, `2 dimensions`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Intent of each listed name, for messages.
pub(crate) fn intent_word(intent: Intent) -> &'static str {
    match intent {
        Intent::InOut => "targetinout",
        Intent::In => "targetin",
    }
}
