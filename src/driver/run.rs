//! `tpace run`: translate, build the original and the translated program,
//! run both, compare every listed array bit for bit, reduction results and
//! printed numbers within a relative tolerance, and report.

use super::dump::{self, DumpedArray};
use super::{Compiled, Failure};
use crate::back::{Output, Target};
use crate::lower::reference;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether a C compiler command is NVIDIA's `nvc` (its own OpenACC and FMA flags).
fn is_nvc(cc: &str) -> bool {
    cc.contains("nvc")
}

/// The compilers `tpace run` and the tests use.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// C compiler command (`$CC`, else `gcc`).
    pub cc: String,
    /// C++ compiler for the CUDA target's CPU emulation (`$CXX`, else `g++`).
    pub cxx: String,
    /// nvcc, if found (`$NVCC`, else `nvcc` on the PATH).
    pub nvcc: Option<String>,
    /// Whether a CUDA GPU answers (`nvidia-smi -L` lists one).
    pub gpu: bool,
    /// Flags that turn on OpenACC (gcc: `-fopenacc`, host fallback without a GPU).
    pub openacc_flags: Vec<String>,
    /// Extra flags for the C and C++ builds.
    pub cflags: Vec<String>,
    /// Macro definitions for every build, nvcc's included, as `NAME=VALUE`
    /// (passed as `-DNAME=VALUE`; empty unless a caller sets them, e.g. `tpace tune --set`).
    pub defines: Vec<String>,
    /// Flags appended to every build, nvcc's included, after tpace's own
    /// (empty unless a caller sets them, e.g. `tpace tune --cflags`).
    pub extra_flags: Vec<String>,
    /// Folders searched for `#include "..."` files, as `-I` (the source's own
    /// folder among them when a program is built away from it).
    pub include_dirs: Vec<PathBuf>,
    /// Build translations made with `--mpi`: through Open MPI's compiler wrappers.
    pub mpi: bool,
    /// Open MPI's C and C++ compiler wrappers and launcher (`$MPICC`, `$MPICXX`,
    /// `$MPIRUN`, else mpicc, mpicxx, mpirun).
    pub mpicc: String,
    /// See [`Toolchain::mpicc`].
    pub mpicxx: String,
    /// See [`Toolchain::mpicc`].
    pub mpirun: String,
    /// Build translated programs with multiply-adds contracted into FMAs (nvcc
    /// `--fmad=true`, gcc `-ffp-contract=fast`): faster, but rounded differently
    /// from the sequential program, so `run` compares arrays within a tolerance
    /// (`tpace run --fast-math`). Off: every build keeps `a*b+c` as two roundings.
    pub fast_math: bool,
}

impl Toolchain {
    /// `$CC` or gcc with its OpenACC flag, `$CXX` or g++, and nvcc and a GPU if present.
    pub fn detect() -> Toolchain {
        let var = |name: &str| std::env::var(name).ok().filter(|c| !c.is_empty());
        let cc = var("CC").unwrap_or_else(|| "gcc".into());
        let openacc_flags = if is_nvc(&cc) {
            vec!["-acc".into()]
        } else {
            vec!["-fopenacc".into()]
        };
        let answers = |cmd: &str, arg: &str| {
            Command::new(cmd)
                .arg(arg)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let nvcc = var("NVCC")
            .or_else(|| Some("nvcc".to_string()))
            .filter(|n| answers(n, "--version"));
        let gpu = Command::new("nvidia-smi")
            .arg("-L")
            .output()
            .is_ok_and(|o| {
                o.status.success() && String::from_utf8_lossy(&o.stdout).contains("GPU")
            });
        Toolchain {
            cxx: var("CXX").unwrap_or_else(|| "g++".into()),
            nvcc,
            gpu,
            openacc_flags,
            // No contraction of a*b+c into an FMA, on any CPU, unless asked: the
            // sequential meaning the translation reproduces bit for bit.
            cflags: if is_nvc(&cc) {
                vec!["-O2".into(), "-Mnofma".into()]
            } else {
                vec!["-O2".into(), "-ffp-contract=off".into()]
            },
            cc,
            defines: Vec::new(),
            extra_flags: Vec::new(),
            include_dirs: Vec::new(),
            mpi: false,
            mpicc: var("MPICC").unwrap_or_else(|| "mpicc".into()),
            mpicxx: var("MPICXX").unwrap_or_else(|| "mpicxx".into()),
            mpirun: var("MPIRUN").unwrap_or_else(|| "mpirun".into()),
            fast_math: false,
        }
    }

    /// How a CUDA translation runs here: on the GPU when nvcc and a GPU are
    /// present, else on the CPU emulation built by the C++ compiler.
    pub fn cuda_flavour(&self) -> Flavour {
        if self.nvcc.is_some() && self.gpu {
            Flavour::CudaDevice
        } else {
            Flavour::CudaEmulation
        }
    }
}

/// A built program and what the compiler said about it.
#[derive(Debug, Clone)]
pub struct Built {
    /// Path of the executable.
    pub binary: PathBuf,
    /// Compiler warnings (empty when clean).
    pub warnings: String,
}

/// Which program is being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// The user's sequential program (pragmas ignored).
    Reference,
    /// The translated OpenACC program.
    Openacc,
    /// The translated CUDA program, built by nvcc for the GPU.
    CudaDevice,
    /// The translated CUDA program, built by the C++ compiler for the CPU emulation.
    CudaEmulation,
    /// The translated OpenCL program, built by the C compiler against the ICD
    /// loader (`-lOpenCL`); it runs on whichever OpenCL device it picks.
    Opencl,
}

/// Write a program's files into `dir` (`name.c`; a CUDA translation's `name.cu`
/// and `name.host.c`) and build them into `dir/name`.
pub fn build(
    tc: &Toolchain,
    output: &Output,
    dir: &Path,
    name: &str,
    flavour: Flavour,
) -> Result<Built, Failure> {
    let write = |file: &Path, text: &str| {
        std::fs::write(file, text)
            .map_err(|e| Failure(format!("error: cannot write {}: {e}\n", file.display())))
    };
    let binary = dir.join(name);
    let main = dir.join(format!(
        "{name}.{}",
        match flavour {
            Flavour::Reference | Flavour::Openacc | Flavour::Opencl => "c",
            Flavour::CudaDevice | Flavour::CudaEmulation => "cu",
        }
    ));
    write(&main, &output.main)?;
    let host = match &output.host {
        Some(text) => {
            let path = crate::back::host_path(&main);
            write(&path, text)?;
            Some(path)
        }
        None => None,
    };
    let mut warnings = String::new();
    match flavour {
        Flavour::Reference | Flavour::Openacc => {
            let mut c = c_compiler(tc, flavour == Flavour::Reference);
            c.arg(&main).arg("-o").arg(&binary).arg("-lm");
            warnings += &compile(c, &main)?;
        }
        Flavour::Opencl => {
            let mut c = Command::new(if tc.mpi { &tc.mpicc } else { &tc.cc });
            c.args(&tc.cflags).args(["-std=gnu11", "-Wall", "-Wextra"]);
            if tc.fast_math {
                c.arg("-ffp-contract=fast");
            }
            common_flags(tc, &mut c);
            c.arg(&main)
                .arg("-o")
                .arg(&binary)
                .args(["-lOpenCL", "-lm"]);
            warnings += &compile(c, &main)?;
        }
        Flavour::CudaDevice => {
            let nvcc = tc.nvcc.as_deref().ok_or_else(|| {
                Failure(
                    "error: nvcc not found\n  help: install the CUDA toolkit or set NVCC\n".into(),
                )
            })?;
            let mut c = Command::new(nvcc);
            if tc.mpi {
                c.args(["-ccbin", &tc.mpicxx]);
            }
            for flag in crate::back::cuda::BUILD_FLAGS.split_whitespace() {
                c.arg(if tc.fast_math && flag == "--fmad=false" {
                    "--fmad=true"
                } else {
                    flag
                });
            }
            common_flags(tc, &mut c);
            c.arg(&main);
            c.args(&host);
            c.arg("-o").arg(&binary);
            warnings += &compile(c, &main)?;
        }
        Flavour::CudaEmulation => {
            // The kernels' file as C++ against the emulation, the host program as C.
            let device_obj = dir.join(format!("{name}.device.o"));
            let mut c = Command::new(&tc.cxx);
            c.args(&tc.cflags)
                .args(["-std=c++17", "-Wall", "-Wextra", "-x", "c++", "-c"]);
            if tc.fast_math {
                c.arg("-ffp-contract=fast");
            }
            common_flags(tc, &mut c);
            c.arg(&main).arg("-o").arg(&device_obj);
            warnings += &compile(c, &main)?;
            let mut objects = vec![device_obj];
            if let Some(host) = &host {
                let host_obj = dir.join(format!("{name}.host.o"));
                let mut c = c_compiler(tc, false);
                c.arg("-c").arg(host).arg("-o").arg(&host_obj);
                warnings += &compile(c, host)?;
                objects.push(host_obj);
            }
            let mut c = Command::new(if tc.mpi { &tc.mpicxx } else { &tc.cxx });
            // The caller's flags link too (a sanitizer needs its runtime there).
            c.args(&objects)
                .arg("-o")
                .arg(&binary)
                .arg("-lm")
                .args(&tc.extra_flags);
            warnings += &compile(c, &main)?;
        }
    }
    Ok(Built { binary, warnings })
}

/// The C compiler with tpace's flags: the sequential build (pragmas ignored,
/// quietly) or a translation's host program (OpenACC on).
fn c_compiler(tc: &Toolchain, sequential: bool) -> Command {
    let mut c = Command::new(if tc.mpi && !sequential {
        &tc.mpicc
    } else {
        &tc.cc
    });
    c.args(&tc.cflags).args(["-std=gnu11", "-Wall", "-Wextra"]);
    if sequential {
        c.arg("-Wno-unknown-pragmas");
    } else {
        c.args(&tc.openacc_flags);
        if tc.fast_math {
            c.arg(if is_nvc(&tc.cc) {
                "-Mfma"
            } else {
                "-ffp-contract=fast"
            });
            // The OpenACC runtime then leaves the GPU's kernel compiler at its default.
            c.arg("-DTPACE_FAST_MATH");
        }
    }
    common_flags(tc, &mut c);
    c
}

/// Macro definitions, include folders and the caller's extra flags, for every compiler.
fn common_flags(tc: &Toolchain, c: &mut Command) {
    c.args(tc.defines.iter().map(|d| format!("-D{d}")));
    for dir in &tc.include_dirs {
        c.arg("-I").arg(dir);
    }
    c.args(&tc.extra_flags);
}

/// Run a compiler; its warnings, or a failure with what it said about `source`.
fn compile(mut cmd: Command, source: &Path) -> Result<String, Failure> {
    let compiler = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.output().map_err(|e| {
        Failure(format!(
            "error: cannot run the compiler `{compiler}`: {e}\n  help: install it or set CC, CXX or NVCC\n"
        ))
    })?;
    let warnings = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(Failure(format!(
            "error: {compiler} failed to build {}:\n{warnings}",
            source.display()
        )));
    }
    Ok(warnings)
}

/// The OpenCL device a translated program ran on, from its note on standard error.
pub fn opencl_device(stderr: &str) -> Option<String> {
    let line = stderr.lines().find(|l| l.contains(": OpenCL device "))?;
    let from = line.find("OpenCL device ")?;
    let rest = &line[from..];
    let end = rest.find("):").map_or(rest.len(), |e| e + 1);
    Some(rest[..end].to_string())
}

/// What one run of a program produced.
#[derive(Debug, Clone)]
pub struct Execution {
    /// Standard output (the program's own prints, e.g. a checksum).
    pub stdout: String,
    /// Standard error (tpace's report line among it).
    pub stderr: String,
    /// The arrays dumped after the time loop.
    pub dump: Vec<DumpedArray>,
    /// `key=value` pairs of the `tpace:` report line, if one was printed.
    pub report: BTreeMap<String, String>,
    /// Seconds the time loop took, as the program measured it.
    pub seconds: Option<f64>,
}

/// Run a binary with extra environment variables and collect its dump.
pub fn execute(
    binary: &Path,
    args: &[String],
    env: &[(String, String)],
    dump_path: &Path,
) -> Result<Execution, Failure> {
    execute_as(binary, args, env, dump_path, None, "mpirun")
}

/// [`execute`], as `ranks` MPI processes under `mpirun` when given.
pub fn execute_as(
    binary: &Path,
    args: &[String],
    env: &[(String, String)],
    dump_path: &Path,
    ranks: Option<u64>,
    mpirun: &str,
) -> Result<Execution, Failure> {
    let _ = std::fs::remove_file(dump_path);
    let mut cmd = match ranks {
        Some(n) => {
            let mut c = Command::new(mpirun);
            // More ranks than cores is fine for a check; root may run them (a container).
            c.args(["--oversubscribe", "-np", &n.to_string()])
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .arg(binary);
            c
        }
        None => Command::new(binary),
    };
    let out = cmd
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("TPACE_DUMP", dump_path)
        .output()
        .map_err(|e| Failure(format!("error: cannot run {}: {e}\n", binary.display())))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(Failure(format!(
            "error: {} exited with {}:\n{stderr}",
            binary.display(),
            out.status
        )));
    }
    let dump = dump::read(dump_path).map_err(|e| Failure(format!("error: {e}\n")))?;
    let report = parse_report(&stderr);
    let seconds = report.get("seconds").and_then(|s| s.parse().ok());
    Ok(Execution {
        stdout,
        stderr,
        dump,
        report,
        seconds,
    })
}

/// `key=value` words of the last `tpace:` or `tpace-reference:` line.
pub fn parse_report(stderr: &str) -> BTreeMap<String, String> {
    stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("tpace: ") || l.starts_with("tpace-reference: "))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Run-time parameters to pass to the translated program (unset: its defaults).
#[derive(Debug, Clone, Default)]
pub struct Params {
    /// `TPACE_SCHEDULE`
    pub schedule: Option<String>,
    /// `TPACE_K`
    pub k: Option<u64>,
    /// `TPACE_CHUNK`
    pub chunk: Option<u64>,
    /// `TPACE_STREAMS`
    pub streams: Option<u64>,
    /// `TPACE_GPUS`: devices each process drives.
    pub gpus: Option<u64>,
    /// MPI processes to run the translation as (under mpirun); `None`: one, without MPI.
    pub ranks: Option<u64>,
}

impl Params {
    /// The environment variables these parameters set.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if let Some(s) = &self.schedule {
            env.push(("TPACE_SCHEDULE".into(), s.clone()));
        }
        for (name, v) in [
            ("TPACE_K", self.k),
            ("TPACE_CHUNK", self.chunk),
            ("TPACE_STREAMS", self.streams),
            ("TPACE_GPUS", self.gpus),
        ] {
            if let Some(v) = v {
                env.push((name.into(), v.to_string()));
            }
        }
        env
    }
}

/// The outcome of `tpace run`.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The short report for the user.
    pub summary: String,
    /// `None` if every listed array matched bit for bit, every reduction result and
    /// the printed output within the tolerance, else the first difference.
    pub difference: Option<String>,
}

/// The toolchain with the source file's folder among the include folders, so
/// that its quoted `#include`s are found from a build folder elsewhere.
pub fn with_source_dir(tc: &Toolchain, path: &str) -> Toolchain {
    let mut tc = tc.clone();
    if let Some(source_dir) = Path::new(path).parent() {
        let source_dir = if source_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            source_dir
        };
        let absolute = std::fs::canonicalize(source_dir).unwrap_or(source_dir.to_path_buf());
        tc.include_dirs.push(absolute);
    }
    tc
}

/// Translate, build both programs in a scratch folder, run both, compare.
/// `rtol` is the relative tolerance for reductions and printed real numbers
/// (`None`: [`dump::FLOAT_RTOL`] / [`dump::DOUBLE_RTOL`] by type, printed numbers at
/// the float one, since a printed number's type is not known).
pub fn run(
    compiled: &Compiled,
    target: Target,
    tc: &Toolchain,
    args: &[String],
    params: &Params,
    keep: Option<&Path>,
    rtol: Option<f64>,
) -> Result<RunOutcome, Failure> {
    let scratch = tempfile::tempdir()
        .map_err(|e| Failure(format!("error: cannot make a scratch folder: {e}\n")))?;
    let dir = keep.unwrap_or(scratch.path());
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure(format!("error: cannot create {}: {e}\n", dir.display())))?;
    let tc = &with_source_dir(tc, &compiled.program.path);
    let reference = build(
        tc,
        &Output {
            main: reference::emit(&compiled.program),
            host: None,
        },
        dir,
        "reference",
        Flavour::Reference,
    )?;
    let flavour = match target {
        Target::Openacc => Flavour::Openacc,
        Target::Cuda => tc.cuda_flavour(),
        Target::Opencl => Flavour::Opencl,
    };
    let mpi = params.ranks.is_some();
    let mut mpi_tc = tc.clone();
    mpi_tc.mpi = mpi;
    let translated = build(
        &mpi_tc,
        &super::translate_with(compiled, target, mpi)?,
        dir,
        "translated",
        flavour,
    )?;
    let seq = execute(&reference.binary, args, &[], &dir.join("reference.dump"))?;
    let acc = execute_as(
        &translated.binary,
        args,
        &params.env(),
        &dir.join("translated.dump"),
        params.ranks,
        &tc.mpirun,
    )?;
    let check = if tc.fast_math {
        dump::ArrayCheck::Within(None)
    } else {
        dump::ArrayCheck::Exact
    };
    let verdict =
        super::compare::judge(&seq.dump, &acc.dump, &seq.stdout, &acc.stdout, rtol, check);
    let r = &acc.report;
    let get = |k: &str| r.get(k).map_or("?", |v| v.as_str());
    let moved = |k: &str| {
        r.get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .map_or("?".to_string(), crate::model::predict::bytes)
    };
    let difference = verdict.difference();
    let (verdict, printed) = (verdict.arrays_text, verdict.printed_text);
    let emulated = if flavour == Flavour::CudaEmulation {
        " (CPU emulation: no GPU or no nvcc here)".to_string()
    } else if flavour == Flavour::Opencl {
        opencl_device(&acc.stderr).map_or(String::new(), |d| format!(" ({d})"))
    } else {
        String::new()
    };
    let fast = if tc.fast_math {
        " (fast math: multiply-adds contracted)"
    } else {
        ""
    };
    let how = format!("{emulated}{fast}");
    let summary = format!(
        "{path}: target {target}{how} schedule={sched} k={k} b={b} streams={s} chunks={c} steps={steps} devices={devices} ranks={ranks}\n\
         \x20 sequential {seq_t} s, translated {acc_t} s ({glups} Glup/s; arrays moved {up} up, {down} down)\n\
         \x20 {verdict}; printed output {printed}\n",
        path = compiled.program.path,
        target = target.name(),
        sched = get("schedule"),
        k = get("k"),
        b = get("b"),
        s = get("streams"),
        c = get("chunks"),
        steps = get("steps"),
        devices = get("devices"),
        ranks = get("ranks"),
        seq_t = seq.seconds.map_or("?".into(), |s| format!("{s:.4}")),
        acc_t = acc.seconds.map_or("?".into(), |s| format!("{s:.4}")),
        glups = get("glups"),
        up = moved("up_bytes"),
        down = moved("down_bytes"),
    );
    Ok(RunOutcome {
        summary,
        difference,
    })
}
