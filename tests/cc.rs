//! `tpace cc`, the compiler driver for build systems: a project of three C files
//! and a header (tests/fixtures/cc: a time loop in heat.c, another of the same
//! shape in cool.c, main.c plain C) built by its own Makefile with `CC='tpace cc --target T'` runs bit for bit as
//! the same Makefile's build with `CC=gcc`, over the out-of-core parameter sweep,
//! on OpenACC (gcc), OpenCL (PoCL) and the CUDA emulation; nvcc compiles and links
//! the CUDA build; CMake builds it too; errors are said in words and leave no object.
//! make and cmake are needed: without them these tests say so and pass, except in
//! CI (`CI` set), where they fail.

mod common;

use common::{STEP_COUNTS, sweep};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TPACE: &str = env!("CARGO_BIN_EXE_tpace");

/// Whether `tool` answers `--version`; in CI its absence is a failure.
fn have(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} not found in CI: .ci/run installs it"
        );
        eprintln!("{tool} not found: this test did not run here");
    }
    found
}

/// nvcc from `$NVCC` or the PATH (required in CI).
fn nvcc() -> Option<String> {
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    have(&nvcc).then_some(nvcc)
}

/// A copy of the fixture project in a scratch folder.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("scratch folder");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cc");
    for entry in std::fs::read_dir(&from).expect("the fixture project") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).expect("copy");
    }
    dir
}

/// `tpace cc` with these options, as make's `CC`.
fn tpace_cc(options: &str) -> String {
    format!("{} cc {options}", tpace::text::shell_word(TPACE))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `make CC=...` in `dir`; what it printed.
fn make(dir: &Path, cc: &str, extra: &[&str]) -> String {
    let out = Command::new("make")
        .arg(format!("CC={cc}"))
        .args(extra)
        .current_dir(dir)
        .env_remove("TPACE_CC")
        .output()
        .expect("run make");
    assert!(out.status.success(), "make CC={cc} failed:\n{}", text(&out));
    text(&out)
}

/// Run the built program for `steps` steps with `env`: standard output and error.
fn run(binary: &Path, steps: u64, env: &[(String, String)]) -> (String, String) {
    let out = Command::new(binary)
        .arg(steps.to_string())
        .envs(env.iter().cloned())
        .env("TPACE_EMU_SEED", "5")
        .output()
        .expect("run the program");
    assert!(
        out.status.success(),
        "{} {steps} {env:?}:\n{}",
        binary.display(),
        text(&out)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What the project prints when built with gcc, per step count.
fn reference() -> Vec<String> {
    let dir = project();
    make(dir.path(), "gcc", &[]);
    STEP_COUNTS
        .iter()
        .map(|s| run(&dir.path().join("heat"), *s, &[]).0)
        .collect()
}

/// The program in `dir` prints what the gcc build printed, for every step count
/// and every run of the parameter sweep (cut axis NX = 45), each run reporting
/// the schedule it was given twice: both time loops ran translated.
fn check_runs(binary: &Path, expected: &[String], what: &str) -> usize {
    let mut runs = 0;
    for (steps, want) in STEP_COUNTS.iter().zip(expected) {
        for p in sweep(45, *steps) {
            let (stdout, stderr) = run(binary, *steps, &p.env());
            let schedule = p.schedule.clone().unwrap();
            assert_eq!(
                stderr.matches(&format!("schedule={schedule} ")).count(),
                2,
                "{what}, {steps} steps, {p:?}: the translated time loops did not report:\n{stderr}"
            );
            assert_eq!(&stdout, want, "{what}, {steps} steps, {p:?}");
            runs += 1;
        }
    }
    runs
}

/// `make CC='tpace cc OPTIONS'` builds the project warning-free and it runs bit
/// for bit as the gcc build does.
fn check_make(options: &str) {
    if !have("make") {
        return;
    }
    let expected = reference();
    let dir = project();
    let said = make(dir.path(), &tpace_cc(options), &[]);
    let warnings: Vec<&str> = said.lines().filter(|l| l.contains("warning")).collect();
    assert!(warnings.is_empty(), "{options}: {warnings:?}\n{said}");
    let runs = check_runs(&dir.path().join("heat"), &expected, options);
    eprintln!("{options}: {runs} runs identical to the gcc build");
}

#[test]
fn make_builds_for_openacc_bit_for_bit() {
    check_make("--target openacc");
}

#[test]
fn make_builds_for_opencl_bit_for_bit() {
    check_make("--target opencl");
}

#[test]
fn make_builds_for_the_cuda_emulation_bit_for_bit() {
    check_make("--target cuda --emulate");
}

/// With real nvcc (no GPU here): `make CC='tpace cc --target cuda'` compiles each
/// translated file's kernels and host program into one object (both halves in
/// it, only the program's own function global), the others with gcc, links with
/// nvcc, without a warning; the program says in words that there is no GPU to
/// run on.
#[test]
fn make_builds_for_cuda_with_nvcc() {
    let Some(nvcc) = nvcc() else { return };
    if !have("make") {
        return;
    }
    let dir = project();
    let said = make(
        dir.path(),
        &tpace_cc("--target cuda --cuda-arch sm_90 --show-commands"),
        &["CFLAGS=-O2 -Wall -Wextra"],
    );
    assert!(!said.contains("warning"), "the build has warnings:\n{said}");
    assert!(
        said.contains(&format!("{nvcc} -arch=sm_90 --fmad=false")),
        "{said}"
    );
    for (object, function) in [("heat.o", "heat_steps"), ("cool.o", "cool_steps")] {
        let symbols = Command::new("nm")
            .arg(dir.path().join(object))
            .output()
            .expect("run nm");
        let symbols = String::from_utf8_lossy(&symbols.stdout);
        // The host program's function, the kernel's launcher and its stub, in one object.
        assert!(symbols.contains(&format!(" T {function}\n")), "{symbols}");
        assert!(symbols.contains(" t tpace_p1_sweep1\n"), "{symbols}");
        assert!(symbols.contains("tpace_p1_sweep1_kernel"), "{symbols}");
        let strong: Vec<&str> = symbols
            .lines()
            .filter(|l| l.contains(" T ") || l.contains(" D ") || l.contains(" B "))
            .collect();
        assert_eq!(strong.len(), 1, "{object}: {strong:?}");
    }
    let out = Command::new(dir.path().join("heat"))
        .arg("3")
        .output()
        .expect("run the CUDA program");
    assert!(!out.status.success());
    assert!(text(&out).contains("CUDA"), "{}", text(&out));
}

/// CMake with `CC='tpace cc --target openacc'` identifies the compiler (gcc
/// underneath), builds the project and the program runs bit for bit; so does
/// `-DCMAKE_C_COMPILER=tpace -DCMAKE_C_COMPILER_ARG1='cc --target cuda --emulate'`.
#[test]
fn cmake_builds_with_tpace_cc() {
    if !have("cmake") || !have("make") {
        return;
    }
    let expected = reference();
    let dir = project();
    let ways: [(&str, Vec<String>, Option<String>); 2] = [
        ("openacc", vec![], Some(tpace_cc("--target openacc"))),
        (
            "cuda-emulation",
            vec![
                format!("-DCMAKE_C_COMPILER={TPACE}"),
                "-DCMAKE_C_COMPILER_ARG1=cc --target cuda --emulate".to_string(),
            ],
            None,
        ),
    ];
    for (name, defines, cc) in ways {
        let build = dir.path().join(name);
        let configure: Vec<String> = ["-S", ".", "-B", name]
            .iter()
            .map(|s| s.to_string())
            .chain(defines)
            .collect();
        for step in [configure, vec!["--build".to_string(), name.to_string()]] {
            let mut cmd = Command::new("cmake");
            cmd.args(&step).current_dir(dir.path()).env_remove("CC");
            if let Some(cc) = &cc {
                cmd.env("CC", cc);
            }
            let out = cmd.output().expect("run cmake");
            assert!(out.status.success(), "cmake {step:?}:\n{}", text(&out));
        }
        let runs = check_runs(&build.join("heat"), &expected, &format!("cmake, {name}"));
        assert!(runs > 10);
    }
}

/// heat.o's dependency file names heat.h (from the user's source, not the
/// translation), so a changed header rebuilds it.
#[test]
fn a_translated_file_depends_on_its_headers() {
    if !have("make") {
        return;
    }
    let dir = project();
    let cc = tpace_cc("--target openacc");
    make(dir.path(), &cc, &[]);
    let deps = std::fs::read_to_string(dir.path().join("heat.d")).expect("heat.d written");
    assert!(deps.starts_with("heat.o: heat.c heat.h"), "{deps}");
    assert!(deps.contains("\nheat.h:"), "-MP: {deps}");
    let up_to_date = |dir: &Path| {
        Command::new("make")
            .args(["-q", &format!("CC={cc}")])
            .current_dir(dir)
            .status()
            .expect("make -q")
            .success()
    };
    assert!(up_to_date(dir.path()));
    // The header edited, its time set past the object's (by a minute: newer on any file
    // system's clock resolution, with no waiting).
    let header = dir.path().join("heat.h");
    std::fs::write(&header, std::fs::read_to_string(&header).unwrap() + "\n").unwrap();
    let built = std::fs::metadata(dir.path().join("heat.o"))
        .and_then(|m| m.modified())
        .expect("heat.o's time");
    std::fs::File::options()
        .write(true)
        .open(&header)
        .and_then(|f| f.set_modified(built + std::time::Duration::from_secs(60)))
        .expect("set heat.h's time");
    assert!(!up_to_date(dir.path()));
}

fn tpace_cc_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(TPACE)
        .arg("cc")
        .args(args)
        .current_dir(dir)
        .env_remove("TPACE_CC")
        .output()
        .expect("run tpace cc")
}

/// A file without directives, and a question, go to the C compiler as they are.
#[test]
fn other_files_and_questions_go_to_the_c_compiler_untouched() {
    let dir = project();
    let out = tpace_cc_in(
        dir.path(),
        &[
            "--target",
            "cuda",
            "--show-commands",
            "-DX=1",
            "-O2",
            "-c",
            "main.c",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "tpace cc: gcc -DX=1 -O2 -c main.c\n"
    );
    assert!(dir.path().join("main.o").exists());
    let ours = tpace_cc_in(dir.path(), &["--target", "cuda", "--version"]);
    let gcc = Command::new("gcc").arg("--version").output().unwrap();
    assert_eq!(ours.stdout, gcc.stdout);
    let help = tpace_cc_in(dir.path(), &["--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("make CC='tpace cc --target cuda'"));
}

/// Errors in words: an unknown target; a translation error shows the usual
/// diagnostic (file:line:col, the line) and leaves no object, not even an old one.
#[test]
fn errors_are_said_and_leave_no_object() {
    let dir = project();
    let out = tpace_cc_in(dir.path(), &["--target", "vulkan", "-c", "heat.c"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("unknown --target `vulkan`: give openacc, cuda or opencl"),
        "{}",
        text(&out)
    );
    let source = std::fs::read_to_string(dir.path().join("heat.c")).unwrap();
    std::fs::write(
        dir.path().join("heat.c"),
        source.replace("halo([1:1][1:1])", "halo([1:1][1:1]) shape(2)"),
    )
    .unwrap();
    let object: PathBuf = dir.path().join("heat.o");
    std::fs::write(&object, "an old object").unwrap();
    for target in ["openacc", "cuda"] {
        let out = tpace_cc_in(
            dir.path(),
            &["--target", target, "-c", "heat.c", "-o", "heat.o"],
        );
        let said = text(&out);
        assert!(!out.status.success(), "{said}");
        assert!(said.contains("error: "), "{said}");
        assert!(said.contains("heat.c:8:"), "{said}");
        assert!(said.contains("shape(2)"), "{said}");
        assert!(!object.exists(), "{target}: an object is left");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("tpace-cc"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
