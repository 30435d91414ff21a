//! The `tpace` command line.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tpace::back::Target;
use tpace::driver::run::{Params, Toolchain};
use tpace::driver::{self, Failure};
use tpace::plan::Schedule;
use tpace::text::shell_word;

/// Turn sequential C stencil codes with `#pragma tpace` directives into
/// out-of-core accelerator programs with temporal blocking.
#[derive(Parser)]
#[command(name = "tpace", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// C preprocessor options, as a C compiler takes them: the front end reads the
/// file's macros, types and sizes through them, and `run` and `tune` pass them
/// to every compiler they call.
#[derive(clap::Args, Debug, Clone, Default)]
struct CFlags {
    /// Search DIR for #include files, as a C compiler does (repeatable).
    #[arg(short = 'I', value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Define a macro, as a C compiler does: -D NAME or -D NAME=VALUE (repeatable).
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    define: Vec<String>,
}

impl CFlags {
    /// What the front end's preprocessor run takes.
    fn options(&self) -> driver::Options {
        driver::Options {
            defines: self.define.clone(),
            include_dirs: self.include.clone(),
            ..driver::Options::default()
        }
    }

    /// A build line with these options after its compiler's name (quoted for
    /// the shell where they need it).
    fn with_flags(&self, line: &str) -> String {
        let mut flags: Vec<String> = self
            .include
            .iter()
            .map(|d| format!("-I {}", shell_word(&d.display().to_string())))
            .collect();
        flags.extend(self.define.iter().map(|d| shell_word(&format!("-D{d}"))));
        match line.split_once(' ') {
            Some((cc, rest)) if !flags.is_empty() => format!("{cc} {} {rest}", flags.join(" ")),
            _ => line.to_string(),
        }
    }

    /// The toolchain with these options for every compiler.
    fn toolchain(&self) -> Toolchain {
        let mut tc = Toolchain::detect();
        tc.defines.extend(self.define.iter().cloned());
        tc.include_dirs.extend(self.include.iter().cloned());
        tc
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Translate a C file into an accelerator program.
    Translate {
        /// Input C file with tpace directives.
        input: PathBuf,
        #[command(flatten)]
        c: CFlags,
        /// Output file (default: standard output; for CUDA, NAME.cu and NAME.host.c here).
        /// CUDA writes the host program beside it: PROG.cu and PROG.host.c.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Output language.
        #[arg(long, value_enum, default_value = "openacc")]
        target: Target,
        /// Machine profile the default plan is chosen for: a bundled name (h100, h200) or a file.
        #[arg(long, default_value = tpace::model::cmodel::DEFAULT_MACHINE)]
        machine: String,
        /// For several MPI processes (Open MPI): build with mpicc, run with mpirun -np N.
        #[arg(long)]
        mpi: bool,
    },
    /// Check a C file and print what tpace understood of it; writes nothing.
    Check {
        /// Input C file with tpace directives.
        input: PathBuf,
        #[command(flatten)]
        c: CFlags,
    },
    /// Translate, build the original and the translation, run both, compare all arrays.
    Run {
        /// Input C file with tpace directives.
        input: PathBuf,
        #[command(flatten)]
        c: CFlags,
        /// Output language.
        #[arg(long, value_enum, default_value = "openacc")]
        target: Target,
        /// Schedule (sets TPACE_SCHEDULE).
        #[arg(long, value_enum)]
        schedule: Option<Schedule>,
        /// Time steps per transfer (sets TPACE_K).
        #[arg(long)]
        k: Option<u64>,
        /// Chunk width in planes (sets TPACE_CHUNK).
        #[arg(long)]
        chunk: Option<u64>,
        /// Async queues (sets TPACE_STREAMS).
        #[arg(long)]
        streams: Option<u64>,
        /// Run the translation as this many MPI processes (translated with --mpi,
        /// built with mpicc, run under mpirun).
        #[arg(long)]
        ranks: Option<u64>,
        /// Devices each process drives (sets TPACE_GPUS).
        #[arg(long)]
        gpus: Option<u64>,
        /// Keep the generated sources and binaries in this folder.
        #[arg(long)]
        keep: Option<PathBuf>,
        /// Build the translation with multiply-adds contracted into FMAs (nvcc
        /// --fmad=true, gcc -ffp-contract=fast): faster, rounded differently, so
        /// arrays are compared within 1e-4 (float) or 1e-10 (double) of each
        /// array's largest magnitude instead of bit for bit.
        #[arg(long)]
        fast_math: bool,
        /// Relative tolerance for reduction results and printed real numbers, which a
        /// parallel reduction sums in another order (arrays are compared bit for bit
        /// unless --fast-math). Default: 1e-3 for float reductions and printed numbers,
        /// 1e-9 for double.
        #[arg(long, value_name = "RTOL")]
        rtol: Option<f64>,
        /// Arguments for both programs.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Measure this machine's CUDA device and write a machine profile for `plan`.
    Probe {
        /// Profile file to write (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// The profile's name (what `--machine` is given when it is bundled).
        #[arg(long, default_value = "probed")]
        name: String,
        /// Bytes per timed copy.
        #[arg(long, default_value_t = 1 << 30)]
        bytes: u64,
        /// Run the probe on the CPU emulation of CUDA (tests the probe; the figures are the CPU's).
        #[arg(long)]
        emulate: bool,
        /// Also measure the exchange between two MPI ranks (mpirun -np 2): exchange_gbs
        /// and exchange_latency_us, which plans over several ranks use.
        #[arg(long)]
        mpi: bool,
        /// Refresh this existing profile in place instead of writing a new one: every
        /// figure the probe measures and the `[[kernels]]` table are replaced, the
        /// name, description, comments and every other figure kept
        /// (`tpace probe --into profiles/h100.toml` on the lent H100).
        #[arg(long, value_name = "FILE.toml", conflicts_with = "output")]
        into: Option<PathBuf>,
        /// Skip timing tpace's kernels (the `[[kernels]]` table): the copies and the
        /// device's figures only.
        #[arg(long)]
        no_kernels: bool,
    },
    /// Choose schedule, k, chunk width and streams from the performance model; print the plan.
    Plan {
        /// Input C file with tpace directives.
        input: PathBuf,
        #[command(flatten)]
        c: CFlags,
        /// Output language the plan is for (CUDA's kernels may advance several steps each).
        #[arg(long, value_enum, default_value = "openacc")]
        target: Target,
        /// Machine profile: a bundled name (h100, h200, k40c, c2070, xeon-phi-5110p) or a file.
        #[arg(long, default_value = "h100")]
        machine: String,
        /// Macro value for the size extents, NAME=VALUE (repeatable).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
        /// Device memory to plan for, in bytes (units: kB MB GB, KiB MiB GiB).
        #[arg(long, value_name = "BYTES")]
        mem_cap: Option<String>,
        /// Time steps (needed when the time loop's bound is a run-time value).
        #[arg(long)]
        steps: Option<u64>,
        /// Devices the run spreads over, all processes together: the plan of each
        /// device's slab, with its ghost planes exchanged once per block.
        #[arg(long, default_value_t = 1)]
        devices: u64,
        /// MPI processes among which the devices are (default: one per device).
        #[arg(long)]
        ranks: Option<u64>,
        /// Devices of one node, whose copies share its host memory (the profile's
        /// host_memory_gbs; default: one process's, devices / ranks).
        #[arg(long)]
        node_devices: Option<u64>,
    },
    /// Build once, run over schedule x k x b x streams, write results.csv and heatmap.svg,
    /// and compare the best configuration with the model's pick.
    Tune {
        /// Input C file with tpace directives.
        input: PathBuf,
        #[command(flatten)]
        c: CFlags,
        /// Output language.
        #[arg(long, value_enum, default_value = "openacc")]
        target: Target,
        /// Machine profile for the model: a bundled name or a file.
        #[arg(long, default_value = "h100")]
        machine: String,
        /// Macro value, NAME=VALUE (repeatable): compiled in as -DNAME=VALUE and used for the extents.
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
        /// Schedules to sweep, comma-separated (default mmtb,mm,naive,incore).
        #[arg(long, value_enum, value_delimiter = ',')]
        schedules: Vec<Schedule>,
        /// k values, comma-separated (default powers of two up to 64 and the step count).
        #[arg(long, value_delimiter = ',')]
        k: Vec<u64>,
        /// Chunk widths, comma-separated (default n, n/2, n/4, n/8, n/16).
        #[arg(long, value_delimiter = ',')]
        chunk: Vec<u64>,
        /// Stream counts, comma-separated (default 1,2,3).
        #[arg(long, value_delimiter = ',')]
        streams: Vec<u64>,
        /// Device memory for the runs (TPACE_DEVICE_MEM) and the model (units: kB MB GB, KiB MiB GiB).
        #[arg(long, value_name = "BYTES")]
        mem_cap: Option<String>,
        /// Time steps, for the model and the default k list (default: from the source or a run).
        #[arg(long)]
        steps: Option<u64>,
        /// Output folder (default tune-NAME).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Extra compiler flags for the build, e.g. "-Xcompiler -mcmodel=medium" (repeatable;
        /// -mcmodel=medium is added by itself when the static arrays exceed 1 GiB).
        #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
        cflags: Vec<String>,
        /// OpenCL: work-group shapes to sweep, comma-separated, each x first as 64x4x1
        /// (default: every power-of-two shape no side longer than the grid).
        #[arg(long, value_delimiter = ',')]
        wg: Vec<String>,
        /// OpenCL: steps per tiled kernel (T) to sweep, comma-separated (default 1 to 4
        /// where the pipeline has a tiled kernel, else 1).
        #[arg(long = "t", value_delimiter = ',')]
        t: Vec<u64>,
        /// Arguments for every run of the program.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// A C compiler for build systems: translates the files with tpace or stencil
    /// directives, compiles and links (make CC='tpace cc --target cuda'; tpace cc --help).
    #[command(disable_help_flag = true)]
    Cc {
        /// A C compiler's arguments, and tpace's --target, --mpi, --emulate, --machine,
        /// --cuda-arch, --keep, --show-commands.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Compare what a translated program wrote with what the sequential one wrote:
    /// two `TPACE_DUMP` files (arrays bit for bit, reductions within a tolerance)
    /// and, optionally, their printed output. For programs run outside `tpace run`,
    /// e.g. on a GPU machine.
    Compare {
        /// The sequential program's dump.
        reference: PathBuf,
        /// The translated program's dump.
        translated: PathBuf,
        /// The two programs' printed output: sequential, then translated.
        #[arg(long, num_args = 2, value_names = ["REFERENCE", "TRANSLATED"])]
        stdout: Vec<PathBuf>,
        /// Relative tolerance for reductions and printed real numbers (default: 1e-3 for
        /// float, 1e-9 for double; printed numbers take the float one).
        #[arg(long)]
        rtol: Option<f64>,
    },
}

fn main() -> ExitCode {
    match real_main(Cli::parse()) {
        Ok(code) => code,
        Err(Failure(msg)) => {
            eprint!("{msg}");
            ExitCode::from(1)
        }
    }
}

fn real_main(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Cmd::Translate {
            input,
            c,
            output,
            target,
            machine,
            mpi,
        } => {
            let compiled = driver::compile_file_with(&input, &c.options())?;
            let profile = tpace::model::Profile::load(&machine)
                .map_err(|e| Failure(format!("error: {e}\n")))?;
            let out = driver::translate_for(&compiled, target, &profile, mpi)?;
            // Two files can not go to standard output: a split target writes beside the input's name.
            let path = output.or_else(|| {
                out.host.as_ref().map(|_| {
                    let stem = input.file_stem().unwrap_or_default();
                    PathBuf::from(stem).with_extension(target.extension())
                })
            });
            match path {
                Some(path) => {
                    driver::write_output(&path, &out)?;
                    let host = out
                        .host
                        .as_ref()
                        .map(|_| format!(" and {}", tpace::back::host_path(&path).display()))
                        .unwrap_or_default();
                    eprintln!(
                        "tpace: wrote {}{host}; build: {}",
                        path.display(),
                        c.with_flags(&tpace::back::build_line(target, &path, mpi))
                    );
                }
                None => print!("{}", out.main),
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Check { input, c } => {
            let compiled = driver::compile_file_with(&input, &c.options())?;
            print!("{}", driver::summary(&compiled));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run {
            input,
            c,
            target,
            schedule,
            k,
            chunk,
            streams,
            ranks,
            gpus,
            keep,
            fast_math,
            rtol,
            args,
        } => {
            let compiled = driver::compile_file_with(&input, &c.options())?;
            let mut tc = c.toolchain();
            tc.fast_math = fast_math;
            let params = Params {
                schedule: schedule.map(|s| s.name().to_string()),
                k,
                chunk,
                streams,
                gpus,
                ranks,
            };
            let outcome = driver::run::run(
                &compiled,
                target,
                &tc,
                &args,
                &params,
                keep.as_deref(),
                rtol,
            )?;
            print!("{}", outcome.summary);
            Ok(if outcome.difference.is_none() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Probe {
            output,
            name,
            bytes,
            emulate,
            mpi,
            into,
            no_kernels,
        } => {
            let tc = Toolchain::detect();
            // Read the profile to refresh first: a missing one fails before the probe runs.
            let old = match &into {
                Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
                    Failure(format!("error: cannot read {}: {e}\n", path.display()))
                })?),
                None => None,
            };
            let mut log = |line: &str| eprintln!("tpace probe: {line}");
            let mut probed = tpace::probe::probe(&tc, bytes, emulate, !no_kernels, &mut log)?;
            if mpi {
                probed
                    .values
                    .extend(tpace::probe::probe_exchange(&tc, bytes.min(64 << 20))?);
            }
            let today = driver::today();
            let text = match &old {
                Some(old) => tpace::probe::update_profile(old, &probed, &today),
                None => tpace::probe::profile_toml(&name, &probed, &today),
            };
            // The profile must load back as one.
            tpace::model::Profile::parse(&name, &text)
                .map_err(|e| Failure(format!("error: the probe gave an invalid profile: {e}\n")))?;
            match into.or(output) {
                Some(path) => driver::write_atomically(&path, &text)?,
                None => print!("{text}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Plan {
            input,
            c,
            target,
            machine,
            set,
            mem_cap,
            steps,
            devices,
            ranks,
            node_devices,
        } => {
            use tpace::model::{Profile, report};
            let fail = |e: String| Failure(format!("error: {e}\n"));
            let compiled = driver::compile_file_with(&input, &c.options())?;
            let profile = Profile::load(&machine).map_err(fail)?;
            let mem_cap = mem_cap
                .map(|m| report::parse_bytes(&m).map_err(|e| fail(format!("--mem-cap {e}"))))
                .transpose()?;
            let request = report::PlanRequest {
                set,
                mem_cap,
                steps,
                fuses: target.fuses_steps(),
                fuse_steps: None,
                devices,
                ranks: ranks.unwrap_or(devices),
                node_devices: node_devices.unwrap_or(0),
                peer: matches!(target, Target::Cuda),
            };
            for unit in compiled.units() {
                let text = if target.chooses_steps() {
                    tpace::model::opencl::plan_report(unit, &profile, &request)
                } else {
                    report::plan_report(unit, &profile, &request)
                };
                print!("{}", text.map_err(fail)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Tune {
            input,
            c,
            target,
            machine,
            set,
            schedules,
            k,
            chunk,
            streams,
            mem_cap,
            steps,
            out,
            cflags,
            wg,
            t,
            args,
        } => {
            let compiled = driver::compile_file_with(&input, &c.options())?;
            if target != Target::Opencl && !(wg.is_empty() && t.is_empty()) {
                return Err(Failure(
                    "error: --wg and --t sweep OpenCL's work groups and temporal blocks\n  help: add --target opencl\n"
                        .into(),
                ));
            }
            let request = driver::tune::TuneRequest {
                target,
                machine,
                set,
                schedules,
                k,
                chunk,
                streams,
                mem_cap,
                steps,
                out,
                args,
                cflags,
                wg,
                t,
            };
            if target == Target::Opencl {
                let outcome = driver::tune_opencl::tune(&compiled, &Toolchain::detect(), &request)?;
                print!("{}", outcome.summary);
                let failed = outcome
                    .results
                    .iter()
                    .any(|r| matches!(r.error, Some((false, _))));
                return Ok(if failed {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                });
            }
            let outcome = driver::tune::tune(&compiled, &Toolchain::detect(), &request)?;
            print!("{}", outcome.summary);
            let failed = outcome
                .results
                .iter()
                .any(|r| matches!(r.status, driver::tune::Status::Failed(_)));
            Ok(if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Cmd::Cc { args } => Ok(driver::cc::main(&args)),
        Cmd::Compare {
            reference,
            translated,
            stdout,
            rtol,
        } => {
            let outcome = driver::compare::compare(&reference, &translated, &stdout, rtol)?;
            print!("{}", outcome.summary);
            Ok(if outcome.agree {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}
