//! The commands the documentation shows are run: every ```` ```sh ```` block of README.md
//! and docs/*.md, line by line, as a reader would type them at the repository root.
//!
//! Each page gets a scratch folder holding copies of what the commands name (examples/,
//! tests/fixtures/, profiles/), with `tpace` on PATH as a shim to the binary under test;
//! `cargo run --release --` and `cargo run --` are rewritten to `tpace`. A block starts in
//! the scratch folder and its lines run in order, one `bash` each; a `cd` carries to the
//! block's next lines (not to the next block), variables set on a line do not. Commands that
//! need a GPU, nvcc or a GPU machine go in ```` ```console ```` blocks, which are not run.
//!
//! A command that exits non-zero fails the test with its page, line, the command and its
//! standard error. Where a block needs a tool this machine lacks (Open MPI, make, cmake, an
//! OpenCL device), it is skipped with a note, except in CI, where that fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One command of a block: its first line in the page (1-based) and its text.
#[derive(Debug, Clone, PartialEq)]
struct Cmd {
    line: usize,
    text: String,
}

/// A ```` ```sh ```` block: the line of its opening fence and its commands.
#[derive(Debug)]
struct Block {
    line: usize,
    commands: Vec<Cmd>,
}

/// The `sh` blocks of a Markdown text, each line joined with its `\` continuations and
/// heredoc bodies; blank lines and lines that are only a comment are left out.
fn sh_blocks(markdown: &str) -> Vec<Block> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "```sh" {
            i += 1;
            continue;
        }
        let mut block = Block {
            line: i + 1,
            commands: Vec::new(),
        };
        i += 1;
        while i < lines.len() && lines[i].trim() != "```" {
            let first = i;
            let mut text = lines[i].trim().to_string();
            while text.ends_with('\\') && i + 1 < lines.len() {
                text.pop();
                i += 1;
                text.push_str(lines[i].trim());
            }
            if let Some(word) = heredoc_word(&text) {
                while i + 1 < lines.len() {
                    i += 1;
                    text.push('\n');
                    text.push_str(lines[i]);
                    if lines[i].trim() == word {
                        break;
                    }
                }
            }
            i += 1;
            if !text.is_empty() && !text.starts_with('#') {
                block.commands.push(Cmd {
                    line: first + 1,
                    text,
                });
            }
        }
        blocks.push(block);
        i += 1;
    }
    blocks
}

/// The terminator of a heredoc the line opens (`<<EOF`, `<<'EOF'`, `<<-"EOF"`), if any.
fn heredoc_word(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = line[at + 2..].trim_start_matches('-').trim_start();
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The command as it runs here: `cargo run [--release] --` becomes `tpace`. `None` for
/// `cargo test ...`: the test suite itself, which this test is part of, is not run again.
fn as_run(command: &str) -> Option<String> {
    if command == "cargo test" || command.starts_with("cargo test ") {
        return None;
    }
    Some(
        command
            .replace("cargo run --release -- ", "tpace ")
            .replace("cargo run -- ", "tpace "),
    )
}

/// The repository root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages whose commands are run: README.md and every docs/*.md.
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root().join("README.md"));
    pages
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("scratch folder");
    for entry in fs::read_dir(from).expect("folder to copy") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A scratch folder laid out as the repository's root for the commands, and the folder
/// holding the `tpace` shim.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("scratch folder");
    for part in ["examples", "tests/fixtures", "profiles"] {
        copy_tree(&root().join(part), &dir.path().join("repo").join(part));
    }
    let bin = dir.path().join("bin");
    fs::create_dir_all(&bin).expect("bin/");
    let shim = bin.join("tpace");
    fs::write(
        &shim,
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", env!("CARGO_BIN_EXE_tpace")),
    )
    .expect("shim");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    (dir, bin)
}

fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn opencl_device() -> bool {
    Command::new("clinfo")
        .arg("-l")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("Device"))
}

/// What a command needs beyond the prerequisites every test has (gcc, g++).
fn needs(command: &str) -> Vec<&'static str> {
    let mut needs = Vec::new();
    let words: Vec<&str> = command.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    if has("mpicc") || has("mpirun") || has("--ranks") || (has("--mpi") && has("cc")) {
        needs.push("Open MPI");
    }
    if has("make") {
        needs.push("make");
    }
    if has("cmake") {
        needs.push("cmake");
    }
    let runs_opencl = command.contains("-lOpenCL")
        || (command.contains("--target opencl")
            && (command.contains("tpace run") || command.contains("tpace tune") || has("cc")));
    if runs_opencl {
        needs.push("an OpenCL device");
    }
    needs
}

fn present(need: &str) -> bool {
    match need {
        "Open MPI" => on_path("mpicc") && on_path("mpirun"),
        "an OpenCL device" => opencl_device(),
        tool => on_path(tool),
    }
}

fn tail(text: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(text);
    let start = text.char_indices().rev().nth(max).map_or(0, |(i, _)| i);
    text[start..].to_string()
}

/// Runs every `sh` block of one page; the failures, each in words.
fn run_page(page: &Path) -> Vec<String> {
    let name = page
        .strip_prefix(root())
        .unwrap_or(page)
        .display()
        .to_string();
    let text = fs::read_to_string(page).expect("page");
    let (dir, bin) = scratch();
    let repo = dir.path().join("repo");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let cwd_file = dir.path().join("cwd");
    let mut failures = Vec::new();
    for block in sh_blocks(&text) {
        let missing: Vec<&str> = block
            .commands
            .iter()
            .flat_map(|c| needs(&c.text))
            .filter(|n| !present(n))
            .collect();
        if !missing.is_empty() {
            let why = format!(
                "{name}:{}: the block needs {}",
                block.line,
                missing.join(", ")
            );
            assert!(
                std::env::var_os("CI").is_none(),
                "{why}, which CI installs (.ci/run)"
            );
            eprintln!("skipped: {why}, not found here");
            continue;
        }
        fs::write(&cwd_file, repo.display().to_string()).expect("cwd file");
        for cmd in &block.commands {
            let Some(run) = as_run(&cmd.text) else {
                continue;
            };
            let cwd = fs::read_to_string(&cwd_file).expect("cwd file");
            // The line runs where the block's last `cd` left it; on exit the folder it
            // ends in is written back for the next line.
            let script = format!(
                "cd \"$0\" || exit 125\ntrap 'pwd > \"$1\"' EXIT\nset -o pipefail\n{run}\n"
            );
            let started = std::time::Instant::now();
            let out = Command::new("timeout")
                .args(["600", "bash", "-c", &script])
                .arg(cwd.trim())
                .arg(&cwd_file)
                .env("PATH", &path)
                // CI runs as root, where Open MPI's mpirun refuses to start without these;
                // and a small machine may have fewer cores than a command's ranks.
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
                .output()
                .expect("bash");
            eprintln!(
                "{name}:{}: {:.1} s: {}",
                cmd.line,
                started.elapsed().as_secs_f64(),
                cmd.text
            );
            if !out.status.success() {
                failures.push(format!(
                    "{name}:{}: `{}` exited with {}\n--- stderr (end) ---\n{}\n--- stdout (end) ---\n{}",
                    cmd.line,
                    cmd.text,
                    out.status,
                    tail(&out.stderr, 4000),
                    tail(&out.stdout, 1500)
                ));
                // The block's later lines may depend on this one: on to the next block.
                break;
            }
        }
    }
    failures
}

fn check_page(relative: &str) {
    let failures = run_page(&root().join(relative));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn readme_commands_run() {
    check_page("README.md");
}

#[test]
fn accepted_c_commands_run() {
    check_page("docs/accepted-c.md");
}

#[test]
fn commands_page_commands_run() {
    check_page("docs/commands.md");
}

#[test]
fn directives_commands_run() {
    check_page("docs/directives.md");
}

#[test]
fn layout_commands_run() {
    check_page("docs/layout.md");
}

#[test]
fn model_commands_run() {
    check_page("docs/model.md");
}

#[test]
fn results_commands_run() {
    check_page("docs/results.md");
}

#[test]
fn scale_out_commands_run() {
    check_page("docs/scale-out.md");
}

#[test]
fn settings_commands_run() {
    check_page("docs/settings.md");
}

#[test]
fn stencil_dialect_commands_run() {
    check_page("docs/stencil-dialect.md");
}

#[test]
fn targets_commands_run() {
    check_page("docs/targets.md");
}

#[test]
fn testing_commands_run() {
    check_page("docs/testing.md");
}

/// Every page has its test above: a new page without one fails here.
#[test]
fn every_page_is_run() {
    let source = include_str!("docs.rs");
    for page in pages() {
        let relative = page.strip_prefix(root()).expect("page under the root");
        let quoted = format!("check_page(\"{}\")", relative.display());
        assert!(
            source.contains(&quoted),
            "{} has no test in tests/docs.rs: add one calling {quoted}",
            relative.display()
        );
    }
}

/// The README begins with the two commands a new user types first: the run of the
/// bundled example (run above, through the rewrite to `tpace`) and the test suite (the
/// one command left out, and .ci/run runs it).
#[test]
fn readme_starts_with_the_two_commands() {
    let text = fs::read_to_string(root().join("README.md")).expect("README.md");
    let blocks = sh_blocks(&text);
    let first = &blocks.first().expect("an sh block in the README").commands;
    let texts: Vec<&str> = first
        .iter()
        .map(|c| c.text.split(" #").next().unwrap_or("").trim())
        .collect();
    assert_eq!(
        texts,
        [
            "cargo run --release -- run examples/jacobi2d.c",
            "cargo test"
        ]
    );
    assert_eq!(blocks[0].line, 1, "the README opens with them");
    assert_eq!(
        as_run(&first[0].text)
            .as_deref()
            .map(|r| r.starts_with("tpace run examples/jacobi2d.c")),
        Some(true)
    );
    assert_eq!(as_run(&first[1].text), None);
    let ci = fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let last = ci
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .expect("a last line");
    assert_eq!(
        last.trim(),
        "cargo test",
        ".ci/run ends with the README's test command"
    );
    // Only the test suite is left out, nowhere a command the pages show.
    for page in pages() {
        let text = fs::read_to_string(&page).expect("page");
        for block in sh_blocks(&text) {
            for cmd in block.commands {
                if as_run(&cmd.text).is_none() {
                    assert!(cmd.text.starts_with("cargo test"), "{}", cmd.text);
                }
            }
        }
    }
}

/// The block reader: continuations, heredocs, comments, other fences, indented fences.
#[test]
fn sh_blocks_reads_commands_as_typed() {
    let md = "text\n```sh\n# a comment\ntpace run a.c \\\n  --k 2   # two\n\ncat > f.c <<'EOF'\nint x;\n# not a comment\nEOF\n```\n```console\nnvcc x.cu\n```\n  ```sh\n  ls\n  ```\n";
    let blocks = sh_blocks(md);
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].line, 2);
    assert_eq!(
        blocks[0].commands,
        [
            Cmd {
                line: 4,
                text: "tpace run a.c --k 2   # two".into()
            },
            Cmd {
                line: 7,
                text: "cat > f.c <<'EOF'\nint x;\n# not a comment\nEOF".into()
            },
        ]
    );
    assert_eq!(
        blocks[1].commands,
        [Cmd {
            line: 16,
            text: "ls".into()
        }]
    );
    assert_eq!(
        as_run("cargo run --release -- plan x.c").as_deref(),
        Some("tpace plan x.c")
    );
    assert_eq!(
        as_run("cargo run -- check x.c").as_deref(),
        Some("tpace check x.c")
    );
    assert_eq!(as_run("cargo test --test docs"), None);
    assert_eq!(as_run("cargo testing").as_deref(), Some("cargo testing"));
}
