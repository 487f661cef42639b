//! `remat-run`: execute a training step on the CPU and measure it (README.md, "Running a
//! step: `remat-run`").
//!
//! The step is a tensor-level module (what `remat-opt` writes; lowered here with
//! `remat_lower::pipeline`) or one already lowered by `remat-opt --lower=cpu`. Inputs are
//! seeded random tensors; every buffer the step allocates goes through the counting allocator
//! of `remat-runtime`, so the printed peak is the measured one. With `--compare-with`, the
//! original step runs on the same inputs and every output is compared bit for bit.

use clap::Parser;
use remat_graph::random::SplitMix64;
use remat_lower::{StepSignature, Target};
use remat_mlir::{crash, RematContext};
use remat_runtime::{compare, npy, AllocationEvent, HostTensor, StepRun};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "remat-run",
    version,
    about = "Run a training step on the CPU with seeded inputs; measure its peak memory; compare its outputs with the original's."
)]
struct Cli {
    /// The step: MLIR (linalg-on-tensors, possibly rewritten by remat-opt) or a module lowered
    /// by `remat-opt --lower=cpu`.
    step: PathBuf,
    /// Where to run (only `cpu` in this build).
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Integer inputs are drawn from 0..N (labels and token ids must be valid for every value).
    #[arg(long = "int-bound", default_value_t = 8)]
    int_bound: u64,
    /// Run this step too, on the same inputs, and compare every output bit for bit.
    #[arg(long = "compare-with", value_name = "ORIGINAL.mlir")]
    compare_with: Option<PathBuf>,
    /// The function to run (default: the module's public function).
    #[arg(long)]
    function: Option<String>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Write the inputs and outputs as DIR/argN.npy and DIR/resultN.npy.
    #[arg(long = "save-io", value_name = "DIR")]
    save_io: Option<PathBuf>,
    /// Run on the inputs DIR/argN.npy (as `--save-io` writes them, or a fixture made by
    /// another framework) instead of seeded ones.
    #[arg(long = "inputs", value_name = "DIR")]
    inputs: Option<PathBuf>,
    /// Compare the outputs with DIR/resultN.npy within `--rtol`/`--atol` (floats;
    /// integers exactly): a check against another framework's run of the same step.
    #[arg(long = "expect", value_name = "DIR")]
    expect: Option<PathBuf>,
    /// Relative tolerance of `--expect`.
    #[arg(long, default_value_t = 1e-5)]
    rtol: f64,
    /// Absolute tolerance of `--expect`.
    #[arg(long, default_value_t = 1e-6)]
    atol: f64,
    /// Print every allocation and free (to stderr).
    #[arg(long = "trace-allocs")]
    trace_allocs: bool,
    /// LLVM optimization level of the JIT (0–3). Above 0, LLVM takes minutes on big steps.
    #[arg(long = "opt-level", default_value_t = 0)]
    opt_level: usize,
}

struct Failure(Vec<String>);

fn fail(message: impl std::fmt::Display) -> Failure {
    Failure(vec![format!("error: {message}")])
}

fn main() -> ExitCode {
    crash::install("remat-run");
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("REMAT_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    match run(&cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(Failure(lines)) => {
            for line in lines {
                eprintln!("{line}");
            }
            ExitCode::FAILURE
        }
    }
}

/// A compiled step: its signature and its measured run.
struct Measured {
    signature: StepSignature,
    run: StepRun,
    compile_seconds: f64,
}

/// Parses, lowers (unless lowered already), compiles and runs `path` on `inputs` (generated
/// from the signature when None).
fn measure(cli: &Cli, path: &Path, inputs: &mut Option<Vec<HostTensor>>) -> Result<Measured, Failure> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| Failure(vec![format!("{name}: error: could not read: {e}")]))?;
    let context = RematContext::new();
    crash::stage("parsing the step");
    let mut module = context.parse(&text, &name).map_err(|ds| Failure(ds.iter().map(ToString::to_string).collect()))?;
    let start = Instant::now();
    let lowered = !remat_mlir::ir::block_ops(module.body().to_raw())
        .into_iter()
        .any(|op| remat_mlir::ir::op_name(op) == "func.func");
    let function = if lowered {
        match &cli.function {
            Some(f) => f.clone(),
            None => lowered_entry(&module).ok_or_else(|| {
                Failure(vec![format!(
                    "{name}: error: no function with a remat.signature attribute; name one with --function"
                )])
            })?,
        }
    } else {
        remat_mlir::select_function_name(&module, cli.function.as_deref()).map_err(|e| Failure(vec![e.to_string()]))?
    };
    let signature =
        remat_lower::signature(&module, &function).map_err(|e| Failure(vec![format!("{name}: error: {e}")]))?;
    if !lowered {
        crash::stage("lowering the step");
        remat_lower::lower_to_llvm(&context, &mut module, &Target::Cpu).map_err(|ds| {
            let mut lines: Vec<String> = ds.iter().map(ToString::to_string).collect();
            lines.push(format!("{name}: error: lowering to the CPU failed"));
            Failure(lines)
        })?;
    }
    crash::stage("compiling the step");
    let jit =
        remat_lower::Jit::new(&module, cli.opt_level).map_err(|e| Failure(vec![format!("{name}: error: {e}")]))?;
    let entry = jit.entry(&function).map_err(|e| Failure(vec![format!("{name}: error: {e}")]))?;
    let compile_seconds = start.elapsed().as_secs_f64();

    let inputs = inputs.get_or_insert_with(|| {
        let mut rng = SplitMix64::new(cli.seed);
        signature.inputs.iter().map(|s| HostTensor::random(s.clone(), &mut rng, cli.int_bound)).collect()
    });
    let given: Vec<_> = inputs.iter().map(|t| t.spec.clone()).collect();
    if given != signature.inputs {
        let list =
            |specs: &[remat_runtime::TensorSpec]| specs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        return Err(Failure(vec![format!(
            "{name}: error: '{function}' takes ({}), not the inputs given ({}: --inputs, or the step it is compared with)",
            list(&signature.inputs),
            list(&given)
        )]));
    }
    // A step may write into its arguments: run on a copy so both steps see the same inputs.
    let mut copies = inputs.clone();
    crash::stage("running the step");
    let run = unsafe { remat_runtime::call_step(entry, &mut copies, &signature.results, cli.trace_allocs) }
        .map_err(|e| Failure(vec![format!("{name}: error: {e}")]))?;
    drop(jit);
    Ok(Measured { signature, run, compile_seconds })
}

/// The lowered function to run: the one with a signature, preferring `main`.
fn lowered_entry(module: &melior::ir::Module) -> Option<String> {
    let names: Vec<String> = remat_mlir::ir::block_ops(module.body().to_raw())
        .into_iter()
        .filter(|&op| remat_mlir::ir::attribute(op, remat_lower::jit::SIGNATURE_ATTRIBUTE).is_some())
        .filter_map(|op| remat_mlir::ir::string_attribute(op, "sym_name"))
        .collect();
    match names.as_slice() {
        [one] => Some(one.clone()),
        many => many.iter().find(|n| *n == "main").cloned(),
    }
}

fn run(cli: &Cli) -> Result<bool, Failure> {
    if cli.device != "cpu" {
        return Err(fail(format!("--device={} is not supported by this build (only cpu)", cli.device)));
    }
    let mut inputs = match &cli.inputs {
        Some(dir) => Some(read_numbered(dir, "arg")?),
        None => None,
    };
    let step = measure(cli, &cli.step, &mut inputs)?;
    let inputs = inputs.expect("measure generates the inputs");
    if cli.trace_allocs {
        print_trace(&step.run.trace);
    }
    let mut problems = Vec::new();
    let original = match &cli.compare_with {
        Some(path) => {
            let mut same = Some(inputs.clone());
            let original = measure(cli, path, &mut same)?;
            if original.signature.results != step.signature.results {
                return Err(fail(format!("{} and {} return different types", cli.step.display(), path.display())));
            }
            for (i, (a, b)) in step.run.outputs.iter().zip(&original.run.outputs).enumerate() {
                if let Some(m) = compare(a, b) {
                    problems.push(format!("output {i} ({}): {m}", a.spec));
                }
            }
            Some(original)
        }
        None => None,
    };
    if let Some(dir) = &cli.save_io {
        save_io(dir, &inputs, &step.run.outputs).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    }
    let outputs_match = original.as_ref().map(|_| problems.is_empty());
    let expected_match = match &cli.expect {
        Some(dir) => {
            let expected = read_numbered(dir, "result")?;
            if expected.len() != step.run.outputs.len() {
                return Err(fail(format!(
                    "{}: {} results, the step returns {}",
                    dir.display(),
                    expected.len(),
                    step.run.outputs.len()
                )));
            }
            let before = problems.len();
            for (i, (got, want)) in step.run.outputs.iter().zip(&expected).enumerate() {
                let report = remat_runtime::compare_within(got, want, cli.rtol, cli.atol);
                if report.types.is_some() || report.out_of_tolerance > 0 {
                    problems.push(format!("output {i} ({}) against {}: {report}", got.spec, dir.display()));
                }
            }
            Some(problems.len() == before)
        }
        None => None,
    };
    if cli.json {
        let mut doc = serde_json::json!({
            "peak_bytes": step.run.counts.peak_bytes,
            "seconds": step.run.seconds,
            "outputs": step.run.outputs.len(),
            "outputs_match": outputs_match,
            "function": step.signature.function,
            "allocations": step.run.counts.allocations,
            "live_bytes_at_exit": step.run.counts.live_bytes,
            "compile_seconds": step.compile_seconds,
        });
        if step.run.counts.host_allocations > 0 {
            doc["host_peak_bytes"] = serde_json::json!(step.run.counts.host_peak_bytes);
            doc["host_allocations"] = serde_json::json!(step.run.counts.host_allocations);
        }
        if let Some(o) = &original {
            doc["original"] = serde_json::json!({"peak_bytes": o.run.counts.peak_bytes, "seconds": o.run.seconds});
        }
        if let Some(m) = expected_match {
            doc["expected_match"] = serde_json::json!(m);
        }
        print_out(&serde_json::to_string(&doc).expect("JSON values serialize"));
    } else {
        let mut text = table(cli, &step, original.as_ref(), outputs_match);
        if let (Some(m), Some(dir)) = (expected_match, &cli.expect) {
            let verdict = if m { "within" } else { "NOT within" };
            text.push_str(&format!(
                "\nexpected          {verdict} rtol {} atol {} of {}",
                cli.rtol,
                cli.atol,
                dir.display()
            ));
        }
        print_out(&text);
    }
    for p in &problems {
        eprintln!("error: {p}");
    }
    Ok(problems.is_empty())
}

fn table(cli: &Cli, step: &Measured, original: Option<&Measured>, outputs_match: Option<bool>) -> String {
    let c = &step.run.counts;
    let mut rows = vec![
        (
            "function".to_string(),
            format!("@{} ({} inputs, seed {})", step.signature.function, step.signature.inputs.len(), cli.seed),
        ),
        ("peak_bytes".into(), format!("{} ({})", c.peak_bytes, human(c.peak_bytes))),
        ("live at exit".into(), format!("{} (the outputs)", c.live_bytes)),
        ("allocations".into(), format!("{} ({} freed)", c.allocations, c.frees)),
    ];
    if c.host_allocations > 0 {
        rows.push((
            "host peak".into(),
            format!("{} ({}), {} host allocations", c.host_peak_bytes, human(c.host_peak_bytes), c.host_allocations),
        ));
    }
    rows.extend([("seconds".into(), format!("{:.6} (compile {:.2})", step.run.seconds, step.compile_seconds))]);
    if let Some(o) = original {
        rows.push((
            "original peak".into(),
            format!("{} ({})", o.run.counts.peak_bytes, human(o.run.counts.peak_bytes)),
        ));
        rows.push(("original seconds".into(), format!("{:.6}", o.run.seconds)));
    }
    let outputs = match outputs_match {
        None => format!("{}", step.run.outputs.len()),
        Some(true) => format!("{}, bit-identical to the original's", step.run.outputs.len()),
        Some(false) => format!("{}, DIFFERENT from the original's", step.run.outputs.len()),
    };
    rows.push(("outputs".into(), outputs));
    rows.iter().map(|(k, v)| format!("{k:<17} {v}")).collect::<Vec<_>>().join("\n")
}

/// Prints a line to stdout; a closed pipe (`remat-run … | head`) is not an error.
fn print_out(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

fn human(bytes: u64) -> String {
    remat_graph::units::Bytes(bytes).to_string()
}

fn print_trace(trace: &[AllocationEvent]) {
    for (i, e) in trace.iter().enumerate() {
        match e {
            AllocationEvent::Alloc { bytes, live_after } => eprintln!("{i:>6} alloc {bytes:>12}  live {live_after}"),
            AllocationEvent::Free { bytes, live_after } => eprintln!("{i:>6} free  {bytes:>12}  live {live_after}"),
        }
    }
}

/// DIR/{stem}0.npy, DIR/{stem}1.npy, … up to the first missing one (at least one).
fn read_numbered(dir: &Path, stem: &str) -> Result<Vec<HostTensor>, Failure> {
    let mut tensors = Vec::new();
    loop {
        let path = dir.join(format!("{stem}{}.npy", tensors.len()));
        if !path.exists() {
            break;
        }
        tensors.push(npy::read(&path).map_err(|e| fail(e.to_string()))?);
    }
    if tensors.is_empty() {
        return Err(fail(format!("{}: no {stem}0.npy", dir.display())));
    }
    Ok(tensors)
}

fn save_io(dir: &Path, inputs: &[HostTensor], outputs: &[HostTensor]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (i, t) in inputs.iter().enumerate() {
        npy::write(&dir.join(format!("arg{i}.npy")), t)?;
    }
    for (i, t) in outputs.iter().enumerate() {
        npy::write(&dir.join(format!("result{i}.npy")), t)?;
    }
    Ok(())
}
