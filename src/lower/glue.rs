//! The host C of one pipeline that follows the runtime: the model's figures,
//! the declarations of its launchers, and the functions the call site calls.
//! The run function describes the pipeline to the runtime (arrays, shape,
//! sweeps, reductions) and lets the executor do the steps; every decision of
//! the plan shows up here as a constant with a comment.

use super::call_site::needs_free;
use super::inputs;
use super::names::{self, Names};
use crate::plan::{Fusion, MAX_FUSED_STEPS, Transfer, Unit};
use crate::text::c_string;
use std::fmt::Write;

/// The pipeline's glue. `model` is the definition of its `tpace_model`; `fusion`
/// is the fused kernel the target prints, if any (the plan has one, the target's
/// kernels fuse steps, and the machine's shared memory holds two steps or more);
/// `steps_hook` whether the target defines the function that chooses the steps
/// per kernel ([`Names::steps`]); `mpi` whether the program runs as MPI ranks (which of
/// them receive each array after the pipeline).
pub fn glue(
    unit: Unit<'_>,
    names: &Names,
    model: &str,
    fusion: Option<&Fusion>,
    steps_hook: bool,
    mpi: bool,
) -> String {
    let p = unit.pipeline;
    let mut w = String::new();
    let _ = writeln!(
        w,
        "/* ==== tpace: pipeline {n}, the time loop at {loc} ==== */\n{model}",
        n = unit.index + 1,
        loc = p.location,
    );
    let _ = writeln!(
        w,
        "/* The launchers of its kernels (the target's part defines them). */"
    );
    for s in launched(unit) {
        let _ = writeln!(
            w,
            "TPACE_HOOK void {}(struct tpace_rt *tp, const tpace_launch *tp_l);",
            names.launcher(s)
        );
    }
    if fusion.is_some() {
        let _ = writeln!(
            w,
            "TPACE_HOOK void {}(struct tpace_rt *tp, const tpace_launch *tp_l);\n\
             /* The most shared memory one block may use on the device (the target's part defines it). */\n\
             TPACE_HOOK long tpace_dev_shared_limit(struct tpace_rt *tp);",
            names.fused_launcher()
        );
    }
    if steps_hook {
        let _ = writeln!(
            w,
            "/* The target's choice of the steps per kernel when the pipeline starts. */\n\
             TPACE_HOOK int {}(const tpace_shape *s);",
            names.steps()
        );
    }
    w.push('\n');
    w.push_str(&run(unit, names, fusion, steps_hook, mpi));
    if inputs::has_step_values(p) {
        w.push_str(&alloc(unit, names));
    }
    if needs_free(p) {
        w.push_str(&free(unit, names));
    }
    w
}

/// The sweeps that run as kernels (all but the copy a swap replaces).
pub fn launched(unit: Unit<'_>) -> impl Iterator<Item = usize> + '_ {
    (0..unit.pipeline.body.len()).filter(move |s| unit.plan.swap.is_none_or(|x| x.copy != *s))
}

fn run(
    unit: Unit<'_>,
    names: &Names,
    fusion: Option<&Fusion>,
    steps_hook: bool,
    mpi: bool,
) -> String {
    let p = unit.pipeline;
    let plan = unit.plan;
    let rank = p.grid.rank();
    let mut w = String::new();
    let _ = writeln!(
        w,
        "/* Run the pipeline: describe it to the runtime, which plans it (schedule, k, chunk width,\n \
         * streams: the model's choice unless TPACE_* say otherwise), moves the chunks and calls the\n \
         * launchers step by step, then write the arrays to TPACE_DUMP if set (for `tpace run`). */\n\
         static void {}({} *tp_in)\n{{",
        names.run(),
        names.inputs()
    );
    // The user's functions the sweeps call: only the kernels call them now.
    let called = super::device::functions(unit.program);
    if let Some(mine) = called
        .per_pipeline
        .get(unit.index)
        .filter(|m| !m.is_empty())
    {
        let _ = writeln!(
            w,
            "    /* The functions the sweeps call run in the kernels; named here so that the host\n     \
             * compiler sees the program use them. */"
        );
        for f in mine {
            let _ = writeln!(w, "    (void){};", called.functions[*f].name);
        }
    }
    // The functions whose loop nests are the sweeps: kernels run those nests now.
    let mut sweep_functions: Vec<&str> = Vec::new();
    for call in p.body.iter().filter_map(|s| s.call.as_ref()) {
        if !sweep_functions.contains(&call.function.as_str()) {
            sweep_functions.push(&call.function);
        }
    }
    if !sweep_functions.is_empty() {
        let _ = writeln!(
            w,
            "    /* The loop nests of the functions the time loop calls run as the kernels; named here\n     \
             * so that the host compiler sees the program use them. */"
        );
        for f in sweep_functions {
            let _ = writeln!(w, "    (void){f};");
        }
    }
    let n = p.arrays.len();
    let _ = writeln!(
        w,
        "    /* The listed arrays: host memory, element size, and how each moves. */\n    \
         tpace_array arrays[{}];\n    memset(arrays, 0, sizeof arrays);",
        n.max(1)
    );
    for (i, (a, t)) in p.arrays.iter().zip(&plan.transfers).enumerate() {
        let why = match t {
            Transfer::UpDown => "read and written: in and out every block",
            Transfer::Up => "only read: in every block",
            Transfer::LastBlock => "pure temporary: moved in the last block only",
            Transfer::Folded => {
                "the copy's temporary: never on the device, its final values come from the copy's destination"
            }
            Transfer::Unused => "not used by any sweep",
        };
        let _ = writeln!(
            w,
            "    arrays[{i}].name = {name}; arrays[{i}].host = tp_in->tp_host[{i}]; \
             arrays[{i}].elem = sizeof({ty}); arrays[{i}].transfer = {t}; /* {why} */",
            name = c_string(&a.display_name()),
            ty = a.elem.c_name(),
            t = t.c_name(),
        );
    }
    for (i, why) in plan.unread.iter().enumerate() {
        if let Some(why) = why {
            let _ = writeln!(
                w,
                "    arrays[{i}].unread = 1; /* the program never reads it after the pipeline ({}): no download after the last step */",
                comment_safe(why)
            );
        }
    }
    for (i, receivers) in plan.receivers.iter().enumerate() {
        match receivers {
            Some(crate::analysis::Receivers::Root(how)) if mpi => {
                let _ = writeln!(
                    w,
                    "    arrays[{i}].to_root = 1; /* after the pipeline rank 0 alone receives it: {} */",
                    comment_safe(how)
                );
            }
            Some(crate::analysis::Receivers::Every(why)) if mpi => {
                let _ = writeln!(
                    w,
                    "    /* arrays[{i}]: every rank receives it after the pipeline ({}) */",
                    comment_safe(why)
                );
            }
            _ => {}
        }
    }
    if let Some(swap) = plan.swap {
        let _ = writeln!(
            w,
            "    arrays[{d}].swap = 1; /* the copy into it runs as a buffer swap */\n    \
             arrays[{t}].fold_of = {d}; /* ... and its temporary ends equal to it on the copy's box: */\n    \
             arrays[{t}].fold_lo = tp_in->tp_box_lo[{c}]; arrays[{t}].fold_hi = tp_in->tp_box_hi[{c}];",
            d = swap.dst,
            t = swap.tmp,
            c = swap.copy,
        );
    }
    if let Some(f) = fusion {
        let _ = writeln!(
            w,
            "    arrays[{}].fused = 1; /* fused kernels advance it several steps at a time */",
            f.array
        );
    }
    let (fuse_max, fuse_default) = fusion.map_or((1, 1), |f| (f.max_steps, f.default_steps));
    let skew = &plan.skew;
    let _ = writeln!(
        w,
        "    /* The grid and the stencil's reach along the cut axis (the outermost dimension). */\n    \
         tpace_shape shape;\n    memset(&shape, 0, sizeof shape);\n    \
         shape.where = {loc};\n    \
         shape.rank = {rank};\n    \
         shape.dim_lo = tp_in->tp_dim_lo;\n    \
         shape.dim_n = tp_in->tp_dim_n;\n    \
         shape.lo = tp_in->tp_dim_lo[0]; /* first plane of the cut axis */\n    \
         shape.n = tp_in->tp_dim_n[0]; /* planes along the cut axis */\n    \
         shape.plane = 1;\n    \
         for (int d = 1; d < {rank}; d++)\n        \
         shape.plane *= (size_t)tp_in->tp_dim_n[d]; /* elements per plane */\n    \
         shape.reach_lo = {rlo}; /* mm: planes a step reads below */\n    \
         shape.reach_hi = {rhi}; /* mm: planes a step reads above */\n    \
         shape.skew = {skew}; /* mmtb: planes the windows move down per step */\n    \
         shape.below = {below}; /* mmtb: planes below its window a chunk reads at step 0 */\n    \
         shape.above = {above}; /* mmtb: planes above a chunk read before any write */\n    \
         shape.steps = tp_in->tp_steps;\n    \
         shape.default_k = {k}; /* defaults where the model has no plan that fits */\n    \
         shape.default_chunks = {chunks};\n    \
         shape.default_streams = {streams};\n    \
         shape.fuse_max = {fuse_max}; /* most steps one kernel may advance (TPACE_FUSE) */\n    \
         shape.fuse_default = {fuse_default}; /* steps per kernel by default */\n    \
         shape.model = &{model}; /* the performance model that chooses the plan */\n    \
         shape.machines = tpace_machines; /* ... and the bundled profiles it may take for the device */\n    \
         shape.nmachines = tpace_machine_count;{steps}",
        steps = if steps_hook {
            format!(
                "\n    shape.steps_per_kernel = {}; /* the target chooses the steps per kernel */",
                names.steps()
            )
        } else {
            String::new()
        },
        loc = c_string(&p.location),
        rlo = plan.step_reach.minus,
        rhi = plan.step_reach.plus,
        skew = skew.per_step,
        below = skew.below(),
        above = skew.above(),
        k = plan.defaults.k,
        chunks = plan.defaults.chunks,
        streams = plan.defaults.streams,
        model = names.model(),
    );
    if let Some(f) = fusion {
        let bytes: Vec<String> = (0..=MAX_FUSED_STEPS)
            .map(|t| {
                if (2..=f.max_steps).contains(&t) {
                    f.shared_bytes(t).to_string()
                } else {
                    "0".into()
                }
            })
            .collect();
        let _ = writeln!(
            w,
            "    /* Shared memory one block of the fused kernel needs, per step count (0: no such kernel);\n     \
             * the runtime fuses no more steps than the device gives a block room for. */\n    \
             static const long fuse_shared[TPACE_FUSE_MAX + 1] = {{{}}};\n    \
             shape.fuse_shared = fuse_shared;\n    \
             shape.shared_limit = tpace_dev_shared_limit;",
            bytes.join(", ")
        );
    }
    if let Some(r) = &p.rotation {
        let names: Vec<String> = r
            .takes
            .iter()
            .enumerate()
            .filter(|(a, b)| a != *b)
            .map(|(a, b)| format!("{} takes {}'s", p.arrays[a].name, p.arrays[*b].name))
            .collect();
        let list: Vec<String> = r.takes.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(
            w,
            "    /* The loop exchanges pointers at the end of every step ({}): the storage stays,\n     \
             * each step's kernels get the buffers of the storage each pointer names then. */\n    \
             static const int rotate[{}] = {{{}}};\n    \
             shape.rotate = rotate;",
            comment_safe(&names.join(", ")),
            list.len(),
            list.join(", ")
        );
    }
    let mut c = 0;
    for a in &p.arrays {
        for check in &a.checks {
            let _ = writeln!(
                w,
                "    tpace_check_layout(&shape, tp_in->tp_layout_ok[{c}], {});",
                c_string(&check.otherwise)
            );
            c += 1;
        }
    }
    w.push_str(&sweeps(unit, names));
    if let Some(f) = fusion {
        let list = |v: &[i64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let tile: Vec<i64> = f.tile().iter().map(|t| i64::from(*t)).collect();
        let per_sm: Vec<i64> = (0..=f.max_steps)
            .map(|t| {
                if t < 2 {
                    0
                } else {
                    i64::from(f.blocks_per_multiprocessor(t))
                }
            })
            .collect();
        let _ = writeln!(
            w,
            "    /* Sweep {s} fuses steps: blocks of {tile} columns across the other axes; per step count, the\n    \
             \x20* blocks that share a multiprocessor (a launch aims at one wave of them). */\n    \
             static const long tile[{m}] = {{{tile}}}, inner_reach[{m}] = {{{reach}}};\n    \
             static const long blocks_per_sm[{counts}] = {{{per_sm}}};\n    \
             const tpace_fused fused = {{{launch}, {sw}, {array}, {r}, tile, inner_reach, blocks_per_sm, {most}}};",
            s = f.sweep + 1,
            m = rank - 1,
            tile = list(&tile),
            reach = list(&f.inner_reach),
            counts = per_sm.len(),
            per_sm = list(&per_sm),
            most = f.max_steps,
            launch = names.fused_launcher(),
            sw = f.sweep,
            array = f.array,
            r = f.reach_lo + f.reach_hi,
        );
    }
    let nred = p.reductions.len();
    if nred > 0 {
        let _ = writeln!(
            w,
            "    /* The sweeps' reductions: one result per time step each, which the call site combines\n     \
             * into the variable as it replays the time loop. */\n    \
             tpace_reduction reds[{nred}];\n    memset(reds, 0, sizeof reds);"
        );
        for (i, r) in p.reductions.iter().enumerate() {
            let _ = writeln!(
                w,
                "    reds[{i}].name = {}; reds[{i}].elem = sizeof({}); reds[{i}].op = {}; /* sweep {} */",
                c_string(&r.var),
                r.elem.c_name(),
                op_constant(r.op),
                r.sweep + 1
            );
        }
    }
    let _ = writeln!(
        w,
        "    /* On one device, or on several (TPACE_GPUS, MPI ranks), each with its slab. */\n    \
         tpace_run_pipeline(&shape, arrays, {n}, {reds}, {nred}, sweeps, {ns}, {fused}, tp_in);",
        reds = if nred > 0 { "reds" } else { "NULL" },
        ns = p.body.len(),
        fused = if fusion.is_some() { "&fused" } else { "NULL" },
    );
    for (i, r) in p.reductions.iter().enumerate() {
        let _ = writeln!(
            w,
            "    tp_in->{} = ({} *)reds[{i}].partial; /* the call site frees it */",
            names::reduction_field(i),
            r.elem.c_name()
        );
    }
    // With pointers rotated, each name's final values are in the storage it names now.
    let storage = |i: usize| match &p.rotation {
        Some(_) => format!("tp_in->tp_host[tpace_rotated(shape.rotate, {i}, tp_in->tp_steps)]"),
        None => format!("tp_in->tp_host[{i}]"),
    };
    for (i, a) in p.arrays.iter().enumerate() {
        if plan.unread[i].is_some() {
            let _ = writeln!(
                w,
                "    tpace_dump_unread({}, sizeof({}), {rank}, tp_in->tp_dim_lo, tp_in->tp_dim_n); /* not brought back */",
                c_string(&a.display_name()),
                a.elem.c_name()
            );
        } else {
            let _ = writeln!(
                w,
                "    tpace_dump({}, {}, sizeof({}), {rank}, tp_in->tp_dim_lo, tp_in->tp_dim_n);",
                c_string(&a.display_name()),
                storage(i),
                a.elem.c_name()
            );
        }
    }
    w.push_str("}\n\n");
    w
}

/// Text that can stand inside a C comment (no `*/`).
fn comment_safe(text: &str) -> String {
    text.replace("*/", "* /")
}

/// The runtime's `enum tpace_reduce_op` constant.
pub fn op_constant(op: crate::ir::ReduceOp) -> &'static str {
    match op {
        crate::ir::ReduceOp::Sum => "TPACE_RED_SUM",
        crate::ir::ReduceOp::Max => "TPACE_RED_MAX",
        crate::ir::ReduceOp::Min => "TPACE_RED_MIN",
    }
}

/// The table of the step's sweeps.
fn sweeps(unit: Unit<'_>, names: &Names) -> String {
    let p = unit.pipeline;
    let plan = unit.plan;
    let mut w = format!(
        "    /* One time step, sweep by sweep: its launcher, the planes it computes beyond the step's\n     \
         * window (later sweeps read them), how far its window trails (mmtb), and its box. */\n    \
         const tpace_sweep sweeps[{}] = {{\n",
        p.body.len()
    );
    for (s, sweep) in p.body.iter().enumerate() {
        let (line, _) = crate::diag::line_col(&unit.program.source, sweep.span.start);
        let what = format!("sweep {} (line {line})", s + 1);
        let launch = if plan.swap.is_some_and(|x| x.copy == s) {
            "NULL /* the copy runs as a buffer swap */".to_string()
        } else {
            names.launcher(s)
        };
        let extra = plan.sweep_extra[s];
        let reduces = p.reductions.iter().any(|r| r.sweep == s);
        let _ = writeln!(
            w,
            "        {{{}, {launch}, {}, {}, {}, {}, tp_in->tp_box_lo[{s}], tp_in->tp_box_hi[{s}]}},",
            c_string(&what),
            extra.minus,
            extra.plus,
            plan.skew.sweep[s],
            i32::from(reduces),
        );
    }
    w.push_str("    };\n");
    w
}

/// Room for the per-step values, which the call site fills.
fn alloc(unit: Unit<'_>, names: &Names) -> String {
    let p = unit.pipeline;
    let mut w = format!(
        "/* Room for one value per step of each per-step value the sweeps read. */\n\
         static void {}({} *tp_in)\n{{\n    \
         const size_t steps = (size_t)TPACE_MAX(tp_in->tp_steps, 1L);\n",
        names.alloc(),
        names.inputs()
    );
    for (s, sweep) in p.body.iter().enumerate() {
        for (v, field) in names::step_values(s, sweep) {
            let _ = writeln!(
                w,
                "    tp_in->{field} = ({ty} *)malloc(steps * sizeof({ty}));\n    \
                 if (tp_in->{field} == NULL)\n        \
                 tpace_fail(NULL, \"host memory ran out keeping a per-step value\");",
                ty = v.ty
            );
        }
    }
    w.push_str("}\n\n");
    w
}

/// Free the per-step values and the reductions' results.
fn free(unit: Unit<'_>, names: &Names) -> String {
    let p = unit.pipeline;
    let mut w = format!(
        "/* Free what the pipeline handed back to the call site. */\nstatic void {}({} *tp_in)\n{{\n",
        names.free(),
        names.inputs()
    );
    for (s, sweep) in p.body.iter().enumerate() {
        for (_, field) in names::step_values(s, sweep) {
            let _ = writeln!(w, "    free(tp_in->{field});");
        }
    }
    for i in 0..p.reductions.len() {
        let _ = writeln!(w, "    free(tp_in->{});", names::reduction_field(i));
    }
    w.push_str("}\n\n");
    w
}
