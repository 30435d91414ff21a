//! What a pipeline reads from the user's function, evaluated once where its
//! time loop stood and handed to the run function and, through it, to every
//! launcher: a struct, `tpace_pN_in`, the same text in the host program and in
//! a target's device file.
//!
//! Its fields are tpace's own (`tp_` names) and the sweeps' scalars under the
//! user's names (`tp_kw_NAME` for a C++ keyword), in the user's types.

use super::names::{self, Names};
use crate::ir::{Pipeline, Scalar, ScalarRole, Sweep};
use crate::plan::Unit;
use std::fmt::Write;

/// The variables declared outside a sweep that its kernel reads by value:
/// coefficients, sizes. Per-point temporaries and reduction accumulators are
/// the kernel's own locals instead.
pub fn passed(sweep: &Sweep) -> impl Iterator<Item = &Scalar> {
    sweep.scalars.iter().filter(|s| {
        s.role != ScalarRole::PerPoint && s.role != ScalarRole::Reduction && s.ty.is_some()
    })
}

/// Every scalar some sweep's kernel reads, once per name and value, in order of
/// first use.
pub fn scalars(p: &Pipeline) -> Vec<&Scalar> {
    let mut out: Vec<&Scalar> = Vec::new();
    for sweep in &p.body {
        for s in passed(sweep) {
            if !out.iter().any(|o| o.name == s.name && o.value == s.value) {
                out.push(s);
            }
        }
    }
    out
}

/// The struct definition (C, and C++ for a CUDA device file).
pub fn definition(unit: Unit<'_>, names: &Names) -> String {
    let p = unit.pipeline;
    let rank = p.grid.rank();
    let narrays = p.arrays.len().max(1);
    let nsweeps = p.body.len();
    let mut w = String::new();
    let _ = writeln!(
        w,
        "/* tpace: what the pipelined time loop at {} reads from the function around it,\n \
         * evaluated once where the loop stood. */\ntypedef struct {} {{",
        p.location,
        names.inputs()
    );
    let mut field = |decl: String, why: &str| {
        let _ = writeln!(w, "    {decl}; /* {why} */");
    };
    field("long tp_steps".into(), "time steps: the loop's trip count");
    field("long tp_t0".into(), "the time counter's first value");
    field(
        format!("long tp_dim_lo[{rank}], tp_dim_n[{rank}]"),
        "the size clause: first index and extent per dimension, outermost first",
    );
    field(
        format!("void *tp_host[{narrays}]"),
        "each listed array's first grid element",
    );
    field(
        format!("int tp_layout_ok[{}]", checks(p).max(1)),
        "whether each array is laid out as its accesses say",
    );
    field(
        format!("long tp_box_lo[{nsweeps}][{rank}], tp_box_hi[{nsweeps}][{rank}]"),
        "per sweep and dimension, its loop bounds",
    );
    for s in scalars(p) {
        let ty = s.ty.as_deref().unwrap_or("long");
        let name = names::scalar_field(p, s);
        let why = if s.value != s.name {
            format!(
                "`{}`, a sweep function's parameter: the call passes `{}`",
                s.name,
                s.value.replace("*/", "* /")
            )
        } else if name == s.name {
            "read by the sweeps".to_string()
        } else {
            format!("`{}`, read by the sweeps (a C++ keyword)", s.name)
        };
        field(format!("{ty} {name}"), &why);
    }
    for (s, sweep) in p.body.iter().enumerate() {
        for (v, name) in names::step_values(s, sweep) {
            field(
                format!("{} *{name}", v.ty),
                &format!(
                    "per step: `{}` in sweep {}",
                    v.text.replace("*/", "* /"),
                    s + 1
                ),
            );
        }
    }
    for (i, r) in p.reductions.iter().enumerate() {
        field(
            format!("{} *{}", r.elem.c_name(), names::reduction_field(i)),
            &format!(
                "per step: sweep {}'s {} into {} (the pipeline's result)",
                r.sweep + 1,
                r.op.word(),
                r.var
            ),
        );
    }
    let _ = writeln!(w, "}} {};", names.inputs());
    w
}

/// Number of layout checks of the pipeline's arrays.
pub fn checks(p: &Pipeline) -> usize {
    p.arrays.iter().map(|a| a.checks.len()).sum()
}

/// Statements that fill `tp_in` (at `pad`): every field but the per-step values
/// and results, which need the arrays the pipeline allocates.
pub fn assignments(unit: Unit<'_>, pad: &str) -> String {
    let p = unit.pipeline;
    let rank = p.grid.rank();
    let mut w = String::new();
    let t = &p.time;
    let _ = writeln!(w, "{pad}tp_in.tp_steps = {};", t.trip_count());
    let _ = writeln!(w, "{pad}tp_in.tp_t0 = (long)({});", t.start);
    for (pos, d) in p.grid.dims.iter().enumerate() {
        let what = if pos == 0 { ", cut into chunks" } else { "" };
        let _ = writeln!(
            w,
            "{pad}tp_in.tp_dim_lo[{pos}] = (long)({}); tp_in.tp_dim_n[{pos}] = (long)({}); /* dim({}){what} */",
            d.lo,
            d.n,
            rank - pos
        );
    }
    for (i, a) in p.arrays.iter().enumerate() {
        let _ = writeln!(
            w,
            "{pad}tp_in.tp_host[{i}] = {}; /* {} */",
            a.host_base,
            a.display_name().replace("*/", "* /")
        );
    }
    let mut c = 0;
    for a in &p.arrays {
        for check in &a.checks {
            let _ = writeln!(w, "{pad}tp_in.tp_layout_ok[{c}] = {};", check.holds);
            c += 1;
        }
    }
    if c == 0 {
        let _ = writeln!(w, "{pad}tp_in.tp_layout_ok[0] = 1;");
    }
    for (s, sweep) in p.body.iter().enumerate() {
        let (line, _) = crate::diag::line_col(&unit.program.source, sweep.span.start);
        let called = sweep.call.as_ref().map_or(String::new(), |c| {
            let (at, _) = crate::diag::line_col(&unit.program.source, c.span.start);
            format!(
                ", in `{}` called at line {at}: its bounds with the call's values",
                c.function
            )
        });
        let _ = writeln!(w, "{pad}/* sweep {} (line {line}{called}) */", s + 1);
        for pos in 0..rank {
            let l = sweep.loop_for(pos).expect("one loop per dimension");
            let _ = writeln!(
                w,
                "{pad}tp_in.tp_box_lo[{s}][{pos}] = (long)({}); tp_in.tp_box_hi[{s}][{pos}] = (long)({}); /* {} */",
                l.lo,
                l.hi,
                if l.fixed {
                    format!("dim({}), fixed", rank - pos)
                } else {
                    l.var.clone()
                }
            );
        }
    }
    for s in scalars(p) {
        let _ = writeln!(w, "{pad}tp_in.{} = {};", names::scalar_field(p, s), s.value);
    }
    w
}

/// Whether the pipeline has per-step values.
pub fn has_step_values(p: &Pipeline) -> bool {
    p.body.iter().any(|s| !s.step_values.is_empty())
}
