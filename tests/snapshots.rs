//! Snapshots of what the `tpace` binary prints for every example: the
//! translations (`tpace translate`, OpenACC and CUDA) and the analysis summary
//! (`tpace check`), stored under tests/snapshots/.
//!
//! A change to the generated code shows up here as a diff to review. After a
//! deliberate change, accept the new output with `cargo insta review` (or
//! `INSTA_UPDATE=always cargo test --test snapshots`) and commit the `.snap`
//! files. CI runs with `CI=true` and `INSTA_UPDATE=no`: a changed or missing
//! snapshot fails there and nothing is written.

use std::path::Path;
use std::process::Command;

/// The examples, as paths relative to the repository root (so the output, which
/// names its input file, is the same in every clone).
fn examples() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(root.join("examples"))
        .expect("examples folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".c"))
        .collect();
    names.sort();
    for expected in ["heat1d.c", "heat3d.c", "jacobi2d.c"] {
        assert!(names.iter().any(|n| n == expected), "{expected} missing");
    }
    names.into_iter().map(|n| format!("examples/{n}")).collect()
}

/// Run `tpace ARGS` in the repository root; its standard output, which must succeed.
fn tpace(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run tpace");
    assert!(
        out.status.success(),
        "tpace {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The snapshot name for `command` on `examples/NAME.c`: `COMMAND_NAME`.
fn name(command: &str, example: &str) -> String {
    let stem = Path::new(example)
        .file_stem()
        .expect("a file name")
        .to_string_lossy();
    format!("{command}_{stem}")
}

#[test]
fn translate_output_of_every_example() {
    for example in examples() {
        let text = tpace(&["translate", &example]);
        insta::with_settings!({
            description => format!("tpace translate {example}"),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name("translate", &example), text);
        });
    }
}

#[test]
fn cuda_translation_of_every_example() {
    for example in examples() {
        let text = tpace(&["translate", "--target", "cuda", &example]);
        insta::with_settings!({
            description => format!("tpace translate --target cuda {example}"),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name("translate_cuda", &example), text);
        });
    }
}

#[test]
fn check_output_of_every_example() {
    for example in examples() {
        let text = tpace(&["check", &example]);
        insta::with_settings!({
            description => format!("tpace check {example}"),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name("check", &example), text);
        });
    }
}
