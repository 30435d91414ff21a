//! Back ends: one writer per target, each in its own folder, each printing
//! the kernels and device functions of the lowered host program for its
//! target and assembling the output files. Writers only print: every decision
//! is made in `analysis`, `plan` and `lower`; they share only the
//! target-neutral kernel pieces of [`kernel`] and never call each other.
//!
//! A new target is a new folder here with a `write` function, the device
//! functions of `runtime/tpace.h` in a runtime file of its own, and a line in
//! [`Target`].

pub mod cuda;
pub mod kernel;
pub mod openacc;
pub mod opencl;

use crate::lower::Lowered;
use std::path::{Path, PathBuf};

/// Output languages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// OpenACC C with explicit device buffers (the default): one `.c` file.
    Openacc,
    /// CUDA: kernels and their launchers in a `.cu` file, the host program in
    /// C beside it (`.host.c`).
    Cuda,
    /// OpenCL: one `.c` file, the kernels in it as OpenCL C source; work groups
    /// and on-chip temporal blocking from the evolution-vector model.
    Opencl,
}

impl Target {
    /// Whether the target's kernels can advance several steps each (two-level
    /// blocking, `plan::Fusion`): CUDA's and OpenCL's can, OpenACC's advance one step.
    pub fn fuses_steps(self) -> bool {
        matches!(self, Target::Cuda | Target::Opencl)
    }

    /// Whether the target chooses the steps per kernel itself when a pipeline
    /// starts (OpenCL: the evolution-vector model, `TPACE_T`) rather than the
    /// performance model and `TPACE_FUSE`.
    pub fn chooses_steps(self) -> bool {
        self == Target::Opencl
    }

    /// Lower-case name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Target::Openacc => "openacc",
            Target::Cuda => "cuda",
            Target::Opencl => "opencl",
        }
    }

    /// The extension of the main output file.
    pub fn extension(self) -> &'static str {
        match self {
            Target::Openacc => "c",
            Target::Cuda => "cu",
            Target::Opencl => "c",
        }
    }
}

/// What a writer prints: the main file and, for a target that splits the
/// program, the host program's file beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The file `translate -o` names (OpenACC: the whole program; CUDA: the kernels).
    pub main: String,
    /// The host program in C, when it is a file of its own ([`host_path`] names it).
    pub host: Option<String>,
}

/// Print the translated program for `target`.
pub fn write(target: Target, lowered: &Lowered<'_>) -> Output {
    match target {
        Target::Openacc => openacc::write(lowered),
        Target::Cuda => cuda::write(lowered),
        Target::Opencl => opencl::write(lowered),
    }
}

/// The path of the host program written beside a main output file:
/// `prog.cu` -> `prog.host.c`.
pub fn host_path(main: &Path) -> PathBuf {
    main.with_extension("host.c")
}

/// The command that builds a translation whose main file is `main` (`mpi`:
/// one made with `--mpi`, built through Open MPI's compiler wrappers).
pub fn build_line(target: Target, main: &Path, mpi: bool) -> String {
    let shown = main.display().to_string();
    match target {
        Target::Openacc => openacc::build_line(&shown, mpi),
        Target::Cuda => cuda::build_line(&shown, &host_path(main).display().to_string(), mpi),
        Target::Opencl => opencl::build_line(&shown, mpi),
    }
}
