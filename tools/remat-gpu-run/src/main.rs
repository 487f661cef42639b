//! `remat-gpu-run`: runs a step that `remat-opt --lower=gpu --emit=library` compiled to a shared
//! library on a CUDA device, and measures it.
//!
//! The library's host code calls the CUDA runtime wrappers and the counting allocator by name;
//! this executable exports them (`remat_runtime::gpu::exports`, `-rdynamic` in build.rs), so
//! `dlopen` binds the library to them. Inputs are the CPU runner's (`remat-run --save-io DIR`,
//! read with `--inputs DIR`) or seeded exactly as remat-run seeds them; outputs are compared
//! with the CPU's (`--expect DIR`) within a tolerance, since the GPU's float arithmetic rounds
//! differently. Exit status: 0 when the outputs match (or nothing is compared), 1 when they do
//! not or the run fails, 2 without a CUDA driver (or for a bad command line).

use clap::Parser;
use libloading::os::unix::{Library, RTLD_NOW};
use remat_runtime::gpu::{self, Device, ExportedSymbol, GpuCounts, GpuStepRun};
use remat_runtime::{compare_within, npy, HostTensor, PackedEntry, SplitMix64, TensorSpec, ToleranceReport};
use std::ffi::{c_char, CStr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Keeps the exported wrappers in the executable: nothing in it calls them, only the step
/// library does, after `dlopen`, so without a reference the linker would drop them.
#[used]
static KEEP_EXPORTS: &[ExportedSymbol] = &gpu::EXPORTED_SYMBOLS;

#[derive(Parser, Debug)]
#[command(
    name = "remat-gpu-run",
    version,
    about = "Run a step compiled by `remat-opt --lower=gpu --emit=library` on a CUDA device; measure its device and host peak bytes and time; compare its outputs with the CPU run's."
)]
struct Cli {
    /// The step: a shared library from `remat-opt --lower=gpu --emit=library`.
    step: PathBuf,
    /// Read the inputs from DIR/arg0.npy, DIR/arg1.npy, … (`remat-run --save-io DIR`) instead
    /// of generating them.
    #[arg(long, value_name = "DIR")]
    inputs: Option<PathBuf>,
    /// Compare the outputs with DIR/result0.npy, … (`remat-run --save-io DIR`).
    #[arg(long, value_name = "DIR")]
    expect: Option<PathBuf>,
    /// Seed of the random inputs (the same seed gives remat-run's inputs).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Integer inputs are drawn from 0..N.
    #[arg(long = "int-bound", default_value_t = 8)]
    int_bound: u64,
    /// Run the step this many times (counts from the first run; time as min and median).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Relative tolerance of float outputs: |gpu - cpu| <= atol + rtol * |cpu|.
    #[arg(long, default_value_t = 1e-4)]
    rtol: f64,
    /// Absolute tolerance of float outputs.
    #[arg(long, default_value_t = 1e-5)]
    atol: f64,
    /// The CUDA device's ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Write the outputs (of the first run) as DIR/result0.npy, ….
    #[arg(long = "save-outputs", value_name = "DIR")]
    save_outputs: Option<PathBuf>,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    json: bool,
}

/// The stack the step runs on (reserved, touched only as used).
const STEP_STACK_BYTES: usize = 1 << 30;

fn main() -> ExitCode {
    // A use the optimizer cannot see through, on top of `#[used]`, which only keeps the table
    // in the object file.
    std::hint::black_box(KEEP_EXPORTS);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    // Before loading the step: its constructors load its kernels through the driver.
    if !gpu::driver_present() {
        eprintln!("remat-gpu-run: error: {}", gpu::NO_DRIVER);
        return ExitCode::from(2);
    }
    // The step's host function keeps every launch's argument arrays in its frame (about 160
    // bytes a launch): a step of 10^5 launches needs more than a main thread's 8 MiB.
    let outcome = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("step".into())
            .stack_size(STEP_STACK_BYTES)
            .spawn_scoped(scope, || run(&cli))
            .map(|thread| thread.join())
    });
    let result = match outcome {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => Err(vec![format!("cannot start the step's thread: {e}")]),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(lines) => {
            for line in lines {
                eprintln!("remat-gpu-run: error: {line}");
            }
            ExitCode::FAILURE
        }
    }
}

/// What `remat_step_signature` says about the step.
#[derive(Debug, PartialEq)]
struct Signature {
    function: String,
    inputs: Vec<TensorSpec>,
    results: Vec<TensorSpec>,
}

/// Parses `{"function":"main","inputs":["tensor<4xf32>",…],"results":[…]}`.
fn parse_signature(text: &str) -> Result<Signature, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("remat_step_signature is not JSON: {e}"))?;
    let function = value["function"]
        .as_str()
        .filter(|f| !f.is_empty())
        .ok_or("remat_step_signature has no \"function\"")?
        .to_string();
    let specs = |key: &str| -> Result<Vec<TensorSpec>, String> {
        let list = value[key].as_array().ok_or_else(|| format!("remat_step_signature has no \"{key}\" list"))?;
        list.iter()
            .map(|item| {
                let text =
                    item.as_str().ok_or_else(|| format!("remat_step_signature: \"{key}\" holds {item}, not a type"))?;
                TensorSpec::parse(text).map_err(|e| format!("remat_step_signature: {e}"))
            })
            .collect()
    };
    Ok(Signature { function, inputs: specs("inputs")?, results: specs("results")? })
}

/// A loaded step: the library (kept open while the entry is used), its signature and entry.
struct Step {
    _library: Library,
    signature: Signature,
    entry: PackedEntry,
}

/// A loader error with its causes (`dlopen failed: step.so: cannot open shared object file…`).
fn describe(error: &libloading::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn load_step(path: &Path) -> Result<Step, Vec<String>> {
    let name = path.display();
    // SAFETY: loading runs the library's constructors, which load its kernels through the
    // wrappers this executable exports; RTLD_NOW makes a missing symbol an error here.
    // dlopen searches the library path for a bare file name: name the file itself.
    let file = std::path::absolute(path).map_err(|e| vec![format!("{name}: {e}")])?;
    let library = unsafe { Library::open(Some(&file), RTLD_NOW) }
        .map_err(|e| vec![format!("{name}: could not load: {}", describe(&e))])?;
    if let Some(error) = gpu::take_first_error() {
        return Err(vec![format!("{name}: loading its kernels failed: {error}")]);
    }
    // SAFETY: the symbol is a NUL-terminated char array; its address is its first char.
    let text = unsafe {
        let symbol = library
            .get::<*const c_char>("remat_step_signature")
            .map_err(|e| vec![format!("{name}: not a step library: {}", describe(&e))])?;
        CStr::from_ptr(*symbol).to_string_lossy().into_owned()
    };
    let signature = parse_signature(&text).map_err(|e| vec![format!("{name}: {e}")])?;
    let entry_name = format!("_mlir_{}", signature.function);
    // SAFETY: `_mlir_<function>` is the packed entry, of type `PackedEntry`.
    let entry = unsafe { library.get::<PackedEntry>(entry_name.as_str()).map(|symbol| *symbol) }
        .map_err(|e| vec![format!("{name}: no entry point: {}", describe(&e))])?;
    Ok(Step { _library: library, signature, entry })
}

/// `DIR/{prefix}{i}.npy` for every spec, checked against it.
fn read_tensors(dir: &Path, prefix: &str, specs: &[TensorSpec], role: &str) -> Result<Vec<HostTensor>, Vec<String>> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let path = dir.join(format!("{prefix}{i}.npy"));
            let tensor = npy::read(&path).map_err(|e| vec![e.to_string()])?;
            if tensor.spec != *spec {
                return Err(vec![format!(
                    "{}: holds {}, but {role} {i} of the step is {spec}",
                    path.display(),
                    tensor.spec
                )]);
            }
            Ok(tensor)
        })
        .collect()
}

fn write_tensors(dir: &Path, prefix: &str, tensors: &[HostTensor]) -> Result<(), Vec<String>> {
    std::fs::create_dir_all(dir).map_err(|e| vec![format!("{}: {e}", dir.display())])?;
    for (i, tensor) in tensors.iter().enumerate() {
        let path = dir.join(format!("{prefix}{i}.npy"));
        npy::write(&path, tensor).map_err(|e| vec![format!("{}: {e}", path.display())])?;
    }
    Ok(())
}

/// The measurements of all runs together.
#[derive(Debug)]
struct Summary {
    /// The first run's counts, except `driver_peak_bytes`: the smallest over the runs, since the
    /// first run also pays one-time driver costs (lazily loaded kernels, grown local memory).
    counts: GpuCounts,
    driver_peak_bytes_first_run: u64,
    seconds_min: f64,
    seconds_median: f64,
    runs: usize,
}

fn summarize(runs: &[GpuStepRun]) -> Summary {
    let mut seconds: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
    seconds.sort_by(f64::total_cmp);
    let n = seconds.len();
    let median = if n == 0 {
        0.0
    } else if n % 2 == 1 {
        seconds[n / 2]
    } else {
        (seconds[n / 2 - 1] + seconds[n / 2]) / 2.0
    };
    let first = runs.first().map(|r| r.counts).unwrap_or_default();
    let driver_peak = runs.iter().map(|r| r.counts.driver_peak_bytes).min().unwrap_or(0);
    Summary {
        counts: GpuCounts { driver_peak_bytes: driver_peak, ..first },
        driver_peak_bytes_first_run: first.driver_peak_bytes,
        seconds_min: seconds.first().copied().unwrap_or(0.0),
        seconds_median: median,
        runs: n,
    }
}

/// The largest error over all outputs (NaN wins, as in one output's report).
fn overall_max_abs_error(reports: &[ToleranceReport]) -> f64 {
    reports
        .iter()
        .fold(0.0, |max, r| if max.is_nan() || r.max_abs_error.is_nan() { f64::NAN } else { max.max(r.max_abs_error) })
}

fn run(cli: &Cli) -> Result<bool, Vec<String>> {
    let device = Device::open(cli.device).map_err(|e| vec![e.to_string()])?;
    let step = load_step(&cli.step)?;
    let signature = &step.signature;
    let inputs = match &cli.inputs {
        Some(dir) => read_tensors(dir, "arg", &signature.inputs, "argument")?,
        None => {
            let mut rng = SplitMix64::new(cli.seed);
            signature.inputs.iter().map(|spec| HostTensor::random(spec.clone(), &mut rng, cli.int_bound)).collect()
        }
    };
    let expected = match &cli.expect {
        Some(dir) => Some(read_tensors(dir, "result", &signature.results, "result")?),
        None => None,
    };

    let mut runs = Vec::with_capacity(cli.repeat as usize);
    for index in 0..cli.repeat {
        // SAFETY: the entry's signature is the one the library declares.
        let result = unsafe { device.call_step_on_device(step.entry, &inputs, &signature.results) };
        let first_error = device.take_first_error();
        match (result, first_error) {
            (Ok(run), None) => runs.push(run),
            (result, first_error) => {
                let mut lines: Vec<String> = first_error.into_iter().collect();
                lines.extend(result.err().map(|e| e.to_string()));
                lines.push(format!(
                    "{}: run {} of @{} failed on {}",
                    cli.step.display(),
                    index + 1,
                    signature.function,
                    device.name()
                ));
                return Err(lines);
            }
        }
    }
    let summary = summarize(&runs);
    for (index, run) in runs.iter().enumerate().skip(1) {
        let (a, b) = (&runs[0].counts, &run.counts);
        if (a.device_peak_bytes, a.device_allocations, a.host_peak_bytes, a.host_allocations)
            != (b.device_peak_bytes, b.device_allocations, b.host_peak_bytes, b.host_allocations)
        {
            eprintln!(
                "remat-gpu-run: warning: run {} allocated differently from run 1 (device peak {} vs {})",
                index + 1,
                b.device_peak_bytes,
                a.device_peak_bytes
            );
        }
    }
    if summary.counts.foreign_frees > 0 {
        eprintln!(
            "remat-gpu-run: warning: the step freed {} pointer(s) it did not allocate",
            summary.counts.foreign_frees
        );
    }
    let outputs = &runs[0].outputs;
    if let Some(dir) = &cli.save_outputs {
        write_tensors(dir, "result", outputs)?;
    }
    let reports: Option<Vec<ToleranceReport>> = expected
        .as_ref()
        .map(|expected| outputs.iter().zip(expected).map(|(a, b)| compare_within(a, b, cli.rtol, cli.atol)).collect());
    let outputs_match = reports.as_ref().map(|r| r.iter().all(ToleranceReport::matches));
    if cli.json {
        print_out(
            &serde_json::to_string(&report_json(device.name(), signature, &summary, outputs, reports.as_deref()))
                .expect("JSON values serialize"),
        );
    } else {
        print_out(&report_text(cli, device.name(), signature, &summary, reports.as_deref()));
    }
    for (i, report) in reports.iter().flatten().enumerate() {
        if !report.matches() {
            eprintln!("remat-gpu-run: error: output {i} ({}): {report}", outputs[i].spec);
        }
    }
    Ok(outputs_match.unwrap_or(true))
}

/// The `--json` object. Errors that are NaN or infinite print as null (JSON has neither).
fn report_json(
    device: &str,
    signature: &Signature,
    summary: &Summary,
    outputs: &[HostTensor],
    reports: Option<&[ToleranceReport]>,
) -> serde_json::Value {
    let c = &summary.counts;
    let mut doc = serde_json::json!({
        "device": device,
        "function": signature.function,
        "device_peak_bytes": c.device_peak_bytes,
        "device_allocations": c.device_allocations,
        "host_peak_bytes": c.host_peak_bytes,
        "host_allocations": c.host_allocations,
        "staging_peak_bytes": c.staging_peak_bytes,
        "staging_allocations": c.staging_allocations,
        "driver_peak_bytes": c.driver_peak_bytes,
        "driver_peak_bytes_first_run": summary.driver_peak_bytes_first_run,
        "foreign_frees": c.foreign_frees,
        "seconds_min": summary.seconds_min,
        "seconds_median": summary.seconds_median,
        "runs": summary.runs,
    });
    let entries: Vec<serde_json::Value> = outputs
        .iter()
        .enumerate()
        .map(|(i, output)| {
            let mut entry = serde_json::json!({ "type": output.spec.to_string() });
            if let Some(report) = reports.and_then(|r| r.get(i)) {
                entry["out_of_tolerance"] = serde_json::json!(report.out_of_tolerance);
                entry["max_abs_error"] = serde_json::json!(report.max_abs_error);
            }
            entry
        })
        .collect();
    if let Some(reports) = reports {
        doc["outputs_match"] = serde_json::json!(reports.iter().all(ToleranceReport::matches));
        doc["max_abs_error"] = serde_json::json!(overall_max_abs_error(reports));
    }
    doc["outputs"] = serde_json::Value::Array(entries);
    doc
}

fn report_text(
    cli: &Cli,
    device: &str,
    signature: &Signature,
    summary: &Summary,
    reports: Option<&[ToleranceReport]>,
) -> String {
    let c = &summary.counts;
    let inputs = match &cli.inputs {
        Some(dir) => format!("from {}", dir.display()),
        None => format!("seed {}", cli.seed),
    };
    let mut rows = vec![
        ("function".to_string(), format!("@{} ({} inputs, {inputs})", signature.function, signature.inputs.len())),
        ("device".into(), format!("{device} (#{})", cli.device)),
        ("device peak".into(), format!("{} ({})", c.device_peak_bytes, human(c.device_peak_bytes))),
        ("allocations".into(), format!("{} ({} freed)", c.device_allocations, c.device_frees)),
        (
            "driver peak".into(),
            format!(
                "{} ({}; first run {})",
                c.driver_peak_bytes,
                human(c.driver_peak_bytes),
                human(summary.driver_peak_bytes_first_run)
            ),
        ),
    ];
    if c.host_allocations > 0 {
        rows.push((
            "host peak".into(),
            format!("{} ({}), {} host allocations", c.host_peak_bytes, human(c.host_peak_bytes), c.host_allocations),
        ));
    }
    if c.staging_allocations > 0 {
        rows.push((
            "staging peak".into(),
            format!(
                "{} ({}), {} scalar reads staged on the host",
                c.staging_peak_bytes,
                human(c.staging_peak_bytes),
                c.staging_allocations
            ),
        ));
    }
    rows.push((
        "seconds".into(),
        format!("min {:.6}, median {:.6} ({} runs)", summary.seconds_min, summary.seconds_median, summary.runs),
    ));
    let outputs = match reports {
        None => format!("{}", signature.results.len()),
        Some(reports) => {
            let bad = reports.iter().filter(|r| !r.matches()).count();
            let verdict = if bad == 0 {
                "all within tolerance of the expected".to_string()
            } else {
                format!("{bad} OUT OF TOLERANCE")
            };
            format!(
                "{}, {verdict} (rtol {:e}, atol {:e}; max |error| {:e})",
                reports.len(),
                cli.rtol,
                cli.atol,
                overall_max_abs_error(reports)
            )
        }
    };
    rows.push(("outputs".into(), outputs));
    rows.iter().map(|(k, v)| format!("{k:<12} {v}")).collect::<Vec<_>>().join("\n")
}

/// Bytes in binary units (`1.50 MiB`).
fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// Prints a line to stdout; a closed pipe (`remat-gpu-run … | head`) is not an error.
fn print_out(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_runtime::ElementType;

    fn spec(text: &str) -> TensorSpec {
        TensorSpec::parse(text).unwrap()
    }

    #[test]
    fn parses_the_step_signature() {
        let text = r#"{"function":"main","inputs":["tensor<64x128xf32>","tensor<64xi32>"],"results":["tensor<f32>"]}"#;
        let signature = parse_signature(text).unwrap();
        assert_eq!(
            signature,
            Signature {
                function: "main".into(),
                inputs: vec![spec("tensor<64x128xf32>"), spec("tensor<64xi32>")],
                results: vec![spec("tensor<f32>")]
            }
        );
        assert_eq!(parse_signature(r#"{"function":"f","inputs":[],"results":[]}"#).unwrap().inputs, vec![]);
    }

    #[test]
    fn rejects_malformed_signatures_with_a_message() {
        assert!(parse_signature("not json").unwrap_err().contains("not JSON"));
        assert!(parse_signature(r#"{"inputs":[],"results":[]}"#).unwrap_err().contains("function"));
        assert!(parse_signature(r#"{"function":"main","results":[]}"#).unwrap_err().contains("inputs"));
        assert!(parse_signature(r#"{"function":"main","inputs":[3],"results":[]}"#)
            .unwrap_err()
            .contains("not a type"));
        assert!(parse_signature(r#"{"function":"main","inputs":["tensor<?xf32>"],"results":[]}"#)
            .unwrap_err()
            .contains("dynamic"));
    }

    fn run_with(seconds: f64, device_peak: u64, driver_peak: u64) -> GpuStepRun {
        let counts = GpuCounts {
            device_peak_bytes: device_peak,
            device_allocations: 2,
            driver_peak_bytes: driver_peak,
            ..GpuCounts::default()
        };
        GpuStepRun { outputs: vec![], counts, seconds }
    }

    #[test]
    fn summary_takes_counts_from_the_first_run_and_the_least_driver_peak() {
        let runs = [run_with(0.3, 100, 4 << 20), run_with(0.1, 100, 2 << 20), run_with(0.2, 100, 3 << 20)];
        let s = summarize(&runs);
        assert_eq!(
            (s.counts.device_peak_bytes, s.counts.driver_peak_bytes, s.driver_peak_bytes_first_run),
            (100, 2 << 20, 4 << 20)
        );
        assert_eq!((s.seconds_min, s.seconds_median, s.runs), (0.1, 0.2, 3));
        let even = summarize(&runs[..2]);
        assert!((even.seconds_median - 0.2).abs() < 1e-12);
    }

    #[test]
    fn json_report_has_the_documented_fields() {
        let signature = Signature {
            function: "main".into(),
            inputs: vec![],
            results: vec![spec("tensor<2xf32>"), spec("tensor<i32>")],
        };
        let summary = summarize(&[run_with(0.5, 64, 1 << 21)]);
        let outputs = vec![HostTensor::zeros(spec("tensor<2xf32>")), HostTensor::zeros(spec("tensor<i32>"))];
        let plain = report_json("GPU", &signature, &summary, &outputs, None);
        for key in [
            "device",
            "device_peak_bytes",
            "device_allocations",
            "host_peak_bytes",
            "host_allocations",
            "staging_peak_bytes",
            "staging_allocations",
            "driver_peak_bytes",
            "seconds_min",
            "seconds_median",
            "runs",
            "outputs",
        ] {
            assert!(plain.get(key).is_some(), "missing {key}");
        }
        assert!(plain.get("outputs_match").is_none());
        assert_eq!(plain["outputs"][0]["type"], "tensor<2xf32>");

        let mut nan = HostTensor::zeros(spec("tensor<2xf32>"));
        nan.bytes_mut()[..4].copy_from_slice(&f32::NAN.to_le_bytes());
        let reports =
            vec![compare_within(&nan, &outputs[0], 1e-4, 1e-5), compare_within(&outputs[1], &outputs[1], 1e-4, 1e-5)];
        let compared = report_json("GPU", &signature, &summary, &outputs, Some(&reports));
        assert_eq!(compared["outputs_match"], false);
        assert_eq!(compared["outputs"][0]["out_of_tolerance"], 1);
        assert!(compared["max_abs_error"].is_null(), "NaN prints as null");
        assert_eq!(compared["outputs"][1]["max_abs_error"], 0.0);
    }

    #[test]
    fn reads_back_what_it_writes_and_checks_types() {
        let dir = std::env::temp_dir().join(format!("remat-gpu-run-test-{}", std::process::id()));
        let tensors = vec![
            HostTensor::random(spec("tensor<3x2xf32>"), &mut SplitMix64::new(1), 8),
            HostTensor::random(spec("tensor<4xi1>"), &mut SplitMix64::new(2), 8),
        ];
        write_tensors(&dir, "result", &tensors).unwrap();
        let specs: Vec<TensorSpec> = tensors.iter().map(|t| t.spec.clone()).collect();
        let back = read_tensors(&dir, "result", &specs, "result").unwrap();
        assert!(back.iter().zip(&tensors).all(|(a, b)| a.bytes() == b.bytes()));
        let wrong = [TensorSpec { element: ElementType::F64, shape: vec![3, 2] }];
        assert!(read_tensors(&dir, "result", &wrong, "result").unwrap_err()[0]
            .contains("but result 0 of the step is tensor<3x2xf64>"));
        assert!(read_tensors(&dir, "arg", &specs, "argument").unwrap_err()[0].contains("could not read"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 19), "1.50 MiB");
    }
}
