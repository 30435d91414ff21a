//! What `tpace translate -o` leaves on disk: files with the mode every compiler
//! gives its output (0666 less the umask), both of CUDA's files so, and on an
//! error nothing at all: no file created, none half written, an existing output
//! left as it was.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// `tpace ARGS` under `umask`, run by the shell in `dir`.
fn tpace_with_umask(dir: &Path, umask: u32, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask:03o} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_tpace"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run tpace")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list the folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A scratch folder with `good.c` (examples/heat1d.c) and `bad.c` (the same
/// program reading outside its declared halo).
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("scratch folder");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let good = std::fs::read_to_string(root.join("examples/heat1d.c")).expect("heat1d.c");
    let from = "u[i + 1]);";
    assert_eq!(
        good.matches(from).count(),
        1,
        "heat1d.c changed: update this test"
    );
    std::fs::write(dir.path().join("good.c"), &good).expect("good.c");
    std::fs::write(dir.path().join("bad.c"), good.replace(from, "u[i + 2]);")).expect("bad.c");
    dir
}

#[test]
fn translated_files_have_mode_0666_less_the_umask() {
    let dir = scratch();
    for umask in [0o022, 0o077, 0o002, 0o027] {
        let want = 0o666 & !umask;
        let c = format!("acc{umask:o}.c");
        let out = tpace_with_umask(dir.path(), umask, &["translate", "good.c", "-o", &c]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            mode(&dir.path().join(&c)),
            want,
            "{c} under umask {umask:03o}"
        );
        let cu = format!("cuda{umask:o}.cu");
        let out = tpace_with_umask(
            dir.path(),
            umask,
            &["translate", "--target", "cuda", "good.c", "-o", &cu],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for f in [cu.clone(), format!("cuda{umask:o}.host.c")] {
            assert_eq!(
                mode(&dir.path().join(&f)),
                want,
                "{f} under umask {umask:03o}"
            );
        }
    }
    // An output written over keeps no trace of the old file's mode: it is a new file.
    let old = dir.path().join("acc22.c");
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = tpace_with_umask(dir.path(), 0o022, &["translate", "good.c", "-o", "acc22.c"]);
    assert!(out.status.success());
    assert_eq!(mode(&old), 0o644);
    // And no temporary file is left behind.
    assert!(
        listing(dir.path()).iter().all(|n| !n.starts_with(".tmp")),
        "{:?}",
        listing(dir.path())
    );
}

#[test]
fn a_refused_cuda_translation_writes_neither_file() {
    let dir = scratch();
    let before = listing(dir.path());
    let out = tpace_with_umask(
        dir.path(),
        0o022,
        &["translate", "--target", "cuda", "bad.c", "-o", "out.cu"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bad.c:") && stderr.contains("halo"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    assert_eq!(listing(dir.path()), before, "files were written");
}

#[test]
fn a_refused_cuda_translation_leaves_existing_outputs_alone() {
    let dir = scratch();
    let old_cu = "/* the user's previous kernels */\n";
    let old_host = "/* the user's previous host program */\n";
    std::fs::write(dir.path().join("out.cu"), old_cu).unwrap();
    std::fs::write(dir.path().join("out.host.c"), old_host).unwrap();
    let out = tpace_with_umask(
        dir.path(),
        0o022,
        &["translate", "--target", "cuda", "bad.c", "-o", "out.cu"],
    );
    assert_eq!(out.status.code(), Some(1));
    let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap();
    assert_eq!(read("out.cu"), old_cu);
    assert_eq!(read("out.host.c"), old_host);
}

/// A translation that can not put one of its files in place (there is a folder
/// of that name) writes neither: the host program is not left beside a stale
/// or missing kernel file.
#[test]
fn an_output_that_can_not_be_written_leaves_the_other_file_unwritten() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("k.cu")).unwrap();
    let before = listing(dir.path());
    let out = tpace_with_umask(
        dir.path(),
        0o022,
        &["translate", "--target", "cuda", "good.c", "-o", "k.cu"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("k.cu") && stderr.contains("folder"),
        "{stderr}"
    );
    assert_eq!(listing(dir.path()), before, "a file was written");
    // The other way round: the host program's name is the folder.
    std::fs::create_dir(dir.path().join("h.host.c")).unwrap();
    std::fs::write(dir.path().join("h.cu"), "old\n").unwrap();
    let before = listing(dir.path());
    let out = tpace_with_umask(
        dir.path(),
        0o022,
        &["translate", "--target", "cuda", "good.c", "-o", "h.cu"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(listing(dir.path()), before);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("h.cu")).unwrap(),
        "old\n"
    );
}

/// The build line names the files as a shell reads them, quoted where a path
/// has a space.
#[test]
fn the_build_line_quotes_a_path_with_a_space() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("my out")).unwrap();
    let out = tpace_with_umask(
        dir.path(),
        0o022,
        &[
            "translate",
            "--target",
            "cuda",
            "good.c",
            "-o",
            "my out/p.cu",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "build: nvcc -O3 -arch=sm_90 --fmad=false 'my out/p.cu' 'my out/p.host.c' -o 'my out/p'"
        ),
        "{stderr}"
    );
    assert_eq!(listing(&dir.path().join("my out")), ["p.cu", "p.host.c"]);
}
