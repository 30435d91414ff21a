//! Back ends: print a target program from the IR, its facts and the plan.
//! Back ends only print; every decision is made in `analysis` and `plan`.
//!
//! Each target lives in its own folder with the runtime it embeds; the
//! pieces every target shares (source splicing, the array dump, naming) are
//! in [`common`].

pub mod common;
pub mod cuda;
pub mod openacc;
pub mod reduce;
pub mod reference;

use crate::analysis::Facts;
use crate::ir::Program;
use crate::plan::Plan;

/// Output languages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// OpenACC C with explicit device buffers (the default).
    Openacc,
    /// CUDA C++ (one `.cu` file with the runtime embedded).
    Cuda,
}

impl Target {
    /// Whether the target's kernels can advance several steps each (two-level
    /// blocking, `plan::Fusion`): CUDA's can, OpenACC's advance one step.
    pub fn fuses_steps(self) -> bool {
        self == Target::Cuda
    }

    /// Lower-case name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Target::Openacc => "openacc",
            Target::Cuda => "cuda",
        }
    }
}

/// Print the translated program for `target`.
/// `model` is the machine it is planned for (the runtime's default plan).
pub fn emit(
    target: Target,
    program: &Program,
    facts: &Facts,
    plan: &Plan,
    model: &common::PlannedFor,
) -> String {
    match target {
        Target::Openacc => openacc::emit(program, facts, plan, model),
        Target::Cuda => cuda::emit(program, facts, plan, model),
    }
}
