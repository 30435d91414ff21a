//! Target-neutral pieces of a kernel that every writer prints its own way: the
//! sweep's body with accesses rewritten, what the kernel reads by value, its
//! per-point temporaries, and the per-point side of its reductions.

use crate::ir::{Access, ElemType, Program, ReduceOp, Reduction, ScalarRole, Subscript, Sweep};
use crate::plan::Unit;
use crate::text::{mentions, splice};
use std::collections::BTreeSet;

/// Name of the C variable that points at an array's chunk buffer in a kernel.
pub fn dev_name(ident: &str) -> String {
    format!("tp_{ident}")
}

/// The arrays sweep `s` touches (indices into the pipeline's arrays) and those it writes.
pub fn sweep_arrays(unit: Unit<'_>, s: usize) -> (BTreeSet<usize>, &BTreeSet<usize>) {
    let f = &unit.facts.sweeps[s];
    (f.reads.union(&f.writes).copied().collect(), &f.writes)
}

/// One-line description of a sweep for the generated comments.
pub fn sweep_summary(unit: Unit<'_>, s: usize) -> String {
    let p = unit.pipeline;
    let f = &unit.facts.sweeps[s];
    let (line, _) = crate::diag::line_col(&unit.program.source, p.body[s].span.start);
    let names = |set: &BTreeSet<usize>| {
        set.iter()
            .map(|a| p.arrays[*a].display_name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let what = match f.copy {
        Some((d, r)) => format!(
            "copies {} into {}",
            p.arrays[r].display_name(),
            p.arrays[d].display_name()
        ),
        None => {
            let mut from: Vec<String> = f
                .reads
                .iter()
                .map(|a| p.arrays[*a].display_name())
                .collect();
            from.extend(p.body[s].step_values.iter().map(|v| v.text.clone()));
            if from.is_empty() {
                format!("writes {}", names(&f.writes))
            } else {
                format!("writes {} from {}", names(&f.writes), from.join(", "))
            }
        }
    };
    format!("Sweep {n} (line {line}) {what}", n = s + 1).replace("*/", "* /")
}

/// The innermost body of a sweep, verbatim except that every listed-array access
/// is replaced by `access(acc)` and per-step values by their locals, without its
/// outer braces.
pub fn body_with(program: &Program, sweep: &Sweep, access: &dyn Fn(&Access) -> String) -> String {
    let mut seen = BTreeSet::new();
    let mut edits = Vec::new();
    for acc in &sweep.accesses {
        if !seen.insert(acc.span.start) {
            continue;
        }
        edits.push((
            acc.span.start - sweep.body.start..acc.span.end - sweep.body.start,
            access(acc),
        ));
    }
    for v in &sweep.step_values {
        edits.push((
            v.span.start - sweep.body.start..v.span.end - sweep.body.start,
            v.local.clone(),
        ));
    }
    let body = &program.source[sweep.body.clone()];
    let text = splice(body, edits);
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(trimmed);
    inner.trim().to_string()
}

/// Whether a kernel of `sweep` needs `tp_origin` ([`origin`]): it keeps a flat
/// subscript of the user's ([`kept_index`]).
pub fn needs_origin(sweep: &Sweep) -> bool {
    sweep
        .accesses
        .iter()
        .any(|a| matches!(a.kept, Some(Subscript::Flat(_))))
}

/// Whether a kernel of `sweep` addresses any element by its offsets from the
/// point (else every access keeps the user's subscripts, and the point's own
/// buffer index goes unused).
pub fn uses_offsets(sweep: &Sweep) -> bool {
    sweep.accesses.iter().any(|a| a.kept.is_none())
}

/// Whether a kernel of `sweep` addresses any element through the chunk buffer's
/// shape (`tp_base`, `tp_lo{pos}`, `tp_n{pos}`): by offsets, or by kept subscripts
/// one per dimension.
pub fn uses_extents(sweep: &Sweep) -> bool {
    sweep
        .accesses
        .iter()
        .any(|a| !matches!(a.kept, Some(Subscript::Flat(_))))
}

/// C for `tp_origin` where a launch `tp_l` of a pipeline whose inputs struct is
/// `inputs` is in scope: the program's flat index of the chunk buffer's first
/// element, `tp_base - lo` planes in, `lo` the first plane of the whole grid
/// (the pipeline's input; a launch on one of several devices or ranks knows
/// only its slab's first plane).
pub fn origin(rank: usize, inputs: &str) -> String {
    let plane: String = (1..rank)
        .map(|pos| format!(" * tp_l->tp_dim_n[{pos}]"))
        .collect();
    format!("(tp_l->tp_base - ((const {inputs} *)tp_l->tp_in)->tp_dim_lo[0]){plane}")
}

/// The chunk-buffer index of an access that keeps the user's subscripts
/// ([`crate::ir::Access::kept`]), in a kernel where `tp_base` is the buffer's
/// first plane, `tp_lo{pos}` and `tp_n{pos}` each inner dimension's first index
/// and extent, and (for a flat subscript, see [`needs_origin`]) `tp_origin` the
/// program's index of the buffer's first element: the buffer holds whole planes,
/// row-major, as the program's flat array does.
pub fn kept_index(kept: &Subscript) -> String {
    match kept {
        Subscript::Flat(e) => format!("(long)({e}) - tp_origin"),
        Subscript::PerDim(indices) => {
            let mut e = String::new();
            for (pos, i) in indices.iter().enumerate() {
                e = if pos == 0 {
                    format!("((long)({i}) - tp_base)")
                } else {
                    format!("({e} * tp_n{pos} + ((long)({i}) - tp_lo{pos}))")
                };
            }
            e
        }
    }
}

/// The sweep body's text without its per-step values (which the host
/// evaluates), to ask what the kernel itself uses.
pub fn kernel_text(program: &Program, sweep: &Sweep) -> String {
    let edits = sweep
        .step_values
        .iter()
        .map(|v| (v.span.clone(), String::new()))
        .collect();
    splice(&program.source[..sweep.body.end], edits)[sweep.body.start..].to_string()
}

/// Whether the kernel of `sweep` uses the time loop's counter.
pub fn uses_time(unit: Unit<'_>, sweep: &Sweep) -> bool {
    mentions(&kernel_text(unit.program, sweep), &unit.pipeline.time.var)
}

/// Declarations of a sweep's per-point temporaries (Himeno's `s0`): kernel locals.
pub fn per_point_locals(sweep: &Sweep, pad: &str) -> String {
    let mut w = String::new();
    for sc in sweep
        .scalars
        .iter()
        .filter(|s| s.role == ScalarRole::PerPoint)
    {
        if let Some(ty) = &sc.ty {
            w.push_str(&format!(
                "{pad}{ty} {}; /* written at each point before use */\n",
                sc.name
            ));
        }
    }
    w
}

/// The names of a sweep's per-point temporaries.
pub fn per_point_names(sweep: &Sweep) -> Vec<&str> {
    sweep
        .scalars
        .iter()
        .filter(|s| s.role == ScalarRole::PerPoint)
        .map(|s| s.name.as_str())
        .collect()
}

/// The reductions of sweep `s`, with their index into `Pipeline::reductions`.
pub fn reductions_of(unit: Unit<'_>, s: usize) -> Vec<(usize, &Reduction)> {
    unit.pipeline
        .reductions
        .iter()
        .enumerate()
        .filter(|(_, r)| r.sweep == s)
        .collect()
}

/// C name of the accumulator that holds reduction `i`'s terms in a kernel.
pub fn acc_name(i: usize) -> String {
    format!("tp_acc{i}")
}

/// The identity of a reduction as a C expression of its type.
pub fn identity(r: &Reduction) -> String {
    let ty = r.elem.c_name();
    match (r.op, r.elem) {
        (ReduceOp::Sum, ElemType::Float) => "0.0f".into(),
        (ReduceOp::Sum, ElemType::Double) => "0.0".into(),
        (ReduceOp::Max, _) => format!("-({ty})HUGE_VAL"),
        (ReduceOp::Min, _) => format!("({ty})HUGE_VAL"),
    }
}

/// `a` combined with `b` by the reduction's operator, as a C expression.
pub fn combine(op: ReduceOp, a: &str, b: &str) -> String {
    match op {
        ReduceOp::Sum => format!("{a} + {b}"),
        ReduceOp::Max => format!("TPACE_MAX({a}, {b})"),
        ReduceOp::Min => format!("TPACE_MIN({a}, {b})"),
    }
}

/// Per point, before the body: a fresh variable of each accumulator's name at
/// the identity, so that the user's update statements compute the point's term.
pub fn point_begin(unit: Unit<'_>, s: usize, pad: &str) -> String {
    reductions_of(unit, s)
        .iter()
        .map(|(_, r)| {
            format!(
                "{pad}{ty} {var} = {id}; /* this point's term of the {op} into {var} */\n",
                ty = r.elem.c_name(),
                var = r.var,
                id = identity(r),
                op = r.op.word(),
            )
        })
        .collect()
}

/// Per point, after the body: its terms join the accumulators if the chunk
/// counts the point (`outer` is the outermost index, `lo`/`hi` the counted planes).
pub fn point_end(unit: Unit<'_>, s: usize, outer: &str, lo: &str, hi: &str, pad: &str) -> String {
    let reds = reductions_of(unit, s);
    if reds.is_empty() {
        return String::new();
    }
    let mut w =
        format!("{pad}if ({outer} >= {lo} && {outer} < {hi}) {{ /* a point this chunk counts */\n");
    for (i, r) in reds {
        let acc = acc_name(i);
        w.push_str(&format!(
            "{pad}    {acc} = {};\n",
            combine(r.op, &acc, &r.var)
        ));
    }
    w.push_str(&format!("{pad}}}\n"));
    w
}

/// Per reduction of sweep `s`, its accumulator at the identity, at `pad`; `who`
/// holds it (a CUDA thread, an OpenACC kernel on a chunk).
pub fn accumulators(unit: Unit<'_>, s: usize, pad: &str, who: &str) -> String {
    reductions_of(unit, s)
        .iter()
        .map(|(i, r)| {
            format!(
                "{pad}{ty} {acc} = {id}; /* {who}'s {op} of the points it counts */\n",
                ty = r.elem.c_name(),
                acc = acc_name(*i),
                id = identity(r),
                op = r.op.word(),
            )
        })
        .collect()
}

/// `" + o"`, `" - o"` or nothing, for an index offset.
pub fn offset_text(o: i64) -> String {
    match o {
        0 => String::new(),
        o if o > 0 => format!(" + {o}"),
        o => format!(" - {}", -o),
    }
}

/// How a kernel language marks a variable that may go unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaybeUnused {
    /// `__attribute__((unused)) int j = ...;` (CUDA: nvcc warns on `(void)j` too).
    Attribute,
    /// `int j = ...; (void)j;` (OpenCL C).
    VoidCast,
}

/// The declaration of a sweep's index variable in a kernel, `TY VAR = (TY)VALUE;`
/// (no newline), or `None` where `body` does not mention `var`. When the body
/// calls one of the program's function-like macros, the mention may be an
/// argument the macro drops (`#define W(i, j) w0 * (i)`): the variable is
/// marked as maybe unused, so that the kernel compiles without a warning.
pub fn index_declaration(
    program: &Program,
    body: &str,
    (ty, var, value): (&str, &str, &str),
    unused: MaybeUnused,
) -> Option<String> {
    if !mentions(body, var) {
        return None;
    }
    let plain = format!("{ty} {var} = ({ty}){value};");
    if !calls_a_macro(body, &program.user_macros) {
        return Some(plain);
    }
    Some(match unused {
        MaybeUnused::Attribute => format!("__attribute__((unused)) {plain}"),
        MaybeUnused::VoidCast => format!("{plain} (void){var};"),
    })
}

/// Whether C text calls one of `macros` (`NAME(`, blanks allowed before the parenthesis).
fn calls_a_macro(text: &str, macros: &[String]) -> bool {
    let is_ident = |c: char| c == '_' || c.is_ascii_alphanumeric();
    macros.iter().any(|m| {
        text.match_indices(m.as_str()).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + m.len()..].trim_start();
            !before.is_some_and(is_ident) && after.starts_with('(')
        })
    })
}
