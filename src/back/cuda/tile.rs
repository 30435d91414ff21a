//! The body of the 3-D fused kernel (after its header in `fused.rs`): a block
//! is a tile of `TP_B1` rows of threads along axis 1 by `TP_B2` threads along
//! axis 2, each thread holding `TP_C2` neighbouring columns along axis 2 (the
//! contiguous one: its loads and stores are at constant offsets from one
//! address), and the block streams along the cut axis over its segment of rows.
//!
//! Per row of the cut axis, one barrier serves every step: step `l` computes
//! the row `TP_RHI` behind step `l - 1`, so what it reads of step `l - 1` along
//! the other axes was computed a row earlier and put in shared memory then.
//! Reads along the cut axis come from the thread's rings of registers, reads
//! along axis 2 from its own columns and, past its first and last, from the
//! lanes beside it (warp shuffles), reads along axis 1 from shared memory.
//! The group's input rows are loaded `TP_AHEAD` rows before they are used,
//! so those loads are in flight while rows are computed.

use super::fused::{keep_point, level_indices, point_locals, row_runs, segment_and_rings};
use crate::back::kernel::{body_with, offset_text};
use crate::ir::AccessKind;
use crate::plan::{Fusion, Unit};
use std::fmt::Write;

/// Name of the clamped row of the tile a thread reads at offset `o` along axis 1.
fn row_name(o: i64) -> String {
    if o < 0 {
        format!("tp_t1_m{}", -o)
    } else {
        format!("tp_t1_p{o}")
    }
}

/// The rest of the 3-D fused kernel (see the module docs), after the header
/// `fused::kernel` prints.
pub(super) fn tile_kernel_body(w: &mut String, unit: Unit<'_>, f: &Fusion) {
    let p = unit.pipeline;
    let sweep = &p.body[f.sweep];
    let elem = p.arrays[f.array].elem.c_name();
    // Offsets of the reads along axis 1: each gets a row of the tile, clamped to it.
    let mut rows: Vec<i64> = sweep
        .accesses
        .iter()
        .filter(|a| a.kind != AccessKind::Write && a.offsets[1] != 0)
        .map(|a| a.offsets[1])
        .collect();
    rows.sort_unstable();
    rows.dedup();
    let row_line = if rows.is_empty() {
        String::new()
    } else {
        let consts: Vec<String> = rows
            .iter()
            .map(|o| {
                let clamped = if *o < 0 {
                    format!("TPACE_MAX(tp_t1 - {}, 0)", -o)
                } else {
                    format!("TPACE_MIN(tp_t1 + {o}, TP_B1 - 1)")
                };
                format!("{} = {clamped}", row_name(*o))
            })
            .collect();
        let keeps: Vec<String> = rows
            .iter()
            .map(|o| format!("TPACE_KEEP32({});", row_name(*o)))
            .collect();
        format!(
            "    /* The rows of the tile whose columns this thread reads along axis 1 (at the tile's sides,\n\
             \x20    * clamped: those columns are halo). */\n\
             \x20   int {};\n\
             \x20   {} /* in registers for the row loop */\n",
            consts.join(", "),
            keeps.join(" ")
        )
    };
    writeln!(
        w,
        "    /* Along axis 1, TP_B1 rows of threads; along axis 2, TP_B2 threads holding TP_C2 neighbouring columns\n\
         \x20    * each. Reads reach TP_H1 and TP_H2 columns: a block keeps TP_B1 - 2 * TP_T * TP_H1 by TP_S2 of them,\n\
         \x20    * TP_L2 columns into its tile along axis 2 (tiles start on whole threads' columns, the first on an\n\
         \x20    * aligned one: TPACE_TILE_START). The input rows are loaded TP_AHEAD rows ahead. */\n\
         \x20   enum {{ TP_B1 = {b1}, TP_H1 = {h1}, TP_B2 = {b2}, TP_C2 = {c2}, TP_W2 = TP_B2 * TP_C2, TP_H2 = {h2}, TP_AHEAD = TPACE_FUSED_AHEAD }};\n\
         \x20   enum {{ TP_L2 = TP_T * TP_H2, TP_S2 = TPACE_TILE_STRIDE(TP_W2, TP_T * TP_H2, TP_C2) }};\n\
         \x20   /* The tile's part of the row each step computes (a copy for even and odd rows), from the start\n\
         \x20    * of the block's dynamic shared memory: the launch gives its size. */\n\
         \x20   typedef {elem} tp_sh_rows[TP_T][TP_B1][TP_W2];\n\
         \x20   TPACE_DYNAMIC_SHARED(tp_smem, 2 * sizeof(tp_sh_rows));\n\
         \x20   tp_sh_rows *const tp_sh = (tp_sh_rows *)tp_smem;\n\
         \x20   const int tp_t1 = threadIdx.y, tp_t2 = threadIdx.x;\n\
         {row_line}\
         \x20   /* This thread's row along axis 1 and its first column along axis 2. */\n\
         \x20   const long tp_i1 = tp_box_lo1 + (long)blockIdx.y * (TP_B1 - 2 * TP_T * TP_H1) + tp_t1 - TP_T * TP_H1;\n\
         \x20   const long tp_first2 = TPACE_TILE_START(tp_box_lo2, tp_lo2, TP_T * TP_H2, TP_C2) + (long)blockIdx.x * TP_S2 + tp_t2 * TP_C2;\n\
         \x20   const long tp_plane = tp_n1 * tp_n2;\n\
         \x20   /* This thread's columns: bit c says whether column c is on the grid, in the sweep's box, and its block's own;\n\
         \x20    * column 0 is at element offset tp_col of a row, column c c elements further. */\n\
         \x20   unsigned tp_cols_grid = 0, tp_cols_box = 0, tp_cols_mine = 0;\n\
         \x20   const bool tp_t1_grid = tp_i1 >= tp_lo1 && tp_i1 < tp_lo1 + tp_n1, tp_t1_box = tp_i1 >= tp_box_lo1 && tp_i1 < tp_box_hi1;\n\
         \x20   const bool tp_t1_mine = tp_t1 >= TP_T * TP_H1 && tp_t1 < TP_B1 - TP_T * TP_H1;\n\
         \x20   TPACE_UNROLL\n\
         \x20   for (int tp_c = 0; tp_c < TP_C2; tp_c++) {{\n\
         \x20       const long tp_i2 = tp_first2 + tp_c;\n\
         \x20       const int tp_k2 = tp_t2 * TP_C2 + tp_c; /* the column's place in the tile */\n\
         \x20       const bool tp_on_grid = tp_t1_grid && tp_i2 >= tp_lo2 && tp_i2 < tp_lo2 + tp_n2;\n\
         \x20       const bool tp_in_box = tp_t1_box && tp_i2 >= tp_box_lo2 && tp_i2 < tp_box_hi2;\n\
         \x20       const bool tp_mine = tp_in_box && tp_t1_mine && tp_k2 >= TP_L2 && tp_k2 < TP_L2 + TP_S2;\n\
         \x20       tp_cols_grid |= (unsigned)tp_on_grid << tp_c;\n\
         \x20       tp_cols_box |= (unsigned)tp_in_box << tp_c;\n\
         \x20       tp_cols_mine |= (unsigned)tp_mine << tp_c;\n\
         \x20   }}\n\
         \x20   long tp_col = (tp_i1 - tp_lo1) * tp_n2 + (tp_first2 - tp_lo2);\n\
         \x20   TPACE_KEEP(tp_col);\n\
         \x20   /* The buffers from this thread's column 0 of row 0: its columns follow, a row is tp_plane further. */\n\
         \x20   const {elem} *const tp_in_col = tp_in + tp_col;\n\
         \x20   {elem} *const tp_out_col = tp_out + tp_col;\n\
         \x20   /* Whether the block's whole tile is in the sweep's box (the same for every thread of the block): its\n\
         \x20    * steady rows then run a copy without the per-column box selects (where TPACE_TILE_FAST is 1). */\n\
         \x20   const long tp_tile1 = tp_box_lo1 + (long)blockIdx.y * (TP_B1 - 2 * TP_T * TP_H1) - TP_T * TP_H1, tp_tile2 = tp_first2 - tp_t2 * TP_C2;\n\
         \x20   const bool tp_inside = TPACE_TILE_FAST && tp_tile1 >= tp_box_lo1 && tp_tile1 + TP_B1 <= tp_box_hi1 && tp_tile2 >= tp_box_lo2 && tp_tile2 + TP_W2 <= tp_box_hi2;\n\
         \x20   /* Whether every thread's columns start on 16 bytes in every row (one access moves them; the same for\n\
         \x20    * the whole block). */\n\
         \x20   const bool tp_wide = tpace_cols_wide(tp_in, tp_out, tp_n2, tp_tile2 - tp_lo2, TP_C2);\n\
         \x20   TPACE_KEEP32(tp_cols_grid); TPACE_KEEP32(tp_cols_box); TPACE_KEEP32(tp_cols_mine); /* in registers for the row loop */",
        b1 = f.block[0],
        h1 = f.inner_reach[0],
        b2 = f.block[1],
        c2 = f.per_thread[1],
        h2 = f.inner_reach[1],
    )
    .unwrap();
    w.push_str(&segment_and_rings(elem, "[TP_C2]", "z"));
    writeln!(
        w,
        "    {elem} *const tp_sout_col = tp_sout != NULL ? tp_sout + tp_col : NULL; /* the successor's strip, likewise */"
    )
    .unwrap();
    // The input rows loaded ahead, before the first row: rows tp_x .. tp_x + TP_AHEAD - 1.
    let prologue = format!(
        "    /* The group's input rows tp_x .. tp_x + TP_AHEAD - 1 (as the step before the group left them; zero\n\
         \x20    * outside its rows and the grid), loaded ahead of their use. */\n\
         \x20   {elem} tp_ahead[TP_AHEAD][TP_C2];\n\
         \x20   TPACE_UNROLL\n\
         \x20   for (int tp_a = 0; tp_a < TP_AHEAD; tp_a++) {{\n\
         \x20       const bool tp_a_in = tp_x + tp_a >= tp_f.tp_rows_lo && tp_x + tp_a < tp_f.tp_rows_hi;\n\
         \x20       tpace_cols_load(tp_ahead[tp_a], tp_in_col + tp_row + tp_a * tp_plane, tp_a_in ? tp_cols_grid : 0u, tp_wide);\n\
         \x20   }}\n"
    );
    // The body of the row loop, at the indent of a loop of its own (see `row_runs`).
    let loop_start = w.len();
    writeln!(
        w,
        "        /* The group's input: row tp_x, loaded TP_AHEAD rows ago, into step 0's ring; row tp_x + TP_AHEAD now. */\n\
         \x20       const bool tp_ahead_in = (unsigned long)(tp_x + TP_AHEAD - tp_f.tp_rows_lo) < (unsigned long)(tp_f.tp_rows_hi - tp_f.tp_rows_lo);\n\
         \x20       TPACE_UNROLL\n\
         \x20       for (int tp_c = 0; tp_c < TP_C2; tp_c++) {{\n\
         \x20           TPACE_UNROLL\n\
         \x20           for (int tp_r = 0; tp_r + 1 < TP_RING; tp_r++)\n\
         \x20               tp_v[0][tp_r][tp_c] = tp_v[0][tp_r + 1][tp_c];\n\
         \x20           tp_v[0][TP_RING - 1][tp_c] = tp_ahead[0][tp_c];\n\
         \x20           TPACE_UNROLL\n\
         \x20           for (int tp_a = 0; tp_a + 1 < TP_AHEAD; tp_a++)\n\
         \x20               tp_ahead[tp_a][tp_c] = tp_ahead[tp_a + 1][tp_c];\n\
         \x20       }}\n\
         \x20       tpace_cols_load(tp_ahead[TP_AHEAD - 1], tp_in_col + tp_row + TP_AHEAD * tp_plane, tp_ahead_in ? tp_cols_grid : 0u, tp_wide);\n\
         \x20       /* One barrier a row for every step: the rows the steps put in shared memory at the last row\n\
         \x20        * are visible, and the copy they read then is free for this row's. */\n\
         \x20       __syncthreads();\n\
         \x20       /* Step 0's row that step 1 reads along axis 1 at the next row (TP_RHI - 1 behind the newest). */\n\
         \x20       TPACE_UNROLL\n\
         \x20       for (int tp_c = 0; tp_c < TP_C2; tp_c++)\n\
         \x20           tp_sh[tp_par][0][tp_t1][tp_t2 * TP_C2 + tp_c] = tp_v[0][TP_RLO + 1][tp_c];\n\
         \x20       /* Step l computes the row whose inputs are now complete, TP_RHI rows behind step l - 1. */\n\
         \x20       TPACE_UNROLL\n\
         \x20       for (int tp_l = 1; tp_l <= TP_T; tp_l++) {{\n\
         {level}\
         \x20           /* Step l - 1's row tp_q along axis 2: this thread's columns from its registers, TP_H2 on each\n\
         \x20            * side from the lanes beside it (at the tile's sides a lane's own: those columns are halo). */\n\
         \x20           {elem} tp_w2[TP_H2 + TP_C2 + TP_H2];\n\
         \x20           TPACE_UNROLL\n\
         \x20           for (int tp_h = 0; tp_h < TP_H2; tp_h++) {{\n\
         \x20               tp_w2[tp_h] = __shfl_up_sync(0xffffffffu, tp_v[tp_l - 1][TP_RLO][TP_C2 - TP_H2 + tp_h], 1, TP_B2);\n\
         \x20               tp_w2[TP_H2 + TP_C2 + tp_h] = __shfl_down_sync(0xffffffffu, tp_v[tp_l - 1][TP_RLO][tp_h], 1, TP_B2);\n\
         \x20           }}\n\
         \x20           TPACE_UNROLL\n\
         \x20           for (int tp_c = 0; tp_c < TP_C2; tp_c++)\n\
         \x20               tp_w2[TP_H2 + tp_c] = tp_v[tp_l - 1][TP_RLO][tp_c];\n\
         \x20           /* Row tp_q of step l, column by column; outside the sweep's box a point keeps its value.\n\
         \x20            * Along axis 1 the step reads the shared row step l - 1 put there at the last row. */\n\
         \x20           {elem} tp_val[TP_C2];\n\
         \x20           if (tp_q_strip_in) {{\n\
         \x20               /* Below the step's window (a row of the whole block): the predecessor computed it. */\n\
         \x20               const long tp_srow = (tp_j * tp_f.tp_strip_rows + tp_q - tp_strip_in) * tp_plane;\n\
         \x20               TPACE_UNROLL\n\
         \x20               for (int tp_c = 0; tp_c < TP_C2; tp_c++)\n\
         \x20                   tp_val[tp_c] = tp_q_box && ((tp_cols_box >> tp_c) & 1u) ? tp_sin[tp_srow + tp_col + tp_c] : tp_w2[TP_H2 + tp_c];\n\
         \x20           }} else if (tp_q_box) {{\n\
         \x20               /* Every column computes (its reads are registers and shared memory) and the sweep's\n\
         \x20                * box selects: no branch per column. */\n\
         \x20               TPACE_UNROLL\n\
         \x20               for (int tp_c = 0; tp_c < TP_C2; tp_c++) {{\n\
         \x20                   {elem} tp_new = tp_w2[TP_H2 + tp_c];\n\
         \x20                   {{",
        level = level_indices(&" ".repeat(12)),
    )
    .unwrap();
    let body = body_with(unit.program, sweep, &|acc| {
        if acc.kind == AccessKind::Write {
            "tp_new".into()
        } else if acc.offsets[1] != 0 {
            format!(
                "tp_sh[tp_par ^ 1][tp_l - 1][{}][tp_t2 * TP_C2 + tp_c]",
                row_name(acc.offsets[1])
            )
        } else if acc.offsets[2] != 0 {
            format!("tp_w2[TP_H2 + tp_c{}]", offset_text(acc.offsets[2]))
        } else {
            format!(
                "tp_v[tp_l - 1][TP_RLO{}][tp_c]",
                offset_text(acc.offsets[0])
            )
        }
    });
    let inner_pad = " ".repeat(24);
    w.push_str(&point_locals(
        unit,
        sweep,
        &body,
        &["tp_i1", "tp_first2 + tp_c"],
        &inner_pad,
    ));
    writeln!(
        w,
        "{inner_pad}{body}\n\
         \x20                   }}\n\
         \x20                   tp_val[tp_c] = tp_fast || ((tp_cols_box >> tp_c) & 1u) ? tp_new : tp_w2[TP_H2 + tp_c];\n\
         \x20               }}\n\
         \x20           }} else {{\n\
         \x20               /* A row outside the sweep's box keeps its values. */\n\
         \x20               TPACE_UNROLL\n\
         \x20               for (int tp_c = 0; tp_c < TP_C2; tp_c++)\n\
         \x20                   tp_val[tp_c] = tp_w2[TP_H2 + tp_c];\n\
         \x20           }}"
    )
    .unwrap();
    w.push_str(&keep_point(true, &" ".repeat(12)));
    w.push_str(
        "            /* The row step l + 1 reads along axis 1 at the next row, in shared memory. */\n\
         \x20           if (tp_l < TP_T) {\n\
         \x20               TPACE_UNROLL\n\
         \x20               for (int tp_c = 0; tp_c < TP_C2; tp_c++)\n\
         \x20                   tp_sh[tp_par][tp_l][tp_t1][tp_t2 * TP_C2 + tp_c] = tp_v[tp_l][TP_RLO + 1][tp_c];\n\
         \x20           }\n\
         \x20       }\n",
    );
    let body = w.split_off(loop_start);
    w.push_str(&row_runs(&body, &prologue, true));
    w.push_str("}\n");
}
