//! The architecture's invariants (ARCHITECTURE.md, "Invariants") and the house rules, checked.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(&manifest_dir()).join("../..").canonicalize().unwrap()
}

/// Files under `dir` (relative to the root) whose names end in one of `extensions`, skipping
/// build output and snapshots.
fn files(dir: &str, extensions: &[&str]) -> Vec<PathBuf> {
    fn walk(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "snapshots" | ".venv" | ".venv-torch" | "__pycache__") {
                    walk(&path, extensions, out);
                }
            } else if extensions.iter().any(|e| name.ends_with(e)) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), extensions, &mut out);
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// A source file without its test modules (by convention at the end, after `#[cfg(test)]`).
fn non_test_source(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

struct Package {
    name: String,
    dir: String,
    dependencies: Vec<String>,
}

fn workspace() -> Vec<Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let root = root();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().unwrap());
            Package {
                name: p["name"].as_str().unwrap().to_string(),
                dir: manifest.parent().unwrap().strip_prefix(&root).unwrap().display().to_string(),
                dependencies: p["dependencies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|d| d["kind"].is_null()) // normal dependencies, not dev or build
                    .map(|d| d["name"].as_str().unwrap().to_string())
                    .collect(),
            }
        })
        .collect()
}

/// Layers point down: `crates/` never depend on `passes/` or `tools/`, `passes/` never on
/// `tools/`.
#[test]
fn crate_dependencies_point_down() {
    let packages = workspace();
    let layer = |dir: &str| ["crates/", "passes/", "tools/"].iter().position(|l| dir.starts_with(l)).unwrap();
    let mut checked = 0;
    for p in &packages {
        for d in &p.dependencies {
            if let Some(q) = packages.iter().find(|q| &q.name == d) {
                assert!(
                    layer(&q.dir) <= layer(&p.dir),
                    "{} ({}) depends on {} ({}), a layer above it",
                    p.name,
                    p.dir,
                    q.name,
                    q.dir
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} workspace dependencies found");
}

/// Planners never see MLIR, and the tools that run without LLVM (remat-gpu-run on GPU hosts)
/// or read graphs only (remat-bench) do not link it, not even through another crate.
#[test]
fn only_the_bridge_and_above_link_mlir() {
    let packages = workspace();
    let links_mlir = |name: &str| {
        let mut stack = vec![name.to_string()];
        let mut seen = Vec::new();
        while let Some(n) = stack.pop() {
            if seen.contains(&n) {
                continue;
            }
            let Some(p) = packages.iter().find(|p| p.name == n) else { continue };
            if p.dependencies.iter().any(|d| d == "melior" || d == "mlir-sys") {
                return true;
            }
            stack.extend(p.dependencies.iter().cloned());
            seen.push(n);
        }
        false
    };
    for name in
        ["remat-rng", "remat-graph", "remat-plot", "remat-planners", "remat-runtime", "remat-gpu-run", "remat-bench"]
    {
        assert!(packages.iter().any(|p| p.name == name), "{name} is a workspace crate");
        assert!(!links_mlir(name), "{name} links MLIR");
    }
    assert!(links_mlir("remat-mlir"), "the check can see MLIR");
}

/// Only the drivers talk to the terminal: library code prints nothing (it returns errors and
/// reports, and logs through `tracing`). The one exception is the GPU runtime's wrappers, which
/// print a failed CUDA call as upstream's wrappers do, because the step's code cannot see it.
#[test]
fn only_drivers_print() {
    const ALLOWED: &[&str] = &["crates/runtime/src/gpu/driver.rs"];
    let mut scanned = 0;
    for dir in ["crates", "passes"] {
        for path in files(dir, &[".rs"]).into_iter().filter(|p| relative(p).contains("/src/")) {
            scanned += 1;
            if ALLOWED.contains(&relative(&path).as_str()) {
                continue;
            }
            let source = non_test_source(&path);
            for pattern in ["println!", "eprintln!", "print!(", "eprint!(", "io::stdout", "io::stderr", "io::stdin"] {
                assert!(!source.contains(pattern), "{} uses {pattern}", relative(&path));
            }
        }
    }
    assert!(scanned > 50, "{scanned} files scanned");
}

/// Errors are typed: no library function returns `Result<_, String>`.
#[test]
fn library_errors_are_typed() {
    let mut scanned = 0;
    for dir in ["crates", "passes"] {
        for path in files(dir, &[".rs"]) {
            scanned += 1;
            let source = non_test_source(&path);
            let flat: String = source.split_whitespace().collect::<Vec<_>>().join(" ");
            for (i, _) in flat.match_indices("Result<") {
                let rest = &flat[i..];
                let close = rest.find('>').unwrap_or(rest.len());
                let generics = &rest[..close];
                assert!(
                    !(generics.ends_with(", String") || generics.ends_with(",String")),
                    "{} returns {generics}>",
                    relative(&path)
                );
            }
        }
    }
    assert!(scanned > 50, "{scanned} files scanned");
}

/// The repository is self-contained: nothing cites the design notes it was started from, and
/// every relative link in its Markdown points at a file that exists.
#[test]
fn documents_cited_and_linked_exist() {
    let mut texts = files(".", &[".rs", ".md", ".py", ".sh", ".mlir", ".test", ".toml", ".cpp", ".h", ".c", ".txt"]);
    texts.retain(|p| !relative(p).starts_with("target"));
    assert!(texts.len() > 100, "{} files", texts.len());
    // Spelled in pieces, so that this file does not cite them itself.
    let outside_documents = [["DESIGN", ".md"].concat(), ["TOOLCHAIN", ".md"].concat(), ["../", "shared/"].concat()];
    for path in &texts {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for outside in &outside_documents {
            assert!(!text.contains(outside), "{} cites {outside}, which is not in the repository", relative(path));
        }
    }
    let mut links = 0;
    for path in texts.iter().filter(|p| p.extension().is_some_and(|e| e == "md")) {
        let text = std::fs::read_to_string(path).unwrap();
        for (i, _) in text.match_indices("](") {
            let target = &text[i + 2..];
            let Some(end) = target.find(')') else { continue };
            let target = target[..end].split('#').next().unwrap();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            links += 1;
            let resolved = path.parent().unwrap().join(target);
            assert!(resolved.exists(), "{} links to {target}, which does not exist", relative(path));
        }
    }
    assert!(links > 10, "{links} relative links checked");
}

/// A strategy is one file in crates/planners/src (a module, or a directory of them) and one
/// directory of lit tests named after it; STRATEGIES lists it, and everything else that lists
/// strategies (help, docs, schema, property tests) reads that list.
#[test]
fn every_strategy_has_its_file_and_its_lit_tests() {
    let root = root();
    for planner in remat_planners::STRATEGIES {
        let name = planner.name();
        let module = root.join("crates/planners/src").join(format!("{name}.rs"));
        let directory = root.join("crates/planners/src").join(name);
        assert!(module.exists() || directory.is_dir(), "strategy {name}: no crates/planners/src/{name}.rs");
        let tests = root.join("lit-tests").join(name);
        let count = std::fs::read_dir(&tests).map(|d| d.count()).unwrap_or(0);
        assert!(count > 0, "strategy {name}: no lit tests in lit-tests/{name}/");
    }
}

/// This crate's directory as cargo gives it to the running test, not as it was when the test
/// was compiled: a build cache reused from a checkout elsewhere (CI's fresh clone) keeps test
/// binaries whose compile-time path no longer exists.
fn manifest_dir() -> String {
    std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
}
