//! The runtime the translator ships: C that is the same for every program,
//! written once and tested once (tests/examples.rs breaks it on purpose),
//! copied into the generated files rather than generated.
//!
//! * [`TYPES`] (`tpace.h`): what host program and device code both know, C and C++.
//! * [`BASE`] (`base.h`): the clock and the array dump (the reference build has only this).
//! * [`MODEL`] (`model.h`): the performance model's predictor and search, in C.
//! * [`SCHEDULE`] (`schedule.h`): `TPACE_*` settings, the plan, chunk arithmetic, the
//!   schedule executor and its loop over chunks, steps and sweeps, the trace.
//! * [`SCALE`] (`scale.h`): one pipeline over several devices and MPI ranks (slabs,
//!   ghost planes exchanged once per block), and the entry the glue calls.
//!
//! Each target's device functions (the `tpace_dev_*` hooks `tpace.h` declares)
//! are one header here too: [`OPENACC`], [`CUDA`] with the CPU emulation of
//! CUDA [`CUDA_EMULATION`], [`OPENCL`]. The writer in `src/back/<target>/` prints the rest.

/// Types, hook and launcher declarations (C and C++).
pub const TYPES: &str = include_str!("tpace.h");

/// The clock and the array dump.
pub const BASE: &str = include_str!("base.h");

/// The performance model in C.
pub const MODEL: &str = include_str!("model.h");

/// The schedule executor.
pub const SCHEDULE: &str = include_str!("schedule.h");

/// Several devices and MPI ranks: slabs, ghost planes, exchanges, the pipeline's entry.
pub const SCALE: &str = include_str!("scale.h");

/// The OpenACC target's device functions (explicit device buffers, async queues).
pub const OPENACC: &str = include_str!("openacc.h");

/// The CUDA target's device functions (streams, events, checked calls), C++.
pub const CUDA: &str = include_str!("cuda.cuh");

/// The CPU emulation of the CUDA runtime API, compiled before [`CUDA`] when the
/// compiler is not nvcc.
pub const CUDA_EMULATION: &str = include_str!("cuda_emulation.cuh");

/// The OpenCL target's device functions (buffers behind private addresses,
/// command queues, events, checked calls, the work-group choice), C.
pub const OPENCL: &str = include_str!("opencl.h");

/// The host side of the runtime, in the order it is compiled.
pub fn host() -> String {
    format!("{TYPES}\n{BASE}\n{MODEL}\n{SCHEDULE}\n{SCALE}")
}

/// Most dimensions of a grid the runtime handles (`TPACE_MAX_RANK`).
pub const MAX_RANK: usize = 8;

#[cfg(test)]
mod tests {
    #[test]
    fn the_runtime_and_the_translator_agree_on_the_largest_rank() {
        let define = format!("#define TPACE_MAX_RANK {}\n", super::MAX_RANK);
        assert_eq!(super::TYPES.matches(&define).count(), 1, "{define}");
    }

    #[test]
    fn the_host_runtime_compiles_as_c_and_the_types_as_c_plus_plus() {
        let dir = tempfile::tempdir().unwrap();
        // Hooks declared static need definitions: stubs for a syntax check.
        let stubs =
            "static void *tpace_dev_alloc(tpace_rt *r, size_t b) { (void)r; return malloc(b); }\n";
        let c = dir.path().join("host.c");
        std::fs::write(&c, format!("{}\n{stubs}", super::host())).unwrap();
        let out = std::process::Command::new("gcc")
            .args(["-std=gnu11", "-fsyntax-only"])
            .arg(&c)
            .output();
        if let Ok(out) = out {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let cpp = dir.path().join("types.cpp");
        std::fs::write(&cpp, super::TYPES).unwrap();
        if let Ok(out) = std::process::Command::new("g++")
            .args(["-fsyntax-only", "-x", "c++"])
            .arg(&cpp)
            .output()
        {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
