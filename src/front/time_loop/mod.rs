//! The lowering of annotated time loops to the IR, whichever dialect
//! annotated them: each dialect's front end says, as [`Found`] directives,
//! which time loops to pipeline (arrays, grid, halo), which spatial loops are
//! which dimension and where the set-up is done; this module reads the C they
//! annotate (declarations, loop headers, subscripts, scalars, reductions, host
//! statements) and builds the [`Program`].

pub mod calls;
mod context;
pub mod counted;
mod decls;
pub mod flat;
mod host;
mod index_vars;
mod loops;
mod macro_reads;
mod reductions;
mod rotation;
mod scalars;
mod subscripts;
mod sweep_calls;
mod tables;

use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{body_items, span};
use crate::front::directives::{Directive, Found, PipelineClauses};
use crate::front::preprocess::Env;
use crate::front::types::Types;
use crate::ir::{
    Array, Extent, Grid, Halo, HostStatement, MAX_HALO, Pipeline, Program, Span, Sweep,
    SweepFunction, TimeLoop,
};
use crate::text::count;
use std::collections::BTreeMap;
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
        match f.stmt.filter(|n| is_time_loop(*n)) {
            Some(n) => time_loops.push(n),
            None => errors.push(Diagnostic::new(
                f.span(),
                "`pipeline` must be followed by the time loop",
                "no `for`, `while` or `do` statement follows this directive",
                "put `#pragma tpace pipeline ...` directly above the loop over time steps",
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let sweep_fns = sweep_calls::sweep_functions(found, &time_loops, tree, source);
    errors.extend(misplaced_directives(found, &pipelines, &time_loops));
    errors.extend(sweep_calls::misplaced_loops(
        found,
        &time_loops,
        &sweep_fns,
        tree,
        source,
    ));
    let init = init_line(source, found, &pipelines, &time_loops, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut lowered = Vec::new();
    for (f, time_loop) in pipelines.iter().zip(&time_loops) {
        let Directive::Pipeline(clauses) = &f.directive else {
            unreachable!("filtered to pipelines above")
        };
        let scope = Scope {
            path,
            source,
            tree,
            found,
            types: &types,
            sweep_fns: &sweep_fns,
        };
        match lower_pipeline(&scope, f, clauses, *time_loop) {
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
    let sweep_functions = called_sweep_functions(&lowered, &sweep_fns, found);
    Ok(Program {
        path: path.to_string(),
        source: source.to_string(),
        init,
        pipelines: lowered,
        declarations: Vec::new(),
        device_functions,
        device_constants,
        sweep_functions,
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

/// Whether a statement can be a time loop: a `for`, `while` or `do` loop.
pub fn is_time_loop(node: Node) -> bool {
    matches!(
        node.kind(),
        "for_statement" | "while_statement" | "do_statement"
    )
}

/// Directives in places where they would be ignored or ambiguous: a pipeline
/// inside another's time loop, a `loop` not above a `for` loop (one outside
/// every time loop and every sweep function is refused by
/// [`sweep_calls::misplaced_loops`]).
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
        // Outside every time loop: in a sweep function, or refused (sweep_calls).
        if f.stmt.is_none_or(|s| s.kind() != "for_statement") {
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

/// What every pipeline of a file is lowered in.
struct Scope<'a, 't> {
    path: &'a str,
    source: &'a str,
    tree: &'t tree_sitter::Tree,
    found: &'a [Found<'t>],
    types: &'a Types<'a>,
    /// The functions of the file that hold sweeps, by name.
    sweep_fns: &'a BTreeMap<String, Node<'t>>,
}

/// The sweep functions the pipelines call, each once, with their directive lines.
fn called_sweep_functions(
    pipelines: &[Pipeline],
    sweep_fns: &BTreeMap<String, Node>,
    found: &[Found],
) -> Vec<SweepFunction> {
    let mut out: Vec<SweepFunction> = Vec::new();
    for call in pipelines
        .iter()
        .flat_map(|p| &p.body)
        .filter_map(|s| s.call.as_ref())
    {
        let Some(def) = sweep_fns.get(&call.function) else {
            continue;
        };
        if out.iter().any(|f| f.name == call.function) {
            continue;
        }
        let definition = span(*def);
        let directives = found
            .iter()
            .filter(|f| definition.contains(&f.line.span.start))
            .map(|f| f.span())
            .collect();
        out.push(SweepFunction {
            name: call.function.clone(),
            definition,
            directives,
        });
    }
    out.sort_by_key(|f| f.definition.start);
    out
}

/// Lower one pipelined time loop.
fn lower_pipeline<'t>(
    scope: &Scope<'_, 't>,
    pipeline: &Found,
    clauses: &PipelineClauses,
    time_loop: Node<'t>,
) -> DiagResult<Pipeline> {
    let (path, source, tree, found, types) = (
        scope.path,
        scope.source,
        scope.tree,
        scope.found,
        scope.types,
    );
    let (grid, halo) = grid_and_halo(clauses, pipeline.span())?;
    // `targetin` arrays the sweeps read only as per-step values (FDTD's `_fict_[t]`)
    // are no grid arrays: the host reads them at each step, as if they were not listed.
    let tables = read_time_loop(time_loop, source)
        .map(|t| tables::per_step_tables(clauses, time_loop, &t.var, source))
        .unwrap_or_default();
    let mut grid_clauses = clauses.clone();
    grid_clauses.targetin.retain(|n| !tables.contains(&n.name));
    let clauses = &grid_clauses;
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
    let mut time = read_time_loop(time_loop, source)?;
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
    let no_bindings = context::Bindings::default();
    let ctx = context::Context {
        grid: &grid,
        arrays: &arrays,
        time_var: &time.var,
        source,
        tree,
        at: time_loop,
        types,
        bindings: &no_bindings,
    };
    if let Err(mut jumps) = loops::forbid_jumps(time_loop, source) {
        // A jump under a test of a reduction is a convergence test: say so.
        if let Ok(Lowered {
            mut sweeps, bound, ..
        }) = lower_body(time_loop, &ctx, found, scope.sweep_fns)
        {
            let body = &mut sweeps;
            resolve_variables(
                &mut time, body, &bound, &arrays, time_loop, tree, source, types,
            );
            let reductions = reductions::find(body, tree, source);
            for d in &mut jumps {
                host::convergence_test(d, &reductions, time_loop, tree, source);
            }
        }
        return Err(jumps);
    }
    let Lowered {
        sweeps: mut body,
        host,
        flats,
        bound,
    } = lower_body(time_loop, &ctx, found, scope.sweep_fns)?;
    counted::check_reads_after_advance(&time, &body, source)?;
    let arrays = with_parameter_checks(arrays, &bound);
    let arrays = resolve_flat(arrays, &mut body, &flats, &grid, types)?;
    let arrays = drop_unused_components(arrays, &mut body);
    resolve_variables(
        &mut time, &mut body, &bound, &arrays, time_loop, tree, source, types,
    );
    let mut errors = Vec::new();
    for (sweep, b) in body.iter_mut().zip(&bound) {
        if let Some(b) = b
            && let Err(d) = sweep_calls::check_scalars(sweep, b, time_loop, tree, source)
        {
            errors.extend(d);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let reductions = reductions::find(&mut body, tree, source);
    reductions_in_calls(&reductions, &body)?;
    // Pointers exchanged at the end of the step: a rotation, not host code to refuse.
    let (rotation, exchanges) =
        match rotation::find(&host, body.len(), &arrays, time_loop, tree, source, types)? {
            Some((r, used)) => (Some(r), used),
            None => (None, Vec::new()),
        };
    let others: Vec<HostStatement> = host
        .iter()
        .enumerate()
        .filter(|(i, _)| !exchanges.contains(i))
        .map(|(_, h)| h.clone())
        .collect();
    host::check(
        &others,
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
        rotation,
    })
}

/// The time loop's counter and trip count, whichever way the loop is written.
fn read_time_loop(time_loop: Node, source: &str) -> DiagResult<TimeLoop> {
    if time_loop.kind() == "for_statement" {
        loops::time_loop(time_loop, source)
    } else {
        counted::time_loop(time_loop, source)
    }
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

/// Types of the counters declared before the loops, and each sweep's free
/// variables; a sweep of a sweep function (`bound`, per sweep) is read where it
/// stands, with the arrays under the function's names.
#[allow(clippy::too_many_arguments)]
fn resolve_variables(
    time: &mut TimeLoop,
    body: &mut [Sweep],
    bound: &[Option<sweep_calls::Bound>],
    arrays: &[Array],
    time_loop: Node,
    tree: &tree_sitter::Tree,
    source: &str,
    types: &Types,
) {
    let type_of = |var: &str, declared: &Option<String>, at: Node| {
        declared
            .as_deref()
            .map(|t| types.scalar_text(t))
            .or_else(|| decls::scalar_type(var, at, tree, source, types))
            .unwrap_or_else(|| "long".into())
    };
    time.var_type = type_of(&time.var, &time.declared_type, time_loop);
    let root = tree.root_node();
    for (i, sweep) in body.iter_mut().enumerate() {
        let call = bound.get(i).and_then(Option::as_ref);
        let at = match call {
            Some(_) => root
                .descendant_for_byte_range(sweep.span.start, sweep.span.end)
                .unwrap_or(time_loop),
            None => time_loop,
        };
        for l in &mut sweep.loops {
            l.var_type = type_of(&l.var, &l.declared_type, at);
        }
        let mut names: std::collections::BTreeSet<String> =
            sweep.loops.iter().map(|l| l.var.clone()).collect();
        if call.is_none() {
            names.insert(time.var.clone());
        }
        let Some(node) = root.descendant_for_byte_range(sweep.body.start, sweep.body.end) else {
            continue;
        };
        let replaced: Vec<crate::ir::Span> = sweep
            .step_values
            .iter()
            .map(|v| v.span.clone())
            // A kept subscript stays in the kernel: the names in it are the kernel's.
            .chain(
                sweep
                    .accesses
                    .iter()
                    .filter(|a| a.kept.is_none())
                    .map(|a| a.span.clone()),
            )
            .collect();
        let not_free = scalars::NotFree {
            bound: &names,
            replaced: &replaced,
        };
        let named = call.map_or(arrays, |b| &b.arrays[..]);
        sweep.scalars = scalars::free_scalars(node, &not_free, named, at, tree, source, types);
    }
}

/// The listed arrays with the checks the sweep functions' parameters add.
fn with_parameter_checks(
    mut arrays: Vec<Array>,
    bound: &[Option<sweep_calls::Bound>],
) -> Vec<Array> {
    for (a, check) in bound.iter().flatten().flat_map(|b| &b.checks) {
        if !arrays[*a].checks.iter().any(|c| c.holds == check.holds) {
            arrays[*a].checks.push(check.clone());
        }
    }
    arrays
}

/// Reductions in sweep functions are refused: their accumulators are the
/// function's, which the host replay of the time loop can not reach.
fn reductions_in_calls(reductions: &[crate::ir::Reduction], body: &[Sweep]) -> DiagResult<()> {
    let errors: Vec<Diagnostic> = reductions
        .iter()
        .filter_map(|r| {
            let call = body[r.sweep].call.as_ref()?;
            Some(Diagnostic::new(
                r.span.clone(),
                format!(
                    "a reduction into `{}` in `{}`, a function the time loop calls",
                    r.var, call.function
                ),
                "reduction in a sweep function",
                format!(
                    "tpace brings a reduction's result back into the time loop's own variable: \
                     write this sweep in the time loop, or keep `{}`'s other sweeps there and \
                     accumulate into a variable of the time loop's function",
                    call.function
                ),
            ))
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
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

/// The sweeps and host statements of the time loop, what the sweeps' flat
/// accesses say, and per sweep, the call of a sweep function it comes from.
struct Lowered<'t> {
    sweeps: Vec<Sweep>,
    host: Vec<HostStatement>,
    flats: Vec<flat::FlatAccess>,
    bound: Vec<Option<sweep_calls::Bound<'t>>>,
}

fn lower_body<'t>(
    time_loop: Node<'t>,
    ctx: &context::Context<'_, 't>,
    found: &[Found<'t>],
    sweep_fns: &BTreeMap<String, Node<'t>>,
) -> DiagResult<Lowered<'t>> {
    let source = ctx.source;
    let body = time_loop
        .child_by_field_name("body")
        .expect("a parsed loop has a body");
    let mut out = Lowered {
        sweeps: Vec::new(),
        host: Vec::new(),
        flats: Vec::new(),
        bound: Vec::new(),
    };
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
                        out.sweeps.push(s);
                        out.bound.push(None);
                        out.flats.extend(f);
                    }
                    Err(d) => errors.extend(d),
                },
                None => errors.push(loops::missing_dim(item, source)),
            },
            _ => match sweep_call(item, sweep_fns, source) {
                // A call of a function of the file whose loop nests are sweeps.
                Some((call, def)) => {
                    match sweep_calls::lower_call(item, call, def, ctx, &loop_dim, sweep_fns) {
                        Ok((sweeps, flats, bound)) => {
                            for s in sweeps {
                                out.sweeps.push(s);
                                out.bound.push(Some(bound.clone()));
                            }
                            out.flats.extend(flats);
                        }
                        Err(d) => errors.extend(d),
                    }
                }
                // Any other statement runs on the host, in the replay of the time loop.
                None => {
                    let hidden = sweep_calls::hidden_sweep_calls(item, sweep_fns, ctx.tree, source);
                    if hidden.is_empty() {
                        errors.extend(sweep_calls::opaque_calls(
                            item, ctx.arrays, ctx.tree, source,
                        ));
                    }
                    errors.extend(hidden);
                    out.host.push(HostStatement {
                        span: span(item),
                        before: out.sweeps.len(),
                    });
                }
            },
        }
    }
    out.host = loops::loop_index_declarations(std::mem::take(&mut out.host), &mut out.sweeps, ctx);
    if errors.is_empty() && out.sweeps.is_empty() {
        errors.push(Diagnostic::new(
            loops::first_line(time_loop, source),
            "the time loop holds no sweep",
            "no loop nest marked with `#pragma tpace loop`",
            "mark each spatial loop with `#pragma tpace loop dim(d)`, dim(1) the innermost",
        ));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// A statement `f(...);` of the time loop that calls a sweep function: the call
/// and the function's definition.
fn sweep_call<'t>(
    stmt: Node<'t>,
    sweep_fns: &BTreeMap<String, Node<'t>>,
    source: &str,
) -> Option<(Node<'t>, Node<'t>)> {
    if stmt.kind() != "expression_statement" {
        return None;
    }
    let call = stmt
        .named_child(0)
        .filter(|c| c.kind() == "call_expression")?;
    let def = sweep_fns.get(sweep_calls::called_name(call, source)?)?;
    Some((call, *def))
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
