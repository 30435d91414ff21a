//! A C header never reaches C++: the CUDA kernel file (`.cu`, compiled as C++
//! by nvcc, or by g++ for the CPU emulation) takes from the program's own
//! headers only the macros and types its kernels use, with the conditional
//! groups around them, so a header holding C that C++ refuses
//! (tests/fixtures/ordinary/include/c_only.h) is fine on every target, and a
//! `-D` given when the program is built reaches the kernels as it reaches the
//! host program. (Every program, this one too, is also run over the whole
//! parameter sweep on each target and compiled with nvcc by the targets' own
//! tests.)

mod common;

use common::*;
use std::path::{Path, PathBuf};
use tpace::back::Target;
use tpace::driver::dump::first_difference;
use tpace::driver::run::{Flavour, Params, Toolchain};

fn program() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ordinary/heat2d_c_header.c")
}

#[test]
fn the_kernel_file_takes_only_what_its_kernels_use_of_a_c_header() {
    let out = translated_example(&program().display().to_string(), Target::Cuda);
    let cu = &out.main;
    let host = out.host.as_deref().expect("a host program");
    // The host program is the user's, header and all.
    assert!(host.contains("#include \"c_only.h\""));
    // The kernel file: the header is not included, its C code is not there...
    assert!(!cu.contains("c_only.h\""), "the .cu includes the header");
    for c_only in [
        "hash_bytes",
        "grid_alloc",
        "default_options",
        "struct options",
        "_Generic",
        "#error",
    ] {
        assert!(!cu.contains(c_only), "`{c_only}` reached the .cu file");
    }
    // ... only the macros and the type the kernels use, in their conditional groups.
    let wanted = "#ifndef C_ONLY_H\n#define C_ONLY_H\n#include <stdint.h>\n#include <stdlib.h>\n\
                  #ifdef HEAT_DOUBLE\n#define REAL double\n#else\n#define REAL float\n#endif\n\
                  #ifndef ALPHA\n#define ALPHA 0.125\n#endif\n\
                  #define COEF(x) ((REAL)(x))\n#define DIFFUSION COEF(ALPHA)\n\
                  typedef REAL real_t;\n#endif\n";
    assert!(cu.contains(wanted), "not in the .cu file:\n{wanted}");
    // The extents are the host's business (the kernels take strides at launch).
    assert!(!cu.contains("#define NX"));
}

/// Build the program with `-DALPHA=0.25` (translated without it): the
/// translation's kernels must use 0.25 as the sequential program does, bit for
/// bit; the sequential program's answer differs from the default's, so a
/// kernel that kept the header's 0.125 would be caught.
fn check_build_time_define(target: Target, flavour: Flavour) {
    let subset = Subset {
        keep: &|steps, i| steps == 13 && i % 4 == 0,
        defines: &|_| vec!["ALPHA=0.25".into()],
    };
    let env = [("TPACE_EMU_SEED".to_string(), "3".to_string())];
    let runs = check_program_with(
        &Toolchain::detect(),
        &program(),
        target,
        flavour,
        &env,
        subset,
    );
    assert!(runs > 5, "{runs} runs");
}

#[test]
fn a_define_given_when_the_program_is_built_reaches_the_cuda_kernels() {
    check_build_time_define(Target::Cuda, Flavour::CudaEmulation);
}

#[test]
fn a_define_given_when_the_program_is_built_reaches_the_opencl_kernels() {
    check_build_time_define(Target::Opencl, Flavour::Opencl);
}

#[test]
fn the_define_changes_the_sequential_answer() {
    let compiled = compile(&program());
    let dir = tempfile::tempdir().expect("scratch folder");
    let flags = fixture_flags(&program());
    let run = |name: &str, defines: &[&str]| {
        let mut tc = flags.toolchain(&Toolchain::detect());
        tc.defines.extend(defines.iter().map(|d| d.to_string()));
        let built = build_ok(
            &tc,
            &reference_of(&compiled),
            dir.path(),
            name,
            Flavour::Reference,
        );
        run_ok(
            &built.binary,
            13,
            &Params::default(),
            &dir.path().join(format!("{name}.dump")),
        )
    };
    let default = run("default", &[]);
    let quarter = run("quarter", &["ALPHA=0.25"]);
    assert!(first_difference(&default.dump, &quarter.dump).is_some());
}
