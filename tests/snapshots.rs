//! Snapshots of what the `tpace` binary prints for every example: the
//! translations (`tpace translate`, OpenACC and CUDA's two files) and the
//! analysis summary (`tpace check`), stored under tests/snapshots/. The
//! runtime the translator ships is the same in every translation: the
//! snapshots show a line in its place, so they hold what is the program's own.
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

/// `text` with every runtime part the translator ships replaced by one line naming it.
fn without_runtime(text: &str) -> String {
    let parts = [
        ("runtime/tpace.h", tpace::runtime::TYPES),
        ("runtime/base.h", tpace::runtime::BASE),
        ("runtime/model.h", tpace::runtime::MODEL),
        ("runtime/schedule.h", tpace::runtime::SCHEDULE),
        ("runtime/scale.h", tpace::runtime::SCALE),
        ("runtime/openacc.h", tpace::runtime::OPENACC),
        ("runtime/cuda_emulation.cuh", tpace::runtime::CUDA_EMULATION),
        ("runtime/cuda.cuh", tpace::runtime::CUDA),
        ("runtime/opencl.h", tpace::runtime::OPENCL),
    ];
    let mut out = text.to_string();
    for (name, part) in parts {
        out = out.replace(part, &format!("/* [the runtime's {name}, as shipped] */\n"));
    }
    // The bundled profiles' figures, the same in every translation (profiles/*.toml).
    out.replace(
        &tpace::model::cmodel::machines_table(),
        "/* [the bundled machine profiles, as profiles/ gives them] */\n",
    )
}

/// `tpace translate --target TARGET EXAMPLE -o DIR/out.EXT` and the files it wrote.
fn translate_files(target: &str, example: &str) -> String {
    let dir = tempfile::tempdir().expect("scratch folder");
    let ext = if target == "cuda" { "cu" } else { "c" };
    let main = dir.path().join(format!("out.{ext}"));
    let main_arg = main.to_string_lossy().into_owned();
    tpace(&["translate", "--target", target, example, "-o", &main_arg]);
    let mut text = std::fs::read_to_string(&main).expect("the main file");
    let host = tpace::back::host_path(&main);
    if host.exists() {
        text = format!(
            "==== out.host.c ====\n{}\n==== out.cu ====\n{text}",
            std::fs::read_to_string(&host).expect("the host file")
        );
    }
    without_runtime(&text)
}

#[test]
fn translate_output_of_every_example() {
    for example in examples() {
        let text = without_runtime(&tpace(&["translate", &example]));
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
        let text = translate_files("cuda", &example);
        insta::with_settings!({
            description => format!("tpace translate --target cuda {example}"),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name("translate_cuda", &example), text);
        });
    }
}

#[test]
fn opencl_translation_of_every_example() {
    for example in examples() {
        let text = translate_files("opencl", &example);
        insta::with_settings!({
            description => format!("tpace translate --target opencl {example}"),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name("translate_opencl", &example), text);
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
