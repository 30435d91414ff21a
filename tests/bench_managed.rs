//! The managed-memory baseline of the bench (`bench/managed/jacobi2d_managed.cu`,
//! what a user might write instead of tpace) computes what examples/jacobi2d.c
//! computes, bit for bit. No GPU here: the .cu file is built as C++ by g++ against
//! `bench/managed/cpu_shim` (managed memory as host memory, a launch as a loop over
//! blocks and threads), which checks its arithmetic, its swap of the two arrays, its
//! row loop past the grid's y limit (made small), its printed line and its dump.
//! bench/gpu.sh's part `managed` makes the same check on the GPU.

use std::path::{Path, PathBuf};
use std::process::Command;
use tpace::driver::dump;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Compile `src` (C or the managed program's C++) with `cc` and the given flags.
fn build(cc: &str, args: &[&str], src: &Path, out: &Path) {
    let o = Command::new(cc)
        .args(args)
        .arg(src)
        .arg("-o")
        .arg(out)
        .arg("-lm")
        .output()
        .expect("the compiler runs");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{cc} {src:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Run `bin steps [mode]` with TPACE_DUMP; the dump's `a`, stdout and stderr.
fn run(bin: &Path, steps: u32, mode: Option<&str>, dump_path: &Path) -> (Vec<u8>, String, String) {
    let _ = std::fs::remove_file(dump_path);
    let mut c = Command::new(bin);
    c.arg(steps.to_string()).env("TPACE_DUMP", dump_path);
    if let Some(m) = mode {
        c.arg(m);
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "{bin:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let arrays = dump::read(dump_path).unwrap();
    let a = arrays
        .iter()
        .find(|d| d.name == "a")
        .unwrap_or_else(|| panic!("no `a` in the dump of {bin:?}"));
    (
        a.data.clone(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn the_managed_baseline_matches_the_sequential_jacobi_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    // The launch syntax C++ lacks, rewritten as the shim's header says.
    let cu = std::fs::read_to_string(root().join("bench/managed/jacobi2d_managed.cu")).unwrap();
    let launch = "jacobi_step<<<grid, block>>>(dst, src)";
    assert_eq!(
        cu.matches(launch).count(),
        1,
        "the launch changed: update this test"
    );
    let cpp = dir.path().join("managed.cpp");
    std::fs::write(
        &cpp,
        cu.replace(
            launch,
            "TPACE_SHIM_LAUNCH(jacobi_step, grid, block, dst, src)",
        ),
    )
    .unwrap();
    let shim = format!("-I{}", root().join("bench/managed/cpu_shim").display());
    // The sequential program, instrumented to dump its arrays as `tpace run` builds it.
    let compiled = tpace::driver::compile_file(&root().join("examples/jacobi2d.c")).unwrap();
    let example = dir.path().join("reference.c");
    std::fs::write(&example, tpace::lower::reference::emit(&compiled.program)).unwrap();
    // Grids with one interior row or column, odd extents, a row loop that goes round
    // several times (GRID_Y_MAX 3) and one that does not.
    for (x, y, grid_y) in [(37, 23, 3), (3, 41, 3), (29, 3, 65535), (64, 300, 65535)] {
        let defs = [format!("-DX={x}"), format!("-DY={y}")];
        let reference = dir.path().join(format!("ref-{x}x{y}"));
        let mut args: Vec<&str> = vec![
            "-O2",
            "-std=gnu11",
            "-Wall",
            "-Wextra",
            "-Wno-unknown-pragmas",
        ];
        args.extend(defs.iter().map(String::as_str));
        build("gcc", &args, &example, &reference);
        let managed: PathBuf = dir.path().join(format!("managed-{x}x{y}"));
        let gy = format!("-DGRID_Y_MAX={grid_y}");
        let mut args: Vec<&str> = vec![
            "-O2",
            "-ffp-contract=off",
            "-Wall",
            "-Wextra",
            "-x",
            "c++",
            &shim,
            &gy,
        ];
        args.extend(defs.iter().map(String::as_str));
        build("g++", &args, &cpp, &managed);
        for steps in [0, 1, 7, 13] {
            let (want, want_out, _) = run(&reference, steps, None, &dir.path().join("r.dump"));
            for mode in ["plain", "prefetch"] {
                let (got, out, err) = run(&managed, steps, Some(mode), &dir.path().join("m.dump"));
                let what = format!("{x} x {y}, {steps} steps, {mode}");
                assert!(
                    got == want,
                    "{what}: `a` differs from the sequential program's"
                );
                assert_eq!(out, want_out, "{what}");
                let line = err.lines().find(|l| l.starts_with("managed: ")).unwrap();
                for key in [
                    format!("mode={mode} "),
                    format!("steps={steps} "),
                    format!("X={x} Y={y} "),
                    " seconds=".into(),
                    " glups=".into(),
                ] {
                    assert!(line.contains(&key), "{what}: `{key}` missing in {line}");
                }
            }
        }
    }
    // The check can fail: one step fewer is another answer.
    let (x, y) = (37, 23);
    let (want, _, _) = run(
        &dir.path().join(format!("ref-{x}x{y}")),
        7,
        None,
        &dir.path().join("r.dump"),
    );
    let (got, _, _) = run(
        &dir.path().join(format!("managed-{x}x{y}")),
        6,
        Some("plain"),
        &dir.path().join("m.dump"),
    );
    assert!(got != want);
}

#[test]
fn the_managed_baseline_refuses_a_mode_it_does_not_know() {
    let dir = tempfile::tempdir().unwrap();
    let cu = std::fs::read_to_string(root().join("bench/managed/jacobi2d_managed.cu")).unwrap();
    let cpp = dir.path().join("managed.cpp");
    std::fs::write(
        &cpp,
        cu.replace(
            "jacobi_step<<<grid, block>>>(dst, src)",
            "TPACE_SHIM_LAUNCH(jacobi_step, grid, block, dst, src)",
        ),
    )
    .unwrap();
    let bin = dir.path().join("managed");
    let shim = format!("-I{}", root().join("bench/managed/cpu_shim").display());
    build("g++", &["-O2", "-x", "c++", &shim], &cpp, &bin);
    let o = Command::new(&bin).args(["3", "fast"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("usage:"));
}
