//! The OpenACC output compiled with gcc's nvptx offloading, the route bench/gpu.sh's
//! part `openacc-gpu` takes on the GPU machine: every example's and fixture's
//! translation compiles for the host and for nvptx without a warning, the program
//! holds PTX for the GPU (`.target sm_80`), and run here, where libgomp finds no
//! GPU and runs the regions on the host, Jacobi-2D is bit for bit the sequential
//! program over the test sweep. On a GPU it is bench/gpu.sh that checks.
//!
//! The compiler: `$TPACE_OFFLOAD_CC` (a command taking gcc's arguments), else
//! bench/offload/gcc-offload once bench/offload/setup.sh has unpacked it (.ci/run
//! runs it), else the system's gcc if it has nvptx offloading. With none the test
//! says so and passes, except under CI=true, where it fails.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use tpace::back::Target;
use tpace::driver;
use tpace::driver::run::{Flavour, Toolchain, build};

/// nvptx options: gcc 12's newest target (CUDA 12 and 13's ptxas refuse its default, sm_30).
const OFFLOAD_OPTIONS: &str = "-foffload-options=nvptx-none=-misa=sm_80 -mptx=7.0 -lm";

/// The toolchain with the offload compiler as `$CC`, or why there is none.
fn offload_toolchain() -> Result<Toolchain, String> {
    let mut tc = Toolchain::detect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Ok(cc) = std::env::var("TPACE_OFFLOAD_CC") {
        tc.cc = cc;
        return Ok(tc);
    }
    if root
        .join("bench/offload/root/usr/bin/x86_64-linux-gnu-gcc-12")
        .exists()
    {
        tc.cc = root.join("bench/offload/gcc-offload").display().to_string();
        return Ok(tc);
    }
    // The system's gcc, if it compiles an OpenACC region for nvptx.
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe.c");
    std::fs::write(
        &probe,
        "int main(void)\n{\n    int x = 0;\n#pragma acc parallel copy(x)\n    x = 1;\n    return x - 1;\n}\n",
    )
    .unwrap();
    let out = Command::new(&tc.cc)
        .args([
            "-fopenacc",
            "-foffload=nvptx-none",
            OFFLOAD_OPTIONS,
            "-no-pie",
        ])
        .arg(&probe)
        .arg("-o")
        .arg(dir.path().join("probe"))
        .output()
        .map_err(|e| format!("{} does not run: {e}", tc.cc))?;
    if !out.status.success() {
        return Err(format!(
            "{} has no nvptx offloading: {}",
            tc.cc,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    tc.cflags
        .extend(["-foffload=nvptx-none", OFFLOAD_OPTIONS, "-no-pie"].map(String::from));
    Ok(tc)
}

fn toolchain_or_skip() -> Option<Toolchain> {
    match offload_toolchain() {
        Ok(tc) => Some(tc),
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("no OpenACC offload compiler in CI: {why} (.ci/run runs bench/offload/setup.sh)")
        }
        Err(why) => {
            eprintln!(
                "skipped: no OpenACC offload compiler here ({why}); run bench/offload/setup.sh"
            );
            None
        }
    }
}

#[test]
fn every_translation_compiles_for_nvptx_without_warnings() {
    let Some(tc) = toolchain_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for path in programs() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let out = driver::translate(&compile(&path), Target::Openacc).expect("translates");
        let tc = fixture_flags(&path).toolchain(&tc);
        match build(&tc, &out, dir.path(), &name, Flavour::Openacc) {
            Err(e) => failures.push(format!("{name}: {e}")),
            Ok(built) if !warnings(&built.warnings).is_empty() => {
                failures.push(format!("{name}: warnings:\n{}", built.warnings))
            }
            Ok(built) => {
                let binary = std::fs::read(&built.binary).unwrap();
                let has = |s: &str| binary.windows(s.len()).any(|w| w == s.as_bytes());
                if !has(".target sm_80") || !has(".entry tpace_") {
                    failures.push(format!("{name}: no nvptx kernels in the program"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn jacobi_built_for_nvptx_matches_the_sequential_program_on_the_host_fallback() {
    let Some(tc) = toolchain_or_skip() else {
        return;
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jacobi2d.c");
    // No GPU here: the regions run on the host, as the test's name says.
    let env = [("ACC_DEVICE_TYPE".to_string(), "host".to_string())];
    let runs = check_program(&tc, &path, Target::Openacc, Flavour::Openacc, &env);
    assert!(runs > 20, "{runs}");
}

/// gcc's nvptx kernels are bit for bit only when the driver compiles their PTX
/// without contracting multiplies and adds (`GOMP_NVPTX_JIT=-O0`; on the H100 the
/// default level changed the last bit of heat-3D, FDTD and CIP): the OpenACC output
/// sets that before libgomp first reads it, keeps a value the user set, and leaves it
/// alone when built for speed (`tpace run --fast-math`). Checked from inside the
/// program (a destructor appended to the translation prints what libgomp would read),
/// with the system's gcc: no GPU or offload compiler needed.
#[test]
fn the_openacc_output_asks_libgomp_for_exact_kernels() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/heat1d.c");
    let mut out = driver::translate(&compile(&path), Target::Openacc).expect("translates");
    out.main.push_str(
        "\n__attribute__((destructor)) static void tpace_test_show_jit(void)\n{\n    \
         const char *v = getenv(\"GOMP_NVPTX_JIT\");\n    \
         fprintf(stderr, \"GOMP_NVPTX_JIT=[%s]\\n\", v ? v : \"unset\");\n}\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let seen = |fast_math: bool, env: Option<&str>| {
        let mut tc = Toolchain::detect();
        tc.fast_math = fast_math;
        let name = if fast_math { "fast" } else { "exact" };
        let built = build(&tc, &out, dir.path(), name, Flavour::Openacc).expect("builds");
        let mut run = Command::new(&built.binary);
        run.arg("3").env("ACC_DEVICE_TYPE", "host");
        match env {
            Some(v) => run.env("GOMP_NVPTX_JIT", v),
            None => run.env_remove("GOMP_NVPTX_JIT"),
        };
        let done = run.output().expect("runs");
        assert!(done.status.success(), "{done:?}");
        let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
        let at = stderr.find("GOMP_NVPTX_JIT=[").expect("the destructor ran");
        stderr[at..].lines().next().unwrap().to_string()
    };
    assert_eq!(seen(false, None), "GOMP_NVPTX_JIT=[-O0]");
    assert_eq!(seen(false, Some("-O4")), "GOMP_NVPTX_JIT=[-O4]");
    assert_eq!(seen(true, None), "GOMP_NVPTX_JIT=[unset]");
}
