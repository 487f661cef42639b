//! The runner as a process, on a machine without a GPU: the missing driver is reported cleanly,
//! and the executable exports every symbol a step library needs.

use std::process::Command;

const RUNNER: &str = env!("CARGO_BIN_EXE_remat-gpu-run");

/// The contract with `remat-opt --lower=gpu --emit=library`: the symbols a step library leaves
/// undefined for the runner to provide.
const CONTRACT: [&str; 25] = [
    "mgpuModuleLoad",
    "mgpuModuleLoadJIT",
    "mgpuModuleUnload",
    "mgpuModuleGetFunction",
    "mgpuStreamCreate",
    "mgpuStreamSynchronize",
    "mgpuStreamDestroy",
    "mgpuLaunchKernel",
    "mgpuMemAlloc",
    "mgpuMemFree",
    "mgpuMemcpy",
    "mgpuMemset32",
    "mgpuMemset16",
    "mgpuEventCreate",
    "mgpuEventDestroy",
    "mgpuEventSynchronize",
    "mgpuEventRecord",
    "mgpuStreamWaitEvent",
    "mgpuSetDefaultDevice",
    "_mlir_memref_to_llvm_alloc",
    "_mlir_memref_to_llvm_aligned_alloc",
    "_mlir_memref_to_llvm_free",
    "remat_host_alloc_next",
    "remat_staging_alloc_next",
    "memrefCopy",
];

#[test]
fn without_a_driver_it_says_so_and_exits_2() {
    if remat_runtime::gpu::driver_present() {
        eprintln!("note: skipped: this machine has a CUDA driver");
        return;
    }
    let missing = std::env::temp_dir().join("remat-gpu-run-no-such-step.so");
    for args in [vec![missing.to_str().unwrap()], vec![missing.to_str().unwrap(), "--json", "--repeat", "1"]] {
        let out = Command::new(RUNNER).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim_end(), "remat-gpu-run: error: no CUDA driver (libcuda.so) on this machine");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn bad_command_lines_exit_2_and_help_exits_0() {
    let out = Command::new(RUNNER).args(["step.so", "--repeat", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(RUNNER).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(RUNNER).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--expect"));
}

#[test]
fn exports_every_symbol_a_step_library_needs() {
    let table: Vec<&str> = remat_runtime::gpu::EXPORTED_SYMBOLS.iter().map(|s| s.name).collect();
    let mut sorted_table = table.clone();
    sorted_table.sort_unstable();
    let mut sorted_contract = CONTRACT.to_vec();
    sorted_contract.sort_unstable();
    assert_eq!(sorted_table, sorted_contract, "the runtime's export table and the contract differ");

    let out = match Command::new("nm").args(["-D", "--defined-only", RUNNER]).output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("note: skipped: cannot run nm ({e})");
            return;
        }
    };
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    let listing = String::from_utf8_lossy(&out.stdout);
    let exported: Vec<&str> = listing.lines().filter_map(|line| line.split_whitespace().nth(2)).collect();
    let missing: Vec<&str> = CONTRACT.iter().copied().filter(|name| !exported.contains(name)).collect();
    assert!(missing.is_empty(), "not exported by {RUNNER}: {missing:?}");
}
