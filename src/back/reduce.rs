//! Printing helpers for reductions in sweeps and the host statements of the time
//! loop, shared by every target.
//!
//! A kernel that reduces declares, per point, a fresh variable of the
//! accumulator's name at the identity, so that the user's update statements
//! (`gosa += ss * ss`) compute the point's own term unchanged; the point's term
//! is then combined into a per-thread accumulator if the chunk owns the point
//! (`tpace_count_window`), and the target combines those into the step's slot.
//! After the executor, the host replays the time loop: per step the counter,
//! the host statements in their place, and at each reducing sweep the step's
//! result combined into the variable, as the sequential loop would.

use super::common::indent_at;
use crate::ir::{ElemType, Program, ReduceOp, Reduction};

/// The reductions of sweep `s`, with their index into `Pipeline::reductions`.
pub fn of_sweep(program: &Program, s: usize) -> Vec<(usize, &Reduction)> {
    program
        .pipeline
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

/// The runtime's `enum tpace_reduce_op` constant.
pub fn op_constant(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "TPACE_RED_SUM",
        ReduceOp::Max => "TPACE_RED_MAX",
        ReduceOp::Min => "TPACE_RED_MIN",
    }
}

/// The identity of the reduction as a C expression of its type.
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

/// Per point, before the body: a fresh accumulator per reduction at the identity.
pub fn point_begin(program: &Program, s: usize, pad: &str) -> String {
    of_sweep(program, s)
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

/// Per point, after the body: its terms join the thread's accumulators if the chunk
/// owns the point (`outer` is the outermost index, `lo`/`hi` the counted planes).
pub fn point_end(
    program: &Program,
    s: usize,
    outer: &str,
    lo: &str,
    hi: &str,
    pad: &str,
) -> String {
    let reds = of_sweep(program, s);
    if reds.is_empty() {
        return String::new();
    }
    let mut w =
        format!("{pad}if ({outer} >= {lo} && {outer} < {hi}) {{ /* a point this chunk owns */\n");
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

/// `tp_cnt_lo`, `tp_cnt_hi`: the planes of a reducing sweep's window `[from, to)`
/// along the cut axis whose points this chunk counts (`tpace_count_window`), at `pad`.
pub fn count_window(from: &str, to: &str, pad: &str) -> String {
    format!(
        "{pad}/* The planes whose points this chunk's reductions count (each point once per step). */\n\
         {pad}long tp_cnt_lo, tp_cnt_hi;\n\
         {pad}tpace_count_window(&tp.plan, &tp_ch, {from}, {to}, &tp_cnt_lo, &tp_cnt_hi);\n"
    )
}

/// Per reduction of sweep `s`, its accumulator at the identity, at `pad`; `who`
/// holds it (a CUDA thread, an OpenACC kernel on a chunk).
pub fn accumulators(program: &Program, s: usize, pad: &str, who: &str) -> String {
    of_sweep(program, s)
        .iter()
        .map(|(i, r)| {
            format!(
                "{pad}{ty} {acc} = {id}; /* {who}'s {op} of the points it owns */\n",
                ty = r.elem.c_name(),
                acc = acc_name(*i),
                id = identity(r),
                op = r.op.word(),
            )
        })
        .collect()
}

/// Declarations of `tp_reds[]` for the executor, at 4 spaces (empty without reductions).
pub fn setup(program: &Program) -> String {
    let reds = &program.pipeline.reductions;
    if reds.is_empty() {
        return String::new();
    }
    let mut w = format!(
        "    /* The sweeps' reductions: one result per time step each, combined into the variable\n\
         \x20    * when the host replays the time loop after the pipeline. */\n\
         \x20   tpace_reduction tp_reds[{}];\n    memset(tp_reds, 0, sizeof tp_reds);\n",
        reds.len()
    );
    for (i, r) in reds.iter().enumerate() {
        w.push_str(&format!(
            "    tp_reds[{i}].name = \"{var}\"; tp_reds[{i}].elem = sizeof({ty}); tp_reds[{i}].op = {op}; /* sweep {s} */\n",
            var = r.var,
            ty = r.elem.c_name(),
            op = op_constant(r.op),
            s = r.sweep + 1,
        ));
    }
    w
}

/// The step of the time loop (0-based) that step `tp_i` of the chunk's block is.
pub const STEP: &str = "tp_ch.t + tp_i";

/// The host replay of the time loop, at 4 spaces, inside the pipeline block after
/// `tpace_end` (empty when the time loop holds only sweeps without reductions).
pub fn host_replay(program: &Program) -> String {
    let p = &program.pipeline;
    if p.host.is_empty() && p.reductions.is_empty() {
        return String::new();
    }
    let src = &program.source;
    let mut w = String::from(
        "    /* The time loop's host statements and the sweeps' reduction results, step by step on\n\
         \x20    * the host now that the device is done: the variables end as the sequential loop\n\
         \x20    * leaves them, and the program prints what it would print. */\n",
    );
    w.push_str("    for (long tp_step = 0; tp_step < tp.plan.s.steps; tp_step++) {\n");
    let t = &p.time;
    let counter_used = p
        .host
        .iter()
        .any(|h| super::common::mentions(&src[h.span.clone()], &t.var));
    if counter_used {
        let decl = t
            .declared_type
            .as_deref()
            .map(|ty| format!("{ty} "))
            .unwrap_or_default();
        w.push_str(&format!(
            "        {decl}{v} = ({start}) + tp_step;\n",
            v = t.var,
            start = t.start
        ));
    }
    for s in 0..=p.body.len() {
        for h in p.host.iter().filter(|h| h.before == s) {
            w.push_str(&format!("        {}\n", reindent(program, h.span.clone())));
        }
        if s < p.body.len() {
            for (i, r) in of_sweep(program, s) {
                let value = format!(
                    "((const {ty} *)tp_reds[{i}].partial)[tp_step]",
                    ty = r.elem.c_name()
                );
                w.push_str(&format!(
                    "        {var} = {}; /* sweep {n}'s {op} in this step */\n",
                    combine(r.op, &r.var, &value),
                    var = r.var,
                    n = s + 1,
                    op = r.op.word(),
                ));
            }
        }
    }
    w.push_str("    }\n");
    if !p.reductions.is_empty() {
        w.push_str("    tpace_reductions_end(&tp);\n");
    }
    w
}

/// A statement's text with its continuation lines moved to 8 spaces of indent.
fn reindent(program: &Program, span: crate::ir::Span) -> String {
    let src = &program.source;
    let base = indent_at(src, span.start);
    src[span]
        .lines()
        .enumerate()
        .map(|(i, line)| {
            if i == 0 {
                line.to_string()
            } else {
                format!(
                    "        {}",
                    line.strip_prefix(base.as_str()).unwrap_or(line)
                )
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `tpace_dump` calls for each reduction variable (rank 0: one value), at `indent`.
pub fn dump_values(program: &Program, indent: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut w = String::new();
    for r in &program.pipeline.reductions {
        if seen.contains(&r.var.as_str()) {
            continue;
        }
        seen.push(&r.var);
        w.push_str(&format!(
            "{indent}tpace_dump(\"{v}\", &{v}, sizeof({v}), 0, NULL, NULL); /* a reduction's final value */\n",
            v = r.var
        ));
    }
    w
}
