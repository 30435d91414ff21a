//! Fused kernels (two-level blocking, MMTB paper §2.1): one launch advances
//! `TP_T` steps of the step's one sweep. The plan (`plan::Fusion`) says
//! whether the pipeline qualifies and gives the reach and the block shape; the
//! runtime (`tpace_fuse_setup`, `tpace_group_steps`) groups the steps and hands
//! the intermediate steps' rows from chunk to chunk. This file only prints.

use super::{scalar_args, scalar_params};
use crate::back::kernel::{
    MaybeUnused, body_with, index_declaration, offset_text, per_point_locals, sweep_summary,
};
use crate::ir::AccessKind;
use crate::lower::LoweredPipeline;
use crate::plan::{Fusion, SHARED_WITHOUT_OPT_IN, Unit};
use crate::text::indented;
use std::fmt::Write;

/// The fused kernel of the plan's fused sweep: in 2-D a block is a row of
/// threads that share the row a step computes through shared memory; in 3-D a
/// tile of warps whose threads each hold several columns (register blocking).
pub fn kernel(lp: &LoweredPipeline<'_>, f: &Fusion) -> String {
    let unit = lp.unit;
    let p = unit.pipeline;
    let rank = p.grid.rank();
    let elem = p.arrays[f.array].elem.c_name();
    let inner: Vec<usize> = (1..rank).collect();
    let mut w = String::new();
    let sharing = if rank == 2 {
        "\x20* registers and shares the row a step computes through shared memory for the reads along\n\
         \x20* the other axes."
    } else {
        "\x20* registers, for each of the TP_C2 columns it holds along axis 2, and puts the row a step\n\
         \x20* computes into shared memory: reads along axis 1 come from there, reads along axis 2 past\n\
         \x20* its first and last column from the lanes beside it, the other reads from its own registers.\n\
         \x20* One barrier a row serves every step: what step l reads of step l - 1 along the other axes\n\
         \x20* was computed a row earlier (a step reads at least one row above: TP_RHI is at least 1)."
    };
    writeln!(
        w,
        "\n/* {summary}, fused: TP_T steps per launch (two-level blocking, MMTB paper §2.1).\n\
         \x20* A block holds a tile of columns across the other axes ({tile} columns, {threads} threads; TP_T * reach\n\
         \x20* of them on each side are its neighbours' and only feed its own) and streams along the cut\n\
         \x20* axis over its segment of rows. Row x of step l is computed as soon as row x + TP_RHI of\n\
         \x20* step l - 1 is: every thread keeps the last TP_RING rows of its column of every step in\n\
         {sharing}\n\
         \x20* Rows below a step's window come from the predecessor's strip (mmtb); the last step's\n\
         \x20* rows go to the output buffer, the other steps' rows near the chunk's top to the strip\n\
         \x20* for the successor. Every thread reaches every barrier: no early return. */",
        summary = sweep_summary(unit, f.sweep),
        tile = join_x(&f.tile()),
        threads = join_x(&f.block),
    )
    .unwrap();
    let mut args = vec![
        format!("const {elem} *__restrict__ tp_in"),
        format!("{elem} *__restrict__ tp_out"),
        "tpace_fuse_args tp_f".to_string(),
    ];
    for pos in &inner {
        args.push(format!("long tp_lo{pos}, long tp_n{pos}"));
    }
    for pos in &inner {
        args.push(format!("long tp_box_lo{pos}, long tp_box_hi{pos}"));
    }
    args.extend(scalar_params(lp, f.sweep));
    // Launch bounds: as many blocks a multiprocessor as the plan says the registers allow
    // (Fusion::blocks_per_multiprocessor, per step count): the minimum block count for a
    // 2-D row (ptxas then fits Jacobi-2D's four steps in 32 registers), a register cap for
    // a 3-D tile (see TPACE_FUSED_BOUNDS).
    let blocks = per_step_count(f, |t| f.blocks_per_multiprocessor(t));
    let bounds = if rank == 2 {
        format!("TPACE_ROW_BOUNDS({}, {blocks})", f.threads())
    } else {
        format!("TPACE_FUSED_BOUNDS({}, {blocks})", f.threads())
    };
    writeln!(
        w,
        "template <int TP_T>\nstatic __global__ void {bounds} {name}({args})\n{{",
        name = lp.names.fused_kernel(f.sweep),
        args = args.join(", "),
    )
    .unwrap();
    // A 3-D tile's steps lag each other by at least a row (its one barrier a row needs it).
    let reach_hi = if rank == 2 {
        f.reach_hi
    } else {
        f.reach_hi.max(1)
    };
    writeln!(
        w,
        "    /* Rows a step reads below and above along the cut axis, and the rows of a step each thread keeps. */\n\
         \x20   enum {{ TP_RLO = {}, TP_RHI = {reach_hi}, TP_RING = TP_RLO + TP_RHI + 1 }};",
        f.reach_lo
    )
    .unwrap();
    if rank == 2 {
        row_kernel_body(&mut w, unit, f);
    } else {
        super::tile::tile_kernel_body(&mut w, unit, f);
    }
    w
}

/// `value` per step count of `f`'s kernels as a constant expression of `TP_T`
/// (a branch where the value changes, from the most steps down).
fn per_step_count(f: &Fusion, value: impl Fn(u32) -> u32) -> String {
    let mut last = value(f.max_steps);
    let mut expr = last.to_string();
    for t in (2..f.max_steps).rev() {
        let v = value(t);
        if v != last {
            expr = format!("TP_T <= {t} ? {v} : {expr}");
            last = v;
        }
    }
    expr
}

/// `a x b` for the kernel's comments.
fn join_x(v: &[u32]) -> String {
    v.iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(" x ")
}

/// The rest of the 2-D fused kernel: a block is a row of `TP_B1` threads, one
/// column each, and the row a step computes goes through shared memory. The
/// rows run as in 3-D (`row_runs`): the steady run, most of a segment's rows,
/// without the row tests (on sm_90, 71 SASS instructions a row at four steps
/// against 335 with them).
fn row_kernel_body(w: &mut String, unit: Unit<'_>, f: &Fusion) {
    let p = unit.pipeline;
    let sweep = &p.body[f.sweep];
    let elem = p.arrays[f.array].elem.c_name();
    writeln!(
        w,
        "    /* Threads and read reach along the other axes: a block keeps TP_B - 2 * TP_T * TP_H columns of each. */\n\
         \x20   enum {{ TP_B1 = {}, TP_H1 = {} }};\n\
         \x20   /* The row each step computes now, for the reads along the other axes (a copy for even and odd rows),\n\
         \x20    * from the start of the block's dynamic shared memory: the launch gives its size. */\n\
         \x20   typedef {elem} tp_sh_rows[TP_T][TP_B1 + 2 * TP_H1];\n\
         \x20   TPACE_DYNAMIC_SHARED(tp_smem, 2 * sizeof(tp_sh_rows));\n\
         \x20   tp_sh_rows *const tp_sh = (tp_sh_rows *)tp_smem;\n\
         \x20   const int tp_t1 = threadIdx.x;\n\
         \x20   const long tp_i1 = tp_box_lo1 + (long)blockIdx.x * (TP_B1 - 2 * TP_T * TP_H1) + tp_t1 - TP_T * TP_H1;\n\
         \x20   /* This thread's column: its element offset in a row, whether it is on the grid, in the sweep's box, and its block's own. */\n\
         \x20   const long tp_plane = tp_n1;\n\
         \x20   const long tp_col = tp_i1 - tp_lo1;\n\
         \x20   const bool tp_on_grid = tp_i1 >= tp_lo1 && tp_i1 < tp_lo1 + tp_n1;\n\
         \x20   const bool tp_in_box = tp_i1 >= tp_box_lo1 && tp_i1 < tp_box_hi1;\n\
         \x20   const bool tp_mine = tp_in_box && tp_t1 >= TP_T * TP_H1 && tp_t1 < TP_B1 - TP_T * TP_H1;",
        f.block[0], f.inner_reach[0],
    )
    .unwrap();
    w.push_str(&segment_and_rings(elem, "", "y"));
    // The body of the row loop, at the indent of a loop of its own (see `row_runs`).
    let loop_start = w.len();
    writeln!(
        w,
        "        /* The group's input: row tp_x as the step before the group left it. */\n\
         \x20       const bool tp_x_in = tp_steady || (tp_x >= tp_f.tp_rows_lo && tp_x < tp_f.tp_rows_hi);\n\
         {input}\
         \x20       /* Step l computes the row whose inputs are now complete, TP_RHI rows behind step l - 1. */\n\
         \x20       TPACE_UNROLL\n\
         \x20       for (int tp_l = 1; tp_l <= TP_T; tp_l++) {{\n\
         {level}\
         \x20           tp_sh[tp_par][tp_l - 1][tp_t1 + TP_H1] = tp_v[tp_l - 1][TP_RLO];\n\
         \x20           __syncthreads();",
        input = ring_input(elem, "", "tp_col", &" ".repeat(8)),
        level = level_indices(&" ".repeat(12)),
    )
    .unwrap();
    let body = body_with(unit.program, sweep, &|acc| {
        if acc.kind == AccessKind::Write {
            "tp_val".into()
        } else if acc.offsets[0] != 0 || acc.offsets.iter().all(|o| *o == 0) {
            format!("tp_v[tp_l - 1][TP_RLO{}]", offset_text(acc.offsets[0]))
        } else {
            format!(
                "tp_sh[tp_par][tp_l - 1][tp_t1 + TP_H1{}]",
                offset_text(acc.offsets[1])
            )
        }
    });
    w.push_str(&compute_point(
        unit,
        sweep,
        elem,
        &body,
        "tp_v[tp_l - 1][TP_RLO]",
        &" ".repeat(12),
    ));
    w.push_str(&keep_point(false, &" ".repeat(12)));
    w.push_str("        }\n");
    let body = w.split_off(loop_start);
    w.push_str(&row_runs(&body, "", false));
    w.push_str("}\n");
}

/// The row loop around `body` (the text of one row, at 8 spaces of indent,
/// which finds row `tp_x` at element offset `tp_row` of the buffers), at 4
/// spaces of indent. The rows run in
/// three runs: before the steady rows, the steady rows, after them. A steady
/// row (`tp_steady`) is in the buffers and, at every step, in the sweep's box,
/// clear of both strips and, at the last step, kept: its tests are known, and
/// the steady run (most of a block's rows) skips them. The run loop is
/// unrolled, so the steady run is its own copy of the row; with `tile` (a 3-D
/// tile), the steady run's loop is unrolled too (`TPACE_UNROLL_RING`) and has a
/// second copy for blocks whose whole tile is in the sweep's box (`tp_inside`,
/// the same for every thread of a block), in which `body`'s flag `tp_fast` is
/// true: its points need no per-column box selects.
/// `prologue` (at 4 spaces of indent) runs before the first row, with `tp_x`
/// and `tp_row` at it.
pub(super) fn row_runs(body: &str, prologue: &str, tile: bool) -> String {
    let loops = if tile {
        // The steady rows unrolled by the rings' length: each ring turns by renaming its
        // registers instead of moving them (the other runs are short: not unrolled).
        let body = indented(body, "        ");
        let run = |fast: bool, unroll: &str| {
            format!(
                "            const bool tp_fast = {fast};\n\
                 \x20           {unroll}\n\
                 \x20           for (; tp_x < tp_run_end; tp_x++, tp_par ^= 1, tp_row += tp_plane) {{\n\
                 {body}\
                 \x20           }}\n"
            )
        };
        format!(
            "        if (tp_steady && tp_inside) {{\n\
             {inside}\
             \x20       }} else if (tp_steady) {{\n\
             {steady}\
             \x20       }} else {{\n\
             {other}\
             \x20       }}\n",
            inside = run(true, "TPACE_UNROLL_RING"),
            steady = run(false, "TPACE_UNROLL_RING"),
            other = run(false, "TPACE_NO_UNROLL"),
        )
    } else {
        let body = indented(body, "    ");
        format!(
            "        TPACE_NO_UNROLL\n\
             \x20       for (; tp_x < tp_run_end; tp_x++, tp_par ^= 1, tp_row += tp_plane) {{\n\
             {body}\
             \x20       }}\n"
        )
    };
    format!(
        "    /* Element offset of row tp_x in the buffers (tp_plane elements further each row). */\n\
         \x20   long tp_row = (tp_xs - TP_T * TP_RLO - tp_f.tp_base) * tp_plane;\n\
         \x20   /* Steady rows [tp_s_lo, tp_s_hi): row tp_x in the buffers and, at every step l, row tp_x - l * TP_RHI\n\
         \x20    * in the sweep's box, at or above the step's window where the predecessor's strip gives rows, below\n\
         \x20    * the rows the successor's strip takes, and, at the last step, kept. */\n\
         \x20   const long tp_x_end = tp_xe + TP_T * TP_RHI;\n\
         \x20   long tp_s_lo = TPACE_MAX(tp_f.tp_rows_lo, tp_xs - TP_T * TP_RLO), tp_s_hi = TPACE_MIN(tp_f.tp_rows_hi, tp_x_end);\n\
         \x20   TPACE_UNROLL\n\
         \x20   for (int tp_l = 1; tp_l <= TP_T; tp_l++) {{\n\
         \x20       long tp_lo = tp_f.tp_box_lo, tp_hi = tp_f.tp_box_hi; /* step l's steady rows */\n\
         \x20       if (tp_l < TP_T) {{\n\
         \x20           if (tp_sin != NULL)\n\
         \x20               tp_lo = TPACE_MAX(tp_lo, tp_f.tp_wlo[tp_l - 1]);\n\
         \x20           if (tp_sout != NULL)\n\
         \x20               tp_hi = TPACE_MIN(tp_hi, tp_f.tp_edge_out - (tp_f.tp_level0 + tp_l - 1) * tp_f.tp_skew - tp_f.tp_strip_rows);\n\
         \x20       }} else {{\n\
         \x20           tp_lo = TPACE_MAX(TPACE_MAX(tp_lo, tp_xs), tp_f.tp_wlo[tp_l - 1]);\n\
         \x20           tp_hi = TPACE_MIN(TPACE_MIN(tp_hi, tp_xe), tp_f.tp_whi[tp_l - 1]);\n\
         \x20       }}\n\
         \x20       tp_s_lo = TPACE_MAX(tp_s_lo, tp_lo + (long)tp_l * TP_RHI);\n\
         \x20       tp_s_hi = TPACE_MIN(tp_s_hi, tp_hi + (long)tp_l * TP_RHI);\n\
         \x20   }}\n\
         \x20   tp_s_lo = TPACE_MIN(tp_s_lo, tp_x_end);\n\
         \x20   tp_s_hi = TPACE_MAX(tp_s_hi, tp_s_lo);\n\
         \x20   /* The rows in three runs: before the steady ones, the steady ones, after them (unrolled: the\n\
         \x20    * steady run is a copy of the row loop without the tests). */\n\
         \x20   long tp_x = tp_xs - TP_T * TP_RLO;\n\
         {prologue}\
         \x20   TPACE_UNROLL\n\
         \x20   for (int tp_run = 0; tp_run < 3; tp_run++) {{\n\
         \x20       const bool tp_steady = tp_run == 1;\n\
         \x20       const long tp_run_end = tp_run == 0 ? tp_s_lo : tp_run == 1 ? tp_s_hi : tp_x_end;\n\
         {loops}\
         \x20   }}\n"
    )
}

/// The strips, the block's segment of rows (blocks numbered along
/// `seg_axis`), the rings, zeroed (per column when `ring_cols` is `[TP_C2]`),
/// and the row parity, at 4 spaces of indent.
pub(super) fn segment_and_rings(elem: &str, ring_cols: &str, seg_axis: &str) -> String {
    let zero = if ring_cols.is_empty() {
        format!("            tp_v[tp_l][tp_r] = ({elem})0;\n")
    } else {
        format!(
            "            TPACE_UNROLL\n\
             \x20           for (int tp_c = 0; tp_c < TP_C2; tp_c++)\n\
             \x20               tp_v[tp_l][tp_r][tp_c] = ({elem})0;\n"
        )
    };
    format!(
        "    const {elem} *tp_sin = (const {elem} *)tp_f.tp_strip_in;\n\
         \x20   {elem} *tp_sout = ({elem} *)tp_f.tp_strip_out;\n\
         \x20   /* This block's rows: [tp_xs, tp_xe) of every step. */\n\
         \x20   const long tp_xs = tp_f.tp_seg_lo + (long)blockIdx.{seg_axis} * tp_f.tp_seg;\n\
         \x20   const long tp_xe = TPACE_MIN(tp_xs + tp_f.tp_seg, tp_f.tp_seg_hi);\n\
         \x20   {elem} tp_v[TP_T + 1][TP_RING]{ring_cols};\n\
         \x20   TPACE_UNROLL\n\
         \x20   for (int tp_l = 0; tp_l <= TP_T; tp_l++) {{\n\
         \x20       TPACE_UNROLL\n\
         \x20       for (int tp_r = 0; tp_r < TP_RING; tp_r++)\n\
         {zero}\
         \x20   }}\n\
         \x20   int tp_par = 0;\n"
    )
}

/// Shift the group's input ring (column index `col`, empty or `[tp_c]`) and
/// load row `tp_x` of the column at element offset `col_offset` in a row.
fn ring_input(elem: &str, col: &str, col_offset: &str, pad: &str) -> String {
    format!(
        "{pad}TPACE_UNROLL\n\
         {pad}for (int tp_r = 0; tp_r + 1 < TP_RING; tp_r++)\n\
         {pad}    tp_v[0][tp_r]{col} = tp_v[0][tp_r + 1]{col};\n\
         {pad}tp_v[0][TP_RING - 1]{col} = tp_on_grid && tp_x_in ? tp_in[tp_row + {col_offset}] : ({elem})0;\n"
    )
}

/// The row step `tp_l` computes now, the step it reaches, its strip, and what
/// the row is at that step (the same for every column of the block). The loop
/// has the flag `tp_steady` (see `row_runs`): a steady row's tests are known
/// without being made.
pub(super) fn level_indices(pad: &str) -> String {
    format!(
        "{pad}const long tp_q = tp_x - (long)tp_l * TP_RHI;\n\
         {pad}const long tp_m = tp_f.tp_level0 + tp_l; /* the step of the block this row reaches */\n\
         {pad}const long tp_j = tp_f.tp_level0 / TP_T * (TP_T - 1) + tp_l - 1; /* its strip, if intermediate */\n\
         {pad}/* Row tp_q at step l: in the sweep's box; below the step's window, where the predecessor's\n\
         {pad} * strip has it (mmtb); and kept, in this block's segment and the step's window.\n\
         {pad} * A steady row is known to be in the box, not from the strip, and kept at the last step only. */\n\
         {pad}const bool tp_q_box = tp_steady || (tp_q >= tp_f.tp_box_lo && tp_q < tp_f.tp_box_hi);\n\
         {pad}const long tp_strip_in = tp_f.tp_edge_in - (tp_m - 1) * tp_f.tp_skew - tp_f.tp_strip_rows;\n\
         {pad}/* The strip holds tp_strip_rows rows; on a device's slab the window can start above them\n\
         {pad} * (ghost rows the block no longer needs), and those rows are not read from it. One\n\
         {pad} * unsigned compare for both ends: two kept ptxas from fitting the double heat2d_asym\n\
         {pad} * fixture's four steps in 64 registers (272 bytes spilled). */\n\
         {pad}const bool tp_q_strip_in = !tp_steady && tp_l < TP_T && tp_sin != NULL && tp_q < tp_f.tp_wlo[tp_l - 1] && (unsigned long)(tp_q - tp_strip_in) < (unsigned long)tp_f.tp_strip_rows;\n\
         {pad}const bool tp_q_keep = tp_steady ? tp_l == TP_T : tp_q_box && tp_q >= tp_xs && tp_q < tp_xe && tp_q >= tp_f.tp_wlo[tp_l - 1] && tp_q < tp_f.tp_whi[tp_l - 1];\n\
         {pad}/* A row below what the segment's rows of the later steps read is not computed (the same for the\n\
         {pad} * whole block, barrier included): the ring then starts with the first row that is. */\n\
         {pad}if (!tp_steady && tp_q < tp_xs - (long)(TP_T - tp_l) * TP_RLO)\n\
         {pad}    continue;\n"
    )
}

/// Declarations of the sweep's loop variables that `body` mentions (the
/// point's row `tp_q`, then its index along each other axis, `inner`) and of
/// its per-point locals, each at `pad`.
pub(super) fn point_locals(
    unit: Unit<'_>,
    sweep: &crate::ir::Sweep,
    body: &str,
    inner: &[&str],
    pad: &str,
) -> String {
    let mut w = String::new();
    for pos in 0..unit.pipeline.grid.rank() {
        let l = sweep.loop_for(pos).expect("one loop per dimension");
        let value = if pos == 0 { "tp_q" } else { inner[pos - 1] };
        let what = (l.var_type.as_str(), l.var.as_str(), value);
        if let Some(line) = index_declaration(unit.program, body, what, MaybeUnused::Attribute) {
            writeln!(w, "{pad}{line}").unwrap();
        }
    }
    w.push_str(&per_point_locals(sweep, pad));
    w
}

/// `tp_val`, a 2-D kernel's point of row `tp_q` of step `tp_l`: in the sweep's
/// box, from the predecessor's strip below the step's window, else computed by
/// the sweep's `body` (which writes `tp_val`); outside the box it keeps
/// `center`, its value before the step.
fn compute_point(
    unit: Unit<'_>,
    sweep: &crate::ir::Sweep,
    elem: &str,
    body: &str,
    center: &str,
    pad: &str,
) -> String {
    let mut w = format!(
        "{pad}{elem} tp_val = {center}; /* outside the sweep's box a point keeps its value */\n"
    );
    writeln!(
        w,
        "{pad}if (tp_in_box && tp_q_box) {{\n\
         {pad}    if (tp_q_strip_in) {{\n\
         {pad}        /* Below the step's window: the predecessor computed this row. */\n\
         {pad}        tp_val = tp_sin[(tp_j * tp_f.tp_strip_rows + tp_q - tp_strip_in) * tp_plane + tp_col];\n\
         {pad}    }} else {{"
    )
    .unwrap();
    let inner_pad = format!("{pad}        ");
    w.push_str(&point_locals(unit, sweep, body, &["tp_i1"], &inner_pad));
    writeln!(w, "{inner_pad}{body}\n{pad}    }}\n{pad}}}").unwrap();
    w
}

/// Push `tp_val` into step `tp_l`'s ring and write it where it is kept: the
/// last step's rows to the output buffer, the others' near the chunk's top to
/// the strip. With `cols` (a 3-D tile), `tp_val` and the ring have a column
/// index (the thread's `TP_C2` columns follow each other from `tp_out_col` and
/// `tp_sout_col`, the buffers at element offset `tp_col`) and the columns the
/// block keeps are `tp_cols_mine`'s bits; otherwise
/// the thread's one column is its block's own where `tp_mine`.
pub(super) fn keep_point(cols: bool, pad: &str) -> String {
    // `to[row + column offset] = tp_val` for the block's own columns, at `pad`.
    let store = |to: &str, row: &str, pad: &str| {
        if cols {
            // The output's rows in one access a thread where its columns start on 16
            // bytes; the strips' (a few rows a chunk) column by column.
            let wide = if to == "tp_out" { "tp_wide" } else { "false" };
            format!("{pad}tpace_cols_store({to}_col + {row}, tp_val, tp_cols_mine, {wide});\n")
        } else {
            format!("{pad}if (tp_mine)\n{pad}    {to}[{row} + tp_col] = tp_val;\n")
        }
    };
    let push = if cols {
        format!(
            "{pad}TPACE_UNROLL\n\
             {pad}for (int tp_c = 0; tp_c < TP_C2; tp_c++) {{\n\
             {pad}    TPACE_UNROLL\n\
             {pad}    for (int tp_r = 0; tp_r + 1 < TP_RING; tp_r++)\n\
             {pad}        tp_v[tp_l][tp_r][tp_c] = tp_v[tp_l][tp_r + 1][tp_c];\n\
             {pad}    tp_v[tp_l][TP_RING - 1][tp_c] = tp_val[tp_c];\n\
             {pad}}}\n"
        )
    } else {
        format!(
            "{pad}TPACE_UNROLL\n\
             {pad}for (int tp_r = 0; tp_r + 1 < TP_RING; tp_r++)\n\
             {pad}    tp_v[tp_l][tp_r] = tp_v[tp_l][tp_r + 1];\n\
             {pad}tp_v[tp_l][TP_RING - 1] = tp_val;\n"
        )
    };
    format!(
        "{push}\
         {pad}/* Where the row is kept: the last step's rows go to the output buffer, the others' near\n\
         {pad} * the chunk's top to the strip for the successor. */\n\
         {pad}if (tp_q_keep) {{\n\
         {pad}    if (tp_l == TP_T) {{\n\
         {pad}        const long tp_orow = {orow};\n\
         {out}\
         {pad}    }} else if (tp_sout != NULL) {{\n\
         {pad}        const long tp_strip_out = tp_f.tp_edge_out - (tp_m - 1) * tp_f.tp_skew - tp_f.tp_strip_rows;\n\
         {pad}        if (tp_q >= tp_strip_out && tp_q < tp_strip_out + tp_f.tp_strip_rows) {{\n\
         {pad}            const long tp_srow = (tp_j * tp_f.tp_strip_rows + tp_q - tp_strip_out) * tp_plane;\n\
         {sout}\
         {pad}        }}\n\
         {pad}    }}\n\
         {pad}}}\n",
        // Row tp_q is step l's, tp_l * TP_RHI rows behind row tp_x (at tp_row).
        orow = if cols {
            "tp_row - (long)tp_l * TP_RHI * tp_plane"
        } else {
            "(tp_q - tp_f.tp_base) * tp_plane"
        },
        out = store("tp_out", "tp_orow", &format!("{pad}        ")),
        sout = store("tp_sout", "tp_srow", &format!("{pad}            ")),
    )
}

/// The fused launcher: the kernel for the executor's group of steps, its
/// blocks across the tiles of the other axes and along the segments of rows.
pub fn launcher(lp: &LoweredPipeline<'_>, f: &Fusion) -> String {
    let unit = lp.unit;
    let p = unit.pipeline;
    let rank = p.grid.rank();
    let sweep = &p.body[f.sweep];
    let inner: Vec<usize> = (1..rank).collect();
    let mut w = String::new();
    let _ = writeln!(
        w,
        "\n/* {}: tp_len steps in one kernel (two-level blocking), its rows in the steps' windows. */\n\
         TPACE_HOOK void {}(struct tpace_rt *tp, const tpace_launch *tp_l)\n{{\n    \
         const tpace_fuse_args *tp_f = tp_l->tp_fuse;\n    \
         const int tp_len = tp_l->tp_steps;",
        sweep_summary(unit, f.sweep),
        lp.names.fused_launcher()
    );
    if !super::launcher_inputs(lp, f.sweep).is_empty() {
        let _ = writeln!(
            w,
            "    const {0} *tp_in = (const {0} *)tp_l->tp_in;",
            lp.names.inputs()
        );
    }
    // Blocks across each inner axis: its extent over the columns a block keeps.
    for pos in &inner {
        let (b, h) = (f.tile()[pos - 1], f.inner_reach[pos - 1]);
        let _ = writeln!(
            w,
            "    const long tp_box_lo{pos} = tp_l->tp_lo[{pos}], tp_box_hi{pos} = tp_l->tp_hi[{pos}];"
        );
        if rank == 3 && pos == &2 {
            // Along the contiguous axis the tiles start at an aligned column, on whole
            // threads' columns (the kernel's tp_first2).
            let c = f.per_thread[1];
            let _ = writeln!(
                w,
                "    /* Along axis 2 the first tile starts at an aligned column: the tiles cover the box from its first own column. */\n    \
                 const long tp_own2 = TPACE_TILE_START(tp_box_lo2, tp_l->tp_dim_lo[2], tp_len * {h}L, {c}L) + tp_len * {h}L;\n    \
                 const long tp_tiles2 = (TPACE_MAX(tp_box_hi2 - tp_own2, 1L) + TPACE_TILE_STRIDE({b}L, tp_len * {h}L, {c}L) - 1) / TPACE_TILE_STRIDE({b}L, tp_len * {h}L, {c}L);"
            );
        } else {
            let _ = writeln!(
                w,
                "    const long tp_tiles{pos} = (TPACE_MAX(tp_box_hi{pos} - tp_box_lo{pos}, 1L) + {b} - 2L * tp_len * {h} - 1) / ({b} - 2L * tp_len * {h});",
            );
        }
    }
    let _ = writeln!(
        w,
        "    const long tp_segs = (tp_f->tp_seg_hi - tp_f->tp_seg_lo + tp_f->tp_seg - 1) / tp_f->tp_seg;"
    );
    let (grid, block) = if rank == 2 {
        (
            "(unsigned)tp_tiles1, (unsigned)tp_segs".to_string(),
            f.block[0].to_string(),
        )
    } else {
        (
            "(unsigned)tp_tiles2, (unsigned)tp_tiles1, (unsigned)tp_segs".to_string(),
            format!("{}, {}", f.block[1], f.block[0]),
        )
    };
    let tmp = unit.plan.swap.expect("fusion needs a swap").tmp;
    let mut args = vec![
        format!(
            "(const {ty} *)tp_l->tp_buf[{a}]",
            ty = p.arrays[f.array].elem.c_name(),
            a = f.array
        ),
        format!(
            "({ty} *)tp_l->tp_buf[{tmp}]",
            ty = p.arrays[tmp].elem.c_name()
        ),
        "*tp_f".to_string(),
    ];
    for pos in &inner {
        args.push(format!("tp_l->tp_dim_lo[{pos}], tp_l->tp_dim_n[{pos}]"));
    }
    for pos in &inner {
        args.push(format!("tp_box_lo{pos}, tp_box_hi{pos}"));
    }
    args.extend(scalar_args(lp, f.sweep));
    let args = args.join(", ");
    let name = lp.names.fused_kernel(f.sweep);
    let (line, _) = crate::diag::line_col(&unit.program.source, sweep.span.start);
    let _ = writeln!(
        w,
        "    const dim3 tp_grid({grid}), tp_block({block});\n    \
         const cudaStream_t tp_stream = tpace_stream(tp, tp_l->tp_q);\n    \
         /* Each step count's kernel with the dynamic shared memory its blocks need (the runtime fused no\n     \
         * more steps than the device has room for: tpace_dev_shared_limit). */\n    \
         switch (tp_len) {{"
    );
    for t in 2..=f.max_steps {
        let case = if t == f.max_steps {
            "default".to_string()
        } else {
            format!("case {t}")
        };
        let bytes = f.shared_bytes(t);
        let opt_in = bytes > SHARED_WITHOUT_OPT_IN;
        let _ = writeln!(w, "    {case}:{}", if opt_in { " {" } else { "" });
        if opt_in {
            // Past 48 KiB a kernel must ask for its dynamic shared memory, once per kernel
            // and device (the attribute is the current device's).
            let _ = writeln!(
                w,
                "        /* {bytes} bytes a block, more than the {SHARED_WITHOUT_OPT_IN} a kernel gets without asking: opt in (once a device). */\n        \
                 static int tp_opted[64];\n        \
                 if (!tp_opted[tp->device % 64])\n            \
                 TPACE_CUDA(tp, cudaFuncSetAttribute({name}<{t}>, cudaFuncAttributeMaxDynamicSharedMemorySize, {bytes}));\n        \
                 tp_opted[tp->device % 64] = 1;"
            );
        }
        let _ = writeln!(
            w,
            "        TPACE_LAUNCH_SYNC({name}<{t}>, tp_grid, tp_block, {bytes}, tp_stream, {args});\n        break;{}",
            if opt_in { "\n    }" } else { "" }
        );
    }
    let _ = writeln!(
        w,
        "    }}\n    tpace_cuda_check_launch(tp, \"{name} (sweep at line {line})\");\n}}"
    );
    w
}

#[cfg(test)]
mod tests {
    use crate::plan::compile_source;

    /// The launch bounds' block counts per step count of the 3-D fixtures and two 2-D ones.
    #[test]
    fn launch_bounds_follow_the_rings() {
        for (name, src, want) in [
            (
                "heat3d.c",
                include_str!("../../../examples/heat3d.c"),
                "TP_T <= 2 ? 3 : TP_T <= 4 ? 2 : 1",
            ),
            (
                "heat3d_double.c",
                include_str!("../../../tests/fixtures/layouts/heat3d_double.c"),
                "TP_T <= 3 ? 2 : 1",
            ),
            (
                "heat3d_star13_double.c",
                include_str!("../../../tests/fixtures/layouts/heat3d_star13_double.c"),
                "1",
            ),
            (
                "heat3d_star19.c",
                include_str!("../../../tests/fixtures/layouts/heat3d_star19.c"),
                "1",
            ),
            (
                "jacobi2d.c",
                include_str!("../../../examples/jacobi2d.c"),
                "TP_T <= 4 ? 8 : 4",
            ),
            (
                "heat2d_asym.c",
                include_str!("../../../tests/fixtures/layouts/heat2d_asym.c"),
                "TP_T <= 2 ? 6 : TP_T <= 3 ? 5 : TP_T <= 4 ? 4 : TP_T <= 7 ? 3 : 2",
            ),
        ] {
            let c = compile_source(name, src).expect("compiles");
            let f = c.stages[0].plan.fusion.clone().expect("fuses");
            let blocks = super::per_step_count(&f, |t| f.blocks_per_multiprocessor(t));
            assert_eq!(blocks, want, "{name}");
        }
    }
}
