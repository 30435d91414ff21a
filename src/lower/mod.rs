//! Lowering: the IR, its facts and the plan become one host program, in C,
//! the same for every target. It is the user's program as written, with
//!
//! * each pipelined time loop replaced by its call site ([`call_site`]): the
//!   loop's inputs evaluated once, a call of the pipeline's run function, and
//!   the host replay of the loop's statements and reductions;
//! * before the function that holds a loop, the loop's inputs struct
//!   ([`inputs`]) and the prototypes the call site needs;
//! * per pipeline, host C to place after the runtime ([`glue`]): the model's
//!   figures, the launcher declarations and the run function, which describes
//!   the pipeline to the runtime's executor.
//!
//! A target (`back/*`) adds only its device functions and, for each launcher
//! the glue declares, the kernel and its launch. Names come from [`names`].

pub mod call_site;
pub mod declarations;
pub mod device;
pub mod glue;
pub mod guard;
pub mod inputs;
pub mod names;
pub mod reference;

use crate::model::Profile;
use crate::plan::{Compiled, Unit};
use crate::text::{indent_at, indent_rest, splice};
pub use names::Names;

/// What the target can do, as far as the host program cares.
#[derive(Debug, Clone, Copy)]
pub struct Options<'p> {
    /// Whether the target prints fused kernels (one kernel advancing several steps).
    pub fuses: bool,
    /// The machine the default plans are chosen for.
    pub profile: &'p Profile,
    /// Whether the target chooses the steps per kernel itself: it defines
    /// [`Names::steps`] for every pipeline, which the run function hands the
    /// runtime (OpenCL: its evolution-vector model and `TPACE_T`).
    pub steps_hook: bool,
    /// Whether the program runs as several MPI processes (`--mpi`).
    pub mpi: bool,
}

/// The host program and, per pipeline, what a target needs to complete it.
#[derive(Debug, Clone)]
pub struct Lowered<'a> {
    /// The program, with its plans.
    pub compiled: &'a Compiled,
    /// The user's program with each time loop replaced by its call site (C).
    pub program: String,
    /// Per pipeline, in source order.
    pub pipelines: Vec<LoweredPipeline<'a>>,
    /// The machine profile the default plans are for.
    pub machine: String,
    /// Whether the pipelines print fused kernels.
    pub fuses: bool,
    /// Whether the program runs as several MPI processes (`--mpi`).
    pub mpi: bool,
}

/// One pipeline after lowering.
#[derive(Debug, Clone)]
pub struct LoweredPipeline<'a> {
    /// The pipeline with its facts and plan.
    pub unit: Unit<'a>,
    /// The names of what tpace adds for it.
    pub names: Names,
    /// Its inputs struct (C and C++), for a target's device file.
    pub inputs: String,
    /// Its host C after the runtime.
    pub glue: String,
    /// Whether the target must define a fused launcher for it.
    pub fused: bool,
    /// The fused kernel the target prints, if any: the plan's fusion within the
    /// machine profile's shared memory per block ([`crate::plan::Fusion::within`]).
    pub fusion: Option<crate::plan::Fusion>,
    /// For a target that chooses its work groups and steps per kernel when the
    /// pipeline starts ([`Options::steps_hook`]): the evolution-vector model's
    /// figures for this pipeline on the machine profile, as the first fields of
    /// the C initializer of the runtime's `tpace_cl_config`, one a line
    /// (`model::opencl::c_config`).
    pub work_groups: Option<String>,
}

impl<'a> Lowered<'a> {
    /// The host runtime and every pipeline's glue, with the user's macros that
    /// name things in them set aside: what follows the user's program in the
    /// host file. `target` is the target's device part when it shares the
    /// host file (empty when it has a file of its own), `hook_linkage` the
    /// linkage of hooks and launchers (`None`: static, one file).
    pub fn host_part(&self, target: &str, hook_linkage: Option<&str>) -> String {
        let mut body = String::new();
        if self.mpi {
            body.push_str(
                "/* Translated with --mpi: the runtime's MPI parts are on (build with mpicc). */\n#define TPACE_MPI 1\n",
            );
        }
        if let Some(linkage) = hook_linkage {
            body.push_str(&format!(
                "/* The device functions and launchers are in the target's own file. */\n#define TPACE_HOOK {linkage}\n"
            ));
        }
        body.push_str(&crate::runtime::host());
        body.push('\n');
        body.push_str(target);
        body.push('\n');
        body.push_str(&crate::model::cmodel::machines_table());
        for p in &self.pipelines {
            body.push('\n');
            body.push_str(&p.glue);
        }
        let mut set_aside = self.compiled.program.user_macros.clone();
        if self.mpi && redirects_fopen(&self.compiled.program) {
            set_aside.push("fopen".into()); /* tpace's own, routed to rank 0 */
        }
        guard::wrap(&set_aside, &body)
    }

    /// Whether any pipeline has a fused launcher.
    pub fn any_fused(&self) -> bool {
        self.pipelines.iter().any(|p| p.fused)
    }
}

/// Lower a compiled program for a target that can do what `options` says.
pub fn lower<'a>(compiled: &'a Compiled, options: &Options<'_>) -> Result<Lowered<'a>, String> {
    let mut pipelines = Vec::new();
    for unit in compiled.units() {
        let names = Names::new(unit.index);
        // The fused kernel is C++ template code printed from the sweep as written: a
        // sweep that names a variable with a C++ keyword runs as plain kernels, which
        // rename it.
        let fuses = options.fuses
            && unit.plan.fusion.as_ref().is_none_or(|f| {
                let sweep = &unit.pipeline.body[f.sweep];
                names::cxx_keyword_names(unit.pipeline, sweep, &unit.program.source).is_empty()
            });
        // ... and only for the step counts whose shared memory the machine has.
        // A target that chooses its steps per kernel itself has kernels of up to
        // plan::CHOSEN_MAX_STEPS steps.
        let fusion = fuses
            .then(|| crate::model::workload::fusion_on(unit, options.profile))
            .flatten()
            .and_then(|f| {
                if options.steps_hook {
                    f.capped(crate::plan::CHOSEN_MAX_STEPS)
                } else {
                    Some(f)
                }
            });
        let model = crate::model::cmodel::program_model(
            unit,
            options.profile,
            fusion.as_ref(),
            &names.model(),
        )?;
        // The kernels of a target that chooses its steps advance at most the fusion's steps.
        let work_groups = if options.steps_hook {
            let max_t = fusion.as_ref().map_or(1, |f| u64::from(f.max_steps));
            Some(crate::model::opencl::c_config(
                unit,
                options.profile,
                max_t,
            )?)
        } else {
            None
        };
        pipelines.push(LoweredPipeline {
            unit,
            inputs: inputs::definition(unit, &names),
            work_groups,
            glue: glue::glue(
                unit,
                &names,
                &model,
                fusion.as_ref(),
                options.steps_hook,
                options.mpi,
            ),
            names,
            fused: fusion.is_some(),
            fusion,
        });
    }
    if options.mpi && compiled.program.main.is_none() {
        return Err(format!(
            "--mpi: {} has no `main`, where MPI must start; translate the file that defines it",
            compiled.program.path
        ));
    }
    Ok(Lowered {
        compiled,
        program: host_program(compiled, &pipelines, options.mpi),
        pipelines,
        machine: options.profile.name.clone(),
        fuses: options.fuses,
        mpi: options.mpi,
    })
}

/// Whether the program opens files (with `--mpi`, rank 0 alone writes them).
fn redirects_fopen(program: &crate::ir::Program) -> bool {
    crate::text::mentions(&program.source, "fopen")
}

/// The user's program with every pipeline lowered.
fn host_program(compiled: &Compiled, pipelines: &[LoweredPipeline<'_>], mpi: bool) -> String {
    let program = &compiled.program;
    let src = &program.source;
    let mut edits = Vec::new();
    if let Some(init) = &program.init {
        edits.push((
            init.clone(),
            "/* tpace init: device buffers are set up where each pipelined loop starts */"
                .to_string(),
        ));
    }
    let any_reduction = program.pipelines.iter().any(|p| !p.reductions.is_empty());
    let first_function = pipelines
        .iter()
        .map(|p| p.unit.pipeline.function.start)
        .min()
        .unwrap_or(0);
    let mut shared = call_site::shared_prologue(any_reduction);
    let mut first_function = first_function;
    if let (true, Some(main)) = (mpi, &program.main) {
        // MPI starts where the program does.
        first_function = first_function.min(main.span.start);
        shared.push_str(&call_site::mpi_prologue(redirects_fopen(program)));
        let args = main
            .args
            .as_ref()
            .map_or("(int *)0, (char ***)0".to_string(), |(c, v)| {
                format!("&{c}, &{v}")
            });
        edits.push((
            main.body..main.body,
            format!(
                "\n    tpace_mpi_start({args}); /* tpace: MPI starts here, and ends when the program does (--mpi) */"
            ),
        ));
    }
    if !shared.is_empty() {
        edits.push((first_function..first_function, format!("{shared}\n")));
    }
    // A function a sweep calls runs on the device too: OpenACC must be told before
    // its first declaration (the #ifdef keeps C compilers without OpenACC quiet).
    for f in &device::functions(program).functions {
        let at = f.first.start;
        let line_before = src[..at].trim_end().rsplit('\n').next().unwrap_or("");
        if line_before.contains("acc routine") {
            continue;
        }
        let newline = if src[..at].ends_with('\n') || at == 0 {
            ""
        } else {
            "\n"
        };
        edits.push((
            at..at,
            format!(
                "{newline}#ifdef _OPENACC\n#pragma acc routine seq /* tpace: `{}` is called in a sweep, so it runs on the device too */\n#endif\n",
                f.name
            ),
        ));
    }
    // The directive lines of the sweep functions become comments: kernels run those nests.
    for f in &program.sweep_functions {
        for line in &f.directives {
            let directive = src[line.clone()]
                .trim_start_matches('#')
                .replace("*/", "* /");
            edits.push((
                line.clone(),
                format!(
                    "/* {directive} (a sweep of the pipelined time loop that calls `{}`) */",
                    f.name
                ),
            ));
        }
    }
    for lp in pipelines {
        let p = lp.unit.pipeline;
        // The directive lines become comments: they say what the block below was.
        for line in std::iter::once(&p.pragma).chain(&p.directives) {
            let directive = src[line.clone()]
                .trim_start_matches('#')
                .replace("*/", "* /");
            edits.push((line.clone(), format!("/* {directive} */")));
        }
        let indent = indent_at(src, p.stmt.start);
        edits.push((
            p.stmt.clone(),
            indent_rest(&call_site::block(lp.unit, &lp.names), &indent),
        ));
        let at = p.function.start;
        edits.push((
            at..at,
            format!("{}\n", call_site::prologue(lp.unit, &lp.names)),
        ));
    }
    splice(src, edits)
}
