//! Fused kernels (two-level blocking, MMTB paper §2.1): one launch advances
//! `TP_T` steps of the step's one sweep. The plan (`plan::Fusion`) says
//! whether the pipeline qualifies and gives the reach and the block shape; the
//! runtime (`tpace_fuse_setup`, `tpace_group_steps`) groups the steps and hands
//! the intermediate steps' rows from chunk to chunk. This file only prints.

use super::{kernel_name, per_point_locals, scalar_args, scalar_params};
use crate::analysis::Facts;
use crate::back::common::{mentions, rewritten_body_with, sweep_summary};
use crate::ir::{AccessKind, Program};
use crate::plan::{Fusion, MAX_FUSED_STEPS, Plan};
use std::fmt::Write;

/// Name of the fused kernel of sweep `s` (a template on the step count).
fn fused_name(s: usize) -> String {
    format!("{}_fused", kernel_name(s))
}

/// The thread index and block index components along inner grid position `pos`
/// (the innermost axis is x, the next y).
fn axis(rank: usize, pos: usize) -> &'static str {
    if pos + 1 == rank { "x" } else { "y" }
}

/// The block index component that numbers the segments along the cut axis.
fn segment_axis(rank: usize) -> &'static str {
    if rank == 2 { "y" } else { "z" }
}

/// The fused kernel of the plan's fused sweep.
pub fn kernel(program: &Program, facts: &Facts, f: &Fusion) -> String {
    let p = &program.pipeline;
    let rank = p.grid.rank();
    let sweep = &p.body[f.sweep];
    let elem = p.arrays[f.array].elem.c_name();
    let inner: Vec<usize> = (1..rank).collect();
    let mut w = String::new();
    writeln!(
        w,
        "\n/* {summary}, fused: TP_T steps per launch (two-level blocking, MMTB paper §2.1).\n\
         \x20* A block holds a tile of columns across the other axes ({threads} threads; TP_T * reach of\n\
         \x20* them on each side are its neighbours' and only feed its own) and streams along the cut\n\
         \x20* axis over its segment of rows. Row x of step l is computed as soon as row x + TP_RHI of\n\
         \x20* step l - 1 is: every thread keeps the last TP_RING rows of its column of every step in\n\
         \x20* registers and shares the row a step computes through shared memory for the reads along\n\
         \x20* the other axes. Rows below a step's window come from the predecessor's strip (mmtb);\n\
         \x20* the last step's rows go to the output buffer, the other steps' rows near the chunk's top\n\
         \x20* to the strip for the successor. Every thread reaches every barrier: no early return. */",
        summary = sweep_summary(program, facts, f.sweep),
        threads = f
            .block
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(" x "),
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
    args.extend(scalar_params(program, sweep));
    writeln!(
        w,
        "template <int TP_T>\n__global__ void __launch_bounds__({threads}) {name}({args})\n{{",
        threads = f.threads(),
        name = fused_name(f.sweep),
        args = args.join(", "),
    )
    .unwrap();
    writeln!(
        w,
        "    /* Rows a step reads below and above along the cut axis, and the rows of a step each thread keeps. */\n\
         \x20   enum {{ TP_RLO = {}, TP_RHI = {}, TP_RING = TP_RLO + TP_RHI + 1 }};",
        f.reach_lo, f.reach_hi
    )
    .unwrap();
    let consts: Vec<String> = inner
        .iter()
        .map(|pos| {
            format!(
                "TP_B{pos} = {}, TP_H{pos} = {}",
                f.block[pos - 1],
                f.inner_reach[pos - 1]
            )
        })
        .collect();
    writeln!(
        w,
        "    /* Threads and read reach along the other axes: a block keeps TP_B - 2 * TP_T * TP_H columns of each. */\n\
         \x20   enum {{ {} }};",
        consts.join(", ")
    )
    .unwrap();
    let shared_dims: String = inner
        .iter()
        .map(|pos| format!("[TP_B{pos} + 2 * TP_H{pos}]"))
        .collect();
    writeln!(
        w,
        "    /* The row each step computes now, for the reads along the other axes (a copy for even and odd rows). */\n\
         \x20   __shared__ {elem} tp_sh[2][TP_T]{shared_dims};"
    )
    .unwrap();
    for pos in &inner {
        let a = axis(rank, *pos);
        writeln!(
            w,
            "    const int tp_t{pos} = threadIdx.{a};\n\
             \x20   const long tp_i{pos} = tp_box_lo{pos} + (long)blockIdx.{a} * (TP_B{pos} - 2 * TP_T * TP_H{pos}) + tp_t{pos} - TP_T * TP_H{pos};"
        )
        .unwrap();
    }
    let all = |f: &dyn Fn(usize) -> String| {
        inner
            .iter()
            .map(|pos| f(*pos))
            .collect::<Vec<_>>()
            .join(" && ")
    };
    let col = if rank == 2 {
        "tp_i1 - tp_lo1".to_string()
    } else {
        "(tp_i1 - tp_lo1) * tp_n2 + (tp_i2 - tp_lo2)".to_string()
    };
    let plane = if rank == 2 { "tp_n1" } else { "tp_n1 * tp_n2" };
    writeln!(
        w,
        "    /* This thread's column: its element offset in a row, whether it is on the grid, in the sweep's box, and its block's own. */\n\
         \x20   const long tp_plane = {plane};\n\
         \x20   const long tp_col = {col};\n\
         \x20   const bool tp_on_grid = {on_grid};\n\
         \x20   const bool tp_in_box = {in_box};\n\
         \x20   const bool tp_mine = tp_in_box && {mine};\n\
         \x20   const {elem} *tp_sin = (const {elem} *)tp_f.strip_in;\n\
         \x20   {elem} *tp_sout = ({elem} *)tp_f.strip_out;\n\
         \x20   /* This block's rows: [tp_xs, tp_xe) of every step. */\n\
         \x20   const long tp_xs = tp_f.seg_lo + (long)blockIdx.{seg} * tp_f.seg;\n\
         \x20   const long tp_xe = TPACE_MIN(tp_xs + tp_f.seg, tp_f.seg_hi);\n\
         \x20   {elem} tp_v[TP_T + 1][TP_RING];\n\
         \x20   TPACE_UNROLL\n\
         \x20   for (int tp_l = 0; tp_l <= TP_T; tp_l++) {{\n\
         \x20       TPACE_UNROLL\n\
         \x20       for (int tp_r = 0; tp_r < TP_RING; tp_r++)\n\
         \x20           tp_v[tp_l][tp_r] = ({elem})0;\n\
         \x20   }}\n\
         \x20   int tp_par = 0;\n\
         \x20   TPACE_NO_UNROLL\n\
         \x20   for (long tp_x = tp_xs - TP_T * TP_RLO; tp_x < tp_xe + TP_T * TP_RHI; tp_x++, tp_par ^= 1) {{\n\
         \x20       /* The group's input: row tp_x as the step before the group left it. */\n\
         \x20       TPACE_UNROLL\n\
         \x20       for (int tp_r = 0; tp_r + 1 < TP_RING; tp_r++)\n\
         \x20           tp_v[0][tp_r] = tp_v[0][tp_r + 1];\n\
         \x20       tp_v[0][TP_RING - 1] = tp_on_grid && tp_x >= tp_f.rows_lo && tp_x < tp_f.rows_hi\n\
         \x20                                  ? tp_in[(tp_x - tp_f.base) * tp_plane + tp_col] : ({elem})0;\n\
         \x20       /* Step l computes the row whose inputs are now complete, TP_RHI rows behind step l - 1. */\n\
         \x20       TPACE_UNROLL\n\
         \x20       for (int tp_l = 1; tp_l <= TP_T; tp_l++) {{\n\
         \x20           const long tp_q = tp_x - (long)tp_l * TP_RHI;\n\
         \x20           const long tp_m = tp_f.level0 + tp_l; /* the step of the block this row reaches */\n\
         \x20           const long tp_j = tp_f.level0 / TP_T * (TP_T - 1) + tp_l - 1; /* its strip, if intermediate */\n\
         \x20           tp_sh[tp_par][tp_l - 1]{own_shared} = tp_v[tp_l - 1][TP_RLO];\n\
         \x20           __syncthreads();\n\
         \x20           {elem} tp_val = tp_v[tp_l - 1][TP_RLO]; /* outside the sweep's box a point keeps its value */\n\
         \x20           if (tp_in_box && tp_q >= tp_f.box_lo && tp_q < tp_f.box_hi) {{\n\
         \x20               const long tp_strip = tp_f.edge_in - (tp_m - 1) * tp_f.skew - tp_f.strip_rows;\n\
         \x20               if (tp_l < TP_T && tp_sin != NULL && tp_q < tp_f.wlo[tp_l - 1] && tp_q >= tp_strip) {{\n\
         \x20                   /* Below the step's window: the predecessor computed this row. */\n\
         \x20                   tp_val = tp_sin[(tp_j * tp_f.strip_rows + tp_q - tp_strip) * tp_plane + tp_col];\n\
         \x20               }} else {{",
        on_grid = all(&|p| format!("tp_i{p} >= tp_lo{p} && tp_i{p} < tp_lo{p} + tp_n{p}")),
        in_box = all(&|p| format!("tp_i{p} >= tp_box_lo{p} && tp_i{p} < tp_box_hi{p}")),
        mine = all(&|p| format!(
            "tp_t{p} >= TP_T * TP_H{p} && tp_t{p} < TP_B{p} - TP_T * TP_H{p}"
        )),
        seg = segment_axis(rank),
        own_shared = inner
            .iter()
            .map(|p| format!("[tp_t{p} + TP_H{p}]"))
            .collect::<String>(),
    )
    .unwrap();
    let pad = " ".repeat(20);
    let body = rewritten_body_with(program, sweep, &|acc| {
        if acc.kind == AccessKind::Write {
            return "tp_val".into();
        }
        let off = |o: i64| match o {
            0 => String::new(),
            o if o > 0 => format!(" + {o}"),
            o => format!(" - {}", -o),
        };
        if acc.offsets[0] != 0 || acc.offsets.iter().all(|o| *o == 0) {
            format!("tp_v[tp_l - 1][TP_RLO{}]", off(acc.offsets[0]))
        } else {
            let idx: String = inner
                .iter()
                .map(|p| format!("[tp_t{p} + TP_H{p}{}]", off(acc.offsets[*p])))
                .collect();
            format!("tp_sh[tp_par][tp_l - 1]{idx}")
        }
    });
    for pos in 0..rank {
        let l = sweep.loop_for(pos).expect("one loop per dimension");
        if mentions(&body, &l.var) {
            let value = if pos == 0 {
                "tp_q".to_string()
            } else {
                format!("tp_i{pos}")
            };
            writeln!(
                w,
                "{pad}{ty} {v} = ({ty}){value};",
                ty = l.var_type,
                v = l.var
            )
            .unwrap();
        }
    }
    w.push_str(&per_point_locals(sweep, &pad));
    writeln!(w, "{pad}{body}").unwrap();
    w.push_str(
        "                }\n\
         \x20           }\n\
         \x20           TPACE_UNROLL\n\
         \x20           for (int tp_r = 0; tp_r + 1 < TP_RING; tp_r++)\n\
         \x20               tp_v[tp_l][tp_r] = tp_v[tp_l][tp_r + 1];\n\
         \x20           tp_v[tp_l][TP_RING - 1] = tp_val;\n\
         \x20           /* Rows of this block's segment in the step's window and the sweep's box are written:\n\
         \x20            * the last step's to the output buffer, the others' near the chunk's top to the strip. */\n\
         \x20           const bool tp_keep = tp_mine && tp_q >= tp_xs && tp_q < tp_xe && tp_q >= tp_f.box_lo &&\n\
         \x20                                tp_q < tp_f.box_hi && tp_q >= tp_f.wlo[tp_l - 1] && tp_q < tp_f.whi[tp_l - 1];\n\
         \x20           if (tp_l == TP_T) {\n\
         \x20               if (tp_keep)\n\
         \x20                   tp_out[(tp_q - tp_f.base) * tp_plane + tp_col] = tp_val;\n\
         \x20           } else if (tp_keep && tp_sout != NULL) {\n\
         \x20               const long tp_strip = tp_f.edge_out - (tp_m - 1) * tp_f.skew - tp_f.strip_rows;\n\
         \x20               if (tp_q >= tp_strip && tp_q < tp_strip + tp_f.strip_rows)\n\
         \x20                   tp_sout[(tp_j * tp_f.strip_rows + tp_q - tp_strip) * tp_plane + tp_col] = tp_val;\n\
         \x20           }\n\
         \x20       }\n\
         \x20   }\n\
         }\n",
    );
    w
}

/// The launch of the fused kernel for steps [tp_i, tp_i + tp_len), at 16 spaces of
/// indent (inside the chunk loop's `if (tp_len > 1)`).
pub fn launch(program: &Program, facts: &Facts, plan: &Plan, f: &Fusion) -> String {
    let p = &program.pipeline;
    let rank = p.grid.rank();
    let sweep = &p.body[f.sweep];
    let inner: Vec<usize> = (1..rank).collect();
    let bound = |pos: usize| {
        let l = sweep.loop_for(pos).expect("one loop per dimension");
        (l.lo.clone(), l.hi.clone())
    };
    let (lo0, hi0) = bound(0);
    let mut w = String::new();
    writeln!(
        w,
        "                /* {}: tp_len steps in one kernel (two-level blocking). */",
        sweep_summary(program, facts, f.sweep),
    )
    .unwrap();
    for pos in &inner {
        let (lo, hi) = bound(*pos);
        writeln!(
            w,
            "                const long tp_box_lo{pos} = (long)({lo}), tp_box_hi{pos} = (long)({hi});"
        )
        .unwrap();
    }
    // Blocks across each inner axis: its extent over the columns a block keeps.
    for pos in &inner {
        writeln!(
            w,
            "                const long tp_tiles{pos} = (TPACE_MAX(tp_box_hi{pos} - tp_box_lo{pos}, 1L) + {b} - 2L * tp_len * {h} - 1) / ({b} - 2L * tp_len * {h});",
            b = f.block[pos - 1],
            h = f.inner_reach[pos - 1],
        )
        .unwrap();
    }
    let tiles: Vec<String> = inner.iter().map(|pos| format!("tp_tiles{pos}")).collect();
    writeln!(
        w,
        "                tpace_fuse_args tp_f;\n\
         \x20               const long tp_segs = tpace_fuse_setup(&tp, &tp_ch, tp_i, tp_len, /* tau */ {tau}, (long)({lo0}), (long)({hi0}),\n\
         \x20                                                     {tiles}, /* reach */ {reach}, /* array */ {array}, &tp_f);",
        tau = plan.skew.sweep[f.sweep],
        tiles = tiles.join(" * "),
        reach = f.reach_lo + f.reach_hi,
        array = f.array,
    )
    .unwrap();
    let nonempty: Vec<String> = inner
        .iter()
        .map(|pos| format!("tp_box_lo{pos} < tp_box_hi{pos}"))
        .collect();
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
    let mut args = vec![
        crate::back::common::dev_name(&p.arrays[f.array].ident()),
        crate::back::common::dev_name(
            &p.arrays[plan.swap.expect("fusion needs a swap").tmp].ident(),
        ),
        "tp_f".to_string(),
    ];
    for pos in &inner {
        args.push(format!("tp_lo{pos}, tp_n{pos}"));
    }
    for pos in &inner {
        args.push(format!("tp_box_lo{pos}, tp_box_hi{pos}"));
    }
    args.extend(scalar_args(program, sweep));
    let args = args.join(", ");
    let name = fused_name(f.sweep);
    let (line, _) = crate::diag::line_col(&program.source, sweep.span.start);
    writeln!(
        w,
        "                if (tp_segs > 0 && {nonempty}) {{\n\
         \x20                   const dim3 tp_grid({grid}), tp_block({block});",
        nonempty = nonempty.join(" && "),
    )
    .unwrap();
    w.push_str("                    switch (tp_len) {\n");
    for t in 2..=MAX_FUSED_STEPS {
        let case = if t == MAX_FUSED_STEPS {
            "default".to_string()
        } else {
            format!("case {t}")
        };
        writeln!(
            w,
            "                    {case}:\n\
             \x20                       TPACE_LAUNCH_SYNC({name}<{t}>, tp_grid, tp_block, tp_stream, {args});\n\
             \x20                       break;"
        )
        .unwrap();
    }
    writeln!(
        w,
        "                    }}\n\
         \x20                   tpace_cuda_check_launch(&tp, \"{name} (sweep at line {line})\");\n\
         \x20               }}"
    )
    .unwrap();
    w
}
