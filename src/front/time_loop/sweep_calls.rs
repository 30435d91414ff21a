//! Sweeps in called functions: a function of the file whose loop nests carry
//! `loop dim(d)` directives, called from the time loop as a statement of its
//! own, is those sweeps of the step (Parboil's `cpu_stencil(c0, c1, A0, Anext,
//! nx, ny, nz);`). Each call is read on its own, so the same function may be
//! called several times a step with the arrays in other orders.
//!
//! Its pointer parameters take the listed arrays the call passes (each
//! array's name in the function is the parameter's); its scalar parameters are
//! values, the call's arguments evaluated where the loop stands, once. The
//! sweeps' text stays the function's; what the pipeline evaluates in the
//! caller's scope (loop bounds, scalars' values, flat strides and layout
//! checks) is read in the caller's words, each parameter replaced by its
//! argument. tpace follows one level of calls: a sweep function called from
//! another function, or from itself, is refused at that call.

use super::calls::file_functions;
use super::context::{Bindings, Context};
use super::decls::{declared_name, enclosing_function, find_decl};
use super::flat::FlatAccess;
use super::host::written;
use super::loops;
use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{body_items, descendants, named_children, parse_c, span, text};
use crate::front::directives::{Directive, Found, array_name};
use crate::front::poly::Poly;
use crate::front::types::DeclInfo;
use crate::ir::{Array, Grid, Layout, LayoutCheck, ScalarRole, Span, Sweep, SweepCall};
use crate::text::splice;
use std::collections::{BTreeMap, BTreeSet};
use tree_sitter::{Node, Tree};

/// The functions of the file that hold `loop` directives outside every time
/// loop: the sweep functions a time loop may call, by name.
pub fn sweep_functions<'t>(
    found: &[Found<'t>],
    time_loops: &[Node],
    tree: &'t Tree,
    source: &str,
) -> BTreeMap<String, Node<'t>> {
    let mut out = BTreeMap::new();
    for f in found.iter().filter(|f| is_loop(f)) {
        let at = f.line.span.start;
        if time_loops.iter().any(|t| t.byte_range().contains(&at)) {
            continue;
        }
        if let Some((name, def)) = function_at(f, tree, source) {
            out.insert(name, def);
        }
    }
    out
}

fn is_loop(f: &Found) -> bool {
    matches!(f.directive, Directive::Loop { .. })
}

/// The function definition a directive stands in, with its name.
fn function_at<'t>(f: &Found<'t>, tree: &'t Tree, source: &str) -> Option<(String, Node<'t>)> {
    let at = f.line.span.start;
    let node = f
        .stmt
        .or_else(|| tree.root_node().descendant_for_byte_range(at, at))?;
    let def = enclosing_function(node)?;
    Some((function_name(def, source)?.to_string(), def))
}

/// The name a function definition defines.
fn function_name<'s>(def: Node, source: &'s str) -> Option<&'s str> {
    def.child_by_field_name("declarator")
        .and_then(|d| declared_name(d, source))
}

/// The name a call calls, when it calls a function by its name.
pub fn called_name<'s>(call: Node, source: &'s str) -> Option<&'s str> {
    call.child_by_field_name("function")
        .filter(|f| f.kind() == "identifier")
        .map(|f| text(f, source))
}

/// The `loop` directives outside every time loop that are not in a sweep
/// function a time loop calls itself: each function's first, with what to do.
/// A sweep function reached only through another function is refused at that
/// call (tpace reads sweeps one call deep), and so is one that calls itself.
pub fn misplaced_loops(
    found: &[Found],
    time_loops: &[Node],
    sweep_fns: &BTreeMap<String, Node>,
    tree: &Tree,
    source: &str,
) -> Vec<Diagnostic> {
    let functions = file_functions(tree, source);
    // The functions the time loops call directly, and every function they reach, with a call.
    let direct: BTreeSet<&str> = time_loops
        .iter()
        .flat_map(|t| descendants(*t))
        .filter(|n| n.kind() == "call_expression")
        .filter_map(|c| called_name(c, source))
        .collect();
    let mut reached: BTreeMap<String, Node> = BTreeMap::new();
    let mut work: Vec<Node> = time_loops.to_vec();
    while let Some(node) = work.pop() {
        for call in descendants(node)
            .into_iter()
            .filter(|n| n.kind() == "call_expression")
        {
            let Some(name) = called_name(call, source) else {
                continue;
            };
            if let (Some(def), false) = (functions.get(name), reached.contains_key(name)) {
                reached.insert(name.to_string(), call);
                work.push(*def);
            }
        }
    }
    let mut errors = Vec::new();
    let mut said: BTreeSet<&str> = BTreeSet::new();
    for f in found.iter().filter(|f| is_loop(f)) {
        let at = f.line.span.start;
        if time_loops.iter().any(|t| t.byte_range().contains(&at)) {
            continue;
        }
        let Some((name, _)) = function_at(f, tree, source) else {
            errors.push(outside(f.span()));
            continue;
        };
        let Some((name, _)) = sweep_fns.get_key_value(name.as_str()) else {
            continue;
        };
        if direct.contains(name.as_str()) || !said.insert(name.as_str()) {
            continue;
        }
        match reached.get(name.as_str()) {
            Some(call) => errors.push(too_deep(*call, name, source)),
            None => errors.push(outside(f.span())),
        }
    }
    errors
}

fn outside(span: Span) -> Diagnostic {
    Diagnostic::new(
        span,
        "`loop` directive outside the pipelined time loop",
        "not inside the time loop",
        "`#pragma tpace loop dim(d)` belongs on the spatial loops inside the time loop, or in a \
         function of this file that the time loop calls",
    )
}

/// A call of sweep function `name` that is not a statement of the time loop.
fn too_deep(call: Node, name: &str, source: &str) -> Diagnostic {
    let caller = enclosing_function(call).and_then(|f| function_name(f, source));
    match caller {
        Some(c) if c == name => Diagnostic::new(
            span(call),
            format!("`{name}`, whose loop nests are sweeps, calls itself"),
            "recursion",
            format!(
                "tpace reads the sweeps of a function the time loop calls, once per call: write the \
                 steps `{name}` takes as calls in the time loop, one after another"
            ),
        ),
        caller => Diagnostic::new(
            span(call),
            format!(
                "`{name}`, whose loop nests are sweeps, is called from `{}`, not from the time loop",
                caller.unwrap_or("another function")
            ),
            "a sweep function two calls deep",
            format!(
                "tpace reads the sweeps of functions the time loop calls itself, one call deep: \
                 call `{name}` as a statement of the pipelined time loop, or move its loop nests \
                 into the function the time loop calls"
            ),
        ),
    }
}

/// Calls under `node` (a statement of the time loop that is not a sweep) that
/// reach a sweep function: called there directly (not as a statement of its
/// own), or through other functions of the file. One diagnostic per call.
pub fn hidden_sweep_calls(
    node: Node,
    sweep_fns: &BTreeMap<String, Node>,
    tree: &Tree,
    source: &str,
) -> Vec<Diagnostic> {
    let functions = file_functions(tree, source);
    let mut errors = Vec::new();
    for call in descendants(node)
        .into_iter()
        .filter(|n| n.kind() == "call_expression")
    {
        let Some(name) = called_name(call, source) else {
            continue;
        };
        if sweep_fns.contains_key(name) {
            errors.push(Diagnostic::new(
                span(call),
                format!("`{name}`, whose loop nests are sweeps, is called inside another statement"),
                "not a statement of its own",
                format!(
                    "call `{name}(...);` as a statement of its own in the time loop: every step runs \
                     its sweeps, so it can not be called under a condition or inside an expression"
                ),
            ));
            continue;
        }
        // Through other functions of the file: the first call that reaches one.
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut work = vec![name];
        while let Some(f) = work.pop() {
            let Some(def) = functions.get(f) else {
                continue;
            };
            if !seen.insert(f) {
                continue;
            }
            for inner in descendants(*def)
                .into_iter()
                .filter(|n| n.kind() == "call_expression")
            {
                match called_name(inner, source) {
                    Some(g) if sweep_fns.contains_key(g) => {
                        errors.push(too_deep(inner, g, source));
                        work.clear();
                        break;
                    }
                    Some(g) => work.push(g),
                    None => {}
                }
            }
        }
    }
    errors
}

/// Calls under `node` (a statement of the time loop that is not a sweep) that
/// hand a listed array to code tpace does not read as sweeps: through a
/// function pointer, to a function defined elsewhere, or to a function of the
/// file without marked loop nests. One diagnostic per call.
pub fn opaque_calls(node: Node, arrays: &[Array], tree: &Tree, source: &str) -> Vec<Diagnostic> {
    let functions = file_functions(tree, source);
    let mut errors = Vec::new();
    for call in descendants(node)
        .into_iter()
        .filter(|n| n.kind() == "call_expression")
    {
        let Some(args) = call.child_by_field_name("arguments") else {
            continue;
        };
        // An array handed over whole (an element is host code's business: host.rs).
        let whole: Vec<String> = named_children(args)
            .into_iter()
            .filter_map(|a| array_name(text(uncast(a), source)))
            .collect();
        let Some(array) = arrays.iter().find(|a| whole.contains(&a.name)) else {
            continue;
        };
        let callee = call.child_by_field_name("function");
        let named = callee
            .filter(|f| f.kind() == "identifier")
            .map(|f| text(f, source));
        // A prototype (`void smooth(float *, ...);`) declares a function defined
        // elsewhere, not a variable holding a function pointer.
        let declared_variable = named.is_some_and(|n| {
            find_decl(n, call, tree, source).is_some_and(|(_, decl)| !is_prototype(decl))
        });
        let (message, label, help) = match named {
            Some(f) if functions.contains_key(f) => (
                format!(
                    "`{f}` is called with the listed array `{}`, but holds no loop nest marked with \
                     `#pragma tpace loop`",
                    array.name
                ),
                "not a sweep function",
                format!(
                    "mark each loop of `{f}`'s loop nests with `#pragma tpace loop dim(d)`, so that \
                     they are sweeps of the step, or call `{f}` before or after the time loop"
                ),
            ),
            Some(f) if !declared_variable => (
                format!(
                    "`{f}` is called with the listed array `{}`, but it is not defined in this file",
                    array.name
                ),
                "tpace can not see what it does",
                format!(
                    "tpace reads sweeps in the time loop and in functions of the same file that it \
                     calls: define `{f}` in this file with its loops marked `#pragma tpace loop \
                     dim(d)`, or call it before or after the time loop"
                ),
            ),
            _ => (
                format!(
                    "a function is called through a pointer with the listed array `{}`",
                    array.name
                ),
                "tpace can not see which function runs",
                "tpace reads the sweeps of a function the time loop calls by its name: call the \
                 sweep function itself (`f(...);`), once per call site, or one after another for \
                 each choice"
                    .to_string(),
            ),
        };
        errors.push(Diagnostic::new(span(call), message, label, help));
    }
    errors
}

/// What a call of a sweep function binds: its parameters to the call's arguments.
#[derive(Debug, Clone)]
pub struct Bound<'t> {
    /// The function's definition.
    pub def: Node<'t>,
    /// Its name.
    pub name: String,
    /// Its scalar parameters, each with the argument's text.
    pub values: BTreeMap<String, String>,
    /// What the parameters stand for, for subscripts.
    pub bindings: Bindings,
    /// The listed arrays as the function names them (by its parameters).
    pub arrays: Vec<Array>,
    /// Layout checks the parameters' declarations add, per listed array.
    pub checks: Vec<(usize, LayoutCheck)>,
}

impl Bound<'_> {
    /// C `text` of the function (a loop bound, an index), in the caller's words.
    pub fn in_caller(&self, text: &str) -> String {
        let mut all = self.values.clone();
        all.extend(self.bindings.objects.clone());
        substitute(text, &all)
    }
}

/// Whether `declarator` declares a function (`f(...)`, `*f(...)` returning a
/// pointer), not a variable (`(*f)(...)`, a function pointer).
fn is_prototype(declarator: Node) -> bool {
    let mut d = declarator;
    while d.kind() == "pointer_declarator" {
        match d.child_by_field_name("declarator") {
            Some(inner) => d = inner,
            None => return false,
        }
    }
    d.kind() == "function_declarator"
        && d.child_by_field_name("declarator")
            .is_some_and(|n| n.kind() == "identifier")
}

/// `text` (a C expression) with every identifier that `values` maps replaced by
/// its value in parentheses; member names (`p->nx`) are not identifiers here.
pub fn substitute(text: &str, values: &BTreeMap<String, String>) -> String {
    if !crate::text::identifiers(text)
        .iter()
        .any(|w| values.contains_key(*w))
    {
        return text.to_string();
    }
    const PRE: &str = "long tpace_e = (";
    let wrapped = format!("{PRE}{text});");
    let tree = parse_c(&wrapped);
    let edits: Vec<(Span, String)> = descendants(tree.root_node())
        .into_iter()
        .filter(|n| n.kind() == "identifier")
        .filter_map(|n| {
            let v = values.get(&wrapped[n.byte_range()])?;
            Some((n.byte_range(), format!("({v})")))
        })
        .collect();
    let out = splice(&wrapped, edits);
    out[PRE.len()..out.len() - 2].to_string()
}

/// A parameter of a function definition: its declaration, declarator and name.
struct Param<'t> {
    decl: Node<'t>,
    declarator: Node<'t>,
    name: String,
}

/// The parameters of `def` in order (`None` for one without a name; an empty list for `(void)`).
fn parameters<'t>(def: Node<'t>, source: &str) -> Result<Vec<Option<Param<'t>>>, Node<'t>> {
    let Some(function) = def
        .child_by_field_name("declarator")
        .and_then(|d| {
            std::iter::once(d)
                .chain(descendants(d))
                .find(|n| n.kind() == "function_declarator")
        })
        .and_then(|f| f.child_by_field_name("parameters"))
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for p in named_children(function) {
        match p.kind() {
            "parameter_declaration" => {
                let declarator = p.child_by_field_name("declarator");
                let is_void = declarator.is_none()
                    && p.child_by_field_name("type")
                        .is_some_and(|t| text(t, source) == "void");
                if is_void {
                    continue;
                }
                out.push(declarator.and_then(|d| {
                    Some(Param {
                        decl: p,
                        declarator: d,
                        name: declared_name(d, source)?.to_string(),
                    })
                }));
            }
            "comment" => {}
            _ => return Err(p),
        }
    }
    Ok(out)
}

/// The sizes of the dimensions after the first of an array declarator
/// (`(*u)[M]`: `M`; `u[][N][M]`: `N`, `M`), outermost first.
fn row_sizes(declarator: Node, source: &str) -> Vec<String> {
    let mut sizes = Vec::new();
    let mut node = declarator;
    while node.kind() == "array_declarator" {
        sizes.push(
            node.child_by_field_name("size")
                .map(|s| text(s, source).to_string()),
        );
        match node.child_by_field_name("declarator") {
            Some(d) => node = d,
            None => break,
        }
    }
    // Innermost last: the declarator nests the outermost dimension deepest.
    sizes.reverse();
    let pointer = node.kind() == "parenthesized_declarator";
    let skip = usize::from(!pointer);
    sizes
        .into_iter()
        .skip(skip)
        .map(Option::unwrap_or_default)
        .collect()
}

/// How a listed array is declared, in words, for messages.
fn layout_words(layout: Layout) -> &'static str {
    match layout {
        Layout::Flat => "a flat pointer (`T *a`)",
        Layout::Static => "an array (`T a[X][Y]`)",
        Layout::PointerToArray => "a pointer to rows (`T (*a)[Y]`)",
    }
}

/// Lower the call `call` (the statement `stmt` of the time loop) of the sweep
/// function `def`: its sweeps in program order, what their flat accesses say,
/// and what the call binds.
pub fn lower_call<'t>(
    stmt: Node<'t>,
    call: Node<'t>,
    def: Node<'t>,
    ctx: &Context<'_, 't>,
    loop_dim: &dyn Fn(Node) -> Option<(usize, Span)>,
    sweep_fns: &BTreeMap<String, Node<'t>>,
) -> DiagResult<(Vec<Sweep>, Vec<FlatAccess>, Bound<'t>)> {
    let source = ctx.source;
    let name = function_name(def, source).unwrap_or("?").to_string();
    let bound = bind(call, def, &name, ctx)?;
    let mut errors = Vec::new();
    // One call deep: the function calls no sweep function itself.
    for inner in descendants(def)
        .into_iter()
        .filter(|n| n.kind() == "call_expression")
    {
        if let Some(g) = called_name(inner, source).filter(|g| sweep_fns.contains_key(*g)) {
            errors.push(too_deep(inner, g, source));
        }
    }
    // Parameters are values, bound once: the function must not change them.
    let names: Vec<String> = parameters(def, source)
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .map(|p| p.name)
        .collect();
    let body = def
        .child_by_field_name("body")
        .expect("a function definition has a body");
    for id in descendants(body)
        .into_iter()
        .filter(|n| n.kind() == "identifier")
    {
        let word = text(id, source);
        if names.iter().any(|n| n == word) && written(id, source) {
            errors.push(Diagnostic::new(
                span(id),
                format!("`{name}` changes its parameter `{word}`"),
                "a sweep function's parameters are values bound at the call",
                format!(
                    "tpace evaluates what the call passes once, where the time loop stands, and \
                     reads `{word}` as that value everywhere in `{name}`: copy it into a local \
                     declared inside the loop nest and change the copy"
                ),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut sweeps = Vec::new();
    let mut flats = Vec::new();
    let items: Vec<Node> = body_items(body)
        .into_iter()
        .filter(|n| n.kind() != "comment")
        .collect();
    let last = items.last().copied();
    for item in &items {
        match item.kind() {
            "declaration" => {}
            "return_statement" if Some(*item) == last && item.named_child_count() == 0 => {}
            "for_statement" => match loop_dim(*item) {
                Some((dim, pragma)) => {
                    let here = Context {
                        arrays: &bound.arrays,
                        at: *item,
                        bindings: &bound.bindings,
                        ..*ctx
                    };
                    match loops::sweep(*item, dim, pragma, &here, loop_dim) {
                        Ok((mut s, f)) => {
                            for l in &mut s.loops {
                                l.lo = bound.in_caller(&l.lo);
                                l.hi = bound.in_caller(&l.hi);
                            }
                            s.call = Some(SweepCall {
                                function: name.clone(),
                                span: span(stmt),
                            });
                            sweeps.push(s);
                            flats.extend(f);
                        }
                        Err(d) => errors.extend(d),
                    }
                }
                None => errors.push(loops::missing_dim(*item, source)),
            },
            _ => errors.push(Diagnostic::new(
                loops::first_line(*item, source),
                format!("`{name}`, whose loop nests are sweeps, holds another statement"),
                "neither a declaration nor a loop nest",
                "a function the time loop calls for its sweeps may hold only declarations and loop \
                 nests marked with `#pragma tpace loop dim(d)`: move this statement into the time \
                 loop (it runs on the host there) or before or after it",
            )),
        }
    }
    // The kernels know the time loop's counter by its name: the function may not
    // give that name to a parameter or a local its sweeps read.
    let time = ctx.time_var;
    let own = names.iter().any(|n| n == time)
        || items
            .iter()
            .filter(|i| i.kind() == "declaration")
            .flat_map(|d| crate::front::types::declarators(*d))
            .any(|d| declared_name(d, source) == Some(time));
    let mentioned = sweeps.iter().find_map(|s| {
        let root = ctx.tree.root_node();
        let body = root.descendant_for_byte_range(s.body.start, s.body.end)?;
        descendants(body)
            .into_iter()
            .find(|n| n.kind() == "identifier" && text(*n, source) == time)
    });
    if let (true, Some(at)) = (own, mentioned) {
        errors.push(Diagnostic::new(
            span(at),
            format!(
                "`{time}` in `{name}` is its own variable, but the time loop counts with `{time}`"
            ),
            "one name for two variables",
            format!(
                "the kernels of the time loop's sweeps know its counter as `{time}`: rename the \
                 parameter or local of `{name}`"
            ),
        ));
    }
    if errors.is_empty() && sweeps.is_empty() {
        errors.push(Diagnostic::new(
            span(call),
            format!("`{name}` holds no loop nest marked with `#pragma tpace loop`"),
            "no sweep",
            "mark each spatial loop of its loop nests with `#pragma tpace loop dim(d)`",
        ));
    }
    if errors.is_empty() {
        Ok((sweeps, flats, bound))
    } else {
        Err(errors)
    }
}

/// Bind the parameters of `def` to the arguments of `call`.
fn bind<'t>(
    call: Node<'t>,
    def: Node<'t>,
    name: &str,
    ctx: &Context<'_, 't>,
) -> DiagResult<Bound<'t>> {
    let source = ctx.source;
    let params = parameters(def, source).map_err(|p| {
        vec![Diagnostic::new(
            span(p),
            format!("`{name}`, whose loop nests are sweeps, takes a variable number of arguments"),
            "variadic parameters",
            "give the sweep function a fixed list of parameters",
        )]
    })?;
    let args: Vec<Node> = call
        .child_by_field_name("arguments")
        .map(named_children)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a.kind() != "comment")
        .collect();
    if args.len() != params.len() {
        return Err(vec![Diagnostic::new(
            span(call),
            format!(
                "`{name}` takes {} but is called with {}",
                crate::text::count(params.len(), "argument", "arguments"),
                args.len()
            ),
            "argument count",
            "pass one argument per parameter",
        )]);
    }
    let body = def.child_by_field_name("body");
    let used = |p: &str| {
        body.is_some_and(|b| {
            descendants(b)
                .into_iter()
                .any(|n| n.kind() == "identifier" && text(n, source) == p)
        })
    };
    let mut errors = Vec::new();
    let mut values = BTreeMap::new();
    let mut polys = BTreeMap::new();
    let mut objects = BTreeMap::new();
    // Each listed array: the name the function knows it by (None: the parameter
    // of that name hides it), once it is decided.
    let listed: Vec<&Array> = ctx.arrays.iter().collect();
    let mut renamed: Vec<Option<Option<String>>> = vec![None; listed.len()];
    let mut checks = Vec::new();
    let param_names: BTreeSet<&str> = params.iter().flatten().map(|p| p.name.as_str()).collect();
    for (param, arg) in params.iter().zip(&args) {
        let Some(param) = param else {
            continue;
        };
        let info = DeclInfo::of(param.decl, param.declarator, source);
        let arg_text = text(*arg, source).trim().to_string();
        let scalar = info.plain && ctx.types.arithmetic(&info.ty).is_some();
        if scalar {
            if let Some(d) = impure(*arg, name, &param.name, ctx) {
                errors.push(d);
                continue;
            }
            let poly = super::subscripts::poly_of_text(&arg_text)
                .unwrap_or_else(|| Poly::var(&format!("({arg_text})")));
            polys.insert(param.name.clone(), poly);
            values.insert(param.name.clone(), arg_text);
            continue;
        }
        // A listed array, or a struct that holds some (`p` of `p->m`); a cast
        // (`(const float (*)[M])u`) passes the array as it is.
        let whole = array_name(text(uncast(*arg), source));
        let mut matched = false;
        for (i, a) in listed.iter().enumerate() {
            let Some(w) = whole.as_deref() else { break };
            let rest = if a.name == w {
                Some("")
            } else {
                a.name
                    .strip_prefix(w)
                    .filter(|r| r.starts_with("->") || r.starts_with('.'))
            };
            let Some(rest) = rest else { continue };
            matched = true;
            if let Some(Some(before)) = &renamed[i] {
                errors.push(Diagnostic::new(
                    span(*arg),
                    format!(
                        "`{}` is passed to `{name}` twice, as `{before}` and as `{}`",
                        a.name, param.name
                    ),
                    "one array under two names",
                    format!(
                        "pass each listed array once: tpace can not tell whether the sweeps of \
                         `{name}` read a neighbour through one name of a point they write through \
                         the other"
                    ),
                ));
                continue;
            }
            renamed[i] = Some(Some(format!("{}{rest}", param.name)));
            if !rest.is_empty()
                && let Some(w) = &whole
            {
                objects.insert(param.name.clone(), w.clone());
            }
            if rest.is_empty() {
                if let Err(d) = fits(a, &info, param, *arg, name, ctx) {
                    errors.push(d);
                }
                if let Some(l) = row_check(a, i, param, &values, ctx) {
                    checks.extend(l);
                }
            }
        }
        if !matched && used(&param.name) {
            let how = if whole.is_some() {
                format!(
                    "list `{arg_text}` in the pipeline directive (targetinout if the sweeps write it, \
                     else targetin)"
                )
            } else {
                "pass the listed array itself (its name, not an element's address or an offset)"
                    .to_string()
            };
            errors.push(Diagnostic::new(
                span(*arg),
                format!(
                    "`{arg_text}` is passed to `{name}` as `{}`, which its sweeps use, but it is not a listed array",
                    param.name
                ),
                "not in the pipeline",
                how,
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Arrays not passed keep their names, unless a parameter hides them.
    let arrays: Vec<Array> = listed
        .iter()
        .zip(renamed)
        .map(|(a, r)| {
            let name = match r {
                Some(Some(n)) => n,
                Some(None) => String::new(),
                None if param_names.contains(a.name.split(['-', '.']).next().unwrap_or("")) => {
                    String::new()
                }
                None => a.name.clone(),
            };
            Array {
                name,
                ..(*a).clone()
            }
        })
        .collect();
    Ok(Bound {
        def,
        name: name.to_string(),
        values,
        bindings: Bindings {
            values: polys,
            objects,
        },
        arrays,
        checks,
    })
}

/// An argument without the casts and parentheses around it.
fn uncast(mut arg: Node) -> Node {
    loop {
        let inner = match arg.kind() {
            "cast_expression" => arg.child_by_field_name("value"),
            "parenthesized_expression" => arg.named_child(0),
            _ => None,
        };
        match inner {
            Some(i) => arg = i,
            None => return arg,
        }
    }
}

/// Why the argument `arg` of a scalar parameter can not be evaluated once where the
/// loop stands: it changes the program's state, or it is the step counter.
fn impure(arg: Node, name: &str, param: &str, ctx: &Context) -> Option<Diagnostic> {
    let source = ctx.source;
    for n in std::iter::once(arg).chain(descendants(arg)) {
        let effect = matches!(n.kind(), "assignment_expression" | "update_expression");
        if effect {
            return Some(Diagnostic::new(
                span(n),
                format!("the argument for `{param}` of `{name}` changes the program's state"),
                "evaluated once, not at every step",
                "tpace evaluates what a sweep function is passed once, where the time loop stands: \
                 make the change a statement of the time loop, before or after the call",
            ));
        }
        if n.kind() == "identifier" && text(n, source) == ctx.time_var {
            return Some(Diagnostic::new(
                span(n),
                format!(
                    "`{name}` is passed the time loop's counter `{}` for `{param}`",
                    ctx.time_var
                ),
                "changes at every step",
                format!(
                    "tpace evaluates what a sweep function is passed once, before the loop; a sweep \
                     that reads the step number must be written in the time loop, where it may \
                     use `{}`",
                    ctx.time_var
                ),
            ));
        }
    }
    None
}

/// Whether the pointer parameter `param` (its declaration `info`) takes the listed
/// array `a` as the pipeline declares it: the same element type and layout.
fn fits(
    a: &Array,
    info: &DeclInfo,
    param: &Param,
    arg: Node,
    name: &str,
    ctx: &Context,
) -> Result<(), Diagnostic> {
    let shown = format!("{} {}", info.ty.trim(), info.declarator);
    let refuse = |why: String| {
        Diagnostic::new(
            span(arg),
            format!("`{name}` takes `{}` as `{shown}`, {why}", a.name),
            "parameter does not match the listed array",
            format!(
                "declare the parameter `{}` as the pipeline's `{}` is declared: of its element type, \
                 and flat (`T *p`) for a flat array, a pointer to rows (`T (*p)[Y]`) or an array \
                 (`T p[X][Y]`) for one subscripted once per dimension",
                param.name, a.name
            ),
        )
    };
    match ctx.types.elem(&info.ty) {
        Ok(e) if e == a.elem => {}
        _ => {
            return Err(refuse(format!(
                "but the pipeline's `{}` holds `{}`",
                a.name,
                a.elem.c_name()
            )));
        }
    }
    let rank = ctx.grid.rank() + usize::from(a.component.is_some());
    let fits = match (a.layout, info.layout) {
        (Layout::Flat, Some(Layout::Flat)) => true,
        (
            Layout::Static | Layout::PointerToArray,
            Some(Layout::Static | Layout::PointerToArray),
        ) => info.depth == rank,
        _ => false,
    };
    if fits {
        Ok(())
    } else {
        Err(refuse(format!(
            "but the pipeline's `{}` is {}",
            a.name,
            layout_words(a.layout)
        )))
    }
}

/// A row-shaped parameter (`float (*u)[M]`) must have rows as long as the
/// `size` clause's inner extents: checked before the pipeline, in the caller's
/// words, where the declaration does not say so by its text.
fn row_check(
    a: &Array,
    index: usize,
    param: &Param,
    values: &BTreeMap<String, String>,
    ctx: &Context,
) -> Option<Vec<(usize, LayoutCheck)>> {
    if a.layout == Layout::Flat {
        return None;
    }
    let sizes = row_sizes(param.declarator, ctx.source);
    let grid: &Grid = ctx.grid;
    let skip = usize::from(a.component.is_some());
    let inner: Vec<&str> = grid.dims.iter().skip(1).map(|d| d.n.as_str()).collect();
    let sizes: Vec<&String> = sizes.iter().skip(skip).collect();
    if sizes.len() != inner.len() {
        return None;
    }
    let mut out = Vec::new();
    for (size, extent) in sizes.iter().zip(&inner) {
        let size = substitute(size, values);
        let same = |t: &str| t.split_whitespace().collect::<String>();
        if same(&size) == same(extent) {
            continue;
        }
        out.push((
            index,
            LayoutCheck {
                holds: format!("(long)({size}) == (long)({extent})"),
                otherwise: format!(
                    "the parameter `{}` takes `{}` with rows of {size} elements, not the {extent} of \
                     the size clause",
                    param.name, a.name
                ),
            },
        ));
    }
    Some(out)
}

/// Check what a sweep function's sweep reads from outside it, now that its
/// scalars are known: a parameter is the call's value; a variable of the file
/// is read where the loop stands, so the caller must not hide it; a local of
/// the function outside the loop nest has no value there.
pub fn check_scalars(
    sweep: &mut Sweep,
    bound: &Bound,
    time_loop: Node,
    tree: &Tree,
    source: &str,
) -> DiagResult<()> {
    let root = tree.root_node();
    let Some(at) = root.descendant_for_byte_range(sweep.span.start, sweep.span.end) else {
        return Ok(());
    };
    let mut errors = Vec::new();
    let inside = |n: Node| bound.def.byte_range().contains(&n.start_byte());
    for sc in &mut sweep.scalars {
        if let Some(v) = bound.values.get(&sc.name) {
            sc.value = v.clone();
            continue;
        }
        let Some((decl, declarator)) = find_decl(&sc.name, at, tree, source) else {
            continue;
        };
        if inside(decl) {
            if decl.kind() == "parameter_declaration" || sc.role != ScalarRole::Read {
                continue;
            }
            errors.push(Diagnostic::new(
                sc.span.clone(),
                format!(
                    "`{}` is a local of `{}` that its sweep reads, declared outside the loop nest",
                    sc.name, bound.name
                ),
                "no value where the time loop stands",
                format!(
                    "tpace evaluates what a sweep reads from outside it where the time loop stands: \
                     pass `{}` to `{}` as a parameter, or declare it inside the loop nest",
                    sc.name, bound.name
                ),
            ));
            continue;
        }
        // A variable of the file: the caller must see the same one.
        let seen = find_decl(&sc.name, time_loop, tree, source);
        if seen.is_none_or(|(_, d)| d.id() != declarator.id()) {
            errors.push(Diagnostic::new(
                sc.span.clone(),
                format!(
                    "`{}` in `{}` is a variable of the file, but where the time loop stands \
                     `{}` names another one",
                    sc.name, bound.name, sc.name
                ),
                "hidden at the call",
                format!(
                    "rename the caller's `{}`, or pass the value to `{}` as a parameter",
                    sc.name, bound.name
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_keeps_member_names_and_parenthesises() {
        let values: BTreeMap<String, String> = [
            ("nx".to_string(), "n + 2".to_string()),
            ("m".to_string(), "p->cols".to_string()),
        ]
        .into();
        assert_eq!(substitute("nx - 1", &values), "(n + 2) - 1");
        assert_eq!(substitute("q->nx * m", &values), "q->nx * (p->cols)");
        assert_eq!(substitute("NX - 1", &values), "NX - 1");
    }
}
