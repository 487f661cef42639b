//! The tools' last line of defence against a crash in code they do not own (MLIR's parser,
//! verifier and passes, LLVM, a compiled step): a fatal signal (SIGSEGV, SIGBUS, SIGILL,
//! SIGFPE, SIGABRT) ends the run with exit 1 and an `error:` line naming the tool, the signal
//! and the stage it hit, instead of a death by signal. remat-opt leaves nothing behind (its
//! output file is only renamed into place after everything succeeded). Known crashing inputs
//! are rejected before they reach MLIR (too deep nesting: [`crate::MAX_NESTING`]); this catches
//! the ones not known yet, and the fuzzer (tools/fuzz) counts its message as a failure.
//!
//! The handler only reads atomics and calls `write` and `_exit` (async-signal-safe), and runs
//! on an alternate stack, so a stack overflow reaches it too.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

static STAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static STAGE_LEN: AtomicUsize = AtomicUsize::new(0);
static TOOL: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static TOOL_LEN: AtomicUsize = AtomicUsize::new(0);

/// Names what the run is doing now, for the crash message. With `REMAT_CRASH_TEST` set to the
/// stage's first word (`parsing`, `importing`, `planning`, …), raises SIGSEGV there: the lit
/// test of this handler (lit-tests/errors/crash.test), since the known crashers are rejected
/// before they reach MLIR.
pub fn stage(name: &'static str) {
    STAGE_LEN.store(0, Ordering::SeqCst);
    STAGE.store(name.as_ptr() as *mut u8, Ordering::SeqCst);
    STAGE_LEN.store(name.len(), Ordering::SeqCst);
    if std::env::var("REMAT_CRASH_TEST").is_ok_and(|word| name.split(' ').next() == Some(word.as_str())) {
        // SAFETY: raising a signal; the handler installed by `install` ends the process.
        unsafe { libc::raise(libc::SIGSEGV) };
    }
}

const SIGNALS: [(libc::c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGABRT, "SIGABRT"),
];

/// Installs the handler for the tool named `tool` (once, at the start of `main`).
pub fn install(tool: &'static str) {
    TOOL.store(tool.as_ptr() as *mut u8, Ordering::SeqCst);
    TOOL_LEN.store(tool.len(), Ordering::SeqCst);
    // An alternate stack for this thread; threads spawned by std get one of their own.
    const ALT_STACK: usize = 256 * 1024;
    let stack = Box::leak(vec![0u8; ALT_STACK].into_boxed_slice());
    let alt = libc::stack_t { ss_sp: stack.as_mut_ptr().cast(), ss_flags: 0, ss_size: ALT_STACK };
    // SAFETY: plain libc calls with valid arguments; the stack is leaked, so it outlives the
    // thread, and the handler is async-signal-safe (see the module docs).
    unsafe {
        libc::sigaltstack(&alt, std::ptr::null_mut());
        for (signal, _) in SIGNALS {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_fatal_signal(signal: libc::c_int) {
    let name = SIGNALS.iter().find(|(s, _)| *s == signal).map_or("a fatal signal", |(_, n)| n);
    let write = |bytes: &[u8]| {
        // SAFETY: write(2) on stderr with a valid buffer.
        unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
    };
    let tool = |ptr: *mut u8, len: usize| {
        // SAFETY: `install` and `stage` store a &'static str's pointer, then its length.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    };
    let (tool_ptr, tool_len) = (TOOL.load(Ordering::SeqCst), TOOL_LEN.load(Ordering::SeqCst));
    let name_of_tool: &[u8] = if tool_ptr.is_null() { b"remat" } else { tool(tool_ptr, tool_len) };
    write(b"error: ");
    write(name_of_tool);
    write(b" crashed (");
    write(name.as_bytes());
    write(b") while ");
    let (ptr, len) = (STAGE.load(Ordering::SeqCst), STAGE_LEN.load(Ordering::SeqCst));
    if ptr.is_null() || len == 0 {
        write(b"starting");
    } else {
        write(tool(ptr, len));
    }
    write(b"; no output was written. This is a bug in ");
    write(name_of_tool);
    write(b" or in MLIR 22 (the input may be malformed in a way its parser or verifier does not check): please report it with the input.\n");
    // SAFETY: _exit is async-signal-safe and never returns.
    unsafe { libc::_exit(1) };
}
