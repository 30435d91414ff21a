//! What replaces a pipelined time loop in the user's function, and what is
//! declared before that function: the loop's inputs are evaluated once, the
//! run function does the steps, and the host then replays the loop's host
//! statements and reductions step by step, so that every variable ends as the
//! sequential loop leaves it.

use super::inputs;
use super::names::{self, Names};
use crate::ir::{Pipeline, ReduceOp, ScalarRole};
use crate::plan::Unit;
use crate::text::{indent_at, mentions};
use std::fmt::Write;

/// The block that replaces the time loop (first line unindented, the rest at
/// four spaces; the caller indents it to the loop's column).
pub fn block(unit: Unit<'_>, names: &Names) -> String {
    let p = unit.pipeline;
    let mut w = String::new();
    let _ = writeln!(
        w,
        "/* tpace: this time loop ({loc}) runs out-of-core on the accelerator, in {run} after\n \
         * the program: the grid is cut into chunks along dim({cut}); each chunk goes to the device,\n \
         * advances k steps there and comes back, copies overlapping kernels on several queues. */\n{{\n    \
         {inputs} tp_in; /* what it reads from here, evaluated once, before it starts */",
        loc = p.location,
        run = names.run(),
        cut = p.grid.rank(),
        inputs = names.inputs(),
    );
    w.push_str(&inputs::assignments(unit, "    "));
    if inputs::has_step_values(p) {
        w.push_str(&step_values(unit, names));
    }
    let _ = writeln!(w, "    {}(&tp_in);", names.run());
    w.push_str(&replay(unit));
    w.push_str(&dump_reductions(p));
    if needs_free(p) {
        let _ = writeln!(w, "    {}(&tp_in);", names.free());
    }
    w.push_str(&after(p));
    w.push('}');
    w
}

/// Whether the pipeline hands back memory the call site frees.
pub fn needs_free(p: &Pipeline) -> bool {
    inputs::has_step_values(p) || !p.reductions.is_empty()
}

/// The per-step values (`fict[t]`), read on the host at each step the way the
/// loop reads them, into the arrays the pipeline allocates.
fn step_values(unit: Unit<'_>, names: &Names) -> String {
    let p = unit.pipeline;
    let t = &p.time;
    let mut w = format!(
        "    {}(&tp_in);\n    /* The per-step values the sweeps read, as the loop reads them at each step. */\n    \
         for (long tp_step = 0; tp_step < tp_in.tp_steps; tp_step++) {{\n",
        names.alloc()
    );
    let decl = t
        .declared_type
        .as_deref()
        .map(|ty| format!("{ty} "))
        .unwrap_or_default();
    let _ = writeln!(w, "        {decl}{} = {};", t.var, t.value_at("tp_step"));
    for (s, sweep) in p.body.iter().enumerate() {
        for (v, field) in names::step_values(s, sweep) {
            let _ = writeln!(w, "        tp_in.{field}[tp_step] = {};", v.text);
        }
    }
    w.push_str("    }\n");
    w
}

/// `a` combined with `b` by a reduction's operator, as C that needs none of
/// tpace's macros (the call site is compiled before the runtime).
fn combine(op: ReduceOp, a: &str, b: &str) -> String {
    match op {
        ReduceOp::Sum => format!("{a} + {b}"),
        ReduceOp::Max => format!("({a} > {b} ? {a} : {b})"),
        ReduceOp::Min => format!("({a} < {b} ? {a} : {b})"),
    }
}

/// The host replay of the time loop: per step the counter, the host statements
/// in their place and each reducing sweep's result combined into its variable
/// (empty when the loop holds only sweeps without reductions).
fn replay(unit: Unit<'_>) -> String {
    let p = unit.pipeline;
    if p.host.is_empty() && p.reductions.is_empty() {
        return String::new();
    }
    let src = &unit.program.source;
    let mut w = String::from(
        "    /* The time loop's host statements and the sweeps' reduction results, step by step on\n     \
         * the host now that the device is done: the variables end as the sequential loop\n     \
         * leaves them, and the program prints what it would print. */\n    \
         for (long tp_step = 0; tp_step < tp_in.tp_steps; tp_step++) {\n",
    );
    let t = &p.time;
    if p.host
        .iter()
        .any(|h| mentions(&src[h.span.clone()], &t.var))
    {
        let decl = t
            .declared_type
            .as_deref()
            .map(|ty| format!("{ty} "))
            .unwrap_or_default();
        let _ = writeln!(w, "        {decl}{} = {};", t.var, t.value_at("tp_step"));
    }
    for s in 0..=p.body.len() {
        for h in p.host.iter().filter(|h| h.before == s) {
            let _ = writeln!(w, "        {}", reindent(src, h.span.clone()));
        }
        for (i, r) in p
            .reductions
            .iter()
            .enumerate()
            .filter(|(_, r)| r.sweep == s)
        {
            let value = format!("tp_in.{}[tp_step]", names::reduction_field(i));
            let _ = writeln!(
                w,
                "        {var} = {}; /* sweep {n}'s {op} in this step */",
                combine(r.op, &r.var, &value),
                var = r.var,
                n = s + 1,
                op = r.op.word(),
            );
        }
    }
    w.push_str("    }\n");
    w
}

/// A statement's text with its continuation lines moved to 8 spaces of indent.
fn reindent(src: &str, span: crate::ir::Span) -> String {
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

/// `tpace_dump` of each reduction variable's final value (for `tpace run`).
fn dump_reductions(p: &Pipeline) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut w = String::new();
    for r in &p.reductions {
        if seen.contains(&r.var.as_str()) {
            continue;
        }
        seen.push(&r.var);
        let _ = writeln!(
            w,
            "    tpace_dump(\"{v}\", &{v}, sizeof({v}), 0, 0, 0); /* the reduction's final value, for `tpace run` */",
            v = r.var
        );
    }
    w
}

/// The time counter and the spatial loop indices declared outside the loops end
/// where the sequential loops leave them, so that code after the loop sees the
/// same values; per-point temporaries live in the kernels now.
fn after(p: &Pipeline) -> String {
    let mut w = String::new();
    let t = &p.time;
    if t.declared_type.is_none() {
        let _ = writeln!(
            w,
            "    {v} = {value}; /* where the sequential loop leaves it */\n    (void)&{v};",
            v = t.var,
            value = t.value_at("(tp_in.tp_steps > 0 ? tp_in.tp_steps : 0)")
        );
    }
    let mut stmts = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    // A sweep function's loop indices and temporaries are its own.
    for (s, sweep) in p.body.iter().enumerate().filter(|(_, s)| s.call.is_none()) {
        let mut ran: Vec<String> = Vec::new();
        for l in sweep.loops.iter().filter(|l| l.declared_type.is_none()) {
            let (lo, hi) = (
                format!("tp_in.tp_box_lo[{s}][{}]", l.pos),
                format!("tp_in.tp_box_hi[{s}][{}]", l.pos),
            );
            let value = format!("{v} = {lo} > {hi} ? {lo} : {hi};", v = l.var);
            if ran.is_empty() {
                stmts.push(value);
            } else {
                stmts.push(format!("if ({}) {value}", ran.join(" && ")));
            }
            ran.push(format!("{lo} < {hi}"));
            if !names.contains(&l.var.as_str()) {
                names.push(&l.var);
            }
        }
    }
    if !stmts.is_empty() {
        let _ = writeln!(
            w,
            "    /* ... and so do the spatial loop indices */\n    if (tp_in.tp_steps > 0) {{"
        );
        for st in stmts {
            let _ = writeln!(w, "        {st}");
        }
        let voids: String = names.iter().map(|n| format!(" (void)&{n};")).collect();
        let _ = writeln!(w, "    }}\n   {voids}");
    }
    let mut temps: Vec<&str> = Vec::new();
    for sweep in p.body.iter().filter(|s| s.call.is_none()) {
        for sc in &sweep.scalars {
            if sc.role == ScalarRole::PerPoint && !temps.contains(&sc.name.as_str()) {
                temps.push(&sc.name);
            }
        }
    }
    if !temps.is_empty() {
        let voids: String = temps.iter().map(|t| format!(" (void)&{t};")).collect();
        let _ = writeln!(w, "   {voids} /* per-point temporaries of the sweeps */");
    }
    w
}

/// What is declared before the function that holds the pipeline: its inputs
/// struct and the functions the call site calls (defined after the program).
pub fn prologue(unit: Unit<'_>, names: &Names) -> String {
    let p = unit.pipeline;
    let mut w = inputs::definition(unit, names);
    let _ = writeln!(
        w,
        "static void {}({} *tp_in); /* runs the pipeline (after the program) */",
        names.run(),
        names.inputs()
    );
    if inputs::has_step_values(p) {
        let _ = writeln!(
            w,
            "static void {}({} *tp_in); /* room for the per-step values */",
            names.alloc(),
            names.inputs()
        );
    }
    if needs_free(p) {
        let _ = writeln!(
            w,
            "static void {}({} *tp_in); /* frees what the pipeline handed back */",
            names.free(),
            names.inputs()
        );
    }
    w
}

/// Declarations every file with pipelines needs once, before the first of them.
pub fn shared_prologue(any_reduction: bool) -> String {
    if !any_reduction {
        return String::new();
    }
    "/* tpace: writes a value to the file TPACE_DUMP names (for `tpace run`; defined after the program). */\n\
     static void tpace_dump(const char *, const void *, unsigned long, int, const long *, const long *);\n"
        .to_string()
}

/// Declarations `--mpi` adds before the first function: MPI's start and, for a
/// program that opens files, `fopen` routed to rank 0 for writing.
pub fn mpi_prologue(fopen: bool) -> String {
    let mut w = String::from(
        "/* tpace (--mpi): starts MPI and keeps rank 0's output alone (defined after the program). */\n\
         static void tpace_mpi_start(int *, char ***);\n",
    );
    if fopen {
        w.push_str(
            "/* tpace (--mpi): every rank runs this program; files it opens for writing are written by\n \
             * rank 0 alone (the other ranks write into /dev/null). */\n\
             static FILE *tpace_mpi_fopen(const char *, const char *);\n\
             #define fopen(tpace_path, tpace_mode) tpace_mpi_fopen(tpace_path, tpace_mode)\n",
        );
    }
    w
}
