//! OpenCL writer: one C file, built with `cc PROG.c -lOpenCL -lm` against any
//! OpenCL 1.2 implementation through the ICD loader. In order: the OpenCL
//! header (the user's macros set aside while it is read), the user's program
//! with each pipelined loop lowered, the runtime with this target's device
//! functions (`runtime/opencl.h`: buffers behind private addresses, command
//! queues, events), each pipeline's glue; then per pipeline its work-group
//! configuration (the evolution-vector model's figures, which lowering
//! computes) and
//! one launcher per sweep (arguments, enqueue on the chunk's queue), the tiled
//! kernel's launcher where the plan fuses steps (`tiled.rs`); last the kernels
//! as one OpenCL C source string, whose user parts the host's preprocessor
//! expands (`source.rs`), and the kernel table.

mod kernels;
mod source;
mod tiled;

use crate::back::Output;
use crate::back::kernel::{dev_name, reductions_of, sweep_arrays, sweep_summary};
use crate::lower::{Lowered, LoweredPipeline, glue};
use crate::plan::MAX_FUSED_STEPS;
use std::fmt::Write;

/// The OpenCL device functions of the runtime.
pub use crate::runtime::OPENCL as RUNTIME;

/// How to build the output (printed in its first comment and by `translate`);
/// `mpi`: a translation made with `--mpi`, built with Open MPI's wrapper.
pub fn build_line(file: &str, mpi: bool) -> String {
    let program = crate::text::shell_word(file.strip_suffix(".c").unwrap_or("PROGRAM"));
    let file = crate::text::shell_word(file);
    if mpi {
        format!("mpicc -O2 {file} -o {program} -lOpenCL -lm   (then mpirun -np N {program})")
    } else {
        format!("cc -O2 {file} -o {program} -lOpenCL -lm")
    }
}

/// The kernels of one pipeline in the program's kernel table.
struct Table {
    /// Per launched sweep, its kernel's index.
    sweeps: Vec<(usize, usize)>,
    /// The tiled kernel's index, where the pipeline has one.
    tiled: Option<usize>,
    /// First and one past the last index.
    range: (usize, usize),
}

/// Print the OpenCL program.
pub fn write(lowered: &Lowered<'_>) -> Output {
    let program = &lowered.compiled.program;
    // The kernel table: every pipeline's kernels, in order.
    let mut names: Vec<String> = Vec::new();
    let tables: Vec<Table> = lowered
        .pipelines
        .iter()
        .map(|lp| {
            let lo = names.len();
            let sweeps = glue::launched(lp.unit)
                .map(|s| {
                    names.push(lp.names.kernel(s));
                    (s, names.len() - 1)
                })
                .collect();
            // The tiled kernels, one for each number of steps, in order (tiled::launcher picks).
            let tiled = lp.fusion.as_ref().map(|f| {
                let first = names.len();
                names.extend((2..=f.max_steps).map(|t| tiled::name(lp, f, t)));
                first
            });
            Table {
                sweeps,
                tiled,
                range: (lo, names.len()),
            }
        })
        .collect();
    let mut after = String::new();
    let mut kernels_text = kernels::prelude(
        kernels::reduces_doubles(lowered.pipelines.iter().map(|lp| lp.unit)),
        MAX_FUSED_STEPS,
    );
    // The functions of the file that sweeps call run in the kernels too, with the
    // file-scope constants they read (in OpenCL's constant address space): each once,
    // before the first pipeline whose kernels call it, prototypes first (a function
    // may call one defined after it).
    let called = crate::lower::device::functions(program);
    let mut emitted = vec![false; called.functions.len()];
    let mut constants_done = false;
    for (i, (lp, table)) in lowered.pipelines.iter().zip(&tables).enumerate() {
        let config = lp.names.config();
        let _ = writeln!(
            after,
            "/* ==== tpace: the kernels of pipeline {}, the time loop at {} ==== */",
            lp.unit.index + 1,
            lp.unit.pipeline.location
        );
        after.push_str(&configuration(lowered, lp, table, &config));
        for (s, k) in &table.sweeps {
            after.push_str(&launcher(lp, *s, *k, &config));
        }
        if let (Some(f), Some(k)) = (&lp.fusion, table.tiled) {
            after.push_str(&tiled::launcher(lp, f, k, &config));
        }
        let wanted: Vec<usize> = called.per_pipeline[i]
            .iter()
            .copied()
            .filter(|f| !emitted[*f])
            .collect();
        let mut functions = String::new();
        if !wanted.is_empty() {
            functions.push_str("/* The functions of your file that the sweeps call. */\n");
            if !constants_done {
                for c in &called.constants {
                    let _ = writeln!(
                        functions,
                        "{}",
                        source::host(&source::constant(&program.source[c.clone()]))
                    );
                }
                constants_done = true;
            }
            for f in &wanted {
                let text = &program.source[called.functions[*f].definition.clone()];
                let _ = writeln!(functions, "{}", source::host(&source::prototype(text)));
            }
            for f in &wanted {
                let text = &program.source[called.functions[*f].definition.clone()];
                let _ = writeln!(functions, "{}", source::host(&kernels::c_math(text)));
                emitted[*f] = true;
            }
        }
        // The kernels see the user's types that they name (their macros the host expands).
        let mut pipeline_kernels = String::new();
        for (s, _) in &table.sweeps {
            pipeline_kernels.push_str(&kernels::kernel(lp, *s));
        }
        if let (Some(f), Some(_)) = (&lp.fusion, table.tiled) {
            pipeline_kernels.push_str(&tiled::kernels(lp, f));
        }
        let _ = write!(
            kernels_text,
            "\n/* ---- pipeline {}, the time loop at {} ---- */\n{}{}{}",
            lp.unit.index + 1,
            lp.unit.pipeline.location,
            source::declarations(program, &format!("{functions}{pipeline_kernels}")),
            functions,
            pipeline_kernels
        );
    }
    let table_text: Vec<String> = names
        .iter()
        .map(|n| format!("    {},", crate::text::c_string(n)))
        .collect();
    let _ = write!(
        after,
        "\n/* ==== tpace: the kernels, in OpenCL C ==== *\n \
         * The OpenCL compiler does not see this file's macros: every piece of your code in a kernel\n \
         * (a sweep's body, a type it names) is written TPACE_CL_XSTR(...), so that this file's own\n \
         * preprocessor expands your macros in it, function-like ones too, with the values this build\n \
         * gives them (-D flags included), and turns the result into part of the string. */\n\
         {xstr}static const char tpace_cl_program[] =\n{literal};\n\n\
         static const char *tpace_cl_source(void)\n{{\n    return tpace_cl_program;\n}}\n\n\
         /* The kernels the launchers name by index. */\n\
         static const char *const tpace_cl_names[] = {{\n{table}\n}};\n\n\
         static int tpace_cl_kernel_count(void)\n{{\n    return (int)(sizeof tpace_cl_names / sizeof tpace_cl_names[0]);\n}}\n\n\
         static const char *tpace_cl_kernel_name(int i)\n{{\n    return tpace_cl_names[i];\n}}\n",
        xstr = source::XSTR_MACROS,
        literal = source::c_literal(&kernels_text).trim_end(),
        table = table_text.join("\n"),
    );
    let text = format!(
        "/* Generated by tpace {version} from {path} for OpenCL (planned for machine profile {machine}).\n \
         * Do not edit: edit {path} and translate again. Build: {build}\n \
         * Your program comes first, as you wrote it, except that each pipelined time loop is now a\n \
         * call into tpace's runtime; after it come the runtime, each pipeline's set-up, its launchers\n \
         * and, last, the kernels as OpenCL C source, which the program builds for the device it runs\n \
         * on (TPACE_CL_PLATFORM, TPACE_CL_DEVICE; work groups and steps per kernel: TPACE_WG, TPACE_T). */\n\
         {api}\
         {user}\n\
         /* ==== tpace: what the translation adds to the program above ==== */\n\
         {host}\n{after}",
        version = env!("CARGO_PKG_VERSION"),
        path = program.path,
        machine = lowered.machine,
        build = build_line("FILE.c", lowered.mpi),
        api = api_header(&program.user_macros),
        user = lowered.program,
        host = lowered.host_part(RUNTIME, None),
    );
    Output {
        main: text,
        host: None,
    }
}

/// The OpenCL API and the C headers the runtime part needs, read with every
/// macro the program defines set aside (an OpenCL header's own names, `lo`
/// and `hi` among them, must not meet a user's macro).
fn api_header(user_macros: &[String]) -> String {
    let mut w = String::from(
        "/* ==== tpace: the OpenCL API (OpenCL 1.2, through the ICD loader) ==== */\n",
    );
    for m in user_macros {
        let _ = writeln!(w, "#pragma push_macro(\"{m}\")\n#undef {m}");
    }
    w.push_str(
        "#ifndef CL_TARGET_OPENCL_VERSION\n#define CL_TARGET_OPENCL_VERSION 120\n#endif\n\
         #include <CL/cl.h>\n#include <ctype.h>\n#include <stdint.h>\n",
    );
    for m in user_macros.iter().rev() {
        let _ = writeln!(w, "#pragma pop_macro(\"{m}\")");
    }
    w
}

/// The pipeline's work-group configuration and the function that chooses the
/// work group and T when it starts: the model's figures (computed in
/// lowering), the pipeline's kernels in the program's table, and the fields
/// chosen at run time.
fn configuration(
    lowered: &Lowered<'_>,
    lp: &LoweredPipeline<'_>,
    table: &Table,
    name: &str,
) -> String {
    let figures = lp
        .work_groups
        .as_deref()
        .expect("lowering computes the work-group figures for a target that chooses its steps");
    format!(
        "/* The evolution-vector model's figures for this pipeline on machine profile {machine}: when the\n \
         * pipeline starts, it chooses the work-group shape and the steps per tiled kernel (T) for\n \
         * the actual extents and device (`tpace plan --target opencl` shows the same search);\n \
         * TPACE_WG and TPACE_T override. */\n\
         static tpace_cl_config {name} = {{\n{figures}    \
         {lo}, {hi}, /* the pipeline's kernels in the program's table */\n    \
         {{0, 0, 0}}, 0, /* chosen when the pipeline starts */\n}};\n\n\
         TPACE_HOOK int {steps}(const tpace_shape *s)\n{{\n    return tpace_cl_choose(s, &{name});\n}}\n",
        machine = lowered.machine.replace("*/", "* /"),
        lo = table.range.0,
        hi = table.range.1,
        steps = lp.names.steps(),
    )
}

/// Sweep `s`'s launcher: its kernel over the part of its box in the step's
/// window, on the chunk's queue, in work groups of the pipeline's shape.
fn launcher(lp: &LoweredPipeline<'_>, s: usize, k: usize, config: &str) -> String {
    let unit = lp.unit;
    let p = unit.pipeline;
    let sweep = &p.body[s];
    let rank = p.grid.rank();
    let (used, _) = sweep_arrays(unit, s);
    let (line, _) = crate::diag::line_col(&unit.program.source, sweep.span.start);
    let mut w = format!(
        "\n/* {}: its kernel on the part of its box in this step's window, on the chunk's queue. */\n\
         TPACE_HOOK void {}(struct tpace_rt *tp, const tpace_launch *tp_l)\n{{\n    \
         const tpace_cl_config *tp_c = &{config};\n    \
         const int tp_k = {k}; /* {kernel} */\n    \
         cl_uint tp_arg = 0;\n",
        sweep_summary(unit, s),
        lp.names.launcher(s),
        kernel = lp.names.kernel(s),
    );
    let values = kernels::by_value(lp, s);
    if !values.is_empty() {
        let _ = writeln!(
            w,
            "    const {0} *tp_in = (const {0} *)tp_l->tp_in;",
            lp.names.inputs()
        );
    }
    for a in &used {
        let arr = &p.arrays[*a];
        let _ = writeln!(
            w,
            "    tpace_cl_arg_array(tp, tp_k, &tp_arg, tp_l->tp_buf[{a}], sizeof({}), NULL); /* {} */",
            arr.elem.c_name(),
            dev_name(&arr.ident())
        );
    }
    let _ = writeln!(
        w,
        "    tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_base);"
    );
    if crate::back::kernel::needs_origin(sweep) {
        let _ = writeln!(
            w,
            "    tpace_cl_arg_long(tp, tp_k, &tp_arg, {}); /* the program's index of the buffer's first element */",
            crate::back::kernel::origin(rank, &lp.names.inputs())
        );
    }
    for pos in 1..rank {
        let _ = writeln!(
            w,
            "    tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_dim_lo[{pos}]);\n    \
             tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_dim_n[{pos}]);"
        );
    }
    for pos in 0..rank {
        let _ = writeln!(
            w,
            "    tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_lo[{pos}]);\n    \
             tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_hi[{pos}]);"
        );
    }
    for (t, _, value) in &values {
        let _ = writeln!(
            w,
            "    {{\n        const {h} tp_v = ({h})({value});\n        tpace_cl_arg(tp, tp_k, &tp_arg, sizeof tp_v, &tp_v);\n    }}",
            h = t.host
        );
    }
    let reductions = reductions_of(unit, s);
    for (i, r) in &reductions {
        let ty = r.elem.c_name();
        let _ = writeln!(
            w,
            "    /* The {op} into {var}: this step's slot, and room for the work group's terms. */\n    \
             tpace_cl_arg_array(tp, tp_k, &tp_arg, ({ty} *)tp_l->tp_reduced[{i}] + tp_l->tp_step, sizeof({ty}), NULL);\n    \
             tpace_cl_arg_local(tp, tp_k, &tp_arg, tp_c->wg[0] * tp_c->wg[1] * tp_c->wg[2] * sizeof({ty}));",
            op = r.op.word(),
            var = r.var,
        );
    }
    if !reductions.is_empty() {
        let _ = writeln!(
            w,
            "    tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_count_lo);\n    \
             tpace_cl_arg_long(tp, tp_k, &tp_arg, tp_l->tp_count_hi);"
        );
    }
    let _ = writeln!(
        w,
        "    /* Work items: the box, x (innermost) first, in whole work groups. */\n    \
         size_t tp_global[{rank}], tp_local[{rank}];\n    \
         for (int tp_d = 0; tp_d < {rank}; tp_d++) {{\n        \
         tp_local[tp_d] = tp_c->wg[tp_d];\n        \
         tp_global[tp_d] = tpace_cl_cover(tp_l->tp_hi[{last} - tp_d] - tp_l->tp_lo[{last} - tp_d], tp_local[tp_d]);\n    }}\n    \
         tpace_cl_launch(tp, tp_k, tp_l->tp_q, {rank}, tp_global, tp_local, \"{kernel} (sweep at line {line})\");\n}}",
        last = rank - 1,
        kernel = lp.names.kernel(s),
    );
    w
}
