//! Helpers shared by the end-to-end tests: the programs under test, the sweep
//! of out-of-core parameters with its edge cases (DESIGN.md §6), and the
//! check that a translation leaves every listed array bit for bit as the
//! sequential program does.
#![allow(dead_code)] // each test binary uses a different part

use std::path::{Path, PathBuf};
use std::time::Instant;
use tpace::back::{Output, Target};
use tpace::driver::dump::{FLOAT_RTOL, first_difference, printed_difference};
use tpace::driver::run::{Built, Execution, Flavour, Params, Toolchain, build, execute};
use tpace::driver::{self, Compiled};
use tpace::lower::reference;

/// Runs a binary with `params` and extra environment variables.
pub fn run_with(
    binary: &Path,
    steps: u64,
    params: &Params,
    env: &[(String, String)],
    dump: &Path,
) -> Execution {
    let mut all = params.env();
    all.extend(env.iter().cloned());
    execute(binary, &[steps.to_string()], &all, dump).unwrap_or_else(|f| {
        panic!(
            "{} with {params:?} {env:?}, {steps} steps: {f}",
            binary.display()
        )
    })
}

/// Step counts every program runs with: 7 and 13 are multiples of few k below.
pub const STEP_COUNTS: [u64; 3] = [1, 7, 13];

/// The programs under test: examples/*.c, tests/fixtures/layouts/*.c,
/// tests/fixtures/reductions/*.c, tests/fixtures/styles/*.c and
/// tests/fixtures/ordinary/*.c (C as users write it: braceless nests, C-only
/// host code, several pipelines a file, arrays in structs, macros and headers;
/// some need preprocessor flags, see [`fixture_flags`]), tests/fixtures/stencil/*.c
/// (the #pragma stencil dialect), tests/fixtures/liveness/*.c (temporaries
/// the program reads afterwards or not) and tests/fixtures/sweeps/*.c (sweeps in
/// called functions, pointers swapped and rotated at the end of a step).
pub fn programs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "examples",
        "tests/fixtures/layouts",
        "tests/fixtures/reductions",
        "tests/fixtures/styles",
        "tests/fixtures/stencil",
        "tests/fixtures/ordinary",
        "tests/fixtures/liveness",
        "tests/fixtures/sweeps",
    ] {
        let entries =
            std::fs::read_dir(root.join(dir)).unwrap_or_else(|e| panic!("cannot list {dir}: {e}"));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.extension().is_some_and(|e| e == "c") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The C preprocessor flags a test program needs, as a C compiler takes them.
///
/// Convention: a program that needs flags says so in a comment on its first
/// line, `/* tpace-test: -I include -DN=40 -DFLAG */`; `-I` folders are
/// relative to the program's own folder. The test helpers compile and
/// translate it with these flags and give them to every compiler they call
/// (the sequential build, the translation's, nvcc's).
#[derive(Debug, Clone, Default)]
pub struct FixtureFlags {
    /// `-D` options, as `NAME` or `NAME=VALUE`.
    pub defines: Vec<String>,
    /// `-I` folders, absolute.
    pub include_dirs: Vec<PathBuf>,
}

impl FixtureFlags {
    /// What the front end's preprocessor run takes.
    pub fn options(&self) -> driver::Options {
        driver::Options {
            defines: self.defines.clone(),
            include_dirs: self.include_dirs.clone(),
            ..driver::Options::default()
        }
    }

    /// The toolchain with these flags for every compiler.
    pub fn toolchain(&self, tc: &Toolchain) -> Toolchain {
        let mut tc = tc.clone();
        tc.defines.extend(self.defines.iter().cloned());
        tc.include_dirs.extend(self.include_dirs.iter().cloned());
        tc
    }

    /// The flags as `tpace` takes them (`-I`, `DIR`, `-DN=40`).
    pub fn cli_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        for dir in &self.include_dirs {
            out.push("-I".into());
            out.push(dir.display().to_string());
        }
        out.extend(self.defines.iter().map(|d| format!("-D{d}")));
        out
    }

    /// The flags as a printed build line carries them after the compiler's
    /// name: `-I DIR -DN=40 ` (shell-quoted, with a trailing blank), or nothing.
    pub fn printed(&self) -> String {
        let mut out = String::new();
        for dir in &self.include_dirs {
            out.push_str(&format!(
                "-I {} ",
                tpace::text::shell_word(&dir.display().to_string())
            ));
        }
        for d in &self.defines {
            out.push_str(&format!("{} ", tpace::text::shell_word(&format!("-D{d}"))));
        }
        out
    }

    /// The flags as compiler arguments (`-DN=40`, `-I`, `DIR`).
    pub fn args(&self) -> Vec<String> {
        let mut out: Vec<String> = self.defines.iter().map(|d| format!("-D{d}")).collect();
        for dir in &self.include_dirs {
            out.push("-I".into());
            out.push(dir.display().to_string());
        }
        out
    }
}

/// The flags `path` asks for on its first line (none if it asks for none).
pub fn fixture_flags(path: &Path) -> FixtureFlags {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let first = text.lines().next().unwrap_or("");
    let mut flags = FixtureFlags::default();
    let Some(rest) = first
        .trim()
        .strip_prefix("/*")
        .and_then(|r| r.trim_start().strip_prefix("tpace-test:"))
    else {
        return flags;
    };
    let rest = rest.trim().trim_end_matches("*/");
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut words = rest.split_whitespace();
    while let Some(w) = words.next() {
        if let Some(d) = w.strip_prefix("-D") {
            let d = if d.is_empty() {
                words.next().unwrap_or("")
            } else {
                d
            };
            flags.defines.push(d.to_string());
        } else if let Some(i) = w.strip_prefix("-I") {
            let i = if i.is_empty() {
                words.next().unwrap_or("")
            } else {
                i
            };
            flags.include_dirs.push(dir.join(i));
        } else {
            panic!(
                "{}: unknown flag `{w}` in its tpace-test line",
                path.display()
            );
        }
    }
    flags
}

/// Compile `text`, a version of the test program at `path` (a rewrite of its
/// layout, say), with the macros and headers the preprocessor finds for the
/// program itself under the flags its first line asks for.
pub fn compile_text(path: &Path, text: &str) -> Result<Compiled, Vec<tpace::diag::Diagnostic>> {
    let original = std::fs::read_to_string(path).unwrap_or_default();
    let env = driver::Env::of_file(path, &original, &fixture_flags(path).options());
    tpace::front::parse_with(&path.display().to_string(), text, &env)
        .and_then(tpace::plan::compile_program)
}

/// Compile a test program with the flags its first line asks for.
pub fn compile(path: &Path) -> Compiled {
    driver::compile_file_with(path, &fixture_flags(path).options())
        .unwrap_or_else(|f| panic!("{} does not compile:\n{f}", path.display()))
}

pub fn build_ok(tc: &Toolchain, out: &Output, dir: &Path, name: &str, flavour: Flavour) -> Built {
    build(tc, out, dir, name, flavour).unwrap_or_else(|f| panic!("{name}: {f}"))
}

/// The instrumented sequential program of a compiled file.
pub fn reference_of(compiled: &Compiled) -> Output {
    Output {
        main: reference::emit(&compiled.program),
        host: None,
    }
}

/// Write a CUDA translation's two files into `dir` as `name.cu` and `name.host.c`.
pub fn write_cuda(dir: &Path, name: &str, out: &Output) -> (PathBuf, PathBuf) {
    let cu = dir.join(format!("{name}.cu"));
    let host = tpace::back::host_path(&cu);
    std::fs::write(&cu, &out.main).expect("write .cu");
    std::fs::write(&host, out.host.as_deref().expect("a host program")).expect("write .host.c");
    (cu, host)
}

/// A translation with `from` replaced by `to` in whichever of its files holds
/// it (exactly once in all of them together: else the test is out of date).
pub fn replace_once(out: &Output, from: &str, to: &str, what: &str) -> Output {
    let count = |t: &str| t.matches(from).count();
    let total = count(&out.main) + out.host.as_deref().map_or(0, count);
    assert_eq!(
        total, 1,
        "the translation of {what} no longer contains `{from}` exactly once: update this test"
    );
    Output {
        main: out.main.replace(from, to),
        host: out.host.as_ref().map(|h| h.replace(from, to)),
    }
}

pub fn run_ok(binary: &Path, steps: u64, params: &Params, dump: &Path) -> Execution {
    execute(binary, &[steps.to_string()], &params.env(), dump)
        .unwrap_or_else(|f| panic!("{} with {params:?}, {steps} steps: {f}", binary.display()))
}

/// The smallest width >= `start` that does not divide `n` (so the last chunk is short).
pub fn non_divisor(n: u64, start: u64) -> u64 {
    (start.max(2)..)
        .find(|b| !n.is_multiple_of(*b))
        .expect("some width does not divide n")
}

pub fn params(schedule: &str, k: u64, chunk: u64, streams: u64) -> Params {
    Params {
        schedule: Some(schedule.into()),
        k: Some(k),
        chunk: Some(chunk),
        streams: Some(streams),
        ..Params::default()
    }
}

/// The sweep of (schedule, k, b, S) for a cut axis of `n` planes and `steps` steps.
pub fn sweep(n: u64, steps: u64) -> Vec<Params> {
    let half = n.div_ceil(2);
    vec![
        // The baseline schedule, with a short last chunk and with one chunk.
        params("naive", 1, non_divisor(n, 7), 2),
        params("naive", 4, n, 3),
        // One step per block.
        params("mm", 1, non_divisor(n, 5), 1),
        params("mm", 1, non_divisor(n, n / 3), 3),
        // Chunks narrower than the ghost zone of k steps (h * k > b).
        params("mm", 5, 1, 2),
        params("mm", 5, 2, 3),
        params("mm", 3, 1, 1),
        // b not dividing the extent, k not dividing the step count.
        params("mm", 2, non_divisor(n, 7), 3),
        params("mm", 4, non_divisor(n, n / 4 + 1), 2),
        params("mm", 6, non_divisor(n, n / 5 + 1), 4),
        // A single chunk: b equal to and larger than the extent, S above the chunk count.
        params("mm", 4, n, 1),
        params("mm", 3, n + 10, 4),
        // Two chunks, more streams than chunks.
        params("mm", 3, half, 5),
        // k equal to and larger than the step count.
        params("mm", steps, non_divisor(n, 9), 2),
        params("mm", steps + 20, non_divisor(n, n / 3), 3),
        // Many streams.
        params("mm", 2, non_divisor(n, 3), 63),
        // mmtb: chunks narrower than the skew of k steps, one slot asked for.
        params("mmtb", 5, 1, 1),
        params("mmtb", 4, 2, 2),
        params("mmtb", 3, 3, 3),
        // mmtb: b not dividing the extent, k not dividing the step count.
        params("mmtb", 2, non_divisor(n, 7), 3),
        params("mmtb", 4, non_divisor(n, n / 4 + 1), 2),
        params("mmtb", 6, non_divisor(n, n / 5 + 1), 4),
        // mmtb: a single chunk, and two chunks with more streams than chunks.
        params("mmtb", 4, n, 2),
        params("mmtb", 3, half, 5),
        // mmtb: k equal to and larger than the step count, one step per block.
        params("mmtb", steps, non_divisor(n, 9), 3),
        params("mmtb", steps + 20, non_divisor(n, n / 3), 3),
        params("mmtb", 1, non_divisor(n, 5), 3),
        // The whole grid on the device.
        params("incore", 3, n, 1),
    ]
}

/// What the runtime should report for these parameters.
pub fn expected_report(p: &Params, n: u64, steps: u64) -> (String, u64, u64, u64) {
    let schedule = p.schedule.clone().expect("schedule set");
    let k = match schedule.as_str() {
        "naive" => 1,
        "incore" => steps.max(1),
        _ => p.k.expect("k set").min(steps.max(1)),
    };
    let b = if schedule == "incore" {
        n
    } else {
        p.chunk.expect("chunk set").min(n)
    };
    (schedule, k, b, n.div_ceil(b))
}

pub fn report_of(got: &Execution) -> (String, u64, u64, u64) {
    let get = |key: &str| {
        got.report
            .get(key)
            .unwrap_or_else(|| panic!("no `{key}` in the report:\n{}", got.stderr))
            .clone()
    };
    let num = |key: &str| get(key).parse::<u64>().expect("a number in the report");
    (get("schedule"), num("k"), num("b"), num("chunks"))
}

/// The `warning:` lines of a compiler's output.
pub fn warnings(output: &str) -> Vec<&str> {
    output.lines().filter(|l| l.contains("warning:")).collect()
}

/// Which runs of the sweep a check makes, and macro values per program.
#[derive(Clone, Copy)]
pub struct Subset<'a> {
    /// Whether to run entry `i` of [`sweep`] at `steps` steps.
    pub keep: &'a (dyn Fn(u64, usize) -> bool + Sync),
    /// `NAME=VALUE` macro definitions for both builds of a program (by file name).
    pub defines: &'a (dyn Fn(&str) -> Vec<String> + Sync),
}

/// Every run of the sweep, no macro values.
pub const EVERY_RUN: Subset<'static> = Subset {
    keep: &|_, _| true,
    defines: &|_| Vec::new(),
};

/// Build one program's reference and translation once, then run the sweep.
/// Returns the number of translated runs.
pub fn check_program(
    tc: &Toolchain,
    path: &Path,
    target: Target,
    flavour: Flavour,
    env: &[(String, String)],
) -> usize {
    check_program_with(tc, path, target, flavour, env, EVERY_RUN)
}

/// [`check_program`] for the runs `subset` keeps, with its macro values.
pub fn check_program_with(
    tc: &Toolchain,
    path: &Path,
    target: Target,
    flavour: Flavour,
    env: &[(String, String)],
    subset: Subset<'_>,
) -> usize {
    check_program_steps(tc, path, target, flavour, env, subset, &STEP_COUNTS)
}

/// [`check_program_with`] at the step counts `step_counts` (and zero).
pub fn check_program_steps(
    tc: &Toolchain,
    path: &Path,
    target: Target,
    flavour: Flavour,
    env: &[(String, String)],
    subset: Subset<'_>,
    step_counts: &[u64],
) -> usize {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut tc = tc.clone();
    tc.defines.extend((subset.defines)(&name));
    let tc = &tc;
    let compiled = compile(path);
    let tc = &fixture_flags(path).toolchain(tc);
    let dir = tempfile::tempdir().expect("scratch folder");
    let reference = build_ok(
        tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    assert!(
        reference.warnings.trim().is_empty(),
        "{name}: the sequential program does not build warning-free:\n{}",
        reference.warnings
    );
    let translated = build_ok(
        tc,
        &driver::translate(&compiled, target).expect("translates"),
        dir.path(),
        "translated",
        flavour,
    );
    assert!(
        warnings(&translated.warnings).is_empty(),
        "{name}: the translated program builds with warnings:\n{}",
        translated.warnings
    );
    let ref_dump = dir.path().join("reference.dump");
    let got_dump = dir.path().join("translated.dump");
    let mut runs = 0;
    for &steps in step_counts {
        let seq = run_ok(&reference.binary, steps, &Params::default(), &ref_dump);
        assert!(
            !seq.dump.is_empty(),
            "{name}: the reference dumped no array"
        );
        let n = seq.dump[0].dims[0].1 as u64;
        let sweep = sweep(n, steps);
        // The sweep covers the cases DESIGN.md §6 names, for this extent.
        assert!(sweep.iter().any(|p| !n.is_multiple_of(p.chunk.unwrap())));
        assert!(sweep.iter().any(|p| p.chunk.unwrap() >= n));
        assert!(sweep.iter().any(|p| p.k.unwrap() > steps));
        assert!(
            sweep
                .iter()
                .any(|p| p.k.unwrap() > 1 && !steps.is_multiple_of(p.k.unwrap()))
        );
        for (i, p) in sweep.iter().enumerate() {
            if !(subset.keep)(steps, i) {
                continue;
            }
            let got = run_with(&translated.binary, steps, p, env, &got_dump);
            let what = format!(
                "{name}: {steps} steps, TPACE_SCHEDULE={} TPACE_K={} TPACE_CHUNK={} TPACE_STREAMS={}",
                p.schedule.as_deref().unwrap(),
                p.k.unwrap(),
                p.chunk.unwrap(),
                p.streams.unwrap()
            );
            assert_eq!(
                report_of(&got),
                expected_report(p, n, steps),
                "{what}: the program did not take the parameters (schedule, k, b, chunks)"
            );
            assert_eq!(
                first_difference(&seq.dump, &got.dump),
                None,
                "{what}: the translation differs from the sequential program"
            );
            assert_eq!(
                unread_dumped(&got),
                unread_planned(&compiled),
                "{what}: the arrays dumped as not brought back are not those the plan skips"
            );
            // Printed reduction results differ in their last digits (summation order).
            assert_eq!(
                printed_difference(&seq.stdout, &got.stdout, FLOAT_RTOL),
                None,
                "{what}: the program's own output differs"
            );
            runs += 1;
        }
    }
    // Zero steps: every schedule, and the model's default plan, leave everything as
    // the sequential program does (no block runs, nothing may be touched).
    let seq = run_ok(&reference.binary, 0, &Params::default(), &ref_dump);
    for p in [
        params("naive", 1, 7, 2),
        params("mm", 3, 7, 2),
        params("mmtb", 3, 7, 3),
        params("incore", 1, 1, 1),
        Params::default(),
    ] {
        let got = run_with(&translated.binary, 0, &p, env, &got_dump);
        assert_eq!(
            first_difference(&seq.dump, &got.dump),
            None,
            "{name}: 0 steps, {p:?}: the translation differs from the sequential program"
        );
        assert_eq!(
            unread_dumped(&got),
            unread_planned(&compiled),
            "{name}: 0 steps"
        );
        assert_eq!(
            printed_difference(&seq.stdout, &got.stdout, FLOAT_RTOL),
            None,
            "{name}: 0 steps, {p:?}: the program's own output differs"
        );
        runs += 1;
    }
    runs
}

/// The names of the arrays a run dumped as not brought back (`unread`), sorted, once each.
pub fn unread_dumped(got: &Execution) -> Vec<String> {
    let mut names: Vec<String> = got
        .dump
        .iter()
        .filter(|a| a.unread)
        .map(|a| a.name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The names of the arrays whose final download some pipeline's plan skips, sorted,
/// once each: only these may be left out of the comparison.
pub fn unread_planned(compiled: &Compiled) -> Vec<String> {
    let mut names: Vec<String> = compiled
        .units()
        .flat_map(|u| {
            u.pipeline
                .arrays
                .iter()
                .zip(&u.plan.unread)
                .filter(|(_, why)| why.is_some())
                .map(|(a, _)| a.display_name())
                .collect::<Vec<_>>()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Check every program in parallel (one per core); panics with every failure.
pub fn check_all(target: Target, flavour: Flavour, env: &[(String, String)]) {
    check_all_with(target, flavour, env, EVERY_RUN);
}

/// [`check_all`] for the runs `subset` keeps, with its macro values.
pub fn check_all_with(
    target: Target,
    flavour: Flavour,
    env: &[(String, String)],
    subset: Subset<'_>,
) {
    let files = programs();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in ["jacobi2d.c", "heat1d.c", "heat3d.c", "jacobi2d_flat.c"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not found in {names:?}"
        );
    }
    let tc = Toolchain::detect();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers.min(files.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(path) = files.get(i) else { break };
                    let start = Instant::now();
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        check_program_with(&tc, path, target, flavour, env, subset)
                    }));
                    match outcome {
                        Ok(runs) => eprintln!(
                            "{}: {runs} translated runs identical ({:.1} s)",
                            names[i],
                            start.elapsed().as_secs_f64()
                        ),
                        Err(e) => {
                            let msg = e
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_else(|| "panic".into());
                            failures.lock().unwrap().push(msg);
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// jacobi2d's translation for `target` with `from` replaced by `to` (which the
/// runtime must contain exactly once).
pub fn broken_jacobi(target: Target, from: &str, to: &str) -> Output {
    broken_example("jacobi2d.c", target, from, to)
}

/// `examples/{name}`, or `name` itself (from the crate's root) when it holds a `/`.
pub fn program_path(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if name.contains('/') {
        root.join(name)
    } else {
        root.join("examples").join(name)
    }
}

/// The translation of `examples/{name}` (or of the file `name`, see
/// [`program_path`]) for `target`.
pub fn translated_example(name: &str, target: Target) -> Output {
    driver::translate(&compile(&program_path(name)), target).expect("translates")
}

/// The translation of `examples/{name}` for `target` with `from` replaced by `to`
/// (which it must contain exactly once).
pub fn broken_example(name: &str, target: Target, from: &str, to: &str) -> Output {
    replace_once(&translated_example(name, target), from, to, name)
}

/// The sequential jacobi2d, built in `dir` and run for `steps` steps.
pub fn jacobi_reference(tc: &Toolchain, dir: &Path, steps: u64) -> Execution {
    example_reference("jacobi2d.c", tc, dir, steps)
}

/// The sequential run of `examples/{name}` (or of the file `name`, see
/// [`program_path`]) for `steps` steps, built in `dir`.
pub fn example_reference(name: &str, tc: &Toolchain, dir: &Path, steps: u64) -> Execution {
    let compiled = compile(&program_path(name));
    let reference = build_ok(
        tc,
        &reference_of(&compiled),
        dir,
        "reference",
        Flavour::Reference,
    );
    run_ok(
        &reference.binary,
        steps,
        &Params::default(),
        &dir.join("ref.dump"),
    )
}

/// The reductions fixture's translation for `target` with `from` replaced by `to`
/// (exactly once), built in `dir`; and the sequential program's run of 13 steps.
pub fn broken_reduce2d(
    tc: &Toolchain,
    dir: &Path,
    target: Target,
    flavour: Flavour,
    from: &str,
    to: &str,
) -> (Execution, Built) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reductions/reduce2d.c");
    let compiled = compile(&path);
    let reference = build_ok(
        tc,
        &reference_of(&compiled),
        dir,
        "reference",
        Flavour::Reference,
    );
    let seq = run_ok(
        &reference.binary,
        13,
        &Params::default(),
        &dir.join("ref.dump"),
    );
    let out = driver::translate(&compiled, target).expect("translates");
    let built = build_ok(
        tc,
        &replace_once(&out, from, to, "reduce2d.c"),
        dir,
        "broken",
        flavour,
    );
    (seq, built)
}

/// Break the reductions on purpose (count ghost planes under mm, or apply each
/// step's result to the step before) and check that the comparison notices.
pub fn check_reduction_breaks(target: Target, flavour: Flavour, env: &[(String, String)]) {
    let tc = Toolchain::detect();
    let breaks = [
        (
            "mm_counts_ghost_planes",
            "if (p->schedule == TPACE_MM || p->schedule == TPACE_NAIVE) {",
            "if (0) {",
            "total",
        ),
        (
            "result_of_the_wrong_step",
            "tp_in.tp_reduced1[tp_step] ? top : tp_in.tp_reduced1[tp_step])",
            "tp_in.tp_reduced1[tp_step > 0 ? tp_step - 1 : 0] ? top : tp_in.tp_reduced1[tp_step > 0 ? tp_step - 1 : 0])",
            "top",
        ),
    ];
    for (name, from, to, var) in breaks {
        let dir = tempfile::tempdir().expect("scratch folder");
        let (seq, built) = broken_reduce2d(&tc, dir.path(), target, flavour, from, to);
        let got = run_with(
            &built.binary,
            13,
            &params("mm", 3, 7, 2),
            env,
            &dir.path().join("got.dump"),
        );
        let diff = first_difference(&seq.dump, &got.dump)
            .unwrap_or_else(|| panic!("{name}: the broken reduction was not caught"));
        eprintln!("{name}: caught, {diff}");
        assert!(
            diff.starts_with(&format!("reduction `{var}`")),
            "{name}: `{diff}` does not name the reduction `{var}`"
        );
    }
}

/// Check that the fixture lists each used component as an array of its own.
pub fn assert_components_listed(path: &Path) {
    let compiled = compile(path);
    let names: Vec<String> = compiled.program.pipelines[0]
        .arrays
        .iter()
        .map(|a| a.display_name())
        .collect();
    for c in [
        "a[0]", "a[1]", "a[2]", "a[3]", "b[0]", "b[2]", "c[0]", "c[2]",
    ] {
        assert!(names.iter().any(|n| n == c), "{c} not listed in {names:?}");
    }
    assert!(!names.iter().any(|n| n == "a"), "{names:?}");
}
