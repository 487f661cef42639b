//! A progress line for long planning: after a second, on a terminal, stderr shows what is
//! being planned and the seconds spent against `--time-limit`, redrawn in place and erased at
//! the end; elsewhere (a pipe, a log, lit) nothing is drawn and a tracing `info` event
//! (`REMAT_LOG=info`) is logged every 10 s instead.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The display, running until dropped.
pub struct Progress {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts showing progress of `what` (e.g. "planning main with treewidth") against a time
    /// limit of `limit` seconds (none: the seconds alone).
    pub fn start(what: String, limit: Option<f64>) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let tty = std::io::stderr().is_terminal();
            let (mut drawn, mut next_log, mut shown) = (false, 10.0, u64::MAX);
            let of = limit.map_or(String::new(), |l| format!(" of {l} s"));
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let seconds = started.elapsed().as_secs_f64();
                if tty && seconds >= 1.0 && seconds as u64 != shown {
                    shown = seconds as u64;
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[K{what}: {shown} s{of}");
                    let _ = err.flush();
                    drawn = true;
                } else if !tty && seconds >= next_log {
                    tracing::info!("{what}: {seconds:.0} s so far{of}");
                    next_log += 10.0;
                }
            }
            if drawn {
                let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
            }
        });
        Progress { done, thread: Some(thread) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
