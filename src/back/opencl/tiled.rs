//! The tiled kernel (on-chip temporal blocking, stencil-directives paper §2.1.2,
//! overlapped tiling): one launch advances the executor's group of T steps of
//! the plan's fused sweep (`plan::Fusion`: each step one star-shaped sweep and
//! a copy run as a swap). A work group owns a block of the grid, its shape the
//! work group's; it loads the block widened by T steps' reach into local
//! memory, computes each step on a region that shrinks by one step's reach
//! per side, and writes the block itself back at the last step.
//!
//! It keeps the contract of the CUDA target's fused kernel (back/cuda/fused.rs)
//! point for point, so that it gives the same values under every schedule:
//!
//! * the group's input is the buffer's rows inside `[rows_lo, rows_hi)` and
//!   on the grid, 0 elsewhere;
//! * at step l a point in the sweep's box is computed from step l - 1, except
//!   under mmtb, where a row below step l's window that the predecessor's strip
//!   holds (intermediate steps only) is taken from there; a point outside the
//!   box keeps its value;
//! * a row of a step's window is kept by the work group that owns it: the last
//!   step's rows go to the output buffer, the intermediate steps' rows near the
//!   chunk's top to the strip for the successor; rows outside the window (below
//!   it under mmtb) are computed for the tile's sake only.

use super::kernels::{by_value, c_math, loop_var, per_point};
use super::source::host;
use crate::back::kernel::{body_with, sweep_summary};
use crate::ir::AccessKind;
use crate::lower::LoweredPipeline;
use crate::plan::Fusion;
use std::fmt::Write;

/// The name of the tiled kernel for `t` steps.
pub fn name(lp: &LoweredPipeline<'_>, f: &Fusion, t: u32) -> String {
    format!("{}_t{t}", lp.names.fused_kernel(f.sweep))
}

/// The tiled kernels of the plan's fused sweep, one for each number of steps
/// a group may have (2 ..= `f.max_steps`): with T a constant, the
/// compiler unrolls the loop over the steps, so that no barrier stands in a
/// loop (a CPU implementation such as PoCL runs straight-line barriers far
/// faster) and the tiles' extents are known.
pub fn kernels(lp: &LoweredPipeline<'_>, f: &Fusion) -> String {
    (2..=f.max_steps).map(|t| kernel(lp, f, t)).collect()
}

/// The tiled kernel of the plan's fused sweep for `t` steps.
fn kernel(lp: &LoweredPipeline<'_>, f: &Fusion, t: u32) -> String {
    let unit = lp.unit;
    let p = unit.pipeline;
    let rank = p.grid.rank();
    let sweep = &p.body[f.sweep];
    let ty = p.arrays[f.array].elem.c_name();
    let inner: Vec<usize> = (1..rank).collect();
    let mut args = vec![
        format!("__global const {ty} *tp_in, long tp_in_at"),
        format!("__global {ty} *tp_out, long tp_out_at"),
        format!("__global const {ty} *tp_sin, long tp_sin_at"),
        format!("__global {ty} *tp_sout, long tp_sout_at"),
        format!("__local {ty} *tp_ta, __local {ty} *tp_tb"),
        "const tpace_cl_fuse tp_f".into(),
    ];
    for pos in &inner {
        args.push(format!("long tp_lo{pos}, long tp_n{pos}"));
    }
    for pos in &inner {
        args.push(format!("long tp_box_lo{pos}, long tp_box_hi{pos}"));
    }
    for (t, name, _) in by_value(lp, f.sweep) {
        args.push(format!("{} {}", t.device, super::kernels::cl_name(&name)));
    }
    let mut w = String::new();
    let _ = writeln!(
        w,
        "\n/* {}, tiled: T steps per launch in local memory (overlapped tiling). A work group owns a\n \
         * block of its own shape; it loads the block widened by T steps' reach, computes step l on the\n \
         * block widened by T - l steps' reach, and writes the block at step T. Every work item reaches\n \
         * every barrier. */\n__kernel void {}({})\n{{",
        sweep_summary(unit, f.sweep),
        name(lp, f, t),
        args.join(", ")
    );
    // Reach per step along each grid position: below and above along the cut axis.
    let mut lo = vec![f.reach_lo];
    let mut hi = vec![f.reach_hi];
    for h in &f.inner_reach {
        lo.push(*h);
        hi.push(*h);
    }
    let _ = writeln!(
        w,
        "    tp_in += tp_in_at;\n    tp_out += tp_out_at;\n    tp_sin += tp_sin_at;\n    tp_sout += tp_sout_at;\n    \
         const int tp_T = {t}; /* steps: tp_f.steps */"
    );
    for pos in 0..rank {
        let dim = rank - 1 - pos;
        let first = if pos == 0 {
            "tp_f.seg_lo".to_string()
        } else {
            format!("tp_box_lo{pos}")
        };
        let _ = writeln!(
            w,
            "    /* Grid position {pos}: reach {lo} below and {hi} above a step; the work group's block starts at tp_b{pos}. */\n    \
             const long tp_rlo{pos} = {lo}, tp_span{pos} = {span};\n    \
             const long tp_w{pos} = (long)get_local_size({dim}), tp_l{pos} = (long)get_local_id({dim});\n    \
             const long tp_b{pos} = {first} + ((long)get_global_id({dim}) - tp_l{pos}); /* the group's first item: launches may be offset */",
            lo = lo[pos],
            hi = hi[pos],
            span = lo[pos] + hi[pos],
        );
    }
    // Element strides of a chunk buffer's rows.
    let plane = inner
        .iter()
        .map(|p| format!("tp_n{p}"))
        .collect::<Vec<_>>()
        .join(" * ");
    let _ = writeln!(w, "    const long tp_plane = {plane};");
    let col = |w: &mut String, pad: &str| {
        // The point's element offset within a row, from its inner coordinates tp_j{pos}.
        let mut e = String::new();
        for pos in &inner {
            let stride: Vec<String> = inner
                .iter()
                .filter(|q| **q > *pos)
                .map(|q| format!("tp_n{q}"))
                .collect();
            let term = if stride.is_empty() {
                format!("(tp_j{pos} - tp_lo{pos})")
            } else {
                format!("(tp_j{pos} - tp_lo{pos}) * {}", stride.join(" * "))
            };
            if !e.is_empty() {
                e.push_str(" + ");
            }
            e.push_str(&term);
        }
        let _ = writeln!(w, "{pad}const long tp_col = {e};");
    };
    // Level 0: the tile, widened by T steps' reach, from the input buffer.
    let _ = writeln!(
        w,
        "    /* Step 0 (the group's input): the block widened by T steps' reach, into tp_ta. */"
    );
    for pos in 0..rank {
        let _ = writeln!(
            w,
            "    const long tp_g{pos} = tp_w{pos} + (long)tp_T * tp_span{pos};"
        );
    }
    let mut pad = "    ".to_string();
    for pos in 0..rank {
        let _ = writeln!(
            w,
            "{pad}for (long tp_k{pos} = tp_l{pos}; tp_k{pos} < tp_g{pos}; tp_k{pos} += tp_w{pos}) {{\n\
             {pad}    const long tp_j{pos} = tp_b{pos} - (long)tp_T * tp_rlo{pos} + tp_k{pos};"
        );
        pad.push_str("    ");
    }
    let on_grid: Vec<String> =
        std::iter::once("tp_j0 >= tp_f.rows_lo && tp_j0 < tp_f.rows_hi".to_string())
            .chain(
                inner
                    .iter()
                    .map(|q| format!("tp_j{q} >= tp_lo{q} && tp_j{q} < tp_lo{q} + tp_n{q}")),
            )
            .collect();
    let tile_index = |g: &str| {
        let mut e = "tp_k0".to_string();
        for pos in &inner {
            e = format!("({e}) * {g}{pos} + tp_k{pos}");
        }
        e
    };
    col(&mut w, &pad);
    let _ = writeln!(
        w,
        "{pad}tp_ta[{idx}] = {on} ? tp_in[(tp_j0 - tp_f.base) * tp_plane + tp_col] : ({ty})0;",
        idx = tile_index("tp_g"),
        on = on_grid.join(" && "),
    );
    for pos in (0..rank).rev() {
        let _ = writeln!(w, "{}}}", "    ".repeat(pos + 1));
    }
    let _ = writeln!(
        w,
        "    barrier(CLK_LOCAL_MEM_FENCE); /* the tile loaded before step 1 reads it */\n    \
         /* Steps 1 .. T: step l - 1 in tp_prev (widened by T - l + 1 steps' reach), step l into tp_cur. */\n    \
         #pragma unroll\n    \
         for (int tp_lv = 1; tp_lv <= tp_T; tp_lv++) {{\n        \
         __local const {ty} *tp_prev = (tp_lv & 1) ? tp_ta : tp_tb;\n        \
         __local {ty} *tp_cur = (tp_lv & 1) ? tp_tb : tp_ta;\n        \
         const long tp_left = (long)(tp_T - tp_lv); /* steps still to come after this one */"
    );
    for pos in 0..rank {
        let _ = writeln!(
            w,
            "        const long tp_p{pos} = tp_w{pos} + (tp_left + 1) * tp_span{pos}, tp_c{pos} = tp_w{pos} + tp_left * tp_span{pos};"
        );
    }
    let _ = writeln!(
        w,
        "        const long tp_m = tp_f.level0 + tp_lv; /* the step of the block this level reaches */\n        \
         const long tp_jj = tp_f.level0 / tp_T * (tp_T - 1) + tp_lv - 1; /* its strip, if intermediate */\n        \
         const long tp_wlo = tp_f.wlo[tp_lv - 1], tp_whi = tp_f.whi[tp_lv - 1];\n        \
         const long tp_sin_lo = tp_f.edge_in - (tp_m - 1) * tp_f.skew - tp_f.strip_rows;\n        \
         const long tp_sout_lo = tp_f.edge_out - (tp_m - 1) * tp_f.skew - tp_f.strip_rows;"
    );
    // Strides of the previous level's tile, for the reads.
    let mut stride = String::new();
    for pos in 0..rank {
        let s: Vec<String> = ((pos + 1)..rank).map(|q| format!("tp_p{q}")).collect();
        let s = if s.is_empty() {
            "1".to_string()
        } else {
            s.join(" * ")
        };
        let _ = writeln!(stride, "        const long tp_ps{pos} = {s};");
    }
    w.push_str(&stride);
    let mut pad = "        ".to_string();
    for pos in 0..rank {
        let _ = writeln!(
            w,
            "{pad}for (long tp_k{pos} = tp_l{pos}; tp_k{pos} < tp_c{pos}; tp_k{pos} += tp_w{pos}) {{\n\
             {pad}    const long tp_j{pos} = tp_b{pos} - tp_left * tp_rlo{pos} + tp_k{pos};"
        );
        if pos == 0 {
            let _ = writeln!(
                w,
                "{pad}    const int tp_q_box = tp_j0 >= tp_f.box_lo && tp_j0 < tp_f.box_hi;\n\
                 {pad}    /* Below the step's window, where the predecessor's strip has the row (mmtb); on a\n\
                 {pad}     * device's slab the window can start above the strip's rows, which are then not read. */\n\
                 {pad}    const int tp_q_strip = tp_lv < tp_T && tp_f.has_sin && tp_j0 < tp_wlo && tp_j0 >= tp_sin_lo && tp_j0 < tp_sin_lo + tp_f.strip_rows;\n\
                 {pad}    const int tp_q_keep = tp_j0 >= tp_wlo && tp_j0 < tp_whi && tp_j0 >= tp_b0 && tp_j0 < tp_b0 + tp_w0;"
            );
        }
        pad.push_str("    ");
    }
    col(&mut w, &pad);
    let in_box: Vec<String> = std::iter::once("tp_q_box".to_string())
        .chain(
            inner
                .iter()
                .map(|q| format!("tp_j{q} >= tp_box_lo{q} && tp_j{q} < tp_box_hi{q}")),
        )
        .collect();
    let own: Vec<String> = inner
        .iter()
        .map(|q| format!("tp_j{q} >= tp_b{q} && tp_j{q} < tp_b{q} + tp_w{q}"))
        .collect();
    let centre: Vec<String> = (0..rank)
        .map(|pos| format!("(tp_k{pos} + tp_rlo{pos}) * tp_ps{pos}"))
        .collect();
    let _ = writeln!(
        w,
        "{pad}const int tp_in_box = {};\n\
         {pad}const long tp_pc = {}; /* the point in the previous step's tile */\n\
         {pad}{ty} tp_val = tp_prev[tp_pc]; /* outside the sweep's box a point keeps its value */\n\
         {pad}if (tp_in_box) {{\n\
         {pad}    if (tp_q_strip) {{\n\
         {pad}        tp_val = tp_sin[(tp_jj * tp_f.strip_rows + tp_j0 - tp_sin_lo) * tp_plane + tp_col];\n\
         {pad}    }} else {{",
        in_box.join(" && "),
        centre.join(" + "),
    );
    let body = body_with(unit.program, sweep, &|acc| {
        if acc.kind == AccessKind::Write {
            return "tp_val".into();
        }
        let mut e = "tp_pc".to_string();
        for (pos, o) in acc.offsets.iter().enumerate() {
            if *o == 0 {
                continue;
            }
            e.push_str(&format!(
                " {} {} * tp_ps{pos}",
                if *o < 0 { "-" } else { "+" },
                o.abs()
            ));
        }
        format!("tp_prev[{e}]")
    });
    let inner_pad = format!("{pad}        ");
    for pos in 0..rank {
        w.push_str(&loop_var(
            unit.program,
            sweep,
            pos,
            &body,
            &format!("tp_j{pos}"),
            &inner_pad,
        ));
    }
    w.push_str(&per_point(sweep, &inner_pad));
    let _ = writeln!(w, "{inner_pad}{}", host(&c_math(&body)));
    let own_cols = if own.is_empty() {
        "1".to_string()
    } else {
        own.join(" && ")
    };
    let _ = writeln!(
        w,
        "{pad}    }}\n\
         {pad}}}\n\
         {pad}if (tp_lv < tp_T) {{\n\
         {pad}    tp_cur[{cur}] = tp_val;\n\
         {pad}    /* The block's rows near the chunk's top go to the strip for the successor (mmtb). */\n\
         {pad}    if (tp_f.has_sout && tp_q_keep && tp_in_box && ({own_cols}) && tp_j0 >= tp_sout_lo && tp_j0 < tp_sout_lo + tp_f.strip_rows)\n\
         {pad}        tp_sout[(tp_jj * tp_f.strip_rows + tp_j0 - tp_sout_lo) * tp_plane + tp_col] = tp_val;\n\
         {pad}}} else if (tp_q_keep && tp_in_box) {{\n\
         {pad}    /* Step T: the tile is the work group's block; its rows in the window are the result. */\n\
         {pad}    tp_out[(tp_j0 - tp_f.base) * tp_plane + tp_col] = tp_val;\n\
         {pad}}}",
        cur = tile_index("tp_c"),
    );
    for pos in (0..rank).rev() {
        let _ = writeln!(w, "{}}}", "    ".repeat(pos + 2));
    }
    w.push_str(
        "        barrier(CLK_LOCAL_MEM_FENCE); /* step l done before step l + 1 reads it */\n    }\n}\n",
    );
    w
}

/// The tiled kernel's launcher: the executor's group of steps, its work groups
/// over the rows of the steps' windows and the sweep's box across the other axes.
pub fn launcher(lp: &LoweredPipeline<'_>, f: &Fusion, k: usize, config: &str) -> String {
    let names: Vec<String> = (2..=f.max_steps).map(|t| name(lp, f, t)).collect();
    let unit = lp.unit;
    let p = unit.pipeline;
    let rank = p.grid.rank();
    let tmp = unit.plan.swap.expect("fusion needs a swap").tmp;
    let elem = p.arrays[f.array].elem.c_name();
    let mut w = String::new();
    let _ = writeln!(
        w,
        "\n/* {}: tp_steps steps in one tiled kernel, its rows in the steps' windows. */\n\
         TPACE_HOOK void {}(struct tpace_rt *tp, const tpace_launch *tp_l)\n{{\n    \
         const tpace_fuse_args *tp_fa = tp_l->tp_fuse;\n    \
         const tpace_cl_config *tp_c = &{config};\n    \
         /* {names}: the kernel for tp_steps steps */\n    \
         const int tp_k = {k} + TPACE_MIN(TPACE_MAX(tp_l->tp_steps, 2), {max}) - 2;\n    \
         cl_uint tp_arg = 0;",
        sweep_summary(unit, f.sweep),
        lp.names.fused_launcher(),
        names = names.join(", "),
        max = f.max_steps,
    );
    if !by_value(lp, f.sweep).is_empty() {
        let _ = writeln!(
            w,
            "    const {0} *tp_in = (const {0} *)tp_l->tp_in;",
            lp.names.inputs()
        );
    }
    let _ = writeln!(
        w,
        "    const tpace_cl_fuse tp_f = tpace_cl_fuse_of(tp_fa, tp_l->tp_steps);\n    \
         size_t tp_tile[2];\n    \
         tpace_cl_tiles(tp_c, tp_l->tp_steps, tp_tile);\n    \
         tpace_cl_arg_array(tp, tp_k, &tp_arg, tp_l->tp_buf[{a}], sizeof({elem}), NULL);\n    \
         tpace_cl_arg_array(tp, tp_k, &tp_arg, tp_l->tp_buf[{tmp}], sizeof({elem}), NULL);\n    \
         tpace_cl_arg_array(tp, tp_k, &tp_arg, tp_fa->tp_strip_in, sizeof({elem}), tp_l->tp_buf[{a}]);\n    \
         tpace_cl_arg_array(tp, tp_k, &tp_arg, tp_fa->tp_strip_out, sizeof({elem}), tp_l->tp_buf[{tmp}]);\n    \
         tpace_cl_arg_local(tp, tp_k, &tp_arg, tp_tile[0] * sizeof({elem}));\n    \
         tpace_cl_arg_local(tp, tp_k, &tp_arg, tp_tile[1] * sizeof({elem}));\n    \
         tpace_cl_arg(tp, tp_k, &tp_arg, sizeof tp_f, &tp_f);",
        a = f.array,
    );
    for pos in 1..rank {
        let _ = writeln!(
            w,
            "    tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_dim_lo[{pos}]);\n    \
             tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_dim_n[{pos}]);"
        );
    }
    for pos in 1..rank {
        let _ = writeln!(
            w,
            "    tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_lo[{pos}]);\n    \
             tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_hi[{pos}]);"
        );
    }
    for (t, _, value) in by_value(lp, f.sweep) {
        let _ = writeln!(
            w,
            "    {{\n        const {h} tp_v = ({h})({value});\n        tpace_cl_arg(tp, tp_k, &tp_arg, sizeof tp_v, &tp_v);\n    }}",
            h = t.host
        );
    }
    // Work items: the rows [seg_lo, seg_hi) along the cut axis (the executor put them in
    // tp_lo[0], tp_hi[0]) and the sweep's box along the others, in whole groups.
    let _ = writeln!(
        w,
        "    size_t tp_global[{rank}], tp_local[{rank}];\n    \
         for (int tp_d = 0; tp_d < {rank}; tp_d++) {{\n        \
         tp_local[tp_d] = tp_c->wg[tp_d];\n        \
         tp_global[tp_d] = tpace_cl_cover(tp_l->tp_hi[{last} - tp_d] - tp_l->tp_lo[{last} - tp_d], tp_local[tp_d]);\n    }}\n    \
         tpace_cl_launch(tp, tp_k, tp_l->tp_q, {rank}, tp_global, tp_local, tpace_cl_kernel_name(tp_k));\n}}",
        last = rank - 1,
    );

    w
}
