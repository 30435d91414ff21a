//! The one-step kernel of a 3-D sweep: the threads of a block cover a tile of
//! the two inner axes, one column each, and march along the outermost axis over
//! their block's segment of planes. What a column reads of itself along that
//! axis at several planes (`a[i-1][j][k]`, `a[i][j][k]`, `a[i+1][j][k]`) comes
//! from a queue of registers that moves one plane a step, so each plane of a
//! column is loaded once; the queue of each array's own column also loads a
//! few planes ahead, so that several loads from device memory are in flight
//! while a plane is computed. The same holds for any column of the stencil
//! (`p[i±1][j+1][k]` in Himeno) read at more than one plane. Every other read
//! is a load at a constant offset from the column's pointer, which the
//! neighbouring threads' queues have brought into the cache.
//!
//! A queue only loads planes the sweep reads anyway (its range comes from the
//! reads made at every point), and the loads ahead stop at the segment's end,
//! so no load leaves the chunk buffer. The expression the user wrote is
//! computed as written: only where its operands come from changes.

use super::sweep_params;
use crate::back::kernel::{
    MaybeUnused, accumulators, body_with, dev_name, index_declaration, per_point_locals,
    point_begin, point_end, reductions_of, sweep_summary,
};
use crate::ir::{Access, AccessKind, Sweep};
use crate::lower::{LoweredPipeline, glue};
use std::fmt::Write;

/// One column of an array that a sweep reads (its offsets along the inner
/// axes) and the planes of it that a queue keeps, relative to the marching
/// plane: `lo ..= hi`, and `ahead` more loaded in advance.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Queue {
    array: usize,
    inner: [i64; 2],
    lo: i64,
    hi: i64,
    ahead: bool,
}

impl Queue {
    /// The queue's C name.
    fn name(&self, n: usize) -> String {
        format!("tp_q{n}")
    }
}

/// The queues of `sweep`: per array it reads, its own column (reads at offset 0
/// of the inner axes) always, loading ahead; any other column read at more than
/// one plane at every point. A queue's planes are those the reads made at every
/// point span (offset 0 included for an own column, which is in the box).
fn queues(sweep: &Sweep) -> Vec<Queue> {
    let mut out: Vec<Queue> = Vec::new();
    for acc in sweep.accesses.iter().filter(|a| a.kind == AccessKind::Read) {
        let inner = [acc.offsets[1], acc.offsets[2]];
        let own = inner == [0, 0];
        let (lo, hi) = if own || acc.unconditional {
            (acc.offsets[0], acc.offsets[0])
        } else {
            continue;
        };
        match out
            .iter_mut()
            .find(|q| q.array == acc.array && q.inner == inner)
        {
            Some(q) => {
                q.lo = q.lo.min(lo);
                q.hi = q.hi.max(hi);
            }
            None => out.push(Queue {
                array: acc.array,
                inner,
                lo: if own { lo.min(0) } else { lo },
                hi: if own { hi.max(0) } else { hi },
                ahead: own,
            }),
        }
    }
    // A column read at one plane only gains nothing from a queue but its own.
    out.retain(|q| q.ahead || q.hi > q.lo);
    out.sort_by_key(|q| (q.array, !q.ahead, q.inner));
    out
}

/// The queue (its index) that holds what `acc` reads, if any.
fn queue_of(queues: &[Queue], acc: &Access) -> Option<usize> {
    queues.iter().position(|q| {
        q.array == acc.array
            && q.inner == [acc.offsets[1], acc.offsets[2]]
            && (q.lo..=q.hi).contains(&acc.offsets[0])
    })
}

/// Element offset, from a column's pointer, of the element at `offsets`.
fn offset_expr(offsets: &[i64]) -> String {
    let mut terms = Vec::new();
    for (o, unit) in offsets.iter().zip(["tp_s0", "tp_s1", ""]) {
        let term = match (o.abs(), unit.is_empty()) {
            (0, _) => continue,
            (m, true) => m.to_string(),
            (1, false) => unit.to_string(),
            (m, false) => format!("{m} * {unit}"),
        };
        let sign = if *o < 0 { "-" } else { "+" };
        terms.push(format!("{sign} {term}"));
    }
    let text = terms.join(" ");
    match text.strip_prefix("+ ") {
        Some(t) => t.to_string(),
        None if text.is_empty() => "0".into(),
        None => format!("-{}", &text[2..]),
    }
}

/// The `__global__` kernel of the 3-D sweep `s` (see the module docs).
pub fn kernel(lp: &LoweredPipeline<'_>, s: usize) -> String {
    let unit = lp.unit;
    let p = unit.pipeline;
    let sweep = &p.body[s];
    let qs = queues(sweep);
    let (used, _) = crate::back::kernel::sweep_arrays(unit, s);
    let ptr = |a: usize| format!("tp_p_{}", &p.arrays[a].ident());
    let body = body_with(unit.program, sweep, &|acc| {
        if acc.kind == AccessKind::Write {
            return format!("{}[0]", ptr(acc.array));
        }
        match queue_of(&qs, acc) {
            Some(n) => format!("{}[{}]", qs[n].name(n), acc.offsets[0] - qs[n].lo),
            None => format!("{}[{}]", ptr(acc.array), offset_expr(&acc.offsets)),
        }
    });
    let mut w = String::new();
    writeln!(
        w,
        "\n/* {summary}: the threads of a block cover a tile of the two inner axes, one column each, and\n\
         \x20* march along the outermost over their block's segment of planes. Reads of a column at several\n\
         \x20* planes come from a queue of registers that moves one plane a step (each plane is loaded once),\n\
         \x20* and the queue of each array's own column loads TP_AHEAD planes in advance. */\n\
         static __global__ void __launch_bounds__(256) {name}({params})\n{{",
        summary = sweep_summary(unit, s),
        name = lp.names.kernel(s),
        params = sweep_params(lp, s).join(", "),
    )
    .unwrap();
    // 32-bit words a plane of the columns loaded ahead takes (what the runtime sizes by).
    let ahead: u64 = qs
        .iter()
        .filter(|q| q.ahead)
        .map(|q| (p.arrays[q.array].elem.bytes() / 4).max(1))
        .sum();
    writeln!(
        w,
        "    /* Planes each array's own column loads ahead of the one computed, and times the march loop is\n\
         \x20    * unrolled (both fewer with more arrays). */\n\
         \x20   enum {{ TP_AHEAD = TPACE_MARCH_AHEAD({ahead}), TP_UNROLL = TPACE_MARCH_UNROLL({ahead}) }};\n\
         \x20   /* Element strides of the chunk buffer: a plane, a row (the innermost dimension is contiguous). */\n\
         \x20   const long tp_s1 = tp_n2;\n\
         \x20   const long tp_s0 = tp_s1 * tp_n1;"
    )
    .unwrap();
    w.push_str(&accumulators(unit, s, "    ", "this thread"));
    writeln!(
        w,
        "    /* This block's planes: [tp_x0, tp_end0) (blocks have one thread along the outermost axis). */\n\
         \x20   const long tp_x0 = tp_from0 + (long)blockIdx.z * tp_seg;\n\
         \x20   const long tp_end0 = TPACE_MIN(tp_to0, tp_x0 + tp_seg);\n\
         \x20   TPACE_NO_UNROLL\n\
         \x20   for (long tp_i1 = tp_from1 + (long)blockIdx.y * blockDim.y + threadIdx.y; tp_i1 < tp_to1; tp_i1 += (long)gridDim.y * blockDim.y) {{\n\
         \x20       /* Threads start at a column TPACE_MARCH_ALIGN elements into the buffer's rows (a warp's\n\
         \x20        * loads and stores then cover whole cache lines); those before the box idle. */\n\
         \x20       const long tp_i2 = TPACE_MARCH_START(tp_from2, tp_lo2) + (long)blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20       if (tp_i2 < tp_from2 || tp_i2 >= tp_to2 || tp_x0 >= tp_end0)\n\
         \x20           continue;\n\
         \x20       /* The column's pointers at plane tp_x0, one plane further each step. */\n\
         \x20       const long tp_col = (tp_x0 - tp_base) * tp_s0 + (tp_i1 - tp_lo1) * tp_s1 + (tp_i2 - tp_lo2);"
    )
    .unwrap();
    for a in &used {
        let arr = &p.arrays[*a];
        let constness = if unit.facts.sweeps[s].writes.contains(a) {
            ""
        } else {
            "const "
        };
        writeln!(
            w,
            "        {constness}{ty} *{name} = {buf} + tp_col;",
            ty = arr.elem.c_name(),
            name = ptr(*a),
            buf = dev_name(&arr.ident()),
        )
        .unwrap();
    }
    // The user's index variables, for the comments.
    let vars: Vec<&str> = (0..3)
        .map(|pos| sweep.loop_for(pos).map_or("?", |l| l.var.as_str()))
        .collect();
    // The queues, filled with the planes before the newest the first step reads (and,
    // loading ahead, those up to the last loaded ahead).
    for (n, q) in qs.iter().enumerate() {
        let arr = &p.arrays[q.array];
        let ty = arr.elem.c_name();
        let len = q.hi - q.lo + 1;
        let planes = if len == 1 {
            format!("plane {}", plane_text(vars[0], q.lo))
        } else {
            format!(
                "planes {} to {}",
                plane_text(vars[0], q.lo),
                plane_text(vars[0], q.hi)
            )
        };
        let (what, size, first, value) = if q.ahead {
            (
                format!(
                    "`{}`'s own column: {planes} of the march and TP_AHEAD more",
                    arr.display_name()
                ),
                plus(len, "TP_AHEAD"),
                plus(len - 1, "TP_AHEAD"),
                format!(
                    "tp_x0 + {} < tp_end0 ? {}[{}] : ({ty})0",
                    plus(-(len - 1), "tp_r"),
                    ptr(q.array),
                    offset_expr_with(q.lo, "tp_r", q.inner),
                ),
            )
        } else {
            (
                format!(
                    "`{}`'s column {}: {planes}",
                    arr.display_name(),
                    column_text([vars[1], vars[2]], q.inner)
                ),
                len.to_string(),
                (len - 1).to_string(),
                format!(
                    "{}[{}]",
                    ptr(q.array),
                    offset_expr_with(q.lo, "tp_r", q.inner)
                ),
            )
        };
        writeln!(
            w,
            "        /* {what}. */\n\
             \x20       {ty} {name}[{size}];\n\
             \x20       TPACE_UNROLL\n\
             \x20       for (int tp_r = 0; tp_r < {first}; tp_r++)\n\
             \x20           {name}[tp_r] = {value};",
            name = q.name(n),
        )
        .unwrap();
        if q.ahead {
            // The newest plane is loaded at each step of the first run; the last run moves
            // this value along unread.
            writeln!(w, "        {name}[{first}] = ({ty})0;", name = q.name(n)).unwrap();
        }
    }
    writeln!(
        w,
        "        /* March: plane tp_i0 of the column. Two runs: the first loads each queue's newest plane ahead,\n\
         \x20        * the second (the last TP_AHEAD planes) has them all already. */\n\
         \x20       long tp_i0 = tp_x0;\n\
         \x20       TPACE_UNROLL\n\
         \x20       for (int tp_run = 0; tp_run < 2; tp_run++) {{\n\
         \x20           const long tp_run_end = tp_run == 0 ? tp_end0 - TP_AHEAD : tp_end0;\n\
         \x20           TPACE_UNROLL_MARCH\n\
         \x20           for (; tp_i0 < tp_run_end; tp_i0++) {{"
    )
    .unwrap();
    let pad = " ".repeat(16);
    for (n, q) in qs.iter().enumerate() {
        let len = q.hi - q.lo + 1;
        if q.ahead {
            writeln!(
                w,
                "{pad}if (tp_run == 0)\n\
                 {pad}    {name}[{last}] = {ptr}[{at}];",
                name = q.name(n),
                last = plus(len - 1, "TP_AHEAD"),
                ptr = ptr(q.array),
                at = offset_expr_with(q.hi, "TP_AHEAD", q.inner),
            )
            .unwrap();
        } else {
            writeln!(
                w,
                "{pad}{name}[{last}] = {ptr}[{at}];",
                name = q.name(n),
                last = len - 1,
                ptr = ptr(q.array),
                at = offset_expr(&[q.hi, q.inner[0], q.inner[1]]),
            )
            .unwrap();
        }
    }
    for (pos, value) in [(0, "tp_i0"), (1, "tp_i1"), (2, "tp_i2")] {
        let l = sweep.loop_for(pos).expect("one loop per dimension");
        if let Some(line) = index_declaration(
            unit.program,
            &body,
            (&l.var_type, &l.var, value),
            MaybeUnused::Attribute,
        ) {
            writeln!(w, "{pad}{line}").unwrap();
        }
    }
    w.push_str(&per_point_locals(sweep, &pad));
    w.push_str(&point_begin(unit, s, &pad));
    writeln!(w, "{pad}{body}").unwrap();
    if !reductions_of(unit, s).is_empty() {
        w.push_str(&point_end(unit, s, "tp_i0", "tp_cnt_lo", "tp_cnt_hi", &pad));
    }
    writeln!(
        w,
        "{pad}/* One plane on: the queues move, the pointers follow. */"
    )
    .unwrap();
    for (n, q) in qs.iter().enumerate() {
        let len = q.hi - q.lo + 1;
        let size = if q.ahead {
            plus(len, "TP_AHEAD")
        } else {
            len.to_string()
        };
        writeln!(
            w,
            "{pad}TPACE_UNROLL\n\
             {pad}for (int tp_r = 0; tp_r + 1 < {size}; tp_r++)\n\
             {pad}    {name}[tp_r] = {name}[tp_r + 1];",
            name = q.name(n),
        )
        .unwrap();
    }
    for a in &used {
        writeln!(w, "{pad}{} += tp_s0;", ptr(*a)).unwrap();
    }
    w.push_str("            }\n        }\n    }\n");
    for (i, r) in reductions_of(unit, s) {
        writeln!(
            w,
            "    tpace_block_reduce<{op}>({acc}, {id}, tp_red{i}); /* every thread gets here */",
            op = glue::op_constant(r.op),
            acc = crate::back::kernel::acc_name(i),
            id = crate::back::kernel::identity(r),
        )
        .unwrap();
    }
    w.push_str("}\n");
    w
}

/// `i`, `i + 1`, `i - 2`: the plane at offset `o` from the marching one `i`.
fn plane_text(i: &str, o: i64) -> String {
    format!("{i}{}", crate::back::kernel::offset_text(o))
}

/// `n + expr` (`expr` a C expression), or `expr` alone when `n` is 0.
fn plus(n: i64, expr: &str) -> String {
    match n {
        0 => expr.to_string(),
        n if n < 0 => format!("{expr} - {}", -n),
        n => format!("{n} + {expr}"),
    }
}

/// `j - 1, k`: the column at offsets `inner` from the thread's own `j, k`.
fn column_text([j, k]: [&str; 2], inner: [i64; 2]) -> String {
    format!(
        "{j}{}, {k}{}",
        crate::back::kernel::offset_text(inner[0]),
        crate::back::kernel::offset_text(inner[1])
    )
}

/// Element offset of plane `lo + r` (`r` a C expression) of the column at `inner`.
fn offset_expr_with(lo: i64, r: &str, inner: [i64; 2]) -> String {
    let plane = if lo == 0 {
        format!("{r} * tp_s0")
    } else {
        format!("({}) * tp_s0", plus(lo, r))
    };
    let rest = offset_expr(&[0, inner[0], inner[1]]);
    if rest == "0" {
        plane
    } else if let Some(neg) = rest.strip_prefix('-') {
        format!("{plane} - {neg}")
    } else {
        format!("{plane} + {rest}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_read_as_written() {
        assert_eq!(offset_expr(&[0, 0, 0]), "0");
        assert_eq!(offset_expr(&[1, 0, 0]), "tp_s0");
        assert_eq!(offset_expr(&[-1, 0, 0]), "-tp_s0");
        assert_eq!(offset_expr(&[0, -1, 1]), "-tp_s1 + 1");
        assert_eq!(offset_expr(&[2, 0, -3]), "2 * tp_s0 - 3");
        assert_eq!(offset_expr_with(-1, "tp_r", [0, 0]), "(tp_r - 1) * tp_s0");
        assert_eq!(
            offset_expr_with(0, "TP_AHEAD", [1, 0]),
            "TP_AHEAD * tp_s0 + tp_s1"
        );
        assert_eq!(
            offset_expr_with(1, "TP_AHEAD", [-1, 0]),
            "(1 + TP_AHEAD) * tp_s0 - tp_s1"
        );
    }
}
