//! The runner end to end against a fake CUDA driver (tests/fake_cuda/libcuda.c: device memory
//! is host memory, kernels are host functions) and a hand-written step library
//! (tests/fake_cuda/step.c): loading and binding the library to the exported wrappers, the
//! descriptors of the packed call, device/host/driver counts, strided and aliased results,
//! `--inputs`, `--expect`, `--save-outputs`, `--json`, and a failing launch. Both are built
//! with `cc` (tools/setup.sh installs one); a missing or failing C compiler fails the tests, so
//! they never pass without having run.

use remat_runtime::{npy, ElementType, HostTensor, SplitMix64, TensorSpec};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RUNNER: &str = env!("CARGO_BIN_EXE_remat-gpu-run");

/// A scratch directory holding the fake `libcuda.so` and `step.so`, removed at the end.
struct Fixture {
    dir: PathBuf,
}

impl Fixture {
    fn build(name: &str) -> Fixture {
        let dir = std::env::temp_dir().join(format!("remat-gpu-run-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Made first, so the directory is removed even when the compiler fails.
        let fixture = Fixture { dir };
        let dir = &fixture.dir;
        let sources = Path::new(&manifest_dir()).join("tests/fake_cuda");
        for (source, library) in [("libcuda.c", "libcuda.so"), ("step.c", "step.so")] {
            let status = Command::new("cc")
                .args(["-shared", "-fPIC", "-O1", "-o"])
                .arg(dir.join(library))
                .arg(sources.join(source))
                .status()
                .unwrap_or_else(|e| {
                    panic!(
                        "cannot run the C compiler `cc` to build tests/fake_cuda/{source} ({e}); \
                         these tests need one on PATH (bash tools/setup.sh installs it)"
                    )
                });
            assert!(status.success(), "cc failed on tests/fake_cuda/{source}: {status}");
        }
        fixture
    }

    /// Runs the runner on the fake step with the fake driver first on the library path.
    fn run(&self, args: &[&str], environment: &[(&str, &str)]) -> Output {
        let mut command = Command::new(RUNNER);
        command.arg(self.dir.join("step.so")).args(args).env("LD_LIBRARY_PATH", &self.dir);
        for (key, value) in environment {
            command.env(key, value);
        }
        command.output().unwrap()
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_string()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn spec(element: ElementType, shape: &[usize]) -> TensorSpec {
    TensorSpec { element, shape: shape.to_vec() }
}

fn floats(t: &HostTensor) -> Vec<f32> {
    t.bytes().chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// What the fake step computes: the transpose of `a`, its sum (in index order, in f32), and
/// `labels` unchanged.
fn expected_outputs(a: &HostTensor, labels: &HostTensor) -> Vec<HostTensor> {
    let values = floats(a);
    let mut transpose = HostTensor::zeros(spec(ElementType::F32, &[3, 2]));
    for r in 0..2 {
        for c in 0..3 {
            let at = (c * 2 + r) * 4;
            transpose.bytes_mut()[at..at + 4].copy_from_slice(&values[r * 3 + c].to_le_bytes());
        }
    }
    let mut sum = HostTensor::zeros(spec(ElementType::F32, &[]));
    sum.bytes_mut().copy_from_slice(&values.iter().fold(0f32, |s, x| s + x).to_le_bytes());
    vec![transpose, sum, labels.clone()]
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&output.stdout)))
}

#[test]
fn runs_a_step_library_and_measures_it() {
    let fixture = Fixture::build("measure");
    let out = fixture.run(&["--json", "--repeat", "2", "--save-outputs", &fixture.path("out")], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["device"], "Fake CUDA Device");
    // Scratch 1000 + dense copy 24 + sum 4 + zero-byte 0 + gpu.alloc 16, all live at once.
    assert_eq!(doc["device_peak_bytes"], 1044);
    assert_eq!(doc["device_allocations"], 5);
    assert_eq!((doc["host_peak_bytes"].as_u64(), doc["host_allocations"].as_u64()), (Some(24), Some(1)));
    // The fake driver rounds device blocks to 512 bytes: 1024 + 512 + 512 + 512.
    assert_eq!(doc["driver_peak_bytes"], 2560);
    assert_eq!(doc["foreign_frees"], 0);
    assert_eq!(doc["runs"], 2);
    assert!(doc["seconds_min"].as_f64().unwrap() <= doc["seconds_median"].as_f64().unwrap());
    assert!(doc.get("outputs_match").is_none());
    assert_eq!(doc["outputs"][0]["type"], "tensor<3x2xf32>");

    // Seeded like remat-run: the same generator, input by input.
    let mut rng = SplitMix64::new(0);
    let a = HostTensor::random(spec(ElementType::F32, &[2, 3]), &mut rng, 8);
    let labels = HostTensor::random(spec(ElementType::I32, &[3]), &mut rng, 8);
    let expected = expected_outputs(&a, &labels);
    for (i, want) in expected.iter().enumerate() {
        let got = npy::read(&fixture.dir.join(format!("out/result{i}.npy"))).unwrap();
        assert_eq!(got.spec, want.spec);
        assert_eq!(got.bytes(), want.bytes(), "result {i}");
    }
}

#[test]
fn reads_inputs_and_compares_with_expected_outputs() {
    let fixture = Fixture::build("expect");
    let mut a = HostTensor::zeros(spec(ElementType::F32, &[2, 3]));
    for (i, chunk) in a.bytes_mut().chunks_mut(4).enumerate() {
        chunk.copy_from_slice(&(i as f32 * 1.5 - 2.0).to_le_bytes());
    }
    let mut labels = HostTensor::zeros(spec(ElementType::I32, &[3]));
    labels.bytes_mut().copy_from_slice(&[7i32, 0, 3].map(i32::to_le_bytes).concat());
    let io = fixture.dir.join("io");
    std::fs::create_dir_all(&io).unwrap();
    npy::write(&io.join("arg0.npy"), &a).unwrap();
    npy::write(&io.join("arg1.npy"), &labels).unwrap();
    let expected = expected_outputs(&a, &labels);
    for (i, t) in expected.iter().enumerate() {
        npy::write(&io.join(format!("result{i}.npy")), t).unwrap();
    }
    let io_path = io.to_str().unwrap();
    let out = fixture.run(&["--inputs", io_path, "--expect", io_path, "--json", "--repeat", "1"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["outputs_match"], true);
    assert_eq!(doc["max_abs_error"], 0.0);
    assert_eq!(doc["outputs"][2]["out_of_tolerance"], 0);

    // Within tolerance: 1e-6 off an expected 1.0 (allowance 1e-5 + 1e-4).
    let mut near = expected[0].clone();
    let first = floats(&near)[0];
    near.bytes_mut()[..4].copy_from_slice(&(first + 1e-6).to_le_bytes());
    npy::write(&io.join("result0.npy"), &near).unwrap();
    let out = fixture.run(&["--inputs", io_path, "--expect", io_path, "--repeat", "1"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("all within tolerance"));

    // Out of tolerance: a float off by 0.5 and a label off by one.
    near.bytes_mut()[..4].copy_from_slice(&(first + 0.5).to_le_bytes());
    npy::write(&io.join("result0.npy"), &near).unwrap();
    let mut wrong_labels = labels.clone();
    wrong_labels.bytes_mut()[..4].copy_from_slice(&8i32.to_le_bytes());
    npy::write(&io.join("result2.npy"), &wrong_labels).unwrap();
    let out = fixture.run(&["--inputs", io_path, "--expect", io_path, "--json", "--repeat", "1"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(doc["outputs_match"], false);
    assert_eq!(doc["outputs"][0]["out_of_tolerance"], 1);
    assert_eq!(doc["outputs"][1]["out_of_tolerance"], 0);
    assert_eq!(doc["outputs"][2]["out_of_tolerance"], 1);
    assert!((doc["max_abs_error"].as_f64().unwrap() - 1.0).abs() < 1e-6);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("output 0 (tensor<3x2xf32>): 1 element(s) out of tolerance"), "{stderr}");

    // Inputs of the wrong type are refused before running.
    npy::write(&io.join("arg1.npy"), &HostTensor::zeros(spec(ElementType::I64, &[3]))).unwrap();
    let out = fixture.run(&["--inputs", io_path], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("holds tensor<3xi64>, but argument 1 of the step is tensor<3xi32>"));
}

#[test]
fn a_failing_launch_fails_the_run_with_the_cuda_error() {
    let fixture = Fixture::build("fail");
    let out = fixture.run(&["--repeat", "1"], &[("FAKE_CUDA_FAIL_LAUNCH", "1")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("remat-gpu-run: error: 'cuLaunchKernel("), "{stderr}");
    assert!(stderr.contains("failed with 'CUDA_ERROR_LAUNCH_FAILED'"), "{stderr}");
    assert!(stderr.contains("run 1 of @main failed on Fake CUDA Device"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn missing_libraries_and_devices_are_errors() {
    let fixture = Fixture::build("missing");
    let out = Command::new(RUNNER)
        .arg(fixture.path("no-such-step.so"))
        .env("LD_LIBRARY_PATH", &fixture.dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-step.so: could not load"));
    let out = fixture.run(&["--device", "3"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no CUDA device 3 (this machine has 1)"));
    // A bare file name is the file in the working directory, not a search of the library path.
    let elsewhere = fixture.dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::copy(fixture.dir.join("step.so"), elsewhere.join("copy.so")).unwrap();
    let out = Command::new(RUNNER)
        .args(["copy.so", "--repeat", "1"])
        .current_dir(&elsewhere)
        .env("LD_LIBRARY_PATH", &fixture.dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // A library that is not a step.
    let out =
        Command::new(RUNNER).arg(fixture.path("libcuda.so")).env("LD_LIBRARY_PATH", &fixture.dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a step library"));
}

/// This crate's directory as cargo gives it to the running test, not as it was when the test
/// was compiled: a build cache reused from a checkout elsewhere (CI's fresh clone) keeps test
/// binaries whose compile-time path no longer exists.
fn manifest_dir() -> String {
    std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
}
