//! The lowering of annotated time loops to the IR, whichever dialect
//! annotated them: each dialect's front end says, as [`Found`] directives,
//! which time loops to pipeline (arrays, grid, halo), which spatial loops are
//! which dimension and where the set-up is done; this module reads the C they
//! annotate (declarations, loop headers, subscripts, scalars, reductions, host
//! statements) and builds the [`Program`].

pub mod calls;
mod context;
mod decls;
pub mod flat;
mod host;
mod loops;
mod macro_reads;
mod reductions;
mod scalars;
mod subscripts;

use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{body_items, span};
use crate::front::directives::{Directive, Found, PipelineClauses};
use crate::front::preprocess::Env;
use crate::front::types::Types;
use crate::ir::{
    Array, Extent, Grid, Halo, HostStatement, MAX_HALO, Pipeline, Program, Span, Sweep, TimeLoop,
};
use crate::text::count;
use tree_sitter::Node;

/// Lower the directives `found` of a C file (in file order) and the C they
/// annotate to a [`Program`]. `tree` is the parse of the file with its pragma
/// lines blanked out (see [`crate::front::pragmas`]); `source` is the file as
/// written; `env` what the preprocessor says about its macros and headers.
/// `missing`: what to say when no directive names a time loop.
pub fn lower(
    path: &str,
    source: &str,
    tree: &tree_sitter::Tree,
    found: &[Found],
    env: &Env,
    missing: impl FnOnce() -> Diagnostic,
) -> DiagResult<Program> {
    let types = Types::new(env, tree, source);
    let mut errors = Vec::new();
    let pipelines: Vec<&Found> = found
        .iter()
        .filter(|f| matches!(f.directive, Directive::Pipeline(_)))
        .collect();
    if pipelines.is_empty() {
        return Err(vec![missing()]);
    }
    // Every pipeline's time loop, or why it has none.
    let mut time_loops: Vec<Node> = Vec::new();
    for f in &pipelines {
        match f.stmt.filter(|n| n.kind() == "for_statement") {
            Some(n) => time_loops.push(n),
            None => errors.push(Diagnostic::new(
                f.span(),
                "`pipeline` must be followed by the time loop",
                "no `for` statement follows this directive",
                "put `#pragma tpace pipeline ...` directly above the `for` loop over time steps",
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    errors.extend(misplaced_directives(found, &pipelines, &time_loops));
    let init = init_line(source, found, &pipelines, &time_loops, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut lowered = Vec::new();
    for (f, time_loop) in pipelines.iter().zip(&time_loops) {
        let Directive::Pipeline(clauses) = &f.directive else {
            unreachable!("filtered to pipelines above")
        };
        match lower_pipeline(path, source, tree, found, f, clauses, *time_loop, &types) {
            Ok(p) => lowered.push(p),
            Err(d) => errors.extend(d),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // The functions the sweeps call run on the device too: each pipeline's, and all.
    let bodies = |p: &Pipeline| -> Vec<Span> { p.body.iter().map(|s| s.body.clone()).collect() };
    let all: Vec<Span> = lowered.iter().flat_map(bodies).collect();
    let (device_functions, device_constants) = calls::device_functions(tree, source, &all);
    for p in &mut lowered {
        let (mine, _) = calls::device_functions(tree, source, &bodies(p));
        p.device_functions = mine
            .iter()
            .filter_map(|m| device_functions.iter().position(|f| f.name == m.name))
            .collect();
    }
    Ok(Program {
        path: path.to_string(),
        source: source.to_string(),
        init,
        pipelines: lowered,
        declarations: Vec::new(),
        device_functions,
        device_constants,
        sweep_functions: Vec::new(),
        main: None,
        user_macros: scalars::macro_names(tree, source)
            .into_iter()
            .chain(env.user_macros.iter().cloned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        macros: env
            .macros
            .iter()
            .map(|(name, m)| crate::ir::Macro {
                name: name.clone(),
                params: m.params.clone(),
                body: m.body.clone(),
            })
            .collect(),
    })
}

/// Directives in places where they would be ignored or ambiguous: a pipeline
/// inside another's time loop, a `loop` outside every time loop or not above a
/// `for` loop.
fn misplaced_directives(
    found: &[Found],
    pipelines: &[&Found],
    time_loops: &[Node],
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let in_time_loop = |at: usize| time_loops.iter().any(|t| t.byte_range().contains(&at));
    for f in pipelines {
        if in_time_loop(f.line.span.start) {
            errors.push(Diagnostic::new(
                f.span(),
                "`pipeline` inside another pipeline's time loop",
                "nested pipeline",
                "pipelines run one after another, not inside each other: move this time loop \
                 out of the other one, or drop one of the two directives",
            ));
        }
    }
    for f in found {
        if !matches!(f.directive, Directive::Loop { .. }) {
            continue;
        }
        if !in_time_loop(f.line.span.start) {
            errors.push(Diagnostic::new(
                f.span(),
                "`loop` directive outside the pipelined time loop",
                "not inside the time loop",
                "`#pragma tpace loop dim(d)` belongs on the spatial loops inside the time loop",
            ));
        } else if f.stmt.is_none_or(|s| s.kind() != "for_statement") {
            errors.push(not_above_a_loop(f.span()));
        }
    }
    errors
}

fn not_above_a_loop(span: Span) -> Diagnostic {
    Diagnostic::new(
        span,
        "`loop` directive not followed by a `for` loop",
        "nothing to annotate",
        "put `#pragma tpace loop dim(d)` directly above a spatial `for` loop",
    )
}

/// The `init` line, if any. It marks where the program's set-up is done, so it
/// may stand anywhere outside the time loops (in `main` before a call to the
/// function that holds the pipeline, say), once, and not after a pipeline of
/// its own function (text order is execution order only within a function).
fn init_line(
    source: &str,
    found: &[Found],
    pipelines: &[&Found],
    time_loops: &[Node],
    errors: &mut Vec<Diagnostic>,
) -> Option<Span> {
    let inits: Vec<&Found> = found
        .iter()
        .filter(|f| f.directive == Directive::Init)
        .collect();
    let first = inits.first()?;
    for again in &inits[1..] {
        errors.push(Diagnostic::new(
            again.span(),
            "`init` is given twice",
            "second init",
            format!(
                "`#pragma tpace init` marks the one place where the program's set-up is done; \
                 keep the one at line {}",
                crate::diag::line_col(source, first.line.span.start).0
            ),
        ));
    }
    let at = first.line.span.start;
    if time_loops.iter().any(|t| t.byte_range().contains(&at)) {
        errors.push(Diagnostic::new(
            first.span(),
            "`init` inside a pipelined time loop",
            "misplaced init",
            "put `#pragma tpace init` where the set-up is done, before the time loop",
        ));
        return None;
    }
    let function = |node: Option<Node>| node.and_then(decls::enclosing_function).map(|f| f.id());
    let init_function = first
        .stmt
        .and_then(decls::enclosing_function)
        .map(|f| f.id());
    for (p, t) in pipelines.iter().zip(time_loops) {
        let same_function = init_function.is_some() && init_function == function(Some(*t));
        if same_function && p.line.span.start < at {
            errors.push(Diagnostic::new(
                first.span(),
                "`init` comes after the `pipeline` directive",
                "misplaced init",
                "put `#pragma tpace init` before the pipelined time loop",
            ));
        }
    }
    Some(first.span())
}

/// Lower one pipelined time loop.
#[allow(clippy::too_many_arguments)]
fn lower_pipeline(
    path: &str,
    source: &str,
    tree: &tree_sitter::Tree,
    found: &[Found],
    pipeline: &Found,
    clauses: &PipelineClauses,
    time_loop: Node,
    types: &Types,
) -> DiagResult<Pipeline> {
    let (grid, halo) = grid_and_halo(clauses, pipeline.span())?;
    let arrays = decls::listed_arrays(
        clauses,
        pipeline.span(),
        time_loop,
        tree,
        source,
        &grid,
        types,
    )?;
    check_declared_elems(clauses, &arrays, types)?;
    let mut time = loops::time_loop(time_loop, source)?;
    if let Some(named) = &clauses.time_var
        && named.name != time.var
    {
        return Err(vec![Diagnostic::new(
            named.span.clone(),
            format!(
                "the directive names `{}` as the time variable, but the loop below counts `{}`",
                named.name, time.var
            ),
            "not the time loop's counter",
            format!("name the time loop's own counter: step({}:...)", time.var),
        )]);
    }
    time.steps_hint = clauses.steps_hint.clone();
    let ctx = context::Context {
        grid: &grid,
        arrays: &arrays,
        time_var: &time.var,
        source,
        tree,
        at: time_loop,
        types,
    };
    if let Err(mut jumps) = loops::forbid_jumps(time_loop, source) {
        // A jump under a test of a reduction is a convergence test: say so.
        if let Ok((mut body, _, _)) = lower_body(time_loop, &ctx, found) {
            resolve_variables(
                &mut time, &mut body, &arrays, time_loop, tree, source, types,
            );
            let reductions = reductions::find(&mut body, tree, source);
            for d in &mut jumps {
                host::convergence_test(d, &reductions, time_loop, tree, source);
            }
        }
        return Err(jumps);
    }
    let (mut body, host, flats) = lower_body(time_loop, &ctx, found)?;
    let arrays = resolve_flat(arrays, &mut body, &flats, &grid, types)?;
    let arrays = drop_unused_components(arrays, &mut body);
    resolve_variables(
        &mut time, &mut body, &arrays, time_loop, tree, source, types,
    );
    let reductions = reductions::find(&mut body, tree, source);
    host::check(
        &host,
        &body,
        &reductions,
        &arrays,
        &time,
        tree,
        source,
        types.macros,
    )?;
    let halo = if clauses.halo_from_reads {
        halo_of_reads(&body, &arrays, grid.rank())?
    } else {
        halo
    };
    let bodies: Vec<Span> = body.iter().map(|s| s.body.clone()).collect();
    calls::check(&bodies, tree, source)?;
    let function = decls::enclosing_function(time_loop).map_or(0..0, span);
    let (line, col) = crate::diag::line_col(source, time_loop.start_byte());
    Ok(Pipeline {
        pragma: pipeline.span(),
        directives: clauses.lines.clone(),
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
        device_functions: Vec::new(),
    })
}

/// The flat arrays with what their accesses say: layout checks, components
/// (see [`flat::resolve`]).
fn resolve_flat(
    arrays: Vec<Array>,
    body: &mut [Sweep],
    flats: &[flat::FlatAccess],
    grid: &Grid,
    types: &Types,
) -> DiagResult<Vec<Array>> {
    if flats.is_empty() {
        return Ok(arrays);
    }
    // As written, and with macros expanded: a stride is the grid's if it is either.
    let read = |expand: bool| -> Option<Vec<crate::front::poly::Poly>> {
        grid.dims
            .iter()
            .map(|d| {
                let text = if expand {
                    types.macros.expand(&d.n)?
                } else {
                    d.n.clone()
                };
                subscripts::poly_of_text(&text)
            })
            .collect::<Option<Vec<_>>>()
            .filter(|e| flat::grid_strides(e).is_some())
    };
    let extents: Vec<Vec<crate::front::poly::Poly>> =
        [read(false), read(true)].into_iter().flatten().collect();
    if extents.is_empty() {
        let f = &flats[0];
        return Err(vec![Diagnostic::new(
            f.span.clone(),
            format!(
                "cannot read the `size` extents to check the flat subscript of `{}`",
                arrays[f.array].name
            ),
            "flat subscript",
            "write `size` extents as integer expressions of constants, variables, members and macros",
        )]);
    }
    flat::resolve(arrays, body, flats, grid, &extents)
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
    types: &Types,
) {
    let type_of = |var: &str, declared: &Option<String>| {
        declared
            .as_deref()
            .map(|t| types.scalar_text(t))
            .or_else(|| decls::scalar_type(var, time_loop, tree, source, types))
            .unwrap_or_else(|| "long".into())
    };
    time.var_type = type_of(&time.var, &time.declared_type);
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
        let replaced: Vec<crate::ir::Span> = sweep
            .step_values
            .iter()
            .map(|v| v.span.clone())
            .chain(sweep.accesses.iter().map(|a| a.span.clone()))
            .collect();
        let not_free = scalars::NotFree {
            bound: &bound,
            replaced: &replaced,
        };
        sweep.scalars =
            scalars::free_scalars(node, &not_free, arrays, time_loop, tree, source, types);
    }
}

fn grid_and_halo(clauses: &PipelineClauses, whole: Span) -> DiagResult<(Grid, Vec<Halo>)> {
    let Some((size, size_span)) = &clauses.size else {
        return Err(vec![Diagnostic::new(
            whole,
            "`pipeline` needs a `size` clause",
            "no size clause",
            "add size([lo:n]...) with the first index and extent of every dimension, e.g. size([0:X][0:Y])",
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
    if clauses.halo_from_reads && clauses.halo.is_none() {
        // The reach is read off the sweeps once they are lowered (`halo_of_reads`);
        // until then every read within tpace's widest halo is accepted.
        let dims: Vec<Extent> = size
            .iter()
            .map(|p| Extent {
                lo: p.first.clone(),
                n: p.second.clone(),
            })
            .collect();
        let wide = Halo {
            minus: MAX_HALO,
            plus: MAX_HALO,
        };
        return Ok((Grid { dims }, vec![wide; size.len()]));
    }
    let Some((halo, halo_span)) = &clauses.halo else {
        return Err(vec![Diagnostic::new(
            whole,
            "`pipeline` needs a `halo` clause",
            "no halo clause",
            "add halo([m:p]...) with the stencil's reach below and above per dimension, e.g. halo([1:1][1:1])",
        )]);
    };
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

/// The element types the directives declare against the program's own declarations.
fn check_declared_elems(
    clauses: &PipelineClauses,
    arrays: &[Array],
    types: &Types,
) -> DiagResult<()> {
    let mut errors = Vec::new();
    for (named, elem) in &clauses.declared_elems {
        let Some(array) = arrays.iter().find(|a| a.name == named.name) else {
            continue;
        };
        match types.elem(elem) {
            Ok(said) if said == array.elem => {}
            Ok(said) => errors.push(Diagnostic::new(
                named.span.clone(),
                format!(
                    "the directive declares `{}` of `{}`, but the program declares it of `{}`",
                    named.name,
                    said.c_name(),
                    array.elem.c_name()
                ),
                "element type differs",
                format!(
                    "write `{} {}[...]` in the directive, as the program declares it",
                    array.elem.c_name(),
                    named.name
                ),
            )),
            Err(why) => errors.push(Diagnostic::new(
                named.span.clone(),
                format!(
                    "the directive declares `{}` of `{elem}`, which is `{why}`",
                    named.name
                ),
                "not float or double",
                "tpace handles arrays of float and double",
            )),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The halo of a dialect that gives none (the stencil dialect): per dimension, the
/// farthest any read reaches below and above the point it updates.
fn halo_of_reads(body: &[Sweep], arrays: &[Array], rank: usize) -> DiagResult<Vec<Halo>> {
    let mut halo = vec![Halo::default(); rank];
    let mut errors = Vec::new();
    for acc in body.iter().flat_map(|s| &s.accesses) {
        if acc.kind != crate::ir::AccessKind::Read {
            continue;
        }
        for (pos, &off) in acc.offsets.iter().enumerate() {
            // unsigned_abs: an offset of i64::MIN has no i64 magnitude.
            if off.unsigned_abs() > MAX_HALO.unsigned_abs() {
                errors.push(Diagnostic::new(
                    acc.span.clone(),
                    format!(
                        "`{}` is read at offset {off} in dim({}); tpace handles a reach of at most {MAX_HALO} a step",
                        arrays[acc.array].display_name(),
                        rank - pos
                    ),
                    "too far from the point updated",
                    "split the step into sweeps that each read a nearer neighbourhood",
                ));
                continue;
            }
            halo[pos].minus = halo[pos].minus.max(-off);
            halo[pos].plus = halo[pos].plus.max(off);
        }
    }
    if errors.is_empty() {
        Ok(halo)
    } else {
        Err(errors)
    }
}

/// The sweeps and host statements of the time loop, and what the sweeps' flat accesses say.
type Body = (Vec<Sweep>, Vec<HostStatement>, Vec<flat::FlatAccess>);

fn lower_body(time_loop: Node, ctx: &context::Context, found: &[Found]) -> DiagResult<Body> {
    let source = ctx.source;
    let body = time_loop
        .child_by_field_name("body")
        .expect("a parsed for statement has a body");
    let mut sweeps = Vec::new();
    let mut host = Vec::new();
    let mut flats = Vec::new();
    let mut errors = Vec::new();
    let loop_dim = found_loops(found);
    for item in body_items(body) {
        match item.kind() {
            "comment" => {}
            kind if kind.starts_with("preproc") => errors.push(Diagnostic::new(
                loops::first_line(item, source),
                "unexpected preprocessor line in the time loop",
                "here",
                "only `#pragma` lines may appear in the time loop; move conditional compilation \
                 and macro definitions outside it",
            )),
            "for_statement" => match loop_dim(item) {
                Some((dim, pragma)) => match loops::sweep(item, dim, pragma, ctx, &loop_dim) {
                    Ok((s, f)) => {
                        sweeps.push(s);
                        flats.extend(f);
                    }
                    Err(d) => errors.extend(d),
                },
                None => errors.push(loops::missing_dim(item, source)),
            },
            // Any other statement runs on the host, in the replay of the time loop.
            _ => host.push(HostStatement {
                span: span(item),
                before: sweeps.len(),
            }),
        }
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
        Ok((sweeps, host, flats))
    } else {
        Err(errors)
    }
}

/// The `loop dim(d)` directive attached to a `for` statement: its dimension and line.
fn found_loops<'a, 't>(found: &'a [Found<'t>]) -> impl Fn(Node) -> Option<(usize, Span)> + 'a {
    move |node| {
        found
            .iter()
            .filter(|f| f.stmt == Some(node))
            .find_map(|f| match f.directive {
                Directive::Loop { dim, .. } => Some((dim, f.span())),
                _ => None,
            })
    }
}
