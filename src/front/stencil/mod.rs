//! Front end for the `#pragma stencil` dialect (the stencil-directives paper,
//! Table 2 and Fig. 5):
//!
//! ```c
//! #pragma stencil begin
//! #pragma stencil step(t:1000)
//! #pragma stencil data source(float A[NZ][NY][NX]) destination(float B[NZ][NY][NX])
//! #pragma stencil dimension(i, j, k)
//! for (t = 0; t < total_step; t++) {
//! #pragma stencil calc
//!   for (i = 1; i < NZ-1; i++) ... B[i][j][k] = ...A[i-1][j][k]...;
//! #pragma stencil copy
//!   for (i = 1; i < NZ-1; i++) ... A[i][j][k] = B[i][j][k];
//! }
//! #pragma stencil end
//! ```
//!
//! A region says what a `#pragma tpace pipeline` says, in other words: the
//! `data` arrays are the pipeline's (the ones any nest writes in
//! `targetinout`, the others in `targetin`), their extents its `size` (from
//! 0), `dimension` gives each spatial loop its axis (the first name the
//! outermost), and the halo is the reach the reads have. So the region becomes
//! the same [`Found`] directives, and [`crate::front::time_loop`] lowers it as
//! it lowers the tpace dialect: the copy nest becomes the same buffer swap,
//! and whatever that dialect refuses is refused here too.

pub mod clauses;

use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{body_items, descendants, text};
use crate::front::directives::{Directive, Found, Named, Pair, PipelineClauses, mentions_name};
use crate::front::pragmas::{self, PragmaLine};
use crate::ir::Span;
use clauses::{DataArray, StencilDirective};
use tree_sitter::Node;

/// Whether the text after `#pragma` belongs to the stencil dialect.
pub fn is_stencil_pragma(arg: &str) -> bool {
    let arg = arg.trim_start();
    arg.strip_prefix("stencil")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

/// What the file's `#pragma stencil` lines say, as the directives a time loop
/// is lowered from, and where each region stands (`begin` to `end`).
pub struct Regions<'t> {
    /// The pipeline and loop directives of every region, in file order.
    pub found: Vec<Found<'t>>,
    /// Each region's span, from its `begin` line to its `end` line.
    pub spans: Vec<Span>,
}

/// One parsed stencil line and the statement after it.
struct Line<'t> {
    line: PragmaLine,
    directive: StencilDirective,
    stmt: Option<Node<'t>>,
}

impl Line<'_> {
    fn span(&self) -> Span {
        self.line.span.clone()
    }

    fn name(&self) -> &'static str {
        match self.directive {
            StencilDirective::Begin => "begin",
            StencilDirective::End => "end",
            StencilDirective::Step { .. } => "step",
            StencilDirective::Data { .. } => "data",
            StencilDirective::Dimension(_) => "dimension",
            StencilDirective::Calc => "calc",
            StencilDirective::Copy => "copy",
        }
    }
}

/// The file's stencil regions as directives. `tree` is the parse of `blanked`,
/// the file with its pragma lines blanked out; `source` the file as written.
pub fn directives<'t>(
    source: &str,
    tree: &'t tree_sitter::Tree,
    blanked: &str,
    lines: &[PragmaLine],
) -> DiagResult<Regions<'t>> {
    let mut parsed = Vec::new();
    let mut errors = Vec::new();
    for line in lines.iter().filter(|p| is_stencil_pragma(&p.arg)) {
        match clauses::parse_directive(&line.arg, line.arg_start) {
            Ok(directive) => parsed.push(Line {
                line: line.clone(),
                directive,
                stmt: pragmas::attached_statement(tree, blanked, line),
            }),
            Err(d) => errors.push(d),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut regions = Regions {
        found: Vec::new(),
        spans: Vec::new(),
    };
    for region in group(source, &parsed)? {
        match lower_region(source, &region) {
            Ok(found) => {
                regions.found.extend(found);
                regions
                    .spans
                    .push(region[0].line.span.start..region[region.len() - 1].line.span.end);
            }
            Err(d) => errors.extend(d),
        }
    }
    if errors.is_empty() {
        Ok(regions)
    } else {
        Err(errors)
    }
}

/// The lines grouped by region, `begin` first and `end` last; a region left
/// open, an `end` without `begin` and a directive outside every region are refused.
fn group<'a, 't>(source: &str, lines: &'a [Line<'t>]) -> DiagResult<Vec<Vec<&'a Line<'t>>>> {
    let mut regions = Vec::new();
    let mut open: Option<Vec<&Line>> = None;
    let mut errors = Vec::new();
    for l in lines {
        match (&l.directive, open.as_mut()) {
            (StencilDirective::Begin, Some(region)) => errors.push(Diagnostic::new(
                l.span(),
                "`begin` inside a stencil region that is still open",
                "second begin",
                format!(
                    "close the region that begins at line {} with `#pragma stencil end` after its time loop",
                    line_of(source, region[0])
                ),
            )),
            (StencilDirective::Begin, None) => open = Some(vec![l]),
            (StencilDirective::End, Some(region)) => {
                region.push(l);
                regions.push(open.take().expect("open region"));
            }
            (StencilDirective::End, None) => errors.push(Diagnostic::new(
                l.span(),
                "`end` without `begin`",
                "no stencil region is open here",
                "put `#pragma stencil begin` before the region's `step`, `data` and `dimension` lines",
            )),
            (_, Some(region)) => region.push(l),
            (StencilDirective::Calc | StencilDirective::Copy, None) => {
                errors.push(Diagnostic::new(
                    l.span(),
                    format!("`{}` outside a stencil region", l.name()),
                    "not between `begin` and `end`",
                    "stencil directives belong between `#pragma stencil begin` and `#pragma stencil \
                     end`: the stencil dialect reads the `calc` and `copy` nests of the region's own \
                     time loop, not of a function it calls; write the nest in the time loop, or \
                     describe the loop in the tpace dialect (`#pragma tpace pipeline ...` on the time \
                     loop, `#pragma tpace loop dim(d)` on each loop of the function's nest), which \
                     reads sweeps in functions the time loop calls",
                ))
            }
            (_, None) => errors.push(Diagnostic::new(
                l.span(),
                format!("`{}` outside a stencil region", l.name()),
                "not between `begin` and `end`",
                "stencil directives belong between `#pragma stencil begin` and `#pragma stencil end`",
            )),
        }
    }
    if let Some(region) = open {
        errors.push(Diagnostic::new(
            region[0].span(),
            "`begin` without `end`",
            "this region is never closed",
            "put `#pragma stencil end` right after the region's time loop",
        ));
    }
    if errors.is_empty() {
        Ok(regions)
    } else {
        Err(errors)
    }
}

fn line_of(source: &str, l: &Line) -> usize {
    crate::diag::line_col(source, l.line.span.start).0
}

/// The one `kind` line of a region, or why there is none or more than one.
fn only<'a, 't>(
    source: &str,
    region: &[&'a Line<'t>],
    kind: &str,
    form: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<&'a Line<'t>> {
    let all: Vec<&Line> = region
        .iter()
        .copied()
        .filter(|l| l.name() == kind)
        .collect();
    match all.as_slice() {
        [] => {
            errors.push(Diagnostic::new(
                region[0].span(),
                format!("the stencil region has no `{kind}` directive"),
                "region begins here",
                format!("add `#pragma stencil {form}` right above the time loop"),
            ));
            None
        }
        [one] => Some(one),
        [first, again, ..] => {
            errors.push(Diagnostic::new(
                again.span(),
                format!("`{kind}` is given twice in one stencil region"),
                "second one",
                format!(
                    "keep the one at line {} (a region describes one time loop)",
                    line_of(source, first)
                ),
            ));
            None
        }
    }
}

/// One region as a pipeline directive on its time loop and a loop directive
/// on every loop of its calc and copy nests.
fn lower_region<'t>(source: &str, region: &[&Line<'t>]) -> DiagResult<Vec<Found<'t>>> {
    let mut errors = Vec::new();
    let step = only(source, region, "step", "step(t:MAX)", &mut errors);
    let data = only(
        source,
        region,
        "data",
        "data source(float A[N][M]) destination(float B[N][M])",
        &mut errors,
    );
    let dimension = only(source, region, "dimension", "dimension(i, j)", &mut errors);
    let (Some(step), Some(data), Some(dimension)) = (step, data, dimension) else {
        return Err(errors);
    };
    let (begin, end) = (region[0], region[region.len() - 1]);
    // The time loop: the statement that `step` stands above, with `begin`,
    // `data` and `dimension` right above it too.
    let Some(time_loop) = step
        .stmt
        .filter(|n| crate::front::time_loop::is_time_loop(*n))
    else {
        return Err(vec![Diagnostic::new(
            step.span(),
            "`step` must stand right above the time loop",
            "no `for`, `while` or `do` statement follows",
            "put the region's `begin`, `step`, `data` and `dimension` lines directly above the \
             `for` loop over time steps",
        )]);
    };
    for l in [begin, data, dimension] {
        if l.stmt != Some(time_loop) {
            errors.push(Diagnostic::new(
                l.span(),
                format!(
                    "`{}` must stand right above the time loop, with `step`",
                    l.name()
                ),
                "not above the time loop",
                "put the region's `begin`, `step`, `data` and `dimension` lines together, \
                 directly above the `for` loop over time steps",
            ));
        }
    }
    if end.line.span.start < time_loop.end_byte() || statement_between(time_loop, end) {
        errors.push(Diagnostic::new(
            end.span(),
            "`end` must come right after the time loop",
            "not where the time loop ends",
            "put `#pragma stencil end` on the line after the time loop's last line",
        ));
    }
    let StencilDirective::Data {
        source: sources,
        destination,
    } = &data.directive
    else {
        unreachable!("only() found a data line")
    };
    let StencilDirective::Dimension(vars) = &dimension.directive else {
        unreachable!("only() found a dimension line")
    };
    let StencilDirective::Step { var, max } = &step.directive else {
        unreachable!("only() found a step line")
    };
    let arrays: Vec<&DataArray> = sources.iter().chain(destination).collect();
    check_shapes(&arrays, vars, dimension, &mut errors);
    let nests = nests(region, time_loop, source, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut found = Vec::new();
    for (nest, marker) in &nests {
        found.extend(loop_directives(*nest, marker, vars, source)?);
    }
    let written = |a: &DataArray| writes(time_loop, source, &a.name.name);
    let clauses = PipelineClauses {
        targetinout: arrays
            .iter()
            .filter(|a| destination.contains(a) || written(a))
            .map(|a| a.name.clone())
            .collect(),
        targetin: sources
            .iter()
            .filter(|a| !written(a))
            .map(|a| a.name.clone())
            .collect(),
        size: Some((
            arrays[0]
                .extents
                .iter()
                .map(|n| Pair {
                    first: "0".into(),
                    second: n.clone(),
                    span: arrays[0].span.clone(),
                })
                .collect(),
            arrays[0].span.clone(),
        )),
        halo: None,
        asynchronous: true,
        halo_from_reads: true,
        time_var: Some(var.clone()),
        steps_hint: Some(max.clone()),
        lines: [begin, step, dimension, end]
            .iter()
            .map(|l| l.span())
            .collect(),
        declared_elems: arrays
            .iter()
            .map(|a| (a.name.clone(), a.elem.clone()))
            .collect(),
    };
    found.push(Found {
        line: data.line.clone(),
        directive: Directive::Pipeline(Box::new(clauses)),
        stmt: Some(time_loop),
    });
    Ok(found)
}

/// Whether a statement stands between the time loop and the `end` line.
fn statement_between(time_loop: Node, end: &Line) -> bool {
    let Some(parent) = time_loop.parent() else {
        return false;
    };
    let (from, to) = (time_loop.end_byte(), end.line.span.start);
    body_items(parent)
        .into_iter()
        .any(|n| n.kind() != "comment" && n.start_byte() >= from && n.start_byte() < to)
}

/// Every `data` array has one extent per `dimension` variable, and all have the
/// same extents: they are one grid.
fn check_shapes(
    arrays: &[&DataArray],
    vars: &[Named],
    dimension: &Line,
    errors: &mut Vec<Diagnostic>,
) {
    if vars.is_empty() || vars.len() > 3 {
        errors.push(Diagnostic::new(
            dimension.span(),
            format!(
                "`dimension` names {} loop variables; tpace handles grids of 1 to 3 dimensions",
                vars.len()
            ),
            "here",
            "name the loop variable of each spatial axis, outermost first, e.g. dimension(i, j, k)",
        ));
        return;
    }
    let words = |a: &DataArray| -> Vec<String> {
        a.extents
            .iter()
            .map(|e| e.split_whitespace().collect::<String>())
            .collect()
    };
    for a in arrays {
        if a.extents.len() != vars.len() {
            errors.push(Diagnostic::new(
                a.span.clone(),
                format!(
                    "`{}` has {} extents, but `dimension` names {} loop variables",
                    a.name.name,
                    a.extents.len(),
                    vars.len()
                ),
                "rank differs from `dimension`",
                "give every data array one extent per axis and `dimension` one loop variable per \
                 axis, outermost first",
            ));
        } else if words(a) != words(arrays[0]) {
            errors.push(Diagnostic::new(
                a.span.clone(),
                format!(
                    "`{}` is [{}] but `{}` is [{}]: the data arrays of a region are one grid",
                    a.name.name,
                    a.extents.join("]["),
                    arrays[0].name.name,
                    arrays[0].extents.join("][")
                ),
                "different extents",
                "declare every data array with the grid's extents",
            ));
        }
    }
}

/// The region's calc and copy nests, each with its marker line; every loop
/// directly in the time loop's body must be one.
fn nests<'a, 't>(
    region: &[&'a Line<'t>],
    time_loop: Node<'t>,
    source: &str,
    errors: &mut Vec<Diagnostic>,
) -> Vec<(Node<'t>, &'a Line<'t>)> {
    let body = time_loop
        .child_by_field_name("body")
        .expect("a parsed loop has a body");
    let items = if body.kind() == "compound_statement" {
        body_items(body)
    } else {
        vec![body]
    };
    let mut out = Vec::new();
    for marker in region
        .iter()
        .copied()
        .filter(|l| matches!(l.directive, StencilDirective::Calc | StencilDirective::Copy))
    {
        match marker
            .stmt
            .filter(|n| n.kind() == "for_statement" && items.contains(n))
        {
            Some(nest) => out.push((nest, marker)),
            None => errors.push(Diagnostic::new(
                marker.span(),
                format!(
                    "`{}` must stand directly above a loop nest of the time loop",
                    marker.name()
                ),
                "no loop nest of the time loop follows",
                format!(
                    "put `#pragma stencil {}` right above the outermost `for` of the nest, \
                     inside the time loop",
                    marker.name()
                ),
            )),
        }
    }
    for item in items.iter().filter(|n| n.kind() == "for_statement") {
        if !out.iter().any(|(n, _)| n == item) {
            errors.push(Diagnostic::new(
                crate::front::cst::span(*item).start..header_end(*item, source),
                "a loop nest in the stencil region with neither `calc` nor `copy`",
                "unmarked nest",
                "mark it `#pragma stencil calc`, or `#pragma stencil copy` if it copies the \
                 destination back to the source",
            ));
        }
    }
    if out.is_empty() && errors.is_empty() {
        errors.push(Diagnostic::new(
            region[0].span(),
            "the stencil region has no `calc` nest",
            "region begins here",
            "mark the loop nest that computes the stencil with `#pragma stencil calc`",
        ));
    }
    out
}

/// Where a `for` statement's header ends (for diagnostics that point at it).
fn header_end(node: Node, source: &str) -> usize {
    node.child_by_field_name("body")
        .map_or(node.end_byte(), |b| b.start_byte())
        .min(source.len())
}

/// A loop directive for every `for` of a nest: its axis from `dimension`.
fn loop_directives<'t>(
    nest: Node<'t>,
    marker: &Line<'t>,
    vars: &[Named],
    source: &str,
) -> DiagResult<Vec<Found<'t>>> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let rank = vars.len();
    // `descendants` starts with the nest's own outermost loop.
    for node in descendants(nest)
        .into_iter()
        .filter(|n| n.kind() == "for_statement")
    {
        let header = crate::front::cst::span(node).start..header_end(node, source);
        let Some(var) = loop_variable(node, source) else {
            errors.push(Diagnostic::new(
                header,
                "cannot tell this loop's variable",
                "loop of a stencil nest",
                "write the header as `for (i = lo; i < hi; i++)` with one of the `dimension` variables",
            ));
            continue;
        };
        match vars.iter().position(|v| v.name == var) {
            Some(pos) => found.push(Found {
                line: marker.line.clone(),
                directive: Directive::Loop {
                    dim: rank - pos,
                    span: vars[pos].span.clone(),
                },
                stmt: Some(node),
            }),
            None => errors.push(Diagnostic::new(
                header,
                format!(
                    "the loop over `{var}` is in a {} nest, but `{var}` is not in `dimension({})`",
                    marker.name(),
                    vars.iter()
                        .map(|v| v.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "not a dimension variable",
                "every loop of a calc or copy nest runs over a spatial axis: add its variable to \
                 `dimension(...)` in the axis's place, or move the loop out of the nest",
            )),
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

/// The variable a `for` header initialises: `i` in `i = 1` or `int i = 1`.
fn loop_variable(node: Node, source: &str) -> Option<String> {
    let init = node.child_by_field_name("initializer")?;
    let target = match init.kind() {
        "assignment_expression" => init.child_by_field_name("left")?,
        "declaration" => init
            .child_by_field_name("declarator")?
            .child_by_field_name("declarator")?,
        _ => return None,
    };
    (target.kind() == "identifier").then(|| text(target, source).to_string())
}

/// Whether the time loop writes the array `name` anywhere (an assignment or
/// an increment whose target mentions it).
fn writes(time_loop: Node, source: &str, name: &str) -> bool {
    descendants(time_loop).into_iter().any(|n| {
        let target = match n.kind() {
            "assignment_expression" => n.child_by_field_name("left"),
            "update_expression" => n.child_by_field_name("argument"),
            _ => None,
        };
        target.is_some_and(|t| mentions_name(text(t, source), name))
    })
}
